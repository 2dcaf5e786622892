//! Files and directories dbbench creates, made so that another local user
//! cannot redirect them (docs/security.md).
//!
//! dbbench often runs as root on shared hosts. A directory it writes into
//! that someone else could create first, or write into, lets that user
//! plant a symlink (`mariadb.err -> /etc/shadow`) and have root overwrite
//! the target. So:
//! * a directory dbbench makes for itself is created private (0700; 0711
//!   where a server's OS account must pass through it) — and one that
//!   exists already is used only when it is ours (or a server account's we
//!   name) and nobody else can write into it: see [`private_dir`];
//! * a file is opened with `O_NOFOLLOW` (a symlink in its place is refused,
//!   never followed) and, where dbbench creates it fresh, `O_EXCL`;
//! * a file at a path the user named (an export, `--output`) is written to
//!   a fresh temporary file (`O_EXCL`, random name) renamed into place:
//!   `rename` replaces a symlink, it never writes through one.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The effective uid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Why dbbench refuses an existing directory, or None when it may use it:
/// a real directory (not a symlink), owned by us or by `also` (a server's
/// OS account), and writable by nobody else (no group or other write bit:
/// not even sticky, since others could still put their own files in it).
fn refusal(dir: &Path, meta: &fs::Metadata, also: Option<u32>) -> Option<String> {
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Some(format!("{} is not a directory (a symlink or a file is there)", dir.display()));
    }
    let owners = [Some(euid()), also, Some(0)];
    let owner_ok =
        if euid() == 0 { owners[..2].contains(&Some(meta.uid())) } else { owners.contains(&Some(meta.uid())) };
    if !owner_ok {
        return Some(format!(
            "{} belongs to uid {}, not to dbbench's user (uid {})",
            dir.display(),
            meta.uid(),
            euid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Some(format!("{} is writable by other users (mode {:o})", dir.display(), meta.mode() & 0o7777));
    }
    None
}

/// Makes sure `dir` is a directory only we (and `account`, a server's OS
/// user, when given) control: creates it with `mode` when missing (its
/// parent must exist), else checks the existing one (see `refusal`) and
/// refuses it with a line saying why and what to do. Returns the path.
///
/// `mode` is applied to a directory we create, and to an existing one of
/// ours whose mode is wider than `mode` allows nobody else to write into,
/// so a left-over 0755 run directory becomes private again.
pub fn private_dir(dir: &Path, mode: u32, what: &str) -> Result<PathBuf, String> {
    match fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {
            // The umask may have narrowed it; 0711 must stay searchable.
            fs::set_permissions(dir, fs::Permissions::from_mode(mode))
                .map_err(|e| format!("cannot set the mode of {what} {}: {e}", dir.display()))?;
            Ok(dir.to_path_buf())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta =
                fs::symlink_metadata(dir).map_err(|e| format!("cannot inspect {what} {}: {e}", dir.display()))?;
            if let Some(why) = refusal(dir, &meta, None) {
                return Err(format!(
                    "{what} {}: {why}; dbbench does not use a directory another user could control (a symlink planted there would redirect its writes): remove it or choose another",
                    dir.display()
                ));
            }
            Ok(dir.to_path_buf())
        }
        Err(e) => Err(format!("cannot create {what} {}: {e}", dir.display())),
    }
}

/// `private_dir` for a directory and every missing parent: parents dbbench
/// creates get `mode` too; existing ones are left as they are (they are
/// the user's), except that the last existing one must not be writable by
/// others unless sticky (else a new directory in it could be swapped).
pub fn private_dir_all(dir: &Path, mode: u32, what: &str) -> Result<PathBuf, String> {
    let (missing, p) = missing_dirs(dir);
    if !missing.is_empty() && fs::symlink_metadata(p).is_ok() {
        check_parent(p, what)?;
    }
    for m in missing.iter().rev() {
        private_dir(m, mode, what)?;
    }
    if missing.is_empty() {
        private_dir(dir, mode, what)?;
    }
    Ok(dir.to_path_buf())
}

/// The components of `dir` that do not exist, deepest first, and the
/// nearest one that does (or the topmost tried).
fn missing_dirs(dir: &Path) -> (Vec<&Path>, &Path) {
    let mut missing = Vec::new();
    let mut p = dir;
    while fs::symlink_metadata(p).is_err() {
        missing.push(p);
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => break,
        }
    }
    (missing, p)
}

/// The mode of the lab's own directories (and a managed server's): 0700,
/// or 0711 as root, so that the servers' OS users can pass through to
/// their data without listing anything.
pub fn lab_dir_mode() -> u32 {
    if euid() == 0 {
        0o711
    } else {
        0o700
    }
}

/// Creates `dir` and its missing parents as the lab's own directories
/// (data, snapshots, reports under the work directory): mode 0700, or 0711
/// as root so that the servers' OS users can pass through to their data
/// without listing anything. Existing directories are left as they are (a
/// managed server's data directory belongs to its OS user).
pub fn lab_dir_all(dir: &Path) -> std::io::Result<()> {
    let mode = lab_dir_mode();
    let (missing, _) = missing_dirs(dir);
    for m in missing.iter().rev() {
        match fs::DirBuilder::new().mode(mode).create(m) {
            // The umask may have narrowed it; 0711 must stay searchable.
            Ok(()) => fs::set_permissions(m, fs::Permissions::from_mode(mode))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    if !fs::metadata(dir)?.is_dir() {
        return Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "exists and is not a directory"));
    }
    Ok(())
}

/// Refuses to create entries in a directory others can write into without
/// the sticky bit (they could rename ours away and put theirs in its place).
pub fn check_parent(dir: &Path, what: &str) -> Result<(), String> {
    let meta = fs::metadata(dir).map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
    if meta.mode() & 0o022 != 0 && meta.mode() & 0o1000 == 0 {
        return Err(format!(
            "{what}: {} is writable by other users and not sticky (mode {:o}); dbbench does not create files where another user could replace them: choose another directory",
            dir.display(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// A directory to be used by a server running as `account` (uid, gid):
/// created 0700 (or checked: ours or the account's, nobody else may
/// write), then given to the account. As root this hands it over; as
/// anyone else `account` is None and the directory stays ours.
pub fn server_dir(dir: &Path, account: Option<(u32, u32)>, what: &str) -> Result<PathBuf, String> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta =
                fs::symlink_metadata(dir).map_err(|e| format!("cannot inspect {what} {}: {e}", dir.display()))?;
            if let Some(why) = refusal(dir, &meta, account.map(|a| a.0)) {
                return Err(format!(
                    "{what} {}: {why}; dbbench does not reuse a directory it did not make (a symlink planted there would redirect the server's files): remove it or choose another",
                    dir.display()
                ));
            }
        }
        Err(e) => return Err(format!("cannot create {what} {}: {e}", dir.display())),
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot make {what} {} private: {e}", dir.display()))?;
    if let Some((uid, gid)) = account {
        std::os::unix::fs::lchown(dir, Some(uid), Some(gid))
            .map_err(|e| format!("cannot give {what} {} to uid {uid}: {e}", dir.display()))?;
    }
    Ok(dir.to_path_buf())
}

/// A new private directory `<parent>/<prefix><random>` (0700, or `mode`),
/// made with one `mkdir`, which fails rather than reuse anything there.
pub fn unique_dir(parent: &Path, prefix: &str, mode: u32) -> Result<PathBuf, String> {
    check_parent(parent, "temporary directory")?;
    for _ in 0..20 {
        let name = format!("{prefix}{}", random_name());
        let dir = parent.join(name);
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                fs::set_permissions(&dir, fs::Permissions::from_mode(mode))
                    .map_err(|e| format!("cannot set the mode of {}: {e}", dir.display()))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create a directory in {}: {e}", parent.display())),
        }
    }
    Err(format!("cannot create a fresh directory in {} after 20 tries", parent.display()))
}

/// 12 random characters [a-z0-9] from the kernel's generator.
fn random_name() -> String {
    let mut buf = [0u8; 12];
    // SAFETY: getrandom writes at most buf.len() bytes into our buffer.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n != buf.len() as isize {
        // Fall back on std's per-process random hash keys: the callers'
        // O_EXCL/mkdir keep us safe even if a name were guessed.
        use std::hash::{BuildHasher, Hasher};
        let state = std::collections::hash_map::RandomState::new();
        for (i, b) in buf.iter_mut().enumerate() {
            let mut h = state.build_hasher();
            h.write_usize(i);
            *b = h.finish() as u8;
        }
    }
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    buf.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

fn nofollow() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    o
}

fn open_error(path: &Path, e: std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) {
        format!(
            "{} is a symlink; dbbench does not write through symlinks: remove it or choose another path",
            path.display()
        )
    } else {
        format!("{}: {e}", path.display())
    }
}

/// Creates `path`, which must not exist yet (`O_EXCL`), with `mode`.
pub fn create_new(path: &Path, mode: u32) -> Result<File, String> {
    nofollow().write(true).create_new(true).mode(mode).open(path).map_err(|e| open_error(path, e))
}

/// Opens `path` for writing from its start, creating it (with `mode`) or
/// truncating it; a symlink there is refused.
pub fn create_truncate(path: &Path, mode: u32) -> Result<File, String> {
    nofollow().write(true).create(true).truncate(true).mode(mode).open(path).map_err(|e| open_error(path, e))
}

/// Opens `path` for appending, creating it (0600); a symlink there is refused.
pub fn open_append(path: &Path) -> Result<File, String> {
    nofollow().append(true).create(true).mode(0o600).open(path).map_err(|e| open_error(path, e))
}

/// Opens `path` for reading; a symlink there is refused (a log a server
/// account could replace must not make root read another file).
pub fn open_read(path: &Path) -> std::io::Result<File> {
    nofollow().read(true).open(path)
}

/// Writes `bytes` to `path` through a fresh temporary file beside it
/// (`O_EXCL`, random name, 0600, then `mode`) renamed into place: a reader
/// never sees half a file, and a symlink at `path` is replaced, not
/// followed. The directory must exist.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", random_name()));
    let mut f = create_new(&tmp, 0o600)?;
    let written = f
        .write_all(bytes)
        .and_then(|_| f.set_permissions(fs::Permissions::from_mode(mode)))
        .map_err(|e| format!("{}: {e}", tmp.display()))
        .and_then(|_| fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display())));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The mode a file at a user-named path gets: 0644 less the umask, as
/// `fs::write` would have made it (reports are meant to be shared).
pub fn default_file_mode() -> u32 {
    // SAFETY: umask has no preconditions; it is set back at once.
    let mask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    0o666 & !(mask as u32)
}

/// A unit test's directory: a [`unique_dir`] under the system temp
/// directory (one `mkdir`, 0700, a fresh random name, so nothing another
/// user planted at a predictable name is used), removed with its contents
/// on drop, or kept and named when the test panicked or with
/// `DBBENCH_TEST_KEEP=1`. The integration
/// tests' `tests/common::tempdir` is the same for them.
#[cfg(test)]
pub struct TestDir(PathBuf);

#[cfg(test)]
impl TestDir {
    /// A new directory `dbbench-unit-{tag}-<random>`.
    pub fn new(tag: &str) -> TestDir {
        let dir = unique_dir(&std::env::temp_dir(), &format!("dbbench-unit-{tag}-"), 0o700)
            .unwrap_or_else(|e| panic!("test directory: {e}"));
        TestDir(dir)
    }
}

#[cfg(test)]
impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

#[cfg(test)]
impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

#[cfg(test)]
impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("DBBENCH_TEST_KEEP").is_some_and(|v| v == "1") {
            eprintln!("kept the test's directory: {}", self.0.display());
        } else {
            // remove_dir_all does not follow symlinks inside the tree.
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> TestDir {
        TestDir::new(&format!("safefs-{tag}"))
    }

    #[test]
    fn a_test_dir_is_fresh_private_and_removed_on_drop() {
        let (a, b) = (TestDir::new("x"), TestDir::new("x"));
        assert_ne!(&*a, &*b);
        assert_eq!(fs::symlink_metadata(&*a).unwrap().mode() & 0o7777, 0o700);
        fs::write(a.join("f"), "x").unwrap();
        let path = a.to_path_buf();
        drop(a);
        assert!(!path.exists());
    }

    #[test]
    fn symlinks_are_never_written_through() {
        let d = tmp("link");
        let target = d.join("target");
        fs::write(&target, "keep").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for r in
            [create_truncate(&link, 0o600).map(drop), open_append(&link).map(drop), create_new(&link, 0o600).map(drop)]
        {
            assert!(r.is_err());
        }
        assert!(create_truncate(&link, 0o600).unwrap_err().contains("is a symlink"));
        assert!(open_read(&link).is_err());
        // An atomic write replaces the link itself.
        write_atomic(&link, b"new", 0o644).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
        assert!(!fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }

    #[test]
    fn foreign_or_open_directories_are_refused() {
        let d = tmp("dirs");
        let own = private_dir(&d.join("own"), 0o700, "x").unwrap();
        assert_eq!(fs::metadata(&own).unwrap().mode() & 0o777, 0o700);
        private_dir(&own, 0o700, "x").unwrap();
        let open = d.join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_dir(&open, 0o700, "run directory").unwrap_err();
        assert!(e.contains("writable by other users") && e.contains("run directory"), "{e}");
        assert!(server_dir(&open, None, "run directory").is_err());
        let link = d.join("link");
        std::os::unix::fs::symlink(&own, &link).unwrap();
        assert!(private_dir(&link, 0o700, "x").unwrap_err().contains("not a directory"));
        if euid() == 0 {
            std::os::unix::fs::lchown(&own, Some(65534), None).unwrap();
            assert!(private_dir(&own, 0o700, "x").unwrap_err().contains("belongs to uid 65534"));
            // ... unless it is the server account's.
            server_dir(&own, Some((65534, 65534)), "x").unwrap();
        }
        let u1 = unique_dir(&d, "u-", 0o711).unwrap();
        let u2 = unique_dir(&d, "u-", 0o711).unwrap();
        assert_ne!(u1, u2);
        assert_eq!(fs::metadata(&u1).unwrap().mode() & 0o777, 0o711);
        let e = unique_dir(&open, "u-", 0o700).unwrap_err();
        assert!(e.contains("not sticky"), "{e}");
        let nested = private_dir_all(&d.join("a/b/c"), 0o700, "x").unwrap();
        assert!(nested.is_dir());
    }
}
