//! The kubectl side of `dbbench k8s`: apply, wait, collect, merge, clean up.
//!
//! Only these kubectl calls are made (the stand-in kubectl of tests/k8s.rs
//! answers exactly these):
//!   kubectl [--context C] [--namespace NS] apply -f -            (a JSON v1 List on stdin: the Secret never in argv)
//!   kubectl ... get job ID -o json                                (polled every second)
//!   kubectl ... get pods -l dbbench/run=ID -o json
//!   kubectl ... logs POD -c dbbench
//!   kubectl ... delete job,configmap,secret -l dbbench/run=ID --ignore-not-found --wait=false

use super::manifest::{self, Plan, CONTAINER};
use super::Args;
use crate::exit::Exit;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The line of a shard's output that carries its mergeable result.
pub const RESULT_PREFIX: &str = "dbbench-shard-result: ";

/// Set by SIGINT/SIGTERM: stop waiting, delete the run's objects.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The user's kubectl with the global flags.
struct Kubectl {
    program: String,
    globals: Vec<String>,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.globals).args(args);
        c
    }

    /// Runs kubectl; Ok(stdout) when it exits 0, else its stderr's last line.
    fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        let mut c = self.command(args);
        c.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = c.spawn().map_err(|e| {
            format!("cannot run kubectl '{}': {e} (install kubectl or give --kubectl=PATH)", self.program)
        })?;
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().expect("piped stdin");
            // A kubectl that dies early closes the pipe: its status says why.
            let _ = pipe.write_all(text.as_bytes());
        }
        let out = child.wait_with_output().map_err(|e| format!("kubectl {}: {e}", args.join(" ")))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            Err(format!("kubectl {} failed ({}): {}", args.join(" "), out.status, crate::secret::redact(line)))
        }
    }
}

fn say(msg: &str) {
    eprintln!("dbbench k8s: {msg}");
}

/// One shard as collected from the cluster.
#[derive(Debug, Clone, Default)]
pub struct ShardOutcome {
    pub index: u32,
    pub pod: Option<String>,
    pub node: Option<String>,
    pub phase: Option<String>,
    pub exit_code: Option<i64>,
    pub reason: Option<String>,
    /// The saved log, when one was read.
    pub log: Option<PathBuf>,
    /// Whether the log holds a result line.
    pub has_result: bool,
}

impl ShardOutcome {
    pub fn ok(&self) -> bool {
        self.has_result && self.phase.as_deref() == Some("Succeeded")
    }

    /// Why a shard has no result, in a few words.
    pub fn failure(&self) -> String {
        let mut s = match (&self.pod, &self.phase) {
            (None, _) => "no pod was created".to_string(),
            (Some(_), Some(p)) if p != "Succeeded" && p != "Failed" => format!("still {p} when the Job ended"),
            (Some(_), Some(p)) if p == "Failed" => "failed".to_string(),
            _ => "ended without a result line".to_string(),
        };
        if let Some(c) = self.exit_code {
            s.push_str(&format!(", exit code {c}"));
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!(" ({r})"));
        }
        s
    }
}

/// Runs the plan on the cluster; the exit status.
pub fn launch(a: &Args, mut plan: Plan) -> Exit {
    let kubectl = Kubectl { program: a.kubectl.clone(), globals: globals(a) };
    let dir = match results_dir(a, &plan.run_id) {
        Ok(d) => d,
        Err(e) => {
            say(&e);
            return Exit::Error;
        }
    };
    // SAFETY: the handlers only store into an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    // The shared start counts from now, not from when the plan was built.
    if a.start_at.is_none() {
        plan.start_at_ms = super::now_ms() + a.start_grace * 1000;
    }
    let n = plan.shards;
    say(&format!(
        "run {}: {n} shards of {} starting at {} (epoch ms, in {} s); shard logs in {}",
        plan.run_id,
        plan.script_arg,
        plan.start_at_ms,
        plan.start_at_ms.saturating_sub(super::now_ms()).div_ceil(1000),
        dir.display()
    ));
    let applied = kubectl.run(&["apply", "-f", "-"], Some(&manifest::to_json_list(&plan.manifests(false))));
    let shards = match &applied {
        Err(e) => {
            say(e);
            Vec::new()
        }
        // After a timeout or a failed Job, whatever the shards left is
        // collected: the report names the shards that failed.
        Ok(_) if wait(&kubectl, &plan, a) == Waited::Interrupted => Vec::new(),
        Ok(_) => collect(&kubectl, &plan, &dir),
    };
    if a.keep {
        say(&format!(
            "--keep: the run's objects stay; delete them with: kubectl delete job,configmap,secret -l {}",
            plan.selector()
        ));
    } else {
        // Also after a failed apply: part of it may have been created.
        cleanup(&kubectl, &plan);
    }
    if INTERRUPTED.load(Ordering::SeqCst) {
        say("interrupted: the run's objects were deleted; no report");
        return Exit::Interrupted;
    }
    if applied.is_err() {
        return Exit::Error;
    }
    report(a, &plan, &shards, &dir)
}

/// How waiting for the Job ended.
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    Complete,
    /// Failed, timed out, or the API did not answer: collect what there is.
    NotComplete,
    Interrupted,
}

fn globals(a: &Args) -> Vec<String> {
    let mut g = Vec::new();
    if let Some(c) = &a.context {
        g.push(format!("--context={c}"));
    }
    if let Some(ns) = &a.namespace {
        g.push(format!("--namespace={ns}"));
    }
    g
}

fn results_dir(a: &Args, run_id: &str) -> Result<PathBuf, String> {
    let dir = a.results_dir.clone().unwrap_or_else(|| PathBuf::from(run_id));
    crate::safe_fs::private_dir(&dir, 0o700, "results directory")
}

/// Waits until the Job completes or fails, the timeout passes, or we are
/// interrupted.
fn wait(kubectl: &Kubectl, plan: &Plan, a: &Args) -> Waited {
    let deadline = Instant::now() + Duration::from_secs(plan.deadline_secs + 30);
    let mut last = String::new();
    let mut errors = 0;
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Waited::Interrupted;
        }
        match kubectl.run(&["get", "job", &plan.run_id, "-o", "json"], None) {
            Ok(text) => {
                errors = 0;
                let job: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                let st = &job["status"];
                let count = |k: &str| st[k].as_u64().unwrap_or(0);
                let line = format!(
                    "{} of {} shards running, {} succeeded, {} failed",
                    count("active"),
                    plan.shards,
                    count("succeeded"),
                    count("failed")
                );
                if line != last {
                    say(&line);
                    last = line;
                }
                let condition = |t: &str| {
                    st["conditions"]
                        .as_array()
                        .is_some_and(|cs| cs.iter().any(|c| c["type"] == t && c["status"] == "True"))
                };
                if condition("Complete") {
                    return Waited::Complete;
                }
                if condition("Failed") {
                    let reason = st["conditions"]
                        .as_array()
                        .and_then(|cs| cs.iter().find(|c| c["type"] == "Failed"))
                        .map(|c| {
                            format!("{} {}", c["reason"].as_str().unwrap_or(""), c["message"].as_str().unwrap_or(""))
                        })
                        .unwrap_or_default();
                    say(&format!("the Job failed: {}", reason.trim()));
                    return Waited::NotComplete;
                }
            }
            Err(e) => {
                // The API server may blink; five failures in a row end the wait.
                errors += 1;
                if errors >= 5 {
                    say(&e);
                    return Waited::NotComplete;
                }
            }
        }
        if Instant::now() > deadline {
            say(&format!(
                "timed out after {} s waiting for the Job (--timeout={}): {last}",
                plan.deadline_secs + 30,
                a.timeout.unwrap_or(plan.deadline_secs)
            ));
            return Waited::NotComplete;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Each shard's pod, state and log (saved as DIR/shard-I.log).
fn collect(kubectl: &Kubectl, plan: &Plan, dir: &Path) -> Vec<ShardOutcome> {
    let mut shards: Vec<ShardOutcome> =
        (0..plan.shards).map(|i| ShardOutcome { index: i, ..Default::default() }).collect();
    let pods = match kubectl.run(&["get", "pods", "-l", &plan.selector(), "-o", "json"], None) {
        Ok(t) => serde_json::from_str::<serde_json::Value>(&t).unwrap_or_default(),
        Err(e) => {
            say(&e);
            return shards;
        }
    };
    for pod in pods["items"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let meta = &pod["metadata"];
        let index = meta["annotations"]["batch.kubernetes.io/job-completion-index"]
            .as_str()
            .or_else(|| meta["labels"]["batch.kubernetes.io/job-completion-index"].as_str())
            .and_then(|s| s.parse::<u32>().ok());
        let Some(s) = index.and_then(|i| shards.get_mut(i as usize)) else { continue };
        let phase = pod["status"]["phase"].as_str().map(String::from);
        // A succeeded pod of an index wins over a failed one.
        if s.phase.as_deref() == Some("Succeeded") {
            continue;
        }
        s.pod = meta["name"].as_str().map(String::from);
        s.node = pod["spec"]["nodeName"].as_str().map(String::from);
        s.phase = phase;
        let term = pod["status"]["containerStatuses"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == CONTAINER))
            .map(|c| &c["state"]["terminated"]);
        s.exit_code = term.and_then(|t| t["exitCode"].as_i64());
        s.reason = term
            .and_then(|t| t["reason"].as_str())
            .or_else(|| pod["status"]["reason"].as_str())
            .filter(|r| *r != "Completed")
            .map(String::from);
    }
    for s in &mut shards {
        let Some(pod) = s.pod.clone() else { continue };
        match kubectl.run(&["logs", &pod, "-c", CONTAINER], None) {
            Ok(log) => {
                let path = dir.join(format!("shard-{}.log", s.index));
                let saved = crate::safe_fs::create_truncate(&path, 0o600)
                    .and_then(|mut f| f.write_all(log.as_bytes()).map_err(|e| format!("{}: {e}", path.display())));
                match saved {
                    Ok(()) => {
                        s.has_result = log.lines().any(|l| l.starts_with(RESULT_PREFIX));
                        s.log = Some(path);
                    }
                    Err(e) => say(&format!("cannot save shard {}'s log: {e}", s.index)),
                }
            }
            Err(e) => say(&format!("shard {}: {e}", s.index)),
        }
    }
    shards
}

/// Deletes every object with the run's label (pods go with their Job).
fn cleanup(kubectl: &Kubectl, plan: &Plan) {
    let sel = plan.selector();
    match kubectl.run(&["delete", "job,configmap,secret", "-l", &sel, "--ignore-not-found", "--wait=false"], None) {
        Ok(_) => say(&format!("deleted the run's objects ({sel})")),
        Err(e) => say(&format!("{e}; delete them with: kubectl delete job,configmap,secret -l {sel}")),
    }
}

/// The per-shard lines, then the merged report from `dbbench merge`.
fn report(a: &Args, plan: &Plan, shards: &[ShardOutcome], dir: &Path) -> Exit {
    let failed: Vec<&ShardOutcome> = shards.iter().filter(|s| !s.ok()).collect();
    for s in shards {
        let pod = s.pod.as_deref().unwrap_or("-");
        let node = s.node.as_deref().unwrap_or("-");
        let state = if s.ok() { "ok".to_string() } else { s.failure() };
        say(&format!("shard {}/{}: pod {pod} on node {node}: {state}", s.index, plan.shards));
    }
    let present: Vec<PathBuf> = shards.iter().filter(|s| s.has_result).filter_map(|s| s.log.clone()).collect();
    if !failed.is_empty() {
        let which: Vec<String> = failed.iter().map(|s| s.index.to_string()).collect();
        if !a.allow_partial || present.is_empty() {
            say(&format!(
                "{} of {} shards failed (shard {}): no merged report{}; logs in {}",
                failed.len(),
                plan.shards,
                which.join(", "),
                if present.is_empty() { "" } else { " (--allow-partial merges the others, naming the missing)" },
                dir.display()
            ));
            return Exit::Error;
        }
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("dbbench"));
    let mut c = Command::new(exe);
    c.arg("merge");
    match a.format.as_str() {
        "json" => {
            c.arg("--json");
        }
        "csv" => {
            c.arg("--csv");
        }
        _ => {}
    }
    if !failed.is_empty() {
        c.arg("--allow-partial");
    }
    c.args(&present);
    match c.status() {
        Ok(st) if st.success() => {
            if failed.is_empty() {
                Exit::Ok
            } else {
                Exit::Partial
            }
        }
        Ok(st) => {
            say(&format!("dbbench merge failed ({st}); the shards' logs are in {}", dir.display()));
            Exit::Error
        }
        Err(e) => {
            say(&format!("cannot run dbbench merge: {e}; the shards' logs are in {}", dir.display()));
            Exit::Error
        }
    }
}
