"""``wideml clean [FOLDER...]``: remove the leftovers of dead wideml runs, saying what was removed and what was kept.

Every command already sweeps the folders it writes into before it starts
(:mod:`wideml.cli.before_run`); ``clean`` does the same on request, for any
folder, and also removes checkpoint folders kept for a rerun (``NAME.wideml-work``,
``wideml-cv-*``, ``wideml-resume-*``: cleaning them means the rerun starts
over). A ``file://`` URL names its local folder; any other URL (``s3://...``)
is refused, never read as a local folder named ``s3:``. It looks only at the names wideml gives its folders
(:mod:`wideml.runtime.owned_names`) and removes only folders whose wideml owner
record (:mod:`wideml.runtime.ownership`) shows a run that is over. A folder
with such a name but no wideml record is listed and left alone: if it really
is a leftover, ``wideml clean --remove PATH`` removes that one folder.
"""

from __future__ import annotations

import argparse
import os
import shutil

from wideml.exceptions import ConfigError, WidemlError

_KEPT_WHY = {
    "running": "its run is still going",
    "unknown": "its run is on another host or in another container: run `wideml clean` there",
    "unrecorded": "no wideml owner record proves wideml made it (there is none, or one not written by wideml for this "
                  "folder); only if you know it is a wideml leftover, remove it with `wideml clean --remove {path}`",
}


def register(sub, common) -> None:
    p = sub.add_parser(
        "clean", parents=[common], help="remove leftovers of dead wideml runs (partial outputs, checkpoints, work folders)",
        description="Remove the partial outputs (.NAME.wideml-partial-*), checkpoint folders (NAME.wideml-work) and work "
                    "folders (wideml-fit-*) that wideml runs killed outright left in FOLDERs. Only folders carrying a "
                    "wideml owner record of a run that is over are removed; folders without one are listed and kept "
                    "(remove one with --remove PATH); folders whose run still goes, or ran on another host or in another "
                    "container, are kept and listed.",
    )
    p.add_argument("folders", nargs="*", metavar="FOLDER",
                   help="folders to clean (default: the current folder and the work folder: --workdir, config workdir "
                        "or the system temporary directory)")
    p.add_argument("--workdir", metavar="DIR", help="the work folder to clean as well (default from config workdir)")
    p.add_argument("--remove", action="append", default=[], metavar="PATH",
                   help="remove this leftover folder even without a wideml owner record (it must have a wideml leftover "
                        "name and no running owner); may be repeated")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    p.set_defaults(handler=run_clean, needs_scheduler=False)


def _local(raw: str, what: str) -> str:
    """The local path ``raw`` names (a ``file://`` URL's path); a URL of an object store is refused in one sentence."""
    from wideml.storage.urls import is_url, local_path_of

    if not is_url(raw):
        return raw
    try:
        local = local_path_of(raw)
    except WidemlError as exc:
        raise ConfigError(str(exc)) from None
    if local is None:
        raise ConfigError(f"{what}{raw} is a URL; `wideml clean` cleans local folders only (wideml writes nothing to object "
                          "stores): give a local folder.")
    return local


def _folders(args: argparse.Namespace) -> list[str]:
    from wideml.runner.workdir import resolve_workdir

    folders = [_local(f, "") for f in args.folders]  # every URL refused before anything is looked at
    if args.remove and not args.folders and not args.workdir:
        return []
    named = [os.path.abspath(os.path.expanduser(f)) for f in folders] or [os.getcwd()]
    if args.workdir or not args.folders:
        named.append(resolve_workdir(None))
    for folder in named:
        if not os.path.isdir(folder):
            raise ConfigError(f"{folder} is not a folder; give `wideml clean` existing folders (or none for the current one).")
    return list(dict.fromkeys(os.path.realpath(f) for f in named))


def _explicit(paths: list[str]) -> list[str]:
    """The folders named with ``--remove``, checked: each exists, has a wideml leftover name, and no live owner."""
    from wideml.runtime.owned_names import is_owned_name
    from wideml.runtime.ownership import verdict

    checked = []
    for raw in paths:
        path = os.path.abspath(os.path.expanduser(_local(raw, "--remove ")))
        if os.path.islink(path) or not os.path.isdir(path):
            raise ConfigError(f"--remove {raw}: not a folder; name a leftover folder listed by `wideml clean`.")
        if not is_owned_name(os.path.basename(path)):
            raise ConfigError(f"--remove {raw}: {os.path.basename(path)!r} is not a name wideml gives its leftovers "
                              "(.NAME.wideml-partial-T, .NAME.wideml-old-T and wideml-fit-T with T 12 hex digits; "
                              "NAME.wideml-work; wideml-cv-K and wideml-resume-K with K 16 hex digits); wideml removes "
                              "nothing else.")
        if verdict(path) in ("running", "unknown"):
            raise ConfigError(f"--remove {raw}: a wideml run still owns it ({_KEPT_WHY[verdict(path)].format(path=path)}).")
        checked.append(path)
    return checked


def run_clean(args: argparse.Namespace) -> int:
    """Sweep each folder; print one line per folder removed (or kept) and a summary; exit 0."""
    from wideml.runtime.ownership import candidates, describe_owner, remove_abandoned, verdict, wideml_record
    from wideml.runtime.removal import remove_tree

    for folder in args.folders:  # a URL among the folders is refused before any --remove is done
        _local(folder, "")
    explicit = _explicit(args.remove)
    removed, kept = 0, 0
    verb = "would remove" if args.dry_run else "removed"
    for path in explicit:
        if not args.dry_run:
            if wideml_record(path) is not None:
                remove_tree(path)
            else:
                shutil.rmtree(path, ignore_errors=True)
            if os.path.lexists(path):
                print(f"could not remove {path}; check its permissions")
                continue
        removed += 1
        print(f"{verb} {path} (named with --remove)")
    for folder in _folders(args):
        for path in candidates(folder):
            state = verdict(path)
            if state not in ("dead", "kept"):
                kept += 1
                print(f"kept {path} ({_KEPT_WHY[state].format(path=path)})")
                continue
            phrase = describe_owner(wideml_record(path))
            if not args.dry_run and not remove_abandoned(path, kept_too=True):
                print(f"could not remove {path}; check its permissions")
                continue
            removed += 1
            why = "kept for a rerun that will now start over" if state == "kept" else "its run is over"
            print(f"{verb} {path} ({why}; {phrase})")
    print(f"{verb} {removed} leftover{'' if removed == 1 else 's'} of wideml runs"
          + (f"; kept {kept} (listed above)" if kept else ""))
    return 0
