"""Wait until the tasks still running for this process have stopped writing.

When a computation fails or is interrupted, dask raises in the calling thread
at once, while the tasks already running on its thread pool (or on a cluster's
workers) go on until they finish, writing their chunks. Removing a partial
output before they stop lets them re-create it behind our back; so every
clean-up first calls :func:`wait_for_running_tasks`.
"""

from __future__ import annotations

import threading
import time


#: Whether a clean-up may cancel every future of the active client (set by the CLI, which owns its client;
#: an API caller's client may hold futures of its own).
_CANCEL_CLIENT_FUTURES = False


def cancel_client_futures_on_failure(flag: bool = True) -> None:
    """Let clean-ups cancel all futures of the active dask.distributed client (for a process that owns its client)."""
    global _CANCEL_CLIENT_FUTURES
    _CANCEL_CLIENT_FUTURES = bool(flag)


def _stop_local_pools() -> None:
    """Shut down (waiting for running tasks, cancelling queued ones) the dask thread pools this thread uses.

    The pools are dropped from dask's registry afterwards, so the next
    threaded computation starts a fresh one.
    """
    try:
        import dask.threaded as threaded
    except ImportError:  # pragma: no cover - dask is a dependency
        return
    current = threading.current_thread()
    lock = getattr(threaded, "pools_lock", None)
    if lock is None:
        return
    with lock:
        executors = list(getattr(threaded, "pools", {}).pop(current, {}).values())
        if current is threading.main_thread() and getattr(threaded, "default_pool", None) is not None:
            executors.append(threaded.default_pool)
            threaded.default_pool = None
    for executor in executors:
        try:
            executor.shutdown(wait=True, cancel_futures=True)
        except Exception:  # noqa: BLE001 - a pool that cannot shut down has nothing running either
            pass


def _active_client():
    """The dask.distributed client computations go to (the configured scheduler, else the default client), or None."""
    import dask.config

    scheduler = dask.config.get("scheduler", None)
    if hasattr(scheduler, "processing") and hasattr(scheduler, "cancel"):
        return scheduler
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _wait_for_cluster(timeout: float) -> None:
    """On an active dask.distributed client, cancel this client's tasks and wait (at most ``timeout`` s) until no worker processes one."""
    client = _active_client()
    if client is None:
        return
    try:  # the interrupted computation's futures: cancel them, so queued tasks never start
        from distributed import Future

        keys = list(getattr(client, "futures", {})) if _CANCEL_CLIENT_FUTURES else []
        if keys:
            client.cancel([Future(key, client) for key in keys], force=True)
    except Exception:  # noqa: BLE001 - then wait for them to finish instead
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            processing = client.processing()
        except Exception:  # noqa: BLE001 - a cluster that cannot answer cannot be waited for
            return
        if not any(processing.values()):
            return
        time.sleep(0.2)


def wait_for_running_tasks(timeout: float = 30.0) -> None:
    """Return once the tasks this process started have stopped (at most ``timeout`` s on a cluster)."""
    _stop_local_pools()
    _wait_for_cluster(timeout)
