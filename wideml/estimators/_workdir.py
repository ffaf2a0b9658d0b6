"""Where store-backed fitted arrays live until a model is saved."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

import numpy as np


def new_model_group(owner, workdir: str | None, arrays: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> str:
    """Create a zarr group in a fresh temporary directory with empty float64 arrays.

    Parameters
    ----------
    owner : object
        The estimator; the directory is deleted when it is garbage-collected.
    workdir : str or None
        Parent directory (default: the system temporary directory).
    arrays : dict
        name -> (shape, chunks).

    Returns
    -------
    str
        Path of the zarr group.
    """
    import zarr

    parent = workdir or tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="wideml-fit-", dir=parent)
    weakref.finalize(owner, shutil.rmtree, folder, True)
    path = os.path.join(folder, "fitted.zarr")
    group = zarr.create_group(store=path, zarr_format=3)
    for name, (shape, chunks) in arrays.items():
        group.create_array(name, shape=shape, chunks=chunks, dtype=np.float64, compressors=None, fill_value=0.0)
    return path
