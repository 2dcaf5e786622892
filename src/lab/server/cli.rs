//! `dbbench server`.

use super::admin::shell_quote;
use super::init::{check, initialize};
use super::layout::{is_empty_dir, is_initialised};
use super::process::process_matches;
use super::{ManagedServer, ServerKind, ServerSpec, DEFAULT_CLI_TIMEOUT, PASSWORD_FILE, STATE_FILE};
use crate::exit::Exit;
use crate::lab::cpus::CpuSet;
use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// What `dbbench server start` leaves in DIR/server.json for later calls.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct ServerState {
    pub(super) kind: ServerKind,
    pub(super) pid: u32,
    pub(super) socket: PathBuf,
    pub(super) port: u16,
    pub(super) datadir: PathBuf,
    pub(super) rundir: PathBuf,
    pub(super) log: PathBuf,
    pub(super) timeout_secs: u64,
    /// Set by `dbbench server stop`: a dead pid is then "stopped", not "crashed".
    pub(super) stopped: bool,
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
        /// Run the server (and its initialisation) on these CPUs, a kernel CPU list such as 0 or 0-3,6
        /// (sched_setaffinity; memory placement is not set) [not pinned]
        #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
        cpus: Option<CpuSet>,
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
        Err(e) => crate::subcommand::failed("server", &e),
    }
}

/// `dbbench server ARGS...` as parsed and run (the tests' entry point).
#[cfg(test)]
fn cli(args: &[String]) -> anyhow::Result<ExitCode> {
    use crate::subcommand::{try_parse, Stop};
    match try_parse::<Args>("server", args) {
        Ok(a) => run_action(a.action),
        Err(Stop::Usage(e) | Stop::Help(e) | Stop::HelpOnEmpty(e)) => Err(anyhow!(e)),
    }
}

fn run_action(action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::Start { kind, dir, basedir, config_file, timeout, superuser, cpus, server_options } => {
            let spec = ServerSpec {
                basedir,
                options: server_options,
                config_file,
                timeout: timeout.timeout.unwrap_or(DEFAULT_CLI_TIMEOUT),
                superuser,
                init_cpus: cpus.clone(),
                cpus,
                ..ServerSpec::new(kind)
            };
            cli_start(spec, &dir.dir)
        }
        Action::Stop { dir, timeout } => cli_stop(timeout.timeout, &dir.dir),
        Action::Status { dir } => cli_status(&dir.dir),
    }
}

/// `--cpus=LIST`: a kernel CPU list, checked against the CPUs online and
/// the ones this process may use.
fn parse_cpus(s: &str) -> Result<CpuSet, String> {
    CpuSet::parse_list(s)?.check_on_host().map_err(|e| format!("{e:#}"))
}

fn state_path(dir: &Path) -> PathBuf {
    dir.join(STATE_FILE)
}

fn read_state(dir: &Path) -> anyhow::Result<Option<ServerState>> {
    let path = state_path(dir);
    match fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            anyhow!(
                "{} is damaged ({e}); check for a server still running from {} and remove the file",
                path.display(),
                dir.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes the state through a temporary file, so a reader never sees half of it.
fn write_state(dir: &Path, state: &ServerState) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(state).context("cannot encode server state")?;
    crate::safe_fs::write_atomic(&state_path(dir), (text + "\n").as_bytes(), 0o644)
        .map_err(anyhow::Error::msg)
        .context("cannot write the server state")
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

fn cli_start(spec: ServerSpec, dir: &Path) -> anyhow::Result<ExitCode> {
    let kind = spec.kind;
    // Private; as root searchable, so the server's OS user reaches data/ and run/.
    crate::safe_fs::private_dir_all(dir, crate::safe_fs::lab_dir_mode(), "--dir").map_err(anyhow::Error::msg)?;
    let dir = fs::canonicalize(dir).with_context(|| format!("cannot resolve --dir {}", dir.display()))?;
    if let Some(st) = read_state(&dir)? {
        if !st.stopped && process_matches(st.pid, st.kind, &st.datadir) {
            bail!(
                "a {} server from {} is already running (pid {}); stop it with: dbbench server stop --dir {}",
                st.kind.label(),
                dir.display(),
                st.pid,
                shell_quote(&dir.to_string_lossy())
            );
        }
    }
    // Programs and product before anything is made (kind mysql on MariaDB's mysqld).
    check(&spec)?;
    let datadir = dir.join("data");
    let rundir = dir.join("run");
    if !datadir.exists() || is_empty_dir(&datadir) {
        eprintln!("dbbench server: initialising a {} datadir in {}", kind.label(), datadir.display());
        let t = Instant::now();
        let password = crate::secret::random_password().map_err(anyhow::Error::msg)?;
        crate::safe_fs::write_atomic(&dir.join(PASSWORD_FILE), password.expose().as_bytes(), 0o600)
            .map_err(anyhow::Error::msg)?;
        initialize(&spec, &datadir, &rundir, &password)?;
        eprintln!("dbbench server: initialised in {:.1} s", t.elapsed().as_secs_f64());
    } else if !is_initialised(kind, &datadir) {
        let other = [ServerKind::Mariadb, ServerKind::Postgresql].into_iter().find(|&k| is_initialised(k, &datadir));
        match other {
            Some(k) if !(k.is_mysql_family() && kind.is_mysql_family()) => bail!(
                "{} holds a {} datadir, not {}; use another --dir",
                datadir.display(),
                k.label(),
                kind.label()
            ),
            _ => bail!(
                "{} is neither empty nor an initialised {} datadir (a failed initialisation?); remove it and start again",
                datadir.display(),
                kind.label()
            ),
        }
    }
    let mut server = ManagedServer::start(&spec, &datadir, &rundir)?;
    if let Err(e) = write_state(&dir, &server.state()) {
        // Without its state nobody could stop it later: do not leave it running.
        let _ = server.stop();
        return Err(e);
    }
    println!("status=running");
    print_server(&server);
    if spec.cpus.is_some() {
        // What the kernel allows it, not what was asked.
        println!("cpus={}", crate::lab::cpus::allowed_list_of(server.pid()).unwrap_or_default());
    }
    let args: Vec<String> = server.driver_args().iter().map(|s| shell_quote(s)).collect();
    println!("dbbench_args={}", args.join(" "));
    println!("# e.g.: dbbench oltp_read_only {} prepare", args.join(" "));
    Ok(Exit::Ok.into())
}

fn cli_stop(timeout: Option<Duration>, dir: &Path) -> anyhow::Result<ExitCode> {
    let Some(mut st) = read_state(dir)? else {
        bail!("no {} in {}: no server was started there with dbbench server start --dir", STATE_FILE, dir.display());
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

fn cli_status(dir: &Path) -> anyhow::Result<ExitCode> {
    if !dir.is_dir() {
        bail!("--dir {} is not a directory", dir.display());
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
        Err(e) => println!("# version unavailable: {e:#}"),
    }
    Ok(Exit::Ok.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::server::tests::*;

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
        let again = format!("{:#}", cli(&args(&["start", "--kind", "postgresql", "--dir", &dir])).unwrap_err());
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
}
