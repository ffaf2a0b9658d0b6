"""The exact Wilcoxon signed-rank test of paired differences, with zeros and ties handled in the open.

Why not ``scipy.stats.wilcoxon(method="exact")`` alone: for a handful of data
sets, zero differences (two methods with the very same error) and tied
absolute differences are common, and scipy's exact method assumes neither;
depending on the version it then switches to the normal approximation. Here
the p-value is always the exact conditional one: under the null hypothesis
each non-zero difference is equally likely positive or negative, so the
2^m sign patterns of the m non-zero differences are equally likely, and the
distribution of W+ (the sum of the ranks of the positive differences, with
average ranks for tied |d|) is counted over all of them. Where there are no
zeros and no ties this is the classical exact test, equal to scipy's.

Conventions:

- zeros: ``"wilcox"`` (default) drops zero differences before ranking;
  ``"pratt"`` ranks them with the others, then drops their ranks;
- ties: average ranks, and the exact distribution of W+ *with those ranks*
  (counted on the doubled ranks, which are integers);
- a difference whose magnitude is at most ``tol`` counts as zero, and
  magnitudes closer than ``tol`` count as tied (errors that are equal in
  exact arithmetic may differ in the last bits once averaged over folds).

The distribution is a dynamic programme over the doubled ranks (O(m^3) small
integer operations, m the number of non-zero differences), kept in float64
probabilities that are multiples of 2^-m: exact for m <= 53, within float64
rounding beyond. No pass over any data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Zero-difference conventions (those of ``scipy.stats.wilcoxon`` that keep the test exact).
ZERO_METHODS = ("wilcox", "pratt")

#: Differences within this of zero count as zero, and magnitudes within it of each other as tied.
DEFAULT_TOL = 1e-12


@dataclass
class SignedRankTest:
    """The exact Wilcoxon signed-rank test of one set of paired differences d.

    Attributes
    ----------
    n_pairs : int
        Differences given (NaN ones excluded).
    n_zero : int
        Differences counted as zero (|d| <= tol).
    n_ties : int
        Non-zero differences whose |d| ties with another's.
    w_plus, w_minus : float
        Sums of the ranks of the positive and of the negative differences.
    p_less : float
        Exact P(W+ <= observed): small when the differences tend to be negative.
    p_greater : float
        Exact P(W+ >= observed): small when they tend to be positive.
    p_two_sided : float
        min(1, 2 min(p_less, p_greater)), scipy's convention.
    rank_biserial : float
        Matched-pairs rank-biserial correlation (W+ - W-) / (W+ + W-), in [-1, 1]; NaN without non-zero differences.
    zero_method : str
    method : str
        How the p-values were computed, in words.
    """

    n_pairs: int
    n_zero: int
    n_ties: int
    w_plus: float
    w_minus: float
    p_less: float
    p_greater: float
    p_two_sided: float
    rank_biserial: float
    zero_method: str
    method: str


def signed_ranks(d: np.ndarray, zero_method: str = "wilcox", tol: float = DEFAULT_TOL) -> tuple[np.ndarray, np.ndarray, int]:
    """Doubled ranks (integers) of the non-zero differences, their signs, and the number of zeros.

    Parameters
    ----------
    d : ndarray of float, shape (n,)
        Paired differences, no NaN.
    zero_method : {"wilcox", "pratt"}
    tol : float
        |d| <= tol is zero; magnitudes within tol of each other tie.

    Returns
    -------
    ranks2 : ndarray of int64, shape (m,)
        Twice the average rank of each non-zero |d| (among all |d| for "pratt").
    positive : ndarray of bool, shape (m,)
    n_zero : int
    """
    d = np.asarray(d, dtype=np.float64)
    zero = np.abs(d) <= tol
    mags = np.abs(d) if zero_method == "pratt" else np.abs(d[~zero])
    if zero_method == "pratt":
        mags = np.where(zero, 0.0, mags)
    order = np.argsort(mags, kind="stable")
    sorted_mags = mags[order]
    # runs of magnitudes within tol of their neighbour share the average rank
    breaks = np.flatnonzero(np.diff(sorted_mags) > tol) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(sorted_mags)]])
    ranks2 = np.empty(len(mags), dtype=np.int64)
    for s, e in zip(starts, ends):
        ranks2[order[s:e]] = (s + 1) + e  # twice the average of ranks s+1..e
    if zero_method == "pratt":
        ranks2, signs = ranks2[~zero], d[~zero] > 0
    else:
        signs = d[~zero] > 0
    return ranks2, signs, int(zero.sum())


def null_distribution(ranks2: np.ndarray) -> np.ndarray:
    """P(2 W+ = s) for s = 0 .. sum(ranks2) when every sign pattern of the m differences is equally likely.

    Parameters
    ----------
    ranks2 : ndarray of int, shape (m,)
        Doubled ranks.

    Returns
    -------
    ndarray of float64, shape (sum(ranks2) + 1,)
        Probabilities, multiples of 2^-m (exact in float64 for m <= 53).
    """
    total = int(np.sum(ranks2))
    prob = np.zeros(total + 1)
    prob[0] = 1.0
    top = 0
    for r in (int(v) for v in ranks2):
        shifted = prob[: top + 1].copy()
        prob[: top + 1] *= 0.5
        prob[r: r + top + 1] += 0.5 * shifted
        top += r
    return prob


def signed_rank_test(d, zero_method: str = "wilcox", tol: float = DEFAULT_TOL) -> SignedRankTest:
    """Exact Wilcoxon signed-rank test of the differences ``d`` (one- and two-sided p-values).

    Parameters
    ----------
    d : array-like of float, shape (n,)
        Paired differences x - y; NaN entries are left out.
    zero_method : {"wilcox", "pratt"}, default "wilcox"
        Zero differences dropped before ranking, or ranked then dropped.
    tol : float, default 1e-12
        |d| <= tol counts as zero; magnitudes within tol of each other tie.

    Returns
    -------
    SignedRankTest
        With no non-zero difference every p-value is 1 (NaN with no difference at all) and the rank-biserial
        correlation NaN.

    Notes
    -----
    The p-values are exact conditional ones (see the module docstring): with
    no zeros and no ties, ``p_less`` equals ``scipy.stats.wilcoxon(d,
    method="exact", alternative="less").pvalue``. When all n differences are
    negative, ``p_less`` = 2^-n (1/128 for 7 data sets).
    """
    if zero_method not in ZERO_METHODS:
        raise ValueError(f"zero_method must be one of {ZERO_METHODS}, not {zero_method!r}")
    d = np.asarray(d, dtype=np.float64).ravel()
    d = d[~np.isnan(d)]
    ranks2, positive, n_zero = signed_ranks(d, zero_method, tol)
    m = len(ranks2)
    n_ties = int(sum(c for c in np.unique(ranks2, return_counts=True)[1] if c > 1)) if m else 0
    w2_plus = int(ranks2[positive].sum())
    w2_minus = int(ranks2[~positive].sum())
    how = (f"exact: all 2^{m} sign patterns of the {m} non-zero differences counted"
           f"{' (float64, within rounding beyond 53)' if m > 53 else ''}; zeros: {zero_method} "
           f"({'dropped before ranking' if zero_method == 'wilcox' else 'ranked, then their ranks dropped'}; |d| <= {tol:g}); "
           "ties: average ranks, distribution conditional on them")
    if m == 0:  # no pair: nothing to test (NaN); only zeros: W+ = 0 with probability 1, so every p-value is 1
        p = float("nan") if len(d) == 0 else 1.0
        return SignedRankTest(len(d), n_zero, 0, 0.0, 0.0, p, p, p, float("nan"), zero_method, how)
    prob = null_distribution(ranks2)
    p_less = float(min(1.0, prob[: w2_plus + 1].sum()))
    p_greater = float(min(1.0, prob[w2_plus:].sum()))
    return SignedRankTest(
        n_pairs=len(d), n_zero=n_zero, n_ties=n_ties, w_plus=w2_plus / 2, w_minus=w2_minus / 2,
        p_less=p_less, p_greater=p_greater, p_two_sided=float(min(1.0, 2 * min(p_less, p_greater))),
        rank_biserial=float((w2_plus - w2_minus) / (w2_plus + w2_minus)), zero_method=zero_method, method=how,
    )


__all__ = ["SignedRankTest", "ZERO_METHODS", "null_distribution", "signed_rank_test", "signed_ranks"]
