"""Maps out: every p-sized result of a model written as images (or arrays), PNG panels and top-feature tables.

:func:`write_maps` (and ``wideml maps MODEL -o DIR``) writes, for each map of
:func:`wideml.maps.model_maps.model_maps` (loading directions, class means or
medians, the mean difference, the LDA weight map in feature space):

- ``<name>.nii.gz`` in the original image space when the model's training
  store came from images (masked voxels back in place, 0 elsewhere, the
  stored affine), else ``<name>.npy`` (float64, shape (n_features,));
- ``<name>.png``: a panel of slices (nilearn's ``plot_stat_map`` when
  installed, else matplotlib), or the values against the feature index;
- ``<name>_top.tsv`` when the store had ``feature_ids``: the top-N features
  by |weight| (rank, feature_id, weight);
- ``maps.json``: each map's meaning, sign convention and files (the
  discriminant weight maps with their ``intercept`` b, so that
  ``decision_function(X) = X @ w + b`` can be computed from the files), and
  notes on what has no map (e.g. QDA).

Sign convention: positive = higher in the second class (``classes_[1]``);
see :mod:`wideml.maps.model_maps`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from wideml.exceptions import ConfigError
from wideml.maps.files import reference_from, write_manifest, write_top_tsv, write_values
from wideml.maps.model_maps import SIGN_CONVENTION, model_maps
from wideml.maps.plot import draw_panel, resolve_plotter
from wideml.maps.spaces import space_files
from wideml.models.persistence import estimator_layout, load_model
from wideml.storage.atomic import atomic_output, check_output
from wideml.storage.model_space import layout_feature_ids, layout_feature_table, layout_spatial


__all__ = ["write_maps"]


def write_maps(model, out_dir: str | os.PathLike, *, reference=None, top: int = 50, overwrite: bool = False,
               plot: str | None = "auto") -> list[Path]:
    """Write every p-sized map of a fitted model into a new folder (all or nothing). Reads no X.

    Parameters
    ----------
    model : fitted wideml estimator, or path of a saved model
        LOL, PCA, RRLDA, LFL, EmbeddingClassifier or EncoderClassifier.
    out_dir : path-like
        The folder to create (written aside, then renamed into place).
    reference : SpatialReference, nibabel mask image or fitted NiftiMasker, optional
        The image space of the features when the model does not record one
        (e.g. fitted on in-memory ``NiftiMasker`` output): its mask must count
        the model's features, in C order of (i, j, k). Overrides a recorded one.
    top : int, default 50
        Rows of each ``<name>_top.tsv`` (written when the model records feature ids).
    overwrite : bool, default False
        Replace an existing ``out_dir``.
    plot : {"auto", "nilearn", "matplotlib"} or None, default "auto"
        How PNG panels are drawn; None writes none.

    Returns
    -------
    list of Path
        Every file written (inside ``out_dir``), the manifest ``maps.json`` last.

    Raises
    ------
    WidemlError
        One sentence: a model with no feature-space maps, a reference of
        another size, an existing output without ``overwrite``...
    """
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ConfigError(f"top={top!r} must be a positive integer (rows of each top-features table).")
    plotter = resolve_plotter(plot)
    if plot == "auto" and plotter is None:
        notes = ["matplotlib is not installed, so no PNG panels were drawn; install it with `pip install wideml[plot]`."]
    else:
        notes = []
    out_dir = Path(out_dir).expanduser().absolute()
    check_output(out_dir, overwrite)  # before loading anything
    if isinstance(model, (str, os.PathLike)):
        model = load_model(model)
    maps = model_maps(model)
    layout = estimator_layout(model)
    spatial = layout_spatial(layout)
    if reference is not None:
        spatial = reference_from(reference, maps.n_features)
    ids = layout_feature_ids(layout)
    table = layout_feature_table(layout)
    entries, written = [], []
    with atomic_output(out_dir, overwrite, workers_write=False) as tmp:
        tmp.mkdir()
        for fmap in maps.maps:
            values = np.asarray(fmap.load(), dtype=np.float64).ravel()
            if values.shape != (maps.n_features,) or not np.all(np.isfinite(values)):
                raise ConfigError(f"the model's map {fmap.name} has {'non-finite values' if values.size == maps.n_features else f'{values.size} values'} "
                                  f"for {maps.n_features} features; the model is corrupt — refit it.")
            files = [write_values(tmp, fmap.name, values, spatial)]
            if ids is not None:
                files.append(write_top_tsv(tmp, fmap.name, values, ids, int(top)))
            files += space_files(tmp, fmap.name, values, table, plotter)
            if plotter is not None:
                draw_panel(tmp / f"{fmap.name}.png", values, spatial, f"{maps.model}: {fmap.name}", plotter)
                files.append(f"{fmap.name}.png")
            entries.append(_entry(fmap, values, files, spatial, ids))
            written += files
        doc = {"model": maps.model, "model_path": getattr(model, "model_path_", None), "classes": maps.classes,
               "n_features": maps.n_features, "sign_convention": SIGN_CONVENTION,
               "space": _space_doc(spatial), "feature_table": table.describe() if table is not None else None, "maps": entries, "notes": maps.notes + notes}
        written.append(write_manifest(tmp, doc))
    return [out_dir / name for name in written]


def _entry(fmap, values: np.ndarray, files: list[str], spatial, ids) -> dict:
    peak = int(np.argmax(np.abs(values)))
    entry = {"name": fmap.name, "kind": fmap.kind, "meaning": fmap.meaning, "files": files,
             "max_abs": float(abs(values[peak])), "peak_feature": peak}
    if fmap.flipped is not None:
        entry["flipped"] = fmap.flipped
    if fmap.intercept is not None:
        entry["intercept"] = fmap.intercept  # b of decision_function(X) = X @ w + b
    if spatial is not None:
        voxel = np.unravel_index(int(spatial.flat_index()[peak]), spatial.grid_shape)
        entry["peak_voxel"] = [int(v) for v in voxel]
        entry["peak_world"] = [float(v) for v in (spatial.affine @ np.array([*voxel, 1.0]))[:3]]
    if ids is not None:
        entry["peak_feature_id"] = str(ids[peak])
    return entry


def _space_doc(spatial) -> dict | None:
    if spatial is None:
        return None
    return {"grid_shape": list(spatial.grid_shape), "affine": spatial.affine.tolist(),
            "mask_voxels": int(spatial.mask.sum()) if spatial.mask is not None else None}
