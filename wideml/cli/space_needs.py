"""Free space a command will need, estimated from metadata before its first long step (no pass over X).

Each function returns ``[(folder, bytes, what), ...]`` for
:func:`wideml.runtime.preflight.require_free_space`:

- ``ingest`` / ``rechunk``: the new store's X, ``n × p × itemsize``, when it is
  stored uncompressed; a compressed store's size cannot be known before its
  chunks are compressed, so it is not required up front (a disk that fills up
  while writing still ends in one sentence, nothing kept). Plus the
  intermediate uncompressed copy beside the output when the copy goes through
  one (two-stage rechunks; row-wise sources too big for memory).
- ``predict`` / ``cv``: their small tables (CSV, JSON, PNG), estimated
  generously per row.

A source whose metadata cannot be read gives no estimate: the command's own
checks then refuse it with their sentence.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from wideml.exceptions import WidemlError

#: Bytes per row of ``predict``'s CSV: sample id, label and probabilities of a dozen classes, generously.
PREDICT_ROW_BYTES = 256
#: Bytes of a ``cv`` report beyond its per-fold errors, and of its PNG plot.
CV_REPORT_BYTES, CV_PLOT_BYTES = 64 * 1024, 512 * 1024

Need = tuple[str, int, str]


def _uncompressed(compressor: str | None) -> bool:
    from wideml.runtime.config import config_value

    return str(compressor or config_value("compressor") or "none").lower() == "none"


def _copy_needs(out: str, shape: tuple[int, int], itemsize: int, src_chunks: tuple[int, int], local: bool,
                args: argparse.Namespace, row_source: bool = False) -> list[Need]:
    """Output and intermediate bytes of copying an (n, p) source into the store ``out``."""
    from wideml.storage import schema
    from wideml.storage.copy_plan import plan_copy, resolve_budget, task_budget
    from wideml.sources.rows import fits_in_memory
    from wideml.storage.rechunk import choose_feature_chunk

    n, p = shape
    nbytes = int(n) * int(p) * int(itemsize)
    folder = os.path.dirname(out)
    needs = [(folder, nbytes, f"the store {os.path.basename(out)}")] if _uncompressed(args.compressor) else []
    budget = resolve_budget(None)
    if row_source:
        two_stage = not fits_in_memory(n, p, itemsize, budget)
    else:
        local = local or schema.store_format(out) == "hdf5"
        tb = task_budget(budget, local)
        h = int(max(1, min(getattr(args, "sample_chunk", None) or n, n)))
        c = choose_feature_chunk(n, p, itemsize, h, tb, args.feature_chunk)
        two_stage = len(plan_copy((n, p), itemsize, src_chunks, (h, c), tb)) > 1
    if two_stage:
        needs.append((folder, nbytes, "its intermediate uncompressed copy"))
    return needs


def rechunk_needs(args: argparse.Namespace) -> list[Need]:
    """``wideml rechunk IN OUT``: the new store (if uncompressed) and any intermediate copy."""
    import warnings

    from wideml.exceptions import PerformanceWarning
    from wideml.storage import open_store

    out = args.output or args.out
    if not out:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        store = open_store(args.input)
    itemsize = np.dtype(store.dtype).itemsize
    return _copy_needs(out, tuple(store.X.shape), itemsize, tuple(store.stored_chunks), False, args)


def ingest_needs(args: argparse.Namespace) -> list[Need]:
    """``wideml ingest SOURCE -o OUT`` for .npy, HDF5, zarr and folder sources (a CSV's size is known only after a scan)."""
    from pathlib import Path

    from wideml.sources import ingest as ing
    from wideml.sources.hdf5 import from_hdf5
    from wideml.sources.npy import from_npy
    from wideml.sources.sample_files import folder_samples, probe
    from wideml.sources.zarr_array import from_zarr_array

    kind, obj = ing.source_kind(args.source)
    if kind == "folder":
        fkind, files, _ = folder_samples(Path(obj), None)
        shape, src_dtype = probe(files[0], fkind)
        p = int(np.prod(shape)) if shape else 1
        itemsize = ing.output_dtype(src_dtype, args.dtype).itemsize
        return _copy_needs(args.output, (len(files), p), itemsize, (1, 1), False, args, row_source=True)
    if kind == "npy":
        src = from_npy(obj)
    elif kind == "hdf5":
        src = from_hdf5(obj[0], obj[1] or args.dataset, missing_fill=True)
    elif kind == "zarr":
        src = from_zarr_array(obj, missing_fill=True)
    else:
        return []
    itemsize = max(ing.output_dtype(src.dtype, args.dtype).itemsize, np.dtype(src.dtype).itemsize)
    return _copy_needs(args.output, tuple(src.shape), itemsize, tuple(src.chunks), src.local, args)


def predict_needs(args: argparse.Namespace) -> list[Need]:
    """``wideml predict ... -o FILE``: one CSV row per sample."""
    from wideml.storage import open_store

    if not getattr(args, "output", None):
        return []
    n = open_store(args.store).n_samples
    return [(os.path.dirname(args.output), n * PREDICT_ROW_BYTES, f"the predictions {os.path.basename(args.output)}")]


def cv_needs(args: argparse.Namespace) -> list[Need]:
    """``wideml cv -o REPORT --plot PNG``: the JSON report and the plot."""
    needs = []
    if getattr(args, "output", None):
        methods = max(1, len(str(args.methods).split(",")))
        repeats = int(getattr(args, "repeats", 1) or 1)
        n = 0
        if getattr(args, "store", None):  # out-of-fold predictions: n_samples codes per method, dimension and round
            from wideml.storage import open_store

            n = open_store(args.store).n_samples
        dims = args.max_dim if isinstance(args.max_dim, int) else (n if args.max_dim == "rank" else 20)
        nbytes = CV_REPORT_BYTES + methods * dims * repeats * (32 * int(args.folds) + 8 * n)
        needs.append((os.path.dirname(args.output), nbytes, f"the report {os.path.basename(args.output)}"))
    if getattr(args, "plot", None):
        needs.append((os.path.dirname(args.plot), CV_PLOT_BYTES, f"the plot {os.path.basename(args.plot)}"))
    return needs


#: command -> its estimate.
NEEDS = {"ingest": ingest_needs, "rechunk": rechunk_needs, "predict": predict_needs, "cv": cv_needs}


def space_needs(args: argparse.Namespace) -> list[Need]:
    """The free space ``args.command`` needs, or ``[]`` when it cannot be estimated from metadata."""
    estimate = NEEDS.get(getattr(args, "command", None))
    if estimate is None:
        return []
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the command itself warns, once, when it plans its copy
            return [need for need in estimate(args) if need[1] > 0 and os.path.isdir(need[0])]
    except (WidemlError, OSError, ValueError, TypeError, KeyError, IndexError):
        return []  # the command's own checks refuse a bad source with their sentence
