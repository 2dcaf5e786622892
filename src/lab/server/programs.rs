//! Programs: finding a kind's server binaries and tools.

use std::os::unix::fs::PermissionsExt;

use super::{ServerKind, ServerSpec};
use anyhow::{anyhow, bail};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a found server binary actually is: kind `mysql` may find MariaDB's `mysqld`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    Mariadb,
    Mysql,
    Postgresql,
}

/// The programs a spec needs, resolved to paths.
#[derive(Debug)]
pub(super) struct Programs {
    /// `mariadbd`, `mysqld` or `postgres`.
    pub(super) server: PathBuf,
    /// `mariadb-install-db`, `mysqld` (with `--initialize-insecure`) or `initdb`.
    pub(super) init: PathBuf,
    pub(super) flavor: Flavor,
}

impl Programs {
    pub(super) fn find(spec: &ServerSpec) -> anyhow::Result<Programs> {
        if let Some(b) = &spec.basedir {
            if !b.is_dir() {
                bail!("basedir {} is not a directory; set basedir to an unpacked tarball or build tree", b.display());
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
                    return Err(anyhow!(spec.kind.mismatch(&server, &p)));
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

fn find_server_program(spec: &ServerSpec, names: &[&str], install_hint: &str) -> anyhow::Result<PathBuf> {
    match &spec.basedir {
        Some(b) => {
            let dirs = [b.join("bin"), b.join("sbin"), b.join("libexec")];
            find_exe(&dirs, names).ok_or_else(|| {
                anyhow!(
                    "{} not found in {}/bin, sbin or libexec; basedir must be an unpacked {} tarball or build tree",
                    names[0],
                    b.display(),
                    spec.kind.label()
                )
            })
        }
        None => find_exe(&installed_dirs(), names).ok_or_else(|| {
            anyhow!("{} not found in PATH or /usr/sbin; install it with: {install_hint}, or set basedir", names[0])
        }),
    }
}

fn find_mariadb_install_db(spec: &ServerSpec) -> anyhow::Result<PathBuf> {
    let names = ["mariadb-install-db", "mysql_install_db"];
    match &spec.basedir {
        Some(b) => find_exe(&[b.join("scripts"), b.join("bin")], &names).ok_or_else(|| {
            anyhow!("mariadb-install-db (or mysql_install_db) not found in {}/scripts or bin; basedir must be an unpacked MariaDB tarball or build tree", b.display())
        }),
        None => find_exe(&installed_dirs(), &names).ok_or_else(|| {
            anyhow!(
                "mariadb-install-db not found in PATH or /usr/bin; install it with: apt-get install -y mariadb-server, or set basedir"
            )
        }),
    }
}

/// The arguments a MariaDB/MySQL server or installer takes first:
/// `--defaults-file`/`--no-defaults` (which must lead) and `--basedir`. No
/// `--user`: the process is started as the server's OS user already
/// (`server_account`), never as root.
pub(super) fn mysql_leading_args(spec: &ServerSpec, config: Option<&Path>) -> Vec<String> {
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
fn find_postgresql(spec: &ServerSpec) -> anyhow::Result<Programs> {
    let both = |d: &Path| is_executable(&d.join("postgres")) && is_executable(&d.join("initdb"));
    let dir = match &spec.basedir {
        Some(b) => {
            let d = b.join("bin");
            if !both(&d) {
                bail!(
                    "postgres and initdb not found in {}; basedir must hold a PostgreSQL installation (bin/postgres, bin/initdb)",
                    d.display()
                );
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
                anyhow!("PostgreSQL server programs (postgres, initdb) not found in PATH or /usr/lib/postgresql/*/bin; install them with: apt-get install -y postgresql, or set basedir")
            })?
        }
    };
    Ok(Programs { server: dir.join("postgres"), init: dir.join("initdb"), flavor: Flavor::Postgresql })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::server::tests::*;

    #[test]
    fn missing_basedir_programs_are_named() {
        let fx = Fixture::new("bd");
        for kind in [ServerKind::Mariadb, ServerKind::Mysql, ServerKind::Postgresql] {
            let spec = ServerSpec { basedir: Some(fx.dir.clone()), ..ServerSpec::new(kind) };
            let e = format!("{:#}", Programs::find(&spec).unwrap_err());
            assert!(e.contains("not found in") && e.contains(&fx.dir.display().to_string()), "{e}");
        }
    }
}
