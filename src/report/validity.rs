//! Validity flags: whether the host let a run measure what it meant to.
//! A pure function of one stored run's OS samples (the lab's `OsSample`
//! JSON, `source = 'os'`), its run document (client threads, query rate,
//! how late each interval line came out) and the host's CPU count; the
//! report marks the cells of flagged runs and lists the reasons, `lab run`
//! warns. Every threshold is here, named, and explained in docs/report.md.
//!
//! Averages are over the run's samples weighted by their `interval_s` (the
//! samples cover the child's whole life: start, warmup and measurement). A
//! figure the host or an older store does not have is absent, and a flag
//! that needs it is not raised: no flag is ever guessed.

use crate::run_document::RunDocument;
use serde::{Deserialize, Serialize};

/// What made a run's figures unreliable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    /// More runnable tasks than CPUs and almost no idle time, with fewer client threads than CPUs.
    HostSaturated,
    /// The hypervisor took CPU time for other guests.
    CpuSteal,
    /// Processes other than the run's client and server used CPU.
    OtherProcesses,
    /// Interval lines came out late: the client's reporting thread waited for a CPU.
    LateIntervals,
    /// Many rescheduling IPIs per query: cross-CPU wake-ups dominate.
    ReschedIpis,
    /// The host swapped.
    Swap,
    /// The CPU frequency changed (where cpufreq shows it).
    CpuFrequency,
    /// The client used about all the CPU its threads can: it, not the server, set the pace.
    ClientCpuBound,
}

impl FlagKind {
    /// The snake_case name (as in JSON).
    pub fn name(self) -> &'static str {
        match self {
            FlagKind::HostSaturated => "host_saturated",
            FlagKind::CpuSteal => "cpu_steal",
            FlagKind::OtherProcesses => "other_processes",
            FlagKind::LateIntervals => "late_intervals",
            FlagKind::ReschedIpis => "resched_ipis",
            FlagKind::Swap => "swap",
            FlagKind::CpuFrequency => "cpu_frequency",
            FlagKind::ClientCpuBound => "client_cpu_bound",
        }
    }

    /// What to do about it, for `lab run`'s warning.
    pub fn advice(self) -> &'static str {
        match self {
            FlagKind::HostSaturated | FlagKind::OtherProcesses => "stop other processes on the host (top -o %CPU)",
            FlagKind::CpuSteal => "use a host without noisy neighbours (dedicated vCPUs or bare metal)",
            FlagKind::LateIntervals => "leave the client a CPU: fewer threads, or stop other processes",
            FlagKind::ReschedIpis | FlagKind::ClientCpuBound => {
                "pin the client and the server: see docs/lab.md#pinning"
            }
            FlagKind::Swap => "free memory (a smaller buffer pool, fewer processes) so nothing swaps",
            FlagKind::CpuFrequency => "fix the CPU frequency (the performance governor, no turbo)",
        }
    }
}

/// One flag: its kind and one line of reasons with the measured figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    /// What.
    pub kind: FlagKind,
    /// Why, with the figures ("3.1 runnable tasks on 2 CPUs on average, 0.4% idle").
    pub reason: String,
}

/// host_saturated: idle below this percent of all CPUs' time ...
pub const SATURATED_IDLE_PCT: f64 = 5.0;
/// ... while the mean run queue exceeds the CPUs by this factor.
pub const SATURATED_RUNNABLE_PER_CPU: f64 = 1.0;
/// cpu_steal: mean steal at or above this percent of all CPUs' time.
pub const STEAL_PCT: f64 = 5.0;
/// other_processes: other processes' mean user + system share at or above this percent of all CPUs' time.
pub const OTHER_CPU_PCT: f64 = 10.0;
/// late_intervals: a line counts as late past this fraction of the interval ...
pub const LATE_FRACTION: f64 = 0.1;
/// ... and at least this many ms (the engine's own warning threshold).
pub const LATE_MIN_MS: f64 = 20.0;
/// resched_ipis: rescheduling IPIs per query (all statements) at or above this.
pub const RESCHED_IPIS_PER_QUERY: f64 = 2.0;
/// swap: pages swapped in + out during the run at or above this (1 MiB of 4 KiB pages).
pub const SWAP_PAGES: f64 = 256.0;
/// cpu_frequency: the highest sample's mean frequency above the lowest's by this fraction.
pub const FREQUENCY_CHANGE: f64 = 0.10;
/// client_cpu_bound: the client's CPUs used at or above this fraction of min(threads, CPUs).
pub const CLIENT_BUSY_FRACTION: f64 = 0.9;

/// The figures of one OS sample the flags read; absent where the sample lacks them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Figures {
    interval_s: Option<f64>,
    cpu_idle_pct: Option<f64>,
    cpu_steal_pct: Option<f64>,
    procs_running: Option<f64>,
    cpus_online: Option<f64>,
    resched_ipis_per_s: Option<f64>,
    swap_in_pages_per_s: Option<f64>,
    swap_out_pages_per_s: Option<f64>,
    client_cpu_pct: Option<f64>,
    server_cpu_pct: Option<f64>,
    other_cpu_pct: Option<f64>,
    cpu_mhz: Option<f64>,
}

/// The run's OS samples, parsed once.
struct Samples(Vec<Figures>);

impl Samples {
    /// The time-weighted mean of a figure over the samples that have it (and a length), None if none.
    fn mean(&self, f: impl Fn(&Figures) -> Option<f64>) -> Option<f64> {
        let (mut sum, mut span) = (0.0, 0.0);
        for s in &self.0 {
            if let (Some(v), Some(dt)) = (f(s).filter(|v| v.is_finite()), s.interval_s.filter(|d| *d > 0.0)) {
                sum += v * dt;
                span += dt;
            }
        }
        (span > 0.0).then(|| sum / span)
    }

    /// The time integral of a rate (the count over the run), None if no sample has it.
    fn total(&self, f: impl Fn(&Figures) -> Option<f64>) -> Option<f64> {
        let mut out = None;
        for s in &self.0 {
            if let (Some(v), Some(dt)) = (f(s).filter(|v| v.is_finite()), s.interval_s) {
                *out.get_or_insert(0.0) += v * dt;
            }
        }
        out
    }
}

/// Whether the database runs inside the client (SQLite): the run document's
/// options are keyed as the engine spells them, `db_driver`.
fn runs_in_the_client(doc: Option<&RunDocument>) -> bool {
    doc.is_some_and(|d| d.options.get("db_driver").is_some_and(|v| v == "sqlite"))
}

/// The flags of one run: `samples` are its stored OS samples (JSON objects),
/// `doc` its run document (None for command workloads and failed runs),
/// `host_cpus` the host's logical CPUs when the samples do not say.
pub fn flags(samples: &[serde_json::Value], doc: Option<&RunDocument>, host_cpus: Option<u64>) -> Vec<Flag> {
    let s = Samples(samples.iter().filter_map(|v| Figures::deserialize(v).ok()).collect());
    let mut out = Vec::new();
    let mut flag = |kind, reason: String| out.push(Flag { kind, reason });
    let cpus = s.0.iter().filter_map(|f| f.cpus_online).fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))));
    let cpus = cpus.or(host_cpus.map(|c| c as f64)).filter(|c| *c >= 1.0);
    let threads = doc.map(|d| d.threads as f64);
    let idle = s.mean(|f| f.cpu_idle_pct);

    if let (Some(cpus), Some(runnable), Some(idle)) = (cpus, s.mean(|f| f.procs_running), idle) {
        let headroom = threads.is_none_or(|t| t < cpus);
        if headroom && idle < SATURATED_IDLE_PCT && runnable > cpus * SATURATED_RUNNABLE_PER_CPU {
            flag(
                FlagKind::HostSaturated,
                format!(
                    "{runnable:.1} runnable tasks on {cpus} CPUs on average, {idle:.1}% idle{}",
                    threads.map(|t| format!(", with {t} client thread(s)")).unwrap_or_default()
                ),
            );
        }
    }
    if let Some(steal) = s.mean(|f| f.cpu_steal_pct).filter(|v| *v >= STEAL_PCT) {
        flag(FlagKind::CpuSteal, format!("the hypervisor took {steal:.1}% of all CPUs' time (steal)"));
    }
    // Without the server's own CPU (a server the lab did not start), a
    // server on this host counts as "other": its work is no sign of noise.
    let server_known = s.0.iter().any(|f| f.server_cpu_pct.is_some()) || runs_in_the_client(doc);
    if let Some(other) = s.mean(|f| f.other_cpu_pct).filter(|v| server_known && *v >= OTHER_CPU_PCT) {
        let client = s.mean(|f| f.client_cpu_pct).map(|c| format!(" (the client {c:.1}%)")).unwrap_or_default();
        flag(
            FlagKind::OtherProcesses,
            format!("processes other than the client and the server used {other:.1}% of all CPUs' time{client}"),
        );
    }
    if let Some(d) = doc {
        let late: Vec<f64> = d
            .intervals
            .iter()
            .filter_map(|i| i.late_ms.filter(|l| *l > (i.interval_s * 1000.0 * LATE_FRACTION).max(LATE_MIN_MS)))
            .collect();
        if !late.is_empty() {
            let max = late.iter().cloned().fold(0.0, f64::max);
            flag(
                FlagKind::LateIntervals,
                format!("{} of {} interval lines came out late, the latest {max:.0} ms", late.len(), d.intervals.len()),
            );
        }
        let queries = d.rates_per_s.queries;
        if let Some(ipis) = s.mean(|f| f.resched_ipis_per_s).filter(|_| queries > 0.0) {
            let per_query = ipis / queries;
            if per_query >= RESCHED_IPIS_PER_QUERY {
                flag(
                    FlagKind::ReschedIpis,
                    format!("{per_query:.1} rescheduling interrupts per query ({ipis:.0}/s at {queries:.0} queries/s)"),
                );
            }
        }
    }
    let swapped = (s.total(|f| f.swap_in_pages_per_s), s.total(|f| f.swap_out_pages_per_s));
    if let (Some(i), Some(o)) = swapped {
        if i + o >= SWAP_PAGES {
            flag(FlagKind::Swap, format!("{i:.0} pages swapped in and {o:.0} out during the run"));
        }
    }
    let mhz: Vec<f64> = s.0.iter().filter_map(|f| f.cpu_mhz).filter(|m| *m > 0.0).collect();
    if let (Some(lo), Some(hi)) = (mhz.iter().cloned().reduce(f64::min), mhz.iter().cloned().reduce(f64::max)) {
        if hi > lo * (1.0 + FREQUENCY_CHANGE) {
            flag(FlagKind::CpuFrequency, format!("the mean CPU frequency moved between {lo:.0} and {hi:.0} MHz"));
        }
    }
    // SQLite runs inside the client: a busy client is the database working, not a bottleneck beside it.
    let in_process = runs_in_the_client(doc);
    if let (Some(cpus), Some(client), false) = (cpus, s.mean(|f| f.client_cpu_pct), in_process) {
        let used = client / 100.0 * cpus;
        let can = threads.map_or(cpus, |t| t.min(cpus));
        if used >= CLIENT_BUSY_FRACTION * can {
            flag(
                FlagKind::ClientCpuBound,
                format!(
                    "the client used {used:.2} of the {can} CPU(s) its {} could use",
                    threads.map(|t| format!("{t} thread(s)")).unwrap_or("threads".into())
                ),
            );
        }
    }
    out
}

/// The flags as one line: "host_saturated (3.1 runnable ...); cpu_steal (...)".
pub fn describe(flags: &[Flag]) -> String {
    flags.iter().map(|f| format!("{}: {}", f.kind.name(), f.reason)).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_document::{sample_document, Interval};
    use serde_json::json;

    /// `n` one-second samples of a quiet 2-CPU host running one client and its server.
    fn quiet(n: usize) -> Vec<serde_json::Value> {
        (0..n)
            .map(|i| {
                json!({"time_s": i as f64 + 1.0, "interval_s": 1.0, "cpu_user_pct": 30.0, "cpu_system_pct": 15.0,
                "cpu_iowait_pct": 0.0, "cpu_idle_pct": 54.5, "cpu_steal_pct": 0.5, "procs_running": 1,
                "cpus_online": 2, "interrupts_per_s": 9000.0, "resched_ipis_per_s": 3000.0,
                "swap_in_pages_per_s": 0.0, "swap_out_pages_per_s": 0.0, "client_cpu_pct": 20.0,
                "server_cpu_pct": 22.0, "other_cpu_pct": 3.0, "cpu_mhz": null})
            })
            .collect()
    }

    /// One client thread at 5000 queries/s, lines on time.
    fn doc() -> RunDocument {
        let mut d = sample_document();
        d.threads = 1;
        d.rates_per_s.queries = 5000.0;
        d.intervals = (1..=5)
            .map(|t| Interval { time_s: t as f64, interval_s: 1.0, late_ms: Some(1.5), ..d.intervals[0].clone() })
            .collect();
        d
    }

    fn with(samples: &[serde_json::Value], set: &[(&str, serde_json::Value)]) -> Vec<serde_json::Value> {
        samples
            .iter()
            .map(|s| {
                let mut s = s.clone();
                for (k, v) in set {
                    s[*k] = v.clone();
                }
                s
            })
            .collect()
    }

    fn kinds(f: &[Flag]) -> Vec<FlagKind> {
        f.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn a_quiet_run_is_not_flagged() {
        assert_eq!(flags(&quiet(5), Some(&doc()), Some(2)), vec![]);
        // A store written before the new fields: nothing to flag on, nothing guessed.
        let old: Vec<_> = quiet(5)
            .into_iter()
            .map(|mut s| {
                let o = s.as_object_mut().unwrap();
                o.retain(|k, _| k.starts_with("cpu_") && k != "cpu_mhz" || k == "time_s" || k == "interval_s");
                s
            })
            .collect();
        let mut old_doc = doc();
        old_doc.intervals.iter_mut().for_each(|i| i.late_ms = None);
        assert_eq!(flags(&old, Some(&old_doc), Some(2)), vec![]);
        assert_eq!(flags(&[], None, None), vec![]);
    }

    #[test]
    fn host_saturated() {
        let busy = with(&quiet(5), &[("procs_running", json!(4)), ("cpu_idle_pct", json!(0.5))]);
        let f = flags(&busy, Some(&doc()), Some(2));
        assert_eq!(kinds(&f), [FlagKind::HostSaturated]);
        assert_eq!(f[0].reason, "4.0 runnable tasks on 2 CPUs on average, 0.5% idle, with 1 client thread(s)");
        // As many client threads as CPUs: the workload itself fills the host.
        let mut many = doc();
        many.threads = 2;
        assert_eq!(flags(&busy, Some(&many), Some(2)), vec![]);
        // A long run queue with idle time left, or no idle with the queue within the CPUs: not saturated.
        assert_eq!(flags(&with(&quiet(5), &[("procs_running", json!(4))]), Some(&doc()), Some(2)), vec![]);
        assert_eq!(flags(&with(&quiet(5), &[("cpu_idle_pct", json!(0.5))]), Some(&doc()), Some(2)), vec![]);
    }

    #[test]
    fn cpu_steal() {
        let f = flags(&with(&quiet(5), &[("cpu_steal_pct", json!(12.0))]), Some(&doc()), Some(2));
        assert_eq!(kinds(&f), [FlagKind::CpuSteal]);
        assert!(f[0].reason.contains("12.0%"), "{f:?}");
        assert_eq!(flags(&with(&quiet(5), &[("cpu_steal_pct", json!(4.9))]), Some(&doc()), Some(2)), vec![]);
    }

    #[test]
    fn other_processes() {
        // One noisy second of five: 3 × 4/5 + 43 / 5 = 11%.
        let mut s = quiet(5);
        s[2]["other_cpu_pct"] = json!(43.0);
        let f = flags(&s, Some(&doc()), Some(2));
        assert_eq!(kinds(&f), [FlagKind::OtherProcesses]);
        assert_eq!(
            f[0].reason,
            "processes other than the client and the server used 11.0% of all CPUs' time (the client 20.0%)"
        );
        s[2]["other_cpu_pct"] = json!(30.0);
        assert_eq!(flags(&s, Some(&doc()), Some(2)), vec![]);
        // Weighted by the sample's length: the same 43% over a 0.2 s final interval is less.
        s[2]["other_cpu_pct"] = json!(3.0);
        s.push(json!({"interval_s": 0.2, "other_cpu_pct": 43.0}));
        assert_eq!(flags(&s, Some(&doc()), Some(2)), vec![]);
    }

    #[test]
    fn other_processes_need_the_servers_own_cpu() {
        // An external server on this host: its CPU is in other_cpu_pct.
        let external = with(&quiet(5), &[("server_cpu_pct", json!(null)), ("other_cpu_pct", json!(43.0))]);
        let mut d = doc();
        d.options.insert("db_driver".into(), "mysql".into());
        assert_eq!(flags(&external, Some(&d), Some(2)), vec![]);
        assert_eq!(flags(&external, None, Some(2)), vec![]);
        // SQLite runs inside the client: there is no server to miss.
        d.options.insert("db_driver".into(), "sqlite".into());
        assert_eq!(kinds(&flags(&external, Some(&d), Some(2))), [FlagKind::OtherProcesses]);
    }

    #[test]
    fn late_intervals() {
        let mut d = doc();
        d.intervals[3].late_ms = Some(180.0);
        let f = flags(&quiet(5), Some(&d), Some(2));
        assert_eq!(kinds(&f), [FlagKind::LateIntervals]);
        assert_eq!(f[0].reason, "1 of 5 interval lines came out late, the latest 180 ms");
        // Within 10% of a 1 s interval: on time.
        d.intervals[3].late_ms = Some(99.0);
        assert_eq!(flags(&quiet(5), Some(&d), Some(2)), vec![]);
        // Short intervals: at least 20 ms.
        d.intervals.iter_mut().for_each(|i| i.interval_s = 0.1);
        d.intervals[3].late_ms = Some(19.0);
        assert_eq!(flags(&quiet(5), Some(&d), Some(2)), vec![]);
    }

    #[test]
    fn resched_ipis_per_query() {
        let s = with(&quiet(5), &[("resched_ipis_per_s", json!(12000.0))]);
        let f = flags(&s, Some(&doc()), Some(2));
        assert_eq!(kinds(&f), [FlagKind::ReschedIpis]);
        assert_eq!(f[0].reason, "2.4 rescheduling interrupts per query (12000/s at 5000 queries/s)");
        // 0.6 per query (quiet), or no figure at all (arm64 without IPI lines, older stores).
        assert_eq!(flags(&with(&quiet(5), &[("resched_ipis_per_s", json!(null))]), Some(&doc()), Some(2)), vec![]);
        // No queries (a command workload without a document): no ratio.
        assert_eq!(flags(&s, None, Some(2)).iter().filter(|f| f.kind == FlagKind::ReschedIpis).count(), 0);
    }

    #[test]
    fn swap() {
        let mut s = quiet(5);
        s[1]["swap_in_pages_per_s"] = json!(100.0);
        s[2]["swap_out_pages_per_s"] = json!(200.0);
        let f = flags(&s, Some(&doc()), Some(2));
        assert_eq!(kinds(&f), [FlagKind::Swap]);
        assert_eq!(f[0].reason, "100 pages swapped in and 200 out during the run");
        s[2]["swap_out_pages_per_s"] = json!(100.0);
        assert_eq!(flags(&s, Some(&doc()), Some(2)), vec![]);
    }

    #[test]
    fn cpu_frequency() {
        let mut s = with(&quiet(5), &[("cpu_mhz", json!(2400.0))]);
        assert_eq!(flags(&s, Some(&doc()), Some(2)), vec![]);
        s[3]["cpu_mhz"] = json!(2700.0);
        let f = flags(&s, Some(&doc()), Some(2));
        assert_eq!(kinds(&f), [FlagKind::CpuFrequency]);
        assert_eq!(f[0].reason, "the mean CPU frequency moved between 2400 and 2700 MHz");
        s[3]["cpu_mhz"] = json!(2600.0);
        assert_eq!(flags(&s, Some(&doc()), Some(2)), vec![]);
    }

    #[test]
    fn client_cpu_bound() {
        // One thread on 2 CPUs: 46% of all CPUs is 0.92 of a CPU.
        let s = with(&quiet(5), &[("client_cpu_pct", json!(46.0))]);
        let f = flags(&s, Some(&doc()), Some(2));
        assert_eq!(kinds(&f), [FlagKind::ClientCpuBound]);
        assert_eq!(f[0].reason, "the client used 0.92 of the 1 CPU(s) its 1 thread(s) could use");
        assert_eq!(flags(&with(&quiet(5), &[("client_cpu_pct", json!(44.0))]), Some(&doc()), Some(2)), vec![]);
        // Eight threads on 2 CPUs may use both: 46% is not bound.
        let mut d = doc();
        d.threads = 8;
        assert_eq!(flags(&s, Some(&d), Some(2)), vec![]);
        // SQLite: the database is the client.
        let mut d = doc();
        d.options.insert("db_driver".into(), "sqlite".into());
        assert_eq!(flags(&s, Some(&d), Some(2)), vec![]);
    }

    #[test]
    fn kinds_serialise_in_snake_case() {
        for k in [FlagKind::HostSaturated, FlagKind::ReschedIpis, FlagKind::ClientCpuBound] {
            assert_eq!(serde_json::to_value(k).unwrap(), json!(k.name()));
        }
        let f = Flag { kind: FlagKind::CpuSteal, reason: "x".into() };
        assert_eq!(serde_json::to_value(&f).unwrap(), json!({"kind": "cpu_steal", "reason": "x"}));
    }
}
