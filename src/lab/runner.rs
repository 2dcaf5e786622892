//! Executes a plan: keeps the right server running on the right data,
//! runs each planned run as a child process, samples the OS and the server
//! meanwhile, and writes every finished run to the store.
//!
//! Per run (the seeds' gen-1 loop, made explicit):
//! 1. `ensure_ready`: the configuration's server runs on the workload's
//!    data. Under `prepare = "restore"` the data is prepared once into a
//!    fresh data directory and snapshotted; before a run of a writing
//!    workload (or after a switch) the server is stopped, the snapshot
//!    restored, the page cache dropped if asked, and the server started.
//! 2. `before_run` hooks, samplers on, the run (`dbbench <test> run
//!    --format=json` or a command workload), samplers off, `after_run` hooks.
//! 3. Crash check: a dead server makes the run `failed` with its error-log
//!    excerpt; the next run starts a new server and the matrix goes on.
//! 4. One store transaction for the run.
//!
//! Runs already in the store are skipped, which is all `--resume` needs:
//! a kill loses at most the run in flight.

use crate::errors::text_error;
use crate::exit::Exit;
use crate::lab::cpus::CpuSet;
use crate::lab::datadir;
use crate::lab::hostlock::{self, Acquired, HostLock};
use crate::lab::outcome::{interpret, ChildResult};
use crate::lab::plan::{self, PlannedRun};
use crate::lab::sampler::{OsSampler, PeriodicSampler, WatchedPids};
use crate::lab::server::{self, ManagedServer, ServerSpec};
use crate::lab::spec::{HookStep, Hooks, PreparePolicy, Spec, Target, WorkloadKind};
use crate::lab::sql;
use crate::store::{CacheState, Overhead, RunRecord, RunStatus, Store, StoreErrorKind};
use crate::timestamp::rfc3339_now;
use anyhow::{anyhow, bail, Context};
use serde_json::json;
use std::collections::HashMap;
use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Command-line choices of `dbbench lab run`.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Continue the newest unfinished experiment of this spec.
    pub resume: bool,
    /// Start a new experiment even if an unfinished one exists.
    pub new: bool,
    /// Results store path (overrides the spec).
    pub store: Option<PathBuf>,
    /// Directory for data directories, snapshots and logs.
    pub workdir: Option<PathBuf>,
    /// Keep data directories and snapshots after the experiment finishes.
    pub keep_data: bool,
    /// Run even while another lab run measures on this host (recorded).
    pub allow_concurrent: bool,
    /// `--metrics-listen`: serve live metrics there (see `crate::lab::live`).
    pub metrics_listen: Option<String>,
}

/// The benchmark account's TCP password of a managed server, in the
/// environment of hooks and command workloads (docs/lab.md).
const SERVER_PASSWORD_ENV: &str = "DBBENCH_SERVER_PASSWORD";

/// Set by SIGINT/SIGTERM: finish nothing more, keep state for `--resume`.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The default results store and work directory of a spec.
pub fn default_paths(spec: &Spec, o: &RunOptions) -> (PathBuf, PathBuf) {
    let dir = spec.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let base = o.workdir.clone().unwrap_or_else(|| dir.join("dbbench-lab"));
    let store = o
        .store
        .clone()
        .or_else(|| spec.store.as_ref().map(PathBuf::from))
        .unwrap_or_else(|| base.join("results.sqlite"));
    (store, base)
}

/// What can be checked before anything starts: every managed
/// configuration's server programs and options, and every test workload's
/// dbbench options (a misspelt option fails `lab plan`, not a prepare
/// hours into the experiment).
pub fn preflight(spec: &Spec) -> anyhow::Result<()> {
    for c in &spec.configurations {
        if let Target::Managed(s) = &c.target {
            server::check(s).with_context(|| format!("{}: configuration '{}'", spec.path.display(), c.name))?;
        }
    }
    check_test_options(spec)
}

/// Asks dbbench itself (`dbbench TEST OPTIONS... help`, which parses and
/// checks the options as a run does, then prints the test's help) whether
/// each test workload's options, with each configuration's, are known and
/// valid. Passwords are left out (they are valid by name and must not be in
/// an argv). Other failures (a script without a `help` command, one that
/// does not load) are left to the runs, which report them.
fn check_test_options(spec: &Spec) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find the dbbench binary")?;
    let mut checked = std::collections::HashSet::new();
    for w in &spec.workloads {
        let WorkloadKind::Test { test, options } = &w.kind else { continue };
        for c in &spec.configurations {
            let args: Vec<String> = c
                .options
                .iter()
                .chain(options)
                .filter(|(k, _)| !crate::secret::is_secret_name(k))
                .map(|(k, v)| format!("--{k}={v}"))
                .collect();
            if !checked.insert((test.clone(), args.clone())) {
                continue;
            }
            let mut cmd = Command::new(&exe);
            cmd.arg(test).args(&args).arg("help").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
            cmd.current_dir(spec.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")));
            for v in crate::secret::PASSWORD_VARS {
                cmd.env_remove(v);
            }
            let r = run_command_bounded(cmd, Duration::from_secs(30));
            let Some(line) = r
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("invalid option") || l.starts_with("Invalid value for"))
            else {
                continue;
            };
            let key = line
                .split_once("--")
                .map(|(_, o)| o.split('=').next().unwrap_or(o).to_string())
                .or_else(|| line.split('\'').nth(1).map(str::to_string))
                .unwrap_or_default();
            let at = option_line(&spec.text, &key).map(|n| format!("{n}: ")).unwrap_or_default();
            bail!(
                "{}:{at}workload '{}' on configuration '{}': {}; `dbbench {} help` lists the test's options",
                spec.path.display(),
                w.name,
                c.name,
                crate::secret::redact(line),
                test
            );
        }
    }
    Ok(())
}

/// The first line of a spec's text that names option `key` (`table-size`
/// or `table_size`), for an error message.
fn option_line(text: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    let (dash, under) = (key.replace('_', "-"), key.replace('-', "_"));
    text.lines().position(|l| l.contains(&dash) || l.contains(&under)).map(|i| i + 1)
}

/// Runs a short command and returns its stderr; killed after `timeout`.
fn run_command_bounded(mut cmd: Command, timeout: Duration) -> String {
    let Ok(mut child) = cmd.spawn() else { return String::new() };
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    while matches!(child.try_wait(), Ok(None)) {
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    reader.join().unwrap_or_default()
}

/// Runs (or resumes) the experiment; returns the process exit status:
/// 0 every run ok (TPC-H queries stopped at their own timeout included:
/// censored, as `tpch power` counts them), 2 some runs failed or timed out,
/// 130 interrupted.
pub fn run(spec: &Spec, o: &RunOptions) -> anyhow::Result<Exit> {
    let resolved = Resolved::of(spec, o)?;
    // Before the experiment's row is written: from here an interruption
    // ends the lab as `interrupted` (resumable), never half-way in setup.
    // SAFETY: the handlers only store into atomics, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let experiment = open_experiment(&resolved.store, spec, o, &resolved.base)?;
    let (mut lab, _workdir_lock) = Lab::open(spec, o, resolved, experiment)?;
    let planned = plan::runs(spec);
    if let Some(m) = &lab.neighbours.metrics {
        m.planned(planned.len());
    }
    let outcome = lab.run_all(&planned);
    if let Some(m) = &lab.neighbours.metrics {
        m.finished();
    }
    // Whatever ended the loop, no server is left running.
    lab.stop_server();
    if !lab.exp.rundir.starts_with(&lab.exp.workdir) {
        // A temporary one under /tmp: its logs are stored (`server_log` events).
        remove_stale_rundir(&lab.exp.workdir);
    }
    epilogue(&lab, outcome, o)
}

/// What `lab run` settles before it writes anything to the store: the
/// spec's servers and options checked, the metrics address bound, the host
/// lock taken, the work directory made private, the store opened.
struct Resolved {
    metrics_listener: Option<std::net::TcpListener>,
    /// The host lock and the labs already holding it beside this one
    /// (None when no lock could be taken).
    host_lock: Option<(HostLock, Vec<hostlock::Holder>)>,
    /// Opened; its `location()` names it with any URL password hidden.
    store: Store,
    /// The lab's work directory (experiments' directories, reports).
    base: PathBuf,
}

impl Resolved {
    fn of(spec: &Spec, o: &RunOptions) -> anyhow::Result<Resolved> {
        preflight(spec)?;
        // Bound first: a bad address stops the lab before anything starts.
        let metrics_listener = o.metrics_listen.as_deref().map(crate::metrics::bind).transpose().map_err(text_error)?;
        // One measuring lab per host, taken before anything is stored or started.
        let host_lock = match hostlock::acquire(o.allow_concurrent)? {
            Acquired::Held(lock, beside) => Some((lock, beside)),
            Acquired::Unavailable(why) => {
                eprintln!("warning: no host-wide lab lock ({why}): a lab run beside this one would not be noticed");
                None
            }
        };
        let (store_path, base) = default_paths(spec, o);
        // Private before anything is written in it (the store may be in it):
        // nobody else may plant anything where the lab writes.
        crate::safe_fs::private_dir_all(&base, crate::safe_fs::lab_dir_mode(), "the lab's work directory")
            .map_err(text_error)?;
        let store = Store::open(&store_path.to_string_lossy())?;
        Ok(Resolved { metrics_listener, host_lock, store, base })
    }
}

/// The experiment's row: the unfinished one resumed (`--resume`, same spec
/// text), or a new one (earlier unfinished ones abandoned: what they left
/// goes). Passwords in the spec (DSNs, password options) never reach the store.
fn open_experiment(store: &Store, spec: &Spec, o: &RunOptions, base: &Path) -> anyhow::Result<i64> {
    let store_path = store.location();
    let stored_text = crate::secret::redact(&spec.text);
    let hash = spec_hash(&stored_text);
    Ok(match store.latest_experiment(&spec.name)? {
        Some(e) if e.status != "finished" && !o.new => {
            if !o.resume {
                bail!(
                    "experiment '{}' in {store_path} did not finish (status {}); continue it with --resume or start over with --new",
                    spec.name,
                    e.status
                );
            }
            if e.spec_hash != hash {
                bail!(
                    "experiment '{}' was started from a different version of {}; --resume needs the same spec (or start over with --new)",
                    spec.name,
                    spec.path.display()
                );
            }
            eprintln!("resuming experiment '{}' (id {}) in {store_path}", spec.name, e.id);
            e.id
        }
        Some(e) if o.resume && e.status == "finished" => {
            bail!(
                "experiment '{}' (id {}) already finished; nothing to resume (run without --resume for a new one)",
                spec.name,
                e.id
            );
        }
        None if o.resume => bail!("no experiment '{}' in {store_path} to resume", spec.name),
        _ => {
            // What an earlier unfinished experiment left (an orphaned server,
            // its data) goes; it can no longer be resumed.
            for id in store.unfinished_experiments(&spec.name)? {
                abandon(store, spec, base, id)?;
            }
            let host = serde_json::to_value(crate::lab::sysinfo::host_info()).unwrap_or_default();
            let git = host.get("git_revision").and_then(|v| v.as_str()).map(str::to_string);
            let settings = json!({
                "repeats": spec.repeats,
                // Timed workloads only: a TPC-H query runs as long as it takes.
                "warmup_s": spec.has_timed_workloads().then_some(spec.warmup_s), "time_s": spec.has_timed_workloads().then_some(spec.time_s),
                "order": format!("{:?}", spec.order).to_lowercase(), "seed": spec.seed,
                "drop_caches": spec.drop_caches, "sample_interval_s": spec.sample_interval_s,
                "run_timeout_s": spec.run_timeout.as_secs(),
            });
            store.create_experiment(
                &spec.name,
                &spec.description,
                &spec.path.display().to_string(),
                &stored_text,
                &hash,
                git.as_deref(),
                &host,
                &settings,
            )?
        }
    })
}

/// After the runs: the experiment's status, its directories removed (unless
/// --keep-data), the summary and report, and the exit status: 0 every run
/// ok, 2 some failed or timed out, 130 interrupted.
fn epilogue(lab: &Lab, outcome: anyhow::Result<()>, o: &RunOptions) -> anyhow::Result<Exit> {
    let (spec, experiment) = (lab.exp.spec, lab.exp.id);
    let store_path = lab.store.location();
    if let Err(e) = outcome {
        // The store may be what failed (a full disk): best effort.
        let _ = lab.store.set_experiment_status(experiment, "interrupted");
        // The store's own failures say what to fix; the run in flight is
        // not stored (its transaction rolled back), so a resume repeats it.
        let fix = match StoreErrorKind::of(&e) {
            StoreErrorKind::Full => "free space on the disk that holds the results store, then",
            StoreErrorKind::Busy => "let the other process that holds the results store finish, then",
            StoreErrorKind::Unreachable => "once the results store's server is reachable again,",
            StoreErrorKind::Denied => "once this user may write the results store,",
            _ => "after fixing the cause",
        };
        bail!(
            "{e:#}\nthe lab stopped; completed runs are stored; {fix} continue with: dbbench lab run --resume {}",
            spec.path.display()
        );
    }
    if interrupted() {
        lab.store.set_experiment_status(experiment, "interrupted")?;
        eprintln!(
            "interrupted: completed runs are stored in {store_path}; continue with: dbbench lab run --resume {}",
            spec.path.display()
        );
        return Ok(Exit::Interrupted);
    }
    lab.store.set_experiment_status(experiment, "finished")?;
    if !o.keep_data {
        let _ = std::fs::remove_dir_all(&lab.exp.rundir);
        if let Err(e) = std::fs::remove_dir_all(&lab.exp.workdir) {
            eprintln!("warning: could not remove {}: {e}; delete it by hand", lab.exp.workdir.display());
        }
    }
    // The runs are stored: a report that cannot be made (disk full, a
    // directory not writable) is a warning, not the lab's failure.
    // The lab's own directory, private as the lab's (the report's writer
    // would make a missing one 0755, for paths the user names).
    let reports = &lab.exp.reports;
    let made = crate::safe_fs::private_dir(reports, crate::safe_fs::lab_dir_mode(), "the lab's reports directory");
    let html = reports.join(format!("{}-{experiment}.html", spec.name));
    let figures = made
        .map_err(anyhow::Error::msg)
        .and_then(|_| crate::report::lab_summary(&lab.store, experiment, Some(&html)))
        .unwrap_or_else(|e| {
            eprintln!(
                "warning: the report could not be made ({e:#}); the runs are stored: dbbench report {}",
                spec.path.display()
            );
            String::new()
        });
    crate::term::print_out(&format!(
        "\n{figures}{}results: {store_path} (experiment id {experiment})\n",
        crate::lab::summary::overhead(&lab.store, experiment, spec)?,
    ));
    // Flagged runs are counted (the report marks them): the warning says which and what to do.
    match crate::report::flag_warning(&lab.store, experiment) {
        Ok(Some(w)) => eprint!("{w}"),
        Ok(None) => {}
        Err(e) => eprintln!("warning: the runs' validity flags could not be computed: {e:#}"),
    }
    // Runs stored by an earlier process of the experiment count too. A
    // TPC-H query stopped at its own timeout is a measured outcome (shown as
    // >T), as `tpch power` counts it: not a failure of the lab.
    let censored = lab.store.runs_censored(experiment)?;
    if censored > 0 {
        eprintln!(
            "{censored} TPC-H query run(s) reached their timeout and were stopped on the server (shown as >T; stored with status timeout)"
        );
    }
    let not_ok = lab.store.runs_not_ok(experiment)? - censored;
    if not_ok > 0 {
        eprintln!("{not_ok} run(s) failed or timed out (listed above); their errors and log excerpts are in the store (runs.error, runs.log_excerpt)");
        return Ok(Exit::Partial);
    }
    Ok(Exit::Ok)
}

/// Stops what a killed earlier lab left running in `workdir` (servers and
/// initialisation programs, found by their data directory, whether or not
/// it got to record them); refuses to go on when one will not stop, since
/// every run would then fail on its socket.
fn stop_leftovers(workdir: &Path) -> anyhow::Result<()> {
    if server::processes_under(workdir).is_empty() {
        return Ok(());
    }
    match server::stop_processes_under(workdir, Duration::from_secs(60)) {
        Ok(stopped) => {
            for s in stopped {
                eprintln!("stopped a server an interrupted lab run left running: {s}");
            }
            Ok(())
        }
        Err(e) => Err(anyhow!(
            "an interrupted lab run left servers running in {}: {e:#}; stop them and run again",
            workdir.display()
        )),
    }
}

/// Gives up an unfinished experiment that a new one replaces: refused while
/// a lab still runs it (its work directory is locked); otherwise what it
/// left running is stopped, its work directory removed, and it is marked
/// `abandoned`, so that it is never resumed.
fn abandon(store: &Store, spec: &Spec, base: &Path, id: i64) -> anyhow::Result<()> {
    let workdir = base.join(format!("{}-{id}", spec.name));
    if let Ok(workdir) = std::fs::canonicalize(&workdir) {
        let _lock = lock(&workdir)
            .map_err(|_| {
                format!(
                    "experiment '{}' (id {id}) is still being run by another lab process ({} is locked); stop it first",
                    spec.name,
                    workdir.display()
                )
            })
            .map_err(text_error)?;
        stop_leftovers(&workdir)?;
        remove_stale_rundir(&workdir);
        if let Err(e) = std::fs::remove_dir_all(&workdir) {
            eprintln!("warning: could not remove {}: {e}; delete it by hand", workdir.display());
        }
    }
    store.set_experiment_status(id, "abandoned")?;
    eprintln!("experiment '{}' (id {id}) did not finish; it is abandoned for a new one", spec.name);
    Ok(())
}

/// Short stable hash of the spec text (FNV-1a), to refuse resuming with an edited spec.
fn spec_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// Where the managed servers' sockets and logs live (one subdirectory per
/// configuration, private to its server's OS user): `<workdir>/run` when
/// the longest socket path fits in a unix socket address (108 bytes), else
/// a fresh directory `/tmp/dbbench-<12 random characters>` made by one
/// `mkdir` (never one that existed: a predictable /tmp name lets another
/// user create it first and plant symlinks). Its path is noted in the work
/// directory, so a later `--resume` removes it when this process was killed.
fn run_dir(workdir: &Path, configurations: usize) -> anyhow::Result<PathBuf> {
    let mode = crate::safe_fs::lab_dir_mode();
    let abs = std::fs::canonicalize(workdir).with_context(|| workdir.display().to_string())?;
    let local = abs.join("run");
    if server::run_dir_fits(&local.join(configurations.to_string())) {
        return crate::safe_fs::private_dir(&local, mode, "run directory").map_err(text_error);
    }
    let dir = crate::safe_fs::unique_dir(Path::new("/tmp"), "dbbench-", mode).map_err(text_error)?;
    crate::safe_fs::write_atomic(&workdir.join("rundir"), dir.display().to_string().as_bytes(), 0o600)
        .map_err(text_error)?;
    Ok(dir)
}

/// Removes the temporary run directory a killed lab process noted in the
/// work directory, if it is still ours.
fn remove_stale_rundir(workdir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let note = workdir.join("rundir");
    let Ok(mut f) = crate::safe_fs::open_read(&note) else { return };
    let mut text = String::new();
    let _ = f.read_to_string(&mut text);
    let dir = PathBuf::from(text.trim());
    let ours = dir.parent() == Some(Path::new("/tmp"))
        && dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with("dbbench-"))
        && std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir() && m.uid() == crate::safe_fs::euid());
    if ours {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let _ = std::fs::remove_file(note);
}

/// The benchmark account's TCP password of this experiment's managed
/// servers (docs/security.md): random, made once and kept in the private
/// work directory (0600), so a resumed lab reaches servers initialised
/// before; never in an argv or the store.
fn server_password(workdir: &Path) -> anyhow::Result<crate::secret::Secret> {
    let path = workdir.join("server-password");
    match crate::safe_fs::open_read(&path) {
        Ok(mut f) => {
            let mut text = String::new();
            f.read_to_string(&mut text).with_context(|| path.display().to_string())?;
            Ok(crate::secret::Secret::new(text.trim().to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let p = crate::secret::random_password().map_err(text_error)?;
            let mut f = crate::safe_fs::create_new(&path, 0o600).map_err(text_error)?;
            f.write_all(p.expose().as_bytes()).with_context(|| path.display().to_string())?;
            Ok(p)
        }
        Err(e) => Err(anyhow!("{}: {e}", path.display())),
    }
}

/// An exclusive lock on the work directory: two labs on one directory would
/// wreck each other's servers.
fn lock(workdir: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::io::AsRawFd;
    let path = workdir.join("lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&path)
        .with_context(|| path.display().to_string())?;
    // SAFETY: `f` is an open file whose descriptor outlives the call.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        bail!("{} is in use by another dbbench lab run; wait for it or use another --workdir", workdir.display());
    }
    Ok(f)
}

/// The managed server (or, for other targets, the data) the runs now
/// work on, and what has happened to that data since it was made.
struct RunningServer {
    configuration: usize,
    /// The workload whose data is in the live directory (None: not known).
    workload: Option<usize>,
    datadir: PathBuf,
    server: Option<ManagedServer>,
    /// A writing workload ran since the data was restored/prepared.
    dirty: bool,
    /// The workload options the server was started with on top of the
    /// configuration's (`Workload::server_options`).
    server_options: Vec<String>,
}

/// One experiment's runs being executed, in four parts that change at
/// different paces: what the experiment is (fixed while it runs), the
/// store, the server's lifecycle, and what else is on the host.
struct Lab<'a> {
    exp: Experiment<'a>,
    store: Store,
    server: ServerLifecycle,
    neighbours: Neighbours,
}

/// What every run of the experiment shares; never changed while they run.
struct Experiment<'a> {
    spec: &'a Spec,
    /// The experiment's row in the store.
    id: i64,
    /// The experiment's private directory (data, snapshots, markers).
    workdir: PathBuf,
    /// The servers' sockets and logs (under `workdir`, or a short path
    /// under /tmp when that one is too long for a socket).
    rundir: PathBuf,
    /// The benchmark account's TCP password on managed servers.
    server_password: crate::secret::Secret,
    /// This dbbench, which runs the test and TPC-H children.
    exe: PathBuf,
    /// The configurations' rows, by index.
    config_ids: Vec<i64>,
    /// Where the experiment's HTML report goes (`<lab dir>/reports`).
    reports: PathBuf,
}

/// The server now running and what the lab learnt starting and preparing.
struct ServerLifecycle {
    running: Option<RunningServer>,
    /// (configuration, workload) whose preparation failed in this process: their runs fail fast.
    prepared_failed: HashMap<(usize, usize), String>,
    /// The page cache could not be dropped, and the user was told once.
    warned_cache: bool,
    /// The product and version the last started server of a configuration
    /// said it is (stored with every run on it).
    product: Option<(usize, crate::lab::product::Product)>,
}

/// What else is on the host: the host lock (None when none could be
/// taken), whose other holders are labs measuring beside this one; those
/// seen so far (pids, recorded once each); the lab's live-metrics endpoint
/// (`--metrics-listen`).
struct Neighbours {
    host_lock: Option<HostLock>,
    beside: Vec<u32>,
    metrics: Option<crate::lab::live::LabMetrics>,
}

/// How a run's child is started, chosen by [`Launch::of`] from the spec.
enum Launch<'a> {
    /// N pods through `dbbench k8s`, merged there.
    Kubernetes(&'a crate::lab::clients::Kubernetes),
    /// N local shard processes (`clients = { shards = N }`), merged here.
    Sharded(u32),
    /// One child.
    Plain,
}

impl<'a> Launch<'a> {
    /// Kubernetes when the run's `clients` say so, else shards when more
    /// than one, else one child.
    fn of(kubernetes: Option<&'a crate::lab::clients::Kubernetes>, shards: u32) -> Launch<'a> {
        match kubernetes {
            Some(k) => Launch::Kubernetes(k),
            None if shards > 1 => Launch::Sharded(shards),
            None => Launch::Plain,
        }
    }

    /// Whether the lab's live-metrics endpoint relays the child's own
    /// figures: only from one child. Shards' figures exist only merged, at
    /// the end (pods on other hosts, or N local endpoints that no one
    /// merges live), so those runs show their labels and the lab's progress.
    fn relays_figures(&self) -> bool {
        matches!(self, Launch::Plain)
    }
}

/// What `ensure_ready` did for a run.
struct Readiness {
    restarted: bool,
    cache: CacheState,
}

impl<'a> Lab<'a> {
    /// The lab of experiment `experiment`: its private work directory
    /// (locked: the returned file holds the lock), what a killed earlier
    /// process left there stopped, the host lock recorded, the
    /// configurations' rows, the servers' run directory.
    fn open(
        spec: &'a Spec,
        o: &RunOptions,
        resolved: Resolved,
        experiment: i64,
    ) -> anyhow::Result<(Lab<'a>, std::fs::File)> {
        let Resolved { metrics_listener, host_lock, store, base } = resolved;
        let workdir = base.join(format!("{}-{experiment}", spec.name));
        crate::safe_fs::private_dir(&workdir, crate::safe_fs::lab_dir_mode(), "the lab's work directory")
            .map_err(text_error)?;
        // Absolute and symlink-free: servers get these paths, and a later lab
        // finds what a killed one left by them, whatever directory it runs from.
        let workdir = std::fs::canonicalize(&workdir)
            .with_context(|| format!("{}: cannot resolve the lab's work directory", workdir.display()))?;
        let workdir_lock = lock(&workdir)?;
        stop_leftovers(&workdir)?;
        let server_password = server_password(&workdir)?;
        if let Some((lock, beside)) = &host_lock {
            let detail = json!({"lock": lock.dir().display().to_string(), "allow_concurrent": o.allow_concurrent});
            let _ = store.event(experiment, None, None, "host_lock", None, &detail);
            if !beside.is_empty() {
                eprintln!(
                    "warning: measuring beside {} other lab run(s) (--allow-concurrent): {}",
                    beside.len(),
                    beside.iter().map(|h| h.to_string()).collect::<Vec<_>>().join("; ")
                );
            }
        }
        if o.allow_concurrent {
            store.set_experiment_setting(experiment, "allow_concurrent", &json!(true))?;
        }
        let mut config_ids = Vec::new();
        for (i, c) in spec.configurations.iter().enumerate() {
            config_ids.push(store.configuration(experiment, i, &c.name, c.target.kind_name(), &c.definition)?);
        }
        remove_stale_rundir(&workdir);
        let rundir = if spec.configurations.iter().any(|c| matches!(c.target, Target::Managed(_))) {
            run_dir(&workdir, spec.configurations.len())?
        } else {
            workdir.join("run")
        };
        let lab = Lab {
            exp: Experiment {
                spec,
                id: experiment,
                workdir,
                rundir,
                server_password,
                exe: std::env::current_exe().context("cannot find the dbbench binary")?,
                config_ids,
                reports: base.join("reports"),
            },
            store,
            server: ServerLifecycle {
                running: None,
                prepared_failed: HashMap::new(),
                warned_cache: false,
                product: None,
            },
            neighbours: Neighbours {
                host_lock: host_lock.map(|(l, _)| l),
                beside: Vec::new(),
                metrics: match metrics_listener {
                    Some(l) => Some(crate::lab::live::LabMetrics::start(l, &spec.name)?),
                    None => None,
                },
            },
        };
        Ok((lab, workdir_lock))
    }
}

impl Lab<'_> {
    /// Runs every planned run not stored yet, in order, until the end or an
    /// interruption (Ctrl-C, SIGTERM); an error (the store) ends it early.
    fn run_all(&mut self, planned: &[PlannedRun]) -> anyhow::Result<()> {
        let spec = self.exp.spec;
        let mut progress = PlanProgress::new(planned.len(), plan::estimate_s(spec, planned));
        for (i, run) in planned.iter().enumerate() {
            if INTERRUPTED.load(Ordering::SeqCst) {
                break;
            }
            let est = plan::estimate_s(spec, &planned[i..i + 1]);
            let cell = self.store.cell(
                self.exp.id,
                self.exp.config_ids[run.configuration],
                &spec.workloads[run.workload].name,
                run.threads,
            )?;
            if self.store.run_exists(cell, run.repeat)? {
                progress.skipped(est);
                if let Some(m) = &self.neighbours.metrics {
                    m.done();
                }
                continue;
            }
            let label = format!(
                "{} / {} / {} thr / repeat {}",
                spec.configurations[run.configuration].name, spec.workloads[run.workload].name, run.threads, run.repeat
            );
            progress.start(&label);
            match self.execute(run, cell)? {
                Some(summary) => {
                    progress.done(&label, &summary, est);
                    if let Some(m) = &self.neighbours.metrics {
                        m.done();
                    }
                }
                None => break, // interrupted: the run in flight is not recorded
            }
        }
        Ok(())
    }

    /// Labs measuring beside this one now (their pids), each new one
    /// recorded in the experiment's settings (`concurrent_labs`, which the
    /// report flags) and warned about once.
    fn check_beside(&mut self) -> anyhow::Result<Vec<u32>> {
        let Some(lock) = &self.neighbours.host_lock else { return Ok(Vec::new()) };
        let others = lock.others();
        let new: Vec<&hostlock::Holder> = others.iter().filter(|h| !self.neighbours.beside.contains(&h.pid)).collect();
        if !new.is_empty() {
            for h in &new {
                eprintln!("warning: another lab run is measuring on this host: {h}");
            }
            self.neighbours.beside.extend(new.iter().map(|h| h.pid));
            let seen: Vec<String> = others.iter().map(|h| h.to_string()).collect();
            let mut all: Vec<String> = self
                .store
                .experiment_info(self.exp.id)?
                .and_then(|e| e.settings.get("concurrent_labs").and_then(|v| serde_json::from_value(v.clone()).ok()))
                .unwrap_or_default();
            for h in seen {
                if !all.contains(&h) {
                    all.push(h);
                }
            }
            self.store.set_experiment_setting(self.exp.id, "concurrent_labs", &json!(all))?;
        }
        Ok(others.iter().map(|h| h.pid).collect())
    }

    fn config_dir(&self, c: usize) -> PathBuf {
        self.exp.workdir.join("data").join(&self.exp.spec.configurations[c].name)
    }

    /// The live data directory of (configuration, workload): one per
    /// configuration under "restore"/"none", one per workload under "once".
    fn datadir(&self, c: usize, w: usize) -> PathBuf {
        match self.exp.spec.configurations[c].prepare {
            PreparePolicy::Once => {
                self.config_dir(c).join(&self.exp.spec.workloads[self.exp.spec.workloads[w].data].name)
            }
            _ => self.config_dir(c).join("live"),
        }
    }

    /// Sockets and logs of configuration `c`'s server (made private to the
    /// server's OS user by `server`).
    fn rundir(&self, c: usize) -> PathBuf {
        self.exp.rundir.join(c.to_string())
    }

    fn snapshot_dir(&self, c: usize, w: usize) -> PathBuf {
        self.exp
            .workdir
            .join("snapshots")
            .join(&self.exp.spec.configurations[c].name)
            .join(&self.exp.spec.workloads[w].name)
    }

    /// Stops the live server and keeps what it logged (start to stop) as a
    /// `server_log` event: the log files live in the lab's run directory, which
    /// goes when the experiment finishes.
    fn stop_server(&mut self) {
        let Some(live) = &mut self.server.running else { return };
        let Some(mut s) = live.server.take() else { return };
        let configuration = self.exp.spec.configurations[live.configuration].name.clone();
        let t = Instant::now();
        let stopped = s.stop();
        let stop_s = t.elapsed().as_secs_f64();
        if let Err(e) = &stopped {
            eprintln!("warning: {e:#}");
        }
        let detail =
            json!({"pid": s.pid(), "log": s.session_log(200), "stop_error": stopped.err().map(|e| format!("{e:#}"))});
        let _ = self.store.event(self.exp.id, Some(&configuration), None, "server_log", Some(stop_s), &detail);
    }

    fn server_spec(&self, c: usize) -> Option<&ServerSpec> {
        match &self.exp.spec.configurations[c].target {
            Target::Managed(s) => Some(s),
            _ => None,
        }
    }

    /// dbbench options reaching configuration `c`'s database.
    fn driver_args(&self, c: usize, datadir: &Path) -> Vec<String> {
        let cfg = &self.exp.spec.configurations[c];
        let mut args = match &cfg.target {
            Target::Managed(_) => self
                .server
                .running
                .as_ref()
                .and_then(|l| l.server.as_ref())
                .map(|s| s.driver_args())
                .unwrap_or_default(),
            Target::External { driver_args, .. } => driver_args.clone(),
            Target::Sqlite { driver_args } => {
                let mut a = driver_args.clone();
                a.push(format!("--sqlite-db={}", datadir.join("dbbench.sqlite").display()));
                a
            }
        };
        args.extend(cfg.options.iter().map(|(k, v)| format!("--{k}={v}")));
        args
    }

    fn hooks(&self, c: usize) -> Hooks {
        self.exp.spec.hooks.chained(&self.exp.spec.configurations[c].hooks)
    }

    fn env(&self, run: Option<&PlannedRun>, c: usize, w: usize, datadir: &Path) -> Vec<(String, String)> {
        let mut env = vec![
            ("DBBENCH_EXPERIMENT".to_string(), self.exp.spec.name.clone()),
            ("DBBENCH_CONFIGURATION".to_string(), self.exp.spec.configurations[c].name.clone()),
            ("DBBENCH_WORKLOAD".to_string(), self.exp.spec.workloads[w].name.clone()),
            ("DBBENCH_DATADIR".to_string(), datadir.display().to_string()),
            ("DBBENCH".to_string(), self.exp.exe.display().to_string()),
        ];
        if let Some(r) = run {
            env.push(("DBBENCH_THREADS".into(), r.threads.to_string()));
            env.push(("DBBENCH_REPEAT".into(), r.repeat.to_string()));
            env.push(("DBBENCH_SEED".into(), self.seed(r).to_string()));
        }
        if let Some(s) = self.server.running.as_ref().and_then(|l| l.server.as_ref()) {
            env.extend(s.env());
            // For TCP connections to 127.0.0.1:$DBBENCH_SERVER_PORT as sbtest;
            // the socket needs none.
            env.push((SERVER_PASSWORD_ENV.to_string(), self.exp.server_password.expose().to_string()));
        }
        // An external server's password, for hooks and commands (dbbench
        // children get it the same way: see `run_child`).
        env.extend(secret_env(&self.driver_args(c, datadir)).1);
        if let WorkloadKind::Test { test, .. } = &self.exp.spec.workloads[w].kind {
            env.push(("LUA_PATH".into(), lua_path_for(test, std::env::var("LUA_PATH").ok().as_deref())));
        }
        env
    }

    fn seed(&self, r: &PlannedRun) -> u64 {
        self.exp.spec.seed + r.repeat as u64 - 1
    }

    /// Runs hook steps in order; the first failure ends them. What a step
    /// printed (rows of SQL statements, a shell command's stdout and
    /// stderr) is kept as a `hook_output` event: the seeds' status dumps
    /// (`SHOW STATUS` after a run, table statistics) are results too.
    fn run_hooks(
        &self,
        steps: &[HookStep],
        c: usize,
        w: usize,
        run: Option<&PlannedRun>,
        datadir: &Path,
        what: &str,
    ) -> anyhow::Result<()> {
        for (i, step) in steps.iter().enumerate() {
            let output = match step {
                HookStep::Sql(q) => {
                    let mut conn =
                        sql::connect(&self.driver_args(c, datadir)).with_context(|| format!("{what} hook"))?;
                    conn.execute_script(q).with_context(|| format!("{what} hook"))?
                }
                HookStep::Shell(cmd) => {
                    let argv = vec!["sh".to_string(), "-c".to_string(), cmd.clone()];
                    let other = self.exp.spec.placement(c, w).other;
                    let r = run_child(
                        &argv,
                        &self.env(run, c, w, datadir),
                        self.exp.spec.run_timeout,
                        None,
                        other.as_ref(),
                    );
                    if r.code != Some(0) {
                        bail!(
                            "{what} hook `{cmd}` {}: {}",
                            if r.timed_out { "timed out".to_string() } else { r.exit() },
                            r.tail(3).replace('\n', " | ")
                        );
                    }
                    format!("{}{}", r.stdout, r.stderr)
                }
            };
            if !output.trim().is_empty() {
                let detail = json!({
                    "hook": what, "step": i + 1,
                    "threads": run.map(|r| r.threads), "repeat": run.map(|r| r.repeat), "seq": run.map(|r| r.seq),
                    "output": truncate_output(&output),
                });
                let _ = self.store.event(
                    self.exp.id,
                    Some(&self.exp.spec.configurations[c].name),
                    Some(&self.exp.spec.workloads[w].name),
                    "hook_output",
                    None,
                    &detail,
                );
            }
        }
        Ok(())
    }

    /// Starts configuration `c`'s server on `datadir` (managed only), runs
    /// `after_start` hooks, records version and variables at first start.
    /// Starts configuration `c`'s server (when dbbench manages it) on
    /// `datadir` with `extra` options after the configuration's own.
    fn start(
        &mut self,
        c: usize,
        w: usize,
        datadir: &Path,
        overhead: &mut Overhead,
        extra: &[String],
    ) -> anyhow::Result<()> {
        if let Some(mut spec) = self.server_spec(c).cloned() {
            let t = Instant::now();
            let rundir = self.rundir(c);
            spec.options.extend(extra.iter().cloned());
            let s = ManagedServer::start(&spec, datadir, &rundir)?;
            overhead.start_s = Some(t.elapsed().as_secs_f64());
            if let Some(l) = &mut self.server.running {
                l.server = Some(s);
                l.server_options = extra.to_vec();
            }
        }
        self.run_hooks(&self.hooks(c).after_start, c, w, None, datadir, "after_start")?;
        // Version and variables, once per configuration per experiment.
        match sql::connect(&self.driver_args(c, datadir)) {
            Ok(mut conn) => {
                self.server.product = Some((c, conn.product()));
                let version = conn.version();
                let vars = conn.variables().unwrap_or_default();
                self.store.set_server_info(self.exp.config_ids[c], &version, &serde_json::Value::Object(vars))?;
            }
            Err(e) => bail!("server started but a connection failed: {e:#}"),
        }
        Ok(())
    }

    /// Makes the live data of (c, w) ready for `run`. Data belongs to the
    /// workload that prepares it (`Workload::data`: the queries of a TPC-H
    /// workload share one load), so `w` becomes that workload for every
    /// data decision below; hooks and runs still see the run's own workload.
    fn ensure_ready(&mut self, run: &PlannedRun, overhead: &mut Overhead) -> anyhow::Result<Readiness> {
        let c = run.configuration;
        let restart_each_run = self.exp.spec.workloads[run.workload].restart_each_run;
        let w = self.exp.spec.workloads[run.workload].data;
        if let Some(e) = self.server.prepared_failed.get(&(c, w)) {
            bail!("{e}");
        }
        let policy = self.exp.spec.configurations[c].prepare;
        let managed = self.server_spec(c).is_some();
        let datadir = self.datadir(c, w);
        let server_up =
            self.server.running.as_ref().is_some_and(|l| l.configuration == c && (!managed || l.server.is_some()));
        let same_data = self
            .server
            .running
            .as_ref()
            .is_some_and(|l| l.configuration == c && l.workload == Some(w) && l.datadir == datadir);
        let dirty = self.server.running.as_ref().is_some_and(|l| l.dirty);
        let external = matches!(self.exp.spec.configurations[c].target, Target::External { .. });

        let server_options = self.exp.spec.workloads[run.workload].server_options_for(c);
        let other_options = managed && self.server.running.as_ref().is_some_and(|l| l.server_options != server_options);
        // The running server holds this data as prepared or restored: no
        // run since has written (runs that cannot write, e.g. TPC-H queries,
        // leave it so). A restart for other reasons then needs no restore:
        // the restart alone is cold (the server starts with its buffer pool
        // dump off, `server::cold_buffer_pool_args`, and caches are dropped
        // if asked).
        let clean_data = server_up && same_data && !dirty;
        let need_restart = restart_each_run
            || other_options
            || match policy {
                PreparePolicy::Restore => !clean_data,
                _ => !(server_up && same_data),
            };
        if !need_restart {
            return Ok(Readiness { restarted: false, cache: CacheState::Warm });
        }
        let t_stop = Instant::now();
        let was_running = self.server.running.as_ref().is_some_and(|l| l.server.is_some());
        self.stop_server();
        if was_running {
            overhead.stop_s = Some(t_stop.elapsed().as_secs_f64());
        }
        self.server.running = Some(RunningServer {
            configuration: c,
            workload: None,
            datadir: datadir.clone(),
            server: None,
            dirty: false,
            server_options: Vec::new(),
        });

        if policy == PreparePolicy::Restore && !clean_data {
            let snap = self.snapshot_dir(c, w);
            if !snap.join(".complete").exists() {
                let t = Instant::now();
                if let Err(e) = self.prepare_snapshot(c, w, &datadir, &snap) {
                    let e = e.context("prepare");
                    self.server.prepared_failed.insert((c, w), format!("{e:#}"));
                    self.stop_server();
                    return Err(e);
                }
                overhead.prepare_s = Some(t.elapsed().as_secs_f64());
            }
            let t = Instant::now();
            let stats = datadir::restore(&snap.join("data"), &datadir).context("restore")?;
            overhead.restore_s = Some(t.elapsed().as_secs_f64());
            overhead.restore = Some(stats);
        } else if !external {
            // Under "once", data whose prepare never finished (a lab killed
            // mid-prepare) is thrown away: a second prepare over half-made
            // tables would fail or, worse, mix two datasets.
            let fresh = policy == PreparePolicy::Once && !self.prepared_marker(c, w).exists();
            if fresh {
                let _ = std::fs::remove_dir_all(&datadir);
                let _ = std::fs::remove_file(sibling(&datadir, "initialized"));
            }
            if managed && !sibling(&datadir, "initialized").exists() {
                let _ = std::fs::remove_dir_all(&datadir);
                self.initialize(c, &datadir, overhead)?;
            } else if managed {
                crate::safe_fs::lab_dir_all(&datadir).with_context(|| datadir.display().to_string())?;
            } else {
                embedded_datadir(&datadir)?;
            }
        }
        let mut cache = self.drop_caches();
        let server_options = self.exp.spec.workloads[run.workload].server_options_for(c).to_vec();
        // Data is prepared under the configuration's own options: a query's
        // server_options apply to its runs, not to the load.
        let unprepared = policy == PreparePolicy::Once && !self.prepared_marker(c, w).exists();
        self.start(c, w, &datadir, overhead, if unprepared { &[] } else { &server_options })?;
        if policy == PreparePolicy::Once {
            let marker = self.prepared_marker(c, w);
            if !self.is_prepared(c, w, &marker)? {
                let t = Instant::now();
                if let Err(e) = self.prepare_data(c, w, &datadir, external) {
                    let e = e.context("prepare");
                    self.server.prepared_failed.insert((c, w), format!("{e:#}"));
                    return Err(e);
                }
                crate::fault_point::test_pause("prepare");
                self.run_hooks(&self.hooks(c).after_prepare, c, w, None, &datadir, "after_prepare")?;
                overhead.prepare_s = Some(t.elapsed().as_secs_f64());
                self.mark_prepared(c, w, &marker, t.elapsed().as_secs_f64())?;
            }
            // The server that loaded the data is warm: a run meant to meet a
            // restarted (and, if asked, cache-dropped) server gets one.
            if unprepared && managed && (restart_each_run || !server_options.is_empty()) {
                self.stop_server();
                cache = self.drop_caches();
                self.start(c, w, &datadir, overhead, &server_options)?;
            }
        }
        if let Some(l) = &mut self.server.running {
            l.workload = Some(w);
        }
        Ok(Readiness { restarted: true, cache })
    }

    /// Markers are files beside a data directory (`<dir>.prepared`), never
    /// inside it: servers own their directories (initdb wants them empty).
    fn prepared_marker(&self, c: usize, w: usize) -> PathBuf {
        sibling(&self.datadir(c, w), "prepared")
    }

    /// Under "once": managed/SQLite data carries a marker file; an external
    /// server's preparation is remembered in the store (per experiment).
    fn is_prepared(&self, c: usize, w: usize, marker: &Path) -> anyhow::Result<bool> {
        if matches!(self.exp.spec.configurations[c].target, Target::External { .. }) {
            return self.store.has_event(
                self.exp.id,
                &self.exp.spec.configurations[c].name,
                &self.exp.spec.workloads[w].name,
                "prepared",
            );
        }
        Ok(marker.exists())
    }

    fn mark_prepared(&self, c: usize, w: usize, marker: &Path, seconds: f64) -> anyhow::Result<()> {
        if !matches!(self.exp.spec.configurations[c].target, Target::External { .. }) {
            std::fs::write(marker, b"").with_context(|| marker.display().to_string())?;
        }
        self.store.event(
            self.exp.id,
            Some(&self.exp.spec.configurations[c].name),
            Some(&self.exp.spec.workloads[w].name),
            "prepared",
            Some(seconds),
            &json!({}),
        )
    }

    fn initialize(&mut self, c: usize, datadir: &Path, overhead: &mut Overhead) -> anyhow::Result<()> {
        let spec = self.server_spec(c).cloned().expect("managed");
        let t = Instant::now();
        if let Some(p) = datadir.parent() {
            crate::safe_fs::lab_dir_all(p).with_context(|| p.display().to_string())?;
        }
        server::initialize(&spec, datadir, &self.rundir(c), &self.exp.server_password)?;
        let marker = sibling(datadir, "initialized");
        std::fs::write(&marker, b"").with_context(|| marker.display().to_string())?;
        overhead.initialize_s = Some(t.elapsed().as_secs_f64());
        self.store.event(
            self.exp.id,
            Some(&self.exp.spec.configurations[c].name),
            None,
            "initialized",
            Some(t.elapsed().as_secs_f64()),
            &json!({}),
        )
    }

    /// Prepare into a fresh data directory, stop, snapshot (restore policy).
    fn prepare_snapshot(&mut self, c: usize, w: usize, datadir: &Path, snap: &Path) -> anyhow::Result<()> {
        let t = Instant::now();
        let _ = std::fs::remove_dir_all(datadir);
        let _ = std::fs::remove_file(sibling(datadir, "initialized"));
        let mut overhead = Overhead::default();
        if self.server_spec(c).is_some() {
            self.initialize(c, datadir, &mut overhead)?;
        } else {
            embedded_datadir(datadir)?;
        }
        self.start(c, w, datadir, &mut overhead, &[])?;
        self.prepare_data(c, w, datadir, false)?;
        crate::fault_point::test_pause("prepare");
        self.run_hooks(&self.hooks(c).after_prepare, c, w, None, datadir, "after_prepare")?;
        let prepare_s = t.elapsed().as_secs_f64();
        self.stop_server();
        let _ = std::fs::remove_dir_all(snap);
        crate::safe_fs::lab_dir_all(snap).with_context(|| snap.display().to_string())?;
        let ts = Instant::now();
        let stats = datadir::snapshot(datadir, &snap.join("data"))?;
        let snapshot_s = ts.elapsed().as_secs_f64();
        std::fs::write(snap.join(".complete"), b"").with_context(|| snap.display().to_string())?;
        let size = datadir::tree_size(datadir).unwrap_or(0);
        self.store.event(
            self.exp.id,
            Some(&self.exp.spec.configurations[c].name),
            Some(&self.exp.spec.workloads[w].name),
            "prepared",
            Some(prepare_s),
            &json!({"snapshot_s": snapshot_s, "snapshot": stats, "datadir_bytes": size, "overhead": overhead}),
        )?;
        Ok(())
    }

    /// Runs the workload's prepare (after a cleanup on external servers,
    /// whose tables may be left from an earlier experiment).
    fn prepare_data(&mut self, c: usize, w: usize, datadir: &Path, external: bool) -> anyhow::Result<()> {
        let env = self.env(None, c, w, datadir);
        let timeout = Duration::from_secs(6 * 3600);
        let other = self.exp.spec.placement(c, w).other;
        match &self.exp.spec.workloads[w].kind {
            WorkloadKind::Test { test, options } => {
                let threads = if matches!(self.exp.spec.configurations[c].target, Target::Sqlite { .. }) {
                    1
                } else {
                    match &other {
                        Some(set) => set.cpus().len(),
                        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
                    }
                };
                let commands: &[&str] = if external { &["cleanup", "prepare"] } else { &["prepare"] };
                for cmd in commands {
                    let mut argv = vec![self.exp.exe.display().to_string(), test.clone(), cmd.to_string()];
                    argv.push(format!("--threads={threads}"));
                    argv.push(format!("--rand-seed={}", self.exp.spec.seed));
                    argv.extend(self.driver_args(c, datadir));
                    argv.extend(options.iter().map(|(k, v)| format!("--{k}={v}")));
                    let r = run_child(&argv, &env, timeout, None, other.as_ref());
                    if r.interrupted {
                        bail!("interrupted");
                    }
                    if r.code != Some(0) {
                        bail!("`{cmd}` {}: {}", r.exit(), r.failure(4));
                    }
                }
            }
            WorkloadKind::Command { prepare: Some(p), .. } => {
                let argv = self.expand(p, None, c, w, datadir);
                let r = run_child(&argv, &env, timeout, None, other.as_ref());
                if r.interrupted {
                    bail!("interrupted");
                }
                if r.code != Some(0) {
                    bail!("prepare_command {}: {}", r.exit(), r.tail(4).replace('\n', " | "));
                }
            }
            WorkloadKind::Command { prepare: None, .. } => {}
            WorkloadKind::Tpch { load, .. } => {
                let mut argv = vec![self.exp.exe.display().to_string(), "tpch".into(), "load".into()];
                argv.extend(load.iter().cloned());
                argv.extend(self.driver_args(c, datadir));
                let r = run_child(&argv, &env, timeout, None, other.as_ref());
                if r.interrupted {
                    bail!("interrupted");
                }
                if r.code != Some(0) {
                    bail!("`tpch load` {}: {}", r.exit(), r.failure(4));
                }
            }
        }
        Ok(())
    }

    fn drop_caches(&mut self) -> CacheState {
        if !self.exp.spec.drop_caches {
            return CacheState::Warm;
        }
        match crate::lab::sysinfo::drop_page_cache() {
            Ok(()) => CacheState::Dropped,
            Err(e) => {
                if !self.server.warned_cache {
                    eprintln!("warning: cannot drop the page cache ({e}); runs are recorded as \"lukewarm\". Run as root to drop it.");
                    let _ = self.store.event(self.exp.id, None, None, "warning", None, &json!({"cache": e}));
                    self.server.warned_cache = true;
                }
                CacheState::Lukewarm
            }
        }
    }

    /// Replaces `{placeholders}` in a command workload's argv.
    fn expand(&self, argv: &[String], run: Option<&PlannedRun>, c: usize, w: usize, datadir: &Path) -> Vec<String> {
        let server = self.server.running.as_ref().and_then(|l| l.server.as_ref());
        let mut vars: Vec<(&str, String)> = vec![
            ("configuration", self.exp.spec.configurations[c].name.clone()),
            ("workload", self.exp.spec.workloads[w].name.clone()),
            ("time", self.exp.spec.time_s.to_string()),
            ("warmup", self.exp.spec.warmup_s.to_string()),
            ("datadir", datadir.display().to_string()),
            ("dbbench", self.exp.exe.display().to_string()),
            ("socket", server.map(|s| s.socket().display().to_string()).unwrap_or_default()),
            ("port", server.map(|s| s.port().to_string()).unwrap_or_default()),
        ];
        if let Some(r) = run {
            vars.push(("threads", r.threads.to_string()));
            vars.push(("repeat", r.repeat.to_string()));
            vars.push(("seed", self.seed(r).to_string()));
        }
        let mut out = Vec::new();
        for a in argv {
            if a == "{driver_args}" {
                // Without the password: it is in the environment (`env`).
                out.extend(secret_env(&self.driver_args(c, datadir)).0);
                continue;
            }
            let mut s = a.clone();
            for (k, v) in &vars {
                s = s.replace(&format!("{{{k}}}"), v);
            }
            out.push(s);
        }
        out
    }

    /// Executes one planned run and stores it. Returns a one-line summary,
    /// or None when interrupted (nothing stored). The phases: ready (server
    /// and data), before-hooks, the measured child with its samplers, the
    /// crash check, what the child meant ([`interpret`]), after-hooks, store.
    fn execute(&mut self, run: &PlannedRun, cell: i64) -> anyhow::Result<Option<String>> {
        let started_at = rfc3339_now();
        let mut overhead = Overhead::default();
        let mut rec =
            RunRecord { cell_id: cell, repeat: run.repeat, seq: run.seq, seed: self.seed(run), ..Default::default() };
        let t_ready = Instant::now();
        let ready = self.ensure_ready(run, &mut overhead);
        overhead.ready_s = Some(t_ready.elapsed().as_secs_f64());
        if interrupted() {
            return Ok(None);
        }
        let (c, w) = (run.configuration, run.workload);
        let ctx = RunContext::of(self.exp.spec, run, self.datadir(c, w), self.hooks(c));
        let readiness = match ready {
            Ok(r) => r,
            Err(e) => return self.store_unready(rec, &format!("{e:#}"), started_at, overhead),
        };
        rec.server_restarted = readiness.restarted;
        rec.server = self.server.product.as_ref().filter(|p| p.0 == ctx.c).map(|p| p.1.clone());
        rec.cache = readiness.cache;
        let t_hooks = Instant::now();
        let mut error = self.before_hooks(&ctx)?;
        overhead.before_run_s = Some(t_hooks.elapsed().as_secs_f64());
        let log_pos = self.live_server().map(|s| s.log_position()).unwrap_or(0);
        let mut child: Option<ChildResult> = None;
        let mut argv: Vec<String> = Vec::new();
        if error.is_none() {
            argv = self.child_argv(&ctx, rec.seed);
            let r = self.measure(&ctx, &mut argv, &mut rec, &mut overhead)?;
            if r.interrupted {
                return Ok(None);
            }
            child = Some(r);
        }
        if ctx.workload.writes {
            if let Some(l) = self.server.running.as_mut().filter(|l| l.configuration == ctx.c) {
                l.dirty = true;
            }
        }
        // Crash check before anything else touches the server.
        let crashed = self.crashed(&ctx, log_pos, &mut rec);
        if let Some(e) = &crashed {
            error = Some(e.clone());
        }
        let mut summary = String::new();
        let mut timed_out = false;
        if let Some(r) = &child {
            let o = interpret(&ctx.workload.kind, r, ctx.run_timeout, error.take());
            (error, summary, timed_out) = (o.error, o.summary, o.status == RunStatus::Timeout);
            rec.metrics.extend(o.metrics);
            rec.report = o.report;
            rec.output_tail = o.output_tail;
        }
        let t_after = Instant::now();
        if crashed.is_none() {
            if let Some(e) = self.after_hooks(&ctx)? {
                error.get_or_insert(e);
            }
        }
        overhead.after_run_s = Some(t_after.elapsed().as_secs_f64());
        if error.is_some() && rec.log_excerpt.is_none() {
            rec.log_excerpt = self.live_server().map(|s| log_excerpt(s, log_pos));
        }
        rec.status = RunStatus::of(timed_out, error.is_some());
        rec.error = error;
        rec.argv = crate::secret::redact_args(&argv);
        rec.started_at = started_at;
        rec.ended_at = rfc3339_now();
        rec.overhead = overhead;
        if interrupted() {
            // Whatever failed since (a hook, the child) may have failed
            // because of the interruption: the run is not a result; a resume
            // runs it again.
            return Ok(None);
        }
        self.store.insert_run(&rec)?;
        if child.as_ref().is_some_and(|r| r.timed_out) {
            // Killing the child does not stop its statement on the server: a
            // restart does, so the next run does not share the server with it.
            self.stop_server();
        }
        Ok(Some(match &rec.error {
            None => format!("ok: {summary}"),
            Some(e) => format!("{}: {e}", rec.status.as_str()),
        }))
    }

    /// The managed server now running, if any.
    fn live_server(&self) -> Option<&ManagedServer> {
        self.server.running.as_ref().and_then(|l| l.server.as_ref())
    }

    /// Stores a run whose server or data could not be made ready: failed,
    /// with the server log's excerpt; the server is stopped, so the next
    /// run starts afresh.
    fn store_unready(
        &mut self,
        mut rec: RunRecord,
        error: &str,
        started_at: String,
        overhead: Overhead,
    ) -> anyhow::Result<Option<String>> {
        let excerpt = self.live_server().map(|s| log_excerpt(s, 0));
        self.stop_server();
        self.server.running = None;
        rec.status = RunStatus::Failed;
        rec.error = Some(error.to_string());
        rec.log_excerpt = excerpt.filter(|s| !s.is_empty());
        rec.started_at = started_at;
        rec.ended_at = rfc3339_now();
        rec.cache = CacheState::Warm;
        rec.overhead = overhead;
        if interrupted() {
            return Ok(None);
        }
        self.store.insert_run(&rec)?;
        Ok(Some(format!("failed: {error}")))
    }

    /// The test's own `before_test` hooks, once (an event marks them done,
    /// so a resumed lab does not repeat them; when they fail, this run fails
    /// and the next run of the test tries them again), then `before_run`.
    /// Returns the hooks' error, which fails the run; Err is the store's.
    fn before_hooks(&self, ctx: &RunContext) -> anyhow::Result<Option<String>> {
        let (c, w, run, datadir) = (ctx.c, ctx.w, ctx.run, &ctx.datadir);
        let (cname, wname) = (ctx.configuration, ctx.workload.name.as_str());
        if !ctx.hooks.before_test.is_empty() && !self.store.has_event(self.exp.id, cname, wname, "before_test")? {
            let t = Instant::now();
            if let Err(e) = self.run_hooks(&ctx.hooks.before_test, c, w, None, datadir, "before_test") {
                return Ok(Some(format!("{e:#}")));
            }
            let seconds = Some(t.elapsed().as_secs_f64());
            self.store.event(self.exp.id, Some(cname), Some(wname), "before_test", seconds, &json!({}))?;
        }
        Ok(self
            .run_hooks(&ctx.hooks.before_run, c, w, Some(run), datadir, "before_run")
            .err()
            .map(|e| format!("{e:#}")))
    }

    /// `after_run` hooks (their failure fails the run: returned), then on
    /// the test's last run its `after_test` hooks, whose failure is a
    /// warning kept with the test's events: the run's figures stand.
    fn after_hooks(&self, ctx: &RunContext) -> anyhow::Result<Option<String>> {
        let (c, w, run, datadir) = (ctx.c, ctx.w, ctx.run, &ctx.datadir);
        let error = self.run_hooks(&ctx.hooks.after_run, c, w, Some(run), datadir, "after_run").err();
        if run.last_of_test && !ctx.hooks.after_test.is_empty() {
            let t = Instant::now();
            let outcome =
                self.run_hooks(&ctx.hooks.after_test, c, w, None, datadir, "after_test").map_err(|e| format!("{e:#}"));
            if let Err(e) = &outcome {
                eprintln!("warning: {}", crate::secret::redact(e));
            }
            let detail = json!({"error": outcome.err()});
            let seconds = Some(t.elapsed().as_secs_f64());
            let wname = Some(ctx.workload.name.as_str());
            self.store.event(self.exp.id, Some(ctx.configuration), wname, "after_test", seconds, &detail)?;
        }
        Ok(error.map(|e| format!("{e:#}")))
    }

    /// The run's child command line, as stored (passwords are redacted at
    /// the store; the launch may add to it).
    fn child_argv(&self, ctx: &RunContext, seed: u64) -> Vec<String> {
        let (spec, exe) = (self.exp.spec, self.exp.exe.display().to_string());
        match &ctx.workload.kind {
            WorkloadKind::Test { test, options } => {
                let mut a = vec![exe, test.clone(), "run".to_string()];
                a.push(format!("--threads={}", ctx.run.threads));
                a.push(format!("--time={}", spec.time_s));
                a.push(format!("--warmup-time={}", spec.warmup_s));
                a.push(format!("--rand-seed={seed}"));
                a.push(format!("--report-interval={}", spec.sample_interval_s));
                a.push("--percentile=50,95,99,99.9".to_string());
                a.push("--format=json".to_string());
                a.extend(self.driver_args(ctx.c, &ctx.datadir));
                a.extend(options.iter().map(|(k, v)| format!("--{k}={v}")));
                a
            }
            WorkloadKind::Command { command, .. } => self.expand(command, Some(ctx.run), ctx.c, ctx.w, &ctx.datadir),
            WorkloadKind::Tpch { query, options, .. } => {
                let mut a = vec![exe, "tpch".into(), "query".into(), query.clone()];
                a.extend(options.iter().cloned());
                // Repeat r draws repeat r's parameters on every configuration (paired answers).
                if !options.iter().any(|o| o == "--validation") {
                    a.push(format!("--seed={seed}"));
                }
                a.push("--format=json".to_string());
                a.extend(self.driver_args(ctx.c, &ctx.datadir));
                a
            }
        }
    }

    /// The measured part: samplers on, the lab's endpoint told, the child
    /// launched as [`Launch::of`] chooses, samplers off. Fills what the
    /// launch and the samplers saw into `rec` and `overhead`; `argv` gains
    /// what the launch added (`--shard=I/N`, or `dbbench k8s`'s line).
    fn measure(
        &mut self,
        ctx: &RunContext,
        argv: &mut Vec<String>,
        rec: &mut RunRecord,
        overhead: &mut Overhead,
    ) -> anyhow::Result<ChildResult> {
        let (c, w, run) = (ctx.c, ctx.w, ctx.run);
        let env = self.env(Some(run), c, w, &ctx.datadir);
        let kubernetes = self.exp.spec.kubernetes(c, w).cloned();
        let pids = WatchedPids {
            client: Default::default(),
            shard_clients: Default::default(),
            server: self.live_server().map(|s| s.pid()),
            clients_elsewhere: kubernetes.is_some(),
        };
        let status_args = (!matches!(self.exp.spec.configurations[c].target, Target::Sqlite { .. }))
            .then(|| self.driver_args(c, &ctx.datadir));
        let samplers = Samplers::start(Duration::from_secs(self.exp.spec.sample_interval_s), &pids, status_args);
        let mut beside = self.check_beside()?;
        let clients = self.exp.spec.placement(c, w).clients;
        // Where the server really runs, as the kernel says (not the spec's text).
        rec.server_cpus = self.live_server().and_then(|s| crate::lab::cpus::allowed_list_of(s.pid()));
        let shards = self.exp.spec.shards(c, w);
        let launch = Launch::of(kubernetes.as_ref(), shards);
        // The lab's endpoint follows every run: labels and progress for
        // all; the child's own figures where one child serves them (a
        // plain test run). The child serves on a loopback port of its
        // choosing and says which in a file here (`crate::lab::live`);
        // the option is the child's alone, not part of the stored argv.
        let relay = (self.neighbours.metrics.is_some()
            && launch.relays_figures()
            && matches!(ctx.workload.kind, WorkloadKind::Test { .. }))
        .then(|| self.exp.workdir.join("metrics-address"));
        if let Some(m) = &self.neighbours.metrics {
            if let Some(file) = &relay {
                let _ = std::fs::remove_file(file);
            }
            m.run_started(ctx.configuration, &ctx.workload.name, run.threads, run.repeat, relay.clone());
        }
        let r = match launch {
            // N pods on Kubernetes through `dbbench k8s`, merged there;
            // the clients' CPU is not measured (WatchedPids::clients_elsewhere).
            Launch::Kubernetes(k) => {
                let (r, rows, skew, k8s_argv) = self.run_kubernetes(argv, &env, shards, k, ctx.run_timeout);
                rec.shards = rows;
                rec.metrics.extend(skew.map(|s| ("start_skew_ms".to_string(), s)));
                *argv = k8s_argv;
                r
            }
            // N shard processes (`clients = { shards = N }`), merged; the
            // OS samples' client CPU is theirs together.
            Launch::Sharded(shards) => {
                let (r, rows, skew) = self.run_sharded(
                    argv,
                    &env,
                    shards,
                    run.threads,
                    ctx.run_timeout,
                    clients.as_ref(),
                    &pids.shard_clients,
                );
                rec.shards = rows;
                rec.metrics.extend(skew.map(|s| ("start_skew_ms".to_string(), s)));
                argv.push(format!("--shard=I/{shards}"));
                r
            }
            Launch::Plain => {
                let (mut child_argv, mut child_env) = (argv.clone(), env.clone());
                if let Some(file) = &relay {
                    child_argv.push("--metrics-listen=127.0.0.1:0".into());
                    child_env.push((crate::metrics::ADDRESS_FILE_ENV.into(), file.display().to_string()));
                }
                run_child_watched(&child_argv, &child_env, ctx.run_timeout, None, clients.as_ref(), Some(&pids.client))
            }
        };
        if let Some(m) = &self.neighbours.metrics {
            m.run_ended();
            if let Some(file) = &relay {
                let _ = std::fs::remove_file(file);
            }
        }
        rec.client_cpus = r.cpus.clone();
        beside.extend(self.check_beside()?);
        if !beside.is_empty() {
            beside.sort_unstable();
            beside.dedup();
            overhead.concurrent_labs = Some(beside);
        }
        samplers.finish(rec);
        Ok(r)
    }

    /// Whether the managed server died during the run: its error (and the
    /// log written since `log_pos` into `rec`), recorded as a `crash` event;
    /// the next run starts a new server.
    fn crashed(&mut self, ctx: &RunContext, log_pos: u64, rec: &mut RunRecord) -> Option<String> {
        let l = self.server.running.as_mut()?;
        let s = l.server.as_mut()?;
        if s.is_alive() {
            return None;
        }
        rec.log_excerpt = Some(log_excerpt(s, log_pos));
        let error = format!("the server (pid {}) died during the run", s.pid());
        l.server = None;
        let detail = json!({"seq": ctx.run.seq});
        let wname = Some(ctx.workload.name.as_str());
        let _ = self.store.event(self.exp.id, Some(ctx.configuration), wname, "crash", None, &detail);
        Some(error)
    }
}

/// What one planned run works with, resolved once from the plan and the
/// spec (the phases of [`Lab::execute`] read it instead of re-deriving
/// each from a (configuration, workload) index pair).
struct RunContext<'s> {
    run: &'s PlannedRun,
    /// Index of the configuration (the store's and the server's key).
    c: usize,
    /// Index of the run's own workload (its data may be another's:
    /// `Workload::data`).
    w: usize,
    configuration: &'s str,
    workload: &'s crate::lab::spec::Workload,
    /// The live data directory the run works on.
    datadir: PathBuf,
    /// The spec's hooks chained with the configuration's.
    hooks: Hooks,
    /// The workload's own `run_timeout`, else the experiment's.
    run_timeout: Duration,
}

impl<'s> RunContext<'s> {
    fn of(spec: &'s Spec, run: &'s PlannedRun, datadir: PathBuf, hooks: Hooks) -> RunContext<'s> {
        let (c, w) = (run.configuration, run.workload);
        let workload = &spec.workloads[w];
        RunContext {
            run,
            c,
            w,
            configuration: &spec.configurations[c].name,
            workload,
            datadir,
            hooks,
            run_timeout: workload.run_timeout.unwrap_or(spec.run_timeout),
        }
    }
}

/// The samplers around one run, started and finished together: the OS
/// always (with the child's and the managed server's CPU), and the server's
/// status counters over a connection of their own (not for SQLite).
struct Samplers {
    os: OsSampler,
    server: Option<PeriodicSampler<serde_json::Value>>,
}

impl Samplers {
    /// Starts them; `status_args` (the driver options of the server to
    /// sample) is None when the server has no status counters to sample.
    fn start(interval: Duration, pids: &WatchedPids, status_args: Option<Vec<String>>) -> Samplers {
        let os = OsSampler::start_watching(interval, Some(pids.clone()));
        let server = status_args.map(|status_args| {
            let mut conn = sql::SamplerConnection(None);
            let mut previous = serde_json::Map::new();
            PeriodicSampler::start(interval, move |_| {
                let now = conn.get(&status_args)?.status().ok()?;
                // Only what changed since the previous sample (the first holds all).
                let changed: serde_json::Map<_, _> = now
                    .iter()
                    .filter(|(k, v)| previous.get(*k) != Some(*v))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                previous = now;
                Some(serde_json::Value::Object(changed))
            })
        });
        Samplers { os, server }
    }

    /// Stops them and keeps their samples in the run's record.
    fn finish(self, rec: &mut RunRecord) {
        rec.os_samples =
            self.os.stop().into_iter().map(|s| (s.time_s, serde_json::to_value(&s).unwrap_or_default())).collect();
        if let Some(s) = self.server {
            rec.server_samples = s.stop();
        }
    }
}

/// Whether SIGINT or SIGTERM asked the lab to stop.
fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

impl Lab<'_> {
    /// Runs `argv` (`dbbench TEST run ...`) as one run of `n` shards on
    /// Kubernetes (`launcher = "kubernetes"`, src/lab/clients.rs): the child
    /// is `dbbench k8s --shards=n [k's options] --timeout=T
    /// --results-dir=WORKDIR/shards --format=json TEST run ...`, its stdout
    /// the merged JSON report; each shard's result is its saved log's
    /// result line. Passwords stay in the environment (`run_child_watched`
    /// moves them out of argv; `dbbench k8s` puts them in a Secret).
    /// Returns the child's outcome, every shard's row, the merged start
    /// skew and the child's argv (what the store keeps).
    fn run_kubernetes(
        &self,
        argv: &[String],
        env: &[(String, String)],
        n: u32,
        k: &super::clients::Kubernetes,
        run_timeout: Duration,
    ) -> (ChildResult, Vec<crate::store::ShardRow>, Option<f64>, Vec<String>) {
        let dir = self.exp.workdir.join("shards");
        let _ = std::fs::remove_dir_all(&dir);
        let timeout_s = k.timeout_s(run_timeout.as_secs());
        let mut a = vec![argv[0].clone(), "k8s".to_string(), format!("--shards={n}")];
        a.extend(k.args());
        a.push(format!("--timeout={timeout_s}"));
        a.push(format!("--results-dir={}", dir.display()));
        a.push("--format=json".to_string());
        a.extend(argv[1..].iter().cloned());
        // No CPU set: the clients are the pods, not this process.
        let bound = Duration::from_secs(k.child_bound_s(run_timeout.as_secs()));
        let mut r = run_child_watched(&a, env, bound, None, None, None);
        r.cpus = None;
        // `dbbench k8s` gave up waiting at its --timeout (the Job's deadline
        // stopped the pods): the run timed out.
        if r.stderr.lines().any(|l| l.starts_with("dbbench k8s: timed out after")) {
            r.timed_out = true;
        }
        let result_of = |i: u32| -> Option<String> {
            let log = std::fs::read_to_string(dir.join(format!("shard-{i}.log"))).ok()?;
            let line = log.lines().find_map(|l| l.strip_prefix(crate::k8s::launch::RESULT_PREFIX))?;
            Some(line.trim().to_string())
        };
        let mut rows: Vec<crate::store::ShardRow> = (0..n)
            .map(|i| crate::store::ShardRow { index: i, summary: json!({"shard": i}), result: result_of(i) })
            .collect();
        // `dbbench k8s: shard I/N: pod P on node X: STATE` for every shard.
        for line in r.stderr.lines() {
            let Some(rest) = line.strip_prefix("dbbench k8s: shard ") else { continue };
            let Some((index, rest)) = rest.split_once('/') else { continue };
            let Some(row) = index.parse::<usize>().ok().and_then(|i| rows.get_mut(i)) else { continue };
            let Some((_, rest)) = rest.split_once(": pod ") else { continue };
            let Some((pod, rest)) = rest.split_once(" on node ") else { continue };
            let Some((node, state)) = rest.split_once(": ") else { continue };
            row.summary["pod"] = json!(pod);
            row.summary["node"] = json!(node);
            if state != "ok" {
                row.summary["status"] = json!(state);
            }
        }
        let doc: Option<serde_json::Value> =
            if r.code == Some(0) { serde_json::from_str(r.stdout.trim()).ok() } else { None };
        for s in doc.as_ref().and_then(|d| d["shards"].as_array()).into_iter().flatten() {
            if let Some(row) = s["shard"].as_u64().and_then(|i| rows.get_mut(i as usize)) {
                let (pod, node) = (row.summary["pod"].clone(), row.summary["node"].clone());
                row.summary = s.clone();
                if !pod.is_null() {
                    row.summary["pod"] = pod;
                    row.summary["node"] = node;
                }
            }
        }
        let skew = doc.as_ref().and_then(|d| d["start_skew_ms"].as_f64());
        if doc.is_some() {
            // The results are in the store now; a failed run's logs stay (until the next run or the lab's end).
            let _ = std::fs::remove_dir_all(&dir);
        }
        (r, rows, skew, a)
    }

    /// Runs `argv` (`dbbench TEST run ...`) as `n` shard processes of one
    /// run on this host (docs/scale-out.md): shard I with `--shard=I/n`,
    /// `--shard-result=WORKDIR/shards/shard-I.json` and a common
    /// `--start-at`, then `dbbench merge --json` on their results. Returns
    /// the merge as the run's child (its stdout the merged JSON report), or
    /// the first failed shard's outcome; every shard's row for the store;
    /// and the merged start skew.
    #[allow(clippy::too_many_arguments)]
    fn run_sharded(
        &self,
        argv: &[String],
        env: &[(String, String)],
        n: u32,
        threads: u32,
        timeout: Duration,
        cpus: Option<&CpuSet>,
        watched: &std::sync::Mutex<Vec<std::sync::Arc<std::sync::atomic::AtomicU32>>>,
    ) -> (ChildResult, Vec<crate::store::ShardRow>, Option<f64>) {
        let failed = |why: String| ChildResult {
            code: Some(1),
            signal: None,
            timed_out: false,
            interrupted: false,
            stdout: String::new(),
            stderr: why,
            cpus: None,
        };
        let dir = self.exp.workdir.join("shards");
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = crate::safe_fs::private_dir(&dir, 0o700, "the shards' result directory") {
            return (failed(e), Vec::new(), None);
        }
        let grace = super::clients::start_grace_ms(threads);
        let start_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64 + grace)
            .unwrap_or(0);
        let files: Vec<PathBuf> = (0..n).map(|i| dir.join(format!("shard-{i}.json"))).collect();
        // Each shard's pid, for the OS sampler (the client's CPU is theirs together).
        let pids: Vec<std::sync::Arc<std::sync::atomic::AtomicU32>> = (0..n).map(|_| Default::default()).collect();
        if let Ok(mut w) = watched.lock() {
            *w = pids.clone();
        }
        let outcomes: Vec<ChildResult> = std::thread::scope(|scope| {
            let handles: Vec<_> = files
                .iter()
                .enumerate()
                .map(|(i, file)| {
                    let mut a = argv.to_vec();
                    a.push(format!("--shard={i}/{n}"));
                    a.push(format!("--shard-result={}", file.display()));
                    a.push(format!("--start-at={start_at}"));
                    let bound = timeout + Duration::from_millis(grace);
                    let pid = &pids[i];
                    scope.spawn(move || run_child_watched(&a, env, bound, None, cpus, Some(pid)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| failed("a shard's thread panicked".into())))
                .collect()
        });
        let mut rows: Vec<crate::store::ShardRow> = files
            .iter()
            .enumerate()
            .map(|(i, f)| crate::store::ShardRow {
                index: i as u32,
                summary: json!({"shard": i}),
                result: std::fs::read_to_string(f).ok(),
            })
            .collect();
        let bad: Vec<(usize, &ChildResult)> =
            outcomes.iter().enumerate().filter(|(_, r)| r.code != Some(0) || r.timed_out || r.interrupted).collect();
        if let Some((_, first)) = bad.first() {
            for (i, r) in &bad {
                rows[*i].summary["status"] = json!(format!("{}: {}", r.exit(), r.failure(3)));
            }
            let why: Vec<String> =
                bad.iter().map(|(i, r)| format!("shard {i}/{n} {}: {}", r.exit(), r.failure(3))).collect();
            let r = ChildResult {
                code: first.code,
                signal: first.signal,
                timed_out: outcomes.iter().any(|r| r.timed_out),
                interrupted: outcomes.iter().any(|r| r.interrupted),
                stdout: String::new(),
                stderr: why.join("\n"),
                cpus: outcomes[0].cpus.clone(),
            };
            return (r, rows, None);
        }
        let mut m = vec![self.exp.exe.display().to_string(), "merge".to_string()];
        m.extend(files.iter().map(|f| f.display().to_string()));
        m.push("--json".to_string());
        let mut merged = run_child(&m, &[], Duration::from_secs(600), None, None);
        merged.cpus = outcomes[0].cpus.clone();
        let doc: Option<serde_json::Value> = serde_json::from_str(merged.stdout.trim()).ok();
        for s in doc.as_ref().and_then(|d| d["shards"].as_array()).into_iter().flatten() {
            if let Some(row) = s["shard"].as_u64().and_then(|i| rows.get_mut(i as usize)) {
                row.summary = s.clone();
            }
        }
        let skew = doc.as_ref().and_then(|d| d["start_skew_ms"].as_f64());
        let _ = std::fs::remove_dir_all(&dir);
        (merged, rows, skew)
    }
}

/// `<dir>.<what>`: a marker file beside directory `dir`.
fn sibling(dir: &Path, what: &str) -> PathBuf {
    let mut s = dir.as_os_str().to_owned();
    s.push(format!(".{what}"));
    PathBuf::from(s)
}

/// Hook output as stored: at most 256 KiB (the first part, cut at a
/// character boundary, with a note), so a hook that dumps a huge table does
/// not bloat every event.
fn truncate_output(s: &str) -> String {
    const LIMIT: usize = 256 * 1024;
    if s.len() <= LIMIT {
        return s.to_string();
    }
    let mut end = LIMIT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes not kept]\n", &s[..end], s.len() - end)
}

/// The server log written since `pos`; when that is empty (a SIGKILL
/// leaves no last words) the log's last lines instead, saying so.
fn log_excerpt(s: &ManagedServer, pos: u64) -> String {
    let since = s.log_excerpt(pos, 40);
    if !since.trim().is_empty() {
        return since;
    }
    format!(
        "(nothing was written to {} during the run; its last lines before:)\n{}",
        s.error_log().display(),
        s.log_excerpt(0, 20)
    )
}

/// Splits the password options (`--mysql-password=...`, `--pgsql-password=...`,
/// from a DSN, `password_env` or a spec's options) out of a child's
/// arguments into the environment variables that carry them: dbbench's
/// own (`DBBENCH_MYSQL_PASSWORD`, `DBBENCH_PGSQL_PASSWORD`) and the client
/// libraries' (`MYSQL_PWD`, `PGPASSWORD`), for commands and hooks. An argv
/// is readable by every local user (`ps`, /proc/PID/cmdline); the
/// environment only by the process's owner and root.
fn secret_env(args: &[String]) -> (Vec<String>, Vec<(String, String)>) {
    use crate::secret::{MYSQL_NATIVE_ENV, MYSQL_PASSWORD_ENV, PGSQL_NATIVE_ENV, PGSQL_PASSWORD_ENV};
    let mut rest = Vec::with_capacity(args.len());
    let mut env: Vec<(String, String)> = Vec::new();
    for a in args {
        let option = a.strip_prefix("--").and_then(|o| o.split_once('=')).map(|(k, v)| (k.replace('_', "-"), v));
        let vars = match option.as_ref().map(|(k, _)| k.as_str()) {
            Some("mysql-password") => [MYSQL_PASSWORD_ENV, MYSQL_NATIVE_ENV],
            Some("pgsql-password") => [PGSQL_PASSWORD_ENV, PGSQL_NATIVE_ENV],
            _ => {
                rest.push(a.clone());
                continue;
            }
        };
        let value = option.map(|(_, v)| v.to_string()).unwrap_or_default();
        for var in vars {
            // Later options win, as on a command line.
            env.retain(|(k, _)| k != var);
            env.push((var.to_string(), value.clone()));
        }
    }
    (rest, env)
}

/// `LUA_PATH` for a test workload's runs. The command line searches modules
/// as sysbench does, from the current directory; a lab runs from wherever
/// it was started, so it puts first what the spec means: a script's own
/// directory (its modules win over the built-ins, as when run from there),
/// or for a built-in test the built-ins (a file of that name in the lab's
/// directory does not replace it). The rest is the user's `LUA_PATH`, or
/// the default (`;;`).
fn lua_path_for(test: &str, user: Option<&str>) -> String {
    let first = if test.contains('/') || test.ends_with(".lua") {
        let dir = Path::new(test).parent().map(|d| d.display().to_string()).filter(|d| !d.is_empty());
        let dir = dir.unwrap_or_else(|| ".".into());
        format!("{dir}/?.lua;{dir}/?/init.lua")
    } else {
        crate::script::BUILTIN_PATH_ENTRY.to_string()
    };
    format!("{first};{}", user.unwrap_or(";"))
}

/// Runs `argv` with extra environment, capturing output, killing it after
/// `timeout`. The child dies with us (PR_SET_PDEATHSIG), so a killed lab
/// leaves no load generator behind. A dbbench child's password options
/// never reach its argv (`secret_env`; a command's `{driver_args}` are
/// filtered by `expand`), and no password variable of the lab's own
/// environment reaches any child: only the configuration's (`env`).
///
/// With `cpus`, the child runs on those CPUs (docs/lab.md#pinning); what
/// the kernel allows it is read back at its start (`ChildResult::cpus`).
fn run_child(
    argv: &[String],
    env: &[(String, String)],
    timeout: Duration,
    stdin: Option<&str>,
    cpus: Option<&CpuSet>,
) -> ChildResult {
    run_child_watched(argv, env, timeout, stdin, cpus, None)
}

/// `run_child`, storing the child's pid in `pid` once it is spawned (the OS
/// sampler reads its CPU time).
fn run_child_watched(
    argv: &[String],
    env: &[(String, String)],
    timeout: Duration,
    stdin: Option<&str>,
    cpus: Option<&CpuSet>,
    pid: Option<&std::sync::atomic::AtomicU32>,
) -> ChildResult {
    use std::os::unix::process::CommandExt;
    let ours = std::env::current_exe().is_ok_and(|e| Path::new(&argv[0]) == e);
    let (argv, secrets) = if ours { secret_env(argv) } else { (argv.to_vec(), Vec::new()) };
    let mut cmd = Command::new(&argv[0]);
    for var in crate::secret::PASSWORD_VARS.iter().chain([&SERVER_PASSWORD_ENV]) {
        cmd.env_remove(var);
    }
    cmd.args(&argv[1..])
        .envs(env.iter().chain(&secrets).map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    // Its own process group: a Ctrl-C at the terminal reaches the lab only,
    // which then stops the child itself and knows why it ended.
    cmd.process_group(0);
    // SAFETY: the closure only calls prctl(2), which is async-signal-safe between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    if let Some(set) = cpus {
        set.apply_to(&mut cmd);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return ChildResult {
                code: Some(127),
                signal: None,
                timed_out: false,
                interrupted: false,
                stdout: String::new(),
                stderr: format!("cannot run {}: {e}", argv[0]),
                cpus: None,
            }
        }
    };
    // spawn returns once exec has succeeded, so the affinity set before it
    // is in place; a child that has already exited is a zombie until waited
    // for, and its status is still there.
    let cpus_allowed = crate::lab::cpus::allowed_list_of(child.id());
    if let Some(p) = pid {
        p.store(child.id(), Ordering::SeqCst);
    }
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(text.as_bytes());
    }
    let reader = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = reader(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = reader(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let start = Instant::now();
    let mut timed_out = false;
    let mut interrupted = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        if INTERRUPTED.load(Ordering::SeqCst) && !interrupted {
            interrupted = true;
            kill_group(&mut child);
        }
        if start.elapsed() > timeout && !timed_out {
            timed_out = true;
            kill_group(&mut child);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    use std::os::unix::process::ExitStatusExt;
    ChildResult {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        // Also when it ended by itself meanwhile: it may have ended because
        // of the signal (a child that shares the terminal's SIGINT).
        interrupted: interrupted || INTERRUPTED.load(Ordering::SeqCst),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        cpus: cpus_allowed,
    }
}

/// SIGKILL to a child and the process group it leads (a hook's `sh -c`
/// and what it started).
fn kill_group(child: &mut std::process::Child) {
    // SAFETY: kill(2) on the group our own child leads; no memory is touched.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let _ = child.kill();
}

/// Progress over all runs: a bar with counts and an ETA from the plan's
/// estimate, corrected by how long the finished runs actually took.
struct PlanProgress {
    total: usize,
    done: usize,
    est_total: f64,
    est_done: f64,
    started: Instant,
    measured_est: f64,
    tty: bool,
}

impl PlanProgress {
    fn new(total: usize, est_total: f64) -> PlanProgress {
        PlanProgress {
            total,
            done: 0,
            est_total,
            est_done: 0.0,
            started: Instant::now(),
            measured_est: 0.0,
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn bar(&self) -> String {
        let width = 24;
        let filled = (self.done * width).checked_div(self.total).unwrap_or(width);
        let remaining_est = (self.est_total - self.est_done).max(0.0);
        let elapsed = self.started.elapsed().as_secs_f64();
        // Scale the remaining estimate by measured/estimated for runs done here.
        let factor = if self.measured_est > 0.0 { (elapsed / self.measured_est).clamp(0.5, 5.0) } else { 1.0 };
        format!(
            "[{}{}] {}/{} runs, ETA {}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            self.done,
            self.total,
            plan::human_duration(remaining_est * factor)
        )
    }

    fn skipped(&mut self, est: f64) {
        // Stored by an earlier process: counts as done, adds nothing to the ETA.
        self.done += 1;
        self.est_total -= est;
    }

    fn start(&mut self, label: &str) {
        if self.tty {
            eprint!("\r\x1b[K{} running {label} ...", self.bar());
            let _ = std::io::stderr().flush();
        }
    }

    fn done(&mut self, label: &str, summary: &str, est: f64) {
        self.done += 1;
        self.est_done += est;
        self.measured_est += est;
        if self.tty {
            eprint!("\r\x1b[K");
        }
        eprintln!("{} {label}: {}", self.bar(), crate::secret::redact(summary));
    }
}

/// The data directory of an embedded database (SQLite): 0700, since no
/// server's OS user needs to pass through it and its files (made 0644 by
/// SQLite, copied with their modes into snapshots) may hold a restored
/// dataset nobody else should read.
fn embedded_datadir(datadir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    crate::safe_fs::lab_dir_all(datadir)
        .and_then(|()| std::fs::set_permissions(datadir, std::fs::Permissions::from_mode(0o700)))
        .with_context(|| datadir.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_s_end_reads_without_rust_formatting() {
        let r = |code, signal| ChildResult {
            code,
            signal,
            timed_out: false,
            interrupted: false,
            stdout: String::new(),
            stderr: String::new(),
            cpus: None,
        };
        assert_eq!(r(Some(1), None).exit(), "exited with status 1");
        assert_eq!(r(None, Some(libc::SIGKILL)).exit(), "was killed by signal 9 (SIGKILL)");
        assert_eq!(r(None, None).exit(), "ended in a way that could not be read");
    }
}
