"""SpatialReference: p-sized values back into images, and its on-disk record (zarr and HDF5)."""

import h5py
import numpy as np
import pytest
import zarr

from wideml.exceptions import StoreError, WidemlError
from wideml.storage.spatial import MASK_NAME, SPATIAL_ATTR, SpatialReference, mask_sha256, read_spatial, write_spatial

nib = pytest.importorskip("nibabel")


def _reference(masked=True):
    rng = np.random.default_rng(0)
    grid = (6, 7, 5)
    mask = rng.random(grid) < 0.4 if masked else None
    angle = 0.3
    affine = np.array([[2 * np.cos(angle), -2 * np.sin(angle), 0, -10.0],
                       [2 * np.sin(angle), 2 * np.cos(angle), 0, 4.0],
                       [0, 0, 2.5, 7.0],
                       [0, 0, 0, 1]])
    return SpatialReference(grid, affine, {"zooms": [2.0, 2.0, 2.5], "xyzt_units": 10, "qform_code": 1, "sform_code": 4}, mask)


@pytest.mark.parametrize("masked", [True, False])
def test_to_volume_places_values_at_the_mask_voxels_in_c_order(masked):
    ref = _reference(masked)
    values = np.arange(ref.n_features, dtype=np.float64) + 1
    vol = ref.to_volume(values)
    mask = ref.mask if masked else np.ones(ref.grid_shape, bool)
    np.testing.assert_array_equal(vol[mask], values)  # the same order as volume[mask]
    assert (vol[~mask] == 0).all()
    two = ref.to_volume(np.stack([values, -values], axis=1))
    np.testing.assert_array_equal(two[mask][:, 1], -values)


def test_to_image_keeps_the_affine_and_voxel_sizes_and_reads_back(tmp_path):
    ref = _reference()
    values = np.linspace(-1, 1, ref.n_features)
    path = tmp_path / "map.nii.gz"
    nib.save(ref.to_image(values), path)
    img = nib.load(path)
    np.testing.assert_allclose(img.affine, ref.affine, atol=1e-5)
    np.testing.assert_allclose(img.header.get_zooms()[:3], [2.0, 2.0, 2.5])
    np.testing.assert_allclose(img.get_fdata()[ref.mask], values, rtol=1e-6)
    back = SpatialReference.from_image(img, ref.mask)
    assert ref.same_space(back) is None


@pytest.mark.parametrize("fmt", ["zarr", "hdf5"])
def test_written_reference_reads_back_equal(tmp_path, fmt):
    ref = _reference()
    if fmt == "zarr":
        group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
        attrs = {SPATIAL_ATTR: write_spatial(group, ref)}
        back = read_spatial(zarr.open_group(str(tmp_path / "s.zarr"), mode="r"), attrs, "s.zarr")
    else:
        with h5py.File(tmp_path / "s.h5", "w") as f:
            attrs = {SPATIAL_ATTR: write_spatial(f, ref)}
        with h5py.File(tmp_path / "s.h5", "r") as f:
            back = read_spatial(f, attrs, "s.h5")
    np.testing.assert_array_equal(back.mask, ref.mask)
    np.testing.assert_array_equal(back.affine, ref.affine)
    assert back.header == ref.header and back.grid_shape == ref.grid_shape
    assert read_spatial(None, {}, "x") is None


def test_a_mask_that_differs_from_its_record_is_refused(tmp_path):
    ref = _reference()
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    attrs = {SPATIAL_ATTR: write_spatial(group, ref)}
    flipped = ref.mask.astype(np.uint8)
    flipped[0, 0, 0] ^= 1
    group[MASK_NAME][...] = flipped
    with pytest.raises(StoreError, match="differs from the mask it recorded"):
        read_spatial(zarr.open_group(str(tmp_path / "s.zarr"), mode="r"), attrs, "s.zarr")
    with pytest.raises(StoreError, match="malformed spatial_reference"):
        SpatialReference.from_attrs({"grid_shape": [2, 2], "affine": [[1, 2]]}, None, "s.zarr")


def test_bad_shapes_are_one_sentence():
    ref = _reference()
    with pytest.raises(WidemlError, match="do not fit"):
        ref.to_volume(np.zeros(ref.n_features + 1))
    with pytest.raises(WidemlError, match="same space"):
        SpatialReference((2, 2, 2), np.eye(4), {}, np.ones((2, 2, 3), bool))
    assert mask_sha256(np.ones((2, 3), bool)) != mask_sha256(np.ones((3, 2), bool))
