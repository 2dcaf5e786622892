//! MariaDB over TLS (`--mysql-ssl=on`, `--mysql-ssl-cipher`) against a
//! managed MariaDB with a certificate from a throwaway CA made with
//! openssl: the session is encrypted (the server's `Ssl_cipher` says so),
//! the cipher the client offers is the one used, `cacert.pem` in the
//! current directory is checked as sysbench 1.0.20 does, and a cipher
//! dbbench cannot offer is one clear error.

mod common;

use common::{dbbench_in_env, have_server_binaries, tempdir, test_certificates, Managed};
use std::path::Path;

#[test]
fn tls_sessions_ciphers_and_ca_check() {
    if !have_server_binaries() {
        return;
    }
    let dir = tempdir("mysql-tls");
    let certs = test_certificates(&dir);
    // As root, dbbench runs MariaDB as the mysql OS user, which must read its key.
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        for f in ["server.key", "server.crt", "ca.crt"] {
            let st = std::process::Command::new("chown").arg("mysql").arg(certs.join(f)).status().unwrap();
            assert!(st.success());
        }
    }
    let opts = [
        format!("--ssl-cert={}", certs.join("server.crt").display()),
        format!("--ssl-key={}", certs.join("server.key").display()),
        format!("--ssl-ca={}", certs.join("ca.crt").display()),
        "--innodb-buffer-pool-size=32M".to_string(),
    ];
    let server = Managed::start(&dir.join("srv"), "mariadb", &opts.iter().map(String::as_str).collect::<Vec<_>>());
    let port = server.info()["port"].as_u64().unwrap().to_string();
    let password = server.password();
    let script = dir.join("cipher.lua");
    std::fs::write(
        &script,
        "function thread_init() con = sysbench.sql.driver():connect() end\n\
         function event() local row = con:query(\"SHOW SESSION STATUS LIKE 'Ssl_cipher'\"):fetch_row() print(\"cipher=\" .. tostring(row[2])) end\n",
    )
    .unwrap();
    // cwd: where sysbench's --mysql-ssl looks for cacert.pem.
    let run = |cwd: &Path, extra: &[&str]| {
        let mut a = vec![
            "--db-driver=mysql".to_string(),
            "--mysql-host=127.0.0.1".to_string(),
            format!("--mysql-port={port}"),
            "--mysql-ssl=on".to_string(),
            "--events=1".to_string(),
            "--threads=1".to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a.push(script.display().to_string());
        a.push("run".into());
        // Over TCP the benchmark account needs the server's password (the socket does not).
        let env = [("DBBENCH_MYSQL_PASSWORD", Some(password.as_str()))];
        dbbench_in_env(cwd, &a.iter().map(String::as_str).collect::<Vec<_>>(), &env)
    };
    let cipher = |r: &common::Run| r.stdout.lines().find_map(|l| l.strip_prefix("cipher=")).map(str::to_string);
    let mut failures = Vec::new();
    let plain_dir = dir.join("no-ca");
    std::fs::create_dir_all(&plain_dir).unwrap();
    // No cacert.pem: encrypted, certificate not checked (ssl-mode REQUIRED).
    let r = run(&plain_dir, &[]);
    if r.code != 0 || cipher(&r).is_none_or(|c| c.is_empty() || c == "nil") {
        failures
            .push(format!("--mysql-ssl=on: want an encrypted session, got code {}: {}{}", r.code, r.stdout, r.stderr));
    }
    // Neither is what client and server pick by default (TLS_AES_256_GCM_SHA384).
    for name in ["ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_AES_128_GCM_SHA256"] {
        let r = run(&plain_dir, &[&format!("--mysql-ssl-cipher={name}")]);
        if r.code != 0 || cipher(&r).as_deref() != Some(name) {
            failures.push(format!(
                "--mysql-ssl-cipher={name}: want that cipher, got code {}: {}{}",
                r.code, r.stdout, r.stderr
            ));
        }
    }
    // The IANA spelling of a TLS 1.2 suite selects it too.
    let r = run(&plain_dir, &["--mysql-ssl-cipher=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]);
    if r.code != 0 || cipher(&r).as_deref() != Some("ECDHE-ECDSA-AES256-GCM-SHA384") {
        failures.push(format!(
            "IANA name: want ECDHE-ECDSA-AES256-GCM-SHA384, got code {}: {}{}",
            r.code, r.stdout, r.stderr
        ));
    }
    let r = run(&plain_dir, &["--mysql-ssl-cipher=RC4-MD5"]);
    if r.code == 0
        || !r
            .stdout
            .lines()
            .any(|l| l.starts_with("FATAL: ") && l.contains("invalid --mysql-ssl-cipher item 'RC4-MD5'"))
    {
        failures.push(format!(
            "unknown cipher: want one FATAL line naming it, got code {}: {}{}",
            r.code, r.stdout, r.stderr
        ));
    }
    // cacert.pem in the current directory: the chain is checked.
    for (ca, ok) in [("ca.crt", true), ("other.crt", false)] {
        let cwd = dir.join(format!("with-{ca}"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::copy(certs.join(ca), cwd.join("cacert.pem")).unwrap();
        let r = run(&cwd, &[]);
        let refused_for_the_certificate = r.code != 0 && format!("{}{}", r.stdout, r.stderr).contains("UnknownIssuer");
        if if ok { r.code != 0 } else { !refused_for_the_certificate } {
            failures
                .push(format!("cacert.pem = {ca}: want success {ok}, got code {}: {}{}", r.code, r.stdout, r.stderr));
        }
    }
    drop(server);
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
    let _ = std::fs::remove_dir_all(&dir);
}
