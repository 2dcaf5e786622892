//! What one shard result must hold before `dbbench merge` believes it.
//!
//! A result file comes from another host, a pod's log or a hand that
//! edited it; the merge prints figures that look real whatever they are
//! added from. So every figure that another one determines is checked
//! against it, and a result that breaks a rule is refused by the field
//! and the rule — never merged into a plausible wrong report. The rules
//! hold for every result the engine writes (tests/shards.rs runs them
//! over real runs: plain, warmup, `--events`, `--rate`, aborted):
//!
//! - events = the latency histogram's count = Σ the clients' events
//!   (every event's latency is recorded once, by its client);
//! - the clients listed = the shard's clients;
//! - Σ interval events ≤ the cumulative events (the tail after the last
//!   interval boundary is in the total only), and each interval's events
//!   = its histogram's count;
//! - interval ticks strictly increasing (≥ 1; warmup ticks ≤ 0), their
//!   times finite and increasing, no interval running more clients than
//!   the shard has;
//! - every histogram: min ≤ max, count × min ≤ sum ≤ count × max (so
//!   min ≤ avg ≤ max), overflow ≤ count, all zero when empty;
//! - times finite and non-negative, the total at most
//!   [`MAX_TOTAL_TIME_S`], and no interval ending after the total time
//!   (plus one interval).
//!
//! Sums over shards are checked where they are added (`merge`,
//! `series`): an overflow is a refusal too.

use super::result::{FairnessData, HistData, PeriodData, ShardResult, TickData};

/// The longest measured time a result may claim: ten years, far beyond
/// any run and far below the totals (1e300 s) that would print a rate of
/// zero for real events.
pub const MAX_TOTAL_TIME_S: f64 = 10.0 * 365.0 * 86_400.0;

/// Checks `r` against the rules above; the error names the field and
/// the rule (the caller adds the file's name).
pub fn result<B: AsRef<str>>(r: &ShardResult<B>) -> Result<(), String> {
    let events = r.cumulative.counts.events;
    time("total_time_s", r.total_time_s)?;
    if r.total_time_s > MAX_TOTAL_TIME_S {
        return Err(format!(
            "total_time_s is {} s, more than any run lasts (the limit is {MAX_TOTAL_TIME_S} s)",
            r.total_time_s
        ));
    }
    if events > 0 && r.total_time_s == 0.0 {
        return Err(format!("total_time_s is 0 for {events} events: events take time"));
    }
    finite("start.ready_unix_ms", r.start.ready_unix_ms)?;
    finite("start.start_unix_ms", r.start.start_unix_ms)?;
    if let Some(c) = &r.clock_offset {
        finite("clock_offset.offset_ms", c.offset_ms)?;
        time("clock_offset.rtt_ms", c.rtt_ms)?;
    }
    for (i, p) in r.run.percentiles.iter().enumerate() {
        if !(0.0..=100.0).contains(p) {
            return Err(format!("run.percentiles[{i}] is {p}, not a percentile from 0 to 100"));
        }
    }
    time("run.report_interval_s", r.run.report_interval_s)?;
    time("run.rate", r.run.rate)?;
    period("cumulative", &r.cumulative)?;
    if r.late_events > events {
        return Err(format!(
            "late_events is {}, more than the {events} events of cumulative.counts.events",
            r.late_events
        ));
    }
    if let Some(rate) = &r.rate {
        time("rate.target", rate.target)?;
    }
    fairness(&r.fairness, r.threads, events)?;
    let every = r.run.report_interval_s;
    let measured = series("intervals", &r.intervals, r.threads, every, 1..=i64::MAX)?;
    if measured > events {
        return Err(format!(
            "the intervals hold {measured} events, more than the {events} of cumulative.counts.events: every interval's events are in the total"
        ));
    }
    if let Some(last) = r.intervals.last() {
        if last.time_s > r.total_time_s + last.interval_s {
            return Err(format!(
                "intervals: the last one ends at {} s, after total_time_s ({} s)",
                last.time_s, r.total_time_s
            ));
        }
    }
    series("warmup_intervals", &r.warmup_intervals, r.threads, every, i64::MIN..=0)?;
    Ok(())
}

fn finite(field: &str, v: f64) -> Result<(), String> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(format!("{field} is {v}, not a finite number"))
    }
}

/// A duration: finite and not negative.
fn time(field: &str, v: f64) -> Result<(), String> {
    finite(field, v)?;
    if v < 0.0 {
        return Err(format!("{field} is {v}: a time cannot be negative"));
    }
    Ok(())
}

/// A period: its events are its histogram's count, its histograms whole.
fn period<B>(field: &str, p: &PeriodData<B>) -> Result<(), String> {
    if p.counts.events != p.latency.count {
        return Err(format!(
            "{field}.counts.events is {} but {field}.latency.count is {}: every event's latency is recorded once",
            p.counts.events, p.latency.count
        ));
    }
    histogram(&format!("{field}.latency"), &p.latency)?;
    histogram(&format!("{field}.service"), &p.service)
}

/// A histogram's exact figures agree with each other (its buckets are
/// checked against its count where they are decoded).
fn histogram<B>(field: &str, h: &HistData<B>) -> Result<(), String> {
    if h.count == 0 {
        if (h.min_ns, h.max_ns, h.sum_ns, h.overflow) != (0, 0, 0, 0) {
            return Err(format!("{field}: no values counted, yet min_ns, max_ns, sum_ns or overflow is not 0"));
        }
        return Ok(());
    }
    if h.min_ns > h.max_ns {
        return Err(format!("{field}.min_ns ({}) is above max_ns ({})", h.min_ns, h.max_ns));
    }
    // u64 × u64 fits in u128.
    let (lo, hi) = (h.count as u128 * h.min_ns as u128, h.count as u128 * h.max_ns as u128);
    if h.sum_ns < lo || h.sum_ns > hi {
        return Err(format!(
            "{field}.sum_ns ({}) is not between count × min_ns and count × max_ns: the average would lie outside [min, max]",
            h.sum_ns
        ));
    }
    if h.overflow > h.count {
        return Err(format!("{field}.overflow ({}) is more than its count ({})", h.overflow, h.count));
    }
    Ok(())
}

/// One entry per client, adding up to the shard's events.
fn fairness(list: &[FairnessData], threads: u32, events: u64) -> Result<(), String> {
    if list.len() != threads as usize {
        return Err(format!("fairness lists {} clients, the shard ran {threads}", list.len()));
    }
    let mut sum = 0u64;
    for (i, f) in list.iter().enumerate() {
        time(&format!("fairness[{i}].time_s"), f.time_s)?;
        match (f.events, f.min_s, f.max_s) {
            (0, None, None) => {}
            (n, Some(min), Some(max)) if n > 0 => {
                time(&format!("fairness[{i}].min_s"), min)?;
                time(&format!("fairness[{i}].max_s"), max)?;
                if min > max {
                    return Err(format!("fairness[{i}].min_s ({min}) is above its max_s ({max})"));
                }
            }
            _ => return Err(format!("fairness[{i}]: min_s and max_s are given exactly when the client had events")),
        }
        sum = sum.checked_add(f.events).ok_or("fairness: the clients' events overflow 64 bits")?;
    }
    if sum != events {
        return Err(format!(
            "the clients' events in fairness add up to {sum}, cumulative.counts.events is {events}: they are the same events"
        ));
    }
    Ok(())
}

/// An interval series: ticks in `ticks`, strictly increasing, times
/// finite and increasing, each interval whole. Returns its events.
fn series<B>(
    field: &str,
    list: &[TickData<B>],
    threads: u32,
    every_s: f64,
    ticks: std::ops::RangeInclusive<i64>,
) -> Result<u64, String> {
    let mut events = 0u64;
    let mut prev: Option<&TickData<B>> = None;
    for (i, t) in list.iter().enumerate() {
        let at = format!("{field}[{i}]");
        if !ticks.contains(&t.tick) {
            return Err(format!(
                "{at}.tick is {}: {field} are ticks {}",
                t.tick,
                if *ticks.start() == 1 { "1, 2, ..." } else { "..., -1, 0" }
            ));
        }
        finite(&format!("{at}.time_s"), t.time_s)?;
        time(&format!("{at}.interval_s"), t.interval_s)?;
        if t.interval_s == 0.0 {
            return Err(format!("{at}.interval_s is 0: an interval has a length"));
        }
        if let Some(p) = prev {
            if t.tick <= p.tick || t.time_s <= p.time_s {
                return Err(format!(
                    "{at}: tick {} at {} s follows tick {} at {} s: ticks and their times only increase (each interval once)",
                    t.tick, t.time_s, p.tick, p.time_s
                ));
            }
        }
        // Tick k ends k intervals after the start of measurement: the
        // merge aligns the shards' rows by tick, and prints this time.
        let want = t.tick as f64 * every_s;
        if (t.time_s - want).abs() > 1e-6 * want.abs().max(1.0) {
            return Err(format!(
                "{at}.time_s is {} s, but tick {} ends at {want} s (tick × run.report_interval_s)",
                t.time_s, t.tick
            ));
        }
        if t.threads > threads {
            return Err(format!("{at}.threads is {}, more than the shard's {threads} clients", t.threads));
        }
        if let Some(late) = t.late_ms {
            time(&format!("{at}.late_ms"), late)?;
        }
        period(&format!("{at}.period"), &t.period)?;
        events = events
            .checked_add(t.period.counts.events)
            .ok_or_else(|| format!("{field}: the events overflow 64 bits"))?;
        prev = Some(t);
    }
    Ok(events)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::collector::{LatencyAcc, Period};
    use crate::shard::result::{CountsData, RunParams, StartInfo, FORMAT, FORMAT_VERSION};

    /// A whole, consistent result: 2 clients, 3 intervals, a tail.
    fn good() -> ShardResult {
        shard_of(0, 1, 0)
    }

    /// Shard `index` of `count`, each of 2 clients, as [`good`] describes,
    /// its latencies shifted by `seed`.
    pub(in crate::shard) fn shard_of(index: u32, count: u32, seed: u64) -> ShardResult {
        let seed = seed % 1_000_000;
        let mut cum = Period::default();
        let mut intervals = Vec::new();
        let mut per_client = [LatencyAcc::default(), LatencyAcc::default()];
        for tick in 1..=3 {
            let mut p = Period::default();
            for e in 0..10u64 {
                let ns = 1_000_000 + e * 1000 + tick as u64 + seed;
                p.latency.record(ns);
                cum.latency.record(ns);
                per_client[(e % 2) as usize].record(ns);
            }
            p.counts[crate::collector::Counter::Event as usize] = 10;
            intervals.push(TickData {
                tick,
                time_s: tick as f64,
                interval_s: 1.0,
                threads: 2,
                queue: None,
                late_ms: None,
                period: PeriodData::of(&p),
            });
        }
        // The tail after the last boundary: in the total only.
        cum.latency.record(2_000_000 + seed);
        per_client[0].record(2_000_000 + seed);
        cum.counts[crate::collector::Counter::Event as usize] = 31;
        let fairness = per_client
            .iter()
            .map(|a| FairnessData {
                events: a.count,
                time_s: a.sum_ns as f64 / 1e9,
                min_s: Some(a.min_ns as f64 / 1e9),
                max_s: Some(a.max_ns as f64 / 1e9),
            })
            .collect();
        ShardResult {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            version: "test".into(),
            shard_index: index,
            shard_count: count,
            run: RunParams {
                test: "t".into(),
                threads: 2 * count,
                events: 0,
                rate: 0.0,
                report_interval_s: 1.0,
                percentiles: vec![95.0],
                histogram: false,
                start_at_ms: None,
                options: Default::default(),
            },
            first_thread: 2 * index,
            threads: 2,
            host: "h".into(),
            start: StartInfo { ready_unix_ms: 1.0, start_unix_ms: 2.0, late: false },
            clock_offset: None,
            clock_offset_missing: None,
            sql: false,
            server_version: None,
            aborted: None,
            total_time_s: 3.2,
            cumulative: PeriodData::of(&cum),
            fairness,
            intervals,
            warmup_intervals: Vec::new(),
            rate: None,
            late_events: 0,
        }
    }

    fn refused(r: ShardResult, want: &str) {
        match result(&r) {
            Ok(()) => panic!("accepted; wanted an error with '{want}'"),
            Err(e) => assert!(e.contains(want), "want '{want}' in: {e}"),
        }
    }

    #[test]
    fn a_consistent_result_passes() {
        result(&good()).unwrap();
    }

    /// Each crafted input of the outside report, and its siblings, is
    /// refused by the rule it breaks.
    #[test]
    fn each_broken_rule_is_named() {
        let mut r = good();
        r.cumulative.counts.events = u64::MAX;
        refused(r, "cumulative.counts.events is 18446744073709551615 but cumulative.latency.count is 31");

        let mut r = good();
        r.cumulative.counts.events += 1000;
        r.cumulative.latency.count += 1000;
        refused(r, "sum_ns");

        let mut r = good();
        r.cumulative.latency.count = 1 << 63;
        r.cumulative.counts.events = 1 << 63;
        refused(r, "not between count × min_ns and count × max_ns");

        let mut r = good();
        (r.cumulative.latency.min_ns, r.cumulative.latency.max_ns) = (r.cumulative.latency.max_ns + 1, 5);
        refused(r, "min_ns");

        let mut r = good();
        r.fairness.clear();
        refused(r, "fairness lists 0 clients, the shard ran 2");

        let mut r = good();
        r.fairness[0].events += 1;
        refused(r, "add up to 32");

        let mut r = good();
        r.intervals[1].tick = 1;
        refused(r, "ticks and their times only increase");

        let mut r = good();
        r.intervals.swap(0, 2);
        refused(r, "ticks and their times only increase");

        let mut r = good();
        r.intervals[0].tick = -5;
        refused(r, "intervals[0].tick is -5");

        let mut r = good();
        r.intervals[2].period.counts.events = 1_000_000_000;
        refused(r, "intervals[2].period.counts.events is 1000000000 but intervals[2].period.latency.count is 10");

        let mut r = good();
        r.intervals[2].threads = 10;
        refused(r, "more than the shard's 2 clients");

        for (t, want) in [(1e300, "more than any run lasts"), (-5.0, "cannot be negative"), (0.0, "events take time")] {
            let mut r = good();
            r.total_time_s = t;
            refused(r, want);
        }
        let mut r = good();
        r.total_time_s = f64::NAN;
        refused(r, "not a finite number");

        let mut r = good();
        r.total_time_s = 1.5;
        refused(r, "after total_time_s");

        let mut r = good();
        r.run.percentiles = vec![95.0, 250.0];
        refused(r, "run.percentiles[1] is 250");

        let mut r = good();
        r.late_events = 32;
        refused(r, "late_events");

        let mut r = good();
        r.intervals[0].period.latency.overflow = 11;
        r.intervals[0].period.latency.count = 10;
        refused(r, "overflow (11) is more than its count");

        let mut r = good();
        r.cumulative.service.sum_ns = 5;
        refused(r, "cumulative.service: no values counted");

        let mut r = good();
        r.cumulative.counts = CountsData { events: 31, ..r.cumulative.counts };
        r.intervals[0].interval_s = 0.0;
        refused(r, "an interval has a length");
    }
}
