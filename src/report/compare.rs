//! `dbbench compare A B`: two runs, cells, configurations or experiments
//! side by side, with a hyperfine-like sentence per pair ("wal is 1.53 ±
//! 0.04 times faster than rollback at 16 threads") and its confidence
//! interval.
//!
//! A and B name, in the same kind:
//! * a run: `run:ID` (stored) or a file written by `dbbench ... run --format=json`;
//! * a cell: `EXPERIMENT/CONFIGURATION/WORKLOAD/THREADS`;
//! * a configuration: `EXPERIMENT/CONFIGURATION` (every cell of it);
//! * an experiment: `EXPERIMENT` (cells paired by configuration, workload, threads).
//!
//! EXPERIMENT is an id or a name (the newest of that name).

use super::analysis::Metric;
use super::model::{find_experiment, Dataset};
use super::stats::{Ratio, RatioCi, Summary};
use crate::lab::store::{RunFigures, Store};
use std::collections::BTreeMap;
use std::process::ExitCode;

const HELP: &str = "\
Usage:
  dbbench compare A B [--store=PATH|URL] [--metric=NAME] [--level=0.95] [SPEC.toml]

A and B are two of the same kind:
  run:ID                                   a stored run
  FILE.json                                the output of `dbbench TEST run --format=json`
  EXPERIMENT/CONFIGURATION/WORKLOAD/THREADS  a cell (its repeats)
  EXPERIMENT/CONFIGURATION                 every cell of a configuration, paired by workload and threads
  EXPERIMENT                               every cell, paired by configuration, workload and threads
EXPERIMENT is an experiment's id or name (the newest of that name).

  --store=PATH|URL  results store [SPEC's, else ./dbbench-lab/results.sqlite]
  --metric=NAME     tps, qps, rw_qps, latency_avg, latency_p95, latency_p99, latency_max, or a
                    command workload's metric [tps; a command workload's first metric]
  --level=X         confidence level [0.95]
";

/// What one side of a comparison names.
#[derive(Debug, Clone, PartialEq)]
enum Selector {
    Run(i64),
    File(String),
    Cell { experiment: String, configuration: String, workload: String, threads: u32 },
    Configuration { experiment: String, configuration: String },
    Experiment(String),
}

impl Selector {
    fn parse(s: &str) -> Result<Selector, String> {
        if let Some(id) = s.strip_prefix("run:") {
            return id.parse().map(Selector::Run).map_err(|_| format!("'{s}': run:ID takes a run's numeric id"));
        }
        if s.ends_with(".json") || std::path::Path::new(s).is_file() {
            return Ok(Selector::File(s.to_string()));
        }
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [e] if !e.is_empty() => Ok(Selector::Experiment(e.to_string())),
            [e, c] => Ok(Selector::Configuration { experiment: e.to_string(), configuration: c.to_string() }),
            [e, c, w, t] => Ok(Selector::Cell {
                experiment: e.to_string(),
                configuration: c.to_string(),
                workload: w.to_string(),
                threads: t.parse().map_err(|_| format!("'{s}': the last part of EXPERIMENT/CONFIGURATION/WORKLOAD/THREADS is a thread count"))?,
            }),
            _ => Err(format!("'{s}' names nothing: use run:ID, FILE.json, EXPERIMENT, EXPERIMENT/CONFIGURATION or EXPERIMENT/CONFIGURATION/WORKLOAD/THREADS")),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Selector::Run(_) | Selector::File(_) => "a run",
            Selector::Cell { .. } => "a cell",
            Selector::Configuration { .. } => "a configuration",
            Selector::Experiment(_) => "an experiment",
        }
    }
}

/// One side: a label and its cells' metric and values, keyed for pairing.
struct Side {
    label: String,
    cells: BTreeMap<(String, String, u32), (Metric, Vec<f64>)>,
}

/// The figures of a `--format=json` run report, as a stored run's.
fn figures_from_json(path: &str) -> Result<RunFigures, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{path}: not a dbbench JSON report ({e})"))?;
    if v.get("tool").and_then(|t| t.as_str()) != Some("dbbench") {
        return Err(format!("{path}: not a dbbench JSON report (run with --format=json)"));
    }
    let n = |p: &str| v.pointer(p).and_then(|x| x.as_f64());
    let (reads, writes, time) = (n("/counters/reads"), n("/counters/writes"), n("/total_time_s"));
    Ok(RunFigures {
        status: if v.get("aborted").is_some_and(|a| !a.is_null()) { "failed".into() } else { "ok".into() },
        error: v.get("aborted").and_then(|a| a.as_str()).map(str::to_string),
        workload: v.get("test").and_then(|t| t.as_str()).unwrap_or("").to_string(),
        threads: n("/threads").unwrap_or(0.0) as u32,
        time_s: time,
        tps: n("/rates_per_s/events"),
        qps: n("/rates_per_s/queries"),
        rw_qps: match (reads, writes, time) {
            (Some(r), Some(w), Some(t)) if t > 0.0 => Some((r + w) / t),
            _ => None,
        },
        latency_avg_ms: n("/latency/avg_ms"),
        latency_p95_ms: n("/latency/percentiles_ms/95"),
        latency_p99_ms: n("/latency/percentiles_ms/99"),
        latency_max_ms: n("/latency/max_ms"),
        ..Default::default()
    })
}

/// Loads one side; `requested` is `--metric` as given (None: each workload's default).
fn load(store: Option<&Store>, sel: &Selector, requested: Option<&str>) -> Result<Side, String> {
    let need_store =
        || store.ok_or_else(|| "no results store: give --store=PATH|URL or the experiment's spec".to_string());
    let single = |f: &RunFigures, label: String| -> Result<Side, String> {
        let metric = Metric::parse(requested.unwrap_or("tps"));
        let v = metric.value(f).ok_or_else(|| format!("{label}: the run has no '{}' figure", metric.key()))?;
        Ok(Side { label, cells: BTreeMap::from([((String::new(), String::new(), 0), (metric, vec![v]))]) })
    };
    match sel {
        Selector::File(path) => {
            let f = figures_from_json(path)?;
            if f.status != "ok" {
                return Err(format!(
                    "{path}: the run did not finish ({}); its figures are not compared",
                    f.error.unwrap_or_default()
                ));
            }
            single(&f, path.clone())
        }
        Selector::Run(id) => {
            let store = need_store()?;
            for (eid, ..) in store.experiments()? {
                if let Some(run) = store.run_figures(eid)?.into_iter().find(|r| r.id == *id) {
                    if run.status != "ok" {
                        return Err(format!("run {id} is not ok ({}): {}", run.status, run.error.unwrap_or_default()));
                    }
                    return single(&run, format!("run {id}"));
                }
            }
            Err(format!("no run with id {id} in {}", store.location()))
        }
        Selector::Experiment(e)
        | Selector::Configuration { experiment: e, .. }
        | Selector::Cell { experiment: e, .. } => {
            let store = need_store()?;
            let data = Dataset::load(store, find_experiment(store, Some(e))?)?;
            let config = match sel {
                Selector::Configuration { configuration, .. } | Selector::Cell { configuration, .. } => {
                    Some(data.configuration_index(configuration).ok_or_else(|| {
                        format!("experiment '{}' has no configuration '{configuration}'", data.experiment.name)
                    })?)
                }
                _ => None,
            };
            let mut cells: BTreeMap<(String, String, u32), (Metric, Vec<f64>)> = BTreeMap::new();
            for r in data.runs.iter().filter(|r| r.ok() && config.is_none_or(|c| c == r.configuration)) {
                let workload = &data.workloads[r.workload].name;
                if let Selector::Cell { workload: w, threads, .. } = sel {
                    if w != workload || *threads != r.figures.threads {
                        continue;
                    }
                }
                // Only an experiment-wide comparison pairs by configuration.
                let cname =
                    if config.is_none() { data.configurations[r.configuration].name.clone() } else { String::new() };
                let key = if matches!(sel, Selector::Cell { .. }) {
                    (String::new(), String::new(), 0)
                } else {
                    (cname, workload.clone(), r.figures.threads)
                };
                let metric = Metric::for_workload(requested, &data.workloads[r.workload]);
                if let Some(v) = metric.value(&r.figures) {
                    cells.entry(key).or_insert_with(|| (metric, Vec::new())).1.push(v);
                }
            }
            if cells.is_empty() {
                let what = requested.map(|m| format!("a '{m}' figure")).unwrap_or_else(|| "a figure".into());
                return Err(format!("nothing to compare in '{}': no ok run with {what} there", selector_text(sel)));
            }
            Ok(Side { label: selector_text(sel), cells })
        }
    }
}

fn selector_text(sel: &Selector) -> String {
    match sel {
        Selector::Run(id) => format!("run:{id}"),
        Selector::File(p) => p.clone(),
        Selector::Cell { experiment, configuration, workload, threads } => {
            format!("{experiment}/{configuration}/{workload}/{threads}")
        }
        Selector::Configuration { experiment, configuration } => format!("{experiment}/{configuration}"),
        Selector::Experiment(e) => e.clone(),
    }
}

/// The sentence for one pair, hyperfine's way: the better side first, as
/// "x ± se times faster", with the interval and whether it is significant.
pub fn sentence(a_label: &str, b_label: &str, a: &Summary, b: &Summary, metric: &Metric, level: f64) -> String {
    let Some(r) = Ratio::of(b, a, level) else { return format!("{a_label}'s mean is 0: no ratio") };
    let ci = match r.ci {
        RatioCi::Bounded { lo, hi } => Some((lo, hi)),
        _ => None,
    };
    // B/A as measured, or inverted (A/B) when A is the better side; an
    // interval that reaches 0 or below has no inverse.
    let direct = (r.ratio, r.se, ci);
    let inverted = (
        1.0 / r.ratio,
        r.se.map(|s| s / (r.ratio * r.ratio)),
        ci.filter(|(lo, _)| *lo > 0.0).map(|(lo, hi)| (1.0 / hi, 1.0 / lo)),
    );
    if !(r.ratio.is_finite() && r.ratio > 0.0) && metric.higher_is_better().is_some() {
        // A mean of 0 (or of opposite sign) on a side: "faster by" means nothing.
        return format!("{b_label}'s mean is {} × {a_label}'s: no speed ratio", super::tables::number(r.ratio));
    }
    // (subject, object, their n, the figures): the better side is named first.
    let (subject, object, n, (x, se, ci)) = match metric.higher_is_better() {
        Some(true) if r.ratio >= 1.0 => (b_label, a_label, (b.n, a.n), direct),
        Some(true) => (a_label, b_label, (a.n, b.n), inverted),
        Some(false) if r.ratio <= 1.0 => (b_label, a_label, (b.n, a.n), inverted),
        Some(false) => (a_label, b_label, (a.n, b.n), direct),
        None => (b_label, a_label, (b.n, a.n), direct),
    };
    let se = se.map(|s| format!(" ± {s:.2}")).unwrap_or_default();
    let claim = match metric.higher_is_better() {
        Some(_) => format!("{subject} is {x:.2}{se} times faster than {object}"),
        None => format!("{subject}'s {m} is {x:.2}{se} times {object}'s", m = metric.key()),
    };
    let lvl = format!("{}%", level * 100.0);
    let interval = match (ci, r.ci) {
        (Some((lo, hi)), _) => format!("{lvl} CI {lo:.2} to {hi:.2}"),
        (None, RatioCi::Unavailable) => "no interval: fewer than 2 repeats on a side".into(),
        (None, _) => format!("{lvl} CI unbounded"),
    };
    let verdict = if matches!(r.ci, RatioCi::Unavailable) || r.significant() {
        ""
    } else {
        " — not significant: the interval includes no difference"
    };
    format!("{claim} ({interval}; n = {} vs {}){verdict}", n.0, n.1)
}

/// Entry point for `dbbench compare ARGS...`.
pub fn cli_main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dbbench compare: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let (mut store_arg, mut metric, mut level, mut spec) = (None::<String>, None::<String>, 0.95, None);
    let mut sides = Vec::new();
    for a in args {
        match a.split_once('=') {
            _ if a == "--help" || a == "-h" => {
                crate::lab::cli::print_out(HELP);
                return Ok(());
            }
            Some(("--store", v)) => store_arg = Some(v.to_string()),
            Some(("--metric", v)) => metric = Some(v.to_string()),
            Some(("--level", v)) => {
                level = v
                    .parse::<f64>()
                    .ok()
                    .filter(|x| (0.5..1.0).contains(x))
                    .ok_or_else(|| format!("--level={v}: use a confidence level between 0.5 and 1"))?
            }
            _ if a.starts_with('-') => return Err(format!("unknown option '{a}'; see `dbbench compare --help`")),
            _ if a.ends_with(".toml") => spec = Some(super::SpecRef::load(std::path::Path::new(a))?),
            _ => sides.push(Selector::parse(a)?),
        }
    }
    let [sa, sb] = sides.as_slice() else {
        return Err(format!("compare takes two things to compare, got {}; see `dbbench compare --help`", sides.len()));
    };
    if sa.kind() != sb.kind() {
        return Err(format!(
            "'{}' is {} and '{}' {}: compare like with like",
            selector_text(sa),
            sa.kind(),
            selector_text(sb),
            sb.kind()
        ));
    }
    let needs_store = !matches!((sa, sb), (Selector::File(_), Selector::File(_)));
    let store = if needs_store { Some(super::open_store(store_arg.as_deref(), spec.as_ref())?) } else { None };
    let a = load(store.as_ref(), sa, metric.as_deref())?;
    let b = load(store.as_ref(), sb, metric.as_deref())?;
    let what = match &metric {
        Some(_) => a.cells.values().next().map(|c| c.0.label()).unwrap_or_default(),
        None => "tps (command workloads: their first metric)".into(),
    };
    let mut o = format!("{} vs {}, {what} (A = {}, B = {})\n\n", b.label, a.label, a.label, b.label);
    let pairs: Vec<_> =
        a.cells.iter().filter_map(|(k, (m, va))| b.cells.get(k).map(|(_, vb)| (k, m, va, vb))).collect();
    if pairs.is_empty() {
        return Err(format!(
            "'{}' and '{}' have no cell in common (same configuration, workload and threads)",
            a.label, b.label
        ));
    }
    let mut rows = Vec::new();
    for (key, metric, va, vb) in &pairs {
        let (Some(sa), Some(sb)) = (Summary::of(va), Summary::of(vb)) else { continue };
        let at = match key {
            (c, w, t) if !w.is_empty() => {
                format!("{}{w}, {t} threads", if c.is_empty() { String::new() } else { format!("{c} / ") })
            }
            _ => String::new(),
        };
        let show = |s: &Summary| {
            format!(
                "{} ± {} (n={})",
                super::tables::number(s.mean),
                s.sd.map(super::tables::number).unwrap_or_else(|| "-".into()),
                s.n
            )
        };
        rows.push((at, show(&sa), show(&sb), sentence("A", "B", &sa, &sb, metric, level)));
    }
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0).max(4);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(1);
    let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0).max(1);
    o.push_str(&format!("{:w0$}  {:>w1$}  {:>w2$}\n", "", "A", "B"));
    for (at, ma, mb, s) in &rows {
        o.push_str(&format!("{at:w0$}  {ma:>w1$}  {mb:>w2$}  {s}\n"));
    }
    let unpaired = a.cells.len() + b.cells.len() - 2 * pairs.len();
    if unpaired > 0 {
        o.push_str(&format!("\n{unpaired} cell(s) exist on one side only and are not shown\n"));
    }
    o.push_str(&format!(
        "\nmean ± sd over ok repeats; ratios with Fieller's {}% interval (Welch–Satterthwaite degrees of freedom); ± after the ratio is its standard error\n",
        level * 100.0
    ));
    crate::lab::cli::print_out(&o);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert_eq!(Selector::parse("run:12").unwrap(), Selector::Run(12));
        assert!(Selector::parse("run:x").is_err());
        assert_eq!(
            Selector::parse("quick/wal").unwrap(),
            Selector::Configuration { experiment: "quick".into(), configuration: "wal".into() }
        );
        assert_eq!(
            Selector::parse("3/wal/oltp_read_write/16").unwrap(),
            Selector::Cell {
                experiment: "3".into(),
                configuration: "wal".into(),
                workload: "oltp_read_write".into(),
                threads: 16
            }
        );
        assert!(Selector::parse("a/b/c").is_err());
        assert!(Selector::parse("a/b/c/x").is_err());
        assert_eq!(Selector::parse("a.json").unwrap(), Selector::File("a.json".into()));
    }

    #[test]
    fn sentences_name_the_faster_side() {
        let a = Summary::of(&[100.0, 101.0, 99.0]).unwrap();
        let b = Summary::of(&[153.0, 152.0, 154.0]).unwrap();
        let s = sentence("rollback", "wal", &a, &b, &Metric::Tps, 0.95);
        assert!(
            s.starts_with("wal is 1.53 ± 0.01 times faster than rollback (95% CI 1.50 to 1.56; n = 3 vs 3)"),
            "{s}"
        );
        let s = sentence("wal", "rollback", &b, &a, &Metric::Tps, 0.95);
        assert!(s.starts_with("wal is 1.53 ± 0.01 times faster than rollback"), "{s}");
        // Latency: less is better; B has half A's latency, so B is 2 times faster.
        let la = Summary::of(&[10.0, 10.2, 9.8]).unwrap();
        let lb = Summary::of(&[5.0, 5.1, 4.9]).unwrap();
        let s = sentence("A", "B", &la, &lb, &Metric::LatencyP95, 0.95);
        assert!(s.starts_with("B is 2.00"), "{s}");
        assert!(s.contains("times faster than A"), "{s}");
        // Overlapping samples: said to be not significant.
        let x = Summary::of(&[100.0, 120.0, 80.0]).unwrap();
        let y = Summary::of(&[105.0, 85.0, 125.0]).unwrap();
        assert!(sentence("A", "B", &x, &y, &Metric::Tps, 0.95)
            .ends_with("not significant: the interval includes no difference"));
        // Unknown direction: no "faster".
        let s = sentence("A", "B", &x, &y, &Metric::Named("m".into()), 0.95);
        assert!(s.starts_with("B's m is 1.05"), "{s}");
    }
}
