//! Statistics for paired binary outcomes: how two sides of a comparison differ on the same items.
//!
//! Input is the 2×2 table of matched items whose correctness is known on both sides
//! ([`PairedTable`]); output is one [`PairedStats`] with per-side accuracy and Wilson score
//! intervals, the flip counts, consistency, the exact McNemar test and an interval for the
//! accuracy difference. Pure arithmetic on counts: this module must not touch the filesystem.
//!
//! Delta interval: Newcombe's method 10 (Wilson limits of both sides, square-and-add with the
//! corrected φ), for near-nominal coverage in closed form with limits always inside [−1, 1].
//! Reference: R. G. Newcombe, "Improved confidence intervals for the difference between binomial
//! proportions based on paired data", Statistics in Medicine 17 (1998) 2635–2650.
//!
//! Edges: a table with no pairs has no statistics (`PairedStats::from_table` returns `None`);
//! every table with at least one pair yields finite values for every field, including all
//! concordant tables (McNemar p = 1) and tables with a zero marginal (φ is taken as 0).

use serde::Serialize;

/// Counts of matched items whose correctness is known on both sides, by outcome pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PairedTable {
    /// Items correct on both sides (a).
    pub both_correct: u64,
    /// Items correct on the baseline and wrong on the variant (b).
    pub correct_to_wrong: u64,
    /// Items wrong on the baseline and correct on the variant (c).
    pub wrong_to_correct: u64,
    /// Items wrong on both sides (d).
    pub both_wrong: u64,
}

impl PairedTable {
    /// Number of pairs in the table; `None` only if the counts add up past `u64::MAX`.
    pub fn pairs(&self) -> Option<u64> {
        self.both_correct
            .checked_add(self.correct_to_wrong)?
            .checked_add(self.wrong_to_correct)?
            .checked_add(self.both_wrong)
    }
}

/// The margins of a [`PairedTable`]: each side's correct and wrong totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Marginals {
    /// Correct on the baseline, a + b.
    baseline_correct: u64,
    /// Wrong on the baseline, c + d.
    baseline_wrong: u64,
    /// Correct on the variant, a + c.
    variant_correct: u64,
    /// Wrong on the variant, b + d.
    variant_wrong: u64,
}

impl Marginals {
    /// The margins of `table`; `None` when its counts add up past `u64::MAX` (below that,
    /// every partial sum fits too).
    fn of(table: &PairedTable) -> Option<Self> {
        table.pairs()?;
        Some(Self {
            baseline_correct: table.both_correct + table.correct_to_wrong,
            baseline_wrong: table.wrong_to_correct + table.both_wrong,
            variant_correct: table.both_correct + table.wrong_to_correct,
            variant_wrong: table.correct_to_wrong + table.both_wrong,
        })
    }
}

/// A two-sided confidence level strictly between 0 and 1, such as 0.95.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ConfidenceLevel(f64);

impl ConfidenceLevel {
    /// The conventional 95% level, used by `babel compare` unless told otherwise.
    pub const NINETY_FIVE: ConfidenceLevel = ConfidenceLevel(0.95);

    /// Validates a confidence level; `None` unless it is finite and strictly between 0 and 1.
    pub fn new(level: f64) -> Option<Self> {
        (level > 0.0 && level < 1.0).then_some(ConfidenceLevel(level))
    }

    /// The level as a fraction, e.g. 0.95.
    pub fn level(self) -> f64 {
        self.0
    }

    /// The two-sided standard normal critical value z, with P(|Z| ≤ z) equal to the level.
    ///
    /// For 0.95 this is 1.959963984540054. Computed as −Φ⁻¹((1 − level) / 2) so that levels
    /// close to 1 keep their precision.
    pub fn z(self) -> f64 {
        let upper_tail = (1.0 - self.0) / 2.0;
        // `new` guarantees 0 < upper_tail < 0.5, inside the quantile's domain.
        standard_normal_quantile(upper_tail).map_or(0.0, |quantile| -quantile)
    }
}

/// A closed interval `[low, high]` of a probability or a difference of probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower limit.
    pub low: f64,
    /// Upper limit.
    pub high: f64,
}

/// Name of the delta interval's method as written into [`PairedStats::delta_ci_method`].
pub const DELTA_CI_METHOD: &str = "newcombe_1998_method_10";

/// Everything `babel compare` reports about one paired table, with self-explaining JSON names.
///
/// Accuracies and limits are fractions in [0, 1]; the delta and its limits lie in [−1, 1].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedStats {
    /// Number of matched items with known correctness on both sides (n = a + b + c + d).
    pub pairs: u64,
    /// Items correct on both sides (a).
    pub both_correct: u64,
    /// Items correct on the baseline and wrong on the variant (b).
    pub correct_to_wrong: u64,
    /// Items wrong on the baseline and correct on the variant (c).
    pub wrong_to_correct: u64,
    /// Items wrong on both sides (d).
    pub both_wrong: u64,
    /// Items whose outcome differs between the sides (b + c).
    pub discordant_pairs: u64,
    /// Two-sided confidence level of every interval below, e.g. 0.95.
    pub confidence_level: f64,
    /// Baseline accuracy (a + b) / n.
    pub baseline_accuracy: f64,
    /// Lower Wilson score limit of the baseline accuracy.
    pub baseline_ci_low: f64,
    /// Upper Wilson score limit of the baseline accuracy.
    pub baseline_ci_high: f64,
    /// Variant accuracy (a + c) / n.
    pub variant_accuracy: f64,
    /// Lower Wilson score limit of the variant accuracy.
    pub variant_ci_low: f64,
    /// Upper Wilson score limit of the variant accuracy.
    pub variant_ci_high: f64,
    /// Accuracy difference, variant − baseline = (c − b) / n.
    pub delta: f64,
    /// Lower limit of the paired interval for `delta`.
    pub delta_ci_low: f64,
    /// Upper limit of the paired interval for `delta`.
    pub delta_ci_high: f64,
    /// How the delta interval was computed; always [`DELTA_CI_METHOD`].
    pub delta_ci_method: &'static str,
    /// Share of pairs with the same outcome on both sides, (a + d) / n.
    pub consistency: f64,
    /// Two-sided exact McNemar p-value on the discordant pairs (1 when there are none).
    pub mcnemar_exact_p: f64,
}

impl PairedStats {
    /// Computes every statistic of a paired table at the given confidence level.
    ///
    /// Returns `None` when the table holds no pairs (nothing can be estimated), or in the
    /// unreachable case of counts summing past `u64::MAX`.
    pub fn from_table(table: &PairedTable, confidence: ConfidenceLevel) -> Option<Self> {
        let pairs = table.pairs().filter(|&pairs| pairs > 0)?;
        let discordant_pairs = table.correct_to_wrong + table.wrong_to_correct;
        let n = pairs as f64;
        let Marginals {
            baseline_correct,
            variant_correct,
            ..
        } = Marginals::of(table)?;
        let baseline_ci = wilson_interval(baseline_correct, pairs, confidence)?;
        let variant_ci = wilson_interval(variant_correct, pairs, confidence)?;
        let delta_ci = paired_delta_interval(table, confidence)?;
        Some(PairedStats {
            pairs,
            both_correct: table.both_correct,
            correct_to_wrong: table.correct_to_wrong,
            wrong_to_correct: table.wrong_to_correct,
            both_wrong: table.both_wrong,
            discordant_pairs,
            confidence_level: confidence.level(),
            baseline_accuracy: baseline_correct as f64 / n,
            baseline_ci_low: baseline_ci.low,
            baseline_ci_high: baseline_ci.high,
            variant_accuracy: variant_correct as f64 / n,
            variant_ci_low: variant_ci.low,
            variant_ci_high: variant_ci.high,
            delta: delta_of(table, n),
            delta_ci_low: delta_ci.low,
            delta_ci_high: delta_ci.high,
            delta_ci_method: DELTA_CI_METHOD,
            consistency: (table.both_correct + table.both_wrong) as f64 / n,
            mcnemar_exact_p: mcnemar_exact_p(table.correct_to_wrong, table.wrong_to_correct),
        })
    }
}

/// Variant − baseline accuracy, (c − b) / n, without forming the two accuracies first.
fn delta_of(table: &PairedTable, n: f64) -> f64 {
    (table.wrong_to_correct as f64 - table.correct_to_wrong as f64) / n
}

/// Wilson score interval for a binomial proportion `successes / trials`.
///
/// Returns `None` when `trials` is 0 or `successes > trials`. The limits are exactly 0 when
/// there are no successes and exactly 1 when every trial succeeded.
pub fn wilson_interval(
    successes: u64,
    trials: u64,
    confidence: ConfidenceLevel,
) -> Option<Interval> {
    if trials == 0 || successes > trials {
        return None;
    }
    let z = confidence.z();
    let z_squared = z * z;
    let x = successes as f64;
    let n = trials as f64;
    let failures = (trials - successes) as f64;
    // (x + z²/2 ± z·sqrt(x(n−x)/n + z²/4)) / (n + z²): the usual formula multiplied through
    // by n, which keeps x(n − x) exact for counts below 2^53.
    let denominator = n + z_squared;
    let centre = (x + z_squared / 2.0) / denominator;
    let half_width = z * (x * failures / n + z_squared / 4.0).sqrt() / denominator;
    let low = if successes == 0 {
        0.0
    } else {
        (centre - half_width).max(0.0)
    };
    let high = if successes == trials {
        1.0
    } else {
        (centre + half_width).min(1.0)
    };
    Some(Interval { low, high })
}

/// Interval for the paired accuracy difference variant − baseline (Newcombe 1998, method 10).
///
/// With Wilson limits (l, u) of each side's accuracy p and the corrected φ coefficient of the
/// table, the limits are δ − √((p_v − l_v)² − 2φ(p_v − l_v)(u_b − p_b) + (u_b − p_b)²) and
/// δ + √((u_v − p_v)² − 2φ(u_v − p_v)(p_b − l_b) + (p_b − l_b)²). Returns `None` for a table
/// without pairs.
pub fn paired_delta_interval(table: &PairedTable, confidence: ConfidenceLevel) -> Option<Interval> {
    let pairs = table.pairs().filter(|&pairs| pairs > 0)?;
    let n = pairs as f64;
    let marginals = Marginals::of(table)?;
    let baseline = marginals.baseline_correct as f64 / n;
    let variant = marginals.variant_correct as f64 / n;
    let baseline_ci = wilson_interval(marginals.baseline_correct, pairs, confidence)?;
    let variant_ci = wilson_interval(marginals.variant_correct, pairs, confidence)?;
    let phi = corrected_phi(table, &marginals, n);
    let delta = delta_of(table, n);

    let variant_down = variant - variant_ci.low;
    let variant_up = variant_ci.high - variant;
    let baseline_down = baseline - baseline_ci.low;
    let baseline_up = baseline_ci.high - baseline;
    let below = square_and_add(variant_down, baseline_up, phi);
    let above = square_and_add(variant_up, baseline_down, phi);
    // Mathematically low ≥ l_v − u_b ≥ −1 and high ≤ u_v − l_b ≤ 1; clamp rounding only.
    Some(Interval {
        low: (delta - below).max(-1.0),
        high: (delta + above).min(1.0),
    })
}

/// √(x² − 2φxy + y²), the distance from the estimate to one limit of the difference.
///
/// Written so that swapping x and y gives the identical f64: swapping the flip directions of a
/// table then mirrors its interval exactly.
fn square_and_add(x: f64, y: f64, phi: f64) -> f64 {
    // |φ| ≤ 1 makes the radicand ≥ (x − y)² ≥ 0; the max(0) only absorbs rounding.
    ((x * x + y * y) - 2.0 * phi * (x * y)).max(0.0).sqrt()
}

/// Newcombe's corrected φ: (ad − bc) / √((a+b)(c+d)(a+c)(b+d)), with ad − bc replaced by
/// max(ad − bc − n/2, 0) when positive, and 0 when any marginal total is 0.
fn corrected_phi(table: &PairedTable, marginals: &Marginals, n: f64) -> f64 {
    let Marginals {
        baseline_correct,
        baseline_wrong,
        variant_correct,
        variant_wrong,
    } = *marginals;
    if [
        baseline_correct,
        baseline_wrong,
        variant_correct,
        variant_wrong,
    ]
    .contains(&0)
    {
        return 0.0;
    }
    let a = u128::from(table.both_correct);
    let b = u128::from(table.correct_to_wrong);
    let c = u128::from(table.wrong_to_correct);
    let d = u128::from(table.both_wrong);
    // Products of two u64 counts fit in u128, so the sign of ad − bc is decided exactly.
    let (concordant_product, discordant_product) = (a * d, b * c);
    let numerator = if concordant_product > discordant_product {
        ((concordant_product - discordant_product) as f64 - n / 2.0).max(0.0)
    } else {
        -((discordant_product - concordant_product) as f64)
    };
    // Each side's correct and wrong totals are multiplied together first, so that swapping b
    // and c (which swaps the sides) multiplies the same f64s and gives the identical φ.
    let correct_totals = baseline_correct as f64 * variant_correct as f64;
    let wrong_totals = baseline_wrong as f64 * variant_wrong as f64;
    numerator / (correct_totals * wrong_totals).sqrt()
}

/// Two-sided exact McNemar p-value for the discordant counts b (`correct_to_wrong`) and c.
///
/// p = min(1, 2·P(X ≤ min(b, c))) with X ~ Binomial(b + c, ½), and p = 1 when b + c = 0.
/// The tail is summed in log space from Loader's saddle-point binomial term, so b + c in the
/// millions neither overflows nor loses precision; a p below the smallest positive f64 is 0.
/// The work grows with √(b + c) when b and c are close (about 10⁵ steps at b + c = 10⁹).
pub fn mcnemar_exact_p(correct_to_wrong: u64, wrong_to_correct: u64) -> f64 {
    let smaller = correct_to_wrong.min(wrong_to_correct);
    let larger = correct_to_wrong.max(wrong_to_correct);
    if smaller == larger {
        // Includes b = c = 0. With b = c the lower tail reaches the median, so 2·P ≥ 1.
        return 1.0;
    }
    let trials = smaller as f64 + larger as f64;
    let log_term_at_smaller = if smaller == 0 {
        -trials * std::f64::consts::LN_2
    } else {
        log_binomial_half_term(smaller as f64, larger as f64)
    };
    // Sum P(X = i)/P(X = smaller) for i = smaller, smaller − 1, … by the ratio
    // P(X = i − 1)/P(X = i) = i / (trials − i + 1), which shrinks as i falls.
    let mut term = 1.0_f64;
    let mut sum = 1.0_f64;
    let mut i = smaller;
    while i > 0 {
        let ratio = i as f64 / (trials - i as f64 + 1.0);
        term *= ratio;
        sum += term;
        // Later ratios are smaller still, so what remains is below term·ratio/(1 − ratio).
        if term * ratio / (1.0 - ratio) < sum * f64::EPSILON * 1e-2 {
            break;
        }
        i -= 1;
    }
    let log_p = std::f64::consts::LN_2 + log_term_at_smaller + sum.ln();
    log_p.exp().min(1.0)
}

/// ln P(X = k) for X ~ Binomial(k + rest, ½), both counts at least 1 (Loader 2000).
///
/// Loader's form ln C(n, k) − n ln 2 = stirlerr(n) − stirlerr(k) − stirlerr(n−k)
/// − bd0(k, n/2) − bd0(n−k, n/2) − ½ ln(2πk(n−k)/n) keeps every term small, where summing
/// log-factorials of millions would cancel away the digits that matter.
fn log_binomial_half_term(k: f64, rest: f64) -> f64 {
    let n = k + rest;
    let mean = n / 2.0;
    stirling_error(n)
        - stirling_error(k)
        - stirling_error(rest)
        - deviance_term(k, mean)
        - deviance_term(rest, mean)
        - 0.5 * (2.0 * std::f64::consts::PI * k * rest / n).ln()
}

/// ln(n!) − ln(√(2πn)·(n/e)ⁿ) for a whole number n ≥ 1: the error of Stirling's formula.
fn stirling_error(n: f64) -> f64 {
    const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;
    if n <= 15.0 {
        // n! is an exact f64 up to 18!, so ln(n!) carries a single rounding.
        let factorial: f64 = (2..=n as u64).map(|i| i as f64).product();
        return factorial.ln() - (n + 0.5) * n.ln() + n - LN_SQRT_2PI;
    }
    // Stirling series 1/(12n) − 1/(360n³) + 1/(1260n⁵) − 1/(1680n⁷) + 1/(1188n⁹); the first
    // omitted term is below 2e-16 for n ≥ 16.
    let n_squared = n * n;
    (1.0 / 12.0
        - (1.0 / 360.0
            - (1.0 / 1260.0 - (1.0 / 1680.0 - 1.0 / 1188.0 / n_squared) / n_squared) / n_squared)
            / n_squared)
        / n
}

/// x·ln(x/m) + m − x, the binomial deviance term, computed without cancellation when x ≈ m.
fn deviance_term(x: f64, m: f64) -> f64 {
    if (x - m).abs() < 0.1 * (x + m) {
        // Series in v = (x − m)/(x + m): (x − m)·v + 2x·Σ v^(2j+1)/(2j+1), j ≥ 1.
        let v = (x - m) / (x + m);
        let v_squared = v * v;
        let mut sum = (x - m) * v;
        let mut power = 2.0 * x * v;
        for j in 1..1000 {
            power *= v_squared;
            let next = sum + power / f64::from(2 * j + 1);
            if next == sum {
                return next;
            }
            sum = next;
        }
        return sum;
    }
    x * (x / m).ln() + m - x
}

/// Φ⁻¹(p), the standard normal quantile, for 0 < p < 1 (Wichura's AS 241, about 1e-16).
///
/// Returns `None` outside the open interval (0, 1). Reference: M. J. Wichura, "Algorithm
/// AS 241: The percentage points of the normal distribution", Applied Statistics 37 (1988)
/// 477–484.
pub fn standard_normal_quantile(p: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        return Some(
            q * polynomial(&wichura_as241::CENTRAL_NUMERATOR, r)
                / polynomial(&wichura_as241::CENTRAL_DENOMINATOR, r),
        );
    }
    let tail = if q < 0.0 { p } else { 1.0 - p };
    let r = (-tail.ln()).sqrt();
    let magnitude = if r <= 5.0 {
        let r = r - 1.6;
        polynomial(&wichura_as241::NEAR_NUMERATOR, r)
            / polynomial(&wichura_as241::NEAR_DENOMINATOR, r)
    } else {
        let r = r - 5.0;
        polynomial(&wichura_as241::FAR_NUMERATOR, r)
            / polynomial(&wichura_as241::FAR_DENOMINATOR, r)
    };
    Some(if q < 0.0 { -magnitude } else { magnitude })
}

/// Evaluates c₀ + c₁x + … + c₇x⁷ by Horner's rule.
fn polynomial(coefficients: &[f64; 8], x: f64) -> f64 {
    coefficients
        .iter()
        .rev()
        .fold(0.0, |accumulated, &coefficient| {
            accumulated * x + coefficient
        })
}

/// Coefficients of Wichura's AS 241 (PPND16), lowest order first, as printed in the paper.
mod wichura_as241 {
    #![expect(
        clippy::excessive_precision,
        reason = "the published digits are kept so the transcription can be checked against AS 241"
    )]

    // Central region, |p − ½| ≤ 0.425, in 0.180625 − (p − ½)².
    pub(super) const CENTRAL_NUMERATOR: [f64; 8] = [
        3.387_132_872_796_366_608,
        133.141_667_891_784_377_45,
        1_971.590_950_306_551_442_7,
        13_731.693_765_509_461_125,
        45_921.953_931_549_871_457,
        67_265.770_927_008_700_853,
        33_430.575_583_588_128_105,
        2_509.080_928_730_122_672_7,
    ];
    pub(super) const CENTRAL_DENOMINATOR: [f64; 8] = [
        1.0,
        42.313_330_701_600_911_252,
        687.187_007_492_057_908_3,
        5_394.196_021_424_751_107_7,
        21_213.794_301_586_595_867,
        39_307.895_800_092_710_61,
        28_729.085_735_721_942_674,
        5_226.495_278_852_854_561,
    ];
    // Tail with √(−ln min(p, 1 − p)) ≤ 5, in r − 1.6.
    pub(super) const NEAR_NUMERATOR: [f64; 8] = [
        1.423_437_110_749_683_577_34,
        4.630_337_846_156_545_295_9,
        5.769_497_221_460_691_405_5,
        3.647_848_324_763_204_605_04,
        1.270_458_252_452_368_382_58,
        0.241_780_725_177_450_611_77,
        0.022_723_844_989_269_184_583_3,
        7.745_450_142_783_414_076_4e-4,
    ];
    pub(super) const NEAR_DENOMINATOR: [f64; 8] = [
        1.0,
        2.053_191_626_637_758_821_87,
        1.676_384_830_183_803_849_4,
        0.689_767_334_985_100_004_55,
        0.148_103_976_427_480_074_59,
        0.015_198_666_563_616_457_196_6,
        5.475_938_084_995_344_946e-4,
        1.050_750_071_644_416_843_24e-9,
    ];
    // Far tail, √(−ln min(p, 1 − p)) > 5, in r − 5.
    pub(super) const FAR_NUMERATOR: [f64; 8] = [
        6.657_904_643_501_103_777_2,
        5.463_784_911_164_114_369_9,
        1.784_826_539_917_291_335_8,
        0.296_560_571_828_504_891_23,
        0.026_532_189_526_576_123_093,
        0.001_242_660_947_388_078_438_6,
        2.711_555_568_743_487_578_15e-5,
        2.010_334_399_292_288_132_65e-7,
    ];
    pub(super) const FAR_DENOMINATOR: [f64; 8] = [
        1.0,
        0.599_832_206_555_887_937_69,
        0.136_929_880_922_735_805_31,
        0.014_875_361_290_850_614_852_5,
        7.868_691_311_456_132_591e-4,
        1.846_318_317_510_054_681_8e-5,
        1.421_511_758_316_445_888_7e-7,
        2.044_263_103_389_939_785_64e-15,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table(a: u64, b: u64, c: u64, d: u64) -> PairedTable {
        PairedTable {
            both_correct: a,
            correct_to_wrong: b,
            wrong_to_correct: c,
            both_wrong: d,
        }
    }

    fn stats(a: u64, b: u64, c: u64, d: u64) -> PairedStats {
        PairedStats::from_table(&table(a, b, c, d), ConfidenceLevel::NINETY_FIVE)
            .expect("a table with pairs has statistics")
    }

    fn assert_close(what: &str, actual: f64, expected: f64, tolerance: f64) {
        assert!(
            (actual - expected).abs() <= tolerance,
            "{what}: got {actual:e}, expected {expected:e} (± {tolerance:e})"
        );
    }

    fn assert_relatively_close(what: &str, actual: f64, expected: f64, relative: f64) {
        let scale = expected.abs().max(f64::MIN_POSITIVE);
        assert!(
            (actual - expected).abs() <= relative * scale,
            "{what}: got {actual:e}, expected {expected:e} (relative ± {relative:e})"
        );
    }

    /// One table and the values scripts/stats_reference.py printed for it.
    struct ReferenceCase {
        name: &'static str,
        /// both_correct, correct_to_wrong, wrong_to_correct, both_wrong.
        table: [u64; 4],
        baseline_ci: (f64, f64),
        variant_ci: (f64, f64),
        mcnemar_exact_p: f64,
        delta_ci: (f64, f64),
    }

    // ---- Values printed by scripts/stats_reference.py (see its header for the command) ----
    // python 3.11.7, numpy 2.4.6, scipy 1.17.1, statsmodels 0.15.0
    // Wilson: statsmodels proportion_confint(method="wilson"); McNemar: statsmodels
    // mcnemar(exact=True), cross-checked there with scipy binomtest and exact fractions;
    // delta: the script's own Newcombe method 10, checked there against published examples.

    // z for confidence 0.95: scipy.stats.norm.ppf(0.975)
    const Z_95_SCIPY: f64 = 1.959963984540054;
    // (probability, scipy.stats.norm.ppf(probability))
    const NORMAL_QUANTILES: &[(f64, f64)] = &[
        (1e-300, -37.0470962993612),
        (1e-20, -9.262340089798409),
        (1e-12, -7.034483825301131),
        (1e-05, -4.264890793922825),
        (0.005, -2.575829303548901),
        (0.025, -1.9599639845400545),
        (0.07, -1.4757910281791706),
        (0.3, -0.5244005127080409),
        (0.5, 0.0),
        (0.6, 0.2533471031357997),
        (0.975, 1.959963984540054),
        (0.995, 2.5758293035489004),
        (0.9999999, 5.199337582290661),
    ];
    const REFERENCE_CASES: &[ReferenceCase] = &[
        ReferenceCase {
            name: "newcombe_1998_example",
            table: [20, 12, 2, 16],
            baseline_ci: (0.501410168761127, 0.7586125034815325),
            variant_ci: (0.3116219921125717, 0.5769397197834315),
            mcnemar_exact_p: 0.012939453125,
            delta_ci: (-0.3292069954001405, -0.056156424841748265),
        },
        ReferenceCase {
            name: "bentur_2009",
            table: [1, 1, 7, 12],
            baseline_ci: (0.02651876743807452, 0.2891413907391826),
            variant_ci: (0.20751011368564493, 0.5912134622488425),
            mcnemar_exact_p: 0.0703125,
            delta_ci: (0.02555912416485978, 0.506920226686141),
        },
        ReferenceCase {
            name: "cavo_2012",
            table: [59, 6, 16, 80],
            baseline_ci: (0.3310367548370932, 0.4809037592679161),
            variant_ci: (0.390480631970418, 0.5427885827120046),
            mcnemar_exact_p: 0.052478790283203125,
            delta_ci: (0.004625113933050054, 0.1186211956387099),
        },
        ReferenceCase {
            name: "single_pair_both_wrong",
            table: [0, 0, 0, 1],
            baseline_ci: (0.0, 0.7934506856227626),
            variant_ci: (0.0, 0.7934506856227626),
            mcnemar_exact_p: 1.0,
            delta_ci: (-0.7934506856227626, 0.7934506856227626),
        },
        ReferenceCase {
            name: "all_concordant",
            table: [5, 0, 0, 5],
            baseline_ci: (0.236593090512564, 0.7634069094874361),
            variant_ci: (0.236593090512564, 0.7634069094874361),
            mcnemar_exact_p: 1.0,
            delta_ci: (-0.16659315708122263, 0.16659315708122263),
        },
        ReferenceCase {
            name: "no_correct_to_wrong",
            table: [10, 0, 7, 3],
            baseline_ci: (0.2992980081982123, 0.7007019918017877),
            variant_ci: (0.6395811352592431, 0.9476312541037835),
            mcnemar_exact_p: 0.015625,
            delta_ci: (0.10321461741595381, 0.5470732736986523),
        },
        ReferenceCase {
            name: "no_wrong_to_correct",
            table: [10, 7, 0, 3],
            baseline_ci: (0.6395811352592431, 0.9476312541037835),
            variant_ci: (0.2992980081982123, 0.7007019918017877),
            mcnemar_exact_p: 0.015625,
            delta_ci: (-0.5470732736986523, -0.10321461741595381),
        },
        ReferenceCase {
            name: "balanced_flips",
            table: [40, 9, 9, 42],
            baseline_ci: (0.3942199893044113, 0.5865198806597283),
            variant_ci: (0.3942199893044113, 0.5865198806597283),
            mcnemar_exact_p: 1.0,
            delta_ci: (-0.08384099275945575, 0.08384099275945575),
        },
        ReferenceCase {
            name: "all_discordant_balanced",
            table: [0, 50, 50, 0],
            baseline_ci: (0.4038315303659956, 0.5961684696340044),
            variant_ci: (0.4038315303659956, 0.5961684696340044),
            mcnemar_exact_p: 1.0,
            delta_ci: (-0.19233693926800877, 0.19233693926800877),
        },
        ReferenceCase {
            name: "large_150000",
            table: [120000, 12000, 11000, 7000],
            baseline_ci: (0.8783457587621487, 0.8816347783449324),
            variant_ci: (0.8716406137983032, 0.8750069314297063),
            mcnemar_exact_p: 4.451206751481075e-11,
            delta_ci: (-0.008648254077713746, -0.004685361847201622),
        },
        ReferenceCase {
            name: "lopsided_flips",
            table: [0, 3, 997, 0],
            baseline_ci: (0.0010207838811386186, 0.008783014053503173),
            variant_ci: (0.9912169859464969, 0.9989792161188614),
            mcnemar_exact_p: 3.110894301402977e-293,
            delta_ci: (0.9824339718929938, 0.9979584322377228),
        },
        ReferenceCase {
            name: "all_both_correct_150000",
            table: [150000, 0, 0, 0],
            baseline_ci: (0.9999743909303699, 0.9999999999999999),
            variant_ci: (0.9999743909303699, 0.9999999999999999),
            mcnemar_exact_p: 1.0,
            delta_ci: (-2.5609069630117e-05, 2.5609069630117e-05),
        },
        ReferenceCase {
            name: "nearly_all_wrong",
            table: [0, 1, 0, 149999],
            baseline_ci: (1.1768313355787803e-06, 3.776523017354418e-05),
            variant_ci: (0.0, 2.5609069630051364e-05),
            mcnemar_exact_p: 1.0,
            delta_ci: (-3.776523017354418e-05, 1.9524223720627918e-05),
        },
        ReferenceCase {
            name: "millions_moderate_p",
            table: [500000, 1000000, 1003000, 250000],
            baseline_ci: (0.5442718430761918, 0.5454483368524764),
            variant_ci: (0.5453616792399915, 0.5465379382577941),
            mcnemar_exact_p: 0.034088365079432,
            delta_ci: (8.213399089791566e-05, 0.002097304022437272),
        },
        ReferenceCase {
            name: "millions_tiny_p",
            table: [1000000, 1200000, 1250000, 550000],
            baseline_ci: (0.5495124173281021, 0.5504874866355198),
            variant_ci: (0.5620137923368349, 0.5629860876176922),
            mcnemar_exact_p: 6.483367905220959e-224,
            delta_ci: (0.01173313158956547, 0.013266849649619137),
        },
    ];
    // ---- End of values printed by scripts/stats_reference.py ----

    /// Interval limits: absolute 1e-12, far below any reported digit and far above the
    /// ~1e-15 rounding differences between two f64 evaluations of the same formula.
    const LIMIT_TOLERANCE: f64 = 1e-12;
    /// p-values span hundreds of orders of magnitude, so they are compared relatively: 1e-9.
    const P_RELATIVE_TOLERANCE: f64 = 1e-9;

    #[test]
    fn z_for_95_percent_matches_scipy_norm_ppf() {
        assert_close(
            "z(0.95)",
            ConfidenceLevel::NINETY_FIVE.z(),
            Z_95_SCIPY,
            1e-14,
        );
    }

    #[test]
    fn standard_normal_quantile_matches_scipy_in_all_three_regions_to_1e_13_relative() {
        // "keep it exact enough (1e-9)": checked to 1e-13 relative, over the central region and
        // both tails (p below e^-25 reaches the far-tail polynomial).
        for &(p, expected) in NORMAL_QUANTILES {
            let actual = standard_normal_quantile(p).expect("p is inside (0, 1)");
            if expected == 0.0 {
                assert_eq!(actual, 0.0, "Φ⁻¹(0.5)");
            } else {
                assert_relatively_close(&format!("Φ⁻¹({p:e})"), actual, expected, 1e-13);
            }
        }
    }

    #[test]
    fn standard_normal_quantile_is_undefined_outside_the_open_unit_interval() {
        for p in [0.0, 1.0, -0.1, 1.1, f64::NAN, f64::INFINITY] {
            assert_eq!(standard_normal_quantile(p), None, "p = {p}");
        }
    }

    #[test]
    fn confidence_level_rejects_values_that_are_not_strictly_between_0_and_1() {
        for level in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert_eq!(ConfidenceLevel::new(level), None, "level = {level}");
        }
        assert_eq!(
            ConfidenceLevel::new(0.95),
            Some(ConfidenceLevel::NINETY_FIVE)
        );
    }

    #[test]
    fn every_statistic_matches_the_independent_python_reference() {
        for case in REFERENCE_CASES {
            let [a, b, c, d] = case.table;
            let s = stats(a, b, c, d);
            let name = case.name;
            assert_close(
                &format!("{name} baseline_ci_low"),
                s.baseline_ci_low,
                case.baseline_ci.0,
                LIMIT_TOLERANCE,
            );
            assert_close(
                &format!("{name} baseline_ci_high"),
                s.baseline_ci_high,
                case.baseline_ci.1,
                LIMIT_TOLERANCE,
            );
            assert_close(
                &format!("{name} variant_ci_low"),
                s.variant_ci_low,
                case.variant_ci.0,
                LIMIT_TOLERANCE,
            );
            assert_close(
                &format!("{name} variant_ci_high"),
                s.variant_ci_high,
                case.variant_ci.1,
                LIMIT_TOLERANCE,
            );
            assert_close(
                &format!("{name} delta_ci_low"),
                s.delta_ci_low,
                case.delta_ci.0,
                LIMIT_TOLERANCE,
            );
            assert_close(
                &format!("{name} delta_ci_high"),
                s.delta_ci_high,
                case.delta_ci.1,
                LIMIT_TOLERANCE,
            );
            assert_relatively_close(
                &format!("{name} mcnemar_exact_p"),
                s.mcnemar_exact_p,
                case.mcnemar_exact_p,
                P_RELATIVE_TOLERANCE,
            );
        }
    }

    #[test]
    fn delta_interval_reproduces_newcombe_1998_worked_example() {
        // Newcombe (1998), method 10, for a = 20, b = 12, c = 2, d = 16: 0.0562 to 0.3292 for
        // p1 − p2 with p1 = (a + b)/n. Babel's delta is variant − baseline, the negation, so the
        // table with b and c swapped reports the published limits directly (φ is unchanged).
        // Printed to 4 decimals, hence the tolerance of half a unit in the last place.
        let improved = stats(20, 2, 12, 16);
        assert_close("delta", improved.delta, 0.2, 1e-15);
        assert_close("delta_ci_low", improved.delta_ci_low, 0.0562, 5e-5);
        assert_close("delta_ci_high", improved.delta_ci_high, 0.3292, 5e-5);

        let worsened = stats(20, 12, 2, 16);
        assert_close("delta_ci_low", worsened.delta_ci_low, -0.3292, 5e-5);
        assert_close("delta_ci_high", worsened.delta_ci_high, -0.0562, 5e-5);
    }

    #[test]
    fn delta_interval_reproduces_fagerland_lydersen_laake_examples() {
        // Fagerland, Lydersen & Laake (2014, Stat Med 33:2850–2875), Bentur et al. data
        // (1, 1, 7, 12), Newcombe square-and-add: −0.507 to −0.026 for baseline − variant,
        // i.e. 0.026 to 0.507 here.
        let bentur = stats(1, 1, 7, 12);
        assert_close("bentur delta_ci_low", bentur.delta_ci_low, 0.026, 5e-4);
        assert_close("bentur delta_ci_high", bentur.delta_ci_high, 0.507, 5e-4);
        // Their book (2017, ch. 8), Cavo et al. data (59, 6, 16, 80): −0.1186 to −0.0046.
        let cavo = stats(59, 6, 16, 80);
        assert_close("cavo delta_ci_low", cavo.delta_ci_low, 0.0046, 5e-5);
        assert_close("cavo delta_ci_high", cavo.delta_ci_high, 0.1186, 5e-5);
    }

    #[test]
    fn point_estimates_follow_the_definitions() {
        // "baseline = (a+b)/n, variant = (a+c)/n, the delta variant − baseline,
        // consistency = (a+d)/n".
        let s = stats(20, 12, 2, 16);
        assert_eq!(s.pairs, 50);
        assert_eq!(s.discordant_pairs, 14);
        assert_eq!((s.correct_to_wrong, s.wrong_to_correct), (12, 2));
        assert_close("baseline_accuracy", s.baseline_accuracy, 32.0 / 50.0, 1e-15);
        assert_close("variant_accuracy", s.variant_accuracy, 22.0 / 50.0, 1e-15);
        assert_close("delta", s.delta, -10.0 / 50.0, 1e-15);
        assert_close("consistency", s.consistency, 36.0 / 50.0, 1e-15);
        assert_eq!(s.confidence_level, 0.95);
        assert_eq!(s.delta_ci_method, "newcombe_1998_method_10");
    }

    #[test]
    fn marginals_are_each_sides_correct_and_wrong_totals() {
        // Baseline correct a + b, baseline wrong c + d, variant correct a + c, variant wrong
        // b + d: distinct powers of two, so a swapped name cannot give the same number.
        let marginals = Marginals::of(&table(1, 2, 4, 8)).expect("small counts");
        assert_eq!(
            marginals,
            Marginals {
                baseline_correct: 3,
                baseline_wrong: 12,
                variant_correct: 5,
                variant_wrong: 10,
            }
        );
        assert_eq!(Marginals::of(&table(u64::MAX, 1, 0, 0)), None);
    }

    #[test]
    fn an_empty_table_has_no_statistics() {
        // "n = 0 → no statistics".
        let empty = PairedTable::default();
        assert_eq!(
            PairedStats::from_table(&empty, ConfidenceLevel::NINETY_FIVE),
            None
        );
        assert_eq!(
            paired_delta_interval(&empty, ConfidenceLevel::NINETY_FIVE),
            None
        );
        assert_eq!(wilson_interval(0, 0, ConfidenceLevel::NINETY_FIVE), None);
    }

    #[test]
    fn counts_that_overflow_u64_yield_no_statistics_instead_of_panicking() {
        let huge = table(u64::MAX, 1, 0, 0);
        assert_eq!(huge.pairs(), None);
        assert_eq!(
            PairedStats::from_table(&huge, ConfidenceLevel::NINETY_FIVE),
            None
        );
    }

    #[test]
    fn wilson_rejects_more_successes_than_trials() {
        assert_eq!(wilson_interval(3, 2, ConfidenceLevel::NINETY_FIVE), None);
    }

    #[test]
    fn wilson_limits_are_exactly_0_and_1_at_the_edges() {
        let none = wilson_interval(0, 7, ConfidenceLevel::NINETY_FIVE).unwrap();
        assert_eq!(none.low, 0.0);
        let all = wilson_interval(7, 7, ConfidenceLevel::NINETY_FIVE).unwrap();
        assert_eq!(all.high, 1.0);
    }

    #[test]
    fn mcnemar_p_is_one_without_discordant_pairs() {
        // "p = 1 when b+c = 0".
        assert_eq!(mcnemar_exact_p(0, 0), 1.0);
        assert_eq!(stats(30, 0, 0, 12).mcnemar_exact_p, 1.0);
    }

    #[test]
    fn mcnemar_p_for_tiny_tables_equals_hand_computed_binomial_tails() {
        // b + c = 1: 2·P(X ≤ 0) = 2·½ = 1. b = 0, c = 5: 2·(½)^5 = 1/16. b = 1, c = 4:
        // 2·(1 + 5)/32 = 3/8.
        assert_eq!(mcnemar_exact_p(0, 1), 1.0);
        assert_relatively_close("(0, 5)", mcnemar_exact_p(0, 5), 1.0 / 16.0, 1e-15);
        assert_relatively_close("(1, 4)", mcnemar_exact_p(1, 4), 3.0 / 8.0, 1e-14);
    }

    #[test]
    fn mcnemar_p_underflows_to_zero_rather_than_nan_for_all_flips_one_way() {
        // 2·2^−150000 is below the smallest positive f64; the nearest f64 is 0.
        let p = mcnemar_exact_p(0, 150_000);
        assert_eq!(p, 0.0);
        let p = mcnemar_exact_p(u64::MAX, 0);
        assert_eq!(p, 0.0);
    }

    #[test]
    fn mcnemar_p_stays_finite_for_huge_counts() {
        // Equal counts short-circuit to 1; unequal near-median counts must not overflow.
        assert_eq!(mcnemar_exact_p(u64::MAX, u64::MAX), 1.0);
        let p = mcnemar_exact_p(1_000_000_000, 1_000_000_001);
        assert!(p.is_finite() && p > 0.99 && p <= 1.0, "p = {p}");
    }

    #[test]
    fn statistics_serialize_with_the_documented_field_names() {
        let json = serde_json::to_value(stats(20, 12, 2, 16)).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "pairs",
                "both_correct",
                "correct_to_wrong",
                "wrong_to_correct",
                "both_wrong",
                "discordant_pairs",
                "confidence_level",
                "baseline_accuracy",
                "baseline_ci_low",
                "baseline_ci_high",
                "variant_accuracy",
                "variant_ci_low",
                "variant_ci_high",
                "delta",
                "delta_ci_low",
                "delta_ci_high",
                "delta_ci_method",
                "consistency",
                "mcnemar_exact_p",
            ]
        );
        assert_eq!(json["delta_ci_method"], "newcombe_1998_method_10");
        assert_eq!(json["confidence_level"], 0.95);
    }

    #[test]
    fn a_wider_confidence_level_gives_wider_intervals() {
        let ninety_nine = ConfidenceLevel::new(0.99).unwrap();
        let narrow = stats(20, 12, 2, 16);
        let wide = PairedStats::from_table(&table(20, 12, 2, 16), ninety_nine).unwrap();
        assert!(wide.baseline_ci_low < narrow.baseline_ci_low);
        assert!(wide.baseline_ci_high > narrow.baseline_ci_high);
        assert!(wide.delta_ci_low < narrow.delta_ci_low);
        assert!(wide.delta_ci_high > narrow.delta_ci_high);
        assert_close("z(0.99)", ninety_nine.z(), 2.5758293035489004, 1e-14);
    }

    fn all_fields_finite(s: &PairedStats) -> bool {
        [
            s.confidence_level,
            s.baseline_accuracy,
            s.baseline_ci_low,
            s.baseline_ci_high,
            s.variant_accuracy,
            s.variant_ci_low,
            s.variant_ci_high,
            s.delta,
            s.delta_ci_low,
            s.delta_ci_high,
            s.consistency,
            s.mcnemar_exact_p,
        ]
        .iter()
        .all(|value| value.is_finite())
    }

    /// Cell counts mixing small values (edges, zeros) with large ones.
    fn cell() -> impl Strategy<Value = u64> {
        prop_oneof![0..5u64, 0..200u64, 0..2_000_000u64]
    }

    proptest! {
        #[test]
        fn intervals_contain_their_estimates_and_stay_in_range(
            a in cell(), b in cell(), c in cell(), d in cell(), level in 0.5..0.999f64,
        ) {
            let confidence = ConfidenceLevel::new(level).unwrap();
            let Some(s) = PairedStats::from_table(&table(a, b, c, d), confidence) else {
                prop_assert_eq!(a + b + c + d, 0);
                return Ok(());
            };
            prop_assert!(all_fields_finite(&s), "{:?}", s);
            prop_assert!(0.0 <= s.baseline_ci_low && s.baseline_ci_low <= s.baseline_accuracy);
            prop_assert!(s.baseline_accuracy <= s.baseline_ci_high && s.baseline_ci_high <= 1.0);
            prop_assert!(0.0 <= s.variant_ci_low && s.variant_ci_low <= s.variant_accuracy);
            prop_assert!(s.variant_accuracy <= s.variant_ci_high && s.variant_ci_high <= 1.0);
            prop_assert!(-1.0 <= s.delta_ci_low && s.delta_ci_low <= s.delta, "{:?}", s);
            prop_assert!(s.delta <= s.delta_ci_high && s.delta_ci_high <= 1.0, "{:?}", s);
            prop_assert!((0.0..=1.0).contains(&s.consistency));
            prop_assert!((0.0..=1.0).contains(&s.mcnemar_exact_p));
        }

        #[test]
        fn swapping_the_flip_directions_mirrors_the_comparison(
            a in cell(), b in cell(), c in cell(), d in cell(),
        ) {
            let confidence = ConfidenceLevel::NINETY_FIVE;
            let (Some(forward), Some(backward)) = (
                PairedStats::from_table(&table(a, b, c, d), confidence),
                PairedStats::from_table(&table(a, c, b, d), confidence),
            ) else {
                return Ok(());
            };
            prop_assert_eq!(forward.mcnemar_exact_p, backward.mcnemar_exact_p);
            prop_assert_eq!(forward.delta, -backward.delta);
            prop_assert_eq!(forward.delta_ci_low, -backward.delta_ci_high);
            prop_assert_eq!(forward.delta_ci_high, -backward.delta_ci_low);
            prop_assert_eq!(forward.baseline_ci_low, backward.variant_ci_low);
            prop_assert_eq!(forward.baseline_ci_high, backward.variant_ci_high);
            prop_assert_eq!(forward.consistency, backward.consistency);
        }

        #[test]
        fn mcnemar_p_grows_when_the_flips_become_more_balanced(
            smaller in 0..5_000u64, gap in 2..5_000u64,
        ) {
            // Moving one pair from the larger to the smaller discordant count keeps b + c and
            // raises P(X ≤ min(b, c)).
            let larger = smaller + gap;
            let before = mcnemar_exact_p(smaller, larger);
            let after = mcnemar_exact_p(smaller + 1, larger - 1);
            prop_assert!((0.0..=1.0).contains(&before));
            prop_assert!(after >= before, "{} < {}", after, before);
        }
    }
}
