#!/usr/bin/env python3
"""Independent reference values for `babel panel` (many sides compared at once).

Produced with:

    python3 -m venv /tmp/panelvenv
    /tmp/panelvenv/bin/pip install numpy scipy statsmodels scikit-learn
    /tmp/panelvenv/bin/python scripts/panel_reference.py

which (re)writes tests/fixtures/panel/reference.json, relative to the repository root
(the script finds the root from its own path, so it can be run from anywhere).

Versions used for the checked-in reference.json: Python 3.11.7, numpy 2.4.6,
scipy 1.17.1, statsmodels 0.15.0, scikit-learn 1.9.1 (also recorded in the file).

The panels are generated here with fixed seeds (random.Random, whose sequence is stable
across Python 3 versions), so the output is byte-for-byte reproducible.

A panel is S sides x N items; a cell is correct (1), wrong (0) or unknown (None: the side
lacks the item, or its correctness is null). Where each figure comes from (none of it
reuses the Rust code):
  * per side: known, correct, accuracy = correct / known, and the 95% Wilson interval from
    statsmodels.stats.proportion.proportion_confint(method="wilson"); null when known == 0.
  * matched set (items known on every side): Cochran's Q from
    statsmodels.stats.contingency_tables.cochrans_q; null when the set is empty or the
    statistic is nan (every matched row constant); df = S - 1 always.
  * pairs a < b over the items known on both: the 2x2 counts; delta = accuracy(b) -
    accuracy(a) = (b_only - a_only) / known_pairs; exact McNemar p from
    statsmodels.stats.contingency_tables.mcnemar(exact=True) (but see the underflow note
    below); Holm adjustment over the
    panel's non-null p-values from statsmodels.stats.multitest.multipletests(method="holm");
    Cohen's kappa from sklearn.metrics.cohen_kappa_score (null when nan).
  * by_benchmark / by_language: per-slice known/correct/accuracy and Kendall's tau-b
    (scipy.stats.kendalltau) between slice and overall accuracies over the sides where
    both are defined; null with fewer than 2 such sides or when nan.
  * per item: scipy.stats.pointbiserialr between the item's 0/1 outcomes and the overall
    accuracies of the sides on which it is known; consensus_wrong = known >= 3 and
    correct == 0; negative_discrimination = known >= 5 and point_biserial < 0.

Before anything is written every library value is re-derived independently and must agree
to 1e-12 (relative for p-values and Q, absolute for correlations, kappa, delta and interval
limits, which can be ~0): Wilson from its closed form with z from statistics.NormalDist;
McNemar against exact rational arithmetic (and scipy.stats.binomtest, which is not
independent: it calls the same scipy binom.cdf as statsmodels); Cochran's Q against Q = (k-1)(k sum C_j^2 - N^2) / (kN - sum R_i^2) in exact
rationals, its p-value against the closed-form chi-square survival function (math.erfc /
Poisson sum), and for S = 2 against the uncorrected McNemar chi-square; Holm against the
step-down definition; kappa against (po - pe) / (1 - pe) in exact rationals; tau-b against
its pair-counting definition; point-biserial against (M1 - M0) / s_n * sqrt(p q).

Library behaviour in degenerate cases, as observed with the versions above:
  * cochrans_q on a 0-row matrix raises IndexError (it is not called then); when every
    row is constant it returns statistic = pvalue = nan (0/0) with a RuntimeWarning. It
    counts as "success" the largest value present (np.unique(x)[-1]), so an all-zero
    matrix counts zeros, but that case is all-constant anyway.
  * mcnemar(exact=True) with no discordant pair returns p = 1.0 (binomtest would raise).
  * mcnemar(exact=True) is 2 * scipy.stats.binom.cdf(min, n, 0.5), accurate to ~1e-13
    relative down to ~1e-230, but binom.cdf returns 0.0 for some tails that are normal f64s
    (e.g. a_only = 37, b_only = 1100: exact 5.15e-273; 23 vs 1097: exact 5.99e-290). Where
    statsmodels gives 0.0 and the exact rational tail is a positive f64, mcnemar_p is that
    exact value instead (the script prints each such replacement). With the panels below
    no replacement happens (the smallest p is ~7e-268), so every mcnemar_p in the file is
    the statsmodels value; the guard is there so a changed generator cannot silently
    record a 0.0 that a correct implementation would fail against.
  * kendalltau can return 0.9999999999999998 where tau-b is exactly 1 (tolerances, not
    equality, are needed when comparing).
  * cohen_kappa_score returns nan (UndefinedMetricWarning) only when both vectors hold one
    and the same single label (pe = 1); two constant but opposite vectors give 0.0, one
    constant vector against a mixed one gives 0.0. Perfect disagreement gives -1 only
    when both vectors are balanced (e.g. 101 vs 010 gives -0.8).
  * pointbiserialr / kendalltau return nan when either input is constant.
"""

import json
import math
import os
import platform
import random
import statistics
import sys
import warnings
from fractions import Fraction

import numpy
import scipy
import scipy.stats
import sklearn
import statsmodels
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

ALPHA = 0.05
UNDERFLOW_REPLACED = []  # (a_only, b_only, exact p) where statsmodels returned 0.0
TOL = 1e-12
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "tests", "fixtures", "panel", "reference.json")


# ---------------------------------------------------------------------------------------
# Panels. cells[s][i] is 1, 0 or None; labels[i] is (benchmark, language).
# ---------------------------------------------------------------------------------------


def parse_rows(rows):
    return [[None if ch == "." else int(ch) for ch in row] for row in rows]


def panel_tiny():
    labels = [("arc", "en"), ("arc", "fr"), ("gsm8k", "en"), ("gsm8k", "en"), ("arc", "en")]
    rows = ["10.11", "1.010"]
    return "tiny", labels, parse_rows(rows)


def panel_ties():
    """4 sides over 2 benchmarks x 3 languages, 4 items per (benchmark, language).

    Side 1 is side 0 permuted within each benchmark (equal overall and per-benchmark
    accuracy, different per language); side 3 is side 2 permuted within each language.
    """
    rng = random.Random(101)
    benches = ["mmlu", "arc"]
    langs = ["fr", "en", "de"]
    labels = [(b, l) for b in benches for l in langs for _ in range(4)]
    n = len(labels)
    side0 = [rng.choice([1, 1, 0]) for _ in range(n)]
    side0[3] = None
    side0[17] = None
    side2 = [rng.choice([1, 0]) for _ in range(n)]
    side2[8] = None

    def permute_within(values, key):
        out = list(values)
        groups = {}
        for i, lab in enumerate(labels):
            groups.setdefault(key(lab), []).append(i)
        for idx in groups.values():
            vals = [values[i] for i in idx]
            rng.shuffle(vals)
            for i, v in zip(idx, vals):
                out[i] = v
        return out

    side1 = permute_within(side0, lambda lab: lab[0])
    side3 = permute_within(side2, lambda lab: lab[1])
    return "ties", labels, [side0, side1, side2, side3]


def parse_columns(columns):
    """One string per item, one character per side."""
    return parse_rows(["".join(col[s] for col in columns) for s in range(len(columns[0]))])


def panel_constant_sides():
    """All correct, all wrong, mixed, and all correct where known (kappa with side 0: nan)."""
    labels = [("b%d" % (i % 3), "en" if i % 2 else "de") for i in range(12)]
    rows = ["111111111111", "000000000000", "1001.110.101", "11.111111.11"]
    return "constant_sides", labels, parse_rows(rows)


def panel_side_never_known():
    labels = [("qa", "en")] * 5 + [("math", "en")] * 3 + [("qa", "ja")] * 2
    rows = ["1101011.01", "0111.10100", ".........."]
    return "side_never_known", labels, parse_rows(rows)


def panel_identical_and_opposite():
    labels = [("bench", "en")] * 8 + [("bench", "es")] * 8
    rows = [
        "1101.0111001.101",
        "1101.0111001.101",  # identical to side 0: kappa 1
        "1010011001011001",  # 8 correct, 8 wrong
        "0101100110100110",  # complement of side 2: kappa -1
    ]
    return "identical_and_opposite", labels, parse_rows(rows)


def panel_matched_empty():
    labels = [("x", "en"), ("x", "de"), ("y", "en"), ("y", "de"), ("x", "en"),
              ("y", "en"), ("x", "de"), ("y", "de"), ("x", "en"), ("y", "de")]
    columns = ["10.", ".11", "0.0", "11.", "..1", "10.", ".11", "1.0", ".01", "0.1"]
    return "matched_empty", labels, parse_columns(columns)


def panel_matched_all_constant():
    """Items known on every side are all-correct or all-wrong rows: Cochran's Q is 0/0."""
    labels = [("m", "en") if i % 3 else ("n", "fr") for i in range(15)]
    columns = ["1111", "0000", "1.01", "0000", "1111", ".110", "10.1", "1111", "01.0",
               "0000", "1..0", "1111", "0.1.", "0000", "11.0"]
    return "matched_all_constant", labels, parse_columns(columns)


def panel_two_sides():
    """S = 2: Cochran's Q must equal the uncorrected McNemar chi-square."""
    rng = random.Random(202)
    labels = [(rng.choice(["p", "q"]), rng.choice(["en", "it"])) for _ in range(40)]
    a = [None if rng.random() < 0.1 else int(rng.random() < 0.7) for _ in range(40)]
    b = [None if rng.random() < 0.1 else int(rng.random() < 0.45) for _ in range(40)]
    return "two_sides", labels, [a, b]


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def logit(p):
    return math.log(p / (1.0 - p))


def panel_irt(name, seed, sides, items, benches, langs, special):
    """Latent-difficulty panel: P(correct) = sigmoid(1.7 (theta_s - b_i)), ~10% unknown.

    Targets for the side abilities are spread 0.3 .. 0.9. `special` items at the end are
    constructed: negatively discriminating (weak sides right, strong sides wrong),
    consensus-wrong, and a few at the known-count thresholds (1, 2, 3, 4 known).
    """
    rng = random.Random(seed)
    targets = [0.3 + 0.6 * s / (sides - 1) for s in range(sides)]
    theta = [1.15 * logit(t) for t in targets]
    order = list(range(sides))
    rng.shuffle(order)  # side index is not ability rank
    theta = [theta[order[s]] for s in range(sides)]
    rank = sorted(range(sides), key=lambda s: theta[s])  # weakest first
    weak, strong = set(rank[: sides // 2]), set(rank[sides // 2:])

    bench_weights = [rng.uniform(0.5, 2.0) for _ in benches]
    lang_weights = [rng.uniform(0.3, 2.0) for _ in langs]
    labels = [
        (rng.choices(benches, bench_weights)[0], rng.choices(langs, lang_weights)[0])
        for _ in range(items)
    ]
    cells = [[None] * items for _ in range(sides)]
    n_regular = items - special
    for i in range(n_regular):
        difficulty = rng.gauss(0.0, 1.2)
        for s in range(sides):
            if rng.random() < 0.1:
                continue
            cells[s][i] = int(rng.random() < sigmoid(1.7 * (theta[s] - difficulty)))

    kinds = (["negative"] * 6 + ["consensus_wrong"] * 5
             + ["known1", "known2_wrong", "known3_wrong", "known4_negative", "unknown_all"])
    kinds = (kinds * (special // len(kinds) + 1))[:special]
    for i, kind in zip(range(n_regular, items), kinds):
        if kind == "negative":
            for s in range(sides):
                if rng.random() < 0.05:
                    continue
                p = 0.9 if s in weak else 0.1
                cells[s][i] = int(rng.random() < p)
            # guarantee the shape: weakest known right, strongest known wrong
            cells[rank[0]][i] = 1
            cells[rank[-1]][i] = 0
        elif kind == "consensus_wrong":
            for s in range(sides):
                cells[s][i] = None if rng.random() < 0.1 else 0
            cells[rank[0]][i] = cells[rank[1]][i] = cells[rank[2]][i] = 0
        else:
            chosen = rng.sample(range(sides), {"known1": 1, "known2_wrong": 2, "known3_wrong": 3,
                                               "known4_negative": 4, "unknown_all": 0}[kind])
            chosen.sort(key=lambda s: theta[s])
            for j, s in enumerate(chosen):
                if kind == "known4_negative":
                    cells[s][i] = 1 if j < 2 else 0
                elif kind == "known1":
                    cells[s][i] = 1
                else:
                    cells[s][i] = 0
    # one side lacks a whole benchmark (its slice accuracy is undefined there)
    lacking = rank[sides // 2]
    for i, (b, _) in enumerate(labels):
        if b == benches[-1]:
            cells[lacking][i] = None
    return name, labels, cells


def panel_medium():
    return panel_irt("medium", 303, 8, 300, ["arc", "gsm8k", "hellaswag", "mmlu"],
                     ["de", "en", "fr", "ja", "sw"], 20)


def panel_large():
    return panel_irt("large", 404, 20, 2000,
                     ["MMLU-Pro", "arc_challenge", "gsm8k", "hellaswag", "truthfulqa", "winogrande"],
                     ["ar", "de", "en", "es", "fr", "hi", "ja", "pt-BR", "sw", "zh"], 60)


PANELS = [
    panel_tiny,
    panel_ties,
    panel_constant_sides,
    panel_side_never_known,
    panel_identical_and_opposite,
    panel_matched_empty,
    panel_matched_all_constant,
    panel_two_sides,
    panel_medium,
    panel_large,
]


# ---------------------------------------------------------------------------------------
# Library values.
# ---------------------------------------------------------------------------------------


def finite_or_none(x):
    x = float(x)
    return None if math.isnan(x) else x


def side_stats(values):
    known = sum(v is not None for v in values)
    correct = sum(v == 1 for v in values)
    return known, correct, (correct / known if known else None)


def compute(labels, cells):
    S, N = len(cells), len(labels)
    out = {}

    sides = []
    for s in range(S):
        known, correct, accuracy = side_stats(cells[s])
        if known:
            low, high = proportion_confint(correct, known, alpha=ALPHA, method="wilson")
            low, high = float(low), float(high)
        else:
            low = high = None
        sides.append({"known": known, "correct": correct, "accuracy": accuracy,
                      "ci_low": low, "ci_high": high})
    out["sides"] = sides
    overall = [s["accuracy"] for s in sides]

    matched = [i for i in range(N) if all(cells[s][i] is not None for s in range(S))]
    q = p = None
    if matched:
        x = numpy.array([[cells[s][i] for s in range(S)] for i in matched])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = cochrans_q(x)
        assert res.df == S - 1
        q, p = finite_or_none(res.statistic), finite_or_none(res.pvalue)
        if q is None:
            p = None
    out["matched"] = {"items": len(matched), "cochran_q": q, "df": S - 1, "p_value": p}

    pairs = []
    for a in range(S):
        for b in range(a + 1, S):
            idx = [i for i in range(N) if cells[a][i] is not None and cells[b][i] is not None]
            va = [cells[a][i] for i in idx]
            vb = [cells[b][i] for i in idx]
            n11 = sum(x == 1 and y == 1 for x, y in zip(va, vb))
            n00 = sum(x == 0 and y == 0 for x, y in zip(va, vb))
            n10 = sum(x == 1 and y == 0 for x, y in zip(va, vb))
            n01 = sum(x == 0 and y == 1 for x, y in zip(va, vb))
            if idx:
                delta = (n01 - n10) / len(idx)
                mp = float(mcnemar([[n11, n10], [n01, n00]], exact=True).pvalue)
                if mp == 0.0 and mcnemar_rational(n10, n01) > 0.0:
                    # scipy's binom.cdf (behind statsmodels' exact McNemar, and binomtest)
                    # returns 0 for some tails around 1e-270 .. 1e-308 that are normal f64s;
                    # the exact value is used there (see the module docstring).
                    mp = mcnemar_rational(n10, n01)
                    UNDERFLOW_REPLACED.append((n10, n01, mp))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    kappa = finite_or_none(cohen_kappa_score(va, vb))
            else:
                delta = mp = kappa = None
            pairs.append({"a": a, "b": b, "known_pairs": len(idx), "both_correct": n11,
                          "both_wrong": n00, "a_only_correct": n10, "b_only_correct": n01,
                          "delta": delta, "mcnemar_p": mp, "mcnemar_p_holm": None,
                          "kappa": kappa})
    ps = [pr["mcnemar_p"] for pr in pairs if pr["mcnemar_p"] is not None]
    if ps:
        adjusted = iter(float(v) for v in multipletests(ps, method="holm")[1])
        for pr in pairs:
            if pr["mcnemar_p"] is not None:
                pr["mcnemar_p_holm"] = next(adjusted)
    out["pairs"] = pairs

    for key, col in (("by_benchmark", 0), ("by_language", 1)):
        slices = []
        for value in sorted({lab[col] for lab in labels}):
            idx = [i for i in range(N) if labels[i][col] == value]
            ss = []
            for s in range(S):
                known, correct, accuracy = side_stats([cells[s][i] for i in idx])
                ss.append({"known": known, "correct": correct, "accuracy": accuracy})
            both = [s for s in range(S) if ss[s]["accuracy"] is not None and overall[s] is not None]
            tau = None
            if len(both) >= 2:
                tau = finite_or_none(scipy.stats.kendalltau(
                    [ss[s]["accuracy"] for s in both], [overall[s] for s in both]).statistic)
            slices.append({"value": value, "sides": ss, "kendall_tau": tau})
        out[key] = slices

    items = []
    for i in range(N):
        known_sides = [s for s in range(S) if cells[s][i] is not None]
        known = len(known_sides)
        correct = sum(cells[s][i] for s in known_sides)
        pb = None
        if known >= 2:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pb = finite_or_none(scipy.stats.pointbiserialr(
                    [cells[s][i] for s in known_sides], [overall[s] for s in known_sides]).statistic)
        items.append({"known": known, "correct": correct, "point_biserial": pb,
                      "consensus_wrong": known >= 3 and correct == 0,
                      "negative_discrimination": known >= 5 and pb is not None and pb < 0})
    out["items"] = items
    return out


# ---------------------------------------------------------------------------------------
# Independent re-derivations.
# ---------------------------------------------------------------------------------------


class Mismatch(Exception):
    pass


def agree(what, got, want, absolute=False):
    """got (library) vs want (independent); both None, or equal to TOL.

    Relative tolerance by default; absolute for values that can be ~0 (correlations)."""
    if got is None or want is None:
        if got is not None or want is not None:
            raise Mismatch(f"{what}: library {got!r}, independent {want!r}")
        return
    if absolute:
        ok = abs(got - want) <= TOL
    else:
        ok = math.isclose(got, want, rel_tol=TOL, abs_tol=0.0) or got == want
    if not ok:
        raise Mismatch(f"{what}: library {got!r}, independent {want!r}")


Z = statistics.NormalDist().inv_cdf(1 - ALPHA / 2)


def wilson_closed_form(x, n):
    p = x / n
    centre = p + Z * Z / (2 * n)
    spread = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    denom = 1 + Z * Z / n
    return max(0.0, (centre - spread) / denom), min(1.0, (centre + spread) / denom)


def mcnemar_rational(b, c):
    m = b + c
    if m == 0:
        return 1.0
    tail = Fraction(sum(math.comb(m, i) for i in range(min(b, c) + 1)), 2**m)
    return float(min(Fraction(1), 2 * tail))


def chi2_sf(x, df):
    """Closed-form chi-square survival function for integer df >= 1."""
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, df // 2):
            term *= (x / 2) / i
            total += term
        return math.exp(-x / 2) * total
    total = math.erfc(math.sqrt(x / 2))
    term = math.sqrt(2 * x / math.pi) * math.exp(-x / 2)
    for i in range(1, (df - 1) // 2 + 1):
        if i > 1:
            term *= x / (2 * i - 1)
        total += term
    return total


def cochran_textbook(rows):
    """Q = (k-1)(k sum C_j^2 - N^2) / (kN - sum R_i^2), N = grand total; None if 0/0."""
    k = len(rows[0])
    col = [sum(r[j] for r in rows) for j in range(k)]
    row = [sum(r) for r in rows]
    total = sum(row)
    denom = k * total - sum(r * r for r in row)
    if denom == 0:
        return None
    return float(Fraction((k - 1) * (k * sum(c * c for c in col) - total * total), denom))


def holm_stepdown(ps):
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def kappa_rational(va, vb):
    n = len(va)
    po = Fraction(sum(x == y for x, y in zip(va, vb)), n)
    a1, b1 = Fraction(sum(va), n), Fraction(sum(vb), n)
    pe = a1 * b1 + (1 - a1) * (1 - b1)
    if pe == 1:
        return None
    return float((po - pe) / (1 - pe))


def tau_b_counting(x, y):
    n = len(x)
    sign = lambda v: (v > 0) - (v < 0)
    s = sum(sign(x[i] - x[j]) * sign(y[i] - y[j]) for i in range(n) for j in range(i + 1, n))
    n0 = n * (n - 1) // 2
    ties = lambda v: sum(c * (c - 1) // 2 for c in (v.count(u) for u in set(v)))
    denom = (n0 - ties(x)) * (n0 - ties(y))
    if denom == 0:
        return None
    return s / math.sqrt(denom)


def point_biserial_formula(x, y):
    ones = [v for u, v in zip(x, y) if u == 1]
    zeros = [v for u, v in zip(x, y) if u == 0]
    sn = statistics.pstdev(y)
    if not ones or not zeros or sn == 0:
        return None
    p, q = len(ones) / len(y), len(zeros) / len(y)
    return (statistics.fmean(ones) - statistics.fmean(zeros)) / sn * math.sqrt(p * q)


def cross_check(name, labels, cells, exp):
    S, N = len(cells), len(labels)
    checked = {"wilson": 0, "mcnemar": 0, "cochran": 0, "holm": 0, "kappa": 0, "tau": 0,
               "point_biserial": 0}

    for s, side in enumerate(exp["sides"]):
        if side["known"]:
            low, high = wilson_closed_form(side["correct"], side["known"])
            agree(f"{name} side {s} ci_low", side["ci_low"], low, absolute=True)
            agree(f"{name} side {s} ci_high", side["ci_high"], high, absolute=True)
            checked["wilson"] += 1

    m = exp["matched"]
    matched = [i for i in range(N) if all(cells[s][i] is not None for s in range(S))]
    assert m["items"] == len(matched)
    if matched:
        rows = [[cells[s][i] for s in range(S)] for i in matched]
        q = cochran_textbook(rows)
        agree(f"{name} cochran_q", m["cochran_q"], q)
        if q is not None:
            agree(f"{name} cochran p", m["p_value"], chi2_sf(q, S - 1))
            if S == 2:
                b = sum(r == [1, 0] for r in rows)
                c = sum(r == [0, 1] for r in rows)
                agree(f"{name} cochran = mcnemar chi2", m["cochran_q"], (b - c) ** 2 / (b + c))
            checked["cochran"] += 1
    else:
        assert m["cochran_q"] is None and m["p_value"] is None

    for pr in exp["pairs"]:
        a, b = pr["a"], pr["b"]
        what = f"{name} pair {a},{b}"
        assert (pr["both_correct"] + pr["both_wrong"] + pr["a_only_correct"]
                + pr["b_only_correct"]) == pr["known_pairs"]
        if pr["known_pairs"] == 0:
            assert all(pr[k] is None for k in ("delta", "mcnemar_p", "mcnemar_p_holm", "kappa"))
            continue
        n10, n01 = pr["a_only_correct"], pr["b_only_correct"]
        agree(what + " mcnemar exact", pr["mcnemar_p"], mcnemar_rational(n10, n01))
        if n10 + n01:
            binomtest_p = float(scipy.stats.binomtest(n10, n10 + n01, 0.5).pvalue)
            if binomtest_p == 0.0:  # same scipy binom.cdf underflow as statsmodels
                assert (n10, n01, pr["mcnemar_p"]) in UNDERFLOW_REPLACED
            else:
                agree(what + " mcnemar binomtest", pr["mcnemar_p"], binomtest_p)
        idx = [i for i in range(N) if cells[a][i] is not None and cells[b][i] is not None]
        va, vb = [cells[a][i] for i in idx], [cells[b][i] for i in idx]
        acc_a, acc_b = sum(va) / len(va), sum(vb) / len(vb)
        agree(what + " delta", pr["delta"], acc_b - acc_a, absolute=True)
        agree(what + " kappa", pr["kappa"], kappa_rational(va, vb), absolute=True)
        checked["mcnemar"] += 1
        checked["kappa"] += pr["kappa"] is not None
    ps = [pr["mcnemar_p"] for pr in exp["pairs"] if pr["mcnemar_p"] is not None]
    holm = iter(holm_stepdown(ps))
    for pr in exp["pairs"]:
        if pr["mcnemar_p"] is not None:
            agree(f"{name} holm {pr['a']},{pr['b']}", pr["mcnemar_p_holm"], next(holm))
            checked["holm"] += 1

    overall = [side["accuracy"] for side in exp["sides"]]
    for key in ("by_benchmark", "by_language"):
        for sl in exp[key]:
            both = [s for s in range(S)
                    if sl["sides"][s]["accuracy"] is not None and overall[s] is not None]
            want = None
            if len(both) >= 2:
                want = tau_b_counting([sl["sides"][s]["accuracy"] for s in both],
                                      [overall[s] for s in both])
                checked["tau"] += want is not None
            agree(f"{name} {key} {sl['value']} tau", sl["kendall_tau"], want, absolute=True)

    for i, item in enumerate(exp["items"]):
        known_sides = [s for s in range(S) if cells[s][i] is not None]
        want = None
        if len(known_sides) >= 2:
            want = point_biserial_formula([cells[s][i] for s in known_sides],
                                          [overall[s] for s in known_sides])
            checked["point_biserial"] += want is not None
        agree(f"{name} item {i} point_biserial", item["point_biserial"], want, absolute=True)
    return checked


def check_intent(name, cells, exp):
    """Each panel exists to exercise something; make sure it still does."""
    S, N = len(cells), len(cells[0])
    pair = {(pr["a"], pr["b"]): pr for pr in exp["pairs"]}
    sides, items = exp["sides"], exp["items"]
    unknown = sum(v is None for row in cells for v in row)
    if name == "tiny":
        assert (S, N) == (2, 5) and unknown > 0
    elif name == "ties":
        assert sides[0]["accuracy"] == sides[1]["accuracy"]
        assert sides[2]["accuracy"] == sides[3]["accuracy"]
        assert len(exp["by_benchmark"]) == 2 and len(exp["by_language"]) == 3
    elif name == "constant_sides":
        assert sides[0]["accuracy"] == 1.0 and sides[1]["accuracy"] == 0.0
        assert pair[(0, 1)]["kappa"] == 0.0 and pair[(0, 3)]["kappa"] is None
    elif name == "side_never_known":
        assert sides[2]["known"] == 0 and sides[2]["ci_low"] is None
        assert exp["matched"]["items"] == 0 and pair[(0, 2)]["known_pairs"] == 0
    elif name == "identical_and_opposite":
        assert pair[(0, 1)]["kappa"] == 1.0 and pair[(2, 3)]["kappa"] == -1.0
    elif name == "matched_empty":
        assert exp["matched"]["items"] == 0 and exp["matched"]["cochran_q"] is None
        assert all(pr["known_pairs"] > 0 for pr in exp["pairs"])
    elif name == "matched_all_constant":
        assert exp["matched"]["items"] > 0 and exp["matched"]["cochran_q"] is None
    elif name == "two_sides":
        assert S == 2 and exp["matched"]["cochran_q"] is not None
    elif name in ("medium", "large"):
        assert 0.08 < unknown / (S * N) < 0.15
        pbs = [it["point_biserial"] for it in items if it["point_biserial"] is not None]
        assert sum(pb > 0 for pb in pbs) > 0.75 * len(pbs)
        assert sum(it["negative_discrimination"] for it in items) >= 6
        assert sum(it["consensus_wrong"] for it in items) >= 5
        assert any(it["known"] == 4 and it["point_biserial"] < 0
                   and not it["negative_discrimination"] for it in items)
        assert any(it["known"] == 2 and it["correct"] == 0 and not it["consensus_wrong"]
                   for it in items)
        assert any(side["accuracy"] is None for sl in exp["by_benchmark"] for side in sl["sides"])
    else:
        raise AssertionError(f"no intent check for panel {name}")


def main():
    versions = {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "statsmodels": statsmodels.__version__,
        "sklearn": sklearn.__version__,
    }
    panels = []
    for make in PANELS:
        name, labels, cells = make()
        assert len(labels) > 0 and all(len(row) == len(labels) for row in cells)
        expected = compute(labels, cells)
        try:
            checked = cross_check(name, labels, cells, expected)
        except Mismatch as err:
            sys.exit(f"cross-check failed: {err}")
        check_intent(name, cells, expected)
        print(f"{name}: S={len(cells)} N={len(labels)} matched={expected['matched']['items']} "
              f"checked {checked}", file=sys.stderr)
        panels.append({
            "name": name,
            "labels": [[b, l] for b, l in labels],
            "cells": ["".join("." if v is None else str(v) for v in row) for row in cells],
            "expected": expected,
        })
    document = {"generated_by": "scripts/panel_reference.py", "versions": versions,
                "panels": panels}
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    for n10, n01, p in UNDERFLOW_REPLACED:
        print(f"mcnemar({n10}, {n01}): statsmodels 0.0, exact {p!r} used", file=sys.stderr)
    print(f"wrote {os.path.relpath(OUTPUT, ROOT)} ({len(text.encode())} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
