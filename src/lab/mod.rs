//! The benchmark lab: `dbbench lab plan|run|summary SPEC` and `dbbench server`.
//!
//! Data flow: `spec` (TOML → validated `Spec`) → `plan` (cells × repeats in
//! run order) → `runner` (servers via `server`, data via `datadir`, hooks and
//! status via `sql`, OS samples via `sampler`, one `dbbench run` child per
//! run) → `store` (results store) → `crate::report` (tables, HTML) and
//! `summary` (the lab's overhead).
//! See ARCHITECTURE.md and docs/lab.md.

pub mod cli;
pub mod clients;
pub mod cpus;
pub mod datadir;
pub mod hostlock;
pub mod live;
mod outcome;
pub mod plan;
pub mod product;
pub mod runner;
pub mod sampler;
pub mod server;
pub mod spec;
pub mod sql;
pub mod summary;
pub mod sysinfo;
