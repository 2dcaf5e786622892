//! `--export-xlsx`: the spreadsheet the seeds made by hand, with numbers as
//! numbers: `relative` (each configuration vs the baseline, per workload and
//! thread count, then the same grid of marks), `absolute` (means, then
//! coefficients of variation), `cells` (one row per cell, as the CSV
//! export), `runs` (every run) and `info` (context, warnings, legend).

use super::analysis::{MARK_HIGH_SPREAD, MARK_NOT_SIGNIFICANT, MARK_NO_INTERVAL};
use super::csv::{cell_rows, Field};
use super::tables::Style;
use super::workbook::{Cell, Sheet};
use super::Report;

fn bold(s: &str) -> Cell {
    Cell::Bold(s.to_string())
}

fn text(s: &str) -> Cell {
    Cell::Text(s.to_string())
}

fn num(x: Option<f64>) -> Cell {
    x.filter(|v| v.is_finite()).map(Cell::Number).unwrap_or(Cell::Empty)
}

/// A grid: header (labels, then thread counts), then one row per (label
/// cells, value per thread count).
fn grid(labels: &[&str], threads: &[u32], rows: Vec<(Vec<String>, Vec<Cell>)>) -> Vec<Vec<Cell>> {
    let mut out =
        vec![labels.iter().map(|l| bold(l)).chain(threads.iter().map(|t| Cell::Number(*t as f64))).collect::<Vec<_>>()];
    for (label, values) in rows {
        out.push(label.iter().map(|l| text(l)).chain(values).collect());
    }
    out
}

/// The workbook's bytes.
pub fn workbook(r: &Report) -> Result<Vec<u8>, String> {
    let mut all_threads: Vec<u32> = r.analysis.data.workloads.iter().flat_map(|w| w.threads.iter().copied()).collect();
    all_threads.sort_unstable();
    all_threads.dedup();
    let sheet = |name: &str, rows: Vec<Vec<Cell>>, widths: Vec<f64>, freeze: bool| Sheet {
        name: name.into(),
        rows,
        column_widths: widths,
        freeze_header: freeze,
    };
    let label_widths = vec![22.0, 16.0, 22.0];
    super::workbook::workbook(&[
        sheet("relative", relative_sheet(r, &all_threads), label_widths.clone(), false),
        sheet("absolute", absolute_sheet(r, &all_threads), label_widths, false),
        sheet("cells", cells_sheet(r), vec![16.0, 22.0, 18.0], true),
        sheet("runs", runs_sheet(r), vec![], true),
        sheet("info", info_sheet(r), vec![120.0], false),
    ])
}

/// The row labels of the relative and absolute sheets.
const GRID_LABELS: [&str; 3] = ["workload", "metric", "configuration"];

/// Sheet "relative": each variant against the baseline per workload and
/// thread count, then the marks, then what the marks mean.
fn relative_sheet(r: &Report, all_threads: &[u32]) -> Vec<Vec<Cell>> {
    let a = &r.analysis;
    let d = a.data;
    let base = a.baseline_name();
    let mut relative = Vec::new();
    let style = r.format.style;
    let (what, formula) = match style {
        Style::Relative => ("relative change in % of the mean", "(variant/baseline*100)-100"),
        Style::Ratio => ("ratio of the means ×100 (100 is parity)", "variant/baseline*100"),
    };
    relative.push(vec![bold(&format!("{what}, {formula}, baseline {base}"))]);
    let mut values = Vec::new();
    let mut marks = Vec::new();
    for (w, wl) in d.workloads.iter().enumerate() {
        for c in a.variants() {
            let name = &d.configurations[c].name;
            let label = vec![wl.name.clone(), a.metrics[w].key(), format!("{name} / {base}")];
            let v = all_threads
                .iter()
                .map(|&t| {
                    let ratio = a.comparison(c, w, t).and_then(|x| x.ratio).map(|x| x.ratio);
                    num(ratio.map(|x| if style == Style::Relative { x * 100.0 - 100.0 } else { x * 100.0 }))
                })
                .collect();
            let m = all_threads
                .iter()
                .map(|&t| text(&a.comparison(c, w, t).map(|x| x.marks()).unwrap_or_default()))
                .collect();
            values.push((label.clone(), v));
            marks.push((label, m));
        }
    }
    relative.extend(grid(&GRID_LABELS, all_threads, values));
    relative.push(vec![]);
    relative.push(vec![bold("marks")]);
    relative.extend(grid(&GRID_LABELS, all_threads, marks));
    relative.push(vec![]);
    for l in [
        format!(
            "{MARK_HIGH_SPREAD} high spread: coefficient of variation above {}% on a compared side",
            a.settings.cv_limit * 100.0
        ),
        format!(
            "{MARK_NOT_SIGNIFICANT} not significant: the {}% confidence interval of the ratio includes no difference",
            a.settings.level * 100.0
        ),
        format!("{MARK_NO_INTERVAL} fewer than 2 ok repeats on a side: no interval"),
        "intervals, p-values and repeats per cell: sheet 'cells'".to_string(),
    ] {
        relative.push(vec![text(&l)]);
    }

    relative
}

/// Sheet "absolute": each configuration's means, then their coefficients of
/// variation in %.
fn absolute_sheet(r: &Report, all_threads: &[u32]) -> Vec<Vec<Cell>> {
    let a = &r.analysis;
    let d = a.data;
    let mut absolute = vec![vec![bold("mean over ok repeats")]];
    let mut means = Vec::new();
    let mut cvs = Vec::new();
    for (w, wl) in d.workloads.iter().enumerate() {
        for (c, conf) in d.configurations.iter().enumerate() {
            let label = vec![wl.name.clone(), a.metrics[w].key(), conf.name.clone()];
            let summary = |t: u32| a.cell(c, w, t).and_then(|x| x.summary);
            means.push((label.clone(), all_threads.iter().map(|&t| num(summary(t).map(|s| s.mean))).collect()));
            cvs.push((
                label,
                all_threads.iter().map(|&t| num(summary(t).and_then(|s| s.cv()).map(|cv| cv * 100.0))).collect(),
            ));
        }
    }
    absolute.extend(grid(&GRID_LABELS, all_threads, means));
    absolute.push(vec![]);
    absolute.push(vec![bold("coefficient of variation (sd/mean) in %")]);
    absolute.extend(grid(&GRID_LABELS, all_threads, cvs));

    absolute
}

/// Sheet "cells": one row per cell with its interval, p-value and repeats.
fn cells_sheet(r: &Report) -> Vec<Vec<Cell>> {
    let (head, rows) = cell_rows(r);
    let mut cells = vec![head.iter().map(|h| bold(h)).collect::<Vec<_>>()];
    cells.extend(rows.into_iter().map(|row| {
        row.into_iter()
            .map(|f| match f {
                Field::Text(s) => Cell::Text(s),
                Field::Num(x) => num(x),
            })
            .collect()
    }));

    cells
}

/// Sheet "runs": every stored run and its figures.
fn runs_sheet(r: &Report) -> Vec<Vec<Cell>> {
    let d = r.analysis.data;
    let run_head = [
        "id",
        "configuration",
        "workload",
        "threads",
        "repeat",
        "seq",
        "status",
        "error",
        "seed",
        "cache",
        "started_at",
        "time_s",
        "events",
        "errors",
        "reconnects",
        "tps",
        "qps",
        "rw_qps",
        "latency_avg_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "latency_max_ms",
        "metrics",
    ];
    let mut runs = vec![run_head.iter().map(|h| bold(h)).collect::<Vec<_>>()];
    for run in &d.runs {
        let f = &run.figures;
        let n = |x: Option<i64>| num(x.map(|v| v as f64));
        runs.push(vec![
            Cell::Number(f.id as f64),
            text(&d.configurations[run.configuration].name),
            text(&d.workloads[run.workload].name),
            Cell::Number(f.threads as f64),
            Cell::Number(f.repeat as f64),
            Cell::Number(f.seq as f64),
            text(&f.status),
            text(f.error.as_deref().unwrap_or("")),
            Cell::Number(f.seed as f64),
            text(&f.cache),
            text(&f.started_at),
            num(f.time_s),
            n(f.events),
            n(f.errors),
            n(f.reconnects),
            num(f.tps),
            num(f.qps),
            num(f.rw_qps),
            num(f.latency_avg_ms),
            num(f.latency_p95_ms),
            num(f.latency_p99_ms),
            num(f.latency_max_ms),
            text(&f.metrics.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")),
        ]);
    }

    runs
}

/// Sheet "info": the experiment's context, the report's warnings and the
/// version that wrote it.
fn info_sheet(r: &Report) -> Vec<Vec<Cell>> {
    let d = r.analysis.data;
    let mut info: Vec<Vec<Cell>> = d.context_lines().iter().map(|l| vec![text(l)]).collect();
    for w in &r.warnings {
        info.push(vec![text(&format!("warning: {w}"))]);
    }
    info.push(vec![text(&format!("generated by dbbench {}", crate::VERSION))]);

    info
}
