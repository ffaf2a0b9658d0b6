"""Which dask.distributed client (if any) the next computation runs on.

A leaf of the runtime's scheduler side: the compute entry point
(:mod:`wideml.runtime.compute`), the cluster checks
(:mod:`wideml.runtime.cluster_check`) and the scheduler choice
(:mod:`wideml.runtime.scheduler`) all ask :func:`active_client`, and it asks
none of them. dask.distributed is imported only when a default client may
exist (it takes most of a second to import).
"""

from __future__ import annotations

import threading
import weakref

import dask

from wideml.runtime.nested import in_worker_task


#: dask's names of the schedulers that run in this process (or its own process pool).
LOCAL_SCHEDULERS = frozenset(
    {"threads", "threading", "sync", "synchronous", "single-threaded", "processes", "multiprocessing"}
)


#: Clients this module opened on cluster objects given as the scheduler: cluster -> client (closed with the cluster's own close).
_CLUSTER_CLIENTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


def is_client(obj) -> bool:
    """Whether ``obj`` is a ``distributed.Client`` (checked by name: dask.distributed is not imported for this)."""
    return obj is not None and not isinstance(obj, str) and type(obj).__name__ == "Client" and hasattr(obj, "compute")


def is_cluster(obj) -> bool:
    """Whether ``obj`` is a dask cluster object: anything with a ``scheduler_address`` (LocalCluster, SLURMCluster, ...)."""
    return obj is not None and not isinstance(obj, str) and not is_client(obj) and hasattr(obj, "scheduler_address")


def client_for(obj):
    """The ``distributed.Client`` computations given ``obj`` as their scheduler run on.

    Parameters
    ----------
    obj : distributed.Client or cluster object
        A client is returned as it is. For a cluster (anything with a
        ``scheduler_address``) one client is opened per cluster, not made the
        default client, and kept while the cluster lives; the caller's cluster
        is never closed here.

    Returns
    -------
    distributed.Client
    """
    if is_client(obj):
        return obj
    with _clients_lock:
        client = _CLUSTER_CLIENTS.get(obj)
        if client is not None and getattr(client, "status", "running") in ("running", "connecting", "newly-created"):
            return client
        from distributed import Client  # heavy (most of a second): only when a cluster object is given

        client = Client(obj, set_as_default=False)
        _CLUSTER_CLIENTS[obj] = client
        return client


def configured_object():
    """The Client or cluster object set as ``wideml.scheduler`` (``wideml.config.set(scheduler=cluster)``), else None."""
    value = dask.config.get("wideml.scheduler", None)
    return value if is_client(value) or is_cluster(value) else None


def active_client():
    """The dask.distributed client wideml computes on, or None for the local schedulers.

    In order: inside a dask.distributed worker task, None (nested work runs
    in that task, :mod:`wideml.runtime.nested`, never on the cluster it
    belongs to); dask's ``scheduler`` setting when it holds a Client or a
    cluster object (``dask.config.set(scheduler=cluster)``); None when it
    names a local scheduler (``threads``, ``sync``, ``processes``, e.g. from
    :func:`wideml.runtime.scheduler.use_scheduler`: an explicit local choice
    wins over a default client); ``wideml.scheduler`` when it holds a Client
    or a cluster object (``wideml.config.set(scheduler=client)``); else
    dask.distributed's default client, if any. A cluster object is reached
    through one client of its own (:func:`client_for`).

    Returns
    -------
    distributed.Client or None
    """
    if in_worker_task():
        return None
    scheduler = dask.config.get("scheduler", None)
    if is_client(scheduler) or is_cluster(scheduler):
        return client_for(scheduler)
    if isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS:
        return None
    configured = configured_object()
    if configured is not None:
        return client_for(configured)
    try:
        from distributed import default_client  # heavy (most of a second): only when a default client may exist

        return default_client()
    except (ImportError, ValueError):
        return None


__all__ = ["LOCAL_SCHEDULERS", "active_client", "client_for", "configured_object", "is_client", "is_cluster"]
