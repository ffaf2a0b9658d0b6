"""Streaming graphs of the encoder classifier ("X-to-U" kernels to the class means).

A feature chunk X_j (n x p_j) holds every sample, so its class means
U_j = W^T X_j (K x p_j) are chunk-local, and so is each chunk's share of
every additive kernel statistic (x_i . u_k, ||x_i||^2, ||u_k||^2). Hence

- :func:`class_stats_pass` — **one pass**: class means (written chunk by chunk
  into a model group, or kept in memory), X U^T, squared norms, for one or
  several training sets at once (the full data and every CV fold), plus an
  optional fixed sample of features per row for the rank estimator. No n x n
  Gram is formed.
- Spearman needs each row's ranks across *all* features, which no chunk has.
  :func:`spearman_exact_block` ranks whole rows of a block of samples (exact;
  one pass per row block, a single block when the rows fit the memory
  budget); :func:`spearman_sketch_pass` estimates every row's ranks from its
  sampled values (one pass, memory O(n m)); both need the class means' ranks,
  so they run after the class-statistics pass.
- :func:`anchor_pass` — new data against stored class means U (K x p, chunked
  like X): one pass for the inner product and the distance, plus the rank sums
  against stored class-mean ranks.
- :func:`cross_gram_pass` and :func:`rank_gram_block` — the cross-products
  the full-kernel form (Z = A W) needs.

Every ``*_pass`` / ``*_block`` function returns lazy dask objects; nothing is
computed here. The ``*_local`` functions apply the same chunk kernels to an
array already in memory (numpy input), with no graph. Class means are formed as a
sparse one-hot product W^T X_j, which adds each row once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import dask
import dask.array as da
import numpy as np

from wideml.algebra.encoder import AnchorStats, RankTable, approx_ranks, rank_sums, row_ranks
from wideml.passes.blocks import check_finite, feature_stripes, tree_reduce

#: Names of the p-sized arrays written into a model group.
CLASS_MEANS = "class_means"
CLASS_MEAN_RANKS = "class_mean_ranks"

#: Training rows processed together in the leave-one-out rank step (bounds memory per chunk task).
LOO_BATCH = 256


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


@dataclass
class LooSpec:
    """Leave-one-out pairs: training row ``rows[l]`` against its own class-mean column ``cols[l]`` of size ``counts[l]``."""

    rows: np.ndarray
    cols: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_sets(cls, codes: np.ndarray, n_classes: int, train_sets: Sequence[np.ndarray], counts: np.ndarray) -> "LooSpec":
        rows, cols, cnt = [], [], []
        for s, idx in enumerate(train_sets):
            idx = np.asarray(idx, dtype=np.int64)
            rows.append(idx)
            cols.append(s * n_classes + codes[idx])
            cnt.append(counts[s][codes[idx]])
        return cls(np.concatenate(rows), np.concatenate(cols), np.concatenate(cnt).astype(np.float64))

    def __len__(self) -> int:
        return len(self.rows)


def _row_sq(x: np.ndarray) -> np.ndarray:
    """Squared row norms (float64 out; accumulated in x's precision, ~10x faster than square-then-sum)."""
    return np.einsum("ij,ij->i", x, x, optimize=True).astype(np.float64, copy=False)


#: Products x_tile U^T of at most this many multiply-adds (rows x features x anchors) stay on a BLAS's
#: small-matrix path (no packing of x); with few anchors a chunk is multiplied in row tiles of that size,
#: each tile still in cache for its squared norms (measured on a 2000 x 4096 float32 chunk: 2 anchors
#: 3.9 -> 2.0 ms, 5 anchors 5.0 -> 2.8 ms for the product and the norms).
_TILE_MNK = 500_000
#: More anchors than this: one product for the whole chunk is faster (it is compute-bound).
_TILE_MAX_ANCHORS = 8
_TILE_MIN_ROWS = 16
_rowdot = getattr(np, "vecdot", None)  # numpy >= 2


def _tile_rows(n: int, p: int, anchors: int) -> int:
    """Rows per tile of a product of an n x p chunk with ``anchors`` rows of weights, or 0 for one whole product."""
    rows = _TILE_MNK // max(1, anchors * p)
    if anchors > _TILE_MAX_ANCHORS or rows < _TILE_MIN_ROWS or rows >= n or _rowdot is None:
        return 0
    return rows


def _cross_sq(x: np.ndarray, U: np.ndarray, need_sq: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """x U^T (n x A, in x's dtype) and, when ``need_sq``, the squared row norms of x (float64), from one read of x."""
    n, p = x.shape
    A = U.shape[0]
    rows = _tile_rows(n, p, A)
    if not rows:
        # float64: OpenBLAS runs (U x^T)^T, with the few anchors as rows, 1.1-1.6x faster than x U^T (float32: slower)
        cross = (U @ x.T).T if np.result_type(x.dtype, U.dtype) == np.float64 else x @ U.T
        return cross, (_row_sq(x) if need_sq else None)
    UT = U.T
    cross = np.empty((n, A), dtype=np.result_type(x.dtype, U.dtype))
    sq = np.empty(n, dtype=x.dtype) if need_sq else None
    for a in range(0, n, rows):
        xs = x[a : a + rows]
        np.matmul(xs, UT, out=cross[a : a + rows])
        if need_sq:
            _rowdot(xs, xs, out=sq[a : a + rows])
    return cross, (sq.astype(np.float64) if need_sq else None)


def _means_sq(x: np.ndarray, Wt: np.ndarray, need_sq: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Class means U = W^T x (A x p, float64) for a few anchors (dense ``Wt``, A x n) and, when ``need_sq``, the
    squared row norms (float64), from one read of x: each row tile's product and norms while it is in cache."""
    n, p = x.shape
    A = Wt.shape[0]
    rows = _tile_rows(n, p, A)
    if not rows:
        return (Wt @ x).astype(np.float64), (_row_sq(x) if need_sq else None)
    U = np.zeros((A, p))
    part = np.empty((A, p), dtype=np.result_type(x.dtype, Wt.dtype))
    sq = np.empty(n, dtype=x.dtype) if need_sq else None
    for a in reversed(range(0, n, rows)):  # from the end: the rows just read are still in cache (x U^T then sweeps forward)
        xs = x[a : a + rows]
        np.matmul(Wt[:, a : a + rows], xs, out=part)
        U += part
        if need_sq:
            _rowdot(xs, xs, out=sq[a : a + rows])
    return U, (sq.astype(np.float64) if need_sq else None)


def _float_block(block, offset: int, precision: str) -> np.ndarray:
    x = np.asarray(block)
    dt = np.float32 if precision == "float32" else np.float64
    return x.astype(dt, copy=False)


_LAYOUTS: OrderedDict = OrderedDict()
_LAYOUT_LOCK = threading.Lock()


def _raw_layout(path: str):
    """(chunk shape, dtype) when ``path`` is an uncompressed little-endian zarr v3 array whose chunk files
    can be written directly (the layout the reader reads raw); None otherwise. Cached per process."""
    import json
    import os

    with _LAYOUT_LOCK:
        if path in _LAYOUTS:
            return _LAYOUTS[path]
    layout = None
    try:
        meta = json.loads(open(os.path.join(path, "zarr.json")).read())
        codecs = meta.get("codecs", [])
        enc_ = meta.get("chunk_key_encoding", {})
        if (meta.get("data_type") == "float64" and len(codecs) == 1 and codecs[0].get("name") == "bytes"
                and codecs[0].get("configuration", {}).get("endian", "little") == "little"
                and enc_.get("name") == "default" and enc_.get("configuration", {}).get("separator", "/") == "/"
                and meta.get("chunk_grid", {}).get("name") == "regular"):
            layout = (tuple(meta["chunk_grid"]["configuration"]["chunk_shape"]), tuple(meta["shape"]), meta.get("fill_value", 0.0))
    except (OSError, ValueError, KeyError):
        layout = None
    with _LAYOUT_LOCK:
        _LAYOUTS[path] = layout
        while len(_LAYOUTS) > 16:
            _LAYOUTS.popitem(last=False)
    return layout


def _write(group_path: str | None, name: str, values: np.ndarray, offset: int) -> None:
    """Write a K x p_j block of a p-sized output at feature ``offset``.

    Whole chunks of an uncompressed float64 array are written as raw chunk files (what zarr itself
    would write, without its event-loop round trips); anything else goes through zarr.
    """
    if group_path is None or values.size == 0:
        return
    import os

    path = f"{group_path}/{name}"
    layout = _raw_layout(path)
    if layout is not None:
        (cr, cc), (rows, cols), fill = layout
        if cr == rows == values.shape[0] and offset % cc == 0 and (values.shape[1] == cc or offset + values.shape[1] == cols):
            block = np.full((cr, cc), fill, dtype="<f8")
            block[:, : values.shape[1]] = values
            folder = os.path.join(path, "c", "0")
            os.makedirs(folder, exist_ok=True)
            block.tofile(os.path.join(folder, str(offset // cc)))
            return
    import zarr

    zarr.open_array(path, mode="r+")[:, offset : offset + values.shape[1]] = values


def _const(value, what: str):
    """A graph constant under a unique name (hashing large arrays or thousands of rank tables to name them is slow)."""
    import uuid

    return dask.delayed(value, name=f"wideml-encoder-{what}-{uuid.uuid4().hex}")


def _class_mean_operator(W: np.ndarray):
    """W^T as a sparse matrix (S*K x n): each sample sits in one class per set, so U = W^T X is a
    sparse-dense product that adds each row once (3x faster than a dense GEMM with K rows)."""
    import scipy.sparse

    Wt = np.ascontiguousarray(np.asarray(W, dtype=np.float64).T)
    mask = Wt != 0
    flat = np.flatnonzero(mask)  # row-major order: the canonical CSR layout
    indptr = np.zeros(Wt.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=indptr[1:])
    return scipy.sparse.csr_array((Wt.ravel()[flat], flat % Wt.shape[1], indptr), shape=Wt.shape)


def anchor_sample(W: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Class means at the sampled features, ``W^T sample`` (S*K x m), computed exactly as the passes compute
    them chunk by chunk, so a class mean's value at a sampled feature is bitwise its rank table's knot."""
    return np.asarray(_class_mean_operator(W) @ np.asarray(sample, dtype=np.float64))


def _reduce_graph(what: str, func, per_chunk: Sequence[tuple], shared: tuple = (), finish=None, finish_args: tuple = ()):
    """One task ``func(*per_chunk[j], *shared)`` per chunk, summed in a tree by :func:`_sum_parts`, then ``finish``.

    The graph is written out directly: an argument that is a ``Delayed`` (a
    stripe of X, of the class means) stands for its key and brings its graph
    along; ``shared`` values are stored once in the graph. Nothing is hashed,
    so building a pass over ~60 chunks takes well under a millisecond instead
    of the ~10 ms of ``dask.delayed`` calls (which tokenize every argument).

    Returns
    -------
    dask.delayed.Delayed
    """
    import uuid

    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    token = uuid.uuid4().hex
    layer: dict = {}
    graphs: dict[int, Delayed] = {}
    shared_keys = []
    for i, value in enumerate(shared):
        key = f"wideml-encoder-{what}-const{i}-{token}"
        layer[key] = value
        shared_keys.append(key)

    def ref(arg):
        if isinstance(arg, Delayed):
            graphs.setdefault(id(arg.dask), arg)
            return arg.key
        return arg

    parts = []
    for j, args in enumerate(per_chunk):
        key = (f"wideml-encoder-{what}-{token}", j)
        layer[key] = (func, *map(ref, args), *shared_keys)
        parts.append(key)
    from wideml.runtime.config import config_value

    width = max(2, int(config_value("tree-width")))
    level = 0
    while len(parts) > 1:
        merged = []
        for i in range(0, len(parts), width):
            group = parts[i : i + width]
            if len(group) == 1:
                merged.append(group[0])
                continue
            key = (f"wideml-encoder-{what}-sum{level}-{token}", i)
            layer[key] = (_sum_parts, *group)
            merged.append(key)
        parts, level = merged, level + 1
    out = parts[0]
    if finish is not None:
        out = f"wideml-encoder-{what}-finish-{token}"
        layer[out] = (finish, parts[0], *finish_args)
    return Delayed(out, HighLevelGraph.from_collections(out, layer, dependencies=list(graphs.values())))


def _add_parts(acc, part):
    """Add one chunk's sums into a lane's accumulator, in place (the resumable passes fold lanes: :func:`_resumable_graph`)."""
    for key, value in part.items():
        if key == "pieces":
            acc[key] = list(acc[key]) + list(value)
        else:
            acc[key] += value
    return acc


def _read_then(func, stripe, *args):
    """``func(block, *args)`` on the stripe read by this task (a lane's step reads its own chunk: nothing is read ahead)."""
    from wideml.passes.blocks import materialise

    block, _ = materialise(stripe)
    return func(block, *args)


def _resumable_graph(func, X: da.Array, per_chunk: Sequence[tuple], shared_args: tuple, checkpoint, finish=None,
                     finish_args: tuple = ()):
    """:func:`_reduce_graph`'s sum, folded in lanes saved into ``checkpoint`` (chunks a saved lane holds are not read again).

    Each step reads its own chunk of X (``func``'s first argument; ``per_chunk`` gives the
    others), so what a killed run saved is what it read, give or take one chunk per lane.
    """
    from wideml.passes.blocks import fold_in_lanes, shared

    stripes, _ = feature_stripes(X, direct=True)
    consts = tuple(shared(v) if isinstance(v, np.ndarray) or hasattr(v, "tocsr") else v for v in shared_args)
    args = [(func, stripe, *rest, *consts) for stripe, rest in zip(stripes, per_chunk)]
    total = fold_in_lanes(_read_then, args, _add_parts, _sum_parts, checkpoint=checkpoint)
    return dask.delayed(finish, pure=True)(total, *finish_args) if finish is not None else total


def _sum_parts(*parts):
    out = {}
    for key in parts[0]:
        if key == "pieces":
            out[key] = [piece for part in parts for piece in part[key]]
        else:
            out[key] = parts[0][key].copy()
            for part in parts[1:]:
                out[key] += part[key]
    return out


# --------------------------------------------------------------------------------------
# pass 1: class statistics and X-to-U products
# --------------------------------------------------------------------------------------
def _stats_operator(W: np.ndarray, dtype):
    """The class-mean operator W^T as the chunk task wants it: dense (A x n, ``dtype``) for a few anchors, whose
    products run in row tiles (:func:`_means_sq`), else sparse (:func:`_class_mean_operator`)."""
    dtype = np.dtype(dtype)
    if W.shape[1] <= _TILE_MAX_ANCHORS:
        return np.ascontiguousarray(np.asarray(W, dtype=np.float64).T).astype(dtype, copy=False)
    op = _class_mean_operator(W)
    return op.astype(dtype) if op.dtype != dtype else op


def _stats_chunk(block, offset, W, n_write, out_group, sketch_idx, keep_means, precision, need_sq=True):
    offset = int(offset)
    x = _float_block(block, offset, precision)
    if W.dtype != x.dtype:
        W = W.astype(x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf in x: reported below, by feature index
        if isinstance(W, np.ndarray):  # few anchors: two tiled reads of x (means and norms, then x U^T)
            U64, x_sq = _means_sq(x, W, need_sq)
            U = U64.astype(x.dtype, copy=False)
            cross, _ = _cross_sq(x, U, False)
        else:
            U = np.asarray(W @ x)
            cross, x_sq = _cross_sq(x, U, need_sq)
    if need_sq:
        finite = np.isfinite(x_sq).all()
    else:  # every row with a weight is summed into U: a NaN/inf there makes U non-finite
        finite = np.isfinite(U).all() and np.isfinite(cross).all()
    if not finite:
        check_finite(np.asarray(block), offset)
        if need_sq:
            x_sq = _row_sq(x.astype(np.float64))  # finite values whose float32 squares overflowed
    cross = cross.astype(np.float64, copy=False)
    U64 = U.astype(np.float64, copy=False)  # the means as multiplied (in the working precision)
    u_sq = np.square(U64).sum(axis=1)
    _write(out_group, CLASS_MEANS, U64[:n_write], offset)
    sketch = None
    if sketch_idx is not None:
        lo, hi = np.searchsorted(sketch_idx, [offset, offset + x.shape[1]])
        sketch = np.asarray(block)[:, sketch_idx[lo:hi] - offset].astype(np.float64)
    out = {"cross": cross, "u_sq": u_sq, "pieces": [(offset, sketch, U64 if keep_means else None)]}
    if need_sq:
        out["x_sq"] = x_sq
    return out


def _stats_finish(total, n_features):
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
    op = _stats_operator(W, np.float32 if precision == "float32" else np.float64)
    idx = None if sketch_idx is None else np.asarray(sketch_idx, dtype=np.int64)
    shared = (op, n_write, out_group, idx, keep_means, precision, need_sq)
    if checkpoint is not None:
        return _resumable_graph(_stats_chunk, X, [(int(o),) for o in offsets], shared, checkpoint,
                                finish=_stats_finish, finish_args=(int(X.shape[1]),))
    return _reduce_graph("class-stats", _read_then, [(_stats_chunk, s, int(o)) for s, o in zip(stripes, offsets)], shared,
                         finish=_stats_finish, finish_args=(int(X.shape[1]),))


# --------------------------------------------------------------------------------------
# pass 2 (estimated ranks): Spearman sums from each row's sampled values
# --------------------------------------------------------------------------------------
def _loo_rank_sums(x, U, R, loo, u_tables, p):
    """sum_j r_ij s'_ij, sum_j s'_ij, sum_j s'_ij^2 for every leave-one-out pair, in batches."""
    L = len(loo)
    cross, ssum, ssq = np.empty(L), np.empty(L), np.empty(L)
    for a in range(0, L, LOO_BATCH):
        b = min(L, a + LOO_BATCH)
        rows, cols, cnt = loo.rows[a:b], loo.cols[a:b], loo.counts[a:b][:, None]
        u_loo = (cnt * U[cols] - x[rows]) / np.maximum(cnt - 1, 1)
        S = np.empty_like(u_loo)
        for col in np.unique(cols):
            sel = cols == col
            S[sel] = u_tables[col].rank(u_loo[sel], p)
        cross[a:b] = np.einsum("ij,ij->i", R[rows], S)
        ssum[a:b], ssq[a:b] = rank_sums(S)
    return cross, ssum, ssq


def _sketch_rank_chunk(block, offset, W, x_tables, u_tables, p, loo, n_write, out_group, keep_ranks=False):
    offset = int(offset)
    x = np.asarray(block).astype(np.float64, copy=False)
    U = np.asarray(W @ x)
    R = approx_ranks(x, x_tables, p)
    S = approx_ranks(U, u_tables, p)
    _write(out_group, CLASS_MEAN_RANKS, S[:n_write], offset)
    r_sum, r_sq = rank_sums(R)
    s_sum, s_sq = rank_sums(S)
    out = {"rank_cross": R @ S.T, "r_sum": r_sum, "r_sq": r_sq, "s_sum": s_sum, "s_sq": s_sq}
    if loo is not None and len(loo):
        out["loo_cross"], out["loo_sum"], out["loo_sq"] = _loo_rank_sums(x, U, R, loo, u_tables, p)
    if keep_ranks:
        out["S"] = S
    return out


def spearman_sketch_pass(
    X: da.Array,
    W: np.ndarray,
    x_tables: Sequence[RankTable],
    u_tables: Sequence[RankTable],
    *,
    loo: LooSpec | None = None,
    n_write: int = 0,
    out_group: str | None = None,
    checkpoint=None,
):
    """Spearman sums with **estimated** ranks, in **one pass** (after :func:`class_stats_pass`).

    Row i's rank of a value v is estimated as p F_i(v) + 1/2, with F_i the
    mid-rank CDF of the row's sampled values, linearly interpolated
    (:class:`~wideml.algebra.encoder.RankTable`); likewise for each class mean
    from the class mean's values at the same features. A leave-one-out class
    mean (n_c u_c - x_i) / (n_c - 1) is ranked with its class mean's table
    (it differs from u_c by O(1/n_c)).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    W : ndarray of shape (n_samples, S * K)
    x_tables : sequence of n_samples RankTable
    u_tables : sequence of S * K RankTable
    loo : LooSpec, optional
        Pairs whose leave-one-out rank sums to accumulate too.
    n_write, out_group :
        Write the first ``n_write`` class means' estimated ranks into
        ``out_group``'s ``class_mean_ranks`` (K x p, chunked like X).
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable, as for :func:`class_stats_pass`.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict with ``rank_cross`` (n x SK), ``r_sum``, ``r_sq``
        (n), ``s_sum``, ``s_sq`` (SK) and, with ``loo``, ``loo_cross``,
        ``loo_sum``, ``loo_sq`` (len(loo)).
    """
    stripes, offsets = feature_stripes(X)
    p = int(X.shape[1])
    W_d = _const(_class_mean_operator(W), "class-mean-operator")
    xt, ut = _const(list(x_tables), "row-rank-tables"), _const(list(u_tables), "mean-rank-tables")
    loo_d = _const(loo, "loo-pairs") if loo is not None else None
    if checkpoint is not None:
        args = [(int(o), W_d, xt, ut, p, loo_d, n_write, out_group) for o in offsets]
        return _resumable_graph(_sketch_rank_chunk, X, args, (), checkpoint)
    task = dask.delayed(_sketch_rank_chunk, pure=True)
    parts = [task(s, int(o), W_d, xt, ut, p, loo_d, n_write, out_group) for s, o in zip(stripes, offsets)]
    return tree_reduce(parts, _sum_parts)


# --------------------------------------------------------------------------------------
# pass 2 (exact ranks): whole rows of a block of samples
# --------------------------------------------------------------------------------------
#: Rows ranked together in the exact rank step: about this many bytes of float64 ranks, so the ranks and
#: their temporaries stay in cache and are recycled by the allocator instead of being fresh pages each time.
_RANK_TILE_BYTES = 1 << 21


def _exact_block(rows, S, U, loo, *stripes):
    x = np.asarray(stripes[0]) if len(stripes) == 1 else np.concatenate([np.asarray(s) for s in stripes], axis=1)
    check_finite(x, 0)
    n, p = x.shape
    rank_cross, r_sum, r_sq = np.empty((n, S.shape[0])), np.empty(n), np.empty(n)
    if loo is not None and len(loo):
        L = len(loo)
        cross, ssum, ssq = np.empty(L), np.empty(L), np.empty(L)
        local = loo.rows - rows[0]
    else:
        loo = None
    tile = max(1, _RANK_TILE_BYTES // (8 * max(1, p)))
    for a in range(0, n, tile):
        b = min(n, a + tile)
        R = row_ranks(x[a:b])
        rank_cross[a:b] = R @ S.T
        r_sum[a:b], r_sq[a:b] = rank_sums(R)
        if loo is None:
            continue
        pairs = np.flatnonzero((local >= a) & (local < b))
        for c in range(0, len(pairs), LOO_BATCH):
            sel = pairs[c : c + LOO_BATCH]
            cnt = loo.counts[sel][:, None]
            u_loo = (cnt * U[loo.cols[sel]] - x[local[sel]]) / np.maximum(cnt - 1, 1)
            Sl = row_ranks(u_loo)
            cross[sel] = np.einsum("ij,ij->i", R[local[sel] - a], Sl)
            ssum[sel], ssq[sel] = rank_sums(Sl)
    out = {"rank_cross": rank_cross, "r_sum": r_sum, "r_sq": r_sq}
    if loo is not None:
        out["loo_cross"], out["loo_sum"], out["loo_sq"] = cross, ssum, ssq
    return out


def spearman_exact_block(X: da.Array, rows: slice, S: np.ndarray, *, U: np.ndarray | None = None,
                         loo: LooSpec | None = None):
    """Exact Spearman sums for the samples ``rows``: one pass over X (reads every chunk, keeps those rows).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    rows : slice
        A contiguous block of samples; its whole rows (b x p) and their ranks
        are held in memory by one task.
    S : ndarray of shape (A, n_features)
        Exact ranks of the anchors (class means).
    U : ndarray of shape (A, n_features), optional
        The anchors themselves (needed for ``loo``).
    loo : LooSpec, optional
        Leave-one-out pairs whose rows all lie in ``rows``; ``loo.rows`` are
        global sample indices.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict with ``rank_cross`` (b x A), ``r_sum``, ``r_sq`` (b)
        and, with ``loo``, ``loo_cross``, ``loo_sum``, ``loo_sq``.
    """
    start, stop, _ = rows.indices(X.shape[0])
    stripes, _ = feature_stripes(X[start:stop])
    consts = [dask.delayed(np.arange(start, stop)), _const(S, "mean-ranks"), _const(U, "class-means"), _const(loo, "loo-pairs")]
    return dask.delayed(_exact_block, pure=True)(*consts, *stripes)


# --------------------------------------------------------------------------------------
# new data against stored class means (and their ranks)
# --------------------------------------------------------------------------------------
def _aligned_stripes(A, X: da.Array) -> list:
    """Column stripes of a K x p array (numpy, zarr or dask) aligned with X's feature chunks."""
    if not isinstance(A, da.Array):
        A = da.from_array(A, chunks=(A.shape[0], X.chunks[1]), asarray=True)
    A = A.rechunk((A.shape[0], X.chunks[1]))
    return list(A.to_delayed()[0])


def _anchor_chunk(block, offset, u, s, tables, p, precision):
    offset = int(offset)
    x = _float_block(block, offset, precision)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf in x: reported below, by feature index
        if u is not None:
            u = np.asarray(u).astype(x.dtype, copy=False)
            cross, x_sq = _cross_sq(x, u)
        else:
            cross, x_sq = None, _row_sq(x)
    if not np.all(np.isfinite(x_sq)):
        check_finite(np.asarray(block), offset)
        x_sq = _row_sq(x.astype(np.float64))
    out = {"x_sq": x_sq}
    if u is not None:
        out["cross"] = cross.astype(np.float64)
        out["u_sq"] = np.square(u.astype(np.float64)).sum(axis=1)
    if s is not None:
        s = np.asarray(s, dtype=np.float64)
        R = approx_ranks(x.astype(np.float64), tables, p)
        out["rank_cross"] = R @ s.T
        out["r_sum"], out["r_sq"] = rank_sums(R)
    return out


def anchor_pass(X: da.Array, U=None, *, S=None, x_tables: Sequence[RankTable] | None = None, precision: str = "float64"):
    """Statistics of new samples against stored anchors, in **one pass** over X.

    Parameters
    ----------
    X : dask.array.Array of shape (m, n_features)
    U : array of shape (K, n_features), optional
        Class means (numpy, zarr or dask); gives ``cross``, ``x_sq``, ``u_sq``.
    S : array of shape (K, n_features), optional
        Estimated class-mean ranks (with ``x_tables``, the new rows' rank
        tables from :func:`sketch_pass`); gives ``rank_cross``, ``r_sum``, ``r_sq``.
    precision : {"float64", "float32"}

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict of those sums.
    """
    stripes, offsets = feature_stripes(X)
    us = _aligned_stripes(U, X) if U is not None else [None] * len(stripes)
    ss = _aligned_stripes(S, X) if S is not None else [None] * len(stripes)
    tables = list(x_tables) if x_tables is not None else None
    per_chunk = [(x, int(o), u, s) for x, o, u, s in zip(stripes, offsets, us, ss)]
    return _reduce_graph("anchors", _anchor_chunk, per_chunk, (tables, int(X.shape[1]), precision))


def _sketch_chunk(block, offset, idx):
    offset = int(offset)
    lo, hi = np.searchsorted(idx, [offset, offset + block.shape[1]])
    vals = np.asarray(block)[:, idx[lo:hi] - offset].astype(np.float64)
    if not np.all(np.isfinite(vals)):
        check_finite(np.asarray(block), offset)
    return {"pieces": [(offset, vals, None)]}


def sketch_pass(X: da.Array, sketch_idx: np.ndarray):
    """Every row's values at the sampled features (n x m), in **one pass** (chunks without a sampled feature are not read)."""
    stripes, offsets = feature_stripes(X)
    idx = np.asarray(sketch_idx, dtype=np.int64)
    ends = offsets + np.asarray(X.chunks[1])
    task = dask.delayed(_sketch_chunk, pure=True)
    parts = [task(s, int(o), idx) for s, o, e in zip(stripes, offsets, ends)
             if np.searchsorted(idx, o) < np.searchsorted(idx, e)]
    if not parts:
        return dask.delayed(np.zeros)((X.shape[0], 0))
    return dask.delayed(_sketch_finish, pure=True)(tree_reduce(parts, _sum_parts))


def _sketch_finish(total):
    return np.concatenate([v for _, v, _ in sorted(total["pieces"], key=lambda q: q[0])], axis=1)


# --------------------------------------------------------------------------------------
# full-kernel form
# --------------------------------------------------------------------------------------
def _cross_chunk(a, b, offset):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    check_finite(a, int(offset))
    return {"gram": a @ b.T, "a_sq": np.square(a).sum(axis=1), "b_sq": np.square(b).sum(axis=1)}


def cross_gram_pass(X_new: da.Array, X_train: da.Array):
    """X_new X_train^T (m x n) and both sets' squared row norms, in **one pass** over each.

    The training array is re-chunked to X_new's feature chunks when they differ.
    """
    a_stripes, offsets = feature_stripes(X_new)
    b_stripes, _ = feature_stripes(X_train.rechunk((X_train.shape[0], X_new.chunks[1])))
    task = dask.delayed(_cross_chunk, pure=True)
    return tree_reduce([task(a, b, int(o)) for a, b, o in zip(a_stripes, b_stripes, offsets)], _sum_parts)


def _rank_gram(na, same, *stripes):
    x = np.concatenate([np.asarray(s) for s in stripes], axis=1).astype(np.float64, copy=False)
    check_finite(x, 0)
    R = row_ranks(x)
    Ra = R[:na]
    Rb = Ra if same else R[na:]
    a_sum, a_sq = rank_sums(Ra)
    b_sum, b_sq = rank_sums(Rb)
    return {"gram": Ra @ Rb.T, "a_sum": a_sum, "a_sq": a_sq, "b_sum": b_sum, "b_sq": b_sq}


def rank_gram_block(X_a: da.Array, X_b: da.Array | None = None):
    """Exact rank cross-products R_a R_b^T (and rank sums) of two row sets held whole in memory (one pass over each).

    With ``X_b`` None, R_b = R_a (the training rank Gram).
    """
    parts = [X_a] if X_b is None else [X_a, X_b.rechunk((X_b.shape[0], X_a.chunks[1]))]
    stacked = da.concatenate(parts, axis=0) if len(parts) > 1 else X_a
    stripes, _ = feature_stripes(stacked)
    return dask.delayed(_rank_gram, pure=True)(int(X_a.shape[0]), X_b is None, *stripes)


# --------------------------------------------------------------------------------------
# in-memory counterparts: the same chunk kernels applied to an array already in RAM
# --------------------------------------------------------------------------------------
def class_stats_local(X: np.ndarray, W: np.ndarray, *, sketch_idx: np.ndarray | None = None, precision: str = "float64",
                      need_sq: bool = True) -> ClassStats:
    """:func:`class_stats_pass` for an in-memory X (no graph; the class means are kept)."""
    idx = None if sketch_idx is None else np.asarray(sketch_idx, dtype=np.int64)
    op = _stats_operator(W, np.float32 if precision == "float32" else np.float64)
    return _stats_finish(_stats_chunk(X, 0, op, 0, None, idx, True, precision, need_sq), X.shape[1])


def spearman_sketch_local(X: np.ndarray, W: np.ndarray, x_tables, u_tables, *, loo: LooSpec | None = None) -> dict:
    """:func:`spearman_sketch_pass` for an in-memory X; also returns the anchors' estimated ranks ``S`` (S*K x p)."""
    return _sketch_rank_chunk(X, 0, _class_mean_operator(W), list(x_tables), list(u_tables), X.shape[1], loo, 0, None, True)


def spearman_exact_local(X: np.ndarray, rows: slice, S: np.ndarray, *, U: np.ndarray | None = None,
                         loo: LooSpec | None = None) -> dict:
    """:func:`spearman_exact_block` for an in-memory X."""
    start, stop, _ = rows.indices(X.shape[0])
    return _exact_block(np.arange(start, stop), S, U, loo, X[start:stop])


def anchor_local(X: np.ndarray, U: np.ndarray | None = None, *, S: np.ndarray | None = None, x_tables=None,
                 precision: str = "float64") -> dict:
    """:func:`anchor_pass` for in-memory X and anchors."""
    return _anchor_chunk(X, 0, U, S, None if x_tables is None else list(x_tables), X.shape[1], precision)


def sketch_local(X: np.ndarray, sketch_idx: np.ndarray) -> np.ndarray:
    """:func:`sketch_pass` for an in-memory X."""
    return _sketch_finish(_sketch_chunk(X, 0, np.asarray(sketch_idx, dtype=np.int64)))


__all__ = [
    "CLASS_MEANS", "CLASS_MEAN_RANKS", "ClassStats", "LooSpec", "anchor_pass", "class_stats_pass", "cross_gram_pass",
    "anchor_sample", "rank_gram_block", "sketch_pass", "spearman_exact_block", "spearman_sketch_pass", "class_stats_local",
    "spearman_sketch_local", "spearman_exact_local", "anchor_local", "sketch_local",
]
