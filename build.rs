//! Build script: export the binary's C entry points (`sb_counter_inc`,
//! `sb_rand_uniform`, ...; src/script/ffi.rs) in its dynamic symbol table,
//! where LuaJIT's `ffi.C` looks them up with dlsym; and record the git
//! revision the binary is built from in `DBBENCH_GIT_REVISION` (read with
//! `option_env!` by src/lab/sysinfo.rs and `--version`; unset outside a git
//! checkout or without git, which is not an error).
//!
//! No git activity that leaves the sources alone rebuilds the crate (`git
//! add`, `git status`, a commit or checkout of docs only): the script reruns
//! only when a build input changes (build.rs, src/, Cargo.toml,
//! Cargo.lock), and then records HEAD and whether those inputs differ from
//! it (`-dirty`). So the revision is the commit whose sources the binary
//! was last built on: after a commit of the very changes it was built from,
//! it still says `OLD-dirty` (true, but not the new name) until a source
//! changes. `DBBENCH_EXACT_REVISION=1` also reruns on every commit and
//! checkout (HEAD and the branch's ref watched, never the index), for a
//! binary that is published: release packaging sets it.
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rustc-link-arg=-rdynamic");
    git_revision();
}

/// Output of `git ARGS` run in the crate's directory, trimmed; `None` if git
/// is missing or fails (no .git, not a repository, unsafe ownership, ...).
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn git_revision() {
    println!("cargo:rerun-if-env-changed=DBBENCH_EXACT_REVISION");
    let exact = std::env::var("DBBENCH_EXACT_REVISION").as_deref() == Ok("1");
    // Any rerun-if-changed line replaces cargo's default (rerun when any file
    // of the package changes), so list what the outputs depend on. Only
    // existing paths: cargo reruns every build for a missing one.
    let mut watch: Vec<String> = BUILD_INPUTS.iter().map(|p| p.to_string()).collect();
    let revision = git(&["rev-parse", "--short=12", "HEAD"]);
    if exact && revision.is_some() {
        // Not the index: `git add` and `git status` rewrite it, and neither
        // changes HEAD or the sources.
        for p in ["HEAD", "packed-refs"] {
            watch.extend(git(&["rev-parse", "--git-path", p]));
        }
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch.extend(git(&["rev-parse", "--git-path", &branch]));
        }
    }
    for p in watch.iter().filter(|p| Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={p}");
    }
    let Some(mut revision) = revision else { return };
    // Dirty means the binary's own inputs differ from HEAD (docs or tests
    // do not make a different binary). --no-optional-locks: do not rewrite
    // .git/index (that would race with git commands run in the checkout).
    let mut status = vec!["--no-optional-locks", "status", "--porcelain", "--"];
    status.extend(BUILD_INPUTS);
    if git(&status).is_some_and(|s| !s.is_empty()) {
        revision.push_str("-dirty");
    }
    println!("cargo:rustc-env=DBBENCH_GIT_REVISION={revision}");
}

/// What the binary is built from: a change to one of these reruns this
/// script and, in git, makes the revision `-dirty`.
const BUILD_INPUTS: &[&str] = &["build.rs", "src", "Cargo.toml", "Cargo.lock"];
