"""Randomized range finder passes on the class-centred (or pooled-centred) operator.

With M the centred data (each sample minus its class mean, chunk-locally:
M_j = X_j - E Mu_j with E the n x K class indicator and Mu_j the chunk's class
means; for pooled centring K = 1 and Mu_j the feature means), the passes compute

- the sketch  Y = M Omega = sum_j M_j Omega_j, with Omega_j the rows of a
  Gaussian p x l matrix generated from (seed, global feature index);
- a power step Y = M M^T Q = sum_j M_j (M_j^T Q), which never stores a
  p-sized intermediate.

The class-centred chunk M_j is never built. Each chunk is centred once by its
pooled means rounded to the working dtype, X_cj = X_j - 1 c_j^T (see
:func:`wideml.passes.chunkmath.centre`), and class-centring, a row operation,
is applied to the thin products instead:

- M_j Omega_j = X_cj Omega_j - E (Mc_j Omega_j),
- M_j^T Q = X_cj^T Q - Mc_j^T (E^T Q), then M_j Z = X_cj Z - E (Mc_j Z),

with Mc_j the class means of X_cj (float64). The big products run in the
working dtype (float32 for float32 data under the default
``precision="auto"``, float64 otherwise); the small K-row corrections run in
float64 and every sum across chunks is float64.

The first (sketch) pass also accumulates the class centroids' K x K Gram (means,
and medians when asked; both centred by c) and writes the p-sized class
statistics into a model group, exactly like the Gram pass. q power iterations
cost q + 2 passes in all: the sketch, q power steps, and a final pass that
computes Z = M^T Q for the Rayleigh-Ritz matrix Z^T Z and writes Z (p x l)
into the model group. The solver iterates until the subspace converges
(:mod:`wideml.algebra.subspace_iteration`), so it cannot know in advance
which pass is the last: every pass that may be the last is a final pass, which
also returns M M^T Q to go on from (the Z files of a pass that was not the last
are overwritten by the next). The loadings are then assembled from Z and the class
statistics (:func:`wideml.passes.loadings.assemble_loadings`) without reading X
again; the embedding of the training samples comes from the same passes
(``XU`` in the sketch pass, (X - 1 m^T) Z in the final one).
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import feature_stripes, materialise, shared, sub_stripe_width
from wideml.passes.chunkmath import as_float64, centre, class_medians, class_sums, means_from_class_sums, one_hot, work_dtype
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS, FEATURE_MEAN
from wideml.passes.keyed_random import gaussian_rows
from wideml.passes.outputs import write_output
from wideml.passes.reduce import Sums, fold_in_lanes, sum_chunk_results
from wideml.passes.spec import Pass, digest
from wideml.passes.timing import phase, product

CENTRINGS = ("class", "pooled")


#: Folder (inside the model group) of the last pass's Z = M^T Q, one ``<offset>.npy`` per chunk.
SKETCH_BASIS = "_sketch_basis"


def _sketch_chunk(block, offset, codes, n_classes, centring, seed, n_cols, Q, medians, out_group, width=None, precision="auto",
                  final=False, embed_first=None):
    """One chunk of a sketch, power or final pass, in sub-stripes of at most ``width`` features.

    Parameters
    ----------
    block : ndarray of shape (n_samples, p_j)
        The chunk of X (read once: this task is one chunk of **one pass** over X).
    offset : int
        Global index of the chunk's first feature.
    codes, n_classes, centring, seed, n_cols, Q, medians, final, embed_first
        As in :func:`sketch_pass`.
    out_group : str or None
        Model group receiving the p-sized statistics (sketch pass) or the
        chunk's rows of Z = M^T Q (final pass).
    width : int, optional
        Sub-stripe width (memory budget).
    precision : {"auto", "float64", "float32"}
        Working precision of the chunk products.

    Returns
    -------
    Sums
        ``Y`` (n x l), ``means_gram`` and ``medians_gram`` (centroid Grams, or
        None) and the further sums asked for (``XU``, ``MQ``, ``ZtZ``), all
        float64; or the first non-finite entry.
    """
    block, owned = materialise(block)
    dt = work_dtype(block.dtype, precision)
    width = block.shape[1] if not width else int(width)
    parts, outputs = [], []
    for a in range(0, block.shape[1], width):
        part, out = _sketch_stripe(block[:, a : a + width], int(offset) + a, codes, n_classes, centring, seed, n_cols, Q,
                                   medians, out_group is not None, dt, final, embed_first, owned)
        if part.error is not None:  # sub-stripes run in feature order: this is the chunk's lowest bad index
            return part
        parts.append(part)
        outputs.append(out)
    with phase("writes"):
        if out_group is not None and final:  # a plain file per chunk: a temporary, read back once by assemble_loadings
            np.save(f"{out_group}/{SKETCH_BASIS}/{int(offset)}.npy", np.concatenate([o[SKETCH_BASIS] for o in outputs], axis=0))
        elif out_group is not None and Q is None:
            for name in outputs[0]:
                write_output(out_group, name, np.concatenate([o[name] for o in outputs], axis=-1), int(offset))
    return Sums.combine(*parts) if len(parts) > 1 else parts[0]


def _sketch_stripe(block, offset, codes, n_classes, centring, seed, n_cols, Q, medians, keep, dt=np.float64, final=False,
                   embed_first=None, owned=False):
    """(partial sums, p-sized outputs) of one sub-stripe; big products in ``dt``, corrections and results in float64.

    An ``owned`` block is centred in place (its medians are taken first).
    """
    outputs, extra = {}, {}
    first = Q is None
    if first and medians:
        with phase("class medians"):
            M = class_medians(block, codes, n_classes)
    else:
        M = None
    # the feature means m come from the class sums below when those are computed anyway
    with phase("centring"):
        x, m, c, bad = centre(block, offset, dt, reuse=not owned, inplace=owned, mean=not first and centring != "class")
    if bad is not None:
        return Sums(error=bad), outputs
    counts = np.bincount(codes, minlength=n_classes)
    Mc = None  # class means of x (K x w, float64)
    if first:
        with phase("class sums"):
            S = class_sums(x, codes, n_classes)
        Mc = S / np.maximum(counts, 1)[:, None]
    else:  # Z = M^T Q and x Z, block by block; with class centring the first product also gives the class sums
        Z, Y, S = _power_products(x, Q, codes, n_classes, counts, None if centring == "class" else (m - c)[None, :], dt)
        if S is not None:
            Mc = S / np.maximum(counts, 1)[:, None]
    if m is None:
        m = means_from_class_sums(c, S, x.shape[0])
    cg_means = cg_meds = Md = None
    if first:
        cg_means = Mc @ Mc.T  # centroids centred by c: only their differences are used
        if medians:
            Md = M - c
            cg_meds = Md @ Md.T
            if keep:
                outputs[CLASS_MEDIANS] = M
        if keep:
            outputs[CLASS_MEANS] = c + Mc
            outputs[FEATURE_MEAN] = m
    # The centred operator is x - E Mu (row operation): E the indicator of `rows`, Mu its means of x.
    if centring == "class":
        rows, Mu = codes, Mc
    else:
        rows, Mu = np.zeros(len(codes), dtype=np.intp), (m - c)[None, :]
    if first:
        with phase("random test matrix"):
            omega = gaussian_rows(seed, int(offset), int(offset) + x.shape[1], n_cols)  # float64: same values whatever the chunking
            if embed_first:  # (X - 1 m^T)(C - 1 c^T)^T for the centroid differences' embedding, in the same product
                U = Md if embed_first == "median" else Mc
                right = np.empty((x.shape[1], n_cols + U.shape[0]), dtype=dt)  # [Omega U^T] in the working dtype, one copy
                right[:, :n_cols] = omega
                right[:, n_cols:] = U.T
            else:
                right = omega.astype(dt, copy=False)
        P = as_float64(product(x, right))
        Y = P[:, :n_cols]
        if embed_first:
            extra["XU"] = P[:, n_cols:] - (m - c) @ U.T
        Y -= (Mu @ omega)[rows]
    else:
        if final:  # (X - 1 m^T) Z for the embedding; Z^T Z = Q^T M M^T Q for Rayleigh-Ritz; Z kept for the loadings
            extra["MQ"] = Y - (Mu @ Z)[rows]  # M M^T Q too: the iteration goes on from here if it has not converged
            Y -= (m - c) @ Z
            extra["ZtZ"] = Z.T @ Z
            if keep:
                outputs[SKETCH_BASIS] = Z.astype(dt)  # stored in the working dtype: float32 halves the temporary
        else:
            Y -= (Mu @ Z)[rows]
    return Sums({"Y": Y, "means_gram": cg_means, "medians_gram": cg_meds, **extra}), outputs


#: Features per block of a power step: both products of a block run while it is still in cache.
FUSE_COLS = 512


def _power_products(x, Q, codes, n_classes, counts, pooled_shift, dt):
    """The two products of a power (or final) step on a centred chunk, one cache-sized block of features at a time.

    Parameters
    ----------
    x : ndarray of shape (n, w)
        The chunk centred by c (working dtype).
    Q : ndarray of shape (n, l)
    codes, n_classes, counts
        Class codes, number of classes and class sizes.
    pooled_shift : ndarray of shape (1, w) or None
        None for class centring (the centred operator is x - E Mc, with Mc the
        class means of x, which the first product yields as class sums);
        otherwise m - c, for the pooled operator x - 1 (m - c).
    dt : numpy dtype
        Working dtype of the products.

    Returns
    -------
    Z : ndarray of shape (w, l), float64
        M^T Q, the centred operator's transpose applied to Q.
    Y : ndarray of shape (n, l), float64
        x Z (the caller applies the row correction).
    S : ndarray of shape (K, w), float64, or None
        Class sums of x (class centring only).

    Notes
    -----
    Each block x_b (n x FUSE_COLS) is multiplied twice in a row, first as
    [Q E]^T x_b ((l + K) x b: one product gives x_b^T Q and the class sums;
    OpenBLAS runs this shape about 25% faster than x_b^T [Q E]), then as
    x_b Z_b, so the chunk is swept from memory once instead of twice.
    """
    n, w = x.shape
    l = Q.shape[1]
    if pooled_shift is None:
        E = one_hot(codes, n_classes)
        left = np.vstack([Q.T, E.T]).astype(dt)
        EtQ = E.T @ Q  # (K x l)
        S = np.empty((n_classes, w))
    else:
        left = np.ascontiguousarray(Q.T, dtype=dt)
        EtQ = Q.sum(axis=0)[None, :]
        S = None
    inv = 1.0 / np.maximum(counts, 1)[:, None]
    Z = np.empty((w, l))
    Y = np.zeros((n, l))
    for a in range(0, w, FUSE_COLS):
        b = min(w, a + FUSE_COLS)
        xb = x[:, a:b]
        P = as_float64(product(left, xb))
        if S is not None:
            S[:, a:b] = P[l:]
            shift = P[l:] * inv
        else:
            shift = pooled_shift[:, a:b]
        Zb = Z[a:b]
        np.subtract(P[:l].T, shift.T @ EtQ, out=Zb)
        Y += product(xb, Zb.astype(dt))
    return Z, Y, S


def _finish(total: Sums):
    sums = dict(total.finish())
    return sums.pop("Y"), sums.pop("means_gram"), sums.pop("medians_gram"), sums


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
    precision: str = "auto",
    final: bool = False,
    embed_first: str | None = None,
    checkpoint=None,
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
        zarr group receiving feature means, class means (and medians) in the
        sketch pass, and in the final pass the rows of Z = M^T Q, one
        ``<offset>.npy`` file per chunk in its folder ``_sketch_basis``.
    final : bool
        With Q: the last pass. Y becomes (X - 1 m^T) Z with Z = M^T Q (the
        embedding's eigen part before rotation) and the further sums hold
        ``ZtZ`` = Z^T Z (l x l, the Rayleigh-Ritz matrix Q^T M M^T Q) and
        ``MQ`` = M M^T Q (n x l, what a power step returns as Y).
    embed_first : {"mean", "median"}, optional
        Sketch pass only: also accumulate ``XU`` = (X - 1 m^T)(C - 1 c^T)^T
        (n x K) for the centroids C (class means, or medians, which need
        ``medians=True``), the embedding of the centroid differences.
    precision : {"auto", "float64", "float32"}, default "auto"
        Dtype of each chunk's big products ("auto": float32 for float32 data,
        float64 otherwise; see :func:`wideml.passes.chunkmath.work_dtype`).
        Means, the class-centring corrections and the sums across chunks are
        always float64. The Gaussian test matrix is generated in float64 (its
        values do not depend on the chunking) and rounded to the working dtype.
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable: chunks are then folded in lanes
        (:func:`wideml.passes.reduce.fold_in_lanes`) saved at the checkpoint
        interval, and chunks a saved lane holds are not read again.

    Returns
    -------
    dask.delayed.Delayed
        Computes to (Y (n x l), centroid Gram of the centred class means (K x K) or None,
        centroid Gram of the centred class medians or None, dict of the further
        sums ``XU`` / ``ZtZ`` asked for). m is the feature means. The centroids are
        centred by each chunk's centring vector c (the feature means rounded to
        the working dtype); only their differences are meaningful.

    Raises
    ------
    NonFiniteError
        When computed, if X holds NaN or inf (the lowest such feature index is named).
    """
    if centring not in CENTRINGS:
        raise ValueError(f"centring must be one of {CENTRINGS}")
    work_dtype(X.dtype, precision)  # validate early
    stripes, offsets = feature_stripes(X, direct=True)
    width = sub_stripe_width(X.shape[0], copies=2 + (1 if medians else 0))
    if embed_first not in (None, "mean", "median") or (embed_first == "median" and not medians):
        raise ValueError("embed_first must be None, 'mean', or 'median' (which needs medians=True)")
    codes_d, Q_d = shared(codes), shared(Q)
    args = [(s, int(o), codes_d, n_classes, centring, seed, n_cols, Q_d, medians, out_group, width, precision, final, embed_first)
            for s, o in zip(stripes, offsets)]
    total = fold_in_lanes(_sketch_chunk, args, checkpoint=checkpoint) if checkpoint is not None else sum_chunk_results(_sketch_chunk, args)
    return dask.delayed(_finish, pure=True)(total)


class SketchPass(Pass):
    """A sketch, power or final pass of the randomized solver as the fit runner runs it (:func:`sketch_pass`; **one pass** over X).

    Parameters are those of :func:`sketch_pass`. Its checkpoint is named
    ``"sketch"`` (no ``Q``) or ``"power"`` and keyed by the seed, the options
    and a digest of ``Q``, so a resumed fit retraces the same iterates.
    """

    def __init__(self, X: da.Array, codes: np.ndarray, n_classes: int, **options):
        super().__init__()
        self.X, self.codes, self.n_classes, self.options = X, codes, n_classes, options
        self.kind = "sketch" if options.get("Q") is None else "power"

    def graph(self, lanes=None):
        return sketch_pass(self.X, self.codes, self.n_classes, checkpoint=lanes, **self.options)

    def key(self) -> dict:
        key = {name: value for name, value in self.options.items() if name not in ("Q", "out_group")}
        key["Q"] = digest(self.options.get("Q"))
        return key
