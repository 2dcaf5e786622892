//! A driver from dbbench's connection options as text (`--db-driver=mysql`,
//! `--mysql-socket=...`), parsed by the sysbench command line (`crate::cli`):
//! how the lab, `tpch` and `querydiff` reach a database.

use crate::options::Options;

/// The driver dbbench command-line options name (`--db-driver=mysql`,
/// `--mysql-socket=...`; without `--db-driver`, the default SQLite), for
/// callers that open several connections (one per thread: connections
/// never move between threads). A password not in the options comes from
/// the environment, as for a run (`driver::passwords_from_env`): for
/// `tpch` and `querydiff`, commands a user types.
pub fn driver(driver_args: &[String]) -> Result<std::sync::Arc<dyn crate::driver::Driver>, String> {
    driver_with(driver_args, true)
}

/// `driver`, with `from_env` false taking no password from the
/// environment: the lab's own connections use the configuration's
/// password (in its driver options, in this process only), never what the
/// user's shell exported for their own tools.
pub fn driver_with(
    driver_args: &[String],
    from_env: bool,
) -> Result<std::sync::Arc<dyn crate::driver::Driver>, String> {
    let parsed = crate::cli::parse(driver_args)?;
    let mut opts = Options::default();
    opts.declare(crate::cli::general_options());
    opts.declare(crate::driver::all_options());
    let unknown = crate::cli::apply(&mut opts, &parsed.assignments)?;
    if let Some(a) = unknown.first() {
        return Err(format!("invalid connection option {}", crate::secret::redact(&a.original)));
    }
    if from_env {
        crate::driver::passwords_from_env(&mut opts);
    }
    crate::driver::create(opts.str("db_driver"), &opts)
}
