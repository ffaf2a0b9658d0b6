"""Real-data loaders that read local files given by path (never download)."""

from wideml.datasets.real import load_cora, load_yale_b

__all__ = ["load_cora", "load_yale_b"]
