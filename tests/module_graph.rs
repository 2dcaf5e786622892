//! The module graph, read from the source: which top-level module of src/
//! uses which other one (`crate::` paths outside comments, strings and
//! `#[cfg(test)]` items). Checked here:
//!
//! - no cycle between top-level modules (`lab`, `report`, `querydiff`,
//!   `tpch`, `engine`, `script`, `output`, the shared modules `store`,
//!   `driver`, `inference`, `render`, `term`, ...), with no exception;
//! - no cycle between files anywhere (inside a folder too: `driver/mysql/
//!   auth.rs` → `native.rs` → `auth.rs` is one), a file and the modules it
//!   sits in (its parent `mod.rs`, the file declaring it) excepted: a child
//!   using its parent's types is ordinary Rust;
//! - ARCHITECTURE.md's module table names every source file (directly or
//!   through its folder's row) and nothing that does not exist;
//! - each row's "depends on" column names every top-level module the row's
//!   files use.
//!
//! Edges to the crate root's constants (`crate::VERSION`) are not edges:
//! main.rs is the wiring that depends on everything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every .rs file under src/, as paths relative to src/ (`lab/spec.rs`).
fn source_files() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(&src_dir(), &src_dir(), &mut out);
    out.sort();
    out
}

/// The top-level module a file belongs to (`lab/spec.rs` → `lab`,
/// `engine.rs` → `engine`, `main.rs` → `main`).
fn top_module(file: &str) -> String {
    match file.split_once('/') {
        Some((dir, _)) => dir.to_string(),
        None => file.trim_end_matches(".rs").to_string(),
    }
}

/// The code of a Rust file with comments, string and char literals blanked
/// out (newlines kept, so positions keep their line numbers).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == b'r' && (rest.starts_with(b"r\"") || rest.starts_with(b"r#")) && !ident_before(b, i) {
            // Raw string: r"...", r#"..."#.
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let start = 2 + hashes;
            let end =
                rest[start..].windows(close.len()).position(|w| w == close.as_slice()).unwrap() + start + close.len();
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, &rest[..=j]);
            i += j + 1;
        } else if rest[0] == b'\'' {
            // A char literal ('a', '\'', '\u{1F600}'), else a lifetime.
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match len {
                Some(n) => {
                    blank(&mut out, &rest[..n]);
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// `code` without the items marked `#[cfg(test)]` (test modules and
/// test-only helpers): up to the item's `;` or its closing brace.
fn without_test_items(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(p) = out[from..].find("#[cfg(test)]").map(|p| p + from) {
        let b = out.as_bytes();
        let mut j = p + "#[cfg(test)]".len();
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b'{' => depth += 1,
                // A field or match arm: ends at its enclosing block's end.
                b'}' | b',' if depth == 0 => break,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let blanked: String = out[p..j].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
        out.replace_range(p..j, &blanked);
        from = p + 1;
    }
    out
}

/// Per file (relative to src/): the other top-level modules it uses, each
/// with one place (`file:line`) as evidence: the file graph's edges, by the
/// top-level module of the file each reaches (the crate root's items,
/// VERSION & co., are main.rs's, which no edge reaches).
fn file_deps() -> BTreeMap<String, BTreeMap<String, String>> {
    file_graph()
        .into_iter()
        .map(|(f, deps)| {
            let me = top_module(&f);
            let mut by_module = BTreeMap::new();
            for (target, at) in deps {
                let m = top_module(&target);
                if m != me {
                    by_module.entry(m).or_insert(at);
                }
            }
            (f, by_module)
        })
        .collect()
}

/// The top-level module graph: module → (module it uses → evidence).
fn graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (f, deps) in file_deps() {
        let node = g.entry(top_module(&f)).or_default();
        for (m, at) in deps {
            node.entry(m).or_insert(at);
        }
    }
    g
}

/// The cycles of graph `g` (node → (node it uses → evidence)), each as
/// its edges with their evidence; depth-first, a grey node reached again
/// closes one.
fn cycles(g: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    fn visit<'a>(
        g: &'a BTreeMap<String, BTreeMap<String, String>>,
        n: &'a str,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(n, 1);
        path.push(n);
        for (m, _) in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let start = path.iter().position(|p| p == m).unwrap();
                    let mut c: Vec<String> = path[start..]
                        .iter()
                        .zip(path[start + 1..].iter().chain(std::iter::once(&m.as_str())))
                        .map(|(a, b)| format!("{a} → {b} ({})", g[*a][*b]))
                        .collect();
                    c.dedup();
                    cycles.push(c.join(", "));
                }
                Some(_) => {}
                None => visit(g, m, state, path, cycles),
            }
        }
        path.pop();
        state.insert(n, 2);
    }
    let (mut state, mut found) = (BTreeMap::new(), Vec::new());
    for n in g.keys() {
        if !state.contains_key(n.as_str()) {
            visit(g, n, &mut state, &mut Vec::new(), &mut found);
        }
    }
    found
}

#[test]
fn module_graph_has_no_cycles() {
    let found = cycles(&graph());
    assert!(found.is_empty(), "cycles between top-level modules:\n{}", found.join("\n"));
}

/// A file's module path: `lab/spec.rs` → `lab::spec`, `lab/server/mod.rs`
/// → `lab::server`, `main.rs` → the crate root (empty).
fn module_path(file: &str) -> Vec<String> {
    let mut segs: Vec<String> = file.trim_end_matches(".rs").split('/').map(String::from).collect();
    if matches!(segs.last().map(String::as_str), Some("mod" | "main")) {
        segs.pop();
    }
    segs
}

/// Every path in `code` (a file of module `me`) rooted at `crate::`,
/// `super::` or `self::`, made absolute, with groups expanded
/// (`super::{a::X, b}` → `P::a::X`, `P::b`), and its line.
fn rooted_paths(code: &str, me: &[String]) -> Vec<(Vec<String>, usize)> {
    fn ident(s: &str) -> &str {
        let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        &s[..end]
    }
    /// `s` continues a path whose segments so far are `prefix`.
    fn expand(s: &str, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut s = s.trim_start();
        loop {
            if let Some(group) = s.strip_prefix('{') {
                let (mut depth, mut item_start) = (0usize, 0);
                for (k, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth > 0 => depth -= 1,
                        '}' | ',' if depth == 0 => {
                            let item = group[item_start..k].trim();
                            if item == "self" {
                                out.push(prefix.clone());
                            } else if !item.is_empty() {
                                expand(item, prefix.clone(), out);
                            }
                            if c == '}' {
                                return;
                            }
                            item_start = k + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            let id = ident(s);
            if id.is_empty() {
                out.push(prefix);
                return;
            }
            prefix.push(id.to_string());
            s = s[id.len()..].trim_start();
            match s.strip_prefix("::") {
                Some(rest) => s = rest.trim_start(),
                None => {
                    out.push(prefix);
                    return;
                }
            }
        }
    }
    let mut out = Vec::new();
    let b = code.as_bytes();
    for root in ["crate::", "super::", "self::"] {
        for (p, _) in code.match_indices(root) {
            if ident_before(b, p) || (p > 0 && b[p - 1] == b':') {
                continue;
            }
            let line = code[..p].matches('\n').count() + 1;
            let mut base: Vec<String> = match root {
                "crate::" => Vec::new(),
                "super::" => me[..me.len().saturating_sub(1)].to_vec(),
                _ => me.to_vec(),
            };
            let mut rest = &code[p + root.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            let mut paths = Vec::new();
            expand(rest, base, &mut paths);
            out.extend(paths.into_iter().map(|path| (path, line)));
        }
    }
    out
}

/// The file-level graph: file → (file it uses → evidence), a file's
/// edges to the modules it sits in and to the ones inside it left out.
fn file_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let files = source_files();
    let by_path: BTreeMap<Vec<String>, &String> = files.iter().map(|f| (module_path(f), f)).collect();
    let mut g = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(src_dir().join(f)).unwrap();
        let code = without_test_items(&code_only(&text));
        let me = module_path(f);
        let mut deps = BTreeMap::new();
        for (path, line) in rooted_paths(&code, &me) {
            // The file of the longest prefix that is a module.
            let Some(target) = (0..=path.len()).rev().find_map(|n| by_path.get(&path[..n])) else { continue };
            let there = module_path(target);
            if there.starts_with(&me) || me.starts_with(&there) {
                continue;
            }
            deps.entry((*target).clone()).or_insert_with(|| format!("src/{f}:{line}"));
        }
        g.insert(f.clone(), deps);
    }
    g
}

#[test]
fn no_file_uses_a_file_that_uses_it_back() {
    let found = cycles(&file_graph());
    assert!(found.is_empty(), "cycles between source files:\n{}", found.join("\n"));
}

#[test]
fn file_graph_resolves_rooted_paths_and_groups() {
    let me = module_path("driver/mysql/auth.rs");
    assert_eq!(me, ["driver", "mysql", "auth"]);
    assert_eq!(module_path("lab/server/mod.rs"), ["lab", "server"]);
    let code = "use super::{native::X, protocol::{self, Y}};\nlet a = crate::lab::spec::parse();\n\
                let b = self::inner::f(); let c = super::super::sqlite::g; pub(super) fn h() {}";
    let found: Vec<String> = rooted_paths(code, &me).into_iter().map(|(p, _)| p.join("::")).collect();
    assert_eq!(
        found,
        [
            "lab::spec::parse",
            "driver::mysql::native::X",
            "driver::mysql::protocol",
            "driver::mysql::protocol::Y",
            "driver::sqlite::g",
            "driver::mysql::auth::inner::f",
        ]
    );
    // The real source: the MySQL client uses its protocol module, and the
    // graph holds no edge from a file to the module it sits in.
    let g = file_graph();
    assert!(g["driver/mysql/native.rs"].contains_key("driver/mysql/protocol.rs"));
    assert!(g.values().all(|d| !d.contains_key("main.rs")));
}

#[test]
fn module_graph_sees_paths_in_groups_and_skips_comments_strings_and_tests() {
    let code = without_test_items(&code_only(
        "use crate::{a::X, b::{self, Y}, c};\n// crate::d\nlet s = \"crate::e\"; let c = '\"'; \
         let f = crate::f::g();\n/* crate::h */ let r = r#\"crate::i\"#;\n#[cfg(test)]\nmod tests { use crate::j; }\n\
         #[cfg(test)]\nuse crate::k;\nfn x<'a>(v: &'a str) { crate::l::m(v) }",
    ));
    let found: Vec<String> = rooted_paths(&code, &["x".to_string()]).into_iter().map(|(p, _)| p[0].clone()).collect();
    assert_eq!(found, ["a", "b", "b", "c", "f", "l"]);
    // The real source: the engine runs scripts.
    assert!(graph()["engine"].contains_key("script"));
}

/// ARCHITECTURE.md's module table: (names in the first column, the
/// "depends on" column), per row.
fn module_table() -> Vec<(Vec<String>, String)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap();
    let section = doc.split("\n## Modules (src/)").nth(1).expect("ARCHITECTURE.md has a '## Modules (src/)' section");
    let section = section.split("\n## ").next().unwrap();
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        assert!(cells.len() >= 3, "module table row without three columns: {line}");
        // Backticked names; a bare file name after a path shares its folder
        // (`report/text.rs`, `markdown.rs`).
        let mut names = Vec::new();
        let mut dir = String::new();
        for (k, part) in cells[0].split('`').enumerate() {
            if k % 2 == 0 {
                continue;
            }
            let name = if part.contains('/') { part.to_string() } else { format!("{dir}{part}") };
            if let Some(p) = name.rfind('/') {
                dir = name[..=p].to_string();
            }
            names.push(name);
        }
        rows.push((names, cells[cells.len() - 1].to_string()));
    }
    rows
}

#[test]
fn module_table_names_every_source_file_and_nothing_else() {
    let files: BTreeSet<String> = source_files().into_iter().collect();
    let rows = module_table();
    let named: Vec<&String> = rows.iter().flat_map(|(n, _)| n).collect();
    let mut problems = Vec::new();
    for n in &named {
        let exists = if n.contains('*') {
            // `workloads/*.lua`: in src/ or at the top of the repository.
            let dir = n.rsplit_once('/').map_or("", |(d, _)| d);
            src_dir().join(dir).is_dir() || src_dir().join("..").join(dir).is_dir()
        } else {
            src_dir().join(n.as_str()).exists()
        };
        if !exists {
            problems.push(format!("ARCHITECTURE.md names `{n}`, which is not in src/"));
        }
    }
    for f in &files {
        let covered = named.iter().any(|n| *n == f || (n.ends_with('/') && f.starts_with(n.as_str())));
        if !covered {
            problems.push(format!("src/{f} is missing from ARCHITECTURE.md's module table"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn module_table_depends_on_column_names_every_module_used() {
    let deps = file_deps();
    let mut problems = Vec::new();
    for (names, depends) in module_table() {
        if depends.trim() == "all" {
            continue;
        }
        // Words of the column: `lab::store` names `lab`; crates are words too.
        let words: BTreeSet<&str> = depends.split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
        for n in &names {
            let files: Vec<&String> =
                deps.keys().filter(|f| *f == n || (n.ends_with('/') && f.starts_with(n.as_str()))).collect();
            for f in files {
                for (m, at) in &deps[f] {
                    if !words.contains(m.as_str()) {
                        problems.push(format!("`{n}` uses `{m}` ({at}); its row's \"depends on\" does not say so"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
