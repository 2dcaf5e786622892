//! CPU sets for pinning the processes the lab starts (docs/lab.md#pinning):
//! the kernel's CPU list syntax ("0", "0-3,6"), a NUMA node's CPUs, the
//! checks against the CPUs online and the lab's own allowed set, applying a
//! set in a child between fork and exec (`sched_setaffinity`), and reading
//! back what a process is really allowed (/proc/PID/status
//! `Cpus_allowed_list`), which is what the store records.
//!
//! Only CPUs are placed: memory placement (NUMA policy) is left to the
//! kernel's default (first touch) unless the user sets it themselves
//! (e.g. `numactl --membind` in a command workload).

use anyhow::{bail, Context};
use std::path::Path;
use std::process::Command;

/// A validated, non-empty set of CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSet {
    /// CPU numbers, ascending, no duplicates.
    cpus: Vec<usize>,
}

impl CpuSet {
    /// The CPU numbers, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Parses a CPU list in the kernel's syntax (cpuset(7) "List format"):
    /// comma-separated CPUs and ranges, "0", "0-3,6", "0-7:2/4" (every
    /// group of 4 from 0 to 7, its first 2 CPUs).
    pub fn parse_list(text: &str) -> Result<CpuSet, String> {
        let t = text.trim();
        let bad = |why: &str| {
            format!("'{text}' is not a CPU list ({why}); use the kernel's syntax: \"0\", \"0-3,6\" (see cpuset(7))")
        };
        if t.is_empty() {
            return Err(bad("empty"));
        }
        let num = |s: &str| -> Result<usize, String> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(&format!("'{s}' is not a CPU number")));
            }
            // No host has this many CPUs; the bound keeps masks small.
            s.parse::<usize>().ok().filter(|n| *n < MAX_CPUS).ok_or_else(|| bad(&format!("{s} is too large")))
        };
        let mut cpus = Vec::new();
        for item in t.split(',') {
            let (range, stride) = match item.split_once(':') {
                None => (item, None),
                Some((r, s)) => {
                    let (used, group) = s.split_once('/').ok_or_else(|| bad("a stride is N-M:USED/GROUP"))?;
                    let (used, group) = (num(used)?, num(group)?);
                    if used == 0 || group == 0 || used > group {
                        return Err(bad("in N-M:USED/GROUP, 1 <= USED <= GROUP"));
                    }
                    (r, Some((used, group)))
                }
            };
            let (lo, hi) = match range.split_once('-') {
                None => {
                    let n = num(range)?;
                    (n, n)
                }
                Some((a, b)) => (num(a)?, num(b)?),
            };
            if lo > hi {
                return Err(bad(&format!("{lo}-{hi} runs backwards")));
            }
            for n in lo..=hi {
                if stride.is_none_or(|(used, group)| (n - lo) % group < used) {
                    cpus.push(n);
                }
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSet { cpus })
    }

    /// The set as a kernel CPU list, ranges folded: "0-3,6".
    pub fn to_list(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.cpus.len() {
            let start = self.cpus[i];
            let mut end = start;
            while i + 1 < self.cpus.len() && self.cpus[i + 1] == end + 1 {
                i += 1;
                end = self.cpus[i];
            }
            out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
            i += 1;
        }
        out.join(",")
    }

    /// The CPUs of both sets.
    fn intersect(&self, other: &CpuSet) -> CpuSet {
        CpuSet { cpus: self.cpus.iter().copied().filter(|c| other.cpus.contains(c)).collect() }
    }

    /// Checks a requested set against the host: every CPU must be online,
    /// and the set is cut to the CPUs this process may use (a container's
    /// or `taskset`'s limit), which must leave at least one. Returns the
    /// set children will get.
    pub fn check_on_host(&self) -> anyhow::Result<CpuSet> {
        let online = read_list_file(Path::new("/sys/devices/system/cpu/online"))?;
        let offline: Vec<usize> = self.cpus.iter().copied().filter(|c| !online.cpus.contains(c)).collect();
        if !offline.is_empty() {
            let offline = CpuSet { cpus: offline };
            bail!(
                "CPU {} {} not online (online: {})",
                offline.to_list(),
                if offline.cpus.len() == 1 { "is" } else { "are" },
                online.to_list()
            );
        }
        let allowed = own_allowed()?;
        let usable = self.intersect(&allowed);
        if usable.cpus.is_empty() {
            bail!(
                "none of CPUs {} may be used by this process (allowed: {}, e.g. a container's cpuset or taskset)",
                self.to_list(),
                allowed.to_list()
            );
        }
        Ok(usable)
    }

    /// NUMA node `node`'s CPUs (/sys/devices/system/node/nodeN/cpulist).
    pub fn of_node(node: u64) -> anyhow::Result<CpuSet> {
        let base = Path::new("/sys/devices/system/node");
        if !base.is_dir() {
            bail!(
                "this host shows no NUMA nodes (/sys/devices/system/node is absent); give a CPU list such as \"0-3\""
            );
        }
        let file = base.join(format!("node{node}")).join("cpulist");
        if !file.exists() {
            let mut nodes: Vec<String> = std::fs::read_dir(base)
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("node")).map(str::to_string))
                        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
                        .collect()
                })
                .unwrap_or_default();
            nodes.sort();
            bail!("NUMA node {node} does not exist (nodes: {})", nodes.join(", "));
        }
        let set = read_list_file(&file)?;
        if set.cpus.is_empty() {
            bail!("NUMA node {node} has no CPUs (a memory-only node)");
        }
        Ok(set)
    }

    /// Makes `cmd`'s child run on this set: `sched_setaffinity` between
    /// fork and exec, so the program and every thread and process it starts
    /// inherit it from its first instruction. A failure fails the spawn.
    pub fn apply_to(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        // Built here, before the fork: the child only passes it to the kernel.
        // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
        let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in &self.cpus {
            // SAFETY: c < MAX_CPUS <= CPU_SETSIZE (checked by parse_list), so the bit is inside the mask.
            unsafe { libc::CPU_SET(c, &mut mask) };
        }
        // SAFETY: between fork and exec the closure only makes one system
        // call (sched_setaffinity, async-signal-safe) on a mask copied into
        // it before the fork; it allocates nothing and takes no lock.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

/// CPUs a `cpu_set_t` holds (glibc: 1024); the parser refuses larger numbers.
const MAX_CPUS: usize = 1024;

fn read_list_file(path: &Path) -> anyhow::Result<CpuSet> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if text.trim().is_empty() {
        return Ok(CpuSet { cpus: Vec::new() });
    }
    CpuSet::parse_list(&text).map_err(anyhow::Error::msg).with_context(|| path.display().to_string())
}

/// The CPUs this process may run on.
pub fn own_allowed() -> anyhow::Result<CpuSet> {
    // SAFETY: all zeroes is the empty set; the kernel fills it in.
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the mask is ours and as large as the size we pass.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) } == -1 {
        return Err(std::io::Error::last_os_error()).context("sched_getaffinity");
    }
    // SAFETY: reading bits below CPU_SETSIZE of an initialised mask.
    let cpus = (0..MAX_CPUS).filter(|&c| unsafe { libc::CPU_ISSET(c, &mask) }).collect();
    Ok(CpuSet { cpus })
}

/// What process `pid` may run on, as the kernel says (/proc/PID/status
/// `Cpus_allowed_list`, e.g. "0-1"); None when it cannot be read (the
/// process has gone).
pub fn allowed_list_of(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(|v| v.trim().to_string())
}

/// Where the lab puts each kind of process it starts; None: where the lab
/// itself may run (not pinned).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// A managed server (the server process; its threads and backends inherit it).
    pub server: Option<CpuSet>,
    /// The run's child: `dbbench ... run`, a command workload, a TPC-H query.
    pub clients: Option<CpuSet>,
    /// Every other process: hooks' shells, prepare/load children, a
    /// command's `prepare_command`, server initialisation.
    pub other: Option<CpuSet>,
}

impl Placement {
    /// `self`'s sets, each falling back to `outer`'s where `self` has none.
    pub fn over(&self, outer: &Placement) -> Placement {
        Placement {
            server: self.server.clone().or_else(|| outer.server.clone()),
            clients: self.clients.clone().or_else(|| outer.clients.clone()),
            other: self.other.clone().or_else(|| outer.other.clone()),
        }
    }

    /// Whether any set is given.
    pub fn is_empty(&self) -> bool {
        self.server.is_none() && self.clients.is_none() && self.other.is_none()
    }

    /// `server=0 clients=1 other=1` for `lab plan`; empty when nothing is pinned.
    pub fn describe(&self) -> String {
        [("server", &self.server), ("clients", &self.clients), ("other", &self.other)]
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|s| format!("{k}={}", s.to_list())))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The sets as JSON for a configuration's stored definition (CPU lists
    /// after the host check).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (k, v) in [("server", &self.server), ("clients", &self.clients), ("other", &self.other)] {
            if let Some(s) = v {
                m.insert(k.into(), serde_json::Value::String(s.to_list()));
            }
        }
        serde_json::Value::Object(m)
    }
}

/// Reads a `cpus = { server = ..., clients = ..., other = ... }` table of a
/// spec: each value a CPU list ("0-3,6", or a number) or `{ node = N }`,
/// checked against the host. `allowed` are the keys this place takes.
/// Errors are (key, message).
pub fn placement_from_toml(table: &toml::Table, allowed: &[&str]) -> Result<Placement, (Vec<String>, String)> {
    let mut p = Placement::default();
    for (k, v) in table {
        let key = |extra: &[&str]| -> Vec<String> {
            std::iter::once(k.clone()).chain(extra.iter().map(|s| s.to_string())).collect()
        };
        if !["server", "clients", "other"].contains(&k.as_str()) {
            return Err((key(&[]), "unknown key; use server, clients or other".into()));
        }
        if !allowed.contains(&k.as_str()) {
            let m = if k == "server" {
                "a managed server's CPUs are set per configuration ([cpus] or the configuration's cpus), not per workload"
            } else {
                "does not apply here"
            };
            return Err((key(&[]), m.into()));
        }
        let requested = match v {
            toml::Value::String(s) => CpuSet::parse_list(s).map_err(|m| (key(&[]), m))?,
            toml::Value::Integer(i) if *i >= 0 => CpuSet::parse_list(&i.to_string()).map_err(|m| (key(&[]), m))?,
            toml::Value::Table(t) => {
                if let Some(extra) = t.keys().find(|x| *x != "node") {
                    return Err((key(&[extra]), "unknown key; a node is { node = 0 }".into()));
                }
                match t.get("node") {
                    Some(toml::Value::Integer(n)) if *n >= 0 => {
                        CpuSet::of_node(*n as u64).map_err(|m| (key(&["node"]), format!("{m:#}")))?
                    }
                    _ => return Err((key(&["node"]), "must be a NUMA node number, e.g. { node = 0 }".into())),
                }
            }
            _ => {
                return Err((
                    key(&[]),
                    "must be a CPU list such as \"0\" or \"0-3,6\", or a NUMA node { node = 0 }".into(),
                ))
            }
        };
        let set = requested.check_on_host().map_err(|m| (key(&[]), format!("{m:#}")))?;
        match k.as_str() {
            "server" => p.server = Some(set),
            "clients" => p.clients = Some(set),
            _ => p.other = Some(set),
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_fold_as_the_kernel_writes_them() {
        let l = |t: &str| CpuSet::parse_list(t).map(|s| s.to_list());
        assert_eq!(l("0").unwrap(), "0");
        assert_eq!(l("0-3,6").unwrap(), "0-3,6");
        assert_eq!(l("6, 0-3 ,2").unwrap(), "0-3,6");
        assert_eq!(l("0-7:2/4").unwrap(), "0-1,4-5");
        assert_eq!(l("0-1\n").unwrap(), "0-1");
        for bad in ["", "a", "3-1", "1-", "-1", "0-3:3/2", "0-3:1", "5000", "1,,2"] {
            let e = l(bad).unwrap_err();
            assert!(e.contains("is not a CPU list"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_cpu_that_is_not_online_is_refused_and_the_lab_s_own_set_cuts() {
        let online = read_list_file(Path::new("/sys/devices/system/cpu/online")).unwrap();
        let past = online.cpus.last().unwrap() + 1;
        let e = format!("{:#}", CpuSet::parse_list(&past.to_string()).unwrap().check_on_host().unwrap_err());
        assert!(e.contains(&format!("CPU {past} is not online")), "{e}");
        let own = own_allowed().unwrap();
        assert_eq!(own.check_on_host().unwrap(), own);
    }

    #[test]
    fn a_child_runs_on_the_set_and_reports_it() {
        let own = own_allowed().unwrap();
        let first = CpuSet { cpus: vec![own.cpus[0]] };
        let mut cmd = Command::new("sleep");
        cmd.arg("5");
        first.apply_to(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let seen = allowed_list_of(child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(seen.as_deref(), Some(first.to_list().as_str()));
    }
}
