"""The opt-in phase timing of pass chunk tasks (wideml.passes.timing)."""

import dask
import numpy as np
import pytest

import wideml
from wideml.passes import timing
from wideml.passes.timing import collect, phase, product


def test_off_by_default_and_product_is_matmul():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    assert phase("x") is timing._OFF
    np.testing.assert_array_equal(product(a, b), a @ b)
    with collect() as times:
        np.testing.assert_array_equal(product(a, b), a @ b)
        with phase("step", flops=10):
            pass
    assert times.flops["products"] == 2 * 2 * 3 * 4
    assert times.shapes[(2, 3, 4, "float64", "C", "C")][0] == 1
    assert times.calls["step"] == 1 and times.flops["step"] == 10
    product(a, b)  # after the block: nothing more is recorded
    assert times.calls["products"] == 1
    assert phase("x") is timing._OFF


@pytest.mark.parametrize("solver", ["gram", "randomized"])
def test_a_fit_books_reads_and_product_flops(tmp_path, solver):
    rng = np.random.default_rng(0)
    n, p, chunk = 40, 600, 200
    X = rng.standard_normal((n, p)).astype(np.float32)
    y = np.repeat([0, 1], n // 2)
    store = wideml.open_store(wideml.write_store(tmp_path / "s.zarr", X, y, feature_chunk=chunk))
    est = wideml.LOL(5, solver=solver, robust_first=False)
    with dask.config.set(scheduler="synchronous"), collect() as times:
        est.fit(store)
    passes = est.n_fit_passes_
    assert passes >= (2 if solver == "gram" else 3)
    assert times.calls["read"] == passes * (p // chunk)
    assert times.calls["centring"] == passes * (p // chunk)
    assert times.flops["products"] > 0 and times.seconds["products"] > 0
    if solver == "gram":  # the Gram pass's SYRK alone books n * n * p flops
        syrk = [f for (m, k, n2, *_), (calls, _, f) in times.shapes.items() if m == n2 == n]
        assert sum(syrk) == n * n * p
    rows = times.table()
    assert abs(sum(r["share"] for r in rows) - 1) < 1e-9
    assert rows == sorted(rows, key=lambda r: -r["seconds"])
