"""The one-pass cross-Gram of new data with the training store (or landmarks), against numpy."""

import dask.array as da
import numpy as np
import pytest

from wideml.exceptions import WidemlError
from wideml.passes.crossgram import cross_gram_pass
from wideml.runtime import compute
from wideml.storage import open_store, write_store
from wideml.storage.reader import READ_COUNTER


@pytest.mark.parametrize("new_chunk,ref_chunk", [(13, 13), (7, 11), (40, 6)])
def test_cross_gram_matches_numpy(rng, new_chunk, ref_chunk):
    X = rng.standard_normal((20, 40)) + 1e3  # large offsets: distances must not cancel
    Z = rng.standard_normal((6, 40)) + 1e3
    stats = compute(cross_gram_pass(da.from_array(Z, chunks=(6, new_chunk)), da.from_array(X, chunks=(20, ref_chunk))))[0]
    np.testing.assert_allclose(stats.raw_cross(), Z @ X.T, rtol=1e-12)
    d2 = ((Z[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(stats.sq_distances(), d2, rtol=1e-9, atol=1e-9)
    lm = np.array([1, 5, 17])
    sub = compute(cross_gram_pass(da.from_array(Z, chunks=(6, new_chunk)), da.from_array(X, chunks=(20, ref_chunk)), ref_rows=lm))[0]
    np.testing.assert_allclose(sub.sq_distances(), d2[:, lm], rtol=1e-9, atol=1e-9)


def test_one_pass_over_each_store(tmp_path, rng):
    X = rng.standard_normal((15, 50)).astype(np.float32)
    Z = rng.standard_normal((4, 50)).astype(np.float32)
    write_store(tmp_path / "train.zarr", X, np.arange(15) % 2, feature_chunk=8)
    write_store(tmp_path / "new.zarr", Z, feature_chunk=12)  # misaligned chunks
    tr, new = open_store(tmp_path / "train.zarr"), open_store(tmp_path / "new.zarr")
    READ_COUNTER.clear()
    stats = compute(cross_gram_pass(new.X, tr.X))[0]
    np.testing.assert_allclose(stats.raw_cross(), Z.astype(np.float64) @ X.T.astype(np.float64), rtol=1e-10)
    assert READ_COUNTER[str(tr.path)] == tr.X.numblocks[1]
    assert READ_COUNTER[str(new.path)] == new.X.numblocks[1]


def test_feature_mismatch():
    with pytest.raises(WidemlError, match="same features"):
        cross_gram_pass(da.zeros((3, 5), chunks=(3, 5)), da.zeros((4, 6), chunks=(4, 6)))
    with pytest.raises(WidemlError, match="landmark"):
        cross_gram_pass(da.zeros((3, 5), chunks=(3, 5)), da.zeros((4, 5), chunks=(4, 5)), ref_rows=np.array([9]))
