//! The subcommands' command line on clap: each subsystem owns a
//! `#[derive(Parser)]` struct whose doc comments are its help; this module
//! parses argv with it the house's way and builds the shell completions
//! from the same definitions (`dbbench completions bash|zsh|fish`).
//!
//! The house's way, for every subcommand alike: `--k v` and `--k=v`; `_`
//! and `-` are the same in option names (`--cv_limit=5`), as in the
//! sysbench parser; a repeated option's last value wins; a usage error is
//! one line on stderr naming the option, and exit status 1 (clap's own is
//! 2, which here means "some runs failed"); `--help` prints on stdout and
//! exits 0. The load engine's sysbench-compatible parser (`cli.rs`) is not
//! clap and stays as it is: Lua scripts declare options at run time.

use crate::exit::Exit;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgMatches, Command, FromArgMatches, Parser};
use std::process::ExitCode;

/// `--cv_limit=5` → `--cv-limit=5`: `_` becomes `-` in an option's name,
/// never in its value nor in positionals; after `--` nothing is touched
/// (`dbbench server start ... -- --innodb_buffer_pool_size=1G`).
pub fn normalize_argv(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for a in args {
        if rest || !a.starts_with("--") || a == "--" {
            rest |= a == "--";
            out.push(a.clone());
            continue;
        }
        let (name, value) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (a.as_str(), None),
        };
        let name = name.replace('_', "-");
        out.push(match value {
            Some(v) => format!("{name}={v}"),
            None => name,
        });
    }
    out
}

/// Why parsing gave nothing to run.
#[derive(Debug)]
pub enum Stop {
    /// `--help` (or `--version`): the text for stdout, exit 0.
    Help(String),
    /// No arguments where some are needed: the help for stderr, exit 1.
    HelpOnEmpty(String),
    /// A usage error: one line, without the `dbbench NAME: ` prefix, exit 1.
    Usage(String),
}

/// Parses `dbbench NAME ARGS...` with `T`'s definition.
#[cfg(test)]
pub fn try_parse<T: Parser>(name: &str, args: &[String]) -> Result<T, Stop> {
    try_parse_with(name, args, T::command()).map(|(t, _)| t)
}

/// Parses with `cmd`: `T`'s definition with arguments added at run time
/// (the connection options), whose values are read from the matches.
pub fn try_parse_with<T: FromArgMatches>(name: &str, args: &[String], cmd: Command) -> Result<(T, ArgMatches), Stop> {
    let bin = format!("dbbench {name}");
    let mut cmd = negative_numbers(cmd).bin_name(&bin);
    let argv = std::iter::once(bin.clone()).chain(normalize_argv(args));
    let parsed = cmd.try_get_matches_from_mut(argv).and_then(|m| Ok((T::from_arg_matches(&m)?, m)));
    parsed.map_err(|e| match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Stop::Help(e.render().to_string()),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Stop::HelpOnEmpty(e.render().to_string()),
        _ => Stop::Usage(one_line(&bin, &mut cmd, &e)),
    })
}

/// `--sf -1` is a value (refused as not positive), not an option `-1`.
fn negative_numbers(cmd: Command) -> Command {
    cmd.allow_negative_numbers(true).mut_subcommands(negative_numbers)
}

/// [`try_parse`], printing the outcome when there is nothing to run:
/// Err(exit status).
pub fn parse<T: Parser>(name: &str, args: &[String]) -> Result<T, ExitCode> {
    parse_with(name, args, T::command()).map(|(t, _)| t)
}

/// [`try_parse_with`], printing the outcome when there is nothing to run.
pub fn parse_with<T: FromArgMatches>(name: &str, args: &[String], cmd: Command) -> Result<(T, ArgMatches), ExitCode> {
    try_parse_with(name, args, cmd).map_err(|stop| match stop {
        Stop::Help(text) => {
            crate::term::print_out(&text);
            Exit::Ok.into()
        }
        Stop::HelpOnEmpty(text) => {
            eprint!("{text}");
            Exit::Error.into()
        }
        Stop::Usage(line) => {
            eprintln!("dbbench {name}: {line}");
            Exit::Error.into()
        }
    })
}

/// A subcommand's failure, printed in the one place that prints errors:
/// `dbbench NAME: ` and the error with its contexts joined by ": " (`{:#}`),
/// so a message reads as one line from the outermost context inward; exit 1.
pub fn failed(name: &str, e: &anyhow::Error) -> ExitCode {
    eprintln!("dbbench {name}: {e:#}");
    Exit::Error.into()
}

/// The connection options (`--db-driver`, `--mysql-*`, `--pgsql-*`,
/// `--sqlite-*`, `--db-ps-mode`), declared once as the engine's
/// `OptionSpec`s, as clap arguments: the subcommands that connect add them
/// at run time, so the engine, their help and the completions share one
/// definition. Their values stay text: the engine's parser checks them
/// ([`connection_values`] hands them back as `--name=value`).
pub fn connection_args() -> Vec<clap::Arg> {
    connection_specs()
        .into_iter()
        .map(|spec| {
            let name = spec.name.replace('_', "-");
            let arg = clap::Arg::new(name.clone())
                .long(name)
                .help(spec.description.clone())
                .help_heading("Connection options (as the load engine's)");
            match spec.kind {
                // A bare `--mysql-ssl` is on, as in the engine's parser.
                crate::options::OptKind::Bool => arg.num_args(0..=1).require_equals(true).default_missing_value("on"),
                _ => arg.num_args(1).value_name(value_name(spec.kind)),
            }
        })
        .collect()
}

/// What an option of `kind` takes, for the help.
pub(crate) fn value_name(kind: crate::options::OptKind) -> &'static str {
    use crate::options::OptKind::*;
    match kind {
        Bool => "on|off",
        Int => "N",
        Size => "SIZE",
        Double => "X",
        List => "LIST",
        File => "FILE",
        String => "VALUE",
    }
}

/// The OptionSpecs behind [`connection_args`].
fn connection_specs() -> Vec<crate::options::OptionSpec> {
    let general = crate::cli::general_options().into_iter().filter(|s| s.name == "db_driver" || s.name == "db_debug");
    general.chain(crate::driver::all_options()).collect()
}

/// The connection options given, as the engine reads them: `--name=value`.
pub fn connection_values(m: &ArgMatches) -> Vec<String> {
    connection_specs()
        .iter()
        .map(|spec| spec.name.replace('_', "-"))
        .filter_map(|name| m.try_get_one::<String>(&name).ok().flatten().map(|v| format!("--{name}={v}")))
        .collect()
}

/// A clap error as one line: what is wrong, with which option, what to do.
fn one_line(bin: &str, cmd: &mut Command, e: &clap::Error) -> String {
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    };
    // The help of the command that failed: `dbbench tpch gen --help`.
    let rendered = e.render().to_string();
    let command = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(|u| u.split(' ').take_while(|w| !w.starts_with(['[', '<', '-'])).collect::<Vec<_>>().join(" "))
        .filter(|c| c.starts_with(bin))
        .unwrap_or_else(|| bin.to_string());
    let see = format!("see `{command} --help`");
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let arg = context(ContextKind::InvalidArg).unwrap_or_default();
            let arg = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n).to_string();
            match context(ContextKind::SuggestedArg) {
                Some(s) => format!("unknown option '{arg}' (did you mean '{s}'?); {see}"),
                None if !arg.starts_with('-') => format!("unexpected argument '{arg}'; {see}"),
                None => format!("unknown option '{arg}'; {see}"),
            }
        }
        ErrorKind::InvalidSubcommand => {
            let what = context(ContextKind::InvalidSubcommand).unwrap_or_default();
            let names: Vec<String> = cmd
                .get_subcommands()
                .filter(|s| !s.is_hide_set() && s.get_name() != "help")
                .map(|s| s.get_name().to_string())
                .collect();
            let sub = bin.trim_start_matches("dbbench ");
            format!("unknown {sub} command '{what}'; use {} ({see})", names.join(", "))
        }
        // A value our own parser refused: its message names the option and the fix.
        ErrorKind::ValueValidation if std::error::Error::source(e).is_some() => {
            std::error::Error::source(e).map(|s| s.to_string()).unwrap_or_default()
        }
        // clap's text up to its first blank line (what is wrong, the
        // option, any possible values), joined into one line.
        _ => {
            let head: Vec<&str> = rendered
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(|l| l.trim().trim_start_matches("error: "))
                .collect();
            format!("{}; {see}", head.join(" ").trim_end_matches('.'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn underscores_become_dashes_in_option_names_only() {
        assert_eq!(
            normalize_argv(&strings(&["--cv_limit=5_0", "a_b.toml", "--store", "x_y", "--", "--innodb_x=1"])),
            strings(&["--cv-limit=5_0", "a_b.toml", "--store", "x_y", "--", "--innodb_x=1"])
        );
    }
}
