"""The ``wideml`` command: a thin layer over the estimators and the storage layer.

Every subcommand shares ``--config``, ``--scheduler``, ``--memory-limit`` and
``--progress/--no-progress``, given before or after the command name
(``wideml --config FILE fit ...`` and ``wideml fit ... --config FILE`` are the
same; given twice, the later one wins); commands that write take ``-o OUT`` and
refuse to replace an existing output without ``--overwrite``. A problem with the
input is printed as one sentence and the command exits with status 2. When the
reader of the output goes away (``wideml info s.zarr | head -3``), the command
stops quietly with status 141 (128 + SIGPIPE, what a Unix tool killed by
SIGPIPE reports), as Python's documentation on SIGPIPE recommends: no traceback.
"""

from __future__ import annotations

from wideml.cli.interrupts import EXIT_STATUS, install_early_handlers, interrupted_line

if __name__ == "__main__":  # ``python -m wideml.cli.main``: signals handled from here on, as the console script does
    install_early_handlers()
    import os as _os

    if _os.environ.get("WIDEML_TEST_STARTED_MARK"):  # tests: say that the early handlers are in place (then imports follow)
        open(_os.environ["WIDEML_TEST_STARTED_MARK"], "w").close()

import argparse
import importlib
import os
import signal
import sys
import warnings

from wideml._version import __version__
from wideml.exceptions import PerformanceWarning, WidemlError

#: Modules under wideml.cli that each add subcommands through ``register(subparsers, common)``.
COMMAND_MODULES = ("store_commands", "ingest_commands", "simulate", "model_commands", "clean_command", "maps_command", "test_command",
                   "compare_command", "report_command")

#: argparse destinations holding file-system paths: made absolute once, right after parsing, so no
#: handler (and no dask graph) ever sees a relative path. A subcommand may add its own with
#: ``set_defaults(path_args=(...))``.
PATH_ARGS = ("store", "model", "input", "out", "output", "plot", "source", "labels", "config", "workdir")

#: Commands whose outputs are written by the scheduler's workers (a model's p-sized arrays, a store's
#: chunks): on a dask.distributed scheduler the workers must be able to write into the output's folder.
WORKER_WRITTEN_OUTPUTS = {"fit": ("output",), "ingest": ("output",), "simulate": ("output",), "rechunk": ("output", "out")}


#: Destinations of the options every command shares (:func:`_common_parser`); None when not given.
COMMON_DESTS = ("config", "scheduler", "memory_limit", "progress", "storage_option")

#: Exit status when the reader of stdout (or stderr) has gone away: 128 + SIGPIPE, as for a Unix tool killed by SIGPIPE.
EXIT_OUTPUT_CLOSED = 128 + int(getattr(signal, "SIGPIPE", 13))


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad command line said in one sentence (exit status 2) instead of the usage block and a line.

    Subcommands' parsers are of this class too (``add_subparsers`` makes them
    of the parent's class), so ``--repeats 0`` and ``--folds 1`` read alike:
    ``wideml: error: argument --repeats: '0' is below 1; give a whole number
    of at least 1 (see `wideml cv --help`).``
    """

    def error(self, message: str):
        text = message.strip().rstrip(".")
        self.exit(2, f"wideml: error: {text} (see `{self.prog} --help`).\n")


def _common_parser() -> argparse.ArgumentParser:
    """The options every command shares, accepted before the command name too.

    Their defaults are ``argparse.SUPPRESS``: the subcommand's parser then sets
    only what was given after the command, and does not reset what was given
    before it (:func:`parse_args` fills the rest with None).
    """
    from wideml.runtime.scheduler import SCHEDULER_HELP

    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    group = common.add_argument_group("execution (before or after the command)")
    group.add_argument("--config", metavar="FILE", help="YAML config file with a top-level 'wideml:' mapping (see configs/)")
    group.add_argument("--scheduler", metavar="NAME", help=f"where to run: {SCHEDULER_HELP} (default from config: threads)")
    group.add_argument("--memory-limit", metavar="SIZE", help="memory budget: a size such as 8GiB, or a share of RAM such as 50%% (default from config: 60%% of RAM)")
    group.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                       help="fsspec option for stores given as URLs (s3://...), e.g. endpoint_url=http://127.0.0.1:9000; "
                            "repeatable, dotted keys nest (client_kwargs.region_name=eu-west-1); credentials come from the "
                            "environment (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...), never from here")
    bar = group.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_const", const=True, help="always show progress bars")
    bar.add_argument("--no-progress", dest="progress", action="store_const", const=False, help="never show progress bars")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_parser()
    parser = _Parser(
        prog="wideml", parents=[common],
        description="Out-of-core supervised dimensionality reduction for wide data (zarr v3 / HDF5 feature stores).",
    )
    parser.add_argument("--version", action="version", version=f"wideml {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"wideml.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"wideml.cli.{name}":
                continue
            raise
        module.register(sub, common)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` with ``parser``; the shared options not given (before or after the command) are None.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        From :func:`build_parser`.
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    argparse.Namespace
    """
    args = parser.parse_args(argv)
    for dest in COMMON_DESTS:
        if not hasattr(args, dest):
            setattr(args, dest, None)
    return args


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
    if getattr(args, "memory_limit", None) is not None:  # an empty value is refused, not ignored
        parse_bytes(args.memory_limit, "--memory-limit")
        dask.config.set({"wideml.memory-limit": args.memory_limit})
    if getattr(args, "progress", None) is not None:
        dask.config.set({"wideml.progress": bool(args.progress)})
    if getattr(args, "workdir", None):
        dask.config.set({"wideml.workdir": args.workdir})
    if getattr(args, "storage_option", None):
        from wideml.runtime.config import config_value
        from wideml.storage.urls import check_storage_options, nest, parse_storage_option

        given = nest([parse_storage_option(text) for text in args.storage_option])
        check_storage_options(given, "--storage-option")
        dask.config.set({"wideml.storage-options": {**(config_value("storage-options") or {}), **given}})


def _run(args: argparse.Namespace) -> int:
    """Prepare (config, sweep of dead runs' leftovers, pre-flight checks) and run the handler on its scheduler."""
    from wideml.cli.before_run import preflight, refuse_url_outputs, sweep_leftovers

    absolute_paths(args)
    refuse_url_outputs(args)  # before anything (the config's workdir included) could make a local folder named 's3:'
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
    from wideml.runtime.removal import remove_scratch
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
    from wideml.runtime import signals

    try:
        _clean_up()
    except BaseException:  # noqa: BLE001 - the one line below is all the user gets
        pass
    status = signals.EXIT_STATUS.get(signum, 130)
    signals.say(interrupted_line(signum), after_progress=_progress_shown())
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
    process still exits with the run's status. When the reader of stdout or
    stderr goes away (``wideml info s.zarr | head -3``), the run stops, its
    partial outputs are removed, the closed stream is pointed at os.devnull and
    the status is :data:`EXIT_OUTPUT_CLOSED` (141), with no traceback. A
    KeyboardInterrupt before the run starts (while the command modules are
    imported) gives the same one line and 130. The console script
    (:func:`wideml.cli.entry.run`) handles the signals from the first moment.
    """
    try:
        try:
            return _main(argv)
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()  # a reader gone away shows here, not as "Exception ignored" at interpreter exit
    except BrokenPipeError:
        if not _silence_closed_outputs():
            raise
        _clean_up()
        return EXIT_OUTPUT_CLOSED
    except KeyboardInterrupt as exc:
        # before the run (importing the command modules, parsing): nothing is written yet, nothing to clean up
        signum = int(getattr(exc, "signum", signal.SIGINT))
        try:
            print(interrupted_line(signum), file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
        return EXIT_STATUS.get(signum, 128 + signum)


def _closed_outputs() -> list[int]:
    """The file descriptors among stdout and stderr whose reader has gone away (a pipe or socket with no reader).

    A pipe without readers polls as POLLERR (a socket as POLLHUP/POLLERR); a
    terminal or a file never does. Where ``select.poll`` is missing, stdout is
    assumed to be the closed one.
    """
    import select

    if not hasattr(select, "poll"):
        return [1]
    closed = []
    for fd in (1, 2):
        try:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            events = poller.poll(0)
        except (OSError, ValueError):
            continue
        if any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events):
            closed.append(fd)
    return closed


def _silence_closed_outputs() -> bool:
    """Point stdout/stderr whose reader went away at os.devnull (so nothing more fails, even at exit); False if none did.

    Python's documentation on SIGPIPE recommends this: redirect the closed
    stream to devnull and exit, so the interpreter's final flush has somewhere
    to go and prints no "Exception ignored" line.
    """
    closed = _closed_outputs()
    if not closed:
        return False
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in closed:
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    return True


def _main(argv: list[str] | None) -> int:
    """Parse ``argv`` and run the command (:func:`main` without its handling of a closed stdout)."""
    from wideml.runtime.signals import interrupts_raise

    parser = build_parser()
    args = parse_args(parser, argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, as the run's report records it
    warnings.simplefilter("always", PerformanceWarning)
    warnings.formatwarning = lambda msg, cat, *a, **k: f"wideml: warning: {msg}\n"
    # the console script (argv None) exits right after the run: a signal that comes later is ignored
    with interrupts_raise(then_ignore=argv is None):
        return _guarded_run(args)


def _guarded_run(args: argparse.Namespace) -> int:
    """:func:`_run`, with interrupts, refusals and a full disk turned into their one line and exit status."""
    from wideml.runtime.preflight import is_disk_full
    from wideml.runtime.signals import Interrupted

    try:
        return _run(args)
    except Interrupted as exc:
        return _interrupted(exc.signum)
    except KeyboardInterrupt:
        return _interrupted(signal.SIGINT)
    except BrokenPipeError:
        raise  # the reader of stdout went away: main() stops quietly (an OSError, but never a full disk)
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
