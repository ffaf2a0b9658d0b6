"""Write-aside-then-rename, so an interrupted write never leaves a half-written output.

An output ``DIR/NAME`` is written as ``DIR/.NAME.wideml-partial-TOKEN/NAME``:
the hidden folder carries a wideml owner record
(:mod:`wideml.runtime.ownership`), so if the process is killed outright the
next wideml run writing into ``DIR`` removes it; SIGINT, SIGTERM or an error
remove it at once, after the tasks still running have stopped writing
(:func:`wideml.runtime.quiesce.wait_for_running_tasks`). An output being
replaced is moved into an owned ``.NAME.wideml-old-TOKEN`` folder first, then
removed. Names: :mod:`wideml.runtime.owned_names`.

Two runs writing the same output at once: the second is refused before it
writes anything, naming the run that holds the output; and an output that
appears while a run writes (without ``overwrite``) is never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from wideml.exceptions import StoreError
from wideml.runtime.cluster_check import require_directory
from wideml.runtime.owned_names import NAME_MAX, aside_name, is_aside_name
from wideml.runtime.ownership import RUN_ID, candidates, claim, create_claimed, describe_owner, verdict, wideml_record
from wideml.runtime.preflight import disk_full_error, is_disk_full, require_free_space, require_writable
from wideml.runtime.quiesce import wait_for_running_tasks
from wideml.runtime.removal import register_scratch, remove_tree, unregister_scratch
from wideml.storage.output_contents import foreign_entries, why_foreign
from wideml.storage.output_marks import made_by_wideml, mark, why_not_replaced
from wideml.storage.remote_write import check_remote_output, is_remote, remote_output
from wideml.storage.urls import is_url, local_output, local_path_of


def refuse_url_output(path) -> None:
    """Refuse an output given as a URL in one sentence (never a local folder named ``s3:``)."""
    if is_url(path) and local_path_of(path) is None:
        raise StoreError(f"writing to object stores is not supported yet ({path} is a URL); write locally and copy.")


def check_output(path: str | os.PathLike, overwrite: bool) -> Path | str:
    """Refuse to replace an existing output unless ``overwrite`` is set and wideml can prove it wrote it.

    See :mod:`wideml.storage.output_marks`: a user's file or folder, or a
    symbolic link, is never replaced, whatever ``overwrite`` says; nor is a
    wideml output folder holding anything wideml did not write there
    (:mod:`wideml.storage.output_contents`: a user's file added to a model,
    a copied ``zarr.json`` beside a user's data). A name
    longer than the filesystem allows is one sentence too, and so is a URL
    (``s3://...``: outputs are local until writing to object stores is supported);
    a ``file://`` URL is checked, and returned, as the local path it names. An object-store URL is checked by
    :func:`wideml.storage.remote_write.check_remote_output` (the same rules) and returned as it is.
    """
    if is_remote(path):
        check_remote_output(str(path), overwrite)
        return str(path).strip().rstrip("/")
    path = Path(local_output(path))  # a file:// URL is the local path it names; any other URL is refused
    try:
        exists = os.path.lexists(path)
        parent_exists = path.parent.exists()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise StoreError(f"the output name {path.name[:40]!r}... is {len(os.fsencode(path.name))} bytes long, more than "
                             "a file name may have here (usually 255 bytes); choose a shorter name.") from None
        raise
    if len(os.fsencode(path.name)) > NAME_MAX:
        raise StoreError(f"the output name {path.name[:40]!r}... is {len(os.fsencode(path.name))} bytes long, more than "
                         f"a file name may have ({NAME_MAX} bytes); choose a shorter name.")
    if exists and not made_by_wideml(path):  # first: --overwrite would not replace it either, so never suggest it
        raise StoreError(why_not_replaced(path))
    _refuse_foreign_entries(path, exists)
    if exists and not overwrite:
        raise StoreError(f"output {str(path)!r} already exists; pass --overwrite (overwrite=True) to replace it or choose another path.")
    if not parent_exists:
        raise StoreError(f"cannot write {str(path)!r}: folder {str(path.parent)!r} does not exist; create it first.")
    return path


def _refuse_foreign_entries(path: Path, exists: bool = True) -> None:
    """Refuse, in one sentence, an existing output folder holding any entry wideml did not write there."""
    foreign = foreign_entries(path) if exists else []
    if foreign:
        raise StoreError(why_foreign(path, foreign))


def remove_path(path: Path) -> None:
    """Remove a file or folder; a folder's owner file goes last, and a signal cannot stop it half way."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        remove_tree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def is_scratch_name(name: str) -> bool:
    """Whether ``name`` is one of the hidden write-aside names (``.X.wideml-partial-*``, ``.X.wideml-old-*``)."""
    return is_aside_name(name)


def _owned_folder(parent: Path, name: str, kind: str) -> Path:
    """Create ``parent/.name.wideml-KIND-TOKEN`` with this process's owner record; removed if the run is interrupted."""
    for _ in range(10):
        folder = parent / aside_name(name, kind)
        try:
            create_claimed(folder, kind)  # never an existing folder: that one is not ours
            break
        except FileExistsError:
            continue
        except OSError as exc:
            if os.path.isdir(folder) and not os.listdir(folder):
                os.rmdir(folder)  # made by this call a moment ago, the record could not be written
            raise StoreError(f"cannot write in the output folder {parent} ({exc.strerror or exc}); choose a writable folder.") from None
    else:  # pragma: no cover - ten random 48-bit tokens all taken
        raise StoreError(f"cannot find a free temporary name in {parent}; remove old hidden .*.wideml-* folders there with `wideml clean`.")
    register_scratch(folder)
    return folder


def _require_no_other_writer(path: Path) -> None:
    """Refuse when another running wideml process is writing the output ``path`` (its ``.NAME.wideml-partial-*`` folder)."""
    prefix = aside_name(path.name, "partial").rsplit("-", 1)[0] + "-"  # ".NAME.wideml-partial-"
    for folder in candidates(path.parent, lambda n: n.startswith(prefix) and is_aside_name(n)):
        record = wideml_record(folder)
        if record is not None and record.get("run_id") != RUN_ID and verdict(folder) in ("running", "unknown"):
            raise StoreError(f"output {str(path)!r} is being written by another wideml run ({describe_owner(record)}); "
                             "wait for it to finish or choose another output.")


def _drop(folder: Path) -> None:
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
        StoreError naming the folder; nothing is kept. For an object-store URL
        (``s3://...``) a local path, put in place afterwards by
        :func:`wideml.storage.remote_write.remote_output`.
    """
    if is_remote(path):
        with remote_output(str(path), overwrite) as tmp:
            if workers_write:
                require_directory(tmp.parent, "the local copy of the output")
            if needed_bytes:
                require_free_space([(tmp.parent, needed_bytes, f"the local copy of the output {tmp.name}")])
            try:
                yield tmp
            except BaseException:
                wait_for_running_tasks()
                raise
        return
    path = Path(os.path.abspath(check_output(path, overwrite)))  # the graphs writing into tmp never carry a relative path
    if workers_write:
        require_directory(path.parent, "the output folder")  # on a dask cluster, workers write the output's chunks
    require_writable(path.parent, "the output folder")
    if needed_bytes:  # an intermediate store (rechunk's first stage) is checked too, before its pass
        what = "an intermediate copy of the output" if is_scratch_name(path.name) else f"the output {path.name}"
        require_free_space([(path.parent, needed_bytes, what)])
    _require_no_other_writer(path)
    aside = _owned_folder(path.parent, path.name, "partial")
    tmp = aside / path.name
    try:
        yield tmp
    except BaseException as exc:
        wait_for_running_tasks()
        _drop(aside)
        if is_disk_full(exc) and not isinstance(exc, KeyboardInterrupt):
            raise disk_full_error(path.parent, needed_bytes) from None
        raise
    try:
        if os.path.lexists(path) and not overwrite:
            raise StoreError(f"output {str(path)!r} appeared while this run was writing it (another program or run made it); "
                             "nothing was replaced: pass --overwrite (overwrite=True) to replace it, or choose another output.")
        if os.path.lexists(path) and not made_by_wideml(path):  # it changed while this run wrote
            raise StoreError(why_not_replaced(path))
        _refuse_foreign_entries(path, os.path.lexists(path))  # listed again: a file may have been added meanwhile
        mark(tmp, path.name)
        if os.path.lexists(path):
            old = _owned_folder(path.parent, path.name, "old")
            os.replace(path, old / path.name)
            foreign = foreign_entries(old / path.name)  # added between the listing and the move: put it all back
            if foreign:
                os.replace(old / path.name, path)
                _drop(old)
                raise StoreError(why_foreign(path, foreign))
            os.replace(tmp, path)
            _drop(old)
        else:
            os.replace(tmp, path)
    finally:
        _drop(aside)
    if is_scratch_name(path.name) and path.is_dir():
        # an intermediate store (e.g. rechunk's first stage) is itself a leftover if the run dies
        register_scratch(path)
        claim(path, "partial", made_here=True)
