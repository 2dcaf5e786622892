//! PostgreSQL over TLS (`--pgsql-sslmode`) against a managed PostgreSQL with
//! `ssl=on` and a certificate from a throwaway CA made with openssl: each
//! mode connects or refuses as libpq would, and `pg_stat_ssl` says whether
//! the session is encrypted; a certificate rustls cannot use makes
//! prefer/allow fall back to a plain session and require fail; a client
//! certificate signed by the CA passes `cert` authentication.

mod common;

use common::{dbbench_in_env, have_server_binaries, openssl, tempdir, test_certificates, Managed};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The common test certificates in `parent`/certs, the server's owned by postgres.
fn make_certificates(parent: &Path) -> PathBuf {
    let certs = test_certificates(parent);
    own_for_postgres(&certs, &["server.key", "server.crt"]);
    certs
}

/// Whether a run succeeded printing the line `Ok(line)`, or failed with a
/// message containing `Err(text)`.
fn outcome_is(r: &common::Run, want: Result<&str, &str>) -> bool {
    match want {
        Ok(line) => r.code == 0 && r.stdout.lines().any(|l| l == line),
        Err(text) => r.code != 0 && format!("{}{}", r.stdout, r.stderr).contains(text),
    }
}

/// PostgreSQL refuses a key others can read, and runs as postgres when we are root.
fn own_for_postgres(dir: &Path, files: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    for f in files {
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o600)).unwrap();
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let st = Command::new("chown").arg("postgres").arg(dir.join(f)).status().unwrap();
            assert!(st.success());
        }
    }
}

#[test]
fn sslmodes_connect_or_refuse_as_libpq_does() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("pg-tls");
    let certs = make_certificates(&dir);
    let (crt, key) = (certs.join("server.crt"), certs.join("server.key"));
    let ssl_opts =
        ["ssl=on".to_string(), format!("ssl_cert_file={}", crt.display()), format!("ssl_key_file={}", key.display())];
    let server =
        Managed::start(&dir.join("pg"), "postgresql", &ssl_opts.iter().map(String::as_str).collect::<Vec<_>>());
    let info = server.info();
    let port = info["port"].as_u64().unwrap().to_string();
    std::fs::write(
        dir.join("ssl.lua"),
        "function thread_init() con = sysbench.sql.driver():connect() end\n\
         function event() local row = con:query(\"SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()\"):fetch_row() print(\"ssl=\" .. tostring(row[1])) end\n",
    )
    .unwrap();
    let ca = certs.join("ca.crt").display().to_string();
    let other = certs.join("other.crt").display().to_string();
    // One run of ssl.lua; no mode or root given: dbbench's defaults.
    // Over TCP the benchmark account needs the server's password (the socket does not).
    let password = server.password();
    let run_env = |host: &str, mode: Option<&str>, root: &str, env: &[(&str, Option<&str>)]| {
        let mut env = env.to_vec();
        env.push(("DBBENCH_PGSQL_PASSWORD", Some(password.as_str())));
        let mut a = vec![
            "--db-driver=pgsql".to_string(),
            format!("--pgsql-host={host}"),
            format!("--pgsql-port={port}"),
            "--events=1".to_string(),
            "--threads=1".to_string(),
        ];
        if let Some(m) = mode {
            a.push(format!("--pgsql-sslmode={m}"));
        }
        if !root.is_empty() {
            a.push(format!("--pgsql-sslrootcert={root}"));
        }
        a.push("ssl.lua".into());
        a.push("run".into());
        dbbench_in_env(&dir, &a.iter().map(String::as_str).collect::<Vec<_>>(), &env)
    };
    let run = |host: &str, mode: &str, root: &str| run_env(host, Some(mode), root, &[]);
    let cases: [(&str, &str, &str, Result<&str, &str>); 10] = [
        ("127.0.0.1", "disable", "", Ok("ssl=f")),
        ("127.0.0.1", "prefer", "", Ok("ssl=t")),
        ("127.0.0.1", "require", "", Ok("ssl=t")),
        ("127.0.0.1", "verify-ca", &ca, Ok("ssl=t")),
        ("localhost", "verify-full", &ca, Ok("ssl=t")),
        // The certificate names localhost, not the address.
        ("127.0.0.1", "verify-full", &ca, Err("certificate not valid for name \"127.0.0.1\"")),
        // Signed by another CA.
        ("localhost", "verify-ca", &other, Err("invalid peer certificate: UnknownIssuer")),
        // Over the unix socket there is no TLS, whatever the mode (as libpq).
        (info["socket"].as_str().unwrap(), "prefer", "", Ok("ssl=f")),
        (info["socket"].as_str().unwrap(), "verify-full", &ca, Ok("ssl=f")),
        // ... and no root certificates needed there.
        (info["socket"].as_str().unwrap(), "verify-full", "", Ok("ssl=f")),
    ];
    let mut failures = Vec::new();
    for (host, mode, root, want) in cases {
        let r = run(host, mode, root);
        if !outcome_is(&r, want) {
            failures
                .push(format!("{host} {mode} {root}: want {want:?}, got code {}: {}{}", r.code, r.stdout, r.stderr));
        }
    }

    // The system's roots (`system`), found through OpenSSL's variables. No
    // mode given means verify-full, so the host name is checked too.
    let certs_dir = certs.display().to_string();
    // (host, --pgsql-sslmode, environment, outcome)
    type Case<'a> = (&'a str, Option<&'a str>, &'a [(&'a str, Option<&'a str>)], Result<&'a str, &'a str>);
    let system_cases: [Case; 6] = [
        ("localhost", None, &[("SSL_CERT_FILE", Some(&ca)), ("SSL_CERT_DIR", None)], Ok("ssl=t")),
        (
            "127.0.0.1",
            None,
            &[("SSL_CERT_FILE", Some(&ca)), ("SSL_CERT_DIR", None)],
            Err("certificate not valid for name \"127.0.0.1\""),
        ),
        (
            "localhost",
            None,
            &[("SSL_CERT_FILE", Some(&other)), ("SSL_CERT_DIR", None)],
            Err("invalid peer certificate: UnknownIssuer"),
        ),
        // A directory of certificates (the keys and requests in it are skipped).
        (
            "localhost",
            None,
            &[("SSL_CERT_FILE", Some("/nonexistent.pem")), ("SSL_CERT_DIR", Some(&certs_dir))],
            Ok("ssl=t"),
        ),
        // libpq refuses a weaker mode with the system's roots.
        (
            "localhost",
            Some("require"),
            &[("SSL_CERT_FILE", Some(&ca)), ("SSL_CERT_DIR", None)],
            Err("use --pgsql-sslmode=verify-full"),
        ),
        (
            "localhost",
            Some("verify-full"),
            &[("SSL_CERT_FILE", Some("/nonexistent.pem")), ("SSL_CERT_DIR", None)],
            Err("no usable root certificate found"),
        ),
    ];
    for (i, (host, mode, env, want)) in system_cases.into_iter().enumerate() {
        // Every other case names `system` through PGSSLROOTCERT instead of the option.
        let mut env = env.to_vec();
        let root = if i % 2 == 0 {
            env.push(("PGSSLROOTCERT", None));
            "system"
        } else {
            env.push(("PGSSLROOTCERT", Some("system")));
            ""
        };
        let r = run_env(host, mode, root, &env);
        if !outcome_is(&r, want) || r.stderr.lines().count() > 1 {
            failures.push(format!(
                "system roots, {host} {mode:?} {env:?}: want {want:?}, got code {}: {}{}",
                r.code, r.stdout, r.stderr
            ));
        }
    }

    // A certificate whose key rustls cannot use (P-521): the handshake
    // fails, so prefer connects without TLS, as libpq, and require fails.
    let mut a = vec!["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp521r1", "-nodes"];
    a.extend(["-keyout", "p521.key", "-out", "p521.crt", "-days", "2", "-subj", "/CN=localhost"]);
    openssl(&certs, &a);
    own_for_postgres(&certs, &["p521.key", "p521.crt"]);
    // The server's options name the files (command-line options beat
    // ALTER SYSTEM): put the new pair in their place, then reload, which
    // makes the postmaster read the SSL files again.
    for (from, to) in [("p521.crt", &crt), ("p521.key", &key)] {
        std::fs::write(to, std::fs::read(certs.join(from)).unwrap()).unwrap();
    }
    server.psql_admin("SELECT pg_reload_conf()");
    // The reload is asynchronous: wait (bounded) until require stops working.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while run("127.0.0.1", "require", "").code == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    for (mode, want) in
        [("prefer", Ok("ssl=f")), ("allow", Ok("ssl=f")), ("require", Err("error performing TLS handshake"))]
    {
        let r = run("127.0.0.1", mode, "");
        if !outcome_is(&r, want) {
            failures.push(format!(
                "P-521 certificate, {mode}: want {want:?}, got code {}: {}{}",
                r.code, r.stdout, r.stderr
            ));
        }
    }
    drop(server);
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `cert` authentication: a role that pg_hba.conf admits only with a
/// client certificate connects with `--pgsql-sslcert/--pgsql-sslkey` (the
/// server sees the certificate's name), is refused without them, and a
/// missing key file is one FATAL line naming it.
#[test]
fn client_certificate_authenticates() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("pg-tls-client");
    let certs = make_certificates(&dir);
    let mut a = vec!["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    a.extend(["-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=certuser"]);
    openssl(&certs, &a);
    std::fs::write(
        certs.join("client.cnf"),
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    openssl(
        &certs,
        &[
            "x509",
            "-req",
            "-in",
            "client.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "client.crt",
            "-days",
            "2",
            "-extfile",
            "client.cnf",
        ],
    );
    own_for_postgres(&certs, &["ca.crt"]);
    let ssl_opts = [
        "ssl=on".to_string(),
        format!("ssl_cert_file={}", certs.join("server.crt").display()),
        format!("ssl_key_file={}", certs.join("server.key").display()),
        format!("ssl_ca_file={}", certs.join("ca.crt").display()),
    ];
    let server =
        Managed::start(&dir.join("pg"), "postgresql", &ssl_opts.iter().map(String::as_str).collect::<Vec<_>>());
    let info = server.info();
    let port = info["port"].as_u64().unwrap().to_string();
    let password = server.password();
    server.psql_admin("CREATE ROLE certuser LOGIN");
    // certuser over TCP: a certificate or nothing (first matching line wins).
    let hba = server.psql_admin("SHOW hba_file");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("hostssl all certuser 127.0.0.1/32 cert\nhost all certuser 127.0.0.1/32 reject\n{old}"),
    )
    .unwrap();
    server.psql_admin("SELECT pg_reload_conf()");
    std::fs::write(
        dir.join("dn.lua"),
        "function thread_init() con = sysbench.sql.driver():connect() end\n\
         function event() local row = con:query(\"SELECT client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()\"):fetch_row() print(\"dn=\" .. tostring(row[1])) end\n",
    )
    .unwrap();
    let run = |extra: &[String]| {
        let mut a = vec![
            "--db-driver=pgsql".to_string(),
            "--pgsql-host=127.0.0.1".to_string(),
            format!("--pgsql-port={port}"),
            "--pgsql-user=certuser".to_string(),
            "--pgsql-db=sbtest".to_string(),
            "--pgsql-sslmode=require".to_string(),
            "--events=1".to_string(),
            "--threads=1".to_string(),
        ];
        a.extend(extra.iter().cloned());
        a.push("dn.lua".into());
        a.push("run".into());
        // No certificate from the machine's own settings: HOME is the
        // test's directory, and libpq's variables are unset.
        let home = dir.display().to_string();
        // sbtest (the stray-certificate case) needs the server's password over TCP.
        let env = [
            ("HOME", Some(home.as_str())),
            ("PGSSLCERT", None),
            ("PGSSLKEY", None),
            ("DBBENCH_PGSQL_PASSWORD", Some(password.as_str())),
        ];
        dbbench_in_env(&dir, &a.iter().map(String::as_str).collect::<Vec<_>>(), &env)
    };
    let with_cert = [
        format!("--pgsql-sslcert={}", certs.join("client.crt").display()),
        format!("--pgsql-sslkey={}", certs.join("client.key").display()),
    ];
    // The reload is asynchronous: wait (bounded) until certuser without a
    // certificate is refused.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut without = run(&[]);
    while without.code == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
        without = run(&[]);
    }
    let mut failures = Vec::new();
    let all = |r: &common::Run| format!("{}{}", r.stdout, r.stderr);
    if without.code == 0 || !all(&without).contains("certificate") {
        failures.push(format!(
            "without a certificate: want a refusal naming the certificate, got code {}: {}",
            without.code,
            all(&without)
        ));
    }
    let ok = run(&with_cert);
    if ok.code != 0 || !ok.stdout.lines().any(|l| l == "dn=/CN=certuser") {
        failures.push(format!("with the certificate: want dn=/CN=certuser, got code {}: {}", ok.code, all(&ok)));
    }
    let no_key = run(&[with_cert[0].clone(), format!("--pgsql-sslkey={}", certs.join("missing.key").display())]);
    let text = all(&no_key);
    if no_key.code == 0
        || !text
            .lines()
            .any(|l| l.starts_with("FATAL: ") && l.contains("missing.key") && l.contains("--pgsql-sslkey=FILE"))
    {
        failures.push(format!(
            "missing key: want one line naming the file and --pgsql-sslkey, got code {}: {text}",
            no_key.code
        ));
    }
    // A stray default certificate without its key (~/.postgresql) does not
    // stop a connection that needs none: a warning, then the run (sbtest
    // logs in without a certificate).
    std::fs::create_dir_all(dir.join(".postgresql")).unwrap();
    std::fs::copy(certs.join("client.crt"), dir.join(".postgresql/postgresql.crt")).unwrap();
    let stray = run(&["--pgsql-user=sbtest".to_string()]);
    if stray.code != 0
        || !stray.stdout.contains("WARNING: client certificate not used")
        || !stray.stdout.contains("dn=")
    {
        failures.push(format!(
            "stray default certificate: want a warning and a run, got code {}: {}",
            stray.code,
            all(&stray)
        ));
    }
    drop(server);
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
    let _ = std::fs::remove_dir_all(&dir);
}
