"""Blocks of features for the maps: the block grid, one read of the model's p-sized arrays per block, running reductions.

:func:`wideml.maps.write_maps` never holds a whole map: it walks the features
in blocks of :data:`BLOCK_FEATURES` (:func:`block_ranges`), reads the current
block of every p-sized array the maps need once (:class:`BlockReader`: one
dask compute per block for all of them), hands each map's block of values to
that map's outputs, and keeps only small running results: the peak
(:class:`RunningPeak`) and the top-N features by |value| (:class:`TopN`,
ties resolved by the lower feature index, as ``np.argsort(-|v|, kind="stable")``).
Memory: O(block x arrays), independent of p.
"""

from __future__ import annotations

from collections.abc import Iterator

import dask
import numpy as np

from wideml.runtime import compute

#: Features per block (a module constant so tests can force tiny blocks). 2^18 float64 = 2 MiB per map row.
BLOCK_FEATURES = 1 << 18
#: Follow the chunks of the model's arrays (a block of whole chunks, so no chunk is decoded twice) when a chunk
#: holds at most this many blocks' worth of features; tests set it to 0 to force blocks that split chunks.
ALIGN_UP_TO = 4


def block_size(n_features: int, chunk: int | None = None) -> int:
    """Features per block: :data:`BLOCK_FEATURES`, made a multiple of the arrays' feature chunk when that is cheap.

    A chunk no larger than a block: the block is rounded down to whole chunks.
    A chunk larger than a block by at most :data:`ALIGN_UP_TO` times: the block
    is one chunk (each chunk is decoded once; memory grows by that factor at most).
    Larger chunks: blocks of BLOCK_FEATURES (each chunk read once per block it spans).

    Parameters
    ----------
    n_features : int
    chunk : int or None
        Features per chunk of the model's p-sized arrays (None: unknown or in memory).

    Returns
    -------
    int
        At least 1, at most max(n_features, 1).
    """
    size = max(1, int(BLOCK_FEATURES))
    if chunk and 0 < chunk <= size:
        size -= size % int(chunk)
    elif chunk and chunk <= ALIGN_UP_TO * size:
        size = int(chunk)
    return max(1, min(size, max(1, int(n_features))))


def block_ranges(n_features: int, size: int) -> Iterator[tuple[int, int]]:
    """Consecutive ``(lo, hi)`` feature ranges of at most ``size`` features covering ``range(n_features)``."""
    for lo in range(0, int(n_features), int(size)):
        yield lo, min(lo + int(size), int(n_features))


def feature_chunk(array) -> int | None:
    """Features per chunk of a (k, p) dask array (its last axis), else None."""
    chunks = getattr(array, "chunks", None)
    if hasattr(array, "dask") and chunks:
        return int(max(chunks[-1]))
    return None


class BlockReader:
    """The current block of every registered (k, p) array, read once per block.

    Maps ask for ``rows(array, lo, hi)``; the first request of a new block
    computes that block of every registered array in one dask compute (no
    progress bar: there is one compute per block), so the maps of a model
    read the model's p-sized arrays once in all, not once per map.
    """

    def __init__(self):
        self._arrays: list = []
        self._span: tuple[int, int] | None = None
        self._blocks: dict[int, np.ndarray] = {}

    def add(self, array) -> None:
        """Register a (k, p) array (numpy or dask)."""
        if all(a is not array for a in self._arrays):
            self._arrays.append(array)

    def lengths(self) -> set[int]:
        """The feature counts (last axis) of the registered arrays."""
        return {int(a.shape[-1]) for a in self._arrays}

    def chunk(self) -> int | None:
        """The largest feature chunk of the registered dask arrays (None when all are in memory)."""
        sizes = [c for c in (feature_chunk(a) for a in self._arrays) if c]
        return max(sizes) if sizes else None

    def rows(self, array, lo: int, hi: int) -> np.ndarray:
        """``array[:, lo:hi]`` as numpy, shape (k, hi - lo) (read with every registered array's block)."""
        self.add(array)
        if self._span != (lo, hi) or id(array) not in self._blocks:
            self._read(lo, hi)
        return self._blocks[id(array)]

    def _read(self, lo: int, hi: int) -> None:
        lazy = [a for a in self._arrays if hasattr(a, "dask")]
        blocks = {id(a): np.asarray(a[:, lo:hi]) for a in self._arrays if not hasattr(a, "dask")}
        if lazy:
            with dask.config.set({"wideml.progress": False}):
                values = compute(*[a[:, lo:hi] for a in lazy], label="maps: read a block of the model's p-sized arrays")
            blocks.update({id(a): np.asarray(v) for a, v in zip(lazy, values)})
        self._span, self._blocks = (lo, hi), blocks


class RunningPeak:
    """The first largest |value| over blocks (``np.argmax(np.abs(values))`` of the whole vector)."""

    def __init__(self):
        self.index = 0
        self.value = -1.0  # below any |value|, so the first block sets it

    def add(self, lo: int, values: np.ndarray) -> None:
        if values.size == 0:
            return
        j = int(np.argmax(np.abs(values)))
        top = float(abs(values[j]))
        if top > self.value:  # strictly: an equal value later keeps the earlier index
            self.index, self.value = lo + j, top


class TopN:
    """The ``top`` largest |values| over blocks, ties by lower feature index (``argsort(-|v|, kind="stable")[:top]``).

    Keeps at most ``top`` candidates plus one block's ties: memory O(top + block).
    """

    def __init__(self, top: int):
        self.top = max(0, int(top))
        self.index = np.zeros(0, dtype=np.int64)
        self.values = np.zeros(0, dtype=np.float64)

    def add(self, lo: int, values: np.ndarray) -> None:
        if self.top == 0 or values.size == 0:
            return
        mag = np.abs(values)
        if values.size > self.top:  # the block's candidates: every value at least its top-th largest (ties kept)
            cut = np.partition(mag, values.size - self.top)[values.size - self.top]
            keep = np.flatnonzero(mag >= cut)
        else:
            keep = np.arange(values.size)
        index = np.concatenate([self.index, lo + keep.astype(np.int64)])
        vals = np.concatenate([self.values, values[keep]])
        order = np.lexsort((index, -np.abs(vals)))[: self.top]  # by -|v|, then by index
        self.index, self.values = index[order], vals[order]

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(feature indices, values), best first, shape (min(top, p),) each."""
        return self.index, self.values
