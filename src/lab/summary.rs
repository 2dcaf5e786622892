//! The lab's own overhead table `dbbench lab run` prints after the
//! experiment's figures (which come from `dbbench report`, `report::lab_summary`).

use crate::lab::datadir::CopyStats;
use crate::lab::spec::Spec;
use crate::store::{Overhead, Store};
use std::fmt::Write;

/// Median and maximum of a list (None when empty).
fn median_max(v: Vec<f64>) -> Option<(f64, f64)> {
    let max = v.iter().copied().max_by(f64::total_cmp)?;
    Some((crate::inference::median(v)?, max))
}

/// The lab's own cost between measured runs, per configuration, from the
/// `overhead` JSON of every stored run: how long getting a run ready took
/// (stop, restore, start, and the prepare when it fell to that run), and
/// the parts of it. Medians and maxima over the runs that had that part.
pub fn overhead(store: &Store, id: i64, spec: &Spec) -> anyhow::Result<String> {
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
        let mine: Vec<&(String, bool, Overhead)> = runs.iter().filter(|r| r.0 == c.name).collect();
        let part = |key: fn(&Overhead) -> Option<f64>, skip_prepares: bool| -> String {
            let v: Vec<f64> =
                mine.iter().filter(|r| !(skip_prepares && r.2.prepare_s.is_some())).filter_map(|r| key(&r.2)).collect();
            match median_max(v) {
                Some((m, x)) => format!("{m:.3} / {x:.3}"),
                None => "-".to_string(),
            }
        };
        let restores: Vec<&CopyStats> = mine.iter().filter_map(|r| r.2.restore.as_ref()).collect();
        let files = median_max(restores.iter().map(|s| s.files_copied as f64).collect());
        let bytes = median_max(restores.iter().map(|s| s.bytes_copied as f64).collect());
        let method: Vec<String> = {
            let mut m: Vec<String> = restores
                .iter()
                .map(|s| {
                    serde_json::to_value(s.method).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
                })
                .collect();
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
            part(|o| o.ready_s, true),
            median_max(stops.iter().filter(|(n, _)| *n == c.name).map(|(_, s)| *s).collect())
                .map(|(m, x)| format!("{m:.3} / {x:.3}"))
                .unwrap_or_else(|| "-".to_string()),
            part(|o| o.restore_s, false),
            part(|o| o.start_s, false),
        );
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_and_max() {
        assert_eq!(super::median_max(vec![3.0, 1.0, 2.0, 10.0]), Some((2.5, 10.0)));
        assert_eq!(super::median_max(vec![]), None);
    }
}
