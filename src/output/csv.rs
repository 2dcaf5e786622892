//! `--format=csv`: a header, one row per interval, then a `total` row.
//! Latencies in milliseconds; empty cells where nothing was measured.

use super::{pct_label, IntervalRow, Summary};
use crate::collector::Counter;
use std::sync::atomic::{AtomicBool, Ordering};

static HEADER_DONE: AtomicBool = AtomicBool::new(false);

fn header(pct: &[f64]) {
    if HEADER_DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    let p: String = pct.iter().map(|p| format!(",lat_p{}_ms", pct_label(*p))).collect();
    println!("kind,time_s,threads,tps,qps,reads_ps,writes_ps,other_ps,errors_ps,reconnects_ps,lat_min_ms,lat_avg_ms,lat_max_ms{p}");
}

fn cell(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_default()
}

/// One interval row.
pub fn interval_line(row: &IntervalRow, pct: &[f64]) {
    header(pct);
    let p: String = row.percentiles.iter().map(|v| format!(",{}", cell(*v))).collect();
    println!(
        "interval,{:.3},{},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{},{},{}{p}",
        row.time,
        row.threads,
        row.per_sec(Counter::Event),
        row.qps(),
        row.per_sec(Counter::Read),
        row.per_sec(Counter::Write),
        row.per_sec(Counter::Other),
        row.per_sec(Counter::Error),
        row.per_sec(Counter::Reconnect),
        cell(row.min),
        cell(row.avg),
        cell(row.max),
    );
}

/// The total row.
pub fn final_report(s: &Summary) {
    header(s.percentiles);
    let lat = &s.cumulative.latency;
    let p: String = s.percentiles.iter().map(|q| format!(",{}", cell(lat.percentile_ms(*q)))).collect();
    println!(
        "total,{:.3},{},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{},{},{}{p}",
        s.total_time,
        s.threads,
        s.per_sec(Counter::Event),
        s.cumulative.queries() as f64 / s.period_time,
        s.per_sec(Counter::Read),
        s.per_sec(Counter::Write),
        s.per_sec(Counter::Other),
        s.per_sec(Counter::Error),
        s.per_sec(Counter::Reconnect),
        cell(lat.min_ms()),
        cell(lat.avg_ms()),
        cell(lat.max_ms()),
    );
}
