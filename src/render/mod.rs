//! What the reports share with querydiff's pages: SVG charts, the pages'
//! CSS, and writing a page or an export to its file.

pub mod charts;
pub mod style;
pub mod svg;

use std::path::Path;

/// Writes `bytes` to `path` through a fresh temporary file (random name,
/// `O_EXCL`) renamed into place, so a reader never sees half a report and a
/// symlink at `path` is replaced, never written through.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            crate::safe_fs::private_dir_all(dir, 0o755, "the report's directory")
                .map_err(|e| format!("{}: cannot create the directory: {e}", dir.display()))?;
        }
    }
    crate::safe_fs::write_atomic(path, bytes, crate::safe_fs::default_file_mode())
}
