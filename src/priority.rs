//! Scheduling priority for the thread that reports, and for a client that
//! holds up a report.
//!
//! Why: at thousands of clients against a server on the same few CPUs
//! (4096 PostgreSQL clients on 2 vCPUs: a backend process and a client
//! thread each, ~8,000 runnable tasks), a task at the default priority gets
//! the CPU every few seconds. The reporting thread needs a few ms per tick;
//! raised (see below) it is not queued behind the clients. But each line
//! waits for every client's statistics lock (an interval must count every
//! event that ended in it), and a client preempted while recording an
//! event holds its lock until the scheduler runs it again. So while the
//! reporting thread waits for such a client, it lends the client a
//! priority for that moment (what a priority-inheriting lock would do;
//! Rust's `Mutex` is not one). The client then finishes the few hundred
//! instructions of its recording and is put back at its own priority as
//! soon as the reporting thread holds the lock, so what is measured — the
//! clients' and the server's share of the CPU — stays as it was.
//!
//! The raised priority, the reporting thread's own and the one it lends,
//! is a real-time one (`SCHED_FIFO`, its lowest level) where the process
//! may set it, and nice −10 otherwise. Measured at 1024 PostgreSQL clients
//! on 2 vCPUs (kernel 6.18, EEVDF): at nice −10 (weight ~9 clients' among
//! ~2,000 runnable tasks) the reporting thread got the CPU 2 s after the
//! clients' release, and a client lent nice −10 still waited up to 2.5 s
//! for the CPU; lines came out up to 6 s late. A real-time task runs as
//! soon as it is runnable, ahead of every normal one: lines came within
//! 3 ms of their tick. The reporting thread sleeps between ticks and works
//! a few ms per tick, so it takes no more CPU from the clients than before,
//! only sooner; threads it starts run under the normal policy.
//!
//! Raising a priority needs the right to (root, CAP_SYS_NICE, or an
//! RLIMIT_NICE / RLIMIT_RTPRIO that allows it); without it nothing changes
//! but when lines print (the end-of-run warning says how late they were,
//! and how to give dbbench the right). Linux applies `setpriority` and
//! `sched_setscheduler` to the one thread `tid`.

/// The nice value of the reporting thread, and of a client while the
/// reporting thread waits for it.
const RAISED_NICE: libc::c_int = -10;

/// The calling thread's kernel id (0 where there is none).
pub fn current_thread() -> libc::pid_t {
    // SAFETY: gettid takes no argument and cannot fail.
    unsafe { libc::gettid() }
}

/// Raises the calling thread's priority as a client's is lent (real-time,
/// else nice −10), where the process may, until the guard is dropped.
/// Threads it starts meanwhile run under the normal policy (real-time is
/// reset on fork); under the nice fallback they inherit nice −10, so a
/// thread that must run at the clients' priority sets its own back (see
/// [`set_current_nice`]).
pub fn raise_current_thread() -> Option<Lent> {
    Lent::raise(current_thread(), libc::SCHED_RESET_ON_FORK)
}

/// The calling thread's nice value (None if it cannot be read).
pub fn current_nice() -> Option<libc::c_int> {
    get_nice(current_thread())
}

/// Sets the calling thread's nice value back to `nice` (lowering a
/// priority needs no right): for a thread started by the raised reporting
/// thread that must run at the clients' priority.
pub fn set_current_nice(nice: libc::c_int) {
    let _ = set_nice(current_thread(), nice);
}

/// Thread `tid`'s priority raised for as long as this guard lives (see the
/// module header); restored when it is dropped.
#[must_use = "the priority is restored when the guard is dropped"]
pub struct Lent {
    tid: libc::pid_t,
    how: Raised,
}

/// What a [`Lent`] changed, to undo.
enum Raised {
    /// The thread ran under `SCHED_OTHER` and now runs under `SCHED_FIFO`.
    RealTime,
    /// The thread's nice value was this.
    Nice(libc::c_int),
}

impl Lent {
    /// Raises thread `tid` (a thread of this process, running under the
    /// normal policy) to a real-time priority, or else to nice −10 if it is
    /// below that, where the process may; None otherwise (nothing to
    /// restore).
    pub fn to(tid: libc::pid_t) -> Option<Lent> {
        Lent::raise(tid, 0)
    }

    /// [`Lent::to`], with `flags` or-ed into the real-time policy.
    fn raise(tid: libc::pid_t, flags: libc::c_int) -> Option<Lent> {
        if tid <= 0 {
            return None;
        }
        // SAFETY: sched_getscheduler takes a plain integer; −1 is an error.
        if unsafe { libc::sched_getscheduler(tid) } != libc::SCHED_OTHER {
            return None;
        }
        if set_policy(tid, libc::SCHED_FIFO | flags, 1) {
            return Some(Lent { tid, how: Raised::RealTime });
        }
        let nice = get_nice(tid)?;
        (nice > RAISED_NICE && set_nice(tid, RAISED_NICE)).then_some(Lent { tid, how: Raised::Nice(nice) })
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        // Lowering a priority needs no right; the thread may have ended.
        // Back under SCHED_OTHER the thread keeps its own nice value.
        match self.how {
            Raised::RealTime => {
                let _ = set_policy(self.tid, libc::SCHED_OTHER, 0);
            }
            Raised::Nice(nice) => {
                let _ = set_nice(self.tid, nice);
            }
        }
    }
}

fn set_policy(tid: libc::pid_t, policy: libc::c_int, priority: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` lives across the call, which only reads it; a refusal
    // is only an error code.
    unsafe { libc::sched_setscheduler(tid, policy, &param) == 0 }
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
        // SAFETY: a plain integer argument.
        let policy = || unsafe { libc::sched_getscheduler(tid) };
        assert_eq!(policy(), libc::SCHED_OTHER);
        match Lent::to(tid) {
            Some(lent) => {
                match lent.how {
                    Raised::RealTime => assert_eq!(policy(), libc::SCHED_FIFO),
                    Raised::Nice(_) => assert_eq!(get_nice(tid), Some(RAISED_NICE)),
                }
                drop(lent);
                assert_eq!(policy(), libc::SCHED_OTHER);
                assert_eq!(get_nice(tid), Some(own));
            }
            None => assert_eq!((policy(), get_nice(tid)), (libc::SCHED_OTHER, Some(own))),
        }
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
