"""``wideml clean [FOLDER...]``: remove the leftovers of dead wideml runs, saying what was removed and what was kept.

Every command already sweeps the folders it writes into before it starts
(:mod:`wideml.cli.before_run`); ``clean`` does the same on request, for any
folder: the hidden ``.NAME.partial-*`` / ``.NAME.old-*`` outputs, the
``NAME.wideml-work`` checkpoint folders (a rerun of an interrupted fit resumes
from these: cleaning them means the rerun starts over) and the ``wideml-fit-*``
work folders. A folder is removed only when it is abandoned
(:func:`wideml.runtime.ownership.abandoned`): never while its owner runs.
"""

from __future__ import annotations

import argparse
import os

from wideml.exceptions import ConfigError


def register(sub, common) -> None:
    p = sub.add_parser(
        "clean", parents=[common], help="remove leftovers of dead wideml runs (partial outputs, checkpoints, work folders)",
        description="Remove the partial outputs, checkpoint folders (NAME.wideml-work) and work folders (wideml-fit-*) "
                    "that wideml runs killed outright left in FOLDERs. Folders whose owner process still runs, or ran "
                    "on another host or in another container, are kept and listed.",
    )
    p.add_argument("folders", nargs="*", metavar="FOLDER",
                   help="folders to clean (default: the current folder and the work folder: --workdir, config workdir "
                        "or the system temporary directory)")
    p.add_argument("--workdir", metavar="DIR", help="the work folder to clean as well (default from config workdir)")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    p.set_defaults(handler=run_clean, needs_scheduler=False)


def _folders(args: argparse.Namespace) -> list[str]:
    from wideml.estimators._workdir import resolve_workdir

    named = [os.path.abspath(os.path.expanduser(f)) for f in args.folders] or [os.getcwd()]
    if args.workdir or not args.folders:
        named.append(resolve_workdir(None))
    for folder in named:
        if not os.path.isdir(folder):
            raise ConfigError(f"{folder} is not a folder; give `wideml clean` existing folders (or none for the current one).")
    return list(dict.fromkeys(os.path.realpath(f) for f in named))


def _owner_phrase(path) -> str:
    from wideml.runtime.ownership import read_owner

    record = read_owner(path)
    if record is None:
        return "unrecorded"
    where = f"pid {record.get('pid')} on {record.get('host')}"
    return where + (f", dask worker {record['worker']}" if record.get("worker") else "")


def run_clean(args: argparse.Namespace) -> int:
    """Sweep each folder; print one line per folder removed (or kept) and a summary; exit 0."""
    from wideml.cli.before_run import leftover_patterns
    from wideml.estimators._workdir import WORK_FOLDER_PREFIX
    from wideml.runtime.ownership import abandoned, candidates, remove_abandoned

    patterns = (*leftover_patterns(), WORK_FOLDER_PREFIX + "*")
    removed, kept = 0, 0
    verb = "would remove" if args.dry_run else "removed"
    for folder in _folders(args):
        for path in candidates(folder, patterns):
            if not abandoned(path):
                kept += 1
                print(f"kept {path} (owner {_owner_phrase(path)}: running, or not checkable from this host)")
                continue
            phrase = _owner_phrase(path)
            if not args.dry_run and not remove_abandoned(path):
                print(f"could not remove {path}; check its permissions")
                continue
            removed += 1
            print(f"{verb} {path} (owner {phrase}: {'no longer running' if phrase != 'unrecorded' else 'never claimed, or released and untouched for a while'})")
    print(f"{verb} {removed} leftover{'' if removed == 1 else 's'} of dead wideml runs"
          + (f"; kept {kept} whose owner runs or cannot be checked" if kept else ""))
    return 0
