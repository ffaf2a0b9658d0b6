"""Which dask.distributed client (if any) the next computation runs on.

A leaf of the runtime's scheduler side: the compute entry point
(:mod:`wideml.runtime.compute`), the cluster checks
(:mod:`wideml.runtime.cluster_check`) and the scheduler choice
(:mod:`wideml.runtime.scheduler`) all ask :func:`active_client`, and it asks
none of them. dask.distributed is imported only when a default client may
exist (it takes most of a second to import).
"""

from __future__ import annotations

import dask

from wideml.runtime.nested import in_worker_task


#: dask's names of the schedulers that run in this process (or its own process pool).
LOCAL_SCHEDULERS = frozenset(
    {"threads", "threading", "sync", "synchronous", "single-threaded", "processes", "multiprocessing"}
)


def active_client():
    """The dask.distributed client wideml computes on, or None for the local schedulers.

    An explicit local choice wins: when dask's ``scheduler`` setting names a
    local scheduler (``threads``, ``sync``, ``processes``, e.g. from
    :func:`wideml.runtime.scheduler.use_scheduler`), a default
    ``distributed.Client`` is ignored. Inside a dask.distributed worker task
    the answer is always None: nested work runs in that task
    (:mod:`wideml.runtime.nested`), never on the cluster it belongs to.

    Returns
    -------
    distributed.Client or None
    """
    if in_worker_task():
        return None
    scheduler = dask.config.get("scheduler", None)
    if scheduler is not None and type(scheduler).__name__ == "Client":
        return scheduler
    if isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS:
        return None
    try:
        from distributed import default_client  # heavy (most of a second): only when a default client may exist

        return default_client()
    except (ImportError, ValueError):
        return None


__all__ = ["LOCAL_SCHEDULERS", "active_client"]
