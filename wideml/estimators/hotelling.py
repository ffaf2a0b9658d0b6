"""Hotelling's two-sample T² on small projected data (n x d, in memory) and its exact F conversion.

For two groups of sizes n0, n1 with means z0, z1 and pooled covariance
S = ((n0 - 1) S0 + (n1 - 1) S1) / (n0 + n1 - 2) of d-dimensional samples,

    T² = n0 n1 / (n0 + n1) (z0 - z1)^T S^-1 (z0 - z1),
    F  = (n0 + n1 - d - 1) / (d (n0 + n1 - 2)) T²  ~  F(d, n0 + n1 - d - 1)

under the null of equal means when the samples are independent Gaussians
with a shared covariance (Hotelling 1931). Used by
:func:`wideml.estimators.two_sample.two_sample_test`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.stats

from wideml.exceptions import WidemlError


def hotelling_t2(Z: np.ndarray, codes: np.ndarray, eps: float = float(np.finfo(np.float64).eps)) -> float:
    """Hotelling's two-sample T² of the rows of ``Z`` split by ``codes``.

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        Projected samples.
    codes : ndarray of int, shape (m,)
        0 or 1 per row (both present).
    eps : float, default float64's
        Machine epsilon of the precision ``Z`` was computed in: within-group
        scatter at most ``10 * m * eps`` times the largest eigenvalue of the
        total scatter is rounding error, not spread (the rule of
        :func:`wideml.algebra.eigen.numerical_rank_tol`).

    Returns
    -------
    float
        T² (non-negative).

    Raises
    ------
    WidemlError
        If the groups have too few samples for a d x d pooled covariance
        (m - 2 < d); if all samples project to one point (no variance); if
        the projected samples do not vary within the groups beyond rounding
        (a pooled covariance of zero: T² would be a ratio to rounding error);
        or if the projected coordinates are linearly dependent within the
        groups (the sentence names the dimension they span).
    """
    Z = np.asarray(Z, dtype=np.float64)
    codes = np.asarray(codes)
    m, d = Z.shape
    first, second = Z[codes == 0], Z[codes == 1]
    n0, n1 = len(first), len(second)
    if n0 < 1 or n1 < 1 or n0 + n1 - 2 < d:
        raise WidemlError(f"Hotelling's T² in {d} dimensions needs at least {d + 2} tested samples in two groups, got {n0} and {n1}; "
                          "lower n_components or test more samples.")
    diff = first.mean(axis=0) - second.mean(axis=0)
    resid = np.vstack([first - first.mean(axis=0), second - second.mean(axis=0)])
    _check_spread(Z, resid, d, eps)
    S = resid.T @ resid / (n0 + n1 - 2)
    try:
        factor = scipy.linalg.cho_factor(S, lower=True)
    except np.linalg.LinAlgError:
        factor = None
    if factor is None or np.min(np.abs(np.diag(factor[0]))) <= 1e-10 * np.sqrt(max(np.max(np.diag(S)), 1e-300)):
        raise WidemlError(f"the {d} projected coordinates are linearly dependent within the groups, so Hotelling's T² is not defined; "
                          "lower n_components.")
    return float(n0 * n1 / (n0 + n1) * diff @ scipy.linalg.cho_solve(factor, diff))


def _check_spread(Z: np.ndarray, resid: np.ndarray, d: int, eps: float) -> None:
    """Refuse projected samples with no spread within the groups (beyond rounding), naming why, in one sentence."""
    m = len(Z)
    centred = Z - Z.mean(axis=0)
    top = float(np.linalg.eigvalsh(centred.T @ centred)[-1])
    if not top > 0:
        raise WidemlError(f"the {m} tested samples all project to the same point (their features do not vary, at least not "
                          "along the projection), so Hotelling's T² is not defined; give data whose samples differ.")
    rank = int(np.sum(np.linalg.eigvalsh(resid.T @ resid) > 10 * m * eps * top))
    if rank == 0:
        raise WidemlError("the projected samples do not vary within the groups beyond rounding (every sample of a group "
                          "projects to one point, e.g. repeated samples), so their pooled covariance is zero and Hotelling's "
                          "T² is not defined; give samples that vary within the groups.")
    if rank < d:
        raise WidemlError(f"the {d} projected coordinates are linearly dependent within the groups (they span only {rank} "
                          f"dimensions there), so Hotelling's T² is not defined; lower n_components to {rank}.")


def hotelling_f(t2: float, d: int, n0: int, n1: int) -> tuple[float, int, int, float]:
    """The exact F conversion of a two-sample T².

    Parameters
    ----------
    t2 : float
    d : int
        Dimension of the tested samples.
    n0, n1 : int
        Group sizes (n0 + n1 - d - 1 >= 1).

    Returns
    -------
    (F, df1, df2, p_value)
        F = (n0 + n1 - d - 1) / (d (n0 + n1 - 2)) T², df1 = d,
        df2 = n0 + n1 - d - 1, p_value = P(F(df1, df2) >= F).
    """
    m = n0 + n1
    df2 = m - d - 1
    if df2 < 1:
        raise WidemlError(f"Hotelling's F test in {d} dimensions needs more than {d + 1} tested samples, got {m}; "
                          "lower n_components or test more samples.")
    F = float(df2 / (d * (m - 2)) * t2)
    return F, int(d), int(df2), float(scipy.stats.f.sf(F, d, df2))
