//! SQL helpers and password hashes: administrative statements on the server.

use super::logs::one_line;

/// An admin connection (MariaDB/MySQL root, PostgreSQL postgres), kept for
/// repeated samples: connecting per sample would fork a PostgreSQL backend
/// every second in the middle of a measurement.
pub(super) enum AdminConn {
    My(mysql::Conn),
    /// Boxed: the client is ~300 bytes, the MariaDB connection one pointer.
    Pg(Box<postgres::Client>),
}

/// A failed query; `server` = the server rejected the SQL (the connection is fine).
pub(super) struct QueryError {
    pub(super) msg: String,
    pub(super) server: bool,
}

pub(super) type Rows = (Vec<String>, Vec<Vec<Option<String>>>);

/// A MariaDB/MySQL error as one line of at most 500 bytes (see `crate::sqlclient`).
pub(super) fn my_err(e: &mysql::Error) -> String {
    one_line(&crate::sqlclient::mysql_error(e), 500)
}

/// A PostgreSQL error as one line of at most 500 bytes (see `crate::sqlclient`).
pub(super) fn pg_err(e: &postgres::Error) -> String {
    one_line(&crate::sqlclient::postgres_error(e), 500)
}

fn my_text(v: mysql::Value) -> Option<String> {
    match v {
        mysql::Value::NULL => None,
        mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

pub(super) fn run_admin_query(conn: &mut AdminConn, sql: &str) -> Result<Rows, QueryError> {
    match conn {
        AdminConn::My(c) => {
            use mysql::prelude::Queryable;
            let rows: Vec<mysql::Row> = c
                .query(sql)
                .map_err(|e| QueryError { msg: my_err(&e), server: matches!(e, mysql::Error::MySqlError(_)) })?;
            let cols = rows
                .first()
                .map(|r| r.columns_ref().iter().map(|c| c.name_str().into_owned()).collect())
                .unwrap_or_default();
            Ok((cols, rows.into_iter().map(|r| r.unwrap().into_iter().map(my_text).collect()).collect()))
        }
        AdminConn::Pg(c) => {
            let msgs = c.simple_query(sql).map_err(|e| QueryError {
                msg: pg_err(&e),
                server: e.as_db_error().is_some_and(|d| !matches!(d.severity(), "FATAL" | "PANIC")),
            })?;
            let mut cols = Vec::new();
            let mut rows = Vec::new();
            for m in msgs {
                if let postgres::SimpleQueryMessage::Row(r) = m {
                    if cols.is_empty() {
                        cols = r.columns().iter().map(|c| c.name().to_string()).collect();
                    }
                    rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
                }
            }
            Ok((cols, rows))
        }
    }
}

/// Quotes an argument for a shell command line, when it needs it.
pub(super) fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

// ------------------------------------------------------------------ password hashes

/// MariaDB/MySQL `mysql_native_password` hash: `*` and the upper-case hex
/// of SHA1(SHA1(password)); what `PASSWORD('...')` returns.
pub(super) fn mysql_native_hash(password: &str) -> String {
    use sha1::{Digest, Sha1};
    let inner = Sha1::digest(password.as_bytes());
    let outer = Sha1::digest(inner);
    let hex: String = outer.iter().map(|b| format!("{b:02X}")).collect();
    format!("*{hex}")
}

fn hmac_sha256(key: &[u8], data: &[&[u8]]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    for d in data {
        inner.update(d);
    }
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// A PostgreSQL SCRAM-SHA-256 verifier (RFC 5802/7677, what PostgreSQL
/// stores for a password): `SCRAM-SHA-256$4096:salt$StoredKey:ServerKey`.
/// `ALTER ROLE ... PASSWORD` takes it as is, so the password itself never
/// reaches the server, where `log_statement` could print it. The password
/// must be ASCII without control characters (SASLprep leaves it alone).
pub(super) fn scram_sha256_verifier(password: &str) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    const ITERATIONS: u32 = 4096;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut salt = [0u8; 16];
    if crate::secret::random_bytes(&mut salt).is_err() {
        // Only the salt's uniqueness across servers is lost.
        salt = *b"dbbench-scram-sa";
    }
    // PBKDF2-HMAC-SHA256, one 32-byte block.
    let mut u = hmac_sha256(password.as_bytes(), &[&salt, &1u32.to_be_bytes()]);
    let mut salted = u;
    for _ in 1..ITERATIONS {
        u = hmac_sha256(password.as_bytes(), &[&u]);
        for (s, x) in salted.iter_mut().zip(u) {
            *s ^= x;
        }
    }
    let client_key = hmac_sha256(&salted, &[b"Client Key"]);
    let stored_key = Sha256::digest(client_key);
    let server_key = hmac_sha256(&salted, &[b"Server Key"]);
    format!("SCRAM-SHA-256${ITERATIONS}:{}${}:{}", b64.encode(salt), b64.encode(stored_key), b64.encode(server_key))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "cannot connect to PostgreSQL at ... as postgres: error connecting to
    /// server" said nothing of why: the reason is the crate error's cause.
    #[test]
    fn a_postgresql_connect_error_says_why() {
        let dir = crate::safe_fs::TestDir::new("admin");
        // No server listens in a fresh directory.
        let e = postgres::Config::new()
            .host_path(&dir)
            .port(5432)
            .user("postgres")
            .connect_timeout(std::time::Duration::from_secs(2))
            .connect(postgres::NoTls)
            .err()
            .expect("nothing listens there");
        let line = pg_err(&e);
        assert!(line.starts_with("error connecting to server: "), "{line}");
        assert!(line.contains("No such file or directory"), "{line}");
    }
}
