"""The p-sized results of a fitted model, as named feature-space maps (no pass over X).

:func:`model_maps` lists every map a model can give, each a vector of shape
(n_features,) computed on demand, block by block (:meth:`FeatureMap.block`:
the values of features ``lo:hi``, read through one
:class:`~wideml.maps.blocks.BlockReader` per model, so that all the maps of a
block come from one read of the model's p-sized arrays; :meth:`FeatureMap.load`
gives the whole vector, for small models and tests):

- ``direction_<j>``: the j-th loading direction (column j of
  ``components_.T``), for LOL, QOQ, PCA, rrLDA and LFL (and the embedding of
  an EmbeddingClassifier);
- ``class_mean_<label>`` (or ``class_median_<label>`` / LFL's centroids): the
  class centres the model keeps (models fitted on a store; in-memory fits keep
  none);
- ``mean_difference``: second class minus first (two classes), or
  ``mean_difference_<label>``: each class minus the pooled training mean
  (more classes);
- ``discriminant_weights`` (two classes) or ``discriminant_weights_<label>``:
  the feature-space weights ``w`` of an EmbeddingClassifier with LDA, such that
  ``decision_function(X) == X @ w + b`` (derivation in :func:`lda_feature_weights`);
  each such map carries its intercept ``b`` (:attr:`FeatureMap.intercept`, the
  ``intercept`` of its ``maps.json`` entry), so the formula can be used from
  the files alone.

**Sign convention.** Positive means *higher in the second class*
(``classes_[1]``) than in the first (``classes_[0]``). Each direction's sign
is flipped, where needed, so that its inner product with the mean difference
``mu_2 - mu_1`` is positive, i.e. the second class scores higher along it; the
model's own sign (for LOL, set by which class is more populous) is thus
removed. The difference is taken from the training embedding
(``embedding_``, whose class means differ by ``(mu_2 - mu_1) @ A``), so it
needs no class means. Class means and medians are not flipped. The LDA
weights need no flip: for two classes a positive decision favours
``classes_[1]``. Unlabelled fits (one class) keep the model's signs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from wideml.estimators.classifier import EmbeddingClassifier
from wideml.exceptions import ConfigError
from wideml.maps.blocks import BlockReader
from wideml.runtime import compute


SIGN_CONVENTION = ("positive = higher in the second class (classes_[1]) than in the first (classes_[0]); every direction is "
                   "flipped so that the second class scores higher along it (its inner product with mu_2 - mu_1 is positive); "
                   "class means/medians are not flipped")


@dataclass
class FeatureMap:
    """One p-sized map of a model.

    Attributes
    ----------
    name : str
        File stem, e.g. ``direction_1``.
    kind : str
        "direction", "class_mean", "class_median", "centroid", "mean_difference" or "discriminant_weights".
    meaning : str
        One sentence for the manifest.
    values : callable
        ``values(lo, hi)``: the values of features ``lo:hi``, ndarray of float64 of
        shape (hi - lo,); every value equals the whole vector's (elementwise
        or per-feature arithmetic only).
    n_features : int
    flipped : bool or None
        Whether the model's sign was flipped (directions only).
    intercept : float or None
        The intercept ``b`` of ``decision_function(X) = X @ w + b`` (discriminant weights only).
    """

    name: str
    kind: str
    meaning: str
    values: Callable[[int, int], np.ndarray]
    n_features: int
    flipped: bool | None = None
    intercept: float | None = None

    def block(self, lo: int, hi: int) -> np.ndarray:
        """The values of features ``lo:hi``, float64 of shape (hi - lo,) (no pass over X; reads that block of the model's arrays)."""
        return np.asarray(self.values(lo, hi), dtype=np.float64).reshape(-1)

    def load(self) -> np.ndarray:
        """The whole map, float64 of shape (n_features,) (O(p) memory: :func:`wideml.maps.write_maps` walks blocks instead)."""
        return self.block(0, self.n_features)


@dataclass
class ModelMaps:
    """The maps of a model and what could not be mapped (``notes``: sentences for the manifest)."""

    model: str
    classes: list
    n_features: int
    maps: list[FeatureMap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reader: BlockReader = field(default_factory=BlockReader, repr=False)


def _dense(values) -> np.ndarray:
    """A dask or zarr-backed array as float64 numpy (one compute)."""
    if hasattr(values, "dask"):
        (values,) = compute(values, label="maps: read the model's p-sized arrays")
    return np.asarray(values, dtype=np.float64)


def safe_label(label) -> str:
    """A class label as a file-name part (letters, digits, ``-``, ``.``, ``_``)."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", str(label.item() if hasattr(label, "item") else label)).strip("._")
    return text or "class"


def direction_signs(embedding: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """+1 or -1 per embedding column: the sign making the second class's mean score exceed the first's.

    Parameters
    ----------
    embedding : ndarray of shape (n_train, d)
        Training coordinates ``X A - offset``.
    codes : ndarray of shape (n_train,)
        Class codes (indices into ``classes_``).
    n_classes : int

    Returns
    -------
    ndarray of shape (d,)
        All +1 when there are fewer than two classes (nothing to orient by).
    """
    embedding = np.asarray(embedding, dtype=np.float64)
    if n_classes < 2:
        return np.ones(embedding.shape[1])
    gap = embedding[codes == 1].mean(axis=0) - embedding[codes == 0].mean(axis=0)  # (mu_2 - mu_1) @ A
    return np.where(gap < 0, -1.0, 1.0)


def lda_feature_weights(components_T, offset: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> tuple:
    """Feature-space weights of LDA on a projection: ``decision_function(X) == X @ W + b``.

    The projector maps ``x`` to ``z = x A - offset`` (``A`` = ``components_.T``,
    p x d; ``offset`` = ``m A`` with the training means ``m``). LDA's decision
    function is ``z coef^T + intercept``, hence
    ``x (A coef^T) + (intercept - offset coef^T)``.

    Parameters
    ----------
    components_T : ndarray or dask array of shape (n_features, d)
    offset : ndarray of shape (d,)
    coef : ndarray of shape (k, d)
        ``k`` = 1 for two classes, else the number of classes.
    intercept : ndarray of shape (k,)

    Returns
    -------
    W : ndarray of shape (n_features, k)
    b : ndarray of shape (k,)
    """
    coef = np.asarray(coef, dtype=np.float64)
    W = _dense(components_T @ coef.T)
    return W, lda_feature_intercepts(offset, coef, intercept)


def lda_feature_intercepts(offset: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
    """The intercepts ``b = intercept - offset coef^T`` of :func:`lda_feature_weights` (no p-sized work).

    Parameters
    ----------
    offset : ndarray of shape (d,)
    coef : ndarray of shape (k, d)
    intercept : ndarray of shape (k,)

    Returns
    -------
    ndarray of shape (k,)
    """
    coef = np.asarray(coef, dtype=np.float64)
    return np.asarray(intercept, dtype=np.float64) - np.asarray(offset, dtype=np.float64) @ coef.T


def model_maps(model) -> ModelMaps:
    """Every p-sized map of a fitted model (values computed only when a map's ``block`` or ``load`` is called).

    Parameters
    ----------
    model : fitted LOL, PCA, RRLDA, LFL, EmbeddingClassifier or EncoderClassifier

    Returns
    -------
    ModelMaps

    Raises
    ------
    ConfigError
        For a model with no feature-space maps (kernel models) or one not fitted.
    """
    if not hasattr(model, "n_features_in_"):
        raise ConfigError(f"the {type(model).__name__} is not fitted, so it has no maps; fit it (or load a saved model) first.")
    inner = model.embedding_ if isinstance(model, EmbeddingClassifier) else model
    kernel = hasattr(inner, "basis_") or hasattr(inner, "kpca_") or hasattr(inner, "training_")
    if kernel or (not hasattr(inner, "components_") and getattr(inner, "class_means_", None) is None):
        raise ConfigError(f"a {type(model).__name__} has no feature-space maps (its directions live in sample space); "
                          "write maps of a LOL, PCA, RRLDA, LFL, EmbeddingClassifier or EncoderClassifier model.")
    classes = list(np.asarray(model.classes_).tolist())
    out = ModelMaps(type(model).__name__, classes, int(model.n_features_in_))
    codes = np.asarray(getattr(inner, "train_codes_", np.zeros(0, dtype=int)))
    if hasattr(inner, "components_"):
        _add_directions(out, inner, codes)
    _add_centres(out, inner, codes)
    if isinstance(model, EmbeddingClassifier):
        _add_discriminant(out, model)
    elif hasattr(model, "kernel_"):
        out.notes.append("an EncoderClassifier classifies kernel similarities to the class means, so it has no single linear "
                         "weight map; none is written.")
    return out


def _f64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


class _Whole:
    """A product of in-memory arrays, (k, p), computed whole on first read (the model's arrays are in memory already)."""

    def __init__(self, make: Callable[[], np.ndarray], shape: tuple[int, int]):
        self._make, self.shape, self._value = make, shape, None

    def __getitem__(self, key):
        if self._value is None:
            self._value = np.asarray(self._make())
        return self._value[key]


def _product(make: Callable, source, shape: tuple[int, int]):
    """``make()`` as the maps read it: lazy for a dask ``source`` (each block computes the same chunk products a whole
    compute would, so values do not depend on the block size), else computed whole once."""
    return make() if hasattr(source, "dask") else _Whole(make, shape)


def _add_directions(out: ModelMaps, est, codes: np.ndarray) -> None:
    signs = direction_signs(est.embedding_, codes, len(out.classes))
    kinds = list(getattr(est, "component_kinds_", None) or ["direction"] * len(signs))
    reader, A = out.reader, est.components_  # (d, p)
    reader.add(A)
    for j, sign in enumerate(signs):
        kind = kinds[j] if j < len(kinds) else "direction"
        what = {"delta": "a class-centre difference", "eigen": "a second-moment eigen-direction"}.get(kind, "a loading direction")
        out.maps.append(FeatureMap(
            f"direction_{j + 1}", "direction",
            f"loading direction {j + 1} of {type(est).__name__} ({what}), oriented so that the second class scores higher along it",
            lambda lo, hi, j=j, sign=sign: sign * _f64(reader.rows(A, lo, hi)[j]), out.n_features, flipped=bool(sign < 0)))


def _centres(est) -> list:
    """[(kind, K x p array)] of the class centres a model keeps: means first, then medians (robust fits)."""
    if getattr(est, "centroids_", None) is not None:  # LFL
        return [("class_median" if getattr(est, "robust_first", False) else "class_mean", est.centroids_)]
    found = [(kind, getattr(est, attr, None)) for kind, attr in (("class_mean", "class_means_"), ("class_median", "class_medians_"))]
    return [(kind, arr) for kind, arr in found if arr is not None]


def _add_centres(out: ModelMaps, est, codes: np.ndarray) -> None:
    centres = _centres(est)
    if not centres:
        out.notes.append("the model keeps no class means (it was fitted on in-memory data), so no class-mean or mean-difference "
                         "maps are written; fit on a feature store to get them.")
        return
    reader, p = out.reader, out.n_features
    for kind, arr in centres:
        reader.add(arr)
        word = "median" if kind == "class_median" else "mean"
        for k, label in enumerate(out.classes):
            out.maps.append(FeatureMap(f"class_{word}_{safe_label(label)}", kind, f"class {word} of class {label!r} (not flipped)",
                                       lambda lo, hi, k=k, arr=arr: _f64(reader.rows(arr, lo, hi)[k]), p))
    kind, centres = centres[0]  # the difference: of the means when the model keeps them
    word = "median" if kind == "class_median" else "mean"
    K = len(out.classes)
    if K == 2:
        out.maps.append(FeatureMap("mean_difference", "mean_difference",
                                   f"class {word} of {out.classes[1]!r} minus class {word} of {out.classes[0]!r} "
                                   "(positive = higher in the second class)",
                                   lambda lo, hi: _f64(reader.rows(centres, lo, hi)[1]) - _f64(reader.rows(centres, lo, hi)[0]), p))
    elif K > 2:
        weights = np.bincount(codes, minlength=K).astype(np.float64) if codes.size else np.ones(K)
        weights /= weights.sum()
        pooled = _product(lambda: (weights @ centres)[None, :], centres, (1, p))  # (1, p), chunk by chunk as a whole product
        reader.add(pooled)
        for k, label in enumerate(out.classes):
            out.maps.append(FeatureMap(
                f"mean_difference_{safe_label(label)}", "mean_difference",
                f"class {word} of {label!r} minus the pooled training {word} (class {word}s weighted by class size)",
                lambda lo, hi, k=k: _f64(reader.rows(centres, lo, hi)[k]) - _f64(reader.rows(pooled, lo, hi)[0]), p))


def _add_discriminant(out: ModelMaps, model) -> None:
    clf = model.classifier_
    if not hasattr(clf, "coef_"):
        out.notes.append(f"the classifier is {type(clf).__name__}, whose decision function is quadratic in the features, so "
                         "there is no single linear weight map; none is written.")
        return
    emb = model.embedding_
    reader, A, p = out.reader, emb.components_, out.n_features
    coef = np.asarray(clf.coef_, dtype=np.float64)
    W_T = _product(lambda: (A.T @ coef.T).T, A, (coef.shape[0], p))  # (k, p): W of lda_feature_weights, transposed
    reader.add(W_T)
    b = lda_feature_intercepts(emb.offset_, clf.coef_, clf.intercept_)

    def weights(lo: int, hi: int, col: int) -> np.ndarray:
        return _f64(reader.rows(W_T, lo, hi)[col])

    if clf.coef_.shape[0] == 1:
        out.maps.append(FeatureMap("discriminant_weights", "discriminant_weights",
                                   f"feature-space weights w of the LDA decision function (decision_function(X) = X @ w + b, "
                                   f"b = this entry's intercept; X the raw features; positive favours {out.classes[1]!r})",
                                   lambda lo, hi: weights(lo, hi, 0), p, intercept=float(b[0])))
        return
    for k, label in enumerate(out.classes):
        out.maps.append(FeatureMap(f"discriminant_weights_{safe_label(label)}", "discriminant_weights",
                                   f"feature-space weights of the LDA decision function for class {label!r} "
                                   f"(column {k} of decision_function(X) = X @ W + b, with this entry's intercept as b[{k}]; "
                                   "X the raw features)", lambda lo, hi, k=k: weights(lo, hi, k), p, intercept=float(b[k])))
