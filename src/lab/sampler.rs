//! Periodic samples taken during a run on a thread of their own: the OS's
//! CPU, memory and disk figures from /proc (`OsSampler`), and any other
//! source through `PeriodicSampler` (the lab samples server status with it).
//!
//! Ticks are due at fixed multiples of the interval from the start, so the
//! series does not drift by the time each sample takes; ticks missed because
//! the thread was not scheduled are skipped, not caught up in a burst.
//!
//! Memory stays bounded on long runs: when more than `MAX_SAMPLES` (100,000)
//! samples have accumulated, every other one is dropped and the sampling
//! period doubles from then on, so the series stays evenly spaced (a 1 s
//! interval reaches the limit after about 28 hours). `OsSampler` keeps raw
//! counter readings and computes rates when it stops, so a dropped reading
//! merges two intervals exactly rather than losing one: every sample's rates
//! cover its whole `interval_s`.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Samples kept before thinning (see the module doc).
const MAX_SAMPLES: usize = 100_000;

/// One OS sample: rates over the interval since the previous sample.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OsSample {
    /// Seconds since the sampler started, at the end of the interval.
    pub time_s: f64,
    /// Length of the interval the rates are over, seconds.
    pub interval_s: f64,
    /// Percent of all CPUs' time in user mode, nice included (guest time is part of it, as the kernel counts it).
    /// The five CPU percentages come from /proc/stat's `cpu` line and sum to 100; they are NaN (JSON null)
    /// when no clock tick elapsed in the interval.
    pub cpu_user_pct: f64,
    /// Percent of all CPUs' time in the kernel, irq and softirq included.
    pub cpu_system_pct: f64,
    /// Percent of all CPUs' time idle with I/O outstanding.
    pub cpu_iowait_pct: f64,
    /// Percent of all CPUs' time idle.
    pub cpu_idle_pct: f64,
    /// Percent of all CPUs' time taken by the hypervisor for other guests.
    pub cpu_steal_pct: f64,
    /// MemTotal − MemAvailable at the end of the interval.
    pub mem_used_bytes: u64,
    /// MemAvailable at the end of the interval.
    pub mem_available_bytes: u64,
    /// Cached (page cache) at the end of the interval.
    pub page_cache_bytes: u64,
    /// Bytes read per second, summed over whole disks (see `disk_devices`); /proc/diskstats is not
    /// per container, so this is the host's I/O.
    pub disk_read_bytes_per_s: f64,
    /// Bytes written per second, same disks.
    pub disk_write_bytes_per_s: f64,
    /// Completed reads per second, same disks.
    pub disk_reads_per_s: f64,
    /// Completed writes per second, same disks.
    pub disk_writes_per_s: f64,
    /// Context switches per second, all CPUs.
    pub context_switches_per_s: f64,
    /// Runnable tasks at the end of the interval (/proc/stat `procs_running`), not counting the sampler thread itself.
    pub procs_running: u64,
}

/// Samples the OS every `interval` on its own thread until stopped.
pub struct OsSampler {
    inner: PeriodicSampler<Reading>,
}

impl OsSampler {
    /// Start sampling: a baseline reading now, then one every `interval`.
    pub fn start(interval: Duration) -> OsSampler {
        let disks = disk_devices();
        OsSampler { inner: PeriodicSampler::start(interval, move |_| Some(Reading::now(&disks))) }
    }

    /// Stops the thread promptly (without waiting for the next tick) and
    /// returns the samples; a final partial interval is included if it is
    /// longer than 10% of the interval.
    pub fn stop(self) -> Vec<OsSample> {
        let readings = self.inner.stop();
        readings.windows(2).map(|w| sample((w[0].0, &w[0].1), (w[1].0, &w[1].1))).collect()
    }
}

/// Generic periodic sampler for other sources (the lab uses it for server
/// status): calls `f` every `interval` on its own thread.
pub struct PeriodicSampler<T: Send + 'static> {
    stop: Sender<()>,
    thread: JoinHandle<Vec<(f64, T)>>,
}

impl<T: Send + 'static> PeriodicSampler<T> {
    /// Start calling `f(elapsed seconds)` at 0 (a baseline for counters),
    /// `interval`, 2 × `interval`, ... on a new thread. `Some(v)` is kept
    /// with its elapsed time; `None` keeps nothing for that tick.
    pub fn start(interval: Duration, f: impl FnMut(f64) -> Option<T> + Send + 'static) -> Self {
        Self::start_with_limit(interval, MAX_SAMPLES, f)
    }

    fn start_with_limit(interval: Duration, limit: usize, f: impl FnMut(f64) -> Option<T> + Send + 'static) -> Self {
        let (stop, rx) = mpsc::channel();
        // A zero interval would spin.
        let interval = interval.max(Duration::from_millis(1));
        // Times count from this call, not from when the thread got going.
        let start = Instant::now();
        let thread = std::thread::Builder::new()
            .name("dbbench-sampler".into())
            .spawn(move || run(start, interval, limit, rx, f))
            .expect("cannot start a sampler thread (out of threads or memory)");
        PeriodicSampler { stop, thread }
    }

    /// Stop promptly and return the values with their elapsed times. A call
    /// of `f` in progress is waited for; then `f` is called once more for the
    /// final partial interval if it is longer than 10% of the (current)
    /// interval.
    pub fn stop(self) -> Vec<(f64, T)> {
        // The thread may already have ended (a disconnected channel also stops it).
        let _ = self.stop.send(());
        match self.thread.join() {
            Ok(v) => v,
            // Unreachable in the binary (its panic hook ends the process); in
            // tests, surface the sampler's panic.
            Err(p) => std::panic::resume_unwind(p),
        }
    }
}

/// The sampler thread's loop.
fn run<T>(
    start: Instant,
    interval: Duration,
    limit: usize,
    stop: Receiver<()>,
    mut f: impl FnMut(f64) -> Option<T>,
) -> Vec<(f64, T)> {
    let tick = interval.as_secs_f64();
    let mut out: Vec<(f64, T)> = Vec::new();
    // Call every `stride` ticks; doubles each time the samples are thinned.
    let mut stride: u64 = 1;
    let mut k: u64 = 0;
    let mut last_call;
    loop {
        let t = start.elapsed().as_secs_f64();
        if let Some(v) = f(t) {
            out.push((t, v));
            if out.len() > limit {
                let mut i = 0;
                out.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                stride *= 2;
            }
        }
        last_call = t;
        // The next due tick: a multiple of `stride` after now (missed ones skipped).
        let done = (start.elapsed().as_secs_f64() / tick).floor() as u64;
        k = (k.max(done) / stride + 1) * stride;
        let due = start + Duration::from_secs_f64(k as f64 * tick);
        match stop.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => continue,
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let t = start.elapsed().as_secs_f64();
    if t - last_call > 0.1 * tick * stride as f64 {
        if let Some(v) = f(t) {
            out.push((t, v));
        }
    }
    out
}

/// Raw cumulative counters and gauges at one moment.
struct Reading {
    /// /proc/stat `cpu`: user, nice, system, idle, iowait, irq, softirq, steal (USER_HZ ticks).
    cpu: [u64; 8],
    ctxt: u64,
    procs_running: u64,
    mem_total: u64,
    mem_available: u64,
    cached: u64,
    /// Summed over `disk_devices`: reads completed, sectors read, writes completed, sectors written.
    disk: [u64; 4],
}

impl Reading {
    /// Read /proc now; a missing or unreadable file leaves its fields 0.
    fn now(disks: &[String]) -> Reading {
        let mut r =
            Reading { cpu: [0; 8], ctxt: 0, procs_running: 0, mem_total: 0, mem_available: 0, cached: 0, disk: [0; 4] };
        if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
            for line in stat.lines() {
                let mut it = line.split_ascii_whitespace();
                match it.next() {
                    Some("cpu") => {
                        for (slot, v) in r.cpu.iter_mut().zip(it) {
                            *slot = v.parse().unwrap_or(0);
                        }
                    }
                    Some("ctxt") => r.ctxt = it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
                    // This thread is running while it reads the file.
                    Some("procs_running") => {
                        r.procs_running = it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0).saturating_sub(1)
                    }
                    _ => {}
                }
            }
        }
        if let Ok(mem) = std::fs::read_to_string("/proc/meminfo") {
            let (mut free, mut buffers, mut available) = (0, 0, None);
            for line in mem.lines() {
                let Some((k, v)) = line.split_once(':') else { continue };
                let bytes = v.split_ascii_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0) * 1024;
                match k {
                    "MemTotal" => r.mem_total = bytes,
                    "MemFree" => free = bytes,
                    "Buffers" => buffers = bytes,
                    "Cached" => r.cached = bytes,
                    "MemAvailable" => available = Some(bytes),
                    _ => {}
                }
            }
            // Kernels before 3.14 have no MemAvailable: the old free+buffers+cache estimate.
            r.mem_available = available.unwrap_or(free + buffers + r.cached);
        }
        if let Ok(ds) = std::fs::read_to_string("/proc/diskstats") {
            for line in ds.lines() {
                let f: Vec<&str> = line.split_ascii_whitespace().collect();
                if f.len() < 10 || !disks.iter().any(|d| d == f[2]) {
                    continue;
                }
                let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
                // Fields after the name: reads, merged, sectors read, ms, writes, merged, sectors written.
                r.disk[0] += n(3);
                r.disk[1] += n(5);
                r.disk[2] += n(7);
                r.disk[3] += n(9);
            }
        }
        r
    }
}

/// The sample for the interval between two (elapsed seconds, reading) pairs.
fn sample((a_time, a): (f64, &Reading), (b_time, b): (f64, &Reading)) -> OsSample {
    let dt = b_time - a_time;
    // Counters may go back (a device removed from the sum, a 32-bit wrap): count 0, not a huge rate.
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
    let cpu: Vec<f64> = a.cpu.iter().zip(&b.cpu).map(|(x, y)| d(*x, *y)).collect();
    let total: f64 = cpu.iter().sum();
    let pct = |v: f64| if total > 0.0 { 100.0 * v / total } else { f64::NAN };
    let rate = |x: u64, y: u64| if dt > 0.0 { d(x, y) / dt } else { f64::NAN };
    OsSample {
        time_s: b_time,
        interval_s: dt,
        cpu_user_pct: pct(cpu[0] + cpu[1]),
        cpu_system_pct: pct(cpu[2] + cpu[5] + cpu[6]),
        cpu_iowait_pct: pct(cpu[4]),
        cpu_idle_pct: pct(cpu[3]),
        cpu_steal_pct: pct(cpu[7]),
        mem_used_bytes: b.mem_total.saturating_sub(b.mem_available),
        mem_available_bytes: b.mem_available,
        page_cache_bytes: b.cached,
        // /proc/diskstats sectors are 512 bytes whatever the device's sector size.
        disk_read_bytes_per_s: rate(a.disk[1], b.disk[1]) * 512.0,
        disk_write_bytes_per_s: rate(a.disk[3], b.disk[3]) * 512.0,
        disk_reads_per_s: rate(a.disk[0], b.disk[0]),
        disk_writes_per_s: rate(a.disk[2], b.disk[2]),
        context_switches_per_s: rate(a.ctxt, b.ctxt),
        procs_running: b.procs_running,
    }
}

/// The disks whose I/O is summed: /sys/block entries that are not loop, RAM
/// or zram devices and not stacked on other block devices (device-mapper,
/// md: their I/O is counted again on the disks below, listed in `slaves/`).
/// Partitions are not in /sys/block. Names use /proc/diskstats' spelling.
fn disk_devices() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    let mut out: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter(|e| crate::lab::sysinfo::is_reported_block_device(&e.file_name().to_string_lossy()))
        .filter(|e| std::fs::read_dir(e.path().join("slaves")).map(|mut s| s.next().is_none()).unwrap_or(true))
        // sysfs writes '/' in a device name as '!' (cciss!c0d0).
        .map(|e| e.file_name().to_string_lossy().replace('!', "/"))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_sampler_short_run() {
        let s = OsSampler::start(Duration::from_millis(50));
        // Some CPU work and a write so the figures have something to show.
        let end = Instant::now() + Duration::from_millis(300);
        let mut x = 0u64;
        while Instant::now() < end {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let called = Instant::now();
        let samples = s.stop();
        let took = called.elapsed();
        assert!(took < Duration::from_millis(100), "stop took {took:?}");
        assert!(samples.len() >= 4, "{} samples", samples.len());
        // Contiguous intervals, starting at the baseline reading.
        assert!(samples[0].time_s - samples[0].interval_s < 0.05, "{:?}", samples[0]);
        let mut prev = samples[0].time_s - samples[0].interval_s;
        for s in &samples {
            assert!(s.interval_s > 0.0 && (s.time_s - s.interval_s - prev).abs() < 1e-9, "{s:?}");
            prev = s.time_s;
            let sum = s.cpu_user_pct + s.cpu_system_pct + s.cpu_iowait_pct + s.cpu_idle_pct + s.cpu_steal_pct;
            assert!((sum - 100.0).abs() <= 1.0, "CPU percentages sum to {sum}: {s:?}");
            assert!(s.mem_available_bytes > 0 && s.mem_used_bytes > 0, "{s:?}");
            assert!(s.context_switches_per_s >= 0.0 && s.disk_read_bytes_per_s >= 0.0, "{s:?}");
        }
        // The busy loop ran the whole time on one of the CPUs.
        let span: f64 = samples.iter().map(|s| s.interval_s).sum();
        let user: f64 = samples.iter().map(|s| s.cpu_user_pct * s.interval_s).sum::<f64>() / span;
        assert!(user > 100.0 / (2.0 * crate::lab::sysinfo::host_info().logical_cpus as f64), "user {user}%");
        assert!(serde_json::to_string(&samples[0]).unwrap().contains("\"cpu_idle_pct\""));
    }

    #[test]
    fn stop_is_prompt_with_a_long_interval_and_keeps_a_final_partial_interval() {
        let s = PeriodicSampler::start(Duration::from_secs(10), Some);
        std::thread::sleep(Duration::from_millis(1100));
        let called = Instant::now();
        let v = s.stop();
        assert!(called.elapsed() < Duration::from_millis(100));
        // Baseline at 0, then the final call at ~1.1 s (> 10% of 10 s).
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].0 < 0.5 && v[1].0 >= 1.1, "{v:?}");
        assert_eq!(v[1].0, v[1].1);

        // A final interval shorter than 10% is not sampled.
        let s = PeriodicSampler::start(Duration::from_secs(10), Some);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(s.stop().len(), 1);
    }

    #[test]
    fn none_keeps_nothing_and_ticks_do_not_drift() {
        let mut n = 0;
        let s = PeriodicSampler::start(Duration::from_millis(20), move |_| {
            n += 1;
            // Slow source: the tick schedule must absorb it.
            std::thread::sleep(Duration::from_millis(5));
            (n % 2 == 0).then_some(n)
        });
        std::thread::sleep(Duration::from_millis(210));
        let v = s.stop();
        assert!(v.iter().all(|(_, n)| n % 2 == 0), "{v:?}");
        // Calls due at 0, 20, ..., 200 ms (+ a final one): at most 6 even
        // ones, fewer if a busy machine made the thread skip ticks.
        assert!((2..=6).contains(&v.len()), "{v:?}");
        for (t, n) in &v {
            // Never early: the n-th call is due at tick n - 1 or later.
            assert!(*t >= (*n - 1) as f64 * 0.020 || *n == 12, "call {n} at {t}");
        }
    }

    #[test]
    fn memory_stays_bounded_and_thinning_doubles_the_period() {
        let s = PeriodicSampler::start_with_limit(Duration::from_millis(2), 10, Some);
        std::thread::sleep(Duration::from_millis(300));
        let v = s.stop();
        assert!(v.len() <= 11, "{} kept", v.len());
        assert!(v[0].0 < 0.01, "the baseline is kept: {v:?}");
        // Thinned at least once, and the period doubled with it: no two
        // kept samples (but the final partial one) are closer than 2 ticks.
        let gaps: Vec<f64> = v.windows(2).map(|w| w[1].0 - w[0].0).collect();
        let min = gaps[..gaps.len() - 1].iter().cloned().fold(f64::MAX, f64::min);
        assert!(min >= 0.004, "gaps {gaps:?}");
    }

    #[test]
    fn disk_devices_skip_loop_ram_and_stacked_devices() {
        for d in disk_devices() {
            assert!(!d.starts_with("loop") && !d.starts_with("zram") && !d.starts_with("ram"), "{d}");
            assert!(!d.contains('!'), "{d}");
        }
    }
}
