//! Locations: a store's file path or server URL, parsed; redaction for messages.

use super::sql::Dialect;
use anyhow::{anyhow, bail};
use std::path::PathBuf;

/// Whether a store location is a server URL rather than a file path.
pub fn is_url(location: &str) -> bool {
    location.contains("://")
}

/// A store location fit for messages: a URL's password becomes `<hidden>`
/// (dbbench's one redaction, `crate::secret::redact`).
pub fn redact(location: &str) -> String {
    crate::secret::redact(location)
}

/// Where a store lives.
#[derive(Debug, PartialEq)]
pub(super) enum Location {
    File(PathBuf),
    Server(ServerUrl),
}

/// A parsed `postgresql://` or `mysql://` store URL.
#[derive(Debug, PartialEq)]
pub(super) struct ServerUrl {
    pub(super) dialect: Dialect,
    /// User and password as written (percent-encoded), for redaction.
    pub(super) raw_user: String,
    pub(super) raw_password: Option<String>,
    pub(super) user: String,
    pub(super) password: Option<String>,
    pub(super) host: String,
    pub(super) port: Option<u16>,
    pub(super) db: String,
    /// PostgreSQL: the socket directory (`?host=`); MariaDB/MySQL: the
    /// socket file (`?socket=`).
    pub(super) socket: Option<String>,
}

use super::error::{failure, StoreErrorKind};
use crate::dsn::percent_decode;

pub(super) fn parse_location(text: &str) -> anyhow::Result<Location> {
    if !is_url(text) {
        return Ok(Location::File(PathBuf::from(text)));
    }
    parse_url(text).map_err(|e| failure(StoreErrorKind::Location, format!("{e:#}")))
}

/// A store URL's parts, checked.
fn parse_url(text: &str) -> anyhow::Result<Location> {
    let (scheme, rest) = text.split_once("://").unwrap_or_default();
    let dialect = match scheme {
        "postgresql" | "postgres" | "pgsql" => Dialect::Postgres,
        "mysql" | "mariadb" => Dialect::Mysql,
        s => {
            bail!("unknown scheme '{s}'; give a file path, postgresql://user@host/db or mysql://user@host/db")
        }
    };
    let example = match dialect {
        Dialect::Postgres => "postgresql://user[:password]@host[:port]/db[?host=/socket/dir]",
        _ => "mysql://user[:password]@host[:port]/db[?socket=/path]",
    };
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let Some((auth, hostdb)) = main.rsplit_once('@') else {
        bail!("the URL names no user; use {example}");
    };
    let (raw_user, raw_password) = match auth.split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (auth, None),
    };
    if raw_user.is_empty() {
        bail!("the URL names no user; use {example}");
    }
    let (hostport, db) = hostdb.split_once('/').unwrap_or((hostdb, ""));
    if db.is_empty() {
        bail!("the URL names no database; use {example} (the database must exist)");
    }
    // "[::1]:5432": an IPv6 literal keeps its colons.
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| anyhow!("'{hostport}' lacks the closing ']'"))?;
        (h, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().map_err(|_| anyhow!("port '{p}' is not a number from 0 to 65535"))?),
        None => None,
    };
    let mut socket = None;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        match (dialect, kv.split_once('=')) {
            (Dialect::Postgres, Some(("host", v))) | (Dialect::Mysql, Some(("socket", v))) => {
                socket = Some(percent_decode(v).map_err(crate::errors::text_error)?)
            }
            _ => bail!("unknown URL parameter '{kv}'; use {example}"),
        }
    }
    Ok(Location::Server(ServerUrl {
        dialect,
        raw_user: raw_user.to_string(),
        raw_password: raw_password.map(str::to_string),
        user: percent_decode(raw_user).map_err(crate::errors::text_error)?,
        password: raw_password.map(percent_decode).transpose().map_err(crate::errors::text_error)?,
        host: if host.is_empty() { "localhost".to_string() } else { host.to_string() },
        port,
        db: percent_decode(db).map_err(crate::errors::text_error)?,
        socket,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn store_urls_are_parsed_and_passwords_hidden() {
        assert_eq!(
            parse_location("dbbench-lab/results.sqlite").unwrap(),
            Location::File(PathBuf::from("dbbench-lab/results.sqlite"))
        );
        let Location::Server(u) = parse_location("postgresql://team:p%40ss@db.example:5433/lab?host=/run/pg").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (u.dialect, u.user.as_str(), u.password.as_deref(), u.host.as_str(), u.port, u.db.as_str()),
            (Dialect::Postgres, "team", Some("p@ss"), "db.example", Some(5433), "lab")
        );
        assert_eq!(u.socket.as_deref(), Some("/run/pg"));
        let Location::Server(u) = parse_location("mysql://sbtest@/lab?socket=/tmp/m.sock").unwrap() else { panic!() };
        assert_eq!((u.dialect, u.host.as_str(), u.port, u.password), (Dialect::Mysql, "localhost", None, None));
        let Location::Server(u) = parse_location("mariadb://u@[::1]:3307/x").unwrap() else { panic!() };
        assert_eq!((u.host.as_str(), u.port), ("::1", Some(3307)));
        for (bad, why) in [
            ("sqlite://x", "unknown scheme 'sqlite'"),
            ("postgresql://host/db", "names no user"),
            ("mysql://u@h", "names no database"),
            ("mysql://u@h:x/db", "port 'x' is not a number"),
            ("mysql://u@h/db?host=/x", "unknown URL parameter 'host=/x'; use mysql://"),
            ("postgresql://u:50%@h/db", "a '%' in the URL is not followed by two hex digits"),
        ] {
            let e = format!("{:#}", parse_location(bad).unwrap_err());
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert_eq!(redact("postgresql://u:secret@h:1/db?host=/a@b:c"), "postgresql://u:<hidden>@h:1/db?host=/a@b:c");
        assert_eq!(redact("mysql://u@h/db"), "mysql://u@h/db");
        assert_eq!(redact("/x/y:z@w.sqlite"), "/x/y:z@w.sqlite");
        // A bad URL's message shows no password.
        let e = format!("{:#}", Store::open("postgresql://u:secret@h:99999/db").err().unwrap());
        assert!(
            e.starts_with("results store postgresql://u:<hidden>@h:99999/db: port '99999'") && !e.contains("secret"),
            "{e}"
        );
    }
}
