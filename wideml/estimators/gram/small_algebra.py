"""d x d algebra helpers of the Gram-based projections (no pass over X)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from wideml.exceptions import WidemlError


def inverse_cholesky(AtA: np.ndarray) -> np.ndarray:
    """R^-1 for AtA = R^T R (d x d): orthonormalises directions A as A R^-1."""

    try:
        R = scipy.linalg.cholesky((AtA + AtA.T) / 2, lower=False)
    except np.linalg.LinAlgError:
        raise WidemlError("the directions are linearly dependent, so they cannot be orthonormalised; use orthogonalize=False.") from None
    return scipy.linalg.solve_triangular(R, np.eye(R.shape[0]), lower=False)


__all__ = ["inverse_cholesky"]
