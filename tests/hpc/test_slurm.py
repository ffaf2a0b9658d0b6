"""``--scheduler slurm`` on a real single-node SLURM (tests/hpc/conftest.py starts it).

* ``wideml fit lol`` and ``wideml cv`` on SLURM give the threaded run's answer (loadings to rtol 1e-12,
  the same predictions, the same cv table);
* SIGINT or SIGTERM while the job starts: exit 130 / 143, one line, and no job left in the queue;
* no worker in time: one sentence naming the queue and ``squeue``, and the pending job is cancelled;
* a job the batch system refuses (unknown partition): one sentence quoting sbatch, and nothing left in
  ``$TMPDIR`` (the scheduler's scratch space and the job scripts live in a folder wideml owns), as after
  a run that succeeds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from adversarial.harness import REPO, run_cli
from hpc import slurm_node

#: Settings of the jobs: one core, 1 GiB each, so two jobs fit the node.
CONFIG = "wideml:\n  cluster:\n    slurm:\n      cores: 1\n      memory: 1GiB\n      wait-timeout: 60\n{extra}"


def _config(tmp_path, extra: str = "") -> str:
    path = tmp_path / "slurm.yaml"
    path.write_text(CONFIG.format(extra=extra))
    return str(path)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from wideml import write_store

    rng = np.random.default_rng(7)
    y = np.arange(60) % 3
    X = rng.standard_normal((60, 3000)).astype(np.float32)
    X[:, :40] += y[:, None].astype(np.float32)  # a class signal in the first features
    return str(write_store(tmp_path_factory.mktemp("hpc") / "s.zarr", X, y, feature_chunk=500))


def _no_jobs_left(node, wait: float = 15.0) -> list[str]:
    """The private cluster's pending or running jobs, after waiting up to ``wait`` s for cancelled ones to go."""
    deadline = time.monotonic() + wait
    left = slurm_node.jobs(node)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = slurm_node.jobs(node)
    return left


def test_fit_and_cv_on_slurm_equal_the_threaded_run(slurm, store, tmp_path, restore_dask_config):
    from wideml import load_model
    from wideml.cli.main import main

    tmpdir, workers = tmp_path / "tmpdir", tmp_path / "workers"
    tmpdir.mkdir()
    # the workers' scratch space goes where local-directory says (a compute node's own temporary folder by default;
    # here the node is this machine, and sbatch passes TMPDIR on): kept apart to see what the submitting side leaves
    config = _config(tmp_path, f"      local-directory: {workers}\n")
    assert main(["fit", "lol", store, "-o", str(tmp_path / "threads.model"), "--n-components", "3", "--no-progress"]) == 0
    proc = run_cli("--config", config, "fit", "lol", store, "-o", tmp_path / "slurm.model", "--n-components", "3",
                   "--scheduler", "slurm", timeout=240, env={"TMPDIR": str(tmpdir)})
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmpdir) == []  # no dask-scratch-space, no job script
    assert "1 SLURM job" in proc.stderr  # the scheduler line names the job it ran on
    reference, on_slurm = load_model(tmp_path / "threads.model"), load_model(tmp_path / "slurm.model")
    a, b = np.asarray(reference.embedding_.components_), np.asarray(on_slurm.embedding_.components_)
    assert a.shape == b.shape == (3, 3000)
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12 * np.abs(a).max())
    assert not np.array_equal(a, np.zeros_like(a))
    from wideml import open_store

    X = open_store(store)
    np.testing.assert_array_equal(on_slurm.predict(X), reference.predict(X))

    assert main(["cv", store, "--methods", "lol", "--max-dim", "3", "--folds", "3", "-o", str(tmp_path / "t.json"),
                 "--no-progress"]) == 0
    proc = run_cli("--config", config, "cv", store, "--methods", "lol", "--max-dim", "3", "--folds", "3",
                   "-o", tmp_path / "s.json", "--scheduler", "slurm", timeout=240)
    assert proc.returncode == 0, proc.stderr
    threaded, slurmed = (json.loads((tmp_path / name).read_text()) for name in ("t.json", "s.json"))
    assert slurmed["results"] == threaded["results"]  # fold errors, best d, every fold's predictions
    assert _no_jobs_left(slurm) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_cancels_the_jobs(slurm, store, tmp_path, signum):
    """A signal once the job is in the queue (its worker still starting): exit 130/143, one line, the job cancelled."""
    cmd = [sys.executable, "-m", "wideml.cli.main", "--config", _config(tmp_path), "fit", "lol", store, "-o",
           str(tmp_path / "m.model"), "--scheduler", "slurm", "--no-progress"]
    assert slurm_node.jobs(slurm) == []
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 60
        while not slurm_node.jobs(slurm) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert slurm_node.jobs(slurm), "the worker job never reached the queue"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert f"interrupted by {signal.Signals(signum).name}" in err and "Traceback" not in err
    assert _no_jobs_left(slurm) == []
    assert not (tmp_path / "m.model").exists()


def test_no_worker_in_time_names_the_queue_and_squeue(slurm):
    """The job may not start for an hour: after wait-timeout, one sentence naming the queue and squeue; job cancelled."""
    import wideml
    from wideml.exceptions import ConfigError
    from wideml.runtime.scheduler import use_scheduler

    settings = {"cores": 1, "memory": "1GiB", "wait-timeout": 2, "queue": "debug",
                "job-extra-directives": ["--begin=now+3600"]}
    with wideml.config.set(cluster={"slurm": settings}), pytest.raises(ConfigError) as excinfo:
        with use_scheduler("slurm"):
            pass
    message = str(excinfo.value)
    for words in ("no dask worker started within 2 s", "1 SLURM job", "queue debug", "squeue -u", "wait-timeout"):
        assert words in message, message
    assert "\n" not in message
    assert _no_jobs_left(slurm) == []


def test_a_refused_job_is_one_sentence(slurm):
    import wideml
    from wideml.exceptions import ConfigError
    from wideml.runtime.scheduler import use_scheduler

    with wideml.config.set(cluster={"slurm": {"queue": "no-such-partition"}}), pytest.raises(ConfigError) as excinfo:
        with use_scheduler("slurm"):
            pass
    message = str(excinfo.value)
    assert message.startswith("sbatch refused the dask worker job (sbatch: error:"), message
    assert "partition" in message and "cluster.slurm" in message and "\n" not in message
    assert _no_jobs_left(slurm) == []


def test_a_refused_job_on_the_command_line_leaves_nothing(slurm, store, tmp_path, monkeypatch, capsys,
                                                          restore_dask_config):
    import tempfile

    from wideml.cli.main import main

    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))  # $TMPDIR, for wideml and for dask alike
    config = _config(tmp_path, "      queue: no-such-partition\n")
    assert main(["--config", config, "fit", "lol", store, "-o", str(tmp_path / "m.model"), "--scheduler", "slurm",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("wideml: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert errors[0].startswith("wideml: error: sbatch refused the dask worker job (sbatch: error:"), errors[0]
    assert "partition" in errors[0] and "cluster.slurm" in errors[0]
    assert os.listdir(tmpdir) == []
    assert not (tmp_path / "m.model").exists() and _no_jobs_left(slurm) == []


def test_no_job_log_is_left_behind(slurm, tmp_path):
    """The jobs' logs went to /dev/null: no slurm-*.out in the folders the runs started in."""
    assert not list(REPO.glob("slurm-*.out"))
    assert not list(tmp_path.glob("slurm-*.out"))
