//! `--export-csv`: one row per cell (configuration × workload × threads)
//! with its summary over repeats and, for non-baseline configurations, its
//! comparison with the baseline. RFC 4180 quoting; numbers with full precision.

use super::Report;
use crate::inference::RatioCi;

/// Quotes a field when it needs it (comma, quote, line break, or leading/trailing space).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A typed field, so the spreadsheet gets numbers where CSV gets text.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// Text.
    Text(String),
    /// A number; None (or not finite) is empty.
    Num(Option<f64>),
}

fn num(x: Option<f64>) -> Field {
    Field::Num(x.filter(|v| v.is_finite()))
}

fn text(s: &str) -> Field {
    Field::Text(s.to_string())
}

/// The header and one row per cell (the CSV export and the spreadsheet's `cells` sheet).
pub fn cell_rows(r: &Report) -> (Vec<String>, Vec<Vec<Field>>) {
    let a = &r.analysis;
    let d = a.data;
    let mut head = vec![
        "experiment",
        "workload",
        "configuration",
        "threads",
        "metric",
        "n",
        "not_ok",
        "mean",
        "sd",
        "cv",
        "min",
        "max",
        "mean_ci_lo",
        "mean_ci_hi",
        "baseline",
        "ratio",
        "relative_pct",
        "ratio_ci_lo",
        "ratio_ci_hi",
        "ci",
        "p_value",
        "marks",
        "flags",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    head.extend(r.percentiles.iter().map(|p| format!("latency_p{}_ms_pooled", crate::output::pct_label(*p))));
    // The samples' summary (docs/report.md): one column per figure some cell has, raw units.
    head.extend(r.samples.cell_fields((usize::MAX, usize::MAX, 0)).into_iter().map(|(name, _)| name));
    let mut rows = Vec::new();
    for (w, wl) in d.workloads.iter().enumerate() {
        for &t in &wl.threads {
            for (c, conf) in d.configurations.iter().enumerate() {
                let Some(cell) = a.cell(c, w, t) else { continue };
                let s = cell.summary;
                let ci = cell.mean_ci(a.settings.level);
                let cmp = a.comparison(c, w, t);
                let ratio = cmp.and_then(|x| x.ratio);
                let (lo, hi, kind) = match ratio.map(|r| r.ci) {
                    Some(RatioCi::Bounded { lo, hi }) => (Some(lo), Some(hi), "bounded"),
                    Some(RatioCi::Unbounded) => (None, None, "unbounded"),
                    Some(RatioCi::Unavailable) => (None, None, "unavailable"),
                    None => (None, None, ""),
                };
                let mut row = vec![
                    text(&d.experiment.name),
                    text(&wl.name),
                    text(&conf.name),
                    num(Some(t as f64)),
                    text(&a.metrics[w].key()),
                    num(Some(cell.values.len() as f64)),
                    num(Some(cell.not_ok as f64)),
                    num(s.map(|s| s.mean)),
                    num(s.and_then(|s| s.sd)),
                    num(s.and_then(|s| s.cv())),
                    num(s.map(|s| s.min)),
                    num(s.map(|s| s.max)),
                    num(ci.map(|c| c.0)),
                    num(ci.map(|c| c.1)),
                    text(if c == a.settings.baseline { "" } else { a.baseline_name() }),
                    num(ratio.map(|r| r.ratio)),
                    num(cmp.and_then(|x| x.relative_pct())),
                    num(lo),
                    num(hi),
                    text(kind),
                    num(cmp.and_then(|x| x.p_value)),
                    text(&cmp.map(|x| x.marks()).unwrap_or_default()),
                    text(&cell_flags(d, c, w, t)),
                ];
                let pooled = r.pooled.get(&(c, w, t));
                row.extend((0..r.percentiles.len()).map(|i| num(pooled.and_then(|v| v.get(i).copied().flatten()))));
                row.extend(r.samples.cell_fields((c, w, t)).into_iter().map(|(_, v)| num(v)));
                rows.push(row);
            }
        }
    }
    (head, rows)
}

/// The validity flags of a cell's runs (`report::validity`), each kind once, space-separated.
fn cell_flags(d: &super::model::Dataset, c: usize, w: usize, t: u32) -> String {
    let mut kinds: Vec<_> = d
        .runs
        .iter()
        .filter(|r| r.configuration == c && r.workload == w && r.figures.threads == t)
        .flat_map(|r| r.flags.iter().map(|f| f.kind))
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(" ")
}

/// The CSV document: header and one line per cell.
pub fn cells(r: &Report) -> String {
    let (head, rows) = cell_rows(r);
    let mut o = head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",") + "\n";
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .map(|f| match f {
                Field::Text(s) => field(s),
                Field::Num(Some(x)) => x.to_string(),
                Field::Num(None) => String::new(),
            })
            .collect();
        o.push_str(&line.join(","));
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(super::field("a"), "a");
        assert_eq!(super::field("a,b"), "\"a,b\"");
        assert_eq!(super::field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(super::field(" lead"), "\" lead\"");
    }
}
