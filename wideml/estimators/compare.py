"""Comparisons across data sets: every method cross-validated on every store, ranks, exact Wilcoxon tests.

The LOL paper's real-data evaluation (its Fig. 5): on each data set, each
method's embedding dimension is chosen by cross-validation, and the methods
are compared across data sets by their ranks and by Wilcoxon signed-rank
tests of LOL against each other method. :func:`compare` runs
:func:`~wideml.estimators.gram.cv.cross_validate_dims` on each store (one pass
over that store's X for every method, fold and d), keeps per method the
smallest d with the lowest mean CV error, its error (mean and sd over the
splits) and its Cohen's kappa, and then, with no further pass:

- ranks of the methods' errors on each store where every method was scored
  (1 = lowest error; average ranks for ties) and their means;
- the exact Wilcoxon signed-rank test (:mod:`wideml.estimators.wilcoxon`) of
  the reference (LOL) against each other method, on errors and on kappas,
  one-sided (alternative: the reference is better) and two-sided, with the
  zero and tie handling named; wins/ties/losses, the mean and median
  difference and the matched-pairs rank-biserial correlation as effect sizes.

Decisions:

- A store that cannot be scored (no labels, a class with fewer samples than
  folds, every method failing) is reported in the result with its sentence
  and left out of ranks and tests; the other stores go on. A method that fails
  on one store is reported there and that store is left out of the ranks and
  of that method's pairs.
- ``adapt_folds=True`` lowers the folds of a store whose smallest class has
  fewer than ``cv`` samples to that class's size (at least 2), and says so.
- d_max per store: ``max_dim`` (default 20), capped at what the smallest
  training fold allows for the method; ``max_dim="rank"``: up to the smallest
  numerical rank of the training folds (see ``cross_validate_dims``).
- The chosen d's error is the minimum of the CV curve, so it is optimistic for
  every method alike (the paper's protocol as well); the ranks and tests
  compare methods on the same footing.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import rankdata
from sklearn.base import clone

from wideml.estimators.compare_result import CompareResult, MethodScore, PairedComparison, StoreComparison
from wideml.estimators.gram.cv import cross_validate_dims, repeated_folds
from wideml.estimators.gram.lol import LOL, PCA, RRLDA
from wideml.estimators.gram.projector import GramProjector
from wideml.estimators.lfl import LFL
from wideml.estimators.params import NONE, Boolean, Interval, Options, Satisfies, check_parameters
from wideml.estimators.rp import RP
from wideml.estimators.wilcoxon import DEFAULT_TOL, ZERO_METHODS, signed_rank_test
from wideml.exceptions import WidemlError
from wideml.storage import FeatureStore, open_store
from wideml.storage.labels import label_text, normalise_labels
from wideml.storage.urls import is_url, local_path_of

#: Methods :func:`compare` builds by name (all cross-validated from the one pass).
METHOD_NAMES = ("lol", "qoq", "pca", "rrlda", "lfl", "rp")

#: Most rounds of folds :func:`compare` runs, and most splits (folds × rounds) per store: more would run for days.
MAX_REPEATS = 1000
MAX_SPLITS = 10_000
#: Largest seed: the folds' shuffles take numpy's legacy seeds, below 2**32.
MAX_SEED = 2**32 - 1

#: Largest embedding dimension by default (as ``wideml cv``), capped at what a training fold allows.
DEFAULT_MAX_DIM = 20


def build_method(name: str, n_components: int | None = None, random_state: int = 0, robust: bool = True):
    """The estimator :func:`compare` scores for a method name.

    Parameters
    ----------
    name : {"lol", "qoq", "pca", "rrlda", "lfl", "rp"}
    n_components : int, optional
    random_state : int
    robust : bool
        LOL/QOQ: class medians for the centroid differences (LOL's default) instead of means.

    Returns
    -------
    GramProjector, LFL or RP
    """
    if name == "lol":
        return LOL(n_components, robust_first=robust, random_state=random_state)
    if name == "qoq":
        return LOL(n_components, robust_first=robust, second_moment="quadratic", solver="gram", random_state=random_state)
    if name == "pca":
        return PCA(n_components, random_state=random_state)
    if name == "rrlda":
        return RRLDA(n_components, random_state=random_state)
    if name == "lfl":
        return LFL(n_components, random_state=random_state)
    if name == "rp":
        return RP(n_components, random_state=random_state)
    raise WidemlError(f"unknown method {name!r} for compare; valid methods are {', '.join(METHOD_NAMES)}.")


def _method_list(methods, random_state: int, robust: bool) -> dict:
    """{name: estimator template} from names (a sequence or comma-separated text) or a dict of estimators."""
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    if isinstance(methods, Mapping):
        out = {str(k): v for k, v in methods.items()}
        for name, est in out.items():
            if not isinstance(est, (GramProjector, LFL, RP)):
                raise WidemlError(f"method {name!r} is a {type(est).__name__}; compare scores LOL, QOQ, PCA, RRLDA, LFL and RP "
                                  "estimators (each from one pass per store).")
    else:
        names = list(dict.fromkeys(methods)) if isinstance(methods, Sequence) else []
        if not names or not all(isinstance(n, str) for n in names):
            raise WidemlError("methods must name at least one of lol, qoq, pca, rrlda, lfl, rp (or be a dict of estimators).")
        out = {n: build_method(n, random_state=random_state, robust=robust) for n in names}
    if len(out) < 2:
        raise WidemlError(f"compare needs at least two methods to compare, got {list(out)}; add one (e.g. pca).")
    return out


def _store_list(stores) -> dict:
    """{name: store} from a dict, or from a sequence of paths / FeatureStores / (X, y) pairs named after their files.

    A store given twice (the same resolved path or URL, or the same FeatureStore) is refused: it would count one
    data set twice in the ranks and tests. Stores whose files share a name are named by their shortest unique
    path suffix (``x/a.zarr``, ``y/a.zarr``).
    """
    if isinstance(stores, (str, os.PathLike, FeatureStore)):
        stores = [stores]
    if isinstance(stores, Mapping):
        items = {str(k): v for k, v in stores.items()}
    elif isinstance(stores, Sequence):
        names = _names(list(stores))
        items = {}
        for i, item in enumerate(stores):
            items[_unique(names[i], items)] = item
    else:
        raise WidemlError(f"stores must be a list of store paths (or FeatureStores, or (X, y) pairs) or a dict of them, "
                          f"not a {type(stores).__name__}.")
    if not items:
        raise WidemlError("no stores to compare; give at least one store path.")
    refuse_repeated_stores(list(items.values()))
    return items


def store_identity(item) -> str | None:
    """What makes two stores the same: the resolved local path, the URL without a trailing slash, or (an in-memory
    pair) None."""
    if isinstance(item, FeatureStore):
        item = item.path
    if not isinstance(item, (str, os.PathLike)):
        return None
    text = os.fspath(item).strip()
    if is_url(text) and local_path_of(text) is not None:
        text = local_path_of(text)
    if "://" in text:
        return text.rstrip("/")
    return os.path.realpath(os.path.expanduser(text))


def refuse_repeated_stores(items: Sequence) -> None:
    """Refuse a store given twice, in one sentence naming it (it would count one data set twice in ranks and tests)."""
    seen: dict[str, object] = {}
    for item in items:
        key = store_identity(item)
        if key is None:
            continue
        if key in seen:
            raise WidemlError(f"the store {key} is given twice; each data set may be compared once (counting it twice would "
                              "inflate the ranks and Wilcoxon tests): give each store once.")
        seen[key] = item


def _path_of(item) -> str | None:
    path = item.path if isinstance(item, FeatureStore) else item
    return os.fspath(path).rstrip("/") if isinstance(path, (str, os.PathLike)) else None


def _names(items: list) -> list[str]:
    """A name per item: its file's name without .zarr/.h5; for files sharing a name, the shortest unique path suffix."""
    names = [_name_of(item, i) for i, item in enumerate(items)]
    for name in set(names):
        group = [i for i, n in enumerate(names) if n == name and _path_of(items[i]) is not None]
        if len(group) < 2:
            continue
        parts = {i: _split_path(_path_of(items[i])) for i in group}
        longest = max(len(p) for p in parts.values())
        for k in range(2, longest + 1):
            suffixes = {i: "/".join(parts[i][-k:]) for i in group}
            if len(set(suffixes.values())) == len(group):
                break
        for i in group:
            names[i] = suffixes[i]
    return names


def _split_path(path: str) -> list[str]:
    """The components of ``path`` (a URL's after its scheme; a local one made absolute first)."""
    if "://" in path:
        return [part for part in path.split("://", 1)[1].split("/") if part]
    return [part for part in os.path.abspath(os.path.expanduser(path)).split(os.sep) if part]


def _name_of(item, i: int) -> str:
    path = item.path if isinstance(item, FeatureStore) else item
    if isinstance(path, (str, os.PathLike)):
        text = os.fspath(path).rstrip("/")
        base = os.path.basename(text)
        for suffix in (".zarr", ".h5", ".hdf5"):
            if base.endswith(suffix) and len(base) > len(suffix):
                return base[: -len(suffix)]
        return base or text
    return f"data{i + 1}"


def _unique(name: str, taken: dict) -> str:
    """The name, or a numbered name when it is taken."""
    if name not in taken:
        return name
    k = 2
    while f"{name}#{k}" in taken:
        k += 1
    return f"{name}#{k}"


def _source(item) -> str:
    if isinstance(item, FeatureStore):
        return str(item.path)
    if isinstance(item, (str, os.PathLike)):
        return os.fspath(item)
    return "in-memory (X, y)"


def _open(item):
    """(X, y) for cross_validate_dims: a store opened from its path, a FeatureStore with its labels, or a given pair."""
    if isinstance(item, (str, os.PathLike)):
        item = open_store(item)
    if isinstance(item, FeatureStore):
        if item.y is None:
            raise WidemlError(f"store {str(item.path)!r} holds no labels y; comparing methods needs labelled stores.")
        return item, np.asarray(item.y), item.n_samples, item.n_features
    if isinstance(item, tuple) and len(item) == 2:
        X, y = item
        if y is None:
            raise WidemlError("an (X, y) pair has no labels y; comparing methods needs labels.")
        shape = getattr(X, "shape", None)
        if shape is None or len(shape) != 2:
            raise WidemlError("the X of an (X, y) pair must be a 2-D array (n_samples, n_features).")
        return X, normalise_labels(y, "y"), int(shape[0]), int(shape[1])
    raise WidemlError(f"a store to compare must be a path, a FeatureStore or an (X, y) pair, not a {type(item).__name__}.")


def _folds_for(y: np.ndarray, cv: int, adapt: bool) -> tuple[int, str | None]:
    """Folds for a store with labels y: ``cv``, or (``adapt``) fewer when a class is smaller; refused in one sentence otherwise."""
    labels, counts = np.unique(y, return_counts=True)
    if len(labels) < 2:
        raise WidemlError(f"the labels hold a single class ({label_text(labels[0])}); comparing classifiers needs at least two.")
    i = int(np.argmin(counts))
    smallest, label = int(counts[i]), label_text(labels[i])
    if smallest >= cv:
        return cv, None
    if smallest < 2 or not adapt:
        fix = ("drop that class or add samples to it" if smallest < 2 else
               f"use cv={smallest} or fewer, or adapt_folds=True (--adapt-folds) to lower the folds of such stores")
        raise WidemlError(f"{cv}-fold stratified CV needs {cv} samples in every class, but class {label} has {smallest}; {fix}.")
    return smallest, f"folds lowered from {cv} to {smallest} (class {label} has {smallest} samples)"


def _d_max(est, requested, n_train: int, n_classes: int, n_features: int) -> int:
    """The method's largest d on this store: the request (default 20) capped at what the smallest training fold allows."""
    if isinstance(est, GramProjector):
        bound = est.component_bound(n_train, n_classes, n_features)
    else:
        bound = min(n_train - 1, n_features)
    if requested is None:
        requested = est.n_components if est.n_components is not None else DEFAULT_MAX_DIM
    return int(max(1, min(int(requested), bound)))


def _score(name: str, r) -> MethodScore:
    """A method's row from its DimensionCV: the chosen d, its error, sd and kappa (NaN when the method failed)."""
    nan = float("nan")
    top = max(r.dims) if r.dims else 0
    if r.error is not None:
        return MethodScore(name, 0, nan, nan, nan, top, failure=r.error)
    j = r.dims.index(r.best_dim)
    kappa = r.kappa[j] if r.kappa else nan
    return MethodScore(name, int(r.best_dim), float(r.best_error), float(r.stds[j]), float(kappa), top,
                       dims=list(r.dims), errors=list(r.errors), stds=list(r.stds), kappas=list(r.kappa))


def _run_store(name: str, item, templates: dict, cv: int, repeats: int, classifier: str, max_dim, random_state: int,
               adapt_folds: bool) -> StoreComparison:
    """Every method on one store; a refusal becomes the store's ``failure``."""
    result = StoreComparison(name=name, source=_source(item))
    try:
        X, y, n, p = _open(item)
        result.n_samples, result.n_features = n, p
        result.n_classes = int(len(np.unique(y)))
        folds, result.note = _folds_for(y, cv, adapt_folds)
        K = result.n_classes
        n_train = n - math.ceil(n / folds) - K  # the smallest stratified training fold, with a margin for rounding per class
        estimators = {}
        for m, template in templates.items():
            est = clone(template)
            if max_dim == "rank":
                est.set_params(n_components=max(1, min(n, p)))
            else:
                est.set_params(n_components=_d_max(est, max_dim, n_train, K, p))
            estimators[m] = est
        splitter = folds if repeats == 1 else repeated_folds(folds, repeats, random_state)
        report = cross_validate_dims(estimators, X, y, cv=splitter, classifier=classifier, random_state=random_state,
                                     max_dim="rank" if max_dim == "rank" else None)
    except WidemlError as exc:
        result.failure = str(exc)
        return result
    result.n_folds, result.n_repeats, result.cv_name = report.n_folds, report.n_repeats, report.cv_name
    result.chance_error, result.n_passes = float(report.chance_error), int(report.n_passes)
    result.scores = {m: _score(m, report.results[m]) for m in templates}
    for m, est in estimators.items():
        why = result.scores[m].failure
        if why and getattr(est, "robust_first", False) and "do not vary within any class" in why:
            result.scores[m].failure = why + (" (Its centroid differences are class medians, which can all tie on binary or "
                                              "discrete features; robust=False, --no-robust, uses class means.)")
    if all(s.failure is not None for s in result.scores.values()):
        result.failure = "every method failed: " + next(iter(result.scores.values())).failure
        return result
    if all(s.failure is None for s in result.scores.values()):
        errors = np.round([result.scores[m].error for m in templates], 12)
        result.ranks = {m: float(r) for m, r in zip(templates, rankdata(errors, method="average"))}
    return result


def _paired(stores: dict, reference: str, method: str, measure: str, zero_method: str, tol: float) -> PairedComparison:
    """Reference against ``method`` on ``measure`` over the stores where both were scored."""
    names, diffs = [], []
    for name, s in stores.items():
        a, b = s.scores.get(reference), s.scores.get(method)
        if s.failure is not None or a is None or b is None or a.failure is not None or b.failure is not None:
            continue
        diff = b.error - a.error if measure == "error" else a.kappa - b.kappa  # positive = reference better
        if math.isnan(diff):  # kappa undefined on this store (one class predicted throughout): no pair
            continue
        names.append(name)
        diffs.append(diff)
    d = np.asarray(diffs, dtype=np.float64)
    t = signed_rank_test(d, zero_method=zero_method, tol=tol)
    nan = float("nan")
    return PairedComparison(
        reference=reference, method=method, measure=measure, stores=names,
        wins=int(np.sum(d > tol)), ties=int(np.sum(np.abs(d) <= tol)), losses=int(np.sum(d < -tol)),
        mean_difference=float(d.mean()) if d.size else nan, median_difference=float(np.median(d)) if d.size else nan,
        rank_biserial=t.rank_biserial, w_plus=t.w_plus, w_minus=t.w_minus,
        p_one_sided=t.p_greater, p_two_sided=t.p_two_sided, n_zero=t.n_zero, n_ties=t.n_ties, test=t.method,
    )


#: Constraint table of :func:`compare`'s own arguments.
COMPARE_CONSTRAINTS = {
    "cv": [Interval(2, integer=True)],
    "repeats": [Interval(1, MAX_REPEATS, integer=True)],
    "classifier": [Options("lda", "qda")],
    "max_dim": [Interval(1, integer=True), Options("rank"), NONE],
    "random_state": [Interval(0, MAX_SEED, integer=True)],
    "adapt_folds": [Boolean()],
    "zero_method": [Options(*ZERO_METHODS)],
    "tol": [Satisfies(lambda v: isinstance(v, numbers.Real) and 0 <= v < 0.5 and not isinstance(v, bool), "a number in [0, 0.5)")],
    "robust": [Boolean()],
}


def compare(
    stores,
    methods=("lol", "pca", "rrlda", "lfl", "rp"),
    cv: int = 10,
    repeats: int = 3,
    *,
    reference: str = "lol",
    classifier: str = "lda",
    max_dim=None,
    random_state: int = 0,
    adapt_folds: bool = False,
    robust: bool = True,
    zero_method: str = "wilcox",
    tol: float = DEFAULT_TOL,
) -> CompareResult:
    """Compare methods across data sets: per store the CV-chosen d, error and kappa; ranks; exact Wilcoxon tests.

    Each store costs **one pass over its X** (every method, split and d from
    :func:`~wideml.estimators.gram.cv.cross_validate_dims`); ranks and tests
    cost none.

    Parameters
    ----------
    stores : list or dict
        Feature store paths (or URLs), FeatureStores, or (X, y) pairs of any
        input ``cross_validate_dims`` takes; a dict names them (else a store is
        named after its file, e.g. ``nci60`` for ``data/nci60.zarr``).
    methods : sequence of str, comma-separated str, or dict of str -> estimator
        Names among lol, qoq, pca, rrlda, lfl, rp, or LOL/PCA/RRLDA/LFL/RP
        estimators (their other parameters kept; ``n_components`` set per store).
    cv : int, default 10
        Stratified folds per round.
    repeats : int, default 3
        Rounds of folds with new shuffles ("10-fold CV repeated 3 times").
    reference : str, default "lol"
        The method the Wilcoxon tests compare with each other method.
    classifier : {"lda", "qda"}
        Classifier on each embedding.
    max_dim : int, "rank" or None
        Largest d scored (default 20), capped per store and method at what
        the smallest training fold allows; "rank": up to the training folds'
        smallest numerical rank.
    random_state : int
        Seed of the folds and of LFL's and RP's random columns.
    adapt_folds : bool, default False
        On a store whose smallest class has fewer than ``cv`` samples, use that
        many folds (at least 2) instead of refusing the store.
    robust : bool, default True
        LOL/QOQ by name: class medians for the centroid differences (LOL's default); False: means (the paper's LOL).
    zero_method : {"wilcox", "pratt"}
        Zero differences dropped before ranking, or ranked and then dropped.
    tol : float, default 1e-12
        Differences within ``tol`` count as zero (and magnitudes within it as tied).

    Returns
    -------
    CompareResult
        ``.table()`` prints it, ``.to_json(path)`` and ``.plot(path)`` write it.

    Raises
    ------
    WidemlError
        Bad arguments (one sentence) before any pass. A store that cannot be
        scored is not raised: it is reported in the result.

    Notes
    -----
    The one-sided p-value's alternative is "the reference is better": on
    errors, smaller errors than the method's; on kappa, larger kappas. The
    test is exact (every sign pattern of the non-zero differences counted,
    :mod:`wideml.estimators.wilcoxon`), so with 7 stores that all favour
    LOL the one-sided p-value is 1/128 = 0.0078 and the two-sided 1/64.
    """
    check_parameters("compare", {"cv": cv, "repeats": repeats, "classifier": classifier, "max_dim": max_dim,
                                 "random_state": random_state, "adapt_folds": adapt_folds, "zero_method": zero_method,
                                 "tol": tol, "robust": robust}, COMPARE_CONSTRAINTS)
    if int(cv) * int(repeats) > MAX_SPLITS:
        raise WidemlError(f"cv={cv} folds repeated {repeats} times make {int(cv) * int(repeats)} splits per store, more than "
                          f"{MAX_SPLITS}; lower repeats (or cv).")
    templates = _method_list(methods, int(random_state), bool(robust))
    if reference not in templates:
        raise WidemlError(f"the reference method {reference!r} is not among the methods ({', '.join(templates)}); add it or "
                          "choose another reference.")
    for est in templates.values():
        est._validate_parameters()
    items = _store_list(stores)
    results = {name: _run_store(name, item, templates, int(cv), int(repeats), classifier, max_dim, int(random_state),
                                bool(adapt_folds)) for name, item in items.items()}
    ranked = [name for name, s in results.items() if s.ranks]
    mean_ranks = {m: float(np.mean([results[s].ranks[m] for s in ranked])) for m in templates} if ranked else {}
    mean_errors = {m: float(np.mean([results[s].scores[m].error for s in ranked])) for m in templates} if ranked else {}
    tests = [_paired(results, reference, m, measure, zero_method, float(tol))
             for m in templates if m != reference for measure in ("error", "kappa")]
    cv_name = f"{cv}-fold CV" + (f" repeated {repeats} times" if repeats > 1 else "")
    return CompareResult(stores=results, methods=list(templates), reference=reference, cv_name=cv_name, classifier=classifier,
                         ranked_stores=ranked, mean_ranks=mean_ranks, mean_errors=mean_errors, tests=tests,
                         zero_method=zero_method, tol=float(tol))


__all__ = ["COMPARE_CONSTRAINTS", "DEFAULT_MAX_DIM", "MAX_REPEATS", "MAX_SPLITS", "METHOD_NAMES", "build_method", "compare",
           "refuse_repeated_stores", "store_identity"]
