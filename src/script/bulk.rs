//! Bulk inserts at the server's bulk-load speed (docs/compatibility.md,
//! "Bulk inserts and prepare").
//!
//! Two ways in, one rule (`--db-bulk-load`, default `auto`):
//! - the sysbench API (`con:bulk_insert_init/next/done`): each flush of
//!   tuples is parsed here; when the prefix is a plain
//!   `INSERT INTO table(columns) VALUES` and every value a plain literal
//!   (an integer, a string without backslash, `|`, CR or LF), the rows go
//!   through the driver's bulk load (`LOAD DATA LOCAL` from memory, `COPY
//!   FROM STDIN`) instead of the INSERT statement, which is sent otherwise;
//! - the built-in OLTP prepare (`con:bulk_insert_sbtest`): the rows that
//!   `oltp_common.lua`'s loop would format, drawn in the same order from the
//!   same generator, built here, and streamed as ONE bulk load per table
//!   (or as the same INSERT statements the Lua loop would send).
//!
//! Either way the data is the same for a given `--rand-seed`: the values are
//! the ones the INSERT text holds, converted by the server from text in both
//! cases.

use crate::rand;

/// Bytes of one INSERT statement (sysbench's and the prelude's flush size).
pub const INSERT_BYTES: usize = 524_288;
/// Bytes of tuples per bulk load of the sysbench API (one flush); bigger
/// flushes mean fewer statements and commits.
pub const LOAD_FLUSH_BYTES: usize = 4 << 20;
/// Bytes of lines the built-in prepare hands the driver per call.
const LOAD_CHUNK_BYTES: usize = 256 * 1024;

/// Where a `bulk_insert_init` prefix inserts: `INSERT INTO table(columns)
/// VALUES`, names as written (unquoted identifiers, optionally
/// `schema.table`).
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Target {
    /// The table as written.
    pub table: String,
    /// The columns as written, in order.
    pub columns: Vec<String>,
}

impl Target {
    /// The columns as `&str`s, as the driver takes them.
    pub fn column_refs(&self) -> Vec<&str> {
        self.columns.iter().map(String::as_str).collect()
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn ws(&mut self) -> usize {
        let start = self.i;
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
        self.i - start
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.s.get(self.i) == Some(&b);
        self.i += usize::from(hit);
        hit
    }

    fn keyword(&mut self, k: &str) -> Option<()> {
        let end = self.i + k.len();
        let word = self.s.get(self.i..end)?;
        let next_is_ident = self.s.get(end).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_');
        (word.eq_ignore_ascii_case(k.as_bytes()) && !next_is_ident).then(|| self.i = end)
    }

    fn ident(&mut self) -> Option<&str> {
        let start = self.i;
        if !self.s.get(start).is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_') {
            return None;
        }
        while self.s.get(self.i).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$') {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).ok()
    }
}

/// The target of a plain `INSERT INTO t(c1, c2) VALUES` prefix; None for
/// anything else (INSERT IGNORE, REPLACE, no column list, quoted names...),
/// which then stays an INSERT statement.
pub fn parse_prefix(prefix: &str) -> Option<Target> {
    let mut p = Cursor { s: prefix.as_bytes(), i: 0 };
    p.ws();
    p.keyword("INSERT")?;
    (p.ws() > 0).then_some(())?;
    p.keyword("INTO")?;
    (p.ws() > 0).then_some(())?;
    let mut table = p.ident()?.to_string();
    if p.eat(b'.') {
        table.push('.');
        table.push_str(p.ident()?);
    }
    p.ws();
    p.eat(b'(').then_some(())?;
    let mut columns = Vec::new();
    loop {
        p.ws();
        columns.push(p.ident()?.to_string());
        p.ws();
        if p.eat(b',') {
            continue;
        }
        p.eat(b')').then_some(())?;
        break;
    }
    p.ws();
    p.keyword("VALUES")?;
    p.ws();
    (p.i == p.s.len()).then_some(Target { table, columns })
}

/// The tuples of one flush (`(1, 'a'),(2, 'b')`) as the driver's bulk-load
/// lines (`1|a\n2|b\n`), appended to `out`; returns the row count. None (and
/// `out` as it was) when a tuple is not `ncols` plain literals: an integer
/// as the server would print it (`0`, `-?[1-9][0-9]*`: `007` is 7 to an
/// INSERT but `007` to a CHAR column loaded as text), or a single-quoted
/// string (`''` for a quote) without backslash (MySQL's escape, literal in
/// PostgreSQL), `|`, CR, LF or NUL. NULL, expressions and other literals
/// keep the INSERT statement.
pub fn tuples_to_lines(tuples: &[u8], ncols: usize, out: &mut Vec<u8>) -> Option<u64> {
    let start = out.len();
    let rows = convert(tuples, ncols, out);
    if rows.is_none() {
        out.truncate(start);
    }
    rows
}

fn convert(t: &[u8], ncols: usize, out: &mut Vec<u8>) -> Option<u64> {
    let mut p = Cursor { s: t, i: 0 };
    let mut rows = 0;
    p.ws();
    if p.i == t.len() {
        return Some(0);
    }
    loop {
        p.eat(b'(').then_some(())?;
        for col in 0..ncols {
            p.ws();
            if col > 0 {
                out.push(b'|');
            }
            match *t.get(p.i)? {
                b'\'' => {
                    p.i += 1;
                    loop {
                        let c = *t.get(p.i)?;
                        p.i += 1;
                        match c {
                            b'\'' if t.get(p.i) == Some(&b'\'') => {
                                out.push(b'\'');
                                p.i += 1;
                            }
                            b'\'' => break,
                            b'\\' | b'|' | b'\n' | b'\r' | 0 => return None,
                            c => out.push(c),
                        }
                    }
                }
                b'-' | b'0'..=b'9' => {
                    let s = p.i;
                    p.eat(b'-');
                    let digits = p.i;
                    while t.get(p.i).is_some_and(u8::is_ascii_digit) {
                        p.i += 1;
                    }
                    let number = &t[digits..p.i];
                    let canonical = match number {
                        [] => false,
                        [b'0'] => digits == s,
                        [first, ..] => *first != b'0',
                    };
                    if !canonical {
                        return None;
                    }
                    out.extend_from_slice(&t[s..p.i]);
                }
                _ => return None,
            }
            p.ws();
            p.eat(if col + 1 < ncols { b',' } else { b')' }).then_some(())?;
        }
        out.push(b'\n');
        rows += 1;
        p.ws();
        if p.i == t.len() {
            return Some(rows);
        }
        p.eat(b',').then_some(())?;
        p.ws();
    }
}

/// The rows of `oltp_common.lua`'s `create_table` loop: for row i,
/// `k = sysbench.rand.default(1, table_size)`, `c = sysbench.rand.string(c_fmt)`,
/// `pad = sysbench.rand.string(pad_fmt)`, drawn in that order from this
/// thread's generator, as the Lua loop draws them.
pub struct SbtestRows {
    next: u64,
    last: u64,
    with_id: bool,
    table_size: u32,
    c_fmt: Vec<u8>,
    pad_fmt: Vec<u8>,
    c: Vec<u8>,
    pad: Vec<u8>,
}

impl SbtestRows {
    /// Rows 1..=`rows`; the formats must give ASCII text that needs no
    /// quoting in SQL nor in a bulk-load line.
    pub fn new(rows: u64, with_id: bool, table_size: u32, c_fmt: &[u8], pad_fmt: &[u8]) -> Result<Self, String> {
        if let Some(b) = c_fmt
            .iter()
            .chain(pad_fmt)
            .find(|&&b| !b.is_ascii() || matches!(b, b'\'' | b'\\' | b'|' | b'\n' | b'\r' | 0))
        {
            return Err(format!("bulk_insert_sbtest: the string formats may not hold byte {b:#04x}"));
        }
        Ok(SbtestRows {
            next: 1,
            last: rows,
            with_id,
            table_size,
            c: vec![0; c_fmt.len()],
            pad: vec![0; pad_fmt.len()],
            c_fmt: c_fmt.to_vec(),
            pad_fmt: pad_fmt.to_vec(),
        })
    }

    /// Draws the next row; None after the last.
    fn draw(&mut self) -> Option<(u64, u32)> {
        if self.next > self.last {
            return None;
        }
        let id = self.next;
        self.next += 1;
        let k = rand::default(1, self.table_size);
        rand::fill_string(&self.c_fmt, &mut self.c);
        rand::fill_string(&self.pad_fmt, &mut self.pad);
        Some((id, k))
    }

    /// Appends the next row as the Lua loop's `string.format("(%d, %d, '%s', '%s')", ...)`
    /// (without the id when ids are the server's); its length, or None after the last.
    pub fn push_tuple(&mut self, out: &mut Vec<u8>) -> Option<usize> {
        let start = out.len();
        let (id, k) = self.draw()?;
        out.push(b'(');
        if self.with_id {
            push_u64(out, id);
            out.extend_from_slice(b", ");
        }
        push_u64(out, u64::from(k));
        out.extend_from_slice(b", '");
        out.extend_from_slice(&self.c);
        out.extend_from_slice(b"', '");
        out.extend_from_slice(&self.pad);
        out.extend_from_slice(b"')");
        Some(out.len() - start)
    }

    /// Appends the next row as a bulk-load line (`id|k|c|pad\n`); false after the last.
    fn push_line(&mut self, out: &mut Vec<u8>) -> bool {
        let Some((id, k)) = self.draw() else { return false };
        if self.with_id {
            push_u64(out, id);
            out.push(b'|');
        }
        push_u64(out, u64::from(k));
        out.push(b'|');
        out.extend_from_slice(&self.c);
        out.push(b'|');
        out.extend_from_slice(&self.pad);
        out.push(b'\n');
        true
    }

    /// A chunk of lines for the driver's row source: about
    /// [`LOAD_CHUNK_BYTES`]; returns the rows added and whether more follow.
    pub fn push_lines(&mut self, out: &mut Vec<u8>) -> (u64, bool) {
        let mut n = 0;
        while out.len() < LOAD_CHUNK_BYTES {
            if !self.push_line(out) {
                return (n, false);
            }
            n += 1;
        }
        (n, self.next <= self.last)
    }
}

fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(t: &str, n: usize) -> Option<(u64, String)> {
        let mut out = b"kept".to_vec();
        let r = tuples_to_lines(t.as_bytes(), n, &mut out);
        let text = String::from_utf8(out).unwrap();
        match r {
            Some(rows) => Some((rows, text.strip_prefix("kept").unwrap().to_string())),
            None => {
                assert_eq!(text, "kept", "a refused flush leaves the buffer as it was");
                None
            }
        }
    }

    #[test]
    fn prefixes_of_plain_inserts_only() {
        let t = |table: &str, cols: &[&str]| {
            Some(Target { table: table.into(), columns: cols.iter().map(|c| c.to_string()).collect() })
        };
        assert_eq!(parse_prefix("INSERT INTO sbtest1(k, c, pad) VALUES"), t("sbtest1", &["k", "c", "pad"]));
        assert_eq!(parse_prefix(" insert  into db.t_2 ( id,k )values "), t("db.t_2", &["id", "k"]));
        for bad in [
            "INSERT INTO sbtest1 VALUES",
            "INSERT IGNORE INTO t(a) VALUES",
            "REPLACE INTO t(a) VALUES",
            "INSERT INTO `t`(a) VALUES",
            "INSERT INTO \"t\"(a) VALUES",
            "INSERT INTO t(a) VALUES (1)",
            "INSERT INTO t(a) SELECT",
            "INSERTINTO t(a) VALUES",
            "INSERT INTO t(a,) VALUES",
            "INSERT INTO t(a) VALUESX",
        ] {
            assert_eq!(parse_prefix(bad), None, "{bad}");
        }
    }

    #[test]
    fn tuples_of_plain_literals_become_lines() {
        assert_eq!(lines("(1, 2, 'ab-1', 'x')", 4), Some((1, "1|2|ab-1|x\n".into())));
        assert_eq!(lines(" ( -5 ,'it''s' ) ,(0,'') ", 2), Some((2, "-5|it's\n0|\n".into())));
        assert_eq!(lines("", 3), Some((0, String::new())));
        assert_eq!(lines("(12345678901234567890,'é')", 2), Some((1, "12345678901234567890|é\n".into())));
    }

    #[test]
    fn anything_else_keeps_the_insert() {
        for bad in [
            "(1, NULL)",
            "(1, 'a\\'b')",
            "(1, 'a|b')",
            "(1, 'a\nb')",
            "(007, 'a')",
            "(-0, 'a')",
            "(1.5, 'a')",
            "(1e3, 'a')",
            "(-, 'a')",
            "(1, \"a\")",
            "(1, 'a' 'b')",
            "(1, 'a')(2, 'b')",
            "(1, 'a'),",
            "(1, 'a', 3)",
            "(1)",
            "(1, 'a'",
            "(1, 'open",
            "(1, NOW())",
            "(1, 'a'),(2, 'b'),(3, x'41')",
        ] {
            assert_eq!(lines(bad, 2), None, "{bad}");
        }
    }

    /// The generator's tuples are the Lua loop's text, its lines that text
    /// converted, and both draw the same rows for the same seed.
    #[test]
    fn sbtest_rows_as_tuples_and_lines_agree() {
        for with_id in [true, false] {
            rand::seed_thread(rand::Phase::Command, 3);
            let mut g = SbtestRows::new(500, with_id, 1000, b"###-###", b"@@#").unwrap();
            let mut tuples = Vec::new();
            while let Some(_len) = g.push_tuple(&mut tuples) {
                tuples.push(b',');
            }
            tuples.pop();
            let first = String::from_utf8_lossy(&tuples[..40]).into_owned();
            assert!(first.starts_with(if with_id { "(1, " } else { "(" }), "{first}");
            let mut want = Vec::new();
            assert_eq!(tuples_to_lines(&tuples, if with_id { 4 } else { 3 }, &mut want), Some(500));
            rand::seed_thread(rand::Phase::Command, 3);
            let mut g = SbtestRows::new(500, with_id, 1000, b"###-###", b"@@#").unwrap();
            let (mut got, mut rows) = (Vec::new(), 0);
            loop {
                let (n, more) = g.push_lines(&mut got);
                rows += n;
                if !more {
                    break;
                }
            }
            assert_eq!(rows, 500);
            assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap());
        }
        assert!(SbtestRows::new(1, false, 1, b"#'", b"#").is_err());
    }
}
