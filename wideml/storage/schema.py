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
