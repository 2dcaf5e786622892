//! What both MySQL clients share: error classes, LOAD DATA statements and their errors,
//! literals and fractions in MySQL's text form, the ASCII row check of `bulk_load_ascii`.

use std::fmt::{self, Write as _};

use crate::driver::number_text::push_f64;
use crate::driver::{Connection, DbError, ErrorKind, Outcome, RowSource, Value};

/// The server needs something the native client does not implement; the caller
/// falls back to the `mysql` crate.
#[derive(Debug)]
pub struct Unsupported(pub String);

/// The file name our LOAD DATA LOCAL statement gives its data: the only file
/// a server may ask us for (anything else is refused, so a malicious server
/// cannot read local files).
pub(super) const INFILE_NAME: &str = "dbbench-stream";

/// ER_UNSUPPORTED_PS: the statement cannot be prepared server-side.
pub(super) const ER_UNSUPPORTED_PS: u16 = 1295;

/// A lost connection, with libmysqlclient's client error numbers so that
/// ignore lists written for sysbench (2006, 2013) keep working.
pub(super) fn lost(e: &dyn fmt::Display, broken_pipe: bool) -> DbError {
    let (code, what) = if broken_pipe {
        (2006, "MySQL server has gone away")
    } else {
        (2013, "Lost connection to MySQL server during query")
    };
    DbError { kind: ErrorKind::ConnectionLost, code, sqlstate: "HY000".into(), message: format!("{what} ({e})") }
}

/// The error class of a server (or client library) error number.
pub(super) fn kind_for_code(code: u16) -> ErrorKind {
    match code {
        // Client-side "gone" codes, plus the server telling us it is killing
        // the connection (MariaDB 1927, shutdown 1053, MySQL 8 idle timeout 4031).
        2006 | 2013 | 2011 | 2055 | 1927 | 1053 | 4031 => ErrorKind::ConnectionLost,
        1213 => ErrorKind::Deadlock,
        1205 => ErrorKind::LockTimeout,
        1062 => ErrorKind::UniqueViolation,
        // ER_QUERY_INTERRUPTED (KILL QUERY), MySQL's max_execution_time and
        // MariaDB's max_statement_time.
        1317 | 3024 | 1969 => ErrorKind::Cancelled,
        _ => ErrorKind::Other,
    }
}

/// The LOAD DATA statement of `bulk_load` (both clients): our in-memory
/// stream in the line format of [`super::RowSource`], which has no
/// backslashes and no NULLs, so no escape character (`ESCAPED BY ''`); text
/// in utf8mb4 as the connection sends it, or with `binary` (`bulk_load_ascii`
/// into a table whose text columns keep ASCII as its own bytes: see
/// `load_ascii`) no conversion at all (`CHARACTER SET binary`). Both cut the
/// server's per-character parsing and well-formedness checks, its main cost
/// in a load (TPC-H SF 1 into MariaDB 10.11 on 2 cores: 22.2 s → 19.3–20.0 s).
pub(super) fn load_data_sql(table: &str, columns: &[&str], binary: bool) -> String {
    format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE {table} CHARACTER SET {} FIELDS TERMINATED BY '|' ESCAPED BY '' LINES TERMINATED BY '\\n' ({})",
        INFILE_NAME,
        if binary { "binary" } else { "utf8mb4" },
        columns.join(", ")
    )
}

/// Whether the server refused LOAD DATA LOCAL as such (local_infile=OFF, or
/// the client did not offer it): ER_NOT_ALLOWED_COMMAND 1148, MySQL 8's
/// ER_CLIENT_LOCAL_FILES_DISABLED 3948, MariaDB 10.5+'s
/// ER_LOAD_INFILE_CAPABILITY_DISABLED 4166. `bulk_load` then uses INSERTs.
pub(super) fn local_infile_refused(e: &DbError) -> bool {
    matches!(e.code, 1148 | 3948 | 4166)
}

/// The error for a LOAD DATA LOCAL request we refused with an empty file:
/// one for another file than our stream (`in_bulk_load`), or one caused by
/// a statement's own LOAD DATA LOCAL (dbbench never sends local files).
/// 2068 is libmysqlclient's CR_LOAD_DATA_LOCAL_INFILE_REJECTED.
pub(super) fn foreign_infile_error(name: &str, in_bulk_load: bool) -> DbError {
    let message = if in_bulk_load {
        let ours = INFILE_NAME;
        format!("LOAD DATA LOCAL: the server asked for file '{name}', not for the stream dbbench sent ('{ours}'); it got no data")
    } else {
        format!("LOAD DATA LOCAL INFILE '{name}': dbbench sends no local files (the server got an empty file)")
    };
    DbError { kind: ErrorKind::Other, code: 2068, sqlstate: "HY000".into(), message }
}

/// The error for a LOAD DATA whose row count is not the number of lines sent.
pub(super) fn rows_mismatch_error(table: &str, loaded: u64, lines: u64) -> DbError {
    DbError {
        kind: ErrorKind::Other,
        code: 0,
        sqlstate: String::new(),
        message: format!("LOAD DATA into {table}: the server loaded {loaded} rows of the {lines} lines sent"),
    }
}

/// The error for a load statement that left `count` warnings: a value was
/// truncated or converted (or a row skipped), so the table does not hold
/// the data given. Names the first warning, from `SHOW WARNINGS LIMIT 3`,
/// with its code.
pub(super) fn warnings_error(c: &mut dyn Connection, what: &str, count: u16) -> DbError {
    let first = match c.query("SHOW WARNINGS LIMIT 3") {
        Ok(Outcome::Rows(rs)) => rs
            .row(0)
            .map(|r| r.map(|c| String::from_utf8_lossy(c.unwrap_or_default()).into_owned()).collect::<Vec<_>>()),
        _ => None,
    };
    let (code, detail) = match first.as_deref() {
        Some([level, code, message]) => (code.parse().unwrap_or(0), format!("{level} {code}: {message}")),
        _ => (0, "(SHOW WARNINGS returned nothing)".to_string()),
    };
    DbError {
        kind: ErrorKind::Other,
        code,
        sqlstate: "HY000".into(),
        message: format!(
            "{what}: {count} warning(s): the server truncated or converted values or skipped rows; the first: {detail}"
        ),
    }
}

/// Appends `.ffffff` cut to the column's scale (31 = unspecified scale).
pub(super) fn push_fraction(t: &mut String, us: u32, decimals: u8) {
    let digits = match decimals {
        0..=6 => usize::from(decimals),
        _ if us != 0 => 6,
        _ => 0,
    };
    if digits > 0 {
        let f = format!("{us:06}");
        t.push('.');
        t.push_str(&f[..digits]);
    }
}

/// A string as a MySQL literal, escaped for the server's mode.
pub(super) fn quote_literal(s: &str, no_backslash_escapes: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_literal(&mut out, &Value::Text(s.to_string()), no_backslash_escapes);
    out
}

/// Appends a MySQL literal; strings are escaped for the server's mode.
pub(super) fn push_literal(out: &mut String, v: &Value, no_backslash_escapes: bool) {
    match v {
        // MySQL has no literal for NaN or infinities and would store 0: send NULL.
        Value::Null => out.push_str("NULL"),
        Value::Double(d) if !d.is_finite() => out.push_str("NULL"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Double(d) => push_f64(out, *d),
        Value::Text(s) => {
            out.push('\'');
            for c in s.chars() {
                match c {
                    '\'' if no_backslash_escapes => out.push_str("''"),
                    _ if no_backslash_escapes => out.push(c),
                    '\0' => out.push_str("\\0"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\x1a' => out.push_str("\\Z"),
                    '\\' | '\'' | '"' => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
    }
}

/// `bulk_load_ascii` for both clients: `load` is the client's LOAD DATA
/// (with INSERT fallback), told whether to send `CHARACTER SET binary`.
/// Binary only when every text column of `table` is in a character set
/// where ASCII is one byte per character (a utf16 column would take two
/// ASCII bytes as one character); the rows are checked to be ASCII either
/// way, and only whole lines reach the server, so a non-ASCII byte ends the
/// load before any part of its line is sent.
pub(super) fn load_ascii<C: Connection + ?Sized>(
    conn: &mut C,
    table: &str,
    columns: &[&str],
    rows: RowSource,
    load: impl FnOnce(&mut C, &str, &[&str], RowSource, bool) -> Result<u64, DbError>,
) -> Result<u64, DbError> {
    let binary = ascii_is_bytes(conn, table);
    let mut source = AsciiLines { rows, carry: Vec::new(), non_ascii: false };
    let loaded = load(conn, table, columns, &mut |buf: &mut Vec<u8>| source.take(buf), binary);
    if source.non_ascii {
        return Err(DbError {
            kind: ErrorKind::Other,
            code: 0,
            sqlstate: String::new(),
            message: format!("bulk load into {table}: a row holds a non-ASCII byte, but the rows were declared ASCII; the whole rows before it may be in the table"),
        });
    }
    loaded
}

/// Whether `table`'s text columns all use a character set in which ASCII
/// text is its own bytes. False when that cannot be found out (a name
/// needing quotes, a failed lookup): the caller then converts from utf8mb4.
fn ascii_is_bytes<C: Connection + ?Sized>(conn: &mut C, table: &str) -> bool {
    if table.is_empty() || !table.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return false;
    }
    let sql = format!(
        "SELECT DISTINCT CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{table}' AND CHARACTER_SET_NAME IS NOT NULL"
    );
    match conn.query(&sql) {
        Ok(Outcome::Rows(rs)) => {
            let sets = rs.text_rows();
            sets.iter().all(|r| {
                matches!(
                    r.first().and_then(|c| c.as_deref()),
                    Some("utf8mb4" | "utf8mb3" | "utf8" | "latin1" | "ascii" | "binary")
                )
            })
        }
        _ => false,
    }
}

/// A row source declared ASCII, as the client sees it: only whole lines
/// (a line's start is held back until its end has arrived and been
/// checked), and nothing more once a non-ASCII byte appears.
struct AsciiLines<'s> {
    rows: RowSource<'s>,
    /// Checked bytes of a line whose end has not arrived yet.
    carry: Vec<u8>,
    non_ascii: bool,
}

impl AsciiLines<'_> {
    fn take(&mut self, buf: &mut Vec<u8>) -> bool {
        let start = buf.len();
        buf.extend_from_slice(&self.carry);
        self.carry.clear();
        let fresh = buf.len();
        let more = (self.rows)(buf);
        if !buf[fresh..].is_ascii() {
            self.non_ascii = true;
            buf.truncate(start);
            return false;
        }
        if more {
            let cut = buf[start..].iter().rposition(|&b| b == b'\n').map_or(start, |i| start + i + 1);
            self.carry.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
        }
        more
    }
}
