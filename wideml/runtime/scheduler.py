"""Choose where dask graphs run: threads, processes, a LocalCluster or a remote scheduler."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import dask

from wideml.exceptions import ConfigError

SCHEDULER_HELP = "threads, processes, sync, local:N (a LocalCluster of N workers on 127.0.0.1) or tcp://HOST:PORT"
_LOCAL = re.compile(r"^local:(\d+)$")


@contextlib.contextmanager
def use_scheduler(spec: str | None = None) -> Iterator[str]:
    """Run the dask computations inside the block on the scheduler named by ``spec``.

    Parameters
    ----------
    spec : str, optional
        ``"threads"`` (default, dask's threaded scheduler), ``"processes"``,
        ``"sync"``, ``"local:N"`` (starts a ``dask.distributed.LocalCluster`` of
        N single-threaded worker processes bound to 127.0.0.1 and stops it on
        exit) or a scheduler address ``"tcp://HOST:PORT"``. ``None`` reads
        ``wideml.scheduler`` from the config.

    Yields
    ------
    str
        The resolved scheduler name.
    """
    from wideml.runtime.config import config_value

    spec = str(spec or config_value("scheduler")).strip()
    if spec == "processes":
        # one worker pool for the whole block (dask would otherwise start a new pool per compute)
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

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
        from distributed import Client, LocalCluster

        with LocalCluster(
            n_workers=n_workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True
        ) as cluster, Client(cluster) as client, dask.config.set(scheduler=client):
            yield spec
        return
    if spec.startswith(("tcp://", "tls://", "inproc://")):
        from distributed import Client

        check_address(spec)
        try:
            client = Client(spec, timeout="3s")
        except (ValueError, TypeError) as exc:  # e.g. tls:// without distributed's TLS settings
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
            raise ConfigError(f"cannot connect to the dask scheduler at {spec} ({reason}); check the address and, "
                              "for tls://, distributed's TLS settings.") from None
        except (OSError, TimeoutError):
            raise ConfigError(
                f"cannot reach a dask scheduler at {spec}; start one with 'dask scheduler' and 'dask worker {spec}', "
                "or check the address."
            ) from None
        try:
            with dask.config.set(scheduler=client):
                yield spec
        finally:
            client.close()
        return
    raise ConfigError(f"unknown scheduler {spec!r}; use {SCHEDULER_HELP}.")


_ADDRESS = re.compile(r"^(tcp|tls)://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d+)/?$")


def check_address(spec: str) -> None:
    """Refuse a scheduler address that is not ``tcp://HOST:PORT`` (or tls://, inproc://) with one sentence.

    Raises
    ------
    ConfigError
        If the host or the port is missing or malformed.
    """
    if spec.startswith("inproc://"):
        return
    match = _ADDRESS.match(spec)
    if match is None:
        scheme, _, rest = spec.partition("://")
        hint = f"{scheme}://HOST:PORT, e.g. {scheme}://127.0.0.1:8786 ('dask scheduler' listens on port 8786 by default)"
        if rest and ":" not in rest.strip("[]"):
            raise ConfigError(f"scheduler address {spec!r} has no port; write it as {hint}.")
        raise ConfigError(f"scheduler address {spec!r} is not of the form {hint}.")
    if not 0 < int(match.group(3)) < 65536:
        raise ConfigError(f"scheduler address {spec!r} has port {match.group(3)}, outside 1-65535; check the address.")


def active_client():
    """The dask.distributed client in use, or None for the local schedulers."""
    scheduler = dask.config.get("scheduler", None)
    if scheduler is not None and type(scheduler).__name__ == "Client":
        return scheduler
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None
