//! Which server product a configuration really ran: MariaDB, MySQL,
//! Percona Server, PostgreSQL or SQLite, from what the server says about
//! itself (`VERSION()`, `@@version_comment`), not from the kind a spec asked
//! for. Debian installs MariaDB's server as `mysqld`, so kind `mysql` finds
//! MariaDB unless pointed at a MySQL build: a MariaDB-vs-MySQL study would
//! then compare MariaDB with itself. Managed servers are checked after they
//! start (`lab::server`), and the lab stores the product and version of
//! every run (`runs.server_product`, `runs.server_version`). Whether a
//! product is what a kind asks for is the kind's (`ServerKind::fits`).

pub use crate::store::Product;

/// The product behind a MariaDB/MySQL-protocol server: MariaDB says so in
/// its version (`10.11.19-MariaDB-...`, also behind the `5.5.5-` prefix
/// its handshake adds); Percona Server in `@@version_comment`; anything
/// else speaking the protocol is taken for MySQL.
pub fn mysql_family(version: &str, comment: &str) -> Product {
    let name = if version.to_ascii_lowercase().contains("mariadb") {
        "MariaDB"
    } else if comment.to_ascii_lowercase().contains("percona") {
        "Percona Server"
    } else {
        "MySQL"
    };
    Product { name: name.to_string(), version: version.trim_start_matches("5.5.5-").to_string() }
}

/// The product behind a connection of dbbench's driver `driver` (`mysql`,
/// `pgsql`, `sqlite`), from its version string and, for MySQL-protocol
/// servers, `@@version_comment`.
pub fn of_driver(driver: &str, version: &str, comment: &str) -> Product {
    match driver {
        "mysql" => mysql_family(version, comment),
        "pgsql" => Product { name: "PostgreSQL".into(), version: version.to_string() },
        "sqlite" => Product { name: "SQLite".into(), version: version.to_string() },
        other => Product { name: other.to_string(), version: version.to_string() },
    }
}

/// The product a server program names in its `--version` line
/// (`mysqld  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64
/// (Debian 12)`, `mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community
/// Server - GPL)`): the version after `Ver`, the comment in the last
/// parentheses. None when the line has no `Ver`.
pub fn from_version_line(text: &str) -> Option<Product> {
    let after = text.split_once(" Ver ")?.1;
    let version = after.split_whitespace().next()?;
    let comment = after.rsplit_once('(').map(|(_, c)| c.trim_end().trim_end_matches(')')).unwrap_or("");
    Some(mysql_family(version, comment))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::server::ServerKind;

    #[test]
    fn products_are_named_by_what_the_server_says() {
        let p = mysql_family("10.11.19-MariaDB-0+deb12u1", "Debian 12");
        assert_eq!((p.name.as_str(), p.version.as_str()), ("MariaDB", "10.11.19-MariaDB-0+deb12u1"));
        assert_eq!(mysql_family("5.5.5-10.6.16-MariaDB", "").version, "10.6.16-MariaDB");
        assert_eq!(mysql_family("8.0.36", "MySQL Community Server - GPL").name, "MySQL");
        assert_eq!(
            mysql_family("8.0.35-27", "Percona Server (GPL), Release 27, Revision 2f8eeab2").name,
            "Percona Server"
        );
        assert_eq!(of_driver("pgsql", "15.14 (Debian 15.14-0+deb12u1)", "").name, "PostgreSQL");
        assert_eq!(of_driver("sqlite", "3.46.0", "").name, "SQLite");
        let v = from_version_line(
            "/usr/sbin/mysqld  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n",
        );
        assert_eq!(v, Some(p.clone()));
        let v = from_version_line("mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)").unwrap();
        assert_eq!((v.name.as_str(), v.version.as_str()), ("MySQL", "8.0.36"));
        assert_eq!(from_version_line("something else"), None);
        assert!(ServerKind::Mysql.fits("MySQL") && ServerKind::Mysql.fits("Percona Server"));
        assert!(!ServerKind::Mysql.fits("MariaDB") && !ServerKind::Mariadb.fits("MySQL"));
        let line = ServerKind::Mysql.mismatch(std::path::Path::new("/usr/sbin/mysqld"), &p);
        assert_eq!(
            line,
            "kind \"mysql\" but /usr/sbin/mysqld is MariaDB 10.11.19-MariaDB-0+deb12u1, not MySQL: to benchmark MySQL, set basedir (spec) or --basedir (dbbench server) to an unpacked MySQL tarball or build tree, e.g. basedir = \"/opt/mysql-8.4\" (Debian's mysqld is MariaDB's); to benchmark MariaDB use kind \"mariadb\""
        );
        assert!(!line.contains('\n'));
    }
}
