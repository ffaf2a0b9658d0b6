"""GIFTI surface data to feature stores: hemisphere pairs (left then right), one hemisphere, ambiguity refused.

Oracles: nibabel's ``darrays[t].data`` of each file, left and right side by
side, stacked in sample order; LOL fitted in memory on the same matrix.
"""

from __future__ import annotations

import numpy as np
import pytest

from surface_scans import make_gifti_pairs, save_gifti
from wideml.cli.main import main
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import WidemlError
from wideml.sources.ingest import ingest
from wideml.storage import open_store

nib = pytest.importorskip("nibabel")


@pytest.fixture
def pairs(tmp_path):
    return make_gifti_pairs(nib, tmp_path)


@pytest.mark.parametrize("feature_chunk", [9, 100, 480])
def test_pairs_store_left_then_right_equal_to_nibabel(pairs, tmp_path, feature_chunk):
    out = tmp_path / "g.zarr"
    ingest(pairs.folder, out, labels=pairs.labels_file, feature_chunk=feature_chunk)
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), pairs.X)
    np.testing.assert_array_equal(store.y, pairs.y)
    np.testing.assert_array_equal(store.sample_ids, pairs.ids)
    table = store.feature_table
    assert table.kind == "gifti"
    assert table.info["hemispheres"] == [{"hemisphere": "L", "structure": "CortexLeft", "n_vertices": 250},
                                         {"hemisphere": "R", "structure": "CortexRight", "n_vertices": 230}]
    np.testing.assert_array_equal(table.columns["vertex"], np.r_[np.arange(250), np.arange(230)])
    np.testing.assert_array_equal(table.columns["hemisphere"], ["L"] * 250 + ["R"] * 230)
    assert store.feature_ids[0] == "L:0" and store.feature_ids[-1] == "R:229"


def test_lol_on_the_store_equals_lol_in_memory(pairs, tmp_path):
    ingest(pairs.folder, tmp_path / "g.zarr", labels=pairs.labels_file, feature_chunk=64)
    X = pairs.X.astype(np.float32)
    on_store = LOL(n_components=3).fit(open_store(tmp_path / "g.zarr"))
    in_memory = LOL(n_components=3).fit(X, pairs.y)
    np.testing.assert_allclose(on_store.transform(X), in_memory.transform(X), rtol=1e-4, atol=1e-4)


def test_one_hemisphere_and_labels_naming_either_file(tmp_path):
    left = make_gifti_pairs(nib, tmp_path, both=False, name="left")
    ingest(left.folder, tmp_path / "l.zarr", labels=left.labels_file)
    store = open_store(tmp_path / "l.zarr")
    np.testing.assert_array_equal(store.X.compute(), left.X)
    assert store.feature_table.info["hemispheres"] == [{"hemisphere": "L", "structure": "CortexLeft", "n_vertices": 250}]
    pairs = make_gifti_pairs(nib, tmp_path, name="pairs")
    two = tmp_path / "two.csv"  # a pair is named by its stem or by either of its files
    two.write_text("file,label\nsub-02_hemi-R_desc-x.func.gii,a\nsub-00_desc-x,b\nsub-03_hemi-L_desc-x.func.gii,b\n")
    ingest(pairs.folder, tmp_path / "p.zarr", labels=two)
    store = open_store(tmp_path / "p.zarr")
    assert list(store.sample_ids) == ["sub-02_desc-x", "sub-00_desc-x", "sub-03_desc-x"]
    np.testing.assert_array_equal(store.X.compute(), pairs.X[[3, 0, 4]])


def _refused(tmp_path, capsys, source, match):
    out = tmp_path / "bad.zarr"
    with pytest.raises(WidemlError, match=match):
        ingest(source, out)
    code = main(["ingest", str(source), "-o", str(out), "--no-progress", "--unlabelled"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() and [p for p in tmp_path.iterdir() if p.name.startswith(".bad.zarr")] == []


def test_a_file_without_its_other_hemisphere_is_refused(pairs, tmp_path, capsys):
    (pairs.folder / "sub-03_hemi-R_desc-x.func.gii").unlink()
    _refused(tmp_path, capsys, pairs.folder, r"'sub-03_hemi-L_desc-x\.func\.gii' has no right-hemisphere file beside it")


def test_tagged_and_untagged_files_mixed_are_refused(pairs, tmp_path, capsys):
    save_gifti(nib, np.zeros((1, 250)), pairs.folder / "sub-09_thick.shape.gii", "CortexLeft")
    _refused(tmp_path, capsys, pairs.folder, r"mix names with and without a hemisphere \(sub-09_thick\.shape\.gii without\)")


def test_untagged_files_of_two_hemispheres_are_refused(tmp_path, capsys):
    folder = tmp_path / "untagged"
    folder.mkdir()
    save_gifti(nib, np.zeros((1, 20)), folder / "a.func.gii", "CortexLeft")
    save_gifti(nib, np.ones((1, 20)), folder / "b.func.gii", "CortexRight")
    _refused(tmp_path, capsys, folder, r"'b\.func\.gii' is on hemisphere R .* but 'a\.func\.gii' on L; name the files hemi-L/hemi-R")


def test_other_vertex_counts_array_counts_and_hemi_values_are_refused(pairs, tmp_path, capsys):
    save_gifti(nib, np.zeros((2, 249)), pairs.folder / "sub-01_hemi-L_desc-x.func.gii", "CortexLeft")
    _refused(tmp_path, capsys, pairs.folder, r"'sub-01_hemi-L_desc-x\.func\.gii' has 249 vertices but 'sub-00_hemi-L_desc-x\.func\.gii' has 250")
    save_gifti(nib, np.zeros((2, 250)), pairs.folder / "sub-01_hemi-L_desc-x.func.gii", "CortexLeft")
    save_gifti(nib, np.zeros((2, 250)), pairs.folder / "sub-00_hemi-L_desc-x.func.gii", "CortexLeft")
    _refused(tmp_path, capsys, pairs.folder, r"hold 2 and 1 data arrays; both hemispheres of a sample need the same number")
    save_gifti(nib, np.zeros((1, 250)), pairs.folder / "sub-00_hemi-L_desc-x.func.gii", "CortexRight")
    _refused(tmp_path, capsys, pairs.folder, r"is named as the left hemisphere but its metadata say 'CortexRight'")
    (pairs.folder / "sub-00_hemi-L_desc-x.func.gii").rename(pairs.folder / "sub-00_hemi-lh_desc-x.func.gii")
    _refused(tmp_path, capsys, pairs.folder, r"names its hemisphere 'lh'; name hemispheres hemi-L or hemi-R")


def test_meshes_and_corrupt_files_are_refused(pairs, tmp_path, capsys):
    mesh = nib.gifti.GiftiImage(darrays=[
        nib.gifti.GiftiDataArray(np.zeros((250, 3), np.float32), intent="NIFTI_INTENT_POINTSET"),
        nib.gifti.GiftiDataArray(np.zeros((10, 3), np.int32), intent="NIFTI_INTENT_TRIANGLE")])
    nib.save(mesh, str(pairs.folder / "sub-00_hemi-L_desc-x.func.gii"))
    _refused(tmp_path, capsys, pairs.folder, r"holds a mesh's vertex coordinates \(NIFTI_INTENT_POINTSET\) in data array 0")
    (pairs.folder / "sub-00_hemi-L_desc-x.func.gii").write_text("<?xml version='1.0'?><GIFTI><broken")
    _refused(tmp_path, capsys, pairs.folder, r"cannot read GIFTI file '.*sub-00_hemi-L_desc-x\.func\.gii'")


def test_surface_meshes_beside_the_data_are_ignored(pairs, tmp_path):
    mesh = nib.gifti.GiftiImage(darrays=[nib.gifti.GiftiDataArray(np.zeros((250, 3), np.float32), intent="NIFTI_INTENT_POINTSET")])
    nib.save(mesh, str(pairs.folder / "sub-00_hemi-L_pial.surf.gii"))
    ingest(pairs.folder, tmp_path / "g.zarr", labels=pairs.labels_file)
    np.testing.assert_array_equal(open_store(tmp_path / "g.zarr").X.compute(), pairs.X)
