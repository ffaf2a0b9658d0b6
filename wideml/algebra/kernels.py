"""Kernels as elementwise functions of inner products and squared distances.

Everything here works on n x n (training) or m x n (cross) matrices that one
pass over X already produced, so no kernel needs a pass of its own:

- ``inner``: raw inner products x . y (X X^T for training, X_new X^T across);
- ``sq_dist``: squared Euclidean distances ||x - y||^2, best computed from
  feature-mean-centred products (translation does not change distances, and
  centring avoids the cancellation in ||x||^2 + ||y||^2 - 2 x.y when features
  carry large offsets).

Kernels (D = n_features, the input dimension):

- ``linear``: k(x, y) = x . y;
- ``poly``: k(x, y) = (gamma x . y + coef0)^degree, gamma = 1/D by default;
- ``rbf``: the scaled RBF of Chatpatanasiri et al., k(x, y) = exp(-||x - y||^2 / (2 D sigma^2)),
  so sigma is a per-coordinate scale (sigma ~ 1 for standardised features);
- weighted sums of base kernels (:class:`CombinedKernel`), each base kernel
  divided by its training Frobenius norm when the weights came from alignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from wideml.exceptions import WidemlError

#: The 21 sigma values of the paper's base kernels (Sec. 4).
PAPER_SIGMAS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
    10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0,
)

KERNEL_KINDS = ("linear", "poly", "rbf")


def gram_sq_distances(G: np.ndarray) -> np.ndarray:
    """Squared distances ||x_i - x_j||^2 from a Gram matrix (n x n), clamped at 0.

    Parameters
    ----------
    G : ndarray of shape (n, n)
        Any Gram of the rows (raw or feature-mean centred; centred is more precise).

    Returns
    -------
    ndarray of shape (n, n), zero diagonal.
    """
    d = np.diag(G)
    D2 = d[:, None] + d[None, :] - 2.0 * G
    np.maximum(D2, 0.0, out=D2)
    np.fill_diagonal(D2, 0.0)
    return D2


def cross_sq_distances(C: np.ndarray, sq_rows: np.ndarray, sq_cols: np.ndarray) -> np.ndarray:
    """Squared distances from cross products C = A B^T (m x n) and the squared row norms of A and B."""
    D2 = sq_rows[:, None] + sq_cols[None, :] - 2.0 * C
    return np.maximum(D2, 0.0, out=D2)


def check_sigma(sigma: float) -> float:
    """Return sigma as a float, or raise if it is not a finite positive number."""
    try:
        value = float(sigma)
    except (TypeError, ValueError):
        raise WidemlError(f"sigma must be a positive number, got {sigma!r}; pass e.g. sigma=1.0.") from None
    if not np.isfinite(value) or value <= 0:
        raise WidemlError(f"sigma must be positive and finite, got {sigma!r}; pass a value > 0 such as 1.0 (the RBF width per feature).")
    return value


@dataclass(frozen=True)
class Kernel:
    """One kernel: ``linear``, ``poly`` or the scaled ``rbf``.

    Parameters
    ----------
    kind : {"linear", "poly", "rbf"}
    sigma : float
        RBF width per coordinate (> 0).
    degree : int
        Polynomial degree (>= 1).
    coef0 : float
        Polynomial offset.
    gamma : float or None
        Polynomial scale of x . y; None means 1 / n_features.
    """

    kind: str = "rbf"
    sigma: float = 1.0
    degree: int = 2
    coef0: float = 1.0
    gamma: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KERNEL_KINDS:
            raise WidemlError(f"kernel {self.kind!r} is not one of {', '.join(KERNEL_KINDS)}; pick one of them.")
        if self.kind == "rbf":
            check_sigma(self.sigma)
        if self.kind == "poly" and (int(self.degree) != self.degree or self.degree < 1):
            raise WidemlError(f"degree must be a positive integer, got {self.degree!r}; pass e.g. degree=2.")

    def needs(self) -> str:
        """``"inner"`` or ``"sq_dist"``: which product matrix the kernel is a function of."""
        return "sq_dist" if self.kind == "rbf" else "inner"

    def from_products(self, inner: np.ndarray | None, sq_dist: np.ndarray | None, n_features: int) -> np.ndarray:
        """Kernel values from raw inner products or squared distances (elementwise; no pass).

        Parameters
        ----------
        inner : ndarray of shape (m, n) or None
            Raw inner products (needed by linear and poly).
        sq_dist : ndarray of shape (m, n) or None
            Squared distances (needed by rbf).
        n_features : int
            D, the input dimension.

        Returns
        -------
        ndarray of shape (m, n)
        """
        if self.kind == "rbf":
            return np.exp(-sq_dist / (2.0 * n_features * float(self.sigma) ** 2))
        if self.kind == "linear":
            return np.array(inner, dtype=np.float64, copy=True)
        gamma = 1.0 / n_features if self.gamma is None else float(self.gamma)
        return (gamma * inner + float(self.coef0)) ** int(self.degree)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "sigma": float(self.sigma), "degree": int(self.degree), "coef0": float(self.coef0),
                "gamma": None if self.gamma is None else float(self.gamma)}


@dataclass(frozen=True)
class CombinedKernel:
    """k = sum_s weights[s] * k_s / scales[s]: a weighted sum of base kernels.

    ``scales`` are the training Frobenius norms for alignment (Eq. 13: test
    values use the *training* norms) and 1 for the unweighted sum.
    """

    bases: tuple[Kernel, ...]
    weights: tuple[float, ...]
    scales: tuple[float, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.scales:
            object.__setattr__(self, "scales", tuple(1.0 for _ in self.bases))
        if not (len(self.bases) == len(self.weights) == len(self.scales)) or not self.bases:
            raise WidemlError("a combined kernel needs as many weights and scales as base kernels (at least one); check the lists.")
        if any(w < 0 for w in self.weights):
            raise WidemlError("combined-kernel weights must be non-negative, or the sum may not be a kernel; clip them at 0.")

    def needs(self) -> str:
        kinds = {b.needs() for b in self.bases}
        return kinds.pop() if len(kinds) == 1 else "both"

    def from_products(self, inner, sq_dist, n_features: int) -> np.ndarray:
        out = None
        for base, w, s in zip(self.bases, self.weights, self.scales):
            if w == 0:
                continue
            term = base.from_products(inner, sq_dist, n_features) * (w / s)
            out = term if out is None else out + term
        if out is None:
            shape = (inner if inner is not None else sq_dist).shape
            return np.zeros(shape)
        return out

    def to_dict(self) -> dict:
        return {"kind": "combined", "bases": [b.to_dict() for b in self.bases], "weights": [float(w) for w in self.weights],
                "scales": [float(s) for s in self.scales]}


def kernel_from_dict(d: dict) -> Kernel | CombinedKernel:
    """Rebuild a kernel saved with ``to_dict``."""
    if d.get("kind") == "combined":
        return CombinedKernel(tuple(kernel_from_dict(b) for b in d["bases"]), tuple(d["weights"]), tuple(d["scales"]))
    return Kernel(**d)


def rbf_family(sigmas: Sequence[float] = PAPER_SIGMAS) -> list[Kernel]:
    """The scaled-RBF base kernels, one per sigma (each sigma checked > 0)."""
    if len(sigmas) == 0:
        raise WidemlError("the sigma grid is empty; pass at least one sigma (the paper's grid is PAPER_SIGMAS).")
    return [Kernel("rbf", sigma=check_sigma(s)) for s in sigmas]


def rbf_stack(sq_dist: np.ndarray, n_features: int, sigmas: Sequence[float] = PAPER_SIGMAS) -> np.ndarray:
    """All scaled-RBF kernel matrices of one distance matrix, shape (len(sigmas), m, n)."""
    return np.stack([k.from_products(None, sq_dist, n_features) for k in rbf_family(sigmas)])


__all__ = [
    "CombinedKernel",
    "KERNEL_KINDS",
    "Kernel",
    "PAPER_SIGMAS",
    "check_sigma",
    "cross_sq_distances",
    "gram_sq_distances",
    "kernel_from_dict",
    "rbf_family",
    "rbf_stack",
]
