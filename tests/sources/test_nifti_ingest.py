"""NIfTI folders to feature stores: masks, 4-D series, labels by subject id, the spatial reference kept.

Oracles: nibabel's own volumes indexed with numpy (``volume[mask]``), the
AND of non-zero voxels over samples computed in memory, and the truth the
synthetic folders were written from.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

from conftest import store_name
from nifti_scans import GRID, make_scans, rotated_affine, save
from wideml.exceptions import StoreError, WidemlError
from wideml.storage import open_store, write_store
from wideml.sources import nifti_rows
from wideml.sources.ingest import ingest
from wideml.storage.layout import layout_of
from wideml.storage.rechunk import rechunk

nib = pytest.importorskip("nibabel")
TIGHT = "8KiB"  # forces the two-stage (row stripes, then rechunk) path


@pytest.fixture
def scans(tmp_path):
    return make_scans(nib, tmp_path)


@pytest.mark.parametrize("memory", [None, TIGHT], ids=["in-memory", "two-stage"])
def test_masked_ingest_equals_volume_mask_with_labels_by_subject(scans, tmp_path, fmt, memory):
    out = tmp_path / store_name(fmt)
    ingest(scans.folder, out, labels=scans.participants, label_column="group", mask=scans.mask_file, memory_limit=memory)
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), np.stack([v[scans.mask] for v in scans.vols]))
    np.testing.assert_array_equal(store.y, scans.y)  # the table's rows were shuffled
    np.testing.assert_array_equal(store.sample_ids, [f"{s}_T1w" for s in scans.subjects])
    assert store.n_features == int(scans.mask.sum()) and store.feature_shape is None
    assert store.attrs["version"] == 3
    ref = store.spatial
    np.testing.assert_array_equal(ref.mask, scans.mask)
    np.testing.assert_allclose(ref.affine, scans.affine, atol=1e-6)
    assert ref.grid_shape == GRID
    np.testing.assert_allclose(ref.header["zooms"], [2.0, 2.0, 2.5], rtol=1e-6)
    assert ref.header["xyzt_units"] == nib.load(scans.mask_file).header["xyzt_units"]
    assert store.summary()["spatial"]["mask_voxels"] == int(scans.mask.sum())


def test_unmasked_nifti_store_keeps_feature_shape_and_the_affine(scans, tmp_path):
    out = tmp_path / "all.zarr"
    ingest(scans.folder, out)
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), scans.vols.reshape(len(scans.vols), -1))
    assert store.feature_shape == GRID and store.spatial.mask is None
    np.testing.assert_allclose(store.spatial.affine, scans.affine, atol=1e-6)
    assert "mask" not in zarr.open_group(str(out), mode="r").array_keys()


@pytest.mark.parametrize("memory", [None, TIGHT], ids=["in-memory", "two-stage"])
def test_4d_series_give_the_rows_of_the_equivalent_3d_files(scans, tmp_path, monkeypatch, memory):
    """Subjects 0-3 as one 4-D file each of 3 volumes (mixed with 3-D files); slabs of 2 volumes cross file ends."""
    monkeypatch.setattr(nifti_rows, "SLAB_BYTES", 2 * int(np.prod(GRID)) * 8)
    series = tmp_path / "series"
    series.mkdir()
    expected, ids, labels = [], [], []
    for s in range(4):
        vols = scans.vols[3 * s : 3 * s + 3]
        save(nib, np.moveaxis(vols, 0, -1), scans.affine, series / f"sub-{s:02d}_task-rest_bold.nii.gz")
        expected += [v[scans.mask] for v in vols]
        ids += [f"sub-{s:02d}_task-rest_bold:{t}" for t in range(3)]
        labels += ["control" if s % 2 == 0 else "patient"] * 3
    save(nib, scans.vols[0], scans.affine, series / "sub-04_T1w.nii")
    expected.append(scans.vols[0][scans.mask]), ids.append("sub-04_T1w"), labels.append("patient")
    (tmp_path / "p.csv").write_text("subject,group\n01,patient\nsub-00,control\n03,patient\n02,control\nsub-04,patient\n")
    out = tmp_path / "series.zarr"
    ingest(series, out, labels=tmp_path / "p.csv", label_column="group", mask=scans.mask_file, memory_limit=memory)
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), np.stack(expected))
    np.testing.assert_array_equal(store.sample_ids, ids)
    np.testing.assert_array_equal(store.y, labels)


def test_auto_mask_is_the_and_of_nonzero_finite_voxels_over_samples(scans, tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    vols = scans.vols.copy()
    holes = rng.random(vols.shape) < 0.05  # each sample drops its own voxels
    vols[holes] = 0
    vols[3, 4, 4, 3] = np.nan  # NaN counts as outside
    folder = tmp_path / "holes"
    folder.mkdir()
    for s, v in zip(scans.subjects, vols):
        save(nib, v, scans.affine, folder / f"{s}.nii.gz")
    expected = np.all(np.isfinite(vols) & (vols != 0), axis=0)
    assert 0 < expected.sum() < scans.mask.sum()
    monkeypatch.setattr(nifti_rows, "SLAB_BYTES", 1)  # one volume at a time
    out = tmp_path / store_name("hdf5")
    ingest(folder, out, labels=scans.participants, label_column="group", mask="auto")
    store = open_store(out)
    np.testing.assert_array_equal(store.spatial.mask, expected)
    np.testing.assert_array_equal(store.X.compute(), np.stack([v[expected] for v in vols]))


def test_mask_values_other_than_one_count_as_inside_when_nonzero(scans, tmp_path):
    """Documented convention: non-zero and finite = inside (a probability map or label image works too)."""
    rng = np.random.default_rng(1)
    values = np.where(scans.mask, rng.choice([0.25, 2.0, -1.0], GRID), 0.0)
    values[0, 0, 0] = np.nan
    save(nib, values.astype(np.float32), scans.affine, tmp_path / "prob.nii.gz")
    ingest(scans.folder, tmp_path / "p.zarr", labels=scans.participants, label_column="group", mask=tmp_path / "prob.nii.gz")
    inside = np.isfinite(values) & (values != 0)
    np.testing.assert_array_equal(open_store(tmp_path / "p.zarr").spatial.mask, inside)


def test_drop_unlabelled_leaves_out_na_and_unlisted_subjects(scans, tmp_path):
    rows = ["participant_id\tgroup"] + [f"{s}\t{'n/a' if i == 2 else scans.y[i]}" for i, s in enumerate(scans.subjects) if i != 5]
    (tmp_path / "p.tsv").write_text("\n".join(rows) + "\n")
    with pytest.raises(WidemlError, match="1 file\\(s\\) have no row .*sub-05.*1 file\\(s\\) have a missing label.*sub-02"):
        ingest(scans.folder, tmp_path / "x.zarr", labels=tmp_path / "p.tsv", label_column="group")
    ingest(scans.folder, tmp_path / "x.zarr", labels=tmp_path / "p.tsv", label_column="group", drop_unlabelled=True)
    keep = [i for i in range(len(scans.subjects)) if i not in (2, 5)]
    store = open_store(tmp_path / "x.zarr")
    np.testing.assert_array_equal(store.X.compute(), scans.vols[keep].reshape(len(keep), -1))
    np.testing.assert_array_equal(store.y, scans.y[keep])


def test_other_mask_or_affine_changes_the_feature_layout(scans, tmp_path):
    ingest(scans.folder, tmp_path / "a.zarr", labels=scans.participants, label_column="group", mask=scans.mask_file)
    ingest(scans.folder, tmp_path / "b.zarr", labels=scans.participants, label_column="group", mask=scans.mask_file)
    shifted = tmp_path / "shifted"
    shifted.mkdir()
    for s, v in zip(scans.subjects, scans.vols):
        save(nib, v, rotated_affine(offset=(-10.0, 4.0, 9.0)), shifted / f"{s}.nii.gz")
    save(nib, scans.mask.astype(np.uint8), rotated_affine(offset=(-10.0, 4.0, 9.0)), tmp_path / "m2.nii.gz")
    ingest(shifted, tmp_path / "c.zarr", labels=scans.participants, label_column="group", mask=tmp_path / "m2.nii.gz")
    a, b, c = (layout_of(open_store(tmp_path / f"{k}.zarr")) for k in "abc")
    assert a.spatial_sha256 == b.spatial_sha256
    assert a.n_features == c.n_features and a.spatial_sha256 != c.spatial_sha256


def test_rechunk_keeps_the_spatial_reference(scans, tmp_path):
    ingest(scans.folder, tmp_path / "a.zarr", labels=scans.participants, label_column="group", mask=scans.mask_file)
    rechunk(tmp_path / "a.zarr", tmp_path / "b.h5", feature_chunk=50)
    a, b = open_store(tmp_path / "a.zarr"), open_store(tmp_path / "b.h5")
    np.testing.assert_array_equal(b.spatial.mask, a.spatial.mask)
    assert layout_of(a).spatial_sha256 == layout_of(b).spatial_sha256


def test_version_1_and_2_stores_still_open_and_a_newer_one_is_refused(tmp_path):
    X = np.arange(24, dtype=np.float32).reshape(4, 6)
    write_store(tmp_path / "s.zarr", X, [0, 1, 0, 1])
    meta = tmp_path / "s.zarr" / "zarr.json"
    doc = json.loads(meta.read_text())
    for version in (1, 2):
        doc["attributes"]["wideml"]["version"] = version
        meta.write_text(json.dumps(doc))
        store = open_store(tmp_path / "s.zarr")
        np.testing.assert_array_equal(store.X.compute(), X)
        assert store.spatial is None
    doc["attributes"]["wideml"]["version"] = 4
    meta.write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="version 4, newer"):
        open_store(tmp_path / "s.zarr")


def test_a_mask_record_without_its_array_is_refused_at_open(scans, tmp_path):
    out = tmp_path / "a.zarr"
    ingest(scans.folder, out, labels=scans.participants, label_column="group", mask=scans.mask_file)
    import shutil

    shutil.rmtree(out / "mask")
    with pytest.raises(StoreError, match="records a mask but has no 'mask' array"):
        open_store(out)


def test_two_column_labels_naming_files_label_every_volume_of_a_4d_file(scans, tmp_path):
    """The older labels form (file name, label) still works for NIfTI folders; a 4-D file's label goes to each volume."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    save(nib, np.moveaxis(scans.vols[:3], 0, -1), scans.affine, folder / "run1.nii.gz")
    save(nib, scans.vols[3], scans.affine, folder / "single.nii")
    (tmp_path / "l.csv").write_text("file,label\nsingle.nii,1\nrun1,0\n")
    ingest(folder, tmp_path / "m.zarr", labels=tmp_path / "l.csv")
    store = open_store(tmp_path / "m.zarr")
    np.testing.assert_array_equal(store.X.compute(), scans.vols[[3, 0, 1, 2]].reshape(4, -1))
    np.testing.assert_array_equal(store.y, [1, 0, 0, 0])
    np.testing.assert_array_equal(store.sample_ids, ["single", "run1:0", "run1:1", "run1:2"])


@pytest.mark.parametrize("memory", [None, TIGHT], ids=["in-memory", "two-stage"])
def test_scaled_integer_volumes_equal_nibabel_values_at_the_mask_and_auto_mask_sees_the_intercept(tmp_path, memory):
    """int16 files with a slope and an intercept: rows are nibabel's scaled values at the mask (the
    reader scales only the kept voxels), and a stored 0 with a non-zero intercept is not 'outside'."""
    rng = np.random.default_rng(3)
    aff = rotated_affine()
    folder = tmp_path / "scans"
    folder.mkdir()
    mask = rng.random(GRID) < 0.5
    for i in range(6):
        raw = rng.integers(-300, 300, size=GRID).astype(np.int16)
        raw[0, 0, 0] = 0  # stored zero, value = intercept
        img = nib.Nifti1Image(raw, aff)
        img.header.set_slope_inter(0.0123 * (i + 1), 5.5)
        nib.save(img, folder / f"sub-{i:02d}_T1w.nii.gz")
    mask_file = save(nib, mask.astype(np.uint8), aff, tmp_path / "mask.nii.gz")
    truth = [nib.load(folder / f"sub-{i:02d}_T1w.nii.gz").get_fdata() for i in range(6)]
    y = np.arange(6) % 2
    ingest(folder, tmp_path / "m.zarr", labels=y, mask=mask_file, memory_limit=memory)
    np.testing.assert_array_equal(open_store(tmp_path / "m.zarr").X.compute(),
                                  np.stack([t[mask] for t in truth]).astype(np.float32))
    ingest(folder, tmp_path / "a.zarr", labels=y, mask="auto", memory_limit=memory)
    auto = open_store(tmp_path / "a.zarr").spatial.mask
    np.testing.assert_array_equal(auto, np.all([np.isfinite(t) & (t != 0) for t in truth], axis=0))
    assert auto[0, 0, 0]  # 0 stored, 5.5 meant
