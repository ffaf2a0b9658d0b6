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

from wideml._version import __version__
from wideml.exceptions import PerformanceWarning, WidemlError

#: Modules under wideml.cli that each add subcommands through ``register(subparsers, common)``.
COMMAND_MODULES = ("store_commands", "ingest_commands", "simulate", "model_commands", "clean_command", "maps_command")

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
    if getattr(args, "workdir", None):
        dask.config.set({"wideml.workdir": args.workdir})


def _run(args: argparse.Namespace) -> int:
    """Prepare (config, sweep of dead runs' leftovers, pre-flight checks) and run the handler on its scheduler."""
    from wideml.cli.before_run import preflight, sweep_leftovers

    absolute_paths(args)
    _apply_common(args)
    sweep_leftovers(args)
    preflight(args)
    if not getattr(args, "needs_scheduler", True):
        return int(args.handler(args) or 0)
    from wideml.runtime.quiesce import cancel_client_futures_on_failure, wait_for_running_tasks
    from wideml.runtime.scheduler import announce_scheduler, use_scheduler

    cancel_client_futures_on_failure(True)  # the command owns its client: a failed run's queued tasks need not run
    try:
        with use_scheduler(getattr(args, "scheduler", None)):
            announce_scheduler(explicit=bool(getattr(args, "scheduler", None)))  # "wideml: scheduler threads (3 threads)" on stderr
            try:
                _check_worker_outputs(args)
                return int(args.handler(args) or 0)
            except BaseException:
                wait_for_running_tasks()  # while the client is still open: no task may write after the clean-up
                raise
    finally:
        cancel_client_futures_on_failure(False)


def _clean_up() -> None:
    """After a failed or interrupted run: wait for running tasks, then remove this run's partial outputs and work folders."""
    from wideml.runtime.ownership import remove_scratch
    from wideml.runtime.quiesce import wait_for_running_tasks

    try:
        wait_for_running_tasks()
    finally:
        remove_scratch()


def _progress_shown() -> bool:
    """Whether progress bars were drawn on stderr (``--progress``, or ``auto`` on a terminal)."""
    import dask.config

    value = str(dask.config.get("wideml.progress", "auto")).lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    from wideml.runtime.signals import stderr_is_terminal

    return stderr_is_terminal()


def _interrupted(signum: int) -> int:
    """Clean up after SIGINT/SIGTERM, print one line, and return (or, after a real signal, exit with) 130/143."""
    import signal

    from wideml.runtime import signals

    try:
        _clean_up()
    except BaseException:  # noqa: BLE001 - the one line below is all the user gets
        pass
    status = signals.EXIT_STATUS.get(signum, 130)
    signals.say(f"wideml: interrupted by {signal.Signals(signum).name}; partial outputs and work folders of this run were removed.",
                after_progress=_progress_shown())
    if signals.signal_received() is not None:
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001
            pass
        os._exit(status)  # skip interpreter shutdown: no library prints a traceback wall on the way out
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``wideml`` console script; returns the exit status.

    SIGINT and SIGTERM stop the run, remove its partial outputs and work
    folders (after the running tasks stopped) and exit with 130 / 143 and one
    line on stderr. Run as the console script (``argv`` None), a signal that
    arrives once the run is over (its outputs in place) is ignored, so the
    process still exits with the run's status.
    """
    from wideml.runtime.signals import interrupts_raise

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    warnings.simplefilter("always", PerformanceWarning)
    warnings.formatwarning = lambda msg, cat, *a, **k: f"wideml: warning: {msg}\n"
    # the console script (argv None) exits right after the run: a signal that comes later is ignored
    with interrupts_raise(then_ignore=argv is None):
        return _guarded_run(args)


def _guarded_run(args: argparse.Namespace) -> int:
    """:func:`_run`, with interrupts, refusals and a full disk turned into their one line and exit status."""
    import signal

    from wideml.runtime.preflight import is_disk_full
    from wideml.runtime.signals import Interrupted

    try:
        return _run(args)
    except Interrupted as exc:
        return _interrupted(exc.signum)
    except KeyboardInterrupt:
        return _interrupted(signal.SIGINT)
    except WidemlError as exc:
        _clean_up()
        print(f"wideml: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        from wideml.cli.before_run import disk_full_folder
        from wideml.runtime.preflight import disk_full_error

        _clean_up()
        print(f"wideml: error: {disk_full_error(disk_full_folder(exc, args))}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
