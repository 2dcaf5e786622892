//! `tpch load`: the eight tables generated and streamed straight into a
//! database through the drivers' `bulk_load` (MariaDB/MySQL `LOAD DATA
//! LOCAL INFILE` from memory, PostgreSQL `COPY FROM STDIN`, SQLite prepared
//! inserts in one transaction): no files. Each job — a table, or one part
//! of a big table — has a generator thread feeding a loader thread with
//! its own connection through a bounded channel, and `threads` jobs run at
//! once. Keys are created before the load (InnoDB's clustered index then
//! grows in key order) or after it (one sorted build per index), the seeds'
//! pre/post_create_PK choice; then the secondary indexes, foreign keys if
//! asked, statistics; then the row counts are checked.

use super::gen::{self, LineFormat};
use super::schema::{Dialect, Table, TABLES};
use crate::driver::{Connection, Driver};
use anyhow::{anyhow, bail, Context};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// When the primary keys are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// In `CREATE TABLE`, before any row.
    Before,
    /// After the load (`ALTER TABLE ... ADD PRIMARY KEY`).
    After,
}

/// What `load` does.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Scale factor.
    pub sf: f64,
    /// When primary keys are created.
    pub keys: Keys,
    /// Create the secondary indexes.
    pub indexes: bool,
    /// Create the foreign keys (not on SQLite).
    pub foreign_keys: bool,
    /// Gather optimizer statistics at the end (ANALYZE).
    pub analyze: bool,
    /// Jobs loading at once (each a generator and a loader thread).
    pub threads: usize,
    /// MariaDB/MySQL storage engine (`ENGINE=...`), or the server's default.
    pub engine: Option<String>,
}

/// What was loaded, and how long each phase took (seconds).
#[derive(Debug, Clone, Default)]
pub struct LoadSummary {
    /// Rows per table, in `TABLES` order (tables not loaded: 0).
    pub rows: Vec<(Table, u64)>,
    /// Creating the tables (and dropping old ones).
    pub create_s: f64,
    /// Generating and loading the rows.
    pub load_s: f64,
    /// Primary keys after the load, secondary indexes, foreign keys.
    pub keys_s: f64,
    /// ANALYZE.
    pub analyze_s: f64,
}

impl LoadSummary {
    /// All rows.
    pub fn total_rows(&self) -> u64 {
        self.rows.iter().map(|r| r.1).sum()
    }
}

/// The table that records what `load` put in a database (scale factor,
/// when, how) and the refresh update sets used since: later runs read the scale factor from it (Q11's FRACTION
/// and the metrics depend on it) instead of trusting a flag.
pub const META_TABLE: &str = "dbbench_tpch";

fn exec(conn: &mut dyn Connection, sql: &str) -> anyhow::Result<()> {
    conn.query(sql).map(|_| ()).map_err(|e| anyhow!("{e} in: {}", sql.lines().next().unwrap_or(sql)))
}

/// Jobs: a table or a part of it. Big tables are split into `threads`
/// parts so that several connections load them at once, except on SQLite,
/// which takes one writer at a time.
fn jobs(sf: f64, threads: usize, dialect: Dialect) -> Vec<(Table, i32, i32)> {
    let mut out = Vec::new();
    // Largest first: the long jobs start early and the short ones fill in.
    for &t in TABLES.iter().rev() {
        let parts = if dialect != Dialect::Sqlite && gen::is_partitioned(t) && gen::expected_rows(t, sf) >= 100_000 {
            threads as i32
        } else {
            1
        };
        for p in 1..=parts {
            out.push((t, p, parts));
        }
    }
    out
}

/// Loads one job: a generator thread sends chunks of lines through a
/// bounded channel (generation and loading overlap; memory stays at a few
/// chunks); this thread loads them over its own connection.
fn load_job(
    driver: &dyn Driver,
    table: Table,
    part: i32,
    parts: i32,
    sf: f64,
    loaded: &AtomicU64,
) -> anyhow::Result<u64> {
    let mut conn = driver.connect().context("cannot connect")?;
    let (tx, rx) = sync_channel::<Vec<u8>>(4);
    let generator = std::thread::spawn(move || {
        gen::generate(table, sf, part, parts, LineFormat::Load, 1 << 20, &mut |chunk| tx.send(chunk).is_ok())
    });
    let columns: Vec<&str> = table.columns().iter().map(|(n, _)| *n).collect();
    let mut pending: Option<Vec<u8>> = None;
    let result = conn.bulk_load_ascii(table.name(), &columns, &mut |buf: &mut Vec<u8>| {
        let chunk = match pending.take() {
            Some(c) => Some(c),
            None => rx.recv().ok(),
        };
        match chunk {
            Some(c) => {
                let lines = c.iter().filter(|&&b| b == b'\n').count() as u64;
                loaded.fetch_add(lines, Ordering::Relaxed);
                crate::progress::add_rows(lines);
                buf.extend_from_slice(&c);
                true
            }
            None => false,
        }
    });
    // Whatever happened, end the generator: dropping the receiver makes its sends fail.
    drop(rx);
    let generated = generator.join().map_err(|_| anyhow!("the data generator thread panicked"))?;
    let n = result.with_context(|| format!("loading {} (part {part} of {parts})", table.name()))?;
    if n != generated {
        bail!("loading {} (part {part} of {parts}): the database took {n} rows of {generated}", table.name());
    }
    Ok(n)
}

/// Runs `jobs` on `threads` threads; the first error wins (the others finish their job).
fn parallel<T: Send, R: Send>(
    jobs: Vec<T>,
    threads: usize,
    f: impl Fn(T) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<Vec<R>> {
    let queue = Mutex::new(jobs.into_iter());
    let results = Mutex::new(Vec::new());
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                if error.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
                    break;
                }
                let Some(job) = queue.lock().unwrap_or_else(|p| p.into_inner()).next() else { break };
                match f(job) {
                    Ok(r) => results.lock().unwrap_or_else(|p| p.into_inner()).push(r),
                    Err(e) => {
                        error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                    }
                }
            });
        }
    });
    match error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(results.into_inner().unwrap_or_else(|p| p.into_inner())),
    }
}

/// Refuses a scale factor whose partsupp rows repeat a primary key (see
/// [`gen::repeated_partsupp_key`]); `tpch load` and a lab spec's `sf` call
/// it before any database is opened: otherwise the load ends, after all
/// the data, on the key's error.
pub fn check_loadable(sf: f64) -> anyhow::Result<()> {
    match gen::repeated_partsupp_key(sf) {
        None => Ok(()),
        Some((part, supplier)) => Err(anyhow!(
            "--sf={sf}: dbgen's partsupp at this scale factor gives part {part} supplier {supplier} twice, which its primary key refuses; use 0.01 or another scale factor (dbbench tpch gen writes such data as dbgen does)"
        )),
    }
}

/// Drops and creates the tables, loads them, builds keys and indexes,
/// analyzes, checks the row counts and records the load in `META_TABLE`.
pub fn load(driver: &Arc<dyn Driver>, o: &LoadOptions) -> anyhow::Result<LoadSummary> {
    let dialect = Dialect::of_driver(driver.name())
        .ok_or_else(|| anyhow!("TPC-H has no dialect for driver {}", driver.name()))?;
    let mut conn = driver.connect().context("cannot connect")?;
    let mut summary = LoadSummary::default();
    let t = Instant::now();
    exec(&mut *conn, &format!("DROP TABLE IF EXISTS {META_TABLE}"))?;
    for table in TABLES.iter().rev() {
        exec(&mut *conn, &table.drop(dialect))?;
    }
    for table in TABLES {
        exec(&mut *conn, &table.create(dialect, o.keys == Keys::Before, o.engine.as_deref()))?;
    }
    summary.create_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let total: u64 = TABLES.iter().map(|&t| gen::expected_rows(t, o.sf)).sum();
    let progress = crate::progress::Progress::start(Some(total));
    let loaded = AtomicU64::new(0);
    let threads = if dialect == Dialect::Sqlite { 1 } else { o.threads.max(1) };
    let done = parallel(jobs(o.sf, threads, dialect), threads, |(table, part, parts)| {
        load_job(driver.as_ref(), table, part, parts, o.sf, &loaded).map(|n| (table, n))
    });
    drop(progress);
    let done = done?;
    summary.load_s = t.elapsed().as_secs_f64();
    summary.rows = TABLES.iter().map(|&t| (t, done.iter().filter(|d| d.0 == t).map(|d| d.1).sum())).collect();

    // Keys and indexes: one job per table (a table's statements in order).
    let t = Instant::now();
    let key_threads = if dialect == Dialect::Sqlite { 1 } else { o.threads.max(1) };
    parallel(TABLES.to_vec(), key_threads, |table| {
        let mut c = driver.connect().context("cannot connect")?;
        if o.keys == Keys::After {
            exec(&mut *c, &table.add_primary_key(dialect))?;
        }
        if o.indexes {
            for sql in table.create_indexes() {
                exec(&mut *c, &sql)?;
            }
        }
        Ok(())
    })?;
    // Foreign keys reference other tables' keys: after all of them, in order.
    if o.foreign_keys {
        for table in TABLES {
            for sql in table.add_foreign_keys(dialect) {
                exec(&mut *conn, &sql)?;
            }
        }
    }
    summary.keys_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    if o.analyze {
        match dialect {
            Dialect::Mysql => exec(&mut *conn, &format!("ANALYZE TABLE {}", TABLES.map(|t| t.name()).join(", ")))?,
            Dialect::Pgsql => exec(&mut *conn, "ANALYZE")?,
            Dialect::Sqlite => exec(&mut *conn, "ANALYZE")?,
        }
    }
    summary.analyze_s = t.elapsed().as_secs_f64();

    // The database holds what was generated, or the load is not done.
    for &(table, rows) in &summary.rows {
        let counted = match conn.query(&format!("SELECT count(*) FROM {}", table.name())) {
            Ok(crate::driver::Outcome::Rows(rs)) => rs.first_text().and_then(|t| t.parse::<u64>().ok()),
            _ => None,
        };
        if counted != Some(rows) {
            let holds = counted.map_or_else(|| "an unreadable number of".to_string(), |n| n.to_string());
            bail!("{} holds {holds} rows after the load, {rows} were loaded", table.name());
        }
    }
    exec(&mut *conn, &format!("CREATE TABLE {META_TABLE} (scale_factor {} NOT NULL, rows_loaded BIGINT NOT NULL, loaded_at VARCHAR(40) NOT NULL, keys_created VARCHAR(10) NOT NULL, dbbench_version VARCHAR(40) NOT NULL, refresh_sets INTEGER NOT NULL)", if dialect == Dialect::Sqlite { "REAL" } else { "DOUBLE PRECISION" }))?;
    exec(
        &mut *conn,
        &format!(
            "INSERT INTO {META_TABLE} VALUES ({}, {}, '{}', '{}', '{}', 0)",
            o.sf,
            summary.total_rows(),
            crate::timestamp::rfc3339_now(),
            if o.keys == Keys::Before { "before" } else { "after" },
            crate::VERSION
        ),
    )?;
    Ok(summary)
}

/// The scale factor a database was loaded with (from `META_TABLE`), or None
/// when `tpch load` did not load it.
pub fn loaded_scale_factor(conn: &mut dyn Connection) -> Option<f64> {
    match conn.query(&format!("SELECT scale_factor FROM {META_TABLE}")) {
        Ok(crate::driver::Outcome::Rows(rs)) => rs.first_text()?.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_tables_are_split_for_parallel_loading_except_on_sqlite() {
        let j = jobs(1.0, 4, Dialect::Pgsql);
        assert_eq!(j.iter().filter(|x| x.0 == Table::Lineitem).count(), 4);
        assert_eq!(j.iter().filter(|x| x.0 == Table::Region).count(), 1);
        assert_eq!(j[0], (Table::Lineitem, 1, 4), "largest first");
        assert!(jobs(1.0, 4, Dialect::Sqlite).iter().all(|x| x.2 == 1));
        // Tiny scale factors: nothing worth splitting below 100 000 rows.
        assert_eq!(jobs(0.01, 4, Dialect::Mysql).len(), 8);
    }
}
