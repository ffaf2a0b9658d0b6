"""Feature stores (zarr v3 / HDF5), ingest, rechunk and model stores.

``ingest`` and ``rechunk`` live in their submodules (and at the top level, ``wideml.ingest`` /
``wideml.rechunk``); they are not re-exported here so the submodule names stay importable.
"""

from wideml.storage.featurestore import FeatureStore, format_summary, open_store
from wideml.storage.writer import StoreWriter, check_labels, create_store, write_store

__all__ = ["FeatureStore", "StoreWriter", "check_labels", "create_store", "format_summary", "open_store", "write_store"]
