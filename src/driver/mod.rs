//! Database drivers: one blocking connection per client.
//!
//! A [`Driver`] is created once per process from the command-line options
//! and hands out [`Connection`]s (round-robin over hosts/ports/sockets where
//! the driver supports lists). Every connection belongs to exactly one client
//! thread; nothing here is shared between clients except the driver's
//! immutable configuration and its round-robin counter.
//!
//! Statements use `?` placeholders whatever the database; drivers translate
//! (PostgreSQL: `$1..$n`). Results are fully buffered, as sysbench does, so a
//! statement's latency includes fetching all rows.
//!
//! Error policy (which errors restart an event, which reconnect, which are
//! fatal) is decided by [`Driver::classify`], from the driver's own
//! `--*-ignore-errors` list; the Lua binding layer (`script::sql`) acts on it.
//!
//! Two things serve the TPC-H tooling without the drivers knowing TPC-H:
//! [`Connection::bulk_load`] (rows as `|`-separated lines, loaded the fastest
//! way the database has) and [`Connection::canceller`] (stop a running
//! statement from another thread: per-query timeouts that also stop the
//! work on the server).

pub mod cancel;
pub(crate) mod emulation;
pub mod mysql;
pub(crate) mod number_text;
pub mod pgsql;
pub(crate) mod socket;
pub mod sqlite;
#[cfg(test)]
mod test_support;

use std::fmt;

/// A bound parameter or a literal for client-side emulation.
#[derive(Debug, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// Any integer type (TINYINT..BIGINT).
    Int(i64),
    /// FLOAT / DOUBLE.
    Double(f64),
    /// CHAR / VARCHAR and anything else sent as text.
    Text(String),
}

impl Clone for Value {
    fn clone(&self) -> Value {
        match self {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(*i),
            Value::Double(d) => Value::Double(*d),
            Value::Text(s) => Value::Text(s.clone()),
        }
    }

    /// Text into text reuses the buffer: a statement's parameters are
    /// copied before every execution, and a string parameter (the `c` and
    /// `pad` of oltp_insert) would otherwise be allocated and freed each
    /// time.
    fn clone_from(&mut self, source: &Value) {
        match (self, source) {
            (Value::Text(to), Value::Text(from)) => to.clone_from(from),
            (to, _) => *to = source.clone(),
        }
    }
}

/// A fully fetched result set. Cells are raw bytes in the server's text
/// representation (numbers formatted as decimal text), `None` for NULL.
///
/// All cell bytes live in one buffer and the cells are (offset, length)
/// pairs, row after row: filling a result set allocates nothing once its
/// buffers have grown, and a connection can get the previous one back
/// ([`Connection::recycle`]) so that steady-state statements allocate
/// nothing at all.
#[derive(Debug, Default, Clone)]
pub struct ResultSet {
    /// Number of columns.
    pub columns: usize,
    /// Number of rows.
    pub nrows: usize,
    data: Vec<u8>,
    /// `nrows * columns` cells, row-major: (start in `data`, length), with
    /// length `NULL_CELL` for NULL.
    cells: Vec<(u32, u32)>,
}

const NULL_CELL: u32 = u32::MAX;

/// The largest result set buffers a connection keeps for reuse.
const MAX_RECYCLED_BYTES: usize = 1 << 20;

impl PartialEq for ResultSet {
    fn eq(&self, o: &ResultSet) -> bool {
        self.columns == o.columns && self.nrows == o.nrows && (0..self.cells.len()).all(|i| self.cell(i) == o.cell(i))
    }
}

impl ResultSet {
    /// An empty result set with `columns` columns.
    pub fn new(columns: usize) -> ResultSet {
        ResultSet { columns, ..ResultSet::default() }
    }

    /// Empties the result set for reuse with `columns` columns, keeping its
    /// buffers.
    pub fn reset(&mut self, columns: usize) {
        self.columns = columns;
        self.nrows = 0;
        self.data.clear();
        self.cells.clear();
    }

    /// Appends a NULL cell.
    ///
    /// The appenders are `#[inline]`: the drivers call them once per cell
    /// from other codegen units, and out of line they cost the MariaDB
    /// client 3% more instructions per query (bench/guard.sh ipq).
    #[inline]
    pub fn push_null(&mut self) {
        self.cells.push((0, NULL_CELL));
    }

    /// Appends a cell with these bytes.
    #[inline]
    pub fn push_bytes(&mut self, b: &[u8]) {
        let start = self.data.len() as u32;
        self.data.extend_from_slice(b);
        self.cells.push((start, b.len() as u32));
    }

    /// Appends a cell written by `f` into the buffer (numbers formatted in
    /// place, without a temporary string).
    #[inline]
    pub fn push_with(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        let start = self.data.len();
        f(&mut self.data);
        self.cells.push((start as u32, (self.data.len() - start) as u32));
    }

    /// Appends a cell: bytes or NULL.
    #[inline]
    pub fn push_cell(&mut self, c: Option<&[u8]>) {
        match c {
            Some(b) => self.push_bytes(b),
            None => self.push_null(),
        }
    }

    /// Ends a row whose `columns` cells were pushed.
    #[inline]
    pub fn end_row(&mut self) {
        self.nrows += 1;
    }

    /// Appends one row; `cells` must yield exactly `columns` cells.
    pub fn push_row<B: AsRef<[u8]>>(&mut self, cells: impl IntoIterator<Item = Option<B>>) {
        for c in cells {
            self.push_cell(c.as_ref().map(AsRef::as_ref));
        }
        self.end_row();
    }

    /// Cell number `i` in row-major order (NULL = None).
    fn cell(&self, i: usize) -> Option<&[u8]> {
        let (start, len) = self.cells[i];
        (len != NULL_CELL).then(|| &self.data[start as usize..(start + len) as usize])
    }

    /// Row `i`'s cells, if there is such a row.
    pub fn row(&self, i: usize) -> Option<impl ExactSizeIterator<Item = Option<&[u8]>> + '_> {
        (i < self.nrows).then(|| (i * self.columns..(i + 1) * self.columns).map(|c| self.cell(c)))
    }

    /// The first row's first cell as text (for one-value queries).
    pub fn first_text(&self) -> Option<String> {
        (self.nrows > 0 && self.columns > 0)
            .then(|| self.cell(0))
            .flatten()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// All rows as text cells (NULL = None; bytes that are not UTF-8 replaced).
    pub fn text_rows(&self) -> Vec<Vec<Option<String>>> {
        (0..self.nrows)
            .filter_map(|i| self.row(i))
            .map(|r| r.map(|c| c.map(|b| String::from_utf8_lossy(b).into_owned())).collect())
            .collect()
    }

    /// Bytes of buffer this result set keeps allocated.
    pub fn retained_bytes(&self) -> usize {
        self.data.capacity() + self.cells.capacity() * std::mem::size_of::<(u32, u32)>()
    }

    /// Whether a connection should keep this result set's buffers for its
    /// next one ([`Connection::recycle`]): a huge result's are not worth
    /// keeping, at up to thousands of connections.
    pub fn worth_recycling(&self) -> bool {
        self.retained_bytes() <= MAX_RECYCLED_BYTES
    }

    /// All rows as separate vectors (for tests).
    #[cfg(test)]
    pub fn to_rows(&self) -> Vec<Vec<Option<Vec<u8>>>> {
        (0..self.nrows).filter_map(|i| self.row(i).map(|r| r.map(|c| c.map(<[u8]>::to_vec)).collect())).collect()
    }
}

/// `YYYY-MM-DD` of a day number counted from 1970-01-01, on the proleptic
/// Gregorian calendar (Howard Hinnant's civil-from-days).
pub(crate) fn date_from_unix_days(days: i64) -> String {
    let z = days + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{:04}-{month:02}-{day:02}", yoe + era * 400 + i64::from(month <= 2))
}

/// What a statement produced. sysbench counts `Rows` as a read (even when
/// empty), `Affected(n > 0)` as a write, `Affected(0)` as "other".
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The statement returned a result set.
    Rows(ResultSet),
    /// No result set; number of affected rows.
    Affected(u64),
}

/// Handle of a prepared statement within one connection. Stays valid across
/// [`Connection::reconnect`], which re-prepares every open statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StmtId(pub usize);

/// The broad class of a database error, used for the restart/reconnect policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The connection is gone (MySQL 2006/2013/2011/2055, PostgreSQL 08xxx/57P01,
    /// or an I/O error). A reconnect may help.
    ConnectionLost,
    /// Could not connect at all (bad host, refused, wrong password...).
    ConnectFailed,
    /// Deadlock detected (MySQL 1213, PostgreSQL 40P01).
    Deadlock,
    /// Lock wait timeout (MySQL 1205).
    LockTimeout,
    /// Serialization failure (PostgreSQL 40001).
    Serialization,
    /// Unique or primary key violation (MySQL 1062, PostgreSQL 23505, SQLite constraint).
    UniqueViolation,
    /// SQLite: database is locked / busy.
    Busy,
    /// The statement was cancelled: by a [`Canceller`], `KILL QUERY` or a
    /// server-side statement timeout (MySQL 1317, 3024, MariaDB 1969,
    /// PostgreSQL 57014, SQLite SQLITE_INTERRUPT). No default ignore list
    /// contains these codes, so a cancel ends a load-engine run unless the
    /// user lists the code (or `all`); the connection stays usable.
    Cancelled,
    /// Anything else (syntax error, missing table, ...).
    Other,
}

/// An error reported by the database or the client library. Always carries
/// the server's code and message so the user sees what the database said.
#[derive(Debug, Clone, PartialEq)]
pub struct DbError {
    /// Broad class, see [`ErrorKind`].
    pub kind: ErrorKind,
    /// Numeric code: MySQL errno, SQLite extended result code, 0 for PostgreSQL.
    pub code: i64,
    /// SQLSTATE when known (PostgreSQL always, MySQL usually), else empty.
    pub sqlstate: String,
    /// The server's or library's message.
    pub message: String,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.sqlstate.is_empty()) {
            (0, true) => write!(f, "{}", self.message),
            (0, false) => write!(f, "{} (SQLSTATE {})", self.message, self.sqlstate),
            (c, true) => write!(f, "error {c}: {}", self.message),
            (c, false) => write!(f, "error {c} (SQLSTATE {}): {}", self.sqlstate, self.message),
        }
    }
}

impl std::error::Error for DbError {}

/// What the binding layer must do with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorAction {
    /// Ignorable: roll back, count an error, restart the event.
    Restart,
    /// Ignorable connection loss: reconnect (counted), then restart the event.
    Reconnect,
    /// Not ignorable: the run fails.
    Fatal,
}

/// Chunks of rows for [`Connection::bulk_load`]: each call appends whole lines to `buf` and returns false when there are
/// no more rows (then `buf` may still hold a last chunk). A line is the row's fields separated by `|`, ending with `\n`;
/// fields are never NULL and contain no `|`, `\n`, `\r` or `\\` (TPC-H's data: dbgen's TBL lines without their trailing `|`).
pub type RowSource<'a> = &'a mut dyn FnMut(&mut Vec<u8>) -> bool;

/// Cancels the statement a connection is running, from another thread.
///
/// Cancelling is racy by nature (as `KILL QUERY` and PostgreSQL's cancel
/// request are): a cancel that arrives after the statement ended may stop
/// the connection's next statement (MySQL, PostgreSQL) or nothing (SQLite).
/// Callers cancel only while they know a statement runs and treat an
/// [`ErrorKind::Cancelled`] from the next one as part of the same timeout.
pub trait Canceller: Send + Sync {
    /// Asks the database to stop the running statement; returns once the
    /// request is delivered (the statement then fails with
    /// [`ErrorKind::Cancelled`]). An error means the request could not be sent.
    fn cancel(&self) -> Result<(), DbError>;
}

/// One open connection, used by exactly one client thread.
pub trait Connection {
    /// Runs a statement as text (`COM_QUERY` / simple query protocol).
    fn query(&mut self, sql: &str) -> Result<Outcome, DbError>;
    /// Prepares a statement server-side (`?` placeholders). With
    /// `--db-ps-mode=disable`, or where the server cannot prepare the
    /// statement, the driver emulates it client-side with correct escaping.
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError>;
    /// Executes a prepared statement with the given parameters.
    fn execute(&mut self, stmt: StmtId, params: &[Value]) -> Result<Outcome, DbError>;
    /// Closes a prepared statement (server resources freed).
    fn close_statement(&mut self, stmt: StmtId);
    /// Re-establishes the connection with the same parameters and
    /// re-prepares every statement that was open.
    fn reconnect(&mut self) -> Result<(), DbError>;
    /// Quotes a string as an SQL literal with this database's escaping rules.
    /// Used inside the drivers for client-side emulated statements; exposed
    /// for loaders that build literal SQL (TPC-H batched INSERT).
    fn quote(&self, s: &str) -> String;
    /// The server's version string (e.g. `10.11.6-MariaDB-0+deb12u1`).
    fn server_version(&mut self) -> String;
    /// Hands back a result set the caller is done with, for the driver to
    /// fill again (its buffers stay allocated). Drivers may ignore it.
    fn recycle(&mut self, _rs: ResultSet) {}
    /// Whether the last query or execute left results after the first
    /// (several statements in one query, a stored procedure's CALL).
    fn more_results(&self) -> bool {
        false
    }
    /// The next of those results, in order (sysbench 1.1's
    /// `con:next_result()`); None when there are no more. Drivers that
    /// keep only the first result return None.
    fn next_result(&mut self) -> Option<Outcome> {
        None
    }
    /// Loads rows into `table`, fields in `columns` order, as fast as this database allows; returns the number of rows loaded.
    ///
    /// `table` and `columns` are inserted into the SQL as written (the caller
    /// quotes them if it must). A row the database cannot store exactly (wrong
    /// field count, a value that does not convert, a value the server would
    /// truncate) is an error, never a NULL or a mangled value. Rows loaded
    /// before an error may stay in the table (COPY and SQLite leave none). The default
    /// is [`insert_rows`]: multi-row INSERT statements of about 1 MiB.
    fn bulk_load(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        insert_rows(self, table, columns, rows, &mut |_| Ok(()))
    }
    /// [`Connection::bulk_load`] for rows whose text is ASCII (TPC-H's), so
    /// that a driver may skip character set work: MariaDB/MySQL then load
    /// the bytes as they are, and a row holding a non-ASCII byte is an
    /// error (never a mangled value). The default is `bulk_load`.
    fn bulk_load_ascii(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        self.bulk_load(table, columns, rows)
    }
    /// A handle that cancels what this connection runs; None when the driver cannot.
    /// The handle follows the connection across [`Connection::reconnect`].
    fn canceller(&mut self) -> Option<Box<dyn Canceller>> {
        None
    }
}

/// Size at which [`insert_rows`] sends a multi-row INSERT.
const INSERT_STATEMENT_BYTES: usize = 1 << 20;

/// Splits a [`RowSource`]'s chunks into lines. A line cut between two chunks
/// is joined (the contract says chunks hold whole lines, but a cut costs
/// nothing to handle), and a last line without its `\n` still counts.
pub(crate) struct Lines<'a> {
    rows: RowSource<'a>,
    buf: Vec<u8>,
    /// Start of the first unread byte in `buf`.
    pos: usize,
    /// The source said there is nothing after what `buf` holds.
    done: bool,
    /// Number of the last line returned (1-based), for error messages.
    line: u64,
}

impl<'a> Lines<'a> {
    /// Reads lines from `rows`.
    pub fn new(rows: RowSource<'a>) -> Self {
        Lines { rows, buf: Vec::with_capacity(64 * 1024), pos: 0, done: false, line: 0 }
    }

    /// The next line without its `\n`, and its number (1-based); None at the end of the rows.
    pub fn next_line(&mut self) -> Option<(u64, &[u8])> {
        loop {
            if let Some(n) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let start = self.pos;
                self.pos += n + 1;
                self.line += 1;
                return Some((self.line, &self.buf[start..start + n]));
            }
            if self.done {
                if self.pos == self.buf.len() {
                    return None;
                }
                let start = std::mem::replace(&mut self.pos, self.buf.len());
                self.line += 1;
                return Some((self.line, &self.buf[start..]));
            }
            // Keep only the unfinished line, then ask for more.
            self.buf.drain(..self.pos);
            self.pos = 0;
            self.done = !(self.rows)(&mut self.buf);
        }
    }
}

/// The error for a line whose field count is not the column count.
fn field_count_error(table: &str, line: u64, got: usize, want: usize) -> DbError {
    DbError {
        kind: ErrorKind::Other,
        code: 0,
        sqlstate: String::new(),
        message: format!("bulk load into {table}: row {line} has {got} field(s), {want} column(s) were named"),
    }
}

/// Fields of one line as text (the loaders need `&str` to quote or bind).
pub(crate) fn line_fields<'l>(table: &str, line_no: u64, line: &'l [u8], want: usize) -> Result<Vec<&'l str>, DbError> {
    let text = std::str::from_utf8(line).map_err(|e| DbError {
        kind: ErrorKind::Other,
        code: 0,
        sqlstate: String::new(),
        message: format!("bulk load into {table}: row {line_no} is not valid UTF-8 ({e})"),
    })?;
    let fields: Vec<&str> = text.split('|').collect();
    if fields.len() != want {
        return Err(field_count_error(table, line_no, fields.len(), want));
    }
    Ok(fields)
}

/// The default [`Connection::bulk_load`]: multi-row `INSERT INTO table (columns) VALUES (...),(...)` statements of about
/// 1 MiB, every field quoted with [`Connection::quote`] (the databases convert quoted numbers and dates to the column's
/// type). `after_statement` runs after each INSERT (MySQL checks the statement's warnings there). Returns the rows
/// the INSERTs reported.
pub fn insert_rows<C: Connection + ?Sized>(
    c: &mut C,
    table: &str,
    columns: &[&str],
    rows: RowSource,
    after_statement: &mut dyn FnMut(&mut C) -> Result<(), DbError>,
) -> Result<u64, DbError> {
    let head = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
    let mut sql = String::with_capacity(INSERT_STATEMENT_BYTES + 64 * 1024);
    let (mut loaded, mut first_line, mut last_line) = (0u64, 0u64, 0u64);
    let mut lines = Lines::new(rows);
    // A server's "at row N" counts from the statement's first row: say which lines the statement held.
    let mut flush = |c: &mut C, sql: &mut String, first: u64, last: u64| -> Result<(), DbError> {
        let result = c.query(sql).and_then(|outcome| {
            if let Outcome::Affected(n) = outcome {
                loaded += n;
            }
            after_statement(c)
        });
        sql.clear();
        result.map_err(|e| DbError {
            message: format!("bulk load into {table}, rows {first}-{last}: {}", e.message),
            ..e
        })
    };
    while let Some((line_no, line)) = lines.next_line() {
        let fields = line_fields(table, line_no, line, columns.len())?;
        if sql.is_empty() {
            sql.push_str(&head);
            first_line = line_no;
        } else {
            sql.push(',');
        }
        last_line = line_no;
        sql.push('(');
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str(&c.quote(f));
        }
        sql.push(')');
        if sql.len() >= INSERT_STATEMENT_BYTES {
            flush(c, &mut sql, first_line, last_line)?;
        }
    }
    if !sql.is_empty() {
        flush(c, &mut sql, first_line, last_line)?;
    }
    // The closure borrows `loaded` mutably; it ends here.
    let _ = flush;
    Ok(loaded)
}

/// A configured driver; creates connections.
pub trait Driver: Send + Sync {
    /// `mysql`, `pgsql` or `sqlite`, as `drv:name()` returns it.
    fn name(&self) -> &'static str;
    /// Opens a new connection (the next host/port/socket in round-robin order).
    fn connect(&self) -> Result<Box<dyn Connection>, DbError>;
    /// Maps an error to the action the binding layer takes, honouring the
    /// driver's ignore list.
    fn classify(&self, err: &DbError) -> ErrorAction;
}

/// Reads `--db-bulk-load`: `Ok(true)` when bulk inserts may use the
/// driver's bulk load (`auto`), false for multi-row INSERTs only (`off`).
pub fn bulk_load_auto(opts: &crate::options::Options) -> Result<bool, String> {
    match opts.str("db_bulk_load").trim().to_ascii_lowercase().as_str() {
        "auto" | "" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("invalid --db-bulk-load value '{other}': use 'auto' or 'off'")),
    }
}

/// Creates the driver named `name` from the options.
pub fn create(name: &str, opts: &crate::options::Options) -> Result<std::sync::Arc<dyn Driver>, String> {
    bulk_load_auto(opts)?;
    let d = match name {
        "mysql" => mysql::create(opts)?,
        "pgsql" => pgsql::create(opts)?,
        "sqlite" => sqlite::create(opts)?,
        other => return Err(format!("invalid database driver name: '{other}' (available: sqlite, mysql, pgsql)")),
    };
    Ok(std::sync::Arc::from(d))
}

/// Takes `--mysql-password` / `--pgsql-password` from the environment when
/// the command line (or a config file) did not give them, so a password
/// never has to be in a process's argv, where every local user can read it
/// (`ps`, `/proc/PID/cmdline`). Precedence: the option, then
/// `DBBENCH_MYSQL_PASSWORD` / `DBBENCH_PGSQL_PASSWORD` (what `dbbench lab`
/// sets for its runs), then the clients' own `MYSQL_PWD` / `PGPASSWORD`. A
/// variable set to the empty string counts: no password, and the ones
/// after it are not looked at.
pub fn passwords_from_env(opts: &mut crate::options::Options) {
    use crate::secret::{MYSQL_NATIVE_ENV, MYSQL_PASSWORD_ENV, PGSQL_NATIVE_ENV, PGSQL_PASSWORD_ENV};
    for (option, vars) in [
        ("mysql_password", [MYSQL_PASSWORD_ENV, MYSQL_NATIVE_ENV]),
        ("pgsql_password", [PGSQL_PASSWORD_ENV, PGSQL_NATIVE_ENV]),
    ] {
        if opts.given(option) {
            continue;
        }
        if let Some(v) = vars.iter().find_map(|k| std::env::var(k).ok()) {
            opts.set(option, &v);
        }
    }
}

/// Options shared by all drivers (declared once, here): `--db-ps-mode`,
/// `--db-bulk-load`.
pub fn generic_options() -> Vec<crate::options::OptionSpec> {
    vec![
        crate::options::OptionSpec::new(
            "db_ps_mode",
            crate::options::OptKind::String,
            "auto",
            "Prepared statements usage mode {auto, disable}: disable = emulate them client-side with escaped literals",
        ),
        crate::options::OptionSpec::new(
            "db_bulk_load",
            crate::options::OptKind::String,
            "auto",
            "Bulk inserts (prepare, bulk_insert_*) {auto, off}: auto = LOAD DATA LOCAL (MySQL) or COPY (PostgreSQL) where the rows allow, off = multi-row INSERTs as sysbench",
        ),
    ]
}

/// Options of every driver (for option parsing and `--help`).
pub fn all_options() -> Vec<crate::options::OptionSpec> {
    let mut v = generic_options();
    v.extend(mysql::options());
    v.extend(pgsql::options());
    v.extend(sqlite::options());
    v
}

#[cfg(test)]
mod tests {
    use super::test_support::{chunks_of, driver_opts, lines_of, test_env};
    use super::*;

    /// Both native clients keep a result set's buffers for the next one only
    /// up to 1 MiB (a huge result's would stay with the connection).
    #[test]
    fn only_result_sets_up_to_a_mebibyte_are_worth_recycling() {
        let mut rs = ResultSet::new(1);
        rs.push_bytes(&[b'x'; 1000]);
        rs.end_row();
        assert!(rs.worth_recycling());
        rs.push_bytes(&vec![b'x'; MAX_RECYCLED_BYTES]);
        rs.end_row();
        assert!(!rs.worth_recycling(), "{} bytes retained", rs.retained_bytes());
    }

    /// Every line, with its number, as `Lines` reads them from `source`.
    fn read_all(mut source: impl FnMut(&mut Vec<u8>) -> bool) -> Vec<(u64, String)> {
        let mut lines = Lines::new(&mut source);
        let mut out = Vec::new();
        while let Some((n, l)) = lines.next_line() {
            out.push((n, String::from_utf8_lossy(l).into_owned()));
        }
        out
    }

    #[test]
    fn clone_from_copies_every_kind_and_reuses_a_text_buffer() {
        let mut v = Value::Text(String::with_capacity(64));
        let buffer = match &v {
            Value::Text(s) => s.as_ptr(),
            _ => unreachable!(),
        };
        v.clone_from(&Value::Text("pad".into()));
        match &v {
            Value::Text(s) => {
                assert_eq!(s, "pad");
                assert_eq!(s.as_ptr(), buffer, "text into text must keep the buffer");
            }
            other => panic!("{other:?}"),
        }
        for source in [Value::Int(-7), Value::Null, Value::Double(2.5), Value::Text("c".into()), Value::Int(3)] {
            v.clone_from(&source);
            assert_eq!(v, source);
        }
    }

    #[test]
    fn lines_join_cut_lines_and_keep_a_last_line_without_newline() {
        let stream = b"1|a\n22|bb\n\n333|ccc";
        let want: Vec<(u64, String)> =
            vec![(1, "1|a".into()), (2, "22|bb".into()), (3, "".into()), (4, "333|ccc".into())];
        for chunk in [1, 2, 3, 5, 100] {
            assert_eq!(read_all(chunks_of(stream, chunk)), want, "chunk {chunk}");
        }
        assert_eq!(read_all(lines_of(stream, 1)), want);
        assert_eq!(read_all(|_: &mut Vec<u8>| false), vec![]);
        // A source that says "more" with nothing in the chunk, then ends with a last chunk.
        let mut calls = 0;
        let got = read_all(|buf: &mut Vec<u8>| {
            calls += 1;
            if calls == 3 {
                buf.extend_from_slice(b"x|y\n");
            }
            calls < 3
        });
        assert_eq!(got, vec![(1, "x|y".into())]);
    }

    #[test]
    fn line_fields_check_field_counts_and_utf8() {
        assert_eq!(line_fields("t", 7, b"a|b|c", 3).map(|f| f.len()), Ok(3));
        let err = line_fields("t", 7, b"a|b", 3).expect_err("count");
        assert_eq!(err.message, "bulk load into t: row 7 has 2 field(s), 3 column(s) were named");
        assert!(line_fields("t", 8, b"a|\xff|c", 3).expect_err("utf8").message.contains("row 8 is not valid UTF-8"));
    }

    /// Columns of the lineitem-like benchmark table.
    const LINEITEM: [&str; 16] = [
        "l_orderkey",
        "l_partkey",
        "l_suppkey",
        "l_linenumber",
        "l_quantity",
        "l_extendedprice",
        "l_discount",
        "l_tax",
        "l_returnflag",
        "l_linestatus",
        "l_shipdate",
        "l_commitdate",
        "l_receiptdate",
        "l_shipinstruct",
        "l_shipmode",
        "l_comment",
    ];

    /// `n` lines shaped like dbgen's lineitem.tbl lines (without the trailing `|`), about 120 bytes each.
    fn lineitem_lines(n: u64) -> Vec<u8> {
        use std::io::Write as _;
        const INSTRUCT: [&str; 4] = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"];
        const MODE: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
        const TEXT: &str = "furiously regular deposits sleep slyly. carefully bold requests nag quickly";
        let mut out = Vec::with_capacity(n as usize * 128);
        for i in 0..n as i64 {
            let qty = i % 50 + 1;
            let price = qty * (90_000 + i * 37 % 110_000);
            let ship = 8035 + i * 13 % 2526;
            let _ = writeln!(
                out,
                "{}|{}|{}|{}|{qty}|{}.{:02}|0.{:02}|0.{:02}|{}|{}|{}|{}|{}|{}|{}|{}",
                i / 4 + 1,
                i * 7 % 200_000 + 1,
                i * 13 % 10_000 + 1,
                i % 4 + 1,
                price / 100,
                price % 100,
                i % 11,
                i % 9,
                ["A", "N", "R"][(i % 3) as usize],
                ["O", "F"][(i % 2) as usize],
                super::date_from_unix_days(ship),
                super::date_from_unix_days(ship + 30),
                super::date_from_unix_days(ship + i % 30 + 1),
                INSTRUCT[(i % 4) as usize],
                MODE[(i % 7) as usize],
                &TEXT[(i % 20) as usize..(i % 20 + 10 + i % 33) as usize],
            );
        }
        out
    }

    /// Load speed of every path on the dev servers (not a timed test: run it
    /// by hand with `cargo test --release --bin dbbench bench_bulk_load -- --ignored --nocapture`;
    /// DBBENCH_BENCH_ROWS sets the row count, default 1 000 000).
    #[test]
    #[ignore]
    fn bench_bulk_load() {
        let n: u64 = std::env::var("DBBENCH_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
        let data = lineitem_lines(n);
        let ddl = |t: &str| {
            format!(
                "CREATE TABLE {t} (l_orderkey INTEGER NOT NULL, l_partkey INTEGER NOT NULL, l_suppkey INTEGER NOT NULL, l_linenumber INTEGER NOT NULL, \
                 l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL, \
                 l_returnflag CHAR(1) NOT NULL, l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, \
                 l_receiptdate DATE NOT NULL, l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL)"
            )
        };
        let run = |label: &str, c: &mut dyn Connection, insert: bool| {
            let t = "dbb_bench_lineitem";
            c.query(&format!("DROP TABLE IF EXISTS {t}")).expect("drop");
            c.query(&ddl(t)).expect("create");
            let mut source = lines_of(&data, 8192);
            let t0 = std::time::Instant::now();
            let loaded = if insert {
                insert_rows(c, t, &LINEITEM, &mut source, &mut |_| Ok(()))
            } else {
                c.bulk_load(t, &LINEITEM, &mut source)
            };
            let secs = t0.elapsed().as_secs_f64();
            assert_eq!(loaded.unwrap_or_else(|e| panic!("{label}: {e}")), n);
            eprintln!(
                "{label:<40} {n} rows in {secs:6.2} s: {:>9.0} rows/s, {:5.1} MB/s",
                n as f64 / secs,
                data.len() as f64 / secs / 1e6
            );
            c.query(&format!("DROP TABLE {t}")).expect("drop");
        };
        eprintln!("{n} lineitem-like lines, {:.1} MB", data.len() as f64 / 1e6);
        if let Some(socket) = test_env("DBBENCH_TEST_MYSQL_SOCKET") {
            for client in ["native", "crate"] {
                let o = driver_opts(mysql::options(), &[("mysql_socket", &socket), ("mysql_client", client)]);
                let mut c = mysql::create(&o).expect("driver").connect().expect("connect");
                run(&format!("MariaDB {client} LOAD DATA LOCAL"), c.as_mut(), false);
                if client == "native" {
                    run("MariaDB native INSERT path", c.as_mut(), true);
                }
            }
        }
        if let (Some(host), Some(port)) = (test_env("DBBENCH_TEST_PGSQL_HOST"), test_env("DBBENCH_TEST_PGSQL_PORT")) {
            let o = driver_opts(pgsql::options(), &[("pgsql_host", &host), ("pgsql_port", &port)]);
            let mut c = pgsql::create(&o).expect("driver").connect().expect("connect");
            run("PostgreSQL COPY", c.as_mut(), false);
            run("PostgreSQL INSERT path", c.as_mut(), true);
        }
        let dir = crate::safe_fs::TestDir::new("bench");
        let mut o = driver_opts(sqlite::options(), &[]);
        o.set("sqlite_db", &dir.join("bench.sqlite").display().to_string());
        let mut c = sqlite::create(&o).expect("driver").connect().expect("connect");
        run("SQLite prepared INSERT, one transaction", c.as_mut(), false);
        run("SQLite INSERT path (autocommit)", c.as_mut(), true);
    }
}
