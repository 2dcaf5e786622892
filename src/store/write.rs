//! The store: opening and migrating it, and writing experiments and runs.

use super::backend::{open_server, open_sqlite, open_sqlite_read_only, sqlite_error, Backend};
use super::error::{failure, reword, StoreErrorKind};
use super::location::{parse_location, redact, Location};
use super::read::{json_at, opt_int, opt_text};
use super::sql::{int_at, migration_statements, text_at, Dialect, Row, Val};
use super::{now, ChildDocument, ExperimentRow, Overhead, RunRecord, Store, MIGRATIONS, SCHEMA_VERSION};
use crate::tpch::document::TpchDocument;
use anyhow::{anyhow, Context};
use rusqlite::Connection;
use std::cell::RefCell;
use std::time::Duration;

impl Store {
    /// Opens (creating and migrating as needed) the store at `location`: a
    /// SQLite file path, or `postgresql://user[:password]@host[:port]/db[?host=/socket/dir]`
    /// or `mysql://user[:password]@host[:port]/db[?socket=/path]` (the
    /// database must exist; the password may instead be in
    /// DBBENCH_STORE_PASSWORD).
    pub fn open(location: &str) -> anyhow::Result<Store> {
        let shown = redact(location);
        let (backend, url_auth) = (|| -> anyhow::Result<_> {
            Ok(match parse_location(location)? {
                Location::File(path) => (open_sqlite(&path)?, None),
                Location::Server(url) => {
                    (open_server(&url)?, url.raw_password.clone().map(|p| (url.raw_user.clone(), p)))
                }
            })
        })()
        .with_context(|| format!("results store {shown}"))?;
        let store = Store { db: RefCell::new(backend), location: shown, url_auth };
        store.migrate().with_context(|| format!("results store {}", store.location))?;
        Ok(store)
    }

    /// Opens a store that must already be a dbbench results store, for
    /// readers (reports, `compare`, `lab summary`): a missing file, a SQLite
    /// database without dbbench's schema or a server database without
    /// `dbbench_schema` is refused, not turned into a store. A SQLite store
    /// of the current schema is opened read-only, so a user who may only
    /// read the file (or its directory) can report on it; an older store is
    /// upgraded as `open` does, which needs write access.
    pub fn open_existing(location: &str) -> anyhow::Result<Store> {
        let shown = redact(location);
        let not_ours = || {
            failure(
                StoreErrorKind::NotAStore,
                format!("results store {shown}: is not a dbbench results store (it has no dbbench schema); give the store a `dbbench lab run` wrote"),
            )
        };
        let fail = || format!("results store {shown}");
        match parse_location(location).with_context(fail)? {
            Location::File(path) => {
                if !path.is_file() {
                    return Err(failure(
                        StoreErrorKind::Missing,
                        format!("no results store at {shown}; name the experiment's spec, or the store with --store=PATH|URL"),
                    ));
                }
                let (c, version) = open_sqlite_read_only(&path).with_context(fail)?;
                if version == 0 {
                    return Err(not_ours());
                }
                check_version(version).with_context(fail)?;
                if version == SCHEMA_VERSION {
                    return Ok(Store { db: RefCell::new(Backend::Sqlite(c)), location: shown, url_auth: None });
                }
                drop(c);
                return Store::open(location).map_err(|e| {
                    reword(e, |m| format!("{m} (the store has schema version {version}, older than this dbbench's {SCHEMA_VERSION}: it is upgraded once, by a dbbench that may write it, e.g. its owner running `dbbench report`)"))
                });
            }
            Location::Server(url) => {
                let mut db = open_server(&url).with_context(fail)?;
                let schema = if db.dialect() == Dialect::Mysql { "DATABASE()" } else { "current_schema()" };
                let rows = db
                    .query(&format!("SELECT count(*) FROM information_schema.tables WHERE table_name = 'dbbench_schema' AND table_schema = {schema}"), &[])
                    .with_context(fail)?;
                if rows.first().and_then(|r| r.first()).and_then(Val::int) != Some(1) {
                    return Err(not_ours());
                }
            }
        }
        Store::open(location)
    }

    /// Where the store is, for messages: its path, or its URL with the
    /// password replaced by `<hidden>`.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Runs `f` on the connection (checked first); errors name the store.
    pub(super) fn with<T>(&self, f: impl FnOnce(&mut Backend) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let mut db = self.db.borrow_mut();
        let r = db.keep_alive().and_then(|reconnected| {
            if reconnected {
                eprintln!(
                    "warning: results store {}: the server had closed the connection; reconnected",
                    self.location
                );
            }
            f(&mut db)
        });
        r.with_context(|| format!("results store {}", self.location))
    }

    /// Runs `f` in one transaction: committed when it succeeds, rolled back
    /// when it (or the commit) fails.
    fn transaction<T>(&self, f: impl FnOnce(&mut Backend) -> anyhow::Result<T>) -> anyhow::Result<T> {
        self.with(|db| {
            // SQLite: IMMEDIATE takes the write lock first (waiting for it
            // under the busy timeout). A deferred BEGIN whose transaction
            // read before writing failed at once with "database is locked"
            // when another lab had written meanwhile (WAL allows no
            // upgrade of an outdated read snapshot, and waits for nothing).
            db.batch(match db.dialect() {
                Dialect::Mysql => "START TRANSACTION",
                Dialect::Sqlite => "BEGIN IMMEDIATE",
                Dialect::Postgres => "BEGIN",
            })?;
            let r = f(db).and_then(|v| db.batch("COMMIT").map(|_| v));
            if r.is_err() {
                // After a failed COMMIT SQLite keeps the transaction open.
                let _ = db.batch("ROLLBACK");
            }
            r
        })
    }

    /// One statement's rows.
    pub(super) fn rows(&self, sql: &str, params: &[Val]) -> anyhow::Result<Vec<Row>> {
        self.with(|db| db.query(sql, params))
    }

    fn migrate(&self) -> anyhow::Result<()> {
        let mut db = self.db.borrow_mut();
        if let Backend::Sqlite(c) = &*db {
            return migrate_sqlite(c);
        }
        migrate_server(&mut db)
    }

    /// The newest experiment named `name`, if any.
    pub fn latest_experiment(&self, name: &str) -> anyhow::Result<Option<ExperimentRow>> {
        let rows = self.rows(
            "SELECT id, status, spec_hash FROM experiments WHERE name = ? ORDER BY id DESC LIMIT 1",
            &vals![name],
        )?;
        rows.first()
            .map(|r| -> anyhow::Result<_> {
                Ok(ExperimentRow { id: int_at(r, 0)?, status: text_at(r, 1)?, spec_hash: text_at(r, 2)? })
            })
            .transpose()
            .with_context(|| format!("results store {}", self.location))
    }

    /// Ids of the experiments of `name` that did not finish and were not
    /// abandoned (running, or interrupted), newest first.
    pub fn unfinished_experiments(&self, name: &str) -> anyhow::Result<Vec<i64>> {
        let rows = self.rows(
            "SELECT id FROM experiments WHERE name = ? AND status NOT IN ('finished', 'abandoned') ORDER BY id DESC",
            &vals![name],
        )?;
        rows.iter()
            .map(|r| int_at(r, 0))
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("results store {}", self.location))
    }

    /// Sets one key of an experiment's `settings` object (what a later
    /// process of the experiment adds, e.g. that it ran beside other labs).
    pub fn set_experiment_setting(&self, id: i64, key: &str, value: &serde_json::Value) -> anyhow::Result<()> {
        self.transaction(|db| {
            let rows = db.query("SELECT settings FROM experiments WHERE id = ?", &vals![id])?;
            let mut settings = rows.first().map(|r| json_at(r, 0)).unwrap_or_default();
            if !settings.is_object() {
                settings = serde_json::json!({});
            }
            settings[key] = value.clone();
            db.execute("UPDATE experiments SET settings = ? WHERE id = ?", &vals![settings.to_string(), id])
        })
    }

    /// Creates an experiment row; returns its id.
    #[allow(clippy::too_many_arguments)]
    pub fn create_experiment(
        &self,
        name: &str,
        description: &str,
        spec_path: &str,
        spec_text: &str,
        spec_hash: &str,
        git_revision: Option<&str>,
        host: &serde_json::Value,
        settings: &serde_json::Value,
    ) -> anyhow::Result<i64> {
        // The spec may name this store with its password (`store = "..."`),
        // percent-encoded as written; the redaction hides the rest.
        let spec_text = match &self.url_auth {
            Some((user, password)) => spec_text.replace(&format!("{user}:{password}@"), &format!("{user}:<hidden>@")),
            None => spec_text.to_string(),
        };
        let spec_text = crate::secret::redact(&spec_text);
        let (spec_path, description) = (crate::secret::redact(spec_path), crate::secret::redact(description));
        let (host, settings) = (crate::secret::redact_json(host), crate::secret::redact_json(settings));
        self.with(|db| {
            db.insert(
                "INSERT INTO experiments (name, description, spec_path, spec_text, spec_hash, status, started_at, dbbench_version, git_revision, host, settings)
                 VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                &vals![name, description, spec_path, spec_text, spec_hash, now(), crate::VERSION, git_revision, host.to_string(), settings.to_string()],
            )
        })
    }

    /// Sets an experiment's status (and its end time when finished).
    pub fn set_experiment_status(&self, id: i64, status: &str) -> anyhow::Result<()> {
        let finished = (status == "finished").then(now);
        self.with(|db| {
            db.execute("UPDATE experiments SET status = ?, finished_at = ? WHERE id = ?", &vals![status, finished, id])
        })
    }

    /// The id of a configuration row, created if missing.
    pub fn configuration(
        &self,
        experiment: i64,
        position: usize,
        name: &str,
        kind: &str,
        definition: &serde_json::Value,
    ) -> anyhow::Result<i64> {
        self.with(|db| {
            db.execute(
                "INSERT OR IGNORE INTO configurations (experiment_id, position, name, kind, definition) VALUES (?, ?, ?, ?, ?)",
                &vals![experiment, position as i64, name, kind, crate::secret::redact_json(definition).to_string()],
            )?;
            let rows = db.query("SELECT id FROM configurations WHERE experiment_id = ? AND name = ?", &vals![experiment, name])?;
            rows.first().ok_or_else(|| anyhow!("configuration '{name}' was not stored")).and_then(|r| int_at(r, 0))
        })
    }

    /// Records a configuration's server version and variables (first start only).
    pub fn set_server_info(
        &self,
        configuration: i64,
        version: &str,
        variables: &serde_json::Value,
    ) -> anyhow::Result<()> {
        self.with(|db| {
            db.execute(
                "UPDATE configurations SET server_version = ?, variables = ? WHERE id = ? AND server_version IS NULL",
                &vals![
                    crate::secret::redact(version),
                    crate::secret::redact_json(variables).to_string(),
                    configuration
                ],
            )
        })
    }

    /// The id of a cell row, created if missing.
    pub fn cell(&self, experiment: i64, configuration: i64, workload: &str, threads: u32) -> anyhow::Result<i64> {
        self.with(|db| {
            db.execute(
                "INSERT OR IGNORE INTO cells (experiment_id, configuration_id, workload, threads) VALUES (?, ?, ?, ?)",
                &vals![experiment, configuration, workload, threads],
            )?;
            let rows = db.query(
                "SELECT id FROM cells WHERE configuration_id = ? AND workload = ? AND threads = ?",
                &vals![configuration, workload, threads],
            )?;
            rows.first()
                .ok_or_else(|| anyhow!("cell ({workload}, {threads} threads) was not stored"))
                .and_then(|r| int_at(r, 0))
        })
    }

    /// Whether (cell, repeat) already has a run.
    pub fn run_exists(&self, cell: i64, repeat: u32) -> anyhow::Result<bool> {
        Ok(!self.rows("SELECT 1 FROM runs WHERE cell_id = ? AND \"repeat\" = ?", &vals![cell, repeat])?.is_empty())
    }

    /// How many of an experiment's stored runs are not ok (failed or timed
    /// out), whichever process ran them.
    pub fn runs_not_ok(&self, experiment: i64) -> anyhow::Result<i64> {
        let rows = self.rows(
            "SELECT count(*) FROM runs r JOIN cells c ON r.cell_id = c.id WHERE c.experiment_id = ? AND r.status <> 'ok'",
            &vals![experiment],
        )?;
        rows.first().map(|r| int_at(r, 0)).unwrap_or(Ok(0)).with_context(|| format!("results store {}", self.location))
    }

    /// Of the runs that are not ok, the TPC-H query runs stopped on the
    /// server at their own timeout (status `timeout`, the query's report
    /// says `timed_out`): censored figures, not failures, as `tpch power`
    /// counts them. A run the lab killed at `run_timeout` has no report.
    pub fn runs_censored(&self, experiment: i64) -> anyhow::Result<i64> {
        let rows = self.rows(
            "SELECT r.id, r.report FROM runs r JOIN cells c ON r.cell_id = c.id WHERE c.experiment_id = ? AND r.status = 'timeout' AND r.report IS NOT NULL AND c.workload LIKE '%:Q%'",
            &vals![experiment],
        )?;
        let mut censored = 0;
        for row in &rows {
            let (Some(id), Some(text)) = (opt_int(row, 0), opt_text(row, 1)) else { continue };
            let doc = TpchDocument::parse(&text, &format!("results store {}: run {id}", self.location))
                .map_err(crate::errors::text_error)?;
            if doc.first_query().is_some_and(|q| q.timed_out) {
                censored += 1;
            }
        }
        Ok(censored)
    }

    /// Records a lab event (prepare, snapshot, crash, warning).
    pub fn event(
        &self,
        experiment: i64,
        configuration: Option<&str>,
        workload: Option<&str>,
        kind: &str,
        seconds: Option<f64>,
        detail: &serde_json::Value,
    ) -> anyhow::Result<()> {
        self.with(|db| {
            db.execute(
                "INSERT INTO events (experiment_id, at, configuration, workload, kind, seconds, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                &vals![experiment, now(), configuration, workload, kind, seconds, crate::secret::redact_json(detail).to_string()],
            )
        })
    }

    /// Whether an event of `kind` was recorded for (configuration, workload).
    pub fn has_event(&self, experiment: i64, configuration: &str, workload: &str, kind: &str) -> anyhow::Result<bool> {
        let rows = self.rows(
            "SELECT 1 FROM events WHERE experiment_id = ? AND configuration = ? AND workload = ? AND kind = ? LIMIT 1",
            &vals![experiment, configuration, workload, kind],
        )?;
        Ok(!rows.is_empty())
    }

    /// Writes a finished run and everything measured during it, atomically.
    pub fn insert_run(&self, r: &RunRecord) -> anyhow::Result<i64> {
        let run = match &r.report {
            Some(ChildDocument::Run(d)) => Some(d.as_ref()),
            _ => None,
        };
        let time_s = run.map(|d| d.total_time_s);
        let rw = run.and_then(|d| d.rw_qps());
        let count = |f: fn(&crate::run_document::Counters) -> u64| run.map(|d| f(&d.counters) as i64);
        let histogram = run.and_then(|d| d.latency.histogram.clone());
        // No password reaches the store (docs/security.md): every text of
        // the run goes through the one redaction.
        use crate::secret::{redact, redact_args, redact_json};
        let error = r.error.as_deref().map(redact);
        let output_tail = r.output_tail.as_deref().map(redact);
        let log_excerpt = r.log_excerpt.as_deref().map(redact);
        let run_params = vals![
            r.cell_id,
            r.repeat,
            r.seq,
            r.status.as_str(),
            &error,
            &r.started_at,
            &r.ended_at,
            serde_json::to_string(&redact_args(&r.argv)).unwrap_or_default(),
            r.seed as i64,
            r.cache.as_str(),
            r.server_restarted,
            crate::run_document::to_compact_text(&r.overhead),
            time_s,
            count(|c| c.events),
            count(|c| c.queries),
            count(|c| c.reads),
            count(|c| c.writes),
            count(|c| c.other),
            count(|c| c.errors),
            count(|c| c.reconnects),
            run.map(|d| d.rates_per_s.events),
            run.map(|d| d.rates_per_s.queries),
            rw,
            run.and_then(|d| d.latency.avg_ms),
            run.and_then(|d| d.latency.percentile(95.0)),
            run.and_then(|d| d.latency.percentile(99.0)),
            run.and_then(|d| d.latency.max_ms),
            run.map(|d| d.latency_measured_from.as_str()),
            histogram,
            r.report.as_ref().map(|rep| {
                let mut v = match rep {
                    ChildDocument::Run(d) => serde_json::to_value(d),
                    ChildDocument::Tpch(d) => serde_json::to_value(d),
                }
                .unwrap_or_default();
                // The histogram has its own column; do not store it twice.
                if let Some(l) = v.get_mut("latency").and_then(|l| l.as_object_mut()) {
                    l.remove("histogram");
                }
                redact_json(&v).to_string()
            }),
            &output_tail,
            &log_excerpt,
        ];
        // One row per key, the last value winning (as SQLite's INSERT OR
        // REPLACE did): a plain INSERT then means the same on every server.
        let mut metrics: Vec<(&str, f64)> = Vec::new();
        for (name, value) in &r.metrics {
            match metrics.iter_mut().find(|m| m.0 == name.as_str()) {
                Some(m) => m.1 = *value,
                None => metrics.push((name.as_str(), *value)),
            }
        }
        let mut intervals: Vec<Vec<Val>> = Vec::new();
        // Warmup rows (time_s <= 0) first: charts shade them; no figure uses them.
        for iv in run.into_iter().flat_map(|d| d.warmup_intervals.iter().chain(&d.intervals)) {
            let row = vals![
                iv.time_s,
                iv.threads_running as i64,
                iv.tps,
                iv.qps,
                iv.errors as i64,
                iv.reconnects as i64,
                iv.latency_ms.avg,
                iv.latency_ms.percentile(95.0),
                iv.latency_ms.max,
            ]
            .to_vec();
            match intervals.iter_mut().find(|x| x[0] == row[0]) {
                Some(x) => *x = row,
                None => intervals.push(row),
            }
        }
        self.transaction(|db| {
            let run_id = db.insert(
                "INSERT INTO runs (cell_id, \"repeat\", seq, status, error, started_at, ended_at, argv, seed, cache, server_restarted, overhead,
                    time_s, events, queries, \"reads\", writes, other, errors, reconnects, tps, qps, rw_qps,
                    latency_avg_ms, latency_p95_ms, latency_p99_ms, latency_max_ms, latency_measured_from, histogram, report, output_tail, log_excerpt)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &run_params,
            )?;
            if let Some(p) = &r.server {
                db.execute(
                    "UPDATE runs SET server_product = ?, server_version = ? WHERE id = ?",
                    &vals![&p.name, &p.version, run_id],
                )?;
            }
            if r.client_cpus.is_some() || r.server_cpus.is_some() {
                db.execute(
                    "UPDATE runs SET client_cpus = ?, server_cpus = ? WHERE id = ?",
                    &vals![r.client_cpus.as_deref(), r.server_cpus.as_deref(), run_id],
                )?;
            }
            for sh in &r.shards {
                db.execute(
                    "INSERT INTO run_shards (run_id, shard, summary, result) VALUES (?, ?, ?, ?)",
                    &vals![run_id, sh.index as i64, redact_json(&sh.summary).to_string(), sh.result.as_deref().map(redact)],
                )?;
            }
            for (name, value) in &metrics {
                db.execute("INSERT INTO run_metrics (run_id, name, value) VALUES (?, ?, ?)", &vals![run_id, *name, *value])?;
            }
            for iv in &intervals {
                let mut p = vec![Val::from(run_id)];
                p.extend(iv.iter().cloned());
                db.execute(
                    "INSERT INTO run_intervals (run_id, time_s, threads_running, tps, qps, errors, reconnects, latency_avg_ms, latency_p95_ms, latency_max_ms)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    &p,
                )?;
            }
            for (source, samples) in [("os", &r.os_samples), ("server", &r.server_samples)] {
                for (t, data) in samples {
                    db.execute("INSERT INTO samples (run_id, source, time_s, data) VALUES (?, ?, ?, ?)", &vals![run_id, source, *t, data.to_string()])?;
                }
            }
            crate::fault_point::test_pause("store");
            Ok(run_id)
        })
    }

    /// Every run's lab overhead for an experiment, in run order:
    /// (configuration, server restarted, the `overhead` JSON object).
    pub fn run_overheads(&self, experiment: i64) -> anyhow::Result<Vec<(String, bool, Overhead)>> {
        let rows = self.rows(
            "SELECT c.name, r.server_restarted, r.overhead, r.id FROM runs r JOIN cells cl ON r.cell_id = cl.id
             JOIN configurations c ON cl.configuration_id = c.id WHERE cl.experiment_id = ? ORDER BY r.seq",
            &vals![experiment],
        )?;
        rows.iter()
            .map(|r| {
                let overhead = serde_json::from_str(&text_at(r, 2)?).map_err(|e| {
                    anyhow!("run {}: overhead is not the lab's record ({e})", int_at(r, 3).unwrap_or(0))
                })?;
                Ok((text_at(r, 0)?, int_at(r, 1)? != 0, overhead))
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("results store {}", self.location))
    }

    /// (configuration, seconds) of every event of `kind` in an experiment
    /// that has both, oldest first (e.g. how long each server stop took).
    pub fn event_seconds(&self, experiment: i64, kind: &str) -> anyhow::Result<Vec<(String, f64)>> {
        let rows = self.rows(
            "SELECT configuration, seconds FROM events WHERE experiment_id = ? AND kind = ? AND configuration IS NOT NULL AND seconds IS NOT NULL ORDER BY id",
            &vals![experiment, kind],
        )?;
        rows.iter()
            .map(|r| Ok((text_at(r, 0)?, r[1].real().context("seconds is not a number")?)))
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("results store {}", self.location))
    }
}

/// SQLite: the version is `PRAGMA user_version`; each migration in its own
/// transaction.
fn migrate_sqlite(c: &Connection) -> anyhow::Result<()> {
    c.busy_timeout(Duration::from_secs(30)).map_err(sqlite_error)?;
    // WAL: readers (a report while a lab runs) never block the writer.
    // Switching a new store to it needs the file to itself, and SQLite
    // returns "database is locked" at once, without its busy handler, while
    // another lab is opening the same new store: retried here as the busy
    // timeout would.
    let t = std::time::Instant::now();
    loop {
        match c.pragma_update(None, "journal_mode", "wal") {
            Ok(()) => break,
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && t.elapsed() < Duration::from_secs(30) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(sqlite_error(e)).context("setting WAL mode"),
        }
    }
    c.pragma_update(None, "foreign_keys", "on").map_err(sqlite_error)?;
    let version: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(sqlite_error)
        .context("reading its version")?;
    check_version(version)?;
    // A damaged page that opening did not touch would otherwise surface
    // at the first run's write, after that run (or a matrix) had been
    // measured, or not at all. The store is small; the check is
    // milliseconds.
    let problems: Vec<String> = {
        let mut st = c.prepare("PRAGMA quick_check(5)").map_err(sqlite_error)?;
        let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(sqlite_error)?;
        rows.collect::<Result<_, _>>().map_err(sqlite_error)?
    };
    if problems.first().map(String::as_str) != Some("ok") {
        return Err(failure(
            StoreErrorKind::Damaged,
            format!("it fails SQLite's quick_check ({}): {}", problems.join("; "), super::error::DAMAGED),
        ));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        // IMMEDIATE: the write lock before the version is read again, so
        // that of two labs creating one store at once the second waits and
        // then skips what the first did (it failed with "table experiments
        // already exists").
        c.execute_batch("BEGIN IMMEDIATE").map_err(sqlite_error)?;
        let migrated = (|| {
            let now: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(sqlite_error)?;
            if now > i as i64 {
                return Ok(());
            }
            for st in migration_statements(Dialect::Sqlite, sql) {
                c.execute_batch(&st)
                    .map_err(sqlite_error)
                    .with_context(|| format!("migration to version {}", i + 1))?;
            }
            c.pragma_update(None, "user_version", (i + 1) as i64).map_err(sqlite_error)
        })();
        match migrated {
            Ok(()) => c.execute_batch("COMMIT").map_err(sqlite_error)?,
            Err(e) => {
                let _ = c.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
    }
    Ok(())
}

fn check_version(version: i64) -> anyhow::Result<()> {
    if version > SCHEMA_VERSION {
        return Err(failure(
            StoreErrorKind::NewerSchema,
            format!("schema version {version} is newer than this dbbench understands ({SCHEMA_VERSION}); use a newer dbbench"),
        ));
    }
    Ok(())
}

/// The schema version a server store records (0 when it has no table yet).
fn server_version(db: &mut Backend) -> anyhow::Result<Option<i64>> {
    let schema = if db.dialect() == Dialect::Postgres { "current_schema()" } else { "DATABASE()" };
    let exists = db.query(&format!("SELECT count(*) FROM information_schema.tables WHERE table_schema = {schema} AND table_name = 'dbbench_schema'"), &[])?;
    if exists.first().and_then(|r| r.first()).and_then(Val::int).unwrap_or(0) == 0 {
        return Ok(None);
    }
    let v = db.query("SELECT max(version) FROM dbbench_schema", &[])?;
    Ok(Some(v.first().and_then(|r| r.first()).and_then(Val::int).unwrap_or(0)))
}

/// PostgreSQL and MariaDB/MySQL: the version is the one row of table
/// `dbbench_schema`. Two labs opening a new store at once are serialised by
/// a lock (an advisory lock on PostgreSQL, GET_LOCK on MariaDB/MySQL).
fn migrate_server(db: &mut Backend) -> anyhow::Result<()> {
    // The common case, an up-to-date store, takes two reads and no lock
    // (and works for a user who may only read and insert).
    if let Some(v) = server_version(db)? {
        check_version(v)?;
        if v == SCHEMA_VERSION {
            return Ok(());
        }
    }
    match db.dialect() {
        Dialect::Postgres => {
            // PostgreSQL's DDL is transactional: all missing migrations and
            // the new version commit together or not at all.
            db.batch("BEGIN")?;
            let r = (|| {
                db.batch("SELECT pg_advisory_xact_lock(7262645362)")?; // any fixed key: "dbbench" in digits, roughly
                db.batch("CREATE TABLE IF NOT EXISTS dbbench_schema (version INTEGER NOT NULL)")?;
                let version = server_version(db)?.unwrap_or(0);
                check_version(version)?;
                for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                    for st in migration_statements(Dialect::Postgres, sql) {
                        db.batch(&st).with_context(|| format!("migration to version {}", i + 1))?;
                    }
                }
                db.batch("DELETE FROM dbbench_schema")?;
                db.execute("INSERT INTO dbbench_schema (version) VALUES (?)", &vals![SCHEMA_VERSION])?;
                db.batch("COMMIT")
            })();
            if r.is_err() {
                let _ = db.batch("ROLLBACK");
            }
            r
        }
        _ => {
            // Named locks are server-wide: the database's name keeps stores
            // in different databases apart (64 characters at most).
            const LOCK: &str = "LEFT(CONCAT('dbbench_store:', DATABASE()), 64)";
            let got = db.query(&format!("SELECT GET_LOCK({LOCK}, 60)"), &[])?;
            if got.first().and_then(|r| r.first()).and_then(Val::int) != Some(1) {
                return Err(failure(
                    StoreErrorKind::Busy,
                    "another dbbench has been creating or upgrading this store's tables for 60 s; try again when it is done",
                ));
            }
            let r = migrate_mysql(db);
            let _ = db.query(&format!("SELECT RELEASE_LOCK({LOCK})"), &[]);
            r
        }
    }
}

/// MariaDB/MySQL commit every DDL statement on its own, so a migration
/// cannot be one transaction: its statements run one by one and the
/// version is written after each migration. One that fails half-way leaves
/// the tables it created; the error says so.
fn migrate_mysql(db: &mut Backend) -> anyhow::Result<()> {
    db.batch("CREATE TABLE IF NOT EXISTS dbbench_schema (version INTEGER NOT NULL) ENGINE=InnoDB")?;
    let version = server_version(db)?.unwrap_or(0);
    check_version(version)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let statements = migration_statements(Dialect::Mysql, sql);
        for (k, st) in statements.iter().enumerate() {
            db.batch(st).map_err(|e| {
                let partial = if k > 0 {
                    format!(
                        "; MariaDB/MySQL cannot roll DDL back, so the {k} statement(s) before it stay applied: drop the tables of schema version {} (or the whole database) and open the store again",
                        i + 1
                    )
                } else {
                    String::new()
                };
                reword(e, |m| format!("migration to version {}: {m}{partial}", i + 1))
            })?;
        }
        db.batch("START TRANSACTION")?;
        let r = db
            .batch("DELETE FROM dbbench_schema")
            .and_then(|_| db.execute("INSERT INTO dbbench_schema (version) VALUES (?)", &vals![(i + 1) as i64]));
        match r {
            Ok(()) => db.batch("COMMIT")?,
            Err(e) => {
                let _ = db.batch("ROLLBACK");
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::backend::IDLE_CHECK;
    use crate::store::{Product, RunStatus};
    use std::time::Instant;

    /// A test server's address from the environment, or None (skipped)
    /// outside CI, as tests/common's `server_env`.
    fn server_env(name: &str) -> Option<String> {
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => Some(v),
            _ => {
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("{name} is not set: CI must start the test servers (scripts/servers.sh up)");
                }
                eprintln!("skipped: {name} not set (start servers with scripts/servers.sh up DIR and source DIR/env)");
                None
            }
        }
    }

    /// Opens `location`, stores a run and reads it back through every
    /// public call; then checks that reopening changes nothing and that a
    /// newer schema is refused.
    fn round_trip(location: &str) {
        let s = Store::open(location).unwrap();
        let e = s
            .create_experiment("x", "", "x.toml", "", "h", None, &serde_json::json!({}), &serde_json::json!({}))
            .unwrap();
        assert_eq!(s.latest_experiment("x").unwrap().unwrap().status, "running");
        assert!(s.latest_experiment("y").unwrap().is_none());
        let c = s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap();
        assert_eq!(s.configuration(e, 0, "base", "sqlite", &serde_json::json!({})).unwrap(), c);
        // Names compare exactly on every backend (MariaDB's default collation would not).
        assert_ne!(s.configuration(e, 1, "Base ", "sqlite", &serde_json::json!({})).unwrap(), c);
        s.set_server_info(c, "1.0", &serde_json::json!({"a": "1"})).unwrap();
        s.set_server_info(c, "2.0", &serde_json::json!({})).unwrap();
        let cell = s.cell(e, c, "w", 4).unwrap();
        assert_eq!(s.cell(e, c, "w", 4).unwrap(), cell);
        let report = {
            use crate::run_document::{Counters, Interval, IntervalLatency, Rates};
            let mut d = crate::run_document::sample_document();
            let lat = |avg, max, p95| IntervalLatency {
                min: None,
                avg: Some(avg),
                max: Some(max),
                percentiles: [("95".to_string(), Some(p95))].into(),
            };
            d.total_time_s = 2.0;
            d.counters = Counters { events: 10, queries: 20, reads: 14, writes: 4, other: 2, ..Default::default() };
            d.rates_per_s = Rates { events: 5.0, queries: 10.0, ..Default::default() };
            d.latency.avg_ms = Some(1.5);
            d.latency.max_ms = Some(3.0);
            d.latency.percentiles_ms = [("95".to_string(), Some(2.5))].into();
            d.latency.histogram = Some("HIST".into());
            (d.service_time, d.rate) = (None, None);
            let row =
                |time_s, tps, qps| Interval { time_s, tps, qps, latency_ms: lat(1.0, 2.0, 2.0), ..Default::default() };
            d.intervals = vec![row(1.0, 5.0, 10.0)];
            d.warmup_intervals = vec![row(0.0, 4.0, 8.0)];
            ChildDocument::Run(Box::new(d))
        };
        let rec = RunRecord {
            cell_id: cell,
            repeat: 1,
            status: RunStatus::Ok,
            report: Some(report),
            server_restarted: true,
            overhead: Overhead { ready_s: Some(0.5), ..Default::default() },
            metrics: vec![("m".into(), 1.0), ("m".into(), 7.5)],
            os_samples: vec![(1.0, serde_json::json!({"cpu_user_pct": 3.0}))],
            server_samples: vec![(1.0, serde_json::json!({"Questions": 3}))],
            server: Some(Product { name: "MariaDB".into(), version: "10.11.19-MariaDB".into() }),
            ..Default::default()
        };
        let id = s.insert_run(&rec).unwrap();
        assert!(s.run_exists(cell, 1).unwrap());
        assert!(!s.run_exists(cell, 2).unwrap());
        let err = format!("{:#}", s.insert_run(&rec).unwrap_err());
        assert!(err.starts_with(&format!("results store {}: ", s.location())), "{err}");
        // The failed insert left nothing behind: one transaction per run.
        let counts = s.rows("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM samples), (SELECT count(*) FROM run_metrics)", &[]).unwrap();
        assert_eq!(counts[0], vec![Val::Int(1), Val::Int(2), Val::Int(1)]);
        let row = &s
            .rows("SELECT rw_qps, histogram, report, \"reads\", server_restarted FROM runs WHERE id = ?", &vals![id])
            .unwrap()[0];
        assert_eq!(row[0].real(), Some(9.0));
        assert_eq!(row[1].text().as_deref(), Some("HIST"));
        assert!(!row[2].text().unwrap().contains("HIST"));
        assert_eq!(row[3].int(), Some(14));
        assert_eq!(row[4].int(), Some(1));
        let info = &s.rows("SELECT server_version FROM configurations WHERE id = ?", &vals![c]).unwrap()[0];
        assert_eq!(info[0].text().as_deref(), Some("1.0"), "server info is recorded at the first start only");
        let iv = &s
            .rows("SELECT time_s, tps, threads_running FROM run_intervals WHERE run_id = ? ORDER BY time_s", &vals![id])
            .unwrap();
        // The warmup tick is kept beside the measured one (time_s <= 0), outside every figure.
        assert_eq!(
            iv,
            &vec![vec![Val::Real(0.0), Val::Real(4.0), Val::Int(0)], vec![Val::Real(1.0), Val::Real(5.0), Val::Int(0)]]
        );
        // What reports read back, the same on every backend.
        let figures = s.run_figures(e).unwrap();
        assert_eq!(figures.len(), 1);
        let f = &figures[0];
        assert_eq!(
            (f.id, f.configuration_id, f.workload.as_str(), f.threads, f.repeat, f.status.as_str()),
            (id, c, "w", 4, 1, "ok")
        );
        assert_eq!(
            (f.tps, f.qps, f.rw_qps, f.latency_p95_ms, f.events),
            (Some(5.0), Some(10.0), Some(9.0), Some(2.5), Some(10))
        );
        assert_eq!(f.metrics, vec![("m".to_string(), 7.5)]);
        assert_eq!(s.run_histograms(e).unwrap(), vec![(id, "HIST".to_string())]);
        let points = s.interval_points(e).unwrap();
        assert_eq!(
            points.iter().map(|p| (p.run_id, p.time_s, p.tps)).collect::<Vec<_>>(),
            vec![(id, 0.0, Some(4.0)), (id, 1.0, Some(5.0))]
        );
        let info = s.experiment_info(e).unwrap().unwrap();
        assert_eq!((info.name.as_str(), info.status.as_str()), ("x", "running"));
        assert!(s.experiment_info(e + 1000).unwrap().is_none());
        let configs = s.configurations_of(e).unwrap();
        assert_eq!(configs[0].name, "base");
        assert_eq!(configs[0].server_version.as_deref(), Some("1.0"));
        assert_eq!(configs[0].variables, Some(serde_json::json!({"a": "1"})));
        assert_eq!(
            configs[0].products,
            vec!["MariaDB 10.11.19-MariaDB".to_string()],
            "per run, read back per configuration"
        );
        assert_eq!(s.experiments().unwrap()[0].0, e);
        assert_eq!(
            s.run_overheads(e).unwrap(),
            vec![("base".to_string(), true, Overhead { ready_s: Some(0.5), ..Default::default() })]
        );
        s.event(e, Some("base"), Some("w"), "prepared", Some(1.5), &serde_json::json!({})).unwrap();
        s.event(e, None, None, "warning", None, &serde_json::json!({"x": 1})).unwrap();
        assert!(s.has_event(e, "base", "w", "prepared").unwrap());
        assert_eq!(s.event_seconds(e, "prepared").unwrap(), vec![("base".to_string(), 1.5)]);
        assert!(!s.has_event(e, "base", "w", "crash").unwrap());
        // A connection the server closed while idle is reopened before the next use.
        {
            let long_ago = Instant::now().checked_sub(IDLE_CHECK * 2).unwrap();
            let mut db = s.db.borrow_mut();
            match &mut *db {
                Backend::Postgres(p) => {
                    let _ = p.client.batch_execute("SELECT pg_terminate_backend(pg_backend_pid())");
                    p.last_used = long_ago;
                }
                Backend::Mysql(m) => {
                    use mysql::prelude::Queryable;
                    let id = m.conn.connection_id();
                    let _ = m.conn.query_drop(format!("KILL {id}"));
                    m.last_used = long_ago;
                }
                Backend::Sqlite(_) => {}
            }
        }
        s.set_experiment_status(e, "finished").unwrap();
        assert_eq!(s.latest_experiment("x").unwrap().unwrap().status, "finished");
        drop(s);
        // Reopening an up-to-date store changes nothing.
        let s = Store::open(location).unwrap();
        assert_eq!(s.run_figures(e).unwrap().len(), 1);
        // A store written by a newer dbbench is refused.
        s.with(|db| match db {
            Backend::Sqlite(_) => db.batch("PRAGMA user_version = 99"),
            _ => db.batch("UPDATE dbbench_schema SET version = 99"),
        })
        .unwrap();
        drop(s);
        let refused = Store::open(location).err().unwrap();
        assert_eq!(StoreErrorKind::of(&refused), StoreErrorKind::NewerSchema, "{refused:#}");
        let err = format!("{refused:#}");
        assert!(
            err.contains(&format!(
                "schema version 99 is newer than this dbbench understands ({SCHEMA_VERSION}); use a newer dbbench"
            )),
            "{err}"
        );
    }

    /// What a caller branches on survives the context the store adds: each
    /// refusal and each classified SQLite failure keeps its kind, and its
    /// one line is the text users saw before the kind existed.
    #[test]
    fn store_failures_carry_their_kind_through_the_context() {
        let dir = crate::safe_fs::TestDir::new("store-kinds");
        let kind_and_text = |r: anyhow::Result<Store>| {
            let e = r.err().expect("refused");
            (StoreErrorKind::of(&e), format!("{e:#}"))
        };
        let missing = dir.join("none.sqlite").display().to_string();
        let (kind, text) = kind_and_text(Store::open_existing(&missing));
        assert_eq!(kind, StoreErrorKind::Missing, "{text}");
        assert!(text.starts_with(&format!("no results store at {missing}; ")), "{text}");

        let foreign = dir.join("foreign.sqlite");
        Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
        let (kind, text) = kind_and_text(Store::open_existing(&foreign.display().to_string()));
        assert_eq!(kind, StoreErrorKind::NotAStore, "{text}");
        assert!(text.contains("is not a dbbench results store"), "{text}");

        let garbage = dir.join("garbage.sqlite");
        std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
        let (kind, text) = kind_and_text(Store::open(&garbage.display().to_string()));
        assert_eq!(kind, StoreErrorKind::Damaged, "{text}");
        assert!(text.contains("file is not a database") && text.contains(".recover"), "{text}");

        let (kind, text) = kind_and_text(Store::open("postgresql://host/db"));
        assert_eq!(kind, StoreErrorKind::Location, "{text}");
        assert!(text.starts_with("results store postgresql://host/db: the URL names no user"), "{text}");

        // SQLITE_FULL, as on a full disk: the page limit stops the next write.
        let path = dir.join("full.sqlite");
        let store = Store::open(&path.display().to_string()).unwrap();
        let full = store.with(|db| {
            db.batch("PRAGMA max_page_count = 1")?;
            db.batch("CREATE TABLE filler (x BLOB)")?;
            db.batch("INSERT INTO filler VALUES (zeroblob(1000000))")
        });
        let e = full.expect_err("over the page limit");
        assert_eq!(StoreErrorKind::of(&e), StoreErrorKind::Full, "{e:#}");
        assert!(format!("{e:#}").contains("database or disk is full"), "{e:#}");

        // Not a store failure at all.
        assert_eq!(StoreErrorKind::of(&anyhow!("something else")), StoreErrorKind::Other);
    }

    /// Two labs creating one new store at the same moment: both open it
    /// (the second failed with "table experiments already exists").
    #[test]
    fn two_writers_creating_one_store_at_once_both_open_it() {
        let dir = crate::safe_fs::TestDir::new("store-race");
        for round in 0..20 {
            let location = dir.join(format!("s{round}.sqlite")).display().to_string();
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
            let opened: Vec<Result<(), String>> = (0..2)
                .map(|_| {
                    let (l, b) = (location.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        b.wait();
                        Store::open(&l).map(drop).map_err(|e| format!("{e:#}"))
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect();
            assert!(opened.iter().all(Result::is_ok), "round {round}: {opened:?}");
        }
    }

    /// A damaged store is refused when it is opened for writing (before a
    /// lab measures anything it could not store), with what to do, and is
    /// left byte for byte as it was; a reader says the same.
    #[test]
    fn a_damaged_store_is_refused_with_what_to_do_and_left_as_it_was() {
        let dir = crate::safe_fs::TestDir::new("store-damaged");
        let path = dir.join("s.sqlite");
        let location = path.display().to_string();
        drop(Store::open(&location).unwrap());
        {
            // Pages that opening the store does not read: a page in the
            // middle of a big table.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE filler (x BLOB);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                 INSERT INTO filler SELECT randomblob(200) FROM n;
                 PRAGMA wal_checkpoint(TRUNCATE);",
            )
            .unwrap();
        }
        let mut bytes = std::fs::read(&path).unwrap();
        let page = 4096;
        let middle = bytes.len() / page / 2 * page;
        bytes[middle..middle + page].fill(0x5a);
        std::fs::write(&path, &bytes).unwrap();
        let err = format!("{:#}", Store::open(&location).err().expect("a damaged store opened for writing"));
        assert!(err.contains("damaged") && err.contains(".recover"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "the damaged store was changed");
        // Cut short: the reader's error says the same.
        std::fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
        let err = format!("{:#}", Store::open_existing(&location).and_then(|s| s.experiments()).err().unwrap());
        assert!(err.contains("damaged") && err.contains(".recover"), "{err}");
    }

    /// A store written before runs recorded their server's product (schema
    /// version 1) is upgraded when opened: its runs keep their figures and
    /// have no product; new runs get one.
    #[test]
    fn a_version_1_store_is_upgraded() {
        let dir = crate::safe_fs::TestDir::new("store-v1");
        let path = dir.join("v1.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(MIGRATIONS[0]).unwrap();
            c.execute_batch(
                "INSERT INTO experiments VALUES (1, 'x', '', 's.toml', '', 'h', 'finished', 't', NULL, '0', NULL, '{}', '{}');
                 INSERT INTO configurations VALUES (1, 1, 0, 'base', 'sqlite', '{}', '3.0', NULL);
                 INSERT INTO cells VALUES (1, 1, 1, 'w', 1);
                 INSERT INTO runs (id, cell_id, \"repeat\", seq, status, started_at, ended_at, argv, seed, cache, server_restarted, overhead, tps)
                   VALUES (1, 1, 1, 0, 'ok', 't', 't', '[]', 1, 'warm', 1, '{}', 5.0);
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        let s = Store::open(&path.display().to_string()).unwrap();
        assert_eq!(s.run_figures(1).unwrap()[0].tps, Some(5.0));
        assert!(s.configurations_of(1).unwrap()[0].products.is_empty(), "old runs have no product");
        let rec = RunRecord {
            cell_id: 1,
            repeat: 2,
            status: RunStatus::Ok,
            server: Some(Product { name: "SQLite".into(), version: "3.46.0".into() }),
            ..Default::default()
        };
        s.insert_run(&rec).unwrap();
        assert_eq!(s.configurations_of(1).unwrap()[0].products, vec!["SQLite 3.46.0".to_string()]);
        drop(s);
        let version: i64 =
            Connection::open(&path).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }

    #[test]
    fn migrates_and_round_trips_a_run() {
        let dir = crate::safe_fs::TestDir::new("store-test");
        round_trip(&dir.join("r.sqlite").display().to_string());
    }

    #[test]
    fn round_trips_a_run_on_postgresql() {
        let (Some(host), Some(port)) = (server_env("DBBENCH_TEST_PGSQL_HOST"), server_env("DBBENCH_TEST_PGSQL_PORT"))
        else {
            return;
        };
        let db = format!("dbbench_store_test_{}", std::process::id());
        let admin = || {
            postgres::Config::new()
                .host(&host)
                .port(port.parse().unwrap())
                .user("sbtest")
                .dbname("sbtest")
                .connect(postgres::NoTls)
                .unwrap()
        };
        admin().batch_execute(&format!("DROP DATABASE IF EXISTS {db}")).unwrap();
        admin().batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
        round_trip(&format!("postgresql://sbtest@localhost:{port}/{db}?host={host}"));
        admin().batch_execute(&format!("DROP DATABASE {db}")).unwrap();
    }

    #[test]
    fn round_trips_a_run_on_mysql() {
        let Some(sock) = server_env("DBBENCH_TEST_MYSQL_SOCKET") else { return };
        use mysql::prelude::Queryable;
        let db = format!("dbbench_store_test_{}", std::process::id());
        let admin =
            || mysql::Conn::new(mysql::OptsBuilder::new().socket(Some(sock.clone())).user(Some("sbtest"))).unwrap();
        admin().query_drop(format!("DROP DATABASE IF EXISTS {db}")).unwrap();
        admin().query_drop(format!("CREATE DATABASE {db}")).unwrap();
        round_trip(&format!("mysql://sbtest@localhost/{db}?socket={sock}"));
        admin().query_drop(format!("DROP DATABASE {db}")).unwrap();
    }

    #[test]
    fn the_store_password_is_hidden_in_the_stored_spec() {
        let dir = crate::safe_fs::TestDir::new("store-secret");
        let mut s = Store::open(&dir.join("r.sqlite").display().to_string()).unwrap();
        s.url_auth = Some(("team".into(), "s3cret".into()));
        let spec = "[experiment]\nstore = \"postgresql://team:s3cret@db/lab\"\n";
        let e = s
            .create_experiment("x", "", "x.toml", spec, "h", None, &serde_json::json!({}), &serde_json::json!({}))
            .unwrap();
        let text = s.rows("SELECT spec_text FROM experiments WHERE id = ?", &vals![e]).unwrap()[0][0].text().unwrap();
        assert_eq!(text, "[experiment]\nstore = \"postgresql://team:<hidden>@db/lab\"\n");
    }
}
