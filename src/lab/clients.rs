//! `clients = { shards = N, launcher = "local" }` on a workload or a
//! configuration (docs/lab.md#sharded-runs): the lab runs each run of a
//! test workload as N shard processes of one run (`run --shard=I/N
//! --start-at=T --shard-result=FILE`, docs/scale-out.md), merges them with
//! `dbbench merge`, and stores the merged run plus every shard's result.

/// How a run's clients are spread, as a spec says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clients {
    /// Shard processes per run (1: one process, not sharded).
    pub shards: u32,
}

/// The most shards the lab starts for one run on this host.
pub const MAX_LOCAL_SHARDS: u32 = 64;

/// Reads a `clients` table. The error is (the key at fault, the message).
pub fn parse(table: &toml::Table) -> Result<Clients, (&'static str, String)> {
    for key in table.keys() {
        if !["shards", "launcher"].contains(&key.as_str()) {
            return Err(("clients", format!("unknown key `{key}`: a clients table takes shards and launcher")));
        }
    }
    let shards = match table.get("shards") {
        None => return Err(("shards", "is missing: clients = { shards = 4, launcher = \"local\" }".into())),
        Some(toml::Value::Integer(n)) if (1..=MAX_LOCAL_SHARDS as i64).contains(n) => *n as u32,
        Some(v) => {
            return Err(("shards", format!("must be a whole number from 1 to {MAX_LOCAL_SHARDS}, not {v}")));
        }
    };
    match table.get("launcher") {
        None => {}
        Some(toml::Value::String(l)) if l == "local" => {}
        Some(toml::Value::String(l)) if l == "kubernetes" => {
            return Err((
                "launcher",
                "\"kubernetes\" is not supported in the lab yet: run the shards with `dbbench k8s` (docs/scale-out.md), or use launcher = \"local\"".into(),
            ));
        }
        Some(v) => {
            return Err(("launcher", format!("must be \"local\" (or, not yet in the lab, \"kubernetes\"), not {v}")))
        }
    }
    Ok(Clients { shards })
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

    #[test]
    fn clients_tables_are_read_or_refused_with_the_key_at_fault() {
        assert_eq!(parse(&table("{ shards = 4 }")), Ok(Clients { shards: 4 }));
        assert_eq!(parse(&table("{ shards = 2, launcher = \"local\" }")), Ok(Clients { shards: 2 }));
        let e = parse(&table("{ shards = 2, launcher = \"kubernetes\" }")).unwrap_err();
        assert_eq!(e.0, "launcher");
        assert!(e.1.contains("not supported in the lab yet"), "{}", e.1);
        assert_eq!(parse(&table("{ shards = 0 }")).unwrap_err().0, "shards");
        assert_eq!(parse(&table("{ shards = 65 }")).unwrap_err().0, "shards");
        assert_eq!(parse(&table("{ shards = \"4\" }")).unwrap_err().0, "shards");
        assert_eq!(parse(&table("{ launcher = \"local\" }")).unwrap_err().0, "shards");
        assert!(parse(&table("{ shards = 2, hosts = 3 }")).unwrap_err().1.contains("unknown key `hosts`"));
        assert!(parse(&table("{ shards = 2, launcher = \"ssh\" }")).unwrap_err().1.contains("must be \"local\""));
    }
}
