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

pub mod mysql;
mod mysql_wire;
#[cfg(test)]
mod test_support;
pub mod pgsql;
pub mod sqlite;

use std::fmt;

/// A bound parameter or a literal for client-side emulation.
#[derive(Debug, Clone, PartialEq)]
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
    pub fn push_null(&mut self) {
        self.cells.push((0, NULL_CELL));
    }

    /// Appends a cell with these bytes.
    pub fn push_bytes(&mut self, b: &[u8]) {
        let start = self.data.len() as u32;
        self.data.extend_from_slice(b);
        self.cells.push((start, b.len() as u32));
    }

    /// Appends a cell written by `f` into the buffer (numbers formatted in
    /// place, without a temporary string).
    pub fn push_with(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        let start = self.data.len();
        f(&mut self.data);
        self.cells.push((start as u32, (self.data.len() - start) as u32));
    }

    /// Appends a cell: bytes or NULL.
    pub fn push_cell(&mut self, c: Option<&[u8]>) {
        match c {
            Some(b) => self.push_bytes(b),
            None => self.push_null(),
        }
    }

    /// Ends a row whose `columns` cells were pushed.
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
        (self.nrows > 0 && self.columns > 0).then(|| self.cell(0)).flatten().map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// Bytes of buffer this result set keeps allocated.
    pub fn retained_bytes(&self) -> usize {
        self.data.capacity() + self.cells.capacity() * std::mem::size_of::<(u32, u32)>()
    }

    /// All rows as separate vectors (for tests).
    #[cfg(test)]
    pub fn to_rows(&self) -> Vec<Vec<Option<Vec<u8>>>> {
        (0..self.nrows).filter_map(|i| self.row(i).map(|r| r.map(|c| c.map(<[u8]>::to_vec)).collect())).collect()
    }
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
    #[allow(dead_code)]
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

/// Creates the driver named `name` from the options.
pub fn create(name: &str, opts: &crate::options::Options) -> Result<std::sync::Arc<dyn Driver>, String> {
    let d = match name {
        "mysql" => mysql::create(opts)?,
        "pgsql" => pgsql::create(opts)?,
        "sqlite" => sqlite::create(opts)?,
        other => return Err(format!("invalid database driver name: '{other}' (available: sqlite, mysql, pgsql)")),
    };
    Ok(std::sync::Arc::from(d))
}

/// Options of every driver (for option parsing and `--help`).
pub fn all_options() -> Vec<crate::options::OptionSpec> {
    let mut v = sqlite::generic_options();
    v.extend(mysql::options());
    v.extend(pgsql::options());
    v.extend(sqlite::options());
    v
}
