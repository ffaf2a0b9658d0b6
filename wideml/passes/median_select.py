"""Exact per-class medians of a chunk: sorted runs for float32, and the partition path.

:func:`class_medians_partition` is the general method (any dtype): each block
of :data:`_MEDIAN_COLS` features is gathered and transposed into a
(features x samples) buffer in short row tiles (:func:`transpose_rows`) and
every class's segment is partitioned at its middle. On float32 classes of
~1000 rows most of its time is numpy's introselect (5-6 ns per element).

:func:`class_medians_float32` gives the same values for float32 chunks from
one measured fact (numpy 2.4, AVX-512): sorting rows of at most :data:`_RUN`
values costs about 1.5 ns per element (numpy's vectorised small-array sort),
against 5-6 ns for a sort or partition of longer rows. The same transposed
blocks are built, but with each class's rows arranged in R = ceil(m / _RUN)
interleaved runs (:func:`class_runs`); then, per class (:func:`runs_middle`):

1. every run is sorted in place; a class of one run reads its middle values;
2. for R > 1, a window of about :data:`_WINDOW_SIGMAS` standard deviations of
   the middle rank is cut around each run's middle, and the windows are
   merged and sorted. With ``P`` values before the windows, ``A`` the
   largest value just before a window and ``B`` the smallest just after one,
   every value outside the windows is ``<= A`` or ``>= B``; so a merged value
   ``x`` at position ``j`` with ``A < x < B`` has exactly ``P + j`` values
   below it in sorted order, i.e. it is the class's value of rank ``P + j``;
3. a feature whose middle values fail that test keeps them if exact counts
   over its row confirm their ranks (:func:`has_rank`; ties across a window
   edge, as in heavily tied data), else it is partitioned alone (windows that
   missed the middle, NaN). Exactness never depends on the rows' order; an
   unlucky order only costs time.

Even counts average the two middle values in float64, as ``numpy.median`` of
the float64-converted data does. Results equal :func:`class_medians_partition`
under ``numpy.array_equal`` (a median of zeros may come out as ``-0.0``
where the partition path gives ``0.0``, or the reverse).
"""

from __future__ import annotations

import numpy as np

#: Rows per tile when transposing a chunk's rows into a contiguous (features x samples) buffer. Big enough that
#: the Python-level steps (which hold the GIL) are few: at 32 rows two threads ran no faster than one.
_TILE_ROWS = 256

#: Features per block in :func:`class_medians_partition` (the transposed block stays in cache).
_MEDIAN_COLS = 256

#: Longest run sorted at once: numpy's row sort is about 4x faster up to 512 values than beyond.
_RUN = 512

#: Half-width of the window cut around each run's middle, in standard deviations of the middle's rank in that run.
_WINDOW_SIGMAS = 4.0


def class_medians_partition(block: np.ndarray, codes: np.ndarray, n_classes: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Per-class medians (n_classes, p_j) of a chunk, in float64, by transposition and partition.

    Parameters
    ----------
    block : ndarray of shape (n, p_j)
        Any real dtype.
    codes : ndarray of int, shape (n_sub,)
        Class codes of the rows used (all rows, or ``rows``).
    n_classes : int
    rows : ndarray of int, shape (n_sub,), optional
        Row subset of ``block``.

    Returns
    -------
    ndarray of shape (n_classes, p_j)
        Equal to ``numpy.median`` of each class's rows in float64; NaN for a
        class without rows.

    Notes
    -----
    One sweep over the chunk: blocks of :data:`_MEDIAN_COLS` features, rows
    sorted by class, are transposed into a small (features x samples) buffer in
    tiles of :data:`_TILE_ROWS` rows, and each class's contiguous segment is
    partitioned at its middle while the buffer is still in cache.
    """
    codes = np.asarray(codes)
    rows = np.arange(block.shape[0]) if rows is None else np.asarray(rows)
    order = rows[np.argsort(codes, kind="stable")]
    counts = np.bincount(codes, minlength=n_classes)
    starts = np.concatenate([[0], np.cumsum(counts)])
    w = block.shape[1]
    out = np.full((n_classes, w), np.nan)
    buf = np.empty((min(_MEDIAN_COLS, w), len(order)), dtype=block.dtype)
    for b in range(0, w, _MEDIAN_COLS):
        t = buf[: min(_MEDIAN_COLS, w - b)]
        src = block[:, b : b + t.shape[0]]
        transpose_rows(src, order, t)
        for k in range(n_classes):
            m = int(counts[k])
            if m == 0:
                continue
            out[k, b : b + t.shape[0]] = partition_middle(t[:, starts[k] : starts[k] + m])
    return out


def partition_middle(seg: np.ndarray) -> np.ndarray:
    """Medians (r,) of the rows of ``seg`` (r, m), m >= 1, in float64, partitioning ``seg`` in place.

    One pivot at ``m // 2`` (numpy's vectorised selection); for even m the
    largest value left of it is the other middle value, and the two are
    averaged in float64.
    """
    m = seg.shape[1]
    h = m // 2
    seg.partition(h, axis=1)
    if m % 2:
        return seg[:, h].astype(np.float64)
    return (seg[:, :h].max(axis=1).astype(np.float64) + seg[:, h]) / 2


def transpose_rows(src: np.ndarray, order: np.ndarray, out: np.ndarray) -> None:
    """Write ``src[order].T`` into ``out`` (p_b, len(order)) in tiles of :data:`_TILE_ROWS` rows.

    Row tiles of a few hundred rows keep the transposed writes in cache (gather
    and transpose in one sweep, about 2 ns per element) while keeping the
    number of GIL-holding steps per chunk small.
    """
    for a in range(0, len(order), _TILE_ROWS):
        out[:, a : a + _TILE_ROWS] = src[order[a : a + _TILE_ROWS]].T


def class_medians_float32(block: np.ndarray, codes: np.ndarray, n_classes: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Per-class medians (n_classes, p_j) of a float32 chunk from sorted runs.

    Parameters
    ----------
    block : ndarray of shape (n, p_j), float32
    codes : ndarray of int, shape (n_sub,)
        Class codes of the rows used (all rows, or ``rows``).
    n_classes : int
    rows : ndarray of int, shape (n_sub,), optional
        Row subset of ``block``.

    Returns
    -------
    ndarray of shape (n_classes, p_j)
        Equal to :func:`class_medians_partition` (``numpy.median`` of each
        class in float64) under ``numpy.array_equal``; NaN for a class
        without rows.

    Notes
    -----
    One sweep over the chunk, like the partition path: blocks of
    :data:`_MEDIAN_COLS` features are gathered and transposed in row tiles,
    with each class's rows arranged in interleaved runs (:func:`class_runs`),
    then :func:`runs_middle` replaces the partition.
    """
    codes = np.asarray(codes)
    rows = np.arange(block.shape[0]) if rows is None else np.asarray(rows)
    order, classes = class_runs(rows, codes, n_classes)
    w = block.shape[1]
    out = np.full((n_classes, w), np.nan)
    buf = np.empty((min(_MEDIAN_COLS, w), len(order)), dtype=np.float32)
    for b in range(0, w, _MEDIAN_COLS):
        t = buf[: min(_MEDIAN_COLS, w - b)]
        transpose_rows(block[:, b : b + t.shape[0]], order, t)
        for k, (start, runs) in enumerate(classes):
            if runs:
                out[k, b : b + t.shape[0]] = runs_middle(t[:, start : start + runs[-1][1]], runs)
    return out


def class_runs(rows: np.ndarray, codes: np.ndarray, n_classes: int) -> tuple[np.ndarray, list]:
    """Row order grouping each class's rows into interleaved runs of at most :data:`_RUN` rows.

    Returns
    -------
    order : ndarray of int, shape (n_sub,)
        Rows of ``block``, class by class; a class of m rows split into
        R = ceil(m / _RUN) runs lists rows i, i+R, i+2R, ... as run i, so
        that each run is a spread-out subset of the class whatever the rows'
        order.
    classes : list of (start, runs)
        Per class: its first position in ``order`` and its runs as
        (begin, end) positions relative to ``start`` (empty for no rows).
    """
    pieces, classes, start = [], [], 0
    for k in range(n_classes):
        idx = rows[codes == k]
        n_runs = -(-len(idx) // _RUN)
        parts = [idx[i::n_runs] for i in range(n_runs)]
        ends = np.cumsum([len(q) for q in parts], dtype=np.int64).tolist()
        classes.append((start, list(zip([0] + ends[:-1], ends))))
        pieces.extend(parts)
        start += len(idx)
    order = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.intp)
    return order, classes


def runs_middle(seg: np.ndarray, runs: list) -> np.ndarray:
    """Medians (W,) in float64 of the rows of ``seg`` (W, m), whose column ``runs`` are sorted in place.

    Parameters
    ----------
    seg : ndarray of shape (W, m), rows contiguous
        One class's values per feature; overwritten (runs sorted).
    runs : list of (begin, end)
        Column ranges of ``seg`` covering it, each at most :data:`_RUN` long.

    Returns
    -------
    ndarray of shape (W,)
        The middle value (odd m) or the float64 mean of the two middle
        values (even m) of each row.
    """
    m = seg.shape[1]
    r_lo, r_hi = (m - 1) // 2, m // 2
    for a, e in runs:
        seg[:, a:e].sort(axis=1)
    if len(runs) == 1:
        return (seg[:, r_lo].astype(np.float64) + seg[:, r_hi]) / 2
    windows, before, lows, highs = [], 0, [], []
    for a, e in runs:
        size = e - a
        half = int(np.ceil(_WINDOW_SIGMAS * np.sqrt(size) / 2)) + 1
        lo, hi = max(0, size // 2 - half), min(size, size // 2 + half)
        windows.append(seg[:, a + lo : a + hi])
        before += lo
        if lo > 0:
            lows.append(seg[:, a + lo - 1])  # every value before this window is <= it
        if hi < size:
            highs.append(seg[:, a + hi])  # every value after this window is >= it
    merged = np.concatenate(windows, axis=1)
    merged.sort(axis=1)
    j_lo, j_hi = r_lo - before, r_hi - before
    if j_lo < 0 or j_hi >= merged.shape[1]:  # cannot happen with centred windows; kept exact regardless
        return partition_middle(np.ascontiguousarray(seg))
    x_lo, x_hi = merged[:, j_lo], merged[:, j_hi]
    ok = np.ones(len(seg), dtype=bool)  # x_lo <= x_hi, so A < x_lo and x_hi < B bound both
    if lows:
        ok &= np.max(lows, axis=0) < x_lo
    if highs:
        ok &= x_hi < np.min(highs, axis=0)
    out = (x_lo.astype(np.float64) + x_hi) / 2
    missed = np.flatnonzero(~ok)
    if len(missed):  # ties at a window edge (heavily tied data) usually still hold the right values: count them
        rows, lo, hi = seg[missed], x_lo[missed], x_hi[missed]
        at_most = rank_counts(rows, lo, "<=")
        held = (rank_counts(rows, lo, "<") <= r_lo) & (at_most > r_lo)  # lo has rank r_lo
        held &= (lo != hi) | (at_most > r_hi)  # and rank r_hi >= r_lo too when hi == lo
        other = np.flatnonzero(held & (lo != hi))
        held[other] = has_rank(rows[other], hi[other], r_hi)
        lost = missed[~held]
        if len(lost):
            out[lost] = partition_middle(rows[~held])
    return out


def has_rank(rows: np.ndarray, values: np.ndarray, r: int) -> np.ndarray:
    """Whether ``values[i]`` is the value of rank ``r`` (0-based, ascending) of ``rows[i]``, shape (k,).

    Exact counts over each row (k, m): at most ``r`` values below it and more
    than ``r`` at or below it. False for NaN.
    """
    return (rank_counts(rows, values, "<") <= r) & (rank_counts(rows, values, "<=") > r)


def rank_counts(rows: np.ndarray, values: np.ndarray, op: str) -> np.ndarray:
    """Per row of ``rows`` (k, m), how many entries are ``<`` (or ``<=``) ``values`` (k,); int64.

    The comparison lands in a zero-padded bool buffer whose bytes are counted
    8 at a time with ``numpy.bitwise_count`` (a True byte has one bit set).
    """
    k, m = rows.shape
    mask = np.zeros((k, -(-m // 8) * 8), dtype=bool)
    (np.less if op == "<" else np.less_equal)(rows, values[:, None], out=mask[:, :m])
    return np.bitwise_count(mask.view(np.uint64)).sum(axis=1, dtype=np.int64)


__all__ = ["class_medians_float32", "class_medians_partition", "class_runs", "has_rank", "partition_middle", "rank_counts", "runs_middle", "transpose_rows"]
