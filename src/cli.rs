//! The sysbench-compatible command line:
//! `dbbench [options]... [testname|script.lua] [command]`.
//!
//! Options are `--name=value` or bare `--name`, in any order with the
//! positionals; the last occurrence wins; `-` and `_` are interchangeable.
//! `--config-file=F` is expanded where it appears. The 0.4/0.5 spellings used
//! by old command lines (`--test=`, `--oltp-table-size`, ...) are
//! translated here; `--num-threads`, `--max-time`, `--max-requests` and
//! `--tx-rate` are options of their own, applied by
//! [`resolve_legacy_limits`] with sysbench's precedence and warnings.

use crate::options::{normalize, parse_bool, parse_double, parse_int, parse_size, OptKind, OptionSpec, Options};

/// One `--name[=value]` from the command line or a config file.
#[derive(Debug, Clone)]
pub struct Assignment {
    /// Underscore name after alias translation.
    pub name: String,
    /// The value; None for a bare `--name`.
    pub value: Option<String>,
    /// The argument as written (for error messages).
    pub original: String,
}

/// The command line split into option assignments and positionals.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Assignments in order (last wins).
    pub assignments: Vec<Assignment>,
    /// Test name, command, and anything extra.
    pub positionals: Vec<String>,
}

/// General options (sysbench 1.0.20 plus the 1.1 additions we support).
pub fn general_options() -> Vec<OptionSpec> {
    use OptKind::*;
    let o = OptionSpec::new;
    vec![
        o("threads", Int, "1", "number of threads (clients) to use"),
        o("events", Int, "0", "limit for total number of events"),
        o("time", Int, "10", "limit for total execution time in seconds"),
        o("warmup_time", Int, "0", "run for this many seconds before measuring; nothing from the warmup reaches any figure"),
        o("forced_shutdown", String, "off", "seconds (or N% of --time) to wait after --time before forcing shutdown, or 'off'"),
        o("thread_stack_size", Size, "64K", "size of stack per thread (at least 256K is used)"),
        o("thread_init_timeout", Int, "30", "wait time in seconds for worker threads to initialize"),
        o(
            "client_threads",
            String,
            "auto",
            "OS threads that run the clients: 0 = one per client (sysbench's model); N = clients multiplexed as coroutines over N threads (native MySQL and PostgreSQL clients only); auto = one per client, except 1024 or more native PostgreSQL clients of a built-in oltp_* workload: one thread per CPU",
        ),
        o(
            "oltp_client",
            String,
            "native",
            "how the built-in oltp_* workloads run: native = their statements in Rust, with the same random draws, statements and counters, no Lua state per client; lua = the scripts themselves, one Lua state per client",
        ),
        o("rate", Double, "0", "average event rate (open loop, Poisson arrivals); 0 = unlimited (closed loop)"),
        o("tx_rate", Double, "0", "deprecated alias for --rate"),
        o("max_requests", Int, "0", "deprecated alias for --events"),
        o("max_time", Int, "0", "deprecated alias for --time"),
        o("num_threads", Int, "1", "deprecated alias for --threads"),
        o("report_interval", Double, "0", "report intermediate statistics every N seconds; 0 disables"),
        o("report_checkpoints", List, "", "dump full statistics and reset counters at these seconds"),
        o("debug", Bool, "off", "print more debugging info"),
        o("validate", Bool, "off", "perform validation checks where possible"),
        o("help", Bool, "off", "print help and exit"),
        o("version", Bool, "off", "print version and exit"),
        o("config_file", File, "", "file containing command line options"),
        o("verbosity", Int, "3", "verbosity level {5 - debug, 0 - only critical messages}"),
        o("percentile", List, "95", "percentiles to report, e.g. 95,99,99.9 (0 disables)"),
        o("histogram", Bool, "off", "print latency histogram in report"),
        o(
            "metrics_listen",
            String,
            "",
            "serve live metrics (Prometheus text) on http://ADDR/metrics during a run, e.g. 127.0.0.1:9464 (plain HTTP, no authentication: binds where told)",
        ),
        o("format", String, "text", "report format: text (sysbench 1.0 layout), json, csv or legacy (sysbench 0.5 layout)"),
        o("rand_type", String, "special", "random numbers distribution {uniform, gaussian, special, pareto, zipfian}"),
        o("rand_spec_iter", Int, "12", "number of iterations for the special distribution"),
        o("rand_spec_pct", Double, "1", "percentage of values to be treated as 'special' (for special distribution)"),
        o("rand_spec_res", Double, "75", "percentage of 'special' values to use (for special distribution)"),
        o("rand_seed", Int, "0", "seed for random number generators; 0 = from the clock. Also makes prepare deterministic"),
        o("rand_pareto_h", Double, "0.2", "parameter h for pareto distribution"),
        o("rand_zipfian_exp", Double, "0.8", "shape parameter (exponent) for the zipfian distribution"),
        o("db_driver", String, "sqlite", "database driver: sqlite (embedded, default), mysql, pgsql"),
        o(
            "shard",
            String,
            "",
            "run shard I of N of the run: I/N (0 <= I < N), or job/N for I from $JOB_COMPLETION_INDEX; its share of --threads (global thread ids), --events and --rate (docs/scale-out.md)",
        ),
        o("shard_result", String, "", "with --shard: write the shard's mergeable result to this file, or - for one line on stdout after the report (dbbench merge reads both)"),
        o("start_at", String, "", "with --shard: connect and initialise, then begin at this time: unix epoch milliseconds or RFC 3339, from a day ago to --start-at-max-wait ahead"),
        o("start_at_max_wait", Int, "86400", "with --start-at: the furthest ahead, in seconds, that it may lie (a start further ahead is refused as a likely typo)"),
        o("db_debug", Bool, "off", "print database-specific debug information"),
    ]
}

/// The 0.4/0.5 spellings of `--threads`, `--events`, `--time` and
/// `--rate` that sysbench 1.0.20 still accepts, each with the value that
/// means "not given" (1 thread; 0 = no limit, no rate), in the order
/// sysbench applies them and prints their warnings.
const LEGACY_LIMITS: &[(&str, &str, f64)] = &[
    ("num_threads", "threads", 1.0),
    ("max_requests", "events", 0.0),
    ("max_time", "time", 0.0),
    ("tx_rate", "rate", 0.0),
];

/// Applies the old spellings as sysbench 1.0.20 does (its `init()`,
/// measured with Debian's build): an old option above its "not given"
/// value replaces the new one whatever their order on the command line,
/// with sysbench's deprecation warning; at that value it changes nothing.
/// So `--events=100 --max-requests=0` runs 100 events and `--threads=4
/// --num-threads=2` runs 2 threads. A negative old value (or 0 threads) is
/// an error here; sysbench would take it as unsigned. Then the old names
/// take the effective values: they are what 0.5 scripts read as globals
/// (`num_threads`, `max_requests`, ...), and 0.5 set them to the run's
/// thread count and limits. Returns the warnings, in sysbench's order.
pub fn resolve_legacy_limits(opts: &mut Options) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    for (old, new, unset) in LEGACY_LIMITS {
        let v = opts.double(old);
        if v < 0.0 || (*old == "num_threads" && v == 0.0) {
            return Err(format!(
                "FATAL: Invalid value for --{}: {}. (it is the old spelling of --{new})",
                old.replace('_', "-"),
                opts.raw(old)
            ));
        }
        if v > *unset {
            warnings.push(format!("--{} is deprecated, use --{new} instead", old.replace('_', "-")));
            let value = opts.raw(old).to_string();
            opts.set(new, &value);
        }
        let effective = opts.raw(new).to_string();
        opts.set(old, &effective);
    }
    Ok(warnings)
}

/// 0.4/0.5 workload options and the 1.0 names our workloads declare. Applied
/// only when the script declares the new name (a legacy script keeps the old).
pub const WORKLOAD_ALIASES: &[(&str, &str)] = &[
    ("oltp_table_size", "table_size"),
    ("oltp_tables_count", "tables"),
    ("oltp_range_size", "range_size"),
    ("oltp_point_selects", "point_selects"),
    ("oltp_simple_ranges", "simple_ranges"),
    ("oltp_sum_ranges", "sum_ranges"),
    ("oltp_order_ranges", "order_ranges"),
    ("oltp_distinct_ranges", "distinct_ranges"),
    ("oltp_index_updates", "index_updates"),
    ("oltp_non_index_updates", "non_index_updates"),
    ("oltp_delete_inserts", "delete_inserts"),
    ("oltp_range_selects", "range_selects"),
    ("oltp_auto_inc", "auto_inc"),
    ("oltp_skip_trx", "skip_trx"),
    ("oltp_secondary", "secondary"),
    ("oltp_create_secondary", "create_secondary"),
    ("mysql_table_engine", "mysql_storage_engine"),
    ("random_ranges_delta", "delta"),
];

/// 0.4 general spellings translated without warning.
const SILENT_ALIASES: &[(&str, &str)] = &[
    ("oltp_dist_type", "rand_type"),
    ("oltp_dist_iter", "rand_spec_iter"),
    ("oltp_dist_pct", "rand_spec_pct"),
    ("oltp_dist_res", "rand_spec_res"),
    ("seed_rng", "rand_seed"),
];

/// Old options that no longer mean anything; accepted and ignored unless
/// the script declares them.
pub const IGNORED_LEGACY: &[&str] = &["rand_init", "init_rng", "mysql_engine_trx", "myisam_max_rows"];

/// Splits argv (without the program name). Errors are the line to print on
/// stderr.
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    for arg in args {
        if let Some(body) = arg.strip_prefix("--") {
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            push(&mut p, &normalize(name), value, arg)?;
        } else {
            p.positionals.push(arg.clone());
        }
    }
    Ok(p)
}

fn push(p: &mut Parsed, name: &str, value: Option<String>, original: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("invalid option: {original}"));
    }
    if name == "config_file" {
        let file =
            value.ok_or_else(|| "invalid option: --config-file needs a file name (--config-file=FILE)".to_string())?;
        return read_config_file(p, &file);
    }
    if name == "test" {
        eprintln!("WARNING: the --test option is deprecated. You can pass a script name or path on the command line without any options.");
        if let Some(v) = value {
            p.positionals.insert(0, v);
        }
        return Ok(());
    }
    let mut name = name.to_string();
    if let Some((_, new)) = SILENT_ALIASES.iter().find(|(o, _)| *o == name) {
        name = new.to_string();
    }
    p.assignments.push(Assignment { name, value, original: original.to_string() });
    Ok(())
}

fn read_config_file(p: &mut Parsed, file: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("FATAL: cannot read config file '{file}': {e}"))?;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else { continue };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        let name = normalize(name.trim().trim_start_matches("--"));
        push(p, &name, Some(value.to_string()), &format!("{name}={value} ({file}:{})", n + 1))?;
    }
    Ok(())
}

/// The largest magnitude a number option may have: beyond 2^53 a Lua
/// number (a double) no longer holds every whole number, and scripts
/// format counts with `%d`, which turns 1e23 into -9223372036854775808.
pub const MAX_EXACT_NUMBER: f64 = 9_007_199_254_740_992.0;

/// Checks a value against its declared type; the error is sysbench's text.
/// INT is a C int, as in sysbench (`--threads=2147483648` is an invalid
/// value there too); a DOUBLE must be finite and within ±2^53
/// ([`MAX_EXACT_NUMBER`]), where sysbench passes anything on.
pub fn check_value(spec: &OptionSpec, a: &Assignment) -> Result<String, String> {
    let Some(v) = &a.value else {
        return Ok(match spec.kind {
            OptKind::Bool => "on".into(),
            _ if spec.name == "forced_shutdown" => "5%".into(),
            _ => String::new(),
        });
    };
    if spec.kind == OptKind::Double && parse_double(v).is_some_and(|x| x.abs() > MAX_EXACT_NUMBER) {
        return Err(format!(
            "Invalid value for the '{}' option: '{}' (numbers are limited to ±2^53 = {}, the largest a Lua number holds exactly)",
            spec.name, v, MAX_EXACT_NUMBER
        ));
    }
    let ok = match spec.kind {
        OptKind::Bool => parse_bool(v).is_some(),
        OptKind::Int => parse_int(v).is_some_and(|x| i32::try_from(x).is_ok()),
        OptKind::Size => parse_size(v).is_some(),
        OptKind::Double => parse_double(v).is_some(),
        _ => true,
    };
    if ok {
        Ok(v.clone())
    } else if spec.kind == OptKind::Bool {
        Err(format!("invalid option: {}", a.original))
    } else {
        Err(format!("Invalid value for the '{}' option: '{}'", spec.name, v))
    }
}

/// Applies the assignments whose options are declared; returns the others.
pub fn apply(opts: &mut Options, assignments: &[Assignment]) -> Result<Vec<Assignment>, String> {
    let mut unknown = Vec::new();
    for a in assignments {
        match opts.spec(&a.name).cloned() {
            Some(spec) => {
                let v = check_value(&spec, a)?;
                opts.set(&a.name, &v);
            }
            None => unknown.push(a.clone()),
        }
    }
    Ok(unknown)
}

/// `  --name=FMT   description [default]`, padded like sysbench's help.
pub fn format_option_list(specs: &[OptionSpec]) -> String {
    let left: Vec<String> = specs
        .iter()
        .map(|s| {
            let fmt = match s.kind {
                OptKind::Bool => "[=on|off]",
                OptKind::Int | OptKind::Double => "=N",
                OptKind::Size => "=SIZE",
                OptKind::String => "=STRING",
                OptKind::List => "=[LIST,...]",
                OptKind::File => "=FILENAME",
            };
            format!("  --{}{}", s.name.replace('_', "-"), fmt)
        })
        .collect();
    let width = left.iter().map(String::len).max().unwrap_or(0) + 1;
    let mut out = String::new();
    for (l, s) in left.iter().zip(specs) {
        let default = if s.default.is_empty() { String::new() } else { format!(" [{}]", s.default) };
        out.push_str(&format!("{l:width$}{}{default}\n", s.description));
    }
    out
}

/// `dbbench --help`.
/// The subcommands beside the load engine, with their one-line summaries
/// (dispatched in main.rs; each has its own `--help`).
pub const SUBCOMMANDS: &[(&str, &str)] = &[
    ("lab", "run an experiment spec: servers, data, repeated runs, results store (docs/lab.md)"),
    ("report", "an experiment's tables, charts and exports from the store (docs/report.md)"),
    ("compare", "two configurations or experiments, run by run, with significance (docs/report.md)"),
    ("tpch", "TPC-H/DBT3: generate, load, power and throughput tests (docs/tpch.md)"),
    ("querydiff", "query-by-query A/B comparison of two servers (docs/querydiff.md)"),
    ("k8s", "one run as N shards on Kubernetes: manifests, apply, wait, merge (docs/scale-out.md)"),
    ("server", "start and stop a managed MariaDB, MySQL or PostgreSQL server (docs/lab.md)"),
    ("merge", "merge the results of a run's shards (run --shard=I/N) into one report (docs/scale-out.md)"),
    ("completions", "a shell completion script: dbbench completions bash|zsh|fish"),
];

pub fn help_text() -> String {
    let mut s = String::new();
    s.push_str("Usage:\n  dbbench [options]... [testname|script.lua] [command]\n");
    s.push_str("  dbbench SUBCOMMAND [options]...   (dbbench help SUBCOMMAND for its options)\n\n");
    s.push_str("Subcommands:\n");
    for (name, what) in SUBCOMMANDS {
        s.push_str(&format!("  {name:<11} {what}\n"));
    }
    s.push('\n');
    s.push_str("Commands implemented by most tests: prepare run cleanup help (OLTP tests also: prewarm)\n\n");
    s.push_str("General options:\n");
    s.push_str(&format_option_list(&general_options()));
    s.push_str("\nDatabase drivers: sqlite (embedded, default), mysql (MariaDB and MySQL), pgsql (PostgreSQL)\n\n");
    let mut drivers = crate::driver::all_options();
    drivers.sort_by(|a, b| a.name.cmp(&b.name));
    s.push_str("Database options:\n");
    s.push_str(&format_option_list(&drivers));
    s.push_str("\nBuilt-in tests:\n");
    for (name, _) in crate::workloads::ALL {
        if !name.ends_with("_common") {
            s.push_str(&format!("  {name}\n"));
        }
    }
    s.push_str("\nSee 'dbbench <testname> help' for a list of options for each test.\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dash_and_underscore_are_the_same_and_last_wins() {
        let p = parse(&args(&["--table-size=5", "oltp_read_write", "--table_size=7", "run"])).unwrap();
        assert_eq!(p.positionals, vec!["oltp_read_write", "run"]);
        let mut o = Options::default();
        o.declare([OptionSpec::new("table_size", OptKind::Int, "10000", "")]);
        let rest = apply(&mut o, &p.assignments).unwrap();
        assert!(rest.is_empty());
        assert_eq!(o.int("table_size"), 7);
    }

    #[test]
    fn legacy_limits_apply_as_in_sysbench() {
        let resolved = |a: &[&str]| {
            let p = parse(&args(a)).unwrap();
            let mut o = Options::default();
            o.declare(general_options());
            apply(&mut o, &p.assignments).unwrap();
            let w = resolve_legacy_limits(&mut o).map(|w| w.len());
            (o.int("threads"), o.int("events"), o.int("time"), o.double("rate"), w)
        };
        // The "not given" values of the old spellings change nothing, in either order.
        assert_eq!(resolved(&["--events=100", "--max-requests=0"]), (1, 100, 10, 0.0, Ok(0)));
        assert_eq!(resolved(&["--max-requests=0", "--events=100"]), (1, 100, 10, 0.0, Ok(0)));
        assert_eq!(resolved(&["--threads=4", "--num-threads=1"]), (4, 0, 10, 0.0, Ok(0)));
        assert_eq!(resolved(&["--time=3", "--max-time=0"]), (1, 0, 3, 0.0, Ok(0)));
        assert_eq!(resolved(&["--rate=100", "--tx-rate=0"]), (1, 0, 10, 100.0, Ok(0)));
        // Real values of the old spellings win, in either order.
        assert_eq!(resolved(&["--events=100", "--max-requests=50"]), (1, 50, 10, 0.0, Ok(1)));
        assert_eq!(resolved(&["--num-threads=2", "--threads=4"]), (2, 0, 10, 0.0, Ok(1)));
        assert_eq!(resolved(&["--max-time=60", "--time=3", "--tx-rate=5"]), (1, 0, 60, 5.0, Ok(2)));
        assert!(resolved(&["--num-threads=0"]).4.is_err());
        assert!(resolved(&["--max-requests=-5"]).4.is_err());
        // The old names carry the effective values (0.5's globals).
        let p = parse(&args(&["--threads=4", "--events=7", "--test=oltp_simple"])).unwrap();
        assert_eq!(p.positionals, vec!["oltp_simple"]);
        let mut o = Options::default();
        o.declare(general_options());
        apply(&mut o, &p.assignments).unwrap();
        resolve_legacy_limits(&mut o).unwrap();
        assert_eq!((o.int("num_threads"), o.int("max_requests"), o.int("max_time")), (4, 7, 10));
    }

    #[test]
    fn typed_values_are_checked_with_sysbench_messages() {
        let mut o = Options::default();
        o.declare(general_options());
        let p = parse(&args(&["--threads=2.5"])).unwrap();
        assert_eq!(apply(&mut o, &p.assignments).unwrap_err(), "Invalid value for the 'threads' option: '2.5'");
        // INT is a C int, as in sysbench; numbers beyond 2^53 are refused.
        let p = parse(&args(&["--threads=2147483648"])).unwrap();
        assert_eq!(apply(&mut o, &p.assignments).unwrap_err(), "Invalid value for the 'threads' option: '2147483648'");
        let p = parse(&args(&["--rate=1e300"])).unwrap();
        assert!(apply(&mut o, &p.assignments).unwrap_err().starts_with("Invalid value for the 'rate' option: '1e300'"));
        let p = parse(&args(&["--rate=inf"])).unwrap();
        assert_eq!(apply(&mut o, &p.assignments).unwrap_err(), "Invalid value for the 'rate' option: 'inf'");
        let p = parse(&args(&["--histogram=yes"])).unwrap();
        assert_eq!(apply(&mut o, &p.assignments).unwrap_err(), "invalid option: --histogram=yes");
        let p = parse(&args(&["--histogram", "--thread-stack-size=2K"])).unwrap();
        apply(&mut o, &p.assignments).unwrap();
        assert!(o.bool("histogram"));
        assert_eq!(o.int("thread_stack_size"), 2048);
    }

    #[test]
    fn config_file_applies_in_place() {
        let dir = crate::safe_fs::TestDir::new("cfg");
        let file = dir.join("config");
        std::fs::write(&file, "# comment\nthreads=8\ntime = 3\nmysql-host=\"a,b\"\n").unwrap();
        let p = parse(&args(&["--threads=2", &format!("--config-file={}", file.display()), "--time=5"])).unwrap();
        let mut o = Options::default();
        o.declare(general_options());
        o.declare([OptionSpec::new("mysql_host", OptKind::List, "localhost", "")]);
        apply(&mut o, &p.assignments).unwrap();
        assert_eq!(o.int("threads"), 8);
        assert_eq!(o.int("time"), 5);
        assert_eq!(o.list("mysql_host"), vec!["a", "b"]);
    }
}
