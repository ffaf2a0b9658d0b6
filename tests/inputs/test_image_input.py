"""nibabel images, NIfTI paths and NiftiMasker output as input to the Python API (issue 14, item 3).

Oracle: ``images_to_array`` equals stacking ``volume[mask]`` of every sample;
estimators fitted on images, on NiftiMasker output and on a masked store give
the same model.
"""

from __future__ import annotations

import numpy as np
import pytest

from adversarial.harness import assert_api_refused
from nifti_scans import make_scans, rotated_affine, save

nib = pytest.importorskip("nibabel")

import wideml  # noqa: E402
from wideml import LOL, images_to_array  # noqa: E402


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    return make_scans(nib, tmp_path_factory.mktemp("imgs"), n=12, seed=3)


def _files(scans):
    return [scans.folder / f"{s}_T1w.nii.gz" for s in scans.subjects]


def _oracle(scans, mask=None):
    return np.stack([v[mask] if mask is not None else v.ravel() for v in scans.vols])


def test_paths_with_mask_file_equal_volume_at_mask(scans):
    X, ref = images_to_array(_files(scans), mask=scans.mask_file)
    np.testing.assert_array_equal(X, _oracle(scans, scans.mask))
    assert X.dtype == np.float32 and X.shape == (12, int(scans.mask.sum()))
    np.testing.assert_allclose(ref.affine, scans.affine, atol=1e-5)
    np.testing.assert_array_equal(ref.mask, scans.mask)
    assert ref.grid_shape == scans.vols.shape[1:] and ref.header["zooms"] == pytest.approx([2.0, 2.0, 2.5])


def test_every_mask_form_and_image_form_give_the_same_columns(scans):
    from nilearn.maskers import NiftiMasker

    want = _oracle(scans, scans.mask)
    imgs = [nib.load(str(f)) for f in _files(scans)]
    four_d = nib.Nifti1Image(np.moveaxis(scans.vols, 0, -1), scans.affine)
    mask_img = nib.load(str(scans.mask_file))
    masker = NiftiMasker(mask_img=mask_img).fit()
    for x, m in [(imgs, scans.mask), (four_d, mask_img), (imgs[:5] + [nib.Nifti1Image(np.moveaxis(scans.vols[5:], 0, -1), scans.affine)], masker),
                 ([str(f) for f in _files(scans)], str(scans.mask_file))]:
        X, ref = images_to_array(x, mask=m)
        np.testing.assert_array_equal(X, want)
        np.testing.assert_array_equal(ref.mask, scans.mask)


def test_no_mask_keeps_every_voxel_and_round_trips_through_to_volume(scans):
    X, ref = images_to_array(_files(scans))
    np.testing.assert_array_equal(X, scans.vols.reshape(12, -1))
    assert ref.mask is None
    np.testing.assert_array_equal(ref.to_volume(X[4]), scans.vols[4])


def test_nifti_masker_output_fits_the_same_lol_as_our_masked_ingest(scans, tmp_path):
    """NiftiMasker's columns are ours: LOL on its output equals LOL on images_to_array and on a masked store."""
    from nilearn.maskers import NiftiMasker

    files = [str(f) for f in _files(scans)]
    X_nl = NiftiMasker(mask_img=str(scans.mask_file), standardize=None).fit_transform(files)
    X_ours, _ = images_to_array(files, mask=scans.mask_file)
    np.testing.assert_allclose(X_nl, X_ours, rtol=1e-6, atol=1e-6)
    a = LOL(n_components=3).fit(X_nl, scans.y)
    b = LOL(n_components=3).fit(X_ours, scans.y)
    np.testing.assert_allclose(np.abs(a.transform(X_nl)), np.abs(b.transform(X_ours)), rtol=1e-5, atol=1e-6)
    wideml.ingest(str(scans.folder), str(tmp_path / "s.zarr"), labels=str(scans.participants),
                  label_column="group", mask=str(scans.mask_file))
    store = wideml.open_store(str(tmp_path / "s.zarr"))
    np.testing.assert_array_equal(np.asarray(store.X[...]), X_ours)
    c = LOL(n_components=3).fit(store)
    np.testing.assert_allclose(np.abs(c.transform(X_ours)), np.abs(b.transform(X_ours)), rtol=1e-4, atol=1e-5)


def test_estimators_take_images_directly_and_keep_their_space(scans, tmp_path):
    four_d = nib.funcs.concat_images([str(f) for f in _files(scans)])  # the files' affine and header
    flat = scans.vols.reshape(12, -1)
    model = LOL(n_components=2).fit(four_d, scans.y)
    ref_model = LOL(n_components=2).fit(flat, scans.y)
    np.testing.assert_allclose(model.transform(_files(scans)), ref_model.transform(flat), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.transform(four_d), ref_model.transform(flat), rtol=1e-5, atol=1e-6)
    spatial = getattr(model.feature_layout_, "spatial_reference", None)
    assert spatial is not None and spatial.mask is None and spatial.grid_shape == scans.vols.shape[1:]
    shifted = nib.Nifti1Image(np.moveaxis(scans.vols, 0, -1), rotated_affine(offset=(0.0, 0.0, 0.0)))
    with pytest.raises(wideml.exceptions.WidemlError) as exc:
        model.transform(shifted)
    assert_api_refused(exc, "spatial reference", "images")


def test_bad_images_and_masks_are_one_sentence(scans, tmp_path):
    files = _files(scans)
    other_affine = save(nib, scans.vols[0], rotated_affine(angle=0.1), tmp_path / "sub-99_T1w.nii.gz")
    other_grid = save(nib, np.zeros((4, 4, 4), np.float32), scans.affine, tmp_path / "sub-98_T1w.nii.gz")
    cases = [
        (dict(imgs=files[:3] + [other_affine]), ("image 3", "sub-99", "affine", "resample")),
        (dict(imgs=files[:2] + [other_grid]), ("image 2", "grid", "resample")),
        (dict(imgs=files, mask=np.ones((4, 4, 4), bool)), ("mask", "shape", "grid")),
        (dict(imgs=files, mask=nib.Nifti1Image(scans.mask.astype(np.uint8), rotated_affine(angle=0.1))), ("mask", "affine")),
        (dict(imgs=files, mask=np.zeros(scans.mask.shape, bool)), ("mask", "no non-zero voxel")),
        (dict(imgs=files + [tmp_path / "missing.nii.gz"]), ("missing.nii.gz", "does not exist")),
        (dict(imgs=[]), ("non-empty list",)),
        (dict(imgs=files[:1] + [nib.Nifti1Image(np.zeros((4, 4), np.float32), scans.affine)]), ("image 1", "shape (4, 4)", "3-D")),
    ]
    (tmp_path / "notes.nii").write_text("not an image")
    cases.append((dict(imgs=[tmp_path / "notes.nii"]), ("notes.nii", "cannot read")))
    from nilearn.maskers import NiftiMasker

    cases.append((dict(imgs=files, mask=NiftiMasker(mask_img=str(scans.mask_file))), ("not fitted", "fit")))
    for kwargs, words in cases:
        with pytest.raises(wideml.exceptions.WidemlError) as exc:
            images_to_array(**kwargs)
        assert_api_refused(exc, *words)


def test_a_model_fitted_on_image_files_writes_maps_in_their_space(scans, tmp_path, capsys):
    """Images in, NIfTI maps out: the saved model keeps the images' space, `wideml maps` writes it back."""
    from wideml.cli.main import main

    model = wideml.EmbeddingClassifier(LOL(n_components=2)).fit([str(f) for f in _files(scans)], scans.y)
    wideml.save_model(model, tmp_path / "model")
    assert main(["maps", str(tmp_path / "model"), "-o", str(tmp_path / "maps"), "--png", "none", "--no-progress"]) == 0, \
        capsys.readouterr().err
    img = nib.load(str(tmp_path / "maps" / "direction_1.nii.gz"))
    assert img.shape == scans.vols.shape[1:]
    np.testing.assert_allclose(img.affine, scans.affine, atol=1e-5)
    direction = np.asarray(img.dataobj).ravel()
    flat = scans.vols.reshape(12, -1)
    scores = (flat - flat.mean(0)) @ direction  # the map is the first LOL direction (up to the documented sign)
    np.testing.assert_allclose(np.abs(scores), np.abs(model.transform(flat)[:, 0]), rtol=1e-3, atol=1e-3)
