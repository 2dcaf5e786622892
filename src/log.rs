//! sysbench's message levels: `--verbosity` (0 fatal … 5 debug, default 3)
//! and `--debug` (forces 5), for the load engine's text output.
//!
//! As in sysbench 1.0.20, a line prints when its level is at most the
//! verbosity: FATAL lines always, `WARNING:` lines from 2, the header,
//! progress lines, interval lines and the text report (notices) from 3,
//! "limit exceeded" lines (info) from 4, `DEBUG:` lines at 5. So
//! `--verbosity=2` runs silently unless something is wrong.
//!
//! Not governed, deliberately: the JSON and CSV formats (data asked for by
//! `--format`, not messages), and whatever a script prints itself. Under
//! those formats the messages go to stderr, so stdout stays one document.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// A message's level (sysbench's names and numbers; FATAL, level 0, is
/// not gated: it always prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `WARNING:` lines.
    Warning = 2,
    /// Header, progress and report text.
    Notice = 3,
    /// Extra progress ("Time limit exceeded, exiting...").
    Info = 4,
    /// `DEBUG:` lines.
    Debug = 5,
}

/// The highest verbosity sysbench accepts.
pub const MAX_VERBOSITY: i64 = 5;

static VERBOSITY: AtomicU8 = AtomicU8::new(Level::Notice as u8);
static TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Sets the verbosity (already checked to be in 0..=5).
pub fn set_verbosity(v: u8) {
    VERBOSITY.store(v.min(MAX_VERBOSITY as u8), Ordering::Relaxed);
}

/// Sends messages to stderr (stdout carries a JSON or CSV document).
pub fn set_to_stderr(on: bool) {
    TO_STDERR.store(on, Ordering::Relaxed);
}

fn emit(line: std::fmt::Arguments) {
    if TO_STDERR.load(Ordering::Relaxed) {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// Whether lines of `level` print.
pub fn enabled(level: Level) -> bool {
    level as u8 <= VERBOSITY.load(Ordering::Relaxed)
}

/// Prints `FATAL: {msg}` at any verbosity (on stderr under JSON/CSV, like
/// every message: a run may still print its document after it).
pub fn fatal(msg: &str) {
    emit(format_args!("FATAL: {msg}"));
}

/// Prints `{prefix}{msg}` when lines of `level` print.
fn at(level: Level, prefix: &str, msg: &str) {
    if enabled(level) {
        emit(format_args!("{prefix}{msg}"));
    }
}

/// Prints `DEBUG: {msg}` at verbosity 5.
pub fn debug(msg: &str) {
    at(Level::Debug, "DEBUG: ", msg);
}

/// Prints `msg` at verbosity 3 and above.
pub fn notice(msg: &str) {
    at(Level::Notice, "", msg);
}

/// Prints `msg` at verbosity 4 and above.
pub fn info(msg: &str) {
    at(Level::Info, "", msg);
}

/// Prints `WARNING: {msg}` at verbosity 2 and above.
pub fn warning(msg: &str) {
    at(Level::Warning, "WARNING: ", msg);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_print_up_to_the_verbosity() {
        set_verbosity(2);
        assert!(enabled(Level::Warning));
        assert!(!enabled(Level::Notice) && !enabled(Level::Debug));
        set_verbosity(0);
        assert!(!enabled(Level::Warning));
        set_verbosity(9);
        assert!(enabled(Level::Debug));
        set_verbosity(Level::Notice as u8);
        assert!(enabled(Level::Notice) && !enabled(Level::Info));
    }
}
