"""Picklable chunk readers that back the dask array ``X`` of a feature store.

A reader opens its file lazily in whichever process runs the task, so the same
graph runs on threads, processes and dask.distributed workers. Every read is
counted in :data:`READ_COUNTER` (per process), which the tests use to count
passes over X.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections import Counter
from pathlib import Path

import numpy as np

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


def _count(path: str) -> None:
    with _lock:
        READ_COUNTER[path] += 1


#: zarr v3 compressor codec name -> numcodecs codec class that decodes its chunk files.
_DECODERS = {"zstd": "Zstd", "gzip": "GZip", "blosc": "Blosc"}


def _chunk_decoder(codecs: list):
    """(byte order, numcodecs decoder or None) for a codec chain ``bytes`` [+ one compressor], else None.

    Only chains whose chunk files are the chunk's raw bytes, or those bytes
    compressed once by zstd, gzip or blosc, qualify; anything else (transpose,
    sharding, filters, several compressors) is left to zarr.
    """
    if not codecs or codecs[0].get("name") != "bytes" or len(codecs) > 2:
        return None
    endian = codecs[0].get("configuration", {}).get("endian", "little")
    if len(codecs) == 1:
        return endian, None
    cls = _DECODERS.get(codecs[1].get("name"))
    if cls is None:
        return None
    import numcodecs

    return endian, getattr(numcodecs, cls)()


def _damaged(path: str, name: str, shape: tuple, key, exc: Exception):
    """The one-sentence error for a block whose chunks cannot be read or decoded."""
    from wideml.exceptions import StoreError

    key = key if isinstance(key, tuple) else (key,)
    where = ", ".join("{}:{}".format(*k.indices(n)[:2]) if isinstance(k, slice) else str(k) for k, n in zip(key, shape))
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(f"cannot read {name}[{where}] of the store at {path} ({reason}): its chunk files are damaged; "
                      "restore the store from a copy or write it again.")


class ZarrReader:
    """Read rectangular blocks of a 2-D zarr v3 array.

    For arrays with the default chunk-key encoding whose chunks are stored raw
    or compressed once by zstd, gzip or blosc, a block that covers whole
    stored chunks is read straight from the chunk files (``numpy.fromfile``,
    or the file's bytes decoded by numcodecs into the destination buffer):
    the fastest read the disk and the decompressor allow, without zarr's
    per-call overhead. Anything else goes through zarr.
    """

    def __init__(self, path: str, name: str, shape, dtype, chunks):
        self.path, self.name = str(path), name
        self.shape, self.dtype, self.chunks = tuple(shape), np.dtype(dtype), tuple(chunks)
        self.ndim = len(self.shape)
        self._array = None
        try:
            meta = json.loads(Path(self.path, self.name, "zarr.json").read_text())
        except (OSError, ValueError):
            meta = None
        self._codecs = None if meta is None else meta.get("codecs", [])
        self._raw = None if meta is None else self._raw_layout(meta)

    def _raw_layout(self, meta: dict):
        enc = meta.get("chunk_key_encoding", {})
        if enc.get("name") != "default" or enc.get("configuration", {}).get("separator", "/") != "/":
            return None
        found = _chunk_decoder(self._codecs)
        if found is None:
            return None
        endian, decoder = found
        dtype = self.dtype.newbyteorder("<" if endian == "little" else ">")
        return dtype, meta.get("fill_value", 0), decoder

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_array"] = None
        return state

    def _zarr(self):
        if self._array is None:
            import zarr

            self._array = zarr.open_array(os.path.join(self.path, self.name), mode="r")
        return self._array

    def __getitem__(self, key):
        _count(self.path)
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        # dask may fuse integer or fancy indexing into the read; only plain slices take the raw path
        if self._raw is not None and isinstance(rows, slice) and isinstance(cols, slice) and rows.step in (None, 1) and cols.step in (None, 1):
            block = self._read_raw(rows, cols)
            if block is not None:
                return block
        try:
            return np.asarray(self._zarr()[key])
        except (IndexError, TypeError):  # a bad selection is the caller's bug, not the store's
            raise
        except Exception as exc:
            raise _damaged(self.path, self.name, self.shape, key, exc) from exc

    def describe_codec(self) -> str:
        """How the chunk files are encoded and read, e.g. ``"zstd (level 3); decoded straight from the chunk files"``."""
        if self._codecs is None:
            return "unknown"
        parts = []
        for codec in self._codecs[1:]:
            conf = codec.get("configuration", {})
            detail = ", ".join(f"{k} {v}" for k, v in conf.items() if k in ("cname", "level", "clevel", "shuffle"))
            parts.append(f"{codec.get('name')} ({detail})" if detail else str(codec.get("name")))
        how = "read straight from the chunk files" if self._raw is not None else "read through zarr"
        return f"{' + '.join(parts) or 'none'}; {how}"

    def read_into(self, rows: slice, cols: slice, alloc) -> np.ndarray:
        """The block ``[rows, cols]``, read into memory from ``alloc(shape, dtype)`` when it is one stored chunk.

        ``alloc`` returns a C-contiguous array to read the chunk file into (a
        reused per-thread buffer, so no fresh pages fault in on every read);
        other blocks, and other layouts, are read as by ``self[rows, cols]``.
        The result may be a view of that buffer.
        """
        if self._raw is not None:
            block = self._read_raw(rows, cols, alloc)
            if block is not None:
                _count(self.path)
                return block
        return self[rows, cols]

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
                    fd = os.open(os.path.join(self.path, self.name, "c", str(i), str(j)), os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                except OSError:
                    pass
                finally:
                    os.close(fd)

    def _read_raw(self, rows: slice, cols: slice, alloc=None):
        (r0, r1, _), (c0, c1, _) = rows.indices(self.shape[0]), cols.indices(self.shape[1])
        cr, cc = self.chunks
        if r0 % cr or c0 % cc or (r1 % cr and r1 != self.shape[0]) or (c1 % cc and c1 != self.shape[1]):
            return None
        dtype, fill, decoder = self._raw
        if (r1 - r0 <= cr) and (c1 - c0 <= cc):  # exactly one stored chunk: no extra copy
            fname = os.path.join(self.path, self.name, "c", str(r0 // cr), str(c0 // cc))
            try:
                chunk = self._load_chunk(fname, dtype, decoder, alloc)
            except FileNotFoundError:
                return np.full((r1 - r0, c1 - c0), fill, dtype=self.dtype)
            if chunk is None:
                return None
            view = chunk[: r1 - r0, : c1 - c0]
            return view if dtype == self.dtype else view.astype(self.dtype)
        out = np.empty((r1 - r0, c1 - c0), dtype=self.dtype)
        for i in range(r0 // cr, -(-r1 // cr)):
            for j in range(c0 // cc, -(-c1 // cc)):
                fname = os.path.join(self.path, self.name, "c", str(i), str(j))
                rs, cs = i * cr, j * cc
                re_, ce = min(rs + cr, r1), min(cs + cc, c1)
                try:
                    chunk = self._load_chunk(fname, dtype, decoder)
                except FileNotFoundError:
                    out[rs - r0 : re_ - r0, cs - c0 : ce - c0] = fill
                    continue
                if chunk is None:
                    return None
                out[rs - r0 : re_ - r0, cs - c0 : ce - c0] = chunk[: re_ - rs, : ce - cs]
        return out

    def _load_chunk(self, fname: str, dtype, decoder, alloc=None):
        """One stored chunk (cr x cc) from its file, into ``alloc(shape, dtype)`` when given; None if the file does not fit.

        Raises FileNotFoundError for a chunk never written (the caller fills it).
        """
        shape = self.chunks
        chunk = alloc(shape, dtype) if alloc is not None else np.empty(shape, dtype=dtype)
        if decoder is None:
            with open(fname, "rb", buffering=0) as f:
                if f.readinto(memoryview(chunk).cast("B")) != chunk.nbytes or f.read(1):
                    return None
            return chunk
        with open(fname, "rb") as f:
            data = f.read()
        try:
            decoder.decode(data, out=chunk)
        except Exception:  # corrupt or of another size (each codec raises its own kind): zarr reads it and reports
            return None
        return chunk


class HDF5Reader:
    """Read rectangular blocks of a 2-D HDF5 dataset (h5py serialises reads internally)."""

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
        import h5py

        with h5py.File(self.path, "r") as f:
            d = f[self.name]
            comp = d.compression or "none"
            level = d.compression_opts
        return f"{comp}{f' (level {level})' if level is not None else ''}; read through h5py"

    def __getitem__(self, key):
        _count(self.path)
        if self._file is None:
            import h5py

            self._file = h5py.File(self.path, "r")
        try:
            return self._file[self.name][key]
        except (IndexError, TypeError):  # a bad selection is the caller's bug, not the store's
            raise
        except OSError as exc:  # h5py's report of a chunk it cannot read or decompress
            raise _damaged(self.path, self.name, self.shape, key, exc) from exc
