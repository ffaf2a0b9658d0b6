"""Small masked image stores for the maps tests, written with ``write_spatial`` through the ordinary store writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wideml.storage.spatial import SpatialReference

GRID = (6, 7, 5)
EFFECT = 6  # features 0..EFFECT-1 are higher in the second class


def reference(seed: int = 3) -> SpatialReference:
    """A 2 mm grid with an oblique-free affine, MNI-like origin and a random mask of ~60% of the voxels."""
    rng = np.random.default_rng(seed)
    mask = rng.random(GRID) > 0.4
    affine = np.diag([2.0, 2.0, 2.5, 1.0])
    affine[:3, 3] = [-6.0, -7.0, -5.0]
    header = {"zooms": [2.0, 2.0, 2.5], "xyzt_units": 10, "qform_code": 1, "sform_code": 4}
    return SpatialReference(GRID, affine, header, mask)


def data(ref: SpatialReference, counts=(24, 24), seed: int = 5, shift: float = 1.5):
    """(X float32 (n, p), y) with class k shifted by ``k * shift`` on the first EFFECT features."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(counts)), counts)
    X = rng.standard_normal((len(y), ref.n_features)).astype(np.float32)
    X[:, :EFFECT] += (y[:, None] * shift).astype(np.float32)
    return X, y


def feature_ids(p: int) -> list[str]:
    return [f"gene{j:04d}" for j in range(p)]


def masked_store(path: Path, counts=(24, 24), ids: bool = True, seed: int = 5):
    """Write a masked store at ``path``; returns (ref, X, y)."""
    from wideml import write_store

    ref = reference()
    X, y = data(ref, counts, seed)
    write_store(path, X, y, spatial=ref, feature_ids=feature_ids(ref.n_features) if ids else None, feature_chunk=32)
    return ref, X, y
