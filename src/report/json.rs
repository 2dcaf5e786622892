//! `--export-json`: every figure of a report in one document (schema in
//! docs/report.md, versioned by `schema_version`): the experiment and its
//! context, each cell's repeats and summary, each comparison with its
//! interval and marks, pooled latency percentiles, every run.

use super::Report;
use crate::inference::RatioCi;
use serde_json::{json, Map, Value};

/// Version of this document's layout; bump on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// The document, pretty-printed.
pub fn document(r: &Report) -> String {
    let a = &r.analysis;
    let d = a.data;
    let e = &d.experiment;
    let mut cells = Vec::new();
    let mut comparisons = Vec::new();
    for (w, wl) in d.workloads.iter().enumerate() {
        for &t in &wl.threads {
            for (c, conf) in d.configurations.iter().enumerate() {
                let Some(cell) = a.cell(c, w, t) else { continue };
                let s = cell.summary;
                let mut latency = Map::new();
                if let Some(v) = r.pooled.get(&(c, w, t)) {
                    for (p, ms) in r.percentiles.iter().zip(v) {
                        latency.insert(crate::output::pct_label(*p), json!(ms));
                    }
                }
                cells.push(json!({
                    "workload": wl.name, "threads": t, "configuration": conf.name, "metric": a.metrics[w].key(),
                    "n": cell.values.len(), "not_ok": cell.not_ok, "timeouts": cell.timeouts, "timeout_s": cell.timeout_s, "values": cell.values,
                    "mean": s.map(|s| finite(s.mean)), "sd": s.and_then(|s| s.sd).map(finite), "cv": s.and_then(|s| s.cv()).map(finite),
                    "min": s.map(|s| finite(s.min)), "max": s.map(|s| finite(s.max)),
                    "mean_ci": cell.mean_ci(a.settings.level).map(|(lo, hi)| json!([finite(lo), finite(hi)])),
                    "high_spread": cell.high_spread(a.settings.cv_limit), "pooled": cell.pooled, "flagged": d.cell_flagged(c, w, t),
                    "latency_ms_pooled": latency,
                }));
                let Some(cmp) = a.comparison(c, w, t) else { continue };
                let ratio = cmp.ratio;
                let ci = ratio.map(|r| match r.ci {
                    RatioCi::Bounded { lo, hi } => json!({"kind": "bounded", "lo": finite(lo), "hi": finite(hi)}),
                    RatioCi::Unbounded => json!({"kind": "unbounded"}),
                    RatioCi::Unavailable => json!({"kind": "unavailable"}),
                });
                comparisons.push(json!({
                    "workload": wl.name, "threads": t, "configuration": conf.name, "baseline": a.baseline_name(), "metric": a.metrics[w].key(),
                    "ratio": ratio.map(|r| finite(r.ratio)), "relative_pct": cmp.relative_pct().map(finite),
                    "ci": ci, "se": ratio.and_then(|r| r.se).map(finite), "df": ratio.and_then(|r| r.df).map(finite),
                    // null where there is no interval to decide it (a side with one repeat).
                    "significant": ratio.filter(|r| r.ci != RatioCi::Unavailable).map(|r| r.significant()),
                    "high_spread": cmp.high_spread, "p_value": cmp.p_value.map(finite),
                    "marks": cmp.marks(), "flagged": d.cell_flagged(c, w, t) || d.cell_flagged(a.settings.baseline, w, t),
                }));
            }
        }
    }
    let runs: Vec<Value> = d
        .runs
        .iter()
        .map(|run| {
            let f = &run.figures;
            json!({
                "id": f.id, "configuration": d.configurations[run.configuration].name, "workload": d.workloads[run.workload].name,
                "threads": f.threads, "repeat": f.repeat, "seq": f.seq, "status": f.status, "error": f.error, "seed": f.seed,
                "cache": f.cache, "started_at": f.started_at, "time_s": f.time_s, "events": f.events, "errors": f.errors,
                "reconnects": f.reconnects, "tps": f.tps, "qps": f.qps, "rw_qps": f.rw_qps,
                "latency_avg_ms": f.latency_avg_ms, "latency_p95_ms": f.latency_p95_ms, "latency_p99_ms": f.latency_p99_ms,
                "latency_max_ms": f.latency_max_ms, "latency_measured_from": f.latency_measured_from,
                "metrics": f.metrics.iter().map(|(k, v)| (k.clone(), finite(*v))).collect::<Map<String, Value>>(),
                "flags": run.flags,
            })
        })
        .collect();
    let doc = json!({
        "schema": "dbbench-report",
        "schema_version": SCHEMA_VERSION,
        "generated_by": format!("dbbench {}", crate::VERSION),
        "experiment": {
            "id": e.id, "name": e.name, "description": e.description, "status": e.status,
            "started_at": e.started_at, "finished_at": e.finished_at, "dbbench_version": e.dbbench_version,
            "git_revision": e.git_revision, "settings": e.settings, "host": e.host,
        },
        "settings": {
            "baseline": a.baseline_name(), "level": a.settings.level, "cv_limit": a.settings.cv_limit,
            "metrics": d.workloads.iter().zip(&a.metrics).map(|(w, m)| (w.name.clone(), json!({"key": m.key(), "label": m.label(), "higher_is_better": m.higher_is_better()}))).collect::<Map<String, Value>>(),
            "latency_percentiles": r.percentiles,
        },
        "configurations": d.configurations.iter().map(|c| json!({
            "name": c.name, "position": c.position, "kind": c.kind, "server_version": c.server_version, "definition": c.definition, "cpus": c.cpus,
        })).collect::<Vec<_>>(),
        "workloads": d.workloads.iter().map(|w| json!({"name": w.name, "what": w.what, "threads": w.threads, "metrics": w.metrics})).collect::<Vec<_>>(),
        "cells": cells,
        "comparisons": comparisons,
        "runs": runs,
        "samples": r.samples.json(d),
        "warnings": r.warnings,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}
