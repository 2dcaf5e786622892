//! The shards' interval series added up tick by tick while `dbbench merge`
//! reads the results, so that a result's intervals can be dropped as soon
//! as it is read: the memory a merge needs grows with the ticks and the
//! distinct latency buckets, not with the number of shards.
//!
//! Each tick keeps its latency buckets as a sorted list of (highest value
//! µs, count) — the form the results carry them in — rather than a
//! histogram (188 KiB each, resident: an hour of 1-second ticks would be
//! 660 MiB). The list goes into one reused histogram only when the tick's
//! row is computed, so every figure is the one [`Period::add_to`] of all
//! the shards' periods would give (the tests below check that).
//!
//! [`Period::add_to`]: super::result::PeriodData::add_to

use super::result::{HistData, TickData, COUNTER_FIELDS};
use crate::collector::{Counts, Period};
use crate::output::IntervalRow;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// Interval series merged so far.
#[derive(Default)]
pub struct Series {
    ticks: BTreeMap<i64, Tick>,
    /// The first damaged interval met, by (tick, shard): the error the
    /// tick-by-tick merge of all the shards would have stopped at.
    error: Option<((i64, u32), String)>,
}

/// One tick of the shards added so far.
struct Tick {
    row: RowSum,
    latency: Buckets,
}

/// A tick's figures other than its latencies, summed over shards.
#[derive(Clone, Copy)]
struct RowSum {
    /// The row's time, from the highest-numbered shard that has the tick.
    time_s: f64,
    time_from: u32,
    /// The longest of the shards' interval lengths.
    interval_s: f64,
    threads: u32,
    late_ms: Option<f64>,
    queue: Option<(u64, u64)>,
    counts: Counts,
}

impl RowSum {
    fn of<B>(shard: u32, t: &TickData<B>) -> RowSum {
        RowSum {
            time_s: t.time_s,
            time_from: shard,
            interval_s: t.interval_s,
            threads: t.threads,
            late_ms: t.late_ms,
            queue: t.queue,
            counts: t.period.counts.to_counts(),
        }
    }

    /// Adds another shard's row; a sum beyond its integer type is an
    /// error, and leaves the row as it was.
    fn add(&mut self, o: &RowSum) -> Result<(), String> {
        let overflow = |what: &str| format!("the shards' {what} overflow");
        let threads = self.threads.checked_add(o.threads).ok_or_else(|| overflow("clients"))?;
        let queue = match (self.queue, o.queue) {
            (Some((q, c)), Some((q2, c2))) => Some((
                q.checked_add(q2).ok_or_else(|| overflow("queue lengths"))?,
                c.checked_add(c2).ok_or_else(|| overflow("clients in an event"))?,
            )),
            (a, b) => a.or(b),
        };
        let mut counts = self.counts;
        for ((sum, c), name) in counts.iter_mut().zip(o.counts).zip(COUNTER_FIELDS) {
            *sum = sum.checked_add(c).ok_or_else(|| overflow(name))?;
        }
        if o.time_from >= self.time_from {
            (self.time_s, self.time_from) = (o.time_s, o.time_from);
        }
        self.interval_s = self.interval_s.max(o.interval_s);
        self.late_ms = match (self.late_ms, o.late_ms) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        (self.threads, self.queue, self.counts) = (threads, queue, counts);
        Ok(())
    }
}

/// A latency accumulator as sorted buckets.
struct Buckets {
    exact: Exact,
    /// (highest value µs, count), ascending (a value repeats only if a
    /// hand-made result repeated it; the histogram adds them up).
    sorted: Vec<(u64, u64)>,
}

/// An accumulator's exact figures.
#[derive(Clone, Copy)]
struct Exact {
    count: u64,
    /// u64::MAX while empty, as in `LatencyAcc`.
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
    overflow: u64,
}

impl Exact {
    fn of<B>(h: &HistData<B>) -> Exact {
        Exact { count: h.count, min_ns: h.min_ns, max_ns: h.max_ns, sum_ns: h.sum_ns, overflow: h.overflow }
    }
}

impl Buckets {
    fn empty() -> Buckets {
        Buckets { exact: Exact { count: 0, min_ns: u64::MAX, max_ns: 0, sum_ns: 0, overflow: 0 }, sorted: Vec::new() }
    }

    /// Adds another accumulator: its exact figures (as
    /// `LatencyAcc::add_buckets` adds them) and its sorted buckets. The
    /// counts are added in place while the values are ones the list has
    /// (most are: the shards run one workload); from the first it lacks,
    /// the rest is merged in, with `spare` as the new list's storage.
    fn add(&mut self, o: Exact, incoming: &[(u64, u64)], spare: &mut Vec<(u64, u64)>) -> Result<(), String> {
        // The totals bound every bucket's count: once they fit, no
        // bucket's sum can wrap.
        self.add_exact(o)?;
        let list = &mut self.sorted;
        let mut i = 0;
        for (j, &(v, c)) in incoming.iter().enumerate() {
            while i < list.len() && list[i].0 < v {
                i += 1;
            }
            if i < list.len() && list[i].0 == v {
                list[i].1 += c;
                i += 1;
            } else {
                merge_sorted(list, i, &incoming[j..], spare);
                return Ok(());
            }
        }
        Ok(())
    }

    /// Adds a result's histogram as [`Buckets::add`] adds another
    /// accumulator, its buckets as they are decoded (those from the first
    /// value the list lacks gathered in `incoming`, then merged in). On an
    /// error the list may hold part of them: the error ends the merge.
    fn add_hist<B: AsRef<str>>(&mut self, h: &HistData<B>, scratch: &mut Scratch) -> Result<(), String> {
        self.add_exact(Exact::of(h))?;
        let list = &mut self.sorted;
        let incoming = &mut scratch.incoming;
        incoming.clear();
        let mut i = 0;
        h.decode_each(&mut scratch.bytes, |v, c| {
            if incoming.is_empty() {
                while i < list.len() && list[i].0 < v {
                    i += 1;
                }
                if i < list.len() && list[i].0 == v {
                    list[i].1 += c;
                    i += 1;
                    return;
                }
            }
            incoming.push((v, c));
        })?;
        // list[..i] holds values below the first one gathered.
        merge_sorted(list, i, incoming, &mut scratch.merged);
        Ok(())
    }

    /// An accumulator's exact figures added as `LatencyAcc::add_buckets`
    /// adds them.
    fn add_exact(&mut self, o: Exact) -> Result<(), String> {
        let e = &mut self.exact;
        if o.count > 0 {
            let overflows = |what: &str| format!("the latency {what} over the shards overflows");
            let count = e.count.checked_add(o.count).ok_or_else(|| overflows("count"))?;
            let sum = e.sum_ns.checked_add(o.sum_ns).ok_or_else(|| overflows("sum"))?;
            let overflow = e.overflow.checked_add(o.overflow).ok_or_else(|| overflows("overflow count"))?;
            (e.count, e.sum_ns, e.overflow) = (count, sum, overflow);
            e.min_ns = e.min_ns.min(o.min_ns);
            e.max_ns = e.max_ns.max(o.max_ns);
        }
        Ok(())
    }
}

/// Buffers one reader reuses for every interval.
#[derive(Default)]
pub struct Scratch {
    bytes: Vec<u8>,
    incoming: Vec<(u64, u64)>,
    merged: Vec<(u64, u64)>,
}

impl Series {
    /// Adds shard `shard`'s series. A damaged interval is remembered (see
    /// [`Series::rows`]) and the rest of the shard's series still added:
    /// the error decides the merge (the first by (tick, shard), whatever
    /// order the shards are added in).
    pub fn add<B: AsRef<str>>(&mut self, shard: u32, series: &[TickData<B>], scratch: &mut Scratch) {
        for t in series {
            if let Err(e) = self.add_tick(shard, t, scratch) {
                self.note_error(t.tick, shard, format!("shard {shard}, interval {}: {e}", t.tick));
            }
        }
    }

    fn note_error(&mut self, tick: i64, shard: u32, msg: String) {
        if self.error.as_ref().is_none_or(|(at, _)| (tick, shard) < *at) {
            self.error = Some(((tick, shard), msg));
        }
    }

    fn add_tick<B: AsRef<str>>(&mut self, shard: u32, t: &TickData<B>, scratch: &mut Scratch) -> Result<(), String> {
        // Checked as adding them to a period would check them (service
        // time first); the rows show no service time, so its buckets are
        // not kept.
        t.period.service.decode_each(&mut scratch.bytes, |_, _| {})?;
        let row = RowSum::of(shard, t);
        let tick = match self.ticks.entry(t.tick) {
            Entry::Vacant(e) => e.insert(Tick { row, latency: Buckets::empty() }),
            Entry::Occupied(e) => {
                let tick = e.into_mut();
                tick.row.add(&row)?;
                tick
            }
        };
        tick.latency.add_hist(&t.period.latency, scratch)
    }

    /// Adds another reader's series (the same shards may not be in both).
    pub fn absorb(&mut self, other: Series, scratch: &mut Scratch) {
        if let Some(((tick, shard), msg)) = other.error {
            self.note_error(tick, shard, msg);
        }
        for (k, o) in other.ticks {
            let Some(t) = self.ticks.get_mut(&k) else {
                self.ticks.insert(k, o);
                continue;
            };
            // Which shard's addition overflowed is not known here: the
            // sum of every shard's figures for the tick did.
            let added =
                t.row.add(&o.row).and_then(|()| t.latency.add(o.latency.exact, &o.latency.sorted, &mut scratch.merged));
            if let Err(e) = added {
                self.note_error(k, 0, format!("interval {k}: {e}"));
            }
        }
    }

    /// The interval rows, tick by tick, or the first damaged interval.
    pub fn rows(&self, pct: &[f64]) -> Result<Vec<IntervalRow>, String> {
        if let Some((_, msg)) = &self.error {
            return Err(msg.clone());
        }
        let mut period = Period::preallocated();
        let mut out = Vec::with_capacity(self.ticks.len());
        for Tick { row: r, latency: b } in self.ticks.values() {
            period.clear();
            period.counts = r.counts;
            // The buckets were checked as they came in; the sums cannot
            // disagree unless this module is wrong.
            let e = &b.exact;
            period.latency.add_buckets(b.sorted.iter().copied(), e.count, e.min_ns, e.max_ns, e.sum_ns, e.overflow)?;
            let mut row = IntervalRow::new(r.time_s, r.interval_s, r.threads, &period, pct, r.queue);
            row.late_ms = r.late_ms;
            out.push(row);
        }
        Ok(out)
    }
}

/// `into` ∪ `incoming` (both ascending), counts of equal values added,
/// where `into[..from]` holds no value above `incoming`'s; `spare` is
/// reused as the new list's storage.
fn merge_sorted(into: &mut Vec<(u64, u64)>, from: usize, incoming: &[(u64, u64)], spare: &mut Vec<(u64, u64)>) {
    if incoming.is_empty() {
        return;
    }
    spare.clear();
    spare.reserve(into.len() + incoming.len());
    spare.extend_from_slice(&into[..from]);
    let (mut i, mut j) = (from, 0);
    while i < into.len() && j < incoming.len() {
        let (a, b) = (into[i], incoming[j]);
        if a.0 == b.0 {
            spare.push((a.0, a.1 + b.1));
            i += 1;
            j += 1;
        } else if a.0 < b.0 {
            spare.push(a);
            i += 1;
        } else {
            spare.push(b);
            j += 1;
        }
    }
    spare.extend_from_slice(&into[i..]);
    spare.extend_from_slice(&incoming[j..]);
    std::mem::swap(into, spare);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::LatencyAcc;
    use crate::shard::result::tests::Lcg;
    use crate::shard::result::{PeriodData, Text, TickData};

    /// Random shards' interval series (ticks missing here and there,
    /// empty intervals, latencies beyond the histogram), merged by
    /// [`Series`] in two readers and by adding every shard's period into
    /// one per tick (what the merge did before): the same rows.
    #[test]
    fn sorted_buckets_give_the_rows_of_added_periods() {
        let mut r = Lcg(7);
        for round in 0..30 {
            let shards = 1 + r.next() % 9;
            let ticks = 1 + r.next() % 12;
            let pct = [50.0, 95.0, 99.0, 100.0];
            let mut series: Vec<Vec<TickData>> = Vec::new();
            for _ in 0..shards {
                let mut s = Vec::new();
                for tick in 1..=ticks as i64 {
                    if r.next().is_multiple_of(7) {
                        continue;
                    }
                    let mut p = Period::default();
                    for _ in 0..r.next() % 300 {
                        p.latency.record(match r.next() % 50 {
                            0 => 3_700_000_000_000,
                            1..=5 => 1 + r.next() % 5000,
                            _ => 10_000 + r.next() % 40_000_000,
                        });
                    }
                    p.counts[0] = p.latency.count;
                    s.push(TickData {
                        tick,
                        time_s: tick as f64 + (r.next() % 10) as f64 / 1000.0,
                        interval_s: 1.0,
                        threads: 1 + (r.next() % 4) as u32,
                        queue: r.next().is_multiple_of(2).then(|| (r.next() % 9, r.next() % 9)),
                        late_ms: r.next().is_multiple_of(2).then(|| (r.next() % 100) as f64),
                        period: PeriodData::of(&p),
                    });
                }
                series.push(s);
            }
            // Before: all periods of a tick added, in shard order.
            let mut by_tick: BTreeMap<i64, Vec<(u32, &TickData)>> = BTreeMap::new();
            for (i, s) in series.iter().enumerate() {
                for t in s {
                    by_tick.entry(t.tick).or_default().push((i as u32, t));
                }
            }
            let mut want = Vec::new();
            for parts in by_tick.values() {
                let mut p = Period::default();
                let (mut dt, mut time, mut threads, mut late, mut queue) = (0.0f64, 0.0, 0, None::<f64>, None);
                for (_, t) in parts {
                    t.period.add_to(&mut p).unwrap();
                    dt = dt.max(t.interval_s);
                    time = t.time_s;
                    threads += t.threads;
                    late = match (late, t.late_ms) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                    if let Some((q, c)) = t.queue {
                        let (q0, c0) = queue.unwrap_or((0, 0));
                        queue = Some((q0 + q, c0 + c));
                    }
                }
                let mut row = IntervalRow::new(time, dt, threads, &p, &pct, queue);
                row.late_ms = late;
                want.push(format!("{row:?}"));
            }
            // Now: two readers, shards dealt out of order (the buckets'
            // base64 borrowed from each shard's JSON), then absorbed.
            let docs: Vec<String> = series.iter().map(|s| serde_json::to_string(s).unwrap()).collect();
            let read: Vec<Vec<TickData<Text>>> = docs.iter().map(|d| serde_json::from_str(d).unwrap()).collect();
            let (mut a, mut b, mut scratch) = (Series::default(), Series::default(), Scratch::default());
            for (shard, s) in read.iter().enumerate().rev() {
                let reader = if r.next().is_multiple_of(2) { &mut a } else { &mut b };
                reader.add(shard as u32, s, &mut scratch);
            }
            a.absorb(b, &mut scratch);
            let got: Vec<String> = a.rows(&pct).unwrap().iter().map(|row| format!("{row:?}")).collect();
            assert_eq!(got, want, "round {round}");
        }
    }

    #[test]
    fn the_first_damaged_interval_is_the_one_reported() {
        let mut acc = LatencyAcc::default();
        acc.record(2_000_000);
        let p = Period { latency: acc, ..Period::default() };
        let tick = |tick: i64, count: u64| {
            let mut d = PeriodData::of(&p);
            d.latency.count = count;
            TickData { tick, time_s: tick as f64, interval_s: 1.0, threads: 1, queue: None, late_ms: None, period: d }
        };
        let mut s = Series::default();
        let mut scratch = Scratch::default();
        s.add(3, &[tick(1, 1), tick(2, 5)], &mut scratch);
        s.add(1, &[tick(1, 1), tick(2, 1), tick(3, 9)], &mut scratch);
        s.add(2, &[tick(1, 1), tick(2, 7)], &mut scratch);
        assert_eq!(
            s.rows(&[95.0]).unwrap_err(),
            "shard 2, interval 2: the latency buckets hold 1 values, the count says 7"
        );
    }
}
