//! The TPC-H document as a type: what `dbbench tpch query|power|throughput
//! --format=json` prints (schema `dbbench-tpch` v1, docs/tpch.md).
//! `tpch::tpch_run` serialises it; `tpch check`, the lab's runner, the
//! results store and `report`'s answer check deserialise it, so a renamed
//! field fails to compile instead of being read as missing. As in
//! `run_document`: `Option` fields printed as `null` must be present
//! (`Option::deserialize`), and the document prints with sorted keys
//! through `run_document::to_text`.

use super::run::{Method, QueryResult};
use serde::{Deserialize, Serialize};

/// `schema`.
pub const SCHEMA: &str = "dbbench-tpch";
/// `schema_version`; bump on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// One TPC-H run's document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TpchDocument {
    /// [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `"dbbench"`.
    pub tool: String,
    /// dbbench's version.
    pub version: String,
    /// `query`, `power` or `throughput`.
    pub test: String,
    /// The driver's name.
    pub driver: String,
    /// What the server said its version was.
    pub server_version: String,
    /// Scale factor.
    pub scale_factor: f64,
    /// Where the substitution parameters came from.
    pub params: Params,
    /// How the queries ran.
    pub options: Options,
    /// Wall-clock seconds of the whole test.
    pub elapsed_s: f64,
    /// Query streams (one for `query` and `power`).
    pub streams: Vec<Stream>,
    /// The refresh functions run (`--refresh`).
    pub refresh: Vec<RefreshRun>,
    /// Metrics computed from measured times only.
    pub metrics: Metrics,
    /// Why a metric is missing or not the specification's figure.
    pub notes: Vec<String>,
}

/// `params`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum Params {
    /// The specification's validation values.
    Validation,
    /// Drawn from this seed.
    Seed {
        /// `--seed`.
        seed: u64,
    },
}

/// `options`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// `--timeout`, seconds; None without one.
    #[serde(deserialize_with = "Option::deserialize")]
    pub timeout_s: Option<f64>,
    /// Unmeasured runs of each query.
    pub warmups: u32,
    /// Measured runs of each query.
    pub repeats: u32,
    /// How repeats become the figure.
    pub method: Method,
    /// `--refresh`.
    pub refresh: bool,
}

/// One stream of `streams`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stream {
    /// Stream number (0: the power test).
    pub stream: u32,
    /// Wall-clock seconds of the stream.
    pub elapsed_s: f64,
    /// Its queries, in the order run.
    pub queries: Vec<QueryResult>,
}

/// One refresh function run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefreshRun {
    /// `RF1` or `RF2`.
    pub function: String,
    /// Update set.
    pub set: u32,
    /// Rows inserted or deleted.
    pub rows: u64,
    /// Seconds.
    pub seconds: f64,
}

/// `metrics`: a metric is left out (absent, not null) when it was not
/// measured; `notes` says why.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Metrics {
    /// Geometric mean of the query times, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geomean_s: Option<f64>,
    /// Power@Size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_at_size: Option<f64>,
    /// Throughput@Size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_at_size: Option<f64>,
}

impl TpchDocument {
    /// Reads a TPC-H document; `what` names where it came from in the one-line error.
    pub fn parse(text: &str, what: &str) -> Result<TpchDocument, String> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{what}: not a `dbbench tpch ... --format=json` output ({e})"))?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(format!("{what}: not a `dbbench tpch ... --format=json` output"));
        }
        let version = v.get("schema_version").and_then(|s| s.as_u64()).unwrap_or_default();
        if version > SCHEMA_VERSION as u64 {
            return Err(format!(
                "{what}: {SCHEMA} schema version {version} is newer than this dbbench reads ({SCHEMA_VERSION}): use a newer dbbench"
            ));
        }
        // From the text again, so the error names the line and column.
        serde_json::from_str(text).map_err(|e| format!("{what}: not a valid `dbbench tpch` document: {e}"))
    }

    /// The first query of the first stream: a `tpch query` run's one query.
    pub fn first_query(&self) -> Option<&QueryResult> {
        self.streams.first()?.queries.first()
    }
}
