//! The results store: every experiment, its configurations, cells and runs
//! with their figures, series, histograms, samples and context. It lives in
//! a SQLite file (the default), or, for a team sharing one store, in a
//! PostgreSQL or MariaDB/MySQL database given by URL. The schema is
//! documented in docs/results-store.md and versioned: `MIGRATIONS[i]` takes
//! a store from version `i` to `i + 1`, so an old store is upgraded when it
//! is opened.
//!
//! A run is written in one transaction when it ends, on every backend, so a
//! kill of dbbench loses at most the run in flight and never leaves half a
//! run behind.
//!
//! The three backends share one small SQL layer: statements are written
//! once, in SQLite's syntax with `?` placeholders and `"double-quoted"`
//! identifiers, and `translate` turns them into each server's dialect;
//! values cross it as `Val`. The schema is written once too (`MIGRATIONS`,
//! SQLite types) and `migration_statements` rewrites its DDL per dialect.

mod backend;
mod error;
mod location;
#[macro_use]
mod sql;
mod read;
mod write;

use backend::Backend;
pub use error::StoreErrorKind;
pub use location::*;
pub use read::*;

use crate::tpch::document::TpchDocument;
use std::cell::RefCell;

/// Schema migrations, oldest first. Never edit a released entry: add one.
///
/// They are written in the neutral dialect `migration_statements`
/// translates: `CREATE TABLE` (column types `INTEGER`, `REAL`, `TEXT`;
/// `INTEGER PRIMARY KEY` is the row id), `CREATE INDEX`, and
/// `ALTER TABLE .. ADD COLUMN`; anything else must mean the same in SQLite,
/// PostgreSQL and MariaDB/MySQL. On MariaDB/MySQL a `TEXT` column becomes
/// `VARCHAR(255)` when the same migration puts it in a key or index (a
/// `LONGTEXT` cannot be indexed whole), else `LONGTEXT`; so a later
/// migration must not index a text column an earlier one created.
const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    r#"
ALTER TABLE runs ADD COLUMN server_product TEXT;  -- MariaDB | MySQL | Percona Server | PostgreSQL | SQLite, as the server said
ALTER TABLE runs ADD COLUMN server_version TEXT;  -- the server's version string when the run ran
"#,
    r#"
ALTER TABLE runs ADD COLUMN client_cpus TEXT;  -- Cpus_allowed_list of the run's child, read back at its start
ALTER TABLE runs ADD COLUMN server_cpus TEXT;  -- Cpus_allowed_list of the managed server during the run
"#,
    r#"
CREATE TABLE run_shards (                   -- the shards of a sharded run (clients = { shards = N }), one row each
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    shard   INTEGER NOT NULL,               -- 0-based shard index
    summary TEXT NOT NULL,                  -- JSON: the merged report's row for it (host, threads, events, start skew, status)
    result  TEXT,                           -- JSON: the shard's own result (docs/scale-out.md); NULL when it wrote none
    PRIMARY KEY (run_id, shard)
);
"#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The environment variable that may hold a server store's password, so
/// that it need not be written in a spec or on a command line.
pub const PASSWORD_ENV: &str = "DBBENCH_STORE_PASSWORD";

/// An open results store.
pub struct Store {
    /// A `RefCell` because the public API takes `&self` (the runner shares
    /// the store) while server clients need `&mut` for every statement.
    db: RefCell<Backend>,
    /// Where the store is, for messages: the path, or the URL with its
    /// password replaced by `<hidden>`.
    location: String,
    /// `user:password@` exactly as written in the store URL, so that the
    /// password is hidden in texts the store keeps (the spec text may hold
    /// the URL).
    url_auth: Option<(String, String)>,
}

/// The document a run's child printed: the store takes a load-engine
/// run's figures from it into columns and keeps either whole in `report`.
#[derive(Debug, Clone)]
pub enum ChildDocument {
    /// `dbbench <test> run --format=json`.
    Run(Box<crate::run_document::RunDocument>),
    /// `dbbench tpch query N --format=json`.
    Tpch(Box<TpchDocument>),
}

/// How a copy was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CopyMethod {
    /// Full copy in which every regular file was a reflink (no data written).
    Reflink,
    /// Full copy in which at least one file's data was copied.
    Copy,
    /// Incremental restore into an existing directory (only differing files copied).
    Sync,
}

/// What a snapshot or restore did, for the results store (lab overhead).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CopyStats {
    /// How the copy was made.
    pub method: CopyMethod,
    /// Entries other than directories in the source tree (regular files, symlinks, FIFOs; sockets excluded).
    pub files: u64,
    /// Of `files`, how many were (re)created at the destination.
    pub files_copied: u64,
    /// Logical bytes of the regular files (re)created: a reflinked file counts its size though no data was written.
    pub bytes_copied: u64,
    /// Entries other than directories removed from the destination because the source does not have them.
    pub files_removed: u64,
    /// Wall time of the whole operation, final `syncfs` included.
    pub seconds: f64,
}

/// The lab's own time around one run (`runs.overhead`, a JSON object),
/// seconds. A part is there only when it happened to this run (a key left
/// out, not null, otherwise): that absence is why every field reads as
/// optional. So that a renamed part is still an error, not a part read as
/// absent, unknown keys are refused (every key any build wrote is here).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overhead {
    /// All the run waited for before its hooks: stop, restore, start, prepare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_s: Option<f64>,
    /// Stopping the previous server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_s: Option<f64>,
    /// Restoring the data directory from its snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_s: Option<f64>,
    /// What that restore copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<CopyStats>,
    /// Preparing the data, when that fell to this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare_s: Option<f64>,
    /// Initialising a data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialize_s: Option<f64>,
    /// Starting the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    /// The before_test and before_run hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_run_s: Option<f64>,
    /// The after_run and after_test hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_run_s: Option<f64>,
    /// Process ids of other labs seen measuring on the host during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_labs: Option<Vec<u32>>,
}

/// One shard of a sharded run, as the store keeps it (table `run_shards`).
#[derive(Clone, Debug, Default)]
pub struct ShardRow {
    /// 0-based shard index.
    pub index: u32,
    /// The merged report's row for this shard (`shards[i]` of `dbbench merge --json`).
    pub summary: serde_json::Value,
    /// The shard's own result document; None when it wrote none.
    pub result: Option<String>,
}

/// How a run ended; `runs.status` holds [`RunStatus::as_str`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunStatus {
    /// It ran and its figures are the run's.
    Ok,
    /// Something failed: the error says what. The default: a record
    /// nobody marked ok is never counted as a result.
    #[default]
    Failed,
    /// It was stopped at its time limit (the lab's `run_timeout`, or a
    /// TPC-H query at its own `timeout`: a censored time).
    Timeout,
}

impl RunStatus {
    /// A timeout stays one whatever failed after it; otherwise any error fails the run.
    pub fn of(timed_out: bool, failed: bool) -> RunStatus {
        match (timed_out, failed) {
            (true, _) => RunStatus::Timeout,
            (false, true) => RunStatus::Failed,
            (false, false) => RunStatus::Ok,
        }
    }

    /// The store's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Timeout => "timeout",
        }
    }
}

/// The page cache before a run, as `runs.cache` spells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheState {
    /// Dropped before the run (`drop_caches = true`, as root).
    Dropped,
    /// Dropping was asked for but refused (not root): the data may be cached.
    Lukewarm,
    /// Not dropped: whatever earlier runs left cached.
    #[default]
    Warm,
}

impl CacheState {
    /// The store's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Dropped => "dropped",
            CacheState::Lukewarm => "lukewarm",
            CacheState::Warm => "warm",
        }
    }
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
    /// How it ended.
    pub status: RunStatus,
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
    /// The page cache before it.
    pub cache: CacheState,
    /// Whether the server was (re)started for this run.
    pub server_restarted: bool,
    /// Lab overhead.
    pub overhead: Overhead,
    /// The child's JSON report (test and TPC-H workloads).
    pub report: Option<ChildDocument>,
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
    /// A sharded run's shards (`clients = { shards = N }`), in index order.
    pub shards: Vec<ShardRow>,
    /// The product and version of the server the run ran on, as it said
    /// (`lab::product`); None when no server answered.
    pub server: Option<Product>,
    /// The CPUs the run's child (dbbench or the command) was allowed, read
    /// back from /proc/PID/status `Cpus_allowed_list` at its start.
    pub client_cpus: Option<String>,
    /// The same for the managed server during the run; None for other targets.
    pub server_cpus: Option<String>,
}

/// A server product and its version string, as the server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    /// `MariaDB`, `MySQL`, `Percona Server`, `PostgreSQL` or `SQLite`.
    pub name: String,
    /// The server's own version string (`10.11.19-MariaDB-0+deb12u1`,
    /// `8.0.36`, `15.14 (Debian 15.14-0+deb12u1)`, `3.46.0`).
    pub version: String,
}

/// An experiment's row, as `lab run --resume` needs it.
#[derive(Debug)]
pub struct ExperimentRow {
    /// Row id.
    pub id: i64,
    /// running | finished | interrupted | abandoned.
    pub status: String,
    /// Hash of the spec text it was started with.
    pub spec_hash: String,
}

fn now() -> String {
    crate::timestamp::rfc3339_now()
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
}
