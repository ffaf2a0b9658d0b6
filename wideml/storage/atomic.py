"""Write-aside-then-rename, so an interrupted write never leaves a half-written output."""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from wideml.exceptions import StoreError


def check_output(path: str | os.PathLike, overwrite: bool) -> Path:
    """Refuse to replace an existing output unless ``overwrite`` is set."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise StoreError(f"output {str(path)!r} already exists; pass --overwrite (overwrite=True) to replace it or choose another path.")
    if not path.parent.exists():
        raise StoreError(f"cannot write {str(path)!r}: folder {str(path.parent)!r} does not exist; create it first.")
    return path


def remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling path; on success move it to ``path``, on failure delete it.

    The final step removes an existing ``path`` (only when ``overwrite``) and
    renames the temporary output into place, so readers never see a partial store.
    """
    path = Path(os.path.abspath(check_output(path, overwrite)))  # the graphs writing into tmp never carry a relative path
    from wideml.runtime.cluster_check import require_directory

    require_directory(path.parent, "the output folder")  # on a dask cluster, workers write the output's chunks
    tmp = path.with_name(f".{path.name}.partial-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
    except BaseException:
        remove_path(tmp)
        raise
    if path.exists():
        old = path.with_name(f".{path.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(path, old)
        os.replace(tmp, path)
        remove_path(old)
    else:
        os.replace(tmp, path)
