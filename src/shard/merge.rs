//! `dbbench merge FILE...`: the shards' results added up into the report
//! one process with all the clients would have printed — counters summed,
//! histograms merged bucket by bucket (percentiles exact, never averaged),
//! intervals aligned by tick index — in the engine's own layouts
//! (`crate::output`), with a per-shard table beside it.

use super::check;
use super::result::{ShardResult, Text, PER_SHARD_OPTIONS};
use super::series::{Scratch, Series};
use crate::collector::{ClientFairness, Counter, Period};
use crate::exit::Exit;
use crate::options::{OptKind, OptionSpec, Options};
use crate::output::{self, Format, IntervalRow, RateSummary, Summary};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Merge the results of a sharded run (`run --shard=I/N --shard-result=...`)
/// into one report: the report one process running all the shards' clients
/// would have printed, with a table of the shards (host, thread ids, events,
/// start skew, clock offset, status).
#[derive(clap::Parser, Debug)]
#[command(name = "merge")]
pub struct Args {
    /// Shard results: JSON documents (--shard-result=PATH) or saved logs
    /// holding a `dbbench-shard-result:` line (--shard-result=-, e.g. kubectl logs)
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The engine's JSON document (--format=json) with a "shards" table
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// The engine's CSV rows (--format=csv), then the shards as CSV
    #[arg(long)]
    csv: bool,
    /// Merge an incomplete set of shards; the report names the missing ones
    #[arg(long)]
    allow_partial: bool,
    /// Refuse an input larger than SIZE (K/M/G suffixes): a shard result
    /// is about 2 KB per interval, a day of 1-second intervals ~200 MB
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_file_size)]
    max_file_size: u64,
}

/// `--max-file-size`: a size with an optional K/M/G/T suffix, above 0.
fn parse_file_size(v: &str) -> Result<u64, String> {
    crate::options::parse_size(v)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("'{v}' is not a size above 0 (e.g. 256M or 2G)"))
}

/// One row of the per-shard table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ShardRow {
    /// I.
    pub shard: u32,
    /// Host name (None: missing).
    pub host: Option<String>,
    /// Global ids of its clients, first..=last.
    pub first_thread: u32,
    /// Its clients.
    pub threads: u32,
    /// Events and statements it measured.
    pub events: Option<u64>,
    /// See `events`.
    pub queries: Option<u64>,
    /// Its start after the earliest shard's, ms, on the common clock (see
    /// [`Merged::skew_clock`]).
    pub start_skew_ms: Option<f64>,
    /// Its start after `--start-at`, ms, on its own clock.
    pub after_start_at_ms: Option<f64>,
    /// Its clock's offset from the database server's, ms.
    pub clock_offset_ms: Option<f64>,
    /// ok, late, ended (with the reason), missing.
    pub status: String,
}

/// The shards' results added up.
pub struct Merged {
    /// The test.
    pub test: String,
    /// Every option of the run (from the first shard's result).
    pub options: BTreeMap<String, String>,
    /// N.
    pub count: u32,
    /// A database driver was used.
    pub sql: bool,
    /// Clients of the shards merged.
    pub threads: u32,
    /// `--percentile`.
    pub percentiles: Vec<f64>,
    /// `--histogram`.
    pub histogram: bool,
    /// Seconds from the earliest shard's start of measurement to the last one's end.
    pub total_time: f64,
    /// Everything measured.
    pub cumulative: Period,
    /// Per client, in global id order.
    pub fairness: Vec<ClientFairness>,
    /// Interval rows by tick.
    pub intervals: Vec<IntervalRow>,
    /// Warmup rows by tick.
    pub warmup_intervals: Vec<IntervalRow>,
    /// `--rate` outcome.
    pub rate: Option<RateSummary>,
    /// First shard's server version.
    pub server_version: Option<String>,
    /// Why the merged figures are not a whole, normal run.
    pub aborted: Option<String>,
    /// The per-shard table.
    pub shards: Vec<ShardRow>,
    /// Indices of missing shards.
    pub missing: Vec<u32>,
    /// Latest start − earliest start over the shards, ms.
    pub start_skew_ms: Option<f64>,
    /// The clock start skews are measured on.
    pub skew_clock: String,
}

/// Entry point of `dbbench merge`.
pub fn cli_main(args: &[String]) -> ExitCode {
    let a = match crate::subcommand::parse::<Args>("merge", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    if a.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return fail("- (standard input) is given more than once: it can be read once");
    }
    let (results, series) = match read_all(&a.files, a.max_file_size) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let merged = match merge(&results, series, a.allow_partial) {
        Ok(m) => m,
        Err(e) => return fail(&e),
    };
    let format = if a.json {
        Format::Json
    } else if a.csv {
        Format::Csv
    } else {
        Format::Text
    };
    print(&merged, format);
    if merged.aborted.is_some() {
        Exit::Partial.into()
    } else {
        Exit::Ok.into()
    }
}

/// Interval series already added up (see [`series`](super::series)): the
/// shards' own series and their warmup series.
struct ReadSeries {
    intervals: Series,
    warmup: Series,
    /// Per shard index: how late its latest-printed interval line came
    /// out at most, ms (the evidence of a frozen shard, see [`freeze_of`]).
    longest_late_ms: BTreeMap<u32, f64>,
}

impl ReadSeries {
    fn new() -> ReadSeries {
        ReadSeries { intervals: Series::default(), warmup: Series::default(), longest_late_ms: BTreeMap::new() }
    }

    fn absorb(&mut self, other: ReadSeries, scratch: &mut Scratch) {
        self.intervals.absorb(other.intervals, scratch);
        self.warmup.absorb(other.warmup, scratch);
        for (shard, late) in other.longest_late_ms {
            let l = self.longest_late_ms.entry(shard).or_insert(0.0);
            *l = l.max(late);
        }
    }
}

/// An interval line that came out more than this late (ms) shows that
/// the shard's process did not run: its reporting thread prints each line
/// within milliseconds of its tick, seconds late only when the process
/// was stopped (SIGSTOP, a frozen VM or container) or starved of CPU.
pub const FROZEN_LATE_MS: f64 = 2000.0;

/// Beyond the stall guard's own wait after `--time` (the longer of 5 s and
/// twice the longest event), the time a shard may take to end: more means
/// it did not run for a while.
pub const OVERRUN_SLACK_S: f64 = 1.0;

/// Why shard `r`'s figures are not those of a shard that ran throughout,
/// from its interval lines' lateness (`longest_late_ms`) and its measured
/// time against `--time`; None when nothing says so.
fn freeze_of(r: &ShardResult, longest_late_ms: f64) -> Option<String> {
    if longest_late_ms > FROZEN_LATE_MS {
        return Some(format!(
            "frozen: its interval lines came out up to {:.1} s late, so its process did not run for that long (stopped, or starved of CPU)",
            longest_late_ms / 1e3
        ));
    }
    let time: f64 = r.run.options.get("time").and_then(|t| t.trim().parse().ok()).unwrap_or(0.0);
    let longest_event_s = r.cumulative.latency.max_ns as f64 / 1e9;
    let allowed = time + (2.0 * longest_event_s).max(5.0) + OVERRUN_SLACK_S;
    (time > 0.0 && r.total_time_s > allowed).then(|| {
        format!(
            "overran: it measured {:.1} s of --time={time}, more than the {allowed:.1} s a shard takes to end (its process did not run for a while)",
            r.total_time_s
        )
    })
}

/// Reads and checks the result files, on as many threads as there are
/// CPUs, adding each one's interval series up as it is read (the buckets'
/// base64 is decoded where it lies in the document) and dropping them: 64
/// results of an hour's 1-second intervals are 490 MB of JSON, which held
/// at once took 480 MiB and most of the merge's time in page faults.
/// (Holding 4 parsed results per reader, to add them tick by tick across
/// the four, was measured: 50 MiB more for no CPU time, docs/performance.md.)
/// A log with several result lines gives several results. Every result is
/// checked ([`check::result`]) before it is added. Errors name the first
/// bad file in the order given.
fn read_all(files: &[PathBuf], max_size: u64) -> Result<(Vec<(String, ShardResult)>, ReadSeries), String> {
    let readers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    type Read = (usize, Result<Vec<(String, ShardResult)>, String>);
    let (mut read, mut parts): (Vec<Read>, Vec<ReadSeries>) = (Vec::new(), Vec::new());
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..readers)
            .map(|_| {
                scope.spawn(|| {
                    let mut text = String::new();
                    let mut scratch = Scratch::default();
                    let mut mine = ReadSeries::new();
                    let mut out: Vec<Read> = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(f) = files.get(i) else { break };
                        let name = f.display().to_string();
                        if let Err(e) = read_input(f, max_size, &mut text) {
                            out.push((i, Err(format!("{name}: {e}"))));
                            continue;
                        }
                        out.push((i, take_results(&text, &name, &mut mine, &mut scratch)));
                    }
                    (out, mine)
                })
            })
            .collect();
        for w in workers {
            let (out, mine) = w.join().expect("a merge reader does not panic");
            read.extend(out);
            parts.push(mine);
        }
    });
    read.sort_by_key(|(i, _)| *i);
    let mut results = Vec::new();
    for (_, r) in read {
        results.extend(r?);
    }
    let mut scratch = Scratch::default();
    let mut all = ReadSeries::new();
    for p in parts {
        all.absorb(p, &mut scratch);
    }
    Ok((results, all))
}

/// The results in one input's `text`, each checked, their interval
/// series added to `series` (and dropped from the results).
fn take_results(
    text: &str,
    name: &str,
    series: &mut ReadSeries,
    scratch: &mut Scratch,
) -> Result<Vec<(String, ShardResult)>, String> {
    let all = ShardResult::<Text>::parse_all(text, name)?;
    for (name, r) in &all {
        check::result(r).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(all
        .into_iter()
        .map(|(name, r)| {
            let late = r.intervals.iter().filter_map(|t| t.late_ms).fold(0.0, f64::max);
            let l = series.longest_late_ms.entry(r.shard_index).or_insert(0.0);
            *l = l.max(late);
            series.intervals.add(r.shard_index, &r.intervals, scratch);
            series.warmup.add(r.shard_index, &r.warmup_intervals, scratch);
            (name, r.without_series())
        })
        .collect())
}

/// Reads one input into `text` (cleared first): a regular file, or `-`
/// for standard input, of at most `max_size` bytes. Anything else — a
/// device such as /dev/zero, a FIFO (opened without waiting for a
/// writer), a directory — and anything larger is refused before it is
/// read, so one wrong path cannot fill the host's memory or hang.
fn read_input(path: &std::path::Path, max_size: u64, text: &mut String) -> Result<(), String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    text.clear();
    let too_large = |size: String| {
        format!("{size}, more than --max-file-size={max_size} bytes allows: a shard result is about 2 KB per interval; raise --max-file-size if this is one")
    };
    let mut input: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        // O_NONBLOCK: opening a FIFO would otherwise wait for a writer.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| e.to_string())?;
        let meta = f.metadata().map_err(|e| e.to_string())?;
        let t = meta.file_type();
        if !t.is_file() {
            let kind = if t.is_dir() {
                "a directory"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_char_device() {
                "a character device"
            } else if t.is_block_device() {
                "a block device"
            } else if t.is_socket() {
                "a socket"
            } else {
                "not a regular file"
            };
            return Err(format!("{kind}, not a shard result file: merge reads regular files, or - for standard input"));
        }
        if meta.len() > max_size {
            return Err(too_large(format!("{} bytes", meta.len())));
        }
        Box::new(f)
    };
    // Bounded even when the size said otherwise (standard input, a file
    // that grows while it is read).
    let mut bytes = Vec::new();
    input.by_ref().take(max_size.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max_size {
        return Err(too_large(format!("over {max_size} bytes (read until then)")));
    }
    *text = String::from_utf8(bytes).map_err(|_| "not a shard result: not UTF-8 text".to_string())?;
    Ok(())
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("dbbench merge: {msg}");
    Exit::Error.into()
}

/// The first difference between two runs' parameters, as `--name=value`s.
fn difference(a: &ShardResult, b: &ShardResult) -> Option<String> {
    let (ra, rb) = (&a.run, &b.run);
    if ra.test != rb.test {
        return Some(format!("test '{}' there, '{}' here", ra.test, rb.test));
    }
    if a.shard_count != b.shard_count {
        return Some(format!("--shard=.../{} there, .../{} here", a.shard_count, b.shard_count));
    }
    if (ra.threads, ra.events) != (rb.threads, rb.events) || ra.rate != rb.rate {
        return Some(format!(
            "--threads={} --events={} --rate={} there, --threads={} --events={} --rate={} here",
            ra.threads, ra.events, ra.rate, rb.threads, rb.events, rb.rate
        ));
    }
    if a.version != b.version {
        return Some(format!(
            "dbbench {} there, {} here: every shard of a run runs the same dbbench",
            a.version, b.version
        ));
    }
    if ra.percentiles != rb.percentiles || ra.histogram != rb.histogram {
        return Some(format!(
            "--percentile={:?} --histogram={} there, {:?} {} here",
            ra.percentiles, ra.histogram, rb.percentiles, rb.histogram
        ));
    }
    if ra.report_interval_s != rb.report_interval_s {
        return Some(format!("--report-interval={} there, {} here", ra.report_interval_s, rb.report_interval_s));
    }
    if ra.start_at_ms != rb.start_at_ms {
        let s = |v: Option<i64>| v.map_or("none".to_string(), |v| v.to_string());
        return Some(format!("--start-at={} there, {} here", s(ra.start_at_ms), s(rb.start_at_ms)));
    }
    let keys: std::collections::BTreeSet<&String> = ra.options.keys().chain(rb.options.keys()).collect();
    for k in keys {
        if PER_SHARD_OPTIONS.contains(&k.as_str()) {
            continue;
        }
        let (va, vb) = (ra.options.get(k), rb.options.get(k));
        if va != vb {
            let s = |v: Option<&String>| v.map_or("(not set)".to_string(), |v| format!("'{v}'"));
            return Some(format!("--{}={} there, {} here", k.replace('_', "-"), s(va), s(vb)));
        }
    }
    None
}

/// Checks that the results are the shards of one run, each once, and adds
/// them up; their interval series were added up as they were read (their
/// own `intervals` are empty). Errors are one line.
fn merge(results: &[(String, ShardResult)], series: ReadSeries, allow_partial: bool) -> Result<Merged, String> {
    let Some((_, first)) = results.first() else { return Err("no shard results given".into()) };
    let n = first.shard_count;
    let (by_index, missing) = index_shards(results, allow_partial)?;
    let shards: Vec<&ShardResult> = by_index.values().map(|(_, r)| *r).collect();
    let clock = StartClock::of(first, &shards);
    let total_time = shards.iter().map(|r| clock.skew_ms(r) / 1e3 + r.total_time_s).fold(0.0, f64::max).max(1e-9);

    // Shards that did not run throughout, and what a stall of the others
    // then most likely waited for.
    let frozen: BTreeMap<u32, String> = shards
        .iter()
        .filter_map(|r| {
            let late = series.longest_late_ms.get(&r.shard_index).copied().unwrap_or(0.0);
            freeze_of(r, late).map(|f| (r.shard_index, f))
        })
        .collect();
    let mut cumulative = Period::default();
    let mut fairness = Vec::new();
    let (mut not_started, mut dropped, mut target) = (0u64, 0u64, 0.0f64);
    let mut reasons = Vec::new();
    for r in &shards {
        r.cumulative.add_to(&mut cumulative).map_err(|e| format!("shard {}: cumulative.{e}", r.shard_index))?;
        fairness.extend(r.fairness.iter().map(ClientFairness::from));
        if let Some(rate) = &r.rate {
            let overflow = || format!("shard {}: rate: the shards' arrivals overflow 64 bits", r.shard_index);
            not_started = not_started.checked_add(rate.not_started).ok_or_else(overflow)?;
            dropped = dropped.checked_add(rate.dropped).ok_or_else(overflow)?;
            target += rate.target;
        }
        if let Some(a) = ended_early(r, &frozen) {
            reasons.push(format!("shard {}: {a}", r.shard_index));
        }
        if let Some(f) = frozen.get(&r.shard_index) {
            reasons.push(format!("shard {}: {f}", r.shard_index));
        }
    }
    // The report prints reads + writes + other as the queries.
    if queries(&cumulative.counts).is_none() {
        return Err("the merged reads, writes and other statements add up beyond 64 bits".into());
    }
    if !missing.is_empty() {
        reasons.insert(0, format!("incomplete: {} of {n} shards missing (shard {})", missing.len(), list(&missing)));
    }
    let percentiles = first.run.percentiles.clone();
    let intervals = series.intervals.rows(&percentiles)?;
    let warmup_intervals = series.warmup.rows(&percentiles)?;
    let rated = shards.iter().any(|r| r.rate.is_some());
    let rate = rated.then(|| RateSummary {
        target,
        achieved: cumulative.get(Counter::Event) as f64 / total_time,
        not_started,
        dropped,
    });
    let table = shard_rows(first, &by_index, &frozen, &clock);
    let mut options = first.run.options.clone();
    for k in ["shard", "shard_result"] {
        options.remove(k);
    }
    Ok(Merged {
        test: first.run.test.clone(),
        options,
        count: n,
        sql: shards.iter().any(|r| r.sql),
        threads: shards.iter().map(|r| r.threads).sum(),
        percentiles,
        histogram: first.run.histogram,
        total_time,
        cumulative,
        fairness,
        intervals,
        warmup_intervals,
        rate,
        server_version: shards.iter().find_map(|r| r.server_version.clone()),
        aborted: (!reasons.is_empty()).then(|| reasons.join("; ")),
        shards: table,
        missing,
        start_skew_ms: (shards.len() > 1).then_some(clock.latest - clock.earliest),
        skew_clock: clock.name,
    })
}

/// The results by shard index, once each, every one a shard of the first's
/// run with its share of the thread ids; and the shard indexes missing,
/// which only `allow_partial` accepts.
#[allow(clippy::type_complexity)]
fn index_shards(
    results: &[(String, ShardResult)],
    allow_partial: bool,
) -> Result<(BTreeMap<u32, (&String, &ShardResult)>, Vec<u32>), String> {
    let Some((first_name, first)) = results.first() else { return Err("no shard results given".into()) };
    let n = first.shard_count;
    let mut by_index: BTreeMap<u32, (&String, &ShardResult)> = BTreeMap::new();
    for (name, r) in results {
        if let Some(d) = difference(first, r) {
            return Err(format!("{name} is not from the same run as {first_name}: {d}"));
        }
        if r.shard_index >= n {
            return Err(format!("{name}: shard index {} is not below the shard count {n}", r.shard_index));
        }
        let (want_first, want_len) = super::split(r.run.threads as u64, n, r.shard_index);
        if (r.first_thread as u64, r.threads as u64) != (want_first, want_len) {
            return Err(format!(
                "{name}: shard {}/{n} ran thread ids {}..{}, but its share of --threads={} is {}..{}: the shards' clients would overlap or leave gaps",
                r.shard_index,
                r.first_thread,
                r.first_thread + r.threads,
                r.run.threads,
                want_first,
                want_first + want_len
            ));
        }
        if let Some((other, _)) = by_index.insert(r.shard_index, (name, r)) {
            return Err(format!(
                "shard {}/{n} is given twice ({other} and {name}): each shard's result once, please",
                r.shard_index
            ));
        }
    }
    let missing: Vec<u32> = (0..n).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() && !allow_partial {
        return Err(format!(
            "{} of {n} shards missing (shard {}): a shard that died writes no result; give every shard's result, or --allow-partial to merge the rest with the missing ones named in the report",
            missing.len(),
            list(&missing)
        ));
    }
    Ok((by_index, missing))
}

/// The shards' starts on one clock: the database server's when every shard
/// measured its offset from it, else each host's own wall clock.
struct StartClock {
    /// Whether every shard measured its offset from the server's clock.
    common: bool,
    /// Which clock, for the report.
    name: String,
    earliest: f64,
    latest: f64,
}

impl StartClock {
    /// The clock of `shards`; its name is the one `first` measured against.
    fn of(first: &ShardResult, shards: &[&ShardResult]) -> StartClock {
        let common = shards.iter().all(|r| r.clock_offset.is_some());
        let name = if common {
            first.clock_offset.as_ref().map(|c| c.against.clone()).unwrap_or_default()
        } else {
            "each shard host's own wall clock (not every shard measured its offset from the database server's)".into()
        };
        let mut clock = StartClock { common, name, earliest: f64::INFINITY, latest: f64::NEG_INFINITY };
        let starts: Vec<f64> = shards.iter().map(|r| clock.start_ms(r)).collect();
        clock.earliest = starts.iter().copied().fold(f64::INFINITY, f64::min);
        clock.latest = starts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        clock
    }

    /// Shard `r`'s start, Unix ms on this clock.
    fn start_ms(&self, r: &ShardResult) -> f64 {
        r.start.start_unix_ms + if self.common { r.clock_offset.as_ref().map_or(0.0, |c| c.offset_ms) } else { 0.0 }
    }

    /// How long after the earliest shard shard `r` started, ms.
    fn skew_ms(&self, r: &ShardResult) -> f64 {
        self.start_ms(r) - self.earliest
    }
}

/// Why shard `r` ended early, if it did; a stall while another shard was
/// frozen blames that shard's locks rather than the server.
fn ended_early(r: &ShardResult, frozen: &BTreeMap<u32, String>) -> Option<String> {
    let a = r.aborted.as_ref()?;
    let culprit = frozen.keys().find(|k| **k != r.shard_index);
    Some(match culprit {
        Some(k) if a.starts_with("stalled") => format!(
            "{a} — shard {k} did not run meanwhile ({}): its clients most likely waited for shard {k}'s locks, not for the server",
            frozen[k].split_once(": ").map_or("", |(_, why)| why)
        ),
        _ => a.clone(),
    })
}

/// The report's table: one row per shard index, the missing ones marked.
fn shard_rows(
    first: &ShardResult,
    by_index: &BTreeMap<u32, (&String, &ShardResult)>,
    frozen: &BTreeMap<u32, String>,
    clock: &StartClock,
) -> Vec<ShardRow> {
    let n = first.shard_count;
    let mut table: Vec<ShardRow> = Vec::new();
    for i in 0..n {
        let (first_thread, threads) = super::split(first.run.threads as u64, n, i);
        let row = match by_index.get(&i) {
            Some((_, r)) => {
                let after_t = r.run.start_at_ms.map(|t| r.start.start_unix_ms - t as f64);
                let status = match (ended_early(r, frozen), frozen.get(&i), r.start.late) {
                    (Some(a), Some(f), _) => format!("ended: {a}; {f}"),
                    (Some(a), None, _) => format!("ended: {a}"),
                    (None, Some(f), _) => f.clone(),
                    (None, None, true) => format!("late: ready {:.0} ms after --start-at", after_t.unwrap_or(0.0)),
                    (None, None, false) => "ok".into(),
                };
                ShardRow {
                    shard: i,
                    host: Some(r.host.clone()),
                    first_thread: first_thread as u32,
                    threads: threads as u32,
                    events: Some(r.cumulative.counts.events),
                    queries: queries(&r.cumulative.counts.to_counts()),
                    start_skew_ms: Some(clock.skew_ms(r)),
                    after_start_at_ms: after_t,
                    clock_offset_ms: r.clock_offset.as_ref().map(|c| c.offset_ms),
                    status,
                }
            }
            None => ShardRow {
                shard: i,
                host: None,
                first_thread: first_thread as u32,
                threads: threads as u32,
                events: None,
                queries: None,
                start_skew_ms: None,
                after_start_at_ms: None,
                clock_offset_ms: None,
                status: "missing".into(),
            },
        };
        table.push(row);
    }
    table
}

/// Reads + writes + other, unless that overflows.
fn queries(c: &crate::collector::Counts) -> Option<u64> {
    [Counter::Read, Counter::Write, Counter::Other].iter().try_fold(0u64, |sum, k| sum.checked_add(c[*k as usize]))
}

fn list(v: &[u32]) -> String {
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// Options from the stored map, as the JSON writer reads them.
fn options_of(map: &BTreeMap<String, String>) -> Options {
    let mut o = Options::default();
    for (k, v) in map {
        o.declare([OptionSpec::new(k, OptKind::String, "", "")]);
        o.set(k, v);
    }
    o
}

/// Prints the merged report in `format`.
pub fn print(m: &Merged, format: Format) {
    let s = Summary {
        sql: m.sql,
        threads: m.threads,
        percentiles: &m.percentiles,
        histogram: m.histogram,
        total_time: m.total_time,
        period_time: m.total_time,
        cumulative: &m.cumulative,
        fairness: &m.fairness,
        intervals: &m.intervals,
        warmup_intervals: &m.warmup_intervals,
        rate: m.rate.clone(),
        server_version: m.server_version.clone(),
        aborted: m.aborted.clone(),
        debug: false,
    };
    let opts = options_of(&m.options);
    match format {
        Format::Json => {
            let doc = crate::output::json::document(&s, &opts, &m.test);
            let mut v = serde_json::to_value(&doc).unwrap_or_default();
            if let Some(obj) = v.as_object_mut() {
                obj.insert("shards".into(), serde_json::to_value(&m.shards).unwrap_or_default());
                obj.insert("shards_missing".into(), serde_json::to_value(&m.missing).unwrap_or_default());
                obj.insert("start_skew_ms".into(), serde_json::to_value(m.start_skew_ms).unwrap_or_default());
                obj.insert("start_skew_clock".into(), serde_json::Value::String(m.skew_clock.clone()));
            }
            println!("{}", crate::run_document::to_text(&v));
        }
        Format::Csv => {
            for row in &m.intervals {
                output::csv::interval_line(row, &m.percentiles);
            }
            output::csv::final_report(&s);
            println!();
            println!(
                "shard,host,first_thread,threads,events,queries,start_skew_ms,after_start_at_ms,clock_offset_ms,status"
            );
            let f = |v: Option<f64>| v.map(|x| fixed(x, 3)).unwrap_or_default();
            let u = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
            for r in &m.shards {
                println!(
                    "{},{},{},{},{},{},{},{},{},{}",
                    r.shard,
                    csv_cell(r.host.as_deref().unwrap_or("")),
                    r.first_thread,
                    r.threads,
                    u(r.events),
                    u(r.queries),
                    f(r.start_skew_ms),
                    f(r.after_start_at_ms),
                    f(r.clock_offset_ms),
                    csv_cell(&r.status)
                );
            }
        }
        Format::Text | Format::Legacy => {
            println!(
                "Merged {} of {} shards of {} ({} threads){}",
                m.count as usize - m.missing.len(),
                m.count,
                m.test,
                m.threads,
                match m.start_skew_ms {
                    Some(s) => format!("; start skew {s:.2} ms on {}", m.skew_clock),
                    None => String::new(),
                }
            );
            if let Some(a) = &m.aborted {
                println!("The run is not whole ({a}); the figures below cover what the shards measured.");
            }
            println!();
            for row in &m.intervals {
                output::text::interval_line(row, m.sql, &m.percentiles);
            }
            output::text::final_report(&s);
            if let Some(r) = &s.rate {
                output::rate_warnings(r);
            }
            shard_table(m);
        }
    }
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The per-shard table of the text layout.
fn shard_table(m: &Merged) {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |x| fixed(x, 2));
    let n = |v: Option<u64>| v.map_or("-".to_string(), |x| x.to_string());
    println!("Shards:");
    println!(
        "    {:>5}  {:<20} {:>11} {:>10} {:>11} {:>13} {:>14} {:>13}  status",
        "shard", "host", "threads", "events", "queries", "start skew ms", "after T ms", "clock off ms"
    );
    for r in &m.shards {
        let ids = if r.threads == 1 {
            r.first_thread.to_string()
        } else {
            format!("{}-{}", r.first_thread, r.first_thread + r.threads - 1)
        };
        println!(
            "    {:>5}  {:<20} {:>11} {:>10} {:>11} {:>13} {:>14} {:>13}  {}",
            r.shard,
            r.host.as_deref().unwrap_or("-"),
            ids,
            n(r.events),
            n(r.queries),
            ms(r.start_skew_ms),
            ms(r.after_start_at_ms),
            ms(r.clock_offset_ms),
            r.status
        );
    }
    println!("    (start skew: each shard's start after the earliest's, on {})", m.skew_clock);
    println!();
}

/// `x` with `places` decimals, never `-0.00`: a clock offset of −0.001 ms
/// rounds to zero, and a signed zero reads as a measured negative offset.
fn fixed(x: f64, places: usize) -> String {
    let s = format!("{x:.places$}");
    match s.strip_prefix('-') {
        Some(abs) if abs.chars().all(|c| c == '0' || c == '.') => abs.to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::check::tests::shard_of;
    use crate::shard::result::tests::Lcg;

    /// Every numeric leaf of a JSON document, by its path.
    fn numbers(v: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match v {
            serde_json::Value::Number(_) => out.push(path.clone()),
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    path.push(k.clone());
                    numbers(v, path, out);
                    path.pop();
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    path.push(i.to_string());
                    numbers(v, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn at<'a>(v: &'a mut serde_json::Value, path: &[String]) -> &'a mut serde_json::Value {
        path.iter().fold(v, |v, k| match v {
            serde_json::Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
            other => &mut other[k.as_str()],
        })
    }

    /// One crafted change: a number set to an extreme or nearby value, or
    /// an interval duplicated, dropped or moved.
    fn mutate(doc: &mut serde_json::Value, r: &mut Lcg) {
        let intervals = doc["intervals"].as_array().map_or(0, |a| a.len());
        if intervals > 1 && r.next().is_multiple_of(5) {
            let a = doc["intervals"].as_array_mut().unwrap();
            let i = (r.next() % intervals as u64) as usize;
            match r.next() % 3 {
                0 => {
                    let t = a[i].clone();
                    a.insert(i, t);
                }
                1 => {
                    a.remove(i);
                }
                _ => a.swap(i, (i + 1) % intervals),
            }
            return;
        }
        let mut paths = Vec::new();
        numbers(doc, &mut Vec::new(), &mut paths);
        let path = &paths[(r.next() % paths.len() as u64) as usize];
        let leaf = at(doc, path);
        let old = leaf.as_f64().unwrap_or(0.0);
        *leaf = match r.next() % 10 {
            0 => serde_json::json!(u64::MAX),
            1 => serde_json::json!(1u64 << 63),
            2 => serde_json::json!(0),
            3 => serde_json::json!(-5),
            4 => serde_json::json!(1e300),
            5 => serde_json::json!(old + 1.0),
            6 => serde_json::json!((old * 1000.0).round()),
            7 => serde_json::json!(old - 1.0),
            8 => serde_json::json!(u32::MAX),
            _ => serde_json::json!(r.next()),
        };
    }

    /// Property test over crafted inputs: real-shaped results of 1 to 4
    /// shards, one to three changes each, through parsing, the checks and
    /// the merge as `dbbench merge` runs them. Nothing panics, and a merge
    /// that is not refused holds the invariants a real run's report does:
    /// events = latency count = Σ the clients' events, min ≤ avg ≤ max,
    /// percentiles in [min, max], intervals within the total.
    #[test]
    fn crafted_results_are_refused_or_merge_consistently() {
        let mut r = Lcg(0xc4af7);
        let (mut merged, mut refused) = (0, 0);
        for round in 0..3000 {
            let n = 1 + (r.next() % 4) as u32;
            let mut docs: Vec<serde_json::Value> =
                (0..n).map(|i| serde_json::to_value(shard_of(i, n, r.next())).unwrap()).collect();
            if round % 10 != 0 {
                for _ in 0..1 + r.next() % 3 {
                    let d = (r.next() % n as u64) as usize;
                    mutate(&mut docs[d], &mut r);
                }
            }
            let texts: Vec<String> = docs.iter().map(|d| d.to_string()).collect();
            let mut series = ReadSeries::new();
            let mut scratch = Scratch::default();
            let mut results = Vec::new();
            let mut bad = false;
            for (i, t) in texts.iter().enumerate() {
                match take_results(t, &format!("s{i}"), &mut series, &mut scratch) {
                    Ok(mut all) => results.append(&mut all),
                    Err(_) => bad = true,
                }
            }
            if bad {
                refused += 1;
                continue;
            }
            let Ok(m) = merge(&results, series, false) else {
                refused += 1;
                continue;
            };
            merged += 1;
            let c = &m.cumulative;
            let events = c.get(Counter::Event);
            assert_eq!(events, c.latency.count, "round {round}");
            assert_eq!(m.fairness.iter().map(|f| f.events).sum::<u64>(), events, "round {round}");
            assert!(m.total_time.is_finite() && m.total_time > 0.0, "round {round}");
            if events > 0 {
                let avg = c.latency.sum_ns as f64 / events as f64;
                assert!(c.latency.min_ns as f64 <= avg && avg <= c.latency.max_ns as f64, "round {round}");
                for p in [50.0, 95.0, 99.0, 100.0] {
                    let v = c.latency.percentile_ms(p).unwrap() * 1e6;
                    assert!(v >= c.latency.min_ns as f64 - 1.0 && v <= c.latency.max_ns as f64 + 1.0, "round {round}");
                }
            }
            let in_rows: u64 = m.intervals.iter().map(|row| row.counts[Counter::Event as usize]).sum();
            assert!(in_rows <= events, "round {round}: {in_rows} events in rows of {events}");
            assert!(m.intervals.windows(2).all(|w| w[0].time < w[1].time), "round {round}");
            assert!(m.intervals.iter().all(|row| row.threads <= m.threads), "round {round}");
        }
        // Both outcomes happen: the unchanged rounds merge, most crafted ones do not.
        assert!(merged >= 300 && refused >= 1500, "merged {merged}, refused {refused}");
    }

    /// A frozen shard is named from its late lines or its overrun; a
    /// stalled one is pointed at it; one that ran throughout is ok.
    #[test]
    fn a_frozen_shard_is_named_and_the_stall_of_the_others_pointed_at_it() {
        let mut r = shard_of(0, 1, 0);
        r.run.options.insert("time".into(), "8".into());
        r.total_time_s = 8.2;
        assert_eq!(freeze_of(&r, 15.0), None);
        let f = freeze_of(&r, 10_200.0).unwrap();
        assert!(f.starts_with("frozen: its interval lines came out up to 10.2 s late"), "{f}");
        // Without interval lines: the measured time against --time and the
        // stall guard's wait (5 s here: the longest event is 2 ms).
        r.total_time_s = 13.9;
        assert_eq!(freeze_of(&r, 0.0), None);
        r.total_time_s = 14.1;
        assert!(freeze_of(&r, 0.0).unwrap().starts_with("overran: it measured 14.1 s of --time=8"));
        r.run.options.remove("time");
        assert_eq!(freeze_of(&r, 0.0), None, "no --time, no limit to overrun");

        // Merged: shard 1 frozen, shard 0 stalled behind it.
        let mut a = shard_of(0, 2, 0);
        a.aborted = Some("stalled: 2 clients had not finished 5.0s after the end of --time".into());
        let b = shard_of(1, 2, 0);
        let texts = [serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap()];
        let (mut series, mut scratch, mut results) = (ReadSeries::new(), Scratch::default(), Vec::new());
        for (i, t) in texts.iter().enumerate() {
            results.extend(take_results(t, &format!("s{i}"), &mut series, &mut scratch).unwrap());
        }
        series.longest_late_ms.insert(1, 9_500.0);
        let m = merge(&results, series, false).unwrap();
        let why = m.aborted.unwrap();
        assert!(why.contains("shard 1: frozen: its interval lines came out up to 9.5 s late"), "{why}");
        assert!(why.contains("shard 0: stalled: 2 clients had not finished 5.0s after the end of --time — shard 1 did not run meanwhile"), "{why}");
        assert!(m.shards[1].status.starts_with("frozen:"), "{}", m.shards[1].status);
        assert!(m.shards[0].status.contains("most likely waited for shard 1's locks, not for the server"));
    }

    #[test]
    fn a_value_that_rounds_to_zero_has_no_sign() {
        assert_eq!(super::fixed(-0.001, 2), "0.00");
        assert_eq!(super::fixed(-0.0, 3), "0.000");
        assert_eq!(super::fixed(-0.006, 2), "-0.01");
        assert_eq!(super::fixed(1.5, 2), "1.50");
    }
}
