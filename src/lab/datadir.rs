//! Snapshot and restore of a server data directory, so that every run of an
//! experiment starts from the same bytes on disk.
//!
//! `snapshot` copies a stopped server's data directory once; `restore` puts
//! the live directory back to that state before a run. Per regular file a
//! copy is first tried as a reflink (`ioctl(FICLONE)`: shared extents, no
//! data written, btrfs/XFS/bcachefs...) and otherwise made with
//! `std::io::copy`, which on Linux copies inside the kernel with
//! `copy_file_range` (falling back to `sendfile`, then read/write).
//!
//! `restore` into an existing directory works like `rsync -a --delete`: a
//! file is copied again only when its size or its mtime (to the nanosecond)
//! differs from the snapshot's, so a run that wrote 16 MiB of a 1 GiB
//! directory costs 16 MiB of copying, not 1 GiB. Every copied file gets the
//! snapshot's mtime, which is what makes the next comparison valid.
//!
//! Residual risk of the size+mtime comparison: a change that keeps the size
//! and leaves the mtime equal to the snapshot's is not seen. A database
//! server does not do that: any write stamps the file with the current time,
//! which differs from the snapshot's mtime (the time of the last write
//! before the snapshot was taken) unless the write falls in the same clock
//! tick (the kernel's coarse clock, 1–10 ms) as that last write. It does
//! happen with tools that copy mtimes on purpose (`cp -p`, `rsync -a`,
//! `tar x`, `touch -r`) into the live directory; after such a step,
//! remove the live directory so that the next restore is a full copy.
//!
//! Both functions finish with `syncfs` on the destination, so the copy's
//! dirty pages are written before the server starts and not during the
//! measured run; that time is part of `CopyStats::seconds`.
//!
//! Preserved: file contents, directory structure (empty directories too),
//! symlinks (not followed), FIFOs, permission bits (setuid/setgid/sticky
//! included), ownership when running as root, access and modification times
//! to the nanosecond. Not preserved: hard links (each link becomes its own
//! file), extended attributes and ACLs, holes in sparse files. Unix sockets
//! are skipped (a server creates its socket when it starts; a restore
//! removes those in the live directory); device nodes are refused.
//!
//! A reflinked live file shares its extents with the snapshot, so the
//! server's first write to each block is copy-on-write (a new extent is
//! allocated; the file fragments), which an ordinary copy does not pay.
//! Results are comparable between runs restored the same way, not between
//! a reflinking and a copying filesystem.

use anyhow::{anyhow, bail};
use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

// The copy's record lives with the store, which keeps it per run.
pub use crate::store::{CopyMethod, CopyStats};

/// Copy directory tree `src` to `dst` (`dst` must not exist; missing parents
/// are created). Per file a reflink is tried first, then an in-kernel copy.
/// Mode, ownership (when root), times and symlinks are preserved. `method`
/// is `Reflink` when every regular file was reflinked, else `Copy`. On
/// failure the partial `dst` is removed.
pub fn snapshot(src: &Path, dst: &Path) -> anyhow::Result<CopyStats> {
    let start = Instant::now();
    let src_meta = source_dir_meta(src, "snapshot")?;
    if fs::symlink_metadata(dst).is_ok() {
        bail!(
            "datadir snapshot: destination {} already exists; remove it or choose a new snapshot path",
            dst.display()
        );
    }
    check_disjoint(src, dst, "snapshot")?;
    create_parent(dst, "snapshot")?;
    let mut c = Copier::new();
    create_dir(dst)?;
    if let Err(e) = c.fill_dir(src, dst, &src_meta) {
        // A retry needs `dst` to be absent; do not leave half a snapshot
        // behind (only what this call created: `create_dir` succeeded).
        let _ = remove_tree(dst);
        return Err(e);
    }
    sync_filesystem(dst, "snapshot")?;
    Ok(c.stats(c.full_copy_method(), start))
}

/// Make `live` identical to `snapshot`. If `live` does not exist: a full copy
/// as `snapshot` makes. Otherwise rsync-style: only files whose size or mtime
/// (nanoseconds) differ from the snapshot's are copied again (reflink when
/// possible), entries the snapshot does not have are removed, directories are
/// created or removed as needed, and modes, owners and directory times are
/// set back; `method` is then `Sync`. A top-level `live` that is a symlink to
/// a directory is followed. The server using `live` must be stopped.
pub fn restore(snapshot: &Path, live: &Path) -> anyhow::Result<CopyStats> {
    let start = Instant::now();
    let snap_meta = source_dir_meta(snapshot, "restore")?;
    let mut c = Copier::new();
    match fs::symlink_metadata(live) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            check_disjoint(snapshot, live, "restore")?;
            create_parent(live, "restore")?;
            c.copy_dir(snapshot, live, &snap_meta)?;
            sync_filesystem(live, "restore")?;
            Ok(c.stats(c.full_copy_method(), start))
        }
        Err(e) => Err(io_error("restore: cannot inspect", live, &e)),
        Ok(_) => {
            let live_meta = fs::metadata(live).map_err(|e| io_error("restore: cannot inspect", live, &e))?;
            if !live_meta.is_dir() {
                bail!(
                    "datadir restore: {} exists and is not a directory; remove it or give the data directory's path",
                    live.display()
                );
            }
            // Through a symlinked data directory to the directory itself, so
            // that its mode and times are set on it and not on the link.
            let live = fs::canonicalize(live).map_err(|e| io_error("restore: cannot resolve", live, &e))?;
            check_disjoint(snapshot, &live, "restore")?;
            c.sync_dir(snapshot, &snap_meta, &live, &live_meta)?;
            sync_filesystem(&live, "restore")?;
            Ok(c.stats(CopyMethod::Sync, start))
        }
    }
}

/// Total bytes (apparent sizes) of regular files under `dir`; symlinks are
/// not followed.
pub fn tree_size(dir: &Path) -> anyhow::Result<u64> {
    source_dir_meta(dir, "size")?;
    fn walk(dir: &Path) -> anyhow::Result<u64> {
        let mut total = 0;
        for (name, meta) in read_entries(dir)? {
            let path = dir.join(name);
            if meta.is_dir() {
                total += walk(&path)?;
            } else if meta.is_file() {
                total += meta.len();
            }
        }
        Ok(total)
    }
    walk(dir)
}

/// The kinds of entries a data directory may hold.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dir,
    File,
    Symlink,
    Fifo,
    Socket,
    Device,
}

fn kind(meta: &Metadata) -> Kind {
    let t = meta.file_type();
    if t.is_dir() {
        Kind::Dir
    } else if t.is_file() {
        Kind::File
    } else if t.is_symlink() {
        Kind::Symlink
    } else if t.is_fifo() {
        Kind::Fifo
    } else if t.is_socket() {
        Kind::Socket
    } else {
        Kind::Device
    }
}

/// Counters of one operation, and whether ownership can be set.
struct Copier {
    is_root: bool,
    files: u64,
    files_copied: u64,
    regular_copied: u64,
    regular_reflinked: u64,
    bytes_copied: u64,
    files_removed: u64,
}

impl Copier {
    fn new() -> Copier {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let is_root = unsafe { libc::geteuid() } == 0;
        Copier {
            is_root,
            files: 0,
            files_copied: 0,
            regular_copied: 0,
            regular_reflinked: 0,
            bytes_copied: 0,
            files_removed: 0,
        }
    }

    fn full_copy_method(&self) -> CopyMethod {
        if self.regular_copied > 0 && self.regular_reflinked == self.regular_copied {
            CopyMethod::Reflink
        } else {
            CopyMethod::Copy
        }
    }

    fn stats(&self, method: CopyMethod, start: Instant) -> CopyStats {
        CopyStats {
            method,
            files: self.files,
            files_copied: self.files_copied,
            bytes_copied: self.bytes_copied,
            files_removed: self.files_removed,
            seconds: start.elapsed().as_secs_f64(),
        }
    }

    /// Create `dst` (must not exist) as a copy of directory `src`.
    fn copy_dir(&mut self, src: &Path, dst: &Path, src_meta: &Metadata) -> anyhow::Result<()> {
        create_dir(dst)?;
        self.fill_dir(src, dst, src_meta)
    }

    /// Copy the entries of directory `src` into the new, empty directory
    /// `dst`, then give `dst` the attributes of `src`.
    fn fill_dir(&mut self, src: &Path, dst: &Path, src_meta: &Metadata) -> anyhow::Result<()> {
        for (name, meta) in read_entries(src)? {
            self.copy_entry(&src.join(&name), &dst.join(&name), &meta)?;
        }
        // Last, because creating entries changed the directory's mtime.
        self.set_path_attrs(dst, src_meta, false)
    }

    /// Create `dst` (must not exist) as a copy of the entry `src`.
    fn copy_entry(&mut self, src: &Path, dst: &Path, meta: &Metadata) -> anyhow::Result<()> {
        match kind(meta) {
            Kind::Dir => self.copy_dir(src, dst, meta),
            Kind::File => {
                self.files += 1;
                self.copy_file(src, dst, meta)
            }
            Kind::Symlink => {
                self.files += 1;
                let target = fs::read_link(src).map_err(|e| io_error("cannot read symlink", src, &e))?;
                std::os::unix::fs::symlink(&target, dst).map_err(|e| io_error("cannot create symlink", dst, &e))?;
                self.files_copied += 1;
                self.set_path_attrs(dst, meta, true)
            }
            Kind::Fifo => {
                self.files += 1;
                let c = cpath(dst)?;
                // SAFETY: `c` is a valid NUL-terminated path.
                if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
                    return Err(io_error("cannot create FIFO", dst, &io::Error::last_os_error()));
                }
                self.files_copied += 1;
                self.set_path_attrs(dst, meta, false)
            }
            // A server's socket is recreated when it starts; a copy would be a dead inode.
            Kind::Socket => Ok(()),
            Kind::Device => Err(anyhow!(
                "datadir: {} is a device node, which a data directory should not hold; remove it from the source directory",
                src.display()
            )),
        }
    }

    /// Create `dst` (must not exist) with the contents and attributes of regular file `src`.
    fn copy_file(&mut self, src: &Path, dst: &Path, meta: &Metadata) -> anyhow::Result<()> {
        let mut from = File::open(src).map_err(|e| io_error("cannot open", src, &e))?;
        let mut to = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dst)
            .map_err(|e| io_error("cannot create", dst, &e))?;
        // SAFETY: both descriptors are open for the duration of the call; FICLONE takes the source fd as its argument.
        let reflinked = unsafe { libc::ioctl(to.as_raw_fd(), libc::FICLONE, from.as_raw_fd()) } == 0;
        if reflinked {
            self.regular_reflinked += 1;
        } else {
            // Not supported here (ext4, tmpfs, across filesystems, ...): copy.
            io::copy(&mut from, &mut to)
                .map_err(|e| io_error(&format!("cannot copy {} to", src.display()), dst, &e))?;
        }
        self.regular_copied += 1;
        self.files_copied += 1;
        self.bytes_copied += meta.len();
        // Times last: nothing may write to the file after its mtime is set.
        self.set_fd_attrs(&to, dst, meta)
    }

    /// Owner (when root), mode and times of `meta` onto the open file `f`.
    fn set_fd_attrs(&self, f: &File, path: &Path, meta: &Metadata) -> anyhow::Result<()> {
        // chown before chmod: chown clears setuid/setgid bits.
        if self.is_root {
            std::os::unix::fs::fchown(f, Some(meta.uid()), Some(meta.gid()))
                .map_err(|e| io_error("cannot set owner of", path, &e))?;
        }
        f.set_permissions(fs::Permissions::from_mode(meta.mode() & 0o7777))
            .map_err(|e| io_error("cannot set mode of", path, &e))?;
        let times = timespecs(meta);
        // SAFETY: valid fd and a 2-element timespec array.
        if unsafe { libc::futimens(f.as_raw_fd(), times.as_ptr()) } != 0 {
            return Err(io_error("cannot set times of", path, &io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Owner (when root), mode (not for symlinks) and times of `meta` onto `path`, not following a symlink.
    fn set_path_attrs(&self, path: &Path, meta: &Metadata, symlink: bool) -> anyhow::Result<()> {
        if self.is_root {
            std::os::unix::fs::lchown(path, Some(meta.uid()), Some(meta.gid()))
                .map_err(|e| io_error("cannot set owner of", path, &e))?;
        }
        if !symlink {
            fs::set_permissions(path, fs::Permissions::from_mode(meta.mode() & 0o7777))
                .map_err(|e| io_error("cannot set mode of", path, &e))?;
        }
        let c = cpath(path)?;
        let times = timespecs(meta);
        // SAFETY: valid NUL-terminated path and a 2-element timespec array.
        if unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) } != 0 {
            return Err(io_error("cannot set times of", path, &io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Owner and mode of an unchanged entry back to the snapshot's, only where they differ.
    fn fix_owner_and_mode(&self, path: &Path, want: &Metadata, have: &Metadata, symlink: bool) -> anyhow::Result<()> {
        let owner_differs = self.is_root && (want.uid() != have.uid() || want.gid() != have.gid());
        if owner_differs {
            std::os::unix::fs::lchown(path, Some(want.uid()), Some(want.gid()))
                .map_err(|e| io_error("cannot set owner of", path, &e))?;
        }
        // chown may have cleared setuid/setgid, so the mode is set again after it.
        if !symlink && (owner_differs || want.mode() & 0o7777 != have.mode() & 0o7777) {
            fs::set_permissions(path, fs::Permissions::from_mode(want.mode() & 0o7777))
                .map_err(|e| io_error("cannot set mode of", path, &e))?;
        }
        Ok(())
    }

    /// Make existing directory `live` identical to directory `snap`.
    fn sync_dir(&mut self, snap: &Path, snap_meta: &Metadata, live: &Path, live_meta: &Metadata) -> anyhow::Result<()> {
        // Without root, changing entries needs write+search permission on the
        // directory, which the snapshot's mode (set by the last restore) may
        // deny; the final mode is set again at the end.
        if !self.is_root && live_meta.mode() & 0o300 != 0o300 {
            fs::set_permissions(live, fs::Permissions::from_mode((live_meta.mode() & 0o7777) | 0o700))
                .map_err(|e| io_error("cannot make writable", live, &e))?;
        }
        let wanted: BTreeMap<OsString, Metadata> =
            read_entries(snap)?.into_iter().filter(|(_, m)| kind(m) != Kind::Socket).collect();
        // Removals first: frees space before copies need it, and clears the
        // way where an entry changed kind (file ↔ directory ↔ symlink).
        let mut keep: BTreeMap<OsString, Metadata> = BTreeMap::new();
        for (name, meta) in read_entries(live)? {
            if wanted.get(&name).is_some_and(|w| kind(w) == kind(&meta)) {
                keep.insert(name, meta);
            } else {
                self.files_removed += remove_entry(&live.join(&name), &meta)?;
            }
        }
        for (name, want) in &wanted {
            let (s, l) = (snap.join(name), live.join(name));
            let have = keep.get(name);
            match (kind(want), have) {
                (Kind::Dir, Some(have)) => self.sync_dir(&s, want, &l, have)?,
                (Kind::File, Some(have)) => {
                    self.files += 1;
                    let same = want.len() == have.len()
                        && want.mtime() == have.mtime()
                        && want.mtime_nsec() == have.mtime_nsec();
                    if same {
                        self.fix_owner_and_mode(&l, want, have, false)?;
                    } else {
                        // Unlink and create rather than overwrite in place: the
                        // file may be read-only, and a reflink needs an empty target.
                        fs::remove_file(&l).map_err(|e| io_error("cannot remove", &l, &e))?;
                        self.copy_file(&s, &l, want)?;
                    }
                }
                (Kind::Symlink, Some(have)) => {
                    let target = fs::read_link(&s).map_err(|e| io_error("cannot read symlink", &s, &e))?;
                    let current = fs::read_link(&l).map_err(|e| io_error("cannot read symlink", &l, &e))?;
                    if target == current {
                        self.files += 1;
                        self.fix_owner_and_mode(&l, want, have, true)?;
                    } else {
                        fs::remove_file(&l).map_err(|e| io_error("cannot remove", &l, &e))?;
                        // Counts the entry in `files` and `files_copied`.
                        self.copy_entry(&s, &l, want)?;
                    }
                }
                (Kind::Fifo, Some(have)) => {
                    self.files += 1;
                    self.fix_owner_and_mode(&l, want, have, false)?;
                }
                (_, _) => self.copy_entry(&s, &l, want)?,
            }
        }
        // Entries were added or removed: the directory's mtime moved, and the
        // mode may have been widened above.
        self.set_path_attrs(live, snap_meta, false)
    }
}

/// Create directory `dir` (must not exist), owner-only until its contents
/// are in: the final mode may forbid writing, and nobody should use a
/// half-made directory.
fn create_dir(dir: &Path) -> anyhow::Result<()> {
    fs::DirBuilder::new().mode(0o700).create(dir).map_err(|e| io_error("cannot create directory", dir, &e))
}

/// Entries of `dir` with their metadata (symlinks not followed), sorted by name.
fn read_entries(dir: &Path) -> anyhow::Result<Vec<(OsString, Metadata)>> {
    let rd = fs::read_dir(dir).map_err(|e| io_error("cannot read directory", dir, &e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| io_error("cannot read directory", dir, &e))?;
        // DirEntry::metadata does not follow symlinks.
        let meta = entry.metadata().map_err(|e| io_error("cannot inspect", &entry.path(), &e))?;
        out.push((entry.file_name(), meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Remove `path` (any kind; directories recursively). Returns the entries
/// other than directories removed.
fn remove_entry(path: &Path, meta: &Metadata) -> anyhow::Result<u64> {
    if meta.is_dir() {
        remove_tree(path)
    } else {
        fs::remove_file(path).map_err(|e| io_error("cannot remove", path, &e))?;
        Ok(1)
    }
}

/// Remove directory `dir` and everything under it, making read-only
/// directories writable first (what `fs::remove_dir_all` does not do, so it
/// fails without root on a tree restored from a read-only snapshot).
fn remove_tree(dir: &Path) -> anyhow::Result<u64> {
    let meta = fs::symlink_metadata(dir).map_err(|e| io_error("cannot inspect", dir, &e))?;
    if meta.mode() & 0o700 != 0o700 {
        // Harmless as root, needed without it; failing here shows up below.
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode((meta.mode() & 0o7777) | 0o700));
    }
    let mut removed = 0;
    for (name, meta) in read_entries(dir)? {
        removed += remove_entry(&dir.join(name), &meta)?;
    }
    fs::remove_dir(dir).map_err(|e| io_error("cannot remove directory", dir, &e))?;
    Ok(removed)
}

/// Metadata of a source directory (a symlink to one is followed), or an error naming `op`.
fn source_dir_meta(dir: &Path, op: &str) -> anyhow::Result<Metadata> {
    let meta = fs::metadata(dir).map_err(|e| io_error(&format!("{op}: cannot open source"), dir, &e))?;
    if !meta.is_dir() {
        bail!("datadir {op}: {} is not a directory; give a data directory or snapshot path", dir.display());
    }
    Ok(meta)
}

/// Create the missing parents of `path`.
fn create_parent(path: &Path, op: &str) -> anyhow::Result<()> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => crate::safe_fs::lab_dir_all(p)
            .map_err(|e| io_error(&format!("{op}: cannot create parent directory"), p, &e)),
        _ => Ok(()),
    }
}

/// Refuse a source and destination that are the same tree or nested in each
/// other: copying a tree into itself never ends, and a restore would delete
/// a snapshot inside the live directory.
fn check_disjoint(src: &Path, dst: &Path, op: &str) -> anyhow::Result<()> {
    let a = resolve(src);
    let b = resolve(dst);
    if a.starts_with(&b) || b.starts_with(&a) {
        bail!(
            "datadir {op}: {} and {} overlap (one is inside the other); keep snapshots outside the data directory",
            src.display(),
            dst.display()
        );
    }
    Ok(())
}

/// Absolute path with symlinks resolved as far as the path exists, the rest
/// appended lexically.
fn resolve(path: &Path) -> PathBuf {
    let abs =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => break,
        }
    }
    // Nothing exists, not even "/": normalise lexically.
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `syncfs` on the filesystem holding `dir`.
fn sync_filesystem(dir: &Path, op: &str) -> anyhow::Result<()> {
    let f = File::open(dir).map_err(|e| io_error(&format!("{op}: cannot open"), dir, &e))?;
    // SAFETY: valid open descriptor.
    if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
        return Err(io_error(&format!("{op}: syncfs failed on"), dir, &io::Error::last_os_error()));
    }
    Ok(())
}

/// Access and modification times of `meta`, for futimens/utimensat.
fn timespecs(meta: &Metadata) -> [libc::timespec; 2] {
    [
        libc::timespec { tv_sec: meta.atime() as libc::time_t, tv_nsec: meta.atime_nsec() as _ },
        libc::timespec { tv_sec: meta.mtime() as libc::time_t, tv_nsec: meta.mtime_nsec() as _ },
    ]
}

fn cpath(path: &Path) -> anyhow::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| anyhow!("datadir: path {} contains a NUL byte; rename it", path.display()))
}

/// One-line error: what failed and where (the context), why and what to do
/// about it: `datadir: cannot open /x: No such file ... (os error 2); check the path`.
fn io_error(what: &str, path: &Path, e: &io::Error) -> anyhow::Error {
    let hint = match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => "free space on that filesystem or put snapshots elsewhere",
        Some(libc::EACCES) | Some(libc::EPERM) => "run as the data directory's owner or as root",
        Some(libc::EROFS) => "the filesystem is read-only; use a writable location",
        Some(libc::ENOENT) => "check the path",
        _ => "check the path and the filesystem",
    };
    anyhow!("{e}; {hint}").context(format!("datadir: {what} {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safe_fs::TestDir as TempDir;
    use std::io::Write;

    fn write(path: &Path, data: &[u8]) {
        let mut f = File::create(path).unwrap();
        f.write_all(data).unwrap();
    }

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A small data directory: files of several sizes, a nested and an empty
    /// directory, symlinks (one dangling), a FIFO and varied modes.
    fn make_tree(root: &Path) {
        fs::create_dir(root).unwrap();
        write(&root.join("ibdata1"), &vec![7u8; 300_000]);
        write(&root.join("ib_logfile0"), b"log");
        write(&root.join("empty.file"), b"");
        fs::create_dir(root.join("db1")).unwrap();
        write(&root.join("db1/t1.ibd"), &(0..100_000u32).flat_map(|i| i.to_le_bytes()).collect::<Vec<_>>());
        write(&root.join("db1/t2.ibd"), b"table two");
        fs::create_dir(root.join("empty")).unwrap();
        fs::create_dir_all(root.join("deep/er/est")).unwrap();
        write(&root.join("deep/er/est/f"), b"deep");
        std::os::unix::fs::symlink("db1/t1.ibd", root.join("link")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/target", root.join("dangling")).unwrap();
        let fifo = cpath(&root.join("fifo")).unwrap();
        // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o640) }, 0);
        chmod(&root.join("ib_logfile0"), 0o640);
        chmod(&root.join("db1/t2.ibd"), 0o400);
        fs::create_dir(root.join("ro")).unwrap();
        write(&root.join("ro/inside"), b"read-only dir");
        chmod(&root.join("ro"), 0o555);
        chmod(&root.join("db1"), 0o750);
        // Later writes in the tests must get a different mtime: the kernel
        // stamps from a coarse clock (see the module doc).
        std::thread::sleep(std::time::Duration::from_millis(30));
    }

    /// Assert two trees are identical: kinds, contents byte for byte, symlink
    /// targets, modes, file mtimes to the nanosecond, owners.
    fn assert_same_tree(a: &Path, b: &Path) {
        let ea = read_entries(a).unwrap();
        let eb = read_entries(b).unwrap();
        let na: Vec<_> = ea.iter().map(|e| e.0.clone()).collect();
        let nb: Vec<_> = eb.iter().map(|e| e.0.clone()).collect();
        assert_eq!(na, nb, "entries of {} vs {}", a.display(), b.display());
        for ((name, ma), (_, mb)) in ea.iter().zip(eb.iter()) {
            let (pa, pb) = (a.join(name), b.join(name));
            assert_eq!(kind(ma), kind(mb), "{}", pb.display());
            assert_eq!((ma.uid(), ma.gid()), (mb.uid(), mb.gid()), "owner of {}", pb.display());
            match kind(ma) {
                Kind::Dir => {
                    assert_eq!(ma.mode(), mb.mode(), "mode of {}", pb.display());
                    assert_same_tree(&pa, &pb);
                }
                Kind::File => {
                    assert_eq!(ma.mode(), mb.mode(), "mode of {}", pb.display());
                    assert_eq!(fs::read(&pa).unwrap(), fs::read(&pb).unwrap(), "contents of {}", pb.display());
                    assert_eq!(
                        (ma.mtime(), ma.mtime_nsec()),
                        (mb.mtime(), mb.mtime_nsec()),
                        "mtime of {}",
                        pb.display()
                    );
                }
                Kind::Symlink => assert_eq!(fs::read_link(&pa).unwrap(), fs::read_link(&pb).unwrap()),
                Kind::Fifo => assert_eq!(ma.mode(), mb.mode(), "mode of {}", pb.display()),
                Kind::Socket | Kind::Device => unreachable!(),
            }
        }
    }

    #[test]
    fn snapshot_copies_everything_and_refuses_existing_destination() {
        let t = TempDir::new("snap");
        let (src, snap) = (t.join("data"), t.join("snaps/one"));
        make_tree(&src);
        let st = snapshot(&src, &snap).unwrap();
        assert_same_tree(&src, &snap);
        // 7 regular files, 2 symlinks, 1 FIFO.
        assert_eq!((st.files, st.files_copied, st.files_removed), (10, 10, 0));
        assert_eq!(st.bytes_copied, tree_size(&src).unwrap());
        assert_eq!(tree_size(&snap).unwrap(), 300_000 + 3 + 400_000 + 9 + 4 + 13);
        assert!(matches!(st.method, CopyMethod::Reflink | CopyMethod::Copy));
        let err = format!("{:#}", snapshot(&src, &snap).unwrap_err());
        assert!(err.contains("already exists"), "{err}");
        let err = format!("{:#}", snapshot(&src, &src.join("inner")).unwrap_err());
        assert!(err.contains("overlap"), "{err}");
        assert!(!src.join("inner").exists());
    }

    #[test]
    fn restore_after_modify_add_delete_gives_the_snapshot_back() {
        let t = TempDir::new("restore");
        let (live, snap) = (t.join("data"), t.join("snap"));
        make_tree(&live);
        snapshot(&live, &snap).unwrap();

        // Nothing changed: nothing copied.
        let st = restore(&snap, &live).unwrap();
        assert_eq!(
            (st.method, st.files, st.files_copied, st.bytes_copied, st.files_removed),
            (CopyMethod::Sync, 10, 0, 0, 0)
        );

        // Same size, new contents, a few ms after the snapshot: only the
        // nanosecond mtime tells.
        // (Mode 0400 in the snapshot: made writable first, put back by restore.)
        chmod(&live.join("db1/t2.ibd"), 0o600);
        write(&live.join("db1/t2.ibd"), b"TABLE TWO");
        // Grown file, truncated file.
        OpenOptions::new().append(true).open(live.join("ib_logfile0")).unwrap().write_all(b"more").unwrap();
        OpenOptions::new().write(true).open(live.join("ibdata1")).unwrap().set_len(10).unwrap();
        // Added file, added directory tree, removed file, removed directory.
        write(&live.join("db1/t3.ibd"), b"new table");
        fs::create_dir_all(live.join("db2/sub")).unwrap();
        write(&live.join("db2/sub/x"), b"x");
        write(&live.join("db2/y"), b"y");
        fs::remove_file(live.join("empty.file")).unwrap();
        fs::remove_dir_all(live.join("deep/er")).unwrap();
        // Kind changes: a file where a directory was, a directory where a file was.
        fs::remove_dir(live.join("empty")).unwrap();
        write(&live.join("empty"), b"now a file");
        fs::remove_file(live.join("db1/t1.ibd")).unwrap();
        fs::create_dir(live.join("db1/t1.ibd")).unwrap();
        // Symlink retargeted; mode and dir mode changed; a socket appears.
        fs::remove_file(live.join("link")).unwrap();
        std::os::unix::fs::symlink("elsewhere", live.join("link")).unwrap();
        chmod(&live.join("ro"), 0o700);
        write(&live.join("ro/extra"), b"extra");
        chmod(&live.join("deep"), 0o700);
        std::os::unix::net::UnixListener::bind(live.join("sock")).unwrap();

        let st = restore(&snap, &live).unwrap();
        assert_same_tree(&snap, &live);
        assert_eq!(st.method, CopyMethod::Sync);
        assert_eq!(st.files, 10);
        // t2, ib_logfile0, ibdata1, empty.file (0 bytes), deep/er/est/f, t1.ibd, link.
        assert_eq!(st.files_copied, 7);
        assert_eq!(st.bytes_copied, 9 + 3 + 300_000 + 4 + 400_000);
        // t3, db2/sub/x, db2/y, "empty" (file), ro/extra, sock.
        assert_eq!(st.files_removed, 6);
        assert!(!live.join("sock").exists());

        // And the restored tree compares equal on the next restore.
        let st = restore(&snap, &live).unwrap();
        assert_eq!((st.files_copied, st.files_removed), (0, 0));
        assert_same_tree(&snap, &live);
    }

    #[test]
    fn restore_into_missing_or_empty_directory_is_a_full_copy() {
        let t = TempDir::new("full");
        let (src, snap) = (t.join("data"), t.join("snap"));
        make_tree(&src);
        snapshot(&src, &snap).unwrap();
        let missing = t.join("new/live");
        let st = restore(&snap, &missing).unwrap();
        assert!(matches!(st.method, CopyMethod::Reflink | CopyMethod::Copy));
        assert_eq!(st.files_copied, 10);
        assert_same_tree(&snap, &missing);

        let empty = t.join("empty-live");
        fs::create_dir(&empty).unwrap();
        let st = restore(&snap, &empty).unwrap();
        assert_eq!((st.method, st.files_copied), (CopyMethod::Sync, 10));
        assert_same_tree(&snap, &empty);
        // Directory mode and times came from the snapshot's root.
        let (a, b) = (fs::metadata(&snap).unwrap(), fs::metadata(&empty).unwrap());
        assert_eq!((a.mode(), a.mtime(), a.mtime_nsec()), (b.mode(), b.mtime(), b.mtime_nsec()));
    }

    #[test]
    fn restore_through_a_symlinked_data_directory() {
        let t = TempDir::new("symlinked");
        let (real, link, snap) = (t.join("real"), t.join("datadir"), t.join("snap"));
        make_tree(&real);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        snapshot(&link, &snap).unwrap();
        write(&real.join("db1/t3.ibd"), b"added");
        let st = restore(&snap, &link).unwrap();
        assert_eq!((st.method, st.files_removed), (CopyMethod::Sync, 1));
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_same_tree(&snap, &real);
    }

    #[test]
    fn permissions_and_times_are_preserved() {
        let t = TempDir::new("perm");
        let (src, snap) = (t.join("data"), t.join("snap"));
        make_tree(&src);
        chmod(&src.join("ibdata1"), 0o2755);
        snapshot(&src, &snap).unwrap();
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().mode() & 0o7777;
        assert_eq!(mode(&snap.join("ibdata1")), 0o2755);
        assert_eq!(mode(&snap.join("ib_logfile0")), 0o640);
        assert_eq!(mode(&snap.join("db1/t2.ibd")), 0o400);
        assert_eq!(mode(&snap.join("ro")), 0o555);
        assert_eq!(mode(&snap.join("db1")), 0o750);
        assert_eq!(mode(&snap.join("fifo")), 0o640);
        // A mode change alone is put back without copying the file.
        chmod(&src.join("ib_logfile0"), 0o600);
        let st = restore(&snap, &src).unwrap();
        assert_eq!(st.files_copied, 0);
        assert_eq!(mode(&src.join("ib_logfile0")), 0o640);
        // Symlink times are those of the symlink itself.
        let (a, b) =
            (fs::symlink_metadata(src.join("link")).unwrap(), fs::symlink_metadata(snap.join("link")).unwrap());
        assert_eq!((a.mtime(), a.mtime_nsec()), (b.mtime(), b.mtime_nsec()));
    }

    #[test]
    fn errors_name_the_path_and_the_remedy() {
        let t = TempDir::new("err");
        let err = format!("{:#}", restore(&t.join("nope"), &t.join("live")).unwrap_err());
        assert!(err.contains("nope") && err.contains("check the path"), "{err}");
        write(&t.join("file"), b"x");
        let err = format!("{:#}", snapshot(&t.join("file"), &t.join("s")).unwrap_err());
        assert!(err.contains("not a directory"), "{err}");
        fs::create_dir(t.join("src")).unwrap();
        let err = format!("{:#}", restore(&t.join("src"), &t.join("file")).unwrap_err());
        assert!(err.contains("not a directory"), "{err}");
        let err = format!("{:#}", restore(&t, &t.join("src")).unwrap_err());
        assert!(err.contains("overlap"), "{err}");
    }
}
