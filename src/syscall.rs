//! The system calls of a query's round trip (send, wait, receive), made
//! directly instead of through glibc's wrappers.
//!
//! glibc makes `send`, `recv` and `poll` thread cancellation points: each
//! call switches asynchronous cancellation on and off around the system
//! call, about 100 of the ~2 400 user-space instructions a point select
//! costs the client per query (callgrind, docs/performance.md). dbbench never
//! cancels a thread, so the wrappers buy nothing here.

use std::io;
use std::os::fd::RawFd;
use std::ptr;

/// Runs a raw system call until it is not interrupted by a signal.
fn retry(mut call: impl FnMut() -> libc::c_long) -> io::Result<usize> {
    loop {
        let r = call();
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `recv(fd, buf, len, 0)`: bytes read (0 = the peer closed).
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes of writing; no address is asked for.
    retry(|| unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd as libc::c_long,
            buf.as_mut_ptr(),
            buf.len(),
            0 as libc::c_long,
            ptr::null_mut::<libc::sockaddr>(),
            ptr::null_mut::<libc::socklen_t>(),
        )
    })
}

/// `send(fd, buf, len, MSG_NOSIGNAL)`: bytes sent. A closed peer is an
/// error (EPIPE), never a SIGPIPE, as with std's sockets.
pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes of reading; no address is given.
    retry(|| unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd as libc::c_long,
            buf.as_ptr(),
            buf.len(),
            libc::MSG_NOSIGNAL as libc::c_long,
            ptr::null::<libc::sockaddr>(),
            0 as libc::c_long,
        )
    })
}

/// Waits without a timeout until `fd` reports one of `events` (or an
/// error or hang-up, which the next read or write then returns).
/// `ppoll` with no timeout and no signal mask is `poll` with an infinite
/// timeout; unlike `SYS_poll` it exists on every Linux architecture.
pub fn poll_one(fd: RawFd, events: libc::c_short) -> io::Result<()> {
    let mut pfd = libc::pollfd { fd, events, revents: 0 };
    // SAFETY: one valid pollfd for the duration of the call; null timeout
    // (wait for ever) and null signal mask (the size is then not read).
    retry(|| unsafe {
        libc::syscall(
            libc::SYS_ppoll,
            &mut pfd as *mut libc::pollfd,
            1 as libc::c_long,
            ptr::null::<libc::timespec>(),
            ptr::null::<libc::sigset_t>(),
            0 as libc::c_long,
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn round_trip_over_a_socket_pair() {
        let (a, b) = UnixStream::pair().unwrap();
        assert_eq!(send(a.as_raw_fd(), b"ping").unwrap(), 4);
        poll_one(b.as_raw_fd(), libc::POLLIN).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(recv(b.as_raw_fd(), &mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"ping");
    }

    #[test]
    fn nonblocking_recv_with_nothing_there_would_block() {
        let (_a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let e = recv(b.as_raw_fd(), &mut [0u8; 4]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn closed_peer_is_end_of_file_and_send_fails_without_sigpipe() {
        let (a, b) = UnixStream::pair().unwrap();
        drop(a);
        assert_eq!(recv(b.as_raw_fd(), &mut [0u8; 4]).unwrap(), 0);
        // Without MSG_NOSIGNAL this would kill the test process.
        let e = send(b.as_raw_fd(), b"x").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPIPE));
    }

    #[test]
    fn the_wait_ends_when_the_peer_hangs_up() {
        let (a, b) = UnixStream::pair().unwrap();
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(a);
        });
        poll_one(b.as_raw_fd(), libc::POLLIN).unwrap();
        closer.join().unwrap();
        assert_eq!(recv(b.as_raw_fd(), &mut [0u8; 4]).unwrap(), 0);
    }
}
