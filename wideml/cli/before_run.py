"""What every command does before its first pass: sweep leftovers of dead runs, check folders and free space.

- **Sweep**: the hidden ``.NAME.wideml-partial-*`` / ``.NAME.wideml-old-*``
  folders beside a command's outputs, and the ``wideml-fit-*`` folders in the
  work folder (``--workdir``, config ``workdir``, else the system temporary
  directory), that carry a wideml owner record whose process is gone
  (:func:`wideml.runtime.ownership.abandoned`) are removed, and one line on
  stderr says what was removed. Nothing without a wideml owner record is ever
  removed, whatever its name; folders whose owner is alive, on another host or
  in another container are kept, and so are checkpoint folders kept for a
  rerun (``NAME.wideml-work``: ``wideml clean`` removes those).
- **Inputs are not outputs**: an output that is, holds or lies inside one of
  the command's inputs (the store, the model, the source, the labels, the
  mask) is refused before anything is written.
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

#: How the CLI's refusals name the work folder setting.
CLI_OPTION = "--workdir"


#: argparse destinations naming a command's inputs (``source`` may be ``file.h5:/dataset``).
INPUT_ARGS = ("store", "model", "input", "source", "labels", "mask", "config")


def refuse_url_outputs(args: argparse.Namespace) -> None:
    """Check outputs given as URLs (``s3://...``; written by :mod:`wideml.storage.remote_write`), before anything is made.

    An object-store output's backend is checked (one sentence naming the extra), so nothing local is ever made
    for it (never a folder named ``s3:``). A ``file://`` URL, as an output, a work folder or an input, is replaced
    (in ``args``) by the local path it names, so every later check and write sees that path (never a relative
    folder named ``file:``).
    """
    from wideml.exceptions import ConfigError
    from wideml.storage.remote_write import is_remote
    from wideml.storage.urls import is_url, local_path_of, require_backend

    inputs = [(dest, v.strip().rstrip("/")) for dest in INPUT_ARGS
              if isinstance(v := getattr(args, dest, None), str) and is_remote(v)]
    for dest in OUTPUT_ARGS:
        value = getattr(args, dest, None)
        if isinstance(value, str) and is_remote(value):
            require_backend(value)
            out = value.strip().rstrip("/")
            for name, url in inputs:
                if out == url or out.startswith(url + "/") or url.startswith(out + "/"):
                    raise ConfigError(f"the output {value} is, holds or lies inside the input {url} (the {name}); writing it "
                                      "would change or destroy that input: choose an output outside it.")
    workdir = getattr(args, "workdir", None)
    if isinstance(workdir, str) and is_remote(workdir):
        if getattr(args, "command", None) != "fit":  # fit keeps its checkpoints there (runner/remote_workdir.py)
            raise ConfigError(f"only wideml fit keeps its checkpoints on an object store ({workdir} is a URL); pass a local "
                              f"{CLI_OPTION} to wideml {getattr(args, 'command', '')}.")
        require_backend(workdir)
    for dest in (*OUTPUT_ARGS, "workdir", *INPUT_ARGS):
        value = getattr(args, dest, None)
        if isinstance(value, str) and is_url(value) and local_path_of(value) is not None:
            setattr(args, dest, local_path_of(value))


def _own_checkpoints(args: argparse.Namespace) -> list[str]:
    """The checkpoint folder ``fit`` resumes from (never swept by its own start)."""
    from wideml.runtime.owned_names import checkpoint_folder

    output = getattr(args, "output", None)
    if getattr(args, "command", None) != "fit" or not isinstance(output, str):
        return []
    return [checkpoint_folder(output), checkpoint_folder(os.path.realpath(output))]


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
    from wideml.runner.workdir import sweep_work_folders
    from wideml.runtime.owned_names import is_aside_name
    from wideml.runtime.ownership import sweep

    if getattr(args, "command", None) == "clean":
        return []  # `wideml clean` sweeps, and reports, by itself
    removed = []
    for parent in dict.fromkeys(os.path.dirname(out) for out in _outputs(args)):
        removed += sweep(parent, is_aside_name, keep=_own_checkpoints(args))
    removed += sweep_work_folders(None)
    removed = [str(p) for p in removed]
    if removed:
        print(f"wideml: removed {len(removed)} leftover{'' if len(removed) == 1 else 's'} of interrupted wideml runs "
              f"(owner process gone): {', '.join(removed)}", file=sys.stderr)
    return removed


def _input_path(value: str) -> str | None:
    """The file or folder an input argument names (``file.h5:/dataset`` -> ``file.h5``), resolved; None for URLs."""
    if "://" in value:
        return None
    if not os.path.exists(value) and ":" in os.path.basename(value):
        head = value[: value.rindex(":")]
        value = head if os.path.exists(head) else value
    return os.path.realpath(value)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def refuse_outputs_on_inputs(args: argparse.Namespace) -> None:
    """Refuse an output that is, holds or lies inside an input of the same command (one sentence, exit 2).

    ``fit lol s.zarr -o s.zarr --overwrite`` would replace the training store
    by the model; ``maps m.model -o m.model/maps`` would put foreign files
    inside a model. Paths are compared after resolving symlinks.
    """
    from wideml.exceptions import ConfigError
    from wideml.runner.workdir import refuse_workdir_inside

    inputs = []
    for dest in INPUT_ARGS:
        value = getattr(args, dest, None)
        if isinstance(value, str) and value.strip() and value != "auto":
            path = _input_path(value)
            if path is not None:
                inputs.append((dest, value, path))
    outputs = _outputs(args)
    seen: dict[str, str] = {}
    for out in outputs:
        target = os.path.realpath(out)
        if target in seen:
            raise ConfigError(f"two outputs of this command name the same path {out}; the second would replace the first: "
                              "give each output its own path.")
        seen[target] = out
    workdir = getattr(args, "workdir", None)
    if isinstance(workdir, str) and os.path.isabs(workdir):
        real = os.path.realpath(workdir)
        for target, out in seen.items():
            if _inside(real, target):
                raise ConfigError(f"the work folder {workdir} is or lies inside the output {out}; work folders are "
                                  "removed after the run: choose a --workdir outside the output.")
        refuse_workdir_inside(workdir, [(f"{value} (the {dest})", path) for dest, value, path in inputs], CLI_OPTION)
    for out in outputs:
        target = os.path.realpath(out)
        for dest, value, path in inputs:
            if target == path:
                problem = "is"
            elif _inside(target, path):
                problem = "lies inside"
            elif _inside(path, target):
                problem = "holds"
            else:
                continue
            raise ConfigError(f"the output {out} {problem} the input {value} (the {dest}); writing it would "
                              "change or destroy that input: choose an output outside it.")


def _workdir_folder() -> str:
    """The work folder's parent, created if missing (its own parent must exist), checked writable (:func:`wideml.runner.workdir.prepare_workdir`)."""
    from wideml.runner.workdir import prepare_workdir

    return prepare_workdir(None, option=CLI_OPTION)


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


#: How the refusals name each output destination.
OUTPUT_FLAGS = {"output": "-o/--output", "out": "--out", "plot": "--plot"}


def refuse_empty_outputs(args: argparse.Namespace) -> None:
    """Refuse an output option given as an empty path (``-o ""``, e.g. an unset shell variable), never read as "no output"."""
    from wideml.exceptions import ConfigError

    for dest in OUTPUT_ARGS:
        value = getattr(args, dest, None)
        if isinstance(value, str) and not value.strip():
            if getattr(args, "command", None) == "report":  # the report is the command's one output: no "leave it out"
                raise ConfigError(f"the output path of {OUTPUT_FLAGS[dest]} is empty; give a file name ending in .html.")
            raise ConfigError(f"the output path of {OUTPUT_FLAGS[dest]} is empty; give a file path, or leave the option out "
                              "for no output.")


def preflight(args: argparse.Namespace) -> None:
    """Refuse, in one sentence and before any pass, outputs that cannot be written or will not fit."""
    from wideml.runtime.preflight import require_free_space, require_writable

    refuse_empty_outputs(args)
    refuse_outputs_on_inputs(args)
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
