//! `dbbench k8s`: one sharded run on Kubernetes (docs/scale-out.md).
//! Builds the manifests (`manifest`), applies them with the user's
//! `kubectl` (`launch`), waits for the Indexed Job, collects each shard's
//! `dbbench-shard-result:` line from its pod's log, merges them with
//! `dbbench merge`, and deletes what it created (also on Ctrl-C and on
//! failure). `--dry-run` prints the manifests.

pub mod launch;
pub mod manifest;
pub mod node;

use crate::exit::Exit;
use manifest::{Passwords, Plan, ShippedFile, Spread, MOUNT_DIR};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Run one benchmark as N shards on Kubernetes: an Indexed Job started together, merged exactly (docs/scale-out.md).
///
/// Usage: dbbench k8s --shards=N --image=IMAGE [K8S OPTIONS] SCRIPT [RUN OPTIONS] [run]
///
/// Everything from SCRIPT on is the run's sysbench command line, as `dbbench SCRIPT run` takes it; the options
/// go into a ConfigMap (as a --config-file) with the script and the local Lua modules it requires. Passwords
/// come from the environment (DBBENCH_MYSQL_PASSWORD, DBBENCH_PGSQL_PASSWORD) into a Secret, never from argv.
#[derive(clap::Parser, Debug)]
#[command(
    name = "k8s",
    args_override_self = true,
    arg_required_else_help = true,
    after_help = "Exit status: 0 every shard ran and the merged report printed; 2 some shards failed and\n\
--allow-partial printed a report naming them; 1 the run could not be made or a shard failed;\n\
130 interrupted (the run's objects are deleted first). Shard logs stay in --results-dir."
)]
pub struct Args {
    /// Number of shards (pods of the Indexed Job: completions = parallelism = N)
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// The container image holding the dbbench binary (docs/scale-out.md: Dockerfile)
    #[arg(long)]
    pub image: String,
    /// The image's pull policy (the cluster's default when not given)
    #[arg(long, value_parser = ["Always", "IfNotPresent", "Never"])]
    pub image_pull_policy: Option<String>,
    /// The dbbench binary in the image
    #[arg(long, default_value = "/usr/local/bin/dbbench", value_name = "PATH")]
    pub binary: String,
    /// How pods spread over nodes: soft (topology spread, ScheduleAnyway), hard (DoNotSchedule), one-per-node
    /// (required pod anti-affinity: never two shards on one node), none
    #[arg(long, default_value = "soft", value_parser = Spread::NAMES)]
    pub spread: String,
    /// The topology key of --spread (kubernetes.io/hostname: nodes; topology.kubernetes.io/zone: zones)
    #[arg(long, default_value = "kubernetes.io/hostname", value_name = "KEY")]
    pub topology_key: String,
    /// Run only on nodes with this label (repeatable)
    #[arg(long = "node-selector", value_name = "KEY=VALUE", action = clap::ArgAction::Append)]
    pub node_selector: Vec<String>,
    /// The pods' service account (they need no API access: its token is not mounted)
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,
    /// CPU of each pod, requested and limited alike (e.g. 4 or 3500m)
    #[arg(long, value_name = "QUANTITY")]
    pub cpu: Option<String>,
    /// Memory of each pod, requested and limited alike (e.g. 2Gi)
    #[arg(long, value_name = "QUANTITY")]
    pub memory: Option<String>,
    /// Take the passwords from this existing Secret (keys DBBENCH_MYSQL_PASSWORD / DBBENCH_PGSQL_PASSWORD)
    /// instead of creating one from this process's environment
    #[arg(long, value_name = "NAME")]
    pub secret_name: Option<String>,
    /// Prefix of the run's object names (NAME-<random>)
    #[arg(long, default_value = "dbbench")]
    pub name: String,
    /// The run's id (object names and the dbbench/run label) instead of NAME-<random>: reproducible --dry-run
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Seconds between applying the manifests and the shards' common start (image pull, scheduling,
    /// connecting); a shard ready later starts at once and is reported late
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub start_grace: u64,
    /// The common start as unix epoch milliseconds, instead of now + --start-grace
    #[arg(long, value_name = "MS")]
    pub start_at: Option<u64>,
    /// Give up waiting after this many seconds (default: --start-grace + --warmup-time + --time + 300, or
    /// one hour more than the grace for a run without --time); also the Job's activeDeadlineSeconds
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// The kubectl to run
    #[arg(long, default_value = "kubectl", value_name = "PATH")]
    pub kubectl: String,
    /// kubectl's --context
    #[arg(long)]
    pub context: Option<String>,
    /// The namespace of the run's objects (kubectl's --namespace; the context's default when not given)
    #[arg(long)]
    pub namespace: Option<String>,
    /// Print the manifests and exit (passwords shown as <hidden>)
    #[arg(long)]
    pub dry_run: bool,
    /// Layout of --dry-run: yaml (documents in apply order) or json (one v1 List, what is applied)
    #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
    pub output: String,
    /// Where each shard's log (with its result line) is kept (default ./RUN-ID, created private)
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
    /// Leave the run's objects in the cluster (for debugging; delete them with
    /// kubectl delete job,configmap,secret -l dbbench/run=ID)
    #[arg(long)]
    pub keep: bool,
    /// Merge the shards that finished when some failed: the report names the missing ones (exit 2)
    #[arg(long)]
    pub allow_partial: bool,
    /// Layout of the merged report: text (sysbench's), json or csv
    #[arg(long, default_value = "text", value_parser = ["text", "json", "csv"])]
    pub format: String,
    /// SCRIPT [RUN OPTIONS] [run]: the run's sysbench command line
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "SCRIPT [RUN OPTIONS]")]
    pub run: Vec<String>,
}

/// Entry point for `dbbench k8s`.
pub fn cli_main(args: &[String]) -> ExitCode {
    let a = match crate::subcommand::parse::<Args>("k8s", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let env = |k: &str| std::env::var(k).ok();
    let plan = match plan_from_args(&a, &env, now_ms()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("dbbench k8s: {e}");
            return Exit::Error.into();
        }
    };
    if a.dry_run {
        let hidden = matches!(plan.passwords, Passwords::Generated(_));
        let docs = plan.manifests(true);
        let text =
            if a.output == "json" { manifest::to_json_list(&docs) + "\n" } else { manifest::to_yaml(&docs, hidden) };
        crate::term::print_out(&text);
        return Exit::Ok.into();
    }
    launch::launch(&a, plan).into()
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Options only the launcher sets.
const LAUNCHER_OPTIONS: &[&str] = &["shard", "shard_result", "start_at"];

/// The plan of a run from the command line and the environment (`env`:
/// the process's, or a test's); `now_ms` places the start when
/// `--start-at` is not given.
pub fn plan_from_args(a: &Args, env: &dyn Fn(&str) -> Option<String>, now_ms: u64) -> Result<Plan, String> {
    if a.shards == 0 {
        return Err("--shards must be at least 1".into());
    }
    if a.shards > 10_000 {
        return Err(format!("--shards={} is more than 10000 pods; split the run", a.shards));
    }
    let spread =
        Spread::parse(&a.spread).ok_or_else(|| format!("--spread={}: use one of {:?}", a.spread, Spread::NAMES))?;
    let run_id = match &a.run_id {
        Some(id) => id.clone(),
        None => format!("{}-{}", a.name, random_suffix()?),
    };
    check_run_id(&run_id, a.run_id.is_some())?;
    if let Some(ns) = &a.namespace {
        check_dns_label(ns).map_err(|e| format!("--namespace={ns}: {e}"))?;
    }
    let mut node_selector = Vec::new();
    for s in &a.node_selector {
        let (k, v) = s.split_once('=').ok_or_else(|| format!("--node-selector={s}: write KEY=VALUE"))?;
        if k.is_empty() {
            return Err(format!("--node-selector={s}: the label key is empty"));
        }
        node_selector.retain(|(key, _): &(String, String)| key != k);
        node_selector.push((k.to_string(), v.to_string()));
    }
    if a.image.trim().is_empty() {
        return Err("--image is empty: give the image holding dbbench (docs/scale-out.md)".into());
    }

    let parsed = crate::cli::parse(&a.run).map_err(|e| format!("in the run's options: {e}"))?;
    let (script, command) = match parsed.positionals.as_slice() {
        [s] => (s.clone(), None),
        [s, c] => (s.clone(), Some(c.clone())),
        [] => return Err("no script: give a test name or Lua script after the k8s options (dbbench k8s --shards=N --image=I oltp_read_write --threads=64 ...)".into()),
        [_, _, extra, ..] => return Err(format!("unexpected argument '{extra}' after the script and command")),
    };
    if let Some(c) = command.filter(|c| c != "run") {
        return Err(format!(
            "dbbench k8s runs the 'run' command only, not '{c}': prepare the database once from one host (dbbench {script} {c} ...)"
        ));
    }
    let mut options_text = String::from("# the run's options (dbbench k8s); a sysbench --config-file\n");
    let mut bare_options = Vec::new();
    let mut time: u64 = 10;
    let mut warmup: u64 = 0;
    for asg in &parsed.assignments {
        if LAUNCHER_OPTIONS.contains(&asg.name.as_str()) {
            return Err(format!(
                "{}: dbbench k8s sets --shard, --start-at and --shard-result itself (use --start-at of dbbench k8s, in milliseconds)",
                asg.original
            ));
        }
        if crate::secret::is_secret_name(&asg.name) {
            return Err(format!(
                "--{}: passwords never go on a command line; set {} or {} in dbbench k8s's environment (or use --secret-name)",
                asg.name.replace('_', "-"),
                crate::secret::MYSQL_PASSWORD_ENV,
                crate::secret::PGSQL_PASSWORD_ENV
            ));
        }
        match &asg.value {
            Some(v) => {
                if v.contains(['\n', '\r']) {
                    return Err(format!("{}: a value with a line break cannot go into a config file", asg.original));
                }
                // Quoted: the config file reader strips one pair of quotes,
                // so a value keeps its spaces and quotes.
                options_text.push_str(&format!("{}=\"{v}\"\n", asg.name.replace('_', "-")));
                let secs = || v.trim().parse::<u64>().ok();
                match asg.name.as_str() {
                    "time" | "max_time" => time = secs().unwrap_or(time),
                    "warmup_time" => warmup = secs().unwrap_or(warmup),
                    _ => {}
                }
            }
            None => bare_options.push(format!("--{}", asg.name.replace('_', "-"))),
        }
    }

    let (script_arg, files) = if script == "-" {
        return Err("a script on stdin cannot be shipped: give its file".into());
    } else if Path::new(&script).is_file() {
        let files = ship_script(Path::new(&script))?;
        (format!("{MOUNT_DIR}/{}", files[0].path), files)
    } else {
        (script.clone(), Vec::new())
    };
    let size: usize = options_text.len() + files.iter().map(|f| f.text.len() + f.key.len()).sum::<usize>();
    if size > 900 * 1024 {
        return Err(format!(
            "the script, its modules and options are {size} bytes; a ConfigMap holds at most 1 MiB: put large data in the image"
        ));
    }

    let passwords = match &a.secret_name {
        Some(name) => {
            check_dns_subdomain(name).map_err(|e| format!("--secret-name={name}: {e}"))?;
            Passwords::Existing(name.clone())
        }
        None => {
            use crate::secret::{MYSQL_NATIVE_ENV, MYSQL_PASSWORD_ENV, PGSQL_NATIVE_ENV, PGSQL_PASSWORD_ENV};
            let mut pairs = Vec::new();
            for (var, native) in [(MYSQL_PASSWORD_ENV, MYSQL_NATIVE_ENV), (PGSQL_PASSWORD_ENV, PGSQL_NATIVE_ENV)] {
                if let Some(p) = env(var).or_else(|| env(native)) {
                    crate::secret::register(&p);
                    pairs.push((var.to_string(), p));
                }
            }
            if pairs.is_empty() {
                Passwords::None
            } else {
                Passwords::Generated(pairs)
            }
        }
    };
    let start_at_ms = a.start_at.unwrap_or(now_ms + a.start_grace * 1000);
    let grace = start_at_ms.saturating_sub(now_ms).div_ceil(1000);
    let deadline_secs = a.timeout.unwrap_or(if time > 0 { grace + warmup + time + 300 } else { grace + 3600 });
    if deadline_secs == 0 {
        return Err("--timeout must be at least 1 second".into());
    }
    Ok(Plan {
        run_id,
        namespace: a.namespace.clone(),
        shards: a.shards,
        image: a.image.clone(),
        image_pull_policy: a.image_pull_policy.clone(),
        binary: a.binary.clone(),
        spread,
        topology_key: a.topology_key.clone(),
        node_selector,
        service_account: a.service_account.clone(),
        cpu: a.cpu.clone(),
        memory: a.memory.clone(),
        options_text,
        files,
        script_arg,
        bare_options,
        start_at_ms,
        passwords,
        deadline_secs,
    })
}

/// 8 random characters [a-z0-9].
fn random_suffix() -> Result<String, String> {
    let mut b = [0u8; 8];
    crate::secret::random_bytes(&mut b)?;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    Ok(b.iter().map(|x| ALPHABET[*x as usize % ALPHABET.len()] as char).collect())
}

/// A run id names the Job (its pods are `ID-INDEX-xxxxx`, its label
/// values at most 63 characters): a DNS label of at most 52.
fn check_run_id(id: &str, given: bool) -> Result<(), String> {
    let what = if given { format!("--run-id={id}") } else { format!("--name: the run id {id}") };
    check_dns_label(id).map_err(|e| format!("{what}: {e}"))?;
    if id.len() > 52 {
        return Err(format!("{what}: at most 52 characters (the Job's pods add their index)"));
    }
    Ok(())
}

pub(crate) fn check_dns_label(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err("must be lowercase letters, digits and '-', start with a letter, not end with '-', at most 63 characters"
            .into())
    }
}

pub(crate) fn check_dns_subdomain(s: &str) -> Result<(), String> {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.chars().all(|c| alnum(c) || c == '-' || c == '.')
        && s.starts_with(alnum)
        && s.ends_with(alnum);
    if ok {
        Ok(())
    } else {
        Err("not a valid Kubernetes object name (lowercase letters, digits, '-' and '.')".into())
    }
}

/// The script and the local modules it requires (found as sysbench finds
/// them: `./NAME.lua`, `./NAME/init.lua` from the current directory),
/// transitively. The script comes first, under its file name.
fn ship_script(script: &Path) -> Result<Vec<ShippedFile>, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let base = script
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{}: not a file name", script.display()))?;
    let text = read(script)?;
    let mut files = vec![ShippedFile { key: config_key(&base)?, path: base, text }];
    let requires = regex::Regex::new(r#"require\s*\(?\s*["']([A-Za-z0-9_.\-]+)["']"#).expect("a valid regex");
    let mut i = 0;
    while i < files.len() {
        let names: Vec<String> = requires.captures_iter(&files[i].text).map(|c| c[1].to_string()).collect();
        for name in names {
            let rel = name.replace('.', "/");
            for candidate in [format!("{rel}.lua"), format!("{rel}/init.lua")] {
                if files.iter().any(|f| f.path == candidate) {
                    break;
                }
                let p = PathBuf::from(&candidate);
                if p.is_file() {
                    let text = read(&p)?;
                    let key = config_key(&candidate)?;
                    if files.iter().any(|f| f.key == key) {
                        return Err(format!("{candidate}: two shipped files would have the ConfigMap key {key}"));
                    }
                    files.push(ShippedFile { key, path: candidate, text });
                    break;
                }
            }
        }
        i += 1;
    }
    Ok(files)
}

/// A ConfigMap key for a shipped file's relative path (`a/b.lua` → `a.b.lua`).
fn config_key(path: &str) -> Result<String, String> {
    let key = path.replace('/', ".");
    let ok = !key.is_empty()
        && key.len() <= 253
        && key.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        && key != OPTIONS_KEY_RESERVED
        && !path.split('/').any(|p| p == ".." || p == "." || p.is_empty());
    if ok {
        Ok(key)
    } else {
        Err(format!(
            "{path}: a file shipped in the ConfigMap needs a name of letters, digits, '-', '_' and '.' (and not {OPTIONS_KEY_RESERVED})"
        ))
    }
}

const OPTIONS_KEY_RESERVED: &str = manifest::OPTIONS_FILE;
