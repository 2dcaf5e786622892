//! dbbench's own MySQL/MariaDB client protocol, for the benchmark hot path.
//!
//! Why not only the `mysql` crate: measured at 16 clients against MariaDB,
//! the crate allocated several objects per result row (a `Row`, a value
//! vector, one `Vec` per cell, a pooled packet buffer from a pool shared by
//! all threads) and gave every connection 4 MiB read and write buffers whose
//! read position walks through the whole buffer before compacting. Range
//! queries cost twice sysbench's client CPU per query, and resident memory
//! grew by up to 4 MiB per connection. This module speaks the protocol
//! directly: one reusable read buffer per connection that rewinds whenever
//! it is drained (a connection stays on the same few pages), rows decoded
//! straight from the packet into the result set, one write per command.
//!
//! Scope: plain TCP or unix socket, `mysql_native_password` and the fast path
//! of `caching_sha2_password`, text and binary (prepared) protocol, multiple
//! result sets. Anything else (TLS, compression, other auth plugins, a
//! caching_sha2 full authentication) returns [`Unsupported`], and the driver
//! uses the `mysql` crate for that connection instead.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::auth::auth_response;
use super::protocol::{
    foreign_infile_error, kind_for_code, load_ascii, load_data_sql, local_infile_refused, lost, push_literal,
    quote_literal, rows_mismatch_error, warnings_error, Unsupported, ER_UNSUPPORTED_PS, INFILE_NAME,
};
use super::rows::{decode_binary_row, decode_text_row, param_type, Col};
use super::wire::{put_lenenc, Buf, Wire, MAX_PAYLOAD};
use crate::driver::emulation::{closed_stmt, param_count_error, Emulated, Slots};
use crate::driver::socket::{open_stream, Endpoint};
use crate::driver::{
    insert_rows, Canceller, Connection, DbError, ErrorKind, Outcome, ResultSet, RowSource, StmtId, Value,
};
use crate::sqltext::Dialect;

/// Result of a connection attempt.
pub enum ConnectError {
    /// A real failure (refused, bad password, ...), reported to the user.
    Failed(DbError),
    /// Use the `mysql` crate for this connection.
    Unsupported(Unsupported),
}

// Capability flags (protocol 4.1).
const CLIENT_LONG_PASSWORD: u32 = 0x1;
const CLIENT_LONG_FLAG: u32 = 0x4;
const CLIENT_CONNECT_WITH_DB: u32 = 0x8;
/// Lets the server ask for LOAD DATA LOCAL data; we answer only for the
/// statement [`NativeConnection::bulk_load`] just sent.
const CLIENT_LOCAL_FILES: u32 = 0x80;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_MULTI_STATEMENTS: u32 = 0x1_0000;
const CLIENT_MULTI_RESULTS: u32 = 0x2_0000;
const CLIENT_PS_MULTI_RESULTS: u32 = 0x4_0000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 0x20_0000;
const CLIENT_DEPRECATE_EOF: u32 = 0x100_0000;
/// MariaDB extended capability (bit 36 overall, bit 4 of the extended word):
/// the server sends a prepared statement's result metadata only when it
/// changed, so a point SELECT's reply carries no column definition. The
/// server then skips building it; libmariadb (and so sysbench) asks for it.
const MARIADB_CLIENT_CACHE_METADATA: u32 = 1 << 4;

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
const SERVER_STATUS_NO_BACKSLASH_ESCAPES: u16 = 0x0200;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;

/// Bytes taken from the row source before they are sent (one write).
const INFILE_SEND_BYTES: usize = 256 * 1024;

/// utf8mb4_general_ci.
const CHARSET_UTF8MB4: u8 = 45;

fn server_error(p: &[u8]) -> DbError {
    let mut b = Buf(&p[1..]);
    let code = b.u16().unwrap_or(0);
    let (sqlstate, msg) = match b.0.first() {
        Some(b'#') if b.0.len() >= 6 => (String::from_utf8_lossy(&b.0[1..6]).into_owned(), &b.0[6..]),
        _ => (String::new(), b.0),
    };
    DbError {
        kind: kind_for_code(code),
        code: code.into(),
        sqlstate,
        message: String::from_utf8_lossy(msg).into_owned(),
    }
}

fn io_err(e: io::Error) -> DbError {
    lost(&e, e.kind() == io::ErrorKind::BrokenPipe)
}

/// Connection parameters the native client needs.
pub struct Params<'a> {
    /// Where to connect.
    pub endpoint: &'a Endpoint,
    /// User name.
    pub user: &'a str,
    /// Password.
    pub password: &'a str,
    /// Database (empty = none).
    pub db: &'a str,
    /// `--db-ps-mode=disable`.
    pub ps_disabled: bool,
    /// Ask for CLIENT_LOCAL_FILES (LOAD DATA LOCAL for `bulk_load`); false
    /// makes the server refuse it, as with `local_infile=OFF` (tests).
    pub local_infile: bool,
}

/// A prepared statement: server-side, or emulated client-side.
enum Stmt {
    /// `cols`: the result columns last sent by the server (metadata cache).
    Server {
        sql: String,
        id: u32,
        nparams: usize,
        sent_types: Option<Vec<u8>>,
        cols: Vec<Col>,
    },
    Emulated(Emulated),
}

/// One native connection.
pub struct NativeConnection {
    wire: Wire,
    caps: u32,
    /// MariaDB extended capabilities in use (0 on MySQL).
    ext_caps: u32,
    status: u16,
    /// Warning count of the last OK packet.
    warnings: u16,
    /// The server's id of this session (the handshake's thread id), shared
    /// with cancellers and updated on reconnect.
    conn_id: Arc<AtomicU32>,
    server_version: String,
    stmts: Slots<Stmt>,
    cols: Vec<Col>,
    /// The last result set handed back by the caller, refilled next time.
    spare: ResultSet,
    /// Results after the first of the last command, for `next_result`.
    pending: std::collections::VecDeque<Outcome>,
    endpoint: Endpoint,
    user: String,
    password: String,
    db: String,
    ps_disabled: bool,
    local_infile: bool,
}

impl NativeConnection {
    /// Connects and authenticates.
    pub fn connect(p: &Params) -> Result<NativeConnection, ConnectError> {
        let fail = |code: i64, sqlstate: &str, detail: String| {
            ConnectError::Failed(DbError {
                kind: ErrorKind::ConnectFailed,
                code,
                sqlstate: sqlstate.into(),
                message: format!("cannot connect to MySQL at {} as '{}': {detail}", p.endpoint, p.user),
            })
        };
        let net_code = if matches!(p.endpoint, Endpoint::Socket(_)) { 2002 } else { 2003 };
        let stream = open_stream(p.endpoint)
            .map_err(|e| fail(net_code, "HY000", crate::exit::with_descriptor_advice(&e.to_string())))?;
        let mut c = NativeConnection {
            wire: Wire::new(stream),
            caps: 0,
            ext_caps: 0,
            status: 0,
            warnings: 0,
            conn_id: Arc::new(AtomicU32::new(0)),
            server_version: String::new(),
            stmts: Slots::default(),
            cols: Vec::new(),
            spare: ResultSet::default(),
            pending: std::collections::VecDeque::new(),
            endpoint: p.endpoint.clone(),
            user: p.user.to_string(),
            password: p.password.to_string(),
            db: p.db.to_string(),
            ps_disabled: p.ps_disabled,
            local_infile: p.local_infile,
        };
        c.handshake().map_err(|e| match e {
            HandshakeError::Io(e) => fail(net_code, "HY000", e.to_string()),
            HandshakeError::Server(e) => fail(e.code, &e.sqlstate, e.message),
            HandshakeError::Unsupported(u) => ConnectError::Unsupported(u),
        })?;
        Ok(c)
    }

    fn handshake(&mut self) -> Result<(), HandshakeError> {
        let p = self.wire.read()?.to_vec();
        if p.first() == Some(&0xff) {
            return Err(HandshakeError::Server(server_error(&p)));
        }
        let mut b = Buf(&p);
        if b.u8()? != 10 {
            return Err(HandshakeError::Unsupported(Unsupported("handshake protocol other than v10".into())));
        }
        self.server_version = String::from_utf8_lossy(b.nul_str()).into_owned();
        self.conn_id.store(b.u32()?, Ordering::Relaxed);
        let mut scramble = b.take(8)?.to_vec();
        b.u8()?;
        let mut server_caps = b.u16()? as u32;
        b.u8()?; // charset
        self.status = b.u16()?;
        server_caps |= (b.u16()? as u32) << 16;
        let auth_len = b.u8()? as usize;
        b.take(6)?;
        // A MariaDB server clears CLIENT_MYSQL (= CLIENT_LONG_PASSWORD) and
        // puts its extended capabilities in the last 4 reserved bytes.
        let server_ext = b.u32()?;
        let mariadb = server_caps & CLIENT_LONG_PASSWORD == 0;
        if server_caps & CLIENT_SECURE_CONNECTION != 0 {
            let n = auth_len.saturating_sub(8).max(13);
            let part = b.take(n.min(b.0.len()))?;
            scramble.extend_from_slice(&part[..part.len().min(12)]);
        }
        let plugin = if server_caps & CLIENT_PLUGIN_AUTH != 0 { b.nul_str().to_vec() } else { Vec::new() };
        let wanted = CLIENT_LONG_PASSWORD
            | CLIENT_LONG_FLAG
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            | CLIENT_MULTI_STATEMENTS
            | CLIENT_MULTI_RESULTS
            | CLIENT_PS_MULTI_RESULTS
            | CLIENT_PLUGIN_AUTH
            | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
            | CLIENT_DEPRECATE_EOF
            | if self.local_infile { CLIENT_LOCAL_FILES } else { 0 }
            | if self.db.is_empty() { 0 } else { CLIENT_CONNECT_WITH_DB };
        if server_caps & CLIENT_PROTOCOL_41 == 0 {
            return Err(HandshakeError::Unsupported(Unsupported("a pre-4.1 server".into())));
        }
        self.caps = wanted & server_caps;
        self.ext_caps = if mariadb { server_ext & MARIADB_CLIENT_CACHE_METADATA } else { 0 };
        let auth = auth_response(&plugin, &self.password, &scramble).map_err(HandshakeError::Unsupported)?;

        self.wire.begin(false);
        let w = &mut self.wire.wbuf;
        w.extend_from_slice(&self.caps.to_le_bytes());
        w.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
        w.push(CHARSET_UTF8MB4);
        w.extend_from_slice(&[0; 19]);
        w.extend_from_slice(&self.ext_caps.to_le_bytes());
        w.extend_from_slice(self.user.as_bytes());
        w.push(0);
        if self.caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            put_lenenc(w, auth.len() as u64);
        } else {
            w.push(auth.len() as u8);
        }
        w.extend_from_slice(&auth);
        if self.caps & CLIENT_CONNECT_WITH_DB != 0 {
            w.extend_from_slice(self.db.as_bytes());
            w.push(0);
        }
        if self.caps & CLIENT_PLUGIN_AUTH != 0 {
            w.extend_from_slice(if plugin.is_empty() { b"mysql_native_password" } else { &plugin });
            w.push(0);
        }
        self.wire.send()?;
        loop {
            let p = self.wire.read()?.to_vec();
            match p.first() {
                Some(0x00) => {
                    self.apply_ok(ok_packet(&p));
                    return Ok(());
                }
                Some(0xff) => return Err(HandshakeError::Server(server_error(&p))),
                // Auth switch: another plugin, fresh scramble.
                Some(0xfe) => {
                    let mut b = Buf(&p[1..]);
                    let plugin = b.nul_str().to_vec();
                    let data = b.0.strip_suffix(&[0]).unwrap_or(b.0).to_vec();
                    let auth = auth_response(&plugin, &self.password, &data).map_err(HandshakeError::Unsupported)?;
                    self.wire.begin(false);
                    self.wire.wbuf.extend_from_slice(&auth);
                    self.wire.send()?;
                }
                // caching_sha2_password: 3 = fast auth succeeded (OK follows); 4 = full auth needed.
                Some(0x01) if p.get(1) == Some(&3) => continue,
                Some(0x01) => {
                    return Err(HandshakeError::Unsupported(Unsupported(
                        "caching_sha2_password full authentication (needs TLS or RSA)".into(),
                    )))
                }
                _ => return Err(HandshakeError::Io(Buf::bad())),
            }
        }
    }

    /// Takes the status and warning count of an OK packet; returns its affected rows.
    fn apply_ok(&mut self, ok: OkPacket) -> u64 {
        if let Some(s) = ok.status {
            self.status = s;
        }
        self.warnings = ok.warnings;
        ok.affected
    }

    fn deprecate_eof(&self) -> bool {
        self.caps & CLIENT_DEPRECATE_EOF != 0
    }

    /// Reads `n` column definitions (and the EOF after them, if any).
    fn read_columns(&mut self, n: usize, keep: bool) -> io::Result<()> {
        if keep {
            self.cols.clear();
        }
        for _ in 0..n {
            let p = self.wire.read()?;
            if keep {
                let mut b = Buf(p);
                for _ in 0..6 {
                    b.lenenc_str()?;
                }
                b.lenenc()?;
                b.u16()?; // charset
                b.u32()?; // length
                let ty = b.u8()?;
                let flags = b.u16()?;
                let decimals = b.u8()?;
                self.cols.push(Col { ty, flags, decimals });
            }
        }
        if n > 0 && !self.deprecate_eof() {
            self.wire.read()?;
        }
        Ok(())
    }

    /// Reads a complete response (all result sets): returns the first, the
    /// others wait in `pending`. `stmt`: the prepared statement executed,
    /// whose cached result metadata the server may refer to instead of
    /// sending it.
    fn read_response(&mut self, binary: bool, stmt: Option<StmtId>) -> Result<Outcome, DbError> {
        self.warnings = 0;
        let mut result = self.read_one_result(binary, stmt);
        // Further results (a multi-statement query, a CALL) wait in
        // `pending`; the first result is returned as it is, not moved
        // through them.
        while result.is_ok() && self.status & SERVER_MORE_RESULTS_EXISTS != 0 {
            match self.read_one_result(binary, None) {
                Ok(o) => self.pending.push_back(o),
                Err(e) => result = Err(e),
            }
        }
        if result.is_err() {
            // A failed statement leaves no results to walk through.
            self.pending.clear();
        }
        result
    }

    fn read_one_result(&mut self, binary: bool, stmt: Option<StmtId>) -> Result<Outcome, DbError> {
        let p = self.wire.read().map_err(io_err)?;
        match p.first() {
            Some(0x00) => {
                let ok = ok_packet(p);
                return Ok(Outcome::Affected(self.apply_ok(ok)));
            }
            Some(0xff) => {
                let e = server_error(p);
                self.status &= !SERVER_MORE_RESULTS_EXISTS;
                return Err(e);
            }
            Some(0xfb) => {
                // A LOAD DATA LOCAL request we did not ask for (a statement of
                // the user's, or a server that wants a file): an empty file.
                let name = String::from_utf8_lossy(&p[1..]).into_owned();
                return Err(self.refuse_infile(&name, false));
            }
            _ => {}
        }
        let mut b = Buf(p);
        let ncols = b.lenenc().map_err(io_err)? as usize;
        let metadata_follows = self.ext_caps & MARIADB_CLIENT_CACHE_METADATA == 0 || b.u8().map_err(io_err)? != 0;
        let deprecate_eof = self.deprecate_eof();
        let cols = if metadata_follows {
            self.read_columns(ncols, true).map_err(io_err)?;
            std::mem::take(&mut self.cols)
        } else {
            let cols = match stmt.and_then(|id| self.stmts.get_mut(id)) {
                Some(Stmt::Server { cols, .. }) => std::mem::take(cols),
                _ => Vec::new(),
            };
            if cols.len() != ncols {
                return Err(io_err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the server skipped result metadata that dbbench has not seen",
                )));
            }
            if !deprecate_eof {
                self.wire.read().map_err(io_err)?;
            }
            cols
        };
        let mut rs = std::mem::take(&mut self.spare);
        rs.reset(ncols);
        let result = loop {
            let p = match self.wire.read() {
                Ok(p) => p,
                Err(e) => break Err(io_err(e)),
            };
            match p.first() {
                Some(0xfe) if (deprecate_eof && p.len() < MAX_PAYLOAD) || p.len() < 9 => {
                    let status = if deprecate_eof {
                        ok_packet(p).status
                    } else {
                        (p.len() >= 5).then(|| u16::from_le_bytes([p[3], p[4]]))
                    };
                    if let Some(s) = status {
                        self.status = s;
                    }
                    break Ok(());
                }
                Some(0xff) => {
                    let e = server_error(p);
                    self.status &= !SERVER_MORE_RESULTS_EXISTS;
                    break Err(e);
                }
                _ => {
                    let r =
                        if binary { decode_binary_row(p, &cols, &mut rs) } else { decode_text_row(p, ncols, &mut rs) };
                    if let Err(e) = r {
                        break Err(io_err(e));
                    }
                }
            }
        };
        match stmt.and_then(|id| self.stmts.get_mut(id)) {
            Some(Stmt::Server { cols: cache, .. }) => *cache = cols,
            _ => self.cols = cols,
        }
        result.map(|()| Outcome::Rows(rs))
    }

    fn command(&mut self, cmd: u8, body: &[u8]) -> Result<(), DbError> {
        // Results left from the previous command are gone with it, even if
        // this one fails before its reply is read.
        self.pending.clear();
        self.wire.begin(true);
        self.wire.wbuf.push(cmd);
        self.wire.wbuf.extend_from_slice(body);
        self.wire.send().map_err(io_err)
    }

    /// COM_STMT_PREPARE; `Ok(None)` when the server cannot prepare it.
    fn prepare_server(&mut self, sql: &str) -> Result<Option<(u32, usize, Vec<Col>)>, DbError> {
        self.command(COM_STMT_PREPARE, sql.as_bytes())?;
        let p = self.wire.read().map_err(io_err)?;
        if p.first() == Some(&0xff) {
            let e = server_error(p);
            return if e.code == i64::from(ER_UNSUPPORTED_PS) { Ok(None) } else { Err(e) };
        }
        let mut b = Buf(&p[1..]);
        let (id, ncols, nparams) =
            (|| Ok::<_, io::Error>((b.u32()?, b.u16()? as usize, b.u16()? as usize)))().map_err(io_err)?;
        self.read_columns(nparams, false).map_err(io_err)?;
        // Kept: with the metadata cache the first execution may already
        // refer to these.
        self.read_columns(ncols, true).map_err(io_err)?;
        Ok(Some((id, nparams, std::mem::take(&mut self.cols))))
    }

    /// Answers a LOAD DATA LOCAL request for a file that is not our stream
    /// with an empty file (the protocol has no other way to say no), reads
    /// the statement's result, and returns the error to report
    /// (`in_bulk_load`: the request came for our own LOAD DATA).
    fn refuse_infile(&mut self, name: &str, in_bulk_load: bool) -> DbError {
        self.wire.begin(false);
        if let Err(e) = self.wire.send() {
            return io_err(e);
        }
        match self.read_one_result(false, None) {
            Err(e) if e.kind == ErrorKind::ConnectionLost => e,
            _ => foreign_infile_error(name, in_bulk_load),
        }
    }

    /// The INSERT path of `bulk_load`, with each statement's warnings turned into an error.
    fn insert_checked(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        insert_rows(self, table, columns, rows, &mut |c: &mut NativeConnection| c.check_warnings("INSERT"))
    }

    /// An error naming the first warning, when the last statement left warnings.
    fn check_warnings(&mut self, what: &str) -> Result<(), DbError> {
        match self.warnings {
            0 => Ok(()),
            n => Err(warnings_error(self, what, n)),
        }
    }

    /// `bulk_load`: LOAD DATA LOCAL from `rows` (`binary`: `CHARACTER SET binary`, see `load_data_sql`).
    fn load_local(&mut self, table: &str, columns: &[&str], rows: RowSource, binary: bool) -> Result<u64, DbError> {
        // Sent even when the session lacks CLIENT_LOCAL_FILES: the server's
        // refusal then takes the same path as local_infile=OFF.
        self.command(COM_QUERY, load_data_sql(table, columns, binary).as_bytes())?;
        self.warnings = 0;
        let p = self.wire.read().map_err(io_err)?;
        match p.first() {
            Some(0xfb) if &p[1..] == INFILE_NAME.as_bytes() => {}
            Some(0xfb) => {
                let name = String::from_utf8_lossy(&p[1..]).into_owned();
                return Err(self.refuse_infile(&name, true));
            }
            Some(0xff) => {
                let e = server_error(p);
                return if local_infile_refused(&e) { self.insert_checked(table, columns, rows) } else { Err(e) };
            }
            Some(0x00) => {
                let ok = ok_packet(p);
                self.apply_ok(ok);
                return Err(DbError {
                    kind: ErrorKind::Other,
                    code: 0,
                    sqlstate: String::new(),
                    message: format!("LOAD DATA LOCAL into {table}: the server answered without asking for the data"),
                });
            }
            // A result set to a LOAD DATA: the session is out of step with us.
            _ => return Err(io_err(io::Error::new(io::ErrorKind::InvalidData, "unexpected reply to LOAD DATA LOCAL"))),
        }
        let (loaded, lines) = self.stream_infile(rows)?;
        self.check_warnings(&format!("LOAD DATA into {table}"))?;
        if loaded != lines {
            return Err(rows_mismatch_error(table, loaded, lines));
        }
        Ok(loaded)
    }

    /// The data phase of LOAD DATA LOCAL, after the server asked for our
    /// stream: rows in packets, the empty packet, the result. Returns the
    /// rows the server loaded and the lines sent.
    fn stream_infile(&mut self, rows: RowSource) -> Result<(u64, u64), DbError> {
        let mut buf = Vec::with_capacity(INFILE_SEND_BYTES + 64 * 1024);
        let (mut more, mut lines, mut ends_with_newline) = (true, 0u64, true);
        while more {
            buf.clear();
            while more && buf.len() < INFILE_SEND_BYTES {
                more = rows(&mut buf);
            }
            if let Some(&last) = buf.last() {
                lines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
                ends_with_newline = last == b'\n';
            }
            self.wire.send_infile_data(&buf).map_err(io_err)?;
        }
        // The server loads a last line without its newline too.
        lines += u64::from(!ends_with_newline);
        self.wire.begin(false);
        self.wire.send().map_err(io_err)?;
        let p = self.wire.read().map_err(io_err)?;
        match p.first() {
            Some(0x00) => {
                let ok = ok_packet(p);
                Ok((self.apply_ok(ok), lines))
            }
            Some(0xff) => Err(server_error(p)),
            _ => Err(io_err(io::Error::new(io::ErrorKind::InvalidData, "unexpected reply to LOAD DATA LOCAL data"))),
        }
    }

    fn connect_again(&mut self) -> Result<(), DbError> {
        let params = Params {
            endpoint: &self.endpoint,
            user: &self.user,
            password: &self.password,
            db: &self.db,
            ps_disabled: self.ps_disabled,
            local_infile: self.local_infile,
        };
        match NativeConnection::connect(&params) {
            Ok(mut fresh) => {
                // The old wire goes to `fresh`, whose drop says goodbye on it (best effort).
                std::mem::swap(&mut self.wire, &mut fresh.wire);
                std::mem::swap(&mut self.server_version, &mut fresh.server_version);
                self.caps = fresh.caps;
                self.ext_caps = fresh.ext_caps;
                self.status = fresh.status;
                self.conn_id.store(fresh.conn_id.load(Ordering::Relaxed), Ordering::Relaxed);
                Ok(())
            }
            // A server that went away is a lost connection (retry may help);
            // a refusal (password, database) stays a connect failure.
            Err(ConnectError::Failed(mut e)) => {
                if matches!(e.code, 2002 | 2003) {
                    e.kind = ErrorKind::ConnectionLost;
                }
                Err(e)
            }
            Err(ConnectError::Unsupported(u)) => Err(DbError {
                kind: ErrorKind::ConnectFailed,
                code: 0,
                sqlstate: String::new(),
                message: format!("reconnect needs {} (use --mysql-client=crate)", u.0),
            }),
        }
    }
}

enum HandshakeError {
    Io(io::Error),
    Server(DbError),
    Unsupported(Unsupported),
}

impl From<io::Error> for HandshakeError {
    fn from(e: io::Error) -> Self {
        HandshakeError::Io(e)
    }
}

/// What an OK packet says.
struct OkPacket {
    affected: u64,
    /// Server status, if present.
    status: Option<u16>,
    /// Warning count (0 if absent).
    warnings: u16,
}

/// Parses an OK packet (or a DEPRECATE_EOF end-of-rows packet).
fn ok_packet(p: &[u8]) -> OkPacket {
    let mut b = Buf(p.get(1..).unwrap_or_default());
    let affected = b.lenenc().unwrap_or(0);
    let _ = b.lenenc();
    let status = b.u16().ok();
    OkPacket { affected, status, warnings: b.u16().unwrap_or(0) }
}

impl Connection for NativeConnection {
    fn query(&mut self, sql: &str) -> Result<Outcome, DbError> {
        self.command(COM_QUERY, sql.as_bytes())?;
        self.read_response(false, None)
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let server = if self.ps_disabled { None } else { self.prepare_server(sql)? };
        let stmt = match server {
            Some((id, nparams, cols)) => Stmt::Server { sql: sql.to_string(), id, nparams, sent_types: None, cols },
            None => Stmt::Emulated(Emulated::new(sql, Dialect::MySql)),
        };
        Ok(self.stmts.insert(stmt))
    }

    fn execute(&mut self, stmt: StmtId, params: &[Value]) -> Result<Outcome, DbError> {
        let nbe = self.status & SERVER_STATUS_NO_BACKSLASH_ESCAPES != 0;
        let (id, send_types) = match self.stmts.get_mut(stmt) {
            None => return Err(closed_stmt(stmt)),
            Some(Stmt::Emulated(e)) => {
                let text = e.render(params, |out, v| push_literal(out, v, nbe))?;
                return self.query(&text);
            }
            Some(Stmt::Server { id, nparams, sent_types, .. }) => {
                if params.len() != *nparams {
                    return Err(param_count_error(*nparams, params.len()));
                }
                // Types go to the server only when they change (as libmysqlclient
                // does): the server then reuses the parsed types. Compared in
                // place: the steady state allocates nothing.
                let unchanged =
                    sent_types.as_deref().is_some_and(|sent| sent.iter().copied().eq(params.iter().map(param_type)));
                if !unchanged {
                    *sent_types = Some(params.iter().map(param_type).collect());
                }
                (*id, !unchanged)
            }
        };
        // As in command(): the previous statement's results go with it.
        if !self.pending.is_empty() {
            self.pending.clear();
        }
        self.wire.begin(true);
        let w = &mut self.wire.wbuf;
        let id = id.to_le_bytes();
        // The command, the statement, no cursor, one iteration.
        w.extend_from_slice(&[COM_STMT_EXECUTE, id[0], id[1], id[2], id[3], 0, 1, 0, 0, 0]);
        if !params.is_empty() {
            let start = w.len();
            w.resize(start + params.len().div_ceil(8), 0);
            for (i, v) in params.iter().enumerate() {
                if matches!(v, Value::Null) {
                    w[start + i / 8] |= 1 << (i % 8);
                }
            }
            w.push(send_types as u8);
            if send_types {
                for v in params {
                    w.push(param_type(v));
                    w.push(0);
                }
            }
            for v in params {
                match v {
                    Value::Null => {}
                    Value::Int(i) => w.extend_from_slice(&i.to_le_bytes()),
                    Value::Double(d) => w.extend_from_slice(&d.to_le_bytes()),
                    Value::Text(s) => {
                        put_lenenc(w, s.len() as u64);
                        w.extend_from_slice(s.as_bytes());
                    }
                }
            }
        }
        self.wire.send().map_err(io_err)?;
        self.read_response(true, Some(stmt))
    }

    fn close_statement(&mut self, stmt: StmtId) {
        if let Some(Stmt::Server { id, .. }) = self.stmts.remove(stmt) {
            // No response to COM_STMT_CLOSE; on a dead connection it is gone anyway.
            let _ = self.command(COM_STMT_CLOSE, &id.to_le_bytes());
        }
    }

    fn reconnect(&mut self) -> Result<(), DbError> {
        self.connect_again()?;
        // Re-prepare every server-side statement on the new session; ids stay.
        let sqls: Vec<String> = self
            .stmts
            .iter_mut()
            .filter_map(|s| match s {
                Stmt::Server { sql, .. } => Some(sql.clone()),
                Stmt::Emulated(_) => None,
            })
            .collect();
        let mut prepared = Vec::with_capacity(sqls.len());
        for sql in &sqls {
            prepared.push(self.prepare_server(sql)?);
        }
        let mut prepared = prepared.into_iter().zip(sqls);
        for s in self.stmts.iter_mut() {
            if matches!(s, Stmt::Server { .. }) {
                let Some((p, sql)) = prepared.next() else { break };
                *s = match p {
                    Some((id, nparams, cols)) => Stmt::Server { sql, id, nparams, sent_types: None, cols },
                    None => Stmt::Emulated(Emulated::new(&sql, Dialect::MySql)),
                };
            }
        }
        Ok(())
    }

    fn quote(&self, s: &str) -> String {
        quote_literal(s, self.status & SERVER_STATUS_NO_BACKSLASH_ESCAPES != 0)
    }

    fn recycle(&mut self, rs: ResultSet) {
        if rs.worth_recycling() {
            self.spare = rs;
        }
    }

    fn more_results(&self) -> bool {
        !self.pending.is_empty()
    }

    fn next_result(&mut self) -> Option<Outcome> {
        self.pending.pop_front()
    }

    /// `LOAD DATA LOCAL INFILE` streamed from memory; multi-row INSERTs when
    /// the server refuses LOCAL INFILE (`local_infile=OFF`, or a session
    /// without CLIENT_LOCAL_FILES) before any data was taken from `rows`.
    /// Warnings (a value truncated or converted, a row skipped) are an error
    /// naming the first: LOAD DATA LOCAL never fails on bad data by itself.
    fn bulk_load(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        self.load_local(table, columns, rows, false)
    }

    fn bulk_load_ascii(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        load_ascii(self, table, columns, rows, |c, t, cols, r, binary| c.load_local(t, cols, r, binary))
    }

    /// `KILL QUERY <this session's id>` from a fresh connection with the same parameters.
    fn canceller(&mut self) -> Option<Box<dyn Canceller>> {
        Some(Box::new(NativeCanceller {
            conn_id: self.conn_id.clone(),
            endpoint: self.endpoint.clone(),
            user: self.user.clone(),
            password: self.password.clone(),
            db: self.db.clone(),
        }))
    }

    fn server_version(&mut self) -> String {
        match self.query("SELECT VERSION()") {
            Ok(Outcome::Rows(rs)) => rs.first_text(),
            _ => None,
        }
        .unwrap_or_else(|| self.server_version.trim_start_matches("5.5.5-").to_string())
    }
}

/// Cancels a native connection's statement with `KILL QUERY` (MariaDB/MySQL
/// have no in-band cancel).
struct NativeCanceller {
    conn_id: Arc<AtomicU32>,
    endpoint: Endpoint,
    user: String,
    password: String,
    db: String,
}

impl Canceller for NativeCanceller {
    fn cancel(&self) -> Result<(), DbError> {
        let params = Params {
            endpoint: &self.endpoint,
            user: &self.user,
            password: &self.password,
            db: &self.db,
            ps_disabled: true,
            local_infile: false,
        };
        let mut c = match NativeConnection::connect(&params) {
            Ok(c) => c,
            Err(ConnectError::Failed(e)) => return Err(e),
            Err(ConnectError::Unsupported(u)) => {
                return Err(DbError {
                    kind: ErrorKind::ConnectFailed,
                    code: 0,
                    sqlstate: String::new(),
                    message: format!("cannot connect to cancel a statement: the server needs {}", u.0),
                })
            }
        };
        c.query(&format!("KILL QUERY {}", self.conn_id.load(Ordering::Relaxed))).map(drop)
    }
}

impl Drop for NativeConnection {
    fn drop(&mut self) {
        let _ = self.command(COM_QUIT, &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    /// Writes one packet.
    fn put_packet(s: &mut UnixStream, seq: u8, payload: &[u8]) {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        s.write_all(&p).unwrap();
    }

    /// Reads one packet's payload.
    fn get_packet(s: &mut UnixStream) -> Vec<u8> {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).unwrap();
        let mut p = vec![0u8; h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16];
        s.read_exact(&mut p).unwrap();
        p
    }

    /// A malicious server asks for `/etc/passwd` in answer to our LOAD DATA
    /// and to a plain SELECT: both times it gets an empty file (the only
    /// answer the protocol has) and the statement fails naming the file;
    /// the row source is never called. The "server" is this test, speaking
    /// the protocol on a unix socket with a read timeout (no hang).
    #[test]
    fn a_server_asking_for_another_file_gets_nothing() {
        let dir = crate::safe_fs::TestDir::new("fake-mysql");
        let path = dir.join("fake.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let caps = CLIENT_LONG_PASSWORD
                | CLIENT_PROTOCOL_41
                | CLIENT_TRANSACTIONS
                | CLIENT_SECURE_CONNECTION
                | CLIENT_PLUGIN_AUTH
                | CLIENT_LOCAL_FILES
                | CLIENT_DEPRECATE_EOF;
            let mut h = vec![10];
            h.extend_from_slice(b"8.0.0-fake\0");
            h.extend_from_slice(&7u32.to_le_bytes());
            h.extend_from_slice(b"abcdefgh\0");
            h.extend_from_slice(&(caps as u16).to_le_bytes());
            h.push(CHARSET_UTF8MB4);
            h.extend_from_slice(&2u16.to_le_bytes());
            h.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
            h.push(21);
            h.extend_from_slice(&[0; 10]);
            h.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
            put_packet(&mut s, 0, &h);
            get_packet(&mut s); // the client's handshake response
            let ok = [0u8, 0, 0, 2, 0, 0, 0];
            put_packet(&mut s, 2, &ok);
            let mut answers = Vec::new();
            for _ in 0..2 {
                let query = get_packet(&mut s);
                assert_eq!(query[0], COM_QUERY);
                put_packet(&mut s, 1, b"\xfb/etc/passwd");
                answers.push((String::from_utf8_lossy(&query[1..]).into_owned(), get_packet(&mut s)));
                put_packet(&mut s, 3, &ok);
            }
            answers
        });
        let ep = Endpoint::Socket(path.display().to_string());
        let params = Params { endpoint: &ep, user: "u", password: "", db: "", ps_disabled: true, local_infile: true };
        let Ok(mut c) = NativeConnection::connect(&params) else { panic!("connect to the fake server") };
        let mut calls = 0;
        let err = c
            .bulk_load("t", &["a"], &mut |_: &mut Vec<u8>| {
                calls += 1;
                false
            })
            .expect_err("foreign file");
        assert!(err.message.contains("'/etc/passwd'"), "{err}");
        assert_eq!(calls, 0);
        let err = c.query("SELECT 1").expect_err("foreign file");
        assert!(err.message.contains("'/etc/passwd'"), "{err}");
        let answers = server.join().expect("fake server");
        assert!(answers[0].0.starts_with("LOAD DATA LOCAL INFILE 'dbbench-stream' INTO TABLE t "), "{}", answers[0].0);
        assert_eq!(answers[1].0, "SELECT 1");
        assert!(answers.iter().all(|(_, file)| file.is_empty()), "the client sent file data");
    }
}
