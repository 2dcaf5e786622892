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
pub mod samples;
pub mod tables;
pub mod text;
pub mod validity;
pub mod workbook;
pub mod xlsx;

use crate::exit::Exit;
use crate::render::write_file;
use crate::store::Store;
use analysis::{Analysis, Settings};
use anyhow::{bail, Context};
use model::Dataset;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tables::{PooledLatency, Style, Table};

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
    /// The runs' OS and server samples, summarised (HTML, exports; text and
    /// Markdown with `samples_in_text`).
    pub samples: samples::Samples,
    /// Whether the text and Markdown layouts show the samples' tables (`--samples`).
    pub samples_in_text: bool,
    /// The shards of sharded runs: (run id, shard index, its row of the merged report).
    pub shards: Vec<(i64, u32, serde_json::Value)>,
}

impl<'a> Report<'a> {
    /// Computes a report of `data` (pooled latencies read from `store`).
    pub fn new(
        store: &Store,
        data: &'a Dataset,
        settings: Settings,
        format: tables::Format,
        percentiles: Vec<f64>,
    ) -> anyhow::Result<Report<'a>> {
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
        let samples = samples::Samples::from_points(data, &data.samples);
        let shards = store.run_shard_summaries(data.experiment.id)?;
        Ok(Report { analysis, pooled, percentiles, format, warnings, answers, samples, samples_in_text: false, shards })
    }

    /// Every table, in reading order: TPC-H queries, compared, intervals,
    /// absolute, latency, flagged runs, failed runs.
    pub fn tables(&self) -> Vec<Table> {
        let a = &self.analysis;
        let mut t = tables::tpch(a, &self.answers);
        if a.data.configurations.len() > 1 {
            t.extend(tables::compared(a, self.format));
            t.extend(tables::intervals(a, self.format));
        }
        t.extend(tables::absolute(a));
        t.extend(tables::latency(a, &self.pooled, &self.percentiles));
        t.extend(tables::shards(a, &self.shards));
        t.extend(tables::flagged_runs(a));
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
        if self.samples_in_text {
            o.push_str(&self.samples_text(text::table, |l| format!("{l}\n")));
        }
        o
    }

    /// The samples' tables for `--samples` in a layout (`table` renders one,
    /// `line` one line of text), or a line saying there are none.
    fn samples_text(&self, table: impl Fn(&Table) -> String, line: impl Fn(&str) -> String) -> String {
        let data = self.analysis.data;
        let mut o = String::new();
        let tables = self.samples.tables(data);
        if tables.is_empty() {
            o.push('\n');
            o.push_str(&line("samples: no run of this experiment has stored samples"));
            return o;
        }
        o.push('\n');
        for n in &self.samples.notes {
            o.push_str(&line(&format!("note: {n}")));
        }
        for t in tables {
            o.push('\n');
            o.push_str(&table(&t));
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
        if self.samples_in_text {
            o.push_str(&self.samples_text(markdown::table, |l| format!("- {}\n", markdown::escape(l))));
        }
        o
    }
}

/// What `dbbench lab run` prints when an experiment ends, and `lab summary`
/// prints again: the context, warnings, the seeds' compared table and the
/// absolute figures at the default settings. When `html` is given the full
/// page is written there first and its path ends the text.
pub fn lab_summary(store: &Store, experiment: i64, html: Option<&Path>) -> anyhow::Result<String> {
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
    shown.extend(tables::shards(&report.analysis, &report.shards));
    shown.extend(tables::flagged_runs(&report.analysis));
    // The warnings say failed runs are listed at the end: they are.
    shown.extend(tables::failed_runs(&report.analysis));
    for t in shown {
        o.push('\n');
        o.push_str(&text::table(&t));
    }
    if let Some(path) = html {
        write_file(path, html::page(&report, store)?.as_bytes()).map_err(crate::errors::text_error)?;
        o.push_str(&format!(
            "\nHTML report (charts, intervals, latency, system, configuration diff): {}\n",
            path.display()
        ));
        o.push_str("all tables and exports: dbbench report --help\n");
    }
    Ok(o)
}

/// `lab run`'s closing warning about flagged runs (`report::validity`):
/// which runs, which flags with their figures, what to do; None when no
/// run is flagged.
pub fn flag_warning(store: &Store, experiment: i64) -> anyhow::Result<Option<String>> {
    let data = Dataset::load(store, experiment)?;
    let flagged: Vec<_> = data.flagged_runs().collect();
    if flagged.is_empty() {
        return Ok(None);
    }
    let mut o = format!(
        "warning: {} of {} run(s) flagged: the host made their figures unreliable (marked {} in the report)\n",
        flagged.len(),
        data.runs.len(),
        analysis::MARK_FLAGGED
    );
    let mut kinds = Vec::new();
    for r in &flagged {
        o.push_str(&format!(
            "  {} / {} / {} thr / repeat {}: {}\n",
            data.configurations[r.configuration].name,
            data.workloads[r.workload].name,
            r.figures.threads,
            r.figures.repeat,
            validity::describe(&r.flags)
        ));
        kinds.extend(r.flags.iter().map(|f| f.kind));
    }
    kinds.sort_unstable();
    kinds.dedup();
    let mut advice: Vec<&str> = kinds.iter().map(|k| k.advice()).collect();
    advice.sort_unstable();
    advice.dedup();
    o.push_str(&format!("  what to do: {}; thresholds: docs/report.md#validity-flags\n", advice.join("; ")));
    Ok(Some(o))
}

/// Each TPC-H query's answers on every configuration against the
/// baseline's, repeat by repeat (a repeat has the same parameters on every
/// configuration): the first repeat where both sides have an answer decides.
fn check_answers(store: &Store, data: &Dataset, baseline: usize) -> anyhow::Result<tables::AnswerChecks> {
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
    pub fn load(path: &Path) -> anyhow::Result<SpecRef> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("{}: cannot read the spec", path.display()))?;
        let doc: toml::Table = text.parse().map_err(|e| crate::errors::SpecError::from_toml(path, &text, &e))?;
        let experiment = doc.get("experiment").and_then(|e| e.as_table());
        let text_of = |key: &str| experiment.and_then(|e| e.get(key)).and_then(|v| v.as_str()).map(str::to_string);
        let name = text_of("name").filter(|n| !n.trim().is_empty()).ok_or_else(|| {
            anyhow::anyhow!("{}: [experiment] has no name; is this a dbbench experiment spec?", path.display())
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
pub fn open_store(store: Option<&str>, spec: Option<&SpecRef>) -> anyhow::Result<Store> {
    let location = match (store, spec) {
        (Some(s), _) => s.to_string(),
        (None, Some(spec)) => spec.store.clone(),
        (None, None) => "dbbench-lab/results.sqlite".to_string(),
    };
    Store::open_existing(&location)
}

/// An experiment's tables, charts and exports from the results store (docs/report.md).
///
/// dbbench report [SPEC.toml] [options]; dbbench report --list [--store=...] lists the store's experiments.
#[derive(clap::Parser, Debug)]
#[command(
    name = "report",
    args_override_self = true,
    after_help = "Marks: * high spread (coefficient of variation above --cv-limit on a compared side);\n\
~ not significant (the confidence interval of the ratio includes no difference);\n\
? fewer than 2 ok repeats on a side (no interval). See docs/report.md."
)]
pub struct Args {
    /// The experiment's spec: its store, and its newest experiment
    #[arg(value_name = "SPEC.toml")]
    spec: Option<PathBuf>,
    /// A results store (SQLite file, postgresql://... or mysql://...; password in DBBENCH_STORE_PASSWORD)
    /// [the spec's, else ./dbbench-lab/results.sqlite]
    #[arg(long, value_name = "PATH|URL", help_heading = "Where the results are", value_parser = non_empty("--store"))]
    store: Option<String>,
    /// Which experiment [the spec's newest, else the store's newest]
    #[arg(long, value_name = "ID|NAME", help_heading = "Where the results are", value_parser = non_empty("--experiment"))]
    experiment: Option<String>,
    /// List the store's experiments
    #[arg(long, help_heading = "Where the results are")]
    list: bool,
    /// The configuration the others are compared with [the spec's baseline]
    #[arg(long, value_name = "NAME", help_heading = "What is compared", value_parser = non_empty("--baseline"))]
    baseline: Option<String>,
    /// tps, qps (all statements), rw_qps (the seeds' q/s: reads + writes per second), latency_avg, latency_p95,
    /// latency_p99, latency_max, or a command workload's metric [tps; a command workload's first metric]
    #[arg(long, value_name = "NAME", help_heading = "What is compared", value_parser = non_empty("--metric"))]
    metric: Option<String>,
    /// relative: (variant/baseline*100)-100 in %; ratio: variant/baseline*100 [relative]
    #[arg(long, value_name = "relative|ratio", help_heading = "What is compared", value_parser = parse_style)]
    style: Option<Style>,
    /// Decimals of compared cells [seeds' style: whole %, one decimal below 1%; ratios 2]
    #[arg(long, value_name = "N", help_heading = "What is compared", value_parser = parse_decimals)]
    decimals: Option<usize>,
    /// Confidence level of every interval [0.95]
    #[arg(long, value_name = "0.95", help_heading = "What is compared", value_parser = parse_level)]
    level: Option<f64>,
    /// Mark (*) a cell whose coefficient of variation is above PCT % [5]
    #[arg(long, value_name = "PCT", help_heading = "What is compared", value_parser = parse_cv_limit)]
    cv_limit: Option<f64>,
    /// Latency percentiles, pooled over a cell's repeats [95,99]
    #[arg(long, value_name = "LIST", help_heading = "What is compared", value_parser = parse_percentiles)]
    percentiles: Option<Percentiles>,
    /// The layout on stdout: text or markdown [text]
    #[arg(long = "format", value_name = "text|markdown", help_heading = "Output", value_parser = parse_markdown)]
    markdown: Option<bool>,
    /// One self-contained page: tables, charts, system info, configuration diff
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    export_html: Option<PathBuf>,
    /// Add a `dbbench querydiff --output` file's comparison to the HTML page (repeatable)
    #[arg(long, value_name = "FILE", help_heading = "Output", action = clap::ArgAction::Append)]
    querydiff: Vec<PathBuf>,
    /// Every figure (schema: docs/report.md)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    export_json: Option<PathBuf>,
    /// One row per cell, with its comparison
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    export_csv: Option<PathBuf>,
    /// The tables in Markdown
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    export_markdown: Option<PathBuf>,
    /// A spreadsheet: absolute, relative and runs sheets
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    export_xlsx: Option<PathBuf>,
    /// Every chart of the HTML page as a standalone SVG and a PNG, into DIR (created if missing)
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    export_charts: Option<PathBuf>,
    /// Add the OS and server samples' tables (sar-like) to the text or Markdown layout
    #[arg(long, help_heading = "Output")]
    samples: bool,
    /// Nothing on stdout (exports only)
    #[arg(long, short, help_heading = "Output")]
    quiet: bool,
}

/// `--percentiles`' list (a newtype: clap reads a `Vec` as a repeated option).
#[derive(Debug, Clone)]
struct Percentiles(Vec<f64>);

/// A value parser refusing an empty value, naming the option.
pub fn non_empty(option: &'static str) -> impl Fn(&str) -> Result<String, String> + Clone {
    move |v: &str| {
        if v.is_empty() {
            Err(format!("{option} needs a value: {option}=..."))
        } else {
            Ok(v.to_string())
        }
    }
}

fn parse_style(v: &str) -> Result<Style, String> {
    match v {
        "relative" => Ok(Style::Relative),
        "ratio" => Ok(Style::Ratio),
        s => Err(format!("--style={s}: use relative or ratio")),
    }
}

fn parse_decimals(s: &str) -> Result<usize, String> {
    s.parse().ok().filter(|d| *d <= 9).ok_or_else(|| format!("--decimals={s}: use 0 to 9"))
}

/// `--level`: a confidence level in [0.5, 1) (report and compare).
pub fn parse_level(s: &str) -> Result<f64, String> {
    match s.parse::<f64>().ok().filter(|x| x.is_finite()) {
        Some(x) if (0.5..1.0).contains(&x) => Ok(x),
        Some(x) => Err(format!("--level={x}: use a confidence level between 0.5 and 1, e.g. 0.95")),
        None => Err(format!("--level={s}: not a number")),
    }
}

fn parse_cv_limit(s: &str) -> Result<f64, String> {
    match s.parse::<f64>().ok().filter(|x| x.is_finite()) {
        Some(x) if x > 0.0 => Ok(x / 100.0),
        Some(x) => Err(format!("--cv-limit={x}: use a percentage above 0, e.g. 5")),
        None => Err(format!("--cv-limit={s}: not a number")),
    }
}

fn parse_percentiles(s: &str) -> Result<Percentiles, String> {
    s.split(',')
        .map(|p| p.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p <= 100.0).ok_or(p.to_string()))
        .collect::<Result<Vec<f64>, _>>()
        .map(Percentiles)
        .map_err(|p| format!("--percentiles: '{p}' is not a percentile in (0, 100]"))
}

fn parse_markdown(f: &str) -> Result<bool, String> {
    match f {
        "text" => Ok(false),
        "markdown" | "md" => Ok(true),
        f => Err(format!("--format={f}: use text or markdown (other formats: --export-json/csv/html/xlsx=FILE)")),
    }
}

impl Args {
    /// The exports asked for, in the order they are written.
    fn exports(&self) -> Vec<(&'static str, &Path)> {
        [
            ("html", &self.export_html),
            ("json", &self.export_json),
            ("csv", &self.export_csv),
            ("markdown", &self.export_markdown),
            ("xlsx", &self.export_xlsx),
        ]
        .into_iter()
        .filter_map(|(what, path)| Some((what, path.as_deref()?)))
        .collect()
    }
}

/// Entry point for `dbbench report ARGS...`.
pub fn cli_main(args: &[String]) -> ExitCode {
    // `--export-pdf`: say which exports there are, not just "unknown option".
    let normalized = crate::subcommand::normalize_argv(args);
    let exports = ["html", "json", "csv", "markdown", "xlsx", "charts"];
    if let Some(k) = normalized.iter().take_while(|a| *a != "--").find_map(|a| {
        let name = a.split('=').next().unwrap_or(a);
        name.strip_prefix("--export-").filter(|w| !exports.contains(w)).map(|_| name.to_string())
    }) {
        eprintln!("dbbench report: unknown export {k}; use --export-html, --export-json, --export-csv, --export-markdown, --export-xlsx or --export-charts");
        return Exit::Error.into();
    }
    // `dbbench report help`, as before (also `dbbench help report`).
    let args = if normalized == ["help"] { vec!["--help".to_string()] } else { normalized };
    let args = match crate::subcommand::parse::<Args>("report", &args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(args) {
        Ok(()) => Exit::Ok.into(),
        Err(e) => crate::subcommand::failed("report", &e),
    }
}

fn run(a: Args) -> anyhow::Result<()> {
    if !a.querydiff.is_empty() && a.export_html.is_none() {
        bail!("--querydiff adds a section to the HTML page: give --export-html=FILE too");
    }
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
        bail!("experiment '{}' (id {id}) has no runs yet", data.experiment.name);
    }
    let baseline = match &a.baseline {
        None => 0,
        Some(b) => data.configuration_index(b).ok_or_else(|| {
            let names: Vec<&str> = data.configurations.iter().map(|c| c.name.as_str()).collect();
            anyhow::anyhow!(
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
    let mut report =
        Report::new(&store, &data, settings, format, a.percentiles.clone().map_or_else(|| vec![95.0, 99.0], |p| p.0))?;
    report.samples_in_text = a.samples;
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
            bail!(
                "--metric={m}: no run of experiment '{}' has this figure; use tps, qps, rw_qps, latency_avg, latency_p95, latency_p99, latency_max{commands}",
                data.experiment.name
            );
        }
    }
    for (what, path) in a.exports() {
        let bytes = match what {
            "html" => {
                let sections = a
                    .querydiff
                    .iter()
                    .map(|p| crate::querydiff::html_section(p))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                html::page_with(&report, &store, &sections)?.into_bytes()
            }
            "json" => json::document(&report).into_bytes(),
            "csv" => csv::cells(&report).into_bytes(),
            "markdown" => report.markdown().into_bytes(),
            "xlsx" => xlsx::workbook(&report).map_err(crate::errors::text_error)?,
            _ => unreachable!("checked when parsed"),
        };
        write_file(path, &bytes).map_err(crate::errors::text_error)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(dir) = &a.export_charts {
        let page = html::page(&report, &store)?;
        for line in crate::render::charts::export(&page, dir).map_err(crate::errors::text_error)? {
            eprintln!("{line}");
        }
    }
    if !a.quiet {
        crate::term::print_out(&if a.markdown == Some(true) { report.markdown() } else { report.text() });
    }
    Ok(())
}
