//! sysbench 0.5's text layout (`--format=legacy`), for old result parsers:
//! the MariaDB lab's scripts read the "read/write requests" line (q/s
//! without BEGIN/COMMIT) and "transactions". Same measurements as the
//! default layout, older labels.
//!
//! Labels that meant something else in 0.5 are kept with today's meaning
//! and said here: "response time" is the event latency of the default
//! report (from the intended start under `--rate`); "approx. N percentile"
//! is the HDR percentile, not approximated by sysbench's buckets; "total
//! time taken by event execution" is the sum of event latencies.

use super::{pct_label, IntervalRow, Summary};
use crate::collector::Counter;

fn ms(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}ms")).unwrap_or_else(|| "n/a".into())
}

/// `[  10s] threads: 8, tps: ..., reads: ..., writes: ..., response time: ...ms (95%), errors: ..., reconnects: ...`
/// (rates per second over the interval).
pub fn interval_line(row: &IntervalRow, pct: &[f64]) {
    let rt = match pct.first() {
        Some(p) => format!(", response time: {} ({}%)", ms(row.percentiles[0]), pct_label(*p)),
        None => String::new(),
    };
    println!(
        "[{:4.0}s] threads: {}, tps: {:.2}, reads: {:.2}, writes: {:.2}{rt}, errors: {:.2}, reconnects: {:5.2}",
        row.time,
        row.threads,
        row.per_sec(Counter::Event),
        row.per_sec(Counter::Read),
        row.per_sec(Counter::Write),
        row.per_sec(Counter::Error),
        row.per_sec(Counter::Reconnect),
    );
}

/// The final report in 0.5's layout.
pub fn final_report(s: &Summary) {
    if s.histogram {
        super::text::histogram(&s.cumulative.latency);
    }
    if s.sql {
        let (r, w, o) = (s.count(Counter::Read), s.count(Counter::Write), s.count(Counter::Other));
        let per = |n: u64| n as f64 / s.period_time;
        println!("OLTP test statistics:");
        println!("    queries performed:");
        println!("        read:                            {r}");
        println!("        write:                           {w}");
        println!("        other:                           {o}");
        println!("        total:                           {}", r + w + o);
        let line = |label: &str, n: u64| println!("    {label:<37}{n:<6} ({:.2} per sec.)", per(n));
        line("transactions:", s.count(Counter::Event));
        line("read/write requests:", r + w);
        line("other operations:", o);
        line("ignored errors:", s.count(Counter::Error));
        line("reconnects:", s.count(Counter::Reconnect));
    }
    println!();
    let lat = &s.cumulative.latency;
    println!("General statistics:");
    println!("    total time:                          {:.4}s", s.total_time);
    println!("    total number of events:              {}", s.count(Counter::Event));
    println!("    total time taken by event execution: {:.4}s", lat.sum_ms() / 1000.0);
    println!("    response time:");
    println!("         min: {:>39}", ms(lat.min_ms()));
    println!("         avg: {:>39}", ms(lat.avg_ms()));
    println!("         max: {:>39}", ms(lat.max_ms()));
    for p in s.percentiles {
        let label = format!("approx. {:>3} percentile:", pct_label(*p));
        println!("         {label:<25}{:>19}", ms(lat.percentile_ms(*p)));
    }
    println!();
    super::text::fairness_block(s);
}
