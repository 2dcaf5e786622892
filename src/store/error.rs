//! Why the results store failed, as a kind a caller can branch on (the lab
//! on a full disk, a reader on a file that is not a store, a gate that must
//! tell "no store" from "a regression"), and one line that holds the cause.
//!
//! The cause is the database library's error, classified into the kind
//! (SQLite's result code, the SQLSTATE, MariaDB/MySQL's errno) and its text
//! kept in the message (rusqlite's own, the server clients' made one line by
//! `sqlclient`). It is not kept as `source()`: `{:#}`, how
//! `subcommand::failed` prints, would print that text a second time.

use std::fmt;

/// The class of a results-store failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// `--store` / `store =` is neither a file path nor a URL dbbench reads.
    Location,
    /// No store where one was named (readers; `lab run` creates a file but
    /// not a server's database).
    Missing,
    /// A database or file that is not a dbbench results store, or a symlink
    /// where the store should be.
    NotAStore,
    /// Written by a newer dbbench: its schema version is above this one's.
    NewerSchema,
    /// A SQLite file that is damaged (not a database, fails `quick_check`).
    Damaged,
    /// Another process holds it: SQLite's lock past the busy timeout, a lock
    /// wait or deadlock on a server store, another dbbench migrating it.
    Busy,
    /// The disk or quota under the store is full (SQLite's SQLITE_FULL,
    /// PostgreSQL 53100, MariaDB/MySQL 1021/1114).
    Full,
    /// Not allowed: the file read-only or not openable for this user, the
    /// server refused the login or the grant.
    Denied,
    /// The store's server could not be reached or the connection broke.
    Unreachable,
    /// Anything else the database or the store's own checks reported.
    Other,
}

/// A results-store failure: its kind and one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    pub kind: StoreErrorKind,
    message: String,
}

/// A failure the store's own code found, of `kind`, as the error the
/// store's functions return.
pub(super) fn failure(kind: StoreErrorKind, message: impl Into<String>) -> anyhow::Error {
    StoreError { kind, message: message.into() }.into()
}

impl StoreError {
    pub(super) fn sqlite(e: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode as C;
        let kind = match e.sqlite_error_code() {
            Some(C::DatabaseCorrupt | C::NotADatabase) => StoreErrorKind::Damaged,
            Some(C::DatabaseBusy | C::DatabaseLocked) => StoreErrorKind::Busy,
            Some(C::DiskFull) => StoreErrorKind::Full,
            Some(C::ReadOnly | C::PermissionDenied | C::AuthorizationForStatementDenied) => StoreErrorKind::Denied,
            _ => StoreErrorKind::Other,
        };
        let message = match kind {
            StoreErrorKind::Damaged => format!("{e}: {DAMAGED}"),
            _ => e.to_string(),
        };
        StoreError { kind, message }
    }

    pub(super) fn postgres(e: postgres::Error) -> StoreError {
        use postgres::error::SqlState;
        let kind = match e.code() {
            None => StoreErrorKind::Unreachable,
            Some(s) if *s == SqlState::DISK_FULL => StoreErrorKind::Full,
            Some(s) if *s == SqlState::T_R_DEADLOCK_DETECTED || *s == SqlState::LOCK_NOT_AVAILABLE => {
                StoreErrorKind::Busy
            }
            Some(s) if *s == SqlState::INSUFFICIENT_PRIVILEGE || s.code().starts_with("28") => StoreErrorKind::Denied,
            Some(s) if s.code().starts_with("08") || *s == SqlState::ADMIN_SHUTDOWN => StoreErrorKind::Unreachable,
            // The URL's database does not exist.
            Some(s) if *s == SqlState::INVALID_CATALOG_NAME => StoreErrorKind::Missing,
            Some(_) => StoreErrorKind::Other,
        };
        StoreError { kind, message: crate::sqlclient::postgres_error(&e) }
    }

    pub(super) fn mysql(e: mysql::Error) -> StoreError {
        let kind = match &e {
            // ER_DISK_FULL, ER_RECORD_FILE_FULL (a table or tablespace full).
            mysql::Error::MySqlError(m) if matches!(m.code, 1021 | 1114) => StoreErrorKind::Full,
            // Lock wait timeout, deadlock.
            mysql::Error::MySqlError(m) if matches!(m.code, 1205 | 1213) => StoreErrorKind::Busy,
            // Access denied: to the server, the database, a table; a missing privilege.
            mysql::Error::MySqlError(m) if matches!(m.code, 1044 | 1045 | 1142 | 1227) => StoreErrorKind::Denied,
            // Unknown database: the URL's does not exist.
            mysql::Error::MySqlError(m) if m.code == 1049 => StoreErrorKind::Missing,
            mysql::Error::IoError(_) | mysql::Error::DriverError(mysql::DriverError::CouldNotConnect(_)) => {
                StoreErrorKind::Unreachable
            }
            _ => StoreErrorKind::Other,
        };
        StoreError { kind, message: crate::sqlclient::mysql_error(&e) }
    }
}

/// `e` told with more words: `reword` gets its whole text (`{:#}`) and
/// returns the new one; a store failure inside keeps its kind,
/// anything else becomes `Other`. For the places that put advice after the
/// message, where `.context` would put it before.
pub(super) fn reword(e: anyhow::Error, reword: impl FnOnce(&str) -> String) -> anyhow::Error {
    let message = reword(&format!("{e:#}"));
    match e.downcast::<StoreError>() {
        Ok(s) => StoreError { message, ..s }.into(),
        Err(_) => failure(StoreErrorKind::Other, message),
    }
}

impl StoreErrorKind {
    /// The kind of the store failure inside `e` (through any context), or
    /// `Other` for an error that is not one.
    pub fn of(e: &anyhow::Error) -> StoreErrorKind {
        e.downcast_ref::<StoreError>().map_or(StoreErrorKind::Other, |s| s.kind)
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// What to do about a damaged SQLite store (dbbench never writes to one).
pub(super) const DAMAGED: &str = "the file is damaged and dbbench leaves it as it is; copy out what is readable with `sqlite3 STORE .recover | sqlite3 recovered.sqlite` and give --store=recovered.sqlite (a backup, if any, is better)";
