//! `dbbench lab run --metrics-listen=ADDR`: one Prometheus endpoint for the
//! whole lab run.
//!
//! It serves the lab's progress (`dbbench_lab_*`) and the current run's
//! own figures (`crate::metrics`), each of those lines labelled with the
//! run's experiment, configuration, workload, threads and repeat.
//!
//! How the child's figures get here: the lab starts each `dbbench run` child
//! with `--metrics-listen=127.0.0.1:0` (a free loopback port the kernel
//! picks, so no port can be taken by someone else in between) and
//! `DBBENCH_METRICS_ADDRESS_FILE` naming a file in the lab's private work
//! directory, where the child writes the address it got. A poller thread
//! here reads that file, fetches the child's `/metrics` every
//! [`POLL_EVERY`] and keeps the latest text; scrapes of the lab's endpoint
//! are answered from what it kept, so a scraper never waits for the child
//! and the child never for a scraper. The poller's fetch of the final
//! figures is also what lets the child exit without lingering (see
//! `crate::metrics::Server::linger`). After a run, its final figures stay
//! on the endpoint until the next run starts; command and TPC-H workloads
//! have progress and labels only. The stored argv is the run's own: the
//! metrics option is added for the child alone.

use crate::metrics::label_value;
use anyhow::Context;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How often the poller fetches the current child's figures.
pub const POLL_EVERY: Duration = Duration::from_millis(500);

/// The lab-level metrics, besides the relayed run metrics.
pub const LAB_METRICS: &[(&str, &str, &str)] = &[
    ("dbbench_lab_runs_planned", "gauge", "Runs the lab run's plan holds."),
    ("dbbench_lab_runs_done", "gauge", "Runs of the plan done (stored now, or earlier and skipped by --resume)."),
    ("dbbench_lab_run_info", "gauge", "1 for the current (or last) run; labels say which."),
    ("dbbench_lab_finished", "gauge", "1 once the lab run has ended."),
];

#[derive(Default)]
struct State {
    experiment: String,
    planned: usize,
    done: usize,
    finished: bool,
    /// Increases with each run, so that a fetch for an earlier run is dropped.
    run_id: u64,
    /// The current run's labels, rendered (`experiment="..",...`).
    labels: String,
    address_file: Option<PathBuf>,
    child: Option<SocketAddr>,
    text: String,
}

/// The lab's endpoint.
pub struct LabMetrics {
    state: Arc<Mutex<State>>,
}

fn lock(s: &Mutex<State>) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl LabMetrics {
    /// Serves on `listener` for experiment `experiment`.
    pub fn start(listener: std::net::TcpListener, experiment: &str) -> anyhow::Result<LabMetrics> {
        let state = Arc::new(Mutex::new(State { experiment: experiment.to_string(), ..Default::default() }));
        let s = state.clone();
        crate::metrics::serve(listener, move || render(&lock(&s)))
            .context("--metrics-listen: cannot start its thread")?;
        let s = state.clone();
        std::thread::Builder::new()
            .name("metrics-poll".into())
            .spawn(move || poll(&s))
            .context("--metrics-listen: cannot start its thread")?;
        Ok(LabMetrics { state })
    }

    /// The plan holds `n` runs.
    pub fn planned(&self, n: usize) {
        lock(&self.state).planned = n;
    }

    /// A run of the plan is done (or was stored before).
    pub fn done(&self) {
        lock(&self.state).done += 1;
    }

    /// The lab run has ended.
    pub fn finished(&self) {
        lock(&self.state).finished = true;
    }

    /// A run starts with these labels; its child writes its address to
    /// `address_file` (None: the workload serves no figures).
    pub fn run_started(
        &self,
        configuration: &str,
        workload: &str,
        threads: u32,
        repeat: u32,
        address_file: Option<PathBuf>,
    ) {
        let mut s = lock(&self.state);
        s.run_id += 1;
        s.labels = format!(
            "experiment=\"{}\",configuration=\"{}\",workload=\"{}\",threads=\"{threads}\",repeat=\"{repeat}\"",
            label_value(&s.experiment),
            label_value(configuration),
            label_value(workload)
        );
        s.address_file = address_file;
        s.child = None;
        s.text.clear();
    }
}

impl LabMetrics {
    /// The current run's child has ended: its last figures stay served,
    /// its address is forgotten (another process may get the port).
    pub fn run_ended(&self) {
        let mut s = lock(&self.state);
        s.address_file = None;
        s.child = None;
    }
}

/// Fetches the current child's figures every [`POLL_EVERY`], for as long
/// as the process lives.
fn poll(state: &Mutex<State>) {
    loop {
        std::thread::sleep(POLL_EVERY);
        let (id, file, child) = {
            let s = lock(state);
            (s.run_id, s.address_file.clone(), s.child)
        };
        let child = child.or_else(|| {
            let a = std::fs::read_to_string(file?).ok()?.trim().parse::<SocketAddr>().ok()?;
            let mut s = lock(state);
            (s.run_id == id).then(|| {
                s.child = Some(a);
                a
            })
        });
        let Some(addr) = child else { continue };
        if let Some(text) = fetch(addr) {
            let mut s = lock(state);
            if s.run_id == id {
                s.text = text;
            }
        }
    }
}

/// GET http://addr/metrics, bounded to about a second.
fn fetch(addr: SocketAddr) -> Option<String> {
    let t = Duration::from_secs(1);
    let mut c = TcpStream::connect_timeout(&addr, t).ok()?;
    c.set_read_timeout(Some(t)).ok()?;
    c.set_write_timeout(Some(t)).ok()?;
    c.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut resp = Vec::new();
    c.take(4 << 20).read_to_end(&mut resp).ok()?;
    let resp = String::from_utf8(resp).ok()?;
    let (head, body) = resp.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// Adds `labels` to every sample line of `text` (Prometheus text format).
fn relabel(text: &str, labels: &str, out: &mut String) {
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            out.push_str(line);
        } else if let Some(i) = line.find(['{', ' ']) {
            let (name, rest) = line.split_at(i);
            match rest.strip_prefix('{') {
                Some(inner) => out.push_str(&format!("{name}{{{labels},{inner}")),
                None => out.push_str(&format!("{name}{{{labels}}}{rest}")),
            }
        }
        out.push('\n');
    }
}

fn render(s: &State) -> String {
    let mut out = String::with_capacity(8192);
    let exp = format!("experiment=\"{}\"", label_value(&s.experiment));
    for (name, kind, help) in LAB_METRICS {
        let value = match *name {
            "dbbench_lab_runs_planned" => s.planned,
            "dbbench_lab_runs_done" => s.done,
            "dbbench_lab_finished" => usize::from(s.finished),
            _ if s.labels.is_empty() => continue,
            _ => 1,
        };
        let labels = if *name == "dbbench_lab_run_info" { &s.labels } else { &exp };
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{{{labels}}} {value}\n"));
    }
    relabel(&s.text, &s.labels, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Grafana example parses and names only metrics the endpoints
    /// serve (`crate::metrics::METRICS`, whose rendering is checked there,
    /// and the lab's own).
    #[test]
    fn the_grafana_example_names_only_served_metrics() {
        let text = include_str!("../../examples/grafana-dashboard.json");
        let dash: serde_json::Value = serde_json::from_str(text).expect("examples/grafana-dashboard.json parses");
        fn exprs(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        match v.as_str() {
                            Some(s) if k == "expr" || k == "query" => out.push(s.to_string()),
                            _ => exprs(v, out),
                        }
                    }
                }
                serde_json::Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        exprs(&dash, &mut found);
        assert!(found.len() >= 10, "{found:?}");
        let served = |name: &str| {
            let all = crate::metrics::METRICS.iter().chain(LAB_METRICS);
            all.clone().any(|m| m.0 == name)
                || all
                    .filter(|m| m.1 == "histogram" || m.1 == "summary")
                    .any(|m| ["_bucket", "_sum", "_count"].iter().any(|s| name.strip_suffix(s) == Some(m.0)))
        };
        let re = regex::Regex::new(r"dbbench_[a-z0-9_]+").unwrap();
        let mut names = 0;
        for e in &found {
            for m in re.find_iter(e) {
                assert!(served(m.as_str()), "the dashboard names {} (in {e}), which no endpoint serves", m.as_str());
                names += 1;
            }
        }
        assert!(names >= 10);
    }

    #[test]
    fn relabel_adds_the_run_labels_to_every_sample() {
        let mut out = String::new();
        relabel("# TYPE a counter\na_total 3\nb{kind=\"read\"} 4\n\n", "x=\"1\"", &mut out);
        assert_eq!(out, "# TYPE a counter\na_total{x=\"1\"} 3\nb{x=\"1\",kind=\"read\"} 4\n");
    }

    #[test]
    fn lab_progress_and_labels_are_served() {
        let mut s = State { experiment: "e\"1".into(), planned: 4, done: 1, ..Default::default() };
        s.labels = "experiment=\"e\\\"1\",configuration=\"c\"".into();
        s.text = "dbbench_events_total 7\n".into();
        let text = render(&s);
        assert!(text.contains("dbbench_lab_runs_planned{experiment=\"e\\\"1\"} 4\n"), "{text}");
        assert!(text.contains("dbbench_lab_runs_done{experiment=\"e\\\"1\"} 1\n"), "{text}");
        assert!(text.contains("dbbench_lab_run_info{experiment=\"e\\\"1\",configuration=\"c\"} 1\n"), "{text}");
        assert!(text.contains("dbbench_events_total{experiment=\"e\\\"1\",configuration=\"c\"} 7\n"), "{text}");
    }
}
