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
/// Cells are stored row after row in one vector: one allocation per result
/// set instead of one per row (range queries return hundreds of rows).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ResultSet {
    /// Number of columns.
    pub columns: usize,
    /// Number of rows.
    pub nrows: usize,
    /// `nrows * columns` cells, row-major, in server order.
    pub cells: Vec<Option<Vec<u8>>>,
}

impl ResultSet {
    /// An empty result set with `columns` columns.
    pub fn new(columns: usize) -> ResultSet {
        ResultSet { columns, nrows: 0, cells: Vec::new() }
    }

    /// Appends one row; `cells` must yield exactly `columns` cells.
    pub fn push_row(&mut self, cells: impl IntoIterator<Item = Option<Vec<u8>>>) {
        self.cells.extend(cells);
        self.nrows += 1;
    }

    /// Row `i`, if any.
    pub fn row(&self, i: usize) -> Option<&[Option<Vec<u8>>]> {
        (i < self.nrows).then(|| &self.cells[i * self.columns..(i + 1) * self.columns])
    }

    /// All rows as separate vectors (for tests).
    #[cfg(test)]
    pub fn to_rows(&self) -> Vec<Vec<Option<Vec<u8>>>> {
        (0..self.nrows).filter_map(|i| self.row(i).map(<[_]>::to_vec)).collect()
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
