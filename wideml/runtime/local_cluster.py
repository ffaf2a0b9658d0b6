"""``--scheduler local:N``: a private dask.distributed LocalCluster on 127.0.0.1, quiet and on free ports.

Two runs may overlap on one machine: the scheduler and the workers listen on
ports the system picks, on 127.0.0.1 only, and no dashboard is started unless
config ``wideml.dashboard`` asks for one (``true`` for a free port, or
``HOST:PORT``), so nothing competes for dask's default port 8787.

The scheduler, nannies and workers keep their ``dask-scratch-space`` in a
folder of their own in wideml's work folder (config ``workdir``, else the system
temporary directory): ``wideml-fit-TOKEN``, claimed with this process's owner
record and removed when the cluster stops, so no ``dask-scratch-space`` is ever
left in the current folder (where :func:`tempfile.gettempdir` falls back to
when no temporary directory is writable). A run killed outright leaves it to the
next run's sweep of abandoned work folders, or to ``wideml clean``.

The worker processes ignore SIGINT (:func:`dask_setup`, run in each of them
as a dask preload): a terminal's Ctrl-C reaches the whole process group, and
workers that took it would each print a traceback while this process stops
them in order (:mod:`wideml.runtime.signals`) and says its one line.

``local:N`` is refused when N exceeds :data:`WORKERS_PER_CORE` worker processes
per usable core: more only adds processes that compete for the same cores and
memory (``local:1000`` on 2 cores did not finish starting in 120 s).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import tempfile
import threading
from collections.abc import Iterator

import dask.config

from wideml.exceptions import ConfigError
from wideml.runtime.config import config_value, parse_bool
from wideml.runtime.owned_names import work_folder_name
from wideml.runtime.ownership import create_claimed
from wideml.runtime.removal import register_scratch, remove_tree, unregister_scratch
from wideml.runtime.worker_bound import WORKERS_PER_CORE, check_worker_count, usable_cores  # noqa: F401  (shared with the config check)


#: The dask preload each ``local:N`` worker process runs (this module: :func:`dask_setup`).
WORKER_PRELOAD = __name__


class _HeartbeatAtShutdown(logging.Filter):
    """Drop a worker's "Failed to communicate with scheduler during heartbeat" traceback.

    When the command stops its cluster, a heartbeat already on its way can
    meet the scheduler's closed connection; the worker then logs an ERROR
    with a traceback. The scheduler lives in the command's own process, so
    this never tells a ``local:N`` user anything.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to communicate with scheduler during heartbeat")


def dask_setup(worker) -> None:
    """dask preload hook, run in each ``local:N`` worker process: ignore SIGINT, drop shutdown noise.

    The command's own process handles the Ctrl-C and then stops the workers;
    a worker left to the default handler raises KeyboardInterrupt in its
    event loop and prints tracebacks. Nothing happens outside a process's
    main thread (a worker run in-process by a test).
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        logging.getLogger("distributed.worker").addFilter(_HeartbeatAtShutdown())


def dashboard_address() -> str | None:
    """The dashboard address asked for by config ``wideml.dashboard``, or None for no dashboard.

    Raises
    ------
    ConfigError
        If the setting is neither a boolean nor ``HOST:PORT``.
    """
    value = config_value("dashboard")
    if value in (None, "") or str(value).strip().lower() in ("true", "false", "yes", "no", "on", "off", "0", "1"):
        return "127.0.0.1:0" if value not in (None, "") and parse_bool(value, "dashboard") else None
    text = str(value).strip()
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"dashboard {value!r} is neither true/false nor HOST:PORT; write e.g. false, true or 127.0.0.1:8787.")
    return f"{host or '127.0.0.1'}:{port}"


def _scratch_parent() -> str:
    """wideml's work folder: config ``workdir``, else the system temporary directory (absolute, symlinks resolved)."""
    workdir = config_value("workdir")
    if isinstance(workdir, str) and workdir.strip():
        return os.path.realpath(os.path.expanduser(workdir))
    return os.path.realpath(tempfile.gettempdir())


@contextlib.contextmanager
def cluster_scratch() -> Iterator[str]:
    """A fresh owned folder ``wideml-fit-TOKEN`` in the work folder for a cluster's scratch files; removed on exit.

    A LocalCluster's scratch space, or a batch-scheduler cluster's scheduler
    scratch space and job scripts (:mod:`wideml.runtime.jobqueue`).

    Yields
    ------
    str
        The folder's absolute path.

    Raises
    ------
    ConfigError
        If the folder cannot be made there.
    """
    parent = _scratch_parent()
    folder = os.path.join(parent, work_folder_name())
    try:
        create_claimed(folder, "work", 0o700)  # the folder and its owner record at once; never an existing folder
    except OSError as exc:
        raise ConfigError(f"cannot make the cluster's scratch folder in {parent} ({exc.strerror or exc}); "
                          "set config workdir (or --workdir) to a writable folder.") from None
    try:
        register_scratch(folder)
        yield folder
    finally:
        remove_tree(folder)
        unregister_scratch(folder)


@contextlib.contextmanager
def start_local_cluster(n_workers: int) -> Iterator:
    """Start a LocalCluster of ``n_workers`` single-threaded worker processes and yield a client of it.

    Parameters
    ----------
    n_workers : int
        Worker processes (one thread each); at most :data:`WORKERS_PER_CORE`
        per usable core.

    Yields
    ------
    distributed.Client
        Connected to the cluster; cluster and client are closed on exit, then
        the cluster's scratch folder (:func:`cluster_scratch`) is removed.

    Raises
    ------
    ConfigError
        If ``n_workers`` is above the bound (before any process starts).
    """
    from distributed import Client, LocalCluster  # heavy (most of a second): only when a local cluster starts

    check_worker_count(n_workers)
    dashboard = dashboard_address()
    with cluster_scratch() as scratch:
        with dask.config.set({"temporary-directory": scratch}):  # the scheduler's and the nannies' scratch space too
            cluster = LocalCluster(
                n_workers=n_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                scheduler_port=0,
                # the scheduler serves HTTP (health, metrics) even without a dashboard: on a free port, never 8787
                dashboard_address=dashboard or "127.0.0.1:0",
                scheduler_kwargs={"dashboard": dashboard is not None},
                worker_dashboard_address=None,
                silence_logs=logging.ERROR,
                local_directory=scratch,
                preload=[WORKER_PRELOAD],  # the workers ignore a Ctrl-C sent to the whole process group
            )
        with cluster, Client(cluster) as client:
            client._wideml_dashboard = dashboard is not None  # describe_scheduler() prints the link
            yield client
