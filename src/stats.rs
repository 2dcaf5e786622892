//! Per-client counters and latency histograms, and the collector that merges
//! them into interval and cumulative figures.
//!
//! Each client owns a [`ClientStats`]: atomic counters (read by the collector
//! without stopping the client) and latency accumulators behind uncontended
//! mutexes. The collector drains the accumulators on every report tick, so
//! per-interval figures are exact for that interval, and merges them into the
//! cumulative accumulator. Nothing recorded before [`Collector::reset`] (the
//! end of warmup, or a checkpoint) reaches any later figure.
//!
//! Latency histograms are HDR histograms in microseconds, 1 µs to 1 h with 3
//! significant digits; min, max and sum are kept exactly in nanoseconds
//! beside them.

use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Statement and event counters, in sysbench's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// Statement returned a result set.
    Read = 0,
    /// Statement changed rows.
    Write = 1,
    /// Statement neither returned rows nor changed any (BEGIN, COMMIT, DDL...).
    Other = 2,
    /// Completed event ("transaction").
    Event = 3,
    /// Ignored (or fatal) SQL error.
    Error = 4,
    /// Reconnect after a lost connection.
    Reconnect = 5,
}

/// Number of [`Counter`] kinds.
pub const NCOUNTERS: usize = 6;

/// Counter values, indexed by [`Counter`].
pub type Counts = [u64; NCOUNTERS];

/// Highest latency the histograms track (1 h, in µs); longer values are clamped
/// into the top bucket and counted in [`LatencyAcc::overflow`].
pub const HIST_MAX_US: u64 = 3_600_000_000;

/// Latency accumulator: HDR histogram plus exact min/max/sum.
///
/// The histogram (188 KiB of buckets, which the hdrhistogram crate zeroes
/// by writing, so all of it is resident) is created by the first value:
/// an accumulator that records nothing (the service time of a closed-loop
/// run, the fresh one a client gets at every report tick) costs no memory.
#[derive(Debug, Clone)]
pub struct LatencyAcc {
    /// Histogram of latencies in µs; None until a value is recorded.
    hist: Option<Histogram<u64>>,
    /// Number of recorded latencies.
    pub count: u64,
    /// Exact minimum, ns (u64::MAX when empty).
    pub min_ns: u64,
    /// Exact maximum, ns.
    pub max_ns: u64,
    /// Exact sum, ns.
    pub sum_ns: u128,
    /// Values above [`HIST_MAX_US`] (clamped in the histogram).
    pub overflow: u64,
}

impl Default for LatencyAcc {
    fn default() -> Self {
        LatencyAcc { hist: None, count: 0, min_ns: u64::MAX, max_ns: 0, sum_ns: 0, overflow: 0 }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("valid histogram bounds")
}

impl LatencyAcc {
    /// The histogram (µs), if anything was recorded.
    pub fn histogram(&self) -> Option<&Histogram<u64>> {
        self.hist.as_ref()
    }

    /// Records one latency in nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let us = (ns / 1000).max(1);
        if us > HIST_MAX_US {
            self.overflow += 1;
        }
        // Cannot fail: the value is clamped into the histogram's range.
        let _ = self.hist.get_or_insert_with(new_histogram).record(us.min(HIST_MAX_US));
        self.count += 1;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
    }

    /// Adds another accumulator into this one.
    pub fn merge(&mut self, other: &LatencyAcc) {
        if other.count == 0 {
            return;
        }
        match (&mut self.hist, &other.hist) {
            // Same bounds on both sides, so adding cannot fail.
            (Some(h), Some(o)) => {
                let _ = h.add(o);
            }
            (None, Some(o)) => self.hist = Some(o.clone()),
            (_, None) => {}
        }
        self.count += other.count;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
        self.overflow += other.overflow;
    }

    /// Percentile `p` (0..100] in milliseconds, clamped to the exact
    /// [min, max]; `None` without samples.
    pub fn percentile_ms(&self, p: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        // p / 100 is inexact (99.9 / 100 = 0.9990000000000001), which would
        // move the nearest-rank percentile one rank up; nudge it down.
        let q = (p / 100.0 - 1e-12).clamp(0.0, 1.0);
        let v_us = self.hist.as_ref()?.value_at_quantile(q);
        // The histogram reports the bucket's upper edge; never report a value
        // outside what was actually measured.
        let ns = (v_us.saturating_mul(1000)).clamp(self.min_ns, self.max_ns);
        Some(ns as f64 / 1e6)
    }

    /// Minimum in ms, `None` when empty.
    pub fn min_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.min_ns as f64 / 1e6)
    }
    /// Maximum in ms, `None` when empty.
    pub fn max_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.max_ns as f64 / 1e6)
    }
    /// Mean in ms, `None` when empty.
    pub fn avg_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64 / 1e6)
    }
    /// Sum in ms.
    pub fn sum_ms(&self) -> f64 {
        self.sum_ns as f64 / 1e6
    }
}

/// One client's live statistics, shared between the client and the collector.
#[derive(Debug, Default)]
#[repr(align(128))] // its own cache lines: no false sharing between clients
pub struct ClientStats {
    counters: [AtomicU64; NCOUNTERS],
    /// The client's events' figures. One lock guards all of them and the
    /// event counter's increment, so that a drain or reset sees an event
    /// whole or not at all: never counted in one period and timed in
    /// another, or left out of the fairness share.
    recorded: Mutex<Recorded>,
    /// True while the client runs an event (for "unfinished events" at a
    /// forced shutdown and the concurrency figure under `--rate`). Per
    /// client, so that marking it does not bounce one cache line between
    /// all clients on every event.
    pub in_event: std::sync::atomic::AtomicBool,
}

/// A client's event latencies: the accumulators the collector drains every
/// interval, and the client's share since the last reset.
#[derive(Debug, Default)]
struct Recorded {
    /// Event latency: from intended start under `--rate`, else from actual start.
    acc: LatencyAcc,
    /// Service time (actual start to end); only filled under `--rate`.
    service: LatencyAcc,
    share: Share,
}

/// Events whose latency was recorded since the last reset, their total,
/// shortest and longest latency: the "threads fairness" figures and
/// `--debug`'s per-thread lines.
#[derive(Debug, Clone, Copy)]
struct Share {
    events: u64,
    time_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

impl Default for Share {
    fn default() -> Share {
        Share { events: 0, time_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }
}

impl ClientStats {
    /// Adds one to a counter.
    #[inline]
    pub fn inc(&self, c: Counter) {
        self.counters[c as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Records a completed event: counts it and its latency (and, under
    /// `--rate`, its service time).
    #[inline]
    pub fn record_event(&self, latency_ns: u64, service_ns: Option<u64>) {
        let mut r = self.recorded();
        self.inc(Counter::Event);
        r.acc.record(latency_ns);
        if let Some(s) = service_ns {
            r.service.record(s);
        }
        let s = &mut r.share;
        s.events += 1;
        s.time_ns += latency_ns;
        s.min_ns = s.min_ns.min(latency_ns);
        s.max_ns = s.max_ns.max(latency_ns);
    }

    /// The recorded figures, locked. Nothing panics while holding the lock,
    /// and the figures stay consistent if something did: no poisoning.
    fn recorded(&self) -> MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn counts(&self) -> Counts {
        std::array::from_fn(|i| self.counters[i].load(Ordering::Relaxed))
    }
}

/// A period's figures: counter deltas and latencies recorded in it.
#[derive(Debug, Clone, Default)]
pub struct Period {
    /// Counter deltas over the period.
    pub counts: Counts,
    /// Event latency.
    pub latency: LatencyAcc,
    /// Service time (empty unless `--rate`).
    pub service: LatencyAcc,
}

impl Period {
    /// A counter's delta.
    pub fn get(&self, c: Counter) -> u64 {
        self.counts[c as usize]
    }
    /// Reads + writes + other.
    pub fn queries(&self) -> u64 {
        self.get(Counter::Read) + self.get(Counter::Write) + self.get(Counter::Other)
    }
}

/// Merges all clients' statistics. Owned by the thread that reports.
pub struct Collector {
    clients: Vec<Arc<ClientStats>>,
    /// Counter values at the last interval drain.
    last_interval: Counts,
    /// Counter values at the last reset (warmup end / checkpoint).
    base: Counts,
    /// Everything since the last reset.
    cumulative: Period,
}

impl Collector {
    /// A collector over the given clients.
    pub fn new(clients: Vec<Arc<ClientStats>>) -> Collector {
        Collector { clients, last_interval: [0; NCOUNTERS], base: [0; NCOUNTERS], cumulative: Period::default() }
    }

    /// Drains the clients' latencies recorded since the previous drain into
    /// a new interval (also merged into the cumulative period).
    pub fn drain_interval(&mut self) -> Period {
        self.drain(false)
    }

    /// Drains every client; `reset_shares` also starts the clients' fairness
    /// shares afresh, in the same critical section as the drain.
    fn drain(&mut self, reset_shares: bool) -> Period {
        let mut p = Period::default();
        let mut now = [0; NCOUNTERS];
        for c in &self.clients {
            // Swap in fresh accumulators rather than zeroing the old ones:
            // they allocate their histograms only when the client records
            // again, and the lock is held only for the swap. The counters
            // are read under the lock too, so the event count matches the
            // latencies taken.
            let mut r = c.recorded();
            for (t, v) in now.iter_mut().zip(c.counts()) {
                *t += v;
            }
            let latency = (r.acc.count > 0).then(|| std::mem::take(&mut r.acc));
            let service = (r.service.count > 0).then(|| std::mem::take(&mut r.service));
            if reset_shares {
                r.share = Share::default();
            }
            drop(r);
            if let Some(l) = latency {
                p.latency.merge(&l);
            }
            if let Some(s) = service {
                p.service.merge(&s);
            }
        }
        for ((d, n), last) in p.counts.iter_mut().zip(now).zip(self.last_interval) {
            *d = n - last;
        }
        self.last_interval = now;
        self.cumulative.latency.merge(&p.latency);
        self.cumulative.service.merge(&p.service);
        p
    }

    /// Discards everything recorded so far (warmup end, checkpoint).
    pub fn reset(&mut self) {
        self.drain(true);
        self.base = self.last_interval;
        self.cumulative = Period::default();
    }

    /// Everything since the last reset (drains pending latencies first).
    pub fn cumulative(&mut self) -> Period {
        self.drain_interval();
        let mut p = self.cumulative.clone();
        for i in 0..NCOUNTERS {
            p.counts[i] = self.last_interval[i] - self.base[i];
        }
        p
    }

    /// Per-client events and event latency since the last reset.
    pub fn fairness(&self) -> Vec<ClientFairness> {
        self.clients
            .iter()
            .map(|c| {
                let s = c.recorded().share;
                let secs = |ns: u64| (s.events > 0).then_some(ns as f64 / 1e9);
                ClientFairness {
                    events: s.events,
                    time_s: s.time_ns as f64 / 1e9,
                    min_s: secs(s.min_ns),
                    max_s: secs(s.max_ns),
                }
            })
            .collect()
    }
}

/// One client's share of a run ("Threads fairness", `--debug`'s
/// per-thread lines).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientFairness {
    /// Events whose latency was recorded.
    pub events: u64,
    /// Their total latency, seconds.
    pub time_s: f64,
    /// Shortest and longest of them, seconds (None without events).
    pub min_s: Option<f64>,
    /// See `min_s`.
    pub max_s: Option<f64>,
}

/// Population mean and standard deviation.
pub fn mean_stddev(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = xs.clone().count();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = xs.clone().sum::<f64>() / n as f64;
    let var = xs.map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_exist_only_once_something_is_recorded() {
        let mut empty = LatencyAcc::default();
        assert!(empty.histogram().is_none());
        empty.merge(&LatencyAcc::default());
        assert!(empty.histogram().is_none() && empty.percentile_ms(95.0).is_none());
        let mut one = LatencyAcc::default();
        one.record(2_000_000);
        empty.merge(&one);
        assert_eq!(empty.percentile_ms(50.0), Some(2.0));
        // A client's accumulator after a report tick holds no histogram.
        let c = ClientStats::default();
        c.record_event(1_000_000, None);
        let mut col = Collector::new(vec![Arc::new(c)]);
        let p = col.drain_interval();
        assert_eq!(p.latency.count, 1);
        assert!(col.clients[0].recorded().acc.histogram().is_none());
        assert!(col.clients[0].recorded().service.histogram().is_none());
    }

    #[test]
    fn percentiles_are_clamped_to_exact_min_max() {
        let mut a = LatencyAcc::default();
        for ns in [1_234_567u64, 2_000_000, 3_000_001] {
            a.record(ns);
        }
        assert_eq!(a.min_ms(), Some(1.234567));
        assert_eq!(a.max_ms(), Some(3.000001));
        let p100 = a.percentile_ms(100.0).unwrap();
        assert!(p100 <= 3.000001 && p100 > 2.99, "{p100}");
        let p1 = a.percentile_ms(1.0).unwrap();
        assert!((1.234567..1.24).contains(&p1), "{p1}");
        assert!((a.avg_ms().unwrap() - 2.078189).abs() < 1e-6);
    }

    #[test]
    fn empty_accumulator_has_no_figures() {
        let a = LatencyAcc::default();
        assert_eq!(a.percentile_ms(95.0), None);
        assert_eq!(a.avg_ms(), None);
    }

    #[test]
    fn three_significant_digits() {
        let mut a = LatencyAcc::default();
        for i in 1..=1000u64 {
            a.record(i * 1_000_000); // 1..1000 ms
        }
        let p99 = a.percentile_ms(99.0).unwrap();
        assert!((p99 - 990.0).abs() / 990.0 < 0.001, "{p99}");
        let p999 = a.percentile_ms(99.9).unwrap();
        assert!((p999 - 999.0).abs() / 999.0 < 0.001, "{p999}");
    }

    #[test]
    fn collector_intervals_and_reset() {
        let c = Arc::new(ClientStats::default());
        let mut col = Collector::new(vec![c.clone()]);
        c.inc(Counter::Read);
        c.record_event(5_000_000, None);
        let p = col.drain_interval();
        assert_eq!(p.get(Counter::Read), 1);
        assert_eq!(p.latency.count, 1);
        col.reset();
        c.inc(Counter::Write);
        c.record_event(7_000_000, None);
        let i = col.drain_interval();
        assert_eq!(i.get(Counter::Read), 0);
        assert_eq!(i.get(Counter::Write), 1);
        let cum = col.cumulative();
        assert_eq!(cum.get(Counter::Event), 1);
        assert_eq!(cum.latency.count, 1);
        assert_eq!(cum.latency.min_ms(), Some(7.0));
        assert_eq!(
            col.fairness(),
            vec![ClientFairness { events: 1, time_s: 0.007, min_s: Some(0.007), max_s: Some(0.007) }]
        );
    }

    /// Clients record while the collector drains and resets: every period's
    /// event count equals its number of latencies, and the figures since the
    /// last reset equal the clients' fairness shares.
    #[test]
    fn drains_and_resets_never_split_an_event() {
        let clients: Vec<_> = (0..3).map(|_| Arc::new(ClientStats::default())).collect();
        let mut col = Collector::new(clients.clone());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let recorders: Vec<_> = clients
            .iter()
            .map(|c| {
                let (c, stop) = (c.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        c.record_event(1_000 + n % 1_000, Some(500));
                        n += 1;
                    }
                })
            })
            .collect();
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
        let mut drains = 0;
        while std::time::Instant::now() < deadline {
            if drains % 3 == 0 {
                col.reset();
            }
            let p = col.drain_interval();
            assert_eq!(p.get(Counter::Event), p.latency.count, "drain {drains}");
            assert_eq!(p.latency.count, p.service.count, "drain {drains}");
            drains += 1;
        }
        stop.store(true, Ordering::Relaxed);
        for r in recorders {
            r.join().unwrap();
        }
        let cum = col.cumulative();
        let shares: u64 = col.fairness().iter().map(|f| f.events).sum();
        assert!(cum.get(Counter::Event) > 0 && drains > 10, "{drains} drains");
        assert_eq!(cum.get(Counter::Event), cum.latency.count);
        assert_eq!(cum.latency.count, shares);
    }
}
