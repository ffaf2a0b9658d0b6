"""LOL / QOQ / PCA / rrLDA subspaces against in-memory numpy references (principal angles)."""

import dask.array as da
import numpy as np
import pytest

from oracles import make_data, max_angle, reference_lol, reference_pca, reference_rrlda
from wideml import LOL, PCA, RRLDA, write_store, open_store

CHUNKINGS = [500, 64, 7]  # features per chunk: one chunk, several, many tiny
TOL = 1e-6
#: Default precision="auto" multiplies float32 data in float32: documented, measured bound.
TOL_FLOAT32 = 1e-4


def _fit_components(est, X, y, chunk):
    est.fit(da.from_array(X, chunks=(X.shape[0], chunk)), y)
    return np.asarray(est.components_).T


@pytest.mark.parametrize("K", [2, 3, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunk", CHUNKINGS)
@pytest.mark.parametrize("robust", [True, False])
def test_lol_matches_reference(K, dtype, chunk, robust):
    X, y = make_data(n=84, p=500, K=K, dtype=dtype)
    d = K + 4
    A = _fit_components(LOL(d, robust_first=robust, precision="float64"), X, y, chunk)
    ref = reference_lol(X, y, d, robust=robust)
    assert max_angle(A, ref) < TOL
    # the centroid-difference block on its own, and every prefix (nesting)
    assert max_angle(A[:, : K - 1], ref[:, : K - 1]) < TOL
    assert max_angle(A[:, :K], ref[:, :K]) < TOL


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_lol_with_feature_offsets_and_weak_signal(dtype, chunk):
    """Offsets of 1e3 and signal of 1e-2: chunk-centring before the product keeps the subspace exact."""
    X, y = make_data(n=84, p=500, K=3, offset=1e3, signal=1e-2, dtype=dtype)
    for est, ref in [
        (LOL(6, robust_first=False, precision="float64"), reference_lol(X, y, 6)),
        (LOL(6, precision="float64"), reference_lol(X, y, 6, robust=True)),
        (PCA(5, precision="float64"), reference_pca(X, 5)),
        (RRLDA(5, precision="float64"), reference_rrlda(X, y, 5)),
    ]:
        assert max_angle(_fit_components(est, X, y, chunk), ref) < TOL, type(est).__name__


@pytest.mark.parametrize("chunk", CHUNKINGS)
@pytest.mark.parametrize("offset,signal", [(0.0, 1.0), (1e3, 1e-2)])
def test_default_float32_products_stay_close(chunk, offset, signal):
    """precision="auto" on float32 data: float32 chunk products, float64 sums; within TOL_FLOAT32 of the exact subspace."""
    X, y = make_data(n=84, p=500, K=3, offset=offset, signal=signal, dtype=np.float32)
    for est, ref in [
        (LOL(6, robust_first=False), reference_lol(X, y, 6)),
        (LOL(6), reference_lol(X, y, 6, robust=True)),
        (LOL(6, robust_first=False, second_moment="quadratic"), reference_lol(X, y, 6, second_moment="quadratic")),
        (PCA(5), reference_pca(X, 5)),
        (RRLDA(5), reference_rrlda(X, y, 5)),
    ]:
        angle = max_angle(_fit_components(est, X, y, chunk), ref)
        assert angle < TOL_FLOAT32, (type(est).__name__, angle)
        assert est.precision_ == "float32"
    assert LOL(2).fit(X.astype(np.float64), y).precision_ == "float64"


@pytest.mark.parametrize("K", [2, 3, 7])
@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_qoq_matches_reference(K, chunk):
    X, y = make_data(n=84, p=300, K=K)
    d = K + 3
    A = _fit_components(LOL(d, robust_first=False, second_moment="quadratic"), X, y, chunk)
    assert max_angle(A, reference_lol(X, y, d, second_moment="quadratic")) < TOL


@pytest.mark.parametrize("K", [2, 3, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_pca_and_rrlda_match_reference(K, dtype, chunk):
    X, y = make_data(n=84, p=300, K=K, dtype=dtype)
    assert max_angle(_fit_components(PCA(6, precision="float64"), X, y, chunk), reference_pca(X, 6)) < TOL
    assert max_angle(_fit_components(RRLDA(6, precision="float64"), X, y, chunk), reference_rrlda(X, y, 6)) < TOL


def test_orthogonalize_keeps_span_and_gives_orthonormal_columns():
    X, y = make_data(n=84, p=300, K=3)
    A = np.asarray(LOL(6, orthogonalize=True, precision="float64").fit(X, y).components_).T
    np.testing.assert_allclose(A.T @ A, np.eye(6), atol=1e-9)
    assert max_angle(A, reference_lol(X, y, 6, robust=True)) < TOL
    # Gram-Schmidt order: the first column is the unit centroid difference
    ref = reference_lol(X, y, 1, robust=True)
    assert max_angle(A[:, :1], ref) < TOL


def test_float32_precision_mode_is_close():
    X, y = make_data(n=84, p=300, K=3, dtype=np.float32)
    A = _fit_components(LOL(6, precision="float32"), X, y, 64)
    assert max_angle(A, reference_lol(X, y, 6, robust=True)) < 1e-4


def test_store_backed_fit_equals_in_memory(tmp_path):
    X, y = make_data(n=84, p=500, K=3)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=64)
    store = open_store(tmp_path / "s.zarr")
    est = LOL(5).fit(store)
    assert hasattr(est.components_, "dask"), "store input keeps loadings on disk"
    mem = LOL(5).fit(X, y)
    np.testing.assert_allclose(np.asarray(est.components_), mem.components_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.transform(store), est.embedding_, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("est", [LOL(5), LOL(5, second_moment="quadratic"), PCA(4), RRLDA(4)], ids=repr)
def test_transform_of_training_data_equals_training_embedding(est):
    X, y = make_data(n=84, p=300, K=3, offset=50.0)
    est.fit(X, y)
    np.testing.assert_allclose(est.transform(X), est.embedding_, rtol=1e-8, atol=1e-7)
    np.testing.assert_allclose(est.fit_transform(X, y), est.embedding_)
