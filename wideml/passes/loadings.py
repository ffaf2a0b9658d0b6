"""Passes that use a fitted projection: emit p-sized loadings, project new data.

Loadings A (p x d) are written chunk-aligned with X, so their chunk j is
computed from X's chunk j alone: A_j = X_j^T B + M_j^T D_m, with M_j the
chunk's class medians (read back from the model group) when D_m is
non-zero. The same task returns m_j^T A_j (m_j the chunk's feature means),
whose sum is the offset that maps raw projections X_new A onto the
centred coordinates used during fit.

:func:`centred_product` is the one recipe projecting a chunk of new data
through fitted loadings (the Gram projections' :func:`project_pass` and LFL's
projection use it); :class:`EmitPass` is the emit pass as the fit runner runs it.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import zarr

from wideml.passes.blocks import aligned_blocks, feature_stripes, materialise, nonfinite_error, shared
from wideml.passes.chunkmath import as_float64, centre, work_dtype
from wideml.passes.gram import FEATURE_MEAN
from wideml.passes.outputs import write_output
from wideml.passes.reduce import Sums, fold_in_lanes, sum_chunk_results, tree_reduce
from wideml.passes.spec import Pass, digest
from wideml.passes.timing import phase, product

LOADINGS = "loadings"


def _emit_chunk(block, offset, B, Dm, med, group_path, keep, embed, precision):
    block, owned = materialise(block)
    dt = work_dtype(block.dtype, precision)
    with phase("centring"):
        x, _, c, bad = centre(block, offset, dt, reuse=not owned, inplace=owned, mean=False)  # the Gram pass's centring vector, recomputed identically
    if bad is not None:
        raise nonfinite_error(bad)
    # A = X^T B = X_c^T B + c (1^T B): the product runs on centred data, so float32 loses nothing to offsets
    A = as_float64(product(x.T, B.astype(dt))) + np.outer(c, B.sum(axis=0))
    if Dm is not None:
        A += np.asarray(med, dtype=np.float64).T @ Dm
    shift = c @ A
    if group_path is not None:
        with phase("writes"):
            write_output(group_path, LOADINGS, A, int(offset), axis=0)
    XA, AtA = (as_float64(product(x, A.astype(dt))) + shift, A.T @ A) if embed else (None, None)
    return Sums({"shift": shift, "A": [A] if keep else None, "XA": XA, "AtA": AtA})


def _emitted(total: Sums) -> tuple:
    sums = total.finish()
    A = np.vstack(sums["A"]) if sums["A"] is not None else None  # in-memory loadings, in feature order
    return sums["shift"], A, sums["XA"], sums["AtA"]


def emit_pass(
    X: da.Array,
    B: np.ndarray,
    Dm: np.ndarray | None = None,
    group_path: str | None = None,
    medians=None,
    with_embedding: bool = False,
    precision: str = "auto",
    checkpoint=None,
):
    """Lazy graph computing the loadings A = X^T B + M^T Dm chunk by chunk (**one pass** over X).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    B : ndarray of shape (n_samples, d)
        Coefficients on the samples (zero rows for samples outside the training set).
    Dm : ndarray of shape (n_classes, d), optional
        Coefficients on the class medians.
    medians : ndarray or dask array of shape (n_classes, n_features), optional
        The class medians (needed with ``Dm``), read chunk by chunk.
    group_path : str, optional
        zarr group holding an empty ``loadings`` array (p, d) chunked like X,
        filled in place. Without it, the loadings are returned in memory
        (only for data that fits in RAM anyway).
    with_embedding : bool
        Also accumulate X A (n x d) and A^T A (d x d) in the same pass (the
        randomized solver has no Gram to get them from).
    precision : {"auto", "float64", "float32"}
        Dtype of the chunk products, as in the Gram pass (whose centring
        vector this pass recomputes, so ``shift`` matches the Gram exactly).
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        With ``group_path``: makes the pass resumable. Chunks are folded in
        lanes saved at the checkpoint interval; a chunk a saved lane holds has
        its loadings in the group already and is not read again.

    Returns
    -------
    dask.delayed.Delayed
        Computes to ``(shift, A, XA, AtA)``: shift = m^T A (d,), with m the
        centring vector (the feature means rounded to the working dtype); A the (p, d) loadings when ``group_path`` is None, else
        None; XA and AtA when ``with_embedding``, else None.
    """
    stripes, offsets = feature_stripes(X, direct=True)
    keep = group_path is None
    med_blocks = aligned_blocks(medians, X.chunks[1], offsets, axis=1) if Dm is not None else [None] * len(stripes)
    B_d, Dm_d = shared(B), shared(Dm)
    args = [(s, int(o), B_d, Dm_d, mb, group_path, keep, with_embedding, precision) for s, o, mb in zip(stripes, offsets, med_blocks)]
    if checkpoint is not None and not keep:
        total = fold_in_lanes(_emit_chunk, args, checkpoint=checkpoint)
    else:
        total = sum_chunk_results(_emit_chunk, args)
    return dask.delayed(_emitted, pure=True)(total)


class EmitPass(Pass):
    """The emit pass as the fit runner runs it (:func:`emit_pass`; **one pass** over X).

    Parameters are those of :func:`emit_pass`. Its checkpoint (``"emit"``,
    keyed by a digest of B and Dm) holds the lanes' sums (with a
    ``group_path``, where the loadings of the chunks already folded are), then
    the result tuple.
    """

    kind = "emit"

    def __init__(self, X: da.Array, B: np.ndarray, Dm: np.ndarray | None = None, **options):
        super().__init__()
        self.X, self.B, self.Dm, self.options = X, B, Dm, options

    def graph(self, lanes=None):
        return emit_pass(self.X, self.B, self.Dm, checkpoint=lanes, **self.options)

    def key(self) -> dict:
        return {"B": digest(self.B, self.Dm)}


#: Features per block when the loadings are assembled from the model group.
ASSEMBLE_BLOCK = 16_384


def assemble_loadings(group_path: str, widths, centroids: str, basis_dir: str, E: np.ndarray, Ws: np.ndarray):
    """Lazy graph writing the loadings A = [C^T E, Z Ws] into ``group_path`` from p-sized arrays alone (**no pass** over X).

    After the randomized solver's final pass, the model group holds the class
    centroids C (K x p) and the feature means m (p,), and ``basis_dir`` one
    ``<offset>.npy`` file per feature chunk with its rows of Z = M^T Q (p_j x l).
    The loadings are assembled in blocks of about :data:`ASSEMBLE_BLOCK`
    features (whole chunks), one task per block, so memory does not grow with
    p and the blocks run in parallel.

    Parameters
    ----------
    group_path : str
        zarr group with ``centroids``, ``feature_mean`` and an empty
        ``loadings`` array (p, d) chunked like X.
    widths : sequence of int
        X's feature-chunk widths.
    centroids : str
        Name of the centroid array (class medians or class means).
    basis_dir : str
        Folder of the final pass's Z files.
    E : ndarray of shape (n_classes, n_delta)
        Coefficients of the centroid differences.
    Ws : ndarray of shape (l, n_eigen)
        Ritz rotation scaled by 1/sqrt(eigenvalue).

    Returns
    -------
    dask.delayed.Delayed
        Computes to (shift, AtA): shift = m^T A, shape (d,), and A^T A, shape (d, d).
    """
    bounds = np.concatenate([[0], np.cumsum(widths)]).astype(int)
    task = dask.delayed(_assemble_block, pure=True)
    E_d, Ws_d = shared(E), shared(Ws)
    parts, start = [], 0
    while start < len(widths):
        stop = start + 1
        while stop < len(widths) and bounds[stop + 1] - bounds[start] <= ASSEMBLE_BLOCK:
            stop += 1
        parts.append(task(group_path, centroids, basis_dir, bounds[start : stop + 1].tolist(), E_d, Ws_d))
        start = stop
    return tree_reduce(parts, _add_pairs) if len(parts) > 1 else parts[0]


def _assemble_block(group_path: str, centroids: str, basis_dir: str, bounds: list, E: np.ndarray, Ws: np.ndarray):
    """Loadings of the features ``bounds[0]:bounds[-1]`` (whole chunks), written in place; returns (m^T A, A^T A) of the block."""
    a, b = int(bounds[0]), int(bounds[-1])
    d = E.shape[1] + Ws.shape[1]
    group = zarr.open_group(group_path, mode="r+")
    A = np.empty((b - a, d))
    if E.shape[1]:
        A[:, : E.shape[1]] = np.asarray(group[centroids][:, a:b], dtype=np.float64).T @ E
    if Ws.shape[1]:
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            Z = np.load(f"{basis_dir}/{int(lo)}.npy", allow_pickle=False)
            np.matmul(Z, Ws, out=A[lo - a : hi - a, E.shape[1] :])
    write_output(group_path, LOADINGS, A, a, axis=0)
    return np.asarray(group[FEATURE_MEAN][a:b], dtype=np.float64) @ A, A.T @ A


def _add_pairs(*parts):
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


def centred_product(block, offset: int, W, precision: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X_j W (m x d, float64) for one chunk of new data, via the chunk centred by its own means: X W = X_c W + 1 (c^T W).

    The one projection recipe of new data through fitted loadings. The
    product runs in the working dtype on centred data (float32 stores lose
    nothing to feature offsets), the rank-one offset term in float64.

    Returns
    -------
    (X_j W, x, c)
        The projection, the centred chunk X_c (working dtype) and its centring
        vector c (for further products of the same chunk, e.g. LFL's sparse part).

    Raises
    ------
    NonFiniteError
        If the chunk holds NaN or inf.
    """
    block, owned = materialise(block)
    dt = work_dtype(block.dtype, precision)
    x, _, c, bad = centre(block, int(offset), dt, reuse=not owned, inplace=owned, mean=False)
    if bad is not None:
        raise nonfinite_error(bad)
    W = np.asarray(W, dtype=np.float64)
    return as_float64(x @ W.astype(dt)) + c @ W, x, c


def _project_chunk(block, offset, A_block, precision="auto"):
    """X_j A_j (m x d, float64): :func:`centred_product` with the chunk's rows of the loadings."""
    return centred_product(block, offset, A_block, precision)[0]


def add_arrays(*parts: np.ndarray) -> np.ndarray:
    """The sum of arrays, touching none of them (a tree reduction's combine for a pass summing one array)."""
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def project_pass(X: da.Array, A, precision: str = "auto") -> "dask.delayed.Delayed":
    """Lazy X @ A over feature chunks (**one pass** over X; A is read chunk by chunk).

    Parameters
    ----------
    X : dask.array.Array of shape (m, p)
    A : ndarray or dask.array.Array or zarr array of shape (p, d)
    precision : {"auto", "float64", "float32"}
        Dtype of the chunk products (each chunk is centred first, the offset
        term is added in float64).

    Returns
    -------
    dask.delayed.Delayed
        Computes to an ndarray of shape (m, d).
    """
    stripes, offsets = feature_stripes(X, direct=True)
    A_blocks = aligned_blocks(A, X.chunks[1], offsets, axis=0)
    task = dask.delayed(_project_chunk, pure=True)
    parts = [task(s, int(o), a, precision) for s, o, a in zip(stripes, offsets, A_blocks)]
    return tree_reduce(parts, add_arrays)
