//! Build script: export the binary's C entry points (`sb_counter_inc`,
//! `sb_rand_uniform`, ...; src/script/ffi.rs) in its dynamic symbol table,
//! where LuaJIT's `ffi.C` looks them up with dlsym; and record the git
//! revision the binary is built from in `DBBENCH_GIT_REVISION` (read with
//! `option_env!` by src/lab/sysinfo.rs; unset outside a git checkout or
//! without git, which is not an error).
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
    // Any rerun-if-changed line replaces cargo's default (rerun when any file
    // of the package changes), so list what the outputs depend on: this
    // script, the sources (for "-dirty"), and git's HEAD, current branch ref
    // and index (commit, checkout, add). Only existing paths: cargo reruns
    // every build for a missing one.
    let mut watch = vec!["build.rs".to_string(), "src".to_string(), "Cargo.toml".to_string(), "Cargo.lock".to_string()];
    let revision = git(&["rev-parse", "--short=12", "HEAD"]);
    if revision.is_some() {
        for p in ["HEAD", "index", "packed-refs"] {
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
    // --no-optional-locks: do not rewrite .git/index (a refresh would change
    // a watched file and race with git commands run in the checkout).
    if git(&["--no-optional-locks", "status", "--porcelain"]).is_some_and(|s| !s.is_empty()) {
        revision.push_str("-dirty");
    }
    println!("cargo:rustc-env=DBBENCH_GIT_REVISION={revision}");
}
