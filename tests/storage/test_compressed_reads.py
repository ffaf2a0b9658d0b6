"""Compressed zarr chunks decoded straight from their files equal zarr's own reads."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
import zarr.codecs as zc

from wideml.storage.reader import ZarrReader

COMPRESSORS = {
    "zstd": zc.ZstdCodec(level=3),
    "zstd-checksum": zc.ZstdCodec(level=1, checksum=True),
    "gzip": zc.GzipCodec(level=5),
    "blosc-lz4-bitshuffle": zc.BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle"),
    "blosc-zstd-shuffle": zc.BloscCodec(cname="zstd", clevel=3, shuffle="shuffle"),
}


def _array(tmp_path, compressor, dtype=np.float32, shape=(13, 50), chunks=(13, 16), skip_chunk=None):
    rng = np.random.default_rng(0)
    X = np.round(rng.standard_normal(shape) * 8).astype(dtype)
    arr = zarr.create_array(tmp_path / "a.zarr", shape=shape, chunks=chunks, dtype=dtype, compressors=compressor, fill_value=0)
    arr[:] = X
    if skip_chunk is not None:  # a chunk never written reads as the fill value
        X[:, skip_chunk * chunks[1] : (skip_chunk + 1) * chunks[1]] = 0
        arr[:, skip_chunk * chunks[1] : (skip_chunk + 1) * chunks[1]] = 0
    return X, ZarrReader(str(tmp_path), "a.zarr", shape, dtype, chunks)


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_direct_decode_equals_zarr(tmp_path, name, dtype):
    X, reader = _array(tmp_path, COMPRESSORS[name], dtype)
    assert reader._raw is not None and reader._raw[2] is not None  # the direct decode path is taken
    for cols in (slice(0, 16), slice(16, 32), slice(48, 50), slice(0, 50), slice(16, 48)):
        np.testing.assert_array_equal(reader[:, cols], X[:, cols])
    buf = {}

    def alloc(shape, dt):
        buf["a"] = np.empty(shape, dt)
        return buf["a"]

    block = reader.read_into(slice(0, 13), slice(32, 48), alloc)
    np.testing.assert_array_equal(block, X[:, 32:48])
    assert np.shares_memory(block, buf["a"])  # decoded straight into the caller's buffer


def test_missing_chunk_reads_as_fill_value(tmp_path):
    X, reader = _array(tmp_path, COMPRESSORS["zstd"], skip_chunk=1)
    np.testing.assert_array_equal(reader[:, 16:32], X[:, 16:32])
    np.testing.assert_array_equal(reader[:, 0:50], X)


def test_corrupt_chunk_falls_back_to_zarr_which_reports_it(tmp_path):
    X, reader = _array(tmp_path, COMPRESSORS["zstd"])
    (tmp_path / "a.zarr" / "c" / "0" / "1").write_bytes(b"not zstd at all")
    assert reader._read_raw(slice(0, 13), slice(16, 32)) is None  # the direct path refuses the chunk...
    with pytest.raises(Exception):  # ...and zarr's own read raises on it
        reader[:, 16:32]


def test_other_codec_chains_go_through_zarr(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 20)).astype(np.float32)
    arr = zarr.create_array(tmp_path / "a.zarr", shape=X.shape, chunks=(6, 8), dtype=X.dtype,
                            compressors=[zc.ZstdCodec(), zc.GzipCodec()])
    arr[:] = X
    reader = ZarrReader(str(tmp_path), "a.zarr", X.shape, X.dtype, (6, 8))
    assert reader._raw is None
    np.testing.assert_array_equal(reader[:, 0:20], X)
