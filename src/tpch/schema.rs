//! The TPC-H schema (spec clause 1.4) in each dialect: the eight tables with
//! their columns in load order, primary keys, foreign keys and the
//! secondary indexes DBT3 created, so that keys can be created before
//! loading (InnoDB: rows arrive in key order into a clustered index) or
//! after it (MyISAM, PostgreSQL: one sorted build per index) — the seeds'
//! pre/post_create_PK choice.

/// The SQL dialect of a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// MariaDB and MySQL.
    Mysql,
    /// PostgreSQL.
    Pgsql,
    /// SQLite.
    Sqlite,
}

impl Dialect {
    /// The lexical rules of the dialect's SQL text (`sqltext`).
    pub fn lexing(self) -> crate::sqltext::Dialect {
        match self {
            Dialect::Mysql => crate::sqltext::Dialect::MySql,
            Dialect::Pgsql => crate::sqltext::Dialect::PostgreSql,
            Dialect::Sqlite => crate::sqltext::Dialect::Sqlite,
        }
    }

    /// The dialect of a dbbench driver name (`mysql`, `pgsql`, `sqlite`).
    pub fn of_driver(name: &str) -> Option<Dialect> {
        match name {
            "mysql" => Some(Dialect::Mysql),
            "pgsql" => Some(Dialect::Pgsql),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }
}

/// A column's type; `sql_type` spells it per dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// Identifiers, sizes, counts.
    Integer,
    /// Order keys: above SF 300 they outgrow 32 bits.
    BigInt,
    /// Money, quantities, rates: DECIMAL(15,2).
    Decimal,
    /// Fixed-length text.
    Char(u16),
    /// Variable-length text.
    Varchar(u16),
    /// A calendar date.
    Date,
}

impl ColumnType {
    /// The type as `dialect`'s DDL writes it. SQLite has no decimal or date
    /// type: money is REAL (sums then carry binary rounding, which the
    /// answer check's tolerance allows) and dates are ISO-8601 text, which
    /// compares and sorts as dates do.
    pub fn sql_type(self, dialect: Dialect) -> String {
        match (self, dialect) {
            (ColumnType::Integer, _) => "INTEGER".into(),
            (ColumnType::BigInt, Dialect::Sqlite) => "INTEGER".into(),
            (ColumnType::BigInt, _) => "BIGINT".into(),
            (ColumnType::Decimal, Dialect::Sqlite) => "REAL".into(),
            (ColumnType::Decimal, _) => "DECIMAL(15,2)".into(),
            (ColumnType::Char(_) | ColumnType::Varchar(_), Dialect::Sqlite) => "TEXT".into(),
            (ColumnType::Char(n), _) => format!("CHAR({n})"),
            (ColumnType::Varchar(n), _) => format!("VARCHAR({n})"),
            (ColumnType::Date, Dialect::Sqlite) => "TEXT".into(),
            (ColumnType::Date, _) => "DATE".into(),
        }
    }
}

/// One of the eight tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// 5 rows.
    Region,
    /// 25 rows.
    Nation,
    /// SF × 10 000 rows.
    Supplier,
    /// SF × 150 000 rows.
    Customer,
    /// SF × 200 000 rows.
    Part,
    /// SF × 800 000 rows.
    Partsupp,
    /// SF × 1 500 000 rows.
    Orders,
    /// About SF × 6 000 000 rows.
    Lineitem,
}

/// Every table, referenced tables before those that reference them.
pub const TABLES: [Table; 8] = [
    Table::Region,
    Table::Nation,
    Table::Supplier,
    Table::Customer,
    Table::Part,
    Table::Partsupp,
    Table::Orders,
    Table::Lineitem,
];

use ColumnType::*;

impl Table {
    /// The table's name in SQL (lower case, as dbgen's DDL).
    pub fn name(self) -> &'static str {
        match self {
            Table::Region => "region",
            Table::Nation => "nation",
            Table::Supplier => "supplier",
            Table::Customer => "customer",
            Table::Part => "part",
            Table::Partsupp => "partsupp",
            Table::Orders => "orders",
            Table::Lineitem => "lineitem",
        }
    }

    /// The table named `name`.
    pub fn parse(name: &str) -> Option<Table> {
        TABLES.into_iter().find(|t| t.name() == name)
    }

    /// Columns in the order dbgen writes them (the load order).
    pub fn columns(self) -> &'static [(&'static str, ColumnType)] {
        match self {
            Table::Region => &[("r_regionkey", Integer), ("r_name", Char(25)), ("r_comment", Varchar(152))],
            Table::Nation => {
                &[("n_nationkey", Integer), ("n_name", Char(25)), ("n_regionkey", Integer), ("n_comment", Varchar(152))]
            }
            Table::Supplier => &[
                ("s_suppkey", Integer),
                ("s_name", Char(25)),
                ("s_address", Varchar(40)),
                ("s_nationkey", Integer),
                ("s_phone", Char(15)),
                ("s_acctbal", Decimal),
                ("s_comment", Varchar(101)),
            ],
            Table::Customer => &[
                ("c_custkey", Integer),
                ("c_name", Varchar(25)),
                ("c_address", Varchar(40)),
                ("c_nationkey", Integer),
                ("c_phone", Char(15)),
                ("c_acctbal", Decimal),
                ("c_mktsegment", Char(10)),
                ("c_comment", Varchar(117)),
            ],
            Table::Part => &[
                ("p_partkey", Integer),
                ("p_name", Varchar(55)),
                ("p_mfgr", Char(25)),
                ("p_brand", Char(10)),
                ("p_type", Varchar(25)),
                ("p_size", Integer),
                ("p_container", Char(10)),
                ("p_retailprice", Decimal),
                ("p_comment", Varchar(23)),
            ],
            Table::Partsupp => &[
                ("ps_partkey", Integer),
                ("ps_suppkey", Integer),
                ("ps_availqty", Integer),
                ("ps_supplycost", Decimal),
                ("ps_comment", Varchar(199)),
            ],
            Table::Orders => &[
                ("o_orderkey", BigInt),
                ("o_custkey", Integer),
                ("o_orderstatus", Char(1)),
                ("o_totalprice", Decimal),
                ("o_orderdate", Date),
                ("o_orderpriority", Char(15)),
                ("o_clerk", Char(15)),
                ("o_shippriority", Integer),
                ("o_comment", Varchar(79)),
            ],
            Table::Lineitem => &[
                ("l_orderkey", BigInt),
                ("l_partkey", Integer),
                ("l_suppkey", Integer),
                ("l_linenumber", Integer),
                ("l_quantity", Decimal),
                ("l_extendedprice", Decimal),
                ("l_discount", Decimal),
                ("l_tax", Decimal),
                ("l_returnflag", Char(1)),
                ("l_linestatus", Char(1)),
                ("l_shipdate", Date),
                ("l_commitdate", Date),
                ("l_receiptdate", Date),
                ("l_shipinstruct", Char(25)),
                ("l_shipmode", Char(10)),
                ("l_comment", Varchar(44)),
            ],
        }
    }

    /// The primary key's columns (spec clause 1.4.2.2).
    pub fn primary_key(self) -> &'static [&'static str] {
        match self {
            Table::Region => &["r_regionkey"],
            Table::Nation => &["n_nationkey"],
            Table::Supplier => &["s_suppkey"],
            Table::Customer => &["c_custkey"],
            Table::Part => &["p_partkey"],
            Table::Partsupp => &["ps_partkey", "ps_suppkey"],
            Table::Orders => &["o_orderkey"],
            Table::Lineitem => &["l_orderkey", "l_linenumber"],
        }
    }

    /// Foreign keys (clause 1.4.2.3): (column(s), referenced table, its column(s)).
    pub fn foreign_keys(self) -> &'static [(&'static [&'static str], Table, &'static [&'static str])] {
        match self {
            Table::Region | Table::Part => &[],
            Table::Nation => &[(&["n_regionkey"], Table::Region, &["r_regionkey"])],
            Table::Supplier => &[(&["s_nationkey"], Table::Nation, &["n_nationkey"])],
            Table::Customer => &[(&["c_nationkey"], Table::Nation, &["n_nationkey"])],
            Table::Partsupp => {
                &[(&["ps_partkey"], Table::Part, &["p_partkey"]), (&["ps_suppkey"], Table::Supplier, &["s_suppkey"])]
            }
            Table::Orders => &[(&["o_custkey"], Table::Customer, &["c_custkey"])],
            Table::Lineitem => &[
                (&["l_orderkey"], Table::Orders, &["o_orderkey"]),
                (&["l_partkey", "l_suppkey"], Table::Partsupp, &["ps_partkey", "ps_suppkey"]),
            ],
        }
    }

    /// Secondary indexes (DBT3's `create_indexes`): (index name, columns).
    /// They serve the queries' joins and date ranges; the spec allows
    /// indexes on keys and dates (clause 1.5.4).
    pub fn indexes(self) -> &'static [(&'static str, &'static [&'static str])] {
        match self {
            Table::Region | Table::Part => &[],
            Table::Nation => &[("i_n_regionkey", &["n_regionkey"])],
            Table::Supplier => &[("i_s_nationkey", &["s_nationkey"])],
            Table::Customer => &[("i_c_nationkey", &["c_nationkey"])],
            Table::Partsupp => &[("i_ps_suppkey", &["ps_suppkey"])],
            Table::Orders => &[("i_o_orderdate", &["o_orderdate"]), ("i_o_custkey", &["o_custkey"])],
            Table::Lineitem => &[
                ("i_l_shipdate", &["l_shipdate"]),
                ("i_l_suppkey_partkey", &["l_partkey", "l_suppkey"]),
                ("i_l_partkey", &["l_partkey"]),
                ("i_l_suppkey", &["l_suppkey"]),
                ("i_l_receiptdate", &["l_receiptdate"]),
                ("i_l_commitdate", &["l_commitdate"]),
            ],
        }
    }

    /// `CREATE TABLE`, with the primary key inline when `with_key` (keys
    /// before the load), else without (added by `add_keys` after it).
    /// `engine` is a MariaDB/MySQL storage engine (`ENGINE=...`), ignored
    /// elsewhere.
    pub fn create(self, dialect: Dialect, with_key: bool, engine: Option<&str>) -> String {
        let mut cols: Vec<String> =
            self.columns().iter().map(|(n, t)| format!("  {n} {} NOT NULL", t.sql_type(dialect))).collect();
        if with_key {
            cols.push(format!("  PRIMARY KEY ({})", self.primary_key().join(", ")));
        }
        let mut sql = format!("CREATE TABLE {} (\n{}\n)", self.name(), cols.join(",\n"));
        if let (Dialect::Mysql, Some(e)) = (dialect, engine) {
            sql.push_str(&format!(" ENGINE={e}"));
        }
        sql
    }

    /// `DROP TABLE` (if it exists; CASCADE on PostgreSQL, whose foreign keys
    /// would otherwise block the order tables are dropped in).
    pub fn drop(self, dialect: Dialect) -> String {
        match dialect {
            Dialect::Pgsql => format!("DROP TABLE IF EXISTS {} CASCADE", self.name()),
            _ => format!("DROP TABLE IF EXISTS {}", self.name()),
        }
    }

    /// The primary key added after the load. SQLite cannot add one to an
    /// existing table: a unique index does the same work there.
    pub fn add_primary_key(self, dialect: Dialect) -> String {
        let cols = self.primary_key().join(", ");
        match dialect {
            Dialect::Sqlite => format!("CREATE UNIQUE INDEX pk_{0} ON {0} ({cols})", self.name()),
            _ => format!("ALTER TABLE {} ADD PRIMARY KEY ({cols})", self.name()),
        }
    }

    /// The foreign key constraints (none on SQLite, which cannot add them
    /// after the fact, and whose planner does not use them).
    pub fn add_foreign_keys(self, dialect: Dialect) -> Vec<String> {
        if dialect == Dialect::Sqlite {
            return Vec::new();
        }
        self.foreign_keys()
            .iter()
            .enumerate()
            .map(|(i, (cols, table, refs))| {
                format!(
                    "ALTER TABLE {} ADD CONSTRAINT fk_{}_{} FOREIGN KEY ({}) REFERENCES {} ({})",
                    self.name(),
                    self.name(),
                    i + 1,
                    cols.join(", "),
                    table.name(),
                    refs.join(", ")
                )
            })
            .collect()
    }

    /// The secondary indexes.
    pub fn create_indexes(self) -> Vec<String> {
        self.indexes()
            .iter()
            .map(|(name, cols)| format!("CREATE INDEX {name} ON {} ({})", self.name(), cols.join(", ")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_per_dialect() {
        let my = Table::Orders.create(Dialect::Mysql, true, Some("InnoDB"));
        assert!(
            my.starts_with("CREATE TABLE orders (\n  o_orderkey BIGINT NOT NULL,\n  o_custkey INTEGER NOT NULL,"),
            "{my}"
        );
        assert!(
            my.contains("  o_totalprice DECIMAL(15,2) NOT NULL,") && my.contains("  o_orderdate DATE NOT NULL,"),
            "{my}"
        );
        assert!(my.ends_with("  PRIMARY KEY (o_orderkey)\n) ENGINE=InnoDB"), "{my}");
        let sq = Table::Orders.create(Dialect::Sqlite, false, Some("InnoDB"));
        assert!(
            sq.contains("  o_totalprice REAL NOT NULL,")
                && sq.contains("  o_orderdate TEXT NOT NULL,")
                && !sq.contains("PRIMARY KEY"),
            "{sq}"
        );
        assert!(sq.ends_with(")"), "no engine outside MariaDB/MySQL: {sq}");
        assert_eq!(
            Table::Lineitem.add_primary_key(Dialect::Pgsql),
            "ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber)"
        );
        assert_eq!(
            Table::Lineitem.add_primary_key(Dialect::Sqlite),
            "CREATE UNIQUE INDEX pk_lineitem ON lineitem (l_orderkey, l_linenumber)"
        );
        assert_eq!(
            Table::Lineitem.add_foreign_keys(Dialect::Mysql)[1],
            "ALTER TABLE lineitem ADD CONSTRAINT fk_lineitem_2 FOREIGN KEY (l_partkey, l_suppkey) REFERENCES partsupp (ps_partkey, ps_suppkey)"
        );
        assert!(Table::Lineitem.add_foreign_keys(Dialect::Sqlite).is_empty());
        assert_eq!(Table::Orders.create_indexes()[0], "CREATE INDEX i_o_orderdate ON orders (o_orderdate)");
        assert_eq!(Table::Nation.drop(Dialect::Pgsql), "DROP TABLE IF EXISTS nation CASCADE");
    }

    #[test]
    fn tables_are_ordered_by_reference_and_named() {
        for (i, t) in TABLES.iter().enumerate() {
            assert_eq!(Table::parse(t.name()), Some(*t));
            for (_, referenced, _) in t.foreign_keys() {
                assert!(TABLES[..i].contains(referenced), "{t:?} references {referenced:?} which comes later");
            }
            for key in t.primary_key() {
                assert!(t.columns().iter().any(|(c, _)| c == key), "{t:?}: key {key} is no column");
            }
        }
        assert_eq!(Table::Lineitem.columns().len(), 16);
        assert_eq!(Table::parse("lineitems"), None);
    }
}
