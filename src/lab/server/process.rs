//! Processes: finding, signalling and running server processes, OS accounts, ports.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;

use super::logs::{file_len, last_error_line, read_log_from};
use super::{ServerKind, KILL_WAIT, POLL, PORT_FIRST, PORT_LAST};
use anyhow::{anyhow, bail, Context};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(super) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `pid` is a live (not zombie) process whose command line shows it
/// runs `kind` on `datadir`: MariaDB/MySQL `--datadir=D`, PostgreSQL `-D D`.
pub(super) fn process_matches(pid: u32, kind: ServerKind, datadir: &Path) -> bool {
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
pub(super) fn find_server_pid(kind: ServerKind, datadir: &Path) -> Option<u32> {
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
pub fn stop_processes_under(dir: &Path, timeout: Duration) -> anyhow::Result<Vec<String>> {
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
        bail!("could not stop {} (a process of another user?)", left.join(", "));
    }
    Ok(stopped)
}

pub(super) fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory preconditions; callers checked the pid is ours.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// uid and gid of an OS user.
pub(super) fn lookup_user(name: &str) -> Option<(u32, u32)> {
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
pub(super) fn server_account(kind: ServerKind) -> anyhow::Result<Option<(u32, u32)>> {
    if !is_root() {
        return Ok(None);
    }
    let (user, package) = match kind {
        ServerKind::Postgresql => ("postgres", "postgresql"),
        _ => ("mysql", "mariadb-server"),
    };
    lookup_user(user).map(Some).ok_or_else(|| {
        anyhow!(
            "dbbench runs {} as the '{user}' OS user, never as root, and there is none; create it (apt-get install -y {package} does, or useradd --system {user}) or run dbbench as an ordinary user",
            kind.label()
        )
    })
}

/// The name of a server's OS user, for messages.
pub(super) fn account_name(kind: ServerKind) -> &'static str {
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
pub(super) fn check_reachable(kind: ServerKind, account: (u32, u32), path: &Path) -> anyhow::Result<()> {
    let mut parents: Vec<&Path> = path.ancestors().skip(1).collect();
    parents.reverse();
    let user = account_name(kind);
    for dir in parents {
        let Ok(meta) = fs::metadata(dir) else { continue };
        if !may_search(&meta, account.0, account.1) {
            bail!(
                "the '{user}' OS user cannot enter {} (mode {:o}, owner uid {}), which leads to {}; dbbench runs {} as '{user}', never as root: use directories under /tmp or /var/tmp, or allow it with: chmod o+x {}",
                dir.display(),
                meta.mode() & 0o7777,
                meta.uid(),
                path.display(),
                kind.label(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// Checks a server's OS user can read `file` (a spec's config file the
/// server itself opens).
pub(super) fn check_readable(kind: ServerKind, account: (u32, u32), file: &Path) -> anyhow::Result<()> {
    check_reachable(kind, account, file)?;
    let meta = fs::metadata(file).with_context(|| format!("config file {}", file.display()))?;
    let mode = meta.mode();
    let readable = if meta.uid() == account.0 {
        mode & 0o400 != 0
    } else if meta.gid() == account.1 {
        mode & 0o040 != 0
    } else {
        mode & 0o004 != 0
    };
    if !readable {
        bail!(
            "the '{}' OS user cannot read config file {} (mode {:o}, owner uid {}); dbbench runs {} as that user: allow it with: chmod o+r {}",
            account_name(kind),
            file.display(),
            mode & 0o7777,
            meta.uid(),
            kind.label(),
            file.display()
        );
    }
    Ok(())
}

/// Gives a tree to uid/gid where it is not theirs yet (a datadir restored
/// by root, say). Symlinks are not followed.
pub(super) fn chown_tree(path: &Path, account: (u32, u32)) -> anyhow::Result<()> {
    let meta = fs::symlink_metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.uid() != account.0 || meta.gid() != account.1 {
        std::os::unix::fs::lchown(path, Some(account.0), Some(account.1))
            .with_context(|| format!("cannot give {} to uid {}", path.display(), account.0))?;
    }
    if meta.is_dir() {
        let entries = fs::read_dir(path).with_context(|| format!("cannot read {}", path.display()))?;
        for e in entries.flatten() {
            chown_tree(&e.path(), account)?;
        }
    }
    Ok(())
}

/// A command for a server or an initialisation program: own session (so it
/// outlives us and no terminal signal reaches it), stdin from /dev/null,
/// stdout and stderr appended to `log`, cwd `/`, optionally another account.
pub(super) fn detached_command(program: &Path, log: &Path, account: Option<(u32, u32)>) -> anyhow::Result<Command> {
    // The run directory belongs to the server's OS user: never follow a
    // symlink it could have put in the log's place.
    let out = crate::safe_fs::open_append(log).map_err(anyhow::Error::msg).context("cannot open log")?;
    if let Some((uid, gid)) = account {
        // The server reopens its log itself (MariaDB's --log-error).
        std::os::unix::fs::fchown(&out, Some(uid), Some(gid))
            .with_context(|| format!("cannot give log {} to uid {uid}", log.display()))?;
    }
    let err = out.try_clone().with_context(|| format!("cannot open log {}", log.display()))?;
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
pub(super) fn run_bounded(mut cmd: Command, what: &str, log: &Path, timeout: Duration) -> anyhow::Result<()> {
    let pos = file_len(log);
    let mut child = cmd.spawn().with_context(|| format!("cannot run {what}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                bail!("{what} failed ({status}): {}; log: {}", last_error_line(&read_log_from(log, pos)), log.display())
            }
            Ok(None) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot wait for {what}")),
        }
        if Instant::now() >= deadline {
            // The child leads its own session, so -pid is its process group: ours only.
            signal_group(child.id());
            let _ = child.wait();
            bail!(
                "{what} did not finish within {} s (killed it); raise the timeout or see the log: {}",
                timeout.as_secs(),
                log.display()
            );
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
pub(super) fn pick_port() -> anyhow::Result<u16> {
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
    Err(anyhow!("no free TCP port on 127.0.0.1 in {PORT_FIRST}-{PORT_LAST} after 500 tries"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::server::admin::shell_quote;

    #[test]
    fn ports_are_free_and_in_range() {
        for _ in 0..20 {
            let p = pick_port().unwrap();
            assert!((PORT_FIRST..=PORT_LAST).contains(&p));
        }
        assert_eq!(shell_quote("--mysql-socket=/tmp/a.sock"), "--mysql-socket=/tmp/a.sock");
        assert_eq!(shell_quote("a b'c"), r"'a b'\''c'");
    }
}
