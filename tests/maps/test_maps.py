"""wideml.write_maps: maps equal the model's p-sized arrays in image space, signs, weights, top features."""

from __future__ import annotations

import json

import numpy as np
import pytest

import map_fixtures as mf
from wideml import LOL, PCA, EmbeddingClassifier, KernelPCA, load_model, open_store, save_model, write_maps
from wideml.exceptions import ConfigError
from wideml.maps.model_maps import lda_feature_weights, model_maps

nib = pytest.importorskip("nibabel")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A masked store with feature ids, an LDA-on-LOL model fitted on it (means), saved and loaded back."""
    folder = tmp_path_factory.mktemp("maps")
    ref, X, y = mf.masked_store(folder / "s.zarr", counts=(30, 18))
    model = EmbeddingClassifier(LOL(n_components=3, robust_first=False)).fit(open_store(folder / "s.zarr"))
    save_model(model, folder / "m.zarr")
    return folder, ref, X, y, load_model(folder / "m.zarr")


def _manifest(out):
    return json.loads((out / "maps.json").read_text())


def test_model_keeps_spatial_reference_and_ids(fitted):
    folder, ref, X, y, model = fitted
    lay = model.embedding_.feature_layout_
    assert lay.spatial_reference is not None and np.array_equal(lay.spatial_reference.mask, ref.mask)
    assert np.allclose(lay.spatial_reference.affine, ref.affine)
    assert list(lay.feature_ids[:2]) == ["gene0000", "gene0001"]


def test_nifti_maps_equal_model_arrays_at_mask_voxels(fitted, tmp_path):
    folder, ref, X, y, model = fitted
    write_maps(model, tmp_path / "maps", plot=None)
    emb = model.embedding_
    A = np.asarray(emb.components_)  # (d, p)
    man = _manifest(tmp_path / "maps")
    for j in range(3):
        img = nib.load(tmp_path / "maps" / f"direction_{j + 1}.nii.gz")
        vol = np.asarray(img.dataobj)
        assert vol.shape == mf.GRID and np.allclose(img.affine, ref.affine)
        assert np.allclose(img.header.get_zooms()[:3], [2.0, 2.0, 2.5])
        sign = -1.0 if man["maps"][j]["flipped"] else 1.0
        assert np.allclose(vol[ref.mask], sign * A[j], atol=1e-6)  # X[s] == volume_s[mask] order
        assert np.all(vol[~ref.mask] == 0)
    means = [X[y == k].mean(axis=0) for k in (0, 1)]  # numpy oracle of the class means
    for k in (0, 1):
        vol = np.asarray(nib.load(tmp_path / "maps" / f"class_mean_{k}.nii.gz").dataobj)
        assert np.allclose(vol[ref.mask], means[k], atol=1e-5)
    diff = np.asarray(nib.load(tmp_path / "maps" / "mean_difference.nii.gz").dataobj)[ref.mask]
    assert np.allclose(diff, means[1] - means[0], atol=1e-5)
    assert diff[: mf.EFFECT].min() > 0.5  # the true effect: higher in the second class


def test_lda_weight_map_reproduces_decision_function(fitted, tmp_path):
    folder, ref, X, y, model = fitted
    write_maps(model, tmp_path / "maps", plot=None)
    w = np.asarray(nib.load(tmp_path / "maps" / "discriminant_weights.nii.gz").dataobj, dtype=np.float64)[ref.mask]
    emb, clf = model.embedding_, model.classifier_
    _, b = lda_feature_weights(np.asarray(emb.components_).T, emb.offset_, clf.coef_, clf.intercept_)
    Xt = np.random.default_rng(1).standard_normal((7, ref.n_features))
    assert np.allclose(Xt @ w + b[0], model.decision_function(Xt), atol=1e-4)  # float32 image, float64 elsewhere


def test_lda_weights_three_classes_in_memory(tmp_path):
    ref = mf.reference()
    X, y = mf.data(ref, counts=(20, 15, 25))
    model = EmbeddingClassifier(LOL(n_components=4)).fit(X, y)
    write_maps(model, tmp_path / "maps", plot=None)
    W = np.stack([np.load(tmp_path / "maps" / f"discriminant_weights_{k}.npy") for k in range(3)], axis=1)
    emb, clf = model.embedding_, model.classifier_
    _, b = lda_feature_weights(emb.components_.T, emb.offset_, clf.coef_, clf.intercept_)
    assert np.allclose(X @ W + b, model.decision_function(X), atol=1e-4)  # transform multiplies float32 data in float32
    man = _manifest(tmp_path / "maps")
    assert not any(f.endswith(".nii.gz") for m in man["maps"] for f in m["files"])  # no spatial reference: .npy
    assert any("in-memory" in note for note in man["notes"])


def test_sign_convention_holds_when_class_sizes_swap(tmp_path):
    ref = mf.reference()
    raw, mapped = [], []
    for i, counts in enumerate([(30, 12), (12, 30)]):
        X, y = mf.data(ref, counts=counts)
        model = LOL(n_components=2, robust_first=False).fit(X, y)
        raw.append(np.asarray(model.components_)[0, : mf.EFFECT].sum())
        write_maps(model, tmp_path / f"m{i}", plot=None)
        mapped.append(np.load(tmp_path / f"m{i}" / "direction_1.npy")[: mf.EFFECT])
    assert np.sign(raw[0]) != np.sign(raw[1])  # LOL's own sign follows the larger class
    for m in mapped:
        assert np.all(m > 0)  # after the flip: positive = higher in the second class, both times


def test_top_tsv_lists_largest_weights_with_ids(fitted, tmp_path):
    folder, ref, X, y, model = fitted
    write_maps(model, tmp_path / "maps", plot=None, top=7)
    ids = np.asarray(mf.feature_ids(ref.n_features))
    for name in ("direction_1", "mean_difference", "discriminant_weights"):
        values = np.asarray(nib.load(tmp_path / "maps" / f"{name}.nii.gz").dataobj, dtype=np.float64)[ref.mask]
        rows = [line.split("\t") for line in (tmp_path / "maps" / f"{name}_top.tsv").read_text().splitlines()]
        assert rows[0] == ["rank", "feature_id", "weight"] and len(rows) == 8
        order = np.argsort(-np.abs(values), kind="stable")[:7]
        assert [r[1] for r in rows[1:]] == list(ids[order])
        assert np.allclose([float(r[2]) for r in rows[1:]], values[order], atol=1e-5)


def test_robust_fit_writes_class_medians(tmp_path):
    ref, X, y = mf.masked_store(tmp_path / "s.zarr", ids=False)
    model = LOL(n_components=2, robust_first=True).fit(open_store(tmp_path / "s.zarr"))
    save_model(model, tmp_path / "m.zarr")
    write_maps(tmp_path / "m.zarr", tmp_path / "maps", plot=None)  # a model path works too
    for k in (0, 1):
        vol = np.asarray(nib.load(tmp_path / "maps" / f"class_median_{k}.nii.gz").dataobj)
        assert np.allclose(vol[ref.mask], np.median(X[y == k], axis=0), atol=1e-5)
    assert not list((tmp_path / "maps").glob("*_top.tsv"))  # no feature ids: no TSV


def test_three_class_mean_differences_use_pooled_mean(tmp_path):
    ref, X, y = mf.masked_store(tmp_path / "s.zarr", counts=(10, 14, 20))
    model = PCA(n_components=2).fit(open_store(tmp_path / "s.zarr"))
    maps = {m.name: m for m in model_maps(model).maps}
    for k in range(3):
        assert np.allclose(maps[f"mean_difference_{k}"].load(), X[y == k].mean(0) - X.mean(0), atol=1e-5)


def test_reference_gives_nifti_for_in_memory_fit(tmp_path):
    ref = mf.reference()
    X, y = mf.data(ref)
    model = LOL(n_components=2).fit(X, y)
    mask_img = nib.Nifti1Image(ref.mask.astype(np.uint8), ref.affine)

    class FakeMasker:  # duck-typed like a fitted nilearn NiftiMasker
        mask_img_ = mask_img

    for i, reference in enumerate([ref, mask_img, FakeMasker()]):
        write_maps(model, tmp_path / f"m{i}", reference=reference, plot=None)
        img = nib.load(tmp_path / f"m{i}" / "direction_1.nii.gz")
        assert np.allclose(img.affine, ref.affine)
        expected = np.asarray(model.components_)[0] * (-1 if _manifest(tmp_path / f"m{i}")["maps"][0]["flipped"] else 1)
        assert np.allclose(np.asarray(img.dataobj)[ref.mask], expected, atol=1e-6)
        assert np.count_nonzero(np.asarray(img.dataobj)[~ref.mask]) == 0
    small = ref.mask.copy()
    small[small.nonzero()[0][0], small.nonzero()[1][0], small.nonzero()[2][0]] = False
    with pytest.raises(ConfigError, match="locates"):
        write_maps(model, tmp_path / "bad", reference=nib.Nifti1Image(small.astype(np.uint8), ref.affine), plot=None)
    assert not (tmp_path / "bad").exists()


def test_qda_has_no_weight_map_and_says_so(tmp_path):
    ref = mf.reference()
    X, y = mf.data(ref)
    model = EmbeddingClassifier(LOL(n_components=2), classifier="qda").fit(X, y)
    write_maps(model, tmp_path / "maps", plot=None)
    man = _manifest(tmp_path / "maps")
    assert not any(m["kind"] == "discriminant_weights" for m in man["maps"])
    assert any("QuadraticDiscriminantAnalysis" in note for note in man["notes"])


def test_png_panels_are_valid_pngs(fitted, tmp_path):
    import matplotlib.image

    folder, ref, X, y, model = fitted
    files = write_maps(model, tmp_path / "mpl", plot="matplotlib")
    pngs = [f for f in files if f.suffix == ".png"]
    assert len(pngs) == len(_manifest(tmp_path / "mpl")["maps"])
    for f in pngs[:2]:
        assert f.read_bytes()[:8] == PNG_MAGIC and matplotlib.image.imread(f).shape[0] > 100
    ref2 = mf.reference()
    X2, y2 = mf.data(ref2)
    plain = LOL(n_components=1).fit(X2, y2)
    files = write_maps(plain, tmp_path / "vec", plot="matplotlib")  # no space: values against feature index
    assert next(f for f in files if f.suffix == ".png").read_bytes()[:8] == PNG_MAGIC


def test_png_with_nilearn(fitted, tmp_path):
    pytest.importorskip("nilearn.plotting")
    folder, ref, X, y, model = fitted
    files = write_maps(model.embedding_, tmp_path / "nl", plot="nilearn")
    pngs = [f for f in files if f.suffix == ".png"]
    assert pngs and all(f.read_bytes()[:8] == PNG_MAGIC for f in pngs)


def test_kernel_model_has_no_maps(tmp_path):
    X, y = mf.data(mf.reference())
    model = KernelPCA(n_components=2).fit(X[:, :20], y)
    with pytest.raises(ConfigError, match="no feature-space maps"):
        write_maps(model, tmp_path / "maps")
    assert not (tmp_path / "maps").exists()
