//! The matrix: a spec's cells (configuration × workload × threads) and its
//! runs (cell × repeat) in the order they execute.
//!
//! The order is a pure function of the spec, so a resumed experiment walks
//! the same sequence and `seq` numbers stay comparable.

use crate::lab::spec::{Order, PreparePolicy, Spec, Target};

/// One run of the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRun {
    /// 0-based position in the run order.
    pub seq: u32,
    /// Index into `spec.configurations` (0 = baseline).
    pub configuration: usize,
    /// Index into `spec.workloads`.
    pub workload: usize,
    /// Client threads.
    pub threads: u32,
    /// 1-based repeat.
    pub repeat: u32,
    /// The last planned run of its test (configuration × workload): its
    /// `after_test` hooks follow it.
    pub last_of_test: bool,
}

/// Every run of `spec` in execution order.
pub fn runs(spec: &Spec) -> Vec<PlannedRun> {
    let mut out = Vec::new();
    let mut push = |c: usize, w: usize, t: u32, r: u32| {
        let seq = out.len() as u32;
        out.push(PlannedRun { seq, configuration: c, workload: w, threads: t, repeat: r, last_of_test: false });
    };
    let nc = spec.configurations.len();
    match spec.order {
        Order::Interleaved => {
            for r in 1..=spec.repeats {
                for (w, wl) in spec.workloads.iter().enumerate() {
                    for &t in &wl.threads {
                        for c in 0..nc {
                            push(c, w, t, r);
                        }
                    }
                }
            }
        }
        Order::Grouped => {
            for c in 0..nc {
                for (w, wl) in spec.workloads.iter().enumerate() {
                    for &t in &wl.threads {
                        for r in 1..=spec.repeats {
                            push(c, w, t, r);
                        }
                    }
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for r in out.iter_mut().rev() {
        r.last_of_test = seen.insert((r.configuration, r.workload));
    }
    out
}

/// Rough seconds of lab overhead per server start, per kind, used only for
/// the plan's estimate (measured on a 2-core machine; see ARCHITECTURE.md).
fn start_stop_estimate_s(target: &Target) -> f64 {
    match target {
        Target::Managed(s) => match s.kind {
            crate::lab::server::ServerKind::Postgresql => 1.5,
            _ => 3.0,
        },
        Target::External { .. } => 0.0,
        Target::Sqlite { .. } => 0.05,
    }
}

/// How many server (re)starts the run order implies: one whenever the
/// configuration changes, a writing workload's data is restored, a workload
/// asks for a restart before each run or for other server options.
pub fn restarts(spec: &Spec, plan: &[PlannedRun]) -> Vec<bool> {
    let mut live: Option<(usize, usize)> = None;
    let mut dirty = false;
    let mut options: &[String] = &[];
    plan.iter()
        .map(|r| {
            let c = &spec.configurations[r.configuration];
            let w = &spec.workloads[r.workload];
            // Data is the preparing workload's (the queries of a TPC-H workload share one).
            let data = (r.configuration, w.data);
            let other_options = std::mem::replace(&mut options, w.server_options_for(r.configuration)) != options;
            let restart = w.restart_each_run
                || (other_options && live.is_some())
                || match c.prepare {
                    PreparePolicy::Restore => live != Some(data) || dirty,
                    _ => live.map(|l| l.0) != Some(r.configuration),
                };
            if restart {
                dirty = false;
            }
            live = Some(data);
            dirty |= w.writes;
            restart
        })
        .collect()
}

/// Estimated seconds for `plan`: measured time and warmup of every run plus
/// a rough allowance for server restarts. Prepare time is not known in
/// advance and is not included.
pub fn estimate_s(spec: &Spec, plan: &[PlannedRun]) -> f64 {
    let restarts = restarts(spec, plan);
    plan.iter()
        .zip(restarts)
        .map(|(r, restart)| {
            let mut s = spec.workloads[r.workload].estimate_s.unwrap_or((spec.warmup_s + spec.time_s) as f64) + 0.3;
            if restart {
                s += start_stop_estimate_s(&spec.configurations[r.configuration].target);
            }
            s
        })
        .sum()
}

/// `1h02m03s`-style durations for humans.
pub fn human_duration(s: f64) -> String {
    let s = s.round() as u64;
    match (s / 3600, (s / 60) % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// The text `dbbench lab plan` prints.
pub fn describe(spec: &Spec, plan: &[PlannedRun]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let cells: usize = spec.workloads.iter().map(|w| w.threads.len()).sum::<usize>() * spec.configurations.len();
    let _ = writeln!(o, "experiment: {}", spec.name);
    if !spec.description.is_empty() {
        let _ = writeln!(o, "  {}", spec.description.trim());
    }
    let _ = writeln!(o, "configurations ({}; baseline first):", spec.configurations.len());
    for c in &spec.configurations {
        let _ = writeln!(o, "  {:<20} {:<10} prepare={}", c.name, c.target.kind_name(), c.prepare.name());
    }
    let _ = writeln!(o, "workloads ({}):", spec.workloads.len());
    for w in &spec.workloads {
        let what = match &w.kind {
            crate::lab::spec::WorkloadKind::Test { test, options } => {
                let opts: Vec<String> = options.iter().map(|(k, v)| format!("--{k}={v}")).collect();
                format!("{test} {}", opts.join(" "))
            }
            crate::lab::spec::WorkloadKind::Command { command, .. } => format!("command: {}", command.join(" ")),
            crate::lab::spec::WorkloadKind::Tpch { query, options, load } => {
                format!("TPC-H query {query} {} (data: tpch load {})", options.join(" "), load.join(" "))
            }
        };
        let threads: Vec<String> = w.threads.iter().map(u32::to_string).collect();
        let _ = writeln!(
            o,
            "  {:<20} threads {:<16} {}{}",
            w.name,
            threads.join(","),
            what.trim(),
            if w.writes { "" } else { " (read-only)" }
        );
        for (c, extra) in spec.configurations.iter().zip(&w.server_options).filter(|(_, e)| !e.is_empty()) {
            let _ = writeln!(o, "  {:<20} on {}: server restarted with {}", "", c.name, extra.join(" "));
        }
    }
    let order = match spec.order {
        Order::Interleaved => "interleaved (each repeat visits every cell, configurations in turn)",
        Order::Grouped => "grouped (all runs of a configuration together)",
    };
    let timed = spec.workloads.iter().any(|w| !matches!(w.kind, crate::lab::spec::WorkloadKind::Tpch { .. }));
    let each = if timed {
        format!("each run {}s warmup + {}s measured", spec.warmup_s, spec.time_s)
    } else {
        "each run one TPC-H query, as long as it takes (estimates: the workloads' `expected`)".to_string()
    };
    let _ = writeln!(o, "cells: {cells}; repeats: {}; runs: {}; {each}; order: {order}", spec.repeats, plan.len());
    let restarts = restarts(spec, plan).iter().filter(|&&r| r).count();
    let _ = writeln!(
        o,
        "estimated duration: {} ({} server starts or data restores; prepare time not included)",
        human_duration(estimate_s(spec, plan)),
        restarts
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spec(order: &str) -> Spec {
        let t = format!(
            r#"
[experiment]
name = "t"
threads = [1, 2]
repeats = 2
time = 3
order = "{order}"
[[configuration]]
name = "a"
server = "sqlite"
[[configuration]]
name = "b"
server = "sqlite"
[[workload]]
test = "oltp_point_select"
[[workload]]
test = "oltp_update_index"
threads = [4]
"#
        );
        crate::lab::spec::parse(Path::new("t.toml"), &t).unwrap()
    }

    #[test]
    fn interleaved_order_alternates_configurations_within_each_repeat() {
        let s = spec("interleaved");
        let p = runs(&s);
        assert_eq!(p.len(), 2 * (2 + 1) * 2);
        let first: Vec<(usize, usize, u32, u32)> =
            p.iter().take(6).map(|r| (r.configuration, r.workload, r.threads, r.repeat)).collect();
        assert_eq!(first, vec![(0, 0, 1, 1), (1, 0, 1, 1), (0, 0, 2, 1), (1, 0, 2, 1), (0, 1, 4, 1), (1, 1, 4, 1)]);
        assert_eq!(p[6].repeat, 2);
        assert!(p.iter().enumerate().all(|(i, r)| r.seq as usize == i));
        // Every (configuration, workload, threads, repeat) exactly once.
        let mut keys: Vec<_> = p.iter().map(|r| (r.configuration, r.workload, r.threads, r.repeat)).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), p.len());
    }

    #[test]
    fn grouped_order_and_restarts() {
        let s = spec("grouped");
        let p = runs(&s);
        assert!(p[..6].iter().all(|r| r.configuration == 0));
        let r = restarts(&s, &p);
        // a: point_select x (1,2) x 2 repeats share one start; update_index
        // restarts for its first run and again after its first (writing) run.
        assert_eq!(&r[..6], &[true, false, false, false, true, true]);
        assert!(describe(&s, &p).contains("runs: 12"));
    }
}
