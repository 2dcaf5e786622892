//! The connections dbbench makes on the `mysql` and `postgres` crates
//! rather than through its own drivers (`crate::driver`): the lab's admin
//! connection to a managed server (`lab::server`) and the results store on
//! a server (`store`). Why those two stay on the crates is in
//! ARCHITECTURE.md ("Reaching a database"). What they share is here: one
//! way to say what went wrong, as one line.

/// A MariaDB/MySQL error as one line: `ERROR 1146 (42S02): Table ... doesn't
/// exist` as the `mysql` client prints it, without the crate's `MySqlError { }`.
pub fn mysql_error(e: &mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(m) => format!("ERROR {} ({}): {}", m.code, m.state, m.message),
        e => e.to_string(),
    }
}

/// A PostgreSQL error as one line: the server's severity, message, detail
/// and SQLSTATE when the server sent one (the crate's own text is then only
/// "db error"), else the crate's text and its cause ("error connecting to
/// server" alone does not say why).
pub fn postgres_error(e: &postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(d), _) => format!(
            "{}: {}{} (SQLSTATE {})",
            d.severity(),
            d.message(),
            d.detail().map(|x| format!(" ({x})")).unwrap_or_default(),
            d.code().code()
        ),
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_server_errors_read_as_the_mysql_client_prints_them() {
        let e = mysql::Error::MySqlError(mysql::MySqlError {
            state: "42S02".into(),
            message: "Table 'x.t' doesn't exist".into(),
            code: 1146,
        });
        assert_eq!(mysql_error(&e), "ERROR 1146 (42S02): Table 'x.t' doesn't exist");
    }
}
