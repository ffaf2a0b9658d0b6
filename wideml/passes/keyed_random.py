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
