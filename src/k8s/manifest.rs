//! The manifests of one sharded run: a ConfigMap (the run's options as a
//! `--config-file`, the script and its local modules), a Secret with the
//! passwords (or the user's own Secret), and an Indexed Job whose pods run
//! `dbbench SCRIPT run --shard=job/N --start-at=T --shard-result=-`.
//! Every object carries the run's label, so cleanup deletes only ours.

use super::node::Node;

/// Where the ConfigMap is mounted in the pod; also the working directory,
/// so that `require("mymodule")` finds a module shipped beside the script
/// (sysbench searches `./?.lua` first).
pub const MOUNT_DIR: &str = "/etc/dbbench/run";
/// The ConfigMap key and file of the run's options (a sysbench config file).
pub const OPTIONS_FILE: &str = "dbbench-options.conf";
/// The label every object of a run carries: its run id.
pub const RUN_LABEL: &str = "dbbench/run";
/// The container's name (`kubectl logs -c`).
pub const CONTAINER: &str = "dbbench";
/// The uid/gid the pod runs as (the image's files need no other).
const RUN_AS: i64 = 65532;

/// How the shards' pods are spread over nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// A topology spread constraint, `ScheduleAnyway`: spread where the
    /// cluster can, never left Pending for it (the default).
    Soft,
    /// A topology spread constraint, `DoNotSchedule`: at most one pod more
    /// on any topology domain than on another; pods wait for room.
    Hard,
    /// Required pod anti-affinity: never two shards of the run on one
    /// topology domain (a node by default); a cluster with fewer domains
    /// than shards leaves the rest Pending and the run fails.
    OnePerDomain,
    /// Nothing: the scheduler decides.
    None,
}

impl Spread {
    pub const NAMES: [&'static str; 4] = ["soft", "hard", "one-per-node", "none"];

    pub fn parse(s: &str) -> Option<Spread> {
        Some(match s {
            "soft" => Spread::Soft,
            "hard" => Spread::Hard,
            "one-per-node" => Spread::OnePerDomain,
            "none" => Spread::None,
            _ => return None,
        })
    }
}

/// Where the pods' passwords come from.
#[derive(Debug, Clone)]
pub enum Passwords {
    /// No password (trust, or the server needs none).
    None,
    /// A Secret we create: (environment variable, password) pairs, from
    /// `dbbench k8s`'s own environment.
    Generated(Vec<(String, String)>),
    /// The user's Secret of that name: its keys become the pods'
    /// environment (DBBENCH_MYSQL_PASSWORD, DBBENCH_PGSQL_PASSWORD).
    Existing(String),
}

/// A file shipped in the ConfigMap: its key and its path under [`MOUNT_DIR`].
#[derive(Debug, Clone)]
pub struct ShippedFile {
    pub key: String,
    pub path: String,
    pub text: String,
}

/// Everything the manifests say.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Object names and the run label's value.
    pub run_id: String,
    pub namespace: Option<String>,
    pub shards: u32,
    pub image: String,
    pub image_pull_policy: Option<String>,
    /// The dbbench binary in the image.
    pub binary: String,
    pub spread: Spread,
    pub topology_key: String,
    pub node_selector: Vec<(String, String)>,
    pub service_account: Option<String>,
    /// Requests = limits (Guaranteed QoS when both are set).
    pub cpu: Option<String>,
    pub memory: Option<String>,
    /// The config file's text (the run's options).
    pub options_text: String,
    /// The script (if it is a file) and the local modules it requires.
    pub files: Vec<ShippedFile>,
    /// The test name or the script's path under [`MOUNT_DIR`].
    pub script_arg: String,
    /// Options without a value (`--mysql-ssl`): a config file cannot say them.
    pub bare_options: Vec<String>,
    /// The shared start, unix milliseconds.
    pub start_at_ms: u64,
    pub passwords: Passwords,
    /// The Job's activeDeadlineSeconds: the cluster stops it even if the
    /// launcher is gone.
    pub deadline_secs: u64,
}

impl Plan {
    /// The labels of every object and pod of the run.
    pub fn labels(&self) -> Node {
        Node::map()
            .with("app.kubernetes.io/name", "dbbench")
            .with("app.kubernetes.io/managed-by", "dbbench")
            .with(RUN_LABEL, self.run_id.as_str())
    }

    /// The label selector of the run's objects.
    pub fn selector(&self) -> String {
        format!("{RUN_LABEL}={}", self.run_id)
    }

    fn metadata(&self) -> Node {
        let mut m = Node::map().with("name", self.run_id.as_str());
        if let Some(ns) = &self.namespace {
            m.put("namespace", ns.as_str());
        }
        m.with("labels", self.labels())
    }

    /// The container's arguments (the command is [`Plan::binary`]).
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![format!("--config-file={MOUNT_DIR}/{OPTIONS_FILE}")];
        a.extend(self.bare_options.iter().cloned());
        a.push(self.script_arg.clone());
        a.push("run".into());
        a.push(format!("--shard=job/{}", self.shards));
        a.push(format!("--start-at={}", self.start_at_ms));
        a.push("--shard-result=-".into());
        a
    }

    /// The manifests in apply order: ConfigMap, Secret (when we make one),
    /// Job. `hide_secrets` puts `<hidden>` in place of each password (what
    /// `--dry-run` prints: passwords never reach a terminal or a file).
    pub fn manifests(&self, hide_secrets: bool) -> Vec<Node> {
        let mut out = vec![self.config_map()];
        if let Passwords::Generated(pairs) = &self.passwords {
            let mut data = Node::map();
            for (var, password) in pairs {
                data.put(var, if hide_secrets { crate::secret::MASK } else { password.as_str() });
            }
            out.push(
                Node::map()
                    .with("apiVersion", "v1")
                    .with("kind", "Secret")
                    .with("metadata", self.metadata())
                    .with("type", "Opaque")
                    .with("stringData", data),
            );
        }
        out.push(self.job());
        out
    }

    fn config_map(&self) -> Node {
        let mut data = Node::map().with(OPTIONS_FILE, self.options_text.as_str());
        for f in &self.files {
            data.put(&f.key, f.text.as_str());
        }
        Node::map()
            .with("apiVersion", "v1")
            .with("kind", "ConfigMap")
            .with("metadata", self.metadata())
            .with("data", data)
    }

    fn job(&self) -> Node {
        let n = i64::from(self.shards);
        let spec = Node::map()
            .with("completionMode", "Indexed")
            .with("completions", n)
            .with("parallelism", n)
            // A retried shard would run its share after the others ended:
            // a failed shard is reported as failed, never run again.
            .with("backoffLimit", 0i64)
            .with("activeDeadlineSeconds", self.deadline_secs as i64)
            // If the launcher is gone, the cluster still removes the Job
            // and its pods an hour after it ended.
            .with("ttlSecondsAfterFinished", 3600i64)
            .with(
                "template",
                Node::map().with("metadata", Node::map().with("labels", self.labels())).with("spec", self.pod_spec()),
            );
        Node::map()
            .with("apiVersion", "batch/v1")
            .with("kind", "Job")
            .with("metadata", self.metadata())
            .with("spec", spec)
    }

    fn pod_spec(&self) -> Node {
        let mut spec = Node::map().with("restartPolicy", "Never");
        if let Some(sa) = &self.service_account {
            spec.put("serviceAccountName", sa.as_str());
        }
        // A shard never talks to the Kubernetes API.
        spec.put("automountServiceAccountToken", false);
        if !self.node_selector.is_empty() {
            let mut sel = Node::map();
            for (k, v) in &self.node_selector {
                sel.put(k, v.as_str());
            }
            spec.put("nodeSelector", sel);
        }
        let ours = Node::map().with("matchLabels", Node::map().with(RUN_LABEL, self.run_id.as_str()));
        match self.spread {
            Spread::Soft | Spread::Hard => {
                let when = if self.spread == Spread::Soft { "ScheduleAnyway" } else { "DoNotSchedule" };
                spec.put(
                    "topologySpreadConstraints",
                    vec![Node::map()
                        .with("maxSkew", 1i64)
                        .with("topologyKey", self.topology_key.as_str())
                        .with("whenUnsatisfiable", when)
                        .with("labelSelector", ours)],
                );
            }
            Spread::OnePerDomain => {
                let term = Node::map().with("labelSelector", ours).with("topologyKey", self.topology_key.as_str());
                spec.put(
                    "affinity",
                    Node::map().with(
                        "podAntiAffinity",
                        Node::map().with("requiredDuringSchedulingIgnoredDuringExecution", vec![term]),
                    ),
                );
            }
            Spread::None => {}
        }
        spec.put(
            "securityContext",
            Node::map()
                .with("runAsNonRoot", true)
                .with("runAsUser", RUN_AS)
                .with("runAsGroup", RUN_AS)
                .with("seccompProfile", Node::map().with("type", "RuntimeDefault")),
        );
        spec.put("containers", vec![self.container()]);
        let mut items = vec![Node::map().with("key", OPTIONS_FILE).with("path", OPTIONS_FILE)];
        items.extend(self.files.iter().map(|f| Node::map().with("key", f.key.as_str()).with("path", f.path.as_str())));
        spec.put(
            "volumes",
            vec![
                Node::map()
                    .with("name", "run")
                    .with("configMap", Node::map().with("name", self.run_id.as_str()).with("items", items)),
                Node::map().with("name", "tmp").with("emptyDir", Node::map()),
            ],
        );
        spec
    }

    fn container(&self) -> Node {
        let mut c = Node::map().with("name", CONTAINER).with("image", self.image.as_str());
        if let Some(p) = &self.image_pull_policy {
            c.put("imagePullPolicy", p.as_str());
        }
        c.put("command", vec![Node::from(self.binary.as_str())]);
        c.put("args", self.args().into_iter().map(Node::from).collect::<Vec<_>>());
        c.put("workingDir", MOUNT_DIR);
        let secret = match &self.passwords {
            Passwords::None => None,
            Passwords::Generated(_) => Some(self.run_id.as_str()),
            Passwords::Existing(name) => Some(name.as_str()),
        };
        if let Some(name) = secret {
            c.put("envFrom", vec![Node::map().with("secretRef", Node::map().with("name", name))]);
        }
        if self.cpu.is_some() || self.memory.is_some() {
            let mut q = Node::map();
            if let Some(cpu) = &self.cpu {
                q.put("cpu", cpu.as_str());
            }
            if let Some(mem) = &self.memory {
                q.put("memory", mem.as_str());
            }
            c.put("resources", Node::map().with("requests", q.clone()).with("limits", q));
        }
        c.put(
            "securityContext",
            Node::map()
                .with("allowPrivilegeEscalation", false)
                .with("readOnlyRootFilesystem", true)
                .with("capabilities", Node::map().with("drop", vec![Node::from("ALL")])),
        );
        c.put(
            "volumeMounts",
            vec![
                Node::map().with("name", "run").with("mountPath", MOUNT_DIR).with("readOnly", true),
                Node::map().with("name", "tmp").with("mountPath", "/tmp"),
            ],
        );
        c
    }
}

/// The manifests as YAML documents (`---` between them), with a comment
/// line when passwords were hidden.
pub fn to_yaml(docs: &[Node], hidden_passwords: bool) -> String {
    let mut out = String::new();
    if hidden_passwords {
        out.push_str(
            "# The Secret's passwords are shown as <hidden>: dbbench never prints them. Create the Secret\n\
             # yourself (kubectl create secret generic NAME --from-env-file=...) and pass --secret-name=NAME.\n",
        );
    }
    for (i, d) in docs.iter().enumerate() {
        if i > 0 || hidden_passwords {
            out.push_str("---\n");
        }
        out.push_str(&d.to_yaml());
    }
    out
}

/// The manifests as one JSON `v1/List` (what the launcher applies).
pub fn to_json_list(docs: &[Node]) -> String {
    Node::map().with("apiVersion", "v1").with("kind", "List").with("items", docs.to_vec()).to_json()
}
