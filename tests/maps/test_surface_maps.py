"""Maps of models fitted on CIFTI-2 / GIFTI stores go back to their surfaces: same brain-model axis, same values.

Oracles: the input files' ``BrainModelAxis`` (and GIFTI hemispheres), and the
model's map values as ``write_maps`` writes them exactly (``<name>.npy``,
float64); the surface files hold them as float32.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from surface_scans import brain_axis, make_cifti_folder, make_gifti_pairs
from wideml import LOL, open_store, save_model, write_maps
from wideml.cli.main import main
from wideml.maps.surface import FSAVERAGE5_VERTICES, write_cifti, write_gifti
from wideml.sources.cifti import cifti_table
from wideml.sources.gifti import gifti_table
from wideml.sources.ingest import ingest

nib = pytest.importorskip("nibabel")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fit(source, labels, folder):
    ingest(source, folder / "s.zarr", labels=labels, feature_chunk=100)
    model = LOL(n_components=2).fit(open_store(folder / "s.zarr"))
    save_model(model, folder / "m.model")
    return folder / "m.model"


def test_cifti_maps_are_dscalars_on_the_input_axis_with_the_map_values(tmp_path, capsys):
    c = make_cifti_folder(nib, tmp_path)
    out = tmp_path / "maps"
    assert main(["maps", str(_fit(c.folder, c.labels_file, tmp_path)), "-o", str(out), "--png", "none", "--no-progress"]) == 0
    manifest = json.loads((out / "maps.json").read_text())
    assert manifest["feature_table"]["kind"] == "cifti" and len(manifest["maps"]) >= 2
    for entry in manifest["maps"]:
        name = entry["name"]
        assert f"{name}.dscalar.nii" in entry["files"]
        img = nib.load(str(out / f"{name}.dscalar.nii"))
        assert img.header.get_axis(1) == c.axis
        assert list(img.header.get_axis(0).name) == [name]
        assert img.nifti_header.get_intent()[0] == "ConnDenseScalar"
        values = np.load(out / f"{name}.npy")
        assert np.any(values != 0)
        np.testing.assert_array_equal(img.get_fdata()[0], values.astype(np.float32))


def test_gifti_maps_are_one_func_gii_per_hemisphere(tmp_path):
    g = make_gifti_pairs(nib, tmp_path)
    out = tmp_path / "maps"
    write_maps(_fit(g.folder, g.labels_file, tmp_path), out, plot=None)
    manifest = json.loads((out / "maps.json").read_text())
    for entry in manifest["maps"]:
        name = entry["name"]
        assert [f for f in entry["files"] if f.endswith(".func.gii")] == [f"{name}_hemi-L.func.gii", f"{name}_hemi-R.func.gii"]
        left, right = (nib.load(str(out / f"{name}_hemi-{h}.func.gii")) for h in "LR")
        assert left.meta["AnatomicalStructurePrimary"] == "CortexLeft" and right.meta["AnatomicalStructurePrimary"] == "CortexRight"
        got = np.concatenate([left.darrays[0].data, right.darrays[0].data])
        np.testing.assert_array_equal(got, np.load(out / f"{name}.npy").astype(np.float32))
        assert left.darrays[0].data.shape == (g.n_left,)


def test_one_hemisphere_gives_one_func_gii(tmp_path):
    table = gifti_table([{"hemisphere": "R", "structure": "CortexRight", "n_vertices": 7, "file": "x"}])
    values = np.linspace(-1, 1, 7)
    assert write_gifti(tmp_path, "w", values, table, None) == ["w.func.gii"]
    np.testing.assert_array_equal(nib.load(str(tmp_path / "w.func.gii")).darrays[0].data, values.astype(np.float32))


def test_surface_png_on_fsaverage5_sized_cortex_only(tmp_path):
    pytest.importorskip("nilearn")
    axis = brain_axis(nib, n_left=FSAVERAGE5_VERTICES - 200, n_right=FSAVERAGE5_VERTICES // 2,
                      nv_left=FSAVERAGE5_VERTICES, nv_right=FSAVERAGE5_VERTICES)
    values = np.sin(np.arange(len(axis)) / 50.0)
    files = write_cifti(tmp_path, "d", values, cifti_table(axis), "nilearn")
    assert files == ["d.dscalar.nii", "d_surface.png"]
    assert (tmp_path / "d_surface.png").read_bytes()[:8] == PNG_MAGIC
    small = brain_axis(nib)  # 320/300 vertices: no bundled mesh, so no surface PNG
    assert write_cifti(tmp_path, "e", np.ones(len(small)), cifti_table(small), "nilearn") == ["e.dscalar.nii"]
