"""The user-world findings on schedulers (issue 27, /work/notes/uw_sched.md), one test each.

1. ``--scheduler slurm`` where sbatch cannot reach a controller: one sentence saying so, quoting sbatch's
   ``fatal:`` line, not blaming the job settings (a fake sbatch printing what the real one printed, and
   the real sbatch's own output where no SLURM is configured);
2. a failed batch-scheduler run leaves nothing in ``$TMPDIR`` (no ``dask-scratch-space``);
3. ``cluster.<kind>.jobs`` is bounded, and SIGTERM while the jobs are submitted leaves no ``tmp*.sh``;
4. a ``log-directory`` that cannot be made or written: one sentence naming the setting, exit 2;
5. a Client or cluster object with no worker: a bounded wait, then one sentence;
6. ``--scheduler tcp://`` to a scheduler with no worker: the same, exit 2;
7. Ctrl-C to the whole process group of a ``local:2`` fit: only wideml's line, no worker traceback;
8. ``DASK_WIDEML__CLUSTER=slurm`` is refused like ``cluster: slurm`` in a config file.

The real SLURM cases are in tests/hpc/.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

import wideml
from adversarial.harness import assert_refused, run_cli
from wideml.exceptions import ConfigError
from wideml.runtime import jobqueue
from wideml.runtime.scheduler import use_scheduler

HAS_JOBQUEUE = importlib.util.find_spec("dask_jobqueue") is not None
needs_jobqueue = pytest.mark.skipif(not HAS_JOBQUEUE, reason="dask-jobqueue (the hpc extra) is not installed")

#: What sbatch printed on a machine with SLURM installed but no controller configured (the finding).
NO_CONTROLLER = """sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host
sbatch: error: fetch_config: DNS SRV lookup failed
sbatch: error: _establish_config_source: failed to fetch config
sbatch: fatal: Could not establish a configuration source"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(11)
    y = np.arange(40) % 2
    X = rng.standard_normal((40, 1200)).astype(np.float32)
    X[:, :20] += y[:, None]
    return str(wideml.write_store(tmp_path_factory.mktemp("sched") / "s.zarr", X, y, feature_chunk=400))


def _fake_command(folder: Path, name: str, body: str) -> str:
    """A shell script ``folder/name`` (a stand-in for sbatch or qsub); returns a PATH with it first."""
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def _dask_error(stderr: str) -> RuntimeError:
    """dask-jobqueue's error for a submit command that failed with ``stderr`` (its Job._call's text)."""
    return RuntimeError(f"Command exited with non-zero exit code.\nExit code: 1\nCommand:\nsbatch /tmp/tmpab12.sh\n"
                        f"stdout:\n\nstderr:\n{stderr}\n")


# ----------------------------------------------------------------------------- 1, 2: no controller, nothing left
@needs_jobqueue
def test_unreachable_controller_is_one_sentence_and_leaves_nothing(store, tmp_path, monkeypatch, capsys,
                                                                   restore_dask_config):
    import tempfile

    from wideml.cli.main import main

    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    quoted = NO_CONTROLLER.replace("\n", "\\n")
    monkeypatch.setenv("PATH", _fake_command(tmp_path / "bin", "sbatch", f"printf '{quoted}\\n' >&2\nexit 1"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))  # $TMPDIR, for wideml and for dask alike
    assert main(["fit", "lol", store, "-o", str(tmp_path / "m.model"), "--scheduler", "slurm", "--no-progress"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("wideml: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    for words in ("sbatch cannot reach the SLURM controller", "(sbatch: fatal: Could not establish a configuration source)",
                  "SLURM_CONF"):
        assert words in errors[0], errors[0]
    assert "check the settings" not in errors[0] and "queue, cores" not in errors[0]
    assert sorted(os.listdir(tmpdir)) == []  # no dask-scratch-space, no job script
    assert not (tmp_path / "m.model").exists()


@pytest.mark.parametrize("kind, stderr, words", [
    ("slurm", "sbatch: error: get_addr_info: getaddrinfo() failed: Name or service not known\n"
              "sbatch: error: slurm_set_addr: Unable to resolve \"ctl.invalid\"\n"
              "sbatch: error: Unable to establish control machine address\n"
              "sbatch: error: Batch job submission failed: No error",
     ["sbatch cannot reach the SLURM controller", "Unable to establish control machine address"]),
    ("slurm", "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
     ["sbatch cannot reach the SLURM controller", "connect failure"]),
    ("pbs", "Connection refused\nqsub: cannot connect to server pbs01 (errno=111)",
     ["qsub cannot reach the PBS controller", "qsub: cannot connect to server pbs01"]),
    ("sge", "error: commlib error: got select error (Connection refused)\n"
            "Unable to run job: unable to send message to qmaster using port 6444 on host \"sge01\": got send error",
     ["qsub cannot reach the SGE controller", "unable to send message to qmaster"]),
    ("slurm", "sbatch: error: invalid partition specified: nope\n"
              "sbatch: error: Batch job submission failed: Invalid partition name specified",
     ["sbatch refused the dask worker job (sbatch: error: Batch job submission failed: Invalid partition name",
      "cluster.slurm"]),
])
def test_submit_failures_are_told_apart(kind, stderr, words):
    message = jobqueue.refusal_sentence(kind, _dask_error(stderr))
    assert "\n" not in message
    for w in words:
        assert w in message, message
    if "cannot reach" in message:
        assert "queue, cores" not in message


def test_the_real_sbatch_without_a_controller():
    """Where SLURM is installed but nothing configures it (the finding's machine), quote sbatch's own fatal line."""
    sbatch = shutil.which("sbatch")
    if sbatch is None or os.path.exists("/etc/slurm/slurm.conf") or os.path.exists("/etc/slurm-llnl/slurm.conf"):
        pytest.skip("needs sbatch installed without a system slurm.conf (CI installs slurm-wlm by scripts/setup_slurm.sh)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    out = subprocess.run([sbatch, "--wrap", "true"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    message = jobqueue.refusal_sentence("slurm", _dask_error(out.stderr))
    assert message.startswith("sbatch cannot reach the SLURM controller from this machine (sbatch: fatal:"), message


# ----------------------------------------------------------------------------- 3: a bound on jobs, no job script left
def test_jobs_are_bounded():
    from wideml.runtime.cluster_settings import MAX_JOBS

    with wideml.config.set({"cluster.slurm.jobs": MAX_JOBS}):
        assert wideml.config.get("cluster.slurm.jobs") == MAX_JOBS
    with pytest.raises(ConfigError) as excinfo:
        wideml.config.set(cluster={"pbs": {"jobs": 100000}})
    message = str(excinfo.value)
    assert "cluster.pbs.jobs 100000 is above wideml's bound of 1000 batch jobs" in message and "\n" not in message


@needs_jobqueue
def test_sigterm_while_submitting_leaves_no_job_script(store, tmp_path):
    tmpdir, mark = tmp_path / "tmpdir", tmp_path / "submitting"
    tmpdir.mkdir()
    path = _fake_command(tmp_path / "bin", "sbatch", f"touch {mark}\nsleep 3\necho 'sbatch: error: slow' >&2\nexit 1")
    config = tmp_path / "c.yaml"
    config.write_text("wideml:\n  cluster:\n    slurm:\n      jobs: 3\n")
    env = dict(os.environ, PATH=path, TMPDIR=str(tmpdir), PYTHONWARNINGS="ignore::DeprecationWarning")
    proc = subprocess.Popen([sys.executable, "-m", "wideml.cli.main", "--config", str(config), "fit", "lol", store, "-o",
                             str(tmp_path / "m.model"), "--scheduler", "slurm", "--no-progress"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert mark.exists() and proc.poll() is None, "sbatch was never called"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "interrupted by SIGTERM" in err and "Traceback" not in err, err
    assert sorted(os.listdir(tmpdir)) == []  # no tmp*.sh, no dask-scratch-space


@needs_jobqueue
def test_job_scripts_go_to_the_owned_folder(tmp_path):
    from dask_jobqueue import SLURMCluster

    cls = jobqueue.job_class(SLURMCluster, str(tmp_path))
    assert issubclass(cls, SLURMCluster.job_cls) and cls.config_name == "slurm"
    job = cls(cores=1, memory="1GiB", scheduler="tcp://127.0.0.1:1", name="x")
    with job.job_file() as name:
        assert os.path.dirname(name) == str(tmp_path) and name.endswith(".sh")
        assert "#SBATCH" in Path(name).read_text()
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- 4: log-directory
@pytest.mark.parametrize("case", ["missing parent", "a file", "proc"])
def test_unusable_log_directory_is_one_sentence(case, tmp_path, restore_dask_config):
    if case == "missing parent":
        value, words = tmp_path / "no" / "logs", "its parent folder"
    elif case == "a file":
        (tmp_path / "f").write_text("mine")
        value, words = tmp_path / "f", "is not a folder"
    else:
        if not os.path.isdir("/proc/self"):
            pytest.skip("no /proc on this system")
        value, words = "/root/../proc/forbidden", "cannot be made in /proc"
    with wideml.config.set({"cluster.slurm.log-directory": str(value)}), pytest.raises(ConfigError) as excinfo:
        with use_scheduler("slurm"):
            pass
    message = str(excinfo.value)
    assert "cluster.slurm.log-directory" in message and words in message and "\n" not in message, message
    if case == "a file":
        assert (tmp_path / "f").read_text() == "mine"
    assert not (tmp_path / "no").exists()


def test_log_directory_in_a_config_file_exits_2(store, tmp_path, capsys, restore_dask_config):
    from wideml.cli.main import main

    config = tmp_path / "c.yaml"
    config.write_text(f"wideml:\n  scheduler: slurm\n  cluster:\n    slurm:\n      log-directory: {tmp_path}/a/b\n")
    assert main(["--config", str(config), "fit", "lol", store, "-o", str(tmp_path / "m.model"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("wideml: error:") == 1 and "cluster.slurm.log-directory" in err and "Traceback" not in err, err
    assert not (tmp_path / "a").exists() and not (tmp_path / "m.model").exists()


def test_a_log_directory_is_made_and_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = {"log-directory": "logs"}
    jobqueue.check_log_directory("slurm", settings)
    assert settings["log-directory"] == str(tmp_path / "logs") and (tmp_path / "logs").is_dir()


# ----------------------------------------------------------------------------- 5, 6: a scheduler with no worker
@pytest.fixture(scope="module")
def empty_cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None,
                      scheduler_kwargs={"dashboard": False}) as cluster:
        yield cluster


@pytest.mark.parametrize("kind", ["client", "cluster"])
def test_no_worker_in_python_is_one_sentence_after_the_wait(empty_cluster, store, kind):
    from distributed import Client

    with Client(empty_cluster, set_as_default=False) as client:
        target = client if kind == "client" else empty_cluster
        start = time.monotonic()
        with wideml.config.set(scheduler=target, cluster={"wait-timeout": 0.5}), pytest.raises(ConfigError) as excinfo:
            wideml.LOL(n_components=2).fit(wideml.open_store(store))
        assert time.monotonic() - start < 60
        assert client.status == "running"  # the caller's, left open
    message = str(excinfo.value)
    assert message.startswith(f"the dask scheduler at {empty_cluster.scheduler_address} has no workers"), message
    assert "within 0.5 s" in message and "cluster.wait-timeout" in message and "\n" not in message


def test_a_worker_that_joins_during_the_wait_is_used(empty_cluster):
    from distributed import Client

    from wideml.runtime.client import require_workers

    with Client(empty_cluster, set_as_default=False) as client:
        timer = threading.Timer(0.3, empty_cluster.scale, args=(1,))
        timer.start()
        try:
            require_workers(client, timeout=60)
            assert len(client.nthreads()) == 1
        finally:
            timer.join()
            empty_cluster.scale(0)
            deadline = time.monotonic() + 30
            while client.nthreads() and time.monotonic() < deadline:
                time.sleep(0.05)


def test_no_worker_on_the_command_line_exits_2(empty_cluster, store, tmp_path, capsys, restore_dask_config):
    from wideml.cli.main import main

    config = tmp_path / "c.yaml"
    config.write_text("wideml:\n  cluster:\n    wait-timeout: 0.5\n")
    address = empty_cluster.scheduler_address
    assert main(["--config", str(config), "fit", "lol", store, "-o", str(tmp_path / "m.model"), "--scheduler", address,
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("wideml: error:")]
    assert errors == [f"wideml: error: the dask scheduler at {address} has no workers (none connected within 0.5 s); start "
                      f"workers for it (e.g. dask worker {address}) or scale its cluster, or raise config "
                      "cluster.wait-timeout to wait longer."], err
    assert "Traceback" not in err and not (tmp_path / "m.model").exists()


@pytest.mark.parametrize("settings, words", [
    ({"cluster": {"wait-timeout": 0}}, "cluster.wait-timeout must be a positive number of seconds"),
    ({"cluster.wait_timeout": "soon"}, "cluster.wait-timeout must be a positive number of seconds"),
])
def test_wait_timeout_values_are_checked(settings, words):
    assert wideml.config.get("cluster.wait-timeout") == 60
    with pytest.raises(ConfigError, match=words):
        wideml.config.set(settings)


# ----------------------------------------------------------------------------- 7: Ctrl-C to the process group
@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_ctrl_c_to_the_process_group_keeps_the_workers_quiet(tmp_path):
    rng = np.random.default_rng(5)
    y = np.arange(60) % 2
    X = rng.standard_normal((60, 48000)).astype(np.float32)
    store = wideml.write_store(tmp_path / "big.zarr", X, y, feature_chunk=4000)
    errfile = tmp_path / "stderr.txt"
    env = dict(os.environ, PYTHONWARNINGS="ignore::DeprecationWarning", TMPDIR=str(tmp_path))
    with open(errfile, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "wideml.cli.main", "fit", "lol", str(store), "-o",
                                 str(tmp_path / "m.model"), "--n-components", "5", "--solver", "randomized",
                                 "--scheduler", "local:2", "--no-progress"], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "wideml: scheduler" not in errfile.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # the line comes once the cluster and its 2 workers are up: the fit is starting
        assert proc.poll() is None, errfile.read_text()
        # A terminal's Ctrl-C is SIGINT to the whole group. The worker processes get it first here, and 2 s to react,
        # before the command itself (which then stops them): a worker that took it would die, with tracebacks.
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 2, children
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.send_signal(signal.SIGINT)
        gone, _ = psutil.wait_procs(children, timeout=2)
        assert gone == [], f"worker processes ended on SIGINT: {gone}"
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    text = errfile.read_text()
    assert proc.returncode == 130, text
    lines = text.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("wideml: scheduler tcp://127.0.0.1:"), text
    assert lines[1] == ("wideml: interrupted by SIGINT; partial outputs and work folders of this run were removed.")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the worker processes are gone with their command
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("processes of the interrupted command are still running")
    assert not (tmp_path / "m.model").exists()


# ----------------------------------------------------------------------------- 8: a non-mapping cluster in the environment
@pytest.mark.parametrize("value", ["slurm", "[1, 2]"])
def test_non_mapping_cluster_from_the_environment_is_refused(value, monkeypatch):
    from wideml.runtime import config

    monkeypatch.setenv("DASK_WIDEML__CLUSTER", value)
    with pytest.raises(ConfigError, match=r"^cluster must be a mapping such as \{slurm"):
        config.check_environment()


def test_a_non_mapping_cluster_is_never_read_as_the_defaults(restore_dask_config):
    import dask.config

    from wideml.runtime.cluster_settings import kind_settings

    dask.config.set({"wideml.cluster": "slurm"})  # what dask made of DASK_WIDEML__CLUSTER=slurm
    with pytest.raises(ConfigError, match="cluster must be a mapping"):
        kind_settings("slurm")
