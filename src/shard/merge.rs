//! `dbbench merge FILE...`: the shards' results added up into the report
//! one process with all the clients would have printed — counters summed,
//! histograms merged bucket by bucket (percentiles exact, never averaged),
//! intervals aligned by tick index — in the engine's own layouts
//! (`crate::output`), with a per-shard table beside it.

use super::result::{ShardResult, Text, PER_SHARD_OPTIONS};
use super::series::{Scratch, Series};
use crate::exit::Exit;
use crate::options::{OptKind, OptionSpec, Options};
use crate::output::{self, Format, IntervalRow, RateSummary, Summary};
use crate::stats::{ClientFairness, Counter, Period};
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
    let (results, series) = match read_all(&a.files) {
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
}

/// Reads and checks the result files, on as many threads as there are
/// CPUs, adding each one's interval series up as it is read (the buckets'
/// base64 is decoded where it lies in the document) and dropping them: 64
/// results of an hour's 1-second intervals are 490 MB of JSON, which held
/// at once took 480 MiB and most of the merge's time in page faults.
/// (Holding 4 parsed results per reader, to add them tick by tick across
/// the four, was measured: 50 MiB more for no CPU time, docs/performance.md.)
/// Errors name the first bad file in the order given.
fn read_all(files: &[PathBuf]) -> Result<(Vec<(String, ShardResult)>, ReadSeries), String> {
    let readers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    type Read = (usize, Result<(String, ShardResult), String>);
    let (mut read, mut parts): (Vec<Read>, Vec<ReadSeries>) = (Vec::new(), Vec::new());
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..readers)
            .map(|_| {
                scope.spawn(|| {
                    let mut text = String::new();
                    let mut scratch = Scratch::default();
                    let mut mine = ReadSeries { intervals: Series::default(), warmup: Series::default() };
                    let mut out: Vec<Read> = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(f) = files.get(i) else { break };
                        let name = f.display().to_string();
                        text.clear();
                        if let Err(e) =
                            std::fs::File::open(f).and_then(|mut h| std::io::Read::read_to_string(&mut h, &mut text))
                        {
                            out.push((i, Err(format!("{name}: {e}"))));
                            continue;
                        }
                        match ShardResult::<Text>::parse(&text, &name) {
                            Err(e) => out.push((i, Err(e))),
                            Ok(r) => {
                                mine.intervals.add(r.shard_index, &r.intervals, &mut scratch);
                                mine.warmup.add(r.shard_index, &r.warmup_intervals, &mut scratch);
                                out.push((i, Ok((name, r.without_series()))));
                            }
                        }
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
    let results = read.into_iter().map(|(_, r)| r).collect::<Result<Vec<_>, String>>()?;
    let mut scratch = Scratch::default();
    let mut all = ReadSeries { intervals: Series::default(), warmup: Series::default() };
    for p in parts {
        all.intervals.absorb(p.intervals, &mut scratch);
        all.warmup.absorb(p.warmup, &mut scratch);
    }
    Ok((results, all))
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
    let shards: Vec<&ShardResult> = by_index.values().map(|(_, r)| *r).collect();

    // Starts on one clock: the database server's when every shard measured
    // its offset from it, else each host's own wall clock.
    let common = shards.iter().all(|r| r.clock_offset.is_some());
    let skew_clock = if common {
        first.clock_offset.as_ref().map(|c| c.against.clone()).unwrap_or_default()
    } else {
        "each shard host's own wall clock (not every shard measured its offset from the database server's)".into()
    };
    let start_of = |r: &ShardResult| {
        r.start.start_unix_ms + if common { r.clock_offset.as_ref().map_or(0.0, |c| c.offset_ms) } else { 0.0 }
    };
    let earliest = shards.iter().map(|r| start_of(r)).fold(f64::INFINITY, f64::min);
    let latest = shards.iter().map(|r| start_of(r)).fold(f64::NEG_INFINITY, f64::max);
    let total_time =
        shards.iter().map(|r| (start_of(r) - earliest) / 1e3 + r.total_time_s).fold(0.0, f64::max).max(1e-9);

    let mut cumulative = Period::default();
    let mut fairness = Vec::new();
    let (mut not_started, mut dropped, mut target) = (0u64, 0u64, 0.0f64);
    let mut reasons = Vec::new();
    for r in &shards {
        r.cumulative.add_to(&mut cumulative).map_err(|e| format!("shard {}: {e}", r.shard_index))?;
        fairness.extend(r.fairness.iter().map(ClientFairness::from));
        if let Some(rate) = &r.rate {
            not_started += rate.not_started;
            dropped += rate.dropped;
            target += rate.target;
        }
        if let Some(a) = &r.aborted {
            reasons.push(format!("shard {}: {a}", r.shard_index));
        }
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

    let mut table: Vec<ShardRow> = Vec::new();
    for i in 0..n {
        let (first_thread, threads) = super::split(first.run.threads as u64, n, i);
        let row = match by_index.get(&i) {
            Some((_, r)) => {
                let after_t = r.run.start_at_ms.map(|t| r.start.start_unix_ms - t as f64);
                let status = match (&r.aborted, r.start.late) {
                    (Some(a), _) => format!("ended: {a}"),
                    (None, true) => format!("late: ready {:.0} ms after --start-at", after_t.unwrap_or(0.0)),
                    (None, false) => "ok".into(),
                };
                ShardRow {
                    shard: i,
                    host: Some(r.host.clone()),
                    first_thread: first_thread as u32,
                    threads: threads as u32,
                    events: Some(r.cumulative.counts.events),
                    queries: Some(r.cumulative.counts.reads + r.cumulative.counts.writes + r.cumulative.counts.other),
                    start_skew_ms: Some(start_of(r) - earliest),
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
        start_skew_ms: (shards.len() > 1).then_some(latest - earliest),
        skew_clock,
    })
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
    #[test]
    fn a_value_that_rounds_to_zero_has_no_sign() {
        assert_eq!(super::fixed(-0.001, 2), "0.00");
        assert_eq!(super::fixed(-0.0, 3), "0.000");
        assert_eq!(super::fixed(-0.006, 2), "-0.01");
        assert_eq!(super::fixed(1.5, 2), "1.50");
    }
}
