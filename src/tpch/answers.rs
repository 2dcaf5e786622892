//! Query answers compared across engines. TPC-H fixes what a correct
//! answer is (spec clause 2.1.3.5): counts and single values exactly, ratios
//! and averages within 1% after rounding to the nearest 1/100th, sums within
//! $100. Engines differ in how they print the same value (CHAR padding,
//! DECIMAL scale, floating point in SQLite), so cells are normalised first;
//! then a mismatch is a real one, and it is reported, never hidden.

use serde::{Deserialize, Serialize};

/// A query's answer: its rows as the server printed them (NULL = None).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Answer {
    /// Number of columns.
    pub columns: usize,
    /// The rows, in the order the query returned them.
    pub rows: Vec<Vec<Option<String>>>,
}

/// How two answers relate.
#[derive(Debug, Clone, PartialEq)]
pub enum Agreement {
    /// Same rows in the same order, within the tolerance.
    Same,
    /// Same rows within the tolerance, but in another order (rows whose
    /// ORDER BY keys tie may come in any order).
    SameRowsOtherOrder,
    /// A real difference, described in one line.
    Differs(String),
}

/// A cell as compared: a number, or text without trailing blanks (CHAR
/// padding differs between engines).
#[derive(Debug, Clone, PartialEq)]
enum Norm {
    Null,
    Integer(i128),
    Number(f64),
    Text(String),
}

fn normalise(cell: &Option<String>) -> Norm {
    let Some(s) = cell else { return Norm::Null };
    let t = s.trim_end();
    // Integers (counts, keys, sizes) stay exact; anything with a point or
    // exponent is a measured amount.
    if let Ok(i) = t.parse::<i128>() {
        return Norm::Integer(i);
    }
    if t.contains(['.', 'e', 'E']) && !t.contains(' ') {
        if let Ok(f) = t.parse::<f64>() {
            if f.is_finite() {
                return Norm::Number(f);
            }
        }
    }
    Norm::Text(t.to_string())
}

/// Rounds to the nearest 1/100th, as the spec compares.
fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Whether two cells agree. An integer and a decimal with the same value
/// agree (`42` and `42.00`: one engine prints a SUM of integers without a
/// scale). Decimal amounts agree within 1% of the expected value after
/// rounding to 1/100th (the spec's rule for ratios and averages), and
/// always within a cent (floating-point sums in SQLite). The spec's other
/// rule, sums within $100, needs to know which column is a sum; applied to
/// every column it would pass small values that differ wildly, so it is not
/// used (for the sums TPC-H produces, 1% is the looser bound anyway).
fn cells_agree(a: &Norm, b: &Norm) -> bool {
    match (a, b) {
        (Norm::Integer(x), Norm::Integer(y)) => x == y,
        (Norm::Text(x), Norm::Text(y)) => x == y,
        (Norm::Null, Norm::Null) => true,
        (Norm::Integer(_) | Norm::Number(_), Norm::Integer(_) | Norm::Number(_)) => {
            let as_f = |n: &Norm| match n {
                Norm::Integer(i) => *i as f64,
                Norm::Number(f) => *f,
                _ => unreachable!("numbers only"),
            };
            let (x, y) = (cents(as_f(a)), cents(as_f(b)));
            let diff = (x - y).abs();
            diff <= 0.010_000_1 || diff <= 0.01 * y.abs()
        }
        _ => false,
    }
}

fn row_text(row: &[Option<String>]) -> String {
    row.iter().map(|c| c.as_deref().map(str::trim_end).unwrap_or("NULL")).collect::<Vec<_>>().join(" | ")
}

/// Compares `actual` with `expected` (the first configuration's answer).
pub fn compare(expected: &Answer, actual: &Answer) -> Agreement {
    if expected.columns != actual.columns {
        return Agreement::Differs(format!("{} columns instead of {}", actual.columns, expected.columns));
    }
    if expected.rows.len() != actual.rows.len() {
        return Agreement::Differs(format!("{} rows instead of {}", actual.rows.len(), expected.rows.len()));
    }
    let norm = |a: &Answer| -> Vec<Vec<Norm>> { a.rows.iter().map(|r| r.iter().map(normalise).collect()).collect() };
    let (e, a) = (norm(expected), norm(actual));
    let rows_agree = |x: &[Norm], y: &[Norm]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| cells_agree(p, q));
    let first_difference = (0..e.len()).find(|&i| !rows_agree(&e[i], &a[i]));
    let Some(i) = first_difference else { return Agreement::Same };
    // Another order? Match every expected row with an unused actual row.
    let mut used = vec![false; a.len()];
    let all_found = e.iter().all(|er| match (0..a.len()).find(|&j| !used[j] && rows_agree(er, &a[j])) {
        Some(j) => {
            used[j] = true;
            true
        }
        None => false,
    });
    if all_found {
        return Agreement::SameRowsOtherOrder;
    }
    if e[i].len() != a[i].len() {
        return Agreement::Differs(format!("row {}: {} cells instead of {}", i + 1, a[i].len(), e[i].len()));
    }
    let col = (0..e[i].len()).find(|&c| !cells_agree(&e[i][c], &a[i][c])).unwrap_or(0);
    Agreement::Differs(format!(
        "row {} column {}: {} instead of {} (row: {} instead of {})",
        i + 1,
        col + 1,
        actual.rows[i][col].as_deref().map(str::trim_end).unwrap_or("NULL"),
        expected.rows[i][col].as_deref().map(str::trim_end).unwrap_or("NULL"),
        row_text(&actual.rows[i]),
        row_text(&expected.rows[i])
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ragged_rows_differ_without_panicking() {
        let a = Answer { columns: 2, rows: vec![vec![Some("1".into()), Some("2".into())]] };
        let b = Answer { columns: 2, rows: vec![vec![Some("1".into())]] };
        assert_eq!(compare(&a, &b), Agreement::Differs("row 1: 1 cells instead of 2".into()));
    }

    fn ans(rows: &[&[&str]]) -> Answer {
        Answer {
            columns: rows.first().map_or(0, |r| r.len()),
            rows: rows.iter().map(|r| r.iter().map(|c| Some(c.to_string())).collect()).collect(),
        }
    }

    #[test]
    fn engines_printing_the_same_values_differently_agree() {
        // MariaDB pads CHAR in nothing, PostgreSQL keeps it; DECIMAL scales differ; SQLite sums in binary floating point.
        let my = ans(&[&["BUILDING  ", "37799.00", "3.7821"], &["A", "1", "5"]]);
        let pg = ans(&[&["BUILDING", "37799.0000000000", "3.78214285714285714286"], &["A", "1", "5"]]);
        let sq = ans(&[&["BUILDING", "37798.99999999997", "3.782142857142857"], &["A", "1", "5.0"]]);
        assert_eq!(compare(&my, &pg), Agreement::Same);
        assert_eq!(compare(&my, &sq), Agreement::Same);
    }

    #[test]
    fn real_differences_are_reported() {
        let a = ans(&[&["R", "F", "3785523"], &["N", "O", "7459297"]]);
        // A count off by one is a different answer.
        let b = ans(&[&["R", "F", "3785524"], &["N", "O", "7459297"]]);
        match compare(&a, &b) {
            Agreement::Differs(d) => assert!(d.starts_with("row 1 column 3: 3785524 instead of 3785523"), "{d}"),
            x => panic!("{x:?}"),
        }
        // An amount 2% off is different; 0.5% off (spec: within 1%) is not.
        let x = ans(&[&["1000.00"]]);
        assert!(matches!(compare(&x, &ans(&[&["1020.00"]])), Agreement::Differs(_)));
        assert_eq!(compare(&x, &ans(&[&["1005.00"]])), Agreement::Same);
        // A large sum: 1% is the bound.
        let s = ans(&[&["56586554400.73"]]);
        assert_eq!(compare(&s, &ans(&[&["56586554480.10"]])), Agreement::Same);
        assert_eq!(compare(&ans(&[&["12.34"]]), &ans(&[&["12.35"]])), Agreement::Same, "a cent of float noise");
        assert!(matches!(compare(&ans(&[&["12.34"]]), &ans(&[&["12.50"]])), Agreement::Differs(_)));
        assert!(
            matches!(compare(&a, &ans(&[&["R", "F", "3785523"]])), Agreement::Differs(d) if d == "1 rows instead of 2")
        );
        assert!(
            matches!(compare(&a, &ans(&[&["R", "F"], &["N", "O"]])), Agreement::Differs(d) if d == "2 columns instead of 3")
        );
        // Text must match exactly (after trailing blanks).
        assert!(matches!(
            compare(&ans(&[&["Supplier#000000001"]]), &ans(&[&["Supplier#000000002"]])),
            Agreement::Differs(_)
        ));
    }

    #[test]
    fn tied_rows_in_another_order_are_said_so() {
        let a = ans(&[&["1", "x"], &["1", "y"]]);
        let b = ans(&[&["1", "y"], &["1", "x"]]);
        assert_eq!(compare(&a, &b), Agreement::SameRowsOtherOrder);
    }
}
