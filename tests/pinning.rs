//! CPU pinning in lab specs (docs/lab.md#pinning): a managed server, the
//! run's client and the lab's other processes really run where the spec
//! says, as the kernel reports it (/proc/PID/status `Cpus_allowed_list`)
//! while they run; the store and the reports keep what was read back; bad
//! `cpus` keys stop the lab with one line.

mod common;

use common::{dbbench_in, have_server_binaries, tempdir};
use rusqlite::Connection;
use std::path::Path;

fn write_spec(dir: &Path, text: &str) -> String {
    let p = dir.join("spec.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn strings(c: &Connection, sql: &str) -> Vec<String> {
    let mut st = c.prepare(sql).unwrap();
    let rows = st.query_map([], |r| r.get::<_, Option<String>>(0)).unwrap();
    rows.map(|r| r.unwrap().unwrap_or_else(|| "NULL".into())).collect()
}

/// The CPUs this test process may use (two are needed to tell places apart).
fn own_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

#[test]
fn a_pinned_lab_runs_server_client_and_hooks_where_the_spec_says() {
    if !have_server_binaries() {
        return;
    }
    let cpus = own_cpus();
    if cpus.len() < 2 {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("pinning needs 2 CPUs to tell the server's from the client's; this host allows {cpus:?}");
        }
        common::skipped(&format!("one CPU allowed ({cpus:?}): nothing to tell apart"));
        return;
    }
    let (server, client) = (cpus[0], cpus[1]);
    let dir = tempdir("pinning-lab");
    // The command workload reads, while it and the server run, what the
    // kernel allows itself (its awk, a child of the pinned sh) and every
    // thread of the server; the before_run hook reads its own.
    let spec = write_spec(
        &dir,
        &format!(
            r#"
[experiment]
name = "pinned"
threads = [1]
time = 1
sample_interval = 1
options = {{ tables = 1, table-size = 1000 }}

[cpus]
server = "{server}"
clients = "{client}"
other = "{client}"

[[configuration]]
name = "mariadb"
server = "mariadb"
server_options = ["--innodb_buffer_pool_size=32M", "--max_connections=50"]

[[workload]]
test = "oltp_point_select"

[[workload]]
name = "where"
command = ["sh", "-c", "awk '/^Cpus_allowed_list/ {{print \"client=\" $2}}' /proc/self/status; echo server_threads=$(ls /proc/$DBBENCH_SERVER_PID/task | wc -l); echo server_threads_elsewhere=$(grep -h '^Cpus_allowed_list' /proc/$DBBENCH_SERVER_PID/task/*/status | grep -cv \"[[:space:]]{server}$\")"]
metrics = {{ client = 'client=(\S+)', server_threads = 'server_threads=([0-9]+)', server_threads_elsewhere = 'server_threads_elsewhere=([0-9]+)' }}

[hooks]
before_run = [{{ shell = "grep '^Cpus_allowed_list' /proc/self/status" }}]
"#
        ),
    );
    let r = dbbench_in(&dir, &["lab", "run", &spec]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let c = Connection::open(dir.join("dbbench-lab/results.sqlite")).unwrap();
    // Seen live by the command workload.
    let m = |name: &str| strings(&c, &format!("SELECT CAST(value AS TEXT) FROM run_metrics WHERE name = '{name}'"));
    assert_eq!(m("client"), [format!("{client}.0")], "the command ran on the clients' CPU");
    assert!(m("server_threads")[0].parse::<f64>().unwrap() >= 2.0, "{:?}", m("server_threads"));
    assert_eq!(m("server_threads_elsewhere"), ["0.0"], "every server thread is on the server's CPU");
    // Read back and stored for every run, the dbbench client's too.
    let stored = strings(
        &c,
        "SELECT cl.workload || ' ' || r.server_cpus || ' ' || r.client_cpus FROM runs r JOIN cells cl ON r.cell_id = cl.id ORDER BY r.seq",
    );
    assert_eq!(
        stored,
        [format!("oltp_point_select {server} {client}"), format!("where {server} {client}")],
        "{}",
        r.stderr
    );
    let hooks = strings(&c, "SELECT detail FROM events WHERE kind = 'hook_output'");
    assert!(
        hooks.len() == 2 && hooks.iter().all(|h| h.contains(&format!("Cpus_allowed_list:\\t{client}"))),
        "{hooks:?}"
    );
    assert!(strings(&c, "SELECT definition FROM configurations")[0]
        .contains(&format!(r#""cpus":{{"clients":"{client}","other":"{client}","server":"{server}"}}"#)));
    // Shown where the configuration is.
    let shown = "mariadb (mariadb: MariaDB 1";
    let text = dbbench_in(&dir, &["report", &spec]);
    let line = text.stdout.lines().find(|l| l.contains(shown)).unwrap_or_else(|| panic!("{}", text.stdout));
    assert!(line.ends_with(&format!("; CPUs server {server}, client {client})")), "{line}");
    let html = dir.join("r.html");
    let h = dbbench_in(&dir, &["report", &spec, &format!("--export-html={}", html.display())]);
    assert_eq!(h.code, 0, "{}", h.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(&format!("<td class=\"l\">server {server}, client {client}</td>")), "no CPUs in the HTML");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_cpus_keys_stop_the_lab_with_one_line() {
    let dir = tempdir("pinning-bad");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let past: usize = online.trim().rsplit(['-', ',']).next().unwrap().parse::<usize>().unwrap() + 1;
    let base = |cpus: &str, config: &str, workload: &str| {
        format!(
            "[experiment]\nname = \"bad\"\nthreads = [1]\ntime = 1\n{cpus}\n[[configuration]]\nname = \"s\"\nserver = \"sqlite\"\n{config}\n[[workload]]\ntest = \"oltp_point_select\"\n{workload}\n"
        )
    };
    let cases: Vec<(String, String)> = vec![
        (
            base(&format!("[cpus]\nclients = \"{past}\""), "", ""),
            format!("spec.toml:6: cpus.clients: CPU {past} is not online (online: {})", online.trim()),
        ),
        (
            base("[cpus]\nclient = \"0\"", "", ""),
            "spec.toml:6: cpus.client: unknown key; use server, clients or other".into(),
        ),
        (
            base("[cpus]\nother = \"1-0\"", "", ""),
            "spec.toml:6: cpus.other: '1-0' is not a CPU list (1-0 runs backwards)".into(),
        ),
        (base("[cpus]\nother = true", "", ""), "spec.toml:6: cpus.other: must be a CPU list".into()),
        (
            base("", "", "cpus = { server = \"0\" }"),
            "spec.toml:12: workload[1].cpus.server: a managed server's CPUs are set per configuration".into(),
        ),
        (
            base("", "cpus = { server = \"0\" }", ""),
            "spec.toml:9: configuration[1].cpus.server: applies to servers dbbench starts, not server = \"sqlite\""
                .into(),
        ),
        (base("[cpus]\nclients = { node = 4096 }", "", ""), "spec.toml:6: cpus.clients.node: ".into()),
    ];
    for (text, want) in cases {
        let spec = write_spec(&dir, &text);
        for cmd in ["plan", "run"] {
            let r = dbbench_in(&dir, &["lab", cmd, &spec]);
            assert_eq!(r.code, 1, "{text}\n{}{}", r.stdout, r.stderr);
            assert_eq!(r.stderr.lines().count(), 1, "{text}\n{}", r.stderr);
            assert!(r.stderr.contains(&want), "{text}\nwant: {want}\ngot: {}", r.stderr);
        }
    }
    assert!(!dir.join("dbbench-lab/results.sqlite").exists(), "nothing ran");
    // `dbbench server start --cpus` checks the same way, before anything is made.
    let r = dbbench_in(&dir, &["server", "start", "--kind=mariadb", "--dir", "srv", &format!("--cpus={past}")]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains(&format!("CPU {past} is not online")), "{}", r.stderr);
    assert!(!dir.join("srv").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
