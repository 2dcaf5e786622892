//! `dbbench querydiff` end to end: two managed MariaDB servers whose
//! optimizer_switch differs (a real plan difference, seen in the counters
//! and plans), MariaDB vs PostgreSQL on one schema (results compared across
//! engines, a real difference, errors on one side, a timeout), PostgreSQL's
//! pg_stat_statements counters, SQLite files, `querydiff report` and bad input.

mod common;

use common::{dbbench_in, have_server_binaries, server_env, tempdir, Managed};
use serde_json::Value;
use std::path::Path;

/// The JSON lines of an `--output` file.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The record of query `name` at `temperature`.
fn record<'a>(lines: &'a [Value], name: &str, temperature: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kind"] == "query" && l["name"] == name && l["temperature"] == temperature)
        .unwrap_or_else(|| panic!("no {name} {temperature} record in {lines:#?}"))
}

/// A counter's (server 1, server 2) values.
fn counter(rec: &Value, name: &str) -> (Option<f64>, Option<f64>) {
    let c = &rec["counters"][name];
    (c[0].as_f64(), c[1].as_f64())
}

fn write_queries(dir: &Path, files: &[(&str, &str)]) -> String {
    let q = dir.join("queries");
    std::fs::create_dir_all(&q).unwrap();
    for (name, text) in files {
        std::fs::write(q.join(name), text).unwrap();
    }
    q.display().to_string()
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE t1 (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(20), c DECIMAL(10,2))",
    "CREATE INDEX t1_a ON t1 (a)",
    "CREATE TABLE t2 (id INT PRIMARY KEY, t1_id INT NOT NULL, v INT)",
];

/// 2000 rows in t1 and t2 as one INSERT each (no engine-specific generator).
fn data_statements() -> Vec<String> {
    let t1: Vec<String> =
        (1..=2000).map(|n| format!("({n}, {}, 'b{}', {}.{:02})", n % 100, n % 37, n / 7, n % 100)).collect();
    let t2: Vec<String> = (1..=2000).map(|n| format!("({n}, {}, {})", n % 500 + 1, n % 13)).collect();
    vec![format!("INSERT INTO t1 VALUES {}", t1.join(",")), format!("INSERT INTO t2 VALUES {}", t2.join(","))]
}

fn load_mysql(c: &mut mysql::Conn) {
    use mysql::prelude::Queryable;
    for s in SCHEMA.iter().map(|s| s.to_string()).chain(data_statements()).chain(["ANALYZE TABLE t1, t2".to_string()]) {
        c.query_drop(s).unwrap();
    }
}

#[test]
fn two_mariadb_servers_with_different_optimizer_switch() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("qd-maria2");
    let on = Managed::start(
        &dir.join("on"),
        "mariadb",
        &["--optimizer-switch=derived_merge=on", "--innodb-buffer-pool-size=32M"],
    );
    let off = Managed::start(
        &dir.join("off"),
        "mariadb",
        &["--optimizer-switch=derived_merge=off", "--innodb-buffer-pool-size=32M"],
    );
    for s in [&on, &off] {
        load_mysql(&mut s.mysql());
    }
    {
        use mysql::prelude::Queryable;
        on.mysql().query_drop("CREATE TABLE only_on_1 (a INT)").unwrap();
    }
    let queries = write_queries(
        &dir,
        &[
            // Merged into the outer query with derived_merge=on; a
            // materialised temporary table with it off.
            (
                "1.sql",
                "SELECT d.a, count(*) FROM (SELECT a, b FROM t1 WHERE id < 1500) d WHERE d.b = 'b5' GROUP BY d.a",
            ),
            ("2.sql", "SELECT b FROM t1 WHERE id = 7"),
            ("3.sql", "SELECT count(*) FROM only_on_1"),
            ("4.sql", "DELETE FROM t1"),
            // TPC-H Q15's shape: the query needs the view its file creates and drops.
            (
                "5.sql",
                "CREATE VIEW top5 (a, n) AS SELECT a, count(*) FROM t1 WHERE id < 1000 GROUP BY a;\n\
                 SELECT a, n FROM top5 WHERE n = (SELECT max(n) FROM top5) ORDER BY a;\n\
                 DROP VIEW top5;",
            ),
        ],
    );
    let out = dir.join("out.jsonl");
    let cold_log = dir.join("cold.log");
    let html = dir.join("qd.html");
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            "--dsn1",
            &on.mysql_dsn(),
            "--dsn2",
            &off.mysql_dsn(),
            "--queries",
            &queries,
            "--name1=merge",
            "--name2=nomerge",
            "--warm=3",
            "--filter",
            "Created_tmp_tables_delta > 0 and warm",
            "--cold-command",
            &format!("echo $DBBENCH_QUERYDIFF_SERVER >> {}", cold_log.display()),
            "--output",
            out.to_str().unwrap(),
            "--export-html",
            html.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let l = lines(&out);
    assert_eq!(l[0]["kind"], "run");
    assert_eq!(l[0]["servers"][1]["label"], "nomerge");

    // The plan difference, in counters and plans.
    let w = record(&l, "1.sql", "warm");
    assert_eq!(w["result"], "same", "{w:#}");
    assert_eq!(w["matched"], true);
    let (tmp1, tmp2) = counter(w, "Created_tmp_tables");
    assert_eq!(tmp2.unwrap() - tmp1.unwrap(), 1.0, "the derived table is materialised on server 2 only: {w:#}");
    assert!(w["sides"][1]["plan"].as_str().unwrap().contains("DERIVED"), "{w:#}");
    assert!(!w["sides"][0]["plan"].as_str().unwrap().contains("DERIVED"), "{w:#}");
    assert_eq!(w["sides"][0]["times_us"].as_array().unwrap().len(), 3, "three warm executions");
    assert_eq!(record(&l, "1.sql", "cold")["matched"], false, "the filter asks for warm records");
    // A primary-key lookup reads one key: the status reads' own counts
    // are subtracted exactly.
    let pk = record(&l, "2.sql", "warm");
    assert_eq!(counter(pk, "Handler_read_key"), (Some(1.0), Some(1.0)), "{pk:#}");
    assert_eq!(counter(pk, "Created_tmp_tables"), (Some(0.0), Some(0.0)), "{pk:#}");
    assert_eq!(pk["matched"], false);
    // A query failing on one side: recorded with the error, the run goes on.
    let e = record(&l, "3.sql", "cold");
    assert!(e["sides"][1]["error"].as_str().unwrap().contains("only_on_1"), "{e:#}");
    assert!(e["sides"][0]["error"].is_null(), "{e:#}");
    assert_eq!(e["result"], "not_compared");
    // The view query ran between its file's CREATE VIEW and DROP VIEW, on both servers.
    for temp in ["cold", "warm"] {
        let v = record(&l, "5.sql", temp);
        assert!(v["sides"][0]["error"].is_null() && v["sides"][1]["error"].is_null(), "{v:#}");
        assert_eq!((v["result"].as_str(), v["sides"][0]["rows"].as_u64()), (Some("same"), Some(99)), "{v:#}");
        assert!(v["setup"][0].as_str().unwrap().starts_with("CREATE VIEW top5"), "{v:#}");
        assert_eq!(v["teardown"][0], "DROP VIEW top5", "{v:#}");
    }
    {
        use mysql::prelude::Queryable;
        for s in [&on, &off] {
            let n: Option<u64> = s
                .mysql()
                .query_first("SELECT count(*) FROM information_schema.views WHERE table_name = 'top5'")
                .unwrap();
            assert_eq!(n, Some(0), "the view is dropped again");
        }
    }
    // Plans compared: the derived table's differs, the primary-key lookup's does not.
    assert_eq!(w["plans"], "differs", "{w:#}");
    assert_eq!(pk["plans"], "same", "{pk:#}");
    assert!(record(&l, "1.sql", "cold")["plans"].is_null(), "plans are taken after the last temperature");
    let summary = l.last().unwrap();
    assert_eq!(summary["kind"], "summary");
    assert_eq!(
        (
            summary["incoming"].as_u64(),
            summary["skipped"].as_u64(),
            summary["executed"].as_u64(),
            summary["errors"].as_u64()
        ),
        (Some(5), Some(1), Some(4), Some(1))
    );
    assert_eq!(summary["reported"], 1);
    // The DELETE never ran.
    {
        use mysql::prelude::Queryable;
        let n: Option<u64> = on.mysql().query_first("SELECT count(*) FROM t1").unwrap();
        assert_eq!(n, Some(2000));
    }
    // The cold command ran before every cold execution, server 1 then 2
    // (four queries ran: 1, 2, 3 and the view query 5).
    assert_eq!(std::fs::read_to_string(&cold_log).unwrap(), "1\n2\n1\n2\n1\n2\n1\n2\n");

    // Terminal: the table and the block of the matched record only; errors always.
    assert!(r.stdout.contains("Query 1.sql (warm)"), "{}", r.stdout);
    assert!(!r.stdout.contains("Query 2.sql"), "{}", r.stdout);
    assert!(
        r.stdout
            .lines()
            .any(|x| x.trim_start().starts_with("Created_tmp_tables") && x.split_whitespace().last() == Some("2.00")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("Errors:") && r.stdout.contains("3.sql: nomerge:"), "{}", r.stdout);
    assert!(
        r.stdout.contains("Incoming: 5, skipped (not read-only): 1, executed: 4, errors: 1, different results: 0"),
        "{}",
        r.stdout
    );
    // The plan column: the matched record's plans differ.
    let row = r.stdout.lines().find(|x| x.starts_with("1.sql ")).unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(row.split_whitespace().last(), Some("differs"), "{}", r.stdout);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Query comparison: merge vs nomerge") && page.contains("<svg") && page.contains("DERIVED"),
        "{page}"
    );

    // The saved file again, with another filter.
    let rep = dbbench_in(
        &dir,
        &[
            "querydiff",
            "report",
            "--input",
            out.to_str().unwrap(),
            "--filter=Name = '2.sql' and Handler_read_key_ratio = 1",
        ],
    );
    assert_eq!(rep.code, 0, "{}{}", rep.stdout, rep.stderr);
    assert!(
        rep.stdout.contains("Query 2.sql (cold)")
            && rep.stdout.contains("Query 2.sql (warm)")
            && !rep.stdout.contains("Query 1.sql"),
        "{}",
        rep.stdout
    );
    assert!(rep.stdout.contains("reported: 2 of 8 records"), "{}", rep.stdout);
    // The filter variable: which queries changed plans.
    let plans =
        dbbench_in(&dir, &["querydiff", "report", "--input", out.to_str().unwrap(), "--filter=Plan = 'differs'"]);
    assert_eq!(plans.code, 0, "{}", plans.stderr);
    assert!(
        plans.stdout.contains("Query 1.sql (warm)") && plans.stdout.contains("reported: 1 of 8"),
        "{}",
        plans.stdout
    );
    // A typo'd variable is named.
    let typo = dbbench_in(
        &dir,
        &["querydiff", "report", "--input", out.to_str().unwrap(), "--filter=Handler_read_kye_delta > 0"],
    );
    assert_eq!(typo.code, 0);
    assert!(typo.stderr.contains("reads Handler_read_kye_delta, which no record has"), "{}", typo.stderr);
    drop((on, off));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mariadb_vs_postgresql_on_a_shared_schema() {
    let (Some(my), Some(_)) = (common::mysql_db("qd_shared"), common::pgsql_db("qd_shared")) else { return };
    let _ = my;
    let sock = server_env("DBBENCH_TEST_MYSQL_SOCKET").unwrap();
    let (host, port) = (server_env("DBBENCH_TEST_PGSQL_HOST").unwrap(), server_env("DBBENCH_TEST_PGSQL_PORT").unwrap());
    let mut m = mysql::Conn::new(
        mysql::OptsBuilder::new().socket(Some(sock.clone())).user(Some("sbtest")).db_name(Some("qd_shared")),
    )
    .unwrap();
    load_mysql(&mut m);
    let mut pg = postgres::Config::new()
        .host(&host)
        .port(port.parse().unwrap())
        .user("sbtest")
        .dbname("qd_shared")
        .connect(postgres::NoTls)
        .unwrap();
    for s in SCHEMA.iter().map(|s| s.to_string()).chain(data_statements()).chain(["ANALYZE".to_string()]) {
        pg.batch_execute(&s).unwrap();
    }
    let dir = tempdir("qd-maria-pg");
    let queries = write_queries(
        &dir,
        &[
            // MariaDB-only: times out there, fails on PostgreSQL; the run goes on.
            ("01-sleep.sql", "SELECT SLEEP(5)"),
            // Same answers, printed differently (AVG's scale, DECIMAL sums).
            (
                "02-aggregates.sql",
                "SELECT b, count(*), sum(c), avg(c), avg(v) FROM t1 JOIN t2 ON t2.t1_id = t1.id GROUP BY b",
            ),
            ("03-ordered.sql", "SELECT id, c FROM t1 WHERE a = 3 ORDER BY id DESC"),
            // A real difference: integer division on PostgreSQL.
            ("04-division.sql", "SELECT id, a / 7 FROM t1 WHERE id < 4"),
            // MySQL-only syntax.
            ("05-limit.sql", "SELECT id FROM t1 ORDER BY id LIMIT 2, 3"),
        ],
    );
    let out = dir.join("out.jsonl");
    let pg_dsn = format!("postgresql://sbtest@{}:{port}/qd_shared", host.replace('/', "%2F"));
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            &format!("--dsn1=mysql://sbtest@localhost/qd_shared?socket={sock}"),
            &format!("--dsn2={pg_dsn}"),
            &format!("--queries={queries}"),
            "--timeout=0.5",
            "--name1=mariadb",
            "--name2=postgresql",
            &format!("--output={}", out.display()),
        ],
    );
    assert_eq!(r.code, 2, "a different result exits 2: {}{}", r.stdout, r.stderr);
    let l = lines(&out);
    let sleep = record(&l, "01-sleep.sql", "cold");
    assert!(sleep["sides"][0]["error"].as_str().unwrap().contains("timed out after 0.5 s"), "{sleep:#}");
    assert!(sleep["sides"][0]["times_us"].as_array().unwrap().is_empty());
    assert!(sleep["sides"][1]["error"].as_str().unwrap().contains("sleep"), "{sleep:#}");
    for t in ["cold", "warm"] {
        let agg = record(&l, "02-aggregates.sql", t);
        assert_eq!(agg["result"], "same", "{agg:#}");
        assert_eq!(agg["sides"][0]["rows"], 37);
        let ord = record(&l, "03-ordered.sql", t);
        assert_eq!(ord["result"], "same", "{ord:#}");
        assert_eq!(ord["sides"][1]["rows"], 20);
    }
    let agg = record(&l, "02-aggregates.sql", "warm");
    // Each side has its own engine's counters.
    assert!(
        counter(agg, "Handler_read_next").0.unwrap() > 0.0 || counter(agg, "Handler_read_rnd_next").0.unwrap() > 0.0,
        "{agg:#}"
    );
    assert_eq!(counter(agg, "Handler_read_next").1, None);
    assert_eq!(counter(agg, "Plan_actual_rows"), (None, Some(37.0)), "{agg:#}");
    let div = record(&l, "04-division.sql", "cold");
    assert_eq!(div["result"], "differs", "{div:#}");
    assert_eq!(div["result_detail"], "sorted row 1: 1 | 0.1429 vs 1 | 0", "{div:#}");
    let lim = record(&l, "05-limit.sql", "warm");
    assert!(
        lim["sides"][0]["error"].is_null() && lim["sides"][1]["error"].as_str().unwrap().contains("LIMIT"),
        "{lim:#}"
    );
    assert!(
        r.stdout.contains(
            "DIFFERENT RESULTS (mariadb vs postgresql):\n  04-division.sql: sorted row 1: 1 | 0.1429 vs 1 | 0"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("pg_stat_statements cannot be read"),
        "the test server has no pg_stat_statements: {}",
        r.stderr
    );
    assert!(r.stdout.contains("different results: 1"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One server compared with itself: server 1's session times out while
/// server 2's cold command runs (as when a shared server is restarted for
/// the other side); its next execution opens a new connection instead of
/// failing, and its init statements run again on it.
#[test]
fn a_connection_lost_between_executions_is_opened_again() {
    let Some(_) = common::mysql_db("qd_reconnect") else { return };
    let sock = server_env("DBBENCH_TEST_MYSQL_SOCKET").unwrap();
    let dir = tempdir("qd-reconnect");
    let queries = write_queries(&dir, &[("1.sql", "SELECT @@session.wait_timeout")]);
    let out = dir.join("out.jsonl");
    let dsn = format!("mysql://sbtest@localhost/qd_reconnect?socket={sock}");
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            &format!("--dsn1={dsn}"),
            &format!("--dsn2={dsn}"),
            &format!("--queries={queries}"),
            "--init1=SET SESSION wait_timeout = 1",
            // Server 2's cold command outlasts server 1's wait_timeout.
            "--cold-command=[ $DBBENCH_QUERYDIFF_SERVER = 2 ] && sleep 2.5 || true",
            "--warm=2",
            "--explain=no",
            &format!("--output={}", out.display()),
        ],
    );
    let l = lines(&out);
    let warm = record(&l, "1.sql", "warm");
    assert!(warm["sides"][0]["error"].is_null(), "{warm:#}\n{}", r.stderr);
    assert_eq!(warm["sides"][0]["times_us"].as_array().unwrap().len(), 2, "{warm:#}");
    // Different answers (1 vs the default), so exit 2: the init ran again.
    assert_eq!(warm["result"], "differs", "{warm:#}");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn postgresql_counters_from_pg_stat_statements_per_execution() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("qd-pgss");
    let server = Managed::start(
        &dir.join("pg"),
        "postgresql",
        &["shared_preload_libraries=pg_stat_statements", "shared_buffers=16MB"],
    );
    let info = server.info();
    // PostgreSQL's "socket" is the socket directory.
    let (sock_dir, port) = (info["socket"].as_str().unwrap().to_string(), info["port"].as_u64().unwrap());
    // The extension is the superuser's to create; querydiff then reads it
    // as the ordinary benchmark account.
    server.psql_admin("CREATE EXTENSION pg_stat_statements");
    let mut pg = postgres::Config::new()
        .host(&sock_dir)
        .port(port as u16)
        .user("sbtest")
        .dbname("sbtest")
        .connect(postgres::NoTls)
        .unwrap();
    for s in SCHEMA.iter().map(|s| s.to_string()).chain(data_statements()).chain(["ANALYZE".to_string()]) {
        pg.batch_execute(&s).unwrap();
    }
    let queries = write_queries(&dir, &[("a.sql", "SELECT c FROM t1 WHERE id = 42")]);
    let dsn = format!("postgresql://sbtest@{}:{port}/sbtest", sock_dir.replace('/', "%2F"));
    // One server, two sessions: the second forbids index scans.
    let out = dir.join("out.jsonl");
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            "--dsn1",
            &dsn,
            "--dsn2",
            &dsn,
            "--init2=SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off",
            "--queries",
            &queries,
            "--warm=2",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("pg_stat_statements cannot be read"), "{}", r.stderr);
    let l = lines(&out);
    let w = record(&l, "a.sql", "warm");
    assert_eq!(counter(w, "Calls"), (Some(1.0), Some(1.0)), "one execution counted, the snapshots not: {w:#}");
    assert_eq!(counter(w, "Rows"), (Some(1.0), Some(1.0)), "{w:#}");
    let (hit1, hit2) = counter(w, "Shared_blks_hit");
    assert!(hit2.unwrap() > hit1.unwrap(), "a sequential scan reads more blocks than the index: {w:#}");
    assert_eq!(counter(w, "Plan_seq_scans"), (Some(0.0), Some(1.0)), "{w:#}");
    assert!(w["sides"][1]["plan"].as_str().unwrap().contains("Seq Scan"), "{w:#}");
    assert_eq!(l[0]["servers"][1]["init"][1], "SET enable_bitmapscan = off");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sqlite_files_compare_without_servers() {
    let dir = tempdir("qd-sqlite");
    for (f, extra) in [("a.db", ""), ("b.db", "INSERT INTO t VALUES (4, 'd');")] {
        let c = rusqlite::Connection::open(dir.join(f)).unwrap();
        c.execute_batch(&format!("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'); {extra}")).unwrap();
    }
    let q = dir.join("q.sql");
    std::fs::write(&q, "SELECT s FROM t WHERE id < 3 ORDER BY id;\nSELECT count(*) FROM t;\nSELECT s FROM t ORDER BY id % 2;\nWITH d AS (DELETE FROM t RETURNING *) SELECT count(*) FROM d").unwrap();
    let out = dir.join("o.jsonl");
    let args = |extra: &[&'static str]| {
        let mut v: Vec<String> =
            ["querydiff", "--dsn1=sqlite:a.db", "--dsn2=sqlite:b.db", "--cold=0", "--warm=2", "--output=o.jsonl"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        v.push(format!("--queries={}", q.display()));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let a = args(&[]);
    let r = dbbench_in(&dir, &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let l = lines(&out);
    assert_eq!(record(&l, "q.sql#1", "warm")["result"], "same");
    assert_eq!(record(&l, "q.sql#2", "warm")["result_detail"], "sorted row 1: 3 vs 4");
    assert!(!l.iter().any(|x| x["temperature"] == "cold"), "--cold=0: no cold records");
    assert!(r.stdout.contains("q.sql#2: sorted row 1: 3 vs 4 (warm)"), "{}", r.stdout);
    assert!(r.stderr.contains("[4/4] q.sql#4: skipped: it holds DELETE (it would write)"), "{}", r.stderr);

    // A connection that fails leaves the last run's file as it was.
    let saved = std::fs::read_to_string(&out).unwrap();
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            "--dsn1=sqlite:a.db",
            "--dsn2=mysql://sbtest@127.0.0.1:1/x",
            "--queries=q.sql",
            "--output=o.jsonl",
        ],
    );
    assert!(r.code == 1 && r.stderr.contains("--dsn2 mysql://sbtest@127.0.0.1:1/x"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), saved);

    // A failing --cold-command stops the run; its file has no summary line,
    // so `querydiff report` says it was interrupted.
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            "--dsn1=sqlite:a.db",
            "--dsn2=sqlite:b.db",
            "--queries=q.sql",
            "--output=stopped.jsonl",
            "--cold-command=false",
        ],
    );
    assert!(r.code == 1 && r.stderr.contains("--cold-command failed"), "{}", r.stderr);
    let stopped = lines(&dir.join("stopped.jsonl"));
    assert!(stopped.len() == 1 && stopped[0]["kind"] == "run", "{stopped:?}");
    let r = dbbench_in(&dir, &["querydiff", "report", "--input=stopped.jsonl"]);
    assert!(r.code == 0 && r.stderr.contains("the run was interrupted"), "{}", r.stderr);

    // Bad input: one line, exit 1, nothing run.
    let bad = |extra: &[&str], want: &str| {
        let mut v: Vec<&str> = vec!["querydiff", "--dsn1=sqlite:a.db", "--dsn2=sqlite:b.db", "--queries=q.sql"];
        v.extend(extra);
        let r = dbbench_in(&dir, &v);
        assert_eq!(r.code, 1, "{extra:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(want), "{extra:?}: want {want:?} in {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    };
    bad(
        &["--filter=Execution_time_ratio > and warm"],
        "--filter 'Execution_time_ratio > and warm': column 24: expected a value",
    );
    bad(&["--filter=(a > 1"], "column 7");
    bad(&["--dsn2=oracle://x/y"], "DSN 'oracle://x/y': unknown scheme 'oracle'");
    bad(&["--queries=nowhere"], "--queries=nowhere: no such file or directory");
    bad(&["--cold=0", "--warm=0"], "nothing would run");
    bad(&["--colour=red"], "unknown option '--colour'");
    bad(&["--timeout=-1"], "--timeout=-1: not a positive number");
    let r = dbbench_in(&dir, &["querydiff", "--dsn1=sqlite:a.db", "--queries=q.sql"]);
    assert!(r.code == 1 && r.stderr.contains("--dsn2 is required"), "{}", r.stderr);
    let r = dbbench_in(&dir, &["querydiff", "report", "--input=q.sql"]);
    assert!(r.code == 1 && r.stderr.contains("q.sql:1: not a querydiff record"), "{}", r.stderr);
    let r = dbbench_in(&dir, &["querydiff", "report", "--input=o.jsonl", "--filter=Result = 'same' and"]);
    assert!(r.code == 1 && r.stderr.contains("column"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
