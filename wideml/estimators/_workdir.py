"""Where store-backed fitted arrays live until a model is saved."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

import numpy as np

from wideml.exceptions import ConfigError


def resolve_workdir(workdir: str | os.PathLike | None) -> str:
    """The absolute, symlink-resolved parent folder of fitted-array groups.

    Parameters
    ----------
    workdir : path-like or None
        The estimator's ``workdir=`` parameter; None means the system
        temporary directory. A relative path is taken from the current
        directory *now*, so the graphs built on it never carry a relative path.

    Returns
    -------
    str
    """
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
    return os.path.realpath(os.path.expanduser(text))


def new_model_group(owner, workdir: str | os.PathLike | None, arrays: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> str:
    """Create a zarr group in a fresh temporary directory with empty float64 arrays.

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
        name -> (shape, chunks).

    Returns
    -------
    str
        Absolute path of the zarr group.
    """
    import zarr

    from wideml.runtime.cluster_check import require_directory

    parent = resolve_workdir(workdir)
    try:
        os.makedirs(parent, exist_ok=True)
        folder = tempfile.mkdtemp(prefix="wideml-fit-", dir=parent)
    except OSError as exc:
        raise ConfigError(f"cannot create a work folder in workdir {parent} ({exc.strerror or exc}); "
                          "pass a writable workdir=.") from None
    try:
        require_directory(folder, "the work directory (workdir=)")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    weakref.finalize(owner, shutil.rmtree, folder, True)
    path = os.path.join(folder, "fitted.zarr")
    group = zarr.create_group(store=path, zarr_format=3)
    for name, (shape, chunks) in arrays.items():
        group.create_array(name, shape=shape, chunks=chunks, dtype=np.float64, compressors=None, fill_value=0.0)
    return path
