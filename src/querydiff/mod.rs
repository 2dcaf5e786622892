//! `dbbench querydiff`: every query of a directory or file run on two
//! servers, cold and warm, timed, result sets compared, and the servers'
//! counters (status variables, pg_stat_statements, EXPLAIN ANALYZE)
//! taken per execution — perfrun/perfreport's A/B comparison (MariaDB
//! RQG, 2011) on dbbench's drivers, with a filter language of our own.
//!
//! Data flow: `dsn` (URL → connection options) → per query and temperature,
//! alternately on server 1 and 2: `counters` snapshot, timed query under the
//! timeout watchdog, snapshot → `results` (result sets compared) →
//! `record::Record` (medians, the filter's variables) → the JSON-lines file
//! as it goes, and at the end `text` (terminal) and `html`.
//! `querydiff report` reads the file back and applies another filter.

pub mod counters;
pub mod filter;
pub mod html;
pub mod record;
pub mod results;
pub mod sqlscan;
pub mod text;

use crate::driver::{Connection, Driver, ErrorKind, Outcome};
use crate::dsn::Dsn;
use crate::exit::Exit;
use crate::sqltext::{self, Comments, Dialect};
use anyhow::{anyhow, bail, Context};
use counters::{Counters, Probe};
use filter::Filter;
use record::{Line, PlanAgreement, Record, RunInfo, Server, Side, Summary, Temperature};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Query-by-query A/B comparison of two servers (docs/querydiff.md).
///
/// Runs every query on both servers, cold then warm, alternating servers; compares times, result sets and
/// counters; prints the records the filter matches. `dbbench querydiff report --input=FILE` reads a run's
/// --output file back and prints it again, with another filter.
#[derive(clap::Parser, Debug)]
#[command(
    name = "querydiff",
    args_override_self = true,
    arg_required_else_help = true,
    args_conflicts_with_subcommands = true,
    after_help = "DSNs: mysql://USER[:PASSWORD]@HOST[:PORT]/DB[?socket=PATH] (also mariadb://),\n      \
postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?host=SOCKET_DIR], sqlite:PATH,\n      \
or perfrun's dbi:mysql:host=H;port=P;user=U;database=DB\n\n\
Exit status: 0, or 2 when some query returned different rows on the two servers; 1 on bad input."
)]
pub struct Args {
    #[command(subcommand)]
    command: Option<QuerydiffCommand>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Subcommand, Debug)]
enum QuerydiffCommand {
    /// Read a run's --output file back and print it again, with another filter
    Report(ReportArgs),
}

/// `dbbench querydiff report`'s options.
#[derive(clap::Args, Debug)]
struct ReportArgs {
    /// A `querydiff --output` file
    #[arg(long, value_name = "FILE")]
    input: Option<String>,
    /// Which records to print [the run's filter]
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// The records as an HTML page
    #[arg(long, value_name = "FILE")]
    export_html: Option<String>,
}

/// `dbbench querydiff`'s options.
#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The first server's DSN (below)
    #[arg(long, value_name = "URL")]
    dsn1: Option<String>,
    /// The second server's DSN
    #[arg(long, value_name = "URL")]
    dsn2: Option<String>,
    /// A directory: its *.sql files in name order (2.sql before 10.sql); a file: its statements (separated by
    /// ;). Only read-only queries (SELECT, WITH, VALUES, TABLE) run; others are counted as skipped, except a
    /// file's setup statements (views, temporary tables, SET) before its first and after its last query,
    /// which run around each execution, untimed (TPC-H Q15's CREATE/DROP VIEW)
    #[arg(long, value_name = "DIR|FILE")]
    queries: Option<String>,
    /// Which records to print, e.g. 'Execution_time_ratio > 2 and warm' (variables, operators:
    /// docs/querydiff.md); every record is written to --output
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// JSON lines: a run line, one line per query and temperature, a summary line
    #[arg(long, value_name = "FILE")]
    output: Option<String>,
    /// Cold executions per query and server [1]
    #[arg(long, value_name = "N", value_parser = whole("--cold"))]
    cold: Option<u32>,
    /// Warm executions per query and server, after the cold ones [1]
    #[arg(long, value_name = "N", value_parser = whole("--warm"))]
    warm: Option<u32>,
    /// Shell command run before every cold execution (e.g. restart the server and drop caches);
    /// DBBENCH_QUERYDIFF_SERVER=1|2 says which; then dbbench reconnects
    #[arg(long, value_name = "CMD")]
    cold_command: Option<String>,
    /// Stop a query on the server after this long; recorded as an error
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// Statements run on each new connection to server 1 (e.g. SET SESSION
    /// optimizer_switch='derived_merge=off')
    #[arg(long, value_name = "SQL")]
    init1: Option<String>,
    /// Statements run on each new connection to server 2
    #[arg(long, value_name = "SQL")]
    init2: Option<String>,
    /// Column heading of server 1 [server1]
    #[arg(long, value_name = "LABEL")]
    name1: Option<String>,
    /// Column heading of server 2 [server2]
    #[arg(long, value_name = "LABEL")]
    name2: Option<String>,
    /// EXPLAIN each query after its executions (plans; PostgreSQL: ANALYZE, BUFFERS) [yes]
    #[arg(long, value_name = "yes|no", value_parser = parse_explain)]
    explain: Option<bool>,
    /// The records as an HTML page
    #[arg(long, value_name = "FILE")]
    export_html: Option<String>,
}

/// A whole-number option's value parser.
fn whole(option: &'static str) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |v: &str| v.parse::<u32>().map_err(|_| format!("{option}={v}: not a whole number"))
}

fn parse_timeout(v: &str) -> Result<Duration, String> {
    v.parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0 && *t < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("--timeout={v}: not a positive number of seconds"))
}

fn parse_explain(v: &str) -> Result<bool, String> {
    match v {
        "yes" | "on" | "1" | "true" => Ok(true),
        "no" | "off" | "0" | "false" => Ok(false),
        v => Err(format!("--explain={v}: use yes or no")),
    }
}

/// Entry point for `dbbench querydiff ARGS...`.
pub fn cli_main(args: &[String]) -> ExitCode {
    let args = match crate::subcommand::parse::<Args>("querydiff", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let result = match args.command {
        Some(QuerydiffCommand::Report(r)) => report_cmd(&r),
        None => run_cmd(&args.run),
    };
    match result {
        Ok(code) => code.into(),
        Err(e) => crate::subcommand::failed("querydiff", &e),
    }
}

/// A required option's value, non-empty.
fn required<'a>(value: &'a Option<String>, name: &str, what: &str) -> anyhow::Result<&'a str> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| anyhow!("--{name} is required ({what}); see `dbbench querydiff --help`"))
}

/// `--filter`, parsed.
fn parse_filter(filter: &Option<String>) -> anyhow::Result<Option<Filter>> {
    match filter.as_deref() {
        None | Some("") => Ok(None),
        Some(f) => Filter::parse(f).map(Some).with_context(|| format!("--filter '{f}'")),
    }
}

/// One statement to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// File name (`#N` added for the Nth statement of a file holding several).
    pub name: String,
    /// The statement without its `;`.
    pub sql: String,
    /// Setup statements of its file (`sqlscan::is_setup`: views, temporary
    /// tables, session settings before the file's first query), run before
    /// each execution and before EXPLAIN, untimed.
    pub setup: Vec<String>,
    /// The file's setup statements after its last query (`DROP VIEW`), run
    /// after each execution (also a failed one), untimed.
    pub teardown: Vec<String>,
}

/// Natural order: `2.sql` before `10.sql`. A number compares by its
/// length without leading zeros, then digit by digit (any length: a
/// 20-digit timestamp is not a u64); names equal so far (`01.sql`,
/// `1.sql`) fall back to plain text order, never to the directory's.
fn natural_key(s: &str) -> (Vec<(String, usize, String)>, String) {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while chars.peek().is_some() {
        let text: String = std::iter::from_fn(|| chars.next_if(|c| !c.is_ascii_digit())).collect();
        let digits: String = std::iter::from_fn(|| chars.next_if(char::is_ascii_digit)).collect();
        let number = digits.trim_start_matches('0').to_string();
        out.push((text, number.len(), number));
    }
    (out, s.to_string())
}

/// The lexings a run's statements are read under: each server's dialect
/// (both MySQL's and PostgreSQL's for a driver without one).
fn lexings(dsns: &[Dsn]) -> Vec<Dialect> {
    let mut out = Vec::new();
    for dsn in dsns {
        let driver = dsn.driver_args.iter().find_map(|a| a.strip_prefix("--db-driver=")).unwrap_or("");
        let dialects = match Dialect::of_driver(driver) {
            Some(d) => vec![d],
            None => vec![Dialect::MySql, Dialect::PostgreSql],
        };
        for d in dialects {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// The statements of a query file, `--` comments left out, as every one of
/// `lexings` (not empty) reads them: the same text runs on both servers,
/// so a file whose statements two servers would split differently (a `;`
/// after a backslash in a string, in a `#` comment, in a dollar quote) is
/// refused rather than run as two different things. A statement that only
/// holds comments under any lexing is left out.
fn file_statements(file: &std::path::Path, text: &str, lexings: &[Dialect]) -> anyhow::Result<Vec<String>> {
    let read: Vec<Vec<String>> = lexings
        .iter()
        .map(|&d| {
            let stmts = sqltext::split(text, d, Comments::DropDoubleDash);
            stmts.into_iter().filter(|s| !lexings.iter().any(|&l| sqltext::is_blank(s, l))).collect()
        })
        .collect();
    for (k, other) in read.iter().enumerate().skip(1) {
        if *other != read[0] {
            let i = read[0].iter().zip(other).position(|(a, b)| a != b).unwrap_or(read[0].len().min(other.len()));
            let shown = |v: &Vec<String>| v.get(i).map_or("nothing".into(), |s| format!("'{}'", text::one_line(s, 60)));
            bail!(
                "{}: {} and {} split it into different statements (statement {}: {} vs {}): a backslash in a string, a `#` or `--` comment, a dollar quote or a nested comment means different things to them; write it so that both read it the same",
                file.display(),
                lexings[0].name(),
                lexings[k].name(),
                i + 1,
                shown(&read[0]),
                shown(other)
            );
        }
    }
    Ok(read.into_iter().next().unwrap_or_default())
}

/// The queries of `--queries` (a directory's `*.sql` files or one file),
/// read under `lexings` (the servers' dialects, not empty).
pub fn read_queries(path: &std::path::Path, lexings: &[Dialect]) -> anyhow::Result<Vec<Query>> {
    let files: Vec<std::path::PathBuf> = if path.is_dir() {
        let mut f: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read directory {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "sql") && p.is_file())
            .collect();
        f.sort_by_key(|p| natural_key(&p.file_name().unwrap_or_default().to_string_lossy()));
        if f.is_empty() {
            bail!("--queries={}: the directory has no .sql files", path.display());
        }
        f
    } else if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        bail!("--queries={}: no such file or directory", path.display());
    };
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).with_context(|| format!("cannot read {}", f.display()))?;
        let stmts = file_statements(&f, &text, lexings)?;
        let base = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
        // Setup statements before the first query and after the last one
        // (Q15's CREATE VIEW and DROP VIEW) belong to every query of the
        // file; anything else that is not a query is skipped, as before.
        let is_query = |s: &String| sqlscan::why_not_read_only(s, lexings).is_none();
        let (first, last) = (stmts.iter().position(is_query), stmts.iter().rposition(is_query));
        let around = |i: usize| match (first, last) {
            (Some(a), Some(b)) => (i < a || i > b) && sqlscan::is_setup(&stmts[i], lexings),
            _ => false,
        };
        let setup: Vec<String> =
            (0..stmts.len()).filter(|&i| around(i) && Some(i) < first).map(|i| stmts[i].clone()).collect();
        let teardown: Vec<String> =
            (0..stmts.len()).filter(|&i| around(i) && Some(i) > last).map(|i| stmts[i].clone()).collect();
        let kept: Vec<usize> = (0..stmts.len()).filter(|&i| !around(i)).collect();
        let several = kept.len() > 1;
        for i in kept {
            out.push(Query {
                name: if several { format!("{base}#{}", i + 1) } else { base.clone() },
                sql: stmts[i].clone(),
                setup: setup.clone(),
                teardown: teardown.clone(),
            });
        }
    }
    Ok(out)
}

/// One server: its connection, counters and what to run on connecting.
struct Endpoint {
    number: usize,
    label: String,
    driver: Arc<dyn Driver>,
    conn: Option<Box<dyn Connection>>,
    probe: Probe,
    init: Vec<String>,
}

/// One execution's figures.
struct Execution {
    micros: u64,
    rows: Vec<Vec<Option<String>>>,
    counters: Counters,
}

impl Endpoint {
    fn open(number: usize, label: String, dsn: &Dsn, init: Option<&str>) -> anyhow::Result<(Endpoint, Option<String>)> {
        let on = || format!("--dsn{number} {}", dsn.shown);
        let driver = crate::connect::driver(&dsn.driver_args).map_err(crate::errors::text_error).with_context(on)?;
        let dialect = Dialect::of_driver(driver.name()).unwrap_or(Dialect::MySql);
        let init = init.map(|i| sqltext::split(i, dialect, Comments::DropDoubleDash)).unwrap_or_default();
        let mut ep = Endpoint { number, label, driver, conn: None, probe: Probe::None, init };
        let warning = ep.connect().map_err(crate::errors::text_error).with_context(on)?;
        Ok((ep, warning))
    }

    /// (Re)connects, runs the init statements and sets up the counters.
    fn connect(&mut self) -> Result<Option<String>, String> {
        self.conn = None;
        let mut conn = self.driver.connect().map_err(|e| format!("cannot connect: {e}"))?;
        for s in &self.init {
            conn.query(s).map_err(|e| format!("--init{} statement failed: {e} in: {s}", self.number))?;
        }
        let (probe, warning) = Probe::connect(conn.as_mut(), self.driver.name())?;
        self.probe = probe;
        self.conn = Some(conn);
        Ok(warning)
    }

    /// Connects, retrying for up to a minute (after a cold command that restarted the server).
    fn reconnect_patiently(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.connect() {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    return Err(anyhow!(e).context(format!("server {} is not reachable after 60 s", self.number)))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    /// Runs a query's setup or teardown statements (untimed, outside the
    /// counters' window).
    fn run_statements(&mut self, statements: &[String], what: &str) -> Result<(), String> {
        for s in statements {
            if self.conn.is_none() {
                self.connect().map_err(|e| format!("reconnecting: {e}"))?;
            }
            let conn = self.conn.as_mut().expect("connected above");
            if let Err(e) = conn.query(s) {
                if e.kind == ErrorKind::ConnectionLost {
                    self.conn = None;
                }
                return Err(format!("{what} statement failed: {e} in: {}", text::one_line(s, 100)));
            }
        }
        Ok(())
    }

    /// One timed execution of `q` between its setup and teardown statements.
    fn execute(&mut self, q: &Query, timeout: Option<Duration>) -> Result<Execution, String> {
        self.run_statements(&q.setup, "setup")?;
        let result = self.execute_timed(&q.sql, timeout);
        // Also after a failure: the next execution sets up again.
        let teardown = self.run_statements(&q.teardown, "teardown");
        let x = result?;
        teardown?;
        Ok(x)
    }

    /// EXPLAIN of `q` between its setup and teardown statements.
    fn plan(&mut self, q: &Query) -> (Option<String>, Counters) {
        if self.run_statements(&q.setup, "setup").is_err() {
            return (None, Counters::new());
        }
        let plan = match self.conn.as_mut() {
            Some(conn) => self.probe.plan(conn.as_mut(), &q.sql, true),
            None => (None, Counters::new()),
        };
        let _ = self.run_statements(&q.teardown, "teardown");
        plan
    }

    fn execute_timed(&mut self, sql: &str, timeout: Option<Duration>) -> Result<Execution, String> {
        if self.conn.is_none() {
            self.connect().map_err(|e| format!("reconnecting: {e}"))?;
        }
        let before = match self.probe.snapshot(self.conn.as_mut().expect("connected above").as_mut()) {
            Ok(b) => b,
            // The connection died since the last execution (a server
            // restarted by the other side's --cold-command, an idle
            // timeout): nothing was measured yet, so connect again.
            Err(_) => {
                self.connect().map_err(|e| format!("reconnecting: {e}"))?;
                self.probe
                    .snapshot(self.conn.as_mut().expect("connected above").as_mut())
                    .map_err(|e| format!("reading counters: {e}"))?
            }
        };
        let conn = self.conn.as_mut().expect("connected above");
        let canceller = conn.canceller();
        let start = Instant::now();
        let (result, fired) = crate::driver::cancel::with_watchdog(canceller.as_deref(), timeout, || conn.query(sql));
        let micros = start.elapsed().as_micros() as u64;
        if fired {
            // Also when the statement returned: MariaDB's SLEEP() ends
            // without an error when its query is killed.
            return Err(format!(
                "timed out after {} s (stopped on the server)",
                timeout.map_or(0.0, |t| t.as_secs_f64())
            ));
        }
        let rows = match result {
            Ok(Outcome::Rows(rs)) => rs.text_rows(),
            Ok(Outcome::Affected(_)) => Vec::new(),
            Err(e) => {
                if e.kind == ErrorKind::ConnectionLost {
                    self.conn = None;
                }
                return Err(e.to_string());
            }
        };
        let after = match self.probe.snapshot(conn.as_mut()) {
            Ok(a) => a,
            Err(e) => {
                self.conn = None;
                return Err(format!("reading counters: {e}"));
            }
        };
        Ok(Execution { micros, rows, counters: self.probe.delta(&before, &after) })
    }
}

/// The run's settings.
struct Settings {
    cold: u32,
    warm: u32,
    cold_command: Option<String>,
    timeout: Option<Duration>,
    explain: bool,
    /// The servers' dialects, under which queries are read (`sqlscan`).
    lexings: Vec<Dialect>,
}

fn run_cold_command(cmd: &str, server: usize, query: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("DBBENCH_QUERYDIFF_SERVER", server.to_string())
        .env("DBBENCH_QUERYDIFF_QUERY", query)
        .stdin(std::process::Stdio::null())
        .status()
        .context("--cold-command: cannot run sh")?;
    if status.success() {
        Ok(())
    } else {
        bail!("--cold-command failed ({status}) before {query} on server {server}; the cold figures would not be cold, so the run stops here")
    }
}

/// Runs one query on both servers at every temperature; the records.
/// Its error stops the run (a cold command failed, a server did not come
/// back); an execution's own error is a record's data (`Side::error`).
fn compare_query(eps: &mut [Endpoint; 2], q: &Query, s: &Settings) -> anyhow::Result<Vec<Record>> {
    let ordered = sqlscan::has_top_level_order_by(&q.sql, &s.lexings);
    let temps: Vec<(Temperature, u32)> =
        [(Temperature::Cold, s.cold), (Temperature::Warm, s.warm)].into_iter().filter(|t| t.1 > 0).collect();
    let mut out = Vec::new();
    for (ti, &(temp, n)) in temps.iter().enumerate() {
        let mut sides: [Side; 2] = Default::default();
        let mut counters: [Vec<Counters>; 2] = Default::default();
        let mut first_rows: [Option<Vec<Vec<Option<String>>>>; 2] = [None, None];
        for _ in 0..n {
            // Server 1 then server 2, execution by execution: both see the
            // same conditions (and drift) over the run.
            for (k, ep) in eps.iter_mut().enumerate() {
                if sides[k].error.is_some() {
                    continue;
                }
                if temp == Temperature::Cold {
                    if let Some(cmd) = &s.cold_command {
                        run_cold_command(cmd, k + 1, &q.name)?;
                        ep.reconnect_patiently()?;
                    }
                }
                match ep.execute(q, s.timeout) {
                    Ok(x) => {
                        sides[k].times_us.push(x.micros);
                        counters[k].push(x.counters);
                        if first_rows[k].is_none() {
                            sides[k].rows = Some(x.rows.len() as u64);
                            first_rows[k] = Some(x.rows);
                        }
                    }
                    Err(e) => sides[k].error = Some(e),
                }
            }
        }
        let mut merged: BTreeMap<String, [Option<f64>; 2]> = BTreeMap::new();
        for (k, list) in counters.iter().enumerate() {
            let names: std::collections::BTreeSet<&String> = list.iter().flat_map(|c| c.keys()).collect();
            for name in names {
                merged.entry(name.clone()).or_default()[k] =
                    crate::inference::median(list.iter().filter_map(|c| c.get(name).copied()));
            }
        }
        // Plans after the last temperature's executions (PostgreSQL's
        // EXPLAIN ANALYZE executes the query once more: never before a
        // measured execution).
        let mut plans = None;
        if s.explain && ti + 1 == temps.len() {
            for (k, ep) in eps.iter_mut().enumerate() {
                if sides[k].error.is_some() {
                    continue;
                }
                let (plan, vars) = ep.plan(q);
                sides[k].plan = plan;
                for (name, v) in vars {
                    merged.entry(name).or_default()[k] = Some(v);
                }
            }
            // Plans of two engines are different texts whatever they do.
            plans = match (&sides[0].plan, &sides[1].plan) {
                (Some(_), Some(_)) if eps[0].driver.name() != eps[1].driver.name() => Some(PlanAgreement::NotCompared),
                (Some(a), Some(b)) => Some(if a == b { PlanAgreement::Same } else { PlanAgreement::Differs }),
                _ => None,
            };
        }
        let (result, result_detail) = match (&first_rows[0], &first_rows[1]) {
            (Some(a), Some(b)) if sides.iter().all(|x| x.error.is_none()) => results::compare(a, b, ordered),
            _ => (results::Agreement::NotCompared, None),
        };
        out.push(Record {
            name: q.name.clone(),
            query: q.sql.clone(),
            setup: q.setup.clone(),
            teardown: q.teardown.clone(),
            plans,
            temperature: temp,
            sides,
            result,
            result_detail,
            counters: merged,
            matched: true,
        });
    }
    Ok(out)
}

/// Adds a query's records to the counts.
fn count_query(sum: &mut Summary, recs: &[Record], filter: Option<&Filter>) {
    sum.executed += 1;
    sum.errors += recs.iter().any(Record::failed) as u64;
    sum.diverging += recs.iter().any(|r| r.result == results::Agreement::Differs) as u64;
    sum.other_order += recs.iter().any(|r| r.result == results::Agreement::OtherOrder) as u64;
    sum.records += recs.len() as u64;
    sum.reported += recs.iter().filter(|r| r.matches(filter)).count() as u64;
}

fn run_cmd(a: &RunArgs) -> anyhow::Result<Exit> {
    let dsns = [
        Dsn::parse(required(&a.dsn1, "dsn1", "the first server")?).map_err(crate::errors::text_error)?,
        Dsn::parse(required(&a.dsn2, "dsn2", "the second server")?).map_err(crate::errors::text_error)?,
    ];
    let queries_arg = required(&a.queries, "queries", "a directory of .sql files or one file")?;
    let filter = parse_filter(&a.filter)?;
    let settings = Settings {
        cold: a.cold.unwrap_or(1),
        warm: a.warm.unwrap_or(1),
        cold_command: a.cold_command.clone().filter(|c| !c.is_empty()),
        timeout: a.timeout,
        explain: a.explain.unwrap_or(true),
        lexings: lexings(&dsns),
    };
    if settings.cold + settings.warm == 0 {
        bail!("--cold=0 and --warm=0: nothing would run; give at least one execution");
    }
    if settings.cold > 1 && settings.cold_command.is_none() {
        eprintln!(
            "warning: --cold={} without --cold-command: only the first execution finds nothing cached; the others are labelled cold but are not. Give --cold-command (e.g. a server restart and a cache drop) for real cold runs",
            settings.cold
        );
    }
    let queries = read_queries(std::path::Path::new(queries_arg), &settings.lexings)?;
    let labels =
        [a.name1.clone().unwrap_or_else(|| "server1".into()), a.name2.clone().unwrap_or_else(|| "server2".into())];
    let (ep1, w1) = Endpoint::open(1, labels[0].clone(), &dsns[0], a.init1.as_deref())?;
    let (ep2, w2) = Endpoint::open(2, labels[1].clone(), &dsns[1], a.init2.as_deref())?;
    for (n, w) in [(1, w1), (2, w2)] {
        if let Some(w) = w {
            eprintln!("warning: server {n}: {w}");
        }
    }
    let mut eps = [ep1, ep2];
    // Created only now: a mistyped DSN must not empty the last run's file.
    let mut output = match a.output.as_deref() {
        Some(p) if !p.is_empty() => Some(std::io::BufWriter::new(
            crate::safe_fs::create_truncate(std::path::Path::new(p), crate::safe_fs::default_file_mode())
                .map_err(crate::errors::text_error)
                .with_context(|| format!("--output={p}"))?,
        )),
        _ => None,
    };
    let server = |ep: &mut Endpoint, dsn: &Dsn| Server {
        label: ep.label.clone(),
        dsn: dsn.shown.clone(),
        driver: ep.driver.name().to_string(),
        version: ep.conn.as_mut().map(|c| c.server_version()).unwrap_or_default(),
        init: ep.init.clone(),
    };
    let run = RunInfo {
        schema: record::SCHEMA.into(),
        version: record::SCHEMA_VERSION,
        started: crate::timestamp::rfc3339_now(),
        servers: [server(&mut eps[0], &dsns[0]), server(&mut eps[1], &dsns[1])],
        queries: queries_arg.to_string(),
        cold: settings.cold,
        warm: settings.warm,
        cold_command: settings.cold_command.clone(),
        timeout_s: settings.timeout.map(|t| t.as_secs_f64()),
        filter: filter.as_ref().map(|f| f.source().to_string()),
    };
    let write_line = |out: &mut Option<std::io::BufWriter<std::fs::File>>, line: &Line| -> anyhow::Result<()> {
        if let Some(w) = out {
            let text = serde_json::to_string(line)?;
            // Flushed per line: an interrupted run keeps every finished query.
            writeln!(w, "{text}").and_then(|_| w.flush()).context("writing --output")?;
        }
        Ok(())
    };
    write_line(&mut output, &Line::Run(run.clone()))?;
    let mut sum = Summary { incoming: queries.len() as u64, ..Summary::default() };
    let mut records = Vec::new();
    let total = queries.len();
    let mut stopped = None;
    for (i, q) in queries.iter().enumerate() {
        if let Some(why) = sqlscan::why_not_read_only(&q.sql, &settings.lexings) {
            sum.skipped += 1;
            eprintln!("[{}/{total}] {}: skipped: {why}; querydiff runs only read-only queries (each several times on both servers)", i + 1, q.name);
            continue;
        }
        let mut recs = match compare_query(&mut eps, q, &settings) {
            Ok(r) => r,
            Err(e) => {
                stopped = Some(e);
                break;
            }
        };
        for r in recs.iter_mut() {
            r.matched = r.matches(filter.as_ref());
            write_line(&mut output, &Line::Query(r.clone()))?;
        }
        eprintln!("[{}/{total}] {}", i + 1, text::progress_line(&recs));
        count_query(&mut sum, &recs, filter.as_ref());
        records.extend(recs);
    }
    // No summary line for a stopped run: `querydiff report` then says the
    // run was interrupted instead of presenting it as complete.
    if stopped.is_none() {
        write_line(&mut output, &Line::Summary(sum.clone()))?;
    }
    warn_unknown_variables(filter.as_ref(), &records);
    let saved = record::Saved { run, records, summary: Some(sum.clone()) };
    crate::term::print_out(&text::render(&saved, filter.as_ref(), &sum));
    if let Some(path) = a.export_html.as_deref().filter(|p| !p.is_empty()) {
        crate::render::write_file(std::path::Path::new(path), html::page(&saved, filter.as_ref(), &sum).as_bytes())
            .map_err(crate::errors::text_error)
            .with_context(|| format!("--export-html={path}"))?;
        eprintln!("HTML report: {path}");
    }
    if let Some(e) = stopped {
        return Err(e);
    }
    Ok(if sum.diverging > 0 { Exit::Partial } else { Exit::Ok })
}

/// Warns about filter variables no record has: likely typos, which would
/// otherwise silently match nothing.
fn warn_unknown_variables(filter: Option<&Filter>, records: &[Record]) {
    let Some(f) = filter else { return };
    if records.is_empty() {
        return;
    }
    for v in f.variables() {
        if records.iter().all(|r| r.variable(&v) == filter::Value::Undefined) {
            eprintln!("warning: --filter reads {v}, which no record has (a typo? variables are listed in docs/querydiff.md; counters are the servers' status names with 1, 2, _delta or _ratio)");
        }
    }
}

/// Recounts a saved run's records under `filter`.
pub fn summarise(saved: &record::Saved, filter: Option<&Filter>) -> Summary {
    let mut sum = Summary::default();
    let mut i = 0;
    while i < saved.records.len() {
        let name = &saved.records[i].name;
        let j = (i..saved.records.len()).find(|&j| &saved.records[j].name != name).unwrap_or(saved.records.len());
        count_query(&mut sum, &saved.records[i..j], filter);
        i = j;
    }
    if let Some(s) = &saved.summary {
        sum.incoming = s.incoming;
        sum.skipped = s.skipped;
    } else {
        sum.incoming = sum.executed;
    }
    sum
}

/// The HTML section of a saved run, filtered by the run's own filter (for
/// `dbbench report --querydiff=FILE`).
pub fn html_section(path: &std::path::Path) -> anyhow::Result<String> {
    let mut saved = record::read(path)?;
    let filter = saved
        .run
        .filter
        .as_deref()
        .map(Filter::parse)
        .transpose()
        .with_context(|| format!("{}: the run's stored filter", path.display()))?;
    for r in saved.records.iter_mut() {
        r.matched = r.matches(filter.as_ref());
    }
    let sum = summarise(&saved, filter.as_ref());
    Ok(html::section(&saved, filter.as_ref(), &sum))
}

fn report_cmd(a: &ReportArgs) -> anyhow::Result<Exit> {
    let input = required(&a.input, "input", "a `querydiff --output` file")?;
    let mut saved = record::read(std::path::Path::new(input))?;
    let filter = match parse_filter(&a.filter)? {
        Some(f) => Some(f),
        None => saved
            .run
            .filter
            .as_deref()
            .map(Filter::parse)
            .transpose()
            .with_context(|| format!("{input}: the run's stored filter"))?,
    };
    if saved.summary.is_none() {
        eprintln!("warning: {input} has no summary line: the run was interrupted; these are the queries it finished");
    }
    warn_unknown_variables(filter.as_ref(), &saved.records);
    for r in saved.records.iter_mut() {
        r.matched = r.matches(filter.as_ref());
    }
    let sum = summarise(&saved, filter.as_ref());
    crate::term::print_out(&text::render(&saved, filter.as_ref(), &sum));
    if let Some(path) = a.export_html.as_deref().filter(|p| !p.is_empty()) {
        crate::render::write_file(std::path::Path::new(path), html::page(&saved, filter.as_ref(), &sum).as_bytes())
            .map_err(crate::errors::text_error)
            .with_context(|| format!("--export-html={path}"))?;
        eprintln!("HTML report: {path}");
    }
    Ok(if sum.diverging > 0 { Exit::Partial } else { Exit::Ok })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_read_in_natural_order() {
        let d = crate::safe_fs::TestDir::new("qd");
        for (f, t) in
            [("10.sql", "select 10"), ("2.sql", "select 2;\n-- only a comment\n;select 22;"), ("notes.txt", "x")]
        {
            std::fs::write(d.join(f), t).unwrap();
        }
        let q = read_queries(&d, &[Dialect::MySql, Dialect::PostgreSql]).unwrap();
        let names: Vec<&str> = q.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["2.sql#1", "2.sql#2", "10.sql"]);
        assert_eq!(q[1].sql, "select 22");
        assert!(read_queries(&d.join("gone"), &[Dialect::MySql])
            .unwrap_err()
            .to_string()
            .contains("no such file or directory"));
    }

    #[test]
    fn query_files_split_under_every_servers_rules() {
        let f = std::path::Path::new("q.sql");
        let both = [Dialect::MySql, Dialect::PostgreSql];
        // Comments that one server reads as comments and the other not, but that split alike.
        let text = "-- note\nselect a # b\nfrom t;\n# mine\n;select 2 /* x; */";
        assert_eq!(file_statements(f, text, &both).unwrap(), ["select a # b\nfrom t", "select 2 /* x; */"]);
        // A `;` inside a backslash-escaped string: MySQL reads one statement, PostgreSQL two.
        let e = file_statements(f, r"select 'a\'; select 2; -- '", &both).unwrap_err();
        assert!(
            e.to_string().starts_with("q.sql: MySQL and PostgreSQL split it into different statements (statement 1:"),
            "{e}"
        );
        assert_eq!(file_statements(f, r"select 'a\'; select 2; -- '", &[Dialect::PostgreSql]).unwrap().len(), 2);
        assert_eq!(file_statements(f, r"select 'a\'; select 2; -- '", &[Dialect::MySql]).unwrap().len(), 1);
        // A dollar quote holding `;`, on PostgreSQL servers.
        let pg = file_statements(f, "select $$a;b$$; select 2", &[Dialect::PostgreSql]).unwrap();
        assert_eq!(pg, ["select $$a;b$$", "select 2"]);
        assert!(file_statements(f, "select $$a;b$$; select 2", &both).is_err());
    }

    #[test]
    fn lexings_follow_the_servers_drivers() {
        let dsn = |s: &str| Dsn::parse(s).unwrap();
        let my = dsn("mysql://u@127.0.0.1/db");
        let pg = dsn("postgresql://u@127.0.0.1/db");
        assert_eq!(lexings(&[my.clone(), my.clone()]), [Dialect::MySql]);
        assert_eq!(lexings(&[my, pg]), [Dialect::MySql, Dialect::PostgreSql]);
        assert_eq!(lexings(&[dsn("sqlite:/tmp/x.db"), dsn("sqlite:/tmp/y.db")]), [Dialect::Sqlite]);
    }

    #[test]
    fn natural_order_takes_any_number_and_breaks_ties_by_name() {
        let mut names =
            vec!["q20261125000000000001.sql", "q3.sql", "1.sql", "01.sql", "q20261125000000000000.sql", "0.sql"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(
            names,
            ["0.sql", "01.sql", "1.sql", "q3.sql", "q20261125000000000000.sql", "q20261125000000000001.sql"]
        );
    }
}
