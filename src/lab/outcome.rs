//! What a lab run's child process meant: the pure step between running
//! it and storing it. [`interpret`] reads a finished child's result for its
//! kind of workload (a dbbench test's JSON report, a command's regex
//! metrics, a TPC-H query's document) and says the run's status, error,
//! stored figures and one-line summary, without a process, a server or the
//! store, so every kind and way of ending is unit-tested here.

use crate::lab::spec::WorkloadKind;
use crate::run_document::RunDocument;
use crate::store::{ChildDocument, RunStatus};
use crate::tpch::document::TpchDocument;
use std::time::Duration;

/// Outcome of a child process.
pub(super) struct ChildResult {
    pub(super) code: Option<i32>,
    /// The signal that ended it, when one did.
    pub(super) signal: Option<i32>,
    pub(super) timed_out: bool,
    pub(super) interrupted: bool,
    pub(super) stdout: String,
    pub(super) stderr: String,
    /// The CPUs the kernel allowed it at its start (/proc/PID/status
    /// `Cpus_allowed_list`), None when it could not be read.
    pub(super) cpus: Option<String>,
}

impl ChildResult {
    /// How it ended, for messages: "exited with status 3", "was killed by
    /// signal 9 (SIGKILL)".
    pub(super) fn exit(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(sig)) => format!("was killed by signal {sig}{}", signal_name(sig)),
            (None, None) => "ended in a way that could not be read".to_string(),
        }
    }

    pub(super) fn tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self.stdout.lines().chain(self.stderr.lines()).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Why the child failed, on one line: its first `FATAL:` line (the
    /// cause; a Lua error's traceback follows it, and the last lines alone
    /// are noise such as "[C]: in ?"), then its last `lines` lines.
    pub(super) fn failure(&self, lines: usize) -> String {
        let tail = self.tail(lines).replace('\n', " | ");
        let fatal = self.stdout.lines().chain(self.stderr.lines()).map(str::trim).find(|l| l.starts_with("FATAL:"));
        match fatal {
            Some(f) if !tail.contains(f) => format!("{f} | ... | {tail}"),
            _ => tail,
        }
    }
}

/// " (SIGKILL)" for the signals a run is likely to meet, else "".
fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGPIPE => " (SIGPIPE)",
        libc::SIGHUP => " (SIGHUP)",
        libc::SIGQUIT => " (SIGQUIT)",
        _ => "",
    }
}

/// What [`interpret`] made of a child.
#[derive(Debug)]
pub(super) struct Outcome {
    /// `Timeout` when the child or the query was stopped at its limit;
    /// else `Failed` when `error` is set.
    pub status: RunStatus,
    /// The first thing that went wrong (an error from before the child,
    /// such as a crashed server, is kept over the child's).
    pub error: Option<String>,
    /// The child's document, when it printed a valid one (also on failure).
    pub report: Option<ChildDocument>,
    /// Named figures: a command's regex metrics; a TPC-H query's `seconds`,
    /// `rows`, or `timeout_s` when censored.
    pub metrics: Vec<(String, f64)>,
    /// One line for the progress output (`123.4 tps, p95 1.23 ms`).
    pub summary: String,
    /// The child's last 30 lines, when the run failed.
    pub output_tail: Option<String>,
}

/// Reads child `r` of a run of `kind` that had `run_timeout`; `error` is
/// what already went wrong (a crash seen before, which wins).
pub(super) fn interpret(kind: &WorkloadKind, r: &ChildResult, run_timeout: Duration, error: Option<String>) -> Outcome {
    let mut o = Outcome {
        status: RunStatus::Ok,
        error,
        report: None,
        metrics: Vec::new(),
        summary: String::new(),
        output_tail: None,
    };
    let killed = || format!("still running after {}s; killed", run_timeout.as_secs());
    let mut timed_out = false;
    match kind {
        WorkloadKind::Test { .. } => {
            let text = r.stdout.trim();
            let doc = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(_) => Err("no JSON report on stdout".to_string()),
                Ok(_) => RunDocument::parse(text, "the JSON report on stdout"),
            };
            if o.error.is_none() {
                if r.timed_out {
                    timed_out = true;
                    o.error = Some(killed());
                } else if r.code != Some(0) {
                    o.error = Some(format!("{}: {}", r.exit(), r.failure(3)));
                } else if let Err(e) = &doc {
                    o.error = Some(e.clone());
                }
            }
            if let Ok(d) = &doc {
                let p95 = d.latency.percentile(95.0);
                o.summary = format!(
                    "{:.1} tps, p95 {}",
                    d.rates_per_s.events,
                    p95.map(|p| format!("{p:.2} ms")).unwrap_or("-".into())
                );
            }
            o.report = doc.ok().map(|d| ChildDocument::Run(Box::new(d)));
        }
        WorkloadKind::Command { metrics, .. } => {
            let text = format!("{}\n{}", r.stdout, r.stderr);
            for (name, rx) in metrics {
                match rx
                    .captures_iter(&text)
                    .last()
                    .and_then(|m| m.get(1))
                    .and_then(|g| g.as_str().trim().parse::<f64>().ok())
                {
                    Some(v) => o.metrics.push((name.clone(), v)),
                    None if o.error.is_none() => o.error = Some(format!("metric '{name}' not found in the output")),
                    None => {}
                }
            }
            if o.error.is_none() && r.timed_out {
                timed_out = true;
                o.error = Some(killed());
            } else if o.error.is_none() && r.code != Some(0) {
                o.error = Some(format!("{}: {}", r.exit(), r.tail(3).replace('\n', " | ")));
            }
            o.summary = o.metrics.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
        }
        WorkloadKind::Tpch { options, .. } => {
            let text = r.stdout.trim();
            let doc = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(_) => Err("no JSON report on stdout".to_string()),
                Ok(_) => TpchDocument::parse(text, "the JSON report on stdout"),
            };
            let timeout_s =
                options.iter().find_map(|o| o.strip_prefix("--timeout=")).and_then(|t| t.parse::<f64>().ok());
            match (doc.as_ref().map(|d| d.first_query()), o.error.is_none()) {
                (_, false) => {}
                (_, true) if r.timed_out => {
                    timed_out = true;
                    o.error = Some(killed());
                    o.metrics.push(("timeout_s".into(), run_timeout.as_secs_f64()));
                }
                (Err(e), true) => o.error = Some(format!("{e:#} ({}): {}", r.exit(), r.failure(3))),
                (Ok(None), true) => {
                    o.error = Some(format!("the JSON report on stdout has no query ({}): {}", r.exit(), r.failure(3)))
                }
                (Ok(Some(q)), true) => {
                    if let Some(s) = q.seconds {
                        o.metrics.push(("seconds".into(), s));
                        let rows = q.executions.first().map(|x| x.rows.to_string()).unwrap_or("null".into());
                        o.summary = format!("{s:.3} s, {rows} rows");
                    } else if q.timed_out {
                        // Censored: the query was stopped on the server at its timeout.
                        timed_out = true;
                        o.error =
                            Some(format!("the query was stopped on the server after {} s", timeout_s.unwrap_or(0.0)));
                        o.metrics.push(("timeout_s".into(), timeout_s.unwrap_or(0.0)));
                    } else {
                        o.error = Some(q.error.clone().unwrap_or("the query failed".into()));
                    }
                    if let Some(x) = q.executions.first() {
                        o.metrics.push(("rows".into(), x.rows as f64));
                    }
                }
            }
            // The whole document: its answer and plan are what the reports check and show.
            o.report = doc.ok().map(|d| ChildDocument::Tpch(Box::new(d)));
        }
    }
    if o.error.is_some() {
        o.output_tail = Some(r.tail(30));
    }
    o.status = RunStatus::of(timed_out, o.error.is_some());
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(60);

    fn child(code: Option<i32>, stdout: &str, stderr: &str) -> ChildResult {
        ChildResult {
            code,
            signal: None,
            timed_out: false,
            interrupted: false,
            stdout: stdout.into(),
            stderr: stderr.into(),
            cpus: None,
        }
    }

    fn test_kind() -> WorkloadKind {
        WorkloadKind::Test { test: "oltp_point_select".into(), options: Vec::new() }
    }

    fn report_json() -> String {
        serde_json::to_string(&crate::run_document::sample_document()).unwrap()
    }

    #[test]
    fn a_test_run_that_printed_its_report_is_ok_with_the_report_and_a_summary() {
        let o = interpret(&test_kind(), &child(Some(0), &report_json(), ""), LIMIT, None);
        assert_eq!((o.status, o.error.as_deref()), (RunStatus::Ok, None));
        assert!(matches!(o.report, Some(ChildDocument::Run(_))));
        assert!(o.summary.contains(" tps, p95 "), "{}", o.summary);
        assert!(o.output_tail.is_none() && o.metrics.is_empty());
    }

    #[test]
    fn a_test_run_fails_on_a_bad_exit_a_signal_a_missing_or_bad_report_and_times_out() {
        // Exit 1 with a FATAL line: the report still kept; the FATAL line
        // first when it is not among the last lines.
        let o = interpret(&test_kind(), &child(Some(1), &report_json(), "FATAL: boom\nmore\n"), LIMIT, None);
        assert_eq!(o.status, RunStatus::Failed);
        let e = o.error.unwrap();
        assert!(e.starts_with("exited with status 1: ") && e.ends_with("| FATAL: boom | more"), "{e}");
        let r = child(Some(1), "", "FATAL: boom\nstack traceback:\n\t[C]: in ?\n\tx\n\ty\n");
        let e = interpret(&test_kind(), &r, LIMIT, None).error.unwrap();
        assert_eq!(e, "exited with status 1: FATAL: boom | ... | \t[C]: in ? | \tx | \ty");
        assert!(o.report.is_some() && o.output_tail.is_some());
        // Killed by a signal.
        let mut r = child(None, "", "");
        r.signal = Some(libc::SIGKILL);
        let o = interpret(&test_kind(), &r, LIMIT, None);
        assert_eq!(o.error.as_deref(), Some("was killed by signal 9 (SIGKILL): "));
        // Exit 0 without JSON, or with JSON that is not a report.
        let o = interpret(&test_kind(), &child(Some(0), "tps: 5", ""), LIMIT, None);
        assert_eq!((o.status, o.error.as_deref()), (RunStatus::Failed, Some("no JSON report on stdout")));
        assert!(o.report.is_none());
        let o = interpret(&test_kind(), &child(Some(0), "{\"a\": 1}", ""), LIMIT, None);
        assert!(o.error.unwrap().starts_with("the JSON report on stdout"));
        // Timed out: its own status, whatever it printed.
        let mut r = child(None, "", "");
        r.timed_out = true;
        let o = interpret(&test_kind(), &r, LIMIT, None);
        assert_eq!((o.status, o.error.as_deref()), (RunStatus::Timeout, Some("still running after 60s; killed")));
    }

    #[test]
    fn an_earlier_error_wins_over_the_childs_and_is_not_a_timeout() {
        let mut r = child(Some(1), &report_json(), "FATAL: lost connection");
        r.timed_out = true;
        for kind in [test_kind(), command_kind(), tpch_kind(&[])] {
            let o = interpret(&kind, &r, LIMIT, Some("the server (pid 7) died during the run".into()));
            assert_eq!(o.status, RunStatus::Failed);
            assert_eq!(o.error.as_deref(), Some("the server (pid 7) died during the run"));
            assert!(o.output_tail.is_some());
        }
    }

    fn command_kind() -> WorkloadKind {
        WorkloadKind::Command {
            command: vec!["pgbench".into()],
            prepare: None,
            metrics: vec![
                ("tps".into(), regex::Regex::new(r"tps = ([0-9.]+)").unwrap()),
                ("lat".into(), regex::Regex::new(r"latency average = ([0-9.]+)").unwrap()),
            ],
        }
    }

    #[test]
    fn a_command_run_takes_each_metrics_last_match_from_stdout_and_stderr() {
        let r = child(Some(0), "tps = 1.5\ntps = 2.5\n", "latency average = 3\n");
        let o = interpret(&command_kind(), &r, LIMIT, None);
        assert_eq!((o.status, o.error), (RunStatus::Ok, None));
        assert_eq!(o.metrics, [("tps".to_string(), 2.5), ("lat".to_string(), 3.0)]);
        assert_eq!(o.summary, "tps=2.5 lat=3");
        assert!(o.report.is_none());
    }

    #[test]
    fn a_command_run_fails_on_a_missing_metric_a_bad_exit_and_times_out() {
        let o = interpret(&command_kind(), &child(Some(0), "tps = 2\n", ""), LIMIT, None);
        assert_eq!(o.status, RunStatus::Failed);
        assert_eq!(o.error.as_deref(), Some("metric 'lat' not found in the output"));
        assert_eq!(o.metrics, [("tps".to_string(), 2.0)]);
        let r = child(Some(2), "tps = 2\nlatency average = 1\n", "a\nb\nc\nd\n");
        let o = interpret(&command_kind(), &r, LIMIT, None);
        assert_eq!(o.error.as_deref(), Some("exited with status 2: b | c | d"));
        let mut r = child(None, "tps = 2\nlatency average = 1\n", "");
        r.timed_out = true;
        let o = interpret(&command_kind(), &r, LIMIT, None);
        assert_eq!(o.status, RunStatus::Timeout);
        // A metric missing is what is said first, even when it also timed out.
        let mut r = child(None, "", "");
        r.timed_out = true;
        let o = interpret(&command_kind(), &r, LIMIT, None);
        assert_eq!((o.status, o.error.as_deref()), (RunStatus::Failed, Some("metric 'tps' not found in the output")));
    }

    fn tpch_kind(options: &[&str]) -> WorkloadKind {
        WorkloadKind::Tpch {
            query: "6".into(),
            options: options.iter().map(|o| o.to_string()).collect(),
            load: Vec::new(),
        }
    }

    /// A `tpch query` document whose one query ended as `seconds`,
    /// `timed_out` and `error` say.
    fn tpch_json(seconds: Option<f64>, timed_out: bool, error: Option<&str>, queries: bool) -> String {
        let q = serde_json::json!({
            "query": "Q6", "name": "Forecasting Revenue Change", "stream": 0, "params": [], "sql": "SELECT 1",
            "executions": [{"seconds": seconds, "timed_out": timed_out, "error": error, "rows": 1}],
            "seconds": seconds, "min_s": seconds, "max_s": seconds, "timed_out": timed_out, "error": error,
            "plan": null, "answer": null,
        });
        serde_json::json!({
            "schema": crate::tpch::document::SCHEMA, "schema_version": crate::tpch::document::SCHEMA_VERSION,
            "tool": "dbbench", "version": "0", "test": "query", "driver": "sqlite", "server_version": "3",
            "scale_factor": 0.01, "params": {"source": "seed", "seed": 1},
            "options": {"timeout_s": 5.0, "warmups": 0, "repeats": 1, "method": "average", "refresh": false},
            "elapsed_s": 0.5,
            "streams": [{"stream": 0, "elapsed_s": 0.5, "queries": if queries { vec![q] } else { vec![] }}],
            "refresh": [], "metrics": {}, "notes": [],
        })
        .to_string()
    }

    #[test]
    fn a_tpch_query_gives_its_seconds_and_rows_or_a_censored_time_or_its_error() {
        let kind = tpch_kind(&["--timeout=5"]);
        let o = interpret(&kind, &child(Some(0), &tpch_json(Some(0.25), false, None, true), ""), LIMIT, None);
        assert_eq!((o.status, o.error.as_deref()), (RunStatus::Ok, None));
        assert_eq!(o.metrics, [("seconds".to_string(), 0.25), ("rows".to_string(), 1.0)]);
        assert_eq!(o.summary, "0.250 s, 1 rows");
        assert!(matches!(o.report, Some(ChildDocument::Tpch(_))));
        // Stopped on the server at its timeout: censored at 5 s, never a time.
        let o = interpret(&kind, &child(Some(0), &tpch_json(None, true, None, true), ""), LIMIT, None);
        assert_eq!(o.status, RunStatus::Timeout);
        assert_eq!(o.error.as_deref(), Some("the query was stopped on the server after 5 s"));
        assert_eq!(o.metrics, [("timeout_s".to_string(), 5.0), ("rows".to_string(), 1.0)]);
        // The database's error.
        let o =
            interpret(&kind, &child(Some(0), &tpch_json(None, false, Some("no such table"), true), ""), LIMIT, None);
        assert_eq!((o.status, o.error.as_deref()), (RunStatus::Failed, Some("no such table")));
    }

    #[test]
    fn a_tpch_run_fails_without_a_document_or_a_query_and_times_out_at_the_labs_limit() {
        let kind = tpch_kind(&[]);
        let o = interpret(&kind, &child(Some(1), "", "FATAL: cannot connect"), LIMIT, None);
        assert_eq!(o.status, RunStatus::Failed);
        assert_eq!(o.error.as_deref(), Some("no JSON report on stdout (exited with status 1): FATAL: cannot connect"));
        let o = interpret(&kind, &child(Some(0), &tpch_json(None, false, None, false), ""), LIMIT, None);
        assert!(o.error.unwrap().starts_with("the JSON report on stdout has no query (exited with status 0)"));
        let mut r = child(None, "", "");
        r.timed_out = true;
        let o = interpret(&kind, &r, LIMIT, None);
        assert_eq!((o.status, o.error.as_deref()), (RunStatus::Timeout, Some("still running after 60s; killed")));
        assert_eq!(o.metrics, [("timeout_s".to_string(), 60.0)]);
    }

    #[test]
    fn run_status_keeps_a_timeout_and_is_spelled_as_the_store_spells_it() {
        assert_eq!(RunStatus::of(true, true), RunStatus::Timeout);
        assert_eq!(RunStatus::of(false, true), RunStatus::Failed);
        assert_eq!(RunStatus::of(false, false), RunStatus::Ok);
        let spelled: Vec<&str> = [RunStatus::Ok, RunStatus::Failed, RunStatus::Timeout].map(RunStatus::as_str).to_vec();
        assert_eq!(spelled, ["ok", "failed", "timeout"]);
    }
}
