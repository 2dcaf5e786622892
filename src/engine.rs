//! The load engine: commands, clients, limits, `--rate`, reporting.
//!
//! # Client model
//! Each of `--threads` clients has its own LuaJIT state and its own
//! connection, as in sysbench, and runs [`client`] either on an OS thread of
//! its own (the default) or as a coroutine on one of `--client-threads`
//! workers (`crate::sched`); the states below are the same in both. A
//! client of a built-in `oltp_*` workload has no Lua state
//! (`--oltp-client=native`): [`native_client`] runs the same states with
//! the script's functions in `script::native`. Waits
//! that would block a worker (barrier, arrival queue) poll and suspend
//! instead when the client is multiplexed. A client moves through these states
//! (pgbench-style; the counters each state touches are in `stats`):
//!
//! ```text
//! Init ── state built, body run, thread_init() ──► Ready ── barrier ──► ChooseEvent
//! ChooseEvent ── limits say stop ─────────────────────────────────────► Done
//! ChooseEvent ── (--rate) wait for the next arrival ──► Throttle ──► InEvent
//! InEvent ── event() ok ── record latency, EVENT+1 ──────────────────► ChooseEvent
//! InEvent ── ignorable SQL error (ERROR+1, rollback/reconnect) ── before_restart_event ──► InEvent
//! InEvent ── any other error ── global failure flag ─────────────────► Aborted
//! Done ── thread_done() ──► closed
//! ```
//! The loop through these states is Lua (the script's `thread_run`, or the
//! prelude's `sysbench._thread_run`); the transitions are the C functions
//! [`script_more_events`] (ChooseEvent, Throttle), [`script_event_start`]
//! and [`script_event_stop`] (InEvent, recording), which scripts reach as
//! `ffi.C.sb_more_events` & co. (a native client's loop, [`native_events`],
//! calls the same `Control` steps directly).
//! The main thread owns the [`Collector`]: it releases the barrier, ends the
//! warmup (discarding everything recorded during it), prints interval lines
//! and checkpoints, enforces `--forced-shutdown`, and prints the final report.
//!
//! # `--rate`
//! A generator thread draws a Poisson arrival schedule and queues each
//! arrival's *intended* start time. A free client takes the oldest arrival;
//! its latency is measured from that intended time (coordinated-omission
//! correct) and its service time from when it actually started. The queue
//! never aborts the run: its length is reported, and arrivals still queued
//! at the end are counted and reported as not started.

use crate::collector::{ClientStats, Collector, Counter, Grid, Period};
use crate::exit::Exit;
use crate::options::Options;
use crate::output::{self, Format, IntervalRow, RateSummary, Summary};
use crate::rand::{self, Phase};
use crate::sched;
use crate::script::native::{Builtin, Client as NativeClient, EventError};
use crate::script::{self, Shared};
use mlua::{Lua, Value};
use std::collections::VecDeque;
use std::ffi::c_int;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// Settings of a `run`, validated from the options.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// `--threads`.
    pub threads: u32,
    /// `--time` (0 = no limit).
    pub time: Duration,
    /// `--events` (0 = no limit).
    pub events: u64,
    /// `--warmup-time`.
    pub warmup: Duration,
    /// `--rate` (events/s, 0 = closed loop).
    pub rate: f64,
    /// `--report-interval` (0 = none).
    pub report_interval: Duration,
    /// `--report-checkpoints`, seconds from the start.
    pub checkpoints: Vec<u64>,
    /// Forced shutdown this long after `--time` (None = off).
    pub forced_grace: Option<Duration>,
    /// `--percentile` values (empty = disabled).
    pub percentiles: Vec<f64>,
    /// `--histogram`.
    pub histogram: bool,
    /// `--thread-init-timeout`.
    pub init_timeout: Duration,
    /// `--thread-stack-size` (bytes).
    pub stack_size: usize,
    /// `--format`.
    pub format: Format,
    /// Most arrivals that may wait under `--rate` before new ones are dropped.
    pub rate_backlog: usize,
    /// `--client-threads` resolved: OS threads the clients are multiplexed
    /// over, or 0 for one OS thread per client.
    pub client_threads: u32,
    /// `--client-threads=auto`: the model is chosen per run by
    /// [`workers_for_run`] (`client_threads` is then 0).
    pub client_threads_auto: bool,
    /// `--client-threads=N` asked for workers the driver cannot use (warned
    /// once, by `dispatch`: the configuration is built twice).
    pub client_threads_refused: Option<u32>,
    /// `--debug` (the header says so; `DEBUG:` lines print).
    pub debug: bool,
    /// `--validate` (only announced: no built-in workload has checks).
    pub validate: bool,
    /// `--metrics-listen`: where to serve live metrics (see `crate::metrics`).
    pub metrics_listen: Option<String>,
    /// `--shard=I/N`: this process runs shard I of the run (`threads`,
    /// `events` and `rate` above are then its shares; see `crate::shard`).
    pub shard: Option<crate::shard::Shard>,
}

/// Sets the message level from `--verbosity` and `--debug` (see
/// `crate::log`); first, so that every later line obeys it.
pub fn set_verbosity(opts: &Options) -> Result<(), String> {
    let v = opts.int("verbosity");
    if !(0..=crate::log::MAX_VERBOSITY).contains(&v) {
        return Err(format!(
            "FATAL: Invalid value for --verbosity: {v} (0 fatal, 1 alert, 2 warning, 3 notice, 4 info, 5 debug)"
        ));
    }
    crate::log::set_verbosity(if opts.bool("debug") { crate::log::MAX_VERBOSITY as u8 } else { v as u8 });
    crate::log::set_to_stderr(Format::parse(opts.str("format")).is_some_and(|f| !f.is_text()));
    Ok(())
}

/// Exit status of a command.
pub type Status = ExitCode;

fn fail(msg: &str) -> Status {
    println!("{msg}");
    Exit::Error.into()
}

/// Runs `command` (or just the body, without one) for the main state.
pub fn dispatch(shared: &Arc<Shared>, main: &Lua, cfg: &RunConfig) -> Status {
    let Some(cmd) = shared.command.clone() else { return Exit::Ok.into() };
    if cfg.shard.is_some() && cmd != "run" {
        return fail(&format!(
            "FATAL: --shard splits a run; '{cmd}' runs once, unsharded (drop --shard, --shard-result and --start-at)"
        ));
    }
    if let Some(n) = cfg.client_threads_refused {
        crate::log::warning(&format!(
            "--client-threads={n} multiplexes only the native clients (MySQL: a plain connection, --mysql-client=native; \
             PostgreSQL: a unix socket or --pgsql-sslmode=disable, --pgsql-client=native); running one thread per client"
        ));
    }
    let _progress = (cmd == "prepare").then(|| crate::progress::Progress::start(expected_rows(shared)));
    if let Some((f, parallel)) = script::custom_command(main, &cmd) {
        return if parallel && cfg.threads > 1 {
            parallel_command(shared, &cmd, cfg)
        } else {
            match script::call(main, &f, ()) {
                Ok(Value::Boolean(false)) => Exit::Error.into(),
                Ok(_) => Exit::Ok.into(),
                Err(e) => fail(&format!("FATAL: `sysbench.cmdline.call_command' function failed: {e}")),
            }
        };
    }
    match cmd.as_str() {
        "prepare" | "cleanup" => match script::global_fn(main, &cmd) {
            Some(f) => match script::call(main, &f, ()) {
                Ok(Value::Boolean(false)) => Exit::Error.into(),
                Ok(_) => Exit::Ok.into(),
                Err(e) => fail(&format!("FATAL: `{cmd}' function failed: {e}")),
            },
            None => {
                eprintln!("'{}' test does not implement the '{cmd}' command.", shared.script.name);
                Exit::Error.into()
            }
        },
        "help" => help(shared, main),
        "run" => run(shared, main, cfg),
        other => {
            eprintln!("Unknown command: {other}");
            Exit::Error.into()
        }
    }
}

/// Rows a `prepare` will write, when the workload declares the usual
/// `--tables` and `--table_size` options.
fn expected_rows(shared: &Shared) -> Option<u64> {
    let opts = shared.opts.read().ok()?;
    opts.spec("table_size")?;
    let tables = if opts.spec("tables").is_some() { opts.int("tables").max(1) } else { 1 };
    Some((opts.int("table_size").max(0) * tables) as u64)
}

fn help(shared: &Arc<Shared>, main: &Lua) -> Status {
    if let Some(f) = script::global_fn(main, "help") {
        return match script::call(main, &f, ()) {
            Ok(_) => Exit::Ok.into(),
            Err(e) => fail(&format!("FATAL: `help' function failed: {e}")),
        };
    }
    match script::declared_options(main) {
        Ok(Some(specs)) => {
            println!("{} options:", shared.script.name);
            let mut specs = specs;
            specs.sort_by(|a, b| a.name.cmp(&b.name));
            print!("{}", crate::cli::format_option_list(&specs));
            Exit::Ok.into()
        }
        _ => {
            eprintln!("'{}' test does not implement the 'help' command.", shared.script.name);
            Exit::Error.into()
        }
    }
}

/// Builds a worker/command state with options exported.
fn client_state(shared: &Arc<Shared>, phase: Phase, tid: u32, stats: Arc<ClientStats>) -> Result<Lua, String> {
    let lua = script::new_state(shared, phase, tid, stats)?;
    let opts = shared.opts.read().map_err(|_| "options lock poisoned".to_string())?;
    script::export(&lua, &opts, shared.legacy.load(Ordering::Relaxed)).map_err(|e| script::error_message(&e))?;
    Ok(lua)
}

fn parallel_command(shared: &Arc<Shared>, cmd: &str, cfg: &RunConfig) -> Status {
    if crate::log::enabled(crate::log::Level::Notice) {
        println!("Initializing worker threads...");
        println!();
    }
    let failed = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..cfg.threads)
        .map(|tid| {
            let shared = shared.clone();
            let cmd = cmd.to_string();
            let failed = failed.clone();
            thread::Builder::new().stack_size(cfg.stack_size).name(format!("command-{tid}")).spawn(move || {
                let r = client_state(&shared, Phase::Command, tid, Arc::new(ClientStats::default())).and_then(|lua| {
                    let (f, _) =
                        script::custom_command(&lua, &cmd).ok_or_else(|| format!("command '{cmd}' vanished"))?;
                    match script::call(&lua, &f, ()) {
                        Ok(Value::Boolean(false)) => Err(String::new()),
                        Ok(_) => Ok(()),
                        Err(e) => Err(format!("FATAL: `sysbench.cmdline.call_command' function failed: {e}")),
                    }
                });
                if let Err(msg) = r {
                    if !msg.is_empty() {
                        println!("{msg}");
                    }
                    failed.store(true, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for h in handles {
        match h {
            Ok(h) => {
                let _ = h.join();
            }
            Err(e) => {
                println!("FATAL: cannot start a thread: {e}");
                failed.store(true, Ordering::Relaxed);
            }
        }
    }
    // sysbench exits 0 here even when threads failed; we do not.
    if failed.load(Ordering::Relaxed) {
        Exit::Error.into()
    } else {
        Exit::Ok.into()
    }
}

/// Open-loop arrival queue for `--rate`.
struct RateQueue {
    /// Intended start times of arrivals not yet taken, ns of [`crate::clock`].
    queue: Mutex<VecDeque<u64>>,
    ready: Condvar,
    dropped: AtomicU64,
    generated: AtomicU64,
    /// (boundary, queue length, clients in an event) as the generator saw
    /// them at its first wake-up after each boundary of the grid (within
    /// 10 ms unless the host starves it): what an interval line under
    /// `--rate` prints, whenever the line itself is printed.
    at_boundaries: Mutex<VecDeque<(u64, u64, u64)>>,
}

/// What the clients share during `run`.
struct Control {
    shared: Arc<Shared>,
    events_limit: u64,
    events_started: AtomicU64,
    /// End of the warmup, set once before the clients start. Read on every
    /// event, so not behind a lock: a lock's counter would bounce between
    /// all clients' CPUs.
    warmup_end_ns: OnceLock<u64>,
    /// The periods events are counted in; set once before the clients start.
    grid: OnceLock<Grid>,
    rate: Option<RateQueue>,
    /// Set (and `done` notified) by the last client to finish: one lock
    /// and wake-up per run, not per client, so that thousands of clients
    /// ending together do not queue the reporting thread behind them.
    all_done: Mutex<bool>,
    done: Condvar,
    ready: Mutex<(u32, u32)>, // (ready, failed)
    ready_cv: Condvar,
    go: Mutex<Option<bool>>, // Some(true) = start, Some(false) = abort
    go_cv: Condvar,
    threads_running: AtomicU32,
    /// Whether `--rate` is on (latency then starts at the arrival).
    rated: bool,
    /// Every client's statistics, by tid less `first_tid`, for the C entry points.
    stats: Vec<Arc<ClientStats>>,
    /// The global id of this process's first client (`--shard`; else 0):
    /// client `tid` is `stats[tid - first_tid]`.
    first_tid: u32,
    /// Every client's event in progress, by tid, for scripts that run the
    /// event loop themselves (see [`script_more_events`]).
    clocks: Vec<EventClock>,
    /// The built-in workload the clients run natively, if they do
    /// (`--oltp-client=native` and a built-in `oltp_*` script).
    builtin: Option<Arc<Builtin>>,
}

/// The event a client started through `sb_more_events`/`sb_event_start`:
/// its intended and actual start, in ns of [`crate::clock`]. Atomics
/// because a script may name any tid; only the client itself writes its own.
#[derive(Default)]
#[repr(align(64))]
struct EventClock {
    intended_ns: AtomicU64,
    start_ns: AtomicU64,
}

impl Control {
    /// The next event's intended start (ns of [`crate::clock`]), or None
    /// when the client must stop. `now`: the current time, which the caller
    /// has just read (closed loop, it is the intended start).
    fn next_event(&self, now: u64) -> Option<u64> {
        if self.shared.past_deadline_ns(now) {
            return None;
        }
        if self.events_limit > 0 {
            let in_warmup = self.warmup_end_ns.get().is_some_and(|w| now < *w);
            if !in_warmup && self.events_started.fetch_add(1, Ordering::Relaxed) >= self.events_limit {
                return None;
            }
        }
        let Some(rq) = &self.rate else { return Some(now) };
        let mut q = rq.queue.lock().ok()?;
        loop {
            if let Some(t) = q.pop_front() {
                return Some(t);
            }
            if self.shared.past_deadline() {
                return None;
            }
            if sched::in_client() {
                // A multiplexed client must not block its worker on the
                // condition variable: poll the queue instead.
                drop(q);
                sched::sleep(Duration::from_micros(200));
                q = rq.queue.lock().ok()?;
            } else {
                q = rq.ready.wait_timeout(q, Duration::from_millis(20)).ok()?.0;
            }
        }
    }

    /// Waits at the start barrier; true = go, false = abort.
    fn wait_go(&self) -> bool {
        let mut go = self.go.lock().unwrap_or_else(|p| p.into_inner());
        while go.is_none() {
            if sched::in_client() {
                drop(go);
                sched::sleep(Duration::from_millis(1));
                go = self.go.lock().unwrap_or_else(|p| p.into_inner());
            } else {
                go = self.go_cv.wait(go).unwrap_or_else(|p| p.into_inner());
            }
        }
        *go == Some(true)
    }

    /// Records client `tid`'s event as finished now: its latency from
    /// `intended` and, under `--rate`, its service time from `start` (ns of
    /// [`crate::clock`]; the end is read under the client's lock: see
    /// [`ClientStats::record_event`]).
    fn finish_event(&self, stats: &ClientStats, intended: u64, start: u64) {
        if let Some(grid) = self.grid.get() {
            stats.record_event(grid, intended, self.rated.then_some(start));
        }
    }

    /// A client's `thread_init` is over: counted as ready (or failed, its
    /// message printed and kept in `out`), then the client waits at the
    /// barrier for the main thread's go. None: the client does not run
    /// (its init failed, or the run was aborted).
    fn ready_then_go<T>(&self, init: Result<T, String>, out: &mut ClientOutcome) -> Option<T> {
        {
            let mut r = self.ready.lock().unwrap_or_else(|p| p.into_inner());
            r.0 += 1;
            if init.is_err() {
                r.1 += 1;
            }
            self.ready_cv.notify_all();
        }
        let ready = match init {
            Ok(v) => v,
            Err(msg) => {
                println!("{msg}");
                out.init_error = Some(msg);
                return None;
            }
        };
        self.wait_go().then_some(ready)
    }

    /// Bookkeeping when a client has finished (whatever the model).
    fn client_finished(&self) {
        if self.threads_running.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.all_done.lock().unwrap_or_else(|p| p.into_inner()) = true;
            self.done.notify_all();
        }
    }
}

/// The run whose clients the C entry points (`sb_more_events` & co) address.
/// Set once by [`run`]; a process runs one benchmark.
static SCRIPT_RUN: OnceLock<Arc<Control>> = OnceLock::new();

/// Client `tid`'s slot of the current run, if `tid` names one.
fn script_client(tid: i32) -> Option<(&'static Control, usize)> {
    let ctl = SCRIPT_RUN.get()?;
    let i = u32::try_from(tid).ok()?.checked_sub(ctl.first_tid)? as usize;
    let i = Some(i).filter(|&i| i < ctl.clocks.len())?;
    Some((ctl, i))
}

/// `sb_more_events(tid)`: whether client `tid` may start another event
/// (`--time`, `--events`, a failure elsewhere; under `--rate` it waits for
/// the next arrival). Remembers the event's intended start.
pub fn script_more_events(tid: i32) -> bool {
    script_client(tid).is_some_and(|(ctl, i)| ctl.more_events(i))
}

/// `sb_event_start(tid)`: client `tid` starts its event.
pub fn script_event_start(tid: i32) {
    if let Some((ctl, i)) = script_client(tid) {
        ctl.event_start(i);
    }
}

/// `sb_event_stop(tid)`: client `tid`'s event is done.
pub fn script_event_stop(tid: i32) {
    if let Some((ctl, i)) = script_client(tid) {
        ctl.event_stop(i);
    }
}

/// `dbbench_event_restart(tid)`: client `tid`'s event failed with an
/// ignored error; whether to run it again (see [`Control::event_restart`]).
pub fn script_event_restart(tid: i32) -> bool {
    script_client(tid).is_some_and(|(ctl, i)| ctl.event_restart(i))
}

/// The event loop's steps for client `i` (tid less `first_tid`): what a
/// Lua client reaches through the C entry points above and a native client
/// calls directly.
impl Control {
    /// Whether client `i` may start another event; remembers its intended start.
    fn more_events(&self, i: usize) -> bool {
        match self.next_event(crate::clock::now_ns()) {
            Some(intended) => {
                self.clocks[i].intended_ns.store(intended, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Client `i` starts its event. Closed loop, it starts when
    /// [`Control::more_events`] let it (the clock read there, not twice);
    /// under `--rate` the client may have waited for the arrival since, so
    /// the actual start is now.
    fn event_start(&self, i: usize) {
        let clock = &self.clocks[i];
        let start = if self.rated { crate::clock::now_ns() } else { clock.intended_ns.load(Ordering::Relaxed) };
        clock.start_ns.store(start, Ordering::Relaxed);
        self.stats[i].mark_event_start();
        self.stats[i].in_event.store(true, Ordering::Relaxed);
    }

    /// Client `i`'s event is done: counted, latency (and under `--rate`
    /// service time) recorded.
    fn event_stop(&self, i: usize) {
        let clock = &self.clocks[i];
        let (intended, start) = (clock.intended_ns.load(Ordering::Relaxed), clock.start_ns.load(Ordering::Relaxed));
        self.stats[i].count_held_errors();
        self.finish_event(&self.stats[i], intended, start);
        self.stats[i].in_event.store(false, Ordering::Relaxed);
    }

    /// Client `i`'s event failed with an ignored error; whether to run it
    /// again (counted as a restart) or to stop because the run is over
    /// (`--time` has passed or another client failed). sysbench's loop
    /// restarts without asking, so a statement that always fails kept a run
    /// going past `--time` for ever. `--events` counts an event once however
    /// often it restarts, as in sysbench, so it cannot end this loop.
    fn event_restart(&self, i: usize) -> bool {
        if self.shared.past_deadline_ns(crate::clock::now_ns()) {
            return false;
        }
        self.stats[i].count_held_errors();
        self.stats[i].inc(Counter::Restart);
        self.stats[i].mark_event_start();
        true
    }
}

/// `sb_counter_inc(tid, kind)`: one more of a counter for client `tid`.
pub fn script_counter_inc(tid: i32, c: Counter) {
    if let Some((ctl, i)) = script_client(tid) {
        ctl.stats[i].inc(c);
    }
}

// ------------------------------------------------------------------ C entry points
// What scripts call through LuaJIT's `ffi.C` (declared in script/ffi.rs's
// CDEF; exported by -rdynamic, build.rs). The engine owns them, as
// sysbench's engine does, so that the script layer never calls up into the
// engine. Nothing here may unwind into LuaJIT.

/// sysbench's `sb_counter_type` values, mapped to our counters.
fn counter(kind: c_int) -> Option<Counter> {
    Some(match kind {
        0 => Counter::Other,
        1 => Counter::Read,
        2 => Counter::Write,
        3 => Counter::Event,
        4 => Counter::Error,
        5 => Counter::Reconnect,
        _ => return None,
    })
}

/// `bool sb_more_events(int)`: whether client `tid` may start another
/// event (the run's limits, `--rate` arrivals); false outside `run`.
#[no_mangle]
pub extern "C" fn sb_more_events(tid: c_int) -> bool {
    script_more_events(tid)
}

/// `void sb_event_start(int)`: client `tid` starts the event
/// [`sb_more_events`] allowed.
#[no_mangle]
pub extern "C" fn sb_event_start(tid: c_int) {
    script_event_start(tid)
}

/// `void sb_event_stop(int)`: client `tid` finished its event; counts it
/// and records its latency.
#[no_mangle]
pub extern "C" fn sb_event_stop(tid: c_int) {
    script_event_stop(tid)
}

/// `bool dbbench_event_restart(int)`: client `tid`'s event failed with an
/// ignored error; true to run it again (counted as a restart), false when
/// the run is over (`--time`, a failure elsewhere). The default event loop
/// in `prelude.lua` asks before every restart.
#[no_mangle]
pub extern "C" fn dbbench_event_restart(tid: c_int) -> bool {
    script_event_restart(tid)
}

/// `void sb_counter_inc(int, sb_counter_type)`: adds one to a counter of
/// client `tid` (e.g. `SB_CNT_ERROR` for an error the script handled).
/// Counting `SB_CNT_TRX` adds an event without a latency, as in sysbench.
/// Unknown kinds and calls outside `run` are ignored.
#[no_mangle]
pub extern "C" fn sb_counter_inc(tid: c_int, kind: c_int) {
    if let Some(c) = counter(kind) {
        script_counter_inc(tid, c)
    }
}

struct ClientOutcome {
    init_error: Option<String>,
    run_error: Option<String>,
    finished: Option<Instant>,
}

fn client(ctl: Arc<Control>, tid: u32) -> ClientOutcome {
    if let Some(b) = ctl.builtin.clone() {
        return native_client(ctl, tid, b);
    }
    let stats = ctl.stats[(tid - ctl.first_tid) as usize].clone();
    let mut out = ClientOutcome { init_error: None, run_error: None, finished: None };
    stats.set_os_thread(crate::priority::current_thread());
    crate::log::debug(&format!("Worker thread (#{tid}) started"));
    let lua = client_state(&ctl.shared, Phase::Worker, tid, stats.clone()).and_then(|lua| {
        if let Some(f) = script::global_fn(&lua, "thread_init") {
            script::call(&lua, &f, tid).map_err(|e| format!("FATAL: `thread_init' function failed: {e}"))?;
        }
        crate::log::debug(&format!("Worker thread (#{tid}) initialized"));
        // Compiling the script leaves garbage; collect it before the run so
        // the state's heap (and the GC's next threshold) starts from what is
        // live. Matters at thousands of clients.
        lua.gc_collect().map_err(|e| script::error_message(&e))?;
        Ok(lua)
    });
    let Some(lua) = ctl.ready_then_go(lua, &mut out) else { return out };
    // The script's own thread_run, or sysbench's default loop from the
    // prelude; both drive the event loop through sb_more_events and
    // sb_event_start/stop (script_more_events & co below).
    let thread_run = script::global_fn(&lua, "thread_run").ok_or(()).or_else(|()| {
        lua.globals().get::<mlua::Table>("sysbench").and_then(|sb| sb.get::<mlua::Function>("_thread_run"))
    });
    let r = match thread_run {
        Ok(f) => script::call(&lua, &f, tid),
        Err(e) => Err(script::error_message(&e)),
    };
    // An event that ended the loop (truthy return) or failed is not running.
    stats.in_event.store(false, Ordering::Relaxed);
    stats.set_finished();
    out.finished = Some(Instant::now());
    // A clean loop went on after any fatal error it caught (a thread_run
    // of its own need not go through event_stop).
    if r.is_ok() {
        stats.count_held_errors();
    }
    // thread_done only after a clean loop; either failure stops every client.
    let r = r.map_err(|e| format!("FATAL: `thread_run' function failed: {e}")).and_then(|_| {
        match script::global_fn(&lua, "thread_done") {
            Some(f) => script::call(&lua, &f, tid)
                .map(|_| ())
                .map_err(|e| format!("FATAL: `thread_done' function failed: {e}")),
            None => Ok(()),
        }
    });
    if let Err(msg) = r {
        // Through the logger: under JSON/CSV on stderr, since the run's
        // document (what it measured) may still follow on stdout.
        crate::log::fatal(msg.strip_prefix("FATAL: ").unwrap_or(&msg));
        ctl.shared.failed.store(true, Ordering::Relaxed);
        out.run_error = Some(msg);
    }
    out
}

/// A client of a built-in `oltp_*` workload without a Lua state
/// (`--oltp-client=native`): the steps of [`client`] and of the prelude's
/// default `thread_run`, with the script's functions in
/// [`script::native::Client`].
fn native_client(ctl: Arc<Control>, tid: u32, b: Arc<Builtin>) -> ClientOutcome {
    let i = (tid - ctl.first_tid) as usize;
    let stats = ctl.stats[i].clone();
    let mut out = ClientOutcome { init_error: None, run_error: None, finished: None };
    stats.set_os_thread(crate::priority::current_thread());
    crate::log::debug(&format!("Worker thread (#{tid}) started"));
    // The random stream a Lua state of this client would draw from.
    rand::seed_thread(Phase::Worker, tid);
    let c = NativeClient::init(b, ctl.shared.clone(), stats.clone())
        .map_err(|e| format!("FATAL: `thread_init' function failed: {e}"));
    if c.is_ok() {
        crate::log::debug(&format!("Worker thread (#{tid}) initialized"));
    }
    let Some(mut c) = ctl.ready_then_go(c, &mut out) else { return out };
    let r = native_events(&ctl, i, &mut c);
    stats.in_event.store(false, Ordering::Relaxed);
    stats.set_finished();
    out.finished = Some(Instant::now());
    match r {
        // thread_done only after a clean loop, as for a script.
        Ok(()) => c.done(),
        Err(msg) => {
            crate::log::fatal(&format!("`thread_run' function failed: {msg}"));
            ctl.shared.failed.store(true, Ordering::Relaxed);
            out.run_error = Some(format!("FATAL: `thread_run' function failed: {msg}"));
        }
    }
    out
}

/// The prelude's `sysbench._thread_run` for a native client: events until
/// there are no more; an ignorable error restarts the event (after
/// `before_restart_event`) unless the run is over, anything else fails.
fn native_events(ctl: &Control, i: usize, c: &mut NativeClient) -> Result<(), String> {
    while ctl.more_events(i) {
        ctl.event_start(i);
        loop {
            match c.event() {
                Ok(()) => break,
                Err(EventError::Restart(code)) => {
                    if !ctl.event_restart(i) {
                        return Ok(());
                    }
                    c.before_restart(code)?;
                }
                Err(EventError::Fatal(msg)) => return Err(msg),
            }
        }
        ctl.event_stop(i);
    }
    Ok(())
}

fn rate_generator(ctl: Arc<Control>, rate: f64, backlog: usize, shard: u32) {
    let Some(rq) = &ctl.rate else { return };
    // Each shard's arrivals from a stream of its own (shard 0's is the
    // unsharded run's).
    rand::seed_thread(Phase::Worker, u32::MAX - shard);
    // Arrival times in ns of crate::clock, what the clients compare with.
    let mut next = crate::clock::now_ns();
    // uniform_double() < 1, so the gap is finite.
    let gap = |u: f64| (-(1.0 - u).ln() / rate * 1e9) as u64;
    next = next.saturating_add(gap(rand::uniform_double()));
    let grid = ctl.grid.get();
    let mut boundary = grid.map_or(u64::MAX, |g| g.next_after(crate::clock::now_ns()));
    while !ctl.shared.past_deadline() {
        let now = crate::clock::now_ns();
        if next <= now {
            let mut q = rq.queue.lock().unwrap_or_else(|p| p.into_inner());
            while next <= now {
                rq.generated.fetch_add(1, Ordering::Relaxed);
                if q.len() < backlog {
                    q.push_back(next);
                } else {
                    rq.dropped.fetch_add(1, Ordering::Relaxed);
                }
                next = next.saturating_add(gap(rand::uniform_double()));
            }
            drop(q);
            rq.ready.notify_all();
        }
        if let Some(g) = grid.filter(|_| now >= boundary) {
            // The queue as of the boundary: arrivals due by then and not
            // yet taken (the queue is in order of arrival).
            let waiting = {
                let q = rq.queue.lock().unwrap_or_else(|p| p.into_inner());
                q.partition_point(|&t| t <= boundary) as u64
            };
            let busy = in_events(&ctl.stats);
            let mut at = rq.at_boundaries.lock().unwrap_or_else(|p| p.into_inner());
            // Every boundary passed since the last wake-up (one, unless the
            // host starved this thread).
            while boundary <= now {
                at.push_back((boundary, waiting, busy));
                boundary = g.next_after(boundary);
            }
        }
        // Sleep to the next arrival, at most 10 ms, so the deadline is noticed.
        let wait = Duration::from_nanos(next.saturating_sub(crate::clock::now_ns())).min(Duration::from_millis(10));
        if !wait.is_zero() {
            thread::sleep(wait);
        }
    }
}

/// Clients in the middle of an event.
fn in_events(stats: &[Arc<ClientStats>]) -> u64 {
    stats.iter().filter(|s| s.in_event.load(Ordering::Relaxed)).count() as u64
}

type ClientHandle = thread::JoinHandle<Vec<ClientOutcome>>;

/// Starts the clients: one OS thread each, or `client_threads` workers with
/// the clients multiplexed over them (client `tid` on worker
/// `tid % client_threads`). Every handle returns its clients' outcomes.
fn spawn_clients(ctl: &Arc<Control>, cfg: &RunConfig, client_threads: u32) -> Result<Vec<ClientHandle>, String> {
    let limits = "lower --threads or raise the process limits";
    if client_threads == 0 {
        let mut handles = Vec::with_capacity(cfg.threads as usize);
        for tid in ctl.first_tid..ctl.first_tid + cfg.threads {
            let ctl = ctl.clone();
            let h = thread::Builder::new().stack_size(cfg.stack_size).name(format!("client-{tid}")).spawn(move || {
                let out = client(ctl.clone(), tid);
                ctl.client_finished();
                vec![out]
            });
            handles.push(h.map_err(|e| format!("cannot start client thread {tid}: {e} ({limits})"))?);
        }
        return Ok(handles);
    }
    let workers = client_threads.min(cfg.threads);
    let mut handles = Vec::with_capacity(workers as usize);
    for w in 0..workers {
        let tids: Vec<u32> = (w..cfg.threads).step_by(workers as usize).map(|i| ctl.first_tid + i).collect();
        let (ctl, stack_size) = (ctl.clone(), cfg.stack_size);
        let h = thread::Builder::new().name(format!("clients-{w}")).spawn(move || {
            let clients = tids
                .into_iter()
                .map(|tid| {
                    let ctl = ctl.clone();
                    Box::new(move || client(ctl, tid)) as Box<dyn FnOnce() -> ClientOutcome>
                })
                .collect();
            match sched::run_clients(clients, stack_size, |_, _| ctl.client_finished()) {
                Ok(outs) => outs,
                Err(e) => {
                    println!("FATAL: cannot run clients on worker thread {w}: {e} ({limits})");
                    Exit::Error.exit();
                }
            }
        });
        handles.push(h.map_err(|e| format!("cannot start worker thread {w}: {e} ({limits})"))?);
    }
    Ok(handles)
}

/// `run`: the benchmark itself, in its phases: start the clients, wait
/// for them to be ready, release them, report until they are done, join
/// them and print the final report.
pub fn run(shared: &Arc<Shared>, main: &Lua, cfg: &RunConfig) -> Status {
    // Bound first: a bad address ends the run before anything runs.
    let listener = match cfg.metrics_listen.as_deref().map(crate::metrics::bind).transpose() {
        Ok(l) => l,
        Err(msg) => return fail(&format!("FATAL: {msg}")),
    };
    if let Some(f) = script::global_fn(main, "init") {
        if let Err(e) = script::call(main, &f, ()) {
            return fail(&format!("FATAL: `init' function failed: {e}"));
        }
    }
    if script::global_fn(main, "event").is_none() {
        return fail(&format!("FATAL: cannot find the event() function in {}", shared.script.chunk_name));
    }
    let text = cfg.format.shows_progress();
    if cfg.time.is_zero() && cfg.events == 0 {
        crate::log::warning("Both event and time limits are disabled, running an endless test");
    }
    let (builtin, workers) = match shared.opts.read() {
        Ok(o) => {
            let builtin = Builtin::for_run(shared, &o);
            if builtin.is_none() && o.given("oltp_client") && o.str("oltp_client").trim() == "native" {
                crate::log::warning(&format!(
                    "--oltp-client=native applies to the built-in oltp_* workloads (with the built-in oltp_common) only; {} runs as a Lua script",
                    shared.script.chunk_name
                ));
            }
            let workers = workers_for_run(cfg, &o, builtin.is_some());
            (builtin, workers)
        }
        Err(_) => (None, cfg.client_threads),
    };
    print_header(cfg, text, builtin.as_ref(), workers);

    let ctl = Control::for_run(shared, cfg, builtin);
    // A process runs one benchmark, so this is the only run ever set.
    let _ = SCRIPT_RUN.set(ctl.clone());
    let metrics = match listener.map(|l| start_metrics(l, shared, cfg)).transpose() {
        Ok(m) => m,
        Err(msg) => return fail(&msg),
    };
    if text {
        println!("Initializing worker threads...");
        println!();
    }
    // This thread reports: from here on it allocates from a heap of its
    // own, never waiting for a malloc arena lock that a preempted client
    // holds (see `alloc`). Before the clients exist, so its first pages
    // are touched while the host is still quiet.
    #[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
    if !crate::alloc::use_private_heap() {
        crate::log::debug("the reporting thread shares malloc's arenas with the clients");
    }
    let handles = match spawn_clients(&ctl, cfg, workers) {
        Ok(h) => h,
        Err(msg) => {
            println!("FATAL: {msg}");
            Exit::Error.exit();
        }
    };
    let init_failed = wait_for_clients(&ctl, cfg);
    // This thread reports from here on. Raised before the release, not
    // after: the clients it wakes (and their server processes) would queue
    // it behind them, and at 1024 PostgreSQL clients the first line came 2 s
    // late. Threads it starts from now on inherit the priority under the
    // nice fallback (the rate generator puts its own back).
    let own_nice = crate::priority::current_nice();
    let raised = crate::priority::raise_current_thread();
    let raised_nice = raised.is_some() && crate::priority::current_nice() != own_nice;
    let released = release_clients(&ctl, cfg, init_failed, metrics.is_some());
    if init_failed {
        for h in handles {
            let _ = h.join();
        }
        println!("FATAL: Thread initialization failed!");
        return Exit::Error.into();
    }
    let generator = ctl.rated.then(|| {
        let c = ctl.clone();
        let (rate, backlog) = (cfg.rate, cfg.rate_backlog);
        let shard = cfg.shard.as_ref().map_or(0, |s| s.index);
        thread::spawn(move || {
            // At the clients' priority, as sysbench's generator runs: the
            // arrivals must not be more punctual than the host allows.
            if let Some(n) = own_nice.filter(|_| raised_nice) {
                crate::priority::set_current_nice(n);
            }
            rate_generator(c, rate, backlog, shard)
        })
    });

    let mut rep = Reporter::new(&ctl, cfg, released.grid, released.grid_start, main, ctl.stats.clone());
    rep.shard_start = released.shard_start.clone();
    if let Some(m) = &metrics {
        rep.collector.keep_measured();
        rep.publisher = Some(m.publisher());
    }
    rep.raised = raised;
    rep.was_raised = rep.raised.is_some();
    if rep.raised.is_some() {
        rep.collector.lend_priority();
    } else {
        crate::log::debug("the reporting thread keeps its priority (no right to raise it)");
    }
    let next_b = rep.report_until_done(&released, metrics.as_ref());
    let (end, errors) = join_clients(handles, released.run_start);
    if let Some(g) = generator {
        let _ = g.join();
    }
    let status = rep.end_of_run(next_b, end, errors);
    script::close_reports(main);
    let status = match script::global_fn(main, "done").map(|f| script::call(main, &f, ())) {
        Some(Err(e)) => {
            crate::log::fatal(&format!("`done' function failed: {e}"));
            Exit::Error.into()
        }
        _ => status,
    };
    if let Some(m) = &metrics {
        let _ = std::io::Write::flush(&mut std::io::stdout());
        m.linger();
    }
    status
}

impl Control {
    /// The state a run's clients share, before any client exists.
    fn for_run(shared: &Arc<Shared>, cfg: &RunConfig, builtin: Option<Builtin>) -> Arc<Control> {
        let stats: Vec<Arc<ClientStats>> = (0..cfg.threads).map(|_| Arc::new(ClientStats::with_room())).collect();
        let rated = cfg.rate > 0.0;
        Arc::new(Control {
            shared: shared.clone(),
            events_limit: cfg.events,
            events_started: AtomicU64::new(0),
            warmup_end_ns: OnceLock::new(),
            grid: OnceLock::new(),
            rate: rated.then(|| RateQueue {
                queue: Mutex::new(VecDeque::new()),
                ready: Condvar::new(),
                dropped: AtomicU64::new(0),
                generated: AtomicU64::new(0),
                at_boundaries: Mutex::new(VecDeque::new()),
            }),
            all_done: Mutex::new(false),
            done: Condvar::new(),
            ready: Mutex::new((0, 0)),
            ready_cv: Condvar::new(),
            go: Mutex::new(None),
            go_cv: Condvar::new(),
            threads_running: AtomicU32::new(cfg.threads),
            rated,
            stats,
            first_tid: cfg.shard.as_ref().map_or(0, |s| s.first_tid),
            clocks: (0..cfg.threads).map(|_| EventClock::default()).collect(),
            builtin: builtin.map(Arc::new),
        })
    }
}

/// Waits for every client to be ready (`--thread-init-timeout`; past it
/// the process ends). True if a client's `thread_init` failed.
fn wait_for_clients(ctl: &Control, cfg: &RunConfig) -> bool {
    let init_deadline = Instant::now() + cfg.init_timeout;
    let mut r = ctl.ready.lock().unwrap_or_else(|p| p.into_inner());
    while r.0 < cfg.threads {
        let left = init_deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            println!(
                "FATAL: Worker threads failed to initialize within {} seconds! (raise --thread-init-timeout)",
                cfg.init_timeout.as_secs()
            );
            Exit::Partial.exit();
        }
        r = ctl.ready_cv.wait_timeout(r, left).unwrap_or_else(|p| p.into_inner()).0;
    }
    r.1 > 0
}

/// What releasing the clients fixed, as the reporting needs it.
struct Released<'a> {
    /// The periods the run is counted in.
    grid: &'a Grid,
    /// The release, in ns of [`crate::clock`]: the grid's start.
    grid_start: u64,
    /// The end of the warmup.
    run_start: Instant,
    /// `--shard`: when it was ready and started, and whether it was late.
    shard_start: crate::shard::result::StartInfo,
}

/// Releases the ready clients (or, if `init_failed`, tells them to give
/// up): fixes the grid and the deadline, then lets them go.
/// `publishing`: live metrics are on (the grid then has their boundaries).
fn release_clients<'a>(ctl: &'a Control, cfg: &RunConfig, init_failed: bool, publishing: bool) -> Released<'a> {
    let shared = &ctl.shared;
    let text = cfg.format.shows_progress();
    // A shard: every client is ready; wait for --start-at (a shard ready
    // after it starts at once, and its result says it was late).
    let ready_unix_ms = crate::shard::now_unix_ms();
    let late = match cfg.shard.as_ref().and_then(|s| s.start_at_ms) {
        Some(t) if !init_failed => {
            // A long wait says what it waits for: a start set far ahead
            // must not look like a hang.
            if t as f64 - ready_unix_ms > crate::shard::START_AT_ANNOUNCE_MS {
                crate::log::notice(&format!(
                    "Ready; waiting {:.0} s for --start-at={} ({t} ms)",
                    (t as f64 - ready_unix_ms) / 1e3,
                    crate::shard::rfc3339(t)
                ));
            }
            crate::shard::wait_until(t);
            ready_unix_ms > t as f64
        }
        _ => false,
    };
    let start = Instant::now();
    let start_unix_ms = crate::shard::now_unix_ms();
    let run_start = start + cfg.warmup;
    // A checkpoint prints a text report and starts the figures afresh; the
    // JSON/CSV document has no place for it, and resetting would leave the
    // document covering only the time since the last checkpoint.
    let checkpoint_times: &[u64] = if cfg.format.is_text() {
        &cfg.checkpoints
    } else {
        if !cfg.checkpoints.is_empty() {
            crate::log::warning("--report-checkpoints reports in the text layouts only: ignored under --format=json/csv, whose document covers the whole run");
        }
        &[]
    };
    // One reading of the clock: the end of the warmup is exactly `warmup`
    // after the start on the grid (`ns_of` twice could differ by a few ns).
    let grid_start = crate::clock::ns_of(start);
    let run_ns = grid_start + cfg.warmup.as_nanos() as u64;
    let tick_ns = cfg.report_interval.as_nanos().min(u64::MAX as u128) as u64;
    let grid = ctl.grid.get_or_init(|| {
        let checkpoints = checkpoint_times.iter().map(|s| run_ns.saturating_add(s.saturating_mul(1_000_000_000)));
        let grid = Grid::new(grid_start, run_ns, tick_ns, checkpoints.collect());
        if publishing {
            grid.publishing_every(crate::metrics::PUBLISH_EVERY.as_nanos() as u64)
        } else {
            grid
        }
    });
    // Before the release, not after: waking thousands of clients at once
    // can hold this thread for half a second, and the line marks the start
    // that the interval lines count from.
    if text && !init_failed {
        println!("Threads started!");
        println!();
    }
    if !cfg.time.is_zero() {
        shared.set_deadline(run_start + cfg.time);
    }
    let _ = ctl.warmup_end_ns.set(run_ns);
    *ctl.go.lock().unwrap_or_else(|p| p.into_inner()) = Some(!init_failed);
    ctl.go_cv.notify_all();
    Released {
        grid,
        grid_start,
        run_start,
        shard_start: crate::shard::result::StartInfo { ready_unix_ms, start_unix_ms, late },
    }
}

/// Joins the clients: the last one's end (no earlier than `run_start`)
/// and the errors that ended any of them.
fn join_clients(handles: Vec<ClientHandle>, run_start: Instant) -> (Instant, Vec<String>) {
    let mut end = run_start;
    let mut errors = Vec::new();
    for h in handles {
        match h.join() {
            Ok(outs) => {
                for out in outs {
                    if let Some(f) = out.finished {
                        end = end.max(f);
                    }
                    if let Some(e) = out.run_error {
                        errors.push(e);
                    }
                }
            }
            Err(_) => errors.push("a client thread panicked".into()),
        }
    }
    (end, errors)
}

/// Starts the live-metrics endpoint on `listener` with the figures before
/// the run (zeros), and tells where it listens: on stderr, and in the file
/// that `DBBENCH_METRICS_ADDRESS_FILE` names (the lab's relay, see
/// `crate::lab::live`), created new and private.
fn start_metrics(
    listener: std::net::TcpListener,
    shared: &Shared,
    cfg: &RunConfig,
) -> Result<crate::metrics::Server, String> {
    let first = crate::metrics::Snapshot {
        buckets: vec![0; crate::metrics::LATENCY_BUCKETS_S.len()],
        threads: cfg.threads,
        threads_configured: cfg.threads,
        warmup: !cfg.warmup.is_zero(),
        time_limit_s: cfg.time.as_secs_f64(),
        event_limit: cfg.events,
        ..Default::default()
    };
    let server = crate::metrics::Server::start(listener, &shared.script.name, first)?;
    if let Some(path) = std::env::var_os(crate::metrics::ADDRESS_FILE_ENV) {
        let path = Path::new(&path);
        let mut f = crate::safe_fs::create_new(path, 0o600).map_err(|e| format!("FATAL: {e}"))?;
        if let Err(e) = std::io::Write::write_all(&mut f, server.addr().to_string().as_bytes()) {
            return Err(format!("FATAL: cannot write the metrics address to {}: {e}", path.display()));
        }
    } else {
        eprintln!("live metrics: http://{}/metrics", server.addr());
    }
    Ok(server)
}

/// Shortest time, after `--time`, in which no client ends its event or
/// finishes before the run ends without them when `--forced-shutdown` is
/// off (the wait is twice the longest event seen, if longer).
const STALL_GRACE_MIN: Duration = Duration::from_secs(5);

/// How often, after `--time`, the reporting thread looks for clients that
/// ended their event or finished (a scan of the clients' flags).
const STALL_PROGRESS_SAMPLE: Duration = Duration::from_millis(250);

/// The main thread's side of a run: collects each boundary's figures,
/// prints interval lines and checkpoints, and the final report.
struct Reporter<'a> {
    ctl: &'a Control,
    cfg: &'a RunConfig,
    grid: &'a Grid,
    main: &'a Lua,
    stats: Vec<Arc<ClientStats>>,
    collector: Collector,
    /// The figures since the last row's boundary (`row_from`).
    row: Period,
    row_from: u64,
    /// Rows of the run, and of the warmup (printed nowhere and in no
    /// figure, kept for the JSON report so that a chart can show how the
    /// system warmed up; times count back from the end of the warmup).
    intervals: Vec<IntervalRow>,
    warmup_intervals: Vec<IntervalRow>,
    /// The end of the warmup has been handled (figures reset).
    measuring: bool,
    /// Since the end of the warmup or the last checkpoint (rates divide by it).
    period_from: u64,
    /// End of the run, once known.
    end_ns: u64,
    /// Rows printed later than [`Reporter::late_threshold`], and the latest.
    late_rows: u32,
    /// This thread's raised priority, while it reports (see
    /// `crate::priority`); None where the process may not raise it.
    raised: Option<crate::priority::Lent>,
    /// Whether it was raised for the run (for the warning about late lines).
    was_raised: bool,
    latest_ns: u64,
    /// Live metrics (`--metrics-listen`): where each boundary's figures go.
    publisher: Option<crate::metrics::Publisher>,
    /// `--shard`: each row's figures, losslessly, for the shard's result
    /// (the last row's until its tick is pushed), and its start.
    shard_ticks: Vec<crate::shard::result::TickData>,
    shard_warmup_ticks: Vec<crate::shard::result::TickData>,
    shard_row: Option<crate::shard::result::PeriodData>,
    shard_start: crate::shard::result::StartInfo,
}

impl<'a> Reporter<'a> {
    fn new(
        ctl: &'a Control,
        cfg: &'a RunConfig,
        grid: &'a Grid,
        start: u64,
        main: &'a Lua,
        stats: Vec<Arc<ClientStats>>,
    ) -> Self {
        Reporter {
            ctl,
            cfg,
            grid,
            main,
            collector: Collector::new(stats.clone()),
            stats,
            row: Period::preallocated(),
            row_from: start,
            intervals: Vec::new(),
            warmup_intervals: Vec::new(),
            measuring: start >= grid.run_ns(),
            period_from: grid.run_ns(),
            end_ns: 0,
            late_rows: 0,
            raised: None,
            was_raised: false,
            latest_ns: 0,
            publisher: None,
            shard_ticks: Vec::new(),
            shard_warmup_ticks: Vec::new(),
            shard_row: None,
            shard_start: crate::shard::result::StartInfo { ready_unix_ms: 0.0, start_unix_ms: 0.0, late: false },
        }
    }

    /// The reporting loop: each boundary of the grid (report tick, end of
    /// the warmup, checkpoint) is handled shortly after it passes. What it
    /// collects depends only on when events ended, not on when this thread
    /// runs (see `stats`), so a late wake-up delays a line, never changes it.
    /// Returns, once every client has finished, the next boundary not yet
    /// handled. A forced or stalled end reports and ends the process here.
    fn report_until_done(&mut self, released: &Released, metrics: Option<&crate::metrics::Server>) -> u64 {
        let (ctl, cfg, grid) = (self.ctl, self.cfg, self.grid);
        let shared = &ctl.shared;
        let tick_ns = cfg.report_interval.as_nanos().min(u64::MAX as u128) as u64;
        let mut next_b = grid.next_after(released.grid_start);
        // A boundary is collected this long after it: an event that ended just
        // before it is recorded within microseconds unless its client was
        // descheduled in between.
        let slack_ns = if tick_ns > 0 { (tick_ns / 10).min(2_000_000) } else { 2_000_000 };
        let forced_ns = cfg
            .forced_grace
            .filter(|_| !cfg.time.is_zero())
            .map(|g| crate::clock::ns_of(released.run_start + cfg.time + g));
        let deadline_ns = shared.deadline().map(crate::clock::ns_of);
        // Without --forced-shutdown, a run whose clients stop making progress
        // after --time ends anyway (a stopped server must not hang a bounded
        // run): no client ending its event or finishing for the stall grace
        // (STALL_GRACE_MIN, or twice the longest event seen, if longer). A
        // drain that progresses is not a stall: at 4096 PostgreSQL clients
        // the server ends ~700 backends a second, so the last clients finish
        // 5-6 s after --time, as under sysbench.
        let mut stall_ns: Option<u64> = None;
        let (mut left, mut progress_ns) = (u64::MAX, 0);
        loop {
            let now = crate::clock::now_ns();
            while next_b != u64::MAX && now >= next_b.saturating_add(slack_ns) {
                self.boundary(next_b);
                next_b = grid.next_after(next_b);
            }
            if let (None, Some(d)) = (forced_ns, deadline_ns) {
                if now >= d {
                    // Clients not finished plus events not ended: after --time
                    // no event starts, so this only falls while work ends.
                    let now_left = u64::from(ctl.threads_running.load(Ordering::Relaxed)) + in_events(&self.stats);
                    if now_left < left {
                        (left, progress_ns) = (now_left, now);
                        let grace = STALL_GRACE_MIN.as_nanos() as u64;
                        stall_ns = Some(now + grace.max(self.collector.longest_event_ns().saturating_mul(2)));
                    }
                }
            }
            let forced =
                forced_ns.filter(|f| now >= *f).map(|_| true).or(stall_ns.filter(|s| now >= *s).map(|_| false));
            if let Some(by_option) = forced {
                self.forced_end(by_option, now, (deadline_ns, progress_ns), next_b, metrics);
            }
            let all_done = ctl.all_done.lock().unwrap_or_else(|p| p.into_inner());
            if *all_done {
                return next_b;
            }
            let mut wake = next_b.saturating_add(slack_ns);
            for t in [forced_ns, stall_ns.or(deadline_ns.filter(|_| forced_ns.is_none()))].into_iter().flatten() {
                wake = wake.min(t);
            }
            if stall_ns.is_some() {
                // Progress is sampled, so that a stall is declared within
                // STALL_PROGRESS_SAMPLE of its grace after the last progress.
                wake = wake.min(now.saturating_add(STALL_PROGRESS_SAMPLE.as_nanos() as u64));
            }
            let wait =
                Duration::from_nanos(wake.saturating_sub(crate::clock::now_ns())).max(Duration::from_micros(100));
            let _ = ctl.done.wait_timeout(all_done, wait);
        }
    }

    /// Ends a run whose clients did not finish: past `--forced-shutdown`
    /// (`by_option`) or stalled after `--time` (`deadline_ns`, the last
    /// progress at `progress_ns`). Reports what was measured, marked as
    /// aborted, and ends the process.
    fn forced_end(
        &mut self,
        by_option: bool,
        now: u64,
        (deadline_ns, progress_ns): (Option<u64>, u64),
        mut next_b: u64,
        metrics: Option<&crate::metrics::Server>,
    ) -> ! {
        let unfinished = in_events(&self.stats);
        let running = self.ctl.threads_running.load(Ordering::Relaxed);
        let aborted = if by_option {
            // One message (the count belongs to it), so it prints at
            // any verbosity, where log sends FATAL lines.
            crate::log::fatal(&format!("The --max-time limit has expired, forcing shutdown...\n\nNumber of unfinished transactions on forced shutdown: {unfinished}"));
            format!("forced shutdown with {unfinished} unfinished events")
        } else {
            let waited = (now - deadline_ns.unwrap_or(now)) as f64 / 1e9;
            let quiet = now.saturating_sub(progress_ns) as f64 / 1e9;
            crate::log::fatal(&format!(
                "{running} of {} clients had not finished {waited:.1}s after the end of --time, none for the last \
                 {quiet:.1}s ({unfinished} in an event: is the server stopped?); ending the run (--forced-shutdown=N \
                 sets this wait)",
                self.cfg.threads
            ));
            format!("stalled: {running} clients had not finished {waited:.1}s after the end of --time")
        };
        while next_b <= now {
            self.boundary(next_b);
            next_b = self.grid.next_after(next_b);
        }
        self.finish(Instant::now());
        self.publish(self.end_ns, true);
        self.final_report(Some(aborted.clone()));
        self.write_shard_result(Some(aborted));
        let _ = std::io::Write::flush(&mut std::io::stdout());
        if let Some(m) = metrics {
            m.linger();
        }
        Exit::Partial.exit();
    }

    /// After every client has finished (the last at `end`, `errors` from
    /// those a fatal error ended): the remaining boundaries from `next_b`,
    /// the final report and the shard's result. The run's status.
    fn end_of_run(&mut self, mut next_b: u64, end: Instant, errors: Vec<String>) -> Status {
        let (ctl, cfg) = (self.ctl, self.cfg);
        let shared = &ctl.shared;
        // Every client has finished: the boundaries up to the last one's end
        // are complete (later ones would hold nothing), then the tail after the
        // last boundary, which only the totals include.
        let end_ns = crate::clock::ns_of(end);
        while next_b <= end_ns {
            self.boundary(next_b);
            next_b = self.grid.next_after(next_b);
        }
        self.finish(end);
        self.publish(self.end_ns, true);
        // The reporting is over: the final report and the script's `done`
        // run at the thread's own priority.
        self.raised = None;
        if cfg.format.is_text() && crate::log::enabled(crate::log::Level::Info) {
            // sysbench's clients each log the limit they hit; its logger folds
            // the identical lines into a "repeated" line.
            let by_events = ctl.events_limit > 0 && ctl.events_started.load(Ordering::Relaxed) >= ctl.events_limit;
            let by_time = shared.deadline().is_some_and(|d| end >= d);
            if by_events || by_time {
                crate::log::info(if by_events {
                    "Event limit exceeded, exiting..."
                } else {
                    "Time limit exceeded, exiting..."
                });
                if cfg.threads > 1 {
                    crate::log::info(&format!("(last message repeated {} times)", cfg.threads - 1));
                }
            }
            crate::log::info("Done.");
            crate::log::info("");
        }
        // A run ended by errors (a fatal one, or a lost server that could not
        // be reached again before --time) still reports what it measured,
        // marked as such, and fails.
        let failure = errors
            .first()
            .map(|e| {
                let first = e.lines().find(|l| !l.trim().is_empty()).unwrap_or(e);
                format!("ended by an error: {}", first.trim_start_matches("FATAL: "))
            })
            .or_else(|| shared.failed.load(Ordering::Relaxed).then(|| "ended by an error".to_string()))
            .or_else(|| shared.ended_by_errors.get().map(|e| format!("ended by errors: {e}")));
        let measured = self.collector.cumulative();
        let status = match failure.clone() {
            Some(reason) => {
                if measured.get(Counter::Event) + measured.queries() > 0 {
                    self.final_report(Some(reason));
                }
                Exit::Error.into()
            }
            None => {
                self.final_report(None);
                Exit::Ok.into()
            }
        };
        // A shard's result, also of a failed run (the merge reports it).
        let status = if self.write_shard_result(failure) { status } else { Exit::Error.into() };
        self.warnings();
        status
    }

    fn sql(&self) -> bool {
        self.ctl.shared.driver_used.load(Ordering::Relaxed)
    }

    /// A row printed more than this after its interval ended was late.
    fn late_threshold(&self) -> u64 {
        (self.cfg.report_interval.as_nanos() as u64 / 10).max(20_000_000)
    }

    /// Handles boundary `b` (see [`Reporter::handle`]), then publishes the
    /// live metrics, if any.
    fn boundary(&mut self, b: u64) {
        self.handle(b);
        self.publish(b, false);
    }

    /// Hands the figures as of boundary `b` (or of the end, `finished`) to
    /// the live-metrics endpoint, without waiting for it.
    fn publish(&mut self, b: u64, finished: bool) {
        let (Some(publisher), Some(measured)) = (&mut self.publisher, self.collector.measured()) else { return };
        let run_ns = self.grid.run_ns();
        let mut s = crate::metrics::Snapshot {
            threads: self.stats.iter().filter(|c| c.running_at(b)).count() as u32,
            threads_configured: self.cfg.threads,
            warmup: !self.measuring,
            finished,
            elapsed_s: b.saturating_sub(run_ns) as f64 / 1e9,
            time_limit_s: self.cfg.time.as_secs_f64(),
            event_limit: self.cfg.events,
            ..Default::default()
        };
        s.fill(measured, &self.cfg.percentiles);
        publisher.publish(s);
    }

    /// Handles boundary `b`: its figures, and the row,
    /// reset or checkpoint it stands for.
    fn handle(&mut self, b: u64) {
        let run_ns = self.grid.run_ns();
        // Every line waits for every client, also one preempted while
        // recording an event: exact figures come before a line on time (on
        // an overloaded host the warning at the end says how late lines
        // were). Giving up at a deadline instead moved 11,927 events of one
        // interval into the next at 512 PostgreSQL clients in CI: a
        // plausible wrong figure, even with its warning.
        self.collector.collect(self.grid, b, &mut self.row);
        if b <= run_ns {
            if self.grid.is_tick(b) || (b == run_ns && !self.cfg.report_interval.is_zero()) {
                // Seconds before the end of the warmup (0 for the last,
                // possibly shorter, warmup interval).
                let row = self.row(0.0 - (run_ns - b) as f64 / 1e9, b);
                let tick = -((run_ns - b).div_ceil(self.tick_ns()) as i64);
                self.push_shard_tick(tick, &row, true);
                self.warmup_intervals.push(row);
            }
            if b == run_ns {
                self.collector.reset();
                self.collector.restart_measured();
                self.row.clear();
                self.row_from = b;
                self.measuring = true;
            }
            return;
        }
        if self.grid.is_tick(b) {
            let mut row = self.row((b - run_ns) as f64 / 1e9, b);
            interval_line(self.cfg.format, &row, self.sql(), &self.cfg.percentiles, self.main);
            // Once printed: collecting can itself be slow on an overloaded
            // host, and the warning is about when the line came out.
            let late = crate::clock::now_ns().saturating_sub(b);
            if late > self.late_threshold() {
                self.late_rows += 1;
            }
            self.latest_ns = self.latest_ns.max(late);
            row.late_ms = Some(late as f64 / 1e6);
            self.push_shard_tick(((b - run_ns) / self.tick_ns()) as i64, &row, false);
            self.intervals.push(row);
        }
        if self.grid.is_checkpoint(b) {
            let (total, period) = ((b - run_ns) as f64 / 1e9, (b - self.period_from) as f64 / 1e9);
            let cum = self.collector.cumulative();
            let fairness = self.collector.fairness();
            if self.cfg.format.shows_progress() {
                println!("[ {total:.0}s ] Checkpoint report:");
            }
            // Checkpoints exist in the text layouts only (see `run`), so
            // this is the text report, with --debug's per-thread lines.
            let s = summary(self.cfg, self.sql(), &cum, &fairness, total, period);
            let opts = self.ctl.shared.opts.read().unwrap_or_else(|p| p.into_inner());
            output::final_report(self.cfg.format, &s, &opts, &self.ctl.shared.script.name);
            self.collector.reset();
            self.period_from = b;
        }
    }

    /// The row of the figures since the last row, ending at boundary `b`.
    fn row(&mut self, time: f64, b: u64) -> IntervalRow {
        // Under --rate: the queue and the clients in an event at the
        // boundary, as the arrival generator saw them (a line printed late
        // once showed them as of its printing); read now only where the
        // generator has none (it stops at --time).
        let queue = self.ctl.rate.as_ref().map(|rq| {
            let mut at = rq.at_boundaries.lock().unwrap_or_else(|p| p.into_inner());
            while at.front().is_some_and(|&(t, ..)| t < b) {
                at.pop_front();
            }
            match at.front() {
                Some(&(t, waiting, busy)) if t == b => (waiting, busy),
                _ => (rq.queue.lock().map(|q| q.len()).unwrap_or(0) as u64, in_events(&self.stats)),
            }
        });
        let row = IntervalRow::new(
            time,
            (b - self.row_from) as f64 / 1e9,
            // Clients running at the tick, not when the line is printed (a
            // line printed late at the end of a run said `thds: 0`).
            self.stats.iter().filter(|s| s.running_at(b)).count() as u32,
            &self.row,
            &self.cfg.percentiles,
            queue,
        );
        if self.cfg.shard.is_some() {
            self.shard_row = Some(crate::shard::result::PeriodData::of(&self.row));
        }
        self.row.clear();
        self.row_from = b;
        row
    }

    /// `--report-interval` in ns (at least 1).
    fn tick_ns(&self) -> u64 {
        (self.cfg.report_interval.as_nanos() as u64).max(1)
    }

    /// A shard keeps the row just made, by tick index, for its result.
    fn push_shard_tick(&mut self, tick: i64, row: &IntervalRow, warmup: bool) {
        let Some(period) = self.shard_row.take() else { return };
        let t = crate::shard::result::TickData {
            tick,
            time_s: row.time,
            interval_s: row.dt,
            threads: row.threads,
            queue: row.queue,
            late_ms: row.late_ms,
            period,
        };
        if warmup {
            self.shard_warmup_ticks.push(t);
        } else {
            self.shard_ticks.push(t);
        }
    }

    /// Under `--shard` with `--shard-result`: writes the shard's result
    /// (`aborted`: why the run did not finish normally). False when it
    /// could not be written (said in a FATAL line).
    fn write_shard_result(&mut self, aborted: Option<String>) -> bool {
        let Some(shard) = &self.cfg.shard else { return true };
        let Some(dest) = &shard.result else { return true };
        let cum = self.collector.cumulative();
        let fairness = self.collector.fairness();
        let total = ((self.end_ns.saturating_sub(self.grid.run_ns())) as f64 / 1e9).max(1e-9);
        let shared = &self.ctl.shared;
        let opts = shared.opts.read().unwrap_or_else(|p| p.into_inner());
        let s = summary(self.cfg, self.sql(), &cum, &fairness, total, total);
        let mut options = output::json::document(&s, &opts, &shared.script.name).options;
        options.remove("shard");
        options.remove("shard_result");
        let (clock_offset, clock_offset_missing) = match crate::shard::measure_clock_offset(&opts) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        };
        use crate::shard::result as r;
        let result = r::ShardResult {
            format: r::FORMAT.into(),
            format_version: r::FORMAT_VERSION,
            version: crate::VERSION.into(),
            shard_index: shard.index,
            shard_count: shard.count,
            run: r::RunParams {
                test: shared.script.name.clone(),
                threads: shard.total_threads,
                events: shard.total_events,
                rate: shard.total_rate,
                report_interval_s: self.cfg.report_interval.as_secs_f64(),
                percentiles: self.cfg.percentiles.clone(),
                histogram: self.cfg.histogram,
                start_at_ms: shard.start_at_ms,
                options,
            },
            first_thread: shard.first_tid,
            threads: shard.threads,
            host: crate::shard::host_name(),
            start: self.shard_start.clone(),
            clock_offset,
            clock_offset_missing,
            sql: self.sql(),
            server_version: shared.server_version.get().cloned(),
            aborted,
            total_time_s: total,
            cumulative: r::PeriodData::of(&cum),
            fairness: fairness.iter().map(r::FairnessData::from).collect(),
            intervals: std::mem::take(&mut self.shard_ticks),
            warmup_intervals: std::mem::take(&mut self.shard_warmup_ticks),
            rate: self.ctl.rate.as_ref().map(|rq| r::RateData {
                target: self.cfg.rate,
                not_started: rq.queue.lock().map(|q| q.len() as u64).unwrap_or(0),
                dropped: rq.dropped.load(Ordering::Relaxed),
            }),
            late_events: self.collector.late_events(),
        };
        let json = result.to_json();
        match dest {
            crate::shard::Destination::Stdout => {
                println!("{}{json}", crate::shard::LINE_PREFIX);
                true
            }
            crate::shard::Destination::File(path) => {
                match crate::safe_fs::write_atomic(path, format!("{json}\n").as_bytes(), 0o600) {
                    Ok(()) => true,
                    Err(e) => {
                        crate::log::fatal(&format!("cannot write the shard result: {e}"));
                        false
                    }
                }
            }
        }
    }

    /// The run ended at `end` (all clients finished, or a forced end): the
    /// figures after the last boundary go into the totals only.
    fn finish(&mut self, end: Instant) {
        self.end_ns = crate::clock::ns_of(end).max(self.grid.run_ns());
        // The tail after the last boundary is in no row.
        let mut tail = Period::default();
        self.collector.collect(self.grid, u64::MAX, &mut tail);
        if !self.measuring {
            // Ended before the warmup did: nothing was measured.
            self.collector.reset();
            self.collector.restart_measured();
            self.measuring = true;
        }
    }

    /// The final report (`aborted`: why the run did not finish normally).
    fn final_report(&mut self, aborted: Option<String>) {
        let run_ns = self.grid.run_ns();
        let cum = self.collector.cumulative();
        let fairness = self.collector.fairness();
        let total = ((self.end_ns - run_ns) as f64 / 1e9).max(1e-9);
        let period = ((self.end_ns.saturating_sub(self.period_from)) as f64 / 1e9).max(1e-9);
        let ended_by_errors = aborted.is_some() && !aborted.as_deref().is_some_and(|a| a.starts_with("forced"));
        if ended_by_errors && self.cfg.format.shows_progress() {
            println!(
                "The run {}; the figures below cover what was measured until then.",
                aborted.as_deref().unwrap_or_default()
            );
            println!();
        }
        let shared = &self.ctl.shared;
        let s = Summary {
            intervals: &self.intervals,
            warmup_intervals: &self.warmup_intervals,
            rate: rate_summary(self.ctl, self.cfg, &cum, total),
            server_version: shared.server_version.get().cloned(),
            aborted,
            ..summary(self.cfg, self.sql(), &cum, &fairness, total, period)
        };
        let opts = shared.opts.read().unwrap_or_else(|p| p.into_inner());
        if s.aborted.is_none() && cumulative_hook(self.main, &s) {
            script::close_reports(self.main);
        } else {
            // A script's JSON array (report_json as interval hook) ends
            // before the built-in report, so both stay parseable.
            script::close_reports(self.main);
            output::final_report(self.cfg.format, &s, &opts, &shared.script.name);
        }
        if let Some(r) = &s.rate {
            output::rate_warnings(r);
        }
    }

    /// What the host or the run made less certain than the figures look.
    fn warnings(&self) {
        // Cannot happen while clients read their events' end under their
        // lock (see `ClientStats::record_event`); counted all the same, so
        // that a figure moved by a future change is never silent.
        let late = self.collector.late_events();
        if self.late_rows > 0 {
            crate::log::warning(&format!(
                "{} of {} interval reports were printed late, up to {:.2}s after their interval ended (the host was \
                 overloaded){}{}",
                self.late_rows,
                self.intervals.len(),
                self.latest_ns as f64 / 1e9,
                if late == 0 {
                    "; their figures are exact: each event counts in the interval in which it ended"
                } else {
                    ""
                },
                if self.was_raised {
                    ""
                } else {
                    "; dbbench could not raise its reporting thread's priority, which brings lines on time: run it as \
                     root, with CAP_SYS_NICE, or under `ulimit -r 1`"
                }
            ));
        }
        if late > 0 {
            crate::log::warning(&format!(
                "{late} events were recorded after their interval had been reported and are counted in the next \
                 interval (the totals are exact)"
            ));
        }
        let cum = self.collector.cumulative();
        if cum.get(Counter::Event) == 0 && cum.get(Counter::Restart) > 0 {
            crate::log::warning(&format!(
                "no event completed: every event was restarted after an ignored error ({} restarts)",
                cum.get(Counter::Restart)
            ));
        }
    }
}

/// Prints one interval report, or calls the script's report_intermediate
/// hook instead when it has one.
fn interval_line(format: Format, row: &IntervalRow, sql: bool, pct: &[f64], main: &Lua) {
    if let Some(hook) = script::hook(main, "report_intermediate") {
        if let Ok(stat) = stat_table(main, row) {
            if let Err(e) = script::call(main, &hook, stat) {
                crate::log::fatal(&format!("`report_intermediate' function failed: {e}"));
            }
            return;
        }
    }
    output::interval_line(format, row, sql, pct);
}

fn stat_table(lua: &Lua, row: &IntervalRow) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.set("threads_running", row.threads)?;
    t.set("time_interval", row.dt)?;
    t.set("time_total", row.time)?;
    t.set("latency_pct", row.percentiles.first().copied().flatten().unwrap_or(0.0) / 1000.0)?;
    t.set("events", row.counts[Counter::Event as usize])?;
    t.set("reads", row.counts[Counter::Read as usize])?;
    t.set("writes", row.counts[Counter::Write as usize])?;
    t.set("other", row.counts[Counter::Other as usize])?;
    t.set("errors", row.counts[Counter::Error as usize])?;
    t.set("reconnects", row.counts[Counter::Reconnect as usize])?;
    t.set("queue_length", row.queue.map(|q| q.0).unwrap_or(0))?;
    t.set("concurrency", row.queue.map(|q| q.1).unwrap_or(0))?;
    Ok(t)
}

/// Calls the script's report_cumulative hook instead of the report; returns
/// whether one was defined.
fn cumulative_hook(main: &Lua, s: &Summary) -> bool {
    let Some(hook) = script::hook(main, "report_cumulative") else { return false };
    let r = (|| -> mlua::Result<mlua::Table> {
        let t = main.create_table()?;
        t.set("threads_running", 0)?;
        t.set("time_interval", s.period_time)?;
        t.set("time_total", s.total_time)?;
        let lat = &s.cumulative.latency;
        t.set("latency_pct", s.percentiles.first().and_then(|p| lat.percentile_ms(*p)).unwrap_or(0.0) / 1000.0)?;
        t.set("latency_min", lat.min_ms().unwrap_or(0.0) / 1000.0)?;
        t.set("latency_max", lat.max_ms().unwrap_or(0.0) / 1000.0)?;
        t.set("latency_avg", lat.avg_ms().unwrap_or(0.0) / 1000.0)?;
        t.set("latency_sum", lat.sum_ms() / 1000.0)?;
        for (name, c) in [
            ("events", Counter::Event),
            ("reads", Counter::Read),
            ("writes", Counter::Write),
            ("other", Counter::Other),
            ("errors", Counter::Error),
            ("reconnects", Counter::Reconnect),
        ] {
            t.set(name, s.count(c))?;
        }
        Ok(t)
    })();
    let r = r.map_err(|e| script::error_message(&e)).and_then(|t| script::call(main, &hook, t));
    if let Err(e) = r {
        crate::log::fatal(&format!("`report_cumulative' function failed: {e}"));
    }
    true
}

/// The figures every report has (interval rows, rate, server version and
/// abort reason left empty for the caller to fill in).
fn summary<'a>(
    cfg: &'a RunConfig,
    sql: bool,
    cum: &'a crate::collector::Period,
    fairness: &'a [crate::collector::ClientFairness],
    total: f64,
    period: f64,
) -> Summary<'a> {
    Summary {
        sql,
        threads: cfg.threads,
        percentiles: &cfg.percentiles,
        histogram: cfg.histogram,
        total_time: total,
        period_time: period,
        cumulative: cum,
        fairness,
        intervals: &[],
        warmup_intervals: &[],
        rate: None,
        server_version: None,
        aborted: None,
        debug: cfg.debug,
    }
}

fn rate_summary(ctl: &Control, cfg: &RunConfig, cum: &crate::collector::Period, secs: f64) -> Option<RateSummary> {
    let rq = ctl.rate.as_ref()?;
    Some(RateSummary {
        target: cfg.rate,
        achieved: cum.get(Counter::Event) as f64 / secs.max(1e-9),
        not_started: rq.queue.lock().map(|q| q.len() as u64).unwrap_or(0),
        dropped: rq.dropped.load(Ordering::Relaxed),
    })
}

fn print_header(cfg: &RunConfig, text: bool, builtin: Option<&Builtin>, workers: u32) {
    if !text {
        return;
    }
    println!("Running the test with following options:");
    println!("Number of threads: {}", cfg.threads);
    if let Some(b) = builtin {
        println!("Clients: native {} (no Lua state per client; --oltp-client=lua runs the script)", b.script_name());
    }
    if workers > 0 {
        let why = if cfg.client_threads_auto {
            format!(" (--client-threads=auto: PostgreSQL, {AUTO_MULTIPLEX_FROM} clients or more; 0 for a thread per client)")
        } else {
            String::new()
        };
        println!("Clients multiplexed over {} OS threads{why}", workers.min(cfg.threads));
    }
    if let Some(s) = &cfg.shard {
        println!(
            "Shard {}/{}: thread ids {}-{} of {}{}",
            s.index,
            s.count,
            s.first_tid,
            s.first_tid + s.threads - 1,
            s.total_threads,
            s.start_at_ms.map_or(String::new(), |t| format!(", measuring from {t} ms (unix epoch)"))
        );
    }
    if !cfg.warmup.is_zero() {
        println!("Warmup time: {}s", cfg.warmup.as_secs());
    }
    if cfg.rate > 0.0 {
        println!("Target transaction rate: {}/sec", crate::script::format_lua_number(cfg.rate));
    }
    if !cfg.report_interval.is_zero() {
        println!(
            "Report intermediate results every {} second(s)",
            crate::script::format_lua_number(cfg.report_interval.as_secs_f64())
        );
    }
    if !cfg.checkpoints.is_empty() {
        let list: Vec<String> = cfg.checkpoints.iter().map(|c| c.to_string()).collect();
        println!("Report checkpoint(s) at {} seconds", list.join(", "));
    }
    if cfg.debug {
        println!("Debug mode enabled.");
        println!();
    }
    if cfg.validate {
        println!("Validation checks: on.");
        println!();
    }
    // sysbench's wording; the clock's seed is kept for --debug, since
    // --rand-seed=N repeats dbbench's random streams.
    match rand::given_seed() {
        Some(seed) => println!("Initializing random number generator from seed ({seed})."),
        None => {
            println!("Initializing random number generator from current time");
            crate::log::debug(&format!(
                "the clock gave the random seed {} (--rand-seed={} repeats these random streams)",
                rand::seed(),
                rand::seed()
            ));
        }
    }
    println!();
    if let Some(g) = cfg.forced_grace {
        if !cfg.time.is_zero() {
            println!("Forcing shutdown in {} seconds", (cfg.time + g + cfg.warmup).as_secs());
        }
    }
    println!();
}

/// The longest time any time option may give, in seconds: a C int, as
/// sysbench's INT options (68 years). Every deadline computed from these
/// options then fits the clock.
pub const MAX_SECONDS: i64 = i32::MAX as i64;

/// Most `--rand-spec-iter` draws averaged per gaussian number: each draw
/// costs a random number, and beyond a few dozen the shape no longer changes.
pub const MAX_SPEC_ITER: i64 = 1000;

/// Validates the run-related options into a [`RunConfig`]. Every numeric
/// option is range-checked here with one line saying what is wrong and
/// what the option takes (the type checks came first, with sysbench's
/// `Invalid value for the 'x' option` line).
pub fn run_config(opts: &Options) -> Result<RunConfig, String> {
    let oltp_client = opts.str("oltp_client").trim();
    if oltp_client != "native" && oltp_client != "lua" {
        return Err(format!("FATAL: Invalid value for --oltp-client: '{oltp_client}' (use native or lua)"));
    }
    let threads = opts.int("threads");
    if threads <= 0 || threads > 1_000_000 {
        return Err(format!("FATAL: Invalid value for --threads: {threads}."));
    }
    let time = opts.int("time");
    if !(0..=MAX_SECONDS).contains(&time) {
        return Err(format!(
            "FATAL: Invalid value for --time: {time}. Use 0 for no time limit or a number of seconds."
        ));
    }
    let events = opts.int("events");
    if events < 0 {
        return Err(format!("FATAL: Invalid value for --events: {events}. Use 0 for no event limit."));
    }
    let warmup = opts.int("warmup_time");
    if !(0..=MAX_SECONDS).contains(&warmup) {
        return Err(format!("FATAL: Invalid value for --warmup-time: {warmup}. Use a number of seconds, or 0."));
    }
    let rate = opts.double("rate");
    if rate < 0.0 || !rate.is_finite() {
        return Err(format!(
            "FATAL: Invalid value for --rate: {}. Use a positive number of events per second, or 0 for no rate limit.",
            opts.raw("rate")
        ));
    }
    let ri = opts.double("report_interval");
    // Below a millisecond the interval would round to nothing (no reports).
    if ri != 0.0 && !(0.001..=MAX_SECONDS as f64).contains(&ri) {
        return Err(format!(
            "FATAL: Invalid value for --report-interval: {}. Use a number of seconds from 0.001 to {MAX_SECONDS}, or 0 for none.",
            opts.raw("report_interval")
        ));
    }
    let mut checkpoints = Vec::new();
    for c in opts.list("report_checkpoints") {
        match c.parse::<u64>() {
            Ok(v) if v <= MAX_SECONDS as u64 => checkpoints.push(v),
            _ => {
                return Err(format!(
                    "FATAL: Invalid value for --report-checkpoints: '{c}' (whole seconds from 0 to {MAX_SECONDS} expected)."
                ))
            }
        }
    }
    checkpoints.sort_unstable();
    let forced = opts.str("forced_shutdown").trim().to_string();
    let bad_forced = |s: &str| {
        format!("FATAL: Invalid value for --forced-shutdown: {s} (use off, N seconds or N%, at most {MAX_SECONDS} seconds).")
    };
    let grace = |secs: f64, s: &str| match Duration::try_from_secs_f64(secs) {
        Ok(d) if d.as_secs() <= MAX_SECONDS as u64 => Ok(d),
        _ => Err(bad_forced(s)),
    };
    let forced_grace = match forced.as_str() {
        "off" | "" => None,
        "on" => Some(grace(time as f64 * 0.05, "on")?),
        s if s.ends_with('%') => match s[..s.len() - 1].parse::<f64>() {
            Ok(p) if p >= 0.0 => Some(grace(time as f64 * p / 100.0, s)?),
            _ => return Err(bad_forced(s)),
        },
        s => match s.parse::<f64>() {
            Ok(v) if v >= 0.0 => Some(grace(v, s)?),
            _ => return Err(bad_forced(s)),
        },
    };
    let init_timeout = opts.int("thread_init_timeout");
    if !(1..=MAX_SECONDS).contains(&init_timeout) {
        return Err(format!(
            "FATAL: Invalid value for --thread-init-timeout: {init_timeout}. Use a number of seconds, at least 1."
        ));
    }
    check_rand_options(opts)?;
    let mut percentiles = Vec::new();
    for p in opts.list("percentile") {
        match p.parse::<f64>() {
            Ok(v) if (0.0..=100.0).contains(&v) => {
                if v > 0.0 {
                    percentiles.push(v)
                }
            }
            _ => {
                return Err(format!(
                    "FATAL: Invalid value for --percentile: {p} (numbers in 0..100, e.g. 95,99,99.9; 0 disables)"
                ))
            }
        }
    }
    let histogram = opts.bool("histogram");
    if histogram && percentiles.is_empty() {
        return Err("FATAL: --histogram cannot be used with --percentile=0".into());
    }
    let format = Format::parse(opts.str("format")).ok_or_else(|| {
        format!("FATAL: Invalid value for --format: '{}' (use text, json, csv or legacy)", opts.str("format"))
    })?;
    let init_timeout = init_timeout as u64;
    let (client_threads, client_threads_refused) = client_threads(opts)?;
    let shard = crate::shard::from_options(opts, threads as u32, events as u64, rate)?;
    if shard.is_some() && !checkpoints.is_empty() {
        return Err("FATAL: --report-checkpoints cannot be used with --shard: a checkpoint starts a shard's figures afresh, and the merged report covers the whole run".into());
    }
    Ok(RunConfig {
        threads: shard.as_ref().map_or(threads as u32, |s| s.threads),
        time: Duration::from_secs(time as u64),
        events: shard.as_ref().map_or(events as u64, |s| s.events),
        warmup: Duration::from_secs(warmup as u64),
        rate: shard.as_ref().map_or(rate, |s| s.rate),
        report_interval: Duration::from_secs_f64(ri),
        checkpoints,
        forced_grace,
        percentiles,
        histogram,
        init_timeout: Duration::from_secs(init_timeout),
        stack_size: (opts.int("thread_stack_size").max(0) as usize).max(256 * 1024),
        format,
        rate_backlog: 1_000_000,
        client_threads,
        client_threads_auto: opts.str("client_threads").trim() == "auto",
        client_threads_refused,
        debug: opts.bool("debug"),
        validate: opts.bool("validate"),
        // Given empty is an address that cannot be listened on (refused by
        // `metrics::bind`), not "no endpoint": the user asked for one.
        metrics_listen: opts.given("metrics_listen").then(|| opts.str("metrics_listen").trim().to_string()),
        shard,
    })
}

/// The distribution parameters: sysbench takes any number, and percentages
/// above 100 or a Pareto h outside (0, 1) give numbers outside the range
/// asked for, or NaN.
fn check_rand_options(opts: &Options) -> Result<(), String> {
    let iter = opts.int("rand_spec_iter");
    if !(1..=MAX_SPEC_ITER).contains(&iter) {
        return Err(format!("FATAL: Invalid value for --rand-spec-iter: {iter}. Use 1 to {MAX_SPEC_ITER} draws."));
    }
    for name in ["rand_spec_pct", "rand_spec_res"] {
        let v = opts.double(name);
        if !(0.0..=100.0).contains(&v) {
            return Err(format!(
                "FATAL: Invalid value for --{}: {}. Use a percentage, 0 to 100.",
                name.replace('_', "-"),
                opts.raw(name)
            ));
        }
    }
    let h = opts.double("rand_pareto_h");
    if !(h > 0.0 && h < 1.0) {
        return Err(format!(
            "FATAL: Invalid value for --rand-pareto-h: {}. Use a number between 0 and 1 (exclusive).",
            opts.raw("rand_pareto_h")
        ));
    }
    let s = opts.double("rand_zipfian_exp");
    if s < 0.0 {
        return Err(format!(
            "FATAL: Invalid value for --rand-zipfian-exp: {}. Use 0 (uniform) or more.",
            opts.raw("rand_zipfian_exp")
        ));
    }
    Ok(())
}

/// From this many clients on, `--client-threads=auto` multiplexes native
/// PostgreSQL clients of a built-in workload (see [`workers_for_run`]).
pub const AUTO_MULTIPLEX_FROM: u32 = 1024;

/// The OS threads a run's clients are multiplexed over (0: a thread per
/// client). `--client-threads=auto` multiplexes over one worker per CPU
/// only where that was measured to win and is safe: from
/// [`AUTO_MULTIPLEX_FROM`] clients, native clients of a built-in workload
/// (nothing blocks outside the driver's socket waits) on PostgreSQL's
/// native client, where every session is a server process and a thread per
/// client doubles the tasks the kernel schedules (point select at 4096
/// clients: 2.4x the QPS of a thread per client; at 1024: 2.6x, read-only
/// 1.2x). Below that the models trade places by workload (docs/performance.md,
/// "Which client model auto chooses"); on MariaDB threads win; a script may
/// block outside the driver, which would stall every client of its worker;
/// under --rate a multiplexed client polls the arrival queue (every 200 us),
/// which would add to the latencies.
fn workers_for_run(cfg: &RunConfig, opts: &Options, native_builtin: bool) -> u32 {
    if !cfg.client_threads_auto {
        return cfg.client_threads;
    }
    let pg_native = opts.str("db_driver") == "pgsql" && crate::driver::pgsql::native_protocol(opts);
    if native_builtin && pg_native && cfg.rate == 0.0 && cfg.threads >= AUTO_MULTIPLEX_FROM {
        return thread::available_parallelism().map_or(2, |n| n.get() as u32);
    }
    0
}

/// `--client-threads`: `auto` (0 here: [`workers_for_run`] decides per
/// run), 0 (one OS thread per client), or the number of workers to
/// multiplex the clients over. Drivers that block inside a library would
/// stall every client of a worker: an explicit number falls back to
/// threads for them (returned second, for a warning).
fn client_threads(opts: &Options) -> Result<(u32, Option<u32>), String> {
    let v = opts.str("client_threads").trim();
    if v == "auto" {
        return Ok((0, None));
    }
    let n = v.parse::<u32>().ok().filter(|n| *n <= 1_000_000).ok_or_else(|| {
        format!("FATAL: Invalid value for --client-threads: '{v}' (use auto, 0 for one thread per client, or a number of threads up to 1000000)")
    })?;
    let native = match opts.str("db_driver") {
        "mysql" => crate::driver::mysql::native_protocol(opts),
        "pgsql" => crate::driver::pgsql::native_protocol(opts),
        _ => false,
    };
    if n > 0 && !native {
        return Ok((0, Some(n)));
    }
    Ok((n, None))
}
