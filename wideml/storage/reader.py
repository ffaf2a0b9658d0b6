"""Picklable chunk readers that back the dask array ``X`` of a feature store.

A reader opens its file lazily in whichever process runs the task, so the same
graph runs on threads, processes and dask.distributed workers. Every read is
counted in :data:`READ_COUNTER` (per process), which the tests use to count
passes over X.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import weakref
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import zarr

from wideml.exceptions import StoreError
from wideml.storage.chunkfiles import ChecksumMismatch, chunk_decoder, load_chunk_file
from wideml.storage.integrity import chunk_layout, chunk_path, describe_chunk, missing_error

#: Number of block reads per store path in this process.
READ_COUNTER: Counter = Counter()
_lock = threading.Lock()


#: dask array name -> reader, for arrays that are exactly ``da.from_array(reader)`` with
#: full-height chunks (a store's X). A dask array's name identifies its graph, so an
#: array derived from X (sliced, rechunked, cast) has another name and is not listed.
#: Passes use it to read chunks inside their own tasks (:func:`wideml.passes.blocks.feature_stripes`).
#: Weak: an entry goes when its store's dask array (which holds the reader) is dropped, so an
#: HDF5 file is not kept open by the registry.
DIRECT_READERS: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()


def count_read(path: str) -> None:
    """Count one block read of the array at ``path`` in :data:`READ_COUNTER` (every reader of X calls it per read)."""
    with _lock:
        READ_COUNTER[path] += 1


_count = count_read


def _damaged(path: str, name: str, shape: tuple, key, exc: Exception):
    """The one-sentence error for a block whose chunks cannot be read or decoded."""
    key = key if isinstance(key, tuple) else (key,)
    where = ", ".join("{}:{}".format(*k.indices(n)[:2]) if isinstance(k, slice) else str(k) for k, n in zip(key, shape))
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(f"cannot read {name}[{where}] of the store at {path} ({reason}): its chunk files are damaged; "
                      "restore the store from a copy or write it again.")


class ChunkBlocks:
    """The one chunk-assembly loop of the raw chunk readers (local files: :class:`ZarrReader`; objects:
    :class:`wideml.storage.remote_reader.RemoteZarrReader`).

    A block ``[rows, cols]`` that covers whole stored chunks is assembled here
    from the chunks one reader supplies: a subclass defines only
    ``_chunk_or_fill(i, j, alloc)`` (chunk (i, j) decoded, ``"fill"`` for a
    missing chunk of a "fill" store, None when zarr must read the block) and,
    to fetch the chunks of a block together, ``_chunks_or_fill(keys)``.
    It expects ``shape``, ``dtype``, ``chunks``, ``path``, ``_codecs``,
    ``_layout`` and ``_raw`` (from :meth:`_raw_layout`).
    """

    def _raw_layout(self, meta: dict):
        """(dtype in the stored byte order, fill value, numcodecs decoder or None, crc32c?) when whole chunks can be
        decoded straight from their bytes, else None."""
        if self._layout is None or self._layout.inner is not None or self._layout.grid != self.chunks:
            return None
        found = chunk_decoder(self._codecs)
        if found is None:
            return None
        endian, decoder, crc = found
        dtype = self.dtype.newbyteorder("<" if endian == "little" else ">")
        return dtype, meta.get("fill_value", 0), decoder, crc

    def _codec_text(self, how: str) -> str:
        """The codec chain in words, then ``how`` it is read (:meth:`describe_codec`)."""
        parts = []
        for codec in self._codecs[1:]:
            conf = codec.get("configuration", {})
            detail = ", ".join(f"{k} {v}" for k, v in conf.items() if k in ("cname", "level", "clevel", "shuffle"))
            parts.append(f"{codec.get('name')} ({detail})" if detail else str(codec.get("name")))
        if self._codecs and self._codecs[0].get("name") == "sharding_indexed":
            parts = ["sharded"]
        return f"{' + '.join(parts) or 'none'}; {how}"

    def read_into(self, rows: slice, cols: slice, alloc) -> np.ndarray:
        """The block ``[rows, cols]``, read into memory from ``alloc(shape, dtype)`` when it is one stored chunk.

        ``alloc`` returns a C-contiguous array to read the chunk into (a reused
        per-thread buffer, so no fresh pages fault in on every read); other
        blocks, and other layouts, are read as by ``self[rows, cols]``. The
        result may be a view of that buffer. One read of the block.
        """
        if self._raw is not None:
            block = self._read_raw(rows, cols, alloc)
            if block is not None:
                _count(self.path)
                return block
        return self[rows, cols]

    def _raw_block(self, key):
        """The block ``self[key]`` assembled from its chunks, or None when zarr must read it (not counted)."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        # dask may fuse integer or fancy indexing into the read; only plain slices take the raw path
        if self._raw is not None and isinstance(rows, slice) and isinstance(cols, slice) and rows.step in (None, 1) and cols.step in (None, 1):
            return self._read_raw(rows, cols)
        return None

    def _read_raw(self, rows: slice, cols: slice, alloc=None):
        (r0, r1, _), (c0, c1, _) = rows.indices(self.shape[0]), cols.indices(self.shape[1])
        cr, cc = self.chunks
        if r0 % cr or c0 % cc or (r1 % cr and r1 != self.shape[0]) or (c1 % cc and c1 != self.shape[1]):
            return None
        fill = self._raw[1]
        if (r1 - r0 <= cr) and (c1 - c0 <= cc):  # exactly one stored chunk: no extra copy
            chunk = self._chunk_or_fill(r0 // cr, c0 // cc, alloc)
            if chunk is None:
                return None
            if isinstance(chunk, str):
                return np.full((r1 - r0, c1 - c0), fill, dtype=self.dtype)
            view = chunk[: r1 - r0, : c1 - c0]
            return view if view.dtype == self.dtype else view.astype(self.dtype)
        out = np.empty((r1 - r0, c1 - c0), dtype=self.dtype)
        keys = [(i, j) for i in range(r0 // cr, -(-r1 // cr)) for j in range(c0 // cc, -(-c1 // cc))]
        for (i, j), chunk in zip(keys, self._chunks_or_fill(keys)):
            rs, cs = i * cr, j * cc
            re_, ce = min(rs + cr, r1), min(cs + cc, c1)
            if chunk is None:
                return None
            out[rs - r0 : re_ - r0, cs - c0 : ce - c0] = fill if isinstance(chunk, str) else chunk[: re_ - rs, : ce - cs]
        return out

    def _chunks_or_fill(self, keys: list[tuple[int, int]]):
        """The chunks ``keys`` in order, as :meth:`_chunk_or_fill` gives them (one at a time unless a reader fetches them together)."""
        return (self._chunk_or_fill(i, j) for i, j in keys)


class ZarrReader(ChunkBlocks):
    """Read rectangular blocks of a 2-D zarr v3 array; a missing chunk is an error unless the store says "fill".

    For arrays with the default (or v2) chunk-key encoding whose chunks are
    stored raw or compressed once by zstd, gzip or blosc, optionally followed
    by a crc32c checksum, a block that covers whole stored chunks is read
    straight from the chunk files (``readinto`` the destination buffer, or the
    file's bytes decoded by numcodecs into it), the checksum verified: the
    fastest read the disk and the decompressor allow, without zarr's per-call
    overhead. Anything else goes through zarr.

    Parameters
    ----------
    path : str
        Folder holding the array folder ``name``.
    name : str
    shape, dtype, chunks
        The array's shape, dtype and chunk shape.
    missing : {"error", "fill"}, default "error"
        What a missing chunk file means. With "error" (the default) it is a
        :class:`~wideml.exceptions.StoreError` naming the chunk and the store:
        on the direct path the ``open`` of the file fails (no extra stat); on
        zarr's path the files of the block's chunks are looked for after the
        read (a stat per chunk of that slower path). With "fill" it reads as
        the array's fill value, as zarr does.
    """

    #: A feature store's X (subclasses reading a user's plain array say False).
    of_store = True

    def __init__(self, path: str, name: str, shape, dtype, chunks, missing: str = "error"):
        self.path, self.name = str(path), name
        self.shape, self.dtype, self.chunks = tuple(shape), np.dtype(dtype), tuple(chunks)
        self.ndim = len(self.shape)
        self.missing = missing
        self._array = None
        meta = _read_meta(Path(self.path, self.name))
        self._codecs = None if meta is None else meta.get("codecs", [])
        self._layout = None if meta is None else chunk_layout(os.path.join(self.path, self.name), meta)
        self._raw = None if meta is None else self._raw_layout(meta)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_array"] = None
        return state

    def _zarr(self):
        if self._array is None:
            self._array = zarr.open_array(os.path.join(self.path, self.name), mode="r")
        return self._array

    def _what(self) -> str:
        return f"{self.name} of the store at {self.path}"

    def _chunk_file(self, i: int, j: int) -> str:
        return chunk_path(self._layout, (i, j))

    def _missing(self, key: tuple[int, ...], grid=None, unit: str = "chunk"):
        return missing_error(key, self.shape, grid or self.chunks, self._what(), unit=unit)

    def __getitem__(self, key):
        _count(self.path)
        block = self._raw_block(key)
        if block is not None:
            return block
        try:
            block = np.asarray(self._zarr()[key])
        except (IndexError, TypeError):  # a bad selection is the caller's bug, not the store's
            raise
        except Exception as exc:
            raise _damaged(self.path, self.name, self.shape, key, exc) from exc
        self._check_files_after_read(key)
        return block

    def _check_files_after_read(self, key) -> None:
        """Raise if a chunk (or shard) file under ``key`` is missing: zarr has just read it as the fill value."""
        if self.missing == "fill" or self._layout is None:
            return
        spans = _spans(key, self.shape)
        if spans is None:
            return
        grid = self._layout.grid
        ranges = [range(lo // g, -(-hi // g)) for (lo, hi), g in zip(spans, grid)]
        for idx in itertools.product(*ranges):
            if not os.path.exists(_chunk_path(self._layout, idx)):
                raise self._missing(idx, grid, self._layout.unit)

    def describe_codec(self) -> str:
        """How the chunk files are encoded and read, e.g. ``"zstd (level 3); decoded straight from the chunk files"``."""
        if self._codecs is None:
            return "unknown"
        return self._codec_text("read straight from the chunk files" if self._raw is not None else "read through zarr")

    def hint(self, cols: slice) -> None:
        """Ask the OS to start reading the chunk files of the full-height columns ``cols`` (no wait, no CPU).

        ``posix_fadvise(WILLNEED)`` queues the read-ahead in the kernel, so a
        task that computes on one chunk overlaps the disk reading the next.
        A no-op where the platform or the layout does not allow it.
        """
        if self._raw is None or not hasattr(os, "posix_fadvise"):
            return
        c0, c1, _ = cols.indices(self.shape[1])
        cr, cc = self.chunks
        for i in range(-(-self.shape[0] // cr)):
            for j in range(c0 // cc, -(-c1 // cc)):
                try:
                    fd = os.open(self._chunk_file(i, j), os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                except OSError:
                    pass
                finally:
                    os.close(fd)

    def _chunk_or_fill(self, i: int, j: int, alloc=None):
        """Chunk (i, j) from its file; ``"fill"`` for a missing file of a "fill" store; None when zarr must read it."""
        try:
            return load_chunk_file(self._chunk_file(i, j), self.chunks, self._raw, alloc)
        except FileNotFoundError:
            if self.missing == "fill":
                return "fill"
            raise self._missing((i, j)) from None
        except ChecksumMismatch:
            raise StoreError(
                f"{describe_chunk((i, j), self.shape, self.chunks)} of {self._what()} fails its crc32c checksum (the file "
                "was changed or damaged on disk); restore the store from a copy or write it again."
            ) from None


def _read_meta(array_dir: Path) -> dict | None:
    """An array's ``zarr.json`` (v3) or ``.zarray`` (v2) metadata, None when unreadable."""
    for name in ("zarr.json", ".zarray"):
        try:
            return json.loads((array_dir / name).read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
    return None


def _chunk_path(layout, key) -> str:
    return chunk_path(layout, key)


def _spans(key, shape) -> list[tuple[int, int]] | None:
    """Element range ``(lo, hi)`` per axis that a selection touches (None when it cannot tell)."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        return None
    key = key + (slice(None),) * (len(shape) - len(key))
    spans = []
    for k, n in zip(key, shape):
        if isinstance(k, slice):
            r = range(*k.indices(n))
            if not r:
                return []
            spans.append((min(r[0], r[-1]), max(r[0], r[-1]) + 1))
        elif isinstance(k, (int, np.integer)):
            k = int(k) % n if n else 0
            spans.append((k, k + 1))
        else:
            idx = np.asarray(k)
            if idx.dtype == bool:
                idx = np.flatnonzero(idx)
            if idx.size == 0:
                return []
            idx = idx % n
            spans.append((int(idx.min()), int(idx.max()) + 1))
    if any(hi <= lo for lo, hi in spans):
        return []
    return spans


class HDF5Reader:
    """Read rectangular blocks of a 2-D HDF5 dataset (h5py serialises reads internally)."""

    of_store = True

    def __init__(self, path: str, name: str, shape, dtype, chunks):
        self.path, self.name = str(path), name
        self.shape, self.dtype, self.chunks = tuple(shape), np.dtype(dtype), tuple(chunks)
        self.ndim = len(self.shape)
        self._file = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_file"] = None
        return state

    def describe_codec(self) -> str:
        """The dataset's compression filter, e.g. ``"gzip (level 4); read through h5py"``."""
        with h5py.File(self.path, "r") as f:
            d = f[self.name]
            comp = d.compression or "none"
            level = d.compression_opts
            check = " + fletcher32" if d.fletcher32 else ""
        return f"{comp}{f' (level {level})' if level is not None else ''}{check}; read through h5py"

    def __getitem__(self, key):
        _count(self.path)
        if self._file is None:
            self._file = h5py.File(self.path, "r")
        try:
            return self._file[self.name][key]
        except (IndexError, TypeError):  # a bad selection is the caller's bug, not the store's
            raise
        except OSError as exc:  # h5py's report of a chunk it cannot read or decompress
            raise _damaged(self.path, self.name, self.shape, key, exc) from exc
