//! `dbbench k8s` (docs/scale-out.md): the manifests validated offline against
//! the Kubernetes API schema (PyPI kubernetes-validate, strict, pinned
//! versions) for every combination of options the generator can produce,
//! and the launcher run against the stand-in kubectl (tests/k8s/kubectl),
//! which plays the Indexed Job's pods as local processes. No cluster is used
//! and /usr/bin/kubectl never runs.

mod common;

use common::{dbbench_in, dbbench_in_env, tempdir, Run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// kubernetes-validate's release (its schemas) and the Kubernetes versions
/// the manifests are validated against: the oldest it carries (Indexed
/// Jobs are GA since 1.24) and the newest.
const VALIDATOR: &str = "kubernetes-validate==1.37.0";
const K8S_VERSIONS: &[&str] = &["1.25.0", "1.37.0"];

/// The venv's python with kubernetes-validate (and PyYAML, its
/// dependency), installed once per target directory; None (skipped) when
/// it cannot be installed outside CI.
fn venv() -> Option<PathBuf> {
    static VENV: OnceLock<Option<PathBuf>> = OnceLock::new();
    VENV.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("k8s-venv");
        let python = dir.join("bin/python");
        let ready = dir.join("installed-".to_string() + VALIDATOR);
        if ready.exists() {
            return Some(python);
        }
        let _ = std::fs::remove_dir_all(&dir);
        let step = |cmd: &mut Command| -> Result<(), String> {
            let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)))
            }
        };
        // Debian's python3 (scripts/test.sh installs python3-venv for it).
        let system = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
        let installed = step(Command::new(system).arg("-m").arg("venv").arg(&dir))
            .and_then(|_| step(Command::new(dir.join("bin/pip")).args(["install", "--quiet", VALIDATOR])));
        match installed {
            Ok(()) => {
                std::fs::write(&ready, "").unwrap();
                Some(python)
            }
            Err(e) if std::env::var("CI").is_ok() || std::env::var("DBBENCH_TEST_REQUIRE_SERVERS").is_ok() => {
                panic!("cannot install {VALIDATOR} into a venv (python3-venv and the PyPI registry are needed): {e}")
            }
            Err(e) => {
                common::skipped(&format!("cannot install {VALIDATOR} into a venv: {e}"));
                None
            }
        }
    })
    .clone()
}

fn k8s_in_env(dir: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let mut full = vec!["k8s"];
    full.extend_from_slice(args);
    dbbench_in_env(dir, &full, env)
}

/// No password from the test's own environment reaches a run unasked.
const NO_PASSWORDS: &[(&str, Option<&str>)] =
    &[("DBBENCH_MYSQL_PASSWORD", None), ("DBBENCH_PGSQL_PASSWORD", None), ("MYSQL_PWD", None), ("PGPASSWORD", None)];

/// A script that requires a local module, as users' scripts do.
fn write_script(dir: &Path) {
    std::fs::write(dir.join("my_test.lua"), "local m = require(\"my_helpers\")\nfunction event()\n  m.touch()\nend\n")
        .unwrap();
    std::fs::write(dir.join("my_helpers.lua"), "local M = {}\nfunction M.touch() end\nreturn M\n").unwrap();
}

#[test]
fn manifests_validate_offline_for_every_option_combination() {
    let Some(python) = venv() else { return };
    let dir = tempdir("k8s-validate");
    write_script(&dir);
    let validate = python.with_file_name("kubernetes-validate");
    let mut yaml_files = Vec::new();
    let mut pairs = Vec::new();
    let mut n = 0;
    for spread in ["soft", "hard", "one-per-node", "none"] {
        for passwords in ["none", "env", "existing"] {
            for script in ["oltp_read_write", "my_test.lua"] {
                for namespace in [None, Some("bench")] {
                    for extras in [false, true] {
                        n += 1;
                        let run_id = format!("combo-{n}");
                        let mut args: Vec<String> = vec![
                            "--dry-run".into(),
                            "--shards=4".into(),
                            "--image=registry.example/dbbench:0.1".into(),
                            format!("--run-id={run_id}"),
                            "--start-at=1800000000000".into(),
                            format!("--spread={spread}"),
                        ];
                        // Without --timeout the Job's deadline counts from now
                        // to --start-at: the same output needs a fixed one.
                        if !extras {
                            args.push("--timeout=600".into());
                        }
                        if let Some(ns) = namespace {
                            args.push(format!("--namespace={ns}"));
                        }
                        if passwords == "existing" {
                            args.push("--secret-name=bench-passwords".into());
                        }
                        if extras {
                            for a in [
                                "--topology-key=topology.kubernetes.io/zone",
                                "--node-selector=dbbench/client=yes",
                                "--node-selector=kubernetes.io/arch=amd64",
                                "--service-account=bench",
                                "--cpu=3500m",
                                "--memory=2Gi",
                                "--image-pull-policy=IfNotPresent",
                                "--timeout=900",
                            ] {
                                args.push(a.into());
                            }
                        }
                        args.push(script.into());
                        for a in ["--db-driver=mysql", "--mysql-host=db.bench.svc", "--threads=64", "--time=30"] {
                            args.push(a.into());
                        }
                        if extras {
                            args.push("--mysql-ssl".into());
                            args.push("--report-interval=1".into());
                            args.push("run".into());
                        }
                        let env: Vec<(&str, Option<&str>)> = if passwords == "env" {
                            vec![("DBBENCH_MYSQL_PASSWORD", Some("combo-secret")), ("DBBENCH_PGSQL_PASSWORD", None)]
                        } else {
                            NO_PASSWORDS.to_vec()
                        };
                        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
                        let yaml = k8s_in_env(&dir, &argv, &env);
                        assert_eq!(yaml.code, 0, "{args:?}: {}", yaml.stderr);
                        assert!(!yaml.stdout.contains("combo-secret"), "a password in the dry-run:\n{}", yaml.stdout);
                        let mut json_args = argv.clone();
                        json_args.insert(1, "--output=json");
                        let json = k8s_in_env(&dir, &json_args, &env);
                        assert_eq!(json.code, 0, "{}", json.stderr);
                        let y = dir.join(format!("{run_id}.yaml"));
                        let j = dir.join(format!("{run_id}.json"));
                        std::fs::write(&y, &yaml.stdout).unwrap();
                        std::fs::write(&j, &json.stdout).unwrap();
                        yaml_files.push(y.clone());
                        pairs.push((y, j));
                    }
                }
            }
        }
    }
    assert_eq!(yaml_files.len(), 96);
    for version in K8S_VERSIONS {
        let out = Command::new(&validate)
            .args(["--strict", "--quiet", "--kubernetes-version", version])
            .args(&yaml_files)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubernetes-validate --strict -k {version}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The YAML people read is the JSON kubectl gets: same objects, same order.
    let check = r#"
import json, sys, yaml
for y, j in zip(sys.argv[1::2], sys.argv[2::2]):
    docs = [d for d in yaml.safe_load_all(open(y)) if d is not None]
    items = json.load(open(j))["items"]
    # The dry-run's Secret shows <hidden>; so does the JSON dry-run.
    assert docs == items, (y, docs, items)
    assert [d["kind"] for d in docs][0] == "ConfigMap" and docs[-1]["kind"] == "Job", y
print("ok", len(sys.argv) // 2)
"#;
    let mut cmd = Command::new(&python);
    cmd.arg("-c").arg(check);
    for (y, j) in &pairs {
        cmd.arg(y).arg(j);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "YAML and JSON differ: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dry_run_is_stable_and_ships_the_script_its_modules_and_options() {
    let dir = tempdir("k8s-stable");
    write_script(&dir);
    let args = [
        "--dry-run",
        "--shards=3",
        "--image=img",
        "--run-id=stable",
        "--start-at=1800000000000",
        "--timeout=300",
        "my_test.lua",
        "--threads=8",
        "--mysql-host=a host with spaces",
        "--time=5",
    ];
    let a = k8s_in_env(&dir, &args, NO_PASSWORDS);
    let b = k8s_in_env(&dir, &args, NO_PASSWORDS);
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(a.stdout, b.stdout);
    for want in [
        "completionMode: \"Indexed\"",
        "completions: 3",
        "parallelism: 3",
        "backoffLimit: 0",
        "dbbench/run: \"stable\"",
        "- \"--shard=job/3\"",
        "- \"--start-at=1800000000000\"",
        "- \"--shard-result=-\"",
        "- \"/etc/dbbench/run/my_test.lua\"",
        "mysql-host=\"a host with spaces\"",
        "threads=\"8\"",
        "my_helpers.lua: |",
        "  function M.touch() end",
        "whenUnsatisfiable: \"ScheduleAnyway\"",
        "activeDeadlineSeconds: 300",
    ] {
        assert!(a.stdout.contains(want), "no {want:?} in:\n{}", a.stdout);
    }
    assert!(!a.stdout.contains("kind: \"Secret\""), "a Secret without passwords:\n{}", a.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let dir = tempdir("k8s-bad");
    let base = ["--dry-run", "--shards=2", "--image=img"];
    let cases: &[(&[&str], &str)] = &[
        (&["oltp_read_write", "--mysql-password=x"], "passwords never go on a command line"),
        (&["oltp_read_write", "--pgsql_password=x"], "passwords never go on a command line"),
        (&["oltp_read_write", "--shard=0/2"], "sets --shard, --start-at and --shard-result itself"),
        (&["oltp_read_write", "--start-at=5"], "sets --shard, --start-at and --shard-result itself"),
        (&["oltp_read_write", "prepare"], "runs the 'run' command only"),
        (&["--run-id=Bad_Id", "oltp_read_write"], "--run-id=Bad_Id"),
        (&["--namespace=a.b", "oltp_read_write"], "--namespace=a.b"),
        (&["--node-selector=novalue", "oltp_read_write"], "write KEY=VALUE"),
        (&["--spread=sideways", "oltp_read_write"], "sideways"),
        (&["-", "run"], "stdin"),
    ];
    for (extra, want) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let r = k8s_in_env(&dir, &args, NO_PASSWORDS);
        assert_eq!(r.code, 1, "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: no {want:?} in {:?}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{args:?}: more than one line: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    }
    // A shards count of zero.
    let r = dbbench_in(&dir, &["k8s", "--dry-run", "--shards=0", "--image=i", "oltp_read_write"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("at least 1"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- launcher

/// The stand-in kubectl and its state directory.
struct StandIn {
    dir: common::TempDir,
    state: PathBuf,
}

impl StandIn {
    fn new(tag: &str) -> StandIn {
        let dir = tempdir(tag);
        let state = dir.join("kubectl-state");
        StandIn { dir, state }
    }

    fn kubectl() -> String {
        format!("--kubectl={}/tests/k8s/kubectl", env!("CARGO_MANIFEST_DIR"))
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("STANDIN_KUBECTL_STATE".into(), self.state.display().to_string()),
            ("STANDIN_KUBECTL_DBBENCH".into(), env!("CARGO_BIN_EXE_dbbench").into()),
            ("STANDIN_KUBECTL_POD_TIMEOUT".into(), "60".into()),
        ]
    }

    fn command(&self, args: &[&str], password: Option<&str>) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dbbench"));
        c.arg("k8s").arg(StandIn::kubectl()).args(args).current_dir(&self.dir);
        for (k, v) in NO_PASSWORDS {
            assert!(v.is_none());
            c.env_remove(k);
        }
        if let Some(p) = password {
            c.env("DBBENCH_MYSQL_PASSWORD", p);
        }
        for (k, v) in self.env() {
            c.env(k, v);
        }
        c
    }

    fn run(&self, args: &[&str], password: Option<&str>) -> Run {
        let out = self.command(args, password).output().expect("run dbbench k8s");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The kubectl calls made, one argv per line (JSON).
    fn calls(&self) -> String {
        std::fs::read_to_string(self.state.join("calls.log")).unwrap_or_default()
    }

    /// Objects still in the stand-in's "cluster".
    fn objects(&self) -> Vec<String> {
        match std::fs::read_dir(self.state.join("objects")) {
            Ok(d) => d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Process groups of pods still alive.
    fn live_pods(&self) -> Vec<i32> {
        let mut live = Vec::new();
        for e in std::fs::read_dir(self.state.join("pods")).into_iter().flatten() {
            let Ok(t) = std::fs::read_to_string(e.unwrap().path().join("pgid.json")) else { continue };
            let pgid: i32 = t.trim().parse().unwrap();
            // SAFETY: signal 0 only checks that the group exists.
            if unsafe { libc::kill(-pgid, 0) } == 0 {
                live.push(pgid);
            }
        }
        live
    }

    /// Every pod process ends within 5 s (a killed one is a zombie until
    /// the stand-in's supervisor reaps it).
    fn assert_pods_end(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.live_pods().is_empty() {
            assert!(Instant::now() < deadline, "pods still running after the run: {:?}", self.live_pods());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A stand-in for the image's dbbench that prints a shard result line
    /// (by hand, in the agreed shape) unless its index is in `fail`, and
    /// sleeps `sleep` seconds first.
    fn fake_shard(&self, fail: &[u32], sleep: u32) -> String {
        let path = self.dir.join("fake-dbbench");
        let fails: Vec<String> = fail.iter().map(u32::to_string).collect();
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nsleep {sleep}\necho \"args: $*\"\necho \"password: ${{DBBENCH_MYSQL_PASSWORD:-none}}\"\n\
                 for f in {}; do [ \"$JOB_COMPLETION_INDEX\" = \"$f\" ] && {{ echo 'FATAL: cannot connect'; exit 3; }}; done\n\
                 echo \"dbbench-shard-result: {{\\\"format_version\\\":1,\\\"index\\\":$JOB_COMPLETION_INDEX}}\"\n",
                if fails.is_empty() { "none".to_string() } else { fails.join(" ") }
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        for pgid in self.live_pods() {
            // SAFETY: a process group the stand-in started for this test.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn launcher_collects_each_shards_result_line_and_deletes_the_run() {
    let s = StandIn::new("k8s-collect");
    let fake = s.fake_shard(&[], 0);
    let binary = format!("--binary={fake}");
    let r = s.run(
        &[
            "--shards=3",
            "--image=img",
            &binary,
            "--start-grace=1",
            "--results-dir=results",
            "--namespace=bench",
            "--context=lab",
            "oltp_read_write",
            "--threads=6",
            "--time=1",
        ],
        Some("launcher-secret"),
    );
    // Each pod got its index, the shard options and the password (through
    // the Secret's environment); the launcher saved each log.
    for i in 0..3 {
        let log = std::fs::read_to_string(s.dir.join(format!("results/shard-{i}.log"))).unwrap_or_default();
        assert!(log.contains(&format!("\"index\":{i}}}")), "shard {i}'s log: {log}\n{}", r.stderr);
        assert!(log.contains("--shard=job/3") && log.contains("--shard-result=-"), "{log}");
        assert!(log.contains("password: launcher-secret"), "the pod has no password: {log}");
        let mode = std::fs::metadata(s.dir.join(format!("results/shard-{i}.log"))).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o077, 0, "shard logs are private");
    }
    for i in 0..3 {
        let line = r.stderr.lines().find(|l| l.contains(&format!("shard {i}/3: pod dbbench-"))).unwrap_or("");
        assert!(line.ends_with(&format!("on node standin-node-{i}: ok")), "{}", r.stderr);
    }
    let calls = s.calls();
    assert!(!calls.contains("launcher-secret"), "a password in kubectl's argv:\n{calls}");
    assert!(!r.stderr.contains("launcher-secret") && !r.stdout.contains("launcher-secret"));
    for verb in ["\"apply\", \"-f\", \"-\"", "\"get\", \"job\"", "\"get\", \"pods\"", "\"logs\"", "\"delete\""] {
        assert!(calls.contains(verb), "no {verb} call:\n{calls}");
    }
    assert!(calls.lines().all(|l| l.starts_with("[\"--context=lab\", \"--namespace=bench\"")), "{calls}");
    assert!(!calls.contains("unsupported"));
    assert!(s.objects().is_empty(), "left in the cluster: {:?}", s.objects());
    s.assert_pods_end();
    // The hand-made lines are not real shard results: dbbench merge refuses
    // them, and the launcher says so (the merged report is tested with real
    // shards below).
    assert_ne!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_failed_shard_is_reported_and_the_rest_stopped_and_deleted() {
    let s = StandIn::new("k8s-fail");
    let fake = s.fake_shard(&[1], 0);
    // Shard 1 fails at once; the others would sleep: the Job fails
    // (backoffLimit 0) and the cluster stops them.
    std::fs::write(
        &fake,
        std::fs::read_to_string(&fake).unwrap().replace("sleep 0", "[ \"$JOB_COMPLETION_INDEX\" = 1 ] || sleep 30"),
    )
    .unwrap();
    let binary = format!("--binary={fake}");
    let started = Instant::now();
    let r =
        s.run(&["--shards=3", "--image=img", &binary, "--start-grace=1", "--results-dir=out", "oltp_read_write"], None);
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("the Job failed: BackoffLimitExceeded"), "{}", r.stderr);
    assert!(r.stderr.contains("shard 1/3") && r.stderr.contains("exit code 3"), "{}", r.stderr);
    assert!(r.stderr.contains("3 of 3 shards failed (shard 0, 1, 2): no merged report"), "{}", r.stderr);
    let log = std::fs::read_to_string(s.dir.join("out/shard-1.log")).unwrap();
    assert!(log.contains("FATAL: cannot connect"), "{log}");
    assert!(s.objects().is_empty(), "{:?}", s.objects());
    s.assert_pods_end();
}

#[test]
fn interrupting_the_launcher_deletes_the_run() {
    let s = StandIn::new("k8s-int");
    let fake = s.fake_shard(&[], 30);
    let binary = format!("--binary={fake}");
    let mut child = s
        .command(
            &["--shards=2", "--image=img", &binary, "--start-grace=1", "--results-dir=out", "oltp_read_write"],
            None,
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.calls().contains("\"get\", \"job\"") {
        assert!(Instant::now() < deadline, "the launcher never waited for the Job");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(s.live_pods().len(), 2, "both pods run");
    // SAFETY: our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "the launcher did not end after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(s.calls().contains("\"delete\""), "{}", s.calls());
    assert!(s.objects().is_empty(), "{:?}", s.objects());
    s.assert_pods_end();
}

#[test]
fn a_missing_kubectl_is_one_line() {
    let dir = tempdir("k8s-nokubectl");
    let r = k8s_in_env(
        &dir,
        &["--kubectl=/nonexistent/kubectl", "--shards=1", "--image=i", "--results-dir=out", "oltp_read_write"],
        NO_PASSWORDS,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("cannot run kubectl '/nonexistent/kubectl'"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn real_shards_through_the_stand_in_merge_into_one_report_with_every_event() {
    // The image's dbbench is this build (the stand-in maps /usr/local/bin/dbbench
    // to it); a script without a database: every event counts, none is lost or
    // doubled across the shards.
    let s = StandIn::new("k8s-e2e");
    std::fs::write(s.dir.join("count.lua"), "function event() end\n").unwrap();
    let r = s.run(
        &[
            "--shards=3",
            "--image=img",
            "--start-grace=2",
            "--results-dir=out",
            "count.lua",
            "--threads=6",
            "--events=3000",
            "--time=0",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let events = r.number("total number of events:").unwrap_or_else(|| panic!("no total in:\n{}", r.stdout));
    assert_eq!(events as u64, 3000, "{}", r.stdout);
    for i in 0..3 {
        let log = std::fs::read_to_string(s.dir.join(format!("out/shard-{i}.log"))).unwrap();
        assert!(log.contains("dbbench-shard-result: {"), "shard {i}: {log}");
    }
    assert!(s.objects().is_empty(), "{:?}", s.objects());
}
