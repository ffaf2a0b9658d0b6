"""LFL passes: class centroids plus a very sparse random projection, in one pass.

For each feature chunk X_j the task computes the class centroids C_j (means or
medians, K x p_j; written to the model group), the training-data products
X_j C_j^T (n x K) and X_j R_j (n x k) with R_j the chunk's rows of the sparse
projection generated from (seed, feature index, column), the centroids' Gram
C_j C_j^T, and the feature means' products m_j^T C_j^T and m_j^T R_j. Summed
over chunks these give the whole LFL fit, training embedding included, from
**one pass**. The projection R is never stored.

Each chunk is centred, X_cj = X_j - 1 c_j^T, and the products run on the
centred chunk in the working dtype (float32 for float32 data under the default
``precision="auto"``, float64 otherwise). The offsets are added back in float64
(X C^T = X_c (C - 1 c^T)^T + (X_c c) 1^T + 1 (C c)^T and X R = X_c R + 1 (R^T c)^T),
so the results mean the same as products of the raw data and equal them to
float32 round-off of the *centred* data, however large the features' offsets.

Float32 products on a float32 chunk (the default for float32 stores) run in
row tiles that stay in cache (:func:`_lfl_swept_chunk`): c_j is the mean of a
sample of rows, and the chunk is swept from memory twice (class sums, then the
products), once with class medians, instead of once per step. Other dtypes
centre by the feature means (:func:`wideml.passes.chunkmath.centre`) and
multiply the whole chunk.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import aligned_blocks, feature_stripes, materialise, shared
from wideml.passes.chunkmath import as_float64, centre, class_medians, class_sums, means_from_class_sums, work_dtype
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS, FEATURE_MEAN
from wideml.passes.keyed_random import sparse_projection_rows
from wideml.passes.outputs import write_output
from wideml.passes.loadings import add_arrays, centred_product
from wideml.passes.reduce import Sums, fold_in_lanes, sum_chunk_results, tree_reduce
from wideml.passes.spec import Pass
from wideml.runtime.scratch import scratch


def _times_sparse(x: np.ndarray, R) -> np.ndarray:
    """x @ R for dense x (n x p_j) and very sparse R (p_j x k), returned in float64.

    scipy's dense-times-sparse transposes and copies x; gathering the few
    (~p_j k density) columns R touches, in x's dtype, and mixing them into k
    outputs with one small product costs next to nothing instead.
    """
    coo = R.tocoo()
    if not coo.nnz:
        return np.zeros((x.shape[0], R.shape[1]))
    cols, inverse = np.unique(coo.row, return_inverse=True)  # each touched feature gathered once
    mix = np.zeros((len(cols), R.shape[1]), dtype=x.dtype)
    mix[inverse, coo.col] = coo.data
    return as_float64(np.take(x, cols, axis=1) @ mix)  # np.take: ~3x faster than x[:, cols] on a C-ordered chunk


def _sparse_t_times(R, v: np.ndarray) -> np.ndarray:
    """R^T v (k,) in float64."""
    return np.asarray(R.T @ v, dtype=np.float64).ravel()


#: Bytes of one row tile in :func:`_lfl_swept_chunk` (about a core's L2 here; measured best of 128 KiB - 4 MiB on the 2 GB store).
_TILE_BYTES = 1 << 20

#: About this many evenly spaced rows give the swept path's centring vector.
_CENTRE_ROWS = 64

#: Centre a chunk the task owns in place (its second sweep then only reads) instead of each tile twice in cache.
_CENTRE_IN_PLACE = True


def _lfl_swept_chunk(block, offset, codes, n_classes, robust, seed, k, density, out_group, inplace, scheme="columns"):
    """:func:`_lfl_fit_chunk` for float32 products on a float32 chunk, in row tiles: **two sweeps** of the chunk
    from memory (one when ``robust``), no chunk-sized copy.

    The centring vector ``c`` is the float32 mean of about :data:`_CENTRE_ROWS`
    evenly spaced rows (known before any sweep; any ``c`` near the data keeps
    the float32 products as exact as on mean-centred data, and the offsets are
    added back in float64). Each row tile (:data:`_TILE_BYTES`) is centred
    and multiplied while it is in cache: the first sweep accumulates the class
    sums Y^T X_c (K x p_j), which give the class means; the second multiplies
    X_c [C - c, c]^T (n x (K + 1)) and gathers the few columns the sparse
    projection touches. With class medians (known before the sweeps) both
    happen in one sweep. ``inplace`` (a chunk the task owns) centres the chunk
    itself, so the second sweep only reads; otherwise each tile is centred
    into a cache-sized buffer, twice.

    Returns
    -------
    Sums as :func:`_lfl_fit_chunk`, or None when the chunk holds
    NaN/inf or its float32 sums or products overflow (the caller redoes the
    chunk in float64 from the stored values; an ``inplace`` chunk has then been
    partly overwritten and must be read again).
    """
    n, w = block.shape
    with np.errstate(over="ignore", invalid="ignore"):
        sample = block[:: max(1, n // _CENTRE_ROWS)]
        c = sample.sum(axis=0, dtype=np.float32) / np.float32(sample.shape[0])
    if not np.isfinite(c).all():
        return None
    c64 = c.astype(np.float64)
    Yt = np.zeros((n_classes, n), dtype=np.float32)
    Yt[codes, np.arange(n)] = 1
    counts = np.bincount(codes, minlength=n_classes)
    R = sparse_projection_rows(seed, offset, offset + w, k, density, scheme).tocoo()
    cols, inverse = np.unique(R.row, return_inverse=True)  # each touched feature gathered once
    mix = np.zeros((len(cols), k), dtype=np.float32)
    mix[inverse, R.col] = R.data
    rows = max(1, min(n, _TILE_BYTES // (4 * w)))
    medians = class_medians(block, codes, n_classes) if robust else None  # before the chunk is centred in place
    buf = None if inplace else scratch((rows, w), np.float32)  # (taken after anything that may use scratch itself)
    S, part = np.zeros((n_classes, w)), np.empty((n_classes, w), dtype=np.float32)
    P, G = np.empty((n, n_classes + 1), dtype=np.float32), np.empty((n, len(cols)), dtype=np.float32)

    def sweep(first: bool, VT) -> None:
        starts = range(0, n, rows)
        for a in (reversed(starts) if first else starts):  # each sweep starts where the read or the last sweep ended (in cache)
            b = min(n, a + rows)
            t = block[a:b] if inplace else buf[: b - a]
            if first or not inplace:
                np.subtract(block[a:b], c, out=t)
            if first:
                np.matmul(Yt[:, a:b], t, out=part)
                np.add(S, part, out=S)
            if VT is not None:
                np.matmul(t, VT, out=P[a:b])
                if len(cols):
                    np.take(t, cols, axis=1, out=G[a:b], mode="clip")

    with np.errstate(over="ignore", invalid="ignore"):
        sweep(True, _centroid_offsets(medians, c64) if robust else None)
        means = c64 + S / np.maximum(counts, 1)[:, None]
        cent = medians if robust else means
        if not robust and np.isfinite(S).all():
            sweep(False, _centroid_offsets(means, c64))
        XR = as_float64(G @ mix)
    if not (np.isfinite(S).all() and np.isfinite(P).all() and np.isfinite(XR).all()):
        return None
    m = means_from_class_sums(c64, S, n)
    write_output(out_group, CLASS_MEANS, means, offset)
    write_output(out_group, FEATURE_MEAN, m, offset)
    if robust:
        write_output(out_group, CLASS_MEDIANS, cent, offset)
    P = as_float64(P)
    XC = P[:, :n_classes] + P[:, n_classes:] + (cent @ c64)  # X C^T = X_c (C - c)^T + (X_c c) 1^T + 1 (C c)^T
    stats = {"XC": XC, "CC": cent @ cent.T, "mC": cent @ m, "XR": XR + _rt_times(R, c64, k), "mR": _rt_times(R, m, k)}
    if out_group is None:
        stats["centroids"] = [cent]
    return Sums(stats)


def _rt_times(R, v: np.ndarray, k: int) -> np.ndarray:
    """R^T v (k,) in float64, straight from the COO triplets of R.

    ``np.bincount`` returns int64 zeros when the chunk's slice of R is empty
    (a narrow chunk: about p_j k density non-zeros, often none), which
    the float64 sums across chunks could not add into; the cast keeps every
    chunk's result float64.
    """
    return np.bincount(R.col, weights=R.data * v[R.row], minlength=k).astype(np.float64, copy=False)


def _centroid_offsets(cent: np.ndarray, c64: np.ndarray) -> np.ndarray:
    """[C - c, c]^T (p_j x (K + 1)), float32 and C-ordered: the right-hand side of a tile's product."""
    return np.ascontiguousarray(np.vstack([cent - c64, c64]).T.astype(np.float32))


def _lfl_fit_chunk(block, offset, codes, n_classes, robust, seed, k, density, out_group, precision="auto", scheme="columns"):
    """One chunk of the LFL fit pass (the chunk is read once: part of **one pass** over X).

    Parameters
    ----------
    block : ndarray of shape (n_samples, p_j)
    offset : int
        Global index of the chunk's first feature.
    codes, n_classes, robust, seed, k, density, out_group, scheme
        As in :func:`lfl_fit_pass` (k = ``n_random``).
    precision : {"auto", "float64", "float32"}
        Working precision of the chunk products.

    Returns
    -------
    Sums
        XC (n x K), CC (K x K), mC (K,), XR (n x k), mR (k,), all float64 and
        meaning products of the raw chunk, plus the piece "centroids" (K x p_j)
        without ``out_group``; or the chunk's first non-finite entry.
    """
    stripe = block
    block, owned = materialise(stripe)
    dt = work_dtype(block.dtype, precision)
    if block.dtype == np.float32 and dt == np.float32 and block.shape[0] and block.shape[1]:
        inplace = _CENTRE_IN_PLACE and owned and block.flags.c_contiguous and block.flags.writeable
        swept = _lfl_swept_chunk(block, int(offset), codes, n_classes, robust, seed, k, density, out_group, inplace, scheme)
        if swept is not None:
            return swept
        # NaN/inf (reported below, by feature index) or float32 overflow: redo the chunk in float64
        dt = np.dtype(np.float64)
        if inplace:
            block, owned = materialise(stripe)  # the swept path overwrote part of it
    medians = class_medians(block, codes, n_classes) if robust else None  # before an owned block is centred in place
    x, m, c, bad = centre(block, int(offset), dt, reuse=not owned, inplace=owned, mean=False)
    if bad is not None:
        return Sums(error=bad)
    counts = np.bincount(codes, minlength=n_classes)
    S = class_sums(x, codes, n_classes)
    means = c + S / np.maximum(counts, 1)[:, None]
    if m is None:  # from the class sums: no extra sweep over the chunk
        m = means_from_class_sums(c, S, x.shape[0])
    cent = medians if robust else means
    write_output(out_group, CLASS_MEANS, means, offset)
    write_output(out_group, FEATURE_MEAN, m, offset)
    if robust:
        write_output(out_group, CLASS_MEDIANS, cent, offset)
    # One product for X_c (C - c)^T and r = X_c c; X C^T = X_c (C - c)^T + r 1^T + 1 (C c)^T.
    P = as_float64(x @ np.vstack([cent - c, c]).T.astype(dt))
    XC = P[:, :n_classes] + P[:, n_classes:] + (cent @ c)
    R = sparse_projection_rows(seed, int(offset), int(offset) + x.shape[1], k, density, scheme)
    XR = _times_sparse(x, R) + _sparse_t_times(R, c)  # X R = X_c R + 1 (R^T c)^T
    stats = {"XC": XC, "CC": cent @ cent.T, "mC": cent @ m, "XR": XR, "mR": _sparse_t_times(R, m)}
    if out_group is None:
        stats["centroids"] = [cent]
    return Sums(stats)


def lfl_fit_pass(X: da.Array, codes, n_classes: int, *, n_random: int, seed: int, density: float, robust: bool, out_group: str | None,
                 precision: str = "auto", checkpoint=None, scheme: str = "columns"):
    """Lazy one-pass LFL fit (**one pass** over X).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    codes : ndarray of int, shape (n_samples,)
    n_classes : int
    n_random : int
        k, the number of sparse random directions.
    seed : int
    density : float
        Fraction of non-zero entries of R.
    robust : bool
        Class medians instead of means.
    out_group : str or None
        zarr group receiving the centroids; without it the centroids (K x p) are returned in memory.
    precision : {"auto", "float64", "float32"}, default "auto"
        Dtype of each chunk's products ("auto": float32 for float32 data,
        float64 otherwise; see :func:`wideml.passes.chunkmath.work_dtype`).
        Means, centroids, offsets and sums across chunks are always float64.
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable (needs ``out_group``): the chunk sums are
        folded in lanes saved at the checkpoint interval, and a chunk a saved
        lane holds is not read again (its centroids are already in ``out_group``).
    scheme : {"columns", "tiles"}, default "columns"
        How R is generated (:func:`wideml.passes.keyed_random.sparse_projection_rows`):
        "columns" is nested in ``n_random``; "tiles" only for models saved before it.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict with XC = X C^T (n x K, raw X), CC = C C^T (K x K),
        mC = C m (K,), XR = X R (n x k, raw X), mR = R^T m (k,), with m the
        feature means, and "centroids" C (K x p) when ``out_group`` is None.

    Raises
    ------
    NonFiniteError
        When computed, if X holds NaN or inf (the lowest such feature index is named).
    """
    work_dtype(X.dtype, precision)  # validate early
    stripes, offsets = feature_stripes(X, direct=True)
    codes_d = shared(codes)
    args = [(s, int(o), codes_d, n_classes, robust, seed, n_random, density, out_group, precision, scheme) for s, o in zip(stripes, offsets)]
    if checkpoint is not None and out_group is not None:
        total = fold_in_lanes(_lfl_fit_chunk, args, checkpoint=checkpoint)
    else:
        total = sum_chunk_results(_lfl_fit_chunk, args)
    return dask.delayed(_finish_fit, pure=True)(total)


def _finish_fit(total: Sums) -> dict:
    """The summed statistics (raising on a non-finite entry), with the centroids of in-memory chunks stacked in feature order."""
    stats = dict(total.finish())
    if "centroids" in stats:
        stats["centroids"] = np.hstack(stats["centroids"])
    return stats


class LflPass(Pass):
    """The LFL fit pass as the fit runner runs it (:func:`lfl_fit_pass`; **one pass** over X).

    Parameters are those of :func:`lfl_fit_pass`. Its checkpoint (``"lfl"``)
    holds the lanes' sums (only with ``out_group``: the centroids are then in
    the model group), then the result dict.
    """

    kind = "lfl"

    def __init__(self, X: da.Array, codes, n_classes: int, **options):
        super().__init__()
        self.X, self.codes, self.n_classes, self.options = X, codes, n_classes, options

    def graph(self, lanes=None):
        return lfl_fit_pass(self.X, self.codes, self.n_classes, checkpoint=lanes, **self.options)

    def key(self) -> dict:
        return {name: value for name, value in self.options.items() if name != "out_group"}


def _lfl_project_chunk(block, offset, cent_block, Dm, seed, k, density, precision="auto", scheme="columns"):
    """X_j [C_j^T Dm, R_j] (n x d, float64) for one chunk, through :func:`~wideml.passes.loadings.centred_product`.

    X W = X_c W + 1 (c^T W) with X_c = X - 1 c^T, c the chunk's feature means
    rounded to the working dtype: the product runs in that dtype on centred
    data (no float64 copy of float32 data, no precision lost to offsets) and
    the offset term in float64; the sparse part X R = X_c R + 1 (R^T c)^T on
    the same centred chunk. Raises NonFiniteError on NaN/inf.
    """
    out, x, c = centred_product(block, offset, np.asarray(cent_block, dtype=np.float64).T @ Dm, precision)
    if k:
        R = sparse_projection_rows(seed, int(offset), int(offset) + x.shape[1], k, density, scheme)
        out = np.hstack([out, _times_sparse(x, R) + _sparse_t_times(R, c)])
    return out


def lfl_project_pass(X: da.Array, centroids, Dm: np.ndarray, *, n_random: int, seed: int, density: float, precision: str = "auto",
                     scheme: str = "columns"):
    """Lazy raw projection X [C^T Dm, R] over feature chunks (**one pass** over X).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    centroids : ndarray or dask array of shape (n_classes, n_features)
        Read chunk by chunk, aligned with X's chunks.
    Dm : ndarray of shape (n_classes, n_deltas)
    n_random, seed, density, scheme
        The sparse projection R (regenerated, never stored; ``scheme`` as in :func:`lfl_fit_pass`).
    precision : {"auto", "float64", "float32"}, default "auto"
        Dtype of each chunk's products (on the chunk centred by its own means).

    Returns
    -------
    dask.delayed.Delayed
        Computes to the n x (n_deltas + n_random) float64 projection.
    """
    work_dtype(X.dtype, precision)  # validate early
    stripes, offsets = feature_stripes(X, direct=True)
    cents = aligned_blocks(centroids, X.chunks[1], offsets, axis=1)
    task = dask.delayed(_lfl_project_chunk, pure=True)
    parts = [task(s, int(o), c, Dm, seed, n_random, density, precision, scheme) for s, o, c in zip(stripes, offsets, cents)]
    return tree_reduce(parts, add_arrays)


def lfl_components(centroids, Dm: np.ndarray, *, n_features: int, n_random: int, seed: int, density: float, chunk: int,
                   scheme: str = "columns") -> da.Array:
    """Lazy dense loadings [C^T Dm, R] (p x d), generated chunk by chunk on demand (never stored)."""
    C = centroids if isinstance(centroids, da.Array) else da.from_array(centroids, chunks=(centroids.shape[0], chunk))
    Ct = C.T.rechunk((chunk, C.shape[0]))

    def block(ct, block_info=None):
        start, stop = block_info[0]["array-location"][0]
        parts = [np.asarray(ct, dtype=np.float64) @ Dm]
        if n_random:
            parts.append(sparse_projection_rows(seed, start, stop, n_random, density, scheme).toarray())
        return np.hstack(parts)

    d = Dm.shape[1] + n_random
    return Ct.map_blocks(block, chunks=(Ct.chunks[0], (d,)), dtype=np.float64, meta=np.empty((0, 0)))
