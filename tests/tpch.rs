//! `dbbench tpch`: data conformance with dbgen, loading into MariaDB,
//! PostgreSQL and SQLite, the 22 queries on each with their answers
//! compared across engines, timeouts that stop the query on the server,
//! power and throughput runs, and bad input.

mod common;

use common::{dbbench_in, mysql_db, mysql_query, pgsql_db, pgsql_query, tempdir};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// dbgen's own output at SF 0.01, as the `tpchgen` crate ships it for its
/// conformance tests (in cargo's registry, for the version Cargo.lock pins).
fn dbgen_reference() -> PathBuf {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"tpchgen\"\n"))
        .and_then(|p| {
            p.lines().find_map(|l| l.strip_prefix("version = \"")).map(|v| v.trim_end_matches('"').to_string())
        })
        .expect("tpchgen in Cargo.lock");
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let registry = home.join("registry/src");
    for index in std::fs::read_dir(&registry).unwrap().flatten() {
        let data = index.path().join(format!("tpchgen-{version}/data/sf-0.01"));
        if data.is_dir() {
            return data;
        }
    }
    panic!("tpchgen {version}'s data/sf-0.01 not found under {}", registry.display());
}

#[test]
fn generated_data_is_byte_identical_to_dbgen() {
    let dir = tempdir("tpch-gen");
    let r = dbbench_in(&dir, &["tpch", "gen", "--sf=0.01", "--dir=tbl", "--threads=2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let reference = dbgen_reference();
    for table in ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"] {
        let ours = std::fs::read(dir.join(format!("tbl/{table}.tbl"))).unwrap();
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(reference.join(format!("{table}.tbl.gz")))
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(ours == out.stdout, "{table}.tbl differs from dbgen's ({} vs {} bytes)", ours.len(), out.stdout.len());
    }
    // Parts, named as dbgen names them, concatenate to the whole table.
    let r = dbbench_in(&dir, &["tpch", "gen", "--sf=0.01", "--dir=parts", "--parts=3", "--tables=orders,region"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let joined: Vec<u8> =
        (1..=3).flat_map(|p| std::fs::read(dir.join(format!("parts/orders.tbl.{p}"))).unwrap()).collect();
    assert!(joined == std::fs::read(dir.join("tbl/orders.tbl")).unwrap());
    assert!(dir.join("parts/region.tbl").exists() && !dir.join("parts/region.tbl.1").exists());
    // CSV: a header and quoted text.
    let r = dbbench_in(&dir, &["tpch", "gen", "--sf=0.01", "--dir=csv", "--format=csv", "--tables=nation"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(dir.join("csv/nation.csv")).unwrap();
    assert!(csv.starts_with("n_nationkey,n_name,n_regionkey,n_comment\n0,ALGERIA,0,\""), "{csv}");
    assert_eq!(csv.lines().count(), 26);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs one SQL statement on an engine directly; the rows as text.
type DirectQuery = Box<dyn Fn(&str) -> Vec<String>>;

/// One engine under test: its connection options and a way to run SQL on it directly.
struct Engine {
    name: &'static str,
    args: Vec<String>,
    query: DirectQuery,
}

/// SQLite always; MariaDB and PostgreSQL when the test servers are there
/// (under CI they must be). Each gets a fresh database.
fn engines(dir: &Path, tag: &str) -> Vec<Engine> {
    let db = dir.join(format!("{tag}.sqlite"));
    let sqlite_path = db.clone();
    let mut out = vec![Engine {
        name: "sqlite",
        args: vec![format!("--sqlite-db={}", db.display())],
        query: Box::new(move |sql| {
            let c = rusqlite::Connection::open(&sqlite_path).unwrap();
            let mut st = c.prepare(sql).unwrap();
            st.query_map([], |r| r.get::<_, rusqlite::types::Value>(0))
                .unwrap()
                .map(|v| match v.unwrap() {
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    rusqlite::types::Value::Real(f) => f.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    other => format!("{other:?}"),
                })
                .collect()
        }),
    }];
    let name = format!("dbbench_{tag}_{}", std::process::id());
    if let Some(args) = mysql_db(&name) {
        let n = name.clone();
        out.push(Engine { name: "mariadb", args, query: Box::new(move |sql| mysql_query(&n, sql)) });
    }
    if let Some(args) = pgsql_db(&name) {
        let n = name.clone();
        out.push(Engine { name: "postgresql", args, query: Box::new(move |sql| pgsql_query(&n, sql)) });
    }
    out
}

fn run(dir: &Path, sub: &[&str], e: &Engine, extra: &[&str]) -> common::Run {
    let mut args: Vec<&str> = vec!["tpch"];
    args.extend(sub);
    args.extend(e.args.iter().map(String::as_str));
    args.extend(extra);
    dbbench_in(dir, &args)
}

#[test]
fn load_power_and_answers_agree_on_every_engine() {
    let dir = tempdir("tpch-engines");
    let engines = engines(&dir, "tpch_power");
    let mut outputs = Vec::new();
    for e in &engines {
        let r = run(&dir, &["load"], e, &["--sf=0.01"]);
        assert_eq!(r.code, 0, "{}: {}{}", e.name, r.stdout, r.stderr);
        assert!(
            r.stdout.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["lineitem", "60175", "rows"]),
            "{}: {}",
            e.name,
            r.stdout
        );
        // The rows are in the database, not only counted by the loader.
        assert_eq!((e.query)("SELECT count(*) FROM lineitem"), ["60175"], "{}", e.name);
        assert_eq!((e.query)("SELECT count(*) FROM orders"), ["15000"], "{}", e.name);
        assert_eq!((e.query)("SELECT scale_factor FROM dbbench_tpch")[0].parse::<f64>().unwrap(), 0.01, "{}", e.name);
        // The power test with the specification's validation parameters.
        let r = run(&dir, &["power"], e, &["--validation", "--timeout=120", "--format=json"]);
        assert_eq!(r.code, 0, "{}: {}", e.name, r.stderr);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let queries = doc["streams"][0]["queries"].as_array().unwrap();
        // Stream 0's order (Appendix A) and a time, a plan and an answer for each.
        let order: Vec<&str> = queries.iter().map(|q| q["query"].as_str().unwrap()).collect();
        assert_eq!(
            order,
            [
                "Q14", "Q2", "Q9", "Q20", "Q6", "Q17", "Q18", "Q8", "Q21", "Q13", "Q3", "Q22", "Q16", "Q4", "Q11",
                "Q15", "Q1", "Q10", "Q19", "Q5", "Q7", "Q12"
            ]
        );
        for q in queries {
            assert!(q["seconds"].as_f64().is_some_and(|s| s > 0.0), "{}: {q}", e.name);
            assert!(q["plan"].as_str().is_some_and(|p| !p.is_empty()), "{}: no plan for {}", e.name, q["query"]);
        }
        // Q1 with DELTA 90: the four (returnflag, linestatus) groups.
        let q1 = queries.iter().find(|q| q["query"] == "Q1").unwrap();
        assert_eq!(q1["answer"]["rows"].as_array().unwrap().len(), 4);
        assert_eq!(q1["params"], serde_json::json!(["90"]));
        assert!(doc["metrics"]["power_at_size"].as_f64().is_some_and(|p| p > 0.0), "{}", doc["metrics"]);
        let file = dir.join(format!("{}.json", e.name));
        std::fs::write(&file, &r.stdout).unwrap();
        outputs.push(file.display().to_string());
    }
    // Every engine's 22 answers against the first's (clause 2.1.3.5 tolerances).
    if outputs.len() > 1 {
        let mut args = vec!["tpch", "check"];
        args.extend(outputs.iter().map(String::as_str));
        let r = dbbench_in(&dir, &args);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert_eq!(
            r.stdout.lines().filter(|l| l.ends_with(": same")).count(),
            22 * (outputs.len() - 1),
            "{}",
            r.stdout
        );
        // A wrong answer is loud: one Q1 count changed.
        let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&outputs[1]).unwrap()).unwrap();
        let q1 = doc["streams"][0]["queries"].as_array_mut().unwrap().iter_mut().find(|q| q["query"] == "Q1").unwrap();
        let cells = q1["answer"]["rows"][0].as_array_mut().unwrap();
        let last = cells.len() - 1;
        cells[last] = serde_json::json!("1");
        let wrong = dir.join("wrong.json");
        std::fs::write(&wrong, doc.to_string()).unwrap();
        let r = dbbench_in(&dir, &["tpch", "check", &outputs[0], &wrong.display().to_string()]);
        assert_eq!(r.code, 2, "{}", r.stdout);
        assert!(r.stdout.contains("Q1 (stream 0): MISMATCH: row 1 column 10: 1 instead of"), "{}", r.stdout);
        assert!(r.stderr.contains("1 answer(s) differ"), "{}", r.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn timeouts_stop_the_query_on_the_server() {
    let dir = tempdir("tpch-timeout");
    for e in engines(&dir, "tpch_timeout") {
        let r = run(&dir, &["load"], &e, &["--sf=0.01", "--indexes=no"]);
        assert_eq!(r.code, 0, "{}: {}", e.name, r.stderr);
        // A variant that would run far longer than the timeout.
        let qdir = dir.join(format!("queries-{}", e.name));
        std::fs::create_dir_all(&qdir).unwrap();
        let slow = match e.name {
            "mariadb" => "SELECT SLEEP(30) AS slept",
            "postgresql" => "SELECT pg_sleep(30) AS slept",
            _ => "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
        };
        std::fs::write(qdir.join("1-slow.sql"), slow).unwrap();
        let qd = format!("--query-dir={}", qdir.display());
        let started = Instant::now();
        let r = run(&dir, &["power"], &e, &["--queries=6,1-slow", &qd, "--timeout=1", "--repeats=3", "--format=json"]);
        let took = started.elapsed();
        assert_eq!(r.code, 0, "{}: {}", e.name, r.stderr);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let slow_q =
            doc["streams"][0]["queries"].as_array().unwrap().iter().find(|q| q["query"] == "Q1-slow").unwrap().clone();
        assert_eq!(slow_q["timed_out"], true, "{}", e.name);
        assert!(slow_q["seconds"].is_null(), "a timed-out query has no time");
        // One timeout ends the repeats: the figure is censored anyway.
        assert_eq!(slow_q["executions"].as_array().unwrap().len(), 1);
        assert!(took < Duration::from_secs(15), "{}: took {took:?}", e.name);
        assert!(
            doc["notes"][0].as_str().unwrap().contains("Power@Size needs the 22 standard queries"),
            "{}",
            doc["notes"]
        );
        // Nothing is left running on the server.
        match e.name {
            "mariadb" => assert_eq!((e.query)("SELECT count(*) FROM information_schema.processlist WHERE info LIKE 'SELECT SLEEP(30)%'"), ["0"]),
            "postgresql" => assert_eq!((e.query)("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND state = 'active'"), ["0"]),
            _ => {}
        }
        // The text layout shows the bound, never a made-up time.
        let r = run(&dir, &["query", "1-slow"], &e, &[&qd, "--timeout=1"]);
        assert!(r.stdout.lines().any(|l| l.starts_with("Q1-slow") && l.contains(">1")), "{}: {}", e.name, r.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn refresh_functions_keep_the_size_and_add_new_keys() {
    let dir = tempdir("tpch-refresh");
    for e in engines(&dir, "tpch_refresh") {
        let r = run(&dir, &["load"], &e, &["--sf=0.01"]);
        assert_eq!(r.code, 0, "{}: {}", e.name, r.stderr);
        for set in 1..=2 {
            let r = run(&dir, &["power"], &e, &["--refresh", "--queries=6", "--timeout=60"]);
            assert_eq!(r.code, 0, "{}: {}", e.name, r.stderr);
            assert!(
                r.stdout.contains(&format!("RF1 (update set {set}):"))
                    && r.stdout.contains(&format!("RF2 (update set {set}):")),
                "{}",
                r.stdout
            );
        }
        // SF 0.01: 15 orders per set inserted with new keys (sequence bits set), 15 old ones deleted.
        assert_eq!((e.query)("SELECT count(*) FROM orders"), ["15000"], "{}", e.name);
        assert_eq!((e.query)("SELECT count(*) FROM orders WHERE o_orderkey % 32 >= 8"), ["30"], "{}", e.name);
        assert_eq!(
            (e.query)("SELECT count(*) FROM lineitem WHERE l_orderkey NOT IN (SELECT o_orderkey FROM orders)"),
            ["0"],
            "{}",
            e.name
        );
        assert_eq!((e.query)("SELECT refresh_sets FROM dbbench_tpch"), ["2"], "{}", e.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn throughput_runs_streams_at_once() {
    let dir = tempdir("tpch-throughput");
    let e = engines(&dir, "tpch_tp").remove(0);
    assert_eq!(run(&dir, &["load"], &e, &["--sf=0.01"]).code, 0);
    let r = run(&dir, &["throughput"], &e, &["--streams=2", "--timeout=60", "--format=json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let streams = doc["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    // Stream 1 and 2 run the queries in their own Appendix A orders.
    assert_eq!(streams[0]["queries"][0]["query"], "Q21");
    assert_eq!(streams[1]["queries"][0]["query"], "Q6");
    assert!(doc["metrics"]["throughput_at_size"].as_f64().is_some_and(|t| t > 0.0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn queries_prints_the_substituted_sql() {
    let dir = tempdir("tpch-queries");
    let r = dbbench_in(&dir, &["tpch", "queries", "--dialect=pgsql", "--validation", "--queries=1,15"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("-- Q15 Top Supplier (stream 0)\n"), "{}", r.stdout);
    assert!(r.stdout.contains("create view revenue0") && r.stdout.contains("drop view revenue0"), "{}", r.stdout);
    assert!(r.stdout.contains("'1998-12-01'") && r.stdout.contains("90"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_one_line() {
    let dir = tempdir("tpch-bad");
    for (args, msg) in [
        (vec!["tpch", "gen"], "--sf=N is required"),
        (vec!["tpch", "gen", "--sf=-1"], "--sf=-1: not a positive number"),
        (vec!["tpch", "gen", "--sf=1", "--tables=lineitems"], "--tables: 'lineitems' is not a TPC-H table"),
        (vec!["tpch", "gen", "--sf=1", "--format=parquet"], "--format=parquet: use tbl or csv"),
        (vec!["tpch", "gen", "--sf=1", "--bogus=1"], "unknown option '--bogus'; see `dbbench tpch gen --help`"),
        (vec!["tpch", "frobnicate"], "unknown tpch command 'frobnicate'"),
        (
            vec!["tpch", "load", "--sf=0.01", "--keys=sideways", "--sqlite-db=x.sqlite"],
            "--keys=sideways: use before or after",
        ),
        (vec!["tpch", "power", "--sqlite-db=empty.sqlite"], "it was not loaded by `dbbench tpch load`"),
        (
            vec!["tpch", "power", "--sf=1", "--method=best-plan", "--explain=no", "--sqlite-db=x.sqlite"],
            "--method=best-plan groups repeats by their plan",
        ),
        (vec!["tpch", "query", "23", "--sf=1"], "--queries: '23' is not a query"),
        (
            vec!["tpch", "query", "20-opt", "--sf=1", "--sqlite-db=x.sqlite"],
            "give the directory of its template with --query-dir",
        ),
        (vec!["tpch", "check", "a.json"], "compares at least two run outputs"),
        // dbgen repeats a (partkey, suppkey) pair here: refused before
        // anything is loaded, not by the key's error after all the data.
        (vec!["tpch", "load", "--sf=0.001", "--sqlite-db=tiny.sqlite"], "gives part 31 supplier 2 twice"),
        (vec!["tpch", "power", "--sf=1", "--frob=1"], "unknown option '--frob'; see `dbbench tpch power --help`"),
    ] {
        let r = dbbench_in(&dir, &args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(msg), "{args:?}: {}", r.stderr);
    }
    assert!(!dir.join("tiny.sqlite").exists(), "the refused load connected");
    // gen writes dbgen's rows as they are, and says what they will meet.
    let r = dbbench_in(&dir, &["tpch", "gen", "--sf=0.001", "--tables=partsupp"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("warning: at --sf=0.001 dbgen's partsupp gives part 31 supplier 2 twice"),
        "{}",
        r.stderr
    );
    let r = dbbench_in(&dir, &["tpch", "gen", "--sf=0.01", "--tables=partsupp"]);
    assert!(r.code == 0 && !r.stderr.contains("warning"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A missing table and a query one engine rejects: each failing query gets
/// the server's error, the run goes on with the next query, and the exit
/// status says something failed.
#[test]
fn a_failing_query_is_reported_and_the_run_goes_on() {
    let dir = tempdir("tpch-failing");
    for e in engines(&dir, "tpch_failing") {
        let r = run(&dir, &["load"], &e, &["--sf=0.01", "--indexes=no"]);
        assert_eq!(r.code, 0, "{}: {}", e.name, r.stderr);
        (e.query)("DROP TABLE region");
        // Valid on MariaDB only: PostgreSQL and SQLite have no DUAL table.
        let qdir = dir.join(format!("queries-{}", e.name));
        std::fs::create_dir_all(&qdir).unwrap();
        std::fs::write(qdir.join("6-dual.sql"), "SELECT 1 AS one FROM DUAL").unwrap();
        let qd = format!("--query-dir={}", qdir.display());
        let r = run(&dir, &["power"], &e, &["--queries=2,6,5", &qd, "--format=json"]);
        assert_eq!(r.code, 2, "{}: {}", e.name, r.stderr);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let q = |label: &str| {
            doc["streams"][0]["queries"].as_array().unwrap().iter().find(|q| q["query"] == label).unwrap().clone()
        };
        for label in ["Q2", "Q5"] {
            let err = q(label)["error"].as_str().unwrap_or_default().to_lowercase();
            assert!(
                err.contains("region") && (err.contains("exist") || err.contains("no such table")),
                "{}: {label}: {err}",
                e.name
            );
            assert!(q(label)["seconds"].is_null());
        }
        assert!(q("Q6")["seconds"].as_f64().is_some_and(|s| s > 0.0), "{}: the run went on", e.name);
        // The text layout prints the error on the query's line.
        let r = run(&dir, &["power"], &e, &["--queries=2,6,6-dual", &qd]);
        assert_eq!(r.code, 2, "{}: {}", e.name, r.stderr);
        let line = |label: &str| {
            r.stdout.lines().find(|l| l.split_whitespace().next() == Some(label)).unwrap_or_default().to_string()
        };
        assert!(line("Q2").contains("region"), "{}: {}", e.name, r.stdout);
        assert!(
            line("Q6").split_whitespace().rev().nth(1).is_some_and(|s| s.parse::<f64>().is_ok()),
            "{}: {}",
            e.name,
            r.stdout
        );
        let dual_line = line("Q6-dual");
        match e.name {
            "mariadb" => assert!(!dual_line.contains("error"), "{}", r.stdout),
            _ => assert!(dual_line.to_lowercase().contains("dual"), "{}: {}", e.name, r.stdout),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tpch load` into a database that does not exist creates it (as the user
/// could by hand) and says so; an account that may not create databases
/// gets one line saying what to do.
#[test]
fn load_creates_a_missing_database() {
    let dir = tempdir("tpch-newdb");
    let name = format!("dbbench_tpch_new_{}", std::process::id());
    let mut targets: Vec<(&str, Vec<String>, DirectQuery)> = Vec::new();
    if let Some(mut args) = mysql_db(&name) {
        let n = name.clone();
        mysql_query("sbtest", &format!("DROP DATABASE {name}"));
        args.retain(|a| !a.starts_with("--mysql-db="));
        args.push(format!("--mysql-db={name}"));
        targets.push(("mariadb", args, Box::new(move |sql| mysql_query(&n, sql))));
    }
    if let Some(args) = pgsql_db(&name) {
        let n = name.clone();
        pgsql_query("sbtest", &format!("DROP DATABASE {name}"));
        targets.push(("postgresql", args, Box::new(move |sql| pgsql_query(&n, sql))));
    }
    for (engine, args, query) in &targets {
        let mut a = vec!["tpch", "load", "--sf=0.01", "--indexes=no", "--analyze=no"];
        a.extend(args.iter().map(String::as_str));
        let r = dbbench_in(&dir, &a);
        assert_eq!(r.code, 0, "{engine}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.starts_with(&format!("created database '{name}'\n")), "{engine}: {}", r.stdout);
        assert_eq!(query("SELECT count(*) FROM orders"), ["15000"], "{engine}");
        // It exists now: loading again says nothing about creating it.
        let r = dbbench_in(&dir, &a);
        assert_eq!(r.code, 0, "{engine}: {}", r.stderr);
        assert!(!r.stdout.contains("created database"), "{engine}: {}", r.stdout);
        match *engine {
            "mariadb" => mysql_query("sbtest", &format!("DROP DATABASE {name}")),
            _ => pgsql_query("sbtest", &format!("DROP DATABASE {name}")),
        };
    }
    // A role without CREATEDB (the PostgreSQL test server's `sbpass`).
    // (MariaDB answers such an account "access denied" for any database it
    // may not use, existing or not: that error stands as it is.)
    if let Some((_, args, _)) = targets.iter().find(|t| t.0 == "postgresql") {
        let mut a = vec!["tpch", "load", "--sf=0.01", "--pgsql-user=sbpass", "--pgsql-password=secret"];
        a.extend(args.iter().map(String::as_str).filter(|x| !x.starts_with("--pgsql-user=")));
        let r = dbbench_in(&dir, &a);
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("database '{name}' does not exist and cannot be created"))
                && r.stderr.contains("--pgsql-db"),
            "{}",
            r.stderr
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
