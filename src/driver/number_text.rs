//! Numbers as text, the same for every driver: what literals and result
//! cells hold. `#[inline]`: called per cell from other modules, and with
//! several codegen units a move here cost oltp_read_only on MariaDB 6% more
//! client instructions per query (bench/guard.sh).

use std::fmt::Write as _;

/// Appends a number the way all three databases read it back exactly:
/// integers without a fraction, tiny/huge magnitudes in exponent form.
#[inline]
pub(crate) fn push_f64(out: &mut String, x: f64) {
    let a = x.abs();
    // Writing into a String cannot fail.
    let _ = if a == 0.0 || (1e-5..1e16).contains(&a) { write!(out, "{x}") } else { write!(out, "{x:?}") };
}

/// Appends an integer's decimal text (no temporary string).
#[inline]
pub(crate) fn write_int(out: &mut Vec<u8>, v: impl std::fmt::Display) {
    use std::io::Write;
    let _ = write!(out, "{v}");
}

/// `push_f64` into a fresh byte vector (result cells).
#[inline]
pub(crate) fn f64_cell(x: f64) -> Vec<u8> {
    let mut s = String::new();
    push_f64(&mut s, x);
    s.into_bytes()
}
