//! The host lock: one measuring `lab run` per host unless asked otherwise.
//!
//! Two labs on one host share its CPUs, memory and disks: each measures the
//! other's load as its own. So a `lab run` holds a lock for its whole life,
//! and a second one is refused, naming the first; `--allow-concurrent` runs
//! anyway and the experiment records it (the report warns).
//!
//! Two files, locked with flock(2) (released by the kernel when the process
//! dies, whatever kills it; opened close-on-exec, so no server or child
//! inherits them):
//! * `lab.lock`: a default lab holds it exclusively; a second default lab
//!   cannot take it and is refused.
//! * `lab.present`: every lab holds it shared, whether it may run beside
//!   others or not. A default lab is also refused while another holds it (a
//!   lab started with `--allow-concurrent`), and every lab looks at its
//!   holders before and after each run: any other is a lab measuring beside
//!   it, and is recorded.
//!
//! Where they live matters more than how they are locked: a lock in a
//! directory every user can write (`/tmp`, `/run/lock`) is made first by
//! whoever wants to control it, as a symlink to a file of root's or as a
//! file nobody else may open. So the lock directory is `/run/dbbench`, made
//! by the first lab that runs as root: the directory root's and 0755, the
//! files root's and 0644. Only root can create, replace or redirect them;
//! every user's lab can open them read-only, which is all flock needs. A
//! directory or file that is not root's (or the user's own), that others may
//! write, or that is a symlink is refused, never used. A lab run by another
//! user can hold the lock too (it is measuring on this host); the refusal
//! names its pid and user.
//!
//! Without root, until a root lab has made `/run/dbbench`, the lock is the
//! user's own (`$XDG_RUNTIME_DIR/dbbench`): it serialises that user's labs
//! only. `DBBENCH_LAB_LOCK_DIR` names another directory (tests, hosts without
//! `/run`); the same checks apply to it.

use anyhow::{anyhow, bail, Context};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};

/// The host-wide lock directory, made by a lab run as root.
pub const SYSTEM_DIR: &str = "/run/dbbench";
/// Overrides the lock directory.
pub const DIR_ENV: &str = "DBBENCH_LAB_LOCK_DIR";
const EXCLUSIVE: &str = "lab.lock";
const PRESENT: &str = "lab.present";

/// Another process holding one of the lock files.
#[derive(Clone, Debug, PartialEq)]
pub struct Holder {
    /// Its pid (0 when it is in another pid namespace).
    pub pid: u32,
    /// Its user's name (or `uid N`).
    pub user: String,
    /// Its command line, passwords hidden, at most 200 bytes.
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} (user {}): {}", self.pid, self.user, self.command)
    }
}

/// The lock a lab holds until it is dropped.
pub struct HostLock {
    dir: PathBuf,
    /// Locked exclusively by a default lab only; open in every lab, to see its holder.
    exclusive: File,
    /// Held shared by every lab; its other holders are labs beside this one.
    present: File,
}

impl HostLock {
    /// The directory of the lock files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Other processes holding either lock file now: labs measuring on this
    /// host beside this one.
    pub fn others(&self) -> Vec<Holder> {
        let me = std::process::id();
        let mut pids = lock_holders(&self.present);
        pids.extend(lock_holders(&self.exclusive));
        pids.sort_unstable();
        pids.dedup();
        pids.into_iter().filter(|&p| p != me).map(describe).collect()
    }
}

/// What `acquire` found.
pub enum Acquired {
    /// The lock, and the labs running beside this one (empty unless
    /// `allow_concurrent`).
    Held(HostLock, Vec<Holder>),
    /// No lock directory could be used (a user without `/run/dbbench` or a
    /// runtime directory): why.
    Unavailable(String),
}

/// Takes the host lock. A default lab (`allow_concurrent` false) is refused
/// while another lab holds it, with one line naming that lab; with
/// `allow_concurrent` the labs already running are returned instead.
pub fn acquire(allow_concurrent: bool) -> anyhow::Result<Acquired> {
    let (dir, create) = match lock_dir() {
        Ok(d) => d,
        Err(why) => return Ok(Acquired::Unavailable(why)),
    };
    let present = open_in(&dir, PRESENT, create)?;
    let exclusive = open_in(&dir, EXCLUSIVE, create)?;
    let refuse = |holders: Vec<Holder>| {
        let who = if holders.is_empty() {
            "a process that has ended since".to_string()
        } else {
            holders.iter().map(|h| h.to_string()).collect::<Vec<_>>().join("; ")
        };
        Err(anyhow!(
            "another lab run is measuring on this host ({who}); two labs side by side measure each other's load. Wait for it to end, or run anyway with --allow-concurrent (recorded, and flagged in the report). Lock: {}",
            dir.join(EXCLUSIVE).display()
        ))
    };
    if allow_concurrent {
        flock(&present, libc::LOCK_SH)?;
        let lock = HostLock { dir, exclusive, present };
        let others = lock.others();
        return Ok(Acquired::Held(lock, others));
    }
    if !flock(&exclusive, libc::LOCK_EX)? {
        return refuse(held_by(&exclusive).into_iter().map(describe).collect());
    }
    // A lab started with --allow-concurrent holds only `present`.
    let me = std::process::id();
    let beside: Vec<Holder> = lock_holders(&present).into_iter().filter(|&p| p != me).map(describe).collect();
    if !beside.is_empty() {
        return refuse(beside);
    }
    flock(&present, libc::LOCK_SH)?;
    Ok(Acquired::Held(HostLock { dir, exclusive, present }, Vec::new()))
}

/// The lock directory and whether this process may create it and its files.
fn lock_dir() -> Result<(PathBuf, bool), String> {
    if let Some(d) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok((PathBuf::from(d), true));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok((PathBuf::from(SYSTEM_DIR), true));
    }
    let system = Path::new(SYSTEM_DIR);
    if system.join(EXCLUSIVE).exists() && system.join(PRESENT).exists() {
        return Ok((system.to_path_buf(), false));
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => Ok((PathBuf::from(d).join("dbbench"), true)),
        None => Err(format!(
            "{SYSTEM_DIR} does not exist yet (the first lab run as root makes it) and XDG_RUNTIME_DIR is not set"
        )),
    }
}

/// Opens `dir/name` read-only without following a symlink, after checking
/// that `dir` and the file are root's or ours and not writable by others;
/// with `create`, makes a missing directory (0755) and file (0644).
fn open_in(dir: &Path, name: &str, create: bool) -> anyhow::Result<File> {
    let at = |what: &Path| format!("host lock {}", what.display());
    let fail = |what: &Path, why: &str| anyhow!("{why}").context(at(what));
    if create {
        use std::os::unix::fs::DirBuilderExt;
        match std::fs::DirBuilder::new().mode(0o755).create(dir) {
            Ok(()) => {
                // The umask may have taken bits away: other users' labs must reach the files.
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).with_context(|| at(dir))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).context("cannot create it").with_context(|| at(dir)),
        }
    }
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| fail(dir, "a NUL in the path"))?;
    // SAFETY: a NUL-terminated path; the descriptor is owned by `dir_file` below.
    let dfd =
        unsafe { libc::open(c_dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if dfd < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::ENOTDIR) {
            return Err(fail(
                dir,
                "is a symbolic link or not a directory; remove it (nobody but root should be able to make it)",
            ));
        }
        return Err(e).with_context(|| at(dir));
    }
    // SAFETY: `dfd` is an open descriptor nothing else owns.
    let dir_file = unsafe { File::from_raw_fd(dfd) };
    check_owner(&dir_file, dir, true)?;
    let c_name = std::ffi::CString::new(name).expect("no NUL in a constant");
    let mut flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
    if create {
        flags |= libc::O_CREAT;
    }
    let path = dir.join(name);
    // SAFETY: `dfd` is open (owned by `dir_file`, alive here), the name is NUL-terminated.
    let fd = unsafe { libc::openat(dfd, c_name.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ELOOP) {
            return Err(fail(&path, "is a symbolic link; remove it (nobody but root should be able to make it)"));
        }
        return Err(e).with_context(|| at(&path));
    }
    // SAFETY: `fd` is an open descriptor nothing else owns.
    let file = unsafe { File::from_raw_fd(fd) };
    let meta = file.metadata().with_context(|| at(&path))?;
    if !meta.file_type().is_file() {
        return Err(fail(&path, "is not a regular file; remove it"));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if create && meta.uid() == me && meta.mode() & 0o777 != 0o644 {
        // Just made (the umask) or left by an older run: other users' labs must open it.
        use std::os::unix::fs::PermissionsExt;
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    check_owner(&file, &path, false)?;
    Ok(file)
}

/// Refuses a lock directory or file that is neither root's nor ours, or
/// that group or others may write: another user could replace or redirect it.
fn check_owner(f: &File, path: &Path, is_dir: bool) -> anyhow::Result<()> {
    let meta = f.metadata().with_context(|| format!("host lock {}", path.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let what = if is_dir { "directory" } else { "file" };
    if meta.uid() != 0 && meta.uid() != me {
        bail!(
            "host lock {}: the {what} belongs to uid {}, not to root or to you: another user may have made it to control the lab's lock; remove it",
            path.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "host lock {}: the {what} is writable by {} (mode {:o}): another user could replace the lock; remove it or chmod go-w",
            path.display(),
            if meta.mode() & 0o002 != 0 { "every user" } else { "its group" },
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// flock without waiting: true when taken, false when another holds it.
fn flock(f: &File, how: libc::c_int) -> anyhow::Result<bool> {
    loop {
        // SAFETY: `f` is an open descriptor for the duration of the call.
        if unsafe { libc::flock(f.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e).context("host lock: flock"),
        }
    }
}

/// Pids holding a flock(2) on the file of `f` (from /proc/locks; waiting
/// requests, `->`, are not holders).
fn lock_holders(f: &File) -> Vec<u32> {
    let Ok(meta) = f.metadata() else { return Vec::new() };
    holders_in(&proc_locks(), meta.dev(), meta.ino())
}

/// [`lock_holders`] of a lock that is held (our `flock` just failed): a
/// few tries before concluding that its holder has ended. The kernel lists
/// the locks a read(2) at a time, and between two reads locks taken or
/// released elsewhere (a busy SQLite store's) shift the list, so that a
/// line can be skipped; a refusal then named nobody while the other lab
/// ran on.
fn held_by(f: &File) -> Vec<u32> {
    for _ in 0..5 {
        let pids = lock_holders(f);
        if !pids.is_empty() {
            return pids;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Vec::new()
}

/// /proc/locks, read in chunks of 1 MiB (one read for all but a host with
/// thousands of locks).
fn proc_locks() -> String {
    use std::io::Read;
    let Ok(mut f) = File::open("/proc/locks") else { return String::new() };
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The pids of the FLOCK lines of `text` (/proc/locks) on inode `ino` of device `dev`.
fn holders_in(text: &str, dev: u64, ino: u64) -> Vec<u32> {
    let mut pids = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"
        if fields.len() < 6 || fields[1] != "FLOCK" {
            continue;
        }
        let mut id = fields[5].split(':');
        let (Some(major), Some(minor), Some(inode)) = (id.next(), id.next(), id.next()) else { continue };
        let (Ok(major), Ok(minor), Ok(inode)) =
            (u32::from_str_radix(major, 16), u32::from_str_radix(minor, 16), inode.parse::<u64>())
        else {
            continue;
        };
        if inode == ino && major == libc::major(dev) && minor == libc::minor(dev) {
            if let Ok(pid) = fields[4].parse() {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Who a pid is, for messages and the store.
fn describe(pid: u32) -> Holder {
    let uid = std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|s| {
        s.lines().find_map(|l| l.strip_prefix("Uid:").and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok()))
    });
    let user = uid.map(|u| user_name(u).unwrap_or_else(|| format!("uid {u}"))).unwrap_or_else(|| "unknown".into());
    let args: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            c.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
        })
        .unwrap_or_default();
    let mut command = crate::secret::redact(&crate::secret::redact_args(&args).join(" "));
    if command.is_empty() {
        command = "(command line not readable)".into();
    }
    if command.len() > 200 {
        let mut end = 200;
        while !command.is_char_boundary(end) {
            end -= 1;
        }
        command.truncate(end);
        command.push_str("...");
    }
    Holder { pid, user, command }
}

fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        (f.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The FLOCK lines on one inode, not POSIX locks, waiters or other files.
    #[test]
    fn holders_are_read_from_the_flock_lines_of_the_inode() {
        let dev = libc::makedev(0x103, 0x2a);
        let text = "1: POSIX  ADVISORY  WRITE 77 103:2a:5678 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 1234 103:2a:5678 0 EOF\n\
                    2: -> FLOCK  ADVISORY  WRITE 99 103:2a:5678 0 EOF\n\
                    3: FLOCK  ADVISORY  READ 4321 103:2a:5678 0 EOF\n\
                    4: FLOCK  ADVISORY  WRITE 555 103:2a:9999 0 EOF\n\
                    5: FLOCK  ADVISORY  WRITE 666 fd:01:5678 0 EOF\n";
        assert_eq!(holders_in(text, dev, 5678), [1234, 4321]);
        assert!(holders_in("", dev, 5678).is_empty());
    }

    /// A fresh directory, 0755 like the system's lock directory.
    fn tempdir(tag: &str) -> crate::safe_fs::TestDir {
        let d = crate::safe_fs::TestDir::new(&format!("hostlock-{tag}"));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn files_are_made_readable_by_all_and_writable_by_the_owner_only() {
        let t = tempdir("modes");
        let d = t.join("lock");
        let f = open_in(&d, EXCLUSIVE, true).unwrap();
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o644);
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o755);
        // Opening again (another lab) uses the same file.
        let g = open_in(&d, EXCLUSIVE, false).unwrap();
        assert_eq!(f.metadata().unwrap().ino(), g.metadata().unwrap().ino());
    }

    #[test]
    fn a_held_lock_names_its_holder_and_a_released_one_is_free() {
        let d = tempdir("holders");
        let f = open_in(&d, EXCLUSIVE, true).unwrap();
        assert!(flock(&f, libc::LOCK_EX).unwrap());
        // Another open file description of the same file conflicts, as another process would.
        let g = open_in(&d, EXCLUSIVE, false).unwrap();
        assert!(!flock(&g, libc::LOCK_EX).unwrap());
        assert_eq!(lock_holders(&g), vec![std::process::id()]);
        let h = describe(std::process::id());
        assert!(h.command.contains("dbbench"), "{h:?}");
        drop(f);
        assert!(flock(&g, libc::LOCK_EX).unwrap());
    }

    #[test]
    fn a_symlinked_lock_file_or_directory_is_refused_not_followed() {
        let d = tempdir("symlink");
        let target = d.join("target");
        std::fs::write(&target, b"precious").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let lockdir = d.join("lock");
        std::fs::create_dir(&lockdir).unwrap();
        std::os::unix::fs::symlink(&target, lockdir.join(EXCLUSIVE)).unwrap();
        let e = format!("{:#}", open_in(&lockdir, EXCLUSIVE, true).unwrap_err());
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let linked = d.join("linked");
        std::os::unix::fs::symlink(&lockdir, &linked).unwrap();
        let e = format!("{:#}", open_in(&linked, PRESENT, true).unwrap_err());
        assert!(e.contains("symbolic link"), "{e}");
    }

    #[test]
    fn a_lock_directory_or_file_others_may_write_is_refused() {
        let d = tempdir("writable");
        let lockdir = d.join("lock");
        std::fs::create_dir(&lockdir).unwrap();
        std::fs::set_permissions(&lockdir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = format!("{:#}", open_in(&lockdir, EXCLUSIVE, true).unwrap_err());
        assert!(e.contains("writable by every user"), "{e}");
        std::fs::set_permissions(&lockdir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = lockdir.join(EXCLUSIVE);
        std::fs::write(&file, b"").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        // A lab that may not create the files (another user's) refuses it;
        // its owner's lab sets it back to 0644.
        let e = format!("{:#}", open_in(&lockdir, EXCLUSIVE, false).unwrap_err());
        assert!(e.contains("writable by every user"), "{e}");
        let f = open_in(&lockdir, EXCLUSIVE, true).unwrap();
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o644);
    }

    #[test]
    fn a_lock_directory_or_file_of_another_user_is_refused() {
        if !is_root() {
            eprintln!("skipped: needs root to give files to another user");
            return;
        }
        let d = tempdir("owner");
        let lockdir = d.join("lock");
        std::fs::create_dir(&lockdir).unwrap();
        std::os::unix::fs::chown(&lockdir, Some(65534), Some(65534)).unwrap();
        let e = format!("{:#}", open_in(&lockdir, EXCLUSIVE, true).unwrap_err());
        assert!(e.contains("belongs to uid 65534"), "{e}");
        std::os::unix::fs::chown(&lockdir, Some(0), Some(0)).unwrap();
        let file = lockdir.join(PRESENT);
        std::fs::write(&file, b"").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let e = format!("{:#}", open_in(&lockdir, PRESENT, true).unwrap_err());
        assert!(e.contains("belongs to uid 65534"), "{e}");
    }
}
