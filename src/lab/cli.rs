//! `dbbench lab ...`: argument handling; the work is in `runner`, `plan`
//! and `summary`.

use crate::exit::Exit;
use crate::lab::{datadir, plan, runner, spec, summary};
use crate::store;
use crate::term::print_out;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const HELP: &str = "\
Usage:
  dbbench lab plan SPEC.toml            print the runs in order and an estimated duration
  dbbench lab run SPEC.toml [options]   run the experiment, store every run, print a comparison
  dbbench lab summary SPEC.toml [--store=PATH|URL]
                                        print the comparison of the newest stored experiment

Options of `lab run`:
  --resume          continue the newest unfinished experiment of SPEC: stored runs are skipped
  --new             start a new experiment even though an unfinished one exists (that one
                    is abandoned: what it left running is stopped, its data removed)
  --store=PATH|URL  results store: a SQLite file, or postgresql://user@host[:port]/db[?host=/socket/dir]
                    or mysql://user@host[:port]/db[?socket=/path] (password: DBBENCH_STORE_PASSWORD)
                    [spec's store, else <spec dir>/dbbench-lab/results.sqlite]
  --workdir=DIR     data directories, snapshots and sockets' home [<spec dir>/dbbench-lab]
  --keep-data       keep data directories and snapshots after the experiment finishes
  --allow-concurrent  run even while another lab run measures on this host (refused by
                    default: each would measure the other's load); recorded in the store
                    and flagged in the report

Exit status of `lab run`: 0 every run of the experiment ok, 2 some runs failed or
timed out (the matrix goes on; errors are stored and listed), 1 the lab could not
run, 130 interrupted (resume with --resume: the run in flight is run again).
Spec format: docs/lab.md; examples in examples/; faults and what survives them: docs/faults.md.
";

/// Entry point for `dbbench lab ARGS...`.
pub fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("dbbench lab: {}", crate::secret::redact(&e));
            Exit::Error.into()
        }
    }
}

fn run(args: &[String]) -> Result<Exit, String> {
    let Some(sub) = args.first() else {
        eprint!("{HELP}");
        return Ok(Exit::Error);
    };
    let mut o = runner::RunOptions::default();
    let mut positionals = Vec::new();
    for a in &args[1..] {
        match a.split_once('=').map(|(k, v)| (k, Some(v))).unwrap_or((a.as_str(), None)) {
            ("--resume", None) => o.resume = true,
            ("--new", None) => o.new = true,
            ("--keep-data", None) => o.keep_data = true,
            ("--allow-concurrent", None) => o.allow_concurrent = true,
            ("--store", Some(v)) => o.store = Some(PathBuf::from(v)),
            ("--workdir", Some(v)) => o.workdir = Some(PathBuf::from(v)),
            ("--help" | "-h", None) => {
                print_out(HELP);
                return Ok(Exit::Ok);
            }
            (k, _) if k.starts_with('-') => {
                return Err(format!("unknown option '{a}' for `lab {sub}`; see `dbbench lab --help`"))
            }
            _ => positionals.push(a.clone()),
        }
    }
    if o.resume && o.new {
        return Err("--resume and --new exclude each other".into());
    }
    let spec_arg = |n: usize| -> Result<spec::Spec, String> {
        if positionals.len() != n {
            return Err(format!(
                "`lab {sub}` takes {} argument(s), got {}; see `dbbench lab --help`",
                n,
                positionals.len()
            ));
        }
        spec::load(Path::new(&positionals[0]))
    };
    match sub.as_str() {
        "--help" | "-h" | "help" => {
            print_out(HELP);
            Ok(Exit::Ok)
        }
        "plan" => {
            let s = spec_arg(1)?;
            runner::preflight(&s)?;
            let p = plan::runs(&s);
            let mut text = plan::describe(&s, &p);
            let (_, base) = runner::default_paths(&s, &o);
            let (need, _) = plan::disk_estimate(&s, &plan::data_estimates(&s, &p));
            match (need, plan::free_bytes(&base)) {
                (Some(need), Some(free)) if need > free => {
                    text += &format!(
                        "warning: the work directory needs about {} but {} has {} free; give --workdir on a bigger filesystem\n",
                        plan::human_bytes(need),
                        base.display(),
                        plan::human_bytes(free)
                    )
                }
                (_, Some(free)) => text += &format!("free in {}: {}\n", base.display(), plan::human_bytes(free)),
                _ => {}
            }
            for r in &p {
                text += &format!(
                    "  {:>4}  {:<16} {:<24} threads={:<5} repeat={}\n",
                    r.seq + 1,
                    s.configurations[r.configuration].name,
                    s.workloads[r.workload].name,
                    r.threads,
                    r.repeat
                );
            }
            print_out(&text);
            Ok(Exit::Ok)
        }
        "run" => {
            let s = spec_arg(1)?;
            runner::run(&s, &o)
        }
        "summary" => {
            let s = spec_arg(1)?;
            let (store_path, _) = runner::default_paths(&s, &o);
            let st = store::Store::open_existing(&store_path.to_string_lossy())?;
            // Messages from here on name the store with any URL password hidden.
            let store_path = PathBuf::from(st.location());
            let Some(e) = st.latest_experiment(&s.name)? else {
                return Err(format!("no experiment '{}' in {}", s.name, store_path.display()));
            };
            let text = crate::report::lab_summary(&st, e.id, None)? + &summary::overhead(&st, e.id, &s)?;
            print_out(&format!(
                "{text}experiment id {} ({}) in {}; full report: dbbench report {}\n",
                e.id,
                e.status,
                store_path.display(),
                s.path.display()
            ));
            Ok(Exit::Ok)
        }
        // For bench/datadir-restore.sh: the lab's own snapshot/restore, timed.
        "copy-datadir" => {
            let [mode, src, dst] = positionals.as_slice() else {
                return Err("usage: dbbench lab copy-datadir snapshot|restore SRC DST".into());
            };
            let stats = match mode.as_str() {
                "snapshot" => datadir::snapshot(Path::new(src), Path::new(dst))?,
                "restore" => datadir::restore(Path::new(src), Path::new(dst))?,
                m => return Err(format!("copy-datadir mode '{m}': use snapshot or restore")),
            };
            println!("{}", serde_json::to_string(&stats).unwrap_or_default());
            Ok(Exit::Ok)
        }
        other => Err(format!("unknown lab command '{other}'; use plan, run or summary (see `dbbench lab --help`)")),
    }
}
