//! The comparison table `dbbench lab run` prints at the end: per workload,
//! one row per thread count, the mean ± standard deviation of each
//! configuration's repeats, and each configuration relative to the baseline
//! as the seeds wrote it, `(variant/baseline)` = (variant / baseline × 100) − 100.
//! Fuller reports (confidence intervals, significance, HTML) are `dbbench report`'s job.

use crate::lab::spec::{Spec, WorkloadKind};
use crate::lab::store::Store;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Mean and sample standard deviation.
fn mean_sd(v: &[f64]) -> (f64, Option<f64>) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, None);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, Some(var.sqrt()))
}

/// The table for experiment `id` of `spec`.
pub fn table(store: &Store, id: i64, spec: &Spec) -> Result<String, String> {
    let runs = store.runs_of(id)?;
    let failed = runs.iter().filter(|r| r.4 != "ok").count();
    let configs: Vec<&str> = spec.configurations.iter().map(|c| c.name.as_str()).collect();
    let base = configs[0];
    let mut o = String::new();
    for w in &spec.workloads {
        let (metric, name) = match &w.kind {
            WorkloadKind::Test { .. } => ("transactions/s (events/s)".to_string(), None),
            WorkloadKind::Command { metrics, .. } => {
                let m = metrics.first().map(|m| m.0.clone()).unwrap_or_default();
                (m.clone(), Some(m))
            }
        };
        let mut by: BTreeMap<(u32, String), Vec<f64>> = BTreeMap::new();
        for (c, t, v) in store.figures(id, &w.name, name.as_deref())? {
            by.entry((t, c)).or_default().push(v);
        }
        let _ = writeln!(o, "\n{} — {metric}, mean ± sd over repeats; relative = (config / {base} × 100) − 100", w.name);
        let mut header = format!("{:>8}", "threads");
        for c in &configs {
            header += &format!(" {:>22}", c);
        }
        for c in &configs[1..] {
            header += &format!(" {:>12}", format!("({c}/{base})"));
        }
        let _ = writeln!(o, "{header}");
        for &t in &w.threads {
            let mut line = format!("{t:>8}");
            let mut means = Vec::new();
            for c in &configs {
                let cell = by.get(&(t, c.to_string()));
                match cell {
                    Some(v) if !v.is_empty() => {
                        let (m, sd) = mean_sd(v);
                        let s = match sd {
                            Some(sd) => format!("{m:.1} ± {sd:.1} (n={})", v.len()),
                            None => format!("{m:.1} (n=1)"),
                        };
                        line += &format!(" {s:>22}");
                        means.push(Some(m));
                    }
                    _ => {
                        line += &format!(" {:>22}", "no ok run");
                        means.push(None);
                    }
                }
            }
            for m in &means[1..] {
                let rel = match (means[0], m) {
                    (Some(b), Some(m)) if b > 0.0 => format!("{:+.1}%", (m / b * 100.0) - 100.0),
                    _ => "-".to_string(),
                };
                line += &format!(" {rel:>12}");
            }
            let _ = writeln!(o, "{line}");
        }
    }
    if failed > 0 {
        let _ = writeln!(o, "\n{failed} run(s) not ok are left out of the table above.");
    }
    Ok(o)
}

/// Median and maximum of a list (None when empty).
fn median_max(mut v: Vec<f64>) -> Option<(f64, f64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    Some((median, v[n - 1]))
}

/// The lab's own cost between measured runs, per configuration, from the
/// `overhead` JSON of every stored run: how long getting a run ready took
/// (stop, restore, start, and the prepare when it fell to that run), and
/// the parts of it. Medians and maxima over the runs that had that part.
pub fn overhead(store: &Store, id: i64, spec: &Spec) -> Result<String, String> {
    let runs = store.run_overheads(id)?;
    // A stop belongs to the server stopped (recorded with its log), not to
    // the run that waited for it, which may be another configuration's.
    let stops = store.event_seconds(id, "server_log")?;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nlab overhead, seconds, median / max: `ready` = all a run waited for (stopping the previous server, restore, start; runs that also prepared data left out); `stop` per stop of this configuration's server"
    );
    let _ = writeln!(
        o,
        "{:<20} {:>5} {:>9} {:>13} {:>13} {:>13} {:>13}  restore copied (median)",
        "configuration", "runs", "restarts", "ready", "stop", "restore", "start"
    );
    for c in &spec.configurations {
        let mine: Vec<&(String, bool, serde_json::Value)> = runs.iter().filter(|r| r.0 == c.name).collect();
        let part = |key: &str, skip_prepares: bool| -> String {
            let v: Vec<f64> = mine
                .iter()
                .filter(|r| !(skip_prepares && r.2.get("prepare_s").is_some()))
                .filter_map(|r| r.2.get(key).and_then(|x| x.as_f64()))
                .collect();
            match median_max(v) {
                Some((m, x)) => format!("{m:.3} / {x:.3}"),
                None => "-".to_string(),
            }
        };
        let files = median_max(mine.iter().filter_map(|r| r.2.pointer("/restore/files_copied").and_then(|x| x.as_f64())).collect());
        let bytes = median_max(mine.iter().filter_map(|r| r.2.pointer("/restore/bytes_copied").and_then(|x| x.as_f64())).collect());
        let method: Vec<String> = {
            let mut m: Vec<String> = mine.iter().filter_map(|r| r.2.pointer("/restore/method").and_then(|x| x.as_str()).map(str::to_string)).collect();
            m.sort();
            m.dedup();
            m
        };
        let copied = match (files, bytes) {
            (Some((f, _)), Some((b, _))) => format!("{f:.0} files, {:.1} MiB ({})", b / 1048576.0, method.join("/")),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            o,
            "{:<20} {:>5} {:>9} {:>13} {:>13} {:>13} {:>13}  {copied}",
            c.name,
            mine.len(),
            mine.iter().filter(|r| r.1).count(),
            part("ready_s", true),
            median_max(stops.iter().filter(|(n, _)| *n == c.name).map(|(_, s)| *s).collect())
                .map(|(m, x)| format!("{m:.3} / {x:.3}"))
                .unwrap_or_else(|| "-".to_string()),
            part("restore_s", false),
            part("start_s", false),
        );
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    #[test]
    fn mean_and_sample_sd() {
        let (m, sd) = super::mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((sd.unwrap() - 2.138).abs() < 0.001);
        assert_eq!(super::mean_sd(&[3.0]), (3.0, None));
        assert_eq!(super::median_max(vec![3.0, 1.0, 2.0, 10.0]), Some((2.5, 10.0)));
        assert_eq!(super::median_max(vec![]), None);
    }
}
