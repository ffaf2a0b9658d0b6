"""Where store-backed fitted arrays live until a model is saved."""

from __future__ import annotations

import os
import tempfile
import weakref

import dask.array as da
import numpy as np
import zarr
from dask.highlevelgraph import HighLevelGraph

from wideml.exceptions import ConfigError, WidemlError
from wideml.inputs.door import store_path
from wideml.runner.work_reads import WORK_LAYER_PREFIX, checked_reads, member_name
from wideml.runtime.cluster_check import require_directory
from wideml.runtime.config import config_value
from wideml.runtime.owned_names import WORK_FOLDER_PREFIX, is_work_folder_name, work_folder_name  # noqa: F401
from wideml.runtime.ownership import create_claimed, sweep
from wideml.runtime.preflight import require_free_space, require_writable
from wideml.runtime.removal import register_scratch, remove_tree, unregister_scratch
from wideml.storage.urls import is_url, local_path_of


def array_specs(arrays: dict) -> list[tuple[str, tuple[int, ...], tuple[int, ...], np.dtype]]:
    """``(name, shape, chunks, dtype)`` of a model group's arrays ``name -> (shape, chunks[, dtype])`` (float64 by default)."""
    return [(name, tuple(spec[0]), tuple(spec[1]), np.dtype(spec[2] if len(spec) > 2 else np.float64)) for name, spec in arrays.items()]


def create_arrays(path: str, arrays: dict) -> None:
    """A new zarr v3 group at ``path`` holding empty uncompressed arrays ``name -> (shape, chunks[, dtype])``."""
    group = zarr.create_group(store=path, zarr_format=3)
    for name, shape, chunks, dtype in array_specs(arrays):
        group.create_array(name, shape=shape, chunks=chunks, dtype=dtype, compressors=None, fill_value=0)


def work_bytes(arrays: dict) -> int:
    """Bytes of the arrays ``name -> (shape, chunks[, dtype])`` of a work folder."""
    return int(sum(dtype.itemsize * int(np.prod(shape, dtype=np.int64)) for _, shape, _, dtype in array_specs(arrays)))


class WorkFolder:
    """Owns a work folder: it is removed when the last object holding this handle is collected.

    The estimator that made the folder holds the handle, and so does every dask
    array read from it (:func:`work_array`), so ``LOL(3).fit(store).components_``
    keeps its folder after the estimator itself is gone. A pickled handle (a
    graph sent to workers) is a plain path that owns nothing: the reads of
    such a graph check their chunk files (:func:`keep_folder_alive`), so once
    the folder is gone they raise instead of reading zarr's fill values, and
    a pickled estimator carries its work-folder arrays' values instead
    (:mod:`wideml.runner.pickling`). A deep copy shares the handle.
    """

    def __init__(self, folder: str):
        self.folder = folder
        weakref.finalize(self, _remove, folder)

    def __reduce__(self):
        return (str, (self.folder,))

    def __deepcopy__(self, memo):
        return self

    def __dask_tokenize__(self):
        return ("wideml-work-folder", self.folder)


#: group path -> handle of the folder holding it (while anything holds the handle).
_HANDLES: "weakref.WeakValueDictionary[str, WorkFolder]" = weakref.WeakValueDictionary()
#: estimator -> handles of the folders it made.
_OWNED: "weakref.WeakKeyDictionary[object, list]" = weakref.WeakKeyDictionary()


def own_folder(owner, folder: str, group_path: str) -> None:
    """Tie ``folder`` (holding the model group ``group_path``) to ``owner`` and to the arrays read from it."""
    handle = WorkFolder(folder)
    _HANDLES[group_path] = handle
    try:
        _OWNED.setdefault(owner, []).append(handle)
    except TypeError:  # an owner that cannot be weakly referenced: the handle lives as long as the process
        _OWNED_FOREVER.append(handle)


_OWNED_FOREVER: list = []


def work_array(group_path: str, name: str) -> da.Array:
    """The array ``name`` of a model group as a dask array that keeps the group's work folder alive."""
    return keep_folder_alive(da.from_zarr(f"{group_path}/{name}"), group_path, name)


def keep_folder_alive(arr: da.Array, group_path: str, name: str | None = None) -> da.Array:
    """``arr`` (an array of the model group ``group_path``, as stored) holding the folder's handle, its reads checked.

    Every block read is followed by a look for the chunk files it covers (a
    stat per chunk): a chunk whose file is missing, or a work folder that is
    gone (the graph was pickled and read in another process after the fitting
    one exited), raises :class:`~wideml.runner.work_reads.WorkFolderGone`
    instead of reading as zeros. ``name`` is the stored array's name in the
    group (found from ``arr``'s graph when not given).
    """
    handle = _HANDLES.get(group_path)
    if handle is None:  # a saved model's group: nothing to keep alive
        return arr
    arr = checked_reads(arr, os.path.join(group_path, name or member_name(arr, group_path)))
    key = f"{WORK_LAYER_PREFIX}{arr.name}"
    graph = HighLevelGraph.merge(arr.dask, HighLevelGraph.from_collections(key, {key: handle}))
    return da.Array(graph, arr.name, arr.chunks, meta=arr._meta)


def _remove(folder: str) -> None:
    remove_tree(folder)
    unregister_scratch(folder)


def sweep_work_folders(workdir: str | os.PathLike | None) -> list:
    """Remove the ``wideml-fit-*`` folders under ``workdir`` (resolved as for fitting) whose owner process is gone.

    Returns
    -------
    list of Path
        The folders removed.
    """
    return sweep(resolve_workdir(workdir), is_work_folder_name)


def make_work_folder(parent: str) -> str:
    """Create a fresh ``wideml-fit-TOKEN`` folder in ``parent`` (never an existing one), with this process's owner record.

    ``parent`` itself is made if missing, but only when its own parent exists
    (:func:`check_workdir`): a mistyped path is refused, not created.
    """
    check_workdir(parent)
    os.makedirs(parent, exist_ok=True)
    for _ in range(10):
        folder = os.path.join(parent, work_folder_name())
        try:
            create_claimed(folder, "work", 0o700)
            return folder
        except FileExistsError:
            continue
        except OSError:
            if os.path.isdir(folder) and not os.listdir(folder):
                os.rmdir(folder)  # made a moment ago by this call, its record could not be written
            raise
    raise FileExistsError(f"no free work folder name in {parent}")  # pragma: no cover - ten random 48-bit tokens taken


def resolve_workdir(workdir: str | os.PathLike | None) -> str:
    """The absolute, symlink-resolved parent folder of fitted-array groups.

    Parameters
    ----------
    workdir : path-like or None
        The estimator's ``workdir=`` parameter; None means the config key
        ``wideml.workdir`` (CLI ``--workdir``), and if that is unset, or is
        an object-store URL (which holds only ``wideml fit``'s checkpoints),
        the system temporary directory. A relative path is taken from the current
        directory *now*, so the graphs built on it never carry a relative path.
        A ``file://`` URL is the local path it names; any other URL
        (``s3://...``) is refused: it is never joined to the working folder.

    Returns
    -------
    str
    """
    if workdir is None:
        workdir = config_value("workdir")
        if isinstance(workdir, str) and is_url(workdir) and _local_path(workdir) is None:
            workdir = None  # config workdir on an object store (CLI --workdir s3://...): it holds the checkpoints of
            # `wideml fit` (runner/remote_workdir.py); work folders stay local, in the system temporary directory
    if workdir is None:
        return os.path.realpath(tempfile.gettempdir())
    try:
        text = os.fspath(workdir)
    except TypeError:
        raise ConfigError(f"workdir must be a path or None, got {type(workdir).__name__}; pass a folder path.") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise ConfigError("workdir is an empty string; pass a folder path or None for the system temporary directory.")
    if is_url(text):
        local = _local_path(text)
        if local is None:
            raise ConfigError(f"writing to object stores is not supported yet ({text.strip()} is a URL given as the work "
                              "folder); pass a local folder to workdir= (CLI --workdir).")
        text = local
    return os.path.realpath(os.path.expanduser(text))


def _local_path(url: str) -> str | None:
    """The local path of a ``file://`` URL, None for other URLs; a file URL naming another host is a ConfigError."""
    try:
        return local_path_of(url)
    except WidemlError as exc:
        raise ConfigError(str(exc)) from None


#: How the API's refusals name the work folder setting (the CLI passes its own, ``--workdir``).
API_OPTION = "workdir= or config workdir"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def refuse_workdir_inside(workdir: str, inputs, option: str = API_OPTION) -> None:
    """Refuse a work folder that is or lies inside one of ``inputs`` (``(name, path)`` pairs), in one sentence.

    Paths are compared after resolving symlinks; nothing is created. A work
    folder that holds an input (its parent folder, say) is accepted.
    """
    real = os.path.realpath(workdir)
    for name, path in inputs:
        if _inside(real, os.path.realpath(path)):
            raise ConfigError(f"the work folder {workdir} is or lies inside the input {name}; writing there would change "
                              f"that input: choose a {option} outside it.")


def check_workdir(workdir: str | os.PathLike | None = None, inputs=(), option: str = API_OPTION) -> str:
    """The resolved work folder (:func:`resolve_workdir`), refused in one sentence if wideml must not use it; creates nothing.

    Refused: a file; a folder that does not exist and whose parent does not
    either (a mistyped path is not created); a folder that is or lies inside
    an input (``inputs``: ``(name, path)`` pairs, :func:`refuse_workdir_inside`).
    ``option`` names the setting in the sentences (the CLI's ``--workdir``).

    Returns
    -------
    str
    """
    folder = resolve_workdir(workdir)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ConfigError(f"the work folder {folder} is a file, not a folder; pass a folder to {option}.")
    if not os.path.isdir(folder) and not os.path.isdir(os.path.dirname(folder)):
        raise ConfigError(f"the work folder {folder} does not exist, nor does its parent {os.path.dirname(folder)}; "
                          f"create it first or pass an existing folder to {option}; a mistyped path is not created.")
    refuse_workdir_inside(folder, inputs, option)
    return folder


def prepare_workdir(workdir: str | os.PathLike | None = None, inputs=(), option: str = API_OPTION) -> str:
    """:func:`check_workdir`, then the folder made if missing (its parent exists) and checked writable; returns it."""
    folder = check_workdir(workdir, inputs, option)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the work folder {folder} ({exc.strerror or exc}); pass a writable {option}.") from None
    require_writable(folder, f"the work folder ({option})")
    return folder


def input_folders(X) -> list[tuple[str, str]]:
    """``(name, path)`` of the folder a fit's input lives in, if wideml can tell: a feature store (or its X), a zarr array's store.

    Only local folders count (an HDF5 file cannot hold a folder).
    """
    path = store_path(X)
    if path is not None:
        return [(f"store {path}", path)]
    root = getattr(getattr(X, "store", None), "root", None)  # a zarr array on a local store
    if isinstance(root, (str, os.PathLike)) and os.path.isdir(root):
        folder = os.path.join(os.fspath(root), str(getattr(X, "path", "") or ""))
        return [(f"zarr array {os.path.realpath(folder)}", folder)]
    return []


def check_fit_workdir(estimator, X) -> str:
    """Before a fit makes anything: its work folder (``estimator.workdir``, else config ``workdir``) checked against X.

    The checks of :func:`check_workdir`, with X's folder as the input
    (:func:`input_folders`), so a work folder inside the training store is
    refused before any ``wideml-fit-*`` folder is written into it.
    """
    return check_workdir(getattr(estimator, "workdir", None), input_folders(X))


def new_model_group(owner, workdir: str | os.PathLike | None, arrays: dict) -> str:
    """Create a zarr group in a fresh temporary directory with empty arrays (float64 unless a dtype is given).

    The directory is made under the absolute, resolved form of ``workdir``,
    so the returned path (which the passes' graphs carry) is absolute. On a dask.distributed scheduler every worker
    is first asked whether it can write into that folder (the pass that fills
    the arrays runs there): if one cannot, a StoreError names it, before any
    pass.

    Parameters
    ----------
    owner : object
        The estimator; the directory is deleted when it is garbage-collected.
    workdir : path-like or None
        Parent directory (default: the system temporary directory).
    arrays : dict
        name -> (shape, chunks) or (shape, chunks, dtype).

    Returns
    -------
    str
        Absolute path of the zarr group.
    """
    parent = resolve_workdir(workdir)
    try:
        folder = make_work_folder(parent)
    except OSError as exc:
        raise ConfigError(f"cannot create a work folder in workdir {parent} ({exc.strerror or exc}); "
                          "pass a writable workdir= (CLI --workdir).") from None
    try:
        register_scratch(folder)
        require_free_space([(folder, work_bytes(arrays), "the work folder (workdir=, CLI --workdir)")])
        require_directory(folder, "the work directory (workdir=)")
    except OSError as exc:
        _remove(folder)
        raise ConfigError(f"cannot write in workdir {parent} ({exc.strerror or exc}); pass a writable workdir= (CLI --workdir).") from None
    except BaseException:
        _remove(folder)
        raise
    path = os.path.join(folder, "fitted.zarr")
    own_folder(owner, folder, path)
    create_arrays(path, arrays)
    return path
