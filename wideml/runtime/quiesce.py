"""Wait until the tasks still running for this process have stopped writing.

When a computation fails or is interrupted, dask raises in the calling thread
at once, while the tasks already running on its thread pool (or on a cluster's
workers) go on until they finish, writing their chunks. Removing a partial
output before they stop lets them re-create it behind our back; so every
clean-up first calls :func:`wait_for_running_tasks`.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import dask.config
import dask.threaded as threaded


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


def _wait_for_zarr_io(timeout: float) -> None:
    """Wait (at most ``timeout`` s) until zarr's own IO thread has finished the writes still running on it.

    zarr 3 runs its reads and writes as coroutines on a background event loop; an
    interrupt in the calling thread leaves them running, and a chunk write then
    re-creates the folders above it (a removed partial output, without its owner
    record) after the clean-up.
    """
    if "zarr" not in sys.modules:
        return
    try:
        from zarr.core import sync as zarr_sync

        loop = zarr_sync.loop[0]
    except Exception:  # noqa: BLE001 - another zarr layout: nothing to wait for that we can see
        return
    if loop is None or not loop.is_running():
        return
    async def drain() -> None:
        me = asyncio.current_task()
        others = [task for task in asyncio.all_tasks() if task is not me]
        if others:
            await asyncio.wait(others, timeout=timeout)

    try:
        asyncio.run_coroutine_threadsafe(drain(), loop).result(timeout + 1.0)
    except Exception:  # noqa: BLE001 - a loop that cannot answer has nothing left to wait for
        pass


def wait_for_running_tasks(timeout: float = 30.0) -> None:
    """Return once the tasks this process started have stopped (at most ``timeout`` s on a cluster or zarr's IO thread)."""
    _stop_local_pools()
    _wait_for_cluster(timeout)
    _wait_for_zarr_io(min(timeout, 10.0))
