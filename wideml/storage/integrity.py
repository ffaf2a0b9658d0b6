"""Chunk presence: a chunk file that is missing is an error, never a fill value (DESIGN.md §8).

zarr reads a chunk whose file is missing as the array's fill value, so a store
with a deleted chunk would silently feed zeros to a fit. wideml lists an
array's chunk files once (one directory walk, not a stat per chunk) and
compares them with the chunk grid before any pass.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable

from wideml.exceptions import StoreError


def expected_chunk_keys(shape: Iterable[int], chunks: Iterable[int]) -> set[tuple[int, ...]]:
    """Every chunk index of a regular chunk grid, e.g. ``{(0, 0), (0, 1), ...}``."""
    counts = [-(-int(n) // int(c)) if int(n) else 0 for n, c in zip(shape, chunks)]
    return set(itertools.product(*(range(k) for k in counts)))


def present_chunk_keys(array_dir: str | os.PathLike, ndim: int) -> set[tuple[int, ...]]:
    """Chunk indices whose files exist under a zarr v3 array with the default ``c/i/j`` key encoding.

    One walk of the ``c`` folder: a listing per folder level, no stat per chunk.
    """
    root = os.path.join(os.fspath(array_dir), "c")
    if ndim == 0:
        return {()} if os.path.isfile(root) else set()
    found: set[tuple[int, ...]] = set()

    def walk(folder: str, prefix: tuple[int, ...]) -> None:
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
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


def missing_chunk_keys(array_dir: str | os.PathLike, shape, chunks) -> list[tuple[int, ...]]:
    """Chunk indices of the grid with no chunk file, sorted (empty when the array is complete)."""
    shape, chunks = tuple(shape), tuple(chunks)
    return sorted(expected_chunk_keys(shape, chunks) - present_chunk_keys(array_dir, len(shape)))


def describe_chunk(key: tuple[int, ...], shape, chunks) -> str:
    """``"chunk (0, 3) (rows 0:24, columns 384:512)"`` for error messages."""
    spans = [f"{i * c}:{min((i + 1) * c, n)}" for i, c, n in zip(key, chunks, shape)]
    where = ", ".join(f"{axis} {span}" for axis, span in zip(("rows", "columns", "axis 2", "axis 3"), spans))
    return f"chunk {tuple(key)} ({where})"


def check_zarr_array_complete(array_dir: str | os.PathLike, shape, chunks, what: str) -> None:
    """Raise StoreError naming the first missing chunk (and how many are missing) of a zarr v3 array.

    Parameters
    ----------
    array_dir : path-like
        Folder of the array (holding its ``zarr.json``), default chunk-key encoding.
    shape, chunks : tuple of int
        The array's shape and (regular) chunk shape.
    what : str
        How the error names the array, e.g. ``"X of the store at /data/t.zarr"``.
    """
    missing = missing_chunk_keys(array_dir, shape, chunks)
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise StoreError(
            f"{describe_chunk(missing[0], shape, chunks)}{more} of {what} is missing (its chunk file was deleted or "
            "never written), so those values would read as zeros; restore the store from a copy or write it again."
        )
