"""Adversarial: a plain zarr array with a chunk that has no stored data is refused, never read as zeros.

Deleting one of seven chunk files of a ``zarr.open_array`` array used to let
``wideml.LFL().fit(arr, y)`` succeed with all-zero centroids in that block: only
``open_store`` looked for missing chunks. zarr 3 also skips writing chunks equal to the
fill value by default, so an absent chunk may be a real all-zero block: wideml cannot
tell, refuses, and says how to declare it (attribute ``wideml = {"missing_chunks": "fill"}``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import wideml
from wideml.exceptions import StoreError


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    means = rng.standard_normal((3, 7 * 16)) * 0.8
    y = np.repeat([0, 1, 2], 20)
    return means[y] + rng.standard_normal((60, 7 * 16)), y


def _write(path, X, **kw):
    import zarr

    arr = zarr.create_array(store=str(path), shape=X.shape, chunks=(X.shape[0], 16), dtype=X.dtype, **kw)
    arr[...] = X
    return arr


def _one_sentence(exc) -> str:
    text = str(exc.value)
    assert text.count(". ") == 0 and "\n" not in text
    return text


@pytest.mark.parametrize("make", ["LFL", "LOL", "EncoderClassifier", "KernelPCA"])
def test_fit_on_a_zarr_array_with_a_deleted_chunk_file_is_refused(tmp_path, data, make):
    import zarr

    X, y = data
    _write(tmp_path / "x.zarr", X)
    os.remove(tmp_path / "x.zarr" / "c" / "0" / "3")
    with pytest.raises(StoreError) as info:
        getattr(wideml, make)().fit(zarr.open_array(str(tmp_path / "x.zarr"), mode="r"), y)
    text = _one_sentence(info)
    assert "chunk (0, 3) (rows 0:60, columns 48:64)" in text and str(tmp_path / "x.zarr") in text
    assert "missing_chunks" in text and "write_empty_chunks" in text


def test_transform_of_a_zarr_array_with_a_deleted_chunk_file_is_refused(tmp_path, data):
    import zarr

    X, y = data
    est = wideml.EmbeddingClassifier(wideml.LOL(3)).fit(X, y)
    _write(tmp_path / "new.zarr", X)
    os.remove(tmp_path / "new.zarr" / "c" / "0" / "6")
    with pytest.raises(StoreError, match=r"chunk \(0, 6\)"):
        est.predict(zarr.open_array(str(tmp_path / "new.zarr"), mode="r"))


def test_zarr_v2_array_with_a_deleted_chunk_file_is_refused(tmp_path, data):
    import zarr

    X, y = data
    _write(tmp_path / "v2.zarr", X, zarr_format=2)
    os.remove(tmp_path / "v2.zarr" / "0.2")
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        wideml.LFL().fit(zarr.open_array(str(tmp_path / "v2.zarr"), mode="r"), y)


def test_sharded_array_with_a_deleted_shard_is_refused(tmp_path, data):
    import zarr

    X, y = data
    arr = zarr.create_array(store=str(tmp_path / "s.zarr"), shape=X.shape, chunks=(60, 16), shards=(60, 32), dtype=X.dtype)
    arr[...] = X
    os.remove(tmp_path / "s.zarr" / "c" / "0" / "1")
    with pytest.raises(StoreError, match=r"shard \(0, 1\)"):
        wideml.LFL().fit(zarr.open_array(str(tmp_path / "s.zarr"), mode="r"), y)


def test_in_memory_zarr_array_with_an_unwritten_chunk_is_refused(data):
    import zarr

    X, y = data
    arr = zarr.create_array(store={}, shape=X.shape, chunks=(60, 16), dtype=X.dtype)
    arr[:, :48] = X[:, :48]
    arr[:, 64:] = X[:, 64:]
    with pytest.raises(StoreError, match=r"chunk \(0, 3\).*in a MemoryStore"):
        wideml.LFL().fit(arr, y)


def test_all_zero_block_skipped_by_zarr_is_refused_until_declared(tmp_path, data):
    """zarr 3 does not store a chunk equal to the fill value (write_empty_chunks=False): ambiguous, so refused until declared."""
    import zarr

    X, y = data
    X = X.copy()
    X[:, 32:48] = 0.0
    arr = _write(tmp_path / "z.zarr", X)
    assert not (tmp_path / "z.zarr" / "c" / "0" / "2").exists()  # zarr skipped the all-zero chunk
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        wideml.LFL(3).fit(zarr.open_array(str(tmp_path / "z.zarr"), mode="r"), y)
    arr.attrs["wideml"] = {"missing_chunks": "fill"}
    got = wideml.LFL(3).fit(zarr.open_array(str(tmp_path / "z.zarr"), mode="r"), y).transform(X)
    np.testing.assert_allclose(got, wideml.LFL(3).fit(X, y).transform(X), rtol=1e-10, atol=1e-10)


def test_all_zero_block_written_explicitly_is_accepted(tmp_path, data):
    import zarr

    X, y = data
    X = X.copy()
    X[:, 32:48] = 0.0
    arr = zarr.create_array(store=str(tmp_path / "w.zarr"), shape=X.shape, chunks=(60, 16), dtype=X.dtype,
                            config={"write_empty_chunks": True})
    arr[...] = X
    got = wideml.LOL(3).fit(zarr.open_array(str(tmp_path / "w.zarr"), mode="r"), y).transform(X)
    np.testing.assert_allclose(got, wideml.LOL(3).fit(X, y).transform(X), rtol=1e-9, atol=1e-9)


def test_a_store_that_cannot_list_is_refused(data):
    import zarr
    from zarr.storage import MemoryStore

    class NoListing(MemoryStore):
        @property
        def supports_listing(self) -> bool:
            return False

    X, y = data
    arr = zarr.create_array(store=NoListing(), shape=X.shape, chunks=(60, 16), dtype=X.dtype)
    arr[...] = X
    with pytest.raises(StoreError, match="cannot list its chunks"):
        wideml.LFL().fit(arr, y)
