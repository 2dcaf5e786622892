//! Embedded SQLite driver (the default driver), on `rusqlite` with a bundled
//! SQLite.
//!
//! Prepared statements live in rusqlite's per-connection statement cache
//! (`prepare_cached`), keyed by SQL text: a `Statement` borrows its
//! `Connection`, so it cannot be stored next to it without unsafe code. The
//! cache is grown so that every open statement fits; the price is one hash
//! lookup per execution.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{ffi, Connection as SqlConn, ErrorCode, InterruptHandle, OpenFlags};

use super::emulation::{closed_stmt, param_count_error, ps_mode_disabled, Emulated, Slots};
use super::number_text::{f64_cell, push_f64, write_int};
use super::{
    line_fields, Canceller, Connection, DbError, Driver, ErrorAction, ErrorKind, Lines, Outcome, ResultSet, RowSource,
    StmtId, Value,
};
use crate::options::{OptKind, OptionSpec, Options};
use crate::sqltext::Dialect;

/// Options of the SQLite driver, with their defaults.
pub fn options() -> Vec<OptionSpec> {
    vec![
        OptionSpec::new("sqlite_db", OptKind::String, "./dbbench.sqlite", "SQLite database file (created if missing)"),
        OptionSpec::new(
            "sqlite_journal_mode",
            OptKind::String,
            "wal",
            "SQLite journal mode {delete, truncate, persist, memory, wal, off}, set on every connection",
        ),
        OptionSpec::new(
            "sqlite_synchronous",
            OptKind::String,
            "normal",
            "SQLite synchronous mode {off, normal, full, extra}, set on every connection",
        ),
        OptionSpec::new(
            "sqlite_busy_timeout",
            OptKind::Int,
            "5000",
            "Milliseconds SQLite waits for a lock before reporting SQLITE_BUSY",
        ),
        OptionSpec::new(
            "sqlite_begin",
            OptKind::String,
            "deferred",
            "How a plain BEGIN runs {deferred, immediate, exclusive}; immediate avoids lock-upgrade deadlocks in read-write transactions",
        ),
        OptionSpec::new(
            "sqlite_ignore_errors",
            OptKind::List,
            "busy,locked,unique",
            "Errors that restart the event: busy, locked, unique, constraint, SQLite result codes, or 'all'",
        ),
    ]
}

// ---------------------------------------------------------------------------

/// One accepted `--sqlite-ignore-errors` item.
#[derive(Debug, Clone, PartialEq)]
enum Ignore {
    All,
    /// Primary result code (busy = 5, locked = 6, constraint = 19) or an extended code.
    Code(i64),
    /// Unique / primary key violations only.
    Unique,
}

fn parse_ignore(items: &[String]) -> Result<Vec<Ignore>, String> {
    items
        .iter()
        .map(|s| match s.to_ascii_lowercase().as_str() {
            "all" => Ok(Ignore::All),
            "busy" => Ok(Ignore::Code(ffi::SQLITE_BUSY as i64)),
            "locked" => Ok(Ignore::Code(ffi::SQLITE_LOCKED as i64)),
            "constraint" => Ok(Ignore::Code(ffi::SQLITE_CONSTRAINT as i64)),
            "unique" => Ok(Ignore::Unique),
            n => n.parse::<i64>().map(Ignore::Code).map_err(|_| {
                format!(
                    "invalid --sqlite-ignore-errors item '{s}': use busy, locked, unique, constraint, a SQLite result code, or 'all'"
                )
            }),
        })
        .collect()
}

fn pick<'a>(opts: &Options, name: &str, allowed: &[&'a str]) -> Result<&'a str, String> {
    let v = opts.str(name).trim().to_ascii_lowercase();
    allowed.iter().copied().find(|a| *a == v).ok_or_else(|| {
        format!("invalid --{} value '{}': use one of {}", name.replace('_', "-"), opts.str(name), allowed.join(", "))
    })
}

#[derive(Debug)]
struct Config {
    path: String,
    journal_mode: &'static str,
    synchronous: &'static str,
    busy_timeout: Duration,
    /// Replacement for a plain `BEGIN`, `None` for deferred.
    begin: Option<&'static str>,
    ignore: Vec<Ignore>,
    ps_disabled: bool,
}

/// The SQLite driver: every connection opens the same database file.
#[derive(Debug)]
pub struct SqliteDriver {
    cfg: Arc<Config>,
}

/// Builds the driver from the options; the error is one line naming the bad option.
pub fn create(opts: &Options) -> Result<Box<dyn Driver>, String> {
    let path = opts.str("sqlite_db").to_string();
    if path.is_empty() {
        return Err("--sqlite-db is empty: give the path of the SQLite database file".into());
    }
    let busy = opts.raw("sqlite_busy_timeout").trim();
    // SQLite takes the timeout as a C int of milliseconds.
    let busy_ms = busy.parse::<u64>().ok().filter(|ms| *ms <= i32::MAX as u64).ok_or_else(|| {
        format!("invalid --sqlite-busy-timeout value '{busy}': use a number of milliseconds, 0 to {}", i32::MAX)
    })?;
    let begin = match pick(opts, "sqlite_begin", &["deferred", "immediate", "exclusive"])? {
        "immediate" => Some("BEGIN IMMEDIATE"),
        "exclusive" => Some("BEGIN EXCLUSIVE"),
        _ => None,
    };
    let cfg = Config {
        path,
        journal_mode: pick(opts, "sqlite_journal_mode", &["delete", "truncate", "persist", "memory", "wal", "off"])?,
        synchronous: pick(opts, "sqlite_synchronous", &["off", "normal", "full", "extra"])?,
        busy_timeout: Duration::from_millis(busy_ms),
        begin,
        ignore: parse_ignore(&opts.list("sqlite_ignore_errors"))?,
        ps_disabled: ps_mode_disabled(opts)?,
    };
    Ok(Box::new(SqliteDriver { cfg: Arc::new(cfg) }))
}

impl Driver for SqliteDriver {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn connect(&self) -> Result<Box<dyn Connection>, DbError> {
        let conn = open(&self.cfg)?;
        let interrupt = Arc::new(Mutex::new(conn.get_interrupt_handle()));
        Ok(Box::new(SqliteConnection {
            conn,
            cfg: self.cfg.clone(),
            stmts: Slots::default(),
            interrupt,
            pending: Default::default(),
        }))
    }

    fn classify(&self, err: &DbError) -> ErrorAction {
        if err.kind == ErrorKind::ConnectFailed {
            return ErrorAction::Fatal;
        }
        let hit = self.cfg.ignore.iter().any(|i| match i {
            Ignore::All => true,
            Ignore::Unique => err.kind == ErrorKind::UniqueViolation,
            // A number matches the extended code or its primary code (low byte).
            Ignore::Code(c) => err.code == *c || (err.code & 0xff) == *c,
        });
        if hit {
            ErrorAction::Restart
        } else {
            ErrorAction::Fatal
        }
    }
}

/// Opens the file and applies the pragmas; any failure is ConnectFailed.
fn open(cfg: &Config) -> Result<SqlConn, DbError> {
    let fail = |e: rusqlite::Error| {
        let base = map_err(e);
        DbError {
            kind: ErrorKind::ConnectFailed,
            message: format!("cannot open SQLite database '{}': {}", cfg.path, base.message),
            ..base
        }
    };
    // NO_MUTEX: a connection is only ever used by its own client thread.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = SqlConn::open_with_flags(&cfg.path, flags).map_err(fail)?;
    // busy_timeout first, so the journal_mode change waits for other connections' locks.
    conn.busy_timeout(cfg.busy_timeout).map_err(fail)?;
    // Setting up can find the database busy without SQLite calling the busy
    // handler: the first read of a WAL database that no connection has open
    // recovers its index, and clients opening it together get
    // SQLITE_BUSY_RECOVERY; switching the journal mode takes an exclusive
    // lock (e.g. while parallel `prepare` threads open a new file together).
    // So retry a busy set-up for a bounded time ourselves, whatever
    // --sqlite-busy-timeout says: connecting is not an event whose busy
    // errors the run counts.
    let deadline = std::time::Instant::now() + cfg.busy_timeout.max(Duration::from_secs(5));
    loop {
        match configure(&conn, cfg) {
            Ok(()) => return Ok(conn),
            Err(e) => {
                let busy = matches!(&e, rusqlite::Error::SqliteFailure(fe, _)
                    if matches!(fe.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked));
                if !busy || std::time::Instant::now() >= deadline {
                    return Err(fail(e));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// Applies the journal mode (only when it differs: the switch takes an
/// exclusive lock) and the synchronous setting.
fn configure(conn: &SqlConn, cfg: &Config) -> rusqlite::Result<()> {
    let current: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    // Values come from fixed lists, so formatting them into SQL is safe.
    let sql = if current.eq_ignore_ascii_case(cfg.journal_mode) {
        format!("PRAGMA synchronous={};", cfg.synchronous)
    } else {
        format!("PRAGMA journal_mode={}; PRAGMA synchronous={};", cfg.journal_mode, cfg.synchronous)
    };
    conn.execute_batch(&sql)
}

/// Maps a rusqlite error: the code is SQLite's extended result code.
fn map_err(e: rusqlite::Error) -> DbError {
    match e {
        rusqlite::Error::SqliteFailure(fe, msg) => {
            let kind = match fe.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => ErrorKind::Busy,
                ErrorCode::ConstraintViolation
                    if matches!(
                        fe.extended_code,
                        ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                    ) =>
                {
                    ErrorKind::UniqueViolation
                }
                // sqlite3_interrupt(): a Canceller.
                ErrorCode::OperationInterrupted => ErrorKind::Cancelled,
                _ => ErrorKind::Other,
            };
            DbError {
                kind,
                code: fe.extended_code as i64,
                sqlstate: String::new(),
                message: msg.unwrap_or_else(|| fe.to_string()),
            }
        }
        other => DbError { kind: ErrorKind::Other, code: 0, sqlstate: String::new(), message: other.to_string() },
    }
}

#[derive(Debug)]
enum Stmt {
    /// SQL text, the key of the statement in rusqlite's cache.
    Cached(String),
    Emulated(Emulated),
}

/// Binds a [`Value`] without copying it.
struct Param<'a>(&'a Value);

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Double(d) => ValueRef::Real(*d),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// One SQLite connection with its statement table.
pub struct SqliteConnection {
    conn: SqlConn,
    cfg: Arc<Config>,
    stmts: Slots<Stmt>,
    /// Interrupts this connection; shared with cancellers, replaced on reconnect.
    interrupt: Arc<Mutex<InterruptHandle>>,
    /// Results of a multi-statement query after its first
    /// (`next_result`), in order.
    pending: std::collections::VecDeque<Outcome>,
}

/// Cancels a SQLite statement with `sqlite3_interrupt()`.
struct SqliteCanceller(Arc<Mutex<InterruptHandle>>);

impl Canceller for SqliteCanceller {
    fn cancel(&self) -> Result<(), DbError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).interrupt();
        Ok(())
    }
}

/// What `bulk_load` checks a field against before binding it. SQLite
/// stores any text in any column (a column's affinity converts only text
/// that looks like a number), so an `x` loaded into an INTEGER column or
/// `1995-13-45` into a DATE column would be kept as text, silently, and
/// change every query over it. MySQL and PostgreSQL refuse such values;
/// these checks make SQLite refuse them too.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FieldCheck {
    /// TEXT, BLOB and unknown types: anything.
    Any,
    /// INTEGER, REAL and DECIMAL/NUMERIC types: a decimal number.
    Number,
    /// DATE: `YYYY-MM-DD`, a real calendar day.
    Date,
}

impl FieldCheck {
    /// The check for a declared column type, following SQLite's affinity rules.
    fn for_declared_type(decl: &str) -> FieldCheck {
        let t = decl.to_ascii_uppercase();
        let has = |w: &str| t.contains(w);
        if has("INT") {
            FieldCheck::Number
        } else if has("CHAR") || has("CLOB") || has("TEXT") || has("BLOB") || t.is_empty() {
            FieldCheck::Any
        } else if has("REAL") || has("FLOA") || has("DOUB") || has("DEC") || has("NUMERIC") {
            FieldCheck::Number
        } else if t == "DATE" {
            FieldCheck::Date
        } else {
            FieldCheck::Any
        }
    }

    /// Whether `f` passes, else what it should have been.
    fn check(self, f: &str) -> Result<(), &'static str> {
        match self {
            FieldCheck::Any => Ok(()),
            FieldCheck::Number if is_decimal_number(f) => Ok(()),
            FieldCheck::Number => Err("a number"),
            FieldCheck::Date if is_date(f) => Ok(()),
            FieldCheck::Date => Err("a date (YYYY-MM-DD)"),
        }
    }
}

/// An integer or decimal literal, optionally signed, with an optional exponent:
/// what SQLite's numeric affinity turns into a number.
fn is_decimal_number(f: &str) -> bool {
    let b = f.trim().as_bytes();
    let b = b.strip_prefix(b"-").or_else(|| b.strip_prefix(b"+")).unwrap_or(b);
    let mant_end = b.iter().position(|&c| c == b'e' || c == b'E').unwrap_or(b.len());
    let (mant, exp) = b.split_at(mant_end);
    let digits = mant.iter().filter(|c| c.is_ascii_digit()).count();
    let dots = mant.iter().filter(|&&c| c == b'.').count();
    let exp_ok = match exp.get(1..) {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(b"-").or_else(|| e.strip_prefix(b"+")).unwrap_or(e);
            !e.is_empty() && e.iter().all(u8::is_ascii_digit)
        }
    };
    digits > 0 && dots <= 1 && digits + dots == mant.len() && exp_ok
}

/// `YYYY-MM-DD` naming a day of the proleptic Gregorian calendar.
fn is_date(f: &str) -> bool {
    let b = f.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| {
        f.get(r).filter(|s| s.bytes().all(|c| c.is_ascii_digit())).and_then(|s| s.parse::<u32>().ok())
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else { return false };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

impl SqliteConnection {
    /// The check for each of `columns` of `table`, from `PRAGMA table_info`.
    fn field_checks(&self, table: &str, columns: &[&str]) -> Result<Vec<FieldCheck>, DbError> {
        let mut st = self.conn.prepare("SELECT name, type FROM pragma_table_info(?1)").map_err(map_err)?;
        let declared: Vec<(String, String)> =
            st.query_map([table], |r| Ok((r.get(0)?, r.get(1)?))).and_then(Iterator::collect).map_err(map_err)?;
        Ok(columns
            .iter()
            .map(|c| {
                // A column SQLite does not know fails at prepare, with its message.
                declared
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(c))
                    .map_or(FieldCheck::Any, |(_, t)| FieldCheck::for_declared_type(t))
            })
            .collect())
    }

    /// Inserts every row with one prepared statement (inside the caller's transaction).
    fn insert_lines(&self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        let checks = self.field_checks(table, columns)?;
        let params = vec!["?"; columns.len()].join(", ");
        // Not cached: a one-off statement would only evict the prepared ones.
        let mut st = self
            .conn
            .prepare(&format!("INSERT INTO {table} ({}) VALUES ({params})", columns.join(", ")))
            .map_err(map_err)?;
        let mut lines = Lines::new(rows);
        let mut loaded = 0;
        while let Some((line_no, line)) = lines.next_line() {
            let fields = line_fields(table, line_no, line, columns.len())?;
            for (i, f) in fields.iter().enumerate() {
                if let Err(want) = checks[i].check(f) {
                    return Err(DbError {
                        kind: ErrorKind::Other,
                        code: i64::from(ffi::SQLITE_MISMATCH),
                        sqlstate: String::new(),
                        message: format!(
                            "datatype mismatch: bulk load into {table}: row {line_no}, column {}: '{f}' is not {want}",
                            columns[i]
                        ),
                    });
                }
                // Bound as text: the column's affinity converts numbers.
                st.raw_bind_parameter(i + 1, *f).map_err(map_err)?;
            }
            st.raw_execute().map_err(map_err)?;
            loaded += 1;
        }
        Ok(loaded)
    }
}

impl SqliteConnection {
    /// Applies `--sqlite-begin` to a plain `BEGIN [TRANSACTION]`.
    fn rewrite<'a>(&self, sql: &'a str) -> &'a str {
        match self.cfg.begin {
            Some(b) if is_plain_begin(sql) => b,
            _ => sql,
        }
    }

    /// Prepares into the cache (errors surface at prepare time, as with a server).
    fn warm(&self, sql: &str) -> Result<(), DbError> {
        // rusqlite's default capacity is 16; keep room for every open statement
        // (plus the one being added) so that none is evicted and re-prepared.
        let open = self.stmts.len() + 1;
        if open > 16 {
            self.conn.set_prepared_statement_cache_capacity(open * 2);
        }
        self.conn.prepare_cached(sql).map(drop).map_err(map_err)
    }
}

fn is_plain_begin(sql: &str) -> bool {
    let mut words = sql.trim().trim_end_matches(';').split_ascii_whitespace();
    matches!(words.next(), Some(w) if w.eq_ignore_ascii_case("begin"))
        && match words.next() {
            None => true,
            Some(w) => w.eq_ignore_ascii_case("transaction") && words.next().is_none(),
        }
}

/// Runs a bound statement: rows when it has columns, else the rows it changed.
fn run(conn: &SqlConn, st: &mut rusqlite::Statement<'_>) -> Result<Outcome, DbError> {
    let ncols = st.column_count();
    if ncols == 0 {
        // sqlite3_changes() keeps the count of the last INSERT/UPDATE/DELETE, so a
        // following COMMIT would report it again; total_changes() tells whether
        // this statement changed anything.
        let before = conn.total_changes();
        st.raw_execute().map_err(map_err)?;
        let n = if conn.total_changes() == before { 0 } else { conn.changes() };
        return Ok(Outcome::Affected(n));
    }
    let mut rs = ResultSet::new(ncols);
    let mut rows = st.raw_query();
    while let Some(row) = rows.next().map_err(map_err)? {
        for i in 0..ncols {
            match row.get_ref(i).map_err(map_err)? {
                ValueRef::Null => rs.push_null(),
                ValueRef::Integer(v) => rs.push_with(|b| write_int(b, v)),
                ValueRef::Real(v) => rs.push_bytes(&f64_cell(v)),
                ValueRef::Text(t) | ValueRef::Blob(t) => rs.push_bytes(t),
            }
        }
        rs.end_row();
    }
    Ok(Outcome::Rows(rs))
}

/// SQLite literal for client-side emulation: `'` doubled, numbers as text.
fn push_literal(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("NULL"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        // SQLite has no literal for NaN (it becomes NULL anyway); 9e999 overflows to ±Inf.
        Value::Double(d) if d.is_nan() => out.push_str("NULL"),
        Value::Double(d) if d.is_infinite() => out.push_str(if *d > 0.0 { "9e999" } else { "-9e999" }),
        Value::Double(d) => push_f64(out, *d),
        Value::Text(s) => {
            out.push('\'');
            for c in s.chars() {
                if c == '\'' {
                    out.push('\'');
                }
                out.push(c);
            }
            out.push('\'');
        }
    }
}

impl Connection for SqliteConnection {
    fn query(&mut self, sql: &str) -> Result<Outcome, DbError> {
        // Results left from the previous command are gone with it.
        self.pending.clear();
        let sql = self.rewrite(sql);
        // Statement by statement (not cached: ad-hoc text such as bulk
        // inserts would evict the prepared statements), each compiled only
        // after the one before has run, so a script may create a table and
        // fill it in one query. Each one's result comes in order, as the
        // MySQL driver gives them: the first here, the rest through
        // `next_result`. A failing statement fails the query; the ones
        // before it have run, as on MySQL.
        // Collected apart: a failure leaves `pending` empty (cleared above).
        let mut batch = rusqlite::Batch::new(&self.conn, sql);
        let mut outcomes = std::collections::VecDeque::new();
        while let Some(mut st) = rusqlite::fallible_iterator::FallibleIterator::next(&mut batch).map_err(map_err)? {
            outcomes.push_back(run(&self.conn, &mut st)?);
        }
        let first = outcomes.pop_front().unwrap_or(Outcome::Affected(0));
        self.pending = outcomes;
        Ok(first)
    }

    fn more_results(&self) -> bool {
        !self.pending.is_empty()
    }

    fn next_result(&mut self) -> Option<Outcome> {
        self.pending.pop_front()
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let sql = self.rewrite(sql);
        let stmt = if self.cfg.ps_disabled {
            Stmt::Emulated(Emulated::new(sql, Dialect::Sqlite))
        } else {
            self.warm(sql)?;
            Stmt::Cached(sql.to_string())
        };
        Ok(self.stmts.insert(stmt))
    }

    fn execute(&mut self, stmt: StmtId, params: &[Value]) -> Result<Outcome, DbError> {
        self.pending.clear();
        let sql = match self.stmts.get(stmt) {
            Some(Stmt::Cached(sql)) => sql,
            Some(Stmt::Emulated(e)) => {
                let text = e.render(params, push_literal)?;
                return self.query(&text);
            }
            None => return Err(closed_stmt(stmt)),
        };
        let mut st = self.conn.prepare_cached(sql).map_err(map_err)?;
        if st.parameter_count() != params.len() {
            return Err(param_count_error(st.parameter_count(), params.len()));
        }
        for (i, p) in params.iter().enumerate() {
            st.raw_bind_parameter(i + 1, Param(p)).map_err(map_err)?;
        }
        run(&self.conn, &mut st)
    }

    fn close_statement(&mut self, stmt: StmtId) {
        // The compiled statement stays in the LRU cache until evicted: rusqlite
        // cannot drop a single entry, and reusing it is harmless.
        self.stmts.remove(stmt);
    }

    fn reconnect(&mut self) -> Result<(), DbError> {
        self.conn = open(&self.cfg)?;
        *self.interrupt.lock().unwrap_or_else(|p| p.into_inner()) = self.conn.get_interrupt_handle();
        // Statements are SQL keys: only the new connection's cache needs filling.
        for s in self.stmts.iter() {
            if let Stmt::Cached(sql) = s {
                self.warm(sql)?;
            }
        }
        Ok(())
    }

    fn quote(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        push_literal(&mut out, &Value::Text(s.to_string()));
        out
    }

    fn server_version(&mut self) -> String {
        rusqlite::version().to_string()
    }

    /// One prepared INSERT per row in one `BEGIN IMMEDIATE` transaction
    /// (the write lock from the start: no lock upgrade to fail halfway),
    /// fields bound as text after a type check ([`FieldCheck`]); any error
    /// rolls everything back.
    fn bulk_load(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(map_err)?;
        let result = self
            .insert_lines(table, columns, rows)
            .and_then(|n| self.conn.execute_batch("COMMIT").map(|()| n).map_err(map_err));
        if result.is_err() && !self.conn.is_autocommit() {
            // Some errors (an interrupt, a full disk) roll back by themselves; then there is nothing to undo.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        result
    }

    /// `sqlite3_interrupt()` on this connection.
    fn canceller(&mut self) -> Option<Box<dyn Canceller>> {
        Some(Box::new(SqliteCanceller(self.interrupt.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::test_support::{
        bulk_table_sql, check_bad_rows, check_bulk_load, check_cancel, chunks_of, driver_opts, insert_path,
        own_bulk_load, rows, txt, BULK_COLUMNS,
    };

    /// Removes a test database and its WAL files (for tests that write megabytes).
    fn remove_db(path: &str) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path}{suffix}"));
        }
    }

    /// A database path in a fresh test directory (removed when the guard drops).
    fn temp_db(name: &str) -> (crate::safe_fs::TestDir, String) {
        let dir = crate::safe_fs::TestDir::new("sqlite");
        let p = dir.join(format!("{name}.sqlite")).display().to_string();
        (dir, p)
    }

    fn opts(path: &str, extra: &[(&str, &str)]) -> Options {
        let mut o = driver_opts(options(), extra);
        o.set("sqlite_db", path);
        o
    }

    /// Clients that open a WAL database together, with no other connection
    /// open, race for its recovery (SQLITE_BUSY_RECOVERY); with
    /// `--sqlite-busy-timeout=0` every one of them must still connect.
    #[test]
    fn simultaneous_opens_of_a_wal_database_all_connect() {
        let (_dir, path) = temp_db("simultaneous-open");
        let o = opts(&path, &[("sqlite_journal_mode", "wal"), ("sqlite_busy_timeout", "0")]);
        let driver: Arc<dyn Driver> = Arc::from(create(&o).expect("driver"));
        {
            let mut c = driver.connect().expect("first connection");
            c.query("CREATE TABLE t (a INT); INSERT INTO t VALUES (1)").expect("create");
        }
        const CLIENTS: usize = 8;
        for round in 0..30 {
            let barrier = Arc::new(std::sync::Barrier::new(CLIENTS));
            let opened: Vec<_> = (0..CLIENTS)
                .map(|_| {
                    let (driver, barrier) = (driver.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        driver.connect().map(drop).map_err(|e| e.message)
                    })
                })
                .collect();
            for t in opened {
                t.join().unwrap().unwrap_or_else(|e| panic!("round {round}: {e}"));
            }
        }
        remove_db(&path);
    }

    #[test]
    fn numbers_format_round_trip() {
        for (x, s) in [(1.0, "1"), (0.1, "0.1"), (-2.5, "-2.5"), (1e300, "1e300"), (1e-7, "1e-7"), (0.0, "0")] {
            let mut out = String::new();
            push_f64(&mut out, x);
            assert_eq!(out, s);
            assert_eq!(out.parse::<f64>().ok(), Some(x));
        }
    }

    #[test]
    fn bad_options_are_one_line() {
        for (k, v) in [
            ("sqlite_journal_mode", "fast"),
            ("sqlite_synchronous", "2"),
            ("sqlite_busy_timeout", "x"),
            ("sqlite_busy_timeout", "99999999999999"),
            ("sqlite_begin", "later"),
            ("sqlite_ignore_errors", "oops"),
            ("db_ps_mode", "on"),
        ] {
            let err = create(&opts("x.sqlite", &[(k, v)])).err().expect("must fail");
            assert!(!err.contains('\n') && err.contains(v), "{err}");
        }
    }

    #[test]
    fn prepared_statements_and_outcomes() {
        let (_dir, path) = temp_db("basic");
        let drv = create(&opts(&path, &[])).expect("driver");
        let mut c = drv.connect().expect("connect");
        assert!(c.server_version().starts_with('3'));
        assert_eq!(
            c.query("CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, c TEXT, d REAL)"),
            Ok(Outcome::Affected(0))
        );
        let ins = c.prepare("INSERT INTO t (id, k, c, d) VALUES (?, ?, ?, ?)").expect("prepare");
        let p = |id, c: Value| vec![Value::Int(id), Value::Int(id * 10), c, Value::Double(0.5)];
        assert_eq!(c.execute(ins, &p(1, Value::Text("it's".into()))), Ok(Outcome::Affected(1)));
        assert_eq!(c.execute(ins, &p(2, Value::Null)), Ok(Outcome::Affected(1)));
        assert_eq!(c.query("SELECT 1 WHERE 0"), Ok(Outcome::Rows(ResultSet::new(1))));
        let sel = c.prepare("SELECT id, k, c, d FROM t WHERE id >= ? ORDER BY id").expect("prepare");
        assert_eq!(
            rows(c.execute(sel, &[Value::Int(1)])),
            vec![vec![txt("1"), txt("10"), txt("it's"), txt("0.5")], vec![txt("2"), txt("20"), None, txt("0.5")]]
        );
        assert_eq!(rows(c.execute(sel, &[Value::Int(9)])), Vec::<Vec<_>>::new());
        let upd = c.prepare("UPDATE t SET k = k + 1 WHERE id = ?").expect("prepare");
        assert_eq!(c.execute(upd, &[Value::Int(99)]), Ok(Outcome::Affected(0)));
        assert_eq!(c.query("BEGIN"), Ok(Outcome::Affected(0)));
        assert_eq!(c.execute(upd, &[Value::Int(1)]), Ok(Outcome::Affected(1)));
        // COMMIT right after a write must not repeat the write's count.
        assert_eq!(c.query("COMMIT"), Ok(Outcome::Affected(0)));
        assert_eq!(c.execute(sel, &[]).map_err(|e| e.kind), Err(ErrorKind::Other));

        // Duplicate key → UniqueViolation, ignorable by default.
        let err = c.execute(ins, &p(1, Value::Null)).expect_err("duplicate");
        assert_eq!((err.kind, err.code), (ErrorKind::UniqueViolation, ffi::SQLITE_CONSTRAINT_PRIMARYKEY as i64));
        assert_eq!(drv.classify(&err), ErrorAction::Restart);
        let strict = create(&opts(&path, &[("sqlite_ignore_errors", "busy")])).expect("driver");
        assert_eq!(strict.classify(&err), ErrorAction::Fatal);

        // Syntax error → Other, fatal.
        let err = c.query("SELEKT 1").expect_err("syntax");
        assert_eq!(err.kind, ErrorKind::Other);
        assert!(err.message.contains("syntax"), "{err}");
        assert_eq!(drv.classify(&err), ErrorAction::Fatal);

        // Statements survive a reconnect, ids stay valid; closed ids are reused.
        c.reconnect().expect("reconnect");
        assert_eq!(rows(c.execute(sel, &[Value::Int(2)])).len(), 1);
        c.close_statement(upd);
        assert!(c.execute(upd, &[Value::Int(1)]).is_err());
        assert_eq!(c.prepare("SELECT 1").expect("prepare"), upd);
    }

    #[test]
    fn many_statements_stay_cached() {
        let (_dir, path) = temp_db("many");
        let drv = create(&opts(&path, &[])).expect("driver");
        let mut c = drv.connect().expect("connect");
        let ids: Vec<_> = (0..100).map(|i| c.prepare(&format!("SELECT {i} + ?")).expect("prepare")).collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(rows(c.execute(*id, &[Value::Int(1)])), vec![vec![txt(&(i + 1).to_string())]]);
        }
    }

    #[test]
    fn ps_mode_disable_emulates_with_escaping() {
        let (_dir, path) = temp_db("emul");
        let drv = create(&opts(&path, &[("db_ps_mode", "disable")])).expect("driver");
        let mut c = drv.connect().expect("connect");
        c.query("CREATE TABLE e (id INTEGER, c TEXT, d REAL)").expect("ddl");
        let tricky = "it's a \\ back'slash '' ? \"q\"";
        let ins = c.prepare("INSERT INTO e VALUES (?, ?, ?)").expect("prepare");
        let params = [Value::Int(-7), Value::Text(tricky.into()), Value::Double(1e-7)];
        assert_eq!(c.execute(ins, &params), Ok(Outcome::Affected(1)));
        assert_eq!(c.execute(ins, &[Value::Null, Value::Null, Value::Null]), Ok(Outcome::Affected(1)));
        let sel = c.prepare("SELECT c, d FROM e WHERE id = ? AND c = ?").expect("prepare");
        let got = rows(c.execute(sel, &[Value::Int(-7), Value::Text(tricky.into())]));
        assert_eq!(got, vec![vec![txt(tricky), txt("1e-7")]]);
        assert_eq!(c.quote("a'b"), "'a''b'");
        assert_eq!(c.execute(sel, &[Value::Int(1)]).map_err(|e| e.kind), Err(ErrorKind::Other));
    }

    #[test]
    fn busy_is_mapped_and_begin_mode_applies() {
        let (_dir, path) = temp_db("busy");
        let drv = create(&opts(&path, &[("sqlite_busy_timeout", "0"), ("sqlite_begin", "immediate")])).expect("driver");
        let mut a = drv.connect().expect("a");
        let mut b = drv.connect().expect("b");
        a.query("CREATE TABLE b (id INTEGER PRIMARY KEY)").expect("ddl");
        // With sqlite_begin=immediate a plain BEGIN takes the write lock at once...
        a.query("BEGIN").expect("begin a");
        a.query("INSERT INTO b VALUES (1)").expect("insert");
        // ...so the second writer fails at its BEGIN, with busy_timeout=0 immediately.
        let err = b.query("begin transaction;").expect_err("busy");
        assert_eq!((err.kind, err.code), (ErrorKind::Busy, ffi::SQLITE_BUSY as i64));
        assert_eq!(drv.classify(&err), ErrorAction::Restart);
        a.query("COMMIT").expect("commit");
        b.query("BEGIN").expect("begin b");
        b.query("COMMIT").expect("commit b");
        assert!(is_plain_begin(" Begin ;") && !is_plain_begin("BEGIN DEFERRED") && !is_plain_begin("BEGINX"));
    }

    #[test]
    fn unopenable_file_is_connect_failed() {
        let drv = create(&opts("/nonexistent-dir/x/y.sqlite", &[])).expect("driver");
        let err = drv.connect().err().expect("must fail");
        assert_eq!(err.kind, ErrorKind::ConnectFailed);
        assert!(err.message.contains("/nonexistent-dir/x/y.sqlite"), "{err}");
        assert_eq!(drv.classify(&err), ErrorAction::Fatal);
    }

    #[test]
    fn field_checks_follow_affinity() {
        use FieldCheck::*;
        let types =
            [("INTEGER", Number), ("BIGINT", Number), ("DECIMAL(15,2)", Number), ("REAL", Number), ("date", Date)];
        for (t, want) in types.into_iter().chain([("CHAR(1)", Any), ("VARCHAR(44)", Any), ("", Any), ("DATETIME", Any)])
        {
            assert_eq!(FieldCheck::for_declared_type(t), want, "{t}");
        }
        for ok in ["1", "-12.50", "+3", ".5", "5.", "1e10", "1.5E-3", " 7 "] {
            assert!(is_decimal_number(ok), "{ok}");
        }
        for bad in ["", "x", "1.2.3", "1e", "--1", "inf", "NaN", "1,5", "."] {
            assert!(!is_decimal_number(bad), "{bad}");
        }
        for ok in ["1995-01-01", "2000-02-29", "1998-12-31"] {
            assert!(is_date(ok), "{ok}");
        }
        for bad in ["1995-13-01", "1900-02-29", "1995-04-31", "1995-1-01", "95-01-01", "1995/01/01", "x"] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    /// 100 000 rows in one transaction with a prepared INSERT, and through
    /// the INSERT path; bad rows (which SQLite itself would store as text)
    /// are errors, and nothing of a failed load stays.
    #[test]
    fn bulk_load_prepared_and_insert() {
        let (_dir, path) = temp_db("bulk");
        let mut c = create(&opts(&path, &[])).expect("driver").connect().expect("connect");
        check_bulk_load(c.as_mut(), "bulk", false, &own_bulk_load);
        let bad = [
            ("x|1.00|1995-01-01|A|n\n", "column k: 'x' is not a number"),
            ("2|1.00|1995-13-45|A|n\n", "column d: '1995-13-45' is not a date"),
            ("3|1.00\n", "has 2 field(s), 5 column(s)"),
            ("4|1.00|1995-01-01|A|n|extra\n", "has 6 field(s), 5 column(s)"),
        ];
        check_bad_rows(c.as_mut(), "bulk", &own_bulk_load, &bad);
        c.query(&bulk_table_sql("bulk")).expect("create");
        let stream = b"1|1.00|1995-01-01|A|n\n2|x|1995-01-01|A|n\n";
        let err = c.bulk_load("bulk", &BULK_COLUMNS, &mut chunks_of(stream, 5)).expect_err("bad");
        assert_eq!(err.code, i64::from(ffi::SQLITE_MISMATCH));
        assert_eq!(rows(c.query("SELECT COUNT(*) FROM bulk")), vec![vec![txt("0")]], "rolled back");
        c.query("DROP TABLE bulk").expect("drop");
        check_bulk_load(c.as_mut(), "bulk_insert", false, &insert_path);
        drop(c);
        remove_db(&path);
    }

    /// sqlite3_interrupt() stops a long recursive CTE; Cancelled, fatal unless listed.
    #[test]
    fn cancel_stops_a_running_statement() {
        let (_dir, path) = temp_db("cancel");
        let drv = create(&opts(&path, &[])).expect("driver");
        let mut c = drv.connect().expect("connect");
        // About ten seconds or more of work when nobody stops it.
        let long = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 200000000) SELECT COUNT(*) FROM r";
        let err = check_cancel(c.as_mut(), long);
        assert_eq!(err.code, i64::from(ffi::SQLITE_INTERRUPT), "{err}");
        assert_eq!(drv.classify(&err), ErrorAction::Fatal);
        let listed = create(&opts(&path, &[("sqlite_ignore_errors", "9")])).expect("driver");
        assert_eq!(listed.classify(&err), ErrorAction::Restart);
        drop(c);
        remove_db(&path);
    }
}
