//! Secrets (database passwords) and the one redaction every output goes
//! through.
//!
//! dbbench's promise (docs/security.md): no password reaches a child's
//! argv, the results store, a report, an export or a log. Passwords travel
//! to child processes in environment variables (`PASSWORD_VARS`), and every
//! text that leaves dbbench for the store, a report, an export or a message
//! passes through [`redact`], which hides
//! * the password of every `scheme://user:password@host` URL,
//! * the value of every `name=value`, `name = "value"` or `"name": "value"`
//!   whose name contains `password` or `passwd` (`--mysql-password=...`, a
//!   spec's `mysql-password = "..."`, perfrun's DBI `password=...;`, JSON),
//!   except names ending in `_env`/`-env`, which name a variable,
//! * every password dbbench knows of in this process ([`register`]: spec
//!   passwords from `password_env` or a DSN, the store's, a managed server's),
//!   wherever it appears verbatim, e.g. echoed by a hook into its output.
//!
//! All of them become [`MASK`]. Before this module there were six redactors
//! with two masks; a seventh is a defect.

use std::sync::{Mutex, OnceLock};

/// What a hidden password is shown as, everywhere.
pub const MASK: &str = "<hidden>";

/// The MariaDB/MySQL password of a dbbench run (after `--mysql-password`, before `MYSQL_PWD`).
pub const MYSQL_PASSWORD_ENV: &str = "DBBENCH_MYSQL_PASSWORD";
/// The PostgreSQL password of a dbbench run (after `--pgsql-password`, before `PGPASSWORD`).
pub const PGSQL_PASSWORD_ENV: &str = "DBBENCH_PGSQL_PASSWORD";
/// The MariaDB/MySQL clients' own variable, honoured last.
pub const MYSQL_NATIVE_ENV: &str = "MYSQL_PWD";
/// libpq's own variable, honoured last.
pub const PGSQL_NATIVE_ENV: &str = "PGPASSWORD";
/// Every variable that carries a database password into a process: the lab
/// removes them all from its children's environment and sets only those of
/// the configuration at hand, so a password exported in the user's shell
/// for another server never reaches a run.
pub const PASSWORD_VARS: &[&str] = &[MYSQL_PASSWORD_ENV, PGSQL_PASSWORD_ENV, MYSQL_NATIVE_ENV, PGSQL_NATIVE_ENV];

/// Known secrets shorter than this are not hidden by value (only where a
/// pattern finds them): a two-letter password would otherwise mask that
/// pair of letters in every word of every message.
const MIN_KNOWN_LEN: usize = 4;

fn known() -> &'static Mutex<Vec<String>> {
    static KNOWN: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    KNOWN.get_or_init(|| Mutex::new(Vec::new()))
}

/// Remembers a secret so that [`redact`] hides it wherever it appears
/// verbatim, for the rest of the process.
pub fn register(secret: &str) {
    if secret.len() < MIN_KNOWN_LEN {
        return;
    }
    let mut k = known().lock().unwrap_or_else(|e| e.into_inner());
    if !k.iter().any(|s| s == secret) {
        k.push(secret.to_string());
        // Longest first: a secret containing another is hidden whole.
        k.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// A password held in memory: printed (`{:?}`) as the mask, registered for
/// [`redact`] when made, reachable only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps and registers a password.
    pub fn new(s: impl Into<String>) -> Secret {
        let s = s.into();
        register(&s);
        Secret(s)
    }

    /// The password itself, for a connection or a child's environment only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

/// Fills `buf` from the kernel's random generator.
pub fn random_bytes(buf: &mut [u8]) -> Result<(), String> {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: getrandom writes at most the given length into the buffer we own.
        let n = unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("cannot read random bytes: {e}"));
        }
        filled += n as usize;
    }
    Ok(())
}

/// A password of 24 random bytes as URL- and shell-safe text (base64url,
/// 32 characters), registered for [`redact`].
pub fn random_password() -> Result<Secret, String> {
    use base64::Engine;
    let mut buf = [0u8; 24];
    random_bytes(&mut buf).map_err(|e| format!("cannot make a password: {e}"))?;
    Ok(Secret::new(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)))
}

/// Whether an option or key name holds a password (`mysql-password`,
/// `pgsql_password`, `PGPASSWORD`, `passwd`), not a variable's name
/// (`password_env`).
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    (n.contains("password") || n.contains("passwd") || n == "mysql_pwd") && !n.ends_with("_env") && !n.ends_with("-env")
}

/// `text` with every password hidden (see the module comment).
pub fn redact(text: &str) -> String {
    let mut out = redact_urls(text);
    out = redact_pairs(&out);
    let k = known().lock().unwrap_or_else(|e| e.into_inner());
    for s in k.iter() {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), MASK);
        }
    }
    out
}

/// Every argument through [`redact`].
pub fn redact_args(args: &[String]) -> Vec<String> {
    args.iter().map(|a| redact(a)).collect()
}

/// A JSON value with every string through [`redact`] and the value of every
/// key that names a password replaced by the mask.
pub fn redact_json(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(a) => Value::Array(a.iter().map(redact_json).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = if is_secret_name(k) && !v.is_null() && v.as_str() != Some("") {
                        Value::String(MASK.to_string())
                    } else {
                        redact_json(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Hides the password of every `scheme://user:password@host...` URL in
/// `text`; the URL ends at white space or a quote.
fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        // The scheme: letters, digits, + . - before "://".
        let scheme_ok = rest[..i].chars().last().is_some_and(|c| c.is_ascii_alphanumeric());
        let after = &rest[i + 3..];
        let end =
            after.find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>')).unwrap_or(after.len());
        let url = &after[..end];
        // The user part ends at the last `@` before the query, where a
        // socket path may hold `@`; with none there, at the last `@` of
        // all (an unencoded `?` or `#` in the password).
        let main_end = url.find(['?', '#']).unwrap_or(url.len());
        let at = url[..main_end].rfind('@').or_else(|| url.rfind('@'));
        out.push_str(&rest[..i + 3]);
        match at.and_then(|at| url[..at].find(':').map(|c| (c, at))) {
            Some((colon, at)) if scheme_ok && at > colon + 1 && url[..colon].chars().all(|c| c != '/') => {
                out.push_str(&url[..=colon]);
                out.push_str(MASK);
                out.push_str(&url[at..]);
            }
            _ => out.push_str(url),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Hides the value of every `name=value` / `name = "value"` / `"name": "value"`
/// whose name holds a password (see [`is_secret_name`]).
fn redact_pairs(text: &str) -> String {
    static PAIR: OnceLock<regex::Regex> = OnceLock::new();
    let re = PAIR.get_or_init(|| {
        // name; then `=` (TOML, options, DBI, shell) or a quote and `:` (JSON);
        // then a quoted value or a bare one up to a separator.
        regex::Regex::new(
            r#"(?i)(?P<name>[A-Za-z0-9_.-]*(?:password|passwd|mysql_pwd)[A-Za-z0-9_.-]*)(?P<sep>\s*=\s*|["']\s*=\s*|["']\s*:\s*)(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,;&}\]"')]+)"#,
        )
        .expect("valid regex")
    });
    re.replace_all(text, |c: &regex::Captures| {
        let (name, value) = (&c["name"], &c["value"]);
        if !is_secret_name(name) || value.trim_matches(['"', '\'']) == MASK {
            return c[0].to_string();
        }
        let masked = match value.chars().next() {
            Some(q @ ('"' | '\'')) => format!("{q}{MASK}{q}"),
            _ => MASK.to_string(),
        };
        format!("{name}{}{masked}", &c["sep"])
    })
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords() {
        for (given, want) in [
            ("mysql://u:pw@h/db", "mysql://u:<hidden>@h/db"),
            ("postgresql://u:secret@h:1/db?host=/a@b:c", "postgresql://u:<hidden>@h:1/db?host=/a@b:c"),
            ("dsn = \"mysql://root:p@ss@127.0.0.1:3306/x\"", "dsn = \"mysql://root:<hidden>@127.0.0.1:3306/x\""),
            ("mysql://u@h/db", "mysql://u@h/db"),
            ("see http://example.com/a:b@c", "see http://example.com/a:b@c"),
            ("two: pgsql://a:1@h and mysql://b:2@i", "two: pgsql://a:<hidden>@h and mysql://b:<hidden>@i"),
            ("/x/y:z@w.sqlite", "/x/y:z@w.sqlite"),
            ("mysql://u:@h/db", "mysql://u:@h/db"),
            ("mysql://root:pa?ss@h/db", "mysql://root:<hidden>@h/db"),
            ("mysql://root:p#w@h", "mysql://root:<hidden>@h"),
        ] {
            assert_eq!(redact(given), want, "{given}");
        }
    }

    #[test]
    fn password_options_keys_and_dbi_pairs_lose_their_values() {
        for (given, want) in [
            ("--mysql-password=s3cret", "--mysql-password=<hidden>"),
            ("--pgsql_password=a b", "--pgsql_password=<hidden> b"),
            ("options = { mysql-password = \"s3cret\", x = 1 }", "options = { mysql-password = \"<hidden>\", x = 1 }"),
            ("password_env = \"PW\"", "password_env = \"PW\""),
            ("dbi:mysql:user=u;password=pw;host=h", "dbi:mysql:user=u;password=<hidden>;host=h"),
            (r#"{"mysql_password":"x1","b":2}"#, r#"{"mysql_password":"<hidden>","b":2}"#),
            ("PGPASSWORD=abc MYSQL_PWD=def", "PGPASSWORD=<hidden> MYSQL_PWD=<hidden>"),
            (
                "Access denied for user 'u'@'h' (using password: YES)",
                "Access denied for user 'u'@'h' (using password: YES)",
            ),
            ("--mysql-password=<hidden>", "--mysql-password=<hidden>"),
        ] {
            assert_eq!(redact(given), want, "{given}");
        }
        assert_eq!(redact_args(&["--a=1".into(), "--mysql-password=x".into()]), ["--a=1", "--mysql-password=<hidden>"]);
    }

    #[test]
    fn known_secrets_are_hidden_wherever_they_appear() {
        let s = Secret::new("Zq9-known-secret-value");
        assert_eq!(format!("{s:?}"), MASK);
        assert_eq!(
            redact("hook printed Zq9-known-secret-value twice: Zq9-known-secret-value"),
            "hook printed <hidden> twice: <hidden>"
        );
        register("ab");
        assert_eq!(redact("ab cab"), "ab cab", "too short to hide by value");
    }

    #[test]
    fn json_values_and_password_keys() {
        let v = serde_json::json!({"mysql_password": "pw1", "opts": ["--pgsql-password=pw2", "--x=1"],
            "dsn": "mysql://u:pw3@h/d", "password_env": "PW", "n": 3, "pgsql_password": ""});
        let r = redact_json(&v).to_string();
        for pw in ["pw1", "pw2", "pw3"] {
            assert!(!r.contains(pw), "{r}");
        }
        assert!(
            r.contains("\"password_env\":\"PW\"") && r.contains("\"n\":3") && r.contains("\"pgsql_password\":\"\""),
            "{r}"
        );
    }

    #[test]
    fn random_passwords_differ_and_are_safe_text() {
        let (a, b) = (random_password().unwrap(), random_password().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 32);
        assert!(a.expose().bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }

    #[test]
    fn secret_names() {
        for n in ["mysql-password", "pgsql_password", "PGPASSWORD", "passwd", "MYSQL_PWD"] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["password_env", "user", "mysql-user", "pwd"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }
}
