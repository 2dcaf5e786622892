//! Backends: a connection to the store's SQLite file or PostgreSQL/MariaDB/MySQL server.

use super::error::{failure, reword, StoreError, StoreErrorKind};
use super::location::ServerUrl;
use super::sql::{int_at, translate, Dialect, Row, Val};
use super::PASSWORD_ENV;
use anyhow::{anyhow, bail, Context};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// A connection to the store's database.
pub(super) enum Backend {
    Sqlite(Connection),
    // Boxed: the PostgreSQL client is several times larger than the others.
    Postgres(Box<Pg>),
    Mysql(My),
}

/// A PostgreSQL store connection.
pub(super) struct Pg {
    pub(super) client: postgres::Client,
    /// To reconnect after the server closed an idle connection.
    config: postgres::Config,
    /// Prepared statements by SQL text: their parameter types decide how a
    /// `Val` is bound (the crate checks Rust type against column type).
    statements: HashMap<String, postgres::Statement>,
    pub(super) last_used: Instant,
}

/// A MariaDB/MySQL store connection.
pub(super) struct My {
    pub(super) conn: mysql::Conn,
    /// To reconnect after the server closed an idle connection.
    opts: mysql::Opts,
    pub(super) last_used: Instant,
}

/// How long a server connection may sit idle before it is checked (and
/// reopened if the server closed it: wait_timeout, a restart) before use.
/// Labs spend minutes between store writes.
pub(super) const IDLE_CHECK: Duration = Duration::from_secs(60);

impl Backend {
    pub(super) fn dialect(&self) -> Dialect {
        match self {
            Backend::Sqlite(_) => Dialect::Sqlite,
            Backend::Postgres(_) => Dialect::Postgres,
            Backend::Mysql(_) => Dialect::Mysql,
        }
    }

    /// Runs SQL without parameters or results, as given (no translation):
    /// transaction control and DDL.
    pub(super) fn batch(&mut self, sql: &str) -> anyhow::Result<()> {
        match self {
            Backend::Sqlite(c) => c.execute_batch(sql).map_err(sqlite_error),
            Backend::Postgres(p) => p.client.batch_execute(sql).map_err(pg_error),
            Backend::Mysql(m) => {
                use mysql::prelude::Queryable;
                m.conn.query_drop(sql).map_err(my_error)
            }
        }
    }

    /// Runs one statement (neutral syntax) and returns its rows.
    pub(super) fn query(&mut self, sql: &str, params: &[Val]) -> anyhow::Result<Vec<Row>> {
        let sql = translate(self.dialect(), sql);
        match self {
            Backend::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql).map_err(sqlite_error)?;
                let n = st.column_count();
                let mut rows = st.query(rusqlite::params_from_iter(params.iter())).map_err(sqlite_error)?;
                let mut out = Vec::new();
                while let Some(r) = rows.next().map_err(sqlite_error)? {
                    let mut row = Vec::with_capacity(n);
                    for i in 0..n {
                        row.push(match r.get_ref(i).map_err(sqlite_error)? {
                            rusqlite::types::ValueRef::Null => Val::Null,
                            rusqlite::types::ValueRef::Integer(v) => Val::Int(v),
                            rusqlite::types::ValueRef::Real(v) => Val::Real(v),
                            rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                                Val::Text(String::from_utf8_lossy(t).into_owned())
                            }
                        });
                    }
                    out.push(row);
                }
                Ok(out)
            }
            Backend::Postgres(p) => {
                let st = p.statement(&sql)?;
                let bound = pg_params(&st, params)?;
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
                let rows = p.client.query(&st, &refs).map_err(pg_error)?;
                rows.iter().map(pg_row).collect()
            }
            Backend::Mysql(m) => {
                use mysql::prelude::Queryable;
                let rows: Vec<mysql::Row> = m.conn.exec(sql.as_str(), my_params(params)).map_err(my_error)?;
                Ok(rows.into_iter().map(|r| r.unwrap().into_iter().map(my_val).collect()).collect())
            }
        }
    }

    /// Runs one statement (neutral syntax) that returns no rows.
    pub(super) fn execute(&mut self, sql: &str, params: &[Val]) -> anyhow::Result<()> {
        match self {
            Backend::Sqlite(c) => {
                let mut st = c.prepare_cached(sql).map_err(sqlite_error)?;
                st.execute(rusqlite::params_from_iter(params.iter())).map(|_| ()).map_err(sqlite_error)
            }
            Backend::Postgres(p) => {
                let sql = translate(Dialect::Postgres, sql);
                let st = p.statement(&sql)?;
                let bound = pg_params(&st, params)?;
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
                p.client.execute(&st, &refs).map(|_| ()).map_err(pg_error)
            }
            Backend::Mysql(m) => {
                use mysql::prelude::Queryable;
                m.conn.exec_drop(translate(Dialect::Mysql, sql), my_params(params)).map_err(my_error)
            }
        }
    }

    /// Runs an INSERT (neutral syntax) into a table with an `id` row id and
    /// returns the new row's id.
    pub(super) fn insert(&mut self, sql: &str, params: &[Val]) -> anyhow::Result<i64> {
        if self.dialect() == Dialect::Postgres {
            let rows = self.query(&format!("{sql} RETURNING id"), params)?;
            return rows
                .first()
                .ok_or_else(|| anyhow!("INSERT .. RETURNING id returned no row"))
                .and_then(|r| int_at(r, 0));
        }
        self.execute(sql, params)?;
        match self {
            Backend::Sqlite(c) => Ok(c.last_insert_rowid()),
            Backend::Mysql(m) => Ok(m.conn.last_insert_id() as i64),
            Backend::Postgres(_) => Err(anyhow!("PostgreSQL inserts return their id above")),
        }
    }

    /// Before a top-level operation (never inside a transaction): a server
    /// connection idle for a while is checked, and reopened if the server
    /// closed it, so a long lab survives `wait_timeout` or a store restart
    /// between runs. Nothing is in flight then, so reopening loses nothing.
    /// Returns whether it reconnected.
    pub(super) fn keep_alive(&mut self) -> anyhow::Result<bool> {
        let mut reconnected = false;
        match self {
            Backend::Sqlite(_) => {}
            Backend::Postgres(p) => {
                let idle = p.last_used.elapsed() > IDLE_CHECK;
                if p.client.is_closed() || (idle && p.client.is_valid(Duration::from_secs(10)).is_err()) {
                    p.client = p.config.connect(postgres::NoTls).map_err(pg_error).context("cannot reconnect")?;
                    p.statements.clear();
                    reconnected = true;
                }
                p.last_used = Instant::now();
            }
            Backend::Mysql(m) => {
                if m.last_used.elapsed() > IDLE_CHECK && m.conn.ping().is_err() {
                    m.conn = mysql::Conn::new(m.opts.clone()).map_err(my_error).context("cannot reconnect")?;
                    reconnected = true;
                }
                m.last_used = Instant::now();
            }
        }
        Ok(reconnected)
    }
}

impl Pg {
    /// The prepared statement for `sql` (PostgreSQL syntax), cached.
    fn statement(&mut self, sql: &str) -> anyhow::Result<postgres::Statement> {
        if let Some(st) = self.statements.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(sql).map_err(pg_error)?;
        self.statements.insert(sql.to_string(), st.clone());
        Ok(st)
    }
}

/// A PostgreSQL error as one line (see `crate::sqlclient`), classified.
fn pg_error(e: postgres::Error) -> anyhow::Error {
    StoreError::postgres(e).into()
}

/// A MariaDB/MySQL error as one line (see `crate::sqlclient`), classified.
fn my_error(e: mysql::Error) -> anyhow::Error {
    StoreError::mysql(e).into()
}

/// A SQLite error as its own one line (`rusqlite`'s text already holds the
/// cause, which `{:#}` would print a second time), classified.
pub(super) fn sqlite_error(e: rusqlite::Error) -> anyhow::Error {
    StoreError::sqlite(e).into()
}

/// Binds `params` to a prepared statement's parameter types: the crate
/// accepts only the exact Rust type of a column type (i64 for BIGINT, i32
/// for INTEGER, f64 for DOUBLE PRECISION ...), NULL included.
fn pg_params(st: &postgres::Statement, params: &[Val]) -> anyhow::Result<Vec<Box<dyn postgres::types::ToSql + Sync>>> {
    use postgres::types::Type;
    if st.params().len() != params.len() {
        bail!("statement takes {} parameters, {} given", st.params().len(), params.len());
    }
    let mut out: Vec<Box<dyn postgres::types::ToSql + Sync>> = Vec::with_capacity(params.len());
    for (i, (v, ty)) in params.iter().zip(st.params()).enumerate() {
        let bad = || anyhow!("parameter {} ({v:?}) does not fit a column of type {ty}", i + 1);
        let b: Box<dyn postgres::types::ToSql + Sync> = if *ty == Type::INT8 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().filter(|_| !matches!(v, Val::Real(f) if f.fract() != 0.0)).ok_or_else(bad)?),
            })
        } else if *ty == Type::INT4 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().and_then(|i| i32::try_from(i).ok()).ok_or_else(bad)?),
            })
        } else if *ty == Type::INT2 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().and_then(|i| i16::try_from(i).ok()).ok_or_else(bad)?),
            })
        } else if *ty == Type::FLOAT8 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.real().ok_or_else(bad)?),
            })
        } else if *ty == Type::FLOAT4 {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.real().ok_or_else(bad)? as f32),
            })
        } else if *ty == Type::BOOL {
            Box::new(match v {
                Val::Null => None,
                v => Some(v.int().ok_or_else(bad)? != 0),
            })
        } else {
            // TEXT, VARCHAR and the like.
            Box::new(v.text())
        };
        out.push(b);
    }
    Ok(out)
}

/// A PostgreSQL result row as `Val`s.
fn pg_row(row: &postgres::Row) -> anyhow::Result<Row> {
    use postgres::types::Type;
    let mut out = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let t = col.type_();
        let e = |e: postgres::Error| anyhow!("column {}: {e}", col.name());
        let v = if *t == Type::INT8 {
            row.try_get::<_, Option<i64>>(i).map_err(e)?.map(Val::Int)
        } else if *t == Type::INT4 {
            row.try_get::<_, Option<i32>>(i).map_err(e)?.map(|v| Val::Int(v as i64))
        } else if *t == Type::INT2 {
            row.try_get::<_, Option<i16>>(i).map_err(e)?.map(|v| Val::Int(v as i64))
        } else if *t == Type::FLOAT8 {
            row.try_get::<_, Option<f64>>(i).map_err(e)?.map(Val::Real)
        } else if *t == Type::FLOAT4 {
            row.try_get::<_, Option<f32>>(i).map_err(e)?.map(|v| Val::Real(v as f64))
        } else if *t == Type::BOOL {
            row.try_get::<_, Option<bool>>(i).map_err(e)?.map(|v| Val::Int(v as i64))
        } else if [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME, Type::UNKNOWN].contains(t) {
            row.try_get::<_, Option<String>>(i).map_err(e)?.map(Val::Text)
        } else {
            bail!("column {} has type {t}, which the results store does not read", col.name());
        };
        out.push(v.unwrap_or(Val::Null));
    }
    Ok(out)
}

fn my_params(params: &[Val]) -> mysql::Params {
    if params.is_empty() {
        return mysql::Params::Empty;
    }
    mysql::Params::Positional(
        params
            .iter()
            .map(|v| match v {
                Val::Null => mysql::Value::NULL,
                Val::Int(i) => mysql::Value::Int(*i),
                Val::Real(f) => mysql::Value::Double(*f),
                Val::Text(s) => mysql::Value::Bytes(s.clone().into_bytes()),
            })
            .collect(),
    )
}

fn my_val(v: mysql::Value) -> Val {
    match v {
        mysql::Value::NULL => Val::Null,
        mysql::Value::Int(i) => Val::Int(i),
        mysql::Value::UInt(u) => i64::try_from(u).map(Val::Int).unwrap_or(Val::Real(u as f64)),
        mysql::Value::Float(f) => Val::Real(f as f64),
        mysql::Value::Double(f) => Val::Real(f),
        mysql::Value::Bytes(b) => Val::Text(String::from_utf8_lossy(&b).into_owned()),
        // The store has no date or time columns; text keeps whatever it is.
        other => Val::Text(other.as_sql(true)),
    }
}

pub(super) fn open_sqlite(path: &Path) -> anyhow::Result<Backend> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            crate::safe_fs::private_dir_all(dir, 0o700, "the store's directory").map_err(crate::errors::text_error)?;
        }
    }
    // Not through a symlink: one planted where the store is made would
    // have root write the store over its target.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(failure(
            StoreErrorKind::NotAStore,
            format!(
                "{} is a symlink; dbbench opens a store only by its real path (a symlink planted there would redirect its writes): give that path",
                path.display()
            ),
        ));
    }
    let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).map_err(sqlite_error).context("cannot open")?;
    Ok(Backend::Sqlite(conn))
}

/// Opens a SQLite store for reading only, and reads its schema version.
/// A store in WAL mode whose `-wal` and `-shm` files are absent (no writer
/// has it open) cannot be read through the normal read-only open when the
/// reader may not create those files (a read-only directory); it is then
/// opened as immutable, which is exact as long as no `-wal` file exists.
pub(super) fn open_sqlite_read_only(path: &Path) -> anyhow::Result<(Connection, i64)> {
    use rusqlite::OpenFlags;
    let version = |c: &Connection| c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0));
    let c = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(sqlite_error)
        .context("cannot open")?;
    // A lab writing the store meanwhile holds its write lock for a run's transaction only.
    c.busy_timeout(Duration::from_secs(30)).map_err(sqlite_error)?;
    let first = match version(&c) {
        Ok(v) => return Ok((c, v)),
        Err(e) => e,
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let cannot_create =
        matches!(first.sqlite_error_code(), Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen));
    if !cannot_create || Path::new(&wal).exists() {
        return Err(sqlite_error(first)).context("cannot read it");
    }
    let uri = format!("file:{}?immutable=1", uri_path(path));
    let c = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite_error)
    .context("cannot open")?;
    let v = version(&c).map_err(sqlite_error).context("cannot read it")?;
    Ok((c, v))
}

/// A path as the path part of a SQLite `file:` URI: `%`, `?` and `#` (and
/// anything not printable ASCII) percent-encoded.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'%' | b'?' | b'#') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What to do when a server refuses the connection.
fn connect_hint(url: &ServerUrl) -> String {
    format!(
        "check the URL, that the server runs and accepts the user, the password (in the URL or {PASSWORD_ENV}), and that database '{}' exists (CREATE DATABASE {})",
        url.db, url.db
    )
}

pub(super) fn open_server(url: &ServerUrl) -> anyhow::Result<Backend> {
    // The environment wins over the URL, as `password_env` does for DSNs:
    // a spec can then name the server without holding its secret.
    let password = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()).or_else(|| url.password.clone());
    match url.dialect {
        Dialect::Postgres => {
            let mut config = postgres::Config::new();
            config
                .user(&url.user)
                .dbname(&url.db)
                .application_name("dbbench lab")
                .connect_timeout(Duration::from_secs(30));
            config.host(url.socket.as_deref().unwrap_or(&url.host)).port(url.port.unwrap_or(5432));
            if let Some(p) = &password {
                config.password(p);
            }
            let client = config
                .connect(postgres::NoTls)
                .map_err(|e| reword(pg_error(e), |m| format!("cannot connect: {m}; {}", connect_hint(url))))?;
            Ok(Backend::Postgres(Box::new(Pg {
                client,
                config,
                statements: HashMap::new(),
                last_used: Instant::now(),
            })))
        }
        _ => {
            let mut b = mysql::OptsBuilder::new()
                .user(Some(&url.user))
                .pass(password)
                .db_name(Some(&url.db))
                .tcp_connect_timeout(Some(Duration::from_secs(30)))
                // A known mode whatever the server's default: strict, so a
                // value that does not fit is an error rather than silently
                // truncated, and no engine substitution behind InnoDB's back.
                .init(vec!["SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"]);
            b = match &url.socket {
                Some(s) => b.socket(Some(s)),
                None => b.ip_or_hostname(Some(&url.host)).tcp_port(url.port.unwrap_or(3306)),
            };
            let opts = mysql::Opts::from(b);
            let conn = mysql::Conn::new(opts.clone())
                .map_err(|e| reword(my_error(e), |m| format!("cannot connect: {m}; {}", connect_hint(url))))?;
            Ok(Backend::Mysql(My { conn, opts, last_used: Instant::now() }))
        }
    }
}
