//! Whether two servers returned the same result set.
//!
//! Rows are compared in order when the query has a top-level ORDER BY,
//! otherwise as multisets (both sides sorted first). Engines print the same
//! value differently, so cells are normalised before comparing:
//! * CHAR padding: trailing blanks are ignored;
//! * decimals: a column's decimal cells are rounded to the fewest decimal
//!   places either side printed in that column (MariaDB's `AVG` prints 4
//!   more places than its argument, PostgreSQL's 16), then trailing zeros
//!   dropped, so `2.5000` = `2.50000000000000000000` = `2.5`;
//! * an integer equals a decimal only when the decimal is whole (`42` =
//!   `42.00`, but `0` ≠ `0.5000`: integer division on one side is a real
//!   difference).
//!
//! Anything else is compared as text, exactly. A difference is described
//! by its first differing row.

use serde::{Deserialize, Serialize};

/// How the two result sets relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    /// The same rows (in the same order where the query orders them).
    Same,
    /// The same rows, in another order, although the query has ORDER BY
    /// (legitimate where the ORDER BY keys tie; a bug where they do not).
    OtherOrder,
    /// Different rows.
    Differs,
    /// Not compared: a side failed.
    NotCompared,
}

impl Agreement {
    /// The word the filter's `Result` variable and the JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            Agreement::Same => "same",
            Agreement::OtherOrder => "other_order",
            Agreement::Differs => "differs",
            Agreement::NotCompared => "not_compared",
        }
    }
}

type Rows = Vec<Vec<Option<String>>>;

/// Compares `a` (server 1) with `b` (server 2); `ordered`: the query has a
/// top-level ORDER BY. Returns the agreement and, for a difference, one line.
pub fn compare(a: &Rows, b: &Rows, ordered: bool) -> (Agreement, Option<String>) {
    let width = a.first().or(b.first()).map_or(0, Vec::len);
    if let Some(r) = a.iter().chain(b).find(|r| r.len() != width) {
        return (Agreement::Differs, Some(format!("rows of {} and {width} columns", r.len())));
    }
    let scales: Vec<Option<usize>> = (0..width).map(|c| column_scale(a.iter().chain(b).map(|r| r[c].as_deref()))).collect();
    let norm = |rows: &Rows| -> Vec<Vec<Option<String>>> {
        rows.iter().map(|r| r.iter().enumerate().map(|(c, cell)| cell.as_deref().map(|s| normalise(s, scales[c]))).collect()).collect()
    };
    let (mut na, mut nb) = (norm(a), norm(b));
    if na == nb {
        return (Agreement::Same, None);
    }
    let describe = |na: &[Vec<Option<String>>], nb: &[Vec<Option<String>>], sorted: bool| {
        let count = if a.len() != b.len() { format!("{} rows vs {}; ", a.len(), b.len()) } else { String::new() };
        let i = (0..na.len().max(nb.len())).find(|&i| na.get(i) != nb.get(i)).unwrap_or(0);
        let show = |r: Option<&Vec<Option<String>>>| match r {
            Some(r) => r.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect::<Vec<_>>().join(" | "),
            None => "(no row)".to_string(),
        };
        format!("{count}{}row {}: {} vs {}", if sorted { "sorted " } else { "" }, i + 1, show(na.get(i)), show(nb.get(i)))
    };
    let ordered_detail = describe(&na, &nb, false);
    na.sort();
    nb.sort();
    match (na == nb, ordered) {
        (true, false) => (Agreement::Same, None),
        (true, true) => (Agreement::OtherOrder, Some(format!("same rows in another order; first at {ordered_detail}"))),
        (false, true) => (Agreement::Differs, Some(ordered_detail)),
        (false, false) => (Agreement::Differs, Some(describe(&na, &nb, true))),
    }
}

/// A decimal number as printed: sign, digits, point, digits (no exponent).
fn decimals(s: &str) -> Option<usize> {
    let t = s.trim_end();
    let t = t.strip_prefix('-').unwrap_or(t);
    let (int, frac) = t.split_once('.')?;
    (!int.is_empty() || !frac.is_empty()).then_some(())?;
    (int.bytes().all(|c| c.is_ascii_digit()) && frac.bytes().all(|c| c.is_ascii_digit())).then_some(frac.len())
}

/// The fewest decimal places any decimal cell of a column has (None: no decimals).
fn column_scale<'a>(cells: impl Iterator<Item = Option<&'a str>>) -> Option<usize> {
    cells.flatten().filter_map(decimals).min()
}

/// The comparable form of a cell; `scale`: its column's, see the module docs.
fn normalise(s: &str, scale: Option<usize>) -> String {
    let t = s.trim_end();
    let (Some(d), Some(scale)) = (decimals(t), scale) else { return t.to_string() };
    let rounded = if d > scale { round_decimal(t, scale) } else { t.to_string() };
    let r = rounded.trim_end_matches('0').trim_end_matches('.');
    match r {
        "-0" | "" | "-" => "0".to_string(),
        _ => r.to_string(),
    }
}

/// Rounds a decimal string to `scale` places, half away from zero, in
/// decimal (no binary floating point: DECIMAL(65,30) values stay exact).
fn round_decimal(s: &str, scale: usize) -> String {
    let neg = s.starts_with('-');
    let t = s.trim_start_matches('-');
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes().take(scale)).map(|c| c - b'0').collect();
    if frac.as_bytes().get(scale).is_some_and(|&c| c >= b'5') {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let int_len = digits.len() - scale;
    let text: String = digits.iter().map(|d| (b'0' + d) as char).collect();
    let (i, f) = text.split_at(int_len);
    format!("{}{}{}{}", if neg { "-" } else { "" }, if i.is_empty() { "0" } else { i }, if scale > 0 { "." } else { "" }, f)
}

/// Whether the query has an ORDER BY outside parentheses, strings and
/// comments (then its row order is part of the answer).
pub fn has_top_level_order_by(sql: &str) -> bool {
    let b = sql.as_bytes();
    let (mut i, mut depth) = (0usize, 0i32);
    let mut words: Vec<String> = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' | b'`' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                words.clear();
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'(' => {
                depth += 1;
                i += 1;
                words.clear();
            }
            b')' => {
                depth -= 1;
                i += 1;
                words.clear();
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let w = sql[start..i].to_ascii_lowercase();
                if depth == 0 && w == "by" && words.last().map(String::as_str) == Some("order") {
                    return true;
                }
                words.push(w);
            }
            _ => {
                if !c.is_ascii_whitespace() {
                    words.clear();
                }
                i += 1;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Rows {
        r.iter().map(|row| row.iter().map(|c| if *c == "NULL" { None } else { Some(c.to_string()) }).collect()).collect()
    }

    #[test]
    fn engines_printing_differences_are_not_differences() {
        let maria = rows(&[&["1", "2.5000", "abc  "], &["2", "1.6667", "x"]]);
        let pg = rows(&[&["1", "2.5000000000000000", "abc"], &["2", "1.66666666666666666667", "x"]]);
        assert_eq!(compare(&maria, &pg, false), (Agreement::Same, None));
        assert_eq!(compare(&rows(&[&["42"]]), &rows(&[&["42.00"]]), false).0, Agreement::Same);
        assert_eq!(compare(&rows(&[&["-0.0001"]]), &rows(&[&["0.0"]]), false).0, Agreement::Same, "rounded to one place both are 0");
    }

    #[test]
    fn real_differences_are_reported_with_the_row() {
        let (ag, d) = compare(&rows(&[&["0.5000"]]), &rows(&[&["0"]]), false);
        assert_eq!(ag, Agreement::Differs);
        assert_eq!(d.unwrap(), "sorted row 1: 0.5 vs 0");
        let (ag, d) = compare(&rows(&[&["1"], &["2"]]), &rows(&[&["1"]]), true);
        assert_eq!(ag, Agreement::Differs);
        assert_eq!(d.unwrap(), "2 rows vs 1; row 2: 2 vs (no row)");
        assert_eq!(compare(&rows(&[&["a", "b"]]), &rows(&[&["a"]]), false).0, Agreement::Differs);
        assert_eq!(compare(&rows(&[&["NULL"]]), &rows(&[&[""]]), false).0, Agreement::Differs, "NULL is not the empty string");
    }

    #[test]
    fn order_matters_only_with_order_by() {
        let a = rows(&[&["1"], &["2"]]);
        let b = rows(&[&["2"], &["1"]]);
        assert_eq!(compare(&a, &b, false).0, Agreement::Same);
        let (ag, d) = compare(&a, &b, true);
        assert_eq!(ag, Agreement::OtherOrder);
        assert!(d.unwrap().contains("row 1: 1 vs 2"));
    }

    #[test]
    fn decimal_rounding_is_exact_and_carries() {
        assert_eq!(round_decimal("1.995", 2), "2.00");
        assert_eq!(round_decimal("-9.96", 1), "-10.0");
        assert_eq!(round_decimal("123456789012345678901234567890.123456", 3), "123456789012345678901234567890.123");
        assert_eq!(round_decimal("0.5", 0), "1");
    }

    #[test]
    fn order_by_is_found_only_at_the_top_level() {
        assert!(has_top_level_order_by("select a from t order  by a"));
        assert!(has_top_level_order_by("SELECT a FROM t ORDER\nBY a LIMIT 3"));
        assert!(!has_top_level_order_by("select * from (select a from t order by a limit 3) d"));
        assert!(!has_top_level_order_by("select 'order by' from t -- order by x"));
        assert!(!has_top_level_order_by("select a /* order by */ from t"));
        assert!(!has_top_level_order_by("select row_number() over (order by a) from t"));
        assert!(!has_top_level_order_by("select `order` by_x from t"));
    }
}
