//! The statistics a panel adds to `compare`'s (Wilson, Newcombe, exact McNemar live in
//! `crate::compare::stats`): Cochran's Q with its chi-square p-value, Holm's step-down
//! adjustment, Cohen's κ of two correctness vectors, Kendall's τ-b and Pearson's r (the
//! point-biserial correlation when one variable is 0/1). Pure functions of counts and
//! numbers; every one returns `None` where the statistic is undefined, never NaN.
//!
//! Checked against statsmodels, scipy and scikit-learn on generated panels
//! (`scripts/panel_reference.py`, values in `tests/fixtures/panel/reference.json`).

/// Cochran's Q for a k-treatment table of 0/1 outcomes: `column_totals` are the successes
/// of each treatment (side), `row_totals` those of each block (item), over the same
/// blocks. Q = (k − 1)(k ΣC² − N²) / (kN − ΣR²), N the grand total; `None` when no block
/// varies (the denominator is 0). Returns (Q, p) with p the chi-square upper tail at
/// k − 1 degrees of freedom (W. G. Cochran, Biometrika 37 (1950) 256–266).
pub fn cochran_q(
    column_totals: &[u64],
    row_totals: impl IntoIterator<Item = u64>,
) -> Option<(f64, f64)> {
    let k = column_totals.len() as f64;
    if column_totals.len() < 2 {
        return None;
    }
    let total: u64 = column_totals.iter().sum();
    let (mut rows_sum, mut rows_squares) = (0u64, 0u128);
    for row in row_totals {
        rows_sum += row;
        rows_squares += u128::from(row) * u128::from(row);
    }
    debug_assert_eq!(rows_sum, total);
    let n = total as f64;
    let columns_squares: f64 = column_totals.iter().map(|&c| (c as f64) * (c as f64)).sum();
    let denominator = k * n - rows_squares as f64;
    if denominator <= 0.0 {
        return None;
    }
    let q = (k - 1.0) * (k * columns_squares - n * n) / denominator;
    Some((q, chi_square_upper_tail(q, k - 1.0)))
}

/// P(X ≥ x) for X chi-square with `df` degrees of freedom: the regularized upper
/// incomplete gamma function Q(df/2, x/2).
pub fn chi_square_upper_tail(x: f64, df: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    gamma_q(df / 2.0, x / 2.0)
}

/// The regularized upper incomplete gamma function Q(a, x) = Γ(a, x)/Γ(a): by its power
/// series (of P = 1 − Q) below x = a + 1, by Legendre's continued fraction (evaluated
/// with Lentz's method) above, where the series would need many terms and Q is small.
fn gamma_q(a: f64, x: f64) -> f64 {
    const EPSILON: f64 = 1e-16;
    const TINY: f64 = 1e-300;
    let front = (-x + a * x.ln() - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut term, mut sum, mut denominator) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            denominator += 1.0;
            term *= x / denominator;
            sum += term;
            if term.abs() < sum.abs() * EPSILON {
                break;
            }
        }
        return (1.0 - sum * front).clamp(0.0, 1.0);
    }
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..10_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPSILON {
            break;
        }
    }
    (front * h).clamp(0.0, 1.0)
}

/// ln Γ(x) for x > 0 by the Lanczos approximation (g = 7, nine coefficients; relative
/// error near 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
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
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Holm's step-down adjustment of the p-values that are defined (S. Holm, Scandinavian
/// Journal of Statistics 6 (1979) 65–70): sorted ascending, the j-th (1-based) of m
/// becomes (m − j + 1)·p, made non-decreasing and capped at 1. Undefined stay undefined
/// and do not count in m.
pub fn holm(p_values: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|&i| p_values[i].is_some())
        .collect();
    order.sort_by(|&a, &b| {
        p_values[a]
            .unwrap_or(0.0)
            .total_cmp(&p_values[b].unwrap_or(0.0))
    });
    let m = order.len();
    let mut adjusted = vec![None; p_values.len()];
    let mut running: f64 = 0.0;
    for (j, &index) in order.iter().enumerate() {
        let p = p_values[index].unwrap_or(1.0);
        running = running.max((m - j) as f64 * p);
        adjusted[index] = Some(running.min(1.0));
    }
    adjusted
}

/// Cohen's κ of two 0/1 vectors over the same n items, from their 2×2 table: both
/// correct, correct only on the first, only on the second, both wrong. κ = 1 − observed
/// disagreement / disagreement expected from the margins (J. Cohen, Educational and
/// Psychological Measurement 20 (1960) 37–46); `None` for no items, or when the margins
/// expect no disagreement (both vectors the same constant).
pub fn cohen_kappa(
    both_correct: u64,
    first_only: u64,
    second_only: u64,
    both_wrong: u64,
) -> Option<f64> {
    let n = (both_correct + first_only + second_only + both_wrong) as f64;
    if n == 0.0 {
        return None;
    }
    let first_correct = (both_correct + first_only) as f64;
    let second_correct = (both_correct + second_only) as f64;
    let expected =
        (first_correct * (n - second_correct) + (n - first_correct) * second_correct) / n;
    if expected == 0.0 {
        return None;
    }
    Some(1.0 - (first_only + second_only) as f64 / expected)
}

/// Kendall's τ-b of two paired samples: (concordant − discordant) / √((n₀ − n₁)(n₀ − n₂)),
/// n₀ = n(n − 1)/2 and n₁, n₂ the pairs tied in the first and in the second (M. G.
/// Kendall, Biometrika 33 (1945) 239–251). `None` with fewer than two pairs or when either
/// sample is constant.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    assert_eq!(x.len(), y.len(), "paired samples");
    let n = x.len();
    if n < 2 {
        return None;
    }
    let (mut concordant, mut discordant, mut tied_x, mut tied_y) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = x[i].total_cmp(&x[j]) as i64;
            let dy = y[i].total_cmp(&y[j]) as i64;
            match (dx, dy) {
                (0, 0) => {
                    tied_x += 1;
                    tied_y += 1;
                }
                (0, _) => tied_x += 1,
                (_, 0) => tied_y += 1,
                _ if dx == dy => concordant += 1,
                _ => discordant += 1,
            }
        }
    }
    let pairs = (n * (n - 1) / 2) as i64;
    let denominator = (((pairs - tied_x) as f64) * ((pairs - tied_y) as f64)).sqrt();
    (denominator > 0.0).then(|| (concordant - discordant) as f64 / denominator)
}

/// Pearson's r of two paired samples (the point-biserial correlation when `x` is 0/1);
/// `None` with fewer than two pairs or when either sample is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    assert_eq!(x.len(), y.len(), "paired samples");
    let constant = |v: &[f64]| v.iter().all(|value| *value == v[0]);
    if x.len() < 2 || constant(x) || constant(y) {
        return None;
    }
    let n = x.len() as f64;
    let mean_x = x.iter().sum::<f64>() / n;
    let mean_y = y.iter().sum::<f64>() / n;
    let (mut xy, mut xx, mut yy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mean_x, b - mean_y);
        xy += dx * dy;
        xx += dx * dx;
        yy += dy * dy;
    }
    Some((xy / (xx * yy).sqrt()).clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chi_square_tail_matches_known_values() {
        // Table values: P(X ≥ 3.841458820694124) = 0.05 at 1 df; P(X ≥ 2) = e^-1 at 2 df.
        assert!((chi_square_upper_tail(3.841_458_820_694_124, 1.0) - 0.05).abs() < 1e-12);
        assert!((chi_square_upper_tail(2.0, 2.0) - (-1.0f64).exp()).abs() < 1e-14);
        assert_eq!(chi_square_upper_tail(0.0, 5.0), 1.0);
        // Far in the tail the value stays relative-accurate (scipy: 7.7e-218 at 1000, 3 df).
        let tail = chi_square_upper_tail(1000.0, 3.0);
        assert!(tail > 0.0 && tail < 1e-200, "{tail}");
    }

    #[test]
    fn holm_of_ties_and_undefined_values() {
        let adjusted = holm(&[Some(0.01), None, Some(0.01), Some(0.04)]);
        assert_eq!(adjusted, vec![Some(0.03), None, Some(0.03), Some(0.04)]);
        assert_eq!(holm(&[Some(0.6), Some(0.7)]), vec![Some(1.0), Some(1.0)]);
    }

    #[test]
    fn kappa_is_undefined_only_without_expected_disagreement() {
        assert_eq!(cohen_kappa(5, 0, 0, 0), None);
        assert_eq!(cohen_kappa(0, 0, 0, 0), None);
        assert_eq!(cohen_kappa(3, 0, 0, 3), Some(1.0));
        assert_eq!(cohen_kappa(0, 3, 3, 0), Some(-1.0));
    }
}
