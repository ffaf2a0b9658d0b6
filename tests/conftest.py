"""Shared test fixtures: small random data and stores, output paths, leftover checks.

Being the rootdir conftest, this file also puts ``tests/`` on ``sys.path`` so
test modules can ``import oracles``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from wideml.exceptions import PerformanceWarning

FORMATS = ("zarr", "hdf5")


def store_name(fmt: str, stem: str = "store") -> str:
    """File name of a store of format ``fmt`` (``.zarr`` directory or ``.h5`` file)."""
    return f"{stem}.zarr" if fmt == "zarr" else f"{stem}.h5"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


@pytest.fixture(params=FORMATS)
def fmt(request) -> str:
    """Output store format: each test using it runs for zarr v3 and HDF5."""
    return request.param


@pytest.fixture
def small_xy(rng) -> tuple[np.ndarray, np.ndarray]:
    """X of shape (24, 37) float32 and y with 3 classes."""
    X = rng.standard_normal((24, 37)).astype(np.float32)
    y = np.repeat([0, 1, 2], 8)
    rng.shuffle(y)
    return X, y


@pytest.fixture
def make_store(tmp_path, rng):
    """Factory ``make_store(n=24, p=37, fmt="zarr", feature_chunk=None, sample_chunk=None, labelled=True, name="store",
    dtype="float32", **kw) -> (path, X, y)`` writing a small random store under ``tmp_path``."""
    from wideml.storage import write_store

    def make(n=24, p=37, fmt="zarr", feature_chunk=None, sample_chunk=None, labelled=True, name="store", dtype="float32", **kw):
        X = rng.standard_normal((n, p)).astype(dtype)
        y = np.arange(n) % 3 if labelled else None
        path = tmp_path / store_name(fmt, name)
        write_store(path, X, y, feature_chunk=feature_chunk, sample_chunk=sample_chunk, **kw)
        return path, X, y

    return make


def leftovers(path: str | Path) -> list[Path]:
    """Hidden ``.NAME.partial-*`` / ``.NAME.old-*`` siblings a write may have left beside ``path``."""
    path = Path(path)
    if not path.parent.exists():
        return []
    return sorted(p for p in path.parent.iterdir() if p.name.startswith((f".{path.name}.wideml-partial-", f".{path.name}.wideml-old-")))


@pytest.fixture
def assert_no_output():
    """``assert_no_output(path)``: nothing at ``path`` and no partial siblings beside it."""

    def check(path):
        path = Path(path)
        assert not path.exists(), f"{path} was left behind"
        assert leftovers(path) == [], f"partial outputs left beside {path}: {leftovers(path)}"

    return check


@pytest.fixture
def no_leftovers():
    """``no_leftovers(path)``: no partial siblings beside ``path`` (the output itself may exist)."""

    def check(path):
        assert leftovers(path) == [], f"partial outputs left beside {path}: {leftovers(path)}"

    return check


@pytest.fixture
def quiet_performance():
    """Silence PerformanceWarning inside a test (e.g. for stores chunked along samples on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        yield


@pytest.fixture
def restore_dask_config():
    """The CLI sets dask.config globally; a test that runs it in-process asks for this to stay independent."""
    import copy

    import dask.config

    keys = ("wideml", "scheduler")
    saved = {k: copy.deepcopy(dask.config.config[k]) for k in keys if k in dask.config.config}
    yield
    for k in keys:
        dask.config.config.pop(k, None)
    dask.config.config.update(saved)

