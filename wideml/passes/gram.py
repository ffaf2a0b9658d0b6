"""The one streaming pass: n x n Gram, class statistics and p-sized class centroids.

For every full-height feature chunk X_j (n x p_j) the chunk task computes, with
products in the working dtype (float32 for float32 data under the default
``precision="auto"``, float64 otherwise; see :mod:`wideml.passes.chunkmath`)
and every sum across chunks in float64:

- m_j, the pooled mean of each feature, c_j = m_j rounded to the working dtype,
  and X_cj = X_j - 1 c_j^T (centring the chunk before its product keeps
  precision when features carry large offsets);
- G_j = X_cj X_cj^T (n x n), r_j = X_cj c_j (n) and s_j = c_j^T c_j, so the
  raw Gram X X^T = G + r 1^T + 1 r^T + s 1 1^T is recoverable;
- class sums and, optionally, class medians of the chunk, for the full sample
  set and for each cross-validation training set; their centred cross-products
  with X (n x K) and with each other (K x K);
- the chunk's p-sized outputs (feature means, class means, class medians),
  written chunk-aligned into a zarr group when one is given.

Chunks are summed in a few sequential lanes (one per task the scheduler runs
at once), each adding into its own n x n accumulator in place
(:func:`wideml.passes.reduce.fold_in_lanes`), so the number of n x n matrices
alive is fixed whatever p is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import NonFiniteError, feature_stripes, materialise, shared, sub_stripe_width
from wideml.passes.chunkmath import as_float64, centre, class_medians, class_sums, means_from_class_sums, work_dtype
from wideml.passes.outputs import write_output
from wideml.passes.reduce import Sums, fold_in_lanes, parallel_slots
from wideml.passes.spec import Pass, digest
from wideml.passes.timing import phase, product
from wideml.runtime.config import memory_limit_bytes

#: Names of the p-sized arrays the pass writes into a model group.
FEATURE_MEAN = "feature_mean"
CLASS_MEANS = "class_means"
CLASS_MEDIANS = "class_medians"


@dataclass
class MedianSet:
    """Class medians over a subset of samples (the full data or one CV training set).

    Attributes
    ----------
    P : ndarray of shape (n_samples, n_classes)
        Cross-products X_c M_c^T of every sample with the centred class medians.
    Q : ndarray of shape (n_classes, n_classes)
        M_c M_c^T, the centred medians' Gram.
    """

    P: np.ndarray
    Q: np.ndarray


@dataclass
class GramStats:
    """Everything one pass over X yields (all n- or K-sized, float64).

    Attributes
    ----------
    G : ndarray of shape (n_samples, n_samples)
        Gram of the centred data X_c = X - 1 c^T, with c the feature means
        rounded to the working dtype (equal to the means in float64).
    r : ndarray of shape (n_samples,)
        X_c c.
    s : float
        c^T c.
    n_features : int
    medians : list of MedianSet
        One per requested sample subset (empty if medians were not asked for).
    """

    G: np.ndarray
    r: np.ndarray
    s: float
    n_features: int
    medians: list[MedianSet] = field(default_factory=list)

    def raw_gram(self) -> np.ndarray:
        """X X^T of the uncentred data, shape (n_samples, n_samples)."""
        return self.G + self.r[:, None] + self.r[None, :] + self.s

    def sq_norms(self) -> np.ndarray:
        """Squared row norms ||x_i||^2 of the uncentred data, shape (n_samples,)."""
        return np.diag(self.G) + 2 * self.r + self.s


def chunk_stats(block, offset, codes, n_classes, median_sets, precision, out_group, width=None):
    """Statistics of one chunk, computed in sub-stripes of at most ``width`` features (memory budget)."""
    block, owned = materialise(block)
    dt = work_dtype(block.dtype, precision)
    width = block.shape[1] if not width else int(width)
    keep = out_group is not None
    parts, outputs = [], []
    for a in range(0, block.shape[1], width):
        stats, out = _stripe_stats(block[:, a : a + width], int(offset) + a, codes, n_classes, median_sets, dt, keep, owned)
        if stats.error is not None:  # reported after the pass, so the lowest bad feature index wins
            return stats
        parts.append(stats)
        outputs.append(out)
    if keep:  # one chunk-aligned write per output array
        with phase("writes"):
            for name in outputs[0]:
                write_output(out_group, name, np.concatenate([o[name] for o in outputs], axis=-1), int(offset))
    return Sums.combine(*parts) if len(parts) > 1 else parts[0]


def _stripe_stats(block, offset, codes, n_classes, median_sets, dt, keep, owned=False):
    """(partial sums, p-sized outputs) of one sub-stripe; products in ``dt``, results in float64.

    An ``owned`` block is centred in place (its medians are taken first).
    """
    outputs = {}
    with phase("class medians"):
        raw_medians = [class_medians(block, sub_codes, n_classes, rows=None if is_full else idx) for idx, sub_codes, is_full in median_sets]
    with phase("centring"):
        x, m, c, bad = centre(block, offset, dt, reuse=not owned, inplace=owned, mean=False)
    if bad is not None:
        return Sums(error=bad), outputs
    medians = []
    for M, (_, _, is_full) in zip(raw_medians, median_sets):
        medians.append(M - c)
        if is_full and keep:
            outputs[CLASS_MEDIANS] = M
    if keep:
        counts = np.bincount(codes, minlength=n_classes)
        with phase("class sums"):
            S = class_sums(x, codes, n_classes)
        outputs[CLASS_MEANS] = c + S / np.maximum(counts, 1)[:, None]
        outputs[FEATURE_MEAN] = m if m is not None else means_from_class_sums(c, S, x.shape[0])
    G = as_float64(product(x, x.T, flops=x.shape[0] ** 2 * x.shape[1]))  # SYRK in dt; summed across chunks in float64
    if not np.isfinite(G).all():  # finite values whose products overflow dt: never a valid Gram
        raise overflow_error(x, offset, dt)
    r = as_float64(product(x, c.astype(dt)))
    s = float(c @ c)
    meds = tuple((as_float64(product(x, Mc.T.astype(dt))), Mc @ Mc.T) for Mc in medians)
    return Sums({"G": G, "r": r, "s": s, "medians": meds}), outputs


def overflow_error(x: np.ndarray, offset: int, dt) -> NonFiniteError:
    """The sentence for a chunk of finite values (``x``, centred, from feature ``offset`` on) whose products overflow ``dt``."""
    big = float(np.nanmax(np.abs(x))) if x.size else float("nan")
    return NonFiniteError(
        f"the products of X's features {offset}:{offset + x.shape[1]} overflow {np.dtype(dt).name} (values up to {big:.3g} "
        "after centring); if the store was damaged in a way its codec does not detect, restore it from a copy (stores "
        "written with --checksum detect such damage on read), else fit with precision='float64' (CLI --precision float64).")


def gram_pass(
    X: da.Array,
    codes: np.ndarray | None = None,
    n_classes: int = 0,
    *,
    median_subsets: Sequence[np.ndarray] = (),
    precision: str = "auto",
    out_group: str | None = None,
    checkpoint=None,
):
    """Build the lazy one-pass graph over X (nothing is computed here).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    codes : ndarray of int, shape (n_samples,), optional
        Class index of every sample (0..n_classes-1); needed for class
        statistics and for ``out_group``.
    n_classes : int
    median_subsets : sequence of ndarray of int
        Sample index sets over which to compute class medians (e.g. the full
        data, then each CV training set). An index set equal to all samples
        also writes the medians to ``out_group``.
    precision : {"auto", "float64", "float32"}
        Dtype of each chunk's products ("auto": float32 for float32 data,
        float64 otherwise). Feature means and the sum across chunks are always
        float64.
    out_group : str, optional
        Path of an existing zarr group with arrays ``feature_mean`` (p,),
        ``class_means`` (K, p) and ``class_medians`` (K, p) chunked like X,
        which the pass fills chunk by chunk.
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable: lanes are saved at the checkpoint interval
        and chunks already folded by a saved lane are not read again (their
        outputs are already in ``out_group``).

    Notes
    -----
    Each chunk is processed in sub-stripes sized from the memory budget
    (:func:`wideml.passes.blocks.sub_stripe_width`), so the float64
    temporaries of a task stay within its share whatever the stored chunk size.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a :class:`GramStats`. Computing it makes **one pass** over X.

    Raises
    ------
    NonFiniteError
        When computed, if X holds NaN or inf; the message names the lowest
        such feature index.
    """
    stripes, offsets = feature_stripes(X, direct=True)
    n = X.shape[0]
    sets = []
    for idx in median_subsets:
        idx = np.asarray(idx, dtype=np.int64)
        sets.append((idx, codes[idx], len(idx) == n and np.array_equal(idx, np.arange(n))))
    width = sub_stripe_width(n, copies=4 + len(sets))
    codes_d, sets_d = shared(codes), shared(sets)
    args = [(s, int(o), codes_d, n_classes, sets_d, precision, out_group, width) for s, o in zip(stripes, offsets)]
    total = fold_in_lanes(chunk_stats, args, lanes=gram_lanes(n), checkpoint=checkpoint)
    return dask.delayed(_finish, pure=True)(total, int(X.shape[1]))


#: n x n float64-sized matrices one lane of the Gram pass holds: its accumulator, a chunk's product and its float64 copy.
LANE_MATRICES = 3


def gram_lanes(n_samples: int, budget: int | None = None) -> int:
    """Lanes (n x n accumulators) of a Gram pass: one per task the scheduler runs at once, as many as half the memory budget holds.

    At least one: a single lane is the least memory any Gram pass needs
    (the auto solver avoids the Gram altogether when even that does not fit).
    """
    if budget is None:
        budget = memory_limit_bytes()
    per_lane = LANE_MATRICES * 8 * n_samples * n_samples
    return max(1, min(parallel_slots(), int(budget // 2 // max(1, per_lane))))


def _finish(total: Sums, n_features):
    sums = total.finish()
    G = (sums["G"] + sums["G"].T) / 2
    return GramStats(G=G, r=sums["r"], s=float(sums["s"]), n_features=n_features, medians=[MedianSet(P, Q) for P, Q in sums["medians"]])


class GramPass(Pass):
    """The Gram pass as the fit runner runs it (:func:`gram_pass`; **one pass** over X).

    Parameters
    ----------
    X, codes, n_classes, median_subsets, precision, out_group
        As in :func:`gram_pass`.
    kind : str, default "gram"
        Names the pass's checkpoint (a cross-validation's Gram is ``"cv-gram"``).

    Its result is a :class:`GramStats`; its checkpoint holds the lanes' sums and then that result.
    """

    def __init__(self, X: da.Array, codes: np.ndarray | None = None, n_classes: int = 0, *, median_subsets: Sequence[np.ndarray] = (),
                 precision: str = "auto", out_group: str | None = None, kind: str = "gram"):
        super().__init__()
        self.X, self.codes, self.n_classes, self.out_group = X, codes, n_classes, out_group
        self.median_subsets, self.precision, self.kind = list(median_subsets), precision, kind

    def graph(self, lanes=None):
        return gram_pass(self.X, self.codes, self.n_classes, median_subsets=self.median_subsets, precision=self.precision,
                         out_group=self.out_group, checkpoint=lanes)

    def key(self) -> dict:
        return {"precision": self.precision, "median_subsets": digest(*[np.asarray(s) for s in self.median_subsets])}

    def save(self, stats: GramStats) -> tuple:
        return (stats.G, stats.r, float(stats.s), int(stats.n_features), [(m.P, m.Q) for m in stats.medians])

    def restore(self, state: tuple) -> GramStats:
        G, r, s, n_features, meds = state
        return GramStats(G=G, r=r, s=s, n_features=n_features, medians=[MedianSet(P, Q) for P, Q in meds])
