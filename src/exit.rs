//! dbbench's exit statuses: one list for the load engine and every
//! subcommand, so that a script can tell a finished measurement with
//! failures from bad input, and a dbbench bug from a stopped server
//! (README, "Exit status").

use std::process::ExitCode;

/// How a dbbench process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked for was done (also when the reader of stdout went
    /// away: `dbbench ... | head -1`).
    Ok,
    /// Bad input, or a failure that stopped the command: one line says what.
    Error,
    /// The measurement finished but part of it failed or was cut short:
    /// some lab runs or TPC-H queries failed, querydiff found different
    /// rows, a load run was ended by `--forced-shutdown`, a stalled server
    /// or a client initialisation timeout.
    Partial,
    /// `dbbench server status`: no server is running (LSB's "program is
    /// not running", as `pg_ctl status` says it).
    NotRunning,
    /// A dbbench bug (a panic); sysexits.h's EX_SOFTWARE.
    Internal,
    /// Interrupted by Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it).
    Interrupted,
}

impl Exit {
    /// The process's exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Error => 1,
            Exit::Partial => 2,
            Exit::NotRunning => 3,
            Exit::Internal => 70,
            Exit::Interrupted => 130,
        }
    }

    /// Ends the process at once with this status (from a thread other than
    /// main's, where returning is not possible).
    pub fn exit(self) -> ! {
        std::process::exit(self.code() as i32)
    }
}

thread_local! {
    /// This thread runs a library call whose panic [`catch_library_panic`]
    /// turns into an error: the panic hook must not end the process.
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a call into a library that panics where it should return an
/// error, and gives its panic back as the panic's message instead of
/// ending the process: the `postgres` crate unwraps the creation of each
/// connection's event loop, which fails with "Too many open files" when
/// thousands of clients exhaust the process's descriptors; that is a limit
/// to raise (one line saying so), not a dbbench bug.
pub fn catch_library_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let before = CATCHING.with(|c| c.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(before));
    result.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

/// Whether the calling thread is inside [`catch_library_panic`] (for the
/// panic hook).
pub fn catching_library_panic() -> bool {
    CATCHING.with(|c| c.get())
}

/// `detail`, an error text from the system or a library, with what to do
/// when it says the process ran out of file descriptors (thousands of
/// clients under a default `ulimit -n` of 1024).
pub fn with_descriptor_advice(detail: &str) -> String {
    if detail.contains("Too many open files") || detail.contains("os error 24") {
        format!(
            "{detail}: the process is out of file descriptors; raise its open-file limit (`ulimit -n`, or \
             LimitNOFILE= for a service) or lower --threads"
        )
    } else {
        detail.to_string()
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    /// A library's panic comes back as its message, the hook stays quiet
    /// (it would end the test process), and the thread is back to normal.
    #[test]
    fn a_library_panic_comes_back_as_an_error() {
        let r: Result<(), String> = super::catch_library_panic(|| panic!("boom {}", 24));
        assert_eq!(r, Err("boom 24".to_string()));
        assert_eq!(super::catch_library_panic(|| 5), Ok(5));
        assert!(!super::catching_library_panic());
        assert!(super::with_descriptor_advice("Too many open files (os error 24)")
            .contains("raise its open-file limit (`ulimit -n`"));
        assert_eq!(super::with_descriptor_advice("Connection refused"), "Connection refused");
    }

    #[test]
    fn every_status_is_distinct() {
        let all = [Exit::Ok, Exit::Error, Exit::Partial, Exit::NotRunning, Exit::Internal, Exit::Interrupted];
        let mut codes: Vec<u8> = all.iter().map(|e| e.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }
}
