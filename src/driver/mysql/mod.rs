//! MySQL / MariaDB driver on the synchronous `mysql` crate: one `mysql::Conn`
//! per connection, server-side prepared statements kept by handle (the
//! crate's statement cache is disabled, so executing never looks SQL up),
//! results fully buffered as text cells (every result of a multi-statement
//! query or a CALL; the first is returned, the others wait for
//! `next_result`).
//!
//! Endpoints: each new connection takes the next host:port (all ports of a
//! host, then the next host) or, when `--mysql-socket` is set, the next
//! socket. Unlike libmysqlclient, host `localhost` is reached by TCP on
//! 127.0.0.1 (the client has no compiled-in default socket path); give
//! `--mysql-socket` to use a unix socket.
//!
//! The folder: `protocol.rs` what both clients share (error classes, LOAD
//! DATA, literals); `crate_conn.rs` the connection on the `mysql` crate;
//! dbbench's own protocol client in `native.rs` (handshake, commands, the
//! `Connection`), `wire.rs` (packet framing), `auth.rs` (password
//! scrambles) and `rows.rs` (result rows, binary parameters).

mod auth;
mod crate_conn;
mod native;
mod protocol;
mod rows;
// The socket and its waits are shared with the native PostgreSQL client (`pgsql::wire`).
pub(super) mod wire;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use mysql::{ClientIdentity, Conn, Opts, OptsBuilder, SslOpts};

use crate::driver::emulation::{ps_mode_disabled, Slots};
use crate::driver::socket::Endpoint;
use crate::driver::{Connection, DbError, Driver, ErrorAction, ErrorKind, Outcome, StmtId, Value};
use crate::options::{OptKind, OptionSpec, Options};
use crate_conn::{connect_error, MysqlConnection};
use protocol::quote_literal;

/// Options of the MySQL driver, with sysbench 1.0.20's defaults.
pub fn options() -> Vec<OptionSpec> {
    vec![
        OptionSpec::new("mysql_host", OptKind::List, "localhost", "MySQL server host(s); connections go round-robin (localhost = TCP 127.0.0.1)"),
        OptionSpec::new("mysql_port", OptKind::List, "3306", "MySQL server port(s), combined with every host"),
        OptionSpec::new("mysql_socket", OptKind::List, "", "MySQL unix socket file(s); when set, hosts and ports are ignored"),
        OptionSpec::new("mysql_user", OptKind::String, "sbtest", "MySQL user"),
        OptionSpec::new(
            "mysql_password",
            OptKind::String,
            "",
            "MySQL password (else from the environment: DBBENCH_MYSQL_PASSWORD, then MYSQL_PWD; keeps it out of ps)",
        ),
        OptionSpec::new("mysql_db", OptKind::String, "sbtest", "MySQL database name"),
        OptionSpec::new(
            "mysql_ssl",
            OptKind::Bool,
            "off",
            "Require TLS; uses client-cert.pem/client-key.pem and cacert.pem from the current directory if present, else does not verify the server certificate",
        ),
        OptionSpec::new(
            "mysql_ssl_cipher",
            OptKind::String,
            "",
            "TLS cipher suites to offer with --mysql-ssl, separated by ':' (OpenSSL or IANA names, e.g. ECDHE-RSA-AES128-GCM-SHA256:TLS_AES_256_GCM_SHA384); empty: the TLS library's defaults",
        ),
        OptionSpec::new("mysql_compression", OptKind::Bool, "off", "Use the compressed client/server protocol (zlib)"),
        OptionSpec::new(
            "mysql_ignore_errors",
            OptKind::List,
            "1213,1020,1205",
            "MySQL error numbers that restart the event (2006/2013/2011/2055 reconnect first), or 'all'",
        ),
        OptionSpec::new("mysql_dry_run", OptKind::Bool, "off", "Do not connect: every statement succeeds without a server and counts as 'other'"),
        OptionSpec::new(
            "mysql_debug",
            OptKind::Bool,
            "off",
            "sysbench: trace all client library calls. Accepted for old command lines; dbbench's client has no such trace (a warning says so)",
        ),
        OptionSpec::new(
            "mysql_client",
            OptKind::String,
            "native",
            "Client implementation: native (dbbench's own protocol code, lowest overhead) or crate (the mysql crate; used anyway for TLS, compression and other auth plugins)",
        ),
    ]
}

/// The round-robin order: every socket, or every port of each host in turn.
pub(crate) fn endpoints(hosts: &[String], ports: &[String], sockets: &[String]) -> Result<Vec<Endpoint>, String> {
    if !sockets.is_empty() {
        return Ok(sockets.iter().map(|s| Endpoint::Socket(s.clone())).collect());
    }
    let ports = ports
        .iter()
        .map(|p| {
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("invalid --mysql-port value '{p}': use port numbers 1-65535"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let eps: Vec<Endpoint> =
        hosts.iter().flat_map(|h| ports.iter().map(move |p| Endpoint::Tcp(h.clone(), *p))).collect();
    if eps.is_empty() {
        return Err("--mysql-host and --mysql-port must name at least one host and port".into());
    }
    Ok(eps)
}

/// Errors that can be ignored: `None` means `all`.
fn parse_ignore(items: &[String]) -> Result<Option<Vec<i64>>, String> {
    if items.iter().any(|s| s.eq_ignore_ascii_case("all")) {
        return Ok(None);
    }
    items
        .iter()
        .map(|s| {
            s.parse::<i64>()
                .map_err(|_| format!("invalid --mysql-ignore-errors item '{s}': use MySQL error numbers, or 'all'"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The cipher suites rustls (with ring) offers, by OpenSSL name and IANA
/// name; `--mysql-ssl-cipher` accepts either, as libmariadb (OpenSSL) and
/// MySQL's documentation use both.
const CIPHER_NAMES: &[(&str, &str)] = &[
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    ("TLS_CHACHA20_POLY1305_SHA256", "TLS13_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
];

/// `--mysql-ssl-cipher`: a ':'-separated list (',' and spaces also
/// separate) of cipher suite names; empty means the library's defaults.
fn cipher_suites(list: &str) -> Result<Vec<rustls::SupportedCipherSuite>, String> {
    let mut out = Vec::new();
    for name in list.split([':', ',', ' ']).map(str::trim).filter(|n| !n.is_empty()) {
        let rustls_name = CIPHER_NAMES
            .iter()
            .find(|(openssl, iana)| name.eq_ignore_ascii_case(openssl) || name.eq_ignore_ascii_case(iana))
            .map(|(_, r)| *r)
            .ok_or_else(|| {
                let known: Vec<&str> = CIPHER_NAMES.iter().map(|(o, _)| *o).collect();
                format!(
                    "invalid --mysql-ssl-cipher item '{name}': dbbench's TLS (rustls) offers only {}",
                    known.join(", ")
                )
            })?;
        let suite = rustls::crypto::ring::ALL_CIPHER_SUITES
            .iter()
            .find(|s| s.suite().as_str() == Some(rustls_name))
            .ok_or_else(|| format!("invalid --mysql-ssl-cipher item '{name}': not in this build's TLS library"))?;
        out.push(*suite);
    }
    Ok(out)
}

/// TLS settings for `--mysql-ssl` (files looked up in the current directory)
/// offering `ciphers` (empty: the library's defaults).
fn ssl_opts(ciphers: &[rustls::SupportedCipherSuite]) -> SslOpts {
    let mut ssl = SslOpts::default().with_cipher_suites(ciphers);
    if Path::new("client-cert.pem").exists() && Path::new("client-key.pem").exists() {
        ssl = ssl
            .with_client_identity(Some(ClientIdentity::new(Path::new("client-cert.pem"), Path::new("client-key.pem"))));
    }
    if Path::new("cacert.pem").exists() {
        // Verify the chain against the given CA, but not the host name: servers
        // usually carry auto-generated certificates (like libmysqlclient's VERIFY_CA).
        ssl.with_root_cert_path(Some(Path::new("cacert.pem"))).with_danger_skip_domain_validation(true)
    } else {
        // ssl-mode REQUIRED semantics: encrypted, certificate not verified.
        ssl.with_danger_accept_invalid_certs(true).with_danger_skip_domain_validation(true)
    }
}

#[derive(Debug)]
struct Config {
    endpoints: Vec<Endpoint>,
    user: String,
    password: String,
    db: String,
    ssl: Option<SslOpts>,
    compress: bool,
    ignore: Option<Vec<i64>>,
    ps_disabled: bool,
    dry_run: bool,
    /// Connect with [`native`] ([`native_protocol`]); it falls back
    /// to the crate for what it cannot serve (other auth plugins).
    native: bool,
}

impl Config {
    fn opts(&self, ep: &Endpoint) -> Opts {
        let non_empty = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
        let b = OptsBuilder::new()
            .user(non_empty(&self.user))
            .pass(non_empty(&self.password))
            .db_name(non_empty(&self.db))
            // Statements are kept by handle; a cache would only add lookups and hold server statements.
            .stmt_cache_size(0)
            // Go exactly where asked, not to the server's socket after a TCP handshake.
            .prefer_socket(false)
            .tcp_nodelay(true)
            .ssl_opts(self.ssl.clone())
            .compress(self.compress.then(mysql::Compression::default));
        let b = match ep {
            Endpoint::Tcp(h, p) => {
                b.ip_or_hostname(Some(if h == "localhost" { "127.0.0.1" } else { h.as_str() })).tcp_port(*p)
            }
            Endpoint::Socket(s) => b.socket(Some(s.as_str())),
        };
        b.into()
    }
}

/// The MySQL driver: configuration plus the round-robin counter.
#[derive(Debug)]
pub struct MysqlDriver {
    cfg: Arc<Config>,
    next: AtomicUsize,
}

/// Builds the driver from the options; the error is one line naming the bad option.
pub fn create(opts: &Options) -> Result<Box<dyn Driver>, String> {
    if opts.bool("mysql_debug") {
        crate::log::warning(
            "--mysql-debug: dbbench's MySQL client does not trace its calls; the option changes nothing",
        );
    }
    Ok(Box::new(MysqlDriver::new(opts)?))
}

/// Whether connections use dbbench's own protocol client
/// (`driver/mysql/native.rs`), whose socket waits go through `crate::sched`
/// and so can be multiplexed; TLS and compression need the `mysql` crate.
pub fn native_protocol(opts: &Options) -> bool {
    opts.str("mysql_client") == "native" && !opts.bool("mysql_ssl") && !opts.bool("mysql_compression")
}

impl MysqlDriver {
    fn new(opts: &Options) -> Result<MysqlDriver, String> {
        if !matches!(opts.str("mysql_client"), "native" | "crate") {
            return Err(format!("invalid --mysql-client value '{}': use native or crate", opts.str("mysql_client")));
        }
        let cfg = Config {
            endpoints: endpoints(&opts.list("mysql_host"), &opts.list("mysql_port"), &opts.list("mysql_socket"))?,
            user: opts.str("mysql_user").to_string(),
            password: opts.str("mysql_password").to_string(),
            db: opts.str("mysql_db").to_string(),
            ssl: if opts.bool("mysql_ssl") {
                Some(ssl_opts(&cipher_suites(opts.str("mysql_ssl_cipher"))?))
            } else {
                None
            },
            compress: opts.bool("mysql_compression"),
            ignore: parse_ignore(&opts.list("mysql_ignore_errors"))?,
            ps_disabled: ps_mode_disabled(opts)?,
            dry_run: opts.bool("mysql_dry_run"),
            native: native_protocol(opts),
        };
        Ok(MysqlDriver { cfg: Arc::new(cfg), next: AtomicUsize::new(0) })
    }

    /// The endpoint for the next connection (round robin).
    pub(crate) fn next_endpoint(&self) -> &Endpoint {
        let eps = &self.cfg.endpoints;
        &eps[self.next.fetch_add(1, Ordering::Relaxed) % eps.len()]
    }
}

impl Driver for MysqlDriver {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn connect(&self) -> Result<Box<dyn Connection>, DbError> {
        if self.cfg.dry_run {
            return Ok(Box::new(DryRunConnection { next: 0 }));
        }
        let ep = self.next_endpoint().clone();
        if self.cfg.native {
            let params = native::Params {
                endpoint: &ep,
                user: &self.cfg.user,
                password: &self.cfg.password,
                db: &self.cfg.db,
                ps_disabled: self.cfg.ps_disabled,
                local_infile: true,
            };
            match native::NativeConnection::connect(&params) {
                Ok(c) => return Ok(Box::new(c)),
                Err(native::ConnectError::Failed(e)) => return Err(e),
                // e.g. an auth plugin we do not speak: the crate does.
                Err(native::ConnectError::Unsupported(_)) => {}
            }
        }
        let opts = self.cfg.opts(&ep);
        let conn = Conn::new(opts.clone()).map_err(|e| connect_error(&ep, &self.cfg.user, e, false))?;
        let conn_id = Arc::new(AtomicU32::new(conn.connection_id()));
        Ok(Box::new(MysqlConnection {
            conn,
            opts,
            endpoint: ep,
            cfg: self.cfg.clone(),
            stmts: Slots::default(),
            conn_id,
            pending: VecDeque::new(),
        }))
    }

    fn classify(&self, err: &DbError) -> ErrorAction {
        if err.kind == ErrorKind::ConnectFailed {
            return ErrorAction::Fatal;
        }
        let listed = self.cfg.ignore.as_ref().is_none_or(|codes| codes.contains(&err.code));
        match (listed, err.kind) {
            (false, _) => ErrorAction::Fatal,
            (true, ErrorKind::ConnectionLost) => ErrorAction::Reconnect,
            (true, _) => ErrorAction::Restart,
        }
    }
}

/// `--mysql-dry-run`: no server; every statement succeeds with no rows.
struct DryRunConnection {
    next: usize,
}

impl Connection for DryRunConnection {
    fn query(&mut self, _sql: &str) -> Result<Outcome, DbError> {
        Ok(Outcome::Affected(0))
    }
    fn prepare(&mut self, _sql: &str) -> Result<StmtId, DbError> {
        self.next += 1;
        Ok(StmtId(self.next - 1))
    }
    fn execute(&mut self, _stmt: StmtId, _params: &[Value]) -> Result<Outcome, DbError> {
        Ok(Outcome::Affected(0))
    }
    fn close_statement(&mut self, _stmt: StmtId) {}
    fn reconnect(&mut self) -> Result<(), DbError> {
        Ok(())
    }
    fn quote(&self, s: &str) -> String {
        quote_literal(s, false)
    }
    fn server_version(&mut self) -> String {
        "dry-run".into()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        check_bad_rows, check_bulk_load, check_cancel, check_text_round_trip, connect_new, driver_opts, insert_path,
        own_bulk_load, rows, test_env, txt,
    };
    use super::native::{NativeConnection, Params as WireParams};
    use super::protocol::{kind_for_code, load_data_sql, local_infile_refused};
    use super::*;
    use crate::driver::ResultSet;

    fn opts(extra: &[(&str, &str)]) -> Options {
        driver_opts(options(), extra)
    }

    /// Options for the dev server over its unix socket, or None (skipped).
    fn sock(extra: &[(&str, &str)]) -> Option<Options> {
        let s = test_env("DBBENCH_TEST_MYSQL_SOCKET")?;
        let mut o = opts(extra);
        o.set("mysql_socket", &s);
        Some(o)
    }

    /// Options for the dev server over TCP on 127.0.0.1, or None (skipped).
    fn tcp(extra: &[(&str, &str)]) -> Option<Options> {
        let p = test_env("DBBENCH_TEST_MYSQL_PORT")?;
        let mut o = opts(extra);
        o.set("mysql_host", "127.0.0.1");
        o.set("mysql_port", &p);
        Some(o)
    }

    fn connect(o: &Options) -> Box<dyn Connection> {
        connect_new(create(o))
    }

    #[test]
    fn round_robin_order() {
        let d = MysqlDriver::new(&opts(&[("mysql_host", "a,b"), ("mysql_port", "1,2")])).expect("driver");
        let got: Vec<String> = (0..5).map(|_| d.next_endpoint().to_string()).collect();
        assert_eq!(got, ["a:1", "a:2", "b:1", "b:2", "a:1"]);
        let d = MysqlDriver::new(&opts(&[("mysql_host", "h,h"), ("mysql_socket", "/s1,/s2")])).expect("driver");
        let got: Vec<String> = (0..3).map(|_| d.next_endpoint().to_string()).collect();
        assert_eq!(got, ["socket /s1", "socket /s2", "socket /s1"]);
    }

    #[test]
    fn bad_options_are_one_line() {
        for (k, v) in [("mysql_port", "33o6"), ("mysql_ignore_errors", "1213,deadlock"), ("db_ps_mode", "off")] {
            let err = create(&opts(&[(k, v)])).err().expect("must fail");
            assert!(!err.contains('\n') && err.contains(v.rsplit(',').next().unwrap_or(v)), "{err}");
        }
    }

    #[test]
    fn classify_follows_ignore_list() {
        let e = |kind, code| DbError { kind, code, sqlstate: String::new(), message: String::new() };
        let d = create(&opts(&[])).expect("driver");
        assert_eq!(d.classify(&e(ErrorKind::Deadlock, 1213)), ErrorAction::Restart);
        assert_eq!(d.classify(&e(ErrorKind::UniqueViolation, 1062)), ErrorAction::Fatal);
        assert_eq!(d.classify(&e(ErrorKind::ConnectionLost, 2013)), ErrorAction::Fatal);
        let d = create(&opts(&[("mysql_ignore_errors", "2013,1062")])).expect("driver");
        assert_eq!(d.classify(&e(ErrorKind::ConnectionLost, 2013)), ErrorAction::Reconnect);
        assert_eq!(d.classify(&e(ErrorKind::UniqueViolation, 1062)), ErrorAction::Restart);
        let d = create(&opts(&[("mysql_ignore_errors", "all")])).expect("driver");
        assert_eq!(d.classify(&e(ErrorKind::Other, 1064)), ErrorAction::Restart);
        assert_eq!(d.classify(&e(ErrorKind::ConnectFailed, 1045)), ErrorAction::Fatal);
    }

    /// The native protocol client and the `mysql` crate return the same
    /// cells for every column type, in the text and the binary protocol.
    #[test]
    fn native_client_matches_the_crate() {
        let (Some(native), Some(via_crate)) = (sock(&[("mysql_client", "native")]), sock(&[("mysql_client", "crate")]))
        else {
            return;
        };
        let mut setup = connect(&native);
        setup.query("DROP TABLE IF EXISTS t_native_vs_crate").unwrap();
        setup
            .query(
                "CREATE TABLE t_native_vs_crate (i INT, u INT UNSIGNED, ti TINYINT, si SMALLINT, bi BIGINT UNSIGNED, \
                 f FLOAT, d DOUBLE, dec_ DECIMAL(10,3), dt DATE, dtm DATETIME(6), ts TIMESTAMP NULL, tm TIME(3), \
                 y YEAR, v VARCHAR(20), b BLOB, e ENUM('x','y'), n INT NULL)",
            )
            .unwrap();
        setup
            .query(
                "INSERT INTO t_native_vs_crate VALUES (-5, 4000000000, -128, -32768, 18446744073709551615, 1.5, -2.25e-7, \
                 -12.345, '2024-02-29', '2024-02-29 13:14:15.123456', '2020-01-01 00:00:00', '-838:59:58.5', 2024, \
                 'a''b\\\\c', x'00ff', 'y', NULL)",
            )
            .unwrap();
        let sql = "SELECT * FROM t_native_vs_crate WHERE i = ?";
        let run = |o: &Options| {
            let mut c = connect(o);
            let text = rows(c.query("SELECT * FROM t_native_vs_crate"));
            let id = c.prepare(sql).unwrap();
            let bin = rows(c.execute(id, &[Value::Int(-5)]));
            let empty = c.execute(id, &[Value::Int(1)]);
            let upd = c.query("UPDATE t_native_vs_crate SET n = n WHERE i = 12345");
            (text, bin, empty, upd)
        };
        let a = run(&native);
        let b = run(&via_crate);
        assert_eq!(a.0, b.0, "text protocol");
        assert_eq!(a.1, b.1, "binary protocol");
        assert_eq!(a.0.len(), 1);
        assert_eq!(a.2, b.2);
        assert_eq!(a.3, Ok(Outcome::Affected(0)));
        assert_eq!(a.3, b.3);
        setup.query("DROP TABLE t_native_vs_crate").unwrap();
    }

    #[test]
    fn statements_results_and_errors() {
        let Some(o) = sock(&[]) else { return };
        let mut c = connect(&o);
        assert!(c.server_version().contains('.'));
        c.query("DROP TABLE IF EXISTS dbb_my_basic").expect("drop");
        assert_eq!(
            c.query("CREATE TABLE dbb_my_basic (id INT PRIMARY KEY, k BIGINT, c CHAR(20), d DOUBLE, n DECIMAL(6,2), t DATETIME(3), dt DATE, tm TIME)"),
            Ok(Outcome::Affected(0))
        );
        let ins = c.prepare("INSERT INTO dbb_my_basic (id, k, c, d) VALUES (?, ?, ?, ?)").expect("prepare");
        assert_eq!(
            c.execute(ins, &[Value::Int(1), Value::Int(-5), Value::Text("x'y".into()), Value::Double(0.25)]),
            Ok(Outcome::Affected(1))
        );
        assert_eq!(c.execute(ins, &[Value::Int(2), Value::Null, Value::Null, Value::Null]), Ok(Outcome::Affected(1)));
        c.query("UPDATE dbb_my_basic SET n = 12.5, t = '2024-02-03 04:05:06.789', dt = '2024-02-03', tm = '-27:01:02' WHERE id = 1")
            .expect("update");
        let sel =
            c.prepare("SELECT id, k, c, d, n, t, dt, tm FROM dbb_my_basic WHERE id >= ? ORDER BY id").expect("prepare");
        let want = vec![
            vec![
                txt("1"),
                txt("-5"),
                txt("x'y"),
                txt("0.25"),
                txt("12.50"),
                txt("2024-02-03 04:05:06.789"),
                txt("2024-02-03"),
                txt("-27:01:02"),
            ],
            vec![txt("2"), None, None, None, None, None, None, None],
        ];
        assert_eq!(rows(c.execute(sel, &[Value::Int(1)])), want);
        // The text protocol gives the same cells.
        assert_eq!(rows(c.query("SELECT id, k, c, d, n, t, dt, tm FROM dbb_my_basic ORDER BY id")), want);
        // A result set is Rows even when empty; an UPDATE matching nothing is Affected(0).
        assert_eq!(c.execute(sel, &[Value::Int(99)]), Ok(Outcome::Rows(ResultSet::new(8))));
        let upd = c.prepare("UPDATE dbb_my_basic SET k = k + 1 WHERE id = ?").expect("prepare");
        assert_eq!(c.execute(upd, &[Value::Int(99)]), Ok(Outcome::Affected(0)));
        assert_eq!(c.execute(upd, &[Value::Int(1)]), Ok(Outcome::Affected(1)));
        assert_eq!(c.execute(upd, &[]).map_err(|e| e.kind), Err(ErrorKind::Other));
        // Multi-statement text: first result reported, the rest drained.
        assert_eq!(rows(c.query("SELECT 1; SELECT 2; DO 3")), vec![vec![txt("1")]]);
        assert_eq!(rows(c.query("SELECT 'next'")), vec![vec![txt("next")]]);

        // Duplicate key → UniqueViolation; fatal by default, ignorable when listed.
        let err = c.execute(ins, &[Value::Int(1), Value::Null, Value::Null, Value::Null]).expect_err("dup");
        assert_eq!((err.kind, err.code, err.sqlstate.as_str()), (ErrorKind::UniqueViolation, 1062, "23000"));
        assert_eq!(create(&o).expect("driver").classify(&err), ErrorAction::Fatal);
        let mut o2 = o.clone();
        o2.set("mysql_ignore_errors", "1062");
        assert_eq!(create(&o2).expect("driver").classify(&err), ErrorAction::Restart);

        // Syntax error → Other, fatal.
        let err = c.query("SELEKT 1").expect_err("syntax");
        assert_eq!((err.kind, err.code), (ErrorKind::Other, 1064));
        assert_eq!(create(&o).expect("driver").classify(&err), ErrorAction::Fatal);
        let err = c.prepare("SELEKT ?").expect_err("syntax");
        assert_eq!(err.code, 1064);

        // Closed statements fail cleanly; their ids are reused.
        c.close_statement(upd);
        assert!(c.execute(upd, &[Value::Int(1)]).is_err());
        assert_eq!(c.prepare("SELECT 1").expect("prepare"), upd);
        c.query("DROP TABLE dbb_my_basic").expect("drop");
    }

    #[test]
    fn text_round_trips_in_both_ps_modes() {
        let tricky = "it's \\ a \"test\" \0 \n \r \x1a ? done";
        for mode in ["auto", "disable"] {
            let Some(o) = sock(&[("db_ps_mode", mode)]) else { return };
            check_text_round_trip(connect(&o).as_mut(), &format!("dbb_my_rt_{mode}"), "DOUBLE", tricky, mode);
        }
    }

    #[test]
    fn unsupported_ps_falls_back_to_emulation() {
        let Some(o) = sock(&[]) else { return };
        let mut c = connect(&o);
        // PREPARE cannot itself be prepared (ER_UNSUPPORTED_PS).
        let s = c.prepare("PREPARE dbb_ps FROM 'SELECT ? + 1'").expect("emulated");
        assert_eq!(c.execute(s, &[]), Ok(Outcome::Affected(0)));
        assert_eq!(rows(c.query("EXECUTE dbb_ps USING 41")), vec![vec![txt("42")]]);
    }

    #[test]
    fn connect_failures_are_clear() {
        let Some(p) = test_env("DBBENCH_TEST_MYSQL_PORT") else { return };
        let Some(o) = tcp(&[("mysql_password", "wrong")]) else { return };
        let err = create(&o).expect("driver").connect().err().expect("bad password");
        assert_eq!((err.kind, err.code), (ErrorKind::ConnectFailed, 1045));
        assert!(err.message.contains(&format!("127.0.0.1:{p} as 'sbtest'")), "{err}");
        let o = opts(&[("mysql_host", "127.0.0.1"), ("mysql_port", "1")]);
        let d = create(&o).expect("driver");
        let err = d.connect().err().expect("refused");
        assert_eq!((err.kind, err.code), (ErrorKind::ConnectFailed, 2003));
        assert!(err.message.starts_with("cannot connect to MySQL at 127.0.0.1:1 as 'sbtest': "), "{err}");
        assert_eq!(d.classify(&err), ErrorAction::Fatal);
        eprintln!("refused: {err}");
        let o = opts(&[("mysql_socket", "/nonexistent/my.sock")]);
        let err = create(&o).expect("driver").connect().err().expect("no socket");
        assert_eq!((err.kind, err.code), (ErrorKind::ConnectFailed, 2002));
        assert!(err.message.contains("socket /nonexistent/my.sock"), "{err}");
        let Some(o) = tcp(&[("mysql_db", "dbb_no_such_db")]) else { return };
        let err = create(&o).expect("driver").connect().err().expect("unknown db");
        assert_eq!((err.kind, err.code), (ErrorKind::ConnectFailed, 1049));
        // The dev server has no TLS: a required TLS connection must fail clearly.
        let Some(o) = tcp(&[("mysql_ssl", "on")]) else { return };
        match create(&o).expect("driver").connect() {
            Ok(_) => {} // a TLS-enabled server is fine too
            Err(err) => {
                assert_eq!((err.kind, err.code), (ErrorKind::ConnectFailed, 2026));
                assert!(err.message.contains("TLS"), "{err}");
            }
        }
    }

    #[test]
    fn killed_connection_reconnects_with_statements() {
        let Some(o) = tcp(&[("mysql_ignore_errors", "2013,2006,1927")]) else { return };
        let drv = create(&o).expect("driver");
        let mut a = drv.connect().expect("a");
        let mut b = drv.connect().expect("b");
        let s = a.prepare("SELECT ? + 1").expect("prepare");
        let e = a.prepare("SELECT CONNECTION_ID()").expect("prepare");
        let id = rows(a.execute(e, &[])).remove(0).remove(0).expect("id");
        b.query(&format!("KILL {}", String::from_utf8_lossy(&id))).expect("kill");
        let err = a.execute(s, &[Value::Int(1)]).expect_err("killed");
        eprintln!("killed connection: {err}");
        assert_eq!(err.kind, ErrorKind::ConnectionLost, "{err}");
        assert_eq!(drv.classify(&err), ErrorAction::Reconnect);
        a.reconnect().expect("reconnect");
        assert_eq!(rows(a.execute(s, &[Value::Int(1)])), vec![vec![txt("2")]]);
        let id2 = rows(a.execute(e, &[])).remove(0).remove(0);
        assert_ne!(id2, Some(id));
    }

    #[test]
    fn socket_list_round_robin_connects() {
        let Some(s) = test_env("DBBENCH_TEST_MYSQL_SOCKET") else { return };
        let Some(p) = test_env("DBBENCH_TEST_MYSQL_PORT") else { return };
        let o = opts(&[("mysql_host", "127.0.0.1,localhost"), ("mysql_port", &p), ("mysql_compression", "on")]);
        let d = create(&o).expect("driver");
        for _ in 0..3 {
            let mut c = d.connect().expect("tcp connect");
            assert_eq!(rows(c.query("SELECT 1")), vec![vec![txt("1")]]);
        }
        let d = create(&opts(&[("mysql_socket", &format!("{s},{s}"))])).expect("driver");
        for _ in 0..3 {
            d.connect().expect("socket connect");
        }
    }

    /// Bad rows for LOAD DATA LOCAL: the server converts or skips and warns; we report the first warning.
    const LOAD_DATA_BAD_ROWS: [(&str, &str); 4] = [
        ("x|1.00|1995-01-01|A|n\n", "Incorrect integer value: 'x'"),
        ("2|1.00|1995-13-45|A|n\n", "Data truncated for column 'd'"),
        ("3|1.00\n", "doesn't contain data for all columns"),
        ("4|1.00|1995-01-01|A|n|extra\n", "was truncated; it contained more data"),
    ];

    /// 100 000 rows through LOAD DATA LOCAL from memory with the native
    /// client and through the crate's local-infile handler, and through the
    /// INSERT path; bad rows are errors naming the server's first warning.
    #[test]
    fn bulk_load_native_crate_and_insert() {
        let (Some(native), Some(via_crate)) = (sock(&[]), sock(&[("mysql_client", "crate")])) else { return };
        let mut c = connect(&native);
        check_bulk_load(c.as_mut(), "dbb_my_bulk_native", true, &own_bulk_load);
        check_bad_rows(c.as_mut(), "dbb_my_bulk_native", &own_bulk_load, &LOAD_DATA_BAD_ROWS);
        let mut k = connect(&via_crate);
        check_bulk_load(k.as_mut(), "dbb_my_bulk_crate", true, &own_bulk_load);
        check_bad_rows(k.as_mut(), "dbb_my_bulk_crate", &own_bulk_load, &LOAD_DATA_BAD_ROWS);
        check_bulk_load(c.as_mut(), "dbb_my_bulk_insert", true, &insert_path);
        // The dev server runs in strict mode: a bad INSERT value is an error by itself.
        let strict = [
            ("x|1.00|1995-01-01|A|n\n", "Incorrect integer value: 'x'"),
            ("2|1.00|1995-13-45|A|n\n", "Incorrect date value: '1995-13-45'"),
            ("3|1.00\n", "has 2 field(s), 5 column(s)"),
        ];
        check_bad_rows(c.as_mut(), "dbb_my_bulk_insert", &insert_path, &strict);
    }

    /// `bulk_load_ascii` (bytes as they are, no character set conversion)
    /// on both clients: ASCII rows load exactly; a UTF-8 row is an error
    /// naming the cause, never a mangled value, and the session goes on.
    #[test]
    fn ascii_bulk_load_is_exact_and_refuses_other_text() {
        use super::super::test_support::{bulk_table_sql, chunks_of, lines_of, BULK_COLUMNS};
        let (Some(native), Some(via_crate)) = (sock(&[]), sock(&[("mysql_client", "crate")])) else { return };
        let ascii: Vec<u8> = (1..=3000)
            .flat_map(|i| format!("{i}|{i}.25|1995-03-0{}|A|plain ascii note {i}\n", i % 9 + 1).into_bytes())
            .collect();
        // The bad row's start is in the 37-byte piece before the one holding its é.
        let mut mixed = ascii.clone();
        mixed.extend_from_slice("3001|1.00|1995-01-01|A|plain ascii note l'\u{e9}t\u{e9}\n".as_bytes());
        let text = |c: &mut Box<dyn Connection>, sql: &str| match c.query(sql) {
            Ok(Outcome::Rows(rs)) => rs.text_rows(),
            other => panic!("{sql}: {other:?}"),
        };
        for (client, o) in [("native", &native), ("crate", &via_crate)] {
            let mut c = connect(o);
            let table = format!("dbb_my_bulk_ascii_{client}");
            c.query(&format!("DROP TABLE IF EXISTS {table}")).expect("drop");
            c.query(&bulk_table_sql(&table)).expect("create");
            assert_eq!(c.bulk_load_ascii(&table, &BULK_COLUMNS, &mut lines_of(&ascii, 400)), Ok(3000), "{client}");
            let sums = text(&mut c, &format!("SELECT SUM(k), SUM(price), MAX(note) FROM {table}"));
            assert_eq!(
                sums,
                vec![vec![
                    Some("4501500".to_string()),
                    Some("4502250.00".to_string()),
                    Some("plain ascii note 999".to_string())
                ]],
                "{client}"
            );
            c.query(&format!("DELETE FROM {table}")).expect("delete");
            let e = c.bulk_load_ascii(&table, &BULK_COLUMNS, &mut chunks_of(&mixed, 37)).expect_err("non-ASCII");
            assert!(e.message.contains("non-ASCII byte"), "{client}: {e}");
            // Whole rows only: no row cut at a piece boundary, none of the bad one.
            let bad =
                text(&mut c, &format!("SELECT COUNT(*) FROM {table} WHERE note <> CONCAT('plain ascii note ', k)"));
            assert_eq!(bad, vec![vec![Some("0".to_string())]], "{client}: the session goes on, and no row is mangled");
            // A utf16 column takes ASCII as two bytes a character: converted from utf8mb4, not loaded as bytes.
            c.query(&format!("DROP TABLE {table}")).expect("drop");
            c.query(&bulk_table_sql(&table).replace("note VARCHAR(44)", "note VARCHAR(44) CHARACTER SET utf16"))
                .expect("create utf16");
            assert_eq!(c.bulk_load_ascii(&table, &BULK_COLUMNS, &mut lines_of(&ascii, 400)), Ok(3000), "{client}");
            let notes = text(
                &mut c,
                &format!("SELECT MAX(note), COUNT(*) FROM {table} WHERE note = CONCAT('plain ascii note ', k)"),
            );
            assert_eq!(
                notes,
                vec![vec![Some("plain ascii note 999".to_string()), Some("3000".to_string())]],
                "{client}"
            );
            c.query(&format!("DROP TABLE {table}")).expect("drop");
        }
    }

    /// A session without CLIENT_LOCAL_FILES is refused LOAD DATA LOCAL by the
    /// server exactly as under local_infile=OFF (error 4166 on MariaDB,
    /// 1148/3948 elsewhere), which tests the fallback to INSERTs without
    /// touching the shared server's global settings. Without strict mode a
    /// bad value is only a warning, which the fallback turns into an error.
    #[test]
    fn bulk_load_falls_back_to_insert_when_local_infile_is_refused() {
        let Some(socket) = test_env("DBBENCH_TEST_MYSQL_SOCKET") else { return };
        let ep = Endpoint::Socket(socket);
        let params = WireParams {
            endpoint: &ep,
            user: "sbtest",
            password: "",
            db: "sbtest",
            ps_disabled: false,
            local_infile: false,
        };
        let Ok(mut c) = NativeConnection::connect(&params) else { panic!("connect") };
        c.query("DROP TABLE IF EXISTS dbb_my_bulk_refused").expect("drop");
        c.query(&super::super::test_support::bulk_table_sql("dbb_my_bulk_refused")).expect("create");
        let err = c
            .query(&load_data_sql("dbb_my_bulk_refused", &super::super::test_support::BULK_COLUMNS, false))
            .expect_err("refused");
        eprintln!("refused: {err}");
        assert!(local_infile_refused(&err), "{err}");
        check_bulk_load(&mut c, "dbb_my_bulk_refused", true, &own_bulk_load);
        c.query("SET SESSION sql_mode = ''").expect("sql_mode");
        let lenient = [
            ("x|1.00|1995-01-01|A|n\n", "Incorrect integer value: 'x'"),
            ("2|1.00|1995-13-45|A|n\n", "Data truncated for column 'd'"),
        ];
        check_bad_rows(&mut c, "dbb_my_bulk_refused", &own_bulk_load, &lenient);
    }

    /// `KILL QUERY` through a fresh connection stops `SELECT SLEEP(30)` on both
    /// clients; the error is Cancelled (1317), fatal unless listed.
    #[test]
    fn cancel_stops_a_running_statement() {
        for client in ["native", "crate"] {
            let Some(o) = sock(&[("mysql_client", client)]) else { return };
            let mut c = connect(&o);
            let err = check_cancel(c.as_mut(), "SELECT SLEEP(30)");
            assert_eq!(err.code, 1317, "{client}: {err}");
            assert_eq!(create(&o).expect("driver").classify(&err), ErrorAction::Fatal);
            let mut listed = o.clone();
            listed.set("mysql_ignore_errors", "1317");
            assert_eq!(create(&listed).expect("driver").classify(&err), ErrorAction::Restart);
        }
        assert_eq!(kind_for_code(1969), ErrorKind::Cancelled);
        assert_eq!(kind_for_code(3024), ErrorKind::Cancelled);
    }

    #[test]
    fn dry_run_needs_no_server() {
        let o = opts(&[("mysql_dry_run", "on"), ("mysql_port", "1")]);
        let mut c = connect(&o);
        let s = c.prepare("SELECT ?").expect("prepare");
        assert_eq!(c.execute(s, &[Value::Int(1)]), Ok(Outcome::Affected(0)));
        assert_eq!(c.query("SELECT 1"), Ok(Outcome::Affected(0)));
    }
}
