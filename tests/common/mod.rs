//! Shared helpers for the integration tests: running the real binary, and
//! reaching the real MariaDB and PostgreSQL servers that `scripts/servers.sh`
//! starts (their addresses come from DBBENCH_TEST_* variables). Without those
//! variables a server test is skipped with a printed reason, except under
//! CI=true, where a missing server is a failure.

#![allow(dead_code)]

use std::process::Command;

/// What a dbbench run printed and returned.
pub struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// The number after `label` on the first line containing it.
    pub fn number(&self, label: &str) -> Option<f64> {
        let line = self.stdout.lines().find(|l| l.contains(label))?;
        let rest = &line[line.find(label)? + label.len()..];
        rest.split_whitespace().next()?.trim_end_matches('s').parse().ok()
    }
    /// The read/write/other counts of the final report.
    pub fn rwo(&self) -> (u64, u64, u64) {
        let n = |l: &str| self.number(l).unwrap_or_else(|| panic!("no '{l}' in output:\n{}", self.stdout)) as u64;
        (n("read:"), n("write:"), n("other:"))
    }
}

/// Runs dbbench with `args` in `dir` (bounded by the args themselves).
pub fn dbbench_in(dir: &std::path::Path, args: &[&str]) -> Run {
    run_program(env!("CARGO_BIN_EXE_dbbench"), dir, args)
}

/// [`dbbench_in`] with environment changes: `(name, Some(value))` sets a
/// variable, `(name, None)` removes it.
pub fn dbbench_in_env(dir: &std::path::Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbbench"));
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    output(cmd.args(args).current_dir(dir), env!("CARGO_BIN_EXE_dbbench"))
}

fn run_program(program: &str, dir: &std::path::Path, args: &[&str]) -> Run {
    output(Command::new(program).args(args).current_dir(dir), program)
}

fn output(cmd: &mut Command, program: &str) -> Run {
    if program == env!("CARGO_BIN_EXE_dbbench") {
        lab_lock_in_test_dir(cmd);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("run {program}: {e}"));
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `lab run` refuses to measure beside another lab on the host; tests run
/// labs side by side (and other test runs may share the host), so each
/// test's labs lock in their own directory (`DBBENCH_LAB_LOCK_DIR`) unless
/// the test sets one.
pub fn lab_lock_in_test_dir(cmd: &mut Command) {
    if cmd.get_envs().any(|(k, _)| k == "DBBENCH_LAB_LOCK_DIR") {
        return;
    }
    let dir = cmd.get_current_dir().map(|d| d.to_path_buf()).unwrap_or_else(std::env::temp_dir);
    cmd.env("DBBENCH_LAB_LOCK_DIR", dir.join(".dbbench-lab-lock"));
}

/// Where Debian's sysbench package keeps its Lua scripts.
pub const SYSBENCH_SCRIPTS: &str = "/usr/share/sysbench";

/// Whether the reference sysbench (Debian's package, installed by
/// scripts/test.sh) is here. Without it a comparison test is skipped with a
/// printed reason, except under CI=true, where it is a failure.
pub fn have_sysbench() -> bool {
    let found = Command::new("sysbench").arg("--version").output().is_ok_and(|o| o.status.success())
        && std::path::Path::new(SYSBENCH_SCRIPTS).join("oltp_common.lua").is_file();
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("sysbench and {SYSBENCH_SCRIPTS} are required under CI (apt-get install sysbench)");
        }
        skipped("the reference sysbench is not installed (apt-get install sysbench)");
    }
    found
}

/// Runs the reference sysbench with `args` in `dir`.
pub fn sysbench_in(dir: &std::path::Path, args: &[&str]) -> Run {
    run_program("sysbench", dir, args)
}

/// Runs dbbench with `args` in a fresh temporary directory.
pub fn dbbench(args: &[&str]) -> Run {
    let dir = tempdir("run");
    let r = dbbench_in(&dir, args);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// A test's private temporary directory, removed with everything in it
/// when the guard is dropped, unless the test is panicking (then it is kept,
/// and its path printed, to look at) or DBBENCH_TEST_KEEP=1 is set. It
/// derefs to its `Path`, so `dir.join(..)`, `&dir` and `dir.display()` read
/// as they would on a `PathBuf`.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    /// The directory's path, owned.
    pub fn path_buf(&self) -> std::path::PathBuf {
        self.0.clone()
    }
}

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var("DBBENCH_TEST_KEEP").as_deref() == Ok("1") {
            eprintln!("kept the test's directory: {}", self.0.display());
            return;
        }
        // Servers a test started may still be writing as they stop: a
        // second try catches files created during the first.
        if std::fs::remove_dir_all(&self.0).is_err() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A new empty private directory under the temporary directory, made by one
/// `mkdir` under a name that did not exist: never one another user created
/// first, never through a symlink planted at a guessed name. Mode 0700, or
/// 0711 as root, as the lab's own directories: servers the tests start
/// under their own OS users must reach their data inside it.
pub fn tempdir(tag: &str) -> TempDir {
    use std::os::unix::fs::DirBuilderExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    for attempt in 0..100u32 {
        let d = std::env::temp_dir().join(format!(
            "dbbench-test-{tag}-{}-{}-{:08x}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            seed.wrapping_mul(2654435761).wrapping_add(attempt.wrapping_mul(40503))
        ));
        // SAFETY: geteuid has no preconditions and cannot fail.
        let mode = if unsafe { libc::geteuid() } == 0 { 0o711 } else { 0o700 };
        match std::fs::DirBuilder::new().mode(mode).create(&d) {
            Ok(()) => return TempDir(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("create temp dir {}: {e}", d.display()),
        }
    }
    panic!("no fresh temporary directory name for {tag} after 100 tries");
}

/// Says that the running test skips part or all of what it checks, and
/// why: on stderr (shown only when the test fails, or with --nocapture)
/// and, when `DBBENCH_TEST_SKIP_LOG` names a file, as a line appended to
/// it, which scripts/test.sh counts and prints at the end, so that a green
/// run never hides what it did not test.
pub fn skipped(why: &str) {
    eprintln!("skipped: {why}");
    let Some(log) = std::env::var_os("DBBENCH_TEST_SKIP_LOG") else { return };
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().split('-').next().unwrap_or("").to_string()))
        .unwrap_or_default();
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    // One write per line with O_APPEND: lines of tests running at once do not mix.
    let line = format!("{binary}::{test}: {}\n", why.replace('\n', " "));
    if let Ok(mut f) =
        std::fs::OpenOptions::new().append(true).create(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(&log)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// An environment variable that names a test server, or None (test skipped)
/// outside CI. Under CI=true its absence fails the test.
pub fn server_env(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            if std::env::var("CI").as_deref() == Ok("true")
                || std::env::var("DBBENCH_TEST_REQUIRE_SERVERS").as_deref() == Ok("1")
            {
                panic!("{name} is not set: CI must start the test servers (scripts/servers.sh up)");
            }
            skipped(&format!("{name} not set (start servers with scripts/servers.sh up DIR and source DIR/env)"));
            None
        }
    }
}

/// Creates (fresh) database `db` on the MariaDB test server and returns the
/// dbbench options that reach it.
pub fn mysql_db(db: &str) -> Option<Vec<String>> {
    let sock = server_env("DBBENCH_TEST_MYSQL_SOCKET")?;
    let opts = mysql::OptsBuilder::new().socket(Some(sock.clone())).user(Some("sbtest"));
    let mut c = mysql::Conn::new(opts).expect("connect to the MariaDB test server");
    use mysql::prelude::Queryable;
    c.query_drop(format!("DROP DATABASE IF EXISTS {db}")).unwrap();
    c.query_drop(format!("CREATE DATABASE {db}")).unwrap();
    Some(vec![
        "--db-driver=mysql".into(),
        format!("--mysql-socket={sock}"),
        "--mysql-user=sbtest".into(),
        format!("--mysql-db={db}"),
    ])
}

/// Runs one query on the MariaDB test server and returns the first column of
/// every row as text.
pub fn mysql_query(db: &str, sql: &str) -> Vec<String> {
    let sock = std::env::var("DBBENCH_TEST_MYSQL_SOCKET").unwrap();
    let opts = mysql::OptsBuilder::new().socket(Some(sock)).user(Some("sbtest")).db_name(Some(db));
    let mut c = mysql::Conn::new(opts).unwrap();
    use mysql::prelude::Queryable;
    let rows: Vec<mysql::Row> = c.query(sql).unwrap();
    rows.into_iter()
        .map(|r| match r.as_ref(0) {
            Some(mysql::Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
            Some(mysql::Value::Int(i)) => i.to_string(),
            Some(mysql::Value::UInt(i)) => i.to_string(),
            Some(v) => format!("{v:?}"),
            None => String::new(),
        })
        .collect()
}

fn pg_client(db: &str) -> postgres::Client {
    let host = std::env::var("DBBENCH_TEST_PGSQL_HOST").unwrap();
    let port = std::env::var("DBBENCH_TEST_PGSQL_PORT").unwrap();
    postgres::Config::new()
        .host(&host)
        .port(port.parse().unwrap())
        .user("sbtest")
        .dbname(db)
        .connect(postgres::NoTls)
        .expect("connect to the PostgreSQL test server")
}

/// Creates (fresh) database `db` on the PostgreSQL test server and returns
/// the dbbench options that reach it.
pub fn pgsql_db(db: &str) -> Option<Vec<String>> {
    let host = server_env("DBBENCH_TEST_PGSQL_HOST")?;
    let port = server_env("DBBENCH_TEST_PGSQL_PORT")?;
    let mut c = pg_client("sbtest");
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {db}")).unwrap();
    c.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    Some(vec![
        "--db-driver=pgsql".into(),
        format!("--pgsql-host={host}"),
        format!("--pgsql-port={port}"),
        "--pgsql-user=sbtest".into(),
        format!("--pgsql-db={db}"),
    ])
}

/// Runs one query on the PostgreSQL test server; first column as text.
pub fn pgsql_query(db: &str, sql: &str) -> Vec<String> {
    first_column(&mut pg_client(db), sql)
}

/// The first column of each row of `sql` on `c`, as text.
pub fn first_column(c: &mut postgres::Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("").to_string()),
            _ => None,
        })
        .collect()
}

/// Joins base options and extra string slices into one argument list.
pub fn args<'a>(base: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = extra.to_vec();
    v.extend(base.iter().map(String::as_str));
    v
}

/// Whether MariaDB and PostgreSQL server binaries are installed (the lab
/// starts its own servers). Missing under CI=true is a failure.
pub fn have_server_binaries() -> bool {
    let pg = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().any(|e| e.path().join("bin/initdb").exists()))
        .unwrap_or(false);
    let found = std::path::Path::new("/usr/sbin/mariadbd").exists() && pg;
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("mariadb-server and postgresql are required under CI");
        }
        eprintln!("skipped: mariadb-server/postgresql not installed");
    }
    found
}

/// A server started with `dbbench server start`, stopped when dropped (also
/// when a test fails).
pub struct Managed {
    dir: std::path::PathBuf,
}

impl Managed {
    pub fn start(dir: &std::path::Path, kind: &str, options: &[&str]) -> Managed {
        let mut args =
            vec!["server", "start", "--kind", kind, "--dir", dir.to_str().unwrap(), "--timeout", "120", "--"];
        args.extend(options);
        let r = dbbench_in(dir.parent().unwrap(), &args);
        assert_eq!(r.code, 0, "server start: {}{}", r.stdout, r.stderr);
        Managed { dir: dir.to_path_buf() }
    }

    pub fn info(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join("server.json")).unwrap()).unwrap()
    }

    pub fn socket(&self) -> String {
        self.info()["socket"].as_str().unwrap().to_string()
    }

    /// The benchmark account's TCP password (DIR/password; the socket needs none).
    pub fn password(&self) -> String {
        std::fs::read_to_string(self.dir.join("password")).expect("DIR/password").trim().to_string()
    }

    /// Runs one SQL command through psql as the `postgres` superuser over
    /// the unix socket (PostgreSQL): what the benchmark account may not do
    /// (CREATE EXTENSION, CREATE ROLE, pg_reload_conf). Its output, trimmed.
    pub fn psql_admin(&self, sql: &str) -> String {
        self.psql_as("postgres", sql)
    }

    /// Runs one SQL command through psql as sbtest over the unix socket
    /// (PostgreSQL); its output, trimmed. Panics with psql's stderr on failure.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_as("sbtest", sql)
    }

    fn psql_as(&self, user: &str, sql: &str) -> String {
        let info = self.info();
        let port = info["port"].as_u64().unwrap().to_string();
        let out = Command::new("psql")
            .args([
                "-X",
                "-q",
                "-At",
                "-h",
                info["socket"].as_str().unwrap(),
                "-p",
                &port,
                "-U",
                user,
                "-d",
                "sbtest",
                "-c",
                sql,
            ])
            .output()
            .expect("psql");
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The server's process id (the postmaster for PostgreSQL).
    pub fn pid(&self) -> u32 {
        self.info()["pid"].as_u64().unwrap() as u32
    }

    /// dbbench options that reach this server as the benchmark account.
    pub fn driver_args(&self) -> Vec<String> {
        let info = self.info();
        let socket = info["socket"].as_str().unwrap();
        match info["kind"].as_str().unwrap() {
            "postgresql" => vec![
                "--db-driver=pgsql".into(),
                format!("--pgsql-host={socket}"),
                format!("--pgsql-port={}", info["port"]),
                "--pgsql-user=sbtest".into(),
                "--pgsql-db=sbtest".into(),
            ],
            _ => vec![
                "--db-driver=mysql".into(),
                format!("--mysql-socket={socket}"),
                "--mysql-user=sbtest".into(),
                "--mysql-db=sbtest".into(),
            ],
        }
    }

    /// A PostgreSQL client as sbtest over the unix socket.
    pub fn postgres(&self) -> postgres::Client {
        let info = self.info();
        postgres::Config::new()
            .host(info["socket"].as_str().unwrap())
            .port(info["port"].as_u64().unwrap() as u16)
            .user("sbtest")
            .dbname("sbtest")
            .connect(postgres::NoTls)
            .unwrap()
    }

    pub fn mysql_dsn(&self) -> String {
        format!("mysql://sbtest@localhost/sbtest?socket={}", self.socket())
    }

    pub fn mysql(&self) -> mysql::Conn {
        mysql::Conn::new(
            mysql::OptsBuilder::new().socket(Some(self.socket())).user(Some("sbtest")).db_name(Some("sbtest")),
        )
        .unwrap()
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        // Never panics (a panic while a failed test unwinds would abort the run).
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_dbbench"))
            .args(["server", "stop", "--dir"])
            .arg(&self.dir)
            .output();
    }
}

/// Runs openssl (Debian package openssl) with `args` in `dir`; panics with
/// its stderr on failure.
pub fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl (Debian package openssl) must be installed");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Throwaway TLS files in a new directory `certs` under `parent`, which is
/// returned: a CA (`ca.crt`, `ca.key`), an unrelated CA (`other.crt`), and a
/// P-256 server certificate for DNS name `localhost` signed by the first
/// (`server.crt`, `server.key`).
pub fn test_certificates(parent: &std::path::Path) -> std::path::PathBuf {
    let certs = parent.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let dir = certs.as_path();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    for (name, cn) in [("ca", "dbbench test CA"), ("other", "another CA")] {
        let (key, crt, subj) = (format!("{name}.key"), format!("{name}.crt"), format!("/CN={cn}"));
        let mut a = vec!["req", "-x509"];
        a.extend(ec);
        a.extend(["-keyout", &key, "-out", &crt, "-days", "2", "-subj", &subj]);
        openssl(dir, &a);
    }
    let mut a = vec!["req"];
    a.extend(ec);
    a.extend(["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
    openssl(dir, &a);
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
    certs
}

/// A dbbench run in the background whose output is read as it comes (so a
/// full pipe never stalls it): each stdout line with the time it arrived.
pub struct Background {
    child: std::process::Child,
    pub started: std::time::Instant,
    lines: std::sync::mpsc::Receiver<(std::time::Instant, String)>,
    stderr: std::thread::JoinHandle<String>,
}

impl Background {
    /// Starts dbbench with `args` in `dir`.
    pub fn start(dir: &std::path::Path, args: &[&str]) -> Background {
        use std::io::{BufRead, Read};
        let mut child = Command::new(env!("CARGO_BIN_EXE_dbbench"))
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start dbbench");
        let (tx, lines) = std::sync::mpsc::channel();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            // Stamps each line as it arrives: at a real-time priority where
            // allowed (root), so that under a thousand clients the stamp is
            // when dbbench wrote the line, not when this thread next got
            // the CPU (the reader saw "Threads started!" a second late and
            // `[ 1s ]` with it, in CI). The child started before; it keeps
            // its own priority.
            let param = libc::sched_param { sched_priority: 1 };
            // SAFETY: `param` outlives the call, which only reads it; 0 is
            // the calling thread; a refusal only leaves its priority as is.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
            for l in out.lines().map_while(Result::ok) {
                let _ = tx.send((std::time::Instant::now(), l));
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Background { child, started: std::time::Instant::now(), lines, stderr }
    }

    /// The next stdout line and when it arrived; None at the end of the
    /// output, or when nothing came for `wait`.
    pub fn line(&self, wait: std::time::Duration) -> Option<(std::time::Instant, String)> {
        self.lines.recv_timeout(wait).ok()
    }

    /// Waits for the end of the run, at most `limit` from its start (then
    /// kills it and panics: the run hung); its outcome, the rest of its
    /// stdout, and how long it ran.
    pub fn finish(mut self, limit: std::time::Duration) -> (Run, std::time::Duration) {
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("wait for dbbench") {
                break st;
            }
            if self.started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let rest: Vec<String> = self.lines.try_iter().map(|l| l.1).collect();
                panic!("dbbench did not end within {limit:?} (killed); output so far:\n{}", rest.join("\n"));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let took = self.started.elapsed();
        let mut stdout = String::new();
        while let Ok((_, l)) = self.lines.recv() {
            stdout.push_str(&l);
            stdout.push('\n');
        }
        let stderr = self.stderr.join().unwrap_or_default();
        (Run { code: status.code().unwrap_or(-1), stdout, stderr }, took)
    }
}
