//! `sysbench.sql` primitives: driver, connection, statement, parameter and
//! result-set handles as Lua userdata.
//!
//! Every statement is counted here, as sysbench does: a result set (even
//! empty) is a read, affected rows > 0 a write, anything else "other".
//! Errors are classified by the driver; ignorable ones are rolled back (or
//! the connection re-established) and counted *before* Lua sees them, and
//! come back as an error table with `errcode = RESTART_EVENT`; the prelude
//! raises it. Fatal errors print sysbench's `FATAL:` line with the server's
//! code and message.

use super::bulk::{self, SbtestRows, Target};
use super::{Shared, StateCtx};
use crate::collector::{ClientStats, Counter};
use crate::driver::{Connection, DbError, Driver, ErrorAction, Outcome, ResultSet, StmtId, Value as DbValue};
use mlua::{AnyUserData, Lua, Table, UserData, UserDataFields, UserDataMethods, Value, Variadic};
use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// sysbench.error.RESTART_EVENT / sysbench.sql.error.FATAL.
const ERRCODE_RESTART: i64 = 1;
const ERRCODE_FATAL: i64 = 2;

/// The `sysbench._sql` table the prelude wraps.
pub fn raw_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "driver",
        lua.create_function(|lua, name: Option<String>| {
            let ctx = ctx(lua)?;
            match ctx.shared.driver(name.as_deref()) {
                Ok(d) => Ok(DriverUd { driver: d }),
                Err(msg) => {
                    println!("FATAL: {msg}");
                    Err(mlua::Error::runtime("failed to initialize the DB driver"))
                }
            }
        })?,
    )?;
    Ok(t)
}

fn ctx(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, StateCtx>> {
    lua.app_data_ref::<StateCtx>().ok_or_else(|| mlua::Error::runtime("dbbench: state context missing"))
}

struct DriverUd {
    driver: Arc<dyn Driver>,
}

impl UserData for DriverUd {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("name", |_, this, ()| Ok(this.driver.name()));
        m.add_method("connect", |lua, this, ()| {
            let ctx = ctx(lua)?;
            match this.driver.connect() {
                Ok(mut conn) => {
                    if ctx.shared.server_version.get().is_none() {
                        let _ = ctx.shared.server_version.set(conn.server_version());
                    }
                    let rows = Rc::new(RefCell::new(ResultState::default()));
                    let result = lua.create_userdata(ResultUd(rows.clone()))?;
                    // Checked when the driver was created.
                    let bulk_load =
                        ctx.shared.opts.read().map(|o| crate::driver::bulk_load_auto(&o)).unwrap_or(Ok(true));
                    Ok(ConUd(Rc::new(RefCell::new(ConState {
                        bulk_load: bulk_load.unwrap_or(true) && matches!(this.driver.name(), "mysql" | "pgsql"),
                        bulk_target: None,
                        conn: Some(conn),
                        driver: this.driver.clone(),
                        stats: ctx.stats.clone(),
                        shared: ctx.shared.clone(),
                        rows,
                        result,
                        pending_error: None,
                    }))))
                }
                Err(e) => {
                    println!("FATAL: {}", with_codes(&e));
                    Err(mlua::Error::runtime("connection creation failed"))
                }
            }
        });
    }
}

struct ConState {
    conn: Option<Box<dyn Connection>>,
    driver: Arc<dyn Driver>,
    stats: Arc<ClientStats>,
    shared: Arc<Shared>,
    /// The connection's one live result set, refilled by every statement
    /// that returns rows. sysbench has the same rule (the next query frees
    /// the previous result), and reusing the object spares a userdata
    /// allocation and its garbage collection per SELECT.
    rows: Rc<RefCell<ResultState>>,
    /// The Lua object of `rows`, created with the connection.
    result: AnyUserData,
    /// An error of a statement run through the C entry point
    /// ([`dbbench_stmt_execute`]), which cannot build Lua values; the
    /// prelude fetches it with `take_error`.
    pending_error: Option<(DbError, String, &'static str)>,
    /// Bulk inserts may use the driver's bulk load (`--db-bulk-load=auto`
    /// and a driver that has one: MySQL/MariaDB, PostgreSQL).
    bulk_load: bool,
    /// The bulk-load target of the current `bulk_insert_init`, if its
    /// flushes may be loaded (see [`ConState::bulk_begin`]).
    bulk_target: Option<Target>,
}

impl ConState {
    fn conn(&mut self) -> Result<&mut Box<dyn Connection>, DbError> {
        self.conn.as_mut().ok_or_else(closed_connection)
    }

    fn count(&self, o: &Outcome) {
        self.stats.inc(counter_of(o));
    }

    /// Applies the driver's policy to an error; returns the Lua error table.
    fn handle_error(&mut self, lua: &Lua, err: DbError, sql: &str, func: &str) -> mlua::Result<Table> {
        let restart = apply_error_policy(&mut self.conn, &*self.driver, &self.stats, &self.shared, &err, sql, func);
        let t = lua.create_table()?;
        t.set("sql_errno", err.code)?;
        t.set("sql_state", err.sqlstate.as_str())?;
        t.set("sql_errmsg", err.message.as_str())?;
        t.set("query", sql)?;
        t.set("errcode", if restart { ERRCODE_RESTART } else { ERRCODE_FATAL })?;
        Ok(t)
    }

    fn result(
        &mut self,
        lua: &Lua,
        r: Result<Outcome, DbError>,
        sql: &str,
        func: &str,
    ) -> mlua::Result<(Value, Value)> {
        match r {
            Ok(o) => {
                self.count(&o);
                Ok((self.deliver(o), Value::Nil))
            }
            Err(e) => Ok((Value::Nil, Value::Table(self.handle_error(lua, e, sql, func)?))),
        }
    }

    /// A `bulk_insert_init(prefix)`: whether its flushes may go through the
    /// driver's bulk load, one load per flush. On MySQL/MariaDB a flush
    /// may not leave an AUTO_INCREMENT column to the server: every LOAD DATA
    /// reserves auto-increment values in growing batches and the next
    /// statement starts after them, so ids would have gaps where multi-row
    /// INSERTs have none. Returns the flush size in bytes.
    fn bulk_begin(&mut self, prefix: &str) -> usize {
        self.bulk_target = None;
        let why_not = if !self.bulk_load {
            "--db-bulk-load=off or a driver without bulk load"
        } else {
            match bulk::parse_prefix(prefix) {
                None => "not a plain INSERT INTO table(columns) VALUES",
                Some(t) if self.driver.name() == "mysql" && !self.auto_increment_listed(&t) => {
                    "an AUTO_INCREMENT column is not in the column list"
                }
                Some(t) => {
                    self.bulk_target = Some(t);
                    crate::log::debug(&format!(
                        "bulk insert '{prefix}': the driver's bulk load for flushes of plain literals"
                    ));
                    // Inside `run` the counters are sysbench's: one write
                    // per statement it would send, a flush of 512 KiB, so
                    // the loads are cut where its INSERTs are. Elsewhere
                    // (prepare) nothing is counted: bigger loads, fewer commits.
                    if self.shared.command.as_deref() == Some("run") {
                        return bulk::INSERT_BYTES;
                    }
                    return bulk::LOAD_FLUSH_BYTES;
                }
            }
        };
        crate::log::debug(&format!("bulk insert '{prefix}': INSERT statements ({why_not})"));
        bulk::INSERT_BYTES
    }

    /// Whether every AUTO_INCREMENT column of the target's table is in its
    /// column list (false when that cannot be found out).
    fn auto_increment_listed(&mut self, t: &Target) -> bool {
        let (schema, table) = match t.table.split_once('.') {
            Some((s, t)) => (format!("'{s}'"), t),
            None => ("DATABASE()".to_string(), t.table.as_str()),
        };
        let sql = format!(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {schema} AND TABLE_NAME = '{table}' AND EXTRA LIKE '%auto_increment%'"
        );
        match self.conn().and_then(|c| c.query(&sql)) {
            Ok(Outcome::Rows(rs)) => rs.text_rows().iter().all(|r| {
                r.first()
                    .and_then(Option::as_deref)
                    .is_some_and(|name| t.columns.iter().any(|c| c.eq_ignore_ascii_case(name)))
            }),
            _ => false,
        }
    }

    /// One flush of `bulk_insert_next`'s tuples: loaded through the driver
    /// when [`ConState::bulk_begin`] allowed it and every value is a plain
    /// literal, else the INSERT statement `prefix tuples`. Returns the
    /// outcome and the statement text for an error message.
    fn bulk_flush(&mut self, prefix: &str, tuples: &[u8]) -> (Result<Outcome, DbError>, String) {
        if let Some(target) = self.bulk_target.clone() {
            let mut lines = Vec::with_capacity(tuples.len());
            if let Some(rows) = bulk::tuples_to_lines(tuples, target.columns.len(), &mut lines) {
                let what = format!("{prefix} ... ({rows} rows through the driver's bulk load)");
                let mut lines = Some(lines);
                let mut source = |buf: &mut Vec<u8>| {
                    if let Some(mut l) = lines.take() {
                        if buf.is_empty() {
                            std::mem::swap(buf, &mut l);
                        } else {
                            buf.extend_from_slice(&l);
                        }
                    }
                    false
                };
                let r = self.conn().and_then(|c| c.bulk_load(&target.table, &target.column_refs(), &mut source));
                return (r.and_then(|n| loaded_all(&target.table, n, rows)).map(Outcome::Affected), what);
            }
        }
        let sql = format!("{prefix} {}", String::from_utf8_lossy(tuples));
        (self.conn().and_then(|c| c.query(&sql)), sql)
    }

    /// oltp_common's rows (see [`SbtestRows`]) into the table of `prefix`:
    /// one streamed bulk load when the driver has one, else the INSERT
    /// statements the Lua loop would send. Rows count in the progress as
    /// they are sent; the statement counts once per load or INSERT.
    fn bulk_sbtest(&mut self, prefix: &str, mut g: SbtestRows, rows: u64) -> (Result<Outcome, DbError>, String) {
        let target = if self.bulk_load { bulk::parse_prefix(prefix) } else { None };
        if let Some(target) = target {
            crate::log::debug(&format!("{}: {rows} rows in one bulk load", target.table));
            let what = format!("{prefix} ... ({rows} rows through the driver's bulk load)");
            let mut source = |buf: &mut Vec<u8>| {
                let (n, more) = g.push_lines(buf);
                crate::progress::add_rows(n);
                more
            };
            // The rows are ASCII (digits, the formats' bytes): MariaDB/MySQL
            // take them as bytes, without converting from utf8mb4.
            let r = self.conn().and_then(|c| c.bulk_load_ascii(&target.table, &target.column_refs(), &mut source));
            let r = r.and_then(|n| loaded_all(&target.table, n, rows));
            // LOAD DATA reserves auto-increment values in growing batches:
            // bring the table's next id back to max(id) + 1, where the
            // INSERTs of sysbench's prepare leave it.
            let r = match r {
                Ok(n) if self.driver.name() == "mysql" && !target.columns.iter().any(|c| c == "id") => {
                    let sql = format!("ALTER TABLE {} AUTO_INCREMENT = 1", target.table);
                    match self.conn().and_then(|c| c.query(&sql)) {
                        Ok(_) => Ok(n),
                        Err(e) => return (Err(e), sql),
                    }
                }
                r => r,
            };
            return (r.map(Outcome::Affected), what);
        }
        crate::log::debug(&format!("{prefix}: {rows} rows in INSERT statements"));
        let mut tuples = Vec::with_capacity(bulk::INSERT_BYTES);
        let mut next = Vec::with_capacity(512);
        let (mut len, mut n) = (prefix.len() + 1, 0u64);
        loop {
            next.clear();
            let more = g.push_tuple(&mut next).is_some();
            // The prelude's rule: flush before the statement would exceed the limit, and at the end.
            if n > 0 && (!more || len + next.len() + 1 > bulk::INSERT_BYTES) {
                let sql = format!("{prefix} {}", String::from_utf8_lossy(&tuples));
                match self.conn().and_then(|c| c.query(&sql)) {
                    Ok(o) => self.count(&o),
                    Err(e) => return (Err(e), sql),
                }
                crate::progress::add_rows(n);
                tuples.clear();
                (len, n) = (prefix.len() + 1, 0);
            }
            if !more {
                return (Ok(Outcome::Affected(0)), String::new());
            }
            if n > 0 {
                tuples.push(b',');
            }
            tuples.extend_from_slice(&next);
            len += next.len() + 1;
            n += 1;
        }
    }

    /// The Lua value of an outcome: the connection's result object, or nil
    /// for a statement without a result set.
    fn deliver(&mut self, o: Outcome) -> Value {
        if self.store(o) {
            Value::UserData(self.result.clone())
        } else {
            Value::Nil
        }
    }

    /// Puts an outcome's rows into the connection's result set (handing
    /// the previous one back to the driver for reuse); false when the
    /// statement returned no result set.
    fn store(&mut self, o: Outcome) -> bool {
        match o {
            Outcome::Rows(rs) => {
                let old = {
                    let mut r = self.rows.borrow_mut();
                    r.pos = 0;
                    std::mem::replace(&mut r.rs, rs)
                };
                if let Some(c) = self.conn.as_mut() {
                    c.recycle(old);
                }
                true
            }
            Outcome::Affected(_) => false,
        }
    }
}

/// The error of a statement on a connection closed by `disconnect()`.
pub(super) fn closed_connection() -> DbError {
    DbError {
        kind: crate::driver::ErrorKind::ConnectionLost,
        code: 0,
        sqlstate: String::new(),
        message: "the connection was closed by disconnect()".into(),
    }
}

/// The counter a statement's outcome adds to, as sysbench counts: a result
/// set (even empty) is a read, affected rows a write, anything else other.
pub(super) fn counter_of(o: &Outcome) -> Counter {
    match o {
        Outcome::Rows(_) => Counter::Read,
        Outcome::Affected(n) if *n > 0 => Counter::Write,
        Outcome::Affected(_) => Counter::Other,
    }
}

/// What an SQL error does before a script (or a native client) sees it:
/// by the driver's classification, rolled back (restart the event), the
/// connection re-established (restart) or reported with sysbench's `FATAL:`
/// line. True: the event is to be restarted. The first two count as
/// ignored errors; a fatal one is held ([`ClientStats::hold_error`]) and
/// counted only if the script catches it and goes on, as sysbench 1.0.20
/// counts: when it ends the run, sysbench prints no report at all, and the
/// report dbbench still prints names it as the run's end, not among the
/// errors it ignored.
pub(super) fn apply_error_policy(
    conn: &mut Option<Box<dyn Connection>>,
    driver: &dyn Driver,
    stats: &ClientStats,
    shared: &Shared,
    err: &DbError,
    sql: &str,
    func: &str,
) -> bool {
    match driver.classify(err) {
        ErrorAction::Restart => {
            stats.inc(Counter::Error);
            // sysbench does not roll back before restarting (a later
            // BEGIN would then commit half a transaction); we do.
            if let Some(c) = conn.as_mut() {
                let _ = c.query("ROLLBACK");
            }
            true
        }
        // A reconnect that the end of the run interrupted is a restart
        // too: the event loop then sees that the run is over and stops
        // this client, which is not a failure of its own.
        ErrorAction::Reconnect => {
            stats.inc(Counter::Error);
            reconnect_until_deadline(conn, stats, shared)
        }
        ErrorAction::Fatal => {
            stats.hold_error();
            print_fatal(driver.name(), func, err, sql);
            false
        }
    }
}

/// Reconnects, retrying until it works or the run is over: past
/// `--time` (sysbench's retry loop ignores it; the run is then marked as
/// ended by errors) or another client failed. Either way the event is
/// to be restarted (true): the event loop then asks whether the run is
/// over and stops this client, which is no failure of its own. False
/// only for a connection closed by `disconnect()`.
fn reconnect_until_deadline(conn: &mut Option<Box<dyn Connection>>, stats: &ClientStats, shared: &Shared) -> bool {
    let Some(c) = conn.as_mut() else { return false };
    loop {
        match c.reconnect() {
            Ok(()) => {
                stats.inc(Counter::Reconnect);
                return true;
            }
            Err(e) => {
                if shared.past_deadline() {
                    let failed_elsewhere = shared.failed.load(std::sync::atomic::Ordering::Relaxed);
                    let why = format!(
                        "the connection was lost and reconnecting failed until the end of --time ({})",
                        with_codes(&e)
                    );
                    // One line for the run, not one per client.
                    if !failed_elsewhere && shared.ended_by_errors.set(why.clone()).is_ok() {
                        crate::log::fatal(&why);
                    }
                    return true;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// `n` rows loaded of `sent`, or the error saying the load lost rows.
fn loaded_all(table: &str, n: u64, sent: u64) -> Result<u64, DbError> {
    if n == sent {
        return Ok(n);
    }
    Err(DbError {
        kind: crate::driver::ErrorKind::Other,
        code: 0,
        sqlstate: String::new(),
        message: format!("bulk load into {table}: {sent} rows sent, the server loaded {n}"),
    })
}

/// The message followed by the server's error code and SQLSTATE, if any.
pub(super) fn with_codes(e: &DbError) -> String {
    match (e.code, e.sqlstate.is_empty()) {
        (0, true) => e.message.clone(),
        (0, false) => format!("{} (SQLSTATE {})", e.message, e.sqlstate),
        (c, true) => format!("{} (error {c})", e.message),
        (c, false) => format!("{} (error {c}, SQLSTATE {})", e.message, e.sqlstate),
    }
}

fn print_fatal(driver: &str, func: &str, err: &DbError, sql: &str) {
    match driver {
        "mysql" => {
            crate::log::fatal(&format!("{func}() returned error {} ({}) for query '{sql}'", err.code, err.message))
        }
        "pgsql" => {
            crate::log::fatal(&format!("{func}() failed: {} {}", err.sqlstate, err.message));
            crate::log::fatal(&format!("failed query was: {sql}"));
        }
        _ => crate::log::fatal(&format!(
            "{driver} {func} returned error {} ({}) for query '{sql}'",
            err.code, err.message
        )),
    }
}

pub(super) fn func_name(driver: &str, prepared: bool) -> &'static str {
    match (driver, prepared) {
        ("mysql", false) => "mysql_drv_query",
        ("mysql", true) => "mysql_stmt_execute",
        ("pgsql", false) => "PQexec",
        ("pgsql", true) => "PQexecPrepared",
        (_, false) => "query",
        (_, true) => "execute",
    }
}

struct ConUd(Rc<RefCell<ConState>>);

impl UserData for ConUd {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("query", |lua, this, sql: mlua::LuaString| {
            let sql = sql.to_str()?;
            let mut st = this.0.borrow_mut();
            let func = func_name(st.driver.name(), false);
            let r = match st.conn() {
                Ok(c) => c.query(&sql),
                Err(e) => Err(e),
            };
            st.result(lua, r, &sql, func)
        });
        m.add_method("prepare", |lua, this, sql: String| {
            let mut st = this.0.borrow_mut();
            let r = match st.conn() {
                Ok(c) => c.prepare(&sql),
                Err(e) => Err(e),
            };
            match r {
                Ok(id) => {
                    let ud = StmtUd(Rc::new(RefCell::new(StmtState {
                        con: this.0.clone(),
                        id,
                        sql,
                        params: Vec::new(),
                        values: Vec::new(),
                        closed: false,
                    })));
                    Ok((Value::UserData(lua.create_userdata(ud)?), Value::Nil))
                }
                Err(e) => Ok((Value::Nil, Value::Table(st.handle_error(lua, e, &sql, "prepare")?))),
            }
        });
        m.add_method("bulk_begin", |_, this, prefix: String| Ok(this.0.borrow_mut().bulk_begin(&prefix)));
        m.add_method("bulk_insert", |lua, this, (prefix, tuples): (String, mlua::LuaString)| {
            let mut st = this.0.borrow_mut();
            let func = func_name(st.driver.name(), false);
            let (r, sql) = st.bulk_flush(&prefix, &tuples.as_bytes());
            st.result(lua, r, &sql, func)
        });
        m.add_method(
            "bulk_insert_sbtest",
            |lua,
             this,
             (prefix, rows, with_id, table_size, c_fmt, pad_fmt): (
                String,
                u64,
                bool,
                u32,
                mlua::LuaString,
                mlua::LuaString,
            )| {
                let g = SbtestRows::new(rows, with_id, table_size, &c_fmt.as_bytes(), &pad_fmt.as_bytes())
                    .map_err(mlua::Error::runtime)?;
                let mut st = this.0.borrow_mut();
                let func = func_name(st.driver.name(), false);
                let (r, sql) = st.bulk_sbtest(&prefix, g, rows);
                match r {
                    // The INSERT path counted its statements.
                    Ok(Outcome::Affected(0)) => Ok((Value::Nil, Value::Nil)),
                    r => st.result(lua, r, &sql, func),
                }
            },
        );
        m.add_method("more_results", |_, this, ()| Ok(this.0.borrow().conn.as_ref().is_some_and(|c| c.more_results())));
        m.add_method("next_result", |_, this, ()| {
            // Further results of one statement: the statement was counted once.
            let mut st = this.0.borrow_mut();
            Ok(match st.conn.as_mut().and_then(|c| c.next_result()) {
                Some(o) => st.deliver(o),
                None => Value::Nil,
            })
        });
        m.add_method("result_object", |_, this, ()| Ok(this.0.borrow().result.clone()));
        m.add_method("take_error", |lua, this, ()| {
            let mut st = this.0.borrow_mut();
            match st.pending_error.take() {
                Some((e, sql, func)) => Ok(Value::Table(st.handle_error(lua, e, &sql, func)?)),
                None => Ok(Value::Nil),
            }
        });
        m.add_method("disconnect", |_, this, ()| {
            this.0.borrow_mut().conn = None;
            Ok(())
        });
        m.add_method("reconnect", |lua, this, ()| {
            let mut st = this.0.borrow_mut();
            let r = match st.conn() {
                Ok(c) => c.reconnect(),
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => {
                    st.stats.inc(Counter::Reconnect);
                    Ok((Value::Boolean(true), Value::Nil))
                }
                Err(e) => Ok((Value::Nil, Value::Table(st.handle_error(lua, e, "<reconnect>", "reconnect")?))),
            }
        });
    }
}

struct ParamSlot {
    kind: i64,
    max_len: usize,
    value: DbValue,
}

/// sysbench.sql.type codes.
const T_TINYINT: i64 = 1;
const T_BIGINT: i64 = 4;
const T_FLOAT: i64 = 5;
const T_DOUBLE: i64 = 6;
const T_CHAR: i64 = 11;
const T_VARCHAR: i64 = 12;

impl ParamSlot {
    /// `param:set(string)`: truncated to the declared length; numeric
    /// types take the string's number.
    fn set_bytes(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(self.max_len)]).into_owned();
        self.value = match self.kind {
            T_TINYINT..=T_BIGINT => text.trim().parse::<i64>().map(DbValue::Int).unwrap_or(DbValue::Text(text)),
            T_FLOAT | T_DOUBLE => text.trim().parse::<f64>().map(DbValue::Double).unwrap_or(DbValue::Text(text)),
            _ => DbValue::Text(text),
        };
    }
}

struct ParamUd(Rc<RefCell<ParamSlot>>);

impl UserData for ParamUd {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("ptr", |_, this, ()| Ok(mlua::LightUserData(Rc::as_ptr(&this.0) as *mut c_void)));
        m.add_method("set", |_, this, v: Value| {
            let mut p = this.0.borrow_mut();
            p.value = match v {
                Value::Nil => DbValue::Null,
                Value::Integer(i) => to_kind(p.kind, i as f64),
                Value::Number(n) => to_kind(p.kind, n),
                Value::Boolean(b) => DbValue::Int(b as i64),
                Value::String(s) => {
                    p.set_bytes(&s.as_bytes());
                    return Ok(());
                }
                other => return Err(mlua::Error::runtime(format!("cannot bind a {} value", other.type_name()))),
            };
            Ok(())
        });
        m.add_method("set_rand_str", |_, this, fmt: mlua::LuaString| {
            let mut p = this.0.borrow_mut();
            let mut s = crate::rand::string(&fmt.as_bytes());
            s.truncate(p.max_len);
            p.value = DbValue::Text(String::from_utf8_lossy(&s).into_owned());
            Ok(())
        });
    }
}

fn to_kind(kind: i64, n: f64) -> DbValue {
    match kind {
        T_FLOAT | T_DOUBLE => DbValue::Double(n),
        T_CHAR | T_VARCHAR => DbValue::Text(super::format_lua_number(n)),
        _ => DbValue::Int(n as i64),
    }
}

struct StmtState {
    con: Rc<RefCell<ConState>>,
    id: StmtId,
    sql: String,
    params: Vec<Rc<RefCell<ParamSlot>>>,
    /// The parameters' values for one execute (kept to reuse its buffer).
    values: Vec<DbValue>,
    closed: bool,
}

impl StmtState {
    /// Executes with the bound parameters' current values and counts the
    /// statement. Ok(true): rows are in the connection's result set.
    fn execute(&mut self) -> Result<bool, (DbError, &'static str)> {
        if self.closed {
            let e = DbError {
                kind: crate::driver::ErrorKind::Other,
                code: 0,
                sqlstate: String::new(),
                message: "execute() on a closed statement".into(),
            };
            return Err((e, "execute"));
        }
        // Copied in place: the steady state allocates nothing, text included.
        self.values.resize(self.params.len(), DbValue::Null);
        for (v, p) in self.values.iter_mut().zip(&self.params) {
            v.clone_from(&p.borrow().value);
        }
        let mut con = self.con.borrow_mut();
        let r = match con.conn() {
            Ok(c) => c.execute(self.id, &self.values),
            Err(e) => Err(e),
        };
        match r {
            Ok(o) => {
                con.count(&o);
                Ok(con.store(o))
            }
            Err(e) => Err((e, func_name(con.driver.name(), true))),
        }
    }
}

struct StmtUd(Rc<RefCell<StmtState>>);

impl UserData for StmtUd {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("ptr", |_, this, ()| Ok(mlua::LightUserData(Rc::as_ptr(&this.0) as *mut c_void)));
        m.add_method("bind_create", |_, _this, (kind, max_len): (i64, Option<usize>)| {
            if !(T_TINYINT..=T_VARCHAR).contains(&kind) || (7..=10).contains(&kind) {
                return Err(mlua::Error::runtime(format!("Unsupported argument type: {kind}")));
            }
            let max_len = if kind == T_CHAR || kind == T_VARCHAR { max_len.unwrap_or(0) } else { usize::MAX };
            Ok(ParamUd(Rc::new(RefCell::new(ParamSlot { kind, max_len, value: DbValue::Null }))))
        });
        m.add_method("bind_param", |_, this, params: Variadic<AnyUserData>| {
            let mut st = this.0.borrow_mut();
            st.params.clear();
            for p in params.iter() {
                let slot = p.borrow::<ParamUd>()?;
                st.params.push(slot.0.clone());
            }
            Ok(())
        });
        m.add_method("close", |_, this, ()| {
            let mut st = this.0.borrow_mut();
            if !st.closed {
                st.closed = true;
                let id = st.id;
                if let Some(c) = st.con.borrow_mut().conn.as_mut() {
                    c.close_statement(id);
                }
            }
            Ok(())
        });
    }
}

/// `int dbbench_stmt_execute(void *stmt)`: the prelude's fast path for
/// `stmt:execute()`, called through `ffi` so that LuaJIT keeps the
/// script's loop compiled. Returns 1 when the statement returned rows (in
/// the connection's result object), 0 when it did not, -1 on an error (kept
/// for `con:take_error()`), 2 when the statement or its connection is
/// already in use (only possible if a finalizer re-entered; the prelude
/// raises a Lua error).
///
/// # Safety
/// `stmt` is the `ptr()` of a live statement handle, which the prelude's
/// statement object keeps alive. No Lua API is called from here.
#[no_mangle]
pub unsafe extern "C" fn dbbench_stmt_execute(stmt: *const c_void) -> std::ffi::c_int {
    // SAFETY: see above; the handle owns an Rc clone of this cell.
    let cell = unsafe { &*stmt.cast::<RefCell<StmtState>>() };
    let Ok(mut st) = cell.try_borrow_mut() else { return 2 };
    if st.con.try_borrow_mut().is_err() {
        return 2;
    }
    match st.execute() {
        Ok(true) => 1,
        Ok(false) => 0,
        Err((e, func)) => {
            let sql = st.sql.clone();
            // Free again: execute() released it.
            st.con.borrow_mut().pending_error = Some((e, sql, func));
            -1
        }
    }
}

/// Borrows a parameter slot from its `ptr()` for the setters below.
///
/// # Safety
/// `param` is the `ptr()` of a live parameter handle (kept alive by the
/// prelude's parameter object).
unsafe fn with_param(param: *const c_void, f: impl FnOnce(&mut ParamSlot)) {
    // SAFETY: see above.
    if let Ok(mut p) = unsafe { &*param.cast::<RefCell<ParamSlot>>() }.try_borrow_mut() {
        f(&mut p);
    }
}

/// `void dbbench_param_set_number(void *param, double v)`: `param:set(n)`.
///
/// # Safety
/// As [`with_param`].
#[no_mangle]
pub unsafe extern "C" fn dbbench_param_set_number(param: *const c_void, v: f64) {
    // SAFETY: the caller's contract is with_param's (a live parameter from the prelude).
    unsafe { with_param(param, |p| p.value = to_kind(p.kind, v)) }
}

/// `void dbbench_param_set_int64(void *param, int64_t v)`: `param:set(n)`
/// for a 64-bit integer cdata (e.g. `sysbench.rand.uniform_uint64()`).
///
/// # Safety
/// As [`with_param`].
#[no_mangle]
pub unsafe extern "C" fn dbbench_param_set_int64(param: *const c_void, v: i64) {
    // SAFETY: as dbbench_param_set_number.
    unsafe {
        with_param(param, |p| {
            p.value = match p.kind {
                T_FLOAT | T_DOUBLE => DbValue::Double(v as f64),
                T_CHAR | T_VARCHAR => DbValue::Text(v.to_string()),
                _ => DbValue::Int(v),
            }
        })
    }
}

/// `void dbbench_param_set_string(void *param, const char *s, size_t len)`:
/// `param:set(s)`.
///
/// # Safety
/// As [`with_param`]; `s` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn dbbench_param_set_string(param: *const c_void, s: *const u8, len: usize) {
    if s.is_null() {
        return;
    }
    // SAFETY: the caller passes a Lua string and its length.
    let bytes = unsafe { std::slice::from_raw_parts(s, len) };
    // SAFETY: as dbbench_param_set_number.
    unsafe { with_param(param, |p| p.set_bytes(bytes)) }
}

/// `void dbbench_param_set_null(void *param)`: `param:set(nil)`.
///
/// # Safety
/// As [`with_param`].
#[no_mangle]
pub unsafe extern "C" fn dbbench_param_set_null(param: *const c_void) {
    // SAFETY: as dbbench_param_set_number.
    unsafe { with_param(param, |p| p.value = DbValue::Null) }
}

/// A result set and the position of the next `fetch_row`.
#[derive(Default)]
struct ResultState {
    rs: ResultSet,
    pos: usize,
}

struct ResultUd(Rc<RefCell<ResultState>>);

impl UserData for ResultUd {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("nrows", |_, this| Ok(this.0.borrow().rs.nrows));
        f.add_field_method_get("nfields", |_, this| Ok(this.0.borrow().rs.columns));
    }
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("fetch_row", |lua, this, ()| {
            let mut r = this.0.borrow_mut();
            let pos = r.pos;
            let Some(row) = r.rs.row(pos) else { return Ok(Value::Nil) };
            let t = lua.create_table_with_capacity(row.len(), 0)?;
            for (i, cell) in row.enumerate() {
                if let Some(bytes) = cell {
                    t.raw_set(i + 1, lua.create_string(bytes)?)?;
                }
            }
            r.pos += 1;
            Ok(Value::Table(t))
        });
        m.add_method("free", |_, this, ()| {
            *this.0.borrow_mut() = ResultState::default();
            Ok(())
        });
    }
}
