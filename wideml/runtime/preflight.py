"""Checks made before the first pass: folders writable, enough free space; and the disk-full sentence.

The size estimates come from metadata only (no pass over X):

- a store of X: ``n × p × itemsize`` bytes (uncompressed);
- a model's p-sized arrays: ``p × (d + n_classes + 4) × 8`` bytes (float64
  loadings, class means/medians, feature mean and scale).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from collections.abc import Iterable

from wideml.exceptions import StoreError

#: Arrays of a model beyond its d loadings and K class statistics (feature mean, scale, spares).
MODEL_EXTRA_ROWS = 4

_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def store_bytes(n_samples: int, n_features: int, itemsize: int) -> int:
    """Bytes of an uncompressed store's X (n × p × itemsize)."""
    return int(n_samples) * int(n_features) * int(itemsize)


def model_bytes(n_features: int, n_components: int, n_classes: int) -> int:
    """Bytes of a model's (or a work folder's) p-sized float64 arrays: p × (d + K + 4) × 8."""
    return int(n_features) * (int(n_components) + int(n_classes) + MODEL_EXTRA_ROWS) * 8


def format_bytes(nbytes: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover


def require_writable(folder: str | os.PathLike, what: str) -> None:
    """Refuse, in one sentence, a folder that is missing or where a file cannot be created.

    Parameters
    ----------
    folder : path-like
    what : str
        What the folder is for, e.g. ``"the output folder"``.
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise StoreError(f"{what} {folder} does not exist or is not a folder; create it or choose another.")
    try:
        fd, probe = tempfile.mkstemp(prefix=".wideml-probe-", dir=folder)
    except OSError as exc:
        raise StoreError(f"cannot write in {what} {folder} ({exc.strerror or exc}); choose a writable folder.") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass


def free_bytes(folder: str | os.PathLike) -> int:
    """Free bytes on the filesystem holding ``folder`` (available to this user)."""
    return int(shutil.disk_usage(os.fspath(folder)).free)


def require_free_space(needs: Iterable[tuple[str | os.PathLike, int, str]]) -> None:
    """Refuse, in one sentence, when the filesystems cannot hold what is about to be written.

    Parameters
    ----------
    needs : iterable of (folder, bytes, what)
        What will be written where; needs on the same filesystem are added up.
    """
    by_device: dict[int, list] = {}
    for folder, nbytes, what in needs:
        folder = os.fspath(folder)
        try:
            device = os.stat(folder).st_dev
        except OSError:
            continue
        by_device.setdefault(device, []).append((folder, int(nbytes), what))
    for items in by_device.values():
        total = sum(nbytes for _, nbytes, _ in items)
        folder = items[0][0]
        try:
            free = free_bytes(folder)
        except OSError:
            continue
        if total > free:
            whats = " and ".join(dict.fromkeys(what for _, _, what in items))
            raise StoreError(f"not enough free space in {folder} for {whats}: about {format_bytes(total)} needed, "
                             f"{format_bytes(free)} free; free some space or choose another folder.")


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a full disk: ENOSPC/EDQUOT or a short write."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and (exc.errno in (errno.ENOSPC, errno.EDQUOT) or _SHORT_WRITE.search(str(exc))):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def disk_full_error(folder: str | os.PathLike, needed: int | None = None) -> StoreError:
    """The one sentence for a disk that filled up while writing into ``folder``."""
    folder = os.fspath(folder)
    try:
        free = f"{format_bytes(free_bytes(folder))} free"
    except OSError:
        free = "no space left"
    need = f"about {format_bytes(needed)} needed, " if needed else ""
    return StoreError(f"the disk holding {folder} filled up while writing ({need}{free}); nothing was kept; "
                      "free some space or choose another folder.")
