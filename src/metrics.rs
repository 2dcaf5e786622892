//! Live metrics: `--metrics-listen=ADDR` serves the run's figures as
//! Prometheus text (exposition format 0.0.4) on `http://ADDR/metrics`.
//!
//! # Who waits for whom
//! Nothing here touches a client. The reporting thread (the one that owns
//! the [`crate::collector::Collector`]) builds a [`Snapshot`] at each boundary
//! it collects anyway — the grid gets one every [`PUBLISH_EVERY`] for this
//! (see [`crate::collector::Grid::publishing_every`]) — and hands it over with
//! [`Publisher::publish`], which only *tries* the slot's lock: when the
//! HTTP thread holds it (for the copy of one `Arc`), the snapshot waits in
//! the publisher for the next boundary, and the reporting thread goes on.
//! The HTTP thread renders and writes the text. It serves every
//! connection at once from one poll(2) loop, up to [`MAX_CONNECTIONS`] (a
//! newer one closes the oldest), and closes each at [`REQUEST_DEADLINE`]
//! from its accept, whatever it still sends: a slow or hostile client
//! delays a well-behaved scrape by less than the deadline, and never the run.
//!
//! # What the figures are
//! The counters and the latency histogram count what the final report
//! counts: from the end of the warmup (they stay 0 during it;
//! `dbbench_run_warmup` says so), and they are not reset at
//! `--report-checkpoints` (a Prometheus counter only goes up). So the last
//! scrape after the end of a run without checkpoints shows exactly the
//! report's totals. A scrape sees the figures as of the last boundary
//! collected (at most [`PUBLISH_EVERY`] plus the collector's slack old).
//!
//! # After the run
//! The endpoint keeps answering with the final figures after the final
//! report until it has served them once, or for [`LINGER`], whichever comes
//! first (see [`Server::linger`]); then the process exits. A scraper whose
//! interval is longer than [`LINGER`] may miss the totals: the report has them.
//!
//! # Security
//! The endpoint listens where it is told (`127.0.0.1:PORT` keeps it on this
//! host; `0.0.0.0:PORT` opens it to the network), speaks plain HTTP without
//! authentication, and serves only counts, latencies, limits and the test's
//! name: never an option value that could hold a secret.

use crate::collector::{Counter, LatencyAcc, Period};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::{Duration, Instant};

/// How often the reporting thread publishes a snapshot.
pub const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// Longest wait, after the final report, for a scrape of the final figures.
pub const LINGER: Duration = Duration::from_secs(5);

/// When set, the run writes the address it listens on to this file
/// (created new, mode 0600) instead of announcing it on stderr: how the
/// lab learns where its child serves (see `crate::lab::live`).
pub const ADDRESS_FILE_ENV: &str = "DBBENCH_METRICS_ADDRESS_FILE";

/// Upper bounds (seconds) of the latency histogram's buckets, besides +Inf.
pub const LATENCY_BUCKETS_S: &[f64] =
    &[0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// Every metric the run's endpoint serves: name, type, help. The docs and
/// the Grafana example are checked against this list (tests).
pub const METRICS: &[(&str, &str, &str)] = &[
    ("dbbench_run_info", "gauge", "Always 1; labels: the test (workload) and dbbench's version."),
    ("dbbench_events_total", "counter", "Events (transactions) completed since the end of the warmup."),
    ("dbbench_queries_total", "counter", "Statements since the end of the warmup, by kind (read, write, other)."),
    ("dbbench_errors_total", "counter", "Ignored SQL errors since the end of the warmup."),
    ("dbbench_reconnects_total", "counter", "Reconnects after a lost connection since the end of the warmup."),
    ("dbbench_event_restarts_total", "counter", "Events run again after an ignored error since the end of the warmup."),
    (
        "dbbench_event_latency_seconds",
        "histogram",
        "Event latency since the end of the warmup (HDR histogram, 3 significant digits).",
    ),
    (
        "dbbench_event_latency_percentile_seconds",
        "summary",
        "Event latency percentiles (--percentile) since the end of the warmup.",
    ),
    ("dbbench_threads", "gauge", "Clients running at the last publication."),
    ("dbbench_threads_configured", "gauge", "Clients of the run (--threads)."),
    ("dbbench_run_warmup", "gauge", "1 while the warmup runs (the counters stay 0 until it ends)."),
    ("dbbench_run_finished", "gauge", "1 once the run has ended and these are its final figures."),
    ("dbbench_run_elapsed_seconds", "gauge", "Measured time since the end of the warmup."),
    ("dbbench_run_time_limit_seconds", "gauge", "--time (0: no limit)."),
    ("dbbench_run_event_limit", "gauge", "--events (0: no limit)."),
];

/// The run's figures at one boundary.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Counter totals since the end of the warmup.
    pub counts: crate::collector::Counts,
    /// Events whose latency is in the histogram, and their summed latency.
    pub latency_count: u64,
    /// See `latency_count`.
    pub latency_sum_s: f64,
    /// Cumulative counts at each of [`LATENCY_BUCKETS_S`].
    pub buckets: Vec<u64>,
    /// (percentile 0..100, seconds) for each `--percentile`.
    pub percentiles: Vec<(f64, f64)>,
    /// Clients running, and configured.
    pub threads: u32,
    /// See `threads`.
    pub threads_configured: u32,
    /// The warmup is running.
    pub warmup: bool,
    /// The run has ended; these are its totals.
    pub finished: bool,
    /// Measured seconds so far.
    pub elapsed_s: f64,
    /// `--time` in seconds and `--events` (0: none).
    pub time_limit_s: f64,
    /// See `time_limit_s`.
    pub event_limit: u64,
}

impl Snapshot {
    /// The figures of `measured` (totals since the end of the warmup).
    pub fn fill(&mut self, measured: &Period, percentiles: &[f64]) {
        self.counts = measured.counts;
        self.fill_latency(&measured.latency, percentiles);
    }

    fn fill_latency(&mut self, lat: &LatencyAcc, percentiles: &[f64]) {
        self.latency_count = lat.count;
        self.latency_sum_s = lat.sum_ns as f64 / 1e9;
        self.buckets.clear();
        self.buckets.resize(LATENCY_BUCKETS_S.len(), 0);
        if let Some(h) = lat.histogram() {
            // One pass over the recorded buckets: each HDR bucket counts
            // under every bound its highest value does not exceed.
            for v in h.iter_recorded() {
                let hi_s = v.value_iterated_to() as f64 / 1e6;
                let first = LATENCY_BUCKETS_S.partition_point(|b| *b < hi_s);
                for c in &mut self.buckets[first..] {
                    *c += v.count_since_last_iteration();
                }
            }
        }
        self.percentiles.clear();
        for &p in percentiles {
            if let Some(ms) = lat.percentile_ms(p) {
                self.percentiles.push((p, ms / 1e3));
            }
        }
    }
}

/// Escapes a label value (Prometheus text format).
pub fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

/// The snapshot as Prometheus text; `test` names the workload.
pub fn render(s: &Snapshot, test: &str) -> String {
    let mut out = String::with_capacity(4096);
    let head = |out: &mut String, name: &str| {
        if let Some((_, kind, help)) = METRICS.iter().find(|m| m.0 == name) {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        }
    };
    let line = |out: &mut String, name: &str, v: f64| {
        head(out, name);
        out.push_str(&format!("{name} {}\n", number(v)));
    };
    head(&mut out, "dbbench_run_info");
    out.push_str(&format!(
        "dbbench_run_info{{test=\"{}\",version=\"{}\"}} 1\n",
        label_value(test),
        label_value(crate::VERSION)
    ));
    line(&mut out, "dbbench_events_total", s.counts[Counter::Event as usize] as f64);
    head(&mut out, "dbbench_queries_total");
    for (kind, c) in [("read", Counter::Read), ("write", Counter::Write), ("other", Counter::Other)] {
        out.push_str(&format!("dbbench_queries_total{{kind=\"{kind}\"}} {}\n", s.counts[c as usize]));
    }
    line(&mut out, "dbbench_errors_total", s.counts[Counter::Error as usize] as f64);
    line(&mut out, "dbbench_reconnects_total", s.counts[Counter::Reconnect as usize] as f64);
    line(&mut out, "dbbench_event_restarts_total", s.counts[Counter::Restart as usize] as f64);
    let lat = "dbbench_event_latency_seconds";
    head(&mut out, lat);
    for (b, c) in LATENCY_BUCKETS_S.iter().zip(&s.buckets) {
        out.push_str(&format!("{lat}_bucket{{le=\"{}\"}} {c}\n", number(*b)));
    }
    out.push_str(&format!("{lat}_bucket{{le=\"+Inf\"}} {}\n", s.latency_count));
    out.push_str(&format!("{lat}_sum {}\n{lat}_count {}\n", number(s.latency_sum_s), s.latency_count));
    if !s.percentiles.is_empty() {
        let pct = "dbbench_event_latency_percentile_seconds";
        head(&mut out, pct);
        for (p, v) in &s.percentiles {
            out.push_str(&format!("{pct}{{quantile=\"{}\"}} {}\n", number(p / 100.0), number(*v)));
        }
        out.push_str(&format!("{pct}_sum {}\n{pct}_count {}\n", number(s.latency_sum_s), s.latency_count));
    }
    line(&mut out, "dbbench_threads", s.threads as f64);
    line(&mut out, "dbbench_threads_configured", s.threads_configured as f64);
    line(&mut out, "dbbench_run_warmup", u8::from(s.warmup) as f64);
    line(&mut out, "dbbench_run_finished", u8::from(s.finished) as f64);
    line(&mut out, "dbbench_run_elapsed_seconds", s.elapsed_s);
    line(&mut out, "dbbench_run_time_limit_seconds", s.time_limit_s);
    line(&mut out, "dbbench_run_event_limit", s.event_limit as f64);
    out
}

/// What the HTTP thread serves: the latest text's source, and how many
/// scrapes saw final figures.
struct Slot {
    snapshot: Mutex<Arc<Snapshot>>,
    final_scrapes: AtomicU64,
    finished: AtomicBool,
}

/// A listening endpoint: the run's (serving snapshots) or the lab's.
pub struct Server {
    addr: SocketAddr,
    slot: Arc<Slot>,
}

/// Binds `addr` (`HOST:PORT`, `[V6]:PORT`; port 0 picks a free one); the
/// error is one line without a `FATAL:` prefix.
pub fn bind(addr: &str) -> Result<TcpListener, String> {
    let hint = "use HOST:PORT, e.g. 127.0.0.1:9464";
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| format!("--metrics-listen={addr}: not an address to listen on ({e}); {hint}"))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpListener::bind(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => format!("--metrics-listen={addr}: cannot listen there: {e}"),
        None => format!("--metrics-listen={addr}: the name resolves to no address; {hint}"),
    })
}

/// Longest a connection may take from its accept to the end of its answer:
/// the whole request, not each read. A scraper that sends a byte a second
/// is closed at this deadline however many bytes it still trickles.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);

/// Most connections served at once. A connection accepted beyond it closes
/// the oldest one (the one nearest its deadline, most likely a stalled or
/// hostile client), so a fresh scrape is never queued behind them.
pub const MAX_CONNECTIONS: usize = 128;

/// Longest request head read; a longer one is answered as it stands.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// Serves `body()` on `/metrics` of `listener` on a thread of its own
/// (which lives as long as the process): every connection at once, up to
/// [`MAX_CONNECTIONS`], each within [`REQUEST_DEADLINE`] of its accept,
/// from one poll(2) loop. No client can delay another by more than the
/// deadline, nor the run at all.
pub fn serve(listener: TcpListener, body: impl Fn() -> String + Send + 'static) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    std::thread::Builder::new().name("metrics-http".into()).spawn(move || serve_loop(&listener, &body))?;
    Ok(())
}

/// One connection between its accept and its close.
struct Connection {
    stream: TcpStream,
    accepted: Instant,
    request: Vec<u8>,
    /// The answer and how much of it is written, once the request is read.
    answer: Option<(Vec<u8>, usize)>,
}

/// Where one connection stands after [`serve_step`]: still waiting for the
/// socket (keep it), or answered or gone (close it).
enum ConnectionState {
    Waiting,
    Done,
}

fn serve_loop(listener: &TcpListener, body: &impl Fn() -> String) {
    use std::os::fd::AsRawFd;
    let mut conns: std::collections::VecDeque<Connection> = std::collections::VecDeque::new();
    loop {
        let now = Instant::now();
        // Accepted in order, so the oldest are at the front.
        while conns.front().is_some_and(|c| now >= c.accepted + REQUEST_DEADLINE) {
            conns.pop_front();
        }
        let mut fds = Vec::with_capacity(conns.len() + 1);
        fds.push(libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        for c in &conns {
            let events = if c.answer.is_some() { libc::POLLOUT } else { libc::POLLIN };
            fds.push(libc::pollfd { fd: c.stream.as_raw_fd(), events, revents: 0 });
        }
        let timeout_ms = conns
            .front()
            .map(|c| (c.accepted + REQUEST_DEADLINE).saturating_duration_since(now).as_millis() as i32 + 1)
            .unwrap_or(1000);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures
        // that lives across the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        let mut i = 0;
        conns.retain_mut(|c| {
            i += 1;
            if fds[i].revents == 0 {
                return true;
            }
            matches!(serve_step(c, body), ConnectionState::Waiting)
        });
        if fds[0].revents != 0 {
            accept_all(listener, &mut conns);
        }
    }
}

/// Accepts every pending connection; beyond [`MAX_CONNECTIONS`] the oldest
/// is closed for each new one.
fn accept_all(listener: &TcpListener, conns: &mut std::collections::VecDeque<Connection>) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                if conns.len() >= MAX_CONNECTIONS {
                    conns.pop_front();
                }
                conns.push_back(Connection { stream, accepted: Instant::now(), request: Vec::new(), answer: None });
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(_) => {
                // Out of descriptors (or the like): make room rather than spin.
                conns.pop_front();
                std::thread::sleep(Duration::from_millis(10));
                return;
            }
        }
    }
}

/// Reads what the client sent, or writes what is left of the answer.
fn serve_step(c: &mut Connection, body: &impl Fn() -> String) -> ConnectionState {
    if c.answer.is_none() {
        let mut buf = [0u8; 4096];
        loop {
            match c.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let searched_from = c.request.len().saturating_sub(3);
                    c.request.extend_from_slice(&buf[..n]);
                    if c.request[searched_from..].windows(4).any(|w| w == b"\r\n\r\n")
                        || c.request.len() >= MAX_REQUEST_BYTES
                    {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return ConnectionState::Waiting,
                Err(_) => return ConnectionState::Done,
            }
        }
        c.answer = Some((answer(&c.request, body), 0));
    }
    let Some((bytes, written)) = c.answer.as_mut() else { return ConnectionState::Done };
    while *written < bytes.len() {
        match c.stream.write(&bytes[*written..]) {
            Ok(0) => return ConnectionState::Done,
            Ok(n) => *written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return ConnectionState::Waiting,
            Err(_) => return ConnectionState::Done,
        }
    }
    ConnectionState::Done
}

/// The answer (Connection: close) to the request head `req`.
fn answer(req: &[u8], body: &impl Fn() -> String) -> Vec<u8> {
    let first = String::from_utf8_lossy(req.split(|b| *b == b'\n').next().unwrap_or_default()).into_owned();
    let mut parts = first.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, text) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body()),
        ("GET" | "HEAD", _) => ("404 Not Found", "text/plain; charset=utf-8", "dbbench serves /metrics\n".to_string()),
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", "GET /metrics\n".to_string()),
    };
    let mut resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    )
    .into_bytes();
    if method != "HEAD" {
        resp.extend_from_slice(text.as_bytes());
    }
    resp
}

impl Server {
    /// Serves `first` (the figures before anything is measured) on
    /// `listener` for the run of test `test`.
    pub fn start(listener: TcpListener, test: &str, first: Snapshot) -> Result<Server, String> {
        let addr = listener.local_addr().map_err(|e| format!("FATAL: --metrics-listen: {e}"))?;
        let slot = Arc::new(Slot {
            snapshot: Mutex::new(Arc::new(first)),
            final_scrapes: AtomicU64::new(0),
            finished: AtomicBool::new(false),
        });
        let s = slot.clone();
        let test = test.to_string();
        serve(listener, move || {
            let snap = s.snapshot.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let text = render(&snap, &test);
            if snap.finished {
                s.final_scrapes.fetch_add(1, Ordering::Relaxed);
            }
            text
        })
        .map_err(|e| format!("FATAL: --metrics-listen: cannot start its thread: {e}"))?;
        Ok(Server { addr, slot })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The reporting thread's handle for publishing.
    pub fn publisher(&self) -> Publisher {
        Publisher { slot: self.slot.clone(), pending: None }
    }

    /// Waits (after the final figures were published) until a scrape has
    /// served them, or for [`LINGER`], whichever comes first.
    pub fn linger(&self) {
        if !self.slot.finished.load(Ordering::Relaxed) {
            return;
        }
        let until = Instant::now() + LINGER;
        while self.slot.final_scrapes.load(Ordering::Relaxed) == 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Publishes snapshots to a [`Server`] without waiting for its thread.
pub struct Publisher {
    slot: Arc<Slot>,
    pending: Option<Arc<Snapshot>>,
}

impl Publisher {
    /// Hands `s` over, or keeps it for the next call when the HTTP thread
    /// holds the slot (the reporting thread never waits). A final snapshot
    /// is always handed over: the run has ended, nothing is kept waiting.
    pub fn publish(&mut self, s: Snapshot) {
        let finished = s.finished;
        self.pending = Some(Arc::new(s));
        let guard = if finished {
            Some(self.slot.snapshot.lock().unwrap_or_else(|p| p.into_inner()))
        } else {
            match self.slot.snapshot.try_lock() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            }
        };
        if let (Some(mut g), Some(p)) = (guard, self.pending.take()) {
            *g = p;
            if finished {
                self.slot.finished.store(true, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_end_at_the_count() {
        let mut lat = LatencyAcc::default();
        for us in [50u64, 150, 900, 1_500, 40_000, 3_000_000] {
            lat.record(us * 1000);
        }
        let mut s = Snapshot::default();
        s.fill_latency(&lat, &[50.0]);
        let at = |b: f64| s.buckets[LATENCY_BUCKETS_S.iter().position(|x| *x == b).unwrap()];
        assert_eq!(at(0.0001), 1);
        assert_eq!(at(0.0002), 2);
        assert_eq!(at(0.001), 3);
        assert_eq!(at(0.002), 4);
        assert_eq!(at(0.05), 5);
        assert_eq!(at(2.0), 5);
        assert_eq!(at(5.0), 6);
        assert_eq!(s.latency_count, 6);
        assert!(s.buckets.windows(2).all(|w| w[0] <= w[1]));
        let text = render(&s, "oltp \"x\"");
        assert!(text.contains("dbbench_event_latency_seconds_bucket{le=\"+Inf\"} 6\n"), "{text}");
        assert!(text.contains("test=\"oltp \\\"x\\\"\""), "{text}");
        assert!(text.contains("dbbench_event_latency_percentile_seconds{quantile=\"0.5\"} 0.0009"), "{text}");
    }

    /// GET /metrics on `addr`: the time to the whole answer, and its status line.
    fn scrape(addr: SocketAddr) -> (Duration, String) {
        let t0 = Instant::now();
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut resp = String::new();
        let _ = c.read_to_string(&mut resp);
        (t0.elapsed(), resp.lines().next().unwrap_or("").to_string())
    }

    #[test]
    fn trickling_and_idle_clients_never_delay_a_scrape_beyond_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, || "dbbench_up 1\n".to_string()).unwrap();
        // 100 hostile clients: half trickle a request a byte at a time, half
        // send nothing; more of them than MAX_CONNECTIONS would not be
        // slower, only evict each other sooner.
        let mut hostile: Vec<TcpStream> = (0..100).map(|_| TcpStream::connect(addr).unwrap()).collect();
        for c in hostile.iter_mut().step_by(2) {
            c.write_all(b"GET /metr").unwrap();
        }
        let stop = Instant::now() + Duration::from_secs(5);
        let trickler = std::thread::spawn(move || {
            let mut closed_by_server = 0;
            while Instant::now() < stop {
                for c in hostile.iter_mut().step_by(2) {
                    if c.write_all(b"i").is_err() {
                        closed_by_server += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            closed_by_server
        });
        let mut worst = Duration::ZERO;
        while Instant::now() + Duration::from_millis(300) < stop {
            let (took, status) = scrape(addr);
            assert_eq!(status, "HTTP/1.1 200 OK");
            worst = worst.max(took);
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(worst < REQUEST_DEADLINE, "a scrape took {worst:?} among trickling clients");
        // The trickling ones were closed at their deadline, not served for ever.
        assert!(trickler.join().unwrap() > 0, "no trickling client was ever closed");
    }

    /// Fuzz: random request heads (garbage, cut-off request lines, NULs,
    /// lone CRs, invalid UTF-8, heads past the 16 KiB cap) sent in pieces,
    /// some abandoned half-way: each is answered with a status line or
    /// closed, within the deadline, and the endpoint still serves a clean
    /// scrape afterwards (a panic would have ended its thread).
    #[test]
    fn random_requests_are_answered_or_closed_and_never_stop_the_endpoint() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, || "dbbench_up 1\n".to_string()).unwrap();
        let pieces: [&[u8]; 16] = [
            b"GET ",
            b"HEAD ",
            b"POST ",
            b"/metrics",
            b"/",
            b"?a=1&b",
            b" HTTP/1.1",
            b" HTTP/1.0",
            b"\r\n",
            b"\r\n\r\n",
            b"\n",
            b"\r",
            b"\0",
            b"Host: x\r\n",
            "\u{e9}\u{1f600}".as_bytes(),
            b"\xff\xfe\xc3",
        ];
        let mut r = crate::test_rand::Lcg(0x4e77);
        for round in 0..300 {
            let mut req = Vec::new();
            for _ in 0..r.below(12) {
                if r.below(8) == 0 {
                    req.extend((0..r.below(64)).map(|_| r.next() as u8));
                } else {
                    req.extend_from_slice(pieces[r.below(pieces.len())]);
                }
            }
            if round % 50 == 7 {
                req.extend(std::iter::repeat_n(b'a', MAX_REQUEST_BYTES + 4000));
            }
            let t0 = Instant::now();
            let mut c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(REQUEST_DEADLINE * 2)).unwrap();
            c.set_write_timeout(Some(REQUEST_DEADLINE * 2)).unwrap();
            let cut = if req.is_empty() { 0 } else { r.below(req.len() + 1) };
            let _ = c.write_all(&req[..cut]);
            let _ = c.write_all(&req[cut..]);
            if r.below(5) == 0 {
                continue; // abandoned: closed by dropping
            }
            let _ = c.shutdown(std::net::Shutdown::Write);
            let mut resp = Vec::new();
            let _ = c.read_to_end(&mut resp);
            assert!(t0.elapsed() < REQUEST_DEADLINE + Duration::from_secs(1), "round {round}: {:?}", t0.elapsed());
            assert!(
                resp.is_empty() || resp.starts_with(b"HTTP/1.1 "),
                "round {round}: {:?}",
                &resp[..resp.len().min(80)]
            );
        }
        let (took, status) = scrape(addr);
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(took < REQUEST_DEADLINE, "{took:?}");
    }

    #[test]
    fn a_connection_flood_beyond_the_bound_leaves_fresh_scrapes_served() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        serve(listener, || "dbbench_up 1\n".to_string()).unwrap();
        let _idle: Vec<TcpStream> = (0..MAX_CONNECTIONS * 2).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let (took, status) = scrape(addr);
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(took < REQUEST_DEADLINE, "{took:?}");
    }

    #[test]
    fn every_served_metric_is_declared_and_counters_end_in_total() {
        let mut s = Snapshot::default();
        s.fill_latency(&LatencyAcc::default(), &[95.0]);
        s.percentiles.push((95.0, 0.001));
        let text = render(&s, "t");
        for (name, kind, _) in METRICS {
            assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name} missing:\n{text}");
            assert_eq!(*kind == "counter", name.ends_with("_total"), "{name}");
        }
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            let base = ["_bucket", "_sum", "_count"].iter().fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
            assert!(METRICS.iter().any(|m| m.0 == name || m.0 == base), "undeclared {name}");
        }
    }
}
