"""Resumable store fits: a fit's fingerprint, its model group and its pass checkpoints.

Used by :class:`wideml.estimators.gram.projector.GramProjector` when a fit runs
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
    params = {k: v for k, v in est.get_params(deep=False).items() if k != "workdir"}
    return begin_with(data, type(est).__name__, params)


def fingerprint(data: Any, name: str, params: dict) -> dict | None:
    """The fingerprint (version, store, parameters) of a store-backed fit or run ``name``; None for other input."""
    from wideml._version import __version__

    if data.in_memory or "store" not in data.source:
        return None
    store = dict(store_fingerprint(data.source["store"]), labels=digest(np.asarray(data.codes)), chunks=list(map(int, data.X.chunks[1])))
    return {"version": __version__, "store": store, "parameters": dict(params, estimator=name)}


def begin_with(data: Any, name: str, params: dict) -> Session | None:
    """:func:`begin` for any run ``name`` (an estimator's fit, ``cross_validate_dims``...) with parameters ``params``."""
    session = active()
    if session is None or session.begun:
        return None
    parts = fingerprint(data, name, params)
    if parts is None:
        return None
    session.begin(parts)
    return session


def begun() -> Session | None:
    """The active session if a run has begun it (for steps of that run: CV folds), else None."""
    session = active()
    return session if session is not None and session.begun else None


def saved_step(session: Session | None, index: int, total: int, key: dict, run: Callable[[], Any], label: str | None = None) -> Any:
    """``run()`` (a whole step, e.g. one CV fold's fit and error), or its result saved by an interrupted run.

    The result (a nesting of arrays and numbers) is saved as pass ``index``'s
    result once ``run`` returns, so a rerun skips the step entirely.
    """
    ck = None if session is None else session.pass_checkpoint(index, total, key)
    if ck is not None:
        ck.label = label or ck.label
        saved = ck.result()
        if saved is not None:
            return saved
    value = run()
    if ck is not None:
        ck.save_result(value)
    return value


def model_group(session: Session, arrays: dict) -> str:
    """The model group in the work directory: reused when resuming, else created with empty arrays ``name -> (shape, chunks[, dtype])``."""
    import zarr

    path = session.path("fitted.zarr")
    if not os.path.isdir(path) and session.has_checkpoints():
        # the passes saved so far wrote p-sized arrays into a group that is gone: the interrupted run had moved
        # it out after its last pass (settle_group), and its work folder went with that run
        session.start_over("the interrupted run had already moved its fitted arrays out of it, and they are gone")
    if os.path.isdir(path):
        try:
            group = zarr.open_group(path, mode="r")
            if all(name in group and tuple(group[name].shape) == tuple(spec[0]) for name, spec in arrays.items()):
                return path
        except Exception:  # an unreadable group from an interrupted run: made again below
            pass
        shutil.rmtree(path, ignore_errors=True)
    from wideml.runner.workdir import create_arrays

    create_arrays(path, arrays)
    return path


def settle_group(owner: Any, group: str, workdir: Any) -> str:
    """Move a finished model group out of the work directory (removed on success) into a fresh folder of ``workdir``."""
    from wideml.runner.workdir import make_work_folder, own_folder, resolve_workdir
    from wideml.runtime.removal import register_scratch

    folder = make_work_folder(resolve_workdir(workdir))
    register_scratch(folder)
    dest = os.path.join(folder, "fitted.zarr")
    own_folder(owner, folder, dest)
    shutil.move(group, dest)
    return dest


def pass_checkpoint(session: Session | None, index: int, total: int, label: str | None = None, **key: Any) -> PassCheckpoint | None:
    """Checkpoints of pass ``index`` of ``total`` (None outside a resumable fit); ``label`` names it in messages."""
    ck = None if session is None else session.pass_checkpoint(index, total, key)
    if ck is not None and label:
        ck.label = label
    return ck


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


def fields_state(value: Any) -> tuple:
    """A dataclass's fields, in order, as a checkpointable tuple (rebuilt with ``Class(*state)``)."""
    import dataclasses

    return tuple(getattr(value, f.name) for f in dataclasses.fields(value))


def gram_from_state(state: tuple) -> Any:
    from wideml.passes.gram import GramStats, MedianSet

    G, r, s, n_features, meds = state
    return GramStats(G=G, r=r, s=s, n_features=n_features, medians=[MedianSet(P, Q) for P, Q in meds])


__all__ = ["AUTO_FOLDER_PREFIX", "auto_folder", "auto_resumable", "begin", "begin_with", "begun", "ensure_array", "fields_state", "fingerprint",
           "saved_step", "gram_from_state", "gram_state", "model_group", "pass_checkpoint", "run_pass", "settle_group", "store_fingerprint"]


def ensure_array(group: str, name: str, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    """Create the float64 array ``name`` in a model group, unless a resumed fit already holds it with this shape.

    A resumed fit keeps the chunks its interrupted run already wrote.
    """
    import zarr

    existing = zarr.open_group(group, mode="r+")
    if name in existing and tuple(existing[name].shape) == tuple(shape):
        return
    existing.create_array(name, shape=shape, chunks=chunks, dtype=np.float64, compressors=None, fill_value=0.0)


#: Name prefix of the automatic work directories of API fits under ``wideml.resume`` (in ``wideml.workdir``).
AUTO_FOLDER_PREFIX = "wideml-resume-"


def auto_folder(est: Any, X: Any) -> str | None:
    """The automatic work directory of ``est.fit(X)`` when config ``wideml.resume`` is true, else None.

    Only a fit given a FeatureStore, outside any :func:`~wideml.runtime.checkpoint.resumable`
    block, gets one: ``<workdir>/wideml-resume-<key>``, the key a digest of the store's path,
    the estimator's class and its parameters (so a rerun of the same fit finds it, a fit
    with other parameters gets its own). A touched store is caught by the fit's fingerprint.
    """
    import json

    from wideml.runtime.config import config_bool
    from wideml.storage.featurestore import FeatureStore

    if active() is not None or not isinstance(X, FeatureStore) or not config_bool("resume"):
        return None
    from wideml.runner.workdir import resolve_workdir

    params = {k: v for k, v in est.get_params(deep=False).items() if k != "workdir"}
    text = json.dumps([os.path.realpath(str(X.path)), type(est).__name__, params], sort_keys=True, default=repr)
    return os.path.join(resolve_workdir(getattr(est, "workdir", None)), AUTO_FOLDER_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16])


def auto_resumable(fit: Callable) -> Callable:
    """Decorate an estimator's ``fit(X, y=None)``: under config ``wideml.resume`` a store fit runs resumable.

    Inside ``with dask.config.set({"wideml.resume": True})`` a fit on a FeatureStore
    checkpoints its passes into :func:`auto_folder` (removed when the fit succeeds), and
    the same fit run again after a crash resumes from it and says so on stderr.
    """
    import functools

    @functools.wraps(fit)
    def wrapper(self, X, *args, **kwargs):
        folder = auto_folder(self, X)
        if folder is None:
            return fit(self, X, *args, **kwargs)
        from wideml.runtime.checkpoint import resumable

        with resumable(folder, resume=True):
            return fit(self, X, *args, **kwargs)

    return wrapper
