//! What querydiff needs to know about a statement's text: whether it only
//! reads, and whether its row order is part of the answer (a top-level
//! ORDER BY).
//!
//! The same text runs on two servers that may lex it differently: `#` is a
//! comment and `\` escapes in strings on MySQL/MariaDB, while on
//! PostgreSQL `#` is an operator and `'C:\'` a complete string. Each
//! question is therefore answered under the lexing of each server's
//! dialect (`lexings`, `sqltext`), in the direction that cannot hide
//! anything: a statement counts as read-only only when it is under every
//! lexing, and as ordered when it is under any (a false
//! "ordered" at worst reports rows in another order as `other_order`; a
//! false "unordered" would hide such a difference).

use crate::sqltext::{self, Dialect, Kind};

/// A piece of a statement: a word (lower-cased) at its parenthesis depth,
/// or anything else that separates words (a string, an operator, a paren).
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String, i32),
    Other,
}

/// The statement's tokens under `dialect`'s lexing (`sqltext`); comments
/// are dropped like whitespace, except what MariaDB and MySQL execute.
fn tokens(sql: &str, dialect: Dialect) -> Vec<Token> {
    let mut out = Vec::new();
    push_tokens(sql, dialect, &mut 0, &mut out);
    out
}

/// The code inside a MariaDB/MySQL executable comment (`/*! … */`,
/// `/*!50110 … */`, MariaDB's `/*M! … */` and `/*M!100100 … */`), which the
/// server runs as part of the statement (when its version is at least the
/// one given; taken as always here, the direction that cannot hide a
/// write). None for any other comment, optimizer hints `/*+ … */` included.
fn executable_comment(comment: &str) -> Option<&str> {
    let body = comment.strip_prefix("/*!").or_else(|| comment.strip_prefix("/*M!"))?;
    let body = body.strip_suffix("*/").unwrap_or(body);
    Some(body.trim_start_matches(|c: char| c.is_ascii_digit()))
}

fn push_tokens(sql: &str, dialect: Dialect, depth: &mut i32, out: &mut Vec<Token>) {
    for t in sqltext::tokens(sql, dialect) {
        match t.kind {
            Kind::Comment if dialect == Dialect::MySql => {
                if let Some(code) = executable_comment(t.text(sql)) {
                    push_tokens(code, dialect, depth, out);
                }
            }
            Kind::Comment | Kind::Space => continue,
            Kind::Word => out.push(Token::Word(t.text(sql).to_ascii_lowercase(), *depth)),
            _ if t.is_punct(sql, b'(') => {
                *depth += 1;
                out.push(Token::Other);
            }
            _ if t.is_punct(sql, b')') => {
                *depth -= 1;
                out.push(Token::Other);
            }
            _ => out.push(Token::Other),
        }
    }
}

/// Whether the query has an ORDER BY outside parentheses, strings and
/// comments under any of the lexings (then its row order is part of the answer).
pub fn has_top_level_order_by(sql: &str, lexings: &[Dialect]) -> bool {
    lexings.iter().any(|&dialect| {
        tokens(sql, dialect)
            .windows(2)
            .any(|w| matches!(w, [Token::Word(a, 0), Token::Word(b, 0)] if a == "order" && b == "by"))
    })
}

/// Why a statement is not run (None: it only reads). querydiff runs every
/// query several times on both servers, so a statement that writes would
/// change what the next execution sees. It must start with SELECT, WITH,
/// VALUES or TABLE and hold none of DELETE, INSERT … INTO, SELECT … INTO,
/// MERGE or UPDATE (except in FOR UPDATE / FOR NO KEY UPDATE) anywhere,
/// which also catches PostgreSQL's data-modifying WITH. Functions with
/// side effects (`nextval`, `GET_LOCK`) cannot be seen in the text.
pub fn why_not_read_only(sql: &str, lexings: &[Dialect]) -> Option<String> {
    for &dialect in lexings {
        let t = tokens(sql, dialect);
        let words: Vec<(usize, &str)> = t
            .iter()
            .enumerate()
            .filter_map(|(k, tok)| if let Token::Word(w, _) = tok { Some((k, w.as_str())) } else { None })
            .collect();
        match words.first() {
            Some((_, "select" | "with" | "values" | "table")) => {}
            _ => return Some("it does not start with SELECT, WITH, VALUES or TABLE".into()),
        }
        let word_before = |k: usize| match k.checked_sub(1).map(|j| &t[j]) {
            Some(Token::Word(p, _)) => p.as_str(),
            _ => "",
        };
        for &(k, w) in &words {
            let writes = match w {
                "delete" | "into" | "merge" => true,
                "update" => !matches!(word_before(k), "for" | "key"),
                _ => false,
            };
            if writes {
                return Some(format!("it holds {} (it would write)", w.to_ascii_uppercase()));
            }
        }
    }
    None
}

/// Whether a statement only prepares for a query and cleans up after it,
/// changing no data: a view (`CREATE [OR REPLACE] VIEW`, `DROP VIEW`, as
/// TPC-H's Q15 needs), a temporary table (`CREATE TEMPORARY|TEMP TABLE`,
/// `DROP TEMPORARY TABLE`) or a session setting (`SET`, not `SET GLOBAL`
/// or `PERSIST`). Under every lexing, like `why_not_read_only`. A query
/// file's such statements before its first query and after its last run
/// around each execution of its queries, untimed.
pub fn is_setup(sql: &str, lexings: &[Dialect]) -> bool {
    lexings.iter().all(|&dialect| {
        let words: Vec<String> = tokens(sql, dialect)
            .into_iter()
            .filter_map(|t| if let Token::Word(w, _) = t { Some(w) } else { None })
            .collect();
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        let object = |from: usize| {
            w.iter().skip(from).position(|x| {
                matches!(
                    *x,
                    "view"
                        | "table"
                        | "index"
                        | "function"
                        | "procedure"
                        | "trigger"
                        | "database"
                        | "schema"
                        | "sequence"
                        | "user"
                        | "role"
                        | "event"
                )
            })
        };
        let before = |n: usize, what: &[&str]| w[1..n].iter().any(|x| what.contains(x));
        match w.first().copied() {
            Some("set") => !matches!(w.get(1).copied(), None | Some("global" | "persist" | "persist_only")),
            Some("create") => match object(1).map(|i| i + 1) {
                Some(i) if w[i] == "view" => !before(i, &["materialized", "recursive"]),
                Some(i) if w[i] == "table" => before(i, &["temporary", "temp"]) && !w.contains(&"into"),
                _ => false,
            },
            Some("drop") => {
                matches!((w.get(1).copied(), w.get(2).copied()), (Some("view"), _) | (Some("temporary"), Some("table")))
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The servers' dialects when querydiff compares MariaDB/MySQL with PostgreSQL.
    const BOTH: &[Dialect] = &[Dialect::MySql, Dialect::PostgreSql];

    #[test]
    fn setup_statements_are_views_temporary_tables_and_session_settings() {
        for yes in [
            "CREATE VIEW revenue0 (supplier_no, total_revenue) AS SELECT l_suppkey, sum(l_extendedprice) FROM lineitem GROUP BY l_suppkey",
            "create or replace view v as select 1",
            "CREATE ALGORITHM=MERGE VIEW v AS SELECT 1",
            "DROP VIEW revenue0",
            "drop view if exists v",
            "CREATE TEMPORARY TABLE t AS SELECT 1 AS a",
            "CREATE TEMP TABLE t (a int)",
            "DROP TEMPORARY TABLE t",
            "SET SESSION optimizer_switch='semijoin=off'",
            "SET max_parallel_workers_per_gather = 0",
        ] {
            assert!(is_setup(yes, BOTH), "{yes}");
        }
        for no in [
            "SELECT 1",
            "SET GLOBAL innodb_buffer_pool_size = 1",
            "SET PERSIST x = 1",
            "CREATE TABLE t (a int)",
            "CREATE MATERIALIZED VIEW m AS SELECT 1",
            "DROP TABLE lineitem",
            "INSERT INTO t VALUES (1)",
            "CREATE INDEX i ON t (a)",
            "CREATE TEMPORARY TABLE t SELECT 1 INTO OUTFILE '/tmp/x'",
            "-- CREATE VIEW v AS SELECT 1\nDELETE FROM t",
        ] {
            assert!(!is_setup(no, BOTH), "{no}");
        }
    }

    #[test]
    fn order_by_is_found_only_at_the_top_level() {
        assert!(has_top_level_order_by("select a from t order  by a", BOTH));
        assert!(has_top_level_order_by("SELECT a FROM t ORDER\nBY a LIMIT 3", BOTH));
        assert!(!has_top_level_order_by("select * from (select a from t order by a limit 3) d", BOTH));
        assert!(!has_top_level_order_by("select 'order by' from t -- order by x", BOTH));
        assert!(!has_top_level_order_by("select a /* order by */ from t", BOTH));
        assert!(!has_top_level_order_by("select row_number() over (order by a) from t", BOTH));
        assert!(!has_top_level_order_by("select `order` by_x from t", BOTH));
        assert!(!has_top_level_order_by("select a, b from t group by a order_by", BOTH));
    }

    #[test]
    fn order_by_hidden_by_one_engines_lexing_is_still_found() {
        // PostgreSQL: `#` is XOR, and `'C:\'` ends at its second quote.
        assert!(has_top_level_order_by("select a # b from t order by a", BOTH));
        assert!(has_top_level_order_by("select 'C:\\' p from t order by a", BOTH));
        // MySQL: the ORDER BY is inside a comment; PostgreSQL's lexing sees
        // it, so the order counts (at worst: other_order, never hidden).
        assert!(has_top_level_order_by("select a from t # order by a", BOTH));
    }

    #[test]
    fn only_statements_that_read_run() {
        for sql in [
            "SELECT 1",
            "-- q1\n/* x */ with a as (select 1) select * from a",
            "(select 1) union (select 2)",
            "select * from t for update",
            "select * from t for no key update",
            "values (1)",
            "table t",
        ] {
            assert_eq!(why_not_read_only(sql, BOTH), None, "{sql}");
        }
        for (sql, why) in [
            ("delete from t", "does not start"),
            ("/* select */ update t set a = 1", "does not start"),
            ("selectx", "does not start"),
            ("", "does not start"),
            ("with d as (delete from t returning *) select count(*) from d", "DELETE"),
            ("with c as (select 1) delete from t", "DELETE"),
            ("select * into t_copy from t", "INTO"),
            ("select a from t into outfile '/tmp/x'", "INTO"),
            ("with u as (update t set a = 1 returning a) select * from u", "UPDATE"),
            ("with i as (insert into t values (1) returning a) select * from i", "INTO"),
        ] {
            let r = why_not_read_only(sql, BOTH);
            assert!(r.as_deref().is_some_and(|r| r.contains(why)), "{sql}: {r:?}");
        }
        assert_eq!(
            why_not_read_only("select 'delete from t', \"into\" from t", BOTH),
            None,
            "strings and quoted names are not words"
        );
    }

    #[test]
    fn one_servers_lexing_reads_only_what_that_server_reads() {
        // MariaDB/MySQL alone: a backticked name is not a word, `#` starts a comment.
        let my = &[Dialect::MySql][..];
        assert_eq!(why_not_read_only("select `delete` from t", my), None);
        assert!(!has_top_level_order_by("select a from t # order by a", my));
        assert!(has_top_level_order_by("select a from t # order by a", BOTH));
        // PostgreSQL alone: a dollar quote is a string; `#` an operator.
        let pg = &[Dialect::PostgreSql][..];
        assert_eq!(why_not_read_only("select $$delete from t$$", pg), None);
        assert!(why_not_read_only("select $$delete from t$$", &[Dialect::Sqlite]).is_some());
        assert!(!has_top_level_order_by("select $q$ order by $q$ from t", pg));
        assert!(has_top_level_order_by("select a # b from t order by a", pg));
    }

    #[test]
    fn mysql_runs_what_is_inside_executable_comments() {
        // MariaDB and MySQL execute `/*! … */` (and MariaDB `/*M! … */`), with
        // or without a version number, as part of the statement: what they hold
        // is read as code, never dropped like a comment.
        let my = &[Dialect::MySql][..];
        for sql in [
            "select * from t /*! into outfile '/tmp/x' */",
            "select * from t /*!50000 into outfile '/tmp/x' */",
            "select * from t /*!50000into outfile '/tmp/x'*/",
            "select * from t /*M!100100 into @v */",
            "/*! delete from t */ select 1",
        ] {
            assert!(why_not_read_only(sql, my).is_some(), "{sql}");
            assert!(why_not_read_only(sql, BOTH).is_some(), "{sql}");
        }
        // Common in logged queries and harmless: still read-only.
        assert_eq!(why_not_read_only("select /*!40001 SQL_NO_CACHE */ * from t", BOTH), None);
        assert_eq!(why_not_read_only("select /*+ NO_INDEX(t) */ * from t", BOTH), None);
        assert_eq!(why_not_read_only("select * from t /* into outfile */", BOTH), None);
        // Row order: an ORDER BY the server runs counts.
        assert!(has_top_level_order_by("select a from t /*!50000 order by a */", my));
        assert!(!has_top_level_order_by("select a from t /* order by a */", my));
        // Setup statements: `SET /*! GLOBAL */` changes the server, not the session.
        assert!(!is_setup("set /*! global */ max_connections = 10", my));
        assert!(!is_setup("set /*!50000 global */ max_connections = 10", BOTH));
        assert!(is_setup("set /*!50000 session */ sql_mode = ''", BOTH));
    }
}
