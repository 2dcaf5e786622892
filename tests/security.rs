//! What dbbench guarantees other local users cannot do, and where no
//! password goes (docs/security.md), tried as an outsider would: an
//! unprivileged OS user created by the test (useradd) plants directories
//! and symlinks where root's lab writes and tries to reach the servers the
//! lab manages; a known password is looked for in every child's
//! /proc/PID/cmdline while a lab runs, then in the store, every report
//! format, every export, querydiff's outputs and every message printed.
//!
//! Creating a user needs root: without it the tests that need one are
//! skipped with a printed reason, except under CI=true (which runs as
//! root), where that is a failure.

mod common;

use common::{dbbench_in, dbbench_in_env, have_server_binaries, server_env, tempdir, Managed};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether this test may create OS users; prints why not, or fails under CI.
fn can_create_users() -> bool {
    if is_root() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but not root: the security tests create an unprivileged OS user (useradd)");
    }
    common::skipped("needs root to create an unprivileged OS user (useradd)");
    false
}

/// An unprivileged OS user made for one test; removed when dropped.
struct Intruder {
    name: String,
    uid: u32,
    gid: u32,
}

impl Intruder {
    fn new(tag: &str) -> Intruder {
        let name = format!("dbb-{tag}-{}", std::process::id());
        let _ = Command::new("userdel").arg(&name).output();
        // useradd fails while another process holds /etc/passwd's lock: retry.
        let mut last = String::new();
        for _ in 0..20 {
            let out = Command::new("useradd")
                .args(["--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", &name])
                .output()
                .expect("useradd");
            if out.status.success() {
                last.clear();
                break;
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            std::thread::sleep(Duration::from_millis(250));
        }
        assert!(last.is_empty(), "useradd {name}: {last}");
        let id = |flag: &str| -> u32 {
            let out = Command::new("id").args([flag, &name]).output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        Intruder { uid: id("-u"), gid: id("-g"), name }
    }

    /// Runs `program` as this user (no supplementary groups), cwd `/`.
    fn run(&self, program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir("/").uid(self.uid).gid(self.gid).stdin(Stdio::null());
        for v in ["MYSQL_PWD", "PGPASSWORD", "DBBENCH_MYSQL_PASSWORD", "DBBENCH_PGSQL_PASSWORD"] {
            cmd.env_remove(v);
        }
        cmd.env("HOME", "/nonexistent").envs(env.iter().copied());
        cmd.output().unwrap_or_else(|e| panic!("{program} as {}: {e}", self.name))
    }

    fn sh(&self, script: &str) -> Output {
        self.run("sh", &["-c", script], &[])
    }
}

impl Drop for Intruder {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A root-owned file with known contents that an attack would overwrite.
fn precious(dir: &Path) -> PathBuf {
    let p = dir.join("root-owned-target");
    std::fs::write(&p, "precious\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    p
}

fn assert_untouched(target: &Path) {
    assert_eq!(
        std::fs::read_to_string(target).unwrap(),
        "precious\n",
        "{} was written through a symlink",
        target.display()
    );
}

/// The run directory name dbbench used before issue 21:
/// `/tmp/dbbench-<first 10 hex digits of FNV-1a(canonical work dir)>`,
/// which any local user could compute and create first.
fn old_predictable_rundir(workdir: &Path) -> PathBuf {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in workdir.to_string_lossy().bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    PathBuf::from(format!("/tmp/dbbench-{}", &format!("{h:016x}")[..10]))
}

/// The original attack: the intruder creates the lab's predictable /tmp
/// run directory first (mode 0777) with the server's log and init log
/// symlinked to a root-owned file; root then runs a lab on managed
/// MariaDB. Nothing may be written through the links, the lab must not
/// use that directory, and it must still run (the run directory is a
/// fresh private one). The hook checks what docs/lab.md promises: over TCP
/// the benchmark account needs DBBENCH_SERVER_PASSWORD, and nothing else
/// gets in.
#[test]
fn a_planted_tmp_run_directory_redirects_nothing() {
    if !can_create_users() || !have_server_binaries() {
        return;
    }
    let intruder = Intruder::new("tmp");
    let dir = tempdir("sec-tmp");
    let target = precious(&dir);
    // A work directory long enough that sockets cannot live in it: the lab
    // then needs a short directory under /tmp, the case that was attacked.
    let base = dir.join("w".repeat(64));
    let workdir = base.join("planted-1");
    let planted = old_predictable_rundir(&workdir);
    let _ = std::fs::remove_dir_all(&planted);
    let t = target.display();
    let p = planted.display();
    let o = intruder.sh(&format!(
        "umask 0 && mkdir -m 0777 {p} {p}/0 && for f in mariadb.err mariadb-init.log mariadb.pid postgresql.log; do ln -s {t} {p}/0/$f; done"
    ));
    assert!(o.status.success(), "{}", text(&o));
    let planted_before = std::fs::read_dir(planted.join("0")).unwrap().count();

    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        r#"
[experiment]
name = "planted"
threads = [1]
time = 1
options = { tables = 1, table-size = 100 }

[[configuration]]
name = "m"
server = "mariadb"
server_options = ["--innodb-buffer-pool-size=32M"]

[[workload]]
test = "oltp_point_select"

[hooks]
before_run = [{ shell = "MYSQL_PWD=$DBBENCH_SERVER_PASSWORD mariadb -h 127.0.0.1 -P $DBBENCH_SERVER_PORT -u sbtest -e 'SELECT 1' && ! mariadb -h 127.0.0.1 -P $DBBENCH_SERVER_PORT -u sbtest -e 'SELECT 1' 2>/dev/null && ! mariadb -h 127.0.0.1 -P $DBBENCH_SERVER_PORT -u root -e 'SELECT 1' 2>/dev/null" }]
"#,
    )
    .unwrap();
    let r = dbbench_in(
        &dir,
        &["lab", "run", spec.to_str().unwrap(), &format!("--workdir={}", base.display()), "--keep-data"],
    );
    let cleanup = || {
        let _ = std::fs::remove_dir_all(&planted);
    };
    assert_untouched(&target);
    let entries: Vec<_> = std::fs::read_dir(planted.join("0")).unwrap().flatten().map(|e| e.file_name()).collect();
    cleanup();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(entries.len(), planted_before, "the lab wrote into the planted directory: {entries:?}");
    // The work directory is private (searchable by the server's OS user only).
    for d in [&base, &workdir] {
        let m = std::fs::metadata(d).unwrap();
        assert_eq!((m.mode() & 0o777, m.uid()), (0o711, 0), "{}", d.display());
    }
    // The benchmark account's TCP password stays in the work directory (0600), out of the store.
    let pw_file = workdir.join("server-password");
    assert_eq!(std::fs::metadata(&pw_file).unwrap().mode() & 0o777, 0o600);
    let pw = std::fs::read_to_string(&pw_file).unwrap();
    let store = std::fs::read(base.join("results.sqlite")).unwrap();
    assert!(!contains(&store, pw.trim()), "the server password is in the store");
    let _ = std::fs::remove_dir_all(&dir);
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Directories and files another user controls are refused or replaced,
/// never written through: a work directory the intruder made, a
/// `dbbench server --dir` the intruder made, an export path the intruder
/// symlinked (and its old predictable temporary name), `tpch gen` and
/// `querydiff --output` into the intruder's directory.
#[test]
fn directories_and_paths_another_user_controls_are_not_written_through() {
    if !can_create_users() {
        return;
    }
    let intruder = Intruder::new("dir");
    let dir = tempdir("sec-dir");
    let target = precious(&dir);
    let t = target.display();
    // The intruder's own directory, open to all, in a directory root uses.
    let theirs = dir.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(intruder.uid), Some(intruder.gid)).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    let th = theirs.display();
    let o = intruder.sh(&format!(
        "umask 0 && mkdir -m 0777 {th}/lab {th}/srv && ln -s {t} {th}/lab/results.sqlite && ln -s {t} {th}/srv/server.json \
         && ln -s {t} {th}/r.html && ln -s {t} {th}/r.html.tmp && ln -s {t} {th}/nation.tbl && ln -s {t} {th}/out.jsonl"
    ));
    assert!(o.status.success(), "{}", text(&o));

    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        "[experiment]\nname = \"s\"\nthreads = [1]\ntime = 1\noptions = { table-size = 50 }\n\n[[configuration]]\nname = \"a\"\nserver = \"sqlite\"\n\n[[workload]]\ntest = \"oltp_point_select\"\n",
    )
    .unwrap();
    // A work directory the intruder owns: refused with one line.
    let r = dbbench_in(&dir, &["lab", "run", spec.to_str().unwrap(), &format!("--workdir={th}/lab")]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("belongs to uid") && r.stderr.trim().lines().count() == 1, "{}", r.stderr);
    // ... as is a server directory.
    let r = dbbench_in(&dir, &["server", "start", "--kind", "mariadb", "--dir", &format!("{th}/srv")]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("belongs to uid"), "{}", r.stderr);
    assert_untouched(&target);

    // A report exported to a path the intruder symlinked: the link is
    // replaced (rename), nothing is written through it.
    let r = dbbench_in(&dir, &["lab", "run", spec.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = dbbench_in(&dir, &["report", spec.to_str().unwrap(), "--quiet", &format!("--export-html={th}/r.html")]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_untouched(&target);
    assert!(std::fs::read_to_string(theirs.join("r.html")).unwrap().contains("<html"));
    // tpch gen and querydiff --output refuse a symlinked file.
    let r = dbbench_in(&dir, &["tpch", "gen", "--sf=0.01", "--tables=nation", &format!("--dir={th}")]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(format!("{}{}", r.stdout, r.stderr).contains("is a symlink"), "{}{}", r.stdout, r.stderr);
    let db = dir.join("q.db");
    let q = dir.join("q.sql");
    std::fs::write(&q, "SELECT 1").unwrap();
    let dsn = format!("sqlite:{}", db.display());
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            "--dsn1",
            &dsn,
            "--dsn2",
            &dsn,
            "--queries",
            q.to_str().unwrap(),
            &format!("--output={th}/out.jsonl"),
        ],
    );
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("is a symlink"), "{}", r.stderr);
    assert_untouched(&target);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The unprivileged user tries what worked before issue 21 against
/// servers root started with `dbbench server start`: MariaDB's root and
/// sbtest over TCP without a password (then `SELECT ... INTO OUTFILE` a
/// root-owned file), PostgreSQL's postgres and sbtest over TCP (then
/// `COPY ... TO PROGRAM`), both servers' sockets, and the password file.
/// Every attempt fails; root with the password gets in (so the failures
/// are the server refusing, not a wrong address).
#[test]
fn an_unprivileged_user_cannot_reach_managed_servers() {
    if !can_create_users() || !have_server_binaries() {
        return;
    }
    let intruder = Intruder::new("srv");
    let dir = tempdir("sec-srv");
    let maria = Managed::start(&dir.join("m"), "mariadb", &["--innodb-buffer-pool-size=32M"]);
    let pg = Managed::start(&dir.join("p"), "postgresql", &["shared_buffers=16MB"]);
    let (mi, pi) = (maria.info(), pg.info());
    let (mport, pport) = (mi["port"].to_string(), pi["port"].to_string());
    let (msock, pdir) = (maria.socket(), pg.socket());
    let outfile = dir.join("outfile-by-intruder");
    let program_mark = dir.join("program-by-intruder");
    // Writable by the servers' OS users if they ever ran the attack.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let outfile_sql = format!("SELECT 'owned' INTO OUTFILE '{}'", outfile.display());
    let program_sql = format!("COPY (SELECT 1) TO PROGRAM 'touch {}'", program_mark.display());

    let mut failures = Vec::new();
    let mut attempt = |what: &str, o: Output| {
        if o.status.success() {
            failures.push(format!("{what}: succeeded: {}", text(&o)));
        }
    };
    for user in ["root", "sbtest"] {
        let args = ["--connect-timeout=5", "-h", "127.0.0.1", "-P", &mport, "-u", user, "-e", &outfile_sql];
        attempt(&format!("mariadb TCP as {user}"), intruder.run("mariadb", &args, &[]));
        let args = ["--connect-timeout=5", "-S", &msock, "-u", user, "-e", &outfile_sql];
        attempt(&format!("mariadb socket as {user}"), intruder.run("mariadb", &args, &[]));
        // A guess at the password.
        let args = ["--connect-timeout=5", "-h", "127.0.0.1", "-P", &mport, "-u", user, "-e", "SELECT 1"];
        attempt(
            &format!("mariadb TCP as {user}, guessed password"),
            intruder.run("mariadb", &args, &[("MYSQL_PWD", "sbtest")]),
        );
    }
    for user in ["postgres", "sbtest"] {
        for host in ["127.0.0.1", pdir.as_str()] {
            let args = ["-X", "-w", "-h", host, "-p", &pport, "-U", user, "-d", "sbtest", "-c", &program_sql];
            attempt(&format!("psql {host} as {user}"), intruder.run("psql", &args, &[("PGCONNECT_TIMEOUT", "5")]));
        }
    }
    for f in [dir.join("m/password"), dir.join("p/password")] {
        attempt(&format!("cat {}", f.display()), intruder.run("cat", &[f.to_str().unwrap()], &[]));
    }
    let written =
        [&outfile, &program_mark].iter().filter(|f| f.exists()).map(|f| f.display().to_string()).collect::<Vec<_>>();
    assert!(
        failures.is_empty() && written.is_empty(),
        "{}
written: {written:?}",
        failures.join("\n")
    );
    // Root with the password: in over TCP, but still no superuser.
    let ok = Command::new("mariadb")
        .args(["-h", "127.0.0.1", "-P", &mport, "-u", "sbtest", "-N", "-e", "SELECT CURRENT_USER()"])
        .env("MYSQL_PWD", maria.password())
        .output()
        .unwrap();
    assert!(ok.status.success() && text(&ok).contains("sbtest@127.0.0.1"), "{}", text(&ok));
    let denied = Command::new("mariadb")
        .args(["-h", "127.0.0.1", "-P", &mport, "-u", "sbtest", "-e", &outfile_sql])
        .env("MYSQL_PWD", maria.password())
        .output()
        .unwrap();
    assert!(!denied.status.success() && text(&denied).contains("Access denied"), "{}", text(&denied));
    let ok = Command::new("psql")
        .args([
            "-X",
            "-w",
            "-At",
            "-h",
            "127.0.0.1",
            "-p",
            &pport,
            "-U",
            "sbtest",
            "-d",
            "sbtest",
            "-c",
            "SELECT current_user",
        ])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert!(ok.status.success() && text(&ok).contains("sbtest"), "{}", text(&ok));
    let denied = Command::new("psql")
        .args(["-X", "-w", "-h", "127.0.0.1", "-p", &pport, "-U", "sbtest", "-d", "sbtest", "-c", &program_sql])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert!(!denied.status.success() && text(&denied).contains("pg_execute_server_program"), "{}", text(&denied));
    assert!(!outfile.exists() && !program_mark.exists(), "an attack wrote a file");
    drop((maria, pg));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every command line of every process, while `child` runs: those holding
/// `needle` (with it masked), and how many distinct dbbench runs were seen.
fn watch_cmdlines(child: &mut std::process::Child, needle: &str, timeout: Duration) -> (Vec<String>, usize) {
    let mut leaks = Vec::new();
    let mut runs = std::collections::HashSet::new();
    let start = Instant::now();
    while matches!(child.try_wait(), Ok(None)) {
        assert!(start.elapsed() < timeout, "the lab run did not end within {timeout:?}");
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(c) = std::fs::read(e.path().join("cmdline")) else { continue };
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(needle) {
                leaks.push(format!("pid {pid}: {}", c.replace(needle, "<PASSWORD>")));
            }
            if c.contains(" run ") && c.contains("--format=json") {
                runs.insert(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (leaks, runs.len())
}

/// A known password given every way a spec can give one — in a DSN, through
/// `password_env`, as a configuration option, to MariaDB and PostgreSQL —
/// and echoed by a hook and by a failing command workload: it is in no
/// child's argv while the lab runs, and afterwards in no byte of the store,
/// of any report or export, of `lab summary`, of querydiff's outputs, or of
/// anything printed. The runs themselves get it (they succeed).
#[test]
fn a_password_reaches_no_argv_store_report_export_or_log() {
    let Some(sock) = server_env("DBBENCH_TEST_MYSQL_SOCKET") else { return };
    if !have_server_binaries() {
        return;
    }
    let pw = format!("Kq7-canary-{}-pw", std::process::id());
    let user = "dbbench_leak";
    // An account with that password on each test server (sbtest may create them).
    let mut c = mysql::Conn::new(mysql::OptsBuilder::new().socket(Some(sock.clone())).user(Some("sbtest"))).unwrap();
    use mysql::prelude::Queryable;
    for db in ["leak1", "leak2", "leak3", "leakq"] {
        c.query_drop(format!("DROP DATABASE IF EXISTS {db}")).unwrap();
        c.query_drop(format!("CREATE DATABASE {db}")).unwrap();
    }
    c.query_drop(format!("DROP USER IF EXISTS '{user}'@'localhost'")).unwrap();
    c.query_drop(format!("CREATE USER '{user}'@'localhost' IDENTIFIED BY '{pw}'")).unwrap();
    c.query_drop(format!("GRANT ALL ON `leak%`.* TO '{user}'@'localhost'")).unwrap();
    let dir = tempdir("sec-leak");
    // PostgreSQL over TCP, where a managed server asks for a password
    // (the test server trusts every local connection): sbtest's, set to the
    // known one.
    let pg = Managed::start(&dir.join("pg"), "postgresql", &["shared_buffers=16MB"]);
    pg.psql_admin(&format!("ALTER ROLE sbtest PASSWORD '{pw}'"));
    let pgport = pg.info()["port"].to_string();
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        format!(
            r#"
[experiment]
name = "leak"
threads = [1]
time = 1
options = {{ tables = 1, table-size = 100 }}

[[configuration]]
name = "dsn"
server = "external"
dsn = "mysql://{user}:{pw}@localhost/leak1?socket={sock}"

[[configuration]]
name = "env"
server = "external"
dsn = "mysql://{user}@localhost/leak2?socket={sock}"
password_env = "DBBENCH_TEST_LEAK_PW"

[[configuration]]
name = "opt"
server = "external"
dsn = "mysql://{user}@localhost/leak3?socket={sock}"
options = {{ mysql-password = "{pw}" }}

[[configuration]]
name = "pg"
server = "external"
dsn = "postgresql://sbtest@127.0.0.1:{pgport}/sbtest"
password_env = "DBBENCH_TEST_LEAK_PW"

[[workload]]
test = "oltp_point_select"

[[workload]]
name = "echo"
command = ["sh", "-c", "echo the password is $MYSQL_PWD$PGPASSWORD; echo tps = 1; exit 3"]
metrics = {{ tps = 'tps = ([0-9]+)' }}

[hooks]
after_run = [{{ shell = "echo hook saw $MYSQL_PWD $PGPASSWORD $DBBENCH_MYSQL_PASSWORD $DBBENCH_PGSQL_PASSWORD" }}]
"#
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbbench"))
        .args(["lab", "run", spec.to_str().unwrap()])
        .current_dir(&dir)
        .env("DBBENCH_TEST_LEAK_PW", &pw)
        // A password in the lab's own environment must not reach any run.
        .env("MYSQL_PWD", "not-this-one")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (leaks, runs_seen) = watch_cmdlines(&mut child, &pw, Duration::from_secs(300));
    let out = child.wait_with_output().unwrap();
    let lab_output = text(&out);
    assert!(leaks.is_empty(), "the password is in command lines:\n{}", leaks.join("\n"));
    assert!(runs_seen >= 2, "the watch saw {runs_seen} runs; it cannot have looked");
    // Exit 2: the command workload fails on purpose; the tests ran.
    assert_eq!(out.status.code(), Some(2), "{lab_output}");
    let store = rusqlite::Connection::open(dir.join("dbbench-lab/results.sqlite")).unwrap();
    let ok: i64 = store
        .query_row("SELECT count(*) FROM runs r JOIN cells c ON r.cell_id = c.id WHERE c.workload = 'oltp_point_select' AND r.status = 'ok'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, 4, "every configuration connected with its password: {lab_output}");
    let hook: String =
        store.query_row("SELECT detail FROM events WHERE kind = 'hook_output' LIMIT 1", [], |r| r.get(0)).unwrap();
    assert!(hook.contains("hook saw <hidden>"), "{hook}");
    drop(store);

    let mut checked: Vec<(String, Vec<u8>)> = vec![("lab run's output".into(), lab_output.into_bytes())];
    for f in std::fs::read_dir(dir.join("dbbench-lab")).unwrap().flatten() {
        if f.path().is_file() {
            checked.push((f.path().display().to_string(), std::fs::read(f.path()).unwrap()));
        }
    }
    for f in std::fs::read_dir(dir.join("dbbench-lab/reports")).unwrap().flatten() {
        checked.push((f.path().display().to_string(), std::fs::read(f.path()).unwrap()));
    }
    let exports = ["html", "json", "csv", "markdown", "xlsx"];
    let mut args = vec!["report".to_string(), spec.display().to_string()];
    args.extend(exports.iter().map(|e| format!("--export-{e}={}", dir.join(format!("r.{e}")).display())));
    // `report SPEC` reads the spec, whose password_env must be set (issue 21, item 5).
    let env = [("DBBENCH_TEST_LEAK_PW", Some(pw.as_str()))];
    let r = dbbench_in_env(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>(), &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    checked.push(("report's output".into(), format!("{}{}", r.stdout, r.stderr).into_bytes()));
    for e in exports {
        let f = dir.join(format!("r.{e}"));
        let bytes = std::fs::read(&f).unwrap();
        if e == "xlsx" {
            // Its parts are compressed: a password in them would not show in the file's bytes.
            let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).unwrap();
            for i in 0..archive.len() {
                let mut part = archive.by_index(i).unwrap();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut part, &mut data).unwrap();
                checked.push((format!("{} {}", f.display(), part.name().unwrap()), data));
            }
        }
        checked.push((f.display().to_string(), bytes));
    }
    let r = dbbench_in_env(&dir, &["lab", "summary", spec.to_str().unwrap()], &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    checked.push(("lab summary".into(), format!("{}{}", r.stdout, r.stderr).into_bytes()));

    // querydiff with the password in its DSNs (its own argv is the user's choice).
    std::fs::write(dir.join("q.sql"), "SELECT 1").unwrap();
    let dsn = format!("mysql://{user}:{pw}@localhost/leakq?socket={sock}");
    let (out_file, html) = (dir.join("qd.jsonl"), dir.join("qd.html"));
    let r = dbbench_in(
        &dir,
        &[
            "querydiff",
            "--dsn1",
            &dsn,
            "--dsn2",
            &dsn,
            "--queries",
            "q.sql",
            &format!("--output={}", out_file.display()),
            &format!("--export-html={}", html.display()),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    checked.push(("querydiff's output".into(), format!("{}{}", r.stdout, r.stderr).into_bytes()));
    checked.push((out_file.display().to_string(), std::fs::read(&out_file).unwrap()));
    checked.push((html.display().to_string(), std::fs::read(&html).unwrap()));
    // ... and an error naming a DSN with the password.
    let bad = format!("mysql://{user}:{pw}@localhost/nosuchdb?socket={sock}");
    let r = dbbench_in(&dir, &["querydiff", "--dsn1", &bad, "--dsn2", &dsn, "--queries", "q.sql"]);
    assert_ne!(r.code, 0);
    checked.push(("querydiff's error".into(), format!("{}{}", r.stdout, r.stderr).into_bytes()));

    let found: Vec<&String> = checked.iter().filter(|(_, b)| contains(b, &pw)).map(|(n, _)| n).collect();
    assert!(found.is_empty(), "the password is in: {found:?}");
    assert!(checked.len() >= 14, "{}", checked.len());

    // The load engine takes the password from the environment:
    // --mysql-password, then DBBENCH_MYSQL_PASSWORD, then MYSQL_PWD.
    let base = ["--db-driver=mysql", "--mysql-user=dbbench_leak", "--mysql-db=leakq", "--events=1", "--threads=1"];
    let sock_arg = format!("--mysql-socket={sock}");
    let pw_arg = format!("--mysql-password={pw}");
    let mut a: Vec<&str> = base.to_vec();
    a.push(&sock_arg);
    let lua = dir.join("one.lua");
    std::fs::write(&lua, "function event() local c = sysbench.sql.driver():connect() c:query('SELECT 1') end\n")
        .unwrap();
    a.extend([lua.to_str().unwrap(), "run"]);
    // (environment, connects, what)
    type Case<'a> = (&'a [(&'a str, Option<&'a str>)], bool, &'a str);
    let cases: [Case; 5] = [
        (&[("DBBENCH_MYSQL_PASSWORD", Some(&pw)), ("MYSQL_PWD", None)], true, "DBBENCH_MYSQL_PASSWORD"),
        (&[("DBBENCH_MYSQL_PASSWORD", None), ("MYSQL_PWD", Some(&pw))], true, "MYSQL_PWD"),
        (&[("DBBENCH_MYSQL_PASSWORD", None), ("MYSQL_PWD", None)], false, "none"),
        (&[("DBBENCH_MYSQL_PASSWORD", Some("wrong")), ("MYSQL_PWD", Some(&pw))], false, "DBBENCH_ before MYSQL_PWD"),
        (&[("DBBENCH_MYSQL_PASSWORD", Some("wrong")), ("MYSQL_PWD", None)], true, "the option first"),
    ];
    for (env, ok, what) in cases {
        let mut args = a.clone();
        if what == "the option first" {
            args.insert(0, &pw_arg);
        }
        let r = dbbench_in_env(&dir, &args, env);
        assert_eq!(r.code == 0, ok, "{what}: {}{}", r.stdout, r.stderr);
        assert!(!contains(format!("{}{}", r.stdout, r.stderr).as_bytes(), &pw), "{what}: printed the password");
    }
    for db in ["leak1", "leak2", "leak3", "leakq"] {
        let _ = c.query_drop(format!("DROP DATABASE IF EXISTS {db}"));
    }
    let _ = c.query_drop(format!("DROP USER IF EXISTS '{user}'@'localhost'"));
    drop(pg);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Everything under `dir` (not following symlinks): (directories, files).
fn walk(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut dirs, mut files) = (vec![dir.to_path_buf()], Vec::new());
    let mut i = 0;
    while i < dirs.len() {
        for e in std::fs::read_dir(&dirs[i]).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                files.push(e.path());
            }
        }
        i += 1;
    }
    (dirs, files)
}

/// Issue 38: what a lab leaves (run with --keep-data, its spec in a
/// directory open to all, as a shared project directory is), tried by
/// another local user who knows the layout from the docs: no directory of
/// it can be listed or written into (so nothing renamed, removed or planted),
/// no file written; only the store and the reports, which hold no password
/// (docs/security.md), can be read, by their names. Before, the data,
/// snapshot and reports directories were 0755 (listable) and the SQLite
/// data and its snapshot readable by anyone.
#[test]
fn another_user_can_neither_list_nor_change_what_a_lab_leaves() {
    if !can_create_users() {
        return;
    }
    let intruder = Intruder::new("walk");
    let dir = tempdir("sec-walk");
    let open = dir.join("project");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = open.join("spec.toml");
    std::fs::write(
        &spec,
        "[experiment]\nname = \"w\"\nthreads = [1]\ntime = 1\noptions = { table-size = 50 }\n\n[[configuration]]\nname = \"a\"\nserver = \"sqlite\"\n\n[[workload]]\ntest = \"oltp_read_write\"\n",
    )
    .unwrap();
    let r = dbbench_in(&open, &["lab", "run", "--keep-data", spec.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let (dirs, files) = walk(&open.join("dbbench-lab"));
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    assert!(names.iter().any(|n| n.ends_with("results.sqlite")), "{names:?}");
    assert!(names.iter().any(|n| n.contains("/snapshots/")), "no snapshot kept: {names:?}");
    assert!(names.iter().any(|n| n.contains("/reports/")), "no report: {names:?}");
    for d in &dirs {
        let d = d.display();
        let o = intruder.sh(&format!("ls -A {d}"));
        assert!(!o.status.success(), "{d} can be listed by another user: {}", text(&o));
        let o = intruder.sh(&format!(": > {d}/planted"));
        assert!(!o.status.success(), "another user created a file in {d}");
    }
    for f in &files {
        let shown = f.display();
        let o = intruder.sh(&format!(": >> {shown}"));
        assert!(!o.status.success(), "another user can write {shown}");
        let shareable = f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("results.sqlite"))
            || f.parent().is_some_and(|p| p.ends_with("reports"));
        // Empty markers (`.complete`, `initialized`) say nothing beyond their names.
        let empty = std::fs::metadata(f).unwrap().len() == 0;
        if !shareable && !empty {
            let o = intruder.sh(&format!("cat {shown} > /dev/null"));
            assert!(!o.status.success(), "another user can read {shown}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
