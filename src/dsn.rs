//! Where a server is, as the user writes it: a URL (`mysql://`,
//! `mariadb://`, `postgres://`, `postgresql://`, `pgsql://`, `sqlite:`) or
//! perfrun's DBI string (`dbi:mysql:host=...;port=...;user=...;database=...`),
//! turned into the dbbench connection options every subcommand takes
//! (`--db-driver=mysql --mysql-socket=...`), so one set of drivers serves
//! all of them. The one DSN parser: a lab spec's `dsn`, querydiff's
//! `--dsn1/--dsn2`; the results store's URLs use its `percent_decode`.

/// A parsed DSN: the connection options and the text to show (password hidden).
#[derive(Debug, Clone, PartialEq)]
pub struct Dsn {
    /// dbbench connection options, e.g. `--db-driver=pgsql`, `--pgsql-host=127.0.0.1`.
    pub driver_args: Vec<String>,
    /// The DSN as given, with any password hidden (`<hidden>`).
    pub shown: String,
}

const USAGE: &str = "use mysql://USER[:PASSWORD]@HOST[:PORT]/DB[?socket=PATH], postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?host=SOCKET_DIR], sqlite:PATH or dbi:mysql:host=H;port=P;user=U;database=DB";

impl Dsn {
    /// The same connection with `password` instead of any in the DSN (a lab
    /// spec's `password_env`).
    pub fn with_password(mut self, password: &str) -> Dsn {
        let driver = self.driver_args.first().and_then(|a| a.strip_prefix("--db-driver=")).unwrap_or("").to_string();
        let key = format!("--{driver}-password=");
        self.driver_args.retain(|a| !a.starts_with(&key));
        self.driver_args.push(format!("{key}{password}"));
        self
    }

    /// Parses a DSN; the error names what is wrong and shows the accepted forms.
    pub fn parse(text: &str) -> Result<Dsn, String> {
        let bad = |what: &str| format!("DSN '{}': {what}; {USAGE}", hide_password(text));
        if let Some(rest) = text.strip_prefix("dbi:") {
            return parse_dbi(rest)
                .map_err(|e| bad(&e))
                .map(|driver_args| Dsn { driver_args, shown: hide_password(text) });
        }
        if let Some(path) = text.strip_prefix("sqlite:") {
            // sqlite:///abs/path, sqlite://rel/path, sqlite:path
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(bad("no database file"));
            }
            return Ok(Dsn {
                driver_args: vec![
                    "--db-driver=sqlite".into(),
                    format!("--sqlite-db={}", percent_decode(path).map_err(|e| bad(&e))?),
                ],
                shown: text.to_string(),
            });
        }
        let Some((scheme, rest)) = text.split_once("://") else { return Err(bad("not a URL")) };
        let driver = match scheme {
            "mysql" | "mariadb" => "mysql",
            "postgres" | "postgresql" | "pgsql" => "pgsql",
            _ => return Err(bad(&format!("unknown scheme '{scheme}'"))),
        };
        // The user part ends at the last `@`, so a password holding `/` or
        // `?` is never taken for the host or database (and then shown).
        let (userinfo, rest) = split_userinfo(rest);
        if userinfo.is_some_and(|u| u.contains(['/', '?', '#'])) {
            return Err(bad("the user or password holds '/', '?' or '#' (or a parameter holds '@'): percent-encode them (%2F, %3F, %23, %40)"));
        }
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hostport, db) = rest.split_once('/').unwrap_or((rest, ""));
        let mut args = vec![format!("--db-driver={driver}")];
        if let Some(u) = userinfo {
            let (user, password) = u.split_once(':').map(|(a, b)| (a, Some(b))).unwrap_or((u, None));
            if !user.is_empty() {
                args.push(format!("--{driver}-user={}", percent_decode(user).map_err(|e| bad(&e))?));
            }
            if let Some(p) = password {
                args.push(format!("--{driver}-password={}", percent_decode(p).map_err(|e| bad(&e))?));
            }
        }
        let (host, port) = split_host_port(hostport).map_err(|e| bad(&e))?;
        if !host.is_empty() {
            args.push(format!("--{driver}-host={}", percent_decode(&host).map_err(|e| bad(&e))?));
        }
        if let Some(p) = port {
            args.push(format!("--{driver}-port={p}"));
        }
        if !db.is_empty() {
            args.push(format!("--{driver}-db={}", percent_decode(db).map_err(|e| bad(&e))?));
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| bad(&format!("parameter '{pair}' has no value")))?;
            let k = k.replace('-', "_");
            // Any further parameter is the driver's own option
            // (`?ssl=on` → `--mysql-ssl=on`); unknown ones are refused when
            // the options are applied.
            args.push(format!("--{driver}-{}={}", k.replace('_', "-"), percent_decode(v).map_err(|e| bad(&e))?));
        }
        Ok(Dsn { driver_args: args, shown: hide_password(text) })
    }
}

/// `host`, `host:port`, `[v6]:port`.
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or("unclosed '[' in the host")?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse::<u16>().map_err(|_| format!("port '{p}' is not a number from 1 to 65535"))?),
            None => None,
        };
        return Ok((h.to_string(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) => Ok((
            h.to_string(),
            Some(p.parse::<u16>().map_err(|_| format!("port '{p}' is not a number from 1 to 65535"))?),
        )),
        None => Ok((s.to_string(), None)),
    }
}

/// perfrun's DBI strings: `mysql:host=H;port=P;user=U;password=W;database=D`
/// (`;` or `:` between pairs), also `mysql_socket=PATH`, and `Pg:`.
fn parse_dbi(rest: &str) -> Result<Vec<String>, String> {
    let (kind, pairs) = rest.split_once(':').ok_or("no driver after 'dbi:'")?;
    let driver = match kind {
        "mysql" | "MariaDB" | "mariadb" => "mysql",
        "Pg" | "pg" => "pgsql",
        other => return Err(format!("unknown DBI driver '{other}'")),
    };
    let mut args = vec![format!("--db-driver={driver}")];
    for pair in pairs.split([';', ':']).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("'{pair}' is not key=value"))?;
        let opt = match k {
            "host" => "host",
            "port" => "port",
            "user" => "user",
            "password" => "password",
            "database" | "dbname" | "db" => "db",
            "mysql_socket" | "socket" if driver == "mysql" => "socket",
            other => return Err(format!("unknown DBI attribute '{other}'")),
        };
        args.push(format!("--{driver}-{opt}={v}"));
    }
    Ok(args)
}

/// Decodes `%XX` escapes (a socket path in a URL, a password holding `@`,
/// `/`, `?` or `:`). A `%` not followed by two hex digits is an error rather
/// than kept: a password taken half-decoded would fail to log in far from
/// its cause.
pub fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(v) = hex else {
                // Not quoting the text: it may be part of the password.
                return Err("a '%' in the URL is not followed by two hex digits; write '%' itself as %25".to_string());
            };
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "a %XX escape does not decode to UTF-8".to_string())
}

/// The DSN with its password (URL userinfo or DBI `password=`) hidden:
/// dbbench's one redaction (`crate::secret::redact`).
pub fn hide_password(text: &str) -> String {
    crate::secret::redact(text)
}

/// A URL's text after `scheme://` split at its last `@`: (user part, rest).
fn split_userinfo(rest: &str) -> (Option<&str>, &str) {
    match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        Dsn::parse(s).unwrap().driver_args
    }

    #[test]
    fn urls_become_connection_options() {
        assert_eq!(
            args("mysql://root:se%40cret@127.0.0.1:3307/dbt3"),
            [
                "--db-driver=mysql",
                "--mysql-user=root",
                "--mysql-password=se@cret",
                "--mysql-host=127.0.0.1",
                "--mysql-port=3307",
                "--mysql-db=dbt3"
            ]
        );
        assert_eq!(
            args("mariadb://u@localhost/d?socket=/tmp/m.sock"),
            [
                "--db-driver=mysql",
                "--mysql-user=u",
                "--mysql-host=localhost",
                "--mysql-db=d",
                "--mysql-socket=/tmp/m.sock"
            ]
        );
        assert_eq!(
            args("postgresql://sbtest@%2Ftmp%2Fpg:5433/x"),
            ["--db-driver=pgsql", "--pgsql-user=sbtest", "--pgsql-host=/tmp/pg", "--pgsql-port=5433", "--pgsql-db=x"]
        );
        assert_eq!(
            args("postgres://[::1]:5432/x"),
            ["--db-driver=pgsql", "--pgsql-host=::1", "--pgsql-port=5432", "--pgsql-db=x"]
        );
        assert_eq!(args("sqlite:///tmp/a.db"), ["--db-driver=sqlite", "--sqlite-db=/tmp/a.db"]);
        assert_eq!(args("sqlite:a.db"), ["--db-driver=sqlite", "--sqlite-db=a.db"]);
    }

    #[test]
    fn perfrun_dbi_strings_work() {
        assert_eq!(
            args("dbi:mysql:host=127.0.0.1:port=19300:user=root:database=test"),
            [
                "--db-driver=mysql",
                "--mysql-host=127.0.0.1",
                "--mysql-port=19300",
                "--mysql-user=root",
                "--mysql-db=test"
            ]
        );
        assert_eq!(args("dbi:Pg:dbname=x;host=/run/pg"), ["--db-driver=pgsql", "--pgsql-db=x", "--pgsql-host=/run/pg"]);
    }

    #[test]
    fn bad_dsns_say_what_is_wrong_and_hide_the_password() {
        let e = Dsn::parse("oracle://a:pw@h/x").unwrap_err();
        assert!(e.contains("unknown scheme 'oracle'") && e.contains("a:<hidden>@h") && !e.contains("pw"), "{e}");
        assert!(Dsn::parse("mysql://h:99999/x").unwrap_err().contains("port '99999'"));
        assert!(Dsn::parse("localhost").unwrap_err().contains("not a URL"));
        assert!(Dsn::parse("dbi:mysql:host").unwrap_err().contains("not key=value"));
        assert_eq!(hide_password("dbi:mysql:user=u;password=pw;host=h"), "dbi:mysql:user=u;password=<hidden>;host=h");
        assert_eq!(Dsn::parse("mysql://u:pw@h/x").unwrap().shown, "mysql://u:<hidden>@h/x");
        // A password with URL delimiters in it is refused, and never shown.
        for dsn in ["mysql://root:1234/5@h/db", "mysql://root:pa?ss@h/db", "mysql://root:p#w@h"] {
            let e = Dsn::parse(dsn).unwrap_err();
            assert!(
                e.contains("percent-encode")
                    && e.contains("root:<hidden>@h")
                    && !e.contains("1234")
                    && !e.contains("pa?ss")
                    && !e.contains("p#w"),
                "{e}"
            );
        }
        assert_eq!(args("mysql://root:1234%2F5@h/db")[2], "--mysql-password=1234/5");
    }
}
