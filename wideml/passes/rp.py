"""The Gaussian random projection pass: X A with A (p x d) generated per chunk, never stored.

A's entries are N(0, 1), keyed on (seed, global feature index, column)
(:func:`wideml.passes.keyed_random.gaussian_columns`): a chunk generates its
own rows of A, so the result does not depend on the chunking, and the first d
columns of A for any d' >= d are the d-column A (nested in d). Each chunk is
centred by its own means first and the offset added back in float64
(:func:`wideml.passes.loadings.centred_product`), so float32 products keep
their precision whatever the features' offsets.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import feature_stripes, materialise
from wideml.passes.chunkmath import work_dtype
from wideml.passes.keyed_random import gaussian_columns
from wideml.passes.loadings import add_arrays, centred_product
from wideml.passes.reduce import tree_reduce
from wideml.passes.spec import Pass


def rp_chunk(block, offset: int, seed: int, n_cols: int, precision: str = "auto") -> np.ndarray:
    """X_j A_j (n x n_cols, float64) for one chunk X_j (n x p_j, or a stripe to read) starting at global feature ``offset``."""
    block, _ = materialise(block)
    width = block.shape[1]
    return centred_product(block, int(offset), gaussian_columns(seed, int(offset), int(offset) + width, n_cols), precision)[0]


def rp_pass(X: da.Array, *, n_components: int, seed: int, precision: str = "auto"):
    """Lazy raw projection X A (**one pass** over X).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    n_components : int
        d, the columns of A.
    seed : int
    precision : {"auto", "float64", "float32"}, default "auto"
        Dtype of each chunk's products (on the chunk centred by its own means).

    Returns
    -------
    dask.delayed.Delayed
        Computes to X A, shape (n_samples, n_components), float64. Raises
        NonFiniteError when X holds NaN or inf.
    """
    work_dtype(X.dtype, precision)  # validate early
    stripes, offsets = feature_stripes(X, direct=True)
    task = dask.delayed(rp_chunk, pure=True)
    return tree_reduce([task(s, int(o), seed, n_components, precision) for s, o in zip(stripes, offsets)], add_arrays)


def rp_local(X: np.ndarray, *, n_components: int, seed: int, precision: str = "auto", width: int = 4096) -> np.ndarray:
    """:func:`rp_pass` on an in-memory X (n x p), in feature blocks of ``width`` (no graph)."""
    out = np.zeros((X.shape[0], n_components))
    for a in range(0, X.shape[1], width):
        out += rp_chunk(X[:, a : a + width], a, seed, n_components, precision)
    return out


class RpPass(Pass):
    """The RP fit pass as the fit runner runs it (:func:`rp_pass`; **one pass** over X). Its checkpoint is ``"rp"``."""

    kind = "rp"

    def __init__(self, X: da.Array, *, n_components: int, seed: int, precision: str = "auto", numpy_X=None):
        super().__init__(local=None if numpy_X is None else
                         (lambda: rp_local(numpy_X, n_components=n_components, seed=seed, precision=precision)))
        self.X, self.options = X, {"n_components": int(n_components), "seed": int(seed), "precision": precision}

    def graph(self, lanes=None):
        return rp_pass(self.X, **self.options)

    def key(self) -> dict:
        return dict(self.options)
