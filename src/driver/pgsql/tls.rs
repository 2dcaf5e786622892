//! TLS for the PostgreSQL driver: `--pgsql-sslmode` as libpq reads it, on
//! rustls (with ring, which the MySQL crate's TLS already brings in).
//!
//! | mode | TLS | certificate |
//! |---|---|---|
//! | `disable` | never | – |
//! | `allow`, `prefer` | when the server offers it | not checked |
//! | `require` | always (no connection without) | not checked |
//! | `verify-ca` | always | must chain to the root certificates |
//! | `verify-full` | always | must chain to them and name the host |
//!
//! Root certificates come from `--pgsql-sslrootcert`, else `PGSSLROOTCERT`,
//! else `~/.postgresql/root.crt`, as libpq looks for them. The name `system`
//! means the system's trusted roots, as in libpq 16 with OpenSSL:
//! `SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else the distribution's CA
//! bundle; with it the mode defaults to `verify-full` and no other mode is
//! accepted (any public CA is trusted, so the host name must be checked). A client
//! certificate (for `cert` authentication, or `clientcert=` in pg_hba.conf)
//! comes from `--pgsql-sslcert`/`--pgsql-sslkey`, else `PGSSLCERT`/`PGSSLKEY`,
//! else `~/.postgresql/postgresql.crt`/`.key` when that file exists, again as
//! libpq; unlike libpq, the key file's permissions are not checked. On a unix
//! socket there is no TLS, whatever the mode, as in libpq. Under `allow`
//! and `prefer` a failed TLS attempt (handshake, or the server refusing
//! the encrypted session) is retried without TLS, as libpq does; connect
//! and cancel alike. Differences from
//! libpq: `allow` tries TLS first (libpq tries without first); `require`
//! never checks the certificate (libpq checks it when a root.crt exists).

use std::path::Path;
use std::sync::Arc;

use postgres::config::SslMode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Checks a mode's name (for unix sockets, where no TLS is set up).
pub fn check_mode(mode: &str) -> Result<(), String> {
    match mode {
        "disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full" => Ok(()),
        m => Err(format!(
            "invalid --pgsql-sslmode value '{m}': use disable, allow, prefer, require, verify-ca or verify-full"
        )),
    }
}

/// The TLS file options: `--pgsql-sslrootcert`, `--pgsql-sslcert`,
/// `--pgsql-sslkey` (empty: libpq's defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsFiles<'a> {
    /// Root certificates for verify-ca/verify-full.
    pub rootcert: &'a str,
    /// The client's certificate chain (PEM).
    pub cert: &'a str,
    /// The client certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: &'a str,
}

/// The SSL mode to use: `mode` as given, or `verify-full` when the root
/// certificates are `system` and no mode was given (`mode_given`), as libpq.
/// With `system` roots any other mode is an error, as in libpq.
pub fn effective_mode(mode: &str, mode_given: bool, rootcert: &str) -> Result<String, String> {
    if rootcert_path(rootcert) != SYSTEM_ROOTS || mode == "verify-full" {
        return Ok(mode.to_string());
    }
    if !mode_given {
        return Ok("verify-full".to_string());
    }
    check_mode(mode)?;
    Err(format!(
        "--pgsql-sslmode={mode} cannot be used with system root certificates (--pgsql-sslrootcert or PGSSLROOTCERT 'system'): use --pgsql-sslmode=verify-full, as libpq requires"
    ))
}

/// The root certificate name that means the system's trusted roots.
const SYSTEM_ROOTS: &str = "system";

/// CA bundles of the common distributions (Debian/Ubuntu, Fedora/RHEL,
/// openSUSE, Alpine/BSD), the first that exists being the system's roots
/// when `SSL_CERT_FILE` is not set.
const SYSTEM_BUNDLES: [&str; 5] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The crate's SSL mode and the TLS connector for `--pgsql-sslmode=mode`
/// (None: plain connections only).
pub fn connector(mode: &str, files: TlsFiles) -> Result<(SslMode, Option<MakeRustlsConnect>), String> {
    check_mode(mode)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        "disable" => return Ok((SslMode::Disable, None)),
        "allow" | "prefer" | "require" => Arc::new(AnyCertificate(provider.clone())),
        _ => {
            // verify-ca or verify-full (check_mode let nothing else through).
            let roots = root_store(mode, files.rootcert)?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("--pgsql-sslmode={mode}: the root certificates cannot verify servers: {e}"))?;
            if mode == "verify-ca" {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match client_certificate(files)? {
        Some((chain, key, path)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| format!("client certificate {path}: it and its key cannot be used together ({e})"))?,
        None => builder.with_no_client_auth(),
    };
    let ssl_mode = if matches!(mode, "allow" | "prefer") { SslMode::Prefer } else { SslMode::Require };
    Ok((ssl_mode, Some(MakeRustlsConnect::new(config))))
}

/// The root certificates' file: the first of `--pgsql-sslrootcert`,
/// `PGSSLROOTCERT`, `~/.postgresql/root.crt`.
fn rootcert_path(rootcert: &str) -> String {
    if !rootcert.is_empty() {
        rootcert.to_string()
    } else if let Some(p) = std::env::var("PGSSLROOTCERT").ok().filter(|p| !p.is_empty()) {
        p
    } else {
        format!("{}/.postgresql/root.crt", std::env::var("HOME").unwrap_or_default())
    }
}

/// The root certificates for verify-ca/verify-full (see `rootcert_path`).
fn root_store(mode: &str, rootcert: &str) -> Result<rustls::RootCertStore, String> {
    let path = rootcert_path(rootcert);
    if path == SYSTEM_ROOTS {
        return system_roots();
    }
    let pem = std::fs::read(&path).map_err(|e| {
        format!("--pgsql-sslmode={mode} checks the server's certificate against root certificates, but {path} cannot be read ({e}): give --pgsql-sslrootcert=FILE (PEM)")
    })?;
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("--pgsql-sslrootcert {path}: not a PEM certificate file ({e})"))?;
        store
            .add(cert)
            .map_err(|e| format!("--pgsql-sslrootcert {path}: a certificate cannot be used as a root ({e})"))?;
    }
    if store.is_empty() {
        return Err(format!("--pgsql-sslrootcert {path}: no certificate in the file (PEM expected)"));
    }
    Ok(store)
}

/// The system's trusted roots: the certificates of `SSL_CERT_FILE` (else
/// the first CA bundle of `SYSTEM_BUNDLES` that exists) and of the files in
/// `SSL_CERT_DIR`, as OpenSSL's default verify paths. Certificates rustls
/// cannot use are skipped, as OpenSSL skips what it cannot parse.
fn system_roots() -> Result<rustls::RootCertStore, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|p| !p.is_empty());
    let mut files: Vec<String> = match env("SSL_CERT_FILE") {
        Some(f) => vec![f],
        None => SYSTEM_BUNDLES.iter().find(|f| Path::new(f).is_file()).map(|f| f.to_string()).into_iter().collect(),
    };
    if let Some(dir) = env("SSL_CERT_DIR") {
        // OpenSSL takes a colon-separated list of directories.
        for d in dir.split(':').filter(|d| !d.is_empty()) {
            let Ok(entries) = std::fs::read_dir(d) else { continue };
            let mut names: Vec<String> = entries.flatten().map(|e| e.path().display().to_string()).collect();
            names.sort();
            files.extend(names);
        }
    }
    let mut store = rustls::RootCertStore::empty();
    for f in &files {
        let Ok(pem) = std::fs::read(f) else { continue };
        store.add_parsable_certificates(CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok));
    }
    if store.is_empty() {
        return Err(format!(
            "--pgsql-sslrootcert=system: no usable root certificate found (looked in {}): install the ca-certificates package, or set SSL_CERT_FILE to a PEM bundle",
            if files.is_empty() { SYSTEM_BUNDLES.join(", ") } else { files.join(", ") }
        ));
    }
    Ok(store)
}

/// The client certificate chain and key, if one is configured (the
/// certificate's path comes third, for messages). A file named by an
/// option or by `PGSSLCERT`/`PGSSLKEY` must be usable; the default
/// `~/.postgresql/postgresql.crt` may be absent, and when it or its key is
/// unusable the connection goes on without a certificate, with a warning
/// (a stray file must not stop a benchmark that does not need it).
#[allow(clippy::type_complexity)]
fn client_certificate(
    files: TlsFiles,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String)>, String> {
    let home = || std::env::var("HOME").unwrap_or_default();
    let env = |name: &str| std::env::var(name).ok().filter(|p| !p.is_empty());
    // (path, where it came from; None: libpq's default file)
    let (cert_path, cert_from) = match (files.cert, env("PGSSLCERT")) {
        ("", None) => (format!("{}/.postgresql/postgresql.crt", home()), None),
        ("", Some(p)) => (p, Some("PGSSLCERT")),
        (p, _) => (p.to_string(), Some("--pgsql-sslcert")),
    };
    let (key_path, key_from) = match (files.key, env("PGSSLKEY")) {
        ("", None) => (format!("{}/.postgresql/postgresql.key", home()), "the default key file"),
        ("", Some(p)) => (p, "PGSSLKEY"),
        (p, _) => (p.to_string(), "--pgsql-sslkey"),
    };
    let loaded = (|| {
        let pem = std::fs::read(&cert_path)
            .map_err(|e| (e.kind() == std::io::ErrorKind::NotFound, format!("{cert_path} cannot be read ({e})")))?;
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| (false, format!("{cert_path} is not a PEM certificate file ({e})")))?;
        if chain.is_empty() {
            return Err((false, format!("{cert_path} holds no certificate (PEM expected)")));
        }
        let key_pem = std::fs::read(&key_path)
            .map_err(|e| (false, format!("its key {key_path} ({key_from}) cannot be read ({e})")))?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|e| (false, format!("its key {key_path} ({key_from}) holds no usable private key (PEM PKCS#8, PKCS#1 or SEC1 expected; {e})")))?;
        // What rustls will do with them (load the key, match it to the
        // certificate), done here so that a failure takes this path.
        rustls::sign::CertifiedKey::from_der(chain.clone(), key.clone_key(), &rustls::crypto::ring::default_provider())
            .map_err(|e| (false, format!("it and its key {key_path} ({key_from}) cannot be used together ({e})")))?;
        Ok((chain, key))
    })();
    match (loaded, cert_from) {
        (Ok((chain, key)), _) => Ok(Some((chain, key, cert_path))),
        (Err((true, _)), None) => Ok(None),
        (Err((_, why)), None) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                crate::log::warning(&format!(
                    "client certificate not used: {why}; give --pgsql-sslcert/--pgsql-sslkey, or remove the file"
                ))
            });
            Ok(None)
        }
        (Err((_, why)), Some(from)) => Err(format!(
            "client certificate from {from}: {why}; give --pgsql-sslcert=FILE and --pgsql-sslkey=FILE (PEM)"
        )),
    }
}

/// `allow`/`prefer`/`require`: encryption without authentication, as libpq
/// gives it. The handshake's signatures are still checked (the session key
/// belongs to whoever holds the certificate's key); the certificate is not.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain to a root is checked, the host name is not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end, intermediates, name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_roots_imply_and_require_verify_full() {
        assert_eq!(effective_mode("prefer", false, "system").unwrap(), "verify-full");
        assert_eq!(effective_mode("verify-full", true, "system").unwrap(), "verify-full");
        assert_eq!(effective_mode("prefer", false, "/etc/root.pem").unwrap(), "prefer");
        assert_eq!(effective_mode("require", true, "/etc/root.pem").unwrap(), "require");
        for weak in ["disable", "prefer", "require", "verify-ca"] {
            let err = effective_mode(weak, true, "system").unwrap_err();
            assert!(
                !err.contains('\n') && err.contains(weak) && err.contains("use --pgsql-sslmode=verify-full"),
                "{err}"
            );
        }
        assert!(effective_mode("bogus", true, "system").unwrap_err().contains("invalid --pgsql-sslmode value 'bogus'"));
    }
}
