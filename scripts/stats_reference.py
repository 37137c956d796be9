#!/usr/bin/env python3
"""Independent reference values for src/compare/stats.rs (paired binary outcomes).

Produced with:

    python3 -m venv /tmp/statsvenv
    /tmp/statsvenv/bin/pip install scipy statsmodels
    /tmp/statsvenv/bin/python scripts/stats_reference.py

Versions used for the values in stats.rs: Python 3.11.7, numpy 2.4.6, scipy 1.17.1,
statsmodels 0.15.0.

Where each figure comes from (none of it reuses the Rust code):
  * z for a confidence level: scipy.stats.norm.ppf.
  * Wilson intervals per side: statsmodels.stats.proportion.proportion_confint(method="wilson").
  * Exact McNemar p: statsmodels.stats.contingency_tables.mcnemar(exact=True), checked here
    against scipy.stats.binomtest and, for small tables, exact rational arithmetic.
  * Paired-difference interval: Newcombe (1998) method 10, written below from the paper's
    formulas (Stat Med 17:2635-2650) on top of the statsmodels Wilson intervals, and checked
    against published worked examples before any value is printed.

Orientation: babel reports delta = variant - baseline, where baseline accuracy is
(a + b) / n and variant accuracy is (a + c) / n. Newcombe's theta is p1 - p2 with
p1 = (a + b) / n, i.e. baseline - variant, so babel's interval is Newcombe's negated.

The script prints Rust literals that are pasted into the tests of src/compare/stats.rs.
"""

import math
import platform
import sys
from fractions import Fraction

import numpy
import scipy
import scipy.stats
import statsmodels
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

CONFIDENCE = 0.95
ALPHA = 1.0 - CONFIDENCE


def wilson(successes, trials):
    low, high = proportion_confint(successes, trials, alpha=ALPHA, method="wilson")
    return float(low), float(high)


def newcombe_method_10(a, b, c, d):
    """Newcombe 1998 method 10 for theta = p1 - p2, p1 = (a+b)/n, p2 = (a+c)/n.

    L = theta - delta, U = theta + epsilon with
      delta   = sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
      epsilon = sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2)
    (l_i, u_i) the Wilson limits of p_i, and phi the phi coefficient of the 2x2 table,
    corrected: when ad > bc the numerator ad - bc is replaced by max(ad - bc - n/2, 0);
    phi = 0 when any marginal total is zero.
    """
    n = a + b + c + d
    p1 = Fraction(a + b, n)
    p2 = Fraction(a + c, n)
    l1, u1 = wilson(a + b, n)
    l2, u2 = wilson(a + c, n)
    marginals = (a + b) * (c + d) * (a + c) * (b + d)
    if marginals == 0:
        phi = 0.0
    else:
        cross = a * d - b * c
        if cross > 0:
            cross = max(Fraction(cross) - Fraction(n, 2), Fraction(0))
        phi = float(cross) / math.sqrt(marginals)
    p1 = float(p1)
    p2 = float(p2)
    theta = float(Fraction(b - c, n))
    dl1, du2 = p1 - l1, u2 - p2
    du1, dl2 = u1 - p1, p2 - l2
    delta = math.sqrt(max(0.0, dl1 * dl1 - 2.0 * phi * dl1 * du2 + du2 * du2))
    epsilon = math.sqrt(max(0.0, du1 * du1 - 2.0 * phi * du1 * dl2 + dl2 * dl2))
    return theta - delta, theta + epsilon


def exact_mcnemar_rational(b, c):
    """min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2), in exact arithmetic."""
    m = b + c
    if m == 0:
        return 1.0
    k = min(b, c)
    tail = Fraction(sum(math.comb(m, i) for i in range(k + 1)), 2**m)
    return float(min(Fraction(1), 2 * tail))


# Published worked examples for the paired-difference interval, in Newcombe's orientation
# (theta = p1 - p2), 95% level, limits rounded as printed in the source.
PUBLISHED = [
    # Newcombe (1998), Stat Med 17:2635-2650, worked example, method 10: 0.0562 to 0.3292.
    # (Figures as reproduced in the test suite of the R package ratesci,
    # tests/testthat/test3.R, "against Newcombe's method 10 result"; method 8, the same
    # interval without the phi correction, is printed there as 0.0618 to 0.3242.)
    ("newcombe_1998_method_10", (20, 12, 2, 16), (0.0562, 0.3292), 4),
    # Fagerland, Lydersen & Laake (2014), Stat Med 33:2850-2875, Bentur et al. (2009)
    # airway data, "Newcombe square-and-add" (method 10): -0.507 to -0.026.
    ("fagerland_2014_bentur", (1, 1, 7, 12), (-0.507, -0.026), 3),
    # Fagerland, Lydersen & Laake (2017), Statistical Analysis of Contingency Tables,
    # ch. 8, Cavo et al. (2012) data: -0.1186 to -0.0046 (contingencytables R package).
    ("fagerland_2017_cavo", (59, 6, 16, 80), (-0.1186, -0.0046), 4),
]

# Tables (both_correct, correct_to_wrong, wrong_to_correct, both_wrong) checked in stats.rs.
TABLES = [
    ("newcombe_1998_example", (20, 12, 2, 16)),
    ("bentur_2009", (1, 1, 7, 12)),
    ("cavo_2012", (59, 6, 16, 80)),
    ("single_pair_both_wrong", (0, 0, 0, 1)),
    ("all_concordant", (5, 0, 0, 5)),
    ("no_correct_to_wrong", (10, 0, 7, 3)),
    ("no_wrong_to_correct", (10, 7, 0, 3)),
    ("balanced_flips", (40, 9, 9, 42)),
    ("all_discordant_balanced", (0, 50, 50, 0)),
    ("large_150000", (120000, 12000, 11000, 7000)),
    ("lopsided_flips", (0, 3, 997, 0)),
    ("all_both_correct_150000", (150000, 0, 0, 0)),
    ("nearly_all_wrong", (0, 1, 0, 149999)),
    ("millions_moderate_p", (500000, 1000000, 1003000, 250000)),
    ("millions_tiny_p", (1000000, 1200000, 1250000, 550000)),
]


def rust_float(x):
    text = repr(float(x))
    if "e" in text or "." in text or "inf" in text or "nan" in text:
        return text
    return text + ".0"


def main():
    print(
        f"// python {platform.python_version()}, numpy {numpy.__version__}, "
        f"scipy {scipy.__version__}, statsmodels {statsmodels.__version__}"
    )

    # Check the Python Newcombe implementation against the published figures first: if it
    # does not reproduce them, nothing it prints may be used.
    for name, (a, b, c, d), (low, high), places in PUBLISHED:
        got_low, got_high = newcombe_method_10(a, b, c, d)
        if round(got_low, places) != low or round(got_high, places) != high:
            sys.exit(f"{name}: method 10 gives {got_low}, {got_high}; published {low}, {high}")
    print("// published Newcombe method 10 examples reproduced")

    print(f"// z for confidence {CONFIDENCE}: scipy.stats.norm.ppf({1 - ALPHA / 2})")
    print(f"const Z_95_SCIPY: f64 = {rust_float(scipy.stats.norm.ppf(1 - ALPHA / 2))};")
    print("// (probability, scipy.stats.norm.ppf(probability))")
    print("const NORMAL_QUANTILES: &[(f64, f64)] = &[")
    for p in [1e-300, 1e-20, 1e-12, 1e-5, 0.005, 0.025, 0.07, 0.3, 0.5, 0.6, 0.975, 0.995, 0.9999999]:
        print(f"    ({rust_float(p)}, {rust_float(scipy.stats.norm.ppf(p))}),")
    print("];")

    print("const REFERENCE_CASES: &[ReferenceCase] = &[")
    for name, (a, b, c, d) in TABLES:
        n = a + b + c + d
        baseline_low, baseline_high = wilson(a + b, n)
        variant_low, variant_high = wilson(a + c, n)
        table = numpy.array([[a, b], [c, d]])
        p_statsmodels = float(mcnemar(table, exact=True).pvalue)
        if b + c > 0:
            p_scipy = float(scipy.stats.binomtest(b, b + c, 0.5).pvalue)
            if not math.isclose(p_scipy, p_statsmodels, rel_tol=1e-9, abs_tol=1e-300):
                sys.exit(f"{name}: binomtest {p_scipy} vs statsmodels {p_statsmodels}")
        if b + c <= 20000:
            p_exact = exact_mcnemar_rational(b, c)
            if not math.isclose(p_exact, p_statsmodels, rel_tol=1e-12, abs_tol=1e-300):
                sys.exit(f"{name}: exact {p_exact} vs statsmodels {p_statsmodels}")
        theta_low, theta_high = newcombe_method_10(a, b, c, d)
        # babel's delta is variant - baseline = -theta.
        delta_low, delta_high = -theta_high, -theta_low
        print("    ReferenceCase {")
        print(f"        name: \"{name}\",")
        print(f"        table: [{a}, {b}, {c}, {d}],")
        print(f"        baseline_ci: ({rust_float(baseline_low)}, {rust_float(baseline_high)}),")
        print(f"        variant_ci: ({rust_float(variant_low)}, {rust_float(variant_high)}),")
        print(f"        mcnemar_exact_p: {rust_float(p_statsmodels)},")
        print(f"        delta_ci: ({rust_float(delta_low)}, {rust_float(delta_high)}),")
        print("    },")
    print("];")


if __name__ == "__main__":
    main()
