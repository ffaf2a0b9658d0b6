"""Configuration under the ``wideml`` namespace of :mod:`dask.config`."""

from __future__ import annotations

import ast
import difflib
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import dask.config
import psutil
import yaml

from wideml.exceptions import ConfigError, PerformanceWarning
from wideml.runtime.addresses import check_address
from wideml.runtime.cluster_settings import CLUSTER_DEFAULTS, KINDS as JOBQUEUE_KINDS, check_cluster, check_path, flatten
from wideml.runtime.worker_bound import check_worker_count


_DEFAULTS_FILE = Path(__file__).resolve().parent.parent / "wideml.yaml"
with open(_DEFAULTS_FILE) as _f:
    DEFAULTS: dict[str, Any] = yaml.safe_load(_f)["wideml"]
DEFAULTS.setdefault("cluster", CLUSTER_DEFAULTS)  # wideml.cluster.{slurm,pbs,sge} (runtime/cluster_settings.py)
dask.config.update_defaults({"wideml": DEFAULTS})

#: A number, then an optional unit: B, K/M/G/T/P (decimal, with or without B) or Ki/Mi/Gi/Ti/Pi (binary, with or without B).
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?:([kmgtp])(i?)b?|b)?\s*$", re.IGNORECASE)
_POWERS = " kmgtp"

#: The smallest memory budget (``--memory-limit``, config ``memory-limit``) wideml accepts: below it no pass can hold
#: even one feature chunk of a store it writes (32 MiB by default) with its workspace, so a smaller value is a slip
#: (``0``, ``1B``, a forgotten unit).
MEMORY_LIMIT_FLOOR = 64 * 2**20

#: Names under which :func:`parse_bytes` is given the memory budget: these values must reach the floor.
_BUDGET_NAMES = ("--memory-limit", "memory-limit")


def _memory_floor() -> int:
    """:data:`MEMORY_LIMIT_FLOOR`, or in tests the byte count in ``WIDEML_TEST_MEMORY_FLOOR`` (test hook: tiny budgets on tiny data)."""
    hook = os.environ.get("WIDEML_TEST_MEMORY_FLOOR")
    return int(hook) if hook else MEMORY_LIMIT_FLOOR


def _size_text(nbytes: float) -> str:
    for unit, power in (("PiB", 5), ("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if nbytes >= 1024**power:
            return f"{nbytes / 1024**power:g} {unit}"
    return f"{int(nbytes)} byte{'' if nbytes == 1 else 's'}"


def parse_bytes(value: Any, what: str = "size") -> int:
    """Parse ``"32MiB"``, ``"4GB"``, ``"1PB"`` or an integer into a positive number of bytes.

    Units are case-insensitive: B, KB/MB/GB/TB/PB (powers of 1000; the B may
    be left out) and KiB/MiB/GiB/TiB/PiB (powers of 1024); a bare number is
    bytes. A memory budget (``what`` is ``"--memory-limit"`` or
    ``"memory-limit"``) may also be ``N%`` of the RAM and must be at least
    :data:`MEMORY_LIMIT_FLOOR` (:func:`parse_memory_limit`).

    Raises
    ------
    ConfigError
        If the value is not a size, or is not positive.
    """
    if what in _BUDGET_NAMES:
        return parse_memory_limit(value, what)
    return _parse_size(value, what)


def _parse_size(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{what} {value!r} is not a size; write it like '512MiB' or '4GiB'.")
    if isinstance(value, (int, float)):
        nbytes = float(value)
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise ConfigError(f"{what} {value!r} is not a size; write it like '512MiB' or '4GiB'.")
        number, unit, binary = match.groups()
        base = 1024 if binary else 1000
        nbytes = float(number) * base ** (_POWERS.index(unit.lower()) if unit else 0)
    if not nbytes >= 1 or nbytes != nbytes or nbytes == float("inf"):
        raise ConfigError(f"{what} {value!r} is not a positive size; write it like '512MiB' or '4GiB'.")
    return int(nbytes)


#: A share of this machine's RAM: ``60%``.
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")

#: Budgets (in bytes) already warned about as larger than the machine's RAM: each is warned about once.
_WARNED_ABOVE_RAM: set[int] = set()


def _ram_bytes() -> int:
    """This machine's physical RAM in bytes."""
    return int(psutil.virtual_memory().total)


def parse_memory_limit(value: Any, what: str = "memory-limit") -> int:
    """Parse a memory budget like :func:`parse_bytes`, or ``N%`` of this machine's RAM (N from 1 to 100).

    A budget below :data:`MEMORY_LIMIT_FLOOR` (64 MiB) is refused; one above
    the machine's RAM is accepted (it may be meant for other machines, e.g.
    the workers of a cluster) with a warning, given once per budget.

    Raises
    ------
    ConfigError
        If the value is neither a size nor a percentage from 1 to 100, or is below the floor.
    """
    percent = _PERCENT.match(value) if isinstance(value, str) else None
    if percent:
        share = float(percent.group(1))
        if not 1 <= share <= 100:
            raise ConfigError(f"{what} {value!r} is not a share of RAM from 1% to 100%; write it like '60%' or '4GiB'.")
        nbytes = int(share / 100 * _ram_bytes())
    else:
        nbytes = _parse_size(value, what)
    floor = _memory_floor()
    if nbytes < floor:
        raise ConfigError(f"{what} {value!r} ({_size_text(nbytes)}) is below the smallest memory budget wideml runs with, "
                          f"{_size_text(floor)}; give at least {_size_text(floor).replace(' ', '')}, such as 4GiB.")
    ram = _ram_bytes()
    if nbytes > ram and nbytes not in _WARNED_ABOVE_RAM:
        _WARNED_ABOVE_RAM.add(nbytes)
        warnings.warn(f"{what} {value!r} ({_size_text(nbytes)}) is more than this machine's RAM ({_size_text(ram)}); "
                      "passes planned for that budget may swap or be killed, so give at most the RAM, such as '60%'.",
                      PerformanceWarning, stacklevel=2)
    return nbytes


def _unknown_key(key: str, where: str, env: bool = False) -> ConfigError:
    """The one-sentence refusal of an unknown key, naming the closest known key (as an environment variable for ``env``) and all of them."""
    close = difflib.get_close_matches(key.lower().replace("_", "-"), sorted(DEFAULTS), n=1, cutoff=0.6)
    hint = ""
    if close:
        hint = f" (closest: {ENV_PREFIX + close[0].upper().replace('-', '_') if env else repr(close[0])})"
    return ConfigError(f"{where} has unknown key {key!r}{hint}; valid keys are {', '.join(sorted(DEFAULTS))}.")


#: Prefix of the environment variables dask reads into the ``wideml`` namespace.
ENV_PREFIX = "DASK_WIDEML__"
_CHECKED_ENV: frozenset = frozenset()


def check_environment(environ: Any = None) -> None:
    """Refuse ``DASK_WIDEML__*`` variables naming no config key (a typo must not be ignored), and a bad memory budget there.

    ``DASK_WIDEML__MEMORY_LIMIT`` names ``wideml.memory-limit`` (dask turns
    ``__`` into nesting and ``_`` into ``-``). Called by :func:`config_value`,
    so a typo is refused before anything reads the configuration; the same
    variables are checked once.

    Raises
    ------
    ConfigError
        Naming the variable, the closest known key and every known key.
    """
    global _CHECKED_ENV
    environ = os.environ if environ is None else environ
    found = frozenset((k, v) for k, v in environ.items() if k.startswith(ENV_PREFIX))
    if found == _CHECKED_ENV:
        return
    for name, value in sorted(found):
        key = name[len(ENV_PREFIX):].lower().replace("_", "-")
        if key == "cluster" or key.startswith("cluster--"):  # DASK_WIDEML__CLUSTER__SLURM__CORES: dask's nesting is "__"
            check_path(name[len(ENV_PREFIX):].lower().split("__")[1:], _env_value(value))
            continue
        if key not in DEFAULTS:
            raise _unknown_key(name[len(ENV_PREFIX):], f"environment variable {name}", env=True)
        if key == "memory-limit" and value.strip().lower() != "auto":
            parse_memory_limit(value, name)
    _CHECKED_ENV = found


def _env_value(text: str) -> Any:
    """An environment variable's value as dask reads it (a Python literal when it parses as one, else the text)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def config_value(key: str) -> Any:
    """Return ``wideml.<key>`` from dask.config (file, environment or defaults); unknown ``DASK_WIDEML__*`` variables are refused."""
    if key not in DEFAULTS:
        raise ConfigError(f"unknown config key {key!r}; valid keys are {', '.join(sorted(DEFAULTS))}.")
    check_environment()
    return dask.config.get(f"wideml.{key}")


_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def parse_bool(value: Any, what: str) -> bool:
    """Parse a YAML/env boolean (``true``/``false``, ``yes``/``no``, ``on``/``off``, ``1``/``0``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ConfigError(f"{what} {value!r} is not true or false; write true or false.")


def config_bool(key: str) -> bool:
    """Return the boolean ``wideml.<key>`` (e.g. ``checksum``)."""
    return parse_bool(config_value(key), key)


def memory_limit_bytes() -> int:
    """The memory budget in bytes (``wideml.memory-limit``: a size, ``N%`` of RAM, or ``auto`` = 60% of RAM)."""
    value = config_value("memory-limit")
    if value in (None, "auto"):
        return int(0.6 * psutil.virtual_memory().total)
    return parse_memory_limit(value, "memory-limit")


def thread_count() -> int:
    """Tasks run at once by the local threaded scheduler (``wideml.threads``; ``auto`` = cores + 1).

    One task more than cores keeps a chunk read in flight while every core
    computes: measured on a 2-core machine with the store off disk, LFL fits
    26% faster and the encoder 12% faster, Gram-bound LOL unchanged; from the
    page cache the encoder pass is about 15% slower. dask's own
    ``num_workers`` setting, when given, wins.
    """
    value = dask.config.get("num_workers", None)
    if value:
        return int(value)
    value = config_value("threads")
    if value in (None, "auto"):
        return (os.cpu_count() or 1) + 1
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"threads {value!r} is not a number of threads; write a positive integer or auto.") from None
    if count < 1:
        raise ConfigError(f"threads must be at least 1, got {count}.")
    return count


_SCHEDULER_HELP = ("threads, processes, sync, local:N, tcp://HOST:PORT, tls://HOST:PORT, slurm, pbs, sge, "
                   "or in Python a distributed.Client or a cluster object")


def is_cluster_object(value: Any) -> bool:
    """Whether ``value`` is a ``distributed.Client`` or a cluster object (anything with a ``scheduler_address``)."""
    if isinstance(value, (str, bytes)) or value is None:
        return False
    return type(value).__name__ == "Client" or hasattr(value, "scheduler_address")


def _check_scheduler(value: Any) -> None:
    if is_cluster_object(value):
        return  # a distributed.Client or a cluster (LocalCluster, SLURMCluster, ...) given in Python
    spec = value.strip() if isinstance(value, str) else ""
    if spec in ("threads", "processes", "sync", "synchronous", *JOBQUEUE_KINDS):
        return
    local = re.match(r"^local:(\d+)$", spec)
    if local:
        if int(local.group(1)) < 1:
            raise ConfigError(f"scheduler {value!r} asks for no workers; use local:N with N >= 1.")
        check_worker_count(int(local.group(1)), spec)  # the bound the scheduler applies when it starts the cluster
        return
    if spec.startswith(("tcp://", "tls://", "inproc://")):
        check_address(spec)
        return
    raise ConfigError(f"unknown scheduler {value!r}; use {_SCHEDULER_HELP}.")


def _check_dashboard(value: Any) -> None:
    if value is None or isinstance(value, bool) or str(value).strip().lower() in _TRUE + _FALSE:
        return
    host, sep, port = str(value).strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"dashboard {value!r} is neither true/false nor HOST:PORT; write e.g. false, true or 127.0.0.1:8787.")


def _check_choice(key: str, choices: tuple[str, ...], allow_none: bool = False) -> Any:
    def check(value: Any) -> None:
        if (value is None and allow_none) or (isinstance(value, str) and value.strip().lower() in choices):
            return
        raise ConfigError(f"{key} {value!r} is not one of {', '.join(choices)}; write one of them.")
    return check


def _check_progress(value: Any) -> None:
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return
    parse_bool(value, "progress")


def _check_tree_width(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ConfigError(f"tree-width must be an integer of at least 2, got {value!r}.")


def _check_threads(value: Any) -> None:
    if value != "auto" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"threads must be a positive integer or auto, got {value!r}.")


_INTERVAL_HELP = "write a number of seconds such as 60, or 0 (or off) to turn checkpoints off"


def parse_checkpoint_interval(value: Any) -> float | None:
    """Seconds between two checkpoints (config ``checkpoint-interval``), or None when checkpoints are off.

    Off is ``0``, ``off``, ``false``, ``no``, ``none`` or null; else a finite number of seconds >= 0.

    Raises
    ------
    ConfigError
        If the value is not a number (NaN included), is infinite or is negative.
    """
    if value is None or value is False or str(value).strip().lower() in ("off", "false", "no", "none"):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"checkpoint-interval {value!r} is not a number of seconds; {_INTERVAL_HELP}.") from None
    if math.isnan(seconds):
        raise ConfigError(f"checkpoint-interval {value!r} is not a number (NaN); {_INTERVAL_HELP}.")
    if seconds < 0:
        raise ConfigError(f"checkpoint-interval {value!r} is negative; {_INTERVAL_HELP}.")
    if seconds == float("inf"):
        raise ConfigError(f"checkpoint-interval {value!r} is infinite (no checkpoint would ever be written); {_INTERVAL_HELP}.")
    return seconds or None


def _check_workdir(value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(f"workdir must be a folder path or null, got {value!r}.")


def _check_storage_options(value: Any) -> None:
    if value is not None and not isinstance(value, dict):
        raise ConfigError(f"storage-options must be a mapping of fsspec storage options (e.g. {{endpoint_url: 'http://...'}}), got {value!r}.")


#: How each config key's value is checked (:func:`check_setting`); each check raises a ConfigError naming the key.
_CHECKS = {
    "scheduler": _check_scheduler,
    "dashboard": _check_dashboard,
    "memory-limit": lambda v: None if v == "auto" else parse_memory_limit(v, "memory-limit"),
    "chunk-size": lambda v: parse_bytes(v, "chunk-size"),
    "compressor": _check_choice("compressor", ("none", "zstd", "lz4"), allow_none=True),
    "checksum": lambda v: parse_bool(v, "checksum"),
    "progress": _check_progress,
    "tree-width": _check_tree_width,
    "threads": _check_threads,
    "check-feature-layout": lambda v: parse_bool(v, "check-feature-layout"),
    "checkpoint-interval": parse_checkpoint_interval,
    "resume": lambda v: parse_bool(v, "resume"),
    "workdir": _check_workdir,
    "cluster": check_cluster,
    "storage-options": _check_storage_options,
    "remote-reader": _check_choice("remote-reader", ("auto", "obstore", "fsspec")),
}


def check_setting(key: str, value: Any) -> None:
    """Refuse a value of config key ``key`` that wideml cannot use, in one sentence naming the key.

    Raises
    ------
    ConfigError
        If ``key`` is unknown or ``value`` is unusable for it.
    """
    if key not in DEFAULTS:
        raise _unknown_key(key, "the configuration")
    check = _CHECKS.get(key)
    if check is not None:
        check(value)


def load_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read a YAML config file, validate its keys and apply it globally.

    The file holds a top-level ``wideml:`` mapping whose keys are those of
    ``wideml/wideml.yaml``. Unknown keys are an error (a typo should not be
    silently ignored), and so is a value wideml cannot use (:func:`check_setting`):
    every such refusal names the file and the key.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(path)!r} ({exc.strerror or exc}); check the path.") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"config file {str(path)!r} is not UTF-8 text (byte {exc.start} on line {line}); "
                          "save it as UTF-8.") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" at line {line + 1}" if line is not None else ""
        raise ConfigError(f"config file {str(path)!r} is not valid YAML{where}; fix its syntax.") from None
    if not isinstance(data, dict) or not isinstance(data.get("wideml", {}), dict) or set(data) - {"wideml"}:
        raise ConfigError(f"config file {str(path)!r} must hold one top-level 'wideml:' mapping; see configs/default.yaml.")
    settings = data.get("wideml", {})
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise _unknown_key(unknown[0], f"config file {str(path)!r}")
    for key, value in settings.items():
        try:
            check_setting(key, value)
        except ConfigError as exc:  # every refusal of a value read from the file names the file (the message names the key)
            raise ConfigError(f"config file {str(path)!r}: {exc}") from None
    dask.config.set({f"wideml.{k}": v for k, v in settings.items() if k != "cluster"})
    dask.config.set(flatten(settings.get("cluster") or {}))  # merged into the defaults, not replacing them
    return settings
