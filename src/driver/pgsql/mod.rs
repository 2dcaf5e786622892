//! PostgreSQL driver: two clients behind one `Driver`. Sessions without TLS
//! (a unix socket, or `--pgsql-sslmode=disable`) use our own protocol
//! client by default (`wire`, `NativePgConnection` here); TLS sessions
//! and `--pgsql-client=crate` use the synchronous `postgres` crate
//! (`PgsqlConnection`). Both classify errors alike (`wire::kind_of_sqlstate`).
//!
//! Parameters: statements are prepared with their parameter types left to
//! the server, and every parameter is sent in *text* format (as libpq and
//! sysbench do). The server parses the text for whatever type it inferred,
//! so an `Int` bound to an INT4 column, a NUMERIC or even a DATE column all
//! work, with no client-side type matching.
//!
//! Results: the native client asks for text format, so cells are the
//! server's own text, as libpq gives sysbench. Through the crate they arrive
//! in binary format (the crate always asks for it) and are converted back to PostgreSQL's text form for the common types (bool,
//! integers, floats, numeric, date/time, uuid, bytea, json/jsonb and all
//! text types); any other type's cell is its raw binary value.
//!
//! TLS: `--pgsql-sslmode` as libpq reads it, on rustls (see `tls`).

mod tls;
mod wire;

use std::error::Error as StdError;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::sync::{Arc, Mutex};

use postgres::config::SslMode;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::private::BytesMut;
use postgres::types::{to_sql_checked, Format, FromSql, IsNull, ToSql, Type};
use postgres::{CancelToken, Client, NoTls, SimpleQueryMessage, Statement};

use crate::driver::emulation::{closed_stmt, ps_mode_disabled, Emulated, Slots};
use crate::driver::number_text::push_f64;
use crate::driver::{
    Canceller, Connection, DbError, Driver, ErrorAction, ErrorKind, Outcome, ResultSet, RowSource, StmtId, Value,
};
use crate::options::{OptKind, OptionSpec, Options};
use crate::sqltext::{self, Dialect};
use wire::f64_text;

type BoxError = Box<dyn StdError + Sync + Send>;

/// Options of the PostgreSQL driver, with their defaults.
pub fn options() -> Vec<OptionSpec> {
    vec![
        OptionSpec::new("pgsql_host", OptKind::String, "localhost", "PostgreSQL server host, or a unix socket directory (starting with /)"),
        OptionSpec::new("pgsql_port", OptKind::Int, "5432", "PostgreSQL server port"),
        OptionSpec::new("pgsql_user", OptKind::String, "sbtest", "PostgreSQL user"),
        OptionSpec::new(
            "pgsql_password",
            OptKind::String,
            "",
            "PostgreSQL password (else from the environment: DBBENCH_PGSQL_PASSWORD, then PGPASSWORD; keeps it out of ps)",
        ),
        OptionSpec::new("pgsql_db", OptKind::String, "sbtest", "PostgreSQL database name"),
        OptionSpec::new(
            "pgsql_sslmode",
            OptKind::String,
            "prefer",
            "SSL mode {disable, allow, prefer, require, verify-ca, verify-full}, as libpq: prefer uses TLS when the server offers it",
        ),
        OptionSpec::new(
            "pgsql_sslrootcert",
            OptKind::String,
            "",
            "root certificates (PEM) for --pgsql-sslmode=verify-ca/verify-full, or 'system' for the system's trusted roots (implies verify-full); default PGSSLROOTCERT, else ~/.postgresql/root.crt",
        ),
        OptionSpec::new(
            "pgsql_sslcert",
            OptKind::String,
            "",
            "client certificate (PEM) sent over TLS, for cert authentication; default PGSSLCERT, else ~/.postgresql/postgresql.crt if it exists",
        ),
        OptionSpec::new(
            "pgsql_sslkey",
            OptKind::String,
            "",
            "the client certificate's private key (PEM); default PGSSLKEY, else ~/.postgresql/postgresql.key",
        ),
        OptionSpec::new(
            "pgsql_client",
            OptKind::String,
            "native",
            "Client implementation: native (dbbench's own protocol code, lowest overhead; sessions without TLS: a unix socket or --pgsql-sslmode=disable) or crate (the postgres crate; used anyway for TLS)",
        ),
        OptionSpec::new(
            "pgsql_ignore_errors",
            OptKind::List,
            "40P01,23505,40001",
            "SQLSTATEs (or 2-character classes like 40) that roll back and restart the event, or 'all'; lost connections always reconnect",
        ),
    ]
}

/// Whether connections use the native client (`wire`): asked for, and
/// without TLS (a unix socket, or `--pgsql-sslmode=disable`). Its waits go
/// through `sched::wait_fd`, so its clients can be multiplexed.
pub fn native_protocol(opts: &Options) -> bool {
    opts.str("pgsql_client").trim() == "native"
        && (opts.str("pgsql_host").trim().starts_with('/')
            || opts.str("pgsql_sslmode").trim().eq_ignore_ascii_case("disable"))
}

/// `None` = `all`; else SQLSTATEs or 2-character classes, upper case.
fn parse_ignore(items: &[String]) -> Result<Option<Vec<String>>, String> {
    if items.iter().any(|s| s.eq_ignore_ascii_case("all")) {
        return Ok(None);
    }
    items
        .iter()
        .map(|s| {
            if matches!(s.len(), 2 | 5) && s.bytes().all(|b| b.is_ascii_alphanumeric()) {
                Ok(s.to_ascii_uppercase())
            } else {
                Err(format!("invalid --pgsql-ignore-errors item '{s}': use 5-character SQLSTATEs, 2-character classes, or 'all'"))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

struct Config {
    pg: postgres::Config,
    /// TLS per `--pgsql-sslmode` (None: plain connections only).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// Where we connect, for messages: `host:port` or `socket dir/.s.PGSQL.port`.
    target: String,
    user: String,
    db: String,
    ignore: Option<Vec<String>>,
    ps_disabled: bool,
    /// The native client's target, when `--pgsql-client=native` and the
    /// session has no TLS (see `wire`).
    native: Option<wire::Target>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("target", &self.target)
            .field("user", &self.user)
            .field("db", &self.db)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Config {
    /// A new session, with TLS when configured; under allow/prefer a failed
    /// TLS attempt (handshake, or the server refusing the encrypted
    /// session) is retried without TLS, as libpq does. The error, and text
    /// to add to its message (what the TLS attempt said, when both failed).
    fn connect(&self) -> Result<Client, (postgres::Error, String)> {
        let Some(tls) = &self.tls else { return self.pg.connect(NoTls).map_err(|e| (e, String::new())) };
        match self.pg.connect(tls.clone()) {
            Ok(c) => Ok(c),
            Err(tls_error) if self.plain_after_tls_failure() => {
                let mut plain = self.pg.clone();
                plain.ssl_mode(SslMode::Disable);
                plain.connect(NoTls).map_err(|e| (e, format!(" (tried with TLS first: {})", with_causes(&tls_error))))
            }
            Err(e) => Err((e, String::new())),
        }
    }

    /// allow/prefer (the crate's Prefer): a failed TLS attempt is tried again without TLS.
    fn plain_after_tls_failure(&self) -> bool {
        self.tls.is_some() && self.pg.get_ssl_mode() == SslMode::Prefer
    }
}

/// `connect_error` with the note from [`Config::connect`].
fn connect_failure(cfg: &Config, (e, note): (postgres::Error, String), reconnect: bool) -> DbError {
    let mut d = connect_error(cfg, e, reconnect);
    d.message.push_str(&note);
    d
}

/// The message of a panic in the `postgres` crate: its unwrap of an I/O
/// error prints `called `Result::unwrap()` on an `Err` value: Os { code:
/// 24, kind: Uncategorized, message: "Too many open files" }`; the OS's
/// message is what the user needs.
fn panic_text(panic: &str) -> String {
    match panic.split("message: \"").nth(1).and_then(|m| m.split('"').next()) {
        Some(os) => {
            let code = panic.split("code: ").nth(1).and_then(|c| c.split(',').next()).unwrap_or("?");
            format!("{os} (os error {code})")
        }
        None => panic.to_string(),
    }
}

/// A new session ([`Config::connect`]), with the `postgres` crate's panic
/// when the process runs out of file descriptors (it unwraps the creation
/// of the connection's event loop) turned into the failed connection it is,
/// saying which limit to raise.
fn open_session(cfg: &Config, reconnect: bool) -> Result<Client, DbError> {
    match crate::exit::catch_library_panic(|| cfg.connect()) {
        Ok(r) => r.map_err(|f| connect_failure(cfg, f, reconnect)),
        Err(panic) => Err(DbError {
            kind: ErrorKind::ConnectFailed,
            code: 0,
            sqlstate: "08001".into(),
            message: format!(
                "cannot connect to PostgreSQL at {} as '{}', database '{}': {}",
                cfg.target,
                cfg.user,
                cfg.db,
                crate::exit::with_descriptor_advice(&format!("the postgres library failed: {}", panic_text(&panic)))
            ),
        }),
    }
}

/// The PostgreSQL driver (a single server; no round robin).
#[derive(Debug)]
pub struct PgsqlDriver {
    cfg: Arc<Config>,
}

/// Builds the driver from the options; the error is one line naming the bad option.
pub fn create(opts: &Options) -> Result<Box<dyn Driver>, String> {
    let host = opts.str("pgsql_host").trim().to_string();
    let port_raw = opts.raw("pgsql_port").trim();
    let port = port_raw
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("invalid --pgsql-port value '{port_raw}': use a port number 1-65535"))?;
    let rootcert = opts.str("pgsql_sslrootcert").trim();
    let mode = opts.str("pgsql_sslmode").trim().to_ascii_lowercase();
    let mode = tls::effective_mode(&mode, opts.given("pgsql_sslmode"), rootcert)?;
    let (ssl_mode, tls) = if host.starts_with('/') {
        // As libpq: no TLS on a unix socket, whatever the mode says (and no
        // root certificates needed); a typo in the mode is still an error.
        tls::check_mode(&mode)?;
        (SslMode::Disable, None)
    } else {
        let files =
            tls::TlsFiles { rootcert, cert: opts.str("pgsql_sslcert").trim(), key: opts.str("pgsql_sslkey").trim() };
        tls::connector(&mode, files)?
    };
    let (user, db) = (opts.str("pgsql_user").to_string(), opts.str("pgsql_db").to_string());
    let mut pg = postgres::Config::new();
    pg.host(if host.is_empty() { "localhost" } else { &host })
        .port(port)
        .user(&user)
        .dbname(&db)
        .application_name("dbbench")
        .ssl_mode(ssl_mode);
    let password = opts.str("pgsql_password");
    if !password.is_empty() {
        pg.password(password);
    }
    let target =
        if host.starts_with('/') { format!("socket {host}/.s.PGSQL.{port}") } else { format!("{host}:{port}") };
    let native = match opts.str("pgsql_client").trim() {
        "native" if tls.is_none() => Some(wire::Target {
            endpoint: if host.starts_with('/') {
                crate::driver::socket::Endpoint::Socket(format!("{host}/.s.PGSQL.{port}"))
            } else {
                crate::driver::socket::Endpoint::Tcp(
                    if host.is_empty() { "localhost".into() } else { host.clone() },
                    port,
                )
            },
            user: user.clone(),
            db: db.clone(),
            password: password.to_string(),
        }),
        "native" | "crate" => None,
        other => return Err(format!("invalid --pgsql-client value '{other}': use native or crate")),
    };
    let cfg = Config {
        pg,
        tls,
        target,
        user,
        db,
        ignore: parse_ignore(&opts.list("pgsql_ignore_errors"))?,
        ps_disabled: ps_mode_disabled(opts)?,
        native,
    };
    Ok(Box::new(PgsqlDriver { cfg: Arc::new(cfg) }))
}

impl Driver for PgsqlDriver {
    fn name(&self) -> &'static str {
        "pgsql"
    }

    fn connect(&self) -> Result<Box<dyn Connection>, DbError> {
        if let Some(t) = &self.cfg.native {
            let session = open_native_session(&self.cfg, t, false)?;
            let key = Arc::new(Mutex::new(session.key));
            return Ok(Box::new(NativePgConnection {
                session,
                cfg: self.cfg.clone(),
                stmts: Slots::default(),
                names: 0,
                pending: Default::default(),
                spare: ResultSet::default(),
                key,
            }));
        }
        let client = open_session(&self.cfg, false)?;
        let cancel = Arc::new(Mutex::new(client.cancel_token()));
        Ok(Box::new(PgsqlConnection {
            client,
            cfg: self.cfg.clone(),
            stmts: Slots::default(),
            pending: Default::default(),
            cancel,
        }))
    }

    fn classify(&self, err: &DbError) -> ErrorAction {
        match err.kind {
            ErrorKind::ConnectFailed => ErrorAction::Fatal,
            ErrorKind::ConnectionLost => ErrorAction::Reconnect,
            _ => {
                let listed = self.cfg.ignore.as_ref().is_none_or(|items| {
                    items.iter().any(|i| {
                        if i.len() == 2 {
                            err.sqlstate.starts_with(i.as_str())
                        } else {
                            *i == err.sqlstate
                        }
                    })
                });
                if listed {
                    ErrorAction::Restart
                } else {
                    ErrorAction::Fatal
                }
            }
        }
    }
}

fn is_io(e: &postgres::Error) -> bool {
    e.is_closed() || e.source().is_some_and(|s| s.is::<io::Error>())
}

/// Maps a `postgres` error: server errors keep their SQLSTATE; a closed
/// connection or an I/O failure is ConnectionLost (SQLSTATE 08006).
fn map_err(e: postgres::Error) -> DbError {
    if let Some(db) = e.as_db_error() {
        let state = db.code().code();
        let kind = wire::kind_of_sqlstate(state);
        return DbError { kind, code: 0, sqlstate: state.to_string(), message: db.message().to_string() };
    }
    let (kind, sqlstate) = if is_io(&e) { (ErrorKind::ConnectionLost, "08006") } else { (ErrorKind::Other, "") };
    DbError { kind, code: 0, sqlstate: sqlstate.into(), message: e.to_string() }
}

/// The error of a write to a COPY: the server's, when the io::Error wraps one.
fn copy_write_error(e: io::Error) -> DbError {
    let message = e.to_string();
    match e.into_inner().map(|inner| inner.downcast::<postgres::Error>()) {
        Some(Ok(pg)) => map_err(*pg),
        _ => DbError { kind: ErrorKind::ConnectionLost, code: 0, sqlstate: "08006".into(), message },
    }
}

/// A failed connection attempt, naming target, user and database. On
/// reconnect, network failures are ConnectionLost (the server may come
/// back); refusals by the server (password, database) stay ConnectFailed.
fn connect_error(cfg: &Config, e: postgres::Error, reconnect: bool) -> DbError {
    let (kind, sqlstate, detail) = match e.as_db_error() {
        Some(db) => (ErrorKind::ConnectFailed, db.code().code().to_string(), db.message().to_string()),
        None if reconnect && is_io(&e) => (ErrorKind::ConnectionLost, "08001".to_string(), e.to_string()),
        None => (ErrorKind::ConnectFailed, "08001".to_string(), with_causes(&e)),
    };
    let detail = crate::exit::with_descriptor_advice(&detail);
    DbError {
        kind,
        code: 0,
        sqlstate,
        message: format!(
            "cannot connect to PostgreSQL at {} as '{}', database '{}': {detail}",
            cfg.target, cfg.user, cfg.db
        ),
    }
}

/// The error and its causes, `a: b: c` (a TLS failure says why: the
/// certificate's issuer is unknown, it names another host).
fn with_causes(e: &dyn StdError) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !text.contains(&t) {
            text = format!("{text}: {t}");
        }
        cause = c.source();
    }
    text
}

/// A parameter sent in text format, whatever type the server inferred.
#[derive(Debug)]
struct Param<'a>(&'a Value);

impl ToSql for Param<'_> {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self.0 {
            Value::Null => return Ok(IsNull::Yes),
            Value::Int(i) => write!(out, "{i}")?,
            Value::Double(d) => out.extend_from_slice(f64_text(*d).as_bytes()),
            Value::Text(s) => out.extend_from_slice(s.as_bytes()),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// One result cell converted to text; NULL is `None`.
struct Cell(Option<Vec<u8>>);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Cell, BoxError> {
        text_of(ty, raw).map(|t| Cell(Some(t)))
    }

    fn from_sql_null(_ty: &Type) -> Result<Cell, BoxError> {
        Ok(Cell(None))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

fn fixed<const N: usize>(raw: &[u8]) -> Result<[u8; N], BoxError> {
    raw.try_into().map_err(|_| format!("unexpected {}-byte binary value, expected {N} bytes", raw.len()).into())
}

/// Binary → PostgreSQL text format for the types benchmarks use.
fn text_of(ty: &Type, raw: &[u8]) -> Result<Vec<u8>, BoxError> {
    let s = match *ty {
        Type::BOOL => (if fixed::<1>(raw)?[0] != 0 { "t" } else { "f" }).to_string(),
        Type::INT2 => i16::from_be_bytes(fixed(raw)?).to_string(),
        Type::INT4 => i32::from_be_bytes(fixed(raw)?).to_string(),
        Type::INT8 => i64::from_be_bytes(fixed(raw)?).to_string(),
        Type::OID => u32::from_be_bytes(fixed(raw)?).to_string(),
        Type::FLOAT4 => match f32::from_be_bytes(fixed(raw)?) {
            // Shortest f32 text ("0.1", not 0.10000000149011612).
            f if f.is_finite() => f.to_string(),
            f => f64_text(f64::from(f)),
        },
        Type::FLOAT8 => f64_text(f64::from_be_bytes(fixed(raw)?)),
        Type::NUMERIC => numeric_text(raw)?,
        Type::DATE => match i32::from_be_bytes(fixed(raw)?) {
            i32::MAX => "infinity".into(),
            i32::MIN => "-infinity".into(),
            d => date_text(i64::from(d)),
        },
        Type::TIMESTAMP | Type::TIMESTAMPTZ => match i64::from_be_bytes(fixed(raw)?) {
            i64::MAX => "infinity".into(),
            i64::MIN => "-infinity".into(),
            us => {
                let mut s = date_text(us.div_euclid(86_400_000_000));
                s.push(' ');
                time_text(&mut s, us.rem_euclid(86_400_000_000));
                if *ty == Type::TIMESTAMPTZ {
                    // Binary timestamptz is UTC; the session time zone is not applied.
                    s.push_str("+00");
                }
                s
            }
        },
        Type::TIME => {
            let mut s = String::new();
            time_text(&mut s, i64::from_be_bytes(fixed(raw)?));
            s
        }
        Type::UUID => {
            let b: [u8; 16] = fixed(raw)?;
            let mut s = String::with_capacity(36);
            for (i, x) in b.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    s.push('-');
                }
                let _ = write!(s, "{x:02x}");
            }
            s
        }
        Type::BYTEA => {
            let mut s = String::with_capacity(2 + 2 * raw.len());
            s.push_str("\\x");
            for x in raw {
                let _ = write!(s, "{x:02x}");
            }
            s
        }
        // Binary jsonb is a version byte (1) followed by the JSON text.
        Type::JSONB => return Ok(raw.get(1..).unwrap_or_default().to_vec()),
        // Text types (text, varchar, bpchar, name, json, xml, ...) are sent as their text.
        _ => return Ok(raw.to_vec()),
    };
    Ok(s.into_bytes())
}

/// `YYYY-MM-DD` for a day count relative to 2000-01-01 (PostgreSQL's epoch).
fn date_text(pg_days: i64) -> String {
    crate::driver::date_from_unix_days(pg_days + 10_957)
}

/// `HH:MM:SS[.ffffff]` (trailing zeros trimmed, as PostgreSQL prints).
fn time_text(s: &mut String, us: i64) {
    let secs = us.div_euclid(1_000_000);
    let _ = write!(s, "{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    let frac = us.rem_euclid(1_000_000);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
}

/// Binary NUMERIC (base-10000 digits) → decimal text with the value's scale.
fn numeric_text(raw: &[u8]) -> Result<String, BoxError> {
    let word =
        |i: usize| raw.get(2 * i..2 * i + 2).map(|b| u16::from_be_bytes([b[0], b[1]])).ok_or("truncated numeric value");
    let (ndigits, weight, sign, dscale) = (usize::from(word(0)?), word(1)? as i16, word(2)?, usize::from(word(3)?));
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        _ => {}
    }
    let digit = |i: i64| -> Result<u16, &'static str> {
        if i < 0 || i >= ndigits as i64 {
            Ok(0)
        } else {
            word(4 + i as usize)
        }
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    let weight = i64::from(weight);
    if weight < 0 {
        s.push('0');
    }
    for i in 0..=weight {
        let d = digit(i)?;
        let _ = if i == 0 { write!(s, "{d}") } else { write!(s, "{d:04}") };
    }
    if dscale > 0 {
        s.push('.');
        let start = s.len();
        let mut i = weight + 1;
        while s.len() - start < dscale {
            let _ = write!(s, "{:04}", digit(i)?);
            i += 1;
        }
        s.truncate(start + dscale);
    }
    Ok(s)
}

/// Appends a PostgreSQL literal. Strings with a backslash use the `E''`
/// form so the result does not depend on `standard_conforming_strings`.
fn push_literal(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("NULL"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Double(d) if d.is_finite() => push_f64(out, *d),
        Value::Double(d) => {
            out.push('\'');
            out.push_str(&f64_text(*d));
            out.push('\'');
        }
        Value::Text(s) => {
            if s.contains('\\') {
                out.push('E');
            }
            out.push('\'');
            for c in s.chars() {
                match c {
                    '\'' => out.push_str("''"),
                    '\\' => out.push_str("\\\\"),
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
    }
}

/// Rewrites `?` placeholders (outside literals and comments) as `$1..$n`.
fn translate(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut last = 0;
    for (n, pos) in sqltext::placeholders(sql, Dialect::PostgreSql).into_iter().enumerate() {
        out.push_str(&sql[last..pos]);
        let _ = write!(out, "${}", n + 1);
        last = pos + 1;
    }
    out.push_str(&sql[last..]);
    out
}

#[derive(Debug)]
enum Stmt {
    /// The translated SQL (for re-preparing) and the server statement.
    Server {
        sql: String,
        stmt: Statement,
    },
    Emulated(Emulated),
}

/// A string as a PostgreSQL literal (both clients).
fn quote_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_literal(&mut out, &Value::Text(s.to_string()));
    out
}

/// The COPY statement of `bulk_load` (both clients): text format, `|`.
fn copy_from_stdin(table: &str, columns: &[&str]) -> String {
    format!("COPY {table} ({}) FROM STDIN WITH (FORMAT text, DELIMITER '|')", columns.join(", "))
}

/// One PostgreSQL connection and its statements (indexed by [`StmtId`]).
pub struct PgsqlConnection {
    client: Client,
    cfg: Arc<Config>,
    stmts: Slots<Stmt>,
    /// Results after the first of the last query, for `next_result`.
    pending: std::collections::VecDeque<Outcome>,
    /// The session's cancel key, shared with cancellers and replaced on reconnect.
    cancel: Arc<Mutex<CancelToken>>,
}

/// Bytes taken from the row source before they go to the COPY writer.
const COPY_CHUNK_BYTES: usize = 256 * 1024;

/// Cancels a PostgreSQL statement with the protocol's cancel request (a new
/// connection carrying the session's key; unix socket or TCP as configured).
struct PgCanceller {
    token: Arc<Mutex<CancelToken>>,
    /// The connection's configuration: where, and with what TLS.
    cfg: Arc<Config>,
}

impl Canceller for PgCanceller {
    fn cancel(&self) -> Result<(), DbError> {
        let token = self.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // The crate makes an event loop for the request, as for a session
        // (see `open_session`).
        let sent = crate::exit::catch_library_panic(|| match &self.cfg.tls {
            None => token.cancel_query(NoTls),
            // allow/prefer: without TLS when the TLS attempt fails, as connecting.
            Some(tls) => token.cancel_query(tls.clone()).or_else(|e| {
                if self.cfg.plain_after_tls_failure() {
                    token.cancel_query(NoTls)
                } else {
                    Err(e)
                }
            }),
        });
        let failed = |why: String| DbError {
            kind: ErrorKind::ConnectFailed,
            code: 0,
            sqlstate: "08001".into(),
            message: format!("cannot send a cancel request to PostgreSQL at {}: {why}", self.cfg.target),
        };
        match sent {
            Ok(r) => r.map_err(|e| failed(e.to_string())),
            Err(panic) => Err(failed(crate::exit::with_descriptor_advice(&panic_text(&panic)))),
        }
    }
}

impl Connection for PgsqlConnection {
    fn query(&mut self, sql: &str) -> Result<Outcome, DbError> {
        // Simple query protocol: text cells. With several statements the
        // first result is returned and the others wait for next_result.
        self.pending.clear();
        let msgs = self.client.simple_query(sql).map_err(map_err)?;
        let mut rows: Option<ResultSet> = None;
        for m in msgs {
            match m {
                SimpleQueryMessage::RowDescription(cols) => rows = Some(ResultSet::new(cols.len())),
                SimpleQueryMessage::Row(r) => {
                    if let Some(rs) = rows.as_mut() {
                        rs.push_row((0..r.len()).map(|i| r.try_get(i).ok().flatten().map(str::as_bytes)));
                    }
                }
                SimpleQueryMessage::CommandComplete(n) => self.pending.push_back(match rows.take() {
                    Some(rs) => Outcome::Rows(rs),
                    None => Outcome::Affected(n),
                }),
                _ => {}
            }
        }
        Ok(self.pending.pop_front().unwrap_or(Outcome::Affected(0)))
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let stmt = if self.cfg.ps_disabled {
            Stmt::Emulated(Emulated::new(sql, Dialect::PostgreSql))
        } else {
            let sql = translate(sql);
            let stmt = self.client.prepare(&sql).map_err(map_err)?;
            Stmt::Server { sql, stmt }
        };
        Ok(self.stmts.insert(stmt))
    }

    fn execute(&mut self, id: StmtId, params: &[Value]) -> Result<Outcome, DbError> {
        self.pending.clear();
        let stmt = match self.stmts.get(id) {
            Some(Stmt::Server { stmt, .. }) => stmt,
            Some(Stmt::Emulated(e)) => {
                let text = e.render(params, push_literal)?;
                return self.query(&text);
            }
            None => return Err(closed_stmt(id)),
        };
        let ncols = stmt.columns().len();
        let mut it = self.client.query_raw(stmt, params.iter().map(Param)).map_err(map_err)?;
        if ncols == 0 {
            while it.next().map_err(map_err)?.is_some() {}
            return Ok(Outcome::Affected(it.rows_affected().unwrap_or(0)));
        }
        let mut rs = ResultSet::new(ncols);
        while let Some(row) = it.next().map_err(map_err)? {
            for i in 0..ncols {
                let cell: Cell = row.try_get(i).map_err(map_err)?;
                rs.push_cell(cell.0.as_deref());
            }
            rs.end_row();
        }
        Ok(Outcome::Rows(rs))
    }

    fn close_statement(&mut self, id: StmtId) {
        // Dropping a postgres::Statement closes it on the server.
        self.stmts.remove(id);
    }

    fn reconnect(&mut self) -> Result<(), DbError> {
        self.client = open_session(&self.cfg, true)?;
        *self.cancel.lock().unwrap_or_else(|p| p.into_inner()) = self.client.cancel_token();
        for slot in self.stmts.iter_mut() {
            if let Stmt::Server { sql, stmt } = slot {
                *stmt = self.client.prepare(sql).map_err(map_err)?;
            }
        }
        Ok(())
    }

    fn quote(&self, s: &str) -> String {
        quote_literal(s)
    }

    fn more_results(&self) -> bool {
        !self.pending.is_empty()
    }

    fn next_result(&mut self) -> Option<Outcome> {
        self.pending.pop_front()
    }

    /// `COPY table (columns) FROM STDIN` in text format with `|` as delimiter:
    /// the row lines are COPY's text format as they are (no NULLs, no
    /// backslashes to escape), written to the crate's COPY writer in chunks
    /// as the source gives them. A bad value fails the whole COPY (nothing
    /// is loaded); the count is the COPY's.
    fn bulk_load(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        self.pending.clear();
        let sql = copy_from_stdin(table, columns);
        let mut writer = self.client.copy_in(&sql).map_err(map_err)?;
        let mut buf = Vec::with_capacity(COPY_CHUNK_BYTES + 64 * 1024);
        let mut more = true;
        while more {
            buf.clear();
            while more && buf.len() < COPY_CHUNK_BYTES {
                more = rows(&mut buf);
            }
            // Fails once the server ended the COPY (a bad row); the crate's
            // error inside the io::Error says why. Dropping the writer aborts
            // the COPY, and the connection stays usable.
            writer.write_all(&buf).map_err(copy_write_error)?;
        }
        writer.finish().map_err(map_err)
    }

    /// The protocol's cancel request with this session's key.
    fn canceller(&mut self) -> Option<Box<dyn Canceller>> {
        Some(Box::new(PgCanceller { token: self.cancel.clone(), cfg: self.cfg.clone() }))
    }

    fn server_version(&mut self) -> String {
        match self.query("SHOW server_version") {
            Ok(Outcome::Rows(rs)) => rs.first_text().unwrap_or_default(),
            _ => String::new(),
        }
    }
}

/// A native session ([`wire`]); a failure names target, user and
/// database as [`connect_error`] does for the crate's.
fn open_native_session(cfg: &Config, t: &wire::Target, reconnect: bool) -> Result<wire::Session, DbError> {
    use wire::WireError;
    wire::Session::connect(t).map_err(|e| {
        let (kind, sqlstate, detail) = match e {
            WireError::Server { sqlstate, message } => (ErrorKind::ConnectFailed, sqlstate, message),
            WireError::Io(e) if reconnect => {
                (ErrorKind::ConnectionLost, "08001".to_string(), format!("error connecting to server: {e}"))
            }
            WireError::Io(e) => {
                (ErrorKind::ConnectFailed, "08001".to_string(), format!("error connecting to server: {e}"))
            }
            WireError::Protocol(m) => (ErrorKind::ConnectFailed, "08001".to_string(), m),
        };
        let detail = crate::exit::with_descriptor_advice(&detail);
        DbError {
            kind,
            code: 0,
            sqlstate,
            message: format!(
                "cannot connect to PostgreSQL at {} as '{}', database '{}': {detail}",
                cfg.target, cfg.user, cfg.db
            ),
        }
    })
}

/// A statement of the native client: server-side (its name, translated SQL
/// and result columns) or emulated.
enum NativeStmt {
    Server { name: String, sql: String, params: usize, columns: usize },
    Emulated(Emulated),
}

/// One PostgreSQL connection through the native client (`--pgsql-client=native`).
pub struct NativePgConnection {
    session: wire::Session,
    cfg: Arc<Config>,
    stmts: Slots<NativeStmt>,
    /// Statements named so far (names are `dbb<N>`, never reused).
    names: u64,
    /// Results after the first of the last query, for `next_result`.
    pending: std::collections::VecDeque<Outcome>,
    /// A result set handed back by the caller, filled by the next execute.
    spare: ResultSet,
    /// The session's cancel key, shared with cancellers and replaced on reconnect.
    key: Arc<Mutex<(i32, i32)>>,
}

impl NativePgConnection {
    fn native_target(&self) -> &wire::Target {
        // A NativePgConnection exists only for a config with a native target.
        self.cfg.native.as_ref().expect("native target")
    }
}

impl Connection for NativePgConnection {
    fn query(&mut self, sql: &str) -> Result<Outcome, DbError> {
        self.pending.clear();
        let mut out = Vec::new();
        self.session.simple_query(sql, &mut out).map_err(|e| e.into_db_error())?;
        self.pending.extend(out);
        Ok(self.pending.pop_front().unwrap_or(Outcome::Affected(0)))
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let stmt = if self.cfg.ps_disabled {
            NativeStmt::Emulated(Emulated::new(sql, Dialect::PostgreSql))
        } else {
            let sql = translate(sql);
            self.names += 1;
            let name = format!("dbb{}", self.names);
            let (params, columns) = self.session.prepare(&name, &sql).map_err(|e| e.into_db_error())?;
            NativeStmt::Server { name, sql, params, columns }
        };
        Ok(self.stmts.insert(stmt))
    }

    fn execute(&mut self, id: StmtId, params: &[Value]) -> Result<Outcome, DbError> {
        self.pending.clear();
        let (name, columns) = match self.stmts.get(id) {
            // Checked here as the crate does: the server would answer a
            // wrong count with SQLSTATE 08P01, a "connection" class.
            Some(NativeStmt::Server { params: n, .. }) if *n != params.len() => {
                return Err(DbError {
                    kind: ErrorKind::Other,
                    code: 0,
                    sqlstate: String::new(),
                    message: format!("expected {n} parameters but got {}", params.len()),
                })
            }
            Some(NativeStmt::Server { name, columns, .. }) => (name, *columns),
            Some(NativeStmt::Emulated(e)) => {
                let text = e.render(params, push_literal)?;
                return self.query(&text);
            }
            None => return Err(closed_stmt(id)),
        };
        let mut rs = std::mem::take(&mut self.spare);
        // Without a result set to hand out, its buffers stay for the next one.
        match self.session.execute(name, params, columns, &mut rs) {
            Ok(_) if columns > 0 => Ok(Outcome::Rows(rs)),
            Ok(affected) => {
                self.spare = rs;
                Ok(Outcome::Affected(affected))
            }
            Err(e) => {
                self.spare = rs;
                Err(e.into_db_error())
            }
        }
    }

    fn close_statement(&mut self, id: StmtId) {
        if let Some(NativeStmt::Server { name, .. }) = self.stmts.remove(id) {
            // A failure shows in the connection's next statement.
            let _ = self.session.close_statement(&name);
        }
    }

    fn reconnect(&mut self) -> Result<(), DbError> {
        let t = self.native_target().clone();
        self.session = open_native_session(&self.cfg, &t, true)?;
        *self.key.lock().unwrap_or_else(|p| p.into_inner()) = self.session.key;
        for slot in self.stmts.iter_mut() {
            if let NativeStmt::Server { name, sql, params, columns } = slot {
                (*params, *columns) = self.session.prepare(name, sql).map_err(|e| e.into_db_error())?;
            }
        }
        Ok(())
    }

    fn quote(&self, s: &str) -> String {
        quote_literal(s)
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

    /// `COPY ... FROM STDIN` as on the crate path (text format, `|`).
    fn bulk_load(&mut self, table: &str, columns: &[&str], rows: RowSource) -> Result<u64, DbError> {
        self.pending.clear();
        let sql = copy_from_stdin(table, columns);
        self.session.copy_in(&sql, COPY_CHUNK_BYTES, rows).map_err(|e| e.into_db_error())
    }

    fn canceller(&mut self) -> Option<Box<dyn Canceller>> {
        Some(Box::new(wire::WireCanceller {
            endpoint: self.native_target().endpoint.clone(),
            key: self.key.clone(),
            target: self.cfg.target.clone(),
        }))
    }

    fn server_version(&mut self) -> String {
        self.session.server_version.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::test_support::{
        check_bad_rows, check_bulk_load, check_cancel, check_text_round_trip, connect_new, driver_opts, insert_path,
        own_bulk_load, rows, test_env, txt,
    };

    fn opts(extra: &[(&str, &str)]) -> Options {
        driver_opts(options(), extra)
    }

    /// Options for the dev server, or None (skipped).
    fn server(extra: &[(&str, &str)]) -> Option<Options> {
        let host = test_env("DBBENCH_TEST_PGSQL_HOST")?;
        let port = test_env("DBBENCH_TEST_PGSQL_PORT")?;
        let mut o = opts(extra);
        o.set("pgsql_host", &host);
        o.set("pgsql_port", &port);
        Some(o)
    }

    fn connect(o: &Options) -> Box<dyn Connection> {
        connect_new(create(o))
    }

    /// Both clients: the tests below run against each (`--pgsql-client`).
    const CLIENTS: [&str; 2] = ["crate", "native"];

    /// TCP options for `client`: the native client only speaks plain TCP.
    fn tcp(client: &str, port: &str) -> Options {
        let mut o = opts(&[("pgsql_host", "127.0.0.1"), ("pgsql_port", port), ("pgsql_client", client)]);
        if client == "native" {
            o.set("pgsql_sslmode", "disable");
        }
        o
    }

    /// The native client names its statements dbb<N>, the crate s<N>: which
    /// client a connection is, seen from the server.
    #[test]
    fn each_client_is_the_one_asked_for() {
        for client in CLIENTS {
            let Some(o) = server(&[("pgsql_client", client)]) else { return };
            let mut c = connect(&o);
            let s = c.prepare("SELECT ?::int").expect("prepare");
            let names = rows(c.query("SELECT name FROM pg_prepared_statements"));
            let want = if client == "native" { "dbb" } else { "s" };
            assert!(
                names.iter().all(|r| r[0].as_deref().is_some_and(|n| n.starts_with(want.as_bytes()))),
                "{client}: {names:?}"
            );
            assert_eq!(rows(c.execute(s, &[Value::Int(5)])), vec![vec![txt("5")]], "{client}");
        }
        let err = create(&opts(&[("pgsql_client", "libpq")])).err().expect("bad client");
        assert_eq!(err, "invalid --pgsql-client value 'libpq': use native or crate");
    }

    #[test]
    fn translate_placeholders() {
        assert_eq!(
            translate("SELECT c FROM t WHERE id = ? AND c = '?' AND k IN (?, ?)"),
            "SELECT c FROM t WHERE id = $1 AND c = '?' AND k IN ($2, $3)"
        );
    }

    #[test]
    fn bad_options_are_one_line() {
        for (k, v) in [("pgsql_port", "x"), ("pgsql_sslmode", "bogus"), ("pgsql_ignore_errors", "4OOOOO")] {
            let err = create(&opts(&[(k, v)])).err().expect("must fail");
            assert!(!err.contains('\n') && err.contains(v), "{err}");
        }
        let err = create(&opts(&[("pgsql_sslmode", "verify-ca"), ("pgsql_sslrootcert", "/nonexistent/root.crt")]))
            .err()
            .expect("no root file");
        assert!(
            !err.contains('\n') && err.contains("/nonexistent/root.crt") && err.contains("--pgsql-sslrootcert=FILE"),
            "{err}"
        );
    }

    #[test]
    fn classify_follows_ignore_list() {
        let e = |kind, s: &str| DbError { kind, code: 0, sqlstate: s.into(), message: String::new() };
        let d = create(&opts(&[])).expect("driver");
        assert_eq!(d.classify(&e(ErrorKind::Deadlock, "40P01")), ErrorAction::Restart);
        assert_eq!(d.classify(&e(ErrorKind::UniqueViolation, "23505")), ErrorAction::Restart);
        assert_eq!(d.classify(&e(ErrorKind::Other, "42601")), ErrorAction::Fatal);
        assert_eq!(d.classify(&e(ErrorKind::ConnectionLost, "57P01")), ErrorAction::Reconnect);
        assert_eq!(d.classify(&e(ErrorKind::ConnectFailed, "28P01")), ErrorAction::Fatal);
        let d = create(&opts(&[("pgsql_ignore_errors", "40,42601")])).expect("driver");
        assert_eq!(d.classify(&e(ErrorKind::Serialization, "40001")), ErrorAction::Restart);
        assert_eq!(d.classify(&e(ErrorKind::Other, "42601")), ErrorAction::Restart);
        assert_eq!(d.classify(&e(ErrorKind::UniqueViolation, "23505")), ErrorAction::Fatal);
        let d = create(&opts(&[("pgsql_ignore_errors", "all")])).expect("driver");
        assert_eq!(d.classify(&e(ErrorKind::Other, "42P01")), ErrorAction::Restart);
    }

    #[test]
    fn statements_results_and_errors() {
        for client in CLIENTS {
            statements_results_and_errors_with(client);
        }
    }

    fn statements_results_and_errors_with(client: &str) {
        eprintln!("--pgsql-client={client}");
        let Some(o) = server(&[("pgsql_client", client)]) else { return };
        let mut c = connect(&o);
        assert!(c.server_version().starts_with(char::is_numeric));
        c.query("DROP TABLE IF EXISTS dbb_pg_basic").expect("drop");
        assert_eq!(
            c.query("CREATE TABLE dbb_pg_basic (id INTEGER PRIMARY KEY, k BIGINT, s SMALLINT, c CHAR(10), v VARCHAR(20), d FLOAT8, f REAL, n NUMERIC(12,4), b BOOLEAN, ts TIMESTAMP, dt DATE, u UUID, j JSONB, by BYTEA)"),
            Ok(Outcome::Affected(0))
        );
        // Ints bound to INTEGER/SMALLINT/NUMERIC columns and text to a DATE column all work.
        let ins = c
            .prepare("INSERT INTO dbb_pg_basic (id, k, s, c, v, d, f, n, dt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .expect("prepare");
        let p = [
            Value::Int(1),
            Value::Int(-5_000_000_000),
            Value::Int(7),
            Value::Text("ab".into()),
            Value::Text("x'y".into()),
            Value::Double(0.25),
            Value::Double(0.1),
            Value::Int(3),
            Value::Text("1999-12-31".into()),
        ];
        assert_eq!(c.execute(ins, &p), Ok(Outcome::Affected(1)));
        let nulls = [
            Value::Int(2),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ];
        assert_eq!(c.execute(ins, &nulls), Ok(Outcome::Affected(1)));
        c.query("UPDATE dbb_pg_basic SET n = -12345678.0125, b = true, ts = '2024-02-29 04:05:06.789', u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', j = '{\"a\": 1}', by = '\\x00ff' WHERE id = 1")
            .expect("update");
        let cols = "id, k, s, c, v, d, f, n, b, ts, dt, u, j, by";
        let sel = c.prepare(&format!("SELECT {cols} FROM dbb_pg_basic WHERE id >= ? ORDER BY id")).expect("prepare");
        let want = vec![
            [
                "1",
                "-5000000000",
                "7",
                "ab        ",
                "x'y",
                "0.25",
                "0.1",
                "-12345678.0125",
                "t",
                "2024-02-29 04:05:06.789",
                "1999-12-31",
                "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                "{\"a\": 1}",
                "\\x00ff",
            ]
            .map(txt)
            .to_vec(),
            [vec![txt("2")], vec![None; 13]].concat(),
        ];
        assert_eq!(rows(c.execute(sel, &[Value::Int(1)])), want);
        // The simple protocol returns the server's own text: it must agree.
        assert_eq!(rows(c.query(&format!("SELECT {cols} FROM dbb_pg_basic ORDER BY id"))), want);
        for (expr, text) in [
            ("0.0001::numeric", "0.0001"),
            ("100000000::numeric", "100000000"),
            ("'NaN'::numeric", "NaN"),
            ("sum(x) FROM generate_series(1,3) x", "6"),
            ("avg(x) FROM generate_series(1,2) x", "1.5000000000000000"),
            ("'-infinity'::float8", "-Infinity"),
            ("'0001-01-01'::date", "0001-01-01"),
            ("'12:00:01.5'::time", "12:00:01.5"),
        ] {
            let s = c.prepare(&format!("SELECT {expr}")).expect("prepare");
            assert_eq!(rows(c.execute(s, &[])), vec![vec![txt(text)]], "{expr}");
            c.close_statement(s);
        }
        // Rows even when empty; UPDATE matching nothing → Affected(0).
        assert_eq!(c.execute(sel, &[Value::Int(99)]), Ok(Outcome::Rows(ResultSet::new(14))));
        let upd = c.prepare("UPDATE dbb_pg_basic SET k = k + 1 WHERE id = ?").expect("prepare");
        assert_eq!(c.execute(upd, &[Value::Int(99)]), Ok(Outcome::Affected(0)));
        assert_eq!(c.execute(upd, &[Value::Int(1)]), Ok(Outcome::Affected(1)));
        assert_eq!(c.query("UPDATE dbb_pg_basic SET k = 0 WHERE id < 0"), Ok(Outcome::Affected(0)));
        assert_eq!(c.query("SELECT 1 WHERE false"), Ok(Outcome::Rows(ResultSet::new(1))));
        assert_eq!(rows(c.query("SELECT 1; SELECT 2")), vec![vec![txt("1")]]);
        assert_eq!(c.execute(upd, &[]).map_err(|e| e.kind), Err(ErrorKind::Other));

        // Duplicate key → UniqueViolation, ignorable by default.
        let err = c.execute(ins, &nulls).expect_err("dup");
        assert_eq!((err.kind, err.sqlstate.as_str()), (ErrorKind::UniqueViolation, "23505"));
        assert_eq!(create(&o).expect("driver").classify(&err), ErrorAction::Restart);
        let mut strict = o.clone();
        strict.set("pgsql_ignore_errors", "40P01");
        assert_eq!(create(&strict).expect("driver").classify(&err), ErrorAction::Fatal);
        // Syntax error → Other, fatal.
        let err = c.prepare("SELEKT ?").expect_err("syntax");
        assert_eq!((err.kind, err.sqlstate.as_str()), (ErrorKind::Other, "42601"));
        assert_eq!(create(&o).expect("driver").classify(&err), ErrorAction::Fatal);
        assert_eq!(c.query("SELEKT 1").map_err(|e| e.sqlstate), Err("42601".to_string()));
        c.close_statement(upd);
        assert!(c.execute(upd, &[Value::Int(1)]).is_err());
        c.query("DROP TABLE dbb_pg_basic").expect("drop");
    }

    #[test]
    fn text_round_trips_in_both_ps_modes() {
        let tricky = "it's \\ a \"test\" \n \r \x1a ? done";
        for (client, mode) in CLIENTS.into_iter().flat_map(|c| ["auto", "disable"].map(|m| (c, m))) {
            let Some(o) = server(&[("db_ps_mode", mode), ("pgsql_client", client)]) else { return };
            check_text_round_trip(connect(&o).as_mut(), &format!("dbb_pg_rt_{client}_{mode}"), "FLOAT8", tricky, mode);
        }
    }

    #[test]
    fn connect_failures_are_clear() {
        for client in CLIENTS {
            connect_failures_are_clear_with(client);
        }
    }

    fn connect_failures_are_clear_with(client: &str) {
        eprintln!("--pgsql-client={client}");
        let Some(o) = server(&[("pgsql_db", "dbb_no_such_db"), ("pgsql_client", client)]) else { return };
        let err = create(&o).expect("driver").connect().err().expect("unknown db");
        assert_eq!((err.kind, err.sqlstate.as_str()), (ErrorKind::ConnectFailed, "3D000"));
        assert!(err.message.contains("as 'sbtest', database 'dbb_no_such_db'"), "{err}");
        let Some(o) = server(&[("pgsql_user", "dbb_no_such_user"), ("pgsql_client", client)]) else { return };
        let err = create(&o).expect("driver").connect().err().expect("unknown user");
        assert_eq!((err.kind, err.sqlstate.as_str()), (ErrorKind::ConnectFailed, "28000"), "{err}");
        // TCP works too, and a refused port is a clear ConnectFailed.
        let Some(port) = test_env("DBBENCH_TEST_PGSQL_PORT") else { return };
        let mut c = connect(&tcp(client, &port));
        assert_eq!(rows(c.query("SELECT 1")), vec![vec![txt("1")]]);
        let d = create(&tcp(client, "1")).expect("driver");
        let err = d.connect().err().expect("refused");
        assert_eq!(err.kind, ErrorKind::ConnectFailed);
        assert!(
            err.message.starts_with("cannot connect to PostgreSQL at 127.0.0.1:1 as 'sbtest', database 'sbtest': "),
            "{err}"
        );
        assert_eq!(d.classify(&err), ErrorAction::Fatal);
    }

    #[test]
    fn terminated_backend_reconnects_with_statements() {
        for client in CLIENTS {
            terminated_backend_reconnects_with_statements_with(client);
        }
    }

    fn terminated_backend_reconnects_with_statements_with(client: &str) {
        eprintln!("--pgsql-client={client}");
        let Some(o) = server(&[("pgsql_client", client)]) else { return };
        let drv = create(&o).expect("driver");
        let mut a = drv.connect().expect("a");
        let mut b = drv.connect().expect("b");
        let s = a.prepare("SELECT ?::int + 1").expect("prepare");
        let pid = rows(a.query("SELECT pg_backend_pid()")).remove(0).remove(0).expect("pid");
        let pid = String::from_utf8_lossy(&pid).into_owned();
        assert_eq!(rows(b.query(&format!("SELECT pg_terminate_backend({pid})"))), vec![vec![txt("t")]]);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let err = a.execute(s, &[Value::Int(1)]).expect_err("terminated");
        eprintln!("terminated backend: {err}");
        assert_eq!(err.kind, ErrorKind::ConnectionLost, "{err}");
        assert_eq!(drv.classify(&err), ErrorAction::Reconnect);
        a.reconnect().expect("reconnect");
        assert_eq!(rows(a.execute(s, &[Value::Int(1)])), vec![vec![txt("2")]]);
    }

    /// 100 000 rows through COPY FROM STDIN and through the INSERT path; a
    /// bad row fails the COPY with the server's message (also when it comes
    /// after 20 000 good rows, while data is still being written).
    #[test]
    fn bulk_load_copy_and_insert() {
        for client in CLIENTS {
            bulk_load_copy_and_insert_with(client);
        }
    }

    fn bulk_load_copy_and_insert_with(client: &str) {
        eprintln!("--pgsql-client={client}");
        let Some(o) = server(&[("pgsql_client", client)]) else { return };
        let mut c = connect(&o);
        check_bulk_load(c.as_mut(), "dbb_pg_bulk_copy", true, &own_bulk_load);
        let bad = [
            ("x|1.00|1995-01-01|A|n\n", "invalid input syntax for type integer: \"x\""),
            ("2|1.00|1995-13-45|A|n\n", "date/time field value out of range: \"1995-13-45\""),
            ("3|1.00\n", "missing data for column \"d\""),
            ("4|1.00|1995-01-01|A|n|extra\n", "extra data after last expected column"),
            ("5|1.00|1995-01-01|A|this note is longer than forty-four characters\n", "value too long"),
        ];
        check_bad_rows(c.as_mut(), "dbb_pg_bulk_copy", &own_bulk_load, &bad);
        check_bulk_load(c.as_mut(), "dbb_pg_bulk_insert", true, &insert_path);
        let bad = [
            ("x|1.00|1995-01-01|A|n\n", "invalid input syntax for type integer: \"x\""),
            ("3|1.00\n", "has 2 field(s), 5 column(s)"),
        ];
        check_bad_rows(c.as_mut(), "dbb_pg_bulk_insert", &insert_path, &bad);
    }

    /// Notices the server sends while a COPY is still being written (a
    /// trigger's RAISE NOTICE per row) do not end the COPY early: every row
    /// is loaded and counted.
    #[test]
    fn notices_during_a_copy_do_not_cut_it_short() {
        for client in CLIENTS {
            let Some(o) = server(&[("pgsql_client", client)]) else { return };
            let mut c = connect(&o);
            c.query("DROP TABLE IF EXISTS dbb_pg_copy_notice").expect("drop");
            c.query("CREATE TABLE dbb_pg_copy_notice (a INTEGER, b TEXT)").expect("create");
            c.query(
                "CREATE OR REPLACE FUNCTION dbb_pg_copy_notice_f() RETURNS trigger AS $$ \
                 BEGIN IF NEW.a % 1000 = 0 THEN RAISE NOTICE 'row %', NEW.a; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
            )
            .expect("function");
            c.query(
                "CREATE TRIGGER dbb_pg_copy_notice_t BEFORE INSERT ON dbb_pg_copy_notice \
                 FOR EACH ROW EXECUTE FUNCTION dbb_pg_copy_notice_f()",
            )
            .expect("trigger");
            let mut next = 0u32;
            let mut source = |buf: &mut Vec<u8>| {
                for _ in 0..5000 {
                    next += 1;
                    buf.extend_from_slice(format!("{next}|some text for row {next}\n").as_bytes());
                    if next == 200_000 {
                        return false;
                    }
                }
                true
            };
            let n = c.bulk_load("dbb_pg_copy_notice", &["a", "b"], &mut source).expect("copy");
            assert_eq!(n, 200_000, "{client}");
            assert_eq!(rows(c.query("SELECT count(*) FROM dbb_pg_copy_notice")), vec![vec![txt("200000")]], "{client}");
            c.query("DROP TABLE dbb_pg_copy_notice").expect("drop");
            c.query("DROP FUNCTION dbb_pg_copy_notice_f()").expect("drop function");
        }
    }

    /// The cancel request stops `pg_sleep(30)` over the unix socket the dev
    /// server listens on and over TCP; the error is Cancelled (57014),
    /// fatal unless listed.
    #[test]
    fn cancel_stops_a_running_statement() {
        let Some(port) = test_env("DBBENCH_TEST_PGSQL_PORT") else { return };
        for client in CLIENTS {
            let Some(o) = server(&[("pgsql_client", client)]) else { return };
            cancel_stops_a_running_statement_with(o, tcp(client, &port));
        }
    }

    fn cancel_stops_a_running_statement_with(o: Options, tcp: Options) {
        for o in [o, tcp] {
            let mut c = connect(&o);
            let err = check_cancel(c.as_mut(), "SELECT pg_sleep(30)");
            assert_eq!(err.sqlstate, "57014", "{err}");
            assert_eq!(create(&o).expect("driver").classify(&err), ErrorAction::Fatal);
            let mut listed = o.clone();
            listed.set("pgsql_ignore_errors", "57014");
            assert_eq!(create(&listed).expect("driver").classify(&err), ErrorAction::Restart);
        }
    }
}
