//! A tiny deterministic random stream for the property and fuzz tests:
//! the same seed gives the same cases on every machine, and it needs
//! neither a dependency nor the engine's `rand` (which needs the run's
//! global configuration).

/// A 64-bit linear congruential generator (Knuth's MMIX constants); the
/// upper 53 bits are the output.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }

    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
