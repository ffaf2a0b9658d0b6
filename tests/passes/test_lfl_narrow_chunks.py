"""LFL on narrow feature chunks: a chunk whose slice of the sparse projection is empty (issue 22).

LFL's sparse projection R is keyed on (seed, global feature index), so a narrow
chunk often holds none of its non-zeros. The float32 chunk task used to return
``R^T m`` as int64 zeros for such a chunk (``np.bincount`` of nothing), and the
float64 sums across chunks could not add it in: ``_UFuncOutputCastingError``
from ``wideml fit lfl`` and ``wideml cv --methods lfl``. The fit must give the
same answer on every chunking.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from adversarial.harness import assert_no_debris, run_cli
from wideml import open_store, write_store
from wideml.estimators.lfl import LFL
from wideml.models.persistence import load_model
from wideml.passes.keyed_random import lfl_density, sparse_sign_rows
from wideml.passes.lfl import _lfl_fit_chunk

N, P, NARROW, SEED, D = 80, 400, 10, 2, 3  # K = 2: one centroid difference and two random directions


def _data():
    rng = np.random.default_rng(11)
    y = np.repeat([0, 1], N // 2)
    X = rng.normal(size=(N, P)) + 0.8 * np.outer(2 * y - 1, rng.normal(size=P)) + 50 * rng.random(P)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lfl_narrow")
    X, y = _data()
    write_store(folder / "narrow.zarr", X, y, feature_chunk=NARROW)
    write_store(folder / "wide.zarr", X, y, feature_chunk=P)
    return folder / "narrow.zarr", folder / "wide.zarr"


def test_premise_first_narrow_chunk_has_no_projection_entries():
    """The case needs chunk 0 (the one every sum across chunks starts from) to miss R entirely, and others to hold some."""
    nnz = [sparse_sign_rows(SEED, a, a + NARROW, D - 1, lfl_density(P)).nnz for a in range(0, P, NARROW)]
    assert nnz[0] == 0 and sum(nnz) > 0


def test_chunk_with_empty_projection_slice_returns_float64_zeros():
    X, y = _data()
    block = np.ascontiguousarray(X[:, :NARROW])
    sums = _lfl_fit_chunk(block, 0, y, 2, False, SEED, D - 1, lfl_density(P), None)
    assert sums.error is None
    stats = sums.values
    for key in ("XC", "CC", "mC", "XR", "mR"):
        assert stats[key].dtype == np.float64, key
    np.testing.assert_array_equal(stats["mR"], 0.0)
    # X R = X_c R + 1 (R^T c)^T with R empty: all zeros
    np.testing.assert_array_equal(stats["XR"], 0.0)


def _fit(path, **kw):
    return LFL(n_components=D, random_state=SEED, **kw).fit(open_store(path))


def _assert_close(a, b, rel):
    scale = max(1.0, float(np.abs(b).max()))
    assert float(np.abs(a - b).max()) <= rel * scale, float(np.abs(a - b).max()) / scale


def test_float32_fit_on_narrow_chunks_matches_wide_chunks(stores):
    """Default precision on a float32 store (the tiled float32 task): same result as one wide chunk, to float32 round-off."""
    narrow, wide = stores
    a, b = _fit(narrow), _fit(wide)
    assert a.precision_ == b.precision_ == "float32"
    _assert_close(a.embedding_, b.embedding_, 1e-5)
    _assert_close(a.offset_, b.offset_, 1e-5)
    _assert_close(np.asarray(a.components_), np.asarray(b.components_), 1e-6)
    np.testing.assert_array_equal(a.transform(open_store(wide)).shape, (N, D))
    # and against float64 arithmetic on the same narrow chunks
    _assert_close(a.embedding_, _fit(narrow, precision="float64").embedding_, 1e-5)


def test_float64_fit_is_chunking_independent_to_1e10(stores):
    narrow, wide = stores
    a, b = _fit(narrow, precision="float64"), _fit(wide, precision="float64")
    _assert_close(a.embedding_, b.embedding_, 1e-10)
    _assert_close(a.offset_, b.offset_, 1e-10)
    _assert_close(np.asarray(a.centroids_), np.asarray(b.centroids_), 1e-12)


def test_cli_fit_and_cv_on_narrow_chunks(stores, tmp_path):
    """The resumable CLI fit (chunk sums folded in lanes) and the refitting cv succeed and agree with the wide store."""
    narrow, wide = stores
    for name, store in (("narrow", narrow), ("wide", wide)):
        proc = run_cli("fit", "lfl", store, "-o", tmp_path / f"{name}.model", "--n-components", D, "--seed", SEED)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        proc = run_cli("cv", "--methods", "lfl", "--folds", 3, "--max-dim", D, store, "-o", tmp_path / f"{name}.json")
        assert proc.returncode == 0, proc.stderr
    a, b = load_model(tmp_path / "narrow.model").embedding_, load_model(tmp_path / "wide.model").embedding_  # LFL + LDA
    _assert_close(a.embedding_, b.embedding_, 1e-5)
    ra, rb = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("narrow", "wide"))
    assert ra["results"]["lfl"]["fold_errors"] == rb["results"]["lfl"]["fold_errors"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["narrow.json", "narrow.model", "wide.json", "wide.model"]
    assert_no_debris(tmp_path)
