"""Raw chunk-file writes into uncompressed zarr v3 arrays read back by zarr exactly."""

import numpy as np
import pytest
import zarr

from wideml.storage.rawchunks import write_aligned


@pytest.mark.parametrize("shape,chunks,axis", [((1000,), (128,), 0), ((3, 1000), (3, 128), 1), ((1000, 5), (128, 5), 0)])
def test_aligned_writes_read_back_through_zarr(tmp_path, shape, chunks, axis):
    arr = zarr.create_array(str(tmp_path / "a.zarr"), shape=shape, chunks=chunks, dtype=np.float64, compressors=None, fill_value=0.0)
    rng = np.random.default_rng(0)
    full = rng.normal(size=shape)
    size, n = chunks[axis], shape[axis]
    for start in range(0, n, 2 * size):  # two chunks per write, the last one ragged
        cut = [slice(None)] * len(shape)
        cut[axis] = slice(start, min(start + 2 * size, n))
        assert write_aligned(str(tmp_path / "a.zarr"), full[tuple(cut)], start, axis)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[...], full)
    assert arr.shape == shape


def test_unaligned_or_compressed_writes_are_refused(tmp_path):
    zarr.create_array(str(tmp_path / "a.zarr"), shape=(100,), chunks=(10,), dtype=np.float64, compressors=None, fill_value=0.0)
    assert not write_aligned(str(tmp_path / "a.zarr"), np.ones(10), 5, 0)  # not on a chunk boundary
    assert not write_aligned(str(tmp_path / "a.zarr"), np.ones(7), 10, 0)  # ends inside a chunk
    zarr.create_array(str(tmp_path / "b.zarr"), shape=(100,), chunks=(10,), dtype=np.float64, fill_value=0.0)  # compressed
    assert not write_aligned(str(tmp_path / "b.zarr"), np.ones(10), 0, 0)
    zarr.create_array(str(tmp_path / "c.zarr"), shape=(4, 100), chunks=(2, 10), dtype=np.float64, compressors=None, fill_value=0.0)
    assert not write_aligned(str(tmp_path / "c.zarr"), np.ones((4, 10)), 0, 1)  # the other axis spans two chunks
    assert not write_aligned(str(tmp_path / "missing.zarr"), np.ones(10), 0, 0)
