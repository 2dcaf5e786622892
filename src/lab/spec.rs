//! Experiment specs: the TOML file `dbbench lab` reads (docs/lab.md).
//!
//! Parsing is two steps: serde reads the TOML into `Raw*` structs (unknown
//! keys are errors, so a typo never silently falls back to a default), then
//! `parse` checks what serde cannot, one function per part of the file
//! (`experiment`, `configurations`, `workloads`), and resolves defaults into a `Spec`.
//! Every error names the file, the line and the key, found by walking the
//! spanned TOML tree (`locate`).

use crate::errors::line_of;
pub use crate::errors::SpecError;
use crate::lab::cpus::Placement;
use crate::lab::server::{ServerKind, ServerSpec};
use anyhow::Context;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod datasets;

/// A validated experiment spec.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The spec file.
    pub path: PathBuf,
    /// The spec file's text, stored with the experiment.
    pub text: String,
    /// Experiment name (unique per results store).
    pub name: String,
    /// Free text for reports.
    pub description: String,
    /// Configurations in run order; the baseline is first.
    pub configurations: Vec<Configuration>,
    /// Workloads in spec order.
    pub workloads: Vec<Workload>,
    /// Repeats of every cell.
    pub repeats: u32,
    /// Warmup seconds (measured by the load engine, excluded from every figure).
    pub warmup_s: u64,
    /// Measured seconds per run.
    pub time_s: u64,
    /// A run still going this long after its start is killed and recorded as a timeout.
    pub run_timeout: Duration,
    /// How runs are ordered.
    pub order: Order,
    /// Drop the OS page cache before each server start (needs root).
    pub drop_caches: bool,
    /// Interval of OS and server-status samples and of the per-interval series.
    pub sample_interval_s: u64,
    /// Base random seed: run `repeat` uses `seed + repeat - 1` for every
    /// configuration, so configurations see the same random streams.
    pub seed: u64,
    /// Results store: a SQLite path (relative to the spec's directory) or a
    /// postgresql:// or mysql:// URL.
    pub store: Option<String>,
    /// Experiment-wide hooks (run before a configuration's own).
    pub hooks: Hooks,
}

/// The run order of an experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Repeat-major: every configuration runs each (workload, threads) in
    /// turn, baseline first, before the next repeat starts, so slow drift
    /// (thermal, disk aging, background jobs) spreads over all configurations.
    Interleaved,
    /// Configuration-major: all runs of one configuration, then the next.
    /// Fewer server restarts, but drift favours whichever runs first.
    Grouped,
}

/// What happens to a workload's data between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreparePolicy {
    /// Prepare once per (configuration, workload), snapshot the data
    /// directory, and restore it (with a server restart) before every run
    /// of a workload that writes. The seeds' method.
    Restore,
    /// Prepare once per (configuration, workload) and reuse the data as the
    /// runs leave it.
    Once,
    /// Never prepare: the data is already there (external servers, or a
    /// command workload that handles it).
    None,
}

impl PreparePolicy {
    /// The name used in specs and the store.
    pub fn name(self) -> &'static str {
        match self {
            PreparePolicy::Restore => "restore",
            PreparePolicy::Once => "once",
            PreparePolicy::None => "none",
        }
    }
}

/// One configuration (variant) of the system under test.
#[derive(Clone, Debug)]
pub struct Configuration {
    /// Name used in reports ("off", "32", "mariadb-10.11").
    pub name: String,
    /// Where the database comes from.
    pub target: Target,
    /// What happens to prepared data between runs.
    pub prepare: PreparePolicy,
    /// Extra dbbench options for every run on this configuration.
    pub options: Vec<(String, String)>,
    /// The configuration's own hooks, run after the experiment's.
    pub hooks: Hooks,
    /// The configuration as given, passwords removed, for the store.
    pub definition: serde_json::Value,
    /// Where its processes run: its own `cpus` over the experiment's `[cpus]`
    /// (docs/lab.md#pinning).
    pub cpus: Placement,
    /// `clients = { shards = N }`: its test workloads' runs as N shards.
    pub clients: Option<super::clients::Clients>,
}

/// The database a configuration runs against.
#[derive(Clone, Debug)]
pub enum Target {
    /// A server dbbench initialises, starts and stops itself.
    Managed(ServerSpec),
    /// A server somebody else runs, reached through dbbench options.
    External {
        /// `--db-driver=..` and connection options.
        driver_args: Vec<String>,
    },
    /// Embedded SQLite; the database file lives in the lab's data directory.
    Sqlite {
        /// `--sqlite-*` options from the spec's pragmas.
        driver_args: Vec<String>,
    },
}

impl Target {
    /// Short kind name for the store and plan.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Target::Managed(s) => match s.kind {
                ServerKind::Mariadb => "mariadb",
                ServerKind::Mysql => "mysql",
                ServerKind::Postgresql => "postgresql",
            },
            Target::External { .. } => "external",
            Target::Sqlite { .. } => "sqlite",
        }
    }
}

/// One workload (test) of the matrix.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Name used in reports; unique within the spec.
    pub name: String,
    /// What runs.
    pub kind: WorkloadKind,
    /// Thread counts for this workload.
    pub threads: Vec<u32>,
    /// Whether a run modifies the data (decides restores under `prepare = "restore"`).
    pub writes: bool,
    /// Index of the workload whose prepared data this one runs on: itself,
    /// or the first workload that loads the same data (the queries of a
    /// TPC-H workload, `oltp_*` tests with equal data options: `datasets`).
    pub data: usize,
    /// Restart the server (and drop caches when asked) before every run,
    /// not only when the data or configuration changes (TPC-H `restart = "run"`,
    /// the seeds' QUERIES_AT_ONCE=0).
    pub restart_each_run: bool,
    /// A bound on one run other than the experiment's `run_timeout`.
    pub run_timeout: Option<Duration>,
    /// Seconds one run is expected to take, for the plan's estimate, when
    /// it is not the experiment's warmup + time.
    pub estimate_s: Option<f64>,
    /// Options added to a managed server's own for this workload's runs,
    /// per configuration index (a TPC-H query's `server_options`, the
    /// seeds' per-query STARTUP_PARAMS); the server is restarted when they
    /// change. Empty: none anywhere.
    pub server_options: Vec<Vec<String>>,
    /// This workload's own `cpus` (clients, other), over its configuration's.
    pub cpus: Placement,
    /// `clients = { shards = N }` (test workloads only), over its configuration's.
    pub clients: Option<super::clients::Clients>,
}

impl Workload {
    /// The extra server options of this workload's runs on configuration `c`.
    pub fn server_options_for(&self, c: usize) -> &[String] {
        self.server_options.get(c).map(Vec::as_slice).unwrap_or(&[])
    }
}

impl Spec {
    /// Where the processes of workload `w`'s runs on configuration `c` run.
    pub fn placement(&self, c: usize, w: usize) -> Placement {
        self.workloads[w].cpus.over(&self.configurations[c].cpus)
    }

    /// How many shard processes run each run of workload `w` on
    /// configuration `c` (1: one process): the workload's `clients`, else
    /// the configuration's; test workloads only.
    pub fn shards(&self, c: usize, w: usize) -> u32 {
        if !matches!(self.workloads[w].kind, WorkloadKind::Test { .. }) {
            return 1;
        }
        self.clients(c, w).map_or(1, |x| x.shards)
    }

    /// The `clients` table that applies to workload `w` on configuration
    /// `c`: the workload's, else the configuration's; test workloads only.
    pub fn clients(&self, c: usize, w: usize) -> Option<&super::clients::Clients> {
        if !matches!(self.workloads[w].kind, WorkloadKind::Test { .. }) {
            return None;
        }
        self.workloads[w].clients.as_ref().or(self.configurations[c].clients.as_ref())
    }

    /// `launcher = "kubernetes"`'s options for workload `w` on configuration `c`.
    pub fn kubernetes(&self, c: usize, w: usize) -> Option<&super::clients::Kubernetes> {
        self.clients(c, w).and_then(|x| x.kubernetes.as_deref())
    }

    /// Whether some workload runs for the experiment's `time` (TPC-H queries
    /// run as long as they take: for them `time` and `warmup` mean nothing).
    pub fn has_timed_workloads(&self) -> bool {
        self.workloads.iter().any(|w| !matches!(w.kind, WorkloadKind::Tpch { .. }))
    }
}

/// How a workload runs.
#[derive(Clone, Debug)]
pub enum WorkloadKind {
    /// A dbbench test: built-in name or Lua script path, with options.
    Test {
        /// Built-in test name or absolute script path.
        test: String,
        /// `--name=value` options, experiment-wide ones first.
        options: Vec<(String, String)>,
    },
    /// One TPC-H query (`dbbench tpch query`), of a `tpch = {...}` workload.
    Tpch {
        /// `14`, or `20-opt0` for a variant in `query_dir`.
        query: String,
        /// Options for `dbbench tpch query` (`--timeout=...`, `--warmups=...`,
        /// `--query-dir=...`, `--validation`); the lab adds the connection, `--seed`, `--format`.
        options: Vec<String>,
        /// Options for the prepare, `dbbench tpch load` (`--sf=...`, `--keys=...`).
        load: Vec<String>,
    },
    /// Any command; its output is parsed with regexes.
    Command {
        /// argv with `{placeholders}` (docs/lab.md).
        command: Vec<String>,
        /// Optional prepare argv.
        prepare: Option<Vec<String>>,
        /// Metric name → regex with one capture group (a number).
        metrics: Vec<(String, regex::Regex)>,
    },
}

/// Hooks: SQL or shell steps at fixed points of the run loop.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    /// After every server start (e.g. `SET GLOBAL ...`).
    pub after_start: Vec<HookStep>,
    /// After a workload's data is prepared, before the snapshot.
    pub after_prepare: Vec<HookStep>,
    /// Before every run.
    pub before_run: Vec<HookStep>,
    /// After every run (also failed ones).
    pub after_run: Vec<HookStep>,
    /// Once per test (configuration × workload), before its first run, on
    /// the server and data that run uses (the seeds' PRE_TEST hooks).
    pub before_test: Vec<HookStep>,
    /// Once per test, after its last planned run (the seeds' POST_TEST hooks).
    pub after_test: Vec<HookStep>,
}

impl Hooks {
    /// This configuration's hooks after the experiment's.
    pub fn chained(&self, then: &Hooks) -> Hooks {
        let cat = |a: &Vec<HookStep>, b: &Vec<HookStep>| a.iter().chain(b).cloned().collect();
        Hooks {
            after_start: cat(&self.after_start, &then.after_start),
            after_prepare: cat(&self.after_prepare, &then.after_prepare),
            before_run: cat(&self.before_run, &then.before_run),
            after_run: cat(&self.after_run, &then.after_run),
            before_test: cat(&self.before_test, &then.before_test),
            after_test: cat(&self.after_test, &then.after_test),
        }
    }
}

/// One hook step.
#[derive(Clone, Debug, PartialEq)]
pub enum HookStep {
    /// SQL run on the configuration's server as the benchmark account.
    Sql(String),
    /// A `sh -c` command with the lab's environment variables.
    Shell(String),
}

// ------------------------------------------------------------------ raw TOML

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    experiment: RawExperiment,
    #[serde(default, rename = "configuration")]
    configurations: Vec<RawConfiguration>,
    #[serde(default, rename = "workload")]
    workloads: Vec<RawWorkload>,
    #[serde(default)]
    hooks: RawHooks,
    #[serde(default)]
    report: RawReport,
    cpus: Option<toml::Table>,
}

/// `[report]`: what reports show. Validated here; reports read it from the
/// spec text stored with the experiment (report::samples::spec_counters).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawReport {
    /// Server status names shown as rates (or levels) in the samples'
    /// tables and charts, instead of the defaults.
    server_counters: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExperiment {
    name: String,
    #[serde(default)]
    description: String,
    baseline: Option<String>,
    threads: Option<Vec<u32>>,
    #[serde(default = "one")]
    repeats: u32,
    warmup: Option<RawDuration>,
    time: Option<RawDuration>,
    run_timeout: Option<RawDuration>,
    order: Option<String>,
    prepare: Option<String>,
    #[serde(default)]
    drop_caches: bool,
    sample_interval: Option<RawDuration>,
    #[serde(default = "one_u64")]
    seed: u64,
    store: Option<String>,
    #[serde(default)]
    options: BTreeMap<String, toml::Value>,
}

fn one() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}

/// A duration: whole seconds as a number, or "30s", "5m", "1h".
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum RawDuration {
    Seconds(i64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfiguration {
    name: String,
    server: String,
    basedir: Option<String>,
    #[serde(default)]
    server_options: Vec<String>,
    config_file: Option<String>,
    start_timeout: Option<RawDuration>,
    dsn: Option<String>,
    password_env: Option<String>,
    superuser: Option<bool>,
    #[serde(default)]
    pragmas: BTreeMap<String, toml::Value>,
    prepare: Option<String>,
    #[serde(default)]
    options: BTreeMap<String, toml::Value>,
    #[serde(default)]
    hooks: RawHooks,
    cpus: Option<toml::Table>,
    clients: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Option<String>,
    test: Option<String>,
    #[serde(default)]
    options: BTreeMap<String, toml::Value>,
    threads: Option<Vec<u32>>,
    writes: Option<bool>,
    command: Option<Vec<String>>,
    prepare_command: Option<Vec<String>>,
    /// A table, not a map: its order is kept (toml's `preserve_order`), and
    /// the first metric is the one the summary compares.
    #[serde(default)]
    metrics: toml::Table,
    tpch: Option<RawTpch>,
    cpus: Option<toml::Table>,
    clients: Option<toml::Table>,
}

/// `tpch = { sf = 1, queries = "1-22", ... }` on a workload.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTpch {
    sf: f64,
    queries: Option<String>,
    timeout: Option<RawDuration>,
    warmups: Option<u32>,
    params: Option<String>,
    keys: Option<String>,
    restart: Option<String>,
    query_dir: Option<String>,
    expected: Option<RawDuration>,
    /// `{ "18" = ["--optimizer-switch=semijoin=off"] }`: server options per query.
    #[serde(default)]
    server_options: toml::Table,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHooks {
    #[serde(default)]
    after_start: Vec<RawHookStep>,
    #[serde(default)]
    after_prepare: Vec<RawHookStep>,
    #[serde(default)]
    before_run: Vec<RawHookStep>,
    #[serde(default)]
    after_run: Vec<RawHookStep>,
    #[serde(default)]
    before_test: Vec<RawHookStep>,
    #[serde(default)]
    after_test: Vec<RawHookStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHookStep {
    sql: Option<String>,
    shell: Option<String>,
}

// ------------------------------------------------------------------ loading

/// Built-in tests whose runs only read (no restore needed between runs).
const READ_ONLY_TESTS: &[&str] = &[
    "oltp_read_only",
    "oltp_point_select",
    "select_random_points",
    "select_random_ranges",
    "oltp_simple",
    "select",
    "oltp_complex_ro",
    "legacy_select_random_points",
    "legacy_select_random_ranges",
];

/// Options the lab sets itself on every run; a spec giving them would be
/// silently overridden, so it is an error.
/// The old spellings are included: `num-threads = 4` would replace the
/// lab's `--threads` (sysbench's precedence).
const LAB_OWNED_OPTIONS: &[&str] = &[
    "threads",
    "time",
    "warmup-time",
    "rand-seed",
    "report-interval",
    "format",
    "events",
    "db-driver",
    "num-threads",
    "max-time",
    "max-requests",
    "seed-rng",
    "shard",
    "shard-result",
    "start-at",
];

/// SQLite pragmas the SQLite driver applies, mapped to its options.
const SQLITE_PRAGMAS: &[&str] = &["journal_mode", "synchronous", "busy_timeout", "begin"];

/// Most runs one spec may plan: far beyond a real matrix (the seeds' largest
/// had a few hundred), far below what would exhaust memory to plan.
pub const MAX_PLANNED_RUNS: usize = 1_000_000;

/// Reads and validates a spec file.
pub fn load(path: &Path) -> anyhow::Result<Spec> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read the spec", path.display()))?;
    parse(path, &text)
}

/// Validates spec `text` read from `path` (used for messages and relative paths).
///
/// The error is a [`SpecError`], shown as one located line
/// (`FILE:LINE: key.path: what is wrong`); callers that need the key or the
/// line get it back with `downcast_ref::<SpecError>()`.
pub fn parse(path: &Path, text: &str) -> anyhow::Result<Spec> {
    validate(path, text).map_err(anyhow::Error::new)
}

/// [`parse`]'s checks: one function per part of the file, in the order a
/// reader meets them: `experiment`, `configurations`, `workloads`; each
/// error names the first problem in that order.
fn validate(path: &Path, text: &str) -> Result<Spec, SpecError> {
    let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError::from_toml(path, text, &e))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
    let cx = Ctx { path, text, dir };

    if let Some(names) = &raw.report.server_counters {
        check_server_counters(names)
            .map_err(|(i, m)| cx.err(&[K("report"), K("server_counters"), Seg::Index(i)], m))?;
    }
    let x = experiment(&cx, &raw)?;
    let configurations = configurations(&cx, &raw, &x)?;
    let mut workloads = workloads(&cx, &raw, &x, &configurations)?;

    datasets::share_prepared_data(&mut workloads, &configurations);

    let e = &raw.experiment;
    // A typo such as `repeats = 3000000000` would otherwise plan billions of
    // runs and exhaust memory before anything is printed.
    let threads: usize = workloads.iter().map(|w| w.threads.len()).sum();
    let runs = (e.repeats as usize).saturating_mul(threads).saturating_mul(configurations.len());
    if runs > MAX_PLANNED_RUNS {
        return Err(cx.err(
            &[K("experiment"), K("repeats")],
            format!(
                "{} repeats × {threads} (workload, threads) pairs × {} configurations is {runs} runs, more than the {MAX_PLANNED_RUNS} a spec may plan: lower repeats or split the experiment",
                e.repeats,
                configurations.len()
            ),
        ));
    }
    let dir = &cx.dir;
    Ok(Spec {
        path: path.to_path_buf(),
        text: text.to_string(),
        name: e.name.clone(),
        description: e.description.clone(),
        configurations,
        workloads,
        repeats: e.repeats,
        warmup_s: x.warmup_s,
        time_s: x.time_s,
        run_timeout: x.run_timeout,
        order: x.order,
        drop_caches: e.drop_caches,
        sample_interval_s: x.sample_interval_s,
        seed: e.seed,
        store: e.store.as_ref().map(|s| {
            if crate::store::is_url(s) {
                s.clone()
            } else {
                rel_to(dir, s).to_string_lossy().into_owned()
            }
        }),
        hooks: x.hooks,
    })
}

/// What every check needs to name the file, the line and the key of an error.
struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
    /// The spec's directory: relative paths in the spec are relative to it.
    dir: PathBuf,
}

impl Ctx<'_> {
    /// `file:line: key.path: msg`, the line found from `keys`.
    fn err(&self, keys: &[Seg], msg: String) -> SpecError {
        SpecError {
            file: self.path.to_path_buf(),
            line: locate(self.text, keys),
            key_path: Some(key_path(keys)),
            message: msg,
        }
    }

    /// An error of the file as a whole (a part missing), with no key to name.
    fn file_err(&self, msg: &str) -> SpecError {
        SpecError { file: self.path.to_path_buf(), line: None, key_path: None, message: msg.to_string() }
    }

    /// The `cpus` table under `at` (`[]` for the experiment's own).
    /// Checked against the host here, so a CPU that is not online stops `lab plan` too.
    fn cpus_at(&self, at: &[Seg], t: &Option<toml::Table>, allowed: &[&str]) -> Result<Placement, SpecError> {
        let Some(t) = t else { return Ok(Placement::default()) };
        crate::lab::cpus::placement_from_toml(t, allowed).map_err(|(keys, m)| {
            let mut path = at.to_vec();
            path.push(K("cpus"));
            path.extend(keys.iter().map(|k| K_owned(k)));
            self.err(&path, m)
        })
    }

    /// A `clients` table (`super::clients`), at `at`.
    fn clients_at(&self, at: &[Seg], t: &Option<toml::Table>) -> Result<Option<super::clients::Clients>, SpecError> {
        let Some(t) = t else { return Ok(None) };
        super::clients::parse(t).map(Some).map_err(|(key, m)| {
            let mut path = at.to_vec();
            path.push(K("clients"));
            if key != "clients" {
                path.push(K(key));
            }
            self.err(&path, m)
        })
    }
}

/// `[experiment]` (and the experiment-wide `[hooks]` and `[cpus]`), checked,
/// with the defaults resolved.
struct ExperimentSettings {
    time_s: u64,
    warmup_s: u64,
    sample_interval_s: u64,
    run_timeout: Duration,
    order: Order,
    /// `prepare` for the configurations that do not set their own.
    default_prepare: Option<PreparePolicy>,
    /// The options every test workload starts from.
    common_options: Vec<(String, String)>,
    hooks: Hooks,
    cpus: Placement,
}

fn experiment(cx: &Ctx, raw: &RawSpec) -> Result<ExperimentSettings, SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let e = &raw.experiment;
    if e.name.trim().is_empty() {
        return Err(err(&[K("experiment"), K("name")], "must not be empty".into()));
    }
    if let Some(t) = &e.threads {
        check_threads(t).map_err(|m| err(&[K("experiment"), K("threads")], m))?;
    }
    if e.repeats == 0 {
        return Err(err(&[K("experiment"), K("repeats")], "must be at least 1".into()));
    }
    // Repeat r runs with --rand-seed=seed+r-1: a C int, and never 0 (which
    // means "from the clock", a run that could not be repeated).
    if e.seed == 0 {
        return Err(err(
            &[K("experiment"), K("seed")],
            "must be at least 1 (--rand-seed=0 means a seed from the clock)".into(),
        ));
    }
    if e.seed.saturating_add(e.repeats as u64 - 1) > i32::MAX as u64 {
        return Err(err(
            &[K("experiment"), K("seed")],
            format!("{} + {} repeats goes past {}, the largest --rand-seed", e.seed, e.repeats, i32::MAX),
        ));
    }
    // A TPC-H query runs as long as it takes: `time` is for timed workloads only.
    let all_tpch = !raw.workloads.is_empty() && raw.workloads.iter().all(|w| w.tpch.is_some());
    let time_s = match &e.time {
        Some(t) => seconds(t).map_err(|m| err(&[K("experiment"), K("time")], m))?,
        None if all_tpch => 1,
        None => {
            return Err(err(
                &[K("experiment"), K("time")],
                "is missing: set the seconds measured per run (e.g. time = 60)".into(),
            ))
        }
    };
    if time_s == 0 {
        return Err(err(&[K("experiment"), K("time")], "must be at least 1 second".into()));
    }
    let warmup_s = match &e.warmup {
        Some(w) => seconds(w).map_err(|m| err(&[K("experiment"), K("warmup")], m))?,
        None => 0,
    };
    let sample_interval_s = match &e.sample_interval {
        Some(w) => match seconds(w).map_err(|m| err(&[K("experiment"), K("sample_interval")], m))? {
            0 => return Err(err(&[K("experiment"), K("sample_interval")], "must be at least 1 second".into())),
            s => s,
        },
        None => 1,
    };
    let run_timeout = match &e.run_timeout {
        Some(w) => match seconds(w).map_err(|m| err(&[K("experiment"), K("run_timeout")], m))? {
            0 => return Err(err(&[K("experiment"), K("run_timeout")], "must be at least 1 second".into())),
            s => Duration::from_secs(s),
        },
        // Generous: a run's own --time bounds it; this only catches a hang.
        None => Duration::from_secs(warmup_s + time_s + 60 + (warmup_s + time_s) / 2),
    };
    let order = match e.order.as_deref() {
        None | Some("interleaved") => Order::Interleaved,
        Some("grouped") => Order::Grouped,
        Some(o) => {
            return Err(err(
                &[K("experiment"), K("order")],
                format!("'{o}' is not an order; use \"interleaved\" or \"grouped\""),
            ))
        }
    };
    let default_prepare = match e.prepare.as_deref() {
        None => None,
        Some(p) => Some(prepare_policy(p).map_err(|m| err(&[K("experiment"), K("prepare")], m))?),
    };
    let common_options = options_list(&e.options).map_err(|(k, m)| err(&[K("experiment"), K("options"), K(&k)], m))?;

    let hooks = hooks(&raw.hooks).map_err(|(which, i, m)| err(&[K("hooks"), K(which), I(i)], m))?;
    let cpus = cx.cpus_at(&[], &raw.cpus, &["server", "clients", "other"])?;
    Ok(ExperimentSettings {
        time_s,
        warmup_s,
        sample_interval_s,
        run_timeout,
        order,
        default_prepare,
        common_options,
        hooks,
        cpus,
    })
}

/// `[[configuration]]`s in run order: the baseline first.
fn configurations(cx: &Ctx, raw: &RawSpec, x: &ExperimentSettings) -> Result<Vec<Configuration>, SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let e = &raw.experiment;
    if raw.configurations.is_empty() {
        return Err(cx.file_err("no [[configuration]]: give at least one (see examples/quickstart.toml)"));
    }
    let mut configurations = Vec::new();
    for (i, c) in raw.configurations.iter().enumerate() {
        let configuration = configuration(cx, x, i, c, &configurations)?;
        configurations.push(configuration);
    }
    if let Some(b) = &e.baseline {
        let Some(pos) = configurations.iter().position(|c| &c.name == b) else {
            let names: Vec<_> = configurations.iter().map(|c| c.name.as_str()).collect();
            return Err(err(
                &[K("experiment"), K("baseline")],
                format!("no configuration is named '{b}' (have: {})", names.join(", ")),
            ));
        };
        let base = configurations.remove(pos);
        configurations.insert(0, base);
    }
    Ok(configurations)
}

/// `[[configuration]]` number `i` (0-based), after the `earlier` ones.
fn configuration(
    cx: &Ctx,
    x: &ExperimentSettings,
    i: usize,
    c: &RawConfiguration,
    earlier: &[Configuration],
) -> Result<Configuration, SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let at = |key: &str| vec![K("configuration"), I(i), K_owned(key)];
    let cerr = |key: &str, m: String| err(&at(key), m);
    if c.name.trim().is_empty() || c.name.contains('/') {
        return Err(cerr("name", "must be non-empty and must not contain '/'".into()));
    }
    if earlier.iter().any(|x: &Configuration| x.name == c.name) {
        return Err(cerr("name", format!("'{}' is used by two configurations", c.name)));
    }
    let (target, natural_prepare) = configuration_target(cx, i, c)?;
    let prepare = match &c.prepare {
        Some(p) => prepare_policy(p).map_err(|m| cerr("prepare", m))?,
        None => x.default_prepare.unwrap_or(natural_prepare),
    };
    if prepare == PreparePolicy::Restore && matches!(target, Target::External { .. }) {
        let m = "an external server's data cannot be snapshotted; use prepare = \"once\" or \"none\"".to_string();
        return Err(if c.prepare.is_some() { cerr("prepare", m) } else { err(&[K("experiment"), K("prepare")], m) });
    }
    let options =
        options_list(&c.options).map_err(|(k, m)| err(&[K("configuration"), I(i), K("options"), K_owned(&k)], m))?;
    let hooks =
        hooks(&c.hooks).map_err(|(which, j, m)| err(&[K("configuration"), I(i), K("hooks"), K(which), I(j)], m))?;
    let own_cpus = cx.cpus_at(&[K("configuration"), I(i)], &c.cpus, &["server", "clients", "other"])?;
    if own_cpus.server.is_some() && !matches!(target, Target::Managed(_)) {
        return Err(err(
            &[K("configuration"), I(i), K("cpus"), K("server")],
            format!("applies to servers dbbench starts, not server = \"{}\"", c.server),
        ));
    }
    let mut cpus = own_cpus.over(&x.cpus);
    if !matches!(target, Target::Managed(_)) {
        cpus.server = None;
    }
    let mut target = target;
    if let Target::Managed(s) = &mut target {
        s.cpus = cpus.server.clone();
        s.init_cpus = cpus.other.clone();
    }
    let mut definition = serde_json::json!({
        "server": c.server, "basedir": c.basedir, "server_options": c.server_options,
        "config_file": c.config_file, "prepare": prepare.name(),
        "options": options.iter().map(|(k, v)| format!("--{k}={v}")).collect::<Vec<_>>(),
        "pragmas": c.pragmas.iter().map(|(k, v)| (k.clone(), v.to_string())).collect::<BTreeMap<_, _>>(),
    });
    if let Some(dsn) = &c.dsn {
        definition["dsn"] = serde_json::Value::String(dsn.clone());
    }
    if let Target::Managed(s) = &target {
        definition["superuser"] = serde_json::Value::Bool(s.superuser);
    }
    if !cpus.is_empty() {
        definition["cpus"] = cpus.to_json();
    }
    let clients = cx.clients_at(&[K("configuration"), I(i)], &c.clients)?;
    if let Some(x) = &clients {
        definition["clients"] = x.to_json();
    }
    // Passwords (in the DSN, in `mysql-password` options) never reach the store.
    let definition = crate::secret::redact_json(&definition);
    Ok(Configuration { name: c.name.clone(), target, prepare, options, hooks, definition, cpus, clients })
}

/// Where configuration `i` runs (`server = ...` and the keys of that kind),
/// and the prepare policy that kind implies.
fn configuration_target(cx: &Ctx, i: usize, c: &RawConfiguration) -> Result<(Target, PreparePolicy), SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let at = |key: &str| vec![K("configuration"), I(i), K_owned(key)];
    let cerr = |key: &str, m: String| err(&at(key), m);
    let kind_fields = |allowed: &[&str]| -> Result<(), SpecError> {
        let given = [
            ("basedir", c.basedir.is_some()),
            ("server_options", !c.server_options.is_empty()),
            ("config_file", c.config_file.is_some()),
            ("start_timeout", c.start_timeout.is_some()),
            ("dsn", c.dsn.is_some()),
            ("password_env", c.password_env.is_some()),
            ("superuser", c.superuser.is_some()),
            ("pragmas", !c.pragmas.is_empty()),
        ];
        for (k, set) in given {
            if set && !allowed.contains(&k) {
                return Err(cerr(k, format!("does not apply to server = \"{}\"", c.server)));
            }
        }
        Ok(())
    };
    let rel = |p: &str| rel_to(&cx.dir, p);
    Ok(match c.server.as_str() {
        "mariadb" | "mysql" | "postgresql" => {
            kind_fields(&["basedir", "server_options", "config_file", "start_timeout", "superuser"])?;
            let kind = match c.server.as_str() {
                "mariadb" => ServerKind::Mariadb,
                "mysql" => ServerKind::Mysql,
                _ => ServerKind::Postgresql,
            };
            let timeout = match &c.start_timeout {
                Some(t) => Duration::from_secs(seconds(t).map_err(|m| cerr("start_timeout", m))?.max(1)),
                None => Duration::from_secs(120),
            };
            let config_file = c.config_file.as_deref().map(rel);
            if let Some(f) = &config_file {
                if !f.is_file() {
                    return Err(cerr("config_file", format!("{} is not a file", f.display())));
                }
            }
            let basedir = c.basedir.as_deref().map(rel);
            if let Some(b) = &basedir {
                if !b.is_dir() {
                    return Err(cerr("basedir", format!("{} is not a directory", b.display())));
                }
            }
            let spec = ServerSpec {
                kind,
                basedir,
                options: c.server_options.clone(),
                config_file,
                timeout,
                superuser: c.superuser.unwrap_or(false),
                // Set by `configuration`, from `cpus`.
                cpus: None,
                init_cpus: None,
            };
            (Target::Managed(spec), PreparePolicy::Restore)
        }
        "external" => {
            kind_fields(&["dsn", "password_env"])?;
            let Some(dsn) = &c.dsn else {
                return Err(cerr(
                    "dsn",
                    "an external server needs dsn = \"mysql://user@host:port/db\" or \"postgresql://...\"".into(),
                ));
            };
            let password = match &c.password_env {
                Some(var) => Some(std::env::var(var).map_err(|_| {
                    cerr("password_env", format!("environment variable {var} is not set; export it with the server's password"))
                })?),
                None => None,
            };
            let driver_args = dsn_driver_args(dsn, password.as_deref()).map_err(|m| cerr("dsn", m))?;
            (Target::External { driver_args }, PreparePolicy::Once)
        }
        "sqlite" => {
            kind_fields(&["pragmas"])?;
            let mut driver_args = vec!["--db-driver=sqlite".to_string()];
            for (k, v) in &c.pragmas {
                if !SQLITE_PRAGMAS.contains(&k.as_str()) {
                    return Err(err(
                        &[K("configuration"), I(i), K("pragmas"), K_owned(k)],
                        format!("not a pragma dbbench sets; use one of {}", SQLITE_PRAGMAS.join(", ")),
                    ));
                }
                let v = option_value(v).map_err(|m| err(&[K("configuration"), I(i), K("pragmas"), K_owned(k)], m))?;
                driver_args.push(format!("--sqlite-{}={v}", k.replace('_', "-")));
            }
            (Target::Sqlite { driver_args }, PreparePolicy::Restore)
        }
        other => {
            return Err(cerr(
                "server",
                format!("'{other}' is not a server kind; use \"mariadb\", \"mysql\", \"postgresql\", \"external\" or \"sqlite\""),
            ))
        }
    })
}

/// `[[workload]]`s in spec order (a TPC-H workload becomes one per query).
fn workloads(
    cx: &Ctx,
    raw: &RawSpec,
    x: &ExperimentSettings,
    configurations: &[Configuration],
) -> Result<Vec<Workload>, SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let e = &raw.experiment;
    if raw.workloads.is_empty() {
        return Err(cx.file_err("no [[workload]]: give at least one (see examples/quickstart.toml)"));
    }
    let mut workloads: Vec<Workload> = Vec::new();
    for (i, w) in raw.workloads.iter().enumerate() {
        let at = |key: &str| vec![K("workload"), I(i), K_owned(key)];
        let werr = |key: &str, m: String| err(&at(key), m);
        let workload_cpus = cx.cpus_at(&[K("workload"), I(i)], &w.cpus, &["clients", "other"])?;
        let threads = match &w.threads {
            Some(t) => {
                check_threads(t).map_err(|m| werr("threads", m))?;
                t.clone()
            }
            None => match &e.threads {
                Some(t) => t.clone(),
                // TPC-H workloads leave here before this; everything else needs thread counts.
                None if w.tpch.is_some() => Vec::new(),
                None => {
                    return Err(werr(
                        "threads",
                        "needs thread counts: threads = [1, 4, 16] here or in [experiment]".into(),
                    ))
                }
            },
        };
        if let Some(t) = &w.tpch {
            push_tpch_workloads(cx, i, w, t, &workload_cpus, &mut workloads, configurations)?;
            continue;
        }
        let (name, kind, natural_writes) = match (&w.test, &w.command) {
            (Some(_), Some(_)) => return Err(werr("command", "give either test or command, not both".into())),
            (None, None) => {
                return Err(err(
                    &[K("workload"), I(i)],
                    "needs test = \"<built-in or script.lua>\", command = [...] or tpch = { sf = ... }".into(),
                ))
            }
            (Some(test), None) => test_workload(cx, x, i, w, test)?,
            (None, Some(command)) => command_workload(cx, i, w, command)?,
        };
        if name.is_empty() || name.contains('/') {
            return Err(werr("name", "must be non-empty and must not contain '/'".into()));
        }
        if workloads.iter().any(|x| x.name == name) {
            return Err(werr("name", format!("two workloads are named '{name}'; give each a distinct name = \"...\"")));
        }
        let clients = cx.clients_at(&[K("workload"), I(i)], &w.clients)?;
        if clients.is_some() && !matches!(kind, WorkloadKind::Test { .. }) {
            return Err(werr("clients", "shards run dbbench's own tests only (test = \"...\"), not commands".into()));
        }
        let data = workloads.len();
        workloads.push(Workload {
            name,
            kind,
            threads,
            writes: w.writes.unwrap_or(natural_writes),
            data,
            restart_each_run: false,
            run_timeout: None,
            estimate_s: None,
            server_options: Vec::new(),
            cpus: workload_cpus,
            clients,
        });
    }
    // Every shard runs at least one client.
    for (wi, w) in workloads.iter().enumerate() {
        for (ci, c) in configurations.iter().enumerate() {
            let (shards, kubernetes) = match (&w.kind, w.clients.as_ref().or(c.clients.as_ref())) {
                (WorkloadKind::Test { .. }, Some(x)) => (x.shards, x.kubernetes.is_some()),
                _ => continue,
            };
            let at = if w.clients.is_some() {
                vec![K("workload"), I(wi), K("clients")]
            } else {
                vec![K("configuration"), I(ci), K("clients")]
            };
            if kubernetes {
                if let Some(why) = kubernetes_refusal(&c.target) {
                    let mut at = at.clone();
                    at.push(K("launcher"));
                    return Err(err(&at, format!("workload '{}' on configuration '{}': {why}", w.name, c.name)));
                }
            }
            if let Some(t) = w.threads.iter().find(|t| **t < shards) {
                return Err(err(&at, format!("{shards} shards for workload '{}' on configuration '{}': its {t} thread(s) cannot be split over them (each shard runs at least one client)", w.name, c.name)));
            }
        }
    }
    Ok(workloads)
}

/// Why `launcher = "kubernetes"` cannot run against `target`: the pods run
/// on other machines, so they reach only a server with a network address
/// (docs/lab.md#sharded-runs).
fn kubernetes_refusal(target: &Target) -> Option<String> {
    match target {
        Target::External { driver_args } => {
            let socket = driver_args.iter().find(|a| {
                a.starts_with("--mysql-socket=") || a.strip_prefix("--pgsql-host=").is_some_and(|h| h.starts_with('/'))
            });
            socket.map(|a| {
                format!(
                    "\"kubernetes\" pods cannot reach a unix socket on this host ({}): give the server's network address in the dsn (host and port)",
                    a.split_once('=').map_or("", |x| x.1)
                )
            })
        }
        Target::Managed(_) => Some(
            "\"kubernetes\" pods cannot reach a server the lab runs on this host (its unix socket, its loopback): use server = \"external\" with a dsn the pods can reach, or launcher = \"local\"".into(),
        ),
        Target::Sqlite { .. } => Some(
            "\"kubernetes\" pods cannot reach an embedded SQLite file on this host: use server = \"external\" with a dsn the pods can reach, or launcher = \"local\"".into(),
        ),
    }
}

/// Workload `i`, `tpch = {...}`: one workload per query, appended to `workloads`.
fn push_tpch_workloads(
    cx: &Ctx,
    i: usize,
    w: &RawWorkload,
    t: &RawTpch,
    workload_cpus: &Placement,
    workloads: &mut Vec<Workload>,
    configurations: &[Configuration],
) -> Result<(), SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let at = |key: &str| vec![K("workload"), I(i), K_owned(key)];
    let werr = |key: &str, m: String| err(&at(key), m);
    if w.test.is_some()
        || w.command.is_some()
        || !w.options.is_empty()
        || !w.metrics.is_empty()
        || w.prepare_command.is_some()
    {
        return Err(werr(
            "tpch",
            "a TPC-H workload is tpch = {...} alone: no test, command, options, metrics or prepare_command".into(),
        ));
    }
    if w.threads.is_some() {
        return Err(werr(
            "threads",
            "a TPC-H workload runs one query at a time (its figure is the query's time)".into(),
        ));
    }
    let name = w.name.clone().unwrap_or_else(|| "tpch".to_string());
    if name.is_empty() || name.contains(['/', ':']) {
        return Err(werr("name", "must be non-empty and must not contain '/' or ':'".into()));
    }
    for mut q in tpch_workloads(t, &name, &cx.dir, workloads.len(), configurations)
        .map_err(|(k, m)| err(&[K("workload"), I(i), K("tpch"), K_owned(&k)], m))?
    {
        if workloads.iter().any(|x| x.name == q.name) {
            return Err(werr(
                "name",
                format!("two workloads are named '{}'; give each a distinct name = \"...\"", q.name),
            ));
        }
        q.cpus = workload_cpus.clone();
        workloads.push(q);
    }
    Ok(())
}

/// Workload `i`, `test = ...`: its name, kind and whether it writes unless told.
fn test_workload(
    cx: &Ctx,
    x: &ExperimentSettings,
    i: usize,
    w: &RawWorkload,
    test: &str,
) -> Result<(String, WorkloadKind, bool), SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let at = |key: &str| vec![K("workload"), I(i), K_owned(key)];
    let werr = |key: &str, m: String| err(&at(key), m);
    if w.prepare_command.is_some() {
        return Err(werr("prepare_command", "applies to command workloads only".into()));
    }
    if !w.metrics.is_empty() {
        return Err(werr("metrics", "applies to command workloads only; a test's figures are all recorded".into()));
    }
    let resolved = if crate::workloads::builtin(test).is_some() && !test.contains('/') {
        test.to_string()
    } else {
        let p = rel_to(&cx.dir, test);
        if !p.is_file() {
            return Err(werr(
                "test",
                format!("'{test}' is neither a built-in test nor a script file ({} does not exist); see `dbbench --help` for the built-in tests", p.display()),
            ));
        }
        p.to_string_lossy().into_owned()
    };
    let mut options = x.common_options.clone();
    let own = options_list(&w.options).map_err(|(k, m)| err(&[K("workload"), I(i), K("options"), K_owned(&k)], m))?;
    for (k, v) in own {
        options.retain(|(ek, _)| *ek != k);
        options.push((k, v));
    }
    let base = crate::workloads::test_workload_name(test);
    let writes = !READ_ONLY_TESTS.contains(&base.as_str());
    Ok((w.name.clone().unwrap_or(base), WorkloadKind::Test { test: resolved, options }, writes))
}

/// Workload `i`, `command = [...]`: its name, kind and whether it writes unless told.
fn command_workload(
    cx: &Ctx,
    i: usize,
    w: &RawWorkload,
    command: &[String],
) -> Result<(String, WorkloadKind, bool), SpecError> {
    let err = |keys: &[Seg], msg: String| cx.err(keys, msg);
    let at = |key: &str| vec![K("workload"), I(i), K_owned(key)];
    let werr = |key: &str, m: String| err(&at(key), m);
    if command.is_empty() {
        return Err(werr("command", "must name a program".into()));
    }
    if !w.options.is_empty() {
        return Err(werr("options", "applies to test workloads; put a command's arguments in command = [...]".into()));
    }
    let Some(name) = &w.name else {
        return Err(werr("name", "a command workload needs a name".into()));
    };
    if w.metrics.is_empty() {
        return Err(werr(
            "metrics",
            "a command workload needs metrics = { tps = 'tps = ([0-9.]+)' } (name → regex with one group)".into(),
        ));
    }
    let mut metrics = Vec::new();
    for (m, re) in &w.metrics {
        let Some(re) = re.as_str() else {
            return Err(err(&[K("workload"), I(i), K("metrics"), K_owned(m)], "must be a regex in a string".into()));
        };
        let rx = regex::Regex::new(re).map_err(|e| {
            err(
                &[K("workload"), I(i), K("metrics"), K_owned(m)],
                format!("bad regex: {}", e.to_string().replace('\n', " ")),
            )
        })?;
        if rx.captures_len() < 2 {
            return Err(err(
                &[K("workload"), I(i), K("metrics"), K_owned(m)],
                "the regex needs one capture group around the number".into(),
            ));
        }
        metrics.push((m.clone(), rx));
    }
    Ok((
        name.clone(),
        WorkloadKind::Command { command: command.to_vec(), prepare: w.prepare_command.clone(), metrics },
        true,
    ))
}

fn rel_to(dir: &Path, p: &str) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_absolute() {
        p
    } else {
        dir.join(p)
    }
}

fn check_threads(t: &[u32]) -> Result<(), String> {
    if t.is_empty() {
        return Err("needs at least one thread count, e.g. [1, 4, 16]".into());
    }
    if t.contains(&0) {
        return Err("thread counts must be at least 1".into());
    }
    if let Some(n) = t.iter().find(|n| **n > 1_000_000) {
        return Err(format!("{n} threads: dbbench runs at most 1000000"));
    }
    Ok(())
}

fn prepare_policy(p: &str) -> Result<PreparePolicy, String> {
    match p {
        "restore" => Ok(PreparePolicy::Restore),
        "once" => Ok(PreparePolicy::Once),
        "none" => Ok(PreparePolicy::None),
        o => Err(format!("'{o}' is not a prepare policy; use \"restore\", \"once\" or \"none\"")),
    }
}

/// Whole seconds from a spec duration, at most
/// [`crate::engine::MAX_SECONDS`] (what `--time` takes).
fn seconds(d: &RawDuration) -> Result<u64, String> {
    let bad = |t: &str| format!("'{t}' is not a duration; use whole seconds (30) or \"30s\", \"5m\", \"1h\"");
    let max = crate::engine::MAX_SECONDS as u64;
    let too_long = |t: &dyn std::fmt::Display| format!("{t} is too long: at most {max} seconds (68 years)");
    match d {
        RawDuration::Seconds(s) if *s < 0 => Err(format!("{s} is negative")),
        RawDuration::Seconds(s) if *s as u64 > max => Err(too_long(s)),
        RawDuration::Seconds(s) => Ok(*s as u64),
        RawDuration::Text(t) => {
            let t = t.trim();
            let (num, mult) = if let Some(n) = t.strip_suffix('h') {
                (n, 3600)
            } else if let Some(n) = t.strip_suffix('m') {
                (n, 60)
            } else if let Some(n) = t.strip_suffix('s') {
                (n, 1)
            } else {
                (t, 1)
            };
            let n = num.trim().parse::<u64>().map_err(|_| bad(t))?;
            n.checked_mul(mult).filter(|s| *s <= max).ok_or_else(|| too_long(&format!("'{t}'")))
        }
    }
}

/// `--key=value` pairs from an options table; keys keep dashes (sysbench
/// spelling) but underscores are accepted.
fn options_list(t: &BTreeMap<String, toml::Value>) -> Result<Vec<(String, String)>, (String, String)> {
    let mut out = Vec::new();
    for (k, v) in t {
        let name = k.trim_start_matches("--").replace('_', "-");
        if LAB_OWNED_OPTIONS.contains(&name.as_str()) {
            let m = match name.as_str() {
                "threads" | "num-threads" => "set thread counts with threads = [...]",
                "time" | "warmup-time" | "max-time" => "set durations in [experiment] time/warmup",
                "rand-seed" | "seed-rng" => "set [experiment] seed; each repeat gets its own",
                "db-driver" => "the configuration decides the driver",
                _ => "the lab sets it on every run",
            };
            return Err((k.clone(), format!("cannot be set here: {m}")));
        }
        let v = option_value(v).map_err(|m| (k.clone(), m))?;
        if crate::secret::is_secret_name(&name) {
            crate::secret::register(&v);
        }
        out.push((name, v));
    }
    Ok(out)
}

fn option_value(v: &toml::Value) -> Result<String, String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => (if *b { "on" } else { "off" }).to_string(),
        toml::Value::Array(a) => {
            let items: Result<Vec<_>, _> = a.iter().map(option_value).collect();
            items?.join(",")
        }
        _ => return Err("must be a string, number, boolean or list".into()),
    })
}

fn hooks(h: &RawHooks) -> Result<Hooks, (&'static str, usize, String)> {
    let conv = |which: &'static str, steps: &[RawHookStep]| -> Result<Vec<HookStep>, (&'static str, usize, String)> {
        steps
            .iter()
            .enumerate()
            .map(|(i, s)| match (&s.sql, &s.shell) {
                (Some(q), None) => Ok(HookStep::Sql(q.clone())),
                (None, Some(c)) => Ok(HookStep::Shell(c.clone())),
                _ => Err((which, i, "a hook step is { sql = \"...\" } or { shell = \"...\" }".to_string())),
            })
            .collect()
    };
    Ok(Hooks {
        after_start: conv("after_start", &h.after_start)?,
        after_prepare: conv("after_prepare", &h.after_prepare)?,
        before_run: conv("before_run", &h.before_run)?,
        after_run: conv("after_run", &h.after_run)?,
        before_test: conv("before_test", &h.before_test)?,
        after_test: conv("after_test", &h.after_test)?,
    })
}

/// The workloads a `tpch = {...}` entry stands for: one per query, named
/// `NAME:Q14` (`NAME:Q20-opt0` for a variant), all on the data the first
/// one prepares with `dbbench tpch load` (index `first`). Errors are
/// (key inside `tpch`, message).
fn tpch_workloads(
    t: &RawTpch,
    name: &str,
    dir: &Path,
    first: usize,
    configurations: &[Configuration],
) -> Result<Vec<Workload>, (String, String)> {
    let e = |k: &str, m: String| (k.to_string(), m);
    crate::tpch::check_scale_factor(t.sf).map_err(|m| e("sf", m.trim_start_matches("--sf=").to_string()))?;
    crate::tpch::load::check_loadable(t.sf)
        .map_err(|m| e("sf", m.to_string().trim_start_matches("--sf=").to_string()))?;
    let queries =
        crate::tpch::run::QueryId::parse_list(t.queries.as_deref().unwrap_or("1-22")).map_err(|m| e("queries", m))?;
    // `tpch query --timeout` takes at most a year.
    let timeout_s = match &t.timeout {
        Some(d) => match seconds(d).map_err(|m| e("timeout", m))? {
            s if s > 366 * 86400 => return Err(e("timeout", format!("{s} seconds is more than a year"))),
            s => s.max(1),
        },
        None => 3600,
    };
    let warmups = t.warmups.unwrap_or(0);
    let mut options = vec![format!("--timeout={timeout_s}"), format!("--warmups={warmups}")];
    match t.params.as_deref() {
        None | Some("seed") => {}
        Some("validation") => options.push("--validation".into()),
        Some(p) => {
            return Err(e(
                "params",
                format!(
                    "'{p}': use \"seed\" (qgen-like, repeat r uses the experiment's seed + r - 1) or \"validation\""
                ),
            ))
        }
    }
    if let Some(d) = &t.query_dir {
        let p = rel_to(dir, d);
        if !p.is_dir() {
            return Err(e("query_dir", format!("{} is not a directory", p.display())));
        }
        options.push(format!("--query-dir={}", p.display()));
    }
    for q in queries.iter().filter(|q| q.variant.is_some()) {
        if t.query_dir.is_none() {
            return Err(e(
                "queries",
                format!("{} is a variant: give query_dir, the directory of its template", q.label()),
            ));
        }
    }
    let keys = match t.keys.as_deref() {
        None => None,
        Some(k @ ("before" | "after")) => Some(k.to_string()),
        Some(k) => {
            return Err(e(
                "keys",
                format!("'{k}': use \"before\" or \"after\" (primary keys created before or after the load)"),
            ))
        }
    };
    let restart_each_run = match t.restart.as_deref() {
        None | Some("none") => false,
        Some("run") => {
            if let Some(c) = configurations.iter().find(|c| matches!(c.target, Target::External { .. })) {
                return Err(e("restart", format!("\"run\" restarts servers dbbench starts; configuration '{}' is an external server (use restart = \"none\")", c.name)));
            }
            true
        }
        Some(r) => {
            return Err(e(
                "restart",
                format!(
                    "'{r}': use \"run\" (restart the server, and drop caches if asked, before every query) or \"none\""
                ),
            ))
        }
    };
    // Only for the plan's estimate: a guess of a minute per query at SF 1.
    let estimate_s = match &t.expected {
        Some(d) => seconds(d).map_err(|m| e("expected", m))? as f64,
        None => (60.0 * t.sf).max(1.0),
    };
    let mut load = vec![format!("--sf={}", t.sf)];
    if let Some(k) = keys {
        load.push(format!("--keys={k}"));
    }
    // Query label → options per configuration index.
    let mut server_options: std::collections::HashMap<String, Vec<Vec<String>>> = Default::default();
    let strings = |v: &toml::Value| {
        v.as_array().and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
    };
    for (q, v) in &t.server_options {
        let label = q.trim_start_matches(['Q', 'q']);
        if !queries.iter().any(|x| x.label().trim_start_matches('Q') == label) {
            return Err(e("server_options", format!("'{q}' is not one of this workload's queries (keys are query numbers or variants: \"18\", \"20-opt0\")")));
        }
        let shape = || {
            e("server_options", format!("'{q}' must be a list of options for every configuration, e.g. [\"--optimizer-switch=semijoin=off\"], or a table of such lists by configuration name, e.g. {{ mariadb = [...] }}"))
        };
        let mut per_config = vec![Vec::new(); configurations.len()];
        match v {
            toml::Value::Array(_) => {
                let list = strings(v).ok_or_else(shape)?;
                per_config.iter_mut().for_each(|p| *p = list.clone());
            }
            toml::Value::Table(by_config) => {
                for (cname, list) in by_config {
                    let c = configurations.iter().position(|c| c.name == *cname).ok_or_else(|| {
                        e(
                            "server_options",
                            format!(
                                "'{q}': '{cname}' is not a configuration of this experiment ({})",
                                configurations.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
                            ),
                        )
                    })?;
                    per_config[c] = strings(list).ok_or_else(shape)?;
                }
            }
            _ => return Err(shape()),
        }
        for (c, list) in configurations.iter().zip(&per_config) {
            if !list.is_empty() && !matches!(c.target, Target::Managed(_)) {
                return Err(e("server_options", format!("'{q}': server options need a server dbbench starts; configuration '{}' is not one (give it server = \"mariadb\"|\"mysql\"|\"postgresql\")", c.name)));
            }
        }
        server_options.insert(label.to_string(), per_config);
    }
    Ok(queries
        .iter()
        .map(|q| Workload {
            name: format!("{name}:{}", q.label()),
            kind: WorkloadKind::Tpch {
                query: q.label().trim_start_matches('Q').to_string(),
                options: options.clone(),
                load: load.clone(),
            },
            threads: vec![1],
            writes: false,
            data: first,
            restart_each_run,
            // Every warmup and the measured run may each take the whole timeout.
            run_timeout: Some(Duration::from_secs((warmups as u64 + 1) * timeout_s + 300)),
            estimate_s: Some(estimate_s * (warmups as f64 + 1.0)),
            server_options: server_options.get(q.label().trim_start_matches('Q')).cloned().unwrap_or_default(),
            cpus: Placement::default(),
            clients: None,
        })
        .collect())
}

/// Driver options from a DSN (`crate::dsn`: URL or DBI form, percent-decoded),
/// with `env_password` (from `password_env`) replacing any password in it.
fn dsn_driver_args(dsn: &str, env_password: Option<&str>) -> Result<Vec<String>, String> {
    let mut parsed = crate::dsn::Dsn::parse(dsn)?;
    if parsed.driver_args.first().is_some_and(|a| a == "--db-driver=sqlite") {
        return Err(
            "an external server's dsn is mysql://, postgresql:// or dbi:...; for SQLite use server = \"sqlite\"".into(),
        );
    }
    if let Some(p) = env_password {
        parsed = parsed.with_password(p);
    }
    for a in &parsed.driver_args {
        if let Some((_, p)) = a.split_once("-password=") {
            // Kept in the lab's memory only: `runner::run_child` moves it from
            // a child's argv into its environment, and redaction hides it.
            crate::secret::register(p);
        }
    }
    Ok(parsed.driver_args)
}

// ------------------------------------------------------------------ locating keys

/// A step in a key path: a table key or an array index.
#[derive(Clone)]
enum Seg {
    Key(String),
    Index(usize),
}
use Seg::Index as I;
#[allow(non_snake_case)]
fn K(s: &str) -> Seg {
    Seg::Key(s.to_string())
}
#[allow(non_snake_case)]
fn K_owned(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

/// `configuration[2].server_options` for messages (1-based indexes, as a user counts).
fn key_path(keys: &[Seg]) -> String {
    let mut s = String::new();
    for k in keys {
        match k {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{}]", i + 1)),
        }
    }
    s
}

/// `[report] server_counters`: status names as the server reports them
/// (`Innodb_rows_read`, PostgreSQL's `db.xact_commit`, `bgwriter.buffers_alloc`),
/// each once. Err: (index, why).
fn check_server_counters(names: &[String]) -> Result<(), (usize, String)> {
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err((
                i,
                format!("'{n}' is not a status name; use names as the server reports them, e.g. \"Innodb_rows_read\" or \"db.xact_commit\""),
            ));
        }
        if names[..i].contains(n) {
            return Err((i, format!("'{n}' is listed twice")));
        }
    }
    Ok(())
}

/// The line of the deepest existing key along `keys`.
fn locate(text: &str, keys: &[Seg]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut table: &DeTable = root.get_ref();
    let mut best = None;
    let mut i = 0;
    while i < keys.len() {
        let Seg::Key(k) = &keys[i] else { return best };
        let Some((key, value)) = table.get_key_value(k.as_str()) else { return best };
        best = Some(line_of(text, key.span().start));
        let mut v: &DeValue = value.get_ref();
        let mut span = key.span();
        if let (Some(Seg::Index(n)), DeValue::Array(items)) = (keys.get(i + 1), v) {
            let item = items.get(*n)?;
            span = item.span();
            best = Some(line_of(text, span.start));
            v = item.get_ref();
            i += 1;
        }
        let _ = span;
        match v {
            DeValue::Table(t) => table = t,
            _ => return best,
        }
        i += 1;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[experiment]
name = "t"
threads = [1, 2]
repeats = 2
time = "3s"
warmup = 1
baseline = "wal"
options = { tables = 1, table_size = 1000 }

[[configuration]]
name = "rollback"
server = "sqlite"
pragmas = { journal_mode = "delete" }

[[configuration]]
name = "wal"
server = "sqlite"
pragmas = { journal_mode = "wal", synchronous = "normal" }

[[workload]]
test = "oltp_point_select"

[[workload]]
test = "oltp_read_write"
name = "rw"
threads = [4]
options = { table-size = 500 }
"#;

    fn parse_str(t: &str) -> Result<Spec, String> {
        parse(Path::new("spec.toml"), t).map_err(|e| format!("{e:#}"))
    }

    /// A spec holding every key a spec may have, each on a line of its own
    /// (sub-tables, not inline tables), so that the key-by-key sweep below
    /// reaches every one; `every_raw_field_is_in_the_sweep` keeps it so.
    /// Paths and variables the parser checks are ones every test run has
    /// (`Cargo.toml` in the test's directory, `PATH`).
    const EVERY_KEY: &str = r#"
[experiment]
name = "every-key"
description = "d"
baseline = "lite"
threads = [1, 2]
repeats = 2
warmup = "1s"
time = "2s"
run_timeout = "1m"
order = "interleaved"
prepare = "once"
drop_caches = false
sample_interval = "1s"
seed = 7
store = "results.sqlite"

[experiment.options]
tables = 1
table-size = 100

[cpus]
server = "0"
clients = "1"
other = "1"

[report]
server_counters = ["Questions"]

[[hooks.after_start]]
sql = "SELECT 1"
[[hooks.after_prepare]]
shell = "true"
[[hooks.before_run]]
shell = "true"
[[hooks.after_run]]
sql = "SELECT 1"
[[hooks.before_test]]
shell = "true"
[[hooks.after_test]]
shell = "true"

[[configuration]]
name = "lite"
server = "sqlite"
prepare = "restore"
[configuration.pragmas]
journal_mode = "wal"
[configuration.options]
sqlite-busy-timeout = 1000

[[configuration]]
name = "maria"
server = "mariadb"
basedir = "/usr"
server_options = ["--skip-log-bin"]
config_file = "Cargo.toml"
start_timeout = "30s"
superuser = true
[configuration.cpus]
server = "0"
[configuration.clients]
shards = 2
launcher = "local"
[[configuration.hooks.before_run]]
sql = "SELECT 1"

[[configuration]]
name = "ext"
server = "external"
dsn = "postgresql://sbtest@127.0.0.1:5432/sbtest"
password_env = "PATH"

[[workload]]
test = "oltp_read_write"
name = "rw"
threads = [4]
writes = true
[workload.options]
range_size = 10
[workload.cpus]
clients = "1"
[workload.clients]
shards = 2
launcher = "local"

[[workload]]
name = "cmd"
command = ["true", "{threads}"]
prepare_command = ["true"]
[workload.metrics]
tps = "tps: ([0-9.]+)"

"#;

    /// The keys of a TPC-H workload, whose per-query server options need
    /// every configuration managed.
    const EVERY_TPCH_KEY: &str = r#"
[experiment]
name = "h"

[[configuration]]
name = "maria"
server = "mariadb"
[[workload]]
name = "h"
[workload.tpch]
sf = 0.01
queries = "1-3"
timeout = "1m"
warmups = 1
params = "seed"
keys = "after"
restart = "none"
query_dir = "src"
expected = "10s"
[workload.tpch.server_options]
"2" = ["--optimizer-switch=semijoin=off"]
"#;

    /// The `clients` keys of a Kubernetes launch, which only an external
    /// configuration with a network address takes.
    const EVERY_KUBERNETES_KEY: &str = r#"
[experiment]
name = "k8s"
threads = [2]
time = 2

[[configuration]]
name = "ext"
server = "external"
dsn = "mysql://sbtest@10.0.0.5:3306/sbtest"

[[workload]]
test = "oltp_point_select"
[workload.clients]
shards = 2
launcher = "kubernetes"
image = "dbbench:1"
image_pull_policy = "IfNotPresent"
binary = "/usr/local/bin/dbbench"
namespace = "bench"
context = "lab"
kubectl = "kubectl"
spread = "one-per-node"
topology_key = "kubernetes.io/hostname"
service_account = "dbbench"
cpu = "2"
memory = "1Gi"
secret_name = "dbbench-secrets"
start_grace = 60
[workload.clients.node_selector]
"dbbench/client" = "yes"
"#;

    /// Values a key is given by the fuzz and the sweep: extreme, ill-typed,
    /// empty, escaping, out of every range.
    const BAD_VALUES: &[&str] = &[
        "0",
        "-1",
        "1e309",
        "nan",
        "inf",
        "4294967296",
        "3000000000",
        "18446744073709551616",
        "\"\"",
        "\"-5s\"",
        "\"1e9h\"",
        "\"99999999999s\"",
        "[]",
        "[0]",
        "[1, 1]",
        "[4000000000]",
        "{}",
        "true",
        "\"x\"",
        "\"../../x\"",
        "\"\\u0000\"",
        "[[1]]",
        "1.5",
        "2147483647",
    ];

    /// What `lab run --dry-run` does with `text`: parse, then plan. A
    /// refusal must be one line naming the file; a plan must stay within
    /// its bound. Returns whether it planned. Panics (the test fails) on
    /// anything else, naming `what`.
    fn refused_or_planned(text: &str, what: &str) -> bool {
        match parse(Path::new("spec.toml"), text) {
            Err(e) => {
                let e = format!("{e:#}");
                assert!(e.starts_with("spec.toml") && !e.contains('\n'), "{what}: {e}\n{text}");
                false
            }
            Ok(spec) => {
                let plan = crate::lab::plan::runs(&spec);
                assert!(plan.len() <= MAX_PLANNED_RUNS, "{what}: {} runs", plan.len());
                let _ = crate::lab::plan::restarts(&spec, &plan);
                let _ = crate::lab::plan::estimate_s(&spec, &plan);
                let estimates = crate::lab::plan::data_estimates(&spec, &plan);
                let _ = crate::lab::plan::disk_estimate(&spec, &estimates);
                let _ = crate::lab::plan::describe(&spec, &plan);
                true
            }
        }
    }

    /// Issue 38's sweep of every spec key: each key of [`EVERY_KEY`],
    /// [`EVERY_TPCH_KEY`] and [`EVERY_KUBERNETES_KEY`] given each of [`BAD_VALUES`] in turn (the
    /// rest of the spec valid) is refused on one line naming the file, or
    /// planned within bounds; never a panic.
    #[test]
    fn every_spec_key_with_a_bad_value_is_refused_on_one_line_or_planned() {
        let (mut keys, mut planned, mut refused) = (0, 0, 0);
        for seed in [EVERY_KEY, EVERY_TPCH_KEY, EVERY_KUBERNETES_KEY] {
            assert!(refused_or_planned(seed, "the seed itself"), "the seed must plan:\n{seed}");
            let lines: Vec<&str> = seed.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let Some(eq) = line.find(" = ") else { continue };
                keys += 1;
                for bad in BAD_VALUES {
                    let mut text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                    text[i] = format!("{} = {bad}", &line[..eq]);
                    match refused_or_planned(&text.join("\n"), &text[i]) {
                        true => planned += 1,
                        false => refused += 1,
                    }
                }
            }
        }
        assert!(keys > 90, "only {keys} keys swept");
        assert!(planned > 0 && refused > 0, "planned {planned}, refused {refused}");
    }

    /// Every field of the spec's raw TOML structs appears as a key (or a
    /// table) in the sweep's specs, so a key added later is swept too.
    #[test]
    fn every_raw_field_is_in_the_sweep() {
        let source = include_str!("spec.rs");
        let raw = &source[source
            .find("// ------------------------------------------------------------------ raw TOML")
            .unwrap()
            ..source.find("// ------------------------------------------------------------------ loading").unwrap()];
        let mut fields = 0;
        let mut in_struct = false;
        for line in raw.lines() {
            if line.starts_with("struct Raw") && line.ends_with('{') {
                in_struct = true;
            } else if line.starts_with('}') {
                in_struct = false;
            } else if in_struct && !line.trim_start().starts_with("//") && !line.trim_start().starts_with('#') {
                let Some((name, _)) = line.trim().split_once(':') else { continue };
                let key = match name {
                    "configurations" => "configuration",
                    "workloads" => "workload",
                    other => other,
                };
                fields += 1;
                let present = [EVERY_KEY, EVERY_TPCH_KEY, EVERY_KUBERNETES_KEY].iter().any(|spec| {
                    spec.lines().any(|l| {
                        l.starts_with(&format!("{key} = "))
                            || l.starts_with('[')
                                && l.trim_matches(|c| c == '[' || c == ']').split('.').any(|seg| seg == key)
                    })
                });
                assert!(present, "spec key {key} is in no sweep spec: add it to EVERY_KEY");
            }
        }
        assert!(fields > 60, "only {fields} fields found: did the raw section move?");
    }

    /// Fuzz: the example specs and this module's, mutated (a value
    /// replaced by an extreme or ill-typed one, a line dropped or doubled,
    /// bytes inserted): parsing and planning (what `lab run --dry-run`
    /// does) either refuse with a located line or succeed; nothing panics
    /// and no plan outgrows its bound.
    #[test]
    fn mutated_specs_are_refused_or_planned_and_never_panic() {
        let seeds = [
            GOOD,
            EVERY_KEY,
            EVERY_TPCH_KEY,
            EVERY_KUBERNETES_KEY,
            include_str!("../../examples/quickstart.toml"),
            include_str!("../../examples/mariadb-vs-postgresql.toml"),
            include_str!("../../examples/segmented-key-cache.toml"),
            include_str!("../../examples/dbt3-mariadb-vs-postgresql.toml"),
        ];
        let mut r = crate::test_rand::Lcg(0x5bec);
        let (mut planned, mut refused) = (0, 0);
        for round in 0..4000 {
            let mut lines: Vec<String> = seeds[r.below(seeds.len())].lines().map(String::from).collect();
            for _ in 0..1 + r.below(3) {
                let i = r.below(lines.len());
                match r.below(5) {
                    0 | 1 => {
                        if let Some(eq) = lines[i].find(" = ") {
                            lines[i] = format!("{} = {}", &lines[i][..eq], BAD_VALUES[r.below(BAD_VALUES.len())]);
                        }
                    }
                    2 => {
                        lines.remove(i);
                    }
                    3 => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    _ => {
                        let at = r.below(lines[i].len() + 1);
                        if lines[i].is_char_boundary(at) {
                            let junk = ["[", "]", "\"", "=", "{", ",", "\u{e9}", "#", "\\"][r.below(9)];
                            lines[i].insert_str(at, junk);
                        }
                    }
                }
                if lines.is_empty() {
                    break;
                }
            }
            let text = lines.join("\n");
            match refused_or_planned(&text, &format!("round {round}")) {
                true => planned += 1,
                false => refused += 1,
            }
        }
        assert!(planned > 100 && refused > 100, "planned {planned}, refused {refused}: the mutations miss");
    }

    #[test]
    fn parses_and_resolves_defaults() {
        let s = parse_str(GOOD).expect("valid");
        assert_eq!(s.configurations[0].name, "wal", "baseline goes first");
        assert_eq!(s.time_s, 3);
        assert_eq!(s.warmup_s, 1);
        assert_eq!(s.order, Order::Interleaved);
        assert_eq!(s.workloads[0].name, "oltp_point_select");
        assert!(!s.workloads[0].writes);
        assert!(s.workloads[1].writes);
        assert_eq!(s.workloads[1].threads, vec![4]);
        let WorkloadKind::Test { options, .. } = &s.workloads[1].kind else { panic!() };
        assert_eq!(
            options,
            &vec![("tables".to_string(), "1".to_string()), ("table-size".to_string(), "500".to_string())]
        );
        let Target::Sqlite { driver_args } = &s.configurations[0].target else { panic!() };
        assert_eq!(driver_args, &["--db-driver=sqlite", "--sqlite-journal-mode=wal", "--sqlite-synchronous=normal"]);
        assert_eq!(s.configurations[0].prepare, PreparePolicy::Restore);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = parse_str(&GOOD.replace("repeats = 2", "repeats = 2\nrepeat = 3")).unwrap_err();
        assert!(e.starts_with("spec.toml:6: unknown field `repeat`"), "{e}");
        let e = parse_str(&GOOD.replace("\"delete\"", "\"nope\" , cache = 1")).unwrap_err();
        assert!(e.starts_with("spec.toml:14: configuration[1].pragmas.cache:"), "{e}");
        let e = parse_str(&GOOD.replace("baseline = \"wal\"", "baseline = \"x\"")).unwrap_err();
        assert!(e.starts_with("spec.toml:8: experiment.baseline: no configuration is named 'x'"), "{e}");
        let e = parse_str(&GOOD.replace("threads = [4]", "threads = [4, 0]")).unwrap_err();
        assert!(e.starts_with("spec.toml:27: workload[2].threads:"), "{e}");
        let e = parse_str(&GOOD.replace("time = \"3s\"", "time = \"3 weeks\"")).unwrap_err();
        assert!(e.starts_with("spec.toml:6: experiment.time: '3 weeks' is not a duration"), "{e}");
        let e = parse_str(&GOOD.replace("table_size = 1000", "threads = 8")).unwrap_err();
        assert!(e.contains("experiment.options.threads: cannot be set here"), "{e}");
        let e = parse_str(&GOOD.replace("test = \"oltp_point_select\"", "test = \"no_such\"")).unwrap_err();
        assert!(e.starts_with("spec.toml:22: workload[1].test: 'no_such' is neither"), "{e}");
    }

    /// The error is a type, not only a line of text: callers (and tests) read
    /// the file, line and key path from its fields, and a whole-file error has
    /// no line rather than a made-up `:0:`.
    #[test]
    fn spec_errors_carry_file_line_and_key_path_as_fields() {
        let typed = |t: &str| validate(Path::new("spec.toml"), t).unwrap_err();
        let e = typed(&GOOD.replace("threads = [4]", "threads = [4, 0]"));
        assert_eq!((e.line, e.key_path.as_deref()), (Some(27), Some("workload[2].threads")), "{e}");
        assert_eq!(e.file, Path::new("spec.toml"));
        let e = typed(GOOD.split("[[workload]]").next().unwrap());
        assert_eq!(e.line, None, "{e}");
        assert!(e.to_string().starts_with("spec.toml: "), "{e}");
        let e = typed(&GOOD.replace("time = \"3s\"\n", ""));
        assert_eq!(e.key_path.as_deref(), Some("experiment.time"), "{e}");
        assert!(e.message.contains("is missing"), "{e}");
        let e = typed("[experiment\n");
        assert_eq!((e.line.is_some(), e.key_path.as_deref()), (true, None), "{e}");
    }

    #[test]
    fn a_syntax_error_reads_the_same_in_the_lab_and_in_dbbench_report() {
        // `dbbench report SPEC` reads only the spec's [experiment] table, but
        // a file that is not TOML must be shown as the lab shows it: one
        // SpecError, its line from the parser's span, never a ':0:'.
        let dir = crate::safe_fs::TestDir::new("spec-syntax");
        for (i, broken) in
            ["[experiment\n", &GOOD.replace("repeats = 2", "repeats = = 2"), "a = 1\na = 2\n"].into_iter().enumerate()
        {
            let path = dir.join(format!("broken-{i}.toml"));
            std::fs::write(&path, broken).unwrap();
            let lab = validate(&path, broken).unwrap_err();
            let report = crate::report::SpecRef::load(&path).unwrap_err();
            let typed = report.downcast_ref::<SpecError>().unwrap_or_else(|| panic!("not a SpecError: {report:#}"));
            assert_eq!(typed, &lab);
            assert!(lab.line.is_some_and(|l| l > 0) && !report.to_string().contains(":0:"), "{report}");
        }
    }

    #[test]
    fn report_server_counters_are_checked_with_file_line_and_key() {
        let with = |list: &str| {
            parse_str(&format!("{GOOD}\n[report]\nserver_counters = [\n  \"Innodb_rows_read\",\n  {list}\n]\n"))
        };
        let last = GOOD.lines().count();
        assert!(with("\"db.xact_commit\"").is_ok());
        let e = with("\"Innodb rows\"").unwrap_err();
        assert!(
            e.starts_with(&format!(
                "spec.toml:{}: report.server_counters[2]: 'Innodb rows' is not a status name",
                last + 5
            )),
            "{e}"
        );
        let e = with("\"Innodb_rows_read\"").unwrap_err();
        assert!(e.contains("report.server_counters[2]: 'Innodb_rows_read' is listed twice"), "{e}");
        let e = parse_str(&format!("{GOOD}\n[report]\ncounters = []\n")).unwrap_err();
        assert!(e.contains("unknown field `counters`"), "{e}");
    }

    #[test]
    fn numbers_out_of_range_are_one_line() {
        for (from, to, expected) in [
            (
                "time = \"3s\"",
                "time = \"99999999999999999999h\"",
                "experiment.time: '99999999999999999999h' is not a duration",
            ),
            ("time = \"3s\"", "time = \"9999999999h\"", "experiment.time: '9999999999h' is too long"),
            ("time = \"3s\"", "time = 9999999999", "experiment.time: 9999999999 is too long"),
            ("warmup = 1", "warmup = 1\nsample_interval = 0", "experiment.sample_interval: must be at least 1 second"),
            ("warmup = 1", "warmup = 1\nrun_timeout = \"0s\"", "experiment.run_timeout: must be at least 1 second"),
            ("warmup = 1", "warmup = 1\nseed = 0", "experiment.seed: must be at least 1"),
            ("warmup = 1", "warmup = 1\nseed = 2147483647", "experiment.seed: 2147483647 + 2 repeats goes past"),
            // Planning 12e9 runs would take hundreds of GB.
            ("repeats = 2", "repeats = 2000000000", "experiment.repeats: 2000000000 repeats × 3 (workload, threads) pairs × 2 configurations is 12000000000 runs, more than the 1000000 a spec may plan"),
            ("threads = [4]", "threads = [4000000]", "workload[2].threads: 4000000 threads"),
        ] {
            let t = GOOD.replace(from, to);
            assert_ne!(t, GOOD, "{from}");
            let e = parse_str(&t).unwrap_err();
            assert!(e.contains(expected) && !e.contains('\n'), "{to}: {e}");
        }
        let tpch = |sf: &str| {
            GOOD.replace(
                "test = \"oltp_point_select\"",
                &format!("name = \"h\"\ntpch = {{ sf = {sf}, queries = \"1\" }}"),
            )
        };
        let e = parse_str(&tpch("1e30")).unwrap_err();
        assert!(e.contains("workload[1].tpch.sf: 1000000000000000000000000000000: out of range"), "{e}");
        let e = parse_str(&tpch("0.00001")).unwrap_err();
        assert!(e.contains("out of range; use a scale factor from 0.0001 to 100000"), "{e}");
        let e = parse_str(&tpch("0.012")).unwrap_err();
        assert!(e.contains("workload[1].tpch.sf: 0.012: dbgen's partsupp at this scale factor gives part"), "{e}");
        assert!(parse_str(&tpch("0.01")).is_ok());
    }

    #[test]
    fn external_dsn_is_percent_decoded_as_everywhere_else() {
        // A password holding '@' or '/' is written %40, %2F in a URL; the
        // lab passed it on undecoded (login failed with the right password).
        let args = dsn_driver_args("mysql://u:se%40cr%2Ft@127.0.0.1:3307/db", None).unwrap();
        assert!(args.contains(&"--mysql-password=se@cr/t".to_string()), "{args:?}");
        let args = dsn_driver_args("postgresql://u@%2Ftmp%2Fpg/db", None).unwrap();
        assert!(args.contains(&"--pgsql-host=/tmp/pg".to_string()), "{args:?}");
        // password_env replaces the DSN's own.
        let args = dsn_driver_args("pgsql://u:old@h/db", Some("new%40")).unwrap();
        assert_eq!(args.iter().filter(|a| a.contains("-password=")).collect::<Vec<_>>(), ["--pgsql-password=new%40"]);
        let e = dsn_driver_args("mysql://u:50%zz@h/db", None).unwrap_err();
        assert!(e.contains("not followed by two hex digits") && !e.contains("50%zz"), "{e}");
        // The DBI form, as querydiff takes it.
        let args = dsn_driver_args("dbi:mysql:host=127.0.0.1;port=3307;user=u;database=d", None).unwrap();
        assert_eq!(
            args,
            ["--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=3307", "--mysql-user=u", "--mysql-db=d"]
        );
        assert!(dsn_driver_args("sqlite:x.db", None).unwrap_err().contains("server = \"sqlite\""));
    }

    #[test]
    fn external_dsn_and_redaction() {
        let args = dsn_driver_args("mysql://u:pw@127.0.0.1:3307/db?socket=/tmp/s", None).unwrap();
        assert_eq!(
            args,
            [
                "--db-driver=mysql",
                "--mysql-user=u",
                "--mysql-password=pw",
                "--mysql-host=127.0.0.1",
                "--mysql-port=3307",
                "--mysql-db=db",
                "--mysql-socket=/tmp/s"
            ]
        );
        let t = GOOD.replace(
            "server = \"sqlite\"\npragmas = { journal_mode = \"delete\" }",
            "server = \"external\"\ndsn = \"postgresql://a:secret@h/db\"\nprepare = \"restore\"",
        );
        let e = parse_str(&t).unwrap_err();
        assert!(e.contains("configuration[1].prepare: an external server's data cannot be snapshotted"), "{e}");
        let t = GOOD.replace(
            "server = \"sqlite\"\npragmas = { journal_mode = \"delete\" }",
            "server = \"external\"\ndsn = \"postgresql://a:secret@h/db\"",
        );
        let s = parse_str(&t).unwrap();
        let c = s.configurations.iter().find(|c| c.name == "rollback").unwrap();
        assert_eq!(c.prepare, PreparePolicy::Once);
        assert!(!c.definition.to_string().contains("secret"));
        // A password given as an option (issue 21: it reached the stored definition).
        let t = GOOD.replace(
            "pragmas = { journal_mode = \"delete\" }",
            "pragmas = { journal_mode = \"delete\" }\noptions = { mysql-password = \"opt-pw-1\", pgsql_password = \"opt-pw-2\" }",
        );
        let s = parse_str(&t).unwrap();
        let d = s.configurations.iter().find(|c| c.name == "rollback").unwrap().definition.to_string();
        assert!(!d.contains("opt-pw") && d.contains("--mysql-password=<hidden>"), "{d}");
    }

    #[test]
    fn command_workloads_need_metrics_with_a_group() {
        let t = GOOD.replace(
            "test = \"oltp_point_select\"",
            "name = \"pgb\"\ncommand = [\"true\"]\nmetrics = { tps = 'tps = [0-9.]+' }",
        );
        let e = parse_str(&t).unwrap_err();
        assert!(e.contains("workload[1].metrics.tps: the regex needs one capture group"), "{e}");
    }
}
