//! Clients multiplexed over a few OS threads ("workers").
//!
//! Each client runs its whole life — Lua state, `thread_init`, events,
//! `thread_done`, its connections — as a stackful coroutine (the
//! `corosensei` crate) on one worker thread. Nothing in the client knows:
//! where a thread-per-client client would block in `poll` waiting for the
//! database, the driver calls [`wait_fd`], which suspends the coroutine and
//! lets the worker run another client; [`sleep`] does the same for timed
//! waits. The worker sleeps in `epoll_wait` only when every one of its
//! clients waits.
//!
//! Why: with one OS thread per client every query costs the client a sleep
//! and a wake-up in the kernel scheduler, and at thousands of clients the
//! kernel juggles thousands of threads; with a few workers one `epoll_wait`
//! returns many replies and most queries cost no context switch.
//!
//! Limits: a driver call that blocks without going through [`wait_fd`]
//! (PostgreSQL, SQLite, the `mysql` crate) blocks every client of its
//! worker, so the engine uses workers only for the native MySQL client.
//! A coroutine never moves between threads (Lua states are not `Send`).
//! When multiplexing wins, and when it loses, is measured in
//! ARCHITECTURE.md ("The client model").

use std::cell::Cell;
use std::collections::HashMap;
use std::io;
use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

/// Why a client suspended itself.
#[derive(Debug, Clone, Copy)]
enum Park {
    /// Until `fd` is ready for `events` (`libc::POLLIN` / `libc::POLLOUT`).
    Fd(RawFd, libc::c_short),
    /// Until the instant has passed.
    Until(Instant),
}

type ClientYielder = Yielder<(), Park>;

thread_local! {
    /// The running client's yielder; null on a plain thread or while the
    /// worker itself runs.
    static CURRENT: Cell<*const ClientYielder> = const { Cell::new(std::ptr::null()) };
    /// Descriptors that left the worker's epoll set behind (closed).
    static CLOSED: Cell<Vec<RawFd>> = const { Cell::new(Vec::new()) };
}

/// True when the caller runs as a multiplexed client.
pub fn in_client() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

/// Suspends the running client with `why`; false on a plain thread.
fn park(why: Park) -> bool {
    let y = CURRENT.with(Cell::get);
    if y.is_null() {
        return false;
    }
    // The random generator is thread-local; each client has its own
    // sequence, so it travels with the client.
    let rng = crate::rand::thread_state();
    // SAFETY: CURRENT is set by the client's own coroutine body (below) to
    // its yielder, which lives on that coroutine's stack for as long as the
    // body runs, and we are running inside that body now.
    unsafe { (*y).suspend(why) };
    // Other clients ran meanwhile and set CURRENT (and the generator) to theirs.
    CURRENT.with(|c| c.set(y));
    crate::rand::set_thread_state(rng);
    true
}

/// Waits until `fd` is ready for `events`: suspends the client when
/// multiplexed, else blocks in `poll` (no timeout either way: a hung server
/// is the run deadline's and `--forced-shutdown`'s business).
pub fn wait_fd(fd: RawFd, events: libc::c_short) -> io::Result<()> {
    if park(Park::Fd(fd, events)) {
        return Ok(());
    }
    crate::syscall::poll_one(fd, events)
}

/// Tells the worker that `fd` is about to be closed (its number may be
/// reused by another connection). A no-op on a plain thread.
pub fn forget_fd(fd: RawFd) {
    if in_client() {
        CLOSED.with(|c| {
            let mut v = c.take();
            v.push(fd);
            c.set(v);
        });
    }
}

/// Sleeps without blocking the other clients of the worker.
pub fn sleep(d: Duration) {
    if !park(Park::Until(Instant::now() + d)) {
        std::thread::sleep(d);
    }
}

/// One client on a worker.
type Client<R> = Coroutine<(), Park, R, DefaultStack>;

/// Runs `clients` (each a closure run to completion as a coroutine with a
/// `stack_size`-byte stack) on the calling thread until all have returned;
/// returns their results in order. `on_done(i, &result)` is called as soon
/// as client `i` finishes.
pub fn run_clients<R: 'static>(
    clients: Vec<Box<dyn FnOnce() -> R>>,
    stack_size: usize,
    mut on_done: impl FnMut(usize, &R),
) -> io::Result<Vec<R>> {
    let n = clients.len();
    let mut coros: Vec<Option<Client<R>>> = Vec::with_capacity(n);
    for f in clients {
        let stack = DefaultStack::new(stack_size.max(64 * 1024))?;
        coros.push(Some(Coroutine::with_stack(stack, move |y: &ClientYielder, ()| {
            CURRENT.with(|c| c.set(y as *const ClientYielder));
            f()
        })));
    }
    let mut results: Vec<Option<R>> = (0..n).map(|_| None).collect();
    let ep = Epoll::new()?;
    // fd -> (client waiting on it, or usize::MAX; events registered).
    let mut fds: HashMap<RawFd, (usize, u32)> = HashMap::new();
    let mut timers: Vec<(Instant, usize)> = Vec::new();
    let mut runnable: Vec<usize> = (0..n).collect();
    let mut next: Vec<usize> = Vec::with_capacity(n);
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut left = n;
    while left > 0 {
        for i in runnable.drain(..) {
            let Some(co) = coros[i].as_mut() else { continue };
            let r = co.resume(());
            CURRENT.with(|c| c.set(std::ptr::null()));
            for fd in CLOSED.with(Cell::take) {
                if fds.remove(&fd).is_some() {
                    // Closing removes it from the set; this covers a dup'ed fd.
                    let _ = ep.ctl(libc::EPOLL_CTL_DEL, fd, 0);
                }
            }
            match r {
                CoroutineResult::Yield(Park::Fd(fd, ev)) => {
                    let want = if ev & libc::POLLOUT != 0 { EPOLL_IN_OUT } else { EPOLL_IN };
                    match fds.get_mut(&fd) {
                        Some(slot) => {
                            if slot.1 != want {
                                ep.ctl(libc::EPOLL_CTL_MOD, fd, want).map_err(|e| abandon(&mut coros, e))?;
                                slot.1 = want;
                            }
                            slot.0 = i;
                        }
                        None => {
                            ep.ctl(libc::EPOLL_CTL_ADD, fd, want).map_err(|e| abandon(&mut coros, e))?;
                            fds.insert(fd, (i, want));
                        }
                    }
                }
                CoroutineResult::Yield(Park::Until(t)) => timers.push((t, i)),
                CoroutineResult::Return(r) => {
                    on_done(i, &r);
                    results[i] = Some(r);
                    coros[i] = None;
                    left -= 1;
                }
            }
        }
        if left == 0 {
            break;
        }
        // Wait for replies, or the earliest timer.
        let now = Instant::now();
        let timeout = timers
            .iter()
            .map(|(t, _)| t.saturating_duration_since(now))
            .min()
            .map_or(-1, |d| d.as_millis().min(1000) as i32 + i32::from(d.subsec_micros() % 1000 != 0));
        let got = ep.wait(&mut events, timeout).map_err(|e| abandon(&mut coros, e))?;
        for e in &events[..got] {
            let fd = e.u64 as RawFd;
            if let Some(slot) = fds.get_mut(&fd) {
                // Spurious or stale readiness resumes the client, which then
                // finds nothing to read and parks again: harmless.
                if slot.0 != usize::MAX {
                    next.push(slot.0);
                    slot.0 = usize::MAX;
                }
            }
        }
        if !timers.is_empty() {
            let now = Instant::now();
            timers.retain(|&(t, i)| {
                if t <= now {
                    next.push(i);
                    false
                } else {
                    true
                }
            });
        }
        std::mem::swap(&mut runnable, &mut next);
    }
    Ok(results.into_iter().map(|r| r.expect("every client returned")).collect())
}

/// On a fatal error with clients still suspended: leaks them instead of
/// dropping them, because dropping a suspended coroutine unwinds its stack,
/// which runs through LuaJIT frames that must not be unwound from outside.
/// The caller ends the process.
fn abandon<R>(coros: &mut Vec<Option<Client<R>>>, e: io::Error) -> io::Error {
    std::mem::forget(std::mem::take(coros));
    e
}

const EPOLL_IN: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLET) as u32;
const EPOLL_IN_OUT: u32 = EPOLL_IN | libc::EPOLLOUT as u32;

/// An epoll instance, closed on drop.
struct Epoll(RawFd);

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll(fd))
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: fd as u64 };
        // SAFETY: valid epoll fd and event struct.
        if unsafe { libc::epoll_ctl(self.0, op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        loop {
            // SAFETY: the buffer is valid for `events.len()` entries.
            let n = unsafe { libc::epoll_wait(self.0, events.as_mut_ptr(), events.len() as i32, timeout_ms) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::io::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::rc::Rc;

    /// Ping-pong over socket pairs: each client waits for its peer's byte
    /// through `wait_fd`, so a client that blocked the thread instead of
    /// suspending would deadlock (caught by `bounded`).
    /// Ends the test process if `f` has not returned within `secs`: a
    /// scheduler bug shows as a deadlock, which must fail, not hang.
    fn bounded<T>(secs: u64, f: impl FnOnce() -> T) -> T {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d = done.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            if !d.load(std::sync::atomic::Ordering::SeqCst) {
                eprintln!("sched test deadlocked (no progress in {secs} s)");
                std::process::exit(101);
            }
        });
        let r = f();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        r
    }

    #[test]
    fn clients_interleave_on_one_thread() {
        let log = Rc::new(std::cell::RefCell::new(Vec::new()));
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        let read_one = |s: &mut UnixStream| loop {
            let mut x = [0u8; 1];
            match s.read(&mut x) {
                Ok(1) => return x[0],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_fd(s.as_raw_fd(), libc::POLLIN).unwrap(),
                other => panic!("unexpected read result {other:?}"),
            }
        };
        let (l1, l2) = (log.clone(), log.clone());
        let mut a = Some(a);
        let mut b = Some(b);
        let clients: Vec<Box<dyn FnOnce() -> u32>> = vec![
            Box::new(move || {
                let mut s = a.take().unwrap();
                for i in 0..3u8 {
                    let got = read_one(&mut s);
                    l1.borrow_mut().push(format!("a got {got}"));
                    s.write_all(&[got + i + 1]).unwrap();
                }
                1
            }),
            Box::new(move || {
                let mut s = b.take().unwrap();
                s.write_all(&[10]).unwrap();
                for _ in 0..3 {
                    let got = read_one(&mut s);
                    l2.borrow_mut().push(format!("b got {got}"));
                    if got < 14 {
                        s.write_all(&[got]).unwrap();
                    }
                }
                2
            }),
        ];
        let mut done = Vec::new();
        let r = bounded(20, || run_clients(clients, 128 * 1024, |i, _| done.push(i)).unwrap());
        assert_eq!(r, vec![1, 2]);
        assert_eq!(*log.borrow(), ["a got 10", "b got 11", "a got 11", "b got 13", "a got 13", "b got 16"]);
        assert_eq!(done.len(), 2);
    }

    #[test]
    fn sleeping_client_does_not_block_the_others() {
        let t0 = Instant::now();
        let clients: Vec<Box<dyn FnOnce() -> Duration>> = (0..20)
            .map(|_| {
                Box::new(move || {
                    sleep(Duration::from_millis(50));
                    t0.elapsed()
                }) as Box<dyn FnOnce() -> Duration>
            })
            .collect();
        let r = run_clients(clients, 64 * 1024, |_, _| {}).unwrap();
        // Twenty 50 ms sleeps overlapped: far less than their 1 s sum.
        assert!(r.iter().all(|d| *d >= Duration::from_millis(50) && *d < Duration::from_millis(500)), "{r:?}");
        assert!(!in_client());
    }
}
