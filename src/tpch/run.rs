//! Running TPC-H queries: one query with warmups, repeats, a timeout that
//! stops it on the server, its EXPLAIN and its answer; the power test (the
//! 22 queries one after another, stream 0's order); the throughput test
//! (S streams at once). Times are wall-clock from the first statement sent
//! to the last row received (Q15: the view's creation and drop included),
//! on a monotonic clock. A timed-out query is censored (`>T`), never
//! averaged; a metric that would need its time is not printed.

use super::answers::Answer;
use super::params::{self, QueryParams};
use super::queries::{self, QueryText};
use super::schema::Dialect;
use crate::driver::cancel::with_watchdog;
use crate::driver::{Canceller, Connection, DbError, Driver, Outcome};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a query's parameters come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamSource {
    /// The specification's validation values (clause 2.4.x.4).
    Validation,
    /// Drawn as qgen does from this seed (per stream).
    Seed(u64),
}

/// One query of a run: built-in, or a variant from a query directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryId {
    /// 1..=22.
    pub number: u8,
    /// The variant's name (`opt` for `2-opt.sql`), None for the standard query.
    pub variant: Option<String>,
}

impl QueryId {
    /// `Q2`, `Q2-opt`.
    pub fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("Q{}-{v}", self.number),
            None => format!("Q{}", self.number),
        }
    }

    /// Parses `--queries`: items `N`, `A-B` (a range of numbers) or
    /// `N-VARIANT` (a variant file), separated by commas.
    pub fn parse_list(list: &str) -> Result<Vec<QueryId>, String> {
        let mut out = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = || format!("--queries: '{item}' is not a query (1-22), a range (3-7) or a variant (20-opt)");
            let num = |s: &str| s.parse::<u8>().ok().filter(|n| (1..=22).contains(n));
            match item.split_once('-') {
                None => out.push(QueryId { number: num(item).ok_or_else(bad)?, variant: None }),
                Some((a, b)) => match (num(a), num(b)) {
                    (Some(x), Some(y)) if x <= y => out.extend((x..=y).map(|n| QueryId { number: n, variant: None })),
                    (Some(x), None) if !b.is_empty() && b.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                        out.push(QueryId { number: x, variant: Some(b.to_string()) })
                    }
                    _ => return Err(bad()),
                },
            }
        }
        if out.is_empty() {
            return Err("--queries names no query".into());
        }
        Ok(out)
    }
}

/// How a query's repeats become its reported time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The mean of the repeats (the seeds' SIMPLE_AVERAGE); any timeout makes it a timeout.
    Average,
    /// The fastest and the slowest (MIN_MAX_OUT_OF_N); the fastest is the figure.
    MinMax,
    /// Repeats grouped by their EXPLAIN plan; the figure is the mean of the
    /// fastest plan's repeats (ANALYZE_EXPLAIN, without restarting to fish
    /// for plans: that is the lab's per-run restart).
    BestPlan,
}

/// Choices for running queries.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Parameters.
    pub params: ParamSource,
    /// Stop a query on the server after this long.
    pub timeout: Option<Duration>,
    /// Unmeasured runs of each query first.
    pub warmups: u32,
    /// Measured runs of each query.
    pub repeats: u32,
    /// How the repeats become the figure.
    pub method: Method,
    /// Capture each query's EXPLAIN (every repeat under `BestPlan`).
    pub explain: bool,
    /// Directory of query templates overriding or adding to the built-in
    /// ones: `N.sql`, `N-VARIANT.sql`, in qgen's syntax (`:1`... placeholders).
    pub query_dir: Option<PathBuf>,
    /// Scale factor (Q11's FRACTION, the metrics).
    pub sf: f64,
}

/// One execution (in the TPC-H document, `tpch::document`: a `null`
/// field must be there, so `Option`s are read with `Option::deserialize`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Execution {
    /// Seconds, when it finished.
    #[serde(deserialize_with = "Option::deserialize")]
    pub seconds: Option<f64>,
    /// Stopped at the timeout (seconds then holds nothing).
    pub timed_out: bool,
    /// The database's error, when it failed.
    #[serde(deserialize_with = "Option::deserialize")]
    pub error: Option<String>,
    /// Rows the query returned.
    pub rows: usize,
    /// The plan, when captured for this execution (absent when not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

/// A query's outcome over its repeats.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryResult {
    /// `Q14`, `Q2-opt`.
    pub query: String,
    /// The spec's name of the query.
    pub name: String,
    /// Stream (0: the power test).
    pub stream: u32,
    /// The substituted parameters, as text.
    pub params: Vec<String>,
    /// The measured query's text.
    pub sql: String,
    /// Every measured execution.
    pub executions: Vec<Execution>,
    /// The figure by the method, seconds; None when it timed out or failed.
    #[serde(deserialize_with = "Option::deserialize")]
    pub seconds: Option<f64>,
    /// Fastest and slowest finished repeat.
    #[serde(deserialize_with = "Option::deserialize")]
    pub min_s: Option<f64>,
    /// Slowest finished repeat.
    #[serde(deserialize_with = "Option::deserialize")]
    pub max_s: Option<f64>,
    /// Whether any repeat timed out (the figure is then `>timeout`).
    pub timed_out: bool,
    /// The first error, when a repeat failed.
    #[serde(deserialize_with = "Option::deserialize")]
    pub error: Option<String>,
    /// EXPLAIN of the query (first repeat).
    #[serde(deserialize_with = "Option::deserialize")]
    pub plan: Option<String>,
    /// The rows of the first finished repeat.
    #[serde(deserialize_with = "Option::deserialize")]
    pub answer: Option<Answer>,
}

/// The template of a query: the variant or override file from the query
/// directory, else the built-in one.
pub fn template(q: &QueryId, dialect: Dialect, dir: Option<&std::path::Path>) -> Result<String, String> {
    let file = dir.map(|d| d.join(format!("{}.sql", q.label().trim_start_matches('Q'))));
    match (file, &q.variant) {
        (Some(f), _) if f.is_file() => std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display())),
        (Some(f), Some(_)) => Err(format!("{} does not exist: a variant needs its template file", f.display())),
        (None, Some(v)) => {
            Err(format!("query {} names variant '{v}': give the directory of its template with --query-dir", q.label()))
        }
        _ => Ok(queries::template(q.number, dialect).to_string()),
    }
}

/// The parameters of query `number` for a stream.
pub fn parameters(number: u8, source: ParamSource, sf: f64, stream: u32) -> QueryParams {
    match source {
        ParamSource::Validation => params::validation(number, sf),
        ParamSource::Seed(seed) => params::generate(number, sf, seed, stream),
    }
}

/// Runs one statement, keeping its rows as text when asked. The instant
/// returned is when the last row had arrived, before any conversion to text:
/// the measured time ends there.
fn statement(conn: &mut dyn Connection, sql: &str, keep: bool) -> Result<(usize, Option<Answer>, Instant), DbError> {
    match conn.query(sql)? {
        Outcome::Rows(rs) => {
            let arrived = Instant::now();
            let answer = keep.then(|| Answer { columns: rs.columns, rows: rs.text_rows() });
            let n = rs.nrows;
            conn.recycle(rs);
            Ok((n, answer, arrived))
        }
        Outcome::Affected(_) => Ok((0, None, Instant::now())),
    }
}

/// Runs a query's statements once, timed, under a watchdog that cancels
/// it on the server at the timeout. Timed: from the first statement sent to
/// the last row of the query, plus the statements after it (Q15's DROP
/// VIEW), as the specification times Q15. Those run even when the query
/// failed, so the next run starts clean; they also run once untimed before
/// it, for a view a killed run left behind. Censored (timed out) whenever
/// the watchdog fired or the timeout passed, even if the query then
/// finished: a time past the bound is never reported as a time.
fn execute(
    conn: &mut dyn Connection,
    canceller: Option<&dyn Canceller>,
    text: &QueryText,
    timeout: Option<Duration>,
    keep: bool,
) -> (Execution, Option<Answer>) {
    for sql in &text.after {
        let _ = statement(conn, sql, false);
    }
    let started = Instant::now();
    let (result, fired) = with_watchdog(canceller, timeout, || -> Result<(usize, Option<Answer>, Instant), DbError> {
        for sql in &text.before {
            statement(conn, sql, false)?;
        }
        let r = statement(conn, &text.query, keep)?;
        let t_after = Instant::now();
        for sql in &text.after {
            statement(conn, sql, false)?;
        }
        // The query's own time, then the after-statements' (text conversion excluded).
        let end = r.2 + t_after.elapsed();
        Ok((r.0, r.1, end))
    });
    if fired {
        // A cancel that arrived after the query ended may stop the next
        // statement (as KILL QUERY can): let it stop this one instead.
        let _ = statement(conn, "SELECT 1", false);
    }
    if result.is_err() {
        for sql in &text.after {
            let _ = statement(conn, sql, false);
        }
    }
    let censored = fired
        || timeout.is_some_and(|t| {
            started.elapsed() >= t && result.as_ref().map_or(true, |r| r.2.duration_since(started) >= t)
        });
    match result {
        _ if censored => (Execution { seconds: None, timed_out: true, error: None, rows: 0, plan: None }, None),
        Ok((rows, answer, end)) => (
            Execution {
                seconds: Some(end.duration_since(started).as_secs_f64()),
                timed_out: false,
                error: None,
                rows,
                plan: None,
            },
            answer,
        ),
        Err(e) => {
            (Execution { seconds: None, timed_out: false, error: Some(e.to_string()), rows: 0, plan: None }, None)
        }
    }
}

/// EXPLAIN output as one text (rows joined by lines, cells by tabs), under
/// the same timeout as the query (MariaDB may execute derived tables to
/// explain them).
fn plan(
    conn: &mut dyn Connection,
    canceller: Option<&dyn Canceller>,
    timeout: Option<Duration>,
    dialect: Dialect,
    text: &QueryText,
) -> Option<String> {
    for sql in &text.after {
        let _ = statement(conn, sql, false);
    }
    let (p, _) = with_watchdog(canceller, timeout, || {
        for sql in &text.before {
            if statement(conn, sql, false).is_err() {
                return None;
            }
        }
        statement(conn, &queries::explain(dialect, &text.query), true).ok().and_then(|(_, a, _)| a).map(|a| {
            a.rows
                .iter()
                .map(|r| r.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect::<Vec<_>>().join("\t"))
                .collect::<Vec<_>>()
                .join("\n")
        })
    });
    for sql in &text.after {
        let _ = statement(conn, sql, false);
    }
    p
}

/// A plan with the numbers that change from run to run (row estimates,
/// costs) masked, so repeats of one plan group together.
fn plan_shape(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut chars = p.chars().peekable();
    while let Some(ch) = chars.next() {
        if !ch.is_ascii_digit() {
            out.push(ch);
            continue;
        }
        out.push('#');
        // The rest of the number: digits, and a decimal point only when a digit follows it.
        loop {
            match chars.peek() {
                Some(c) if c.is_ascii_digit() => {
                    chars.next();
                }
                Some('.') => {
                    let mut ahead = chars.clone();
                    ahead.next();
                    if ahead.peek().is_some_and(|c| c.is_ascii_digit()) {
                        chars.next();
                    } else {
                        break;
                    }
                }
                _ => break,
            }
        }
    }
    out
}

/// Runs query `q` of `stream` with its warmups and repeats on `conn`.
pub fn run_query(
    conn: &mut dyn Connection,
    dialect: Dialect,
    q: &QueryId,
    stream: u32,
    o: &RunOptions,
) -> anyhow::Result<QueryResult> {
    let p = parameters(q.number, o.params, o.sf, stream);
    let text = queries::substitute(
        &template(q, dialect, o.query_dir.as_deref()).map_err(crate::errors::text_error)?,
        &p,
        stream,
        dialect,
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", q.label()))?;
    let canceller = conn.canceller();
    let mut result = QueryResult {
        query: q.label(),
        name: queries::name(q.number).to_string(),
        stream,
        params: p.values.iter().map(ToString::to_string).collect(),
        sql: text.query.clone(),
        executions: Vec::new(),
        seconds: None,
        min_s: None,
        max_s: None,
        timed_out: false,
        error: None,
        plan: None,
        answer: None,
    };
    for _ in 0..o.warmups {
        let (e, _) = execute(conn, canceller.as_deref(), &text, o.timeout, false);
        if e.timed_out || e.error.is_some() {
            // A warmup that cannot finish says what the measured runs would.
            result.executions.push(e);
            return Ok(finish(result, o.method));
        }
    }
    for _ in 0..o.repeats.max(1) {
        let (mut e, answer) = execute(conn, canceller.as_deref(), &text, o.timeout, result.answer.is_none());
        if result.answer.is_none() {
            result.answer = answer;
        }
        if o.method == Method::BestPlan && o.explain {
            e.plan = plan(conn, canceller.as_deref(), o.timeout, dialect, &text);
        }
        let stop = e.timed_out || e.error.is_some();
        result.executions.push(e);
        // The figure is censored (or missing) now whatever the other repeats
        // do: running them would only spend the timeout again.
        if stop {
            break;
        }
    }
    // The plan after the measured runs: an EXPLAIN before them would warm
    // the server a cold run was meant to meet.
    if o.explain {
        result.plan = match o.method {
            Method::BestPlan => result.executions.iter().find_map(|e| e.plan.clone()),
            _ => None,
        }
        .or_else(|| plan(conn, canceller.as_deref(), o.timeout, dialect, &text));
    }
    Ok(finish(result, o.method))
}

/// The figure of a query from its executions: censored when any timed
/// out, missing when any failed, else by the method.
fn finish(mut r: QueryResult, method: Method) -> QueryResult {
    let done: Vec<f64> = r.executions.iter().filter_map(|e| e.seconds).collect();
    r.min_s = done.iter().copied().reduce(f64::min);
    r.max_s = done.iter().copied().reduce(f64::max);
    r.timed_out = r.executions.iter().any(|e| e.timed_out);
    r.error = r.executions.iter().find_map(|e| e.error.clone());
    if r.timed_out || r.error.is_some() || done.is_empty() {
        r.seconds = None;
        return r;
    }
    r.seconds = match method {
        Method::Average => Some(done.iter().sum::<f64>() / done.len() as f64),
        Method::MinMax => r.min_s,
        Method::BestPlan => {
            let mut by_plan: Vec<(String, Vec<f64>)> = Vec::new();
            for e in &r.executions {
                let shape = plan_shape(e.plan.as_deref().unwrap_or(""));
                match by_plan.iter_mut().find(|(p, _)| *p == shape) {
                    Some((_, v)) => v.extend(e.seconds),
                    None => by_plan.push((shape, e.seconds.into_iter().collect())),
                }
            }
            by_plan.iter().map(|(_, v)| v.iter().sum::<f64>() / v.len().max(1) as f64).reduce(f64::min)
        }
    };
    r
}

/// Geometric mean of positive times.
pub fn geometric_mean(times: &[f64]) -> Option<f64> {
    if times.is_empty() || times.iter().any(|t| *t <= 0.0) {
        return None;
    }
    Some((times.iter().map(|t| t.ln()).sum::<f64>() / times.len() as f64).exp())
}

/// The power test's figure: 3600 × SF over the geometric mean of the query
/// (and refresh) times, clause 5.4.1; None when a time is missing.
pub fn power_at_size(sf: f64, times: &[Option<f64>]) -> Option<f64> {
    let all: Option<Vec<f64>> = times.iter().copied().collect();
    geometric_mean(&all?).map(|g| 3600.0 * sf / g)
}

/// The throughput test's figure: S × 22 × 3600 / Ts × SF, clause 5.4.2.
pub fn throughput_at_size(sf: f64, streams: u32, elapsed_s: f64) -> f64 {
    streams as f64 * 22.0 * 3600.0 / elapsed_s * sf
}

/// Runs `queries` of `stream` in order on one connection (a power test is stream 0).
pub fn run_stream(
    driver: &dyn Driver,
    dialect: Dialect,
    queries: &[QueryId],
    stream: u32,
    o: &RunOptions,
) -> anyhow::Result<Vec<QueryResult>> {
    use anyhow::Context;
    let mut conn = driver.connect().context("cannot connect")?;
    let mut out = Vec::new();
    for q in queries {
        out.push(run_query(&mut *conn, dialect, q, stream, o)?);
    }
    Ok(out)
}

/// Stream `s`'s order of the chosen queries: the spec's order for the
/// standard queries, variants after their standard query.
pub fn stream_queries(chosen: &[QueryId], stream: u32) -> Vec<QueryId> {
    let order = params::stream_order(stream);
    let mut out: Vec<QueryId> = Vec::new();
    for n in order {
        out.extend(chosen.iter().filter(|q| q.number == n).cloned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_lists() {
        let l = QueryId::parse_list("1-3,20-opt0,22").unwrap();
        let labels: Vec<String> = l.iter().map(QueryId::label).collect();
        assert_eq!(labels, ["Q1", "Q2", "Q3", "Q20-opt0", "Q22"]);
        assert!(QueryId::parse_list("23").is_err());
        assert!(QueryId::parse_list("5-2").is_err());
        assert!(QueryId::parse_list("3-x y").is_err());
        assert!(QueryId::parse_list("").is_err());
    }

    fn result(secs: &[Option<f64>], plans: &[&str]) -> QueryResult {
        QueryResult {
            query: "Q1".into(),
            name: String::new(),
            stream: 0,
            params: vec![],
            sql: String::new(),
            executions: secs
                .iter()
                .enumerate()
                .map(|(i, s)| Execution {
                    seconds: *s,
                    timed_out: s.is_none(),
                    error: None,
                    rows: 1,
                    plan: plans.get(i).map(|p| p.to_string()),
                })
                .collect(),
            seconds: None,
            min_s: None,
            max_s: None,
            timed_out: false,
            error: None,
            plan: None,
            answer: None,
        }
    }

    #[test]
    fn figures_by_method_and_censoring() {
        let r = finish(result(&[Some(3.0), Some(1.0), Some(2.0)], &[]), Method::Average);
        assert_eq!((r.seconds, r.min_s, r.max_s), (Some(2.0), Some(1.0), Some(3.0)));
        assert_eq!(finish(result(&[Some(3.0), Some(1.0)], &[]), Method::MinMax).seconds, Some(1.0));
        // A timeout is never averaged away.
        let r = finish(result(&[Some(3.0), None], &[]), Method::Average);
        assert!(r.timed_out && r.seconds.is_none() && r.min_s == Some(3.0));
        // Best plan: two repeats of plan A (rows estimate differs) at 4 s, one of plan B at 1 s.
        let r = finish(
            result(&[Some(4.0), Some(1.0), Some(4.0)], &["scan t rows=100", "index t rows=5", "scan t rows=120"]),
            Method::BestPlan,
        );
        assert_eq!(r.seconds, Some(1.0));
        assert_eq!(plan_shape("Seq Scan (cost=0.00..1.5 rows=120)"), "Seq Scan (cost=#..# rows=#)");
    }

    #[test]
    fn metrics() {
        assert!((geometric_mean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(power_at_size(1.0, &[Some(1.0), None]), None);
        assert!((power_at_size(10.0, &[Some(2.0), Some(8.0)]).unwrap() - 9000.0).abs() < 1e-9);
        assert!((throughput_at_size(1.0, 2, 3600.0) - 44.0).abs() < 1e-9);
    }
}
