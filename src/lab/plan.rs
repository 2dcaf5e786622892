//! The matrix: a spec's cells (configuration × workload × threads) and its
//! runs (cell × repeat) in the order they execute.
//!
//! The order is a pure function of the spec, so a resumed experiment walks
//! the same sequence and `seq` numbers stay comparable.

use crate::lab::spec::{Order, PreparePolicy, Spec, Target, WorkloadKind};

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

// ------------------------------------------------------- preparation and disk
//
// What the user waits for besides the runs: every (configuration, data)
// pair's preparation (a fresh data directory, the load, the snapshot), and
// the disk the work directory holds until the experiment ends. The figures
// below were measured with `dbbench lab run` itself on the 2-core
// development VM (managed servers with their default settings, 1M-row
// tables, TPC-H at SF 0.3; docs/performance.md, "lab plan estimates", has
// the commands and every figure). They are estimates: another machine,
// other server options (a bigger buffer pool, `innodb_flush_log_at_trx_commit`)
// or other data change them, and the plan says so.

/// One storage engine's measured preparation figures.
#[derive(Debug, Clone, Copy)]
struct EngineRates {
    /// Name in the plan's text.
    name: &'static str,
    /// oltp_common's tables (`oltp_*`, `select_random_*`): rows per second
    /// of the lab's prepare of one table (one loader), the k index included.
    oltp_rows_per_s: f64,
    /// The same with several tables (a loader per core; 2 cores here).
    oltp_rows_per_s_parallel: f64,
    /// Data directory bytes per oltp_common row (row, primary key, k index;
    /// PostgreSQL's WAL written by the load included).
    oltp_bytes_per_row: f64,
    /// The 0.5-era table `sbtest` (legacy_common): rows per second.
    legacy_rows_per_s: f64,
    /// Data directory bytes per `sbtest` row.
    legacy_bytes_per_row: f64,
    /// `dbbench tpch load` seconds and data directory bytes per scale
    /// factor; None where not measured.
    tpch_per_sf: Option<(f64, f64)>,
}

const INNODB: EngineRates = EngineRates {
    name: "InnoDB",
    oltp_rows_per_s: 25_600.0,
    oltp_rows_per_s_parallel: 25_600.0,
    oltp_bytes_per_row: 248.0,
    legacy_rows_per_s: 35_400.0,
    legacy_bytes_per_row: 252.0,
    tpch_per_sf: Some((350.0, 2.64e9)),
};
const MYISAM: EngineRates = EngineRates {
    name: "MyISAM",
    oltp_rows_per_s: 18_600.0,
    // Not measured with several tables: the one-table rate.
    oltp_rows_per_s_parallel: 18_600.0,
    oltp_bytes_per_row: 209.0,
    legacy_rows_per_s: 51_900.0,
    legacy_bytes_per_row: 203.0,
    tpch_per_sf: None,
};
const POSTGRESQL: EngineRates = EngineRates {
    name: "PostgreSQL",
    oltp_rows_per_s: 26_800.0,
    oltp_rows_per_s_parallel: 37_000.0,
    oltp_bytes_per_row: 590.0,
    legacy_rows_per_s: 29_000.0,
    legacy_bytes_per_row: 653.0,
    tpch_per_sf: Some((155.0, 3.61e9)),
};
const SQLITE: EngineRates = EngineRates {
    name: "SQLite",
    oltp_rows_per_s: 68_800.0,
    // The lab prepares SQLite with one loader.
    oltp_rows_per_s_parallel: 61_000.0,
    oltp_bytes_per_row: 217.0,
    legacy_rows_per_s: 190_000.0,
    legacy_bytes_per_row: 80.0,
    tpch_per_sf: Some((193.0, 1.88e9)),
};

/// Bytes per second of a snapshot copy without reflinks (the median of the
/// measured prepares' snapshots, which ranged from 18 to 168 MB/s).
const COPY_BYTES_PER_S: f64 = 60e6;

/// A fresh managed data directory: (bytes, seconds to initialise and start it).
fn empty_datadir(target: &Target) -> (f64, f64) {
    match target {
        Target::Managed(s) => match s.kind {
            crate::lab::server::ServerKind::Postgresql => (47.6e6, 4.6),
            _ => (118.2e6, 8.1),
        },
        _ => (0.0, 0.0),
    }
}

/// What preparing one configuration's data for one workload is estimated to cost.
#[derive(Debug, Clone, PartialEq)]
pub struct DataEstimate {
    /// Index into `spec.configurations`.
    pub configuration: usize,
    /// Index into `spec.workloads` of the workload that prepares the data.
    pub workload: usize,
    /// What is loaded, for the plan's text (`20000000 rows, MyISAM`), or why
    /// it cannot be estimated.
    pub what: String,
    /// Bytes of the prepared data directory; None when unknown (a Lua
    /// script or a command's prepare).
    pub bytes: Option<f64>,
    /// Seconds to prepare: initialise, load, and under `restore` the
    /// snapshot copy; None when unknown.
    pub seconds: Option<f64>,
}

/// An option's last value, by its dbbench name (`table_size`), whatever
/// spelling the spec used (`table-size`, 0.5's `oltp-table-size`).
fn option<'a>(options: &'a [(String, String)], names: &[&str]) -> Option<&'a str> {
    options
        .iter()
        .rev()
        .find(|(k, _)| {
            let k = k.replace('-', "_");
            names.contains(&k.as_str())
        })
        .map(|(_, v)| v.as_str())
}

/// Built-in tests on oltp_common's tables `sbtest1..N`.
const OLTP_TESTS: &[&str] = &[
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_delete",
    "oltp_insert",
    "select_random_points",
    "select_random_ranges",
];
/// Built-in 0.5-era tests on one table `sbtest` (legacy_common).
const LEGACY_TESTS: &[&str] = &[
    "oltp_simple",
    "select",
    "oltp_complex_ro",
    "oltp_complex_rw",
    "update_index",
    "update_non_index",
    "delete",
    "legacy_select_random_points",
    "legacy_select_random_ranges",
];

/// The engine whose figures apply to configuration `c` with these options.
fn engine(target: &Target, options: &[(String, String)], storage: Option<&str>) -> EngineRates {
    let driver = match target {
        Target::Managed(s) if s.kind == crate::lab::server::ServerKind::Postgresql => "pgsql",
        Target::Managed(_) => "mysql",
        Target::Sqlite { .. } => "sqlite",
        Target::External { driver_args } => {
            driver_args.iter().rev().find_map(|a| a.strip_prefix("--db-driver=")).unwrap_or("sqlite")
        }
    };
    match driver {
        "pgsql" => POSTGRESQL,
        "sqlite" => SQLITE,
        _ => {
            let e = storage
                .or_else(|| option(options, &["mysql_storage_engine", "mysql_table_engine"]))
                .unwrap_or("innodb");
            if e.eq_ignore_ascii_case("myisam") {
                MYISAM
            } else {
                INNODB
            }
        }
    }
}

/// The estimate for configuration `c`'s data of workload `w` (its `data` workload).
pub fn data_estimate(spec: &Spec, c: usize, w: usize) -> DataEstimate {
    let cfg = &spec.configurations[c];
    let wl = &spec.workloads[w];
    let (empty_bytes, init_s) = empty_datadir(&cfg.target);
    let snapshot = cfg.prepare == PreparePolicy::Restore;
    let finish = |what: String, bytes: f64, load_s: f64| {
        let total = empty_bytes + bytes;
        let copy = if snapshot { total / COPY_BYTES_PER_S } else { 0.0 };
        DataEstimate { configuration: c, workload: w, what, bytes: Some(total), seconds: Some(init_s + load_s + copy) }
    };
    let unknown =
        |why: &str| DataEstimate { configuration: c, workload: w, what: why.to_string(), bytes: None, seconds: None };
    match &wl.kind {
        WorkloadKind::Test { test, options } => {
            let mut options = options.clone();
            options.extend(cfg.options.iter().cloned());
            let num = |names: &[&str], default: u64| {
                option(&options, names).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(default)
            };
            let off =
                |names: &[&str]| option(&options, names).is_some_and(|v| matches!(v, "off" | "false" | "0" | "no"));
            let size = num(&["table_size", "oltp_table_size"], 10_000);
            let e = engine(&cfg.target, &options, None);
            let (rows, rate, bytes_per_row) = if OLTP_TESTS.contains(&test.as_str()) {
                let tables = num(&["tables", "oltp_tables_count"], 1).max(1);
                // oltp_insert prepares empty tables when auto_inc is off.
                let empty = test == "oltp_insert" && off(&["auto_inc", "oltp_auto_inc"]);
                let rate = if tables > 1 { e.oltp_rows_per_s_parallel } else { e.oltp_rows_per_s };
                (if empty { 0 } else { tables * size }, rate, e.oltp_bytes_per_row)
            } else if LEGACY_TESTS.contains(&test.as_str()) {
                (size, e.legacy_rows_per_s, e.legacy_bytes_per_row)
            } else if test == "insert" || test == "bulk_insert" {
                (0, 1.0, 0.0)
            } else {
                return unknown(&format!("{test}: a script's prepare, not estimated"));
            };
            finish(format!("{rows} rows, {} ({test})", e.name), rows as f64 * bytes_per_row, rows as f64 / rate)
        }
        WorkloadKind::Tpch { load, .. } => {
            let arg = |name: &str| load.iter().rev().find_map(|a| a.strip_prefix(&format!("--{name}=")));
            let sf = arg("sf").and_then(|v| v.parse::<f64>().ok()).unwrap_or(1.0);
            let e = engine(&cfg.target, &[], arg("engine"));
            match e.tpch_per_sf {
                Some((secs, bytes)) => finish(format!("TPC-H SF {sf}, {}", e.name), sf * bytes, sf * secs),
                None => unknown(&format!("TPC-H SF {sf} on {}: not estimated", e.name)),
            }
        }
        WorkloadKind::Command { prepare: Some(_), .. } => unknown("a command's prepare_command, not estimated"),
        WorkloadKind::Command { prepare: None, .. } => finish("nothing to prepare".into(), 0.0, 0.0),
    }
}

/// One estimate per (configuration, data) the plan prepares, in plan order.
pub fn data_estimates(spec: &Spec, plan: &[PlannedRun]) -> Vec<DataEstimate> {
    let mut seen = std::collections::HashSet::new();
    plan.iter()
        .filter(|r| spec.configurations[r.configuration].prepare != PreparePolicy::None)
        .map(|r| (r.configuration, spec.workloads[r.workload].data))
        .filter(|k| seen.insert(*k))
        .map(|(c, w)| data_estimate(spec, c, w))
        .collect()
}

/// The most the work directory holds at once, in bytes, and what of:
/// under `restore` every snapshot plus one live data directory per
/// configuration (as big as its biggest data); under `once` one data
/// directory per (configuration, data); under `none` a managed server's
/// empty one. Ordinary copies: a filesystem with reflinks shares a
/// snapshot's blocks with the live copy until the server writes them.
/// External servers keep their data themselves: not counted. None when a
/// part is unknown.
pub fn disk_estimate(spec: &Spec, estimates: &[DataEstimate]) -> (Option<f64>, String) {
    let mut total = Some(0.0);
    let (mut snapshots, mut dirs) = (0usize, 0usize);
    for (c, cfg) in spec.configurations.iter().enumerate() {
        if matches!(cfg.target, Target::External { .. }) {
            continue;
        }
        let mine: Vec<&DataEstimate> = estimates.iter().filter(|e| e.configuration == c).collect();
        let add = |t: &mut Option<f64>, b: Option<f64>| *t = t.zip(b).map(|(a, b)| a + b);
        match cfg.prepare {
            PreparePolicy::Restore => {
                for e in &mine {
                    add(&mut total, e.bytes);
                }
                snapshots += mine.len();
                let biggest = mine.iter().map(|e| e.bytes).try_fold(0.0f64, |m, b| b.map(|b| m.max(b)));
                add(&mut total, biggest);
                dirs += 1;
            }
            PreparePolicy::Once => {
                for e in &mine {
                    add(&mut total, e.bytes);
                }
                dirs += mine.len();
            }
            PreparePolicy::None => {
                add(&mut total, Some(empty_datadir(&cfg.target).0));
                dirs += 1;
            }
        }
    }
    let what = match (snapshots, dirs) {
        (0, d) => format!("{d} data director{}", if d == 1 { "y" } else { "ies" }),
        (s, d) => format!(
            "{s} snapshot{} and {d} live data director{}",
            if s == 1 { "" } else { "s" },
            if d == 1 { "y" } else { "ies" }
        ),
    };
    (total, what)
}

/// Bytes for humans: `3.8 GiB`.
pub fn human_bytes(b: f64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} bytes")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// Free bytes on the filesystem that holds `path` (or its nearest existing
/// parent: the work directory is made only when the lab runs).
pub fn free_bytes(path: &std::path::Path) -> Option<f64> {
    let mut p = path;
    while !p.exists() {
        p = p.parent()?;
    }
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: all-zero is a valid statvfs; `c` is a NUL-terminated path valid for the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; statvfs only writes into `st`.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as f64 * st.f_frsize as f64)
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
        let cpus = c.cpus.describe();
        let cpus = if cpus.is_empty() { String::new() } else { format!(" cpus: {cpus}") };
        let _ = writeln!(o, "  {:<20} {:<10} prepare={}{cpus}", c.name, c.target.kind_name(), c.prepare.name());
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
        // Data shared with an earlier workload (`datasets`); a TPC-H query's
        // own workload already says where its data comes from.
        let shared = match (&w.kind, &spec.workloads[w.data]) {
            (crate::lab::spec::WorkloadKind::Tpch { .. }, d)
                if d.name.split(':').next() == w.name.split(':').next() =>
            {
                String::new()
            }
            (_, d) if d.name != w.name => format!(" (data shared with {})", d.name),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  {:<20} threads {:<16} {}{}{shared}",
            w.name,
            threads.join(","),
            what.trim(),
            if w.writes { "" } else { " (read-only)" }
        );
        if !w.cpus.is_empty() {
            let _ = writeln!(o, "  {:<20} cpus: {}", "", w.cpus.describe());
        }
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
    let estimates = data_estimates(spec, plan);
    // Identical preparations are listed once, with where they happen.
    let mut groups: Vec<(&DataEstimate, Vec<&str>, Vec<&str>, usize)> = Vec::new();
    for e in &estimates {
        let (cname, wname) =
            (spec.configurations[e.configuration].name.as_str(), spec.workloads[e.workload].name.as_str());
        match groups.iter_mut().find(|g| g.0.what == e.what && g.0.bytes == e.bytes && g.0.seconds == e.seconds) {
            Some(g) => {
                g.3 += 1;
                if !g.1.contains(&cname) {
                    g.1.push(cname);
                }
                if !g.2.contains(&wname) {
                    g.2.push(wname);
                }
            }
            None => groups.push((e, vec![cname], vec![wname], 1)),
        }
    }
    let maybe = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map_or("unknown".to_string(), f);
    if !groups.is_empty() {
        let _ = writeln!(
            o,
            "preparation (estimates: rates measured on a 2-core VM, servers at their default settings; docs/performance.md):"
        );
        for (e, cs, ws, n) in &groups {
            let _ = writeln!(
                o,
                "  {n} x {}: {} and {} each ({} / {})",
                e.what,
                maybe(e.bytes, &|b| format!("about {}", human_bytes(b))),
                maybe(e.seconds, &|s| format!("about {}", human_duration(s))),
                cs.join(", "),
                ws.join(", ")
            );
        }
    }
    let runs_s = estimate_s(spec, plan);
    let prepare_s: f64 = estimates.iter().filter_map(|e| e.seconds).sum();
    let unknown = estimates.iter().filter(|e| e.seconds.is_none()).count();
    let unknown_note =
        if unknown > 0 { format!(", and {unknown} preparation(s) not estimated") } else { String::new() };
    let _ = writeln!(
        o,
        "estimated duration: {} in all: {} of runs ({} server starts or data restores) + {} for {} preparation(s){unknown_note}",
        human_duration(runs_s + prepare_s),
        human_duration(runs_s),
        restarts,
        human_duration(prepare_s),
        estimates.len() - unknown
    );
    let (disk, what) = disk_estimate(spec, &estimates);
    let _ = writeln!(
        o,
        "estimated disk: {} at most in the work directory ({what}; ordinary copies, less on a filesystem with reflinks), removed when the experiment ends unless --keep-data",
        maybe(disk, &|b| format!("about {}", human_bytes(b)))
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

    /// The seed's key cache study: 3 prepares of 20M MyISAM rows (the 3
    /// workloads load the same table: one data set per configuration) and
    /// the disk they hold, from the documented rates.
    #[test]
    fn the_key_cache_study_estimates_its_prepares_and_disk() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/segmented-key-cache.toml");
        let s = crate::lab::spec::load(&path).unwrap();
        let p = runs(&s);
        let e = data_estimates(&s, &p);
        assert_eq!(e.len(), 3);
        let row_bytes = 20e6 * MYISAM.legacy_bytes_per_row + 118.2e6;
        for x in &e {
            assert_eq!(x.what, "20000000 rows, MyISAM (legacy_select_random_points)");
            assert_eq!(x.bytes, Some(row_bytes));
            let secs = 8.1 + 20e6 / MYISAM.legacy_rows_per_s + row_bytes / COPY_BYTES_PER_S;
            assert!((x.seconds.unwrap() - secs).abs() < 1e-6, "{x:?}");
        }
        // 3 snapshots and one live data directory per configuration.
        let (disk, what) = disk_estimate(&s, &e);
        assert_eq!(disk, Some(6.0 * row_bytes));
        assert_eq!(what, "3 snapshots and 3 live data directories");
        let text = describe(&s, &p);
        assert!(
            text.contains("  3 x 20000000 rows, MyISAM (legacy_select_random_points): about 3.9 GiB and about 7m"),
            "{text}"
        );
        assert!(text.contains("(off, 32, 64 / points-10)"), "{text}");
        assert!(text.contains("points-50") && text.contains("(data shared with points-10)"), "{text}");
        assert!(text.contains("88h22m") && text.contains("for 3 preparation(s)"), "{text}");
        assert!(text.contains(&format!("estimated disk: about {} at most", human_bytes(6.0 * row_bytes))), "{text}");
    }

    /// Prepare policies and what cannot be estimated.
    #[test]
    fn policies_and_unknown_preparations() {
        let t = r#"
[experiment]
name = "t"
threads = [1]
time = 10
[[configuration]]
name = "once"
server = "sqlite"
prepare = "once"
[[configuration]]
name = "none"
server = "sqlite"
prepare = "none"
[[workload]]
test = "oltp_read_write"
options = { tables = 4, table-size = 100000 }
[[workload]]
name = "cmd"
command = ["echo", "tps = 1"]
prepare_command = ["true"]
metrics = { tps = 'tps = ([0-9.]+)' }
[[workload]]
name = "h"
tpch = { sf = 2, queries = "1,6" }
"#;
        let s = crate::lab::spec::parse(Path::new("t.toml"), t).unwrap();
        let p = runs(&s);
        let e = data_estimates(&s, &p);
        // Under "none" nothing is prepared; the TPC-H queries share one load.
        assert_eq!(e.len(), 3, "{e:?}");
        assert_eq!(e[0].bytes, Some(400_000.0 * SQLITE.oltp_bytes_per_row));
        assert_eq!(e[0].seconds, Some(400_000.0 / SQLITE.oltp_rows_per_s_parallel), "no snapshot under once");
        assert_eq!((e[1].bytes, e[1].seconds), (None, None));
        assert!(e[1].what.contains("not estimated"), "{}", e[1].what);
        assert_eq!(e[2].bytes, Some(2.0 * 1.88e9));
        let (disk, _) = disk_estimate(&s, &e);
        assert_eq!(disk, None, "a part is unknown");
        let text = describe(&s, &p);
        assert!(
            text.contains("and 1 preparation(s) not estimated") && text.contains("estimated disk: unknown"),
            "{text}"
        );
        assert_eq!(human_bytes(50.1e9), "46.7 GiB");
        assert!(free_bytes(Path::new("/no/such/dir/below/root")).is_some());
    }

    #[test]
    fn grouped_order_and_restarts() {
        let s = spec("grouped");
        let p = runs(&s);
        assert!(p[..6].iter().all(|r| r.configuration == 0));
        let r = restarts(&s, &p);
        // a: point_select x (1,2) x 2 repeats share one start; update_index
        // runs on the same data set (src/lab/spec/datasets.rs), still clean, so
        // its first run needs no restart; its second meets written data.
        assert_eq!(&r[..6], &[true, false, false, false, false, true]);
        assert!(describe(&s, &p).contains("runs: 12"));
    }
}
