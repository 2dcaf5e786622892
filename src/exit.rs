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

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn every_status_is_distinct() {
        let all = [Exit::Ok, Exit::Error, Exit::Partial, Exit::NotRunning, Exit::Internal, Exit::Interrupted];
        let mut codes: Vec<u8> = all.iter().map(|e| e.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }
}
