"""Shared harness of the adversarial suite: run the real CLI, judge its outcome, start a real cluster.

Every adversarial case ends in exactly one of two outcomes:

* the correct answer, checked against an in-memory oracle; or
* a clean refusal: exit status 2, one sentence on stderr starting ``wideml: error:``,
  no traceback, and nothing half-written beside the outputs.

``assert_refused`` checks the second; the cases check the first themselves.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd: str | os.PathLike | None = None, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``wideml ARGS --no-progress`` in a fresh interpreter (the way a user runs it) and capture its output."""
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "wideml.cli.main", *map(str, args)]
    if "--no-progress" not in cmd and args and str(args[0]) not in ("info",):
        cmd.append("--no-progress")
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env)


def error_lines(stderr: str) -> list[str]:
    """The ``wideml: error:`` lines of stderr."""
    return [line for line in stderr.splitlines() if line.startswith("wideml: error:")]


def assert_refused(proc: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, exactly one error sentence (containing every word in ``words``, case-insensitive), no traceback."""
    assert proc.returncode == 2, f"expected exit 2, got {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = error_lines(proc.stderr)
    assert len(errors) == 1, f"expected one error sentence, got: {proc.stderr!r}"
    message = errors[0].lower()
    for word in words:
        assert word.lower() in message, f"{word!r} not in the error: {errors[0]}"
    return errors[0]


def assert_api_refused(excinfo, *words: str) -> str:
    """A WidemlError from the API: one sentence (one line) containing every word."""
    from wideml.exceptions import WidemlError

    assert isinstance(excinfo.value, WidemlError), repr(excinfo.value)
    message = str(excinfo.value)
    assert "\n" not in message.strip(), message
    for word in words:
        assert word.lower() in message.lower(), f"{word!r} not in the error: {message}"
    return message


def debris(folder: str | os.PathLike) -> list[Path]:
    """Hidden partial/old outputs and wideml temporary folders left anywhere under ``folder``."""
    folder = Path(folder)
    return sorted(p for p in folder.rglob("*") if ".partial-" in p.name or ".old-" in p.name)


def assert_no_debris(folder: str | os.PathLike) -> None:
    left = debris(folder)
    assert left == [], f"half-written outputs left behind: {left}"


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    port = _free_port()
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
        from distributed import Client

        deadline = time.time() + 90
        while True:
            try:
                with Client(address, timeout="5s") as client:
                    client.wait_for_workers(2, timeout=60)
                break
            except Exception:
                if time.time() > deadline:
                    raise RuntimeError("the test cluster did not start: " + (logs / "scheduler.log").read_text()[-2000:])
                time.sleep(1)
        yield {"address": address, "worker_cwd": worker_cwd, "logs": logs}
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
