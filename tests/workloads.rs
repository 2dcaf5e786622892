//! Every built-in workload through prepare/run/cleanup against real
//! databases: embedded SQLite always, MariaDB and PostgreSQL when the test
//! servers are up (required under CI). Statement mixes are checked by
//! counting, and prepared data by seed.

mod common;
use common::*;

/// Per-event (reads, writes, other).
type Mix = (u64, u64, u64);

/// (workload, per-event mix) at defaults with a prepared table; None where
/// the mix depends on the data (delete/insert-once).
const MIXES: &[(&str, Option<Mix>)] = &[
    ("oltp_read_only", Some((14, 0, 2))),
    ("oltp_read_write", Some((14, 4, 2))),
    ("oltp_write_only", Some((0, 4, 2))),
    ("oltp_point_select", Some((1, 0, 0))),
    ("oltp_update_index", Some((0, 1, 0))),
    ("oltp_update_non_index", Some((0, 1, 0))),
    ("oltp_insert", Some((0, 1, 0))),
    ("oltp_delete", None),
    ("select_random_points", Some((1, 0, 0))),
    ("select_random_ranges", Some((1, 0, 0))),
    ("oltp_simple", Some((1, 0, 0))),
    ("select", Some((1, 0, 0))),
    ("oltp_complex_ro", Some((14, 0, 2))),
    ("oltp_complex_rw", Some((14, 4, 2))),
    ("update_index", Some((0, 1, 0))),
    ("update_non_index", Some((0, 1, 0))),
    ("insert", Some((0, 1, 0))),
    ("delete", None),
];

const EVENTS: u64 = 50;

/// prepare, run --events=50, cleanup for every workload; checks the mixes.
fn all_workloads(base: &[String], dir: &std::path::Path) {
    for (w, mix) in MIXES {
        // Uniform ids: with the 'special' default, an UPDATE may hit the row
        // the previous one just changed to the same value and count as other.
        let common = ["--table-size=1000", "--rand-type=uniform", "--rand-seed=7"];
        let mut a = args(base, &[w, "prepare"]);
        a.extend(common);
        let r = dbbench_in(dir, &a);
        assert_eq!(r.code, 0, "{w} prepare failed:\n{}{}", r.stdout, r.stderr);

        let ev = format!("--events={EVENTS}");
        let mut a = args(base, &[w, "run", &ev, "--time=0", "--threads=1"]);
        a.extend(common);
        let r = dbbench_in(dir, &a);
        assert_eq!(r.code, 0, "{w} run failed:\n{}{}", r.stdout, r.stderr);
        assert_eq!(r.number("total number of events:"), Some(EVENTS as f64), "{w}:\n{}", r.stdout);
        let (rd, wr, ot) = r.rwo();
        match mix {
            Some((er, ew, eo)) => {
                assert_eq!((rd, wr, ot), (er * EVENTS, ew * EVENTS, eo * EVENTS), "{w} statement mix")
            }
            // One DELETE per event: a write while the row exists, else other.
            None => assert_eq!(rd + wr + ot, EVENTS, "{w} statement count"),
        }
        assert_eq!(r.number("ignored errors:"), Some(0.0), "{w}:\n{}", r.stdout);

        let mut a = args(base, &[w, "cleanup"]);
        a.extend(common);
        let r = dbbench_in(dir, &a);
        assert_eq!(r.code, 0, "{w} cleanup failed:\n{}{}", r.stdout, r.stderr);
    }
    // bulk_insert: serial prepare of one table per thread, rows in thread_done.
    for cmd in ["prepare", "run", "cleanup"] {
        let r = dbbench_in(dir, &args(base, &["bulk_insert", cmd, "--threads=2", "--events=2000", "--time=0"]));
        assert_eq!(r.code, 0, "bulk_insert {cmd}:\n{}{}", r.stdout, r.stderr);
    }
}

/// The documented sysbench figure: oltp_read_write, 100 events at defaults.
fn read_write_100(base: &[String], dir: &std::path::Path) {
    let r =
        dbbench_in(dir, &args(base, &["oltp_read_write", "prepare", "--tables=2", "--table-size=2000", "--threads=2"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Creating table 'sbtest1'..."), "{}", r.stdout);
    assert!(r.stdout.contains("Inserting 2000 records into 'sbtest2'"), "{}", r.stdout);
    let r = dbbench_in(
        dir,
        &args(
            base,
            &[
                "oltp_read_write",
                "run",
                "--tables=2",
                "--table-size=2000",
                "--events=100",
                "--time=0",
                "--rand-type=uniform",
            ],
        ),
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.rwo(), (1400, 400, 200), "{}", r.stdout);
    assert!(r.stdout.contains("    transactions:                        100    ("), "{}", r.stdout);
    let r = dbbench_in(dir, &args(base, &["oltp_read_write", "cleanup", "--tables=2"]));
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("Dropping table 'sbtest2'..."), "{}", r.stdout);
}

#[test]
fn sqlite_all_workloads() {
    let dir = tempdir("sqlite-all");
    all_workloads(&["--sqlite-db=all.sqlite".to_string()], &dir);
    let _ = std::fs::remove_dir_all(dir);
}

/// SQLite blocks inside its library, so it cannot be multiplexed: an
/// explicit `--client-threads` says so and runs one thread per client.
#[test]
fn sqlite_client_threads_fall_back_with_a_warning() {
    let dir = tempdir("sqlite-ct");
    assert_eq!(dbbench_in(&dir, &["oltp_point_select", "prepare", "--table-size=100"]).code, 0);
    let r = dbbench_in(
        &dir,
        &[
            "oltp_point_select",
            "run",
            "--table-size=100",
            "--threads=2",
            "--events=30",
            "--time=0",
            "--client-threads=2",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Once (the run's configuration is built twice: before and after the
    // script's own options).
    assert_eq!(
        r.stdout.matches("WARNING: --client-threads=2 multiplexes only the native clients").count(),
        1,
        "{}",
        r.stdout
    );
    assert_eq!(r.number("total number of events:"), Some(30.0), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_read_write_counts() {
    let dir = tempdir("sqlite-rw");
    read_write_100(&[], &dir); // the default driver is the embedded SQLite
    assert!(dir.join("dbbench.sqlite").exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_prepare_is_deterministic_by_seed() {
    let dir = tempdir("sqlite-seed");
    let dump = |file: &str, seed: &str| {
        let db = format!("--sqlite-db={file}");
        let r = dbbench_in(
            &dir,
            &["oltp_read_only", "prepare", &db, "--tables=3", "--threads=2", "--table-size=500", seed],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let c = rusqlite::Connection::open(dir.join(file)).unwrap();
        let mut rows = Vec::new();
        for t in 1..=3 {
            let s: String = c
                .query_row(&format!("SELECT group_concat(id || ':' || k || ':' || c || ':' || pad, ',') FROM (SELECT * FROM sbtest{t} ORDER BY id)"), [], |r| r.get(0))
                .unwrap();
            rows.push(s);
        }
        rows
    };
    let a = dump("a.sqlite", "--rand-seed=42");
    let b = dump("b.sqlite", "--rand-seed=42");
    let c = dump("c.sqlite", "--rand-seed=43");
    assert_eq!(a, b, "same seed must give identical data");
    assert_ne!(a, c, "another seed must give other data");
    assert!(a[0].split(',').count() == 500);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_concurrent_writers_count_busy_as_errors_not_failures() {
    let dir = tempdir("sqlite-busy");
    let db = "--sqlite-db=busy.sqlite";
    let r = dbbench_in(&dir, &["oltp_write_only", "prepare", db, "--table-size=100"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let r = dbbench_in(
        &dir,
        &["oltp_write_only", "run", db, "--table-size=100", "--threads=4", "--time=2", "--sqlite-busy-timeout=0"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.number("transactions:").unwrap() > 0.0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_missing_table_is_a_clear_fatal_error() {
    let dir = tempdir("sqlite-missing");
    let r = dbbench_in(&dir, &["oltp_point_select", "run", "--events=10", "--time=0"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("no such table: sbtest1"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn mysql_all_workloads() {
    let Some(base) = mysql_db("dbb_all") else { return };
    all_workloads(&base, &tempdir("mysql-all"));
}

#[test]
fn mysql_read_write_counts() {
    let Some(base) = mysql_db("dbb_rw") else { return };
    read_write_100(&base, &tempdir("mysql-rw"));
}

#[test]
fn mysql_myisam_and_legacy_spellings() {
    let Some(base) = mysql_db("dbb_myisam") else { return };
    let dir = tempdir("mysql-myisam");
    // The seeds' 0.5-era command line, unchanged.
    let legacy = [
        "--oltp-table-size=1000",
        "--mysql-table-engine=MyISAM",
        "--mysql-engine-trx=no",
        "--myisam-max-rows=50000000",
        "--rand-seed=303",
    ];
    let mut a = args(&base, &["--test=oltp_complex_ro", "prepare"]);
    a.extend(legacy);
    let r = dbbench_in(&dir, &a);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let engine = mysql_query(
        "dbb_myisam",
        "SELECT engine FROM information_schema.tables WHERE table_schema='dbb_myisam' AND table_name='sbtest'",
    );
    assert_eq!(engine, vec!["MyISAM"]);
    // --myisam-max-rows is the table's MAX_ROWS, as in 0.5: MyISAM sizes its
    // row pointers by it (0.5's default, 1000000, makes a table that is full
    // at 16.7M rows: the seeds' 20M-row key cache study needs 50000000).
    let limits = mysql_query(
        "dbb_myisam",
        "SELECT concat(create_options, ' ', max_data_length) FROM information_schema.tables WHERE table_schema='dbb_myisam' AND table_name='sbtest'",
    );
    // 189-byte rows, 4-byte row pointers (the default's 3 bytes address 189 × 2^24 − 1 bytes).
    assert_eq!(limits, vec![format!("max_rows=50000000 {}", 189 * (1u64 << 32) - 1)]);
    let mut a = args(&base, &["--test=oltp_complex_ro", "run", "--num-threads=2", "--max-requests=40", "--max-time=0"]);
    a.extend(legacy);
    let r = dbbench_in(&dir, &a);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.rwo(), (14 * 40, 0, 2 * 40), "{}", r.stdout);
    assert!(r.stdout.contains("WARNING: --num-threads is deprecated"));
    assert_eq!(
        dbbench_in(&dir, &args(&base, &["oltp_read_only", "prepare", "--tables=2", "--table-size=500"])).code,
        0
    );
    let r =
        dbbench_in(&dir, &args(&base, &["oltp_read_only", "prewarm", "--tables=2", "--table-size=500", "--threads=2"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Prewarming table sbtest2"), "{}", r.stdout);
    assert_eq!(dbbench_in(&dir, &args(&base, &["oltp_read_only", "cleanup", "--tables=2"])).code, 0);
    let mut a = args(&base, &["--test=oltp_complex_ro", "cleanup"]);
    a.extend(legacy);
    assert_eq!(dbbench_in(&dir, &a).code, 0);
}

/// Prepares two tables into three fresh server databases (seeds 5, 5, 6)
/// and compares a checksum of the second table: equal for equal seeds,
/// different otherwise. `db_args` creates a database (None: no server,
/// test skipped); `query` returns the checksum by `sql`.
fn prepare_is_deterministic_by_seed(
    db_args: fn(&str) -> Option<Vec<String>>,
    query: fn(&str, &str) -> Vec<String>,
    sql: &str,
) {
    let checksum = |db: &str, seed: &str| {
        let base = db_args(db)?;
        let r = dbbench(&args(
            &base,
            &["oltp_read_only", "prepare", "--tables=2", "--threads=2", "--table-size=500", seed],
        ));
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        Some(query(db, sql))
    };
    let Some(a) = checksum("dbb_seed_a", "--rand-seed=5") else { return };
    let b = checksum("dbb_seed_b", "--rand-seed=5").unwrap();
    let c = checksum("dbb_seed_c", "--rand-seed=6").unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn mysql_prepare_is_deterministic_by_seed() {
    prepare_is_deterministic_by_seed(
        mysql_db,
        mysql_query,
        "SELECT MD5(GROUP_CONCAT(id, k, c, pad ORDER BY id)) FROM sbtest2",
    );
}

#[test]
fn mysql_bad_connections_fail_with_one_clear_line() {
    let Some(base) = mysql_db("dbb_conn") else { return };
    let port = std::env::var("DBBENCH_TEST_MYSQL_PORT").unwrap();
    let wrong_pw = [
        "--db-driver=mysql",
        "--mysql-host=127.0.0.1",
        &format!("--mysql-port={port}"),
        "--mysql-user=sbpass",
        "--mysql-password=wrong",
        "oltp_point_select",
        "run",
        "--time=1",
    ];
    let r = dbbench(&wrong_pw);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("1045"), "{}", r.stdout);
    assert!(!r.stdout.contains("panicked"));
    let r = dbbench(&[
        "--db-driver=mysql",
        "--mysql-host=127.0.0.1",
        "--mysql-port=1",
        "oltp_point_select",
        "run",
        "--time=1",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("FATAL"), "{}", r.stdout);
    // Missing table: the server's code and message.
    let r = dbbench(&args(&base, &["oltp_point_select", "run", "--events=5", "--time=0"]));
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("1146"), "{}", r.stdout);
}

#[test]
fn mysql_many_clients_and_rate() {
    let Some(base) = mysql_db("dbb_many") else { return };
    let dir = tempdir("mysql-many");
    assert_eq!(dbbench_in(&dir, &args(&base, &["oltp_point_select", "prepare", "--table-size=1000"])).code, 0);
    let r = dbbench_in(
        &dir,
        &args(
            &base,
            &[
                "oltp_point_select",
                "run",
                "--table-size=1000",
                "--threads=200",
                "--time=2",
                "--rate=2000",
                "--report-interval=1",
            ],
        ),
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("queue length:"), "{}", r.stdout);
    let tps = r.number("transactions:").unwrap();
    assert!(tps > 1000.0, "{}", r.stdout);
}

#[test]
fn pgsql_all_workloads() {
    let Some(base) = pgsql_db("dbb_all") else { return };
    all_workloads(&base, &tempdir("pgsql-all"));
}

#[test]
fn pgsql_read_write_counts() {
    let Some(base) = pgsql_db("dbb_rw") else { return };
    read_write_100(&base, &tempdir("pgsql-rw"));
}

#[test]
fn pgsql_prepare_is_deterministic_by_seed() {
    prepare_is_deterministic_by_seed(
        pgsql_db,
        pgsql_query,
        "SELECT md5(string_agg(id || ':' || k || c || pad, ',' ORDER BY id)) FROM sbtest2",
    );
}

#[test]
fn pgsql_deadlocks_restart_events_and_count_as_errors() {
    let Some(base) = pgsql_db("dbb_dead") else { return };
    let dir = tempdir("pgsql-dead");
    assert_eq!(dbbench_in(&dir, &args(&base, &["oltp_write_only", "prepare", "--table-size=10"])).code, 0);
    // 8 clients updating 10 rows in transactions: deadlocks and restarts.
    let r = dbbench_in(&dir, &args(&base, &["oltp_write_only", "run", "--table-size=10", "--threads=8", "--time=3"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.number("transactions:").unwrap() > 0.0);
}

#[test]
fn pgsql_bad_connections_fail_with_one_clear_line() {
    let Some(base) = pgsql_db("dbb_conn") else { return };
    let port = std::env::var("DBBENCH_TEST_PGSQL_PORT").unwrap();
    let r = dbbench(&[
        "--db-driver=pgsql",
        "--pgsql-host=127.0.0.1",
        &format!("--pgsql-port={port}"),
        "--pgsql-user=sbpass",
        "--pgsql-password=wrong",
        "oltp_point_select",
        "run",
        "--time=1",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("password authentication failed"), "{}", r.stdout);
    let r = dbbench(&args(&base, &["oltp_point_select", "run", "--events=5", "--time=0"]));
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("42P01"), "{}", r.stdout);
}

/// Runs `run_args` in the background and, one second in, calls `kill` (which
/// ends the benchmark's server sessions); returns the run's outcome.
fn run_while_killing(dir: &std::path::Path, run_args: &[&str], kill: impl FnOnce()) -> Run {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_dbbench"))
        .args(run_args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start dbbench");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    kill();
    let out = child.wait_with_output().expect("wait for dbbench");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn mysql_lost_connections_reconnect_when_listed() {
    let Some(base) = mysql_db("dbb_reconn") else { return };
    let dir = tempdir("mysql-reconn");
    assert_eq!(dbbench_in(&dir, &args(&base, &["oltp_read_write", "prepare", "--table-size=1000"])).code, 0);
    // Both client models: OS thread per client, and both clients sharing one
    // OS thread (the reconnect's back-off sleep must not block the other).
    for model in ["--client-threads=0", "--client-threads=1"] {
        let a = args(
            &base,
            &[
                "oltp_read_write",
                "run",
                "--table-size=1000",
                "--threads=2",
                "--time=4",
                "--mysql-ignore-errors=1213,1205,2013,2006",
                model,
            ],
        );
        let r = run_while_killing(&dir, &a, || {
            let ids = mysql_query(
                "dbb_reconn",
                "SELECT id FROM information_schema.processlist WHERE db = 'dbb_reconn' AND id <> CONNECTION_ID()",
            );
            assert!(!ids.is_empty(), "no benchmark sessions to kill");
            for id in ids {
                let _ = std::panic::catch_unwind(|| mysql_query("dbb_reconn", &format!("KILL {id}")));
            }
        });
        assert_eq!(r.code, 0, "{model}: {}{}", r.stdout, r.stderr);
        assert!(r.number("reconnects:").unwrap() >= 1.0, "{model}: {}", r.stdout);
        assert!(r.number("ignored errors:").unwrap() >= 1.0, "{model}: {}", r.stdout);
    }
    // Without 2013 in the list, a lost connection is fatal.
    let a = args(&base, &["oltp_read_write", "run", "--table-size=1000", "--threads=1", "--time=4"]);
    let r = run_while_killing(&dir, &a, || {
        for id in mysql_query(
            "dbb_reconn",
            "SELECT id FROM information_schema.processlist WHERE db = 'dbb_reconn' AND id <> CONNECTION_ID()",
        ) {
            let _ = std::panic::catch_unwind(|| mysql_query("dbb_reconn", &format!("KILL {id}")));
        }
    });
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("FATAL"), "{}", r.stdout);
}

#[test]
fn pgsql_lost_connections_reconnect() {
    let Some(base) = pgsql_db("dbb_reconn") else { return };
    let dir = tempdir("pgsql-reconn");
    assert_eq!(dbbench_in(&dir, &args(&base, &["oltp_read_write", "prepare", "--table-size=1000"])).code, 0);
    // Both client models (the native client multiplexes; the crate's does not).
    for model in ["--client-threads=0", "--client-threads=1"] {
        let a = args(&base, &["oltp_read_write", "run", "--table-size=1000", "--threads=2", "--time=4", model]);
        let r = run_while_killing(&dir, &a, || {
            let n = pgsql_query(
                "sbtest",
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'dbb_reconn'",
            );
            assert_ne!(n, vec!["0".to_string()], "no benchmark sessions to terminate");
        });
        assert_eq!(r.code, 0, "{model}: {}{}", r.stdout, r.stderr);
        assert!(r.number("reconnects:").unwrap() >= 1.0, "{model}: {}", r.stdout);
        assert!(!r.stdout.contains("multiplexes only"), "{model}: {}", r.stdout);
    }
}

#[test]
fn sqlite_concurrent_read_write_transactions_do_not_deadlock() {
    let dir = tempdir("sqlite-rw-conc");
    assert_eq!(dbbench_in(&dir, &["oltp_read_write", "prepare", "--table-size=1000"]).code, 0);
    let r = dbbench_in(&dir, &["oltp_read_write", "run", "--table-size=1000", "--threads=2", "--time=2"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Writers take the write lock at BEGIN, so none has to be restarted.
    assert_eq!(r.number("ignored errors:"), Some(0.0), "{}", r.stdout);
    assert!(r.number("transactions:").unwrap() > 0.0);
    let _ = std::fs::remove_dir_all(dir);
}

/// Clients multiplexed over a few OS threads behave exactly like clients on
/// their own threads: each keeps its own random sequence across
/// suspensions (the checksums depend on every value drawn and every row
/// fetched, and must not depend on the client model), statements are
/// counted the same, and a bad `--client-threads` is one clear line.
#[test]
fn mysql_client_models_agree() {
    let Some(base) = mysql_db("dbb_models") else { return };
    client_models_agree(&base, "mysql-models");
}

/// The same with PostgreSQL's native client.
#[test]
fn pgsql_client_models_agree() {
    let Some(base) = pgsql_db("dbb_models") else { return };
    client_models_agree(&base, "pgsql-models");
}

fn client_models_agree(base: &[String], tag: &str) {
    let dir = tempdir(tag);
    std::fs::write(
        dir.join("models.lua"),
        r#"
function thread_init()
  con = sysbench.sql.driver():connect()
  n, acc = 0, 0
end
function event()
  local v = sysbench.rand.uniform(1, 1000000)
  local row = con:query("SELECT " .. v .. " + 1"):fetch_row()
  acc = (acc * 31 + tonumber(row[1])) % 2147483647
  n = n + 1
  if n == 40 then return true end
end
function thread_done(tid)
  print(string.format("client %d: %d events, checksum %d", tid, n, acc))
  con:disconnect()
end
"#,
    )
    .unwrap();
    let run = |model: &str| {
        let ct = format!("--client-threads={model}");
        let r = dbbench_in(&dir, &args(base, &["models.lua", "run", "--threads=5", "--time=0", "--rand-seed=11", &ct]));
        assert_eq!(r.code, 0, "{model}: {}{}", r.stdout, r.stderr);
        assert!(!r.stdout.contains("multiplexes only"), "{model}: {}", r.stdout);
        let mut lines: Vec<String> =
            r.stdout.lines().filter(|l| l.starts_with("client ")).map(str::to_string).collect();
        lines.sort();
        assert_eq!(lines.len(), 5, "{model}: {}", r.stdout);
        // 39 counted events per client (the 40th returns true: the client stops).
        assert_eq!(r.rwo(), (5 * 40, 0, 0), "{model}: {}", r.stdout);
        assert_eq!(r.number("total number of events:"), Some(5.0 * 39.0), "{model}: {}", r.stdout);
        lines
    };
    let threads = run("0");
    assert_eq!(run("1"), threads);
    assert_eq!(run("2"), threads);
    assert_eq!(run("auto"), threads);
    // Different clients drew different values.
    let sums: std::collections::HashSet<&str> = threads.iter().map(|l| l.rsplit(' ').next().unwrap()).collect();
    assert_eq!(sums.len(), 5, "{threads:?}");

    let r = dbbench_in(&dir, &args(base, &["models.lua", "run", "--client-threads=many"]));
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Invalid value for --client-threads: 'many'"), "{}", r.stdout);
}

/// sysbench 1.1's multiple result sets: several statements in one query
/// (all three databases) and a stored procedure's results (MariaDB, with
/// both MySQL clients).
#[test]
fn multiple_result_sets() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/multi_results.lua");
    let script = script.display().to_string();
    let crate_client = mysql_db("multi_results").map(|mut b| {
        b.push("--mysql-client=crate".to_string());
        b
    });
    // The embedded SQLite first: it needs no server.
    for (base, call) in [
        (Some(vec![]), false),
        (mysql_db("multi_results"), true),
        (crate_client, true),
        (pgsql_db("multi_results"), false),
    ] {
        let Some(base) = base else { return };
        let dir = tempdir("multi-results");
        let r = dbbench_in(&dir, &args(&base, &[&script, "run", "--events=1"]));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let lines: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("mr: ")).collect();
        let mut want = vec!["mr: first\t1\t1\t1\ttrue", "mr: second\t2\t3\tfalse", "mr: end\tnil"];
        if call {
            want.push("mr: call\t10\t30");
        }
        want.push("mr: next query\t99\tfalse");
        want.push("mr: dependent\t5");
        assert_eq!(lines, want, "{}", r.stdout);
    }
}

/// sysbench 1.1's `--reconnect=N` script option: a new connection (and
/// statements prepared again) every N events of a thread.
#[test]
fn reconnect_option_reconnects_every_n_events() {
    let mut bases = vec![Some(vec![])]; // the embedded SQLite
    bases.push(mysql_db("dbb_reconnect"));
    bases.push(pgsql_db("dbb_reconnect"));
    for base in bases.into_iter().flatten() {
        let dir = tempdir("reconnect");
        assert_eq!(dbbench_in(&dir, &args(&base, &["oltp_read_write", "prepare", "--table-size=100"])).code, 0);
        let r = dbbench_in(
            &dir,
            &args(&base, &["oltp_read_write", "run", "--table-size=100", "--events=50", "--time=0", "--reconnect=10"]),
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert_eq!(r.number("reconnects:"), Some(5.0), "{}", r.stdout);
        assert_eq!(r.rwo(), (700, 200, 100), "{}", r.stdout);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// LuaJIT compiles the default event loop and a built-in OLTP event into
/// traces that link back to each other, with no trace that falls back to
/// the interpreter (before prelude.lua raised `loopunroll` and the loop
/// stopped calling each event through pcall, most of an oltp_read_only
/// event ran interpreted: ARCHITECTURE.md, "The Lua hot path").
#[test]
fn oltp_events_compile_without_interpreter_fallbacks() {
    let dir = tempdir("sqlite-jit");
    let probe = dir.join("probe.lua");
    for workload in ["oltp_read_only", "oltp_point_select"] {
        std::fs::write(
            &probe,
            format!(
                r#"
require("{workload}")
local util = require("jit.util")
local links = {{}}
local init = thread_init
function thread_init(...)
  jit.attach(function(what, tr)
    if what == "stop" then
      local l = util.traceinfo(tr).linktype
      links[l] = (links[l] or 0) + 1
    end
  end, "trace")
  return init(...)
end
local done = thread_done
function thread_done(...)
  local names = {{}}
  for l, n in pairs(links) do names[#names + 1] = l .. "=" .. n end
  table.sort(names)
  print("links: " .. table.concat(names, " "))
  return done(...)
end
"#
            ),
        )
        .unwrap();
        let p = probe.display().to_string();
        let common = ["--tables=2", "--table-size=1000", "--threads=1"];
        let r = dbbench_in(&dir, &[&[p.as_str(), "prepare"][..], &common].concat());
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let r = dbbench_in(&dir, &[&[p.as_str(), "run", "--events=3000"][..], &common].concat());
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let links = r.stdout.lines().find(|l| l.starts_with("links: ")).unwrap_or_else(|| panic!("{}", r.stdout));
        // The event loop is a loop trace, or a trace linking to one.
        assert!(links.contains("loop="), "{workload}: {links}");
        assert!(!links.contains("interpreter="), "{workload}: {links}");
        assert_eq!(dbbench_in(&dir, &[p.as_str(), "cleanup", "--tables=2"]).code, 0);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The built-in oltp_* workloads run as native clients by default
/// (`--oltp-client=native`); they must do what the Lua scripts do. With
/// one client, a seed and an event limit, both send the same statements:
/// the tables' contents after the run (every write's id, k, c and pad, and
/// the draws of the reads between them, which move the random stream) and
/// the statement counters must be identical.
fn native_clients_match_the_scripts(
    base: &[String],
    dir: &std::path::Path,
    dump: &dyn Fn() -> Vec<String>,
    cases: &[(&str, &[&str])],
) {
    for (workload, extra) in cases {
        let mut seen = Vec::new();
        for client in ["native", "lua"] {
            let common = [&["--tables=3", "--table-size=300", "--rand-seed=31"][..], extra].concat();
            let mut a = args(base, &[workload, "prepare"]);
            a.extend(&common);
            let r = dbbench_in(dir, &a);
            assert_eq!(r.code, 0, "{workload} prepare:\n{}{}", r.stdout, r.stderr);
            let before = dump();
            let oc = format!("--oltp-client={client}");
            let mut a = args(base, &[workload, "run", "--threads=1", "--events=150", "--time=0", &oc]);
            a.extend(&common);
            let r = dbbench_in(dir, &a);
            assert_eq!(r.code, 0, "{workload} {client}:\n{}{}", r.stdout, r.stderr);
            let header = format!("Clients: native {workload} ");
            assert_eq!(r.stdout.contains(&header), client == "native", "{workload} {client}:\n{}", r.stdout);
            let counts = (r.rwo(), r.number("transactions:"), r.number("ignored errors:"), r.number("reconnects:"));
            let after = dump();
            let mut a = args(base, &[workload, "cleanup"]);
            a.extend(&common);
            assert_eq!(dbbench_in(dir, &a).code, 0, "{workload} cleanup");
            seen.push((counts, before, after));
        }
        let (native, lua) = (&seen[0], &seen[1]);
        assert_eq!(native.0, lua.0, "{workload} {extra:?}: counters (native, then lua)");
        assert_eq!(native.1, lua.1, "{workload} {extra:?}: prepared data");
        assert!(native.2 == lua.2, "{workload} {extra:?}: the tables differ after the run");
        let (rwo, ..) = native.0;
        if rwo.1 > 0 {
            assert!(native.1 != native.2, "{workload} {extra:?}: wrote nothing");
        }
    }
}

/// Every workload, and the options that change a mix.
const NATIVE_CASES: &[(&str, &[&str])] = &[
    ("oltp_read_write", &[]),
    ("oltp_read_write", &["--skip-trx=on", "--point-selects=3", "--delete-inserts=2", "--range-size=7"]),
    ("oltp_read_write", &["--range-selects=off", "--index-updates=2", "--non-index-updates=3", "--rand-type=uniform"]),
    ("oltp_read_write", &["--reconnect=40"]),
    // The script's options are numbers (whole ones, by its option_ranges),
    // so exponents are whole numbers too (they were read as 0 at first).
    ("oltp_read_write", &["--table-size=3e2", "--point-selects=2e0", "--range-size=7e0", "--reconnect=4e1"]),
    ("oltp_write_only", &["--secondary=on"]),
    ("oltp_read_only", &["--distinct-ranges=3"]),
    ("oltp_point_select", &["--point-selects=5"]),
    ("oltp_update_index", &[]),
    ("oltp_update_non_index", &[]),
    ("oltp_delete", &["--rand-type=uniform"]),
    ("oltp_insert", &[]),
    ("oltp_insert", &["--auto-inc=off"]),
];

#[test]
fn sqlite_native_clients_match_the_scripts() {
    let dir = tempdir("sqlite-native");
    let db = dir.join("dbbench.sqlite");
    let dump = || {
        let c = rusqlite::Connection::open(&db).unwrap();
        (1..=3)
            .map(|t| {
                c.query_row(
                    &format!("SELECT count(*) || ' ' || coalesce(group_concat(id || ':' || k || ':' || c || ':' || pad, ','), '') FROM (SELECT * FROM sbtest{t} ORDER BY id)"),
                    [],
                    |r| r.get::<_, String>(0),
                )
                .unwrap()
            })
            .collect()
    };
    native_clients_match_the_scripts(&[], &dir, &dump, NATIVE_CASES);
    let _ = std::fs::remove_dir_all(dir);
}

/// The server engines' cases: the mixes that write, and the unprepared INSERT.
const NATIVE_SERVER_CASES: &[(&str, &[&str])] = &[
    ("oltp_read_write", &["--delete-inserts=2"]),
    ("oltp_read_write", &["--skip-trx=on", "--reconnect=40"]),
    ("oltp_insert", &[]),
    ("oltp_insert", &["--auto-inc=off"]),
    ("oltp_delete", &[]),
];

#[test]
fn mysql_native_clients_match_the_scripts() {
    let Some(base) = mysql_db("dbb_native") else { return };
    let dir = tempdir("mysql-native");
    let dump = || {
        (1..=3)
            .flat_map(|t| mysql_query("dbb_native", &format!("SELECT CONCAT(COUNT(*), ' ', COALESCE(MD5(GROUP_CONCAT(id, ':', k, ':', c, ':', pad ORDER BY id)), '')) FROM sbtest{t}")))
            .collect()
    };
    native_clients_match_the_scripts(&base, &dir, &dump, NATIVE_SERVER_CASES);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn pgsql_native_clients_match_the_scripts() {
    let Some(base) = pgsql_db("dbb_native") else { return };
    let dir = tempdir("pgsql-native");
    let dump = || {
        (1..=3)
            .flat_map(|t| pgsql_query("dbb_native", &format!("SELECT count(*) || ' ' || coalesce(md5(string_agg(id || ':' || k || ':' || c || ':' || pad, ',' ORDER BY id)), '') FROM sbtest{t}")))
            .collect()
    };
    native_clients_match_the_scripts(&base, &dir, &dump, NATIVE_SERVER_CASES);
    let _ = std::fs::remove_dir_all(dir);
}

/// The native client stands in for the built-in only: a script file, an
/// `oltp_common` of the user's on the module path or `--oltp-client=lua`
/// run the Lua script; a bad value is one line.
#[test]
fn native_clients_only_for_the_builtins() {
    let dir = tempdir("native-only");
    let run = |extra: &[&str]| {
        let r = dbbench_in(&dir, &[&["oltp_point_select", "prepare", "--table-size=100"][..]].concat());
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let r = dbbench_in(
            &dir,
            &[&["oltp_point_select", "run", "--table-size=100", "--events=20", "--time=0"][..], extra].concat(),
        );
        assert_eq!(dbbench_in(&dir, &["oltp_point_select", "cleanup"]).code, 0);
        assert_eq!(r.code, 0, "{extra:?}: {}{}", r.stdout, r.stderr);
        assert_eq!(r.rwo(), (20, 0, 0), "{extra:?}: {}", r.stdout);
        r.stdout.contains("Clients: native oltp_point_select ")
    };
    assert!(run(&[]));
    assert!(!run(&["--oltp-client=lua"]));
    std::fs::write(dir.join("oltp_common.lua"), include_str!("../workloads/oltp_common.lua")).unwrap();
    assert!(!run(&[]), "a user's oltp_common.lua must be what runs");
    std::fs::remove_file(dir.join("oltp_common.lua")).unwrap();
    std::fs::write(dir.join("mine.lua"), include_str!("../workloads/oltp_point_select.lua")).unwrap();
    let r = dbbench_in(&dir, &["./mine.lua", "prepare", "--table-size=100"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = dbbench_in(&dir, &["./mine.lua", "run", "--table-size=100", "--events=20", "--time=0"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("Clients: native"), "{}", r.stdout);
    assert!(!r.stdout.contains("--oltp-client"), "{}", r.stdout);
    // Asked for by name where it does not apply: said so, and run anyway.
    let r =
        dbbench_in(&dir, &["./mine.lua", "run", "--table-size=100", "--events=20", "--time=0", "--oltp-client=native"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("WARNING: --oltp-client=native applies to the built-in oltp_* workloads (with the built-in oltp_common) only; ./mine.lua runs as a Lua script"),
        "{}",
        r.stdout
    );

    let r = dbbench_in(&dir, &["oltp_point_select", "run", "--oltp-client=rust"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Invalid value for --oltp-client: 'rust' (use native or lua)"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(dir);
}
