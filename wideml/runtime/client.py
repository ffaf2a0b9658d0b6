"""Which dask.distributed client (if any) the next computation runs on.

A leaf of the runtime's scheduler side: the compute entry point
(:mod:`wideml.runtime.compute`), the cluster checks
(:mod:`wideml.runtime.cluster_check`) and the scheduler choice
(:mod:`wideml.runtime.scheduler`) all ask :func:`active_client`, and it asks
none of them. dask.distributed is imported only when a default client may
exist (it takes most of a second to import).

A scheduler with no workers would leave every computation waiting forever:
:func:`active_client` (and :func:`wideml.runtime.scheduler.use_scheduler`)
first wait for a worker, at most config ``cluster.wait-timeout`` seconds
(default 60), then refuse in one sentence (:func:`require_workers`).
"""

from __future__ import annotations

import threading
import time
import weakref

import dask

from wideml.exceptions import ConfigError
from wideml.runtime.cluster_settings import wait_timeout
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


def _worker_count(client) -> int | None:
    """How many workers ``client``'s scheduler has now, or None if it cannot answer (closed, connection lost)."""
    try:
        return len(client.nthreads())
    except Exception:  # noqa: BLE001 - a client that cannot answer is left to fail in its own words
        return None


def _cached_worker_count(client) -> int:
    """The workers in the client's last scheduler report (refreshed by the client every few seconds; no round trip)."""
    identity = getattr(client, "_scheduler_identity", None)
    count = identity.get("n_workers") if isinstance(identity, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


def require_workers(client, timeout: float | None = None) -> None:
    """Return once ``client``'s scheduler has a worker; wait at most ``timeout`` seconds, then refuse.

    A computation on a scheduler without workers waits forever, with no
    message; a cluster that is scaling up gets this long to bring its first
    worker. Costs nothing when the client's last report already lists a worker.

    Parameters
    ----------
    client : distributed.Client
    timeout : float, optional
        Seconds; default config ``cluster.wait-timeout`` (60).

    Raises
    ------
    ConfigError
        ``the dask scheduler at ADDRESS has no workers ...``, naming the setting.
    """
    if _cached_worker_count(client) > 0:
        return
    timeout = wait_timeout() if timeout is None else float(timeout)
    deadline = time.monotonic() + timeout
    while True:
        count = _worker_count(client)
        if count is None or count > 0:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    address = getattr(getattr(client, "scheduler", None), "address", None) or "a dask.distributed cluster"
    raise ConfigError(f"the dask scheduler at {address} has no workers (none connected within {timeout:g} s); start "
                      f"workers for it (e.g. dask worker {address}) or scale its cluster, or raise config "
                      "cluster.wait-timeout to wait longer.")


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
    through one client of its own (:func:`client_for`). A client whose
    scheduler has no worker is waited for (:func:`require_workers`).

    Returns
    -------
    distributed.Client or None

    Raises
    ------
    ConfigError
        If the scheduler still has no worker after config ``cluster.wait-timeout`` seconds.
    """
    client = _find_client()
    if client is not None:
        require_workers(client)
    return client


def _find_client():
    """:func:`active_client`'s choice, without the wait for a worker."""
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


__all__ = ["LOCAL_SCHEDULERS", "active_client", "client_for", "configured_object", "is_client", "is_cluster",
           "require_workers"]
