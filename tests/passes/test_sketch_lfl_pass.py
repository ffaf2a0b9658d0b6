"""The randomized-solver sketch pass and the LFL passes against dense numpy, in float64 and float32 products."""

import dask
import dask.array as da
import numpy as np
import pytest

from wideml.passes.keyed_random import gaussian_rows, sparse_sign_columns, sparse_sign_rows
from wideml.passes.lfl import lfl_fit_pass, lfl_project_pass
from wideml.passes.sketch import sketch_pass

CHUNKINGS = [(60, 500), (60, 77), (25, 120)]
N_COLS, SEED = 7, 3


def _data(dtype=np.float64, offset=1e3, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(60, 500)) + 2 * np.eye(3)[rng.integers(0, 3, 60)] @ rng.normal(size=(3, 500))
         + offset * rng.random(500)).astype(dtype)
    codes = rng.integers(0, 3, 60)
    return X, codes


def _dense(X, codes, centring):
    """Float64 reference: the materialised centred operator, class means, medians."""
    X64 = X.astype(np.float64)
    m = X64.mean(0)
    means = np.stack([X64[codes == k].mean(0) for k in range(3)])
    meds = np.stack([np.median(X64[codes == k], axis=0) for k in range(3)])
    M = X64 - (means[codes] if centring == "class" else m)
    return M, m, means, meds


def _sketch(X, codes, chunks, centring, precision, Q=None):
    graph = sketch_pass(da.from_array(X, chunks=chunks), codes, 3, n_cols=N_COLS, seed=SEED, centring=centring, Q=Q,
                        medians=Q is None, precision=precision)
    (out,) = dask.compute(graph, scheduler="sync")
    return out


def _diff_gram(G):
    """Gram of the centroid differences mu_0 - mu_k: what the solver uses (invariant to the centring vector)."""
    E = np.array([[1, 1], [-1, 0], [0, -1]], dtype=float)
    return E.T @ G @ E


@pytest.mark.parametrize("centring", ["class", "pooled"])
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_sketch_and_power_step_match_dense_operator(chunks, centring):
    """float64 products: equal to the materialised operator to float64 round-off."""
    X, codes = _data()
    M, m, means, meds = _dense(X, codes, centring)
    omega = gaussian_rows(SEED, 0, X.shape[1], N_COLS)
    Y, cg_means, cg_meds, _ = _sketch(X, codes, chunks, centring, "float64")
    np.testing.assert_allclose(Y, M @ omega, rtol=1e-9, atol=1e-9 * np.abs(M @ omega).max())
    np.testing.assert_allclose(cg_means, (means - m) @ (means - m).T, rtol=1e-9, atol=1e-9)  # c = m in float64
    np.testing.assert_allclose(cg_meds, (meds - m) @ (meds - m).T, rtol=1e-9, atol=1e-9)
    Q = np.linalg.qr(M @ omega)[0]
    Z, none1, none2, _ = _sketch(X, codes, chunks, centring, "float64", Q=Q)
    assert none1 is None and none2 is None
    np.testing.assert_allclose(Z, M @ (M.T @ Q), rtol=1e-9, atol=1e-9 * np.abs(M @ (M.T @ Q)).max())


@pytest.mark.parametrize("centring", ["class", "pooled"])
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_sketch_float32_products(chunks, centring):
    """float32 data, precision="auto": float32 products on the chunk centred by its float32-rounded means,
    class-centring applied to the thin products. Within 1e-5 of the largest entry despite offsets of 1e3."""
    X, codes = _data(np.float32)
    M, m, means, meds = _dense(X, codes, centring)
    omega = gaussian_rows(SEED, 0, X.shape[1], N_COLS)
    Y, cg_means, cg_meds, _ = _sketch(X, codes, chunks, centring, "auto")
    ref = M @ omega
    np.testing.assert_allclose(Y, ref, rtol=0, atol=1e-5 * np.abs(ref).max())
    np.testing.assert_allclose(_diff_gram(cg_means), _diff_gram((means - m) @ (means - m).T), rtol=1e-5)
    np.testing.assert_allclose(_diff_gram(cg_meds), _diff_gram((meds - m) @ (meds - m).T), rtol=1e-5)
    Q = np.linalg.qr(ref)[0]
    (Z, _, _, _) = _sketch(X, codes, chunks, centring, "auto", Q=Q)
    ref = M @ (M.T @ Q)
    np.testing.assert_allclose(Z, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("precision,tol", [("float64", 1e-9), ("auto", 1e-5)])
@pytest.mark.parametrize("centring,first", [("class", "median"), ("class", "mean"), ("pooled", None)])
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_final_pass_and_centroid_embedding(tmp_path, chunks, centring, first, precision, tol):
    """The final pass gives (X - 1 m^T) Z, Z^T Z and writes Z = M^T Q (p x l); the sketch pass's XU is
    (X - 1 m^T)(C - 1 c^T)^T, which equals (X - 1 m^T) C^T E for any E whose columns sum to zero."""
    import os

    from wideml.passes.sketch import SKETCH_BASIS

    X, codes = _data(np.float32 if precision == "auto" else np.float64)
    M, m, means, meds = _dense(X, codes, centring)
    X64 = X.astype(np.float64)
    Xm = X64 - m
    group = str(tmp_path)
    os.makedirs(f"{group}/{SKETCH_BASIS}")
    Xd = da.from_array(X, chunks=chunks)
    Y, _, _, sums = dask.compute(sketch_pass(Xd, codes, 3, n_cols=N_COLS, seed=SEED, centring=centring, medians=True,
                                             embed_first=first, precision=precision), scheduler="sync")[0]
    if first:
        C = meds if first == "median" else means
        E = np.array([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
        ref = Xm @ C.T @ E
        np.testing.assert_allclose(sums["XU"] @ E, ref, rtol=0, atol=tol * np.abs(ref).max())
    else:
        assert "XU" not in sums
    Q = np.linalg.qr(Y)[0]
    XZ, _, _, sums = dask.compute(sketch_pass(Xd, codes, 3, n_cols=N_COLS, seed=SEED, centring=centring, Q=Q, final=True,
                                              out_group=group, precision=precision), scheduler="sync")[0]
    Z = M.T @ Q
    np.testing.assert_allclose(sums["ZtZ"], Z.T @ Z, rtol=0, atol=tol * np.abs(Z.T @ Z).max())
    np.testing.assert_allclose(XZ, Xm @ Z, rtol=0, atol=tol * np.abs(Xm @ Z).max())
    offsets = np.concatenate([[0], np.cumsum(Xd.chunks[1])[:-1]])
    stored = np.vstack([np.load(f"{group}/{SKETCH_BASIS}/{o}.npy") for o in offsets])
    np.testing.assert_allclose(stored, Z, rtol=0, atol=tol * np.abs(Z).max())


def test_embed_first_median_needs_medians():
    X, codes = _data()
    with pytest.raises(ValueError, match="medians=True"):
        sketch_pass(da.from_array(X, chunks=(60, 100)), codes, 3, n_cols=3, seed=0, embed_first="median")


def test_sketch_rejects_unknown_precision():
    X, codes = _data()
    with pytest.raises(ValueError, match="precision"):
        sketch_pass(da.from_array(X, chunks=(60, 100)), codes, 3, n_cols=3, seed=0, precision="half")


@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("precision,tol", [("float64", 1e-10), ("auto", 1e-5)])
def test_lfl_fit_and_project_match_raw_products(robust, precision, tol):
    """The fit pass's products mean raw-data products (XC = X C^T, XR = X R, mC = C m, mR = R^T m)
    whatever the working precision; float32 products err by under 1e-5 of the largest entry."""
    X, codes = _data(np.float32 if precision == "auto" else np.float64)
    X64 = X.astype(np.float64)
    _, m, means, meds = _dense(X, codes, "class")
    C = meds if robust else means
    R = sparse_sign_columns(SEED, 0, X.shape[1], 4, 0.05).toarray()
    Xd = da.from_array(X, chunks=(60, 77))
    (st,) = dask.compute(lfl_fit_pass(Xd, codes, 3, n_random=4, seed=SEED, density=0.05, robust=robust, out_group=None,
                                      precision=precision), scheduler="sync")
    np.testing.assert_allclose(st["centroids"], C, rtol=1e-12 if precision == "float64" else 1e-6)
    np.testing.assert_allclose(st["CC"], C @ C.T, rtol=1e-9)
    np.testing.assert_allclose(st["mC"], C @ m, rtol=1e-9)
    np.testing.assert_allclose(st["mR"], R.T @ m, rtol=1e-9, atol=1e-6)
    # Raw products carry the offsets; what LFL uses is them minus the mean row (the centred coordinates).
    for got, raw, mean_row in ((st["XC"], X64 @ C.T, C @ m), (st["XR"], X64 @ R, R.T @ m)):
        np.testing.assert_allclose(got, raw, rtol=1e-9 if precision == "float64" else 1e-7)
        centred = raw - mean_row
        np.testing.assert_allclose(got - mean_row, centred, rtol=0, atol=tol * np.abs(centred).max())
    Dm = np.array([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    (Z,) = dask.compute(lfl_project_pass(Xd, C, Dm, n_random=4, seed=SEED, density=0.05, precision=precision), scheduler="sync")
    ref = X64 @ np.hstack([C.T @ Dm, R])
    np.testing.assert_allclose(Z - Z.mean(0), ref - ref.mean(0), rtol=0, atol=tol * np.abs(ref - ref.mean(0)).max())


@pytest.mark.parametrize("precision", ["float64", "auto"])
@pytest.mark.parametrize("centring", ["class", "pooled"])
@pytest.mark.parametrize("chunks", [(60, 500), (60, 77)])
def test_power_step_in_several_fused_blocks_per_chunk(monkeypatch, chunks, centring, precision):
    """A power step multiplies each block of FUSE_COLS features twice in a row: with blocks smaller than the
    chunk (and a ragged last block) M M^T Q and the final pass's Z^T Z still match the dense operator."""
    import wideml.passes.sketch as sketch

    monkeypatch.setattr(sketch, "FUSE_COLS", 23)
    X, codes = _data(np.float32 if precision == "auto" else np.float64)
    M, m, _, _ = _dense(X, codes, centring)
    Q = np.linalg.qr(M @ gaussian_rows(SEED, 0, X.shape[1], N_COLS))[0]
    tol = 1e-9 if precision == "float64" else 1e-5
    Z, _, _, _ = _sketch(X, codes, chunks, centring, precision, Q=Q)
    ref = M @ (M.T @ Q)
    np.testing.assert_allclose(Z, ref, rtol=0, atol=tol * np.abs(ref).max())
    graph = sketch_pass(da.from_array(X, chunks=chunks), codes, 3, n_cols=N_COLS, seed=SEED, centring=centring, Q=Q,
                        final=True, precision=precision)
    (Y, _, _, sums), = dask.compute(graph, scheduler="sync")
    Zr = M.T @ Q
    np.testing.assert_allclose(sums["ZtZ"], Zr.T @ Zr, rtol=0, atol=tol * np.abs(Zr.T @ Zr).max())
    XZ = (X.astype(np.float64) - m) @ Zr
    np.testing.assert_allclose(Y, XZ, rtol=0, atol=tol * np.abs(XZ).max())
