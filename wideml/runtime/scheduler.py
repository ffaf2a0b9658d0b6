"""Choose where dask graphs run: threads, processes, a LocalCluster or a remote scheduler.

:func:`active_client` (from :mod:`wideml.runtime.client`) and :func:`check_address` (from
:mod:`wideml.runtime.addresses`) are importable from here too; they live in those leaves so the
config checks and the compute entry point can use them without importing the scheduler choice.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import dask

from wideml.exceptions import ConfigError
from wideml.runtime.addresses import check_address
from wideml.runtime.client import LOCAL_SCHEDULERS, active_client, client_for, is_client, is_cluster, require_workers
from wideml.runtime.cluster_check import check_workers
from wideml.runtime.config import config_value, thread_count
from wideml.runtime.jobqueue import JOBQUEUE_KINDS, start_jobqueue_cluster
from wideml.runtime.local_cluster import check_worker_count, start_local_cluster
from wideml.runtime.progress import progress_enabled
from wideml.runtime.remote import connect


SCHEDULER_HELP = ("threads, processes, sync, local:N (a LocalCluster of N workers on 127.0.0.1), tcp://HOST:PORT, "
                  "tls://HOST:PORT, or slurm, pbs, sge (batch jobs through dask-jobqueue, settings in config cluster.KIND)")
_LOCAL = re.compile(r"^local:(\d+)$")


@contextlib.contextmanager
def use_scheduler(spec=None) -> Iterator[str]:
    """Run the dask computations inside the block on the scheduler named by ``spec``.

    Parameters
    ----------
    spec : str, distributed.Client or cluster object, optional
        ``"threads"`` (default, dask's threaded scheduler), ``"processes"``,
        ``"sync"``, ``"local:N"`` (starts a ``dask.distributed.LocalCluster`` of
        N single-threaded worker processes bound to 127.0.0.1 on free ports,
        with no dashboard unless config ``wideml.dashboard`` asks, its scratch
        space in a work folder it removes, and stops it on exit; N is at most
        4 per usable core) or a scheduler address ``"tcp://HOST:PORT"`` /
        ``"tls://HOST:PORT"`` (TLS from dask's ``distributed.comm.tls.*``
        settings), or ``"slurm"``, ``"pbs"``, ``"sge"``: a dask-jobqueue
        cluster of config ``cluster.KIND.jobs`` batch jobs, waited for
        (config ``cluster.KIND.wait-timeout``) and cancelled on exit, also
        on an error or an interrupt (:mod:`wideml.runtime.jobqueue`). A
        ``distributed.Client``, or a cluster object (anything with a
        ``scheduler_address``: ``LocalCluster``, ``SLURMCluster``, ...), runs
        the block on that cluster; the caller's client and cluster stay open.
        A running scheduler (an address, a Client or a cluster object) with
        no worker is waited for, at most config ``cluster.wait-timeout``
        seconds (60), then refused. ``None`` reads ``wideml.scheduler`` from
        the config (a name, or a Client or cluster set with
        ``wideml.config.set``). An explicit local
        choice wins over a default ``distributed.Client``.

    Yields
    ------
    str
        The resolved scheduler name (a cluster's scheduler address for a Client or cluster object).

    Raises
    ------
    ConfigError
        For an unknown name, a malformed address, a batch scheduler whose
        settings are unusable, whose package (``wideml[hpc]``) is missing or
        whose workers do not arrive in time, or a running scheduler that
        still has no worker after ``cluster.wait-timeout``.
    StoreError
        If a worker cannot import what wideml needs (:func:`wideml.runtime.cluster_check.check_workers`).
    """
    if spec is None:
        spec = config_value("scheduler")
    if is_client(spec) or is_cluster(spec):
        client = client_for(spec)
        require_workers(client)
        check_workers(client)
        with dask.config.set(scheduler=client):
            yield str(getattr(client.scheduler, "address", None) or spec.scheduler_address)
        return
    spec = str(spec).strip()
    if spec == "processes":
        # one worker pool for the whole block (dask would otherwise start a new pool per compute)
        with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")) as pool, \
                dask.config.set(scheduler="processes", pool=pool):
            yield spec
        return
    if spec in ("threads", "sync", "synchronous"):
        name = "synchronous" if spec.startswith("sync") else spec
        with dask.config.set(scheduler=name):
            yield spec
        return
    match = _LOCAL.match(spec)
    if match:
        n_workers = int(match.group(1))
        if n_workers < 1:
            raise ConfigError(f"scheduler {spec!r} asks for no workers; use local:N with N >= 1.")
        check_worker_count(n_workers, spec)  # before any process starts

        with start_local_cluster(n_workers) as client, dask.config.set(scheduler=client):
            yield spec
        return
    if spec.startswith(("tcp://", "tls://", "inproc://")):
        client = connect(spec)
        try:
            require_workers(client)
            check_workers(client)
            with dask.config.set(scheduler=client):
                yield spec
        finally:
            client.close()
        return
    if spec in JOBQUEUE_KINDS:
        with start_jobqueue_cluster(spec) as client:
            check_workers(client)  # the jobs' workers import wideml (the client's version) before any pass
            with dask.config.set(scheduler=client):
                yield spec
        return
    raise ConfigError(f"unknown scheduler {spec!r}; use {SCHEDULER_HELP}.")


def describe_scheduler() -> str:
    """One phrase naming the scheduler the next computation runs on, e.g. ``"threads (3 threads)"``.

    Returns
    -------
    str
        ``"threads (N threads)"``, ``"sync (1 thread)"``, ``"processes (N processes)"``
        or ``"ADDRESS (W workers, T threads)"`` for a dask.distributed cluster
        (with its dashboard link when one is running).
    """
    client = active_client()
    if client is not None:
        try:
            nthreads = client.nthreads()
            where = f"{client.scheduler.address} ({len(nthreads)} workers, {sum(nthreads.values())} threads)"
        except Exception:  # noqa: BLE001 - a client that cannot answer is still named
            where = str(getattr(client.scheduler, "address", "a dask.distributed cluster"))
        if getattr(client, "_wideml_dashboard", False):
            where += f", dashboard {client.dashboard_link}"
        jobs = getattr(client, "_wideml_jobs", None)  # a batch-scheduler cluster: say which jobs it runs on
        if jobs:
            where += f", {jobs}"
        return where
    name = dask.config.get("scheduler", None) or "threads"
    if name in ("sync", "synchronous", "single-threaded"):
        return "sync (1 thread)"
    if name in ("processes", "multiprocessing"):
        pool = dask.config.get("pool", None)
        count = getattr(pool, "_max_workers", None) or os.cpu_count() or 1
        return f"processes ({count} processes)"
    return f"threads ({thread_count()} threads)"


def announce_scheduler(explicit: bool = False) -> None:
    """Print ``wideml: scheduler ...`` (:func:`describe_scheduler`) on stderr.

    Printed when the scheduler was chosen explicitly (``explicit``: the
    ``--scheduler`` option), when it is a dask.distributed cluster (work leaves
    this process: say where it goes), or with the progress bars (``--progress``,
    or ``auto`` on a terminal). A default threaded run with ``--no-progress``
    keeps stderr to warnings and the one error sentence. The line is not an
    error line: a refused run still prints exactly one ``wideml: error:`` line.

    Parameters
    ----------
    explicit : bool, default False
        The user named the scheduler.
    """
    if explicit or active_client() is not None or progress_enabled():
        print(f"wideml: scheduler {describe_scheduler()}", file=sys.stderr)


__all__ = ["LOCAL_SCHEDULERS", "SCHEDULER_HELP", "active_client", "announce_scheduler", "check_address",
           "describe_scheduler", "use_scheduler"]
