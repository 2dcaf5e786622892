//! Random numbers for scripts: xoroshiro128+ per Lua state, sysbench's
//! distributions, and a process-wide non-repeating sequence.
//!
//! Unlike sysbench 1.0.20 (which seeds workers from libc `random()` after
//! `init()` and leaves `prepare` unseeded), every stream here is derived from
//! `(--rand-seed, phase, thread id)`: two `prepare` runs with one seed write
//! identical data, and thread start order does not matter. With
//! `--rand-seed=0` the seed comes from the clock, as in sysbench.
//! The generator lives in a thread-local because each Lua state is driven by
//! exactly one OS thread at a time.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// The distribution used by `rand.default()` (`--rand-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Flat over `[a, b]`.
    Uniform,
    /// Mean of `iter` uniform draws: bell-shaped around the middle.
    Gaussian,
    /// sysbench 1.0.20's default: most accesses on a small central band.
    Special,
    /// Pareto with `--rand-pareto-h`: low values hot.
    Pareto,
    /// Zipf with `--rand-zipfian-exp` (sysbench 1.1).
    Zipfian,
}

impl Distribution {
    /// Parses a `--rand-type` value.
    pub fn parse(s: &str) -> Option<Distribution> {
        Some(match s {
            "uniform" => Distribution::Uniform,
            "gaussian" => Distribution::Gaussian,
            "special" => Distribution::Special,
            "pareto" => Distribution::Pareto,
            "zipfian" => Distribution::Zipfian,
            _ => return None,
        })
    }
}

/// Process-wide distribution parameters, fixed before any state is created.
#[derive(Debug, Clone, Copy)]
pub struct RandConfig {
    /// `--rand-type`.
    pub default: Distribution,
    /// `--rand-spec-iter`: draws averaged by gaussian and special.
    pub spec_iter: u32,
    /// `--rand-spec-pct`: width of special's hot band, % of the range.
    pub spec_pct: f64,
    /// `--rand-spec-res`: % of special's draws that hit the hot band.
    pub spec_res: f64,
    /// `--rand-pareto-h`.
    pub pareto_h: f64,
    /// `--rand-zipfian-exp`.
    pub zipf_exp: f64,
    /// The effective seed (clock-derived when `--rand-seed=0`).
    pub seed: u64,
    /// `--rand-seed` as given; None when the seed came from the clock.
    pub given_seed: Option<i64>,
}

static CONFIG: OnceLock<RandConfig> = OnceLock::new();
static UNIQUE_COUNTER: AtomicU32 = AtomicU32::new(0);
static UNIQUE_OFFSET: AtomicU64 = AtomicU64::new(0);

/// Sets the process-wide configuration. Later calls are ignored.
pub fn configure(cfg: RandConfig) {
    let _ = CONFIG.set(cfg);
    UNIQUE_OFFSET.store(splitmix(cfg.seed ^ 0x756e_6971_7565), Ordering::Relaxed);
}

fn config() -> RandConfig {
    *CONFIG.get().unwrap_or(&RandConfig {
        default: Distribution::Special,
        spec_iter: 12,
        spec_pct: 1.0,
        spec_res: 75.0,
        pareto_h: 0.2,
        zipf_exp: 0.8,
        seed: 0,
        given_seed: None,
    })
}

/// The effective seed (clock-derived when `--rand-seed=0`).
pub fn seed() -> u64 {
    config().seed
}

/// `--rand-seed` as given, or None when the seed came from the clock.
pub fn given_seed() -> Option<i64> {
    config().given_seed
}

/// Phases get independent streams so that, e.g., `prepare` data does not
/// depend on how many events a previous `run` drew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The main state: script body, init/done, serial commands.
    Main = 1,
    /// A parallel command thread (e.g. `prepare`).
    Command = 2,
    /// A worker during `run`.
    Worker = 3,
}

thread_local! {
    static STATE: Cell<[u64; 2]> = const { Cell::new([0x9e37_79b9_7f4a_7c15, 0xbf58_476d_1ce4_e5b9]) };
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Seeds this OS thread's generator from `(seed, phase, tid)`.
pub fn seed_thread(phase: Phase, tid: u32) {
    let base = config().seed ^ ((phase as u64) << 56) ^ ((tid as u64) << 20);
    let s0 = splitmix(base);
    let s1 = splitmix(s0 ^ 0x5851_f42d_4c95_7f2d);
    STATE.with(|s| s.set([s0, s1 | 1]));
}

/// This thread's generator state: a client multiplexed with others on one
/// OS thread carries its own across suspensions (see `crate::sched`).
pub fn thread_state() -> [u64; 2] {
    STATE.with(Cell::get)
}

/// Restores a state saved with [`thread_state`].
pub fn set_thread_state(s: [u64; 2]) {
    STATE.with(|c| c.set(s));
}

/// Next 64 random bits (xoroshiro128+).
#[inline]
pub fn next_u64() -> u64 {
    STATE.with(|c| {
        let mut s = c.get();
        let result = step(&mut s);
        c.set(s);
        result
    })
}

/// One xoroshiro128+ step on a state held in registers.
#[inline(always)]
fn step(s: &mut [u64; 2]) -> u64 {
    let [s0, mut s1] = *s;
    let result = s0.wrapping_add(s1);
    s1 ^= s0;
    *s = [s0.rotate_left(24) ^ s1 ^ (s1 << 16), s1.rotate_left(37)];
    result
}

/// Uniform double in [0, 1).
#[inline]
pub fn uniform_double() -> f64 {
    (next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform integer in `[a, b]` (inclusive), sysbench's `rand.uniform`.
#[inline]
pub fn uniform(a: u32, b: u32) -> u32 {
    if b <= a {
        return a;
    }
    let span = (b - a) as u64 + 1;
    a + ((uniform_double() * span as f64) as u64).min(span - 1) as u32
}

/// Bell-shaped over `[a, b]`: the mean of `--rand-spec-iter` uniform draws.
pub fn gaussian(a: u32, b: u32) -> u32 {
    if b <= a {
        return a;
    }
    let iter = config().spec_iter.max(1);
    let span = (b - a) as f64 + 1.0;
    let sum: f64 = (0..iter).map(|_| uniform_double()).sum();
    a + ((span * sum / iter as f64) as u64).min((b - a) as u64) as u32
}

/// sysbench's "special" distribution: with probability `--rand-spec-res`%
/// a value from a band of `--rand-spec-pct`% of the range in its middle,
/// otherwise a gaussian value over the whole range.
pub fn special(a: u32, b: u32) -> u32 {
    if b <= a {
        return a;
    }
    let cfg = config();
    if uniform_double() * 100.0 >= cfg.spec_res {
        return gaussian(a, b);
    }
    let t = (b - a) as f64;
    let band = (t * cfg.spec_pct / 100.0).max(1.0);
    let start = a as f64 + (t - band) / 2.0;
    ((start + uniform_double() * (band + 1.0)) as u64).min(b as u64) as u32
}

/// Pareto: `a + floor((b-a+1) * u^(ln h / ln(1-h)))`, low values hot.
pub fn pareto(a: u32, b: u32) -> u32 {
    if b <= a {
        return a;
    }
    let h = config().pareto_h;
    let power = h.ln() / (1.0 - h).ln();
    let span = (b - a) as f64 + 1.0;
    a + ((span * uniform_double().powf(power)) as u64).min((b - a) as u64) as u32
}

/// Zipf over `[a, b]` with exponent `--rand-zipfian-exp`, by
/// rejection-inversion (Hörmann & Derflinger), low values hot.
pub fn zipfian(a: u32, b: u32) -> u32 {
    if b <= a {
        return a;
    }
    let n = (b - a) as f64 + 1.0;
    let s = config().zipf_exp;
    if s <= 0.0 {
        return uniform(a, b);
    }
    // H(x) = integral of x^-s; H^-1 its inverse.
    let h = |x: f64| {
        if (s - 1.0).abs() < 1e-9 {
            x.ln()
        } else {
            (x.powf(1.0 - s) - 1.0) / (1.0 - s)
        }
    };
    let h_inv = |y: f64| {
        if (s - 1.0).abs() < 1e-9 {
            y.exp()
        } else {
            (1.0 + y * (1.0 - s)).powf(1.0 / (1.0 - s))
        }
    };
    let h_x1 = h(1.5) - 1.0;
    let h_n = h(n + 0.5);
    let limit = 2.0 - h_inv(h(2.5) - 2f64.powf(-s));
    for _ in 0..1000 {
        let u = h_n + uniform_double() * (h_x1 - h_n);
        let x = h_inv(u);
        let k = (x + 0.5).floor().clamp(1.0, n);
        if k - x <= limit || u >= h(k + 0.5) - k.powf(-s) {
            return a + (k as u64 - 1) as u32;
        }
    }
    a
}

/// The `--rand-type` distribution.
pub fn default(a: u32, b: u32) -> u32 {
    match config().default {
        Distribution::Uniform => uniform(a, b),
        Distribution::Gaussian => gaussian(a, b),
        Distribution::Special => special(a, b),
        Distribution::Pareto => pareto(a, b),
        Distribution::Zipfian => zipfian(a, b),
    }
}

/// Quadratic-residue permutation of u32 below the largest 32-bit prime;
/// a bijection, so distinct inputs give distinct outputs.
fn permute(x: u32) -> u32 {
    const P: u64 = 4_294_967_291;
    if x as u64 >= P {
        return x;
    }
    let r = ((x as u64 * x as u64) % P) as u32;
    if x as u64 <= P / 2 {
        r
    } else {
        (P as u32) - r
    }
}

/// Process-wide non-repeating sequence of u32 (until 2^32 calls), derived
/// from the seed.
pub fn unique() -> u32 {
    let n = UNIQUE_COUNTER.fetch_add(1, Ordering::Relaxed);
    let off = UNIQUE_OFFSET.load(Ordering::Relaxed) as u32;
    permute(permute(n).wrapping_add(off) ^ 0x5bf0_3635)
}

/// sysbench 0.5's `sb_rand_uniq(a, b)`: the next [`unique`] value that lies
/// in `[a, b]`, so still never repeated. Gives up after 2^32 draws (the
/// whole sequence) and returns `a`.
pub fn unique_in(a: u32, b: u32) -> u32 {
    if b < a {
        return a;
    }
    if a == 0 && b == u32::MAX {
        return unique();
    }
    for _ in 0..=u32::MAX as u64 {
        let v = unique();
        if v >= a && v <= b {
            return v;
        }
    }
    a
}

/// `rand.string(fmt)`: `#` → digit, `@` → lowercase letter, else copied.
pub fn string(fmt: &[u8]) -> Vec<u8> {
    let mut out = vec![0; fmt.len()];
    fill_string(fmt, &mut out);
    out
}

/// [`string`] into `out` (as long as `fmt`; extra bytes of either are
/// ignored), without allocating.
#[inline]
pub fn fill_string(fmt: &[u8], out: &mut [u8]) {
    // The draws of `uniform(0, 9)` / `uniform(0, 25)`, with the state kept
    // in registers for the whole string (prepare draws 150 digits per
    // sbtest row; the thread-local access per digit was 40% of its CPU).
    STATE.with(|c| {
        let mut s = c.get();
        for (o, &ch) in out.iter_mut().zip(fmt) {
            let (base, span) = match ch {
                b'#' => (b'0', 10u64),
                b'@' => (b'a', 26u64),
                other => {
                    *o = other;
                    continue;
                }
            };
            *o = base + draw_below(step(&mut s) >> 11, span) as u8;
        }
        c.set(s);
    })
}

/// `uniform(0, span - 1)`'s result for the 53 bits `m`:
/// `trunc(fl(m / 2^53 * span))`, computed exactly in integers where that cannot differ. The
/// exact product is `q + rem / 2^53`; rounding it to a double can reach
/// `q + 1` only from within half an ulp below (at most 8 units of 2^-53 for
/// values under 16), so outside the last 64 units `q` is the answer and
/// inside them the float expression itself is evaluated.
#[inline(always)]
fn draw_below(m: u64, span: u64) -> u64 {
    const ONE: u64 = 1 << 53;
    let p = m * span;
    if p & (ONE - 1) < ONE - 64 {
        p >> 53
    } else {
        draw_below_float(m, span)
    }
}

/// [`uniform`]'s own arithmetic for `uniform(0, span - 1)`.
#[inline(never)]
fn draw_below_float(m: u64, span: u64) -> u64 {
    let d = m as f64 * (1.0 / (1u64 << 53) as f64);
    ((d * span as f64) as u64).min(span - 1)
}

/// `rand.varstring`'s characters (`0`..`z`) into `out` (its length is
/// drawn by the caller).
pub fn fill_varstring(out: &mut [u8]) {
    for b in out {
        *b = b'0' + uniform(0, (b'z' - b'0') as u32) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_stays_in_range_and_hits_both_ends() {
        seed_thread(Phase::Worker, 7);
        let (mut lo, mut hi) = (false, false);
        for _ in 0..10_000 {
            let v = uniform(1, 10);
            assert!((1..=10).contains(&v));
            lo |= v == 1;
            hi |= v == 10;
        }
        assert!(lo && hi);
    }

    #[test]
    fn same_seed_phase_tid_gives_same_stream() {
        seed_thread(Phase::Command, 3);
        let a: Vec<u64> = (0..5).map(|_| next_u64()).collect();
        seed_thread(Phase::Command, 4);
        let b: Vec<u64> = (0..5).map(|_| next_u64()).collect();
        seed_thread(Phase::Command, 3);
        let c: Vec<u64> = (0..5).map(|_| next_u64()).collect();
        assert_eq!(a, c);
        assert_ne!(a, b);
    }

    #[test]
    fn distributions_stay_in_range() {
        seed_thread(Phase::Worker, 1);
        for f in [gaussian, special, pareto, zipfian] {
            for _ in 0..5_000 {
                let v = f(100, 200);
                assert!((100..=200).contains(&v), "{v}");
            }
        }
    }

    #[test]
    fn special_concentrates_on_a_small_band() {
        seed_thread(Phase::Worker, 2);
        let n = 20_000;
        let hot = (0..n).filter(|_| (4_900..=5_100).contains(&special(1, 10_000))).count();
        // 75% of draws land in the 1% band (plus gaussian draws near the middle).
        assert!(hot as f64 / n as f64 > 0.7, "{hot}");
    }

    #[test]
    fn zipfian_prefers_low_values() {
        seed_thread(Phase::Worker, 3);
        let low = (0..10_000).filter(|_| zipfian(1, 1000) <= 10).count();
        assert!(low > 2_000, "{low}");
    }

    #[test]
    fn unique_does_not_repeat() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            assert!(seen.insert(unique()));
        }
    }

    #[test]
    fn string_follows_template() {
        seed_thread(Phase::Worker, 4);
        let s = string(b"##-@@x");
        assert!(s[0].is_ascii_digit() && s[1].is_ascii_digit() && s[2] == b'-');
        assert!(s[3].is_ascii_lowercase() && s[4].is_ascii_lowercase() && s[5] == b'x');
    }

    /// The integer shortcut of `draw_below` equals the float arithmetic,
    /// also where the product lies just below a whole number (where a
    /// double may round up).
    #[test]
    fn draw_below_equals_the_float_arithmetic() {
        const ONE: u64 = 1 << 53;
        for span in [10u64, 26, 75, 3] {
            for q in 0..span {
                let edge = ((q + 1) * ONE).div_ceil(span);
                for m in edge.saturating_sub(200)..(edge + 200).min(ONE) {
                    assert_eq!(draw_below(m, span), draw_below_float(m, span), "m {m} span {span}");
                }
            }
            seed_thread(Phase::Worker, 9);
            for _ in 0..200_000 {
                let m = next_u64() >> 11;
                assert_eq!(draw_below(m, span), draw_below_float(m, span), "m {m} span {span}");
            }
            assert_eq!(draw_below(ONE - 1, span), span - 1);
            assert_eq!(draw_below(0, span), 0);
        }
    }

    /// The register-held loop of `fill_string` draws exactly what a
    /// `uniform` per character draws (prepared data must not change).
    #[test]
    fn fill_string_draws_as_uniform_per_character() {
        let fmt = b"###########-@@@@ x-#@";
        for tid in 0..5000 {
            seed_thread(Phase::Command, tid);
            let want: Vec<u8> = fmt
                .iter()
                .map(|&c| match c {
                    b'#' => b'0' + uniform(0, 9) as u8,
                    b'@' => b'a' + uniform(0, 25) as u8,
                    other => other,
                })
                .collect();
            let after = next_u64();
            seed_thread(Phase::Command, tid);
            assert_eq!(string(fmt), want);
            assert_eq!(next_u64(), after, "the state after the string");
        }
    }
}
