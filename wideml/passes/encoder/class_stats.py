"""The encoder's class-statistics pass: class means, X-to-U products and squared norms, in one pass.

A feature chunk X_j (n x p_j) holds every sample, so its class means
U_j = W^T X_j (K x p_j) are chunk-local, and so is each chunk's share of
every additive kernel statistic (x_i . u_k, ||x_i||^2, ||u_k||^2). One pass
gives them for one or several training sets at once (the full data and every
CV fold), writes the class means chunk by chunk into a model group (or keeps
them in memory), and can keep a fixed sample of features per row for the rank
estimator. No n x n Gram is formed. :func:`class_stats_local` applies the
same chunk task to an array already in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import dask
import dask.array as da
import numpy as np

from wideml.algebra.encoder import AnchorStats
from wideml.passes.blocks import check_finite, feature_stripes, graph_constant, materialise
from wideml.passes.reduce import Sums, sum_chunk_results
from wideml.passes.spec import Pass, digest, fields_state
from wideml.passes.encoder.products import cross_sq, means_sq, row_sq, stats_operator, working_block
from wideml.passes.outputs import write_output
from wideml.passes.sampling import columns_at

#: Name of the p-sized class means (K x p) written into a model group.
CLASS_MEANS = "class_means"


@dataclass
class ClassStats:
    """What :func:`class_stats_pass` yields (float64).

    Attributes
    ----------
    cross : ndarray of shape (n_samples, S * K)
        x_i . u_{s,k} for every sample and every set's class mean.
    x_sq : ndarray of shape (n_samples,) or None
        None when the pass was asked not to accumulate it (``need_sq=False``).
    u_sq : ndarray of shape (S * K,)
    n_features : int
    sketch : ndarray of shape (n_samples, m) or None
        Every row's values at the sampled features.
    means : ndarray of shape (S * K, n_features) or None
        The class means, when asked to keep them in memory.
    """

    cross: np.ndarray
    x_sq: np.ndarray | None
    u_sq: np.ndarray
    n_features: int
    sketch: np.ndarray | None = None
    means: np.ndarray | None = None

    def anchor_stats(self, s: int, n_classes: int) -> AnchorStats:
        """The :class:`AnchorStats` of every sample against the class means of set ``s``."""
        cols = slice(s * n_classes, (s + 1) * n_classes)
        return AnchorStats(self.cross[:, cols], self.x_sq, self.u_sq[cols], self.n_features)


def _stats_chunk(stripe, offset, W, n_write, out_group, sketch_idx, keep_means, precision, need_sq=True):
    """One chunk's sums (the task reads its stripe itself: :func:`~wideml.passes.blocks.materialise`)."""
    offset = int(offset)
    block, _ = materialise(stripe)
    x = working_block(block, precision)
    if W.dtype != x.dtype:
        W = W.astype(x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf in x: reported below, by feature index
        if isinstance(W, np.ndarray):  # few anchors: two tiled reads of x (means and norms, then x U^T)
            U64, x_sq = means_sq(x, W, need_sq)
            U = U64.astype(x.dtype, copy=False)
            cross, _ = cross_sq(x, U, False)
        else:
            U = np.asarray(W @ x)
            cross, x_sq = cross_sq(x, U, need_sq)
    if need_sq:
        finite = np.isfinite(x_sq).all()
    else:  # every row with a weight is summed into U: a NaN/inf there makes U non-finite
        finite = np.isfinite(U).all() and np.isfinite(cross).all()
    if not finite:
        check_finite(np.asarray(block), offset)
        if need_sq:
            x_sq = row_sq(x.astype(np.float64))  # finite values whose float32 squares overflowed
    cross = cross.astype(np.float64, copy=False)
    U64 = U.astype(np.float64, copy=False)  # the means as multiplied (in the working precision)
    u_sq = np.square(U64).sum(axis=1)
    write_output(out_group, CLASS_MEANS, U64[:n_write], offset)
    sketch = None if sketch_idx is None else columns_at(block, offset, sketch_idx)
    out = {"cross": cross, "u_sq": u_sq, "pieces": [(offset, sketch, U64 if keep_means else None)]}
    if need_sq:
        out["x_sq"] = x_sq
    return Sums(out)


def _stats_finish(sums: Sums, n_features):
    total = sums.finish()
    pieces = sorted(total["pieces"], key=lambda t: t[0])
    sketch = np.concatenate([p[1] for p in pieces], axis=1) if pieces[0][1] is not None else None
    means = np.concatenate([p[2] for p in pieces], axis=1) if pieces[0][2] is not None else None
    return ClassStats(total["cross"], total.get("x_sq"), total["u_sq"], int(n_features), sketch, means)


def class_stats_pass(
    X: da.Array,
    W: np.ndarray,
    *,
    n_write: int = 0,
    out_group: str | None = None,
    sketch_idx: np.ndarray | None = None,
    keep_means: bool = False,
    precision: str = "float64",
    need_sq: bool = True,
    checkpoint=None,
):
    """Class means and X-to-U statistics of one or several training sets, in **one pass**.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    W : ndarray of shape (n_samples, S * K)
        Stacked class-mean operators (:func:`wideml.algebra.encoder.stacked_class_weights`).
    n_write : int
        The first ``n_write`` class means (the full training set's K) are
        written into ``out_group``'s ``class_means`` (K x p, chunked like X).
    out_group : str, optional
        Path of an existing zarr group holding that array.
    sketch_idx : ndarray of int, optional
        Sorted global feature indices whose values every row keeps (for the rank estimator).
    keep_means : bool
        Also return all S * K class means in memory (for exact ranks of the means).
    precision : {"float64", "float32"}
        Arithmetic of each chunk's products; sums across chunks are float64.
    need_sq : bool
        Also accumulate the squared row norms (``x_sq``; the euclidean kernel
        needs them). Without them, NaN/inf is detected from the class means.
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable (lanes saved at the checkpoint interval; a
        chunk a saved lane holds is not read again, its class means already
        written into ``out_group``).

    Returns
    -------
    dask.delayed.Delayed
        Computes to a :class:`ClassStats` (``x_sq`` None unless ``need_sq``).
    """
    stripes, offsets = feature_stripes(X, direct=True)  # a store's chunks are read by the task, into its reused buffer
    op = graph_constant(stats_operator(W, np.float32 if precision == "float32" else np.float64), "class-mean-operator")
    idx = None if sketch_idx is None else graph_constant(np.asarray(sketch_idx, dtype=np.int64), "sketch-features")
    args = [(s, int(o), op, n_write, out_group, idx, keep_means, precision, need_sq) for s, o in zip(stripes, offsets)]
    total = sum_chunk_results(_stats_chunk, args, checkpoint=checkpoint)
    return dask.delayed(_stats_finish, pure=True)(total, int(X.shape[1]))


def class_stats_local(X: np.ndarray, W: np.ndarray, *, sketch_idx: np.ndarray | None = None, precision: str = "float64",
                      need_sq: bool = True) -> ClassStats:
    """:func:`class_stats_pass` for an in-memory X of shape (n_samples, n_features) (no graph; the class means are kept)."""
    idx = None if sketch_idx is None else np.asarray(sketch_idx, dtype=np.int64)
    op = stats_operator(W, np.float32 if precision == "float32" else np.float64)
    return _stats_finish(_stats_chunk(X, 0, op, 0, None, idx, True, precision, need_sq), X.shape[1])


class ClassStatsPass(Pass):
    """The class-statistics pass as the fit runner runs it (**one pass** over X; directly on an in-memory ``Xmem``).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features) or None
        The dask view of X (None when ``Xmem`` is given).
    W, n_write, out_group, sketch_idx, keep_means, precision, need_sq
        As in :func:`class_stats_pass`.
    Xmem : ndarray, optional
        In-memory X: :func:`class_stats_local` runs instead of a graph.
    kind : str, default "encoder-stats"
        Names the pass's checkpoint (a cross-validation's is ``"encoder-cv-stats"``).

    Its result is a :class:`ClassStats`; its checkpoint, keyed by digests of
    ``W`` and ``sketch_idx``, holds the lanes' sums and then that result.
    """

    def __init__(self, X: da.Array | None, W: np.ndarray, *, Xmem: np.ndarray | None = None, n_write: int = 0,
                 out_group: str | None = None, sketch_idx: np.ndarray | None = None, keep_means: bool = False,
                 precision: str = "float64", need_sq: bool = True, kind: str = "encoder-stats"):
        local = None
        if Xmem is not None:
            local = lambda: class_stats_local(Xmem, W, sketch_idx=sketch_idx, precision=precision, need_sq=need_sq)  # noqa: E731
        super().__init__(local=local)
        self.X, self.W, self.kind, self.sketch_idx = X, W, kind, sketch_idx
        self.options = dict(n_write=n_write, out_group=out_group, sketch_idx=sketch_idx, keep_means=keep_means, precision=precision,
                            need_sq=need_sq)

    def graph(self, lanes=None):
        return class_stats_pass(self.X, self.W, checkpoint=lanes, **self.options)

    def key(self) -> dict:
        return {"W": digest(self.W), "sketch": digest(self.sketch_idx), "need_sq": self.options["need_sq"],
                "precision": self.options["precision"]}

    def save(self, stats: ClassStats) -> tuple:
        return fields_state(stats)

    def restore(self, state: tuple) -> ClassStats:
        return ClassStats(*state)


__all__ = ["CLASS_MEANS", "ClassStats", "ClassStatsPass", "class_stats_local", "class_stats_pass"]
