"""Maps back onto surfaces: CIFTI-2 ``.dscalar.nii`` and GIFTI ``.func.gii`` files, and surface PNGs.

Registered in :data:`wideml.maps.spaces.SPACE_WRITERS` for the feature-table
kinds that :mod:`wideml.sources.cifti` and :mod:`wideml.sources.gifti` record:

* ``"cifti"`` → ``<name>.dscalar.nii``: one map (named ``name``) on the
  training files' brain-model axis, rebuilt from the table
  (:func:`brain_model_axis`: structures, vertices, voxels, vertex counts,
  volume shape and affine), so ``nibabel``'s ``header.get_axis(1)`` equals the
  input's;
* ``"gifti"`` → ``<name>.func.gii`` for one hemisphere, or
  ``<name>_hemi-L.func.gii`` and ``<name>_hemi-R.func.gii`` for a pair (one
  data array named ``name``, ``AnatomicalStructurePrimary`` kept).

Values are written as float32, as NIfTI maps are (the exact float64 values
are in ``<name>.npy``). With nilearn as the plotter, ``<name>_surface.png``
shows the cortical hemispheres on nilearn's bundled fsaverage5 inflated mesh
when their vertex count is fsaverage5's (10 242); nilearn bundles no other
mesh (fsLR 32k needs a download), so other surfaces get no surface PNG and
only ``<name>.png``, the values against the feature index.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wideml.storage.feature_table import FeatureTable
from wideml.storage.spatial import require_nibabel

#: Vertices per hemisphere of the one mesh nilearn bundles offline (fsaverage5).
FSAVERAGE5_VERTICES = 10242
_CORTEX = {"CIFTI_STRUCTURE_CORTEX_LEFT": "left", "CIFTI_STRUCTURE_CORTEX_RIGHT": "right", "CortexLeft": "left", "CortexRight": "right"}


def brain_model_axis(table: FeatureTable):
    """The ``nibabel.cifti2.BrainModelAxis`` a ``"cifti"`` feature table was made from."""
    nib = require_nibabel()
    cols, info = table.columns, table.info
    nvertices = {s["name"]: int(s["n_vertices"]) for s in info["structures"] if s["type"] == "surface"}
    voxel = np.stack([cols["i"], cols["j"], cols["k"]], axis=1)
    has_volume = info.get("volume_shape") is not None
    return nib.cifti2.BrainModelAxis(cols["structure"], voxel=voxel, vertex=cols["vertex"],
                                     affine=np.asarray(info["affine"], dtype=float) if has_volume else None,
                                     volume_shape=tuple(info["volume_shape"]) if has_volume else None, nvertices=nvertices)


def write_cifti(folder: Path, name: str, values: np.ndarray, table: FeatureTable, plotter: str | None) -> list[str]:
    """Write ``<name>.dscalar.nii`` (and ``<name>_surface.png`` when drawable); return the file names."""
    nib = require_nibabel()
    axis = brain_model_axis(table)
    data = np.asarray(values, dtype=np.float32).reshape(1, -1)
    img = nib.Cifti2Image(data, header=(nib.cifti2.ScalarAxis([name]), axis))
    img.nifti_header.set_intent("ConnDenseScalar")
    fname = f"{name}.dscalar.nii"
    img.to_filename(str(folder / fname))
    hemis = {}
    for structure, slc, part in axis.iter_structures():
        side = _CORTEX.get(str(structure))
        if side is not None and axis.nvertices[structure] == FSAVERAGE5_VERTICES:
            full = np.zeros(FSAVERAGE5_VERTICES)
            full[part.vertex] = np.asarray(values, dtype=np.float64)[slc]
            hemis[side] = full
    return [fname] + _surface_png(folder, name, hemis, plotter)


def write_gifti(folder: Path, name: str, values: np.ndarray, table: FeatureTable, plotter: str | None) -> list[str]:
    """Write one ``.func.gii`` per hemisphere (and ``<name>_surface.png`` when drawable); return the file names."""
    nib = require_nibabel()
    sides = table.info["hemispheres"]
    files, hemis, start = [], {}, 0
    for side in sides:
        n = int(side["n_vertices"])
        part = np.asarray(values, dtype=np.float64)[start : start + n]
        start += n
        arr = nib.gifti.GiftiDataArray(part.astype(np.float32), intent="NIFTI_INTENT_NONE", datatype="NIFTI_TYPE_FLOAT32",
                                       meta=nib.gifti.GiftiMetaData({"Name": name}))
        meta = {"AnatomicalStructurePrimary": side["structure"]} if side.get("structure") else {}
        fname = f"{name}_hemi-{side['hemisphere']}.func.gii" if len(sides) > 1 else f"{name}.func.gii"
        nib.save(nib.gifti.GiftiImage(darrays=[arr], meta=nib.gifti.GiftiMetaData(meta)), str(folder / fname))
        files.append(fname)
        hemi = {"L": "left", "R": "right"}.get(side.get("hemisphere") or "") or _CORTEX.get(side.get("structure") or "")
        if hemi is not None and n == FSAVERAGE5_VERTICES:
            hemis[hemi] = part
    return files + _surface_png(folder, name, hemis, plotter)


def _surface_png(folder: Path, name: str, hemis: dict[str, np.ndarray], plotter: str | None) -> list[str]:
    """``<name>_surface.png``: lateral views of the hemispheres on nilearn's fsaverage5 inflated mesh (none without nilearn)."""
    if plotter != "nilearn" or not hemis:
        return []
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure
    from nilearn import datasets, plotting

    mesh = datasets.load_fsaverage("fsaverage5")
    sides = [s for s in ("left", "right") if s in hemis]
    top = max(float(np.max(np.abs(v))) for v in hemis.values()) or 1.0
    fig = Figure(figsize=(4 * len(sides), 3.6), dpi=100)
    for col, side in enumerate(sides, start=1):
        ax = fig.add_subplot(1, len(sides), col, projection="3d")
        plotting.plot_surf_stat_map(mesh["inflated"], hemis[side], hemi=side, view="lateral", axes=ax, figure=fig,
                                    cmap="RdBu_r", vmin=-top, vmax=top, colorbar=col == len(sides), title=f"{name} ({side})")
    fname = f"{name}_surface.png"
    fig.savefig(folder / fname)
    return [fname]
