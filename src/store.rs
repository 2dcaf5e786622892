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

use crate::tpch::document::TpchDocument;
use rusqlite::Connection;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
pub enum Report {
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
    /// Lab overhead.
    pub overhead: Overhead,
    /// The child's JSON report (test and TPC-H workloads).
    pub report: Option<Report>,
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
    /// The product and version of the server the run ran on, as it said
    /// (`lab::product`); None when no server answered.
    pub server: Option<Product>,
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

// ------------------------------------------------------------------ locations

/// Whether a store location is a server URL rather than a file path.
pub fn is_url(location: &str) -> bool {
    location.contains("://")
}

/// A store location fit for messages: a URL's password becomes `<hidden>`
/// (dbbench's one redaction, `crate::secret::redact`).
pub fn redact(location: &str) -> String {
    crate::secret::redact(location)
}

/// Where a store lives.
#[derive(Debug, PartialEq)]
enum Location {
    File(PathBuf),
    Server(ServerUrl),
}

/// A parsed `postgresql://` or `mysql://` store URL.
#[derive(Debug, PartialEq)]
struct ServerUrl {
    dialect: Dialect,
    /// User and password as written (percent-encoded), for redaction.
    raw_user: String,
    raw_password: Option<String>,
    user: String,
    password: Option<String>,
    host: String,
    port: Option<u16>,
    db: String,
    /// PostgreSQL: the socket directory (`?host=`); MariaDB/MySQL: the
    /// socket file (`?socket=`).
    socket: Option<String>,
}

use crate::dsn::percent_decode;

fn parse_location(text: &str) -> Result<Location, String> {
    if !is_url(text) {
        return Ok(Location::File(PathBuf::from(text)));
    }
    let (scheme, rest) = text.split_once("://").unwrap_or_default();
    let dialect = match scheme {
        "postgresql" | "postgres" | "pgsql" => Dialect::Postgres,
        "mysql" | "mariadb" => Dialect::Mysql,
        s => {
            return Err(format!(
                "unknown scheme '{s}'; give a file path, postgresql://user@host/db or mysql://user@host/db"
            ))
        }
    };
    let example = match dialect {
        Dialect::Postgres => "postgresql://user[:password]@host[:port]/db[?host=/socket/dir]",
        _ => "mysql://user[:password]@host[:port]/db[?socket=/path]",
    };
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let Some((auth, hostdb)) = main.rsplit_once('@') else {
        return Err(format!("the URL names no user; use {example}"));
    };
    let (raw_user, raw_password) = match auth.split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (auth, None),
    };
    if raw_user.is_empty() {
        return Err(format!("the URL names no user; use {example}"));
    }
    let (hostport, db) = hostdb.split_once('/').unwrap_or((hostdb, ""));
    if db.is_empty() {
        return Err(format!("the URL names no database; use {example} (the database must exist)"));
    }
    // "[::1]:5432": an IPv6 literal keeps its colons.
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| format!("'{hostport}' lacks the closing ']'"))?;
        (h, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().map_err(|_| format!("port '{p}' is not a number from 0 to 65535"))?),
        None => None,
    };
    let mut socket = None;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        match (dialect, kv.split_once('=')) {
            (Dialect::Postgres, Some(("host", v))) | (Dialect::Mysql, Some(("socket", v))) => {
                socket = Some(percent_decode(v)?)
            }
            _ => return Err(format!("unknown URL parameter '{kv}'; use {example}")),
        }
    }
    Ok(Location::Server(ServerUrl {
        dialect,
        raw_user: raw_user.to_string(),
        raw_password: raw_password.map(str::to_string),
        user: percent_decode(raw_user)?,
        password: raw_password.map(percent_decode).transpose()?,
        host: if host.is_empty() { "localhost".to_string() } else { host.to_string() },
        port,
        db: percent_decode(db)?,
        socket,
    }))
}

// ------------------------------------------------------------------ the SQL layer

/// SQL dialects the store speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

/// A value crossing the SQL layer: a parameter or a result cell.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::Int(v as i64)
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Int(v as i64)
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Real(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}
impl From<&Option<String>> for Val {
    fn from(v: &Option<String>) -> Val {
        v.as_deref().into()
    }
}

/// Parameter lists: `vals![a, b]` is `[Val::from(a), Val::from(b)]`.
macro_rules! vals {
    ($($e:expr),* $(,)?) => { [$(Val::from($e)),*] };
}

impl Val {
    /// The value as an integer; servers may hand back another numeric type
    /// (or text for an expression) than SQLite does, so convert.
    fn int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            Val::Real(f) => Some(*f as i64),
            Val::Text(s) => s.trim().parse().ok(),
            Val::Null => None,
        }
    }
    fn real(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Real(f) => Some(*f),
            Val::Text(s) => s.trim().parse().ok(),
            Val::Null => None,
        }
    }
    fn text(&self) -> Option<String> {
        match self {
            Val::Int(i) => Some(i.to_string()),
            Val::Real(f) => Some(f.to_string()),
            Val::Text(s) => Some(s.clone()),
            Val::Null => None,
        }
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Val::Null => ValueRef::Null,
            Val::Int(i) => ValueRef::Integer(*i),
            Val::Real(f) => ValueRef::Real(*f),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// A result row.
type Row = Vec<Val>;

/// What a column value is, for messages.
fn describe(v: Option<&Val>) -> String {
    match v {
        None => "missing".into(),
        Some(Val::Null) => "NULL".into(),
        Some(Val::Int(n)) => format!("the integer {n}"),
        Some(Val::Real(x)) => format!("the number {x}"),
        Some(Val::Text(t)) => format!("the text '{t}'"),
    }
}

/// Column `i` of `row` as a required integer.
fn int_at(row: &Row, i: usize) -> Result<i64, String> {
    row.get(i).and_then(Val::int).ok_or_else(|| format!("column {} is {}, not an integer", i + 1, describe(row.get(i))))
}

/// Column `i` of `row` as a required text.
fn text_at(row: &Row, i: usize) -> Result<String, String> {
    row.get(i).and_then(Val::text).ok_or_else(|| format!("column {} is {}, not a text", i + 1, describe(row.get(i))))
}

/// Translates one statement written in the store's neutral syntax (SQLite's,
/// `?` placeholders, `"double-quoted"` identifiers for names a server
/// reserves, such as `repeat` and `reads` on MariaDB/MySQL, and
/// `INSERT OR IGNORE INTO`) into `dialect`. Text in single quotes is left
/// alone.
fn translate(dialect: Dialect, sql: &str) -> String {
    let sql = sql.trim();
    let full = match (dialect, sql.strip_prefix("INSERT OR IGNORE INTO ")) {
        (Dialect::Postgres, Some(rest)) => format!("INSERT INTO {rest} ON CONFLICT DO NOTHING"),
        // Not INSERT IGNORE: that also turns real errors (a value too long
        // for its column, a missing foreign key) into warnings. A no-op
        // update of the first listed column ignores only the duplicate.
        (Dialect::Mysql, Some(rest)) => {
            let first =
                rest.split_once('(').and_then(|(_, cols)| cols.split([',', ')']).next()).map(str::trim).unwrap_or("id");
            format!("INSERT INTO {rest} ON DUPLICATE KEY UPDATE {first} = {first}")
        }
        _ => sql.to_string(),
    };
    let mut out = String::with_capacity(full.len() + 16);
    let mut n = 0;
    let mut in_literal = false;
    for ch in full.chars() {
        match ch {
            '\'' => {
                // '' inside a literal toggles twice: still inside, as it should.
                in_literal = !in_literal;
                out.push(ch);
            }
            '?' if !in_literal && dialect == Dialect::Postgres => {
                n += 1;
                out.push_str(&format!("${n}"));
            }
            '"' if !in_literal && dialect == Dialect::Mysql => out.push('`'),
            _ => out.push(ch),
        }
    }
    out
}

/// An identifier quoted for `dialect` (every column in server DDL is
/// quoted: a name reserved on one server must not break its schema).
fn quote_ident(dialect: Dialect, name: &str) -> String {
    match dialect {
        Dialect::Sqlite => name.to_string(),
        Dialect::Postgres => format!("\"{name}\""),
        Dialect::Mysql => format!("`{name}`"),
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        parts.push(cur.trim().to_string());
    }
    parts
}

/// `(a, b)` → the names, from the first parenthesis of `s`.
fn paren_names(s: &str) -> Vec<String> {
    let inner = s.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(i, _)| i).unwrap_or("");
    inner.split(',').map(|n| n.trim().trim_matches('"').to_string()).filter(|n| !n.is_empty()).collect()
}

/// `prefix (a, b) rest` with the names quoted for `dialect`.
fn quote_paren_list(dialect: Dialect, s: &str) -> String {
    match s.split_once('(').and_then(|(head, r)| r.split_once(')').map(|(_, tail)| (head, tail))) {
        Some((head, tail)) => {
            let names: Vec<String> = paren_names(s).iter().map(|n| quote_ident(dialect, n)).collect();
            format!("{}({}){}", head, names.join(", "), tail)
        }
        None => s.to_string(),
    }
}

/// One column definition (`name TYPE constraints`) in `dialect`; `key`:
/// the column is part of a key or index.
fn column_ddl(dialect: Dialect, def: &str, key: bool) -> String {
    let mut words = def.splitn(3, char::is_whitespace);
    let name = words.next().unwrap_or("").trim_matches('"');
    let ty = words.next().unwrap_or("");
    let rest = words.next().unwrap_or("").trim();
    let upper_rest = rest.to_ascii_uppercase();
    let row_id = upper_rest.starts_with("PRIMARY KEY");
    let new_ty = match (ty.to_ascii_uppercase().as_str(), dialect) {
        // SQLite's INTEGER PRIMARY KEY is the row id; servers need a sequence.
        ("INTEGER", Dialect::Postgres) if row_id => "BIGSERIAL",
        ("INTEGER", Dialect::Mysql) if row_id => "BIGINT AUTO_INCREMENT",
        // 64-bit everywhere: SQLite integers are, and one Rust type (i64)
        // binds to every integer column.
        ("INTEGER", _) => "BIGINT",
        ("REAL", Dialect::Postgres) => "DOUBLE PRECISION",
        ("REAL", Dialect::Mysql) => "DOUBLE",
        ("TEXT", Dialect::Mysql) if key || upper_rest.contains("UNIQUE") || row_id => "VARCHAR(255)",
        ("TEXT", Dialect::Mysql) => "LONGTEXT",
        _ => ty,
    };
    let mut s = format!("{} {}", quote_ident(dialect, name), new_ty);
    if !rest.is_empty() {
        s.push(' ');
        s.push_str(rest);
    }
    s
}

/// Removes `-- comments` (outside quotes) from DDL text.
fn strip_comments(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    for line in sql.lines() {
        let mut in_literal = false;
        let mut cut = line.len();
        let b = line.as_bytes();
        for i in 0..b.len() {
            match b[i] {
                b'\'' => in_literal = !in_literal,
                b'-' if !in_literal && b.get(i + 1) == Some(&b'-') => {
                    cut = i;
                    break;
                }
                _ => {}
            }
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

/// The statements that apply migration `sql` in `dialect`. SQLite gets the
/// text unchanged (one batch), so its stores are what they always were.
fn migration_statements(dialect: Dialect, sql: &str) -> Vec<String> {
    if dialect == Dialect::Sqlite {
        return vec![sql.to_string()];
    }
    let text = strip_comments(sql);
    let statements: Vec<String> =
        text.split(';').map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|s| !s.is_empty()).collect();
    // Columns in an index of this migration (table, column).
    let mut keys: Vec<(String, String)> = Vec::new();
    for st in &statements {
        let up = st.to_ascii_uppercase();
        if up.starts_with("CREATE INDEX") || up.starts_with("CREATE UNIQUE INDEX") {
            if let Some(table) =
                st.split_once(" ON ").map(|(_, r)| r.split('(').next().unwrap_or("").trim().to_string())
            {
                keys.extend(
                    paren_names(st.split_once(" ON ").map(|(_, r)| r).unwrap_or(""))
                        .into_iter()
                        .map(|c| (table.clone(), c)),
                );
            }
        }
    }
    let mut out = Vec::new();
    for st in statements {
        let up = st.to_ascii_uppercase();
        if up.starts_with("CREATE TABLE") {
            let (head, body) = st.split_once('(').unwrap_or((&st, ""));
            let body = body.rsplit_once(')').map(|(b, _)| b).unwrap_or(body);
            let table = head.split_whitespace().last().unwrap_or("").to_string();
            let items = split_top_level(body);
            let mut table_keys: Vec<String> =
                keys.iter().filter(|(t, _)| *t == table).map(|(_, c)| c.clone()).collect();
            for item in &items {
                let u = item.to_ascii_uppercase();
                if u.starts_with("UNIQUE") || u.starts_with("PRIMARY KEY") {
                    table_keys.extend(paren_names(item));
                }
            }
            let defs: Vec<String> = items
                .iter()
                .map(|item| {
                    let u = item.to_ascii_uppercase();
                    if ["UNIQUE", "PRIMARY KEY", "FOREIGN KEY", "CHECK", "CONSTRAINT"].iter().any(|k| u.starts_with(k))
                    {
                        quote_paren_list(dialect, item)
                    } else {
                        let name = item.split_whitespace().next().unwrap_or("").trim_matches('"');
                        column_ddl(dialect, item, table_keys.iter().any(|k| k == name))
                    }
                })
                .collect();
            // utf8mb4_bin: names compare byte for byte, as in SQLite and
            // PostgreSQL (the default collation would make "WAL" = "wal ").
            let engine = if dialect == Dialect::Mysql {
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
            } else {
                ""
            };
            out.push(format!("{} (\n    {}\n){engine}", head.trim(), defs.join(",\n    ")));
        } else if up.starts_with("CREATE INDEX") || up.starts_with("CREATE UNIQUE INDEX") {
            let (head, on) = st.split_once(" ON ").unwrap_or((&st, ""));
            out.push(format!("{head} ON {}", quote_paren_list(dialect, on)));
        } else if let Some(pos) = up.find(" ADD COLUMN ").filter(|_| up.starts_with("ALTER TABLE")) {
            let table = st[..pos].split_whitespace().last().unwrap_or("");
            let def = &st[pos + " ADD COLUMN ".len()..];
            let name = def.split_whitespace().next().unwrap_or("").trim_matches('"');
            let key = keys.iter().any(|(t, c)| t == table && c == name);
            out.push(format!("{} ADD COLUMN {}", &st[..pos], column_ddl(dialect, def, key)));
        } else {
            out.push(translate(dialect, &st));
        }
    }
    out
}

// ------------------------------------------------------------------ backends

/// A connection to the store's database.
enum Backend {
    Sqlite(Connection),
    // Boxed: the PostgreSQL client is several times larger than the others.
    Postgres(Box<Pg>),
    Mysql(My),
}

/// A PostgreSQL store connection.
struct Pg {
    client: postgres::Client,
    /// To reconnect after the server closed an idle connection.
    config: postgres::Config,
    /// Prepared statements by SQL text: their parameter types decide how a
    /// `Val` is bound (the crate checks Rust type against column type).
    statements: HashMap<String, postgres::Statement>,
    last_used: Instant,
}

/// A MariaDB/MySQL store connection.
struct My {
    conn: mysql::Conn,
    /// To reconnect after the server closed an idle connection.
    opts: mysql::Opts,
    last_used: Instant,
}

/// How long a server connection may sit idle before it is checked (and
/// reopened if the server closed it: wait_timeout, a restart) before use.
/// Labs spend minutes between store writes.
const IDLE_CHECK: Duration = Duration::from_secs(60);

impl Backend {
    fn dialect(&self) -> Dialect {
        match self {
            Backend::Sqlite(_) => Dialect::Sqlite,
            Backend::Postgres(_) => Dialect::Postgres,
            Backend::Mysql(_) => Dialect::Mysql,
        }
    }

    /// Runs SQL without parameters or results, as given (no translation):
    /// transaction control and DDL.
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Backend::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Backend::Postgres(p) => p.client.batch_execute(sql).map_err(pg_error),
            Backend::Mysql(m) => {
                use mysql::prelude::Queryable;
                m.conn.query_drop(sql).map_err(my_error)
            }
        }
    }

    /// Runs one statement (neutral syntax) and returns its rows.
    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, String> {
        let sql = translate(self.dialect(), sql);
        match self {
            Backend::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql).map_err(|e| e.to_string())?;
                let n = st.column_count();
                let mut rows = st.query(rusqlite::params_from_iter(params.iter())).map_err(|e| e.to_string())?;
                let mut out = Vec::new();
                while let Some(r) = rows.next().map_err(|e| e.to_string())? {
                    let mut row = Vec::with_capacity(n);
                    for i in 0..n {
                        row.push(match r.get_ref(i).map_err(|e| e.to_string())? {
                            rusqlite::types::ValueRef::Null => Val::Null,
                            rusqlite::types::ValueRef::Integer(v) => Val::Int(v),
                            rusqlite::types::ValueRef::Real(v) => Val::Real(v),
                            rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                                Val::Text(String::from_utf8_lossy(t).into_owned())
                            }
                        });
                    }
                    out.push(row);
                }
                Ok(out)
            }
            Backend::Postgres(p) => {
                let st = p.statement(&sql)?;
                let bound = pg_params(&st, params)?;
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
                let rows = p.client.query(&st, &refs).map_err(pg_error)?;
                rows.iter().map(pg_row).collect()
            }
            Backend::Mysql(m) => {
                use mysql::prelude::Queryable;
                let rows: Vec<mysql::Row> = m.conn.exec(sql.as_str(), my_params(params)).map_err(my_error)?;
                Ok(rows.into_iter().map(|r| r.unwrap().into_iter().map(my_val).collect()).collect())
            }
        }
    }

    /// Runs one statement (neutral syntax) that returns no rows.
    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<(), String> {
        match self {
            Backend::Sqlite(c) => {
                let mut st = c.prepare_cached(sql).map_err(|e| e.to_string())?;
                st.execute(rusqlite::params_from_iter(params.iter())).map(|_| ()).map_err(|e| e.to_string())
            }
            Backend::Postgres(p) => {
                let sql = translate(Dialect::Postgres, sql);
                let st = p.statement(&sql)?;
                let bound = pg_params(&st, params)?;
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
                p.client.execute(&st, &refs).map(|_| ()).map_err(pg_error)
            }
            Backend::Mysql(m) => {
                use mysql::prelude::Queryable;
                m.conn.exec_drop(translate(Dialect::Mysql, sql), my_params(params)).map_err(my_error)
            }
        }
    }

    /// Runs an INSERT (neutral syntax) into a table with an `id` row id and
    /// returns the new row's id.
    fn insert(&mut self, sql: &str, params: &[Val]) -> Result<i64, String> {
        if self.dialect() == Dialect::Postgres {
            let rows = self.query(&format!("{sql} RETURNING id"), params)?;
            return rows
                .first()
                .ok_or_else(|| "INSERT .. RETURNING id returned no row".to_string())
                .and_then(|r| int_at(r, 0));
        }
        self.execute(sql, params)?;
        match self {
            Backend::Sqlite(c) => Ok(c.last_insert_rowid()),
            Backend::Mysql(m) => Ok(m.conn.last_insert_id() as i64),
            Backend::Postgres(_) => Err("PostgreSQL inserts return their id above".into()),
        }
    }

    /// Before a top-level operation (never inside a transaction): a server
    /// connection idle for a while is checked, and reopened if the server
    /// closed it, so a long lab survives `wait_timeout` or a store restart
    /// between runs. Nothing is in flight then, so reopening loses nothing.
    /// Returns whether it reconnected.
    fn keep_alive(&mut self) -> Result<bool, String> {
        let mut reconnected = false;
        match self {
            Backend::Sqlite(_) => {}
            Backend::Postgres(p) => {
                let idle = p.last_used.elapsed() > IDLE_CHECK;
                if p.client.is_closed() || (idle && p.client.is_valid(Duration::from_secs(10)).is_err()) {
                    p.client =
                        p.config.connect(postgres::NoTls).map_err(|e| format!("cannot reconnect: {}", pg_error(e)))?;
                    p.statements.clear();
                    reconnected = true;
                }
                p.last_used = Instant::now();
            }
            Backend::Mysql(m) => {
                if m.last_used.elapsed() > IDLE_CHECK && m.conn.ping().is_err() {
                    m.conn =
                        mysql::Conn::new(m.opts.clone()).map_err(|e| format!("cannot reconnect: {}", my_error(e)))?;
                    reconnected = true;
                }
                m.last_used = Instant::now();
            }
        }
        Ok(reconnected)
    }
}

impl Pg {
    /// The prepared statement for `sql` (PostgreSQL syntax), cached.
    fn statement(&mut self, sql: &str) -> Result<postgres::Statement, String> {
        if let Some(st) = self.statements.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(sql).map_err(pg_error)?;
        self.statements.insert(sql.to_string(), st.clone());
        Ok(st)
    }
}

/// A PostgreSQL error as one line: the server's message when there is one
/// (the crate's own text is only "db error").
fn pg_error(e: postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(&e)) {
        (Some(d), _) => {
            format!("{}: {}{}", d.severity(), d.message(), d.detail().map(|x| format!(" ({x})")).unwrap_or_default())
        }
        // "error connecting to server" alone does not say why.
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    }
}

/// A MariaDB/MySQL error as one line, without the crate's `MySqlError { }`.
fn my_error(e: mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(m) => format!("ERROR {} ({}): {}", m.code, m.state, m.message),
        e => e.to_string(),
    }
}

/// Binds `params` to a prepared statement's parameter types: the crate
/// accepts only the exact Rust type of a column type (i64 for BIGINT, i32
/// for INTEGER, f64 for DOUBLE PRECISION ...), NULL included.
fn pg_params(st: &postgres::Statement, params: &[Val]) -> Result<Vec<Box<dyn postgres::types::ToSql + Sync>>, String> {
    use postgres::types::Type;
    if st.params().len() != params.len() {
        return Err(format!("statement takes {} parameters, {} given", st.params().len(), params.len()));
    }
    let mut out: Vec<Box<dyn postgres::types::ToSql + Sync>> = Vec::with_capacity(params.len());
    for (i, (v, ty)) in params.iter().zip(st.params()).enumerate() {
        let bad = || format!("parameter {} ({v:?}) does not fit a column of type {ty}", i + 1);
        let b: Box<dyn postgres::types::ToSql + Sync> = if *ty == Type::INT8 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().filter(|_| !matches!(v, Val::Real(f) if f.fract() != 0.0)).ok_or_else(bad)?),
            })
        } else if *ty == Type::INT4 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().and_then(|i| i32::try_from(i).ok()).ok_or_else(bad)?),
            })
        } else if *ty == Type::INT2 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().and_then(|i| i16::try_from(i).ok()).ok_or_else(bad)?),
            })
        } else if *ty == Type::FLOAT8 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.real().ok_or_else(bad)?),
            })
        } else if *ty == Type::FLOAT4 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.real().ok_or_else(bad)? as f32),
            })
        } else if *ty == Type::BOOL {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().ok_or_else(bad)? != 0),
            })
        } else {
            // TEXT, VARCHAR and the like.
            Box::new(v.text())
        };
        out.push(b);
    }
    Ok(out)
}

/// A PostgreSQL result row as `Val`s.
fn pg_row(row: &postgres::Row) -> Result<Row, String> {
    use postgres::types::Type;
    let mut out = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let t = col.type_();
        let e = |e: postgres::Error| format!("column {}: {e}", col.name());
        let v = if *t == Type::INT8 {
            row.try_get::<_, Option<i64>>(i).map_err(e)?.map(Val::Int)
        } else if *t == Type::INT4 {
            row.try_get::<_, Option<i32>>(i).map_err(e)?.map(|v| Val::Int(v as i64))
        } else if *t == Type::INT2 {
            row.try_get::<_, Option<i16>>(i).map_err(e)?.map(|v| Val::Int(v as i64))
        } else if *t == Type::FLOAT8 {
            row.try_get::<_, Option<f64>>(i).map_err(e)?.map(Val::Real)
        } else if *t == Type::FLOAT4 {
            row.try_get::<_, Option<f32>>(i).map_err(e)?.map(|v| Val::Real(v as f64))
        } else if *t == Type::BOOL {
            row.try_get::<_, Option<bool>>(i).map_err(e)?.map(|v| Val::Int(v as i64))
        } else if [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME, Type::UNKNOWN].contains(t) {
            row.try_get::<_, Option<String>>(i).map_err(e)?.map(Val::Text)
        } else {
            return Err(format!("column {} has type {t}, which the results store does not read", col.name()));
        };
        out.push(v.unwrap_or(Val::Null));
    }
    Ok(out)
}

fn my_params(params: &[Val]) -> mysql::Params {
    if params.is_empty() {
        return mysql::Params::Empty;
    }
    mysql::Params::Positional(
        params
            .iter()
            .map(|v| match v {
                Val::Null => mysql::Value::NULL,
                Val::Int(i) => mysql::Value::Int(*i),
                Val::Real(f) => mysql::Value::Double(*f),
                Val::Text(s) => mysql::Value::Bytes(s.clone().into_bytes()),
            })
            .collect(),
    )
}

fn my_val(v: mysql::Value) -> Val {
    match v {
        mysql::Value::NULL => Val::Null,
        mysql::Value::Int(i) => Val::Int(i),
        mysql::Value::UInt(u) => i64::try_from(u).map(Val::Int).unwrap_or(Val::Real(u as f64)),
        mysql::Value::Float(f) => Val::Real(f as f64),
        mysql::Value::Double(f) => Val::Real(f),
        mysql::Value::Bytes(b) => Val::Text(String::from_utf8_lossy(&b).into_owned()),
        // The store has no date or time columns; text keeps whatever it is.
        other => Val::Text(other.as_sql(true)),
    }
}

fn open_sqlite(path: &Path) -> Result<Backend, String> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            crate::safe_fs::private_dir_all(dir, 0o700, "the store's directory")?;
        }
    }
    // Not through a symlink: one planted where the store is made would
    // have root write the store over its target.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!(
            "{} is a symlink; dbbench opens a store only by its real path (a symlink planted there would redirect its writes): give that path",
            path.display()
        ));
    }
    let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| format!("cannot open: {e}"))?;
    Ok(Backend::Sqlite(conn))
}

/// Opens a SQLite store for reading only, and reads its schema version.
/// A store in WAL mode whose `-wal` and `-shm` files are absent (no writer
/// has it open) cannot be read through the normal read-only open when the
/// reader may not create those files (a read-only directory); it is then
/// opened as immutable, which is exact as long as no `-wal` file exists.
fn open_sqlite_read_only(path: &Path) -> Result<(Connection, i64), String> {
    use rusqlite::OpenFlags;
    let version = |c: &Connection| c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0));
    let c = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| format!("cannot open: {e}"))?;
    // A lab writing the store meanwhile holds its write lock for a run's transaction only.
    c.busy_timeout(Duration::from_secs(30)).map_err(|e| e.to_string())?;
    let first = match version(&c) {
        Ok(v) => return Ok((c, v)),
        Err(e) => e,
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let cannot_create =
        matches!(first.sqlite_error_code(), Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen));
    if !cannot_create || Path::new(&wal).exists() {
        return Err(format!("cannot read it: {first}"));
    }
    let uri = format!("file:{}?immutable=1", uri_path(path));
    let c = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open: {e}"))?;
    let v = version(&c).map_err(|e| format!("cannot read it: {e}"))?;
    Ok((c, v))
}

/// A path as the path part of a SQLite `file:` URI: `%`, `?` and `#` (and
/// anything not printable ASCII) percent-encoded.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'%' | b'?' | b'#') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What to do when a server refuses the connection.
fn connect_hint(url: &ServerUrl) -> String {
    format!(
        "check the URL, that the server runs and accepts the user, the password (in the URL or {PASSWORD_ENV}), and that database '{}' exists (CREATE DATABASE {})",
        url.db, url.db
    )
}

fn open_server(url: &ServerUrl) -> Result<Backend, String> {
    // The environment wins over the URL, as `password_env` does for DSNs:
    // a spec can then name the server without holding its secret.
    let password = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()).or_else(|| url.password.clone());
    match url.dialect {
        Dialect::Postgres => {
            let mut config = postgres::Config::new();
            config
                .user(&url.user)
                .dbname(&url.db)
                .application_name("dbbench lab")
                .connect_timeout(Duration::from_secs(30));
            config.host(url.socket.as_deref().unwrap_or(&url.host)).port(url.port.unwrap_or(5432));
            if let Some(p) = &password {
                config.password(p);
            }
            let client = config
                .connect(postgres::NoTls)
                .map_err(|e| format!("cannot connect: {}; {}", pg_error(e), connect_hint(url)))?;
            Ok(Backend::Postgres(Box::new(Pg {
                client,
                config,
                statements: HashMap::new(),
                last_used: Instant::now(),
            })))
        }
        _ => {
            let mut b = mysql::OptsBuilder::new()
                .user(Some(&url.user))
                .pass(password)
                .db_name(Some(&url.db))
                .tcp_connect_timeout(Some(Duration::from_secs(30)))
                // A known mode whatever the server's default: strict, so a
                // value that does not fit is an error rather than silently
                // truncated, and no engine substitution behind InnoDB's back.
                .init(vec!["SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"]);
            b = match &url.socket {
                Some(s) => b.socket(Some(s)),
                None => b.ip_or_hostname(Some(&url.host)).tcp_port(url.port.unwrap_or(3306)),
            };
            let opts = mysql::Opts::from(b);
            let conn = mysql::Conn::new(opts.clone())
                .map_err(|e| format!("cannot connect: {}; {}", my_error(e), connect_hint(url)))?;
            Ok(Backend::Mysql(My { conn, opts, last_used: Instant::now() }))
        }
    }
}

// ------------------------------------------------------------------ the store

impl Store {
    /// Opens (creating and migrating as needed) the store at `location`: a
    /// SQLite file path, or `postgresql://user[:password]@host[:port]/db[?host=/socket/dir]`
    /// or `mysql://user[:password]@host[:port]/db[?socket=/path]` (the
    /// database must exist; the password may instead be in
    /// DBBENCH_STORE_PASSWORD).
    pub fn open(location: &str) -> Result<Store, String> {
        let shown = redact(location);
        let fail = |e: String| format!("results store {shown}: {e}");
        let (backend, url_auth) = match parse_location(location).map_err(fail)? {
            Location::File(path) => (open_sqlite(&path).map_err(fail)?, None),
            Location::Server(url) => {
                (open_server(&url).map_err(fail)?, url.raw_password.clone().map(|p| (url.raw_user.clone(), p)))
            }
        };
        let store = Store { db: RefCell::new(backend), location: shown, url_auth };
        store.migrate().map_err(|e| format!("results store {}: {e}", store.location))?;
        Ok(store)
    }

    /// Opens a store that must already be a dbbench results store, for
    /// readers (reports, `compare`, `lab summary`): a missing file, a SQLite
    /// database without dbbench's schema or a server database without
    /// `dbbench_schema` is refused, not turned into a store. A SQLite store
    /// of the current schema is opened read-only, so a user who may only
    /// read the file (or its directory) can report on it; an older store is
    /// upgraded as `open` does, which needs write access.
    pub fn open_existing(location: &str) -> Result<Store, String> {
        let shown = redact(location);
        let fail = |e: String| format!("results store {shown}: {e}");
        let not_ours = || {
            fail(
                "is not a dbbench results store (it has no dbbench schema); give the store a `dbbench lab run` wrote"
                    .into(),
            )
        };
        match parse_location(location).map_err(fail)? {
            Location::File(path) => {
                if !path.is_file() {
                    return Err(format!(
                        "no results store at {shown}; name the experiment's spec, or the store with --store=PATH|URL"
                    ));
                }
                let (c, version) = open_sqlite_read_only(&path).map_err(fail)?;
                if version == 0 {
                    return Err(not_ours());
                }
                check_version(version).map_err(fail)?;
                if version == SCHEMA_VERSION {
                    return Ok(Store { db: RefCell::new(Backend::Sqlite(c)), location: shown, url_auth: None });
                }
                drop(c);
                return Store::open(location).map_err(|e| {
                    format!("{e} (the store has schema version {version}, older than this dbbench's {SCHEMA_VERSION}: it is upgraded once, by a dbbench that may write it, e.g. its owner running `dbbench report`)")
                });
            }
            Location::Server(url) => {
                let mut db = open_server(&url).map_err(fail)?;
                let schema = if db.dialect() == Dialect::Mysql { "DATABASE()" } else { "current_schema()" };
                let rows = db
                    .query(&format!("SELECT count(*) FROM information_schema.tables WHERE table_name = 'dbbench_schema' AND table_schema = {schema}"), &[])
                    .map_err(fail)?;
                if rows.first().and_then(|r| r.first()).and_then(Val::int) != Some(1) {
                    return Err(not_ours());
                }
            }
        }
        Store::open(location)
    }

    /// Where the store is, for messages: its path, or its URL with the
    /// password replaced by `<hidden>`.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Runs `f` on the connection (checked first); errors name the store.
    fn with<T>(&self, f: impl FnOnce(&mut Backend) -> Result<T, String>) -> Result<T, String> {
        let mut db = self.db.borrow_mut();
        let r = db.keep_alive().and_then(|reconnected| {
            if reconnected {
                eprintln!(
                    "warning: results store {}: the server had closed the connection; reconnected",
                    self.location
                );
            }
            f(&mut db)
        });
        r.map_err(|e| format!("results store {}: {e}", self.location))
    }

    /// Runs `f` in one transaction: committed when it succeeds, rolled back
    /// when it (or the commit) fails.
    fn transaction<T>(&self, f: impl FnOnce(&mut Backend) -> Result<T, String>) -> Result<T, String> {
        self.with(|db| {
            db.batch(if db.dialect() == Dialect::Mysql { "START TRANSACTION" } else { "BEGIN" })?;
            let r = f(db).and_then(|v| db.batch("COMMIT").map(|_| v));
            if r.is_err() {
                // After a failed COMMIT SQLite keeps the transaction open.
                let _ = db.batch("ROLLBACK");
            }
            r
        })
    }

    /// One statement's rows.
    fn rows(&self, sql: &str, params: &[Val]) -> Result<Vec<Row>, String> {
        self.with(|db| db.query(sql, params))
    }

    fn migrate(&self) -> Result<(), String> {
        let mut db = self.db.borrow_mut();
        if let Backend::Sqlite(c) = &*db {
            return migrate_sqlite(c);
        }
        migrate_server(&mut db)
    }

    /// The newest experiment named `name`, if any.
    pub fn latest_experiment(&self, name: &str) -> Result<Option<ExperimentRow>, String> {
        let rows = self.rows(
            "SELECT id, status, spec_hash FROM experiments WHERE name = ? ORDER BY id DESC LIMIT 1",
            &vals![name],
        )?;
        rows.first()
            .map(|r| Ok(ExperimentRow { id: int_at(r, 0)?, status: text_at(r, 1)?, spec_hash: text_at(r, 2)? }))
            .transpose()
            .map_err(|e: String| format!("results store {}: {e}", self.location))
    }

    /// Ids of the experiments of `name` that did not finish and were not
    /// abandoned (running, or interrupted), newest first.
    pub fn unfinished_experiments(&self, name: &str) -> Result<Vec<i64>, String> {
        let rows = self.rows(
            "SELECT id FROM experiments WHERE name = ? AND status NOT IN ('finished', 'abandoned') ORDER BY id DESC",
            &vals![name],
        )?;
        rows.iter()
            .map(|r| int_at(r, 0))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| format!("results store {}: {e}", self.location))
    }

    /// Sets one key of an experiment's `settings` object (what a later
    /// process of the experiment adds, e.g. that it ran beside other labs).
    pub fn set_experiment_setting(&self, id: i64, key: &str, value: &serde_json::Value) -> Result<(), String> {
        self.transaction(|db| {
            let rows = db.query("SELECT settings FROM experiments WHERE id = ?", &vals![id])?;
            let mut settings = rows.first().map(|r| json_at(r, 0)).unwrap_or_default();
            if !settings.is_object() {
                settings = serde_json::json!({});
            }
            settings[key] = value.clone();
            db.execute("UPDATE experiments SET settings = ? WHERE id = ?", &vals![settings.to_string(), id])
        })
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
        // The spec may name this store with its password (`store = "..."`),
        // percent-encoded as written; the redaction hides the rest.
        let spec_text = match &self.url_auth {
            Some((user, password)) => spec_text.replace(&format!("{user}:{password}@"), &format!("{user}:<hidden>@")),
            None => spec_text.to_string(),
        };
        let spec_text = crate::secret::redact(&spec_text);
        let (spec_path, description) = (crate::secret::redact(spec_path), crate::secret::redact(description));
        let (host, settings) = (crate::secret::redact_json(host), crate::secret::redact_json(settings));
        self.with(|db| {
            db.insert(
                "INSERT INTO experiments (name, description, spec_path, spec_text, spec_hash, status, started_at, dbbench_version, git_revision, host, settings)
                 VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                &vals![name, description, spec_path, spec_text, spec_hash, now(), crate::VERSION, git_revision, host.to_string(), settings.to_string()],
            )
        })
    }

    /// Sets an experiment's status (and its end time when finished).
    pub fn set_experiment_status(&self, id: i64, status: &str) -> Result<(), String> {
        let finished = (status == "finished").then(now);
        self.with(|db| {
            db.execute("UPDATE experiments SET status = ?, finished_at = ? WHERE id = ?", &vals![status, finished, id])
        })
    }

    /// The id of a configuration row, created if missing.
    pub fn configuration(
        &self,
        experiment: i64,
        position: usize,
        name: &str,
        kind: &str,
        definition: &serde_json::Value,
    ) -> Result<i64, String> {
        self.with(|db| {
            db.execute(
                "INSERT OR IGNORE INTO configurations (experiment_id, position, name, kind, definition) VALUES (?, ?, ?, ?, ?)",
                &vals![experiment, position as i64, name, kind, crate::secret::redact_json(definition).to_string()],
            )?;
            let rows = db.query("SELECT id FROM configurations WHERE experiment_id = ? AND name = ?", &vals![experiment, name])?;
            rows.first().ok_or_else(|| format!("configuration '{name}' was not stored")).and_then(|r| int_at(r, 0))
        })
    }

    /// Records a configuration's server version and variables (first start only).
    pub fn set_server_info(
        &self,
        configuration: i64,
        version: &str,
        variables: &serde_json::Value,
    ) -> Result<(), String> {
        self.with(|db| {
            db.execute(
                "UPDATE configurations SET server_version = ?, variables = ? WHERE id = ? AND server_version IS NULL",
                &vals![
                    crate::secret::redact(version),
                    crate::secret::redact_json(variables).to_string(),
                    configuration
                ],
            )
        })
    }

    /// The id of a cell row, created if missing.
    pub fn cell(&self, experiment: i64, configuration: i64, workload: &str, threads: u32) -> Result<i64, String> {
        self.with(|db| {
            db.execute(
                "INSERT OR IGNORE INTO cells (experiment_id, configuration_id, workload, threads) VALUES (?, ?, ?, ?)",
                &vals![experiment, configuration, workload, threads],
            )?;
            let rows = db.query(
                "SELECT id FROM cells WHERE configuration_id = ? AND workload = ? AND threads = ?",
                &vals![configuration, workload, threads],
            )?;
            rows.first()
                .ok_or_else(|| format!("cell ({workload}, {threads} threads) was not stored"))
                .and_then(|r| int_at(r, 0))
        })
    }

    /// Whether (cell, repeat) already has a run.
    pub fn run_exists(&self, cell: i64, repeat: u32) -> Result<bool, String> {
        Ok(!self.rows("SELECT 1 FROM runs WHERE cell_id = ? AND \"repeat\" = ?", &vals![cell, repeat])?.is_empty())
    }

    /// How many of an experiment's stored runs are not ok (failed or timed
    /// out), whichever process ran them.
    pub fn runs_not_ok(&self, experiment: i64) -> Result<i64, String> {
        let rows = self.rows(
            "SELECT count(*) FROM runs r JOIN cells c ON r.cell_id = c.id WHERE c.experiment_id = ? AND r.status <> 'ok'",
            &vals![experiment],
        )?;
        rows.first().map(|r| int_at(r, 0)).unwrap_or(Ok(0)).map_err(|e| format!("results store {}: {e}", self.location))
    }

    /// Of the runs that are not ok, the TPC-H query runs stopped on the
    /// server at their own timeout (status `timeout`, the query's report
    /// says `timed_out`): censored figures, not failures, as `tpch power`
    /// counts them. A run the lab killed at `run_timeout` has no report.
    pub fn runs_censored(&self, experiment: i64) -> Result<i64, String> {
        let rows = self.rows(
            "SELECT r.id, r.report FROM runs r JOIN cells c ON r.cell_id = c.id WHERE c.experiment_id = ? AND r.status = 'timeout' AND r.report IS NOT NULL AND c.workload LIKE '%:Q%'",
            &vals![experiment],
        )?;
        let mut censored = 0;
        for row in &rows {
            let (Some(id), Some(text)) = (opt_int(row, 0), opt_text(row, 1)) else { continue };
            let doc = TpchDocument::parse(&text, &format!("results store {}: run {id}", self.location))?;
            if doc.first_query().is_some_and(|q| q.timed_out) {
                censored += 1;
            }
        }
        Ok(censored)
    }

    /// Records a lab event (prepare, snapshot, crash, warning).
    pub fn event(
        &self,
        experiment: i64,
        configuration: Option<&str>,
        workload: Option<&str>,
        kind: &str,
        seconds: Option<f64>,
        detail: &serde_json::Value,
    ) -> Result<(), String> {
        self.with(|db| {
            db.execute(
                "INSERT INTO events (experiment_id, at, configuration, workload, kind, seconds, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                &vals![experiment, now(), configuration, workload, kind, seconds, crate::secret::redact_json(detail).to_string()],
            )
        })
    }

    /// Whether an event of `kind` was recorded for (configuration, workload).
    pub fn has_event(&self, experiment: i64, configuration: &str, workload: &str, kind: &str) -> Result<bool, String> {
        let rows = self.rows(
            "SELECT 1 FROM events WHERE experiment_id = ? AND configuration = ? AND workload = ? AND kind = ? LIMIT 1",
            &vals![experiment, configuration, workload, kind],
        )?;
        Ok(!rows.is_empty())
    }

    /// Writes a finished run and everything measured during it, atomically.
    pub fn insert_run(&self, r: &RunRecord) -> Result<i64, String> {
        let run = match &r.report {
            Some(Report::Run(d)) => Some(d.as_ref()),
            _ => None,
        };
        let time_s = run.map(|d| d.total_time_s);
        let rw = run.and_then(|d| d.rw_qps());
        let count = |f: fn(&crate::run_document::Counters) -> u64| run.map(|d| f(&d.counters) as i64);
        let histogram = run.and_then(|d| d.latency.histogram.clone());
        // No password reaches the store (docs/security.md): every text of
        // the run goes through the one redaction.
        use crate::secret::{redact, redact_args, redact_json};
        let error = r.error.as_deref().map(redact);
        let output_tail = r.output_tail.as_deref().map(redact);
        let log_excerpt = r.log_excerpt.as_deref().map(redact);
        let run_params = vals![
            r.cell_id,
            r.repeat,
            r.seq,
            &r.status,
            &error,
            &r.started_at,
            &r.ended_at,
            serde_json::to_string(&redact_args(&r.argv)).unwrap_or_default(),
            r.seed as i64,
            &r.cache,
            r.server_restarted,
            crate::run_document::to_compact_text(&r.overhead),
            time_s,
            count(|c| c.events),
            count(|c| c.queries),
            count(|c| c.reads),
            count(|c| c.writes),
            count(|c| c.other),
            count(|c| c.errors),
            count(|c| c.reconnects),
            run.map(|d| d.rates_per_s.events),
            run.map(|d| d.rates_per_s.queries),
            rw,
            run.and_then(|d| d.latency.avg_ms),
            run.and_then(|d| d.latency.percentile(95.0)),
            run.and_then(|d| d.latency.percentile(99.0)),
            run.and_then(|d| d.latency.max_ms),
            run.map(|d| d.latency_measured_from.as_str()),
            histogram,
            r.report.as_ref().map(|rep| {
                let mut v = match rep {
                    Report::Run(d) => serde_json::to_value(d),
                    Report::Tpch(d) => serde_json::to_value(d),
                }
                .unwrap_or_default();
                // The histogram has its own column; do not store it twice.
                if let Some(l) = v.get_mut("latency").and_then(|l| l.as_object_mut()) {
                    l.remove("histogram");
                }
                redact_json(&v).to_string()
            }),
            &output_tail,
            &log_excerpt,
        ];
        // One row per key, the last value winning (as SQLite's INSERT OR
        // REPLACE did): a plain INSERT then means the same on every server.
        let mut metrics: Vec<(&str, f64)> = Vec::new();
        for (name, value) in &r.metrics {
            match metrics.iter_mut().find(|m| m.0 == name.as_str()) {
                Some(m) => m.1 = *value,
                None => metrics.push((name.as_str(), *value)),
            }
        }
        let mut intervals: Vec<Vec<Val>> = Vec::new();
        // Warmup rows (time_s <= 0) first: charts shade them; no figure uses them.
        for iv in run.into_iter().flat_map(|d| d.warmup_intervals.iter().chain(&d.intervals)) {
            let row = vals![
                iv.time_s,
                iv.threads_running as i64,
                iv.tps,
                iv.qps,
                iv.errors as i64,
                iv.reconnects as i64,
                iv.latency_ms.avg,
                iv.latency_ms.percentile(95.0),
                iv.latency_ms.max,
            ]
            .to_vec();
            match intervals.iter_mut().find(|x| x[0] == row[0]) {
                Some(x) => *x = row,
                None => intervals.push(row),
            }
        }
        self.transaction(|db| {
            let run_id = db.insert(
                "INSERT INTO runs (cell_id, \"repeat\", seq, status, error, started_at, ended_at, argv, seed, cache, server_restarted, overhead,
                    time_s, events, queries, \"reads\", writes, other, errors, reconnects, tps, qps, rw_qps,
                    latency_avg_ms, latency_p95_ms, latency_p99_ms, latency_max_ms, latency_measured_from, histogram, report, output_tail, log_excerpt)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &run_params,
            )?;
            if let Some(p) = &r.server {
                db.execute(
                    "UPDATE runs SET server_product = ?, server_version = ? WHERE id = ?",
                    &vals![&p.name, &p.version, run_id],
                )?;
            }
            for (name, value) in &metrics {
                db.execute("INSERT INTO run_metrics (run_id, name, value) VALUES (?, ?, ?)", &vals![run_id, *name, *value])?;
            }
            for iv in &intervals {
                let mut p = vec![Val::from(run_id)];
                p.extend(iv.iter().cloned());
                db.execute(
                    "INSERT INTO run_intervals (run_id, time_s, threads_running, tps, qps, errors, reconnects, latency_avg_ms, latency_p95_ms, latency_max_ms)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    &p,
                )?;
            }
            for (source, samples) in [("os", &r.os_samples), ("server", &r.server_samples)] {
                for (t, data) in samples {
                    db.execute("INSERT INTO samples (run_id, source, time_s, data) VALUES (?, ?, ?, ?)", &vals![run_id, source, *t, data.to_string()])?;
                }
            }
            crate::fault_point::test_pause("store");
            Ok(run_id)
        })
    }

    /// Every run's lab overhead for an experiment, in run order:
    /// (configuration, server restarted, the `overhead` JSON object).
    pub fn run_overheads(&self, experiment: i64) -> Result<Vec<(String, bool, Overhead)>, String> {
        let rows = self.rows(
            "SELECT c.name, r.server_restarted, r.overhead, r.id FROM runs r JOIN cells cl ON r.cell_id = cl.id
             JOIN configurations c ON cl.configuration_id = c.id WHERE cl.experiment_id = ? ORDER BY r.seq",
            &vals![experiment],
        )?;
        rows.iter()
            .map(|r| {
                let overhead = serde_json::from_str(&text_at(r, 2)?).map_err(|e| {
                    format!("run {}: overhead is not the lab's record ({e})", int_at(r, 3).unwrap_or(0))
                })?;
                Ok((text_at(r, 0)?, int_at(r, 1)? != 0, overhead))
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| format!("results store {}: {e}", self.location))
    }

    /// (configuration, seconds) of every event of `kind` in an experiment
    /// that has both, oldest first (e.g. how long each server stop took).
    pub fn event_seconds(&self, experiment: i64, kind: &str) -> Result<Vec<(String, f64)>, String> {
        let rows = self.rows(
            "SELECT configuration, seconds FROM events WHERE experiment_id = ? AND kind = ? AND configuration IS NOT NULL AND seconds IS NOT NULL ORDER BY id",
            &vals![experiment, kind],
        )?;
        rows.iter()
            .map(|r| Ok((text_at(r, 0)?, r[1].real().ok_or("seconds is not a number")?)))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| format!("results store {}: {e}", self.location))
    }
}

// ------------------------------------------------------------------ reading, for reports

/// An experiment as reports read it.
#[derive(Debug, Clone)]
pub struct ExperimentInfo {
    /// Row id.
    pub id: i64,
    /// The spec's experiment name.
    pub name: String,
    /// The spec's description.
    pub description: String,
    /// running | finished | interrupted | abandoned.
    pub status: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC, when finished.
    pub finished_at: Option<String>,
    /// The spec as run (passwords hidden).
    pub spec_text: String,
    /// dbbench's version that ran it.
    pub dbbench_version: String,
    /// dbbench's git revision, when known.
    pub git_revision: Option<String>,
    /// Host context (JSON object, `sysinfo::HostInfo`).
    pub host: serde_json::Value,
    /// Repeats, durations, order, seed ... (JSON object).
    pub settings: serde_json::Value,
}

/// A configuration as reports read it.
#[derive(Debug, Clone)]
pub struct ConfigurationInfo {
    /// Row id.
    pub id: i64,
    /// 0 is the spec's baseline.
    pub position: i64,
    /// Name in tables.
    pub name: String,
    /// mariadb | mysql | postgresql | external | sqlite.
    pub kind: String,
    /// The spec's configuration (JSON, passwords removed).
    pub definition: serde_json::Value,
    /// Server version at its first start.
    pub server_version: Option<String>,
    /// Every server variable at its first start (JSON object), when captured.
    pub variables: Option<serde_json::Value>,
    /// The server products and versions its runs ran on (`MariaDB
    /// 10.11.19-MariaDB-...`), in order of first use; empty for stores
    /// written before runs recorded them.
    pub products: Vec<String>,
}

/// One stored run's figures (everything but its series, samples and histogram).
#[derive(Debug, Clone, Default)]
pub struct RunFigures {
    /// Row id.
    pub id: i64,
    /// Its configuration's row id.
    pub configuration_id: i64,
    /// The spec's workload name.
    pub workload: String,
    /// Client threads.
    pub threads: u32,
    /// 1-based repeat.
    pub repeat: u32,
    /// Position in the run order.
    pub seq: u32,
    /// ok | failed | timeout.
    pub status: String,
    /// Why it is not ok.
    pub error: Option<String>,
    /// `--rand-seed`.
    pub seed: i64,
    /// dropped | lukewarm | warm.
    pub cache: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// Measured seconds.
    pub time_s: Option<f64>,
    /// Events (transactions) after warmup.
    pub events: Option<i64>,
    /// Ignored errors.
    pub errors: Option<i64>,
    /// Reconnects.
    pub reconnects: Option<i64>,
    /// Events per second.
    pub tps: Option<f64>,
    /// Queries per second.
    pub qps: Option<f64>,
    /// (reads + writes) per second.
    pub rw_qps: Option<f64>,
    /// Latency figures, ms.
    pub latency_avg_ms: Option<f64>,
    /// 95th percentile, ms.
    pub latency_p95_ms: Option<f64>,
    /// 99th percentile, ms.
    pub latency_p99_ms: Option<f64>,
    /// Maximum, ms.
    pub latency_max_ms: Option<f64>,
    /// actual_start | intended_start.
    pub latency_measured_from: Option<String>,
    /// Named metrics (command workloads).
    pub metrics: Vec<(String, f64)>,
}

/// One row of a run's per-interval series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalPoint {
    /// The run's row id.
    pub run_id: i64,
    /// Seconds since the end of the warmup (≤ 0: a warmup tick).
    pub time_s: f64,
    /// Events per second in the interval.
    pub tps: Option<f64>,
    /// Queries per second in the interval.
    pub qps: Option<f64>,
    /// 95th percentile latency in the interval, ms.
    pub latency_p95_ms: Option<f64>,
}

fn json_at(row: &Row, i: usize) -> serde_json::Value {
    row.get(i).and_then(Val::text).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(serde_json::Value::Null)
}

fn opt_text(row: &Row, i: usize) -> Option<String> {
    row.get(i).and_then(Val::text)
}

fn opt_real(row: &Row, i: usize) -> Option<f64> {
    row.get(i).and_then(Val::real)
}

fn opt_int(row: &Row, i: usize) -> Option<i64> {
    row.get(i).and_then(Val::int)
}

impl Store {
    /// Every experiment, newest first: (id, name, status, started_at).
    pub fn experiments(&self) -> Result<Vec<(i64, String, String, String)>, String> {
        let rows = self.rows("SELECT id, name, status, started_at FROM experiments ORDER BY id DESC", &[])?;
        rows.iter()
            .map(|r| Ok((int_at(r, 0)?, text_at(r, 1)?, text_at(r, 2)?, text_at(r, 3)?)))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| format!("results store {}: {e}", self.location))
    }

    /// One experiment, if it exists.
    pub fn experiment_info(&self, id: i64) -> Result<Option<ExperimentInfo>, String> {
        let rows = self.rows(
            "SELECT id, name, description, status, started_at, finished_at, spec_text, dbbench_version, git_revision, host, settings
             FROM experiments WHERE id = ?",
            &vals![id],
        )?;
        let Some(r) = rows.first() else { return Ok(None) };
        let info = (|| -> Result<ExperimentInfo, String> {
            Ok(ExperimentInfo {
                id: int_at(r, 0)?,
                name: text_at(r, 1)?,
                description: text_at(r, 2)?,
                status: text_at(r, 3)?,
                started_at: text_at(r, 4)?,
                finished_at: opt_text(r, 5),
                // Redacted again on the way out: a store written before
                // dbbench hid every password must not show one in a report.
                spec_text: crate::secret::redact(&text_at(r, 6)?),
                dbbench_version: text_at(r, 7)?,
                git_revision: opt_text(r, 8),
                host: json_at(r, 9),
                settings: json_at(r, 10),
            })
        })();
        info.map(Some).map_err(|e| format!("results store {}: {e}", self.location))
    }

    /// An experiment's configurations, baseline (position 0) first.
    pub fn configurations_of(&self, experiment: i64) -> Result<Vec<ConfigurationInfo>, String> {
        let rows = self.rows(
            "SELECT id, position, name, kind, definition, server_version, variables FROM configurations WHERE experiment_id = ? ORDER BY position",
            &vals![experiment],
        )?;
        let products = self.server_products(experiment)?;
        rows.iter()
            .map(|r| {
                let id = int_at(r, 0)?;
                Ok(ConfigurationInfo {
                    products: products.iter().filter(|p| p.0 == id).map(|p| p.1.clone()).collect(),
                    id,
                    position: int_at(r, 1)?,
                    name: text_at(r, 2)?,
                    kind: text_at(r, 3)?,
                    definition: crate::secret::redact_json(&json_at(r, 4)),
                    server_version: opt_text(r, 5),
                    variables: Some(json_at(r, 6)).filter(|v| !v.is_null()).map(|v| crate::secret::redact_json(&v)),
                })
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| format!("results store {}: {e}", self.location))
    }

    /// Every run of an experiment with its figures and named metrics, in run order.
    pub fn run_figures(&self, experiment: i64) -> Result<Vec<RunFigures>, String> {
        let rows = self.rows(
            "SELECT r.id, cl.configuration_id, cl.workload, cl.threads, r.\"repeat\", r.seq, r.status, r.error, r.seed, r.cache, r.started_at,
                    r.time_s, r.events, r.errors, r.reconnects, r.tps, r.qps, r.rw_qps,
                    r.latency_avg_ms, r.latency_p95_ms, r.latency_p99_ms, r.latency_max_ms, r.latency_measured_from
             FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = ? ORDER BY r.seq",
            &vals![experiment],
        )?;
        let mut runs = rows
            .iter()
            .map(|r| {
                Ok(RunFigures {
                    id: int_at(r, 0)?,
                    configuration_id: int_at(r, 1)?,
                    workload: text_at(r, 2)?,
                    threads: int_at(r, 3)? as u32,
                    repeat: int_at(r, 4)? as u32,
                    seq: int_at(r, 5)? as u32,
                    status: text_at(r, 6)?,
                    error: opt_text(r, 7).map(|e| crate::secret::redact(&e)),
                    seed: int_at(r, 8)?,
                    cache: text_at(r, 9)?,
                    started_at: text_at(r, 10)?,
                    time_s: opt_real(r, 11),
                    events: opt_int(r, 12),
                    errors: opt_int(r, 13),
                    reconnects: opt_int(r, 14),
                    tps: opt_real(r, 15),
                    qps: opt_real(r, 16),
                    rw_qps: opt_real(r, 17),
                    latency_avg_ms: opt_real(r, 18),
                    latency_p95_ms: opt_real(r, 19),
                    latency_p99_ms: opt_real(r, 20),
                    latency_max_ms: opt_real(r, 21),
                    latency_measured_from: opt_text(r, 22),
                    metrics: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| format!("results store {}: {e}", self.location))?;
        let metrics = self.rows(
            "SELECT m.run_id, m.name, m.value FROM run_metrics m JOIN runs r ON m.run_id = r.id JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? ORDER BY m.run_id",
            &vals![experiment],
        )?;
        let index: HashMap<i64, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        for m in &metrics {
            if let (Some(run), Some(name), Some(value)) = (opt_int(m, 0), opt_text(m, 1), opt_real(m, 2)) {
                if let Some(&i) = index.get(&run) {
                    runs[i].metrics.push((name, value));
                }
            }
        }
        Ok(runs)
    }

    /// Per configuration (row id), the distinct server products and versions
    /// its runs ran on, as `Product Version` texts in order of first use.
    pub fn server_products(&self, experiment: i64) -> Result<Vec<(i64, String)>, String> {
        let rows = self.rows(
            "SELECT cl.configuration_id, r.server_product, r.server_version, min(r.seq) FROM runs r JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? AND r.server_product IS NOT NULL
             GROUP BY cl.configuration_id, r.server_product, r.server_version ORDER BY 4",
            &vals![experiment],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some((
                    opt_int(r, 0)?,
                    format!("{} {}", opt_text(r, 1)?, opt_text(r, 2).unwrap_or_default()).trim_end().to_string(),
                ))
            })
            .collect())
    }

    /// The latency histogram (HdrHistogram V2 deflate, base64) of every run
    /// of an experiment that has one: (run id, encoded histogram).
    pub fn run_histograms(&self, experiment: i64) -> Result<Vec<(i64, String)>, String> {
        let rows = self.rows(
            "SELECT r.id, r.histogram FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = ? AND r.histogram IS NOT NULL",
            &vals![experiment],
        )?;
        Ok(rows.iter().filter_map(|r| Some((opt_int(r, 0)?, opt_text(r, 1)?))).collect())
    }

    /// The stored run documents (the child's whole JSON output) of an
    /// experiment's TPC-H query runs (workloads named `NAME:Q..`): their
    /// answers and plans. (run id, document); a stored document that does
    /// not parse is an error naming the run.
    pub fn tpch_documents(&self, experiment: i64) -> Result<Vec<(i64, TpchDocument)>, String> {
        let rows = self.rows(
            "SELECT r.id, r.report FROM runs r JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? AND cl.workload LIKE '%:Q%' AND r.report IS NOT NULL",
            &vals![experiment],
        )?;
        rows.iter()
            .filter_map(|r| Some((opt_int(r, 0)?, opt_text(r, 1)?)))
            .map(|(id, text)| {
                Ok((id, TpchDocument::parse(&text, &format!("results store {}: run {id}", self.location))?))
            })
            .collect()
    }

    /// Every run's per-interval series, by run and time.
    pub fn interval_points(&self, experiment: i64) -> Result<Vec<IntervalPoint>, String> {
        let rows = self.rows(
            "SELECT i.run_id, i.time_s, i.tps, i.qps, i.latency_p95_ms FROM run_intervals i JOIN runs r ON i.run_id = r.id
             JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = ? ORDER BY i.run_id, i.time_s",
            &vals![experiment],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(IntervalPoint {
                    run_id: opt_int(r, 0)?,
                    time_s: opt_real(r, 1)?,
                    tps: opt_real(r, 2),
                    qps: opt_real(r, 3),
                    latency_p95_ms: opt_real(r, 4),
                })
            })
            .collect())
    }
}

/// SQLite: the version is `PRAGMA user_version`; each migration in its own
/// transaction.
fn migrate_sqlite(c: &Connection) -> Result<(), String> {
    // WAL: readers (a report while a lab runs) never block the writer.
    c.pragma_update(None, "journal_mode", "wal").map_err(|e| e.to_string())?;
    c.pragma_update(None, "foreign_keys", "on").map_err(|e| e.to_string())?;
    c.busy_timeout(Duration::from_secs(30)).map_err(|e| e.to_string())?;
    let version: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(|e| e.to_string())?;
    check_version(version)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = c.unchecked_transaction().map_err(|e| e.to_string())?;
        for st in migration_statements(Dialect::Sqlite, sql) {
            tx.execute_batch(&st).map_err(|e| format!("migration to version {}: {e}", i + 1))?;
        }
        tx.pragma_update(None, "user_version", (i + 1) as i64).map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn check_version(version: i64) -> Result<(), String> {
    if version > SCHEMA_VERSION {
        return Err(format!(
            "schema version {version} is newer than this dbbench understands ({SCHEMA_VERSION}); use a newer dbbench"
        ));
    }
    Ok(())
}

/// The schema version a server store records (0 when it has no table yet).
fn server_version(db: &mut Backend) -> Result<Option<i64>, String> {
    let schema = if db.dialect() == Dialect::Postgres { "current_schema()" } else { "DATABASE()" };
    let exists = db.query(&format!("SELECT count(*) FROM information_schema.tables WHERE table_schema = {schema} AND table_name = 'dbbench_schema'"), &[])?;
    if exists.first().and_then(|r| r.first()).and_then(Val::int).unwrap_or(0) == 0 {
        return Ok(None);
    }
    let v = db.query("SELECT max(version) FROM dbbench_schema", &[])?;
    Ok(Some(v.first().and_then(|r| r.first()).and_then(Val::int).unwrap_or(0)))
}

/// PostgreSQL and MariaDB/MySQL: the version is the one row of table
/// `dbbench_schema`. Two labs opening a new store at once are serialised by
/// a lock (an advisory lock on PostgreSQL, GET_LOCK on MariaDB/MySQL).
fn migrate_server(db: &mut Backend) -> Result<(), String> {
    // The common case, an up-to-date store, takes two reads and no lock
    // (and works for a user who may only read and insert).
    if let Some(v) = server_version(db)? {
        check_version(v)?;
        if v == SCHEMA_VERSION {
            return Ok(());
        }
    }
    match db.dialect() {
        Dialect::Postgres => {
            // PostgreSQL's DDL is transactional: all missing migrations and
            // the new version commit together or not at all.
            db.batch("BEGIN")?;
            let r = (|| {
                db.batch("SELECT pg_advisory_xact_lock(7262645362)")?; // any fixed key: "dbbench" in digits, roughly
                db.batch("CREATE TABLE IF NOT EXISTS dbbench_schema (version INTEGER NOT NULL)")?;
                let version = server_version(db)?.unwrap_or(0);
                check_version(version)?;
                for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                    for st in migration_statements(Dialect::Postgres, sql) {
                        db.batch(&st).map_err(|e| format!("migration to version {}: {e}", i + 1))?;
                    }
                }
                db.batch("DELETE FROM dbbench_schema")?;
                db.execute("INSERT INTO dbbench_schema (version) VALUES (?)", &vals![SCHEMA_VERSION])?;
                db.batch("COMMIT")
            })();
            if r.is_err() {
                let _ = db.batch("ROLLBACK");
            }
            r
        }
        _ => {
            // Named locks are server-wide: the database's name keeps stores
            // in different databases apart (64 characters at most).
            const LOCK: &str = "LEFT(CONCAT('dbbench_store:', DATABASE()), 64)";
            let got = db.query(&format!("SELECT GET_LOCK({LOCK}, 60)"), &[])?;
            if got.first().and_then(|r| r.first()).and_then(Val::int) != Some(1) {
                return Err("another dbbench has been creating or upgrading this store's tables for 60 s; try again when it is done".into());
            }
            let r = migrate_mysql(db);
            let _ = db.query(&format!("SELECT RELEASE_LOCK({LOCK})"), &[]);
            r
        }
    }
}

/// MariaDB/MySQL commit every DDL statement on its own, so a migration
/// cannot be one transaction: its statements run one by one and the
/// version is written after each migration. One that fails half-way leaves
/// the tables it created; the error says so.
fn migrate_mysql(db: &mut Backend) -> Result<(), String> {
    db.batch("CREATE TABLE IF NOT EXISTS dbbench_schema (version INTEGER NOT NULL) ENGINE=InnoDB")?;
    let version = server_version(db)?.unwrap_or(0);
    check_version(version)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let statements = migration_statements(Dialect::Mysql, sql);
        for (k, st) in statements.iter().enumerate() {
            db.batch(st).map_err(|e| {
                let partial = if k > 0 {
                    format!(
                        "; MariaDB/MySQL cannot roll DDL back, so the {k} statement(s) before it stay applied: drop the tables of schema version {} (or the whole database) and open the store again",
                        i + 1
                    )
                } else {
                    String::new()
                };
                format!("migration to version {}: {e}{partial}", i + 1)
            })?;
        }
        db.batch("START TRANSACTION")?;
        let r = db
            .batch("DELETE FROM dbbench_schema")
            .and_then(|_| db.execute("INSERT INTO dbbench_schema (version) VALUES (?)", &vals![(i + 1) as i64]));
        match r {
            Ok(()) => db.batch("COMMIT")?,
            Err(e) => {
                let _ = db.batch("ROLLBACK");
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_documented() {
        let doc = include_str!("../docs/results-store.md");
        assert!(doc.contains(&format!("schema version {SCHEMA_VERSION}")));
        for sql in MIGRATIONS {
            for part in sql.split("CREATE TABLE ").skip(1) {
                let table = part.split_whitespace().next().unwrap();
                assert!(doc.contains(&format!("### {table}")), "docs/results-store.md lacks table {table}");
            }
        }
    }

    /// A test server's address from the environment, or None (skipped)
    /// outside CI, as tests/common's `server_env`.
    fn server_env(name: &str) -> Option<String> {
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => Some(v),
            _ => {
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("{name} is not set: CI must start the test servers (scripts/servers.sh up)");
                }
                eprintln!("skipped: {name} not set (start servers with scripts/servers.sh up DIR and source DIR/env)");
                None
            }
        }
    }

    /// Opens `location`, stores a run and reads it back through every
    /// public call; then checks that reopening changes nothing and that a
    /// newer schema is refused.
    fn round_trip(location: &str) {
        let s = Store::open(location).unwrap();
        let e = s
            .create_experiment("x", "", "x.toml", "", "h", None, &serde_json::json!({}), &serde_json::json!({}))
            .unwrap();
        assert_eq!(s.latest_experiment("x").unwrap().unwrap().status, "running");
        assert!(s.latest_experiment("y").unwrap().is_none());
        let c = s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap();
        assert_eq!(s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap(), c);
        // Names compare exactly on every backend (MariaDB's default collation would not).
        assert_ne!(s.configuration(e, 1, "Base ", "sqlite", &serde_json::json!({})).unwrap(), c);
        s.set_server_info(c, "1.0", &serde_json::json!({"a": "1"})).unwrap();
        s.set_server_info(c, "2.0", &serde_json::json!({})).unwrap();
        let cell = s.cell(e, c, "w", 4).unwrap();
        assert_eq!(s.cell(e, c, "w", 4).unwrap(), cell);
        let report = {
            use crate::run_document::{Counters, Interval, IntervalLatency, Rates};
            let mut d = crate::run_document::sample_document();
            let lat = |avg, max, p95| IntervalLatency {
                min: None,
                avg: Some(avg),
                max: Some(max),
                percentiles: [("95".to_string(), Some(p95))].into(),
            };
            d.total_time_s = 2.0;
            d.counters = Counters { events: 10, queries: 20, reads: 14, writes: 4, other: 2, ..Default::default() };
            d.rates_per_s = Rates { events: 5.0, queries: 10.0, ..Default::default() };
            d.latency.avg_ms = Some(1.5);
            d.latency.max_ms = Some(3.0);
            d.latency.percentiles_ms = [("95".to_string(), Some(2.5))].into();
            d.latency.histogram = Some("HIST".into());
            (d.service_time, d.rate) = (None, None);
            let row =
                |time_s, tps, qps| Interval { time_s, tps, qps, latency_ms: lat(1.0, 2.0, 2.0), ..Default::default() };
            d.intervals = vec![row(1.0, 5.0, 10.0)];
            d.warmup_intervals = vec![row(0.0, 4.0, 8.0)];
            Report::Run(Box::new(d))
        };
        let rec = RunRecord {
            cell_id: cell,
            repeat: 1,
            status: "ok".into(),
            report: Some(report),
            server_restarted: true,
            overhead: Overhead { ready_s: Some(0.5), ..Default::default() },
            metrics: vec![("m".into(), 1.0), ("m".into(), 7.5)],
            os_samples: vec![(1.0, serde_json::json!({"cpu_user_pct": 3.0}))],
            server_samples: vec![(1.0, serde_json::json!({"Questions": 3}))],
            server: Some(Product { name: "MariaDB".into(), version: "10.11.19-MariaDB".into() }),
            ..Default::default()
        };
        let id = s.insert_run(&rec).unwrap();
        assert!(s.run_exists(cell, 1).unwrap());
        assert!(!s.run_exists(cell, 2).unwrap());
        let err = s.insert_run(&rec).unwrap_err();
        assert!(err.starts_with(&format!("results store {}: ", s.location())), "{err}");
        // The failed insert left nothing behind: one transaction per run.
        let counts = s.rows("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM samples), (SELECT count(*) FROM run_metrics)", &[]).unwrap();
        assert_eq!(counts[0], vec![Val::Int(1), Val::Int(2), Val::Int(1)]);
        let row = &s
            .rows("SELECT rw_qps, histogram, report, \"reads\", server_restarted FROM runs WHERE id = ?", &vals![id])
            .unwrap()[0];
        assert_eq!(row[0].real(), Some(9.0));
        assert_eq!(row[1].text().as_deref(), Some("HIST"));
        assert!(!row[2].text().unwrap().contains("HIST"));
        assert_eq!(row[3].int(), Some(14));
        assert_eq!(row[4].int(), Some(1));
        let info = &s.rows("SELECT server_version FROM configurations WHERE id = ?", &vals![c]).unwrap()[0];
        assert_eq!(info[0].text().as_deref(), Some("1.0"), "server info is recorded at the first start only");
        let iv = &s
            .rows("SELECT time_s, tps, threads_running FROM run_intervals WHERE run_id = ? ORDER BY time_s", &vals![id])
            .unwrap();
        // The warmup tick is kept beside the measured one (time_s <= 0), outside every figure.
        assert_eq!(
            iv,
            &vec![vec![Val::Real(0.0), Val::Real(4.0), Val::Int(0)], vec![Val::Real(1.0), Val::Real(5.0), Val::Int(0)]]
        );
        // What reports read back, the same on every backend.
        let figures = s.run_figures(e).unwrap();
        assert_eq!(figures.len(), 1);
        let f = &figures[0];
        assert_eq!(
            (f.id, f.configuration_id, f.workload.as_str(), f.threads, f.repeat, f.status.as_str()),
            (id, c, "w", 4, 1, "ok")
        );
        assert_eq!(
            (f.tps, f.qps, f.rw_qps, f.latency_p95_ms, f.events),
            (Some(5.0), Some(10.0), Some(9.0), Some(2.5), Some(10))
        );
        assert_eq!(f.metrics, vec![("m".to_string(), 7.5)]);
        assert_eq!(s.run_histograms(e).unwrap(), vec![(id, "HIST".to_string())]);
        let points = s.interval_points(e).unwrap();
        assert_eq!(
            points.iter().map(|p| (p.run_id, p.time_s, p.tps)).collect::<Vec<_>>(),
            vec![(id, 0.0, Some(4.0)), (id, 1.0, Some(5.0))]
        );
        let info = s.experiment_info(e).unwrap().unwrap();
        assert_eq!((info.name.as_str(), info.status.as_str()), ("x", "running"));
        assert!(s.experiment_info(e + 1000).unwrap().is_none());
        let configs = s.configurations_of(e).unwrap();
        assert_eq!(configs[0].name, "base");
        assert_eq!(configs[0].server_version.as_deref(), Some("1.0"));
        assert_eq!(configs[0].variables, Some(serde_json::json!({"a": "1"})));
        assert_eq!(
            configs[0].products,
            vec!["MariaDB 10.11.19-MariaDB".to_string()],
            "per run, read back per configuration"
        );
        assert_eq!(s.experiments().unwrap()[0].0, e);
        assert_eq!(
            s.run_overheads(e).unwrap(),
            vec![("base".to_string(), true, Overhead { ready_s: Some(0.5), ..Default::default() })]
        );
        s.event(e, Some("base"), Some("w"), "prepared", Some(1.5), &serde_json::json!({})).unwrap();
        s.event(e, None, None, "warning", None, &serde_json::json!({"x": 1})).unwrap();
        assert!(s.has_event(e, "base", "w", "prepared").unwrap());
        assert_eq!(s.event_seconds(e, "prepared").unwrap(), vec![("base".to_string(), 1.5)]);
        assert!(!s.has_event(e, "base", "w", "crash").unwrap());
        // A connection the server closed while idle is reopened before the next use.
        {
            let long_ago = Instant::now().checked_sub(IDLE_CHECK * 2).unwrap();
            let mut db = s.db.borrow_mut();
            match &mut *db {
                Backend::Postgres(p) => {
                    let _ = p.client.batch_execute("SELECT pg_terminate_backend(pg_backend_pid())");
                    p.last_used = long_ago;
                }
                Backend::Mysql(m) => {
                    use mysql::prelude::Queryable;
                    let id = m.conn.connection_id();
                    let _ = m.conn.query_drop(format!("KILL {id}"));
                    m.last_used = long_ago;
                }
                Backend::Sqlite(_) => {}
            }
        }
        s.set_experiment_status(e, "finished").unwrap();
        assert_eq!(s.latest_experiment("x").unwrap().unwrap().status, "finished");
        drop(s);
        // Reopening an up-to-date store changes nothing.
        let s = Store::open(location).unwrap();
        assert_eq!(s.run_figures(e).unwrap().len(), 1);
        // A store written by a newer dbbench is refused.
        s.with(|db| match db {
            Backend::Sqlite(_) => db.batch("PRAGMA user_version = 99"),
            _ => db.batch("UPDATE dbbench_schema SET version = 99"),
        })
        .unwrap();
        drop(s);
        let err = Store::open(location).err().unwrap();
        assert!(
            err.contains(&format!(
                "schema version 99 is newer than this dbbench understands ({SCHEMA_VERSION}); use a newer dbbench"
            )),
            "{err}"
        );
    }

    /// A store written before runs recorded their server's product (schema
    /// version 1) is upgraded when opened: its runs keep their figures and
    /// have no product; new runs get one.
    #[test]
    fn a_version_1_store_is_upgraded() {
        let dir = std::env::temp_dir().join(format!("dbbench-store-v1-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v1.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(MIGRATIONS[0]).unwrap();
            c.execute_batch(
                "INSERT INTO experiments VALUES (1, 'x', '', 's.toml', '', 'h', 'finished', 't', NULL, '0', NULL, '{}', '{}');
                 INSERT INTO configurations VALUES (1, 1, 0, 'base', 'sqlite', '{}', '3.0', NULL);
                 INSERT INTO cells VALUES (1, 1, 1, 'w', 1);
                 INSERT INTO runs (id, cell_id, \"repeat\", seq, status, started_at, ended_at, argv, seed, cache, server_restarted, overhead, tps)
                   VALUES (1, 1, 1, 0, 'ok', 't', 't', '[]', 1, 'warm', 1, '{}', 5.0);
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        let s = Store::open(&path.display().to_string()).unwrap();
        assert_eq!(s.run_figures(1).unwrap()[0].tps, Some(5.0));
        assert!(s.configurations_of(1).unwrap()[0].products.is_empty(), "old runs have no product");
        let rec = RunRecord {
            cell_id: 1,
            repeat: 2,
            status: "ok".into(),
            server: Some(Product { name: "SQLite".into(), version: "3.46.0".into() }),
            ..Default::default()
        };
        s.insert_run(&rec).unwrap();
        assert_eq!(s.configurations_of(1).unwrap()[0].products, vec!["SQLite 3.46.0".to_string()]);
        drop(s);
        let version: i64 =
            Connection::open(&path).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn migrates_and_round_trips_a_run() {
        let dir = std::env::temp_dir().join(format!("dbbench-store-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        round_trip(&dir.join("r.sqlite").display().to_string());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stored document or overhead record that lacks a field (written by
    /// a build whose field had another name, or edited) is an error naming
    /// the run and the field, never a figure read as missing.
    #[test]
    fn a_stored_record_missing_a_field_is_one_clear_error() {
        use crate::tpch::document::{Metrics, Options, Params, Stream, TpchDocument};
        use crate::tpch::run::{Execution, Method, QueryResult};
        let dir = std::env::temp_dir().join(format!("dbbench-store-missing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = Store::open(&dir.join("r.sqlite").display().to_string()).unwrap();
        let e = s
            .create_experiment("x", "", "x.toml", "", "h", None, &serde_json::json!({}), &serde_json::json!({}))
            .unwrap();
        let c = s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap();
        let cell = s.cell(e, c, "tpch:Q1", 1).unwrap();
        let query = QueryResult {
            query: "Q1".into(),
            name: "Pricing Summary Report".into(),
            stream: 0,
            params: vec!["90".into()],
            sql: "SELECT 1".into(),
            executions: vec![Execution { seconds: None, timed_out: true, error: None, rows: 0, plan: None }],
            seconds: None,
            min_s: None,
            max_s: None,
            timed_out: true,
            error: None,
            plan: None,
            answer: None,
        };
        let doc = TpchDocument {
            schema: crate::tpch::document::SCHEMA.into(),
            schema_version: crate::tpch::document::SCHEMA_VERSION,
            tool: "dbbench".into(),
            version: "0".into(),
            test: "query".into(),
            driver: "sqlite".into(),
            server_version: "3".into(),
            scale_factor: 0.01,
            params: Params::Seed { seed: 1 },
            options: Options { timeout_s: Some(1.0), warmups: 0, repeats: 1, method: Method::Average, refresh: false },
            elapsed_s: 1.0,
            streams: vec![Stream { stream: 0, elapsed_s: 1.0, queries: vec![query] }],
            refresh: Vec::new(),
            metrics: Metrics::default(),
            notes: Vec::new(),
        };
        let rec = RunRecord {
            cell_id: cell,
            repeat: 1,
            status: "timeout".into(),
            report: Some(Report::Tpch(Box::new(doc))),
            ..Default::default()
        };
        let id = s.insert_run(&rec).unwrap();
        assert_eq!(s.runs_censored(e).unwrap(), 1);
        assert_eq!(s.tpch_documents(e).unwrap().len(), 1);
        // `timed_out` renamed in the stored document: an error, not "not censored".
        let stored = s.rows("SELECT report FROM runs WHERE id = ?", &vals![id]).unwrap()[0][0].text().unwrap();
        let renamed = stored.replace("\"timed_out\"", "\"stopped\"");
        s.with(|db| db.execute("UPDATE runs SET report = ? WHERE id = ?", &vals![renamed, id])).unwrap();
        for err in [s.runs_censored(e).unwrap_err(), s.tpch_documents(e).unwrap_err()] {
            assert!(err.starts_with(&format!("results store {}: run {id}: ", s.location())), "{err}");
            assert!(err.contains("missing field `timed_out`"), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
        // The overhead record: a renamed part, or one of the wrong type.
        for (text, why) in
            [("{\"ready\": 1.0}", "unknown field `ready`"), ("{\"ready_s\": \"soon\"}", "invalid type: string")]
        {
            s.with(|db| db.execute("UPDATE runs SET overhead = ? WHERE id = ?", &vals![text, id])).unwrap();
            let err = s.run_overheads(e).unwrap_err();
            assert!(err.contains(&format!("run {id}: overhead is not the lab's record ({why}")), "{err}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn round_trips_a_run_on_postgresql() {
        let (Some(host), Some(port)) = (server_env("DBBENCH_TEST_PGSQL_HOST"), server_env("DBBENCH_TEST_PGSQL_PORT"))
        else {
            return;
        };
        let db = format!("dbbench_store_test_{}", std::process::id());
        let admin = || {
            postgres::Config::new()
                .host(&host)
                .port(port.parse().unwrap())
                .user("sbtest")
                .dbname("sbtest")
                .connect(postgres::NoTls)
                .unwrap()
        };
        admin().batch_execute(&format!("DROP DATABASE IF EXISTS {db}")).unwrap();
        admin().batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
        round_trip(&format!("postgresql://sbtest@localhost:{port}/{db}?host={host}"));
        admin().batch_execute(&format!("DROP DATABASE {db}")).unwrap();
    }

    #[test]
    fn round_trips_a_run_on_mysql() {
        let Some(sock) = server_env("DBBENCH_TEST_MYSQL_SOCKET") else { return };
        use mysql::prelude::Queryable;
        let db = format!("dbbench_store_test_{}", std::process::id());
        let admin =
            || mysql::Conn::new(mysql::OptsBuilder::new().socket(Some(sock.clone())).user(Some("sbtest"))).unwrap();
        admin().query_drop(format!("DROP DATABASE IF EXISTS {db}")).unwrap();
        admin().query_drop(format!("CREATE DATABASE {db}")).unwrap();
        round_trip(&format!("mysql://sbtest@localhost/{db}?socket={sock}"));
        admin().query_drop(format!("DROP DATABASE {db}")).unwrap();
    }

    #[test]
    fn placeholders_quotes_and_ignores_are_translated() {
        let sql = "SELECT \"repeat\", 'it''s ? \"x\"' FROM t WHERE a = ? AND b = ?";
        assert_eq!(translate(Dialect::Sqlite, sql), sql);
        assert_eq!(
            translate(Dialect::Postgres, sql),
            "SELECT \"repeat\", 'it''s ? \"x\"' FROM t WHERE a = $1 AND b = $2"
        );
        assert_eq!(translate(Dialect::Mysql, sql), "SELECT `repeat`, 'it''s ? \"x\"' FROM t WHERE a = ? AND b = ?");
        let ins = "INSERT OR IGNORE INTO cells (experiment_id, workload) VALUES (?, ?)";
        assert_eq!(translate(Dialect::Sqlite, ins), ins);
        assert_eq!(
            translate(Dialect::Postgres, ins),
            "INSERT INTO cells (experiment_id, workload) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        );
        assert_eq!(translate(Dialect::Mysql, ins), "INSERT INTO cells (experiment_id, workload) VALUES (?, ?) ON DUPLICATE KEY UPDATE experiment_id = experiment_id");
    }

    #[test]
    fn schema_ddl_is_substituted_per_dialect() {
        // SQLite gets the released text unchanged: old and new stores agree.
        assert_eq!(migration_statements(Dialect::Sqlite, MIGRATIONS[0]), vec![MIGRATIONS[0].to_string()]);
        let pg = migration_statements(Dialect::Postgres, MIGRATIONS[0]).join(";\n");
        let my = migration_statements(Dialect::Mysql, MIGRATIONS[0]).join(";\n");
        for s in [&pg, &my] {
            assert_eq!(s.matches("CREATE TABLE").count(), 8, "{s}");
            assert!(!s.contains("--") && !s.contains(" INTEGER") && !s.contains(" REAL"), "{s}");
        }
        assert!(pg.contains("\"id\" BIGSERIAL PRIMARY KEY"), "{pg}");
        assert!(pg.contains("\"experiment_id\" BIGINT NOT NULL REFERENCES experiments(id)"), "{pg}");
        assert!(pg.contains("\"tps\" DOUBLE PRECISION,"), "{pg}");
        assert!(pg.contains("\"name\" TEXT NOT NULL"), "{pg}");
        assert!(pg.contains("UNIQUE (\"cell_id\", \"repeat\")"), "{pg}");
        assert!(pg.contains("CREATE INDEX samples_run ON samples(\"run_id\", \"source\", \"time_s\")"), "{pg}");
        assert!(my.contains("`id` BIGINT AUTO_INCREMENT PRIMARY KEY"), "{my}");
        assert!(my.contains("`tps` DOUBLE,"), "{my}");
        assert!(my.contains("`repeat` BIGINT NOT NULL"), "{my}");
        assert!(my.contains("`spec_text` LONGTEXT NOT NULL"), "{my}");
        // Text in a key or index must have a bounded length.
        for keyed in [
            "`name` VARCHAR(255) NOT NULL,\n    `kind`",
            "`workload` VARCHAR(255)",
            "`source` VARCHAR(255)",
            "`name` VARCHAR(255) NOT NULL,\n    `value`",
        ] {
            assert!(my.contains(keyed), "{keyed} in {my}");
        }
        assert!(my.contains("`kind` LONGTEXT NOT NULL"), "{my}");
        assert_eq!(my.matches(") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin").count(), 8, "{my}");
        // Later migrations may add columns.
        assert_eq!(
            migration_statements(
                Dialect::Mysql,
                "ALTER TABLE runs ADD COLUMN note TEXT; -- why\nALTER TABLE runs ADD COLUMN cpu_s REAL"
            ),
            vec!["ALTER TABLE runs ADD COLUMN `note` LONGTEXT", "ALTER TABLE runs ADD COLUMN `cpu_s` DOUBLE"]
        );
    }

    #[test]
    fn store_urls_are_parsed_and_passwords_hidden() {
        assert_eq!(
            parse_location("dbbench-lab/results.sqlite").unwrap(),
            Location::File(PathBuf::from("dbbench-lab/results.sqlite"))
        );
        let Location::Server(u) = parse_location("postgresql://team:p%40ss@db.example:5433/lab?host=/run/pg").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (u.dialect, u.user.as_str(), u.password.as_deref(), u.host.as_str(), u.port, u.db.as_str()),
            (Dialect::Postgres, "team", Some("p@ss"), "db.example", Some(5433), "lab")
        );
        assert_eq!(u.socket.as_deref(), Some("/run/pg"));
        let Location::Server(u) = parse_location("mysql://sbtest@/lab?socket=/tmp/m.sock").unwrap() else { panic!() };
        assert_eq!((u.dialect, u.host.as_str(), u.port, u.password), (Dialect::Mysql, "localhost", None, None));
        let Location::Server(u) = parse_location("mariadb://u@[::1]:3307/x").unwrap() else { panic!() };
        assert_eq!((u.host.as_str(), u.port), ("::1", Some(3307)));
        for (bad, why) in [
            ("sqlite://x", "unknown scheme 'sqlite'"),
            ("postgresql://host/db", "names no user"),
            ("mysql://u@h", "names no database"),
            ("mysql://u@h:x/db", "port 'x' is not a number"),
            ("mysql://u@h/db?host=/x", "unknown URL parameter 'host=/x'; use mysql://"),
            ("postgresql://u:50%@h/db", "a '%' in the URL is not followed by two hex digits"),
        ] {
            let e = parse_location(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert_eq!(redact("postgresql://u:secret@h:1/db?host=/a@b:c"), "postgresql://u:<hidden>@h:1/db?host=/a@b:c");
        assert_eq!(redact("mysql://u@h/db"), "mysql://u@h/db");
        assert_eq!(redact("/x/y:z@w.sqlite"), "/x/y:z@w.sqlite");
        // A bad URL's message shows no password.
        let e = Store::open("postgresql://u:secret@h:99999/db").err().unwrap();
        assert!(
            e.starts_with("results store postgresql://u:<hidden>@h:99999/db: port '99999'") && !e.contains("secret"),
            "{e}"
        );
    }

    #[test]
    fn the_store_password_is_hidden_in_the_stored_spec() {
        let dir = std::env::temp_dir().join(format!("dbbench-store-secret-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut s = Store::open(&dir.join("r.sqlite").display().to_string()).unwrap();
        s.url_auth = Some(("team".into(), "s3cret".into()));
        let spec = "[experiment]\nstore = \"postgresql://team:s3cret@db/lab\"\n";
        let e = s
            .create_experiment("x", "", "x.toml", spec, "h", None, &serde_json::json!({}), &serde_json::json!({}))
            .unwrap();
        let text = s.rows("SELECT spec_text FROM experiments WHERE id = ?", &vals![e]).unwrap()[0][0].text().unwrap();
        assert_eq!(text, "[experiment]\nstore = \"postgresql://team:<hidden>@db/lab\"\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
