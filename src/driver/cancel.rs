//! Cancelling at a timeout: a statement run under a watchdog thread that
//! cancels it on the server through a `Canceller` (`tpch`, `querydiff`).

use super::Canceller;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `work` under a watchdog that cancels it on the server once `timeout`
/// has passed (retrying every second while a cancel cannot be delivered).
/// Returns what `work` returned and whether the watchdog fired.
pub(crate) fn with_watchdog<T>(
    canceller: Option<&dyn Canceller>,
    timeout: Option<Duration>,
    work: impl FnOnce() -> T,
) -> (T, bool) {
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let fired = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        if let (Some(limit), Some(c)) = (timeout, canceller) {
            let fired = &fired;
            s.spawn(move || {
                let mut wait = limit;
                while let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(wait) {
                    // Still running: stop it on the server.
                    fired.store(true, Ordering::SeqCst);
                    match c.cancel() {
                        Ok(()) => wait = Duration::from_secs(5),
                        Err(e) => {
                            eprintln!("warning: could not cancel a query at its timeout ({e}); retrying every second");
                            wait = Duration::from_secs(1);
                        }
                    }
                }
            });
        }
        let r = work();
        let _ = done_tx.send(());
        r
    });
    (out, fired.load(Ordering::SeqCst))
}
