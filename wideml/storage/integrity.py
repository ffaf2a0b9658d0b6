"""Chunk presence: a chunk file that is missing is an error, never a fill value (docs/architecture.md, "Trust").

zarr reads a chunk whose file is missing as the array's fill value, so a store
with a deleted chunk would silently feed zeros to a fit. wideml lists an
array's chunk files once (one directory walk, not a stat per chunk) and
compares them with the chunk grid before any pass.

What is covered
---------------
* zarr v3 arrays with the ``default`` chunk-key encoding (``c/i/j`` or
  ``c.i.j``) or the ``v2`` encoding (``i.j`` or ``i/j``), and zarr v2 arrays
  (ingest sources), on a local filesystem, or on an object store (one listing of the
  array's prefix: :mod:`wideml.storage.remote_store`);
* sharded zarr v3 arrays (``sharding_indexed`` as the array's only codec): every
  shard file must exist, and every inner chunk must be present in its shard's
  index (one small read of the index per shard, at open);
* HDF5 datasets: a chunked dataset must have every chunk of its grid allocated
  (``get_num_chunks``), a contiguous one must have its storage allocated.

What is not covered
-------------------
Chunk *contents*: a chunk file of the right size with wrong values is found
only by a checksum (the ``crc32c`` codec, verified on read by
:mod:`wideml.storage.reader`), and a truncated or undecodable chunk only when it
is read. Other chunk-key encodings are left to zarr (and so are read as zarr
reads them).
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from wideml.exceptions import StoreError

#: An index entry of a sharded array whose inner chunk was never written (offset and size both 2**64 - 1).
_EMPTY = 2**64 - 1


@dataclass(frozen=True)
class ChunkLayout:
    """Where the chunk files of a zarr v3 array are.

    Attributes
    ----------
    array_dir : str
        Folder holding the array's ``zarr.json``.
    shape : tuple of int
        The array's shape.
    grid : tuple of int
        Shape covered by one chunk file (the shard shape for a sharded array).
    prefix : str
        ``"c"`` for the default key encoding, ``""`` for the v2 one.
    separator : {"/", "."}
    inner : tuple of int or None
        Inner chunk shape of a sharded array, else None.
    index_at_end, index_crc : bool
        Where a shard's index sits and whether it ends in a crc32c checksum.
    """

    array_dir: str
    shape: tuple[int, ...]
    grid: tuple[int, ...]
    prefix: str = "c"
    separator: str = "/"
    inner: tuple[int, ...] | None = None
    index_at_end: bool = True
    index_crc: bool = True

    @property
    def unit(self) -> str:
        return "shard" if self.inner is not None else "chunk"


def chunk_layout(array_dir: str | os.PathLike, meta: dict) -> ChunkLayout | None:
    """The chunk-file layout of a zarr array from its ``zarr.json`` (v3) or ``.zarray`` (v2); None for layouts wideml does not list."""
    if meta.get("zarr_format") == 2:
        try:
            shape, grid = tuple(int(s) for s in meta["shape"]), tuple(int(c) for c in meta["chunks"])
        except (KeyError, TypeError, ValueError):
            return None
        separator = meta.get("dimension_separator") or "."
        return ChunkLayout(os.fspath(array_dir), shape, grid, "", separator) if separator in ("/", ".") else None
    try:
        shape = tuple(int(s) for s in meta["shape"])
        grid = tuple(int(c) for c in meta["chunk_grid"]["configuration"]["chunk_shape"])
    except (KeyError, TypeError, ValueError):
        return None
    enc = meta.get("chunk_key_encoding") or {"name": "default"}
    name = enc.get("name")
    if name not in ("default", "v2"):
        return None
    separator = (enc.get("configuration") or {}).get("separator", "/" if name == "default" else ".")
    if separator not in ("/", "."):
        return None
    codecs = meta.get("codecs") or []
    inner, at_end, crc = None, True, True
    if codecs and codecs[0].get("name") == "sharding_indexed":
        if len(codecs) != 1:
            return None
        conf = codecs[0].get("configuration") or {}
        inner = tuple(int(c) for c in conf.get("chunk_shape", grid))
        at_end = conf.get("index_location", "end") == "end"
        index_codecs = conf.get("index_codecs") or []
        if any(c.get("name") not in ("bytes", "crc32c") for c in index_codecs) or any(
            (c.get("configuration") or {}).get("endian", "little") != "little" for c in index_codecs if c.get("name") == "bytes"
        ):
            return None
        crc = any(c.get("name") == "crc32c" for c in index_codecs)
    return ChunkLayout(os.fspath(array_dir), shape, grid, "c" if name == "default" else "", separator, inner, at_end, crc)


def chunk_path(layout: ChunkLayout, key: tuple[int, ...]) -> str:
    """Path of the file holding chunk (or shard) ``key``."""
    parts = ([layout.prefix] if layout.prefix else []) + [str(int(k)) for k in key]
    if layout.separator == "/":
        return os.path.join(layout.array_dir, *parts)
    return os.path.join(layout.array_dir, ".".join(parts))


def expected_chunk_keys(shape: Iterable[int], chunks: Iterable[int]) -> set[tuple[int, ...]]:
    """Every chunk index of a regular chunk grid, e.g. ``{(0, 0), (0, 1), ...}``."""
    counts = [-(-int(n) // int(c)) if int(n) else 0 for n, c in zip(shape, chunks)]
    return set(itertools.product(*(range(k) for k in counts)))


def _walk(root: str, ndim: int) -> set[tuple[int, ...]]:
    """Keys of a nested ``i/j/...`` folder tree: one listing per folder level."""
    found: set[tuple[int, ...]] = set()

    def walk(folder: str, prefix: tuple[int, ...]) -> None:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if not entry.name.isdigit():
                continue
            key = prefix + (int(entry.name),)
            if len(key) == ndim:
                found.add(key)
            elif entry.is_dir():
                walk(entry.path, key)

    walk(root, ())
    return found


def _flat(folder: str, prefix: str, ndim: int) -> set[tuple[int, ...]]:
    """Keys of files named ``c.i.j`` (or ``i.j`` without a prefix) in one folder: one listing."""
    found: set[tuple[int, ...]] = set()
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return found
    for name in names:
        parts = name.split(".")
        if prefix:
            if parts[0] != prefix:
                continue
            parts = parts[1:]
        if len(parts) == ndim and all(p.isdigit() for p in parts):
            found.add(tuple(int(p) for p in parts))
    return found


def present_chunk_keys(array_dir: str | os.PathLike | ChunkLayout, ndim: int | None = None) -> set[tuple[int, ...]]:
    """Chunk (or shard) indices whose files exist: one listing per folder, no stat per chunk.

    Parameters
    ----------
    array_dir : path-like or ChunkLayout
        A layout, or the folder of an array with the default ``c/i/j`` encoding.
    ndim : int, optional
        Number of dimensions (needed with a plain path).
    """
    layout = array_dir if isinstance(array_dir, ChunkLayout) else ChunkLayout(os.fspath(array_dir), (0,) * int(ndim), (1,) * int(ndim))
    ndim = len(layout.shape)
    if ndim == 0:
        return {()} if os.path.isfile(chunk_path(layout, ())) else set()
    if layout.separator == "/":
        root = os.path.join(layout.array_dir, layout.prefix) if layout.prefix else layout.array_dir
        return _walk(root, ndim)
    return _flat(layout.array_dir, layout.prefix, ndim)


def missing_chunk_keys(array_dir: str | os.PathLike | ChunkLayout, shape=None, chunks=None) -> list[tuple[int, ...]]:
    """Chunk (or shard) indices of the grid with no file, sorted (empty when the array is complete)."""
    if isinstance(array_dir, ChunkLayout):
        layout = array_dir
    else:
        layout = ChunkLayout(os.fspath(array_dir), tuple(shape), tuple(chunks))
    return sorted(expected_chunk_keys(layout.shape, layout.grid) - present_chunk_keys(layout))


def describe_chunk(key: tuple[int, ...], shape, chunks, unit: str = "chunk") -> str:
    """``"chunk (0, 3) (rows 0:24, columns 384:512)"`` for error messages."""
    spans = [f"{i * c}:{min((i + 1) * c, n)}" for i, c, n in zip(key, chunks, shape)]
    where = ", ".join(f"{axis} {span}" for axis, span in zip(("rows", "columns", "axis 2", "axis 3"), spans))
    return f"{unit} {tuple(key)} ({where})"


def missing_error(key, shape, chunks, what: str, more: int = 0, unit: str = "chunk") -> StoreError:
    """The one-sentence error for a chunk whose file is missing."""
    extra = f" and {more} more" if more > 0 else ""
    return StoreError(
        f"{describe_chunk(key, shape, chunks, unit)}{extra} of {what} is missing (its chunk file was deleted or never "
        "written), so those values would read as zeros; restore the store from a copy or write it again "
        "(or, if missing chunks really mean the fill value, set the store's wideml attribute missing_chunks to 'fill')."
    )


def _read_index(path: str, size: int, at_end: bool) -> bytes:
    """The ``size`` bytes of a shard file's index (at its end or its start)."""
    with open(path, "rb") as f:
        if at_end:
            f.seek(-size, os.SEEK_END)
        return f.read(size)


def _empty_inner_chunk(layout: ChunkLayout, key: tuple[int, ...], read_index=_read_index) -> tuple[int, ...] | None:
    """Index (in the array's inner-chunk grid) of the first inner chunk absent from shard ``key``'s index, or None.

    ``read_index(path, size, at_end)`` returns the index's bytes (a ranged read on an object store).
    """
    counts = [-(-g // c) for g, c in zip(layout.grid, layout.inner)]
    n_inner = 1
    for k in counts:
        n_inner *= k
    size = 16 * n_inner + (4 if layout.index_crc else 0)
    path = chunk_path(layout, key)
    try:
        raw = read_index(path, size, layout.index_at_end)
    except OSError:
        raise StoreError(f"shard {tuple(key)} of the array at {layout.array_dir} cannot be read (its index is missing or "
                         "truncated); restore the store from a copy or write it again.") from None
    if len(raw) != size:
        raise StoreError(f"shard {tuple(key)} of the array at {layout.array_dir} is truncated; restore the store from a copy or write it again.")
    entries = struct.unpack(f"<{2 * n_inner}Q", raw[: 16 * n_inner])
    for flat, local in enumerate(itertools.product(*(range(k) for k in counts))):
        if entries[2 * flat] == _EMPTY and entries[2 * flat + 1] == _EMPTY:
            first = tuple(s * (g // c) + i for s, g, c, i in zip(key, layout.grid, layout.inner, local))
            starts = [f * c for f, c in zip(first, layout.inner)]
            if all(s < n for s, n in zip(starts, layout.shape)):
                return first
    return None


def check_layout_complete(layout: ChunkLayout, what: str, present: set | None = None, read_index=_read_index) -> None:
    """Raise StoreError naming the first missing chunk (or shard, or inner chunk of a shard) of a zarr array.

    Parameters
    ----------
    layout : ChunkLayout
        From :func:`chunk_layout`.
    what : str
        How the error names the array, e.g. ``"X of the store at /data/t.zarr"``.
    present : set of tuple, optional
        The chunk (or shard) indices that exist, when the caller listed them
        (an object store: :mod:`wideml.storage.remote_store`); else the local
        folder is listed.
    read_index : callable, optional
        ``read_index(path, size, at_end)``: the bytes of a shard's index (default: read the local file).
    """
    if present is None:
        missing = missing_chunk_keys(layout)
    else:
        missing = sorted(expected_chunk_keys(layout.shape, layout.grid) - set(present))
    if missing:
        raise missing_error(missing[0], layout.shape, layout.grid, what, len(missing) - 1, layout.unit)
    if layout.inner is not None:
        for key in sorted(expected_chunk_keys(layout.shape, layout.grid)):
            inner = _empty_inner_chunk(layout, key, read_index)
            if inner is not None:
                raise missing_error(inner, layout.shape, layout.inner, f"{what} (inside shard {tuple(key)})")


def check_zarr_array_complete(array_dir: str | os.PathLike, shape, chunks, what: str) -> None:
    """Raise StoreError naming the first missing chunk (and how many are missing) of a zarr v3 array.

    Parameters
    ----------
    array_dir : path-like
        Folder of the array (holding its ``zarr.json``), default ``c/i/j`` chunk-key encoding.
    shape, chunks : tuple of int
        The array's shape and (regular) chunk shape.
    what : str
        How the error names the array, e.g. ``"X of the store at /data/t.zarr"``.
    """
    check_layout_complete(ChunkLayout(os.fspath(array_dir), tuple(shape), tuple(chunks)), what)


def check_hdf5_complete(dataset, what: str) -> None:
    """Raise StoreError when an HDF5 dataset has chunks (or storage) that were never written.

    Counting allocated chunks is one call; the missing chunk is looked up
    (``get_chunk_info`` per allocated chunk) only when some are missing.
    """
    shape = tuple(int(s) for s in dataset.shape)
    if not all(shape):
        return
    if dataset.chunks is None:
        if dataset.id.get_storage_size() == 0:
            raise StoreError(f"{what} was never written (its storage is not allocated), so it would read as zeros; write the store again.")
        return
    chunks = tuple(int(c) for c in dataset.chunks)
    expected = expected_chunk_keys(shape, chunks)
    count = dataset.id.get_num_chunks()
    if count >= len(expected):
        return
    present = set()
    for i in range(count):
        offset = dataset.id.get_chunk_info(i).chunk_offset
        present.add(tuple(int(o) // c for o, c in zip(offset, chunks)))
    missing = sorted(expected - present)
    raise missing_error(missing[0], shape, chunks, what, len(missing) - 1)
