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

/// Why a spec cannot run, and where: made where the problem is found. Here,
/// not in `lab::spec`, because two readers of a spec file make it: the lab's
/// checks (whose helpers return bare messages that `lab::spec`'s `Ctx::err`
/// places at their key path, so there is no chain of causes to keep) and
/// `dbbench report`, which reads only `[experiment]` and must not depend on
/// the lab that depends on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub file: std::path::PathBuf,
    /// 1-based; `None` when the key is absent from the file (a required key
    /// missing) or the whole file is meant.
    pub line: Option<usize>,
    /// The dotted key, arrays 1-based as a reader counts them
    /// (`workload[2].threads`); `None` for TOML syntax and whole-file errors.
    pub key_path: Option<String>,
    pub message: String,
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key_path {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SpecError {}

impl SpecError {
    /// A TOML syntax (or shape) error in spec `text` read from `path`:
    /// located by the parser's span, one line. Every reader of a spec file
    /// (the lab, `dbbench report`) shows it this way.
    pub fn from_toml(path: &std::path::Path, text: &str, e: &toml::de::Error) -> SpecError {
        SpecError {
            file: path.to_path_buf(),
            line: e.span().map(|s| line_of(text, s.start)),
            key_path: None,
            message: e.message().trim().replace('\n', " "),
        }
    }
}

/// The 1-based line of byte `offset` in `text` (past the end: the last line).
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}
