//! sysbench 1.0.20's text layout: interval lines and the final report.
//! Column positions match sysbench's so existing parsers keep working;
//! additions (more percentiles, service time, rate figures) come after the
//! fields sysbench prints.

use super::{pct_label, IntervalRow, Summary};
use crate::collector::{mean_stddev, Counter, LatencyAcc};

fn opt_ms(v: Option<f64>) -> String {
    v.map(|x| format!("{x:4.2}")).unwrap_or_else(|| "n/a".into())
}

/// One `[ Ts ] thds: ...` line (and the queue line under `--rate`).
pub fn interval_line(row: &IntervalRow, sql: bool, pct: &[f64]) {
    let first = match pct.first() {
        Some(p) => format!(" lat (ms,{}%): {}", pct_label(*p), opt_ms(row.percentiles[0])),
        None => String::new(),
    };
    let extra: String = pct
        .iter()
        .zip(&row.percentiles)
        .skip(1)
        .map(|(p, v)| format!(" lat (ms,{}%): {}", pct_label(*p), opt_ms(*v)))
        .collect();
    if sql {
        println!(
            "[ {:.0}s ] thds: {} tps: {:4.2} qps: {:4.2} (r/w/o: {:4.2}/{:4.2}/{:4.2}){first} err/s: {:4.2} reconn/s: {:4.2}{extra}",
            row.time,
            row.threads,
            row.per_sec(Counter::Event),
            row.qps(),
            row.per_sec(Counter::Read),
            row.per_sec(Counter::Write),
            row.per_sec(Counter::Other),
            row.per_sec(Counter::Error),
            row.per_sec(Counter::Reconnect),
        );
    } else {
        println!("[ {:.0}s ] thds: {} eps: {:4.2}{first}{extra}", row.time, row.threads, row.per_sec(Counter::Event));
    }
    if let Some((q, c)) = row.queue {
        if sql {
            println!("[ {:.0}s ] queue length: {q}, concurrency: {c}", row.time);
        } else {
            println!("[ {:.0}s ] queue length: {q} concurrency: {c}", row.time);
        }
    }
}

fn latency_block(title: &str, acc: &LatencyAcc, pct: &[f64]) {
    let f = |v: Option<f64>| v.unwrap_or(0.0);
    println!("{title}");
    println!("         min: {:39.2}", f(acc.min_ms()));
    println!("         avg: {:39.2}", f(acc.avg_ms()));
    println!("         max: {:39.2}", f(acc.max_ms()));
    if pct.is_empty() {
        println!("         percentile stats:               disabled");
    }
    for p in pct {
        let label = pct_label(*p);
        // sysbench prints "{:3}th percentile: {:27.2}", ending at column 53.
        let width = 27usize.saturating_sub(label.len().saturating_sub(3));
        match acc.percentile_ms(*p) {
            Some(v) => println!("        {label:>3}th percentile: {v:>width$.2}"),
            None => println!("        {label:>3}th percentile: {:>width$}", "n/a"),
        }
    }
    println!("         sum: {:39.2}", acc.sum_ms());
    if acc.overflow > 0 {
        println!("         above 1 h (clamped in percentiles): {}", acc.overflow);
    }
    println!();
}

/// `--histogram`: one row per non-empty bucket (log scale, ~2% wide).
pub fn histogram(acc: &LatencyAcc) {
    println!("Latency histogram (values are in milliseconds)");
    histogram_table(acc);
}

/// The table of [`histogram`] without its title; also what a script's
/// `sysbench.histogram` object prints.
pub fn histogram_table(acc: &LatencyAcc) {
    println!("       value  ------------- distribution ------------- count");
    let rows: Vec<(f64, u64)> = acc
        .histogram()
        .map(|h| {
            h.iter_log(1, 1.02)
                .filter(|v| v.count_since_last_iteration() > 0)
                .map(|v| (v.value_iterated_to() as f64 / 1000.0, v.count_since_last_iteration()))
                .collect()
        })
        .unwrap_or_default();
    let max = rows.iter().map(|r| r.1).max().unwrap_or(1);
    for (value, count) in rows {
        let stars = ((count as f64 * 40.0 / max as f64) + 0.5).floor() as usize;
        println!("{value:12.3} |{:<40} {count}", "*".repeat(stars));
    }
    println!(" ");
}

/// "Threads fairness": per-client events and time, mean/stddev (the same
/// in sysbench 0.5 and 1.0).
pub fn fairness_block(s: &Summary) {
    let (ev_avg, ev_sd) = mean_stddev(s.fairness.iter().map(|f| f.events as f64));
    let (t_avg, t_sd) = mean_stddev(s.fairness.iter().map(|f| f.time_s));
    println!("Threads fairness:");
    println!("    events (avg/stddev):           {ev_avg:.4}/{ev_sd:3.2}");
    println!("    execution time (avg/stddev):   {t_avg:.4}/{t_sd:3.2}");
    println!();
}

/// `--debug`'s per-thread lines after a text report, in sysbench's layout
/// (event latency in seconds, measured per client; a client without
/// events shows n/a where sysbench would print a made-up 0).
pub fn per_thread_debug(s: &Summary) {
    let secs = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.4}s"));
    crate::log::debug("Verbose per-thread statistics:");
    println!();
    for (i, f) in s.fairness.iter().enumerate() {
        let avg = (f.events > 0).then(|| f.time_s / f.events as f64);
        crate::log::debug(&format!(
            "    thread #{i:3}: min: {}  avg: {}  max: {}  events: {}",
            secs(f.min_s),
            secs(avg),
            secs(f.max_s),
            f.events
        ));
        crate::log::debug(&format!("                 total time taken by event execution: {:.4}s", f.time_s));
    }
    println!();
}

/// The final report (also used for checkpoints).
pub fn final_report(s: &Summary) {
    if s.histogram {
        histogram(&s.cumulative.latency);
    }
    if s.sql {
        let q = s.cumulative.queries();
        println!("SQL statistics:");
        println!("    queries performed:");
        println!("        read:                            {}", s.count(Counter::Read));
        println!("        write:                           {}", s.count(Counter::Write));
        println!("        other:                           {}", s.count(Counter::Other));
        println!("        total:                           {q}");
        println!(
            "    transactions:                        {:<6} ({:.2} per sec.)",
            s.count(Counter::Event),
            s.per_sec(Counter::Event)
        );
        println!("    queries:                             {:<6} ({:.2} per sec.)", q, q as f64 / s.period_time);
        println!(
            "    ignored errors:                      {:<6} ({:.2} per sec.)",
            s.count(Counter::Error),
            s.per_sec(Counter::Error)
        );
        println!(
            "    reconnects:                          {:<6} ({:.2} per sec.)",
            s.count(Counter::Reconnect),
            s.per_sec(Counter::Reconnect)
        );
        // Not in sysbench's report, so only when there were any.
        if s.count(Counter::Restart) > 0 {
            println!(
                "    restarted events:                    {:<6} ({:.2} per sec.)",
                s.count(Counter::Restart),
                s.per_sec(Counter::Restart)
            );
        }
    }
    println!();
    println!("General statistics:");
    println!("    total time:                          {:.4}s", s.total_time);
    println!("    total number of events:              {}", s.count(Counter::Event));
    println!();
    let title =
        if s.rate.is_some() { "Latency (ms, from intended start, queueing included):" } else { "Latency (ms):" };
    latency_block(title, &s.cumulative.latency, s.percentiles);
    fairness_block(s);
    if let Some(r) = &s.rate {
        latency_block("Service time (ms, from actual start):", &s.cumulative.service, s.percentiles);
        println!("Rate:");
        println!("    target:                              {:.2} per sec.", r.target);
        println!("    achieved:                            {:.2} per sec.", r.achieved);
        println!("    arrivals not started at the end:     {}", r.not_started);
        println!("    arrivals dropped (backlog full):     {}", r.dropped);
        println!();
    }
}
