//! SQL text: the one lexer every part of dbbench reads SQL with (splitting
//! scripts into statements, finding `?` placeholders, querydiff's questions
//! about a query), under the rules of the server that will read the text.
//!
//! The rules differ where it matters for a `;` or a `?`:
//! - MariaDB/MySQL: `'…'` and `"…"` are strings in which `\` escapes the
//!   next character (and a doubled quote is a quote); `` `…` `` is a name;
//!   `#` and `-- ` (two dashes and a blank or control character) start a
//!   line comment; `/* */` comments do not nest.
//! - PostgreSQL: `'…'` is a standard string (`\` is an ordinary character,
//!   `''` a quote) unless written `E'…'`; `$tag$…$tag$` (the tag empty or a
//!   name) is a string; `"…"` is a name; `--` starts a line comment and
//!   `/* */` comments nest. `#` is an operator; `$1` a parameter.
//! - SQLite: standard strings; `"…"`, `` `…` `` and `[…]` are names; `--`
//!   and `/* */` comments, not nested.
//!
//! Assumed server settings: MySQL's `sql_mode` without `ANSI_QUOTES` and
//! `NO_BACKSLASH_ESCAPES`, PostgreSQL's `standard_conforming_strings = on`
//! (both defaults). Not handled: client-side `DELIMITER` commands and
//! `BEGIN … END` bodies holding `;` (MySQL routines; PostgreSQL's
//! `BEGIN ATOMIC`): a script that needs them is split at each `;`, as
//! before.
//!
//! Unterminated input (a string, name, comment or dollar quote still open
//! at the end of the text) is not an error here: the open token runs to
//! the end of the text, so the last statement holds it and the server
//! reports the error with its own message.

/// Whose lexical rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// MariaDB and MySQL.
    MySql,
    PostgreSql,
    Sqlite,
}

impl Dialect {
    /// The dialect of a dbbench driver (`--db-driver`: mysql, pgsql, sqlite).
    pub fn of_driver(driver: &str) -> Option<Dialect> {
        match driver {
            "mysql" => Some(Dialect::MySql),
            "pgsql" => Some(Dialect::PostgreSql),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }

    /// The dialect's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::MySql => "MySQL",
            Dialect::PostgreSql => "PostgreSQL",
            Dialect::Sqlite => "SQLite",
        }
    }
}

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A keyword or unquoted name (letters, digits, `_`, `$`, non-ASCII).
    Word,
    /// A run of ASCII digits.
    Number,
    /// A string: quoted, `E'…'` or a dollar quote.
    Str,
    /// A quoted name: `` `…` `` (MySQL, SQLite), `"…"` (PostgreSQL, SQLite), `[…]` (SQLite).
    QuotedName,
    /// A `--`, `#` or `/* */` comment.
    Comment,
    /// Blanks and line ends.
    Space,
    /// Any other single character: `;`, `?`, `(`, `)`, operators.
    Punct,
}

/// A token: its kind and where it is in the text (byte offsets, always on
/// character boundaries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// The token's text in `sql` (the text it was lexed from).
    pub fn text(self, sql: &str) -> &str {
        &sql[self.start..self.end]
    }

    /// Whether the token is the single character `c`.
    pub fn is_punct(self, sql: &str, c: u8) -> bool {
        self.kind == Kind::Punct && sql.as_bytes()[self.start] == c
    }

    /// Whether the token is a comment or blanks.
    pub fn is_blank(self) -> bool {
        matches!(self.kind, Kind::Comment | Kind::Space)
    }
}

/// The tokens of `sql` under `dialect`'s rules, in order; together they
/// cover the whole text.
pub fn tokens(sql: &str, dialect: Dialect) -> Lexer<'_> {
    Lexer { b: sql.as_bytes(), i: 0, dialect }
}

/// The lexer: an iterator over [`Token`]s (see [`tokens`]).
pub struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    dialect: Dialect,
}

/// A name's character, after its first (non-ASCII bytes are parts of names).
fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

impl Lexer<'_> {
    /// The end of a quoted token whose opening `q` is at `self.i`: after the
    /// closing `q` (a doubled `q` is one inside), or the end of the text;
    /// `escapes`: `\` takes the next byte along.
    fn quoted(&self, q: u8, escapes: bool) -> usize {
        let (b, mut i) = (self.b, self.i + 1);
        while i < b.len() {
            if escapes && b[i] == b'\\' {
                i += 2;
            } else if b[i] == q {
                if b.get(i + 1) == Some(&q) {
                    i += 2;
                } else {
                    return i + 1;
                }
            } else {
                i += 1;
            }
        }
        b.len()
    }

    /// The end of the line comment at `self.i` (the line end is not part of it).
    fn line_end(&self) -> usize {
        self.b[self.i..].iter().position(|&c| c == b'\n').map_or(self.b.len(), |k| self.i + k)
    }

    /// The end of the `/* */` comment at `self.i`.
    fn block_comment(&self) -> usize {
        let (b, mut i) = (self.b, self.i + 2);
        let nests = self.dialect == Dialect::PostgreSql;
        let mut depth = 1;
        while i < b.len() {
            if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            } else if nests && b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                depth += 1;
                i += 2;
            } else {
                i += 1;
            }
        }
        b.len()
    }

    /// The end of the dollar quote at `self.i`, if a `$tag$` opens one there
    /// (PostgreSQL: the tag is empty or a name that does not start with a
    /// digit, so `$1` is a parameter).
    fn dollar_quote(&self) -> Option<usize> {
        let b = self.b;
        let mut j = self.i + 1;
        while j < b.len() && is_name_byte(b[j]) && b[j] != b'$' {
            j += 1;
        }
        if j >= b.len() || b[j] != b'$' || b.get(self.i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let tag = &b[self.i..=j];
        let body = j + 1;
        Some(b[body..].windows(tag.len()).position(|w| w == tag).map_or(b.len(), |k| body + k + tag.len()))
    }

    /// The end of the token at `self.i` and its kind.
    fn next_token(&self) -> (Kind, usize) {
        let (b, i, d) = (self.b, self.i, self.dialect);
        let next = b.get(i + 1).copied();
        match b[i] {
            b'\'' => (Kind::Str, self.quoted(b'\'', d == Dialect::MySql)),
            b'"' if d == Dialect::MySql => (Kind::Str, self.quoted(b'"', true)),
            b'"' => (Kind::QuotedName, self.quoted(b'"', false)),
            b'`' if d != Dialect::PostgreSql => (Kind::QuotedName, self.quoted(b'`', false)),
            b'[' if d == Dialect::Sqlite => {
                (Kind::QuotedName, b[i..].iter().position(|&c| c == b']').map_or(b.len(), |k| i + k + 1))
            }
            b'-' if next == Some(b'-') => {
                // MySQL: `--` starts a comment only before a blank or control character (`1--1` is 2).
                let third = b.get(i + 2).copied();
                if d == Dialect::MySql && third.is_some_and(|c| c > b' ') {
                    (Kind::Punct, i + 1)
                } else {
                    (Kind::Comment, self.line_end())
                }
            }
            b'#' if d == Dialect::MySql => (Kind::Comment, self.line_end()),
            b'/' if next == Some(b'*') => (Kind::Comment, self.block_comment()),
            b'$' if d == Dialect::PostgreSql => match self.dollar_quote() {
                Some(end) => (Kind::Str, end),
                None => (Kind::Punct, i + 1),
            },
            b'e' | b'E' if d == Dialect::PostgreSql && next == Some(b'\'') => {
                // E'…': backslash escapes, as in MySQL's strings.
                (Kind::Str, Lexer { b, i: i + 1, dialect: d }.quoted(b'\'', true))
            }
            c if c.is_ascii_whitespace() => {
                (Kind::Space, b[i..].iter().position(|c| !c.is_ascii_whitespace()).map_or(b.len(), |k| i + k))
            }
            c if c.is_ascii_digit() => {
                (Kind::Number, b[i..].iter().position(|c| !c.is_ascii_digit()).map_or(b.len(), |k| i + k))
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 || (c == b'$' && d == Dialect::MySql) => {
                (Kind::Word, b[i..].iter().position(|&c| !is_name_byte(c)).map_or(b.len(), |k| i + k))
            }
            _ => (Kind::Punct, i + 1),
        }
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        if self.i >= self.b.len() {
            return None;
        }
        let (kind, end) = self.next_token();
        let token = Token { kind, start: self.i, end: end.min(self.b.len()) };
        self.i = token.end;
        Some(token)
    }
}

/// What [`split`] does with comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comments {
    /// Statements as written.
    Keep,
    /// `--` comments left out (a hook's or a query's notes are not shown
    /// with its SQL); `#` and `/* */` comments stay, because MySQL runs
    /// `/*! … */` and reads optimizer hints in `/*+ … */`.
    DropDoubleDash,
}

/// Splits SQL text into statements at each `;` outside strings, quoted
/// names and comments, under `dialect`'s rules. Statements are trimmed,
/// without their `;`; those holding nothing but comments and blanks are
/// left out. Unterminated input: see the module's documentation.
pub fn split(sql: &str, dialect: Dialect, comments: Comments) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut blank = true;
    let mut end_statement = |cur: &mut String, blank: &mut bool| {
        if !*blank {
            out.push(cur.trim().to_string());
        }
        cur.clear();
        *blank = true;
    };
    for t in tokens(sql, dialect) {
        if t.is_punct(sql, b';') {
            end_statement(&mut cur, &mut blank);
            continue;
        }
        let text = t.text(sql);
        if comments == Comments::DropDoubleDash && t.kind == Kind::Comment && text.starts_with("--") {
            continue;
        }
        blank &= t.is_blank();
        cur.push_str(text);
    }
    end_statement(&mut cur, &mut blank);
    out
}

/// Whether `sql` holds nothing but comments and blanks under `dialect`.
pub fn is_blank(sql: &str, dialect: Dialect) -> bool {
    tokens(sql, dialect).all(Token::is_blank)
}

/// Byte offsets of the `?` placeholders in `sql`: those outside strings,
/// quoted names and comments.
pub fn placeholders(sql: &str, dialect: Dialect) -> Vec<usize> {
    tokens(sql, dialect).filter(|t| t.is_punct(sql, b'?')).map(|t| t.start).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Comments::{DropDoubleDash, Keep};
    use Dialect::{MySql, PostgreSql, Sqlite};

    fn kinds(sql: &str, d: Dialect) -> Vec<(Kind, &str)> {
        tokens(sql, d).map(|t| (t.kind, t.text(sql))).collect()
    }

    #[test]
    fn splits_outside_quotes_and_comments() {
        let s = split("SET GLOBAL a = 1; -- x; y\nSELECT 'a;b', \"c;\" ;; SELECT `q;`", MySql, DropDoubleDash);
        assert_eq!(s, vec!["SET GLOBAL a = 1", "SELECT 'a;b', \"c;\"", "SELECT `q;`"]);
    }

    #[test]
    fn pg_statements_split_outside_quotes_and_comments() {
        let s = split(
            "SELECT 'a;b''c;'; SELECT E'x\\';y'; -- c;d\nSELECT \"q;\" /* x; /* y; */ z; */ ; \
             DO $f$ BEGIN PERFORM ';'; END $f$; SELECT $$;$$; SELECT a$b; SELECT $1;",
            PostgreSql,
            Keep,
        );
        assert_eq!(
            s,
            vec![
                "SELECT 'a;b''c;'",
                "SELECT E'x\\';y'",
                "-- c;d\nSELECT \"q;\" /* x; /* y; */ z; */",
                "DO $f$ BEGIN PERFORM ';'; END $f$",
                "SELECT $$;$$",
                "SELECT a$b",
                "SELECT $1",
            ]
        );
        assert!(split(" ; ;\n", PostgreSql, Keep).is_empty());
        assert_eq!(split("SELECT 'open;", PostgreSql, Keep), vec!["SELECT 'open;"]);
    }

    #[test]
    fn a_backslash_escapes_a_quote_on_mysql_only() {
        let sql = r"SELECT 'C:\'; SELECT 2; -- '";
        // MySQL: the string is `C:';␣SELECT 2;␣-- `: one statement.
        assert_eq!(split(sql, MySql, Keep), vec![sql]);
        // PostgreSQL and SQLite: 'C:\' is complete (and `-- '` a comment).
        for d in [PostgreSql, Sqlite] {
            assert_eq!(split(sql, d, Keep), vec![r"SELECT 'C:\'", "SELECT 2"], "{d:?}");
        }
        // ... unless PostgreSQL's E'' string: then it escapes.
        assert_eq!(split(r"SELECT E'\';'; SELECT 2", PostgreSql, Keep), vec![r"SELECT E'\';'", "SELECT 2"]);
        assert_eq!(split(r"SELECT e'\\'; SELECT 2", PostgreSql, Keep), vec![r"SELECT e'\\'", "SELECT 2"]);
        // A word ending in e before a quote is not an E'' prefix: `type'…'`.
        assert_eq!(kinds(r"type'\'", PostgreSql), vec![(Kind::Word, "type"), (Kind::Str, r"'\'")]);
        // MySQL: doubled quotes and escapes in "" strings too.
        assert_eq!(
            split(r#"SELECT "a\";", 'b'';'; SELECT 2"#, MySql, Keep),
            vec![r#"SELECT "a\";", 'b'';'"#, "SELECT 2"]
        );
    }

    #[test]
    fn comments_follow_each_dialect() {
        // `#` is a comment on MySQL, an operator elsewhere.
        assert_eq!(split("SELECT 1 # ; x\n; SELECT 2", MySql, Keep), vec!["SELECT 1 # ; x", "SELECT 2"]);
        assert_eq!(split("SELECT 1 # 2; SELECT 3", PostgreSql, Keep), vec!["SELECT 1 # 2", "SELECT 3"]);
        // MySQL's `--` needs a blank after it: `1--1;` is 1 - -1.
        assert_eq!(split("SELECT 1--1; SELECT 2", MySql, Keep), vec!["SELECT 1--1", "SELECT 2"]);
        assert_eq!(split("SELECT 1--1; SELECT 2", PostgreSql, Keep), vec!["SELECT 1--1; SELECT 2"]);
        assert_eq!(split("SELECT 1 --\t;\n; SELECT 2", MySql, Keep), vec!["SELECT 1 --\t;", "SELECT 2"]);
        // Block comments nest on PostgreSQL only.
        let nested = "SELECT /* a /* b */ ; */ 1; SELECT 2";
        assert_eq!(split(nested, PostgreSql, Keep), vec!["SELECT /* a /* b */ ; */ 1", "SELECT 2"]);
        assert_eq!(split(nested, MySql, Keep), vec!["SELECT /* a /* b */", "*/ 1", "SELECT 2"]);
        // Statements of nothing but comments are left out.
        assert_eq!(split("-- a\n; /* b */ ; # c\n; SELECT 1", MySql, Keep), vec!["SELECT 1"]);
        assert_eq!(split("# c\n; SELECT 1", PostgreSql, Keep), vec!["# c", "SELECT 1"]);
    }

    #[test]
    fn double_dash_comments_can_be_left_out() {
        assert_eq!(
            split("-- note; x\nSELECT 1 /*+ hint */ -- end\nFROM t # mine\n", MySql, DropDoubleDash),
            vec!["SELECT 1 /*+ hint */ \nFROM t # mine"]
        );
        assert_eq!(split("SELECT 1 -- end", PostgreSql, DropDoubleDash), vec!["SELECT 1"]);
        assert!(split("-- only a note", MySql, DropDoubleDash).is_empty());
    }

    #[test]
    fn dollar_quotes_are_strings_on_postgresql() {
        assert_eq!(
            kinds("$a$x;$b$y$b$;$a$ $1 $$ $$", PostgreSql),
            vec![
                (Kind::Str, "$a$x;$b$y$b$;$a$"),
                (Kind::Space, " "),
                (Kind::Punct, "$"),
                (Kind::Number, "1"),
                (Kind::Space, " "),
                (Kind::Str, "$$ $$"),
            ]
        );
        // `a$b$` is one name, not the start of a dollar quote.
        assert_eq!(split("SELECT a$b$; SELECT 2", PostgreSql, Keep), vec!["SELECT a$b$", "SELECT 2"]);
        // MySQL and SQLite have no dollar quotes.
        assert_eq!(split("SELECT $$;$$", MySql, Keep), vec!["SELECT $$", "$$"]);
        assert_eq!(split("SELECT $$;$$", Sqlite, Keep), vec!["SELECT $$", "$$"]);
    }

    #[test]
    fn quoted_names_follow_each_dialect() {
        assert_eq!(kinds("`a;``b`", MySql), vec![(Kind::QuotedName, "`a;``b`")]);
        assert_eq!(kinds("\"a;\"\"b\"", PostgreSql), vec![(Kind::QuotedName, "\"a;\"\"b\"")]);
        assert_eq!(kinds("[a;b]", Sqlite), vec![(Kind::QuotedName, "[a;b]")]);
        assert_eq!(kinds("\"a\"", MySql), vec![(Kind::Str, "\"a\"")]);
        // Backticks mean nothing to PostgreSQL.
        assert_eq!(split("SELECT `a;b`", PostgreSql, Keep), vec!["SELECT `a", "b`"]);
    }

    #[test]
    fn unterminated_tokens_run_to_the_end() {
        for (sql, d) in [
            ("SELECT 'open; SELECT 2", MySql),
            ("SELECT \"open; SELECT 2", PostgreSql),
            ("SELECT `open; SELECT 2", MySql),
            ("SELECT /* open; SELECT 2", Sqlite),
            ("SELECT /* a /* b */ ; SELECT 2", PostgreSql),
            ("SELECT $x$ open; SELECT 2", PostgreSql),
            ("SELECT 'trailing\\", MySql),
        ] {
            assert_eq!(split(sql, d, Keep), vec![sql], "{d:?}");
            let last = tokens(sql, d).last().unwrap();
            assert_eq!(last.end, sql.len());
        }
    }

    #[test]
    fn tokens_cover_the_text_on_character_boundaries() {
        let sql = "SELECT café, 'é;' FROM naïve WHERE x = ? -- ü\n/* ö */ $ä$ ;";
        for d in [MySql, PostgreSql, Sqlite] {
            let t: Vec<Token> = tokens(sql, d).collect();
            assert_eq!(t.iter().map(|t| t.text(sql)).collect::<String>(), sql, "{d:?}");
            assert!(t.iter().any(|t| t.kind == Kind::Word && t.text(sql) == "café"), "{d:?}");
        }
    }

    #[test]
    fn placeholders_skip_strings_names_and_comments() {
        assert_eq!(placeholders("a=? and b='?' and c=\"?\" and `?`=?", Sqlite), vec![2, 32]);
        assert_eq!(placeholders("x='\\'?', ?", MySql), vec![9]);
        assert_eq!(placeholders("x='\\'?', ?", Sqlite), vec![5]);
        assert_eq!(placeholders("-- ?\n? /* ? */ ?", Sqlite), vec![5, 15]);
        assert_eq!(placeholders("# ?\n?", MySql), vec![4]);
        assert_eq!(placeholders("$$?$$ ?", PostgreSql), vec![6]);
    }

    #[test]
    fn drivers_name_their_dialect() {
        assert_eq!(Dialect::of_driver("mysql"), Some(MySql));
        assert_eq!(Dialect::of_driver("pgsql"), Some(PostgreSql));
        assert_eq!(Dialect::of_driver("sqlite"), Some(Sqlite));
        assert_eq!(Dialect::of_driver("oracle"), None);
        assert!(is_blank("-- a\n# b\n/* c */", MySql));
        assert!(!is_blank("# b", PostgreSql));
    }
}
