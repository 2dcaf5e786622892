//! `dbbench report` and `dbbench compare` over a fixture store whose figures
//! are chosen so that every number the report prints can be worked out by
//! hand (the arithmetic is in the comments), plus the exports read back by
//! independent readers: the HTML page in a real headless Chromium, the
//! spreadsheet with openpyxl.

mod common;

use common::{dbbench_in, tempdir};
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};

/// A histogram of `values_ms` (each recorded once), as the store keeps it.
fn histogram(values_ms: impl Iterator<Item = u64>) -> String {
    use base64::Engine;
    use hdrhistogram::serialization::Serializer;
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for v in values_ms {
        h.record(v * 1000).unwrap();
    }
    let mut buf = Vec::new();
    hdrhistogram::serialization::V2DeflateSerializer::new().serialize(&h, &mut buf).unwrap();
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// The fixture, transactions/s per repeat (NaN: a failed run):
///
/// | configuration | 1 thread        | 4 threads       |
/// |---------------|-----------------|-----------------|
/// | off (base)    | 100, 110, 120   | 200, 200, 200   |
/// | 32            | 200, 210, 190   | 180, 220, 200   |
/// | 64            | 300, 330, failed| 500             |
///
/// off at 1 thread has latency histograms of 1..100, 101..200 and 201..300 ms.
const CONFIGS: [&str; 3] = ["off", "32", "64"];

fn fixture_values(config: usize, threads: u32) -> Vec<f64> {
    match (config, threads) {
        (0, 1) => vec![100.0, 110.0, 120.0],
        (0, _) => vec![200.0, 200.0, 200.0],
        (1, 1) => vec![200.0, 210.0, 190.0],
        (1, _) => vec![180.0, 220.0, 200.0],
        (_, 1) => vec![300.0, 330.0, f64::NAN],
        _ => vec![500.0],
    }
}

/// A real lab run makes the store (schema and all): experiment 'cmd', a
/// command workload whose metric is called `tps`, configurations a and b,
/// 2 repeats: a reports 100 + repeat, b 150 + repeat.
fn lab_store(dir: &Path) -> PathBuf {
    let spec = dir.join("cmd.toml");
    std::fs::write(
        &spec,
        r#"
[experiment]
name = "cmd"
threads = [1]
repeats = 2
time = 1

[[configuration]]
name = "a"
server = "sqlite"
prepare = "none"

[[configuration]]
name = "b"
server = "sqlite"
prepare = "none"

[[workload]]
name = "echo"
command = ["sh", "-c", "if [ {configuration} = a ]; then echo tps = $((100 + {repeat})); else echo tps = $((150 + {repeat})); fi"]
metrics = { tps = 'tps = ([0-9.]+)' }
"#,
    )
    .unwrap();
    let r = dbbench_in(dir, &["lab", "run", &spec.display().to_string()]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    dir.join("dbbench-lab/results.sqlite")
}

/// Adds one experiment to the store of `lab_store` (made on first use).
/// `names` replaces the configuration names (for the escaping test).
fn fixture(dir: &Path, experiment: &str, names: [&str; 3], workload: &str) -> PathBuf {
    let path = dir.join("dbbench-lab/results.sqlite");
    if !path.exists() {
        lab_store(dir);
    }
    let c = Connection::open(&path).unwrap();
    let spec = format!(
        "[experiment]\nname = \"{experiment}\"\n\n[[workload]]\nname = '{workload}'\ntest = \"select_random_points\"\n"
    );
    c.execute(
        "INSERT INTO experiments (name, description, spec_path, spec_text, spec_hash, status, started_at, finished_at, dbbench_version, host, settings)
         VALUES (?1, 'fixture <&>', 'x.toml', ?2, 'h', 'finished', '2026-01-01T00:00:00.000Z', '2026-01-01T01:00:00.000Z', '0.1.0', ?3, ?4)",
        params![experiment, spec, r#"{"hostname":"h<1>","cpu_model":"Test CPU","logical_cpus":2}"#, r#"{"repeats":3,"time_s":60,"warmup_s":10,"order":"interleaved","seed":303}"#],
    )
    .unwrap();
    let e = c.last_insert_rowid();
    let mut seq = 0;
    for (i, name) in names.iter().enumerate() {
        let vars = format!(r#"{{"key_cache_segments":"{}","port":"{}","version":"10.11"}}"#, [0, 32, 64][i], 3306 + i);
        c.execute(
            "INSERT INTO configurations (experiment_id, position, name, kind, definition, server_version, variables) VALUES (?1, ?2, ?3, 'mariadb', '{}', '10.11.6', ?4)",
            params![e, i as i64, name, vars],
        )
        .unwrap();
        let conf = c.last_insert_rowid();
        for threads in [1u32, 4] {
            c.execute(
                "INSERT INTO cells (experiment_id, configuration_id, workload, threads) VALUES (?1, ?2, ?3, ?4)",
                params![e, conf, workload, threads],
            )
            .unwrap();
            let cell = c.last_insert_rowid();
            for (r, v) in fixture_values(i, threads).into_iter().enumerate() {
                seq += 1;
                let ok = v.is_finite();
                let hist = (i == 0 && threads == 1).then(|| histogram((1..=100).map(|x| x + 100 * r as u64)));
                c.execute(
                    "INSERT INTO runs (cell_id, \"repeat\", seq, status, error, started_at, ended_at, argv, seed, cache, server_restarted, overhead,
                                       time_s, events, tps, qps, rw_qps, latency_avg_ms, latency_p95_ms, latency_max_ms, histogram)
                     VALUES (?1, ?2, ?3, ?4, ?5, '2026-01-01T00:00:00.000Z', '2026-01-01T00:01:00.000Z', '[]', ?6, 'warm', 1, '{}',
                             60, ?7, ?8, ?9, ?10, ?11, 9.0, ?12, ?13)",
                    params![
                        cell,
                        r as i64 + 1,
                        seq,
                        if ok { "ok" } else { "failed" },
                        (!ok).then_some("exited with Some(1): FATAL: <lost connection>"),
                        303 + r as i64,
                        ok.then_some((v * 60.0) as i64),
                        ok.then_some(v),
                        ok.then_some(v * 10.0),
                        ok.then_some(v * 8.0),
                        ok.then_some(2000.0 / v),
                        hist.as_ref().map(|_| 100.0 * (r as f64 + 1.0)),
                        hist,
                    ],
                )
                .unwrap();
                let run = c.last_insert_rowid();
                for t in 0..3 {
                    let time = t as f64 - 1.0; // -1, 0: warmup; 1: measured
                    c.execute(
                        "INSERT INTO run_intervals (run_id, time_s, tps, qps) VALUES (?1, ?2, ?3, ?4)",
                        params![run, time, v.max(0.0) + t as f64, v * 10.0],
                    )
                    .unwrap();
                }
            }
        }
    }
    path
}

fn report(dir: &Path, store: &Path, extra: &[&str]) -> common::Run {
    let s = format!("--store={}", store.display());
    let mut args = vec!["report", s.as_str()];
    args.extend(extra);
    dbbench_in(dir, &args)
}

/// The whitespace-separated fields of the first line that starts (after indentation) with `label`.
fn row<'a>(text: &'a str, label: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no row '{label}' in:\n{text}"));
    line.trim_start()[label.len()..].split_whitespace().collect()
}

#[test]
fn tables_match_hand_computed_figures() {
    let dir = tempdir("report-fixture");
    let store = fixture(&dir, "segmented", CONFIGS, "points-10");
    let r = report(&dir, &store, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = &r.stdout;
    // Relative change, (a/b*100)-100 of the means:
    //   32 at 1 thread: 200 / 110 = 1.8182 → 81.8% → "82%"; the baseline's sd is
    //   10, cv 10/110 = 9.1% > 5% → "*". At 4 threads: 200 / 200 → "0.0%"; the
    //   variant's sd is 20 (cv 10%) → "*", and its interval includes 1 → "~".
    //   64 at 1 thread: (300+330)/2 = 315 / 110 → 186.4% → "186%"; cv of 64 is
    //   21.2/315 = 6.7% → "*". At 4 threads one repeat: 500/200 → "150%", no interval "?".
    assert_eq!(row(t, "32 / off"), ["82%*", "0.0%*~"], "{t}");
    assert_eq!(row(t, "64 / off"), ["186%*", "150%?"], "{t}");
    // Fieller's 95% interval of 200/110, each side n = 3, sd 10 (sem² = 100/3 = 33.33):
    //   df = (va + ρ²vb)² / (va²/2 + ρ⁴vb²/2) with ρ = 1.8182 → 3.1086; t(0.975, 3.1086) = 3.1205;
    //   bounds (ā·b̄ ∓ t·√(ā²vb + b̄²va − t²va·vb)) / (b̄² − t²vb) = 1.52016, 2.21643 → 52% .. 122%.
    //   4 threads, the baseline exact (sd 0): the variant's own t interval, 200 ± 4.303·20/√3
    //   = 150.3 .. 249.7, over 200 → -24.8% .. 24.8%. (Checked with scipy 1.17.)
    let ci = t.split("confidence intervals").nth(1).expect("interval table");
    assert_eq!(row(ci, "32 / off"), ["52%", "..", "122%", "-25%", "..", "25%"], "{ci}");
    // Absolute: off at 1 thread mean 110, cv 9.1%; 64 at 1 thread n = 2 (one run failed).
    let abs = t.split("transactions/s, absolute").nth(1).expect("absolute table");
    assert_eq!(row(abs, "off"), ["110.0", "±9.1%*", "200.0", "±0.0%"], "{abs}");
    assert_eq!(row(abs, "64"), ["315.0", "±6.7%*", "(n=2)", "500.0", "(n=1)"], "{abs}");
    // Pooled latency of off at 1 thread: 300 events of 1..300 ms; nearest rank
    // p95 = the 285th = 285 ms, p99 = the 297th = 297 ms, HDR within 0.1%.
    let p95 = t.split("95th percentile").nth(1).expect("p95 table");
    let v: f64 = row(p95, "off")[0].parse().unwrap();
    assert!((v - 285.0).abs() <= 0.3, "{v}");
    let p99 = t.split("99th percentile").nth(1).expect("p99 table");
    let v: f64 = row(p99, "off")[0].parse().unwrap();
    assert!((v - 297.0).abs() <= 0.3, "{v}");
    // Legends say what the marks mean; warnings say what is thin.
    assert!(t.contains("* high spread: the coefficient of variation (sd/mean) over repeats is above 5%"), "{t}");
    assert!(t.contains("~ not significant: the 95% confidence interval of the ratio includes no difference"), "{t}");
    assert!(t.contains("? fewer than 2 ok repeats on a side"), "{t}");
    assert!(t.contains("warning: 2 of 6 cells have fewer than 3 ok repeats"), "{t}");
    assert!(t.contains("warning: 1 run(s) failed"), "{t}");
    assert!(t.contains("64 / points-10 / 1 thr / repeat 3") && t.contains("FATAL: <lost connection>"), "{t}");

    // Ratio style and a chosen baseline: 32 as the base, off / 32 at 1 thread = 110/200×100 = 55.00.
    let r = report(&dir, &store, &["--style=ratio", "--baseline=32"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(row(&r.stdout, "off / 32")[0], "55.00*", "{}", r.stdout);
    assert!(r.stdout.contains("(off tps / 32 tps * 100): 100 is parity"), "{}", r.stdout);
    // Two decimals without %, as the 2010 pages printed them: 81.82.
    let r = report(&dir, &store, &["--decimals=2"]);
    assert_eq!(row(&r.stdout, "32 / off")[0], "81.82*", "{}", r.stdout);
    // Another metric: rw_qps is 8× tps in the fixture, the relative change the same.
    let r = report(&dir, &store, &["--metric=rw_qps"]);
    assert_eq!(row(&r.stdout, "32 / off"), ["82%*", "0.0%*~"], "{}", r.stdout);
    assert!(r.stdout.contains("q/s (reads + writes per second"), "{}", r.stdout);
    // A looser spread limit drops the stars where cv <= 10%.
    let r = report(&dir, &store, &["--cv-limit=10"]);
    assert_eq!(row(&r.stdout, "32 / off"), ["82%", "0.0%~"], "{}", r.stdout);

    // A command workload is compared by its own metric, here named tps:
    // b (151, 152) against a (101, 102): 151.5 / 101.5 → 49%, also with --metric=tps.
    for extra in [None, Some("--metric=tps")] {
        let mut args = vec!["--experiment=cmd"];
        args.extend(extra);
        let r = report(&dir, &store, &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(row(&r.stdout, "echo")[0], "49%", "{}", r.stdout);
    }

    // Markdown: the same cells in a table.
    let r = report(&dir, &store, &["--format=markdown"]);
    assert!(r.stdout.contains("| &nbsp;&nbsp;32 / off | 82%\\* | 0.0%\\*\\~ |"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exports_carry_the_same_figures() {
    let dir = tempdir("report-exports");
    let store = fixture(&dir, "segmented", CONFIGS, "points-10");
    let r = report(
        &dir,
        &store,
        &[
            "--quiet",
            "--export-json=out/r.json",
            "--export-csv=out/r.csv",
            "--export-markdown=out/r.md",
            "--export-xlsx=out/r.xlsx",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "--quiet: {}", r.stdout);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/r.json")).unwrap()).unwrap();
    assert_eq!(doc["schema"], "dbbench-report");
    let cmp = doc["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["configuration"] == "32" && c["threads"] == 1)
        .unwrap();
    assert!((cmp["ratio"].as_f64().unwrap() - 200.0 / 110.0).abs() < 1e-12);
    assert!((cmp["ci"]["lo"].as_f64().unwrap() - 1.520_164_173_99).abs() < 1e-8, "{cmp}");
    assert!((cmp["ci"]["hi"].as_f64().unwrap() - 2.216_433_291_52).abs() < 1e-8, "{cmp}");
    // Welch's t-test, scipy.stats.ttest_ind([200,210,190], [100,110,120], equal_var=False).pvalue
    assert!((cmp["p_value"].as_f64().unwrap() - 0.000_385_067_711).abs() < 1e-9, "{cmp}");
    assert_eq!(cmp["marks"], "*");
    let cell =
        doc["cells"].as_array().unwrap().iter().find(|c| c["configuration"] == "off" && c["threads"] == 1).unwrap();
    assert_eq!(cell["values"], serde_json::json!([100.0, 110.0, 120.0]));
    // t interval of the mean, 110 ± 4.3027·10/√3 = 85.1586 .. 134.8414
    assert!((cell["mean_ci"][0].as_f64().unwrap() - 85.158_622_882).abs() < 1e-6, "{cell}");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 16);
    // No interval (64 at 4 threads has one repeat): significance is not decided.
    let one = doc["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["configuration"] == "64" && c["threads"] == 4)
        .unwrap();
    assert_eq!(
        (&one["significant"], &one["ci"]["kind"]),
        (&serde_json::Value::Null, &serde_json::json!("unavailable"))
    );

    let csv = std::fs::read_to_string(dir.join("out/r.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let line = csv.lines().find(|l| l.starts_with("segmented,points-10,64,4,")).unwrap();
    let f: Vec<&str> = line.split(',').collect();
    let col = |name: &str| f[head.iter().position(|h| *h == name).unwrap()];
    assert_eq!((col("n"), col("mean"), col("ratio"), col("ci"), col("marks")), ("1", "500", "2.5", "unavailable", "?"));

    // The spreadsheet, read by openpyxl (Debian's python3-openpyxl).
    let py = Path::new("/usr/bin/python3");
    let have = py.exists()
        && std::process::Command::new(py).args(["-c", "import openpyxl"]).status().is_ok_and(|s| s.success());
    if !have {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python3-openpyxl is required under CI (scripts/test.sh installs it)"
        );
        common::skipped("the spreadsheet check: python3-openpyxl not installed");
    } else {
        let out = std::process::Command::new(py)
            .args([
                "-c",
                "import json,sys,openpyxl\nwb=openpyxl.load_workbook(sys.argv[1])\nprint(json.dumps([[ws.title, [[c.value for c in r] for r in ws.iter_rows()]] for ws in wb.worksheets]))",
                &dir.join("out/r.xlsx").display().to_string(),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let sheets: Vec<(String, serde_json::Value)> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            sheets.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
            ["relative", "absolute", "cells", "runs", "info"]
        );
        let wb: serde_json::Map<String, serde_json::Value> = sheets.into_iter().collect();
        let rel = wb["relative"].as_array().unwrap();
        let r32 = rel.iter().find(|r| r[2] == "32 / off").unwrap();
        assert!((r32[3].as_f64().unwrap() - (200.0 / 110.0 * 100.0 - 100.0)).abs() < 1e-9, "{r32}");
        assert!((r32[4].as_f64().unwrap()).abs() < 1e-9, "{r32}");
        let marks = rel.iter().filter(|r| r[2] == "32 / off").nth(1).unwrap();
        assert_eq!((&marks[3], &marks[4]), (&serde_json::json!("*"), &serde_json::json!("*~")));
        let abs = wb["absolute"].as_array().unwrap();
        assert_eq!(abs.iter().find(|r| r[2] == "off").unwrap()[3], 110.0);
        assert_eq!(wb["runs"].as_array().unwrap().len(), 17, "header + 16 runs");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A real `--format=json` document: a driverless script's short run.
fn run_document(dir: &std::path::Path) -> serde_json::Value {
    let script = dir.join("noop.lua");
    std::fs::write(&script, "function event() end\n").unwrap();
    let r = dbbench_in(dir, &[&script.display().to_string(), "run", "--events=100", "--threads=4", "--format=json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn compare_gives_hyperfine_style_sentences() {
    let dir = tempdir("report-compare");
    let store = fixture(&dir, "segmented", CONFIGS, "points-10");
    let s = format!("--store={}", store.display());
    let r = dbbench_in(&dir, &["compare", "segmented/off", "segmented/32", &s]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // 200/110 = 1.82; se = √(sem_a² + ρ²·sem_b²)/b̄ = √(33.33 + 3.306·33.33)/110 = 0.11.
    let line = r.stdout.lines().find(|l| l.starts_with("points-10, 1 threads")).unwrap();
    assert!(line.ends_with("B is 1.82 ± 0.11 times faster than A (95% CI 1.52 to 2.22; n = 3 vs 3)"), "{line}");
    // 32 at 4 threads (180, 220, 200) against off (200, 200, 200): B/A = 1.00, Fieller's interval
    // 200 ± 4.303 × 11.55 over 200 = 0.75 .. 1.25 includes 1: no claim of "faster".
    let line = r.stdout.lines().find(|l| l.starts_with("points-10, 4 threads")).unwrap();
    assert!(
        line.ends_with("no significant difference: B's tps is 1.00 ± 0.06 times A's (95% CI 0.75 to 1.25; n = 3 vs 3)"),
        "{line}"
    );
    // A and B are named in the order given.
    assert!(r.stdout.starts_with("segmented/off vs segmented/32, "), "{}", r.stdout);
    // A cell against a cell, latency: less is better.
    let r = dbbench_in(
        &dir,
        &["compare", "segmented/32/points-10/1", "segmented/off/points-10/1", "--metric=latency_avg", &s],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // latency_avg is 2000/tps ms: off 20, 18.18, 16.67 (mean 18.283) against 32's 10, 9.52,
    // 10.53 (mean 10.017); less is better, so 32 (A) is 18.283 / 10.017 = 1.83 times faster.
    assert!(r.stdout.contains("A is 1.83 ± 0.11 times faster than B"), "{}", r.stdout);
    // Two runs' JSON reports (dbbench ... run --format=json), no store needed:
    // a real run's document, its rate set to what is compared.
    let document = run_document(&dir);
    let with = |events_per_s: f64, aborted: serde_json::Value| {
        let mut d = document.clone();
        d["rates_per_s"]["events"] = events_per_s.into();
        d["aborted"] = aborted;
        d.to_string()
    };
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::write(&a, with(100.0, serde_json::Value::Null)).unwrap();
    std::fs::write(&b, with(150.0, serde_json::Value::Null)).unwrap();
    let r = dbbench_in(&dir, &["compare", &a.display().to_string(), &b.display().to_string()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("B is 1.50 times faster than A (no interval: fewer than 2 repeats on a side; n = 1 vs 1)"),
        "{}",
        r.stdout
    );
    // The better side is named first, with its own n: 64 (315, n = 2) against off (110, n = 3).
    let r = dbbench_in(&dir, &["compare", "segmented/64/points-10/1", "segmented/off/points-10/1", &s]);
    assert!(
        r.stdout.contains("A is 2.86 ± ")
            && r.stdout.contains("times faster than B")
            && r.stdout.contains("n = 2 vs 3)"),
        "{}",
        r.stdout
    );
    // A command workload's own metric named tps is what it is compared by
    // (a: 101, 102; b: 151, 152 → 151.5 / 101.5 = 1.49), by default and by name.
    for extra in [None, Some("--metric=tps")] {
        let mut args = vec!["compare", "cmd/a", "cmd/b", s.as_str()];
        args.extend(extra);
        let r = dbbench_in(&dir, &args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stdout.contains("B's tps is 1.49"), "{}", r.stdout);
    }
    // A run that did not finish is not compared.
    let aborted = dir.join("aborted.json");
    std::fs::write(&aborted, with(150.0, "forced shutdown with 3 unfinished events".into())).unwrap();
    let r = dbbench_in(&dir, &["compare", &a.display().to_string(), &aborted.display().to_string()]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("the run did not finish (forced shutdown with 3 unfinished events)"), "{}", r.stderr);
    // A document without a figure (an older or edited file, a renamed field)
    // is refused with one line naming the field, never compared as 0.
    for (object, key) in [(None, "rates_per_s"), (Some("rates_per_s"), "events"), (Some("latency"), "percentiles_ms")] {
        let mut d = document.clone();
        match object {
            Some(o) => d[o].as_object_mut().unwrap().remove(key),
            None => d.as_object_mut().unwrap().remove(key),
        };
        let broken = dir.join("broken.json");
        std::fs::write(&broken, serde_json::to_string_pretty(&d).unwrap()).unwrap();
        let r = dbbench_in(&dir, &["compare", &a.display().to_string(), &broken.display().to_string()]);
        assert_eq!(r.code, 1, "{key}: {}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("broken.json: not a valid dbbench JSON report: missing field `{key}` at line ")),
            "{}",
            r.stderr
        );
    }
    // Unlike kinds, unknown names: one line and exit 1.
    for (args, msg) in [
        (
            vec!["compare", "segmented", "segmented/32"],
            "'segmented' is an experiment and 'segmented/32' a configuration: compare like with like",
        ),
        (vec!["compare", "segmented/none", "segmented/32"], "experiment 'segmented' has no configuration 'none'"),
        (vec!["compare", "nope/off", "segmented/32"], "no experiment 'nope'"),
        (vec!["compare", "segmented/off"], "compare takes two things to compare, got 1"),
    ] {
        let mut args = args.clone();
        args.push(&s);
        let r = dbbench_in(&dir, &args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(msg), "{args:?}: {}", r.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_one_line() {
    let dir = tempdir("report-bad");
    let store = fixture(&dir, "segmented", CONFIGS, "points-10");
    let s = format!("--store={}", store.display());
    let missing = dir.join("missing.sqlite");
    let missing_arg = format!("--store={}", missing.display());
    // A file that is not a dbbench store is refused and left as it was.
    let empty = dir.join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    let foreign = dir.join("foreign.sqlite");
    Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE app (a INT); INSERT INTO app VALUES (1);").unwrap();
    let foreign_before = std::fs::read(&foreign).unwrap();
    let (empty_arg, foreign_arg) = (format!("--store={}", empty.display()), format!("--store={}", foreign.display()));
    for (args, msg) in [
        (vec!["report", missing_arg.as_str()], format!("no results store at {}", missing.display())),
        (vec!["report", &empty_arg], "is not a dbbench results store (it has no dbbench schema)".to_string()),
        (vec!["report", &foreign_arg], "is not a dbbench results store (it has no dbbench schema)".to_string()),
        (vec!["compare", "x/a", "x/b", &foreign_arg], "is not a dbbench results store".to_string()),
        (
            vec!["report", &s, "--metric=tsp"],
            "--metric=tsp: no run of experiment 'segmented' has this figure; use tps, qps".to_string(),
        ),
        (vec!["report", &s, "--experiment=nope"], "no experiment 'nope' in".to_string()),
        (
            vec!["report", &s, "--baseline=128"],
            "--baseline=128: no such configuration in experiment 'segmented'; it has off, 32, 64".to_string(),
        ),
        (vec!["report", &s, "--style=sideways"], "--style=sideways: use relative or ratio".to_string()),
        (vec!["report", &s, "--level=2"], "--level=2: use a confidence level between 0.5 and 1".to_string()),
        (vec!["report", &s, "--percentiles=95,abc"], "--percentiles: 'abc' is not a percentile".to_string()),
        (vec!["report", &s, "--export-pdf=x.pdf"], "unknown export --export-pdf".to_string()),
        (vec!["report", &s, "--bogus"], "unknown option '--bogus'".to_string()),
    ] {
        let r = dbbench_in(&dir, &args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(&msg), "{args:?}: {}", r.stderr);
    }
    // An error with context through layers is one whole line: every
    // context, outermost first, then the cause (the one place that prints
    // errors joins them with ": ").
    let missing_spec = dir.join("missing.toml");
    let missing_json = dir.join("missing.json");
    for (args, line) in [
        (
            vec!["report".to_string(), missing_spec.display().to_string()],
            format!(
                "dbbench report: {}: cannot read the spec: No such file or directory (os error 2)",
                missing_spec.display()
            ),
        ),
        (
            vec!["compare".to_string(), missing_json.display().to_string(), missing_json.display().to_string()],
            format!("dbbench compare: {}: No such file or directory (os error 2)", missing_json.display()),
        ),
    ] {
        let r = dbbench_in(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert_eq!(r.stderr, format!("{line}\n"), "{args:?}");
    }
    // Looking for a store creates or changes nothing.
    assert!(!missing.exists());
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
    assert_eq!(std::fs::read(&foreign).unwrap(), foreign_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Headless Chromium from Debian's package, as the machine's probe runs it.
fn chromium() -> Option<&'static str> {
    let path = "/usr/bin/chromium";
    if Path::new(path).exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "chromium is required under CI (scripts/test.sh installs it)"
    );
    common::skipped("chromium not installed");
    None
}

fn chromium_run(dir: &Path, extra: &[&str], page: &Path) -> (String, String) {
    let profile = dir.join(format!("chromium-profile-{}", extra.len()));
    // Bounded: a browser that hangs ends the test, not the CI run.
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["--kill-after=5", "90", chromium().unwrap()]);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        &format!("--user-data-dir={}", profile.display()),
    ]);
    cmd.args(extra).arg(format!("file://{}", page.display()));
    let out = cmd.current_dir(dir).output().expect("run chromium");
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn html_report_renders_in_chromium_and_escapes_user_text() {
    let Some(_) = chromium() else { return };
    let dir = tempdir("report-html");
    // Hostile names in configurations and the workload: they must come out as text.
    let names = ["<script>alert('off')</script>", "a&b \"32\"", "<img src=x onerror=alert(1)>"];
    let store = fixture(&dir, "hostile", names, "</title><b>w</b>");
    let page = dir.join("report.html");
    let r = report(&dir, &store, &["--quiet", &format!("--export-html={}", page.display())]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    for bad in ["<script>alert", "<img src=x", "<b>w</b>", "</title><b>", "<lost connection>", "fixture <&>", "h<1>"] {
        assert!(!html.contains(bad), "unescaped {bad:?} in the page");
    }
    assert!(
        html.contains("&lt;script&gt;alert(&#39;off&#39;)&lt;/script&gt;")
            || html.contains("&lt;script&gt;alert(&apos;off&apos;)&lt;/script&gt;"),
        "escaped name missing"
    );
    assert!(html.contains("a&amp;b &quot;32&quot;"), "escaped name missing");
    // Self-contained: nothing is fetched from anywhere.
    for remote in ["http://", "https://", "src=\"//", "@import"] {
        let allowed = html.matches("http://www.w3.org/2000/svg").count();
        assert!(remote != "http://" || html.matches(remote).count() == allowed, "a remote reference in the page");
        assert!(remote == "http://" || !html.contains(remote), "{remote} in the page");
    }
    // Only the variables that differ are shown; ports apart.
    assert!(html.contains("server variables that differ (1 of 3)"), "config diff");
    assert!(html.contains("1 more that differ by files, ports or ids only"), "location variables apart");

    // The page renders in a real browser: the script ran to its end (data-ready)
    // and the charts are in the DOM; no console errors; a screenshot is made.
    let (dom, log) = chromium_run(&dir, &["--dump-dom"], &page);
    assert!(dom.contains("data-ready=\"1\""), "the page's script did not finish:\n{log}");
    assert!(dom.matches("<svg").count() >= 5, "charts missing from the DOM");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let (_, log) = chromium_run(&dir, &[&format!("--screenshot={}", shot.display()), "--window-size=1280,2400"], &page);
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot at {}: {e}\n{log}", shot.display()));
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "screenshot of {} bytes", png.len());
    eprintln!("screenshot: {}", shot.display());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn querydiff_section_in_the_html_report() {
    let dir = tempdir("report-querydiff");
    let store = fixture(&dir, "with-querydiff", ["off", "32", "64"], "oltp");
    for f in ["a.db", "b.db"] {
        rusqlite::Connection::open(dir.join(f))
            .unwrap()
            .execute_batch("CREATE TABLE t (s TEXT); INSERT INTO t VALUES ('<b>x</b>')")
            .unwrap();
    }
    std::fs::write(dir.join("q.sql"), "SELECT s FROM t").unwrap();
    let qd = dbbench_in(
        &dir,
        &[
            "querydiff",
            "--dsn1=sqlite:a.db",
            "--dsn2=sqlite:b.db",
            "--queries=q.sql",
            "--output=qd.jsonl",
            "--name2=<i>two</i>",
        ],
    );
    assert_eq!(qd.code, 0, "{}{}", qd.stdout, qd.stderr);
    let page = dir.join("r.html");
    let r = report(&dir, &store, &["--quiet", &format!("--export-html={}", page.display()), "--querydiff=qd.jsonl"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    let section = html
        .find("Query comparison: server1 vs &lt;i&gt;two&lt;/i&gt;")
        .unwrap_or_else(|| panic!("no querydiff section:\n{html}"));
    assert!(section < html.find("<h2 id=\"system\">").unwrap(), "the section comes before the system information");
    assert!(html.contains("different results <b>0</b>") && !html.contains("<i>two</i>"), "{html}");
    let r = report(&dir, &store, &["--querydiff=qd.jsonl"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("give --export-html=FILE too"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs dbbench as a user who may not write `dir`: as root, the unprivileged
/// `nobody` (uid 65534, through util-linux's setpriv); otherwise the user
/// itself, after `dir` and its files are made read-only.
fn dbbench_read_only(dir: &Path, args: &[&str]) -> common::Run {
    let mut cmd = if unsafe_is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_dbbench")]);
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_dbbench"))
    };
    let out = cmd.args(args).current_dir(dir).output().expect("run dbbench");
    common::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn unsafe_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

#[test]
fn report_reads_a_store_it_cannot_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir("report-read-only");
    let store = fixture(&dir, "segmented", CONFIGS, "points-10");
    // The spec names an external server whose password variable is not set
    // here: a report connects to no server and does not need it.
    let lab = dir.join("dbbench-lab");
    std::fs::write(
        lab.join("segmented.toml"),
        "[experiment]\nname = \"segmented\"\ntime = 10\nstore = \"results.sqlite\"\n\n[[configuration]]\nname = \"off\"\nserver = \"external\"\ndsn = \"mysql://u@127.0.0.1:1/db\"\npassword_env = \"DBBENCH_TEST_UNSET_PASSWORD\"\n\n[[workload]]\nname = \"points-10\"\ntest = \"select_random_points\"\n",
    )
    .unwrap();
    let readonly = |mode: u32| {
        for f in std::fs::read_dir(&lab).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode & 0o666)).unwrap();
            }
        }
        std::fs::set_permissions(&lab, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    readonly(0o555);
    for f in ["results.sqlite-wal", "results.sqlite-shm"] {
        assert!(!lab.join(f).exists(), "{f} left by the fixture");
    }
    let before = std::fs::read(&store).unwrap();
    let s = format!("--store={}", store.display());
    // A clean store (no writer has it open): no -wal or -shm file can be made.
    let r = dbbench_read_only(&dir, &["report", &s]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(row(&r.stdout, "32 / off"), ["82%*", "0.0%*~"], "{}", r.stdout);
    let r = dbbench_read_only(&dir, &["report", "dbbench-lab/segmented.toml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("experiment 'segmented'"), "{}", r.stdout);
    let r = dbbench_read_only(&dir, &["compare", "segmented/off", "segmented/32", "dbbench-lab/segmented.toml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(&store).unwrap(), before, "the store was changed by a reader");
    for f in ["results.sqlite-wal", "results.sqlite-shm"] {
        assert!(!lab.join(f).exists(), "a reader created {f}");
    }
    // A writer (a lab run) has it open, with its newest rows still in the
    // write-ahead log: the reader sees them.
    readonly(0o755);
    let writer = Connection::open(&store).unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    writer.execute("UPDATE experiments SET name = 'renamed' WHERE name = 'segmented'", []).unwrap();
    readonly(0o555);
    assert!(lab.join("results.sqlite-wal").exists());
    let r = dbbench_read_only(&dir, &["report", &s, "--list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("renamed") && !r.stdout.contains("segmented"), "{}", r.stdout);
    drop(writer);
    readonly(0o755);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `<svg>` element of the chart titled `title` in a page or DOM dump.
fn chart<'a>(html: &'a str, title: &str) -> &'a str {
    let at = html.find(&format!("<title>{title}</title>")).unwrap_or_else(|| panic!("no chart '{title}'"));
    let start = html[..at].rfind("<svg").unwrap();
    let end = at + html[at..].find("</svg>").unwrap() + "</svg>".len();
    &html[start..end]
}

/// The tooltips of a chart's data points of series `n` (legend entries have none).
fn point_tips(svg: &str, n: usize) -> Vec<String> {
    let open = format!("<g class=\"series\" data-series=\"{n}\">");
    svg.split(&open)
        .skip(1)
        .flat_map(|g| {
            let g = &g[..g.find("</g>").unwrap()];
            g.split("<circle").skip(1).filter_map(|c| {
                let t = &c[c.find("<title>")? + 7..];
                Some(t[..t.find("</title>")?].to_string())
            })
        })
        .collect()
}

/// The y axis' tick labels of a chart (right-aligned texts left of the plot).
fn y_ticks(svg: &str) -> Vec<f64> {
    svg.split("<text")
        .skip(1)
        .filter(|t| t.contains("text-anchor=\"end\""))
        .filter_map(|t| {
            let v = &t[t.find('>')? + 1..t.find("</text>")?];
            let (num, mul) = match v.strip_suffix('k') {
                Some(n) => (n, 1e3),
                None => (v, 1.0),
            };
            num.parse::<f64>().ok().map(|x| x * mul)
        })
        .collect()
}

#[test]
fn html_charts_average_jittered_repeats_and_keep_throughput_in_view() {
    let Some(_) = chromium() else { return };
    let dir = tempdir("report-charts");
    let store = fixture(&dir, "charts", CONFIGS, "points-10");
    let c = Connection::open(&store).unwrap();
    // Tick times as a loaded host stores them: repeat r ticks (r - 1) × 7 ms late
    // (1.000, 1.007, 1.014 s), its warmup ticks 3 ms early.
    c.execute(
        "UPDATE run_intervals SET time_s = time_s + (SELECT CASE WHEN run_intervals.time_s > 0 THEN 0.007 ELSE -0.003 END * (\"repeat\" - 1) FROM runs WHERE runs.id = run_id) WHERE time_s <> 0",
        [],
    )
    .unwrap();
    // Two repeats far apart: 64 at 1 thread measured 300 and 30 tps (a t interval of
    // 165 ± 12.7 × 135 = -1550 .. 1880 tps with 1 degree of freedom).
    c.execute(
        "UPDATE runs SET tps = 30 WHERE id = (SELECT r.id FROM runs r JOIN cells cl ON r.cell_id = cl.id JOIN configurations g ON cl.configuration_id = g.id
                                              WHERE g.name = '64' AND cl.threads = 1 AND r.\"repeat\" = 2)",
        [],
    )
    .unwrap();
    drop(c);
    let page = dir.join("r.html");
    let r = report(&dir, &store, &["--quiet", &format!("--export-html={}", page.display())]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (dom, log) = chromium_run(&dir, &["--dump-dom"], &page);
    assert!(dom.contains("data-ready=\"1\""), "the page's script did not finish:\n{log}");

    // The mean over repeats per interval: off's three repeats at 1 thread meet
    // at each of their 3 intervals (2 of warmup), not at 7 distinct times.
    let series = chart(&dom, "points-10, 1 threads: transactions/s per interval");
    let tips = point_tips(series, 0);
    assert_eq!(tips.len(), 3, "{tips:#?}");
    // The measured interval: 102, 112, 122 tps at 1.000, 1.007, 1.014 s.
    assert_eq!(tips[2], "off, interval 1, ending at 1.0 s: 112.0 tps (mean of 3 run(s), 102.0 to 122.0)");

    // Throughput vs threads with 1–3 repeats per cell: bars are each cell's
    // lowest to highest repeat, the legend says so, and no tick is negative.
    let tput = chart(&dom, "points-10: transactions/s vs threads");
    assert!(tput.contains("bars: lowest to highest repeat (a cell has fewer than 4 repeats)"), "{tput}");
    let ticks = y_ticks(tput);
    assert!(!ticks.is_empty() && ticks.iter().all(|t| *t >= 0.0), "{ticks:?}");
    // The data (up to 500 tps) fills the chart: the axis ends below 1000.
    assert!(ticks.iter().cloned().fold(0.0, f64::max) < 1000.0, "{ticks:?}");
    let tip64 = point_tips(tput, 2);
    assert!(
        tip64[0]
            .starts_with("64, 1 threads: 165.0 tps (mean of 2 ok repeat(s); lowest 30.00, highest 300.0; 95% CI 0 to "),
        "{tip64:?}"
    );
    // Relative to the baseline: never below -100 %, and repeat-against-repeat
    // ratios as bars: 30/120 - 1 = -75 % to 300/100 - 1 = +200 %.
    let rel = chart(&dom, "points-10: relative to off (%)");
    let ticks = y_ticks(rel);
    assert!(ticks.iter().all(|t| *t >= -100.0) && ticks.iter().cloned().fold(0.0, f64::max) <= 400.0, "{ticks:?}");
    let tip64 = point_tips(rel, 1);
    assert!(tip64[0].contains("lowest -75.0%, highest 200.0%"), "{tip64:?}");
    // The interval tables agree: no relative change below -100 %.
    let r = report(&dir, &store, &[]);
    let ci = r.stdout.split("confidence intervals").nth(1).expect("interval table");
    assert_eq!(row(ci, "64 / off")[0], "-100%", "{ci}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The HTML `<h2>` sections of a page: (id, what lies between it and the next `<h2>` or the end).
fn sections(html: &str) -> Vec<(String, String)> {
    html.split("<h2 id=\"")
        .skip(1)
        .map(|s| {
            let id = s[..s.find('"').unwrap()].to_string();
            let body = &s[s.find("</h2>").unwrap() + 5..];
            let end = body.find("<script>").unwrap_or(body.len());
            (id, body[..end].to_string())
        })
        .collect()
}

/// The rows (label and cell texts) of the HTML table under heading `title`.
fn html_rows(html: &str, title: &str) -> Vec<Vec<String>> {
    let at = html.find(&format!("<h3>{title}")).unwrap_or_else(|| panic!("no table '{title}'"));
    let table = &html[at..];
    let table = &table[..table.find("</table>").unwrap()];
    table
        .split("<tr")
        .skip(2)
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let c = &c[c.find('>').unwrap() + 1..];
                    c[..c.find("</td>").unwrap()].to_string()
                })
                .collect()
        })
        .collect()
}

/// TPC-H in the lab on managed MariaDB (two configurations) and PostgreSQL,
/// as examples/dbt3-mariadb-vs-postgresql.toml runs it, with Q18 under its
/// own MariaDB options: the HTML page has no empty or contradicting section
/// and marks Q18; the configuration diff compares like with like.
#[test]
fn tpch_report_and_configuration_diff_on_managed_servers() {
    if !common::have_server_binaries() || chromium().is_none() {
        return;
    }
    let dir = tempdir("report-tpch");
    std::fs::write(
        dir.join("dbt3.toml"),
        r#"
[experiment]
name = "dbt3"
repeats = 2

[[configuration]]
name = "mariadb"
server = "mariadb"
server_options = ["--innodb-buffer-pool-size=64M", "--max-connections=100"]

[[configuration]]
name = "mariadb-join"
server = "mariadb"
server_options = ["--innodb-buffer-pool-size=64M", "--max-connections=100", "--join-buffer-size=8M"]

[[configuration]]
name = "postgresql"
server = "postgresql"
server_options = ["shared_buffers=32MB", "max_connections=100"]

[[workload]]
name = "dbt3"
tpch = { sf = 0.01, queries = "6,18", timeout = "120s",
         server_options = { "18" = { mariadb = ["--optimizer-switch=semijoin=off"] } } }
"#,
    )
    .unwrap();
    let r = dbbench_in(&dir, &["lab", "run", "dbt3.toml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The text layout marks Q18 on the configuration it applies to, and says why.
    let table = r.stdout.split("TPC-H dbt3: query times").nth(1).expect("per-query table");
    let q18 = row(table, "Q18");
    assert_eq!(q18[0], "†", "{table}");
    assert!(q18[1].ends_with('†') && !q18[2].contains('†'), "only mariadb's time is marked: {table}");
    assert!(table.contains("† Q18: server started with mariadb --optimizer-switch=semijoin=off"), "{table}");

    let page = dir.join("dbbench-lab/reports/dbt3-1.html");
    let (dom, log) = chromium_run(&dir, &["--dump-dom"], &page);
    assert!(dom.contains("data-ready=\"1\""), "the page's script did not finish:\n{log}");
    // Every section has content; sections with nothing to show are absent, and
    // nothing claims a single configuration or command workloads.
    let found = sections(&dom);
    let ids: Vec<&str> = found.iter().map(|s| s.0.as_str()).collect();
    // The lab sampled every query run: the samples section has its tables.
    assert_eq!(ids, ["summary", "samples", "system", "configurations"], "{ids:?}");
    for (id, body) in &found {
        assert!(body.contains("<table") || body.contains("<svg"), "section {id} is empty: {body}");
        assert!(dom.contains(&format!("href=\"#{id}\"")), "no link to {id}");
    }
    for link in ["#charts", "#series", "#tables"] {
        assert!(!dom.contains(&format!("href=\"{link}\"")), "a link to the absent {link}");
    }
    for wrong in ["One configuration", "command workloads have none", "nothing to compare"] {
        assert!(!dom.contains(wrong), "'{wrong}' in the page");
    }
    let q18 = html_rows(&dom, "TPC-H dbt3: query times").into_iter().find(|r| r[0].starts_with("Q18")).unwrap();
    assert_eq!(q18[0], "Q18 †");
    assert!(dom.contains("Q18 †</text>"), "the bar charts' category marks Q18 too");

    // The configuration diff, against the variables in the store.
    let c = Connection::open(dir.join("dbbench-lab/results.sqlite")).unwrap();
    let vars: Vec<serde_json::Map<String, serde_json::Value>> = c
        .prepare("SELECT variables FROM configurations ORDER BY position")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|v| serde_json::from_str(&v.unwrap()).unwrap())
        .collect();
    // The two MariaDB servers: every variable either has, ids such as server_uid folded away.
    let (m1, m2) = (&vars[0], &vars[1]);
    let union: std::collections::BTreeSet<&String> = m1.keys().chain(m2.keys()).collect();
    let heading = format!("server variables that differ between mariadb, mariadb-join (1 of {})", union.len());
    assert!(dom.contains(&heading), "no '{heading}'");
    let rows = html_rows(&dom, "server variables that differ between mariadb, mariadb-join");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0], ["join_buffer_size", "262144", "8388608"]);
    assert_ne!(m1.get("server_uid"), m2.get("server_uid"), "the servers' ids differ");
    // Across products: only the variables all three have.
    let common: Vec<&String> = m1.keys().filter(|k| m2.contains_key(*k) && vars[2].contains_key(*k)).collect();
    assert!(!common.is_empty() && common.len() < 20, "{common:?}");
    let at = dom.find("<h3>variables every server has that differ (").expect("cross-product diff");
    let n_of_m = &dom[at + "<h3>variables every server has that differ (".len()..];
    let n_of_m = &n_of_m[..n_of_m.find(')').unwrap()];
    let rows = html_rows(&dom, "variables every server has that differ");
    assert_eq!(n_of_m, format!("{} of {}", rows.len(), common.len()), "counts are true");
    assert!(rows.iter().all(|r| common.contains(&&r[0])), "{rows:?}");
    assert!(rows.iter().all(|r| !r.iter().any(|c| c == "(not present)")), "a missing variable compared: {rows:?}");
    let own = format!(
        "mariadb, mariadb-join: {} of {}; postgresql: {} of {}",
        union.len() - common.len(),
        union.len(),
        vars[2].len() - common.len(),
        vars[2].len()
    );
    assert!(dom.contains(&own), "no '{own}'");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Adds workload `to` to experiment `name` of the fixture store: a copy of
/// `from`'s cells and runs (times `factor` in tps), listed after the others in
/// the stored spec.
fn copy_workload(c: &Connection, name: &str, from: &str, to: &str, factor: f64) {
    let e: i64 = c.query_row("SELECT id FROM experiments WHERE name = ?1", [name], |r| r.get(0)).unwrap();
    let spec: String = c.query_row("SELECT spec_text FROM experiments WHERE id = ?1", [e], |r| r.get(0)).unwrap();
    let spec = format!("{spec}\n[[workload]]\nname = '{to}'\ntest = \"select_random_points\"\n");
    c.execute("UPDATE experiments SET spec_text = ?1 WHERE id = ?2", params![spec, e]).unwrap();
    c.execute(
        "INSERT INTO cells (experiment_id, configuration_id, workload, threads) SELECT experiment_id, configuration_id, ?1, threads FROM cells WHERE experiment_id = ?2 AND workload = ?3",
        params![to, e, from],
    )
    .unwrap();
    let columns: Vec<String> = c
        .prepare("SELECT name FROM pragma_table_info('runs') WHERE name NOT IN ('id', 'cell_id', 'seq', 'tps')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .map(|n: String| format!("\"{n}\""))
        .collect();
    let cols = columns.join(", ");
    let old_cols = columns.iter().map(|n| format!("r.{n}")).collect::<Vec<_>>().join(", ");
    c.execute(
        &format!(
            "INSERT INTO runs (cell_id, seq, tps, {cols})
             SELECT c2.id, r.seq + 1000 * (SELECT count(*) FROM cells WHERE experiment_id = ?1), r.tps * ?4, {old_cols}
             FROM runs r JOIN cells c1 ON r.cell_id = c1.id
             JOIN cells c2 ON c2.experiment_id = c1.experiment_id AND c2.configuration_id = c1.configuration_id AND c2.threads = c1.threads AND c2.workload = ?2
             WHERE c1.experiment_id = ?1 AND c1.workload = ?3"
        ),
        params![e, to, from, factor],
    )
    .unwrap();
}

#[test]
fn compare_follows_the_spec_order_and_pools_latency_as_report_does() {
    let dir = tempdir("report-compare-order");
    let store = fixture(&dir, "order", CONFIGS, "points-10");
    let c = Connection::open(&store).unwrap();
    copy_workload(&c, "order", "points-10", "points-50", 2.0);
    copy_workload(&c, "order", "points-10", "points-100", 3.0);
    // 32 at 1 thread gets latency histograms too: 1..100 ms in every repeat
    // (pooled p95 = 95 ms), against off's 1..300 ms pooled (p95 = 285 ms,
    // while off's runs' own p95s are 95, 195, 295 ms: their mean is 195).
    c.execute(
        "UPDATE runs SET latency_p95_ms = 95 + 100 * (\"repeat\" - 1) WHERE cell_id = (SELECT cl.id FROM cells cl JOIN configurations g ON cl.configuration_id = g.id
                                                   WHERE g.name = 'off' AND cl.threads = 1 AND cl.workload = 'points-10')",
        [],
    )
    .unwrap();
    c.execute(
        "UPDATE runs SET histogram = ?1, latency_p95_ms = 95 WHERE cell_id = (SELECT cl.id FROM cells cl JOIN configurations g ON cl.configuration_id = g.id
                                                   WHERE g.name = '32' AND cl.threads = 1 AND cl.workload = 'points-10')",
        [histogram(1..=100)],
    )
    .unwrap();
    drop(c);
    let s = format!("--store={}", store.display());
    // Workloads in the spec's order, not sorted by name (points-10, points-100, points-50).
    let r = dbbench_in(&dir, &["compare", "order/off", "order/32", &s]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let order: Vec<&str> =
        r.stdout.lines().filter(|l| l.starts_with("points-")).map(|l| &l[..l.find(',').unwrap()]).collect();
    assert_eq!(order, ["points-10", "points-10", "points-50", "points-50", "points-100", "points-100"], "{}", r.stdout);
    // The report's tables follow the same order.
    let r = report(&dir, &store, &["--experiment=order"]);
    let rows: Vec<&str> = r
        .stdout
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("points-"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(&rows[..3], ["points-10", "points-50", "points-100"], "{}", r.stdout);

    // Latency percentiles as report's latency tables give them: pooled.
    let r = dbbench_in(&dir, &["compare", "order/off/points-10/1", "order/32/points-10/1", "--metric=latency_p95", &s]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // (HDR histograms keep 3 significant digits: 285 ms may read 285.1.)
    assert!(r.stdout.contains(" 285.") && r.stdout.matches(" ms pooled (n=3)").count() == 2, "{}", r.stdout);
    // 285 / 95 = 3.00 (a mean of the runs' own p95s would give 195 / 95 = 2.05).
    assert!(r.stdout.contains("B is 3.00 times faster than A (pooled 95th percentiles 95."), "{}", r.stdout);
    assert!(
        r.stdout.contains(" ms, no interval; the repeats' own 95.00 to 95.00 vs 95.00 to 295.0 ms; n = 3 vs 3)"),
        "{}",
        r.stdout
    );
    // And report compares the same figures: 95 / 285 - 1 = -67%, no interval (?).
    let r = report(&dir, &store, &["--experiment=order", "--metric=latency_p95"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // (* as well: off's runs' own p95s spread by 50%.)
    assert_eq!(row(&r.stdout, "32 / off")[0], "-67%*?", "{}", r.stdout);
    assert!(r.stdout.contains("? no interval: a pooled latency percentile"), "{}", r.stdout);
    let p95 = r.stdout.split("95th percentile latency (ms), absolute").nth(1).expect("absolute table");
    assert!(row(p95, "off")[0].starts_with("285."), "{p95}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Stores samples for the runs of `fixture`'s experiment `name` (warmup 10 s):
/// per repeat r of `off`, OS samples at 9 s (warmup), 11 s (1 s interval) and
/// 12 s (0.5 s) with every field the sampler has, and cumulative server
/// samples; `32`'s runs as an older sampler wrote them (no client/server CPU,
/// interrupts or IPIs, no server samples); `64` none at all.
fn add_samples(store: &Path, name: &str) {
    let c = Connection::open(store).unwrap();
    let spec: String =
        c.query_row("SELECT spec_text FROM experiments WHERE name = ?1", params![name], |r| r.get(0)).unwrap();
    let spec =
        format!("{spec}\n[report]\nserver_counters = [\"Innodb_rows_read\", \"Threads_running\", \"Nope_counter\"]\n");
    c.execute("UPDATE experiments SET spec_text = ?1 WHERE name = ?2", params![spec, name]).unwrap();
    let mut q = c
        .prepare(
            "SELECT r.id, cf.name, r.\"repeat\" FROM runs r JOIN cells cl ON r.cell_id = cl.id JOIN configurations cf ON cl.configuration_id = cf.id
             JOIN experiments e ON cl.experiment_id = e.id WHERE e.name = ?1",
        )
        .unwrap();
    let runs: Vec<(i64, String, i64)> =
        q.query_map(params![name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    let insert = |run: i64, source: &str, t: f64, data: serde_json::Value| {
        c.execute(
            "INSERT INTO samples (run_id, source, time_s, data) VALUES (?1, ?2, ?3, ?4)",
            params![run, source, t, data.to_string()],
        )
        .unwrap();
    };
    for (run, conf, repeat) in runs {
        let r = (repeat - 1) as f64;
        let os = |t: f64, interval: f64, user: f64, full: bool| {
            let mut s = serde_json::json!({
                "time_s": t, "interval_s": interval, "cpu_user_pct": user, "cpu_system_pct": 20.0, "cpu_iowait_pct": 1.0,
                "cpu_idle_pct": 79.0 - user, "cpu_steal_pct": 0.0, "mem_used_bytes": 1073741824u64, "mem_available_bytes": 2147483648u64,
                "page_cache_bytes": 524288000u64, "disk_read_bytes_per_s": 1048576.0, "disk_write_bytes_per_s": 2097152.0,
                "disk_reads_per_s": 10.0, "disk_writes_per_s": 20.0, "context_switches_per_s": 5000.0, "procs_running": 3,
            });
            if full {
                let more = serde_json::json!({
                    "cpus_online": 2, "interrupts_per_s": 3000.0, "resched_ipis_per_s": 1000.0, "swap_in_pages_per_s": 0.0,
                    "swap_out_pages_per_s": 0.0, "net_rx_bytes_per_s": 0.0, "net_tx_bytes_per_s": 0.0, "loopback_bytes_per_s": 4194304.0,
                    "client_cpu_pct": 5.0, "server_cpu_pct": 30.0, "other_cpu_pct": 1.0, "cpu_mhz": null,
                });
                s.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
            }
            s
        };
        match conf.as_str() {
            "off" => {
                insert(run, "os", 9.0, os(9.0, 1.0, 99.0, true));
                insert(run, "os", 11.0, os(11.0, 1.0, 10.0 + r, true));
                insert(run, "os", 11.5, os(11.5, 0.5, 40.0 + r, true));
                insert(
                    run,
                    "server",
                    0.0,
                    serde_json::json!({"Innodb_rows_read": "0", "Threads_running": "1", "Key_reads": "7"}),
                );
                insert(run, "server", 10.0, serde_json::json!({"Innodb_rows_read": "1000", "Threads_running": "3"}));
                insert(
                    run,
                    "server",
                    12.0,
                    serde_json::json!({"Innodb_rows_read": format!("{}", 5000.0 + 1000.0 * r), "Threads_running": "5"}),
                );
            }
            "32" => {
                insert(run, "os", 11.0, os(11.0, 1.0, 50.0, false));
                insert(run, "os", 12.0, os(12.0, 1.0, 50.0, false));
            }
            _ => {}
        }
    }
}

#[test]
fn samples_in_every_layout_and_charts_as_files() {
    let dir = tempdir("report-samples");
    let store = fixture(&dir, "sampled", CONFIGS, "points");
    // Before samples: no samples section, no sample columns, --samples says there are none.
    let r = report(&dir, &store, &["--experiment=sampled", "--samples", "--export-csv=before.csv"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("samples: no run of this experiment has stored samples"), "{}", r.stdout);
    assert!(!std::fs::read_to_string(dir.join("before.csv")).unwrap().contains("os_"));
    add_samples(&store, "sampled");

    // Text: only with --samples.
    let plain = report(&dir, &store, &["--experiment=sampled"]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(!plain.stdout.contains("OS samples"), "{}", plain.stdout);
    let r = report(&dir, &store, &["--experiment=sampled", "--samples"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = &r.stdout;
    assert!(
        t.contains("note: server counters no server of this experiment reported, not shown: Nope_counter\n"),
        "{t}"
    );
    assert_eq!(t.matches("Nope_counter").count(), 1, "said once: {t}");
    let cpu = &t[t.find("OS samples: CPU and scheduler per cell").expect(t)..];
    let head: Vec<&str> = cpu.lines().nth(2).unwrap().split_whitespace().collect();
    // The columns some cell has (cpu_mhz is null everywhere: left out).
    assert_eq!(
        head,
        [
            "runs",
            "usr%",
            "sys%",
            "iowait%",
            "steal%",
            "idle%",
            "client%",
            "server%",
            "other%",
            "runq",
            "cpus",
            "cswch/s",
            "intr/s",
            "resched/s",
            "resched/q"
        ],
        "{cpu}"
    );
    // off at 1 thread: per repeat r the mean of 10+r (1 s) and 40+r (0.5 s), the 9 s sample
    // being warmup: (10+r + 0.5·(40+r))/1.5 = 20+r; median over r = 0, 1, 2: 21.
    // resched/q: 1000 IPI/s over qps 1000, 1100, 1200: median 1000/1100 = 0.909.
    assert_eq!(
        row(cpu, "off, 1 thread"),
        [
            "3", "21.00", "20.00", "1.00", "0", "58.00", "5.00", "30.00", "1.00", "3.00", "2.00", "5000", "3000",
            "1000", "0.909"
        ],
        "{cpu}"
    );
    // 32: an older sampler's store: what it lacks is a dash, never 0.
    assert_eq!(
        row(cpu, "32, 4 threads"),
        ["3", "50.00", "20.00", "1.00", "0", "29.00", "-", "-", "-", "3.00", "-", "5000", "-", "-", "-"],
        "{cpu}"
    );
    // 64: no samples at all.
    assert_eq!(row(cpu, "64, 4 threads")[..3], ["0", "-", "-"], "{cpu}");
    let io = &t[t.find("OS samples: memory, swap, disk and network per cell").expect(t)..];
    assert_eq!(
        row(io, "off, 1 thread"),
        ["3", "1024", "2048", "500.0", "0", "0", "1.00", "2.00", "10.00", "20.00", "0", "0", "4.00"],
        "{io}"
    );
    // Server counters: rows per counter, a column per configuration and thread count.
    // Innodb_rows_read over the window after the 10 s warmup: (5000 + 1000 r − 1000) / 2 s,
    // median over r: 2500/s. Threads_running: its mean after the warmup, 5.
    let server = &t[t.find("server counters: points").expect(t)..];
    assert_eq!(row(server, "Innodb_rows_read/s"), ["2500", "-", "-", "2500", "-", "-"], "{server}");
    assert_eq!(row(server, "Threads_running (mean)"), ["5.00", "-", "-", "5.00", "-", "-"], "{server}");
    assert!(!server.contains("Key_reads"), "not chosen: {server}");

    // Markdown, JSON, CSV, spreadsheet and the page.
    let r = report(
        &dir,
        &store,
        &[
            "--experiment=sampled",
            "--samples",
            "--quiet",
            "--export-markdown=out/r.md",
            "--export-json=out/r.json",
            "--export-csv=out/r.csv",
            "--export-html=out/r.html",
            "--export-charts=out/charts",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let md = std::fs::read_to_string(dir.join("out/r.md")).unwrap();
    assert!(md.contains("OS samples: CPU and scheduler per cell") && md.contains("| off, 1 thread |"), "{md}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/r.json")).unwrap()).unwrap();
    let s = &doc["samples"];
    let cell = |c: &str, t: u64| {
        s["cells"].as_array().unwrap().iter().find(|x| x["configuration"] == c && x["threads"] == t).unwrap().clone()
    };
    assert_eq!(cell("off", 1)["os"]["cpu_user_pct"], 21.0);
    assert_eq!(cell("off", 1)["server"]["Innodb_rows_read_per_s"], 2500.0);
    assert_eq!(cell("32", 1)["os"]["client_cpu_pct"], serde_json::Value::Null);
    assert_eq!(cell("64", 4)["runs"], 0);
    assert_eq!(s["notes"].as_array().unwrap().len(), 1);
    let run = s["runs"].as_array().unwrap().iter().find(|x| x["os_samples"] == 3).unwrap();
    assert_eq!(run["os_series"].as_array().unwrap().len(), 3);
    assert_eq!(run["os_series"][0]["time_s"], -1.0, "seconds since the end of the warmup");
    assert_eq!(run["server_series"][1]["Innodb_rows_read_per_s"].as_f64().unwrap() % 500.0, 0.0);
    let csv = std::fs::read_to_string(dir.join("out/r.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let line = csv.lines().find(|l| l.starts_with("sampled,points,off,1,")).unwrap();
    let f: Vec<&str> = line.split(',').collect();
    let col = |name: &str| f[head.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name} in {head:?}"))];
    assert_eq!(
        (col("os_cpu_user_pct"), col("server_Innodb_rows_read_per_s"), col("os_mem_used_bytes")),
        ("21", "2500", "1073741824")
    );
    let line = csv.lines().find(|l| l.starts_with("sampled,points,32,1,")).unwrap();
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!(f[head.iter().position(|h| *h == "os_client_cpu_pct").unwrap()], "", "not measured: empty");
    let html = std::fs::read_to_string(dir.join("out/r.html")).unwrap();
    assert!(html.contains("<h2 id=\"samples\">samples</h2>"), "section");
    for title in [
        "points, 1 threads, off: CPU, stacked (idle the rest)",
        "points, 1 threads: run queue",
        "points, 1 threads: client and server CPU",
        "points, 1 threads: Innodb_rows_read/s",
    ] {
        assert!(html.contains(&format!("<title>{title}</title>")), "{title}");
    }
    // No chart for 64, which has no samples: its configuration is in no samples chart's legend.
    let samples_part = &html[html.find("<h2 id=\"samples\">").unwrap()..];
    assert!(!samples_part.contains("points, 1 threads, 64: CPU"), "no data, no chart");

    // Charts as files: every <svg> of the page, named by place and title, as SVG and PNG.
    let charts = dir.join("out/charts");
    let page_charts = html.matches("<svg ").count();
    let written: Vec<String> = r.stderr.lines().filter_map(|l| l.strip_prefix("wrote ")).map(str::to_string).collect();
    let mut files: Vec<String> =
        std::fs::read_dir(&charts).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files.len(), 2 * page_charts, "{files:?}");
    for f in &files {
        // Listed as given on the command line (relative to the report's directory).
        assert!(written.contains(&format!("out/charts/{f}")), "{f} listed: {}", r.stderr);
    }
    assert!(files.iter().any(|f| f.ends_with("-points-1-threads-off-cpu-stacked-idle-the-rest.svg")), "{files:?}");
    for svg_name in files.iter().filter(|f| f.ends_with(".svg")) {
        let text = std::fs::read_to_string(charts.join(svg_name)).unwrap();
        let xml = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{svg_name}: {e}"));
        let root = xml.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let dim = |a: &str| root.attribute(a).unwrap().parse::<f64>().unwrap() as u32;
        let png = std::fs::read(charts.join(svg_name.replace(".svg", ".png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{svg_name}");
        let pixmap = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!((pixmap.width(), pixmap.height()), (dim("width"), dim("height")), "{svg_name}");
        let dark = pixmap.pixels().iter().filter(|p| p.red() < 160 && p.alpha() > 0).count();
        assert!(dark > 100, "{svg_name}: {dark} dark pixels");
    }
    // Same report, same names; a symlink as DIR is refused in one line.
    let again = report(&dir, &store, &["--experiment=sampled", "--quiet", "--export-charts=out/charts2"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let mut files2: Vec<String> = std::fs::read_dir(dir.join("out/charts2"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files2.sort();
    assert_eq!(files, files2);
    std::os::unix::fs::symlink(dir.join("out/charts2"), dir.join("out/link")).unwrap();
    let refused = report(&dir, &store, &["--experiment=sampled", "--quiet", "--export-charts=out/link"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("symlink"), "{}", refused.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fuzz: a real store (the fixture's experiments and a real engine run,
/// with interval series and samples) with random bytes of one page
/// overwritten, 80 times: `report` (text, HTML and spreadsheet exports)
/// and `report --list` either work or stop with one clear line, exit 1;
/// never a panic, a signal or a hang. A flipped byte in a record can
/// pass SQLite's own checks (it is then a plausible but odd value): the
/// readers must refuse what they cannot use, not trust it.
#[test]
fn a_store_with_damaged_pages_is_reported_or_refused_never_a_panic() {
    let dir = tempdir("report-fuzz");
    let store = fixture(&dir, "fuzz", CONFIGS, "oltp");
    let spec = dir.join("real.toml");
    std::fs::write(
        &spec,
        "[experiment]\nname = \"real\"\nthreads = [1]\ntime = 1\nsample_interval = 1\noptions = { table-size = 100 }\n\n\
         [[configuration]]\nname = \"a\"\nserver = \"sqlite\"\n\n[[workload]]\ntest = \"oltp_point_select\"\n",
    )
    .unwrap();
    let r = dbbench_in(&dir, &["lab", "run", spec.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    Connection::open(&store).unwrap().execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    let good = std::fs::read(&store).unwrap();
    let page = 4096;
    let pages = good.len() / page;
    assert!(pages > 4, "{pages} pages");
    let damaged = dir.join("damaged.sqlite");
    let html = dir.join("d.html");
    let xlsx = dir.join("d.xlsx");
    let mut seed: u64 = 0xda3a;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as usize
    };
    let (mut worked, mut refused) = (0, 0);
    for round in 0..80 {
        let mut bytes = good.clone();
        let p = 1 + next() % (pages - 1);
        for _ in 0..1 + next() % 8 {
            let at = p * page + next() % page;
            let len = (1 + next() % 64).min(bytes.len() - at);
            for b in &mut bytes[at..at + len] {
                *b = next() as u8;
            }
        }
        std::fs::write(&damaged, &bytes).unwrap();
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", damaged.display()));
        }
        let exports = [format!("--export-html={}", html.display()), format!("--export-xlsx={}", xlsx.display())];
        for args in [
            vec!["--list"],
            vec!["--experiment=1"],
            vec!["--experiment=2", exports[0].as_str(), exports[1].as_str()],
            vec!["--experiment=3", exports[0].as_str()],
        ] {
            let r = report(&dir, &damaged, &args);
            let all = format!("{}{}", r.stdout, r.stderr);
            assert!(
                !all.contains("panicked") && (r.code == 0 || r.code == 1),
                "round {round}, page {p}, {args:?}: exit {}\n{all}",
                r.code
            );
            if r.code == 0 {
                worked += 1;
            } else {
                let line = r.stderr.trim();
                assert!(
                    line.lines().count() == 1 && line.starts_with("dbbench report: "),
                    "round {round}, page {p}, {args:?}: {line}"
                );
                refused += 1;
            }
        }
    }
    eprintln!("damaged stores: {worked} reports made, {refused} refused");
    let _ = std::fs::remove_dir_all(&dir);
}
