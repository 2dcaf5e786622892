//! `clients = { shards = N, launcher = "local" | "kubernetes", ... }` on a
//! workload or a configuration (docs/lab.md#sharded-runs).
//!
//! `local`: the lab runs each run of a test workload as N shard processes
//! of one run on this host (`run --shard=I/N --start-at=T
//! --shard-result=FILE`, docs/scale-out.md), merges them with `dbbench
//! merge`, and stores the merged run plus every shard's result.
//!
//! `kubernetes`: each run is `dbbench k8s --shards=N [the table's options]
//! --timeout=T --results-dir=WORKDIR/shards --format=json TEST run
//! [the run's options]` (an Indexed Job of N pods, docs/scale-out.md), the
//! lab's child; its stdout is the merged report, each shard's result comes
//! from its saved log. Decisions (docs/lab.md#sharded-runs):
//! - Only `external` configurations without a unix socket: a pod on a real
//!   cluster reaches neither a managed server's socket nor this host's
//!   loopback (a loopback DSN still works with the test suite's stand-in
//!   kubectl, whose pods are local processes; the lab cannot tell, so it is
//!   documented rather than refused).
//! - N is 1 to `MAX_KUBERNETES_SHARDS` (1000): every shard's whole result
//!   (histograms, interval series) is stored in the lab's store with the run
//!   and kept as a log under the lab's directory; more is a run for
//!   `dbbench k8s` by hand.
//! - The clients' CPU is not measured (they run on other machines): the OS
//!   samples' `client_cpu_pct` (and so `other_cpu_pct`) is absent, not 0.
//! - `dbbench k8s --timeout` is `start_grace` + the run's `run_timeout`
//!   (the Job's activeDeadlineSeconds); the lab kills the child only
//!   `KUBERNETES_CLEANUP_S` later, so it always gets to collect the logs and
//!   delete the run's objects itself.

use std::collections::BTreeMap;

/// How a run's clients are spread, as a spec says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clients {
    /// Shard processes (or pods) per run (1 with `local`: one process, not sharded).
    pub shards: u32,
    /// `launcher = "kubernetes"`: its options; None for `local`.
    pub kubernetes: Option<Box<Kubernetes>>,
}

/// The `dbbench k8s` options a `clients` table with `launcher = "kubernetes"`
/// gives (each key is the option's name with `_`; see `KUBERNETES_KEYS`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kubernetes {
    pub image: String,
    /// (key, value) pairs of string options, in `KUBERNETES_KEYS` order.
    pub options: Vec<(&'static str, String)>,
    /// `node_selector = { KEY = "VALUE", ... }`.
    pub node_selector: BTreeMap<String, String>,
    /// Seconds from applying the manifests to the shards' common start.
    pub start_grace: u64,
}

/// The most shards the lab starts for one run on this host.
pub const MAX_LOCAL_SHARDS: u32 = 64;

/// The most pods the lab starts for one run on Kubernetes (module doc).
pub const MAX_KUBERNETES_SHARDS: u32 = 1000;

/// `start_grace` when the table does not say (as `dbbench k8s`'s default):
/// image pull, scheduling, connecting.
pub const DEFAULT_START_GRACE_S: u64 = 60;

/// Seconds the lab gives `dbbench k8s` after its `--timeout` before killing
/// it: its wait's own 30 s of slack, then collecting the logs, deleting the
/// run's objects and merging.
pub const KUBERNETES_CLEANUP_S: u64 = 90;

/// The string keys of a kubernetes `clients` table, each `dbbench k8s`'s
/// option of that name (`_` for `-`), checked as `dbbench k8s` checks them.
const KUBERNETES_KEYS: &[&str] = &[
    "image_pull_policy",
    "binary",
    "namespace",
    "context",
    "kubectl",
    "spread",
    "topology_key",
    "service_account",
    "cpu",
    "memory",
    "secret_name",
];

/// Every key a clients table takes.
const ALL_KEYS: &str = "shards, launcher, and with launcher = \"kubernetes\": image, image_pull_policy, binary, namespace, context, kubectl, spread, topology_key, node_selector, service_account, cpu, memory, secret_name, start_grace";

impl Kubernetes {
    /// The `dbbench k8s` options (before `--shards`, `--timeout`,
    /// `--results-dir`, `--format` and the run's command line, which the
    /// runner adds).
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![format!("--image={}", self.image)];
        for (k, v) in &self.options {
            a.push(format!("--{}={v}", k.replace('_', "-")));
        }
        for (k, v) in &self.node_selector {
            a.push(format!("--node-selector={k}={v}"));
        }
        a.push(format!("--start-grace={}", self.start_grace));
        a
    }

    /// `dbbench k8s --timeout` for a run bounded by `run_timeout_s`.
    pub fn timeout_s(&self, run_timeout_s: u64) -> u64 {
        self.start_grace + run_timeout_s.max(1)
    }

    /// The bound on the whole `dbbench k8s` child.
    pub fn child_bound_s(&self, run_timeout_s: u64) -> u64 {
        self.timeout_s(run_timeout_s) + KUBERNETES_CLEANUP_S
    }
}

impl Clients {
    /// As the store keeps it in a configuration's definition.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({"shards": self.shards, "launcher": "local"});
        if let Some(k) = &self.kubernetes {
            v["launcher"] = "kubernetes".into();
            v["image"] = k.image.clone().into();
            for (key, value) in &k.options {
                v[*key] = value.clone().into();
            }
            if !k.node_selector.is_empty() {
                v["node_selector"] = serde_json::json!(k.node_selector);
            }
            v["start_grace"] = k.start_grace.into();
        }
        v
    }
}

/// Reads a `clients` table. The error is (the key at fault, the message).
pub fn parse(table: &toml::Table) -> Result<Clients, (&'static str, String)> {
    for key in table.keys() {
        let known = ["shards", "launcher", "image", "node_selector", "start_grace"].contains(&key.as_str())
            || KUBERNETES_KEYS.contains(&key.as_str());
        if !known {
            return Err(("clients", format!("unknown key `{key}`: a clients table takes {ALL_KEYS}")));
        }
    }
    let kubernetes = match table.get("launcher") {
        None => false,
        Some(toml::Value::String(l)) if l == "local" => false,
        Some(toml::Value::String(l)) if l == "kubernetes" => true,
        Some(v) => return Err(("launcher", format!("must be \"local\" or \"kubernetes\", not {v}"))),
    };
    let max = if kubernetes { MAX_KUBERNETES_SHARDS } else { MAX_LOCAL_SHARDS };
    let shards = match table.get("shards") {
        None => return Err(("shards", "is missing: clients = { shards = 4, launcher = \"local\" }".into())),
        Some(toml::Value::Integer(n)) if (1..=max as i64).contains(n) => *n as u32,
        Some(v) => {
            let why = if kubernetes {
                " with launcher = \"kubernetes\" (every shard's result is stored with the run; run more with `dbbench k8s` by hand)"
            } else {
                " with launcher = \"local\" (shards on this host)"
            };
            return Err(("shards", format!("must be a whole number from 1 to {max}{why}, not {v}")));
        }
    };
    if !kubernetes {
        let own = ["image", "node_selector", "start_grace"].iter().chain(KUBERNETES_KEYS);
        if let Some(k) = own.into_iter().find(|k| table.contains_key(**k)) {
            return Err((*k, "is an option of launcher = \"kubernetes\", not of launcher = \"local\"".to_string()));
        }
        return Ok(Clients { shards, kubernetes: None });
    }
    Ok(Clients { shards, kubernetes: Some(Box::new(parse_kubernetes(table)?)) })
}

/// The kubernetes options of a clients table (`launcher = "kubernetes"`).
fn parse_kubernetes(table: &toml::Table) -> Result<Kubernetes, (&'static str, String)> {
    let string = |key: &'static str| -> Result<Option<String>, (&'static str, String)> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) if s.trim().is_empty() => Err((key, "is empty".into())),
            Some(toml::Value::String(s)) if s.contains(['\n', '\r']) => Err((key, "holds a line break".into())),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err((key, format!("must be a string, not {v}"))),
        }
    };
    let image = string("image")?.ok_or((
        "image",
        "is missing: launcher = \"kubernetes\" needs the container image holding dbbench (docs/scale-out.md: the image)"
            .to_string(),
    ))?;
    let mut options = Vec::new();
    for key in KUBERNETES_KEYS {
        let Some(v) = string(key)? else { continue };
        let bad = |m: String| Err((*key, m));
        match *key {
            "image_pull_policy" if !["Always", "IfNotPresent", "Never"].contains(&v.as_str()) => {
                return bad(format!("must be \"Always\", \"IfNotPresent\" or \"Never\", not \"{v}\""))
            }
            "spread" if crate::k8s::manifest::Spread::parse(&v).is_none() => {
                return bad(format!(
                    "must be one of {}, not \"{v}\"",
                    crate::k8s::manifest::Spread::NAMES.map(|n| format!("\"{n}\"")).join(", ")
                ))
            }
            "namespace" => {
                if let Err(e) = crate::k8s::check_dns_label(&v) {
                    return bad(format!("\"{v}\": {e}"));
                }
            }
            "secret_name" | "service_account" => {
                if let Err(e) = crate::k8s::check_dns_subdomain(&v) {
                    return bad(format!("\"{v}\": {e}"));
                }
            }
            _ => {}
        }
        options.push((*key, v));
    }
    let mut node_selector = BTreeMap::new();
    match table.get("node_selector") {
        None => {}
        Some(toml::Value::Table(t)) => {
            for (k, v) in t {
                match v {
                    toml::Value::String(s) if !k.is_empty() && !k.contains('=') && !s.contains(['\n', '\r']) => {
                        node_selector.insert(k.clone(), s.clone());
                    }
                    _ => {
                        return Err((
                            "node_selector",
                            format!("`{k}`: write node_selector = {{ \"LABEL\" = \"VALUE\", ... }} with string values"),
                        ))
                    }
                }
            }
        }
        Some(v) => {
            return Err((
                "node_selector",
                format!("must be a table of node labels ({{ \"LABEL\" = \"VALUE\" }}), not {v}"),
            ))
        }
    }
    let start_grace = match table.get("start_grace") {
        None => DEFAULT_START_GRACE_S,
        Some(toml::Value::Integer(n)) if (1..=3600).contains(n) => *n as u64,
        Some(v) => return Err(("start_grace", format!("must be whole seconds from 1 to 3600, not {v}"))),
    };
    Ok(Kubernetes { image, options, node_selector, start_grace })
}

/// How long after the shards are started they begin measuring together
/// (`--start-at`): time to connect and run every client's `thread_init`,
/// 2 s plus 2 ms per client.
pub fn start_grace_ms(threads: u32) -> u64 {
    2000 + 2 * threads as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str::<toml::Table>(&format!("c = {text}")).unwrap()["c"].as_table().unwrap().clone()
    }

    fn kube(text: &str) -> Kubernetes {
        let c = parse(&table(&format!("{{ shards = 2, launcher = \"kubernetes\", image = \"img\"{text} }}")));
        *c.unwrap_or_else(|e| panic!("{text}: {e:?}")).kubernetes.unwrap()
    }

    fn refused(text: &str) -> (&'static str, String) {
        parse(&table(text)).expect_err(text)
    }

    #[test]
    fn clients_tables_are_read_or_refused_with_the_key_at_fault() {
        assert_eq!(parse(&table("{ shards = 4 }")), Ok(Clients { shards: 4, kubernetes: None }));
        assert_eq!(parse(&table("{ shards = 2, launcher = \"local\" }")), Ok(Clients { shards: 2, kubernetes: None }));
        assert_eq!(refused("{ shards = 0 }").0, "shards");
        assert_eq!(refused("{ shards = 65 }").0, "shards");
        assert!(refused("{ shards = 65 }").1.contains("from 1 to 64"));
        assert_eq!(refused("{ shards = \"4\" }").0, "shards");
        assert_eq!(refused("{ launcher = \"local\" }").0, "shards");
        assert!(refused("{ shards = 2, hosts = 3 }").1.contains("unknown key `hosts`"));
        let e = refused("{ shards = 2, launcher = \"ssh\" }");
        assert_eq!(e.0, "launcher");
        assert!(e.1.contains("must be \"local\" or \"kubernetes\""), "{}", e.1);
        // Kubernetes keys with the local launcher (or none) are refused, naming the key.
        for key in ["image = \"i\"", "namespace = \"n\"", "start_grace = 5", "node_selector = { a = \"b\" }"] {
            let e = refused(&format!("{{ shards = 2, {key} }}"));
            assert_eq!(e.0, key.split(' ').next().unwrap(), "{key}");
            assert!(e.1.contains("an option of launcher = \"kubernetes\""), "{}", e.1);
        }
    }

    #[test]
    fn kubernetes_tables_give_dbbench_k8s_options_key_by_key() {
        let c = parse(&table("{ shards = 1000, launcher = \"kubernetes\", image = \"reg/db:1\" }")).unwrap();
        assert_eq!(c.shards, 1000);
        let k = c.kubernetes.unwrap();
        assert_eq!(k.args(), ["--image=reg/db:1", "--start-grace=60"]);
        assert_eq!(k.timeout_s(100), 160);
        assert_eq!(k.child_bound_s(100), 160 + KUBERNETES_CLEANUP_S);
        for (key, value, arg) in [
            ("image_pull_policy", "IfNotPresent", "--image-pull-policy=IfNotPresent"),
            ("binary", "/opt/dbbench", "--binary=/opt/dbbench"),
            ("namespace", "bench", "--namespace=bench"),
            ("context", "lab-cluster", "--context=lab-cluster"),
            ("kubectl", "/usr/local/bin/kubectl", "--kubectl=/usr/local/bin/kubectl"),
            ("spread", "one-per-node", "--spread=one-per-node"),
            ("topology_key", "topology.kubernetes.io/zone", "--topology-key=topology.kubernetes.io/zone"),
            ("service_account", "bench", "--service-account=bench"),
            ("cpu", "3500m", "--cpu=3500m"),
            ("memory", "2Gi", "--memory=2Gi"),
            ("secret_name", "bench-passwords", "--secret-name=bench-passwords"),
        ] {
            let k = kube(&format!(", {key} = \"{value}\""));
            assert_eq!(k.args(), ["--image=img", arg, "--start-grace=60"], "{key}");
        }
        let k = kube(
            ", node_selector = { \"dbbench/client\" = \"yes\", \"kubernetes.io/arch\" = \"amd64\" }, start_grace = 5",
        );
        assert_eq!(
            k.args(),
            [
                "--image=img",
                "--node-selector=dbbench/client=yes",
                "--node-selector=kubernetes.io/arch=amd64",
                "--start-grace=5"
            ]
        );
        assert_eq!(k.timeout_s(0), 6);
        let json = Clients { shards: 2, kubernetes: Some(Box::new(k)) }.to_json();
        assert_eq!(json["launcher"], "kubernetes");
        assert_eq!(json["node_selector"]["kubernetes.io/arch"], "amd64");
        assert_eq!(json["start_grace"], 5);
    }

    #[test]
    fn kubernetes_tables_refuse_each_mistake_naming_the_key() {
        let k = |rest: &str| refused(&format!("{{ shards = 2, launcher = \"kubernetes\"{rest} }}"));
        let e = k("");
        assert_eq!(e.0, "image");
        assert!(e.1.contains("is missing"), "{}", e.1);
        assert_eq!(k(", image = \" \"").0, "image");
        assert_eq!(k(", image = 3").0, "image");
        let e = refused("{ shards = 1001, launcher = \"kubernetes\", image = \"i\" }");
        assert_eq!(e.0, "shards");
        assert!(e.1.contains("from 1 to 1000"), "{}", e.1);
        assert_eq!(refused("{ shards = 0, launcher = \"kubernetes\", image = \"i\" }").0, "shards");
        for (rest, key, want) in [
            (", image_pull_policy = \"Sometimes\"", "image_pull_policy", "must be \"Always\""),
            (", spread = \"wide\"", "spread", "must be one of \"soft\""),
            (", namespace = \"Bench\"", "namespace", "lowercase"),
            (", secret_name = \"a b\"", "secret_name", "not a valid Kubernetes object name"),
            (", service_account = \"-x\"", "service_account", "not a valid Kubernetes object name"),
            (", context = \"\"", "context", "is empty"),
            (", kubectl = 1", "kubectl", "must be a string"),
            (", cpu = \"4\\n\"", "cpu", "line break"),
            (", memory = 2", "memory", "must be a string"),
            (", topology_key = \"\"", "topology_key", "is empty"),
            (", binary = []", "binary", "must be a string"),
            (", node_selector = \"a=b\"", "node_selector", "must be a table"),
            (", node_selector = { a = 1 }", "node_selector", "string values"),
            (", start_grace = 0", "start_grace", "from 1 to 3600"),
            (", start_grace = \"5s\"", "start_grace", "from 1 to 3600"),
            (", replicas = 3", "clients", "unknown key `replicas`"),
        ] {
            let e = k(&format!(", image = \"i\"{rest}"));
            assert_eq!(e.0, key, "{rest}: {e:?}");
            assert!(e.1.contains(want), "{rest}: want {want:?} in {}", e.1);
        }
    }
}
