"""Random matrices with one row per feature, keyed on (seed, global feature index).

The randomized range finder's test matrix Omega (p x l, Gaussian) and LFL's very
sparse random projection R (p x k) are never stored: a chunk generates the rows
of its features. Rows come in fixed tiles of :data:`TILE` features, each tile from
its own counter-based generator ``Philox(SeedSequence([seed, stream, tile]))``,
so the values do not depend on how X is chunked.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Features per generation tile. Fixed: changing it changes every random matrix.
TILE = 1024
GAUSSIAN = 101
SPARSE_SIGN = 102


def _tile_generator(seed: int, stream: int, tile: int) -> np.random.Generator:
    return np.random.Generator(np.random.Philox(np.random.SeedSequence([int(seed), stream, int(tile)])))


def gaussian_rows(seed: int, start: int, stop: int, n_cols: int) -> np.ndarray:
    """Rows ``start:stop`` of a p x n_cols standard Gaussian matrix, shape (stop - start, n_cols), float64.

    Whole tiles are generated straight into the result (no temporary per tile).
    """
    out = np.empty((stop - start, n_cols))
    for t in range(start // TILE, -(-stop // TILE)):
        t0, t1 = t * TILE, (t + 1) * TILE
        gen = _tile_generator(seed, GAUSSIAN, t)
        a, b = max(start, t0), min(stop, t1)
        if a == t0 and b == t1:  # a whole tile: no temporary
            gen.standard_normal(out=out[a - start : b - start])
        else:
            out[a - start : b - start] = gen.standard_normal((TILE, n_cols))[a - t0 : b - t0]
    return out


def sparse_sign_rows(seed: int, start: int, stop: int, n_cols: int, density: float) -> sp.csr_matrix:
    """Rows ``start:stop`` of a very sparse random projection (Li, Hastie & Church 2006).

    Entries are +1/sqrt(density) or -1/sqrt(density) with probability density/2
    each, else 0 (s = 1/density; Li et al. recommend s = sqrt(p)). E[r^2] = 1.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (stop - start, n_cols)
    """
    scale = 1.0 / np.sqrt(density)
    rows, cols, vals = [], [], []
    for t in range(start // TILE, -(-stop // TILE)):
        t0 = t * TILE
        gen = _tile_generator(seed, SPARSE_SIGN, t)
        cells = TILE * n_cols
        nnz = gen.binomial(cells, density)
        flat = np.sort(gen.choice(cells, size=nnz, replace=False))
        sign = np.where(gen.random(nnz) < 0.5, -scale, scale)
        r, c = np.divmod(flat, n_cols)
        r = r + t0
        keep = (r >= start) & (r < stop)
        rows.append(r[keep] - start)
        cols.append(c[keep])
        vals.append(sign[keep])
    rows, cols, vals = (np.concatenate(v) if v else np.zeros(0) for v in (rows, cols, vals))
    return sp.csr_matrix((vals, (rows.astype(np.int64), cols.astype(np.int64))), shape=(stop - start, n_cols))


def lfl_density(n_features: int) -> float:
    """Li, Hastie & Church's recommended density 1/sqrt(p)."""
    return 1.0 / np.sqrt(max(1, n_features))


# -- nested in the number of columns: column j depends only on (seed, feature, j) -------------------------------------
#
# The generators above fill each tile row by row, so an entry's value depends on how many columns were asked for.
# The two below fill each tile column by column (column j of a tile takes the draws after those of columns 0..j-1),
# so the first d columns of a p x k matrix equal the p x d matrix: every d <= k is a prefix (what cross-validation
# over d needs), and, as above, no value depends on the chunking.

GAUSSIAN_COLUMNS = 103
SPARSE_SIGN_GAPS = 104
SPARSE_SIGN_SIGNS = 105


def gaussian_columns(seed: int, start: int, stop: int, n_cols: int) -> np.ndarray:
    """Rows ``start:stop`` of a p x n_cols standard Gaussian matrix (entries N(0, 1)), nested in ``n_cols``.

    Returns
    -------
    ndarray of shape (stop - start, n_cols), float64
        Column j depends only on (seed, feature index, j): the first d columns
        for ``n_cols = k >= d`` equal the result for ``n_cols = d``.
    """
    out = np.empty((stop - start, n_cols))
    if not n_cols:
        return out
    for t in range(start // TILE, -(-stop // TILE)):
        t0 = t * TILE
        a, b = max(start, t0), min(stop, t0 + TILE)
        tile = _tile_generator(seed, GAUSSIAN_COLUMNS, t).standard_normal((n_cols, TILE))  # column j = draws j*TILE ...
        out[a - start : b - start] = tile[:, a - t0 : b - t0].T
    return out


def _sparse_cells(seed: int, tile: int, n_cols: int, density: float) -> tuple[np.ndarray, np.ndarray]:
    """(cell indices j * TILE + i, signs) of one tile's non-zero entries in its first ``n_cols`` columns.

    Cells are visited column by column, the gaps between non-zero cells drawn
    as Geometric(density) (independent Bernoulli(density) cells), the signs
    from a second stream in the same order: both are prefixes of the draws
    for any larger ``n_cols``.
    """
    cells = TILE * n_cols
    if cells == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    gen = _tile_generator(seed, SPARSE_SIGN_GAPS, tile)
    expected = cells * density
    batch = int(expected + 4 * np.sqrt(expected) + 16)
    pos, last = [], -1
    while last < cells:
        steps = np.cumsum(gen.geometric(density, size=batch)) + last
        pos.append(steps)
        last = int(steps[-1])
    flat = np.concatenate(pos)
    flat = flat[flat < cells]
    signs = np.where(_tile_generator(seed, SPARSE_SIGN_SIGNS, tile).random(len(flat)) < 0.5, -1.0, 1.0)
    return flat.astype(np.int64), signs


def sparse_sign_columns(seed: int, start: int, stop: int, n_cols: int, density: float) -> sp.csr_matrix:
    """Rows ``start:stop`` of a very sparse random projection, nested in ``n_cols`` (Li, Hastie & Church 2006).

    The same distribution as :func:`sparse_sign_rows` (each entry independently
    +-1/sqrt(density) with probability density/2 each, else 0; E[r^2] = 1),
    but column j depends only on (seed, feature index, j).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (stop - start, n_cols)
    """
    scale = 1.0 / np.sqrt(density)
    rows, cols, vals = [], [], []
    for t in range(start // TILE, -(-stop // TILE)):
        flat, signs = _sparse_cells(seed, t, n_cols, density)
        c, r = np.divmod(flat, TILE)
        r = r + t * TILE
        keep = (r >= start) & (r < stop)
        rows.append(r[keep] - start)
        cols.append(c[keep])
        vals.append(signs[keep] * scale)
    rows, cols, vals = (np.concatenate(v) if v else np.zeros(0) for v in (rows, cols, vals))
    return sp.csr_matrix((vals, (rows.astype(np.int64), cols.astype(np.int64))), shape=(stop - start, n_cols))


#: How an LFL model's sparse projection was generated: "columns" (nested, :func:`sparse_sign_columns`) or, for
#: models saved before LFL's columns were nested, "tiles" (:func:`sparse_sign_rows`).
SPARSE_SCHEMES = ("columns", "tiles")


def sparse_projection_rows(seed: int, start: int, stop: int, n_cols: int, density: float, scheme: str = "columns") -> sp.csr_matrix:
    """LFL's sparse projection rows under ``scheme`` (one of :data:`SPARSE_SCHEMES`)."""
    if scheme == "columns":
        return sparse_sign_columns(seed, start, stop, n_cols, density)
    if scheme == "tiles":
        return sparse_sign_rows(seed, start, stop, n_cols, density)
    raise ValueError(f"unknown sparse projection scheme {scheme!r}")
