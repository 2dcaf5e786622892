//! The lab under faults, with real processes: `lab run` SIGKILLed at each
//! point of its life (initialisation, prepare, a run, the store write) with
//! relative and absolute spec paths and then resumed (or replaced with
//! `--new`), Ctrl-C in the middle of a run, a second lab on the host, and a
//! full disk under the results store and under a managed server's data.
//! What each case expects is what docs/faults.md promises.
//!
//! Points are hit deterministically: the lab pauses where a test asks
//! (`DBBENCH_TEST_PAUSE=POINT:FILE`, see `dbbench::fault_point::test_pause`), or the
//! test waits for the lab's own child process (`dbbench TEST prepare|run`).

mod common;

use common::{dbbench_in_env, have_server_binaries, lab_lock_in_test_dir, tempdir, Run};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------ helpers

/// A `dbbench lab run` in the background, in its own process group (as a
/// shell job is), output in files of `dir`.
struct Lab {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Lab {
    fn spawn(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Lab {
        use std::os::unix::process::CommandExt;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (out, err) = (dir.join(format!("lab{n}.out")), dir.join(format!("lab{n}.err")));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbbench"));
        cmd.args(args)
            .current_dir(dir)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .process_group(0);
        lab_lock_in_test_dir(&mut cmd);
        Lab { child: cmd.spawn().unwrap(), out, err }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn output(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            std::fs::read_to_string(&self.out).unwrap_or_default(),
            std::fs::read_to_string(&self.err).unwrap_or_default()
        )
    }

    /// Waits (bounded) until `cond` holds; fails if the lab ends first.
    fn wait_until(&mut self, what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
        let t = Instant::now();
        while !cond() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the lab ended ({status}) before {what}\n{}", self.output());
            }
            assert!(t.elapsed() < limit, "no {what} within {limit:?}\n{}", self.output());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn signal(&mut self, sig: i32) {
        // SAFETY: kill(2) on our own child; no memory is touched.
        unsafe { libc::kill(self.pid() as i32, sig) };
    }

    /// A Ctrl-C at the terminal: SIGINT to the whole foreground group.
    fn ctrl_c(&mut self) {
        // SAFETY: kill(2) on the process group our child leads.
        unsafe { libc::kill(-(self.pid() as i32), libc::SIGINT) };
    }

    /// Waits for the end (bounded); the exit code, -1 for a signal.
    fn wait(&mut self, limit: Duration) -> i32 {
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code().unwrap_or(-1);
            }
            if t.elapsed() > limit {
                self.signal(libc::SIGKILL);
                let _ = self.child.wait();
                panic!("the lab did not end within {limit:?}\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A live process's arguments.
fn args_of(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if matches!(stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()), Some('Z') | None) {
        return None;
    }
    let c = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(c.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc").unwrap().flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// Whether `lab` has a child `dbbench TEST <command> ...` (a prepare or a
/// run in flight). A child forked but not yet exec'd still shows the lab's
/// own `dbbench lab run ...`: that is not it.
fn has_child(lab: u32, command: &str) -> bool {
    pids().into_iter().any(|p| {
        parent_of(p) == Some(lab)
            && args_of(p).is_some_and(|a| {
                a.get(1).is_some_and(|t| t.starts_with("oltp_")) && a.get(2).map(String::as_str) == Some(command)
            })
    })
}

/// Processes whose command line mentions `dir` (servers left running).
fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.display().to_string();
    pids()
        .into_iter()
        .filter_map(|p| args_of(p).map(|a| (p, a.join(" "))))
        .filter(|(_, a)| a.contains(&needle) && !a.contains("cargo"))
        .collect()
}

fn store_at(path: &Path) -> Connection {
    Connection::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn count(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn strings(c: &Connection, sql: &str) -> Vec<String> {
    let mut st = c.prepare(sql).unwrap();
    let rows = st.query_map([], |r| r.get::<_, Option<String>>(0)).unwrap();
    rows.map(|r| r.unwrap().unwrap_or_default()).collect()
}

fn stored_runs(store: &Path) -> i64 {
    if !store.exists() {
        return 0;
    }
    Connection::open(store)
        .ok()
        .and_then(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0)).ok())
        .unwrap_or(0)
}

fn run_in(dir: &Path, args: &[&str]) -> Run {
    dbbench_in_env(dir, args, &[("DBBENCH_TEST_PAUSE", None)])
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Root is needed to mount a tmpfs; outside CI a test without it is
/// skipped with the reason, under CI it fails.
fn root_or_skip(what: &str) -> bool {
    if is_root() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what} needs root under CI");
    }
    common::skipped(&format!("{what} needs root (it mounts a small tmpfs)"));
    false
}

/// A tmpfs of `size` mounted on `dir` for the test's life.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs on {}", dir.display());
        Tmpfs(dir.to_path_buf())
    }

    /// Writes a file until the filesystem is full.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let p = self.0.join("filler");
        let mut f = std::fs::File::create(&p).unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        // The last partial block, byte by byte.
        while f.write_all(&[0]).is_ok() {}
        let _ = f.flush();
        p
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

// ------------------------------------------------------------------ SIGKILL, then resume

const MARIADB: &str = r#"
[[configuration]]
name = "mariadb"
server = "mariadb"
server_options = ["--innodb_buffer_pool_size=32M", "--innodb_log_file_size=4M", "--max_connections=50"]
"#;

const POSTGRESQL: &str = r#"
[[configuration]]
name = "postgresql"
server = "postgresql"
server_options = ["shared_buffers=16MB", "fsync=off"]
"#;

/// Four runs (threads 1 and 2, two repeats); every run first counts the
/// table's rows (a hook whose output is stored), so a prepare done twice
/// into the same data would show.
fn kill_spec(name: &str, configuration: &str, table_size: u32) -> String {
    format!(
        r#"
[experiment]
name = "{name}"
threads = [1, 2]
repeats = 2
time = 1
sample_interval = 1
options = {{ tables = 1, table-size = {table_size} }}
{configuration}
[[workload]]
test = "oltp_point_select"

[hooks]
before_run = [{{ sql = "SELECT count(*) FROM sbtest1" }}]
"#
    )
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Point {
    /// The initialising server is up (no pid recorded anywhere yet).
    Initialize,
    /// `dbbench TEST prepare` is loading the data.
    PrepareChild,
    /// The data is loaded, not yet snapshotted.
    Prepared,
    /// `dbbench TEST run` is measuring, one run stored before it.
    Run,
    /// A run's rows are written to the store, not committed.
    StoreWrite,
}

#[derive(Clone, Copy, PartialEq)]
enum Then {
    Resume,
    New,
}

/// SIGKILLs `lab run` at `point`, checks it left a server behind, then
/// resumes (or starts over with `--new`) with the same form of spec path,
/// and checks: every planned (cell, repeat) stored once and ok, the data
/// prepared once, nothing left running.
fn kill_then(point: Point, kind: &str, relative: bool, then: Then) {
    if !have_server_binaries() {
        return;
    }
    let t0 = Instant::now();
    let base = tempdir(&format!("faults-{point:?}-{kind}"));
    let dir = std::fs::canonicalize(&base).unwrap();
    let configuration = if kind == "mariadb" { MARIADB } else { POSTGRESQL };
    // A bigger table keeps `prepare` running long enough to be caught.
    let table_size = if point == Point::PrepareChild { 50_000 } else { 1000 };
    std::fs::write(dir.join("spec.toml"), kill_spec("kill", configuration, table_size)).unwrap();
    let spec = if relative { "spec.toml".to_string() } else { dir.join("spec.toml").display().to_string() };
    let store = dir.join("dbbench-lab/results.sqlite");
    let workdir = dir.join("dbbench-lab/kill-1");
    let pause = dir.join("pause");
    let pause_env = match point {
        Point::Initialize => format!("initialize:{}", pause.display()),
        Point::Prepared => format!("prepare:{}", pause.display()),
        Point::StoreWrite => format!("store:{}", pause.display()),
        _ => String::new(),
    };
    let mut lab = Lab::spawn(&dir, &["lab", "run", &spec], &[("DBBENCH_TEST_PAUSE", &pause_env)]);
    let pid = lab.pid();
    let limit = Duration::from_secs(120);
    match point {
        Point::Initialize | Point::Prepared => lab.wait_until("the pause", limit, || pause.exists()),
        Point::StoreWrite => {
            // The first run's write goes through; the second's is killed.
            lab.wait_until("the first store write", limit, || pause.exists());
            std::fs::remove_file(&pause).unwrap();
            lab.wait_until("the second store write", limit, || pause.exists() && stored_runs(&store) == 1);
        }
        Point::PrepareChild => lab.wait_until("the prepare child", limit, || has_child(pid, "prepare")),
        Point::Run => lab
            .wait_until("a run child after a stored run", limit, || stored_runs(&store) >= 1 && has_child(pid, "run")),
    }
    let stored_before: Vec<String> = if store.exists() {
        strings(&store_at(&store), "SELECT id || ' ' || started_at || ' ' || status FROM runs ORDER BY id")
    } else {
        Vec::new()
    };
    lab.signal(libc::SIGKILL);
    assert_eq!(lab.wait(Duration::from_secs(10)), -1);
    let _ = std::fs::remove_file(&pause);
    assert!(!processes_in(&workdir).is_empty(), "the killed lab should have left a server running\n{}", lab.output());
    if point == Point::StoreWrite {
        assert_eq!(stored_runs(&store), 1, "the killed write is not in the store");
    }

    let r = match then {
        Then::Resume => {
            // Without --resume the spec's unfinished experiment is not silently redone.
            let again = run_in(&dir, &["lab", "run", &spec]);
            assert_eq!(again.code, 1, "{}{}", again.stdout, again.stderr);
            assert!(again.stderr.contains("--resume"), "{}", again.stderr);
            run_in(&dir, &["lab", "run", "--resume", &spec])
        }
        Then::New => run_in(&dir, &["lab", "run", "--new", &spec]),
    };
    assert_eq!(r.code, 0, "{point:?}: {}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("stopped a server an interrupted lab run left running"), "{}", r.stderr);
    assert!(!r.stderr.contains("None"), "{}", r.stderr);
    let c = store_at(&store);
    let experiment = match then {
        Then::Resume => {
            assert_eq!(count(&c, "SELECT count(*) FROM experiments"), 1);
            1
        }
        Then::New => {
            assert!(r.stderr.contains("abandoned"), "{}", r.stderr);
            assert_eq!(strings(&c, "SELECT status FROM experiments ORDER BY id"), ["abandoned", "finished"]);
            assert!(!workdir.exists(), "the abandoned experiment's work directory is removed");
            2
        }
    };
    let runs = format!("FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = {experiment}");
    assert_eq!(count(&c, &format!("SELECT count(*) {runs}")), 4, "{point:?}: every planned run once");
    assert_eq!(count(&c, &format!("SELECT count(DISTINCT cl.threads || '/' || r.\"repeat\") {runs}")), 4);
    assert_eq!(count(&c, &format!("SELECT count(*) {runs} AND r.status = 'ok' AND r.tps > 0")), 4, "all ok");
    assert_eq!(count(&c, &format!("SELECT count(DISTINCT r.seq) {runs}")), 4);
    if then == Then::Resume {
        // What the killed lab stored is kept as it was, not redone.
        let after = strings(&c, "SELECT id || ' ' || started_at || ' ' || status FROM runs ORDER BY id");
        assert_eq!(after[..stored_before.len()], stored_before[..]);
    }
    assert_eq!(strings(&c, &format!("SELECT status FROM experiments WHERE id = {experiment}")), ["finished"]);
    // The data was prepared once: every run saw exactly the table's rows.
    let counts = strings(
        &c,
        &format!("SELECT json_extract(detail, '$.output') FROM events WHERE experiment_id = {experiment} AND kind = 'hook_output' AND json_extract(detail, '$.hook') = 'before_run'"),
    );
    // (A run killed in flight may have run its hook too: events are not runs.)
    assert!(counts.len() >= 4, "{counts:?}");
    for out in &counts {
        assert!(out.lines().any(|l| l.trim() == table_size.to_string()), "{out}");
    }
    let leftover = processes_in(&dir.join("dbbench-lab"));
    assert!(leftover.is_empty(), "nothing is left running: {leftover:?}");
    eprintln!("{point:?} {kind} relative={relative}: {:.1} s", t0.elapsed().as_secs_f64());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_during_initialization_relative_spec_path_then_resume() {
    kill_then(Point::Initialize, "mariadb", true, Then::Resume);
}

#[test]
fn sigkill_during_initialization_absolute_spec_path_then_resume_postgresql() {
    kill_then(Point::Initialize, "postgresql", false, Then::Resume);
}

#[test]
fn sigkill_during_prepare_absolute_spec_path_then_resume() {
    kill_then(Point::PrepareChild, "mariadb", false, Then::Resume);
}

#[test]
fn sigkill_after_prepare_before_snapshot_relative_spec_path_then_resume_postgresql() {
    kill_then(Point::Prepared, "postgresql", true, Then::Resume);
}

#[test]
fn sigkill_during_a_run_relative_spec_path_then_resume() {
    kill_then(Point::Run, "mariadb", true, Then::Resume);
}

#[test]
fn sigkill_during_a_run_absolute_spec_path_then_resume_postgresql() {
    kill_then(Point::Run, "postgresql", false, Then::Resume);
}

#[test]
fn sigkill_during_the_store_write_absolute_spec_path_then_resume() {
    kill_then(Point::StoreWrite, "mariadb", false, Then::Resume);
}

#[test]
fn sigkill_during_a_run_relative_spec_path_then_new_abandons_it() {
    kill_then(Point::Run, "mariadb", true, Then::New);
}

// ------------------------------------------------------------------ Ctrl-C

#[test]
fn ctrl_c_mid_run_stores_nothing_of_it_and_resume_runs_it_again() {
    let dir = tempdir("faults-ctrl-c");
    // Repeat 1 fails in a hook killed by a signal (a failure of the first
    // process that the resumed one must still report); Ctrl-C lands in repeat 3.
    std::fs::write(
        dir.join("spec.toml"),
        r#"
[experiment]
name = "ctrl-c"
threads = [1]
repeats = 4
time = 2
sample_interval = 1
options = { tables = 1, table-size = 500 }

[[configuration]]
name = "sqlite"
server = "sqlite"

[[workload]]
test = "oltp_point_select"

[hooks]
before_run = [{ shell = "test \"$DBBENCH_REPEAT\" != 1 || kill -KILL $$" }]
"#,
    )
    .unwrap();
    let store = dir.join("dbbench-lab/results.sqlite");
    let mut lab = Lab::spawn(&dir, &["lab", "run", "spec.toml"], &[]);
    let pid = lab.pid();
    lab.wait_until("repeat 3 in flight", Duration::from_secs(60), || stored_runs(&store) == 2 && has_child(pid, "run"));
    lab.ctrl_c();
    assert_eq!(lab.wait(Duration::from_secs(30)), 130, "{}", lab.output());
    let c = store_at(&store);
    assert_eq!(
        strings(&c, "SELECT \"repeat\" || ' ' || status FROM runs ORDER BY \"repeat\""),
        ["1 failed", "2 ok"],
        "the interrupted run is not stored\n{}",
        lab.output()
    );
    assert_eq!(strings(&c, "SELECT status FROM experiments"), ["interrupted"]);
    drop(c);

    let r = run_in(&dir, &["lab", "run", "--resume", "spec.toml"]);
    // Repeat 1 failed (in the first process): the exit status and the list say so.
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("runs not ok"), "{}", r.stdout);
    assert!(r.stdout.contains("sqlite / oltp_point_select / 1 thr / repeat 1"), "{}", r.stdout);
    assert!(r.stderr.contains("1 run(s) failed or timed out"), "{}", r.stderr);
    let c = store_at(&store);
    assert_eq!(
        strings(&c, "SELECT \"repeat\" || ' ' || status FROM runs ORDER BY \"repeat\""),
        ["1 failed", "2 ok", "3 ok", "4 ok"]
    );
    let errors = strings(&c, "SELECT error FROM runs WHERE error IS NOT NULL");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("was killed by signal 9 (SIGKILL)") && !errors[0].contains("None"), "{errors:?}");
    assert_eq!(strings(&c, "SELECT status FROM experiments"), ["finished"]);
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ a second lab on the host

const SQLITE_LAB: &str = r#"
[experiment]
name = "NAME"
threads = [1]
repeats = REPEATS
time = TIME
sample_interval = 1
options = { tables = 1, table-size = 500 }

[[configuration]]
name = "sqlite"
server = "sqlite"

[[workload]]
test = "oltp_point_select"
"#;

fn sqlite_lab(dir: &Path, name: &str, repeats: u32, time: u32) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("spec.toml");
    std::fs::write(
        &p,
        SQLITE_LAB.replace("NAME", name).replace("REPEATS", &repeats.to_string()).replace("TIME", &time.to_string()),
    )
    .unwrap();
    p.display().to_string()
}

/// Two labs (`--allow-concurrent`) writing one store at once, each storing
/// a run every second or so: SQLite serialises their transactions (WAL,
/// a 30 s busy timeout), both finish, every planned run of each is stored
/// once, and the store passes SQLite's integrity check.
#[test]
fn two_labs_writing_one_store_at_once_both_store_every_run() {
    let dir = tempdir("faults-one-store");
    let lock = dir.join("hostlock");
    let lock_env = [("DBBENCH_LAB_LOCK_DIR", lock.to_str().unwrap())];
    let first = sqlite_lab(&dir, "first", 5, 1);
    let second_path = dir.join("second.toml");
    std::fs::write(&second_path, std::fs::read_to_string(&first).unwrap().replace("\"first\"", "\"second\"")).unwrap();
    let second = second_path.display().to_string();
    let mut a = Lab::spawn(&dir, &["lab", "run", "--allow-concurrent", &first], &lock_env);
    let mut b = Lab::spawn(&dir, &["lab", "run", "--allow-concurrent", &second], &lock_env);
    assert_eq!(a.wait(Duration::from_secs(120)), 0, "{}", a.output());
    assert_eq!(b.wait(Duration::from_secs(120)), 0, "{}", b.output());
    let c = store_at(&dir.join("dbbench-lab/results.sqlite"));
    for name in ["first", "second"] {
        let stored = count(
            &c,
            &format!(
                "SELECT count(*) FROM runs r JOIN cells c ON r.cell_id = c.id JOIN experiments e ON c.experiment_id = e.id \
                 WHERE e.name = '{name}' AND r.status = 'ok'"
            ),
        );
        assert_eq!(stored, 5, "{name}: {stored} of 5 runs stored");
    }
    assert_eq!(strings(&c, "PRAGMA integrity_check"), ["ok"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_lab_run_on_the_host_is_refused_unless_allowed_and_then_flagged() {
    let dir = tempdir("faults-concurrent");
    let lock = dir.join("hostlock");
    let lock_env = [("DBBENCH_LAB_LOCK_DIR", lock.to_str().unwrap())];
    let (a_dir, b_dir) = (dir.join("a"), dir.join("b"));
    let a_spec = sqlite_lab(&a_dir, "first", 6, 1);
    let b_spec = sqlite_lab(&b_dir, "second", 1, 3);
    let mut a = Lab::spawn(&a_dir, &["lab", "run", &a_spec], &lock_env);
    let a_pid = a.pid();
    a.wait_until("the first lab measuring", Duration::from_secs(60), || has_child(a_pid, "run"));

    let env: Vec<(&str, Option<&str>)> = lock_env.iter().map(|(k, v)| (*k, Some(*v))).collect();
    let refused = dbbench_in_env(&b_dir, &["lab", "run", &b_spec], &env);
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert_eq!(refused.stderr.lines().count(), 1, "one line: {}", refused.stderr);
    assert!(refused.stderr.contains("another lab run is measuring on this host"), "{}", refused.stderr);
    assert!(refused.stderr.contains(&format!("pid {a_pid} ")), "names the first lab: {}", refused.stderr);
    assert!(refused.stderr.contains("--allow-concurrent"), "{}", refused.stderr);
    assert!(!b_dir.join("dbbench-lab").exists(), "a refused lab stores nothing");

    let mut b = Lab::spawn(&b_dir, &["lab", "run", "--allow-concurrent", &b_spec], &lock_env);
    let b_pid = b.pid();
    assert_eq!(b.wait(Duration::from_secs(60)), 0, "{}", b.output());
    assert!(b.output().contains(&format!("pid {a_pid} ")), "{}", b.output());
    assert_eq!(a.wait(Duration::from_secs(60)), 0, "{}", a.output());
    assert!(a.output().contains(&format!("another lab run is measuring on this host: pid {b_pid} ")), "{}", a.output());

    // Both experiments record the other, and their reports say so.
    for (d, other) in [(&b_dir, a_pid), (&a_dir, b_pid)] {
        let c = store_at(&d.join("dbbench-lab/results.sqlite"));
        let labs = strings(&c, "SELECT json_extract(settings, '$.concurrent_labs') FROM experiments");
        assert!(labs[0].contains(&format!("pid {other} ")), "{labs:?}");
        let report = run_in(d, &["report", "spec.toml"]);
        assert!(report.stdout.contains("other lab runs measured on this host at the same time"), "{}", report.stdout);
    }
    let c = store_at(&b_dir.join("dbbench-lab/results.sqlite"));
    assert_eq!(count(&c, "SELECT json_extract(settings, '$.allow_concurrent') FROM experiments"), 1);

    // Once both ended, a default lab runs.
    let r = dbbench_in_env(&b_dir, &["lab", "run", &b_spec], &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_host_lock_lives_in_a_directory_only_root_can_write() {
    if !root_or_skip("the default host lock directory") {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let dir = tempdir("faults-hostlock");
    let spec = sqlite_lab(&dir, "hostlock", 1, 1);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbbench"));
    // The real default: no DBBENCH_LAB_LOCK_DIR.
    cmd.args(["lab", "run", &spec]).current_dir(&dir).env_remove("DBBENCH_LAB_LOCK_DIR");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = std::fs::symlink_metadata("/run/dbbench").unwrap();
    assert!(d.is_dir() && d.uid() == 0 && d.mode() & 0o7777 == 0o755, "{:o}", d.mode());
    for f in ["lab.lock", "lab.present"] {
        let m = std::fs::symlink_metadata(Path::new("/run/dbbench").join(f)).unwrap();
        assert!(m.is_file() && m.uid() == 0 && m.mode() & 0o777 == 0o644, "{f}: {:o}", m.mode());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ full disks

#[test]
fn a_full_disk_under_the_store_stops_the_lab_cleanly_and_resume_completes() {
    if !root_or_skip("a full disk under the store") {
        return;
    }
    let dir = tempdir("faults-store-full");
    let spec = sqlite_lab(&dir, "store-full", 3, 1);
    let fs = Tmpfs::mount(&dir.join("storefs"), "4m");
    let store = dir.join("storefs/results.sqlite");
    let store_arg = format!("--store={}", store.display());
    let pause = dir.join("pause");
    let pause_env = format!("store:{}", pause.display());
    let mut lab = Lab::spawn(&dir, &["lab", "run", &store_arg, &spec], &[("DBBENCH_TEST_PAUSE", &pause_env)]);
    lab.wait_until("the first store write", Duration::from_secs(60), || pause.exists());
    std::fs::remove_file(&pause).unwrap();
    lab.wait_until("the second store write", Duration::from_secs(60), || pause.exists() && stored_runs(&store) == 1);
    let filler = fs.fill();
    std::fs::remove_file(&pause).unwrap();
    assert_eq!(lab.wait(Duration::from_secs(60)), 1, "{}", lab.output());
    let out = lab.output();
    assert!(out.contains("database or disk is full"), "{out}");
    // The store's failure is a full disk by its kind, and the advice says so.
    assert!(
        out.contains(
            "free space on the disk that holds the results store, then continue with: dbbench lab run --resume"
        ),
        "{out}"
    );
    assert!(!out.contains("panicked"), "{out}");
    assert_eq!(stored_runs(&store), 1, "the run whose write failed is not half-stored");

    std::fs::remove_file(filler).unwrap();
    let r = run_in(&dir, &["lab", "run", "--resume", &store_arg, &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = store_at(&store);
    assert_eq!(
        strings(&c, "SELECT \"repeat\" || ' ' || status FROM runs ORDER BY \"repeat\""),
        ["1 ok", "2 ok", "3 ok"]
    );
    assert_eq!(strings(&c, "SELECT status FROM experiments"), ["finished"]);
    drop(c);
    drop(fs);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_disk_under_a_managed_servers_data_fails_the_runs_with_the_reason() {
    if !have_server_binaries() || !root_or_skip("a full disk under a server's data") {
        return;
    }
    let t0 = Instant::now();
    let dir = tempdir("faults-data-full");
    let fs = Tmpfs::mount(&dir.join("datafs"), "160m");
    std::fs::write(
        dir.join("spec.toml"),
        format!(
            r#"
[experiment]
name = "data-full"
threads = [1]
repeats = 2
time = 2
run_timeout = "30s"
sample_interval = 1
options = {{ tables = 1, table-size = 1000 }}
{MARIADB}
[[workload]]
test = "oltp_insert"
"#
        ),
    )
    .unwrap();
    let workdir = format!("--workdir={}", dir.join("datafs").display());
    let store = dir.join("results.sqlite");
    let store_arg = format!("--store={}", store.display());
    let mut lab = Lab::spawn(&dir, &["lab", "run", &workdir, &store_arg, "spec.toml"], &[]);
    let pid = lab.pid();
    lab.wait_until("the first run", Duration::from_secs(120), || has_child(pid, "run"));
    let _filler = fs.fill();
    assert_eq!(lab.wait(Duration::from_secs(150)), 2, "{}", lab.output());
    let c = store_at(&store);
    let rows = strings(
        &c,
        "SELECT status || ': ' || coalesce(error, '') || ' ' || coalesce(log_excerpt, '') FROM runs ORDER BY seq",
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert!(r.starts_with("failed: "), "{rows:?}");
        assert!(r.contains("is full") || r.contains("No space left on device"), "the reason is named: {r}");
        assert!(!r.contains("None"), "{r}");
    }
    assert!(processes_in(&dir.join("datafs")).is_empty(), "nothing is left running");
    assert!(t0.elapsed() < Duration::from_secs(180));
    drop(c);
    drop(fs);
    let _ = std::fs::remove_dir_all(&dir);
}
