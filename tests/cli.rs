//! Command line, script errors and engine mechanics, without a database
//! server (driver-less scripts and the embedded SQLite driver).

mod common;
use common::*;

fn script(body: &str) -> (TempDir, String) {
    let dir = tempdir("script");
    let path = dir.join("t.lua");
    std::fs::write(&path, body).unwrap();
    (dir, path.display().to_string())
}

const SLEEPY: &str = r#"
local ffi = require("ffi")
ffi.cdef("int usleep(unsigned int);")
sysbench.cmdline.options = { ms = {"sleep per event, ms", 1} }
function event() ffi.C.usleep(sysbench.opt.ms * 1000) end
"#;

#[test]
fn version_and_help_exit_zero() {
    let r = dbbench(&["--version"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.starts_with("dbbench "), "{}", r.stdout);
    let r = dbbench(&["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("--threads=N"));
    assert!(r.stdout.contains("oltp_read_write"));
    assert!(r.stdout.contains("--mysql-host"));
}

#[test]
fn fails_with_unknown_option() {
    let r = dbbench(&["oltp_point_select", "run", "--foo=1"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.trim(), "invalid option: --foo=1");
}

#[test]
fn fails_with_unknown_test_and_command() {
    let r = dbbench(&["no_such_test", "run"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FATAL: Cannot find benchmark 'no_such_test'"), "{}", r.stdout);
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "frobnicate"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.trim(), "Unknown command: frobnicate");
    let r = dbbench(&[&s, "run", "extra"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.trim(), "Unrecognized command line argument: extra");
}

#[test]
fn fails_with_bad_numbers() {
    let r = dbbench(&["oltp_point_select", "run", "--threads=0"]);
    assert_eq!((r.code, r.stdout.trim_end().lines().last()), (1, Some("FATAL: Invalid value for --threads: 0.")));
    let r = dbbench(&["oltp_point_select", "run", "--threads=2.5"]);
    assert_eq!((r.code, r.stderr.trim()), (1, "Invalid value for the 'threads' option: '2.5'"));
    let r = dbbench(&["oltp_point_select", "run", "--time=-1"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FATAL: Invalid value for --time: -1."), "{}", r.stdout);
    let r = dbbench(&["oltp_point_select", "run", "--rate=abc"]);
    assert_eq!((r.code, r.stderr.trim()), (1, "Invalid value for the 'rate' option: 'abc'"));
    let r = dbbench(&["oltp_point_select", "run", "--rate=-5"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FATAL: Invalid value for --rate: -5."), "{}", r.stdout);
    let r = dbbench(&["oltp_point_select", "run", "--percentile=101"]);
    assert_eq!(r.code, 1);
    let r = dbbench(&["oltp_point_select", "run", "--histogram", "--percentile=0"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("--histogram cannot be used with --percentile=0"));
}

#[test]
fn lua_syntax_error_names_file_and_line() {
    let (_d, s) = script("function event()\n  local x = = 1\nend\n");
    let r = dbbench(&[&s, "run"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("t.lua:2:"), "{}", r.stdout);
}

#[test]
fn lua_runtime_error_in_event_fails_the_run_without_report() {
    let (_d, s) = script("function event()\n  error('boom')\nend\nfunction done() print('done ran') end\n");
    let r = dbbench(&[&s, "run", "--threads=2", "--time=5"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FATAL: `thread_run' function failed:"), "{}", r.stdout);
    assert!(r.stdout.contains("t.lua:2: boom"), "{}", r.stdout);
    assert!(!r.stdout.contains("General statistics"));
    assert!(r.stdout.contains("done ran"));
}

#[test]
fn thread_init_error_stops_the_run() {
    let (_d, s) = script("function thread_init() error('no init for you') end\nfunction event() end\n");
    let r = dbbench(&[&s, "run", "--threads=3", "--time=5"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FATAL: Thread initialization failed!"), "{}", r.stdout);
    assert!(r.stdout.contains("no init for you"));
}

#[test]
fn missing_event_function() {
    let (_d, s) = script("sysbench.cmdline.options = {}\n");
    let r = dbbench(&[&s, "run"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FATAL: cannot find the event() function in"), "{}", r.stdout);
}

#[test]
fn exact_event_count_across_threads() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--events=1000", "--threads=7", "--time=0", "--ms=0"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.number("total number of events:"), Some(1000.0));
    // No driver was used: no SQL block, as sysbench.
    assert!(!r.stdout.contains("SQL statistics"));
}

#[test]
fn event_returning_true_stops_only_that_thread() {
    let (_d, s) = script("function event(tid) if tid == 0 then return true end end\n");
    let r = dbbench(&[&s, "run", "--time=1", "--threads=2", "--format=json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    // Thread 0 stopped at once (the stopping call is not an event); thread 1 ran on.
    assert_eq!(v["fairness"][0]["events"], 0);
    assert!(v["fairness"][1]["events"].as_u64().unwrap() > 0);
    assert_eq!(v["counters"]["events"], v["fairness"][1]["events"]);
}

#[test]
fn time_limit_and_percentile_list() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--time=2", "--threads=2", "--percentile=50,99.9", "--report-interval=1"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let total = r.number("total time:").unwrap();
    assert!((2.0..2.5).contains(&total), "{total}");
    assert!(r.stdout.contains("         50th percentile:"), "{}", r.stdout);
    assert!(r.stdout.contains("        99.9th percentile:"), "{}", r.stdout);
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("[ ")).collect();
    assert!(lines.len() >= 2, "{}", r.stdout);
    assert!(lines[0].contains("eps:") && lines[0].contains("lat (ms,50%):") && lines[0].contains("lat (ms,99.9%):"));
    // Every percentile line ends at column 53 like sysbench's.
    for l in r.stdout.lines().filter(|l| l.contains("th percentile:")) {
        assert_eq!(l.len(), 53, "{l:?}");
    }
}

#[test]
fn warmup_is_excluded_from_every_figure() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--time=1", "--warmup-time=1", "--threads=1", "--ms=10", "--format=json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let events = v["counters"]["events"].as_u64().unwrap();
    // ~10 ms per event: one measured second holds ~90-100 events, not ~190.
    assert!((50..=110).contains(&events), "{events}");
    assert!((0.9..1.3).contains(&v["total_time_s"].as_f64().unwrap()));
    // Without --report-interval there are no interval rows of either kind.
    assert_eq!(v["warmup_intervals"].as_array().map(Vec::len), Some(0));
}

#[test]
fn warmup_intervals_are_reported_apart_in_json_only() {
    let (_d, s) = script(SLEEPY);
    let args = [s.as_str(), "run", "--time=2", "--warmup-time=2", "--threads=1", "--ms=10", "--report-interval=1"];
    let r = dbbench(&[&args[..], &["--format=json"]].concat());
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let warm = v["warmup_intervals"].as_array().unwrap();
    let measured = v["intervals"].as_array().unwrap();
    // Two warmup ticks, ending 1 s before and at the end of the warmup.
    let times: Vec<f64> = warm.iter().map(|i| i["time_s"].as_f64().unwrap()).collect();
    assert_eq!(times.len(), 2, "{times:?}");
    assert!((-1.1..-0.9).contains(&times[0]) && times[1] == 0.0, "{times:?}");
    // Each holds about a second of ~10 ms events, and none of them reach the totals.
    for w in warm {
        assert!((50..=110).contains(&w["events"].as_u64().unwrap()), "{w}");
    }
    let in_intervals: u64 = measured.iter().map(|i| i["events"].as_u64().unwrap()).sum();
    assert!(measured.iter().all(|i| i["time_s"].as_f64().unwrap() > 0.0));
    assert!(in_intervals <= v["counters"]["events"].as_u64().unwrap());
    assert!((100..=220).contains(&v["counters"]["events"].as_u64().unwrap()), "{}", v["counters"]);
    // The text layout prints measured intervals only, as sysbench does.
    let t = dbbench(&args);
    let lines: Vec<&str> = t.stdout.lines().filter(|l| l.starts_with("[ ")).collect();
    assert_eq!(lines.len(), 2, "{}", t.stdout);
    assert!(lines[0].starts_with("[ 1s ]") && lines[1].starts_with("[ 2s ]"), "{lines:?}");
}

#[test]
fn rate_is_open_loop_and_reports_service_time() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--time=2", "--threads=2", "--rate=200", "--ms=1", "--format=json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let achieved = v["rate"]["achieved_per_s"].as_f64().unwrap();
    assert!((150.0..250.0).contains(&achieved), "{achieved}");
    assert_eq!(v["latency_measured_from"], "intended_start");
    let lat = v["latency"]["avg_ms"].as_f64().unwrap();
    let svc = v["service_time"]["avg_ms"].as_f64().unwrap();
    assert!(lat >= svc, "{lat} < {svc}");
}

#[test]
fn unreachable_rate_warns_but_does_not_abort() {
    let (_d, s) = script(SLEEPY);
    // One thread at 10 ms per event can do ~100/s, far below 1000/s.
    let r = dbbench(&[&s, "run", "--time=1", "--threads=1", "--rate=1000", "--ms=10"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stderr.contains("WARNING: the target rate of 1000.00 events/s was not reached"), "{}", r.stderr);
    // Queueing is visible in the latency, not hidden.
    let lat = r.number("avg:").unwrap();
    assert!(lat > 50.0, "{}", r.stdout);
}

#[test]
fn forced_shutdown_reports_and_exits_2() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--time=1", "--forced-shutdown=1", "--threads=1", "--ms=3000"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stdout.contains("Forcing shutdown in 2 seconds"));
    assert!(r.stdout.contains("FATAL: The --max-time limit has expired, forcing shutdown..."));
    assert!(r.stdout.contains("Number of unfinished transactions on forced shutdown: 1"));
}

/// Clients that keep finishing after --time are a drain, not a stall: at
/// 4096 PostgreSQL clients the server ends ~700 backends a second and the
/// last clients finish 5-6 s after --time (sysbench waits for them too).
/// Here they finish 1.5 s apart, the last 6 s after --time: the run waits
/// and exits 0. A client that makes no progress for 5 s still ends the run.
#[test]
fn clients_finishing_steadily_after_time_are_waited_for() {
    let body = format!(
        "{SLEEPY}function thread_done() if sysbench.tid < 5 then ffi.C.usleep(sysbench.tid * 1500000) else ffi.C.usleep(30000000) end end\n"
    );
    let (_d, s) = script(&body);
    let t0 = std::time::Instant::now();
    let r = dbbench(&[&s, "run", "--time=1", "--threads=5"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(t0.elapsed() >= std::time::Duration::from_secs(6), "{:?}", t0.elapsed());
    // A sixth client stuck 30 s in thread_done: 5 s after the last one
    // finished, the run ends, exit 2.
    let t0 = std::time::Instant::now();
    let r = dbbench(&[&s, "run", "--time=1", "--threads=6"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(out.contains("1 of 6 clients had not finished") && out.contains("none for the last 5."), "{out}");
    let took = t0.elapsed().as_secs_f64();
    assert!((11.0..14.0).contains(&took), "took {took:.1}s: the last progress was 6 s after --time=1, the grace 5 s");
}

#[test]
fn legacy_mode_exports_unknown_options_as_globals() {
    let (_d, s) = script("function event() end\nfunction prepare() print('size=' .. oltp_table_size .. ' type=' .. type(oltp_table_size)) end\n");
    let r = dbbench(&[&s, "prepare", "--oltp-table-size=500", "--num-threads=2"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("size=500 type=string"), "{}", r.stdout);
    assert!(r.stdout.contains("WARNING: --num-threads is deprecated, use --threads instead"));
    // At its default (1) the old spelling is not "used": no warning, as in sysbench.
    let r = dbbench(&[&s, "prepare", "--num-threads=1"]);
    assert!(!r.stdout.contains("WARNING"), "{}", r.stdout);
}

#[test]
fn custom_and_parallel_commands() {
    let body = "sysbench.cmdline.options = {}\n\
                function cmd() print('tid ' .. sysbench.tid) end\n\
                function bad() error('nope') end\n\
                sysbench.cmdline.commands = { hello = {cmd, sysbench.cmdline.PARALLEL_COMMAND}, fail = {bad, sysbench.cmdline.PARALLEL_COMMAND} }\n";
    let (_d, s) = script(body);
    let r = dbbench(&[&s, "hello", "--threads=3"]);
    assert_eq!(r.code, 0);
    for t in 0..3 {
        assert!(r.stdout.contains(&format!("tid {t}")), "{}", r.stdout);
    }
    // sysbench exits 0 when a parallel command fails; we do not.
    let r = dbbench(&[&s, "fail", "--threads=2"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
}

#[test]
fn csv_format_has_header_intervals_and_total() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--time=2", "--report-interval=1", "--format=csv", "--percentile=95,99"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].starts_with("kind,time_s,threads,tps,qps,"), "{}", r.stdout);
    assert!(lines[0].ends_with(",lat_p95_ms,lat_p99_ms"));
    let cols = lines[0].split(',').count();
    assert!(lines.iter().filter(|l| l.starts_with("interval,")).count() >= 1);
    let total = lines.iter().find(|l| l.starts_with("total,")).expect("total row");
    assert_eq!(total.split(',').count(), cols);
}

#[test]
fn histogram_and_checkpoints() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--time=3", "--histogram", "--report-checkpoints=1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Latency histogram (values are in milliseconds)"), "{}", r.stdout);
    assert!(r.stdout.contains("[ 1s ] Checkpoint report:"), "{}", r.stdout);
    // The checkpoint resets counters: the final report covers ~2 s of ~1 ms events.
    let reports: Vec<&str> = r.stdout.split("General statistics:").collect();
    assert_eq!(reports.len(), 3, "{}", r.stdout);
    let events: Vec<f64> = reports[1..]
        .iter()
        .map(|p| {
            let l = p.lines().find(|l| l.contains("total number of events:")).unwrap();
            l.split_whitespace().last().unwrap().parse().unwrap()
        })
        .collect();
    assert!(events[1] > events[0], "{events:?}");
}

/// The C functions scripts call through ffi (sysbench-tpcc style): counted
/// like sysbench counts them, random functions in range.
#[test]
fn ffi_counters_and_random_functions() {
    let (_d, s) = script(
        r##"
local ffi = require("ffi")
ffi.cdef[[ void sb_counter_inc(int, sb_counter_type); ]]
function event(tid)
  local x = ffi.C.sb_rand_uniform(1, 10)
  assert(x >= 1 and x <= 10, "uniform out of range")
  assert(ffi.C.sb_rand_default(5, 5) == 5)
  ffi.C.sb_counter_inc(tid, ffi.C.SB_CNT_ERROR)
  ffi.C.sb_counter_inc(tid, ffi.C.SB_CNT_READ)
  local buf = ffi.new("char[?]", 3)
  ffi.C.sb_rand_str("#@x", buf)
  assert(ffi.string(buf, 3):match("^%d%lx$"), "sb_rand_str")
  assert(ffi.C.sb_rand_uniform_double() < 1)
end
"##,
    );
    let r = dbbench(&[&s, "run", "--events=100", "--threads=2", "--format=json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    assert_eq!(v["counters"]["errors"], 100, "{v}");
    assert_eq!(v["counters"]["reads"], 100, "{v}");
    assert_eq!(v["counters"]["events"], 100, "{v}");
}

/// A script's own `thread_run` drives the loop through sb_more_events /
/// sb_event_start / sb_event_stop: the limits hold and events are timed.
#[test]
fn thread_run_override_runs_the_event_loop() {
    let (_d, s) = script(
        r#"
local ffi = require("ffi")
ffi.cdef("int usleep(unsigned int);")
function event() ffi.C.usleep(200) end
function thread_run(tid)
  local n = 0
  while ffi.C.sb_more_events(tid) do
    ffi.C.sb_event_start(tid)
    event()
    ffi.C.sb_event_stop(tid)
    n = n + 1
  end
  print("ran " .. n)
end
"#,
    );
    let r = dbbench(&[&s, "run", "--events=101", "--threads=3"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let ran: u64 = r.stdout.lines().filter_map(|l| l.strip_prefix("ran ")).map(|n| n.parse::<u64>().unwrap()).sum();
    assert_eq!(ran, 101, "{}", r.stdout);
    assert_eq!(r.number("total number of events:"), Some(101.0));
    // 200 µs sleeps: the latency figures are real, not zero.
    assert!(r.number("min:").unwrap() >= 0.2, "{}", r.stdout);
    // An error inside a script's thread_run fails the run like one in event().
    let (_d2, s2) = script("function event() end\nfunction thread_run() error('broken loop') end\n");
    let r = dbbench(&[&s2, "run", "--events=10"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("FATAL: `thread_run' function failed:") && r.stdout.contains("broken loop"),
        "{}",
        r.stdout
    );
}

/// sysbench.report_csv / report_json as hooks, and sysbench.histogram.
#[test]
fn lua_report_formatters_and_histogram_objects() {
    let (_d, s) = script(&format!(
        "{SLEEPY}\nsysbench.hooks.report_intermediate = sysbench.report_csv\n\
         sysbench.hooks.report_cumulative = sysbench.report_json\n\
         function init() local h = sysbench.histogram.new(100, 0.001, 10) for i = 1, 10 do h:update(2) end h:print() end\n"
    ));
    let r = dbbench(&[&s, "run", "--time=2", "--report-interval=1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The histogram: one bucket holding the ten 2 ms values.
    let row = r.stdout.lines().find(|l| l.contains(" |*")).expect("a histogram row");
    assert!(row.trim_start().starts_with("2.0") && row.ends_with(" 10"), "{row}");
    let csv: Vec<&str> = r.stdout.lines().filter(|l| l.split(',').count() == 10).collect();
    assert!(!csv.is_empty(), "{}", r.stdout);
    assert!(csv.iter().all(|l| l.split(',').all(|f| f.trim().parse::<f64>().is_ok())), "{csv:?}");
    let json = &r.stdout[r.stdout.find("[\n").expect("JSON array start")..];
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("a closed JSON array");
    assert!(v[0]["tps"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v[0]["threads"], 0);
}

/// A 0.5-era script (db_* API, options as global strings) on the embedded
/// database, reported in sysbench 0.5's layout.
#[test]
fn legacy_script_and_report_layout_on_sqlite() {
    let dir = tempdir("legacy05");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/api05.lua");
    let s = script.display().to_string();
    let common = ["--oltp-table-size=40", "--points=2"];
    let run = |cmd: &str, more: &[&str]| {
        let mut a = vec![s.as_str(), cmd];
        a.extend(common);
        a.extend(more);
        dbbench_in(&dir, &a)
    };
    assert_eq!(run("prepare", &[]).code, 0);
    let r = run("run", &["--events=20", "--format=legacy"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("OLTP test statistics:"), "{}", r.stdout);
    // 2 selects + 1 update per event; BEGIN and COMMIT are "other".
    assert_eq!(r.number("read/write requests:"), Some(60.0), "{}", r.stdout);
    assert_eq!(r.number("other operations:"), Some(40.0), "{}", r.stdout);
    assert_eq!(r.number("transactions:"), Some(20.0));
    assert!(r.stdout.contains("approx.  95 percentile:"), "{}", r.stdout);
    assert_eq!(run("cleanup", &[]).code, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A script on stdin: `dbbench - run`, or no test name at all (body only).
#[test]
fn script_from_stdin() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let feed = |args: &[&str], script: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dbbench"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = feed(&[], "print('body ran')");
    assert_eq!(code, Some(0));
    assert!(out.contains("body ran"), "{out}");
    let (code, out) = feed(&["-", "run", "--events=7"], "function event() end");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("total number of events:              7"), "{out}");
}

/// A script calling an API function dbbench does not provide fails with
/// the function's name and the script line, exit 1.
#[test]
fn missing_api_functions_are_named_with_the_script_line() {
    for (body, want) in [
        ("function event()\n  sysbench.sql.nonexistent()\nend\n", "t.lua:2: attempt to call field 'nonexistent'"),
        ("function event()\n  ffi.C.sb_unknown_fn(1)\nend\n", "t.lua:2: missing declaration for symbol 'sb_unknown_fn'"),
        (
            "ffi.cdef('void sb_not_exported(int);')\nfunction event()\n  ffi.C.sb_not_exported(1)\nend\n",
            "undefined symbol: sb_not_exported",
        ),
        (
            "function thread_init() con = sysbench.sql.driver():connect() end\nfunction event()\n  con:execute_batch('x')\nend\n",
            "t.lua:3: attempt to call method 'execute_batch'",
        ),
    ] {
        let (_d, s) = script(body);
        let r = dbbench(&[&s, "run", "--events=1"]);
        assert_eq!(r.code, 1, "{body}: {}", r.stdout);
        let fatal = r.stdout.lines().find(|l| l.starts_with("FATAL: `thread_run' function failed: ")).unwrap_or_else(|| panic!("{}", r.stdout));
        assert!(fatal.contains(want), "{body}: {fatal}");
    }
}

/// An event() that never returns (a busy Lua loop, compiled by the JIT) is
/// ended by --forced-shutdown with its report and exit code 2.
#[test]
fn forced_shutdown_ends_an_event_that_never_returns() {
    let (_d, s) = script("function event() local n = 0 while true do n = n + 1 end end\n");
    let t0 = std::time::Instant::now();
    let r = dbbench(&[&s, "run", "--time=1", "--forced-shutdown=1", "--threads=2"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("FATAL: The --max-time limit has expired, forcing shutdown..."), "{}", r.stdout);
    assert!(r.stdout.contains("Number of unfinished transactions on forced shutdown: 2"), "{}", r.stdout);
    assert!(t0.elapsed() < std::time::Duration::from_secs(20));
}

/// Review fixes, each as sysbench behaves: rand.varstring rejects lengths
/// C would wrap; a uint64 cdata binds as an integer; the global thread_run
/// is the default loop and can be wrapped; an interval report_json array
/// is closed before the built-in final report.
#[test]
fn varstring_bounds_uint64_params_wrapped_thread_run_and_json_then_text() {
    let (_d, s) = script(
        r#"
function init()
  local v = sysbench.rand.varstring(3, 5)
  assert(#v >= 3 and #v <= 5 and v:match("^[0-z]+$"), v)
  local ok, err = pcall(sysbench.rand.varstring, 5, -1)
  print("varstring bad: " .. tostring(ok) .. " " .. tostring(err))
  local con = sysbench.sql.driver():connect()
  local st = con:prepare("SELECT ?")
  local p = st:bind_create(sysbench.sql.type.BIGINT)
  st:bind_param(p)
  p:set(sysbench.rand.uniform_uint64() % 1000000ULL)
  print("uint64 param: " .. st:execute():fetch_row()[1])
end
local base = thread_run
function thread_run(tid)
  print("wrapped " .. tid)
  return base(tid)
end
function event() end
sysbench.hooks.report_intermediate = sysbench.report_json
"#,
    );
    let r = dbbench(&[&s, "run", "--time=2", "--report-interval=1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("varstring bad: false") && r.stdout.contains("need 0 <= min <= max"), "{}", r.stdout);
    let n: u64 = r.stdout.lines().find_map(|l| l.strip_prefix("uint64 param: ")).expect("param line").parse().unwrap();
    assert!(n < 1_000_000);
    assert!(r.stdout.contains("wrapped 0"), "{}", r.stdout);
    assert!(r.number("total number of events:").unwrap() > 0.0, "{}", r.stdout);
    // The interval objects form a closed JSON array before the text report.
    let start = r.stdout.find("[\n").expect("JSON array");
    let end = r.stdout[start..].find("\n]\n").expect("closed array") + start + 3;
    let v: serde_json::Value = serde_json::from_str(&r.stdout[start..end]).expect("valid JSON");
    assert!(v.as_array().is_some_and(|a| !a.is_empty()), "{v}");
    assert!(end < r.stdout.find("General statistics").unwrap(), "{}", r.stdout);
}

#[test]
fn verbosity_levels_follow_sysbench() {
    let (_d, s) = script(SLEEPY);
    let base = [s.as_str(), "run", "--events=40", "--threads=2", "--time=0", "--ms=0", "--rand-seed=1"];
    // 2 (warnings only): a clean run prints nothing at all, as sysbench.
    let quiet = dbbench(&[&base[..], &["--verbosity=2"]].concat());
    assert_eq!(quiet.code, 0, "{}", quiet.stdout);
    assert_eq!(quiet.stdout, "", "verbosity 2 printed");
    assert_eq!(quiet.stderr, "");
    // ... but a warning still shows at 2, and not at 1 (a script that
    // stops itself, so the "endless" run ends at once).
    let endless_warning = "WARNING: Both event and time limits are disabled";
    let (_d2, stop) = script("function event() return true end\n");
    let w2 = dbbench(&[&stop, "run", "--events=0", "--time=0", "--verbosity=2"]);
    assert!(w2.stdout.contains(endless_warning), "{}", w2.stdout);
    let w1 = dbbench(&[&stop, "run", "--events=0", "--time=0", "--verbosity=1"]);
    assert!(!w1.stdout.contains(endless_warning), "{}", w1.stdout);
    // JSON is data, printed at any verbosity.
    let json = dbbench(&[&base[..], &["--verbosity=0", "--format=json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json at verbosity 0");
    assert_eq!(v["counters"]["events"], 40);
    // 4 (info): the limit line, folded as sysbench's logger does, and Done.
    let info = dbbench(&[&base[..], &["--verbosity=4"]].concat());
    assert!(
        info.stdout.contains("Event limit exceeded, exiting...\n(last message repeated 1 times)\nDone.\n"),
        "{}",
        info.stdout
    );
    assert!(!info.stdout.contains("DEBUG:"), "{}", info.stdout);
    // Bad values: one line, exit 1.
    let bad = dbbench(&[&base[..], &["--verbosity=6"]].concat());
    assert_eq!(bad.code, 1);
    assert!(bad.stdout.contains("FATAL: Invalid value for --verbosity: 6"), "{}", bad.stdout);
}

#[test]
fn debug_prints_thread_lines_and_measured_per_thread_latency() {
    let (_d, s) = script(SLEEPY);
    let r = dbbench(&[&s, "run", "--events=30", "--threads=3", "--time=0", "--ms=2", "--debug", "--validate"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("Debug mode enabled.\n\nValidation checks: on.\n\n"), "{}", r.stdout);
    for t in 0..3 {
        assert!(r.stdout.contains(&format!("DEBUG: Worker thread (#{t}) started\n")), "{}", r.stdout);
        assert!(r.stdout.contains(&format!("DEBUG: Worker thread (#{t}) initialized\n")), "{}", r.stdout);
    }
    let per_thread: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("DEBUG:     thread #")).collect();
    assert_eq!(per_thread.len(), 3, "{}", r.stdout);
    let mut events = 0;
    for l in per_thread {
        // "DEBUG:     thread #  0: min: 0.0021s  avg: 0.0021s  max: 0.0023s  events: 10"
        let n = l.rsplit("events: ").next().unwrap().trim().parse::<u64>().unwrap();
        events += n;
        if n == 0 {
            // A client the others left no event to: nothing measured.
            assert!(l.contains("min: n/a  avg: n/a  max: n/a"), "{l}");
            continue;
        }
        let secs = |label: &str| -> f64 {
            let rest = &l[l.find(label).unwrap() + label.len()..];
            rest.split_whitespace().next().unwrap().trim_end_matches('s').parse().unwrap()
        };
        let (min, avg, max) = (secs("min: "), secs("avg: "), secs("max: "));
        // Each event sleeps 2 ms: measured, not made up.
        assert!(min >= 0.0019 && min <= avg && avg <= max, "{l}");
    }
    assert_eq!(events, 30);
    assert!(r.stdout.contains("DEBUG:                  total time taken by event execution: "), "{}", r.stdout);
    // Under JSON the messages go to stderr: stdout stays one document.
    let j = dbbench(&[
        &s,
        "run",
        "--events=10",
        "--threads=2",
        "--time=0",
        "--ms=2",
        "--debug",
        "--format=json",
        "--num-threads=2",
    ]);
    assert_eq!(j.code, 0, "{}{}", j.stdout, j.stderr);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap_or_else(|e| panic!("{e}: {}", j.stdout));
    assert_eq!(v["counters"]["events"], 10);
    let fair = v["fairness"].as_array().unwrap();
    assert_eq!(fair.iter().map(|f| f["events"].as_u64().unwrap()).sum::<u64>(), 10, "{}", j.stdout);
    // Each event sleeps 2 ms: a client with events has a measured minimum.
    for f in fair.iter().filter(|f| f["events"].as_u64() > Some(0)) {
        assert!(f["min_s"].as_f64().is_some_and(|m| m >= 0.0019), "{}", j.stdout);
    }
    assert!(j.stderr.contains("DEBUG: Worker thread (#1) started"), "{}", j.stderr);
    assert!(j.stderr.contains("WARNING: --num-threads is deprecated"), "{}", j.stderr);
    // Checkpoints are a text-layout feature: under JSON they are ignored
    // with a warning, and the document covers the whole run.
    let c = dbbench(&[&s, "run", "--time=2", "--threads=1", "--ms=1", "--report-checkpoints=1", "--format=json"]);
    assert_eq!(c.code, 0, "{}{}", c.stdout, c.stderr);
    let v: serde_json::Value = serde_json::from_str(&c.stdout).unwrap_or_else(|e| panic!("{e}: {}", c.stdout));
    // One client: the latencies sum to about the run's 2 s (1 s if the
    // figures had restarted at the checkpoint).
    let busy_ms = v["latency"]["sum_ms"].as_f64().unwrap();
    assert!(busy_ms > 1700.0, "{busy_ms} ms of 2 s: {}", c.stdout);
    assert!(c.stderr.contains("WARNING: --report-checkpoints reports in the text layouts only"), "{}", c.stderr);
}

/// The default event loop's error protocol: an error table with
/// RESTART_EVENT runs before_restart_event and the same event again (one
/// event, however often it restarts); a plain error ends the run with its
/// place in the script.
#[test]
fn restart_event_errors_rerun_the_event_and_other_errors_fail() {
    let (_d, s) = script(
        r#"
local calls, restarts = 0, 0
function sysbench.hooks.before_restart_event(err) restarts = restarts + 1 end
function event()
  calls = calls + 1
  if calls % 3 == 0 then error({errcode = sysbench.error.RESTART_EVENT}) end
  if sysbench.opt.fail_at > 0 and calls == sysbench.opt.fail_at then error("broken on purpose") end
end
sysbench.cmdline.options = { fail_at = {"fail at this call", 0} }
function thread_done() print(string.format("calls=%d restarts=%d", calls, restarts)) end
"#,
    );
    let r = dbbench(&[&s, "run", "--events=100", "--threads=1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Every third call restarts: event 2k+1 and 2k+2 are calls 3k+1 and
    // 3k+2, so event 100 is call 149, after 49 restarts.
    assert!(r.stdout.contains("calls=149 restarts=49"), "{}", r.stdout);
    assert_eq!(r.number("total number of events:"), Some(100.0), "{}", r.stdout);
    let r = dbbench(&[&s, "run", "--events=100", "--threads=1", "--fail-at=40"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(format!("{}{}", r.stdout, r.stderr).contains("t.lua:7: broken on purpose"), "{}{}", r.stdout, r.stderr);
}

// ---------------------------------------------------------------------------
// sysbench 1.0.20 compatibility. Where the comparison is the point,
// Debian's sysbench runs the same thing (the comparison is skipped without
// it, a failure under CI); the expected values are spelled out too, so each
// test means something on its own.

/// Runs `program` in `dir` with `env` changes (`None` removes a variable),
/// killed after 60 s so that a hang fails the test instead of stalling it.
fn run_in(program: &str, dir: &std::path::Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let mut cmd = std::process::Command::new("timeout");
    cmd.arg("60").arg(program).args(args).current_dir(dir);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("run {program}: {e}"));
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const DBBENCH: &str = env!("CARGO_BIN_EXE_dbbench");

fn test_script(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts").join(name).display().to_string()
}

/// `require` and test names search sysbench 1.0.20's path: the current
/// directory first (not the script's), the built-ins where sysbench's
/// bundled scripts are (last), `LUA_PATH` replacing it all with `;;` for
/// the default. Each case runs under both tools and must print the same.
#[test]
fn modules_are_found_in_sysbench_order() {
    let root = tempdir("modules");
    for d in ["suite", "elsewhere", "other"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let write = |f: &str, body: &str| std::fs::write(root.join(f), body).unwrap();
    write("suite/oltp_common.lua", "MARK = 'suite'\n");
    write("other/oltp_common.lua", "MARK = 'other'\n");
    // The built-in (or sysbench's bundled) oltp_common raises "Command is
    // required" without a command: MARK stays nil.
    write("suite/probe.lua", "pcall(require, 'oltp_common')\nprint('oltp_common: ' .. (MARK or 'built-in'))\n");
    write("suite/select.lua", "print(\"the suite's select.lua\")\n");
    write("suite/mymod.lua", "MYMOD = true\n");
    write("suite/needs_mymod.lua", "require('mymod')\nprint('mymod loaded')\n");
    let other = format!("{}/?.lua", root.join("other").display());
    let other_then_default = format!("{other};;");
    let default_then_other = format!(";;{other}");
    let cases: Vec<(&str, Option<&str>, Vec<&str>, &str)> = vec![
        ("suite", None, vec!["probe.lua"], "oltp_common: suite"),
        ("elsewhere", None, vec!["../suite/probe.lua"], "oltp_common: built-in"),
        ("elsewhere", Some(&other), vec!["../suite/probe.lua"], "oltp_common: other"),
        ("elsewhere", Some(&other_then_default), vec!["../suite/probe.lua"], "oltp_common: other"),
        ("suite", Some(&default_then_other), vec!["probe.lua"], "oltp_common: suite"),
        ("suite", None, vec!["select"], "the suite's select.lua"),
        ("suite", None, vec!["needs_mymod.lua"], "mymod loaded"),
        ("elsewhere", None, vec!["../suite/needs_mymod.lua"], "module 'mymod' not found"),
        (
            "elsewhere",
            Some("/nonexistent/?.lua"),
            vec!["oltp_read_only", "help"],
            "Cannot find benchmark 'oltp_read_only'",
        ),
    ];
    let sysbench = have_sysbench();
    for (dir, lua_path, args, want) in &cases {
        let env = [("LUA_PATH", *lua_path)];
        let r = run_in(DBBENCH, &root.join(dir), args, &env);
        let out = format!("{}{}", r.stdout, r.stderr);
        assert!(out.contains(want), "dbbench in {dir} with LUA_PATH={lua_path:?} {args:?}: want '{want}':\n{out}");
        if sysbench {
            let s = run_in("sysbench", &root.join(dir), args, &env);
            let sout = format!("{}{}", s.stdout, s.stderr);
            assert!(
                sout.contains(want),
                "sysbench in {dir} with LUA_PATH={lua_path:?} {args:?}: want '{want}':\n{sout}"
            );
        }
    }
    // The module that only the script's directory has: the error says why.
    let r = run_in(DBBENCH, &root.join("elsewhere"), &["../suite/needs_mymod.lua"], &[("LUA_PATH", None)]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("../suite/mymod.lua is not searched") && r.stdout.contains("run from ../suite"),
        "{}",
        r.stdout
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The issue's case: a suite that ships its own oltp_common.lua (here one
/// point select per event) gets it, not the built-in one (14 reads per
/// event), whether the test is named or given as a path.
#[test]
fn a_suites_own_oltp_common_wins_over_the_built_in() {
    let dir = tempdir("suite");
    std::fs::write(
        dir.join("oltp_common.lua"),
        r#"-- the suite's own oltp_common: one point select per event
function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, c TEXT)")
  con:query("INSERT INTO sbtest1 VALUES (1, 'a')")
end
function cleanup() sysbench.sql.driver():connect():query("DROP TABLE sbtest1") end
function thread_init() con = sysbench.sql.driver():connect() end
function event() con:query("SELECT c FROM sbtest1 WHERE id = 1") end
"#,
    )
    .unwrap();
    std::fs::write(dir.join("oltp_read_only.lua"), "require('oltp_common')\n").unwrap();
    for test in ["oltp_read_only", "./oltp_read_only.lua"] {
        let r = dbbench_in(&dir, &[test, "prepare"]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let r = dbbench_in(&dir, &[test, "run", "--events=10"]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert_eq!(r.rwo(), (10, 0, 0), "{test}: {}", r.stdout);
        assert_eq!(dbbench_in(&dir, &[test, "cleanup"]).code, 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The values a driverless script sees, the thread count, the deprecation
/// warnings and (for event-limited runs) the events, for a command line.
fn limits_seen(
    program: &str,
    dir: &std::path::Path,
    script: &str,
    args: &[&str],
) -> (String, Vec<String>, Option<f64>) {
    let mut all = vec![script, "run"];
    all.extend_from_slice(args);
    let r = run_in(program, dir, &all, &[]);
    assert_eq!(r.code, 0, "{program} {args:?}: {}{}", r.stdout, r.stderr);
    let out = format!("{}{}", r.stdout, r.stderr);
    let limits = out.lines().find(|l| l.starts_with("limits:")).unwrap_or_else(|| panic!("{out}")).to_string();
    let mut warnings: Vec<String> = out.lines().filter(|l| l.starts_with("WARNING: --")).map(str::to_string).collect();
    warnings.sort();
    let events = if args.iter().any(|a| a.contains("events=") || a.contains("max-requests=")) {
        r.number("total number of events:")
    } else {
        None
    };
    (limits, warnings, events)
}

/// `--num-threads --max-requests --max-time --tx-rate` apply as in sysbench
/// 1.0.20: at their "not given" value (1 thread, 0) they change nothing, in
/// either order; with a real value they win over the new spelling, in
/// either order, with the deprecation warning. Each pair against sysbench.
#[test]
fn old_option_spellings_follow_sysbench_precedence() {
    let dir = tempdir("spellings");
    let script = dir.join("limits.lua");
    std::fs::write(
        &script,
        "function init()\n  local o = sysbench.opt\n  print(string.format('limits: threads=%s events=%s time=%s rate=%s', \
         tostring(o.threads), tostring(o.events), tostring(o.time), tostring(o.rate)))\nend\nfunction event() end\n",
    )
    .unwrap();
    let script = script.display().to_string();
    let w = |s: &str| {
        format!(
            "WARNING: --{s} is deprecated, use --{} instead",
            match s {
                "num-threads" => "threads",
                "max-requests" => "events",
                "max-time" => "time",
                _ => "rate",
            }
        )
    };
    #[rustfmt::skip]
    // (arguments, the limits the script sees, the warnings, the events run)
    type Case<'a> = (Vec<&'a str>, &'a str, Vec<String>, Option<f64>);
    let cases: Vec<Case> = vec![
        (vec!["--events=100", "--max-requests=0"], "threads=1 events=100 time=10 rate=0", vec![], Some(100.0)),
        (vec!["--max-requests=0", "--events=100"], "threads=1 events=100 time=10 rate=0", vec![], Some(100.0)),
        (
            vec!["--threads=4", "--num-threads=1", "--events=100"],
            "threads=4 events=100 time=10 rate=0",
            vec![],
            Some(100.0),
        ),
        (vec!["--time=1", "--max-time=0"], "threads=1 events=0 time=1 rate=0", vec![], None),
        (vec!["--max-time=0", "--time=1"], "threads=1 events=0 time=1 rate=0", vec![], None),
        (vec!["--rate=100", "--tx-rate=0", "--events=20"], "threads=1 events=20 time=10 rate=100", vec![], Some(20.0)),
        (
            vec!["--events=100", "--max-requests=50"],
            "threads=1 events=50 time=10 rate=0",
            vec![w("max-requests")],
            Some(50.0),
        ),
        (
            vec!["--max-requests=50", "--events=100"],
            "threads=1 events=50 time=10 rate=0",
            vec![w("max-requests")],
            Some(50.0),
        ),
        (
            vec!["--threads=4", "--num-threads=2", "--events=10"],
            "threads=2 events=10 time=10 rate=0",
            vec![w("num-threads")],
            Some(10.0),
        ),
        (
            vec!["--num-threads=2", "--threads=4", "--events=10"],
            "threads=2 events=10 time=10 rate=0",
            vec![w("num-threads")],
            Some(10.0),
        ),
        (vec!["--time=3", "--max-time=1"], "threads=1 events=0 time=1 rate=0", vec![w("max-time")], None),
        (
            vec!["--rate=100", "--tx-rate=50", "--events=5"],
            "threads=1 events=5 time=10 rate=50",
            vec![w("tx-rate")],
            Some(5.0),
        ),
    ];
    let sysbench = have_sysbench();
    for (args, limits, warnings, events) in cases {
        let ours = limits_seen(DBBENCH, &dir, &script, &args);
        assert_eq!(ours, (format!("limits: {limits}"), warnings, events), "dbbench {args:?}");
        if sysbench {
            assert_eq!(
                limits_seen("sysbench", &dir, &script, &args),
                ours,
                "sysbench (left) and dbbench differ on {args:?}"
            );
        }
    }
    // A negative old value (sysbench takes it as unsigned: --num-threads=-1
    // tried to allocate 2^32 threads) or 0 threads: one line, exit 1.
    for bad in ["--num-threads=-1", "--num-threads=0", "--max-requests=-5", "--max-time=-1", "--tx-rate=-1"] {
        let r = run_in(DBBENCH, &dir, &[&script, "run", bad], &[]);
        assert_eq!(r.code, 1, "{bad}: {}", r.stdout);
        let name = bad.split('=').next().unwrap();
        assert!(r.stdout.contains(&format!("FATAL: Invalid value for {name}:")), "{bad}: {}", r.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 0.5 script reads the run's thread count and limits as the globals
/// num_threads, max_requests, max_time and tx_rate, whichever spelling
/// set them (0.5 had only the old ones); sysbench.opt has them too. With
/// the old spellings, sysbench 1.0.20 shows the same values.
#[test]
fn old_globals_carry_the_run_s_threads_and_limits() {
    let dir = tempdir("globals05");
    let script = test_script("legacy05_limits.lua");
    let lines = |program: &str, args: &[&str]| {
        let r = run_in(program, &dir, &[&[script.as_str(), "run"], args].concat(), &[]);
        assert_eq!(r.code, 0, "{program} {args:?}: {}{}", r.stdout, r.stderr);
        let pick =
            |p: &str| r.stdout.lines().find(|l| l.starts_with(p)).unwrap_or_else(|| panic!("{}", r.stdout)).to_string();
        (pick("globals:"), pick("opt:"))
    };
    let (globals, opt) = lines(DBBENCH, &["--threads=4", "--events=8"]);
    assert_eq!(globals, "globals: num_threads=4 max_requests=8 max_time=10 tx_rate=0");
    assert_eq!(opt, "opt: threads=4 events=8 time=10 rate=0 num_threads=4 max_requests=8 max_time=10 tx_rate=0");
    let old = ["--num-threads=3", "--max-requests=9", "--max-time=5", "--tx-rate=0"];
    let ours = lines(DBBENCH, &old);
    assert_eq!(ours.0, "globals: num_threads=3 max_requests=9 max_time=5 tx_rate=0");
    if have_sysbench() {
        assert_eq!(lines("sysbench", &old), ours, "sysbench (left) and dbbench differ");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// 0.5 scripts that read num_threads (select_random_points' per-thread
/// slices, parallel_prepare's table split, bulk_insert's tables per thread)
/// run on the embedded SQLite with the 1.0 spellings; before, num_threads
/// was nil and each exited 1. (tests/golden.rs runs them beside sysbench.)
#[test]
fn old_scripts_using_num_threads_run() {
    let dir = tempdir("scripts05");
    let run = |script: &str, args: &[&str]| {
        let r = run_in(DBBENCH, &dir, &[&[script], args].concat(), &[]);
        assert_eq!(r.code, 0, "{script} {args:?}: {}{}", r.stdout, r.stderr);
        r
    };
    // select_random_points: every thread in its own quarter of k.
    let points = test_script("legacy05_points.lua");
    run(&points, &["prepare", "--oltp-table-size=100"]);
    let r = run(&points, &["run", "--oltp-table-size=100", "--threads=4", "--events=40"]);
    let mut slices: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("slice ")).collect();
    slices.sort();
    assert_eq!(
        slices,
        ["slice 0 of 4: 0..25", "slice 1 of 4: 25..50", "slice 2 of 4: 50..75", "slice 3 of 4: 75..100"]
    );
    assert_eq!(r.rwo(), (40, 0, 0));
    run(&points, &["cleanup"]);
    // parallel_prepare: 5 tables over 3 threads, each created once.
    let pp = test_script("legacy05_parallel_prepare.lua");
    let args = ["--oltp-tables-count=5", "--oltp-table-size=20"];
    run(&pp, &[&["run", "--threads=3", "--time=1"], &args[..]].concat());
    let db = rusqlite::Connection::open(dir.join("dbbench.sqlite")).unwrap();
    for n in 1..=5 {
        let rows: i64 = db.query_row(&format!("SELECT count(*) FROM sbtest{n}"), [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 20, "sbtest{n}");
    }
    run(&pp, &[&["cleanup"], &args[..]].concat());
    // bulk_insert: one table per thread, both filled.
    let bulk = test_script("legacy05_bulk_insert.lua");
    run(&bulk, &["prepare", "--threads=2"]);
    run(&bulk, &["run", "--threads=2", "--time=1"]);
    for t in 0..2 {
        let rows: i64 = db.query_row(&format!("SELECT count(*) FROM sbtest{t}"), [], |r| r.get(0)).unwrap();
        assert!(rows > 0, "sbtest{t} is empty");
    }
    run(&bulk, &["cleanup", "--threads=2"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every kind of error names the script's file and line, never dbbench's
/// prelude; an error object is described, never `table: 0x...`; a bad
/// argument to an API function reads as Lua's own message; a traceback
/// follows only when it adds frames of the script.
#[test]
fn script_errors_name_the_script_line() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("function event()\n  error({code = 1})\nend\n", &["run"], "t.lua:2: error object is a table without a message: {code = 1}"),
        ("function event()\n  error()\nend\n", &["run"], "t.lua:2: error() called without a message"),
        (
            "function event()\n  error(setmetatable({}, {__tostring = function() return 'custom' end}))\nend\n",
            &["run"],
            "t.lua:2: custom",
        ),
        ("function thread_init()\n  error({})\nend\nfunction event() end\n", &["run"], "t.lua:2: error object is a table without a message: {}"),
        (
            "function thread_init() con = sysbench.sql.driver():connect() end\nfunction event()\n  con:query_row('SELECT * FROM nosuch')\nend\n",
            &["run"],
            "t.lua:3: SQL error",
        ),
        ("function event()\n  db_query('SELECT * FROM nosuch')\nend\n", &["run"], "t.lua:2: SQL error"),
        (
            "function event()\n  local c = sysbench.sql.driver():connect()\n  c:bulk_insert_init('INSERT INTO nosuch VALUES')\n  c:bulk_insert_next('(1)')\n  c:bulk_insert_done()\nend\n",
            &["run"],
            "t.lua:5: SQL error",
        ),
        (
            "function thread_init() con = sysbench.sql.driver():connect() end\nfunction event()\n  local s = con:prepare('SELECT 1')\n  s:bind_create(99)\nend\n",
            &["run"],
            "t.lua:4: Unsupported argument type: 99",
        ),
        ("function event()\n  sysbench.sql.driver('nosuch')\nend\n", &["run"], "t.lua:2: failed to initialize the DB driver"),
        (
            "function event()\n  sysbench.histogram.new(10, 1, 2):update('x')\nend\n",
            &["run"],
            "t.lua:2: bad argument #1 to 'update' (number expected, got string)",
        ),
        ("local x = nil\nx.y = 1\n", &[], "t.lua:2: attempt to index local 'x' (a nil value)"),
        ("sysbench.cmdline.commands = { c = { function()\n  error({})\nend } }\n", &["c"], "t.lua:2: error object is a table"),
    ];
    for (body, cmd, want) in cases {
        let (dir, s) = script(body);
        let r = dbbench_in(&dir, &[&[s.as_str()], *cmd, &["--events=3"]].concat());
        let out = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code, 1, "{body}: {out}");
        assert!(out.contains(want), "{body}: want '{want}' in:\n{out}");
        for never in ["prelude.lua", "table: 0x", "f64", "stack traceback", "ScriptHistogram"] {
            assert!(!out.contains(never), "{body}: '{never}' in:\n{out}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    // Through several functions of the script: the traceback lists them.
    let (dir, s) = script("local function inner()\n  error('deep')\nend\nlocal function mid() inner() end\nfunction event()\n  mid()\nend\n");
    let r = dbbench_in(&dir, &[&s, "run", "--events=1"]);
    assert!(r.stdout.contains("FATAL: `thread_run' function failed: "), "{}", r.stdout);
    assert!(r.stdout.contains("t.lua:2: deep\nstack traceback:\n"), "{}", r.stdout);
    let trace: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with('\t')).collect();
    assert_eq!(trace.len(), 3, "{}", r.stdout);
    assert!(
        trace[0].contains("t.lua:2:") && trace[1].contains("t.lua:4:") && trace[2].contains("t.lua:6:"),
        "{trace:?}"
    );
    assert!(!r.stdout.contains("prelude"), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Errors whose text sysbench and dbbench share: the same FATAL line (the
/// path differs only in the temporary directory).
#[test]
fn script_errors_read_as_in_sysbench() {
    if !have_sysbench() {
        return;
    }
    let ffi_sleep = "local ffi = require('ffi')\nffi.cdef('int usleep(unsigned int);')\n";
    let ev: &[&str] = &["run", "--events=3"];
    let cases: Vec<(String, &[&str])> = vec![
        ("local function inner()\n  error('deep')\nend\nlocal function mid() inner() end\nfunction event()\n  mid()\nend\n".into(), ev),
        ("function event()\n  error(42)\nend\n".into(), ev),
        ("function init()\n  local t = nil\n  return t.x\nend\nfunction event() end\n".into(), ev),
        ("function prepare()\n  error('prep failed')\nend\n".into(), &["prepare"]),
        ("sysbench.cmdline.commands = { foo = { function()\n  error('cmd failed')\nend } }\n".into(), &["foo"]),
        (
            "sysbench.hooks.before_restart_event = function(e)\n  error('hook failed')\nend\nfunction event()\n  error({errcode = sysbench.error.RESTART_EVENT})\nend\n".into(),
            ev,
        ),
        ("local x = nil\nx.y = 1\n".into(), &[]),
        ("function event() end\nfunction done()\n  error('done failed')\nend\n".into(), ev),
        (
            format!("{ffi_sleep}sysbench.hooks.report_intermediate = function()\n  error('rep failed')\nend\nfunction event() ffi.C.usleep(300000) end\n"),
            &["run", "--time=2", "--report-interval=1"],
        ),
    ];
    for (body, args) in &cases {
        let (dir, s) = script(body);
        let fatal = |program: &str| {
            let r = run_in(program, &dir, &[&["t.lua"], &args[..]].concat(), &[]);
            let out = format!("{}{}", r.stdout, r.stderr);
            out.lines()
                .find(|l| l.starts_with("FATAL: "))
                .unwrap_or_else(|| panic!("{program}: {body}\n{out}"))
                .to_string()
        };
        assert!(s.ends_with("/t.lua"));
        assert_eq!(fatal(DBBENCH), fatal("sysbench"), "{body}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Without --rand-seed, sysbench's header says "from current time"; with
/// one, the seed as given (negative too).
#[test]
fn seed_line_says_current_time_without_rand_seed() {
    let (dir, s) = script("function event() end\n");
    let seed_line = |program: &str, extra: &[&str]| {
        let r = run_in(program, &dir, &[&[s.as_str(), "run", "--events=1"], extra].concat(), &[]);
        r.stdout.lines().find(|l| l.starts_with("Initializing random number generator")).map(str::to_string)
    };
    let cases: [(&[&str], &str); 3] = [
        (&[], "Initializing random number generator from current time"),
        (&["--rand-seed=5"], "Initializing random number generator from seed (5)."),
        (&["--rand-seed=-1"], "Initializing random number generator from seed (-1)."),
    ];
    for (extra, want) in cases {
        assert_eq!(seed_line(DBBENCH, extra).as_deref(), Some(want));
        if have_sysbench() {
            assert_eq!(seed_line("sysbench", extra).as_deref(), Some(want));
        }
    }
    // The clock's seed is shown under --debug, and it repeats the streams.
    let r = run_in(DBBENCH, &dir, &[&s, "run", "--events=1", "--debug"], &[]);
    assert!(r.stdout.contains("DEBUG: the clock gave the random seed "), "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every numeric option is range-checked with one line and exit 1: no
/// "Inserting -9223372036854775808 records", no panic, no endless load.
#[test]
fn numbers_out_of_range_are_one_line() {
    let dir = tempdir("ranges");
    let cases: &[(&[&str], &str)] = &[
        (
            &["oltp_point_select", "prepare", "--table-size=99999999999999999999999"],
            "'table_size' option: '99999999999999999999999' (numbers are limited to ±2^53",
        ),
        (
            &["oltp_point_select", "prepare", "--table-size=3000000000"],
            "FATAL: Invalid value for --table-size: 3000000000. Use a whole number from 0 to 2147483647.",
        ),
        (&["oltp_point_select", "prepare", "--table-size=-5"], "FATAL: Invalid value for --table-size: -5."),
        (&["oltp_point_select", "prepare", "--table-size=2.5"], "FATAL: Invalid value for --table-size: 2.5."),
        (&["oltp_read_only", "run", "--tables=0"], "FATAL: Invalid value for --tables: 0."),
        (&["select_random_points", "run", "--random-points=0"], "FATAL: Invalid value for --random-points: 0."),
        (
            &["select_random_ranges", "run", "--number-of-ranges=40000"],
            "FATAL: Invalid value for --number-of-ranges: 40000.",
        ),
        (&["oltp_simple", "prepare", "--oltp-table-size=1e10"], "FATAL: Invalid value for --table-size: 1e10."),
        (&["oltp_point_select", "run", "--threads=2147483648"], "Invalid value for the 'threads' option: '2147483648'"),
        (&["oltp_point_select", "run", "--time=9999999999"], "Invalid value for the 'time' option: '9999999999'"),
        (&["oltp_point_select", "run", "--rate=1e300"], "Invalid value for the 'rate' option: '1e300'"),
        (
            &["oltp_point_select", "run", "--report-interval=1e30"],
            "Invalid value for the 'report_interval' option: '1e30'",
        ),
        (&["oltp_point_select", "run", "--report-interval=1e10"], "FATAL: Invalid value for --report-interval: 1e10."),
        (
            &["oltp_point_select", "run", "--report-interval=0.0000001"],
            "FATAL: Invalid value for --report-interval: 0.0000001.",
        ),
        (
            &["oltp_point_select", "run", "--report-checkpoints=99999999999999999"],
            "FATAL: Invalid value for --report-checkpoints: '99999999999999999'",
        ),
        (&["oltp_point_select", "run", "--forced-shutdown=inf"], "FATAL: Invalid value for --forced-shutdown: inf"),
        (&["oltp_point_select", "run", "--forced-shutdown=1e30"], "FATAL: Invalid value for --forced-shutdown: 1e30"),
        (
            &["oltp_point_select", "run", "--time=1", "--forced-shutdown=1e308%"],
            "FATAL: Invalid value for --forced-shutdown: 1e308%",
        ),
        (
            &["oltp_point_select", "run", "--thread-init-timeout=0"],
            "FATAL: Invalid value for --thread-init-timeout: 0.",
        ),
        (&["oltp_point_select", "run", "--rand-spec-iter=0"], "FATAL: Invalid value for --rand-spec-iter: 0."),
        (&["oltp_point_select", "run", "--rand-spec-pct=200"], "FATAL: Invalid value for --rand-spec-pct: 200."),
        (&["oltp_point_select", "run", "--rand-spec-res=-1"], "FATAL: Invalid value for --rand-spec-res: -1."),
        (&["oltp_point_select", "run", "--rand-pareto-h=1"], "FATAL: Invalid value for --rand-pareto-h: 1."),
        (&["oltp_point_select", "run", "--rand-zipfian-exp=-1"], "FATAL: Invalid value for --rand-zipfian-exp: -1."),
        (
            &["oltp_point_select", "run", "--client-threads=4000000000"],
            "FATAL: Invalid value for --client-threads: '4000000000'",
        ),
        (
            &["oltp_point_select", "prepare", "--sqlite-busy-timeout=99999999999999"],
            "Invalid value for the 'sqlite_busy_timeout' option: '99999999999999'",
        ),
        (&["tpch", "load", "--sf=1e30"], "dbbench tpch: --sf=1000000000000000000000000000000: out of range"),
        (
            &["tpch", "gen", "--sf=0.00001"],
            "dbbench tpch: --sf=0.00001: out of range; use a scale factor from 0.0001 to 100000",
        ),
        (
            &["tpch", "gen", "--sf=1", "--parts=1000000"],
            "dbbench tpch: --parts=1000000: use a whole number from 1 to 100000",
        ),
        (&["tpch", "gen", "--sf=1", "--threads=0"], "dbbench tpch: --threads=0: use a whole number from 1 to 1024"),
    ];
    for (args, want) in cases {
        let r = run_in(DBBENCH, &dir, args, &[]);
        let out = format!("{}{}", r.stdout, r.stderr);
        let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("dbbench 0.")).collect();
        assert_eq!(r.code, 1, "{args:?}: {out}");
        assert_eq!(lines.len(), 1, "{args:?}: one line expected:\n{out}");
        assert!(lines[0].contains(want), "{args:?}: want '{want}' in:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs dbbench in `dir`, reads its first stdout line and closes the pipe,
/// as `dbbench ... | head -1` does; returns the first line, exit code and
/// stderr.
fn first_line_then_close(dir: &std::path::Path, args: &[&str]) -> (String, i32, String) {
    use std::io::{BufRead, Read};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dbbench"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    // The reader (and with it the pipe's only read end) is dropped here.
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    (line, status.code().unwrap_or(-1), stderr)
}

#[test]
fn a_closed_stdout_ends_quietly_with_exit_zero() {
    // The run prints its header, then an interval line every 0.2 s into a
    // pipe nobody reads: the first write after the close must end dbbench
    // with 0 and nothing on stderr (was "FATAL: internal error ... Broken
    // pipe", exit 3).
    let dir = tempdir("epipe");
    let base = ["oltp_point_select", "--table-size=100", "--db-driver=sqlite", "--sqlite-db=e.db"];
    let r = dbbench_in(&dir, &args_of(&base, &["prepare"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let (line, code, stderr) =
        first_line_then_close(&dir, &args_of(&base, &["--time=5", "--report-interval=0.2", "run"]));
    assert!(line.starts_with("dbbench "), "{line}");
    assert_eq!((code, stderr.as_str()), (0, ""));
    let _ = std::fs::remove_dir_all(&dir);
}

fn args_of<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

#[test]
fn a_subcommand_name_is_never_shadowed_by_a_file() {
    let dir = tempdir("shadow");
    for name in ["lab", "report", "tpch", "querydiff", "compare", "server"] {
        std::fs::create_dir(dir.join(name)).unwrap();
        let r = dbbench_in(&dir, &[name, "--help"]);
        assert_eq!(r.code, 0, "{name}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains(&format!("dbbench {name} ")), "{name}: {}", r.stdout);
    }
    // A script of that name still runs, named as a path or with .lua.
    std::fs::write(dir.join("tpch.lua"), "function event() end\n").unwrap();
    let r = dbbench_in(&dir, &["tpch.lua", "--events=3", "run"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.number("total number of events:"), Some(3.0), "{}", r.stdout);
    std::fs::write(dir.join("lab/x.lua"), "function event() end\n").unwrap();
    let r = dbbench_in(&dir, &["./lab/x.lua", "--events=2", "run"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_lists_every_subcommand_and_help_names_one() {
    let r = dbbench(&["--help"]);
    for name in ["lab", "report", "compare", "tpch", "querydiff", "server"] {
        assert!(r.stdout.lines().any(|l| l.starts_with(&format!("  {name} "))), "{name} not listed:\n{}", r.stdout);
    }
    let h = dbbench(&["help"]);
    assert_eq!((h.code, h.stdout.as_str()), (0, r.stdout.as_str()));
    let t = dbbench(&["help", "tpch"]);
    assert_eq!((t.code, t.stdout.as_str()), (0, dbbench(&["tpch", "--help"]).stdout.as_str()));
    let n = dbbench(&["help", "oltp_read_write"]);
    assert_eq!(n.code, 1);
    assert_eq!(n.stderr.lines().count(), 1, "{}", n.stderr);
    assert!(n.stderr.contains("dbbench oltp_read_write help"), "{}", n.stderr);
}

/// Every subcommand reads `--k v`, `--k=v` and `--k_with_underscores`
/// alike (issue 22): each case fails or succeeds on the option's value,
/// never with "unknown option".
#[test]
fn subcommand_options_take_both_spellings_and_underscores() {
    let dir = tempdir("spellings");
    std::fs::write(dir.join("empty.sqlite"), b"").unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["report", "--store", "nowhere.sqlite"], 1, "no results store at nowhere.sqlite"),
        (&["report", "--store=nowhere.sqlite"], 1, "no results store at nowhere.sqlite"),
        (&["report", "--cv_limit", "0", "--store=nowhere.sqlite"], 1, "--cv-limit=0: use a percentage above 0"),
        (&["report", "--cv_limit=0"], 1, "--cv-limit=0: use a percentage above 0"),
        (&["compare", "a.json", "b.json", "--level", "2"], 1, "--level=2: use a confidence level"),
        (&["compare", "a.json", "b.json", "--level=2"], 1, "--level=2: use a confidence level"),
        (&["tpch", "gen", "--sf", "-1"], 1, "--sf=-1: not a positive number"),
        (&["tpch", "load", "--sf=0.01", "--foreign_keys", "maybe"], 1, "--foreign-keys=maybe: use yes or no"),
        (&["tpch", "load", "--sf=0.01", "--foreign-keys=maybe"], 1, "--foreign-keys=maybe: use yes or no"),
        (&["tpch", "power", "--sqlite-db", "empty.sqlite"], 1, "it was not loaded by `dbbench tpch load`"),
        (&["tpch", "power", "--sqlite_db=empty.sqlite"], 1, "it was not loaded by `dbbench tpch load`"),
        (&["tpch", "power", "--timeout", "60", "--sqlite-db=empty.sqlite"], 1, "it was not loaded"),
        (
            &["querydiff", "--dsn1", "sqlite:a.db", "--dsn2=sqlite:b.db", "--queries", "nowhere"],
            1,
            "--queries=nowhere: no such",
        ),
        (
            &["querydiff", "--dsn1=sqlite:a.db", "--dsn2=sqlite:b.db", "--cold_command", "true", "--queries=nowhere"],
            1,
            "--queries=nowhere: no such",
        ),
        (&["lab", "plan", "nowhere.toml", "--workdir", "w"], 1, "nowhere.toml"),
        (
            &["lab", "run", "nowhere.toml", "--keep_data", "--allow_concurrent", "--store", "s.sqlite"],
            1,
            "nowhere.toml",
        ),
        (&["server", "status", "--dir", "."], 3, "status=stopped"),
        (&["server", "status", "--dir=."], 3, "status=stopped"),
    ];
    for (args, code, want) in cases {
        let r = dbbench_in(&dir, args);
        let out = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code, *code, "{args:?}: {out}");
        assert!(out.contains(want), "{args:?}: want {want:?} in {out}");
        assert!(!out.contains("unknown option"), "{args:?}: {out}");
    }
    // The query text shows the values were read, in both spellings.
    for args in [
        &["tpch", "queries", "--queries", "6", "--dialect", "pgsql"][..],
        &["tpch", "queries", "--queries=6", "--dialect=pgsql"],
    ] {
        let r = dbbench_in(&dir, args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stdout.starts_with("-- Q6 ") && !r.stdout.contains("-- Q1 "), "{args:?}: {}", r.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An unknown option of any subcommand: one line naming it, exit 1, nothing run.
#[test]
fn unknown_subcommand_option_is_one_line_and_exit_1() {
    let dir = tempdir("unknown-opt");
    for args in [
        &["lab", "run", "x.toml", "--bogus"][..],
        &["report", "--bogus"],
        &["compare", "a", "b", "--bogus=1"],
        &["tpch", "gen", "--sf=1", "--bogus", "1"],
        &["tpch", "power", "--bogus=1"],
        &["querydiff", "--bogus"],
        &["querydiff", "report", "--bogus=x"],
        &["server", "status", "--dir=.", "--bogus"],
        &["completions", "bash", "--bogus"],
    ] {
        let r = dbbench_in(&dir, args);
        assert_eq!(r.code, 1, "{args:?}: {}{}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("unknown option '--bogus'"), "{args:?}: {}", r.stderr);
        assert!(r.stderr.starts_with(&format!("dbbench {}: ", args[0])), "{args:?}: {}", r.stderr);
    }
    // A near miss is named.
    let r = dbbench_in(&dir, &["report", "--stor=x"]);
    assert!(r.code == 1 && r.stderr.contains("did you mean '--store'?"), "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--help` of every subcommand and of their commands: stdout, exit 0; the
/// connection options are listed from the engine's declarations.
#[test]
fn subcommand_help_exits_0_and_lists_connection_options() {
    for args in [
        &["lab", "--help"][..],
        &["lab", "run", "--help"],
        &["report", "-h"],
        &["compare", "--help"],
        &["tpch", "--help"],
        &["tpch", "load", "--help"],
        &["querydiff", "--help"],
        &["querydiff", "report", "--help"],
        &["server", "start", "--help"],
        &["completions", "--help"],
        &["help", "report"],
    ] {
        let r = dbbench(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stdout.contains("Usage: dbbench "), "{args:?}: {}", r.stdout);
        assert_eq!(r.stderr, "", "{args:?}");
    }
    let load = dbbench(&["tpch", "load", "--help"]).stdout;
    for option in ["--db-driver", "--mysql-socket", "--pgsql-host", "--sqlite-db", "--keys"] {
        assert!(load.contains(option), "{option} not in:\n{load}");
    }
    assert!(dbbench(&["lab", "run", "--help"]).stdout.contains("--allow-concurrent"));
}

/// `dbbench completions SHELL` covers every subcommand from the same definitions.
#[test]
fn completions_cover_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let r = dbbench(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        for name in ["lab", "report", "compare", "tpch", "querydiff", "server", "completions"] {
            assert!(r.stdout.contains(name), "{shell}: {name} missing");
        }
        for option in ["cv-limit", "query-dir", "mysql-socket", "allow-concurrent", "report-interval"] {
            assert!(r.stdout.contains(option), "{shell}: {option} missing");
        }
    }
    let r = dbbench(&["completions", "powershell"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

/// Under --rate, an interval line's queue length and concurrency are those
/// at its tick, whenever the line is printed: here the script's report hook
/// holds the reporting thread past the end of the run, and lines 2 and 3
/// were once printed with the figures of that moment (no client in an
/// event, `concurrency 0`; and `thds 0`).
#[test]
fn late_lines_under_rate_show_the_queue_and_concurrency_of_their_tick() {
    let (_d, s) = script(&format!(
        "{SLEEPY}\nlocal held = false\nsysbench.hooks.report_intermediate = function(stat)\n  \
         if not held then held = true; ffi.C.usleep(4000000) end\n  \
         print(string.format('LINE %d thds=%d conc=%d', stat.time_total, stat.threads_running, stat.concurrency))\nend\n"
    ));
    // 200 events/s of 40 ms: 8 clients in an event on average.
    let r = dbbench(&[&s, "run", "--time=3", "--threads=32", "--rate=200", "--ms=40", "--report-interval=1"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let lines: Vec<(u64, u64, u64)> = r
        .stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("LINE ")?.split(' ');
            let t = w.next()?.parse().ok()?;
            let thds = w.next()?.strip_prefix("thds=")?.parse().ok()?;
            let conc = w.next()?.strip_prefix("conc=")?.parse().ok()?;
            Some((t, thds, conc))
        })
        .collect();
    assert!(lines.len() >= 2, "{}", r.stdout);
    for &(t, thds, conc) in lines.iter().filter(|l| l.0 < 3) {
        assert_eq!(thds, 32, "line {t}: {}", r.stdout);
        assert!(conc > 0, "line {t} concurrency 0 (its figures are of when it was printed): {}", r.stdout);
    }
}

#[test]
fn a_client_state_holds_no_parse_garbage_when_thread_init_runs() {
    // Every client builds its Lua state before any client runs an event,
    // so what parsing the prelude and the script left behind counted in
    // the peak memory at thousands of clients (docs/performance.md,
    // "Memory per client at thousands of clients"): 65 KiB per state for
    // this script before it was collected with the state built.
    let mut body = String::from(
        r#"
function thread_init()
  local before = collectgarbage("count")
  collectgarbage("collect")
  print(string.format("garbage KiB %.1f", before - collectgarbage("count")))
end
function event() end
"#,
    );
    for i in 0..200 {
        body += &format!("function f{i}(x) return x .. 'constant string number {i}' end\n");
    }
    let (_d, s) = script(&body);
    let r = dbbench(&[&s, "--threads=4", "--events=4", "run"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let garbage: Vec<f64> =
        r.stdout.lines().filter_map(|l| l.strip_prefix("garbage KiB ")).map(|v| v.parse().unwrap()).collect();
    assert_eq!(garbage.len(), 4, "{}", r.stdout);
    assert!(garbage.iter().all(|g| *g < 20.0), "garbage per state when thread_init starts, KiB: {garbage:?}");
}

/// A `dbbench server` failure is one line from the subcommands' printer with
/// its contexts joined by ": " (the file, then the OS error's own text), not
/// the outermost context alone.
#[test]
fn server_failure_is_one_line_with_its_cause() {
    let dir = tempdir("server-fail");
    std::fs::create_dir_all(dir.join("srv/server.json")).unwrap();
    let r = dbbench_in(&dir, &["server", "status", "--dir", "srv"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("dbbench server: cannot read srv/server.json: ") && r.stderr.contains("(os error 21)"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `--name` tokens of a help text, each once, in order.
fn options_in(help: &str) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for line in help.lines() {
        let Some(rest) = line.trim_start().strip_prefix("--") else { continue };
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if !name.is_empty() && name != "help" && name != "version" && seen.insert(name.clone()) {
            out.push(name);
        }
    }
    out
}

/// Issue 38's sweep: every option the engine's help, a built-in test's
/// help and the help of every subcommand with options (merge, report,
/// compare, each tpch command, querydiff, lab plan, run and summary,
/// server start, stop and status, k8s) list, given each of a set of bad values, on a command that
/// would otherwise end at once (a run after one event): the
/// command runs or stops with a short error and exit 1 (2 for a partial
/// run); never a panic, a signal or a hang.
#[test]
fn every_option_with_a_bad_value_is_run_or_refused_never_a_panic() {
    let dir = tempdir("option-sweep");
    let db = format!("--sqlite-db={}", dir.join("s.sqlite").display());
    let p = run_in(DBBENCH, &dir, &["oltp_read_write", "prepare", "--table-size=10", &db], &[]);
    assert_eq!(p.code, 0, "{}{}", p.stdout, p.stderr);
    let values = ["", "-1", "0", "x", "1e999", "99999999999999999999999", "1,,2", "on=off", "\u{e9}\u{fffd}"];
    let mut engine = options_in(&run_in(DBBENCH, &dir, &["--help"], &[]).stdout);
    engine.extend(options_in(&run_in(DBBENCH, &dir, &["oltp_read_write", "help"], &[]).stdout));
    assert!(engine.len() > 60, "only {} engine options found", engine.len());
    let mut tried = 0;
    let check = |args: &[&str], r: &Run| {
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(!all.contains("panicked") && !all.contains("RUST_BACKTRACE"), "{args:?}: {all}");
        assert!((0..=2).contains(&r.code), "{args:?}: exit {} (124: hung, killed by timeout):\n{all}", r.code);
        if r.code == 1 {
            // Said, and briefly: the banner and the run's header at most
            // beside the error (sysbench's own texts, e.g. `Invalid value
            // for the 'threads' option: 'x'`, carry no FATAL prefix).
            let lines = all.lines().filter(|l| !l.trim().is_empty()).count();
            assert!((1..=12).contains(&lines), "{args:?}: {lines} lines:\n{all}");
        }
    };
    for o in &engine {
        for v in values {
            let opt = format!("--{o}={v}");
            let args = ["oltp_read_write", "run", "--table-size=10", &db, "--events=1", "--time=2", &opt];
            let r = run_in(DBBENCH, &dir, &args, &[]);
            check(&args, &r);
            tried += 1;
        }
    }
    let store = dir.join("none.sqlite").display().to_string();
    let tpch_db = format!("--sqlite-db={}", dir.join("tpch.sqlite").display());
    let q = dir.join("q.sql");
    std::fs::write(&q, "SELECT 1;\n").unwrap();
    let dsn = format!("sqlite:{}", dir.join("q.db").display());
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        "[experiment]\nname = \"s\"\nthreads = [1]\ntime = 1\n\n[[configuration]]\nname = \"a\"\nserver = \"sqlite\"\n\n[[workload]]\ntest = \"oltp_point_select\"\n",
    )
    .unwrap();
    let (q, spec) = (q.display().to_string(), spec.display().to_string());
    let gen_dir = format!("--dir={}", dir.join("gen").display());
    // The connection fails at once (no socket), so no load or query runs.
    let no_server = format!("--mysql-socket={}", dir.join("none.sock").display());
    let no_basedir = format!("--basedir={}", dir.join("no-basedir").display());
    let server_dir = format!("--dir={}", dir.join("srv").display());
    let k8s = ["--shards=2", "--image=x", "--dry-run"];
    // (subcommand, its options, what follows them); a base option is left
    // out while its own bad values are tried.
    for (sub, base, tail) in [
        (&["merge"][..], &["shard-0.json"][..], &[][..]),
        (&["report"][..], &["--store", store.as_str()][..], &[][..]),
        (&["compare"][..], &["a", "b", "--store", store.as_str()][..], &[][..]),
        // Fails at once: the database has no TPC-H tables.
        (&["tpch", "power"][..], &[tpch_db.as_str(), "--timeout=1"][..], &[][..]),
        (&["tpch", "gen"][..], &["--sf=0.01", "--tables=region", gen_dir.as_str()][..], &[][..]),
        (&["tpch", "load"][..], &["--sf=0.01", "--db-driver=mysql", no_server.as_str()][..], &[][..]),
        (&["tpch", "queries"][..], &["--queries=1"][..], &[][..]),
        (&["tpch", "query"][..], &["1", "--sf=0.01", "--db-driver=mysql", no_server.as_str()][..], &[][..]),
        (&["tpch", "throughput"][..], &["--sf=0.01", "--db-driver=mysql", no_server.as_str()][..], &[][..]),
        (&["querydiff"][..], &["--dsn1", dsn.as_str(), "--dsn2", dsn.as_str(), "--queries", q.as_str()][..], &[][..]),
        (&["lab", "plan"][..], &[spec.as_str()][..], &[][..]),
        // One run of a second on SQLite (beside other tests' labs).
        (&["lab", "run"][..], &[spec.as_str(), "--allow-concurrent"][..], &[][..]),
        (&["lab", "summary"][..], &[spec.as_str()][..], &[][..]),
        // Refused before anything starts: the basedir has no programs.
        (&["server", "start"][..], &["--kind=mariadb", no_basedir.as_str(), server_dir.as_str()][..], &[][..]),
        (&["server", "stop"][..], &[server_dir.as_str()][..], &[][..]),
        (&["server", "status"][..], &[server_dir.as_str()][..], &[][..]),
        // --dry-run: manifests printed, no kubectl run.
        (&["k8s"][..], &k8s[..], &["oltp_point_select", db.as_str()][..]),
    ] {
        let mut help_args = sub.to_vec();
        help_args.push("--help");
        let options = options_in(&run_in(DBBENCH, &dir, &help_args, &[]).stdout);
        assert!(!options.is_empty(), "{sub:?}: no options found in its help");
        for o in options {
            let own = format!("--{o}=");
            for v in values {
                let opt = format!("{own}{v}");
                let mut args = sub.to_vec();
                args.extend(base.iter().filter(|b| !b.starts_with(&own) && **b != format!("--{o}")));
                args.push(&opt);
                args.extend(tail);
                let r = run_in(DBBENCH, &dir, &args, &[]);
                check(&args, &r);
                tried += 1;
            }
        }
    }
    eprintln!("{tried} option values tried");
    let _ = std::fs::remove_dir_all(&dir);
}
