//! What a server counts while it runs one query, per engine.
//!
//! * MariaDB/MySQL: the session's `Handler_*`, `Created_tmp_*`, `Sort_*`,
//!   `Select_*` and `Rows_*` status variables and the global `Innodb_*`
//!   ones, read before and after the query. perfrun ran `FLUSH STATUS`
//!   first; that needs the RELOAD privilege and resets global counters
//!   other tools watch, so the difference is taken instead. Reading status
//!   is itself a statement that moves some of these counters (its result
//!   goes through a temporary table), so [`Probe::connect`] measures what
//!   one before/after pair adds with nothing between them and that is
//!   subtracted: a query's `Created_tmp_tables` delta is its own.
//!   Global `Innodb_*` deltas also hold whatever else the server did
//!   meanwhile (other sessions, purge, flushing): compare on a quiet server.
//! * PostgreSQL: the `pg_stat_statements` columns (calls, rows, shared,
//!   local and temp blocks, WAL, server execution time) summed over the
//!   user's statements in the database, before and after, when the
//!   extension is installed and loaded; and, once per query after its
//!   executions, `EXPLAIN (ANALYZE, BUFFERS)`'s figures as `Plan_*`
//!   variables (a separate, warm execution).
//! * SQLite: no counters.
//!
//! Every counter is a number; a status variable whose value is not one
//! (e.g. `Innodb_buffer_pool_load_status`) is left out.

use crate::driver::{Connection, Outcome};
use std::collections::BTreeMap;

/// Counter values by name.
pub type Counters = BTreeMap<String, f64>;

/// Session status prefixes read on MariaDB/MySQL (global: `Innodb_`).
const MYSQL_SESSION_PREFIXES: &[&str] = &["Handler_", "Created_tmp_", "Sort_", "Select_", "Rows_"];

/// How counters are read on one connection.
pub enum Probe {
    /// MariaDB/MySQL, with what one status read adds by itself.
    Mysql {
        /// Per variable, the delta of a before/after pair with no query between.
        overhead: Counters,
    },
    /// PostgreSQL; `pgss`: the `pg_stat_statements` snapshot query, when the
    /// extension can be read.
    Pgsql {
        /// See the variant.
        pgss: Option<(String, Vec<&'static str>)>,
    },
    /// No counters (SQLite).
    None,
}

fn rows(conn: &mut dyn Connection, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    match conn.query(sql).map_err(|e| e.to_string())? {
        Outcome::Rows(rs) => Ok(rs.text_rows()),
        Outcome::Affected(_) => Ok(Vec::new()),
    }
}

fn name_value_pairs(rows: Vec<Vec<Option<String>>>, keep: impl Fn(&str) -> bool, out: &mut Counters) {
    for r in rows {
        if let [Some(name), Some(value)] = &r[..] {
            if keep(name) {
                if let Ok(v) = value.trim().parse::<f64>() {
                    out.insert(name.clone(), v);
                }
            }
        }
    }
}

impl Probe {
    /// Sets up counting on a fresh connection of `driver` (`mysql`,
    /// `pgsql`, `sqlite`). Returns the probe and, where counters are
    /// missing, a warning that says how to get them.
    pub fn connect(conn: &mut dyn Connection, driver: &str) -> Result<(Probe, Option<String>), String> {
        match driver {
            "mysql" => {
                let mut probe = Probe::Mysql { overhead: Counters::new() };
                // The smallest of three empty pairs: a background change of
                // a global counter must not be subtracted from every query.
                let mut overhead: Option<Counters> = None;
                for _ in 0..3 {
                    let before = probe.snapshot(conn)?;
                    let after = probe.snapshot(conn)?;
                    let d = difference(&before, &after);
                    overhead = Some(match overhead {
                        None => d,
                        Some(o) => {
                            o.into_iter().map(|(k, v)| (k.clone(), v.min(d.get(&k).copied().unwrap_or(0.0)))).collect()
                        }
                    });
                }
                if let Probe::Mysql { overhead: o } = &mut probe {
                    *o = overhead.unwrap_or_default();
                }
                Ok((probe, None))
            }
            "pgsql" => {
                let version: u32 = rows(conn, "SHOW server_version_num")?
                    .first()
                    .and_then(|r| r[0].as_deref()?.parse().ok())
                    .unwrap_or(0);
                let mut cols = vec![
                    "calls",
                    "rows",
                    "shared_blks_hit",
                    "shared_blks_read",
                    "shared_blks_dirtied",
                    "shared_blks_written",
                    "local_blks_hit",
                    "local_blks_read",
                    "temp_blks_read",
                    "temp_blks_written",
                ];
                if version >= 130000 {
                    cols.extend(["total_exec_time", "total_plan_time", "wal_records", "wal_fpi", "wal_bytes"]);
                } else {
                    cols.push("total_time");
                }
                // The snapshot leaves itself out (it mentions pg_stat_statements):
                // its own execution is counted between two snapshots.
                let sql = format!(
                    "SELECT {} FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                     AND userid = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND query NOT LIKE '%pg_stat_statements%'",
                    cols.iter().map(|c| format!("coalesce(sum({c}), 0)")).collect::<Vec<_>>().join(", ")
                );
                match rows(conn, &sql) {
                    Ok(_) => Ok((Probe::Pgsql { pgss: Some((sql, cols)) }, None)),
                    Err(e) => Ok((
                        Probe::Pgsql { pgss: None },
                        Some(format!(
                            "pg_stat_statements cannot be read ({e}); only EXPLAIN (ANALYZE, BUFFERS) counters (Plan_*) are collected. \
                             To get per-execution counters: shared_preload_libraries = 'pg_stat_statements' and CREATE EXTENSION pg_stat_statements"
                        )),
                    )),
                }
            }
            _ => Ok((Probe::None, None)),
        }
    }

    /// The counters now (before or after a query).
    pub fn snapshot(&self, conn: &mut dyn Connection) -> Result<Counters, String> {
        let mut out = Counters::new();
        match self {
            Probe::Mysql { .. } => {
                name_value_pairs(
                    rows(conn, "SHOW SESSION STATUS")?,
                    |n| MYSQL_SESSION_PREFIXES.iter().any(|p| n.starts_with(p)),
                    &mut out,
                );
                name_value_pairs(rows(conn, "SHOW GLOBAL STATUS LIKE 'Innodb\\_%'")?, |_| true, &mut out);
            }
            Probe::Pgsql { pgss: Some((sql, cols)) } => {
                if let Some(r) = rows(conn, sql)?.first() {
                    for (c, v) in cols.iter().zip(r) {
                        if let Some(v) = v.as_deref().and_then(|v| v.parse::<f64>().ok()) {
                            out.insert(capitalise(c), v);
                        }
                    }
                }
            }
            Probe::Pgsql { pgss: None } | Probe::None => {}
        }
        Ok(out)
    }

    /// The query's own counters: `after - before`, less the reading's own.
    pub fn delta(&self, before: &Counters, after: &Counters) -> Counters {
        let mut d = difference(before, after);
        if let Probe::Mysql { overhead } = self {
            for (k, v) in d.iter_mut() {
                *v -= overhead.get(k).copied().unwrap_or(0.0);
            }
        }
        d
    }

    /// The plan as text (for reading, estimates left out so that equal
    /// plans compare equal) and, on PostgreSQL, `EXPLAIN (ANALYZE,
    /// BUFFERS)`'s figures (this executes the query once more).
    pub fn plan(&self, conn: &mut dyn Connection, sql: &str, analyze: bool) -> (Option<String>, Counters) {
        let mut vars = Counters::new();
        match self {
            Probe::Mysql { .. } => {
                let text = rows(conn, &format!("EXPLAIN {sql}")).ok().map(|rs| {
                    rs.iter()
                        .map(|r| {
                            // The row estimate (and MySQL's `filtered`) change with
                            // statistics while the plan stays: MariaDB prints 10
                            // columns (rows at 8), MySQL 8 prints 12 (rows, filtered at 9, 10).
                            let skip: &[usize] = match r.len() {
                                10 => &[8],
                                12 => &[9, 10],
                                _ => &[],
                            };
                            r.iter()
                                .enumerate()
                                .filter(|(i, _)| !skip.contains(i))
                                .map(|(_, c)| c.as_deref().unwrap_or("NULL"))
                                .collect::<Vec<_>>()
                                .join("\t")
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                });
                (text, vars)
            }
            Probe::Pgsql { .. } => {
                let text = rows(conn, &format!("EXPLAIN (COSTS OFF) {sql}"))
                    .ok()
                    .map(|rs| rs.iter().map(|r| r[0].clone().unwrap_or_default()).collect::<Vec<_>>().join("\n"));
                if analyze {
                    if let Ok(rs) = rows(conn, &format!("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")) {
                        if let Some(json) = rs
                            .first()
                            .and_then(|r| r[0].as_deref())
                            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                        {
                            pg_plan_counters(&json, &mut vars);
                        }
                    }
                }
                (text, vars)
            }
            Probe::None => (None, vars),
        }
    }
}

/// `after - before` for every counter either side has (a missing one counts as 0).
fn difference(before: &Counters, after: &Counters) -> Counters {
    after.iter().map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0))).collect()
}

/// `shared_blks_hit` → `Shared_blks_hit`, as MariaDB names its variables.
fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// `Plan_*` variables from `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`: the
/// top node's buffers and rows (they include the children's), the
/// planning and execution times, and sums over all nodes.
fn pg_plan_counters(json: &serde_json::Value, out: &mut Counters) {
    let Some(root) = json.get(0) else { return };
    let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    for (key, name) in [("Planning Time", "Plan_planning_time_ms"), ("Execution Time", "Plan_execution_time_ms")] {
        if let Some(x) = num(root, key) {
            out.insert(name.into(), x);
        }
    }
    let Some(top) = root.get("Plan") else { return };
    for (key, name) in [
        ("Actual Rows", "Plan_actual_rows"),
        ("Shared Hit Blocks", "Plan_shared_hit_blocks"),
        ("Shared Read Blocks", "Plan_shared_read_blocks"),
        ("Temp Read Blocks", "Plan_temp_read_blocks"),
        ("Temp Written Blocks", "Plan_temp_written_blocks"),
    ] {
        if let Some(x) = num(top, key) {
            out.insert(name.into(), x);
        }
    }
    // Walk every node: counts, and per-loop figures times loops.
    let (mut nodes, mut seq_scans, mut removed, mut sort_disk_kb) = (0.0, 0.0, 0.0, 0.0);
    let mut stack = vec![top];
    while let Some(n) = stack.pop() {
        nodes += 1.0;
        if n.get("Node Type").and_then(|t| t.as_str()) == Some("Seq Scan") {
            seq_scans += 1.0;
        }
        let loops = num(n, "Actual Loops").unwrap_or(1.0);
        removed += (num(n, "Rows Removed by Filter").unwrap_or(0.0)
            + num(n, "Rows Removed by Join Filter").unwrap_or(0.0))
            * loops;
        if n.get("Sort Space Type").and_then(|t| t.as_str()) == Some("Disk") {
            sort_disk_kb += num(n, "Sort Space Used").unwrap_or(0.0);
        }
        if let Some(children) = n.get("Plans").and_then(|p| p.as_array()) {
            stack.extend(children.iter());
        }
    }
    out.insert("Plan_nodes".into(), nodes);
    out.insert("Plan_seq_scans".into(), seq_scans);
    out.insert("Plan_rows_removed_by_filter".into(), removed);
    out.insert("Plan_sort_disk_kb".into(), sort_disk_kb);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgresql_plan_figures_are_read_from_the_json_plan() {
        let plan: serde_json::Value = serde_json::from_str(
            r#"[{"Plan": {"Node Type": "Hash Join", "Actual Rows": 10, "Actual Loops": 1, "Shared Hit Blocks": 7, "Shared Read Blocks": 3,
                 "Plans": [{"Node Type": "Seq Scan", "Actual Loops": 2, "Rows Removed by Filter": 5},
                           {"Node Type": "Sort", "Sort Space Type": "Disk", "Sort Space Used": 120, "Plans": [{"Node Type": "Seq Scan"}]}]},
                 "Planning Time": 0.5, "Execution Time": 12.25}]"#,
        )
        .unwrap();
        let mut c = Counters::new();
        pg_plan_counters(&plan, &mut c);
        assert_eq!(c["Plan_nodes"], 4.0);
        assert_eq!(c["Plan_seq_scans"], 2.0);
        assert_eq!(c["Plan_rows_removed_by_filter"], 10.0, "per-loop figure times loops");
        assert_eq!(c["Plan_sort_disk_kb"], 120.0);
        assert_eq!(c["Plan_shared_read_blocks"], 3.0);
        assert_eq!(c["Plan_execution_time_ms"], 12.25);
        assert_eq!(capitalise("temp_blks_read"), "Temp_blks_read");
    }
}
