"""Resumable store fits: a fit's fingerprint, its model group and its pass checkpoints.

Used by the fit runner (:class:`wideml.runner.fit_runner.FitPasses`) when a fit
runs inside :func:`wideml.runtime.checkpoint.resumable` (the CLI ``fit`` opens
one at ``<output>.wideml-work``). The model group then lives in the work
directory, so the p-sized outputs written chunk by chunk before an interrupt
are still there when the rerun skips those chunks; it is moved out when the
fit succeeds. :class:`SavedSteps` saves whole steps of a run (one CV fold's
fit and error) the same way.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from typing import Any

import numpy as np
import zarr

from wideml._version import __version__
from wideml.passes.spec import Pass
from wideml.runner.workdir import check_fit_workdir, create_arrays, make_work_folder, own_folder, resolve_workdir
from wideml import runtime  # runtime.compute, looked up when a pass runs (tests record the labels through it)
from wideml.runtime.checkpoint import PassCheckpoint, Session, active, digest, resumable
from wideml.runtime.config import config_bool
from wideml.runtime.removal import register_scratch
from wideml.storage.featurestore import FeatureStore
from wideml.storage.file_digest import files_digest
from wideml.storage.remote_store import remote_objects_digest


def store_fingerprint(path: str) -> dict:
    """Path and a digest of every file's (name, size, modification time) under a store (or of the HDF5 file).

    Reading a store changes none of these; rewriting or touching any chunk,
    label or metadata file does.
    """
    real = os.path.realpath(path)
    return {"path": real, "files": files_digest(real)[:24]}


def begin(est: Any, data: Any) -> Session | None:
    """The active checkpoint session for this fit (started with its fingerprint), or None.

    Only a store-backed fit (a FeatureStore passed to ``fit``) made outside
    any other resumable fit of the same session checkpoints.
    """
    params = {k: v for k, v in est.get_params(deep=False).items() if k != "workdir"}
    return begin_with(data, type(est).__name__, params)


def fingerprint(data: Any, name: str, params: dict) -> dict | None:
    """The fingerprint (version, store, parameters) of a store-backed fit or run ``name``; None for other input."""
    if data.in_memory or not ("store" in data.source or "url" in data.source):
        return None
    if "url" in data.source:  # a store on an object store: its objects' keys, sizes and ETags
        objects = remote_objects_digest(data.source["url"])
        if objects is None:
            return None
        where = {"url": data.source["url"], "objects": objects}
    else:
        where = store_fingerprint(data.source["store"])
    store = dict(where, labels=digest(np.asarray(data.codes)), chunks=list(map(int, data.X.chunks[1])))
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


class SavedSteps:
    """Whole steps of a run that is not a fit (e.g. each CV fold's fit and error), each saved once done, so a rerun skips it.

    Parameters
    ----------
    data : FitInput
        The run's input; a store's run inside a resumable block checkpoints
        (its fingerprint: ``name``, ``params``), or joins the session a run of
        the same block has begun.
    name : str
        The run's name in its fingerprint.
    params : dict
    first : int
        Checkpoint index of the first step (keeps the run's steps apart from others in the session).
    total : int
        Steps of the run (for messages).
    """

    def __init__(self, data: Any, name: str, params: dict, first: int, total: int):
        self.session = begin_with(data, name, params) or begun()
        self.first, self.total = int(first), int(total)

    def run(self, index: int, key: dict, step: Callable[[], Any], label: str) -> Any:
        """``step()`` (step ``index``, from 0), or its result saved by an interrupted run; ``label`` names it in messages."""
        return saved_step(self.session, self.first + index, self.total, key, step, label=label)


def model_group(session: Session, arrays: dict) -> str:
    """The model group in the work directory: reused when resuming, else created with empty arrays ``name -> (shape, chunks[, dtype])``."""
    path = session.path("fitted.zarr")
    if not os.path.isdir(path) and session.has_checkpoints():
        # the passes saved so far wrote p-sized arrays into a group that is gone: the interrupted run had moved
        # it out after its last pass (settle_group), and its work folder went with that run
        session.start_over("the interrupted run had finished its passes and was writing the model when it stopped "
                           "(its fitted arrays had left this folder for that write)")
    if os.path.isdir(path):
        try:
            group = zarr.open_group(path, mode="r")
            if all(name in group and tuple(group[name].shape) == tuple(spec[0]) for name, spec in arrays.items()):
                return path
        except Exception:  # an unreadable group from an interrupted run: made again below
            pass
        shutil.rmtree(path, ignore_errors=True)
    create_arrays(path, arrays)
    return path


def settle_group(owner: Any, group: str, workdir: Any) -> str:
    """Move a finished model group out of the work directory (removed on success) into a fresh folder of ``workdir``."""
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


def run_pass(checkpoint: PassCheckpoint | None, step: Pass, label: str) -> Any:
    """Compute one pass (its graph, given the checkpoint of its lanes), or take its result from a completed checkpoint.

    A checkpointed pass's result is saved as :meth:`Pass.save <wideml.passes.spec.Pass.save>`
    makes it, and restored by :meth:`Pass.restore <wideml.passes.spec.Pass.restore>`.
    """
    if checkpoint is not None:
        saved = checkpoint.result()
        if saved is not None:
            return step.restore(saved)
    (value,) = runtime.compute(step.graph(checkpoint), label=label)
    if checkpoint is not None:
        checkpoint.save_result(step.save(value))
    return value


__all__ = ["AUTO_FOLDER_PREFIX", "SavedSteps", "auto_folder", "auto_resumable", "begin", "begin_with", "begun", "ensure_array",
           "fingerprint", "model_group", "pass_checkpoint", "run_pass", "saved_step", "settle_group", "store_fingerprint"]


def ensure_array(group: str, name: str, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    """Create the float64 array ``name`` in a model group, unless a resumed fit already holds it with this shape.

    A resumed fit keeps the chunks its interrupted run already wrote.
    """
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
    if active() is not None or not isinstance(X, FeatureStore) or not config_bool("resume"):
        return None
    params = {k: v for k, v in est.get_params(deep=False).items() if k != "workdir"}
    text = json.dumps([os.path.realpath(str(X.path)), type(est).__name__, params], sort_keys=True, default=repr)
    return os.path.join(resolve_workdir(getattr(est, "workdir", None)), AUTO_FOLDER_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16])


def auto_resumable(fit: Callable) -> Callable:
    """Decorate an estimator's ``fit(X, y=None)``: under config ``wideml.resume`` a store fit runs resumable.

    Inside ``with dask.config.set({"wideml.resume": True})`` a fit on a FeatureStore
    checkpoints its passes into :func:`auto_folder` (removed when the fit succeeds), and
    the same fit run again after a crash resumes from it and says so on stderr.
    Every fit first has its work folder checked (:func:`~wideml.runner.workdir.check_fit_workdir`).
    """
    @functools.wraps(fit)
    def wrapper(self, X, *args, **kwargs):
        check_fit_workdir(self, X)  # a work folder inside X's store, or a mistyped one, is refused before anything is made
        folder = auto_folder(self, X)
        if folder is None:
            return fit(self, X, *args, **kwargs)
        with resumable(folder, resume=True):
            return fit(self, X, *args, **kwargs)

    return wrapper
