"""``--scheduler slurm`` (and ``pbs``, ``sge``): dask workers in batch jobs, through dask-jobqueue.

The cluster's scheduler runs in this process; each batch job runs dask
workers that connect back to it. :func:`start_jobqueue_cluster`

1. reads the settings ``wideml.cluster.<kind>`` (:mod:`wideml.runtime.cluster_settings`:
   dask-jobqueue's own parameters such as ``cores``, ``memory``, ``walltime``,
   ``queue``, ``processes``, ``job-extra-directives``, plus ``jobs`` and
   ``wait-timeout``), refusing a missing dask-jobqueue (``pip install 'wideml[hpc]'``)
   or a missing submit command (``sbatch``, ``qsub``) in one sentence, and a
   ``log-directory`` that cannot be made or written;
2. submits ``jobs`` jobs at once (at most
   :data:`~wideml.runtime.cluster_settings.MAX_JOBS`); a refusal by the batch
   system, e.g. an unknown partition, is one sentence quoting its most
   telling line, and a batch system this machine cannot reach (no controller,
   no configuration) is one sentence saying so;
3. waits until every job's workers have connected, at most ``wait-timeout``
   seconds: with none by then, one sentence names the queue and the command
   that shows the jobs (``squeue``); with some, a warning says how many, and
   the run goes on with those;
4. on exit, also on an error, SIGINT or SIGTERM (the signal handlers of
   :mod:`wideml.runtime.signals` raise in the main thread, so this exit runs),
   closes the client and the cluster, which cancels every job (``scancel``),
   then cancels again by job id whatever the close may have missed.

A process killed outright (SIGKILL) cannot cancel its jobs: their workers stop
by themselves once they lose the scheduler (dask-jobqueue's ``death-timeout``,
60 s by default), and the batch system ends them at ``walltime``.

Files: the scheduler's ``dask-scratch-space`` and the job scripts
dask-jobqueue writes for each submission (``tmpXXXX.sh``) go into a fresh
folder wideml owns (:func:`wideml.runtime.local_cluster.cluster_scratch`: a
``wideml-fit-TOKEN`` work folder), removed on exit, also after an error or
an interrupt, so nothing is left in ``$TMPDIR``.

Job logs: unless ``log-directory`` is set (a folder the compute nodes can
write), the jobs' output goes to /dev/null, so nothing is left in the current
folder (the batch systems' default, ``slurm-JOBID.out``).

The scheduler's dashboard follows config ``wideml.dashboard`` as for
``local:N`` (off by default; never on dask's fixed port 8787).
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import dask.config

from wideml.exceptions import ConfigError, PerformanceWarning
from wideml.runtime.cluster_settings import KINDS, kind_settings
from wideml.runtime.local_cluster import cluster_scratch, dashboard_address

#: The batch schedulers ``--scheduler`` starts clusters on.
JOBQUEUE_KINDS = tuple(KINDS)

#: wideml's fallbacks when neither wideml's nor dask-jobqueue's config sets them.
FALLBACK_CORES = 1
FALLBACK_MEMORY = "2GiB"

#: Settings of wideml's own (not dask-jobqueue parameters).
_OWN = ("jobs", "wait-timeout")

#: Job directives sending the job's output to /dev/null when no log-directory is set.
_NO_LOGS = {"slurm": ["--output=/dev/null", "--error=/dev/null"], "pbs": ["-o /dev/null", "-e /dev/null"],
            "sge": ["-o /dev/null", "-e /dev/null"]}


def jobqueue_class(kind: str):
    """dask-jobqueue's cluster class for ``kind`` (``SLURMCluster`` for ``"slurm"``).

    Raises
    ------
    ConfigError
        If dask-jobqueue is not installed (naming ``pip install 'wideml[hpc]'``).
    """
    handlers = _signal_handlers()
    try:
        import dask_jobqueue  # optional (the hpc extra): only when a batch-scheduler cluster starts
    except ImportError:
        raise ConfigError(f"--scheduler {kind} needs the dask-jobqueue package, which is not installed; "
                          "install it with pip install 'wideml[hpc]'.") from None
    finally:
        _restore_signal_handlers(handlers)
    return getattr(dask_jobqueue, KINDS[kind][0])


def _signal_handlers() -> dict:
    """The current SIGINT and SIGTERM handlers (main thread only; elsewhere nothing to keep)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore_signal_handlers(handlers: dict) -> None:
    """Put back handlers that an import replaced.

    Importing dask-jobqueue (its ``runner`` module, 0.9) sets a SIGINT handler
    that calls ``sys.exit()``: a Ctrl-C would then end the run with status 0,
    before wideml's handlers (:mod:`wideml.runtime.signals`) could cancel the
    jobs and remove the partial outputs.
    """
    for sig, handler in handlers.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


def cluster_kwargs(kind: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of dask-jobqueue's cluster class from wideml's settings of ``kind``.

    Null settings are left to dask-jobqueue's config (``jobqueue.<kind>.*``);
    ``cores`` and ``memory`` fall back to :data:`FALLBACK_CORES` and
    :data:`FALLBACK_MEMORY` when that sets them neither.

    Parameters
    ----------
    kind : {"slurm", "pbs", "sge"}
    settings : dict
        From :func:`wideml.runtime.cluster_settings.kind_settings` (hyphenated keys).

    Returns
    -------
    dict
    """
    kwargs = {key.replace("-", "_"): value for key, value in settings.items() if key not in _OWN and value is not None}
    for key, fallback in (("cores", FALLBACK_CORES), ("memory", FALLBACK_MEMORY)):
        if key not in kwargs and dask.config.get(f"jobqueue.{kind}.{key}", None) is None:
            kwargs[key] = fallback
    if "log_directory" not in kwargs and dask.config.get(f"jobqueue.{kind}.log-directory", None) is None:
        kwargs["job_extra_directives"] = [*kwargs.get("job_extra_directives", []), *_NO_LOGS[kind]]
    dashboard = dashboard_address()
    options = dict(dask.config.get(f"jobqueue.{kind}.scheduler-options", None) or {})
    options.setdefault("dashboard_address", dashboard or ":0")  # never dask's fixed 8787
    options.setdefault("dashboard", dashboard is not None)
    kwargs["scheduler_options"] = options
    kwargs["silence_logs"] = logging.ERROR
    return kwargs


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:  # dask-jobqueue's RuntimeError quotes the command's stderr after a few header lines
        if line.lower().startswith(("sbatch:", "qsub:", "error", "unable")):
            return line.rstrip(".")
    return (lines[0] if lines else type(exc).__name__).rstrip(".")


def _stderr_lines(exc: BaseException) -> list[str]:
    """The submit command's stderr lines from dask-jobqueue's RuntimeError (the lines after ``stderr:``), else every line."""
    lines = [line.strip() for line in str(exc).splitlines()]
    if "stderr:" in lines:
        lines = lines[len(lines) - lines[::-1].index("stderr:"):]
    return [line for line in lines if line]


#: What a submit command prints when it cannot reach its batch system (no controller, no configuration), lower case.
_UNREACHABLE = (
    "could not establish a configuration source",  # sbatch without slurm.conf (and no DNS SRV record)
    "unable to process configuration file",  # sbatch: SLURM_CONF names no readable file
    "unable to establish control machine address",  # sbatch: the controller's host does not resolve
    "unable to contact slurm controller",  # sbatch: nothing answers at the controller's address
    "cannot connect to server",  # PBS qsub
    "unable to contact qmaster", "unable to send message to qmaster",  # SGE qsub
    "sge_root",  # SGE qsub without its environment
)


def _telling_line(lines: list[str]) -> str:
    """The most informative line of a submit command's stderr: a ``fatal:`` line, else the reason given, else the last."""
    if not lines:
        return "no message"
    fatal = [line for line in lines if "fatal:" in line.lower()]
    if fatal:
        return fatal[-1].rstrip(".")
    unreachable = [line for line in lines if any(words in line.lower() for words in _UNREACHABLE)]
    if unreachable:
        return unreachable[-1].rstrip(".")
    told = [line for line in lines if not line.lower().rstrip(".").endswith("no error")]
    failed = [line for line in told if "submission failed" in line.lower()]
    return (failed or told or lines)[-1].rstrip(".")


def refusal_sentence(kind: str, exc: BaseException) -> str:
    """The one sentence for a submission that ``kind``'s submit command refused (``exc``: dask-jobqueue's error).

    A submit command that cannot reach its batch system (no controller at
    the configured address, no configuration on this machine) is told apart
    from a job the batch system refused: the first is not a matter of the
    job's settings.

    Parameters
    ----------
    kind : {"slurm", "pbs", "sge"}
    exc : Exception
        dask-jobqueue's ``RuntimeError`` quoting the command's stderr (or another error of the submission).

    Returns
    -------
    str
    """
    submit, status = KINDS[kind][1], KINDS[kind][2]
    lines = _stderr_lines(exc)
    line = _telling_line(lines)
    text = " ".join(lines).lower()
    if any(words in text for words in _UNREACHABLE):
        where = " (SLURM_CONF or /etc/slurm/slurm.conf names its controller)" if kind == "slurm" else ""
        return (f"{submit} cannot reach the {kind.upper()} controller from this machine ({line}); check that "
                f"{kind.upper()} runs and that this machine is set up to submit to it{where}, e.g. that '{status}' "
                "answers here, or choose another scheduler.")
    return (f"{submit} refused the dask worker job ({line}); check the settings in config cluster.{kind} (queue, cores, "
            "memory, walltime, job-extra-directives).")


async def _submitted(cluster) -> None:
    """Submit the jobs of ``cluster``'s spec and wait until they are; raise the batch system's refusal."""
    await cluster._correct_state()


def _submit_now(cluster, kind: str, jobs: int) -> None:
    """Submit ``jobs`` jobs and wait until they are submitted; a refusal by the batch system is one sentence.

    ``cluster.scale`` would submit in the background, where a refusal is only
    logged (with a traceback on stderr): the jobs are added to the cluster's
    spec here and submitted in this call instead.
    """
    if hasattr(cluster, "new_worker_spec") and isinstance(getattr(cluster, "worker_spec", None), dict):
        while len(cluster.worker_spec) < jobs:
            cluster.worker_spec.update(cluster.new_worker_spec())
    else:  # another dask-jobqueue layout: its own scaling
        cluster.scale(jobs=jobs)
    try:
        cluster.sync(_submitted, cluster)
    except (RuntimeError, OSError, ValueError) as exc:
        raise ConfigError(refusal_sentence(kind, exc)) from None


def job_class(cls, folder: str):
    """A subclass of ``cls``'s job class that writes its job scripts into ``folder`` (not ``$TMPDIR``).

    dask-jobqueue writes each job's script to a temporary ``tmpXXXX.sh`` for
    the submit command and removes it afterwards; a run stopped during the
    submissions would leave them in the system's temporary directory.

    Parameters
    ----------
    cls : type
        dask-jobqueue's cluster class (``SLURMCluster``, ...).
    folder : str
        A folder this run owns and removes (:func:`wideml.runtime.local_cluster.cluster_scratch`).

    Returns
    -------
    type
    """
    from dask.utils import tmpfile

    base = cls.job_cls

    @contextlib.contextmanager
    def job_file(self):
        with tmpfile(extension="sh", dir=folder) as name:
            with open(name, "w") as fh:
                fh.write(self.job_script())
            yield name

    return type(base.__name__, (base,), {"job_file": job_file, "__module__": __name__, "__doc__": base.__doc__})


def check_log_directory(kind: str, settings: dict[str, Any]) -> None:
    """Make ``cluster.<kind>.log-directory`` absolute and make sure it exists and can be written; refuse in one sentence.

    The folder is made (one level, as dask-jobqueue would) when its parent
    exists; a missing parent, a file, or a folder that cannot be written or
    made is refused naming the setting. ``settings`` is updated in place with
    the absolute path (the batch system reads a relative path from the job's
    working folder, and ``~`` is not expanded by dask-jobqueue).

    Raises
    ------
    ConfigError
    """
    value = settings.get("log-directory")
    if value is None:
        return
    where = f"config cluster.{kind}.log-directory {value!r}"
    folder = os.path.abspath(os.path.expanduser(str(value).strip()))
    settings["log-directory"] = folder
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise ConfigError(f"{where} is not a folder; name a folder the compute nodes can write, or leave it unset.")
    if os.path.isdir(folder):
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ConfigError(f"{where} is not writable here; name a folder you can write, or leave it unset.")
        return
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        raise ConfigError(f"{where} cannot be made because its parent folder {parent} does not exist; create the parent "
                          "first, or name a folder that exists.")
    try:
        os.mkdir(folder)
    except OSError as exc:
        raise ConfigError(f"{where} cannot be made in {parent} ({exc.strerror or exc}); name a folder you can write, "
                          "or leave it unset.") from None


def _job_ids(cluster) -> list[str]:
    return [str(job.job_id) for job in list(getattr(cluster, "workers", {}).values()) if getattr(job, "job_id", None)]


def _where(kind: str, settings: dict[str, Any]) -> str:
    queue = settings.get("queue") or dask.config.get(f"jobqueue.{kind}.queue", None)
    return f"queue {queue}" if queue else "the default queue"


def wait_for_workers(client, expected: int, timeout: float, kind: str, settings: dict[str, Any]) -> int:
    """Wait until ``expected`` workers have connected, at most ``timeout`` seconds; return how many did.

    Raises
    ------
    ConfigError
        If no worker connected in time (naming the queue and the command that shows the jobs).
    """
    deadline = time.monotonic() + timeout
    count = 0
    while True:
        try:
            count = len(client.nthreads())
        except Exception:  # noqa: BLE001 - a scheduler that cannot answer yet has no workers either
            count = 0
        if count >= expected or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    if count == 0:
        status, user = KINDS[kind][2], getpass.getuser()
        logs = settings.get("log-directory")
        hint = f" and their logs in {logs}" if logs else f" (set cluster.{kind}.log-directory to keep their logs)"
        raise ConfigError(f"no dask worker started within {timeout:g} s from the {settings['jobs']} {kind.upper()} "
                          f"job{'s' if settings['jobs'] != 1 else ''} submitted to {_where(kind, settings)}; check the "
                          f"jobs with '{status} -u {user}'{hint}, or raise config cluster.{kind}.wait-timeout.")
    if count < expected:
        warnings.warn(f"only {count} of {expected} dask workers started within {timeout:g} s on {_where(kind, settings)}; "
                      f"running on those (raise config cluster.{kind}.wait-timeout to wait longer).",
                      PerformanceWarning, stacklevel=2)
    return count


def cancel_jobs(kind: str, job_ids: list[str]) -> None:
    """Cancel batch jobs by id (``scancel`` / ``qdel``), quietly: jobs already gone are not an error."""
    if not job_ids:
        return
    command = {"slurm": "scancel", "pbs": "qdel", "sge": "qdel"}[kind]
    if shutil.which(command) is None:
        return
    try:
        subprocess.run([command, *job_ids], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.SubprocessError):
        pass


def _close(kind: str, cluster, client) -> None:
    """Close the client and the cluster (cancelling its jobs), then cancel by id any job the close missed."""
    ids = _job_ids(cluster)
    with contextlib.suppress(Exception):
        if client is not None:
            client.close(timeout=10)
    with contextlib.suppress(Exception):
        cluster.close(timeout=30)
    cancel_jobs(kind, ids)


@contextlib.contextmanager
def start_jobqueue_cluster(kind: str) -> Iterator:
    """Start a dask-jobqueue cluster of config ``cluster.<kind>.jobs`` batch jobs and yield a client of it.

    Parameters
    ----------
    kind : {"slurm", "pbs", "sge"}

    Yields
    ------
    distributed.Client
        Connected once the jobs' workers have (see :func:`wait_for_workers`).
        On exit (normal, error or interrupt) the client and cluster are
        closed and every job is cancelled.

    Raises
    ------
    ConfigError
        dask-jobqueue missing, the submit command missing, settings refused by
        dask-jobqueue or the batch system, or no worker in time.
    """
    settings = kind_settings(kind)
    check_log_directory(kind, settings)
    cls = jobqueue_class(kind)
    submit = KINDS[kind][1]
    if shutil.which(submit) is None:
        raise ConfigError(f"--scheduler {kind} submits batch jobs with {submit}, which is not on PATH here; run wideml "
                          f"on a machine that can submit {kind.upper()} jobs (a login node), or choose another scheduler.")
    kwargs = cluster_kwargs(kind, settings)
    with cluster_scratch() as scratch:  # the scheduler's dask-scratch-space and the job scripts: removed on exit
        try:
            with dask.config.set({"temporary-directory": scratch}):
                cluster = cls(job_cls=job_class(cls, scratch), **kwargs)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"dask-jobqueue refused the {kind} settings ({_first_line(exc)}); check config "
                              f"cluster.{kind}.") from None
        except OSError as exc:  # e.g. jobqueue.<kind>.log-directory from dask-jobqueue's own config
            raise ConfigError(f"cannot start the {kind} cluster ({exc.strerror or exc}: {exc.filename or ''}); check "
                              f"config cluster.{kind}.log-directory and jobqueue.{kind}.log-directory.") from None
        client = None
        try:
            _submit_now(cluster, kind, settings["jobs"])
            from distributed import Client  # heavy (most of a second): a cluster is starting anyway

            client = Client(cluster, set_as_default=False)
            expected = settings["jobs"] * int(getattr(cluster._dummy_job, "worker_processes", 1) or 1)
            wait_for_workers(client, expected, float(settings["wait-timeout"]), kind, settings)
            ids = _job_ids(cluster)
            client._wideml_jobs = (f"{len(ids)} {kind.upper()} job{'s' if len(ids) != 1 else ''} "
                                   f"({', '.join(ids)}) on {_where(kind, settings)}")
            client._wideml_dashboard = bool(kwargs["scheduler_options"].get("dashboard"))
            yield client
        finally:
            _close(kind, cluster, client)


__all__ = ["FALLBACK_CORES", "FALLBACK_MEMORY", "JOBQUEUE_KINDS", "cancel_jobs", "check_log_directory", "cluster_kwargs",
           "job_class", "jobqueue_class", "refusal_sentence", "start_jobqueue_cluster", "wait_for_workers"]
