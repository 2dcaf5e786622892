//! Initialise: creating a server's data directory.

use super::layout::{config_file, is_empty_dir, make_dir, mysql_option_args, option_args, Layout};
use super::process::{
    check_reachable, check_readable, chown_tree, detached_command, pick_port, run_bounded, server_account,
};
use super::programs::{mysql_leading_args, Flavor, Programs};
use super::{ManagedServer, ServerKind, ServerSpec};
use crate::secret::Secret;
use anyhow::{anyhow, bail, Context};
use std::fs;
use std::path::{Path, PathBuf};

/// Checks, without starting anything, that `spec`'s programs exist and its
/// options are acceptable: the lab calls this for every configuration
/// before the first run, so a missing binary stops the experiment at once
/// with a line naming it, instead of failing every run.
pub fn check(spec: &ServerSpec) -> anyhow::Result<()> {
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
pub fn initialize(spec: &ServerSpec, datadir: &Path, rundir: &Path, tcp_password: &Secret) -> anyhow::Result<()> {
    option_args(spec)?;
    let config = config_file(spec)?;
    let existed = datadir.exists();
    if existed && !is_empty_dir(datadir) {
        bail!("datadir {} is not empty; initialise into a new or empty directory", datadir.display());
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
pub(super) fn run_dir(kind: ServerKind, rundir: &Path, account: Option<(u32, u32)>) -> anyhow::Result<PathBuf> {
    crate::safe_fs::server_dir(rundir, account, "run directory").map_err(anyhow::Error::msg)?;
    let rundir =
        fs::canonicalize(rundir).with_context(|| format!("cannot resolve run directory {}", rundir.display()))?;
    if let Some(acc) = account {
        check_reachable(kind, acc, &rundir.join("x"))?;
    }
    Ok(rundir)
}

/// Checks the server's OS user reaches its programs, datadir and config
/// file, and gives it the datadir.
pub(super) fn hand_over(
    kind: ServerKind,
    account: Option<(u32, u32)>,
    progs: &Programs,
    datadir: &Path,
    config: Option<&Path>,
) -> anyhow::Result<()> {
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
) -> anyhow::Result<()> {
    // A fresh log per initialisation: it is read only when this one fails.
    drop(crate::safe_fs::create_truncate(&layout.init_log, 0o600).map_err(anyhow::Error::msg)?);
    let d = datadir.display();
    if progs.flavor != Flavor::Postgresql {
        crate::safe_fs::server_dir(&layout.tmpdir, account, "temporary directory").map_err(anyhow::Error::msg)?;
    }
    hand_over(spec.kind, account, progs, datadir, config)?;
    match progs.flavor {
        Flavor::Mariadb => {
            let mut cmd = detached_command(&progs.init, &layout.init_log, account)?;
            if let Some(cpus) = &spec.init_cpus {
                cpus.apply_to(&mut cmd);
            }
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
            if let Some(cpus) = &spec.init_cpus {
                cpus.apply_to(&mut cmd);
            }
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
            if let Some(cpus) = &spec.init_cpus {
                cpus.apply_to(&mut cmd);
            }
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
                let text = fs::read_to_string(f).with_context(|| format!("cannot read config file {}", f.display()))?;
                let conf = datadir.join("postgresql.conf");
                let mut out = crate::safe_fs::open_append(&conf).map_err(|e| anyhow!("cannot write {e}"))?;
                std::io::Write::write_all(
                    &mut out,
                    format!("\n# appended by dbbench from {}\n{text}\n", f.display()).as_bytes(),
                )
                .with_context(|| format!("cannot write {}", conf.display()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::server::tests::*;

    #[test]
    fn initialize_refuses_a_non_empty_datadir() {
        let fx = Fixture::new("ne");
        fs::write(fx.dir.join("file"), "x").unwrap();
        let e = format!("{:#}", initialize(&spec(ServerKind::Mariadb), &fx.dir, &fx.dir, &password()).unwrap_err());
        assert!(e.contains("not empty"), "{e}");
        let e = format!("{:#}", ManagedServer::start(&spec(ServerKind::Postgresql), &fx.dir, &fx.dir).err().unwrap());
        assert!(e.contains("not an initialised") || e.contains("not found"), "{e}");
    }
}
