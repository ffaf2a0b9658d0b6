"""``--scheduler local:N``: a private dask.distributed LocalCluster on 127.0.0.1, quiet and on free ports.

Two runs may overlap on one machine: the scheduler and the workers listen on
ports the system picks, on 127.0.0.1 only, and no dashboard is started unless
config ``wideml.dashboard`` asks for one (``true`` for a free port, or
``HOST:PORT``), so nothing competes for dask's default port 8787.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from wideml.exceptions import ConfigError


def dashboard_address() -> str | None:
    """The dashboard address asked for by config ``wideml.dashboard``, or None for no dashboard.

    Raises
    ------
    ConfigError
        If the setting is neither a boolean nor ``HOST:PORT``.
    """
    from wideml.runtime.config import config_value, parse_bool

    value = config_value("dashboard")
    if value in (None, "") or str(value).strip().lower() in ("true", "false", "yes", "no", "on", "off", "0", "1"):
        return "127.0.0.1:0" if value not in (None, "") and parse_bool(value, "dashboard") else None
    text = str(value).strip()
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"dashboard {value!r} is neither true/false nor HOST:PORT; write e.g. false, true or 127.0.0.1:8787.")
    return f"{host or '127.0.0.1'}:{port}"


@contextlib.contextmanager
def start_local_cluster(n_workers: int) -> Iterator:
    """Start a LocalCluster of ``n_workers`` single-threaded worker processes and yield a client of it.

    Parameters
    ----------
    n_workers : int
        Worker processes (one thread each).

    Yields
    ------
    distributed.Client
        Connected to the cluster; cluster and client are closed on exit.
    """
    from distributed import Client, LocalCluster

    dashboard = dashboard_address()
    with LocalCluster(
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
    ) as cluster, Client(cluster) as client:
        client._wideml_dashboard = dashboard is not None  # describe_scheduler() prints the link
        yield client
