//! A shard's mergeable result (`--shard-result`): one JSON document with
//! everything the merged report needs, losslessly — counters, the latency
//! histograms bucket by bucket with their exact count/min/max/sum, the
//! interval series keyed by tick index, per-client shares — and what the
//! per-shard table shows (host, thread ids, start, clock offset).
//! docs/scale-out.md describes the fields; `format_version` changes when a
//! field's meaning does.

use crate::collector::{ClientFairness, Counter, Counts, LatencyAcc, Period, HIST_MAX_US, NCOUNTERS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of this document's format.
pub const FORMAT_VERSION: u32 = 1;

/// What `format` says a document is.
pub const FORMAT: &str = "dbbench-shard-result";

/// One shard's result. `B` holds a histogram's base64 buckets in the
/// interval series: a `String` (written, and kept), or [`Text`] borrowed
/// from the document while `dbbench merge` adds the series up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShardResult<B = String> {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// dbbench's version.
    pub version: String,
    /// I of `--shard=I/N`.
    pub shard_index: u32,
    /// N of `--shard=I/N`.
    pub shard_count: u32,
    /// The run every shard must share.
    pub run: RunParams,
    /// Global id of the shard's first client.
    pub first_thread: u32,
    /// Clients the shard ran.
    pub threads: u32,
    /// The host the shard ran on.
    pub host: String,
    /// When the shard was ready and began measuring.
    pub start: StartInfo,
    /// The offset of the shard's clock from the database server's.
    pub clock_offset: Option<ClockOffset>,
    /// Why the clock offset is unknown, when it is.
    pub clock_offset_missing: Option<String>,
    /// A database driver was used (the SQL block is printed).
    pub sql: bool,
    /// The first connection's server version.
    pub server_version: Option<String>,
    /// Set when the shard's run did not finish normally.
    pub aborted: Option<String>,
    /// Seconds from the start of measurement to the shard's end.
    pub total_time_s: f64,
    /// Everything measured (after the warmup).
    pub cumulative: PeriodData,
    /// Per client, in global thread id order.
    pub fairness: Vec<FairnessData>,
    /// Interval figures by tick index (1 = the first `--report-interval`
    /// after the start of measurement).
    pub intervals: Vec<TickData<B>>,
    /// Interval figures during the warmup (JSON reports only); tick 0 ends
    /// at the end of the warmup, -1 one interval before, and so on.
    pub warmup_intervals: Vec<TickData<B>>,
    /// Under `--rate`: the shard's arrivals not started and dropped.
    pub rate: Option<RateData>,
    /// Events recorded after their interval was collected (see `stats`).
    pub late_events: u64,
}

/// The options every shard of one run shares.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunParams {
    /// The test (built-in name or script path).
    pub test: String,
    /// The whole run's `--threads`, `--events` (0 = none) and `--rate` (0 = none).
    pub threads: u32,
    /// See `threads`.
    pub events: u64,
    /// See `threads`.
    pub rate: f64,
    /// `--report-interval`, seconds (0 = none).
    pub report_interval_s: f64,
    /// `--percentile` values.
    pub percentiles: Vec<f64>,
    /// `--histogram`.
    pub histogram: bool,
    /// `--start-at`, unix epoch ms.
    pub start_at_ms: Option<i64>,
    /// Every option as the run's JSON report has them (passwords hidden),
    /// without the shard's own (`shard`, `shard_result`).
    pub options: BTreeMap<String, String>,
}

/// Options that differ between the shards of one run by design, or only
/// change how a shard prints: not compared by `merge`.
pub const PER_SHARD_OPTIONS: &[&str] =
    &["shard", "shard_result", "format", "verbosity", "debug", "metrics_listen", "db_debug", "start_at_max_wait"];

/// When the shard was ready and when it began measuring.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StartInfo {
    /// Every client connected and ran `thread_init`: unix epoch ms, this
    /// host's wall clock.
    pub ready_unix_ms: f64,
    /// The clients were released (the warmup, or the measurement, began).
    pub start_unix_ms: f64,
    /// Ready only after `--start-at` had passed: started at once, late.
    pub late: bool,
}

/// A clock offset: `offset_ms` added to this host's wall clock gives the
/// reference's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClockOffset {
    /// What the clock was compared with.
    pub against: String,
    /// Reference clock − this host's clock, ms.
    pub offset_ms: f64,
    /// The round trip of the reading used (the offset's uncertainty is half of it).
    pub rtt_ms: f64,
}

/// The names of [`CountsData`]'s fields in the engine's counter order
/// (what [`CountsData::to_counts`] gives), for errors.
pub const COUNTER_FIELDS: [&str; NCOUNTERS] = {
    let mut names = [""; NCOUNTERS];
    names[Counter::Event as usize] = "events";
    names[Counter::Read as usize] = "reads";
    names[Counter::Write as usize] = "writes";
    names[Counter::Other as usize] = "other";
    names[Counter::Error as usize] = "errors";
    names[Counter::Reconnect as usize] = "reconnects";
    names[Counter::Restart as usize] = "restarts";
    names
};

/// Counters, named.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct CountsData {
    /// Events (transactions).
    pub events: u64,
    /// Read statements.
    pub reads: u64,
    /// Write statements.
    pub writes: u64,
    /// Other statements.
    pub other: u64,
    /// Ignored errors.
    pub errors: u64,
    /// Reconnects.
    pub reconnects: u64,
    /// Restarted events.
    pub restarts: u64,
}

impl CountsData {
    fn from_counts(c: &Counts) -> CountsData {
        let g = |k: Counter| c[k as usize];
        CountsData {
            events: g(Counter::Event),
            reads: g(Counter::Read),
            writes: g(Counter::Write),
            other: g(Counter::Other),
            errors: g(Counter::Error),
            reconnects: g(Counter::Reconnect),
            restarts: g(Counter::Restart),
        }
    }

    /// The counters in the engine's array.
    pub fn to_counts(self) -> Counts {
        let mut c = [0u64; NCOUNTERS];
        c[Counter::Event as usize] = self.events;
        c[Counter::Read as usize] = self.reads;
        c[Counter::Write as usize] = self.writes;
        c[Counter::Other as usize] = self.other;
        c[Counter::Error as usize] = self.errors;
        c[Counter::Reconnect as usize] = self.reconnects;
        c[Counter::Restart as usize] = self.restarts;
        c
    }
}

/// A latency accumulator, losslessly: the histogram's buckets and the
/// exact count, min, max and sum.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct HistData<B = String> {
    /// Values recorded.
    pub count: u64,
    /// Exact minimum and maximum, ns (0 when empty).
    pub min_ns: u64,
    /// See `min_ns`.
    pub max_ns: u64,
    /// Exact sum, ns.
    pub sum_ns: u128,
    /// Values above the histogram's 1 h (clamped into its top bucket).
    pub overflow: u64,
    /// The non-empty buckets (µs, 1 µs to 1 h, 3 significant digits), as
    /// base64 of unsigned LEB128 pairs: the bucket's highest value minus
    /// the previous pair's, then its count.
    pub buckets: B,
}

/// A string in a document read with `serde_json::from_str`, borrowed from
/// the document unless it has escapes (JSON may spell `/` as `\/`): the
/// base64 of an interval's buckets, read without a copy of its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Text<'a>(pub std::borrow::Cow<'a, str>);

impl AsRef<str> for Text<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Text<'de>, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(v.to_owned().into()))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
        }
        d.deserialize_str(Visitor)
    }
}

impl HistData {
    /// The accumulator's data.
    pub fn of(acc: &LatencyAcc) -> HistData {
        use base64::Engine;
        let mut bytes = Vec::new();
        let mut prev = 0u64;
        for (v, c) in acc.buckets() {
            leb128(&mut bytes, v - prev);
            leb128(&mut bytes, c);
            prev = v;
        }
        HistData {
            count: acc.count,
            min_ns: if acc.count > 0 { acc.min_ns } else { 0 },
            max_ns: acc.max_ns,
            sum_ns: acc.sum_ns,
            overflow: acc.overflow,
            buckets: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }
}

impl<B: AsRef<str>> HistData<B> {
    /// The non-empty buckets as (highest value µs, count) in ascending
    /// order, appended to `out` (`bytes` is a buffer the caller reuses):
    /// what [`HistData::add_to`] adds to a histogram, and what the merge's
    /// interval series keeps without one ([`super::series`]). Checks what
    /// [`LatencyAcc::add_buckets`] checks, with its errors.
    pub fn decode(&self, bytes: &mut Vec<u8>, out: &mut Vec<(u64, u64)>) -> Result<(), String> {
        self.decode_each(bytes, |v, c| out.push((v, c)))
    }

    /// The non-empty buckets as (highest value µs, count), in ascending
    /// order, handed to `each` as they are decoded (the merge's interval
    /// series adds them where they go without a list of their own); then
    /// what [`HistData::decode`] checks, with its errors. On an error,
    /// `each` has seen the buckets before it.
    #[inline]
    pub fn decode_each(&self, bytes: &mut Vec<u8>, mut each: impl FnMut(u64, u64)) -> Result<(), String> {
        bytes.clear();
        base64_decode(self.buckets.as_ref(), bytes).map_err(|e| format!("latency buckets are not base64: {e}"))?;
        // Locals, not an iterator's fields: this loop is most of a merge's
        // time (155 million buckets for 64 shards of an hour).
        let (mut pos, mut prev, mut values, mut truncated) = (0, 0u64, 0u64, false);
        let too_many = || format!("the latency buckets hold more than {} values", u64::MAX);
        while pos < bytes.len() {
            // Most pairs are two one-byte numbers: four such pairs are read
            // as one word when their buckets are plainly in range (any
            // doubt goes through the pair-by-pair path below, which says
            // what is wrong exactly as before).
            if let Some(w) = bytes.get(pos..pos + 8) {
                let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
                if w & 0x8080_8080_8080_8080 == 0 {
                    let b = w.to_le_bytes();
                    let v1 = prev + u64::from(b[0]);
                    let v2 = v1 + u64::from(b[2]);
                    let v3 = v2 + u64::from(b[4]);
                    let v4 = v3 + u64::from(b[6]);
                    let (c1, c2, c3, c4) = (u64::from(b[1]), u64::from(b[3]), u64::from(b[5]), u64::from(b[7]));
                    if v1 != 0 && v4 <= HIST_MAX_US * 2 {
                        for (v, c) in [(v1, c1), (v2, c2), (v3, c3), (v4, c4)] {
                            if c > 0 {
                                each(v, c);
                            }
                        }
                        values = values.checked_add(c1 + c2 + c3 + c4).ok_or_else(too_many)?;
                        prev = v4;
                        pos += 8;
                        continue;
                    }
                }
            }
            let (d, c) = match bytes.get(pos..pos + 2) {
                Some(&[d, c]) if (d | c) & 0x80 == 0 => {
                    pos += 2;
                    (u64::from(d), u64::from(c))
                }
                _ => match (read_leb128(bytes, &mut pos), read_leb128(bytes, &mut pos)) {
                    (Some(d), Some(c)) => (d, c),
                    _ => {
                        truncated = true;
                        break;
                    }
                },
            };
            prev = prev.saturating_add(d);
            if prev == 0 || prev > HIST_MAX_US * 2 {
                return Err(format!("a latency bucket of {prev} µs is outside the histogram's range"));
            }
            if c > 0 {
                values = values.checked_add(c).ok_or_else(too_many)?;
                each(prev, c);
            }
        }
        if values != self.count {
            return Err(format!("the latency buckets hold {values} values, the count says {}", self.count));
        }
        if truncated {
            return Err("latency buckets end in the middle of a number".into());
        }
        Ok(())
    }

    /// Adds these figures into `acc` (the same histogram, exactly); on an
    /// error `acc` is left as it was.
    pub fn add_to(&self, acc: &mut LatencyAcc) -> Result<(), String> {
        let mut buckets = Vec::new();
        self.decode(&mut Vec::new(), &mut buckets)?;
        acc.add_buckets(buckets.into_iter(), self.count, self.min_ns, self.max_ns, self.sum_ns, self.overflow)
    }
}

/// The standard base64 alphabet's 6-bit values, one table per place in a
/// group of four characters (shifted to it in the group's 24 bits); bit 24
/// marks a byte outside the alphabet (padding included).
static BASE64_PLACES: [[u32; 256]; 4] = [base64_place(18), base64_place(12), base64_place(6), base64_place(0)];

const fn base64_place(shift: u32) -> [u32; 256] {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut t = [1u32 << 24; 256];
    let mut i = 0;
    while i < 64 {
        t[ALPHABET[i] as usize] = (i as u32) << shift;
        i += 1;
    }
    t
}

/// `text` as standard base64 (padded) decoded onto `out`, as the base64
/// crate's `STANDARD.decode_vec` decodes it, at twice its speed: every
/// group of four characters but the last through one lookup per character
/// (a merge decodes 490 MB of it). The last group, which may be padded,
/// and any text that is not plain goes through the crate, so the errors
/// are its own.
fn base64_decode(text: &str, out: &mut Vec<u8>) -> Result<(), base64::DecodeError> {
    use base64::Engine;
    let engine = &base64::engine::general_purpose::STANDARD;
    let t = text.as_bytes();
    let start = out.len();
    if !t.is_empty() && t.len().is_multiple_of(4) {
        let (body, last) = t.split_at(t.len() - 4);
        out.resize(start + body.len() / 4 * 3, 0);
        let mut outside = 0u32;
        for (q, o) in body.chunks_exact(4).zip(out[start..].chunks_exact_mut(3)) {
            let [p0, p1, p2, p3] = &BASE64_PLACES;
            let v = p0[usize::from(q[0])] | p1[usize::from(q[1])] | p2[usize::from(q[2])] | p3[usize::from(q[3])];
            outside |= v;
            o.copy_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8]);
        }
        let mut tail = [0u8; 8];
        if outside >> 24 == 0 {
            if let Ok(n) = engine.decode_slice(last, &mut tail) {
                out.extend_from_slice(&tail[..n]);
                return Ok(());
            }
        }
        out.truncate(start);
    }
    engine.decode_vec(text, out)
}

fn leb128(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

#[inline]
fn read_leb128(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    // Most deltas and counts fit in one byte.
    let b = *bytes.get(*pos)?;
    if b & 0x80 == 0 {
        *pos += 1;
        return Some(u64::from(b));
    }
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A period's counters and latencies.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PeriodData<B = String> {
    /// Counters.
    pub counts: CountsData,
    /// Event latency.
    pub latency: HistData<B>,
    /// Service time (empty unless `--rate`).
    pub service: HistData<B>,
}

impl PeriodData {
    /// The period's data.
    pub fn of(p: &Period) -> PeriodData {
        PeriodData {
            counts: CountsData::from_counts(&p.counts),
            latency: HistData::of(&p.latency),
            service: HistData::of(&p.service),
        }
    }
}

impl<B: AsRef<str>> PeriodData<B> {
    /// Adds these figures into `p`.
    /// Adds these figures into `p`; a sum beyond 64 bits is an error
    /// (and `p` is then left partly added: the error ends the merge).
    pub fn add_to(&self, p: &mut Period) -> Result<(), String> {
        let mut sums = p.counts;
        for ((t, c), name) in sums.iter_mut().zip(self.counts.to_counts()).zip(COUNTER_FIELDS) {
            *t = t.checked_add(c).ok_or_else(|| format!("counts.{name}: the sum over the shards overflows 64 bits"))?;
        }
        p.counts = sums;
        self.latency.add_to(&mut p.latency).map_err(|e| format!("latency: {e}"))?;
        self.service.add_to(&mut p.service).map_err(|e| format!("service: {e}"))
    }
}

/// One client's share ("Threads fairness").
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct FairnessData {
    /// Events.
    pub events: u64,
    /// Their total latency, s.
    pub time_s: f64,
    /// Shortest and longest, s.
    pub min_s: Option<f64>,
    /// See `min_s`.
    pub max_s: Option<f64>,
}

impl From<&ClientFairness> for FairnessData {
    fn from(f: &ClientFairness) -> FairnessData {
        FairnessData { events: f.events, time_s: f.time_s, min_s: f.min_s, max_s: f.max_s }
    }
}

impl From<&FairnessData> for ClientFairness {
    fn from(f: &FairnessData) -> ClientFairness {
        ClientFairness { events: f.events, time_s: f.time_s, min_s: f.min_s, max_s: f.max_s }
    }
}

/// One interval of one shard.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TickData<B = String> {
    /// Tick index (see [`ShardResult::intervals`]).
    pub tick: i64,
    /// The row's time: seconds since the start of measurement.
    pub time_s: f64,
    /// The interval's length, s.
    pub interval_s: f64,
    /// Clients running at the tick.
    pub threads: u32,
    /// Under `--rate`: queue length and clients in an event at the tick.
    pub queue: Option<(u64, u64)>,
    /// How late the shard printed its line, ms.
    pub late_ms: Option<f64>,
    /// The interval's figures.
    pub period: PeriodData<B>,
}

/// A shard's `--rate` outcome (its target is its share of the run's).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RateData {
    /// The shard's share of `--rate`.
    pub target: f64,
    /// Arrivals still queued at the end.
    pub not_started: u64,
    /// Arrivals dropped (backlog full).
    pub dropped: u64,
}

impl ShardResult {
    /// The document as one line of compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a shard result serialises")
    }
}

impl<'a, B: Deserialize<'a>> ShardResult<B> {
    /// Reads the results in `text`: the JSON document itself, or a log
    /// with `dbbench-shard-result: {...}` lines, each one a result (a log
    /// of several pods' output holds several). `name` names the input in
    /// errors; a log's results are named by their line when it holds more
    /// than one.
    pub fn parse_all(text: &'a str, name: &str) -> Result<Vec<(String, ShardResult<B>)>, String> {
        if text.trim_start().starts_with('{') {
            return Ok(vec![(name.to_string(), ShardResult::parse_document(text, name)?)]);
        }
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| l.trim_end().strip_prefix(super::LINE_PREFIX).map(|json| (i + 1, json)))
            .collect();
        if lines.is_empty() {
            return Err(format!(
                "{name}: not a shard result (neither a JSON document nor a log with a '{}' line)",
                super::LINE_PREFIX.trim_end()
            ));
        }
        let several = lines.len() > 1;
        lines
            .into_iter()
            .map(|(n, json)| {
                let name = if several { format!("{name} (line {n})") } else { name.to_string() };
                let r = ShardResult::parse_document(json, &name)?;
                Ok((name, r))
            })
            .collect()
    }

    /// Reads one result from its JSON document.
    fn parse_document(json: &'a str, name: &str) -> Result<ShardResult<B>, String> {
        // Straight into the type (through a serde_json::Value, 64 results
        // of an hour's intervals took seconds of allocation); only when
        // that fails, or the format is not ours, a second pass over the
        // format fields says why.
        let damaged = match serde_json::from_str::<ShardResult<B>>(json) {
            Ok(r) if r.format == FORMAT && r.format_version == FORMAT_VERSION => return Ok(r),
            Ok(_) => None,
            Err(e) => Some(e),
        };
        #[derive(Deserialize)]
        struct Head {
            format: Option<String>,
            format_version: Option<u64>,
        }
        let head: Head = serde_json::from_str(json).map_err(|e| format!("{name}: not a shard result: {e}"))?;
        if head.format.as_deref() != Some(FORMAT) {
            return Err(format!("{name}: not a shard result (no \"format\": \"{FORMAT}\")"));
        }
        match head.format_version {
            Some(n) if n == FORMAT_VERSION as u64 => {}
            other => {
                return Err(format!(
                    "{name}: shard result format version {} — this dbbench ({}) reads version {FORMAT_VERSION}; merge with the dbbench that ran the shards",
                    other.map_or("missing".to_string(), |n| n.to_string()),
                    crate::VERSION
                ))
            }
        }
        // (A document that parsed has a wrong format or version: said above.)
        Err(match damaged {
            Some(e) => format!("{name}: damaged shard result: {e}"),
            None => format!("{name}: not a shard result"),
        })
    }
}

impl<B> ShardResult<B> {
    /// The result without its interval series (once they are added up).
    pub fn without_series(self) -> ShardResult {
        let ShardResult {
            format,
            format_version,
            version,
            shard_index,
            shard_count,
            run,
            first_thread,
            threads,
            host,
            start,
            clock_offset,
            clock_offset_missing,
            sql,
            server_version,
            aborted,
            total_time_s,
            cumulative,
            fairness,
            intervals: _,
            warmup_intervals: _,
            rate,
            late_events,
        } = self;
        ShardResult {
            format,
            format_version,
            version,
            shard_index,
            shard_count,
            run,
            first_thread,
            threads,
            host,
            start,
            clock_offset,
            clock_offset_missing,
            sql,
            server_version,
            aborted,
            total_time_s,
            cumulative,
            fairness,
            intervals: Vec::new(),
            warmup_intervals: Vec::new(),
            rate,
            late_events,
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::shard) use crate::test_rand::Lcg;

    /// Latencies of many shapes: a body, a long tail, outliers beyond the
    /// histogram, single-nanosecond events.
    fn latency(r: &mut Lcg) -> u64 {
        match r.next() % 100 {
            0 => 1 + r.next() % 1000,
            1 => 3_600_000_000_000 + r.next() % 1_000_000_000_000,
            2..=9 => 10_000_000 + r.next() % 2_000_000_000,
            _ => 50_000 + r.next() % 5_000_000,
        }
    }

    /// Random event streams split at random into 1 to 64 shards, each
    /// shard's accumulator through its result document and back, merged:
    /// every percentile, count, min, max, sum and overflow equals the
    /// unsplit accumulator's.
    #[test]
    fn merged_shards_give_the_unsplit_percentiles() {
        let mut r = Lcg(0x5eed);
        for round in 0..40 {
            let shards = 1 + (r.next() % 64) as usize;
            let events = (r.next() % 20_000) as usize;
            let mut whole = LatencyAcc::default();
            let mut parts: Vec<LatencyAcc> = (0..shards).map(|_| LatencyAcc::default()).collect();
            for _ in 0..events {
                let ns = latency(&mut r);
                whole.record(ns);
                parts[(r.next() % shards as u64) as usize].record(ns);
            }
            let mut merged = LatencyAcc::default();
            for p in &parts {
                let doc = serde_json::to_string(&HistData::of(p)).unwrap();
                let back: HistData = serde_json::from_str(&doc).unwrap();
                back.add_to(&mut merged).unwrap();
            }
            assert_eq!(
                (merged.count, merged.min_ns, merged.max_ns, merged.sum_ns, merged.overflow),
                (whole.count, whole.min_ns, whole.max_ns, whole.sum_ns, whole.overflow),
                "round {round}"
            );
            for p in [0.1, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0] {
                assert_eq!(merged.percentile_ms(p), whole.percentile_ms(p), "round {round} p{p}");
            }
            assert_eq!(merged.buckets(), whole.buckets(), "round {round}");
        }
    }

    /// The bucket decoder as it was before its four-pairs-at-a-time path:
    /// one pair at a time.
    fn decode_pairwise(h: &HistData) -> Result<Vec<(u64, u64)>, String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&h.buckets)
            .map_err(|e| format!("latency buckets are not base64: {e}"))?;
        let (mut pos, mut prev, mut values, mut out) = (0, 0u64, 0u64, Vec::new());
        while pos < bytes.len() {
            let (Some(d), Some(c)) = (read_leb128(&bytes, &mut pos), read_leb128(&bytes, &mut pos)) else {
                if values != h.count {
                    return Err(format!("the latency buckets hold {values} values, the count says {}", h.count));
                }
                return Err("latency buckets end in the middle of a number".into());
            };
            prev = prev.saturating_add(d);
            if prev == 0 || prev > HIST_MAX_US * 2 {
                return Err(format!("a latency bucket of {prev} µs is outside the histogram's range"));
            }
            if c > 0 {
                values = values.saturating_add(c);
                out.push((prev, c));
            }
        }
        if values != h.count {
            return Err(format!("the latency buckets hold {values} values, the count says {}", h.count));
        }
        Ok(out)
    }

    /// Random accumulators through their documents decode to their own
    /// buckets; random LEB128 streams (one- and many-byte numbers, zero
    /// deltas and counts, buckets beyond the range, streams cut short)
    /// decode as the pair-by-pair decoder decodes them, errors included.
    #[test]
    fn buckets_decode_as_encoded_and_as_pair_by_pair() {
        use base64::Engine;
        let mut r = Lcg(0xdec0de);
        for round in 0..300 {
            let mut acc = LatencyAcc::default();
            for _ in 0..r.next() % 5000 {
                acc.record(latency(&mut r));
            }
            let h = HistData::of(&acc);
            let mut got = Vec::new();
            h.decode(&mut Vec::new(), &mut got).unwrap();
            assert_eq!(got, acc.buckets(), "round {round}");
        }
        let mut bytes = Vec::new();
        for round in 0..20_000 {
            bytes.clear();
            let mut total = 0u64;
            for _ in 0..r.next() % 40 {
                let (d, c) = match r.next() % 20 {
                    0 => (0, r.next() % 3),
                    1 => (r.next() % 100_000, 1 + r.next() % 100_000),
                    2 => (HIST_MAX_US + r.next() % 10, 1),
                    3 => (1 + r.next() % 5, 0),
                    _ => (1 + r.next() % 127, 1 + r.next() % 127),
                };
                leb128(&mut bytes, d);
                leb128(&mut bytes, c);
                total += c;
            }
            match r.next() % 10 {
                0 => bytes.push(0x80 | (r.next() % 128) as u8),
                1 => total += 1,
                _ => {}
            }
            let h = HistData {
                count: total,
                buckets: base64::engine::general_purpose::STANDARD.encode(&bytes),
                ..HistData::default()
            };
            let mut got = Vec::new();
            let got = h.decode(&mut Vec::new(), &mut got).map(|()| got);
            assert_eq!(got, decode_pairwise(&h), "round {round}: {bytes:?}");
        }
    }

    /// The base64 decoder gives the crate's bytes, or its error, for
    /// random texts: valid ones of every length and padding, and ones
    /// with a character replaced, added or removed.
    #[test]
    fn base64_decodes_as_the_crate_does() {
        use base64::Engine;
        let engine = &base64::engine::general_purpose::STANDARD;
        let mut r = Lcg(0xba5e64);
        let odd = b"=!-_ \n\xc3AZaz09+/";
        for round in 0..50_000 {
            let raw: Vec<u8> = (0..r.next() % 40).map(|_| r.next() as u8).collect();
            let mut text = engine.encode(&raw).into_bytes();
            match r.next() % 4 {
                0 if !text.is_empty() => {
                    let i = (r.next() % text.len() as u64) as usize;
                    text[i] = odd[(r.next() % odd.len() as u64) as usize];
                }
                1 => text.insert((r.next() % (text.len() as u64 + 1)) as usize, b'='),
                2 if !text.is_empty() => {
                    text.remove((r.next() % text.len() as u64) as usize);
                }
                _ => {}
            }
            let Ok(text) = String::from_utf8(text) else { continue };
            let mut got = vec![7u8];
            let got = base64_decode(&text, &mut got).map(|()| got);
            let want = engine.decode(&text).map(|mut v| {
                v.insert(0, 7u8);
                v
            });
            assert_eq!(got, want, "round {round}: {text:?}");
        }
    }

    #[test]
    fn damaged_buckets_are_refused() {
        let mut a = LatencyAcc::default();
        a.record(5_000_000);
        let mut h = HistData::of(&a);
        h.count = 2;
        assert!(h.add_to(&mut LatencyAcc::default()).unwrap_err().contains("hold 1 values"));
        h.buckets = "!!".into();
        assert!(h.add_to(&mut LatencyAcc::default()).unwrap_err().contains("base64"));
        h.buckets = "gA==".into(); // one byte with the continuation bit
        assert!(h.add_to(&mut LatencyAcc::default()).is_err());
    }
}
