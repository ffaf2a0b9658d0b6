"""Real-data loaders that read local files (never download); see ``shared/data/README.md``."""

from wideml.datasets.real import load_cora, load_yale_b

__all__ = ["load_cora", "load_yale_b"]
