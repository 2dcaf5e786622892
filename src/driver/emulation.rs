//! What every driver shares for statements: `--db-ps-mode`, statements
//! emulated client-side (`?` placeholders found once, parameters rendered
//! as literals), the table of a connection's open statements, and the
//! errors a script's misuse of them gives.

use super::{DbError, ErrorKind, StmtId, Value};
use crate::options::Options;
use crate::sqltext::Dialect;

/// Reads `--db-ps-mode`: `Ok(true)` when prepared statements are emulated.
pub(crate) fn ps_mode_disabled(opts: &Options) -> Result<bool, String> {
    match opts.str("db_ps_mode").trim().to_ascii_lowercase().as_str() {
        "auto" | "" => Ok(false),
        "disable" => Ok(true),
        other => Err(format!("invalid --db-ps-mode value '{other}': use 'auto' or 'disable'")),
    }
}

/// A statement emulated client-side: the SQL and where its `?`s are.
#[derive(Debug, Clone)]
pub(crate) struct Emulated {
    /// The statement text with `?` placeholders.
    pub sql: String,
    /// Byte offsets of the placeholders.
    pub holes: Vec<usize>,
}

impl Emulated {
    /// Scans `sql` once (under `dialect`'s lexical rules) so that
    /// [`Emulated::render`] is a plain copy.
    pub fn new(sql: &str, dialect: Dialect) -> Emulated {
        Emulated { holes: crate::sqltext::placeholders(sql, dialect), sql: sql.to_string() }
    }

    /// Substitutes the parameters as literals; `literal` appends one value.
    pub fn render(&self, params: &[Value], literal: impl Fn(&mut String, &Value)) -> Result<String, DbError> {
        if params.len() != self.holes.len() {
            return Err(param_count_error(self.holes.len(), params.len()));
        }
        let mut out = String::with_capacity(self.sql.len() + 16 * params.len());
        let mut last = 0;
        for (&pos, v) in self.holes.iter().zip(params) {
            out.push_str(&self.sql[last..pos]);
            literal(&mut out, v);
            last = pos + 1;
        }
        out.push_str(&self.sql[last..]);
        Ok(out)
    }
}

/// A connection's statement table: ids stay stable while a statement is
/// open (also across reconnects); ids of closed statements are reused.
#[derive(Debug)]
pub(crate) struct Slots<T> {
    items: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots { items: Vec::new(), free: Vec::new() }
    }
}

impl<T> Slots<T> {
    /// Stores a statement and returns its id.
    pub fn insert(&mut self, v: T) -> StmtId {
        match self.free.pop() {
            Some(i) => {
                self.items[i] = Some(v);
                StmtId(i)
            }
            None => {
                self.items.push(Some(v));
                StmtId(self.items.len() - 1)
            }
        }
    }

    /// The open statement with this id.
    pub fn get(&self, id: StmtId) -> Option<&T> {
        self.items.get(id.0).and_then(Option::as_ref)
    }

    /// Takes the statement out; its id becomes free.
    pub fn get_mut(&mut self, id: StmtId) -> Option<&mut T> {
        self.items.get_mut(id.0).and_then(Option::as_mut)
    }

    /// Removes (closes) a statement; its id may be reused.
    pub fn remove(&mut self, id: StmtId) -> Option<T> {
        let v = self.items.get_mut(id.0).and_then(Option::take);
        if v.is_some() {
            self.free.push(id.0);
        }
        v
    }

    /// Every open statement.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten()
    }

    /// Every open statement, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut().flatten()
    }

    /// Number of open statements.
    pub fn len(&self) -> usize {
        self.items.len() - self.free.len()
    }
}

/// The error for a parameter count mismatch (a script bug, so kind Other).
pub(crate) fn param_count_error(expected: usize, got: usize) -> DbError {
    DbError {
        kind: ErrorKind::Other,
        code: 0,
        sqlstate: String::new(),
        message: format!("statement expects {expected} parameter(s), {got} given"),
    }
}

/// Executing a closed or unknown statement is a script bug.
pub(crate) fn closed_stmt(stmt: StmtId) -> DbError {
    DbError {
        kind: ErrorKind::Other,
        code: 0,
        sqlstate: String::new(),
        message: format!("prepared statement #{} is closed or was never prepared", stmt.0),
    }
}
