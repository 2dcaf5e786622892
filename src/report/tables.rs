//! The report's tables, built once from an `Analysis` and rendered by the
//! text, Markdown and HTML layouts: rows are workloads (nested rows for
//! configuration pairs when there are several), columns are thread counts,
//! as in the seeds' published tables.

use super::analysis::{Analysis, MARK_FLAGGED, MARK_HIGH_SPREAD, MARK_NOT_SIGNIFICANT, MARK_NO_INTERVAL};
use crate::inference::RatioCi;
use std::collections::HashMap;

/// A table: a title, a header row of column names, labelled rows, legend lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// What the table shows, one line.
    pub title: String,
    /// Caption of the label column ("workload").
    pub corner: String,
    /// Caption over the columns ("Number of threads"), or empty.
    pub column_caption: String,
    /// Column headings (thread counts).
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<Row>,
    /// Lines explaining formulas and marks, printed under the table.
    pub legend: Vec<String>,
}

/// One row: a group heading (no cells) or a labelled row of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Nesting level of the label: 0 a workload, 1 a configuration or pair under it.
    pub indent: usize,
    /// The label.
    pub label: String,
    /// One per column; empty for a group heading.
    pub cells: Vec<Cell>,
}

/// A cell's text and an optional note (a tooltip in HTML: the interval, n).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cell {
    /// What is printed.
    pub text: String,
    /// More about it.
    pub note: Option<String>,
}

impl Cell {
    fn new(text: String, note: Option<String>) -> Cell {
        Cell { text, note }
    }
    fn missing() -> Cell {
        Cell::new("-".into(), Some("no ok run on a side".into()))
    }
}

/// How compared cells are expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// (variant / baseline × 100) − 100, in percent ("(32/off)").
    Relative,
    /// variant / baseline × 100 ("MariaDB q/s / MySQL q/s * 100"): 100 is parity.
    Ratio,
}

/// Number formatting choices.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// Relative or ratio cells.
    pub style: Style,
    /// Decimals of compared cells; None: the seeds' style (relative: whole
    /// percent, one decimal below 1%; ratio: two decimals).
    pub decimals: Option<usize>,
}

impl Default for Format {
    fn default() -> Format {
        Format { style: Style::Relative, decimals: None }
    }
}

/// A relative change in percent as the seeds printed it: `53%`, `-3%`, `-0.3%`.
pub fn percent(x: f64, decimals: Option<usize>) -> String {
    match decimals {
        Some(d) => format!("{x:.d$}"),
        None if x.abs() < 1.0 => format!("{x:.1}%"),
        None => format!("{x:.0}%"),
    }
}

/// A measured value with as many digits as it deserves to show.
pub fn number(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{:.*}", (2 - a.log10().floor() as i64).clamp(3, 9) as usize, x)
    }
}

fn compared_text(a: &Analysis, style: Style, decimals: Option<usize>, c: usize, w: usize, t: u32) -> Cell {
    let Some(cmp) = a.comparison(c, w, t) else { return Cell::missing() };
    let Some(ratio) = cmp.ratio else {
        return Cell::new("-".into(), Some("the baseline's mean is 0: no ratio".into()));
    };
    let value = match style {
        Style::Relative => percent(ratio.ratio * 100.0 - 100.0, decimals),
        Style::Ratio => format!("{:.*}", decimals.unwrap_or(2), ratio.ratio * 100.0),
    };
    let interval = match ratio.ci {
        RatioCi::Bounded { lo, hi } => match style {
            Style::Relative => format!(
                "{}% CI {} to {}",
                level_pct(a),
                percent(lo * 100.0 - 100.0, Some(1)),
                percent(hi * 100.0 - 100.0, Some(1))
            ),
            Style::Ratio => format!("{}% CI {:.2} to {:.2}", level_pct(a), lo * 100.0, hi * 100.0),
        },
        RatioCi::Unbounded => format!("{}% CI unbounded", level_pct(a)),
        RatioCi::Unavailable if cmp.pooled => "no interval (pooled latency percentiles)".into(),
        RatioCi::Unavailable => "no interval (fewer than 2 ok repeats on a side)".into(),
    };
    let n = |cfg| a.cell(cfg, w, t).map(|x| x.values.len()).unwrap_or(0);
    let flagged = a.data.cell_flagged(c, w, t) || a.data.cell_flagged(a.settings.baseline, w, t);
    Cell::new(
        format!("{value}{}{}", cmp.marks(), if flagged { MARK_FLAGGED.to_string() } else { String::new() }),
        Some(format!("{interval}; n = {} vs {}", n(c), n(a.settings.baseline))),
    )
}

fn level_pct(a: &Analysis) -> String {
    let p = a.settings.level * 100.0;
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

fn thread_columns(a: &Analysis, workloads: &[usize]) -> Vec<u32> {
    let mut t: Vec<u32> = workloads.iter().flat_map(|&w| a.data.workloads[w].threads.iter().copied()).collect();
    t.sort_unstable();
    t.dedup();
    t
}

/// Workloads grouped by metric: one table per metric, as one table cannot
/// mix units. TPC-H queries have their own table (`tpch`).
fn by_metric(a: &Analysis) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for w in (0..a.data.workloads.len()).filter(|&w| !a.data.workloads[w].tpch) {
        match groups.iter_mut().find(|g| a.metrics[g[0]] == a.metrics[w]) {
            Some(g) => g.push(w),
            None => groups.push(vec![w]),
        }
    }
    groups
}

/// A table whose columns are thread counts.
fn thread_table(title: String, threads: &[u32], rows: Vec<Row>, legend: Vec<String>) -> Table {
    Table {
        title,
        corner: "workload".into(),
        column_caption: "Number of threads".into(),
        columns: threads.iter().map(|t| t.to_string()).collect(),
        rows,
        legend,
    }
}

/// Rows of configuration pairs: one row per workload when there is one
/// variant (the seeds' ratio tables), else the workload as a heading with a
/// nested `variant / baseline` row per variant (their relative tables).
fn pair_rows(a: &Analysis, workloads: &[usize], threads: &[u32], cell: impl Fn(usize, usize, u32) -> Cell) -> Vec<Row> {
    let base = a.baseline_name();
    let variants = a.variants();
    let mut rows = Vec::new();
    for &w in workloads {
        let name = a.data.workloads[w].name.clone();
        let cells = |c: usize| threads.iter().map(|&t| cell(c, w, t)).collect::<Vec<_>>();
        if let [only] = variants.as_slice() {
            rows.push(Row { indent: 1, label: name, cells: cells(*only) });
        } else {
            rows.push(Row { indent: 1, label: name, cells: Vec::new() });
            for &c in &variants {
                rows.push(Row {
                    indent: 2,
                    label: format!("{} / {base}", a.data.configurations[c].name),
                    cells: cells(c),
                });
            }
        }
    }
    rows
}

/// Every cell text of some rows, to see which marks occur.
fn cell_texts(rows: &[Row]) -> String {
    rows.iter().flat_map(|r| r.cells.iter()).map(|c| c.text.as_str()).collect()
}

/// The legend of the marks (only those that occur, so a reader is never
/// sent looking for a mark that is not there), and the formula.
fn marks_legend(a: &Analysis, used: &str) -> Vec<String> {
    let mut l = Vec::new();
    if used.contains(MARK_HIGH_SPREAD) {
        l.push(format!(
            "{MARK_HIGH_SPREAD} high spread: the coefficient of variation (sd/mean) over repeats is above {}% on a compared side",
            a.settings.cv_limit * 100.0
        ));
    }
    if used.contains(MARK_NOT_SIGNIFICANT) {
        l.push(format!(
            "{MARK_NOT_SIGNIFICANT} not significant: the {}% confidence interval of the ratio includes no difference",
            level_pct(a)
        ));
    }
    if used.contains(MARK_FLAGGED) {
        l.push(flagged_legend());
    }
    if used.contains(MARK_NO_INTERVAL) {
        if a.any_pooled() {
            l.push(format!("{MARK_NO_INTERVAL} no interval: a pooled latency percentile (all events of a cell's repeats) has none across repeats, or a side has fewer than 2 ok repeats"));
        } else {
            l.push(format!("{MARK_NO_INTERVAL} fewer than 2 ok repeats on a side: no spread or interval"));
        }
    }
    l
}

/// The seeds' table: each configuration against the baseline, per workload and thread count.
pub fn compared(a: &Analysis, f: Format) -> Vec<Table> {
    let base = a.baseline_name().to_string();
    let variants = a.variants();
    let mut out = Vec::new();
    for group in by_metric(a) {
        let metric = &a.metrics[group[0]];
        let threads = thread_columns(a, &group);
        let rows = pair_rows(a, &group, &threads, |c, w, t| compared_text(a, f.style, f.decimals, c, w, t));
        let mut legend: Vec<String> = variants
            .iter()
            .map(|&c| {
                let v = &a.data.configurations[c].name;
                match f.style {
                    Style::Relative => {
                        format!("({v}/{base}*100)-100: relative change of the mean {} in %", metric.unit())
                    }
                    Style::Ratio => format!("({v} {u} / {base} {u} * 100): 100 is parity", u = metric.unit()),
                }
            })
            .collect();
        legend.extend(marks_legend(a, &cell_texts(&rows)));
        let what = match f.style {
            Style::Relative => "relative change",
            Style::Ratio => "ratio",
        };
        out.push(thread_table(
            format!("{} vs {base}, {what} of {} (mean of ok repeats)", variant_names(a), metric.label()),
            &threads,
            rows,
            legend,
        ));
    }
    out
}

fn variant_names(a: &Analysis) -> String {
    a.variants().iter().map(|&c| a.data.configurations[c].name.as_str()).collect::<Vec<_>>().join(", ")
}

/// The confidence interval of every compared cell, in the compared table's layout.
pub fn intervals(a: &Analysis, f: Format) -> Vec<Table> {
    let mut out = Vec::new();
    for group in by_metric(a) {
        let threads = thread_columns(a, &group);
        let cell = |c: usize, w: usize, t: u32| -> Cell {
            let Some(r) = a.comparison(c, w, t).and_then(|x| x.ratio) else { return Cell::missing() };
            let text = match (r.ci, f.style) {
                (RatioCi::Bounded { lo, hi }, Style::Relative) => {
                    format!(
                        "{} .. {}",
                        percent(lo * 100.0 - 100.0, f.decimals),
                        percent(hi * 100.0 - 100.0, f.decimals)
                    )
                }
                (RatioCi::Bounded { lo, hi }, Style::Ratio) => format!("{:.2} .. {:.2}", lo * 100.0, hi * 100.0),
                (RatioCi::Unbounded, _) => "unbounded".into(),
                (RatioCi::Unavailable, _) => "n/a".into(),
            };
            Cell::new(text, r.df.map(|df| format!("degrees of freedom {df:.1}")))
        };
        let rows = pair_rows(a, &group, &threads, cell);
        let what = if f.style == Style::Relative { "relative change" } else { "ratio" };
        let mut legend = vec![
            "Fieller's interval for a ratio of two independent means, Student's t with Welch–Satterthwaite degrees of freedom".into(),
            "unbounded: the baseline's mean is not significantly different from 0; n/a: fewer than 2 ok repeats on a side".into(),
        ];
        if a.metrics[group[0]].non_negative() {
            legend
                .push("a lower end below -100% (a negative ratio, impossible for this figure) is cut at -100%".into());
        }
        if a.metrics[group[0]].percentile().is_some() && a.any_pooled() {
            legend.push("n/a: pooled latency percentiles have no interval across repeats".into());
        }
        out.push(thread_table(format!("{}% confidence intervals of the {what}", level_pct(a)), &threads, rows, legend));
    }
    out
}

/// Absolute figures: per workload, a row per configuration, cells
/// `mean ±cv%` with the number of ok repeats where it is not the usual one.
pub fn absolute(a: &Analysis) -> Vec<Table> {
    let mut out = Vec::new();
    for group in by_metric(a) {
        let metric = &a.metrics[group[0]];
        let threads = thread_columns(a, &group);
        let mut counts: HashMap<usize, usize> = HashMap::new();
        for &w in &group {
            for c in 0..a.data.configurations.len() {
                for &t in &threads {
                    if let Some(cell) = a.cell(c, w, t) {
                        *counts.entry(cell.values.len()).or_default() += 1;
                    }
                }
            }
        }
        let usual = counts.iter().max_by_key(|(n, k)| (**k, **n)).map(|(n, _)| *n).unwrap_or(0);
        let mut rows = Vec::new();
        for &w in &group {
            rows.push(Row { indent: 1, label: a.data.workloads[w].name.clone(), cells: Vec::new() });
            for (c, conf) in a.data.configurations.iter().enumerate() {
                let cells = threads
                    .iter()
                    .map(|&t| match a.cell(c, w, t).and_then(|x| x.summary.map(|s| (s, x))) {
                        None => Cell::new("-".into(), Some("no ok run".into())),
                        Some((s, x)) => {
                            let cv = s.cv().map(|cv| format!(" ±{:.1}%", cv * 100.0)).unwrap_or_default();
                            let n = if s.n != usual { format!(" (n={})", s.n) } else { String::new() };
                            let spread = if x.high_spread(a.settings.cv_limit) { "*" } else { "" };
                            let flagged = if a.data.cell_flagged(c, w, t) { "!" } else { "" };
                            let note = format!(
                                "n = {}, sd {}, min {}, max {}{}",
                                s.n,
                                s.sd.map(number).unwrap_or_else(|| "-".into()),
                                number(s.min),
                                number(s.max),
                                if x.not_ok > 0 {
                                    format!(", {} run(s) not ok left out", x.not_ok)
                                } else {
                                    String::new()
                                }
                            );
                            Cell::new(format!("{}{cv}{spread}{flagged}{n}", number(s.mean)), Some(note))
                        }
                    })
                    .collect();
                rows.push(Row { indent: 2, label: conf.name.clone(), cells });
            }
        }
        let repeats = if usual == 1 { "1 ok repeat".to_string() } else { format!("{usual} ok repeats") };
        let pooled = group.iter().any(|&w| {
            (0..a.data.configurations.len()).any(|c| threads.iter().any(|&t| a.cell(c, w, t).is_some_and(|x| x.pooled)))
        });
        let mut legend = vec![if pooled {
            format!("the percentile of all events of {repeats} per cell pooled (their histograms merged) unless (n=...) says otherwise; ±: coefficient of variation of the repeats' own percentiles")
        } else {
            format!("mean over {repeats} per cell unless (n=...) says otherwise; ±: coefficient of variation (sd/mean)")
        }];
        if cell_texts(&rows).contains(MARK_HIGH_SPREAD) {
            legend.push(format!("{MARK_HIGH_SPREAD} coefficient of variation above {}%", a.settings.cv_limit * 100.0));
        }
        if cell_texts(&rows).contains(MARK_FLAGGED) {
            legend.push(flagged_legend());
        }
        out.push(thread_table(format!("{}, absolute", metric.label()), &threads, rows, legend));
    }
    out
}

/// A TPC-H query that ran under its own server options (the spec's
/// per-query `server_options`), on its label and the configurations' times.
pub const MARK_OWN_OPTIONS: char = '†';

/// How a configuration's answer to a TPC-H query compares with the baseline's.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerCheck {
    /// The same rows (in the same order, or only tied rows in another).
    Same,
    /// A real difference, described.
    Differs(String),
    /// Nothing to compare (a side has no finished run with an answer).
    Unchecked,
}

/// Answer checks per (configuration, workload): each non-baseline
/// configuration's answers against the baseline's.
pub type AnswerChecks = HashMap<(usize, usize), AnswerCheck>;

/// TPC-H, the seeds' DBT3 table: per TPC-H workload a row per query, per
/// configuration its time (the mean of its ok repeats; `>T` where a repeat
/// was stopped at the timeout, which is never averaged) and after the
/// baseline the ratio to it (`-` where a side has no time), the answers'
/// agreement, and the geometric mean over the queries every configuration
/// finished.
pub fn tpch(a: &Analysis, answers: &AnswerChecks) -> Vec<Table> {
    let d = a.data;
    let base = a.settings.baseline;
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (w, wl) in d.workloads.iter().enumerate().filter(|(_, wl)| wl.tpch) {
        let group = wl.name.split(':').next().unwrap_or("").to_string();
        match groups.iter_mut().find(|g| g.0 == group) {
            Some(g) => g.1.push(w),
            None => groups.push((group, vec![w])),
        }
    }
    let mut order: Vec<usize> = vec![base];
    order.extend(a.variants());
    let mut out = Vec::new();
    for (group, ws) in groups {
        let mut columns = Vec::new();
        for &c in &order {
            columns.push(format!("{} s", d.configurations[c].name));
            if c != base {
                columns.push("ratio".into());
            }
        }
        columns.push("answers".into());
        let mut rows = Vec::new();
        let mut options_legend = Vec::new();
        let mut complete: Vec<Vec<f64>> = vec![Vec::new(); order.len()];
        for &w in &ws {
            let threads = d.workloads[w].threads.first().copied().unwrap_or(1);
            let mut cells = Vec::new();
            let secs: Vec<Option<f64>> = order
                .iter()
                .map(|&c| {
                    a.cell(c, w, threads).and_then(|x| if x.timeouts > 0 { None } else { x.summary.map(|s| s.mean) })
                })
                .collect();
            for (i, &c) in order.iter().enumerate() {
                let cell = a.cell(c, w, threads);
                let text = match cell {
                    Some(x) if x.timeouts > 0 => {
                        format!(">{}", x.timeout_s.map(|t| format!("{t:.0}")).unwrap_or_else(|| "timeout".into()))
                    }
                    Some(x) if x.not_ok > 0 => "failed".into(),
                    Some(x) => x.summary.map(|s| number(s.mean)).unwrap_or_else(|| "-".into()),
                    None => "-".into(),
                };
                let note = cell
                    .and_then(|x| x.summary)
                    .map(|s| format!("n = {}, min {:.3} s, max {:.3} s", s.n, s.min, s.max));
                cells.push(Cell::new(text, note));
                if c != base {
                    let ratio = match (secs[0], secs[i]) {
                        (Some(b), Some(v)) if b > 0.0 => {
                            let marks = a.comparison(c, w, threads).map(|x| x.marks()).unwrap_or_default();
                            format!("{:.2}{marks}", v / b)
                        }
                        _ => "-".into(),
                    };
                    cells.push(Cell::new(ratio, None));
                }
            }
            let differing: Vec<String> = order
                .iter()
                .filter_map(|&c| match answers.get(&(c, w)) {
                    Some(AnswerCheck::Differs(why)) => Some(format!("{}: {why}", d.configurations[c].name)),
                    _ => None,
                })
                .collect();
            let checked = order.iter().any(|&c| answers.get(&(c, w)) == Some(&AnswerCheck::Same));
            let verdict = if !differing.is_empty() {
                Cell::new("MISMATCH".into(), Some(differing.join("; ")))
            } else if checked {
                Cell::new("same".into(), None)
            } else {
                Cell::new("-".into(), Some("not compared".into()))
            };
            cells.push(verdict);
            if secs.iter().all(Option::is_some) {
                for (i, s) in secs.iter().enumerate() {
                    complete[i].push(s.unwrap_or(0.0));
                }
            }
            let mut label = d.workloads[w].name.split_once(':').map(|x| x.1.to_string()).unwrap_or_default();
            // A query run under its own server options is marked: its time is not the configuration's alone.
            let own: Vec<String> = d.workloads[w]
                .server_options
                .iter()
                .filter(|(_, list)| !list.is_empty())
                .map(|(c, list)| format!("{} {}", c.as_deref().unwrap_or("every configuration"), list.join(" ")))
                .collect();
            if !own.is_empty() {
                options_legend.push(format!("{MARK_OWN_OPTIONS} {label}: server started with {}", own.join("; ")));
                for (i, &c) in order.iter().enumerate() {
                    let applies = d.workloads[w].server_options.iter().any(|(name, list)| {
                        !list.is_empty() && name.as_deref().is_none_or(|n| n == d.configurations[c].name)
                    });
                    if applies {
                        // The configuration's seconds cell: before it, one ratio column per earlier variant.
                        let col = if i == 0 { 0 } else { 2 * i - 1 };
                        let cell = &mut cells[col];
                        cell.text.push(MARK_OWN_OPTIONS);
                        let why = format!("ran with its own server options: {}", own.join("; "));
                        cell.note = Some(cell.note.take().map(|n| format!("{n}; {why}")).unwrap_or(why));
                    }
                }
                label.push(' ');
                label.push(MARK_OWN_OPTIONS);
            }
            rows.push(Row { indent: 1, label, cells });
        }
        // Geometric mean over the queries every configuration finished.
        let n = complete[0].len();
        if n > 0 {
            let g: Vec<Option<f64>> = complete.iter().map(|v| crate::tpch::run::geometric_mean(v)).collect();
            let mut cells = Vec::new();
            for (i, &c) in order.iter().enumerate() {
                cells.push(Cell::new(g[i].map(number).unwrap_or_else(|| "-".into()), None));
                if c != base {
                    cells.push(Cell::new(
                        match (g[0], g[i]) {
                            (Some(b), Some(v)) if b > 0.0 => format!("{:.2}", v / b),
                            _ => "-".into(),
                        },
                        None,
                    ));
                }
            }
            cells.push(Cell::new(String::new(), None));
            rows.push(Row { indent: 1, label: format!("geomean ({n})"), cells });
        }
        let mut legend = vec![
            format!("seconds: mean of ok repeats; ratio = configuration / {} (below 1: faster); >T: stopped on the server at the timeout T, never averaged", d.configurations[base].name),
            "geomean (n): geometric mean over the n queries every configuration finished".to_string(),
            "answers: each configuration's rows against the baseline's (spec clause 2.1.3.5 tolerances); MISMATCH is a wrong answer somewhere".into(),
        ];
        legend.extend(marks_legend(a, &cell_texts(&rows)));
        legend.extend(options_legend);
        out.push(Table {
            title: format!("TPC-H {group}: query times"),
            corner: "query".into(),
            column_caption: String::new(),
            columns,
            rows,
            legend,
        });
    }
    out
}

/// Pooled latency percentiles: per (configuration, workload, threads), the
/// percentiles (ms) of all events of the cell's ok repeats.
pub type PooledLatency = HashMap<(usize, usize, u32), Vec<Option<f64>>>;

/// One table per percentile: rows configurations per workload, cells ms.
pub fn latency(a: &Analysis, pooled: &PooledLatency, percentiles: &[f64]) -> Vec<Table> {
    let tests: Vec<usize> = (0..a.data.workloads.len()).filter(|&w| a.data.workloads[w].is_test()).collect();
    if tests.is_empty() || pooled.is_empty() {
        return Vec::new();
    }
    let threads = thread_columns(a, &tests);
    let mut out = Vec::new();
    for (i, p) in percentiles.iter().enumerate() {
        let mut rows = Vec::new();
        for &w in &tests {
            rows.push(Row { indent: 1, label: a.data.workloads[w].name.clone(), cells: Vec::new() });
            for (c, conf) in a.data.configurations.iter().enumerate() {
                let cells = threads
                    .iter()
                    .map(|&t| match pooled.get(&(c, w, t)).and_then(|v| v.get(i).copied().flatten()) {
                        Some(ms) => Cell::new(number(ms), None),
                        None => Cell::new("-".into(), Some("no ok run with a histogram".into())),
                    })
                    .collect();
                rows.push(Row { indent: 2, label: conf.name.clone(), cells });
            }
        }
        let legend = vec!["all events of a cell's ok repeats pooled (their HDR histograms merged); per event, from its start (or intended start under --rate)".into()];
        out.push(thread_table(format!("latency, {} percentile (ms)", ordinal(*p)), &threads, rows, legend));
    }
    out
}

/// `95th`, `99.9th`, `50th`.
pub fn ordinal(p: f64) -> String {
    let n = if p.fract() == 0.0 { format!("{p:.0}") } else { format!("{p}") };
    let suffix = if p.fract() != 0.0 {
        "th"
    } else {
        match (p as u64 % 10, p as u64 % 100) {
            (1, x) if x != 11 => "st",
            (2, x) if x != 12 => "nd",
            (3, x) if x != 13 => "rd",
            _ => "th",
        }
    };
    format!("{n}{suffix}")
}

/// The legend line of [`MARK_FLAGGED`].
fn flagged_legend() -> String {
    format!("{MARK_FLAGGED} a run of the cell (compared: of either side) is flagged: the host made its figures unreliable; the reasons are in the table 'runs flagged'")
}

/// A run's row label in the flagged and failed runs' tables.
fn run_label(a: &Analysis, r: &crate::report::model::Run) -> String {
    format!(
        "{} / {} / {} thr / repeat {}",
        a.data.configurations[r.configuration].name,
        a.data.workloads[r.workload].name,
        r.figures.threads,
        r.figures.repeat
    )
}

/// The shards of sharded runs (`clients = { shards = N }`), each run's
/// under its label: the merged report's per-shard row (`dbbench merge`);
/// the run's own figures elsewhere are the merged ones.
pub fn shards(a: &Analysis, shards: &[(i64, u32, serde_json::Value)]) -> Option<Table> {
    if shards.is_empty() {
        return None;
    }
    let num = |v: &serde_json::Value, k: &str| v[k].as_u64().map_or("-".to_string(), |n| n.to_string());
    let ms = |v: &serde_json::Value, k: &str| v[k].as_f64().map_or("-".to_string(), |n| format!("{n:.2}"));
    let mut rows = Vec::new();
    let mut last = None;
    for (run_id, shard, v) in shards {
        let Some(run) = a.data.runs.iter().find(|r| r.figures.id == *run_id) else { continue };
        if last != Some(*run_id) {
            rows.push(Row { indent: 0, label: run_label(a, run), cells: Vec::new() });
            last = Some(*run_id);
        }
        let status = v["status"].as_str().unwrap_or("-").to_string();
        rows.push(Row {
            indent: 1,
            label: format!("shard {shard}"),
            cells: vec![
                Cell::new(v["host"].as_str().unwrap_or("-").to_string(), None),
                Cell::new(num(v, "threads"), None),
                Cell::new(num(v, "events"), None),
                Cell::new(num(v, "queries"), None),
                Cell::new(ms(v, "start_skew_ms"), None),
                Cell::new(status, None),
            ],
        });
    }
    Some(Table {
        title: "shards of sharded runs (clients = { shards = N }): the run's figures are these merged".into(),
        corner: "run".into(),
        column_caption: String::new(),
        columns: ["host", "threads", "events", "queries", "start skew ms", "status"].iter().map(|s| s.to_string()).collect(),
        rows,
        legend: vec![
            "start skew: the shard's start of measurement after the earliest shard's, on the database server's clock when every shard measured its offset (docs/scale-out.md); each shard's whole result is in the store (run_shards.result)".into(),
        ],
    })
}

/// The ok runs with validity flags, with the reasons (`report::validity`).
pub fn flagged_runs(a: &Analysis) -> Option<Table> {
    let flagged: Vec<_> = a.data.flagged_runs().collect();
    if flagged.is_empty() {
        return None;
    }
    let rows = flagged
        .iter()
        .map(|r| Row {
            indent: 1,
            label: run_label(a, r),
            cells: vec![
                Cell::new(r.flags.iter().map(|f| f.kind.name()).collect::<Vec<_>>().join(", "), None),
                Cell::new(r.flags.iter().map(|f| f.reason.as_str()).collect::<Vec<_>>().join("; "), None),
            ],
        })
        .collect();
    Some(Table {
        title: format!("runs flagged {MARK_FLAGGED} (the host made their figures unreliable; still counted)"),
        corner: "run".into(),
        column_caption: String::new(),
        columns: vec!["flags".into(), "reasons".into()],
        rows,
        legend: vec!["flags and their thresholds: docs/report.md#validity-flags; pinning: docs/lab.md#pinning".into()],
    })
}

/// Runs that are not ok, with why.
pub fn failed_runs(a: &Analysis) -> Option<Table> {
    let failed: Vec<_> = a.data.failed_runs().collect();
    if failed.is_empty() {
        return None;
    }
    let rows = failed
        .iter()
        .map(|r| Row {
            indent: 1,
            label: run_label(a, r),
            cells: vec![
                Cell::new(r.figures.status.clone(), None),
                Cell::new(r.figures.error.clone().unwrap_or_default(), None),
            ],
        })
        .collect();
    Some(Table {
        title: "runs not ok (left out of every figure)".into(),
        corner: "run".into(),
        column_caption: String::new(),
        columns: vec!["status".into(), "error".into()],
        rows,
        legend: vec![
            "the store keeps each failed run's output tail and server log excerpt (runs.output_tail, runs.log_excerpt)"
                .into(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::analysis::tests::dataset;
    use crate::report::analysis::Settings;

    #[test]
    fn numbers_and_percents_as_the_seeds_wrote_them() {
        assert_eq!(percent(53.2, None), "53%");
        assert_eq!(percent(-3.4, None), "-3%");
        assert_eq!(percent(-0.31, None), "-0.3%");
        assert_eq!(percent(-19.678, Some(2)), "-19.68");
        assert_eq!(number(21921.91), "21922");
        assert_eq!(number(123.45), "123.5");
        assert_eq!(number(1.234), "1.23");
        assert_eq!(number(0.01234), "0.0123");
        assert_eq!(ordinal(95.0), "95th");
        assert_eq!(ordinal(99.9), "99.9th");
        assert_eq!(ordinal(1.0), "1st");
        assert_eq!(ordinal(11.0), "11th");
    }

    #[test]
    fn one_variant_gives_one_row_per_workload_several_give_nested_rows() {
        let one = dataset(
            &["off", "32"],
            &[1, 4],
            &[
                vec![vec![100.0, 101.0, 99.0], vec![200.0, 202.0, 198.0]],
                vec![vec![153.0, 152.0, 154.0], vec![400.0, 404.0, 396.0]],
            ],
        );
        let a = Analysis::new(&one, Settings::default());
        let t = &compared(&a, Format::default())[0];
        assert_eq!(t.columns, ["1", "4"]);
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].label, "w");
        assert_eq!(t.rows[0].cells.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["53%", "100%"]);
        assert!(t.legend[0].starts_with("(32/off*100)-100"), "{:?}", t.legend);
        assert_eq!(t.legend.len(), 1, "no marks, no mark legend: {:?}", t.legend);
        let r = &compared(&a, Format { style: Style::Ratio, decimals: None })[0];
        assert_eq!(r.rows[0].cells[0].text, "153.00");
        let three = dataset(&["off", "8", "32"], &[1], &[vec![vec![100.0]], vec![vec![90.0]], vec![vec![120.0]]]);
        let a = Analysis::new(&three, Settings::default());
        let t = &compared(&a, Format::default())[0];
        let labels: Vec<_> = t.rows.iter().map(|r| (r.indent, r.label.as_str(), r.cells.len())).collect();
        assert_eq!(labels, [(1, "w", 0), (2, "8 / off", 1), (2, "32 / off", 1)]);
        assert_eq!(t.rows[1].cells[0].text, "-10%?");
        assert!(t.legend.iter().any(|l| l.starts_with("? fewer than 2")), "{:?}", t.legend);
    }
}
