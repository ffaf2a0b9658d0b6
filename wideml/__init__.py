"""wideml: out-of-core supervised dimensionality reduction and classification of wide data."""

from wideml._version import __version__
from wideml.exceptions import ConfigError, PerformanceWarning, StoreError, WidemlError

from wideml.storage import create_store, open_store, write_store  # noqa: E402
from wideml.storage.ingest import ingest  # noqa: E402
from wideml.storage.rechunk import rechunk  # noqa: E402
from wideml.estimators import (  # noqa: E402
    LFL,
    LOL,
    PCA,
    RRLDA,
    EmbeddingClassifier,
    EncoderClassifier,
    KernelLOL,
    KernelPCA,
    KPCATrick,
    cross_validate_dims,
    cross_validate_encoder,
)
from wideml.estimators.persistence import load_model, save_model  # noqa: E402
from wideml.storage.layout import ignore_feature_layout  # noqa: E402
from wideml.maps import write_maps  # noqa: E402
from wideml.estimators.image_input import images_to_array  # noqa: E402

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
    "LFL",
    "LOL",
    "PCA",
    "RRLDA",
    "EmbeddingClassifier",
    "__version__",
    "create_store",
    "ignore_feature_layout",
    "images_to_array",
    "cross_validate_dims",
    "ingest",
    "load_model",
    "open_store",
    "rechunk",
    "save_model",
    "write_maps",
    "write_store",
]
