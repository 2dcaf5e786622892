//! The host an experiment runs on, recorded with every experiment so that
//! results from different machines or setups are never compared blindly,
//! and `drop_page_cache` for runs that start cold.
//!
//! Everything is read from /proc, /sys, /etc/os-release and a few libc
//! calls; nothing here fails: what cannot be read is `None`, empty or
//! "unknown", never a guessed value.

use std::fs;
use std::io::Write;
use std::path::Path;

/// Host facts, serialisable into the results store as JSON.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HostInfo {
    /// Node name (`uname -n`).
    pub hostname: String,
    /// CPU model name from /proc/cpuinfo, "unknown" if absent.
    pub cpu_model: String,
    /// Online logical CPUs of the host (not limited by this process's affinity or cgroup).
    pub logical_cpus: u32,
    /// Distinct (package, core) pairs among online CPUs, from sysfs topology; `None` if unavailable.
    pub physical_cores: Option<u32>,
    /// Physical memory (MemTotal).
    pub memory_bytes: u64,
    /// Kernel release and version (`uname -r` and `uname -v`, space-separated).
    pub kernel: String,
    /// PRETTY_NAME from /etc/os-release, "unknown" if absent.
    pub os: String,
    /// Block device → active I/O scheduler ("none" included), whole devices except loop/ram/zram, sorted by name.
    pub io_schedulers: Vec<(String, String)>,
    /// RLIMIT_NOFILE of this process: (soft, hard); unlimited is `u64::MAX`, unreadable is (0, 0).
    pub open_files_limit: (u64, u64),
    /// NUMA nodes in /sys/devices/system/node; 1 when the kernel has no NUMA support (one node by definition).
    pub numa_nodes: u32,
    /// cpufreq scaling governor(s) of the online CPUs, comma-separated when they differ; `None` without cpufreq (e.g. most VMs).
    pub cpu_governor: Option<String>,
    /// Active transparent hugepage mode (always / madvise / never); `None` if unavailable.
    pub transparent_hugepages: Option<String>,
    /// Whether this process may write /proc/sys/vm/drop_caches (see `drop_page_cache`).
    pub can_drop_caches: bool,
    /// dbbench's package version.
    pub dbbench_version: String,
    /// Git revision dbbench was built from (12 hex digits, "-dirty" with uncommitted changes); `None` when built outside a git checkout.
    pub git_revision: Option<String>,
}

/// Collect the host facts. Never fails.
pub fn host_info() -> HostInfo {
    let uts = uname();
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let meminfo = read("/proc/meminfo").unwrap_or_default();
    HostInfo {
        hostname: uts.as_ref().map(|u| u.0.clone()).unwrap_or_else(|| {
            read("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|| "unknown".into())
        }),
        cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".into()),
        logical_cpus: logical_cpus(),
        physical_cores: physical_cores(),
        memory_bytes: meminfo_kib(&meminfo, "MemTotal").map(|k| k * 1024).unwrap_or(0),
        kernel: uts.map(|u| format!("{} {}", u.1, u.2)).unwrap_or_else(|| "unknown".into()),
        os: os_pretty_name().unwrap_or_else(|| "unknown".into()),
        io_schedulers: io_schedulers(),
        open_files_limit: open_files_limit(),
        numa_nodes: numa_nodes(),
        cpu_governor: cpu_governor(),
        transparent_hugepages: read("/sys/kernel/mm/transparent_hugepage/enabled").and_then(|s| bracketed(&s)),
        can_drop_caches: open_drop_caches().is_ok(),
        dbbench_version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: option_env!("DBBENCH_GIT_REVISION").map(str::to_string),
    }
}

/// Flush dirty pages and drop the page cache (`sync; echo 3 >
/// /proc/sys/vm/drop_caches`). `Err(reason)` when not permitted (not root,
/// read-only /proc/sys in a container, ...): the caller records the run as
/// "lukewarm". Permission is checked before the (possibly long) sync.
pub fn drop_page_cache() -> Result<(), String> {
    let mut f = open_drop_caches()?;
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    // drop_caches only drops clean pages, hence the sync first; "3" = page
    // cache plus dentries and inodes.
    f.write_all(b"3\n").map_err(|e| {
        format!("cannot drop the page cache: writing /proc/sys/vm/drop_caches failed: {e}; run as root outside a container, or accept lukewarm runs")
    })
}

fn open_drop_caches() -> Result<fs::File, String> {
    // Opening for writing already checks permission (EACCES) and a read-only
    // mount (EROFS); only the write triggers the drop.
    fs::OpenOptions::new().write(true).open("/proc/sys/vm/drop_caches").map_err(|e| {
        format!("cannot drop the page cache: /proc/sys/vm/drop_caches: {e}; run as root outside a container (or with a writable /proc/sys), or accept lukewarm runs")
    })
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// (nodename, release, version) from uname(2).
fn uname() -> Option<(String, String, String)> {
    // SAFETY: utsname is plain old data; uname fills it in.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some((field(&u.nodename), field(&u.release), field(&u.version)))
}

/// "model name" (x86), else "Model" or "Hardware" (ARM boards), else "cpu" (POWER).
fn cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "Hardware", "cpu"] {
        for line in cpuinfo.lines() {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim() == key && !v.trim().is_empty() {
                    return Some(v.trim().to_string());
                }
            }
        }
    }
    None
}

fn logical_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n >= 1 {
        n as u32
    } else {
        // sysconf failed: what this process may use is the next best fact.
        std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
    }
}

/// Parse a sysfs CPU list such as "0-3,8,10-11".
fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

fn physical_cores() -> Option<u32> {
    let online = parse_cpu_list(&read("/sys/devices/system/cpu/online")?);
    let mut cores = std::collections::BTreeSet::new();
    for cpu in online {
        let topo = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        let package = read(format!("{topo}/physical_package_id"))?.trim().parse::<i64>().ok()?;
        let core = read(format!("{topo}/core_id"))?.trim().parse::<i64>().ok()?;
        cores.insert((package, core));
    }
    (!cores.is_empty()).then_some(cores.len() as u32)
}

fn meminfo_kib(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k != key {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

fn os_pretty_name() -> Option<String> {
    let text = read("/etc/os-release").or_else(|| read("/usr/lib/os-release"))?;
    text.lines().find_map(|l| {
        let v = l.strip_prefix("PRETTY_NAME=")?.trim();
        let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The bracketed choice in a sysfs list such as "always [madvise] never";
/// the single value when there is no choice ("none").
fn bracketed(s: &str) -> Option<String> {
    let s = s.trim();
    if let Some(start) = s.find('[') {
        let end = s[start..].find(']')? + start;
        return Some(s[start + 1..end].to_string());
    }
    (!s.is_empty() && !s.contains(' ')).then(|| s.to_string())
}

/// Whether a /sys/block name is a real block device worth reporting (not a
/// loop, RAM or compressed-RAM device). Shared with the sampler.
pub(crate) fn is_reported_block_device(name: &str) -> bool {
    !(name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram"))
}

fn io_schedulers() -> Vec<(String, String)> {
    let Ok(dir) = fs::read_dir("/sys/block") else { return Vec::new() };
    let mut out: Vec<(String, String)> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !is_reported_block_device(&name) {
                return None;
            }
            let sched = read(e.path().join("queue/scheduler")).and_then(|s| bracketed(&s))?;
            Some((name, sched))
        })
        .collect();
    out.sort();
    out
}

fn open_files_limit() -> (u64, u64) {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid pointer to an rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return (0, 0);
    }
    // rlim_t is 32 bits on some targets.
    #[allow(clippy::unnecessary_cast)]
    let conv = |v: libc::rlim_t| if v == libc::RLIM_INFINITY { u64::MAX } else { v as u64 };
    (conv(r.rlim_cur), conv(r.rlim_max))
}

fn numa_nodes() -> u32 {
    let Ok(dir) = fs::read_dir("/sys/devices/system/node") else { return 1 };
    let n = dir
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("node").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .count() as u32;
    n.max(1)
}

fn cpu_governor() -> Option<String> {
    let online = parse_cpu_list(&read("/sys/devices/system/cpu/online")?);
    let mut governors: Vec<String> = Vec::new();
    for cpu in online {
        if let Some(g) = read(format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")) {
            let g = g.trim().to_string();
            if !g.is_empty() && !governors.contains(&g) {
                governors.push(g);
            }
        }
    }
    (!governors.is_empty()).then(|| governors.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_facts_are_sane_here() {
        let h = host_info();
        assert!(h.logical_cpus >= 1);
        assert!(h.memory_bytes > 0);
        assert!(!h.kernel.trim().is_empty() && h.kernel != "unknown", "{}", h.kernel);
        assert!(!h.hostname.is_empty());
        assert!(h.numa_nodes >= 1);
        if let Some(c) = h.physical_cores {
            assert!(c >= 1 && c <= h.logical_cpus, "{c} cores, {} cpus", h.logical_cpus);
        }
        assert!(h.open_files_limit.0 <= h.open_files_limit.1);
        assert_eq!(h.dbbench_version, env!("CARGO_PKG_VERSION"));
        if let Some(r) = &h.git_revision {
            assert!(r.len() >= 12 && r[..12].bytes().all(|b| b.is_ascii_hexdigit()), "{r}");
        }
        // The JSON the store keeps.
        let j = serde_json::to_value(&h).unwrap();
        assert!(j["io_schedulers"].is_array());
        assert_eq!(j["logical_cpus"], h.logical_cpus);
        // Permission to drop caches is exactly what drop_page_cache checks
        // (not called here: it would disturb other tests and builds).
        assert_eq!(h.can_drop_caches, open_drop_caches().is_ok());
    }

    #[test]
    fn parsers() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert_eq!(bracketed("always [madvise] never\n").as_deref(), Some("madvise"));
        assert_eq!(bracketed("[none] mq-deadline").as_deref(), Some("none"));
        assert_eq!(bracketed("none\n").as_deref(), Some("none"));
        assert_eq!(bracketed(""), None);
        assert_eq!(meminfo_kib("MemTotal:       24576000 kB\nMemFree: 1 kB\n", "MemTotal"), Some(24_576_000));
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n").as_deref(), Some("AMD EPYC 7B13"));
        assert!(is_reported_block_device("vda") && is_reported_block_device("nvme0n1"));
        assert!(
            !is_reported_block_device("loop0")
                && !is_reported_block_device("zram0")
                && !is_reported_block_device("ram1")
        );
    }
}
