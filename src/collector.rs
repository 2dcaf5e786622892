//! Per-client counters and latency histograms, and the collector that merges
//! them into interval and cumulative figures.
//!
//! Each client owns a [`ClientStats`]: atomic counters (read by the collector
//! without stopping the client) and its periods behind an uncontended
//! mutex. Time is cut into periods by a [`Grid`] (report ticks, the end of
//! the warmup, checkpoints); a client counts each event in the period in
//! which the event ended, by the clock reading it takes anyway, and closes
//! a period when its first event after the period's end arrives. The
//! collector takes the periods up to each boundary shortly after it, so
//! per-interval figures are exact for that interval however late the
//! reporting thread runs (at 4096 clients on 2 CPUs it can be seconds), and
//! merges them into the cumulative figures. Statements, errors and
//! reconnects are counted in the period in which the client next ended an
//! event (or, for a client without one, in which the collector took them):
//! at a boundary, at most one event's statements per client land on the
//! other side. Nothing recorded before [`Collector::reset`] (the end of
//! warmup, or a checkpoint) reaches any later figure.
//!
//! Latency histograms are HDR histograms in microseconds, 1 µs to 1 h with 3
//! significant digits; min, max and sum are kept exactly in nanoseconds
//! beside them.

use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
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
    /// Event run again after an ignored error (RESTART_EVENT); not one of
    /// sysbench's counters, so scripts cannot count it themselves.
    Restart = 6,
}

/// Number of [`Counter`] kinds.
pub const NCOUNTERS: usize = 7;

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
        self.hist.as_ref().filter(|_| self.count > 0)
    }

    /// An empty accumulator whose histogram exists already: for the
    /// reporting thread, which should not page-fault a histogram in at its
    /// first tick, while thousands of starting clients hold the process's
    /// address-space lock (a line came 1.3 s late at 512 clients).
    pub fn preallocated() -> LatencyAcc {
        LatencyAcc { hist: Some(new_histogram()), ..LatencyAcc::default() }
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

    /// Empties the accumulator, keeping its histogram's memory (a reporting
    /// thread that allocated a fresh one per interval page-faulted it in,
    /// and at the end of a run with thousands of exiting clients a page
    /// fault could wait seconds for the address-space lock).
    pub fn clear(&mut self) {
        let hist = self.hist.take().map(|mut h| {
            h.reset();
            h
        });
        *self = LatencyAcc { hist, ..LatencyAcc::default() };
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

    /// The histogram's non-empty buckets as (the bucket's highest value in
    /// µs, count), ascending: recorded back with [`LatencyAcc::add_buckets`]
    /// into a histogram of the same bounds, each count lands in the same
    /// bucket, so the histogram is rebuilt exactly (a shard's result,
    /// `crate::shard`).
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        match self.histogram() {
            Some(h) => h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect(),
            None => Vec::new(),
        }
    }

    /// Adds the figures of another accumulator given by its parts: the
    /// buckets from [`LatencyAcc::buckets`] and the exact count, min, max,
    /// sum and overflow. Err when the buckets do not add up to `count` or
    /// lie outside the histogram's range (a damaged shard result).
    pub fn add_buckets(
        &mut self,
        buckets: impl Iterator<Item = (u64, u64)>,
        count: u64,
        min_ns: u64,
        max_ns: u64,
        sum_ns: u128,
        overflow: u64,
    ) -> Result<(), String> {
        // The sums first: the totals bound every bucket's count, so once
        // they fit no bucket of the histogram can wrap either.
        let overflows = |what: &str| format!("the {what} over the shards overflows");
        let total = self.count.checked_add(count).ok_or_else(|| overflows("count"))?;
        let sum = self.sum_ns.checked_add(sum_ns).ok_or_else(|| overflows("sum"))?;
        let over = self.overflow.checked_add(overflow).ok_or_else(|| overflows("overflow count"))?;
        let mut n = 0u64;
        for (v, c) in buckets {
            if v == 0 || v > HIST_MAX_US * 2 {
                return Err(format!("a latency bucket of {v} µs is outside the histogram's range"));
            }
            if c == 0 {
                continue;
            }
            n = n.checked_add(c).ok_or_else(|| format!("the latency buckets hold more than {} values", u64::MAX))?;
            if n > count {
                return Err(format!("the latency buckets hold more values than the count says ({count})"));
            }
            let h = self.hist.get_or_insert_with(new_histogram);
            h.record_n(v, c).map_err(|e| format!("a latency bucket of {v} µs: {e}"))?;
        }
        if n != count {
            return Err(format!("the latency buckets hold {n} values, the count says {count}"));
        }
        if count > 0 {
            (self.count, self.sum_ns, self.overflow) = (total, sum, over);
            self.min_ns = self.min_ns.min(min_ns);
            self.max_ns = self.max_ns.max(max_ns);
        }
        Ok(())
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

/// Where the periods that events are counted in begin and end, in ns of
/// [`crate::clock`]: the report ticks of the warmup (from the clients'
/// start), the end of the warmup, the report ticks of the run (from the end
/// of the warmup) and the checkpoints. Every client attributes each event
/// to the period in which it *ended*, by the clock reading it already
/// takes, so a period's figures do not depend on when the reporting thread
/// gets round to collecting them.
#[derive(Debug, Clone)]
pub struct Grid {
    start_ns: u64,
    run_ns: u64,
    /// `--report-interval` (0 = none).
    tick_ns: u64,
    /// Checkpoints after the end of the warmup, sorted, absolute.
    checkpoints: Vec<u64>,
    /// Live-metrics publications (`--metrics-listen`; 0 = none): boundaries
    /// every this many ns from the start that are neither report ticks nor
    /// checkpoints, so that the collector takes the figures that often
    /// even without `--report-interval` (see `crate::metrics`).
    publish_ns: u64,
}

impl Grid {
    /// A grid for clients released at `start_ns` whose measurement starts at
    /// `run_ns` (the end of the warmup), reporting every `tick_ns` (0 =
    /// never), with checkpoints at `checkpoints` (absolute times).
    pub fn new(start_ns: u64, run_ns: u64, tick_ns: u64, mut checkpoints: Vec<u64>) -> Grid {
        checkpoints.retain(|c| *c > run_ns);
        checkpoints.sort_unstable();
        checkpoints.dedup();
        Grid { start_ns, run_ns: run_ns.max(start_ns), tick_ns, checkpoints, publish_ns: 0 }
    }

    /// The grid with a boundary every `publish_ns` from the start as well
    /// (live metrics; 0 = none). Each one costs every running client one
    /// period roll when its first event after it ends.
    pub fn publishing_every(mut self, publish_ns: u64) -> Grid {
        self.publish_ns = publish_ns;
        self
    }

    /// The first boundary after `t` (u64::MAX when none follows).
    pub fn next_after(&self, t: u64) -> u64 {
        let mut next = u64::MAX;
        // Ticks counted from `from`: the first one after `t` (None: no ticks).
        let tick_after = |from: u64| {
            let k = t.saturating_sub(from).checked_div(self.tick_ns)? + 1;
            Some(from.saturating_add(k.saturating_mul(self.tick_ns)))
        };
        if t < self.run_ns {
            next = self.run_ns;
            if let Some(tick) = tick_after(self.start_ns) {
                next = next.min(tick);
            }
        } else if let Some(tick) = tick_after(self.run_ns) {
            next = tick;
        }
        if let Some(c) = self.checkpoints.get(self.checkpoints.partition_point(|c| *c <= t)) {
            next = next.min(*c);
        }
        if let Some(k) = t.saturating_sub(self.start_ns).checked_div(self.publish_ns) {
            next = next.min(self.start_ns.saturating_add((k + 1).saturating_mul(self.publish_ns)));
        }
        next
    }

    /// The end of the warmup (the start of measurement).
    pub fn run_ns(&self) -> u64 {
        self.run_ns
    }

    /// Whether boundary `b` is a report tick (during the warmup or after).
    pub fn is_tick(&self, b: u64) -> bool {
        self.tick_ns > 0
            && if b < self.run_ns {
                b > self.start_ns && (b - self.start_ns).is_multiple_of(self.tick_ns)
            } else {
                b > self.run_ns && (b - self.run_ns).is_multiple_of(self.tick_ns)
            }
    }

    /// Whether boundary `b` is a checkpoint.
    pub fn is_checkpoint(&self, b: u64) -> bool {
        self.checkpoints.binary_search(&b).is_ok()
    }
}

/// Event latencies of one period of one client: the values themselves
/// until there are [`RAW_MAX`] of them, then folded into a histogram. A
/// client at thousands of clients ends a few events per report interval;
/// giving each its own histogram (188 KiB, zeroed by writing) per interval,
/// and merging thousands of them at every tick, cost seconds per tick at
/// 4096 clients.
#[derive(Debug, Default)]
struct Lat {
    raw: Vec<u64>,
    folded: LatencyAcc,
}

/// Latencies a client keeps as values before folding them into a histogram.
const RAW_MAX: usize = 1024;

/// Emptied slots a client keeps for its next periods.
const SPARE_MAX: usize = 2;

/// What a client's slot needs before its next event (see [`Lat::wants`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Nothing,
    /// A list of latencies with room for this many.
    Values(usize),
    Histogram,
}

/// Memory made outside the client's lock for [`Lat::install`].
enum Room {
    Values(Vec<u64>),
    Histogram(LatencyAcc),
}

impl Want {
    /// The memory, made and written once (so that its pages are resident:
    /// a page fault under the lock can wait for the address-space lock).
    fn make(self) -> Option<Room> {
        match self {
            Want::Nothing => None,
            Want::Values(n) => {
                // Not `vec![0; n]`: calloc may hand out fresh pages without
                // writing them, and the first write would fault under the lock.
                #[allow(clippy::slow_vector_initialization)]
                let mut v = Vec::with_capacity(n);
                v.resize(n, 0);
                v.clear();
                Some(Room::Values(v))
            }
            Want::Histogram => Some(Room::Histogram(LatencyAcc::preallocated())),
        }
    }
}

impl Lat {
    #[inline]
    fn record(&mut self, ns: u64) {
        if self.raw.len() == RAW_MAX {
            for v in self.raw.drain(..) {
                self.folded.record(v);
            }
        }
        self.raw.push(ns);
    }

    fn is_empty(&self) -> bool {
        self.raw.is_empty() && self.folded.count == 0
    }

    /// What the next value needs that it would otherwise allocate under
    /// the client's lock: a longer list (this one is full), or, once the
    /// list holds [`RAW_MAX`] values, the histogram they fold into.
    fn wants(&self) -> Want {
        if self.raw.len() == RAW_MAX {
            if self.folded.hist.is_none() {
                return Want::Histogram;
            }
        } else if self.raw.len() == self.raw.capacity() {
            return Want::Values((self.raw.capacity() * 2).clamp(SLOT_ROOM, RAW_MAX));
        }
        Want::Nothing
    }

    /// Puts `room` (made outside the lock) in place if still needed; gives
    /// back what the caller frees after releasing the lock (the replaced
    /// list, or room no longer needed).
    fn install(&mut self, room: Room) -> Option<Room> {
        match room {
            Room::Values(mut v) if v.capacity() > self.raw.capacity() => {
                v.extend_from_slice(&self.raw);
                std::mem::swap(&mut v, &mut self.raw);
                Some(Room::Values(v))
            }
            Room::Histogram(h) if self.folded.hist.is_none() => {
                self.folded.hist = h.hist;
                None
            }
            unused => Some(unused),
        }
    }

    fn clear(&mut self) {
        self.raw.clear();
        self.folded.clear();
    }

    /// Adds every value into `dst`; returns (count, sum, min, max) in ns.
    fn merge_into(&self, dst: &mut LatencyAcc) -> (u64, u128, u64, u64) {
        dst.merge(&self.folded);
        let f = &self.folded;
        let (mut n, mut sum, mut min, mut max) = (f.count, f.sum_ns, f.min_ns, f.max_ns);
        for v in &self.raw {
            dst.record(*v);
            n += 1;
            sum += *v as u128;
            min = min.min(*v);
            max = max.max(*v);
        }
        (n, sum, min, max)
    }
}

/// A period's latencies of one client: event latency (from the intended
/// start under `--rate`, else from the actual start) and, under `--rate`,
/// service time.
#[derive(Debug, Default)]
struct Slot {
    latency: Lat,
    service: Lat,
}

/// Event latencies a new slot has room for (8 bytes each) before it grows.
const SLOT_ROOM: usize = 64;

/// Closed and spare slots a client has room for before those lists grow:
/// they grow only while the reporting thread runs this many periods late.
const PERIODS_ROOM: usize = 8;

impl Slot {
    /// An empty slot with room for [`SLOT_ROOM`] event latencies. Allocated
    /// outside the client's lock: see [`ClientStats::record_event`].
    fn with_room() -> Slot {
        Slot {
            latency: Lat { raw: Vec::with_capacity(SLOT_ROOM), folded: LatencyAcc::default() },
            service: Lat::default(),
        }
    }

    /// What the slot's two lists need before the next event.
    fn wants(&self) -> [Want; 2] {
        [self.latency.wants(), self.service.wants()]
    }

    /// Empties the slot, keeping its memory for the next period.
    fn clear(&mut self) {
        self.latency.clear();
        self.service.clear();
    }
}

/// A period the client has left and the collector has not yet taken.
#[derive(Debug)]
struct Closed {
    /// The boundary that ends it.
    end: u64,
    /// Counter deltas over it.
    counts: Counts,
    slot: Slot,
}

/// One client's periods. The client writes them (one uncontended lock per
/// event); the collector takes closed ones at each boundary.
#[derive(Debug, Default)]
struct Periods {
    /// End of the open period (0 before the first event: its first event
    /// opens one).
    cur_end: u64,
    cur: Slot,
    /// Counter values when the open period began.
    base: Counts,
    /// Periods the client left, oldest first.
    closed: VecDeque<Closed>,
    /// Emptied slots for the next periods: the collector hands every one
    /// back rather than freeing it, and the client frees those beyond
    /// [`SPARE_MAX`] itself, outside its lock. The reporting thread must
    /// never free a client's memory: glibc's `free` takes the lock of the
    /// malloc arena the block came from, which hundreds of clients share at
    /// 4096 clients, and one of them preempted inside malloc held the
    /// reporting thread for 3 s (measured, PostgreSQL, 2 CPUs).
    spare: Vec<Slot>,
    /// The collector has taken this client's figures up to this boundary;
    /// an event that ended before it but is recorded only now is late.
    collected_through: u64,
    /// Late events (see [`Collector::late_events`]).
    late: u64,
}

impl Periods {
    /// Closes the open period (its counters up to `counts`) and opens the
    /// one containing `t`.
    fn roll(&mut self, counts: Counts, grid: &Grid, t: u64) {
        let delta = self.advance(counts);
        if !self.cur.latency.is_empty() || delta.iter().any(|d| *d > 0) {
            let slot = std::mem::replace(&mut self.cur, self.spare.pop().unwrap_or_default());
            self.closed.push_back(Closed { end: self.cur_end, counts: delta, slot });
            // Room for every closed slot to come back without the collector
            // growing (reallocating, freeing) this vector: see `spare`.
            let room = self.spare.len() + self.closed.len();
            if self.spare.capacity() < room {
                self.spare.reserve(room - self.spare.len());
            }
        }
        self.cur_end = grid.next_after(t);
    }

    /// Moves the open period's counter base up to `counts` (each counter
    /// only forward) and returns what it moved by: the deltas of all
    /// periods add up to the totals whatever snapshots they were cut at.
    fn advance(&mut self, counts: Counts) -> Counts {
        let to: Counts = std::array::from_fn(|i| counts[i].max(self.base[i]));
        let delta = std::array::from_fn(|i| to[i] - self.base[i]);
        self.base = to;
        delta
    }
}

/// One client's live statistics, shared between the client and the collector.
#[derive(Debug, Default)]
#[repr(align(128))] // its own cache lines: no false sharing between clients
pub struct ClientStats {
    /// Totals since the client started, incremented without a lock; each
    /// period's share is their difference between its start and end.
    counters: [AtomicU64; NCOUNTERS],
    /// `counters` when the client's current event started (or last
    /// restarted): a period ends at that point of the counters, so that an
    /// event's statements are counted in the period of the event itself
    /// (the one it ends in) — for a one-statement event, exactly.
    at_event_start: [AtomicU64; NCOUNTERS],
    /// The client's periods. One lock guards them and the event counter's
    /// increment, so that a period sees an event whole or not at all:
    /// never counted in one period and timed in another.
    periods: Mutex<Periods>,
    /// True while the client runs an event (for "unfinished events" at a
    /// forced shutdown and the concurrency figure under `--rate`). Per
    /// client, so that marking it does not bounce one cache line between
    /// all clients on every event.
    pub in_event: std::sync::atomic::AtomicBool,
    /// The kernel id of the thread the client runs on (0: not known), for
    /// the collector to lend it priority while it waits for its lock (see
    /// [`crate::priority`]).
    os_thread: AtomicI32,
    /// When the client's event loop ended (ns of [`crate::clock`]; 0 while
    /// it runs): the `thds` of an interval line is the number of clients
    /// running at its tick, whenever the line is printed.
    finished_ns: AtomicU64,
    /// Fatal SQL errors the client has met but not counted yet: counted as
    /// ignored errors once the client goes on after them (its script caught
    /// them, as sysbench 1.0.20 counts them then), never when one of them
    /// ends the client (sysbench then exits without a report; ours names
    /// the error as the run's end, not among the errors it ignored).
    held_errors: AtomicU64,
}

/// Events whose latency was recorded since the last reset, their total,
/// shortest and longest latency: the "threads fairness" figures and
/// `--debug`'s per-thread lines.
#[derive(Debug, Clone, Copy)]
struct Share {
    events: u64,
    time_ns: u128,
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

    /// A fatal SQL error, counted by [`ClientStats::count_held_errors`] if
    /// the client goes on after it.
    pub fn hold_error(&self) {
        self.held_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// The client went on after the fatal errors it held (its script caught
    /// them): they count as ignored errors now. Called before the event's
    /// counters are taken, so they land in the event's period.
    #[inline]
    pub fn count_held_errors(&self) {
        if self.held_errors.load(Ordering::Relaxed) > 0 {
            let n = self.held_errors.swap(0, Ordering::Relaxed);
            self.counters[Counter::Error as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Statistics for a client that is about to start, with the room its
    /// first periods need (see [`ClientStats::record_event`]).
    pub fn with_room() -> ClientStats {
        let s = ClientStats::default();
        {
            let mut p = s.periods();
            p.cur = Slot::with_room();
            p.closed = VecDeque::with_capacity(PERIODS_ROOM);
            p.spare = Vec::with_capacity(PERIODS_ROOM);
            p.spare.extend((0..SPARE_MAX).map(|_| Slot::with_room()));
        }
        s
    }

    /// Notes that the client's event loop has ended.
    pub fn set_finished(&self) {
        self.finished_ns.store(crate::clock::now_ns().max(1), Ordering::Relaxed);
    }

    /// Whether the client's event loop was running at `b` (ns of
    /// [`crate::clock`]).
    pub fn running_at(&self, b: u64) -> bool {
        let f = self.finished_ns.load(Ordering::Relaxed);
        f == 0 || f > b
    }

    /// Notes the thread the client runs on (its own, or its worker's).
    pub fn set_os_thread(&self, tid: i32) {
        self.os_thread.store(tid, Ordering::Relaxed);
    }

    /// Marks the start (or restart) of the client's event: see
    /// `at_event_start`. Only the client itself writes it.
    #[inline]
    pub fn mark_event_start(&self) {
        for (m, c) in self.at_event_start.iter().zip(&self.counters) {
            m.store(c.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    fn counts_at_event_start(&self) -> Counts {
        std::array::from_fn(|i| self.at_event_start[i].load(Ordering::Relaxed))
    }

    /// Records an event that ends now: counts it in the period of `grid`
    /// that contains this moment, with its latency from `intended_ns` (and,
    /// under `--rate`, its service time from `service_from_ns`; both ns of
    /// [`crate::clock`]).
    ///
    /// The clock is read with the lock held, not before taking it: a client
    /// descheduled between reading the clock and recording (on an
    /// overloaded host, for seconds) would otherwise record an event that
    /// ended before a boundary after the collector had taken that boundary's
    /// figures, and the event would count in a later interval than its own.
    /// Read under the lock, the event ends after any collection that came
    /// before it: each interval counts exactly the events that ended in it.
    /// The latency then includes the wait for the lock (uncontended: a few
    /// ns; contended: the collector's short hold), time the client did
    /// spend before its event was done.
    ///
    /// Nothing is allocated under the lock in the usual case: a client
    /// waiting in malloc for an arena lock that a preempted thread holds
    /// would hold up the line waiting for it (a priority lent to it, see
    /// [`crate::priority`], cannot reach the arena's holder). New slots are
    /// made after the lock is released, and the lists have room for
    /// [`PERIODS_ROOM`] periods. A slot that fills up (a client with more
    /// than [`SLOT_ROOM`] events in one period) gets a longer list, and
    /// later its histogram, the same way: made after the lock is released,
    /// put in place under a second short hold. Measured before this, at
    /// 1024 PostgreSQL clients on 2 vCPUs: a client growing its list under
    /// the lock waited there for a malloc arena that a preempted client
    /// held, and held a line up to 7 s.
    #[inline]
    pub fn record_event(&self, grid: &Grid, intended_ns: u64, service_from_ns: Option<u64>) {
        let mut p = self.periods();
        let end_ns = crate::clock::now_ns();
        let service = service_from_ns.map(|s| end_ns.saturating_sub(s));
        let surplus = self.record_locked(&mut p, grid, end_ns, end_ns.saturating_sub(intended_ns), service);
        let short = p.spare.is_empty();
        let wants = p.cur.wants();
        // Freed here, after the lock: see `Periods::spare`.
        drop(p);
        drop(surplus);
        if short {
            // The reporting thread is behind: the next period's slot, made
            // now rather than under the lock when it is needed.
            let slot = Slot::with_room();
            self.periods().spare.push(slot);
        }
        if wants != [Want::Nothing; 2] {
            self.make_room(wants);
        }
    }

    /// Gives the open slot what [`Slot::wants`] asked for, allocated
    /// outside the lock (see [`ClientStats::record_event`]).
    #[cold]
    fn make_room(&self, [latency, service]: [Want; 2]) {
        let (latency, service) = (latency.make(), service.make());
        let mut p = self.periods();
        let freed = [latency.and_then(|r| p.cur.latency.install(r)), service.and_then(|r| p.cur.service.install(r))];
        drop(p);
        drop(freed);
    }

    /// [`ClientStats::record_event`] at a given end (tests: chosen times).
    #[cfg(test)]
    fn record_event_at(&self, grid: &Grid, end_ns: u64, latency_ns: u64, service_ns: Option<u64>) {
        let mut p = self.periods();
        let surplus = self.record_locked(&mut p, grid, end_ns, latency_ns, service_ns);
        let wants = p.cur.wants();
        drop(p);
        drop(surplus);
        if wants != [Want::Nothing; 2] {
            self.make_room(wants);
        }
    }

    /// Records an event that ended at `end_ns`, under the lock; returns a
    /// surplus spare slot for the caller to free after releasing the lock.
    #[inline]
    fn record_locked(
        &self,
        p: &mut Periods,
        grid: &Grid,
        end_ns: u64,
        latency_ns: u64,
        service_ns: Option<u64>,
    ) -> Option<Slot> {
        let mut surplus = None;
        if end_ns >= p.cur_end {
            p.roll(self.counts_at_event_start(), grid, end_ns);
            if p.spare.len() > SPARE_MAX {
                surplus = p.spare.pop();
            }
        } else if end_ns < p.collected_through {
            p.late += 1;
        }
        self.inc(Counter::Event);
        p.cur.latency.record(latency_ns);
        if let Some(s) = service_ns {
            p.cur.service.record(s);
        }
        surplus
    }

    /// The periods, locked. Nothing panics while holding the lock, and the
    /// figures stay consistent if something did: no poisoning.
    fn periods(&self) -> MutexGuard<'_, Periods> {
        self.periods.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn counts(&self) -> Counts {
        std::array::from_fn(|i| self.counters[i].load(Ordering::Relaxed))
    }

    /// Takes, under the client's lock, everything it attributed to periods
    /// that end at or before `b`: into `p` (latencies, counters) and
    /// `share`. The open period is taken too when it ends by `b` (the
    /// client has had no event end since): then its counters are those
    /// counted up to now, or, in an event, up to that event's start or
    /// latest restart (its statements belong to where it will end; an event
    /// that keeps failing still shows its errors).
    ///
    fn take(&self, p: &mut Periods, grid: &Grid, b: u64, into: &mut Period, share: &mut Share) {
        let mut add = |counts: &Counts, slot: &Slot, into: &mut Period| {
            for (t, c) in into.counts.iter_mut().zip(counts) {
                *t += c;
            }
            let (n, sum, min, max) = slot.latency.merge_into(&mut into.latency);
            slot.service.merge_into(&mut into.service);
            share.events += n;
            share.time_ns += sum;
            share.min_ns = share.min_ns.min(min);
            share.max_ns = share.max_ns.max(max);
        };
        while p.closed.front().is_some_and(|c| c.end <= b) {
            if let Some(mut c) = p.closed.pop_front() {
                add(&c.counts, &c.slot, into);
                // Never dropped here: see `Periods::spare`.
                c.slot.clear();
                p.spare.push(c.slot);
            }
        }
        if p.cur_end <= b {
            let now = if self.in_event.load(Ordering::Relaxed) && b != u64::MAX {
                self.counts_at_event_start()
            } else {
                self.counts()
            };
            let delta = p.advance(now);
            add(&delta, &p.cur, into);
            p.cur.clear();
            p.cur_end = grid.next_after(b);
        }
        p.collected_through = p.collected_through.max(b);
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
    /// Empties the period, keeping its histograms' memory.
    pub fn clear(&mut self) {
        self.counts = [0; NCOUNTERS];
        self.latency.clear();
        self.service.clear();
    }

    /// An empty period with its histograms allocated (see
    /// [`LatencyAcc::preallocated`]).
    pub fn preallocated() -> Period {
        Period { counts: [0; NCOUNTERS], latency: LatencyAcc::preallocated(), service: LatencyAcc::preallocated() }
    }

    /// Adds another period's figures.
    pub fn merge(&mut self, o: &Period) {
        for (t, c) in self.counts.iter_mut().zip(o.counts) {
            *t += c;
        }
        self.latency.merge(&o.latency);
        self.service.merge(&o.service);
    }
}

/// Merges all clients' statistics. Owned by the thread that reports.
pub struct Collector {
    clients: Vec<Arc<ClientStats>>,
    /// Everything collected since the last reset.
    cumulative: Period,
    /// Per client, since the last reset.
    shares: Vec<Share>,
    /// One boundary's figures while they are collected (kept: see
    /// [`LatencyAcc::clear`]).
    scratch: Period,
    /// Clients whose lock was held when tried (kept: no allocation while
    /// collecting).
    busy: Vec<usize>,
    /// See [`Collector::longest_event_ns`].
    longest_ns: u64,
    /// See [`Collector::lend_priority`].
    lend: bool,
    /// Everything collected since [`Collector::restart_measured`], which
    /// checkpoints do not reset: the totals live metrics publish (kept only
    /// once [`Collector::keep_measured`] asked for them).
    measured: Option<Period>,
}

impl Collector {
    /// A collector over the given clients.
    pub fn new(clients: Vec<Arc<ClientStats>>) -> Collector {
        let shares = vec![Share::default(); clients.len()];
        let busy = Vec::with_capacity(clients.len());
        Collector {
            clients,
            cumulative: Period::preallocated(),
            shares,
            scratch: Period::preallocated(),
            busy,
            longest_ns: 0,
            lend: false,
            measured: None,
        }
    }

    /// Keeps totals that only [`Collector::restart_measured`] resets (live
    /// metrics: a Prometheus counter never goes down at a checkpoint).
    pub fn keep_measured(&mut self) {
        self.measured = Some(Period::preallocated());
    }

    /// Starts the kept totals afresh (the end of the warmup).
    pub fn restart_measured(&mut self) {
        if let Some(m) = &mut self.measured {
            m.clear();
        }
    }

    /// The kept totals (None unless [`Collector::keep_measured`]).
    pub fn measured(&self) -> Option<&Period> {
        self.measured.as_ref()
    }

    /// Adds to `into` everything the clients attributed to periods of
    /// `grid` ending at or before boundary `b` and not collected yet
    /// (u64::MAX: everything); also to the cumulative figures.
    ///
    /// Waits for every client: a client holds its lock only while it
    /// records an event, for a few hundred instructions, but one preempted
    /// inside that section on an overloaded host keeps it until the
    /// scheduler runs it again (at 4096 PostgreSQL clients on 2 CPUs,
    /// measured up to 4.9 s for one client). Free clients are taken first,
    /// so that the busy ones run meanwhile and the waits overlap rather than
    /// add up; then the busy ones, blocking (lending each its priority
    /// meanwhile, where [`Collector::lend_priority`] allows). A line that
    /// went out without them would count their events in a later interval
    /// (tried: 11,927 events moved at 512 PostgreSQL clients).
    pub fn collect(&mut self, grid: &Grid, b: u64, into: &mut Period) {
        self.scratch.clear();
        let p = &mut self.scratch;
        let mut busy = std::mem::take(&mut self.busy);
        busy.clear();
        for (i, c) in self.clients.iter().enumerate() {
            match c.periods.try_lock() {
                Ok(mut g) => c.take(&mut g, grid, b, p, &mut self.shares[i]),
                Err(std::sync::TryLockError::Poisoned(e)) => {
                    c.take(&mut e.into_inner(), grid, b, p, &mut self.shares[i])
                }
                Err(std::sync::TryLockError::WouldBlock) => busy.push(i),
            }
        }
        for &i in &busy {
            let c = &self.clients[i];
            let _lent = if self.lend { crate::priority::Lent::to(c.os_thread.load(Ordering::Relaxed)) } else { None };
            c.take(&mut c.periods(), grid, b, p, &mut self.shares[i]);
        }
        self.busy = busy;
        self.longest_ns = self.longest_ns.max(p.latency.max_ns);
        self.cumulative.merge(p);
        if let Some(m) = &mut self.measured {
            m.merge(p);
        }
        into.merge(p);
    }

    /// Lends the collecting thread's raised priority to a client whose lock
    /// it waits for (see [`crate::priority`]): for a thread that could raise
    /// its own.
    pub fn lend_priority(&mut self) {
        self.lend = true;
    }

    /// Starts the cumulative figures and the clients' shares afresh (end of
    /// the warmup, checkpoint): nothing collected so far reaches any later
    /// figure.
    pub fn reset(&mut self) {
        self.cumulative.clear();
        self.shares.iter_mut().for_each(|s| *s = Share::default());
    }

    /// Everything collected since the last reset.
    pub fn cumulative(&self) -> Period {
        self.cumulative.clone()
    }

    /// Per-client events and event latency since the last reset.
    pub fn fairness(&self) -> Vec<ClientFairness> {
        self.shares
            .iter()
            .map(|s| {
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

    /// Events recorded after the collector had taken their period (their
    /// client was descheduled between the event's end and its recording):
    /// counted in the period after their own.
    pub fn late_events(&self) -> u64 {
        self.clients.iter().map(|c| c.periods().late).sum()
    }

    /// The longest event latency collected so far, ns (without taking
    /// any client's lock: asked while the run goes on).
    pub fn longest_event_ns(&self) -> u64 {
        self.longest_ns
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

    const S: u64 = 1_000_000_000;

    fn collect(col: &mut Collector, g: &Grid, b: u64) -> Period {
        let mut p = Period::default();
        col.collect(g, b, &mut p);
        p
    }

    /// Clients released at 10 s, measuring from 10 s, ticks every second.
    fn grid() -> Grid {
        Grid::new(10 * S, 10 * S, S, Vec::new())
    }

    /// Whatever a client records in one period, its next event finds room
    /// in the open slot: nothing is allocated under the client's lock (a
    /// client allocating there waited for a malloc arena a preempted
    /// client held and held a line up to 7 s), and every value is kept.
    #[test]
    fn a_busy_client_never_allocates_under_its_lock() {
        let g = grid();
        let c = Arc::new(ClientStats::with_room());
        let mut col = Collector::new(vec![c.clone()]);
        let has_room = |l: &Lat| l.raw.len() < l.raw.capacity() || (l.raw.len() == RAW_MAX && l.folded.hist.is_some());
        let n = 3 * RAW_MAX as u64;
        for i in 0..n {
            c.mark_event_start();
            c.record_event_at(&g, 10 * S + 1 + i, 1_000 * (i + 1), Some(500 * (i + 1)));
            let p = c.periods();
            assert!(
                has_room(&p.cur.latency),
                "event {i}: latency list {} of {}",
                p.cur.latency.raw.len(),
                p.cur.latency.raw.capacity()
            );
            assert!(
                has_room(&p.cur.service),
                "event {i}: service list {} of {}",
                p.cur.service.raw.len(),
                p.cur.service.raw.capacity()
            );
        }
        let p = collect(&mut col, &g, 11 * S);
        assert_eq!(p.latency.count, n);
        assert_eq!(p.latency.sum_ns, (1..=n as u128).sum::<u128>() * 1_000);
        assert_eq!((p.latency.min_ns, p.latency.max_ns), (1_000, 1_000 * n));
        assert_eq!(p.service.count, n);
    }

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
        // A client with a few events per interval never builds a histogram
        // of its own: the collector's period has the only one.
        let g = grid();
        let c = Arc::new(ClientStats::default());
        let mut col = Collector::new(vec![c.clone()]);
        c.mark_event_start();
        c.record_event_at(&g, 10 * S + 1, 1_000_000, None);
        let p = collect(&mut col, &g, 11 * S);
        assert_eq!(p.latency.count, 1);
        assert!(p.latency.histogram().is_some());
        assert!(c.periods().cur.latency.folded.histogram().is_none());
        c.mark_event_start();
        c.record_event_at(&g, 11 * S + 1, 1_000_000, None);
        assert!(c.periods().closed.iter().all(|p| p.slot.latency.folded.histogram().is_none()));
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
    fn grid_boundaries() {
        // Released at 10 s, 2.5 s of warmup, ticks every second, checkpoints
        // at 14 s and at 13 s (a tick too).
        let g = Grid::new(10 * S, 12 * S + S / 2, S, vec![14 * S, 13 * S + S / 2, 12 * S]);
        let mut b = Vec::new();
        let mut t = 0;
        while b.len() < 7 {
            t = g.next_after(t);
            b.push(t);
        }
        let half = S / 2;
        assert_eq!(b, [11 * S, 12 * S, 12 * S + half, 13 * S + half, 14 * S, 14 * S + half, 15 * S + half]);
        assert!(g.is_tick(11 * S) && g.is_tick(12 * S) && g.is_tick(13 * S + half));
        assert!(!g.is_tick(12 * S + half) && !g.is_tick(14 * S));
        assert!(g.is_checkpoint(14 * S) && g.is_checkpoint(13 * S + half) && !g.is_checkpoint(12 * S));
        assert_eq!(g.run_ns(), 12 * S + half);
        // No ticks: only the end of the warmup and the checkpoints.
        let g = Grid::new(10 * S, 10 * S, 0, vec![15 * S]);
        assert_eq!((g.next_after(0), g.next_after(10 * S), g.next_after(15 * S)), (10 * S, 15 * S, u64::MAX));
    }

    #[test]
    fn publishing_boundaries_are_neither_ticks_nor_checkpoints() {
        // Live metrics without --report-interval: a boundary every second
        // from the release, beside the end of the warmup (10.5 s).
        let g = Grid::new(10 * S, 10 * S + S / 2, 0, Vec::new()).publishing_every(S);
        let b: Vec<u64> = std::iter::successors(Some(0), |t| Some(g.next_after(*t))).skip(1).take(4).collect();
        assert_eq!(b, [10 * S + S / 2, 11 * S, 12 * S, 13 * S]);
        assert!(b.iter().all(|b| !g.is_tick(*b) && !g.is_checkpoint(*b)));
        // The collector keeps the measured totals through a reset (checkpoint).
        let c = Arc::new(ClientStats::default());
        let mut col = Collector::new(vec![c.clone()]);
        col.keep_measured();
        c.mark_event_start();
        c.record_event_at(&g, 11 * S + 5, 1_000_000, None);
        col.collect(&g, 12 * S, &mut Period::default());
        col.reset();
        c.mark_event_start();
        c.record_event_at(&g, 12 * S + 5, 1_000_000, None);
        col.collect(&g, 13 * S, &mut Period::default());
        assert_eq!(col.cumulative().get(Counter::Event), 1);
        assert_eq!(col.measured().map(|m| (m.get(Counter::Event), m.latency.count)), Some((2, 2)));
        col.restart_measured();
        assert_eq!(col.measured().map(|m| m.get(Counter::Event)), Some(0));
    }

    #[test]
    fn collector_intervals_and_reset() {
        let g = grid();
        let c = Arc::new(ClientStats::default());
        let mut col = Collector::new(vec![c.clone()]);
        c.inc(Counter::Read);
        c.mark_event_start();
        c.record_event_at(&g, 10 * S + 5, 5_000_000, None);
        let p = collect(&mut col, &g, 11 * S);
        assert_eq!(p.get(Counter::Read), 1);
        assert_eq!(p.latency.count, 1);
        col.reset();
        c.inc(Counter::Write);
        c.mark_event_start();
        c.record_event_at(&g, 11 * S + 5, 7_000_000, None);
        let i = collect(&mut col, &g, 12 * S);
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

    /// The defect behind late interval lines at 4096 clients: figures
    /// belonged to whenever the reporter drained them. Now an event counts in
    /// the interval it ended in, however late the collector comes.
    #[test]
    fn events_count_in_the_interval_they_ended_in_however_late_collected() {
        let g = grid();
        let clients: Vec<_> = (0..3).map(|_| Arc::new(ClientStats::default())).collect();
        let mut col = Collector::new(clients.clone());
        // Interval k (ending at 11+k s) gets k+1 events per client, spread
        // over it; some statements between them.
        for k in 0..3u64 {
            for (i, c) in clients.iter().enumerate() {
                for j in 0..=k {
                    c.inc(Counter::Read);
                    c.mark_event_start();
                    c.record_event_at(&g, (10 + k) * S + (j + 1) * S / 8 + i as u64, 1_000 * (k + 1), None);
                }
            }
        }
        // Collected only now, all three at once, in order.
        for k in 0..3u64 {
            let p = collect(&mut col, &g, (11 + k) * S);
            assert_eq!(p.get(Counter::Event), 3 * (k + 1), "interval {k}");
            assert_eq!(p.latency.count, 3 * (k + 1), "interval {k}");
            assert_eq!(p.latency.max_ns, 1_000 * (k + 1), "interval {k}");
        }
        // The statements of a client's last event before a boundary are
        // counted when it next ends an event: here none follows, so the
        // open period's counts are taken with it.
        let tail = collect(&mut col, &g, u64::MAX);
        assert_eq!(tail.get(Counter::Event), 0);
        assert_eq!(col.cumulative().get(Counter::Read), 18);
        assert_eq!(col.cumulative().get(Counter::Event), 18);
        assert_eq!(col.late_events(), 0);
        assert_eq!(col.longest_event_ns(), 3_000);
    }

    /// A client descheduled between its event's end and its recording, past
    /// the collection of that interval: counted once, in the next interval,
    /// and reported as late.
    #[test]
    fn an_event_recorded_after_its_interval_was_collected_counts_in_the_next() {
        let g = grid();
        let c = Arc::new(ClientStats::default());
        let mut col = Collector::new(vec![c.clone()]);
        c.mark_event_start();
        c.record_event_at(&g, 10 * S + 1, 10, None);
        assert_eq!(collect(&mut col, &g, 11 * S).get(Counter::Event), 1);
        c.mark_event_start();
        c.record_event_at(&g, 11 * S - 1, 20, None);
        c.mark_event_start();
        c.record_event_at(&g, 11 * S + 1, 30, None);
        let p = collect(&mut col, &g, 12 * S);
        assert_eq!((p.get(Counter::Event), p.latency.count), (2, 2));
        assert_eq!(col.late_events(), 1);
        assert_eq!(col.cumulative().get(Counter::Event), 3);
    }

    /// A client counts as running at every instant before its loop ended,
    /// whenever that is asked.
    #[test]
    fn a_client_runs_until_it_has_finished() {
        let c = ClientStats::with_room();
        assert!(c.running_at(0) && c.running_at(u64::MAX));
        let before = crate::clock::now_ns();
        c.set_finished();
        assert!(c.running_at(before.saturating_sub(1)));
        assert!(!c.running_at(crate::clock::now_ns()));
    }

    /// A client that holds its lock when a line is due (preempted while
    /// recording an event, on an overloaded host): the line waits for it,
    /// and counts its events in their own interval.
    #[test]
    fn a_line_waits_for_a_client_holding_its_lock() {
        let g = grid();
        let (free, stuck) = (Arc::new(ClientStats::default()), Arc::new(ClientStats::default()));
        let mut col = Collector::new(vec![stuck.clone(), free.clone()]);
        for c in [&free, &stuck] {
            for j in 1..=3 {
                c.mark_event_start();
                c.record_event_at(&g, 10 * S + j, 1_000, None);
            }
        }
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = {
            let stuck = stuck.clone();
            std::thread::spawn(move || {
                let _g = stuck.periods();
                held_tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(50));
            })
        };
        held_rx.recv().unwrap();
        let started = std::time::Instant::now();
        let line = collect(&mut col, &g, 11 * S);
        assert!(started.elapsed() >= std::time::Duration::from_millis(40), "did not wait: {:?}", started.elapsed());
        holder.join().unwrap();
        assert_eq!((line.get(Counter::Event), line.latency.count), (6, 6));
        assert_eq!(col.fairness().iter().map(|f| f.events).collect::<Vec<_>>(), vec![3, 3]);
    }

    /// A client that finishes its event while the collector holds its lock
    /// for a boundary that has passed (on an overloaded host: descheduled
    /// between the event's end and its recording, for seconds): the event
    /// ends when it is recorded, after the collection, so it counts in the
    /// next interval as its own, never as a late one. Reading the clock
    /// before the lock counted it late (this test failed so).
    #[test]
    fn an_event_recorded_after_a_collection_ends_after_it() {
        let t0 = crate::clock::now_ns();
        let ms = 1_000_000;
        let g = Arc::new(Grid::new(t0, t0, 20 * ms, Vec::new()));
        let c = Arc::new(ClientStats::default());
        let mut col = Collector::new(vec![c.clone()]);
        let guard = c.periods();
        // The client ends its event in the first interval and waits for
        // the lock.
        let recorder = {
            let (c, g) = (c.clone(), g.clone());
            std::thread::spawn(move || {
                c.mark_event_start();
                c.record_event(&g, t0, None);
            })
        };
        // The collector takes the first boundary once it has passed.
        while crate::clock::now_ns() < t0 + 25 * ms {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut first = Period::default();
        let mut guard = guard;
        c.take(&mut guard, &g, t0 + 20 * ms, &mut first, &mut Share::default());
        drop(guard);
        recorder.join().unwrap();
        assert_eq!(first.get(Counter::Event), 0);
        let second = collect(&mut col, &g, u64::MAX);
        assert_eq!((second.get(Counter::Event), second.latency.count), (1, 1));
        assert!(second.latency.max_ns >= 25 * ms, "latency includes the wait: {}", second.latency.max_ns);
        assert_eq!(col.late_events(), 0);
    }

    /// More events in one interval than a client keeps as values: folded
    /// into its histogram, every figure still exact.
    #[test]
    fn many_events_per_interval_fold_into_a_histogram() {
        let g = grid();
        let c = Arc::new(ClientStats::default());
        let mut col = Collector::new(vec![c.clone()]);
        let n = RAW_MAX as u64 * 3 + 7;
        for i in 1..=n {
            c.mark_event_start();
            c.record_event_at(&g, 10 * S + i, i * 1_000, None);
        }
        assert!(c.periods().cur.latency.folded.histogram().is_some());
        let p = collect(&mut col, &g, 11 * S);
        assert_eq!((p.get(Counter::Event), p.latency.count), (n, n));
        assert_eq!((p.latency.min_ns, p.latency.max_ns), (1_000, n * 1_000));
        assert_eq!(p.latency.sum_ns, (n * (n + 1) / 2 * 1_000) as u128);
        let f = col.fairness()[0];
        assert_eq!((f.events, f.min_s, f.max_s), (n, Some(1_000.0 / 1e9), Some((n * 1_000) as f64 / 1e9)));
    }

    /// Clients record (on the real clock, at 1 ms ticks) while the collector
    /// collects and resets: every period's event count equals its number of
    /// latencies, each period holds only events that ended in it or late
    /// ones, and the figures since the last reset equal the clients' shares.
    #[test]
    fn collecting_and_resetting_never_split_an_event() {
        let t0 = crate::clock::now_ns();
        let ms = 1_000_000;
        let g = Arc::new(Grid::new(t0, t0, ms, Vec::new()));
        let clients: Vec<_> = (0..3).map(|_| Arc::new(ClientStats::default())).collect();
        let mut col = Collector::new(clients.clone());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let recorders: Vec<_> = clients
            .iter()
            .map(|c| {
                let (c, stop, g) = (c.clone(), stop.clone(), g.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        c.inc(Counter::Read);
                        c.mark_event_start();
                        c.record_event_at(&g, crate::clock::now_ns(), 1_000 + n % 1_000, Some(500));
                        n += 1;
                    }
                })
            })
            .collect();
        let mut b = t0;
        let mut collected = 0;
        let mut total = 0;
        while collected < 300 {
            b = g.next_after(b);
            while crate::clock::now_ns() < b {
                std::hint::spin_loop();
            }
            if collected % 3 == 0 {
                col.reset();
            }
            let p = collect(&mut col, &g, b);
            assert_eq!(p.get(Counter::Event), p.latency.count, "period {collected}");
            assert_eq!(p.latency.count, p.service.count, "period {collected}");
            total += p.get(Counter::Event);
            collected += 1;
        }
        stop.store(true, Ordering::Relaxed);
        for r in recorders {
            r.join().unwrap();
        }
        total += collect(&mut col, &g, u64::MAX).get(Counter::Event);
        let cum = col.cumulative();
        let shares: u64 = col.fairness().iter().map(|f| f.events).sum();
        assert!(cum.get(Counter::Event) > 0, "no events");
        assert_eq!(cum.get(Counter::Event), cum.latency.count);
        assert_eq!(cum.latency.count, shares);
        let recorded: u64 = clients.iter().map(|c| c.counts()[Counter::Event as usize]).sum();
        assert_eq!(total, recorded, "every event collected once");
    }
}
