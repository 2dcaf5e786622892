//! What every layer shares about errors (ARCHITECTURE.md, "Errors"): where
//! an error only travels up to be printed it is an `anyhow::Error` with
//! context, printed once by `subcommand::failed`; code that still returns
//! `Result<_, String>` meets it through [`text_error`].

/// A text error from code that still returns `Result<_, String>` (the
/// sysbench-compatible engine's helpers, `dsn`, `safe_fs`, TPC-H
/// documents), as an `anyhow::Error` with that text as its one message.
/// Only a `String` is accepted: calling it on what is already an
/// `anyhow::Error` would keep its outermost context and drop the causes,
/// so once a callee is converted the call stops compiling instead.
pub fn text_error(message: String) -> anyhow::Error {
    anyhow::Error::msg(message)
}
