"""The same store work gives identical results on threads, processes and a real LocalCluster."""

from __future__ import annotations

import multiprocessing
import warnings
from concurrent.futures import ProcessPoolExecutor

import dask
import numpy as np
import pytest

from wideml.exceptions import PerformanceWarning
from wideml.runtime import compute, use_scheduler
from wideml.storage import open_store, write_store
from wideml.sources.ingest import ingest
from wideml.storage.rechunk import rechunk


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("schedulers")
    rng = np.random.default_rng(7)
    X = rng.standard_normal((18, 50)).astype(np.float32)
    y = np.arange(18) % 3
    write_store(root / "full.zarr", X, y, feature_chunk=8)
    write_store(root / "rows.h5", X, y, sample_chunk=4, feature_chunk=50)
    np.save(root / "x.npy", X)
    (root / "samples").mkdir()
    for i, row in enumerate(X):
        np.save(root / "samples" / f"s{i:02d}.npy", row.reshape(5, 10))
    return root, X, y


def _work(root, tag):
    """Column sums of a store, and three writes (npy ingest, per-sample folder ingest, rechunk) read back."""
    (sums,) = compute(open_store(root / "full.zarr").X.sum(axis=0), label="column sums")
    ingest(root / "x.npy", root / f"npy-{tag}.zarr", feature_chunk=16)
    # a small budget sends the folder through the temporary sample-chunked store (two stages)
    ingest(root / "samples", root / f"folder-{tag}.zarr", memory_limit="8KiB")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        rechunk(root / "rows.h5", root / f"rechunked-{tag}.zarr", feature_chunk=16)
    stores = [open_store(root / f"{name}-{tag}.zarr") for name in ("npy", "folder", "rechunked")]
    arrays = compute(*[s.X for s in stores], label="read back")
    return sums, arrays, stores


def test_same_results_on_every_scheduler(sources):
    root, X, y = sources
    results = {}
    # one process pool for the whole "processes" block (dask would otherwise spawn a pool per compute)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        for spec in ("threads", "processes", "local:2"):
            with use_scheduler(spec), dask.config.set(pool=pool if spec == "processes" else None):
                results[spec] = _work(root, spec.replace(":", ""))
    ref_sums, ref_arrays, _ = results["threads"]
    np.testing.assert_allclose(ref_sums, X.sum(axis=0, dtype=np.float64), rtol=1e-5, atol=1e-5)
    for spec, (sums, arrays, stores) in results.items():
        np.testing.assert_array_equal(sums, ref_sums, err_msg=spec)
        for arr in arrays:
            np.testing.assert_array_equal(arr, X, err_msg=spec)
        folder = stores[1]
        assert folder.feature_shape == (5, 10)
        assert folder.stored_chunks[0] == 18
        np.testing.assert_array_equal(stores[2].y, y)
