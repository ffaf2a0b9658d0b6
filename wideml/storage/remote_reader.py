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

The block is assembled by the one loop of :class:`wideml.storage.reader.ChunkBlocks`;
this reader supplies only the fetch and decode of chunk objects. They are
fetched through obstore or fsspec as the config key ``remote-reader`` says
(:mod:`wideml.storage.obstore_reads`); the chunks of a block that spans several
are fetched concurrently.
"""

from __future__ import annotations

import itertools

import numpy as np

from wideml.exceptions import ConfigError, StoreError
from wideml.runtime.config import config_value
from wideml.storage.chunkfiles import crc32c_matches
from wideml.storage.integrity import chunk_layout, chunk_path, describe_chunk, missing_error
from wideml.storage.obstore_reads import obstore_fetcher, resolve_backend
from wideml.storage.reader import ChunkBlocks, _damaged, _spans, count_read
from wideml.storage.remote_access import RemoteLocation, exists, get_bytes, get_many, remote_error
from wideml.storage.urls import protocol_of


def decode_chunk(data: bytes, shape, raw, alloc=None):
    """One stored chunk from its object's bytes, into ``alloc(shape, dtype)`` when given; None if the bytes do not fit.

    Raises
    ------
    ValueError
        When the crc32c trailer does not match the bytes before it.
    """
    dtype, _, decoder, crc = raw
    view = memoryview(data).cast("B")
    if crc:
        if len(view) < 4:
            return None
        if not crc32c_matches(view[:-4], bytes(view[-4:])):
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


class RemoteZarrReader(ChunkBlocks):
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
    backend : {"auto", "obstore", "fsspec"}, optional
        What fetches the chunk objects (default: the config key ``remote-reader``); resolved in each process.
    """

    of_store = True

    def __init__(self, location: RemoteLocation, name: str, shape, dtype, chunks, meta: dict, missing: str = "error",
                 backend: str | None = None):
        self.location, self.name = location, name
        self.path = location.url  # how READ_COUNTER and messages name the store
        self.shape, self.dtype, self.chunks = tuple(shape), np.dtype(dtype), tuple(chunks)
        self.ndim = len(self.shape)
        self.missing = missing
        self._array = None
        self._codecs = meta.get("codecs", [])
        self._layout = chunk_layout(name, meta)  # keys such as "X/c/0/3"
        self._raw = self._raw_layout(meta)
        self.backend = str(backend or config_value("remote-reader") or "auto").strip().lower()
        self._fetch = None
        if self._raw is not None:
            resolve_backend(location, self.backend)  # an impossible choice is one sentence now, not in a task

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_array"] = None
        state["_fetch"] = None
        return state

    def __wideml_paths__(self):
        """No local path for the cluster's path check (:mod:`wideml.runtime.cluster_check`): workers are asked by
        :mod:`wideml.runtime.remote_check` instead."""
        return []

    def __wideml_remote__(self):
        """(URL, probe) for :mod:`wideml.runtime.remote_check`: the probe runs on a worker and returns None or what failed."""
        return self.location.url, RemoteProbe(self.location, self.name, self.backend)

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
        if self._raw is None:
            return self._codec_text("read through zarr from the object store")
        return self._codec_text(f"read object by object from the object store (through {resolve_backend(self.location, self.backend)})")

    def hint(self, cols: slice) -> None:
        """No read-ahead on an object store (a no-op, as :meth:`ZarrReader.hint` on layouts it cannot hint)."""

    def __getitem__(self, key):
        count_read(self.path)
        block = self._raw_block(key)
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

    def _fetcher(self):
        """``fetch(keys) -> [bytes-like or None]`` of this process's backend (chosen once per process)."""
        if self._fetch is None:
            if resolve_backend(self.location, self.backend) == "obstore":
                self._fetch = obstore_fetcher(self.location)
            else:
                self._fetch = lambda keys: get_many(self.location, keys)
        return self._fetch

    def _objects(self, keys: list[tuple[int, int]]) -> list:
        """The bytes of the chunk objects ``keys`` (None for a missing one), fetched together; failures in one sentence."""
        names = [chunk_path(self._layout, key) for key in keys]
        try:
            return self._fetcher()(names)
        except (StoreError, ConfigError):
            raise
        except Exception as exc:  # noqa: BLE001 - the client's many errors, in one sentence
            raise remote_error(exc, self.location.url, f"read {names[0] if len(names) == 1 else f'{len(names)} chunks'} of") from None

    def _chunk_or_fill(self, i: int, j: int, alloc=None):
        """Chunk (i, j) from its object; ``"fill"`` for a missing object of a "fill" store; an object that does not decode is an error."""
        return self._decoded((i, j), self._objects([(i, j)])[0], alloc)

    def _chunks_or_fill(self, keys: list[tuple[int, int]]):
        """The chunks ``keys`` of a block, their objects fetched concurrently, each decoded as the loop takes it."""
        return (self._decoded(key, data) for key, data in zip(keys, self._objects(keys)))

    def _decoded(self, key: tuple[int, int], data, alloc=None):
        """Chunk ``key`` decoded from its object's bytes (None: the object is missing)."""
        if data is None:
            if self.missing == "fill":
                return "fill"
            raise missing_error(key, self.shape, self.chunks, self._what())
        where = f"{describe_chunk(key, self.shape, self.chunks)} of {self._what()}"
        try:
            chunk = decode_chunk(data, self.chunks, self._raw, alloc)
        except ValueError:
            raise StoreError(f"{where} fails its crc32c checksum (the object was changed or damaged); restore the store from "
                             "a copy or write it again.") from None
        if chunk is None:  # a whole stored chunk of this layout always decodes to exactly the chunk's bytes
            raise StoreError(f"{where} does not decode to a {self.chunks[0]} x {self.chunks[1]} chunk of {self.dtype} (its object "
                             f"holds {len(memoryview(data).cast('B'))} bytes: truncated or damaged); restore the store from a copy "
                             "or write it again.")
        return chunk


class RemoteProbe:
    """What a dask worker checks before the first pass: the backend imports and the store's metadata can be read.

    Called on the worker; returns None when it can read the store, else a few words saying what failed.
    """

    def __init__(self, location: RemoteLocation, name: str, backend: str = "auto"):
        self.location, self.name, self.backend = location, name, backend

    def __call__(self) -> str | None:
        if self.backend == "obstore":
            try:
                import obstore  # noqa: F401
            except ImportError as exc:
                return f"cannot import obstore, which remote-reader: obstore asks for ({exc})"
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
