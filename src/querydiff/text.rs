//! The terminal report: a table of the records the filter matched, then
//! perfrun's block per record (execution time and every counter that
//! differs: value 1, value 2, delta, ratio), then the queries whose results
//! differ and those that failed — those two lists whatever the filter says,
//! because a wrong answer or an error is never hidden — and the counts.

use super::filter::Filter;
use super::record::{ratio, Record, Saved, Summary};
use super::results::Agreement;
use std::fmt::Write;

/// One line per query while the run goes (stderr).
pub fn progress_line(recs: &[Record]) -> String {
    let Some(first) = recs.first() else { return String::new() };
    let mut parts = Vec::new();
    for r in recs {
        let t = |k: usize| match (&r.sides[k].error, r.sides[k].seconds()) {
            (Some(_), _) => "error".to_string(),
            (None, Some(s)) => format!("{s:.6}s"),
            (None, None) => "-".to_string(),
        };
        parts.push(format!("{} {} vs {} ({})", r.temperature.as_str(), t(0), t(1), r.result.as_str()));
    }
    format!("{}: {}", first.name, parts.join(", "))
}

/// A number as the table shows it: integers without decimals.
pub fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// A ratio with two decimals, or `-` where there is none.
pub fn ratio_text(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |r| format!("{r:.2}"))
}

/// The first line of a query, shortened to `max` characters.
pub fn one_line(sql: &str, max: usize) -> String {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max - 1).collect::<String>())
    } else {
        flat
    }
}

/// Rows of a record's detail: (name, value1, value2, delta, ratio) for the
/// execution time, the row count when it differs, and every counter whose
/// two values differ.
pub fn detail_rows(r: &Record) -> Vec<[String; 5]> {
    let mut rows = Vec::new();
    let secs = |x: Option<f64>| x.map_or("-".to_string(), |s| format!("{s:.6}s"));
    let (t1, t2) = (r.sides[0].seconds(), r.sides[1].seconds());
    rows.push([
        "Execution time".to_string(),
        secs(t1),
        secs(t2),
        t1.zip(t2).map_or("-".to_string(), |(a, b)| format!("{:+.6}s", b - a)),
        ratio_text(t1.zip(t2).and_then(|(a, b)| ratio(a, b))),
    ]);
    let mut pairs: Vec<(String, Option<f64>, Option<f64>)> = Vec::new();
    if r.sides[0].rows != r.sides[1].rows {
        pairs.push(("Result_rows".into(), r.sides[0].rows.map(|x| x as f64), r.sides[1].rows.map(|x| x as f64)));
    }
    pairs.extend(r.counters.iter().map(|(k, [a, b])| (k.clone(), *a, *b)));
    for (name, a, b) in pairs {
        // Equal counters say nothing; nor does a zero that only one server
        // has (MariaDB and PostgreSQL count different things).
        if a == b || (a.is_none() || b.is_none()) && a.or(b) == Some(0.0) {
            continue;
        }
        let v = |x: Option<f64>| x.map_or("-".to_string(), number);
        rows.push([
            name,
            v(a),
            v(b),
            a.zip(b).map_or("-".to_string(), |(a, b)| number(b - a)),
            ratio_text(a.zip(b).and_then(|(a, b)| ratio(a, b))),
        ]);
    }
    rows
}

/// Lays out rows with the first column left-aligned and the others right-aligned.
fn table(out: &mut String, header: &[String], rows: &[Vec<String>], indent: &str) {
    let cols = header.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).chain([header[c].chars().count()]).max().unwrap_or(0))
        .collect();
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = indent.to_string();
        for c in 0..cols {
            if c == 0 {
                let _ = write!(line, "{:<w$}", r[c], w = width[c]);
            } else {
                let _ = write!(line, "  {:>w$}", r[c], w = width[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The whole terminal report.
pub fn render(saved: &Saved, filter: Option<&Filter>, sum: &Summary) -> String {
    let mut out = String::new();
    let [s1, s2] = &saved.run.servers;
    let _ = writeln!(
        out,
        "\nquerydiff: {} ({}, {}) vs {} ({}, {})",
        s1.label, s1.driver, s1.version, s2.label, s2.driver, s2.version
    );
    let _ = writeln!(
        out,
        "queries: {}; {} cold and {} warm executions per query and server; times: median, statement sent to last row received",
        saved.run.queries, saved.run.cold, saved.run.warm
    );
    if let Some(f) = filter {
        let _ = writeln!(out, "filter: {}", f.source());
    }
    let matched: Vec<&Record> = saved.records.iter().filter(|r| r.matched).collect();
    if !matched.is_empty() {
        let header: Vec<String> = [
            "query",
            "temp",
            &format!("{} s", s1.label),
            &format!("{} s", s2.label),
            "ratio",
            "rows",
            "result",
            "plan",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let rows: Vec<Vec<String>> = matched
            .iter()
            .map(|r| {
                let t = |k: usize| {
                    if r.sides[k].error.is_some() {
                        "error".to_string()
                    } else {
                        r.sides[k].seconds().map_or("-".into(), |s| format!("{s:.6}"))
                    }
                };
                let (a, b) = (r.sides[0].seconds(), r.sides[1].seconds());
                let rows = match (r.sides[0].rows, r.sides[1].rows) {
                    (Some(x), Some(y)) if x == y => x.to_string(),
                    (None, None) => "-".to_string(),
                    (x, y) => format!(
                        "{}/{}",
                        x.map_or("-".into(), |v| v.to_string()),
                        y.map_or("-".into(), |v| v.to_string())
                    ),
                };
                vec![
                    r.name.clone(),
                    r.temperature.as_str().into(),
                    t(0),
                    t(1),
                    ratio_text(a.zip(b).and_then(|(a, b)| ratio(a, b))),
                    rows,
                    r.result.as_str().into(),
                    r.plans.map_or("-", |p| p.as_str()).into(),
                ]
            })
            .collect();
        out.push('\n');
        table(&mut out, &header, &rows, "");
        // Failed records have nothing to detail: they are listed under Errors.
        for r in matched.iter().filter(|r| !r.failed()) {
            let _ = writeln!(out, "\nQuery {} ({}): {}", r.name, r.temperature.as_str(), one_line(&r.query, 100));
            let header: Vec<String> =
                ["", &s1.label, &s2.label, "delta", "ratio"].iter().map(|s| s.to_string()).collect();
            let rows: Vec<Vec<String>> = detail_rows(r).into_iter().map(|r| r.to_vec()).collect();
            table(&mut out, &header, &rows, "  ");
        }
    }
    let listed = |pick: &dyn Fn(&Record) -> Option<String>| -> Vec<String> {
        let mut seen = std::collections::BTreeSet::new();
        saved
            .records
            .iter()
            .filter_map(|r| pick(r).filter(|_| seen.insert(r.name.clone())).map(|t| format!("  {}: {t}", r.name)))
            .collect()
    };
    let differ = listed(&|r| {
        (r.result == Agreement::Differs)
            .then(|| format!("{} ({})", r.result_detail.clone().unwrap_or_default(), r.temperature.as_str()))
    });
    if !differ.is_empty() {
        let _ = writeln!(out, "\nDIFFERENT RESULTS ({} vs {}):\n{}", s1.label, s2.label, differ.join("\n"));
    }
    let order = listed(&|r| (r.result == Agreement::OtherOrder).then(|| r.result_detail.clone().unwrap_or_default()));
    if !order.is_empty() {
        let _ = writeln!(out, "\nSame rows in another order despite ORDER BY (ties, or a bug):\n{}", order.join("\n"));
    }
    let errors = listed(&|r| {
        let e: Vec<String> = (0..2)
            .filter_map(|k| r.sides[k].error.as_ref().map(|e| format!("{}: {e}", saved.run.servers[k].label)))
            .collect();
        (!e.is_empty()).then(|| e.join("; "))
    });
    if !errors.is_empty() {
        let _ = writeln!(out, "\nErrors:\n{}", errors.join("\n"));
    }
    let _ = writeln!(
        out,
        "\nIncoming: {}, skipped (not read-only): {}, executed: {}, errors: {}, different results: {}, other order: {}, reported: {} of {} records",
        sum.incoming, sum.skipped, sum.executed, sum.errors, sum.diverging, sum.other_order, sum.reported, sum.records
    );
    out
}
