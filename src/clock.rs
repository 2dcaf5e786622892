//! The monotonic clock as whole nanoseconds, for the per-event path.
//!
//! `Instant` reads the same clock (CLOCK_MONOTONIC on Linux) but keeps a
//! timespec, and every conversion and subtraction is checked timespec
//! arithmetic. A client reads the clock twice per event and derives a
//! latency from the readings; done with `Instant` that cost ~100 of the
//! client's user-space instructions per point select (callgrind,
//! docs/performance.md). Here a time is a `u64` and a latency one subtraction.

use std::time::Instant;

/// Now, in nanoseconds of CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to fill; CLOCK_MONOTONIC always exists
    // on Linux, and glibc answers it from the vDSO without a system call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `t` on the [`now_ns`] clock. The two are one clock, but an `Instant`
/// can only be compared with another `Instant`, so this reads both: exact
/// up to the few tens of nanoseconds between the two reads. For
/// boundaries (the deadline, the end of the warmup), not for latencies.
pub fn ns_of(t: Instant) -> u64 {
    let (now, now_ns) = (Instant::now(), now_ns());
    match t.checked_duration_since(now) {
        Some(ahead) => now_ns.saturating_add(ahead.as_nanos() as u64),
        None => now_ns.saturating_sub(now.duration_since(t).as_nanos() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn instants_map_onto_the_nanosecond_clock() {
        let before = now_ns();
        let t = Instant::now();
        let after = now_ns();
        // Within the reads around it, give or take the two-read slack.
        let slack = 1_000_000;
        let at = ns_of(t);
        assert!(at + slack >= before && at <= after + slack, "{before} {at} {after}");
        let later = ns_of(t + Duration::from_secs(2));
        let earlier = ns_of(t - Duration::from_millis(5));
        assert!((later - at).abs_diff(2_000_000_000) < slack, "{}", later - at);
        assert!((at - earlier).abs_diff(5_000_000) < slack, "{}", at - earlier);
    }

    #[test]
    fn never_goes_backwards() {
        let mut last = now_ns();
        for _ in 0..10_000 {
            let t = now_ns();
            assert!(t >= last);
            last = t;
        }
    }
}
