"""Fixtures of the adversarial suite (helpers to run and judge the CLI are in ``harness.py``).

Every adversarial case ends in exactly one of two outcomes: the correct answer, checked
against an in-memory oracle, or a clean refusal (exit 2, one sentence, no traceback,
nothing half-written).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adversarial.harness import (  # noqa: F401  (re-exported for older imports)
    REPO,
    _free_port,
    assert_api_refused,
    assert_no_debris,
    assert_refused,
    debris,
    error_lines,
    free_port,
    run_cli,
    stop_processes,
    wait_for_cluster,
)


@pytest.fixture(scope="session")
def adv_data():
    """A small, well-separated 3-class problem: (X_train, y_train, X_test, y_test), float32, p = 600."""
    rng = np.random.default_rng(7)
    p, n = 600, 90
    means = rng.standard_normal((3, p)).astype(np.float32) * 0.6
    y = np.repeat([0, 1, 2], n // 3)
    X = means[y] + rng.standard_normal((n, p)).astype(np.float32)
    yt = np.repeat([0, 1, 2], 20)
    Xt = means[yt] + rng.standard_normal((60, p)).astype(np.float32)
    return X, y, Xt, yt


@pytest.fixture(scope="session")
def adv_stores(tmp_path_factory, adv_data):
    """Train and test zarr stores of ``adv_data`` (feature chunks of 128): (train_path, test_path)."""
    from wideml import write_store

    folder = tmp_path_factory.mktemp("adv_stores")
    X, y, Xt, yt = adv_data
    write_store(folder / "train.zarr", X, y, feature_chunk=128)
    write_store(folder / "test.zarr", Xt, yt, feature_chunk=128)
    return folder / "train.zarr", folder / "test.zarr"


@pytest.fixture
def fresh_copy(tmp_path):
    """``fresh_copy(path) -> Path``: a copy of a store or model under this test's tmp_path (to tamper with)."""

    def copy(path):
        path = Path(path)
        dest = tmp_path / path.name
        if path.is_dir():
            shutil.copytree(path, dest)
        else:
            shutil.copy2(path, dest)
        return dest

    return copy


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory):
    """A real ``dask scheduler`` and two ``dask worker`` processes started as subprocesses.

    The workers run in a directory of their own (not the tests' working directory), so a
    relative path that reaches a worker points somewhere else. Yields a dict with
    ``address`` (``tcp://127.0.0.1:PORT``) and ``worker_cwd``.
    """
    pytest.importorskip("distributed")
    base = tmp_path_factory.mktemp("cluster")
    worker_cwd = base / "elsewhere"
    worker_cwd.mkdir()
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask_bin = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False", PYTHONWARNINGS="ignore")
    logs = base / "logs"
    logs.mkdir()
    procs = [subprocess.Popen([*dask_bin, "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
                              cwd=base, env=env, stdout=open(logs / "scheduler.log", "w"), stderr=subprocess.STDOUT)]
    for i in range(2):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--nworkers", "1",
             "--no-dashboard", "--local-directory", str(base / f"w{i}"), "--name", f"w{i}"],
            cwd=worker_cwd, env=env, stdout=open(logs / f"worker{i}.log", "w"), stderr=subprocess.STDOUT))
    try:
        wait_for_cluster(address, 2, logs / "scheduler.log")
        yield {"address": address, "worker_cwd": worker_cwd, "logs": logs}
    finally:
        stop_processes(procs, timeout=20)
