"""Settings of the batch-scheduler clusters (``wideml.cluster.slurm``, ``.pbs``, ``.sge``): defaults and checks.

A leaf of the runtime (it imports only :mod:`wideml.exceptions` and dask's
config): :mod:`wideml.runtime.config` merges :data:`CLUSTER_DEFAULTS` into
wideml's defaults and checks values set by a config file, by the environment
(``DASK_WIDEML__CLUSTER__SLURM__CORES=8``) or by ``wideml.config.set``;
:mod:`wideml.runtime.jobqueue` reads them when ``--scheduler slurm`` starts a
cluster.

Each kind's mapping takes dask-jobqueue's own parameter names (hyphenated, as
in dask-jobqueue's ``jobqueue.yaml``), plus two of wideml's: ``jobs`` (how many
batch jobs to submit, at most :data:`MAX_JOBS`) and ``wait-timeout`` (seconds
to wait for the workers). A setting left null falls back to dask-jobqueue's
config (``jobqueue.slurm.*``), and ``cores`` / ``memory`` then to 1 core and
2 GiB per job.

Beside the kinds, ``cluster.wait-timeout`` (default :data:`WAIT_TIMEOUT`
seconds) is how long wideml waits for a first worker when the scheduler it is
given (``tcp://``, a ``distributed.Client`` or a cluster object) has none
(:func:`wideml.runtime.client.require_workers`).
"""

from __future__ import annotations

from typing import Any

import dask.config
import dask.utils

from wideml.exceptions import ConfigError

#: Batch schedulers wideml starts clusters on (dask-jobqueue's class, submit and status commands).
KINDS = {
    "slurm": ("SLURMCluster", "sbatch", "squeue"),
    "pbs": ("PBSCluster", "qsub", "qstat"),
    "sge": ("SGECluster", "qsub", "qstat"),
}

#: The most batch jobs one run submits (``cluster.<kind>.jobs``): more is a slip (``jobs: 100000`` ran sbatch
#: 10 000 times a minute, and a live cluster would have queued them all); ask for fewer, larger jobs instead.
MAX_JOBS = 1000

#: Default of ``cluster.wait-timeout``: seconds to wait for a first worker of a running scheduler that has none.
WAIT_TIMEOUT = 60

#: The one setting of ``cluster`` that is not a kind's.
_TOP = "wait-timeout"

#: wideml's own defaults for every kind (null: dask-jobqueue's config decides).
_KIND_DEFAULTS: dict[str, Any] = {
    "jobs": 1,
    "cores": None,
    "memory": None,
    "processes": None,
    "walltime": None,
    "queue": None,
    "job-extra-directives": [],
    "log-directory": None,
    "wait-timeout": 300,
}

#: The ``cluster`` config key's default: ``{kind: {setting: value}}`` plus ``wait-timeout``.
CLUSTER_DEFAULTS: dict[str, Any] = {**{kind: dict(_KIND_DEFAULTS) for kind in KINDS}, _TOP: WAIT_TIMEOUT}

_INTS = ("jobs", "cores", "processes", "job-cpu")
_SIZES = ("memory", "job-mem")
_TEXTS = ("walltime", "queue", "account", "project", "resource-spec", "interface", "local-directory", "log-directory",
          "python", "job-name", "shebang")
_LISTS = ("job-extra-directives", "job-directives-skip", "job-script-prologue", "worker-extra-args")
_NUMBERS = ("wait-timeout", "death-timeout")

#: Settings each kind accepts beyond the common ones (dask-jobqueue's class parameters).
_KIND_ONLY = {"slurm": ("account", "job-cpu", "job-mem"), "pbs": ("account", "project", "resource-spec"),
              "sge": ("project", "resource-spec")}
_COMMON = tuple(k for k in (*_INTS, *_SIZES, *_TEXTS, *_LISTS, *_NUMBERS)
                if k not in {"job-cpu", "job-mem", "account", "project", "resource-spec"})


def settings_of(kind: str) -> tuple[str, ...]:
    """The setting names ``wideml.cluster.<kind>`` accepts, sorted."""
    return tuple(sorted((*_COMMON, *_KIND_ONLY[kind])))


def _name(key: Any) -> str:
    return str(key).strip().lower().replace("_", "-")


def check_value(kind: str, key: str, value: Any) -> None:
    """Refuse an unusable value of ``wideml.cluster.<kind>.<key>`` with one sentence naming the setting.

    Raises
    ------
    ConfigError
        If ``kind`` or ``key`` is unknown or ``value`` is unusable.
    """
    kind, key = _name(kind), _name(key)
    if kind not in KINDS:
        raise ConfigError(f"cluster setting {kind!r} names no batch scheduler; use one of {', '.join(KINDS)}.")
    where = f"cluster.{kind}.{key}"
    if key not in settings_of(kind):
        raise ConfigError(f"{where} is not a setting wideml knows; valid settings of cluster.{kind} are "
                          f"{', '.join(settings_of(kind))}.")
    if value is None:
        if key in ("jobs", "wait-timeout"):
            raise ConfigError(f"{where} must be set; write a positive number (default {_KIND_DEFAULTS[key]}).")
        return
    if key in _INTS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{where} must be a positive whole number, got {value!r}.")
        if key == "jobs" and value > MAX_JOBS:
            raise ConfigError(f"{where} {value} is above wideml's bound of {MAX_JOBS} batch jobs per run; ask for fewer, "
                              "larger jobs (more cores and processes per job).")
    elif key in _SIZES:
        try:
            ok = not isinstance(value, bool) and dask.utils.parse_bytes(value) > 0
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise ConfigError(f"{where} {value!r} is not a size; write it like '4GiB' or '16GB'.")
    elif key in _TEXTS:
        if key == "walltime" and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return  # minutes, as the batch systems read a bare number
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where} must be a text such as {'01:00:00' if key == 'walltime' else 'a name or path'}, "
                              f"got {value!r}.")
    elif key in _LISTS:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of texts, e.g. ['--exclusive'], got {value!r}.")
    elif key in _NUMBERS:
        _check_seconds(where, value)


def _check_seconds(where: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ConfigError(f"{where} must be a positive number of seconds, got {value!r}.")


def check_cluster(value: Any, where: str = "cluster") -> None:
    """Check a ``cluster`` mapping (``{kind: {setting: value}}`` and ``wait-timeout``, partial mappings allowed).

    Raises
    ------
    ConfigError
        Naming the first unknown kind or setting, or unusable value.
    """
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a mapping such as {{slurm: {{cores: 8, memory: 32GiB, jobs: 4}}}}, got {value!r}.")
    for kind, settings in value.items():
        if _name(kind) == _TOP:
            if settings is None:
                raise ConfigError(f"{where}.{_TOP} must be set; write a positive number of seconds (default {WAIT_TIMEOUT}).")
            _check_seconds(f"{where}.{_TOP}", settings)
            continue
        if _name(kind) not in KINDS:
            raise ConfigError(f"{where} names {kind!r}, not a batch scheduler wideml starts; use one of {', '.join(KINDS)}.")
        if not isinstance(settings, dict):
            raise ConfigError(f"{where}.{_name(kind)} must be a mapping of settings such as {{cores: 8}}, got {settings!r}.")
        for key, item in settings.items():
            check_value(kind, key, item)


def check_path(parts: list[str], value: Any) -> None:
    """Check a value set at ``cluster.<parts...>`` (``["slurm", "cores"]``, ``["slurm"]`` or ``[]``)."""
    if not parts:
        check_cluster(value)
    elif len(parts) == 1:
        check_cluster({parts[0]: value})
    elif len(parts) == 2:
        check_value(parts[0], parts[1], value)
    else:
        raise ConfigError(f"cluster.{'.'.join(parts)} is not a setting; write cluster.KIND.SETTING, e.g. cluster.slurm.cores.")


def check_key(parts: list[str]) -> None:
    """Refuse a key under ``cluster`` that names no kind or setting (``["slurm", "cores"]`` is ``cluster.slurm.cores``).

    Raises
    ------
    ConfigError
        If a part is unknown, or the key is deeper than ``cluster.KIND.SETTING``.
    """
    if len(parts) > 2:
        raise ConfigError(f"cluster.{'.'.join(parts)} is not a setting; write cluster.KIND.SETTING, e.g. cluster.slurm.cores.")
    if [_name(p) for p in parts] == [_TOP]:  # cluster.wait-timeout
        return
    if parts and _name(parts[0]) not in KINDS:
        raise ConfigError(f"cluster.{parts[0]} names no batch scheduler wideml starts; use one of {', '.join(KINDS)}.")
    if len(parts) == 2 and _name(parts[1]) not in settings_of(_name(parts[0])):
        raise ConfigError(f"cluster.{_name(parts[0])}.{_name(parts[1])} is not a setting wideml knows; valid settings of "
                          f"cluster.{_name(parts[0])} are {', '.join(settings_of(_name(parts[0])))}.")


def flatten(value: dict[str, Any], prefix: str = "wideml.cluster") -> dict[str, Any]:
    """``{"slurm": {"cores": 8}}`` as dotted dask.config keys (``{"wideml.cluster.slurm.cores": 8}``), so a partial mapping merges."""
    out = {}
    for kind, settings in value.items():
        if isinstance(settings, dict):
            for key, item in settings.items():
                out[f"{prefix}.{_name(kind)}.{_name(key)}"] = item
        else:
            out[f"{prefix}.{_name(kind)}"] = settings
    return out


def kind_settings(kind: str) -> dict[str, Any]:
    """The current settings of ``wideml.cluster.<kind>`` (defaults merged, keys hyphenated), each checked.

    Raises
    ------
    ConfigError
        If a setting is unknown or unusable (e.g. set through the environment).
    """
    merged = dict(CLUSTER_DEFAULTS[kind])
    whole = dask.config.get("wideml.cluster", None)
    if not isinstance(whole, dict):  # e.g. DASK_WIDEML__CLUSTER=slurm: refused as in a config file, not ignored
        check_cluster(whole)
    current = dask.config.get(f"wideml.cluster.{kind}", None) or {}
    if not isinstance(current, dict):
        check_cluster({kind: current})
    for key, value in current.items():
        merged[_name(key)] = value
    for key, value in merged.items():
        check_value(kind, key, value)
    return merged


def wait_timeout() -> float:
    """``cluster.wait-timeout``: seconds to wait for a first worker of a scheduler that has none (checked).

    Raises
    ------
    ConfigError
        If the value is unusable, or ``cluster`` is not a mapping.
    """
    whole = dask.config.get("wideml.cluster", None)
    if not isinstance(whole, dict):
        check_cluster(whole)
    value = dask.config.get(f"wideml.cluster.{_TOP}", WAIT_TIMEOUT)
    _check_seconds(f"cluster.{_TOP}", value)
    return float(value)


__all__ = ["CLUSTER_DEFAULTS", "KINDS", "MAX_JOBS", "WAIT_TIMEOUT", "check_cluster", "check_key", "check_path",
           "check_value", "flatten", "kind_settings", "settings_of", "wait_timeout"]
