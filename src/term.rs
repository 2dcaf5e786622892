//! The terminal: what the subcommands print on stdout.

/// Prints to stdout; a closed pipe (`lab plan | head`) is not an error.
pub fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}
