//! Scheduling priority for the thread that reports, and for a client that
//! holds up a report.
//!
//! Why: at thousands of clients against a server on the same few CPUs
//! (4096 PostgreSQL clients on 2 vCPUs: a backend process and a client
//! thread each, ~8,000 runnable tasks), a task at the default priority gets
//! the CPU every few seconds. The reporting thread needs a few ms per tick;
//! raised (nice −10) it is not queued behind the clients. But each line
//! waits for every client's statistics lock (an interval must count every
//! event that ended in it), and a client preempted while recording an
//! event holds its lock until the scheduler runs it again: measured, lines
//! 10–22 s late. So while the reporting thread waits for such a client, it
//! lends the client its priority for that moment (what a priority-
//! inheriting lock would do; Rust's `Mutex` is not one). The client then
//! finishes the few hundred instructions of its recording and is put back
//! at its own priority as soon as the reporting thread holds the lock, so
//! what is measured — the clients' and the server's share of the CPU —
//! stays as it was.
//!
//! Raising a priority needs the right to (root, CAP_SYS_NICE, or an
//! RLIMIT_NICE that allows it); without it nothing changes but when lines
//! print (the end-of-run warning says how late they were, and how to give
//! dbbench the right). Linux applies `setpriority(PRIO_PROCESS, tid)` to
//! the one thread `tid`.

/// The nice value of the reporting thread, and of a client while the
/// reporting thread waits for it.
const RAISED_NICE: libc::c_int = -10;

/// The calling thread's kernel id (0 where there is none).
pub fn current_thread() -> libc::pid_t {
    // SAFETY: gettid takes no argument and cannot fail.
    unsafe { libc::gettid() }
}

/// Raises the calling thread's priority, where the process may; whether it
/// did. Threads it starts afterwards inherit the raised priority.
pub fn raise_current_thread() -> bool {
    set_nice(current_thread(), RAISED_NICE)
}

/// Thread `tid`'s priority raised for as long as this guard lives (see the
/// module header); restored when it is dropped.
pub struct Lent {
    tid: libc::pid_t,
    nice: libc::c_int,
}

impl Lent {
    /// Raises thread `tid` (a thread of this process) if it is below the
    /// raised priority and the process may; None otherwise (nothing to
    /// restore).
    pub fn to(tid: libc::pid_t) -> Option<Lent> {
        if tid <= 0 {
            return None;
        }
        let nice = get_nice(tid)?;
        (nice > RAISED_NICE && set_nice(tid, RAISED_NICE)).then_some(Lent { tid, nice })
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        // Lowering a priority needs no right; the thread may have ended.
        let _ = set_nice(self.tid, self.nice);
    }
}

fn set_nice(tid: libc::pid_t, nice: libc::c_int) -> bool {
    // SAFETY: setpriority takes plain integers and touches no memory of
    // ours; a refusal is only an error code.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) == 0 }
}

fn get_nice(tid: libc::pid_t) -> Option<libc::c_int> {
    // SAFETY: as above. getpriority may return −1 as a value: errno, cleared
    // before, tells an error apart.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        (nice != -1 || *libc::__errno_location() == 0).then_some(nice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lent priority is the raised one while the guard lives and the
    /// thread's own after; without the right (not root), nothing changes.
    #[test]
    fn a_lent_priority_is_given_back() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(current_thread()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        let own = get_nice(tid).unwrap();
        match Lent::to(tid) {
            Some(lent) => {
                assert_eq!(get_nice(tid), Some(RAISED_NICE));
                drop(lent);
                assert_eq!(get_nice(tid), Some(own));
            }
            None => assert_eq!(get_nice(tid), Some(own)),
        }
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
