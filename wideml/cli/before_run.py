"""What every command does before its first pass: sweep leftovers of dead runs, check folders and free space.

- **Sweep**: the hidden ``.NAME.partial-*`` / ``.NAME.old-*`` folders and the
  ``NAME.wideml-work`` checkpoint folders beside a command's outputs, and the
  ``wideml-fit-*`` folders in the work folder (``--workdir``, config
  ``workdir``, else the system temporary directory), that are abandoned
  (:func:`wideml.runtime.ownership.abandoned`: owner process gone, or no owner
  and untouched for a while) are removed, and one line on stderr says what was
  removed. Folders whose owner is alive, on another host or in another
  container are kept. ``fit`` keeps its own ``<output>.wideml-work`` (it
  resumes from it). ``wideml clean`` sweeps named folders on request.
- **Pre-flight**: every output folder must accept a new file; ``fit`` and
  ``cv`` need a usable work folder; ``fit`` needs free space for the model's
  and the work folder's p-sized arrays (estimated from the store's metadata,
  :func:`wideml.runtime.preflight.model_bytes`); ``ingest`` and ``rechunk``
  need room for the new store and any intermediate copy, ``predict`` and
  ``cv`` for their tables (:mod:`wideml.cli.space_needs`). Stores written by
  ``simulate`` are checked when the store is created, before any chunk is
  written. Each failure is one sentence (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import sys

#: argparse destinations naming a command's outputs.
OUTPUT_ARGS = ("output", "out", "plot")

#: Commands that make work folders (``wideml-fit-*``) and so take ``--workdir``.
WORKDIR_COMMANDS = ("fit", "cv")


def leftover_patterns() -> tuple[str, ...]:
    """Names of the folders a wideml run leaves beside its outputs if it dies: partial/old outputs and checkpoint folders."""
    from wideml.storage.atomic import LEFTOVER_PATTERNS

    return (*LEFTOVER_PATTERNS, "*" + CHECKPOINT_SUFFIX)


#: Suffix of a fit's checkpoint folder beside its output (``<output>.wideml-work``).
CHECKPOINT_SUFFIX = ".wideml-work"


def _own_checkpoints(args: argparse.Namespace) -> list[str]:
    """The checkpoint folder ``fit`` resumes from (never swept by its own start)."""
    output = getattr(args, "output", None)
    if getattr(args, "command", None) != "fit" or not isinstance(output, str):
        return []
    from pathlib import Path

    return [output + CHECKPOINT_SUFFIX, str(Path(output).resolve()) + CHECKPOINT_SUFFIX]


def _outputs(args: argparse.Namespace) -> list[str]:
    values = (getattr(args, dest, None) for dest in OUTPUT_ARGS)
    return [v for v in values if isinstance(v, str) and os.path.isabs(v)]


def sweep_leftovers(args: argparse.Namespace) -> list[str]:
    """Remove leftovers of dead wideml runs beside the outputs and in the work folder; say so on stderr.

    Returns
    -------
    list of str
        The paths removed.
    """
    from wideml.estimators._workdir import sweep_work_folders
    from wideml.runtime.ownership import sweep

    if getattr(args, "command", None) == "clean":
        return []  # `wideml clean` sweeps, and reports, by itself
    removed = []
    for parent in dict.fromkeys(os.path.dirname(out) for out in _outputs(args)):
        removed += sweep(parent, leftover_patterns(), keep=_own_checkpoints(args))
    removed += sweep_work_folders(None)
    removed = [str(p) for p in removed]
    if removed:
        print(f"wideml: removed {len(removed)} leftover{'' if len(removed) == 1 else 's'} of interrupted wideml runs "
              f"(owner process gone): {', '.join(removed)}", file=sys.stderr)
    return removed


def _workdir_folder() -> str:
    """The work folder's parent, created if missing, checked writable."""
    from wideml.estimators._workdir import resolve_workdir
    from wideml.exceptions import ConfigError
    from wideml.runtime.preflight import require_writable

    folder = resolve_workdir(None)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ConfigError(f"the work folder {folder} is a file, not a folder; pass a folder to --workdir (or config workdir).")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the work folder {folder} ({exc.strerror or exc}); pass a writable --workdir.") from None
    require_writable(folder, "the work folder (--workdir)")
    return folder


def _fit_needs(args: argparse.Namespace, workdir: str) -> list[tuple[str, int, str]]:
    """Free space ``fit`` needs: the model's p-sized arrays beside the output and as much in the work folder."""
    import numpy as np

    from wideml.runtime.preflight import model_bytes
    from wideml.storage import open_store

    store = open_store(args.store)
    classes = len(np.unique(store.y)) if store.y is not None else 2
    d = getattr(args, "n_components", None) or classes
    nbytes = model_bytes(store.n_features, d, classes)
    return [(os.path.dirname(args.output), nbytes, f"the model {os.path.basename(args.output)}"),
            (workdir, nbytes, "the work folder (--workdir)")]


def preflight(args: argparse.Namespace) -> None:
    """Refuse, in one sentence and before any pass, outputs that cannot be written or will not fit."""
    from wideml.runtime.preflight import require_free_space, require_writable

    for out in _outputs(args):
        parent = os.path.dirname(out)
        if os.path.isdir(parent):
            require_writable(parent, "the output folder")
    command = getattr(args, "command", None)
    from wideml.cli.space_needs import space_needs

    needs = space_needs(args)  # ingest, rechunk: the store and its intermediate copy; predict, cv: their tables
    if command not in WORKDIR_COMMANDS:
        require_free_space(needs)
        return
    workdir = _workdir_folder()
    require_free_space(needs)
    if command == "fit" and isinstance(getattr(args, "output", None), str) and getattr(args, "store", None):
        require_free_space(_fit_needs(args, workdir))


def disk_full_folder(exc: BaseException, args: argparse.Namespace) -> str:
    """The folder to name when ``exc`` is a full disk: the file it names, else the first output's folder."""
    filename = getattr(exc, "filename", None)
    if isinstance(filename, (str, bytes, os.PathLike)):
        folder = os.path.dirname(os.fsdecode(filename))
        while folder and not os.path.isdir(folder):
            folder = os.path.dirname(folder)
        if folder:
            return folder
    outputs = _outputs(args)
    return os.path.dirname(outputs[0]) if outputs else os.getcwd()
