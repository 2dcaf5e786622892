//! Managed database servers: the lab's per-configuration servers and
//! `dbbench server start|stop|status`.
//!
//! A managed server runs from a private datadir, on a unix socket inside a
//! private run directory and on a free 127.0.0.1 port, so nothing here
//! touches system services, their sockets or their ports. This module
//! initialises a datadir (with the benchmark account `sbtest` and database
//! `sbtest`), starts and stops the server with bounded waits, detects
//! crashes, and answers the lab's SQL: hooks, server variables and status
//! samples.
//!
//! Other local users get nothing from a managed server (docs/security.md):
//! * It runs as an unprivileged OS user: when dbbench is root, MariaDB/MySQL
//!   run as `mysql` and PostgreSQL as `postgres` (exec'd as that user, never
//!   started as root), else as dbbench's own user. Its datadir and run
//!   directory (socket, logs, pid file, temporary files) belong to that
//!   user, mode 0700, so only it and root reach the socket.
//! * Over the socket the benchmark account needs no password (the
//!   directory is the gate); over TCP it needs a random password the
//!   caller hands in (the lab: one per experiment, kept out of argv and
//!   the store), set as a hash, never as text a log could show. No other
//!   account accepts TCP logins: MariaDB's root@127.0.0.1/::1/host
//!   accounts are dropped, PostgreSQL's `host` lines ask for SCRAM and
//!   `postgres` has no password. Initialisation runs without TCP at all.
//! * The benchmark account is no superuser unless the spec asks
//!   (`superuser = true`): MariaDB/MySQL all privileges on `sbtest.*` plus
//!   PROCESS and RELOAD (status dumps, FLUSH STATUS), PostgreSQL the owner
//!   of database `sbtest` and a member of `pg_monitor` and `pg_checkpoint`
//!   (CHECKPOINT) — no FILE, SUPER,
//!   `COPY ... PROGRAM` or server-side file access. MariaDB's
//!   `secure_file_priv` is a private directory.
//! * Files in the run directory are opened without following symlinks.
//!
//! Details carried over from `scripts/servers.sh`, each of which cost a
//! debugging session there:
//! * `--no-defaults` (or the spec's `--defaults-file`): a system `my.cnf`
//!   must not leak into a measured configuration.
//! * MariaDB's root account gets "normal" (password-less) authentication,
//!   not `unix_socket`, so it works whatever OS user dbbench runs as; it
//!   is `root@localhost`, reachable through the private socket only.
//! * The server's OS user needs access to every parent directory of its
//!   datadir: a directory it cannot reach is reported, never chmod-ed
//!   behind the user's back.
//! * Ports are picked in 20000-32767: below Linux's ephemeral range (so
//!   outgoing connections do not take them) and above usual service ports.
//!   Picking and binding race with every other process, so a start that
//!   fails with "address already in use" is retried with another port, a
//!   few times only.
//! * A server runs in its own session (`setsid`): it outlives dbbench and
//!   never receives a terminal's Ctrl-C aimed at a run.
//! * A pid is checked against `/proc/PID/cmdline` before it is signalled, so
//!   a pid reused by an unrelated process is never killed.
//! * Unix socket paths must fit in 108 bytes; too long a path is reported up
//!   front instead of as a cryptic bind error.
//!
//! dbbench adds no tuning options: the spec's options decide performance.
//! Only what running privately needs is set (port, socket, 127.0.0.1, log,
//! pid file, temporary directory, skip-name-resolve, secure-file-priv). Note the defaults that limit clients:
//! MariaDB's `max_connections` is 151 and PostgreSQL's 100, so a run with
//! more threads needs e.g. `--max-connections=2000` / `max_connections=2000`
//! in the spec's options.
//!
//! MySQL (Oracle) is supported in principle (`mysqld --initialize-insecure`,
//! `--loose-mysqlx=OFF` so the X plugin does not take port 33060 and
//! `/tmp/mysqlx.sock`) but untested here: this machine has no Oracle MySQL.
//! When the `mysqld` found is MariaDB's (Debian's `/usr/sbin/mysqld` is a
//! symlink to `mariadbd`), kind `mysql` is refused with a line saying how to
//! point `basedir` at a MySQL build; every started MariaDB/MySQL server is
//! asked what it is (`lab::product`) and refused when that is not its kind.

use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::secret::Secret;
use crate::sqltext::{self, Comments, Dialect};

mod admin;
mod cli;
mod init;
mod layout;
mod logs;
mod process;
mod programs;

use admin::{my_err, mysql_native_hash, pg_err, run_admin_query, scram_sha256_verifier, AdminConn, Rows};
pub use cli::*;
pub use init::*;
pub use layout::run_dir_fits;
use layout::{config_file, is_initialised, option_args, Layout};
use logs::{file_len, is_port_conflict, is_socket_conflict, last_error_line, log_tail, one_line, read_log_from};
pub use process::*;
use programs::{mysql_leading_args, Flavor, Programs};

/// The benchmark account and database every managed server gets.
const BENCH_USER: &str = "sbtest";
/// See `BENCH_USER`.
const BENCH_DB: &str = "sbtest";
/// Port range for managed servers (see the module comment for why).
const PORT_FIRST: u16 = 20000;
/// Last port of the range, inclusive.
const PORT_LAST: u16 = 32767;
/// Starts tried with fresh ports when the picked one was taken meanwhile.
const PORT_ATTEMPTS: u32 = 5;
/// Longest unix socket path we accept: `sun_path` holds 108 bytes, and a
/// margin keeps us clear of implementations that reserve a few.
const MAX_SOCKET_PATH: usize = 100;
/// Interval of every polling wait; start-up is measured per cell, so short.
const POLL: Duration = Duration::from_millis(50);
/// Wait for a process to disappear after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// Timeout of one readiness probe connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// State of a `dbbench server` started server, inside its `--dir`.
const STATE_FILE: &str = "server.json";
/// PostgreSQL's socket directory inside the run directory (kept a
/// subdirectory, as before the run directory itself became private).
const PG_SOCKET_DIR: &str = "pg-socket";
/// MariaDB/MySQL `secure_file_priv` inside the run directory: the only
/// place `SELECT ... INTO OUTFILE` and `LOAD DATA INFILE` (server-side,
/// FILE privilege) may touch, private to the server's OS user.
const FILES_DIR: &str = "files";
/// The file `dbbench server start` keeps the benchmark account's TCP
/// password in (0600, inside DIR).
const PASSWORD_FILE: &str = "password";
/// `dbbench server` bound for initialisation, start and stop waits.
const DEFAULT_CLI_TIMEOUT: Duration = Duration::from_secs(120);

/// Which server program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// MariaDB (`mariadbd`, `mariadb-install-db`).
    Mariadb,
    /// Oracle MySQL (`mysqld`, `mysqld --initialize-insecure`); untested here.
    Mysql,
    /// PostgreSQL (`postgres`, `initdb`).
    Postgresql,
}

impl ServerKind {
    /// Lower-case name, as in specs, file names and `DBBENCH_SERVER_KIND`.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Mariadb => "mariadb",
            ServerKind::Mysql => "mysql",
            ServerKind::Postgresql => "postgresql",
        }
    }

    /// Product name, for messages.
    pub fn label(self) -> &'static str {
        match self {
            ServerKind::Mariadb => "MariaDB",
            ServerKind::Mysql => "MySQL",
            ServerKind::Postgresql => "PostgreSQL",
        }
    }

    /// Parses a user-given name (`mariadb`, `mysql`, `postgresql`, also `postgres`, `pgsql`).
    pub fn parse(s: &str) -> Option<ServerKind> {
        match s.to_ascii_lowercase().as_str() {
            "mariadb" => Some(ServerKind::Mariadb),
            "mysql" => Some(ServerKind::Mysql),
            "postgresql" | "postgres" | "pgsql" => Some(ServerKind::Postgresql),
            _ => None,
        }
    }

    /// MariaDB and MySQL share the protocol, the client library and most procedures.
    fn is_mysql_family(self) -> bool {
        !matches!(self, ServerKind::Postgresql)
    }

    /// Whether this kind may run `product`: kind `mariadb` only MariaDB; kind
    /// `mysql` MySQL and its builds (Percona Server), never MariaDB.
    pub fn fits(self, product: &str) -> bool {
        match self {
            Self::Mariadb => product == "MariaDB",
            Self::Mysql => product == "MySQL" || product == "Percona Server",
            Self::Postgresql => product == "PostgreSQL",
        }
    }

    /// The one line refusing a server whose product is not the kind asked for,
    /// saying how to point dbbench at the right build.
    pub fn mismatch(self, program: &std::path::Path, product: &crate::lab::product::Product) -> String {
        let how = match self {
            Self::Mysql => format!(
                "to benchmark MySQL, set basedir (spec) or --basedir (dbbench server) to an unpacked MySQL tarball or build tree, e.g. basedir = \"/opt/mysql-8.4\"{}; to benchmark {} use kind \"mariadb\"",
                if product.name == "MariaDB" { " (Debian's mysqld is MariaDB's)" } else { "" },
                product.name
            ),
            Self::Mariadb => format!(
                "to benchmark MariaDB, set basedir (spec) or --basedir (dbbench server) to an unpacked MariaDB tarball or build tree; to benchmark {} use kind \"mysql\"",
                product.name
            ),
            Self::Postgresql => "set basedir to a PostgreSQL installation".to_string(),
        };
        format!(
            "kind \"{}\" but {} is {} {}, not {}: {how}",
            self.name(),
            program.display(),
            product.name,
            product.version,
            self.label()
        )
    }
}

/// How to run a server: from the spec's configuration.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// Which server program.
    pub kind: ServerKind,
    /// Directory holding bin/ (and for MariaDB/MySQL share/, scripts/) of an unpacked tarball or
    /// build tree; None = installed binaries (PATH plus /usr/sbin, /usr/lib/postgresql/<newest>/bin).
    pub basedir: Option<PathBuf>,
    /// Server options: for MariaDB/MySQL command-line options like "--key_buffer_size=512M"
    /// (a leading "--" may be missing: add it); for PostgreSQL "name=value" settings passed as -c.
    pub options: Vec<String>,
    /// MariaDB/MySQL: a my.cnf passed with --defaults-file instead of --no-defaults.
    /// PostgreSQL: a file whose contents are appended to postgresql.conf at init.
    pub config_file: Option<PathBuf>,
    /// Bound for initialisation/start/stop waits.
    pub timeout: Duration,
    /// The benchmark account gets every privilege (MariaDB/MySQL: ALL ON
    /// *.* WITH GRANT OPTION; PostgreSQL: SUPERUSER). Off by default: it
    /// then owns its database and may read status, nothing more (see
    /// `create_benchmark_account`).
    pub superuser: bool,
    /// CPUs the server process runs on (its threads and backends inherit
    /// them); None: not pinned (docs/lab.md#pinning).
    pub cpus: Option<crate::lab::cpus::CpuSet>,
    /// CPUs of its initialisation programs (the lab's `other` set).
    pub init_cpus: Option<crate::lab::cpus::CpuSet>,
}

impl ServerSpec {
    /// Installed binaries, no options, 120 s waits, an ordinary benchmark account.
    pub fn new(kind: ServerKind) -> ServerSpec {
        ServerSpec {
            kind,
            basedir: None,
            options: Vec::new(),
            config_file: None,
            timeout: DEFAULT_CLI_TIMEOUT,
            superuser: false,
            cpus: None,
            init_cpus: None,
        }
    }
}

// ------------------------------------------------------------------ the server

/// Why a started server did not become ready.
enum NotReady {
    /// The process ended (its exit status).
    Exited(String),
    /// Still running at the deadline (the last connection error).
    TimedOut(String),
}

/// A running server that we started. Dropping it does NOT stop it (call stop()).
pub struct ManagedServer {
    kind: ServerKind,
    pid: u32,
    /// Our child, when this process started it (reaped by `is_alive`);
    /// None when attached from `server.json` by a later `dbbench server`.
    child: Option<Child>,
    datadir: PathBuf,
    rundir: PathBuf,
    /// MariaDB/MySQL: socket file; PostgreSQL: socket directory.
    socket: PathBuf,
    port: u16,
    log: PathBuf,
    /// Length of the log when this server was started: its own part starts here.
    log_start: u64,
    timeout: Duration,
    admin: Mutex<Option<AdminConn>>,
}

/// InnoDB writes the page list of a quarter of its buffer pool at shutdown
/// and reads those pages back at startup, in the background (both on by
/// default since MariaDB 10.3 and MySQL 5.7): a server the lab restarts for
/// a cold run would warm itself during the run (measured on MariaDB 10.11:
/// 2305 pages in the pool right after a restart with the page cache
/// dropped, 277 without the dump). Both off, before the spec's options so a
/// spec may turn them on; left to a config file that sets either.
fn cold_buffer_pool_args(config: Option<&Path>) -> Vec<String> {
    let text =
        config.and_then(|f| fs::read_to_string(f).ok()).unwrap_or_default().to_ascii_lowercase().replace('-', "_");
    if text.contains("buffer_pool_load_at_startup") || text.contains("buffer_pool_dump_at_shutdown") {
        return Vec::new();
    }
    vec![
        "--loose-innodb-buffer-pool-load-at-startup=OFF".to_string(),
        "--loose-innodb-buffer-pool-dump-at-shutdown=OFF".to_string(),
    ]
}

impl ManagedServer {
    /// Start on a private unix socket inside `rundir` and a free 127.0.0.1 port; wait (bounded by spec.timeout) until it accepts
    /// connections; error log in rundir (name it after the kind); a port or socket in use is reported (after a few port retries
    /// for the pick-then-bind race), never retried forever; a socket file of a live server in rundir is an error naming it.
    pub fn start(spec: &ServerSpec, datadir: &Path, rundir: &Path) -> anyhow::Result<ManagedServer> {
        Self::start_with_ports(spec, datadir, rundir, &mut pick_port, true)
    }

    /// `start` with the port source as a parameter, so tests can force a
    /// taken port; without `networking` the server listens on its socket
    /// only (initialisation, before the accounts are made safe).
    fn start_with_ports(
        spec: &ServerSpec,
        datadir: &Path,
        rundir: &Path,
        next_port: &mut dyn FnMut() -> anyhow::Result<u16>,
        networking: bool,
    ) -> anyhow::Result<ManagedServer> {
        let options = option_args(spec)?;
        let config = config_file(spec)?;
        let progs = Programs::find(spec)?;
        let account = server_account(spec.kind)?;
        let rundir = run_dir(spec.kind, rundir, account)?;
        let datadir = fs::canonicalize(datadir).with_context(|| format!("datadir {}", datadir.display()))?;
        if !is_initialised(spec.kind, &datadir) {
            bail!(
                "datadir {} is not an initialised {} datadir; initialise it first (dbbench server start does so for a new --dir)",
                datadir.display(),
                spec.kind.label()
            );
        }
        let layout = Layout::new(spec.kind, &rundir);
        layout.check_socket_length(spec.kind)?;
        check_sockets_free(spec.kind, &layout)?;
        if let Some(pid) = find_server_pid(spec.kind, &datadir) {
            bail!(
                "datadir {} is in use by a running {} server (pid {pid}); stop that server first",
                datadir.display(),
                spec.kind.label()
            );
        }
        hand_over(spec.kind, account, &progs, &datadir, config.as_deref())?;
        if spec.kind == ServerKind::Postgresql {
            crate::safe_fs::server_dir(&layout.socket, account, "socket directory").map_err(anyhow::Error::msg)?;
        } else {
            crate::safe_fs::server_dir(&layout.tmpdir, account, "temporary directory").map_err(anyhow::Error::msg)?;
            crate::safe_fs::server_dir(&layout.files, account, "secure_file_priv directory")
                .map_err(anyhow::Error::msg)?;
        }

        let label = spec.kind.label();
        let mut last_port = 0;
        for attempt in 1..=PORT_ATTEMPTS {
            let port = next_port()?;
            last_port = port;
            let pos = file_len(&layout.log);
            let mut cmd = detached_command(&progs.server, &layout.log, account)?;
            if let Some(cpus) = &spec.cpus {
                cpus.apply_to(&mut cmd);
            }
            if spec.kind == ServerKind::Postgresql {
                let sockdir = layout.socket.to_string_lossy().into_owned();
                // The setting is a list: quote a path with separators in it.
                let sockdir = if sockdir.contains([',', ' ']) { format!("\"{sockdir}\"") } else { sockdir };
                cmd.arg("-D").arg(&datadir).args([
                    "-p".to_string(),
                    port.to_string(),
                    "-c".to_string(),
                    format!("listen_addresses={}", if networking { "127.0.0.1" } else { "" }),
                    "-c".to_string(),
                    format!("unix_socket_directories={sockdir}"),
                ]);
            } else {
                cmd.args(mysql_leading_args(spec, config.as_deref()));
                cmd.args([
                    format!("--datadir={}", datadir.display()),
                    format!("--tmpdir={}", layout.tmpdir.display()),
                    format!("--socket={}", layout.socket.display()),
                    format!("--pid-file={}", layout.pid_file.display()),
                    format!("--port={port}"),
                    "--bind-address=127.0.0.1".to_string(),
                    "--skip-name-resolve".to_string(),
                    format!("--log-error={}", layout.log.display()),
                    // A spec may set another (its options come after ours).
                    format!("--secure-file-priv={}", layout.files.display()),
                ]);
                if !networking {
                    cmd.arg("--skip-networking");
                }
                if progs.flavor == Flavor::Mysql {
                    // MySQL 8's X plugin would listen on 33060 and /tmp/mysqlx.sock.
                    cmd.arg("--loose-mysqlx=OFF");
                }
                cmd.args(cold_buffer_pool_args(config.as_deref()));
            }
            cmd.args(&options);
            let child = cmd.spawn().with_context(|| format!("cannot run {}", progs.server.display()))?;
            let mut server = ManagedServer {
                kind: spec.kind,
                pid: child.id(),
                child: Some(child),
                datadir: datadir.clone(),
                rundir: rundir.clone(),
                socket: layout.socket.clone(),
                port,
                log: layout.log.clone(),
                log_start: pos,
                timeout: spec.timeout,
                admin: Mutex::new(None),
            };
            match server.wait_ready(spec.timeout) {
                Ok(()) => {
                    if let Err(e) = server.check_product(&progs.server).and_then(|()| server.check_name_resolution()) {
                        let _ = server.stop();
                        return Err(e);
                    }
                    return Ok(server);
                }
                Err(NotReady::TimedOut(last)) => {
                    server.kill();
                    bail!(
                        "{label} did not accept connections within {} s (last attempt: {last}); killed it (pid {}); log: {}",
                        spec.timeout.as_secs(),
                        server.pid,
                        layout.log.display()
                    );
                }
                Err(NotReady::Exited(status)) => {
                    let text = read_log_from(&layout.log, pos);
                    if is_socket_conflict(&text) {
                        bail!(
                            "{label} could not bind its socket {}: another server holds it ({}); stop that server first, or use another run directory",
                            layout.socket.display(),
                            last_error_line(&text)
                        );
                    }
                    if is_port_conflict(&text) {
                        // Taken between our pick and the server's bind: another port may do.
                        continue;
                    }
                    if text.contains("pre-existing shared memory block") && attempt < PORT_ATTEMPTS {
                        // Backends of a killed postmaster still attach its
                        // shared memory; they exit once they notice.
                        std::thread::sleep(Duration::from_secs(1));
                        continue;
                    }
                    bail!(
                        "{label} exited during startup ({status}): {}; log: {}",
                        last_error_line(&text),
                        layout.log.display()
                    );
                }
            }
        }
        Err(anyhow!(
            "{label} could not bind a TCP port on 127.0.0.1: {PORT_ATTEMPTS} ports in a row were in use (the last {last_port}); free some ports in {PORT_FIRST}-{PORT_LAST} or retry; log: {}",
            layout.log.display()
        ))
    }

    /// Polls until the server accepts an admin connection (kept for later
    /// queries), it exits, or `timeout` passes.
    fn wait_ready(&mut self, timeout: Duration) -> Result<(), NotReady> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(child) = &mut self.child {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(NotReady::Exited(status.to_string()));
                }
            }
            let socket_file = match self.kind {
                ServerKind::Postgresql => self.socket.join(format!(".s.PGSQL.{}", self.port)),
                _ => self.socket.clone(),
            };
            let last = if socket_file.exists() {
                // This connection is kept for later queries, so its read
                // timeout is the spec's bound, not a probe's: a status query
                // under a heavy run may take a while. Until the deadline, though.
                let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
                match self.connect_admin(left.min(self.timeout)) {
                    Ok(c) => {
                        *self.admin.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(c);
                        return Ok(());
                    }
                    Err(e) => format!("{e:#}"),
                }
            } else {
                format!("socket {} not created yet", socket_file.display())
            };
            if Instant::now() >= deadline {
                return Err(NotReady::TimedOut(last));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Graceful stop (SQL SHUTDOWN for MariaDB/MySQL, falling back to
    /// SIGTERM; SIGINT, PostgreSQL's fast shutdown, for the postmaster),
    /// wait bounded by the spec's timeout, then SIGKILL of OUR pid only,
    /// reported as an error (the datadir then needs crash recovery). A server
    /// that is not running is left alone: Ok (see `is_alive` for crashes).
    pub fn stop(&mut self) -> anyhow::Result<()> {
        if !self.is_alive() {
            *self.admin.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
            return Ok(());
        }
        let how = match self.kind {
            ServerKind::Postgresql => {
                *self.admin.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
                signal(self.pid, libc::SIGINT);
                "SIGINT (fast shutdown)"
            }
            _ => {
                let sql = self.shutdown_sql();
                *self.admin.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
                if sql.is_ok() {
                    "SHUTDOWN"
                } else {
                    signal(self.pid, libc::SIGTERM);
                    "SIGTERM"
                }
            }
        };
        if self.wait_gone(self.timeout) {
            return Ok(());
        }
        signal(self.pid, libc::SIGKILL);
        self.wait_gone(KILL_WAIT);
        Err(anyhow!(
            "{} (pid {}) did not stop within {} s after {how}; killed it with SIGKILL, so its next start runs crash recovery; log: {}",
            self.kind.label(),
            self.pid,
            self.timeout.as_secs(),
            self.log.display()
        ))
    }

    /// Sends SHUTDOWN as root. Ok once the server took the command: the
    /// connection usually breaks right after, which is not an error.
    fn shutdown_sql(&mut self) -> anyhow::Result<()> {
        let slot = self.admin.get_mut().unwrap_or_else(|e| e.into_inner());
        let conn = match slot.take() {
            Some(c) => c,
            None => self.connect_admin(PROBE_TIMEOUT)?,
        };
        let AdminConn::My(mut c) = conn else { bail!("not a MariaDB/MySQL connection") };
        use mysql::prelude::Queryable;
        match c.query_drop("SHUTDOWN") {
            Err(mysql::Error::MySqlError(e)) => Err(anyhow!(e.message)),
            _ => Ok(()),
        }
    }

    /// Waits (bounded) until the process is gone; true if it is.
    fn wait_gone(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if !self.is_alive() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Hard kill (SIGKILL) of our pid, used by tests to simulate a crash.
    /// Waits (bounded) until it is gone. PostgreSQL's backends are not
    /// signalled: they exit by themselves when they notice the postmaster died.
    pub fn kill(&mut self) {
        *self.admin.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        if self.is_alive() {
            signal(self.pid, libc::SIGKILL);
            self.wait_gone(KILL_WAIT);
        }
    }

    /// Whether the server process is still alive (not a zombie) — crash
    /// detection. Reaps it if it is our child; otherwise checks /proc, and
    /// that the pid still runs this server (not a reused pid).
    pub fn is_alive(&mut self) -> bool {
        if let Some(child) = &mut self.child {
            if let Ok(r) = child.try_wait() {
                return r.is_none();
            }
        }
        process_matches(self.pid, self.kind, &self.datadir)
    }

    /// Which server program.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The server's pid (PostgreSQL: the postmaster).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// MariaDB/MySQL: the socket file; PostgreSQL: the socket directory.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's error log (in the run directory).
    pub fn error_log(&self) -> &Path {
        &self.log
    }

    /// The datadir, absolute.
    pub fn datadir(&self) -> &Path {
        &self.datadir
    }

    /// What this server wrote to its log since it was started, last `max_lines` lines.
    pub fn session_log(&self, max_lines: usize) -> String {
        self.log_excerpt(self.log_start, max_lines)
    }

    /// Byte length of the error log now, to mark where a run starts.
    pub fn log_position(&self) -> u64 {
        file_len(&self.log)
    }

    /// The log written since `pos`, last `max_lines` lines (for a failed run's excerpt).
    pub fn log_excerpt(&self, pos: u64, max_lines: usize) -> String {
        log_tail(&self.log, pos, max_lines)
    }

    /// dbbench/sysbench command-line options that connect to this server as the benchmark account.
    pub fn driver_args(&self) -> Vec<String> {
        let s = self.socket.display();
        match self.kind {
            ServerKind::Postgresql => vec![
                "--db-driver=pgsql".to_string(),
                format!("--pgsql-host={s}"),
                format!("--pgsql-port={}", self.port),
                format!("--pgsql-user={BENCH_USER}"),
                format!("--pgsql-db={BENCH_DB}"),
            ],
            _ => vec![
                "--db-driver=mysql".to_string(),
                format!("--mysql-socket={s}"),
                format!("--mysql-user={BENCH_USER}"),
                format!("--mysql-db={BENCH_DB}"),
            ],
        }
    }

    /// Environment for shell hooks and external commands: DBBENCH_SERVER_KIND, _SOCKET, _PORT, _PID, _DATADIR, _LOG,
    /// plus MYSQL_UNIX_PORT, or PGHOST, PGPORT, PGUSER=sbtest, PGDATABASE=sbtest.
    pub fn env(&self) -> Vec<(String, String)> {
        let s = self.socket.to_string_lossy().into_owned();
        let mut env = vec![
            ("DBBENCH_SERVER_KIND".to_string(), self.kind.name().to_string()),
            ("DBBENCH_SERVER_SOCKET".to_string(), s.clone()),
            ("DBBENCH_SERVER_PORT".to_string(), self.port.to_string()),
            ("DBBENCH_SERVER_PID".to_string(), self.pid.to_string()),
            ("DBBENCH_SERVER_DATADIR".to_string(), self.datadir.to_string_lossy().into_owned()),
            ("DBBENCH_SERVER_LOG".to_string(), self.log.to_string_lossy().into_owned()),
        ];
        match self.kind {
            ServerKind::Postgresql => {
                env.push(("PGHOST".to_string(), s));
                env.push(("PGPORT".to_string(), self.port.to_string()));
                env.push(("PGUSER".to_string(), BENCH_USER.to_string()));
                env.push(("PGDATABASE".to_string(), BENCH_DB.to_string()));
            }
            _ => env.push(("MYSQL_UNIX_PORT".to_string(), s)),
        }
        env
    }

    /// Connects as the benchmark account and runs SQL, possibly several
    /// statements (used by SQL hooks). MariaDB/MySQL get the whole text as
    /// one multi-statement query, so the server's parser handles BEGIN...END
    /// blocks; PostgreSQL gets one statement at a time (split by
    /// `sqltext::split` under its rules: a multi-statement simple query is one
    /// implicit transaction, in which VACUUM, CREATE DATABASE and friends
    /// fail), so they work. No read
    /// timeout: a hook may legitimately run long.
    pub fn execute_sql(&self, sql: &str) -> anyhow::Result<()> {
        if sql.trim().is_empty() {
            return Ok(());
        }
        let label = self.kind.label();
        match self.kind {
            ServerKind::Postgresql => {
                let mut c = self
                    .pg_config(BENCH_USER, BENCH_DB)
                    .connect(postgres::NoTls)
                    .map_err(|e| anyhow!(pg_err(&e)))
                    .with_context(|| {
                        format!("cannot connect to {label} at {} as {BENCH_USER}", self.socket.display())
                    })?;
                for stmt in sqltext::split(sql, Dialect::PostgreSql, Comments::Keep) {
                    c.batch_execute(&stmt).map_err(|e| {
                        anyhow!(
                            "SQL failed on {label} (port {}): {} in: {}",
                            self.port,
                            pg_err(&e),
                            one_line(&stmt, 120)
                        )
                    })?;
                }
                Ok(())
            }
            _ => {
                use mysql::prelude::Queryable;
                let mut c = mysql::Conn::new(self.mysql_opts(BENCH_USER, Some(BENCH_DB), None))
                    .map_err(|e| anyhow!(my_err(&e)))
                    .with_context(|| {
                        format!("cannot connect to {label} at {} as {BENCH_USER}", self.socket.display())
                    })?;
                c.query_drop(sql).map_err(|e| {
                    anyhow!(
                        "SQL failed on {label} ({}): {} in: {}",
                        self.socket.display(),
                        my_err(&e),
                        one_line(sql, 120)
                    )
                })
            }
        }
    }

    /// Refuses a server that is not the product its kind names (MariaDB's
    /// `mysqld` started as kind `mysql`, a MySQL build as kind `mariadb`),
    /// from what the running server says about itself.
    fn check_product(&self, program: &Path) -> anyhow::Result<()> {
        if !self.kind.is_mysql_family() {
            return Ok(());
        }
        let (_, rows) = self.admin_query("SELECT VERSION(), @@version_comment")?;
        let cell = |i: usize| rows.first().and_then(|r| r.get(i).cloned().flatten()).unwrap_or_default();
        let product = crate::lab::product::mysql_family(&cell(0), &cell(1));
        if self.kind.fits(&product.name) {
            Ok(())
        } else {
            Err(anyhow!(self.kind.mismatch(program, &product)))
        }
    }

    /// `SELECT VERSION()`.
    fn version(&self) -> anyhow::Result<String> {
        let (_, rows) = self.admin_query("SELECT VERSION()")?;
        rows.into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten())
            .ok_or_else(|| anyhow!("{} returned no version", self.kind.label()))
    }

    /// Creates the benchmark account and database, and checks they work.
    ///
    /// `sbtest` logs in without a password over the socket (whose
    /// directory only the server's OS user and root reach) and with
    /// `tcp_password` over TCP, given to the server as a hash so no log
    /// shows it. Without `superuser` it owns database `sbtest` and may read
    /// status (MariaDB/MySQL: PROCESS, RELOAD; PostgreSQL: pg_monitor,
    /// pg_checkpoint) and
    /// nothing more: no FILE, SUPER, GRANT, no server-side programs.
    /// MariaDB's other accounts reachable over TCP (`root@127.0.0.1`,
    /// `root@::1`, `root@<host name>`, all without password) and anonymous
    /// ones are dropped: only `root@localhost`, over the socket, stays.
    fn create_benchmark_account(&self, superuser: bool, tcp_password: &Secret) -> anyhow::Result<()> {
        let statements: Vec<String> = match self.kind {
            ServerKind::Postgresql => {
                let role = if superuser { "SUPERUSER" } else { "NOSUPERUSER" };
                // Separately: CREATE DATABASE cannot run in a multi-statement query.
                let mut v = vec![format!(
                    "CREATE ROLE {BENCH_USER} {role} LOGIN PASSWORD '{}'",
                    scram_sha256_verifier(tcp_password.expose())
                )];
                if !superuser {
                    v.push(format!("GRANT pg_monitor TO {BENCH_USER}"));
                    // CHECKPOINT in hooks (PostgreSQL 15 made it grantable).
                    v.push(format!(
                        "DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pg_checkpoint') THEN GRANT pg_checkpoint TO {BENCH_USER}; END IF; END $$"
                    ));
                }
                v.push(format!("CREATE DATABASE {BENCH_DB} OWNER {BENCH_USER}"));
                v
            }
            _ => {
                let mut v = Vec::new();
                // Every account but the local (socket) ones, and anonymous
                // accounts, which would let unknown user names in.
                let (_, rows) =
                    self.admin_query("SELECT User, Host FROM mysql.user WHERE Host <> 'localhost' OR User = ''")?;
                let quote = |s: &str| s.replace('\\', "\\\\").replace('\'', "''");
                for r in rows {
                    let (Some(Some(user)), Some(Some(host))) = (r.first(), r.get(1)) else { continue };
                    v.push(format!("DROP USER '{}'@'{}'", quote(user), quote(host)));
                }
                v.push(format!("CREATE DATABASE IF NOT EXISTS {BENCH_DB}"));
                let hash = mysql_native_hash(tcp_password.expose());
                v.push(format!("CREATE USER IF NOT EXISTS '{BENCH_USER}'@'localhost'"));
                v.push(format!(
                    "CREATE USER IF NOT EXISTS '{BENCH_USER}'@'127.0.0.1' IDENTIFIED WITH mysql_native_password AS '{hash}'"
                ));
                for host in ["localhost", "127.0.0.1"] {
                    if superuser {
                        v.push(format!("GRANT ALL PRIVILEGES ON *.* TO '{BENCH_USER}'@'{host}' WITH GRANT OPTION"));
                    } else {
                        v.push(format!("GRANT ALL PRIVILEGES ON `{BENCH_DB}`.* TO '{BENCH_USER}'@'{host}'"));
                        v.push(format!("GRANT PROCESS, RELOAD ON *.* TO '{BENCH_USER}'@'{host}'"));
                    }
                }
                v
            }
        };
        for s in &statements {
            // Redacted as text: the statement may hold a password hash.
            self.admin_query(s).map_err(|e| {
                anyhow!("creating the benchmark account failed: {}", crate::secret::redact(&format!("{e:#}")))
            })?;
        }
        self.execute_sql("SELECT 1").context("the new benchmark account does not work")
    }

    /// A MariaDB/MySQL server must not resolve host names: its password-less
    /// `localhost` accounts would then admit TCP clients whose address
    /// resolves to localhost. Checked after every start, since a spec's
    /// options or config file could turn it back on.
    fn check_name_resolution(&self) -> anyhow::Result<()> {
        if !self.kind.is_mysql_family() {
            return Ok(());
        }
        let (_, rows) = self.admin_query("SELECT @@skip_name_resolve")?;
        match rows.first().and_then(|r| r.first()).cloned().flatten().as_deref() {
            Some("1") | Some("ON") => Ok(()),
            other => Err(anyhow!(
                "{} runs with skip_name_resolve = {} (the spec's options or config file turned it off): its password-less socket accounts would then admit TCP clients whose address resolves to localhost; remove that setting",
                self.kind.label(),
                other.unwrap_or("?")
            )),
        }
    }

    /// Runs a query on the kept admin connection, connecting if needed. A
    /// kept connection that broke (server restarted, session killed) is
    /// replaced once.
    fn admin_query(&self, sql: &str) -> anyhow::Result<Rows> {
        let mut slot = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let label = self.kind.label();
        let reused = slot.is_some();
        if slot.is_none() {
            *slot = Some(self.connect_admin(self.timeout)?);
        }
        let first = run_admin_query(slot.as_mut().expect("connected above"), sql);
        let err = match first {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        if err.server || !reused {
            if !err.server {
                *slot = None;
            }
            bail!("{label} query failed: {} in: {}", err.msg, one_line(sql, 120));
        }
        *slot = None;
        let mut conn = self.connect_admin(self.timeout)?;
        let r = run_admin_query(&mut conn, sql)
            .map_err(|e| anyhow!("{label} query failed: {} in: {}", e.msg, one_line(sql, 120)))?;
        *slot = Some(conn);
        Ok(r)
    }

    /// An admin connection over the socket: MariaDB/MySQL root, PostgreSQL postgres.
    fn connect_admin(&self, timeout: Duration) -> anyhow::Result<AdminConn> {
        let label = self.kind.label();
        match self.kind {
            ServerKind::Postgresql => {
                let mut cfg = self.pg_config("postgres", "postgres");
                cfg.connect_timeout(timeout);
                cfg.connect(postgres::NoTls)
                    .map(|c| AdminConn::Pg(Box::new(c)))
                    .map_err(|e| anyhow!(pg_err(&e)))
                    .with_context(|| {
                        format!("cannot connect to {label} at {} port {} as postgres", self.socket.display(), self.port)
                    })
            }
            _ => mysql::Conn::new(self.mysql_opts("root", None, Some(timeout)))
                .map(AdminConn::My)
                .map_err(|e| anyhow!(my_err(&e)))
                .with_context(|| format!("cannot connect to {label} at {} as root", self.socket.display())),
        }
    }

    fn mysql_opts(&self, user: &str, db: Option<&str>, timeout: Option<Duration>) -> mysql::OptsBuilder {
        mysql::OptsBuilder::new()
            .socket(Some(self.socket.to_string_lossy()))
            .user(Some(user))
            .db_name(db)
            .read_timeout(timeout)
            .write_timeout(timeout)
    }

    fn pg_config(&self, user: &str, db: &str) -> postgres::Config {
        let mut cfg = postgres::Config::new();
        cfg.host_path(&self.socket).port(self.port).user(user).dbname(db).application_name("dbbench-lab");
        cfg.connect_timeout(self.timeout);
        cfg
    }

    /// What `dbbench server` persists to find this server again.
    fn state(&self) -> ServerState {
        ServerState {
            kind: self.kind,
            pid: self.pid,
            socket: self.socket.clone(),
            port: self.port,
            datadir: self.datadir.clone(),
            rundir: self.rundir.clone(),
            log: self.log.clone(),
            timeout_secs: self.timeout.as_secs(),
            stopped: false,
        }
    }

    /// A server started by an earlier process, from its persisted state.
    fn attach(state: &ServerState) -> ManagedServer {
        ManagedServer {
            kind: state.kind,
            pid: state.pid,
            child: None,
            datadir: state.datadir.clone(),
            rundir: state.rundir.clone(),
            socket: state.socket.clone(),
            port: state.port,
            log: state.log.clone(),
            log_start: 0,
            timeout: Duration::from_secs(state.timeout_secs.max(1)),
            admin: Mutex::new(None),
        }
    }
}

/// Refuses to start where a live server holds the socket (naming it), and
/// removes stale socket files a killed server left behind.
fn check_sockets_free(kind: ServerKind, layout: &Layout) -> anyhow::Result<()> {
    let candidates: Vec<PathBuf> = match kind {
        ServerKind::Postgresql => fs::read_dir(&layout.socket)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with(".s.PGSQL.") && !n.ends_with(".lock")
                })
            })
            .collect(),
        _ => vec![layout.socket.clone()],
    };
    for sock in candidates {
        let meta = match fs::symlink_metadata(&sock) {
            Ok(m) => m,
            Err(_) => continue,
        };
        if !meta.file_type().is_socket() {
            bail!("{} exists and is not a socket; remove it or use another run directory", sock.display());
        }
        match std::os::unix::net::UnixStream::connect(&sock) {
            Ok(_) => {
                let lock = match kind {
                    ServerKind::Postgresql => PathBuf::from(format!("{}.lock", sock.display())),
                    _ => layout.pid_file.clone(),
                };
                let pid = fs::read_to_string(&lock)
                    .ok()
                    .and_then(|s| s.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
                    .map(|p| format!(" (pid {p})"))
                    .unwrap_or_default();
                bail!(
                    "socket {} is in use by a running server{pid}; stop that server first, or use another run directory",
                    sock.display()
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                // Nobody listens: left by a killed server.
                let _ = fs::remove_file(&sock);
                if kind == ServerKind::Postgresql {
                    let _ = fs::remove_file(format!("{}.lock", sock.display()));
                }
            }
            Err(e) => return Err(e).with_context(|| format!("cannot check socket {}", sock.display())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// Whether a kind's binaries are here; without them a test is skipped,
    /// except under CI=true, where that is a failure.
    pub(super) fn have(kind: ServerKind) -> bool {
        match Programs::find(&ServerSpec::new(kind)) {
            Ok(_) => true,
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("CI=true but {e:#}"),
            Err(e) => {
                eprintln!("skipped: {e:#}");
                false
            }
        }
    }

    pub(super) fn spec(kind: ServerKind) -> ServerSpec {
        ServerSpec { timeout: Duration::from_secs(60), ..ServerSpec::new(kind) }
    }

    #[test]
    fn the_buffer_pool_dump_is_off_unless_a_config_file_sets_it() {
        let off = cold_buffer_pool_args(None);
        assert!(off.iter().any(|a| a == "--loose-innodb-buffer-pool-load-at-startup=OFF"), "{off:?}");
        let dir = crate::safe_fs::TestDir::new("cold-pool");
        let cnf = dir.join("my.cnf");
        fs::write(&cnf, "[mysqld]\nkey_buffer_size = 64M\n").unwrap();
        assert_eq!(cold_buffer_pool_args(Some(&cnf)), off);
        for line in ["innodb-buffer-pool-load-at-startup = ON", "INNODB_BUFFER_POOL_DUMP_AT_SHUTDOWN=1"] {
            fs::write(&cnf, format!("[mysqld]\n{line}\n")).unwrap();
            assert!(cold_buffer_pool_args(Some(&cnf)).is_empty(), "{line}");
        }
    }

    /// A short temporary directory (a fresh name, made by one mkdir, 0711
    /// as root so that servers under their own accounts reach their
    /// directories inside); kills every server handed to it and removes the
    /// directory when the test ends, also on a failed assertion.
    pub(super) struct Fixture {
        pub(super) dir: PathBuf,
        servers: Vec<ManagedServer>,
    }

    impl Fixture {
        pub(super) fn new(tag: &str) -> Fixture {
            let mode = crate::safe_fs::lab_dir_mode();
            let dir = crate::safe_fs::unique_dir(Path::new("/tmp"), &format!("dbb-{tag}-"), mode).unwrap();
            Fixture { dir, servers: Vec::new() }
        }

        fn keep(&mut self, s: ManagedServer) -> &mut ManagedServer {
            self.servers.push(s);
            self.servers.last_mut().unwrap()
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            for s in &mut self.servers {
                s.kill();
            }
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    fn secs(t: Instant) -> f64 {
        t.elapsed().as_secs_f64()
    }

    /// The benchmark account's TCP password in these tests.
    pub(super) fn password() -> Secret {
        Secret::new("unit-test-TCP-password-4242")
    }

    /// A connection over TCP to 127.0.0.1 as `user`, with `password` or none.
    fn tcp_login(s: &ManagedServer, user: &str, password: Option<&str>) -> anyhow::Result<()> {
        let d = if s.kind.is_mysql_family() { "mysql" } else { "pgsql" };
        let mut args = vec![
            format!("--db-driver={d}"),
            format!("--{d}-host=127.0.0.1"),
            format!("--{d}-port={}", s.port()),
            format!("--{d}-user={user}"),
            format!("--{d}-db={}", if d == "mysql" { "" } else { "postgres" }),
        ];
        if let Some(p) = password {
            args.push(format!("--{d}-password={p}"));
        }
        crate::lab::sql::connect(&args).map(drop)
    }

    /// What another local user could do with a managed server: nothing
    /// without the TCP password; the run directory is the server
    /// account's alone; the benchmark account cannot touch server files or
    /// run programs.
    fn check_private(s: &ManagedServer, run: &Path) {
        let meta = fs::metadata(run).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700, "run directory mode");
        if is_root() {
            assert_eq!(meta.uid(), lookup_user(account_name(s.kind)).unwrap().0, "run directory owner");
            let status = fs::read_to_string(format!("/proc/{}/status", s.pid())).unwrap();
            let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap().to_string();
            assert!(!uid.split_whitespace().skip(1).any(|u| u == "0"), "the server runs as root: {uid}");
        }
        let pw = password();
        tcp_login(s, BENCH_USER, Some(pw.expose())).unwrap();
        let e = format!("{:#}", tcp_login(s, BENCH_USER, None).unwrap_err());
        assert!(!e.contains(pw.expose()));
        let admin = if s.kind.is_mysql_family() { "root" } else { "postgres" };
        assert!(tcp_login(s, admin, None).is_err(), "{admin} over TCP without a password");
        assert!(tcp_login(s, admin, Some(pw.expose())).is_err(), "{admin} over TCP");
        let (attack, why) = if s.kind.is_mysql_family() {
            ("SELECT 'x' INTO OUTFILE '/tmp/dbbench-unit-outfile'", "Access denied")
        } else {
            ("COPY (SELECT 1) TO PROGRAM 'touch /tmp/dbbench-unit-program'", "pg_execute_server_program")
        };
        let e = format!("{:#}", s.execute_sql(attack).unwrap_err());
        assert!(e.contains(why), "{e}");
        assert!(!Path::new("/tmp/dbbench-unit-outfile").exists() && !Path::new("/tmp/dbbench-unit-program").exists());
    }

    /// initialise, start, SQL, variables, status, stop; prints the times.
    fn lifecycle(kind: ServerKind) {
        if !have(kind) {
            return;
        }
        let mut fx = Fixture::new(&format!("{}-life", kind.name()));
        let (data, run) = (fx.dir.join("data"), fx.dir.join("run"));
        let spec = spec(kind);
        let t = Instant::now();
        initialize(&spec, &data, &run, &password()).unwrap();
        let t_init = secs(t);
        let t = Instant::now();
        let s = fx.keep(ManagedServer::start(&spec, &data, &run).unwrap());
        let t_start = secs(t);
        assert!(s.is_alive());
        assert!((PORT_FIRST..=PORT_LAST).contains(&s.port()));
        assert!(s.error_log().starts_with(fs::canonicalize(&run).unwrap()));
        assert!(s.error_log().file_name().unwrap().to_string_lossy().starts_with(kind.name()));

        let pos = s.log_position();
        s.execute_sql("CREATE TABLE t1 (a INT); INSERT INTO t1 VALUES (1), (2);\nINSERT INTO t1 VALUES (3)").unwrap();
        let e = format!("{:#}", s.execute_sql("SELEC 1").unwrap_err());
        assert!(e.contains("SELEC 1") && !e.contains('\n'), "{e}");
        check_private(s, &run);

        // Variables and status go through the lab's own SQL path.
        let mut conn = crate::lab::sql::connect(&s.driver_args()).unwrap();
        let version = conn.version();
        let vars = conn.variables().unwrap();
        let status = conn.status().unwrap();
        let get = |v: &serde_json::Map<String, serde_json::Value>, k: &str| {
            v.get(k).and_then(|x| x.as_str()).map(str::to_string)
        };
        match kind {
            ServerKind::Postgresql => {
                assert!(version.starts_with(|c: char| c.is_ascii_digit()), "{version}");
                assert_eq!(get(&vars, "port"), Some(s.port().to_string()));
                assert_eq!(get(&status, "db.datname").as_deref(), Some("sbtest"));
                assert!(get(&status, "db.xact_commit").is_some(), "{status:?}");
                assert!(get(&status, "bgwriter.buffers_clean").is_some(), "{status:?}");
                s.execute_sql("DO $$ BEGIN PERFORM 1; PERFORM 2; END $$; VACUUM t1; CHECKPOINT").unwrap();
                let mut c = s.pg_config(BENCH_USER, BENCH_DB).connect(postgres::NoTls).unwrap();
                let n: i64 = c.query_one("SELECT count(*) FROM t1", &[]).unwrap().get(0);
                assert_eq!(n, 3);
                assert_eq!(s.driver_args()[0], "--db-driver=pgsql");
                assert!(s.env().contains(&("PGUSER".to_string(), "sbtest".to_string())));
            }
            _ => {
                assert!(version.contains("MariaDB"), "{version}");
                assert_eq!(get(&vars, "port"), Some(s.port().to_string()));
                assert_eq!(get(&vars, "socket"), Some(s.socket().display().to_string()));
                // A private tmpdir: concurrent servers and bootstraps in a shared
                // /tmp clashed on temporary table files.
                assert_eq!(
                    get(&vars, "tmpdir"),
                    Some(fs::canonicalize(&run).unwrap().join("tmp").display().to_string())
                );
                assert!(get(&status, "Uptime").is_some() && get(&status, "Questions").is_some());
                assert_eq!(s.admin_query("SELECT count(*) FROM sbtest.t1").unwrap().1[0][0].as_deref(), Some("3"));
                assert_eq!(
                    s.driver_args(),
                    vec![
                        "--db-driver=mysql".to_string(),
                        format!("--mysql-socket={}", s.socket().display()),
                        "--mysql-user=sbtest".to_string(),
                        "--mysql-db=sbtest".to_string()
                    ]
                );
                assert!(s.env().contains(&("MYSQL_UNIX_PORT".to_string(), s.socket().display().to_string())));
                // No anonymous accounts left.
                assert!(s.admin_query("SELECT Host FROM mysql.user WHERE User = ''").unwrap().1.is_empty());
            }
        }
        assert!(vars.len() > 100, "{}", vars.len());
        let _ = s.log_excerpt(pos, 10);

        let t = Instant::now();
        s.stop().unwrap();
        let t_stop = secs(t);
        assert!(!s.is_alive());
        if kind.is_mysql_family() {
            assert!(!s.socket().exists(), "a clean shutdown removes the socket");
        }
        eprintln!("TIMING {}: initialize {t_init:.2} s, start {t_start:.2} s, stop {t_stop:.2} s", kind.label());
        let t = Instant::now();
        let s2 = fx.keep(ManagedServer::start(&spec, &data, &run).unwrap());
        let t_restart = secs(t);
        let t = Instant::now();
        s2.stop().unwrap();
        eprintln!("TIMING {}: restart {t_restart:.2} s, stop {:.2} s", kind.label(), secs(t));
    }

    /// A second start on a busy run directory, a taken port, a crash, a
    /// restart after the crash.
    fn conflicts_and_crash(kind: ServerKind) {
        if !have(kind) {
            return;
        }
        let mut fx = Fixture::new(&format!("{}-crash", kind.name()));
        let (data, run) = (fx.dir.join("data"), fx.dir.join("run"));
        let spec = spec(kind);
        initialize(&spec, &data, &run, &password()).unwrap();

        // A taken port: retried with another one, and reported once all are taken.
        let busy = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let busy_port = busy.local_addr().unwrap().port();
        let e = format!(
            "{:#}",
            ManagedServer::start_with_ports(&spec, &data, &run, &mut || Ok(busy_port), true).err().unwrap()
        );
        assert!(e.contains("could not bind a TCP port") && e.contains(&busy_port.to_string()), "{e}");
        let mut ports = vec![busy_port];
        let mut next = || Ok(ports.pop().unwrap_or_else(|| pick_port().unwrap()));
        let s = fx.keep(ManagedServer::start_with_ports(&spec, &data, &run, &mut next, true).unwrap());
        assert_ne!(s.port(), busy_port);
        drop(busy);

        // Same run directory (and datadir) while the first runs: the socket is named.
        let first_socket = s.socket().to_path_buf();
        let e = match ManagedServer::start(&spec, &data, &run) {
            Ok(other) => {
                fx.keep(other);
                panic!("a second server started on a busy run directory");
            }
            Err(e) => format!("{e:#}"),
        };
        assert!(e.contains("socket") && e.contains(&first_socket.display().to_string()), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let s = fx.servers.last_mut().unwrap();
        assert!(s.is_alive());

        // Crash.
        let pos = s.log_position();
        s.kill();
        assert!(!s.is_alive());
        assert!(crate::lab::sql::connect(&s.driver_args()).is_err());
        let _ = s.log_excerpt(pos, 20);
        assert!(!s.log_excerpt(0, 20).is_empty());
        assert!(s.stop().is_ok(), "stopping a dead server is a no-op");

        // Restart after the crash: stale socket files are cleared, recovery runs.
        let s = fx.keep(ManagedServer::start(&spec, &data, &run).unwrap());
        s.execute_sql("SELECT 1").unwrap();
        s.stop().unwrap();
    }

    #[test]
    fn a_server_can_be_shared_between_threads() {
        // The lab samples status from another thread while a run goes on.
        fn send_sync<T: Send + Sync>() {}
        send_sync::<ManagedServer>();
    }

    /// Kind `mysql` where `mysqld` is MariaDB's (Debian): refused before
    /// anything is initialised, with the line saying how to point basedir
    /// at MySQL. Behind that, the started server's own answer decides: a
    /// "MySQL build" whose `mysqld` says MySQL in `--version` but starts
    /// MariaDB (a wrapper here) is stopped and refused after its start.
    #[test]
    fn mysql_kind_on_mariadb_binaries_is_refused() {
        if !have(ServerKind::Mariadb) {
            return;
        }
        match Programs::find(&ServerSpec::new(ServerKind::Mysql)).map_err(|e| format!("{e:#}")) {
            Ok(p) => eprintln!("{} is Oracle MySQL: the refusal before start is not exercised", p.server.display()),
            Err(e) if e.contains("not found") => eprintln!("no mysqld: {e}"),
            Err(e) => {
                assert!(
                    e.starts_with("kind \"mysql\" but ") && e.contains(" is MariaDB ") && e.contains("basedir"),
                    "{e}"
                );
                assert_eq!(check(&ServerSpec::new(ServerKind::Mysql)).map_err(|e| format!("{e:#}")), Err(e));
            }
        }
        let mut fx = Fixture::new("my");
        let (data, run) = (fx.dir.join("data"), fx.dir.join("run"));
        initialize(&spec(ServerKind::Mariadb), &data, &run, &password()).unwrap();
        let mariadbd = Programs::find(&spec(ServerKind::Mariadb)).unwrap().server;
        let bin = fx.dir.join("mysql-build/bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(
            bin.join("mysqld"),
            format!(
                "#!/bin/sh\nfor a; do [ \"$a\" = --version ] && {{ echo 'mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)'; exit 0; }}; done\n\
                 for a; do shift; case \"$a\" in --basedir=*) ;; *) set -- \"$@\" \"$a\" ;; esac; done\nexec {} \"$@\"\n",
                mariadbd.display()
            ),
        )
        .unwrap();
        fs::set_permissions(bin.join("mysqld"), fs::Permissions::from_mode(0o755)).unwrap();
        let s = ServerSpec { basedir: Some(fx.dir.join("mysql-build")), ..spec(ServerKind::Mysql) };
        check(&s).expect("the wrapper's --version says MySQL");
        let e = format!("{:#}", ManagedServer::start(&s, &data, &run).err().expect("MariaDB refused as kind mysql"));
        assert!(e.starts_with("kind \"mysql\" but ") && e.contains("mysql-build/bin/mysqld is MariaDB 1"), "{e}");
        assert!(find_server_pid(ServerKind::Mysql, &fs::canonicalize(&data).unwrap()).is_none(), "stopped");
        // The same datadir as kind mariadb starts.
        fx.keep(ManagedServer::start(&spec(ServerKind::Mariadb), &data, &run).unwrap()).stop().unwrap();
    }

    #[test]
    fn mariadb_lifecycle() {
        lifecycle(ServerKind::Mariadb);
    }

    #[test]
    fn postgresql_lifecycle() {
        lifecycle(ServerKind::Postgresql);
    }

    #[test]
    fn mariadb_conflicts_and_crash() {
        conflicts_and_crash(ServerKind::Mariadb);
    }

    #[test]
    fn postgresql_conflicts_and_crash() {
        conflicts_and_crash(ServerKind::Postgresql);
    }
}
