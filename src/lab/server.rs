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

use crate::exit::Exit;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::secret::Secret;

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
        }
    }
}

// ------------------------------------------------------------------ programs

/// What a found server binary actually is: kind `mysql` may find MariaDB's `mysqld`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    Mariadb,
    Mysql,
    Postgresql,
}

/// The programs a spec needs, resolved to paths.
#[derive(Debug)]
struct Programs {
    /// `mariadbd`, `mysqld` or `postgres`.
    server: PathBuf,
    /// `mariadb-install-db`, `mysqld` (with `--initialize-insecure`) or `initdb`.
    init: PathBuf,
    flavor: Flavor,
}

impl Programs {
    fn find(spec: &ServerSpec) -> Result<Programs, String> {
        if let Some(b) = &spec.basedir {
            if !b.is_dir() {
                return Err(format!(
                    "basedir {} is not a directory; set basedir to an unpacked tarball or build tree",
                    b.display()
                ));
            }
        }
        match spec.kind {
            ServerKind::Mariadb => {
                let server = find_server_program(spec, &["mariadbd", "mysqld"], "apt-get install -y mariadb-server")?;
                Ok(Programs { server, init: find_mariadb_install_db(spec)?, flavor: Flavor::Mariadb })
            }
            ServerKind::Mysql => {
                let server = find_server_program(
                    spec,
                    &["mysqld"],
                    "the MySQL Server package from dev.mysql.com (Debian's mysqld is MariaDB's)",
                )?;
                // Refused here, before anything is initialised; the started
                // server's own answer is checked again (`check_product`).
                if let Some(p) = mariadb_binary(&server) {
                    return Err(crate::lab::product::mismatch(spec.kind, &server, &p));
                }
                Ok(Programs { init: server.clone(), server, flavor: Flavor::Mysql })
            }
            ServerKind::Postgresql => find_postgresql(spec),
        }
    }
}

/// Directories of PATH.
fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default()
}

/// PATH plus the sbin directories, which a normal user's PATH lacks on Debian.
fn installed_dirs() -> Vec<PathBuf> {
    let mut dirs = path_dirs();
    for d in ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"] {
        if !dirs.iter().any(|x| x == Path::new(d)) {
            dirs.push(PathBuf::from(d));
        }
    }
    dirs
}

fn is_executable(p: &Path) -> bool {
    fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// First `dir/name` that is executable; earlier names win over later ones.
fn find_exe(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    names.iter().flat_map(|n| dirs.iter().map(move |d| d.join(n))).find(|p| is_executable(p))
}

fn find_server_program(spec: &ServerSpec, names: &[&str], install_hint: &str) -> Result<PathBuf, String> {
    match &spec.basedir {
        Some(b) => {
            let dirs = [b.join("bin"), b.join("sbin"), b.join("libexec")];
            find_exe(&dirs, names).ok_or_else(|| {
                format!(
                    "{} not found in {}/bin, sbin or libexec; basedir must be an unpacked {} tarball or build tree",
                    names[0],
                    b.display(),
                    spec.kind.label()
                )
            })
        }
        None => find_exe(&installed_dirs(), names).ok_or_else(|| {
            format!("{} not found in PATH or /usr/sbin; install it with: {install_hint}, or set basedir", names[0])
        }),
    }
}

fn find_mariadb_install_db(spec: &ServerSpec) -> Result<PathBuf, String> {
    let names = ["mariadb-install-db", "mysql_install_db"];
    match &spec.basedir {
        Some(b) => find_exe(&[b.join("scripts"), b.join("bin")], &names).ok_or_else(|| {
            format!("mariadb-install-db (or mysql_install_db) not found in {}/scripts or bin; basedir must be an unpacked MariaDB tarball or build tree", b.display())
        }),
        None => find_exe(&installed_dirs(), &names).ok_or_else(|| {
            "mariadb-install-db not found in PATH or /usr/bin; install it with: apt-get install -y mariadb-server, or set basedir"
                .to_string()
        }),
    }
}

/// The arguments a MariaDB/MySQL server or installer takes first:
/// `--defaults-file`/`--no-defaults` (which must lead) and `--basedir`. No
/// `--user`: the process is started as the server's OS user already
/// (`server_account`), never as root.
fn mysql_leading_args(spec: &ServerSpec, config: Option<&Path>) -> Vec<String> {
    let mut args = vec![match config {
        Some(f) => format!("--defaults-file={}", f.display()),
        None => "--no-defaults".to_string(),
    }];
    if let Some(b) = &spec.basedir {
        args.push(format!("--basedir={}", fs::canonicalize(b).unwrap_or_else(|_| b.clone()).display()));
    }
    args
}

/// The MariaDB product behind a `mysqld` that is MariaDB's (a symlink to
/// `mariadbd`, or an older MariaDB's own `mysqld`), from its `--version` line.
fn mariadb_binary(server: &Path) -> Option<crate::lab::product::Product> {
    let line = Command::new(server)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let named = fs::canonicalize(server)
        .is_ok_and(|real| real.file_name().is_some_and(|n| n.to_string_lossy().contains("mariadb")));
    match crate::lab::product::from_version_line(&line) {
        Some(p) if p.name == "MariaDB" => Some(p),
        Some(p) if named => Some(crate::lab::product::Product { name: "MariaDB".into(), version: p.version }),
        None if named => {
            Some(crate::lab::product::Product { name: "MariaDB".into(), version: "(version unknown)".into() })
        }
        _ => None,
    }
}

/// `postgres` and `initdb` from one directory: basedir/bin, else PATH, else
/// the newest /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH).
fn find_postgresql(spec: &ServerSpec) -> Result<Programs, String> {
    let both = |d: &Path| is_executable(&d.join("postgres")) && is_executable(&d.join("initdb"));
    let dir = match &spec.basedir {
        Some(b) => {
            let d = b.join("bin");
            if !both(&d) {
                return Err(format!(
                    "postgres and initdb not found in {}; basedir must hold a PostgreSQL installation (bin/postgres, bin/initdb)",
                    d.display()
                ));
            }
            d
        }
        None => {
            let mut dirs = path_dirs();
            let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let key: Option<Vec<u32>> = name.split('.').map(|p| p.parse().ok()).collect();
                    key.map(|k| (k, e.path().join("bin")))
                })
                .collect();
            versions.sort();
            dirs.extend(versions.into_iter().rev().map(|(_, d)| d));
            dirs.into_iter().find(|d| both(d)).ok_or_else(|| {
                "PostgreSQL server programs (postgres, initdb) not found in PATH or /usr/lib/postgresql/*/bin; install them with: apt-get install -y postgresql, or set basedir".to_string()
            })?
        }
    };
    Ok(Programs { server: dir.join("postgres"), init: dir.join("initdb"), flavor: Flavor::Postgresql })
}

// ------------------------------------------------------------------ layout and options

/// Files of a server inside its run directory, named after the kind.
struct Layout {
    /// MariaDB/MySQL: the socket file; PostgreSQL: the socket directory.
    socket: PathBuf,
    /// MariaDB/MySQL pid file (PostgreSQL keeps `postmaster.pid` in the datadir).
    pid_file: PathBuf,
    /// The server's error log.
    log: PathBuf,
    /// Output of the datadir initialisation.
    init_log: PathBuf,
    /// MariaDB/MySQL `secure_file_priv`.
    files: PathBuf,
    /// MariaDB/MySQL `--tmpdir`, private to this run directory: bootstraps
    /// and servers sharing the default /tmp clash on their temporary tables'
    /// file names (concurrent `mariadb-install-db` runs failed with "Unknown
    /// table 'mysql.tmp_proxies_priv'").
    tmpdir: PathBuf,
}

impl Layout {
    fn new(kind: ServerKind, rundir: &Path) -> Layout {
        let n = kind.name();
        match kind {
            ServerKind::Postgresql => Layout {
                socket: rundir.join(PG_SOCKET_DIR),
                pid_file: PathBuf::new(),
                log: rundir.join("postgresql.log"),
                init_log: rundir.join("postgresql-init.log"),
                files: PathBuf::new(),
                tmpdir: PathBuf::new(),
            },
            _ => Layout {
                socket: rundir.join(format!("{n}.sock")),
                pid_file: rundir.join(format!("{n}.pid")),
                log: rundir.join(format!("{n}.err")),
                init_log: rundir.join(format!("{n}-init.log")),
                files: rundir.join(FILES_DIR),
                tmpdir: rundir.join("tmp"),
            },
        }
    }

    /// Checks the longest socket path the server will bind fits `sun_path`.
    fn check_socket_length(&self, kind: ServerKind) -> Result<(), String> {
        let longest = match kind {
            ServerKind::Postgresql => self.socket.join(".s.PGSQL.65535"),
            _ => self.socket.clone(),
        };
        let len = longest.as_os_str().len();
        if len >= MAX_SOCKET_PATH {
            return Err(format!(
                "socket path {} is {len} bytes, over the ~{MAX_SOCKET_PATH}-byte limit of unix socket paths; use a shorter run directory",
                longest.display()
            ));
        }
        Ok(())
    }
}

/// Whether every kind's longest socket path in run directory `rundir` fits
/// a unix socket address.
pub fn run_dir_fits(rundir: &Path) -> bool {
    [ServerKind::Mariadb, ServerKind::Mysql, ServerKind::Postgresql]
        .into_iter()
        .all(|k| Layout::new(k, rundir).check_socket_length(k).is_ok())
}

/// MariaDB/MySQL options dbbench sets itself; a spec overriding them would
/// make the server unreachable or unmanageable.
const MYSQL_MANAGED_OPTIONS: &[&str] = &[
    "datadir",
    "socket",
    "port",
    "pid-file",
    "log-error",
    "user",
    "skip-name-resolve",
    "basedir",
    "no-defaults",
    "defaults-file",
    "defaults-extra-file",
];

/// PostgreSQL settings dbbench sets itself (see `MYSQL_MANAGED_OPTIONS`).
const PG_MANAGED_SETTINGS: &[&str] =
    &["port", "unix_socket_directories", "data_directory", "config_file", "hba_file", "ident_file"];

/// The spec's MariaDB/MySQL options as command-line arguments, each with its "--".
fn mysql_option_args(options: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for o in options.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
        let arg = if o.starts_with('-') { o.to_string() } else { format!("--{o}") };
        let name = arg.trim_start_matches('-').split('=').next().unwrap_or("").replace('_', "-");
        let name = name.strip_prefix("loose-").unwrap_or(&name);
        if MYSQL_MANAGED_OPTIONS.contains(&name) {
            return Err(format!(
                "server option {arg} is managed by dbbench (private datadir, socket and port); remove it from the options"
            ));
        }
        out.push(arg);
    }
    Ok(out)
}

/// The spec's PostgreSQL settings as `-c name=value` argument pairs.
fn pg_option_args(options: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for o in options.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
        let setting = o.trim_start_matches('-');
        let Some((name, _)) = setting.split_once('=') else {
            return Err(format!("PostgreSQL server option '{o}' is not name=value (e.g. shared_buffers=1GB)"));
        };
        let name = name.trim().to_ascii_lowercase().replace('-', "_");
        if PG_MANAGED_SETTINGS.contains(&name.as_str()) {
            return Err(format!(
                "server option {o} is managed by dbbench (private datadir, socket and port); remove it from the options"
            ));
        }
        out.push("-c".to_string());
        out.push(setting.to_string());
    }
    Ok(out)
}

/// The spec's options as arguments for its kind (validates them).
fn option_args(spec: &ServerSpec) -> Result<Vec<String>, String> {
    if spec.kind.is_mysql_family() {
        mysql_option_args(&spec.options)
    } else {
        pg_option_args(&spec.options)
    }
}

/// The spec's config file as an absolute path (servers run with cwd `/`).
fn config_file(spec: &ServerSpec) -> Result<Option<PathBuf>, String> {
    match &spec.config_file {
        None => Ok(None),
        Some(f) => fs::canonicalize(f)
            .map(Some)
            .map_err(|e| format!("config file {}: {e}; give an existing file", f.display())),
    }
}

/// Creates a directory if needed and returns its absolute, symlink-free
/// path (pids are matched against command lines by path).
fn make_dir(dir: &Path, what: &str) -> Result<PathBuf, String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {what} {}: {e}", dir.display()))?;
    fs::canonicalize(dir).map_err(|e| format!("cannot resolve {what} {}: {e}", dir.display()))
}

/// Whether a datadir has been initialised for this kind.
fn is_initialised(kind: ServerKind, datadir: &Path) -> bool {
    match kind {
        ServerKind::Postgresql => datadir.join("PG_VERSION").is_file(),
        _ => datadir.join("mysql").is_dir(),
    }
}

fn is_empty_dir(dir: &Path) -> bool {
    fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false)
}

// ------------------------------------------------------------------ processes

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `pid` is a live (not zombie) process whose command line shows it
/// runs `kind` on `datadir`: MariaDB/MySQL `--datadir=D`, PostgreSQL `-D D`.
fn process_matches(pid: u32, kind: ServerKind, datadir: &Path) -> bool {
    if pid == 0 {
        return false;
    }
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the parenthesised command name, which may hold spaces.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    if matches!(state, None | Some('Z') | Some('X')) {
        return false;
    }
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let d = datadir.as_os_str().as_encoded_bytes();
    match kind {
        ServerKind::Postgresql => args.windows(2).any(|w| w[0] == b"-D" && w[1] == d),
        _ => {
            let want = [b"--datadir=".as_slice(), d].concat();
            args.contains(&want.as_slice())
        }
    }
}

/// A live server process of `kind` on `datadir`, found by scanning /proc
/// (its pid file may be missing after a failed start).
fn find_server_pid(kind: ServerKind, datadir: &Path) -> Option<u32> {
    if kind == ServerKind::Postgresql {
        let pid = fs::read_to_string(datadir.join("postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next().and_then(|l| l.trim().parse().ok()));
        if let Some(pid) = pid.filter(|&p| process_matches(p, kind, datadir)) {
            return Some(pid);
        }
    }
    fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .find(|&pid| process_matches(pid, kind, datadir))
}

/// A live (not zombie) process's arguments, or None.
fn live_args(pid: u32) -> Option<Vec<Vec<u8>>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    if matches!(state, None | Some('Z') | Some('X')) {
        return None;
    }
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(cmdline.split(|&b| b == 0).map(<[u8]>::to_vec).collect())
}

/// The data directory a server or initialisation program's arguments name
/// (`--datadir=D`, `-D D`), and whether it is PostgreSQL's form.
fn datadir_arg(args: &[Vec<u8>]) -> Option<(PathBuf, bool)> {
    use std::os::unix::ffi::OsStrExt;
    let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
    if let Some(d) = args.iter().find_map(|a| a.strip_prefix(b"--datadir=".as_slice())) {
        return Some((path(d), false));
    }
    args.windows(2).find(|w| w[0] == b"-D").map(|w| (path(&w[1]), true))
}

/// Server and initialisation processes (MariaDB/MySQL `--datadir=D`,
/// PostgreSQL and initdb `-D D`) whose data directory is `dir` or lies
/// under it: what a killed lab left running in its work directory. `dir`
/// must be canonical, as the paths dbbench gives servers are.
pub fn processes_under(dir: &Path) -> Vec<(u32, PathBuf)> {
    let me = std::process::id();
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut found: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let (d, _) = datadir_arg(&live_args(pid)?)?;
            d.starts_with(dir).then_some((pid, d))
        })
        .collect();
    found.sort();
    found
}

/// Stops what `processes_under(dir)` finds: the shutdown signal each
/// program takes (SIGTERM; SIGINT, PostgreSQL's fast shutdown, for `-D`),
/// up to `timeout` to end, then SIGKILL to each and to the process group it
/// leads (an initialisation script's bootstrap server, a postmaster's
/// backends). Returns one line per process stopped; an error names any
/// still running.
pub fn stop_processes_under(dir: &Path, timeout: Duration) -> Result<Vec<String>, String> {
    let found = processes_under(dir);
    let mut stopped = Vec::new();
    for (pid, datadir) in &found {
        let pg = live_args(*pid).and_then(|a| datadir_arg(&a)).is_some_and(|(_, pg)| pg);
        signal(*pid, if pg { libc::SIGINT } else { libc::SIGTERM });
        stopped.push(format!("pid {pid} on {}", datadir.display()));
    }
    let still = |pid: u32, d: &Path| live_args(pid).and_then(|a| datadir_arg(&a)).is_some_and(|(x, _)| x == d);
    let deadline = Instant::now() + timeout;
    while found.iter().any(|(p, d)| still(*p, d)) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    for (pid, d) in &found {
        if still(*pid, d) {
            // SAFETY: getpgid has no memory preconditions.
            let leads_group = unsafe { libc::getpgid(*pid as libc::pid_t) } == *pid as libc::pid_t;
            if leads_group {
                signal_group(*pid);
            }
            signal(*pid, libc::SIGKILL);
        }
    }
    let deadline = Instant::now() + KILL_WAIT;
    while found.iter().any(|(p, d)| still(*p, d)) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    let left: Vec<String> =
        found.iter().filter(|(p, d)| still(*p, d)).map(|(p, d)| format!("pid {p} on {}", d.display())).collect();
    if !left.is_empty() {
        return Err(format!("could not stop {} (a process of another user?)", left.join(", ")));
    }
    Ok(stopped)
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory preconditions; callers checked the pid is ours.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// uid and gid of an OS user.
fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let cname = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam_r writes only into the buffers we pass, sized by us.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 16 * 1024];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwnam_r(cname.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
        if rc != 0 || result.is_null() {
            return None;
        }
        Some((pwd.pw_uid, pwd.pw_gid))
    }
}

/// The OS user a server of `kind` runs as: None (ourselves) unless we are
/// root, then `mysql` (MariaDB/MySQL) or `postgres` (PostgreSQL). A server
/// is never run as root: one that could write files as root (`SELECT ...
/// INTO OUTFILE`, `COPY ... TO PROGRAM`) would hand root to whoever
/// reaches it.
fn server_account(kind: ServerKind) -> Result<Option<(u32, u32)>, String> {
    if !is_root() {
        return Ok(None);
    }
    let (user, package) = match kind {
        ServerKind::Postgresql => ("postgres", "postgresql"),
        _ => ("mysql", "mariadb-server"),
    };
    lookup_user(user).map(Some).ok_or_else(|| {
        format!(
            "dbbench runs {} as the '{user}' OS user, never as root, and there is none; create it (apt-get install -y {package} does, or useradd --system {user}) or run dbbench as an ordinary user",
            kind.label()
        )
    })
}

/// The name of a server's OS user, for messages.
fn account_name(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Postgresql => "postgres",
        _ => "mysql",
    }
}

/// Whether uid/gid may search (enter) a directory or execute a file, by its
/// mode bits. The server gets no supplementary groups (std drops them when
/// it switches uid), so the primary group is the only one that counts.
fn may_search(meta: &fs::Metadata, uid: u32, gid: u32) -> bool {
    let mode = meta.mode();
    if meta.uid() == uid {
        mode & 0o100 != 0
    } else if meta.gid() == gid {
        mode & 0o010 != 0
    } else {
        mode & 0o001 != 0
    }
}

/// Checks a server's OS user can reach `path` (search every parent
/// directory). Reported, not fixed: opening up a user's directories is
/// their decision.
fn check_reachable(kind: ServerKind, account: (u32, u32), path: &Path) -> Result<(), String> {
    let mut parents: Vec<&Path> = path.ancestors().skip(1).collect();
    parents.reverse();
    let user = account_name(kind);
    for dir in parents {
        let Ok(meta) = fs::metadata(dir) else { continue };
        if !may_search(&meta, account.0, account.1) {
            return Err(format!(
                "the '{user}' OS user cannot enter {} (mode {:o}, owner uid {}), which leads to {}; dbbench runs {} as '{user}', never as root: use directories under /tmp or /var/tmp, or allow it with: chmod o+x {}",
                dir.display(),
                meta.mode() & 0o7777,
                meta.uid(),
                path.display(),
                kind.label(),
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Checks a server's OS user can read `file` (a spec's config file the
/// server itself opens).
fn check_readable(kind: ServerKind, account: (u32, u32), file: &Path) -> Result<(), String> {
    check_reachable(kind, account, file)?;
    let meta = fs::metadata(file).map_err(|e| format!("config file {}: {e}", file.display()))?;
    let mode = meta.mode();
    let readable = if meta.uid() == account.0 {
        mode & 0o400 != 0
    } else if meta.gid() == account.1 {
        mode & 0o040 != 0
    } else {
        mode & 0o004 != 0
    };
    if !readable {
        return Err(format!(
            "the '{}' OS user cannot read config file {} (mode {:o}, owner uid {}); dbbench runs {} as that user: allow it with: chmod o+r {}",
            account_name(kind),
            file.display(),
            mode & 0o7777,
            meta.uid(),
            kind.label(),
            file.display()
        ));
    }
    Ok(())
}

/// Gives a tree to uid/gid where it is not theirs yet (a datadir restored
/// by root, say). Symlinks are not followed.
fn chown_tree(path: &Path, account: (u32, u32)) -> Result<(), String> {
    let meta = fs::symlink_metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if meta.uid() != account.0 || meta.gid() != account.1 {
        std::os::unix::fs::lchown(path, Some(account.0), Some(account.1))
            .map_err(|e| format!("cannot give {} to uid {}: {e}", path.display(), account.0))?;
    }
    if meta.is_dir() {
        let entries = fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        for e in entries.flatten() {
            chown_tree(&e.path(), account)?;
        }
    }
    Ok(())
}

/// A command for a server or an initialisation program: own session (so it
/// outlives us and no terminal signal reaches it), stdin from /dev/null,
/// stdout and stderr appended to `log`, cwd `/`, optionally another account.
fn detached_command(program: &Path, log: &Path, account: Option<(u32, u32)>) -> Result<Command, String> {
    // The run directory belongs to the server's OS user: never follow a
    // symlink it could have put in the log's place.
    let out = crate::safe_fs::open_append(log).map_err(|e| format!("cannot open log: {e}"))?;
    if let Some((uid, gid)) = account {
        // The server reopens its log itself (MariaDB's --log-error).
        std::os::unix::fs::fchown(&out, Some(uid), Some(gid))
            .map_err(|e| format!("cannot give log {} to uid {uid}: {e}", log.display()))?;
    }
    let err = out.try_clone().map_err(|e| format!("cannot open log {}: {e}", log.display()))?;
    let mut cmd = Command::new(program);
    cmd.stdin(Stdio::null()).stdout(out).stderr(err).current_dir("/");
    if let Some((uid, gid)) = account {
        cmd.uid(uid).gid(gid);
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// Runs an initialisation program to its end, bounded by `timeout`; on a
/// timeout its whole session (e.g. the bootstrap server a script started) is killed.
fn run_bounded(mut cmd: Command, what: &str, log: &Path, timeout: Duration) -> Result<(), String> {
    let pos = file_len(log);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                return Err(format!(
                    "{what} failed ({status}): {}; log: {}",
                    last_error_line(&read_log_from(log, pos)),
                    log.display()
                ))
            }
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for {what}: {e}")),
        }
        if Instant::now() >= deadline {
            // The child leads its own session, so -pid is its process group: ours only.
            signal_group(child.id());
            let _ = child.wait();
            return Err(format!(
                "{what} did not finish within {} s (killed it); raise the timeout or see the log: {}",
                timeout.as_secs(),
                log.display()
            ));
        }
        std::thread::sleep(POLL);
    }
}

fn signal_group(leader: u32) {
    // SAFETY: as in `signal`; the group is the session our child leads.
    unsafe {
        libc::kill(-(leader as libc::pid_t), libc::SIGKILL);
    }
}

/// Picks a port in 20000-32767 that nothing listens on (a bind test, the
/// way the server will bind). Binding later may still race: see `start`.
fn pick_port() -> Result<u16, String> {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS: distinct sequences per process and call.
    let state = std::collections::hash_map::RandomState::new();
    for i in 0..500u32 {
        let mut h = state.build_hasher();
        h.write_u32(i);
        let port = PORT_FIRST + (h.finish() % u64::from(PORT_LAST - PORT_FIRST + 1)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(format!("no free TCP port on 127.0.0.1 in {PORT_FIRST}-{PORT_LAST} after 500 tries"))
}

// ------------------------------------------------------------------ logs

fn file_len(path: &Path) -> u64 {
    fs::symlink_metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The text of a log from byte `pos` (from the start if the log is shorter,
/// i.e. was truncated), at most its last 1 MiB.
fn read_log_from(path: &Path, pos: u64) -> String {
    let Ok(mut f) = crate::safe_fs::open_read(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let pos = if pos > len { 0 } else { pos };
    let start = pos.max(len.saturating_sub(1 << 20));
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// The last `max_lines` lines of a log written since `pos`.
fn log_tail(path: &Path, pos: u64, max_lines: usize) -> String {
    let text = read_log_from(path, pos);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

/// The most telling line of a failure log: the last error line, else the
/// last line; shortened for a one-line message.
fn last_error_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let is_error = |l: &&&str| {
        let u = l.to_ascii_uppercase();
        u.contains("ERROR") || u.contains("FATAL") || u.contains("ABORTING")
    };
    let errors: Vec<&&str> = lines.iter().filter(is_error).collect();
    // MariaDB says "[ERROR] Aborting" and then may fail to tear down
    // ("Error on close of '(null)'"): the cause is the error before it.
    let aborting = errors.iter().position(|l| l.to_ascii_lowercase().ends_with("aborting"));
    let before = &errors[..aborting.unwrap_or(errors.len())];
    // A full disk is the cause of whatever failed after it.
    let disk_full = |l: &&&&str| {
        let l = l.to_ascii_lowercase();
        ["errcode: 28", "no space left on device", "error number 28", "os error 28", "disk full", "disk is full"]
            .iter()
            .any(|m| l.contains(m))
    };
    let line = before
        .iter()
        .find(disk_full)
        .or(before.last())
        .or(errors.last())
        .map(|l| l.to_string())
        .or_else(|| lines.last().map(|l| l.to_string()))
        .unwrap_or_else(|| "(no output)".to_string());
    one_line(&line, 300)
}

/// Whitespace collapsed to single spaces, cut at `max` characters.
fn one_line(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// A start failed because the TCP port was taken (worth another port).
fn is_port_conflict(log: &str) -> bool {
    let l = log.to_ascii_lowercase();
    l.contains("tcp/ip port")
        || l.contains("do you already have another")
        || l.contains("could not bind ipv4")
        || l.contains("could not create any tcp/ip sockets")
}

/// A start failed because the unix socket was taken (another port won't help).
fn is_socket_conflict(log: &str) -> bool {
    let l = log.to_ascii_lowercase();
    l.contains("bind on unix socket")
        || l.contains("using unix socket file")
        || l.contains("could not bind unix address")
        || l.contains("could not create any unix-domain sockets")
        || (l.contains("lock file") && l.contains(".s.pgsql"))
}

// ------------------------------------------------------------------ SQL helpers

/// An admin connection (MariaDB/MySQL root, PostgreSQL postgres), kept for
/// repeated samples: connecting per sample would fork a PostgreSQL backend
/// every second in the middle of a measurement.
enum AdminConn {
    My(mysql::Conn),
    /// Boxed: the client is ~300 bytes, the MariaDB connection one pointer.
    Pg(Box<postgres::Client>),
}

/// A failed query; `server` = the server rejected the SQL (the connection is fine).
struct QueryError {
    msg: String,
    server: bool,
}

type Rows = (Vec<String>, Vec<Vec<Option<String>>>);

fn my_err(e: &mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(m) => one_line(&format!("ERROR {} ({}): {}", m.code, m.state, m.message), 500),
        other => one_line(&other.to_string(), 500),
    }
}

fn pg_err(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => one_line(&format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), db.code().code()), 500),
        None => one_line(&e.to_string(), 500),
    }
}

fn my_text(v: mysql::Value) -> Option<String> {
    match v {
        mysql::Value::NULL => None,
        mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

fn run_admin_query(conn: &mut AdminConn, sql: &str) -> Result<Rows, QueryError> {
    match conn {
        AdminConn::My(c) => {
            use mysql::prelude::Queryable;
            let rows: Vec<mysql::Row> = c
                .query(sql)
                .map_err(|e| QueryError { msg: my_err(&e), server: matches!(e, mysql::Error::MySqlError(_)) })?;
            let cols = rows
                .first()
                .map(|r| r.columns_ref().iter().map(|c| c.name_str().into_owned()).collect())
                .unwrap_or_default();
            Ok((cols, rows.into_iter().map(|r| r.unwrap().into_iter().map(my_text).collect()).collect()))
        }
        AdminConn::Pg(c) => {
            let msgs = c.simple_query(sql).map_err(|e| QueryError {
                msg: pg_err(&e),
                server: e.as_db_error().is_some_and(|d| !matches!(d.severity(), "FATAL" | "PANIC")),
            })?;
            let mut cols = Vec::new();
            let mut rows = Vec::new();
            for m in msgs {
                if let postgres::SimpleQueryMessage::Row(r) = m {
                    if cols.is_empty() {
                        cols = r.columns().iter().map(|c| c.name().to_string()).collect();
                    }
                    rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
                }
            }
            Ok((cols, rows))
        }
    }
}

/// Splits PostgreSQL SQL into statements on `;` outside quotes, dollar
/// quotes and comments. Each statement then runs on its own, because a
/// multi-statement simple query is one implicit transaction, in which
/// VACUUM, CREATE DATABASE and friends fail.
fn split_pg_statements(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    let mut out = Vec::new();
    let mut push = |s: &str| {
        if !s.trim().is_empty() {
            out.push(s.trim().to_string());
        }
    };
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'\'' => {
                // Only E'...' strings take backslash escapes; '' is a quote in both.
                let escapes = i > 0 && matches!(b[i - 1], b'E' | b'e') && (i < 2 || !is_ident(b[i - 2]));
                i += 1;
                while i < b.len() {
                    if escapes && b[i] == b'\\' {
                        i += 2;
                    } else if b[i] == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 2;
                        } else {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // PostgreSQL block comments nest.
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'$' if i == 0 || !is_ident(b[i - 1]) => {
                // $tag$ ... $tag$, tag empty or an identifier; $1 is a parameter.
                let mut j = i + 1;
                while j < b.len() && is_ident(b[j]) && b[j] < 0x80 {
                    j += 1;
                }
                let digit_start = j > i + 1 && b[i + 1].is_ascii_digit();
                if j < b.len() && b[j] == b'$' && !digit_start {
                    let tag = &sql[i..=j];
                    i = match sql[j + 1..].find(tag) {
                        Some(k) => j + 1 + k + tag.len(),
                        None => b.len(),
                    };
                } else {
                    i += 1;
                }
            }
            b';' => {
                push(&sql[start..i]);
                start = i + 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    if start < b.len() {
        push(&sql[start..]);
    }
    out
}

/// Quotes an argument for a shell command line, when it needs it.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

// ------------------------------------------------------------------ password hashes

/// MariaDB/MySQL `mysql_native_password` hash: `*` and the upper-case hex
/// of SHA1(SHA1(password)); what `PASSWORD('...')` returns.
fn mysql_native_hash(password: &str) -> String {
    use sha1::{Digest, Sha1};
    let inner = Sha1::digest(password.as_bytes());
    let outer = Sha1::digest(inner);
    let hex: String = outer.iter().map(|b| format!("{b:02X}")).collect();
    format!("*{hex}")
}

fn hmac_sha256(key: &[u8], data: &[&[u8]]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    for d in data {
        inner.update(d);
    }
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// A PostgreSQL SCRAM-SHA-256 verifier (RFC 5802/7677, what PostgreSQL
/// stores for a password): `SCRAM-SHA-256$4096:salt$StoredKey:ServerKey`.
/// `ALTER ROLE ... PASSWORD` takes it as is, so the password itself never
/// reaches the server, where `log_statement` could print it. The password
/// must be ASCII without control characters (SASLprep leaves it alone).
fn scram_sha256_verifier(password: &str) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    const ITERATIONS: u32 = 4096;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut salt = [0u8; 16];
    if crate::secret::random_bytes(&mut salt).is_err() {
        // Only the salt's uniqueness across servers is lost.
        salt = *b"dbbench-scram-sa";
    }
    // PBKDF2-HMAC-SHA256, one 32-byte block.
    let mut u = hmac_sha256(password.as_bytes(), &[&salt, &1u32.to_be_bytes()]);
    let mut salted = u;
    for _ in 1..ITERATIONS {
        u = hmac_sha256(password.as_bytes(), &[&u]);
        for (s, x) in salted.iter_mut().zip(u) {
            *s ^= x;
        }
    }
    let client_key = hmac_sha256(&salted, &[b"Client Key"]);
    let stored_key = Sha256::digest(client_key);
    let server_key = hmac_sha256(&salted, &[b"Server Key"]);
    format!("SCRAM-SHA-256${ITERATIONS}:{}${}:{}", b64.encode(salt), b64.encode(stored_key), b64.encode(server_key))
}

// ------------------------------------------------------------------ initialise

/// Checks, without starting anything, that `spec`'s programs exist and its
/// options are acceptable: the lab calls this for every configuration
/// before the first run, so a missing binary stops the experiment at once
/// with a line naming it, instead of failing every run.
pub fn check(spec: &ServerSpec) -> Result<(), String> {
    Programs::find(spec)?;
    option_args(spec)?;
    config_file(spec)?;
    Ok(())
}

/// Initialise a fresh datadir (must not exist or be empty) for `spec`:
/// `mariadb-install-db` (or `mysqld --initialize-insecure` for MySQL), or
/// `initdb`, run as the server's OS user (`server_account`). The spec's
/// options and config file apply to the initialisation too, since some
/// settings (innodb_page_size, lower_case_table_names) can only be chosen
/// then. Afterwards start it once without TCP, create database `sbtest`
/// and the benchmark account `sbtest` (see `create_benchmark_account`:
/// no password over the private socket, `tcp_password` over TCP, a
/// superuser only if the spec says so) — then stop it. `rundir` is a short
/// directory for sockets/logs (socket path length!), made private to the
/// server's OS user. On failure the datadir is emptied again, so the call
/// can be repeated; the logs in `rundir` stay.
pub fn initialize(spec: &ServerSpec, datadir: &Path, rundir: &Path, tcp_password: &Secret) -> Result<(), String> {
    option_args(spec)?;
    let config = config_file(spec)?;
    let existed = datadir.exists();
    if existed && !is_empty_dir(datadir) {
        return Err(format!("datadir {} is not empty; initialise into a new or empty directory", datadir.display()));
    }
    let progs = Programs::find(spec)?;
    let account = server_account(spec.kind)?;
    let rundir = run_dir(spec.kind, rundir, account)?;
    let layout = Layout::new(spec.kind, &rundir);
    layout.check_socket_length(spec.kind)?;
    let datadir = make_dir(datadir, "datadir")?;

    let result = initialize_in(spec, &progs, account, config.as_deref(), &datadir, &rundir, &layout, tcp_password);
    if result.is_err() {
        // It was empty or absent before: what is in it now is ours.
        let _ = fs::remove_dir_all(&datadir);
        if existed {
            let _ = fs::create_dir(&datadir);
        }
    }
    result
}

/// The run directory of a server: made (or checked) private, and given to
/// the server's OS user, who writes its socket, logs and temporary files
/// there. Returns its absolute path.
fn run_dir(kind: ServerKind, rundir: &Path, account: Option<(u32, u32)>) -> Result<PathBuf, String> {
    crate::safe_fs::server_dir(rundir, account, "run directory")?;
    let rundir =
        fs::canonicalize(rundir).map_err(|e| format!("cannot resolve run directory {}: {e}", rundir.display()))?;
    if let Some(acc) = account {
        check_reachable(kind, acc, &rundir.join("x"))?;
    }
    Ok(rundir)
}

/// Checks the server's OS user reaches its programs, datadir and config
/// file, and gives it the datadir.
fn hand_over(
    kind: ServerKind,
    account: Option<(u32, u32)>,
    progs: &Programs,
    datadir: &Path,
    config: Option<&Path>,
) -> Result<(), String> {
    let Some(acc) = account else { return Ok(()) };
    check_reachable(kind, acc, &progs.server)?;
    check_reachable(kind, acc, &progs.init)?;
    check_reachable(kind, acc, datadir)?;
    if let (Some(f), true) = (config, kind.is_mysql_family()) {
        // MariaDB/MySQL read it themselves; PostgreSQL's is copied by us.
        check_readable(kind, acc, f)?;
    }
    chown_tree(datadir, acc)
}

#[allow(clippy::too_many_arguments)]
fn initialize_in(
    spec: &ServerSpec,
    progs: &Programs,
    account: Option<(u32, u32)>,
    config: Option<&Path>,
    datadir: &Path,
    rundir: &Path,
    layout: &Layout,
    tcp_password: &Secret,
) -> Result<(), String> {
    // A fresh log per initialisation: it is read only when this one fails.
    drop(crate::safe_fs::create_truncate(&layout.init_log, 0o600)?);
    let d = datadir.display();
    if progs.flavor != Flavor::Postgresql {
        crate::safe_fs::server_dir(&layout.tmpdir, account, "temporary directory")?;
    }
    hand_over(spec.kind, account, progs, datadir, config)?;
    match progs.flavor {
        Flavor::Mariadb => {
            let mut cmd = detached_command(&progs.init, &layout.init_log, account)?;
            cmd.args(mysql_leading_args(spec, config));
            // 'normal' root authentication: root@localhost without password,
            // usable from any OS user (unix_socket would admit only root);
            // reachable through the private socket only.
            cmd.args([
                format!("--datadir={d}"),
                format!("--tmpdir={}", layout.tmpdir.display()),
                "--auth-root-authentication-method=normal".to_string(),
                "--skip-test-db".to_string(),
                "--skip-name-resolve".to_string(),
            ]);
            // mariadb-install-db hands options it does not know to the bootstrap server.
            cmd.args(mysql_option_args(&spec.options)?);
            run_bounded(cmd, &progs.init.display().to_string(), &layout.init_log, spec.timeout)?;
        }
        Flavor::Mysql => {
            let mut cmd = detached_command(&progs.init, &layout.init_log, account)?;
            cmd.arg(match config {
                Some(f) => format!("--defaults-file={}", f.display()),
                None => "--no-defaults".to_string(),
            });
            cmd.arg("--initialize-insecure");
            if let Some(b) = &spec.basedir {
                cmd.arg(format!("--basedir={}", fs::canonicalize(b).unwrap_or_else(|_| b.clone()).display()));
            }
            cmd.arg(format!("--datadir={d}"));
            cmd.arg(format!("--tmpdir={}", layout.tmpdir.display()));
            cmd.arg(format!("--log-error={}", layout.init_log.display()));
            cmd.args(mysql_option_args(&spec.options)?);
            run_bounded(cmd, "mysqld --initialize-insecure", &layout.init_log, spec.timeout)?;
        }
        Flavor::Postgresql => {
            let mut cmd = detached_command(&progs.init, &layout.init_log, account)?;
            // --locale=C, UTF8: the same collation whatever the environment's
            // locale, so results do not depend on the shell dbbench ran from.
            // --no-sync: skips initdb's final fsync only, not the server's.
            // Local (socket) connections are trusted: the socket directory is
            // private. TCP asks every role for a SCRAM password; only the
            // benchmark account gets one.
            cmd.args(["-D"]).arg(datadir).args([
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ]);
            run_bounded(cmd, "initdb", &layout.init_log, spec.timeout)?;
            if let Some(f) = config {
                let text =
                    fs::read_to_string(f).map_err(|e| format!("cannot read config file {}: {e}", f.display()))?;
                let conf = datadir.join("postgresql.conf");
                let mut out = crate::safe_fs::open_append(&conf).map_err(|e| format!("cannot write {e}"))?;
                std::io::Write::write_all(
                    &mut out,
                    format!("\n# appended by dbbench from {}\n{text}\n", f.display()).as_bytes(),
                )
                .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
            }
        }
    }
    let mut server = ManagedServer::start_with_ports(spec, datadir, rundir, &mut pick_port, false)?;
    crate::fault_point::test_pause("initialize");
    let created = server.create_benchmark_account(spec.superuser, tcp_password);
    let stopped = server.stop();
    created?;
    stopped
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

impl ManagedServer {
    /// Start on a private unix socket inside `rundir` and a free 127.0.0.1 port; wait (bounded by spec.timeout) until it accepts
    /// connections; error log in rundir (name it after the kind); a port or socket in use is reported (after a few port retries
    /// for the pick-then-bind race), never retried forever; a socket file of a live server in rundir is an error naming it.
    pub fn start(spec: &ServerSpec, datadir: &Path, rundir: &Path) -> Result<ManagedServer, String> {
        Self::start_with_ports(spec, datadir, rundir, &mut pick_port, true)
    }

    /// `start` with the port source as a parameter, so tests can force a
    /// taken port; without `networking` the server listens on its socket
    /// only (initialisation, before the accounts are made safe).
    fn start_with_ports(
        spec: &ServerSpec,
        datadir: &Path,
        rundir: &Path,
        next_port: &mut dyn FnMut() -> Result<u16, String>,
        networking: bool,
    ) -> Result<ManagedServer, String> {
        let options = option_args(spec)?;
        let config = config_file(spec)?;
        let progs = Programs::find(spec)?;
        let account = server_account(spec.kind)?;
        let rundir = run_dir(spec.kind, rundir, account)?;
        let datadir = fs::canonicalize(datadir).map_err(|e| format!("datadir {}: {e}", datadir.display()))?;
        if !is_initialised(spec.kind, &datadir) {
            return Err(format!(
                "datadir {} is not an initialised {} datadir; initialise it first (dbbench server start does so for a new --dir)",
                datadir.display(),
                spec.kind.label()
            ));
        }
        let layout = Layout::new(spec.kind, &rundir);
        layout.check_socket_length(spec.kind)?;
        check_sockets_free(spec.kind, &layout)?;
        if let Some(pid) = find_server_pid(spec.kind, &datadir) {
            return Err(format!(
                "datadir {} is in use by a running {} server (pid {pid}); stop that server first",
                datadir.display(),
                spec.kind.label()
            ));
        }
        hand_over(spec.kind, account, &progs, &datadir, config.as_deref())?;
        if spec.kind == ServerKind::Postgresql {
            crate::safe_fs::server_dir(&layout.socket, account, "socket directory")?;
        } else {
            crate::safe_fs::server_dir(&layout.tmpdir, account, "temporary directory")?;
            crate::safe_fs::server_dir(&layout.files, account, "secure_file_priv directory")?;
        }

        let label = spec.kind.label();
        let mut last_port = 0;
        for attempt in 1..=PORT_ATTEMPTS {
            let port = next_port()?;
            last_port = port;
            let pos = file_len(&layout.log);
            let mut cmd = detached_command(&progs.server, &layout.log, account)?;
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
            }
            cmd.args(&options);
            let child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", progs.server.display()))?;
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
                    return Err(format!(
                        "{label} did not accept connections within {} s (last attempt: {last}); killed it (pid {}); log: {}",
                        spec.timeout.as_secs(),
                        server.pid,
                        layout.log.display()
                    ));
                }
                Err(NotReady::Exited(status)) => {
                    let text = read_log_from(&layout.log, pos);
                    if is_socket_conflict(&text) {
                        return Err(format!(
                            "{label} could not bind its socket {}: another server holds it ({}); stop that server first, or use another run directory",
                            layout.socket.display(),
                            last_error_line(&text)
                        ));
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
                    return Err(format!(
                        "{label} exited during startup ({status}): {}; log: {}",
                        last_error_line(&text),
                        layout.log.display()
                    ));
                }
            }
        }
        Err(format!(
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
                    Err(e) => e,
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
    pub fn stop(&mut self) -> Result<(), String> {
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
        Err(format!(
            "{} (pid {}) did not stop within {} s after {how}; killed it with SIGKILL, so its next start runs crash recovery; log: {}",
            self.kind.label(),
            self.pid,
            self.timeout.as_secs(),
            self.log.display()
        ))
    }

    /// Sends SHUTDOWN as root. Ok once the server took the command: the
    /// connection usually breaks right after, which is not an error.
    fn shutdown_sql(&mut self) -> Result<(), String> {
        let slot = self.admin.get_mut().unwrap_or_else(|e| e.into_inner());
        let conn = match slot.take() {
            Some(c) => c,
            None => self.connect_admin(PROBE_TIMEOUT)?,
        };
        let AdminConn::My(mut c) = conn else { return Err("not a MariaDB/MySQL connection".into()) };
        use mysql::prelude::Queryable;
        match c.query_drop("SHUTDOWN") {
            Err(mysql::Error::MySqlError(e)) => Err(e.message),
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
    /// blocks; PostgreSQL gets one statement at a time (see
    /// `split_pg_statements`), so VACUUM and CREATE DATABASE work. No read
    /// timeout: a hook may legitimately run long.
    pub fn execute_sql(&self, sql: &str) -> Result<(), String> {
        if sql.trim().is_empty() {
            return Ok(());
        }
        let label = self.kind.label();
        match self.kind {
            ServerKind::Postgresql => {
                let mut c = self.pg_config(BENCH_USER, BENCH_DB).connect(postgres::NoTls).map_err(|e| {
                    format!("cannot connect to {label} at {} as {BENCH_USER}: {}", self.socket.display(), pg_err(&e))
                })?;
                for stmt in split_pg_statements(sql) {
                    c.batch_execute(&stmt).map_err(|e| {
                        format!(
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
                let mut c = mysql::Conn::new(self.mysql_opts(BENCH_USER, Some(BENCH_DB), None)).map_err(|e| {
                    format!("cannot connect to {label} at {} as {BENCH_USER}: {}", self.socket.display(), my_err(&e))
                })?;
                c.query_drop(sql).map_err(|e| {
                    format!(
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
    fn check_product(&self, program: &Path) -> Result<(), String> {
        if !self.kind.is_mysql_family() {
            return Ok(());
        }
        let (_, rows) = self.admin_query("SELECT VERSION(), @@version_comment")?;
        let cell = |i: usize| rows.first().and_then(|r| r.get(i).cloned().flatten()).unwrap_or_default();
        let product = crate::lab::product::mysql_family(&cell(0), &cell(1));
        if crate::lab::product::fits(self.kind, &product.name) {
            Ok(())
        } else {
            Err(crate::lab::product::mismatch(self.kind, program, &product))
        }
    }

    /// `SELECT VERSION()`.
    fn version(&self) -> Result<String, String> {
        let (_, rows) = self.admin_query("SELECT VERSION()")?;
        rows.into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten())
            .ok_or_else(|| format!("{} returned no version", self.kind.label()))
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
    fn create_benchmark_account(&self, superuser: bool, tcp_password: &Secret) -> Result<(), String> {
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
            self.admin_query(s)
                .map_err(|e| format!("creating the benchmark account failed: {}", crate::secret::redact(&e)))?;
        }
        self.execute_sql("SELECT 1").map_err(|e| format!("the new benchmark account does not work: {e}"))
    }

    /// A MariaDB/MySQL server must not resolve host names: its password-less
    /// `localhost` accounts would then admit TCP clients whose address
    /// resolves to localhost. Checked after every start, since a spec's
    /// options or config file could turn it back on.
    fn check_name_resolution(&self) -> Result<(), String> {
        if !self.kind.is_mysql_family() {
            return Ok(());
        }
        let (_, rows) = self.admin_query("SELECT @@skip_name_resolve")?;
        match rows.first().and_then(|r| r.first()).cloned().flatten().as_deref() {
            Some("1") | Some("ON") => Ok(()),
            other => Err(format!(
                "{} runs with skip_name_resolve = {} (the spec's options or config file turned it off): its password-less socket accounts would then admit TCP clients whose address resolves to localhost; remove that setting",
                self.kind.label(),
                other.unwrap_or("?")
            )),
        }
    }

    /// Runs a query on the kept admin connection, connecting if needed. A
    /// kept connection that broke (server restarted, session killed) is
    /// replaced once.
    fn admin_query(&self, sql: &str) -> Result<Rows, String> {
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
            return Err(format!("{label} query failed: {} in: {}", err.msg, one_line(sql, 120)));
        }
        *slot = None;
        let mut conn = self.connect_admin(self.timeout)?;
        let r = run_admin_query(&mut conn, sql)
            .map_err(|e| format!("{label} query failed: {} in: {}", e.msg, one_line(sql, 120)))?;
        *slot = Some(conn);
        Ok(r)
    }

    /// An admin connection over the socket: MariaDB/MySQL root, PostgreSQL postgres.
    fn connect_admin(&self, timeout: Duration) -> Result<AdminConn, String> {
        let label = self.kind.label();
        match self.kind {
            ServerKind::Postgresql => {
                let mut cfg = self.pg_config("postgres", "postgres");
                cfg.connect_timeout(timeout);
                cfg.connect(postgres::NoTls).map(|c| AdminConn::Pg(Box::new(c))).map_err(|e| {
                    format!(
                        "cannot connect to {label} at {} port {} as postgres: {}",
                        self.socket.display(),
                        self.port,
                        pg_err(&e)
                    )
                })
            }
            _ => mysql::Conn::new(self.mysql_opts("root", None, Some(timeout)))
                .map(AdminConn::My)
                .map_err(|e| format!("cannot connect to {label} at {} as root: {}", self.socket.display(), my_err(&e))),
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
fn check_sockets_free(kind: ServerKind, layout: &Layout) -> Result<(), String> {
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
            return Err(format!(
                "{} exists and is not a socket; remove it or use another run directory",
                sock.display()
            ));
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
                return Err(format!(
                    "socket {} is in use by a running server{pid}; stop that server first, or use another run directory",
                    sock.display()
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                // Nobody listens: left by a killed server.
                let _ = fs::remove_file(&sock);
                if kind == ServerKind::Postgresql {
                    let _ = fs::remove_file(format!("{}.lock", sock.display()));
                }
            }
            Err(e) => return Err(format!("cannot check socket {}: {e}", sock.display())),
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ dbbench server

/// What `dbbench server start` leaves in DIR/server.json for later calls.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ServerState {
    kind: ServerKind,
    pid: u32,
    socket: PathBuf,
    port: u16,
    datadir: PathBuf,
    rundir: PathBuf,
    log: PathBuf,
    timeout_secs: u64,
    /// Set by `dbbench server stop`: a dead pid is then "stopped", not "crashed".
    stopped: bool,
}

/// Start and stop a managed MariaDB, MySQL or PostgreSQL server (docs/lab.md).
///
/// A private database server for dbbench runs: its datadir is DIR/data (initialised on the first start, with
/// database and user sbtest), its socket and log are in DIR/run, it listens on a free port of 127.0.0.1, and
/// DIR/server.json remembers it for stop and status. As root it runs as the mysql or postgres OS user. Over
/// the socket (only that user and root reach DIR/run) sbtest needs no password; over TCP it needs the one in
/// DIR/password (e.g. DBBENCH_MYSQL_PASSWORD=$(cat DIR/password)).
#[derive(clap::Parser, Debug)]
#[command(
    name = "server",
    args_override_self = true,
    arg_required_else_help = true,
    after_help = "status prints running, stopped or crashed; its exit status is 0 when the\n\
server runs and 3 when it does not."
)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Start the server of --dir (initialising it on the first start)
    Start {
        /// Server program: mariadb, mysql (Oracle MySQL; untested) or postgresql
        #[arg(long, value_name = "KIND", value_parser = parse_kind)]
        kind: ServerKind,
        #[command(flatten)]
        dir: DirArg,
        /// Unpacked tarball or build tree with bin/ [installed binaries: PATH, /usr/sbin,
        /// /usr/lib/postgresql/<newest>/bin]
        #[arg(long, value_name = "B")]
        basedir: Option<PathBuf>,
        /// MariaDB/MySQL: a my.cnf used instead of --no-defaults; PostgreSQL: appended to postgresql.conf at
        /// initialisation
        #[arg(long, value_name = "F")]
        config_file: Option<PathBuf>,
        #[command(flatten)]
        timeout: TimeoutArg,
        /// At initialisation: give sbtest every privilege [its own database and status only; see
        /// docs/security.md]
        #[arg(long)]
        superuser: bool,
        /// After --: MariaDB/MySQL --name=value options; PostgreSQL name=value settings. dbbench adds no
        /// tuning; note max_connections (MariaDB 151, PostgreSQL 100) for runs with many threads
        #[arg(last = true, value_name = "SERVER-OPTIONS")]
        server_options: Vec<String>,
    },
    /// Stop the server of --dir
    Stop {
        #[command(flatten)]
        dir: DirArg,
        #[command(flatten)]
        timeout: TimeoutArg,
    },
    /// Print running, stopped or crashed (exit status 0 when running, 3 when not)
    Status {
        #[command(flatten)]
        dir: DirArg,
    },
}

#[derive(clap::Args, Debug)]
struct DirArg {
    /// Directory of this server; keep it short (unix socket paths are limited to ~100 bytes)
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
}

#[derive(clap::Args, Debug)]
struct TimeoutArg {
    /// Bound in seconds for initialisation, start and stop [120]
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    timeout: Option<Duration>,
}

fn parse_kind(value: &str) -> Result<ServerKind, String> {
    ServerKind::parse(value).ok_or_else(|| format!("--kind takes mariadb, mysql or postgresql, not '{value}'"))
}

fn parse_timeout(value: &str) -> Result<Duration, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|&s| s > 0)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("--timeout takes a positive number of seconds, not '{value}'"))
}

/// A free-standing server managed by `dbbench server start|stop|status --dir DIR`: state persisted in DIR/server.json
/// (kind, pid, socket, port, datadir, log) so a later process can stop it or report status.
/// Exit status 0 on success (status: running), 3 for status not running, 1 for bad input or a failure.
pub fn cli_main(args: &[String]) -> ExitCode {
    let args = match crate::subcommand::parse::<Args>("server", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run_action(args.action) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dbbench server: {e}");
            Exit::Error.into()
        }
    }
}

/// `dbbench server ARGS...` as parsed and run (the tests' entry point).
#[cfg(test)]
fn cli(args: &[String]) -> Result<ExitCode, String> {
    use crate::subcommand::{try_parse, Stop};
    match try_parse::<Args>("server", args) {
        Ok(a) => run_action(a.action),
        Err(Stop::Usage(e) | Stop::Help(e) | Stop::HelpOnEmpty(e)) => Err(e),
    }
}

fn run_action(action: Action) -> Result<ExitCode, String> {
    match action {
        Action::Start { kind, dir, basedir, config_file, timeout, superuser, server_options } => {
            let spec = ServerSpec {
                basedir,
                options: server_options,
                config_file,
                timeout: timeout.timeout.unwrap_or(DEFAULT_CLI_TIMEOUT),
                superuser,
                ..ServerSpec::new(kind)
            };
            cli_start(spec, &dir.dir)
        }
        Action::Stop { dir, timeout } => cli_stop(timeout.timeout, &dir.dir),
        Action::Status { dir } => cli_status(&dir.dir),
    }
}

fn state_path(dir: &Path) -> PathBuf {
    dir.join(STATE_FILE)
}

fn read_state(dir: &Path) -> Result<Option<ServerState>, String> {
    let path = state_path(dir);
    match fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            format!(
                "{} is damaged ({e}); check for a server still running from {} and remove the file",
                path.display(),
                dir.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Writes the state through a temporary file, so a reader never sees half of it.
fn write_state(dir: &Path, state: &ServerState) -> Result<(), String> {
    let text = serde_json::to_string_pretty(state).map_err(|e| format!("cannot encode server state: {e}"))?;
    crate::safe_fs::write_atomic(&state_path(dir), (text + "\n").as_bytes(), 0o644)
        .map_err(|e| format!("cannot write the server state: {e}"))
}

fn print_server(s: &ManagedServer) {
    println!("kind={}", s.kind().name());
    println!("pid={}", s.pid());
    println!("port={}", s.port());
    println!("socket={}", s.socket().display());
    println!("datadir={}", s.datadir().display());
    println!("log={}", s.error_log().display());
    if let Some(dir) = s.rundir.parent() {
        println!("password_file={}", dir.join(PASSWORD_FILE).display());
    }
}

fn cli_start(spec: ServerSpec, dir: &Path) -> Result<ExitCode, String> {
    let kind = spec.kind;
    // Private; as root searchable, so the server's OS user reaches data/ and run/.
    crate::safe_fs::private_dir_all(dir, if is_root() { 0o711 } else { 0o700 }, "--dir")?;
    let dir = fs::canonicalize(dir).map_err(|e| format!("cannot resolve --dir {}: {e}", dir.display()))?;
    if let Some(st) = read_state(&dir)? {
        if !st.stopped && process_matches(st.pid, st.kind, &st.datadir) {
            return Err(format!(
                "a {} server from {} is already running (pid {}); stop it with: dbbench server stop --dir {}",
                st.kind.label(),
                dir.display(),
                st.pid,
                shell_quote(&dir.to_string_lossy())
            ));
        }
    }
    // Programs and product before anything is made (kind mysql on MariaDB's mysqld).
    check(&spec)?;
    let datadir = dir.join("data");
    let rundir = dir.join("run");
    if !datadir.exists() || is_empty_dir(&datadir) {
        eprintln!("dbbench server: initialising a {} datadir in {}", kind.label(), datadir.display());
        let t = Instant::now();
        let password = crate::secret::random_password()?;
        crate::safe_fs::write_atomic(&dir.join(PASSWORD_FILE), password.expose().as_bytes(), 0o600)?;
        initialize(&spec, &datadir, &rundir, &password)?;
        eprintln!("dbbench server: initialised in {:.1} s", t.elapsed().as_secs_f64());
    } else if !is_initialised(kind, &datadir) {
        let other = [ServerKind::Mariadb, ServerKind::Postgresql].into_iter().find(|&k| is_initialised(k, &datadir));
        return Err(match other {
            Some(k) if !(k.is_mysql_family() && kind.is_mysql_family()) => format!(
                "{} holds a {} datadir, not {}; use another --dir",
                datadir.display(),
                k.label(),
                kind.label()
            ),
            _ => format!(
                "{} is neither empty nor an initialised {} datadir (a failed initialisation?); remove it and start again",
                datadir.display(),
                kind.label()
            ),
        });
    }
    let mut server = ManagedServer::start(&spec, &datadir, &rundir)?;
    if let Err(e) = write_state(&dir, &server.state()) {
        // Without its state nobody could stop it later: do not leave it running.
        let _ = server.stop();
        return Err(e);
    }
    println!("status=running");
    print_server(&server);
    let args: Vec<String> = server.driver_args().iter().map(|s| shell_quote(s)).collect();
    println!("dbbench_args={}", args.join(" "));
    println!("# e.g.: dbbench oltp_read_only {} prepare", args.join(" "));
    Ok(Exit::Ok.into())
}

fn cli_stop(timeout: Option<Duration>, dir: &Path) -> Result<ExitCode, String> {
    let Some(mut st) = read_state(dir)? else {
        return Err(format!(
            "no {} in {}: no server was started there with dbbench server start --dir",
            STATE_FILE,
            dir.display()
        ));
    };
    if st.stopped {
        println!("status=stopped");
        return Ok(Exit::Ok.into());
    }
    if let Some(t) = timeout {
        st.timeout_secs = t.as_secs();
    }
    let mut server = ManagedServer::attach(&st);
    let was_alive = server.is_alive();
    let result = server.stop();
    if !server.is_alive() {
        st.stopped = true;
        write_state(dir, &st)?;
    }
    result?;
    if was_alive {
        println!("status=stopped");
    } else {
        println!("status=stopped (pid {} was no longer running: it had crashed or was stopped by other means)", st.pid);
    }
    Ok(Exit::Ok.into())
}

fn cli_status(dir: &Path) -> Result<ExitCode, String> {
    if !dir.is_dir() {
        return Err(format!("--dir {} is not a directory", dir.display()));
    }
    let not_running = Exit::NotRunning.into();
    let Some(st) = read_state(dir)? else {
        println!("status=stopped");
        println!("# no server was started in {} (no {STATE_FILE})", dir.display());
        return Ok(not_running);
    };
    let mut server = ManagedServer::attach(&st);
    if st.stopped {
        println!("status=stopped");
        print_server(&server);
        return Ok(not_running);
    }
    if !server.is_alive() {
        println!("status=crashed");
        print_server(&server);
        let tail = server.log_excerpt(0, 5);
        for l in tail.lines() {
            println!("# {l}");
        }
        return Ok(not_running);
    }
    println!("status=running");
    print_server(&server);
    match server.version() {
        Ok(v) => println!("version={v}"),
        Err(e) => println!("# version unavailable: {e}"),
    }
    Ok(Exit::Ok.into())
}

// ------------------------------------------------------------------ tests

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a kind's binaries are here; without them a test is skipped,
    /// except under CI=true, where that is a failure.
    fn have(kind: ServerKind) -> bool {
        match Programs::find(&ServerSpec::new(kind)) {
            Ok(_) => true,
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("CI=true but {e}"),
            Err(e) => {
                eprintln!("skipped: {e}");
                false
            }
        }
    }

    fn spec(kind: ServerKind) -> ServerSpec {
        ServerSpec { timeout: Duration::from_secs(60), ..ServerSpec::new(kind) }
    }

    /// A short temporary directory; kills every server handed to it and
    /// removes the directory when the test ends, also on a failed assertion.
    struct Fixture {
        dir: PathBuf,
        servers: Vec<ManagedServer>,
    }

    impl Fixture {
        fn new(tag: &str) -> Fixture {
            let dir = PathBuf::from(format!("/tmp/dbb-{}-{tag}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
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
    fn password() -> Secret {
        Secret::new("unit-test-TCP-password-4242")
    }

    /// A connection over TCP to 127.0.0.1 as `user`, with `password` or none.
    fn tcp_login(s: &ManagedServer, user: &str, password: Option<&str>) -> Result<(), String> {
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
        let e = tcp_login(s, BENCH_USER, None).unwrap_err();
        assert!(!e.contains(pw.expose()));
        let admin = if s.kind.is_mysql_family() { "root" } else { "postgres" };
        assert!(tcp_login(s, admin, None).is_err(), "{admin} over TCP without a password");
        assert!(tcp_login(s, admin, Some(pw.expose())).is_err(), "{admin} over TCP");
        let (attack, why) = if s.kind.is_mysql_family() {
            ("SELECT 'x' INTO OUTFILE '/tmp/dbbench-unit-outfile'", "Access denied")
        } else {
            ("COPY (SELECT 1) TO PROGRAM 'touch /tmp/dbbench-unit-program'", "pg_execute_server_program")
        };
        let e = s.execute_sql(attack).unwrap_err();
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
        let e = s.execute_sql("SELEC 1").unwrap_err();
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
        let e = ManagedServer::start_with_ports(&spec, &data, &run, &mut || Ok(busy_port), true).err().unwrap();
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
            Err(e) => e,
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
        match Programs::find(&ServerSpec::new(ServerKind::Mysql)) {
            Ok(p) => eprintln!("{} is Oracle MySQL: the refusal before start is not exercised", p.server.display()),
            Err(e) if e.contains("not found") => eprintln!("no mysqld: {e}"),
            Err(e) => {
                assert!(
                    e.starts_with("kind \"mysql\" but ") && e.contains(" is MariaDB ") && e.contains("basedir"),
                    "{e}"
                );
                assert_eq!(check(&ServerSpec::new(ServerKind::Mysql)), Err(e));
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
        let e = ManagedServer::start(&s, &data, &run).err().expect("MariaDB refused as kind mysql");
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

    #[test]
    fn cli_start_status_stop_postgresql() {
        if !have(ServerKind::Postgresql) {
            return;
        }
        let fx = Fixture::new("cli");
        let dir = fx.dir.to_string_lossy().into_owned();
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let start = cli(&args(&["start", "--kind", "postgresql", "--dir", &dir, "--timeout=60", "--", "work_mem=8MB"]));
        // From here a failure must not leave the server running.
        struct StopOnDrop(String);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                let _ = cli(&["stop".to_string(), "--dir".to_string(), self.0.clone()]);
            }
        }
        let _stop = StopOnDrop(dir.clone());
        start.unwrap();
        let st = read_state(&fx.dir).unwrap().unwrap();
        assert!(!st.stopped && process_matches(st.pid, ServerKind::Postgresql, &st.datadir));
        let mut s = ManagedServer::attach(&st);
        let vars = crate::lab::sql::connect(&s.driver_args()).unwrap().variables().unwrap();
        assert_eq!(vars.get("work_mem").and_then(|v| v.as_str()), Some("8192"));
        assert!(
            format!("{:?}", cli(&args(&["status", "--dir", &dir])).unwrap())
                == format!("{:?}", ExitCode::from(Exit::Ok))
        );
        let again = cli(&args(&["start", "--kind", "postgresql", "--dir", &dir])).unwrap_err();
        assert!(again.contains("already running"), "{again}");
        cli(&args(&["stop", "--dir", &dir])).unwrap();
        assert!(!s.is_alive());
        assert!(read_state(&fx.dir).unwrap().unwrap().stopped);
        assert_eq!(
            format!("{:?}", cli(&args(&["status", "--dir", &dir])).unwrap()),
            format!("{:?}", ExitCode::from(Exit::NotRunning))
        );
    }

    #[test]
    fn cli_rejects_bad_input() {
        use crate::subcommand::{try_parse, Stop};
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (args, want) in [
            (a(&["begin"]), "unknown server command 'begin'; use start, stop, status"),
            (a(&["start", "--dir", "/tmp/x"]), "--kind"),
            (a(&["start", "--kind", "oracle", "--dir", "/tmp/x"]), "--kind takes"),
            (a(&["stop"]), "--dir"),
            (a(&["stop", "--dir", "/tmp/x", "--kind", "mariadb"]), "unknown option '--kind'"),
            (a(&["start", "--kind", "mariadb", "--dir"]), "a value is required for '--dir <DIR>'"),
            (a(&["start", "--kind", "mariadb", "--dir="]), "a value is required for '--dir <DIR>'"),
            (a(&["start", "--kind", "mariadb", "--dir", "/tmp/x", "--timeout", "soon"]), "--timeout takes"),
            (a(&["status", "--dir", "/tmp/x", "--", "--port=1"]), "'--port'"),
        ] {
            match try_parse::<Args>("server", &args) {
                Err(Stop::Usage(e)) => assert!(e.contains(want) && !e.contains('\n'), "{args:?}: {e}"),
                other => panic!("{args:?}: {other:?}"),
            }
        }
        assert!(matches!(try_parse::<Args>("server", &[]), Err(Stop::HelpOnEmpty(_))));
        assert_eq!(format!("{:?}", cli_main(&a(&["start"]))), format!("{:?}", ExitCode::from(Exit::Error)));
        assert!(matches!(try_parse::<Args>("server", &a(&["--help"])), Err(Stop::Help(_))));
        let p = try_parse::<Args>("server", &a(&["start", "--kind=pgsql", "--dir=/d", "--", "a=1", "--b"])).unwrap();
        let Action::Start { kind, server_options, .. } = p.action else { panic!("{p:?}") };
        assert_eq!(kind, ServerKind::Postgresql);
        assert_eq!(server_options, vec!["a=1", "--b"]);
    }

    #[test]
    fn status_of_an_empty_dir_is_not_running() {
        let fx = Fixture::new("st");
        let code = cli(&[String::from("status"), String::from("--dir"), fx.dir.display().to_string()]).unwrap();
        assert_eq!(format!("{code:?}"), format!("{:?}", ExitCode::from(Exit::NotRunning)));
        assert!(cli(&["status".into(), "--dir".into(), "/nonexistent/dbb".into()]).is_err());
    }

    #[test]
    fn options_get_their_dashes_and_managed_ones_are_refused() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            mysql_option_args(&v(&["key_buffer_size=512M", "--innodb-buffer-pool-size=1G", " ", "-O"])).unwrap(),
            v(&["--key_buffer_size=512M", "--innodb-buffer-pool-size=1G", "-O"])
        );
        for bad in ["--port=3306", "socket=/tmp/s", "--loose_pid_file=x", "--datadir=/d", "--user=mysql"] {
            let e = mysql_option_args(&v(&[bad])).unwrap_err();
            assert!(e.contains("managed by dbbench"), "{e}");
        }
        assert_eq!(
            pg_option_args(&v(&["shared_buffers=1GB", "--work-mem=8MB"])).unwrap(),
            v(&["-c", "shared_buffers=1GB", "-c", "work-mem=8MB"])
        );
        assert!(pg_option_args(&v(&["fsync"])).unwrap_err().contains("not name=value"));
        assert!(pg_option_args(&v(&["Port=5"])).unwrap_err().contains("managed by dbbench"));
    }

    #[test]
    fn pg_statements_split_outside_quotes_and_comments() {
        let s = split_pg_statements(
            "SELECT 'a;b''c;'; SELECT E'x\\';y'; -- c;d\nSELECT \"q;\" /* x; /* y; */ z; */ ; \
             DO $f$ BEGIN PERFORM ';'; END $f$; SELECT $$;$$; SELECT a$b; SELECT $1;",
        );
        assert_eq!(
            s,
            vec![
                "SELECT 'a;b''c;'",
                "SELECT E'x\\';y'",
                "-- c;d\nSELECT \"q;\" /* x; /* y; */ z; */",
                "DO $f$ BEGIN PERFORM ';'; END $f$",
                "SELECT $$;$$",
                "SELECT a$b",
                "SELECT $1",
            ]
        );
        assert!(split_pg_statements(" ; ;\n").is_empty());
        assert_eq!(split_pg_statements("SELECT 'open;"), vec!["SELECT 'open;"]);
    }

    #[test]
    fn socket_paths_too_long_are_refused() {
        let long = PathBuf::from(format!("/tmp/{}", "x".repeat(90)));
        for kind in [ServerKind::Mariadb, ServerKind::Postgresql] {
            let e = Layout::new(kind, &long).check_socket_length(kind).unwrap_err();
            assert!(e.contains("shorter run directory"), "{e}");
        }
        Layout::new(ServerKind::Postgresql, Path::new("/tmp/dbb")).check_socket_length(ServerKind::Postgresql).unwrap();
    }

    #[test]
    fn initialize_refuses_a_non_empty_datadir() {
        let fx = Fixture::new("ne");
        fs::write(fx.dir.join("file"), "x").unwrap();
        let e = initialize(&spec(ServerKind::Mariadb), &fx.dir, &fx.dir, &password()).unwrap_err();
        assert!(e.contains("not empty"), "{e}");
        let e = ManagedServer::start(&spec(ServerKind::Postgresql), &fx.dir, &fx.dir).err().unwrap();
        assert!(e.contains("not an initialised") || e.contains("not found"), "{e}");
    }

    #[test]
    fn logs_excerpts_and_error_lines() {
        let fx = Fixture::new("log");
        let log = fx.dir.join("x.err");
        fs::write(&log, "one\ntwo\n").unwrap();
        let pos = file_len(&log);
        fs::write(&log, "one\ntwo\nthree\n2024 [ERROR] unknown variable 'foo=1'\n2024 [ERROR] Aborting\n").unwrap();
        assert_eq!(log_tail(&log, pos, 2), "2024 [ERROR] unknown variable 'foo=1'\n2024 [ERROR] Aborting");
        assert_eq!(log_tail(&log, 0, 100).lines().count(), 5);
        assert_eq!(log_tail(&log, 10_000, 1), "2024 [ERROR] Aborting", "a shorter log is read from its start");
        assert_eq!(last_error_line(&read_log_from(&log, 0)), "2024 [ERROR] unknown variable 'foo=1'");
        // A full disk (what MariaDB 10.11 logs when its datadir's disk is full).
        let full = "0 [Note] InnoDB: 128 rollback segments are active.\n\
            0 [ERROR] mariadbd: Error writing file './ddl_recovery.log' (Errcode: 28 \"No space left on device\")\n\
            0 [ERROR] Unknown/unsupported storage engine: InnoDB\n\
            0 [ERROR] Aborting\n\
            0 [ERROR] mariadbd: Error on close of '(null)' (Errcode: 9 \"Bad file descriptor\")\n";
        assert_eq!(
            last_error_line(full),
            "0 [ERROR] mariadbd: Error writing file './ddl_recovery.log' (Errcode: 28 \"No space left on device\")"
        );
        assert_eq!(
            last_error_line(
                "0 [ERROR] unknown option '--x'\n0 [ERROR] Aborting\n0 [ERROR] Error on close of '(null)'\n"
            ),
            "0 [ERROR] unknown option '--x'"
        );
        assert_eq!(log_tail(&fx.dir.join("missing"), 0, 5), "");
        assert!(is_port_conflict(
            "[ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use"
        ));
        assert!(is_port_conflict("LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use"));
        assert!(is_socket_conflict("[ERROR] Can't start server : Bind on unix socket: Address already in use"));
        assert!(!is_socket_conflict("[ERROR] Can't start server: Bind on TCP/IP port"));
    }

    #[test]
    fn ports_are_free_and_in_range() {
        for _ in 0..20 {
            let p = pick_port().unwrap();
            assert!((PORT_FIRST..=PORT_LAST).contains(&p));
        }
        assert_eq!(shell_quote("--mysql-socket=/tmp/a.sock"), "--mysql-socket=/tmp/a.sock");
        assert_eq!(shell_quote("a b'c"), r"'a b'\''c'");
    }

    #[test]
    fn missing_basedir_programs_are_named() {
        let fx = Fixture::new("bd");
        for kind in [ServerKind::Mariadb, ServerKind::Mysql, ServerKind::Postgresql] {
            let spec = ServerSpec { basedir: Some(fx.dir.clone()), ..ServerSpec::new(kind) };
            let e = Programs::find(&spec).unwrap_err();
            assert!(e.contains("not found in") && e.contains(&fx.dir.display().to_string()), "{e}");
        }
    }
}
