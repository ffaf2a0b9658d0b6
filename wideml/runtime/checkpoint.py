"""Resumable passes: checkpoints of a pass's lane accumulators in a work directory.

A fit opened inside :func:`resumable` keeps, in one work directory,

- ``manifest.json``: the fit's fingerprint (store metadata, estimator
  parameters, wideml version), compared part by part on a rerun;
- ``pass-<i>/pass.json``: the pass's key (index, kind, chunk count, seed,
  input digest) and its lane count;
- ``pass-<i>/lane-<k>.npz``: lane k's accumulator and the chunk indices it
  has folded, rewritten atomically (write aside, then ``os.replace``) at most
  every ``wideml.checkpoint-interval`` seconds;
- ``pass-<i>/result.npz``: the pass's result once it is complete.

Checkpoints are plain ``.npy`` members of a zip (``np.savez``) plus a JSON
description of the nesting; nothing is pickled and they are loaded with
``allow_pickle=False``. The directory is removed when the fit succeeds.
This module imports only the runtime layer and wideml's exceptions.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from wideml.exceptions import WidemlError
from wideml.runtime import ownership
from wideml.runtime.config import config_value, parse_checkpoint_interval
from wideml.runtime.removal import remove_tree, unregister_scratch

_ACTIVE: contextvars.ContextVar["Session | None"] = contextvars.ContextVar("wideml_checkpoint_session", default=None)

#: Names of the fingerprint parts, in the order a mismatch is reported, with the sentence naming each.
PART_REASONS = {
    "version": "it was written by another wideml version",
    "store": "the store changed since it was written",
    "parameters": "the fit parameters changed",
}


def checkpoint_interval() -> float | None:
    """Seconds between two checkpoints of a lane (config ``wideml.checkpoint-interval``); None when off (0, off, false)."""
    return parse_checkpoint_interval(config_value("checkpoint-interval"))


# -- nested state <-> (JSON description, arrays) ------------------------------------------
def _describe(obj: Any, arrays: list) -> Any:
    if obj is None:
        return {"t": "none"}
    if isinstance(obj, (bool, np.bool_)):
        return {"t": "bool", "v": bool(obj)}
    if isinstance(obj, (int, np.integer)):
        return {"t": "int", "v": int(obj)}
    if isinstance(obj, (float, np.floating)):
        arrays.append(np.asarray(obj, dtype=np.float64))  # exact: no decimal round trip
        return {"t": "float", "i": len(arrays) - 1}
    if isinstance(obj, str):
        return {"t": "str", "v": obj}
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("object arrays cannot be checkpointed")
        arrays.append(obj)
        return {"t": "array", "i": len(arrays) - 1}
    if isinstance(obj, (tuple, list)):
        return {"t": type(obj).__name__, "items": [_describe(o, arrays) for o in obj]}
    if isinstance(obj, dict):
        return {"t": "dict", "keys": [str(k) for k in obj], "items": [_describe(v, arrays) for v in obj.values()]}
    raise TypeError(f"cannot checkpoint a {type(obj).__name__}")


def _rebuild(desc: dict, arrays: Any) -> Any:
    kind = desc["t"]
    if kind == "none":
        return None
    if kind in ("bool", "int", "str"):
        return desc["v"]
    if kind == "float":
        return float(arrays[f"a{desc['i']}"])
    if kind == "array":
        return np.array(arrays[f"a{desc['i']}"])
    items = [_rebuild(d, arrays) for d in desc["items"]]
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    return dict(zip(desc["keys"], items))


def save_state(path: str, obj: Any) -> None:
    """Write a nesting of tuples/lists/dicts of arrays and numbers to ``path`` (.npz) atomically, without pickle."""
    arrays: list = []
    desc = _describe(obj, arrays)
    members = {f"a{i}": a for i, a in enumerate(arrays)}
    members["structure"] = np.frombuffer(json.dumps(desc).encode(), dtype=np.uint8)
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"  # not *.npz: a killed write is never taken for a checkpoint
    try:
        with open(tmp, "wb") as fh:  # no fsync: the rename is atomic against a killed process, which is what a rerun meets
            np.savez(fh, **members)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def load_state(path: str) -> Any:
    """The object written by :func:`save_state` (arrays loaded with ``allow_pickle=False``)."""
    with np.load(path, allow_pickle=False) as arrays:
        return _rebuild(json.loads(bytes(arrays["structure"]).decode()), arrays)


def _write_json(path: str, value: dict) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, sort_keys=True, default=str)
    os.replace(tmp, path)


def _read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def digest(*arrays: Any) -> str:
    """A short hex digest of arrays' bytes (for pass keys that depend on a previous pass's output)."""
    h = hashlib.sha256()
    for a in arrays:
        if a is not None:
            a = np.ascontiguousarray(a)
            h.update(str((a.shape, a.dtype.str)).encode())
            h.update(a.tobytes())
    return h.hexdigest()[:16]


# -- a lane of a checkpointed pass --------------------------------------------------------
class LaneState:
    """What a lane carries from chunk task to chunk task: its accumulator and the chunks it has folded."""

    __slots__ = ("lane", "acc", "done", "saved_at", "encode")

    def __init__(self, lane: int, acc: Any = None, done: Any = (), encode: Callable[[Any], Any] | None = None):
        self.lane, self.acc, self.done, self.saved_at = int(lane), acc, set(int(i) for i in done), time.monotonic()
        self.encode = encode  # the accumulator as a checkpointable nesting (None: it is one)


class PassCheckpoint:
    """Checkpoints of one pass (picklable: chunk tasks on any worker write into the same folder).

    Parameters
    ----------
    folder : str
        ``<work directory>/pass-<index>``.
    interval : float
        Seconds between two saves of a lane.
    label : str
        e.g. "pass 1/2", for the message saying what was resumed.
    """

    def __init__(self, folder: str, interval: float, label: str, quiet: bool = False, mirror: Any = None):
        self.folder, self.interval, self.label, self.quiet = folder, float(interval), label, quiet
        self.mirror = mirror  # told after each save (runner/remote_workdir.py: checkpoints mirrored to an object store)

    def __dask_tokenize__(self):
        return ("wideml-pass-checkpoint", self.folder, self.interval, self.label)

    def lane_path(self, lane: int) -> str:
        return os.path.join(self.folder, f"lane-{int(lane)}.npz")

    def lanes(self, default: int) -> int:
        """The lane count recorded for this pass (a resumed pass keeps its lanes), else ``default`` (then recorded)."""
        meta = _read_json(os.path.join(self.folder, "pass.json")) or {}
        if int(meta.get("lanes", 0)) > 0:
            return int(meta["lanes"])
        meta["lanes"] = int(default)
        _write_json(os.path.join(self.folder, "pass.json"), meta)
        return int(default)

    def load_lanes(self, lanes: int, n_chunks: int, encode: Callable[[Any], Any] | None = None,
                   decode: Callable[[Any], Any] | None = None) -> list[LaneState]:
        """Each lane's saved state (empty where none was saved), announcing on stderr how much is already done.

        ``encode`` and ``decode`` turn a lane's accumulator into its checkpointable
        nesting and back (default: the accumulator is one).
        """
        states = []
        for k in range(lanes):
            state = LaneState(k, encode=encode)
            path = self.lane_path(k)
            if os.path.exists(path):
                try:
                    acc, done = load_state(path)
                    if acc is not None and decode is not None:
                        acc = decode(acc)
                    state = LaneState(k, acc, [i for i in done if i % lanes == k and i < n_chunks], encode=encode)
                except (OSError, ValueError, KeyError, TypeError):
                    state = LaneState(k, encode=encode)  # an unreadable checkpoint: that lane starts over
            states.append(state)
        done = sum(len(s.done) for s in states)
        if done and not self.quiet:
            print(f"resuming {self.label} from a checkpoint: {done} of {n_chunks} chunks already done", file=sys.stderr, flush=True)
        return states

    def save_lane(self, state: LaneState) -> None:
        acc = state.acc if state.encode is None or state.acc is None else state.encode(state.acc)
        save_state(self.lane_path(state.lane), (acc, sorted(state.done)))
        state.saved_at = time.monotonic()
        if self.mirror is not None:
            self.mirror.saved()

    def due(self, state: LaneState) -> bool:
        return time.monotonic() - state.saved_at >= self.interval

    def result(self) -> Any:
        """The pass's saved result, or None (announced on stderr when found)."""
        path = os.path.join(self.folder, "result.npz")
        if not os.path.exists(path):
            return None
        try:
            value = load_state(path)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not self.quiet:
            print(f"resuming: {self.label} already done (from a checkpoint)", file=sys.stderr, flush=True)
        return value

    def save_result(self, value: Any) -> None:
        save_state(os.path.join(self.folder, "result.npz"), value)
        if self.mirror is not None:
            self.mirror.saved()


# -- the work directory of one fit ----------------------------------------------------------
class Session:
    """The work directory of one resumable fit (see :func:`resumable`)."""

    def __init__(self, folder: str, resume: bool, interval: float | None):
        self.folder, self.resume, self.interval = os.path.abspath(folder), bool(resume), interval
        self.begun = False
        self.mirror: Any = None  # set by runner/remote_workdir.remote_checkpoints: saves are mirrored to an object store

    def begin(self, fingerprint: dict) -> bool:
        """Compare ``fingerprint`` (parts ``store``, ``parameters``, ``version``) with the saved one.

        Returns True when the fit resumes (same fingerprint); otherwise the
        work directory is emptied (saying why on stderr when something was
        there) and the new fingerprint recorded.
        """
        self.begun = True
        manifest = os.path.join(self.folder, "manifest.json")
        old = _read_json(manifest)
        fingerprint = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))
        if old is not None and self.resume and old == fingerprint:
            return True
        if old is not None:
            if not self.resume:
                why = "--no-resume (resume=False) was asked for"
            else:
                why = next((reason for part, reason in PART_REASONS.items() if old.get(part) != fingerprint.get(part)), "it does not match")
            print(f"not resuming from the checkpoint in {self.folder}: {why}; starting over.", file=sys.stderr, flush=True)
        self._empty()
        _write_json(manifest, fingerprint)
        return False

    def start_over(self, why: str) -> None:
        """Drop every pass's checkpoint (keeping the fingerprint and the owner record), saying ``why`` on stderr."""
        manifest = os.path.join(self.folder, "manifest.json")
        fingerprint = _read_json(manifest)
        print(f"not resuming from the checkpoint in {self.folder}: {why}; starting over.", file=sys.stderr, flush=True)
        self._empty()
        if fingerprint is not None:
            _write_json(manifest, fingerprint)

    def _empty(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        for name in os.listdir(self.folder):
            if name.startswith(".wideml-owner") or name.startswith("owner"):
                continue  # the ownership record of this run
            path = os.path.join(self.folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.remove(path)

    def pass_checkpoint(self, index: int, total: int, key: dict) -> PassCheckpoint | None:
        """The checkpoints of pass ``index`` (1-based) of ``total``; a pass whose key changed starts over."""
        if not self.begun or self.interval is None:
            return None
        folder = os.path.join(self.folder, f"pass-{int(index)}")
        meta_path = os.path.join(folder, "pass.json")
        key = json.loads(json.dumps(dict(key, index=int(index)), sort_keys=True, default=str))
        meta = _read_json(meta_path)
        if meta is None or meta.get("key") != key:
            if meta is not None:
                print(f"not resuming pass {index}/{total} from its checkpoint: its inputs changed "
                      f"(a new random seed, or an earlier pass recomputed); starting it over.", file=sys.stderr, flush=True)
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder, exist_ok=True)
            _write_json(meta_path, {"key": key})
        return PassCheckpoint(folder, self.interval, f"pass {index}/{total}", mirror=self.mirror)

    def has_checkpoints(self) -> bool:
        """Whether any pass saved a lane or its result."""
        try:
            return any(name.startswith("pass-") and any(f.endswith(".npz") for f in os.listdir(os.path.join(self.folder, name)))
                       for name in os.listdir(self.folder))
        except OSError:
            return False

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)


def active() -> Session | None:
    """The session of the :func:`resumable` block being run, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def resumable(folder: str, resume: bool = True) -> Iterator[Session | None]:
    """Run a fit whose passes checkpoint into ``folder`` (removed on success and on a WidemlError; kept, with
    its checkpoints, after an interrupt or another failure).

    Parameters
    ----------
    folder : str
        The work directory (deterministic, so a rerun finds it; e.g.
        ``<output>.wideml-work``).
    resume : bool, default True
        False starts over even when the checkpoints match.

    Yields
    ------
    Session or None
        None when checkpoints are off (``wideml.checkpoint-interval`` 0).
    """
    interval = checkpoint_interval()
    if interval is None:
        yield None
        return
    session = Session(folder, resume, interval)
    ownership.claim(session.folder, "checkpoint")  # refuses a folder that is not wideml's, or that another running wideml run holds
    token = _ACTIVE.set(session)
    keep = False
    try:
        yield session
    except BaseException as exc:
        # an interrupt, a lost cluster or a full disk: keep what was done for the rerun; a refused
        # input (WidemlError) would be refused again, and a fit that saved nothing leaves nothing
        # a closed output pipe (`wideml cv ... | head -1`) comes after the work is done: nothing to resume
        keep = not isinstance(exc, (WidemlError, BrokenPipeError)) and session.has_checkpoints()
        raise
    finally:
        _ACTIVE.reset(token)
        if not keep:  # the owner file goes last: a removal cut short still says whose folder it was
            remove_tree(session.folder)
            unregister_scratch(session.folder)
        else:
            with contextlib.suppress(Exception):
                ownership.release(session.folder)


__all__ = ["LaneState", "PassCheckpoint", "Session", "active", "checkpoint_interval", "digest", "load_state", "resumable", "save_state"]
