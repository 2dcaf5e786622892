//! One experiment as the reports see it, loaded from the results store in a
//! handful of queries: its configurations (baseline first), workloads in
//! spec order with their thread counts, and every run's figures. Series and
//! histograms are loaded only by the layouts that draw or pool them.

use crate::run_document::RunDocument;
use crate::store::{ConfigurationInfo, ExperimentInfo, IntervalPoint, RunFigures, SamplePoint, Store};
use std::collections::HashMap;

/// A workload of the experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The spec's workload name.
    pub name: String,
    /// The test (built-in name or script) or the command, for legends.
    pub what: String,
    /// A command workload's metric names in spec order (empty for tests).
    pub metrics: Vec<String>,
    /// Thread counts that have runs, ascending.
    pub threads: Vec<u32>,
    /// One query of a TPC-H workload (named `NAME:Q14`): its figure is the
    /// query's time, and it is shown in the per-query table.
    pub tpch: bool,
    /// A TPC-H query's own server options (the spec's `server_options`),
    /// with the configuration they apply to (None: every configuration).
    pub server_options: Vec<(Option<String>, Vec<String>)>,
}

impl Workload {
    /// Whether runs of this workload are `dbbench run`s (tps, latency, ...)
    /// rather than a command's named metrics.
    pub fn is_test(&self) -> bool {
        self.metrics.is_empty()
    }
}

/// A run with its configuration and workload resolved to indexes.
#[derive(Debug, Clone)]
pub struct Run {
    /// Index into `Dataset::configurations`.
    pub configuration: usize,
    /// Index into `Dataset::workloads`.
    pub workload: usize,
    /// The stored figures.
    pub figures: RunFigures,
    /// Validity flags from its OS samples and document (`report::validity`); empty for a run not ok.
    pub flags: Vec<crate::report::validity::Flag>,
}

impl Run {
    /// Whether the run counts in figures.
    pub fn ok(&self) -> bool {
        self.figures.status == "ok"
    }
}

/// One experiment, ready for the reports.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The experiment's row.
    pub experiment: ExperimentInfo,
    /// Configurations in spec order (position 0, the spec's baseline, first).
    pub configurations: Vec<ConfigurationInfo>,
    /// Workloads in spec order.
    pub workloads: Vec<Workload>,
    /// Every run, in run order.
    pub runs: Vec<Run>,
    /// Every stored OS and server sample of the runs (read once: the flags
    /// and the samples' tables both use them).
    pub samples: Vec<SamplePoint>,
}

/// How an experiment is named on the command line: its id, or its name (the
/// newest experiment of that name). None: the newest experiment in the store.
pub fn find_experiment(store: &Store, which: Option<&str>) -> anyhow::Result<i64> {
    let all = store.experiments()?;
    if all.is_empty() {
        anyhow::bail!(
            "the results store {} holds no experiment yet; run one with `dbbench lab run SPEC`",
            store.location()
        );
    }
    let Some(which) = which else { return Ok(all[0].0) };
    if let Some(e) = which.parse::<i64>().ok().and_then(|id| all.iter().find(|e| e.0 == id)) {
        return Ok(e.0);
    }
    if let Some(e) = all.iter().find(|e| e.1 == which) {
        return Ok(e.0);
    }
    let mut names: Vec<&str> = all.iter().map(|e| e.1.as_str()).collect();
    names.dedup();
    anyhow::bail!(
        "no experiment '{which}' in {}; it holds {} (give a name or an id; `dbbench report --list` lists them)",
        store.location(),
        names.join(", ")
    )
}

/// Each ok run's validity flags, from its stored OS samples and run document.
fn flag_runs(
    store: &Store,
    experiment: &ExperimentInfo,
    samples: &[SamplePoint],
    runs: &mut [Run],
) -> anyhow::Result<()> {
    if !runs.iter().any(Run::ok) {
        return Ok(());
    }
    let mut os: HashMap<i64, Vec<serde_json::Value>> = HashMap::new();
    for p in samples.iter().filter(|p| p.source == "os" && p.data.is_object()) {
        os.entry(p.run_id).or_default().push(p.data.clone());
    }
    let docs: HashMap<i64, RunDocument> = store
        .run_document_texts(experiment.id)?
        .into_iter()
        // TPC-H documents are of another type: no interval lines, no query rate.
        .filter_map(|(id, text)| Some((id, RunDocument::parse(&text, "").ok()?)))
        .collect();
    let host_cpus = experiment.host.get("logical_cpus").and_then(|v| v.as_u64());
    for r in runs.iter_mut().filter(|r| r.ok()) {
        let s = os.remove(&r.figures.id).unwrap_or_default();
        r.flags = crate::report::validity::flags(&s, docs.get(&r.figures.id), host_cpus);
    }
    Ok(())
}

impl Dataset {
    /// Loads experiment `id`.
    pub fn load(store: &Store, id: i64) -> anyhow::Result<Dataset> {
        let experiment = store
            .experiment_info(id)?
            .ok_or_else(|| anyhow::anyhow!("no experiment with id {id} in {}", store.location()))?;
        let configurations = store.configurations_of(id)?;
        let figures = store.run_figures(id)?;
        let config_index: HashMap<i64, usize> = configurations.iter().enumerate().map(|(i, c)| (c.id, i)).collect();
        let mut workloads = spec_workloads(&experiment.spec_text);
        let described = workloads.len();
        let mut runs = Vec::with_capacity(figures.len());
        for f in figures {
            let Some(&configuration) = config_index.get(&f.configuration_id) else { continue };
            let workload = match workloads.iter().position(|w| w.name == f.workload) {
                Some(i) => i,
                None => {
                    // Not in the spec text (edited by hand?): still reported, last.
                    workloads.push(Workload {
                        name: f.workload.clone(),
                        what: f.workload.clone(),
                        metrics: Vec::new(),
                        threads: Vec::new(),
                        tpch: false,
                        server_options: Vec::new(),
                    });
                    workloads.len() - 1
                }
            };
            if !workloads[workload].threads.contains(&f.threads) {
                workloads[workload].threads.push(f.threads);
            }
            // A workload the spec text did not describe is known by its
            // runs: named metrics make it a command workload.
            if workload >= described {
                for (m, _) in &f.metrics {
                    if !workloads[workload].metrics.contains(m) {
                        workloads[workload].metrics.push(m.clone());
                    }
                }
            }
            runs.push(Run { configuration, workload, figures: f, flags: Vec::new() });
        }
        // Workloads without any run (an interrupted experiment) are left out.
        let used: Vec<bool> = (0..workloads.len()).map(|w| runs.iter().any(|r| r.workload == w)).collect();
        let remap: Vec<Option<usize>> = used
            .iter()
            .scan(0, |n, &u| {
                Some(u.then(|| {
                    *n += 1;
                    *n - 1
                }))
            })
            .collect();
        workloads = workloads.into_iter().zip(&used).filter(|(_, u)| **u).map(|(w, _)| w).collect();
        for r in &mut runs {
            r.workload = remap[r.workload].expect("every run's workload is used");
        }
        for w in &mut workloads {
            w.threads.sort_unstable();
        }
        let samples = store.samples(id)?;
        flag_runs(store, &experiment, &samples, &mut runs)?;
        Ok(Dataset { experiment, configurations, workloads, runs, samples })
    }

    /// Runs that are not ok.
    pub fn failed_runs(&self) -> impl Iterator<Item = &Run> {
        self.runs.iter().filter(|r| !r.ok())
    }

    /// Ok runs with validity flags.
    pub fn flagged_runs(&self) -> impl Iterator<Item = &Run> {
        self.runs.iter().filter(|r| !r.flags.is_empty())
    }

    /// Whether any run of cell (configuration, workload, threads) is flagged.
    pub fn cell_flagged(&self, configuration: usize, workload: usize, threads: u32) -> bool {
        self.runs.iter().any(|r| {
            r.configuration == configuration
                && r.workload == workload
                && r.figures.threads == threads
                && !r.flags.is_empty()
        })
    }

    /// Index of the configuration named `name`.
    pub fn configuration_index(&self, name: &str) -> Option<usize> {
        self.configurations.iter().position(|c| c.name == name)
    }

    /// Loads the per-interval series of every run, by run index.
    pub fn series(&self, store: &Store) -> anyhow::Result<Vec<Vec<IntervalPoint>>> {
        let index: HashMap<i64, usize> = self.runs.iter().enumerate().map(|(i, r)| (r.figures.id, i)).collect();
        let mut out = vec![Vec::new(); self.runs.len()];
        for p in store.interval_points(self.experiment.id)? {
            if let Some(&i) = index.get(&p.run_id) {
                out[i].push(p);
            }
        }
        Ok(out)
    }
}

impl Dataset {
    /// What a reader needs to know about where the numbers come from: the
    /// experiment, its settings, the host, the configurations. One line each.
    pub fn context_lines(&self) -> Vec<String> {
        let e = &self.experiment;
        let s = &e.settings;
        let h = &e.host;
        let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_f64());
        let text = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        let mut l = vec![format!(
            "experiment '{}' (id {}), {}; started {}{}",
            e.name,
            e.id,
            e.status,
            e.started_at,
            e.finished_at.as_ref().map(|f| format!(", finished {f}")).unwrap_or_default()
        )];
        if !e.description.is_empty() {
            l.push(e.description.clone());
        }
        if let Some(rep) = num(s, "repeats") {
            let timed = match num(s, "time_s") {
                Some(time) => format!(
                    " of {time} s{}",
                    num(s, "warmup_s").filter(|w| *w > 0.0).map(|w| format!(" after {w} s warmup")).unwrap_or_default()
                ),
                None => String::new(),
            };
            let seeds = num(s, "seed")
                .map(|x| if rep > 1.0 { format!(", seeds {x}..{}", x + rep - 1.0) } else { format!(", seed {x}") })
                .unwrap_or_default();
            l.push(format!("{rep} repeat(s){timed} per cell, {} order{seeds}", text(s, "order")));
        }
        if h.is_object() {
            let mut parts = vec![format!("host {}: {}", text(h, "hostname"), text(h, "cpu_model"))];
            if let Some(n) = num(h, "logical_cpus") {
                parts.push(format!("{n} logical CPUs"));
            }
            if let Some(b) = num(h, "memory_bytes") {
                parts.push(format!("{:.1} GiB", b / 1073741824.0));
            }
            let os = format!("{} {}", text(h, "os"), text(h, "kernel"));
            if !os.trim().is_empty() {
                parts.push(os.trim().to_string());
            }
            parts.push(format!(
                "dbbench {}{}",
                e.dbbench_version,
                e.git_revision.as_ref().map(|g| format!(" ({g})")).unwrap_or_default()
            ));
            l.push(parts.join(", "));
        }
        let configs: Vec<String> = self
            .configurations
            .iter()
            .map(|c| {
                // What the runs' servers said they are (kind "mysql" could be
                // anything answering as MySQL); older stores: the version.
                let what = if c.products.is_empty() {
                    c.server_version.as_ref().filter(|v| !v.is_empty()).map(|v| format!(" {v}")).unwrap_or_default()
                } else {
                    format!(": {}", c.products.join("; "))
                };
                // Where a pinned configuration's runs ran, as the kernel said
                // (docs/lab.md#pinning); unpinned ones: in the HTML page's definitions.
                let pinned = c.definition.get("cpus").is_some() && !c.cpus.is_empty();
                let cpus = if pinned { format!("; CPUs {}", c.cpus.join(" / ")) } else { String::new() };
                format!("{} ({}{what}{cpus})", c.name, c.kind)
            })
            .collect();
        l.push(format!("configurations: {}", configs.join(", ")));
        let workloads: Vec<String> = self
            .workloads
            .iter()
            .map(|w| if w.name == w.what { w.name.clone() } else { format!("{} = {}", w.name, w.what) })
            .collect();
        l.push(format!("workloads: {}", workloads.join("; ")));
        l
    }
}

/// Workloads in the order the spec lists them, with what they run and a
/// command workload's metric names in spec order (the spec text is stored
/// with the experiment; the store's tables do not keep that order).
fn spec_workloads(spec_text: &str) -> Vec<Workload> {
    let Ok(doc) = spec_text.parse::<toml::Table>() else { return Vec::new() };
    let Some(list) = doc.get("workload").and_then(|w| w.as_array()) else { return Vec::new() };
    let mut out = Vec::new();
    for w in list {
        // A TPC-H workload is one workload per query, as the lab names them.
        if let Some(t) = w.get("tpch").and_then(|t| t.as_table()) {
            let name = w.get("name").and_then(|n| n.as_str()).unwrap_or("tpch");
            let sf = t.get("sf").map(|v| v.to_string()).unwrap_or_default();
            let queries =
                crate::tpch::run::QueryId::parse_list(t.get("queries").and_then(|q| q.as_str()).unwrap_or("1-22"))
                    .unwrap_or_default();
            let options = t.get("server_options").and_then(|o| o.as_table());
            let strings = |v: &toml::Value| -> Vec<String> {
                v.as_array()
                    .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default()
            };
            for q in queries {
                let label = q.label();
                let key = label.trim_start_matches('Q');
                let server_options = options
                    .and_then(|o| o.iter().find(|(k, _)| k.trim_start_matches(['Q', 'q']) == key))
                    .map(|(_, v)| match v.as_table() {
                        Some(by_config) => by_config.iter().map(|(c, list)| (Some(c.clone()), strings(list))).collect(),
                        None => vec![(None, strings(v))],
                    })
                    .unwrap_or_default();
                out.push(Workload {
                    name: format!("{name}:{label}"),
                    what: format!("TPC-H {label} {} (scale factor {sf})", crate::tpch::queries::name(q.number)),
                    metrics: vec!["seconds".into()],
                    threads: Vec::new(),
                    tpch: true,
                    server_options,
                });
            }
            continue;
        }
        out.extend(std::iter::once(w).filter_map(|w| {
            let test = w.get("test").and_then(|t| t.as_str());
            let command = w
                .get("command")
                .and_then(|c| c.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(" "));
            let name = match (w.get("name").and_then(|n| n.as_str()), test) {
                (Some(n), _) => n.to_string(),
                (None, Some(t)) => crate::workloads::test_workload_name(t),
                (None, None) => return None,
            };
            let what = match (test, &command) {
                (Some(t), _) => {
                    let opts = w.get("options").and_then(|o| o.as_table()).map(|o| {
                        o.iter()
                            .map(|(k, v)| {
                                format!(" --{k}={}", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                            })
                            .collect::<String>()
                    });
                    format!("{t}{}", opts.unwrap_or_default())
                }
                (None, Some(c)) => c.clone(),
                (None, None) => name.clone(),
            };
            let metrics =
                w.get("metrics").and_then(|m| m.as_table()).map(|m| m.keys().cloned().collect()).unwrap_or_default();
            Some(Workload { name, what, metrics, threads: Vec::new(), tpch: false, server_options: Vec::new() })
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn workloads_keep_the_spec_order_and_metric_order() {
        let w = super::spec_workloads(
            r#"
            [experiment]
            name = "x"
            [[workload]]
            test = "oltp_read_only"
            options = { tables = 4, range-size = "100" }
            [[workload]]
            name = "pg"
            command = ["pgbench", "-c", "{threads}"]
            metrics = { tps = "tps = ([0-9.]+)", latency = "latency average = ([0-9.]+)" }
            "#,
        );
        assert_eq!(w.len(), 2);
        assert_eq!(
            (w[0].name.as_str(), w[0].what.as_str(), w[0].is_test()),
            ("oltp_read_only", "oltp_read_only --tables=4 --range-size=100", true)
        );
        assert_eq!((w[1].name.as_str(), w[1].what.as_str()), ("pg", "pgbench -c {threads}"));
        assert_eq!(w[1].metrics, ["tps", "latency"]);
        assert!(super::spec_workloads("not toml [").is_empty());
    }

    #[test]
    fn a_tpch_querys_own_server_options() {
        let w = super::spec_workloads(
            r#"
            [experiment]
            name = "x"
            [[workload]]
            name = "dbt3"
            tpch = { sf = 1, queries = "6,18", server_options = { "18" = { mariadb = ["--optimizer-switch=semijoin=off"] }, Q6 = ["--a=1"] } }
            "#,
        );
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].server_options, [(None, vec!["--a=1".to_string()])]);
        assert_eq!(
            w[1].server_options,
            [(Some("mariadb".to_string()), vec!["--optimizer-switch=semijoin=off".to_string()])]
        );
    }
}
