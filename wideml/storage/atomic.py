"""Write-aside-then-rename, so an interrupted write never leaves a half-written output.

An output ``DIR/NAME`` is written as ``DIR/.NAME.partial-XXXXXXXX/NAME``: the
hidden ``.partial-*`` folder carries an owner file
(:mod:`wideml.runtime.ownership`), so if the process is killed outright the
next wideml run writing into ``DIR`` removes it; SIGINT, SIGTERM or an error
remove it at once, after the tasks still running have stopped writing
(:func:`wideml.runtime.quiesce.wait_for_running_tasks`). An output being
replaced is moved into an owned ``.NAME.old-*`` folder first, then removed.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from wideml.exceptions import StoreError

#: Names of the hidden folders beside an output that a run owns while it writes.
LEFTOVER_PATTERNS = (".*.partial-*", ".*.old-*")


def check_output(path: str | os.PathLike, overwrite: bool) -> Path:
    """Refuse to replace an existing output unless ``overwrite`` is set."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise StoreError(f"output {str(path)!r} already exists; pass --overwrite (overwrite=True) to replace it or choose another path.")
    if not path.parent.exists():
        raise StoreError(f"cannot write {str(path)!r}: folder {str(path.parent)!r} does not exist; create it first.")
    return path


def remove_path(path: Path) -> None:
    """Remove a file or folder; a folder's owner file goes last, and a signal cannot stop it half way."""
    from wideml.runtime.ownership import remove_tree

    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        remove_tree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def is_scratch_name(name: str) -> bool:
    """Whether ``name`` is one of the hidden write-aside names (``.X.partial-*``, ``.X.old-*``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in LEFTOVER_PATTERNS)


def _owned_folder(parent: Path, name: str, kind: str) -> Path:
    """Create ``parent/.name.kind-XXXXXXXX`` with this process's owner file; removed if the run is interrupted."""
    from wideml.runtime.ownership import claim, register_scratch

    folder = parent / f".{name}.{kind}-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
        register_scratch(folder)
        claim(folder)
    except OSError as exc:
        remove_path(folder)
        raise StoreError(f"cannot write in the output folder {parent} ({exc.strerror or exc}); choose a writable folder.") from None
    return folder


def _drop(folder: Path) -> None:
    from wideml.runtime.ownership import unregister_scratch

    remove_path(folder)
    unregister_scratch(folder)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, overwrite: bool = False, needed_bytes: int = 0,
                  workers_write: bool = True) -> Iterator[Path]:
    """Yield a temporary path inside an owned hidden sibling folder; on success move it to ``path``, on failure delete it.

    Parameters
    ----------
    path : path-like
        The output (a file or a folder).
    overwrite : bool, default False
        Replace an existing ``path``: it is moved aside and removed only after
        the new output is in place.
    needed_bytes : int, default 0
        Estimated size of the output: refused before anything is written if
        the output's filesystem has less free space.
    workers_write : bool, default True
        The scheduler's workers write into the output (a store's or model's
        chunks): on a dask.distributed cluster they must see its folder. False
        for small files this process writes itself.

    Yields
    ------
    Path
        Where to write the output. A full disk while writing becomes one
        StoreError naming the folder; nothing is kept.
    """
    path = Path(os.path.abspath(check_output(path, overwrite)))  # the graphs writing into tmp never carry a relative path
    from wideml.runtime.cluster_check import require_directory
    from wideml.runtime.preflight import disk_full_error, is_disk_full, require_free_space, require_writable

    if workers_write:
        require_directory(path.parent, "the output folder")  # on a dask cluster, workers write the output's chunks
    require_writable(path.parent, "the output folder")
    if needed_bytes:  # an intermediate store (rechunk's first stage) is checked too, before its pass
        what = "an intermediate copy of the output" if is_scratch_name(path.name) else f"the output {path.name}"
        require_free_space([(path.parent, needed_bytes, what)])
    aside = _owned_folder(path.parent, path.name, "partial")
    tmp = aside / path.name
    try:
        yield tmp
    except BaseException as exc:
        from wideml.runtime.quiesce import wait_for_running_tasks

        wait_for_running_tasks()
        _drop(aside)
        if is_disk_full(exc) and not isinstance(exc, KeyboardInterrupt):
            raise disk_full_error(path.parent, needed_bytes) from None
        raise
    try:
        if os.path.lexists(path):
            old = _owned_folder(path.parent, path.name, "old")
            os.replace(path, old / path.name)
            os.replace(tmp, path)
            _drop(old)
        else:
            os.replace(tmp, path)
    finally:
        _drop(aside)
    if is_scratch_name(path.name) and path.is_dir():
        # an intermediate store (e.g. rechunk's first stage) is itself a leftover if the run dies
        from wideml.runtime.ownership import claim, register_scratch

        register_scratch(path)
        claim(path)
