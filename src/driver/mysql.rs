//! TEMPORARY STUB (replaced by the real driver).
use crate::options::{Options, OptionSpec};
/// Options.
pub fn options() -> Vec<OptionSpec> { Vec::new() }
/// Generic options.
pub fn generic_options() -> Vec<OptionSpec> { Vec::new() }
/// Create.
pub fn create(_o: &Options) -> Result<Box<dyn super::Driver>, String> { Err("mysql driver not built yet".into()) }
