"""Two-sample tests after a projection: Hotelling's T² in the projected space (the LOL paper's Appendix F, Fig. 7A-B).

A projection learned from the very samples it then tests makes the classical
F-test invalid (LOL's mean-difference direction separates the two groups of
any sample, so T² is inflated under the null). Two valid versions are offered:

``method="split"`` (the default)
    The samples are split in halves, stratified by group and seeded. The
    projection is learned on one half and Hotelling's T² is computed on the
    other half's projected samples. Given the learning half, the projection
    is a fixed matrix, so under Gaussian groups with a shared covariance the
    tested half's projections are Gaussian too and the classical F conversion
    is exact: the p-value is exact at every level. Costs one fit on half the
    samples (one pass over X for the Gram-based projections, see below) and
    works for every projection. It is the default because it is exact, cheap
    for every projection, gives a continuous p-value, and in our simulations
    with p >> n (n = 40, p = 200, tests/estimators/test_two_sample.py) it was
    the more powerful of the two (power 0.98 against 0.72 for the
    permutation test at one alternative): LOL learned on all samples
    over-fits every relabelling too, which drowns the signal in the
    permutation distribution.
``method="permutation"``
    The projection is learned on all samples and T² computed on all of them;
    the same is repeated for ``n_permutations`` random relabellings
    (class sizes kept), and p = (1 + #{T²_perm >= T²}) / (1 + n_permutations).
    Valid at every level whenever the samples are exchangeable under the
    null (no Gaussian assumption) because the whole procedure, projection
    included, is re-run under every permutation. Every sample serves both to
    learn and to test, which pays when n is large against p; its p-value
    cannot go below 1 / (1 + n_permutations).

Passes over X. LOL with class means, PCA and rrLDA are computed from the
n x n Gram (:mod:`wideml.algebra.lol`): **one pass over X** gives it, and
then every half split, and every permutation's projection and T², is n x n
algebra with no further access to X (O(n³) per permutation). Robust LOL
(class medians) needs the learning half's medians, which the same single
pass computes for ``split``; under permutations its medians would need X
again, so it is refitted per permutation. Other embeddings (LFL, random
projections, QOQ with the randomized solver, kernel embeddings) are fitted
as they are: ``split`` costs their fit on the learning rows plus one
transform pass over the tested rows; ``permutation`` costs one fit per
permutation, except for unsupervised ones (PCA, random projections), whose
projection does not depend on the labels and is fitted once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from sklearn.base import clone

from wideml.estimators.gram.lol import LOL, PCA, RRLDA
from wideml.estimators.gram.projector import GramProjector
from wideml.estimators.hotelling import hotelling_f, hotelling_t2
from wideml.estimators.lfl import LFL
from wideml.estimators.rp import RP
from wideml.estimators.params import NONE, POSITIVE_INT, SEED, Options, Satisfies, check_parameters
from wideml.exceptions import WidemlError
from wideml.inputs.door import FitInput, fit_input
from wideml.passes.chunkmath import resolve_precision
from wideml.passes.gram import GramPass
from wideml.runner.fit_runner import FitPasses, algebra_threads

#: Test methods, the default first.
METHODS = ("split", "permutation")


def _named_projection(name: str, d: int | None):
    """The estimator a projection name stands for (LOL with class means: Hotelling's test compares means)."""
    if name == "lol":
        return LOL(d, robust_first=False, solver="gram")
    if name == "pca":
        return PCA(d, solver="gram")
    if name == "rrlda":
        return RRLDA(d, solver="gram")
    if name == "rp":
        return RP(d)
    return LFL(d)


#: Projection names accepted by ``projection=`` (any fitted-by-``fit`` wideml embedding instance is accepted too).
PROJECTIONS = ("lol", "pca", "rrlda", "lfl", "rp")


def _is_embedding(value) -> bool:
    return all(hasattr(value, attr) for attr in ("fit", "transform", "get_params")) and not isinstance(value, type)


#: Constraint table of :func:`two_sample_test`'s arguments.
TWO_SAMPLE_CONSTRAINTS = {
    "projection": [Options(*PROJECTIONS), Satisfies(_is_embedding, "an unfitted wideml embedding estimator (LOL, PCA, RRLDA, LFL, RP, ...)")],
    "n_components": [POSITIVE_INT, NONE],
    "method": [Options(*METHODS)],
    "n_permutations": [POSITIVE_INT],
    "random_state": [SEED, NONE],
}


@dataclass
class TwoSampleResult:
    """The result of :func:`two_sample_test` (a test result, not a decision).

    Attributes
    ----------
    statistic : float
        Hotelling's T² of the tested samples' projections.
    f_statistic : float
        Its F conversion (n0 + n1 - d - 1) / (d (n0 + n1 - 2)) T².
    p_value : float
        ``split``: P(F(d, n0 + n1 - d - 1) >= f_statistic) (exact under
        Gaussian groups with a shared covariance). ``permutation``:
        (1 + #{T²_perm >= T²}) / (1 + n_permutations).
    method : str
        "split" or "permutation".
    projection : str
        The projection's name (e.g. "LOL", "PCA").
    n_components : int
        d, the dimension of the projected samples.
    n_per_group : dict
        Group label (as text) -> number of samples tested.
    df : list of int
        Degrees of freedom [d, n0 + n1 - d - 1] of the F conversion.
    n_learn : int or None
        ``split``: samples the projection was learned on.
    n_permutations : int or None
        ``permutation``: relabellings drawn.
    n_passes : int
        Passes over X the test made.
    """

    statistic: float
    f_statistic: float
    p_value: float
    method: str
    projection: str
    n_components: int
    n_per_group: dict
    df: list
    n_learn: int | None
    n_permutations: int | None
    n_passes: int

    def to_dict(self) -> dict:
        """The result as a JSON-ready dict."""
        return asdict(self)


def two_sample_test(X, y=None, *, projection="lol", n_components: int | None = None, method: str = "split",
                    n_permutations: int = 999, random_state: int | None = 0) -> TwoSampleResult:
    """Test whether two groups have equal means, with Hotelling's T² after a low-dimensional projection.

    Parameters
    ----------
    X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional
        Two groups, labels of any kind (taken from the store when X is a
        FeatureStore and y is None).
    projection : {"lol", "pca", "rrlda", "lfl", "rp"} or wideml embedding estimator, default "lol"
        "lol" is LOL with class **means** (``LOL(robust_first=False)``):
        Hotelling's test compares means; "rp" is a Gaussian random projection
        (:class:`~wideml.estimators.rp.RP`, as in Lopes et al.). An estimator
        instance (e.g. ``LOL()`` for medians) is cloned and used as given.
    n_components : int, optional
        d (default: the estimator's ``n_components``, else 2).
    method : {"split", "permutation"}, default "split"
        See the module docstring: ``split`` learns the projection on one
        stratified half and tests the other (exact F-test under Gaussian
        data); ``permutation`` re-learns the projection under every
        relabelling (distribution-free).
    n_permutations : int, default 999
        Relabellings for ``permutation``.
    random_state : int or None, default 0
        Seed of the half split or of the permutations.

    Returns
    -------
    TwoSampleResult

    Raises
    ------
    WidemlError
        One sentence for invalid arguments, labels that are not two groups,
        or too few samples for d (checked before any pass over X).

    Notes
    -----
    LOL (class means), PCA and rrLDA make **one pass** over X whatever the
    method and the number of permutations: everything else is algebra on the
    n x n Gram. Robust LOL makes one pass with ``split``. Other embeddings
    cost their fit on the learning half plus one transform pass (``split``),
    or a fit per permutation (``permutation``; one fit for an unsupervised
    embedding). ``n_passes`` of the result records the count.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> res = wideml.two_sample_test(X, y, projection="lol", n_components=2)   # learn on one half, test the other
    >>> res.method, res.n_passes
    ('split', 1)
    >>> bool(res.p_value < 0.01)
    True
    >>> res = wideml.two_sample_test(X, y, method="permutation", n_permutations=99)
    >>> res.n_permutations, res.n_passes                        # every relabelling from the one Gram
    (99, 1)
    """
    check_parameters("two_sample_test", {"projection": projection, "n_components": n_components, "method": method,
                                         "n_permutations": n_permutations, "random_state": random_state}, TWO_SAMPLE_CONSTRAINTS)
    est = _named_projection(projection, n_components) if isinstance(projection, str) else clone(projection)
    if n_components is not None and "n_components" in est.get_params(deep=False):
        est.set_params(n_components=int(n_components))
    if hasattr(est, "_validate_parameters"):
        est._validate_parameters()
    data = fit_input(X, y)
    if data.n_classes != 2:
        raise WidemlError(f"two_sample_test compares two groups, but y has {data.n_classes} classes; give labels with exactly two classes.")
    rng = np.random.default_rng(random_state)
    if method == "split":
        return _split_test(est, data, rng)
    return _permutation_test(est, data, rng, int(n_permutations))


def _gram_based(est, method: str) -> bool:
    """Whether the test can run from one Gram pass (exact Gram solution; medians only for the split's learning half)."""
    if not isinstance(est, GramProjector) or est.solver == "randomized":
        return False
    return method == "split" or not est._uses_medians()


def _dimension(est, data: FitInput) -> int:
    d = getattr(est, "n_components", None)
    if d is None:
        d = est._default_components(data) if isinstance(est, GramProjector) else 2
        if "n_components" in est.get_params(deep=False):
            est.set_params(n_components=int(d))
    return int(d)


def _half_split(codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A stratified random half split: floor(n_c / 2) samples of each group to learn on, the rest to test (both sorted)."""
    learn, test = [], []
    for c in (0, 1):
        rows = rng.permutation(np.flatnonzero(codes == c))
        half = len(rows) // 2
        learn.append(rows[:half])
        test.append(rows[half:])
    return np.sort(np.concatenate(learn)), np.sort(np.concatenate(test))


def _check_split(est, data: FitInput, learn: np.ndarray, test: np.ndarray, d: int) -> None:
    counts = np.bincount(data.codes[learn], minlength=2)
    if counts.min() < 1:
        raise WidemlError(f"the learning half has no sample of group {_plain(data.classes[int(np.argmin(counts))])!r}; "
                          "give at least 2 samples per group.")
    if isinstance(est, GramProjector):
        bound = est._component_bound(len(learn), 2, data.n_features)
        if d > bound:
            raise WidemlError(f"n_components={d} is more than a learning half of {len(learn)} samples allows for {est._method_name()} "
                              f"(at most {bound}); lower n_components.")
    if len(test) - d - 1 < 1 or len(test) - 2 < d:
        raise WidemlError(f"n_components={d} leaves no degrees of freedom for Hotelling's F test on a tested half of {len(test)} "
                          f"samples (it needs at least d + 2 = {d + 2}); lower n_components or use method='permutation'.")


def _gram_pass(data: FitInput, est, subsets: list, label: str):
    passes = FitPasses.for_run("two-sample test", "two_sample_test", {}, data, 1, resumable=False)
    precision = getattr(est, "precision", "auto")
    stats = passes.run(GramPass(data.X, data.codes, 2, median_subsets=subsets, precision=precision, kind="test-gram"), label)
    n_passes = passes.record()
    if not np.any(stats.G):  # the centred Gram is zero: every sample is the same
        raise WidemlError(f"all {data.n_samples} samples are the same (their features do not vary), so no projection can be "
                          "learned and Hotelling's T² is not defined; give data whose samples differ.")
    return stats, n_passes


def _rows(data: FitInput, rows: np.ndarray):
    """Rows of X (in memory: an array; else a lazy dask slice read by the estimator's passes)."""
    return data.numpy_X[rows] if data.in_memory else data.X[rows]


def _split_test(est, data: FitInput, rng: np.random.Generator) -> TwoSampleResult:
    d = _dimension(est, data)
    learn, test = _half_split(data.codes, rng)
    _check_split(est, data, learn, test, d)
    if _gram_based(est, "split"):
        medians = est._uses_medians()
        stats, n_passes = _gram_pass(data, est, [learn] if medians else [], "Gram (split test)")
        P, Q = (stats.medians[0].P, stats.medians[0].Q) if medians else (None, None)
        with algebra_threads(data.n_samples):
            Z = gram_split_embedding(est, stats.G, data.codes, learn, test, d, data.n_features, P, Q)
    else:
        fitted = est.fit(_rows(data, learn), data.y[learn])
        Z = np.asarray(fitted.transform(_rows(data, test)), dtype=np.float64)
        n_passes = int(getattr(fitted, "n_fit_passes_", getattr(fitted, "n_fit_passes", 1))) + 1
    codes = data.codes[test]
    t2 = hotelling_t2(Z, codes, _eps(est, data))
    counts = np.bincount(codes, minlength=2)
    F, df1, df2, p = hotelling_f(t2, Z.shape[1], int(counts[0]), int(counts[1]))
    return TwoSampleResult(statistic=t2, f_statistic=F, p_value=p, method="split", projection=_name(est), n_components=Z.shape[1],
                           n_per_group=_groups(data, counts), df=[df1, df2], n_learn=len(learn), n_permutations=None, n_passes=n_passes)


def _permutation_test(est, data: FitInput, rng: np.random.Generator, n_permutations: int) -> TwoSampleResult:
    d = _dimension(est, data)
    n = data.n_samples
    if n - 2 < d or n - d - 1 < 1:
        raise WidemlError(f"n_components={d} needs at least {d + 2} samples for Hotelling's T², got {n}; lower n_components.")
    relabellings = [data.codes[rng.permutation(n)] for _ in range(n_permutations)]
    supervised = bool(est.__sklearn_tags__().target_tags.required) if hasattr(est, "__sklearn_tags__") else True
    if _gram_based(est, "permutation"):
        stats, n_passes = _gram_pass(data, est, [], "Gram (permutation test)")
        if d > est._component_bound(n, 2, data.n_features):
            raise WidemlError(f"n_components={d} is more than {n} samples allow for {est._method_name()}; lower n_components.")
        with algebra_threads(n):
            observed, permuted = gram_permutation_statistics(est, stats.G, data.codes, relabellings, d, data.n_features,
                                                             _eps(est, data))
    elif not supervised:  # the projection ignores the labels: fitted once, its embedding relabelled
        fitted = est.fit(_rows(data, np.arange(n)) if data.in_memory else data.X)
        Z = _training_embedding(fitted, data)
        n_passes = int(getattr(fitted, "n_fit_passes_", 1)) + (0 if hasattr(fitted, "embedding_") else 1)
        observed = hotelling_t2(Z, data.codes, _eps(est, data))
        permuted = np.array([hotelling_t2(Z, codes, _eps(est, data)) for codes in relabellings])
    else:  # refitted under every relabelling
        X = data.numpy_X if data.in_memory else data.X
        n_passes = 0
        values = []
        for codes in [data.codes, *relabellings]:
            fitted = clone(est).fit(X, data.classes[codes])
            values.append(hotelling_t2(_training_embedding(fitted, data), codes, _eps(est, data)))
            n_passes += int(getattr(fitted, "n_fit_passes_", 1)) + (0 if hasattr(fitted, "embedding_") else 1)
        observed, permuted = values[0], np.array(values[1:])
    counts = np.bincount(data.codes, minlength=2)
    F, df1, df2, _ = hotelling_f(observed, d, int(counts[0]), int(counts[1]))
    exceed = int(np.sum(permuted >= observed * (1 - 1e-12)))  # ties (up to round-off) count against the null
    return TwoSampleResult(statistic=observed, f_statistic=F, p_value=(1 + exceed) / (1 + n_permutations), method="permutation",
                           projection=_name(est), n_components=d, n_per_group=_groups(data, counts), df=[df1, df2], n_learn=None,
                           n_permutations=n_permutations, n_passes=n_passes)


def gram_split_embedding(est: GramProjector, G: np.ndarray, codes: np.ndarray, learn: np.ndarray, test: np.ndarray, d: int,
                         n_features: int, P: np.ndarray | None = None, Q: np.ndarray | None = None) -> np.ndarray:
    """The tested half's projection, learned on the learning half, from the Gram alone (no access to X).

    Parameters
    ----------
    est : LOL, PCA or RRLDA
    G : ndarray of shape (n_samples, n_samples)
        Gram of the centred samples (any common centring: the projections' coefficients sum to zero).
    codes : ndarray of int, shape (n_samples,)
    learn, test : ndarray of int
        Row indices of the two halves.
    d : int
    n_features : int
    P : ndarray of shape (n_samples, 2), optional
        Cross-products with the learning half's centred class medians (robust LOL).
    Q : ndarray of shape (2, 2), optional
        The medians' Gram.

    Returns
    -------
    ndarray of shape (len(test), d)
        Coordinates of the tested samples (up to a shift common to all rows).
    """
    medians = P is not None
    proj = est._projection(G[np.ix_(learn, learn)], codes[learn], 2, P[learn] if medians else None, Q, n_features, d)
    return proj.embed(G[np.ix_(test, learn)], P[test] if medians else None)


def gram_permutation_statistics(est: GramProjector, G: np.ndarray, codes: np.ndarray, relabellings, d: int,
                                n_features: int, eps: float = float(np.finfo(np.float64).eps)) -> tuple[float, np.ndarray]:
    """T² of the observed labels and of every relabelling, the projection re-learned each time from the Gram (no access to X).

    Parameters
    ----------
    est : LOL (class means), PCA or RRLDA
    G : ndarray of shape (n_samples, n_samples)
        Gram of the centred samples.
    codes : ndarray of int, shape (n_samples,)
    relabellings : sequence of ndarray of int, each of shape (n_samples,)
    d, n_features : int
    eps : float, default float64's
        Machine epsilon of the Gram's products (:func:`~wideml.estimators.hotelling.hotelling_t2`).

    Returns
    -------
    observed : float
    permuted : ndarray of shape (len(relabellings),)

    Notes
    -----
    Each relabelling costs one n x n eigensolve (O(n³)); a label-free
    projection (PCA) is computed once.
    """
    if est._target_required():
        def statistic(labels):
            return hotelling_t2(est._projection(G, labels, 2, None, None, n_features, d).embed(G), labels, eps)
    else:
        Z = est._projection(G, codes, 2, None, None, n_features, d).embed(G)

        def statistic(labels):
            return hotelling_t2(Z, labels, eps)
    return statistic(codes), np.array([statistic(labels) for labels in relabellings])


def _training_embedding(fitted, data: FitInput) -> np.ndarray:
    """The fitted estimator's embedding of its training samples (``embedding_`` when it keeps one, else a transform pass)."""
    Z = getattr(fitted, "embedding_", None)
    if Z is None:
        Z = fitted.transform(data.numpy_X if data.in_memory else data.X)
    return np.asarray(Z, dtype=np.float64)


def _name(est) -> str:
    name = type(est).__name__
    if isinstance(est, LOL):
        parts = ["medians" if est.robust_first else "means"] + (["quadratic"] if est.second_moment == "quadratic" else [])
        name += f" ({', '.join(parts)})"
    return name


def _eps(est, data: FitInput) -> float:
    """Machine epsilon of the precision the projection ran in (the estimator's ``precision``, "auto" for the data's dtype)."""
    return float(np.finfo(np.dtype(resolve_precision(getattr(est, "precision", "auto"), data.dtype))).eps)


def _plain(label):
    """A label as Python has it (0, 'a'), not numpy's repr (np.int64(0), np.str_('a'))."""
    return label.item() if hasattr(label, "item") else label


def _groups(data: FitInput, counts: np.ndarray) -> dict:
    return {str(_plain(label)): int(c) for label, c in zip(data.classes, counts)}


__all__ = ["METHODS", "PROJECTIONS", "TwoSampleResult", "gram_permutation_statistics", "gram_split_embedding", "two_sample_test"]
