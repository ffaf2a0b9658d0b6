"""Maps out: every p-sized result of a model written as images (or arrays), PNG panels and top-feature tables.

:func:`write_maps` (and ``wideml maps MODEL -o DIR``) writes, for each map of
:func:`wideml.maps.model_maps.model_maps` (loading directions, class means or
medians, the mean difference, the LDA weight map in feature space):

- ``<name>.nii.gz`` in the original image space when the model's training
  store came from images (masked voxels back in place, 0 elsewhere, the
  stored affine), else ``<name>.npy`` (float64, shape (n_features,));
- ``<name>.png``: a panel of slices (nilearn's ``plot_stat_map`` when
  installed, else matplotlib), or the values against the feature index;
- ``<name>_top.tsv`` when the store had ``feature_ids`` (or a genome feature
  table): the top-N features by |weight| (rank, feature_id, weight; for
  genotype stores also chrom, pos, allele_1, allele_2 before the weight);
- the files of the model's feature-table space (:mod:`wideml.maps.spaces`),
  e.g. ``<name>_manhattan.png`` for genotype stores (:mod:`wideml.maps.genome`);
- ``maps.json``: each map's meaning, sign convention and files (the
  discriminant weight maps with their ``intercept`` b, so that
  ``decision_function(X) = X @ w + b`` can be computed from the files), and
  notes on what has no map (e.g. QDA).

Sign convention: positive = higher in the second class (``classes_[1]``);
see :mod:`wideml.maps.model_maps`.

Memory: the maps are written block by block of features
(:mod:`wideml.maps.blocks`): each block of the model's p-sized arrays is read
once for all maps, and every output is streamed (:mod:`wideml.maps.outputs`),
so peak memory does not grow with p beyond the model's own in-memory parts
(a NIfTI reference's grid-sized boolean mask, feature ids, a feature table).
A model whose feature table has a space writer (:mod:`wideml.maps.spaces`)
also hands that writer each whole map, one map at a time, as its protocol asks.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from wideml.exceptions import ConfigError
from wideml.maps.blocks import block_ranges, block_size
from wideml.maps.files import reference_from, top_columns, write_manifest
from wideml.maps.model_maps import SIGN_CONVENTION, model_maps
from wideml.maps.outputs import MapOutputs
from wideml.maps.plot import resolve_plotter
from wideml.maps.spaces import SPACE_WRITERS, space_files
from wideml.models.persistence import estimator_layout, load_model
from wideml.storage.urls import local_output
from wideml.storage.atomic import atomic_output, check_output
from wideml.storage.remote_write import is_remote
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
        The folder to create (written aside, then renamed into place), or a URL (``s3://bucket/maps``: written
        locally, then put in place with a completion marker last; the paths returned are then URLs).
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
    remote = is_remote(out_dir)  # s3://...: written locally, then put in place (wideml.storage.remote_write)
    out_dir = str(out_dir).strip().rstrip("/") if remote else Path(local_output(out_dir)).expanduser().absolute()  # file:// is local
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
    columns = top_columns(table)
    for length in maps.reader.lengths():
        if length != maps.n_features:
            raise ConfigError(f"the model's p-sized arrays hold {length} features but the model has {maps.n_features}; "
                              "the model is corrupt — refit it.")
    entries, written = [], []
    with atomic_output(out_dir, overwrite, workers_write=False) as tmp:
        tmp.mkdir()
        outputs: list[MapOutputs] = []
        try:
            for fmap in maps.maps:
                outputs.append(MapOutputs(tmp, fmap, spatial, ids, columns, int(top), plotter))
            spans = list(block_ranges(maps.n_features, block_size(maps.n_features, maps.reader.chunk())))
            for lo, hi in spans:
                for fmap, out in zip(maps.maps, outputs):
                    out.add(lo, fmap.block(lo, hi))
            for fmap, out in zip(maps.maps, outputs):
                files = out.finish()
                if table is not None and table.kind in SPACE_WRITERS:  # the writer's protocol takes the whole map (one at a time)
                    whole = np.concatenate([fmap.block(lo, hi) for lo, hi in spans])
                    files += space_files(tmp, fmap.name, whole, table, plotter)
                    del whole
                files += out.draw(f"{maps.model}: {fmap.name}")
                entries.append(out.entry(files))
                written += files
        finally:
            for out in outputs:
                out.close()
        doc = {"model": maps.model, "model_path": getattr(model, "model_path_", None), "classes": maps.classes,
               "n_features": maps.n_features, "sign_convention": SIGN_CONVENTION,
               "space": _space_doc(spatial), "feature_table": table.describe() if table is not None else None, "maps": entries, "notes": maps.notes + notes}
        written.append(write_manifest(tmp, doc))
    return [f"{out_dir}/{name}" for name in written] if remote else [out_dir / name for name in written]


def _space_doc(spatial) -> dict | None:
    if spatial is None:
        return None
    return {"grid_shape": list(spatial.grid_shape), "affine": spatial.affine.tolist(),
            "mask_voxels": int(spatial.mask.sum()) if spatial.mask is not None else None}
