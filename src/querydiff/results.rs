//! Whether two servers returned the same result set.
//!
//! Rows are compared in order when the query has a top-level ORDER BY,
//! otherwise as multisets (both sides sorted first). Engines print the same
//! value differently, so cells are normalised before comparing:
//! * CHAR padding: trailing blanks are ignored;
//! * decimals: each side's precision in a column is the most decimal
//!   places it printed there; both sides' cells are rounded to the smaller
//!   of the two (MariaDB's `AVG` prints 4 more places than its argument,
//!   PostgreSQL's 16), then trailing zeros dropped, so `2.5000` =
//!   `2.50000000000000000000` = `2.5`, while one short value (`0.5`) does
//!   not blur the column's other rows (`0.12` ≠ `0.14`);
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
    let scales: Vec<Option<usize>> = (0..width)
        .map(|c| {
            let most = |rows: &Rows| rows.iter().filter_map(|r| r[c].as_deref().and_then(decimals)).max();
            match (most(a), most(b)) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            }
        })
        .collect();
    let norm = |rows: &Rows| -> Vec<Vec<Option<String>>> {
        rows.iter()
            .map(|r| r.iter().enumerate().map(|(c, cell)| cell.as_deref().map(|s| normalise(s, scales[c]))).collect())
            .collect()
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
        format!(
            "{count}{}row {}: {} vs {}",
            if sorted { "sorted " } else { "" },
            i + 1,
            show(na.get(i)),
            show(nb.get(i))
        )
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

/// The comparable form of a cell; `scale`: its column's, see the module docs.
fn normalise(s: &str, scale: Option<usize>) -> String {
    let t = s.trim_end();
    let (Some(d), Some(scale)) = (decimals(t), scale) else { return t.to_string() };
    let rounded = if d > scale { round_decimal(t, scale) } else { t.to_string() };
    // Trailing zeros of the fraction only: rounded to 0 places, `20` stays 20.
    let r = if rounded.contains('.') { rounded.trim_end_matches('0').trim_end_matches('.') } else { rounded.as_str() };
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
    format!(
        "{}{}{}{}",
        if neg { "-" } else { "" },
        if i.is_empty() { "0" } else { i },
        if scale > 0 { "." } else { "" },
        f
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Rows {
        r.iter()
            .map(|row| row.iter().map(|c| if *c == "NULL" { None } else { Some(c.to_string()) }).collect())
            .collect()
    }

    #[test]
    fn engines_printing_differences_are_not_differences() {
        let maria = rows(&[&["1", "2.5000", "abc  "], &["2", "1.6667", "x"]]);
        let pg = rows(&[&["1", "2.5000000000000000", "abc"], &["2", "1.66666666666666666667", "x"]]);
        assert_eq!(compare(&maria, &pg, false), (Agreement::Same, None));
        assert_eq!(compare(&rows(&[&["42"]]), &rows(&[&["42.00"]]), false).0, Agreement::Same);
        assert_eq!(
            compare(&rows(&[&["-0.0001"]]), &rows(&[&["0.0"]]), false).0,
            Agreement::Same,
            "rounded to one place both are 0"
        );
    }

    #[test]
    fn one_short_value_does_not_blur_a_column() {
        let same = |a: &[&[&str]], b: &[&[&str]]| compare(&rows(a), &rows(b), false).0 == Agreement::Same;
        assert!(!same(&[&["0.5"], &["0.12"]], &[&["0.5"], &["0.14"]]));
        assert!(!same(&[&["0.5"], &["0.9999"]], &[&["0.5000"], &["1.0000"]]));
        // The limit of the rule: a side that printed at most one place
        // (`0.5`, `1`) is compared at one place, so 0.9999 rounds to its 1.
        assert!(same(&[&["0.5"], &["0.9999"]], &[&["0.5"], &["1"]]));
        assert!(!same(&[&["5."], &["20.4"]], &[&["5."], &["2.0"]]), "20 rounded to 0 places is not 2");
        assert!(same(&[&["0.5"], &["0.1250"]], &[&["0.5000000"], &["0.1250000"]]));
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
        assert_eq!(
            compare(&rows(&[&["NULL"]]), &rows(&[&[""]]), false).0,
            Agreement::Differs,
            "NULL is not the empty string"
        );
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
}
