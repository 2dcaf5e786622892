//! Logs: excerpts of a server's log and its error lines.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

pub(super) fn file_len(path: &Path) -> u64 {
    fs::symlink_metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The text of a log from byte `pos` (from the start if the log is shorter,
/// i.e. was truncated), at most its last 1 MiB.
pub(super) fn read_log_from(path: &Path, pos: u64) -> String {
    let Ok(mut f) = crate::safe_fs::open_read(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let pos = if pos > len { 0 } else { pos };
    let start = pos.max(len.saturating_sub(1 << 20));
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// The last `max_lines` lines of a log written since `pos`.
pub(super) fn log_tail(path: &Path, pos: u64, max_lines: usize) -> String {
    let text = read_log_from(path, pos);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

/// The most telling line of a failure log: the last error line, else the
/// last line; shortened for a one-line message.
pub(super) fn last_error_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let is_error = |l: &&&str| {
        let u = l.to_ascii_uppercase();
        u.contains("ERROR") || u.contains("FATAL") || u.contains("ABORTING")
    };
    let errors: Vec<&&str> = lines.iter().filter(is_error).collect();
    // MariaDB says "[ERROR] Aborting" and then may fail to tear down
    // ("Error on close of '(null)'"): the cause is the error before it.
    let aborting = errors.iter().position(|l| l.to_ascii_lowercase().ends_with("aborting"));
    let before = &errors[..aborting.unwrap_or(errors.len())];
    // A full disk is the cause of whatever failed after it.
    let disk_full = |l: &&&&str| {
        let l = l.to_ascii_lowercase();
        ["errcode: 28", "no space left on device", "error number 28", "os error 28", "disk full", "disk is full"]
            .iter()
            .any(|m| l.contains(m))
    };
    let line = before
        .iter()
        .find(disk_full)
        .or(before.last())
        .or(errors.last())
        .map(|l| l.to_string())
        .or_else(|| lines.last().map(|l| l.to_string()))
        .unwrap_or_else(|| "(no output)".to_string());
    one_line(&line, 300)
}

/// Whitespace collapsed to single spaces, cut at `max` characters.
pub(super) fn one_line(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// A start failed because the TCP port was taken (worth another port).
pub(super) fn is_port_conflict(log: &str) -> bool {
    let l = log.to_ascii_lowercase();
    l.contains("tcp/ip port")
        || l.contains("do you already have another")
        || l.contains("could not bind ipv4")
        || l.contains("could not create any tcp/ip sockets")
}

/// A start failed because the unix socket was taken (another port won't help).
pub(super) fn is_socket_conflict(log: &str) -> bool {
    let l = log.to_ascii_lowercase();
    l.contains("bind on unix socket")
        || l.contains("using unix socket file")
        || l.contains("could not bind unix address")
        || l.contains("could not create any unix-domain sockets")
        || (l.contains("lock file") && l.contains(".s.pgsql"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::server::tests::*;

    #[test]
    fn logs_excerpts_and_error_lines() {
        let fx = Fixture::new("log");
        let log = fx.dir.join("x.err");
        fs::write(&log, "one\ntwo\n").unwrap();
        let pos = file_len(&log);
        fs::write(&log, "one\ntwo\nthree\n2024 [ERROR] unknown variable 'foo=1'\n2024 [ERROR] Aborting\n").unwrap();
        assert_eq!(log_tail(&log, pos, 2), "2024 [ERROR] unknown variable 'foo=1'\n2024 [ERROR] Aborting");
        assert_eq!(log_tail(&log, 0, 100).lines().count(), 5);
        assert_eq!(log_tail(&log, 10_000, 1), "2024 [ERROR] Aborting", "a shorter log is read from its start");
        assert_eq!(last_error_line(&read_log_from(&log, 0)), "2024 [ERROR] unknown variable 'foo=1'");
        // A full disk (what MariaDB 10.11 logs when its datadir's disk is full).
        let full = "0 [Note] InnoDB: 128 rollback segments are active.\n\
            0 [ERROR] mariadbd: Error writing file './ddl_recovery.log' (Errcode: 28 \"No space left on device\")\n\
            0 [ERROR] Unknown/unsupported storage engine: InnoDB\n\
            0 [ERROR] Aborting\n\
            0 [ERROR] mariadbd: Error on close of '(null)' (Errcode: 9 \"Bad file descriptor\")\n";
        assert_eq!(
            last_error_line(full),
            "0 [ERROR] mariadbd: Error writing file './ddl_recovery.log' (Errcode: 28 \"No space left on device\")"
        );
        assert_eq!(
            last_error_line(
                "0 [ERROR] unknown option '--x'\n0 [ERROR] Aborting\n0 [ERROR] Error on close of '(null)'\n"
            ),
            "0 [ERROR] unknown option '--x'"
        );
        assert_eq!(log_tail(&fx.dir.join("missing"), 0, 5), "");
        assert!(is_port_conflict(
            "[ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use"
        ));
        assert!(is_port_conflict("LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use"));
        assert!(is_socket_conflict("[ERROR] Can't start server : Bind on unix socket: Address already in use"));
        assert!(!is_socket_conflict("[ERROR] Can't start server: Bind on TCP/IP port"));
    }
}
