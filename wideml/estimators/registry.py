"""Method names used by the command line, mapped to estimator factories."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wideml.exceptions import WidemlError


@dataclass(frozen=True)
class Method:
    """A named method: how to build its embedding and which classifier follows it."""

    name: str
    description: str
    build: Callable[..., object]
    classifier: str = "lda"
    gram_based: bool = True  #: has a dimension to cross-validate from the Gram (``wideml cv``)
    wrap_classifier: bool = True  #: ``wideml fit`` wraps the embedding in an EmbeddingClassifier


def _solver_kw(kw) -> dict:
    return {
        "precision": kw.get("precision") or "float64",
        "solver": kw.get("solver") or "auto",
        "n_power_iter": 1 if kw.get("n_power_iter") is None else kw["n_power_iter"],
        "random_state": kw.get("seed") or 0,
    }


def _lol(**kw):
    from wideml.estimators.lol import LOL

    return LOL(kw.get("n_components"), robust_first=kw.get("robust", True), orthogonalize=kw.get("orthogonalize", False), **_solver_kw(kw))


def _qoq(**kw):
    from wideml.estimators.lol import LOL

    opts = _solver_kw(kw) | {"solver": "gram" if (kw.get("solver") or "auto") == "auto" else kw["solver"]}
    return LOL(kw.get("n_components"), robust_first=kw.get("robust", True), second_moment="quadratic",
               orthogonalize=kw.get("orthogonalize", False), **opts)


def _pca(**kw):
    from wideml.estimators.lol import PCA

    return PCA(kw.get("n_components"), **_solver_kw(kw))


def _rrlda(**kw):
    from wideml.estimators.lol import RRLDA

    return RRLDA(kw.get("n_components"), **_solver_kw(kw))


def _lfl(**kw):
    from wideml.estimators.lfl import LFL

    return LFL(kw.get("n_components"), robust_first=kw.get("robust_lfl", False), random_state=kw.get("seed") or 0)


METHODS: dict[str, Method] = {
    "lol": Method("lol", "LOL: class-centroid differences + class-centred principal directions, then LDA", _lol),
    "qoq": Method("qoq", "QOQ: centroid differences + per-class principal directions, then QDA", _qoq, "qda"),
    "pca": Method("pca", "PCA of the pooled-centred data, then LDA", _pca),
    "rrlda": Method("rrlda", "reduced-rank LDA (class-centred PCA), then LDA", _rrlda),
    "lfl": Method("lfl", "LFL: centroid differences + very sparse random projections (one pass), then LDA", _lfl, "lda", False),
}


def get_method(name: str) -> Method:
    """Look up a method by its command-line name."""
    try:
        return METHODS[name]
    except KeyError:
        raise WidemlError(f"unknown method {name!r}; valid methods are {', '.join(METHODS)}.") from None
