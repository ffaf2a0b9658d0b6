"""Ask dask.distributed workers whether they see the stores and folders a pass needs.

A worker started in another directory, or on a machine that does not mount
the same filesystem, reads a missing zarr chunk as its fill value and writes
its outputs where nobody looks: the fit "succeeds" on zeros. So before a pass
runs on a distributed scheduler, every worker is asked (``client.run``):

* whether it can **import** what wideml's tasks need (:data:`REQUIRED_MODULES`:
  wideml itself, at this client's version, numpy, scipy, dask, zarr,
  numcodecs, h5py). This probe is sent by value (its code travels with it),
  so a worker without wideml answers too (:func:`check_workers`);

* for each **store** the graph reads: does the same absolute path exist there,
  can the worker read its metadata, and does it have the same fingerprint (a
  hash of its zarr metadata files, or an HDF5 / other file's size and
  modification time)?
* for each **directory** workers write into (model groups, work directories,
  outputs): does it exist there, is it the same folder (a marker file the
  client writes must be visible), and can the worker create a file in it?

Design: this module imports no other wideml layer, and of the runtime only
:mod:`wideml.runtime.client`. The single compute entry point
(:func:`wideml.runtime.compute.compute`) finds the stores a graph reads by
walking its tasks for *path carriers*: objects with a ``__wideml_paths__()``
method returning ``[(path, member), ...]``, objects of ``wideml.*`` classes
with an absolute ``path`` attribute (the chunk readers) and zarr arrays. Code
that makes workers *write* into a folder registers it with
:func:`require_directory` (the estimators' work directories, every write-aside
output). Answers are cached per (client, path, fingerprint, worker), so each
worker is asked once per process, not once per pass.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import threading
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from dask.base import collections_to_expr

from wideml._version import __version__
from wideml.exceptions import StoreError
from wideml.runtime.client import active_client


IN_MEMORY_MESSAGE = ("an in-memory zarr array cannot be read by cluster workers; write it to a store on a shared "
                     "filesystem or pass a numpy array")
_SHARED_FIX = "the paths must be on a filesystem shared by all workers (or start the workers where they can see it)"
#: Metadata files whose bytes identify a zarr v3 store or array.
_ZARR_META = ("zarr.json",)

_checked: set[tuple] = set()
_lock = threading.Lock()


# ----------------------------------------------------------------------------- fingerprints (run on both sides)
def fingerprint(path: str, member: str | None = None) -> str | None:
    """An identity of the store at ``path`` from its metadata alone, or None if there is nothing there.

    A directory (zarr group or array): a hash of its ``zarr.json`` and, when
    ``member`` names an array inside it, of that array's ``zarr.json``. A file
    (HDF5, .npy, ...): its size and modification time.

    Parameters
    ----------
    path : str
        Absolute path.
    member : str, optional
        Array inside a zarr group (e.g. ``"X"``).

    Returns
    -------
    str or None
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.path.isdir(path):
        return f"file:{st.st_size}:{st.st_mtime_ns}"
    digest = hashlib.sha256()
    folders = [path] + ([os.path.join(path, member)] if member else [])
    for folder in folders:
        for name in _ZARR_META:
            try:
                with open(os.path.join(folder, name), "rb") as fh:
                    digest.update(fh.read())
            except OSError:
                digest.update(b"<none>")
    return "dir:" + digest.hexdigest()[:32]


def unreadable_metadata(path: str, member: str | None = None) -> str | None:
    """Why the metadata of the store at ``path`` cannot be read here (e.g. ``"Permission denied"``), or None when it can.

    A zarr store's ``zarr.json`` files (the group's and ``member``'s) that
    exist must open; a file store (HDF5, ...) must open for reading. A
    missing path is :func:`fingerprint`'s to report.
    """
    if os.path.isdir(path):
        names = [os.path.join(folder, name) for folder in [path] + ([os.path.join(path, member)] if member else [])
                 for name in _ZARR_META]
        names = [name for name in names if os.path.lexists(name)]
    else:
        names = [path] if os.path.lexists(path) else []
    for name in names:
        try:
            with open(name, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            return f"{exc.strerror or type(exc).__name__} on {name}"
    return None


def _probe(stores: list[tuple[str, str | None]], folders: list[tuple[str, str]]) -> dict[str, Any]:
    """Run on a worker: the fingerprint of each store, and for each folder whether the marker is seen and a file can be made."""
    out: dict[str, Any] = {"stores": [fingerprint(p, m) for p, m in stores], "folders": [],
                           "unreadable": [unreadable_metadata(p, m) for p, m in stores]}
    for folder, marker in folders:
        if not os.path.isdir(folder):
            out["folders"].append("missing")
            continue
        if not os.path.exists(os.path.join(folder, marker)):
            out["folders"].append("other")
            continue
        try:
            probe = os.path.join(folder, f".wideml-probe-{uuid.uuid4().hex[:12]}")
            with open(probe, "wb"):
                pass
            os.remove(probe)
        except OSError as exc:
            out["folders"].append(f"unwritable:{exc.strerror or type(exc).__name__}")
            continue
        out["folders"].append("ok")
    return out


# ----------------------------------------------------------------------------- finding the stores a graph reads
def is_in_memory_zarr(obj: Any) -> bool:
    """Whether ``obj`` is a zarr array whose store lives in this process's memory (MemoryStore, ``memory://``)."""
    store = getattr(getattr(obj, "store_path", None), "store", None)
    if store is None:
        return False
    kind = type(store).__name__
    if kind in ("MemoryStore", "GpuMemoryStore", "ManagedMemoryStore"):
        return True
    protocol = getattr(getattr(store, "fs", None), "protocol", None)
    protocols = protocol if isinstance(protocol, (tuple, list)) else (protocol,)
    return kind == "FsspecStore" and any(p in ("memory",) for p in protocols)


def zarr_location(obj: Any) -> tuple[str, str | None] | None:
    """(root, array path inside it) of a zarr array on local files (a LocalStore, or fsspec's local filesystem), else None.

    The root is returned as the store holds it: a LocalStore opened with a relative path keeps it relative.
    """
    store_path = getattr(obj, "store_path", None)
    store = getattr(store_path, "store", None)
    root = getattr(store, "root", None)
    if root is None and type(store).__name__ == "FsspecStore":  # e.g. dask's from_zarr("x.zarr"): fsspec's local files
        protocol = getattr(getattr(store, "fs", None), "protocol", None)
        protocols = protocol if isinstance(protocol, (tuple, list)) else (protocol,)
        root = getattr(store, "path", None) if any(p in ("file", "local") for p in protocols) else None
    if root is None or not hasattr(obj, "metadata"):
        return None
    return os.fspath(root), (getattr(store_path, "path", "") or None)


def paths_of(obj: Any) -> list[tuple[str, str | None]]:
    """The (path, member) pairs a graph object makes workers read; raises for an in-memory zarr array."""
    hook = getattr(type(obj), "__wideml_paths__", None)
    if hook is not None:
        return list(hook(obj))
    if is_in_memory_zarr(obj):
        raise StoreError(IN_MEMORY_MESSAGE + ".")
    if type(obj).__module__.startswith("zarr") and zarr_location(obj) is not None:
        return [zarr_location(obj)]
    path = getattr(obj, "path", None) if type(obj).__module__.startswith("wideml.") else None
    if isinstance(path, str) and path:
        member = getattr(obj, "name", None)
        return [(path, member if isinstance(member, str) else None)]
    return []


_LEAVES = (str, bytes, int, float, complex, bool, type(None))


def _children(node: Any) -> Iterator[Any]:
    """What a container or a dask task node holds (its arguments, its data, its function)."""
    if isinstance(node, dict):
        yield from node.values()
    elif isinstance(node, (list, tuple, set, frozenset)):
        yield from node
    else:  # dask._task_spec nodes: Task (func, args, kwargs), DataNode (value), containers (args)
        for attr in ("func", "value"):
            if hasattr(node, attr):
                yield getattr(node, attr)
        args = getattr(node, "args", ())
        yield from args if isinstance(args, (tuple, list)) else ()
        kwargs = getattr(node, "kwargs", {})
        yield from kwargs.values() if isinstance(kwargs, dict) else ()


def graph_paths(collections: Iterable[Any]) -> list[tuple[str, str | None]]:
    """The stores read by the tasks of ``collections`` (dask collections or delayed objects), deduplicated."""
    graph = collections_to_expr(list(collections), optimize_graph=False).__dask_graph__()
    found: dict[tuple[str, str | None], None] = {}
    seen: set[int] = set()
    stack = list(dict(graph).values())
    while stack:
        node = stack.pop()
        if isinstance(node, _LEAVES) or type(node).__module__ == "numpy" or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node).__module__.startswith("dask."):
            stack.extend(_children(node))
            continue
        if isinstance(node, (dict, list, tuple, set, frozenset)):
            stack.extend(_children(node))
            continue
        if isinstance(node, functools.partial):
            stack.extend([*node.args, *node.keywords.values()])
            continue
        for item in paths_of(node):
            found.setdefault((os.fspath(item[0]), item[1]), None)
    return list(found)


# ----------------------------------------------------------------------------- asking the workers
def _workers(client) -> dict[str, str]:
    """worker address -> its name (or address)."""
    info = client.scheduler_info(n_workers=-1) if _takes_n_workers(client) else client.scheduler_info()
    return {addr: str(w.get("name", addr)) for addr, w in info.get("workers", {}).items()}


def _takes_n_workers(client) -> bool:
    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        return False


def _who(address: str, name: str) -> str:
    return f"dask worker {name} ({address})" if name != address else f"dask worker {address}"


def _ask(client, workers: list[str], stores: list[tuple[str, str | None]], folders: list[tuple[str, str]]) -> dict:
    try:
        return client.run(_probe, stores, folders, workers=workers, on_error="return")
    except Exception as exc:  # noqa: BLE001 - a cluster that cannot run the check is reported, not ignored
        raise StoreError(f"cannot ask the dask workers whether they see {stores[0][0] if stores else folders[0][0]} "
                         f"({type(exc).__name__}); check that every worker runs the same wideml as this client.") from None


#: Modules every worker must import for wideml's tasks (h5py: HDF5 stores and inputs).
REQUIRED_MODULES = ("wideml", "numpy", "scipy", "dask", "distributed", "zarr", "numcodecs", "h5py")

#: The import probe's source: run in a namespace of its own so that cloudpickle sends it by value (a worker
#: without wideml can run it and say so).
_IMPORT_PROBE = """
def import_probe(modules):
    import importlib
    out = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except BaseException as exc:
            text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            out[name] = ("missing", type(exc).__name__ + ": " + text)
            continue
        out[name] = ("ok", str(getattr(module, "__version__", "") or ""))
    return out
"""


def _import_probe():
    """The import probe as a function of a module that does not exist (``__wideml_probe__``): pickled by value."""
    namespace: dict[str, Any] = {"__name__": "__wideml_probe__"}
    exec(compile(_IMPORT_PROBE, "<wideml worker import probe>", "exec"), namespace)  # noqa: S102 - our own constant source
    return namespace["import_probe"]


def check_workers(client, modules: Iterable[str] | None = None) -> None:
    """Refuse (StoreError) unless every worker of ``client`` imports :data:`REQUIRED_MODULES` and runs this client's wideml.

    Asked once per worker and process (a worker that joins later is asked
    before the next pass).

    Parameters
    ----------
    client : distributed.Client
    modules : iterable of str, optional
        The modules to import (default :data:`REQUIRED_MODULES`).

    Raises
    ------
    StoreError
        One sentence naming the worker, the module it cannot import (or the
        wideml version it runs) and the fix.
    """
    modules = tuple(REQUIRED_MODULES if modules is None else modules)
    names = _workers(client)
    new = [w for w in names if (client.id, "imports", modules, w) not in _checked]
    if not new:
        return
    try:
        answers = client.run(_import_probe(), list(modules), workers=new, on_error="return")
    except Exception as exc:  # noqa: BLE001 - a cluster that cannot run the check is reported, not ignored
        raise StoreError(f"cannot ask the dask workers whether they can import wideml ({type(exc).__name__}: "
                         f"{(str(exc).strip().splitlines() or [''])[0]}); check that the workers run and that this "
                         "client can reach them.") from None
    for w in new:
        answer = answers.get(w)
        if isinstance(answer, BaseException) or not isinstance(answer, dict):
            raise StoreError(f"{_who(w, names[w])} could not run wideml's import check ({type(answer).__name__}); "
                             "start the workers with the same Python environment as this client.")
        for module in modules:
            state, detail = answer.get(module, ("missing", "no answer"))
            if state != "ok":
                raise StoreError(f"{_who(w, names[w])} cannot import {module} ({detail}); install "
                                 f"{'wideml ' + __version__ if module == 'wideml' else module} in the workers' Python "
                                 "environment, or start the workers with this client's Python.")
        version = answer.get("wideml", ("", ""))[1] if "wideml" in modules else __version__
        if version != __version__:
            raise StoreError(f"{_who(w, names[w])} runs wideml {version or '(unknown version)'} but this client runs "
                             f"wideml {__version__}; install the same wideml version on the workers.")
    with _lock:
        _checked.update((client.id, "imports", modules, w) for w in new)


def check_stores(client, stores: Iterable[tuple[str, str | None]]) -> None:
    """Refuse (StoreError) unless every worker of ``client`` sees each store with this process's fingerprint.

    Parameters
    ----------
    client : distributed.Client
    stores : iterable of (path, member)
        Absolute store paths (and the array inside a zarr group, if any).

    Raises
    ------
    StoreError
        One sentence naming the worker, what it cannot see and the fix.
    """
    names = _workers(client)
    todo = []
    for path, member in dict.fromkeys(stores):
        if not os.path.isabs(path):
            raise StoreError(f"a pass would read {path!r} through a relative path, which workers started in another "
                             "directory resolve elsewhere; open it with an absolute path.")
        local = fingerprint(path, member)
        if local is None:
            raise StoreError(f"no store at {path} (it was moved or deleted after it was opened); check the path.")
        new = [w for w in names if (client.id, "store", path, member, local, w) not in _checked]
        if new:
            todo.append((path, member, local, new))
    if not todo:
        return
    workers = sorted({w for *_, new in todo for w in new})
    answers = _ask(client, workers, [(p, m) for p, m, _, _ in todo], [])
    for w in workers:
        answer = answers.get(w)
        if isinstance(answer, BaseException) or not isinstance(answer, dict):
            raise StoreError(f"{_who(w, names[w])} could not check the store {todo[0][0]} ({type(answer).__name__}); "
                             "check that every worker runs the same wideml as this client.")
        unreadable = answer.get("unreadable") or [None] * len(todo)
        for (path, member, local, new), seen, denied in zip(todo, answer["stores"], unreadable):
            if w not in new:
                continue
            if seen is None:
                raise StoreError(f"{_who(w, names[w])} cannot see the store {path} (no such path there); {_SHARED_FIX}.")
            if denied:
                raise StoreError(f"{_who(w, names[w])} cannot read the metadata of the store {path} ({denied}); "
                                 "give the user the workers run as read access to the store.")
            if seen != local:
                raise StoreError(f"{_who(w, names[w])} sees a different store at {path} than this process does "
                                 f"(its metadata differ); {_SHARED_FIX}.")
    with _lock:
        for path, member, local, new in todo:
            _checked.update((client.id, "store", path, member, local, w) for w in new)


def check_directories(client, folders: Iterable[tuple[str, str]]) -> None:
    """Refuse (StoreError) unless every worker sees each folder (the same one) and can write into it.

    Parameters
    ----------
    client : distributed.Client
    folders : iterable of (path, what)
        Absolute folder paths and a few words saying what they are for
        (e.g. ``"the model's folder"``).
    """
    names = _workers(client)
    todo = []
    for folder, what in dict.fromkeys(folders):
        folder = os.path.abspath(folder)
        new = [w for w in names if (client.id, "dir", folder, w) not in _checked]
        if new:
            todo.append((folder, what, new))
    if not todo:
        return
    markers = []
    try:
        for folder, what, _ in todo:
            marker = f".wideml-shared-{uuid.uuid4().hex[:12]}"
            try:
                with open(os.path.join(folder, marker), "wb"):
                    pass
            except OSError as exc:
                raise StoreError(f"cannot write into {what} {folder} ({exc.strerror or exc}); choose a writable folder.") from None
            markers.append((folder, marker))
        workers = sorted({w for *_, new in todo for w in new})
        answers = _ask(client, workers, [], markers)
    finally:
        for folder, marker in markers:
            try:
                os.remove(os.path.join(folder, marker))
            except OSError:
                pass
    for w in workers:
        answer = answers.get(w)
        if isinstance(answer, BaseException) or not isinstance(answer, dict):
            raise StoreError(f"{_who(w, names[w])} could not check {todo[0][1]} {todo[0][0]} ({type(answer).__name__}); "
                             "check that every worker runs the same wideml as this client.")
        for (folder, what, new), state in zip(todo, answer["folders"]):
            if w not in new or state == "ok":
                continue
            if state == "missing":
                problem = f"cannot see {what} {folder} (no such folder there)"
            elif state == "other":
                problem = f"sees a different folder than this process at {folder} ({what})"
            else:
                problem = f"cannot write into {what} {folder} ({state.partition(':')[2]})"
            raise StoreError(f"{_who(w, names[w])} {problem}; {_SHARED_FIX}.")
    with _lock:
        for folder, _, new in todo:
            _checked.update((client.id, "dir", folder, w) for w in new)


def require_directory(path: str | os.PathLike, what: str) -> None:
    """If a dask.distributed client is active, check that all its workers can write into the folder ``path``.

    Call this before a pass makes workers write into ``path`` (a work
    directory, the folder of an output written aside and renamed). A no-op
    on the local schedulers.
    """
    client = active_client()
    if client is not None and hasattr(client, "run") and hasattr(client, "scheduler_info"):
        check_directories(client, [(os.path.abspath(os.fspath(path)), what)])


def check_graph(client, collections: Iterable[Any]) -> None:
    """Check that ``client``'s workers import wideml (:func:`check_workers`) and see every store the tasks of ``collections`` read (:func:`check_stores`)."""
    check_workers(client)
    stores = graph_paths(collections)
    if stores:
        check_stores(client, stores)


def forget() -> None:
    """Drop the cache of answers (tests; or after the cluster's filesystems changed)."""
    with _lock:
        _checked.clear()


__all__ = ["IN_MEMORY_MESSAGE", "REQUIRED_MODULES", "check_directories", "check_graph", "check_stores", "check_workers",
           "fingerprint", "forget", "graph_paths", "is_in_memory_zarr", "paths_of", "require_directory",
           "unreadable_metadata", "zarr_location"]
