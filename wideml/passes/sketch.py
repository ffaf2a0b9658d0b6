"""Randomized range finder passes on the class-centred (or pooled-centred) operator.

With M = X_c the centred data (each sample minus its class mean, chunk-locally:
X_cj = X_j - Y M_j with M_j the chunk's class means), the passes compute

- the sketch  Y = M Omega = sum_j X_cj Omega_j, with Omega_j the rows of a
  Gaussian p x l matrix generated from (seed, global feature index);
- a power step Y = M M^T Q = sum_j X_cj (X_cj^T Q), which never stores a
  p-sized intermediate.

The first (sketch) pass also accumulates the class centroids' K x K Gram (means,
and medians when asked) and writes the p-sized class statistics into a model
group, exactly like the Gram pass. q power iterations cost q + 2 passes in all
(sketch, q power steps, and the final step used for the Rayleigh-Ritz solve).
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import feature_stripes, first_nonfinite, nonfinite_error, sub_stripe_width, tree_reduce
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS, FEATURE_MEAN, _group_medians, _write
from wideml.passes.keyed_random import gaussian_rows

CENTRINGS = ("class", "pooled")


def _feature_and_class_means(x: np.ndarray, codes: np.ndarray, n_classes: int):
    """Feature means (p_j,) and class means (K x p_j) of a chunk x (n x p_j)."""
    m = x.mean(axis=0)
    onehot = np.zeros((len(codes), n_classes))
    onehot[np.arange(len(codes)), codes] = 1.0
    means = (onehot.T @ x) / np.maximum(onehot.sum(axis=0), 1)[:, None]
    return m, means


def _sketch_chunk(block, offset, codes, n_classes, centring, seed, n_cols, Q, medians, out_group, width=None):
    """One chunk of a sketch or power pass, in sub-stripes of at most ``width`` features."""
    block = np.asarray(block)
    bad = first_nonfinite(block, int(offset))
    if bad is not None:
        return None, None, None, bad
    width = block.shape[1] if not width else int(width)
    parts, outputs = [], []
    for a in range(0, block.shape[1], width):
        part, out = _sketch_stripe(block[:, a : a + width], int(offset) + a, codes, n_classes, centring, seed, n_cols, Q,
                                   medians, out_group is not None)
        parts.append(part)
        outputs.append(out)
    if out_group is not None and Q is None:
        for name in outputs[0]:
            _write(out_group, name, np.concatenate([o[name] for o in outputs], axis=-1), int(offset))
    return _combine(*parts) if len(parts) > 1 else parts[0]


def _sketch_stripe(block, offset, codes, n_classes, centring, seed, n_cols, Q, medians, keep):
    outputs = {}
    x = block.astype(np.float64, copy=True)
    m, means = _feature_and_class_means(x, codes, n_classes)
    first = Q is None
    cg_means = cg_meds = None
    if first:
        mc = means - m
        cg_means = mc @ mc.T
        if medians:
            M = _group_medians(block, codes, n_classes)
            cg_meds = (M - m) @ (M - m).T
            if keep:
                outputs[CLASS_MEDIANS] = M
        if keep:
            outputs[CLASS_MEANS] = means
            outputs[FEATURE_MEAN] = m
    if centring == "class":
        x -= means[codes]
    else:
        x -= m
    if first:
        Y = x @ gaussian_rows(seed, int(offset), int(offset) + x.shape[1], n_cols)
    else:
        Y = x @ (x.T @ Q)
    return (Y, cg_means, cg_meds, None), outputs


def _combine(*parts):
    bads = [p[3] for p in parts if p[3] is not None]
    if bads:
        return None, None, None, min(bads)
    Y = parts[0][0].copy()
    cgm = None if parts[0][1] is None else parts[0][1].copy()
    cgd = None if parts[0][2] is None else parts[0][2].copy()
    for p in parts[1:]:
        Y += p[0]
        if cgm is not None:
            cgm += p[1]
        if cgd is not None:
            cgd += p[2]
    return Y, cgm, cgd, None


def _finish(total):
    Y, cgm, cgd, bad = total
    if bad is not None:
        raise nonfinite_error(bad)
    return Y, cgm, cgd


def sketch_pass(
    X: da.Array,
    codes: np.ndarray,
    n_classes: int,
    *,
    n_cols: int,
    seed: int,
    centring: str = "class",
    Q: np.ndarray | None = None,
    medians: bool = False,
    out_group: str | None = None,
):
    """Lazy graph of one randomized pass (**one pass** over X).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    codes : ndarray of int, shape (n_samples,)
    n_classes : int
    n_cols : int
        l, the sketch width (d + oversampling).
    seed : int
        Seed of the Gaussian test matrix (rows keyed on the global feature index).
    centring : {"class", "pooled"}
    Q : ndarray of shape (n_samples, l), optional
        Without Q: the sketch pass Y = X_c Omega (plus class statistics).
        With Q: a power step Y = X_c X_c^T Q.
    medians : bool
        Also compute class medians (sketch pass only).
    out_group : str, optional
        zarr group receiving feature means, class means (and medians).

    Returns
    -------
    dask.delayed.Delayed
        Computes to (Y (n x l), centroid Gram of the centred class means (K x K) or None,
        centroid Gram of the centred class medians or None).
    """
    if centring not in CENTRINGS:
        raise ValueError(f"centring must be one of {CENTRINGS}")
    stripes, offsets = feature_stripes(X)
    task = dask.delayed(_sketch_chunk, pure=True)
    width = sub_stripe_width(X.shape[0], copies=2 + (2 if medians else 0))
    parts = [task(s, int(o), codes, n_classes, centring, seed, n_cols, Q, medians, out_group, width) for s, o in zip(stripes, offsets)]
    return dask.delayed(_finish, pure=True)(tree_reduce(parts, _combine))
