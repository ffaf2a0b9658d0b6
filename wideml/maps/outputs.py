"""The outputs of one map, fed block by block: its values file, running peak and top-N, PNG panel, manifest entry.

:func:`wideml.maps.write_maps` makes one :class:`MapOutputs` per map, hands
each the map's values block by block in feature order (:meth:`MapOutputs.add`,
which checks them), then finishes them in map order. Nothing here holds a
whole map unless it is small (see :mod:`wideml.maps.plot`): memory is one
block plus the running summaries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wideml.exceptions import ConfigError
from wideml.maps.blocks import RunningPeak, TopN
from wideml.maps.files import NiftiStream, NpyStream, nth_flat_index, write_top_rows
from wideml.maps.model_maps import FeatureMap
from wideml.maps.plot import ImagePanel, VectorPanel
from wideml.storage.spatial import SpatialReference


class MapOutputs:
    """Everything written for one map.

    Parameters
    ----------
    folder : Path
        The write-aside folder of the maps.
    fmap : FeatureMap
    spatial : SpatialReference or None
        ``<name>.nii.gz`` in this space, else ``<name>.npy``.
    ids : ndarray of shape (n_features,) or None
        Feature ids (the ``feature_id`` column of ``<name>_top.tsv``).
    columns : dict of str to ndarray of shape (n_features,)
        More columns of ``<name>_top.tsv`` (a feature table's); the table is
        written when there are ids or such columns.
    top : int
        Rows of ``<name>_top.tsv``.
    plotter : str or None
        "nilearn", "matplotlib" or None (no PNG).
    """

    def __init__(self, folder: Path, fmap: FeatureMap, spatial: SpatialReference | None, ids, columns: dict, top: int,
                 plotter: str | None):
        self.folder, self.fmap, self.spatial, self.ids, self.columns = folder, fmap, spatial, ids, columns
        p = fmap.n_features
        self.stream = NpyStream(folder, fmap.name, p) if spatial is None else NiftiStream(folder, fmap.name, spatial)
        self.top = TopN(top) if ids is not None or columns else None
        self.peak = RunningPeak()
        self.panel = None if plotter is None else VectorPanel(p) if spatial is None else ImagePanel(spatial, plotter)

    def add(self, lo: int, values: np.ndarray) -> None:
        """The values of features ``lo:lo + values.size`` (checked: the expected count, all finite)."""
        hi = min(lo + max(1, values.size), self.fmap.n_features)
        if values.shape != (hi - lo,):
            raise ConfigError(f"the model's map {self.fmap.name} has {values.size} values for its features {lo} to {hi - 1}; "
                              "the model is corrupt — refit it.")
        if not np.all(np.isfinite(values)):
            raise ConfigError(f"the model's map {self.fmap.name} has non-finite values for {self.fmap.n_features} features; "
                              "the model is corrupt — refit it.")
        self.stream.add(values)
        self.peak.add(lo, values)
        if self.top is not None:
            self.top.add(lo, values)
        if self.panel is not None:
            self.panel.add(lo, values)

    def finish(self) -> list[str]:
        """Close the values file and write the top-features table; returns their names (the PNG comes from :meth:`draw`)."""
        if isinstance(self.stream, NiftiStream):
            hook = None
            if isinstance(self.panel, ImagePanel) and not self.panel.whole:
                self.stream.complete()
                self.panel.prepare(self.stream.peak_flat, self.stream.peak_abs, self.stream.nonzero_k)
                hook = self.panel.on_slab
            files = [self.stream.finish(on_slab=hook)]
        else:
            files = [self.stream.finish()]
        if self.top is not None:
            index, values = self.top.result()
            files.append(write_top_rows(self.folder, self.fmap.name, index, values, self.ids, self.columns))
        return files

    def draw(self, title: str) -> list[str]:
        """Draw the PNG panel (none without a plotter); returns its name in a list."""
        if self.panel is None:
            return []
        self.panel.draw(self.folder / f"{self.fmap.name}.png", title)
        return [f"{self.fmap.name}.png"]

    def close(self) -> None:
        """Release what a failed write left open (the write-aside folder is removed with its files)."""
        self.stream.close()

    def entry(self, files: list[str]) -> dict:
        """The map's manifest entry: meaning, files, peak (feature, voxel and world position, id), intercept."""
        fmap, peak = self.fmap, self.peak.index
        entry = {"name": fmap.name, "kind": fmap.kind, "meaning": fmap.meaning, "files": files,
                 "max_abs": float(self.peak.value), "peak_feature": peak}
        if fmap.flipped is not None:
            entry["flipped"] = fmap.flipped
        if fmap.intercept is not None:
            entry["intercept"] = fmap.intercept  # b of decision_function(X) = X @ w + b
        if self.spatial is not None:
            voxel = np.unravel_index(nth_flat_index(self.spatial, peak), self.spatial.grid_shape)
            entry["peak_voxel"] = [int(v) for v in voxel]
            entry["peak_world"] = [float(v) for v in (self.spatial.affine @ np.array([*voxel, 1.0]))[:3]]
        if self.ids is not None:
            entry["peak_feature_id"] = str(self.ids[peak])
        return entry
