"""Convergence of the randomized solver's subspace iteration, measured between iterates.

Each pass over X of the randomized solver applies M M^T to an orthonormal
basis Q (n x l) of the current sketch. The l x l matrix T = Q^T M M^T Q of that
pass gives the Ritz pairs of span(Q); the top-k Ritz vectors U = Q W are the
subspace the fit would return if it stopped there. :class:`SubspaceIteration`
compares successive U's:

- ``angle``: the largest principal angle between the top-k Ritz subspaces of
  two successive iterates (radians);
- ``estimate``: the distance still to go, from the observed contraction rho
  of the iteration (the angles shrink geometrically once the iteration has
  settled, so the remaining distance is about angle * rho / (1 - rho)). rho is
  the larger of the ratio of the last two angles and the Ritz-value ratio
  lambda_l / lambda_k (the rate of subspace iteration is
  lambda_(l+1) / lambda_k).

The iteration has converged when both are at most ``tol``. On a flat spectrum
(rho near 1) the angle between iterates is small long before the subspace
has arrived, and the estimate is what keeps the stop honest: measured on
Gaussian data, the true distance to the exact subspace stayed below the
estimate at every step.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

#: Default tolerance of the randomized solver: largest principal angle, in radians.
DEFAULT_TOL = 1e-4


def ritz_subspace(Q: np.ndarray, T: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """All Ritz values of span(Q) (decreasing) and its top-k Ritz vectors (n x k), from T = Q^T M M^T Q."""
    vals, W = scipy.linalg.eigh((T + T.T) / 2, check_finite=False)
    vals, W = vals[::-1], W[:, ::-1]
    return vals, Q @ W[:, :k]


def largest_angle(A: np.ndarray, B: np.ndarray) -> float:
    """Largest principal angle (radians) between the column spaces of A and B (0 for empty ones)."""
    if A.shape[1] == 0 or B.shape[1] == 0:
        return 0.0
    return float(np.max(scipy.linalg.subspace_angles(A, B)))


class SubspaceIteration:
    """Tracks the top-``k`` Ritz subspace of successive iterates and says when it has converged.

    Parameters
    ----------
    k : int
        Dimension of the subspace that must converge (the eigen columns of the fit).
    tol : float
        Largest principal angle (radians) allowed between the returned subspace and
        the one the iteration converges to.

    Attributes
    ----------
    steps : int
        Iterates seen (calls of :meth:`update`).
    angle : float
        Largest principal angle between the last two iterates' subspaces (nan before two).
    estimate : float
        Estimated distance of the last iterate from the converged subspace (nan before two).
    """

    def __init__(self, k: int, tol: float = DEFAULT_TOL):
        self.k = int(k)
        self.tol = float(tol)
        self.steps = 0
        self.angle = math.nan
        self.estimate = math.nan
        self._previous: np.ndarray | None = None

    def update(self, Q: np.ndarray, T: np.ndarray) -> bool:
        """Take the next iterate (basis Q, n x l, and T = Q^T M M^T Q); return whether it has converged."""
        self.steps += 1
        if self.k == 0:  # nothing to converge: the fit has no eigen columns
            self.angle = self.estimate = 0.0
            return True
        vals, U = ritz_subspace(Q, T, self.k)
        previous, self._previous = self._previous, U
        if previous is None:
            return False
        last = self.angle
        self.angle = largest_angle(previous, U)
        if self.angle == 0.0:
            self.estimate = 0.0
            return True
        rho = 0.0
        if math.isfinite(last) and last > 0:
            rho = self.angle / last
        l = len(vals)
        if l > self.k:
            top = vals[self.k - 1]
            rho = max(rho, vals[l - 1] / top if top > 0 else math.inf)
        self.estimate = self.angle * rho / (1 - rho) if rho < 1 else math.inf
        return self.converged

    @property
    def converged(self) -> bool:
        """Both the last angle between iterates and the estimated distance still to go are within ``tol``."""
        return self.steps >= 2 and max(self.angle, self.estimate) <= self.tol if self.k else self.steps >= 1

    def summary(self) -> str:
        """One phrase: the last angle between iterates and the estimated distance still to go."""
        if self.k == 0:
            return "no eigen directions to converge"
        if self.steps < 2:
            return "convergence not measured (one iterate)"
        return (f"last change between iterates {self.angle:.1e} rad, estimated distance to the converged subspace "
                f"{self.estimate:.1e} rad (tol {self.tol:g})")
