"""The names wideml gives the folders it writes aside, and the patterns that find them again.

Every such name ends in a marker no user folder is likely to carry by chance:

- ``.NAME.wideml-partial-TOKEN``: an output being written (moved into place as ``NAME``);
- ``.NAME.wideml-old-TOKEN``: an output being replaced, removed once the new one is in place;
- ``wideml-fit-TOKEN`` in the work folder: a fitted estimator's p-sized arrays;
- ``NAME.wideml-work`` beside a ``fit`` output, and ``wideml-cv-KEY`` / ``wideml-resume-KEY``
  in the work folder (``wideml cv``; API fits under ``wideml.resume``): the
  checkpoints a rerun resumes from (``KEY``: 16 hex digits naming the run).

``TOKEN`` is 12 lowercase hex digits. A name alone proves nothing: a folder is
removed only when it also holds a wideml owner record written for that very
name (:mod:`wideml.runtime.ownership`). The names only narrow the search, so
``wideml-fit-mine`` or ``.config.old-backup`` are not even looked at.

Names stay within the usual 255-byte limit of one path component: a long
``NAME`` is shortened and a digest of the whole name keeps it unique.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid

#: The owner record's file name inside every folder wideml owns.
OWNER_FILE = ".wideml-owner.json"

#: Longest file name most filesystems accept (bytes of one path component).
NAME_MAX = 255

#: Suffix of a fit's checkpoint folder beside its output (``<output>.wideml-work``).
CHECKPOINT_SUFFIX = ".wideml-work"

#: Prefix of the work folders that hold fitted estimators' arrays.
WORK_FOLDER_PREFIX = "wideml-fit-"

_TOKEN = r"[0-9a-f]{12}"
_ASIDE = re.compile(r"^\..+\.wideml-(partial|old)-" + _TOKEN + r"(-[a-z0-9]+)?$", re.DOTALL)
_WORK = re.compile(r"^" + re.escape(WORK_FOLDER_PREFIX) + _TOKEN + r"$")
_CHECKPOINT = re.compile(r"^(.+" + re.escape(CHECKPOINT_SUFFIX) + r"|wideml-(cv|resume)-[0-9a-f]{16})$", re.DOTALL)


def new_token() -> str:
    """A fresh random 12-hex-digit token."""
    return uuid.uuid4().hex[:12]


def _fit(stem: str, room: int) -> str:
    """``stem`` shortened (with a digest of the whole of it) so that its UTF-8 form takes at most ``room`` bytes."""
    if len(os.fsencode(stem)) <= room:
        return stem
    digest = hashlib.sha256(os.fsencode(stem)).hexdigest()[:10]
    keep = max(1, room - len(digest) - 1)
    short = os.fsencode(stem)[:keep].decode("utf-8", errors="ignore")
    return f"{short}~{digest}"


def aside_name(name: str, kind: str, tag: str = "") -> str:
    """The hidden folder name ``.NAME.wideml-KIND-TOKEN[-TAG]`` for an output called ``name``.

    Parameters
    ----------
    name : str
        The output's own name (last path component).
    kind : {"partial", "old"}
        An output being written, or one being replaced.
    tag : str, optional
        Lowercase letters and digits naming a stage (e.g. rechunk's ``stage1``).
    """
    if kind not in ("partial", "old"):
        raise ValueError(f"kind must be 'partial' or 'old', got {kind!r}")
    tail = f".wideml-{kind}-{new_token()}" + (f"-{tag}" if tag else "")
    return "." + _fit(name, NAME_MAX - 1 - len(tail)) + tail


def checkpoint_name(name: str) -> str:
    """The checkpoint folder name ``NAME.wideml-work`` for an output called ``name`` (shortened when long)."""
    return _fit(name, NAME_MAX - len(CHECKPOINT_SUFFIX)) + CHECKPOINT_SUFFIX


def checkpoint_folder(output: str | os.PathLike) -> str:
    """The absolute checkpoint folder beside ``output`` (a rerun of the same command finds it again)."""
    path = os.path.abspath(os.fspath(output))
    return os.path.join(os.path.dirname(path), checkpoint_name(os.path.basename(path)))


def work_folder_name() -> str:
    """A fresh work folder name ``wideml-fit-TOKEN``."""
    return WORK_FOLDER_PREFIX + new_token()


def is_aside_name(name: str) -> bool:
    """Whether ``name`` is a write-aside name (:func:`aside_name`)."""
    return bool(_ASIDE.match(name))


def is_work_folder_name(name: str) -> bool:
    """Whether ``name`` is a work folder name (:func:`work_folder_name`)."""
    return bool(_WORK.match(name))


def is_checkpoint_name(name: str) -> bool:
    """Whether ``name`` is a checkpoint folder name (:func:`checkpoint_name`)."""
    return bool(_CHECKPOINT.match(name))


def is_owned_name(name: str) -> bool:
    """Whether ``name`` is any of the names wideml gives folders it writes aside."""
    return is_aside_name(name) or is_work_folder_name(name) or is_checkpoint_name(name)


__all__ = ["CHECKPOINT_SUFFIX", "NAME_MAX", "OWNER_FILE", "WORK_FOLDER_PREFIX", "aside_name", "checkpoint_folder", "checkpoint_name",
           "is_aside_name", "is_checkpoint_name", "is_owned_name", "is_work_folder_name", "new_token", "work_folder_name"]
