"""Turn sources that arrive one sample (row) at a time into full-height feature chunks.

Per-sample files and CSV rows are read in blocks of ``B`` rows, with ``B``
chosen so a block fits the memory budget. Then:

* if all of X fits in a third of the budget, the blocks stay in memory and are
  written once, in feature stripes;
* otherwise each block is written as a row stripe into a temporary store beside
  the output, chunked ``(B, c_tmp)`` along samples (uncompressed), and
  :func:`wideml.storage.rechunk.copy_to_store` then stitches ``n / B`` of those
  chunks into every full-height ``(n, c)`` output chunk. Every input is read
  once; every value is written twice; no chunk is rewritten per sample.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import dask
import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.progress import Progress
from wideml.storage import schema
from wideml.storage.atomic import check_output, remove_path
from wideml.storage.reader import ZarrReader
from wideml.storage.rechunk import (
    choose_feature_chunk,
    copy_to_store,
    resolve_budget,
    run_tasks,
    task_budget,
    temp_sibling,
    writer_target,
)
from wideml.storage.writer import create_store, open_x_for_write

#: Target size of a chunk of the temporary sample-chunked store.
TMP_CHUNK_BYTES = 8 * 2**20


class StackedReader:
    """Blocks of X held as a list of row blocks (no concatenated copy)."""

    def __init__(self, blocks: list[np.ndarray]):
        self.blocks = blocks
        self.starts = np.cumsum([0] + [len(b) for b in blocks])
        self.dtype = blocks[0].dtype

    def __getitem__(self, key):
        rows, cols = key
        r0, r1, _ = rows.indices(int(self.starts[-1]))
        parts = []
        for b, s in zip(self.blocks, self.starts[:-1]):
            lo, hi = max(r0, s), min(r1, s + len(b))
            if lo < hi:
                parts.append(b[lo - s : hi - s, cols])
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def rows_per_block(p: int, itemsize: int, budget: int, n: int) -> int:
    """Rows of a block of whole samples that fits ``budget`` (at least one)."""
    return int(max(1, min(n, budget // max(1, p * itemsize))))


def fits_in_memory(n: int, p: int, itemsize: int, budget: int) -> bool:
    """Whether all of X may be held at once (a third of the budget)."""
    return n * p * itemsize <= budget // 3


def _check_row_fits(p: int, itemsize: int, budget: int) -> None:
    if p * itemsize > budget:
        raise WidemlError(
            f"one sample holds {p * itemsize / 2**20:.0f} MiB of features, more than the memory budget of "
            f"{budget / 2**20:.0f} MiB; raise it with --memory-limit."
        )


def _tmp_chunk_width(n: int, rows: int, c: int, itemsize: int, budget: int) -> int:
    """Columns of a temporary chunk: a multiple of ``c`` near 8 MiB such that a stage-2 task
    (an ``(n, c)`` output chunk, its encoded copy, and the temporary chunks it decodes) fits ``budget``."""
    by_size = TMP_CHUNK_BYTES // max(1, rows * c * itemsize)
    by_budget = (budget // max(1, n * itemsize) - 2 * c) // c
    return c * int(max(1, min(by_size, by_budget)))


def write_rows_to_store(
    out: str | os.PathLike,
    *,
    n: int,
    p: int,
    dtype,
    read_block: Callable[[int, int], np.ndarray] | None = None,
    iter_blocks: Callable[[int], Iterator[np.ndarray]] | None = None,
    feature_chunk: int | None = None,
    memory_limit: int | str | None = None,
    overwrite: bool = False,
    label: str = "ingest",
    **create_kwargs,
) -> Path:
    """Write a row-wise source to a new store with full-height feature chunks, in bounded memory.

    Give exactly one of ``read_block`` and ``iter_blocks``.

    Parameters
    ----------
    out : path-like
    n, p : int
        Shape of X (for ``iter_blocks``, the row count found by a scan; a
        source yielding more rows is an error).
    dtype : dtype
        Stored dtype of X.
    read_block : callable ``(r0, r1) -> ndarray of shape (r1 - r0, p)``, optional
        Random access to row blocks; picklable, so blocks are read in parallel
        tasks on the active scheduler.
    iter_blocks : callable ``(rows) -> iterator of ndarray of shape (<= rows, p)``, optional
        Sequential row blocks (a CSV stream), read in this process.
    feature_chunk : int, optional
    memory_limit : int or str, optional
    overwrite : bool
    label : str
        Progress-bar label.
    **create_kwargs
        Passed to :func:`wideml.storage.writer.create_store` (``y``, ids, ``feature_shape``, ``source``...).

    Returns
    -------
    Path
    """
    check_output(out, overwrite)
    dtype = np.dtype(dtype)
    itemsize = dtype.itemsize
    budget_total = resolve_budget(memory_limit)
    tb = task_budget(budget_total, local=iter_blocks is not None)
    _check_row_fits(p, itemsize, budget_total)
    tb_out = task_budget(budget_total, schema.store_format(out) == "hdf5")
    c = choose_feature_chunk(n, p, itemsize, n, tb_out, feature_chunk)
    rows = rows_per_block(p, itemsize, tb if read_block is not None else budget_total // 3, n)
    finish = {"dtype": dtype, "feature_chunk": c, "memory_limit": budget_total, "overwrite": overwrite, "label": label}

    if fits_in_memory(n, p, itemsize, budget_total):
        if read_block is not None:
            tasks = [dask.delayed(read_block, pure=False)(r0, min(n, r0 + rows)) for r0 in range(0, n, rows)]
            blocks = [np.asarray(b, dtype=dtype) for b in run_tasks(tasks, label=f"{label}: read samples", local=False)]
        else:
            blocks = [np.asarray(b, dtype=dtype) for b in iter_blocks(rows) if len(b)]
        n_read = sum(len(b) for b in blocks)
        if n_read == 0:
            raise WidemlError("the source has no samples; give at least one row of numbers.")
        return copy_to_store(StackedReader(blocks), (n_read, p), (1, 1), out, local=True, **finish, **create_kwargs)

    tmp = temp_sibling(out, "rows")
    try:
        c_tmp = _tmp_chunk_width(n, rows, c, itemsize, tb_out)
        with create_store(tmp, n_samples=n, n_features=p, dtype=dtype, feature_chunk=c_tmp, sample_chunk=rows,
                          compressor="none", checksum=False) as stripes:
            if read_block is not None:
                target = writer_target(stripes)
                tasks = [dask.delayed(_write_rows, pure=False)(read_block, target, r0, min(n, r0 + rows), dtype)
                         for r0 in range(0, n, rows)]
                run_tasks(tasks, label=f"{label}: samples to row stripes", local=False)
                n_read = n
            else:
                n_read = _stream_rows(iter_blocks(rows), stripes, rows, n, dtype, label)
        if n_read == 0:
            raise WidemlError("the source has no samples; give at least one row of numbers.")
        reader = ZarrReader(str(tmp), schema.X_NAME, (n_read, p), dtype, (rows, c_tmp))
        return copy_to_store(reader, (n_read, p), (rows, c_tmp), out, **finish, **create_kwargs)
    finally:
        remove_path(tmp)


def _write_rows(read_block, target: str, r0: int, r1: int, dtype) -> int:
    """Task: read rows ``r0:r1`` and write them as one row stripe of the temporary store."""
    block = np.asarray(read_block(r0, r1), dtype=dtype)
    open_x_for_write(target)[r0:r1, :] = block
    return int(block.nbytes)


def _stream_rows(blocks: Iterator[np.ndarray], writer, rows: int, n: int, dtype, label: str) -> int:
    """Write sequential row blocks (each ``rows`` long except the last) into ``writer``; returns the rows written."""
    r0 = 0
    with Progress(f"{label}: rows to row stripes", total=n) as bar:
        for block in blocks:
            block = np.asarray(block, dtype=dtype)
            if r0 + len(block) > n:
                raise WidemlError(f"the source has more than the {n} rows counted when it was opened; it changed while being read — retry.")
            writer.write(block, 0, r0)
            r0 += len(block)
            bar.update(len(block))
    return r0
