//! `--report-interval` lines at thousands of clients (MariaDB at 4096,
//! PostgreSQL at 1024: a backend process per client), checked against the
//! server's own counters (issue 20, item 5): every line on time, labelled by
//! its interval, none missing or repeated, and counting the events of its
//! interval, on MariaDB and PostgreSQL servers the test starts itself.
//!
//! The server's count of point selects is read in a loop during the run
//! (MariaDB `Com_stmt_execute`: the workload runs prepared statements and
//! nothing else does here; PostgreSQL `pg_stat_statements.calls`, which,
//! unlike `pg_stat_database`, a backend updates as each statement ends rather
//! than once a second). Each interval's count must lie between what the
//! readings around its two ticks allow, give or take one statement per
//! client in flight at each boundary. The defect this guards against was of
//! another order: lines seconds late, labels skipped and repeated, and
//! counts several times the server's.

mod common;

use common::{dbbench_in, have_server_binaries, tempdir, Background, Managed};
use std::time::{Duration, Instant};

/// One run at a time: two runs of hundreds of clients side by side on a small host
/// would make each other's lines late and the server samples slow.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One interval line as it arrived.
struct Tick {
    at: Instant,
    label: u64,
    events: f64,
    /// `thds:`, the clients running at the tick.
    threads: u64,
}

/// One reading of the server's counter: a value the counter held at some
/// moment between `sent` and `got`.
#[derive(Clone, Copy)]
struct Reading {
    sent: Instant,
    value: u64,
    got: Instant,
}

/// Reads the server's counter in a loop on its own thread while the run
/// goes on, so that every tick has readings close before and after it
/// however late the lines arrive. (Reading only when a line arrived made
/// the test assume a steady rate between a tick and a read up to 2.5 s
/// later; at 4096 clients on 2 loaded CPUs the server's rate is anything
/// but steady, and the test failed a correct line.)
struct Sampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Reading>>,
}

impl Sampler {
    fn start(mut counter: impl FnMut() -> u64 + Send + 'static) -> Sampler {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        // The first reading before the run starts, so that it bounds the
        // first interval from below.
        let sent = Instant::now();
        let value = counter();
        let first = Reading { sent, value, got: Instant::now() };
        let thread = std::thread::spawn(move || {
            let mut readings = vec![first];
            while !flag.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let value = counter();
                readings.push(Reading { sent, value, got: Instant::now() });
                std::thread::sleep(Duration::from_millis(20));
            }
            // One reading after the run has ended.
            let sent = Instant::now();
            let value = counter();
            readings.push(Reading { sent, value, got: Instant::now() });
            readings
        });
        Sampler { stop, thread }
    }

    fn finish(self) -> Vec<Reading> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().expect("the sampler thread")
    }
}

/// Bounds on how much the counter rose between the instants `a` and `b`
/// (a < b), from readings taken around them: at most (first value read
/// wholly after b) − (last value read wholly before a), at least (last
/// value read wholly before b) − (first value read wholly after a).
/// None where no reading qualifies.
fn rise_bounds(readings: &[Reading], a: Instant, b: Instant) -> (Option<u64>, Option<u64>) {
    let last_before = |t: Instant| readings.iter().rev().find(|r| r.got <= t).map(|r| r.value);
    let first_after = |t: Instant| readings.iter().find(|r| r.sent >= t).map(|r| r.value);
    let most = first_after(b).zip(last_before(a)).map(|(hi, lo)| hi - lo);
    let least = if a < b { last_before(b).zip(first_after(a)).map(|(hi, lo)| hi.saturating_sub(lo)) } else { None };
    (least, most)
}

/// `[ 3s ] thds: 512 tps: 20123.00 qps: ...` → (3, 20123.0, 512).
fn parse_line(l: &str) -> Option<(u64, f64, u64)> {
    let label = l.strip_prefix("[ ")?.split('s').next()?.trim().parse().ok()?;
    let tps = l.split("tps: ").nth(1)?.split_whitespace().next()?.parse().ok()?;
    let threads = l.split("thds: ").nth(1)?.split_whitespace().next()?.parse().ok()?;
    Some((label, tps, threads))
}

/// Runs oltp_point_select at `clients` clients for `secs` seconds with
/// one-second reports on `server` and checks every line against `counter`.
fn check_intervals(
    name: &str,
    server: &Managed,
    clients: u32,
    secs: u64,
    counter: impl FnMut() -> u64 + Send + 'static,
) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempdir(&format!("intervals-{name}"));
    let base = server.driver_args();
    let mut args: Vec<&str> = vec!["oltp_point_select"];
    args.extend(base.iter().map(String::as_str));
    let prepare = [args.clone(), vec!["prepare", "--tables=1", "--table-size=1000"]].concat();
    let r = dbbench_in(&dir, &prepare);
    assert_eq!(r.code, 0, "prepare: {}{}", r.stdout, r.stderr);
    let threads = format!("--threads={clients}");
    let time = format!("--time={secs}");
    let run = [args, vec!["run", "--tables=1", "--table-size=1000", &threads, &time, "--report-interval=1"]].concat();

    let sampler = Sampler::start(counter);
    let bg = Background::start(&dir, &run);
    let mut started = None;
    let mut ticks = Vec::new();
    let mut header = String::new();
    while let Some((at, line)) = bg.line(Duration::from_secs(60)) {
        if started.is_none() {
            header.push_str(&line);
            header.push('\n');
        }
        if line.starts_with("Threads started!") {
            started = Some(at);
        }
        if let Some((label, events, threads)) = parse_line(&line) {
            ticks.push(Tick { at, label, events, threads });
        }
        if line.starts_with("SQL statistics:") {
            break;
        }
    }
    let (r, _) = bg.finish(Duration::from_secs(120));
    let readings = sampler.finish();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let started = started.expect("a 'Threads started!' line");
    // The client model --client-threads=auto chose, as the header says:
    // native clients of the built-in everywhere; multiplexed over one thread
    // per CPU for 1024 or more native PostgreSQL clients only.
    assert!(header.contains("Clients: native oltp_point_select "), "{name}: {header}");
    assert_eq!(header.contains("Clients multiplexed over "), name == "postgresql", "{name}: {header}");

    // On time as dbbench itself measured it (when each line was written,
    // which this test's own reader, queued behind thousands of clients for
    // the CPU, cannot see): where dbbench may raise its reporting thread's
    // priority (root here), no line more than a second late. Before the
    // reporting thread was raised ahead of the clients' release and lent
    // clients a real-time priority, and before clients grew their
    // statistics outside their locks, lines at 1024 PostgreSQL clients
    // came up to 7 s late on an otherwise idle host.
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let latest = r.stderr.lines().find_map(|l| {
            let rest = l.split("interval reports were printed late, up to ").nth(1)?;
            rest.split('s').next()?.parse::<f64>().ok()
        });
        if let Some(latest) = latest {
            assert!(latest <= 1.0, "{name}: a line was printed {latest}s after its interval ended: {}", r.stderr);
        }
    }

    // Labels 1, 2, 3, ... each once (a run may end with lines for the events
    // that finished after --time).
    let labels: Vec<u64> = ticks.iter().map(|t| t.label).collect();
    assert!(labels.len() as u64 >= secs, "{name}: lines {labels:?}");
    assert!(labels.iter().enumerate().all(|(i, l)| *l == i as u64 + 1), "{name}: labels {labels:?}");
    // On time: line k arrives k seconds after the clients started, give or
    // take what a loaded 2-CPU host does to any process: at load averages
    // of hundreds (thousands of clients plus other builds) lines were seen
    // up to 2.5 s late, and the test's own reader as much as 0.16 s behind
    // on the "Threads started!" line. The defect was of another order: the
    // first line 7 s (up to 21 s) late, then nothing until the end.
    // The line at --time is left out: it comes when thousands of clients
    // end together, which can hold the process up (its figures are checked
    // below all the same).
    // Every client runs until --time: each line before it says so, however
    // late it was printed (they were once counted when printed: a line
    // printed after the clients had ended said `thds: 0`).
    for t in ticks.iter().take(secs as usize - 1) {
        assert_eq!(t.threads, clients as u64, "{name}: line {} thds", t.label);
    }
    for t in ticks.iter().take(secs as usize - 1) {
        let late = t.at.duration_since(started).as_secs_f64() - t.label as f64;
        assert!((-0.5..3.0).contains(&late), "{name}: line {} arrived {late:+.3}s off its tick", t.label);
    }
    // Each interval's events against the server's count over the same
    // interval. dbbench counts an event when it ends at the client, the
    // server when the statement starts (MariaDB) or ends (PostgreSQL),
    // always before the client sees it end: up to one statement per client
    // is in flight across each boundary. dbbench's ticks fall between its
    // start and the "Threads started!" line the test read (up to 0.16 s
    // apart on a loaded host): the windows are widened and narrowed by
    // `skew` to cover that. The defect this guards against counted several
    // times the server's figure.
    // dbbench's ticks come before the test's view of them (it prints the
    // line after its start): a clean-clone CI run read that line more than
    // 0.3 s late and failed a correct last interval, so the windows reach
    // a second earlier. Still several times too tight for the defect.
    let skew = Duration::from_millis(300);
    let reader_lag = Duration::from_millis(1000);
    let tick_at = |label: u64| started + Duration::from_secs(label);
    // The first reading was taken before dbbench started, so it bounds
    // every interval from below, the first included: native clients connect
    // 4096 clients in less than the windows' second of widening, so no
    // other reading may come before the first one's widened start.
    let before_run = readings[0].got;
    for t in &ticks[..secs as usize] {
        let (a, b) = (tick_at(t.label - 1), tick_at(t.label));
        let early = skew + reader_lag;
        let (_, most) = rise_bounds(&readings, a.checked_sub(early).unwrap_or(a).max(before_run), b + skew);
        let (least, _) = rise_bounds(&readings, a + skew, b.checked_sub(early).unwrap_or(b));
        let slack = clients as f64;
        let most = most.unwrap_or_else(|| panic!("{name}: no server readings around interval {}", t.label));
        assert!(
            t.events <= most as f64 + slack,
            "{name}: interval {} counted {} events, the server at most {most} in that second widened by {skew:?} (+{slack} in flight)",
            t.label,
            t.events
        );
        if let Some(least) = least {
            assert!(
                t.events + slack >= least as f64,
                "{name}: interval {} counted {} events, the server at least {least} in that second narrowed by {skew:?} (−{slack} in flight)",
                t.label,
                t.events
            );
        }
    }
    // And the whole run exactly: every point select the server ran is one
    // event of the report.
    let total = r.stdout.lines().find_map(|l| l.strip_prefix("    total number of events:")).map(|v| v.trim());
    let total: u64 = total.and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name}: no total in {}", r.stdout));
    let (before, after) = (readings[0].value, readings[readings.len() - 1].value);
    assert_eq!(after - before, total, "{name}: server statements vs events");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mariadb_interval_lines_match_the_servers_counters_at_4096_clients() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("intervals-mariadb-srv");
    let server = Managed::start(&dir.join("srv"), "mariadb", &["--max-connections=4200"]);
    let mut con = server.mysql();
    let counter = move || {
        use mysql::prelude::Queryable;
        let row: Option<(String, u64)> = con.query_first("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'").unwrap();
        row.expect("Com_stmt_execute").1
    };
    check_intervals("mariadb", &server, 4096, 3, counter);
}

#[test]
fn postgresql_interval_lines_match_the_servers_counters_at_1024_clients() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("intervals-pgsql-srv");
    let server = Managed::start(
        &dir.join("srv"),
        "postgresql",
        &["shared_preload_libraries=pg_stat_statements", "max_connections=1100", "shared_buffers=32MB"],
    );
    // The benchmark account is no superuser; it sees its own statements.
    server.psql_admin("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    let mut con = server.postgres();
    let counter = move || {
        let row = con
            .query_one(
                "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements WHERE query LIKE 'SELECT c FROM sbtest1 WHERE id=%'",
                &[],
            )
            .unwrap();
        row.get::<_, i64>(0) as u64
    };
    check_intervals("postgresql", &server, 1024, 6, counter);
}
