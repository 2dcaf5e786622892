//! Shards of one run (`run --shard=I/N`, `--shard-result`, `--start-at`)
//! and `dbbench merge` (docs/scale-out.md): shard processes run at once,
//! their results merged and checked against the sum of the shards, the
//! servers' own counters, and the same run unsharded.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dbbench")
}

/// Starts the N shards of one run at once (each `base` plus `--shard=I/N
/// --shard-result=DIR/shard-I.json --start-at=now+1.5s`), waits for all;
/// returns the result files and each shard's output.
fn run_shards(dir: &Path, n: u32, base: &[&str], env: &[(&str, &str)]) -> (Vec<PathBuf>, Vec<Run>) {
    run_shards_on(dir, n, base, env, &|_| Vec::new())
}

/// [`run_shards`] with shard I's command behind `wrap(I)` (such as `ip
/// netns exec NS`: the shard on a simulated host).
fn run_shards_on(
    dir: &Path,
    n: u32,
    base: &[&str],
    env: &[(&str, &str)],
    wrap: &dyn Fn(u32) -> Vec<String>,
) -> (Vec<PathBuf>, Vec<Run>) {
    run_shards_with(dir, n, base, env, wrap, &mut |_, _| {})
}

/// [`run_shards_on`], calling `meanwhile(start_at, pids)` once the shards
/// are started (to stop one of them, say) before waiting for them.
fn run_shards_with(
    dir: &Path,
    n: u32,
    base: &[&str],
    env: &[(&str, &str)],
    wrap: &dyn Fn(u32) -> Vec<String>,
    meanwhile: &mut dyn FnMut(std::time::SystemTime, &[u32]),
) -> (Vec<PathBuf>, Vec<Run>) {
    let start_at =
        (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() + 1500).to_string();
    let mut children = Vec::new();
    let mut files = Vec::new();
    for i in 0..n {
        let file = dir.join(format!("shard-{i}.json"));
        let prefix = wrap(i);
        let mut cmd = match prefix.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(bin());
                c
            }
            None => Command::new(bin()),
        };
        cmd.args(base)
            .arg(format!("--shard={i}/{n}"))
            .arg(format!("--shard-result={}", file.display()))
            .arg(format!("--start-at={start_at}"))
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        children.push(cmd.spawn().expect("start a shard"));
        files.push(file);
    }
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(start_at.parse().unwrap());
    meanwhile(at, &children.iter().map(|c| c.id()).collect::<Vec<_>>());
    let runs = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            Run {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .collect();
    (files, runs)
}

/// dbbench with `args` in `dir`, behind `prefix` (such as `ip netns exec NS`) if any.
fn dbbench_on(dir: &Path, prefix: &[String], args: &[&str]) -> Run {
    let Some((program, rest)) = prefix.split_first() else { return dbbench_in(dir, args) };
    let out = Command::new(program).args(rest).arg(bin()).args(args).current_dir(dir).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn merge(dir: &Path, args: &[&str]) -> Run {
    let mut a = vec!["merge"];
    a.extend(args);
    dbbench_in(dir, &a)
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// The counter `key` of a shard result file.
fn shard_count(file: &Path, key: &str) -> u64 {
    let v = json(&std::fs::read_to_string(file).unwrap());
    v["cumulative"]["counts"][key].as_u64().unwrap()
}

/// A script whose clients each write their own file, keyed by
/// `sysbench.tid`, one random number per event: what a per-thread table or
/// a tid-keyed slice of rows relies on.
const PER_THREAD: &str = r#"
local f
function thread_init()
  f = assert(io.open(string.format("part-%d.txt", sysbench.tid), "w"))
end
function event()
  f:write(sysbench.rand.uniform(1, 1000000000), "\n")
  local t = os.clock()
  while os.clock() - t < 0.0002 do end
end
function thread_done()
  f:close()
end
"#;

/// Each client's lines, by file name.
fn parts(dir: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("part-"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            (e.file_name().to_string_lossy().into_owned(), text.lines().map(String::from).collect())
        })
        .collect()
}

/// Three shards of a 5-client run: every client runs once, under its
/// global id, drawing the same random numbers as in the unsharded run
/// (each client's stream is seeded from --rand-seed and its global id);
/// the merged report's totals are the shards' sums, its latency count its
/// events, and the JSON, CSV and text layouts agree.
#[test]
fn shards_run_global_thread_ids_and_merge_to_their_sum() {
    let dir = tempdir("shards-tid");
    let (whole, sharded) = (dir.join("whole"), dir.join("sharded"));
    for d in [&whole, &sharded] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("per_thread.lua"), PER_THREAD).unwrap();
    }
    let base = ["per_thread.lua", "run", "--threads=5", "--time=2", "--rand-seed=7", "--report-interval=1"];
    let r = dbbench_in(&whole, &base);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let (files, runs) = run_shards(&sharded, 3, &base, &[]);
    for r in &runs {
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    assert!(runs[0].stdout.contains("Shard 0/3: thread ids 0-1 of 5"), "{}", runs[0].stdout);
    assert!(runs[2].stdout.contains("Shard 2/3: thread ids 4-4 of 5"), "{}", runs[2].stdout);
    let (a, b) = (parts(&whole), parts(&sharded));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "the same clients, by global id");
    assert_eq!(a.len(), 5);
    for (name, lines) in &a {
        let other = &b[name];
        let n = lines.len().min(other.len());
        assert!(n > 10, "{name}: {} and {} events", lines.len(), other.len());
        assert_eq!(lines[..n], other[..n], "{name}: the same random numbers sharded and unsharded");
    }

    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let m = merge(&sharded, &[&names[..], &["--json"]].concat());
    assert_eq!(m.code, 0, "{}{}", m.stdout, m.stderr);
    let doc = json(&m.stdout);
    let events: u64 = files.iter().map(|f| shard_count(f, "events")).sum();
    assert!(events > 0);
    assert_eq!(doc["counters"]["events"].as_u64(), Some(events));
    assert_eq!(doc["latency"]["count"].as_u64(), Some(events));
    assert_eq!(doc["threads"].as_u64(), Some(5));
    assert_eq!(doc["fairness"].as_array().unwrap().len(), 5);
    let fair: u64 = doc["fairness"].as_array().unwrap().iter().map(|f| f["events"].as_u64().unwrap()).sum();
    assert_eq!(fair, events);
    // Interval rows: one per tick, their events add up to what the shards' rows hold.
    let rows = doc["intervals"].as_array().unwrap();
    assert!(rows.len() >= 2, "{rows:?}");
    let in_rows: u64 = rows.iter().map(|r| r["events"].as_u64().unwrap()).sum();
    let shard_rows: u64 = files
        .iter()
        .map(|f| {
            let v = json(&std::fs::read_to_string(f).unwrap());
            v["intervals"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["period"]["counts"]["events"].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(in_rows, shard_rows);
    assert_eq!(rows[0]["threads_running"].as_u64(), Some(5));
    assert_eq!(doc["shards"].as_array().unwrap().len(), 3);
    assert!(doc["start_skew_ms"].as_f64().unwrap() < 1000.0, "{}", doc["start_skew_ms"]);

    // The text layout: sysbench's report with the merged figures, and the shards' table.
    let t = merge(&sharded, &names);
    assert_eq!(t.code, 0, "{}{}", t.stdout, t.stderr);
    assert_eq!(t.number("total number of events:"), Some(events as f64), "{}", t.stdout);
    assert!(t.stdout.contains("[ 1s ] thds: 5 eps:"), "{}", t.stdout);
    assert!(t.stdout.contains("Shards:") && t.stdout.contains("    4  "), "{}", t.stdout);
    // CSV: the engine's rows, the total row, then the shards.
    let c = merge(&sharded, &[&names[..], &["--csv"]].concat());
    assert_eq!(c.code, 0, "{}{}", c.stdout, c.stderr);
    let total = c.stdout.lines().find(|l| l.starts_with("total,")).unwrap();
    assert_eq!(total.split(',').nth(2), Some("5"), "{total}");
    assert_eq!(c.stdout.lines().filter(|l| l.starts_with(|ch: char| ch.is_ascii_digit())).count(), 3, "{}", c.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--shard-result=-`: one line after the report on stdout, which merge
/// finds in a saved log.
#[test]
fn a_result_on_stdout_is_merged_from_a_saved_log() {
    let dir = tempdir("shards-log");
    std::fs::write(dir.join("s.lua"), "function event() end\n").unwrap();
    let mut logs = Vec::new();
    for i in 0..2 {
        let r = dbbench_in(
            &dir,
            &["s.lua", "run", "--threads=2", "--events=1001", &format!("--shard={i}/2"), "--shard-result=-"],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let last = r.stdout.lines().last().unwrap();
        assert!(last.starts_with("dbbench-shard-result: {"), "{last}");
        let log = dir.join(format!("pod-{i}.log"));
        std::fs::write(&log, &r.stdout).unwrap();
        logs.push(log.display().to_string());
    }
    let m = merge(&dir, &[&logs[0], &logs[1], "--json"]);
    assert_eq!(m.code, 0, "{}{}", m.stdout, m.stderr);
    // --events splits so that the shares add up: 501 + 500.
    assert_eq!(json(&m.stdout)["counters"]["events"].as_u64(), Some(1001));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Missing, duplicate, overlapping and mismatched shards, damaged files and
/// bad shard options: one line naming the problem, exit 1.
#[test]
fn bad_shard_sets_and_options_are_one_clear_line() {
    let dir = tempdir("shards-bad");
    std::fs::write(dir.join("s.lua"), "function event() end\n").unwrap();
    let shard = |i: u32, n: u32, threads: u32, name: &str| {
        let r = dbbench_in(
            &dir,
            &[
                "s.lua",
                "run",
                &format!("--threads={threads}"),
                "--events=100",
                &format!("--shard={i}/{n}"),
                &format!("--shard-result={name}"),
            ],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        name.to_string()
    };
    let a0 = shard(0, 3, 3, "a0.json");
    let a1 = shard(1, 3, 3, "a1.json");
    let a2 = shard(2, 3, 3, "a2.json");
    let b1 = shard(1, 3, 6, "b1.json");
    let one_line = |r: &Run, want: &str| {
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(want), "want '{want}' in: {}", r.stderr);
    };
    one_line(&merge(&dir, &[&a0, &a1]), "1 of 3 shards missing (shard 2)");
    one_line(&merge(&dir, &[&a0, &a1, &a1]), "shard 1/3 is given twice (a1.json and a1.json)");
    one_line(&merge(&dir, &[&a0, &b1, &a2]), "b1.json is not from the same run as a0.json: --threads=3 --events=100 --rate=0 there, --threads=6 --events=100 --rate=0 here");
    // A result whose thread ids overlap another's (edited, or a bug).
    let text = std::fs::read_to_string(dir.join(&a2)).unwrap().replace("\"first_thread\":2", "\"first_thread\":1");
    std::fs::write(dir.join("overlap.json"), text).unwrap();
    one_line(&merge(&dir, &[&a0, &a1, "overlap.json"]), "would overlap or leave gaps");
    std::fs::write(dir.join("junk.json"), "hello\n").unwrap();
    one_line(&merge(&dir, &[&a0, "junk.json"]), "junk.json: not a shard result");
    let text = std::fs::read_to_string(dir.join(&a2)).unwrap().replace("\"format_version\":1", "\"format_version\":99");
    std::fs::write(dir.join("future.json"), text).unwrap();
    one_line(&merge(&dir, &["future.json"]), "format version 99");
    // --allow-partial merges the rest and says what is missing (exit 2: partial).
    let p = merge(&dir, &[&a0, &a2, "--allow-partial"]);
    assert_eq!(p.code, 2, "{}{}", p.stdout, p.stderr);
    assert!(p.stdout.contains("incomplete: 1 of 3 shards missing (shard 1)"), "{}", p.stdout);
    assert!(p.stdout.lines().any(|l| l.trim_start().starts_with('1') && l.ends_with("missing")), "{}", p.stdout);

    // Bad options: one FATAL line on stdout (sysbench's place for them), exit 1.
    let bad = |args: &[&str], env: &[(&str, Option<&str>)], want: &str| {
        let mut a = vec!["s.lua"];
        a.extend(args);
        let r = dbbench_in_env(&dir, &a, env);
        assert_eq!(r.code, 1, "{args:?}: {}{}", r.stdout, r.stderr);
        let out = format!("{}{}", r.stdout, r.stderr);
        assert!(out.contains(want), "{args:?}: want '{want}' in: {out}");
        assert_eq!(out.lines().filter(|l| !l.starts_with("dbbench ") && !l.is_empty()).count(), 1, "{out}");
    };
    let no_env: &[(&str, Option<&str>)] = &[("JOB_COMPLETION_INDEX", None)];
    bad(&["run", "--threads=4", "--shard=4/4"], no_env, "Invalid value for --shard: '4/4'");
    bad(&["run", "--threads=4", "--shard=1"], no_env, "Invalid value for --shard: '1'");
    bad(&["run", "--threads=4", "--shard=job/4"], no_env, "$JOB_COMPLETION_INDEX, which is not set");
    bad(
        &["run", "--threads=4", "--shard=job/4"],
        &[("JOB_COMPLETION_INDEX", Some("7"))],
        "is '7', not a shard index from 0 to 3",
    );
    bad(&["run", "--threads=2", "--shard=0/4"], no_env, "--threads=2 cannot be split over 4 shards");
    bad(&["run", "--threads=4", "--events=3", "--shard=0/4"], no_env, "--events=3 cannot be split over 4 shards");
    bad(
        &["run", "--threads=4", "--shard=0/4", "--start-at=tomorrow"],
        no_env,
        "Invalid value for --start-at: 'tomorrow'",
    );
    // --start-at: strict, and within a day past to --start-at-max-wait ahead.
    bad(&["run", "--threads=4", "--shard=0/4", "--start-at="], no_env, "Invalid value for --start-at: '': empty");
    bad(
        &["run", "--threads=4", "--shard=0/4", "--start-at=0"],
        no_env,
        "1970-01-01T00:00:00.000Z is more than a day in the past",
    );
    bad(
        &["run", "--threads=4", "--shard=0/4", "--start-at=2026-11-27T09:00:00+99:00"],
        no_env,
        "Invalid value for --start-at: '2026-11-27T09:00:00+99:00'",
    );
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let year_ahead = (now_ms + 365 * 86_400_000).to_string();
    let year = format!("--start-at={year_ahead}");
    bad(&["run", "--threads=4", "--shard=0/4", &year], no_env, "more than --start-at-max-wait=86400 s allows");
    bad(&["run", "--start-at="], no_env, "--start-at needs --shard=I/N");
    // A wait of more than a few seconds says what it waits for.
    let soon = format!("--start-at={}", now_ms + 7_000);
    let r = dbbench_in(&dir, &["s.lua", "run", "--threads=1", "--events=1", "--shard=0/1", &soon]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("Ready; waiting 7 s for --start-at=")
            || r.stdout.contains("Ready; waiting 6 s for --start-at="),
        "{}",
        r.stdout
    );
    bad(&["run", "--shard-result=x.json"], no_env, "--shard-result needs --shard=I/N");
    bad(&["prepare", "--threads=4", "--shard=0/4"], no_env, "'prepare' runs once, unsharded");
    // job/N with the index from the environment, as in an Indexed Job.
    let r = dbbench_in_env(
        &dir,
        &["s.lua", "run", "--threads=4", "--events=10", "--shard=job/4", "--shard-result=job.json"],
        &[("JOB_COMPLETION_INDEX", Some("3"))],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v = json(&std::fs::read_to_string(dir.join("job.json")).unwrap());
    assert_eq!((v["shard_index"].as_u64(), v["first_thread"].as_u64()), (Some(3), Some(3)));
    // A result file through a symlink is not written through it.
    std::os::unix::fs::symlink(dir.join("target.txt"), dir.join("link.json")).unwrap();
    let r =
        dbbench_in(&dir, &["s.lua", "run", "--threads=2", "--events=10", "--shard=0/2", "--shard-result=link.json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!dir.join("target.txt").exists(), "written through the symlink");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(dir.join("link.json")).unwrap().permissions().mode() & 0o777, 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Crafted and hostile inputs to `dbbench merge` (issue 38): each is
/// refused with one line naming the file, the field and the rule, exit 1,
/// nothing on stdout — never merged into figures that look real. The
/// crafted results are edits of real ones; the real ones merge.
#[test]
fn merge_refuses_hostile_and_inconsistent_inputs_by_name() {
    let dir = tempdir("shards-hostile");
    std::fs::write(
        dir.join("busy.lua"),
        "function event() local t = os.clock() while os.clock() - t < 0.001 do end end\n",
    )
    .unwrap();
    let (files, runs) =
        run_shards(&dir, 2, &["busy.lua", "run", "--threads=2", "--time=2", "--report-interval=0.5"], &[]);
    for r in &runs {
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let ok = merge(&dir, &[&names[0], &names[1]]);
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    let doc = |i: usize| json(&std::fs::read_to_string(&files[i]).unwrap());
    assert!(doc(0)["intervals"].as_array().unwrap().len() >= 3, "the test needs intervals");

    let one_line = |args: &[&str], want: &[&str]| {
        let r = merge(&dir, args);
        assert_eq!(r.code, 1, "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: half-printed: {}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        for w in want {
            assert!(r.stderr.contains(w), "{args:?}: want '{w}' in: {}", r.stderr);
        }
    };
    // Shard 0's result edited by `edit`, as crafted.json, merged with shard 1's.
    let crafted = |edit: &dyn Fn(&mut serde_json::Value), want: &[&str]| {
        let mut v = doc(0);
        edit(&mut v);
        std::fs::write(dir.join("crafted.json"), serde_json::to_string(&v).unwrap()).unwrap();
        let mut w = vec!["crafted.json"];
        w.extend(want);
        one_line(&["crafted.json", &names[1]], &w);
    };
    let max = serde_json::json!(u64::MAX);
    crafted(
        &|v| v["cumulative"]["counts"]["events"] = max.clone(),
        &["cumulative.counts.events is 18446744073709551615 but cumulative.latency.count is"],
    );
    crafted(
        &|v| {
            let e = v["cumulative"]["counts"]["events"].as_u64().unwrap();
            v["cumulative"]["counts"]["events"] = (e + 1000).into();
            v["cumulative"]["latency"]["count"] = (e + 1000).into();
        },
        &["cumulative.latency.sum_ns", "not between count × min_ns and count × max_ns"],
    );
    crafted(
        &|v| {
            let e = v["cumulative"]["counts"]["events"].as_u64().unwrap();
            v["cumulative"]["counts"]["events"] = (e + 1000).into();
        },
        &["cumulative.counts.events is"],
    );
    crafted(&|v| v["cumulative"]["latency"]["count"] = serde_json::json!(1u64 << 63), &["cumulative.counts.events is"]);
    crafted(
        &|v| {
            let t = v["intervals"][0].clone();
            v["intervals"].as_array_mut().unwrap().insert(0, t);
        },
        &["intervals[1]", "ticks and their times only increase"],
    );
    crafted(&|v| v["intervals"].as_array_mut().unwrap().reverse(), &["ticks and their times only increase"]);
    crafted(&|v| v["intervals"][0]["tick"] = serde_json::json!(-3), &["intervals[0].tick is -3"]);
    crafted(
        &|v| v["intervals"][1]["period"]["counts"]["events"] = serde_json::json!(1_000_000_000u64),
        &["intervals[1].period.counts.events is 1000000000"],
    );
    for (t, want) in [
        (serde_json::json!(1e300), "more than any run lasts"),
        (serde_json::json!(-5.0), "cannot be negative"),
        (serde_json::json!(0.0), "events take time"),
    ] {
        crafted(&|v| v["total_time_s"] = t.clone(), &["total_time_s", want]);
    }
    crafted(
        &|v| {
            let max = v["cumulative"]["latency"]["max_ns"].clone();
            v["cumulative"]["latency"]["max_ns"] = v["cumulative"]["latency"]["min_ns"].clone();
            v["cumulative"]["latency"]["min_ns"] = max;
        },
        &["cumulative.latency.min_ns", "is above max_ns"],
    );
    crafted(&|v| v["fairness"] = serde_json::json!([]), &["fairness lists 0 clients, the shard ran 1"]);
    crafted(&|v| v["run"]["percentiles"] = serde_json::json!([95.0, 99.0]), &["--percentile="]);
    crafted(&|v| v["version"] = serde_json::json!("0.0.1-other"), &["dbbench 0.0.1-other there"]);
    // The histogram: a count of 2^63 in one bucket, events to match.
    crafted(
        &|v| {
            v["cumulative"]["latency"]["count"] = serde_json::json!(1u64 << 63);
            v["cumulative"]["counts"]["events"] = serde_json::json!(1u64 << 63);
        },
        &["not between count × min_ns and count × max_ns"],
    );

    // Inputs that are not result files, or too large, are refused before
    // they are read: no memory grows, nothing waits.
    one_line(&["/dev/zero", &names[1]], &["/dev/zero: a character device, not a shard result file"]);
    one_line(&["/dev/urandom", &names[1]], &["/dev/urandom: a character device"]);
    one_line(&[".", &names[1]], &[".: a directory"]);
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let t = std::time::Instant::now();
    one_line(&["fifo", &names[1]], &["fifo: a FIFO"]);
    assert!(t.elapsed() < std::time::Duration::from_secs(10), "a FIFO without a writer waited");
    let big = std::fs::File::create(dir.join("big.json")).unwrap();
    big.set_len(1 << 30).unwrap(); // sparse: 1 GiB that takes no disk
    one_line(&["big.json", &names[1]], &["big.json: 1073741824 bytes, more than --max-file-size=268435456"]);
    one_line(
        &["--max-file-size=1K", &names[0], &names[1]],
        &["more than --max-file-size=1024", "raise --max-file-size"],
    );
    let r = merge(&dir, &["--max-file-size=0", &names[0]]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("'0' is not a size above 0"), "{}", r.stderr);
    one_line(&["-", "-"], &["- (standard input) is given more than once"]);

    // Standard input is a source like a file.
    let mut child = Command::new(bin())
        .args(["merge", "-", &names[1]])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), std::fs::read(&files[0]).unwrap().as_slice()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), ok.stdout);

    // A log holding both shards' result lines gives both shards (the last
    // one was kept, and shard 0 reported missing); a damaged line is
    // named by its line.
    let line = |i: usize| format!("dbbench-shard-result: {}\n", std::fs::read_to_string(&files[i]).unwrap().trim());
    std::fs::write(dir.join("both.log"), format!("pod a\n{}pod b\n{}", line(0), line(1))).unwrap();
    let both = merge(&dir, &["both.log"]);
    assert_eq!(both.code, 0, "{}{}", both.stdout, both.stderr);
    assert_eq!(both.stdout, ok.stdout);
    std::fs::write(dir.join("damaged.log"), format!("{}{}", line(0), line(1).replace("\"tick\":2", "\"tick\":1")))
        .unwrap();
    one_line(&["damaged.log"], &["damaged.log (line 2): intervals[1]", "only increase"]);
    one_line(&["both.log", &names[0]], &["shard 0/2 is given twice (both.log (line 2) and shard-0.json)"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Held by every test of this file on the shared MariaDB: the counters
/// test reads the server's global `Com_*`, which count every client's
/// statements, so another test's prepare, cleanup and clock readings in the
/// same seconds would show as SELECTs the shards never sent (a CI run saw
/// 46 beyond the 20..30 allowed while the frozen-shard test ran beside it).
static SHARED_MARIADB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The shared MariaDB to oneself: a test that failed while holding it must
/// not fail the other one too.
fn shared_mariadb() -> std::sync::MutexGuard<'static, ()> {
    SHARED_MARIADB.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// MariaDB's global statement counters (`SHOW GLOBAL STATUS`), by name.
fn mysql_status(sock: &str) -> std::collections::HashMap<String, u64> {
    use mysql::prelude::Queryable;
    let opts = mysql::OptsBuilder::new().socket(Some(sock.to_string())).user(Some("sbtest"));
    let mut c = mysql::Conn::new(opts).unwrap();
    let rows: Vec<(String, String)> = c.query("SHOW GLOBAL STATUS LIKE 'Com\\_%'").unwrap();
    rows.into_iter().filter_map(|(k, v)| Some((k, v.parse().ok()?))).collect()
}

/// The merged totals of N shard results (JSON report) and the shards' sum.
fn merged_totals(dir: &Path, files: &[PathBuf]) -> serde_json::Value {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut a: Vec<&str> = names.iter().map(String::as_str).collect();
    a.push("--json");
    let m = merge(dir, &a);
    assert_eq!(m.code, 0, "{}{}", m.stdout, m.stderr);
    let doc = json(&m.stdout);
    for key in ["events", "reads", "writes", "other", "errors", "reconnects"] {
        let sum: u64 = files.iter().map(|f| shard_count(f, key)).sum();
        assert_eq!(doc["counters"][key].as_u64(), Some(sum), "{key}: merged vs the shards' sum");
    }
    assert_eq!(doc["latency"]["count"].as_u64(), doc["counters"]["events"].as_u64());
    doc
}

/// Four shard processes of oltp_read_write against MariaDB (statements as
/// text, so that each is one `Com_*`): the merged totals are the shards'
/// sums and the server's own counters, statement kind by kind (each shard
/// reads the server's clock five times for its clock offset: five more
/// SELECTs per shard).
#[test]
fn four_shards_of_oltp_read_write_on_mariadb_match_the_server_counters() {
    let _alone = shared_mariadb();
    let Some(base) = mysql_db("dbbench_shards") else { return };
    let sock = std::env::var("DBBENCH_TEST_MYSQL_SOCKET").unwrap();
    let dir = tempdir("shards-mysql");
    let doc = oltp_shards_match_mariadb_counters(&dir, &base, &sock, &|_| Vec::new());
    assert!(doc["start_skew_clock"].as_str().unwrap().contains("NOW(6)"), "{}", doc["start_skew_clock"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Prepares oltp_read_write (4 tables of 20000 rows) through `base`, runs
/// it as 4 shards (shard I behind `wrap(I)`), and checks the merged totals
/// against the shards' sums and MariaDB's `Com_*` counters read through
/// `sock` as sbtest; returns the merged JSON report.
fn oltp_shards_match_mariadb_counters(
    dir: &Path,
    base: &[String],
    sock: &str,
    wrap: &dyn Fn(u32) -> Vec<String>,
) -> serde_json::Value {
    let prep =
        dbbench_on(dir, &wrap(0), &args(base, &["oltp_read_write", "prepare", "--tables=4", "--table-size=20000"]));
    assert_eq!(prep.code, 0, "{}{}", prep.stdout, prep.stderr);
    let before = mysql_status(sock);
    let run = args(
        base,
        &[
            "oltp_read_write",
            "run",
            "--tables=4",
            "--table-size=20000",
            "--threads=4",
            "--time=3",
            "--report-interval=1",
            "--db-ps-mode=disable",
        ],
    );
    let (files, runs) = run_shards_on(dir, 4, &run, &[], wrap);
    for r in &runs {
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    let after = mysql_status(sock);
    let d = |k: &str| after[k] - before[k];
    let doc = merged_totals(dir, &files);
    let c = |k: &str| doc["counters"][k].as_u64().unwrap();
    assert!(c("events") > 0);
    // Beyond the clients' reads: each shard's five clock readings, and the
    // few SELECTs of connection set-up (the clients', this test's).
    let extra = d("Com_select") - c("reads");
    assert!((4 * 5..=4 * 5 + 10).contains(&extra), "reads: {} SELECTs beyond {} reads", extra, c("reads"));
    let server_writes = d("Com_insert") + d("Com_update") + d("Com_delete");
    let server_other = d("Com_begin") + d("Com_commit") + d("Com_rollback");
    if c("errors") == 0 {
        assert_eq!(server_writes, c("writes"), "writes");
        assert_eq!(server_other, c("other"), "other");
        assert_eq!(d("Com_commit"), c("events"), "events");
    } else {
        // A failed statement (a deadlock, retried by the default
        // --mysql-ignore-errors) counts on the server and as an error here,
        // and dbbench's ROLLBACK before the retry (src/script/sql.rs) is not
        // a statement of the script's: two server statements per error.
        eprintln!("{} statements failed (deadlocks): checked as one sum", c("errors"));
        assert_eq!(server_writes + server_other, c("writes") + c("other") + 2 * c("errors"), "all statements");
        assert!(d("Com_commit") <= c("events"), "commits {} > events {}", d("Com_commit"), c("events"));
    }
    for s in doc["shards"].as_array().unwrap() {
        assert_eq!(s["status"], "ok", "{s}");
        assert!(s["clock_offset_ms"].as_f64().unwrap().abs() < 1000.0, "{s}");
    }
    merged_text_has_the_totals(dir, &files, &doc);
    doc
}

/// The text merge of `files` is sysbench's report layout with the merged
/// JSON's totals: events, and reads/writes/other under "queries performed".
fn merged_text_has_the_totals(dir: &Path, files: &[PathBuf], doc: &serde_json::Value) {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = merge(dir, &names);
    assert_eq!(t.code, 0, "{}{}", t.stdout, t.stderr);
    let c = |k: &str| doc["counters"][k].as_u64().unwrap();
    assert!(t.stdout.contains("SQL statistics:\n    queries performed:"), "{}", t.stdout);
    assert_eq!(t.rwo(), (c("reads"), c("writes"), c("other")), "{}", t.stdout);
    assert_eq!(t.number("total number of events:"), Some(c("events") as f64), "{}", t.stdout);
    assert!(t.stdout.contains("Shards:"), "{}", t.stdout);
}

/// PostgreSQL's counters, once the shards' backends have flushed them (at
/// their exit; polled until two readings agree, at most 10 s): the
/// database's transactions (`pg_stat_database`) and the rows of the sbtest
/// tables (`pg_stat_user_tables`; the database's own tup_* also count the
/// catalogs, which autoanalyze writes to during the run). `query` runs one
/// query in database `db` and returns the first column of each row.
fn pg_stats(db: &str, query: &dyn Fn(&str) -> Vec<String>) -> Vec<u64> {
    let read = || {
        query(&format!(
            "SELECT concat_ws(',', d.xact_commit, d.xact_rollback, t.ins, t.upd, t.del) FROM pg_stat_database d, \
             (SELECT coalesce(sum(n_tup_ins), 0) AS ins, coalesce(sum(n_tup_upd), 0) AS upd, coalesce(sum(n_tup_del), 0) AS del \
             FROM pg_stat_user_tables WHERE relname LIKE 'sbtest%') t WHERE d.datname = '{db}'"
        ))[0]
            .split(',')
            .map(|v| v.parse().unwrap())
            .collect::<Vec<u64>>()
    };
    let mut last = read();
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let now = read();
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// Three shard processes of oltp_read_write against PostgreSQL: the
/// merged totals are the shards' sums and the server's counters: rows
/// inserted, updated and deleted (each write statement of an event that
/// committed changes one row; checked exactly when no event hit a
/// deadlock, which a large table makes rare) and transactions committed
/// (each event one; statement preparation and the clock readings commit
/// implicit transactions of their own).
#[test]
fn three_shards_of_oltp_read_write_on_postgresql_match_the_server_counters() {
    let Some(base) = pgsql_db("dbbench_shards") else { return };
    let dir = tempdir("shards-pgsql");
    oltp_shards_match_postgresql_counters(
        &dir,
        &base,
        3,
        "dbbench_shards",
        &|sql| pgsql_query("dbbench_shards", sql),
        &|_| Vec::new(),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Prepares oltp_read_write (N tables of 20000 rows) in database `db`
/// through `base`, runs it as N shards (shard I behind `wrap(I)`), and
/// checks the merged totals against the shards' sums and PostgreSQL's
/// counters (read by `query`); returns the merged JSON report.
fn oltp_shards_match_postgresql_counters(
    dir: &Path,
    base: &[String],
    n: u32,
    db: &str,
    query: &dyn Fn(&str) -> Vec<String>,
    wrap: &dyn Fn(u32) -> Vec<String>,
) -> serde_json::Value {
    let tables = format!("--tables={n}");
    let threads = format!("--threads={n}");
    let prep = dbbench_on(dir, &wrap(0), &args(base, &["oltp_read_write", "prepare", &tables, "--table-size=20000"]));
    assert_eq!(prep.code, 0, "{}{}", prep.stdout, prep.stderr);
    let before = pg_stats(db, query);
    let run = args(
        base,
        &["oltp_read_write", "run", &tables, "--table-size=20000", &threads, "--time=3", "--report-interval=1"],
    );
    let (files, runs) = run_shards_on(dir, n, &run, &[], wrap);
    for r in &runs {
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    let after = pg_stats(db, query);
    let d: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let doc = merged_totals(dir, &files);
    let c = |k: &str| doc["counters"][k].as_u64().unwrap();
    assert!(c("events") > 0);
    assert!(d[0] >= c("events"), "transactions committed {} < events {}", d[0], c("events"));
    if c("errors") == 0 {
        assert_eq!(d[2] + d[3] + d[4], c("writes"), "rows inserted+updated+deleted = write statements");
        assert_eq!(d[2], c("events"), "one insert per event");
    } else {
        eprintln!("{} events hit errors (deadlocks): the row counts are checked only as bounds", c("errors"));
        assert!(d[2] >= c("events") && d[2] + d[3] + d[4] >= c("writes"), "{d:?}");
    }
    merged_text_has_the_totals(dir, &files, &doc);
    doc
}

// ---------------------------------------------------------------------------
// Shards on simulated hosts: network namespaces joined by veth links, the
// database servers listening only on an address inside one of them.

/// The address of the server namespace's bridge, where the servers listen.
const NETLAB_SERVER: &str = "10.77.0.1";

/// Network namespaces for one test: `srv`, with a bridge at
/// [`NETLAB_SERVER`]/24, and `clients` namespaces (client host I at
/// 10.77.0.(10+I)), each joined to the bridge by a veth link. The names
/// carry this process's id and a counter, so parallel tests never share
/// one; the addresses exist only inside these namespaces. On drop (also
/// when a test fails) the servers started in them are stopped and the
/// namespaces removed.
struct NetLab {
    names: Vec<String>,
    servers: Vec<(std::process::Child, libc::c_int)>,
}

impl NetLab {
    /// None (with the reason printed) where namespaces cannot be made: not
    /// root, or no `ip netns`; under CI=true as root, that is a failure.
    fn new(clients: usize) -> Option<NetLab> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            common::skipped("network namespace tests need root (CI runs them as root)");
            return None;
        }
        let base = format!("dbbench-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let mut lab = NetLab { names: Vec::new(), servers: Vec::new() };
        let srv = format!("{base}-srv");
        if let Err(e) = ip(&["netns", "add", &srv]) {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("ip netns add failed under CI as root: {e}");
            }
            common::skipped(&format!("cannot create a network namespace ({e})"));
            return None;
        }
        lab.names.push(srv.clone());
        let setup = |lab: &mut NetLab| -> Result<(), String> {
            ip(&["-n", &srv, "link", "set", "lo", "up"])?;
            ip(&["-n", &srv, "link", "add", "br0", "type", "bridge"])?;
            ip(&["-n", &srv, "addr", "add", &format!("{NETLAB_SERVER}/24"), "dev", "br0"])?;
            ip(&["-n", &srv, "link", "set", "br0", "up"])?;
            for i in 0..clients {
                let ns = format!("{base}-c{i}");
                ip(&["netns", "add", &ns])?;
                lab.names.push(ns.clone());
                let port = format!("p{i}");
                ip(&[
                    "link", "add", "name", &port, "netns", &srv, "type", "veth", "peer", "name", "eth0", "netns", &ns,
                ])?;
                ip(&["-n", &srv, "link", "set", &port, "master", "br0"])?;
                ip(&["-n", &srv, "link", "set", &port, "up"])?;
                ip(&["-n", &ns, "addr", "add", &format!("10.77.0.{}/24", 10 + i), "dev", "eth0"])?;
                ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
                ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            }
            Ok(())
        };
        if let Err(e) = setup(&mut lab) {
            panic!("setting up network namespaces: {e}");
        }
        Some(lab)
    }

    fn server_ns(&self) -> &str {
        &self.names[0]
    }

    /// `ip netns exec` into client host `i` (modulo the number of clients).
    fn on_client(&self, i: u32) -> Vec<String> {
        let ns = &self.names[1 + i as usize % (self.names.len() - 1)];
        ["ip", "netns", "exec", ns].iter().map(|s| s.to_string()).collect()
    }

    /// Starts `cmd` (a server) inside the server namespace; stopped on drop
    /// with `stop_signal`.
    fn start_server(&mut self, program: &str, args: &[String], log: &Path, stop_signal: libc::c_int) {
        let log = std::fs::File::create(log).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", self.server_ns(), program])
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {program}: {e}"));
        self.servers.push((child, stop_signal));
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        // Never panics (a panic while a failed test unwinds would abort the run).
        for (child, signal) in &mut self.servers {
            // `ip netns exec` and setpriv exec the server: the child is the server.
            // SAFETY: a plain kill(2); the pid is our child's, not yet
            // waited for, so it cannot have been reused by another process.
            unsafe { libc::kill(child.id() as libc::pid_t, *signal) };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for ns in &self.names {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// Runs `ip ARGS`; its stderr as the error.
fn ip(a: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(a).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", a.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Polls `f` every 200 ms until it succeeds, at most `secs` seconds; panics
/// with the last error and `log`'s tail.
fn wait_for<T>(secs: u64, log: &Path, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if std::time::Instant::now() > deadline => {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(20).collect();
                panic!("not ready in {secs} s: {e}\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
}

/// Runs a program to completion; panics with its output on failure.
fn must(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A MariaDB in the lab's server namespace, listening on
/// [`NETLAB_SERVER`]:3306 only (and a socket in `dir` for this test's own
/// queries); sbtest, without a password, reaches it from the client hosts
/// and over the socket. Returns the socket.
fn netlab_mariadb(lab: &mut NetLab, dir: &Path) -> String {
    let (data, tmp, sock, log) = (dir.join("my-data"), dir.join("my-tmp"), dir.join("my.sock"), dir.join("my.err"));
    std::fs::create_dir_all(&tmp).unwrap();
    must(
        Command::new("mariadb-install-db")
            .args(["--no-defaults", "--user=root", "--auth-root-authentication-method=normal"])
            .args(["--skip-test-db", "--skip-name-resolve"])
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display())),
    );
    let server_args: Vec<String> = vec![
        "--no-defaults".into(),
        "--user=root".into(),
        format!("--datadir={}", data.display()),
        format!("--tmpdir={}", tmp.display()),
        format!("--socket={}", sock.display()),
        "--port=3306".into(),
        format!("--bind-address={NETLAB_SERVER}"),
        "--skip-name-resolve".into(),
        "--innodb-buffer-pool-size=128M".into(),
        "--innodb-flush-log-at-trx-commit=2".into(),
        "--skip-log-bin".into(),
        "--performance-schema=OFF".into(),
        format!("--log-error={}", log.display()),
    ];
    lab.start_server("/usr/sbin/mariadbd", &server_args, &log, libc::SIGTERM);
    use mysql::prelude::Queryable;
    let sock = sock.display().to_string();
    let mut root = wait_for(60, &log, || {
        let opts = mysql::OptsBuilder::new().socket(Some(sock.clone())).user(Some("root"));
        mysql::Conn::new(opts).map_err(|e| e.to_string())
    });
    for sql in [
        "CREATE USER 'sbtest'@'10.77.0.%'",
        "GRANT ALL PRIVILEGES ON *.* TO 'sbtest'@'10.77.0.%'",
        "CREATE USER 'sbtest'@'localhost'",
        "GRANT ALL PRIVILEGES ON *.* TO 'sbtest'@'localhost'",
        "CREATE DATABASE sbtest",
    ] {
        root.query_drop(sql).unwrap();
    }
    sock
}

/// A PostgreSQL in the lab's server namespace, listening on
/// [`NETLAB_SERVER`]:5432 only (and a socket directory in `dir` for this
/// test's own queries), run as the `postgres` OS user; sbtest, a superuser
/// trusted from the client hosts, owns database sbtest. Returns the socket
/// directory.
fn netlab_postgresql(lab: &mut NetLab, dir: &Path) -> String {
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists())
        .max_by_key(|b| b.parent().unwrap().file_name().unwrap().to_string_lossy().parse::<u32>().unwrap_or(0))
        .expect("PostgreSQL under /usr/lib/postgresql");
    let (data, run, log) = (dir.join("pg-data"), dir.join("pg-run"), dir.join("pg.log"));
    for d in [&data, &run] {
        std::fs::create_dir_all(d).unwrap();
        must(Command::new("chown").arg("postgres:").arg(d));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let as_postgres = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--"];
    must(
        Command::new("setpriv")
            .args(as_postgres)
            .arg(bin.join("initdb"))
            .args(["-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "-D"])
            .arg(&data),
    );
    let hba = data.join("pg_hba.conf");
    std::fs::write(&hba, "local all all trust\nhost all all 10.77.0.0/24 trust\n").unwrap();
    must(Command::new("chown").arg("postgres:").arg(&hba));
    let mut server_args: Vec<String> = as_postgres.iter().map(|s| s.to_string()).collect();
    server_args.push(bin.join("postgres").display().to_string());
    for setting in [
        format!("-D{}", data.display()),
        "-clisten_addresses=10.77.0.1".into(),
        "-cport=5432".into(),
        format!("-cunix_socket_directories={}", run.display()),
        "-cfsync=off".into(),
        "-cmax_connections=100".into(),
    ] {
        server_args.push(setting);
    }
    // SIGINT: PostgreSQL's fast shutdown (SIGTERM waits for the clients).
    lab.start_server("setpriv", &server_args, &log, libc::SIGINT);
    let host = run.display().to_string();
    let mut admin = wait_for(60, &log, || {
        postgres::Config::new()
            .host(&host)
            .port(5432)
            .user("postgres")
            .dbname("postgres")
            .connect(postgres::NoTls)
            .map_err(|e| e.to_string())
    });
    admin.batch_execute("CREATE ROLE sbtest SUPERUSER LOGIN").unwrap();
    admin.batch_execute("CREATE DATABASE sbtest OWNER sbtest").unwrap();
    host
}

/// The first column of each row of `sql` in database `db` of the lab's
/// PostgreSQL (socket directory `host`), as text.
fn netlab_pg_query(host: &str, db: &str, sql: &str) -> Vec<String> {
    let mut c =
        postgres::Config::new().host(host).port(5432).user("sbtest").dbname(db).connect(postgres::NoTls).unwrap();
    first_column(&mut c, sql)
}

/// A script whose clients each write to their own table, `pt_<tid>`, one
/// row per event: its number and a random number (a per-thread table, the
/// way scripts partition by thread id).
const PER_THREAD_TABLE: &str = r#"
local con, n
function thread_init()
  con = sysbench.sql.driver():connect()
  n = 0
end
function event()
  n = n + 1
  con:query(string.format("INSERT INTO pt_%d (n, v) VALUES (%d, %d)", sysbench.tid, n,
    sysbench.rand.uniform(1, 1000000000)))
end
function thread_done()
  con:disconnect()
end
"#;

/// PER_THREAD_TABLE, 4 clients for 2 s, from one client host and as 4
/// shards on 4 hosts, in databases `whole` and `sharded` (each with tables
/// pt_0..pt_3 made by `sql`): every client wrote its own table under its
/// global id, the same random numbers in the same order sharded and not,
/// and each table holds as many rows as the merged report's fairness says
/// that client ran events.
fn per_thread_tables_are_the_same_sharded(
    lab: &NetLab,
    dir: &Path,
    base: &dyn Fn(&str) -> Vec<String>,
    sql: &dyn Fn(&str, &str) -> Vec<String>,
) {
    std::fs::write(dir.join("per_thread_table.lua"), PER_THREAD_TABLE).unwrap();
    for db in ["whole", "sharded"] {
        for t in 0..4 {
            sql(db, &format!("CREATE TABLE pt_{t} (n INTEGER PRIMARY KEY, v BIGINT NOT NULL)"));
        }
    }
    let run = ["per_thread_table.lua", "run", "--threads=4", "--time=2", "--rand-seed=7"];
    let whole = base("whole");
    let r = dbbench_on(dir, &lab.on_client(0), &args(&whole, &run));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let sharded = base("sharded");
    let (files, runs) = run_shards_on(dir, 4, &args(&sharded, &run), &[], &|i| lab.on_client(i));
    for r in &runs {
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    let doc = merged_totals(dir, &files);
    let fairness = doc["fairness"].as_array().unwrap();
    assert_eq!(fairness.len(), 4);
    for (t, client) in fairness.iter().enumerate() {
        let q = format!("SELECT v FROM pt_{t} ORDER BY n");
        let (a, b) = (sql("whole", &q), sql("sharded", &q));
        assert_eq!(b.len() as u64, client["events"].as_u64().unwrap(), "client {t}: rows vs its events");
        let n = a.len().min(b.len());
        assert!(n > 10, "client {t}: {} and {} rows", a.len(), b.len());
        assert_eq!(a[..n], b[..n], "client {t}: the same random numbers sharded and unsharded");
    }
}

/// Prints the start skew of a merged netns run (the figure docs/performance.md
/// records; not asserted: this host's scheduling decides it).
fn print_skew(what: &str, doc: &serde_json::Value) {
    let after: Vec<String> = doc["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{:.2}", s["after_start_at_ms"].as_f64().unwrap_or(f64::NAN)))
        .collect();
    eprintln!(
        "start skew across {} netns shards ({what}): {:.2} ms on {}; each shard's start after --start-at: {} ms",
        after.len(),
        doc["start_skew_ms"].as_f64().unwrap(),
        doc["start_skew_clock"].as_str().unwrap_or("?"),
        after.join(", ")
    );
}

/// A MariaDB on a simulated host (a network namespace), 4 shards of
/// oltp_read_write on 4 others: the merged report (JSON and sysbench's text
/// layout) holds the shards' sums, which are the server's own counters;
/// a script with per-thread tables behaves the same sharded and unsharded.
#[test]
fn netns_shards_on_mariadb_match_the_server_counters() {
    let Some(mut lab) = NetLab::new(4) else { return };
    let dir = tempdir("shards-netns-mysql");
    let sock = netlab_mariadb(&mut lab, &dir);
    let base = |db: &str| -> Vec<String> {
        vec![
            "--db-driver=mysql".into(),
            format!("--mysql-host={NETLAB_SERVER}"),
            "--mysql-port=3306".into(),
            "--mysql-user=sbtest".into(),
            format!("--mysql-db={db}"),
        ]
    };
    // prepare runs once, from client host 0; shard I on client host I.
    let doc = oltp_shards_match_mariadb_counters(&dir, &base("sbtest"), &sock, &|i| lab.on_client(i));
    print_skew("MariaDB, oltp_read_write", &doc);

    let sock2 = sock.clone();
    let sql = move |db: &str, q: &str| -> Vec<String> {
        use mysql::prelude::Queryable;
        let opts = mysql::OptsBuilder::new().socket(Some(sock2.clone())).user(Some("sbtest"));
        let mut c = mysql::Conn::new(opts).unwrap();
        c.query_drop(format!("CREATE DATABASE IF NOT EXISTS {db}")).unwrap();
        c.select_db(db).unwrap();
        let rows: Vec<mysql::Row> = c.query(q).unwrap();
        rows.into_iter().map(|r| r.get::<String, _>(0).unwrap_or_default()).collect()
    };
    per_thread_tables_are_the_same_sharded(&lab, &dir, &base, &sql);
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A PostgreSQL on a simulated host, 4 shards of oltp_read_write on 4
/// others: the merged report holds the shards' sums, which are the
/// server's own row and transaction counters; a script with per-thread
/// tables behaves the same sharded and unsharded.
#[test]
fn netns_shards_on_postgresql_match_the_server_counters() {
    let Some(mut lab) = NetLab::new(4) else { return };
    let dir = tempdir("shards-netns-pgsql");
    let host = netlab_postgresql(&mut lab, &dir);
    let base = |db: &str| -> Vec<String> {
        vec![
            "--db-driver=pgsql".into(),
            format!("--pgsql-host={NETLAB_SERVER}"),
            "--pgsql-port=5432".into(),
            "--pgsql-user=sbtest".into(),
            format!("--pgsql-db={db}"),
        ]
    };
    let query = |sql: &str| netlab_pg_query(&host, "sbtest", sql);
    let doc = oltp_shards_match_postgresql_counters(&dir, &base("sbtest"), 4, "sbtest", &query, &|i| lab.on_client(i));
    print_skew("PostgreSQL, oltp_read_write", &doc);
    assert!(doc["start_skew_clock"].as_str().unwrap().contains("clock_timestamp"), "{}", doc["start_skew_clock"]);

    let sql = |db: &str, q: &str| -> Vec<String> {
        if netlab_pg_query(&host, "sbtest", &format!("SELECT 1 FROM pg_database WHERE datname = '{db}'")).is_empty() {
            netlab_pg_query(&host, "sbtest", &format!("CREATE DATABASE {db}"));
        }
        netlab_pg_query(&host, db, q)
    };
    per_thread_tables_are_the_same_sharded(&lab, &dir, &base, &sql);
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs 4 shards of `workload` (a built-in or a script; one client each,
/// `--time=4`) on one table of `rows` rows (prepared by oltp_common through
/// `base`) with shard 1 stopped (SIGSTOP) from 1.5 s into the run for 8 s;
/// returns the shards' outcomes and the merge's.
fn four_shards_with_shard_1_frozen(dir: &Path, base: &[String], workload: &str, rows: &str) -> (Vec<Run>, Run) {
    let size = format!("--table-size={rows}");
    let prep = dbbench_in(dir, &args(base, &["oltp_point_select", "prepare", "--tables=1", &size]));
    assert_eq!(prep.code, 0, "{}{}", prep.stdout, prep.stderr);
    let mut run = vec![workload, "run", "--threads=4", "--time=4", "--report-interval=1"];
    if !workload.ends_with(".lua") {
        run.extend(["--tables=1", &size]);
    }
    let run = args(base, &run);
    let mut freeze = |at: std::time::SystemTime, pids: &[u32]| {
        let into_run = at + std::time::Duration::from_millis(1500);
        std::thread::sleep(into_run.duration_since(std::time::SystemTime::now()).unwrap_or_default());
        // SAFETY: kill(2) on a child of ours that has not been waited for.
        unsafe { libc::kill(pids[1] as i32, libc::SIGSTOP) };
        std::thread::sleep(std::time::Duration::from_secs(8));
        // SAFETY: as above.
        unsafe { libc::kill(pids[1] as i32, libc::SIGCONT) };
    };
    let (files, runs) = run_shards_with(dir, 4, &run, &[], &|_| Vec::new(), &mut freeze);
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut a = vec!["--json"];
    a.extend(names.iter().map(String::as_str));
    (runs, merge(dir, &a))
}

/// Issue 38: a shard stopped for 8 s of a 4 s run passed as `ok` with a
/// quarter of the others' events and the merge exited 0 with a diluted
/// rate. Now the merge names it and exits 2 (a partial result).
#[test]
fn a_frozen_shard_on_postgresql_is_named_and_the_merge_is_partial() {
    let Some(base) = pgsql_db("dbbench_shard_freeze") else { return };
    let dir = tempdir("shard-freeze-pgsql");
    let (runs, m) = four_shards_with_shard_1_frozen(&dir, &base, "oltp_point_select", "1000");
    for (i, r) in runs.iter().enumerate() {
        assert!(r.code == 0 || r.code == 2, "shard {i}: {}{}", r.stdout, r.stderr);
    }
    assert_eq!(m.code, 2, "the merge of a frozen shard passed: {}{}", m.stdout, m.stderr);
    let doc = json(&m.stdout);
    let aborted = doc["aborted"].as_str().unwrap_or_default();
    assert!(aborted.contains("shard 1: frozen") || aborted.contains("shard 1: overran"), "{aborted}");
    let status = |i: usize| doc["shards"][i]["status"].as_str().unwrap_or_default().to_string();
    assert!(status(1).contains("frozen") || status(1).contains("overran"), "shard 1: {}", status(1));
    for i in [0, 2, 3] {
        // Point selects take no locks: the others ran throughout.
        assert_eq!(status(i), "ok", "shard {i}: {}", m.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Client 1 keeps row 1 locked (a transaction around a 20 ms sleep); the
/// other clients update the same row without a transaction of their own.
const ONE_HOT_ROW: &str = r#"
function thread_init() con = sysbench.sql.driver():connect() end
function event()
  if sysbench.tid == 1 then
    con:query("BEGIN")
    con:query("UPDATE sbtest1 SET k = k + 1 WHERE id = 1")
    con:query("SELECT SLEEP(0.02)")
    con:query("COMMIT")
  else
    con:query("UPDATE sbtest1 SET k = k + 1 WHERE id = 1")
  end
end
"#;

/// On MariaDB the frozen shard holds row locks in its open transaction:
/// the others stall behind them, and the merge points at the frozen
/// shard, not at the server (they ended `stalled: … is the server
/// stopped?`).
#[test]
fn a_frozen_shard_holding_locks_on_mariadb_is_blamed_for_the_stall_of_the_others() {
    let _alone = shared_mariadb();
    let Some(base) = mysql_db("dbbench_shard_freeze") else { return };
    let dir = tempdir("shard-freeze-mariadb");
    // Client 1 (shard 1's) holds row 1's lock for nearly all of its
    // events; the others update row 1 and wait for that lock, which InnoDB
    // (lock wait timeout 50 s) holds through the freeze. (With
    // oltp_read_write or oltp_write_only on few rows the freeze often hit
    // the frozen client where it held no lock, or InnoDB chose it as a
    // deadlock victim and released them: the others ran on.)
    let script = dir.join("one_hot_row.lua");
    std::fs::write(&script, ONE_HOT_ROW).unwrap();
    // The freeze may still land in the instant between shard 1's COMMIT
    // and its next UPDATE, when it holds no lock: then the others run on,
    // which is right but tests nothing here. Up to three tries for a
    // freeze that holds the lock (missed once in a CI run).
    let (mut runs, mut m) = (Vec::new(), None);
    for _ in 0..3 {
        let _ = dbbench_in(&dir, &args(&base, &["oltp_point_select", "cleanup", "--tables=1"]));
        let (r, merged) = four_shards_with_shard_1_frozen(&dir, &base, &script.display().to_string(), "10");
        let any_stalled = (0..4).any(|i| i != 1 && r[i].code == 2);
        (runs, m) = (r, Some(merged));
        if any_stalled {
            break;
        }
    }
    let m = m.expect("ran");
    let stalled: Vec<usize> = (0..4).filter(|i| *i != 1 && runs[*i].code == 2).collect();
    assert_eq!(m.code, 2, "{}{}", m.stdout, m.stderr);
    let doc = json(&m.stdout);
    let aborted = doc["aborted"].as_str().unwrap_or_default();
    assert!(aborted.contains("shard 1: frozen") || aborted.contains("shard 1: overran"), "{aborted}");
    assert_eq!(stalled, [0, 2, 3], "not every other shard stalled behind the frozen one's lock: {aborted}");
    for i in stalled {
        let status = doc["shards"][i]["status"].as_str().unwrap_or_default();
        assert!(status.contains("stalled") && status.contains("shard 1 did not run meanwhile"), "shard {i}: {status}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
