"""Encoder passes against in-memory numpy references, under two chunkings."""

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.stats

from wideml.algebra import encoder as alg
from wideml.passes import encoder as enc
from wideml.passes.crossgram import raw_cross_gram_pass

N, P, K = 36, 90, 3
CHUNKINGS = (7, 40)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    codes = np.arange(N) % K
    X = rng.standard_normal((N, P)) + 0.7 * codes[:, None] * (np.arange(P) < 12)
    X[:, 5] = np.round(X[:, 5])  # some ties
    return X, codes


def _spearman(A, B):
    R, S = scipy.stats.rankdata(A, axis=1), scipy.stats.rankdata(B, axis=1)
    return np.corrcoef(np.vstack([R, S]))[: len(A), len(A):]


def _stats(X, codes, width, sets, **kw):
    W, counts = alg.stacked_class_weights(codes, K, sets)
    (stats,) = dask.compute(enc.class_stats_pass(da.from_array(X, chunks=(N, width)), W, **kw))
    return stats, W, counts


@pytest.mark.parametrize("width", CHUNKINGS)
def test_one_pass_linear_and_euclidean_equal_numpy(data, width):
    X, codes = data
    stats, _, _ = _stats(X, codes, width, [np.arange(N)], keep_means=True)
    U = np.stack([X[codes == k].mean(0) for k in range(K)])
    np.testing.assert_allclose(stats.means, U, atol=1e-12)
    a = stats.anchor_stats(0, K)
    np.testing.assert_allclose(alg.embed("linear", a)[0], X @ U.T, atol=1e-10)
    D = np.linalg.norm(X[:, None] - U[None], axis=2)
    np.testing.assert_allclose(alg.embed("euclidean", a, offset=0.0)[0], -D, atol=1e-9)


@pytest.mark.parametrize("width", CHUNKINGS)
def test_fold_class_means_come_from_the_same_pass(data, width):
    X, codes = data
    sets = [np.arange(0, N, 2), np.arange(1, N, 2), np.arange(N)]
    stats, _, _ = _stats(X, codes, width, sets, keep_means=True)
    for s, idx in enumerate(sets):
        U = np.stack([X[idx][codes[idx] == k].mean(0) for k in range(K)])
        np.testing.assert_allclose(stats.anchor_stats(s, K).cross, X @ U.T, atol=1e-10)


@pytest.mark.parametrize("width", CHUNKINGS)
@pytest.mark.parametrize("block", [N, 10])
def test_exact_spearman_blocks_equal_numpy(data, width, block):
    X, codes = data
    sets = [np.arange(N)]
    stats, W, counts = _stats(X, codes, width, sets, keep_means=True)
    U = stats.means
    S = alg.row_ranks(U)
    loo = enc.LooSpec.from_sets(codes, K, sets, counts)
    Xd = da.from_array(X, chunks=(N, width))
    rc, rs, rq, lc, ls, lq = np.empty((N, K)), np.empty(N), np.empty(N), np.empty(N), np.empty(N), np.empty(N)
    for r0 in range(0, N, block):
        r1 = min(N, r0 + block)
        sel = (loo.rows >= r0) & (loo.rows < r1)
        (res,) = dask.compute(enc.spearman_exact_block(Xd, slice(r0, r1), S, U=U,
                                                       loo=enc.LooSpec(loo.rows[sel], loo.cols[sel], loo.counts[sel])))
        rc[r0:r1], rs[r0:r1], rq[r0:r1] = res["rank_cross"], res["r_sum"], res["r_sq"]
        lc[sel], ls[sel], lq[sel] = res["loo_cross"], res["loo_sum"], res["loo_sq"]
    s_sum, s_sq = alg.rank_sums(S)
    np.testing.assert_allclose(alg.pearson_from_sums(rc, rs, rq, s_sum, s_sq, P), _spearman(X, U), atol=1e-12)
    # leave-one-out: each row against the mean of the other rows of its class
    got = alg.pearson_from_sums(lc[:, None], rs, rq, ls, lq, P)  # diagonal of a row-by-row product
    for i in (0, 7, N - 1):
        c = codes[i]
        others = [j for j in np.flatnonzero(codes == c) if j != i]
        assert got[i, i] == pytest.approx(_spearman(X[i : i + 1], X[others].mean(0)[None])[0, 0], abs=1e-12)


@pytest.mark.parametrize("width", CHUNKINGS)
def test_estimated_spearman_with_every_feature_sampled_is_exact(data, width):
    X, codes = data
    sets = [np.arange(N)]
    stats, W, counts = _stats(X, codes, width, sets, sketch_idx=alg.sketch_features(P, P, 0))
    res = dask.compute(enc.spearman_sketch_pass(da.from_array(X, chunks=(N, width)), W, alg.rank_tables(stats.sketch),
                                                alg.rank_tables(enc.anchor_sample(W, stats.sketch))))[0]
    U = np.stack([X[codes == k].mean(0) for k in range(K)])
    Z = alg.pearson_from_sums(res["rank_cross"], res["r_sum"], res["r_sq"], res["s_sum"], res["s_sq"], P)
    np.testing.assert_allclose(Z, _spearman(X, U), atol=1e-12)


def test_estimated_spearman_error_is_small_and_chunking_free(data):
    X, codes = data
    out = []
    for width in CHUNKINGS:
        stats, W, _ = _stats(X, codes, width, [np.arange(N)], sketch_idx=alg.sketch_features(P, 45, 3))
        res = dask.compute(enc.spearman_sketch_pass(da.from_array(X, chunks=(N, width)), W, alg.rank_tables(stats.sketch),
                                                    alg.rank_tables(enc.anchor_sample(W, stats.sketch))))[0]
        out.append(alg.pearson_from_sums(res["rank_cross"], res["r_sum"], res["r_sq"], res["s_sum"], res["s_sq"], P))
    np.testing.assert_allclose(out[0], out[1], atol=1e-12)
    U = np.stack([X[codes == k].mean(0) for k in range(K)])
    assert np.abs(out[0] - _spearman(X, U)).max() < 0.08  # half the features sampled


@pytest.mark.parametrize("width", CHUNKINGS)
def test_new_data_against_stored_means(data, width):
    X, codes = data
    U = np.stack([X[codes == k].mean(0) for k in range(K)])
    Xn = X[:9] * 1.5 - 0.2
    Ud = da.from_array(U, chunks=(K, 25))  # stored with another chunking than X
    (out,) = dask.compute(enc.anchor_pass(da.from_array(Xn, chunks=(9, width)), Ud))
    np.testing.assert_allclose(out["cross"], Xn @ U.T, atol=1e-10)
    np.testing.assert_allclose(out["x_sq"], (Xn**2).sum(1), atol=1e-10)
    (G,) = dask.compute(raw_cross_gram_pass(da.from_array(Xn, chunks=(9, width)), da.from_array(X, chunks=(N, 25))))
    np.testing.assert_allclose(G["gram"], Xn @ X.T, atol=1e-10)
