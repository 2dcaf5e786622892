//! The load engine's run document as a type: what `dbbench <test> run
//! --format=json` prints (docs/json-schema.md, checked against this type by
//! a test). `output::json` serialises it and every reader (the lab's runner,
//! the results store, `compare`) deserialises it, so a renamed or retyped
//! field fails to compile, and a document that lacks a field fails to parse
//! with one line naming it, instead of a figure silently read as 0 or
//! stored as NULL. The TPC-H document is typed the same way in
//! `tpch::document`, the lab's per-run overhead in `lab::store::Overhead`.
//!
//! A field is optional on reading only where a document a reader may meet
//! was written before the field existed (`#[serde(default)]`, with the
//! commit that added it), or where absence is the field's meaning.
//! `Option` fields written as `null` are required on reading
//! (`deserialize_with = "Option::deserialize"`: serde would otherwise read
//! a missing `Option` field as None).
//!
//! Key order: documents are printed through `serde_json::Value` ([`to_text`]),
//! whose objects keep their keys sorted (serde_json without
//! `preserve_order`), as the `json!` literals that wrote them before did; so
//! fields are declared here in the order the documentation lists them, and
//! the bytes printed are the same.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the run document's layout; bump on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// The name every document dbbench writes carries in `tool`.
pub const TOOL: &str = "dbbench";

/// The key of percentile `p` (as given to `--percentile`) in
/// `percentiles_ms` and the text layouts: `95` for whole numbers, `99.9`
/// otherwise.
pub fn percentile_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as u64)
    } else {
        format!("{p}")
    }
}

/// Prints a document as the writers always have: pretty, keys sorted.
pub fn to_text<T: Serialize>(doc: &T) -> String {
    serde_json::to_value(doc).and_then(|v| serde_json::to_string_pretty(&v)).unwrap_or_default()
}

/// A document on one line, keys sorted (what the results store keeps).
pub fn to_compact_text<T: Serialize>(doc: &T) -> String {
    serde_json::to_value(doc).map(|v| v.to_string()).unwrap_or_default()
}

/// The `--format=json` document of one load-engine run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDocument {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `"dbbench"`.
    pub tool: String,
    /// dbbench's version.
    pub version: String,
    /// Test name or script path.
    pub test: String,
    /// The first connection's server version.
    #[serde(deserialize_with = "Option::deserialize")]
    pub server_version: Option<String>,
    /// `--threads`.
    pub threads: u32,
    /// Why the run ended by forced shutdown; None when it finished.
    #[serde(deserialize_with = "Option::deserialize")]
    pub aborted: Option<String>,
    /// Seconds from the end of warmup to the last client's end.
    pub total_time_s: f64,
    /// Totals after warmup.
    pub counters: Counters,
    /// Per second since the start of measurement (or the last checkpoint).
    pub rates_per_s: Rates,
    /// Event latency (under `--rate` from the intended start).
    pub latency: Latency,
    /// Where `latency` is measured from.
    pub latency_measured_from: LatencyOrigin,
    /// Under `--rate`: latency from each event's actual start.
    #[serde(deserialize_with = "Option::deserialize")]
    pub service_time: Option<Latency>,
    /// Under `--rate`: the arrivals' outcome.
    #[serde(deserialize_with = "Option::deserialize")]
    pub rate: Option<RateOutcome>,
    /// Per client.
    pub fairness: Vec<Fairness>,
    /// Per `--report-interval` tick.
    pub intervals: Vec<Interval>,
    /// The warmup's interval rows (`time_s` <= 0), in no other figure.
    /// Added in 0.1 with no version bump (09c1168): older documents lack it.
    #[serde(default)]
    pub warmup_intervals: Vec<Interval>,
    /// Every option's effective value as text, passwords hidden.
    pub options: BTreeMap<String, String>,
}

/// `counters`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Events (transactions).
    pub events: u64,
    /// Read statements.
    pub reads: u64,
    /// Write statements.
    pub writes: u64,
    /// Other statements.
    pub other: u64,
    /// reads + writes + other.
    pub queries: u64,
    /// Ignored errors.
    pub errors: u64,
    /// Reconnects.
    pub reconnects: u64,
    /// Events restarted after an ignored error. Added by 815a80c: older documents lack it.
    #[serde(default)]
    pub restarts: u64,
}

/// `rates_per_s`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Events per second (tps).
    pub events: f64,
    /// Queries per second.
    pub queries: f64,
    /// Ignored errors per second.
    pub errors: f64,
    /// Reconnects per second.
    pub reconnects: f64,
    /// Restarts per second. Added by 815a80c: older documents lack it.
    #[serde(default)]
    pub restarts: f64,
}

/// `latency` and `service_time`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Events measured.
    pub count: u64,
    /// Exact minimum, ms; None without events.
    #[serde(deserialize_with = "Option::deserialize")]
    pub min_ms: Option<f64>,
    /// Exact mean, ms.
    #[serde(deserialize_with = "Option::deserialize")]
    pub avg_ms: Option<f64>,
    /// Exact maximum, ms.
    #[serde(deserialize_with = "Option::deserialize")]
    pub max_ms: Option<f64>,
    /// Exact sum, ms.
    pub sum_ms: f64,
    /// `--percentile` label (`"95"`, `"99.9"`) → ms from the HDR histogram.
    pub percentiles_ms: BTreeMap<String, Option<f64>>,
    /// Events longer than the histogram's range (1 h).
    pub above_histogram_range: u64,
    /// The HDR histogram (µs), V2 deflate, base64; None without events.
    /// Added by dd21698; the store also keeps it in its own column and
    /// drops it from the stored document: both lack it.
    #[serde(default)]
    pub histogram: Option<String>,
}

impl Latency {
    /// The percentile `p` (as given to `--percentile`), ms; None when the
    /// run did not report it or had no events.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles_ms.get(&percentile_label(p)).copied().flatten()
    }
}

/// `latency_measured_from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyOrigin {
    /// From each event's actual start.
    ActualStart,
    /// From each event's intended start under `--rate` (queueing included).
    IntendedStart,
}

impl LatencyOrigin {
    /// The name the document and the store use.
    pub fn as_str(self) -> &'static str {
        match self {
            LatencyOrigin::ActualStart => "actual_start",
            LatencyOrigin::IntendedStart => "intended_start",
        }
    }
}

/// `rate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RateOutcome {
    /// `--rate`.
    pub target_per_s: f64,
    /// Completed events per second.
    pub achieved_per_s: f64,
    /// Arrivals still queued when the run ended.
    pub arrivals_not_started: u64,
    /// Arrivals dropped because the backlog was full.
    pub arrivals_dropped: u64,
}

/// One client's line of `fairness`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// Events whose latency was recorded.
    pub events: u64,
    /// Their total latency, seconds.
    pub time_s: f64,
    /// Shortest, seconds; None without events. Added by 926b4ca: older documents lack it.
    #[serde(default)]
    pub min_s: Option<f64>,
    /// Longest, seconds; None without events. Added by 926b4ca: older documents lack it.
    #[serde(default)]
    pub max_s: Option<f64>,
}

/// One row of `intervals` / `warmup_intervals`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds since the start of measurement; <= 0 during the warmup.
    pub time_s: f64,
    /// Measured length of the interval.
    pub interval_s: f64,
    /// Client threads still running.
    pub threads_running: u32,
    /// Events in the interval.
    pub events: u64,
    /// Read statements.
    pub reads: u64,
    /// Write statements.
    pub writes: u64,
    /// Other statements.
    pub other: u64,
    /// Ignored errors.
    pub errors: u64,
    /// Reconnects.
    pub reconnects: u64,
    /// Restarted events. Added by 815a80c: older documents lack it.
    #[serde(default)]
    pub restarts: u64,
    /// Events per second.
    pub tps: f64,
    /// Queries per second.
    pub qps: f64,
    /// This interval's latency.
    pub latency_ms: IntervalLatency,
    /// Under `--rate`: arrivals queued at the tick.
    #[serde(deserialize_with = "Option::deserialize")]
    pub queue_length: Option<u64>,
    /// Under `--rate`: events in flight at the tick.
    #[serde(deserialize_with = "Option::deserialize")]
    pub concurrency: Option<u64>,
    /// How long after the interval's end its line came out, ms (null for warmup rows, which are not
    /// printed). Added with issue 24 with no version bump: older documents lack it.
    #[serde(default)]
    pub late_ms: Option<f64>,
}

/// An interval's `latency_ms`; every figure None without events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalLatency {
    /// Minimum, ms.
    #[serde(deserialize_with = "Option::deserialize")]
    pub min: Option<f64>,
    /// Mean, ms.
    #[serde(deserialize_with = "Option::deserialize")]
    pub avg: Option<f64>,
    /// Maximum, ms.
    #[serde(deserialize_with = "Option::deserialize")]
    pub max: Option<f64>,
    /// `--percentile` label → ms.
    pub percentiles: BTreeMap<String, Option<f64>>,
}

impl IntervalLatency {
    /// The percentile `p` (as given to `--percentile`), ms.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles.get(&percentile_label(p)).copied().flatten()
    }
}

impl RunDocument {
    /// Reads a run document; `what` names where it came from in the one-line error.
    pub fn parse(text: &str, what: &str) -> Result<RunDocument, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{what}: not a dbbench JSON report ({e})"))?;
        if v.get("tool").and_then(|t| t.as_str()) != Some(TOOL) || v.get("schema").is_some() {
            return Err(format!("{what}: not a dbbench JSON report (run with --format=json)"));
        }
        let version = v.get("schema_version").and_then(|s| s.as_u64()).unwrap_or_default();
        if version > SCHEMA_VERSION as u64 {
            return Err(format!(
                "{what}: JSON report schema version {version} is newer than this dbbench reads ({SCHEMA_VERSION}): use a newer dbbench"
            ));
        }
        // From the text again, so the error names the line and column.
        serde_json::from_str(text).map_err(|e| format!("{what}: not a valid dbbench JSON report: {e}"))
    }

    /// Queries of reads and writes per second (no "other"), when measured.
    pub fn rw_qps(&self) -> Option<f64> {
        (self.total_time_s > 0.0).then(|| (self.counters.reads + self.counters.writes) as f64 / self.total_time_s)
    }
}

#[cfg(test)]
/// A document with every optional part filled in (`--rate`, warmup
/// intervals, events), so every key the type has is printed.
pub fn sample_document() -> RunDocument {
    let latency = Latency {
        count: 3,
        min_ms: Some(1.0),
        avg_ms: Some(2.0),
        max_ms: Some(3.0),
        sum_ms: 6.0,
        percentiles_ms: BTreeMap::from([("95".to_string(), Some(3.0)), ("99.9".to_string(), Some(3.0))]),
        above_histogram_range: 0,
        histogram: Some("HISTFAAA".into()),
    };
    let interval = Interval {
        time_s: 1.0,
        interval_s: 1.0,
        threads_running: 2,
        events: 3,
        reads: 4,
        writes: 5,
        other: 6,
        errors: 0,
        reconnects: 0,
        restarts: 0,
        tps: 3.0,
        qps: 15.0,
        latency_ms: IntervalLatency {
            min: Some(1.0),
            avg: Some(2.0),
            max: Some(3.0),
            percentiles: BTreeMap::from([("95".to_string(), Some(3.0))]),
        },
        queue_length: Some(0),
        concurrency: Some(1),
        late_ms: Some(0.5),
    };
    RunDocument {
        schema_version: SCHEMA_VERSION,
        tool: TOOL.into(),
        version: "0.1.0".into(),
        test: "oltp_point_select".into(),
        server_version: Some("10.11.6-MariaDB".into()),
        threads: 2,
        aborted: None,
        total_time_s: 1.0,
        counters: Counters { events: 3, reads: 4, writes: 5, other: 6, queries: 15, ..Default::default() },
        rates_per_s: Rates { events: 3.0, queries: 15.0, ..Default::default() },
        latency: latency.clone(),
        latency_measured_from: LatencyOrigin::IntendedStart,
        service_time: Some(latency),
        rate: Some(RateOutcome { target_per_s: 10.0, achieved_per_s: 3.0, ..Default::default() }),
        fairness: vec![Fairness { events: 3, time_s: 0.006, min_s: Some(0.001), max_s: Some(0.003) }],
        intervals: vec![interval.clone()],
        warmup_intervals: vec![Interval { time_s: 0.0, ..interval }],
        options: BTreeMap::from([("threads".to_string(), "2".to_string())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Objects whose keys are data (percentile labels, option names), not fields.
    const MAPS: [&str; 3] = ["latency.percentiles_ms", "intervals.latency_ms.percentiles", "options"];

    /// Every key of `v` as a dotted path (an array's elements under the
    /// array's own path), intermediate objects included.
    fn paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) if !MAPS.contains(&prefix) => {
                for (k, v) in m {
                    let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    out.insert(p.clone());
                    paths(v, &p, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| paths(v, prefix, out)),
            _ => {}
        }
    }

    /// Every backticked dotted path in the first column of the doc's table.
    fn documented_paths(doc: &str) -> BTreeSet<String> {
        doc.lines()
            .filter_map(|l| l.strip_prefix('|'))
            .filter_map(|l| l.split('|').next())
            .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>())
            .filter(|p| p.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c == '.'))
            .collect()
    }

    #[test]
    fn the_schema_doc_lists_every_key() {
        let mut printed = BTreeSet::new();
        paths(&serde_json::to_value(sample_document()).unwrap(), "", &mut printed);
        // The doc describes these by "the same keys as": they are the same types.
        let printed: BTreeSet<String> = printed
            .into_iter()
            .filter(|p| !p.starts_with("service_time.") && !p.starts_with("warmup_intervals."))
            .collect();
        let documented = documented_paths(include_str!("../docs/json-schema.md"));
        let undocumented: Vec<_> = printed.difference(&documented).collect();
        let not_printed: Vec<_> = documented.difference(&printed).collect();
        assert!(
            undocumented.is_empty() && not_printed.is_empty(),
            "docs/json-schema.md is out of step with run_document::RunDocument: printed but not in the doc's table: {undocumented:?}; in the table but not printed: {not_printed:?}"
        );
    }

    #[test]
    fn a_document_reads_back_as_written() {
        let d = sample_document();
        assert_eq!(RunDocument::parse(&to_text(&d), "x").unwrap(), d);
        assert_eq!(d.latency.percentile(99.9), Some(3.0));
        assert_eq!(d.latency.percentile(99.0), None);
    }

    /// Keys print sorted, as the `json!` literals printed them before the
    /// type: the same bytes for every reader that compared text.
    #[test]
    fn keys_print_sorted() {
        let text = to_text(&sample_document());
        let top: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
            .map(|l| l.trim().split('"').nth(1).unwrap())
            .collect();
        let mut sorted = top.clone();
        sorted.sort_unstable();
        assert_eq!(top, sorted);
        assert!(text.starts_with("{\n  \"aborted\": null,\n  \"counters\": {\n    \"errors\": 0,"), "{text}");
    }

    /// A missing field is an error naming it, never a figure read as 0 or
    /// NULL; also a field written as `null` that a reader needs.
    #[test]
    fn a_missing_or_renamed_field_is_one_clear_error() {
        let full = serde_json::to_value(sample_document()).unwrap();
        for (path, key) in [
            ("", "rates_per_s"),
            ("/rates_per_s", "events"),
            ("/latency", "percentiles_ms"),
            ("/latency", "max_ms"),
            ("", "aborted"),
            ("", "server_version"),
            ("/counters", "reads"),
        ] {
            let mut v = full.clone();
            let removed = v.pointer_mut(path).unwrap().as_object_mut().unwrap().remove(key);
            assert!(removed.is_some(), "{path}/{key}");
            let err = RunDocument::parse(&serde_json::to_string_pretty(&v).unwrap(), "run.json").unwrap_err();
            assert!(err.starts_with("run.json: not a valid dbbench JSON report: "), "{err}");
            assert!(err.contains(&format!("missing field `{key}`")), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
        // Renamed: the old name is not accepted in place of the new one.
        let text = to_text(&sample_document()).replace("\"rates_per_s\"", "\"rates\"");
        let err = RunDocument::parse(&text, "run.json").unwrap_err();
        assert!(err.contains("missing field `rates_per_s`"), "{err}");
        // Not a number where one is needed.
        let text = to_text(&sample_document()).replace("\"total_time_s\": 1.0", "\"total_time_s\": null");
        assert!(RunDocument::parse(&text, "run.json").unwrap_err().contains("invalid type: null"));
        // Other documents and newer schemas.
        let err = RunDocument::parse("{\"schema\": \"dbbench-tpch\", \"tool\": \"dbbench\"}", "t.json").unwrap_err();
        assert_eq!(err, "t.json: not a dbbench JSON report (run with --format=json)");
        let text = to_text(&sample_document()).replace("\"schema_version\": 1", "\"schema_version\": 2");
        assert!(RunDocument::parse(&text, "n.json").unwrap_err().contains("schema version 2 is newer"));
    }

    /// Fields added after the first documents read from older ones as
    /// their empty value (the only defaults the type has).
    #[test]
    fn documents_from_before_a_field_was_added_still_read() {
        let mut v = serde_json::to_value(sample_document()).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("warmup_intervals");
        o["counters"].as_object_mut().unwrap().remove("restarts");
        o["rates_per_s"].as_object_mut().unwrap().remove("restarts");
        o["latency"].as_object_mut().unwrap().remove("histogram");
        o["intervals"][0].as_object_mut().unwrap().remove("restarts");
        o["fairness"][0].as_object_mut().unwrap().remove("min_s");
        o["fairness"][0].as_object_mut().unwrap().remove("max_s");
        let d = RunDocument::parse(&v.to_string(), "old.json").unwrap();
        assert!(d.warmup_intervals.is_empty() && d.latency.histogram.is_none() && d.fairness[0].min_s.is_none());
    }
}
