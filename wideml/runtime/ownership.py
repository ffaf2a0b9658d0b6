"""Owner files: which process made a folder, so leftovers of dead runs can be removed safely.

Every folder a wideml run writes aside (a ``.NAME.partial-*`` output, a
``wideml-fit-*`` work folder, a checkpoint folder) holds an owner file,
``.wideml-owner.json``, naming the host, the process id, the process's start
time and its command line. A later run removes a leftover only when its owner
is known to be gone: same host, and no process with that id and start time.
A folder whose owner is alive, on another host (a shared filesystem) or not
recorded is never touched.

This module also keeps, per process, the folders that must not outlive an
interrupted run (:func:`register_scratch`): the interrupt handler removes them
after the running tasks have stopped writing.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Iterable

OWNER_FILE = ".wideml-owner.json"

#: Folders of this process to remove if the run is interrupted (outputs written aside, work folders).
_SCRATCH: set[str] = set()
_LOCK = threading.Lock()


def _start_time(pid: int) -> float | None:
    """The start time of process ``pid`` (seconds since the epoch), or None if there is no such process."""
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(proc.create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return None


def owner_record() -> dict:
    """The owner record of this process: host, pid, start time, command line and the time now."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "start_time": _start_time(os.getpid()),
            "argv": list(sys.argv), "time": time.time()}


def claim(folder: str | os.PathLike) -> None:
    """Write the owner file of this process into ``folder`` (created if missing).

    Parameters
    ----------
    folder : path-like
        A directory this process is about to fill.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{OWNER_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(owner_record()))
    os.replace(tmp, folder / OWNER_FILE)


def release(folder: str | os.PathLike) -> None:
    """Remove the owner file from ``folder`` (the folder itself stays); no error if it is gone."""
    try:
        (Path(folder) / OWNER_FILE).unlink()
    except FileNotFoundError:
        pass
    unregister_scratch(folder)


def read_owner(folder: str | os.PathLike) -> dict | None:
    """The owner record of ``folder``, or None if it has none (or it is unreadable)."""
    try:
        record = json.loads((Path(folder) / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def owner_alive(folder: str | os.PathLike) -> bool | None:
    """Whether the process that owns ``folder`` still runs.

    Returns
    -------
    bool or None
        True if a process with the recorded id runs on this host and started
        at the recorded time (a reused pid is not the owner); False if it is
        gone; None if unknown: no owner file, or the owner is on another host.
    """
    record = read_owner(folder)
    if record is None or record.get("host") != socket.gethostname():
        return None
    try:
        pid, started = int(record["pid"]), record.get("start_time")
    except (KeyError, TypeError, ValueError):
        return None
    now = _start_time(pid)
    if now is None:
        return False
    if started is None:
        return True  # cannot tell a reused pid from the owner: keep it
    return abs(now - float(started)) < 0.5


def sweep(parent: str | os.PathLike, patterns: Iterable[str]) -> list[Path]:
    """Remove the entries of ``parent`` matching ``patterns`` whose owner is gone.

    Parameters
    ----------
    parent : path-like
        The folder to look in (not recursive); a missing folder is empty.
    patterns : iterable of str
        Shell patterns of names, e.g. ``".*.partial-*"`` or ``"wideml-fit-*"``.

    Returns
    -------
    list of Path
        What was removed. Entries whose owner is alive or unknown are kept.
    """
    parent = Path(parent)
    patterns = tuple(patterns)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    removed = []
    for name in names:
        if not any(fnmatch.fnmatchcase(name, pat) for pat in patterns):
            continue
        path = parent / name
        if path.is_symlink() or not path.is_dir() or owner_alive(path) is not False:
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


def register_scratch(folder: str | os.PathLike) -> None:
    """Remove ``folder`` if this run is interrupted (see :func:`remove_scratch`)."""
    with _LOCK:
        _SCRATCH.add(os.path.abspath(folder))


def unregister_scratch(folder: str | os.PathLike) -> None:
    """``folder`` was moved into place or removed: no longer this run's to clean up."""
    with _LOCK:
        _SCRATCH.discard(os.path.abspath(folder))


def remove_scratch() -> list[str]:
    """Remove every registered scratch folder that still exists; returns the ones removed."""
    with _LOCK:
        folders = sorted(_SCRATCH)
        _SCRATCH.clear()
    removed = []
    for folder in folders:
        if os.path.lexists(folder):
            if os.path.isdir(folder) and not os.path.islink(folder):
                shutil.rmtree(folder, ignore_errors=True)
            else:
                try:
                    os.unlink(folder)
                except OSError:
                    pass
            removed.append(folder)
    return removed
