//! SQL from the lab itself (hooks, server variables, status samples) over
//! dbbench's own drivers, configured by the same `--db-driver=...` options
//! the runs get. One path for managed, external and SQLite targets.

use crate::driver::{Connection, Outcome};
use crate::sqltext::{self, Comments, Dialect};
use anyhow::{anyhow, Context};

/// An open connection to a configuration's database.
pub struct LabConnection {
    conn: Box<dyn Connection>,
    driver: &'static str,
}

/// Connects with dbbench command-line options (`--db-driver=mysql`,
/// `--mysql-socket=...`); no password from the environment.
pub fn connect(driver_args: &[String]) -> anyhow::Result<LabConnection> {
    let driver = crate::connect::driver_with(driver_args, false).map_err(anyhow::Error::msg)?;
    let conn = driver.connect().with_context(|| format!("cannot connect ({})", driver.name()))?;
    Ok(LabConnection { conn, driver: driver.name() })
}

/// A connection made on, and only ever used by, one sampler thread.
///
/// Drivers' connections are not `Send` (a client's connection never moves).
/// The status sampler's closure must be `Send` to reach its thread, but it
/// moves there holding `None` and connects on that thread, so no connection
/// ever crosses threads.
pub struct SamplerConnection(pub Option<LabConnection>);

// SAFETY: see the type's documentation: only `None` is ever sent.
unsafe impl Send for SamplerConnection {}

impl SamplerConnection {
    /// The connection, made on first use (on the calling thread).
    pub fn get(&mut self, driver_args: &[String]) -> Option<&mut LabConnection> {
        if self.0.is_none() {
            self.0 = connect(driver_args).ok();
        }
        self.0.as_mut()
    }
}

impl LabConnection {
    /// Runs every statement of `script` (separated by `;` outside strings
    /// and comments, under the server's lexical rules; `--` comments left
    /// out) and returns what the statements that return rows returned: per
    /// statement a `-- statement` line, then one line per row, cells
    /// separated by tabs (NULL as `NULL`). Empty when none returned rows.
    pub fn execute_script(&mut self, script: &str) -> anyhow::Result<String> {
        let mut out = String::new();
        let dialect = Dialect::of_driver(self.driver).unwrap_or(Dialect::MySql);
        for stmt in sqltext::split(script, dialect, Comments::DropDoubleDash) {
            if let Outcome::Rows(rs) = self.conn.query(&stmt).map_err(|e| anyhow!("{e} in: {}", one_line(&stmt)))? {
                out.push_str(&format!("-- {}\n", one_line(&stmt)));
                for row in rs.text_rows() {
                    let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect();
                    out.push_str(&cells.join("\t"));
                    out.push('\n');
                }
            }
        }
        Ok(out)
    }

    /// Rows of a query as text cells (NULL as None).
    pub fn rows(&mut self, sql: &str) -> anyhow::Result<Vec<Vec<Option<String>>>> {
        match self.conn.query(sql).map_err(|e| anyhow!("{e} in: {sql}"))? {
            Outcome::Rows(rs) => Ok(rs.text_rows()),
            Outcome::Affected(_) => Ok(Vec::new()),
        }
    }

    /// Server version string.
    pub fn version(&mut self) -> String {
        self.conn.server_version()
    }

    /// The server's product and version as it says them (`lab::product`).
    pub fn product(&mut self) -> crate::lab::product::Product {
        let version = self.version();
        let comment = match self.driver {
            "mysql" => {
                self.rows("SELECT @@version_comment").ok().and_then(|r| r.into_iter().next()?.into_iter().next()?)
            }
            _ => None,
        };
        crate::lab::product::of_driver(self.driver, &version, comment.as_deref().unwrap_or(""))
    }

    /// All server variables (name → value), sorted by name.
    pub fn variables(&mut self) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        let sql = match self.driver {
            "mysql" => "SHOW GLOBAL VARIABLES",
            "pgsql" => "SELECT name, setting FROM pg_settings ORDER BY name",
            _ => "SELECT 'sqlite_version', sqlite_version()",
        };
        self.pairs(sql)
    }

    /// One status sample: MariaDB/MySQL `SHOW GLOBAL STATUS`; PostgreSQL the
    /// current database's `pg_stat_database` row and `pg_stat_bgwriter`;
    /// nothing for SQLite.
    pub fn status(&mut self) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        match self.driver {
            "mysql" => self.pairs("SHOW GLOBAL STATUS"),
            "pgsql" => {
                let mut out = serde_json::Map::new();
                for (prefix, sql) in [
                    ("db.", "SELECT * FROM pg_stat_database WHERE datname = current_database()"),
                    ("bgwriter.", "SELECT * FROM pg_stat_bgwriter"),
                ] {
                    // Column names come from a second query: our ResultSet keeps no names.
                    let table = if prefix == "db." { "pg_stat_database" } else { "pg_stat_bgwriter" };
                    let names = self.rows(&format!(
                        "SELECT attname FROM pg_attribute WHERE attrelid = '{table}'::regclass AND attnum > 0 ORDER BY attnum"
                    ))?;
                    let rows = self.rows(sql)?;
                    if let Some(row) = rows.first() {
                        for (n, v) in names.iter().zip(row) {
                            if let (Some(Some(n)), Some(v)) = (n.first(), v) {
                                out.insert(format!("{prefix}{n}"), serde_json::Value::String(v.clone()));
                            }
                        }
                    }
                }
                Ok(out)
            }
            _ => Ok(serde_json::Map::new()),
        }
    }

    fn pairs(&mut self, sql: &str) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        let mut out = serde_json::Map::new();
        for row in self.rows(sql)? {
            if let (Some(Some(k)), Some(v)) = (row.first(), row.get(1)) {
                out.insert(k.clone(), v.clone().map(serde_json::Value::String).unwrap_or(serde_json::Value::Null));
            }
        }
        Ok(out)
    }
}

fn one_line(s: &str) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.len() > 120 {
        format!("{}...", &s[..s.char_indices().nth(117).map(|(i, _)| i).unwrap_or(s.len())])
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_hooks_and_variables() {
        let dir = crate::safe_fs::TestDir::new("labsql");
        let db = dir.join("x.sqlite");
        let mut c = connect(&["--db-driver=sqlite".into(), format!("--sqlite-db={}", db.display())]).unwrap();
        assert_eq!(
            c.execute_script("CREATE TABLE t (a TEXT, b TEXT); INSERT INTO t VALUES ('x;y', NULL);").unwrap(),
            ""
        );
        assert_eq!(
            c.execute_script("SELECT a, b FROM t; SELECT 1 WHERE 0").unwrap(),
            "-- SELECT a, b FROM t\nx;y\tNULL\n-- SELECT 1 WHERE 0\n"
        );
        assert_eq!(c.rows("SELECT a FROM t").unwrap(), vec![vec![Some("x;y".to_string())]]);
        assert!(c.variables().unwrap().contains_key("sqlite_version"));
        let e = format!("{:#}", c.execute_script("SELEC 1").unwrap_err());
        assert!(e.contains("in: SELEC 1"), "{e}");
    }
}
