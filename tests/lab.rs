//! `dbbench lab` end to end: specs, matrix runs on embedded SQLite and on
//! MariaDB and PostgreSQL servers the lab starts itself, the results store,
//! and a server killed in the middle of a run. The lab itself killed,
//! interrupted or short of disk: tests/faults.rs.

mod common;

use common::{dbbench_in, have_server_binaries, tempdir};
use rusqlite::Connection;
use std::path::Path;

fn write_spec(dir: &Path, text: &str) -> String {
    let p = dir.join("spec.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn store(dir: &Path) -> Connection {
    Connection::open(dir.join("dbbench-lab/results.sqlite")).expect("results store exists")
}

fn count(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn strings(c: &Connection, sql: &str) -> Vec<String> {
    let mut st = c.prepare(sql).unwrap();
    let rows = st.query_map([], |r| r.get::<_, Option<String>>(0)).unwrap();
    rows.map(|r| r.unwrap().unwrap_or_default()).collect()
}

/// Processes whose command line mentions `needle` (servers left behind).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(needle) && !c.contains("cargo") {
                out.push(pid);
            }
        }
    }
    out
}

const SQLITE_SPEC: &str = r#"
[experiment]
name = "sqlite-e2e"
baseline = "rollback"
threads = [1, 2]
repeats = 2
time = 1
sample_interval = 1
seed = 7
options = { tables = 1, table-size = 500 }

[[configuration]]
name = "wal"
server = "sqlite"
pragmas = { journal_mode = "wal" }

[[configuration]]
name = "rollback"
server = "sqlite"
pragmas = { journal_mode = "delete" }

[[workload]]
test = "oltp_point_select"

[[workload]]
name = "rw"
test = "oltp_read_write"
threads = [2]
options = { sqlite-ignore-errors = "busy" }

[hooks]
after_prepare = [{ sql = "CREATE TABLE lab_marker (a INT)" }]
before_run = [{ shell = "test -n \"$DBBENCH_THREADS\" && test \"$DBBENCH_SEED\" -ge 7" }]
before_test = [{ sql = "SELECT count(*) FROM sbtest1; SELECT 'x' WHERE 0" }]
after_test = [{ shell = "echo after $DBBENCH_CONFIGURATION $DBBENCH_WORKLOAD; echo err >&2" }]
"#;

#[test]
fn sqlite_matrix_runs_stores_every_run_and_prints_the_comparison() {
    let dir = tempdir("lab-sqlite");
    let spec = write_spec(&dir, SQLITE_SPEC);

    let plan = dbbench_in(&dir, &["lab", "plan", &spec]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("runs: 12"), "{}", plan.stdout);
    assert!(plan.stdout.contains("estimated duration"), "{}", plan.stdout);
    // What the user waits for besides the runs: the prepares and the disk.
    assert!(
        plan.stdout.contains("preparation (estimates: rates measured")
            && plan.stdout.contains("  2 x 500 rows, SQLite (oltp_point_select)")
            // The two OLTP workloads load the same data: one preparation
            // per configuration (src/lab/spec/datasets.rs).
            && plan.stdout.contains("for 2 preparation(s)")
            && plan.stdout.contains("(data shared with oltp_point_select)")
            && plan.stdout.contains("estimated disk: about ")
            && plan.stdout.contains("free in "),
        "{}",
        plan.stdout
    );

    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("(wal/rollback*100)-100: relative change of the mean tps in %"), "{}", r.stdout);
    // The HTML report is written and named.
    let html = dir.join("dbbench-lab/reports/sqlite-e2e-1.html");
    assert!(
        r.stdout.contains(&format!(
            "HTML report (charts, intervals, latency, system, configuration diff): {}",
            html.display()
        )),
        "{}",
        r.stdout
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"), "no charts in {}", html.display());
    assert!(r.stderr.contains("12/12 runs"), "{}", r.stderr);

    let c = store(&dir);
    assert_eq!(count(&c, "SELECT count(*) FROM experiments WHERE status = 'finished'"), 1);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE status = 'ok'"), 12);
    // Baseline first, then configurations alternate within each repeat.
    let order = strings(&c, "SELECT c.name FROM runs r JOIN cells cl ON r.cell_id = cl.id JOIN configurations c ON c.id = cl.configuration_id ORDER BY r.seq LIMIT 4");
    assert_eq!(order, ["rollback", "wal", "rollback", "wal"]);
    // Per-repeat seeds, the same for every configuration.
    assert_eq!(count(&c, "SELECT count(DISTINCT seed) FROM runs"), 2);
    assert_eq!(count(&c, "SELECT min(seed) FROM runs"), 7);
    // The writing workload gets restored data (and a restart) before every run.
    assert_eq!(
        count(&c, "SELECT count(*) FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = 'rw' AND r.server_restarted = 1"),
        4
    );
    // Configurations alternate (interleaved order), so every run switches
    // data: all 12 restore (copying nothing when the data is unchanged).
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE json_extract(overhead, '$.restore_s') IS NOT NULL"), 12);
    // Figures, series, histograms, samples.
    assert_eq!(
        count(&c, "SELECT count(*) FROM runs WHERE tps > 0 AND events > 0 AND latency_p95_ms > 0 AND time_s > 0.9"),
        12
    );
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE histogram LIKE 'HISTF%'"), 12);
    assert!(count(&c, "SELECT count(DISTINCT run_id) FROM run_intervals WHERE tps > 0") >= 10);
    assert_eq!(count(&c, "SELECT count(DISTINCT run_id) FROM samples WHERE source = 'os'"), 12);
    assert_eq!(
        count(&c, "SELECT count(*) FROM runs WHERE argv LIKE '%--threads=%' AND argv LIKE '%--format=json%'"),
        12
    );
    // Context: host, server (sqlite) version, prepare events.
    assert_eq!(count(&c, "SELECT count(*) FROM experiments WHERE json_extract(host, '$.logical_cpus') >= 1"), 1);
    assert_eq!(count(&c, "SELECT count(*) FROM configurations WHERE server_version <> ''"), 2);
    assert_eq!(count(&c, "SELECT count(*) FROM events WHERE kind = 'prepared'"), 2);
    // Test hooks ran once per configuration × workload; what they printed is kept
    // (the silent before_run step leaves nothing).
    assert_eq!(count(&c, "SELECT count(*) FROM events WHERE kind = 'before_test'"), 4);
    assert_eq!(
        count(&c, "SELECT count(*) FROM events WHERE kind = 'after_test' AND json_extract(detail, '$.error') IS NULL"),
        4
    );
    let outputs = strings(&c, "SELECT json_extract(detail, '$.hook') || ':' || configuration || ':' || workload || ':' || json_extract(detail, '$.output') FROM events WHERE kind = 'hook_output' ORDER BY id");
    assert_eq!(outputs.len(), 8, "{outputs:?}");
    assert!(
        outputs.contains(
            &"before_test:rollback:rw:-- SELECT count(*) FROM sbtest1\n500\n-- SELECT 'x' WHERE 0\n".to_string()
        ),
        "{outputs:?}"
    );
    assert!(
        outputs.contains(&"after_test:wal:oltp_point_select:after wal oltp_point_select\nerr\n".to_string()),
        "{outputs:?}"
    );
    // after_test follows the start of the test's last run (it runs before that run is stored).
    let last_runs = strings(&c, "SELECT max(r.started_at) || '|' || (SELECT min(e.at) FROM events e WHERE e.kind = 'after_test' AND e.configuration = c.name AND e.workload = cl.workload)
        FROM runs r JOIN cells cl ON r.cell_id = cl.id JOIN configurations c ON c.id = cl.configuration_id GROUP BY c.name, cl.workload");
    for pair in &last_runs {
        let (run_start, hook) = pair.split_once('|').unwrap();
        assert!(run_start <= hook, "{pair}");
    }
    // The work directory is gone after a finished experiment.
    // (The HTML reports stay, in their own directory.)
    let left: Vec<_> = std::fs::read_dir(dir.join("dbbench-lab"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir() && e.file_name() != "reports")
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // A second run of a finished spec is a new experiment; summary reads the newest.
    let s = dbbench_in(&dir, &["lab", "summary", &spec]);
    assert_eq!(s.code, 0, "{}", s.stderr);
    assert!(
        s.stdout.contains("oltp_point_select") && s.stdout.contains("mean over 2 ok repeats per cell"),
        "{}",
        s.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn spec_errors_name_file_line_and_key() {
    let dir = tempdir("lab-bad");
    let spec = write_spec(
        &dir,
        &SQLITE_SPEC.replace("server = \"sqlite\"\npragmas = { journal_mode = \"wal\" }", "server = \"maria\""),
    );
    let r = dbbench_in(&dir, &["lab", "plan", &spec]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("spec.toml:14: configuration[1].server: 'maria' is not a server kind"), "{}", r.stderr);

    let spec = write_spec(&dir, &SQLITE_SPEC.replace("repeats = 2", "repeats = 2\nwarmup_time = 3"));
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("spec.toml:7:") && r.stderr.contains("warmup_time"), "{}", r.stderr);

    // A managed server whose programs are missing stops the lab before any run.
    let empty = dir.join("empty-basedir");
    std::fs::create_dir_all(&empty).unwrap();
    let spec = write_spec(
        &dir,
        &format!(
            "{}\n[[configuration]]\nname = \"m\"\nserver = \"mariadb\"\nbasedir = \"{}\"\n",
            SQLITE_SPEC,
            empty.display()
        ),
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("configuration 'm': mariadbd not found in") && r.stderr.contains("basedir"),
        "{}",
        r.stderr
    );
    assert!(!dir.join("dbbench-lab/results.sqlite").exists(), "nothing is stored for an experiment that cannot start");

    let r = dbbench_in(&dir, &["lab", "run", "/nonexistent/x.toml"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("/nonexistent/x.toml: cannot read the spec"), "{}", r.stderr);
    let r = dbbench_in(&dir, &["lab", "frobnicate"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("unknown lab command 'frobnicate'"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

const SHARDS_SPEC: &str = r#"
[experiment]
name = "shards-e2e"
threads = [4]
repeats = 1
time = 2
sample_interval = 1
seed = 7
options = { tables = 1, table-size = 500 }

[[configuration]]
name = "lite"
server = "sqlite"

[[workload]]
name = "whole"
test = "oltp_point_select"

[[workload]]
name = "sharded"
test = "oltp_point_select"
clients = { shards = 2, launcher = "local" }
"#;

/// `clients = { shards = N, launcher = "local" }` (docs/lab.md): the
/// workload's run runs as N shard processes of one run, merged; the store
/// keeps the merged run like any run plus each shard's row and result; the
/// lab's report shows the per-shard table. Spec mistakes about it are one
/// line naming the key.
#[test]
fn a_sharded_workload_runs_as_local_shards_merged_and_stored_with_each_shard() {
    let dir = tempdir("lab-shards");
    let spec = write_spec(&dir, SHARDS_SPEC);
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("shards of sharded runs"), "{}", r.stdout);
    assert!(r.stdout.contains("lite / sharded / 4 thr / repeat 1"), "{}", r.stdout);
    let shard_lines: Vec<&str> = r.stdout.lines().filter(|l| l.trim_start().starts_with("shard ")).collect();
    assert_eq!(shard_lines.len(), 2, "{}", r.stdout);
    assert!(shard_lines.iter().all(|l| l.contains(" ok")), "{shard_lines:?}");

    let c = store(&dir);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE status = 'ok' AND events > 0"), 2);
    let sharded = "(SELECT r.id FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = 'sharded')";
    assert_eq!(count(&c, &format!("SELECT count(*) FROM run_shards WHERE run_id = {sharded}")), 2);
    assert_eq!(
        count(&c, "SELECT count(*) FROM run_shards WHERE json_extract(result, '$.format') = 'dbbench-shard-result'"),
        2
    );
    // The merged run is the shards' sum; each shard ran 2 of the 4 clients.
    assert_eq!(
        count(&c, &format!("SELECT sum(json_extract(summary, '$.events')) FROM run_shards WHERE run_id = {sharded}")),
        count(&c, &format!("SELECT events FROM runs WHERE id = {sharded}"))
    );
    assert_eq!(
        count(&c, &format!("SELECT sum(json_extract(result, '$.cumulative.counts.events')) FROM run_shards WHERE run_id = {sharded}")),
        count(&c, &format!("SELECT events FROM runs WHERE id = {sharded}"))
    );
    assert_eq!(count(&c, "SELECT group_concat(json_extract(summary, '$.threads')) = '2,2' FROM run_shards"), 1);
    assert_eq!(count(&c, &format!("SELECT json_extract(report, '$.threads') FROM runs WHERE id = {sharded}")), 4);
    assert_eq!(count(&c, &format!("SELECT json_array_length(report, '$.fairness') FROM runs WHERE id = {sharded}")), 4);
    assert_eq!(
        count(&c, &format!("SELECT count(*) FROM run_metrics WHERE name = 'start_skew_ms' AND run_id = {sharded}")),
        1
    );
    assert_eq!(count(&c, &format!("SELECT count(*) FROM runs WHERE id = {sharded} AND argv LIKE '%--shard=I/2%'")), 1);
    // The OS samples' client CPU is the shards' together (not 0: no single child).
    assert!(
        count(&c, &format!("SELECT count(*) FROM samples WHERE run_id = {sharded} AND source = 'os' AND json_extract(data, '$.client_cpu_pct') > 0")) >= 1,
        "no client CPU in the sharded run's samples"
    );
    // The unsharded workload's run has no shards.
    assert_eq!(count(&c, "SELECT count(DISTINCT run_id) FROM run_shards"), 1);
    // dbbench report shows the same table.
    let rep = dbbench_in(&dir, &["report", "--store", dir.join("dbbench-lab/results.sqlite").to_str().unwrap()]);
    assert_eq!(rep.code, 0, "{}{}", rep.stdout, rep.stderr);
    assert!(rep.stdout.contains("shards of sharded runs"), "{}", rep.stdout);

    // Mistakes: one line naming the key.
    let bad = |text: &str, want: &str| {
        let spec = write_spec(&dir, text);
        let r = dbbench_in(&dir, &["lab", "plan", &spec]);
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(want), "want '{want}' in: {}", r.stderr);
    };
    bad(
        &SHARDS_SPEC.replace("launcher = \"local\"", "launcher = \"kubernetes\""),
        "workload[2].clients.image: is missing: launcher = \"kubernetes\" needs the container image",
    );
    // Pods on other machines reach neither an embedded database nor a unix socket here.
    bad(
        &SHARDS_SPEC.replace("launcher = \"local\"", "launcher = \"kubernetes\", image = \"x\""),
        "workload[2].clients.launcher: workload 'sharded' on configuration 'lite': \"kubernetes\" pods cannot reach an embedded SQLite file",
    );
    bad(
        &SHARDS_SPEC.replace("launcher = \"local\"", "launcher = \"kubernetes\", image = \"x\"").replace(
            "server = \"sqlite\"",
            "server = \"external\"\ndsn = \"mysql://u@localhost/db?socket=/run/mysqld/mysqld.sock\"",
        ),
        "\"kubernetes\" pods cannot reach a unix socket on this host (/run/mysqld/mysqld.sock)",
    );
    bad(
        &SHARDS_SPEC.replace("launcher = \"local\"", "launcher = \"local\", image = \"x\""),
        "workload[2].clients.image: is an option of launcher = \"kubernetes\"",
    );
    bad(
        &SHARDS_SPEC.replace("shards = 2,", "shards = 8,"),
        "8 shards for workload 'sharded' on configuration 'lite': its 4 thread(s) cannot be split",
    );
    bad(
        &SHARDS_SPEC.replace("server = \"sqlite\"", "server = \"sqlite\"\nclients = { shards = 0 }"),
        "configuration[1].clients.shards: must be a whole number from 1 to 64",
    );
    bad(&SHARDS_SPEC.replace("options = { tables", "options = { shard = \"0/2\", tables"), "shard");
    let _ = std::fs::remove_dir_all(&dir);
}

const KUBE_SPEC: &str = r#"
[experiment]
name = "kube-e2e"
threads = [2]
repeats = 1
time = 2
sample_interval = 1
seed = 7
options = { tables = 1, table-size = 200 }

[[configuration]]
name = "remote"
server = "external"
dsn = "mysql://USER@127.0.0.1:PORT/DB"
password_env = "KUBE_LAB_TEST_PASSWORD"

[[workload]]
name = "pods"
test = "oltp_point_select"
clients = { shards = 2, launcher = "kubernetes", image = "x", kubectl = "KUBECTL", namespace = "bench", start_grace = 2 }
"#;

/// `clients = { launcher = "kubernetes" }` (docs/lab.md#sharded-runs): each
/// run is `dbbench k8s` against the stand-in kubectl (tests/k8s/kubectl: the
/// Indexed Job's pods are local processes running this build), on an
/// external MariaDB reached over TCP with a password: the run is stored
/// merged, with each shard's row and result and the start skew; the run's
/// objects are deleted; the password is in no argv (stored or kubectl's) and
/// nowhere in the lab's directory; the clients' CPU is absent, not 0.
#[test]
fn a_kubernetes_workload_runs_through_dbbench_k8s_and_stores_each_shard() {
    use common::{mysql_db, mysql_query, server_env};
    let (Some(host), Some(port)) = (server_env("DBBENCH_TEST_MYSQL_HOST"), server_env("DBBENCH_TEST_MYSQL_PORT"))
    else {
        return;
    };
    let db = format!("dbbench_lab_kube_{}", std::process::id());
    mysql_db(&db).unwrap();
    let (user, password) = ("kube_lab", format!("kube-pw-{}-x9", std::process::id()));
    for h in ["127.0.0.1", "localhost"] {
        mysql_query(&db, &format!("CREATE USER IF NOT EXISTS '{user}'@'{h}' IDENTIFIED BY '{password}'"));
        mysql_query(&db, &format!("ALTER USER '{user}'@'{h}' IDENTIFIED BY '{password}'"));
        mysql_query(&db, &format!("GRANT ALL PRIVILEGES ON {db}.* TO '{user}'@'{h}'"));
    }
    let dir = tempdir("lab-kube");
    let state = dir.join("kubectl-state");
    let kubectl = format!("{}/tests/k8s/kubectl", env!("CARGO_MANIFEST_DIR"));
    let text = KUBE_SPEC
        .replace("USER", user)
        .replace("127.0.0.1", &host)
        .replace("PORT", &port)
        .replace("DB", &db)
        .replace("KUBECTL", &kubectl);
    let spec = write_spec(&dir, &text);
    let r = common::dbbench_in_env(
        &dir,
        &["lab", "run", &spec],
        &[
            ("KUBE_LAB_TEST_PASSWORD", Some(&password)),
            ("STANDIN_KUBECTL_STATE", Some(state.to_str().unwrap())),
            ("STANDIN_KUBECTL_DBBENCH", Some(env!("CARGO_BIN_EXE_dbbench"))),
            ("STANDIN_KUBECTL_POD_TIMEOUT", Some("120")),
            ("DBBENCH_MYSQL_PASSWORD", None),
            ("MYSQL_PWD", None),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("shards of sharded runs"), "{}", r.stdout);
    assert!(!r.stdout.contains(&password) && !r.stderr.contains(&password));

    let c = store(&dir);
    let run = "(SELECT r.id FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = 'pods')";
    assert_eq!(count(&c, &format!("SELECT count(*) FROM runs WHERE id = {run} AND status = 'ok' AND events > 0")), 1);
    // Two shard rows, each with its result from its pod's log; the merged run is their sum.
    assert_eq!(count(&c, &format!("SELECT count(*) FROM run_shards WHERE run_id = {run}")), 2);
    assert_eq!(
        count(&c, &format!("SELECT count(*) FROM run_shards WHERE run_id = {run} AND json_extract(result, '$.format') = 'dbbench-shard-result'")),
        2
    );
    assert_eq!(
        count(&c, &format!("SELECT sum(json_extract(summary, '$.events')) FROM run_shards WHERE run_id = {run}")),
        count(&c, &format!("SELECT events FROM runs WHERE id = {run}"))
    );
    assert_eq!(
        count(
            &c,
            &format!(
                "SELECT sum(json_extract(result, '$.cumulative.counts.events')) FROM run_shards WHERE run_id = {run}"
            )
        ),
        count(&c, &format!("SELECT events FROM runs WHERE id = {run}"))
    );
    assert_eq!(
        count(
            &c,
            &format!(
                "SELECT group_concat(json_extract(summary, '$.threads')) = '1,1' FROM run_shards WHERE run_id = {run}"
            )
        ),
        1
    );
    assert_eq!(
        count(&c, &format!("SELECT count(*) FROM run_shards WHERE run_id = {run} AND json_extract(summary, '$.node') LIKE 'standin-node-%'")),
        2
    );
    assert_eq!(
        count(&c, &format!("SELECT count(*) FROM run_metrics WHERE name = 'start_skew_ms' AND run_id = {run}")),
        1
    );
    // The stored argv is dbbench k8s's, without the password.
    let argv = strings(&c, &format!("SELECT argv FROM runs WHERE id = {run}")).join("");
    assert!(argv.contains("\"k8s\"") && argv.contains("--shards=2") && argv.contains("--image=x"), "{argv}");
    assert!(argv.contains("--namespace=bench") && argv.contains("--start-grace=2"), "{argv}");
    assert!(argv.contains("oltp_point_select") && argv.contains("--format=json"), "{argv}");
    assert!(!argv.contains(&password), "{argv}");
    // The clients ran elsewhere: their CPU is not measured (absent, not 0),
    // and the run is not flagged for other processes because of it.
    let os = format!("SELECT count(*) FROM samples WHERE run_id = {run} AND source = 'os'");
    assert!(count(&c, &os) >= 1);
    assert_eq!(count(&c, &format!("{os} AND json_type(data, '$.client_cpu_pct') IS NOT 'null'")), 0);
    assert_eq!(count(&c, &format!("{os} AND json_type(data, '$.other_cpu_pct') IS NOT 'null'")), 0);
    assert_eq!(count(&c, &format!("SELECT count(*) FROM runs WHERE id = {run} AND client_cpus IS NOT NULL")), 0);
    // The stand-in's cluster: every kubectl call without the password, the run's objects deleted.
    let calls = std::fs::read_to_string(state.join("calls.log")).unwrap();
    assert!(calls.contains("\"apply\"") && calls.contains("\"delete\""), "{calls}");
    assert!(calls.lines().all(|l| l.starts_with("[\"--namespace=bench\"")), "{calls}");
    assert!(!calls.contains(&password), "{calls}");
    let left: Vec<_> = std::fs::read_dir(state.join("objects")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "left in the cluster: {left:?}");
    // Nothing under the lab's directory holds the password (store, logs).
    let mut stack = vec![dir.join("dbbench-lab")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                assert!(!String::from_utf8_lossy(&bytes).contains(&password), "the password in {}", p.display());
            }
        }
    }

    // Pods that cannot start (no such binary in the "image"): the run is
    // stored failed, each shard's row names its pod's state, the objects
    // are deleted and the logs stay for a look (with --keep-data, after the lab).
    let failing = text
        .replace("kube-e2e", "kube-fail")
        .replace("start_grace = 2", "start_grace = 2, binary = \"/nonexistent/dbbench\"");
    let spec = write_spec(&dir, &failing);
    let r = common::dbbench_in_env(
        &dir,
        &["lab", "run", "--keep-data", &spec],
        &[
            ("KUBE_LAB_TEST_PASSWORD", Some(&password)),
            ("STANDIN_KUBECTL_STATE", Some(state.to_str().unwrap())),
            ("STANDIN_KUBECTL_DBBENCH", Some(env!("CARGO_BIN_EXE_dbbench"))),
        ],
    );
    assert!(!r.stdout.contains(&password) && !r.stderr.contains(&password));
    let failed = "(SELECT r.id FROM runs r JOIN cells cl ON r.cell_id = cl.id JOIN experiments e ON cl.experiment_id = e.id WHERE e.name = 'kube-fail')";
    assert_eq!(
        count(&c, &format!("SELECT count(*) FROM runs WHERE id = {failed} AND status = 'failed'")),
        1,
        "{}{}",
        r.stdout,
        r.stderr
    );
    let error = strings(&c, &format!("SELECT error FROM runs WHERE id = {failed}")).join("");
    assert!(error.contains("shards failed"), "{error}");
    assert_eq!(
        count(&c, &format!("SELECT count(*) FROM run_shards WHERE run_id = {failed} AND result IS NULL AND json_extract(summary, '$.status') LIKE 'failed, exit code %'")),
        2,
        "{:?}",
        strings(&c, &format!("SELECT summary FROM run_shards WHERE run_id = {failed}"))
    );
    let left: Vec<_> = std::fs::read_dir(state.join("objects")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "left in the cluster: {left:?}");
    let mut logs = 0;
    let mut stack = vec![dir.join("dbbench-lab")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("shard-")) {
                logs += 1;
            }
        }
    }
    assert_eq!(logs, 2, "the failed run's shard logs are kept");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn command_workloads_are_parsed_with_regexes() {
    let dir = tempdir("lab-cmd");
    let spec = write_spec(
        &dir,
        r#"
[experiment]
name = "cmd"
threads = [1, 3]
time = 1

[[configuration]]
name = "none"
server = "sqlite"
prepare = "none"

[[workload]]
name = "echo"
command = ["sh", "-c", "echo 'tps = {threads}.5 (repeat {repeat})'; echo lat=$DBBENCH_THREADS"]
metrics = { tps = 'tps = ([0-9.]+)', lat = 'lat=([0-9]+)' }

[[workload]]
name = "silent"
command = ["true"]
threads = [1]
metrics = { tps = 'tps = ([0-9.]+)' }
"#,
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 2, "one run has no metric: {}{}", r.stdout, r.stderr);
    let c = store(&dir);
    let vals = strings(&c, "SELECT CAST(m.value AS TEXT) FROM run_metrics m WHERE m.name = 'tps' ORDER BY m.value");
    assert_eq!(vals, ["1.5", "3.5"]);
    assert_eq!(count(&c, "SELECT count(*) FROM run_metrics WHERE name = 'lat' AND value = 3"), 1);
    let err = strings(&c, "SELECT error FROM runs WHERE status = 'failed'");
    assert_eq!(err, ["metric 'tps' not found in the output"]);
    // One configuration: absolute figures only, 1.5 and 3.5 tps; the failed run is named.
    assert!(r.stdout.contains("tps, absolute"), "{}", r.stdout);
    let none = r.stdout.lines().find(|l| l.trim_start().starts_with("none ")).unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(none.split_whitespace().collect::<Vec<_>>(), ["none", "1.50", "3.50"], "{}", r.stdout);
    assert!(r.stdout.contains("warning: 1 run(s) failed or timed out"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A spec for managed servers whose work directory is `dir/dbbench-lab`.
/// A script workload's modules come from its own directory first (a
/// suite's oltp_common.lua, one read per event, not the built-in one), and
/// a built-in test stays the built-in even when the lab runs in a
/// directory with a file of that name: the command line searches from the
/// current directory, as sysbench, and the lab sets LUA_PATH for its runs.
#[test]
fn script_workloads_use_their_own_modules_and_built_ins_stay_built_in() {
    let dir = tempdir("lab-modules");
    std::fs::create_dir_all(dir.join("suite")).unwrap();
    std::fs::write(
        dir.join("suite/oltp_common.lua"),
        r#"-- the suite's own oltp_common: one point select per event
function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE sbsuite (id INTEGER PRIMARY KEY, c TEXT)")
  con:query("INSERT INTO sbsuite VALUES (1, 'a')")
end
function thread_init() con = sysbench.sql.driver():connect() end
function event() con:query("SELECT c FROM sbsuite WHERE id = 1") end
"#,
    )
    .unwrap();
    std::fs::write(dir.join("suite/suite_ro.lua"), "require('oltp_common')\n").unwrap();
    // A decoy where the lab runs: `test = "oltp_point_select"` is the built-in.
    std::fs::write(dir.join("oltp_point_select.lua"), "error('the decoy ran')\n").unwrap();
    let spec = write_spec(
        &dir,
        r#"
[experiment]
name = "modules"
threads = [1]
time = 1
options = { table-size = 100 }

[[configuration]]
name = "lite"
server = "sqlite"

[[workload]]
test = "suite/suite_ro.lua"
options = { table-size = 1 }

[[workload]]
test = "oltp_point_select"
"#,
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = store(&dir);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE status = 'ok'"), 2);
    let q = "SELECT count(*) FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = 'suite_ro' AND r.events > 0 AND r.reads = r.events";
    assert_eq!(count(&c, q), 1, "the suite's own oltp_common makes one read per event");
    let q = "SELECT count(*) FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = 'oltp_point_select' AND r.events > 0 AND r.reads = r.events";
    assert_eq!(count(&c, q), 1, "the built-in oltp_point_select ran");
    let _ = std::fs::remove_dir_all(&dir);
}

fn managed_spec(name: &str, configs: &str, workloads: &str, extra: &str) -> String {
    format!(
        r#"
[experiment]
name = "{name}"
threads = [1]
time = 1
sample_interval = 1
options = {{ tables = 1, table-size = 1000 }}
{extra}
{configs}
{workloads}
"#
    )
}

const MARIADB: &str = r#"
[[configuration]]
name = "mariadb"
server = "mariadb"
server_options = ["--innodb_buffer_pool_size=64M", "--max_connections=100", "--key_buffer_size=8M"]
"#;

const POSTGRESQL: &str = r#"
[[configuration]]
name = "postgresql"
server = "postgresql"
server_options = ["shared_buffers=32MB", "fsync=off"]
"#;

#[test]
fn managed_mariadb_and_postgresql_matrix() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("lab-managed");
    let spec = write_spec(
        &dir,
        &managed_spec(
            "managed",
            &format!("{MARIADB}{POSTGRESQL}"),
            r#"
[[workload]]
test = "oltp_point_select"
threads = [1, 4]
[[workload]]
test = "oltp_update_index"
threads = [2]
"#,
            r#"
[hooks]
after_start = [{ sql = "CREATE TABLE IF NOT EXISTS lab_hook (a INT); INSERT INTO lab_hook VALUES (1)" }]
"#,
        ),
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = store(&dir);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE status = 'ok' AND tps > 0"), 6);
    // What each run's server said it is, per run, and in the report's header.
    let products = strings(&c, "SELECT DISTINCT r.server_product || ' ' || r.server_version FROM runs r JOIN cells cl ON r.cell_id = cl.id JOIN configurations cf ON cf.id = cl.configuration_id ORDER BY cf.position");
    assert!(
        products.len() == 2 && products[0].starts_with("MariaDB 1") && products[1].starts_with("PostgreSQL 1"),
        "{products:?}"
    );
    let report = dbbench_in(&dir, &["report", &spec]);
    assert!(
        report.stdout.contains(&format!(
            "configurations: mariadb (mariadb: {}), postgresql (postgresql: {})",
            products[0], products[1]
        )),
        "{}",
        report.stdout
    );
    let versions = strings(&c, "SELECT server_version FROM configurations ORDER BY position");
    assert!(versions[0].contains("MariaDB"), "{versions:?}");
    assert!(versions[1].chars().next().is_some_and(|c| c.is_ascii_digit()), "{versions:?}");
    assert_eq!(
        count(&c, "SELECT count(*) FROM configurations WHERE json_extract(variables, '$.key_buffer_size') = '8388608'"),
        1
    );
    assert_eq!(
        count(&c, "SELECT count(*) FROM configurations WHERE json_extract(variables, '$.shared_buffers') = '4096'"),
        1
    );
    // Server status samples from both servers.
    assert!(
        count(
            &c,
            "SELECT count(*) FROM samples WHERE source = 'server' AND json_extract(data, '$.Questions') IS NOT NULL"
        ) >= 3
    );
    assert!(count(&c, "SELECT count(*) FROM samples WHERE source = 'server' AND json_extract(data, '$.\"db.xact_commit\"') IS NOT NULL") >= 3);
    // The managed servers' own CPU (PostgreSQL's backends are its children) in every run's OS samples.
    assert_eq!(
        count(&c, "SELECT count(DISTINCT run_id) FROM samples WHERE source = 'os' AND json_extract(data, '$.server_cpu_pct') > 0"),
        6
    );
    // The writing workload restarted its server on restored data.
    assert_eq!(
        count(&c, "SELECT count(*) FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = 'oltp_update_index' AND r.server_restarted = 1 AND json_extract(r.overhead, '$.start_s') > 0"),
        2
    );
    // Each server's own log, start to stop, is kept.
    assert!(count(&c, "SELECT count(*) FROM events WHERE kind = 'server_log' AND configuration = 'mariadb' AND detail LIKE '%ready for connections%'") >= 2);
    assert!(count(&c, "SELECT count(*) FROM events WHERE kind = 'server_log' AND configuration = 'postgresql' AND detail LIKE '%database system is ready%'") >= 2);
    // No server is left running.
    assert!(processes_mentioning(&dir.join("dbbench-lab").display().to_string()).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_killed_mid_run_is_a_failed_run_and_the_matrix_goes_on() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("lab-crash");
    let spec = write_spec(
        &dir,
        &managed_spec(
            "crash",
            MARIADB,
            "[[workload]]\ntest = \"oltp_point_select\"\nthreads = [2]",
            r#"repeats = 2
time = 3
[hooks]
before_run = [{ shell = "if [ \"$DBBENCH_REPEAT\" = 1 ]; then (sleep 1; kill -9 \"$DBBENCH_SERVER_PID\") >/dev/null 2>&1 & fi" }]
"#,
        )
        .replace("time = 1\n", ""),
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let c = store(&dir);
    let rows = strings(&c, "SELECT status || ': ' || coalesce(error, '') FROM runs ORDER BY seq");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows[0].starts_with("failed: the server (pid ") && rows[0].contains("died during the run"), "{rows:?}");
    assert_eq!(rows[1], "ok: ");
    let excerpt = strings(&c, "SELECT log_excerpt FROM runs WHERE repeat = 1");
    assert!(!excerpt[0].trim().is_empty(), "a failed run keeps an excerpt of the server's error log");
    assert_eq!(count(&c, "SELECT count(*) FROM events WHERE kind = 'crash'"), 1);
    assert!(processes_mentioning(&dir.join("dbbench-lab").display().to_string()).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_results_store_on_postgresql_or_mariadb_holds_the_runs() {
    use common::{mysql_db, mysql_query, pgsql_db, pgsql_query, server_env};
    let (Some(pg_host), Some(pg_port), Some(my_sock)) = (
        server_env("DBBENCH_TEST_PGSQL_HOST"),
        server_env("DBBENCH_TEST_PGSQL_PORT"),
        server_env("DBBENCH_TEST_MYSQL_SOCKET"),
    ) else {
        return;
    };
    let dir = tempdir("lab-server-store");
    let spec_text = r#"
[experiment]
name = "team"
threads = [1, 2]
time = 1

[[configuration]]
name = "none"
server = "sqlite"
prepare = "none"

[[workload]]
name = "echo"
command = ["sh", "-c", "echo tps = {threads}"]
metrics = { tps = 'tps = ([0-9.]+)' }
"#;
    let spec = write_spec(&dir, spec_text);
    let db = format!("dbbench_lab_store_{}", std::process::id());
    pgsql_db(&db).unwrap();
    mysql_db(&db).unwrap();
    for (url, pg) in [
        (format!("postgresql://sbtest@localhost:{pg_port}/{db}?host={pg_host}"), true),
        (format!("mysql://sbtest@localhost/{db}?socket={my_sock}"), false),
    ] {
        let query = |sql: &str| if pg { pgsql_query(&db, sql) } else { mysql_query(&db, sql) };
        let r = dbbench_in(&dir, &["lab", "run", &format!("--store={url}"), &spec]);
        assert_eq!(r.code, 0, "{url}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stdout.contains("tps, absolute") && r.stdout.contains(&format!("results: {url} (experiment id 1)")),
            "{}",
            r.stdout
        );
        assert_eq!(query("SELECT count(*) FROM runs WHERE status = 'ok'"), ["2"], "{url}");
        assert_eq!(query("SELECT count(*) FROM run_metrics WHERE name = 'tps' AND value IN (1, 2)"), ["2"], "{url}");
        assert_eq!(query("SELECT status FROM experiments"), ["finished"], "{url}");
        assert_eq!(query("SELECT version FROM dbbench_schema"), ["4"], "{url}");
        assert_eq!(query("SELECT DISTINCT server_product FROM runs"), ["SQLite"], "{url}");
        // The spec's own `store = URL` is taken as is, not as a path.
        let spec2 = dir.join("spec-with-store.toml");
        std::fs::write(&spec2, spec_text.replace("time = 1\n", &format!("time = 1\nstore = \"{url}\"\n"))).unwrap();
        let s = dbbench_in(&dir, &["lab", "summary", &spec2.display().to_string()]);
        assert_eq!(s.code, 0, "{url}: {}", s.stderr);
        assert!(
            s.stdout.contains("mean over 1 ok repeat per cell")
                && s.stdout.contains(&format!("experiment id 1 (finished) in {url}")),
            "{}",
            s.stdout
        );
    }
    assert!(!dir.join("dbbench-lab/results.sqlite").exists(), "nothing went to the default SQLite store");
    // A store it cannot reach is one line naming it (password hidden) and what to check.
    let r = dbbench_in(
        &dir,
        &["lab", "summary", &format!("--store=mysql://sbtest:pw@localhost/{db}_missing?socket={my_sock}"), &spec],
    );
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("results store mysql://sbtest:<hidden>@localhost/")
            && r.stderr.contains("cannot connect")
            && !r.stderr.contains(":pw@"),
        "{}",
        r.stderr
    );
    pgsql_query("sbtest", &format!("DROP DATABASE {db}"));
    mysql_query(&db, &format!("DROP DATABASE {db}"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prepare_once_keeps_each_workloads_data_between_runs() {
    let dir = tempdir("lab-once");
    let spec = write_spec(
        &dir,
        r#"
[experiment]
name = "once"
threads = [1]
repeats = 2
time = 1
order = "grouped"
options = { tables = 1, table-size = 300 }

[[configuration]]
name = "lite"
server = "sqlite"
prepare = "once"

[[workload]]
test = "oltp_point_select"

[[workload]]
test = "oltp_delete"
"#,
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = store(&dir);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE status = 'ok'"), 4);
    // One prepare per workload, into its own data; nothing is ever restored.
    assert_eq!(count(&c, "SELECT count(*) FROM events WHERE kind = 'prepared'"), 2);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE json_extract(overhead, '$.restore_s') IS NOT NULL"), 0);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE json_extract(overhead, '$.prepare_s') IS NOT NULL"), 2);
    // Grouped order: the second repeat of each workload reuses the running data.
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE server_restarted = 0"), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// TPC-H in the lab, as the seeds' DBT3 pages: MariaDB against PostgreSQL,
/// both managed, the 22 queries at SF 0.01 on one load per server, the
/// per-query table with ratios and the answers checked across engines.
#[test]
fn tpch_on_managed_mariadb_and_postgresql() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("lab-tpch");
    let spec = write_spec(
        &dir,
        &format!(
            r#"
[experiment]
name = "dbt3"
{MARIADB}{POSTGRESQL}
[[workload]]
name = "h"
tpch = {{ sf = 0.01, params = "validation", timeout = "120s" }}
"#
        ),
    );
    let plan = dbbench_in(&dir, &["lab", "plan", &spec]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(plan.stdout.contains("runs: 44") && plan.stdout.contains("each run one TPC-H query"), "{}", plan.stdout);
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = store(&dir);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE status = 'ok'"), 44);
    assert_eq!(count(&c, "SELECT count(*) FROM run_metrics WHERE name = 'seconds' AND value > 0"), 44);
    // One load per server, shared by the 22 query workloads.
    assert_eq!(count(&c, "SELECT count(*) FROM events WHERE kind = 'prepared'"), 2);
    // The per-query table: 22 rows and the geometric mean, every answer the same on both engines.
    let table = r.stdout.split("TPC-H h: query times").nth(1).expect("per-query table");
    let rows: Vec<&str> = table.lines().filter(|l| l.trim_start().starts_with('Q')).collect();
    assert_eq!(rows.len(), 22, "{table}");
    assert!(rows.iter().all(|l| l.trim_end().ends_with("same")), "{table}");
    assert!(table.contains("geomean (22)"), "{table}");
    assert!(!r.stdout.contains("WRONG ANSWER"), "{}", r.stdout);
    // A ratio per query, MariaDB's time over... PostgreSQL's over MariaDB's (the baseline).
    let q1: Vec<&str> = rows.iter().find(|l| l.trim_start().starts_with("Q1 ")).unwrap().split_whitespace().collect();
    let (my, pg, ratio): (f64, f64, f64) =
        (q1[1].parse().unwrap(), q1[2].parse().unwrap(), q1[3].trim_end_matches(['*', '~', '?']).parse().unwrap());
    assert!((ratio - pg / my).abs() <= 0.02 * ratio + 0.01, "{q1:?}");
    // The HTML report has the per-query bar charts.
    let html = std::fs::read_to_string(dir.join("dbbench-lab/reports/dbt3-1.html")).unwrap();
    assert!(html.contains("TPC-H h: seconds per query") && html.contains("TPC-H h: time relative to mariadb"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The seeds' QUERIES_AT_ONCE=0: a restart before every query, on the data
/// loaded once; a timed-out query is stored as such and shown as >T.
#[test]
fn tpch_restart_before_every_query_and_timeouts_in_the_lab() {
    let dir = tempdir("lab-tpch-restart");
    std::fs::create_dir_all(dir.join("q")).unwrap();
    std::fs::write(
        dir.join("q/1-slow.sql"),
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    )
    .unwrap();
    let spec = write_spec(
        &dir,
        r#"
[experiment]
name = "restart"
repeats = 2

[[configuration]]
name = "a"
server = "sqlite"

[[workload]]
tpch = { sf = 0.01, queries = "6,1-slow", timeout = 1, restart = "run", query_dir = "q" }
"#,
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    // A query stopped at its timeout is a censored figure, not a failure:
    // exit 0, as `tpch power` exits (tests/tpch.rs, timeouts_stop_the_query_on_the_server).
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("2 TPC-H query run(s) reached their timeout"), "{}", r.stderr);
    let c = store(&dir);
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE server_restarted = 1"), 4, "a restart before every run");
    assert_eq!(count(&c, "SELECT count(*) FROM events WHERE kind = 'prepared'"), 1);
    // Queries cannot change the data: the restart alone makes the next run
    // cold, and only the first run (after the load) restores.
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE json_extract(overhead, '$.restore_s') IS NOT NULL"), 1);
    assert_eq!(count(&c, "SELECT count(*) FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = 'tpch:Q1-slow' AND r.status = 'timeout'"), 2);
    assert_eq!(count(&c, "SELECT count(*) FROM run_metrics WHERE name = 'timeout_s' AND value = 1"), 2);
    let table = r.stdout.split("TPC-H tpch: query times").nth(1).expect("per-query table");
    let slow: Vec<&str> =
        table.lines().find(|l| l.trim_start().starts_with("Q1-slow")).unwrap().split_whitespace().collect();
    assert_eq!(slow[1], ">1", "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The seeds' per-query STARTUP_PARAMS: a query's `server_options` start
/// the managed server with them for that query's runs only, and the load
/// runs under the configuration's own options.
#[test]
fn tpch_per_query_server_options_restart_the_server_with_them() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("lab-tpch-options");
    std::fs::create_dir_all(dir.join("q")).unwrap();
    // A "query" that shows the server's setting, and one that shows it after the variant ran.
    std::fs::write(dir.join("q/6-setting.sql"), "SELECT @@max_heap_table_size").unwrap();
    std::fs::write(dir.join("q/6-after.sql"), "SELECT @@max_heap_table_size").unwrap();
    let spec = write_spec(
        &dir,
        &format!(
            r#"
[experiment]
name = "opts"
order = "grouped"
{MARIADB}
[[workload]]
tpch = {{ sf = 0.01, queries = "6,6-setting,6-after", query_dir = "q", server_options = {{ "6-setting" = {{ mariadb = ["--max-heap-table-size=33554432"] }} }} }}
"#
        ),
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = store(&dir);
    let answer = |w: &str| -> String {
        c.query_row(
            "SELECT json_extract(r.report, '$.streams[0].queries[0].answer.rows[0][0]') FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.workload = ?1",
            [w],
            |row| row.get(0),
        )
        .unwrap()
    };
    assert_eq!(answer("tpch:Q6-setting"), "33554432", "the query's own option applied");
    assert_eq!(answer("tpch:Q6-after"), "16777216", "and only to that query: the server restarts without it");
    assert_eq!(count(&c, "SELECT count(*) FROM runs WHERE server_restarted = 1"), 3, "load/Q6, Q6-setting, Q6-after");
    // A query not in the list is refused when the spec is read.
    let bad = write_spec(&dir, "[experiment]\nname = \"b\"\n[[configuration]]\nname = \"s\"\nserver = \"sqlite\"\n[[workload]]\ntpch = { sf = 0.01, queries = \"1\", server_options = { \"2\" = [\"x\"] } }\n");
    let r = dbbench_in(&dir, &["lab", "plan", &bad]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("server_options") && r.stderr.contains("'2' is not one of this workload's queries"),
        "{}",
        r.stderr
    );
    // Options for a server dbbench does not start cannot apply.
    let bad = write_spec(&dir, "[experiment]\nname = \"b\"\n[[configuration]]\nname = \"s\"\nserver = \"sqlite\"\n[[workload]]\ntpch = { sf = 0.01, queries = \"1\", server_options = { \"1\" = [\"x\"] } }\n");
    let r = dbbench_in(&dir, &["lab", "plan", &bad]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("configuration 's' is not one"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// restart = "run" means every query run meets a freshly started server,
/// the first one after the load too (not the server that just loaded it),
/// also under prepare = "once", where the load happens on the run's server.
#[test]
fn tpch_restart_run_restarts_after_the_load_too() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("lab-tpch-cold");
    let spec = write_spec(
        &dir,
        &format!(
            r#"
[experiment]
name = "cold"
prepare = "once"
{MARIADB}
[[workload]]
tpch = {{ sf = 0.01, queries = "6,14", restart = "run" }}
"#
        ),
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = store(&dir);
    // Stops: after the load, before Q14, at the end.
    assert_eq!(count(&c, "SELECT count(*) FROM events WHERE kind = 'server_log'"), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 21, item 10: a run that fails on a Lua error stores the error's
/// first FATAL line (the cause), not only the traceback's last lines; an
/// unknown or badly valued dbbench option in a spec's `options` fails
/// `lab plan` (and `lab run` before anything starts), naming the line,
/// the workload and the configuration.
#[test]
fn lua_errors_store_their_cause_and_bad_options_fail_the_plan() {
    let dir = tempdir("lab-cause");
    std::fs::write(dir.join("bad.lua"), "function event()\n  local t = nil\n  return t.x\nend\n").unwrap();
    let spec = write_spec(
        &dir,
        "[experiment]\nname = \"cause\"\nthreads = [1]\ntime = 1\n\n[[configuration]]\nname = \"a\"\nserver = \"sqlite\"\nprepare = \"none\"\n\n[[workload]]\ntest = \"bad.lua\"\n",
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let errors = strings(&store(&dir), "SELECT error FROM runs");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains("FATAL: `thread_run' function failed: ")
            && errors[0].contains("bad.lua:3: attempt to index"),
        "{}",
        errors[0]
    );
    let text = "[experiment]\nname = \"opts\"\nthreads = [1]\ntime = 1\noptions = { tables = 1 }\n\n[[configuration]]\nname = \"a\"\nserver = \"sqlite\"\n\n[[workload]]\ntest = \"oltp_point_select\"\noptions = { table-size = 10, range-sise = 5 }\n";
    for (spec_text, want) in [
        (text.to_string(), "spec.toml:13: workload 'oltp_point_select' on configuration 'a': invalid option: --range-sise=5"),
        (
            text.replace("range-sise = 5", "range-size = \"many\""),
            "spec.toml:13: workload 'oltp_point_select' on configuration 'a': Invalid value for the 'range_size' option: 'many'",
        ),
        (
            text.replace("range-sise = 5", "range-size = 5").replace("server = \"sqlite\"", "server = \"sqlite\"\noptions = { sqlite-nonsense = 1 }"),
            "spec.toml:10: workload 'oltp_point_select' on configuration 'a': invalid option: --sqlite-nonsense=1",
        ),
    ] {
        let spec = write_spec(&dir, &spec_text);
        for cmd in ["plan", "run"] {
            let r = dbbench_in(&dir, &["lab", cmd, &spec]);
            assert_eq!(r.code, 1, "{cmd}: {}{}", r.stdout, r.stderr);
            assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
            assert!(r.stderr.contains(want), "{cmd}: {}", r.stderr);
        }
    }
    let spec = write_spec(&dir, &text.replace("range-sise = 5", "range-size = 5"));
    let r = dbbench_in(&dir, &["lab", "plan", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// examples/segmented-key-cache.toml reproduces the seed's key cache study,
/// which measured concurrency: every thread does the same work per event
/// (about `random-points` rows), whatever the thread count. The example
/// itself is run here, scaled down (100 000 rows, 2 s runs, one
/// configuration, the 10-point workload), on a managed MariaDB; rows per
/// event come from the server's `Rows_sent` read by hooks around each run,
/// less what the status sampler's `SHOW GLOBAL STATUS` calls sent. (A
/// smaller table would not do: with the special distribution many of an
/// event's points fall on the same key once a thread's slice of k is a few
/// thousand values, which is the workload, not a defect.)
#[test]
fn segmented_key_cache_example_does_comparable_work_at_1_and_16_threads() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("lab-keycache");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/segmented-key-cache.toml");
    let mut spec: toml::Table = std::fs::read_to_string(&example).unwrap().parse().unwrap();
    let exp = spec["experiment"].as_table_mut().unwrap();
    exp.insert("threads".into(), toml::Value::Array(vec![1.into(), 16.into()]));
    for (k, v) in [("repeats", 1), ("warmup", 0), ("time", 2)] {
        exp.insert(k.into(), v.into());
    }
    exp.insert("drop_caches".into(), false.into());
    exp["options"].as_table_mut().unwrap().insert("table-size".into(), 100_000.into());
    let configs = spec["configuration"].as_array_mut().unwrap();
    configs.truncate(1);
    let options = configs[0]["server_options"].as_array_mut().unwrap();
    for o in options.iter_mut() {
        if o.as_str().unwrap().starts_with("--key_buffer_size=") {
            *o = "--key_buffer_size=16M".into();
        }
    }
    let workloads = spec["workload"].as_array_mut().unwrap();
    workloads.truncate(1);
    let points = workloads[0]["options"]["random-points"].as_integer().unwrap() as f64;
    let status = toml::Value::Array(vec![toml::Value::Table(
        [("sql".to_string(), toml::Value::from("SHOW GLOBAL STATUS LIKE 'Rows_sent'"))].into_iter().collect(),
    )]);
    spec.insert(
        "hooks".into(),
        toml::Value::Table([("before_run".into(), status.clone()), ("after_run".into(), status)].into_iter().collect()),
    );
    let path = write_spec(&dir, &toml::to_string(&spec).unwrap());
    let r = dbbench_in(&dir, &["lab", "run", &path]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);

    let c = store(&dir);
    let rows_sent = |hook: &str, threads: i64| -> f64 {
        let out: String = c
            .query_row(
                "SELECT json_extract(detail, '$.output') FROM events WHERE kind = 'hook_output' AND json_extract(detail, '$.hook') = ?1 AND json_extract(detail, '$.threads') = ?2",
                rusqlite::params![hook, threads],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("{hook} at {threads} threads: {e}"));
        let line = out.lines().find(|l| l.starts_with("Rows_sent\t")).unwrap_or_else(|| panic!("{out}"));
        line["Rows_sent\t".len()..].trim().parse().unwrap()
    };
    let mut per_event = Vec::new();
    for threads in [1i64, 16] {
        let (run_id, events): (i64, i64) = c
            .query_row(
                "SELECT r.id, r.events FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.threads = ?1 AND r.status = 'ok'",
                [threads],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        // The sampler's SHOW GLOBAL STATUS calls: one row per variable each.
        let sampler_rows: f64 = c
            .query_row(
                "SELECT count(*) * (SELECT count(*) FROM json_each((SELECT data FROM samples WHERE run_id = ?1 AND source = 'server' ORDER BY time_s LIMIT 1))) FROM samples WHERE run_id = ?1 AND source = 'server'",
                [run_id],
                |r| r.get(0),
            )
            .unwrap();
        let rows = rows_sent("after_run", threads) - rows_sent("before_run", threads) - sampler_rows;
        assert!(events > 100, "{threads} threads: only {events} events");
        per_event.push(rows / events as f64);
    }
    eprintln!("rows per event: 1 thread {:.2}, 16 threads {:.2}", per_event[0], per_event[1]);
    for (threads, x) in [1, 16].iter().zip(&per_event) {
        assert!(
            (0.85 * points..=1.02 * points).contains(x),
            "{threads} threads: {x:.2} rows per event, expected about {points} (one row per point)"
        );
    }
    assert!((per_event[1] / per_event[0] - 1.0).abs() < 0.1, "1 and 16 threads do different work: {per_event:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `server = "mysql"` / `--kind=mysql` where `mysqld` is MariaDB's (Debian):
/// refused with one line saying how to point dbbench at a MySQL build,
/// before anything is initialised or run (a MariaDB-vs-MySQL study would
/// otherwise compare MariaDB with itself).
#[test]
fn mysql_kind_refuses_a_mysqld_that_is_mariadb() {
    if !have_server_binaries() {
        return;
    }
    let mysqld = ["/usr/sbin/mysqld", "/usr/bin/mysqld"].into_iter().find(|p| Path::new(p).exists());
    let is_mariadb = mysqld.is_some_and(|p| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("MariaDB"))
    });
    if !is_mariadb {
        common::skipped(&format!("no mysqld here that is MariaDB's ({mysqld:?})"));
        return;
    }
    let dir = tempdir("lab-mysql-kind");
    let spec = write_spec(
        &dir,
        &managed_spec(
            "mysql-kind",
            "[[configuration]]\nname = \"mysql\"\nserver = \"mysql\"\n",
            "[[workload]]\ntest = \"oltp_point_select\"\n",
            "",
        ),
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("configuration 'mysql': kind \"mysql\" but ")
            && r.stderr.contains(" is MariaDB 1")
            && r.stderr.contains("set basedir"),
        "{}",
        r.stderr
    );
    assert!(!dir.join("dbbench-lab/results.sqlite").exists(), "nothing ran");
    let srv = dir.join("srv");
    let r = dbbench_in(&dir, &["server", "start", "--kind=mysql", &format!("--dir={}", srv.display())]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("kind \"mysql\" but ") && r.stderr.contains("--basedir"), "{}", r.stderr);
    assert!(!srv.join("data/mysql").exists(), "no datadir initialised");
    assert!(processes_mentioning(&srv.display().to_string()).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A managed MariaDB that is restarted meets its data cold. InnoDB's
/// buffer pool dump (on by default: a quarter of the pool's page list
/// written at shutdown, those pages read back at startup in the background)
/// would warm a run the lab records as cold.
#[test]
fn a_restarted_managed_mariadb_starts_with_a_cold_buffer_pool() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("lab-cold-pool");
    let srv = dir.join("srv");
    let server = common::Managed::start(&srv, "mariadb", &[]);
    let driver = server.driver_args();
    for command in ["prepare", "run"] {
        let r = dbbench_in(
            &dir,
            &common::args(&driver, &["oltp_read_only", "--tables=1", "--table-size=20000", "--time=1", command]),
        );
        assert_eq!(r.code, 0, "{command}: {}{}", r.stdout, r.stderr);
    }
    let table_pages = |conn: &mut mysql::Conn| -> u64 {
        use mysql::prelude::Queryable;
        // By tablespace: pages read back from a dump show no TABLE_NAME until
        // the table is opened.
        conn.query_first(
            "SELECT count(*) FROM information_schema.INNODB_BUFFER_PAGE p \
             JOIN information_schema.INNODB_SYS_TABLES t ON p.SPACE = t.SPACE WHERE t.NAME = 'sbtest/sbtest1'",
        )
        .unwrap()
        .unwrap()
    };
    assert!(table_pages(&mut server.mysql()) > 10, "the run read the table through the pool");
    drop(server);
    let server = common::Managed::start(&srv, "mariadb", &[]);
    let mut conn = server.mysql();
    // A load from the dump ("Loading…", "Loaded n/m pages") ends within seconds on this table.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        use mysql::prelude::Queryable;
        let status: Option<(String, String)> =
            conn.query_first("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'").unwrap();
        let status = status.map(|(_, v)| v).unwrap_or_default();
        let settled = status.is_empty() || status.contains("completed") || status.contains("aborted");
        if settled || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(table_pages(&mut conn), 0, "no page of the table is in the pool before anything reads it");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The host's busy share (user + system of all CPUs, percent) over `ms`, from /proc/stat.
fn host_busy_pct(ms: u64) -> f64 {
    let read = || -> Vec<u64> {
        let stat = std::fs::read_to_string("/proc/stat").unwrap();
        stat.lines().next().unwrap().split_whitespace().skip(1).take(8).map(|v| v.parse().unwrap()).collect()
    };
    let a = read();
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let b = read();
    let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| (y - x) as f64).collect();
    let total: f64 = d.iter().sum();
    100.0 * (d[0] + d[1] + d[2] + d[5] + d[6]) / total.max(1.0)
}

/// Busy-looping processes, killed when dropped.
struct Hog(Vec<std::process::Child>);

impl Drop for Hog {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SIGTERM: timeout(1) passes it on to its loop (SIGKILL would leave the loop running).
            let _ = std::process::Command::new("kill").arg(c.id().to_string()).status();
            let _ = c.wait();
        }
    }
}

/// A run with two CPU hogs beside it is flagged (other processes' CPU,
/// with the figure), marked `!` in the report with the reasons under the
/// table, listed in the JSON export, and `lab run` warns with what to do;
/// the same run on a quiet host is not flagged.
#[test]
fn a_cpu_hog_beside_a_run_flags_it_and_a_quiet_run_is_not_flagged() {
    let spec_text = r#"
[experiment]
name = "validity"
threads = [1]
repeats = 1
time = 3
sample_interval = 1
options = { tables = 1, table-size = 1000 }

[[configuration]]
name = "lite"
server = "sqlite"

[[workload]]
test = "oltp_point_select"
"#;
    let other_cpu = |dir: &Path| -> f64 {
        let c = store(dir);
        let v: Vec<f64> = strings(&c, "SELECT data FROM samples WHERE source = 'os'")
            .iter()
            .map(|t| serde_json::from_str::<serde_json::Value>(t).unwrap())
            .filter_map(|s| s["other_cpu_pct"].as_f64())
            .collect();
        assert!(!v.is_empty(), "samples have other_cpu_pct");
        let client: Vec<f64> = strings(&c, "SELECT data FROM samples WHERE source = 'os'")
            .iter()
            .filter_map(|t| serde_json::from_str::<serde_json::Value>(t).unwrap()["client_cpu_pct"].as_f64())
            .collect();
        assert!(client.iter().any(|c| *c > 0.5), "the client's CPU is seen: {client:?}");
        v.iter().sum::<f64>() / v.len() as f64
    };

    // Quiet.
    let quiet = tempdir("lab-validity-quiet");
    let spec = write_spec(&quiet, spec_text);
    let before = host_busy_pct(1000);
    let r = dbbench_in(&quiet, &["lab", "run", &spec]);
    let after = host_busy_pct(1000);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let quiet_other = other_cpu(&quiet);
    let quiet_host = before < 10.0 && after < 10.0;
    // SQLite runs inside the client: a busy client is never "client_cpu_bound".
    assert!(!r.stderr.contains("client_cpu_bound"), "{}", r.stderr);
    if quiet_host {
        assert!(!r.stderr.contains("flagged"), "a quiet run is flagged: {}{}", r.stdout, r.stderr);
        assert!(!r.stdout.contains("runs flagged"), "{}", r.stdout);
    } else {
        eprintln!("the host was busy ({before:.0}% / {after:.0}% before / after): not checking that the quiet run is unflagged");
    }

    // Two hogs beside the same run.
    let noisy = tempdir("lab-validity-hog");
    let spec = write_spec(&noisy, spec_text);
    let hog = Hog((0..2)
        .map(|_| {
            // Bounded even if this test is killed: timeout(1) ends it after a minute.
            std::process::Command::new("timeout").args(["60", "sh", "-c", "while :; do :; done"]).spawn().unwrap()
        })
        .collect());
    let r = dbbench_in(&noisy, &["lab", "run", &spec]);
    drop(hog);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let noisy_other = other_cpu(&noisy);
    // Two busy loops take most of two CPUs from an idle host (at least a fifth of all CPUs' time on any
    // host); on a busy one they only share what the others leave.
    assert!(
        !quiet_host || noisy_other > quiet_other + 20.0,
        "other processes' CPU {noisy_other:.1}% with the hogs, {quiet_other:.1}% without"
    );
    assert!(
        r.stderr.contains("warning: 1 of 1 run(s) flagged")
            && r.stderr.contains("lite / oltp_point_select / 1 thr / repeat 1: ")
            && r.stderr.contains("other_processes: processes other than the client and the server used ")
            && r.stderr.contains("what to do: ")
            && r.stderr.contains("stop other processes"),
        "{}",
        r.stderr
    );
    // The report: the cell marked, the mark explained, the reasons listed.
    let rep = dbbench_in(&noisy, &["report", &spec, "--export-json=r.json"]);
    assert_eq!(rep.code, 0, "{}{}", rep.stdout, rep.stderr);
    let cell =
        rep.stdout.lines().find(|l| l.trim_start().starts_with("lite ")).unwrap_or_else(|| panic!("{}", rep.stdout));
    assert!(cell.contains('!'), "{}", rep.stdout);
    assert!(rep.stdout.contains("! a run of the cell"), "{}", rep.stdout);
    assert!(rep.stdout.contains("runs flagged") && rep.stdout.contains("of all CPUs' time"), "{}", rep.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(noisy.join("r.json")).unwrap()).unwrap();
    let flags = json["runs"][0]["flags"].as_array().unwrap();
    assert!(flags.iter().any(|f| f["kind"] == "other_processes"), "{flags:?}");
    assert_eq!(json["cells"][0]["flagged"], true);
    eprintln!("quiet: other {quiet_other:.1}%; with two hogs: other {noisy_other:.1}%, flags {flags:?}");
    let _ = std::fs::remove_dir_all(&quiet);
    let _ = std::fs::remove_dir_all(&noisy);
}
