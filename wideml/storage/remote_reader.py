"""The chunk reader of a feature store's X on an object store (``s3://``, ``gs://``, a zarr Store object).

Like :class:`wideml.storage.reader.ZarrReader`, it is picklable (it carries a
:class:`~wideml.storage.remote_access.RemoteLocation`, never credentials) and
counts every read in :data:`wideml.storage.reader.READ_COUNTER`. A block that
is exactly one stored chunk of a ``bytes`` [+ zstd/gzip/blosc] [+ crc32c]
array is one GET of the chunk object, decoded into the task's reused buffer
(its checksum verified); a missing object is an error naming the chunk (or,
for a store that says ``missing_chunks: fill``, the fill value), and so is an
object that does not decode to exactly its chunk (truncated or damaged). Other blocks
and layouts are read through zarr, after which the block's chunk objects are
looked for (one HEAD each), so a deleted chunk is never read as zeros.
"""

from __future__ import annotations

import itertools

import numpy as np

from wideml.exceptions import StoreError
from wideml.storage.chunkfiles import chunk_decoder, crc32c_matches
from wideml.storage.integrity import chunk_layout, chunk_path, describe_chunk, missing_error
from wideml.storage.reader import _damaged, _spans, count_read
from wideml.storage.remote_access import RemoteLocation, exists, get_bytes, remote_error
from wideml.storage.urls import protocol_of


def decode_chunk(data: bytes, shape, raw, alloc=None):
    """One stored chunk from its object's bytes, into ``alloc(shape, dtype)`` when given; None if the bytes do not fit.

    Raises
    ------
    ValueError
        When the crc32c trailer does not match the bytes before it.
    """
    dtype, _, decoder, crc = raw
    view = memoryview(data)
    if crc:
        if len(data) < 4:
            return None
        if not crc32c_matches(view[:-4], data[-4:]):
            raise ValueError("crc32c mismatch")
        view = view[:-4]
    chunk = alloc(shape, dtype) if alloc is not None else np.empty(shape, dtype=dtype)
    if decoder is None:
        if len(view) != chunk.nbytes:
            return None
        memoryview(chunk).cast("B")[:] = view
        return chunk
    try:
        decoder.decode(view, out=chunk)
    except Exception:  # noqa: BLE001 - corrupt or of another size: zarr reads it and reports
        return None
    return chunk


class RemoteZarrReader:
    """Read rectangular blocks of a 2-D zarr v3 array on an object store.

    Parameters
    ----------
    location : RemoteLocation
    name : str
        The array's key in the store (``"X"``).
    shape, dtype, chunks
        The array's shape, dtype and chunk shape.
    meta : dict
        The array's ``zarr.json``.
    missing : {"error", "fill"}
    """

    of_store = True

    def __init__(self, location: RemoteLocation, name: str, shape, dtype, chunks, meta: dict, missing: str = "error"):
        self.location, self.name = location, name
        self.path = location.url  # how READ_COUNTER and messages name the store
        self.shape, self.dtype, self.chunks = tuple(shape), np.dtype(dtype), tuple(chunks)
        self.ndim = len(self.shape)
        self.missing = missing
        self._array = None
        self._codecs = meta.get("codecs", [])
        self._layout = chunk_layout(name, meta)  # keys such as "X/c/0/3"
        self._raw = self._raw_layout(meta)

    def _raw_layout(self, meta: dict):
        if self._layout is None or self._layout.inner is not None or self._layout.grid != self.chunks:
            return None
        found = chunk_decoder(self._codecs)
        if found is None:
            return None
        endian, decoder, crc = found
        return self.dtype.newbyteorder("<" if endian == "little" else ">"), meta.get("fill_value", 0), decoder, crc

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_array"] = None
        return state

    def __wideml_paths__(self):
        """No local path for the cluster's path check (:mod:`wideml.runtime.cluster_check`): workers are asked by
        :mod:`wideml.runtime.remote_check` instead."""
        return []

    def __wideml_remote__(self):
        """(URL, probe) for :mod:`wideml.runtime.remote_check`: the probe runs on a worker and returns None or what failed."""
        return self.location.url, RemoteProbe(self.location, self.name)

    def _what(self) -> str:
        return f"{self.name} of the store at {self.location.url}"

    def _zarr(self):
        if self._array is None:
            import zarr

            try:
                self._array = zarr.open_array(store=self.location.store(), path=self.name, mode="r")
            except StoreError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise remote_error(exc, self.location.url, "open X of") from None
        return self._array

    def describe_codec(self) -> str:
        """How the chunk objects are encoded and read, e.g. ``"zstd (level 3); read object by object"``."""
        parts = []
        for codec in self._codecs[1:]:
            conf = codec.get("configuration", {})
            detail = ", ".join(f"{k} {v}" for k, v in conf.items() if k in ("cname", "level", "clevel", "shuffle"))
            parts.append(f"{codec.get('name')} ({detail})" if detail else str(codec.get("name")))
        if self._codecs and self._codecs[0].get("name") == "sharding_indexed":
            parts = ["sharded"]
        how = "read object by object from the object store" if self._raw is not None else "read through zarr from the object store"
        return f"{' + '.join(parts) or 'none'}; {how}"

    def hint(self, cols: slice) -> None:
        """No read-ahead on an object store (a no-op, as :meth:`ZarrReader.hint` on layouts it cannot hint)."""

    def read_into(self, rows: slice, cols: slice, alloc) -> np.ndarray:
        """The block ``[rows, cols]``, decoded into ``alloc(shape, dtype)`` when it is one stored chunk."""
        if self._raw is not None:
            block = self._read_raw(rows, cols, alloc)
            if block is not None:
                count_read(self.path)
                return block
        return self[rows, cols]

    def __getitem__(self, key):
        count_read(self.path)
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        if self._raw is not None and isinstance(rows, slice) and isinstance(cols, slice) and rows.step in (None, 1) and cols.step in (None, 1):
            block = self._read_raw(rows, cols)
            if block is not None:
                return block
        try:
            block = np.asarray(self._zarr()[key])
        except (IndexError, TypeError, StoreError):
            raise
        except ValueError as exc:  # the objects were read but do not decode (truncated, damaged): as for a local store
            raise _damaged(self.location.url, self.name, self.shape, key, exc) from None
        except Exception as exc:  # noqa: BLE001
            raise remote_error(exc, self.location.url, f"read {self.name} of") from None
        self._check_objects_after_read(key)
        return block

    def _check_objects_after_read(self, key) -> None:
        """Raise if a chunk (or shard) object under ``key`` is missing: zarr has just read it as the fill value."""
        if self.missing == "fill" or self._layout is None:
            return
        spans = _spans(key, self.shape)
        if not spans:
            return
        grid = self._layout.grid
        ranges = [range(lo // g, -(-hi // g)) for (lo, hi), g in zip(spans, grid)]
        for idx in itertools.product(*ranges):
            if not exists(self.location, chunk_path(self._layout, idx)):
                raise missing_error(idx, self.shape, grid, self._what(), unit=self._layout.unit)

    def _read_raw(self, rows: slice, cols: slice, alloc=None):
        (r0, r1, _), (c0, c1, _) = rows.indices(self.shape[0]), cols.indices(self.shape[1])
        cr, cc = self.chunks
        if r0 % cr or c0 % cc or (r1 % cr and r1 != self.shape[0]) or (c1 % cc and c1 != self.shape[1]):
            return None
        fill = self._raw[1]
        if (r1 - r0 <= cr) and (c1 - c0 <= cc):
            chunk = self._chunk_or_fill(r0 // cr, c0 // cc, alloc)
            if chunk is None:
                return None
            if isinstance(chunk, str):
                return np.full((r1 - r0, c1 - c0), fill, dtype=self.dtype)
            view = chunk[: r1 - r0, : c1 - c0]
            return view if view.dtype == self.dtype else view.astype(self.dtype)
        out = np.empty((r1 - r0, c1 - c0), dtype=self.dtype)
        for i in range(r0 // cr, -(-r1 // cr)):
            for j in range(c0 // cc, -(-c1 // cc)):
                rs, cs = i * cr, j * cc
                re_, ce = min(rs + cr, r1), min(cs + cc, c1)
                chunk = self._chunk_or_fill(i, j)
                if chunk is None:
                    return None
                out[rs - r0 : re_ - r0, cs - c0 : ce - c0] = fill if isinstance(chunk, str) else chunk[: re_ - rs, : ce - cs]
        return out

    def _chunk_or_fill(self, i: int, j: int, alloc=None):
        """Chunk (i, j) from its object; ``"fill"`` for a missing object of a "fill" store; an object that does not decode is an error."""
        data = get_bytes(self.location, chunk_path(self._layout, (i, j)))
        if data is None:
            if self.missing == "fill":
                return "fill"
            raise missing_error((i, j), self.shape, self.chunks, self._what())
        where = f"{describe_chunk((i, j), self.shape, self.chunks)} of {self._what()}"
        try:
            chunk = decode_chunk(data, self.chunks, self._raw, alloc)
        except ValueError:
            raise StoreError(f"{where} fails its crc32c checksum (the object was changed or damaged); restore the store from "
                             "a copy or write it again.") from None
        if chunk is None:  # a whole stored chunk of this layout always decodes to exactly the chunk's bytes
            raise StoreError(f"{where} does not decode to a {self.chunks[0]} x {self.chunks[1]} chunk of {self.dtype} (its object "
                             f"holds {len(data)} bytes: truncated or damaged); restore the store from a copy or write it again.")
        return chunk


class RemoteProbe:
    """What a dask worker checks before the first pass: the backend imports and the store's metadata can be read.

    Called on the worker; returns None when it can read the store, else a few words saying what failed.
    """

    def __init__(self, location: RemoteLocation, name: str):
        self.location, self.name = location, name

    def __call__(self) -> str | None:
        if self.location.store_object is None:
            protocol = protocol_of(self.location.url)
            try:
                import fsspec

                fsspec.get_filesystem_class(protocol)
            except ImportError as exc:
                return f"cannot import the {protocol}:// backend ({exc})"
        try:
            found = get_bytes(self.location, f"{self.name}/zarr.json")
        except StoreError as exc:
            return str(exc).rstrip(".")
        return None if found is not None else f"finds no {self.name}/zarr.json in {self.location.url}"


__all__ = ["RemoteProbe", "RemoteZarrReader", "decode_chunk"]
