"""The bound on ``local:N``: at most :data:`WORKERS_PER_CORE` worker processes per usable core.

More only adds processes that compete for the same cores and memory
(``local:1000`` on 2 cores did not finish starting in 120 s). The one check is
shared by the config (:func:`wideml.runtime.config.check_setting`, so
``wideml.config.set(scheduler="local:999")`` is refused at once) and by the
scheduler that starts the cluster (:func:`wideml.runtime.scheduler.use_scheduler`,
CLI ``--scheduler``).
"""

from __future__ import annotations

import os

from wideml.exceptions import ConfigError

#: Most worker processes ``local:N`` may start per usable core.
WORKERS_PER_CORE = 4


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_worker_count(n_workers: int, spec: str | None = None) -> None:
    """Refuse a LocalCluster of more than :data:`WORKERS_PER_CORE` worker processes per usable core, in one sentence.

    Parameters
    ----------
    n_workers : int
        The N of ``local:N``.
    spec : str, optional
        The scheduler as the user wrote it (for the message).

    Raises
    ------
    ConfigError
        If ``n_workers`` is above the bound.
    """
    cores = usable_cores()
    bound = WORKERS_PER_CORE * cores
    if n_workers > bound:
        raise ConfigError(f"scheduler {spec or f'local:{n_workers}'!r} asks for {n_workers} worker processes, but this machine "
                          f"has {cores} usable core{'' if cores == 1 else 's'}; use local:N with N at most {bound} "
                          f"(local:{cores}, one single-threaded worker per core, is usually fastest).")


__all__ = ["WORKERS_PER_CORE", "check_worker_count", "usable_cores"]
