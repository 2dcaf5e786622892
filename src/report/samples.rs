//! The lab's stored samples in the report: what the host and the server did
//! during each run (issue 24, item 1).
//!
//! OS samples (`source = 'os'`, `lab::sampler::OsSample`) hold rates over
//! each sampling interval; server samples (`source = 'server'`) hold the
//! server's cumulative status (the first sample whole, later ones only what
//! changed), turned into rates here. Per run, a figure is the time-weighted
//! mean over the samples after the warmup (a server counter: its increase
//! over that window divided by the window's length); per cell, the median of
//! its ok repeats' per-run figures. A figure no sample holds is `None` and
//! printed as a dash, never as 0: fields the sampler gained later
//! (`interrupts_per_s`, `client_cpu_pct`, ...) are simply absent in older
//! stores.
//!
//! Which server counters are shown: the spec's `[report] server_counters`
//! (as the server names them: `Innodb_rows_read`, `db.xact_commit`), else
//! the defaults of the servers that reported (MariaDB/MySQL or PostgreSQL).
//! A chosen name no server reported is said once in `notes`.

use super::model::Dataset;
use super::tables::{self, Cell, Row, Table};
use crate::render::svg::{self, LineChart, Point, Series, Shade, XAxis};
use crate::store::SamplePoint;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

/// How a figure is scaled and labelled in tables and charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Percent of all CPUs' time.
    Percent,
    /// A plain number (tasks, CPUs, MHz, per second, per query).
    Plain,
    /// Bytes, shown in MiB.
    Bytes,
    /// Bytes per second, shown in MiB/s.
    BytesPerSecond,
}

impl Unit {
    /// The value as tables and charts show it.
    pub fn scale(self, v: f64) -> f64 {
        match self {
            Unit::Bytes | Unit::BytesPerSecond => v / (1024.0 * 1024.0),
            _ => v,
        }
    }
}

/// Which of the sar-like tables a figure is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// CPU and scheduler.
    Cpu,
    /// Memory, swap, disk and network.
    Io,
}

/// One OS figure: its field in the stored sample, its short heading, what it is.
#[derive(Debug, Clone, Copy)]
pub struct OsFigure {
    /// The sample's field (the export's name); `resched_ipis_per_query` is derived.
    pub key: &'static str,
    /// Column heading (unit included).
    pub heading: &'static str,
    /// What it is, for legends and tooltips.
    pub what: &'static str,
    /// Scaling.
    pub unit: Unit,
    /// Table.
    pub group: Group,
}

const fn os(key: &'static str, heading: &'static str, what: &'static str, unit: Unit, group: Group) -> OsFigure {
    OsFigure { key, heading, what, unit, group }
}

/// The derived figure: a run's rescheduling IPIs per second over its queries per second.
pub const RESCHED_PER_QUERY: &str = "resched_ipis_per_query";

/// Every OS figure the report knows, in table order (the agreed field names of
/// the lab's OS sample; those a store lacks are left out of the tables).
pub const OS_FIGURES: &[OsFigure] = &[
    os("cpu_user_pct", "usr%", "CPU time in user mode, % of all CPUs", Unit::Percent, Group::Cpu),
    os(
        "cpu_system_pct",
        "sys%",
        "CPU time in the kernel (irq, softirq included), % of all CPUs",
        Unit::Percent,
        Group::Cpu,
    ),
    os("cpu_iowait_pct", "iowait%", "idle CPU time with I/O outstanding, % of all CPUs", Unit::Percent, Group::Cpu),
    os(
        "cpu_steal_pct",
        "steal%",
        "CPU time the hypervisor gave other guests, % of all CPUs",
        Unit::Percent,
        Group::Cpu,
    ),
    os("cpu_idle_pct", "idle%", "idle CPU time, % of all CPUs", Unit::Percent, Group::Cpu),
    os(
        "client_cpu_pct",
        "client%",
        "the run's client process (dbbench or the command), % of all CPUs",
        Unit::Percent,
        Group::Cpu,
    ),
    os("server_cpu_pct", "server%", "the managed server's process, % of all CPUs", Unit::Percent, Group::Cpu),
    os(
        "other_cpu_pct",
        "other%",
        "every other process (user+system − client − server), % of all CPUs",
        Unit::Percent,
        Group::Cpu,
    ),
    os("procs_running", "runq", "runnable tasks (/proc/stat procs_running)", Unit::Plain, Group::Cpu),
    os("cpus_online", "cpus", "CPUs in /proc/stat", Unit::Plain, Group::Cpu),
    os("context_switches_per_s", "cswch/s", "context switches per second, all CPUs", Unit::Plain, Group::Cpu),
    os("interrupts_per_s", "intr/s", "interrupts per second, all CPUs", Unit::Plain, Group::Cpu),
    os(
        "resched_ipis_per_s",
        "resched/s",
        "rescheduling IPIs per second (/proc/interrupts RES)",
        Unit::Plain,
        Group::Cpu,
    ),
    os(
        RESCHED_PER_QUERY,
        "resched/q",
        "rescheduling IPIs per query: the run's IPIs per second over its queries per second",
        Unit::Plain,
        Group::Cpu,
    ),
    os("cpu_mhz", "MHz", "mean CPU frequency (cpufreq scaling_cur_freq)", Unit::Plain, Group::Cpu),
    os("mem_used_bytes", "used MiB", "memory used (MemTotal − MemAvailable)", Unit::Bytes, Group::Io),
    os("mem_available_bytes", "avail MiB", "MemAvailable", Unit::Bytes, Group::Io),
    os("page_cache_bytes", "cache MiB", "page cache (Cached)", Unit::Bytes, Group::Io),
    os("swap_in_pages_per_s", "swpin/s", "pages swapped in per second", Unit::Plain, Group::Io),
    os("swap_out_pages_per_s", "swpout/s", "pages swapped out per second", Unit::Plain, Group::Io),
    os(
        "disk_read_bytes_per_s",
        "rd MiB/s",
        "disk reads, MiB per second (whole disks)",
        Unit::BytesPerSecond,
        Group::Io,
    ),
    os(
        "disk_write_bytes_per_s",
        "wr MiB/s",
        "disk writes, MiB per second (whole disks)",
        Unit::BytesPerSecond,
        Group::Io,
    ),
    os("disk_reads_per_s", "rd/s", "completed disk reads per second", Unit::Plain, Group::Io),
    os("disk_writes_per_s", "wr/s", "completed disk writes per second", Unit::Plain, Group::Io),
    os(
        "net_rx_bytes_per_s",
        "rx MiB/s",
        "network received, MiB per second (all interfaces but lo)",
        Unit::BytesPerSecond,
        Group::Io,
    ),
    os(
        "net_tx_bytes_per_s",
        "tx MiB/s",
        "network sent, MiB per second (all interfaces but lo)",
        Unit::BytesPerSecond,
        Group::Io,
    ),
    os(
        "loopback_bytes_per_s",
        "lo MiB/s",
        "loopback traffic, MiB per second (client and server on one host)",
        Unit::BytesPerSecond,
        Group::Io,
    ),
];

/// MariaDB/MySQL counters shown when the spec chooses none.
pub const MYSQL_DEFAULTS: &[&str] = &[
    "Innodb_rows_read",
    "Innodb_rows_inserted",
    "Innodb_rows_updated",
    "Innodb_rows_deleted",
    "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_reads",
    "Innodb_data_reads",
    "Innodb_data_writes",
    "Innodb_log_writes",
    "Key_read_requests",
    "Key_reads",
    "Key_writes",
    "Handler_read_first",
    "Handler_read_key",
    "Handler_read_next",
    "Handler_read_prev",
    "Handler_read_rnd",
    "Handler_read_rnd_next",
    "Threads_running",
];

/// PostgreSQL counters shown when the spec chooses none (`pg_stat_database`
/// as `db.*`, `pg_stat_bgwriter` as `bgwriter.*`, as the lab stores them).
pub const PGSQL_DEFAULTS: &[&str] = &[
    "db.xact_commit",
    "db.xact_rollback",
    "db.blks_read",
    "db.blks_hit",
    "db.tup_returned",
    "db.tup_fetched",
    "db.tup_inserted",
    "db.tup_updated",
    "db.tup_deleted",
    "bgwriter.buffers_checkpoint",
    "bgwriter.buffers_clean",
    "bgwriter.buffers_backend",
    "bgwriter.buffers_alloc",
    "db.numbackends",
];

/// Whether a status value is a level (shown as its mean), not a counter
/// (shown as a rate).
pub fn is_gauge(name: &str) -> bool {
    const GAUGES: &[&str] = &[
        "Threads_running",
        "Threads_connected",
        "Threads_cached",
        "Innodb_row_lock_current_waits",
        "Innodb_history_list_length",
        "Max_used_connections",
        "Memory_used",
        "Uptime",
        "db.numbackends",
    ];
    GAUGES.contains(&name)
        || ["Open_", "Innodb_buffer_pool_pages_", "Innodb_buffer_pool_bytes_"].iter().any(|p| name.starts_with(p))
}

/// A server counter shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// The status name as the server reports it (`db.`/`bgwriter.` for PostgreSQL's views).
    pub name: String,
    /// A level (mean over the window), not a rate.
    pub gauge: bool,
}

impl Counter {
    /// Column or row heading with its unit.
    pub fn heading(&self) -> String {
        if self.gauge {
            format!("{} (mean)", self.name)
        } else {
            format!("{}/s", self.name)
        }
    }

    /// The export's field name.
    pub fn key(&self) -> String {
        if self.gauge {
            self.name.clone()
        } else {
            format!("{}_per_s", self.name)
        }
    }
}

/// Points in time, each with one value per figure (None: not measured).
pub type Timeline = Vec<(f64, Vec<Option<f64>>)>;

/// A run's samples as a series: per sample, its time (seconds since the end of
/// the warmup, on the sampler's clock) and one value per figure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSeries {
    /// `(x, one value per OS_FIGURES entry)`.
    pub os: Timeline,
    /// `(x, one value per counter)`: rates over the interval ending at x, gauges at x.
    pub server: Timeline,
}

/// One run's figures over its samples after the warmup.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    /// One per `OS_FIGURES` entry.
    pub os: Vec<Option<f64>>,
    /// One per shown counter.
    pub server: Vec<Option<f64>>,
    /// OS samples stored for the run (all, warmup included).
    pub os_samples: usize,
    /// Server samples stored for the run.
    pub server_samples: usize,
}

/// One cell's figures: medians over its ok repeats' per-run figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellSummary {
    /// One per `OS_FIGURES` entry.
    pub os: Vec<Option<f64>>,
    /// One per shown counter.
    pub server: Vec<Option<f64>>,
    /// Ok repeats that have OS samples.
    pub runs: usize,
}

/// Every run's and cell's sample figures of one experiment.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// Indexes into `OS_FIGURES` of the figures some cell has, in table order.
    pub os_shown: Vec<usize>,
    /// The server counters shown (chosen and reported by some server).
    pub counters: Vec<Counter>,
    /// How the counters were chosen, for the legend.
    pub counters_from: String,
    /// One line each: chosen counters no server reported.
    pub notes: Vec<String>,
    /// Per run (index into `Dataset::runs`).
    pub runs: Vec<RunSummary>,
    /// Per run, the series the charts draw.
    pub series: Vec<RunSeries>,
    /// Per cell `(configuration, workload, threads)`.
    pub cells: BTreeMap<(usize, usize, u32), CellSummary>,
}

/// What each summary figure is, for every layout's legend.
pub const SUMMARY_LEGEND: &str = "per cell: the median over its ok repeats of each run's figure; a run's figure: the time-weighted mean of its samples after the warmup (a server counter: its increase over that window per second); - not measured";

fn number_in(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|x| x.is_finite())
}

/// The spec's `[report] server_counters`, from the spec text stored with the experiment.
pub fn spec_counters(spec_text: &str) -> Option<Vec<String>> {
    let doc: toml::Table = spec_text.parse().ok()?;
    let list = doc.get("report")?.as_table()?.get("server_counters")?.as_array()?;
    Some(list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
}

/// The median of the values present.
fn median(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().flatten().collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The time-weighted mean of one OS field over samples `(interval_s, sample)`.
fn weighted_mean<'a>(samples: impl IntoIterator<Item = (f64, &'a serde_json::Value)>, key: &str) -> Option<f64> {
    let (mut sum, mut weight) = (0.0, 0.0);
    for (w, s) in samples {
        if let Some(v) = s.get(key).and_then(number_in) {
            sum += v * w;
            weight += w;
        }
    }
    (weight > 0.0).then(|| sum / weight)
}

/// A server's cumulative status at each sample: every value carried forward
/// from the sample that last changed it.
fn cumulative(samples: &[&SamplePoint], names: &[Counter]) -> Timeline {
    let mut state: HashMap<&str, f64> = HashMap::new();
    let mut out = Vec::with_capacity(samples.len());
    for s in samples {
        if let Some(o) = s.data.as_object() {
            for c in names {
                if let Some(v) = o.get(&c.name).and_then(number_in) {
                    state.insert(c.name.as_str(), v);
                } else if o.contains_key(&c.name) {
                    // Reported but not a number: not measured from here on.
                    state.remove(c.name.as_str());
                }
            }
        }
        out.push((s.time_s, names.iter().map(|c| state.get(c.name.as_str()).copied()).collect()));
    }
    out
}

/// A run's server figures over the window after `warmup` and its series.
/// A counter's rate: its increases summed over the intervals in the window,
/// over their length (an interval in which it went down, a restart or a
/// FLUSH STATUS, counts in neither); a gauge: the mean of its values.
fn server_figures(
    values: &[(f64, Vec<Option<f64>>)],
    counters: &[Counter],
    warmup: f64,
) -> (Vec<Option<f64>>, Timeline) {
    let start = values.iter().rposition(|(t, _)| *t <= warmup + 1e-9).unwrap_or(0);
    let mut figures = Vec::with_capacity(counters.len());
    for (i, c) in counters.iter().enumerate() {
        if c.gauge {
            let window = if values.len() > start + 1 { &values[start + 1..] } else { &values[start..] };
            let present: Vec<f64> = window.iter().filter_map(|(_, v)| v[i]).collect();
            figures.push((!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64));
        } else {
            let (mut delta, mut secs) = (0.0, 0.0);
            for pair in values[start..].windows(2) {
                let ((t0, v0), (t1, v1)) = (&pair[0], &pair[1]);
                if let (Some(a), Some(b)) = (v0[i], v1[i]) {
                    if b >= a && t1 > t0 {
                        delta += b - a;
                        secs += t1 - t0;
                    }
                }
            }
            figures.push((secs > 0.0).then(|| delta / secs));
        }
    }
    let series = values
        .windows(2)
        .map(|pair| {
            let ((t0, v0), (t1, v1)) = (&pair[0], &pair[1]);
            let row = counters
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if c.gauge {
                        v1[i]
                    } else {
                        match (v0[i], v1[i]) {
                            (Some(a), Some(b)) if b >= a && t1 > t0 => Some((b - a) / (t1 - t0)),
                            _ => None,
                        }
                    }
                })
                .collect();
            (t1 - warmup, row)
        })
        .collect();
    (figures, series)
}

impl Samples {
    /// Summarises stored samples (any order) of `data`'s runs.
    pub fn from_points(data: &Dataset, points: &[SamplePoint]) -> Samples {
        let index: HashMap<i64, usize> = data.runs.iter().enumerate().map(|(i, r)| (r.figures.id, i)).collect();
        let mut os: Vec<Vec<&SamplePoint>> = vec![Vec::new(); data.runs.len()];
        let mut server: Vec<Vec<&SamplePoint>> = vec![Vec::new(); data.runs.len()];
        let mut reported: BTreeSet<&str> = BTreeSet::new();
        for p in points {
            let Some(&i) = index.get(&p.run_id) else { continue };
            match p.source.as_str() {
                "os" => os[i].push(p),
                "server" => {
                    if let Some(o) = p.data.as_object() {
                        reported.extend(o.keys().map(String::as_str));
                    }
                    server[i].push(p)
                }
                _ => {}
            }
        }
        for v in os.iter_mut().chain(server.iter_mut()) {
            v.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
        }
        // Which counters.
        let (chosen, counters_from): (Vec<String>, String) = match spec_counters(&data.experiment.spec_text) {
            Some(list) => (list, "the spec's [report] server_counters".into()),
            None => {
                let mut list = Vec::new();
                if reported.iter().any(|k| !k.starts_with("db.") && !k.starts_with("bgwriter.")) {
                    list.extend(MYSQL_DEFAULTS.iter().map(|s| s.to_string()));
                }
                if reported.iter().any(|k| k.starts_with("db.")) {
                    list.extend(PGSQL_DEFAULTS.iter().map(|s| s.to_string()));
                }
                (list, "the defaults (choose with [report] server_counters in the spec)".into())
            }
        };
        let mut notes = Vec::new();
        let mut counters = Vec::new();
        let mut unreported = Vec::new();
        for name in chosen {
            if counters.iter().any(|c: &Counter| c.name == name) || unreported.contains(&name) {
                continue;
            }
            if reported.contains(name.as_str()) {
                counters.push(Counter { gauge: is_gauge(&name), name });
            } else {
                unreported.push(name);
            }
        }
        if !unreported.is_empty() {
            notes.push(format!(
                "server counters no server of this experiment reported, not shown: {}",
                unreported.join(", ")
            ));
        }
        let settings_warmup = data.experiment.settings.get("warmup_s").and_then(|v| v.as_f64()).unwrap_or(0.0);
        let mut runs = Vec::with_capacity(data.runs.len());
        let mut series = Vec::with_capacity(data.runs.len());
        for (i, run) in data.runs.iter().enumerate() {
            let wl = &data.workloads[run.workload];
            // The spec's warmup applies to `dbbench run` workloads only.
            let warmup = if wl.is_test() && !wl.tpch { settings_warmup } else { 0.0 };
            let interval = |s: &SamplePoint| s.data.get("interval_s").and_then(number_in).unwrap_or(1.0);
            let window: Vec<(f64, &serde_json::Value)> = os[i]
                .iter()
                .filter(|s| s.time_s - interval(s) / 2.0 > warmup)
                .map(|s| (interval(s), &s.data))
                .collect();
            let mut os_figures: Vec<Option<f64>> = OS_FIGURES
                .iter()
                .map(|f| if f.key == RESCHED_PER_QUERY { None } else { weighted_mean(window.iter().copied(), f.key) })
                .collect();
            let resched = OS_FIGURES.iter().position(|f| f.key == "resched_ipis_per_s");
            let per_query = OS_FIGURES.iter().position(|f| f.key == RESCHED_PER_QUERY);
            if let (Some(r), Some(q)) = (resched, per_query) {
                os_figures[q] = os_figures[r].zip(run.figures.qps.filter(|q| *q > 0.0)).map(|(r, q)| r / q);
            }
            let values = cumulative(&server[i], &counters);
            let (server_figures, server_series) = server_figures(&values, &counters, warmup);
            let os_series = os[i]
                .iter()
                .map(|s| {
                    let row = OS_FIGURES.iter().map(|f| s.data.get(f.key).and_then(number_in)).collect();
                    (s.time_s - warmup, row)
                })
                .collect();
            runs.push(RunSummary {
                os: os_figures,
                server: server_figures,
                os_samples: os[i].len(),
                server_samples: server[i].len(),
            });
            series.push(RunSeries { os: os_series, server: server_series });
        }
        let mut cells = BTreeMap::new();
        for (w, wl) in data.workloads.iter().enumerate() {
            for &t in &wl.threads {
                for c in 0..data.configurations.len() {
                    let members: Vec<usize> = (0..data.runs.len())
                        .filter(|&i| {
                            let r = &data.runs[i];
                            r.configuration == c && r.workload == w && r.figures.threads == t && r.ok()
                        })
                        .collect();
                    if members.is_empty() {
                        continue;
                    }
                    let cell = CellSummary {
                        os: (0..OS_FIGURES.len()).map(|k| median(members.iter().map(|&i| runs[i].os[k]))).collect(),
                        server: (0..counters.len())
                            .map(|k| median(members.iter().map(|&i| runs[i].server[k])))
                            .collect(),
                        runs: members.iter().filter(|&&i| runs[i].os_samples > 0).count(),
                    };
                    cells.insert((c, w, t), cell);
                }
            }
        }
        let os_shown =
            (0..OS_FIGURES.len()).filter(|&k| cells.values().any(|c: &CellSummary| c.os[k].is_some())).collect();
        Samples { os_shown, counters, counters_from, notes, runs, series, cells }
    }

    /// Whether any run has samples.
    pub fn is_empty(&self) -> bool {
        self.runs.iter().all(|r| r.os_samples == 0 && r.server_samples == 0)
    }

    /// The cells in table order: workloads in spec order, threads ascending, configurations in spec order.
    fn ordered<'a>(&'a self, data: &'a Dataset) -> impl Iterator<Item = ((usize, usize, u32), &'a CellSummary)> + 'a {
        data.workloads.iter().enumerate().flat_map(move |(w, wl)| {
            wl.threads.iter().flat_map(move |&t| {
                (0..data.configurations.len()).filter_map(move |c| Some(((c, w, t), self.cells.get(&(c, w, t))?)))
            })
        })
    }

    /// The sar-like tables: CPU and scheduler; memory, disk and network (rows
    /// per cell, a column per figure); per workload the server counters (a
    /// row per counter, a column per configuration and thread count).
    pub fn tables(&self, data: &Dataset) -> Vec<Table> {
        let mut out = Vec::new();
        if self.is_empty() {
            return out;
        }
        for (group, title) in [
            (Group::Cpu, "OS samples: CPU and scheduler per cell"),
            (Group::Io, "OS samples: memory, swap, disk and network per cell"),
        ] {
            let shown: Vec<usize> = self.os_shown.iter().copied().filter(|&k| OS_FIGURES[k].group == group).collect();
            if shown.is_empty() {
                continue;
            }
            let mut columns = vec!["runs".to_string()];
            columns.extend(shown.iter().map(|&k| OS_FIGURES[k].heading.to_string()));
            let mut rows = Vec::new();
            let mut last_workload = None;
            for ((c, w, t), cell) in self.ordered(data) {
                if last_workload != Some(w) {
                    rows.push(Row { indent: 0, label: data.workloads[w].name.clone(), cells: Vec::new() });
                    last_workload = Some(w);
                }
                let mut cells = vec![Cell { text: cell.runs.to_string(), note: None }];
                cells.extend(shown.iter().map(|&k| figure_cell(cell.os[k], OS_FIGURES[k].unit, OS_FIGURES[k].what)));
                let threads = if t == 1 { "1 thread".to_string() } else { format!("{t} threads") };
                rows.push(Row { indent: 1, label: format!("{}, {threads}", data.configurations[c].name), cells });
            }
            let mut legend = vec![SUMMARY_LEGEND.to_string(), "runs: ok repeats with OS samples".to_string()];
            legend.extend(shown.iter().map(|&k| format!("{}: {}", OS_FIGURES[k].heading, OS_FIGURES[k].what)));
            out.push(Table {
                title: title.into(),
                corner: "workload / configuration".into(),
                column_caption: String::new(),
                columns,
                rows,
                legend,
            });
        }
        if !self.counters.is_empty() {
            for (w, wl) in data.workloads.iter().enumerate() {
                let keys: Vec<(usize, u32)> = wl
                    .threads
                    .iter()
                    .flat_map(|&t| (0..data.configurations.len()).map(move |c| (c, t)))
                    .filter(|&(c, t)| self.cells.contains_key(&(c, w, t)))
                    .collect();
                let measured = |k: usize| keys.iter().any(|&(c, t)| self.cells[&(c, w, t)].server[k].is_some());
                if !(0..self.counters.len()).any(measured) {
                    continue;
                }
                let columns = keys.iter().map(|&(c, t)| format!("{} {t}", data.configurations[c].name)).collect();
                let rows = self
                    .counters
                    .iter()
                    .enumerate()
                    .map(|(k, counter)| Row {
                        indent: 0,
                        label: counter.heading(),
                        cells: keys
                            .iter()
                            .map(|&(c, t)| {
                                figure_cell(self.cells[&(c, w, t)].server[k], Unit::Plain, &counter.heading())
                            })
                            .collect(),
                    })
                    .collect();
                out.push(Table {
                    title: format!("server counters: {}", wl.name),
                    corner: "counter".into(),
                    column_caption: "configuration, threads".into(),
                    columns,
                    rows,
                    legend: vec![
                        SUMMARY_LEGEND.to_string(),
                        format!("counters: {}; /s a rate, (mean) a level", self.counters_from),
                    ],
                });
            }
        }
        out
    }

    /// The HTML charts of one (workload, threads): CPU stacked per
    /// configuration, run queue, client and server CPU, and the server
    /// counters (folded), each the mean over the cell's ok repeats of
    /// the k-th sample (repeats aligned by sample index, as the throughput
    /// series are by interval index).
    pub fn charts(&self, data: &Dataset, w: usize, t: u32) -> (Vec<String>, Vec<String>) {
        let wl = &data.workloads[w];
        let cell = SampleCell { data, w, t };
        let mut out: Vec<String> = (0..data.configurations.len()).filter_map(|c| self.cpu_stacked(&cell, c)).collect();
        let runq = self.os_lines(&cell, &[("procs_running", false)], false);
        if !runq.is_empty() {
            out.push(sample_chart(format!("{}, {t} threads: run queue", wl.name), "runnable tasks", runq));
        }
        let own = self.os_lines(&cell, &[("client_cpu_pct", false), ("server_cpu_pct", true)], true);
        if !own.is_empty() {
            out.push(sample_chart(format!("{}, {t} threads: client and server CPU", wl.name), "% of all CPUs", own));
        }
        let counter_charts = (0..self.counters.len()).filter_map(|k| self.counter_chart(&cell, k)).collect();
        (out, counter_charts)
    }

    /// Configuration `c`'s CPU in one cell, stacked: user, system, iowait,
    /// steal as bands on top of each other, idle the rest; `None` without
    /// samples.
    fn cpu_stacked(&self, cell: &SampleCell, c: usize) -> Option<String> {
        let (data, t) = (cell.data, cell.t);
        let conf = &data.configurations[c];
        let runs = cell.members(c);
        let parts: Vec<(usize, &str)> = ["cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct"]
            .iter()
            .filter_map(|k| Some((os_figure(k)?, OS_FIGURES[os_figure(k)?].heading)))
            .collect();
        let aligned: Vec<Timeline> =
            parts.iter().map(|&(k, _)| align(runs.iter().map(|&i| os_column(&self.series[i], k)))).collect();
        if aligned.iter().all(|a| a.is_empty()) {
            return None;
        }
        let len = aligned.iter().map(Vec::len).max().unwrap_or(0);
        let mut below = vec![0.0; len];
        let mut series = Vec::new();
        for (n, ((_, name), ticks)) in parts.iter().zip(&aligned).enumerate() {
            let mut points = Vec::new();
            let mut band = Vec::new();
            for (j, (x, vals)) in ticks.iter().enumerate() {
                let Some(v) = mean(vals) else { continue };
                let lo = below[j];
                below[j] += v;
                band.push((*x, lo, below[j]));
                points.push(Point {
                    x: *x,
                    y: below[j],
                    err: None,
                    tooltip: format!(
                        "{}, {x:.1} s: {name} {} (mean of {} run(s))",
                        conf.name,
                        tables::number(v),
                        vals.iter().flatten().count()
                    ),
                });
            }
            series.push(Series { name: name.to_string(), colour: n, dashed: false, points, band });
        }
        Some(sample_chart(
            format!("{}, {t} threads, {}: CPU, stacked (idle the rest)", data.workloads[cell.w].name, conf.name),
            "% of all CPUs",
            series,
        ))
    }

    /// One line per configuration and OS figure of `figures` (`true`:
    /// dashed, for a second figure); `suffix` adds the figure's heading to
    /// the configuration's name.
    fn os_lines(&self, cell: &SampleCell, figures: &[(&str, bool)], suffix: bool) -> Vec<Series> {
        let mut series = Vec::new();
        for (c, conf) in cell.data.configurations.iter().enumerate() {
            let runs = cell.members(c);
            for &(key, dashed) in figures {
                let Some(k) = os_figure(key) else { continue };
                let ticks = align(runs.iter().map(|&i| os_column(&self.series[i], k)));
                let figure = &OS_FIGURES[k];
                let points = mean_points(&ticks, &conf.name, figure.heading, |v| figure.unit.scale(v));
                if points.is_empty() {
                    continue;
                }
                let name = if suffix { format!("{} {}", conf.name, OS_FIGURES[k].heading) } else { conf.name.clone() };
                series.push(Series { name, colour: c, dashed, points, band: Vec::new() });
            }
        }
        series
    }

    /// Server counter `k` in one cell, a line per configuration; `None`
    /// when no configuration sampled it.
    fn counter_chart(&self, cell: &SampleCell, k: usize) -> Option<String> {
        let (counter, t) = (&self.counters[k], cell.t);
        let mut series = Vec::new();
        for (c, conf) in cell.data.configurations.iter().enumerate() {
            let ticks = align(
                cell.members(c)
                    .iter()
                    .map(|&i| self.series[i].server.iter().map(|(x, v)| (*x, v[k])).collect::<Vec<_>>()),
            );
            let points = mean_points(&ticks, &conf.name, &counter.heading(), |v| v);
            if !points.is_empty() {
                series.push(Series { name: conf.name.clone(), colour: c, dashed: false, points, band: Vec::new() });
            }
        }
        (!series.is_empty()).then(|| {
            sample_chart(
                format!("{}, {t} threads: {}", cell.data.workloads[cell.w].name, counter.heading()),
                &counter.heading(),
                series,
            )
        })
    }

    /// The page's samples section (tables, then charts per workload and
    /// thread count), or empty when no run has samples.
    pub fn html_section(&self, data: &Dataset, table_html: impl Fn(&Table) -> String) -> String {
        if self.is_empty() {
            return String::new();
        }
        let mut o = String::new();
        for n in &self.notes {
            let _ = writeln!(o, "<div class=\"warn\">{}</div>", svg::escape(n));
        }
        for t in self.tables(data) {
            o.push_str(&table_html(&t));
        }
        let _ = writeln!(o, "<p class=\"legend\">Samples over time: the mean over a cell's ok repeats of the k-th sample. The x axis is the sampler's clock, which starts just before the client, moved so that 0 is the end of the warmup: it meets the throughput series above within the client's start-up. Server counters are rates over each sampling interval.</p>");
        for (w, wl) in data.workloads.iter().enumerate() {
            for &t in &wl.threads {
                let (os_charts, counter_charts) = self.charts(data, w, t);
                if os_charts.is_empty() && counter_charts.is_empty() {
                    continue;
                }
                let _ = writeln!(o, "<h3>{}, {t} threads</h3>\n<div class=\"charts\">", svg::escape(&wl.name));
                for c in &os_charts {
                    o.push_str(c);
                }
                o.push_str("</div>\n");
                if !counter_charts.is_empty() {
                    let _ = writeln!(
                        o,
                        "<details><summary>server counters ({})</summary><div class=\"charts\">",
                        counter_charts.len()
                    );
                    for c in &counter_charts {
                        o.push_str(c);
                    }
                    o.push_str("</div></details>\n");
                }
            }
        }
        o
    }

    /// The export's fields of a cell: `(name, value)` per shown OS figure and counter, raw units.
    pub fn cell_fields(&self, key: (usize, usize, u32)) -> Vec<(String, Option<f64>)> {
        let cell = self.cells.get(&key);
        let mut out: Vec<(String, Option<f64>)> =
            self.os_shown.iter().map(|&k| (format!("os_{}", OS_FIGURES[k].key), cell.and_then(|c| c.os[k]))).collect();
        out.extend(
            self.counters
                .iter()
                .enumerate()
                .map(|(k, c)| (format!("server_{}", c.key()), cell.and_then(|x| x.server[k]))),
        );
        out
    }

    /// The samples part of the JSON export: what the figures are, per cell and
    /// per run the summary, per run the series.
    pub fn json(&self, data: &Dataset) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let os_map = |values: &[Option<f64>]| -> Map<String, Value> {
            self.os_shown.iter().map(|&k| (OS_FIGURES[k].key.to_string(), json!(values[k]))).collect()
        };
        let server_map = |values: &[Option<f64>]| -> Map<String, Value> {
            self.counters.iter().zip(values).map(|(c, v)| (c.key(), json!(v))).collect()
        };
        let cells: Vec<Value> = self
            .ordered(data)
            .map(|((c, w, t), cell)| {
                json!({"workload": data.workloads[w].name, "threads": t, "configuration": data.configurations[c].name,
                       "runs": cell.runs, "os": os_map(&cell.os), "server": server_map(&cell.server)})
            })
            .collect();
        let runs: Vec<Value> = data
            .runs
            .iter()
            .zip(self.runs.iter().zip(&self.series))
            .map(|(run, (s, series))| {
                let os_series: Vec<Value> = series
                    .os
                    .iter()
                    .map(|(x, v)| {
                        let mut m = os_map(v);
                        m.remove(RESCHED_PER_QUERY);
                        m.insert("time_s".into(), json!(x));
                        Value::Object(m)
                    })
                    .collect();
                let server_series: Vec<Value> = series
                    .server
                    .iter()
                    .map(|(x, v)| {
                        let mut m = server_map(v);
                        m.insert("time_s".into(), json!(x));
                        Value::Object(m)
                    })
                    .collect();
                json!({"id": run.figures.id, "os_samples": s.os_samples, "server_samples": s.server_samples,
                       "os": os_map(&s.os), "server": server_map(&s.server),
                       "os_series": os_series, "server_series": server_series})
            })
            .collect();
        json!({
            "summary": SUMMARY_LEGEND,
            "series_time": "seconds since the end of the warmup on the sampler's clock; server series: rates over the interval ending there",
            "os_figures": self.os_shown.iter().map(|&k| json!({"key": OS_FIGURES[k].key, "what": OS_FIGURES[k].what})).collect::<Vec<_>>(),
            "server_counters": self.counters.iter().map(|c| json!({"name": c.name, "key": c.key(), "kind": if c.gauge { "gauge" } else { "rate" }})).collect::<Vec<_>>(),
            "server_counters_from": self.counters_from,
            "notes": self.notes,
            "cells": cells,
            "runs": runs,
        })
    }
}

/// A table cell for a figure: scaled and formatted, or a dash for "not measured".
fn figure_cell(v: Option<f64>, unit: Unit, what: &str) -> Cell {
    match v {
        Some(v) => Cell { text: tables::number(unit.scale(v)), note: Some(what.to_string()) },
        None => Cell { text: "-".into(), note: Some(format!("{what}: not measured")) },
    }
}

fn os_column(s: &RunSeries, k: usize) -> Vec<(f64, Option<f64>)> {
    s.os.iter().map(|(x, v)| (*x, v[k])).collect()
}

/// One point per aligned tick that has a value: the mean over the runs,
/// through `scale` (a unit's, or none), with the tooltip the sample charts
/// share: "configuration, tick: heading value".
fn mean_points(ticks: &Timeline, conf_name: &str, heading: &str, scale: impl Fn(f64) -> f64) -> Vec<Point> {
    ticks
        .iter()
        .filter_map(|(x, vals)| {
            let y = scale(mean(vals)?);
            Some(Point {
                x: *x,
                y,
                err: None,
                tooltip: format!("{conf_name}, {x:.1} s: {heading} {}", tables::number(y)),
            })
        })
        .collect()
}

fn mean(values: &[Option<f64>]) -> Option<f64> {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
}

/// Repeats' series aligned by sample index: per index, the mean of the
/// repeats' times and each repeat's value (None where it has none).
fn align(runs: impl Iterator<Item = Vec<(f64, Option<f64>)>>) -> Timeline {
    let mut out: Vec<(f64, usize, Vec<Option<f64>>)> = Vec::new();
    for run in runs {
        for (j, (x, v)) in run.into_iter().enumerate() {
            if out.len() <= j {
                out.push((0.0, 0, Vec::new()));
            }
            out[j].0 += x;
            out[j].1 += 1;
            out[j].2.push(v);
        }
    }
    out.into_iter().map(|(sum, n, v)| (sum / n as f64, v)).collect()
}

/// One (workload, threads) cell of a dataset, whose runs a chart averages.
struct SampleCell<'a> {
    data: &'a Dataset,
    w: usize,
    t: u32,
}

impl SampleCell<'_> {
    /// Configuration `c`'s ok runs of the cell, by index into the dataset's runs.
    fn members(&self, c: usize) -> Vec<usize> {
        (0..self.data.runs.len())
            .filter(|&i| {
                let r = &self.data.runs[i];
                r.configuration == c && r.workload == self.w && r.figures.threads == self.t && r.ok()
            })
            .collect()
    }
}

/// The column of the OS figure named `key` in [`OS_FIGURES`].
fn os_figure(key: &str) -> Option<usize> {
    OS_FIGURES.iter().position(|f| f.key == key)
}

/// A samples chart: seconds since the end of the warmup on x, the warmup
/// (negative seconds) shaded when a series reaches into it.
fn sample_chart(title: String, y_label: &str, series: Vec<Series>) -> String {
    let first = series.iter().flat_map(|s| s.points.iter().map(|p| p.x)).fold(f64::INFINITY, f64::min);
    let shades = if first.is_finite() && first < 0.0 {
        vec![Shade { from: f64::NEG_INFINITY, to: 0.0, label: "warmup".into() }]
    } else {
        Vec::new()
    };
    svg::line_chart(&LineChart {
        title,
        x_label: "seconds since the end of the warmup (sampler clock)".into(),
        y_label: y_label.into(),
        x: XAxis::Linear,
        series,
        shades,
        y_from_zero: true,
        width: 560,
        height: 300,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn point(source: &str, time_s: f64, data: serde_json::Value) -> SamplePoint {
        SamplePoint { run_id: 1, source: source.into(), time_s, data }
    }

    #[test]
    fn server_counters_are_rates_of_the_cumulative_values_after_the_warmup() {
        let counters = vec![
            Counter { name: "Innodb_rows_read".into(), gauge: false },
            Counter { name: "Threads_running".into(), gauge: true },
            Counter { name: "Key_reads".into(), gauge: false },
        ];
        // First sample whole; later ones only what changed.
        let s = [
            point("server", 0.0, json!({"Innodb_rows_read": "1000", "Threads_running": "1", "Key_reads": "5"})),
            point("server", 1.0, json!({"Innodb_rows_read": "1500", "Threads_running": "4"})),
            point("server", 2.0, json!({"Innodb_rows_read": "3500"})),
            point("server", 3.0, json!({"Innodb_rows_read": "5500", "Threads_running": "2"})),
        ];
        let refs: Vec<&SamplePoint> = s.iter().collect();
        let values = cumulative(&refs, &counters);
        assert_eq!(values[2].1, vec![Some(3500.0), Some(4.0), Some(5.0)]);
        // Warmup 1 s: the window is (1, 3]: 4000 rows over 2 s; Threads_running at 2 and 3 s: 4, 2.
        let (fig, series) = server_figures(&values, &counters, 1.0);
        assert_eq!(fig, vec![Some(2000.0), Some(3.0), Some(0.0)]);
        assert_eq!(series[0], (0.0, vec![Some(500.0), Some(4.0), Some(0.0)]));
        assert_eq!(series.len(), 3);
        // A counter that went down (FLUSH STATUS) counts in no interval; one sample alone is no rate.
        let s2 = [
            point("server", 0.0, json!({"Innodb_rows_read": "100"})),
            point("server", 1.0, json!({"Innodb_rows_read": "40"})),
            point("server", 2.0, json!({"Innodb_rows_read": "140"})),
        ];
        let refs: Vec<&SamplePoint> = s2.iter().collect();
        let (fig, _) = server_figures(&cumulative(&refs, &counters[..1]), &counters[..1], 0.0);
        assert_eq!(fig, vec![Some(100.0)]);
        let (fig, _) = server_figures(&cumulative(&refs[..1], &counters[..1]), &counters[..1], 0.0);
        assert_eq!(fig, vec![None]);
    }

    #[test]
    fn os_means_are_weighted_by_interval_and_skip_what_is_absent() {
        let a = json!({"cpu_user_pct": 10.0, "interval_s": 1.0});
        let b = json!({"cpu_user_pct": 40.0, "interval_s": 0.5, "resched_ipis_per_s": null});
        let got = weighted_mean([(1.0, &a), (0.5, &b)], "cpu_user_pct").unwrap();
        assert!((got - 20.0).abs() < 1e-12, "{got}");
        assert_eq!(weighted_mean([(1.0, &a), (0.5, &b)], "resched_ipis_per_s"), None);
        assert_eq!(median([Some(3.0), None, Some(1.0), Some(2.0)]), Some(2.0));
        assert_eq!(median([Some(3.0), Some(1.0)]), Some(2.0));
        assert_eq!(median([None]), None);
    }

    #[test]
    fn gauges_and_spec_counters() {
        assert!(is_gauge("Threads_running") && is_gauge("Innodb_buffer_pool_pages_free") && is_gauge("db.numbackends"));
        assert!(!is_gauge("Innodb_rows_read") && !is_gauge("Handler_read_key") && !is_gauge("db.xact_commit"));
        let spec = "[experiment]\nname = \"x\"\n[report]\nserver_counters = [\"Questions\", \"db.blks_hit\"]\n";
        assert_eq!(spec_counters(spec), Some(vec!["Questions".to_string(), "db.blks_hit".to_string()]));
        assert_eq!(spec_counters("[experiment]\nname = \"x\"\n"), None);
    }
}
