//! The built-in `oltp_*` workloads as native clients: what
//! `workloads/oltp_common.lua` and its scripts do per client during `run`,
//! in Rust, without a Lua state per client (`--oltp-client=native`, the
//! default).
//!
//! A LuaJIT state holds ~150 KiB per client once the script is loaded
//! (docs/performance.md, "Memory per client"), more than half of
//! sysbench's whole client at thousands of clients. The built-ins' run
//! phase is simple enough to be code instead: the statement groups of
//! `oltp_common.lua` with the same statements, parameters and counters,
//! drawing from the same per-client random stream in the same order, so
//! that a given `--rand-seed` sends the same statements whichever client
//! runs them (`tests/workloads.rs` checks the tables' contents and the
//! counters against the Lua scripts). Errors follow the same path as the
//! Lua API's ([`super::sql::apply_error_policy`]): counted, rolled back or
//! reconnected, restarted with `before_restart_event`'s re-prepare, or
//! fatal with sysbench's `FATAL:` lines.
//!
//! Used only for a built-in resolved as such (not a file of that name, not
//! with an `oltp_common` of the user's on the module path) and only for
//! `run`; `prepare`, `cleanup` and `prewarm` stay in Lua, where a command
//! runs once per thread.

use super::sql::{apply_error_policy, closed_connection, counter_of, func_name, with_codes};
use super::Shared;
use crate::collector::{ClientStats, Counter};
use crate::driver::{Connection, DbError, Driver, Outcome, StmtId, Value};
use crate::options::Options;
use std::sync::Arc;

/// The built-in scripts a native client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    PointSelect,
    ReadOnly,
    ReadWrite,
    WriteOnly,
    UpdateIndex,
    UpdateNonIndex,
    Delete,
    Insert,
}

impl Workload {
    const ALL: [Workload; 8] = [
        Workload::PointSelect,
        Workload::ReadOnly,
        Workload::ReadWrite,
        Workload::WriteOnly,
        Workload::UpdateIndex,
        Workload::UpdateNonIndex,
        Workload::Delete,
        Workload::Insert,
    ];

    /// The script a workload stands for.
    fn script_name(self) -> &'static str {
        match self {
            Workload::PointSelect => "oltp_point_select",
            Workload::ReadOnly => "oltp_read_only",
            Workload::ReadWrite => "oltp_read_write",
            Workload::WriteOnly => "oltp_write_only",
            Workload::UpdateIndex => "oltp_update_index",
            Workload::UpdateNonIndex => "oltp_update_non_index",
            Workload::Delete => "oltp_delete",
            Workload::Insert => "oltp_insert",
        }
    }

    /// The workload of a built-in script's name.
    fn of_name(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.script_name() == name)
    }

    /// (reads, writes) of `prepare_mix`/`execute_mix`, for the mixes.
    fn mix(self) -> Option<(bool, bool)> {
        match self {
            Workload::ReadOnly => Some((true, false)),
            Workload::ReadWrite => Some((true, true)),
            Workload::WriteOnly => Some((false, true)),
            _ => None,
        }
    }
}

/// The statements of `stmt_defs` in oltp_common.lua, in its order.
#[derive(Debug, Clone, Copy)]
enum Kind {
    PointSelects,
    SimpleRanges,
    SumRanges,
    OrderRanges,
    DistinctRanges,
    IndexUpdates,
    NonIndexUpdates,
    Deletes,
    Inserts,
}

const KINDS: usize = 9;

impl Kind {
    /// How many parameters the statement takes.
    fn params(self) -> usize {
        match self {
            Kind::PointSelects | Kind::IndexUpdates | Kind::Deletes => 1,
            Kind::Inserts => 4,
            _ => 2,
        }
    }

    fn sql(self, t: u32) -> String {
        match self {
            Kind::PointSelects => format!("SELECT c FROM sbtest{t} WHERE id=?"),
            Kind::SimpleRanges => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Kind::SumRanges => format!("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Kind::OrderRanges => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"),
            Kind::DistinctRanges => format!("SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"),
            Kind::IndexUpdates => format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"),
            Kind::NonIndexUpdates => format!("UPDATE sbtest{t} SET c=? WHERE id=?"),
            Kind::Deletes => format!("DELETE FROM sbtest{t} WHERE id=?"),
            Kind::Inserts => format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
        }
    }
}

/// oltp_common's `c` (10 groups of 11 digits) and `pad` (5 groups) formats.
const C_FMT: &[u8] = b"###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
const PAD_FMT: &[u8] = b"###########-###########-###########-###########-###########";

/// A run's workload and the options it reads, shared by its clients.
#[derive(Debug, Clone)]
pub struct Builtin {
    pub workload: Workload,
    tables: u32,
    table_size: u32,
    range_size: i64,
    point_selects: u32,
    simple_ranges: u32,
    sum_ranges: u32,
    order_ranges: u32,
    distinct_ranges: u32,
    index_updates: u32,
    non_index_updates: u32,
    delete_inserts: u32,
    range_selects: bool,
    skip_trx: bool,
    auto_inc: bool,
    secondary: bool,
    reconnect: u32,
}

impl Builtin {
    /// The script this client stands for.
    pub fn script_name(&self) -> &'static str {
        self.workload.script_name()
    }

    /// The native client for this run's script, if it has one: a built-in
    /// `oltp_*` script whose `oltp_common` is the built-in too, and
    /// `--oltp-client=native`. `opts` are the options once the main state
    /// has declared and checked the script's (`option_ranges`).
    pub fn for_run(shared: &Shared, opts: &Options) -> Option<Builtin> {
        if opts.str("oltp_client").trim() != "native" {
            return None;
        }
        let workload = Workload::of_name(&shared.script.name)?;
        let builtin_code = crate::workloads::builtin(&shared.script.name)?;
        if shared.script.code != builtin_code || !super::resolves_to_builtin("oltp_common") {
            return None;
        }
        // The script's options are numbers (doubles: `--table-size=1e3` is
        // 1000, which `Options::int` would read as 0), checked by its
        // option_ranges to be whole and in 0..=2^31-1 (tables >= 1). Taken
        // as the script takes them all the same: passed to the uint32
        // arguments of sysbench.rand (truncated), as `for _ = 1, n` bounds
        // (floor), added to an id (floor of the sum, the same for ids >= 1),
        // compared with a count of events (ceil).
        let n = |name: &str| opts.double(name) as u32;
        let mut b = Builtin {
            workload,
            tables: n("tables"),
            table_size: n("table_size"),
            range_size: opts.double("range_size") as i64,
            point_selects: n("point_selects"),
            simple_ranges: n("simple_ranges"),
            sum_ranges: n("sum_ranges"),
            order_ranges: n("order_ranges"),
            distinct_ranges: n("distinct_ranges"),
            index_updates: n("index_updates"),
            non_index_updates: n("non_index_updates"),
            delete_inserts: n("delete_inserts"),
            range_selects: opts.bool("range_selects"),
            skip_trx: opts.bool("skip_trx"),
            auto_inc: opts.bool("auto_inc"),
            secondary: opts.bool("secondary"),
            reconnect: opts.double("reconnect").ceil() as u32,
        };
        // oltp_point_select's prepare_statements.
        if workload == Workload::PointSelect {
            b.point_selects = 1;
        }
        // apply_pgsql_variant (create_secondary matters to prepare only).
        if opts.str("db_driver") == "pgsql" && opts.str("pgsql_variant") == "redshift" {
            b.delete_inserts = 0;
        }
        Some(b)
    }
}

/// Why an event did not complete.
pub enum EventError {
    /// An ignorable error (already counted, rolled back or reconnected):
    /// restart the event; the server's error code, for the re-prepare.
    Restart(i64),
    /// The run fails: the message after "FATAL: `thread_run' function failed: ".
    Fatal(String),
}

/// One native client: its connection and prepared statements, what
/// `thread_init` leaves in a Lua state.
pub struct Client {
    b: Arc<Builtin>,
    driver: Arc<dyn Driver>,
    shared: Arc<Shared>,
    stats: Arc<ClientStats>,
    conn: Option<Box<dyn Connection>>,
    /// `stmt[table][kind]`, table 1 at index 0.
    stmts: Vec<[Option<StmtId>; KINDS]>,
    begin: Option<StmtId>,
    /// BEGIN, or BEGIN IMMEDIATE on SQLite for transactions that write.
    begin_sql: &'static str,
    commit: Option<StmtId>,
    /// The parameters of the next execute (the vector is kept between
    /// statements, and a text parameter's buffer while it stays text).
    params: Vec<Value>,
    events_since_reconnect: u32,
}

/// The text of an SQL error as the Lua API raises it.
fn sql_error_text(e: &DbError) -> String {
    format!("SQL error, errno = {}, state = '{}': {}", e.code, e.sqlstate, e.message)
}

impl Client {
    /// `thread_init`: connects and prepares the workload's statements.
    /// Err: the message after "FATAL: `thread_init' function failed: ",
    /// any `FATAL:` line of the driver printed already.
    pub fn init(b: Arc<Builtin>, shared: Arc<Shared>, stats: Arc<ClientStats>) -> Result<Client, String> {
        let driver = match shared.driver(None) {
            Ok(d) => d,
            Err(msg) => {
                println!("FATAL: {msg}");
                return Err("failed to initialize the DB driver".into());
            }
        };
        let conn = match driver.connect() {
            Ok(mut c) => {
                if shared.server_version.get().is_none() {
                    let _ = shared.server_version.set(c.server_version());
                }
                c
            }
            Err(e) => {
                println!("FATAL: {}", with_codes(&e));
                return Err("connection creation failed".into());
            }
        };
        let tables = b.tables as usize;
        let mut c = Client {
            b,
            driver,
            shared,
            stats,
            conn: Some(conn),
            stmts: vec![[None; KINDS]; tables],
            begin: None,
            begin_sql: "BEGIN",
            commit: None,
            params: Vec::with_capacity(4),
            events_since_reconnect: 0,
        };
        c.prepare_statements()?;
        Ok(c)
    }

    /// The script's `prepare_statements`.
    fn prepare_statements(&mut self) -> Result<(), String> {
        match self.b.workload {
            Workload::PointSelect => self.prepare_for_each_table(Kind::PointSelects),
            Workload::UpdateIndex => self.prepare_for_each_table(Kind::IndexUpdates),
            Workload::UpdateNonIndex => self.prepare_for_each_table(Kind::NonIndexUpdates),
            Workload::Delete => self.prepare_for_each_table(Kind::Deletes),
            Workload::Insert => Ok(()),
            w => {
                let (reads, writes) = w.mix().unwrap_or((false, false));
                self.prepare_mix(reads, writes)
            }
        }
    }

    fn prepare_mix(&mut self, reads: bool, writes: bool) -> Result<(), String> {
        if !self.b.skip_trx {
            // BEGIN IMMEDIATE on SQLite for transactions that write (see
            // prepare_begin in oltp_common.lua).
            self.begin_sql = if writes && self.driver.name() == "sqlite" { "BEGIN IMMEDIATE" } else { "BEGIN" };
            self.begin = Some(self.prepare(self.begin_sql)?);
            self.commit = Some(self.prepare("COMMIT")?);
        }
        let mut kinds = Vec::with_capacity(KINDS);
        if reads {
            kinds.push(Kind::PointSelects);
            if self.b.range_selects {
                kinds.extend([Kind::SimpleRanges, Kind::SumRanges, Kind::OrderRanges, Kind::DistinctRanges]);
            }
        }
        if writes {
            kinds.extend([Kind::IndexUpdates, Kind::NonIndexUpdates, Kind::Deletes, Kind::Inserts]);
        }
        kinds.into_iter().try_for_each(|k| self.prepare_for_each_table(k))
    }

    fn prepare_for_each_table(&mut self, kind: Kind) -> Result<(), String> {
        for t in 1..=self.b.tables {
            let id = self.prepare(&kind.sql(t))?;
            self.stmts[t as usize - 1][kind as usize] = Some(id);
        }
        Ok(())
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, String> {
        let r = self.conn.as_mut().ok_or_else(closed_connection).and_then(|c| c.prepare(sql));
        r.map_err(|e| {
            // An ignorable error here ends the client as in the Lua API,
            // where the restart error escapes thread_init or the hook.
            apply_error_policy(&mut self.conn, &*self.driver, &self.stats, &self.shared, &e, sql, "prepare");
            sql_error_text(&e)
        })
    }

    /// oltp_common's `close_statements`.
    fn close_statements(&mut self) {
        let ids: Vec<StmtId> = self
            .stmts
            .iter_mut()
            .flat_map(|k| k.iter_mut())
            .chain([&mut self.begin, &mut self.commit])
            .filter_map(Option::take)
            .collect();
        if let Some(c) = self.conn.as_mut() {
            for id in ids {
                c.close_statement(id);
            }
        }
    }

    /// `thread_done`.
    pub fn done(mut self) {
        self.close_statements();
        self.conn = None;
    }

    /// `sysbench.hooks.before_restart_event`: statements of a connection
    /// the driver re-established are gone; prepare them again.
    pub fn before_restart(&mut self, code: i64) -> Result<(), String> {
        if matches!(code, 2013 | 2055 | 2006 | 2011) {
            self.close_statements();
            self.prepare_statements()?;
        }
        Ok(())
    }

    /// The script's `event()`, `check_reconnect()` included.
    pub fn event(&mut self) -> Result<(), EventError> {
        match self.b.workload {
            Workload::PointSelect => self.point_selects()?,
            Workload::UpdateIndex => self.index_updates()?,
            Workload::UpdateNonIndex => self.non_index_updates()?,
            Workload::Delete => self.by_id(Kind::Deletes, 1)?,
            Workload::Insert => self.insert()?,
            w => {
                let (reads, writes) = w.mix().unwrap_or((false, false));
                self.mix(reads, writes)?;
            }
        }
        self.check_reconnect()
    }

    fn mix(&mut self, reads: bool, writes: bool) -> Result<(), EventError> {
        if !self.b.skip_trx {
            self.execute_trx(self.begin)?;
        }
        if reads {
            self.point_selects()?;
            if self.b.range_selects {
                self.ranges(Kind::SimpleRanges, self.b.simple_ranges)?;
                self.ranges(Kind::SumRanges, self.b.sum_ranges)?;
                self.ranges(Kind::OrderRanges, self.b.order_ranges)?;
                self.ranges(Kind::DistinctRanges, self.b.distinct_ranges)?;
            }
        }
        if writes {
            self.index_updates()?;
            self.non_index_updates()?;
            self.delete_inserts()?;
        }
        if !self.b.skip_trx {
            self.execute_trx(self.commit)?;
        }
        Ok(())
    }

    fn point_selects(&mut self) -> Result<(), EventError> {
        self.by_id(Kind::PointSelects, self.b.point_selects)
    }

    fn index_updates(&mut self) -> Result<(), EventError> {
        self.by_id(Kind::IndexUpdates, self.b.index_updates)
    }

    /// `count` statements of `kind` on one random table, each with a random id.
    fn by_id(&mut self, kind: Kind, count: u32) -> Result<(), EventError> {
        let t = table_num(&self.b);
        for _ in 0..count {
            self.set_ints(&[i64::from(get_id(&self.b))]);
            self.execute(t, kind)?;
        }
        Ok(())
    }

    /// `execute_range(kind)`: queries over [id, id + range_size - 1].
    fn ranges(&mut self, kind: Kind, count: u32) -> Result<(), EventError> {
        let t = table_num(&self.b);
        for _ in 0..count {
            let id = i64::from(get_id(&self.b));
            self.set_ints(&[id, id + self.b.range_size - 1]);
            self.execute(t, kind)?;
        }
        Ok(())
    }

    fn non_index_updates(&mut self) -> Result<(), EventError> {
        let t = table_num(&self.b);
        for _ in 0..self.b.non_index_updates {
            // c is drawn before the id, as in the script.
            self.params.resize(2, Value::Null);
            set_random_text(&mut self.params[0], C_FMT);
            self.params[1] = Value::Int(i64::from(get_id(&self.b)));
            self.execute(t, Kind::NonIndexUpdates)?;
        }
        Ok(())
    }

    /// DELETE a random row, then INSERT it back under the same id.
    fn delete_inserts(&mut self) -> Result<(), EventError> {
        let t = table_num(&self.b);
        for _ in 0..self.b.delete_inserts {
            let (id, k) = (i64::from(get_id(&self.b)), i64::from(get_id(&self.b)));
            self.params.resize(4, Value::Null);
            self.params[0] = Value::Int(id);
            self.params[1] = Value::Int(k);
            set_random_text(&mut self.params[2], C_FMT);
            set_random_text(&mut self.params[3], PAD_FMT);
            // The DELETE's one parameter is the INSERT's first.
            self.execute(t, Kind::Deletes)?;
            self.execute(t, Kind::Inserts)?;
        }
        Ok(())
    }

    /// oltp_insert's event: one unprepared INSERT of a new row.
    fn insert(&mut self) -> Result<(), EventError> {
        let t = table_num(&self.b);
        let k = get_id(&self.b);
        let c = random_text(C_FMT);
        let pad = random_text(PAD_FMT);
        let dbms = self.driver.name();
        let sql = if self.b.auto_inc && dbms != "mysql" && !(dbms == "sqlite" && self.b.secondary) {
            format!("INSERT INTO sbtest{t} (k, c, pad) VALUES ({k}, '{c}', '{pad}')")
        } else {
            let id = if self.b.auto_inc && dbms == "mysql" { 0 } else { i64::from(crate::rand::unique()) - 2147483648 };
            format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '{c}', '{pad}')")
        };
        let r = self.conn.as_mut().ok_or_else(closed_connection).and_then(|c| c.query(&sql));
        self.outcome(r, || sql, func_name(dbms, false))
    }

    /// `check_reconnect`: a new connection after every `--reconnect` events.
    fn check_reconnect(&mut self) -> Result<(), EventError> {
        if self.b.reconnect == 0 {
            return Ok(());
        }
        self.events_since_reconnect += 1;
        if self.events_since_reconnect < self.b.reconnect {
            return Ok(());
        }
        self.events_since_reconnect = 0;
        self.close_statements();
        match self.conn.as_mut().ok_or_else(closed_connection).and_then(|c| c.reconnect()) {
            Ok(()) => self.stats.inc(Counter::Reconnect),
            Err(e) => return Err(self.failure(e, "<reconnect>", "reconnect")),
        }
        self.prepare_statements().map_err(EventError::Fatal)
    }

    fn set_ints(&mut self, v: &[i64]) {
        self.params.clear();
        self.params.extend(v.iter().map(|&i| Value::Int(i)));
    }

    fn execute_trx(&mut self, stmt: Option<StmtId>) -> Result<(), EventError> {
        let Some(id) = stmt else { return Ok(()) };
        let sql = if Some(id) == self.begin { self.begin_sql } else { "COMMIT" };
        self.execute_id(id, 0, || sql.to_string())
    }

    /// Executes table `t`'s statement of `kind` with the first of
    /// `self.params` it takes.
    fn execute(&mut self, t: u32, kind: Kind) -> Result<(), EventError> {
        match self.stmts[t as usize - 1][kind as usize] {
            Some(id) => self.execute_id(id, kind.params(), || kind.sql(t)),
            // Only after a failed re-prepare, which ended the client.
            None => Err(EventError::Fatal("execute() on a closed statement".into())),
        }
    }

    /// Executes a prepared statement with the first `n` of `self.params`;
    /// `sql` gives its text for an error message.
    fn execute_id(&mut self, id: StmtId, n: usize, sql: impl FnOnce() -> String) -> Result<(), EventError> {
        let params = &self.params[..n];
        let r = self.conn.as_mut().ok_or_else(closed_connection).and_then(|c| c.execute(id, params));
        self.outcome(r, sql, func_name(self.driver.name(), true))
    }

    /// Counts a statement's outcome as the Lua API does and hands its rows
    /// back to the connection, or applies the error policy (`sql` gives the
    /// statement's text for its message, only then).
    fn outcome(
        &mut self,
        r: Result<Outcome, DbError>,
        sql: impl FnOnce() -> String,
        func: &str,
    ) -> Result<(), EventError> {
        match r {
            Ok(o) => {
                self.stats.inc(counter_of(&o));
                if let (Outcome::Rows(rs), Some(c)) = (o, self.conn.as_mut()) {
                    c.recycle(rs);
                }
                Ok(())
            }
            Err(e) => Err(self.failure(e, &sql(), func)),
        }
    }

    fn failure(&mut self, e: DbError, sql: &str, func: &str) -> EventError {
        if apply_error_policy(&mut self.conn, &*self.driver, &self.stats, &self.shared, &e, sql, func) {
            EventError::Restart(e.code)
        } else {
            EventError::Fatal(sql_error_text(&e))
        }
    }
}

/// `get_table_num()`.
fn table_num(b: &Builtin) -> u32 {
    crate::rand::uniform(1, b.tables)
}

/// `get_id()`.
fn get_id(b: &Builtin) -> u32 {
    crate::rand::default(1, b.table_size)
}

/// `sysbench.rand.string(fmt)` (ASCII digits and the format's dashes).
fn random_text(fmt: &[u8]) -> String {
    let mut s = String::with_capacity(fmt.len());
    write_random_text(fmt, &mut s);
    s
}

/// Sets `v` to `sysbench.rand.string(fmt)`, reusing its text buffer.
fn set_random_text(v: &mut Value, fmt: &[u8]) {
    match v {
        Value::Text(s) => write_random_text(fmt, s),
        _ => *v = Value::Text(random_text(fmt)),
    }
}

/// `s` becomes `sysbench.rand.string(fmt)` for a format of at most 128
/// bytes (oltp_common's are 119 and 59).
fn write_random_text(fmt: &[u8], s: &mut String) {
    let mut buf = [0u8; 128];
    let out = &mut buf[..fmt.len()];
    crate::rand::fill_string(fmt, out);
    s.clear();
    s.push_str(std::str::from_utf8(out).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_oltp_commons() {
        let groups = |n: usize| vec!["#".repeat(11); n].join("-");
        assert_eq!(C_FMT, groups(10).as_bytes());
        assert_eq!(PAD_FMT, groups(5).as_bytes());
        let lua = crate::workloads::builtin("oltp_common").unwrap();
        assert!(lua.contains("digit_groups(10), digit_groups(5)"), "oltp_common.lua's formats changed");
    }

    #[test]
    fn statements_are_the_scripts() {
        let lua = crate::workloads::builtin("oltp_common").unwrap();
        for k in [
            Kind::PointSelects,
            Kind::SimpleRanges,
            Kind::SumRanges,
            Kind::OrderRanges,
            Kind::DistinctRanges,
            Kind::IndexUpdates,
            Kind::NonIndexUpdates,
            Kind::Deletes,
            Kind::Inserts,
        ] {
            let sql = k.sql(7).replace("sbtest7", "sbtest%u");
            // The script writes DISTINCT's over two lines ("... ? " .. "ORDER BY c").
            let first = sql.split(" ORDER BY").next().unwrap_or(&sql);
            assert!(lua.contains(first), "{sql}");
        }
    }
}
