//! `prepare` at the server's bulk-load speed (issue 25, item 1;
//! docs/compatibility.md "Bulk inserts and prepare"): the same data for a
//! given --rand-seed whether the rows go through LOAD DATA LOCAL / COPY
//! (`--db-bulk-load=auto`) or multi-row INSERTs (`--db-bulk-load=off`), for
//! the built-in OLTP prepare and for sysbench's own oltp_common.lua run
//! unmodified; tables and indexes as sysbench creates them; an error in the
//! middle of a load is a FATAL line and a non-zero exit. Small tables: each
//! test takes seconds, on the real servers of scripts/servers.sh.

mod common;
use common::*;
use std::path::Path;

#[derive(Clone, Copy, Debug)]
enum Server {
    MariaDb,
    Postgres,
}

impl Server {
    fn fresh(self, db: &str) -> Option<Vec<String>> {
        match self {
            Server::MariaDb => mysql_db(db),
            Server::Postgres => pgsql_db(db),
        }
    }

    /// Row count and a digest of every row in id order.
    fn digest(self, db: &str, table: &str) -> String {
        let sql = match self {
            Server::MariaDb => format!(
                "SELECT CONCAT(COUNT(*), ':', SUM(CRC32(CONCAT_WS(',', id, k, c, pad))), ':', \
                 BIT_XOR(CRC32(CONCAT_WS(',', id, k, c, pad)) * id), ':', MIN(id), ':', MAX(id)) FROM {table}"
            ),
            Server::Postgres => format!(
                "SELECT count(*) || ':' || md5(string_agg(id || ',' || k || ',' || c || ',' || pad, ';' ORDER BY id)) FROM {table}"
            ),
        };
        let q = match self {
            Server::MariaDb => mysql_query(db, &sql),
            Server::Postgres => pgsql_query(db, &sql),
        };
        q.into_iter().next().unwrap_or_default()
    }

    /// The table's definition and indexes as the server shows them.
    fn structure(self, db: &str, table: &str) -> Vec<String> {
        match self {
            Server::MariaDb => {
                use mysql::prelude::Queryable;
                let sock = std::env::var("DBBENCH_TEST_MYSQL_SOCKET").unwrap();
                let opts = mysql::OptsBuilder::new().socket(Some(sock)).user(Some("sbtest")).db_name(Some(db));
                let mut c = mysql::Conn::new(opts).unwrap();
                let row: Option<(String, String)> = c.query_first(format!("SHOW CREATE TABLE {table}")).unwrap();
                vec![row.expect("SHOW CREATE TABLE").1]
            }
            Server::Postgres => {
                let mut v = pgsql_query(
                    db,
                    &format!(
                        "SELECT column_name || ' ' || data_type || ' ' || coalesce(character_maximum_length::text, '') || ' ' \
                         || is_nullable || ' ' || coalesce(column_default, '') FROM information_schema.columns \
                         WHERE table_name = '{table}' ORDER BY ordinal_position"
                    ),
                );
                v.extend(pgsql_query(
                    db,
                    &format!("SELECT indexdef FROM pg_indexes WHERE tablename = '{table}' ORDER BY indexname"),
                ));
                v
            }
        }
    }
}

fn prepare(dir: &Path, script: &str, base: &[String], extra: &[&str]) -> Run {
    let mut a: Vec<&str> = vec![script];
    a.extend(base.iter().map(String::as_str));
    a.extend_from_slice(extra);
    a.extend_from_slice(&["--verbosity=5", "prepare"]);
    let r = dbbench_in(dir, &a);
    assert_eq!(r.code, 0, "{script} prepare {extra:?}:\n{}\n{}", r.stdout, r.stderr);
    r
}

/// Prepares `tables` tables with `script` twice, through the bulk load and
/// through INSERTs, and checks that every table holds the same rows with the
/// same definition; `load_line` is the DEBUG line the bulk-load run prints
/// for its first table. Returns the database of the bulk-load run.
fn same_both_ways(server: Server, tag: &str, script: &str, extra: &[&str], load_line: &str) -> Option<String> {
    let dir = tempdir(tag);
    let (db_load, db_insert) = (format!("{tag}_load"), format!("{tag}_insert"));
    let base_load = server.fresh(&db_load)?;
    let base_insert = server.fresh(&db_insert)?;
    let mut more = vec!["--tables=3", "--table-size=3000", "--threads=2", "--rand-seed=11"];
    more.extend_from_slice(extra);
    let load = prepare(&dir, script, &base_load, &[more.as_slice(), &["--db-bulk-load=auto"]].concat());
    let insert = prepare(&dir, script, &base_insert, &[more.as_slice(), &["--db-bulk-load=off"]].concat());
    assert!(load.stdout.contains(load_line), "{tag}: no '{load_line}' in:\n{}", load.stdout);
    let loaded = insert.stdout.contains("in one bulk load") || insert.stdout.contains("bulk load for flushes");
    assert!(!loaded, "{tag}: --db-bulk-load=off loaded:\n{}", insert.stdout);
    for t in 1..=3 {
        let table = format!("sbtest{t}");
        let a = server.digest(&db_load, &table);
        assert!(a.starts_with("3000:"), "{tag} {table}: {a}");
        assert_eq!(a, server.digest(&db_insert, &table), "{tag} {table}: the rows differ ({server:?})");
        assert_eq!(server.structure(&db_load, &table), server.structure(&db_insert, &table), "{tag} {table}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Some(db_load)
}

fn built_in_prepare(server: Server, tag: &str) {
    let Some(db) =
        same_both_ways(server, &format!("{tag}_d"), "oltp_read_write", &[], "sbtest1: 3000 rows in one bulk load")
    else {
        return;
    };
    // The secondary index is there, built after the load (create_table's order).
    let index = server.structure(&db, "sbtest2").join("\n");
    assert!(index.contains("k_2"), "{index}");
    same_both_ways(server, &format!("{tag}_ai"), "oltp_read_write", &["--auto-inc=off"], "3000 rows in one bulk load");
    let Some(db) = same_both_ways(
        server,
        &format!("{tag}_ns"),
        "oltp_read_write",
        &["--create-secondary=off"],
        "3000 rows in one bulk load",
    ) else {
        return;
    };
    assert!(!server.structure(&db, "sbtest1").join("\n").contains("k_1"));
    // Tables as sysbench's own prepare creates them (AUTO_INCREMENT=3001 included).
    if have_sysbench() {
        let sys_db = format!("{tag}_sys");
        let base = server.fresh(&sys_db).expect("server");
        let dir = tempdir(tag);
        let mut a = vec![format!("{SYSBENCH_SCRIPTS}/oltp_read_write.lua")];
        a.extend(base.iter().cloned());
        a.extend(["--tables=1".to_string(), "--table-size=3000".into(), "prepare".into()]);
        let r = sysbench_in(&dir, &a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(r.code, 0, "sysbench prepare:\n{}\n{}", r.stdout, r.stderr);
        let ours = server.structure(&format!("{tag}_d_load"), "sbtest1");
        assert_eq!(ours, server.structure(&sys_db, "sbtest1"), "the table differs from sysbench's");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn built_in_prepare_loads_the_same_rows_as_inserts_on_mariadb() {
    built_in_prepare(Server::MariaDb, "prep_my");
    same_both_ways(
        Server::MariaDb,
        "prep_my_myisam",
        "oltp_read_write",
        &["--mysql-storage-engine=myisam"],
        "3000 rows in one bulk load",
    );
}

#[test]
fn built_in_prepare_loads_the_same_rows_as_inserts_on_postgres() {
    built_in_prepare(Server::Postgres, "prep_pg");
}

/// sysbench's own oltp_common.lua, run unmodified where Debian installs it
/// (a `require("oltp_common")` would find dbbench's built-in one): its
/// bulk_insert_next flushes go through the bulk load where the rows allow
/// (on MariaDB not while the server assigns AUTO_INCREMENT ids: LOAD DATA
/// would leave gaps between flushes).
#[test]
fn sysbench_oltp_common_gets_the_bulk_load_transparently() {
    if !have_sysbench() {
        return;
    }
    let dir = tempdir("prep_sys");
    let wrapper = dir.join("sysbench_oltp_common.lua");
    std::fs::write(&wrapper, format!("dofile(\"{SYSBENCH_SCRIPTS}/oltp_common.lua\")\n")).unwrap();
    let script = wrapper.display().to_string();
    let load = "the driver's bulk load for flushes of plain literals";
    same_both_ways(Server::Postgres, "prep_sys_pg", &script, &[], load);
    same_both_ways(Server::MariaDb, "prep_sys_my_ai", &script, &["--auto-inc=off"], load);
    same_both_ways(Server::MariaDb, "prep_sys_my", &script, &[], "an AUTO_INCREMENT column is not in the column list");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A duplicate key in the middle of a flush: one FATAL report, a non-zero
/// exit, and the script never reaches the line after the load.
#[test]
fn an_error_in_the_middle_of_a_bulk_load_fails_the_prepare() {
    let dir = tempdir("prep_dup");
    let script = dir.join("dup.lua");
    std::fs::write(
        &script,
        r#"
function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE dup(id INTEGER NOT NULL PRIMARY KEY, v CHAR(10) NOT NULL)")
  con:bulk_insert_init("INSERT INTO dup(id, v) VALUES")
  for i = 1, 5000 do
    con:bulk_insert_next(string.format("(%d, 'v%d')", i == 4000 and 17 or i, i))
  end
  con:bulk_insert_done()
  print("all rows loaded")
end
"#,
    )
    .unwrap();
    for (server, db, says) in
        [(Server::MariaDb, "prep_dup_my", "Duplicate entry '17'"), (Server::Postgres, "prep_dup_pg", "duplicate key")]
    {
        for mode in ["auto", "off"] {
            let Some(base) = server.fresh(db) else { return };
            let mut a = vec![script.to_str().unwrap()];
            a.extend(base.iter().map(String::as_str));
            let mode_opt = format!("--db-bulk-load={mode}");
            a.extend([mode_opt.as_str(), "prepare"]);
            let r = dbbench_in(&dir, &a);
            let out = format!("{}{}", r.stdout, r.stderr);
            assert_ne!(r.code, 0, "{server:?} {mode}:\n{out}");
            assert!(!out.contains("all rows loaded"), "{server:?} {mode}:\n{out}");
            assert!(out.contains("FATAL") && out.contains(says), "{server:?} {mode}:\n{out}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_db_bulk_load_value_is_one_line() {
    let r = dbbench(&["oltp_read_write", "--db-bulk-load=fast", "--table-size=1", "prepare"]);
    assert_ne!(r.code, 0);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(out.contains("invalid --db-bulk-load value 'fast': use 'auto' or 'off'"), "{out}");
}
