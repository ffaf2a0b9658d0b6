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
    gram_based: bool = True  #: every fold and dimension cross-validated from the one pass of ``wideml cv`` (Gram, random products)
    wrap_classifier: bool = True  #: ``wideml fit`` wraps the embedding in an EmbeddingClassifier


def _solver_kw(kw) -> dict:
    return {
        "precision": kw.get("precision") or "auto",
        "solver": kw.get("solver") or "auto",
        "n_power_iter": 1 if kw.get("n_power_iter") is None else kw["n_power_iter"],
        "random_state": kw.get("seed") or 0,
    }


def _lol(**kw):
    from wideml.estimators.gram.lol import LOL

    return LOL(kw.get("n_components"), robust_first=kw.get("robust", True), orthogonalize=kw.get("orthogonalize", False), **_solver_kw(kw))


def _qoq(**kw):
    from wideml.estimators.gram.lol import LOL

    opts = _solver_kw(kw) | {"solver": "gram" if (kw.get("solver") or "auto") == "auto" else kw["solver"]}
    return LOL(kw.get("n_components"), robust_first=kw.get("robust", True), second_moment="quadratic",
               orthogonalize=kw.get("orthogonalize", False), **opts)


def _pca(**kw):
    from wideml.estimators.gram.lol import PCA

    return PCA(kw.get("n_components"), **_solver_kw(kw))


def _rrlda(**kw):
    from wideml.estimators.gram.lol import RRLDA

    return RRLDA(kw.get("n_components"), **_solver_kw(kw))


def _lfl(**kw):
    from wideml.estimators.lfl import LFL

    return LFL(kw.get("n_components"), robust_first=kw.get("robust_lfl", False), random_state=kw.get("seed") or 0)


def _rp(**kw):
    from wideml.estimators.rp import RP

    return RP(kw.get("n_components"), random_state=kw.get("seed") or 0, precision=kw.get("precision") or "auto")


def _encoder(**kw):
    from wideml.estimators.encoder.estimator import EncoderClassifier

    return EncoderClassifier(kernels=kw.get("kernels") or ("linear", "euclidean", "spearman"),
                             selection=kw.get("selection") or "cross_entropy", random_state=kw.get("seed") or 0)


def _sigma(kw) -> float:
    return 1.0 if kw.get("sigma") is None else kw["sigma"]


def _kpca_default_components(n_samples: int | None) -> int | None:
    """100 KPCA components (the paper suggests 100-200) when there are more samples; else all non-zero ones."""
    return 100 if n_samples is not None and n_samples > 200 else None


def _kpca(learner):
    def build(**kw):
        from wideml.estimators.kernel.kpca_trick import KPCATrick

        return KPCATrick(learner=learner, kernel=kw.get("kernel") or "rbf", sigma=_sigma(kw),
                         selection=kw.get("kernel_selection") or "fixed",
                         n_components=kw.get("n_components") or _kpca_default_components(kw.get("n_samples")),
                         random_state=kw.get("seed") or 0)

    return build


def _kernel_lol(**kw):
    from wideml.estimators.kernel.kernel_lol import KernelLOL

    return KernelLOL(n_components=kw.get("n_components") or 10, kernel=kw.get("kernel") or "rbf", sigma=_sigma(kw),
                     random_state=kw.get("seed") or 0)


METHODS: dict[str, Method] = {
    "lol": Method("lol", "LOL: class-centroid differences + class-centred principal directions, then LDA", _lol),
    "qoq": Method("qoq", "QOQ: centroid differences + per-class principal directions, then QDA", _qoq, "qda"),
    "pca": Method("pca", "PCA of the pooled-centred data, then LDA", _pca),
    "rrlda": Method("rrlda", "reduced-rank LDA (class-centred PCA), then LDA", _rrlda),
    "lfl": Method("lfl", "LFL: centroid differences + very sparse random projections (one pass), then LDA", _lfl),
    "rp": Method("rp", "RP: Gaussian random projection (one pass), then LDA", _rp),
    "encoder": Method("encoder", "multi-kernel encoder (X-to-U kernels to the class means), then LDA", _encoder, "lda", False, False),
    "kpca-nca": Method("kpca-nca", "KPCA trick + NCA, then 1-NN", _kpca("nca"), "1nn", False, False),
    "kpca-lmnn": Method("kpca-lmnn", "KPCA trick + LMNN, then 1-NN", _kpca("lmnn"), "1nn", False, False),
    "kpca-dne": Method("kpca-dne", "KPCA trick + DNE, then 1-NN", _kpca("dne"), "1nn", False, False),
    "kernel-lol": Method("kernel-lol", "LOL on KPCA coordinates, then LDA", _kernel_lol, "lda", False, False),
}


def get_method(name: str) -> Method:
    """Look up a method by its command-line name."""
    try:
        return METHODS[name]
    except KeyError:
        raise WidemlError(f"unknown method {name!r}; valid methods are {', '.join(METHODS)}.") from None
