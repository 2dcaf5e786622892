//! `--export-html`: one self-contained page (inline CSS, inline SVG charts,
//! a few lines of script; nothing fetched from anywhere) with the tables,
//! charts per workload (throughput vs threads with confidence intervals,
//! relative difference vs the baseline, latency percentiles), per-interval
//! time series with the warmup shaded, the host, and the server variables
//! that differ between configurations. Every text that comes from a user
//! (names, options, errors, variables) is escaped.

use super::tables::{self, Table};
use super::Report;
use crate::inference::RatioCi;
use crate::render::style::STYLE;
use crate::render::svg::{self, escape, ErrorBar, LineChart, Point, Series, Shade, XAxis};
use crate::store::{IntervalPoint, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Toggles a series in its chart when its legend entry is clicked, then
/// marks the page ready (the browser test looks for `data-ready`).
const SCRIPT: &str = "
document.querySelectorAll('svg').forEach(function (chart) {
  chart.querySelectorAll('.legend[data-series]').forEach(function (entry) {
    entry.addEventListener('click', function () {
      var id = entry.getAttribute('data-series');
      chart.querySelectorAll('.series[data-series=\\\"' + id + '\\\"]:not(.legend)').forEach(function (el) { el.classList.toggle('hidden-series'); });
      entry.classList.toggle('hidden-series');
    });
  });
});
document.body.setAttribute('data-ready', '1');
";

fn table_html(t: &Table) -> String {
    let mut o = format!("<h3>{}</h3>\n<table>\n<tr><th class=\"l\">{}</th>", escape(&t.title), escape(&t.corner));
    for c in &t.columns {
        let _ = write!(o, "<th>{}</th>", escape(c));
    }
    o.push_str("</tr>\n");
    for r in &t.rows {
        if r.cells.is_empty() {
            let _ = writeln!(
                o,
                "<tr class=\"group\"><td colspan=\"{}\">{}</td></tr>",
                t.columns.len() + 1,
                escape(&r.label)
            );
            continue;
        }
        let class = if r.indent > 1 { "l i1" } else { "l" };
        let _ = write!(o, "<tr><td class=\"{class}\">{}</td>", escape(&r.label));
        let last_free = t.column_caption.is_empty();
        for (i, c) in r.cells.iter().enumerate() {
            let class = if last_free && i + 1 == r.cells.len() { " class=\"wrap\"" } else { "" };
            match &c.note {
                Some(n) => {
                    let _ = write!(o, "<td{class} title=\"{}\">{}</td>", escape(n), escape(&c.text));
                }
                None => {
                    let _ = write!(o, "<td{class}>{}</td>", escape(&c.text));
                }
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
    if !t.legend.is_empty() {
        o.push_str("<ul class=\"legend\">");
        for l in &t.legend {
            let _ = write!(o, "<li>{}</li>", escape(l));
        }
        o.push_str("</ul>\n");
    }
    o
}

/// Below this many ok repeats in a cell a t interval says little (t(0.975)
/// is 12.7 at 2 repeats, 4.3 at 3): a chart with such a cell shows, for
/// every cell, its lowest to highest repeat instead, and says so.
const FEW_REPEATS: usize = 4;

/// A chart with thread counts as evenly spaced categories; `note` says what its error bars show.
fn threads_chart(
    title: String,
    y_label: String,
    note: String,
    cats: &[String],
    series: Vec<Series>,
    zero_line: bool,
    y_floor: Option<f64>,
) -> String {
    svg::line_chart(&LineChart {
        title,
        x_label: "client threads".into(),
        y_label,
        note,
        y_floor,
        x: XAxis::Categories(cats.to_vec()),
        series,
        zero_line,
        y_from_zero: !zero_line,
        width: 560,
        height: 340,
        ..Default::default()
    })
}

/// Charts of one workload: its metric vs threads, relative to the baseline, latency.
fn workload_charts(r: &Report, w: usize) -> String {
    let a = &r.analysis;
    let d = a.data;
    let wl = &d.workloads[w];
    let summary = |c: usize, t: u32| a.cell(c, w, t).and_then(|x| x.summary);
    let ctx = ChartContext {
        cats: wl.threads.iter().map(|t| t.to_string()).collect(),
        level: format!("{}%", a.settings.level * 100.0),
        few: (0..d.configurations.len())
            .any(|c| wl.threads.iter().any(|&t| summary(c, t).is_some_and(|s| s.n < FEW_REPEATS))),
        pooled: (0..d.configurations.len())
            .any(|c| wl.threads.iter().any(|&t| a.cell(c, w, t).is_some_and(|x| x.pooled))),
    };
    let mut out = metric_chart(r, w, &ctx);
    if d.configurations.len() > 1 {
        out.push_str(&relative_chart(r, w, &ctx));
    }
    if wl.is_test() && !r.pooled.is_empty() {
        out.push_str(&percentile_chart(r, w, &ctx));
    }
    out
}

/// What a workload's charts share: the thread counts as categories, the
/// confidence level as text, and whether some cell has fewer than
/// [`FEW_REPEATS`] repeats (bars then span the repeats, not an interval) or
/// pools its repeats' events (no interval at all).
struct ChartContext {
    cats: Vec<String>,
    level: String,
    few: bool,
    pooled: bool,
}

/// The workload's metric against threads, a line per configuration.
fn metric_chart(r: &Report, w: usize, ctx: &ChartContext) -> String {
    let a = &r.analysis;
    let d = a.data;
    let wl = &d.workloads[w];
    let metric = &a.metrics[w];
    let (cats, level, few, pooled) = (&ctx.cats, &ctx.level, ctx.few, ctx.pooled);
    let mut series = Vec::new();
    for (c, conf) in d.configurations.iter().enumerate() {
        let mut points = Vec::new();
        for (x, &t) in wl.threads.iter().enumerate() {
            let Some(cell) = a.cell(c, w, t) else { continue };
            let Some(s) = cell.summary else { continue };
            let ci = cell.mean_ci(a.settings.level);
            let range = (s.n > 1).then_some((s.min, s.max));
            let tip = format!(
                "{}, {t} threads: {} {} (mean of {} ok repeat(s){}{})",
                conf.name,
                tables::number(s.mean),
                metric.unit(),
                s.n,
                range
                    .map(|(lo, hi)| format!("; lowest {}, highest {}", tables::number(lo), tables::number(hi)))
                    .unwrap_or_default(),
                ci.map(|(lo, hi)| format!("; {level} CI {} to {}", tables::number(lo), tables::number(hi)))
                    .unwrap_or_default(),
            );
            let err = if few { range } else { ci };
            points.push(Point {
                x: x as f64,
                y: s.mean,
                err: err.map(|(lo, hi)| ErrorBar::Range { lo, hi }),
                tooltip: tip,
            });
        }
        series.push(Series { name: conf.name.clone(), colour: c, dashed: false, points, band: Vec::new() });
    }
    let note = if few {
        format!("bars: lowest to highest repeat (a cell has fewer than {FEW_REPEATS} repeats)")
    } else if pooled {
        "points: all events of a cell's repeats pooled; a pooled percentile has no interval".to_string()
    } else {
        format!("bars: {level} confidence interval of the mean")
    };
    threads_chart(format!("{}: {} vs threads", wl.name, metric.label()), metric.unit(), note, cats, series, false, None)
}

/// Each variant relative to the baseline (%) against threads.
fn relative_chart(r: &Report, w: usize, ctx: &ChartContext) -> String {
    let a = &r.analysis;
    let d = a.data;
    let wl = &d.workloads[w];
    let metric = &a.metrics[w];
    let (cats, level, few, pooled) = (&ctx.cats, &ctx.level, ctx.few, ctx.pooled);
    let summary = |c: usize, t: u32| a.cell(c, w, t).and_then(|x| x.summary);
    let mut series = Vec::new();
    for c in a.variants() {
        let conf = &d.configurations[c];
        let mut points = Vec::new();
        for (x, &t) in wl.threads.iter().enumerate() {
            let Some(cmp) = a.comparison(c, w, t) else { continue };
            let (Some(rel), Some(ratio)) = (cmp.relative_pct(), cmp.ratio) else { continue };
            // The ratios a variant repeat and a baseline repeat can make: lowest to highest.
            let repeat_ratios = match (summary(c, t), summary(a.settings.baseline, t)) {
                (Some(v), Some(b)) if b.min > 0.0 && v.min >= 0.0 => {
                    Some((v.min / b.max * 100.0 - 100.0, v.max / b.min * 100.0 - 100.0))
                }
                _ => None,
            };
            let (ci_err, ci_text) = match ratio.ci {
                RatioCi::Bounded { lo, hi } => {
                    let (lo, hi) = (lo * 100.0 - 100.0, hi * 100.0 - 100.0);
                    (Some(ErrorBar::Range { lo, hi }), format!("{level} CI {lo:.1}% to {hi:.1}%"))
                }
                RatioCi::Unbounded => {
                    (Some(ErrorBar::Unbounded { lo: None, hi: None }), format!("{level} CI unbounded"))
                }
                RatioCi::Unavailable if cmp.pooled => (None, "no interval: pooled latency percentiles".into()),
                RatioCi::Unavailable => (None, "no interval (fewer than 2 repeats)".into()),
            };
            let err = if few { repeat_ratios.map(|(lo, hi)| ErrorBar::Range { lo, hi }) } else { ci_err };
            let tip = format!(
                "{} / {}, {t} threads: {rel:.1}% ({ci_text}{}){}",
                conf.name,
                a.baseline_name(),
                repeat_ratios
                    .map(|(lo, hi)| format!("; repeat against repeat: lowest {lo:.1}%, highest {hi:.1}%"))
                    .unwrap_or_default(),
                if cmp.marks().is_empty() { String::new() } else { format!(" {}", cmp.marks()) }
            );
            points.push(Point { x: x as f64, y: rel, err, tooltip: tip });
        }
        series.push(Series {
            name: format!("{} / {}", conf.name, a.baseline_name()),
            colour: c,
            dashed: false,
            points,
            band: Vec::new(),
        });
    }
    let note = if few {
        format!("bars: lowest to highest ratio of two repeats (a cell has fewer than {FEW_REPEATS} repeats)")
    } else if pooled {
        "points: ratios of pooled percentiles, which have no interval".to_string()
    } else {
        format!("bars: {level} confidence interval of the ratio (Fieller)")
    };
    threads_chart(
        format!("{}: relative to {} (%)", wl.name, a.baseline_name()),
        "%".into(),
        note,
        cats,
        series,
        true,
        // A ratio of figures that cannot be negative is at least 0: -100 %.
        metric.non_negative().then_some(-100.0),
    )
}

/// A test workload's pooled latency percentiles against threads: the first
/// two of `--percentile`, solid and dashed, per configuration.
fn percentile_chart(r: &Report, w: usize, ctx: &ChartContext) -> String {
    let a = &r.analysis;
    let d = a.data;
    let wl = &d.workloads[w];
    let cats = &ctx.cats;
    let mut series = Vec::new();
    for (c, conf) in d.configurations.iter().enumerate() {
        for (i, p) in r.percentiles.iter().enumerate().take(2) {
            let points = wl
                .threads
                .iter()
                .enumerate()
                .filter_map(|(x, &t)| {
                    let ms = r.pooled.get(&(c, w, t))?.get(i).copied().flatten()?;
                    Some(Point {
                        x: x as f64,
                        y: ms,
                        err: None,
                        tooltip: format!(
                            "{}, {t} threads: {} percentile {} ms",
                            conf.name,
                            tables::ordinal(*p),
                            tables::number(ms)
                        ),
                    })
                })
                .collect();
            series.push(Series {
                name: format!("{} p{}", conf.name, crate::output::pct_label(*p)),
                colour: c,
                dashed: i == 1,
                points,
                band: Vec::new(),
            });
        }
    }
    threads_chart(
        format!("{}: latency percentiles (ms), repeats pooled", wl.name),
        "ms".into(),
        String::new(),
        cats,
        series,
        false,
        None,
    )
}

/// TPC-H: per TPC-H workload a grouped bar chart of the query times (one
/// bar per configuration, min–max over repeats as error bars, timeouts
/// drawn censored with `>T`), and one of the ratios to the baseline.
fn tpch_charts(r: &Report) -> String {
    let a = &r.analysis;
    let d = a.data;
    let base = a.settings.baseline;
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (w, wl) in d.workloads.iter().enumerate().filter(|(_, wl)| wl.tpch) {
        let g = wl.name.split(':').next().unwrap_or("").to_string();
        match groups.iter_mut().find(|x| x.0 == g) {
            Some(x) => x.1.push(w),
            None => groups.push((g, vec![w])),
        }
    }
    let mut out = String::new();
    for (group, ws) in groups {
        let label = |w: usize| {
            let q = d.workloads[w].name.split_once(':').map(|x| x.1.to_string()).unwrap_or_default();
            let own = d.workloads[w].server_options.iter().any(|(_, list)| !list.is_empty());
            if own {
                format!("{q} {}", tables::MARK_OWN_OPTIONS)
            } else {
                q
            }
        };
        let threads = |w: usize| d.workloads[w].threads.first().copied().unwrap_or(1);
        let series: Vec<(String, usize)> =
            d.configurations.iter().enumerate().map(|(c, conf)| (conf.name.clone(), c)).collect();
        let seconds: Vec<svg::BarGroup> = ws
            .iter()
            .map(|&w| svg::BarGroup {
                category: label(w),
                bars: (0..d.configurations.len())
                    .map(|c| {
                        let cell = a.cell(c, w, threads(w))?;
                        if cell.timeouts > 0 {
                            // No bar without a known bound: a censored bar at 0 would be a made-up figure.
                            let t = cell.timeout_s?;
                            return Some(svg::Bar {
                                value: t,
                                err: None,
                                censored: Some(format!(">{t:.0}")),
                                tooltip: format!(
                                    "{} {}: stopped at the {t:.0} s timeout",
                                    label(w),
                                    d.configurations[c].name
                                ),
                            });
                        }
                        let s = cell.summary?;
                        Some(svg::Bar {
                            value: s.mean,
                            err: (s.n > 1).then_some((s.min, s.max)),
                            censored: None,
                            tooltip: format!(
                                "{} {}: {:.3} s (n = {}, min {:.3}, max {:.3})",
                                label(w),
                                d.configurations[c].name,
                                s.mean,
                                s.n,
                                s.min,
                                s.max
                            ),
                        })
                    })
                    .collect(),
            })
            .collect();
        out.push_str(&svg::bar_chart(&svg::BarChart {
            title: format!("TPC-H {group}: seconds per query (mean; bars: min to max)"),
            y_label: "s".into(),
            series: series.clone(),
            groups: seconds,
            value_labels: false,
            width: 1100,
            height: 380,
        }));
        if d.configurations.len() > 1 {
            let ratios: Vec<svg::BarGroup> = ws
                .iter()
                .map(|&w| svg::BarGroup {
                    category: label(w),
                    bars: (0..d.configurations.len())
                        .map(|c| {
                            let mean = |c: usize| {
                                a.cell(c, w, threads(w))
                                    .filter(|x| x.timeouts == 0)
                                    .and_then(|x| x.summary)
                                    .map(|s| s.mean)
                            };
                            let (b, v) = (mean(base)?, mean(c)?);
                            (b > 0.0).then(|| svg::Bar {
                                value: v / b,
                                err: None,
                                censored: None,
                                tooltip: format!(
                                    "{} {}: {:.2} × {}",
                                    label(w),
                                    d.configurations[c].name,
                                    v / b,
                                    d.configurations[base].name
                                ),
                            })
                        })
                        .collect(),
                })
                .collect();
            out.push_str(&svg::bar_chart(&svg::BarChart {
                title: format!("TPC-H {group}: time relative to {} (below 1: faster)", d.configurations[base].name),
                y_label: "ratio".into(),
                series,
                groups: ratios,
                value_labels: false,
                width: 1100,
                height: 320,
            }));
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("<div class=\"charts\">{out}</div>\n")
    }
}

/// One report interval of a cell, over its repeats.
#[derive(Debug, Clone, PartialEq)]
struct Tick {
    /// The interval's index: 1 the first measured interval, 0 and below the
    /// warmup's, counted back from its end.
    index: i64,
    /// Where it is drawn: the mean of the repeats' tick times.
    time_s: f64,
    /// The repeats' tps in this interval.
    values: Vec<f64>,
}

/// The ticks of some runs' series, repeats aligned by interval index: the
/// k-th interval after the warmup of one repeat meets the k-th of another,
/// whatever their tick times (1.000 s in one, 1.007 s in the next). Aligning
/// by time would keep jittered ticks apart and join them into a sawtooth.
fn align_repeats<'a>(runs: impl IntoIterator<Item = &'a [IntervalPoint]>) -> Vec<Tick> {
    let mut by_index: BTreeMap<i64, (f64, Vec<f64>)> = BTreeMap::new();
    for points in runs {
        let mut points: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| Some((p.time_s, p.tps.filter(|v| v.is_finite())?)))
            .filter(|(t, _)| t.is_finite())
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let warmup = points.iter().filter(|(t, _)| *t <= 0.0).count() as i64;
        for (i, (t, v)) in points.into_iter().enumerate() {
            let tick = by_index.entry(i as i64 + 1 - warmup).or_default();
            tick.0 += t;
            tick.1.push(v);
        }
    }
    by_index
        .into_iter()
        .map(|(index, (sum, values))| Tick { index, time_s: sum / values.len() as f64, values })
        .collect()
}

/// Per-interval throughput of every (workload, threads): per configuration
/// the mean over its ok repeats of each interval (aligned by index), with a
/// min–max band; the warmup (time ≤ 0) shaded.
fn time_series(r: &Report, series: &[Vec<IntervalPoint>]) -> String {
    let a = &r.analysis;
    let d = a.data;
    // The report interval: the experiment's sample interval (the lab passes it as --report-interval).
    let interval =
        d.experiment.settings.get("sample_interval_s").and_then(|v| v.as_f64()).filter(|v| *v > 0.0).unwrap_or(1.0);
    let mut out = String::new();
    for (w, wl) in d.workloads.iter().enumerate() {
        for &t in &wl.threads {
            let mut lines = Vec::new();
            let mut any_warmup = None::<f64>;
            for (c, conf) in d.configurations.iter().enumerate() {
                let runs = d.runs.iter().enumerate().filter(|(_, run)| {
                    run.configuration == c && run.workload == w && run.figures.threads == t && run.ok()
                });
                let ticks = align_repeats(runs.map(|(i, _)| series[i].as_slice()));
                if ticks.is_empty() {
                    continue;
                }
                let mut points = Vec::new();
                let mut band = Vec::new();
                for tick in &ticks {
                    let (x, vals) = (tick.time_s, &tick.values);
                    if tick.index <= 0 {
                        any_warmup = Some(any_warmup.map_or(x, |m: f64| m.min(x)));
                    }
                    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
                    let (lo, hi) =
                        vals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
                    band.push((x, lo, hi));
                    let which = if tick.index <= 0 {
                        "warmup interval".to_string()
                    } else {
                        format!("interval {}", tick.index)
                    };
                    points.push(Point {
                        x,
                        y: mean,
                        err: None,
                        tooltip: format!(
                            "{}, {which}, ending at {x:.1} s: {} tps (mean of {} run(s), {} to {})",
                            conf.name,
                            tables::number(mean),
                            vals.len(),
                            tables::number(lo),
                            tables::number(hi)
                        ),
                    });
                }
                lines.push(Series { name: conf.name.clone(), colour: c, dashed: false, points, band });
            }
            if lines.is_empty() {
                continue;
            }
            // A tick at t covers (t - interval, t]: the warmup spans from one interval before its first tick to 0.
            let shades = any_warmup
                .map(|first| vec![Shade { from: first - interval, to: 0.0, label: "warmup".into() }])
                .unwrap_or_default();
            out.push_str(&svg::line_chart(&LineChart {
                title: format!("{}, {t} threads: transactions/s per interval", wl.name),
                x_label: "seconds since the end of the warmup".into(),
                y_label: "tps".into(),
                x: XAxis::Linear,
                series: lines,
                shades,
                y_from_zero: true,
                width: 560,
                height: 300,
                ..Default::default()
            }));
        }
    }
    out
}

/// Variable names whose values differ between servers only because each has
/// its own files, ports and ids: shown apart, so the real differences stand
/// out. Matched by the name's last `_` part (so `innodb_file_per_table`, a
/// real setting, is not taken for a file) or the whole name.
fn is_location(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let last = n.rsplit('_').next().unwrap_or("");
    const LAST: &[&str] = &[
        "port",
        "socket",
        "dir",
        "datadir",
        "tmpdir",
        "basedir",
        "directory",
        "directories",
        "file",
        "path",
        "basename",
        "hostname",
        "uuid",
        "uid",
    ];
    const WHOLE: &[&str] = &[
        "log_error",
        "log_bin_index",
        "relay_log",
        "relay_log_index",
        "gtid_domain_id",
        "server_id",
        "timestamp",
        "pseudo_thread_id",
        "secure_file_priv",
        "wsrep_node_name",
        "wsrep_node_address",
    ];
    LAST.contains(&last) || WHOLE.contains(&n.as_str())
}

type Variables = serde_json::Map<String, serde_json::Value>;

/// Configurations (indexes into `maps`) grouped by product: one joins the
/// first group whose first member shares at least half of its variable
/// names. Two MariaDB servers share nearly all; MariaDB and PostgreSQL
/// share a handful of about a thousand, and comparing the rest would only
/// say that each product has its own settings.
fn product_groups(maps: &[&Variables]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, m) in maps.iter().enumerate() {
        let joins = groups.iter_mut().find(|g| {
            let first = maps[g[0]];
            let shared = m.keys().filter(|k| first.contains_key(*k)).count();
            2 * shared >= m.len().min(first.len()).max(1)
        });
        match joins {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// A table of `names` (rows) by the configurations in `members` (columns).
fn variable_rows(names: &[&String], members: &[usize], captured: &[(&str, &Variables)]) -> String {
    let mut s = "<table>\n<tr><th class=\"l\">variable</th>".to_string();
    for &i in members {
        let _ = write!(s, "<th class=\"l\">{}</th>", escape(captured[i].0));
    }
    s.push_str("</tr>\n");
    for n in names {
        let _ = write!(s, "<tr><td class=\"l\">{}</td>", escape(n));
        for &i in members {
            let v = match captured[i].1.get(*n) {
                None => "(not present)".to_string(),
                Some(serde_json::Value::String(v)) => v.clone(),
                Some(x) => x.to_string(),
            };
            let _ = write!(s, "<td class=\"wrap\">{}</td>", escape(&v));
        }
        s.push_str("</tr>\n");
    }
    s + "</table>"
}

/// The variables of `names` whose values are not the same on every member
/// (a variable one member lacks differs), split into real differences and
/// those that differ by files, ports or ids only.
fn differing<'m>(
    names: &[&'m String],
    members: &[usize],
    captured: &[(&str, &Variables)],
) -> (Vec<&'m String>, Vec<&'m String>) {
    names
        .iter()
        .copied()
        .filter(|n| members.windows(2).any(|p| captured[p[0]].1.get(*n) != captured[p[1]].1.get(*n)))
        .partition(|n| !is_location(n))
}

/// One comparison's heading, table and folded location rows.
fn diff_block(o: &mut String, heading: &str, names: &[&String], members: &[usize], captured: &[(&str, &Variables)]) {
    let (real, located) = differing(names, members, captured);
    let _ = writeln!(o, "<h3>{heading} ({} of {})</h3>", real.len(), names.len());
    if real.is_empty() {
        o.push_str("<p>None, apart from files, ports and ids.</p>\n");
    } else {
        let _ = writeln!(o, "{}", variable_rows(&real, members, captured));
    }
    if !located.is_empty() {
        let _ = writeln!(
            o,
            "<details><summary>{} more that differ by files, ports or ids only</summary>\n{}</details>",
            located.len(),
            variable_rows(&located, members, captured)
        );
    }
}

fn configuration_diff(r: &Report) -> String {
    let d = r.analysis.data;
    let mut o = String::new();
    // Definitions as given in the spec (passwords removed when stored).
    o.push_str("<h3>definitions</h3>\n<table>\n<tr><th class=\"l\">configuration</th><th class=\"l\">kind</th><th class=\"l\">server version</th><th class=\"l\">CPUs (read back)</th><th class=\"l\">definition</th></tr>\n");
    for c in &d.configurations {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"wrap\"><code>{}</code></td></tr>",
            escape(&c.name),
            escape(&c.kind),
            escape(c.server_version.as_deref().unwrap_or("")),
            escape(&c.cpus.join(" / ")),
            escape(&c.definition.to_string())
        );
    }
    o.push_str("</table>\n");
    // Only configurations whose variables were captured are compared: a
    // missing map means "not captured", not "every variable differs".
    let captured: Vec<(&str, &Variables)> = d
        .configurations
        .iter()
        .filter_map(|c| c.variables.as_ref().and_then(|v| v.as_object()).map(|m| (c.name.as_str(), m)))
        .collect();
    match captured.len() {
        0 => return o,
        1 if d.configurations.len() > 1 => {
            let _ = writeln!(
                o,
                "<p>Server variables were captured for {} only: nothing to compare them with.</p>",
                escape(captured[0].0)
            );
            return o;
        }
        1 => return o,
        _ => {}
    }
    let missing: Vec<&str> = d
        .configurations
        .iter()
        .filter(|c| !captured.iter().any(|(n, _)| *n == c.name))
        .map(|c| c.name.as_str())
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(o, "<p>No variables were captured for {}: left out below.</p>", escape(&missing.join(", ")));
    }
    o.push_str(&variables_diff(&captured));
    o
}

/// The server variables that differ among `captured` (at least two
/// configurations' variables): per product over every variable its servers
/// have, and across products over the variables every server has.
fn variables_diff(captured: &[(&str, &Variables)]) -> String {
    let mut o = String::new();
    let maps: Vec<&Variables> = captured.iter().map(|c| c.1).collect();
    let groups = product_groups(&maps);
    let names_of = |members: &[usize]| -> Vec<&String> {
        let set: BTreeSet<&String> = members.iter().flat_map(|&i| maps[i].keys()).collect();
        set.into_iter().collect()
    };
    let list = |members: &[usize]| members.iter().map(|&i| captured[i].0).collect::<Vec<_>>().join(", ");
    // Within a product: every variable any of its servers has.
    for g in groups.iter().filter(|g| g.len() > 1) {
        let heading = if groups.len() == 1 {
            "server variables that differ".to_string()
        } else {
            format!("server variables that differ between {}", escape(&list(g)))
        };
        diff_block(&mut o, &heading, &names_of(g), g, captured);
    }
    // Across products: like with like, the variables every server has; the
    // rest are each product's own, summarised.
    if groups.len() > 1 {
        let all: Vec<usize> = (0..captured.len()).collect();
        let common: Vec<&String> =
            names_of(&all).into_iter().filter(|n| maps.iter().all(|m| m.contains_key(*n))).collect();
        let heading = if captured.len() == 2 {
            "variables both servers have that differ"
        } else {
            "variables every server has that differ"
        };
        diff_block(&mut o, heading, &common, &all, captured);
        let own: Vec<String> = groups
            .iter()
            .map(|g| {
                let names = names_of(g);
                format!("{}: {} of {}", list(g), names.iter().filter(|n| !common.contains(n)).count(), names.len())
            })
            .collect();
        let _ = writeln!(
            o,
            "<p>Not compared across products: the variables not every server has (per product, how many of its own: {}).</p>",
            escape(&own.join("; "))
        );
        for g in &groups {
            let names: Vec<&String> = names_of(g).into_iter().filter(|n| !common.contains(n)).collect();
            let _ = writeln!(
                o,
                "<details><summary>{} variables only {} {}</summary>\n{}</details>",
                names.len(),
                escape(&list(g)),
                if g.len() > 1 { "have" } else { "has" },
                variable_rows(&names, g, captured)
            );
        }
    }
    o
}

fn host(r: &Report) -> String {
    let e = &r.analysis.data.experiment;
    let mut o = String::from("<table>\n");
    if let Some(h) = e.host.as_object() {
        for (k, v) in h {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                x => x.to_string(),
            };
            let _ = writeln!(o, "<tr><td class=\"l\">{}</td><td class=\"wrap\">{}</td></tr>", escape(k), escape(&v));
        }
    }
    if let Some(s) = e.settings.as_object() {
        for (k, v) in s {
            let _ = writeln!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"wrap\">{}</td></tr>",
                escape(&format!("setting: {k}")),
                escape(&v.to_string())
            );
        }
    }
    o.push_str("</table>\n");
    let _ = writeln!(o, "<details><summary>the spec as run</summary><pre>{}</pre></details>", escape(&e.spec_text));
    o
}

/// The page.
pub fn page(r: &Report, store: &Store) -> anyhow::Result<String> {
    page_with(r, store, &[])
}

/// The page with further sections (each an `<h2>` and its content, e.g.
/// `dbbench querydiff`'s) before the system information.
pub fn page_with(r: &Report, store: &Store, sections: &[String]) -> anyhow::Result<String> {
    let a = &r.analysis;
    let d = a.data;
    let series = d.series(store)?;
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>dbbench report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&d.experiment.name)
    );
    let _ = writeln!(o, "<h1>{}</h1>\n<ul class=\"context\">", escape(&d.experiment.name));
    for l in d.context_lines() {
        let _ = write!(o, "<li>{}</li>", escape(&l));
    }
    o.push_str("</ul>\n");
    // Each section is built first and shown only with content (and only then linked).
    let mut summary = String::new();
    for t in tables::tpch(a, &r.answers) {
        summary.push_str(&table_html(&t));
    }
    summary.push_str(&tpch_charts(r));
    let tests: Vec<usize> = (0..d.workloads.len()).filter(|&w| !d.workloads[w].tpch).collect();
    if d.configurations.len() > 1 {
        for t in &tables::compared(a, r.format) {
            summary.push_str(&table_html(t));
        }
    } else if !tests.is_empty() {
        summary.push_str("<p>One configuration: nothing to compare; absolute figures below.</p>\n");
    }
    // Under the compared table, whose cells they mark (the absolute table marks them too).
    if let Some(t) = tables::flagged_runs(a) {
        summary.push_str(&table_html(&t));
    }
    let mut charts = String::new();
    if !tests.is_empty() {
        charts.push_str("<p class=\"legend\">Each chart says under its legend what its error bars show: the confidence interval of the mean or of the ratio, or, where a cell has fewer than 4 ok repeats, its lowest to highest repeat. Bars that reach beyond a chart end in an arrow. Click a legend entry to hide or show its series; hover a point for its figures.</p>\n");
        for &w in &tests {
            let _ = writeln!(
                charts,
                "<h3>{}</h3>\n<div class=\"charts\">{}</div>",
                escape(&d.workloads[w].what),
                workload_charts(r, w)
            );
        }
    }
    let ts = time_series(r, &series);
    let time_series = if ts.is_empty() {
        String::new()
    } else {
        format!("<p class=\"legend\">Transactions per second in each report interval: the mean over a cell's ok repeats (the k-th interval of each repeat together), the band their minimum to maximum. The shaded warmup is in no other figure.</p>\n<div class=\"charts\">{ts}</div>\n")
    };
    let samples = r.samples.html_section(d, table_html);
    let mut rest = Vec::new();
    if d.configurations.len() > 1 {
        rest.extend(tables::intervals(a, r.format));
    }
    rest.extend(tables::absolute(a));
    rest.extend(tables::latency(a, &r.pooled, &r.percentiles));
    rest.extend(tables::failed_runs(a));
    let more_tables: String = rest.iter().map(table_html).collect();
    let shown: Vec<(&str, &str, &String)> = [
        ("summary", "summary", &summary),
        ("charts", "charts", &charts),
        ("series", "time series", &time_series),
        ("samples", "samples", &samples),
        ("tables", "tables", &more_tables),
    ]
    .into_iter()
    .filter(|s| !s.2.is_empty())
    .collect();
    o.push_str("<nav>");
    for (id, name, _) in &shown {
        let _ = write!(o, "<a href=\"#{id}\">{name}</a>");
    }
    o.push_str("<a href=\"#system\">system</a><a href=\"#configurations\">configurations</a></nav>\n");
    for w in &r.warnings {
        let _ = writeln!(o, "<div class=\"warn\">warning: {}</div>", escape(w));
    }
    for (id, name, content) in &shown {
        let _ = writeln!(o, "<h2 id=\"{id}\">{name}</h2>");
        o.push_str(content);
    }
    for section in sections {
        o.push_str(section);
    }
    o.push_str("<h2 id=\"system\">system</h2>\n");
    o.push_str(&host(r));
    o.push_str("<h2 id=\"configurations\">configurations</h2>\n");
    o.push_str(&configuration_diff(r));
    let _ = write!(
        o,
        "<p class=\"legend\">generated by dbbench {}</p>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        crate::VERSION
    );
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(run_id: i64, ticks: &[(f64, f64)]) -> Vec<IntervalPoint> {
        ticks
            .iter()
            .map(|&(time_s, tps)| IntervalPoint { run_id, time_s, tps: Some(tps), qps: None, latency_p95_ms: None })
            .collect()
    }

    fn vars(pairs: &[(&str, &str)]) -> Variables {
        pairs.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect()
    }

    #[test]
    fn four_configurations_two_products_compare_like_with_like() {
        let maria = |port: &str, join: &str, uid: &str, per_table: &str| {
            vars(&[
                ("autocommit", "ON"),
                ("max_connections", "100"),
                ("port", port),
                ("join_buffer_size", join),
                ("server_uid", uid),
                ("datadir", &format!("/data/{port}")),
                ("innodb_file_per_table", per_table),
                ("sort_buffer_size", "2097152"),
                ("version", "10.11.6-MariaDB"),
            ])
        };
        let pg = |port: &str, conns: &str, buffers: &str| {
            vars(&[
                ("max_connections", conns),
                ("port", port),
                ("shared_buffers", buffers),
                ("data_directory", &format!("/data/{port}")),
                ("work_mem", "4MB"),
                ("server_version", "16.4"),
            ])
        };
        let (m1, m2) = (maria("3306", "262144", "a1", "ON"), maria("3307", "8388608", "b2", "OFF"));
        let (p1, p2) = (pg("5432", "100", "32MB"), pg("5433", "200", "64MB"));
        let captured = [("m1", &m1), ("p1", &p1), ("m2", &m2), ("p2", &p2)];
        let html = variables_diff(&captured);
        // Within each product, every variable either server has; files, ports and ids folded away.
        let maria_diff = "<h3>server variables that differ between m1, m2 (2 of 9)</h3>\n<table>\n<tr><th class=\"l\">variable</th><th class=\"l\">m1</th><th class=\"l\">m2</th></tr>\n<tr><td class=\"l\">innodb_file_per_table</td><td class=\"wrap\">ON</td><td class=\"wrap\">OFF</td></tr>\n<tr><td class=\"l\">join_buffer_size</td><td class=\"wrap\">262144</td><td class=\"wrap\">8388608</td></tr>\n</table>\n<details><summary>3 more that differ by files, ports or ids only</summary>";
        assert!(html.contains(maria_diff), "{html}");
        assert!(html.contains("<h3>server variables that differ between p1, p2 (2 of 6)</h3>"), "{html}");
        assert!(html.contains("<summary>2 more that differ by files, ports or ids only</summary>"), "{html}");
        // Across products: only max_connections and port are on all four; port is folded.
        let at = html.find("<h3>variables every server has that differ (1 of 2)</h3>").expect(&html);
        let across = &html[at..html[at..].find("</details>").unwrap() + at];
        assert!(across.contains("<td class=\"l\">max_connections</td><td class=\"wrap\">100</td><td class=\"wrap\">100</td><td class=\"wrap\">100</td><td class=\"wrap\">200</td>"), "{across}");
        assert!(!across.contains("(not present)") && !across.contains("shared_buffers"), "{across}");
        assert!(html.contains("(per product, how many of its own: m1, m2: 7 of 9; p1, p2: 4 of 6)"), "{html}");
        assert!(html.contains("<summary>7 variables only m1, m2 have</summary>"), "{html}");
        assert!(html.contains("<summary>4 variables only p1, p2 have</summary>"), "{html}");
        // One product: one comparison, no cross-product part.
        let html = variables_diff(&[("m1", &m1), ("m2", &m2)]);
        assert!(html.starts_with("<h3>server variables that differ (2 of 9)</h3>"), "{html}");
        assert!(!html.contains("every server") && !html.contains("both servers"), "{html}");
    }

    #[test]
    fn location_names_are_folded_and_settings_are_not() {
        for n in [
            "port",
            "socket",
            "datadir",
            "server_uid",
            "server_uuid",
            "pid_file",
            "general_log_file",
            "data_directory",
            "unix_socket_directories",
            "hba_file",
            "innodb_data_home_dir",
            "log_bin_basename",
            "secure_file_priv",
            "server_id",
        ] {
            assert!(is_location(n), "{n}");
        }
        // (The old substring match took the "port" in "support" for a port.)
        for n in [
            "innodb_file_per_table",
            "innodb_support_xa",
            "join_buffer_size",
            "optimizer_switch",
            "innodb_flush_method",
            "shared_buffers",
        ] {
            assert!(!is_location(n), "{n}");
        }
    }

    #[test]
    fn repeats_meet_by_interval_index_not_by_tick_time() {
        // Three repeats whose ticks jitter by a few ms, one of them stored out of order.
        let a = points(1, &[(-1.0, 10.0), (0.0, 20.0), (1.0, 100.0), (2.0, 200.0)]);
        let b = points(2, &[(-0.993, 12.0), (0.0, 22.0), (2.007, 210.0), (1.007, 110.0)]);
        let c = points(3, &[(-1.01, 14.0), (0.0, 24.0), (0.998, 120.0), (2.014, 220.0)]);
        let ticks = align_repeats([a.as_slice(), b.as_slice(), c.as_slice()]);
        let got: Vec<(i64, Vec<f64>)> = ticks.iter().map(|t| (t.index, t.values.clone())).collect();
        assert_eq!(
            got,
            [
                (-1, vec![10.0, 12.0, 14.0]),
                (0, vec![20.0, 22.0, 24.0]),
                (1, vec![100.0, 110.0, 120.0]),
                (2, vec![200.0, 210.0, 220.0])
            ]
        );
        assert!((ticks[2].time_s - (1.0 + 1.007 + 0.998) / 3.0).abs() < 1e-12);
        // A repeat with a shorter warmup still meets the others at its first measured interval.
        let d = points(4, &[(0.0, 5.0), (1.2, 50.0)]);
        let ticks = align_repeats([a.as_slice(), d.as_slice()]);
        assert_eq!(ticks.iter().find(|t| t.index == 1).unwrap().values, [100.0, 50.0]);
        assert_eq!(ticks.iter().find(|t| t.index == 0).unwrap().values, [20.0, 5.0]);
    }
}
