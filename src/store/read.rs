//! Reading, for reports.

use super::sql::{int_at, text_at, Row, Val};
use super::Store;
use crate::tpch::document::TpchDocument;
use anyhow::Context;
use std::collections::HashMap;

/// An experiment as reports read it.
#[derive(Debug, Clone)]
pub struct ExperimentInfo {
    /// Row id.
    pub id: i64,
    /// The spec's experiment name.
    pub name: String,
    /// The spec's description.
    pub description: String,
    /// running | finished | interrupted | abandoned.
    pub status: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC, when finished.
    pub finished_at: Option<String>,
    /// The spec as run (passwords hidden).
    pub spec_text: String,
    /// dbbench's version that ran it.
    pub dbbench_version: String,
    /// dbbench's git revision, when known.
    pub git_revision: Option<String>,
    /// Host context (JSON object, `sysinfo::HostInfo`).
    pub host: serde_json::Value,
    /// Repeats, durations, order, seed ... (JSON object).
    pub settings: serde_json::Value,
}

/// A configuration as reports read it.
#[derive(Debug, Clone)]
pub struct ConfigurationInfo {
    /// Row id.
    pub id: i64,
    /// 0 is the spec's baseline.
    pub position: i64,
    /// Name in tables.
    pub name: String,
    /// mariadb | mysql | postgresql | external | sqlite.
    pub kind: String,
    /// The spec's configuration (JSON, passwords removed).
    pub definition: serde_json::Value,
    /// Server version at its first start.
    pub server_version: Option<String>,
    /// Every server variable at its first start (JSON object), when captured.
    pub variables: Option<serde_json::Value>,
    /// The server products and versions its runs ran on (`MariaDB
    /// 10.11.19-MariaDB-...`), in order of first use; empty for stores
    /// written before runs recorded them.
    pub products: Vec<String>,
    /// Where its runs' processes ran, as read back from the kernel
    /// (`server 0, client 1`: `Cpus_allowed_list`), each distinct placement
    /// in order of first use; empty for stores written before schema 3.
    pub cpus: Vec<String>,
}

/// One stored run's figures (everything but its series, samples and histogram).
#[derive(Debug, Clone, Default)]
pub struct RunFigures {
    /// Row id.
    pub id: i64,
    /// Its configuration's row id.
    pub configuration_id: i64,
    /// The spec's workload name.
    pub workload: String,
    /// Client threads.
    pub threads: u32,
    /// 1-based repeat.
    pub repeat: u32,
    /// Position in the run order.
    pub seq: u32,
    /// ok | failed | timeout.
    pub status: String,
    /// Why it is not ok.
    pub error: Option<String>,
    /// `--rand-seed`.
    pub seed: i64,
    /// dropped | lukewarm | warm.
    pub cache: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// Measured seconds.
    pub time_s: Option<f64>,
    /// Events (transactions) after warmup.
    pub events: Option<i64>,
    /// Ignored errors.
    pub errors: Option<i64>,
    /// Reconnects.
    pub reconnects: Option<i64>,
    /// Events per second.
    pub tps: Option<f64>,
    /// Queries per second.
    pub qps: Option<f64>,
    /// (reads + writes) per second.
    pub rw_qps: Option<f64>,
    /// Latency figures, ms.
    pub latency_avg_ms: Option<f64>,
    /// 95th percentile, ms.
    pub latency_p95_ms: Option<f64>,
    /// 99th percentile, ms.
    pub latency_p99_ms: Option<f64>,
    /// Maximum, ms.
    pub latency_max_ms: Option<f64>,
    /// actual_start | intended_start.
    pub latency_measured_from: Option<String>,
    /// Named metrics (command workloads).
    pub metrics: Vec<(String, f64)>,
}

/// One row of a run's per-interval series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalPoint {
    /// The run's row id.
    pub run_id: i64,
    /// Seconds since the end of the warmup (≤ 0: a warmup tick).
    pub time_s: f64,
    /// Events per second in the interval.
    pub tps: Option<f64>,
    /// Queries per second in the interval.
    pub qps: Option<f64>,
    /// 95th percentile latency in the interval, ms.
    pub latency_p95_ms: Option<f64>,
}

/// One stored sample of a run (`samples` table): OS figures over the interval
/// ending at `time_s`, or the server's cumulative status (the first sample
/// whole, later ones only what changed).
#[derive(Debug, Clone, PartialEq)]
pub struct SamplePoint {
    /// The run's row id.
    pub run_id: i64,
    /// `os` or `server`.
    pub source: String,
    /// Seconds since the sampler started (just before the run's child).
    pub time_s: f64,
    /// The sample (a JSON object; `Null` if the stored text is not JSON).
    pub data: serde_json::Value,
}

pub(super) fn json_at(row: &Row, i: usize) -> serde_json::Value {
    row.get(i).and_then(Val::text).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(serde_json::Value::Null)
}

pub(super) fn opt_text(row: &Row, i: usize) -> Option<String> {
    row.get(i).and_then(Val::text)
}

fn opt_real(row: &Row, i: usize) -> Option<f64> {
    row.get(i).and_then(Val::real)
}

pub(super) fn opt_int(row: &Row, i: usize) -> Option<i64> {
    row.get(i).and_then(Val::int)
}

impl Store {
    /// Every experiment, newest first: (id, name, status, started_at).
    pub fn experiments(&self) -> anyhow::Result<Vec<(i64, String, String, String)>> {
        let rows = self.rows("SELECT id, name, status, started_at FROM experiments ORDER BY id DESC", &[])?;
        rows.iter()
            .map(|r| Ok((int_at(r, 0)?, text_at(r, 1)?, text_at(r, 2)?, text_at(r, 3)?)))
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("results store {}", self.location))
    }

    /// One experiment, if it exists.
    pub fn experiment_info(&self, id: i64) -> anyhow::Result<Option<ExperimentInfo>> {
        let rows = self.rows(
            "SELECT id, name, description, status, started_at, finished_at, spec_text, dbbench_version, git_revision, host, settings
             FROM experiments WHERE id = ?",
            &vals![id],
        )?;
        let Some(r) = rows.first() else { return Ok(None) };
        let info = (|| -> anyhow::Result<ExperimentInfo> {
            Ok(ExperimentInfo {
                id: int_at(r, 0)?,
                name: text_at(r, 1)?,
                description: text_at(r, 2)?,
                status: text_at(r, 3)?,
                started_at: text_at(r, 4)?,
                finished_at: opt_text(r, 5),
                // Redacted again on the way out: a store written before
                // dbbench hid every password must not show one in a report.
                spec_text: crate::secret::redact(&text_at(r, 6)?),
                dbbench_version: text_at(r, 7)?,
                git_revision: opt_text(r, 8),
                host: json_at(r, 9),
                settings: json_at(r, 10),
            })
        })();
        info.map(Some).with_context(|| format!("results store {}", self.location))
    }

    /// An experiment's configurations, baseline (position 0) first.
    pub fn configurations_of(&self, experiment: i64) -> anyhow::Result<Vec<ConfigurationInfo>> {
        let rows = self.rows(
            "SELECT id, position, name, kind, definition, server_version, variables FROM configurations WHERE experiment_id = ? ORDER BY position",
            &vals![experiment],
        )?;
        let products = self.server_products(experiment)?;
        let cpus = self.run_cpus(experiment)?;
        rows.iter()
            .map(|r| {
                let id = int_at(r, 0)?;
                Ok(ConfigurationInfo {
                    products: products.iter().filter(|p| p.0 == id).map(|p| p.1.clone()).collect(),
                    cpus: cpus.iter().filter(|p| p.0 == id).map(|p| p.1.clone()).collect(),
                    id,
                    position: int_at(r, 1)?,
                    name: text_at(r, 2)?,
                    kind: text_at(r, 3)?,
                    definition: crate::secret::redact_json(&json_at(r, 4)),
                    server_version: opt_text(r, 5),
                    variables: Some(json_at(r, 6)).filter(|v| !v.is_null()).map(|v| crate::secret::redact_json(&v)),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("results store {}", self.location))
    }

    /// Every run of an experiment with its figures and named metrics, in run order.
    pub fn run_figures(&self, experiment: i64) -> anyhow::Result<Vec<RunFigures>> {
        let rows = self.rows(
            "SELECT r.id, cl.configuration_id, cl.workload, cl.threads, r.\"repeat\", r.seq, r.status, r.error, r.seed, r.cache, r.started_at,
                    r.time_s, r.events, r.errors, r.reconnects, r.tps, r.qps, r.rw_qps,
                    r.latency_avg_ms, r.latency_p95_ms, r.latency_p99_ms, r.latency_max_ms, r.latency_measured_from
             FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = ? ORDER BY r.seq",
            &vals![experiment],
        )?;
        let mut runs = rows
            .iter()
            .map(|r| {
                Ok(RunFigures {
                    id: int_at(r, 0)?,
                    configuration_id: int_at(r, 1)?,
                    workload: text_at(r, 2)?,
                    threads: int_at(r, 3)? as u32,
                    repeat: int_at(r, 4)? as u32,
                    seq: int_at(r, 5)? as u32,
                    status: text_at(r, 6)?,
                    error: opt_text(r, 7).map(|e| crate::secret::redact(&e)),
                    seed: int_at(r, 8)?,
                    cache: text_at(r, 9)?,
                    started_at: text_at(r, 10)?,
                    time_s: opt_real(r, 11),
                    events: opt_int(r, 12),
                    errors: opt_int(r, 13),
                    reconnects: opt_int(r, 14),
                    tps: opt_real(r, 15),
                    qps: opt_real(r, 16),
                    rw_qps: opt_real(r, 17),
                    latency_avg_ms: opt_real(r, 18),
                    latency_p95_ms: opt_real(r, 19),
                    latency_p99_ms: opt_real(r, 20),
                    latency_max_ms: opt_real(r, 21),
                    latency_measured_from: opt_text(r, 22),
                    metrics: Vec::new(),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("results store {}", self.location))?;
        let metrics = self.rows(
            "SELECT m.run_id, m.name, m.value FROM run_metrics m JOIN runs r ON m.run_id = r.id JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? ORDER BY m.run_id",
            &vals![experiment],
        )?;
        let index: HashMap<i64, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        for m in &metrics {
            if let (Some(run), Some(name), Some(value)) = (opt_int(m, 0), opt_text(m, 1), opt_real(m, 2)) {
                if let Some(&i) = index.get(&run) {
                    runs[i].metrics.push((name, value));
                }
            }
        }
        Ok(runs)
    }

    /// Per configuration (row id), the distinct server products and versions
    /// its runs ran on, as `Product Version` texts in order of first use.
    pub fn server_products(&self, experiment: i64) -> anyhow::Result<Vec<(i64, String)>> {
        let rows = self.rows(
            "SELECT cl.configuration_id, r.server_product, r.server_version, min(r.seq) FROM runs r JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? AND r.server_product IS NOT NULL
             GROUP BY cl.configuration_id, r.server_product, r.server_version ORDER BY 4",
            &vals![experiment],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some((
                    opt_int(r, 0)?,
                    format!("{} {}", opt_text(r, 1)?, opt_text(r, 2).unwrap_or_default()).trim_end().to_string(),
                ))
            })
            .collect())
    }

    /// Per configuration (row id), the distinct CPU placements its runs
    /// read back (`server 0, client 1`), in order of first use.
    pub fn run_cpus(&self, experiment: i64) -> anyhow::Result<Vec<(i64, String)>> {
        let rows = self.rows(
            "SELECT cl.configuration_id, r.server_cpus, r.client_cpus, min(r.seq) FROM runs r JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? AND (r.server_cpus IS NOT NULL OR r.client_cpus IS NOT NULL)
             GROUP BY cl.configuration_id, r.server_cpus, r.client_cpus ORDER BY 4",
            &vals![experiment],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let parts: Vec<String> = [("server", opt_text(r, 1)), ("client", opt_text(r, 2))]
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
                    .collect();
                Some((opt_int(r, 0)?, parts.join(", ")))
            })
            .collect())
    }

    /// The shards of an experiment's sharded runs (`clients = { shards = N
    /// }`): (run id, shard index, the merged report's row for it), in run
    /// and shard order. Empty for a store older than table `run_shards`.
    pub fn run_shard_summaries(&self, experiment: i64) -> anyhow::Result<Vec<(i64, u32, serde_json::Value)>> {
        let rows = self.rows(
            "SELECT s.run_id, s.shard, s.summary FROM run_shards s JOIN runs r ON s.run_id = r.id JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? ORDER BY r.seq, s.shard",
            &vals![experiment],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let summary = serde_json::from_str(&opt_text(r, 2)?).unwrap_or_default();
                Some((opt_int(r, 0)?, opt_int(r, 1)? as u32, summary))
            })
            .collect())
    }

    /// The latency histogram (HdrHistogram V2 deflate, base64) of every run
    /// of an experiment that has one: (run id, encoded histogram).
    pub fn run_histograms(&self, experiment: i64) -> anyhow::Result<Vec<(i64, String)>> {
        let rows = self.rows(
            "SELECT r.id, r.histogram FROM runs r JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = ? AND r.histogram IS NOT NULL",
            &vals![experiment],
        )?;
        Ok(rows.iter().filter_map(|r| Some((opt_int(r, 0)?, opt_text(r, 1)?))).collect())
    }

    /// The stored run documents (the child's whole JSON output) of an
    /// experiment's TPC-H query runs (workloads named `NAME:Q..`): their
    /// answers and plans. (run id, document); a stored document that does
    /// not parse is an error naming the run.
    pub fn tpch_documents(&self, experiment: i64) -> anyhow::Result<Vec<(i64, TpchDocument)>> {
        let rows = self.rows(
            "SELECT r.id, r.report FROM runs r JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? AND cl.workload LIKE '%:Q%' AND r.report IS NOT NULL",
            &vals![experiment],
        )?;
        rows.iter()
            .filter_map(|r| Some((opt_int(r, 0)?, opt_text(r, 1)?)))
            .map(|(id, text)| {
                Ok((
                    id,
                    TpchDocument::parse(&text, &format!("results store {}: run {id}", self.location))
                        .map_err(crate::errors::text_error)?,
                ))
            })
            .collect()
    }

    /// Every stored OS and server sample of an experiment's runs, by run,
    /// source and time.
    pub fn samples(&self, experiment: i64) -> anyhow::Result<Vec<SamplePoint>> {
        let rows = self.rows(
            "SELECT s.run_id, s.source, s.time_s, s.data FROM samples s JOIN runs r ON s.run_id = r.id
             JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = ? ORDER BY s.run_id, s.source, s.time_s",
            &vals![experiment],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(SamplePoint {
                    run_id: opt_int(r, 0)?,
                    source: opt_text(r, 1)?,
                    time_s: opt_real(r, 2)?,
                    data: json_at(r, 3),
                })
            })
            .collect())
    }

    /// The stored run documents (`dbbench run --format=json`) of an
    /// experiment's test runs: (run id, text). TPC-H and command runs' texts
    /// are included as stored; the caller parses.
    pub fn run_document_texts(&self, experiment: i64) -> anyhow::Result<Vec<(i64, String)>> {
        let rows = self.rows(
            "SELECT r.id, r.report FROM runs r JOIN cells cl ON r.cell_id = cl.id
             WHERE cl.experiment_id = ? AND r.report IS NOT NULL",
            &vals![experiment],
        )?;
        Ok(rows.iter().filter_map(|r| Some((opt_int(r, 0)?, opt_text(r, 1)?))).collect())
    }

    /// Every run's per-interval series, by run and time.
    pub fn interval_points(&self, experiment: i64) -> anyhow::Result<Vec<IntervalPoint>> {
        let rows = self.rows(
            "SELECT i.run_id, i.time_s, i.tps, i.qps, i.latency_p95_ms FROM run_intervals i JOIN runs r ON i.run_id = r.id
             JOIN cells cl ON r.cell_id = cl.id WHERE cl.experiment_id = ? ORDER BY i.run_id, i.time_s",
            &vals![experiment],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(IntervalPoint {
                    run_id: opt_int(r, 0)?,
                    time_s: opt_real(r, 1)?,
                    tps: opt_real(r, 2),
                    qps: opt_real(r, 3),
                    latency_p95_ms: opt_real(r, 4),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ChildDocument, RunRecord, RunStatus};

    /// A stored document or overhead record that lacks a field (written by
    /// a build whose field had another name, or edited) is an error naming
    /// the run and the field, never a figure read as missing.
    #[test]
    fn a_stored_record_missing_a_field_is_one_clear_error() {
        use crate::tpch::document::{Metrics, Options, Params, Stream, TpchDocument};
        use crate::tpch::run::{Execution, Method, QueryResult};
        let dir = crate::safe_fs::TestDir::new("store-missing");
        let s = Store::open(&dir.join("r.sqlite").display().to_string()).unwrap();
        let e = s
            .create_experiment("x", "", "x.toml", "", "h", None, &serde_json::json!({}), &serde_json::json!({}))
            .unwrap();
        let c = s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap();
        let cell = s.cell(e, c, "tpch:Q1", 1).unwrap();
        let query = QueryResult {
            query: "Q1".into(),
            name: "Pricing Summary Report".into(),
            stream: 0,
            params: vec!["90".into()],
            sql: "SELECT 1".into(),
            executions: vec![Execution { seconds: None, timed_out: true, error: None, rows: 0, plan: None }],
            seconds: None,
            min_s: None,
            max_s: None,
            timed_out: true,
            error: None,
            plan: None,
            answer: None,
        };
        let doc = TpchDocument {
            schema: crate::tpch::document::SCHEMA.into(),
            schema_version: crate::tpch::document::SCHEMA_VERSION,
            tool: "dbbench".into(),
            version: "0".into(),
            test: "query".into(),
            driver: "sqlite".into(),
            server_version: "3".into(),
            scale_factor: 0.01,
            params: Params::Seed { seed: 1 },
            options: Options { timeout_s: Some(1.0), warmups: 0, repeats: 1, method: Method::Average, refresh: false },
            elapsed_s: 1.0,
            streams: vec![Stream { stream: 0, elapsed_s: 1.0, queries: vec![query] }],
            refresh: Vec::new(),
            metrics: Metrics::default(),
            notes: Vec::new(),
        };
        let rec = RunRecord {
            cell_id: cell,
            repeat: 1,
            status: RunStatus::Timeout,
            report: Some(ChildDocument::Tpch(Box::new(doc))),
            ..Default::default()
        };
        let id = s.insert_run(&rec).unwrap();
        assert_eq!(s.runs_censored(e).unwrap(), 1);
        assert_eq!(s.tpch_documents(e).unwrap().len(), 1);
        // `timed_out` renamed in the stored document: an error, not "not censored".
        let stored = s.rows("SELECT report FROM runs WHERE id = ?", &vals![id]).unwrap()[0][0].text().unwrap();
        let renamed = stored.replace("\"timed_out\"", "\"stopped\"");
        s.with(|db| db.execute("UPDATE runs SET report = ? WHERE id = ?", &vals![renamed, id])).unwrap();
        for err in [s.runs_censored(e).unwrap_err(), s.tpch_documents(e).unwrap_err()] {
            let err = format!("{err:#}");
            assert!(err.starts_with(&format!("results store {}: run {id}: ", s.location())), "{err}");
            assert!(err.contains("missing field `timed_out`"), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
        // The overhead record: a renamed part, or one of the wrong type.
        for (text, why) in
            [("{\"ready\": 1.0}", "unknown field `ready`"), ("{\"ready_s\": \"soon\"}", "invalid type: string")]
        {
            s.with(|db| db.execute("UPDATE runs SET overhead = ? WHERE id = ?", &vals![text, id])).unwrap();
            let err = format!("{:#}", s.run_overheads(e).unwrap_err());
            assert!(err.contains(&format!("run {id}: overhead is not the lab's record ({why}")), "{err}");
        }
    }
}
