//! Pause points for the fault-injection tests (the lab and the store).

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
