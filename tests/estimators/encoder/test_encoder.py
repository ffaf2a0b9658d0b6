"""EncoderClassifier: oracles on every input kind, fast = full for the inner product, pass counts, models, bad input."""

from pathlib import Path

import dask.array as da
import h5py
import numpy as np
import pytest
import scipy.stats

from wideml.estimators.encoder.cv import cross_validate_encoder
from wideml.estimators.encoder.estimator import EncoderClassifier
from wideml.exceptions import WidemlError
from wideml.storage import open_store, write_store
from wideml.models.persistence import load_model, save_model
from wideml.storage.reader import READ_COUNTER

N, P, K, WIDTH = 45, 120, 3, 25
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


@pytest.fixture(scope="module")
def xy():
    rng = np.random.default_rng(5)
    y = np.arange(N) % K
    X = rng.standard_normal((N, P)) + 0.8 * y[:, None] * (np.arange(P) < 15)
    return X, y


@pytest.fixture(scope="module")
def stores(xy, tmp_path_factory):
    X, y = xy
    d = tmp_path_factory.mktemp("enc")
    zpath, hpath = d / "s.zarr", d / "s.h5"
    write_store(zpath, X, y, feature_chunk=WIDTH, dtype="float64")
    write_store(hpath, X, y, feature_chunk=WIDTH, dtype="float64")
    return zpath, hpath


def reference_z(kernel, X, y, Xnew):
    """The paper's Z(i, k) = kernel(x_i, u_k) straight from its definition."""
    U = np.stack([X[y == k].mean(0) for k in range(K)])
    if kernel == "linear":
        return Xnew @ U.T
    if kernel == "euclidean":
        dmax = np.linalg.norm(X[:, None] - U[None], axis=2).max()
        return dmax - np.linalg.norm(Xnew[:, None] - U[None], axis=2)
    R, S = scipy.stats.rankdata(Xnew, axis=1), scipy.stats.rankdata(U, axis=1)
    return np.corrcoef(np.vstack([R, S]))[: len(Xnew), len(Xnew):]


@pytest.mark.parametrize("kernel", ["linear", "euclidean", "spearman"])
def test_every_input_kind_matches_the_definition(kernel, xy, stores):
    X, y = xy
    zpath, hpath = stores
    h5 = h5py.File(hpath, "r")
    inputs = {"numpy": (X, y), "dask": (da.from_array(X, chunks=(N, 40)), y), "zarr store": (open_store(zpath), None),
              "hdf5 dataset": (h5["X"], y)}
    Xnew = X[::4] + 0.3
    want_train, want_new = reference_z(kernel, X, y, X), reference_z(kernel, X, y, Xnew)
    preds = []
    for name, (Xin, yin) in inputs.items():
        est = EncoderClassifier(kernels=kernel).fit(Xin, yin)
        np.testing.assert_allclose(est.embedding_, want_train, atol=1e-10, err_msg=name)
        np.testing.assert_allclose(est.transform(Xnew), want_new, atol=1e-10, err_msg=name)
        preds.append(est.predict(Xnew))
    h5.close()
    for p in preds[1:]:
        np.testing.assert_array_equal(p, preds[0])


def test_fast_and_full_forms_agree_for_the_inner_product(xy, stores):
    X, y = xy
    fast = EncoderClassifier(kernels="linear").fit(open_store(stores[0]))
    full = EncoderClassifier(kernels="linear", form="full").fit(open_store(stores[0]))
    np.testing.assert_allclose(full.embedding_, fast.embedding_, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(full.transform(X), fast.transform(X), rtol=1e-12, atol=1e-11)
    np.testing.assert_array_equal(full.predict(X), fast.predict(X))
    np.testing.assert_allclose(full.classifier_.coef_, fast.classifier_.coef_, rtol=1e-8)


def _reads(path, fn):
    before = READ_COUNTER[str(path)]
    fn()
    return READ_COUNTER[str(path)] - before


def test_pass_counts(stores):
    zpath = stores[0]
    store = open_store(zpath)
    chunks = store.X.numblocks[1]
    lin = EncoderClassifier(kernels="linear,euclidean")
    assert _reads(zpath, lambda: lin.fit(store)) == chunks  # one pass
    assert lin.n_fit_passes_ == 1
    assert _reads(zpath, lambda: lin.predict(store)) == chunks
    multi = EncoderClassifier()
    assert _reads(zpath, lambda: multi.fit(store)) == 2 * chunks
    assert multi.n_fit_passes_ == 2
    out = {}
    assert _reads(zpath, lambda: out.update(cross_validate_encoder(store, cv=3, kernels="linear,euclidean"))) == chunks
    assert out["n_passes"] == 1
    import json

    json.dumps(out)  # the CLI writes it as a report


@pytest.mark.parametrize("selection,spearman", [("cross_entropy", "exact"), ("loo_cross_entropy", "exact"),
                                                ("loo_cross_entropy", "approx"), ("cv_cross_entropy", "approx")])
def test_cv_folds_equal_separate_fits(xy, selection, spearman):
    X, y = xy
    from sklearn.model_selection import StratifiedKFold

    folds = list(StratifiedKFold(3, shuffle=True, random_state=1).split(X, y))
    kw = dict(selection=selection, spearman=spearman, sketch_size=50)
    res = cross_validate_encoder(X, y, cv=folds, **kw)
    assert res["n_passes"] == 2
    for f, (tr, te) in enumerate(folds):
        est = EncoderClassifier(**kw).fit(X[tr], y[tr])
        assert est.kernel_ == res["selected_kernels"][f]
        assert res["fold_errors"][f] == pytest.approx(np.mean(est.predict(X[te]) != y[te]))
        for k, v in est.kernel_scores_.items():
            assert res["kernel_scores"][f][k] == pytest.approx(v, rel=1e-9)


@pytest.mark.parametrize("kernels,spearman", [("linear,euclidean,spearman", "exact"), ("spearman", "approx")])
def test_model_round_trip(kernels, spearman, xy, stores, tmp_path):
    X, y = xy
    for train in (open_store(stores[0]), X):
        est = EncoderClassifier(kernels=kernels, spearman=spearman, sketch_size=64).fit(train, y)
        save_model(est, tmp_path / "m.zarr", overwrite=True)
        back = load_model(tmp_path / "m.zarr")
        assert back.kernel_ == est.kernel_
        np.testing.assert_allclose(back.predict_proba(X), est.predict_proba(X), atol=1e-12)
        np.testing.assert_array_equal(back.predict(open_store(stores[0])), est.predict(X))


def test_probabilities_and_score(xy):
    X, y = xy
    est = EncoderClassifier().fit(X, y)
    proba = est.predict_proba(X)
    assert proba.shape == (N, K)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert est.score(X, y) == pytest.approx(np.mean(est.predict(X) == y))


# -- bad input: one sentence each -------------------------------------------------------
def test_unknown_kernel_lists_valid_kernels(xy):
    with pytest.raises(WidemlError, match=r"^unknown kernel 'rbf'; valid kernels are linear, euclidean, spearman\.$"):
        EncoderClassifier(kernels="linear,rbf").fit(*xy)


def test_new_store_with_another_feature_count(xy, tmp_path):
    X, y = xy
    write_store(tmp_path / "other.zarr", X[:, :100], y)
    est = EncoderClassifier(kernels="linear").fit(X, y)
    with pytest.raises(WidemlError, match=r"^X has 100 features, but EncoderClassifier is expecting 120 features as input; .*\.$"):
        est.predict(open_store(tmp_path / "other.zarr"))


def test_class_absent_from_training_at_predict_time(xy):
    X, y = xy
    est = EncoderClassifier(kernels="linear").fit(X[y < 2], y[y < 2])
    with pytest.raises(WidemlError, match=r"^y holds class 2 that was absent from training .*\.$"):
        est.score(X, y)


@pytest.mark.skipif(not (DATA / "faceYaleB_32x32.mat").exists(), reason="Extended Yale B not available")
def test_yale_slice_switches_to_spearman():
    from wideml.datasets import load_yale_b

    X, y = load_yale_b(DATA / "faceYaleB_32x32.mat")
    keep = y <= 6
    res = cross_validate_encoder(X[keep], y[keep], cv=3)  # the paper's selection rule
    assert set(res["selected_kernels"]) == {"spearman"}
    assert res["mean_error"] < np.mean(res["kernel_errors"]["linear"])


@pytest.mark.parametrize("est", [EncoderClassifier(), EncoderClassifier(form="full")], ids=["fast", "full"])
def test_sklearn_compatible(est):
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failed = [r for r in check_estimator(est, on_fail=None) if r["status"] == "failed"]
    assert not failed, [(r["check_name"], str(r["exception"])[:200]) for r in failed]


def test_full_form_models_predict_from_their_training_store(xy, stores, tmp_path):
    X, y = xy
    est = EncoderClassifier(kernels="euclidean,spearman", form="full").fit(open_store(stores[0]))
    save_model(est, tmp_path / "full.zarr")
    np.testing.assert_allclose(load_model(tmp_path / "full.zarr").predict_proba(X[:7]), est.predict_proba(X[:7]), atol=1e-12)
    in_memory = EncoderClassifier(kernels="euclidean", form="full").fit(X, y)
    with pytest.raises(WidemlError, match=r"^a full-kernel encoder predicts from its training data, .*\.$"):
        save_model(in_memory, tmp_path / "nope.zarr")


@pytest.mark.parametrize("kernel", ["euclidean", "spearman"])
def test_full_form_is_the_kernel_matrix_times_w(kernel, xy):
    X, y = xy
    if kernel == "euclidean":
        D = np.linalg.norm(X[:, None] - X[None], axis=2)
        A = D.max() - D
    else:
        A = np.corrcoef(scipy.stats.rankdata(X, axis=1))
    W = np.eye(K)[y] / np.bincount(y)
    est = EncoderClassifier(kernels=kernel, form="full").fit(X, y)
    np.testing.assert_allclose(est.embedding_, A @ W, atol=1e-9)
    np.testing.assert_allclose(est.transform(X[:5]), A[:5] @ W, atol=1e-9)


def test_refit_deletes_the_previous_fits_arrays(xy, stores, tmp_path):
    """A refit's arrays go to a fresh group of the fit runner; the previous fit's work folder is deleted at once."""
    X, y = xy
    work = tmp_path / "work"
    est = EncoderClassifier(kernels="linear", workdir=str(work))
    est.fit(open_store(stores[0]))
    first = est._group
    U1 = np.asarray(est.class_means_)
    doubled = tmp_path / "doubled.zarr"
    write_store(doubled, 2 * X, y, feature_chunk=WIDTH, dtype="float64")
    est.fit(open_store(doubled))
    assert not Path(first).exists() and Path(est._group).exists() and len(list(work.iterdir())) == 1
    np.testing.assert_allclose(np.asarray(est.class_means_), 2 * U1, rtol=1e-12)
    np.testing.assert_allclose(est.transform(X), 2 * X @ U1.T, rtol=1e-10)
    second = est._group
    est.set_params(kernels="linear,spearman").fit(open_store(stores[0]))  # other arrays: likewise
    assert not Path(second).exists() and Path(est._group).exists() and len(list(work.iterdir())) == 1


@pytest.fixture(params=["whole", "tiled"])
def chunk_products(request, monkeypatch):
    """Chunk products in one piece, or (as with few classes and wide chunks) in row tiles of 8 rows."""
    if request.param == "tiled":
        from wideml.passes.encoder import products as enc

        monkeypatch.setattr(enc, "_TILE_MNK", 8 * K * WIDTH)
        monkeypatch.setattr(enc, "_TILE_MIN_ROWS", 2)
    return request.param


@pytest.mark.parametrize("kernels", ["linear", "linear,euclidean"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_or_inf_is_found_with_or_without_row_norms(kernels, value, xy, tmp_path, chunk_products):
    from wideml.passes.blocks import NonFiniteError

    X, y = xy
    bad = X.copy()
    bad[7, 33] = value
    with pytest.raises(NonFiniteError, match="feature index 33"):
        EncoderClassifier(kernels=kernels).fit(bad, y)
    path = tmp_path / "bad.zarr"
    write_store(path, bad.astype(np.float32), y, feature_chunk=WIDTH)  # float32, 3 classes: the tiled chunk products
    with pytest.raises(NonFiniteError, match="feature index 33"):
        EncoderClassifier(kernels=kernels).fit(open_store(path))
    est = EncoderClassifier(kernels=kernels).fit(X, y)
    with pytest.raises(NonFiniteError, match="feature index 33"):
        est.predict(bad)


def test_float32_store_matches_the_float64_definition(xy, tmp_path, chunk_products):
    """Float32 chunk products (few classes: a dense class-mean operator, whole or in row tiles)."""
    X, y = xy
    path = tmp_path / "f32.zarr"
    write_store(path, X.astype(np.float32), y, feature_chunk=WIDTH)
    X32 = X.astype(np.float32).astype(np.float64)
    for kernel in ("linear", "euclidean"):
        est = EncoderClassifier(kernels=kernel).fit(open_store(path))
        assert est.precision_ == "float32"
        want = reference_z(kernel, X32, y, X32)
        np.testing.assert_allclose(est.embedding_, want, rtol=1e-5, atol=1e-4 * np.abs(want).max())
        np.testing.assert_allclose(est.transform(open_store(path)), want, rtol=1e-5, atol=1e-4 * np.abs(want).max())


def test_tiled_chunk_products_match_the_definition(xy, stores, chunk_products):
    X, y = xy
    for kernel in ("linear", "euclidean"):
        est = EncoderClassifier(kernels=kernel).fit(open_store(stores[0]))
        np.testing.assert_allclose(est.embedding_, reference_z(kernel, X, y, X), atol=1e-10)
        np.testing.assert_allclose(est.transform(X[::3]), reference_z(kernel, X, y, X[::3]), atol=1e-10)
