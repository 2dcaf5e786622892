//! What `querydiff` records per query and temperature, the variables the
//! filter sees, and the JSON-lines file (`--output`, read back by
//! `querydiff report`).
//!
//! The file is JSON lines: a `run` line (schema, servers, options), one
//! `query` line per query and temperature, a `summary` line. Every record
//! is written, matched by the run's filter or not, so that `querydiff
//! report` can apply any other filter later.

use super::filter::{Filter, Value};
use super::results::Agreement;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema name in the `run` line.
pub const SCHEMA: &str = "dbbench-querydiff";
/// The schema version; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// Cold (the first executions) or warm (the ones after).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Temperature {
    /// The query's first executions on each server (after `--cold-command`, if given).
    Cold,
    /// The executions after the cold ones.
    Warm,
}

impl Temperature {
    /// `cold` or `warm`.
    pub fn as_str(self) -> &'static str {
        match self {
            Temperature::Cold => "cold",
            Temperature::Warm => "warm",
        }
    }
}

/// One server in the `run` line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Server {
    /// `--name1`/`--name2`, else `server1`/`server2`.
    pub label: String,
    /// The DSN, password hidden.
    pub dsn: String,
    /// dbbench driver (`mysql`, `pgsql`, `sqlite`).
    pub driver: String,
    /// The server's version string.
    pub version: String,
    /// `--init1`/`--init2` statements run on every connection.
    #[serde(default)]
    pub init: Vec<String>,
}

/// The `run` line: what was compared, how.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`].
    pub version: u32,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// Server 1 and server 2.
    pub servers: [Server; 2],
    /// `--queries`.
    pub queries: String,
    /// Cold and warm executions per query and server.
    pub cold: u32,
    /// See `cold`.
    pub warm: u32,
    /// `--cold-command`, if any.
    pub cold_command: Option<String>,
    /// `--timeout` in seconds, if any.
    pub timeout_s: Option<f64>,
    /// The run's `--filter`, if any.
    pub filter: Option<String>,
}

/// One server's side of a record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Side {
    /// Every execution's time in microseconds (statement sent → last row received).
    pub times_us: Vec<u64>,
    /// Rows the query returned (first execution).
    pub rows: Option<u64>,
    /// The error, if the query failed (then the times are those before it).
    pub error: Option<String>,
    /// The plan (EXPLAIN, estimates left out), on warm records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

impl Side {
    /// The median execution time in seconds, over the executions that ran.
    pub fn seconds(&self) -> Option<f64> {
        if self.error.is_some() {
            return None;
        }
        crate::inference::median(self.times_us.iter().map(|&t| t as f64)).map(|us| us / 1e6)
    }
}

/// One query at one temperature on both servers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// File name, with `#N` for the Nth statement of a file holding several.
    pub name: String,
    /// The query text.
    pub query: String,
    /// Cold or warm.
    pub temperature: Temperature,
    /// Server 1, server 2.
    pub sides: [Side; 2],
    /// Statements run before each execution of the query (its file's
    /// setup: views, temporary tables, session settings), untimed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<String>,
    /// Statements run after each execution (the file's teardown), untimed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub teardown: Vec<String>,
    /// How the result sets compare.
    pub result: Agreement,
    /// How the two plans compare, on records that have both (the last
    /// temperature's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plans: Option<PlanAgreement>,
    /// The first difference, for `differs` and `other_order`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_detail: Option<String>,
    /// Per counter its value on server 1 and server 2 (the median over the
    /// executions; None where that server has no such counter).
    pub counters: BTreeMap<String, [Option<f64>; 2]>,
    /// Whether the run's filter matched (true without a filter).
    pub matched: bool,
}

/// Whether two servers' plans (EXPLAIN, estimates left out) are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanAgreement {
    /// The same plan text.
    Same,
    /// Different plans: the optimizer chose another way.
    Differs,
    /// Two engines (MariaDB and PostgreSQL): their plans are not comparable.
    NotCompared,
}

impl PlanAgreement {
    /// `same`, `differs` or `not_compared`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanAgreement::Same => "same",
            PlanAgreement::Differs => "differs",
            PlanAgreement::NotCompared => "not_compared",
        }
    }
}

/// perfrun's ratio: v2 / v1; 1 when both are 0; undefined when only v1 is.
pub fn ratio(v1: f64, v2: f64) -> Option<f64> {
    if v1 == 0.0 {
        (v2 == 0.0).then_some(1.0)
    } else {
        Some(v2 / v1)
    }
}

impl Record {
    /// A (value1, value2) pair by base name: `Execution_time`,
    /// `Result_rows`, or a counter.
    pub fn pair(&self, base: &str) -> Option<(Option<f64>, Option<f64>)> {
        match base {
            "Execution_time" => Some((self.sides[0].seconds(), self.sides[1].seconds())),
            "Result_rows" => Some((self.sides[0].rows.map(|r| r as f64), self.sides[1].rows.map(|r| r as f64))),
            _ => self.counters.get(base).map(|[a, b]| (*a, *b)),
        }
    }

    /// The value of a filter variable: `Temperature`, `Query`, `Name`,
    /// `Result`, `Error1`/`Error2` (text, empty without an error), and per
    /// pair `V1`, `V2`, `V_delta` (v2 − v1), `V_ratio` (see [`ratio`]).
    pub fn variable(&self, name: &str) -> Value {
        let text = |s: &str| Value::Text(s.to_string());
        match name {
            "Temperature" => return text(self.temperature.as_str()),
            "Query" => return text(&self.query),
            "Name" => return text(&self.name),
            "Result" => return text(self.result.as_str()),
            "Plan" => return self.plans.map_or(Value::Undefined, |p| text(p.as_str())),
            "Error1" => return text(self.sides[0].error.as_deref().unwrap_or("")),
            "Error2" => return text(self.sides[1].error.as_deref().unwrap_or("")),
            _ => {}
        }
        let num = |x: Option<f64>| x.filter(|x| x.is_finite()).map_or(Value::Undefined, Value::Number);
        for (suffix, which) in [("_delta", 2), ("_ratio", 3), ("1", 0), ("2", 1)] {
            if let Some(base) = name.strip_suffix(suffix) {
                if let Some((a, b)) = self.pair(base) {
                    return match which {
                        0 => num(a),
                        1 => num(b),
                        2 => num(a.zip(b).map(|(a, b)| b - a)),
                        _ => num(a.zip(b).and_then(|(a, b)| ratio(a, b))),
                    };
                }
            }
        }
        Value::Undefined
    }

    /// Whether `filter` (if any) matches this record.
    pub fn matches(&self, filter: Option<&Filter>) -> bool {
        filter.is_none_or(|f| f.matches(&|n| self.variable(n)))
    }

    /// Whether a side failed.
    pub fn failed(&self) -> bool {
        self.sides.iter().any(|s| s.error.is_some())
    }
}

/// Counts of a run (or of a report over a file).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Statements read from the query files.
    pub incoming: u64,
    /// Statements skipped because they are not read-only queries.
    pub skipped: u64,
    /// Queries run on both servers.
    pub executed: u64,
    /// Queries that failed on at least one server.
    pub errors: u64,
    /// Queries whose result sets differ (at any temperature).
    pub diverging: u64,
    /// Queries whose rows came in another order despite an ORDER BY.
    pub other_order: u64,
    /// Records (query × temperature) the filter matched.
    pub reported: u64,
    /// Records in all.
    pub records: u64,
}

/// One line of the output file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// The first line.
    Run(RunInfo),
    /// A record.
    Query(Record),
    /// The last line.
    Summary(Summary),
}

/// A saved run read back: its header, records and summary (absent when the
/// run was interrupted).
pub struct Saved {
    /// The `run` line.
    pub run: RunInfo,
    /// The `query` lines.
    pub records: Vec<Record>,
    /// The `summary` line, if the run finished.
    pub summary: Option<Summary>,
}

/// Reads a `--output` file; errors name the file and line.
pub fn read(path: &std::path::Path) -> anyhow::Result<Saved> {
    use anyhow::Context;
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (mut run, mut records, mut summary) = (None, Vec::new(), None);
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let parsed: Line = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}: not a querydiff record ({e}); is this a `querydiff --output` file?",
                path.display(),
                i + 1
            )
        })?;
        match parsed {
            Line::Run(r) => {
                if r.schema != SCHEMA || r.version > SCHEMA_VERSION {
                    anyhow::bail!(
                        "{}:{}: schema {} v{} is not one this dbbench reads ({SCHEMA} up to v{SCHEMA_VERSION})",
                        path.display(),
                        i + 1,
                        r.schema,
                        r.version
                    );
                }
                run = Some(r)
            }
            Line::Query(r) => records.push(r),
            Line::Summary(s) => summary = Some(s),
        }
    }
    let run =
        run.ok_or_else(|| anyhow::anyhow!("{}: no `run` line; is this a `querydiff --output` file?", path.display()))?;
    Ok(Saved { run, records, summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        let mut counters = BTreeMap::new();
        counters.insert("Handler_read_rnd_next".to_string(), [Some(1166.0), Some(602.0)]);
        counters.insert("Created_tmp_tables".to_string(), [Some(0.0), Some(1.0)]);
        counters.insert("Innodb_rows_read".to_string(), [Some(0.0), Some(0.0)]);
        counters.insert("Shared_blks_hit".to_string(), [None, Some(4.0)]);
        Record {
            name: "q1.sql".into(),
            query: "select 1".into(),
            temperature: Temperature::Warm,
            sides: [
                Side { times_us: vec![11_000, 13_000, 12_000], rows: Some(3), error: None, plan: None },
                Side { times_us: vec![4_000], rows: Some(3), error: None, plan: None },
            ],
            setup: Vec::new(),
            teardown: Vec::new(),
            result: Agreement::Same,
            plans: Some(PlanAgreement::Differs),
            result_detail: None,
            counters,
            matched: true,
        }
    }

    #[test]
    fn variables_follow_perfrun_naming() {
        let r = record();
        assert_eq!(r.variable("Execution_time1"), Value::Number(0.012), "median of the executions");
        assert_eq!(r.variable("Execution_time2"), Value::Number(0.004));
        assert_eq!(r.variable("Execution_time_ratio"), Value::Number(0.004 / 0.012));
        assert_eq!(r.variable("Handler_read_rnd_next_delta"), Value::Number(-564.0));
        assert_eq!(r.variable("Created_tmp_tables_ratio"), Value::Undefined, "one side 0: no ratio");
        assert_eq!(r.variable("Innodb_rows_read_ratio"), Value::Number(1.0), "both 0: ratio 1");
        assert_eq!(r.variable("Plan"), Value::Text("differs".into()));
        assert_eq!(Record { plans: None, ..record() }.variable("Plan"), Value::Undefined, "no plans: undefined");
        assert_eq!(r.variable("Shared_blks_hit_delta"), Value::Undefined, "missing on one server");
        assert_eq!(r.variable("Shared_blks_hit2"), Value::Number(4.0));
        assert_eq!(r.variable("Temperature"), Value::Text("warm".into()));
        assert_eq!(r.variable("Result"), Value::Text("same".into()));
        assert_eq!(r.variable("Result_rows1"), Value::Number(3.0));
        assert_eq!(r.variable("Nonexistent_delta"), Value::Undefined);
    }

    #[test]
    fn lines_round_trip() {
        let r = record();
        let line = serde_json::to_string(&Line::Query(r.clone())).unwrap();
        assert!(line.starts_with("{\"kind\":\"query\""), "{line}");
        let Line::Query(back) = serde_json::from_str(&line).unwrap() else { panic!("not a query line") };
        assert_eq!(back.counters, r.counters);
        assert_eq!(back.sides[0].times_us, r.sides[0].times_us);
    }
}
