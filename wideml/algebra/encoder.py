"""Encoder-embedding algebra on small matrices (no access to X).

The multi-kernel encoder classifier (``shared/papers/multi_kernel_encoder_classifier.md``)
embeds sample i as Z(i, k) = kernel(x_i, u_k), with u_k the mean of the
training samples of class k (U = W^T X, W = Y N^-1). Every kernel here is a
function of a few *additive* statistics, each a sum over features, so a
streaming pass accumulates them chunk by chunk and this module finishes them:

- ``linear`` (the paper's inner product): Z = X U^T = sum_j X_j U_j^T.
- ``euclidean`` (distance-induced): D(i, k) = ||x_i - u_k|| from ||x_i||^2,
  ||u_k||^2 and X U^T; Z = d_max - D with d_max the largest training distance
  (a constant shift, irrelevant to LDA, stored so new data use the same one).
- ``spearman``: Pearson correlation between the row ranks of x_i and of u_k
  (average ranks for ties), from sum_j r_ij s_kj, the row sums and the row
  sums of squares of the ranks.

It also holds the full-kernel form (the paper's Section 2, Z = A W from an
n x n kernel A), the cross-entropy selection rule, the leave-one-out
corrections of the training embedding used by the corrected selection score,
and the rank estimators used when a row does not fit in memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from wideml.exceptions import WidemlError

#: Built-in kernels, in the order the paper lists them.
KERNELS: tuple[str, ...] = ("linear", "euclidean", "spearman")
#: Other accepted spellings.
ALIASES: dict[str, str] = {"inner": "linear", "inner_product": "linear", "dot": "linear", "euclid": "euclidean",
                           "distance": "euclidean", "rank": "spearman"}
#: Probabilities are clipped below at this value before taking logs.
PROBA_FLOOR = 1e-15


def resolve_kernels(kernels: str | Sequence[str]) -> tuple[str, ...]:
    """Canonical kernel names from a sequence or a comma-separated string.

    Raises
    ------
    WidemlError
        If a name is unknown (the message lists the valid ones) or none is given.
    """
    if isinstance(kernels, str):
        kernels = [k for k in kernels.split(",")]
    names: list[str] = []
    for raw in kernels:
        if not isinstance(raw, str):
            raise WidemlError(f"kernel {raw!r} is not a kernel name; valid kernels are {', '.join(KERNELS)}.")
        key = raw.strip().lower()
        if not key:
            continue
        name = ALIASES.get(key, key)
        if name not in KERNELS:
            raise WidemlError(f"unknown kernel {raw.strip()!r}; valid kernels are {', '.join(KERNELS)}.")
        if name not in names:
            names.append(name)
    if not names:
        raise WidemlError(f"no kernel given; pick one or more of {', '.join(KERNELS)}.")
    return tuple(names)


def stacked_class_weights(codes: np.ndarray, n_classes: int, train_sets: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The class-mean operators W_s = Y_s N_s^-1 of several training sets, side by side.

    Parameters
    ----------
    codes : ndarray of int, shape (n_samples,)
        Class index 0..K-1 of every sample.
    n_classes : int
    train_sets : sequence of S index arrays
        Rows that count as training rows in each set (the full data, or each CV
        fold's training rows).

    Returns
    -------
    W : ndarray of shape (n_samples, S * n_classes)
        Column s*K + k holds 1/n_{s,k} on the training rows of set s in class k.
        Class means of every set are then ``W.T @ X`` (S*K x p).
    counts : ndarray of int64, shape (S, n_classes)
    """
    n = len(codes)
    W = np.zeros((n, len(train_sets) * n_classes))
    counts = np.zeros((len(train_sets), n_classes), dtype=np.int64)
    for s, idx in enumerate(train_sets):
        idx = np.asarray(idx, dtype=np.int64)
        c = np.bincount(codes[idx], minlength=n_classes)
        counts[s] = c
        W[idx, s * n_classes + codes[idx]] = 1.0 / np.maximum(c[codes[idx]], 1)
    return W, counts


# --------------------------------------------------------------------------------------
# kernels from additive statistics
# --------------------------------------------------------------------------------------
def euclidean_distance(x_sq: np.ndarray, cross: np.ndarray, u_sq: np.ndarray) -> np.ndarray:
    """Distances ||x_i - u_k||, shape (n, K), from ||x_i||^2 (n,), x_i . u_k (n, K) and ||u_k||^2 (K,)."""
    d2 = x_sq[:, None] - 2.0 * cross + u_sq[None, :]
    return np.sqrt(np.maximum(d2, 0.0))


def pearson_from_sums(cross: np.ndarray, r_sum: np.ndarray, r_sq: np.ndarray, s_sum: np.ndarray, s_sq: np.ndarray,
                      n_features: int) -> np.ndarray:
    """Pearson correlations between rows r_i and s_k from their sums over features.

    Parameters
    ----------
    cross : ndarray of shape (n, K)
        sum_j r_ij s_kj.
    r_sum, r_sq : ndarray of shape (n,)
        sum_j r_ij and sum_j r_ij^2.
    s_sum, s_sq : ndarray of shape (K,)
    n_features : int

    Returns
    -------
    ndarray of shape (n, K)
        Correlations; 0 where a row is constant.
    """
    p = float(n_features)
    cov = cross - np.outer(r_sum, s_sum) / p
    var_r = np.maximum(r_sq - r_sum**2 / p, 0.0)
    var_s = np.maximum(s_sq - s_sum**2 / p, 0.0)
    denom = np.sqrt(np.outer(var_r, var_s))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)
    return np.clip(out, -1.0, 1.0)


@dataclass
class AnchorStats:
    """Additive statistics of rows x_i against K anchors u_k (usually class means).

    Attributes
    ----------
    cross : ndarray of shape (n, K)
        x_i . u_k.
    x_sq : ndarray of shape (n,) or None
        ||x_i||^2 (None when not computed: the linear kernel does not use it).
    u_sq : ndarray of shape (K,)
        ||u_k||^2.
    n_features : int
    rank_cross, r_sum, r_sq, s_sum, s_sq : ndarray or None
        The Spearman sums (see :func:`pearson_from_sums`), when ranks were computed.
    """

    cross: np.ndarray
    x_sq: np.ndarray
    u_sq: np.ndarray
    n_features: int
    rank_cross: np.ndarray | None = None
    r_sum: np.ndarray | None = None
    r_sq: np.ndarray | None = None
    s_sum: np.ndarray | None = None
    s_sq: np.ndarray | None = None

    def rows(self, idx: np.ndarray) -> "AnchorStats":
        """The same statistics restricted to rows ``idx``."""
        pick = lambda a: None if a is None else a[idx]  # noqa: E731
        return AnchorStats(self.cross[idx], pick(self.x_sq), self.u_sq, self.n_features, pick(self.rank_cross),
                           pick(self.r_sum), pick(self.r_sq), self.s_sum, self.s_sq)

    def anchors(self, cols: slice | np.ndarray) -> "AnchorStats":
        """The same statistics restricted to anchor columns ``cols``."""
        pick = lambda a: None if a is None else a[..., cols]  # noqa: E731
        return AnchorStats(self.cross[:, cols], self.x_sq, self.u_sq[cols], self.n_features, pick(self.rank_cross),
                           self.r_sum, self.r_sq, pick(self.s_sum), pick(self.s_sq))


def embed(kernel: str, stats: AnchorStats, offset: float | None = None) -> tuple[np.ndarray, float]:
    """The encoder embedding Z (n x K) of one kernel from the additive statistics.

    Parameters
    ----------
    kernel : {"linear", "euclidean", "spearman"}
    stats : AnchorStats
    offset : float, optional
        The euclidean kernel's d_max; computed from these rows when None (do
        that on the training rows, then pass the stored value for new data).

    Returns
    -------
    Z : ndarray of shape (n, K)
    offset : float
        d_max for "euclidean", 0.0 otherwise.
    """
    if kernel == "linear":
        return stats.cross, 0.0
    if kernel == "euclidean":
        D = euclidean_distance(stats.x_sq, stats.cross, stats.u_sq)
        if offset is None:
            offset = float(D.max()) if D.size else 0.0
        return offset - D, float(offset)
    if kernel == "spearman":
        if stats.rank_cross is None:
            raise ValueError("spearman needs rank statistics")
        return pearson_from_sums(stats.rank_cross, stats.r_sum, stats.r_sq, stats.s_sum, stats.s_sq, stats.n_features), 0.0
    raise WidemlError(f"unknown kernel {kernel!r}; valid kernels are {', '.join(KERNELS)}.")


# --------------------------------------------------------------------------------------
# leave-one-out corrections (training rows only)
# --------------------------------------------------------------------------------------
def loo_counts(codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """n_c of each row's own class, as float (n,)."""
    return counts[codes].astype(np.float64)


def loo_linear(cross: np.ndarray, x_sq: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """X U^T with each training row's own class mean replaced by its leave-one-out mean.

    x_i . u_c^(-i) = (n_c x_i . u_c - ||x_i||^2) / (n_c - 1). Rows of a
    single-sample class keep their value (there is no leave-one-out mean).
    """
    out = cross.copy()
    rows = np.arange(len(codes))
    nc = loo_counts(codes, counts)
    ok = nc > 1
    out[rows[ok], codes[ok]] = (nc[ok] * cross[rows[ok], codes[ok]] - x_sq[ok]) / (nc[ok] - 1)
    return out


def loo_distance(D: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Distances with the own-class mean left out: ||x_i - u_c^(-i)|| = n_c / (n_c - 1) ||x_i - u_c||."""
    out = D.copy()
    rows = np.arange(len(codes))
    nc = loo_counts(codes, counts)
    ok = nc > 1
    out[rows[ok], codes[ok]] *= nc[ok] / (nc[ok] - 1)
    return out


def loo_embed(kernel: str, stats: AnchorStats, codes: np.ndarray, counts: np.ndarray, offset: float,
              loo_own: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out training embedding: each row's own-class column uses the mean of the *other* rows of its class.

    Parameters
    ----------
    kernel : str
    stats : AnchorStats
        Statistics of the training rows (in the order of ``codes``).
    codes : ndarray of int, shape (n_train,)
    counts : ndarray of int, shape (K,)
        Training class counts.
    offset : float
        The euclidean d_max of the ordinary embedding.
    loo_own : ndarray of shape (n_train,), optional
        For "spearman": the rank correlation of each row with its leave-one-out
        class mean (computed in the rank pass).

    Returns
    -------
    ndarray of shape (n_train, K)
    """
    if kernel == "linear":
        return loo_linear(stats.cross, stats.x_sq, codes, counts)
    if kernel == "euclidean":
        D = euclidean_distance(stats.x_sq, stats.cross, stats.u_sq)
        return offset - loo_distance(D, codes, counts)
    if kernel == "spearman":
        Z, _ = embed("spearman", stats)
        Z = Z.copy()
        rows = np.arange(len(codes))
        ok = loo_counts(codes, counts) > 1
        Z[rows[ok], codes[ok]] = loo_own[ok]
        return Z
    raise WidemlError(f"unknown kernel {kernel!r}; valid kernels are {', '.join(KERNELS)}.")


# --------------------------------------------------------------------------------------
# selection
# --------------------------------------------------------------------------------------
def cross_entropy(proba: np.ndarray, codes: np.ndarray) -> float:
    """c = -sum_i log T(i, y_i), with T clipped below at :data:`PROBA_FLOOR` (the paper's Step 4)."""
    picked = proba[np.arange(len(codes)), codes]
    return float(-np.log(np.clip(picked, PROBA_FLOOR, None)).sum())


def select_kernel(scores: Mapping[str, float], baseline: str | None = "linear", threshold: float = 0.30) -> str:
    """Pick a kernel by cross-entropy.

    With a ``baseline`` present in ``scores`` this is the rule of the paper's
    experiments: keep the baseline unless the best other kernel's score is at
    least ``threshold`` lower (c_best <= (1 - threshold) * c_baseline). With
    ``baseline=None`` (or absent) it is the plain arg-min (Algorithm B, Step 5).
    Ties go to the kernel listed first.
    """
    names = list(scores)
    best = min(names, key=lambda k: (scores[k], names.index(k)))
    if baseline is None or baseline not in scores:
        return best
    others = [k for k in names if k != baseline]
    if not others:
        return baseline
    cand = min(others, key=lambda k: (scores[k], names.index(k)))
    return cand if scores[cand] <= (1.0 - threshold) * scores[baseline] else baseline


# --------------------------------------------------------------------------------------
# linear discriminant analysis on the embedding
# --------------------------------------------------------------------------------------
#: Singular-value threshold of scikit-learn's SVD solver (its default ``tol``).
LDA_TOL = 1e-4


@dataclass
class LdaFit:
    """The fitted state of scikit-learn's ``LinearDiscriminantAnalysis(solver="svd")`` (empirical priors).

    ``coef`` and ``intercept`` are one row per class, or a single row for two
    classes (class 1 minus class 0), as scikit-learn stores them.
    """

    priors: np.ndarray
    means: np.ndarray
    xbar: np.ndarray
    scalings: np.ndarray
    explained_variance_ratio: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    max_components: int


def lda_svd(Z: np.ndarray, codes: np.ndarray, n_classes: int, tol: float = LDA_TOL) -> LdaFit | None:
    """scikit-learn's SVD-solver LDA on a small dense embedding, without its input validation.

    The same algebra as ``LinearDiscriminantAnalysis._solve_svd`` (scikit-learn
    1.9): class means, within-class standardisation with the 1/n factor, the
    SVD of the scaled within-class deviations, then the SVD of the scaled
    class centres. The within-class SVD is taken of the triangular factor R of
    a QR decomposition (same singular values and right vectors, about half the
    time for n >> K), so coefficients agree with scikit-learn's to rounding.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
    codes : ndarray of int, shape (n,)
        Class index 0..n_classes-1 of every row.
    n_classes : int

    Returns
    -------
    LdaFit or None
        None when this fast path does not apply (a class without rows, no more
        rows than classes, non-finite Z, a rank-0 within-class scatter, or an
        SVD that fails); the caller then uses scikit-learn itself.
    """
    Z = np.asarray(Z)
    if Z.ndim != 2 or Z.dtype.kind != "f" or n_classes < 2:
        return None
    n, d = Z.shape
    counts = np.bincount(codes, minlength=n_classes)
    if n <= n_classes or len(counts) != n_classes or counts.min() == 0 or not np.isfinite(Z).all():
        return None
    priors = counts.astype(Z.dtype) / float(n)
    # rows grouped by class in their original order, as scikit-learn groups them; row-by-row sums
    # (np.add.reduceat along axis 0) then add in the same order as its np.add.at
    order = np.argsort(codes, kind="stable")
    Zs = Z[order]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    means = np.add.reduceat(Zs, starts, axis=0)
    means /= counts[:, None]
    xbar = priors @ means
    Xc = Zs - np.repeat(means, counts, axis=0)
    std = Xc.std(axis=0)
    std[std == 0] = 1.0
    Xc *= np.sqrt(1.0 / n) / std
    try:
        R = np.linalg.qr(Xc, mode="r")
        _, S, Vt = np.linalg.svd(R, full_matrices=False)
        rank = int(np.sum(S > tol))
        if rank == 0:
            return None
        scalings = (Vt[:rank, :] / std).T / S[:rank]
        fac = 1.0 / (n_classes - 1)
        centres = (np.sqrt((n * priors) * fac) * (means - xbar).T).T @ scalings
        _, S, Vt = np.linalg.svd(centres, full_matrices=False)
    except np.linalg.LinAlgError:
        return None
    max_components = min(n_classes - 1, d)
    ratio = (S**2 / np.sum(S**2))[:max_components] if max_components else np.empty(0, dtype=S.dtype)
    rank = int(np.sum(S > tol * S[0]))
    scalings = scalings @ Vt.T[:, :rank]
    coef = (means - xbar) @ scalings
    intercept = -0.5 * np.sum(coef**2, axis=1) + np.log(priors)
    coef = coef @ scalings.T
    intercept -= xbar @ coef.T
    if n_classes == 2:
        coef = (coef[1, :] - coef[0, :]).reshape(1, -1)
        intercept = np.reshape(intercept[1] - intercept[0], (1,))
    return LdaFit(priors, means, xbar, scalings, ratio, coef, intercept, max_components)


def lda_proba(coef: np.ndarray, intercept: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Posterior probabilities of a fitted LDA (softmax of the decision values; logistic for two classes)."""
    import scipy.special

    scores = Z @ coef.T + intercept
    if coef.shape[0] == 1:
        p1 = scipy.special.expit(scores[:, 0])
        return np.stack([1 - p1, p1], axis=1)
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores


# --------------------------------------------------------------------------------------
# full-kernel form (Section 2): Z = A W
# --------------------------------------------------------------------------------------
def full_kernel(kernel: str, gram: np.ndarray, sq_rows: np.ndarray, sq_cols: np.ndarray, offset: float | None = None,
                rank_stats: tuple | None = None) -> tuple[np.ndarray, float]:
    """The kernel matrix A(i, j) = kernel(x_i, x_j) between two row sets from their cross-products.

    Parameters
    ----------
    kernel : str
    gram : ndarray of shape (m, n)
        x_i . x_j (or, for "spearman", r_i . r_j of the row ranks).
    sq_rows : ndarray of shape (m,), sq_cols : ndarray of shape (n,)
        Squared norms of the two row sets (unused for "spearman").
    offset : float, optional
        Euclidean d_max; the maximum of this A's distances when None.
    rank_stats : tuple, optional
        For "spearman": (r_sum_rows, r_sq_rows, r_sum_cols, r_sq_cols, n_features).

    Returns
    -------
    A : ndarray of shape (m, n)
    offset : float
    """
    if kernel == "linear":
        return gram, 0.0
    if kernel == "euclidean":
        D = euclidean_distance(sq_rows, gram, sq_cols)
        if offset is None:
            offset = float(D.max()) if D.size else 0.0
        return offset - D, float(offset)
    if kernel == "spearman":
        rs, rq, cs, cq, p = rank_stats
        return pearson_from_sums(gram, rs, rq, cs, cq, p), 0.0
    raise WidemlError(f"unknown kernel {kernel!r}; valid kernels are {', '.join(KERNELS)}.")


def loo_full(Z: np.ndarray, A_diag: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Leave-one-out form of Z = A W on the training rows: drop A(i, i) from the own-class mean."""
    out = Z.copy()
    rows = np.arange(len(codes))
    nc = loo_counts(codes, counts)
    ok = nc > 1
    out[rows[ok], codes[ok]] = (nc[ok] * Z[rows[ok], codes[ok]] - A_diag[ok]) / (nc[ok] - 1)
    return out


# --------------------------------------------------------------------------------------
# ranks
# --------------------------------------------------------------------------------------
def row_ranks(X: np.ndarray) -> np.ndarray:
    """Exact ranks of every row across its features, average ranks for ties (1..p), float64.

    Equals ``scipy.stats.rankdata(X, axis=1)``. Integer-valued rows with a
    small value range (pixels, counts) are ranked by counting
    (:func:`_integer_row_ranks`, no sort, about 5x faster); otherwise one
    unstable argsort per row, then each run of equal sorted values gets the
    mean of its positions.
    """
    x = np.asarray(X)
    n, p = x.shape
    if x.size == 0:
        return np.zeros((n, p))
    out = _integer_row_ranks(x)
    if out is not None:
        return out
    order = np.argsort(x, axis=1)  # ties are averaged below, so stability does not matter
    order += (np.arange(n) * p)[:, None]  # flat positions: plain take/put are several times faster than *_along_axis
    order = order.ravel()
    xs = np.take(x.ravel(), order).reshape(n, p)
    new = np.empty((n, p), dtype=bool)
    new[:, 0] = True
    np.not_equal(xs[:, 1:], xs[:, :-1], out=new[:, 1:])
    starts = np.flatnonzero(new.ravel())  # runs never cross rows: every row starts a run
    lengths = np.diff(np.append(starts, n * p))
    mid = (starts % p) + 1.0 + (lengths - 1) / 2.0
    out = np.empty(n * p)
    out[order] = np.repeat(mid, lengths)
    return out.reshape(n, p)


def _integer_row_ranks(x: np.ndarray) -> np.ndarray | None:
    """:func:`row_ranks` by counting, for integer values spanning at most max(p, 256) levels; None otherwise.

    Row i's average rank of value v is (count below v) + (count of v + 1) / 2,
    read from a per-row histogram of the values (n x levels) and its running
    sum: about eight sweeps over x and no sort.
    """
    n, p = x.shape
    if x.dtype.kind not in "fiub":
        return None
    if x.dtype.kind == "f":
        head = x[0]
        if not np.array_equal(head, np.floor(head)):  # cheap early exit for continuous data (and NaN)
            return None
    lo, hi = x.min(), x.max()
    if x.dtype.kind == "f" and not (np.isfinite(lo) and np.isfinite(hi) and abs(lo) < 2**52 and abs(hi) < 2**52):
        return None
    levels = int(hi) - int(lo) + 1
    if levels > max(p, 256):
        return None
    keys = x.astype(np.intp)
    if x.dtype.kind == "f" and not np.array_equal(keys, x):
        return None
    keys += (np.arange(n, dtype=np.intp) * levels - int(lo))[:, None]  # row i's values -> i * levels + (v - lo)
    counts = np.bincount(keys.ravel(), minlength=n * levels)
    avg = np.cumsum(counts.reshape(n, levels), axis=1, dtype=np.float64).ravel()
    avg -= 0.5 * (counts - 1)  # running count through v, minus (count of v - 1) / 2
    return np.take(avg, keys)


def rank_sums(R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row sums and row sums of squares of a rank matrix."""
    return R.sum(axis=1), np.einsum("ij,ij->i", R, R)


def sketch_features(n_features: int, size: int, seed: int) -> np.ndarray:
    """Sorted global indices of the features sampled to estimate each row's distribution.

    Depends only on (n_features, size, seed), so the estimate does not change
    with the chunking.
    """
    size = int(min(size, n_features))
    if size >= n_features:
        return np.arange(n_features, dtype=np.int64)
    rng = np.random.default_rng([int(seed), 0x5EA4])
    return np.sort(rng.choice(n_features, size=size, replace=False)).astype(np.int64)


@dataclass
class RankTable:
    """A row's estimated mid-rank CDF from a sample of its values.

    ``values`` are the distinct sampled values (increasing) and ``cdf`` their
    mid-CDF (count below + half the count equal) / sample size. The rank of a
    value v among the row's p features is estimated as p * F(v) + 1/2, with F
    linearly interpolated between the sampled values.
    """

    values: np.ndarray
    cdf: np.ndarray

    def rank(self, v: np.ndarray, n_features: int) -> np.ndarray:
        lo = 0.5 * self.cdf[0]
        hi = 0.5 * (1.0 + self.cdf[-1])
        return n_features * np.interp(v, self.values, self.cdf, left=lo, right=hi) + 0.5


def rank_table(sample: np.ndarray) -> RankTable:
    """Build a :class:`RankTable` from one row's sampled values (1-D)."""
    s = np.sort(np.asarray(sample, dtype=np.float64))
    values, first, counts = np.unique(s, return_index=True, return_counts=True)
    return RankTable(values, (first + 0.5 * counts) / len(s))


def rank_tables(samples: np.ndarray) -> list[RankTable]:
    """One :class:`RankTable` per row of ``samples`` (n x m)."""
    return [rank_table(row) for row in samples]


def approx_ranks(values: np.ndarray, tables: Sequence[RankTable], n_features: int) -> np.ndarray:
    """Estimated within-row ranks of ``values`` (rows x c), row i against ``tables[i]``."""
    out = np.empty(values.shape, dtype=np.float64)
    for i, table in enumerate(tables):
        out[i] = table.rank(values[i], n_features)
    return out


__all__ = [
    "ALIASES", "KERNELS", "LDA_TOL", "AnchorStats", "LdaFit", "RankTable", "approx_ranks", "cross_entropy", "embed", "euclidean_distance",
    "full_kernel", "lda_proba", "lda_svd", "loo_distance", "loo_embed", "loo_full", "loo_linear", "pearson_from_sums", "rank_sums", "rank_table",
    "rank_tables", "resolve_kernels", "row_ranks", "select_kernel", "sketch_features", "stacked_class_weights",
]
