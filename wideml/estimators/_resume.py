"""Resumable store fits: a fit's fingerprint, its model group and its pass checkpoints.

Used by :class:`wideml.estimators._projector.GramProjector` when a fit runs
inside :func:`wideml.runtime.checkpoint.resumable` (the CLI ``fit`` opens one
at ``<output>.wideml-work``). The model group then lives in the work
directory, so the p-sized outputs written chunk by chunk before an interrupt
are still there when the rerun skips those chunks; it is moved out when the
fit succeeds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from wideml.runtime.checkpoint import PassCheckpoint, Session, active, digest


def store_fingerprint(path: str) -> dict:
    """Path and a digest of every file's (name, size, modification time) under a store (or of the HDF5 file).

    Reading a store changes none of these; rewriting or touching any chunk,
    label or metadata file does.
    """
    real = os.path.realpath(path)
    h = hashlib.sha256()
    if os.path.isdir(real):
        for root, dirs, files in os.walk(real):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                h.update(f"{os.path.relpath(full, real)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    else:
        st = os.stat(real)
        h.update(f"{st.st_size}\0{st.st_mtime_ns}".encode())
    return {"path": real, "files": h.hexdigest()[:24]}


def begin(est: Any, data: Any) -> Session | None:
    """The active checkpoint session for this fit (started with its fingerprint), or None.

    Only a store-backed fit (a FeatureStore passed to ``fit``) made outside
    any other resumable fit of the same session checkpoints.
    """
    import wideml

    session = active()
    if session is None or session.begun or data.in_memory or "store" not in data.source:
        return None
    params = {k: v for k, v in est.get_params(deep=False).items() if k != "workdir"}
    store = dict(store_fingerprint(data.source["store"]), labels=digest(np.asarray(data.codes)), chunks=list(map(int, data.X.chunks[1])))
    session.begin({"version": wideml.__version__, "store": store, "parameters": dict(params, estimator=type(est).__name__)})
    return session


def model_group(session: Session, arrays: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> str:
    """The model group in the work directory: reused when resuming, else created with empty float64 arrays."""
    import zarr

    path = session.path("fitted.zarr")
    if os.path.isdir(path):
        try:
            group = zarr.open_group(path, mode="r")
            if all(name in group and tuple(group[name].shape) == tuple(shape) for name, (shape, _) in arrays.items()):
                return path
        except Exception:  # an unreadable group from an interrupted run: made again below
            pass
        shutil.rmtree(path, ignore_errors=True)
    group = zarr.create_group(store=path, zarr_format=3)
    for name, (shape, chunks) in arrays.items():
        group.create_array(name, shape=shape, chunks=chunks, dtype=np.float64, compressors=None, fill_value=0.0)
    return path


def settle_group(owner: Any, group: str, workdir: Any) -> str:
    """Move a finished model group out of the work directory (removed on success) into a fresh folder of ``workdir``."""
    from wideml.estimators._workdir import WORK_FOLDER_PREFIX, own_folder, resolve_workdir
    from wideml.runtime import ownership

    parent = resolve_workdir(workdir)
    os.makedirs(parent, exist_ok=True)
    folder = tempfile.mkdtemp(prefix=WORK_FOLDER_PREFIX, dir=parent)
    ownership.register_scratch(folder)
    ownership.claim(folder)
    dest = os.path.join(folder, "fitted.zarr")
    own_folder(owner, folder, dest)
    shutil.move(group, dest)
    return dest


def pass_checkpoint(session: Session | None, index: int, total: int, **key: Any) -> PassCheckpoint | None:
    """Checkpoints of pass ``index`` of ``total`` (None outside a resumable fit)."""
    return None if session is None else session.pass_checkpoint(index, total, key)


def run_pass(checkpoint: PassCheckpoint | None, build: Callable[[PassCheckpoint | None], Any], label: str,
             to_state: Callable[[Any], Any] = lambda v: v, from_state: Callable[[Any], Any] = lambda v: v) -> Any:
    """Compute one pass (the graph ``build(checkpoint)``), or take its result from a completed checkpoint."""
    from wideml.runtime import compute

    if checkpoint is not None:
        saved = checkpoint.result()
        if saved is not None:
            return from_state(saved)
    (value,) = compute(build(checkpoint), label=label)
    if checkpoint is not None:
        checkpoint.save_result(to_state(value))
    return value


def gram_state(stats: Any) -> tuple:
    """A :class:`~wideml.passes.gram.GramStats` as a checkpointable tuple."""
    return (stats.G, stats.r, float(stats.s), int(stats.n_features), [(m.P, m.Q) for m in stats.medians])


def gram_from_state(state: tuple) -> Any:
    from wideml.passes.gram import GramStats, MedianSet

    G, r, s, n_features, meds = state
    return GramStats(G=G, r=r, s=s, n_features=n_features, medians=[MedianSet(P, Q) for P, Q in meds])


__all__ = ["begin", "gram_from_state", "gram_state", "model_group", "pass_checkpoint", "run_pass", "settle_group", "store_fingerprint"]


def ensure_array(group: str, name: str, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    """Create the float64 array ``name`` in a model group, unless a resumed fit already holds it with this shape.

    A resumed fit keeps the chunks its interrupted run already wrote.
    """
    import zarr

    existing = zarr.open_group(group, mode="r+")
    if name in existing and tuple(existing[name].shape) == tuple(shape):
        return
    existing.create_array(name, shape=shape, chunks=chunks, dtype=np.float64, compressors=None, fill_value=0.0)
