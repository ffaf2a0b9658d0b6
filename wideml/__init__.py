"""wideml: out-of-core supervised dimensionality reduction and classification of wide data."""

__version__ = "0.1.0"

from wideml.storage import create_store, open_store, write_store  # noqa: E402

__all__ = ["__version__", "create_store", "open_store", "write_store"]
