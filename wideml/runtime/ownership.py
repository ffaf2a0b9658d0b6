"""Owner records: which wideml run made a folder, so that wideml removes only what it can prove it made.

Every folder a wideml run writes aside (see :mod:`wideml.runtime.owned_names`
for the names: ``.NAME.wideml-partial-*`` outputs, ``.NAME.wideml-old-*``
replaced outputs, ``wideml-fit-*`` work folders, ``NAME.wideml-work``
checkpoint folders) holds an owner record, ``.wideml-owner.json``. The record
carries a wideml marker (:data:`OWNER_MARKER`), the run id of the process,
the folder's own name, what the folder is for, and who runs it: host, boot,
process id namespace, process id, the process's start time and its command
line (inside a dask.distributed task also the worker and the scheduler).

**The rule** (:func:`verdict`):

- no record, a record of another program, a record without the marker or run
  id, or a record written for another name (a copy of a wideml folder):
  ``"unrecorded"``. Never removed automatically, whatever the folder's name;
  ``wideml clean`` lists it and removes it only when named explicitly.
- the owner runs (same host, same pid namespace, a process with that id and
  that start time): ``"running"``, kept.
- the owner cannot be checked from here (another host: a shared filesystem;
  another pid namespace: a container): ``"unknown"``, kept.
- the owner is gone (no such process, or the pid was reused, or the host
  rebooted since): ``"dead"``, removed by the next wideml run that writes
  beside it, and by ``wideml clean``.
- a checkpoint folder its run kept for a rerun after an interrupt
  (:func:`release`): ``"kept"``. A rerun of the same command resumes from it;
  ``wideml clean`` removes it; no other command touches it.

Writing into a folder that already exists (a checkpoint folder, say) is
refused unless it carries a record of this process or of a run that is over
(:func:`claim`): wideml never adopts a user's folder that happens to have one
of its names, and a second run into the same output is told which run holds it.

Removal itself, and the per-process list of folders an interrupted run removes,
live in :mod:`wideml.runtime.removal`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from wideml.exceptions import StoreError
from wideml.runtime.owned_names import (
    OWNER_FILE,
    is_aside_name,
    is_checkpoint_name,
    is_owned_name,
    is_work_folder_name,
)
from wideml.runtime.owner_key import sign, verify
from wideml.runtime.removal import register_scratch, remove_tree, unregister_scratch


#: Marks an owner record as wideml's (a version number follows the slash).
OWNER_MARKER = "wideml-owner-record/2"

#: This process's run id, written into every record it makes.
RUN_ID = uuid.uuid4().hex


class ForeignFolderError(StoreError):
    """A folder wideml was about to write into is not wideml's, or another wideml run holds it."""


def _start_time(pid: int) -> float | None:
    """The start time of process ``pid`` (seconds since the epoch), or None if there is no such process."""
    import psutil  # third-party, loaded only when an owner record is made or judged

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


def owner_record(name: str = "", kind: str = "folder", state: str = "running") -> dict:
    """The owner record this process writes into a folder called ``name``.

    Parameters
    ----------
    name : str
        The folder's own name (last path component): a record only vouches
        for the folder it was written for.
    kind : str
        What the folder is for: ``"partial"``, ``"old"``, ``"work"``, ``"checkpoint"``...
    state : {"running", "kept"}
        In use by this process, or kept for a rerun (:func:`release`).

    Returns
    -------
    dict
        ``wideml`` (the marker), ``run_id``, ``name``, ``kind``, ``state``,
        ``host``, ``boot_id``, ``pid_ns``, ``pid``, ``start_time``, ``argv``,
        ``time``, and inside a dask.distributed task ``worker`` and ``scheduler``.
    """
    return {"wideml": OWNER_MARKER, "run_id": RUN_ID, "name": name, "kind": kind, "state": state,
            "host": socket.gethostname(), "boot_id": _boot_id(), "pid_ns": _pid_namespace(), "pid": os.getpid(),
            "start_time": _start_time(os.getpid()), "argv": list(sys.argv), "time": time.time(), **_dask_worker()}


def _write_record(folder: Path, record: dict) -> None:
    """Write ``record``, signed with this user's owner key (:mod:`wideml.runtime.owner_key`), as ``folder``'s owner file."""
    tmp = folder / f"{OWNER_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(sign(record)))
    os.replace(tmp, folder / OWNER_FILE)


def _has_content(folder: Path) -> bool:
    """Whether ``folder`` exists and holds anything but half-written owner files."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(not (name.startswith(OWNER_FILE + ".") and name.endswith(".tmp")) for name in names)


def _kind_of(name: str) -> str:
    """The kind a folder called ``name`` is for, from its name."""
    if is_aside_name(name):
        return "old" if ".wideml-old-" in name else "partial"
    if is_work_folder_name(name):
        return "work"
    return "checkpoint" if is_checkpoint_name(name) else "folder"


def claim(folder: str | os.PathLike, kind: str | None = None, *, made_here: bool = False) -> None:
    """Write this process's owner record into ``folder`` (created if missing).

    Parameters
    ----------
    folder : path-like
        A directory this process is about to fill.
    kind : str, optional
        What it is for (recorded); by default read from the folder's name.
    made_here : bool, default False
        This process has just made ``folder`` and its content itself (e.g. an
        intermediate store moved into place), so it is claimed as it is.

    Raises
    ------
    ForeignFolderError
        ``folder`` already holds something and no record shows it is this
        process's or a finished wideml run's (a user's folder that happens to
        have a wideml name; a folder another running wideml run writes into).
    """
    folder = Path(folder)
    kind = kind or _kind_of(folder.name)
    if folder.is_symlink():
        raise ForeignFolderError(f"{folder} is a symbolic link; wideml does not write through a link it did not make: "
                                 "remove the link or choose another output.")
    if not made_here and _has_content(folder):
        state = verdict(folder)
        record = wideml_record(folder)
        if state == "running" and not _is_this_process(record):
            raise ForeignFolderError(f"{folder} is in use by another wideml run ({describe_owner(record)}); "
                                     "wait for it to finish or choose another output.")
        if state == "unknown":
            raise ForeignFolderError(f"{folder} belongs to a wideml run that cannot be checked from here "
                                     f"({describe_owner(record)}); if that run is over, remove the folder with "
                                     f"`wideml clean --remove {folder}`, or choose another output.")
        if state == "unrecorded":
            raise ForeignFolderError(f"{folder} already exists and was not made by wideml (it holds no wideml owner "
                                     "record), so wideml will not write into it; move it away or choose another output.")
    folder.mkdir(parents=True, exist_ok=True)
    _write_record(folder, owner_record(folder.name, kind))


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (delivered right after the block) where the platform allows it."""
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:
        yield
        return
    old = block(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, old)


def create_claimed(folder: str | os.PathLike, kind: str | None = None, mode: int = 0o777) -> None:
    """Make the new folder ``folder`` and write this process's owner record into it at once.

    The record is built before the folder exists, so a process killed between
    the two steps leaves at most an empty folder (which no wideml run removes:
    it proves nothing). Raises FileExistsError if ``folder`` exists: an
    existing folder is never taken over.
    """
    folder = Path(folder)
    record = owner_record(folder.name, kind or _kind_of(folder.name))
    with _signals_deferred():  # SIGINT/SIGTERM wait until the folder has its record and is this run's to clean up
        folder.mkdir(mode)
        register_scratch(folder)
        _write_record(folder, record)


def release(folder: str | os.PathLike) -> None:
    """Mark ``folder`` as kept for a rerun: its record stays (state ``"kept"``), so it is still provably wideml's.

    No error if the folder or its record is gone.
    """
    folder = Path(folder)
    record = wideml_record(folder)
    if record is not None:
        try:
            _write_record(folder, dict(record, state="kept", time=time.time()))
        except OSError:
            pass
    unregister_scratch(folder)


def read_owner(folder: str | os.PathLike) -> dict | None:
    """The owner file of ``folder`` as written (any program's), or None if it has none, is a link, or is unreadable."""
    try:
        fd = os.open(Path(folder) / OWNER_FILE, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            record = json.loads(fh.read(1 << 20))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def wideml_record(folder: str | os.PathLike) -> dict | None:
    """The owner record of ``folder`` if it is a wideml record written for this very folder, else None.

    A record counts only with the wideml marker, a run id, the folder's own
    name, a kind that fits that name, and this user's signature
    (:mod:`wideml.runtime.owner_key`): another program's ``.wideml-owner.json``,
    an older, edited or hand-written record, a record behind a symbolic link,
    or a record copied along with a folder under another name is none.
    """
    folder = Path(folder)
    if folder.is_symlink():
        return None
    record = read_owner(folder)
    if record is None or record.get("wideml") != OWNER_MARKER:
        return None
    run_id, name = record.get("run_id"), record.get("name")
    if not (isinstance(run_id, str) and len(run_id) == 32 and all(c in "0123456789abcdef" for c in run_id)):
        return None
    if name != folder.name or not isinstance(record.get("pid"), int) or not _kind_fits(record.get("kind"), name):
        return None
    return record if verify(record) else None


def _kind_fits(kind, name: str) -> bool:
    """Whether a record's ``kind`` is what a folder called ``name`` is for (a name wideml does not give: any kind)."""
    if is_aside_name(name):
        return kind in ("partial", "old")
    if is_work_folder_name(name):
        return kind == "work"
    if is_checkpoint_name(name):
        return kind == "checkpoint"
    return isinstance(kind, str)


def _is_this_process(record: dict | None) -> bool:
    return record is not None and record.get("run_id") == RUN_ID and record.get("pid") == os.getpid()


def owner_alive(folder: str | os.PathLike) -> bool | None:
    """Whether the process that owns ``folder`` still runs.

    Returns
    -------
    bool or None
        True if a process with the recorded id runs on this host and started
        at the recorded time (a reused pid is not the owner); False if it is
        gone; None if unknown: no wideml record, or the owner is on another
        host or in another pid namespace.
    """
    record = wideml_record(folder)
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


def verdict(folder: str | os.PathLike) -> str:
    """What may be done with ``folder``: ``"unrecorded"``, ``"running"``, ``"unknown"``, ``"dead"`` or ``"kept"``.

    See the module's docstring for the rule.
    """
    record = wideml_record(folder)
    if record is None:
        return "unrecorded"
    alive = owner_alive(folder)
    if alive is True:
        return "running"
    if alive is None:
        return "unknown"
    return "kept" if record.get("state") == "kept" else "dead"


def describe_owner(record: dict | None) -> str:
    """A short phrase naming the run of ``record``: pid, host, start and command line."""
    if record is None:
        return "no wideml owner record"
    started = record.get("start_time") or record.get("time")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(started))) if isinstance(started, (int, float)) else "?"
    argv = record.get("argv")
    command = " ".join(map(str, argv)) if isinstance(argv, list) and argv else "?"
    command = command if len(command) <= 160 else command[:159] + "…"
    worker = f", dask worker {record['worker']}" if record.get("worker") else ""
    return f"pid {record.get('pid')} on {record.get('host')}{worker}, started {when}: {command}"


def abandoned(folder: str | os.PathLike) -> bool:
    """Whether a wideml run writing beside ``folder`` may remove it: a wideml record whose owner is gone."""
    return verdict(folder) == "dead"


def remove_abandoned(folder: str | os.PathLike, *, kept_too: bool = False) -> bool:
    """Remove ``folder`` if it is :func:`abandoned` (or, with ``kept_too``, a kept checkpoint folder).

    The verdict is taken again right before the removal; returns whether the folder is gone.
    """
    folder = Path(folder)
    allowed = ("dead", "kept") if kept_too else ("dead",)
    if verdict(folder) not in allowed:
        return False
    remove_tree(folder)
    return not os.path.lexists(folder)


def candidates(parent: str | os.PathLike, match: Callable[[str], bool] = is_owned_name) -> list[Path]:
    """The folders directly in ``parent`` whose names ``match`` (symlinks and files excluded), sorted."""
    parent = Path(parent)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    paths = (parent / name for name in names if match(name))
    return [path for path in paths if not path.is_symlink() and path.is_dir()]


def sweep(parent: str | os.PathLike, match: Callable[[str], bool] = is_owned_name,
          keep: Iterable[str | os.PathLike] = ()) -> list[Path]:
    """Remove the folders of ``parent`` that wideml made and whose owner is gone (:func:`abandoned`).

    Parameters
    ----------
    parent : path-like
        The folder to look in (not recursive); a missing folder is empty.
    match : callable, optional
        Which names to look at (default: every name wideml gives its folders).
    keep : iterable of path-like, optional
        Entries never to remove (e.g. the checkpoint folder the running command resumes from).

    Returns
    -------
    list of Path
        What was removed. Folders without a wideml record, folders whose owner
        runs or cannot be checked, and kept checkpoint folders stay.
    """
    kept = {os.path.abspath(k) for k in keep}
    removed = []
    for path in candidates(parent, match):
        if os.path.abspath(path) not in kept and remove_abandoned(path):
            removed.append(path)
    return removed
