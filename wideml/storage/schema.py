"""Names and versions of the on-disk layouts."""

FEATURE_STORE_SCHEMA = "wideml.feature-store"
FEATURE_STORE_VERSION = 3  # 2: stores record "complete": true once every chunk is written;
#                            3: image stores keep a "spatial_reference" (and a "mask" array); v1/v2 stores still open
MODEL_SCHEMA = "wideml.model"
MODEL_VERSION = 1

#: Group attribute under which wideml keeps its metadata.
ATTRS_KEY = "wideml"

X_NAME = "X"
Y_NAME = "y"
SAMPLE_IDS_NAME = "sample_ids"
FEATURE_IDS_NAME = "feature_ids"

HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5")


def store_format(path) -> str:
    """``"hdf5"`` for paths ending in an HDF5 suffix, else ``"zarr"``."""
    return "hdf5" if str(path).lower().endswith(HDF5_SUFFIXES) else "zarr"

#: Where each wideml model class lived when model files first named it. The names a model file holds are a
#: format constant: they stay these when the code moves, so every model wideml ever wrote still loads.
_FILE_MODULES = {
    "LOL": "estimators.lol", "PCA": "estimators.lol", "RRLDA": "estimators.lol", "LFL": "estimators.lfl",
    "EmbeddingClassifier": "estimators.classifier", "EncoderClassifier": "estimators.encoder",
    "KernelPCA": "estimators.kpca", "KPCATrick": "estimators.kpca_trick", "LMNN": "estimators.kpca_trick",
    "DNE": "estimators.kpca_trick", "KernelLOL": "estimators.kernel_lol",
    "LOLRegressor": "estimators.regression", "RP": "estimators.rp",
}


def class_name(cls: type) -> str:
    """How a model file names a class: ``"wideml.estimators.lol.LOL"`` for wideml's (a format constant), else module.qualname."""
    if cls.__module__.startswith("wideml.") and cls.__qualname__ in _FILE_MODULES:
        return f"wideml.{_FILE_MODULES[cls.__qualname__]}.{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"
