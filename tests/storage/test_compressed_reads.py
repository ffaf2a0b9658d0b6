"""Compressed zarr chunks decoded straight from their files equal zarr's own reads."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
import zarr.codecs as zc

from wideml.exceptions import StoreError
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


def test_missing_chunk_is_an_error_naming_it_unless_the_store_says_fill(tmp_path):
    X, reader = _array(tmp_path, COMPRESSORS["zstd"], skip_chunk=1)
    with pytest.raises(StoreError, match=r"chunk \(0, 1\) \(rows 0:13, columns 16:32\) of a.zarr of the store at .* is missing"):
        reader[:, 16:32]
    with pytest.raises(StoreError, match=r"chunk \(0, 1\)"):
        reader[:, 0:50]
    fill = ZarrReader(reader.path, reader.name, reader.shape, reader.dtype, reader.chunks, missing="fill")
    np.testing.assert_array_equal(fill[:, 16:32], X[:, 16:32])
    np.testing.assert_array_equal(fill[:, 0:50], X)


@pytest.mark.parametrize("name", ["zstd", "none"])
def test_damaged_chunk_is_one_sentence_naming_the_block(tmp_path, name):
    X, reader = _array(tmp_path, COMPRESSORS.get(name))
    chunk = tmp_path / "a.zarr" / "c" / "0" / "1"
    chunk.write_bytes(chunk.read_bytes()[:37])  # truncated: neither decodable nor of the chunk's size
    assert reader._read_raw(slice(0, 13), slice(16, 32)) is None  # the direct path refuses the chunk...
    with pytest.raises(StoreError, match=r"cannot read a.zarr\[0:13, 16:32\] of the store at .*damaged; restore"):
        reader[:, 16:32]  # ...and zarr's read of it is reported as one sentence
    np.testing.assert_array_equal(reader[:, 0:16], X[:, 0:16])  # the other chunks still read


def test_damaged_store_exits_2_without_a_traceback(tmp_path):
    from wideml.cli.main import main
    from wideml.storage import write_store

    X = np.random.default_rng(0).standard_normal((30, 200)).astype(np.float32)
    write_store(tmp_path / "s.zarr", X, np.arange(30) % 2, feature_chunk=50, compressor="zstd")
    (tmp_path / "s.zarr" / "X" / "c" / "0" / "2").write_bytes(b"garbage")
    assert main(["fit", "lol", str(tmp_path / "s.zarr"), "-o", str(tmp_path / "m.model"), "--no-progress"]) == 2
    assert not (tmp_path / "m.model").exists()


def test_other_codec_chains_go_through_zarr(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 20)).astype(np.float32)
    arr = zarr.create_array(tmp_path / "a.zarr", shape=X.shape, chunks=(6, 8), dtype=X.dtype,
                            compressors=[zc.ZstdCodec(), zc.GzipCodec()])
    arr[:] = X
    reader = ZarrReader(str(tmp_path), "a.zarr", X.shape, X.dtype, (6, 8))
    assert reader._raw is None
    np.testing.assert_array_equal(reader[:, 0:20], X)


def test_damaged_hdf5_chunk_is_one_sentence(tmp_path):
    import h5py

    from wideml.storage import open_store, write_store

    X = np.random.default_rng(0).standard_normal((40, 300)).astype(np.float32)
    write_store(tmp_path / "h.h5", X, np.arange(40) % 2, feature_chunk=100, compressor="zstd")
    with h5py.File(tmp_path / "h.h5", "r") as f:
        info = f["X"].id.get_chunk_info(1)
    with open(tmp_path / "h.h5", "r+b") as fh:  # overwrite the start of the second chunk's compressed bytes
        fh.seek(info.byte_offset)
        fh.write(b"\0" * min(info.size, 64))
    store = open_store(tmp_path / "h.h5")
    with pytest.raises(StoreError, match=r"cannot read X\[0:40, 100:200\] of the store at .*damaged"):
        store.X[:, 100:200].compute()
