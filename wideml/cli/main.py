"""The ``wideml`` command: a thin layer over the estimators and the storage layer.

Every subcommand shares ``--config``, ``--scheduler``, ``--memory-limit`` and
``--progress/--no-progress``; commands that write take ``-o OUT`` and refuse to
replace an existing output without ``--overwrite``. A problem with the input is
printed as one sentence and the command exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from wideml import __version__
from wideml.exceptions import PerformanceWarning, WidemlError

#: Modules under wideml.cli that each add subcommands through ``register(subparsers, common)``.
COMMAND_MODULES = ("store_commands", "ingest_commands", "simulate", "model_commands")

#: argparse destinations holding file-system paths: made absolute once, right after parsing, so no
#: handler (and no dask graph) ever sees a relative path. A subcommand may add its own with
#: ``set_defaults(path_args=(...))``.
PATH_ARGS = ("store", "model", "input", "out", "output", "plot", "source", "labels", "config", "workdir")

#: Commands whose outputs are written by the scheduler's workers (a model's p-sized arrays, a store's
#: chunks): on a dask.distributed scheduler the workers must be able to write into the output's folder.
WORKER_WRITTEN_OUTPUTS = {"fit": ("output",), "ingest": ("output",), "simulate": ("output",), "rechunk": ("output", "out")}


def _common_parser() -> argparse.ArgumentParser:
    from wideml.runtime.scheduler import SCHEDULER_HELP

    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("execution")
    group.add_argument("--config", metavar="FILE", help="YAML config file with a top-level 'wideml:' mapping (see configs/)")
    group.add_argument("--scheduler", metavar="NAME", help=f"where to run: {SCHEDULER_HELP} (default from config: threads)")
    group.add_argument("--memory-limit", metavar="SIZE", help="memory budget, e.g. 8GiB (default from config: 60%% of RAM)")
    bar = group.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_const", const=True, default=None, help="always show progress bars")
    bar.add_argument("--no-progress", dest="progress", action="store_const", const=False, help="never show progress bars")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wideml",
        description="Out-of-core supervised dimensionality reduction for wide data (zarr v3 / HDF5 feature stores).",
    )
    parser.add_argument("--version", action="version", version=f"wideml {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _common_parser()
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"wideml.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"wideml.cli.{name}":
                continue
            raise
        module.register(sub, common)
    return parser


def absolute_paths(args: argparse.Namespace) -> argparse.Namespace:
    """Make every path argument of ``args`` absolute (``~`` expanded), in place; URLs (``scheme://``) are left alone.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments; the destinations named in :data:`PATH_ARGS` (and
        in ``args.path_args``) that hold a non-empty string are rewritten.

    Returns
    -------
    argparse.Namespace
        ``args``.
    """
    for dest in (*PATH_ARGS, *getattr(args, "path_args", ())):
        value = getattr(args, dest, None)
        if isinstance(value, str) and value.strip() and "://" not in value:
            setattr(args, dest, os.path.abspath(os.path.expanduser(value)))
    return args


def _check_worker_outputs(args: argparse.Namespace) -> None:
    """On a dask.distributed scheduler, refuse before any work if a worker cannot write the output's folder."""
    from wideml.runtime.cluster_check import require_directory

    for dest in WORKER_WRITTEN_OUTPUTS.get(getattr(args, "command", None), ()):
        value = getattr(args, dest, None)
        if isinstance(value, str) and os.path.isabs(value) and os.path.isdir(os.path.dirname(value)):
            require_directory(os.path.dirname(value), "the output folder")


def _apply_common(args: argparse.Namespace) -> None:
    import dask.config

    from wideml.runtime.config import load_config_file, parse_bytes

    if getattr(args, "config", None):
        load_config_file(args.config)
    if getattr(args, "memory_limit", None):
        parse_bytes(args.memory_limit, "--memory-limit")
        dask.config.set({"wideml.memory-limit": args.memory_limit})
    if getattr(args, "progress", None) is not None:
        dask.config.set({"wideml.progress": bool(args.progress)})


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``wideml`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    warnings.simplefilter("always", PerformanceWarning)
    warnings.formatwarning = lambda msg, cat, *a, **k: f"wideml: warning: {msg}\n"
    try:
        absolute_paths(args)
        _apply_common(args)
        if getattr(args, "needs_scheduler", True):
            from wideml.runtime.scheduler import use_scheduler

            with use_scheduler(getattr(args, "scheduler", None)):
                _check_worker_outputs(args)
                return int(args.handler(args) or 0)
        return int(args.handler(args) or 0)
    except WidemlError as exc:
        print(f"wideml: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("wideml: interrupted; no partial output was kept.", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
