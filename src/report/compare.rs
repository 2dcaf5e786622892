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
use crate::exit::Exit;
use crate::inference::{Ratio, RatioCi, Summary};
use crate::store::{RunFigures, Store};
use anyhow::{anyhow, bail, Context};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// Two runs, cells, configurations or experiments side by side, with significance (docs/report.md).
#[derive(clap::Parser, Debug)]
#[command(
    name = "compare",
    args_override_self = true,
    after_help = "A and B are two of the same kind:\n  \
run:ID                                     a stored run\n  \
FILE.json                                  the output of `dbbench TEST run --format=json`\n  \
EXPERIMENT/CONFIGURATION/WORKLOAD/THREADS  a cell (its repeats)\n  \
EXPERIMENT/CONFIGURATION                   every cell of a configuration, paired by workload and threads\n  \
EXPERIMENT                                 every cell, paired by configuration, workload and threads\n\
EXPERIMENT is an experiment's id or name (the newest of that name)."
)]
pub struct Args {
    /// A and B (see below), and optionally the experiment's SPEC.toml, whose store is read
    #[arg(value_name = "A B [SPEC.toml]")]
    things: Vec<String>,
    /// Results store [SPEC's, else ./dbbench-lab/results.sqlite]
    #[arg(long, value_name = "PATH|URL", value_parser = super::non_empty("--store"))]
    store: Option<String>,
    /// tps, qps, rw_qps, latency_avg, latency_p95, latency_p99, latency_max, or a command workload's metric
    /// [tps; a command workload's first metric]
    #[arg(long, value_name = "NAME", value_parser = super::non_empty("--metric"))]
    metric: Option<String>,
    /// Confidence level [0.95]
    #[arg(long, value_name = "X", value_parser = super::parse_level)]
    level: Option<f64>,
}

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
    fn parse(s: &str) -> anyhow::Result<Selector> {
        if let Some(id) = s.strip_prefix("run:") {
            return id.parse().map(Selector::Run).map_err(|_| anyhow!("'{s}': run:ID takes a run's numeric id"));
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
                threads: t.parse().map_err(|_| anyhow!("'{s}': the last part of EXPERIMENT/CONFIGURATION/WORKLOAD/THREADS is a thread count"))?,
            }),
            _ => bail!("'{s}' names nothing: use run:ID, FILE.json, EXPERIMENT, EXPERIMENT/CONFIGURATION or EXPERIMENT/CONFIGURATION/WORKLOAD/THREADS"),
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

/// A cell of one side, keyed for pairing by (configuration, workload, threads).
type Key = (String, String, u32);

/// One cell's figures on a side.
struct CellData {
    metric: Metric,
    /// The metric of each ok repeat.
    values: Vec<f64>,
    /// A latency percentile of all the repeats' events pooled, as `report`'s
    /// latency tables give it (stored cells with histograms).
    pooled: Option<f64>,
    /// Where the cell comes in its experiment: configuration, workload in
    /// spec order, threads; rows follow A's order.
    rank: (usize, usize, u32),
}

/// One side: a label and its cells.
struct Side {
    label: String,
    cells: BTreeMap<Key, CellData>,
}

/// The figures of a `--format=json` run report, as a stored run's.
fn figures_from_json(path: &str) -> anyhow::Result<RunFigures> {
    let text = std::fs::read_to_string(path).with_context(|| path.to_string())?;
    let d = crate::run_document::RunDocument::parse(&text, path).map_err(crate::errors::text_error)?;
    Ok(RunFigures {
        status: if d.aborted.is_some() { "failed".into() } else { "ok".into() },
        error: d.aborted.clone(),
        workload: d.test.clone(),
        threads: d.threads,
        time_s: Some(d.total_time_s),
        tps: Some(d.rates_per_s.events),
        qps: Some(d.rates_per_s.queries),
        rw_qps: d.rw_qps(),
        latency_avg_ms: d.latency.avg_ms,
        latency_p95_ms: d.latency.percentile(95.0),
        latency_p99_ms: d.latency.percentile(99.0),
        latency_max_ms: d.latency.max_ms,
        ..Default::default()
    })
}

/// Loads one side; `requested` is `--metric` as given (None: each workload's default).
fn load(store: Option<&Store>, sel: &Selector, requested: Option<&str>) -> anyhow::Result<Side> {
    let need_store =
        || store.ok_or_else(|| anyhow!("no results store: give --store=PATH|URL or the experiment's spec"));
    let single = |f: &RunFigures, label: String| -> anyhow::Result<Side> {
        let metric = Metric::parse(requested.unwrap_or("tps"));
        let v = metric.value(f).ok_or_else(|| anyhow!("{label}: the run has no '{}' figure", metric.key()))?;
        let cell = CellData { metric, values: vec![v], pooled: None, rank: (0, 0, 0) };
        Ok(Side { label, cells: BTreeMap::from([((String::new(), String::new(), 0), cell)]) })
    };
    match sel {
        Selector::File(path) => {
            let f = figures_from_json(path)?;
            if f.status != "ok" {
                bail!("{path}: the run did not finish ({}); its figures are not compared", f.error.unwrap_or_default());
            }
            single(&f, path.clone())
        }
        Selector::Run(id) => {
            let store = need_store()?;
            for (eid, ..) in store.experiments()? {
                if let Some(run) = store.run_figures(eid)?.into_iter().find(|r| r.id == *id) {
                    if run.status != "ok" {
                        bail!("run {id} is not ok ({}): {}", run.status, run.error.unwrap_or_default());
                    }
                    return single(&run, format!("run {id}"));
                }
            }
            bail!("no run with id {id} in {}", store.location())
        }
        Selector::Experiment(e)
        | Selector::Configuration { experiment: e, .. }
        | Selector::Cell { experiment: e, .. } => {
            let store = need_store()?;
            let data = Dataset::load(store, find_experiment(store, Some(e))?)?;
            let config = match sel {
                Selector::Configuration { configuration, .. } | Selector::Cell { configuration, .. } => {
                    Some(data.configuration_index(configuration).ok_or_else(|| {
                        anyhow!("experiment '{}' has no configuration '{configuration}'", data.experiment.name)
                    })?)
                }
                _ => None,
            };
            // Latency percentiles are compared as `report` shows them: pooled over the repeats.
            let mut asked: Vec<f64> =
                data.workloads.iter().filter_map(|w| Metric::for_workload(requested, w).percentile()).collect();
            asked.sort_by(f64::total_cmp);
            asked.dedup();
            let pooled =
                if asked.is_empty() { Default::default() } else { super::latency::pooled(store, &data, &asked)?.0 };
            let mut cells: BTreeMap<Key, CellData> = BTreeMap::new();
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
                let cell_key = (r.configuration, r.workload, r.figures.threads);
                let pooled_figure = metric.percentile().and_then(|p| {
                    let i = asked.iter().position(|x| *x == p)?;
                    pooled.get(&cell_key)?.get(i).copied().flatten()
                });
                if let Some(v) = metric.value(&r.figures) {
                    cells
                        .entry(key)
                        .or_insert_with(|| CellData {
                            metric,
                            values: Vec::new(),
                            pooled: pooled_figure,
                            rank: cell_key,
                        })
                        .values
                        .push(v);
                }
            }
            if cells.is_empty() {
                let what = requested.map(|m| format!("a '{m}' figure")).unwrap_or_else(|| "a figure".into());
                bail!("nothing to compare in '{}': no ok run with {what} there", selector_text(sel));
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

/// A ratio's confidence interval as a sentence shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Interval {
    /// `lo` to `hi`; `hi` may be infinite (no upper bound).
    Bounded(f64, f64),
    /// Neither side's mean is known to differ from 0: no range.
    Unbounded,
    /// A side has fewer than 2 repeats.
    Unavailable,
}

/// Fieller's interval of num/den at `level`, cut at 0 for a figure that
/// cannot be negative. When den's mean is not significantly different from
/// 0 the interval of num/den is no finite range; Fieller's sets are the
/// same under inversion, so it is then read from den/num's [lo, hi] as
/// [1/hi, 1/lo] (no upper bound when lo is 0): "at least 2.7 times".
fn ratio_interval(num: &Summary, den: &Summary, level: f64, non_negative: bool) -> Interval {
    let clip = |r: Ratio| if non_negative { r.non_negative() } else { r };
    match Ratio::of(num, den, level).map(clip).map(|r| r.ci) {
        Some(RatioCi::Bounded { lo, hi }) => Interval::Bounded(lo, hi),
        Some(RatioCi::Unavailable) => Interval::Unavailable,
        _ => match Ratio::of(den, num, level).map(clip).map(|r| r.ci) {
            Some(RatioCi::Bounded { lo, hi }) if non_negative && hi > 0.0 => {
                Interval::Bounded(1.0 / hi, if lo > 0.0 { 1.0 / lo } else { f64::INFINITY })
            }
            _ => Interval::Unbounded,
        },
    }
}

/// The sentence for one pair, hyperfine's way: the better side first, as
/// "x ± se times faster", with the interval in the same form, never below
/// 0 (a ratio of throughputs or latencies cannot be negative). A
/// difference the interval does not show is not called "faster": the
/// sentence says it is not significant, with B's figure as a multiple of A's.
pub fn sentence(a_label: &str, b_label: &str, a: &Summary, b: &Summary, metric: &Metric, level: f64) -> String {
    let Some(r) = Ratio::of(b, a, level) else { return format!("{a_label}'s mean is 0: no ratio") };
    if !(r.ratio.is_finite() && r.ratio > 0.0) && metric.higher_is_better().is_some() {
        // A mean of 0 (or of opposite sign) on a side: "faster by" means nothing.
        return format!("{b_label}'s mean is {} × {a_label}'s: no speed ratio", number(r.ratio));
    }
    let non_negative = metric.non_negative();
    let lvl = format!("{}%", level * 100.0);
    let se = |s: Option<f64>| s.map(|s| format!(" ± {s:.2}")).unwrap_or_default();
    let shown = |i: Interval| match i {
        Interval::Bounded(lo, hi) if hi.is_finite() => format!("{lvl} CI {lo:.2} to {hi:.2}"),
        Interval::Bounded(lo, _) => format!("{lvl} CI {lo:.2} or more"),
        Interval::Unbounded => format!("{lvl} CI unbounded"),
        Interval::Unavailable => "no interval: fewer than 2 repeats on a side".into(),
    };
    // B's figure as a multiple of A's, for an unknown direction or no significant difference.
    let multiple = |prefix: &str| {
        format!(
            "{prefix}{b_label}'s {m} is {:.2}{} times {a_label}'s ({}; n = {} vs {})",
            r.ratio,
            se(r.se),
            shown(ratio_interval(b, a, level, non_negative)),
            b.n,
            a.n,
            m = metric.key()
        )
    };
    let Some(higher) = metric.higher_is_better() else {
        return match ratio_interval(b, a, level, non_negative) {
            Interval::Bounded(lo, hi) if lo > 1.0 || hi < 1.0 => multiple(""),
            Interval::Unavailable => multiple(""),
            _ => multiple("no significant difference: "),
        };
    };
    // The better side is the subject; the ratio "times faster" is at least 1.
    let b_better = if higher { r.ratio >= 1.0 } else { r.ratio <= 1.0 };
    let ((subject, sn), (object, on)) =
        if b_better { ((b_label, b), (a_label, a)) } else { ((a_label, a), (b_label, b)) };
    let (num, den) = if higher { (sn, on) } else { (on, sn) };
    let Some(faster) = Ratio::of(num, den, level) else { return multiple("") };
    let n = format!("n = {} vs {}", sn.n, on.n);
    match ratio_interval(num, den, level, non_negative) {
        Interval::Unavailable => {
            format!(
                "{subject} is {:.2} times faster than {object} (no interval: fewer than 2 repeats on a side; {n})",
                faster.ratio
            )
        }
        i @ Interval::Bounded(lo, _) if lo > 1.0 => {
            format!("{subject} is {:.2}{} times faster than {object} ({}; {n})", faster.ratio, se(faster.se), shown(i))
        }
        _ => multiple("no significant difference: "),
    }
}

/// The sentence for a pair of pooled latency percentiles (`report`'s
/// latency tables' figures): their ratio, with no interval, and the
/// repeats' own percentiles beside them for the spread.
fn pooled_sentence(a_label: &str, b_label: &str, (pa, a): (f64, &Summary), (pb, b): (f64, &Summary), p: f64) -> String {
    if !(pa > 0.0 && pb > 0.0) {
        return format!(
            "{b_label}'s pooled figure is {} ms, {a_label}'s {} ms: no speed ratio",
            number(pb),
            number(pa)
        );
    }
    // Less latency is better.
    let ((subject, ps, s), (object, po, o)) =
        if pb <= pa { ((b_label, pb, b), (a_label, pa, a)) } else { ((a_label, pa, a), (b_label, pb, b)) };
    format!(
        "{subject} is {:.2} times faster than {object} (pooled {} percentiles {} vs {} ms, no interval; the repeats' own {} to {} vs {} to {} ms; n = {} vs {})",
        po / ps,
        super::tables::ordinal(p),
        number(ps),
        number(po),
        number(s.min),
        number(s.max),
        number(o.min),
        number(o.max),
        s.n,
        o.n
    )
}

fn number(x: f64) -> String {
    super::tables::number(x)
}

/// Entry point for `dbbench compare ARGS...`.
pub fn cli_main(args: &[String]) -> ExitCode {
    let args = match crate::subcommand::parse::<Args>("compare", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(args) {
        Ok(()) => Exit::Ok.into(),
        Err(e) => crate::subcommand::failed("compare", &e),
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let (store_arg, metric, level) = (args.store, args.metric, args.level.unwrap_or(0.95));
    let mut spec = None;
    let mut sides = Vec::new();
    for a in &args.things {
        if a.ends_with(".toml") {
            spec = Some(super::SpecRef::load(std::path::Path::new(a))?);
        } else {
            sides.push(Selector::parse(a)?);
        }
    }
    let [sa, sb] = sides.as_slice() else {
        bail!("compare takes two things to compare, got {}; see `dbbench compare --help`", sides.len());
    };
    if sa.kind() != sb.kind() {
        bail!(
            "'{}' is {} and '{}' {}: compare like with like",
            selector_text(sa),
            sa.kind(),
            selector_text(sb),
            sb.kind()
        );
    }
    let needs_store = !matches!((sa, sb), (Selector::File(_), Selector::File(_)));
    let store = if needs_store { Some(super::open_store(store_arg.as_deref(), spec.as_ref())?) } else { None };
    let a = load(store.as_ref(), sa, metric.as_deref())?;
    let b = load(store.as_ref(), sb, metric.as_deref())?;
    let what = match &metric {
        Some(_) => a.cells.values().next().map(|c| c.metric.label()).unwrap_or_default(),
        None => "tps (command workloads: their first metric)".into(),
    };
    let mut o = format!("{} vs {}, {what} (A = {}, B = {})\n\n", a.label, b.label, a.label, b.label);
    // In A's order: configurations and workloads as its spec lists them, threads ascending.
    let mut pairs: Vec<_> = a.cells.iter().filter_map(|(k, ca)| b.cells.get(k).map(|cb| (k, ca, cb))).collect();
    pairs.sort_by_key(|(_, ca, _)| ca.rank);
    if pairs.is_empty() {
        bail!("'{}' and '{}' have no cell in common (same configuration, workload and threads)", a.label, b.label);
    }
    let mut rows = Vec::new();
    let mut any_pooled = false;
    for (key, ca, cb) in &pairs {
        let (Some(sa), Some(sb)) = (Summary::of(&ca.values), Summary::of(&cb.values)) else { continue };
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
        let percentile = ca.metric.percentile();
        match (percentile, ca.pooled, cb.pooled) {
            (Some(p), Some(pa), Some(pb)) => {
                any_pooled = true;
                let show = |v: f64, s: &Summary| format!("{} ms pooled (n={})", number(v), s.n);
                rows.push((at, show(pa, &sa), show(pb, &sb), pooled_sentence("A", "B", (pa, &sa), (pb, &sb), p)));
            }
            _ => rows.push((at, show(&sa), show(&sb), sentence("A", "B", &sa, &sb, &ca.metric, level))),
        }
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
    if any_pooled {
        o.push_str("pooled: the latency percentile of all events of a cell's ok repeats (their histograms merged), as `dbbench report` shows it; it has no interval across repeats\n");
    }
    crate::term::print_out(&o);
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
        let s = sentence("A", "B", &x, &y, &Metric::Tps, 0.95);
        assert!(s.starts_with("no significant difference: B's tps is 1.05 ± "), "{s}");
        // Unknown direction: no "faster".
        let s = sentence("A", "B", &x, &y, &Metric::Named("m".into()), 0.95);
        assert!(s.starts_with("no significant difference: B's m is 1.05"), "{s}");
        let z = Summary::of(&[100.0, 300.0]).unwrap();
        let w = Summary::of(&[1000.0, 1010.0]).unwrap();
        assert!(
            sentence("A", "B", &w, &z, &Metric::Named("m".into()), 0.95).contains("CI -"),
            "a command's metric may be negative"
        );
    }

    #[test]
    fn a_times_faster_interval_is_never_negative() {
        // A: its t interval includes 0 (150 ± 4.30 × 52), so Fieller's interval of A/B
        // starts below 0 (and ends at 0.373, well below 1), and B/A's is no finite range.
        let a = Summary::of(&[60.0, 150.0, 240.0]).unwrap();
        let b = Summary::of(&[1000.0, 1001.0, 999.0]).unwrap();
        let r = Ratio::of(&a, &b, 0.95).unwrap();
        assert!(matches!(r.ci, RatioCi::Bounded { lo, hi } if lo < 0.0 && hi < 1.0), "{r:?}");
        assert_eq!(Ratio::of(&b, &a, 0.95).unwrap().ci, RatioCi::Unbounded);
        // B is 6.67 times faster, significantly: in that form the interval runs
        // from 1/0.373 = 2.68 with no upper bound.
        let s = sentence("A", "B", &a, &b, &Metric::Tps, 0.95);
        assert!(
            s.starts_with("B is 6.67 ± ") && s.contains("times faster than A (95% CI 2.68 or more; n = 3 vs 3)"),
            "{s}"
        );
        assert!(!s.contains('-'), "{s}");
        // Not significant: no claim of faster, and the interval of B/A cut at 0.
        let c = Summary::of(&[10.0, 2000.0]).unwrap();
        let s = sentence("A", "B", &b, &c, &Metric::Tps, 0.95);
        assert!(s.starts_with("no significant difference: B's tps is 1.0") && s.contains("(95% CI 0.00 to "), "{s}");
        assert!(!s.contains('-') && !s.contains("faster"), "{s}");
    }
}
