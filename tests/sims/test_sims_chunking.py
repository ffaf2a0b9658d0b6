"""The same seed gives bit-identical arrays under every chunking, for every setting and code path."""

from __future__ import annotations

import numpy as np
import pytest

from wideml.sims import SETTINGS, simulate
from wideml.sims.generate import _params_key, generate_block
from wideml.sims.rng import TILE

P = 2 * TILE + 52  # three generation tiles, the last one partial

CASES = [(name, {}, P) for name in SETTINGS if name not in ("rotated-trunk", "decay-dense")] + [
    ("rotated-trunk", {}, TILE + 76),  # exact dense Haar (p <= dense_max)
    ("rotated-trunk", {"dense_max": 0}, P),  # tile-wise Kronecker-Haar path
    ("decay-dense", {}, TILE + 76),
    ("decay-dense", {"dense_max": 0}, P),
    ("enc-uniform-transformed", {"dense_max": 0}, P),  # block-diagonal transform path
    ("enc-normal-transformed", {"dense_max": 0}, P),
    ("toeplitz", {"rho": 0.97}, P),  # longer look-back
]


def chunkings(p):
    return [p, 700, (1, TILE - 1, 3, p - TILE - 3)]


@pytest.mark.parametrize("name,params,p", CASES, ids=[f"{c[0]}{'-' + str(c[1]) if c[1] else ''}" for c in CASES])
def test_identical_across_chunkings(name, params, p):
    arrays = []
    for chunks in chunkings(p):
        X, y = simulate(name, 12, p, seed=42, chunks=chunks, **params)
        assert X.shape == (12, p) and X.dtype == np.float64
        arrays.append(X.compute())
    for other in arrays[1:]:
        np.testing.assert_array_equal(arrays[0], other)
    assert np.all(np.isfinite(arrays[0]))


def test_seed_changes_values_and_labels_are_reproducible():
    a, ya = simulate("trunk", 30, 100, seed=1)
    b, yb = simulate("trunk", 30, 100, seed=2)
    c, yc = simulate("trunk", 30, 100, seed=1, chunks=7)
    assert not np.array_equal(a.compute(), b.compute())
    np.testing.assert_array_equal(a.compute(), c.compute())
    np.testing.assert_array_equal(ya, yc)


def test_float32_is_the_cast_of_float64():
    X64, _ = simulate("cigars", 8, 300, seed=0)
    X32, _ = simulate("cigars", 8, 300, seed=0, chunks=50, dtype="float32")
    assert X32.dtype == np.float32
    np.testing.assert_array_equal(X32.compute(), X64.compute().astype(np.float32))


def test_more_samples_keep_the_first_rows():
    """Tiles are drawn row-major and labels one uniform per sample, so growing n only appends rows."""
    big, yb = simulate("trunk", 25, 50, seed=0)
    small, ys = simulate("trunk", 10, 50, seed=0)
    np.testing.assert_array_equal(small.compute(), big.compute()[:10])
    np.testing.assert_array_equal(ys, yb[:10])


@pytest.mark.parametrize("name", list(SETTINGS))
def test_any_range_of_a_1e8_feature_data_set(name):
    """Any feature range of p = 10^8 is generated from its global indices alone (no p-sized state)."""
    p, n = 10**8, 6
    setting = SETTINGS[name]
    key = _params_key(setting.resolve_params({}))

    def block(start, stop):
        return generate_block(name, n, p, 0, key, start, stop, "f8")

    last = block(p - 3000, p)
    assert last.shape == (n, 3000) and np.all(np.isfinite(last))
    np.testing.assert_array_equal(last[:, -1000:], block(p - 1000, p))
    mid = 5 * 10**7  # a tile boundary: compare a straddling range with two pieces
    np.testing.assert_array_equal(block(mid - 10, mid + 10), np.hstack([block(mid - 10, mid - 3), block(mid - 3, mid + 10)]))
