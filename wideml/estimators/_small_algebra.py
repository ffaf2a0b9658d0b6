"""n x n and d x d algebra helpers of the Gram-based projections (no pass over X)."""

from __future__ import annotations

import contextlib

import numpy as np
from threadpoolctl import threadpool_limits

from wideml.exceptions import WidemlError

#: Below this many samples the n x n algebra runs on one BLAS thread: OpenBLAS threads on small
#: matrices gain little and, on a busy machine, spin against other work (measured up to 30x slower).
SMALL_ALGEBRA_N = 1500


def small_algebra_threads(n: int):
    """Context limiting BLAS to one thread for n x n algebra with n < SMALL_ALGEBRA_N."""
    return threadpool_limits(1, user_api="blas") if n < SMALL_ALGEBRA_N else contextlib.nullcontext()


def inverse_cholesky(AtA: np.ndarray) -> np.ndarray:
    """R^-1 for AtA = R^T R (d x d): orthonormalises directions A as A R^-1."""
    import scipy.linalg

    try:
        R = scipy.linalg.cholesky((AtA + AtA.T) / 2, lower=False)
    except np.linalg.LinAlgError:
        raise WidemlError("the directions are linearly dependent, so they cannot be orthonormalised; use orthogonalize=False.") from None
    return scipy.linalg.solve_triangular(R, np.eye(R.shape[0]), lower=False)


__all__ = ["SMALL_ALGEBRA_N", "inverse_cholesky", "small_algebra_threads"]
