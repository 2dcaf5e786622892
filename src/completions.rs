//! `dbbench completions SHELL`: shell completion scripts generated from
//! every subcommand's clap definition and the load engine's option
//! declarations. Apart from `subcommand.rs`, which every subsystem uses to
//! parse its own arguments, so that the subsystems never depend on each
//! other through it.

use crate::exit::Exit;
use crate::subcommand::{parse, value_name};
use clap::Command;
use clap::{CommandFactory, Parser};
use std::process::ExitCode;

/// Every subcommand's definition, as one `dbbench` command (completions).
pub fn command() -> Command {
    let mut root = Command::new("dbbench")
        .about("a database benchmark lab; sysbench-compatible load engine (dbbench --help)")
        .subcommand(crate::lab::cli::Args::command())
        .subcommand(crate::report::Args::command())
        .subcommand(crate::report::compare::Args::command())
        .subcommand(crate::tpch::command())
        .subcommand(crate::querydiff::Args::command())
        .subcommand(crate::k8s::Args::command())
        .subcommand(crate::lab::server::Args::command())
        .subcommand(crate::shard::merge::Args::command())
        .subcommand(Completions::command());
    // The load engine's options, from its declarations (`--threads`, `--mysql-host`, ...).
    let mut specs = crate::cli::general_options();
    specs.extend(crate::driver::all_options());
    for spec in specs {
        let name = spec.name.replace('_', "-");
        let arg = clap::Arg::new(name.clone()).long(name).help(spec.description.clone());
        root = root.arg(match spec.kind {
            crate::options::OptKind::Bool => arg.num_args(0..=1).require_equals(true),
            kind => arg.num_args(1).value_name(value_name(kind)),
        });
    }
    root
}

/// Print a shell completion script for dbbench's subcommands and options.
///
/// Bash: `dbbench completions bash > /etc/bash_completion.d/dbbench`;
/// zsh: `dbbench completions zsh > "${fpath[1]}/_dbbench"`;
/// fish: `dbbench completions fish > ~/.config/fish/completions/dbbench.fish`.
#[derive(Parser, Debug)]
#[command(name = "completions")]
pub struct Completions {
    /// The shell: bash, zsh or fish
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    shell: String,
}

/// Entry point for `dbbench completions SHELL`.
pub fn completions_main(args: &[String]) -> ExitCode {
    let a = match parse::<Completions>("completions", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    use clap_complete::Shell;
    let shell = match a.shell.as_str() {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        _ => Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command(), "dbbench", &mut out);
    crate::term::print_out(&String::from_utf8_lossy(&out));
    Exit::Ok.into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_definition_is_valid() {
        super::command().debug_assert();
    }
}
