"""Owner files: which process made a folder, so leftovers of dead runs can be removed safely.

Every folder a wideml run writes aside (a ``.NAME.partial-*`` output, a
``wideml-fit-*`` work folder, a ``NAME.wideml-work`` checkpoint folder) holds an
owner file, ``.wideml-owner.json``, naming the host, the boot, the process id
namespace, the process id, the process's start time and its command line; a
folder claimed inside a dask.distributed task also names the worker and the
scheduler. The rule a later run applies (:func:`owner_alive`, :func:`abandoned`):

- **owner gone** (the leftover is removed): same host and same process id
  namespace, and no process with that id and start time runs; or the host has
  rebooted since (another boot id). A worker-owned folder follows the same
  rule: its owner is the worker process, and when that worker dies dask reruns
  the task elsewhere, in a new folder (nested passes run inside the task,
  :mod:`wideml.runtime.nested`), so nothing writes into the old one any more.
- **owner alive or unknown** (kept): the process runs; or it ran on another
  host (a shared filesystem: run ``wideml clean`` there), or in another process
  id namespace (a container), where its pid cannot be looked up from here.
- **no owner file**: a run claims a folder right after making it and releases
  it only when it is done with it (a checkpoint folder kept for a rerun after
  an interrupt). An empty folder (killed before its claim), or one holding
  only a dead process's half-written owner file, is abandoned at once; any
  other counts as abandoned once untouched for :data:`UNOWNED_GRACE` seconds.

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

#: Seconds a leftover without an owner file must have been untouched before a sweep removes it.
UNOWNED_GRACE = 10.0

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


def _boot_id() -> str | None:
    """This boot of the host (Linux), or None."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _pid_namespace() -> str | None:
    """This process's pid namespace (Linux, e.g. ``'pid:[4026531836]'``), or None."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _dask_worker() -> dict:
    """``{"worker": ADDRESS, "scheduler": ADDRESS}`` inside a dask.distributed task, else ``{}``."""
    if "distributed" not in sys.modules:
        return {}
    try:
        from distributed import get_worker

        worker = get_worker()
        return {"worker": str(worker.address), "scheduler": str(worker.scheduler.address)}
    except Exception:  # noqa: BLE001 - not in a worker task (ValueError), or a worker without addresses
        return {}


def owner_record() -> dict:
    """The owner record of this process.

    Returns
    -------
    dict
        ``host``, ``boot_id``, ``pid_ns``, ``pid``, ``start_time``, ``argv``,
        ``time``, and inside a dask.distributed task ``worker`` and ``scheduler``.
    """
    return {"host": socket.gethostname(), "boot_id": _boot_id(), "pid_ns": _pid_namespace(), "pid": os.getpid(),
            "start_time": _start_time(os.getpid()), "argv": list(sys.argv), "time": time.time(), **_dask_worker()}


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
    boot = _boot_id()
    if record.get("boot_id") and boot and record["boot_id"] != boot:
        return False  # the host rebooted since: every process of that boot is gone
    namespace = _pid_namespace()
    if record.get("pid_ns") and namespace and record["pid_ns"] != namespace:
        return None  # a process of another pid namespace (a container): its pid means nothing here
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


def _idle_seconds(folder: Path) -> float:
    """Seconds since ``folder`` (its own entry list) last changed."""
    try:
        return time.time() - folder.stat().st_mtime
    except OSError:
        return 0.0


def _claim_in_progress(folder: Path) -> bool | None:
    """For a folder without an owner file: None if it holds anything but half-written owner files, else whether
    a process writing one (the pid in its name) still runs."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    prefix = OWNER_FILE + "."
    if not all(name.startswith(prefix) and name.endswith(".tmp") for name in names):
        return None
    pids = [name[len(prefix):-len(".tmp")] for name in names]
    return any(pid.isdigit() and _start_time(int(pid)) is not None for pid in pids)


def abandoned(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` may be removed.

    True when its owner is gone; or, without an owner file, when it is empty
    (a run killed between making and claiming it; a live run's :func:`claim`
    makes it again if it is removed under it) or holds only a dead process's
    half-written owner file, or was untouched for :data:`UNOWNED_GRACE` s.
    """
    folder = Path(folder)
    alive = owner_alive(folder)
    if alive is False:
        return True
    if alive is True or (folder / OWNER_FILE).exists():
        return False
    claiming = _claim_in_progress(folder)
    if claiming is not None:
        return not claiming
    return _idle_seconds(folder) > UNOWNED_GRACE


def remove_abandoned(folder: str | os.PathLike) -> bool:
    """Remove ``folder`` if it is :func:`abandoned`; returns whether it is gone.

    An empty folder is removed with ``rmdir``, which fails if its run claims
    it meanwhile; anything else is checked again right before it is removed.
    """
    folder = Path(folder)
    if not abandoned(folder):
        return False
    try:
        os.rmdir(folder)
        return True
    except OSError:
        pass
    if not abandoned(folder):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


def candidates(parent: str | os.PathLike, patterns: Iterable[str]) -> list[Path]:
    """The folders directly in ``parent`` whose names match ``patterns`` (symlinks and files excluded)."""
    parent = Path(parent)
    patterns = tuple(patterns)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    paths = (parent / name for name in names if any(fnmatch.fnmatchcase(name, pat) for pat in patterns))
    return [path for path in paths if not path.is_symlink() and path.is_dir()]


def sweep(parent: str | os.PathLike, patterns: Iterable[str], keep: Iterable[str | os.PathLike] = ()) -> list[Path]:
    """Remove the entries of ``parent`` matching ``patterns`` that are :func:`abandoned`.

    Parameters
    ----------
    parent : path-like
        The folder to look in (not recursive); a missing folder is empty.
    patterns : iterable of str
        Shell patterns of names, e.g. ``".*.partial-*"`` or ``"wideml-fit-*"``.
    keep : iterable of path-like, optional
        Entries never to remove (e.g. the checkpoint folder the running command resumes from).

    Returns
    -------
    list of Path
        What was removed. Entries whose owner is alive or unknown are kept.
    """
    kept = {os.path.abspath(k) for k in keep}
    removed = []
    for path in candidates(parent, patterns):
        if os.path.abspath(path) not in kept and remove_abandoned(path):
            removed.append(path)
    return removed


def _remove_tree_once(folder: Path) -> None:
    if folder.is_symlink() or not folder.is_dir():
        try:
            folder.unlink()
        except OSError:
            pass
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:
        entries = []
    for entry in entries:
        if entry.name == OWNER_FILE:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass
    try:
        (folder / OWNER_FILE).unlink()
    except OSError:
        pass
    try:
        folder.rmdir()
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)


def remove_tree(folder: str | os.PathLike) -> None:
    """Remove an owned folder (or file) so that an interruption never leaves it without its owner file.

    The owner file goes last, so a removal cut short by SIGKILL leaves a folder
    whose owner record says who made it (the next run's sweep removes it once
    that process is gone). A signal that stops the removal half way
    (KeyboardInterrupt, SystemExit from SIGTERM) first lets it finish, then
    goes on stopping the run.
    """
    folder = Path(folder)
    try:
        _remove_tree_once(folder)
    except BaseException:
        _remove_tree_once(folder)
        raise


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
            remove_tree(folder)
            removed.append(folder)
    return removed
