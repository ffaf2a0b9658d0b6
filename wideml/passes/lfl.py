"""LFL passes: class centroids plus a very sparse random projection, in one pass.

For each feature chunk X_j the task computes the class centroids C_j (means or
medians, K x p_j; written to the model group), the training-data products
X_j C_j^T (n x K) and X_j R_j (n x k) with R_j the chunk's rows of the sparse
projection generated from (seed, feature index), the centroids' Gram
C_j C_j^T, and the feature means' products m_j^T C_j^T and m_j^T R_j. Summed
over chunks these give the whole LFL fit, training embedding included, from
**one pass**. The projection R is never stored.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import check_finite, feature_stripes, first_nonfinite, nonfinite_error, tree_reduce
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS, FEATURE_MEAN, _group_medians, _write
from wideml.passes.keyed_random import sparse_sign_rows


def _times_sparse(x: np.ndarray, R) -> np.ndarray:
    """x @ R for dense x (n x p_j) and very sparse R (p_j x k): gather the few columns R touches.

    scipy's dense-times-sparse transposes and copies x; gathering the ~p_j k density
    columns and summing them into k outputs costs next to nothing instead.
    """
    coo = R.tocoo()
    out = np.zeros((x.shape[0], R.shape[1]))
    if coo.nnz:
        mix = np.zeros((coo.nnz, R.shape[1]))
        mix[np.arange(coo.nnz), coo.col] = coo.data
        out = (x[:, coo.row] @ mix).astype(np.float64, copy=False)
    return out


def _lfl_fit_chunk(block, offset, codes, n_classes, robust, seed, k, density, out_group):
    block = np.asarray(block)
    bad = first_nonfinite(block, int(offset))
    if bad is not None:
        return None, bad
    x = block.astype(np.float64, copy=False)
    m = x.mean(axis=0)
    onehot = np.zeros((len(codes), n_classes))
    onehot[np.arange(len(codes)), codes] = 1.0
    means = (onehot.T @ x) / np.maximum(onehot.sum(axis=0), 1)[:, None]
    cent = _group_medians(block, codes, n_classes) if robust else means
    _write(out_group, CLASS_MEANS, means, offset)
    _write(out_group, FEATURE_MEAN, m, offset)
    if robust:
        _write(out_group, CLASS_MEDIANS, cent, offset)
    R = sparse_sign_rows(seed, int(offset), int(offset) + x.shape[1], k, density)
    XR = _times_sparse(x, R)
    stats = {"XC": x @ cent.T, "CC": cent @ cent.T, "mC": m @ cent.T, "XR": XR, "mR": np.asarray(R.T @ m).ravel()}
    if out_group is None:
        stats["cent"] = cent
    return stats, None


def _combine(*parts):
    bads = [p[1] for p in parts if p[1] is not None]
    if bads:
        return None, min(bads)
    total = {key: val.copy() for key, val in parts[0][0].items() if key != "cent"}
    for p, _ in parts[1:]:
        for key in total:
            total[key] += p[key]
    return total, None


def lfl_fit_pass(X: da.Array, codes, n_classes: int, *, n_random: int, seed: int, density: float, robust: bool, out_group: str | None):
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

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict with XC (n x K), CC (K x K), mC (K,), XR (n x k), mR (k,),
        and "centroids" (K x p) when ``out_group`` is None.
    """
    stripes, offsets = feature_stripes(X)
    task = dask.delayed(_lfl_fit_chunk, pure=True)
    parts = [task(s, int(o), codes, n_classes, robust, seed, n_random, density, out_group) for s, o in zip(stripes, offsets)]
    total = tree_reduce(parts, _combine) if len(parts) > 1 else dask.delayed(_combine, pure=True)(parts[0])

    def finish(total, *chunks):
        stats, bad = total
        if bad is not None:
            raise nonfinite_error(bad)
        if chunks:
            stats["centroids"] = np.hstack([c[0]["cent"] for c in chunks])
        return stats

    extra = parts if out_group is None else []
    return dask.delayed(finish, pure=True)(total, *extra)


def _lfl_project_chunk(block, offset, cent_block, Dm, seed, k, density):
    block = np.asarray(block)
    check_finite(block, int(offset))
    x = block.astype(np.float64, copy=False)
    out = x @ (np.asarray(cent_block, dtype=np.float64).T @ Dm)
    if k:
        R = sparse_sign_rows(seed, int(offset), int(offset) + x.shape[1], k, density)
        out = np.hstack([out, _times_sparse(x, R)])
    return out


def lfl_project_pass(X: da.Array, centroids, Dm: np.ndarray, *, n_random: int, seed: int, density: float):
    """Lazy X [C^T Dm, R] over feature chunks (**one pass** over X; R regenerated, centroids read chunk by chunk)."""
    from wideml.passes.loadings import _add, _aligned_blocks

    stripes, offsets = feature_stripes(X)
    cents = _aligned_blocks(centroids, X.chunks[1], offsets, axis=1)
    task = dask.delayed(_lfl_project_chunk, pure=True)
    parts = [task(s, int(o), c, Dm, seed, n_random, density) for s, o, c in zip(stripes, offsets, cents)]
    return tree_reduce(parts, _add) if len(parts) > 1 else parts[0]


def lfl_components(centroids, Dm: np.ndarray, *, n_features: int, n_random: int, seed: int, density: float, chunk: int) -> da.Array:
    """Lazy dense loadings [C^T Dm, R] (p x d), generated chunk by chunk on demand (never stored)."""
    C = centroids if isinstance(centroids, da.Array) else da.from_array(centroids, chunks=(centroids.shape[0], chunk))
    Ct = C.T.rechunk((chunk, C.shape[0]))

    def block(ct, block_info=None):
        start, stop = block_info[0]["array-location"][0]
        parts = [np.asarray(ct, dtype=np.float64) @ Dm]
        if n_random:
            parts.append(sparse_sign_rows(seed, start, stop, n_random, density).toarray())
        return np.hstack(parts)

    d = Dm.shape[1] + n_random
    return Ct.map_blocks(block, chunks=(Ct.chunks[0], (d,)), dtype=np.float64, meta=np.empty((0, 0)))
