"""KernelPCA, KPCATrick and KernelLOL estimators: oracles, pass counts, save/load, bad input."""

import shutil

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from wideml.algebra.centering import pool_center_gram
from wideml.algebra.lol import lol_projection
from wideml.algebra.metric import fit_dne, pairwise_sq_dist
from wideml.estimators.kernel.kernel_lol import KernelLOL
from wideml.estimators.kernel.kpca import KernelPCA
from wideml.estimators.kernel.kpca_trick import DNE, LMNN, KPCATrick
from wideml.exceptions import StoreError, WidemlError
from wideml.storage import open_store, write_store
from wideml.models.persistence import load_model, save_model
from wideml.storage.reader import READ_COUNTER

FAST_NCA = {"max_iter": 15}
FAST_LMNN = {"max_iter": 15}


@pytest.fixture(scope="module")
def iris_split():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(5)
    idx = rng.permutation(150)
    tr, te = idx[:60], idx[60:100]
    sc = StandardScaler().fit(X[tr])
    return sc.transform(X[tr]), y[tr], sc.transform(X[te]), y[te]


@pytest.fixture
def stores(tmp_path, iris_split):
    Xtr, ytr, Xte, yte = iris_split
    write_store(tmp_path / "train.zarr", Xtr, ytr, feature_chunk=3)
    write_store(tmp_path / "test.zarr", Xte, yte, feature_chunk=2)
    return tmp_path / "train.zarr", tmp_path / "test.zarr"


def test_kernel_pca_matches_sklearn(iris_split):
    Xtr, _, Xte, _ = iris_split
    est = KernelPCA(n_components=6, sigma=0.8).fit(Xtr)
    g = 1 / (2 * 4 * 0.8**2)
    sk = SkKernelPCA(n_components=6, kernel="precomputed").fit(rbf_kernel(Xtr, gamma=g))
    F = sk.transform(rbf_kernel(Xtr, gamma=g))
    signs = np.sign(np.sum(F * est.embedding_, axis=0))
    np.testing.assert_allclose(est.embedding_ * signs, F, atol=1e-9)
    np.testing.assert_allclose(est.transform(Xte) * signs, sk.transform(rbf_kernel(Xte, Xtr, gamma=g)), atol=1e-9)


def test_passes_and_store_roundtrip(stores, iris_split, tmp_path):
    Xtr, ytr, Xte, yte = iris_split
    tr_path, te_path = stores
    train, test = open_store(tr_path), open_store(te_path)
    for selection in ("fixed", "alignment", "sum", "cv"):
        READ_COUNTER.clear()
        model = KPCATrick(learner="dne", selection=selection, cv=3, sigmas=[0.1, 1.0, 10.0]).fit(train.X, train.y)
        assert READ_COUNTER[str(tr_path)] == train.X.numblocks[1], selection  # one pass, whatever the selection
    READ_COUNTER.clear()
    pred = model.predict(test.X)
    assert READ_COUNTER[str(tr_path)] == train.X.numblocks[1] and READ_COUNTER[str(te_path)] == test.X.numblocks[1]
    np.testing.assert_array_equal(pred, model.predict(Xte))  # numpy and store inputs agree
    assert model.training_.path == str(tr_path.resolve())
    save_model(model, tmp_path / "m.zarr")
    loaded = load_model(tmp_path / "m.zarr")
    np.testing.assert_array_equal(loaded.predict(test.X), pred)
    shutil.move(tr_path, tmp_path / "moved.zarr")
    with pytest.raises(StoreError, match="no longer there"):
        load_model(tmp_path / "m.zarr").predict(Xte)


def test_numpy_trained_model_saves_its_training_data(iris_split, tmp_path):
    Xtr, ytr, Xte, _ = iris_split
    model = KPCATrick(learner="lmnn", learner_params=FAST_LMNN, n_components=10).fit(Xtr, ytr)
    save_model(model, tmp_path / "m.zarr")
    np.testing.assert_array_equal(load_model(tmp_path / "m.zarr").predict(Xte), model.predict(Xte))
    lol = KernelLOL(n_components=3, sigma=1.0).fit(Xtr, ytr)
    save_model(lol, tmp_path / "lol.zarr")
    np.testing.assert_allclose(load_model(tmp_path / "lol.zarr").transform(Xte), lol.transform(Xte), atol=1e-10)


@pytest.mark.parametrize("learner,params", [("nca", FAST_NCA), ("lmnn", FAST_LMNN), ("dne", None), ("none", None)])
def test_learners_classify(iris_split, learner, params):
    Xtr, ytr, Xte, yte = iris_split
    model = KPCATrick(learner=learner, learner_params=params, sigma=1.0).fit(Xtr, ytr)
    assert model.score(Xte, yte) > 0.8
    assert model.transform(Xte).shape == (len(yte), model.components_.shape[0])
    assert clone(model).get_params() == model.get_params()


def test_linear_kernel_reproduces_linear_dne(iris_split):
    Xtr, ytr, Xte, yte = iris_split
    model = KPCATrick(learner="dne", kernel="linear", learner_params={"n_components": 2}).fit(Xtr, ytr)
    mu = Xtr.mean(0)
    A, _ = fit_dne(Xtr - mu, ytr, n_components=2)
    np.testing.assert_allclose(pairwise_sq_dist(model.embedding_), pairwise_sq_dist((Xtr - mu) @ A.T), rtol=1e-8, atol=1e-9)
    nn = KNeighborsClassifier(1).fit((Xtr - mu) @ A.T, ytr)
    np.testing.assert_array_equal(model.predict(Xte), nn.predict((Xte - mu) @ A.T))


def test_linear_kernel_reproduces_sklearn_nca(iris_split):
    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    Xtr, ytr, Xte, _ = iris_split
    params = {"init": "identity", "max_iter": 20}
    model = KPCATrick(learner="nca", kernel="linear", learner_params=params).fit(Xtr, ytr)
    mu = Xtr.mean(0)
    nca = NeighborhoodComponentsAnalysis(random_state=0, **params).fit(Xtr - mu, ytr)
    np.testing.assert_allclose(pairwise_sq_dist(model.embedding_), pairwise_sq_dist(nca.transform(Xtr - mu)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(pairwise_sq_dist(model.transform(Xte)), pairwise_sq_dist(nca.transform(Xte - mu)), rtol=1e-5, atol=1e-7)


def test_poly_kernel_matches_sklearn(iris_split):
    Xtr, _, Xte, _ = iris_split
    est = KernelPCA(n_components=4, kernel="poly", degree=3, coef0=0.5).fit(Xtr)
    sk = SkKernelPCA(n_components=4, kernel="poly", degree=3, coef0=0.5, gamma=1 / 4).fit(Xtr)
    signs = np.sign(np.sum(sk.transform(Xtr) * est.embedding_, axis=0))
    np.testing.assert_allclose(est.transform(Xte) * signs, sk.transform(Xte), atol=1e-8)


def test_kernel_lol_linear_is_lol(iris_split):
    Xtr, ytr, Xte, _ = iris_split
    model = KernelLOL(n_components=3, kernel="linear").fit(Xtr, ytr)
    G = pool_center_gram(Xtr @ Xtr.T)
    proj = lol_projection(G, ytr, 3, 3)
    ref = G @ proj.B
    np.testing.assert_allclose(pairwise_sq_dist(model.embedding_), pairwise_sq_dist(ref), rtol=1e-7, atol=1e-9)
    Xc = Xtr - Xtr.mean(0)
    ref_te = (Xte - Xtr.mean(0)) @ Xc.T @ proj.B
    np.testing.assert_allclose(pairwise_sq_dist(model.transform(Xte)), pairwise_sq_dist(ref_te), rtol=1e-7, atol=1e-9)


def test_kernel_lol_beats_linear_on_xor():
    rng = np.random.default_rng(0)
    n, p = 200, 20
    corners = rng.integers(0, 2, size=(n, 2))
    y = corners[:, 0] ^ corners[:, 1]
    X = rng.normal(scale=0.35, size=(n, p))
    X[:, :2] += corners * 2 - 1
    tr, te = np.arange(120), np.arange(120, 200)
    lin = KernelLOL(n_components=2, kernel="linear").fit(X[tr], y[tr]).score(X[te], y[te])
    rbf = KernelLOL(n_components=2, kernel="rbf", sigma=0.3).fit(X[tr], y[tr]).score(X[te], y[te])
    assert rbf > 0.9 and lin < 0.75


def test_nystrom_with_all_landmarks_is_exact(iris_split):
    Xtr, ytr, Xte, _ = iris_split
    exact = KernelPCA(n_components=5).fit(Xtr)
    ny = KernelPCA(n_components=5, n_landmarks=len(ytr)).fit(Xtr, ytr)
    np.testing.assert_allclose(np.abs(ny.transform(Xte)), np.abs(exact.transform(Xte)), atol=1e-9)
    approx = KPCATrick(learner="dne", n_landmarks=30).fit(Xtr, ytr)
    assert approx.landmarks_.shape == (30,) and len(np.unique(ytr[approx.landmarks_])) == 3


def test_bad_input(iris_split):
    Xtr, ytr, _, _ = iris_split
    with pytest.raises(WidemlError, match="sigma=0 is not valid; use a number > 0"):
        KPCATrick(sigma=0).fit(Xtr, ytr)
    with pytest.raises(WidemlError, match="sigmas=.* is not valid; use a non-empty list of positive numbers"):
        KPCATrick(selection="sum", sigmas=[1.0, -2.0]).fit(Xtr, ytr)
    with pytest.raises(WidemlError, match="more than the 4 non-zero eigenvalues"):
        KPCATrick(kernel="linear", n_components=5).fit(Xtr, ytr)
    with pytest.raises(WidemlError, match="selection='best' is not valid"):
        KPCATrick(selection="best").fit(Xtr, ytr)
    with pytest.raises(WidemlError, match="learner='svm' is not valid"):
        KPCATrick(learner="svm").fit(Xtr, ytr)
    with pytest.raises(WidemlError, match="entries but X has"):
        KPCATrick().fit(Xtr, ytr[:-1])
    with pytest.raises(WidemlError, match="features"):
        KPCATrick(learner="dne").fit(Xtr, ytr).predict(Xtr[:, :3])


def test_learner_estimators_api(iris_split):
    Xtr, ytr, _, _ = iris_split
    assert LMNN(max_iter=5).fit(Xtr, ytr).components_.shape == (4, 4)
    assert DNE(n_components=2).fit(Xtr, ytr).transform(Xtr).shape == (60, 2)


from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


@parametrize_with_checks([KPCATrick(learner="dne"), KernelPCA(n_components=2), KernelLOL(2), LMNN(max_iter=5), DNE()])
def test_sklearn_compatible(estimator, check):
    check(estimator)
