"""`--scheduler local:N`: N above 4 per usable core is refused in one sentence, before any process starts; the cluster's
scratch space lives in an owned work folder that is removed, never `dask-scratch-space` in the current folder (issue 22).

`local:1000` on 2 cores used to give no result after 120 s and leave `dask-scratch-space` behind.
"""

from __future__ import annotations

import os
import tempfile
import time

import dask
import dask.array as da
import pytest

from adversarial.harness import assert_refused, run_cli
from oracles import store_and_model
from wideml.exceptions import ConfigError
from wideml.runtime import local_cluster, worker_bound
from wideml.runtime.scheduler import active_client, use_scheduler


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_far_too_many_workers_refused_at_once(monkeypatch):
    import distributed

    def no_cluster(*args, **kwargs):  # were the bound gone, this test must fail, not start 1000 processes
        raise AssertionError("a LocalCluster was started")

    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    start = time.perf_counter()
    with pytest.raises(ConfigError) as excinfo, use_scheduler("local:1000"):
        pass
    message = str(excinfo.value)
    assert time.perf_counter() - start < 5  # no process was started
    assert "local:1000" in message and "1000 worker processes" in message and f"{_cores()} usable core" in message
    assert f"at most {4 * _cores()}" in message and "\n" not in message


def test_bound_is_four_workers_per_usable_core(monkeypatch):
    monkeypatch.setattr(worker_bound, "usable_cores", lambda: 2)
    local_cluster.check_worker_count(8)  # 4 per core: allowed
    with pytest.raises(ConfigError, match=r"asks for 9 worker processes, but this machine has 2 usable cores; "
                                          r"use local:N with N at most 8"):
        local_cluster.check_worker_count(9)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("local_bound")
    store_and_model(folder)
    return folder


def test_cli_refuses_too_many_workers_in_one_sentence(files, tmp_path):
    spec = f"local:{4 * _cores() + 1}"  # just above the bound (a far larger N, were it accepted, would swamp the machine)
    start = time.perf_counter()
    proc = run_cli("predict", files / "m.zarr", files / "s.zarr", "--scheduler", spec, cwd=tmp_path)
    assert_refused(proc, spec, "usable core", f"at most {4 * _cores()}")
    assert time.perf_counter() - start < 60
    assert os.listdir(tmp_path) == []


def test_cli_local_cluster_leaves_no_scratch_space_in_the_current_folder(files, tmp_path):
    """The temporary directory is the current folder (as when gettempdir() falls back to it): nothing is left there."""
    proc = run_cli("predict", files / "m.zarr", files / "s.zarr", "--scheduler", "local:1", cwd=tmp_path,
                   env={"TMPDIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 40
    assert os.listdir(tmp_path) == []


def test_cluster_scratch_is_in_the_work_folder_and_removed(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr(tempfile, "tempdir", str(here))  # gettempdir() would say the current folder
    with dask.config.set({"wideml.workdir": str(work)}), use_scheduler("local:1"):
        client = active_client()
        (folder,) = os.listdir(work)
        assert folder.startswith("wideml-fit-")
        scratch = os.path.realpath(work / folder)
        places = [*client.run(lambda dask_worker: dask_worker.local_directory).values(),
                  client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.local_directory)]
        assert all(os.path.realpath(p).startswith(scratch + os.sep) for p in places), places
        assert int(da.ones(10, chunks=5).sum().compute()) == 10
    assert os.listdir(work) == [] and os.listdir(here) == []


def test_cluster_scratch_removed_when_the_block_fails(tmp_path):
    with dask.config.set({"wideml.workdir": str(tmp_path)}), pytest.raises(RuntimeError, match="boom"):
        with use_scheduler("local:1"):
            assert len(os.listdir(tmp_path)) == 1
            raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []
