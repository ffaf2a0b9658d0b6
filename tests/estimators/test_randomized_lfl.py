"""Randomized solver, LFL and solver="auto": oracles, chunking invariance, pass counts."""

import dask.array as da
from pathlib import Path

import numpy as np
import pytest

from oracles import max_angle, reference_lol, reference_pca, reference_rrlda
from wideml import LFL, LOL, PCA, RRLDA, open_store, write_store
from wideml.estimators.gram.solver import choose_solver, estimate_seconds
from wideml.exceptions import WidemlError
from wideml.passes.blocks import NonFiniteError
from wideml.passes.keyed_random import gaussian_rows, sparse_sign_columns, sparse_sign_rows
from wideml.storage.reader import READ_COUNTER


def decaying_data(n=150, p=800, K=3, seed=0):
    """Low-rank signal with a decaying spectrum plus noise: what a range finder is for."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    U = np.linalg.qr(rng.normal(size=(p, 20)))[0]
    X = (rng.normal(size=(n, 20)) * np.geomspace(30, 1, 20)) @ U.T + 0.3 * rng.normal(size=(n, p))
    return X + np.eye(K)[y] @ rng.normal(size=(K, p)) * 0.5 + 100.0, y


RANDOMIZED = pytest.mark.parametrize(
    "make,ref",
    [
        (lambda **kw: LOL(8, solver="randomized", n_power_iter=4, robust_first=False, **kw), lambda X, y: reference_lol(X, y, 8)),
        (lambda **kw: LOL(8, solver="randomized", n_power_iter=4, **kw), lambda X, y: reference_lol(X, y, 8, robust=True)),
        (lambda **kw: PCA(8, solver="randomized", n_power_iter=4, **kw), lambda X, y: reference_pca(X, 8)),
        (lambda **kw: RRLDA(8, solver="randomized", n_power_iter=4, **kw), lambda X, y: reference_rrlda(X, y, 8)),
    ],
    ids=["lol-means", "lol-medians", "pca", "rrlda"],
)


@RANDOMIZED
def test_randomized_matches_exact_and_ignores_chunking(make, ref):
    """float64 data: float64 products, so two chunkings agree to float64 round-off."""
    X, y = decaying_data()
    comps = []
    for chunk in (800, 229):
        est = make().fit(da.from_array(X, chunks=(X.shape[0], chunk)), y)
        A = np.asarray(est.components_).T
        comps.append(A)
        assert max_angle(A, ref(X, y)) < 1e-4
        np.testing.assert_allclose(est.transform(X), est.embedding_, rtol=1e-7, atol=1e-6)
        assert est.solver_ == "randomized" and est.n_fit_passes_ == 4 + 2  # dask input: loadings assembled from the model group
    np.testing.assert_allclose(comps[0], comps[1], rtol=1e-9, atol=1e-12)


@RANDOMIZED
def test_randomized_float32_products(make, ref):
    """float32 data: precision="auto" multiplies in float32, "float64" reproduces float64 arithmetic.

    Documented tolerance of the float32 products (measured ~4e-7): largest principal angle to
    the float64 reference below 1e-4 rad, and loadings equal under two chunkings to 1e-5 of
    their largest entry (not bit-identical: the chunking changes the float32 summation order;
    the Gaussian test matrix itself does not depend on the chunking).
    """
    X, y = decaying_data()
    X = X.astype(np.float32)
    X64 = X.astype(np.float64)
    comps = {}
    for precision in ("auto", "float64"):
        for chunk in (800, 229):
            est = make(precision=precision).fit(da.from_array(X, chunks=(X.shape[0], chunk)), y)
            A = np.asarray(est.components_).T
            comps[precision, chunk] = A
            assert est.precision_ == ("float32" if precision == "auto" else "float64")
            assert max_angle(A, ref(X64, y)) < 1e-4
            scale = np.abs(est.embedding_).max()
            np.testing.assert_allclose(est.transform(X), est.embedding_, rtol=0, atol=1e-5 * scale)
    a, b = comps["auto", 800], comps["auto", 229]
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * np.abs(a).max())
    np.testing.assert_allclose(comps["float64", 800], comps["float64", 229], rtol=1e-9, atol=1e-12)
    assert max_angle(comps["auto", 800], comps["float64", 800]) < 1e-4


@pytest.mark.parametrize("solver", ["randomized", "lfl"])
def test_nonfinite_names_first_bad_feature(tmp_path, solver):
    X, y = decaying_data(n=40, p=300)
    X = X.astype(np.float32)
    X[3, 150] = np.nan
    X[5, 170] = np.inf
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=64)
    est = LFL(4) if solver == "lfl" else LOL(4, solver="randomized")
    with pytest.raises(NonFiniteError, match="feature index 150"):
        est.fit(open_store(tmp_path / "s.zarr"))
    if solver == "lfl":  # transform checks too
        clean = np.where(np.isfinite(X), X, 0).astype(np.float32)
        fitted = LFL(4).fit(clean, y)
        assert fitted.precision_ == "float32"
        with pytest.raises(NonFiniteError, match="feature index 150"):
            fitted.transform(X)


def test_randomized_orthogonalize():
    X, y = decaying_data()
    est = LOL(6, solver="randomized", n_power_iter=4, orthogonalize=True).fit(X, y)
    A = np.asarray(est.components_).T
    np.testing.assert_allclose(A.T @ A, np.eye(6), atol=1e-9)
    np.testing.assert_allclose(est.transform(X), est.embedding_, rtol=1e-7, atol=1e-6)


def test_randomized_pass_count(tmp_path):
    X, y = decaying_data(n=120, p=800)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=100)
    store = open_store(tmp_path / "s.zarr")
    before = READ_COUNTER[str(store.path)]
    est = LOL(5, solver="randomized", n_power_iter=2).fit(store)
    # q + 2 passes: sketch, q power steps (at least n_power_iter, until converged), final; the loadings come from the model
    # group, not from X
    assert est.n_power_iter_ >= 2
    assert READ_COUNTER[str(store.path)] - before == (est.n_power_iter_ + 2) * 8 == est.n_fit_passes_ * 8
    before = READ_COUNTER[str(store.path)]
    np.testing.assert_allclose(est.transform(store), est.embedding_, rtol=1e-7, atol=1e-9)
    assert READ_COUNTER[str(store.path)] - before == 8
    assert not any(p.name.startswith("_sketch") for p in Path(est._group).iterdir())  # the temporary Z is gone


def test_qoq_needs_gram_solver():
    X, y = decaying_data(n=60, p=200)
    with pytest.raises(ValueError, match="use solver='gram'"):
        LOL(4, second_moment="quadratic", solver="randomized").fit(X, y)


def test_keyed_random_rows_do_not_depend_on_the_split():
    whole = gaussian_rows(7, 0, 3000, 5)
    parts = np.vstack([gaussian_rows(7, s, min(3000, s + 777), 5) for s in range(0, 3000, 777)])
    np.testing.assert_array_equal(whole, parts)
    whole = sparse_sign_rows(7, 0, 3000, 5, 0.02).toarray()
    parts = np.vstack([sparse_sign_rows(7, s, min(3000, s + 777), 5, 0.02).toarray() for s in range(0, 3000, 777)])
    np.testing.assert_array_equal(whole, parts)
    assert abs((whole != 0).mean() - 0.02) < 0.005
    assert abs((whole**2).mean() - 1) < 0.15


def _lfl_reference(X, y, d, density, robust):
    classes, codes = np.unique(y, return_inverse=True)
    K = len(classes)
    order = np.argsort(-np.bincount(codes), kind="stable")
    stat = np.median if robust else np.mean
    cents = np.stack([stat(X[codes == k], axis=0) for k in range(K)])
    deltas = [cents[order[0]] - cents[order[i]] for i in range(1, K)]
    cols = [v / np.linalg.norm(v) for v in deltas]
    R = sparse_sign_columns(0, 0, X.shape[1], d - (K - 1), density).toarray()
    return np.column_stack(cols + [R])


@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("chunk", [2000, 311])
def test_lfl_matches_reference(robust, chunk):
    X, y = decaying_data(n=90, p=2000)
    est = LFL(9, robust_first=robust).fit(da.from_array(X, chunks=(90, chunk)), y)
    ref = _lfl_reference(X, y, 9, est.density_, robust)
    np.testing.assert_allclose(np.asarray(est.components_).T, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.embedding_, (X - X.mean(0)) @ ref, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(est.transform(X), est.embedding_, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("chunk", [2000, 311])
def test_lfl_float32_products(robust, chunk):
    """float32 data: precision="float64" is exact; the default float32 products (measured ~1.5e-7)
    stay within 1e-5 of the largest embedding entry, and the components do not change."""
    X, y = decaying_data(n=90, p=2000)
    X = X.astype(np.float32)
    X64 = X.astype(np.float64)
    Xd = da.from_array(X, chunks=(90, chunk))
    exact = LFL(9, robust_first=robust, precision="float64").fit(Xd, y)
    ref = _lfl_reference(X64, y, 9, exact.density_, robust)
    E = (X64 - X64.mean(0)) @ ref
    np.testing.assert_allclose(np.asarray(exact.components_).T, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(exact.embedding_, E, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(exact.transform(X), exact.embedding_, rtol=1e-8, atol=1e-8)
    est = LFL(9, robust_first=robust).fit(Xd, y)
    assert est.precision_ == "float32" and exact.precision_ == "float64"
    np.testing.assert_allclose(np.asarray(est.components_).T, ref, rtol=1e-10, atol=1e-12)
    tol = 1e-5 * np.abs(E).max()
    np.testing.assert_allclose(est.embedding_, E, rtol=0, atol=tol)
    np.testing.assert_allclose(est.transform(X), est.embedding_, rtol=0, atol=tol)
    np.testing.assert_allclose(est.transform(da.from_array(X, chunks=(90, 500))), est.embedding_, rtol=0, atol=tol)


def test_lfl_precision_is_checked():
    X, y = decaying_data(n=30, p=100)
    with pytest.raises(WidemlError, match="precision='half'"):
        LFL(3, precision="half").fit(X, y)


def test_lfl_is_one_pass(tmp_path):
    X, y = decaying_data(n=90, p=1000)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=125)
    store = open_store(tmp_path / "s.zarr")
    before = READ_COUNTER[str(store.path)]
    est = LFL(6).fit(store)
    assert READ_COUNTER[str(store.path)] - before == 8
    before = READ_COUNTER[str(store.path)]
    est.transform(store)
    assert READ_COUNTER[str(store.path)] - before == 8


def test_auto_solver_policy():
    assert choose_solver(200, 10_000, 10, memory_budget=2**34)[0] == "gram"
    assert choose_solver(50_000, 10_000, 10, memory_budget=2**34)[0] == "randomized"  # Gram does not fit
    est = estimate_seconds(8000, 250_000, 10)
    assert est["randomized"] < est["gram"]
    X, y = decaying_data(n=60, p=300)
    fitted = LOL(4).fit(X, y)
    assert fitted.solver_ == "gram" and "gram" in fitted.solver_reason_


def test_small_n_store_keeps_the_emit_pass(tmp_path):
    """When Z (p x l, float64) would outweigh a quarter of X (tiny n), the loadings come from an emit pass."""
    from wideml.estimators.gram.projector import folds_loadings

    X, y = decaying_data(n=40, p=600)
    assert not folds_loadings(40, 5, 10, X.dtype.itemsize) and folds_loadings(2000, 50, 10, 4)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=100)
    store = open_store(tmp_path / "s.zarr")
    before = READ_COUNTER[str(store.path)]
    est = LOL(5, solver="randomized", n_power_iter=1).fit(store)
    assert est.n_fit_passes_ == est.n_power_iter_ + 3  # sketch, power steps until converged, Rayleigh-Ritz, emit
    assert READ_COUNTER[str(store.path)] - before == est.n_fit_passes_ * 6
    ref = LOL(5, solver="randomized", n_power_iter=1, precision="float64").fit(X, y)
    assert max_angle(np.asarray(est.components_).T, np.asarray(ref.components_).T) < 1e-6
    np.testing.assert_allclose(est.transform(store), est.embedding_, rtol=1e-7, atol=1e-9)


def test_gram_memory_counts_every_lane():
    """Each lane of the Gram pass holds its own n x n accumulator: more lanes, a bigger Gram footprint."""
    from wideml.estimators.gram.solver import choose_solver, gram_bytes

    n = 4000
    assert gram_bytes(n, 8) > gram_bytes(n, 1)
    budget = 2 * gram_bytes(n, 2) + 1  # fits half the budget with two lanes, not with eight
    assert "does not fit" not in choose_solver(n, 10_000, 10, memory_budget=budget, lanes=2)[1]
    solver, reason = choose_solver(n, 10_000, 10, memory_budget=budget, lanes=8)
    assert solver == "randomized" and "does not fit" in reason
