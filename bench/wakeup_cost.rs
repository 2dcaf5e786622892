//! What one wake-up costs on this machine: a 20-byte request and its reply
//! over a unix socket pair between two threads, each waiting for the other
//! in `poll` as dbbench's MySQL client does, with both threads on one CPU
//! and then on two different CPUs.
//!
//!     cargo run --release --example wakeup-cost
//!
//! On bare metal the two figures are close. On a virtual machine a wake-up
//! on another vCPU is an inter-processor interrupt that the hypervisor
//! delivers, and it can cost far more than everything else a query does on
//! the client (docs/performance.md, "The client's cost per query");
//! `bench/sysbench-vs-dbbench.sh` prints both figures in its header.
//!
//! Each case runs for about one second (at most 200 000 round trips); CPU
//! time is the whole process's (both threads), from `getrusage`.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

const MESSAGE: usize = 20;
const MAX_ROUND_TRIPS: u32 = 200_000;
const CASE_TIME: Duration = Duration::from_secs(1);

fn check(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the pointer and size
    // describe it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), "sched_setaffinity")?;
    }
    Ok(())
}

/// Waits in `poll` until `fd` is readable, then reads one message.
/// Returns false at end of file.
fn wait_and_read(fd: RawFd, buf: &mut [u8; MESSAGE]) -> io::Result<bool> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd; buf is MESSAGE writable bytes.
    unsafe {
        check(libc::poll(&mut p, 1, -1), "poll")?;
        let n = check(libc::read(fd, buf.as_mut_ptr().cast(), MESSAGE) as libc::c_int, "read")?;
        Ok(n > 0)
    }
}

fn write_message(fd: RawFd, buf: &[u8; MESSAGE]) -> io::Result<()> {
    // SAFETY: buf is MESSAGE readable bytes.
    check(unsafe { libc::write(fd, buf.as_ptr().cast(), MESSAGE) } as libc::c_int, "write")?;
    Ok(())
}

fn process_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct.
    let r = unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// Round trips between a thread on `client_cpu` and an echo thread on
/// `server_cpu`: (wall time, process CPU time) per round trip.
fn round_trip(client_cpu: usize, server_cpu: usize) -> io::Result<(Duration, Duration)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds has room for the two descriptors.
    check(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) }, "socketpair")?;
    let [client, server] = fds;
    let echo = std::thread::spawn(move || -> io::Result<()> {
        pin(server_cpu)?;
        let mut buf = [0u8; MESSAGE];
        while wait_and_read(server, &mut buf)? {
            write_message(server, &buf)?;
        }
        Ok(())
    });
    pin(client_cpu)?;
    let mut buf = [7u8; MESSAGE];
    // A few unmeasured round trips first: thread start, first faults.
    for _ in 0..100 {
        write_message(client, &buf)?;
        wait_and_read(client, &mut buf)?;
    }
    let (start, cpu0) = (Instant::now(), process_cpu());
    let mut n = 0u32;
    while n < MAX_ROUND_TRIPS && start.elapsed() < CASE_TIME {
        write_message(client, &buf)?;
        wait_and_read(client, &mut buf)?;
        n += 1;
    }
    let (wall, cpu) = (start.elapsed(), process_cpu() - cpu0);
    // SAFETY: closing our end ends the echo thread's loop (end of file).
    unsafe { libc::close(client) };
    echo.join().map_err(|_| io::Error::other("echo thread panicked"))??;
    // SAFETY: the echo thread has ended; nothing uses its end any more.
    unsafe { libc::close(server) };
    Ok((wall / n, cpu / n))
}

fn main() {
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut cases = vec![("same CPU", 0, 0)];
    if cpus > 1 {
        cases.push(("two CPUs", 0, 1));
    }
    for (name, a, b) in cases {
        match round_trip(a, b) {
            Ok((wall, cpu)) => {
                println!(
                    "unix socket round trip, {name}: {:.1} us wall, {:.1} us CPU (both threads)",
                    us(wall),
                    us(cpu)
                )
            }
            Err(e) => {
                eprintln!("wakeup-cost: {name}: {e}");
                std::process::exit(1);
            }
        }
    }
}
