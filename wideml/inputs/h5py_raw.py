"""h5py datasets read by byte offset, at a feature store's speed: no h5py call, no lock, from any process.

An HDF5 dataset whose bytes lie in the file as they are in memory (contiguous,
or chunked with no filter) can be read without h5py: its chunks' byte offsets
are listed once, in this process, through h5py's low-level API
(``dataset.id.get_offset()``, ``dataset.id.chunk_iter``), and every later read
is a ``pread`` of those bytes from the file by its absolute path, straight
into the task's buffer. Reads release the GIL, need no lock (h5py serialises
its own), and the reader pickles to any process.

Only datasets where that is exact are read so: a file opened read-only with
the default (``sec2``) driver and no user block, a plain numeric dtype (no
compound, no sub-array), no filter (compression, shuffle, fletcher32,
scale-offset), no external or virtual storage. Everything else keeps h5py's
own read (:func:`wideml.inputs.external.h5py_as_dask`). A chunk that was never
written reads as the dataset's fill value, as h5py reads it. The file's size
and modification time are kept with the offsets; a reader that finds the file
changed refuses to read (the offsets may no longer hold).

Same file: a reader re-opens the file by its path, and another file may sit
there now (``os.replace`` of a new version while the user's handle still has
the old one open). So the identity of the file the handle has open (device and
inode, from ``os.fstat`` of its descriptor) is compared with the path's when a
reader is built (:func:`same_file`), and every reader checks the file it opens
against that identity before reading a byte (:class:`HDF5RawReader`,
:class:`SameFileHDF5Reader`): another file is refused in one sentence, never read.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import h5py
import numpy as np

from wideml.exceptions import StoreError
from wideml.storage.reader import HDF5Reader, count_read


def replaced_error(path: str) -> StoreError:
    """The one sentence for a file at ``path`` that is not the file the user's h5py handle has open."""
    return StoreError(f"the HDF5 file at {path} was replaced since it was opened (another file is at that path now); "
                      f"open it again (h5py.File({path!r}, 'r')) and pass the new dataset.")


def handle_identity(X: Any) -> tuple[int, int] | None:
    """(device, inode) of the file an h5py dataset's handle has open, or None when its driver shows no descriptor.

    Only the default ``sec2`` driver gives an operating-system file descriptor
    (``dataset.file.id.get_vfd_handle()``); ``core``, ``stdio`` and Python
    file objects do not.
    """
    f = X.file
    if f.driver != "sec2":
        return None
    try:
        st = os.fstat(int(f.id.get_vfd_handle()))
    except (OSError, ValueError, TypeError, AttributeError, RuntimeError):
        return None
    return st.st_dev, st.st_ino


def path_identity(path: str | None) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path`` now, or None when there is none."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def same_file(X: Any, path: str | None) -> bool | None:
    """Whether ``path`` leads to the very file X's handle has open: True, False (another file), None (cannot tell)."""
    handle = handle_identity(X)
    if handle is None or path is None:
        return None
    return path_identity(path) == handle


def _check_identity(fd: int, path: str, identity: tuple[int, int] | None) -> None:
    """Refuse the file open on ``fd`` when it is not the file with ``identity`` (the one the user's handle had open)."""
    if identity is None:
        return
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != tuple(identity):
        raise replaced_error(path)


class SameFileHDF5Reader(HDF5Reader):
    """h5py's own read of a dataset re-opened by path (compressed layouts, other processes), only from the handle's file.

    Parameters
    ----------
    path, name, shape, dtype, chunks
        As :class:`~wideml.storage.reader.HDF5Reader`.
    identity : tuple of int or None
        (device, inode) of the file the user's handle had open; the file
        re-opened at ``path`` must be it (:func:`replaced_error` otherwise).
    """

    def __init__(self, path: str, name: str, shape, dtype, chunks, identity: tuple[int, int] | None):
        super().__init__(path, name, shape, dtype, chunks)
        self.identity = None if identity is None else tuple(identity)

    def __getitem__(self, key):
        if self._file is None:
            f = h5py.File(self.path, "r")
            try:
                _check_identity(int(f.id.get_vfd_handle()), self.path, self.identity)
            except BaseException:
                f.close()
                raise
            self._file = f
        return super().__getitem__(key)


def raw_layout(X: Any, path: str | None) -> tuple[tuple[int, int] | None, dict | int] | None:
    """(stored chunk shape or None, chunk origin -> byte offset (chunked) or the data's offset (contiguous)), or None.

    None when the dataset's bytes cannot be read as they are (see the module docstring).
    """
    f = X.file
    dtype = np.dtype(X.dtype)
    if (path is None or f.mode != "r" or f.driver != "sec2" or f.userblock_size or X.ndim != 2 or dtype.names is not None
            or dtype.subdtype is not None or dtype.kind not in "fiub" or getattr(X, "is_virtual", False)):
        return None
    plist = X.id.get_create_plist()
    if plist.get_nfilters() or plist.get_external_count():
        return None
    layout = plist.get_layout()
    if layout == h5py.h5d.CONTIGUOUS:
        offset = X.id.get_offset()
        return None if offset is None else (None, int(offset))
    if layout != h5py.h5d.CHUNKED:
        return None
    offsets: dict = {}

    def keep(info) -> None:
        if info.filter_mask == 0 and info.byte_offset is not None:
            offsets[tuple(int(c) for c in info.chunk_offset)] = int(info.byte_offset)

    X.id.chunk_iter(keep)
    return tuple(int(c) for c in X.chunks), offsets


class HDF5RawReader:
    """Rectangular blocks of a 2-D HDF5 dataset read by byte offset (see the module docstring).

    Parameters
    ----------
    path : str
        Absolute path of the HDF5 file.
    name : str
        The dataset's name in the file (for messages and the cluster check).
    shape : tuple of int
    dtype : numpy dtype
        The dtype as stored (its byte order included); blocks are returned in native order.
    chunks : tuple of int or None
        The stored chunk shape; None for a contiguous dataset.
    where : dict or int
        Chunk origin -> byte offset (chunked; absent chunks read as ``fill``), or the data's offset (contiguous).
    fill : scalar
        The dataset's fill value.
    stamp : tuple of int
        The file's (size, modification time in ns) when the offsets were listed.
    identity : tuple of int, optional
        (device, inode) of the file the offsets were listed from; the file
        opened at ``path`` must be it (:func:`replaced_error` otherwise).
    """

    of_store = False

    def __init__(self, path: str, name: str, shape, dtype, chunks, where, fill, stamp: tuple[int, int],
                 identity: tuple[int, int] | None = None):
        self.path, self.name = str(path), str(name)
        self.shape, self.chunks = tuple(int(s) for s in shape), None if chunks is None else tuple(int(c) for c in chunks)
        self.stored = np.dtype(dtype)
        self.dtype = self.stored.newbyteorder("=")
        self.ndim = 2
        self._where, self._fill, self._stamp = where, fill, tuple(stamp)
        self.identity = None if identity is None else tuple(identity)
        self._fd: int | None = None
        self._lock = threading.Lock()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_fd"], state["_lock"] = None, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __del__(self):
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def _file(self) -> int:
        if self._fd is None:
            with self._lock:
                if self._fd is None:
                    fd = os.open(self.path, os.O_RDONLY)
                    try:
                        _check_identity(fd, self.path, self.identity)
                    except BaseException:
                        os.close(fd)
                        raise
                    st = os.fstat(fd)
                    if (st.st_size, st.st_mtime_ns) != self._stamp:
                        os.close(fd)
                        raise StoreError(f"the HDF5 file {self.path} changed after the dataset {self.name} was handed in; "
                                         "pass the dataset again (reopen the file) so its data is read where it now lies.")
                    self._fd = fd
        return self._fd

    def describe_codec(self) -> str:
        return "none; read straight from the file by byte offset"

    def __getitem__(self, key):
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        if isinstance(rows, slice) and isinstance(cols, slice) and rows.step in (None, 1) and cols.step in (None, 1):
            return self.read_into(rows, cols, None)
        count_read(self.path)
        with h5py.File(self.path, "r") as f:  # a fancy selection (dask fused an index into the read): h5py's own
            _check_identity(int(f.id.get_vfd_handle()), self.path, self.identity)
            return np.asarray(f[self.name][key])

    def read_into(self, rows: slice, cols: slice, alloc=None) -> np.ndarray:
        """The block ``[rows, cols]``; a block that is one stored chunk is read into ``alloc(shape, dtype)`` when given."""
        count_read(self.path)
        (r0, r1, _), (c0, c1, _) = rows.indices(self.shape[0]), cols.indices(self.shape[1])
        r1, c1 = max(r0, r1), max(c0, c1)
        if self.chunks is None:
            block = self._contiguous(r0, r1, c0, c1, alloc)
        else:
            block = self._chunked(r0, r1, c0, c1, alloc)
        return block if block.dtype == self.dtype else block.astype(self.dtype)

    def _pread(self, buffer: np.ndarray, offset: int) -> None:
        view = memoryview(buffer).cast("B")
        got = os.preadv(self._file(), [view], offset)
        if got != view.nbytes:
            raise StoreError(f"the HDF5 file {self.path} ended before the data of {self.name} (read {got} of {view.nbytes} "
                             "bytes at its recorded offset); the file was truncated: restore it from a copy.")

    def _contiguous(self, r0: int, r1: int, c0: int, c1: int, alloc) -> np.ndarray:
        p, size = self.shape[1], self.stored.itemsize
        shape = (r1 - r0, c1 - c0)
        out = alloc(shape, self.stored) if alloc is not None else np.empty(shape, dtype=self.stored)
        if not out.size:
            return out
        if c0 == 0 and c1 == p:
            self._pread(out, self._where + r0 * p * size)
            return out
        for i in range(r1 - r0):
            self._pread(out[i], self._where + ((r0 + i) * p + c0) * size)
        return out

    def _chunk(self, origin: tuple[int, int], alloc) -> np.ndarray | None:
        offset = self._where.get(origin)
        if offset is None:
            return None
        chunk = alloc(self.chunks, self.stored) if alloc is not None else np.empty(self.chunks, dtype=self.stored)
        self._pread(chunk, offset)
        return chunk

    def _chunked(self, r0: int, r1: int, c0: int, c1: int, alloc) -> np.ndarray:
        cr, cc = self.chunks
        if r0 % cr == 0 and c0 % cc == 0 and r1 - r0 <= cr and c1 - c0 <= cc:  # one stored chunk: no extra copy
            chunk = self._chunk((r0, c0), alloc)
            if chunk is None:
                return np.full((r1 - r0, c1 - c0), self._fill, dtype=self.stored)
            return chunk[: r1 - r0, : c1 - c0]
        out = np.empty((r1 - r0, c1 - c0), dtype=self.stored)
        for i in range(r0 // cr, -(-r1 // cr)):
            for j in range(c0 // cc, -(-c1 // cc)):
                rs, cs = i * cr, j * cc
                a, b, c, d = max(rs, r0), min(rs + cr, r1), max(cs, c0), min(cs + cc, c1)
                chunk = self._chunk((rs, cs), None)
                target = out[a - r0 : b - r0, c - c0 : d - c0]
                target[...] = self._fill if chunk is None else chunk[a - rs : b - rs, c - cs : d - cs]
        return out

    def hint(self, cols: slice) -> None:
        """Ask the OS to start reading the stored chunks of the full-height columns ``cols`` (no wait)."""
        if self.chunks is None or not hasattr(os, "posix_fadvise"):
            return
        c0, c1, _ = cols.indices(self.shape[1])
        cr, cc = self.chunks
        nbytes = cr * cc * self.stored.itemsize
        try:
            fd = self._file()
            for rs in range(0, self.shape[0], cr):
                for cs in range(c0 - c0 % cc, c1, cc):
                    offset = self._where.get((rs, cs))
                    if offset is not None:
                        os.posix_fadvise(fd, offset, nbytes, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass


def raw_reader(X: Any, path: str | None) -> HDF5RawReader | None:
    """An :class:`HDF5RawReader` of the h5py dataset ``X`` in the file at ``path``, or None when h5py must read it.

    None too when ``path`` does not lead to the file X's handle has open
    (:func:`same_file`): the offsets are the handle's file's.
    """
    if not same_file(X, path):
        return None
    try:
        found = raw_layout(X, path)
    except Exception:  # noqa: BLE001 - any surprise in h5py's low-level API: keep h5py's read
        return None
    if found is None:
        return None
    chunks, where = found
    st = os.stat(path)
    fill = X.fillvalue if X.fillvalue is not None else 0
    return HDF5RawReader(path, X.name, X.shape, X.dtype, chunks, where, fill, (st.st_size, st.st_mtime_ns),
                         (st.st_dev, st.st_ino))


__all__ = ["HDF5RawReader", "SameFileHDF5Reader", "handle_identity", "path_identity", "raw_layout", "raw_reader",
           "replaced_error", "same_file"]
