"""The LOL paper's regression setting (Fig. 7C, "Sparse Toeplitz, D=1000, n=100"): Toeplitz features, a sparse linear target.

x ~ N(0, Σ) with Σ_ij = ρ^|i-j| (the ``toeplitz`` setting's AR(1) features with no mean shift,
so chunking-invariant and with no p x p matrix), and

    y = βᵀ x + σ ε,   ε ~ N(0, 1),

with β zero except on ``n_nonzero`` features drawn at random, whose coefficients are
Uniform(0, 1). The defaults are the authors' code for the figure (``sample_regress.m``, case
``toeplitz``: ρ = 0.99, 100 non-zero coefficients, σ = 4). The Methods text describes y as x
times "a diagonal matrix whose first two diagonal elements are non-zero"; ``support="first"``
with ``n_nonzero=2`` gives that reading (β on the first two features).

y needs every feature of a sample, so it is computed by one pass over the lazy X (chunk by
chunk, ``X @ β``); β is p-sized and held in memory (8 p bytes).
"""

from __future__ import annotations

import numbers

import dask.array as da
import numpy as np

from wideml.exceptions import WidemlError
from wideml.runtime import compute
from wideml.sims import rng
from wideml.sims.generate import simulate

#: Key material of this simulator's coefficient and noise streams.
CODE = rng.setting_code("sparse-toeplitz-regression")

#: Streams: the support and values of β, and the target's noise.
COEFFICIENTS, TARGET_NOISE = 1, 2

#: Where the non-zero coefficients sit.
SUPPORTS = ("random", "first")


def sparse_coefficients(n_features: int, n_nonzero: int = 100, seed: int = 0, support: str = "random") -> np.ndarray:
    """β: ``n_nonzero`` Uniform(0, 1) coefficients on random features (``support="random"``) or on the first ones.

    Parameters
    ----------
    n_features : int
        p.
    n_nonzero : int, default 100
        Number of non-zero coefficients (at most p).
    seed : int, default 0
    support : {"random", "first"}, default "random"

    Returns
    -------
    ndarray of shape (n_features,)
    """
    _check(n_features, n_nonzero, support)
    gen = rng.generator(rng.check_seed(seed), CODE, COEFFICIENTS)
    values = gen.random(n_nonzero)
    where = np.sort(gen.choice(n_features, size=n_nonzero, replace=False)) if support == "random" else np.arange(n_nonzero)
    beta = np.zeros(n_features)
    beta[where] = values
    return beta


def _check(n_features: int, n_nonzero: int, support: str) -> None:
    for what, value in (("n_features", n_features), ("n_nonzero", n_nonzero)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise WidemlError(f"{what} must be a whole number of at least 1, got {value!r}.")
    if n_nonzero > n_features:
        raise WidemlError(f"n_nonzero={n_nonzero} is more than the {n_features} features; give at most {n_features}.")
    if support not in SUPPORTS:
        raise WidemlError(f"support={support!r} is not one of {', '.join(SUPPORTS)}; choose one of them.")


def sparse_toeplitz_regression(n_samples: int, n_features: int = 1000, seed: int = 0, *, rho: float = 0.99,
                               n_nonzero: int = 100, noise: float = 4.0, support: str = "random",
                               chunks=None) -> tuple[da.Array, np.ndarray, np.ndarray]:
    """Simulate the Fig. 7C regression: X lazily (Toeplitz features), y and β.

    Parameters
    ----------
    n_samples : int
        n.
    n_features : int, default 1000
        p.
    seed : int, default 0
        X, β and the noise depend only on the seed (and n, p, the parameters), never on ``chunks``
        (y up to the round-off of summing X β chunk by chunk).
    rho : float, default 0.99
        Correlation of neighbouring features, Σ_ij = rho^|i-j| (|rho| < 1).
    n_nonzero : int, default 100
        Non-zero coefficients of β.
    noise : float, default 4.0
        σ, the standard deviation of the target's noise (0 or more).
    support : {"random", "first"}, default "random"
        Where β's non-zero coefficients are.
    chunks : int or sequence of int, optional
        Feature chunks of X (as :func:`wideml.sims.simulate`).

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64
        βᵀ x + σ ε (one pass over X).
    beta : ndarray of shape (n_features,)

    Notes
    -----
    Var(y) = βᵀ Σ β + σ²; the rows of X are i.i.d. N(0, Σ).
    """
    if not (isinstance(noise, numbers.Real) and np.isfinite(noise) and noise >= 0):
        raise WidemlError(f"noise={noise!r} must be a finite number of at least 0 (the target's noise standard deviation).")
    beta = sparse_coefficients(n_features, n_nonzero, seed, support)
    X, _ = simulate("toeplitz", n_samples, n_features, seed=seed, chunks=chunks, rho=rho, b=0.0)
    (signal,) = compute(X @ da.from_array(beta, chunks=(X.chunks[1],)), label="target y = X beta")
    eps = rng.generator(rng.check_seed(seed), CODE, TARGET_NOISE).standard_normal(n_samples)
    return X, np.asarray(signal, dtype=np.float64) + float(noise) * eps, beta


__all__ = ["SUPPORTS", "sparse_coefficients", "sparse_toeplitz_regression"]
