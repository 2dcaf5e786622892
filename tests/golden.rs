//! dbbench against the reference sysbench 1.0.20 on scripts nobody here
//! wrote: every Lua script of Debian's sysbench package (installed at test
//! time by scripts/test.sh, never committed) and our API exercisers in
//! tests/scripts, each run under both tools against the same MariaDB and
//! PostgreSQL servers. Compared: what `prepare` creates (columns, indexes,
//! engine, row count and value lengths), exit codes of prepare, prewarm,
//! run and cleanup, the statement and event counts of a `run` with a fixed
//! number of events, and what cleanup leaves.

mod common;
use common::*;
use std::path::Path;

/// The counters of a final report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    reads: u64,
    writes: u64,
    other: u64,
    transactions: u64,
    errors: u64,
    reconnects: u64,
}

fn counts(r: &Run) -> Counts {
    let n = |l: &str| r.number(l).unwrap_or_else(|| panic!("no '{l}' in output:\n{}\n{}", r.stdout, r.stderr)) as u64;
    Counts {
        reads: n("read:"),
        writes: n("write:"),
        other: n("other:"),
        transactions: n("transactions:"),
        errors: n("ignored errors:"),
        reconnects: n("reconnects:"),
    }
}

/// A database server to compare on.
#[derive(Clone, Copy)]
enum Server {
    MariaDb,
    Postgres,
}

impl Server {
    /// A fresh database and the options that reach it (None: no server here).
    fn fresh(self, db: &str) -> Option<Vec<String>> {
        match self {
            Server::MariaDb => mysql_db(db),
            Server::Postgres => pgsql_db(db),
        }
    }

    /// One text value from a query.
    fn value(self, db: &str, sql: &str) -> String {
        let rows = match self {
            Server::MariaDb => mysql_query(db, sql),
            Server::Postgres => pgsql_query(db, sql),
        };
        rows.into_iter().next().unwrap_or_default()
    }

    /// What the database holds: tables with columns, indexes and engine,
    /// and per table the row count, id range and total length of the
    /// string columns (whose formats are fixed, their digits random).
    fn snapshot(self, db: &str) -> Vec<String> {
        let (tables, columns, indexes) = match self {
            Server::MariaDb => (
                "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name",
                "SELECT GROUP_CONCAT(CONCAT_WS(' ', table_name, column_name, column_type, is_nullable, \
                 IFNULL(column_default, '-'), extra) ORDER BY table_name, ordinal_position SEPARATOR '; ') \
                 FROM information_schema.columns WHERE table_schema = DATABASE()",
                "SELECT GROUP_CONCAT(CONCAT_WS(' ', s.table_name, s.index_name, s.seq_in_index, s.column_name, \
                 s.non_unique, t.engine) ORDER BY s.table_name, s.index_name, s.seq_in_index SEPARATOR '; ') \
                 FROM information_schema.statistics s JOIN information_schema.tables t \
                 ON t.table_schema = s.table_schema AND t.table_name = s.table_name WHERE s.table_schema = DATABASE()",
            ),
            Server::Postgres => (
                "SELECT string_agg(table_name, ' ' ORDER BY table_name) FROM information_schema.tables \
                 WHERE table_schema = 'public'",
                "SELECT string_agg(concat_ws(' ', table_name, column_name, data_type, character_maximum_length, \
                 is_nullable, column_default), '; ' ORDER BY table_name, ordinal_position) \
                 FROM information_schema.columns WHERE table_schema = 'public'",
                "SELECT string_agg(indexdef, '; ' ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'public'",
            ),
        };
        let names: Vec<String> = match self {
            Server::MariaDb => mysql_query(db, tables),
            Server::Postgres => self.value(db, tables).split_whitespace().map(str::to_string).collect(),
        };
        let cols = self.value(db, columns);
        let mut out = vec![format!("columns: {cols}"), format!("indexes: {}", self.value(db, indexes))];
        for t in &names {
            let strings = if cols.contains(&format!("{t} c ")) { "SUM(LENGTH(c)), SUM(LENGTH(pad))" } else { "0, 0" };
            let q = match self {
                Server::MariaDb => format!("SELECT CONCAT_WS(' ', COUNT(*), MIN(id), MAX(id), {strings}) FROM {t}"),
                Server::Postgres => format!("SELECT concat_ws(' ', COUNT(*), MIN(id), MAX(id), {strings}) FROM {t}"),
            };
            out.push(format!("{t}: {}", self.value(db, &q)));
        }
        out
    }
}

/// One tool's pass over a script: prepare, run, cleanup.
#[derive(Debug)]
struct Pass {
    prepare_code: i32,
    prepared: Vec<String>,
    prewarm_code: i32,
    run_code: i32,
    counts: Option<Counts>,
    cleanup_code: i32,
    left_after_cleanup: Vec<String>,
}

type Tool = fn(&Path, &[&str]) -> Run;

/// `tool script cmd <base options> <more>` in `dir`.
fn run_script(tool: Tool, dir: &Path, script: &str, cmd: &str, base: &[String], more: &[&str]) -> Run {
    let mut a = vec![script, cmd];
    a.extend(base.iter().map(String::as_str));
    a.extend(more);
    tool(dir, &a)
}

fn pass(tool: Tool, server: Server, db: &str, script: &str, extra: &[&str]) -> Option<Pass> {
    let base = server.fresh(db)?;
    let dir = tempdir("golden");
    let step = |cmd: &str, more: &[&str]| run_script(tool, &dir, script, cmd, &base, &[extra, more].concat());
    let prepare = step("prepare", &[]);
    let prepared = server.snapshot(db);
    let prewarm = step("prewarm", &[]);
    let run = step("run", &["--events=40", "--threads=1"]);
    let counts = (run.code == 0).then(|| counts(&run));
    let cleanup = step("cleanup", &[]);
    let left =
        server.snapshot(db).into_iter().filter(|l| !l.starts_with("columns:") && !l.starts_with("indexes:")).collect();
    let _ = std::fs::remove_dir_all(&dir);
    Some(Pass {
        prepare_code: prepare.code,
        prepared,
        prewarm_code: prewarm.code,
        run_code: run.code,
        counts,
        cleanup_code: cleanup.code,
        left_after_cleanup: left,
    })
}

/// Differences between sysbench's and dbbench's passes over `script`.
fn compare(server: Server, db: &str, script: &str, extra: &[&str]) -> Vec<String> {
    let (Some(sb), Some(us)) =
        (pass(sysbench_in, server, db, script, extra), pass(dbbench_in, server, db, script, extra))
    else {
        return vec![];
    };
    assert!(sb.counts.is_some(), "sysbench itself failed to run {script}: {sb:?}");
    let mut diffs = Vec::new();
    let mut check = |what: &str, a: String, b: String| {
        if a != b {
            diffs.push(format!("{script}: {what}: sysbench {a} / dbbench {b}"));
        }
    };
    check("prepare exit code", sb.prepare_code.to_string(), us.prepare_code.to_string());
    check("prepared tables", format!("{:?}", sb.prepared), format!("{:?}", us.prepared));
    check("prewarm exit code", sb.prewarm_code.to_string(), us.prewarm_code.to_string());
    check("run exit code", sb.run_code.to_string(), us.run_code.to_string());
    match (sb.counts, us.counts) {
        (Some(a), Some(b)) if script.ends_with("oltp_delete.lua") => {
            // A DELETE counts as a write when its random id still exists and
            // as "other" otherwise, so only the statement total is fixed.
            check("reads", a.reads.to_string(), b.reads.to_string());
            check("writes+other", (a.writes + a.other).to_string(), (b.writes + b.other).to_string());
            check("transactions", a.transactions.to_string(), b.transactions.to_string());
        }
        (a, b) => check("counts", format!("{a:?}"), format!("{b:?}")),
    }
    check("cleanup exit code", sb.cleanup_code.to_string(), us.cleanup_code.to_string());
    check("left after cleanup", format!("{:?}", sb.left_after_cleanup), format!("{:?}", us.left_after_cleanup));
    diffs
}

/// Every script of the sysbench package, except the module they share.
fn packaged_scripts() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(SYSBENCH_SCRIPTS)
        .expect("read the sysbench script folder")
        .filter_map(|e| e.ok())
        .map(|e| e.path().display().to_string())
        .filter(|p| p.ends_with(".lua") && !p.ends_with("/oltp_common.lua"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "expected the sysbench package's scripts in {SYSBENCH_SCRIPTS}, found {v:?}");
    v
}

fn packaged_scripts_match(server: Server, db: &str) {
    if !have_sysbench() {
        return;
    }
    let mut diffs = Vec::new();
    for script in packaged_scripts() {
        // The select_random_* scripts allow one table only.
        let tables = if script.contains("select_random_") { "--tables=1" } else { "--tables=2" };
        diffs.extend(compare(server, db, &script, &[tables, "--table-size=100"]));
    }
    assert!(diffs.is_empty(), "dbbench differs from sysbench:\n{}", diffs.join("\n"));
}

#[test]
fn packaged_sysbench_scripts_match_on_mariadb() {
    packaged_scripts_match(Server::MariaDb, "golden_pkg");
}

#[test]
fn packaged_sysbench_scripts_match_on_postgres() {
    packaged_scripts_match(Server::Postgres, "golden_pkg");
}

/// A bulk insert of ~800 KB per event (as yugabyte/sysbench's
/// oltp_multi_value_insert.lua): sysbench sends an INSERT per 512 KiB and
/// counts two writes per event; dbbench, which may load the rows through
/// COPY / LOAD DATA, must count the same (it reported one write per event
/// on PostgreSQL), with its bulk path and without.
fn big_bulk_insert_counts_match(server: Server, db: &str) {
    if !have_sysbench() {
        return;
    }
    let script = script_path("big_bulk_insert.lua");
    let diffs = compare(server, db, &script, &[]);
    assert!(diffs.is_empty(), "dbbench differs from sysbench:\n{}", diffs.join("\n"));
    // 40 events of two statements each, whichever way the rows go.
    let counts = |extra: &[&str]| pass(dbbench_in, server, db, &script, extra).and_then(|p| p.counts);
    let (bulk, off) = (counts(&[]), counts(&["--db-bulk-load=off"]));
    assert_eq!(bulk.map(|c| (c.writes, c.transactions)), Some((80, 40)), "{bulk:?}");
    assert_eq!(bulk, off, "--db-bulk-load=auto (left) and off (right) count differently");
}

#[test]
fn big_bulk_inserts_count_as_sysbench_on_mariadb() {
    big_bulk_insert_counts_match(Server::MariaDb, "golden_bulk");
}

#[test]
fn big_bulk_inserts_count_as_sysbench_on_postgres() {
    big_bulk_insert_counts_match(Server::Postgres, "golden_bulk");
}

fn script_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts").join(name).display().to_string()
}

/// The lines an API exerciser prints about itself ("api: ...").
fn api_lines(r: &Run) -> Vec<String> {
    r.stdout.lines().filter(|l| l.starts_with("api: ")).map(str::to_string).collect()
}

/// tests/scripts/api10.lua under both tools: same "api:" lines, same
/// counts (the script counts an error per event through ffi).
fn api10_matches(server: Server, db: &str) {
    if !have_sysbench() {
        return;
    }
    let script = script_path("api10.lua");
    let mut outputs = Vec::new();
    for tool in [sysbench_in as Tool, dbbench_in as Tool] {
        let Some(base) = server.fresh(db) else { return };
        let dir = tempdir("api10");
        let run = |cmd: &str, more: &[&str]| run_script(tool, &dir, &script, cmd, &base, more);
        let fill = run("fill", &["--label=yy", "--flag=on"]);
        let r = run("run", &["--events=20", "--threads=2"]);
        run("drop", &[]);
        assert_eq!((fill.code, r.code), (0, 0), "{}\n{}\n{}", fill.stdout, r.stdout, r.stderr);
        outputs.push([api_lines(&fill), api_lines(&r)].concat());
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(outputs[0], outputs[1], "sysbench (left) and dbbench (right) differ");
    assert!(outputs[1].iter().any(|l| l == "api: cumulative 20 26 2 1 21 0 true"), "{:?}", outputs[1]);
}

#[test]
fn api10_script_matches_sysbench_on_mariadb() {
    api10_matches(Server::MariaDb, "golden_api10");
}

#[test]
fn api10_script_matches_sysbench_on_postgres() {
    api10_matches(Server::Postgres, "golden_api10");
}

/// `con:reconnect()` (which sysbench 1.0.20 cannot do on either server):
/// counted, and prepared statements work afterwards.
#[test]
fn con_reconnect_counts_and_keeps_statements() {
    let script = script_path("api10.lua");
    for server in [Server::MariaDb, Server::Postgres] {
        let Some(base) = server.fresh("golden_reconnect") else { continue };
        let dir = tempdir("reconnect");
        let a = |cmd: &str, more: &[&str]| run_script(dbbench_in, &dir, &script, cmd, &base, more);
        assert_eq!(a("fill", &[]).code, 0);
        let r = a("run", &["--events=20", "--threads=2", "--reconnect_check=on"]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let lines = api_lines(&r);
        assert!(lines.contains(&"api: reconnected 7".to_string()), "{lines:?}");
        assert!(lines.contains(&"api: cumulative 20 27 2 1 21 1 true".to_string()), "{lines:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// tests/scripts/api05.lua, a 0.5-era script (db_* API, options as global
/// strings), under both tools: same rows prepared, same counts.
fn api05_matches(server: Server, db: &str) {
    if !have_sysbench() {
        return;
    }
    let script = script_path("api05.lua");
    let mut results = Vec::new();
    for tool in [sysbench_in as Tool, dbbench_in as Tool] {
        let Some(base) = server.fresh(db) else { return };
        let dir = tempdir("api05");
        let run = |cmd: &str, more: &[&str]| {
            run_script(tool, &dir, &script, cmd, &base, &[&["--oltp-table-size=50", "--points=3"], more].concat())
        };
        let prepare = run("prepare", &[]);
        let rows = server.value(db, "SELECT COUNT(*) FROM sbtest05");
        let r = run("run", &["--events=30", "--threads=2"]);
        let cleanup = run("cleanup", &[]);
        assert_eq!((prepare.code, r.code, cleanup.code), (0, 0, 0), "{}\n{}\n{}", prepare.stdout, r.stdout, r.stderr);
        results.push((rows, counts(&r)));
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(results[0], results[1], "sysbench (left) and dbbench (right) differ");
    let c = results[1].1;
    assert_eq!((c.reads, c.writes, c.other, c.transactions), (90, 30, 60, 30));
    assert_eq!(results[1].0, "50");
}

#[test]
fn api05_script_matches_sysbench_on_mariadb() {
    api05_matches(Server::MariaDb, "golden_api05");
}

#[test]
fn api05_script_matches_sysbench_on_postgres() {
    api05_matches(Server::Postgres, "golden_api05");
}

/// A suite with its own oltp_common.lua (one point select per event) and an
/// oltp_read_only.lua that only requires it, run by name from the suite's
/// directory: sysbench finds both in the current directory before its
/// bundled scripts, and so must dbbench before its built-ins (it used to
/// run its own oltp_read_only: 14 reads per event).
fn suite_modules_match(server: Server, db: &str) {
    if !have_sysbench() {
        return;
    }
    let dir = tempdir("suite-golden");
    std::fs::write(
        dir.join("oltp_common.lua"),
        r#"-- a suite's own oltp_common (test fixture): one point select per event
function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE sbsuite (id INTEGER NOT NULL PRIMARY KEY, c VARCHAR(10) NOT NULL)")
  con:query("INSERT INTO sbsuite VALUES (1, 'a')")
end
function cleanup() sysbench.sql.driver():connect():query("DROP TABLE sbsuite") end
function thread_init() con = sysbench.sql.driver():connect() end
function event() con:query("SELECT c FROM sbsuite WHERE id = 1") end
"#,
    )
    .unwrap();
    std::fs::write(dir.join("oltp_read_only.lua"), "require('oltp_common')\n").unwrap();
    let mut results = Vec::new();
    for tool in [sysbench_in as Tool, dbbench_in as Tool] {
        let Some(base) = server.fresh(db) else { return };
        let run = |cmd: &str, more: &[&str]| run_script(tool, &dir, "oltp_read_only", cmd, &base, more);
        let prepare = run("prepare", &[]);
        let r = run("run", &["--events=20", "--threads=2"]);
        let cleanup = run("cleanup", &[]);
        assert_eq!((prepare.code, r.code, cleanup.code), (0, 0, 0), "{}{}{}", prepare.stdout, r.stdout, r.stderr);
        results.push(counts(&r));
    }
    assert_eq!(results[0], results[1], "sysbench (left) and dbbench (right) differ");
    assert_eq!((results[1].reads, results[1].writes, results[1].other, results[1].transactions), (20, 0, 0, 20));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_suites_own_modules_win_as_in_sysbench_on_mariadb() {
    suite_modules_match(Server::MariaDb, "golden_suite");
}

#[test]
fn a_suites_own_modules_win_as_in_sysbench_on_postgres() {
    suite_modules_match(Server::Postgres, "golden_suite");
}

/// 0.5-era scripts that read num_threads (tests/scripts/legacy05_*.lua,
/// written after the 0.5 API: select_random_points' per-thread slices,
/// parallel_prepare's table split, bulk_insert's table per thread) under
/// both tools with the 0.5 spellings (--num-threads, --max-requests,
/// --max-time): same slices, counts and rows.
fn legacy05_scripts_match(server: Server, db: &str) {
    if !have_sysbench() {
        return;
    }
    let mut results = Vec::new();
    for tool in [sysbench_in as Tool, dbbench_in as Tool] {
        let Some(base) = server.fresh(db) else { return };
        let dir = tempdir("legacy05");
        let run = |script: &str, cmd: &str, more: &[&str]| {
            let r = run_script(tool, &dir, &script_path(script), cmd, &base, more);
            assert_eq!(r.code, 0, "{script} {cmd} {more:?}: {}{}", r.stdout, r.stderr);
            r
        };
        let mut seen = Vec::new();
        run("legacy05_points.lua", "prepare", &["--oltp-table-size=100"]);
        let r = run("legacy05_points.lua", "run", &["--oltp-table-size=100", "--num-threads=4", "--max-requests=40"]);
        // sysbench's threads print without a lock: a line can run into the next.
        let mut slices: Vec<String> = r
            .stdout
            .split("slice ")
            .skip(1)
            .map(|t| {
                format!(
                    "slice {}",
                    t.split(|c: char| !(c.is_ascii_digit() || " of:.".contains(c))).next().unwrap_or("").trim_end()
                )
            })
            .collect();
        slices.sort();
        seen.push(format!("{slices:?} {:?}", counts(&r)));
        run("legacy05_points.lua", "cleanup", &[]);
        let pp = ["--oltp-tables-count=5", "--oltp-table-size=20"];
        run("legacy05_parallel_prepare.lua", "run", &[&["--num-threads=3", "--max-time=1"], &pp[..]].concat());
        seen.push(
            (1..=5).map(|n| server.value(db, &format!("SELECT count(*) FROM sbtest{n}"))).collect::<Vec<_>>().join(","),
        );
        run("legacy05_parallel_prepare.lua", "cleanup", &pp);
        run("legacy05_bulk_insert.lua", "prepare", &["--num-threads=2"]);
        run("legacy05_bulk_insert.lua", "run", &["--num-threads=2", "--max-requests=1000"]);
        let rows = |t: u32| server.value(db, &format!("SELECT count(*) FROM sbtest{t}")).parse::<u64>().unwrap_or(0);
        seen.push(format!("bulk rows {}", rows(0) + rows(1)));
        run("legacy05_bulk_insert.lua", "cleanup", &["--num-threads=2"]);
        results.push(seen);
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert_eq!(results[0], results[1], "sysbench (left) and dbbench (right) differ");
    assert!(results[1][0].starts_with("[\"slice 0 of 4: 0..25\", \"slice 1 of 4: 25..50\""), "{:?}", results[1]);
    assert_eq!(results[1][1], "20,20,20,20,20");
    assert_eq!(results[1][2], "bulk rows 1000");
}

#[test]
fn old_scripts_using_num_threads_match_sysbench_on_mariadb() {
    legacy05_scripts_match(Server::MariaDb, "golden_legacy05");
}

#[test]
fn old_scripts_using_num_threads_match_sysbench_on_postgres() {
    legacy05_scripts_match(Server::Postgres, "golden_legacy05");
}
