//! A run's report (`--format`): what a run measured, in sysbench's text layout (default), JSON,
//! CSV or sysbench 0.5's layout. One file per format; this module holds the figures they share.
//!
//! Every latency figure is labelled by what it measures: under `--rate` the
//! sysbench-compatible "Latency" block is measured from each event's
//! intended start (queueing included) and a separate "Service time" block
//! from its actual start; without `--rate` both are the same thing and only
//! one is printed.

pub mod csv;
pub mod json;
pub mod legacy;
pub mod text;

use crate::collector::{Counter, Period};
use crate::options::Options;

/// Output format (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// sysbench 1.0's text layout.
    Text,
    /// One JSON document at the end (schema in docs/json-schema.md).
    Json,
    /// CSV rows: one per interval, then a total row.
    Csv,
    /// sysbench 0.5's text layout ("read/write requests: ..."), for old parsers.
    Legacy,
}

impl Format {
    /// Parses `--format`.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "text" | "" => Some(Format::Text),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "legacy" => Some(Format::Legacy),
            _ => None,
        }
    }

    /// Whether the format is a text layout (progress lines, header) rather
    /// than a machine-readable one.
    pub fn is_text(self) -> bool {
        matches!(self, Format::Text | Format::Legacy)
    }

    /// Whether the run's progress lines (header, "Threads started!") are
    /// printed: in the text layouts at `--verbosity` 3 and above.
    pub fn shows_progress(self) -> bool {
        self.is_text() && crate::log::enabled(crate::log::Level::Notice)
    }
}

/// `--rate` outcome.
#[derive(Debug, Clone)]
pub struct RateSummary {
    /// `--rate`.
    pub target: f64,
    /// Completed events per second.
    pub achieved: f64,
    /// Arrivals still queued when the run ended.
    pub not_started: u64,
    /// Arrivals dropped because the backlog was full.
    pub dropped: u64,
}

/// One interval's figures.
#[derive(Debug, Clone)]
pub struct IntervalRow {
    /// Seconds since the start of measurement (after warmup); during the
    /// warmup, negative: seconds before its end.
    pub time: f64,
    /// Measured length of this interval, seconds.
    pub dt: f64,
    /// Client threads still running.
    pub threads: u32,
    /// Counter deltas.
    pub counts: crate::collector::Counts,
    /// Interval latency percentiles (ms), as `--percentile`; None without events.
    pub percentiles: Vec<Option<f64>>,
    /// Interval min/avg/max latency (ms).
    pub min: Option<f64>,
    /// Interval mean latency (ms).
    pub avg: Option<f64>,
    /// Interval max latency (ms).
    pub max: Option<f64>,
    /// Under `--rate`: (queue length, events in flight) at the tick.
    pub queue: Option<(u64, u64)>,
    /// How long after its interval's end the line came out, ms; None for warmup rows (never printed).
    pub late_ms: Option<f64>,
}

impl IntervalRow {
    /// Figures of one drained interval.
    pub fn new(time: f64, dt: f64, threads: u32, p: &Period, pct: &[f64], queue: Option<(u64, u64)>) -> IntervalRow {
        IntervalRow {
            time,
            dt: dt.max(1e-9),
            threads,
            counts: p.counts,
            percentiles: pct.iter().map(|q| p.latency.percentile_ms(*q)).collect(),
            min: p.latency.min_ms(),
            avg: p.latency.avg_ms(),
            max: p.latency.max_ms(),
            queue,
            late_ms: None,
        }
    }
    /// A counter's rate per second over the interval.
    pub fn per_sec(&self, c: Counter) -> f64 {
        self.counts[c as usize] as f64 / self.dt
    }
    /// Queries per second.
    pub fn qps(&self) -> f64 {
        self.per_sec(Counter::Read) + self.per_sec(Counter::Write) + self.per_sec(Counter::Other)
    }
}

/// Everything the final report shows.
pub struct Summary<'a> {
    /// A DB driver was used (the SQL block is printed).
    pub sql: bool,
    /// `--threads`.
    pub threads: u32,
    /// `--percentile` values.
    pub percentiles: &'a [f64],
    /// `--histogram`.
    pub histogram: bool,
    /// Seconds since the start of measurement.
    pub total_time: f64,
    /// Seconds since the start or the last checkpoint (rates divide by this).
    pub period_time: f64,
    /// Cumulative figures.
    pub cumulative: &'a Period,
    /// Per-client (events, seconds).
    pub fairness: &'a [crate::collector::ClientFairness],
    /// Interval rows, for JSON/CSV.
    pub intervals: &'a [IntervalRow],
    /// Interval rows during `--warmup-time` (time ≤ 0), for JSON only: in no figure.
    pub warmup_intervals: &'a [IntervalRow],
    /// `--rate` outcome.
    pub rate: Option<RateSummary>,
    /// Server version of the first connection.
    pub server_version: Option<String>,
    /// Set when the run did not finish normally.
    pub aborted: Option<String>,
    /// `--debug`: per-thread lines follow the text report.
    pub debug: bool,
}

impl Summary<'_> {
    /// A counter's total.
    pub fn count(&self, c: Counter) -> u64 {
        self.cumulative.get(c)
    }
    /// A counter's rate per second.
    pub fn per_sec(&self, c: Counter) -> f64 {
        self.count(c) as f64 / self.period_time
    }
}

/// Percentile label: `95` for whole numbers, `99.9` otherwise.
pub fn pct_label(p: f64) -> String {
    crate::run_document::percentile_label(p)
}

/// Prints one interval report (the engine calls the script's
/// report_intermediate hook instead when it has one).
pub fn interval_line(format: Format, row: &IntervalRow, sql: bool, pct: &[f64]) {
    let notice = crate::log::enabled(crate::log::Level::Notice);
    match format {
        Format::Text if notice => text::interval_line(row, sql, pct),
        Format::Csv => csv::interval_line(row, pct),
        Format::Legacy if notice => legacy::interval_line(row, pct),
        Format::Text | Format::Legacy | Format::Json => {}
    }
}

/// Prints the final report in the chosen format (the text layouts only at
/// `--verbosity` 3 and above, as sysbench; JSON and CSV always).
pub fn final_report(format: Format, s: &Summary, opts: &Options, test: &str) {
    let notice = crate::log::enabled(crate::log::Level::Notice);
    match format {
        Format::Text if notice => text::final_report(s),
        Format::Legacy if notice => legacy::final_report(s),
        Format::Text | Format::Legacy => {}
        Format::Json => json::final_report(s, opts, test),
        Format::Csv => csv::final_report(s),
    }
    if format.is_text() && s.debug {
        text::per_thread_debug(s);
    }
}

/// Warnings after a `--rate` run whose target was not met.
pub fn rate_warnings(r: &RateSummary) {
    if (r.achieved < r.target * 0.95 || r.dropped > 0) && crate::log::enabled(crate::log::Level::Warning) {
        eprintln!(
            "WARNING: the target rate of {:.2} events/s was not reached (achieved {:.2}/s; {} arrivals not started, {} dropped). \
             Latencies above include the queueing delay. Raise --threads or lower --rate.",
            r.target, r.achieved, r.not_started, r.dropped
        );
    }
}
