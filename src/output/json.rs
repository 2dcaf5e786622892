//! `--format=json`: one document with every figure (schema in
//! `docs/json-schema.md`, versioned by `schema_version`).

use super::{pct_label, IntervalRow, Summary};
use crate::collector::{Counter, LatencyAcc};
use crate::options::Options;
use crate::run_document::{
    Counters, Fairness, Interval, IntervalLatency, Latency, LatencyOrigin, RateOutcome, Rates, RunDocument,
};
use std::collections::BTreeMap;

fn latency(acc: &LatencyAcc, pct: &[f64]) -> Latency {
    Latency {
        count: acc.count,
        min_ms: acc.min_ms(),
        avg_ms: acc.avg_ms(),
        max_ms: acc.max_ms(),
        sum_ms: acc.sum_ms(),
        percentiles_ms: pct.iter().map(|q| (pct_label(*q), acc.percentile_ms(*q))).collect(),
        above_histogram_range: acc.overflow,
        histogram: histogram_base64(acc),
    }
}

/// The whole latency histogram (µs values) as HdrHistogram's V2 compressed
/// encoding in base64 (the `HISTFAAA...` form other HDR tools read), so
/// stored runs can be merged and re-percentiled later; null when empty.
fn histogram_base64(acc: &LatencyAcc) -> Option<String> {
    use base64::Engine;
    use hdrhistogram::serialization::Serializer;
    let h = acc.histogram()?;
    let mut buf = Vec::new();
    hdrhistogram::serialization::V2DeflateSerializer::new().serialize(h, &mut buf).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(buf))
}

fn interval(row: &IntervalRow, pct: &[f64]) -> Interval {
    Interval {
        time_s: row.time,
        interval_s: row.dt,
        threads_running: row.threads,
        events: row.counts[Counter::Event as usize],
        reads: row.counts[Counter::Read as usize],
        writes: row.counts[Counter::Write as usize],
        other: row.counts[Counter::Other as usize],
        errors: row.counts[Counter::Error as usize],
        reconnects: row.counts[Counter::Reconnect as usize],
        restarts: row.counts[Counter::Restart as usize],
        tps: row.per_sec(Counter::Event),
        qps: row.qps(),
        latency_ms: IntervalLatency {
            min: row.min,
            avg: row.avg,
            max: row.max,
            percentiles: pct.iter().zip(&row.percentiles).map(|(q, v)| (pct_label(*q), *v)).collect(),
        },
        queue_length: row.queue.map(|q| q.0),
        concurrency: row.queue.map(|q| q.1),
        late_ms: row.late_ms,
    }
}

/// The run's document.
pub fn document(s: &Summary, opts: &Options, test: &str) -> RunDocument {
    let mut options = BTreeMap::new();
    for spec in opts.specs() {
        // Never write passwords into results.
        let v = if crate::secret::is_secret_name(&spec.name) {
            crate::secret::MASK.to_string()
        } else {
            crate::secret::redact(opts.raw(&spec.name))
        };
        options.insert(spec.name.clone(), v);
    }
    let c = |k: Counter| s.count(k);
    RunDocument {
        schema_version: crate::run_document::SCHEMA_VERSION,
        tool: crate::run_document::TOOL.to_string(),
        version: crate::VERSION.to_string(),
        test: test.to_string(),
        server_version: s.server_version.clone(),
        threads: s.threads,
        aborted: s.aborted.clone(),
        total_time_s: s.total_time,
        counters: Counters {
            events: c(Counter::Event),
            reads: c(Counter::Read),
            writes: c(Counter::Write),
            other: c(Counter::Other),
            queries: s.cumulative.queries(),
            errors: c(Counter::Error),
            reconnects: c(Counter::Reconnect),
            restarts: c(Counter::Restart),
        },
        rates_per_s: Rates {
            events: s.per_sec(Counter::Event),
            queries: s.cumulative.queries() as f64 / s.period_time,
            errors: s.per_sec(Counter::Error),
            reconnects: s.per_sec(Counter::Reconnect),
            restarts: s.per_sec(Counter::Restart),
        },
        latency: latency(&s.cumulative.latency, s.percentiles),
        latency_measured_from: if s.rate.is_some() { LatencyOrigin::IntendedStart } else { LatencyOrigin::ActualStart },
        service_time: s.rate.as_ref().map(|_| latency(&s.cumulative.service, s.percentiles)),
        rate: s.rate.as_ref().map(|r| RateOutcome {
            target_per_s: r.target,
            achieved_per_s: r.achieved,
            arrivals_not_started: r.not_started,
            arrivals_dropped: r.dropped,
        }),
        fairness: s
            .fairness
            .iter()
            .map(|f| Fairness { events: f.events, time_s: f.time_s, min_s: f.min_s, max_s: f.max_s })
            .collect(),
        intervals: s.intervals.iter().map(|r| interval(r, s.percentiles)).collect(),
        warmup_intervals: s.warmup_intervals.iter().map(|r| interval(r, s.percentiles)).collect(),
        options,
    }
}

/// Prints the document.
pub fn final_report(s: &Summary, opts: &Options, test: &str) {
    println!("{}", crate::run_document::to_text(&document(s, opts, test)));
}
