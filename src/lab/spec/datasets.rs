//! Which workloads of a spec run on one prepared data set.
//!
//! Preparing is often the longest part of an experiment (the seeds loaded
//! 20M-row tables), and many workloads load identical data: every built-in
//! `oltp_*` test prepares the same `sbtest` tables through `oltp_common`,
//! and what differs between them (`point_selects`, `range_size`, ...) is read
//! only while running. Workloads whose prepare is the same program with the
//! same data options therefore share one data set per configuration
//! (`Workload::data` points at the first of them): one prepare, one
//! snapshot, and no restore between two of them unless a writer ran.
//!
//! The rule is conservative: two workloads share only when the prepare is
//! known to be the same code (the table below, checked against the scripts
//! by a test) and every option other than the known run-only ones is equal.
//! A script of the user's, or an option this module does not know, gets its
//! own data set, as before.
//!
//! Under `prepare = "once"` nothing restores the data, so a writer's changes
//! would be seen by the next workload: there, only workloads that do not
//! write share.

use super::{Configuration, PreparePolicy, Workload, WorkloadKind};

/// Built-in tests whose `prepare` is one shared program, by that program.
/// The legacy (sysbench 0.5) scripts share `legacy_common`'s prepare but
/// choose its data set (`L.dataset`), which is part of the name here.
const PREPARE_PROGRAM: &[(&str, &str)] = &[
    ("oltp_delete", "oltp_common"),
    ("oltp_point_select", "oltp_common"),
    ("oltp_read_only", "oltp_common"),
    ("oltp_read_write", "oltp_common"),
    ("oltp_update_index", "oltp_common"),
    ("oltp_update_non_index", "oltp_common"),
    ("oltp_write_only", "oltp_common"),
    ("select_random_points", "oltp_common"),
    ("select_random_ranges", "oltp_common"),
    ("delete", "legacy_common A"),
    ("oltp_complex_ro", "legacy_common A"),
    ("oltp_complex_rw", "legacy_common A"),
    ("oltp_simple", "legacy_common A"),
    ("select", "legacy_common A"),
    ("update_index", "legacy_common A"),
    ("update_non_index", "legacy_common A"),
    ("legacy_select_random_points", "legacy_common B"),
    ("legacy_select_random_ranges", "legacy_common B"),
];

/// Options these programs read only while running (never in `prepare`),
/// with `_` for `-`. Anything else must be equal for two workloads to share.
const RUN_ONLY_OPTIONS: &[&str] = &[
    // the OLTP scripts' transaction shape
    "range_size",
    "point_selects",
    "simple_ranges",
    "sum_ranges",
    "order_ranges",
    "distinct_ranges",
    "index_updates",
    "non_index_updates",
    "delete_inserts",
    "range_selects",
    "skip_trx",
    "reconnect",
    "random_points",
    "number_of_ranges",
    "delta",
    // the engine's run-time options
    "time",
    "events",
    "rate",
    "report_interval",
    "warmup_time",
    "percentile",
    "histogram",
    "forced_shutdown",
    "thread_init_timeout",
    "db_ps_mode",
    "mysql_ignore_errors",
    "pgsql_ignore_errors",
    "sqlite_ignore_errors",
    "verbosity",
];

/// What decides a workload's data: the prepare program and the options it
/// may read. `None`: unknown, the workload keeps a data set of its own.
fn data_identity(kind: &WorkloadKind) -> Option<(String, Vec<(String, String)>)> {
    match kind {
        WorkloadKind::Test { test, options } => {
            let program = PREPARE_PROGRAM.iter().find(|(t, _)| t == test)?.1;
            let mut data: Vec<(String, String)> = options
                .iter()
                .map(|(k, v)| (k.replace('-', "_"), v.clone()))
                .filter(|(k, _)| !RUN_ONLY_OPTIONS.contains(&k.as_str()))
                .collect();
            data.sort();
            Some((program.to_string(), data))
        }
        // The queries of one `tpch` workload already share its load; two
        // `tpch` workloads with the same load options share it too.
        WorkloadKind::Tpch { load, .. } => {
            let mut data: Vec<(String, String)> = load.iter().map(|l| (l.clone(), String::new())).collect();
            data.sort();
            Some(("tpch load".to_string(), data))
        }
        WorkloadKind::Command { .. } => None,
    }
}

/// Points each workload's `data` at the first earlier workload that loads
/// the same data (see the module comment), leaving the rest as they are.
pub fn share_prepared_data(workloads: &mut [Workload], configurations: &[Configuration]) {
    let restores_everywhere = configurations.iter().all(|c| c.prepare != PreparePolicy::Once);
    let identities: Vec<_> = workloads.iter().map(|w| data_identity(&w.kind)).collect();
    for i in 0..workloads.len() {
        if workloads[i].data != i || identities[i].is_none() {
            continue; // a TPC-H query after the first of its workload
        }
        let shares_with = (0..i).find(|&j| {
            workloads[j].data == j
                && identities[j] == identities[i]
                && (restores_everywhere || (!workloads[i].writes && !workloads[j].writes))
        });
        if let Some(j) = shares_with {
            for w in workloads.iter_mut() {
                if w.data == i {
                    w.data = j;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table above is a claim about the scripts: each listed test uses
    /// that program's `prepare` (requires it, sets the named data set, and
    /// does not replace the prepare command), and no other built-in
    /// requires a common module without being listed.
    #[test]
    fn the_prepare_table_matches_the_builtin_scripts() {
        for (name, source) in crate::workloads::ALL.iter().filter(|(n, _)| !n.ends_with("_common")) {
            let requires_oltp = source.contains("require(\"oltp_common\")");
            let requires_legacy = source.contains("require(\"legacy_common\")");
            let listed = PREPARE_PROGRAM.iter().find(|(t, _)| t == name).map(|(_, p)| *p);
            match listed {
                Some("oltp_common") => {
                    assert!(requires_oltp, "{name} is listed as oltp_common's but does not require it");
                    assert!(!source.contains("commands.prepare"), "{name} replaces the prepare command");
                    assert!(!source.contains("function prepare("), "{name} has its own prepare");
                }
                Some(p) => {
                    let set = p.strip_prefix("legacy_common ").expect("legacy data set");
                    assert!(requires_legacy, "{name} is listed as legacy_common's but does not require it");
                    assert!(source.contains(&format!("L.dataset = \"{set}\"")), "{name} does not load data set {set}");
                    assert!(!source.contains("function prepare("), "{name} has its own prepare");
                }
                None => assert!(
                    (!requires_oltp && !requires_legacy) || *name == "oltp_insert" || *name == "insert",
                    "{name} uses a common prepare but is not in PREPARE_PROGRAM"
                ),
            }
        }
    }

    fn spec(policy: &str, workloads: &str) -> crate::lab::spec::Spec {
        let text = format!(
            "[experiment]\nname = \"t\"\nthreads = [1]\ntime = 1\noptions = {{ tables = 2, table-size = 1000 }}\n\n\
             [[configuration]]\nname = \"a\"\nserver = \"sqlite\"\nprepare = \"{policy}\"\n\n{workloads}"
        );
        crate::lab::spec::parse(std::path::Path::new("spec.toml"), &text).expect("valid spec")
    }

    fn data(s: &crate::lab::spec::Spec) -> Vec<usize> {
        s.workloads.iter().map(|w| w.data).collect()
    }

    #[test]
    fn oltp_tests_with_equal_data_options_share_one_data_set() {
        let workloads = r#"
[[workload]]
test = "oltp_point_select"
[[workload]]
test = "oltp_read_only"
options = { range-size = 10, point_selects = 1 }
[[workload]]
test = "oltp_read_write"
options = { sqlite-ignore-errors = "busy" }
[[workload]]
name = "bigger"
test = "oltp_read_only"
options = { table-size = 2000 }
[[workload]]
name = "skewed"
test = "oltp_point_select"
options = { rand-type = "pareto" }
[[workload]]
test = "oltp_insert"
[[workload]]
test = "select"
[[workload]]
test = "oltp_simple"
[[workload]]
test = "legacy_select_random_points"
"#;
        // Under "restore" a writer shares too: its changes are restored away.
        assert_eq!(data(&spec("restore", workloads)), [0, 0, 0, 3, 4, 5, 6, 6, 8]);
        // Under "once" nothing restores: only readers share (select and
        // oltp_simple are 0.5-era readers).
        assert_eq!(data(&spec("once", workloads)), [0, 0, 2, 3, 4, 5, 6, 6, 8]);
    }

    #[test]
    fn scripts_commands_and_unknown_options_keep_their_own_data() {
        let workloads = r#"
[[workload]]
test = "oltp_read_only"
[[workload]]
name = "other-db"
test = "oltp_read_only"
options = { sqlite-db = "other.db" }
[[workload]]
name = "cmd"
command = ["true"]
metrics = { tps = "tps ([0-9]+)" }
[[workload]]
name = "cmd2"
command = ["true"]
metrics = { tps = "tps ([0-9]+)" }
"#;
        assert_eq!(data(&spec("restore", workloads)), [0, 1, 2, 3]);
    }

    #[test]
    fn tpch_workloads_with_the_same_load_share_it() {
        let workloads = r#"
[[workload]]
name = "x"
tpch = { sf = 0.01, queries = "1,6" }
[[workload]]
name = "y"
tpch = { sf = 0.01, queries = "3" }
[[workload]]
name = "z"
tpch = { sf = 0.02, queries = "3" }
"#;
        assert_eq!(data(&spec("restore", workloads)), [0, 0, 0, 3]);
    }
}
