"""Generate a simulation as a lazy dask array, or chunk by chunk straight into a feature store."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize

from wideml._version import __version__
from wideml.exceptions import WidemlError
from wideml.runtime import compute
from wideml.runtime.client import active_client
from wideml.runtime.config import memory_limit_bytes
from wideml.sims import rng
from wideml.sims.registry import get_setting
from wideml.sims.setting import Samples, Setting, SimContext
from wideml.storage import create_store
from wideml.storage.writer import default_feature_chunk as store_default
from wideml.storage.remote_write import is_remote


def _resolve(name: str, n_samples, n_features, seed, params: dict[str, Any]) -> tuple[Setting, dict, int, int, int]:
    setting = get_setting(name)
    params = setting.resolve_params(params)
    for what, value in (("n_samples", n_samples), ("n_features", n_features)):
        if (value is None and what == "n_samples") or (
            value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)))
        ):
            raise WidemlError(f"{what} must be an integer, got {value!r}.")
    n = int(n_samples)
    p = int(setting.default_n_features if n_features is None else n_features)
    seed = rng.check_seed(seed)
    setting.check_shape(n, p, params)
    return setting, params, n, p, seed


def _params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True)


@functools.lru_cache(maxsize=16)
def _context(name: str, n: int, p: int, seed: int, params_key: str) -> SimContext:
    """The per-sample draws of one data set, cached per process (they are n-sized)."""
    setting = get_setting(name)
    params = setting.resolve_params(json.loads(params_key))
    samples = setting.draw_samples(n, seed, params)
    return SimContext(n=n, p=p, seed=seed, params=params, samples=samples)


def generate_block(name: str, n: int, p: int, seed: int, params_key: str, start: int, stop: int, dtype: Any) -> np.ndarray:
    """Features ``[start, stop)`` of a simulated data set, shape (n, stop - start).

    Every argument is plain data, so the call can run in any dask worker. The
    values depend only on (name, n, p, seed, params), never on ``start``/``stop``.
    """
    ctx = _context(name, n, p, seed, params_key)
    out = np.empty((n, stop - start), dtype=dtype)
    get_setting(name).fill(out, start, ctx)
    return out


def _float_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise WidemlError(f"dtype {dtype!r} is not a numpy dtype; use float32 or float64.") from None
    if dt.kind != "f":
        raise WidemlError(f"simulated values are continuous, so dtype {dt} cannot hold them; use float32 or float64.")
    return dt


def default_feature_chunk(n: int, p: int, itemsize: int) -> int:
    """The store's default chunk width (config ``chunk-size``) in whole generation tiles (at least one)."""
    fc = store_default(n, p, itemsize)
    if fc >= p:
        return p
    if fc < rng.TILE:  # very many samples: one tile per chunk, so no tile is generated twice
        return min(p, rng.TILE)
    return fc - fc % rng.TILE


def _feature_chunks(chunks, n: int, p: int, itemsize: int) -> tuple[int, ...]:
    if chunks is None:
        chunks = default_feature_chunk(n, p, itemsize)
    if isinstance(chunks, (tuple, list)) and len(chunks) == 2 and all(isinstance(c, (tuple, list)) for c in chunks):
        if sum(chunks[0]) != n or len(chunks[0]) != 1:
            raise WidemlError(
                f"simulated arrays are chunked along features only; give chunks=((n_samples,), feature_chunks), not {chunks!r}."
            )
        chunks = chunks[1]
    if isinstance(chunks, (int, np.integer)) and not isinstance(chunks, bool):
        width = int(chunks)
        if width < 1:
            raise WidemlError(f"chunks={width} must be a positive number of features per chunk.")
        width = min(width, p)
        return (width,) * (p // width) + ((p % width,) if p % width else ())
    if isinstance(chunks, Sequence) and all(isinstance(c, (int, np.integer)) and c > 0 for c in chunks):
        if sum(chunks) != p:
            raise WidemlError(f"feature chunks sum to {sum(chunks)} but there are {p} features; make them add up to n_features.")
        return tuple(int(c) for c in chunks)
    raise WidemlError(f"chunks={chunks!r} is not a chunk width or a sequence of positive chunk widths; pass e.g. chunks=4096.")


def _block_task(block_info=None, *, setting, n, p, seed, params_key, out_dtype):
    (_, _), (start, stop) = block_info[None]["array-location"]
    return generate_block(setting, n, p, seed, params_key, start, stop, out_dtype)


def simulate(
    name: str,
    n_samples: int,
    n_features: int | None = None,
    seed: int = 0,
    chunks: int | Sequence[int] | None = None,
    dtype: Any = "float64",
    **params: Any,
) -> tuple[da.Array, np.ndarray]:
    """Simulate a setting as a lazy dask array.

    Parameters
    ----------
    name : str
        A key of :data:`wideml.sims.SETTINGS` (``wideml simulate --list``).
    n_samples : int
        n, the number of samples.
    n_features : int, optional
        p, the number of features; default the setting's ``default_n_features``.
    seed : int, default 0
        The values depend only on the seed (and n, p, params), never on ``chunks``.
    chunks : int or sequence of int, optional
        Features per chunk (every chunk holds all samples), or the explicit chunk
        widths. Default: the store's default chunk size, in whole 1024-feature tiles.
    dtype : float dtype, default "float64"
        Values are generated in float64 and cast.
    **params
        Setting parameters (see ``SETTINGS[name].defaults``), e.g. ``b=4.0``, ``priors=(0.3, 0.7)``.

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features)
        Lazy; each chunk is generated independently when computed.
    y : ndarray of shape (n_samples,), int64
        Class labels 0..K-1 drawn from the priors.
    """
    _, params, n, p, seed = _resolve(name, n_samples, n_features, seed, params)
    dt = _float_dtype(dtype)
    key = _params_key(params)
    ctx = _context(name, n, p, seed, key)
    fchunks = _feature_chunks(chunks, n, p, dt.itemsize)
    token = tokenize(name, n, p, seed, key, fchunks, dt.str)
    X = da.map_blocks(
        _block_task, name=f"wideml-sim-{name}-{token}", chunks=((n,), fchunks), dtype=dt,
        meta=np.empty((0, 0), dtype=dt), **_task_kwargs(name, n, p, seed, key, dt),
    )
    return X, ctx.samples.y.copy()


def _task_kwargs(name: str, n: int, p: int, seed: int, key: str, dt: np.dtype) -> dict[str, Any]:
    return {"setting": name, "n": n, "p": p, "seed": seed, "params_key": key, "out_dtype": dt.str}


def sample_info(name: str, n_samples: int, seed: int = 0, **params: Any) -> dict[str, np.ndarray]:
    """The per-sample draws of a simulation: labels, mixture components and extras.

    Parameters
    ----------
    name, n_samples, seed, **params
        As for :func:`simulate` (the draws do not depend on n_features).

    Returns
    -------
    dict of str to ndarray of shape (n_samples,)
        ``"y"`` (labels), ``"component"`` (mixture component) and setting-specific
        extras: ``"outlier"`` (robust), ``"group"`` (xor), ``"heavy"`` and
        ``"factor"`` (fat-tails).
    """
    setting, params, n, _, seed = _resolve(name, n_samples, None, seed, params)
    samples: Samples = setting.draw_samples(n, seed, params)
    return {"y": samples.y, "component": samples.component, **samples.extras}


class _WriterRef:
    """Hands a StoreWriter to threaded dask tasks without dask trying to hash or copy it."""

    def __init__(self, writer):
        self.writer = writer

    def __dask_tokenize__(self):
        return ("wideml-sims-writer", id(self))


def _write_task(block_info=None, *, ref, width, setting, n, p, seed, params_key, out_dtype):
    i = block_info[None]["chunk-location"][1]
    start = i * width
    stop = min(p, start + width)
    ref.writer.write(generate_block(setting, n, p, seed, params_key, start, stop, out_dtype), start)
    return np.array([[stop - start]], dtype=np.int64)


def _write_all(writer, name: str, n: int, p: int, seed: int, key: str, dt: np.dtype, label: str) -> None:
    width = int(writer.chunks[1])
    n_chunks = -(-p // width)
    kwargs = _task_kwargs(name, n, p, seed, key, dt)
    if active_client() is None:
        # Each task generates one store chunk and writes it (chunk-aligned writes from threads are safe).
        # The writer cannot travel to other processes, so a "processes" scheduler runs this graph on threads.
        written = da.map_blocks(
            _write_task, name=f"wideml-sim-write-{tokenize(name, n, p, seed, key, width, os.getpid(), id(writer))}",
            chunks=((1,), (1,) * n_chunks), dtype=np.int64, meta=np.empty((0, 0), dtype=np.int64),
            ref=_WriterRef(writer), width=width, **kwargs,
        )
        in_process = dask.config.get("scheduler", None) not in ("processes", "multiprocessing")
        with contextlib.nullcontext() if in_process else dask.config.set(scheduler="threads", pool=None):
            (total,) = compute(written.sum(), label=label)
        if int(total) != p:  # pragma: no cover - a bug, not a user error
            raise RuntimeError(f"wrote {total} of {p} features")
        return
    # A distributed cluster cannot share the writer: generate on the workers, write here, in memory-bounded batches.
    X = da.map_blocks(_block_task, name=f"wideml-sim-{name}-{tokenize(name, n, p, seed, key, width, dt.str)}",
                      chunks=((n,), _feature_chunks(width, n, p, dt.itemsize)), dtype=dt,
                      meta=np.empty((0, 0), dtype=dt), **kwargs)
    per_batch = max(1, memory_limit_bytes() // (4 * max(1, n * width * dt.itemsize)))
    for b0 in range(0, n_chunks, per_batch):
        b1 = min(n_chunks, b0 + per_batch)
        blocks = compute(*[X.blocks[0, i] for i in range(b0, b1)], label=f"{label} (chunks {b0 + 1}-{b1} of {n_chunks})")
        for i, block in zip(range(b0, b1), blocks):
            writer.write(block, i * width)


def simulate_to_store(
    name: str,
    path: str | os.PathLike,
    n_samples: int,
    n_features: int | None = None,
    seed: int = 0,
    feature_chunk: int | None = None,
    dtype: Any = "float32",
    overwrite: bool = False,
    **params: Any,
) -> Path:
    """Simulate a setting chunk by chunk straight into a new feature store.

    Memory stays bounded by a few chunks whatever p is; the store appears at
    ``path`` only when every chunk is written (atomic write).

    Parameters
    ----------
    name : str
        A key of :data:`wideml.sims.SETTINGS`.
    path : path-like
        Output store: a zarr v3 directory, or HDF5 for ``.h5``/``.hdf5``.
    n_samples : int
        n.
    n_features : int, optional
        p; default the setting's ``default_n_features``.
    seed : int, default 0
        The stored values equal ``simulate(name, n, p, seed)`` for any chunking.
    feature_chunk : int, optional
        Features per stored chunk; default from config ``chunk-size``, rounded down
        to whole 1024-feature generation tiles.
    dtype : {"float32", "float64"}, default "float32"
    overwrite : bool, default False
        Replace an existing output.
    **params
        Setting parameters.

    Returns
    -------
    Path
        ``path``. X has shape (n_samples, n_features); y holds the labels; the
        ``source`` attribute records the setting, seed and parameters.
    """
    setting, params, n, p, seed = _resolve(name, n_samples, n_features, seed, params)
    dt = _float_dtype(dtype)
    key = _params_key(params)
    y = _context(name, n, p, seed, key).samples.y
    if np.unique(y).size < 2:
        raise WidemlError(
            f"the {n} samples of {name!r} drawn with seed {seed} all fall in one class; use more samples or another seed."
        )
    if feature_chunk is not None and (
        isinstance(feature_chunk, bool) or not isinstance(feature_chunk, (int, np.integer)) or feature_chunk < 1
    ):
        raise WidemlError(f"feature_chunk={feature_chunk!r} must be a positive integer number of features.")
    fc = int(feature_chunk) if feature_chunk else default_feature_chunk(n, p, dt.itemsize)
    source = json.dumps({"simulator": name, "seed": seed, "params": params, "reference": setting.reference,
                         "generator": f"wideml.sims {__version__}"}, sort_keys=True)
    with create_store(path, n_samples=n, n_features=p, y=y, dtype=dt, feature_chunk=fc, source=source,
                      overwrite=overwrite) as writer:
        _write_all(writer, name, n, p, seed, key, dt, label=f"simulate {name} ({n} x {p}) -> {path}")
    return path if is_remote(path) else Path(path)
