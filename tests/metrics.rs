//! Live metrics (`--metrics-listen`, docs/metrics.md): a real Prometheus
//! (Debian's package) scrapes a live run on MariaDB and its numbers are
//! checked against the run's final JSON report; bad addresses; the lab's
//! endpoint with its labels.

mod common;

use common::{dbbench_in, lab_lock_in_test_dir, mysql_db, tempdir};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's Prometheus, required under CI (scripts/test.sh installs it).
fn prometheus() -> Option<&'static str> {
    let path = "/usr/bin/prometheus";
    if Path::new(path).exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "prometheus is required under CI (scripts/test.sh installs it)"
    );
    common::skipped("prometheus not installed (apt-get install prometheus)");
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process killed (and reaped) when dropped, also on a failed assertion.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` on 127.0.0.1:`port`: (status line, body), bounded to 2 s.
fn http_get(port: u16, path: &str) -> Option<(String, String)> {
    let t = Duration::from_secs(2);
    let mut c = TcpStream::connect_timeout(&format!("127.0.0.1:{port}").parse().unwrap(), t).ok()?;
    c.set_read_timeout(Some(t)).ok()?;
    c.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).ok()?;
    let mut resp = String::new();
    c.read_to_string(&mut resp).ok()?;
    let (head, body) = resp.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The single value of an instant query through Prometheus's HTTP API.
fn query(port: u16, q: &str) -> Option<f64> {
    let (_, body) = http_get(port, &format!("/api/v1/query?query={}", percent_encode(q)))?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let result = v["data"]["result"].as_array()?;
    if result.len() != 1 {
        return None;
    }
    result[0]["value"][1].as_str()?.parse().ok()
}

/// The raw samples of a range-vector query (one series) through the HTTP API.
fn samples(port: u16, q: &str) -> Vec<f64> {
    let (_, body) = http_get(port, &format!("/api/v1/query?query={}", percent_encode(q))).expect("prometheus answers");
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON from prometheus");
    let series = v["data"]["result"].as_array().expect("a result");
    assert_eq!(series.len(), 1, "{body}");
    let values = series[0]["values"].as_array().expect("values");
    values.iter().map(|p| p[1].as_str().unwrap().parse().unwrap()).collect()
}

#[test]
fn prometheus_scrapes_a_live_run_and_its_numbers_match_the_final_report() {
    let Some(prom) = prometheus() else { return };
    let Some(db) = mysql_db("metrics_prom") else { return };
    let dir = tempdir("metrics-prom");
    let mut args: Vec<String> = vec!["oltp_point_select".into(), "prepare".into(), "--table-size=1000".into()];
    args.extend(db.iter().cloned());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let p = dbbench_in(&dir, &a);
    assert_eq!(p.code, 0, "{}{}", p.stdout, p.stderr);

    let (prom_port, run_port) = (free_port(), free_port());
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\nscrape_configs:\n  - job_name: dbbench\n    \
             static_configs:\n      - targets: ['127.0.0.1:{run_port}']\n"
        ),
    )
    .unwrap();
    // Started directly (not under timeout(1), which would be the child
    // killed at the end while Prometheus ran on): `Killed` stops it.
    let server = Command::new(prom)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("start prometheus");
    let _server = Killed(server);
    let until = Instant::now() + Duration::from_secs(30);
    while !http_get(prom_port, "/-/ready").is_some_and(|(s, _)| s.contains(" 200")) {
        assert!(
            Instant::now() < until,
            "prometheus not ready within 30 s: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Prometheus hands targets to its scrapers some seconds after it is
    // ready (discovery updates are throttled): wait for the first scrape
    // attempt (`up` is 0 until the run listens).
    let until = Instant::now() + Duration::from_secs(30);
    while query(prom_port, "up").is_none() {
        assert!(Instant::now() < until, "prometheus did not try the target within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let listen = format!("--metrics-listen=127.0.0.1:{run_port}");
    let mut args: Vec<String> = vec!["oltp_point_select".into(), "run".into(), "--table-size=1000".into()];
    args.extend(db.iter().cloned());
    args.extend(
        ["--time=4", "--threads=2", "--warmup-time=1", "--percentile=99", "--format=json", &listen].map(String::from),
    );
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let r = dbbench_in(&dir, &a);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // It waited for one scrape of the final figures (at most LINGER = 5 s).
    assert!(started.elapsed() < Duration::from_secs(4 + 1 + 5 + 5), "{:?}", started.elapsed());
    let report: serde_json::Value = serde_json::from_str(&r.stdout).expect("the JSON report");
    let counters = &report["counters"];
    let n = |k: &str| counters[k].as_u64().unwrap_or_else(|| panic!("no {k} in {counters}")) as f64;
    let (events, queries, reads) = (n("events"), n("queries"), n("reads"));
    assert!(events > 0.0, "{counters}");

    // The last scrape has the totals (the run lingered until one saw them).
    let until = Instant::now() + Duration::from_secs(10);
    let last = loop {
        let v = query(prom_port, "dbbench_events_total");
        if v == Some(events) || Instant::now() > until {
            break v;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let log = || std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
    assert_eq!(last, Some(events), "events in Prometheus vs the report; prometheus log:\n{}", log());
    assert_eq!(query(prom_port, "sum(dbbench_queries_total)"), Some(queries));
    assert_eq!(query(prom_port, "dbbench_queries_total{kind=\"read\"}"), Some(reads));
    assert_eq!(query(prom_port, "dbbench_event_latency_seconds_count"), Some(events));
    assert_eq!(query(prom_port, "dbbench_event_latency_seconds_bucket{le=\"+Inf\"}"), Some(events));
    assert_eq!(query(prom_port, "dbbench_errors_total"), Some(n("errors")));
    assert_eq!(query(prom_port, "dbbench_run_finished"), Some(1.0));
    assert_eq!(query(prom_port, "dbbench_threads_configured"), Some(2.0));
    assert_eq!(query(prom_port, "dbbench_run_time_limit_seconds"), Some(4.0));
    // While it ran, both clients were running, and the figures were live:
    // several scrapes, the counter rising through them.
    assert_eq!(query(prom_port, "max_over_time(dbbench_threads[1m])"), Some(2.0));
    assert_eq!(query(prom_port, "max_over_time(dbbench_run_warmup[1m])"), Some(1.0));
    let seen = samples(prom_port, "dbbench_events_total[1m]");
    assert!(seen.len() >= 5, "only {} scrapes of a 5 s run at 500 ms: {seen:?}", seen.len());
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "the counter went down: {seen:?}");
    assert!(seen.iter().any(|v| *v > 0.0 && *v < events), "no scrape saw a figure between 0 and {events}: {seen:?}");
    // The p99 summary is the report's, within the histogram's 3 digits.
    let p99 = query(prom_port, "dbbench_event_latency_percentile_seconds{quantile=\"0.99\"}").unwrap();
    let ms = report["latency"]["percentiles_ms"]["99"].as_f64().expect("p99 in the report");
    assert!((p99 * 1e3 - ms).abs() <= ms * 0.002 + 1e-6, "p99 {p99} s vs report {ms} ms");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The value of an unlabelled sample `name` in an exposition `body`.
fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn trickling_clients_neither_blind_the_scrapes_nor_slow_the_run() {
    // Issue 38: one connection sending `GET /metr` and then a byte a second
    // made every other scrape time out for as long as it stayed open. Now
    // 100 of them (half trickling, half silent) beside a real run on the
    // embedded default: every scrape is answered within the deadline, the
    // run ends on time, and the last scrape has the report's events.
    let dir = tempdir("metrics-trickle");
    let p = dbbench_in(&dir, &["oltp_point_select", "prepare", "--table-size=1000"]);
    assert_eq!(p.code, 0, "{}{}", p.stdout, p.stderr);
    let port = free_port();
    let listen = format!("--metrics-listen=127.0.0.1:{port}");
    let run = common::Background::start(
        &dir,
        &["oltp_point_select", "run", "--table-size=1000", "--time=6", "--threads=1", "--format=json", &listen],
    );
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < until, "the endpoint did not listen within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut hostile: Vec<TcpStream> = (0..100).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for c in hostile.iter_mut().step_by(2) {
        c.write_all(b"GET /metr").unwrap();
    }
    let stop = Instant::now() + Duration::from_secs(4);
    let trickler = std::thread::spawn(move || {
        while Instant::now() < stop {
            for c in hostile.iter_mut().step_by(2) {
                let _ = c.write_all(b"i");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        hostile
    });
    let (mut scrapes, mut worst, mut last_events, mut final_events) = (0, Duration::ZERO, 0.0, None);
    while Instant::now() < stop {
        let t0 = Instant::now();
        let (status, body) = http_get(port, "/metrics").expect("a scrape answered among trickling clients");
        worst = worst.max(t0.elapsed());
        assert!(status.contains(" 200"), "{status}");
        last_events = sample(&body, "dbbench_events_total").expect("dbbench_events_total in the scrape");
        if sample(&body, "dbbench_run_finished") == Some(1.0) {
            final_events = Some(last_events);
            break;
        }
        scrapes += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let _hostile = trickler.join().unwrap();
    assert!(scrapes >= 10, "only {scrapes} scrapes in 4 s");
    assert!(worst < Duration::from_secs(2), "a scrape took {worst:?}");
    assert!(last_events > 0.0, "no events seen while the run ran");
    // The final figures: scraped once after the report (the run lingers for it).
    let until = Instant::now() + Duration::from_secs(15);
    while final_events.is_none() && Instant::now() < until {
        if let Some((_, body)) = http_get(port, "/metrics") {
            if sample(&body, "dbbench_run_finished") == Some(1.0) {
                final_events = sample(&body, "dbbench_events_total");
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (r, took) = run.finish(Duration::from_secs(40));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(took < Duration::from_secs(6 + 15), "the run took {took:?}");
    let report: serde_json::Value = serde_json::from_str(&r.stdout).expect("the JSON report");
    let events = report["counters"]["events"].as_f64().expect("events in the report");
    assert_eq!(final_events, Some(events), "the final scrape vs the report");
    assert!(last_events <= events);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_metrics_address_is_one_line_and_exit_1() {
    let dir = tempdir("metrics-bad");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = format!("--metrics-listen={}", taken.local_addr().unwrap());
    for (arg, says) in [
        ("--metrics-listen=nonsense", "not an address to listen on"),
        ("--metrics-listen=", "not an address to listen on"),
        ("--metrics-listen= ", "not an address to listen on"),
        ("--metrics-listen=127.0.0.1:99999", "not an address to listen on"),
        (taken.as_str(), "cannot listen there"),
    ] {
        let r = dbbench_in(&dir, &["oltp_point_select", "run", "--time=1", arg]);
        assert_eq!(r.code, 1, "{arg}: {}{}", r.stdout, r.stderr);
        let lines: Vec<&str> = r.stdout.lines().filter(|l| l.contains("--metrics-listen")).collect();
        assert_eq!(lines.len(), 1, "{arg}: {}{}", r.stdout, r.stderr);
        assert!(lines[0].starts_with("FATAL: --metrics-listen=") && lines[0].contains(says), "{}", lines[0]);
        assert!(!r.stdout.contains("Threads started"), "{arg}: it ran: {}", r.stdout);
    }
    let r = dbbench_in(&dir, &["lab", "run", "nonexistent-but-not-reached.toml", "--metrics-listen=nonsense"]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

const LAB_SPEC: &str = r#"
[experiment]
name = "live-lab"
threads = [2]
repeats = 2
time = 3
sample_interval = 1
options = { tables = 1, table-size = 500 }

[[configuration]]
name = "wal"
server = "sqlite"
pragmas = { journal_mode = "wal" }

[[workload]]
test = "oltp_point_select"
"#;

/// Runs `lab run` on `spec_text` with its metrics endpoint, scraping it
/// every 200 ms until the lab ends (bounded): the lab's directory and
/// every scrape's body.
fn scrape_lab(name: &str, spec_text: &str) -> (common::TempDir, Vec<String>) {
    let dir = tempdir(name);
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, spec_text).unwrap();
    let port = free_port();
    // Started directly, so that `Killed` stops the lab itself (its run
    // children die with it: PR_SET_PDEATHSIG); the loop below bounds it.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbbench"));
    cmd.args(["lab", "run"])
        .arg(&spec)
        .arg(format!("--metrics-listen=127.0.0.1:{port}"))
        .current_dir(&dir)
        .stdout(std::fs::File::create(dir.join("lab.out")).unwrap())
        .stderr(std::fs::File::create(dir.join("lab.err")).unwrap());
    lab_lock_in_test_dir(&mut cmd);
    let mut lab = Killed(cmd.spawn().expect("start the lab"));
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(100);
    while lab.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "lab run did not end");
        if let Some((status, body)) = http_get(port, "/metrics") {
            assert!(status.contains(" 200"), "{status}");
            seen.push(body);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out =
        std::fs::read_to_string(dir.join("lab.out")).unwrap() + &std::fs::read_to_string(dir.join("lab.err")).unwrap();
    assert!(lab.0.wait().unwrap().success(), "{out}");
    (dir, seen)
}

/// The value of `series` (name and labels) in a scrape, if there.
fn series_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn the_lab_serves_progress_and_each_runs_figures_labelled() {
    let (dir, seen) = scrape_lab("metrics-lab", LAB_SPEC);
    let value = series_value;
    let labels = |repeat: u32| {
        format!("experiment=\"live-lab\",configuration=\"wal\",workload=\"oltp_point_select\",threads=\"2\",repeat=\"{repeat}\"")
    };
    assert!(seen.iter().any(|t| value(t, "dbbench_lab_runs_planned{experiment=\"live-lab\"}") == Some(2.0)));
    for repeat in [1, 2] {
        let events = format!("dbbench_events_total{{{}}}", labels(repeat));
        let max = seen.iter().filter_map(|t| value(t, &events)).fold(0.0, f64::max);
        assert!(max > 0.0, "no events for repeat {repeat} in {} scrapes: {:?}", seen.len(), seen.last());
        let info = format!("dbbench_lab_run_info{{{}}}", labels(repeat));
        assert!(seen.iter().any(|t| value(t, &info) == Some(1.0)), "{info}");
        let threads = format!("dbbench_threads{{{}}}", labels(repeat));
        assert!(seen.iter().any(|t| value(t, &threads) == Some(2.0)), "{threads}");
    }
    // Progress counts up to the plan.
    let done: Vec<f64> =
        seen.iter().filter_map(|t| value(t, "dbbench_lab_runs_done{experiment=\"live-lab\"}")).collect();
    assert!(done.windows(2).all(|w| w[0] <= w[1]) && done.first() == Some(&0.0), "{done:?}");
    // The stored argv is the run's own (the metrics option was the child's).
    let store = rusqlite::Connection::open(dir.join("dbbench-lab/results.sqlite")).unwrap();
    let argvs: Vec<String> = {
        let mut st = store.prepare("SELECT argv FROM runs").unwrap();
        st.query_map([], |r| r.get::<_, String>(0)).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(argvs.len(), 2);
    assert!(argvs.iter().all(|a| !a.contains("--metrics-listen")), "{argvs:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sharded run (`clients = { shards = 2 }`) after a plain one: while it
/// runs, the lab's endpoint names it (labels, progress) and shows no
/// figures under its labels; it used to keep the previous run's labels
/// and figures, as if that run were still going.
#[test]
fn the_lab_names_a_sharded_run_and_never_shows_the_previous_runs_figures_as_its_own() {
    let spec = r#"
[experiment]
name = "live-shards"
threads = [2]
time = 3
sample_interval = 1
options = { tables = 1, table-size = 500 }

[[configuration]]
name = "wal"
server = "sqlite"
pragmas = { journal_mode = "wal" }

[[workload]]
test = "oltp_point_select"
name = "plain"

[[workload]]
test = "oltp_point_select"
name = "sharded"
clients = { shards = 2, launcher = "local" }
"#;
    let (dir, seen) = scrape_lab("metrics-lab-shards", spec);
    let labels = |w: &str| {
        format!("experiment=\"live-shards\",configuration=\"wal\",workload=\"{w}\",threads=\"2\",repeat=\"1\"")
    };
    let info = |w: &str| format!("dbbench_lab_run_info{{{}}}", labels(w));
    let plain_events = format!("dbbench_events_total{{{}}}", labels("plain"));
    assert!(
        seen.iter().any(|t| series_value(t, &plain_events).is_some_and(|v| v > 0.0)),
        "no figures of the plain run"
    );
    let during: Vec<&String> = seen.iter().filter(|t| series_value(t, &info("sharded")) == Some(1.0)).collect();
    assert!(!during.is_empty(), "the sharded run was never named: {:?}", seen.last());
    for t in &during {
        assert!(!t.contains("workload=\"plain\""), "the plain run's series beside the sharded run's labels:\n{t}");
        assert!(!t.contains("dbbench_events_total{"), "figures during a sharded run:\n{t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
