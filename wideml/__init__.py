"""wideml: out-of-core supervised dimensionality reduction and classification of wide data."""

from typing import TYPE_CHECKING

from wideml._version import __version__
from wideml.exceptions import ConfigError, PerformanceWarning, StoreError, WidemlError

if TYPE_CHECKING:  # for type checkers and the import contract (import-linter sees these imports); never run
    from wideml.estimators import (
        LFL,
        LOL,
        PCA,
        LOLRegressor,
        RP,
        RRLDA,
        EmbeddingClassifier,
        EncoderClassifier,
        KernelLOL,
        KernelPCA,
        KPCATrick,
        cross_validate_dims,
        cross_validate_encoder,
        two_sample_test,
    )
    from wideml.estimators.compare import compare
    from wideml.inputs.images import images_to_array
    from wideml.models.persistence import load_model, save_model
    from wideml.maps import write_maps
    from wideml.report import report
    from wideml.runtime.settings import config
    from wideml.storage import FeatureStore, create_store, open_store, write_store
    from wideml.sources.ingest import ingest
    from wideml.storage.layout import ignore_feature_layout
    from wideml.storage.rechunk import rechunk

#: Where each public name lives: imported on first use (PEP 562), so ``import wideml`` (and the console
#: script's ``wideml.cli.entry``, which must handle Ctrl-C before numpy, dask and scikit-learn load) stays cheap.
_LAZY = {
    "config": "wideml.runtime.settings",
    "FeatureStore": "wideml.storage",
    "create_store": "wideml.storage",
    "open_store": "wideml.storage",
    "write_store": "wideml.storage",
    "ingest": "wideml.sources.ingest",
    "rechunk": "wideml.storage.rechunk",
    **{name: "wideml.estimators" for name in (
        "LFL", "LOL", "PCA", "RP", "RRLDA", "EmbeddingClassifier", "EncoderClassifier", "KernelLOL", "KernelPCA",
        "KPCATrick", "cross_validate_dims", "cross_validate_encoder", "LOLRegressor", "two_sample_test")},
    "load_model": "wideml.models.persistence",
    "save_model": "wideml.models.persistence",
    "ignore_feature_layout": "wideml.storage.layout",
    "write_maps": "wideml.maps",
    "report": "wideml.report",  # the function; the package wideml.report is callable alike
    "images_to_array": "wideml.inputs.images",
    "compare": "wideml.estimators.compare",
}


def __getattr__(name: str):
    """Import a public name (or a subpackage such as ``wideml.storage``) on first use."""
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif not name.startswith("_"):
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ConfigError",
    "PerformanceWarning",
    "StoreError",
    "WidemlError",
    "EncoderClassifier",
    "KPCATrick",
    "KernelLOL",
    "KernelPCA",
    "cross_validate_encoder",
    "FeatureStore",
    "LFL",
    "LOL",
    "LOLRegressor",
    "PCA",
    "RP",
    "RRLDA",
    "EmbeddingClassifier",
    "__version__",
    "config",
    "create_store",
    "ignore_feature_layout",
    "images_to_array",
    "compare",
    "cross_validate_dims",
    "ingest",
    "load_model",
    "open_store",
    "rechunk",
    "report",
    "save_model",
    "two_sample_test",
    "write_maps",
    "write_store",
]
