"""What every command does before its first pass: sweep leftovers of dead runs, check folders and free space.

- **Sweep**: the hidden ``.NAME.partial-*`` / ``.NAME.old-*`` folders beside a
  command's outputs, and the ``wideml-fit-*`` work folders of ``fit``/``cv``,
  whose owner process is gone (killed outright), are removed, and one line on
  stderr says what was removed. Folders whose owner is alive, on another host
  or unrecorded are kept.
- **Pre-flight**: every output folder must accept a new file; ``fit`` and
  ``cv`` need a usable work folder; ``fit`` needs free space for the model's
  and the work folder's p-sized arrays (estimated from the store's metadata,
  :func:`wideml.runtime.preflight.model_bytes`). Stores written by ``simulate``,
  ``ingest`` and ``rechunk`` are checked when the store is created, before any
  chunk is written. Each failure is one sentence (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import sys

#: argparse destinations naming a command's outputs.
OUTPUT_ARGS = ("output", "out", "plot")

#: Commands that make work folders (``wideml-fit-*``) and so take ``--workdir``.
WORKDIR_COMMANDS = ("fit", "cv")


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
    from wideml.runtime.ownership import sweep
    from wideml.storage.atomic import LEFTOVER_PATTERNS

    removed = []
    for parent in dict.fromkeys(os.path.dirname(out) for out in _outputs(args)):
        removed += sweep(parent, LEFTOVER_PATTERNS)
    if getattr(args, "command", None) in WORKDIR_COMMANDS:
        from wideml.estimators._workdir import sweep_work_folders

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
    if command not in WORKDIR_COMMANDS:
        return
    workdir = _workdir_folder()
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
