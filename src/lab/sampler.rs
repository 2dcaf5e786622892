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
//!
//! The run's own processes (the lab's child and the managed server) are
//! read from /proc/PID/stat at each tick, so their CPU shares are raw tick
//! counts too: `client_cpu_pct + server_cpu_pct + other_cpu_pct` is the
//! interval's user + system share (see `ProcessTicks`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
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
    /// CPUs online at the end of the interval (the `cpuN` lines of /proc/stat).
    pub cpus_online: u64,
    /// Interrupts per second, all kinds and CPUs (/proc/stat `intr` total).
    pub interrupts_per_s: f64,
    /// Rescheduling inter-processor interrupts per second (/proc/interrupts `RES:`, summed over CPUs);
    /// None where the architecture does not list them.
    pub resched_ipis_per_s: Option<f64>,
    /// Pages swapped in per second (/proc/vmstat `pswpin`).
    pub swap_in_pages_per_s: f64,
    /// Pages swapped out per second (/proc/vmstat `pswpout`).
    pub swap_out_pages_per_s: f64,
    /// Bytes received per second on every interface but `lo` (/proc/net/dev).
    pub net_rx_bytes_per_s: f64,
    /// Bytes sent per second on every interface but `lo`.
    pub net_tx_bytes_per_s: f64,
    /// Bytes received per second on `lo`: client↔server traffic on one host.
    pub loopback_bytes_per_s: f64,
    /// Percent of all CPUs' time (the unit of `cpu_*_pct`) used by the run's child process (dbbench or the
    /// command workload, all its threads, and its children); None when it was not running at both ends of
    /// the interval (its last interval: it has been reaped) or no pid was given.
    pub client_cpu_pct: Option<f64>,
    /// The same for the managed server (PostgreSQL's backends included: they are its children); None when
    /// the lab did not start the server.
    pub server_cpu_pct: Option<f64>,
    /// User + system share of every other process: `cpu_user_pct + cpu_system_pct − client − server`, at
    /// least 0; None when `client_cpu_pct` is (the remainder would count the client).
    pub other_cpu_pct: Option<f64>,
    /// Mean current frequency of the CPUs at the end of the interval, MHz
    /// (/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq); None where cpufreq is not exposed (most VMs).
    pub cpu_mhz: Option<f64>,
}

/// The processes whose CPU the OS sampler attributes. `client` is 0 until
/// the child is spawned (the runner stores its pid then): until then it has
/// used no CPU.
#[derive(Clone, Debug, Default)]
pub struct WatchedPids {
    /// The run's child process, once spawned.
    pub client: Arc<AtomicU32>,
    /// A sharded run's shard processes (each 0 until spawned), its client
    /// together; when any are listed, they are the client, not `client`.
    pub shard_clients: Arc<std::sync::Mutex<Vec<Arc<AtomicU32>>>>,
    /// The managed server's process; None when the lab did not start it.
    pub server: Option<u32>,
    /// The clients run on other machines (`launcher = "kubernetes"`): their
    /// CPU is not measured here, so `client_cpu_pct` (and with it
    /// `other_cpu_pct`) is None, never 0 or the local launcher's.
    pub clients_elsewhere: bool,
}

/// Samples the OS every `interval` on its own thread until stopped.
pub struct OsSampler {
    inner: PeriodicSampler<Reading>,
}

impl OsSampler {
    /// Start sampling: a baseline reading now, then one every `interval`;
    /// CPU time is attributed to `pids` (none watched: `client_cpu_pct` and
    /// `server_cpu_pct` are None).
    pub fn start_watching(interval: Duration, pids: Option<WatchedPids>) -> OsSampler {
        let disks = disk_devices();
        OsSampler { inner: PeriodicSampler::start(interval, move |_| Some(Reading::now(&disks, pids.as_ref()))) }
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
#[derive(Debug, Default, PartialEq)]
struct Reading {
    /// /proc/stat `cpu`: user, nice, system, idle, iowait, irq, softirq, steal (USER_HZ ticks).
    cpu: [u64; 8],
    ctxt: u64,
    procs_running: u64,
    /// `cpuN` lines in /proc/stat.
    cpus_online: u64,
    /// /proc/stat `intr` total.
    interrupts: u64,
    /// /proc/interrupts `RES:` over all CPUs.
    resched_ipis: Option<u64>,
    mem_total: u64,
    mem_available: u64,
    cached: u64,
    /// Summed over `disk_devices`: reads completed, sectors read, writes completed, sectors written.
    disk: [u64; 4],
    /// /proc/vmstat pswpin, pswpout.
    swap: [u64; 2],
    /// /proc/net/dev: received and sent bytes on all interfaces but lo, received bytes on lo.
    net: [u64; 3],
    /// CPU ticks of the watched client and server (see `ProcessTicks`).
    client_ticks: Option<u64>,
    server_ticks: Option<u64>,
    /// Mean scaling_cur_freq, MHz.
    cpu_mhz: Option<f64>,
}

impl Reading {
    /// Read /proc now; a missing or unreadable file leaves its fields 0.
    fn now(disks: &[String], pids: Option<&WatchedPids>) -> Reading {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let mut r = Reading::default();
        parse_stat(&read("/proc/stat"), &mut r);
        // This thread is running while it reads the file.
        r.procs_running = r.procs_running.saturating_sub(1);
        parse_meminfo(&read("/proc/meminfo"), &mut r);
        parse_diskstats(&read("/proc/diskstats"), disks, &mut r);
        r.resched_ipis = parse_resched_ipis(&read("/proc/interrupts"));
        r.swap = parse_vmstat_swap(&read("/proc/vmstat"));
        r.net = parse_net_dev(&read("/proc/net/dev"));
        r.cpu_mhz = cpu_mhz();
        if let Some(p) = pids {
            let shards: Vec<u32> = p
                .shard_clients
                .lock()
                .map(|v| v.iter().map(|a| a.load(Ordering::SeqCst)).collect())
                .unwrap_or_default();
            r.client_ticks = if p.clients_elsewhere {
                None
            } else if shards.is_empty() {
                match p.client.load(Ordering::SeqCst) {
                    // Not spawned yet: it has used nothing.
                    0 => Some(0),
                    pid => process_tree_ticks(pid),
                }
            } else {
                // Every shard's, summed; one gone makes the sum unknown, as
                // the single child's end does.
                shards.iter().try_fold(0u64, |sum, &pid| match pid {
                    0 => Some(sum),
                    pid => process_tree_ticks(pid).map(|t| sum + t),
                })
            };
            r.server_ticks = p.server.and_then(process_tree_ticks);
        }
        r
    }
}

/// /proc/stat: the `cpu` line, `ctxt`, `procs_running`, `cpuN` lines, `intr` total.
fn parse_stat(stat: &str, r: &mut Reading) {
    for line in stat.lines() {
        let mut it = line.split_ascii_whitespace();
        let num = |v: Option<&str>| v.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match it.next() {
            Some("cpu") => {
                for (slot, v) in r.cpu.iter_mut().zip(it) {
                    *slot = v.parse().unwrap_or(0);
                }
            }
            Some(c) if c.starts_with("cpu") => r.cpus_online += 1,
            Some("ctxt") => r.ctxt = num(it.next()),
            Some("intr") => r.interrupts = num(it.next()),
            Some("procs_running") => r.procs_running = num(it.next()),
            _ => {}
        }
    }
}

fn parse_meminfo(mem: &str, r: &mut Reading) {
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

fn parse_diskstats(ds: &str, disks: &[String], r: &mut Reading) {
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

/// /proc/interrupts `RES:` (x86's rescheduling IPIs; arm64 calls them `IPI0:` "Rescheduling
/// interrupts"), summed over the CPU columns; None when absent.
fn parse_resched_ipis(interrupts: &str) -> Option<u64> {
    let cpus = interrupts.lines().next()?.split_ascii_whitespace().filter(|c| c.starts_with("CPU")).count();
    interrupts.lines().find_map(|line| {
        let (name, rest) = line.trim_start().split_once(':')?;
        if name != "RES" && !(rest.contains("Rescheduling interrupts") && name.starts_with("IPI")) {
            return None;
        }
        Some(rest.split_ascii_whitespace().take(cpus).map_while(|v| v.parse::<u64>().ok()).sum())
    })
}

/// /proc/vmstat `pswpin`, `pswpout`.
fn parse_vmstat_swap(vmstat: &str) -> [u64; 2] {
    let mut out = [0; 2];
    for line in vmstat.lines() {
        let mut it = line.split_ascii_whitespace();
        let slot = match it.next() {
            Some("pswpin") => 0,
            Some("pswpout") => 1,
            _ => continue,
        };
        out[slot] = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    }
    out
}

/// /proc/net/dev: [received bytes, sent bytes] over every interface but `lo`, and `lo`'s received bytes.
fn parse_net_dev(dev: &str) -> [u64; 3] {
    let mut out = [0; 3];
    for line in dev.lines() {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let f: Vec<u64> = rest.split_ascii_whitespace().map(|v| v.parse().unwrap_or(0)).collect();
        if f.len() < 9 {
            continue;
        }
        if name.trim() == "lo" {
            out[2] += f[0];
        } else {
            out[0] += f[0];
            out[1] += f[8];
        }
    }
    out
}

/// One process's figures from /proc/PID/stat.
#[derive(Debug, PartialEq)]
struct ProcStat {
    ppid: u32,
    /// utime + stime: every thread of the process, in USER_HZ ticks like /proc/stat.
    own_ticks: u64,
    /// cutime + cstime: its children that it has waited for.
    reaped_children_ticks: u64,
}

/// /proc/PID/stat; the command name (in parentheses) may hold spaces and parentheses, so the fields
/// are counted after the last ')'.
fn parse_pid_stat(stat: &str) -> Option<ProcStat> {
    let f: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_ascii_whitespace().collect();
    // After the name: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime.
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat { ppid: n(1)? as u32, own_ticks: n(11)? + n(12)?, reaped_children_ticks: n(13)? + n(14)? })
}

/// CPU ticks of process `pid` and its children: its own, those of the
/// children it has reaped, and those of its live children (found by their
/// parent pid in /proc). A child that ends between two readings moves from
/// the live sum into `cutime` when reaped, so the total keeps counting (a
/// PostgreSQL backend, a command's subprocess). None when `pid` is gone.
fn process_tree_ticks(pid: u32) -> Option<u64> {
    let own = parse_pid_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    let mut total = own.own_ticks + own.reaped_children_ticks;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(child) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if child == pid {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        if let Some(s) = parse_pid_stat(&text).filter(|s| s.ppid == pid) {
            total += s.own_ticks;
        }
    }
    Some(total)
}

/// Mean of every CPU's cpufreq `scaling_cur_freq` (kHz), in MHz; None without cpufreq.
fn cpu_mhz() -> Option<f64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu").ok()?;
    let khz: Vec<f64> = dir
        .flatten()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| n.strip_prefix("cpu").is_some_and(|d| d.parse::<u32>().is_ok()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("cpufreq/scaling_cur_freq")).ok())
        .filter_map(|t| t.trim().parse::<f64>().ok())
        .collect();
    (!khz.is_empty()).then(|| khz.iter().sum::<f64>() / khz.len() as f64 / 1000.0)
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
    let process = |x: Option<u64>, y: Option<u64>| x.zip(y).map(|(x, y)| pct(d(x, y)));
    let (client, server) = (process(a.client_ticks, b.client_ticks), process(a.server_ticks, b.server_ticks));
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
        cpus_online: b.cpus_online,
        interrupts_per_s: rate(a.interrupts, b.interrupts),
        resched_ipis_per_s: a.resched_ipis.zip(b.resched_ipis).map(|(x, y)| rate(x, y)),
        swap_in_pages_per_s: rate(a.swap[0], b.swap[0]),
        swap_out_pages_per_s: rate(a.swap[1], b.swap[1]),
        net_rx_bytes_per_s: rate(a.net[0], b.net[0]),
        net_tx_bytes_per_s: rate(a.net[1], b.net[1]),
        loopback_bytes_per_s: rate(a.net[2], b.net[2]),
        client_cpu_pct: client,
        server_cpu_pct: server,
        other_cpu_pct: client
            .filter(|_| total > 0.0)
            .map(|c| (pct(cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6]) - c - server.unwrap_or(0.0)).max(0.0)),
        cpu_mhz: b.cpu_mhz,
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
        let s = OsSampler::start_watching(Duration::from_millis(50), None);
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

    // Real /proc text from a 2-vCPU KVM guest (Debian 12, kernel 6.1), trimmed.
    const STAT: &str = "cpu  7911817 27788 683529 447304 25208 0 9896 43337 0 0
cpu0 3952630 11563 325487 253738 9180 0 396 21027 0 0
cpu1 3959187 16225 358042 193565 16028 0 9500 22310 0 0
intr 45665282 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 13 0 0 0 0 915
ctxt 207479979
btime 1764212000
processes 402211
procs_running 9
procs_blocked 0
softirq 21617710 2 5765349 11 1211580 182170 0 16186 7590345 0 6852067
";
    const INTERRUPTS: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 34:        757          0 PCI-MSIX-0000:00:05.0   1-edge      virtio4-input
NMI:          0          0   Non-maskable interrupts
LOC:   41286342   40390158   Local timer interrupts
RES:    3884027    3209069   Rescheduling interrupts
CAL:     563125     652389   Function call interrupts
TLB:      92017      96150   TLB shootdowns
";
    // arm64 names its IPIs by number.
    const INTERRUPTS_ARM64: &str = "           CPU0       CPU1       CPU2       CPU3
 11:     801245     785611     772208     760114     GICv3  27 Level     arch_timer
IPI0:     12345      23456      34567      45678       Rescheduling interrupts
IPI1:       100        200        300        400       Function call interrupts
";
    const NET_DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 59173126  395493    0    0    0     0          0         0 59173126  395493    0    0    0     0       0          0
  ifb0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth0: 1234567    8901    0    0    0     0          0         0   765432    4321    0    0    0     0       0          0
";
    const VMSTAT: &str = "nr_free_pages 1790123
pgpgin 9876543
pgpgout 1234567
pswpin 17
pswpout 4242
pgalloc_dma 0
";
    const PID_STAT: &str = "6773 (cat) R 6766 6766 3502 0 -1 4194304 103 0 0 0 25 7 3 2 20 0 1 0 4579283 3133440 379 18446744073709551615 94368124104704 94368124124585 140730363657760 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94368124140592 94368124142208 94368599912448 140730363665074 140730363665094 140730363665094 140730363666411 0";

    #[test]
    fn parsers_read_real_proc_text() {
        let mut r = Reading::default();
        parse_stat(STAT, &mut r);
        assert_eq!(r.cpu, [7911817, 27788, 683529, 447304, 25208, 0, 9896, 43337]);
        assert_eq!((r.cpus_online, r.interrupts, r.ctxt, r.procs_running), (2, 45665282, 207479979, 9));
        assert_eq!(parse_resched_ipis(INTERRUPTS), Some(3884027 + 3209069));
        assert_eq!(parse_resched_ipis(INTERRUPTS_ARM64), Some(12345 + 23456 + 34567 + 45678));
        assert_eq!(parse_resched_ipis(" CPU0\n 24: 1 IO-APIC 5-edge ACPI:Ged\n"), None);
        assert_eq!(parse_resched_ipis(""), None);
        assert_eq!(parse_net_dev(NET_DEV), [1234567, 765432, 59173126]);
        assert_eq!(parse_vmstat_swap(VMSTAT), [17, 4242]);
        assert_eq!(parse_pid_stat(PID_STAT), Some(ProcStat { ppid: 6766, own_ticks: 32, reaped_children_ticks: 5 }));
        // A command name with spaces and parentheses.
        let odd = PID_STAT.replace("(cat)", "(a) b (c))");
        assert_eq!(parse_pid_stat(&odd), Some(ProcStat { ppid: 6766, own_ticks: 32, reaped_children_ticks: 5 }));
        assert_eq!(parse_pid_stat("12 (x) R 1"), None);
    }

    #[test]
    fn process_shares_add_up_and_a_gone_process_is_none() {
        let a = Reading {
            cpu: [100, 0, 50, 800, 0, 0, 0, 50],
            client_ticks: Some(0),
            server_ticks: Some(10),
            ..Default::default()
        };
        // 1000 ticks: user 300, system 100, idle 500, steal 100; client 200, server 40.
        let b = Reading {
            cpu: [400, 0, 150, 1300, 0, 0, 0, 150],
            client_ticks: Some(200),
            server_ticks: Some(50),
            ..Default::default()
        };
        let s = sample((0.0, &a), (1.0, &b));
        assert_eq!((s.client_cpu_pct, s.server_cpu_pct, s.other_cpu_pct), (Some(20.0), Some(4.0), Some(16.0)));
        assert_eq!(s.cpu_user_pct + s.cpu_system_pct, 40.0);
        let gone = Reading { client_ticks: None, ..b };
        let s = sample((0.0, &a), (1.0, &gone));
        assert_eq!((s.client_cpu_pct, s.server_cpu_pct, s.other_cpu_pct), (None, Some(4.0), None));
        // Unwatched: null in JSON, like the fields stores written before lack.
        let s = sample((0.0, &Reading::default()), (1.0, &Reading::default()));
        let v = serde_json::to_value(&s).unwrap();
        assert!(v["client_cpu_pct"].is_null() && v["server_cpu_pct"].is_null() && v["resched_ipis_per_s"].is_null());
    }

    /// A busy thread of this process, watched as the client, shows in
    /// client_cpu_pct: the client's CPU seconds from the samples cover what
    /// the thread itself measured it used (its CPU clock), however loaded
    /// the host is.
    #[test]
    fn a_busy_client_thread_raises_client_cpu() {
        let pids = WatchedPids { client: Arc::new(AtomicU32::new(0)), server: None, ..Default::default() };
        let s = OsSampler::start_watching(Duration::from_millis(100), Some(pids.clone()));
        pids.client.store(std::process::id(), Ordering::SeqCst);
        let busy = std::thread::spawn(|| {
            let end = Instant::now() + Duration::from_millis(600);
            let mut x = 0u64;
            while Instant::now() < end {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: clock_gettime writes the timespec it is given, which lives on this stack.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
        });
        let thread_cpu_s = busy.join().unwrap();
        let samples = s.stop();
        let cpus = samples[0].cpus_online as f64;
        assert!(cpus >= 1.0 && samples.iter().all(|s| s.interrupts_per_s > 0.0), "{samples:?}");
        // Percent of all CPUs' time back to CPU seconds.
        let client_cpu_s: f64 =
            samples.iter().map(|s| s.client_cpu_pct.unwrap() / 100.0 * cpus * s.interval_s).sum::<f64>();
        // Ticks are 10 ms; the other test threads of this process only add to the client's figure.
        assert!(thread_cpu_s > 0.02, "the busy thread ran {thread_cpu_s} s");
        assert!(
            client_cpu_s >= 0.8 * thread_cpu_s - 0.03,
            "client {client_cpu_s:.3} CPU s, the busy thread alone {thread_cpu_s:.3} s: {samples:?}"
        );
        for s in &samples {
            let (c, o) = (s.client_cpu_pct.unwrap(), s.other_cpu_pct.unwrap());
            assert!(c >= 0.0 && o >= 0.0 && s.server_cpu_pct.is_none(), "{s:?}");
        }
    }

    /// Clients on other machines (`launcher = "kubernetes"`): even with a
    /// busy local child pid stored, the client's CPU is not measured (None,
    /// not 0 or the local process's), and neither is "other".
    #[test]
    fn clients_elsewhere_are_not_measured() {
        let pids = WatchedPids { clients_elsewhere: true, ..Default::default() };
        pids.client.store(std::process::id(), Ordering::SeqCst);
        let s = OsSampler::start_watching(Duration::from_millis(100), Some(pids));
        std::thread::sleep(Duration::from_millis(350));
        let samples = s.stop();
        assert!(samples.len() >= 2, "{samples:?}");
        for s in &samples {
            assert_eq!((s.client_cpu_pct, s.other_cpu_pct, s.server_cpu_pct), (None, None, None), "{s:?}");
            assert!(s.cpu_user_pct.is_finite());
        }
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
