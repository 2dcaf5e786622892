//! Layout and options: where a managed server's files go; its options as arguments.

use super::{ServerKind, ServerSpec, FILES_DIR, MAX_SOCKET_PATH, PG_SOCKET_DIR};
use anyhow::{anyhow, bail, Context};
use std::fs;
use std::path::{Path, PathBuf};

/// Files of a server inside its run directory, named after the kind.
pub(super) struct Layout {
    /// MariaDB/MySQL: the socket file; PostgreSQL: the socket directory.
    pub(super) socket: PathBuf,
    /// MariaDB/MySQL pid file (PostgreSQL keeps `postmaster.pid` in the datadir).
    pub(super) pid_file: PathBuf,
    /// The server's error log.
    pub(super) log: PathBuf,
    /// Output of the datadir initialisation.
    pub(super) init_log: PathBuf,
    /// MariaDB/MySQL `secure_file_priv`.
    pub(super) files: PathBuf,
    /// MariaDB/MySQL `--tmpdir`, private to this run directory: bootstraps
    /// and servers sharing the default /tmp clash on their temporary tables'
    /// file names (concurrent `mariadb-install-db` runs failed with "Unknown
    /// table 'mysql.tmp_proxies_priv'").
    pub(super) tmpdir: PathBuf,
}

impl Layout {
    pub(super) fn new(kind: ServerKind, rundir: &Path) -> Layout {
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
    pub(super) fn check_socket_length(&self, kind: ServerKind) -> anyhow::Result<()> {
        let longest = match kind {
            ServerKind::Postgresql => self.socket.join(".s.PGSQL.65535"),
            _ => self.socket.clone(),
        };
        let len = longest.as_os_str().len();
        if len >= MAX_SOCKET_PATH {
            bail!(
                "socket path {} is {len} bytes, over the ~{MAX_SOCKET_PATH}-byte limit of unix socket paths; use a shorter run directory",
                longest.display()
            );
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
pub(super) fn mysql_option_args(options: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for o in options.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
        let arg = if o.starts_with('-') { o.to_string() } else { format!("--{o}") };
        let name = arg.trim_start_matches('-').split('=').next().unwrap_or("").replace('_', "-");
        let name = name.strip_prefix("loose-").unwrap_or(&name);
        if MYSQL_MANAGED_OPTIONS.contains(&name) {
            bail!(
                "server option {arg} is managed by dbbench (private datadir, socket and port); remove it from the options"
            );
        }
        out.push(arg);
    }
    Ok(out)
}

/// The spec's PostgreSQL settings as `-c name=value` argument pairs.
fn pg_option_args(options: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for o in options.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
        let setting = o.trim_start_matches('-');
        let Some((name, _)) = setting.split_once('=') else {
            bail!("PostgreSQL server option '{o}' is not name=value (e.g. shared_buffers=1GB)");
        };
        let name = name.trim().to_ascii_lowercase().replace('-', "_");
        if PG_MANAGED_SETTINGS.contains(&name.as_str()) {
            bail!(
                "server option {o} is managed by dbbench (private datadir, socket and port); remove it from the options"
            );
        }
        out.push("-c".to_string());
        out.push(setting.to_string());
    }
    Ok(out)
}

/// The spec's options as arguments for its kind (validates them).
pub(super) fn option_args(spec: &ServerSpec) -> anyhow::Result<Vec<String>> {
    if spec.kind.is_mysql_family() {
        mysql_option_args(&spec.options)
    } else {
        pg_option_args(&spec.options)
    }
}

/// The spec's config file as an absolute path (servers run with cwd `/`).
pub(super) fn config_file(spec: &ServerSpec) -> anyhow::Result<Option<PathBuf>> {
    match &spec.config_file {
        None => Ok(None),
        Some(f) => fs::canonicalize(f)
            .map(Some)
            .map_err(|e| anyhow!("{e}; give an existing file"))
            .with_context(|| format!("config file {}", f.display())),
    }
}

/// Creates a directory if needed and returns its absolute, symlink-free
/// path (pids are matched against command lines by path).
pub(super) fn make_dir(dir: &Path, what: &str) -> anyhow::Result<PathBuf> {
    crate::safe_fs::lab_dir_all(dir).with_context(|| format!("cannot create {what} {}", dir.display()))?;
    fs::canonicalize(dir).with_context(|| format!("cannot resolve {what} {}", dir.display()))
}

/// Whether a datadir has been initialised for this kind.
pub(super) fn is_initialised(kind: ServerKind, datadir: &Path) -> bool {
    match kind {
        ServerKind::Postgresql => datadir.join("PG_VERSION").is_file(),
        _ => datadir.join("mysql").is_dir(),
    }
}

pub(super) fn is_empty_dir(dir: &Path) -> bool {
    fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_get_their_dashes_and_managed_ones_are_refused() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            mysql_option_args(&v(&["key_buffer_size=512M", "--innodb-buffer-pool-size=1G", " ", "-O"])).unwrap(),
            v(&["--key_buffer_size=512M", "--innodb-buffer-pool-size=1G", "-O"])
        );
        for bad in ["--port=3306", "socket=/tmp/s", "--loose_pid_file=x", "--datadir=/d", "--user=mysql"] {
            let e = format!("{:#}", mysql_option_args(&v(&[bad])).unwrap_err());
            assert!(e.contains("managed by dbbench"), "{e}");
        }
        assert_eq!(
            pg_option_args(&v(&["shared_buffers=1GB", "--work-mem=8MB"])).unwrap(),
            v(&["-c", "shared_buffers=1GB", "-c", "work-mem=8MB"])
        );
        assert!(format!("{:#}", pg_option_args(&v(&["fsync"])).unwrap_err()).contains("not name=value"));
        assert!(format!("{:#}", pg_option_args(&v(&["Port=5"])).unwrap_err()).contains("managed by dbbench"));
    }

    #[test]
    fn socket_paths_too_long_are_refused() {
        let long = PathBuf::from(format!("/tmp/{}", "x".repeat(90)));
        for kind in [ServerKind::Mariadb, ServerKind::Postgresql] {
            let e = format!("{:#}", Layout::new(kind, &long).check_socket_length(kind).unwrap_err());
            assert!(e.contains("shorter run directory"), "{e}");
        }
        Layout::new(ServerKind::Postgresql, Path::new("/tmp/dbb")).check_socket_length(ServerKind::Postgresql).unwrap();
    }
}
