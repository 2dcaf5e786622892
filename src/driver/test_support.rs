//! Helpers shared by the driver tests (compiled for tests only).

use super::{Connection, DbError, Driver, Outcome, Value};
use crate::options::{OptionSpec, Options};

/// Options with the generic driver options and `driver_options` declared,
/// and the `extra` values set.
pub fn driver_opts(driver_options: Vec<OptionSpec>, extra: &[(&str, &str)]) -> Options {
    let mut o = Options::default();
    o.declare(driver_options);
    o.declare(super::sqlite::generic_options());
    for (k, v) in extra {
        o.set(k, v);
    }
    o
}

/// A connection from a freshly created driver; panics with the error.
pub fn connect_new(driver: Result<Box<dyn Driver>, String>) -> Box<dyn Connection> {
    driver.expect("driver").connect().unwrap_or_else(|e| panic!("connect: {e}"))
}

/// Looks up a test server's environment variable. Unset: prints why the
/// test is skipped and returns `None`, unless CI=true or
/// DBBENCH_TEST_REQUIRE_SERVERS=1 (as `scripts/test.sh` sets), where a
/// missing server fails the test.
pub fn test_env(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Some(v),
        _ if std::env::var("CI").as_deref() == Ok("true") || std::env::var("DBBENCH_TEST_REQUIRE_SERVERS").as_deref() == Ok("1") => {
            panic!("{name} not set (required when CI=true or DBBENCH_TEST_REQUIRE_SERVERS=1)")
        }
        _ => {
            eprintln!("skipped: {name} not set");
            None
        }
    }
}

/// The rows of a statement that must return a result set.
pub fn rows(o: Result<Outcome, DbError>) -> Vec<Vec<Option<Vec<u8>>>> {
    match o {
        Ok(Outcome::Rows(rs)) => rs.to_rows(),
        other => panic!("expected rows, got {other:?}"),
    }
}

/// A text cell.
pub fn txt(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

/// A string full of quoting hazards survives a prepared INSERT, a prepared
/// SELECT on it (with a literal '?' in the text) and `quote()`, exactly.
pub fn check_text_round_trip(c: &mut dyn Connection, table: &str, double_type: &str, tricky: &str, mode: &str) {
    c.query(&format!("DROP TABLE IF EXISTS {table}")).expect("drop");
    c.query(&format!("CREATE TABLE {table} (id INT, c VARCHAR(100), d {double_type})")).expect("create");
    let ins = c.prepare(&format!("INSERT INTO {table} VALUES (?, ?, ?)")).expect("prepare");
    assert_eq!(c.execute(ins, &[Value::Int(1), Value::Text(tricky.into()), Value::Double(0.125)]), Ok(Outcome::Affected(1)));
    let sel = c.prepare(&format!("SELECT c, d, '?' FROM {table} WHERE c = ? AND id = ?")).expect("prepare");
    let got = rows(c.execute(sel, &[Value::Text(tricky.into()), Value::Int(1)]));
    assert_eq!(got, vec![vec![txt(tricky), txt("0.125"), txt("?")]], "mode {mode}");
    assert_eq!(rows(c.query(&format!("SELECT {}", c.quote(tricky)))), vec![vec![txt(tricky)]]);
    c.query(&format!("DROP TABLE {table}")).expect("drop");
}
