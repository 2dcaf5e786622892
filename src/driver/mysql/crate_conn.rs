//! The connection on the `mysql` crate: TLS, compression and the authentication plugins
//! the native client does not speak; results buffered as text cells.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc};

use mysql::consts::ColumnType;
use mysql::prelude::{Protocol, Queryable};
use mysql::{Column, Conn, DriverError, LocalInfileHandler, Opts, Params, QueryResult, Statement};

use super::protocol::{
    foreign_infile_error, kind_for_code, load_ascii, load_data_sql, local_infile_refused, lost, push_fraction,
    push_literal, quote_literal, rows_mismatch_error, warnings_error, ER_UNSUPPORTED_PS,
};
use super::Config;
use crate::driver::emulation::{closed_stmt, param_count_error, Emulated, Slots};
use crate::driver::number_text::f64_cell;
use crate::driver::socket::Endpoint;
use crate::driver::{
    insert_rows, Canceller, Connection, DbError, ErrorKind, Outcome, ResultSet, RowSource, StmtId, Value,
};
use crate::sqltext::Dialect;

/// Maps a `mysql` crate error: server errors keep errno and SQLSTATE.
fn map_err(e: mysql::Error) -> DbError {
    let other = |code: i64, message: String| DbError { kind: ErrorKind::Other, code, sqlstate: String::new(), message };
    match e {
        mysql::Error::MySqlError(me) => {
            DbError { kind: kind_for_code(me.code), code: me.code.into(), sqlstate: me.state, message: me.message }
        }
        mysql::Error::IoError(io) => lost(&io, io.kind() == io::ErrorKind::BrokenPipe),
        mysql::Error::CodecError(c) => lost(&c, false),
        mysql::Error::TlsError(t) => lost(&t, false),
        mysql::Error::DriverError(DriverError::MismatchedStmtParams(want, got)) => param_count_error(want.into(), got),
        mysql::Error::DriverError(d @ DriverError::PacketOutOfSync) => other(2014, d.to_string()),
        // The inner error reads better than the wrapper's `DriverError { .. }`.
        mysql::Error::DriverError(d) => other(0, d.to_string()),
        other_err => other(0, other_err.to_string()),
    }
}

/// A failed connection attempt, naming where and as whom. Network-level
/// failures get libmysqlclient's 2002 (socket) / 2003 (TCP). On reconnect
/// those are reported as ConnectionLost (the server may come back), while
/// a refusal by the server (bad password, unknown database) stays ConnectFailed.
pub(super) fn connect_error(ep: &Endpoint, user: &str, e: mysql::Error, reconnect: bool) -> DbError {
    let network = |detail: String| {
        let kind = if reconnect { ErrorKind::ConnectionLost } else { ErrorKind::ConnectFailed };
        (kind, if matches!(ep, Endpoint::Socket(_)) { 2002 } else { 2003 }, "HY000".to_string(), detail)
    };
    let (kind, code, sqlstate, detail) = match e {
        mysql::Error::MySqlError(me) => (ErrorKind::ConnectFailed, i64::from(me.code), me.state, me.message),
        // 2026 = CR_SSL_CONNECTION_ERROR.
        mysql::Error::DriverError(DriverError::TlsNotSupported) => (
            ErrorKind::ConnectFailed,
            2026,
            "HY000".to_string(),
            "the server does not support TLS, which --mysql-ssl=on requires".to_string(),
        ),
        mysql::Error::TlsError(t) => {
            (ErrorKind::ConnectFailed, 2026, "HY000".to_string(), format!("TLS handshake failed: {t}"))
        }
        mysql::Error::DriverError(d @ (DriverError::CouldNotConnect(_) | DriverError::ConnectTimeout)) => {
            network(d.to_string())
        }
        mysql::Error::IoError(io) => network(crate::exit::with_descriptor_advice(&io.to_string())),
        mysql::Error::CodecError(c) => network(c.to_string()),
        mysql::Error::DriverError(d) => (ErrorKind::ConnectFailed, 0, String::new(), d.to_string()),
        other => (ErrorKind::ConnectFailed, 0, String::new(), other.to_string()),
    };
    DbError { kind, code, sqlstate, message: format!("cannot connect to MySQL at {ep} as '{user}': {detail}") }
}

#[derive(Debug)]
pub(super) enum Stmt {
    Server { sql: String, stmt: Statement },
    Emulated(Emulated),
}

/// One MySQL connection and its statements (indexed by [`StmtId`]).
pub struct MysqlConnection {
    pub(super) conn: Conn,
    /// Kept for reconnect(): same endpoint and settings.
    pub(super) opts: Opts,
    pub(super) endpoint: Endpoint,
    pub(super) cfg: Arc<Config>,
    pub(super) stmts: Slots<Stmt>,
    /// The session's id, shared with cancellers and updated on reconnect.
    pub(super) conn_id: Arc<AtomicU32>,
    /// Results of the last query after its first (`next_result`).
    pub(super) pending: VecDeque<Outcome>,
}

/// Prepares server-side, or `None` when the server cannot prepare this statement.
fn prep(conn: &mut Conn, sql: &str) -> Result<Option<Statement>, DbError> {
    match conn.prep(sql) {
        Ok(s) => Ok(Some(s)),
        Err(mysql::Error::MySqlError(me)) if me.code == ER_UNSUPPORTED_PS => Ok(None),
        Err(e) => Err(map_err(e)),
    }
}

fn to_mysql(v: &Value) -> mysql::Value {
    match v {
        Value::Null => mysql::Value::NULL,
        Value::Int(i) => mysql::Value::Int(*i),
        Value::Double(d) => mysql::Value::Double(*d),
        Value::Text(s) => mysql::Value::Bytes(s.as_bytes().to_vec()),
    }
}

/// Fully buffers every result of a query (rows, or the affected count):
/// the first, and the others in order. An error in any of them is the
/// query's error, as with the native client.
fn collect<P: Protocol>(mut qr: QueryResult<'_, '_, '_, P>) -> Result<(Outcome, VecDeque<Outcome>), mysql::Error> {
    let mut results = VecDeque::new();
    while let Some(set) = qr.iter() {
        let ncols = set.columns().as_ref().len();
        if ncols == 0 {
            let affected = set.affected_rows();
            // An errored set has no columns either: its error comes from the rows.
            for row in set {
                row?;
            }
            results.push_back(Outcome::Affected(affected));
            continue;
        }
        let mut rs = ResultSet::new(ncols);
        for row in set {
            let row = row?;
            let cols = row.columns();
            rs.push_row(row.unwrap_raw().into_iter().zip(cols.iter()).map(|(v, c)| cell(v, c)));
        }
        results.push_back(Outcome::Rows(rs));
    }
    let first = results.pop_front().unwrap_or(Outcome::Affected(0));
    Ok((first, results))
}

/// A cell in MySQL's text representation; text/binary values are moved, not copied.
fn cell(v: Option<mysql::Value>, col: &Column) -> Option<Vec<u8>> {
    use mysql::Value as V;
    Some(match v? {
        V::NULL => return None,
        V::Bytes(b) => b,
        V::Int(i) => i.to_string().into_bytes(),
        V::UInt(u) => u.to_string().into_bytes(),
        V::Float(f) => f.to_string().into_bytes(),
        V::Double(d) => f64_cell(d),
        V::Date(y, mo, d, h, mi, s, us) => {
            let mut t = format!("{y:04}-{mo:02}-{d:02}");
            if !matches!(col.column_type(), ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE) {
                let _ = write!(t, " {h:02}:{mi:02}:{s:02}");
                push_fraction(&mut t, us, col.decimals());
            }
            t.into_bytes()
        }
        V::Time(neg, days, h, m, s, us) => {
            let mut t = format!("{}{:02}:{m:02}:{s:02}", if neg { "-" } else { "" }, days * 24 + u32::from(h));
            push_fraction(&mut t, us, col.decimals());
            t.into_bytes()
        }
    })
}

impl Connection for MysqlConnection {
    fn query(&mut self, sql: &str) -> Result<Outcome, DbError> {
        self.pending.clear();
        let qr = self.conn.query_iter(sql).map_err(map_err)?;
        let (first, rest) = collect(qr).map_err(map_err)?;
        self.pending = rest;
        Ok(first)
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let server = if self.cfg.ps_disabled { None } else { prep(&mut self.conn, sql)? };
        let stmt = match server {
            Some(stmt) => Stmt::Server { sql: sql.to_string(), stmt },
            None => Stmt::Emulated(Emulated::new(sql, Dialect::MySql)),
        };
        Ok(self.stmts.insert(stmt))
    }

    fn execute(&mut self, id: StmtId, params: &[Value]) -> Result<Outcome, DbError> {
        match self.stmts.get(id) {
            Some(Stmt::Server { stmt, .. }) => {
                let params = if params.is_empty() {
                    Params::Empty
                } else {
                    Params::Positional(params.iter().map(to_mysql).collect())
                };
                self.pending.clear();
                let qr = self.conn.exec_iter(stmt, params).map_err(map_err)?;
                let (first, rest) = collect(qr).map_err(map_err)?;
                self.pending = rest;
                Ok(first)
            }
            Some(Stmt::Emulated(e)) => {
                let nbe = self.conn.no_backslash_escape();
                let text = e.render(params, |out, v| push_literal(out, v, nbe))?;
                self.query(&text)
            }
            None => Err(closed_stmt(id)),
        }
    }

    fn close_statement(&mut self, id: StmtId) {
        if let Some(Stmt::Server { stmt, .. }) = self.stmts.remove(id) {
            // Best effort: on a dead connection the statement is gone anyway.
            let _ = self.conn.close(stmt);
        }
    }

    fn more_results(&self) -> bool {
        !self.pending.is_empty()
    }

    fn next_result(&mut self) -> Option<Outcome> {
        self.pending.pop_front()
    }

    fn reconnect(&mut self) -> Result<(), DbError> {
        self.pending.clear();
        self.conn = Conn::new(self.opts.clone()).map_err(|e| connect_error(&self.endpoint, &self.cfg.user, e, true))?;
        self.conn_id.store(self.conn.connection_id(), Ordering::Relaxed);
        for slot in self.stmts.iter_mut() {
            if let Stmt::Server { sql, stmt } = slot {
                match prep(&mut self.conn, sql)? {
                    Some(s) => *stmt = s,
                    None => *slot = Stmt::Emulated(Emulated::new(sql, Dialect::MySql)),
                }
            }
        }
        Ok(())
    }

    fn quote(&self, s: &str) -> String {
        quote_literal(s, self.conn.no_backslash_escape())
    }

    /// `LOAD DATA LOCAL INFILE` through the crate's local-infile handler;
    /// multi-row INSERTs when the server refuses LOCAL INFILE.
    fn bulk_load(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        self.load(table, columns, rows, false)
    }

    fn bulk_load_ascii(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        load_ascii(self, table, columns, rows, |c, t, cols, r, binary| c.load(t, cols, r, binary))
    }

    /// `KILL QUERY <this session's id>` from a fresh connection with the same options (TLS included).
    fn canceller(&mut self) -> Option<Box<dyn Canceller>> {
        Some(Box::new(CrateCanceller {
            conn_id: self.conn_id.clone(),
            opts: self.opts.clone(),
            endpoint: self.endpoint.clone(),
            user: self.cfg.user.clone(),
        }))
    }

    fn server_version(&mut self) -> String {
        match self.conn.query_first::<String, _>("SELECT VERSION()") {
            Ok(Some(v)) => v,
            _ => {
                let (a, b, c) = self.conn.server_version();
                format!("{a}.{b}.{c}")
            }
        }
    }
}

/// How a LOAD DATA through the crate ended.
enum Loaded<'a> {
    /// Loaded, this many rows.
    Rows(u64),
    /// The server refused LOCAL INFILE before any row was taken: the rows, for INSERTs.
    Refused(RowSource<'a>),
}

/// What the thread running the crate's LOAD DATA tells the thread that owns the rows.
enum InfileEvent {
    /// The server asked for our stream: send the data.
    Ready,
    /// The server asked for another file; it got an empty one.
    Foreign(String),
    /// The statement ended: affected rows and warnings, or the error.
    Done(Result<(u64, u16), mysql::Error>),
}

/// Bytes taken from the row source per chunk handed to the crate's handler.
const CRATE_INFILE_CHUNK: usize = 256 * 1024;

impl MysqlConnection {
    /// LOAD DATA LOCAL, or multi-row INSERTs when the server refuses LOCAL INFILE.
    fn load(&mut self, table: &str, columns: &[&str], rows: RowSource, binary: bool) -> Result<u64, DbError> {
        match self.load_data(table, columns, rows, binary)? {
            Loaded::Rows(n) => Ok(n),
            Loaded::Refused(rows) => {
                insert_rows(self, table, columns, rows, &mut |c: &mut MysqlConnection| match c.conn.warnings() {
                    0 => Ok(()),
                    n => Err(warnings_error(c, "INSERT", n)),
                })
            }
        }
    }

    /// LOAD DATA LOCAL with the crate. Its handler must be `Send + 'static`
    /// and runs inside `query_drop`, but the row source is neither, so the
    /// statement runs on a scoped thread whose handler receives the chunks
    /// this thread reads from `rows` over a channel (one chunk in flight:
    /// reading the next overlaps sending the last). No row is taken before
    /// the server asks for the stream, so a refusal can fall back to INSERTs.
    fn load_data<'r>(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: RowSource<'r>,
        binary: bool,
    ) -> Result<Loaded<'r>, DbError> {
        let (event_tx, events) = mpsc::channel::<InfileEvent>();
        let (data_tx, data_rx) = mpsc::sync_channel::<Vec<u8>>(1);
        let handler_events = event_tx.clone();
        self.conn.set_local_infile_handler(Some(LocalInfileHandler::new(move |name, out| {
            if name != super::protocol::INFILE_NAME.as_bytes() {
                // An empty file: the protocol has no other way to say no.
                let _ = handler_events.send(InfileEvent::Foreign(String::from_utf8_lossy(name).into_owned()));
                return Ok(());
            }
            let _ = handler_events.send(InfileEvent::Ready);
            while let Ok(chunk) = data_rx.recv() {
                out.write_all(&chunk)?;
            }
            Ok(())
        })));
        let sql = load_data_sql(table, columns, binary);
        let conn = &mut self.conn;
        let (result, lines, foreign, started) = std::thread::scope(|s| {
            s.spawn(move || {
                let r = conn.query_drop(&sql).map(|()| (conn.affected_rows(), conn.warnings()));
                // Dropping the handler drops the data receiver, so a send waiting on it returns.
                conn.set_local_infile_handler(None);
                let _ = event_tx.send(InfileEvent::Done(r));
            });
            let (mut lines, mut ends_with_newline, mut foreign, mut started) = (0u64, true, None, false);
            let mut data_tx = Some(data_tx);
            loop {
                match events.recv() {
                    Ok(InfileEvent::Ready) => {
                        started = true;
                        let mut more = true;
                        while more {
                            let mut buf = Vec::with_capacity(CRATE_INFILE_CHUNK + 64 * 1024);
                            while more && buf.len() < CRATE_INFILE_CHUNK {
                                more = rows(&mut buf);
                            }
                            if let Some(&last) = buf.last() {
                                lines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
                                ends_with_newline = last == b'\n';
                            }
                            if data_tx.as_ref().is_none_or(|tx| tx.send(buf).is_err()) {
                                break;
                            }
                        }
                        // The end of the data: the handler returns and the crate sends the empty packet.
                        data_tx = None;
                        lines += u64::from(!ends_with_newline);
                    }
                    Ok(InfileEvent::Foreign(name)) => foreign = Some(name),
                    Ok(InfileEvent::Done(r)) => return (r, lines, foreign, started),
                    // The statement thread is gone without a word: it panicked, and the scope re-raises that.
                    Err(_) => {
                        return (Err(mysql::Error::DriverError(DriverError::PacketOutOfSync)), lines, foreign, started)
                    }
                }
            }
        });
        if let Some(name) = foreign {
            return Err(foreign_infile_error(&name, true));
        }
        let (loaded, warnings) = match result.map_err(map_err) {
            Ok(r) => r,
            Err(e) if !started && local_infile_refused(&e) => return Ok(Loaded::Refused(rows)),
            Err(e) => return Err(e),
        };
        if warnings > 0 {
            return Err(warnings_error(self, &format!("LOAD DATA into {table}"), warnings));
        }
        if loaded != lines {
            return Err(rows_mismatch_error(table, loaded, lines));
        }
        Ok(Loaded::Rows(loaded))
    }
}

/// Cancels a crate connection's statement with `KILL QUERY` over a new connection.
struct CrateCanceller {
    conn_id: Arc<AtomicU32>,
    opts: Opts,
    endpoint: Endpoint,
    user: String,
}

impl Canceller for CrateCanceller {
    fn cancel(&self) -> Result<(), DbError> {
        let mut c = Conn::new(self.opts.clone()).map_err(|e| connect_error(&self.endpoint, &self.user, e, false))?;
        c.query_drop(format!("KILL QUERY {}", self.conn_id.load(Ordering::Relaxed))).map_err(map_err)
    }
}
