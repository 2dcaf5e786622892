//! The SQL layer: dialects, values (`Val`), statement translation and the schema's DDL per dialect.

use crate::sqltext::{self, Comments, Dialect as Lexing, Kind};

/// SQL dialects the store speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

/// A value crossing the SQL layer: a parameter or a result cell.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::Int(v as i64)
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Int(v as i64)
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Real(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}
impl From<&Option<String>> for Val {
    fn from(v: &Option<String>) -> Val {
        v.as_deref().into()
    }
}

/// Parameter lists: `vals![a, b]` is `[Val::from(a), Val::from(b)]`.
macro_rules! vals {
    ($($e:expr),* $(,)?) => { [$(Val::from($e)),*] };
}

impl Val {
    /// The value as an integer; servers may hand back another numeric type
    /// (or text for an expression) than SQLite does, so convert.
    pub(super) fn int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            Val::Real(f) => Some(*f as i64),
            Val::Text(s) => s.trim().parse().ok(),
            Val::Null => None,
        }
    }
    pub(super) fn real(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Real(f) => Some(*f),
            Val::Text(s) => s.trim().parse().ok(),
            Val::Null => None,
        }
    }
    pub(super) fn text(&self) -> Option<String> {
        match self {
            Val::Int(i) => Some(i.to_string()),
            Val::Real(f) => Some(f.to_string()),
            Val::Text(s) => Some(s.clone()),
            Val::Null => None,
        }
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Val::Null => ValueRef::Null,
            Val::Int(i) => ValueRef::Integer(*i),
            Val::Real(f) => ValueRef::Real(*f),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// A result row.
pub(super) type Row = Vec<Val>;

/// What a column value is, for messages.
fn describe(v: Option<&Val>) -> String {
    match v {
        None => "missing".into(),
        Some(Val::Null) => "NULL".into(),
        Some(Val::Int(n)) => format!("the integer {n}"),
        Some(Val::Real(x)) => format!("the number {x}"),
        Some(Val::Text(t)) => format!("the text '{t}'"),
    }
}

/// Column `i` of `row` as a required integer.
pub(super) fn int_at(row: &Row, i: usize) -> anyhow::Result<i64> {
    row.get(i)
        .and_then(Val::int)
        .ok_or_else(|| anyhow::anyhow!("column {} is {}, not an integer", i + 1, describe(row.get(i))))
}

/// Column `i` of `row` as a required text.
pub(super) fn text_at(row: &Row, i: usize) -> anyhow::Result<String> {
    row.get(i)
        .and_then(Val::text)
        .ok_or_else(|| anyhow::anyhow!("column {} is {}, not a text", i + 1, describe(row.get(i))))
}

/// Translates one statement written in the store's neutral syntax (SQLite's,
/// `?` placeholders, `"double-quoted"` identifiers for names a server
/// reserves, such as `repeat` and `reads` on MariaDB/MySQL, and
/// `INSERT OR IGNORE INTO`) into `dialect`. Text in single quotes is left
/// alone.
pub(super) fn translate(dialect: Dialect, sql: &str) -> String {
    let sql = sql.trim();
    let full = match (dialect, sql.strip_prefix("INSERT OR IGNORE INTO ")) {
        (Dialect::Postgres, Some(rest)) => format!("INSERT INTO {rest} ON CONFLICT DO NOTHING"),
        // Not INSERT IGNORE: that also turns real errors (a value too long
        // for its column, a missing foreign key) into warnings. A no-op
        // update of the first listed column ignores only the duplicate.
        (Dialect::Mysql, Some(rest)) => {
            let first =
                rest.split_once('(').and_then(|(_, cols)| cols.split([',', ')']).next()).map(str::trim).unwrap_or("id");
            format!("INSERT INTO {rest} ON DUPLICATE KEY UPDATE {first} = {first}")
        }
        _ => sql.to_string(),
    };
    let mut out = String::with_capacity(full.len() + 16);
    let mut n = 0;
    for t in sqltext::tokens(&full, Lexing::Sqlite) {
        let text = t.text(&full);
        match dialect {
            Dialect::Postgres if t.is_punct(&full, b'?') => {
                n += 1;
                out.push_str(&format!("${n}"));
            }
            Dialect::Mysql if t.kind == Kind::QuotedName && text.starts_with('"') => {
                out.push_str(&text.replace('"', "`"))
            }
            _ => out.push_str(text),
        }
    }
    out
}

/// An identifier quoted for `dialect` (every column in server DDL is
/// quoted: a name reserved on one server must not break its schema).
fn quote_ident(dialect: Dialect, name: &str) -> String {
    match dialect {
        Dialect::Sqlite => name.to_string(),
        Dialect::Postgres => format!("\"{name}\""),
        Dialect::Mysql => format!("`{name}`"),
    }
}

/// Splits at commas outside parentheses, strings and quoted names.
fn split_top_level(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for t in sqltext::tokens(s, Lexing::Sqlite) {
        if t.is_punct(s, b'(') {
            depth += 1;
        } else if t.is_punct(s, b')') {
            depth -= 1;
        } else if t.is_punct(s, b',') && depth == 0 {
            parts.push(cur.trim().to_string());
            cur.clear();
            continue;
        }
        cur.push_str(t.text(s));
    }
    if !cur.trim().is_empty() {
        parts.push(cur.trim().to_string());
    }
    parts
}

/// `(a, b)` → the names, from the first parenthesis of `s`.
fn paren_names(s: &str) -> Vec<String> {
    let inner = s.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(i, _)| i).unwrap_or("");
    inner.split(',').map(|n| n.trim().trim_matches('"').to_string()).filter(|n| !n.is_empty()).collect()
}

/// `prefix (a, b) rest` with the names quoted for `dialect`.
fn quote_paren_list(dialect: Dialect, s: &str) -> String {
    match s.split_once('(').and_then(|(head, r)| r.split_once(')').map(|(_, tail)| (head, tail))) {
        Some((head, tail)) => {
            let names: Vec<String> = paren_names(s).iter().map(|n| quote_ident(dialect, n)).collect();
            format!("{}({}){}", head, names.join(", "), tail)
        }
        None => s.to_string(),
    }
}

/// One column definition (`name TYPE constraints`) in `dialect`; `key`:
/// the column is part of a key or index.
fn column_ddl(dialect: Dialect, def: &str, key: bool) -> String {
    let mut words = def.splitn(3, char::is_whitespace);
    let name = words.next().unwrap_or("").trim_matches('"');
    let ty = words.next().unwrap_or("");
    let rest = words.next().unwrap_or("").trim();
    let upper_rest = rest.to_ascii_uppercase();
    let row_id = upper_rest.starts_with("PRIMARY KEY");
    let new_ty = match (ty.to_ascii_uppercase().as_str(), dialect) {
        // SQLite's INTEGER PRIMARY KEY is the row id; servers need a sequence.
        ("INTEGER", Dialect::Postgres) if row_id => "BIGSERIAL",
        ("INTEGER", Dialect::Mysql) if row_id => "BIGINT AUTO_INCREMENT",
        // 64-bit everywhere: SQLite integers are, and one Rust type (i64)
        // binds to every integer column.
        ("INTEGER", _) => "BIGINT",
        ("REAL", Dialect::Postgres) => "DOUBLE PRECISION",
        ("REAL", Dialect::Mysql) => "DOUBLE",
        ("TEXT", Dialect::Mysql) if key || upper_rest.contains("UNIQUE") || row_id => "VARCHAR(255)",
        ("TEXT", Dialect::Mysql) => "LONGTEXT",
        _ => ty,
    };
    let mut s = format!("{} {}", quote_ident(dialect, name), new_ty);
    if !rest.is_empty() {
        s.push(' ');
        s.push_str(rest);
    }
    s
}

/// The statements that apply migration `sql` in `dialect`. SQLite gets the
/// text unchanged (one batch), so its stores are what they always were.
pub(super) fn migration_statements(dialect: Dialect, sql: &str) -> Vec<String> {
    if dialect == Dialect::Sqlite {
        return vec![sql.to_string()];
    }
    // The neutral text is SQLite's: its lexing splits it; `--` notes go.
    let statements: Vec<String> = sqltext::split(sql, Lexing::Sqlite, Comments::DropDoubleDash)
        .into_iter()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    // Columns in an index of this migration (table, column).
    let mut keys: Vec<(String, String)> = Vec::new();
    for st in &statements {
        let up = st.to_ascii_uppercase();
        if up.starts_with("CREATE INDEX") || up.starts_with("CREATE UNIQUE INDEX") {
            if let Some(table) =
                st.split_once(" ON ").map(|(_, r)| r.split('(').next().unwrap_or("").trim().to_string())
            {
                keys.extend(
                    paren_names(st.split_once(" ON ").map(|(_, r)| r).unwrap_or(""))
                        .into_iter()
                        .map(|c| (table.clone(), c)),
                );
            }
        }
    }
    let mut out = Vec::new();
    for st in statements {
        let up = st.to_ascii_uppercase();
        if up.starts_with("CREATE TABLE") {
            let (head, body) = st.split_once('(').unwrap_or((&st, ""));
            let body = body.rsplit_once(')').map(|(b, _)| b).unwrap_or(body);
            let table = head.split_whitespace().last().unwrap_or("").to_string();
            let items = split_top_level(body);
            let mut table_keys: Vec<String> =
                keys.iter().filter(|(t, _)| *t == table).map(|(_, c)| c.clone()).collect();
            for item in &items {
                let u = item.to_ascii_uppercase();
                if u.starts_with("UNIQUE") || u.starts_with("PRIMARY KEY") {
                    table_keys.extend(paren_names(item));
                }
            }
            let defs: Vec<String> = items
                .iter()
                .map(|item| {
                    let u = item.to_ascii_uppercase();
                    if ["UNIQUE", "PRIMARY KEY", "FOREIGN KEY", "CHECK", "CONSTRAINT"].iter().any(|k| u.starts_with(k))
                    {
                        quote_paren_list(dialect, item)
                    } else {
                        let name = item.split_whitespace().next().unwrap_or("").trim_matches('"');
                        column_ddl(dialect, item, table_keys.iter().any(|k| k == name))
                    }
                })
                .collect();
            // utf8mb4_bin: names compare byte for byte, as in SQLite and
            // PostgreSQL (the default collation would make "WAL" = "wal ").
            let engine = if dialect == Dialect::Mysql {
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
            } else {
                ""
            };
            out.push(format!("{} (\n    {}\n){engine}", head.trim(), defs.join(",\n    ")));
        } else if up.starts_with("CREATE INDEX") || up.starts_with("CREATE UNIQUE INDEX") {
            let (head, on) = st.split_once(" ON ").unwrap_or((&st, ""));
            out.push(format!("{head} ON {}", quote_paren_list(dialect, on)));
        } else if let Some(pos) = up.find(" ADD COLUMN ").filter(|_| up.starts_with("ALTER TABLE")) {
            let table = st[..pos].split_whitespace().last().unwrap_or("");
            let def = &st[pos + " ADD COLUMN ".len()..];
            let name = def.split_whitespace().next().unwrap_or("").trim_matches('"');
            let key = keys.iter().any(|(t, c)| t == table && c == name);
            out.push(format!("{} ADD COLUMN {}", &st[..pos], column_ddl(dialect, def, key)));
        } else {
            out.push(translate(dialect, &st));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MIGRATIONS;

    #[test]
    fn placeholders_quotes_and_ignores_are_translated() {
        let sql = "SELECT \"repeat\", 'it''s ? \"x\"' FROM t WHERE a = ? AND b = ?";
        assert_eq!(translate(Dialect::Sqlite, sql), sql);
        assert_eq!(
            translate(Dialect::Postgres, sql),
            "SELECT \"repeat\", 'it''s ? \"x\"' FROM t WHERE a = $1 AND b = $2"
        );
        assert_eq!(translate(Dialect::Mysql, sql), "SELECT `repeat`, 'it''s ? \"x\"' FROM t WHERE a = ? AND b = ?");
        let ins = "INSERT OR IGNORE INTO cells (experiment_id, workload) VALUES (?, ?)";
        assert_eq!(translate(Dialect::Sqlite, ins), ins);
        assert_eq!(
            translate(Dialect::Postgres, ins),
            "INSERT INTO cells (experiment_id, workload) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        );
        assert_eq!(translate(Dialect::Mysql, ins), "INSERT INTO cells (experiment_id, workload) VALUES (?, ?) ON DUPLICATE KEY UPDATE experiment_id = experiment_id");
    }

    #[test]
    fn schema_ddl_is_substituted_per_dialect() {
        // SQLite gets the released text unchanged: old and new stores agree.
        assert_eq!(migration_statements(Dialect::Sqlite, MIGRATIONS[0]), vec![MIGRATIONS[0].to_string()]);
        let pg = migration_statements(Dialect::Postgres, MIGRATIONS[0]).join(";\n");
        let my = migration_statements(Dialect::Mysql, MIGRATIONS[0]).join(";\n");
        for s in [&pg, &my] {
            assert_eq!(s.matches("CREATE TABLE").count(), 8, "{s}");
            assert!(!s.contains("--") && !s.contains(" INTEGER") && !s.contains(" REAL"), "{s}");
        }
        assert!(pg.contains("\"id\" BIGSERIAL PRIMARY KEY"), "{pg}");
        assert!(pg.contains("\"experiment_id\" BIGINT NOT NULL REFERENCES experiments(id)"), "{pg}");
        assert!(pg.contains("\"tps\" DOUBLE PRECISION,"), "{pg}");
        assert!(pg.contains("\"name\" TEXT NOT NULL"), "{pg}");
        assert!(pg.contains("UNIQUE (\"cell_id\", \"repeat\")"), "{pg}");
        assert!(pg.contains("CREATE INDEX samples_run ON samples(\"run_id\", \"source\", \"time_s\")"), "{pg}");
        assert!(my.contains("`id` BIGINT AUTO_INCREMENT PRIMARY KEY"), "{my}");
        assert!(my.contains("`tps` DOUBLE,"), "{my}");
        assert!(my.contains("`repeat` BIGINT NOT NULL"), "{my}");
        assert!(my.contains("`spec_text` LONGTEXT NOT NULL"), "{my}");
        // Text in a key or index must have a bounded length.
        for keyed in [
            "`name` VARCHAR(255) NOT NULL,\n    `kind`",
            "`workload` VARCHAR(255)",
            "`source` VARCHAR(255)",
            "`name` VARCHAR(255) NOT NULL,\n    `value`",
        ] {
            assert!(my.contains(keyed), "{keyed} in {my}");
        }
        assert!(my.contains("`kind` LONGTEXT NOT NULL"), "{my}");
        assert_eq!(my.matches(") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin").count(), 8, "{my}");
        // Later migrations may add columns.
        assert_eq!(
            migration_statements(
                Dialect::Mysql,
                "ALTER TABLE runs ADD COLUMN note TEXT; -- why\nALTER TABLE runs ADD COLUMN cpu_s REAL"
            ),
            vec!["ALTER TABLE runs ADD COLUMN `note` LONGTEXT", "ALTER TABLE runs ADD COLUMN `cpu_s` DOUBLE"]
        );
    }
}
