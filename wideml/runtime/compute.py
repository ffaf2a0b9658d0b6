"""The single place where wideml triggers dask computation, with a progress bar."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import dask
from dask.diagnostics import ProgressBar

from wideml.runtime.client import active_client
from wideml.runtime.cluster_check import check_graph
from wideml.runtime.config import thread_count
from wideml.runtime.nested import compute_in_task, in_worker_task
from wideml.runtime.progress import cluster_progress, progress_enabled
from wideml.runtime.remote_check import check_remote_stores
from wideml.runtime.scratch import release


def compute(*collections: Any, label: str = "pass") -> tuple:
    """Compute dask collections on the active scheduler, showing a progress bar.

    Parameters
    ----------
    *collections : dask collections or delayed objects
        Everything one pass needs, computed together so shared inputs are read once.
    label : str
        Name of the pass, printed in front of the progress bar.

    Returns
    -------
    tuple
        The computed values, in order.

    Notes
    -----
    Inside a dask.distributed worker task (a fit submitted to a cluster, a
    grid search under joblib's dask backend) the graph runs in that task on
    dask's synchronous scheduler, without a progress bar
    (:mod:`wideml.runtime.nested`). Progress bars always go to stderr.

    Raises
    ------
    StoreError
        On a dask.distributed scheduler, if a worker does not see a store the
        graph reads (:mod:`wideml.runtime.cluster_check`).
    """
    if in_worker_task():  # fitted inside a dask.distributed task: run here, never wait on the cluster (see nested.py)
        return compute_in_task(collections)
    show = progress_enabled()
    client = active_client()
    if client is not None:
        check_graph(client, collections)  # the workers must see the stores this pass reads (asked once per store)
        check_remote_stores(client, collections)  # ... and read those on object stores (backend, credentials)
        futures = client.compute(list(collections))
        if show:
            cluster_progress(client, futures, label)  # on stderr: stdout carries the command's output
        return tuple(client.gather(futures))
    try:
        with _one_blas_thread_per_task():
            if show:
                print(f"[wideml] {label}", file=sys.stderr)
                with ProgressBar(out=sys.stderr, dt=0.5):
                    return dask.compute(*collections, **_local_kwargs())
            return dask.compute(*collections, **_local_kwargs())
    finally:
        release()  # the worker threads' chunk-sized scratch buffers


def _local_kwargs() -> dict:
    """num_workers for the threaded scheduler (config ``wideml.threads``); nothing for other schedulers."""
    if dask.config.get("scheduler", "threads") not in ("threads", "threading", None):
        return {}
    return {"num_workers": thread_count()}


def _one_blas_thread_per_task():
    """Under the threaded scheduler, dask already runs one task per core: keep BLAS single-threaded.

    Otherwise every task's matrix product would start its own pool of BLAS
    threads and the cores would be oversubscribed (measured: about 1.7x slower
    Gram passes on 2 cores).
    """
    if dask.config.get("scheduler", "threads") not in ("threads", "threading", None):
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits  # third-party, loaded by the first threaded pass only

    return threadpool_limits(1, user_api="blas")
