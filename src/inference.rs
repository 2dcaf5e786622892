//! Statistics for `dbbench report`: summaries of a cell's repeats, Student's t distribution, Welch's t-test and
//! Fieller's confidence interval of a ratio of means.
//!
//! A report compares a cell (say 32 threads, query cache off) with a baseline and prints "+53%". With the three
//! or so repeats a benchmark can afford per cell, such a figure is only honest beside its uncertainty, so
//! everything here is built for small samples: Student t quantiles rather than normal ones, Welch's
//! unequal-variance degrees of freedom, and Fieller's interval for a ratio, which (unlike "ratio ± error") is
//! asymmetric as the ratio's distribution is, and says plainly when the denominator is too noisy to bound the
//! ratio at all.
//!
//! The distribution functions are written here (std has no incomplete beta, gamma or inverse normal):
//! - Student's t CDF through the regularized incomplete beta function, evaluated by its continued fraction
//!   (modified Lentz) with ln Γ from Lanczos' approximation; the two tails and the centre are computed
//!   separately so that small probabilities keep their relative precision.
//! - The t quantile by a bracketed, safeguarded Newton iteration on that CDF.
//! - Above [`LARGE_DF`] degrees of freedom, Hill's normalizing transformation to the normal distribution, and
//!   its exact inverse for the quantile. The normal quantile is Acklam's rational approximation polished by
//!   Newton steps on an erfc written here (series and continued fraction of the incomplete gamma Γ(½, w²)).

use std::f64::consts::{PI, SQRT_2};

/// Summary of one cell's repeats (e.g. three throughput values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); None when n < 2, where spread cannot be estimated.
    pub sd: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarizes `values`; None for an empty slice.
    ///
    /// Nothing is filtered: the caller drops NaN (failed runs) first, and a NaN or infinity left in makes the
    /// summary meaningless. The standard deviation is a corrected two-pass sum over deviations scaled by the
    /// largest one, so neither huge values (1e200, whose squares overflow) nor tiny ones (1e-200, whose squares
    /// underflow) nor a large common offset (timestamps, cumulative counters) lose it.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let first = *values.first()?;
        let n = values.len();
        let count = n as f64;
        let sum: f64 = values.iter().sum();
        // A sum of finite values can overflow although their mean cannot.
        let rough_mean = if sum.is_finite() { sum / count } else { values.iter().map(|v| v / count).sum() };
        let scale = values.iter().fold(0.0_f64, |m, v| m.max((v - rough_mean).abs()));
        let (mean, sd) = if scale == 0.0 {
            (rough_mean, (n >= 2).then_some(0.0))
        } else {
            let (mut deviation_sum, mut square_sum) = (0.0, 0.0);
            for v in values {
                let d = (v - rough_mean) / scale;
                deviation_sum += d;
                square_sum += d * d;
            }
            // deviation_sum is the rounding error of rough_mean; it corrects both the mean and the squares.
            let mean = rough_mean + deviation_sum * scale / count;
            let sd = (n >= 2).then(|| {
                scale * ((square_sum - deviation_sum * deviation_sum / count).max(0.0) / (count - 1.0)).sqrt()
            });
            (mean, sd)
        };
        let min = values.iter().copied().fold(first, f64::min);
        let max = values.iter().copied().fold(first, f64::max);
        Some(Summary { n, mean, sd, min, max })
    }

    /// Coefficient of variation, sd / |mean|: the run-to-run noise as a fraction of the level.
    /// None without a standard deviation or when the mean is 0 (no level to be a fraction of).
    pub fn cv(&self) -> Option<f64> {
        let sd = self.sd?;
        (self.mean != 0.0).then(|| sd / self.mean.abs())
    }

    /// Standard error of the mean, sd / √n; None when n < 2.
    pub fn sem(&self) -> Option<f64> {
        Some(self.sd? / (self.n as f64).sqrt())
    }

    /// Two-sided Student t confidence interval of the mean at `level` (e.g. 0.95), as (low, high).
    /// None when n < 2 or `level` is not strictly between 0 and 1.
    pub fn mean_ci(&self, level: f64) -> Option<(f64, f64)> {
        let sem = self.sem()?;
        let t = two_sided_quantile(level, (self.n - 1) as f64)?;
        Some((self.mean - t * sem, self.mean + t * sem))
    }
}

/// Confidence interval of a ratio of two independent means, by Fieller's theorem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RatioCi {
    /// The interval [lo, hi], lo ≤ hi, both finite.
    Bounded {
        /// Lower bound.
        lo: f64,
        /// Upper bound.
        hi: f64,
    },
    /// The denominator's mean is not significantly different from 0 at this level, so the set of ratios the
    /// data allow is not a finite range (it is the whole line, or two half-lines around a gap). Also returned
    /// in the absurd case of finite bounds beyond the largest double.
    Unbounded,
    /// A side has fewer than 2 values, so its standard error, and with it any interval, is unknown.
    Unavailable,
}

/// Ratio of two means a/b with its uncertainty: the figure behind "(32/off) +53% at 4 threads".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// mean_a / mean_b.
    pub ratio: f64,
    /// Fieller confidence interval of the ratio at `level`.
    pub ci: RatioCi,
    /// Welch–Satterthwaite degrees of freedom used for the interval's t quantile; infinite when both standard
    /// errors are 0 (the normal quantile is used, though the interval is then a point anyway); None when a
    /// side has n < 2 (or in the absurd case of a standard error overflowing when scaled by the denominator).
    pub df: Option<f64>,
    /// Confidence level of `ci`, e.g. 0.95.
    pub level: f64,
    /// First-order (delta method) standard error of the ratio, ratio · √((sem_a/mean_a)² + (sem_b/mean_b)²), as
    /// hyperfine prints "1.53 ± 0.04"; computed as √(sem_a² + ratio²·sem_b²) / |mean_b|, which is the same
    /// when mean_a ≠ 0, never negative, and still defined when mean_a = 0. None when a side has n < 2 (or it
    /// overflows).
    pub se: Option<f64>,
}

impl Ratio {
    /// The ratio a/b of the means of two independent samples, with its Fieller interval at `level`.
    ///
    /// None when mean_b is 0 or the ratio overflows (no ratio to report), or when `level` is not strictly
    /// between 0 and 1.
    ///
    /// Fieller's interval is the set of ρ for which ā − ρ·b̄ (whose expectation is 0 at the true ratio) is not
    /// significantly different from 0: with va = sem_a², vb = sem_b² (covariance 0, the samples being
    /// independent) and t the two-sided t quantile, (ā − ρb̄)² ≤ t²(va + ρ²vb). Writing g = t²·vb / b̄²:
    /// - g ≥ 1: b̄ is not significantly different from 0 and the set is not a finite range: Unbounded.
    /// - g < 1: ρ ∈ [ (ā·b̄ ∓ t·√(ā²·vb + b̄²·va − t²·va·vb)) / (b̄² − t²·vb) ].
    ///
    /// Divided through by b̄², with r = ā/b̄, ea = sem_a/|b̄|, eb = sem_b/|b̄|, that is
    /// [ r ∓ t·√(ea²·(1 − g) + r²·eb²) ] / (1 − g), the form computed here: the radicand is a sum of
    /// non-negative terms when g < 1 (no NaN from rounding), and nothing is squared at the data's own
    /// magnitude (no overflow at 1e200, no underflow at 1e-200).
    ///
    /// The degrees of freedom are Welch–Satterthwaite's for the linear combination ā − r·b̄:
    /// df = (va + r²vb)² / (va²/(na − 1) + r⁴vb²/(nb − 1)). When va = vb = 0 df is undefined and taken as
    /// infinite (the interval is the point r either way); when one of them is 0, df is the other side's n − 1.
    pub fn of(a: &Summary, b: &Summary, level: f64) -> Option<Ratio> {
        if b.mean == 0.0 || !(level > 0.0 && level < 1.0) {
            return None;
        }
        let ratio = a.mean / b.mean;
        if !ratio.is_finite() {
            return None;
        }
        let (Some(sem_a), Some(sem_b)) = (a.sem(), b.sem()) else {
            return Some(Ratio { ratio, ci: RatioCi::Unavailable, df: None, level, se: None });
        };
        let ea = sem_a / b.mean.abs();
        let eb = sem_b / b.mean.abs();
        // The standard errors of ā/|b̄| and of r·b̄/|b̄|, the two terms of the linear combination.
        let (part_a, part_b) = (ea, (ratio * eb).abs());
        let se = Some(part_a.hypot(part_b)).filter(|se| se.is_finite());
        if !part_a.is_finite() || !part_b.is_finite() {
            return Some(Ratio { ratio, ci: RatioCi::Unbounded, df: None, level, se });
        }
        let df = welch_df(part_a, (a.n - 1) as f64, part_b, (b.n - 1) as f64);
        let t = two_sided_quantile(level, df)?;
        let g = (t * eb) * (t * eb);
        let ci = if g < 1.0 {
            let half_width = t * (ea * (1.0 - g).sqrt()).hypot(ratio * eb) / (1.0 - g);
            let centre = ratio / (1.0 - g);
            let (lo, hi) = (centre - half_width, centre + half_width);
            if lo.is_finite() && hi.is_finite() {
                RatioCi::Bounded { lo, hi }
            } else {
                RatioCi::Unbounded
            }
        } else {
            RatioCi::Unbounded
        };
        Some(Ratio { ratio, ci, df: Some(df), level, se })
    }

    /// The ratio of two figures that cannot be negative: a lower bound below 0 (possible when the numerator's
    /// mean is not significantly above 0) is cut at 0, where the true ratio must lie. The interval keeps its
    /// coverage, and whether it includes 1 does not change.
    pub fn non_negative(self) -> Ratio {
        match self.ci {
            RatioCi::Bounded { lo, hi } => Ratio { ci: RatioCi::Bounded { lo: lo.max(0.0), hi }, ..self },
            _ => self,
        }
    }

    /// Whether the interval excludes 1, i.e. a and b really differ at this level. false when the interval is
    /// Unbounded or Unavailable: no interval, no claim.
    pub fn significant(&self) -> bool {
        match self.ci {
            RatioCi::Bounded { lo, hi } => lo > 1.0 || hi < 1.0,
            RatioCi::Unbounded | RatioCi::Unavailable => false,
        }
    }
}

/// The median of some values (the mean of the middle two for an even
/// count); None when there are none.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// Two-sided p-value of Welch's unequal-variance t-test of mean_a == mean_b.
///
/// None when a side has n < 2 (no variance estimate) or both standard deviations are 0 (the statistic is 0/0:
/// equal constants or different constants, and no test can say how surprising either is).
pub fn welch_p(a: &Summary, b: &Summary) -> Option<f64> {
    let (sem_a, sem_b) = (a.sem()?, b.sem()?);
    if sem_a == 0.0 && sem_b == 0.0 {
        return None;
    }
    let t = (a.mean - b.mean) / sem_a.hypot(sem_b);
    let df = welch_df(sem_a, (a.n - 1) as f64, sem_b, (b.n - 1) as f64);
    Some((2.0 * t_cdf(-t.abs(), df)).min(1.0))
}

/// Welch–Satterthwaite degrees of freedom of a sum of two independent estimates with standard errors `se_1`,
/// `se_2` (≥ 0) carrying `df_1`, `df_2` degrees of freedom: (v1 + v2)² / (v1²/df_1 + v2²/df_2), v = se².
///
/// Both standard errors are divided by the larger first: the formula is scale-free, and the fourth powers
/// would otherwise overflow or underflow for values far from 1. Infinite when both are 0 (no variance to
/// estimate, so no uncertainty about it: the normal limit).
fn welch_df(se_1: f64, df_1: f64, se_2: f64, df_2: f64) -> f64 {
    let scale = se_1.max(se_2);
    if scale == 0.0 {
        return f64::INFINITY;
    }
    let v1 = (se_1 / scale).powi(2);
    let v2 = (se_2 / scale).powi(2);
    (v1 + v2).powi(2) / (v1 * v1 / df_1 + v2 * v2 / df_2)
}

/// The t quantile that leaves (1 − level)/2 in each tail: the multiplier of a standard error in a two-sided
/// interval. None when `level` is not strictly between 0 and 1.
///
/// Taken as −t_quantile((1 − level)/2) rather than t_quantile(1 − (1 − level)/2) because the small tail
/// probability is exact in floating point while 1 − it is rounded (noticeably so at levels like 0.999999).
fn two_sided_quantile(level: f64, df: f64) -> Option<f64> {
    (level > 0.0 && level < 1.0).then(|| -t_quantile((1.0 - level) / 2.0, df))
}

/// Above this many degrees of freedom the t distribution is computed by Hill's normalizing transformation of
/// the normal ([`large_df_tail`]) instead of the incomplete beta function. The beta function's continued
/// fraction loses about df/t² ulps at large df (its terms nearly cancel when x = df/(df + t²) is close to 1:
/// 4e-10 relative at df = 1e7, t = 2), while Hill's error falls steeply with df: against 50-digit references it
/// is below 1e-15 up to t = 20 and 1.4e-12 at t = 40 from here on, where the beta function's loss is 6e-13.
const LARGE_DF: f64 = 1e4;

/// Student's t cumulative distribution function P(T ≤ t) with `df` degrees of freedom.
///
/// `df` > 0 and may be fractional (Welch) or infinite (the standard normal). NaN for a NaN argument or
/// df ≤ 0. The lower tail is computed directly rather than as 1 − the upper, so small probabilities (p-values)
/// keep their relative precision: t_cdf(−40, 30) = 6.863e-28 to 1e-13, where 1 − t_cdf(40, 30) is 0.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    let lower_tail = if df > LARGE_DF { large_df_tail(t.abs(), df) } else { StudentT::new(df).tail(t.abs()) };
    if t < 0.0 {
        lower_tail
    } else {
        1.0 - lower_tail
    }
}

/// Student's t quantile: the t with t_cdf(t, df) = p, for p in (0, 1) and df > 0 (fractional or infinite).
///
/// −∞ and +∞ for p = 0 and 1; NaN for p outside [0, 1], a NaN argument, or df ≤ 0. Accurate to about 1e-13
/// relative over p down to 1e-300 (checked against 50-digit mpmath; the tests hold it to 1e-12). With df below
/// 1 the quantile can exceed the largest double, and is then ±∞.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || df.is_nan() || df <= 0.0 || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    // Work with the smaller tail: for p ≥ 0.5, 1 − p is exact (Sterbenz), so nothing is lost.
    let (tail, sign) = if p < 0.5 { (p, -1.0) } else { (1.0 - p, 1.0) };
    if tail == 0.0 {
        return sign * f64::INFINITY;
    }
    let upper = if df > LARGE_DF { large_df_upper_quantile(tail, df) } else { StudentT::new(df).upper_quantile(tail) };
    sign * upper
}

/// Student's t distribution with its df-dependent constants computed once (a quantile evaluates the CDF and
/// density dozens of times).
struct StudentT {
    /// Degrees of freedom.
    df: f64,
    /// ln B(df/2, ½), the incomplete beta function's normalizer.
    ln_beta: f64,
    /// ln of the density at 0: ln Γ((df+1)/2) − ln Γ(df/2) − ½ ln(df·π).
    ln_density_at_0: f64,
}

/// Most iterations of a continued fraction, a guard against a non-converging one; they need at most a few hundred.
const MAX_CONTINUED_FRACTION_TERMS: usize = 100_000;

/// Relative change of a continued fraction's value at which it has converged.
const CONTINUED_FRACTION_EPSILON: f64 = 1e-16;

/// Stand-in for a zero denominator in Lentz's method (a zero would make the next step divide by 0).
const LENTZ_TINY: f64 = 1e-300;

/// Most safeguarded Newton iterations of a quantile, a guard: they converge in well under 100.
const MAX_ROOT_ITERATIONS: usize = 1_000;

impl StudentT {
    /// The t distribution with `df` (> 0, finite) degrees of freedom.
    fn new(df: f64) -> StudentT {
        let ln_gamma_ratio = ln_gamma_ratio_half(df / 2.0);
        StudentT { df, ln_beta: 0.5 * PI.ln() - ln_gamma_ratio, ln_density_at_0: ln_gamma_ratio - 0.5 * (df * PI).ln() }
    }

    /// The incomplete beta arguments of |t|: x = df/(df + t²) and y = 1 − x = t²/(df + t²), each with its
    /// logarithm, computed from s = |t|/√df or its inverse (whichever is ≤ 1) so that neither t² overflows nor
    /// 1 − x cancels. The inverse's logarithm is taken from the quotient unless that is subnormal or 0, as
    /// happens at small df for |t| near 1e300 (df = 0.05 has quantiles that large); x may then be 0 while ln x is
    /// still finite, which is why [`incomplete_beta`] tests the logarithms.
    fn beta_arguments(&self, t: f64) -> (f64, f64, f64, f64) {
        let (t, sqrt_df) = (t.abs(), self.df.sqrt());
        if t <= sqrt_df {
            let s = t / sqrt_df;
            let s2 = s * s;
            let ln_1p = s2.ln_1p();
            (1.0 / (1.0 + s2), s2 / (1.0 + s2), -ln_1p, 2.0 * s.ln() - ln_1p)
        } else {
            let r = sqrt_df / t;
            let ln_r = if r >= f64::MIN_POSITIVE { r.ln() } else { sqrt_df.ln() - t.ln() };
            let r2 = r * r;
            let ln_1p = r2.ln_1p();
            (r2 / (1.0 + r2), 1.0 / (1.0 + r2), 2.0 * ln_r - ln_1p, -ln_1p)
        }
    }

    /// P(T > t) for t ≥ 0: ½·I_x(df/2, ½).
    fn tail(&self, t: f64) -> f64 {
        let (x, y, ln_x, ln_y) = self.beta_arguments(t);
        0.5 * incomplete_beta(self.df / 2.0, 0.5, (x, ln_x), (y, ln_y), self.ln_beta)
    }

    /// P(0 < T < t) for t ≥ 0: ½·I_y(½, df/2). Used near the median, where the tail is close to ½ and a
    /// difference from ½ would lose the digits that matter.
    fn centre(&self, t: f64) -> f64 {
        let (x, y, ln_x, ln_y) = self.beta_arguments(t);
        0.5 * incomplete_beta(0.5, self.df / 2.0, (y, ln_y), (x, ln_x), self.ln_beta)
    }

    /// Probability density at t: f(0)·(1 + t²/df)^(−(df+1)/2) = f(0)·x^((df+1)/2), in logs so that it underflows
    /// to 0 gracefully for large t.
    fn density(&self, t: f64) -> f64 {
        let (_, _, ln_x, _) = self.beta_arguments(t);
        (self.ln_density_at_0 + 0.5 * (self.df + 1.0) * ln_x).exp()
    }

    /// The t > 0 with P(T > t) = `tail`, for `tail` in (0, ½).
    ///
    /// A bracket [lo, hi] is grown (hi → 2·hi², reaching 1e300 in ten steps for the heaviest tails) until it
    /// holds the root; then a Newton step is taken whenever it lands inside the bracket, and a bisection
    /// (geometric while the bracket spans more than a factor 2) otherwise: Newton's speed with bisection's
    /// guarantee. The equation solved is increasing in t and keeps relative precision:
    /// ln tail − ln P(T > t) = 0 in the tails, where the log makes it nearly linear (Newton on the probability
    /// itself would crawl by about 1/t a step through hundreds of orders of magnitude), and
    /// P(0 < T < t) − (½ − tail) = 0 near the median, where t is small and the log would lose it.
    fn upper_quantile(&self, tail: f64) -> f64 {
        let near_median = tail > 0.25;
        // Exact for tail in [0.25, 0.5] (Sterbenz).
        let centre_target = 0.5 - tail;
        let ln_tail = tail.ln();
        // The residual and its derivative in t.
        let equation = |t: f64| {
            if near_median {
                (self.centre(t) - centre_target, self.density(t))
            } else {
                let upper = self.tail(t);
                (ln_tail - upper.ln(), self.density(t) / upper)
            }
        };
        let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
        while equation(hi).0 < 0.0 {
            if hi == f64::MAX {
                return f64::INFINITY;
            }
            lo = hi;
            hi = (2.0 * hi * hi).min(f64::MAX);
        }
        let mut t = if lo > 0.0 { lo.sqrt() * hi.sqrt() } else { 0.5 * hi };
        for _ in 0..MAX_ROOT_ITERATIONS {
            let (residual, slope) = equation(t);
            if residual == 0.0 {
                return t;
            }
            if residual < 0.0 {
                lo = t;
            } else {
                hi = t;
            }
            // NaN where the tail underflows to 0 (slope 0/0): then the bisection takes over.
            let newton = t - residual / slope;
            let next = if newton > lo && newton < hi {
                newton
            } else if lo > 0.0 && hi > 2.0 * lo {
                lo.sqrt() * hi.sqrt()
            } else {
                0.5 * (lo + hi)
            };
            // A Newton step this small leaves an error of its square: done. A bracket this narrow: done too.
            if (next - t).abs() <= 1e-14 * next || hi - lo <= 4.0 * f64::EPSILON * hi {
                return next;
            }
            t = next;
        }
        t
    }
}

/// Regularized incomplete beta function I_x(a, b), given x and y = 1 − x each with its logarithm (computed
/// by the caller without cancellation) and ln B(a, b).
///
/// The continued fraction converges fast for x < (a+1)/(a+b+2); above that the symmetry
/// I_x(a, b) = 1 − I_y(b, a) is used. Either way the result is either computed directly or is 1 − a value
/// below about ½, so a small result is never a difference of nearly equal numbers.
fn incomplete_beta(a: f64, b: f64, (x, ln_x): (f64, f64), (y, ln_y): (f64, f64), ln_beta: f64) -> f64 {
    // Tested on the logarithms: x itself underflows to 0 beyond |t| ≈ 1e162·√df (quantiles of small df reach
    // that), where I_x is not 0 yet.
    if ln_x == f64::NEG_INFINITY {
        return 0.0;
    }
    if ln_y == f64::NEG_INFINITY {
        return 1.0;
    }
    let front = (a * ln_x + b * ln_y - ln_beta).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        (1.0 - front * beta_continued_fraction(b, a, y) / b).clamp(0.0, 1.0)
    }
}

/// The continued fraction of the incomplete beta function, I_x(a, b)·a·B(a, b) / (x^a·y^b), evaluated by the
/// modified Lentz method (Numerical Recipes §6.4), in which even and odd steps alternate.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    let nonzero = |v: f64| if v.abs() < LENTZ_TINY { LENTZ_TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=MAX_CONTINUED_FRACTION_TERMS {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((a - 1.0 + m2) * (a + m2));
        d = 1.0 / nonzero(1.0 + even * d);
        c = nonzero(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2));
        d = 1.0 / nonzero(1.0 + odd * d);
        c = nonzero(1.0 + odd / c);
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < CONTINUED_FRACTION_EPSILON {
            break;
        }
    }
    h
}

/// Lanczos coefficients (g = 7, 9 terms), good to about 1e-15 relative for Γ.
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// ln Γ(z) for z > 0, by Lanczos' approximation, with the reflection formula below ½ where it is less accurate.
fn ln_gamma(z: f64) -> f64 {
    if z < 0.5 {
        return (PI / (PI * z).sin()).ln() - ln_gamma(1.0 - z);
    }
    let z = z - 1.0;
    let series = LANCZOS[1..].iter().enumerate().fold(LANCZOS[0], |sum, (i, c)| sum + c / (z + i as f64 + 1.0));
    let base = z + 7.5;
    0.5 * (2.0 * PI).ln() + (z + 0.5) * base.ln() - base + series.ln()
}

/// ln Γ(a + ½) − ln Γ(a) for a > 0.
///
/// For large a the two logs are large and nearly equal (at a = 5000, df = 1e4, about 4e4 each), and their
/// difference would lose 4 to 5 digits, which exp() then passes on to every tail probability; from a = 10 on it
/// is taken from Stirling's series instead, in a form with no such cancellation:
/// ½ ln a + (a·ln(1 + 1/(2a)) − ½) + S(a + ½) − S(a), S the series' tail in 1/z.
fn ln_gamma_ratio_half(a: f64) -> f64 {
    if a < 10.0 {
        return ln_gamma(a + 0.5) - ln_gamma(a);
    }
    0.5 * a.ln() + (a * (0.5 / a).ln_1p() - 0.5) + stirling_tail(a + 0.5) - stirling_tail(a)
}

/// The correction terms of Stirling's series, ln Γ(z) − ((z − ½) ln z − z + ½ ln 2π), to 1/z¹³: Bernoulli
/// numbers B₂ₖ / (2k(2k − 1) z^(2k−1)). At z ≥ 10 the first omitted term is below 3e-17.
fn stirling_tail(z: f64) -> f64 {
    const COEFFICIENTS: [f64; 7] =
        [1.0 / 12.0, -1.0 / 360.0, 1.0 / 1260.0, -1.0 / 1680.0, 1.0 / 1188.0, -691.0 / 360_360.0, 1.0 / 156.0];
    let inverse_square = 1.0 / (z * z);
    COEFFICIENTS.iter().rev().fold(0.0, |sum, c| sum * inverse_square + c) / z
}

/// Hill's normalizing transformation of a t value for df > [`LARGE_DF`] (G. W. Hill, Algorithm 395, Comm. ACM
/// 13(10), 1970): with y = (df − ½)·ln(1 + t²/df), z = √y·(1 + (y + 3)/b + R(y)/b), b = 48(df − ½)² and
/// R(y) = (((−0.4y − 3.3)y − 24)y − 85.5)/(0.8y² + 100 + b), P(T > t) = Φ(−z). Returns z, as a function of
/// s = √y so that [`large_df_upper_quantile`] can invert it.
fn hill_z(s: f64, df: f64) -> f64 {
    let b = 48.0 * (df - 0.5) * (df - 0.5);
    let y = s * s;
    let r = (((-0.4 * y - 3.3) * y - 24.0) * y - 85.5) / (0.8 * y * y + 100.0 + b);
    s * (1.0 + (y + 3.0 + r) / b)
}

/// Past this y = (df − ½)·ln(1 + t²/df) the t tail is below the smallest double (z ≥ 44, Φ(−38.5) already is).
const LARGE_DF_UNDERFLOW_Y: f64 = 2000.0;

/// P(T > t) for t ≥ 0 and df > [`LARGE_DF`], by Hill's transformation ([`hill_z`]), whose relative error is
/// below 1e-15 for t ≤ 20 and about 1e-12 at t = 40 (where the tail is 1e-320) at df = 1e4, and smaller at
/// larger df. At df = ∞ it is the normal tail exactly. y is computed as t²·(1 − ½/df)·(ln(1 + u)/u), u = t²/df,
/// so that an infinite df gives t² rather than ∞·0.
fn large_df_tail(t: f64, df: f64) -> f64 {
    let u = t * t / df;
    let log_ratio = if u == 0.0 { 1.0 } else { u.ln_1p() / u };
    let y = t * t * (1.0 - 0.5 / df) * log_ratio;
    // Also catches t = ∞ (y NaN from ∞/∞).
    if y.is_nan() || y > LARGE_DF_UNDERFLOW_Y {
        return 0.0;
    }
    0.5 * erfc_nonnegative(hill_z(y.sqrt(), df) / SQRT_2)
}

/// The t > 0 with P(T > t) = `tail` for df > [`LARGE_DF`]: the exact inverse of [`large_df_tail`], so that
/// t_cdf and t_quantile agree. The normal quantile z gives Hill's z; s = √y solves hill_z(s) = z by fixed-point
/// iteration s = z / (hill_z(s)/s), which contracts by a factor below 1e-6 (the corrections are that small
/// here); then t² = df·(e^(y/(df − ½)) − 1), written as y·(expm1(w)/w)/(1 − ½/df), w = y/(df − ½), so that
/// df = ∞ gives t = z.
fn large_df_upper_quantile(tail: f64, df: f64) -> f64 {
    let z = -normal_lower_quantile(tail);
    let mut s = z;
    for _ in 0..4 {
        s = z / (hill_z(s, df) / s);
    }
    let y = s * s;
    let w = y / (df - 0.5);
    let expm1_ratio = if w == 0.0 { 1.0 } else { w.exp_m1() / w };
    (y * expm1_ratio / (1.0 - 0.5 / df)).sqrt()
}

/// Below this argument erf is summed by its series; above it erfc comes from its continued fraction. The
/// split is Numerical Recipes' x² < a + 1 for the incomplete gamma function with a = ½: each method converges
/// fast on its side, and erfc = 1 − erf stays above 0.08 where it is a difference.
const ERF_SERIES_LIMIT: f64 = 1.224_744_871_391_589;

/// erf(w) for 0 ≤ w < [`ERF_SERIES_LIMIT`]: (2w/√π)·e^(−w²)·Σ (2w²)ⁿ / (1·3·…·(2n+1)), whose terms are all
/// positive (no cancellation, relative precision even for tiny w).
fn erf_series(w: f64) -> f64 {
    let x2 = 2.0 * w * w;
    let (mut term, mut sum) = (1.0, 1.0);
    let mut n = 0.0;
    while term > 1e-17 * sum {
        n += 1.0;
        term *= x2 / (2.0 * n + 1.0);
        sum += term;
    }
    2.0 * w / PI.sqrt() * (-w * w).exp() * sum
}

/// Scaled complementary error function e^(w²)·erfc(w) for w ≥ [`ERF_SERIES_LIMIT`], from the continued fraction
/// of the upper incomplete gamma function Γ(½, w²) (Numerical Recipes §6.2, modified Lentz). Scaled, because
/// erfc itself underflows past w ≈ 27 while callers need its logarithm further out.
fn erfc_scaled_continued_fraction(w: f64) -> f64 {
    let x = w * w;
    let mut b = x + 0.5;
    let mut c = 1.0 / LENTZ_TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..=MAX_CONTINUED_FRACTION_TERMS {
        let i = i as f64;
        let an = -i * (i - 0.5);
        b += 2.0;
        d = an * d + b;
        d = 1.0 / if d.abs() < LENTZ_TINY { LENTZ_TINY } else { d };
        c = b + an / c;
        if c.abs() < LENTZ_TINY {
            c = LENTZ_TINY;
        }
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < CONTINUED_FRACTION_EPSILON {
            break;
        }
    }
    w * h / PI.sqrt()
}

/// erfc(w) for w ≥ 0 (0 past w = 28, where it underflows anyway).
fn erfc_nonnegative(w: f64) -> f64 {
    if w < ERF_SERIES_LIMIT {
        1.0 - erf_series(w)
    } else if w > 28.0 {
        0.0
    } else {
        erfc_scaled_continued_fraction(w) * (-w * w).exp()
    }
}

/// ln erfc(w) for 0 ≤ w ≤ 40 without underflow: what the normal quantile's Newton step needs for tail
/// probabilities down to the smallest double (w ≈ 27.2).
fn ln_erfc_nonnegative(w: f64) -> f64 {
    if w < ERF_SERIES_LIMIT {
        (1.0 - erf_series(w)).ln()
    } else {
        erfc_scaled_continued_fraction(w).ln() - w * w
    }
}

/// Where Acklam's approximation switches from its central to its tail rational function.
const ACKLAM_TAIL: f64 = 0.02425;

/// Acklam's approximation of the standard normal quantile for p in (0, ½], relative error below 1.15e-9: the
/// starting point of [`normal_lower_quantile`]'s Newton steps.
fn acklam_lower_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e+01,
        2.209460984245205e+02,
        -2.759285104469687e+02,
        1.38357751867269e+02,
        -3.066479806614716e+01,
        2.506628277459239e+00,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e+01,
        1.615858368580409e+02,
        -1.556989798598866e+02,
        6.680131188771972e+01,
        -1.328068155288572e+01,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e+00,
        -2.549732539343734e+00,
        4.374664141464968e+00,
        2.938163982698783e+00,
    ];
    const D: [f64; 4] = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00];
    let horner = |coefficients: &[f64], x: f64| coefficients.iter().fold(0.0, |sum, c| sum * x + c);
    if p < ACKLAM_TAIL {
        let q = (-2.0 * p.ln()).sqrt();
        horner(&C, q) / (horner(&D, q) * q + 1.0)
    } else {
        let q = p - 0.5;
        let r = q * q;
        horner(&A, r) * q / (horner(&B, r) * r + 1.0)
    }
}

/// The standard normal quantile for p in (0, ½]: the z ≤ 0 with Φ(z) = p.
///
/// Acklam's approximation, then Newton steps (one or two suffice from its 1e-9) on an equation that keeps
/// relative precision: ln Φ(z) = ln p in the tail (p ≤ ¼), which reaches the smallest doubles without
/// underflow, and ½·erf(|z|/√2) = ½ − p near the median, where z is small and ½ − p is exact.
fn normal_lower_quantile(p: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    // y = −z > 0; w = y/√2 is erf's argument.
    let mut y = -acklam_lower_quantile(p);
    for _ in 0..8 {
        let w = y / SQRT_2;
        let step = if p > 0.25 {
            // Residual ½·erf(w) − (½ − p), increasing in y with derivative φ(y).
            let density = (-0.5 * y * y).exp() / (2.0 * PI).sqrt();
            (0.5 * erf_series(w) - (0.5 - p)) / density
        } else {
            // Residual ln Φ(−y) − ln p, decreasing in y with derivative −φ(y)/Φ(−y) = −1/mills, where the
            // Mills ratio Φ(−y)/φ(y) = √(π/2)·e^(w²)·erfc(w) is computed without underflow.
            let ln_tail = 0.5_f64.ln() + ln_erfc_nonnegative(w);
            let scaled_erfc = if w < ERF_SERIES_LIMIT {
                (1.0 - erf_series(w)) * (w * w).exp()
            } else {
                erfc_scaled_continued_fraction(w)
            };
            -(ln_tail - p.ln()) * (PI / 2.0).sqrt() * scaled_erfc
        };
        y -= step;
        if step.abs() <= 1e-15 * y {
            break;
        }
    }
    -y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median([3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median([]), None);
    }

    /// Asserts |actual − expected| ≤ tolerance·|expected|, naming the quantity in the failure message.
    fn assert_relative(actual: f64, expected: f64, tolerance: f64, what: &str) {
        let error = ((actual - expected) / expected).abs();
        assert!(
            error <= tolerance,
            "{what}: got {actual:e}, expected {expected:e} (relative error {error:e} > {tolerance:e})"
        );
    }

    /// The interval of a Bounded ratio, failing the test for any other kind.
    fn bounds(ratio: &Ratio) -> (f64, f64) {
        match ratio.ci {
            RatioCi::Bounded { lo, hi } => (lo, hi),
            other => panic!("expected a bounded interval, got {other:?}"),
        }
    }

    /// Summary of a literal list, which the tests know to be non-empty.
    fn summary(values: &[f64]) -> Summary {
        Summary::of(values).expect("non-empty")
    }

    /// t quantiles at the df and levels a report uses, against scipy (1.17.1: scipy.stats.t.ppf(p, df), Boost's
    /// inverse incomplete beta), which mpmath at 40 digits confirms to 2e-15 (e.g. t.ppf(0.975, 4) =
    /// 2.776445105197794357...).
    #[test]
    fn t_quantile_matches_scipy() {
        let cases: &[(f64, f64, f64)] = &[
            (0.975, 1.0, 12.706204736174694),
            (0.995, 1.0, 63.656741162871526),
            (0.025, 1.0, -12.706204736174705),
            (0.975, 2.0, 4.302652729749462),
            (0.995, 2.0, 9.924843200918287),
            (0.025, 2.0, -4.302652729749464),
            (0.975, 3.0, 3.1824463052837078),
            (0.995, 3.0, 5.840909309733355),
            (0.025, 3.0, -3.1824463052837086),
            (0.975, 4.0, 2.7764451051977934),
            (0.995, 4.0, 4.604094871349992),
            (0.025, 4.0, -2.7764451051977943),
            (0.975, 5.0, 2.5705818356363146),
            (0.995, 5.0, 4.032142983555228),
            (0.025, 5.0, -2.5705818356363155),
            (0.975, 10.0, 2.228138851986274),
            (0.995, 10.0, 3.16927267261695),
            (0.025, 10.0, -2.2281388519862753),
            (0.975, 30.0, 2.0422724563012378),
            (0.995, 30.0, 2.7499956535672254),
            (0.025, 30.0, -2.042272456301238),
            (0.975, 2.5, 3.5746548420036817),
            (0.995, 2.5, 7.163728138948783),
            (0.025, 2.5, -3.5746548420036834),
            (0.975, 1e9, 1.959963986912325),
            (0.995, 1e9, 2.5758293084654484),
            (0.025, 1e9, -1.9599639869123253),
            // Either side of LARGE_DF, where the method changes.
            (0.975, 1e4, 1.960201239890626),
            (1e-10, 1e4, -6.367941351482803),
            (0.975, 2e4, 1.9600826051581348),
            (1e-10, 1e5, -6.362000419843692),
        ];
        for &(p, df, expected) in cases {
            assert_relative(t_quantile(p, df), expected, 1e-12, &format!("t_quantile({p}, {df})"));
        }
        for df in [1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 30.0, 2.5, 1e9] {
            assert_eq!(t_quantile(0.5, df), 0.0, "median at df {df}");
        }
    }

    /// The normal limit (df = ∞) against scipy 1.17.1 scipy.stats.norm.ppf, including the far tail down to the
    /// smallest double.
    #[test]
    fn infinite_df_is_the_normal_quantile() {
        let cases: &[(f64, f64)] = &[
            (0.975, 1.959963984540054),
            (0.025, -1.9599639845400545),
            (0.3, -0.5244005127080409),
            (0.500000001, 2.5066282037387115e-09),
            (1e-10, -6.361340902404056),
            (1e-100, -21.273453560965322),
            (1e-300, -37.0470962993612),
            (5e-324, -38.467405617144344),
        ];
        for &(p, expected) in cases {
            assert_relative(t_quantile(p, f64::INFINITY), expected, 1e-13, &format!("normal quantile({p:e})"));
        }
    }

    /// Acklam's published relative error bound (1.15e-9) holds for the coefficients as typed here: a typo would
    /// be hidden by the Newton steps that follow, slowing them rather than failing anything else.
    #[test]
    fn acklam_approximation_is_within_its_published_error() {
        for p in [1e-300, 1e-50, 1e-10, 1e-4, 0.01, 0.02424, 0.02426, 0.1, 0.3, 0.45, 0.4999] {
            let refined = normal_lower_quantile(p);
            assert_relative(acklam_lower_quantile(p), refined, 1.2e-9, &format!("Acklam({p:e})"));
        }
    }

    /// Closed forms, independent of any library: the Cauchy quantile (df 1) is tan(π(p − ½)), and at df 2 it is
    /// (2p − 1)/√(2p(1 − p)). Includes the extreme tails, where the quantile is near 1e299.
    #[test]
    fn t_quantile_matches_closed_forms_at_df_1_and_2() {
        for p in [1e-300, 1e-20, 1e-6, 0.01, 0.2, 0.4, 0.49999, 0.6, 0.9, 0.999] {
            // tan(π(p − ½)) = −1/tan(πp); each form where its argument is exact enough (p − ½ is exact from ¼ on).
            let cauchy = if p < 0.25 { -1.0 / (PI * p).tan() } else { (PI * (p - 0.5)).tan() };
            assert_relative(t_quantile(p, 1.0), cauchy, 1e-12, &format!("t_quantile({p:e}, 1)"));
            let df2 = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
            assert_relative(t_quantile(p, 2.0), df2, 1e-12, &format!("t_quantile({p:e}, 2)"));
        }
    }

    /// t_cdf against scipy 1.17.1 scipy.stats.t.cdf, confirmed by mpmath's incomplete beta at 50 digits; the
    /// tails (to 1e-28) must keep their relative precision, which 1 − (the other side) would lose.
    #[test]
    fn t_cdf_matches_scipy() {
        let cases: &[(f64, f64, f64)] = &[
            (-2.0, 3.0, 0.06966298427942152),
            (1.5, 2.5, 0.8760817734568519),
            (-10.0, 5.0, 8.547378787148181e-05),
            (0.3, 1.0, 0.5927735790777423),
            (-40.0, 30.0, 6.863022597203209e-28),
            (-40.0, 3.0, 1.7190340394579253e-05),
            (-1e6, 1.0, 3.1830988618368455e-07),
            (2.0, 1e9, 0.9772498679168434),
            (-3.0, 1e5, 0.0013502304420323617),
            // scipy.stats.norm.cdf for df = ∞.
            (-1.0, f64::INFINITY, 0.15865525393145707),
            (-20.0, f64::INFINITY, 2.7536241186061556e-89),
            (0.5, f64::INFINITY, 0.6914624612740131),
        ];
        for &(t, df, expected) in cases {
            assert_relative(t_cdf(t, df), expected, 1e-12, &format!("t_cdf({t}, {df})"));
        }
        // Cauchy: ½ + atan(t)/π, near the median where scipy itself loses digits (it gives 0.49999999525... here).
        assert_relative(t_cdf(-1e-8, 1.0), 0.5 - 1e-8_f64.atan() / PI, 1e-15, "t_cdf(-1e-8, 1)");
        assert_eq!(t_cdf(0.0, 7.0), 0.5);
    }

    /// t_cdf(t_quantile(p)) gives back p across methods (incomplete beta below LARGE_DF, Hill's transformation
    /// above it), fractional df, and tails: a mismatch between the two functions' conventions would show here.
    #[test]
    fn quantile_inverts_cdf() {
        for df in [0.5, 1.0, 2.7, 6.0, 41.3, 999.0, 1e4, 1.5e4, 3e6, f64::INFINITY] {
            for p in [1e-30, 1e-8, 0.001, 0.05, 0.3, 0.49, 0.51, 0.8, 0.999] {
                let t = t_quantile(p, df);
                assert_relative(t_cdf(t, df), p, 1e-11, &format!("t_cdf(t_quantile({p:e}, {df}))"));
            }
        }
    }

    /// Hill's transformation and the incomplete beta agree where the method switches, so a Welch df drifting
    /// across LARGE_DF moves no p-value or interval by more than rounding.
    #[test]
    fn methods_agree_at_the_switch() {
        for t in [0.1, 1.0, 2.0, 5.0, 10.0, 20.0] {
            let beta = StudentT::new(LARGE_DF).tail(t);
            let hill = large_df_tail(t, LARGE_DF);
            assert_relative(hill, beta, 1e-12, &format!("tail({t}) at the switch"));
        }
    }

    /// Out-of-domain arguments give NaN or the infinite limits, never a panic or a hang.
    #[test]
    fn distribution_edge_arguments() {
        assert!(t_quantile(f64::NAN, 3.0).is_nan());
        assert!(t_quantile(1.5, 3.0).is_nan());
        assert!(t_quantile(0.9, 0.0).is_nan());
        assert!(t_quantile(0.9, f64::NAN).is_nan());
        assert_eq!(t_quantile(0.0, 3.0), f64::NEG_INFINITY);
        assert_eq!(t_quantile(1.0, 3.0), f64::INFINITY);
        // At df 0.05 the 1e-300 quantile is about 1e6000: beyond any double.
        assert_eq!(t_quantile(1e-300, 0.05), f64::NEG_INFINITY);
        assert!(t_cdf(f64::NAN, 3.0).is_nan());
        assert!(t_cdf(1.0, -1.0).is_nan());
        assert_eq!(t_cdf(f64::INFINITY, 3.0), 1.0);
        assert_eq!(t_cdf(f64::NEG_INFINITY, 3.0), 0.0);
        assert_eq!(t_cdf(f64::NEG_INFINITY, 1e6), 0.0);
        assert_eq!(t_cdf(f64::INFINITY, f64::INFINITY), 1.0);
    }

    /// The textbook example (population sd 2, sample sd 2.13809), with the derived figures.
    #[test]
    fn summary_of_textbook_values() {
        let s = summary(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((s.n, s.mean, s.min, s.max), (8, 5.0, 2.0, 9.0));
        // √(32/7), numpy 2.4.6: np.std(x, ddof=1) = 2.138089935299395.
        assert_relative(s.sd.unwrap(), 2.138089935299395, 1e-15, "sd");
        assert_relative(s.cv().unwrap(), 2.138089935299395 / 5.0, 1e-15, "cv");
        assert_relative(s.sem().unwrap(), 2.138089935299395 / 8.0_f64.sqrt(), 1e-15, "sem");
    }

    /// No values, no summary; one value, no spread: every figure that needs one is None.
    #[test]
    fn summary_of_too_few_values() {
        assert_eq!(Summary::of(&[]), None);
        let s = summary(&[42.0]);
        assert_eq!(s, Summary { n: 1, mean: 42.0, sd: None, min: 42.0, max: 42.0 });
        assert_eq!((s.cv(), s.sem(), s.mean_ci(0.95)), (None, None, None));
    }

    /// Large offsets (where Σx² − n·mean² cancels), huge and tiny magnitudes (where squares overflow or
    /// underflow), and a sum that overflows although the mean does not.
    #[test]
    fn summary_survives_extreme_magnitudes() {
        let offset = summary(&[1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0]);
        assert_eq!((offset.mean, offset.sd), (1e9 + 2.0, Some(1.0)));
        let huge = summary(&[1e200, 2e200, 3e200]);
        assert_relative(huge.mean, 2e200, 1e-15, "huge mean");
        assert_relative(huge.sd.unwrap(), 1e200, 1e-15, "huge sd");
        let tiny = summary(&[1e-200, 2e-200, 3e-200]);
        assert_relative(tiny.sd.unwrap(), 1e-200, 1e-15, "tiny sd");
        let overflowing_sum = summary(&[1.5e308, 1.7e308]);
        assert_relative(overflowing_sum.mean, 1.6e308, 1e-15, "mean of values whose sum overflows");
        assert_relative(
            overflowing_sum.sd.unwrap(),
            0.2e308 / 2.0_f64.sqrt(),
            1e-15,
            "sd of values whose sum overflows",
        );
    }

    /// cv is relative to |mean| (relative values can be negative) and undefined at mean 0.
    #[test]
    fn cv_of_negative_and_zero_means() {
        assert_relative(summary(&[-2.0, -4.0]).cv().unwrap(), 2.0_f64.sqrt() / 3.0, 1e-15, "cv of a negative mean");
        assert_eq!(summary(&[-1.0, 1.0]).cv(), None);
        assert_eq!(summary(&[3.0, 3.0, 3.0]).cv(), Some(0.0));
    }

    /// Student t intervals of the mean against scipy 1.17.1:
    /// scipy.stats.t.interval(level, 7, loc=5, scale=scipy.stats.sem(x)) for x = [2,4,4,4,5,5,7,9].
    #[test]
    fn mean_ci_matches_scipy() {
        let s = summary(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        let (lo, hi) = s.mean_ci(0.95).unwrap();
        assert_relative(lo, 3.21251208176379, 1e-12, "95% low");
        assert_relative(hi, 6.787487918236209, 1e-12, "95% high");
        let (lo, hi) = s.mean_ci(0.99).unwrap();
        assert_relative(lo, 2.354639279424657, 1e-12, "99% low");
        assert_relative(hi, 7.6453607205753435, 1e-12, "99% high");
        assert_eq!(s.mean_ci(1.0), None);
        assert_eq!(s.mean_ci(0.0), None);
        assert_eq!(s.mean_ci(f64::NAN), None);
        assert_eq!(summary(&[4.0, 4.0]).mean_ci(0.95), Some((4.0, 4.0)));
    }

    /// Fieller's interval worked by hand from the formula (not from this file's rearranged form), a = [100, 110,
    /// 120], b = [200, 210, 190] at 95%:
    ///   ā = 110, b̄ = 200, sd_a = sd_b = 10, so va = vb = 100/3 = 33.3333 (sem² = sd²/n); ρ̂ = 0.55.
    ///   df = (va + ρ̂²vb)² / (va²/2 + ρ̂⁴vb²/2) = (33.3333·1.3025)² / (555.556·1.0915063) = 1884.951 / 606.392
    ///      = 3.1085598.
    ///   t = t.ppf(0.975, 3.1085598) = 3.1204866 (scipy 1.17.1); t² = 9.737436.
    ///   g = t²·vb / b̄² = 9.737436·33.3333 / 40000 = 0.0081145 < 1: bounded.
    ///   radicand = ā²·vb + b̄²·va − t²·va·vb = 403333.33 + 1333333.33 − 10819.37 = 1725847.29; √ = 1313.7151.
    ///   denominator = b̄² − t²·vb = 40000 − 324.5812 = 39675.4188.
    ///   lo = (22000 − 3.1204866·1313.7151) / 39675.4188 = (22000 − 4099.4307) / 39675.4188 = 0.4511753
    ///   hi = (22000 + 4099.4307) / 39675.4188 = 0.6578237
    /// The same arithmetic in double precision with numpy/scipy gives the asserted values
    /// (lo = 0.45117532019753626, hi = 0.6578236858292731). se (delta method) = 0.55·√(va/110² + vb/200²) =
    /// 0.032945662334617994.
    #[test]
    fn fieller_interval_worked_by_hand() {
        let a = summary(&[100.0, 110.0, 120.0]);
        let b = summary(&[200.0, 210.0, 190.0]);
        let r = Ratio::of(&a, &b, 0.95).unwrap();
        assert_eq!((r.ratio, r.level), (0.55, 0.95));
        assert_relative(r.df.unwrap(), 3.1085598456261705, 1e-12, "df");
        let (lo, hi) = bounds(&r);
        assert_relative(lo, 0.45117532019753626, 1e-10, "lo");
        assert_relative(hi, 0.6578236858292731, 1e-10, "hi");
        assert_relative(r.se.unwrap(), 0.032945662334617994, 1e-12, "se");
        assert!(r.significant(), "0.55 with an interval up to 0.66 excludes 1");
    }

    /// The set of ratios b/a the data allow is exactly the reciprocal of the set for a/b (the linear combinations
    /// ā − ρb̄ and b̄ − ā/ρ are proportional, so even the Welch df is the same): a check independent of the
    /// worked numbers above.
    #[test]
    fn fieller_interval_of_the_inverse_ratio_is_the_reciprocal() {
        let a = summary(&[100.0, 110.0, 120.0]);
        let b = summary(&[200.0, 210.0, 190.0, 230.0]);
        let forward = Ratio::of(&a, &b, 0.9).unwrap();
        let inverse = Ratio::of(&b, &a, 0.9).unwrap();
        let (lo, hi) = bounds(&forward);
        let (inverse_lo, inverse_hi) = bounds(&inverse);
        assert_relative(inverse_lo, 1.0 / hi, 1e-12, "inverse lo");
        assert_relative(inverse_hi, 1.0 / lo, 1e-12, "inverse hi");
        assert_relative(inverse.df.unwrap(), forward.df.unwrap(), 1e-12, "df");
    }

    /// With a constant (error-free) side, Fieller reduces to the other side's Student interval: for b exact, a's
    /// mean interval divided by b̄; for a exact, ā divided by b's mean interval (ā/ρ must lie in it), with the
    /// noisy side's n − 1 degrees of freedom.
    #[test]
    fn fieller_with_one_exact_side_is_the_other_sides_interval() {
        let noisy = summary(&[100.0, 110.0, 120.0, 104.0]);
        let exact = summary(&[200.0, 200.0, 200.0]);
        let (mean_lo, mean_hi) = noisy.mean_ci(0.95).unwrap();

        let r = Ratio::of(&noisy, &exact, 0.95).unwrap();
        let (lo, hi) = bounds(&r);
        assert_eq!(r.df, Some(3.0));
        assert_relative(lo, mean_lo / 200.0, 1e-12, "exact denominator lo");
        assert_relative(hi, mean_hi / 200.0, 1e-12, "exact denominator hi");

        let r = Ratio::of(&exact, &noisy, 0.95).unwrap();
        let (lo, hi) = bounds(&r);
        assert_eq!(r.df, Some(3.0));
        assert_relative(lo, 200.0 / mean_hi, 1e-12, "exact numerator lo");
        assert_relative(hi, 200.0 / mean_lo, 1e-12, "exact numerator hi");
    }

    /// A denominator whose values straddle 0 is not significantly different from 0: g = t²·vb/b̄² =
    /// 4.30²·(1.528²/3)/0.667² ≈ 32 ≥ 1, so no finite interval; and no claim of significance.
    #[test]
    fn fieller_with_a_denominator_near_zero_is_unbounded() {
        let a = summary(&[100.0, 110.0, 120.0]);
        let b = summary(&[-1.0, 1.0, 2.0]);
        let r = Ratio::of(&a, &b, 0.95).unwrap();
        assert_eq!(r.ci, RatioCi::Unbounded);
        assert_relative(r.ratio, 165.0, 1e-15, "ratio");
        assert!(r.df.unwrap() > 0.0);
        assert!(!r.significant());
    }

    /// Both sides constant: the interval is the point ratio, df infinite, and significant exactly when the
    /// ratio is not 1. No NaN anywhere.
    #[test]
    fn fieller_with_both_sides_exact_is_the_point() {
        let r = Ratio::of(&summary(&[3.0, 3.0]), &summary(&[2.0, 2.0, 2.0]), 0.95).unwrap();
        assert_eq!(r.ci, RatioCi::Bounded { lo: 1.5, hi: 1.5 });
        assert_eq!((r.df, r.se), (Some(f64::INFINITY), Some(0.0)));
        assert!(r.significant());
        let same = Ratio::of(&summary(&[2.0, 2.0]), &summary(&[2.0, 2.0, 2.0]), 0.95).unwrap();
        assert_eq!(same.ci, RatioCi::Bounded { lo: 1.0, hi: 1.0 });
        assert!(!same.significant());
    }

    /// A single run on either side: the ratio still, but no interval, df or se, and no significance.
    #[test]
    fn fieller_with_a_single_value_is_unavailable() {
        let three = summary(&[100.0, 110.0, 120.0]);
        let one = summary(&[50.0]);
        for r in [Ratio::of(&three, &one, 0.95).unwrap(), Ratio::of(&one, &three, 0.95).unwrap()] {
            assert_eq!((r.ci, r.df, r.se), (RatioCi::Unavailable, None, None));
            assert!(!r.significant());
        }
        assert_eq!(Ratio::of(&three, &one, 0.95).unwrap().ratio, 2.2);
    }

    /// No ratio to a zero mean or past the largest double, and no interval at a level outside (0, 1).
    #[test]
    fn ratio_is_none_without_a_finite_ratio_or_level() {
        let a = summary(&[100.0, 110.0, 120.0]);
        assert_eq!(Ratio::of(&a, &summary(&[-1.0, 1.0]), 0.95), None);
        assert_eq!(Ratio::of(&summary(&[1e300, 1e300]), &summary(&[1e-10, 1e-10]), 0.95), None);
        assert_eq!(Ratio::of(&a, &a, 1.0), None);
        assert_eq!(Ratio::of(&a, &a, 0.0), None);
    }

    /// Negative means: the interval of a/(−b) is the mirror image of that of a/b, and (−a)/(−b) is a/b.
    #[test]
    fn fieller_with_negative_means() {
        let a = summary(&[100.0, 110.0, 120.0]);
        let b = summary(&[200.0, 210.0, 190.0]);
        let negative_b = summary(&[-200.0, -210.0, -190.0]);
        let negative_a = summary(&[-100.0, -110.0, -120.0]);
        let (lo, hi) = bounds(&Ratio::of(&a, &b, 0.95).unwrap());
        let mirrored = Ratio::of(&a, &negative_b, 0.95).unwrap();
        assert_eq!(mirrored.ratio, -0.55);
        assert_eq!(bounds(&mirrored), (-hi, -lo));
        assert!(mirrored.se.unwrap() > 0.0);
        assert_eq!(bounds(&Ratio::of(&negative_a, &negative_b, 0.95).unwrap()), (lo, hi));
    }

    /// The interval is scale-free: multiplying both sides by 1e±300 (where sem², ā², b̄² would overflow or
    /// underflow), or one side by 1e150 and the other by 1e-150, moves it only as the ratio moves.
    #[test]
    fn fieller_survives_extreme_magnitudes() {
        let scaled = |values: &[f64], factor: f64| summary(&values.iter().map(|v| v * factor).collect::<Vec<_>>());
        let a = [100.0, 110.0, 120.0];
        let b = [200.0, 210.0, 190.0];
        let (lo, hi) = bounds(&Ratio::of(&summary(&a), &summary(&b), 0.95).unwrap());
        for (factor_a, factor_b, ratio_factor) in [(1e300, 1e300, 1.0), (1e-300, 1e-300, 1.0), (1e150, 1e-150, 1e300)] {
            let r = Ratio::of(&scaled(&a, factor_a), &scaled(&b, factor_b), 0.95).unwrap();
            let (scaled_lo, scaled_hi) = bounds(&r);
            assert_relative(scaled_lo, lo * ratio_factor, 1e-12, &format!("lo at {factor_a:e}/{factor_b:e}"));
            assert_relative(scaled_hi, hi * ratio_factor, 1e-12, &format!("hi at {factor_a:e}/{factor_b:e}"));
            assert_relative(r.se.unwrap(), 0.032945662334617994 * ratio_factor, 1e-12, "se");
        }
    }

    /// An interval that contains 1 is no evidence of a difference.
    #[test]
    fn overlapping_samples_are_not_significant() {
        let r = Ratio::of(&summary(&[100.0, 110.0, 120.0]), &summary(&[95.0, 115.0, 125.0]), 0.95).unwrap();
        let (lo, hi) = bounds(&r);
        assert!(lo < 1.0 && hi > 1.0, "[{lo}, {hi}]");
        assert!(!r.significant());
    }

    /// Welch's test against scipy 1.17.1: scipy.stats.ttest_ind(a, b, equal_var=False).pvalue, including a side
    /// with sd 0 and unequal sizes.
    #[test]
    fn welch_p_matches_scipy() {
        let cases: &[(&[f64], &[f64], f64)] = &[
            (&[100.0, 110.0, 120.0], &[200.0, 210.0, 190.0], 0.0003850677113665412),
            (&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0], 0.33382370007750106),
            (&[10.1, 10.3, 9.9], &[10.0, 10.0, 10.0], 0.47776703213290816),
            (&[5.0, 6.0, 7.0, 8.0, 9.0], &[4.9, 5.1, 5.0], 0.047153607396918165),
            (&[100.0, 110.0, 120.0], &[-1.0, 1.0, 2.0], 0.0023000188075456033),
        ];
        for &(a, b, expected) in cases {
            let p = welch_p(&summary(a), &summary(b)).unwrap();
            assert_relative(p, expected, 1e-11, &format!("welch_p({a:?}, {b:?})"));
            assert_eq!(welch_p(&summary(b), &summary(a)), Some(p), "symmetric");
        }
    }

    /// No test without a variance on each side, or with no variance at all.
    #[test]
    fn welch_p_needs_variance() {
        let three = summary(&[1.0, 2.0, 3.0]);
        assert_eq!(welch_p(&three, &summary(&[2.0])), None);
        assert_eq!(welch_p(&summary(&[2.0, 2.0]), &summary(&[3.0, 3.0, 3.0])), None);
        assert_eq!(welch_p(&three, &three), Some(1.0));
    }
}
