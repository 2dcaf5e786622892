//! The results store: one SQLite file holding every experiment, its
//! configurations, cells and runs with their figures, series, histograms,
//! samples and context. The schema is documented in docs/results-store.md
//! and versioned: `MIGRATIONS[i]` takes a store from version `i` to `i + 1`,
//! each in one transaction, so an old store is upgraded when it is opened.
//!
//! A run is written in one transaction when it ends, so a kill of dbbench
//! loses at most the run in flight and never leaves half a run behind.

use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// Schema migrations, oldest first. Never edit a released entry: add one.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE experiments (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL,
    spec_path       TEXT NOT NULL,
    spec_text       TEXT NOT NULL,
    spec_hash       TEXT NOT NULL,
    status          TEXT NOT NULL,          -- running | finished | interrupted
    started_at      TEXT NOT NULL,          -- RFC 3339 UTC
    finished_at     TEXT,
    dbbench_version TEXT NOT NULL,
    git_revision    TEXT,
    host            TEXT NOT NULL,          -- JSON: sysinfo::HostInfo
    settings        TEXT NOT NULL           -- JSON: repeats, durations, order, seed ...
);
CREATE TABLE configurations (
    id             INTEGER PRIMARY KEY,
    experiment_id  INTEGER NOT NULL REFERENCES experiments(id),
    position       INTEGER NOT NULL,        -- 0 = baseline
    name           TEXT NOT NULL,
    kind           TEXT NOT NULL,           -- mariadb | mysql | postgresql | external | sqlite
    definition     TEXT NOT NULL,           -- JSON, passwords removed
    server_version TEXT,
    variables      TEXT,                    -- JSON object: all server variables at first start
    UNIQUE (experiment_id, name)
);
CREATE TABLE cells (
    id               INTEGER PRIMARY KEY,
    experiment_id    INTEGER NOT NULL REFERENCES experiments(id),
    configuration_id INTEGER NOT NULL REFERENCES configurations(id),
    workload         TEXT NOT NULL,
    threads          INTEGER NOT NULL,
    UNIQUE (configuration_id, workload, threads)
);
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    cell_id       INTEGER NOT NULL REFERENCES cells(id),
    repeat        INTEGER NOT NULL,         -- 1-based
    seq           INTEGER NOT NULL,         -- position in the experiment's run order
    status        TEXT NOT NULL,            -- ok | failed | timeout
    error         TEXT,
    started_at    TEXT NOT NULL,
    ended_at      TEXT NOT NULL,
    argv          TEXT NOT NULL,            -- JSON array, passwords hidden
    seed          INTEGER NOT NULL,
    cache         TEXT NOT NULL,            -- dropped | lukewarm (not permitted) | warm (not requested or no restart)
    server_restarted INTEGER NOT NULL,
    overhead      TEXT NOT NULL,            -- JSON: seconds spent on restore/stop/start/hooks, copy stats
    time_s        REAL,                     -- measured seconds (excl. warmup)
    events        INTEGER,
    queries       INTEGER,
    reads         INTEGER,
    writes        INTEGER,
    other         INTEGER,
    errors        INTEGER,
    reconnects    INTEGER,
    tps           REAL,                     -- events per second
    qps           REAL,                     -- queries per second (all statements)
    rw_qps        REAL,                     -- (reads + writes) per second: the seeds' "q/s"
    latency_avg_ms REAL,
    latency_p95_ms REAL,
    latency_p99_ms REAL,
    latency_max_ms REAL,
    latency_measured_from TEXT,             -- actual_start | intended_start (under --rate)
    histogram     TEXT,                     -- HDR V2+deflate, base64, microseconds
    report        TEXT,                     -- the run's full --format=json document
    output_tail   TEXT,                     -- last lines of stdout/stderr of a failed run
    log_excerpt   TEXT,                     -- server error log written during a failed run
    UNIQUE (cell_id, repeat)
);
CREATE TABLE run_metrics (                  -- named figures of command workloads (and extras)
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name   TEXT NOT NULL,
    value  REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE run_intervals (                -- per --report-interval tick, this interval only
    run_id         INTEGER NOT NULL REFERENCES runs(id),
    time_s         REAL NOT NULL,
    threads_running INTEGER,
    tps            REAL,
    qps            REAL,
    errors         INTEGER,
    reconnects     INTEGER,
    latency_avg_ms REAL,
    latency_p95_ms REAL,
    latency_max_ms REAL,
    PRIMARY KEY (run_id, time_s)
);
CREATE TABLE samples (                      -- OS and server status samples during a run
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    source  TEXT NOT NULL,                  -- os | server
    time_s  REAL NOT NULL,                  -- since the run's start
    data    TEXT NOT NULL                   -- JSON object
);
CREATE INDEX samples_run ON samples(run_id, source, time_s);
CREATE TABLE events (                       -- lab events worth keeping: prepares, restores, crashes, warnings
    id            INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    at            TEXT NOT NULL,
    configuration TEXT,
    workload      TEXT,
    kind          TEXT NOT NULL,
    seconds       REAL,
    detail        TEXT NOT NULL             -- JSON
);
"#];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// An open results store.
pub struct Store {
    conn: Connection,
}

/// What a finished run writes.
#[derive(Debug, Default)]
pub struct RunRecord {
    /// The run's cell.
    pub cell_id: i64,
    /// 1-based repeat.
    pub repeat: u32,
    /// Position in the run order.
    pub seq: u32,
    /// ok | failed | timeout.
    pub status: String,
    /// One line on why the run failed.
    pub error: Option<String>,
    /// RFC 3339 times.
    pub started_at: String,
    /// RFC 3339 times.
    pub ended_at: String,
    /// argv, passwords hidden.
    pub argv: Vec<String>,
    /// `--rand-seed` of the run.
    pub seed: u64,
    /// dropped | lukewarm | warm.
    pub cache: String,
    /// Whether the server was (re)started for this run.
    pub server_restarted: bool,
    /// Lab overhead (JSON object).
    pub overhead: serde_json::Value,
    /// The run's JSON report (test workloads).
    pub report: Option<serde_json::Value>,
    /// Named metrics (command workloads).
    pub metrics: Vec<(String, f64)>,
    /// OS samples `(time_s, json)`.
    pub os_samples: Vec<(f64, serde_json::Value)>,
    /// Server status samples `(time_s, json)`.
    pub server_samples: Vec<(f64, serde_json::Value)>,
    /// Tail of the run's output, for failed runs.
    pub output_tail: Option<String>,
    /// Server log written during the run, for failed runs.
    pub log_excerpt: Option<String>,
}

/// A stored run: (configuration, workload, threads, repeat, status).
pub type StoredRun = (String, String, u32, u32, String);

/// An experiment's row, as `lab run --resume` needs it.
#[derive(Debug)]
pub struct ExperimentRow {
    /// Row id.
    pub id: i64,
    /// running | finished | interrupted.
    pub status: String,
    /// Hash of the spec text it was started with.
    pub spec_hash: String,
}

fn now() -> String {
    crate::lab::rfc3339_now()
}

impl Store {
    /// Opens (creating and migrating as needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Store, String> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.is_dir() {
                std::fs::create_dir_all(dir).map_err(|e| format!("results store {}: cannot create its directory: {e}", path.display()))?;
            }
        }
        let conn = Connection::open(path).map_err(|e| format!("results store {}: cannot open: {e}", path.display()))?;
        let store = Store { conn };
        store.migrate().map_err(|e| format!("results store {}: {e}", path.display()))?;
        Ok(store)
    }

    fn migrate(&self) -> Result<(), String> {
        let c = &self.conn;
        // WAL: readers (a report while a lab runs) never block the writer.
        c.pragma_update(None, "journal_mode", "wal").map_err(|e| e.to_string())?;
        c.pragma_update(None, "foreign_keys", "on").map_err(|e| e.to_string())?;
        c.busy_timeout(std::time::Duration::from_secs(30)).map_err(|e| e.to_string())?;
        let version: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(|e| e.to_string())?;
        if version > SCHEMA_VERSION {
            return Err(format!(
                "schema version {version} is newer than this dbbench understands ({SCHEMA_VERSION}); use a newer dbbench"
            ));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = c.unchecked_transaction().map_err(|e| e.to_string())?;
            tx.execute_batch(sql).map_err(|e| format!("migration to version {}: {e}", i + 1))?;
            tx.pragma_update(None, "user_version", (i + 1) as i64).map_err(|e| e.to_string())?;
            tx.commit().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The newest experiment named `name`, if any.
    pub fn latest_experiment(&self, name: &str) -> Result<Option<ExperimentRow>, String> {
        self.conn
            .query_row(
                "SELECT id, status, spec_hash FROM experiments WHERE name = ?1 ORDER BY id DESC LIMIT 1",
                params![name],
                |r| Ok(ExperimentRow { id: r.get(0)?, status: r.get(1)?, spec_hash: r.get(2)? }),
            )
            .optional()
            .map_err(|e| e.to_string())
    }

    /// Creates an experiment row; returns its id.
    #[allow(clippy::too_many_arguments)]
    pub fn create_experiment(
        &self,
        name: &str,
        description: &str,
        spec_path: &str,
        spec_text: &str,
        spec_hash: &str,
        git_revision: Option<&str>,
        host: &serde_json::Value,
        settings: &serde_json::Value,
    ) -> Result<i64, String> {
        self.conn
            .execute(
                "INSERT INTO experiments (name, description, spec_path, spec_text, spec_hash, status, started_at, dbbench_version, git_revision, host, settings)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, ?8, ?9, ?10)",
                params![name, description, spec_path, spec_text, spec_hash, now(), crate::VERSION, git_revision, host.to_string(), settings.to_string()],
            )
            .map_err(|e| e.to_string())?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Sets an experiment's status (and its end time when finished).
    pub fn set_experiment_status(&self, id: i64, status: &str) -> Result<(), String> {
        let finished = (status == "finished").then(now);
        self.conn
            .execute("UPDATE experiments SET status = ?1, finished_at = ?2 WHERE id = ?3", params![status, finished, id])
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// The id of a configuration row, created if missing.
    pub fn configuration(&self, experiment: i64, position: usize, name: &str, kind: &str, definition: &serde_json::Value) -> Result<i64, String> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO configurations (experiment_id, position, name, kind, definition) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![experiment, position as i64, name, kind, definition.to_string()],
            )
            .map_err(|e| e.to_string())?;
        self.conn
            .query_row("SELECT id FROM configurations WHERE experiment_id = ?1 AND name = ?2", params![experiment, name], |r| r.get(0))
            .map_err(|e| e.to_string())
    }

    /// Records a configuration's server version and variables (first start only).
    pub fn set_server_info(&self, configuration: i64, version: &str, variables: &serde_json::Value) -> Result<(), String> {
        self.conn
            .execute(
                "UPDATE configurations SET server_version = ?1, variables = ?2 WHERE id = ?3 AND server_version IS NULL",
                params![version, variables.to_string(), configuration],
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// The id of a cell row, created if missing.
    pub fn cell(&self, experiment: i64, configuration: i64, workload: &str, threads: u32) -> Result<i64, String> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO cells (experiment_id, configuration_id, workload, threads) VALUES (?1, ?2, ?3, ?4)",
                params![experiment, configuration, workload, threads],
            )
            .map_err(|e| e.to_string())?;
        self.conn
            .query_row(
                "SELECT id FROM cells WHERE configuration_id = ?1 AND workload = ?2 AND threads = ?3",
                params![configuration, workload, threads],
                |r| r.get(0),
            )
            .map_err(|e| e.to_string())
    }

    /// Whether (cell, repeat) already has a run.
    pub fn run_exists(&self, cell: i64, repeat: u32) -> Result<bool, String> {
        self.conn
            .query_row("SELECT 1 FROM runs WHERE cell_id = ?1 AND repeat = ?2", params![cell, repeat], |_| Ok(()))
            .optional()
            .map(|o| o.is_some())
            .map_err(|e| e.to_string())
    }

    /// Records a lab event (prepare, snapshot, crash, warning).
    pub fn event(&self, experiment: i64, configuration: Option<&str>, workload: Option<&str>, kind: &str, seconds: Option<f64>, detail: &serde_json::Value) -> Result<(), String> {
        self.conn
            .execute(
                "INSERT INTO events (experiment_id, at, configuration, workload, kind, seconds, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![experiment, now(), configuration, workload, kind, seconds, detail.to_string()],
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Whether an event of `kind` was recorded for (configuration, workload).
    pub fn has_event(&self, experiment: i64, configuration: &str, workload: &str, kind: &str) -> Result<bool, String> {
        self.conn
            .query_row(
                "SELECT 1 FROM events WHERE experiment_id = ?1 AND configuration = ?2 AND workload = ?3 AND kind = ?4 LIMIT 1",
                params![experiment, configuration, workload, kind],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(|e| e.to_string())
    }

    /// Writes a finished run and everything measured during it, atomically.
    pub fn insert_run(&self, r: &RunRecord) -> Result<i64, String> {
        let tx = self.conn.unchecked_transaction().map_err(|e| e.to_string())?;
        let rep = r.report.as_ref();
        let num = |path: &[&str]| -> Option<f64> {
            let mut v = rep?;
            for p in path {
                v = v.get(p)?;
            }
            v.as_f64()
        };
        let int = |path: &[&str]| num(path).map(|f| f as i64);
        let time_s = num(&["total_time_s"]);
        let rw = match (num(&["counters", "reads"]), num(&["counters", "writes"]), time_s) {
            (Some(a), Some(b), Some(t)) if t > 0.0 => Some((a + b) / t),
            _ => None,
        };
        let histogram = rep.and_then(|v| v.pointer("/latency/histogram")).and_then(|h| h.as_str()).map(str::to_string);
        tx.execute(
            "INSERT INTO runs (cell_id, repeat, seq, status, error, started_at, ended_at, argv, seed, cache, server_restarted, overhead,
                time_s, events, queries, reads, writes, other, errors, reconnects, tps, qps, rw_qps,
                latency_avg_ms, latency_p95_ms, latency_p99_ms, latency_max_ms, latency_measured_from, histogram, report, output_tail, log_excerpt)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32)",
            params![
                r.cell_id,
                r.repeat,
                r.seq,
                r.status,
                r.error,
                r.started_at,
                r.ended_at,
                serde_json::to_string(&r.argv).unwrap_or_default(),
                r.seed as i64,
                r.cache,
                r.server_restarted,
                r.overhead.to_string(),
                time_s,
                int(&["counters", "events"]),
                int(&["counters", "queries"]),
                int(&["counters", "reads"]),
                int(&["counters", "writes"]),
                int(&["counters", "other"]),
                int(&["counters", "errors"]),
                int(&["counters", "reconnects"]),
                num(&["rates_per_s", "events"]),
                num(&["rates_per_s", "queries"]),
                rw,
                num(&["latency", "avg_ms"]),
                num(&["latency", "percentiles_ms", "95"]),
                num(&["latency", "percentiles_ms", "99"]),
                num(&["latency", "max_ms"]),
                rep.and_then(|v| v.get("latency_measured_from")).and_then(|v| v.as_str()),
                histogram,
                rep.map(|v| {
                    // The histogram has its own column; do not store it twice.
                    let mut v = v.clone();
                    if let Some(l) = v.get_mut("latency").and_then(|l| l.as_object_mut()) {
                        l.remove("histogram");
                    }
                    v.to_string()
                }),
                r.output_tail,
                r.log_excerpt,
            ],
        )
        .map_err(|e| e.to_string())?;
        let run_id = tx.last_insert_rowid();
        for (name, value) in &r.metrics {
            tx.execute("INSERT OR REPLACE INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)", params![run_id, name, value])
                .map_err(|e| e.to_string())?;
        }
        if let Some(intervals) = rep.and_then(|v| v.get("intervals")).and_then(|v| v.as_array()) {
            let mut st = tx
                .prepare(
                    "INSERT OR REPLACE INTO run_intervals (run_id, time_s, threads_running, tps, qps, errors, reconnects, latency_avg_ms, latency_p95_ms, latency_max_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(|e| e.to_string())?;
            for iv in intervals {
                let f = |p: &str| iv.pointer(p).and_then(|v| v.as_f64());
                st.execute(params![
                    run_id,
                    f("/time_s"),
                    f("/threads_running").map(|x| x as i64),
                    f("/tps"),
                    f("/qps"),
                    f("/errors").map(|x| x as i64),
                    f("/reconnects").map(|x| x as i64),
                    f("/latency_ms/avg"),
                    f("/latency_ms/percentiles/95"),
                    f("/latency_ms/max"),
                ])
                .map_err(|e| e.to_string())?;
            }
        }
        {
            let mut st = tx.prepare("INSERT INTO samples (run_id, source, time_s, data) VALUES (?1, ?2, ?3, ?4)").map_err(|e| e.to_string())?;
            for (source, samples) in [("os", &r.os_samples), ("server", &r.server_samples)] {
                for (t, data) in samples {
                    st.execute(params![run_id, source, t, data.to_string()]).map_err(|e| e.to_string())?;
                }
            }
        }
        tx.commit().map_err(|e| e.to_string())?;
        Ok(run_id)
    }

    /// Runs recorded for an experiment, in run order.
    pub fn runs_of(&self, experiment: i64) -> Result<Vec<StoredRun>, String> {
        let mut st = self
            .conn
            .prepare(
                "SELECT c.name, cl.workload, cl.threads, r.repeat, r.status FROM runs r JOIN cells cl ON r.cell_id = cl.id
                 JOIN configurations c ON cl.configuration_id = c.id WHERE cl.experiment_id = ?1 ORDER BY r.seq",
            )
            .map_err(|e| e.to_string())?;
        let rows = st
            .query_map(params![experiment], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .map_err(|e| e.to_string())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())
    }

    /// The compared figure of every ok run of one workload, for the summary
    /// table: (configuration, threads, value), baseline first. `metric`
    /// None means transactions per second (test workloads); else the named
    /// metric of a command workload.
    pub fn figures(&self, experiment: i64, workload: &str, metric: Option<&str>) -> Result<Vec<(String, u32, f64)>, String> {
        let mut st = self
            .conn
            .prepare(
                "SELECT c.name, cl.threads,
                        CASE WHEN ?3 IS NULL THEN r.tps ELSE (SELECT m.value FROM run_metrics m WHERE m.run_id = r.id AND m.name = ?3) END
                 FROM runs r JOIN cells cl ON r.cell_id = cl.id JOIN configurations c ON cl.configuration_id = c.id
                 WHERE cl.experiment_id = ?1 AND cl.workload = ?2 AND r.status = 'ok' ORDER BY c.position, r.seq",
            )
            .map_err(|e| e.to_string())?;
        let rows = st
            .query_map(params![experiment, workload, metric], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, Option<f64>>(2)?)))
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for row in rows {
            let (c, t, v) = row.map_err(|e| e.to_string())?;
            if let Some(v) = v {
                out.push((c, t, v));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_documented() {
        let doc = include_str!("../../docs/results-store.md");
        assert!(doc.contains(&format!("schema version {SCHEMA_VERSION}")));
        for sql in MIGRATIONS {
            for part in sql.split("CREATE TABLE ").skip(1) {
                let table = part.split_whitespace().next().unwrap();
                assert!(doc.contains(&format!("### {table}")), "docs/results-store.md lacks table {table}");
            }
        }
    }

    #[test]
    fn migrates_and_round_trips_a_run() {
        let dir = std::env::temp_dir().join(format!("dbbench-store-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("r.sqlite");
        let s = Store::open(&path).unwrap();
        let e = s.create_experiment("x", "", "x.toml", "", "h", None, &serde_json::json!({}), &serde_json::json!({})).unwrap();
        let c = s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap();
        assert_eq!(s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap(), c);
        let cell = s.cell(e, c, "w", 4).unwrap();
        let report = serde_json::json!({
            "total_time_s": 2.0,
            "counters": {"events": 10, "queries": 20, "reads": 14, "writes": 4, "other": 2, "errors": 0, "reconnects": 0},
            "rates_per_s": {"events": 5.0, "queries": 10.0},
            "latency": {"avg_ms": 1.5, "max_ms": 3.0, "percentiles_ms": {"95": 2.5}, "histogram": "HIST"},
            "intervals": [{"time_s": 1.0, "tps": 5.0, "qps": 10.0, "latency_ms": {"avg": 1.0, "max": 2.0, "percentiles": {"95": 2.0}}}],
        });
        let rec = RunRecord {
            cell_id: cell,
            repeat: 1,
            status: "ok".into(),
            report: Some(report),
            os_samples: vec![(1.0, serde_json::json!({"cpu_user_pct": 3.0}))],
            ..Default::default()
        };
        let id = s.insert_run(&rec).unwrap();
        assert!(s.run_exists(cell, 1).unwrap());
        assert!(!s.run_exists(cell, 2).unwrap());
        assert!(s.insert_run(&rec).is_err(), "a (cell, repeat) is stored once");
        let (rw, hist, rep): (f64, String, String) = s
            .conn
            .query_row("SELECT rw_qps, histogram, report FROM runs WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        assert_eq!(rw, 9.0);
        assert_eq!(hist, "HIST");
        assert!(!rep.contains("HIST"));
        assert_eq!(s.figures(e, "w", None).unwrap(), vec![("base".to_string(), 4, 5.0)]);
        assert!(s.figures(e, "w", Some("tps")).unwrap().is_empty());
        drop(s);
        // Reopening an up-to-date store changes nothing.
        let s = Store::open(&path).unwrap();
        assert_eq!(s.runs_of(e).unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
