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

#[cfg(test)]
mod tests {
    #[test]
    fn mean_and_sample_sd() {
        let (m, sd) = super::mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((sd.unwrap() - 2.138).abs() < 0.001);
        assert_eq!(super::mean_sd(&[3.0]), (3.0, None));
    }
}
