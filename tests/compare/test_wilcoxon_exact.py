"""The exact Wilcoxon signed-rank test of wideml.compare: scipy where scipy is exact, brute force where there are ties and zeros."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as st

from wideml.estimators.wilcoxon import null_distribution, signed_rank_test


def brute_force(d, zero_method="wilcox", tol=1e-12):
    """(p_less, p_greater, p_two_sided) by listing every sign pattern, ranks from scipy.stats.rankdata (independent code)."""
    d = np.asarray(d, dtype=float)
    zero = np.abs(d) <= tol
    if zero_method == "wilcox":
        mags, signs = np.abs(d[~zero]), np.sign(d[~zero])
        ranks = st.rankdata(mags)
    else:  # pratt: rank all |d| (zeros included), then keep the non-zero ones
        ranks = st.rankdata(np.where(zero, 0.0, np.abs(d)))[~zero]
        signs = np.sign(d[~zero])
    observed = ranks[signs > 0].sum()
    totals = [sum(r for r, s in zip(ranks, pattern) if s) for pattern in itertools.product((0, 1), repeat=len(ranks))]
    totals = np.asarray(totals)
    less, greater = np.mean(totals <= observed + 1e-9), np.mean(totals >= observed - 1e-9)
    return less, greater, min(1.0, 2 * min(less, greater))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 10, 15, 20])
def test_equals_scipy_exact_without_zeros_or_ties(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        d = rng.standard_normal(n)
        t = signed_rank_test(d)
        assert t.n_zero == 0 and t.n_ties == 0
        assert t.p_less == pytest.approx(st.wilcoxon(d, method="exact", alternative="less").pvalue, abs=1e-15)
        assert t.p_greater == pytest.approx(st.wilcoxon(d, method="exact", alternative="greater").pvalue, abs=1e-15)
        assert t.p_two_sided == pytest.approx(st.wilcoxon(d, method="exact").pvalue, abs=1e-15)
        assert t.w_plus == pytest.approx(st.wilcoxon(d, method="exact", alternative="greater").statistic)


def test_the_papers_seven_problems_all_favouring_lol_give_one_over_128():
    d = np.array([0.01, 0.03, 0.002, 0.12, 0.05, 0.008, 0.2])  # error(other) - error(LOL): all 7 favour LOL
    t = signed_rank_test(d)
    assert t.p_greater == 1 / 128 == pytest.approx(0.0078, abs=1e-4)  # one-sided, alternative: LOL better
    assert t.p_two_sided == 1 / 64
    assert t.p_less == 1.0 and t.rank_biserial == 1.0


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt"])
@pytest.mark.parametrize("d", [
    [0.1, 0.1, -0.1, 0.2, 0.0, 0.3, 0.3, -0.05],           # ties in |d| across signs, one zero
    [0.0, 0.0, 0.02, 0.02, 0.02, -0.04, 0.06],             # two zeros, a triple tie
    [0.05, -0.05, 0.05, -0.05, 0.1, 0.0, 0.0, 0.0, 0.2],   # half the magnitudes tied
    [1 / 3 - 0.1 * (10 / 3), 0.25, -0.25, 0.5],           # a zero only up to rounding
])
def test_equals_brute_force_enumeration_with_zeros_and_ties(d, zero_method):
    t = signed_rank_test(d, zero_method=zero_method)
    less, greater, two = brute_force(d, zero_method)
    assert (t.p_less, t.p_greater, t.p_two_sided) == pytest.approx((less, greater, two), abs=1e-15)
    assert t.n_zero >= 1


def test_random_ties_against_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(30):
        d = rng.integers(-3, 4, size=rng.integers(1, 12)) / 30  # errors on a grid of 1/30: many zeros and ties
        t = signed_rank_test(d)
        less, greater, two = brute_force(d)
        assert (t.p_less, t.p_greater, t.p_two_sided) == pytest.approx((less, greater, two), abs=1e-15)


def test_differences_equal_up_to_rounding_tie_and_vanish():
    a = np.array([0.1 + 0.2, 0.3, -(0.7 - 0.4), 1e-17])  # 0.30000000000000004, 0.3, -0.30000000000000004, ~0
    t = signed_rank_test(a)
    assert t.n_zero == 1 and t.n_ties == 3  # three tied magnitudes, one zero
    assert t.w_plus == 4.0 and t.w_minus == 2.0  # ranks 2, 2 positive, 2 negative


def test_no_pairs_and_only_zeros():
    empty = signed_rank_test([])
    assert np.isnan(empty.p_less) and np.isnan(empty.p_two_sided)
    zeros = signed_rank_test([0.0, 0.0])
    assert zeros.p_less == zeros.p_greater == zeros.p_two_sided == 1.0 and np.isnan(zeros.rank_biserial)
    assert "zeros: wilcox" in zeros.method and "exact" in zeros.method


def test_null_distribution_sums_to_one_and_is_symmetric():
    ranks2 = np.array([2, 3, 3, 8, 10, 12, 14])  # doubled average ranks with a tie
    p = null_distribution(ranks2)
    assert p.sum() == pytest.approx(1.0, abs=1e-15)
    assert np.allclose(p, p[::-1])
    big = signed_rank_test(np.linspace(-1, 3, 80))  # 80 pairs: float64 dynamic programme, within rounding
    assert big.p_less == pytest.approx(st.wilcoxon(np.linspace(-1, 3, 80), alternative="less", method="exact").pvalue, rel=1e-9)


def test_rank_biserial_is_the_matched_pairs_formula():
    d = np.array([0.3, -0.1, 0.2, 0.4, -0.5])
    r = st.rankdata(np.abs(d))
    expected = (r[d > 0].sum() - r[d < 0].sum()) / r.sum()
    assert signed_rank_test(d).rank_biserial == pytest.approx(expected)
