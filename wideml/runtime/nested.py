"""Work started from inside a dask task: run it in that task, never wait on the cluster it occupies.

A wideml estimator fitted inside a dask.distributed task (``client.submit(fit)``,
``GridSearchCV`` under joblib's dask backend) used to send its passes back to the
same cluster and wait for them while holding a worker thread: with every thread
held by such waiting tasks, nothing can run and the cluster hangs.

Two ways out exist. ``distributed.worker_client()`` secedes the task from the
worker's thread pool and submits the inner graph to the cluster; it needs the
task to reach the scheduler again, raises the worker's thread count with every
nested fit, and a lost outer task leaves its inner graphs behind. Running the
inner graph **in the task itself**, on dask's synchronous scheduler, needs
nothing from the cluster: the task keeps the one worker thread it was given
(which is what the worker accounted for, in threads and in memory), cannot
wait on anyone, and when its worker dies dask simply reruns the whole task.
The outer level (the submitted tasks, the grid points) already spreads the work
over the cluster, so wideml takes the second way.

Inside a task of dask's local threaded scheduler nothing needs to change:
dask gives every calling thread a pool of its own, so a nested compute cannot
deadlock.
"""

from __future__ import annotations

import sys

import dask


def in_worker_task() -> bool:
    """True when called from a task running on a dask.distributed worker (in the task's own thread).

    Cheap when dask.distributed was never imported (nothing to detect then).
    """
    if "distributed" not in sys.modules:
        return False
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def compute_in_task(collections: tuple) -> tuple:
    """Compute ``collections`` inside the current worker task, on dask's synchronous scheduler.

    The scheduler is passed to this one call (never set in dask's config,
    which every task of the worker process shares).

    Parameters
    ----------
    collections : tuple of dask collections or delayed objects
        Everything one pass needs.

    Returns
    -------
    tuple
        The computed values, in order.
    """
    return dask.compute(*collections, scheduler="sync")
