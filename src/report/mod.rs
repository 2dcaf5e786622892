//! `dbbench report`: an experiment from the results store as the seeds
//! published theirs — each configuration relative to a baseline per
//! workload and thread count — with the statistics they lacked: per cell
//! mean, sd and coefficient of variation over repeats, a confidence
//! interval for every ratio, marks where a difference is not significant or
//! the spread is high, pooled latency percentiles.
//!
//! Data flow: `model` (load one experiment) → `analysis` (figures, using
//! `stats`; pooled percentiles from `latency`) → `tables` (the neutral
//! table model) → one file per layout: `text`, `markdown`, `html` (charts
//! from `svg`), and the exports `json`, `csv`, `xlsx` (written by
//! `workbook`). `compare` puts two runs, cells or experiments side by side.

pub mod analysis;
pub mod compare;
pub mod csv;
pub mod html;
pub mod json;
pub mod latency;
pub mod markdown;
pub mod model;
pub mod tables;
pub mod text;
pub mod workbook;
pub mod xlsx;

use crate::exit::Exit;
use crate::render::write_file;
use crate::store::Store;
use analysis::{Analysis, Settings};
use model::Dataset;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tables::{PooledLatency, Style, Table};

const HELP: &str = "\
Usage:
  dbbench report [SPEC.toml] [options]     an experiment's tables, charts and exports
  dbbench report --list [--store=...]       the experiments in a store

Where the results are:
  SPEC.toml           the experiment's spec: its store, and its newest experiment
  --store=PATH|URL    a results store (SQLite file, postgresql://... or mysql://...;
                      password in DBBENCH_STORE_PASSWORD) [the spec's, else ./dbbench-lab/results.sqlite]
  --experiment=ID|NAME  which experiment [the spec's newest, else the store's newest]

What is compared:
  --baseline=NAME     the configuration the others are compared with [the spec's baseline]
  --metric=NAME       tps, qps (all statements), rw_qps (the seeds' q/s: reads + writes per second),
                      latency_avg, latency_p95, latency_p99, latency_max, or a command workload's
                      metric [tps; a command workload's first metric]
  --style=relative|ratio  relative: (variant/baseline*100)-100 in %; ratio: variant/baseline*100 [relative]
  --decimals=N        decimals of compared cells [seeds' style: whole %, one decimal below 1%; ratios 2]
  --level=0.95        confidence level of every interval [0.95]
  --cv-limit=PCT      mark (*) a cell whose coefficient of variation is above PCT % [5]
  --percentiles=LIST  latency percentiles, pooled over a cell's repeats [95,99]

Output (stdout gets the text layout unless --format says otherwise):
  --format=text|markdown
  --export-html=FILE      one self-contained page: tables, charts, system info, configuration diff
  --querydiff=FILE        add a `dbbench querydiff --output` file's comparison to the HTML page (repeatable)
  --export-json=FILE      every figure (schema: docs/report.md)
  --export-csv=FILE       one row per cell, with its comparison
  --export-markdown=FILE  the tables in Markdown
  --export-xlsx=FILE      a spreadsheet: absolute, relative and runs sheets
  --quiet                 nothing on stdout (exports only)

Marks: * high spread (coefficient of variation above --cv-limit on a compared side);
~ not significant (the confidence interval of the ratio includes no difference);
? fewer than 2 ok repeats on a side (no interval). See docs/report.md.
";

/// Everything a report is made of, computed once and rendered by every layout.
pub struct Report<'a> {
    /// Figures and comparisons.
    pub analysis: Analysis<'a>,
    /// Pooled latency percentiles per cell (test workloads), in `percentiles` order.
    pub pooled: PooledLatency,
    /// The latency percentiles shown.
    pub percentiles: Vec<f64>,
    /// Relative or ratio cells, decimals.
    pub format: tables::Format,
    /// The analysis' warnings and any from reading histograms.
    pub warnings: Vec<String>,
    /// TPC-H answers of each configuration against the baseline's.
    pub answers: tables::AnswerChecks,
}

impl<'a> Report<'a> {
    /// Computes a report of `data` (pooled latencies read from `store`).
    pub fn new(
        store: &Store,
        data: &'a Dataset,
        settings: Settings,
        format: tables::Format,
        percentiles: Vec<f64>,
    ) -> Result<Report<'a>, String> {
        let (pooled, mut histogram_warnings) = latency::pooled(store, data, &percentiles)?;
        // A percentile metric is compared by its pooled figure, the latency tables' number.
        let asked: Vec<f64> = data
            .workloads
            .iter()
            .filter_map(|w| analysis::Metric::for_workload(settings.metric.as_deref(), w).percentile())
            .fold(Vec::new(), |mut v, p| {
                if !v.contains(&p) {
                    v.push(p);
                }
                v
            });
        let mut figures = analysis::PooledFigures::new();
        if !asked.is_empty() {
            let (by_cell, w) = latency::pooled(store, data, &asked)?;
            histogram_warnings.extend(w);
            for ((c, wl, t), values) in by_cell {
                let metric = analysis::Metric::for_workload(settings.metric.as_deref(), &data.workloads[wl]);
                let at = metric.percentile().and_then(|p| asked.iter().position(|x| *x == p));
                if let Some(v) = at.and_then(|i| values.get(i).copied().flatten()) {
                    figures.insert((c, wl, t), v);
                }
            }
        }
        let analysis = Analysis::with_pooled(data, settings, &figures);
        let mut warnings = analysis.warnings.clone();
        histogram_warnings.sort();
        histogram_warnings.dedup();
        warnings.extend(histogram_warnings);
        let answers = if data.workloads.iter().any(|w| w.tpch) {
            check_answers(store, data, analysis.settings.baseline)?
        } else {
            Default::default()
        };
        for ((c, w), check) in &answers {
            if let tables::AnswerCheck::Differs(why) = check {
                warnings.push(format!(
                    "WRONG ANSWER: {} on {} differs from {}: {why}",
                    data.workloads[*w].name,
                    data.configurations[*c].name,
                    data.configurations[analysis.settings.baseline].name
                ));
            }
        }
        warnings.sort();
        Ok(Report { analysis, pooled, percentiles, format, warnings, answers })
    }

    /// Every table, in reading order: TPC-H queries, compared, intervals,
    /// absolute, latency, failed runs.
    pub fn tables(&self) -> Vec<Table> {
        let a = &self.analysis;
        let mut t = tables::tpch(a, &self.answers);
        if a.data.configurations.len() > 1 {
            t.extend(tables::compared(a, self.format));
            t.extend(tables::intervals(a, self.format));
        }
        t.extend(tables::absolute(a));
        t.extend(tables::latency(a, &self.pooled, &self.percentiles));
        t.extend(tables::failed_runs(a));
        t
    }

    /// The terminal layout.
    pub fn text(&self) -> String {
        let mut o = String::new();
        for l in self.analysis.data.context_lines() {
            o.push_str(&l);
            o.push('\n');
        }
        for w in &self.warnings {
            o.push_str(&format!("warning: {w}\n"));
        }
        for t in self.tables() {
            o.push('\n');
            o.push_str(&text::table(&t));
        }
        o
    }

    /// The Markdown layout.
    pub fn markdown(&self) -> String {
        let data = self.analysis.data;
        let mut o = format!("## {}\n\n", markdown::escape(&data.experiment.name));
        for l in data.context_lines() {
            o.push_str(&format!("- {}\n", markdown::escape(&l)));
        }
        for w in &self.warnings {
            o.push_str(&format!("- **warning:** {}\n", markdown::escape(w)));
        }
        for t in self.tables() {
            o.push('\n');
            o.push_str(&markdown::table(&t));
        }
        o
    }
}

/// What `dbbench lab run` prints when an experiment ends, and `lab summary`
/// prints again: the context, warnings, the seeds' compared table and the
/// absolute figures at the default settings. When `html` is given the full
/// page is written there first and its path ends the text.
pub fn lab_summary(store: &Store, experiment: i64, html: Option<&Path>) -> Result<String, String> {
    let data = Dataset::load(store, experiment)?;
    if data.runs.is_empty() {
        return Ok(format!("experiment '{}' (id {experiment}) has no runs\n", data.experiment.name));
    }
    let report = Report::new(store, &data, Settings::default(), tables::Format::default(), vec![95.0, 99.0])?;
    let mut o = String::new();
    for l in data.context_lines() {
        o.push_str(&l);
        o.push('\n');
    }
    for w in &report.warnings {
        o.push_str(&format!("warning: {w}\n"));
    }
    let mut shown = tables::tpch(&report.analysis, &report.answers);
    if data.configurations.len() > 1 {
        shown.extend(tables::compared(&report.analysis, report.format));
    }
    shown.extend(tables::absolute(&report.analysis));
    // The warnings say failed runs are listed at the end: they are.
    shown.extend(tables::failed_runs(&report.analysis));
    for t in shown {
        o.push('\n');
        o.push_str(&text::table(&t));
    }
    if let Some(path) = html {
        write_file(path, html::page(&report, store)?.as_bytes())?;
        o.push_str(&format!(
            "\nHTML report (charts, intervals, latency, system, configuration diff): {}\n",
            path.display()
        ));
        o.push_str("all tables and exports: dbbench report --help\n");
    }
    Ok(o)
}

/// Each TPC-H query's answers on every configuration against the
/// baseline's, repeat by repeat (a repeat has the same parameters on every
/// configuration): the first repeat where both sides have an answer decides.
fn check_answers(store: &Store, data: &Dataset, baseline: usize) -> Result<tables::AnswerChecks, String> {
    use crate::tpch::answers::{compare, Agreement, Answer};
    let by_id: std::collections::HashMap<i64, usize> =
        data.runs.iter().enumerate().map(|(i, r)| (r.figures.id, i)).collect();
    // (configuration, workload, repeat) → answer
    let mut answers: std::collections::HashMap<(usize, usize, u32), Answer> = std::collections::HashMap::new();
    for (id, doc) in store.tpch_documents(data.experiment.id)? {
        let Some(&i) = by_id.get(&id) else { continue };
        let run = &data.runs[i];
        if !run.ok() {
            continue;
        }
        if let Some(a) = doc.first_query().and_then(|q| q.answer.clone()) {
            answers.insert((run.configuration, run.workload, run.figures.repeat), a);
        }
    }
    let mut checks = tables::AnswerChecks::new();
    for (w, _) in data.workloads.iter().enumerate().filter(|(_, wl)| wl.tpch) {
        for c in (0..data.configurations.len()).filter(|&c| c != baseline) {
            let mut check = tables::AnswerCheck::Unchecked;
            let mut repeats: Vec<u32> = answers.keys().filter(|k| k.0 == c && k.1 == w).map(|k| k.2).collect();
            repeats.sort_unstable();
            // Every repeat: with params = "seed" each one ran other parameters.
            for r in repeats {
                if let (Some(expected), Some(actual)) = (answers.get(&(baseline, w, r)), answers.get(&(c, w, r))) {
                    match compare(expected, actual) {
                        Agreement::Same | Agreement::SameRowsOtherOrder => {
                            if check == tables::AnswerCheck::Unchecked {
                                check = tables::AnswerCheck::Same;
                            }
                        }
                        Agreement::Differs(why) => {
                            check = tables::AnswerCheck::Differs(format!("repeat {r}: {why}"));
                            break;
                        }
                    }
                }
            }
            checks.insert((c, w), check);
        }
    }
    Ok(checks)
}

/// What a report or `compare` needs from a spec: the experiment's name and
/// where its store is. Nothing else of the spec is validated: reading
/// results connects to no server, so an external configuration's
/// `password_env` variable, a `basedir` or a `config_file` need not exist
/// where the report is made.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecRef {
    /// `[experiment] name`.
    pub name: String,
    /// The store: `[experiment] store` (a URL, or a path relative to the
    /// spec's directory), else `dbbench-lab/results.sqlite` next to the
    /// spec, as `dbbench lab run` chooses it.
    pub store: String,
}

impl SpecRef {
    /// Reads `path`'s `[experiment]` table.
    pub fn load(path: &Path) -> Result<SpecRef, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read the spec: {e}", path.display()))?;
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1).unwrap_or(0);
            format!("{}:{line}: {}", path.display(), e.message().trim().replace('\n', " "))
        })?;
        let experiment = doc.get("experiment").and_then(|e| e.as_table());
        let text_of = |key: &str| experiment.and_then(|e| e.get(key)).and_then(|v| v.as_str()).map(str::to_string);
        let name = text_of("name").filter(|n| !n.trim().is_empty()).ok_or_else(|| {
            format!("{}: [experiment] has no name; is this a dbbench experiment spec?", path.display())
        })?;
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let store = match text_of("store") {
            Some(s) if crate::store::is_url(&s) || Path::new(&s).is_absolute() => s,
            Some(s) => dir.join(s).to_string_lossy().into_owned(),
            None => dir.join("dbbench-lab").join("results.sqlite").to_string_lossy().into_owned(),
        };
        Ok(SpecRef { name, store })
    }
}

/// Opens the store a report reads: `--store`, else the spec's, else the
/// default next to the current directory. It must already be a dbbench
/// store: reading never creates or converts one.
pub fn open_store(store: Option<&str>, spec: Option<&SpecRef>) -> Result<Store, String> {
    let location = match (store, spec) {
        (Some(s), _) => s.to_string(),
        (None, Some(spec)) => spec.store.clone(),
        (None, None) => "dbbench-lab/results.sqlite".to_string(),
    };
    Store::open_existing(&location)
}

/// Command-line choices of `dbbench report`.
#[derive(Debug, Default)]
struct Args {
    spec: Option<PathBuf>,
    store: Option<String>,
    experiment: Option<String>,
    list: bool,
    baseline: Option<String>,
    metric: Option<String>,
    style: Option<Style>,
    decimals: Option<usize>,
    level: Option<f64>,
    cv_limit: Option<f64>,
    percentiles: Option<Vec<f64>>,
    markdown: bool,
    quiet: bool,
    exports: Vec<(String, PathBuf)>,
    /// `querydiff --output` files whose sections the HTML export adds.
    querydiff: Vec<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let mut a = Args::default();
    for arg in args {
        let (k, v) = match arg.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (arg.as_str(), None),
        };
        let need = |v: Option<&str>| {
            v.filter(|v| !v.is_empty()).map(str::to_string).ok_or_else(|| format!("{k} needs a value: {k}=..."))
        };
        let number = |v: Option<&str>| -> Result<f64, String> {
            let s = need(v)?;
            s.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| format!("{k}={s}: not a number"))
        };
        match k {
            "--help" | "-h" | "help" => return Ok(None),
            "--store" => a.store = Some(need(v)?),
            "--experiment" => a.experiment = Some(need(v)?),
            "--list" => a.list = true,
            "--baseline" => a.baseline = Some(need(v)?),
            "--metric" => a.metric = Some(need(v)?),
            "--style" => {
                a.style = Some(match need(v)?.as_str() {
                    "relative" => Style::Relative,
                    "ratio" => Style::Ratio,
                    s => return Err(format!("--style={s}: use relative or ratio")),
                })
            }
            "--decimals" => {
                let s = need(v)?;
                a.decimals =
                    Some(s.parse().ok().filter(|d| *d <= 9).ok_or_else(|| format!("--decimals={s}: use 0 to 9"))?);
            }
            "--level" => {
                let x = number(v)?;
                if !(0.5..1.0).contains(&x) {
                    return Err(format!("--level={x}: use a confidence level between 0.5 and 1, e.g. 0.95"));
                }
                a.level = Some(x);
            }
            "--cv-limit" => {
                let x = number(v)?;
                if x <= 0.0 {
                    return Err(format!("--cv-limit={x}: use a percentage above 0, e.g. 5"));
                }
                a.cv_limit = Some(x / 100.0);
            }
            "--percentiles" => {
                let s = need(v)?;
                let list: Result<Vec<f64>, _> = s
                    .split(',')
                    .map(|p| p.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p <= 100.0).ok_or(p.to_string()))
                    .collect();
                a.percentiles =
                    Some(list.map_err(|p| format!("--percentiles: '{p}' is not a percentile in (0, 100]"))?);
            }
            "--format" => {
                a.markdown = match need(v)?.as_str() {
                    "text" => false,
                    "markdown" | "md" => true,
                    f => {
                        return Err(format!(
                            "--format={f}: use text or markdown (other formats: --export-json/csv/html/xlsx=FILE)"
                        ))
                    }
                }
            }
            "--quiet" | "-q" => a.quiet = true,
            "--querydiff" => a.querydiff.push(PathBuf::from(need(v)?)),
            k if k.starts_with("--export-") => {
                let what = &k["--export-".len()..];
                if !["html", "json", "csv", "markdown", "xlsx"].contains(&what) {
                    return Err(format!("unknown export {k}; use --export-html, --export-json, --export-csv, --export-markdown or --export-xlsx"));
                }
                a.exports.push((what.to_string(), PathBuf::from(need(v)?)));
            }
            k if k.starts_with('-') => {
                return Err(format!("unknown option '{arg}' for `dbbench report`; see `dbbench report --help`"))
            }
            _ if a.spec.is_none() => a.spec = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument '{arg}'; `dbbench report` takes one spec at most")),
        }
    }
    if !a.querydiff.is_empty() && !a.exports.iter().any(|(w, _)| w == "html") {
        return Err("--querydiff adds a section to the HTML page: give --export-html=FILE too".into());
    }
    Ok(Some(a))
}

/// Entry point for `dbbench report ARGS...`.
pub fn cli_main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(()) => Exit::Ok.into(),
        Err(e) => {
            eprintln!("dbbench report: {e}");
            Exit::Error.into()
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let Some(a) = parse_args(args)? else {
        crate::term::print_out(HELP);
        return Ok(());
    };
    let spec = a.spec.as_deref().map(SpecRef::load).transpose()?;
    let store = open_store(a.store.as_deref(), spec.as_ref())?;
    if a.list {
        let mut o = format!("{:>5}  {:<12} {:<26} name\n", "id", "status", "started");
        for (id, name, status, started) in store.experiments()? {
            o.push_str(&format!("{id:>5}  {status:<12} {started:<26} {name}\n"));
        }
        crate::term::print_out(&o);
        return Ok(());
    }
    let which = a.experiment.clone().or_else(|| spec.as_ref().map(|s| s.name.clone()));
    let id = model::find_experiment(&store, which.as_deref())?;
    let data = Dataset::load(&store, id)?;
    if data.runs.is_empty() {
        return Err(format!("experiment '{}' (id {id}) has no runs yet", data.experiment.name));
    }
    let baseline = match &a.baseline {
        None => 0,
        Some(b) => data.configuration_index(b).ok_or_else(|| {
            let names: Vec<&str> = data.configurations.iter().map(|c| c.name.as_str()).collect();
            format!(
                "--baseline={b}: no such configuration in experiment '{}'; it has {}",
                data.experiment.name,
                names.join(", ")
            )
        })?,
    };
    let defaults = Settings::default();
    let settings = Settings {
        metric: a.metric.clone(),
        baseline,
        level: a.level.unwrap_or(defaults.level),
        cv_limit: a.cv_limit.unwrap_or(defaults.cv_limit),
    };
    let format = tables::Format { style: a.style.unwrap_or(Style::Relative), decimals: a.decimals };
    let report =
        Report::new(&store, &data, settings, format, a.percentiles.clone().unwrap_or_else(|| vec![95.0, 99.0]))?;
    if let Some(m) = &a.metric {
        if !report.analysis.has_figures() && data.runs.iter().any(|r| r.ok()) {
            let mut named: Vec<&str> =
                data.workloads.iter().flat_map(|w| w.metrics.iter().map(String::as_str)).collect();
            named.dedup();
            let commands = if named.is_empty() {
                String::new()
            } else {
                format!(", or a command workload's: {}", named.join(", "))
            };
            return Err(format!(
                "--metric={m}: no run of experiment '{}' has this figure; use tps, qps, rw_qps, latency_avg, latency_p95, latency_p99, latency_max{commands}",
                data.experiment.name
            ));
        }
    }
    for (what, path) in &a.exports {
        let bytes = match what.as_str() {
            "html" => {
                let sections =
                    a.querydiff.iter().map(|p| crate::querydiff::html_section(p)).collect::<Result<Vec<_>, _>>()?;
                html::page_with(&report, &store, &sections)?.into_bytes()
            }
            "json" => json::document(&report).into_bytes(),
            "csv" => csv::cells(&report).into_bytes(),
            "markdown" => report.markdown().into_bytes(),
            "xlsx" => xlsx::workbook(&report)?,
            _ => unreachable!("checked when parsed"),
        };
        write_file(path, &bytes)?;
        eprintln!("wrote {}", path.display());
    }
    if !a.quiet {
        crate::term::print_out(&if a.markdown { report.markdown() } else { report.text() });
    }
    Ok(())
}
