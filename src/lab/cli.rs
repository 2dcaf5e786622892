//! `dbbench lab ...`: argument handling; the work is in `runner`, `plan`
//! and `summary`.

use crate::exit::Exit;
use crate::lab::{datadir, plan, runner, spec, summary};
use crate::store;
use crate::term::print_out;
use anyhow::bail;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run an experiment spec: servers, data, repeated runs, results store (docs/lab.md).
#[derive(clap::Parser, Debug)]
#[command(
    name = "lab",
    args_override_self = true,
    arg_required_else_help = true,
    after_help = "Exit status of `lab run`: 0 every run of the experiment ok, 2 some runs failed or\n\
timed out (the matrix goes on; errors are stored and listed), 1 the lab could not\n\
run, 130 interrupted (resume with --resume: the run in flight is run again).\n\
Spec format: docs/lab.md; examples in examples/; faults and what survives them: docs/faults.md."
)]
pub struct Args {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(clap::Subcommand, Debug)]
enum LabCommand {
    /// Print the runs in order and an estimated duration
    Plan {
        /// The experiment spec (docs/lab.md)
        spec: PathBuf,
        #[command(flatten)]
        paths: Paths,
    },
    /// Run the experiment, store every run, print a comparison
    Run {
        /// The experiment spec (docs/lab.md)
        spec: PathBuf,
        #[command(flatten)]
        paths: Paths,
        /// Continue the newest unfinished experiment of SPEC: stored runs are skipped
        #[arg(long, conflicts_with = "new")]
        resume: bool,
        /// Start a new experiment even though an unfinished one exists (that one is abandoned: what it left
        /// running is stopped, its data removed)
        #[arg(long)]
        new: bool,
        /// Keep data directories and snapshots after the experiment finishes
        #[arg(long)]
        keep_data: bool,
        /// Run even while another lab run measures on this host (refused by default: each would measure the
        /// other's load); recorded in the store and flagged in the report
        #[arg(long)]
        allow_concurrent: bool,
        /// Serve live metrics (Prometheus text) on http://ADDR/metrics during the lab run: progress and the
        /// current run's figures, labelled (docs/metrics.md; plain HTTP, no authentication: binds where told)
        #[arg(long, value_name = "ADDR")]
        metrics_listen: Option<String>,
    },
    /// Print the comparison of the newest stored experiment
    Summary {
        /// The experiment spec (docs/lab.md)
        spec: PathBuf,
        #[command(flatten)]
        paths: Paths,
    },
    /// For bench/datadir-restore.sh: the lab's own snapshot/restore, timed
    #[command(hide = true)]
    CopyDatadir {
        #[arg(value_parser = ["snapshot", "restore"])]
        mode: String,
        src: PathBuf,
        dst: PathBuf,
    },
}

/// Where the lab keeps its results and data.
#[derive(clap::Args, Debug)]
struct Paths {
    /// Results store: a SQLite file, or postgresql://user@host[:port]/db[?host=/socket/dir] or
    /// mysql://user@host[:port]/db[?socket=/path] (password: DBBENCH_STORE_PASSWORD) [spec's store, else
    /// <spec dir>/dbbench-lab/results.sqlite]
    #[arg(long, value_name = "PATH|URL")]
    store: Option<PathBuf>,
    /// Data directories, snapshots and sockets' home [<spec dir>/dbbench-lab]
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
}

/// Entry point for `dbbench lab ARGS...`.
pub fn main(args: &[String]) -> ExitCode {
    let args = match crate::subcommand::parse::<Args>("lab", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(args.command) {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("dbbench lab: {}", crate::secret::redact(&format!("{e:#}")));
            Exit::Error.into()
        }
    }
}

fn run(command: LabCommand) -> anyhow::Result<Exit> {
    let options =
        |paths: Paths| runner::RunOptions { store: paths.store, workdir: paths.workdir, ..Default::default() };
    match command {
        LabCommand::Plan { spec, paths } => {
            let s = spec::load(&spec)?;
            let o = options(paths);
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
        LabCommand::Run { spec, paths, resume, new, keep_data, allow_concurrent, metrics_listen } => {
            let s = spec::load(&spec)?;
            let o = runner::RunOptions { resume, new, keep_data, allow_concurrent, metrics_listen, ..options(paths) };
            runner::run(&s, &o)
        }
        LabCommand::Summary { spec, paths } => {
            let s = spec::load(&spec)?;
            let o = options(paths);
            let (store_path, _) = runner::default_paths(&s, &o);
            let st = store::Store::open_existing(&store_path.to_string_lossy())?;
            // Messages from here on name the store with any URL password hidden.
            let store_path = PathBuf::from(st.location());
            let Some(e) = st.latest_experiment(&s.name)? else {
                bail!("no experiment '{}' in {}", s.name, store_path.display());
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
        LabCommand::CopyDatadir { mode, src, dst } => {
            let stats = match mode.as_str() {
                "snapshot" => datadir::snapshot(&src, &dst)?,
                _ => datadir::restore(&src, &dst)?,
            };
            println!("{}", serde_json::to_string(&stats).unwrap_or_default());
            Ok(Exit::Ok)
        }
    }
}
