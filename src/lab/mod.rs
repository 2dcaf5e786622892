//! The benchmark lab: `dbbench lab plan|run|summary SPEC` and `dbbench server`.
//!
//! Data flow: `spec` (TOML → validated `Spec`) → `plan` (cells × repeats in
//! run order) → `runner` (servers via `server`, data via `datadir`, hooks and
//! status via `sql`, OS samples via `sampler`, one `dbbench run` child per
//! run) → `store` (results store) → `crate::report` (tables, HTML) and
//! `summary` (the lab's overhead).
//! See ARCHITECTURE.md and docs/lab.md.

pub mod cli;
pub mod datadir;
pub mod hostlock;
pub mod plan;
pub mod product;
pub mod runner;
pub mod sampler;
pub mod server;
pub mod spec;
pub mod sql;
pub mod store;
pub mod summary;
pub mod sysinfo;

/// Current UTC time as RFC 3339 with milliseconds (`2026-11-22T08:15:02.123Z`).
pub fn rfc3339_now() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: `tm` is plain old data, all-zero is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: `secs` and `tm` are valid for the call; gmtime_r is thread-safe.
    unsafe { libc::gmtime_r(&secs, &mut tm) };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis()
    )
}

/// For the fault-injection tests only (tests/faults.rs): with
/// `DBBENCH_TEST_PAUSE=POINT:FILE` in the environment, the lab stops at
/// `point`, creates FILE (holding its pid) and waits until FILE is removed
/// (at most 120 s), so that a test can kill it or fill a disk at exactly
/// that point. Points: `initialize` (the initialising server is up),
/// `prepare` (data loaded, not yet snapshotted), `store` (a run's rows
/// written, not committed). Costs one environment lookup otherwise.
pub fn test_pause(point: &str) {
    let Some(v) = std::env::var_os("DBBENCH_TEST_PAUSE") else { return };
    let v = v.to_string_lossy();
    let Some((p, file)) = v.split_once(':') else { return };
    if p != point {
        return;
    }
    let file = std::path::Path::new(file);
    if std::fs::write(file, std::process::id().to_string()).is_err() {
        return;
    }
    let t = std::time::Instant::now();
    while file.exists() && t.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
