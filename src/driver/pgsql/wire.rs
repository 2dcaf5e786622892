//! PostgreSQL's frontend/backend protocol (version 3), spoken by dbbench
//! itself: `--pgsql-client=native`, for sessions without TLS (a unix
//! socket, or TCP with `--pgsql-sslmode=disable`). TLS sessions and
//! authentication other than trust, password, md5 and SCRAM-SHA-256 stay
//! with the `postgres` crate (`--pgsql-client=crate`).
//!
//! Why: the crate drives each session through a tokio runtime of its own,
//! channels between the client and its connection task, and a codec. Under
//! callgrind (one client, a point select on a unix socket) that cost 16.4k
//! user-space instructions per query, against 5.7k for sysbench on libpq.
//! Here a statement is one write (Bind, Execute, Sync), and its reply is
//! parsed in place from one reusable buffer. The socket is the native MySQL
//! client's (`driver::socket::Stream`): non-blocking, waiting through
//! `sched::wait_fd`, so a multiplexed client suspends while it waits.
//!
//! Results are asked for in text format, as libpq does for sysbench: a
//! cell is the server's own text. Parameters go as text, their types left
//! to the server, as on the crate path (see `pgsql`).

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};

use crate::driver::number_text::push_f64;
use crate::driver::socket::{open_stream, Endpoint, Stream};
use crate::driver::{Canceller, DbError, ErrorKind, Outcome, ResultSet, Value};

/// Protocol version 3.0, the startup message's first field.
const PROTOCOL_3: i32 = 196_608;
/// The cancel request's code, in place of a protocol version.
const CANCEL_REQUEST_CODE: i32 = 80_877_102;
/// The read buffer's first size (a point select's reply is ~100 bytes); a
/// read that fills it grows it once to [`READ_BUF_FULL`] (result sets come
/// in fewer reads), and it grows to hold any one message.
const READ_BUF_START: usize = 4 * 1024;
const READ_BUF_FULL: usize = 16 * 1024;
/// The longest message accepted: PostgreSQL's own limit on a value (1 GiB)
/// plus room for its row. A longer length is a broken or hostile server,
/// not a reason to allocate gigabytes.
const MAX_MESSAGE: usize = (1 << 30) + (1 << 20);

/// Where and as whom a session connects.
#[derive(Clone)]
pub(super) struct Target {
    pub endpoint: Endpoint,
    pub user: String,
    pub db: String,
    pub password: String,
}

/// A server's ErrorResponse, or a failure of the session itself.
#[derive(Debug)]
pub(super) enum WireError {
    /// The server's ErrorResponse: SQLSTATE and message.
    Server { sqlstate: String, message: String },
    /// The socket failed or the server closed it.
    Io(io::Error),
    /// The server said something this client does not handle.
    Protocol(String),
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> WireError {
        WireError::Io(e)
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Server { message, .. } => f.write_str(message),
            WireError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => f.write_str("connection closed"),
            WireError::Io(e) => write!(f, "error communicating with the server: {e}"),
            WireError::Protocol(m) => f.write_str(m),
        }
    }
}

/// The class of a SQLSTATE, for the restart/reconnect policy (both clients).
pub(super) fn kind_of_sqlstate(state: &str) -> ErrorKind {
    match state {
        "40P01" => ErrorKind::Deadlock,
        "40001" => ErrorKind::Serialization,
        "23505" => ErrorKind::UniqueViolation,
        "55P03" => ErrorKind::LockTimeout,
        // query_canceled: a cancel request or statement_timeout.
        "57014" => ErrorKind::Cancelled,
        // Class 08 and admin shutdown / crash shutdown / cannot connect now.
        s if s.starts_with("08") || matches!(s, "57P01" | "57P02" | "57P03") => ErrorKind::ConnectionLost,
        _ => ErrorKind::Other,
    }
}

impl WireError {
    /// The error of a statement: server errors keep their SQLSTATE; a
    /// failed or closed socket is ConnectionLost (08006), as on the crate path.
    pub(super) fn into_db_error(self) -> DbError {
        match self {
            WireError::Server { sqlstate, message } => {
                DbError { kind: kind_of_sqlstate(&sqlstate), code: 0, sqlstate, message }
            }
            e @ WireError::Io(_) => {
                DbError { kind: ErrorKind::ConnectionLost, code: 0, sqlstate: "08006".into(), message: e.to_string() }
            }
            e @ WireError::Protocol(_) => {
                DbError { kind: ErrorKind::Other, code: 0, sqlstate: String::new(), message: e.to_string() }
            }
        }
    }
}

type WireResult<T> = Result<T, WireError>;

/// A cursor over a message body.
struct Body<'a>(&'a [u8]);

impl<'a> Body<'a> {
    fn bad() -> WireError {
        WireError::Protocol("malformed message from the server".into())
    }
    fn i16(&mut self) -> WireResult<i16> {
        let (h, t) = self.0.split_at_checked(2).ok_or_else(Body::bad)?;
        self.0 = t;
        Ok(i16::from_be_bytes([h[0], h[1]]))
    }
    fn i32(&mut self) -> WireResult<i32> {
        let (h, t) = self.0.split_at_checked(4).ok_or_else(Body::bad)?;
        self.0 = t;
        Ok(i32::from_be_bytes([h[0], h[1], h[2], h[3]]))
    }
    fn take(&mut self, n: usize) -> WireResult<&'a [u8]> {
        let (h, t) = self.0.split_at_checked(n).ok_or_else(Body::bad)?;
        self.0 = t;
        Ok(h)
    }
    /// A NUL-terminated string.
    fn cstr(&mut self) -> WireResult<&'a [u8]> {
        let end = self.0.iter().position(|&b| b == 0).ok_or_else(Body::bad)?;
        let s = &self.0[..end];
        self.0 = &self.0[end + 1..];
        Ok(s)
    }
}

/// An ErrorResponse's SQLSTATE and message.
fn server_error(body: &[u8]) -> WireError {
    let (mut sqlstate, mut message) = (String::new(), String::new());
    let mut b = Body(body);
    while let Some(&field) = b.0.first() {
        if field == 0 {
            break;
        }
        b.0 = &b.0[1..];
        let Ok(v) = b.cstr() else { break };
        match field {
            b'C' => sqlstate = String::from_utf8_lossy(v).into_owned(),
            b'M' => message = String::from_utf8_lossy(v).into_owned(),
            _ => {}
        }
    }
    WireError::Server { sqlstate, message }
}

/// Rows a CommandComplete tag reports (`INSERT 0 5`, `UPDATE 3`, `SELECT 2`): its
/// last word when that is a number, else 0.
fn tag_rows(tag: &[u8]) -> u64 {
    let tag = tag.strip_suffix(b"\0").unwrap_or(tag);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(b"");
    std::str::from_utf8(last).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// A DataRow's cells appended to `rs` as one row (text format; -1 is NULL).
fn push_data_row(rs: &mut ResultSet, body: &[u8]) -> WireResult<()> {
    let mut b = Body(body);
    let n = b.i16()?;
    for _ in 0..n {
        let len = b.i32()?;
        if len < 0 {
            rs.push_null();
        } else {
            rs.push_bytes(b.take(len as usize)?);
        }
    }
    rs.end_row();
    Ok(())
}

/// One session: the socket, its buffers and the backend's cancel key.
pub(super) struct Session {
    stream: Stream,
    rbuf: Vec<u8>,
    rpos: usize,
    rlen: usize,
    wbuf: Vec<u8>,
    /// The backend's process id and secret key, for cancel requests.
    pub key: (i32, i32),
    /// The server's `server_version` parameter.
    pub server_version: String,
}

impl Session {
    /// Opens a session: startup, authentication, until the server is ready.
    pub(super) fn connect(t: &Target) -> WireResult<Session> {
        let stream = open_stream(&t.endpoint)?;
        let mut s = Session {
            stream,
            rbuf: vec![0; READ_BUF_START],
            rpos: 0,
            rlen: 0,
            wbuf: Vec::with_capacity(1024),
            key: (0, 0),
            server_version: String::new(),
        };
        s.startup(t)?;
        Ok(s)
    }

    fn startup(&mut self, t: &Target) -> WireResult<()> {
        self.wbuf.clear();
        self.wbuf.extend_from_slice(&[0; 4]);
        self.wbuf.extend_from_slice(&PROTOCOL_3.to_be_bytes());
        for (k, v) in [
            ("user", t.user.as_str()),
            ("database", t.db.as_str()),
            ("application_name", "dbbench"),
            ("client_encoding", "UTF8"),
        ] {
            self.wbuf.extend_from_slice(k.as_bytes());
            self.wbuf.push(0);
            self.wbuf.extend_from_slice(v.as_bytes());
            self.wbuf.push(0);
        }
        self.wbuf.push(0);
        let len = (self.wbuf.len() as i32).to_be_bytes();
        self.wbuf[..4].copy_from_slice(&len);
        self.flush()?;
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (ty, body) = self.next()?;
            match ty {
                b'R' => {
                    let mut b = Body(body);
                    match b.i32()? {
                        0 => {}
                        3 => {
                            let pw = needs_password(t)?;
                            self.message(b'p', |w| {
                                w.extend_from_slice(pw.as_bytes());
                                w.push(0);
                            });
                            self.flush()?;
                        }
                        5 => {
                            let pw = needs_password(t)?;
                            let salt: [u8; 4] = b.take(4)?.try_into().map_err(|_| Body::bad())?;
                            let hash =
                                postgres_protocol::authentication::md5_hash(t.user.as_bytes(), pw.as_bytes(), salt);
                            self.message(b'p', |w| {
                                w.extend_from_slice(hash.as_bytes());
                                w.push(0);
                            });
                            self.flush()?;
                        }
                        10 => {
                            let mut offered = Vec::new();
                            while let Ok(m) = b.cstr() {
                                if m.is_empty() {
                                    break;
                                }
                                offered.push(String::from_utf8_lossy(m).into_owned());
                            }
                            if !offered.iter().any(|m| m == SCRAM_SHA_256) {
                                return Err(WireError::Protocol(format!(
                                    "the server offers SASL mechanisms {offered:?}, of which the native client has none: use --pgsql-client=crate"
                                )));
                            }
                            let pw = needs_password(t)?;
                            let s = ScramSha256::new(pw.as_bytes(), ChannelBinding::unsupported());
                            let first = s.message().to_vec();
                            scram = Some(s);
                            self.message(b'p', |w| {
                                w.extend_from_slice(SCRAM_SHA_256.as_bytes());
                                w.push(0);
                                w.extend_from_slice(&(first.len() as i32).to_be_bytes());
                                w.extend_from_slice(&first);
                            });
                            self.flush()?;
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(Body::bad)?;
                            s.update(b.0).map_err(|e| WireError::Protocol(format!("SCRAM authentication: {e}")))?;
                            let next = s.message().to_vec();
                            self.message(b'p', |w| w.extend_from_slice(&next));
                            self.flush()?;
                        }
                        12 => {
                            let mut s = scram.take().ok_or_else(Body::bad)?;
                            s.finish(b.0).map_err(|e| WireError::Protocol(format!("SCRAM authentication: {e}")))?;
                        }
                        code => {
                            return Err(WireError::Protocol(format!(
                                "the server asks for an authentication method (code {code}) the native client does not speak: use --pgsql-client=crate"
                            )))
                        }
                    }
                }
                b'S' => {
                    let mut b = Body(body);
                    let (k, v) = (b.cstr()?, b.cstr()?);
                    if k == b"server_version" {
                        self.server_version = String::from_utf8_lossy(v).into_owned();
                    }
                }
                b'K' => {
                    let mut b = Body(body);
                    self.key = (b.i32()?, b.i32()?);
                }
                b'E' => return Err(server_error(body)),
                b'Z' => return Ok(()),
                b'N' => {}
                other => return Err(unexpected(other)),
            }
        }
    }

    /// Appends a message of type `ty` to the write buffer.
    fn message(&mut self, ty: u8, body: impl FnOnce(&mut Vec<u8>)) {
        let start = self.wbuf.len();
        self.wbuf.push(ty);
        self.wbuf.extend_from_slice(&[0; 4]);
        body(&mut self.wbuf);
        let len = ((self.wbuf.len() - start - 1) as i32).to_be_bytes();
        self.wbuf[start + 1..start + 5].copy_from_slice(&len);
    }

    /// Sends the write buffer in one write and empties it.
    fn flush(&mut self) -> io::Result<()> {
        let r = self.stream.write_all(&self.wbuf);
        self.wbuf.clear();
        r
    }

    /// Ensures `need` unread bytes are buffered.
    fn fill(&mut self, need: usize) -> io::Result<()> {
        if self.rlen - self.rpos >= need {
            return Ok(());
        }
        if self.rpos == self.rlen {
            self.rpos = 0;
            self.rlen = 0;
        } else if self.rpos + need > self.rbuf.len() {
            self.rbuf.copy_within(self.rpos..self.rlen, 0);
            self.rlen -= self.rpos;
            self.rpos = 0;
        }
        if need > self.rbuf.len() {
            self.rbuf.resize(need.next_power_of_two(), 0);
        }
        while self.rlen - self.rpos < need {
            let n = self.stream.read(&mut self.rbuf[self.rlen..])?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
            }
            self.rlen += n;
            if self.rlen == self.rbuf.len() && self.rbuf.len() < READ_BUF_FULL {
                self.rbuf.resize(READ_BUF_FULL, 0);
            }
        }
        Ok(())
    }

    /// The next backend message: its type and body (valid until the next read).
    fn next(&mut self) -> WireResult<(u8, &[u8])> {
        self.fill(5)?;
        let h = &self.rbuf[self.rpos..self.rpos + 5];
        let ty = h[0];
        let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]);
        if len < 4 || len as usize > MAX_MESSAGE {
            return Err(Body::bad());
        }
        let total = 1 + len as usize;
        self.fill(total)?;
        let start = self.rpos + 5;
        self.rpos += total;
        Ok((ty, &self.rbuf[start..self.rpos]))
    }

    /// Reads up to ReadyForQuery after an error, keeping the first error.
    fn drain(&mut self, first: WireError) -> WireError {
        if matches!(first, WireError::Io(_)) {
            return first;
        }
        loop {
            match self.next() {
                Ok((b'Z', _)) => return first,
                Ok(_) => {}
                Err(e) => return e,
            }
        }
    }

    /// A simple query (text protocol; several statements allowed): every
    /// statement's outcome, in order. A COPY from the client is refused
    /// (CopyFail); a COPY to the client is read and dropped.
    pub(super) fn simple_query(&mut self, sql: &str, out: &mut Vec<Outcome>) -> WireResult<()> {
        self.message(b'Q', |w| {
            w.extend_from_slice(sql.as_bytes());
            w.push(0);
        });
        self.flush()?;
        let mut rows: Option<ResultSet> = None;
        let mut failed: Option<WireError> = None;
        loop {
            let (ty, body) = self.next()?;
            match ty {
                b'T' => rows = Some(ResultSet::new(Body(body).i16()?.max(0) as usize)),
                b'D' => {
                    if let Some(rs) = rows.as_mut() {
                        push_data_row(rs, body)?;
                    }
                }
                b'C' => {
                    let n = tag_rows(body);
                    out.push(match rows.take() {
                        Some(rs) => Outcome::Rows(rs),
                        None => Outcome::Affected(n),
                    });
                }
                b'E' => failed = failed.or(Some(server_error(body))),
                b'Z' => return failed.map_or(Ok(()), Err),
                b'G' => {
                    self.message(b'f', |w| w.extend_from_slice(b"COPY FROM STDIN is not supported in a query\0"));
                    self.flush()?;
                }
                b'I' | b'N' | b'S' | b'A' | b'H' | b'd' | b'c' => {}
                other => return Err(self.drain(unexpected(other))),
            }
        }
    }

    /// Parses and describes a named statement: its numbers of parameters
    /// and of result columns.
    pub(super) fn prepare(&mut self, name: &str, sql: &str) -> WireResult<(usize, usize)> {
        self.message(b'P', |w| {
            w.extend_from_slice(name.as_bytes());
            w.push(0);
            w.extend_from_slice(sql.as_bytes());
            w.push(0);
            w.extend_from_slice(&0i16.to_be_bytes());
        });
        self.message(b'D', |w| {
            w.push(b'S');
            w.extend_from_slice(name.as_bytes());
            w.push(0);
        });
        self.message(b'S', |_| {});
        self.flush()?;
        let (mut params, mut columns) = (0, 0);
        let mut failed: Option<WireError> = None;
        loop {
            let (ty, body) = self.next()?;
            match ty {
                b'1' | b'n' | b'N' | b'S' | b'A' => {}
                b't' => params = Body(body).i16()?.max(0) as usize,
                b'T' => columns = Body(body).i16()?.max(0) as usize,
                b'E' => failed = failed.or(Some(server_error(body))),
                b'Z' => return failed.map_or(Ok((params, columns)), Err),
                other => return Err(self.drain(unexpected(other))),
            }
        }
    }

    /// Binds `params` (text format; NULL as -1) to the named statement and
    /// runs it; rows go to `rs` (reset first) when it has result columns.
    pub(super) fn execute(
        &mut self,
        name: &str,
        params: &[Value],
        columns: usize,
        rs: &mut ResultSet,
    ) -> WireResult<u64> {
        let wbuf = &mut self.wbuf;
        let start = wbuf.len();
        wbuf.push(b'B');
        wbuf.extend_from_slice(&[0; 4]);
        wbuf.push(0); // the unnamed portal
        wbuf.extend_from_slice(name.as_bytes());
        wbuf.push(0);
        wbuf.extend_from_slice(&0i16.to_be_bytes()); // every parameter in text
        wbuf.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for p in params {
            let at = wbuf.len();
            wbuf.extend_from_slice(&[0; 4]);
            let len: i32 = match p {
                Value::Null => -1,
                Value::Int(i) => {
                    let mut b = itoa_buf(*i);
                    let s = b.as_str();
                    wbuf.extend_from_slice(s.as_bytes());
                    s.len() as i32
                }
                Value::Double(d) => {
                    let s = f64_text(*d);
                    wbuf.extend_from_slice(s.as_bytes());
                    s.len() as i32
                }
                Value::Text(s) => {
                    wbuf.extend_from_slice(s.as_bytes());
                    s.len() as i32
                }
            };
            wbuf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        wbuf.extend_from_slice(&0i16.to_be_bytes()); // every result column in text
        let len = ((wbuf.len() - start - 1) as i32).to_be_bytes();
        wbuf[start + 1..start + 5].copy_from_slice(&len);
        // Execute the unnamed portal, all rows; then Sync.
        wbuf.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
        wbuf.extend_from_slice(&[b'S', 0, 0, 0, 4]);
        self.flush()?;
        rs.reset(columns);
        let mut affected = 0;
        let mut failed: Option<WireError> = None;
        loop {
            let (ty, body) = self.next()?;
            match ty {
                b'2' => {}
                b'D' => push_data_row(rs, body)?,
                b'C' => affected = tag_rows(body),
                b'E' => failed = failed.or(Some(server_error(body))),
                b'Z' => return failed.map_or(Ok(affected), Err),
                b'I' | b'N' | b'S' | b'A' | b's' => {}
                other => return Err(self.drain(unexpected(other))),
            }
        }
    }

    /// Closes a named statement on the server (errors are the next statement's).
    pub(super) fn close_statement(&mut self, name: &str) -> WireResult<()> {
        self.message(b'C', |w| {
            w.push(b'S');
            w.extend_from_slice(name.as_bytes());
            w.push(0);
        });
        self.message(b'S', |_| {});
        self.flush()?;
        loop {
            match self.next()? {
                (b'Z', _) => return Ok(()),
                _ => continue,
            }
        }
    }

    /// `COPY ... FROM STDIN`: `sql` starts it, `rows` gives the data in
    /// chunks of at most `chunk` bytes; the count COPY reports. Between
    /// chunks an ErrorResponse already there (the server refused a row)
    /// ends the sending early; notices and parameter changes do not.
    pub(super) fn copy_in(
        &mut self,
        sql: &str,
        chunk: usize,
        rows: &mut dyn FnMut(&mut Vec<u8>) -> bool,
    ) -> WireResult<u64> {
        self.message(b'Q', |w| {
            w.extend_from_slice(sql.as_bytes());
            w.push(0);
        });
        self.flush()?;
        loop {
            let (ty, body) = self.next()?;
            match ty {
                b'G' => break,
                b'E' => {
                    let e = server_error(body);
                    return Err(self.drain(e));
                }
                b'N' | b'S' => {}
                other => return Err(self.drain(unexpected(other))),
            }
        }
        let mut buf = Vec::with_capacity(chunk + 64 * 1024);
        let mut more = true;
        let mut failed: Option<WireError> = None;
        while more && failed.is_none() {
            buf.clear();
            while more && buf.len() < chunk {
                more = rows(&mut buf);
            }
            if !buf.is_empty() {
                self.message(b'd', |w| w.extend_from_slice(&buf));
                self.flush()?;
            }
            while self.reply_waiting()? {
                match self.next()? {
                    (b'E', body) => {
                        failed = Some(server_error(body));
                        break;
                    }
                    (b'N' | b'S' | b'A', _) => {}
                    (other, _) => return Err(unexpected(other)),
                }
            }
        }
        self.message(b'c', |_| {});
        self.flush()?;
        let mut count = 0;
        loop {
            let (ty, body) = self.next()?;
            match ty {
                b'C' => count = tag_rows(body),
                b'E' => failed = failed.or(Some(server_error(body))),
                b'Z' => return failed.map_or(Ok(count), Err),
                _ => {}
            }
        }
    }

    /// Whether the server has sent something (without waiting).
    fn reply_waiting(&mut self) -> io::Result<bool> {
        if self.rlen > self.rpos {
            return Ok(true);
        }
        let mut p = libc::pollfd { fd: self.stream.fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, no timeout.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        Ok(n > 0)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Terminate, best effort and without waiting (a stopped server's
        // full socket must not hang a reconnect): the server then ends the
        // backend without logging an unexpected EOF.
        let _ = crate::syscall::send(self.stream.fd(), &[b'X', 0, 0, 0, 4]);
    }
}

fn needs_password(t: &Target) -> WireResult<&str> {
    if t.password.is_empty() {
        return Err(WireError::Protocol(
            "the server asks for a password and none was given (--pgsql-password, DBBENCH_PGSQL_PASSWORD or PGPASSWORD)"
                .into(),
        ));
    }
    Ok(&t.password)
}

fn unexpected(ty: u8) -> WireError {
    WireError::Protocol(format!("unexpected message '{}' from the server", ty as char))
}

/// An integer's decimal text without allocating.
fn itoa_buf(i: i64) -> ItoaBuf {
    let mut b = ItoaBuf { buf: [0; 20], start: 20 };
    let neg = i < 0;
    let mut n = i.unsigned_abs();
    loop {
        b.start -= 1;
        b.buf[b.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if neg {
        b.start -= 1;
        b.buf[b.start] = b'-';
    }
    b
}

struct ItoaBuf {
    buf: [u8; 20],
    start: usize,
}

impl ItoaBuf {
    fn as_str(&mut self) -> &str {
        // Only ASCII digits and '-' were written.
        std::str::from_utf8(&self.buf[self.start..]).unwrap_or("")
    }
}

/// Cancels what a native session runs: the protocol's cancel request on a
/// new connection, carrying the session's key (replaced on reconnect).
pub(super) struct WireCanceller {
    pub endpoint: Endpoint,
    pub key: Arc<Mutex<(i32, i32)>>,
    pub target: String,
}

impl Canceller for WireCanceller {
    fn cancel(&self) -> Result<(), DbError> {
        let (pid, secret) = *self.key.lock().unwrap_or_else(|p| p.into_inner());
        let mut msg = Vec::with_capacity(16);
        msg.extend_from_slice(&16i32.to_be_bytes());
        msg.extend_from_slice(&CANCEL_REQUEST_CODE.to_be_bytes());
        msg.extend_from_slice(&pid.to_be_bytes());
        msg.extend_from_slice(&secret.to_be_bytes());
        let sent = open_stream(&self.endpoint).and_then(|mut s| {
            s.write_all(&msg)?;
            // The server closes the connection once it has the request.
            let mut b = [0u8; 1];
            let _ = s.read(&mut b);
            Ok(())
        });
        sent.map_err(|e| DbError {
            kind: ErrorKind::ConnectFailed,
            code: 0,
            sqlstate: "08001".into(),
            message: format!(
                "cannot send a cancel request to PostgreSQL at {}: {}",
                self.target,
                crate::exit::with_descriptor_advice(&e.to_string())
            ),
        })
    }
}

/// PostgreSQL's text for a float8.
pub(super) fn f64_text(d: f64) -> String {
    match d {
        _ if d.is_nan() => "NaN".into(),
        f64::INFINITY => "Infinity".into(),
        f64::NEG_INFINITY => "-Infinity".into(),
        _ => {
            let mut s = String::new();
            push_f64(&mut s, d);
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_give_their_row_counts() {
        assert_eq!(tag_rows(b"INSERT 0 5\0"), 5);
        assert_eq!(tag_rows(b"UPDATE 3\0"), 3);
        assert_eq!(tag_rows(b"SELECT 12"), 12);
        assert_eq!(tag_rows(b"CREATE TABLE\0"), 0);
        assert_eq!(tag_rows(b"BEGIN\0"), 0);
    }

    #[test]
    fn integers_are_written_as_decimal_text() {
        for i in [0, 7, -7, 10, 123_456, i64::MAX, i64::MIN] {
            assert_eq!(itoa_buf(i).as_str(), i.to_string());
        }
    }

    #[test]
    fn error_responses_give_sqlstate_and_message() {
        let body = b"SERROR\0VERROR\0C40P01\0Mdeadlock detected\0Dsome detail\0\0";
        let e = server_error(body).into_db_error();
        assert_eq!(
            (e.sqlstate.as_str(), e.message.as_str(), e.kind),
            ("40P01", "deadlock detected", ErrorKind::Deadlock)
        );
    }
}
