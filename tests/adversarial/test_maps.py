"""Adversarial maps cases: tampered spatial records and ids in a model, bad references, models without maps."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import map_fixtures as mf
from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, run_cli
from wideml import LOL, PCA, KernelPCA, load_model, open_store, save_model, write_maps


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adv_maps")
    ref, X, y = mf.masked_store(folder / "s.zarr")
    save_model(LOL(n_components=2).fit(open_store(folder / "s.zarr")), folder / "m.zarr")
    return folder / "m.zarr", ref


def _attrs(model):
    doc = json.loads((model / "zarr.json").read_text())
    return doc, doc["attributes"]["wideml"]


def _save_attrs(model, doc):
    (model / "zarr.json").write_text(json.dumps(doc))


def _rewrite_array(model, name, values):
    import zarr

    group = zarr.open_group(str(model), mode="r+")
    arr = group[name]
    arr[...] = values


def test_tampered_mask_refused(saved, fresh_copy, tmp_path):
    model, ref = saved
    copy = fresh_copy(model)
    mask = ref.mask.astype(np.uint8).copy()
    mask[np.unravel_index(int(np.flatnonzero(~ref.mask)[0]), ref.grid_shape)] = 1  # one voxel more
    _rewrite_array(copy, "mask", mask)
    assert_refused(run_cli("maps", copy, "-o", tmp_path / "maps"), "mask", "differs", "refit")
    assert not (tmp_path / "maps").exists()
    assert_no_debris(tmp_path)


def test_mask_moved_but_count_kept_refused(saved, fresh_copy):
    model, ref = saved
    copy = fresh_copy(model)
    _rewrite_array(copy, "mask", np.roll(ref.mask, 1, axis=0).astype(np.uint8))  # same voxel count, other voxels
    with pytest.raises(Exception) as excinfo:
        load_model(copy)
    assert_api_refused(excinfo, "mask", "sha256")


def test_deleted_mask_array_refused(saved, fresh_copy):
    model, _ = saved
    copy = fresh_copy(model)
    shutil.rmtree(copy / "mask")
    with pytest.raises(Exception) as excinfo:
        load_model(copy)
    assert_api_refused(excinfo, "records a mask", "no 'mask' array")


def test_spatial_record_for_other_feature_count_refused(saved, fresh_copy):
    model, _ = saved
    copy = fresh_copy(model)
    doc, attrs = _attrs(copy)
    attrs["spatial_reference"]["n_features"] += 1
    _save_attrs(copy, doc)
    with pytest.raises(Exception) as excinfo:
        load_model(copy)
    assert_api_refused(excinfo, "mask", "voxels")


def test_tampered_feature_ids_refused(saved, fresh_copy):
    model, ref = saved
    copy = fresh_copy(model)
    ids = np.asarray(mf.feature_ids(ref.n_features))
    _rewrite_array(copy, "feature_ids", ids[::-1].copy())
    with pytest.raises(Exception) as excinfo:
        load_model(copy)
    assert_api_refused(excinfo, "feature_ids", "differs")


def test_model_without_spatial_record_still_loads(saved, fresh_copy, tmp_path):
    model, _ = saved
    copy = fresh_copy(model)  # as written before spatial references existed: no attrs entries, no arrays
    doc, attrs = _attrs(copy)
    del attrs["spatial_reference"], attrs["feature_ids"]
    _save_attrs(copy, doc)
    shutil.rmtree(copy / "mask")
    shutil.rmtree(copy / "feature_ids")
    est = load_model(copy)
    write_maps(est, tmp_path / "maps", plot=None)
    assert (tmp_path / "maps" / "direction_1.npy").is_file() and not list((tmp_path / "maps").glob("*.nii.gz"))


def test_stray_mask_without_record_refused(saved, fresh_copy):
    model, _ = saved
    copy = fresh_copy(model)
    doc, attrs = _attrs(copy)
    del attrs["spatial_reference"]
    _save_attrs(copy, doc)
    with pytest.raises(Exception) as excinfo:
        load_model(copy)
    assert_api_refused(excinfo, "unknown array", "mask")


def test_bad_reference_and_top_refused(tmp_path):
    ref = mf.reference()
    X, y = mf.data(ref)
    model = PCA(n_components=1).fit(X, y)
    with pytest.raises(Exception) as excinfo:
        write_maps(model, tmp_path / "a", reference=np.ones(3))
    assert_api_refused(excinfo, "reference", "NiftiMasker")
    with pytest.raises(Exception) as excinfo:
        write_maps(model, tmp_path / "b", top=0)
    assert_api_refused(excinfo, "top", "positive")
    assert not list(tmp_path.iterdir())


def test_kernel_model_refused_by_cli(tmp_path):
    X, y = mf.data(mf.reference())
    save_model(KernelPCA(n_components=2).fit(X[:, :16], y), tmp_path / "k.zarr")
    assert_refused(run_cli("maps", tmp_path / "k.zarr", "-o", tmp_path / "maps"), "no feature-space maps")
    assert not (tmp_path / "maps").exists()
    assert_no_debris(tmp_path)
