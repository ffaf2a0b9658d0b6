"""Plain zarr arrays, da.from_zarr and h5py datasets are read by the raw chunk reader where their layout allows it.

Oracles: numpy's own array (the data written), and fits on the in-memory
array. Layouts the raw reader cannot read exactly (compressed h5py, zarr with
filters it does not know, relatively opened arrays under a dask graph) keep
their library's read and must still give the same numbers.
"""

from __future__ import annotations

import os

import dask.array as da
import h5py
import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, GzipCodec, TransposeCodec, ZstdCodec

import wideml
from wideml.exceptions import StoreError
from wideml.inputs.as_dask import as_dask_array
from wideml.inputs.h5py_raw import HDF5RawReader
from wideml.inputs.zarr_raw import PlainZarrReader
from wideml.storage.reader import DIRECT_READERS, READ_COUNTER

N, P = 23, 101


def _data(dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-3000, 3000, (N, P)).astype(dtype)
    return rng.standard_normal((N, P)).astype(dtype)


def _reader_of(Xd):
    return DIRECT_READERS.get(Xd.name)


ZARR_CASES = [
    ("f4", (N, 16), None), ("f8", (N, 16), None), ("i2", (N, 16), None),
    ("f4", (7, 16), None), ("f4", (N, 101), None), ("f8", (5, 33), None),
    ("f4", (N, 16), ZstdCodec(level=3)), ("f8", (7, 10), GzipCodec()), ("i2", (N, 16), BloscCodec(cname="lz4")),
]


@pytest.mark.parametrize("dtype,chunks,compressor", ZARR_CASES)
def test_plain_zarr_raw_read_equals_numpy(tmp_path, dtype, chunks, compressor):
    A = _data(dtype)
    z = zarr.create_array(tmp_path / "a.zarr", shape=A.shape, chunks=chunks, dtype=dtype, compressors=compressor)
    z[...] = A
    path = str(tmp_path / "a.zarr")
    for given in (zarr.open_array(path, mode="r"), da.from_zarr(path), da.from_array(zarr.open_array(path, mode="r"))):
        Xd = as_dask_array(given)
        reader = _reader_of(Xd)
        assert isinstance(reader, PlainZarrReader), type(given)
        assert Xd.chunks[0] == (N,)
        before = READ_COUNTER[path]
        np.testing.assert_array_equal(Xd.compute(), A)
        assert READ_COUNTER[path] - before == Xd.numblocks[1]  # every block through the raw reader
        buffers = []
        block = reader.read_into(slice(0, N), slice(0, Xd.chunks[1][0]), lambda s, d: buffers.append(np.empty(s, d)) or buffers[-1])
        np.testing.assert_array_equal(block, A[:, : Xd.chunks[1][0]])


def test_zarr_layouts_the_raw_reader_does_not_know_keep_zarr_read(tmp_path):
    A = _data("f4")
    z = zarr.create_array(tmp_path / "t.zarr", shape=A.shape, chunks=(N, 16), dtype="f4", filters=None,
                          serializer="auto", compressors=None)
    z[...] = A
    t = zarr.create_array(tmp_path / "tr.zarr", shape=A.shape, chunks=(N, 16), dtype="f4", compressors=None,
                          filters=[TransposeCodec(order=(1, 0))])
    t[...] = A
    Xd = as_dask_array(zarr.open_array(str(tmp_path / "tr.zarr"), mode="r"))
    assert _reader_of(Xd) is None
    np.testing.assert_array_equal(Xd.compute(), A)
    derived = da.from_zarr(str(tmp_path / "t.zarr"))[:, :50]  # more than the plain read: left to dask
    assert _reader_of(as_dask_array(derived)) is None
    np.testing.assert_array_equal(as_dask_array(derived).compute(), A[:, :50])


def test_raw_zarr_read_still_refuses_a_missing_chunk(tmp_path):
    A = _data("f4")
    z = zarr.create_array(tmp_path / "m.zarr", shape=A.shape, chunks=(N, 16), dtype="f4", compressors=None)
    z[...] = A
    (tmp_path / "m.zarr" / "c" / "0" / "2").unlink()
    with pytest.raises(StoreError, match="no stored data"):
        as_dask_array(zarr.open_array(str(tmp_path / "m.zarr"), mode="r"))
    z.attrs["wideml"] = {"missing_chunks": "fill"}
    Xd = as_dask_array(zarr.open_array(str(tmp_path / "m.zarr"), mode="r"))
    expected = A.copy()
    expected[:, 32:48] = 0
    assert isinstance(_reader_of(Xd), PlainZarrReader)
    np.testing.assert_array_equal(Xd.compute(), expected)


H5_CASES = [
    ("f4", (N, 16), {}), ("f8", (N, 16), {}), ("i2", (N, 16), {}), ("f4", (7, 16), {}), (">f8", (5, 33), {}),
    ("f4", None, {}), (">f4", None, {}), ("i2", None, {}),
]


@pytest.mark.parametrize("dtype,chunks,extra", H5_CASES)
def test_h5py_raw_read_equals_numpy(tmp_path, dtype, chunks, extra):
    A = _data(np.dtype(dtype).newbyteorder("=")).astype(dtype)
    path = str(tmp_path / "d.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=A, chunks=chunks, **extra)
    with h5py.File(path, "r") as f:
        Xd = as_dask_array(f["X"])
        reader = _reader_of(Xd)
        assert isinstance(reader, HDF5RawReader)
        before = READ_COUNTER[path]
        out = Xd.compute()
        assert out.dtype == np.dtype(dtype).newbyteorder("=")
        np.testing.assert_array_equal(out, A)
        assert READ_COUNTER[path] - before == Xd.numblocks[1]
        np.testing.assert_array_equal(reader[3:11, 5:40], A[3:11, 5:40])
        np.testing.assert_array_equal(reader[[1, 4], 2:9], A[[1, 4], 2:9])  # a fancy selection: h5py's read


def test_h5py_unwritten_chunks_read_as_the_fill_value_as_h5py_reads_them(tmp_path):
    path = str(tmp_path / "f.h5")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("X", shape=(N, P), dtype="f4", chunks=(N, 16), fillvalue=2.5)
        d[:, :16] = 1.0
    with h5py.File(path, "r") as f:
        Xd = as_dask_array(f["X"])
        assert isinstance(_reader_of(Xd), HDF5RawReader)
        np.testing.assert_array_equal(Xd.compute(), f["X"][...])


@pytest.mark.parametrize("how", ["gzip", "shuffle", "fletcher32", "compound", "written"])
def test_h5py_layouts_the_raw_reader_cannot_read_keep_h5py_read(tmp_path, how):
    A = _data("f4")
    path = str(tmp_path / "c.h5")
    with h5py.File(path, "w") as f:
        if how == "compound":
            rec = np.zeros((N, P), dtype=[("a", "f4")])
            f.create_dataset("X", data=rec)
        else:
            kw = {"gzip": {"compression": "gzip"}, "shuffle": {"shuffle": True}, "fletcher32": {"fletcher32": True},
                  "written": {}}[how]
            f.create_dataset("X", data=A, chunks=(N, 16), **kw)
    mode = "r+" if how == "written" else "r"  # a file open for writing may change under the offsets: h5py reads it
    with h5py.File(path, mode) as f:
        if how == "compound":
            with pytest.raises(wideml.WidemlError, match="not numeric"):
                as_dask_array(f["X"])
            return
        Xd = as_dask_array(f["X"])
        assert not isinstance(_reader_of(Xd), HDF5RawReader)
        np.testing.assert_array_equal(Xd.compute(), A)


def test_h5py_raw_reader_refuses_a_changed_file(tmp_path):
    A = _data("f4")
    path = str(tmp_path / "s.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=A, chunks=(N, 16))
    with h5py.File(path, "r") as f:
        Xd = as_dask_array(f["X"])
    with h5py.File(path, "a") as f:
        f.create_dataset("Y", data=A)
    with pytest.raises(StoreError, match="changed after"):
        Xd.compute()


@pytest.mark.parametrize("door", ["zarr", "from_zarr", "h5py_chunked", "h5py_contiguous"])
@pytest.mark.parametrize("make", [lambda: wideml.LOL(n_components=3), lambda: wideml.LOL(n_components=3, solver="gram"),
                                  lambda: wideml.LFL()], ids=["LOL", "LOL-gram", "LFL"])
def test_fits_on_raw_read_inputs_equal_fits_in_memory(tmp_path, door, make):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((40, 300)).astype("f4")
    y = np.arange(40) % 3
    h5 = None
    if door in ("zarr", "from_zarr"):
        zarr.create_array(tmp_path / "a.zarr", shape=A.shape, chunks=(40, 64), dtype="f4", compressors=None)[...] = A
        X = zarr.open_array(str(tmp_path / "a.zarr"), mode="r") if door == "zarr" else da.from_zarr(str(tmp_path / "a.zarr"))
    else:
        with h5py.File(tmp_path / "a.h5", "w") as f:
            f.create_dataset("X", data=A, chunks=(40, 64) if door == "h5py_chunked" else None)
        h5 = h5py.File(tmp_path / "a.h5", "r")
        X = h5["X"]
    try:
        assert _reader_of(as_dask_array(X)) is not None
        lazy, memory = make().fit(X, y), make().fit(A, y)
        np.testing.assert_allclose(lazy.transform(A), memory.transform(A), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(lazy.transform(X), memory.transform(A), rtol=1e-4, atol=1e-5)
    finally:
        if h5 is not None:
            h5.close()


@pytest.mark.parametrize("door", ["zarr", "h5py"])
def test_raw_readers_travel_to_other_processes(tmp_path, door, monkeypatch):
    """On the processes scheduler the raw readers are pickled and read their files by absolute path in the workers."""
    import dask

    rng = np.random.default_rng(4)
    A = rng.standard_normal((30, 200)).astype("f4")
    y = np.arange(30) % 2
    if door == "zarr":
        zarr.create_array(tmp_path / "a.zarr", shape=A.shape, chunks=(30, 64), dtype="f4", compressors=None)[...] = A
        monkeypatch.chdir(tmp_path)
        X = zarr.open_array("a.zarr", mode="r")  # opened relatively: re-opened by absolute path before the graph
        h5 = None
    else:
        with h5py.File(tmp_path / "a.h5", "w") as f:
            f.create_dataset("X", data=A, chunks=(30, 64))
        h5 = h5py.File(tmp_path / "a.h5", "r")
        X = h5["X"]
    try:
        Xd = as_dask_array(X)
        assert _reader_of(Xd) is not None and Xd.numblocks[1] == 4
        with dask.config.set(scheduler="processes", num_workers=2):
            np.testing.assert_array_equal(Xd.compute(), A)
            lazy = wideml.LOL(n_components=2, solver="gram").fit(X, y)
        memory = wideml.LOL(n_components=2, solver="gram").fit(A, y)
        np.testing.assert_allclose(lazy.transform(A), memory.transform(A), rtol=1e-4, atol=1e-5)
    finally:
        if h5 is not None:
            h5.close()
