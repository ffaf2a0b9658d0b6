"""Removing a folder wideml owns, so that an interruption never leaves it without its owner record,
and the per-process list of folders an interrupted run must remove (:func:`register_scratch`).

Which folders may be removed at all is decided by :mod:`wideml.runtime.ownership`.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from wideml.runtime.owned_names import OWNER_FILE

#: Folders of this process to remove if the run is interrupted (outputs written aside, work folders).
_SCRATCH: set[str] = set()
_LOCK = threading.Lock()


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
