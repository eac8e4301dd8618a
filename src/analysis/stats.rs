//! Statistics over stored scores: inter-rater agreement (quadratic-weighted Cohen's kappa,
//! Krippendorff's alpha), the Wilson interval, Student's t intervals of means, McNemar's test
//! and the paired bootstrap. Pure functions, checked against published values; the t,
//! chi-square and binomial distributions are statrs'.

use std::collections::BTreeMap;

use statrs::distribution::{
    Binomial, ChiSquared, Continuous, ContinuousCDF, Discrete, DiscreteCDF, Normal, StudentsT,
};
use statrs::function::factorial::binomial;

/// The metric of Krippendorff's alpha: how far apart two values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Nominal,
    Ordinal,
    Interval,
    Ratio,
}

/// Quadratic-weighted Cohen's kappa of two raters who rated the same items on the integer
/// scale `min..=max`. `None` when undefined (no items, or no expected disagreement).
pub(crate) fn weighted_kappa(pairs: &[(i64, i64)], min: i64, max: i64) -> Option<f64> {
    let span = ((max - min).max(1) * (max - min).max(1)) as f64;
    kappa_with(pairs, min, max, |i, j| {
        ((i as f64) - (j as f64)).powi(2) / span
    })
}

/// Cohen's κ, unweighted, of two raters' categories `min..=max` (each pair one item): the
/// agreement beyond chance, (p_o − p_e) / (1 − p_e), for categories with no order (a judge's
/// winner: A, B or a tie). `None` without pairs or when chance agreement is total.
pub(crate) fn cohen_kappa(pairs: &[(i64, i64)], min: i64, max: i64) -> Option<f64> {
    kappa_with(pairs, min, max, |i, j| if i == j { 0.0 } else { 1.0 })
}

/// κ = 1 − Σ w·O / Σ w·E over the k × k table of `pairs`, with the disagreement weight
/// `weight(i, j)` of categories i and j (0 on the diagonal).
fn kappa_with(
    pairs: &[(i64, i64)],
    min: i64,
    max: i64,
    weight: impl Fn(usize, usize) -> f64,
) -> Option<f64> {
    if pairs.is_empty() || max <= min {
        return None;
    }
    let k = (max - min + 1) as usize;
    let n = pairs.len() as f64;
    let mut observed = vec![vec![0.0; k]; k];
    let mut rows = vec![0.0; k];
    let mut cols = vec![0.0; k];
    for &(a, b) in pairs {
        if a < min || a > max || b < min || b > max {
            return None;
        }
        let (i, j) = ((a - min) as usize, (b - min) as usize);
        observed[i][j] += 1.0;
        rows[i] += 1.0;
        cols[j] += 1.0;
    }
    let (mut weighted_observed, mut weighted_expected) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            let w = weight(i, j);
            weighted_observed += w * observed[i][j];
            weighted_expected += w * rows[i] * cols[j] / n;
        }
    }
    (weighted_expected > 0.0).then(|| 1.0 - weighted_observed / weighted_expected)
}

/// Krippendorff's alpha for `units`, each the values its coders gave (`None` = missing).
/// Units with fewer than two values are not pairable and are skipped. `None` when undefined
/// (no pairable values, or no expected disagreement).
pub(crate) fn krippendorff_alpha(units: &[Vec<Option<f64>>], level: Level) -> Option<f64> {
    // Coincidence matrix over the distinct values seen.
    let mut index: BTreeMap<OrderedValue, usize> = BTreeMap::new();
    for unit in units {
        for v in unit.iter().flatten() {
            let next = index.len();
            index.entry(OrderedValue(*v)).or_insert(next);
        }
    }
    // Re-number in ascending value order (needed by the ordinal metric).
    let values: Vec<f64> = index.keys().map(|v| v.0).collect();
    let position = |v: f64| values.partition_point(|x| *x < v);
    let k = values.len();
    let mut coincidence = vec![vec![0.0; k]; k];
    for unit in units {
        let present: Vec<usize> = unit.iter().flatten().map(|v| position(*v)).collect();
        let m = present.len();
        if m < 2 {
            continue;
        }
        for (a, &c) in present.iter().enumerate() {
            for (b, &d) in present.iter().enumerate() {
                if a != b {
                    coincidence[c][d] += 1.0 / (m - 1) as f64;
                }
            }
        }
    }
    let marginals: Vec<f64> = coincidence.iter().map(|row| row.iter().sum()).collect();
    let n: f64 = marginals.iter().sum();
    if n <= 1.0 {
        return None;
    }
    let delta = |c: usize, d: usize| -> f64 {
        match level {
            Level::Nominal => f64::from(u8::from(c != d)),
            Level::Ordinal => {
                let (lo, hi) = if c <= d { (c, d) } else { (d, c) };
                let between: f64 = marginals[lo..=hi].iter().sum();
                (between - (marginals[c] + marginals[d]) / 2.0).powi(2)
            }
            Level::Interval => (values[c] - values[d]).powi(2),
            Level::Ratio => {
                let sum = values[c] + values[d];
                if sum == 0.0 {
                    0.0
                } else {
                    ((values[c] - values[d]) / sum).powi(2)
                }
            }
        }
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for c in 0..k {
        for d in 0..k {
            let dd = delta(c, d);
            observed += coincidence[c][d] * dd;
            expected += marginals[c] * marginals[d] * dd;
        }
    }
    (expected > 0.0).then(|| 1.0 - (n - 1.0) * observed / expected)
}

/// A float with a total order, for use as a map key (scores are never NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrderedValue(f64);

impl Eq for OrderedValue {}

impl PartialOrd for OrderedValue {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedValue {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// z for a two-sided 95 % interval.
pub const Z_95: f64 = 1.959_964;

/// Wilson score interval of `successes` out of `n` at `z`; `None` when `n` is 0.
pub(crate) fn wilson_interval(successes: u64, n: u64, z: f64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    wilson_interval_of_rate(successes as f64 / n as f64, n, z)
}

/// Wilson score interval of the rate `p` observed over `n` trials at `z` (a rate whose
/// successes need not be whole: a pairwise win rate counts a tie as half a win); `None` when
/// `n` is 0.
pub(crate) fn wilson_interval_of_rate(p: f64, n: u64, z: f64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At 0 or n successes a bound is exactly 0 or 1; the formula leaves a rounding residue
    // (5.6e-17 for 0 of 3) that a CSV would print.
    let low = if p == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let high = if p == 1.0 {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((low, high))
}

/// Above this many degrees of freedom, t's quantile is taken as the normal one (they differ by
/// less than 3e-6): statrs' t quantile loses digits past about 10^4 degrees of freedom and
/// stops converging past about 10^7, and its CDF loses digits past about 10^8.
const T_AS_NORMAL_DF: u64 = 1_000_000;

/// The 97.5 % quantile of Student's t with `df` degrees of freedom (for two-sided 95 %
/// intervals of a mean); `None` for 0.
pub(crate) fn t_975(df: u64) -> Option<f64> {
    if df == 0 {
        return None;
    }
    if df > T_AS_NORMAL_DF {
        return Some(Normal::standard().inverse_cdf(0.975));
    }
    let t = StudentsT::new(0.0, 1.0, df as f64).ok()?;
    let mut q = t.inverse_cdf(0.975);
    // Newton steps on the CDF, which stays exact where the inverse does not (10^4 to 10^6
    // degrees of freedom); below that they change nothing.
    for _ in 0..2 {
        q -= (t.cdf(q) - 0.975) / t.pdf(q);
    }
    Some(q)
}

/// The 95 % interval of a mean of `n` values with sample standard deviation `sd` (Student's
/// t); `None` below two values.
pub(crate) fn mean_interval(mean: f64, sd: f64, n: u64) -> Option<(f64, f64)> {
    let t = t_975(n.checked_sub(1)?)?;
    let half = t * sd / (n as f64).sqrt();
    half.is_finite().then_some((mean - half, mean + half))
}

/// Up to this many discordant pairs McNemar's exact tail is computed exactly (every binomial
/// coefficient and their sum stay below 2^53); beyond, it is the binomial's CDF.
const EXACT_TAIL_PAIRS: u64 = 50;

/// McNemar's test on paired yes/no outcomes: `b` items only the first variant got right, `c`
/// only the second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McNemar {
    pub b: u64,
    pub c: u64,
    /// (b - c)^2 / (b + c) and its p-value (chi-square, 1 degree of freedom).
    pub chi2: Option<f64>,
    pub p_chi2: Option<f64>,
    /// With the continuity correction: (|b - c| - 1)^2 / (b + c).
    pub chi2_corrected: Option<f64>,
    pub p_corrected: Option<f64>,
    /// Exact two-sided binomial p-value, and its mid-p.
    pub p_exact: f64,
    pub p_mid: f64,
}

impl McNemar {
    /// The test for `b` and `c` discordant pairs.
    pub(crate) fn new(b: u64, c: u64) -> Self {
        let n = b + c;
        let (chi2, chi2_corrected) = if n == 0 {
            (None, None)
        } else {
            let diff = b.abs_diff(c) as f64;
            (
                Some(diff * diff / n as f64),
                Some((diff - 1.0).max(0.0).powi(2) / n as f64),
            )
        };
        // The upper tail of chi-square with 1 degree of freedom.
        let chi2_1 = ChiSquared::new(1.0).ok();
        let p_of = |x: f64| chi2_1.as_ref().map(|d| d.sf(x));
        // P(X <= k) and P(X = k) for X ~ Binomial(n, 1/2), k the smaller count.
        let k = b.min(c);
        let (tail, at_k) = if n <= EXACT_TAIL_PAIRS {
            // Whole binomial coefficients (exact below 2^53) times 2^-n: exact to the last
            // bit. statrs' CDF, an incomplete beta, is off in the 15th digit, which CSV files
            // print (0.6875 would read 0.687500000000001, 1 0.999999999999999).
            let scale = 0.5f64.powi(n as i32);
            let tail: f64 = (0..=k).map(|i| binomial(n, i)).sum();
            (tail * scale, binomial(n, k) * scale)
        } else {
            let flips = Binomial::new(0.5, n).expect("1/2 is a probability");
            (flips.cdf(k), flips.pmf(k))
        };
        let p_exact = (2.0 * tail).min(1.0);
        let p_mid = if n == 0 {
            1.0
        } else {
            (2.0 * (tail - 0.5 * at_k)).min(1.0)
        };
        Self {
            b,
            c,
            chi2,
            p_chi2: chi2.and_then(p_of),
            chi2_corrected,
            p_corrected: chi2_corrected.and_then(p_of),
            p_exact,
            p_mid,
        }
    }

    /// The p-value to report: exact when there are fewer than 25 discordant pairs, else the
    /// chi-square one.
    pub(crate) fn p_value(&self) -> Option<f64> {
        if self.b + self.c < 25 {
            Some(self.p_exact)
        } else {
            self.p_chi2
        }
    }
}

/// A percentile bootstrap interval of a paired difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapInterval {
    pub low: f64,
    pub high: f64,
    /// Replicates used, and those dropped because the statistic was undefined (0/0).
    pub replicates: usize,
    pub dropped: usize,
}

/// How a paired bootstrap draws its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// Resamples drawn.
    pub resamples: usize,
    /// The seed of the draws: the same data give the same interval.
    pub seed: u64,
    /// The interval's level (0.95: the 2.5th to the 97.5th percentile).
    pub confidence: f64,
}

/// The one bootstrap configuration of every interval track reports: the relevance deltas
/// (console, `comparison_statistics.csv`, report) and `track diff`'s changes of review scores
/// and relevance metrics.
pub const BOOTSTRAP: Bootstrap = Bootstrap {
    resamples: 2000,
    seed: 20_250_101,
    confidence: 0.95,
};

/// Paired percentile bootstrap: draws `config.resamples` resamples of the `units` indices
/// (the same draw for both variants, seeded with `config.seed`), evaluates `statistic` on each
/// (`None` when it is undefined, e.g. 0/0) and returns the `config.confidence` interval; `None`
/// if no replicate is defined.
pub(crate) fn paired_bootstrap(
    units: usize,
    config: &Bootstrap,
    mut statistic: impl FnMut(&[usize]) -> Option<f64>,
) -> Option<BootstrapInterval> {
    use rand::{Rng, SeedableRng};
    let (replicates, level) = (config.resamples, config.confidence);
    if units == 0 || replicates == 0 {
        return None;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed);
    let mut sample = vec![0usize; units];
    let mut values = Vec::with_capacity(replicates);
    for _ in 0..replicates {
        for slot in sample.iter_mut() {
            *slot = rng.random_range(0..units);
        }
        if let Some(v) = statistic(&sample).filter(|v| v.is_finite()) {
            values.push(v);
        }
    }
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        // Linear interpolation between order statistics.
        let position = q * (values.len() - 1) as f64;
        let (lo, hi) = (position.floor() as usize, position.ceil() as usize);
        values[lo] + (values[hi] - values[lo]) * (position - lo as f64)
    };
    let alpha = (1.0 - level) / 2.0;
    Some(BootstrapInterval {
        low: quantile(alpha),
        high: quantile(1.0 - alpha),
        replicates: values.len(),
        dropped: replicates - values.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders x 12 units.
    fn reliability_data() -> Vec<Vec<Option<f64>>> {
        let coders = [
            "1 2 3 3 2 1 4 1 2 . . .",
            "1 2 3 3 2 2 4 1 2 5 . 3",
            ". 3 3 3 2 3 4 2 2 5 1 .",
            "1 2 3 3 2 4 4 1 2 5 1 .",
        ];
        let parsed: Vec<Vec<Option<f64>>> = coders
            .iter()
            .map(|row| row.split(' ').map(|v| v.parse().ok()).collect())
            .collect();
        (0..12)
            .map(|u| parsed.iter().map(|c| c[u]).collect())
            .collect()
    }

    #[test]
    fn krippendorff_published_example() {
        let data = reliability_data();
        for (level, want) in [
            (Level::Nominal, 0.743),
            (Level::Ordinal, 0.815),
            (Level::Interval, 0.849),
            (Level::Ratio, 0.797),
        ] {
            let alpha = krippendorff_alpha(&data, level).unwrap();
            assert!(close(alpha, want, 0.0005), "{level:?}: {alpha}");
        }
    }

    #[test]
    fn krippendorff_edge_cases() {
        assert_eq!(krippendorff_alpha(&[], Level::Ordinal), None);
        assert_eq!(
            krippendorff_alpha(&[vec![Some(3.0), None]], Level::Ordinal),
            None
        );
        // Perfect agreement on varied values is 1.
        let perfect = vec![vec![Some(1.0), Some(1.0)], vec![Some(4.0), Some(4.0)]];
        assert_eq!(krippendorff_alpha(&perfect, Level::Ordinal), Some(1.0));
        // Everyone always says 3: no variation, alpha undefined.
        let constant = vec![vec![Some(3.0), Some(3.0)], vec![Some(3.0), Some(3.0)]];
        assert_eq!(krippendorff_alpha(&constant, Level::Ordinal), None);
    }

    #[test]
    fn weighted_kappa_by_hand() {
        // Perfect agreement.
        assert_eq!(weighted_kappa(&[(1, 1), (3, 3), (5, 5)], 1, 5), Some(1.0));
        // Two raters on 1..=3, four items: (1,1), (2,3), (3,3), (3,2).
        // Rows: [1,1,2], cols: [1,1,2]; w = (i-j)^2/4.
        // Observed weighted sum = (0.25 + 0.25) = 0.5.
        // Expected: sum_ij w_ij r_i c_j / n = 0.0625 + 0.5 + 0.0625 + 0.125 + 0.5 + 0.125
        // = 1.375, so kappa = 1 - 0.5 / 1.375 = 0.636.
        let kappa = weighted_kappa(&[(1, 1), (2, 3), (3, 3), (3, 2)], 1, 3).unwrap();
        assert!(close(kappa, 0.636_363_636, 1e-9), "{kappa}");
        assert_eq!(weighted_kappa(&[], 1, 5), None);
        assert_eq!(
            weighted_kappa(&[(3, 3), (3, 3)], 1, 5),
            None,
            "no expected disagreement"
        );
    }

    #[test]
    fn mcnemar_reference_values() {
        // measurement.md: b = 10, c = 3.
        let m = McNemar::new(10, 3);
        assert!(
            close(m.chi2.unwrap(), 3.769, 5e-4) && close(m.p_chi2.unwrap(), 0.0522, 5e-5),
            "{m:?}"
        );
        assert!(
            close(m.chi2_corrected.unwrap(), 2.769, 5e-4)
                && close(m.p_corrected.unwrap(), 0.0961, 5e-5),
            "{m:?}"
        );
        assert!(
            close(m.p_exact, 0.0923, 5e-5) && close(m.p_mid, 0.0574, 5e-5),
            "{m:?}"
        );
        assert_eq!(
            m.p_value(),
            Some(m.p_exact),
            "exact below 25 discordant pairs"
        );
        let none = McNemar::new(0, 0);
        assert_eq!((none.chi2, none.p_exact), (None, 1.0));
        let big = McNemar::new(40, 20);
        assert_eq!(big.p_value(), big.p_chi2);
        assert!(close(McNemar::new(5, 5).p_exact, 1.0, 1e-12));
        // Small counts give exact p-values, as CSV files print them to 15 digits.
        assert_eq!(McNemar::new(0, 1).p_exact, 1.0);
        assert_eq!(McNemar::new(6, 0).p_exact, 0.03125);
        assert_eq!(McNemar::new(2, 4).p_exact, 0.6875);
        assert_eq!(McNemar::new(2, 4).p_mid, 0.6875 - 15.0 / 64.0);
        assert_eq!(McNemar::new(25, 25).p_exact, 1.0);
        // Either side of the exact range (50 pairs), the same tail: 2 P(X <= 20) of
        // Binomial(50, 1/2) and of Binomial(51, 1/2), summed exactly elsewhere.
        let (at, past) = (McNemar::new(30, 20), McNemar::new(31, 20));
        assert!(close(at.p_exact, 0.202_638_751_064_541, 1e-12), "{at:?}");
        assert!(
            close(past.p_exact, 0.160_779_601_811_988, 1e-12),
            "{past:?}"
        );
        // Large counts: the CDF, quick and in range.
        let large = McNemar::new(60_000, 50_000);
        assert!(
            large.p_exact < 1e-100 && large.p_mid <= large.p_exact,
            "{large:?}"
        );
        assert!(close(McNemar::new(20_000, 20_000).p_exact, 1.0, 1e-12));
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_difference() {
        // Two variants on 200 items: A right on 80 %, B on 60 % of them.
        let a: Vec<f64> = (0..200).map(|i| f64::from(u8::from(i % 5 != 0))).collect();
        let b: Vec<f64> = (0..200).map(|i| f64::from(u8::from(i % 5 < 3))).collect();
        let diff = |idx: &[usize]| {
            let n = idx.len() as f64;
            Some(
                idx.iter().map(|&i| a[i]).sum::<f64>() / n
                    - idx.iter().map(|&i| b[i]).sum::<f64>() / n,
            )
        };
        let seven = Bootstrap {
            seed: 7,
            ..BOOTSTRAP
        };
        let one = paired_bootstrap(200, &seven, diff).unwrap();
        let two = paired_bootstrap(200, &seven, diff).unwrap();
        assert_eq!(one, two, "the same seed gives the same interval");
        assert!(one.low < 0.2 && 0.2 < one.high && one.low > 0.05, "{one:?}");
        assert_eq!((one.replicates, one.dropped), (2000, 0));
        // An undefined statistic is dropped and counted.
        let mut n = 0;
        let small = Bootstrap {
            resamples: 100,
            seed: 1,
            confidence: 0.95,
        };
        let sometimes = paired_bootstrap(10, &small, |_| {
            n += 1;
            (n % 2 == 0).then_some(1.0)
        })
        .unwrap();
        assert_eq!((sometimes.replicates, sometimes.dropped), (50, 50));
        assert_eq!(paired_bootstrap(10, &small, |_| None), None);
    }

    #[test]
    fn wilson_reference_values() {
        let (lo, hi) = wilson_interval(25, 100, Z_95).unwrap();
        assert!(
            close(lo, 0.17545, 5e-5) && close(hi, 0.34304, 5e-5),
            "{lo} {hi}"
        );
        let (lo, hi) = wilson_interval(0, 10, Z_95).unwrap();
        assert!(
            close(lo, 0.0, 1e-12) && close(hi, 0.27753, 5e-5),
            "{lo} {hi}"
        );
        assert_eq!(wilson_interval(0, 0, Z_95), None);
        // Exactly 0 and 1 at the ends, not a rounding residue.
        for n in 1..50 {
            assert_eq!(wilson_interval(0, n, Z_95).unwrap().0, 0.0, "0 of {n}");
            assert_eq!(wilson_interval(n, n, Z_95).unwrap().1, 1.0, "{n} of {n}");
        }
    }

    #[test]
    fn t_intervals_of_means() {
        assert_eq!(t_975(0), None);
        // Published quantiles t(0.975; df), to the digits tables print.
        for (df, want) in [
            (1, 12.706_205),
            (2, 4.302_653),
            (10, 2.228_139),
            (30, 2.042_272),
            (31, 2.039_513),
            (120, 1.979_930),
        ] {
            let t = t_975(df).unwrap();
            assert!(close(t, want, 5e-6), "t({df}) = {t}");
        }
        // Where statrs' own quantile drifts (10^4 to 10^6), the CDF keeps it on the expansion
        // t = z + (z^3 + z) / 4df + (5z^5 + 16z^3 + 3z) / 96df^2, exact to 1e-12 there.
        let z: f64 = 1.959_963_984_540_054;
        for df in [10_000u64, 100_000, 1_000_000] {
            let n = df as f64;
            let want = z
                + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n);
            let t = t_975(df).unwrap();
            assert!(close(t, want, 1e-9), "t({df}) = {t}, want {want}");
        }
        // Beyond, the normal quantile; never below it, and no hang on absurd counts.
        assert!(close(t_975(1_000_001).unwrap(), z, 1e-12));
        assert!(close(t_975(u64::MAX).unwrap(), z, 1e-12));
        assert!((1..200).all(|df| t_975(df).unwrap() > z));
        // Scores 2, 4, 6: mean 4, sd 2, t(2) = 4.302653: 4 +/- 4.302653 * 2 / sqrt 3.
        let (low, high) = mean_interval(4.0, 2.0, 3).unwrap();
        let half = 4.302_653 * 2.0 / 3f64.sqrt();
        assert!(
            close(low, 4.0 - half, 1e-5) && close(high, 4.0 + half, 1e-5),
            "{low} {high}"
        );
        assert_eq!(mean_interval(4.0, 0.0, 1), None);
    }
}
