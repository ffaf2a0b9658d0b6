"""Clients and cluster objects as the scheduler; batch-scheduler settings; the workers' import check.

* ``use_scheduler`` and ``wideml.config.set(scheduler=...)`` take a ``distributed.Client`` or a
  cluster object (a real LocalCluster of one worker process here): a fit on it equals the threaded
  fit, and the caller's client and cluster stay open;
* ``wideml.cluster.slurm`` settings: checked from Python, a config file and the environment, merged
  into the defaults; turned into dask-jobqueue's arguments (no dask-jobqueue needed);
* ``--scheduler slurm`` without dask-jobqueue, or without sbatch: one sentence, exit 2;
* the workers' import check names the worker and the missing module (a fake client).
The real SLURM runs are in tests/hpc/.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import wideml
from wideml.exceptions import ConfigError, StoreError
from wideml.runtime import cluster_check as cc
from wideml.runtime import jobqueue
from wideml.runtime.client import active_client
from wideml.runtime.scheduler import describe_scheduler, use_scheduler


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None,
                      scheduler_kwargs={"dashboard": False}, worker_dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(3)
    y = np.arange(40) % 2
    X = rng.standard_normal((40, 900)).astype(np.float32)
    X[:, :10] += y[:, None]
    store = wideml.write_store(tmp_path_factory.mktemp("objects") / "s.zarr", X, y, feature_chunk=300)
    with use_scheduler("threads"):
        reference = wideml.LOL(n_components=2).fit(wideml.open_store(store))
    return store, np.asarray(reference.components_)


def _fit(store):
    return np.asarray(wideml.LOL(n_components=2).fit(wideml.open_store(store)).components_)


@pytest.mark.parametrize("kind", ["cluster", "client"])
def test_use_scheduler_takes_a_cluster_or_a_client(cluster, data, kind):
    from distributed import Client

    store, reference = data
    with Client(cluster, set_as_default=False) as client:
        target = cluster if kind == "cluster" else client
        with use_scheduler(target) as name:
            assert name == cluster.scheduler_address
            assert active_client().scheduler.address == cluster.scheduler_address
            assert describe_scheduler().startswith(cluster.scheduler_address)
            np.testing.assert_allclose(_fit(store), reference, rtol=1e-12, atol=1e-12)
        assert client.status == "running" and cluster.status.name == "running"  # the caller's, left open
    assert active_client() is None or active_client().scheduler.address != cluster.scheduler_address


def test_config_scheduler_takes_a_cluster_object(cluster, data):
    store, reference = data
    with wideml.config.set(scheduler=cluster):
        assert wideml.config.get("scheduler") is cluster
        assert active_client().scheduler.address == cluster.scheduler_address  # API fits go there
        np.testing.assert_allclose(_fit(store), reference, rtol=1e-12, atol=1e-12)
        with use_scheduler("sync"):  # an explicit local choice still wins
            assert active_client() is None
        with use_scheduler() as name:  # None reads the setting: the cluster
            assert name == cluster.scheduler_address
    assert active_client() is None


def test_a_real_worker_passes_the_import_check(cluster):
    from distributed import Client

    cc.forget()
    with Client(cluster, set_as_default=False) as client:
        cc.check_workers(client)  # the probe travels by value and imports every module on the worker
        with pytest.raises(StoreError, match=r"cannot import wideml_no_such_module \(ModuleNotFoundError"):
            cc.check_workers(client, modules=("numpy", "wideml_no_such_module"))
    cc.forget()


class FakeClient:
    """One worker whose import probe answers ``answer``."""

    id = "fake-imports"

    def __init__(self, answer):
        self.answer = answer

    def scheduler_info(self, n_workers=5):
        return {"workers": {"tcp://10.0.0.9:1": {"name": "node7"}}}

    def run(self, fn, *args, workers=None, on_error="raise"):
        return {w: self.answer(fn(*args)) for w in workers}


@pytest.mark.parametrize("change, words", [
    (lambda a: {**a, "wideml": ("missing", "ModuleNotFoundError: No module named 'wideml'")},
     ["dask worker node7 (tcp://10.0.0.9:1) cannot import wideml", "install wideml", "this client's Python"]),
    (lambda a: {**a, "zarr": ("missing", "ImportError: libfoo.so")}, ["node7", "cannot import zarr", "ImportError"]),
    (lambda a: {**a, "wideml": ("ok", "0.0.1")}, ["node7", "runs wideml 0.0.1", "same wideml version"]),
    (lambda a: RuntimeError("boom"), ["node7", "could not run wideml's import check", "same Python environment"]),
])
def test_import_check_names_the_worker_and_the_missing_piece(change, words):
    cc.forget()
    with pytest.raises(StoreError) as excinfo:
        cc.check_workers(FakeClient(change))
    message = str(excinfo.value)
    assert "\n" not in message
    for w in words:
        assert w in message, message
    cc.forget()


def test_unreadable_store_metadata_names_the_worker(tmp_path):
    store = wideml.write_store(tmp_path / "s.zarr", np.ones((4, 6), np.float32), np.arange(4) % 2)

    class Denied(FakeClient):
        def run(self, fn, *args, workers=None, on_error="raise"):
            answer = fn(*args)
            answer["unreadable"] = ["Permission denied on " + str(store) + "/zarr.json"]
            return {w: answer for w in workers}

    cc.forget()
    with pytest.raises(StoreError, match=r"node7.*cannot read the metadata of the store .*Permission denied.*read access"):
        cc.check_stores(Denied(None), [(str(store), "X")])
    assert cc.unreadable_metadata(str(store), "X") is None
    cc.forget()


# ----------------------------------------------------------------------------- settings of wideml.cluster.*
def test_cluster_settings_merge_and_are_checked(tmp_path, restore_dask_config):
    assert wideml.config.get("cluster.slurm.jobs") == 1
    with wideml.config.set(cluster={"slurm": {"cores": 8, "job_extra_directives": ["--exclusive"]}}):
        slurm = wideml.config.get("cluster.slurm")
        assert slurm["cores"] == 8 and slurm["job-extra-directives"] == ["--exclusive"]
        assert slurm["jobs"] == 1 and slurm["wait-timeout"] == 300  # merged, not replaced
    path = tmp_path / "c.yaml"
    path.write_text("wideml:\n  cluster:\n    slurm:\n      memory: 32GiB\n      queue: short\n")
    wideml.config.load(path)
    assert wideml.config.get("cluster.slurm.memory") == "32GiB" and wideml.config.get("cluster.slurm.jobs") == 1
    path.write_text("wideml:\n  cluster:\n    slurm:\n      cpus: 4\n")
    with pytest.raises(ConfigError, match=r"c.yaml.*cluster.slurm.cpus is not a setting.*cores"):
        wideml.config.load(path)


@pytest.mark.parametrize("settings, words", [
    ({"cluster.slurm.cores": 0}, "cluster.slurm.cores must be a positive whole number"),
    ({"cluster.slurm.memory": "lots"}, "cluster.slurm.memory 'lots' is not a size"),
    ({"cluster.slurm.job_extra_directives": "--exclusive"}, "must be a list of texts"),
    ({"cluster.slurm.wait_timeout": -1}, "positive number of seconds"),
    ({"cluster": {"lsf": {}}}, "names 'lsf', not a batch scheduler"),
    ({"cluster.pbs.job_mem": "1GiB"}, "cluster.pbs.job-mem is not a setting"),
    ({"scheduler": "slurmm"}, "unknown scheduler 'slurmm'"),
])
def test_bad_cluster_settings_are_one_sentence(settings, words):
    with pytest.raises(ConfigError) as excinfo:
        wideml.config.set(settings)
    assert words in str(excinfo.value) and "\n" not in str(excinfo.value)


def test_cluster_settings_from_the_environment(monkeypatch):
    from wideml.runtime import config

    monkeypatch.setenv("DASK_WIDEML__CLUSTER__SLURM__CORES", "0")
    with pytest.raises(ConfigError, match="cluster.slurm.cores must be a positive"):
        config.check_environment()
    monkeypatch.setenv("DASK_WIDEML__CLUSTER__SLURM__CORES", "4")
    monkeypatch.setenv("DASK_WIDEML__CLUSTER__SLURM__JOB_EXTRA_DIRECTIVES", "['--exclusive']")
    config.check_environment()
    monkeypatch.setenv("DASK_WIDEML__CLUSTER__SLURM__CORSE", "4")
    with pytest.raises(ConfigError, match="cluster.slurm.corse is not a setting"):
        config.check_environment()


def test_settings_become_dask_jobqueue_arguments():
    from wideml.runtime.cluster_settings import kind_settings

    with wideml.config.set(cluster={"slurm": {"queue": "short", "walltime": "02:00:00", "job-extra-directives": ["-C gpu"]}}):
        kwargs = jobqueue.cluster_kwargs("slurm", kind_settings("slurm"))
    assert kwargs["queue"] == "short" and kwargs["walltime"] == "02:00:00"
    assert kwargs["cores"] == jobqueue.FALLBACK_CORES and kwargs["memory"] == jobqueue.FALLBACK_MEMORY
    assert kwargs["job_extra_directives"] == ["-C gpu", "--output=/dev/null", "--error=/dev/null"]  # no slurm-*.out
    assert "jobs" not in kwargs and "wait_timeout" not in kwargs and "processes" not in kwargs
    assert kwargs["scheduler_options"]["dashboard"] is False and kwargs["scheduler_options"]["dashboard_address"] == ":0"
    with wideml.config.set(cluster={"pbs": {"log-directory": "/shared/logs", "resource-spec": "select=1"}}):
        kwargs = jobqueue.cluster_kwargs("pbs", kind_settings("pbs"))
    assert kwargs["log_directory"] == "/shared/logs" and kwargs["job_extra_directives"] == []
    assert kwargs["resource_spec"] == "select=1"


def test_missing_dask_jobqueue_is_one_sentence(monkeypatch, tmp_path, capsys, restore_dask_config):
    from wideml.cli.main import main

    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match=r"needs the dask-jobqueue package.*pip install 'wideml\[hpc\]'"):
        jobqueue.jobqueue_class("slurm")
    store = wideml.write_store(tmp_path / "s.zarr", np.ones((4, 6), np.float32), np.arange(4) % 2)
    assert main(["fit", "lol", str(store), "-o", str(tmp_path / "m.model"), "--scheduler", "slurm", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("wideml: error:") == 1 and "pip install 'wideml[hpc]'" in err and "Traceback" not in err
    assert not (tmp_path / "m.model").exists()


def test_missing_submit_command_is_one_sentence(monkeypatch):
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue (the hpc extra) is not installed")
    monkeypatch.setattr(jobqueue.shutil, "which", lambda name: None)
    with pytest.raises(ConfigError, match=r"submits batch jobs with sbatch, which is not on PATH"):
        with use_scheduler("slurm"):
            pass


def test_importing_dask_jobqueue_keeps_wideml_signal_handlers():
    """dask-jobqueue 0.9 sets a SIGINT handler calling sys.exit() when imported: wideml puts its own back."""
    import signal

    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue (the hpc extra) is not installed")

    def mine(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, mine)
    try:
        sys.modules.pop("dask_jobqueue.runner", None)  # the import with the side effect runs again
        sys.modules.pop("dask_jobqueue", None)
        jobqueue.jobqueue_class("slurm")
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)
