//! dbbench: a database benchmark lab. This binary is the load engine with a
//! sysbench 1.0.20-compatible command line; see ARCHITECTURE.md.

mod alloc;
mod cli;
mod clock;
mod collector;
mod completions;
mod connect;
mod driver;
mod dsn;
mod engine;
mod errors;
mod exit;
mod fault_point;
mod inference;
mod k8s;
mod lab;
mod log;
mod metrics;
mod options;
mod output;
mod priority;
mod progress;
mod querydiff;
mod rand;
mod render;
mod report;
mod run_document;
mod safe_fs;
mod sched;
mod script;
mod secret;
mod shard;
mod sqlclient;
mod sqltext;
mod store;
mod subcommand;
mod syscall;
mod term;
#[cfg(test)]
mod test_rand;
mod timestamp;
mod tpch;
mod workloads;

use crate::exit::Exit;
use options::Options;
use std::process::ExitCode;

/// Small blocks are cached per thread in front of malloc (see `alloc.rs`).
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
#[global_allocator]
static GLOBAL: alloc::CachingMalloc = alloc::CachingMalloc;

/// dbbench's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The sysbench release whose command line, Lua API and report we follow.
pub const SYSBENCH_COMPAT_VERSION: &str = "1.0.20";

fn main() -> ExitCode {
    // A panic is a dbbench bug. End the whole process with a clear line
    // rather than leave other client threads waiting at a barrier forever.
    std::panic::set_hook(Box::new(|info| {
        // println! panics when the reader went away (`dbbench ... | head -1`):
        // that is the reader's choice, not a failure; end quietly with 0, as
        // ripgrep does, wherever the write happened (a client thread's
        // interval line, a report, a help text).
        if is_closed_pipe(info) {
            Exit::Ok.exit();
        }
        // A library call whose panic the caller turns into an error.
        if exit::catching_library_panic() {
            return;
        }
        let _ = std::io::Write::flush(&mut std::io::stdout());
        eprintln!("FATAL: internal error (a dbbench bug, please report it): {info}");
        Exit::Internal.exit();
    }));
    let argv: Vec<String> = std::env::args().collect();
    let status = real_main(argv);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    status
}

/// Whether a panic is std's "failed printing to stdout/stderr" for a
/// closed pipe (EPIPE; Rust ignores SIGPIPE, so writes fail instead).
fn is_closed_pipe(info: &std::panic::PanicHookInfo<'_>) -> bool {
    let payload = info.payload();
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    msg.starts_with("failed printing to std") && msg.contains(&format!("(os error {})", libc::EPIPE))
}

/// Prints `msg` on stderr (argument errors) and returns exit status 1.
fn usage_error(msg: &str) -> ExitCode {
    eprintln!("{msg}");
    Exit::Error.into()
}

/// Prints `msg` on stdout (sysbench's FATAL lines go there) and returns 1.
fn fatal(msg: &str) -> ExitCode {
    println!("{msg}");
    Exit::Error.into()
}

/// A subcommand's entry point: its arguments after the name, its exit status.
type Subcommand = fn(&[String]) -> ExitCode;

/// The entry point of each subcommand in `cli::SUBCOMMANDS`.
fn subcommand(name: &str) -> Option<Subcommand> {
    Some(match name {
        "lab" => lab::cli::main,
        "server" => lab::server::cli_main,
        "report" => report::cli_main,
        "compare" => report::compare::cli_main,
        "tpch" => tpch::cli_main,
        "querydiff" => querydiff::cli_main,
        "merge" => shard::merge::cli_main,
        "k8s" => k8s::cli_main,
        "completions" => completions::completions_main,
        _ => return None,
    })
}

/// `dbbench help [SUBCOMMAND]`: the general help, or a subcommand's.
fn help(args: &[String]) -> ExitCode {
    match args.first() {
        None => {
            print!("{}", cli::help_text());
            Exit::Ok.into()
        }
        Some(name) => match subcommand(name) {
            Some(entry) => entry(&["--help".to_string()]),
            None => usage_error(&format!(
                "dbbench help: no subcommand '{name}' (subcommands: {}); for a test's options run 'dbbench {name} help'",
                cli::SUBCOMMANDS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )),
        },
    }
}

fn real_main(argv: Vec<String>) -> ExitCode {
    // A subcommand name is always the subcommand, whatever files the
    // current directory holds (a directory `tpch/` made `dbbench tpch load`
    // look for a script); a script of that name runs as `./lab` or `lab.lua`.
    if let Some(name) = argv.get(1) {
        if let Some(entry) = subcommand(name) {
            return entry(&argv[2..]);
        }
        if name == "help" {
            return help(&argv[2..]);
        }
    }
    let parsed = match cli::parse(&argv[1..]) {
        Ok(p) => p,
        Err(e) => return usage_error(&e),
    };
    let mut opts = Options::default();
    opts.declare(cli::general_options());
    opts.declare(driver::all_options());
    let unknown = match cli::apply(&mut opts, &parsed.assignments) {
        Ok(u) => u,
        Err(e) => return usage_error(&e),
    };
    driver::passwords_from_env(&mut opts);
    if opts.bool("help") {
        print!("{}", cli::help_text());
        return Exit::Ok.into();
    }
    if opts.bool("version") {
        // The revision says which build it is (build.rs: when it can be stale).
        match option_env!("DBBENCH_GIT_REVISION") {
            Some(rev) => println!("dbbench {VERSION} (sysbench {SYSBENCH_COMPAT_VERSION} compatible; git {rev})"),
            None => println!("dbbench {VERSION} (sysbench {SYSBENCH_COMPAT_VERSION} compatible)"),
        }
        return Exit::Ok.into();
    }
    // No test name: the script comes from stdin when it is not a terminal,
    // as with sysbench (`dbbench < my.lua`); `-` names stdin explicitly.
    let stdin_script = String::from("-");
    let test = match parsed.positionals.first() {
        Some(t) => t,
        None if !std::io::IsTerminal::is_terminal(&std::io::stdin()) => &stdin_script,
        None => {
            return usage_error(
                "Missing test name: give a built-in test (e.g. oltp_read_write), a Lua script path, or '-' for a script on stdin. See 'dbbench --help'.",
            )
        }
    };
    if let Some(extra) = parsed.positionals.get(2) {
        return usage_error(&format!("Unrecognized command line argument: {extra}"));
    }
    let command = parsed.positionals.get(1).cloned();

    // Validate what does not depend on the script first, as sysbench does.
    if let Err(e) = engine::set_verbosity(&opts) {
        return fatal(&e);
    }
    match cli::resolve_legacy_limits(&mut opts) {
        Ok(warnings) => warnings.iter().for_each(|w| log::warning(w)),
        Err(e) => return fatal(&e),
    }
    // Checked again with the script's options below; this pass fails bad
    // general options before the script runs, as sysbench does.
    if let Err(e) = engine::run_config(&opts) {
        return fatal(&e);
    }
    let Some(dist) = rand::Distribution::parse(opts.str("rand_type")) else {
        return fatal(&format!(
            "FATAL: Invalid random numbers distribution: {}. (use uniform, gaussian, special, pareto or zipfian)",
            opts.str("rand_type")
        ));
    };
    let given_seed = opts.int("rand_seed");
    // A seed from the clock is a positive C int, like a --rand-seed, so
    // the one --debug shows can be given back to repeat the random streams.
    let seed = if given_seed != 0 {
        given_seed as u64
    } else {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(1);
        (nanos % (i32::MAX as u128 - 1)) as u64 + 1
    };
    rand::configure(rand::RandConfig {
        default: dist,
        spec_iter: opts.int("rand_spec_iter").clamp(1, engine::MAX_SPEC_ITER) as u32,
        spec_pct: opts.double("rand_spec_pct"),
        spec_res: opts.double("rand_spec_res"),
        pareto_h: opts.double("rand_pareto_h"),
        zipf_exp: opts.double("rand_zipfian_exp"),
        seed,
        given_seed: (given_seed != 0).then_some(given_seed),
    });

    let source = match script::ScriptSource::resolve(test) {
        Ok(s) => s,
        Err(e) => return fatal(&e),
    };
    let header =
        format!("dbbench {VERSION} (sysbench {SYSBENCH_COMPAT_VERSION} compatible, using bundled LuaJIT 2.1)\n");
    log::notice(&header);

    let shared = script::Shared::new(opts, source, argv.clone(), command);
    let main_stats = std::sync::Arc::new(collector::ClientStats::default());
    let main = match script::new_state(&shared, rand::Phase::Main, 0, main_stats) {
        Ok(l) => l,
        Err(e) => return fatal(&e),
    };

    // Script options: declared ones are typed; a script that declares none
    // gets every unknown option as a string (sysbench's legacy mode).
    let cfg = {
        let mut opts = shared.opts.write().unwrap_or_else(|p| p.into_inner());
        let declared = match script::declared_options(&main) {
            Ok(d) => d,
            Err(e) => return fatal(&e),
        };
        let legacy = declared.is_none();
        let mut leftovers = Vec::new();
        match declared {
            Some(specs) => {
                opts.declare(specs);
                for mut a in unknown {
                    if opts.spec(&a.name).is_none() {
                        if let Some((_, new)) = cli::WORKLOAD_ALIASES.iter().find(|(o, _)| *o == a.name) {
                            if opts.spec(new).is_some() {
                                a.name = new.to_string();
                            }
                        }
                    }
                    if opts.spec(&a.name).is_none() && cli::IGNORED_LEGACY.contains(&a.name.as_str()) {
                        continue;
                    }
                    leftovers.push(a);
                }
            }
            None => {
                for a in &unknown {
                    opts.declare([options::OptionSpec::new(&a.name, options::OptKind::String, "", "")]);
                }
                leftovers = unknown;
            }
        }
        match cli::apply(&mut opts, &leftovers) {
            Ok(rest) => {
                if let Some(a) = rest.first() {
                    return usage_error(&format!("invalid option: {}", a.original));
                }
            }
            Err(e) => return usage_error(&e),
        }
        if let Err(e) = script::check_option_ranges(&main, &opts) {
            return fatal(&e);
        }
        shared.legacy.store(legacy, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = script::export(&main, &opts, legacy) {
            return fatal(&format!("FATAL: {}", script::error_message(&e)));
        }
        match engine::run_config(&opts) {
            Ok(c) => c,
            Err(e) => return fatal(&e),
        }
    };
    engine::dispatch(&shared, &main, &cfg)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_listed_subcommand_has_an_entry_point() {
        for (name, _) in crate::cli::SUBCOMMANDS {
            assert!(crate::subcommand(name).is_some(), "{name} is listed in --help but not dispatched");
        }
        assert!(crate::subcommand("oltp_read_write").is_none());
    }
}
