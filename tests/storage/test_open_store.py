"""open_store: chunk alignment, the sample-chunking warning, and paths that are not stores."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import zarr

from wideml.exceptions import PerformanceWarning, StoreError
from wideml.storage import open_store


@pytest.mark.parametrize("feature_chunk", [None, 10, 37, 5])
def test_dask_chunks_align_with_stored_chunks(make_store, fmt, feature_chunk):
    path, X, y = make_store(fmt=fmt, feature_chunk=feature_chunk)
    store = open_store(path)
    h, c = store.stored_chunks
    assert h == 24
    assert store.X.chunks[0] == (24,)
    assert all(w == c for w in store.X.chunks[1][:-1]) and 0 < store.X.chunks[1][-1] <= c
    assert sum(store.X.chunks[1]) == 37
    np.testing.assert_array_equal(store.X.compute(), X)
    np.testing.assert_array_equal(store.y, y)
    assert store.summary()["n_chunks"] == len(store.X.chunks[1])


def test_both_axes_chunked_store_warns_and_still_reads(make_store, fmt):
    path, X, _ = make_store(fmt=fmt, sample_chunk=5, feature_chunk=10)
    with pytest.warns(PerformanceWarning, match="wideml rechunk"):
        store = open_store(path)
    assert store.stored_chunks == (5, 10)
    assert store.X.chunks[0] == (5, 5, 5, 5, 4)
    np.testing.assert_array_equal(store.X.compute(), X)


def test_missing_path(tmp_path):
    with pytest.raises(StoreError, match="no feature store"):
        open_store(tmp_path / "nope.zarr")


def test_empty_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="not a feature store"):
        open_store(tmp_path / "empty")


def test_random_file(tmp_path):
    (tmp_path / "junk.bin").write_bytes(np.random.default_rng(0).bytes(1000))
    with pytest.raises(StoreError, match="not a feature store"):
        open_store(tmp_path / "junk.bin")


def test_zarr_group_without_X(tmp_path):
    group = zarr.create_group(store=str(tmp_path / "g.zarr"), zarr_format=3)
    group.create_array("y", shape=(3,), dtype="int64")
    with pytest.raises(StoreError, match="no array 'X'"):
        open_store(tmp_path / "g.zarr")


def test_hdf5_without_X(tmp_path):
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["data"] = np.zeros((3, 4))
    with pytest.raises(StoreError, match="no array 'X'"):
        open_store(tmp_path / "f.h5")


def test_garbage_zarr_json(make_store):
    path, _, _ = make_store()
    (path / "zarr.json").write_text("{ this is not json")
    with pytest.raises(StoreError, match="corrupt"):
        open_store(path)


def test_corrupt_array_metadata(make_store):
    path, _, _ = make_store()
    meta = json.loads((path / "X" / "zarr.json").read_text())
    meta["shape"] = "garbage"
    (path / "X" / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError):
        open_store(path)


@pytest.mark.parametrize("compressor, expected", [("none", "none; read straight from the chunk files"),
                                                  ("zstd", "zstd (level 3); read straight from the chunk files"),
                                                  ("lz4", "blosc (cname lz4, clevel 5, shuffle bitshuffle); read straight")])
def test_info_names_the_codec_and_how_chunks_are_read(tmp_path, compressor, expected):
    import numpy as np

    from wideml.storage import format_summary, open_store, write_store

    write_store(tmp_path / "s.zarr", np.ones((6, 10), np.float32), np.arange(6) % 2, feature_chunk=5, compressor=compressor)
    info = open_store(tmp_path / "s.zarr").summary()
    assert info["codec"].startswith(expected)
    assert f"codec       {info['codec']}" in format_summary(info)
