//! The figures every layout prints: per cell (configuration, workload,
//! threads) the summary of its ok repeats, and per cell of a non-baseline
//! configuration its ratio to the baseline with a confidence interval and
//! the marks that say how far to trust it. Layouts format; they compute
//! nothing of their own.

use super::model::{Dataset, Run};
use crate::inference::{Ratio, RatioCi, Summary};
use crate::store::RunFigures;
use std::collections::HashMap;

/// The figure a report compares.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// Events (transactions) per second.
    Tps,
    /// Queries per second, every statement including BEGIN/COMMIT.
    Qps,
    /// (reads + writes) per second: sysbench 0.5's "read/write requests", the seeds' "q/s".
    RwQps,
    /// Mean event latency, ms.
    LatencyAvg,
    /// 95th percentile event latency, ms.
    LatencyP95,
    /// 99th percentile event latency, ms.
    LatencyP99,
    /// Maximum event latency, ms.
    LatencyMax,
    /// A TPC-H query's time in seconds (the `seconds` metric of its runs).
    QuerySeconds,
    /// A command workload's named metric.
    Named(String),
}

impl Metric {
    /// Parses `--metric`: tps, qps, rw_qps (also `q/s`), latency_avg,
    /// latency_p95, latency_p99, latency_max (also avg, p95, p99, max), or a
    /// command workload's metric name.
    pub fn parse(s: &str) -> Metric {
        match s {
            "tps" | "transactions" | "events" => Metric::Tps,
            "qps" | "queries" => Metric::Qps,
            "rw_qps" | "q/s" | "rw" => Metric::RwQps,
            "latency_avg" | "latency_avg_ms" | "avg" => Metric::LatencyAvg,
            "latency_p95" | "latency_p95_ms" | "p95" => Metric::LatencyP95,
            "latency_p99" | "latency_p99_ms" | "p99" => Metric::LatencyP99,
            "latency_max" | "latency_max_ms" | "max" => Metric::LatencyMax,
            "seconds" | "query_seconds" => Metric::QuerySeconds,
            other => Metric::Named(other.to_string()),
        }
    }

    /// Short name, as `--metric` takes it and exports label columns.
    pub fn key(&self) -> String {
        match self {
            Metric::Tps => "tps".into(),
            Metric::Qps => "qps".into(),
            Metric::RwQps => "rw_qps".into(),
            Metric::LatencyAvg => "latency_avg_ms".into(),
            Metric::LatencyP95 => "latency_p95_ms".into(),
            Metric::LatencyP99 => "latency_p99_ms".into(),
            Metric::LatencyMax => "latency_max_ms".into(),
            Metric::QuerySeconds => "seconds".into(),
            Metric::Named(n) => n.clone(),
        }
    }

    /// What the number is, for legends.
    pub fn label(&self) -> String {
        match self {
            Metric::Tps => "transactions/s".into(),
            Metric::Qps => "queries/s (all statements)".into(),
            Metric::RwQps => "q/s (reads + writes per second, BEGIN/COMMIT excluded)".into(),
            Metric::LatencyAvg => "mean latency (ms)".into(),
            Metric::LatencyP95 => "95th percentile latency (ms)".into(),
            Metric::LatencyP99 => "99th percentile latency (ms)".into(),
            Metric::LatencyMax => "maximum latency (ms)".into(),
            Metric::QuerySeconds => "query time (s)".into(),
            Metric::Named(n) => n.clone(),
        }
    }

    /// Compact unit for table legends and ratio labels ("tps", "q/s", "p95 ms").
    pub fn unit(&self) -> String {
        match self {
            Metric::Tps => "tps".into(),
            Metric::Qps => "qps".into(),
            Metric::RwQps => "q/s".into(),
            Metric::LatencyAvg => "avg ms".into(),
            Metric::LatencyP95 => "p95 ms".into(),
            Metric::LatencyP99 => "p99 ms".into(),
            Metric::LatencyMax => "max ms".into(),
            Metric::QuerySeconds => "s".into(),
            Metric::Named(n) => n.clone(),
        }
    }

    /// Whether the figure can never be negative (throughput, latency, time):
    /// an interval's lower end below 0 is then cut at 0, as no true value
    /// lies there (the interval keeps its coverage). A command's metric may
    /// be anything, so its intervals are left as computed.
    pub fn non_negative(&self) -> bool {
        !matches!(self, Metric::Named(_))
    }

    /// The percentile of a latency percentile metric (95 for `latency_p95`):
    /// such a cell's figure is the percentile of all its repeats' events
    /// pooled, as the latency tables show it, not a mean of per-run percentiles.
    pub fn percentile(&self) -> Option<f64> {
        match self {
            Metric::LatencyP95 => Some(95.0),
            Metric::LatencyP99 => Some(99.0),
            _ => None,
        }
    }

    /// Whether more is better: throughput yes, latency no; a command's
    /// metric is not known (None), so it is called "higher"/"lower", never
    /// "faster"/"slower".
    pub fn higher_is_better(&self) -> Option<bool> {
        match self {
            Metric::Tps | Metric::Qps | Metric::RwQps => Some(true),
            Metric::LatencyAvg
            | Metric::LatencyP95
            | Metric::LatencyP99
            | Metric::LatencyMax
            | Metric::QuerySeconds => Some(false),
            Metric::Named(_) => None,
        }
    }

    /// The metric compared for `workload` when the user asked for
    /// `requested` (`--metric`, None: the default). A command workload's own
    /// metric of that name wins over a built-in alias: a command that
    /// reports `tps` is compared by it, not by a run column it never fills.
    /// The default is a command's first metric, and tps for tests.
    pub fn for_workload(requested: Option<&str>, workload: &crate::report::model::Workload) -> Metric {
        match requested {
            // A TPC-H query is compared by its time whatever was asked for tests.
            _ if workload.tpch => Metric::QuerySeconds,
            Some(m) if workload.metrics.iter().any(|x| x == m) => Metric::Named(m.to_string()),
            Some(m) => Metric::parse(m),
            None => workload.metrics.first().map(|m| Metric::Named(m.clone())).unwrap_or(Metric::Tps),
        }
    }

    /// The run's value of this metric, if it has one.
    pub fn value(&self, f: &RunFigures) -> Option<f64> {
        let v = match self {
            Metric::Tps => f.tps,
            Metric::Qps => f.qps,
            Metric::RwQps => f.rw_qps,
            Metric::LatencyAvg => f.latency_avg_ms,
            Metric::LatencyP95 => f.latency_p95_ms,
            Metric::LatencyP99 => f.latency_p99_ms,
            Metric::LatencyMax => f.latency_max_ms,
            Metric::QuerySeconds => f.metrics.iter().rev().find(|m| m.0 == "seconds").map(|m| m.1),
            Metric::Named(n) => f.metrics.iter().rev().find(|m| &m.0 == n).map(|m| m.1),
        };
        v.filter(|x| x.is_finite())
    }
}

/// Choices that shape the figures.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The compared metric as the user named it (`--metric`), resolved per
    /// workload by `Metric::for_workload`; None: each workload's default.
    pub metric: Option<String>,
    /// Index of the configuration the others are compared with.
    pub baseline: usize,
    /// Confidence level of every interval (0.95).
    pub level: f64,
    /// Coefficient of variation above which a cell's spread is "high" (0.05).
    pub cv_limit: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { metric: None, baseline: 0, level: 0.95, cv_limit: 0.05 }
    }
}

/// One cell's figure over its ok repeats.
#[derive(Debug, Clone)]
pub struct CellFigures {
    /// The metric's value of every ok repeat, in run order.
    pub values: Vec<f64>,
    /// Their summary; None when no ok run has the metric.
    pub summary: Option<Summary>,
    /// Runs of the cell that are not ok (left out).
    pub not_ok: usize,
    /// Of those, runs stopped at a timeout; with the largest bound (seconds)
    /// when the runs recorded it (TPC-H queries: the cell's figure is `>T`).
    pub timeouts: usize,
    /// The timeout bound, when recorded.
    pub timeout_s: Option<f64>,
    /// The metric cannot be negative (`Metric::non_negative`).
    pub non_negative: bool,
    /// The figure (`summary.mean`) is a latency percentile of all events of
    /// the ok repeats pooled (their histograms merged); `values` are then the
    /// repeats' own percentiles, for spread only, and there is no interval.
    pub pooled: bool,
}

impl CellFigures {
    /// The t interval of the mean at `level`, its lower end cut at 0 for a
    /// figure that cannot be negative.
    pub fn mean_ci(&self, level: f64) -> Option<(f64, f64)> {
        if self.pooled {
            return None;
        }
        let (lo, hi) = self.summary?.mean_ci(level)?;
        Some((if self.non_negative { lo.max(0.0) } else { lo }, hi))
    }

    /// Whether the spread over repeats is above the limit.
    pub fn high_spread(&self, cv_limit: f64) -> bool {
        self.summary.and_then(|s| s.cv()).is_some_and(|cv| cv > cv_limit)
    }
}

/// A non-baseline cell against the baseline's cell of the same workload and threads.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// variant mean / baseline mean, with its interval; None when a side has
    /// no figure or the baseline's mean is 0.
    pub ratio: Option<Ratio>,
    /// A compared cell's coefficient of variation is above the limit.
    pub high_spread: bool,
    /// Welch's two-sided p-value for equal means, when both sides have ≥ 2 repeats.
    pub p_value: Option<f64>,
    /// Both sides are pooled latency percentiles: a ratio without an interval.
    pub pooled: bool,
}

/// Marks after a compared value: what each means is printed in every legend.
pub const MARK_HIGH_SPREAD: char = '*';
/// The interval includes "no difference".
pub const MARK_NOT_SIGNIFICANT: char = '~';
/// Fewer than two ok repeats on a side: no interval at all.
pub const MARK_NO_INTERVAL: char = '?';
/// A run of the cell (or, compared, of either side) has validity flags:
/// the host made its figures unreliable (`report::validity`).
pub const MARK_FLAGGED: char = '!';

impl Comparison {
    /// (variant / baseline × 100) − 100: the seeds' relative change in percent.
    pub fn relative_pct(&self) -> Option<f64> {
        self.ratio.map(|r| r.ratio * 100.0 - 100.0)
    }

    /// The marks this comparison gets (possibly none).
    pub fn marks(&self) -> String {
        let mut m = String::new();
        if self.high_spread {
            m.push(MARK_HIGH_SPREAD);
        }
        if let Some(r) = &self.ratio {
            match r.ci {
                RatioCi::Unavailable => m.push(MARK_NO_INTERVAL),
                _ if !r.significant() => m.push(MARK_NOT_SIGNIFICANT),
                _ => {}
            }
        }
        m
    }
}

/// An experiment's figures under one set of choices.
#[derive(Debug)]
pub struct Analysis<'a> {
    /// The experiment.
    pub data: &'a Dataset,
    /// The choices.
    pub settings: Settings,
    /// The metric of each workload (same index as `data.workloads`).
    pub metrics: Vec<Metric>,
    cells: HashMap<(usize, usize, u32), CellFigures>,
    comparisons: HashMap<(usize, usize, u32), Comparison>,
    /// Things the reader must know before trusting the tables.
    pub warnings: Vec<String>,
}

/// Pooled latency percentiles of the compared metric per (configuration, workload, threads), in ms.
pub type PooledFigures = HashMap<(usize, usize, u32), f64>;

impl<'a> Analysis<'a> {
    /// Computes every cell and comparison; a percentile metric's cells use
    /// their mean of per-run percentiles (no histograms at hand).
    #[cfg(test)]
    pub fn new(data: &'a Dataset, settings: Settings) -> Analysis<'a> {
        Analysis::with_pooled(data, settings, &PooledFigures::new())
    }

    /// Computes every cell and comparison; a cell of a percentile metric
    /// (`Metric::percentile`) found in `pooled` has the pooled percentile as
    /// its figure, and its comparison is the ratio of pooled figures.
    pub fn with_pooled(data: &'a Dataset, settings: Settings, pooled: &PooledFigures) -> Analysis<'a> {
        let metrics: Vec<Metric> =
            data.workloads.iter().map(|w| Metric::for_workload(settings.metric.as_deref(), w)).collect();
        let mut grouped: HashMap<(usize, usize, u32), Vec<&Run>> = HashMap::new();
        for r in &data.runs {
            grouped.entry((r.configuration, r.workload, r.figures.threads)).or_default().push(r);
        }
        let mut cells = HashMap::new();
        for (key, runs) in grouped {
            let metric = &metrics[key.1];
            let values: Vec<f64> = runs.iter().filter(|r| r.ok()).filter_map(|r| metric.value(&r.figures)).collect();
            let not_ok = runs.iter().filter(|r| !r.ok()).count();
            let timed_out: Vec<&&Run> = runs.iter().filter(|r| r.figures.status == "timeout").collect();
            let timeout_s = timed_out
                .iter()
                .filter_map(|r| r.figures.metrics.iter().find(|m| m.0 == "timeout_s").map(|m| m.1))
                .reduce(f64::max);
            // A TPC-H query's figure is censored when a repeat timed out and
            // missing when one failed (as `dbbench tpch` decides per query):
            // a mean of the repeats that finished would flatter it.
            let mut summary = if *metric == Metric::QuerySeconds && not_ok > 0 { None } else { Summary::of(&values) };
            let pooled_figure = metric.percentile().and(pooled.get(&key).copied()).filter(|_| summary.is_some());
            if let (Some(p), Some(s)) = (pooled_figure, summary.as_mut()) {
                s.mean = p;
            }
            cells.insert(
                key,
                CellFigures {
                    summary,
                    values,
                    not_ok,
                    timeouts: timed_out.len(),
                    timeout_s,
                    non_negative: metric.non_negative(),
                    pooled: pooled_figure.is_some(),
                },
            );
        }
        let mut comparisons = HashMap::new();
        for (&(c, w, t), cell) in &cells {
            if c == settings.baseline {
                continue;
            }
            let base = cells.get(&(settings.baseline, w, t));
            let (Some(a), Some(b)) = (cell.summary, base.and_then(|b| b.summary)) else { continue };
            let high_spread =
                cell.high_spread(settings.cv_limit) || base.is_some_and(|b| b.high_spread(settings.cv_limit));
            let pooled = cell.pooled && base.is_some_and(|b| b.pooled);
            let comparison = if pooled {
                // A percentile of pooled events has no interval across repeats.
                let ratio = (b.mean != 0.0).then(|| a.mean / b.mean).filter(|r| r.is_finite());
                Comparison {
                    ratio: ratio.map(|ratio| Ratio {
                        ratio,
                        ci: RatioCi::Unavailable,
                        df: None,
                        level: settings.level,
                        se: None,
                    }),
                    high_spread,
                    p_value: None,
                    pooled,
                }
            } else {
                Comparison {
                    ratio: Ratio::of(&a, &b, settings.level)
                        .map(|r| if cell.non_negative { r.non_negative() } else { r }),
                    high_spread,
                    p_value: crate::inference::welch_p(&a, &b),
                    pooled,
                }
            };
            comparisons.insert((c, w, t), comparison);
        }
        let mut analysis = Analysis { data, settings, metrics, cells, comparisons, warnings: Vec::new() };
        analysis.warnings = analysis.find_warnings();
        analysis
    }

    /// A cell's figures, if the cell has runs.
    pub fn cell(&self, configuration: usize, workload: usize, threads: u32) -> Option<&CellFigures> {
        self.cells.get(&(configuration, workload, threads))
    }

    /// A non-baseline cell's comparison with the baseline, if both have figures.
    pub fn comparison(&self, configuration: usize, workload: usize, threads: u32) -> Option<&Comparison> {
        self.comparisons.get(&(configuration, workload, threads))
    }

    /// Whether any comparison is of pooled latency percentiles (no interval).
    pub fn any_pooled(&self) -> bool {
        self.comparisons.values().any(|c| c.pooled)
    }

    /// Whether any cell has a figure of its metric.
    pub fn has_figures(&self) -> bool {
        self.cells.values().any(|c| !c.values.is_empty())
    }

    /// Configurations other than the baseline, in spec order.
    pub fn variants(&self) -> Vec<usize> {
        (0..self.data.configurations.len()).filter(|&c| c != self.settings.baseline).collect()
    }

    /// The baseline's name.
    pub fn baseline_name(&self) -> &str {
        &self.data.configurations[self.settings.baseline].name
    }

    fn find_warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let counts: Vec<usize> = self.cells.values().map(|c| c.values.len()).collect();
        let few = counts.iter().filter(|&&n| n < 3).count();
        if few > 0 {
            let ones = counts.iter().filter(|&&n| n < 2).count();
            w.push(format!(
                "{few} of {} cells have fewer than 3 ok repeats{}: their spread and intervals say little; use repeats = 3 or more",
                counts.len(),
                match ones {
                    0 => String::new(),
                    1 => format!(" (1 has fewer than 2: no spread or interval at all, marked {MARK_NO_INTERVAL})"),
                    n => format!(" ({n} have fewer than 2: no spread or interval at all, marked {MARK_NO_INTERVAL})"),
                }
            ));
        }
        let not_ok: usize = self.cells.values().map(|c| c.not_ok).sum();
        if not_ok > 0 {
            w.push(format!("{not_ok} run(s) failed or timed out and are left out of every figure (listed at the end)"));
        }
        for (i, wl) in self.data.workloads.iter().enumerate() {
            let has_runs = self.data.runs.iter().any(|r| r.workload == i && r.ok());
            let has_values = self.cells.iter().any(|(k, c)| k.1 == i && !c.values.is_empty());
            if has_runs && !has_values {
                let hint =
                    if wl.is_test() { String::new() } else { format!(" (its metrics: {})", wl.metrics.join(", ")) };
                w.push(format!("workload '{}' has no '{}' figures{hint}", wl.name, self.metrics[i].key()));
            }
        }
        let unpooled = self
            .cells
            .iter()
            .filter(|(k, c)| self.metrics[k.1].percentile().is_some() && !c.pooled && c.summary.is_some())
            .count();
        if unpooled > 0 {
            w.push(format!("{unpooled} cell(s) have no stored latency histograms: their percentile is the mean of their runs' own percentiles, not pooled"));
        }
        let lukewarm = self.data.runs.iter().filter(|r| r.figures.cache == "lukewarm").count();
        if lukewarm > 0 {
            w.push(format!("{lukewarm} run(s) asked for a page-cache drop that was not permitted (cache 'lukewarm')"));
        }
        if self.data.runs.iter().any(|r| r.figures.latency_measured_from.as_deref() == Some("intended_start")) {
            w.push("latencies of --rate runs are measured from each event's intended start (queueing included)".into());
        }
        let settings = &self.data.experiment.settings;
        if let Some(labs) = settings.get("concurrent_labs").and_then(|v| v.as_array()).filter(|a| !a.is_empty()) {
            let who: Vec<&str> = labs.iter().filter_map(|v| v.as_str()).collect();
            w.push(format!(
                "other lab runs measured on this host at the same time, so the figures include their load: {}",
                who.join("; ")
            ));
        } else if settings.get("allow_concurrent").and_then(|v| v.as_bool()) == Some(true) {
            w.push("run with --allow-concurrent (no other lab run was seen measuring beside it)".into());
        }
        if self.data.experiment.status != "finished" {
            w.push(format!(
                "the experiment's status is '{}': some planned runs may be missing",
                self.data.experiment.status
            ));
        }
        w
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::model::Workload;
    use crate::store::{ConfigurationInfo, ExperimentInfo};

    /// A dataset of `values[c][t]` tps per repeat (NaN: a failed run).
    pub(crate) fn dataset(configs: &[&str], threads: &[u32], values: &[Vec<Vec<f64>>]) -> Dataset {
        let experiment = ExperimentInfo {
            id: 1,
            name: "x".into(),
            description: String::new(),
            status: "finished".into(),
            started_at: "2026-01-01T00:00:00.000Z".into(),
            finished_at: None,
            spec_text: String::new(),
            dbbench_version: "0".into(),
            git_revision: None,
            host: serde_json::json!({}),
            settings: serde_json::json!({}),
        };
        let configurations = configs
            .iter()
            .enumerate()
            .map(|(i, n)| ConfigurationInfo {
                id: i as i64 + 1,
                position: i as i64,
                name: n.to_string(),
                kind: "sqlite".into(),
                definition: serde_json::json!({}),
                server_version: None,
                variables: None,
                products: Vec::new(),
                cpus: Vec::new(),
            })
            .collect();
        let mut runs = Vec::new();
        for (c, per_t) in values.iter().enumerate() {
            for (ti, reps) in per_t.iter().enumerate() {
                for (r, v) in reps.iter().enumerate() {
                    let ok = v.is_finite();
                    runs.push(Run {
                        configuration: c,
                        workload: 0,
                        figures: RunFigures {
                            id: runs.len() as i64 + 1,
                            configuration_id: c as i64 + 1,
                            workload: "w".into(),
                            threads: threads[ti],
                            repeat: r as u32 + 1,
                            status: if ok { "ok" } else { "failed" }.into(),
                            tps: ok.then_some(*v),
                            cache: "warm".into(),
                            ..Default::default()
                        },
                        flags: Vec::new(),
                    });
                }
            }
        }
        let workloads = vec![Workload {
            name: "w".into(),
            what: "oltp_read_write".into(),
            metrics: Vec::new(),
            threads: threads.to_vec(),
            tpch: false,
            server_options: Vec::new(),
        }];
        Dataset { experiment, configurations, workloads, runs, samples: Vec::new() }
    }

    #[test]
    fn cells_comparisons_and_marks() {
        // off: 100 110 120 (mean 110); 32: 200 210 190 (mean 200) at 1 thread;
        // at 4 threads the variant is noisy and overlaps the baseline.
        let d = dataset(
            &["off", "32"],
            &[1, 4],
            &[
                vec![vec![100.0, 110.0, 120.0], vec![100.0, 100.0, f64::NAN]],
                vec![vec![200.0, 210.0, 190.0], vec![80.0, 130.0, 100.0]],
            ],
        );
        let a = Analysis::new(&d, Settings::default());
        let base = a.cell(0, 0, 1).unwrap();
        assert_eq!(base.summary.unwrap().mean, 110.0);
        assert_eq!(a.cell(0, 0, 4).unwrap().not_ok, 1);
        let c1 = a.comparison(1, 0, 1).unwrap();
        // (200 / 110 × 100) − 100 = 81.818...%
        assert!((c1.relative_pct().unwrap() - 81.818_181_8).abs() < 1e-6);
        assert!(c1.ratio.unwrap().significant());
        // CVs: off 10/110 = 9.1%, 32: 10/200 = 5%: above the 5% limit.
        assert_eq!(c1.marks(), "*");
        let c4 = a.comparison(1, 0, 4).unwrap();
        // Baseline 100, 100 (sd 0); variant mean 103.3, sd 25.2: no difference shown.
        assert!(c4.marks().contains(MARK_NOT_SIGNIFICANT) && c4.marks().contains(MARK_HIGH_SPREAD), "{}", c4.marks());
        assert!(a.comparison(0, 0, 1).is_none(), "the baseline is not compared with itself");
        assert!(a.warnings.iter().any(|w| w.contains("1 of 4 cells have fewer than 3 ok repeats")), "{:?}", a.warnings);
        assert!(a.warnings.iter().any(|w| w.contains("1 run(s) failed")), "{:?}", a.warnings);
        // Another baseline flips the comparison.
        let b = Analysis::new(&d, Settings { baseline: 1, ..Settings::default() });
        assert!(
            (b.comparison(0, 0, 1).unwrap().relative_pct().unwrap() - (110.0 / 200.0 * 100.0 - 100.0)).abs() < 1e-9
        );
    }

    #[test]
    fn a_single_repeat_has_no_interval() {
        let d = dataset(&["a", "b"], &[1], &[vec![vec![100.0]], vec![vec![150.0]]]);
        let a = Analysis::new(&d, Settings::default());
        let c = a.comparison(1, 0, 1).unwrap();
        assert_eq!(c.relative_pct(), Some(50.0));
        assert_eq!(c.marks(), "?");
        assert!(c.p_value.is_none());
    }

    #[test]
    fn metrics_parse_and_read_runs() {
        assert_eq!(Metric::parse("q/s"), Metric::RwQps);
        assert_eq!(Metric::parse("p95"), Metric::LatencyP95);
        assert_eq!(Metric::parse("pgbench_tps"), Metric::Named("pgbench_tps".into()));
        let f = RunFigures {
            tps: Some(5.0),
            rw_qps: Some(f64::NAN),
            metrics: vec![("m".into(), 1.0), ("m".into(), 2.0)],
            ..Default::default()
        };
        assert_eq!(Metric::Tps.value(&f), Some(5.0));
        assert_eq!(Metric::RwQps.value(&f), None, "a NaN is no figure");
        assert_eq!(Metric::Named("m".into()).value(&f), Some(2.0));
        assert_eq!(Metric::LatencyP95.higher_is_better(), Some(false));
    }
}
