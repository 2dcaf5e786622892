//! Progress of long `prepare` commands: rows written by the bulk-insert API
//! (counted at each flush), shown once a second on stderr when stderr is a
//! terminal, with a bar and an ETA when the workload's `--tables` and
//! `--table_size` tell the total.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Rows written by bulk inserts in this process.
static ROWS: AtomicU64 = AtomicU64::new(0);
/// A progress line is on the terminal now.
static DRAWN: AtomicBool = AtomicBool::new(false);

/// Clears the progress line (if one is drawn) so that a message printed
/// next starts on a clean line; the display redraws it a second later.
pub fn clear_line() {
    if DRAWN.swap(false, Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}

/// Adds rows written by one bulk-insert flush.
pub fn add_rows(n: u64) {
    ROWS.fetch_add(n, Ordering::Relaxed);
}

/// A running progress display; stops (and clears its line) when dropped.
pub struct Progress {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts the display if stderr is a terminal; `total` rows if known.
    pub fn start(total: Option<u64>) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = std::io::stderr().is_terminal().then(|| {
            let stop = stop.clone();
            thread::spawn(move || show(total, &stop))
        });
        Progress { stop, handle }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn show(total: Option<u64>, stop: &AtomicBool) {
    let start = Instant::now();
    let base = ROWS.load(Ordering::Relaxed);
    while !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(100));
        let secs = start.elapsed().as_secs_f64();
        // Draw only for prepares that take a while, once per second.
        if secs < 1.0 || (secs.fract() > 0.1) {
            continue;
        }
        let rows = ROWS.load(Ordering::Relaxed) - base;
        let rate = rows as f64 / secs;
        let line = match total {
            Some(t) if t > 0 => {
                let frac = (rows as f64 / t as f64).min(1.0);
                let filled = (frac * 30.0) as usize;
                let eta =
                    if rate > 0.0 { format!("{:.0}s", (t.saturating_sub(rows)) as f64 / rate) } else { "?".into() };
                format!(
                    "[{}{}] {:>3.0}% {rows}/{t} rows, {rate:.0} rows/s, ETA {eta}",
                    "#".repeat(filled),
                    " ".repeat(30 - filled),
                    frac * 100.0
                )
            }
            _ => format!("{rows} rows, {rate:.0} rows/s"),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        DRAWN.store(true, Ordering::Relaxed);
    }
    clear_line();
}
