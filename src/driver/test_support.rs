//! Helpers shared by the driver tests (compiled for tests only).

use super::{Connection, DbError, Driver, Outcome, RowSource, Value};
use crate::options::{OptionSpec, Options};

/// Options with the generic driver options and `driver_options` declared,
/// and the `extra` values set.
pub fn driver_opts(driver_options: Vec<OptionSpec>, extra: &[(&str, &str)]) -> Options {
    let mut o = Options::default();
    o.declare(driver_options);
    o.declare(super::generic_options());
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
        _ if std::env::var("CI").as_deref() == Ok("true")
            || std::env::var("DBBENCH_TEST_REQUIRE_SERVERS").as_deref() == Ok("1") =>
        {
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
    assert_eq!(
        c.execute(ins, &[Value::Int(1), Value::Text(tricky.into()), Value::Double(0.125)]),
        Ok(Outcome::Affected(1))
    );
    let sel = c.prepare(&format!("SELECT c, d, '?' FROM {table} WHERE c = ? AND id = ?")).expect("prepare");
    let got = rows(c.execute(sel, &[Value::Text(tricky.into()), Value::Int(1)]));
    assert_eq!(got, vec![vec![txt(tricky), txt("0.125"), txt("?")]], "mode {mode}");
    assert_eq!(rows(c.query(&format!("SELECT {}", c.quote(tricky)))), vec![vec![txt(tricky)]]);
    c.query(&format!("DROP TABLE {table}")).expect("drop");
}

/// The bulk-load test table's columns: INTEGER, DECIMAL(15,2), DATE, CHAR(1), VARCHAR(44).
pub const BULK_COLUMNS: [&str; 5] = ["k", "price", "d", "flag", "note"];

/// `CREATE TABLE` for the bulk-load test table (the same SQL works on all three databases).
pub fn bulk_table_sql(table: &str) -> String {
    format!(
        "CREATE TABLE {table} (k INTEGER NOT NULL, price DECIMAL(15,2) NOT NULL, d DATE NOT NULL, flag CHAR(1) NOT NULL, \
         note VARCHAR(44) NOT NULL)"
    )
}

/// Generated rows in the bulk-load line format and the figures a correct load must give.
pub struct BulkData {
    /// All lines, `\n`-terminated.
    pub stream: Vec<u8>,
    /// Number of lines.
    pub rows: u64,
    /// Sum of `k`.
    pub sum_k: i64,
    /// Sum of `price` in cents.
    pub sum_cents: i64,
    /// Number of distinct `d`.
    pub distinct_dates: usize,
}

/// `n` rows shaped like TPC-H data (lineitem's kinds of fields): keys, prices
/// with cents (some negative), dates over seven years from 1992-01-01, a flag
/// and a comment of varying length with a quote and non-ASCII letters.
pub fn bulk_data(n: u64) -> BulkData {
    let mut d =
        BulkData { stream: Vec::with_capacity(n as usize * 64), rows: n, sum_k: 0, sum_cents: 0, distinct_dates: 0 };
    let mut dates = std::collections::HashSet::new();
    for i in 0..n as i64 {
        let k = i * 7919 % 1_000_003 + 1;
        let cents = (i * 104_729) % 10_000_000 - 500_000;
        let day = 8035 + (i * 31) % 2557;
        let date = super::date_from_unix_days(day);
        let flag = ["A", "N", "R"][(i % 3) as usize];
        let note: String =
            "l'été, car-ride; pending accounts: fluffily ironic".chars().take((10 + i % 30) as usize).collect();
        let price = format!("{}{}.{:02}", if cents < 0 { "-" } else { "" }, cents.abs() / 100, cents.abs() % 100);
        d.stream.extend_from_slice(format!("{k}|{price}|{date}|{flag}|{note}\n").as_bytes());
        d.sum_k += k;
        d.sum_cents += cents;
        dates.insert(day);
    }
    d.distinct_dates = dates.len();
    d
}

/// A row source handing out `stream` in pieces of `chunk` bytes (pieces may cut lines).
pub fn chunks_of(stream: &[u8], chunk: usize) -> impl FnMut(&mut Vec<u8>) -> bool + '_ {
    let mut pos = 0;
    move |buf: &mut Vec<u8>| {
        let end = (pos + chunk).min(stream.len());
        buf.extend_from_slice(&stream[pos..end]);
        pos = end;
        pos < stream.len()
    }
}

/// A row source handing out `stream` in pieces of `lines` whole lines.
pub fn lines_of(stream: &[u8], lines: usize) -> impl FnMut(&mut Vec<u8>) -> bool + '_ {
    let mut pos = 0;
    move |buf: &mut Vec<u8>| {
        let mut end = pos;
        for _ in 0..lines {
            match stream[end..].iter().position(|&b| b == b'\n') {
                Some(n) => end += n + 1,
                None => end = stream.len(),
            }
        }
        buf.extend_from_slice(&stream[pos..end]);
        pos = end;
        pos < stream.len()
    }
}

/// How a test loads: a connection's `bulk_load`, or another path to the same contract.
pub type Loader<'l> = &'l dyn Fn(&mut dyn Connection, &str, RowSource) -> Result<u64, DbError>;

/// The connection's own `bulk_load`.
pub fn own_bulk_load(c: &mut dyn Connection, table: &str, rows: RowSource) -> Result<u64, DbError> {
    c.bulk_load(table, &BULK_COLUMNS, rows)
}

/// The default INSERT path, whatever the connection's own `bulk_load` does.
pub fn insert_path(c: &mut dyn Connection, table: &str, rows: RowSource) -> Result<u64, DbError> {
    super::insert_rows(c, table, &BULK_COLUMNS, rows, &mut |_| Ok(()))
}

/// Loads 100 000 rows with `load` in whole-line chunks, in 37-byte pieces
/// that cut lines, and in one piece, checking count, sums, distinct dates
/// and one row read back each time; then an empty source. `exact_decimal`:
/// the DECIMAL sum comes back exact (not SQLite's floating point).
pub fn check_bulk_load(c: &mut dyn Connection, table: &str, exact_decimal: bool, load: Loader) {
    let data = bulk_data(100_000);
    let sample =
        data.stream.split(|&b| b == b'\n').nth(54_321).map(|l| String::from_utf8_lossy(l).into_owned()).expect("line");
    let fields: Vec<&str> = sample.split('|').collect();
    for chunking in ["lines", "cut", "whole"] {
        c.query(&format!("DROP TABLE IF EXISTS {table}")).expect("drop");
        c.query(&bulk_table_sql(table)).expect("create");
        let t0 = std::time::Instant::now();
        let n = match chunking {
            "lines" => load(c, table, &mut lines_of(&data.stream, 997)),
            "cut" => load(c, table, &mut chunks_of(&data.stream, 37)),
            _ => load(c, table, &mut chunks_of(&data.stream, usize::MAX / 2)),
        };
        let n = n.unwrap_or_else(|e| panic!("{table}, {chunking}: {e}"));
        eprintln!("{table}, {chunking}: {n} rows in {:?}", t0.elapsed());
        assert_eq!(n, data.rows, "{chunking}");
        let got =
            rows(c.query(&format!("SELECT COUNT(*), SUM(k), SUM(price), COUNT(DISTINCT d) FROM {table}"))).remove(0);
        let cell = |i: usize| String::from_utf8_lossy(got[i].as_deref().unwrap_or_default()).into_owned();
        assert_eq!(
            (cell(0), cell(1), cell(3)),
            (data.rows.to_string(), data.sum_k.to_string(), data.distinct_dates.to_string()),
            "{chunking}"
        );
        let want_sum = format!(
            "{}{}.{:02}",
            if data.sum_cents < 0 { "-" } else { "" },
            data.sum_cents.abs() / 100,
            data.sum_cents.abs() % 100
        );
        if exact_decimal {
            assert_eq!(cell(2), want_sum, "{chunking}");
        } else {
            let got_sum: f64 = cell(2).parse().expect("sum");
            assert!((got_sum - data.sum_cents as f64 / 100.0).abs() < 0.01, "{chunking}: {got_sum} vs {want_sum}");
        }
        let row =
            rows(c.query(&format!("SELECT k, price, d, flag, note FROM {table} WHERE k = {}", fields[0]))).remove(0);
        let text = |i: usize| String::from_utf8_lossy(row[i].as_deref().unwrap_or_default()).into_owned();
        assert_eq!(
            (text(0), text(2), text(3), text(4)),
            (fields[0].into(), fields[2].into(), fields[3].into(), fields[4].into()),
            "{chunking}"
        );
        assert_eq!(text(1).parse::<f64>().ok(), fields[1].parse::<f64>().ok(), "{chunking}");
    }
    c.query(&format!("DELETE FROM {table}")).expect("delete");
    assert_eq!(load(c, table, &mut |_: &mut Vec<u8>| false), Ok(0), "empty source");
    assert_eq!(rows(c.query(&format!("SELECT COUNT(*) FROM {table}"))), vec![vec![txt("0")]]);
    c.query(&format!("DROP TABLE {table}")).expect("drop");
}

/// Each bad stream fails to load with an error whose message contains the
/// expected text, and the connection then still works. A bad row comes
/// after 20 000 good ones too, so that the error arrives mid-stream.
pub fn check_bad_rows(c: &mut dyn Connection, table: &str, load: Loader, cases: &[(&str, &str)]) {
    let good = bulk_data(20_000).stream;
    for (bad, want) in cases {
        for after_good in [false, true] {
            c.query(&format!("DROP TABLE IF EXISTS {table}")).expect("drop");
            c.query(&bulk_table_sql(table)).expect("create");
            let mut stream = if after_good { good.clone() } else { Vec::new() };
            stream.extend_from_slice(bad.as_bytes());
            stream.extend_from_slice(&good);
            let err = load(c, table, &mut lines_of(&stream, 500)).expect_err(bad);
            eprintln!("{table}: bad row {bad:?}: {err}");
            assert!(err.message.contains(want), "{bad:?}: {err}");
            assert_eq!(rows(c.query("SELECT 1")), vec![vec![txt("1")]], "after {bad:?}");
        }
    }
    c.query(&format!("DROP TABLE {table}")).expect("drop");
}

/// Cancels `long_sql` (which would run for 10 s or more) after 200 ms from
/// another thread: the statement fails with ErrorKind::Cancelled within
/// 2 s, the connection then runs `SELECT 1`, and after a reconnect the
/// same canceller stops the new session's statement. Returns the error.
/// Every wait is bounded: the statements end by themselves, the canceller
/// thread is joined after them.
pub fn check_cancel(c: &mut dyn Connection, long_sql: &str) -> DbError {
    use std::time::{Duration, Instant};
    let canceller: std::sync::Arc<dyn super::Canceller> = std::sync::Arc::from(c.canceller().expect("canceller"));
    let mut first = None;
    for round in 0..2 {
        let k = canceller.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let at = Instant::now();
            k.cancel().map(|()| at)
        });
        let t0 = Instant::now();
        let err = c.query(long_sql).expect_err("cancelled");
        let ended = Instant::now();
        let cancelled_at = t.join().expect("canceller thread").expect("cancel");
        eprintln!(
            "round {round}: cancelled after {:?}, ended {:?} after the cancel: {err}",
            t0.elapsed(),
            ended.duration_since(cancelled_at)
        );
        assert_eq!(err.kind, super::ErrorKind::Cancelled, "{err}");
        assert!(
            ended.duration_since(cancelled_at) < Duration::from_secs(2),
            "took {:?}",
            ended.duration_since(cancelled_at)
        );
        assert_eq!(rows(c.query("SELECT 1")), vec![vec![txt("1")]]);
        first.get_or_insert(err);
        c.reconnect().expect("reconnect");
    }
    first.expect("error")
}
