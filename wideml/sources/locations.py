"""Where an ingest source is: an in-memory array-like, a file or folder path, or ``file.h5:/dataset``.

:func:`locate` resolves what the user gave before any format is chosen: the
path is made absolute (copy tasks may run on workers started elsewhere) and
must exist; an HDF5 path with a ``:/dataset`` tail is split in two. The
registry (:mod:`wideml.sources.registry`) then asks its recognisers about the
:class:`Location`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wideml.exceptions import WidemlError
from wideml.storage.urls import is_url, local_path_of

_H5_SPEC = re.compile(r"^(?P<file>.+\.(?:h5|hdf5|hdf|he5)):(?P<dataset>/?[^:]+)$", re.IGNORECASE)


def split_hdf5_spec(source: str) -> tuple[str, str | None]:
    """Split ``file.h5:/path/to/dataset`` into the file and dataset (None without a dataset part)."""
    match = _H5_SPEC.match(str(source))
    if match and not Path(source).exists():
        return match.group("file"), match.group("dataset")
    return str(source), None


@dataclass(frozen=True)
class Location:
    """A source as the recognisers see it.

    Attributes
    ----------
    path : Path or None
        Absolute path of a file or folder; None for an in-memory array-like.
    dataset : str or None
        The ``:/dataset`` part of ``file.h5:/dataset``.
    obj : object
        The in-memory array-like (``path`` is None), else None.
    """

    path: Path | None
    dataset: str | None = None
    obj: Any = None

    @property
    def in_memory(self) -> bool:
        return self.path is None

    @property
    def name(self) -> str:
        """Lower-case file or folder name ("" in memory), for suffix tests."""
        return "" if self.path is None else self.path.name.lower()


def _refuse_url(url: str):
    raise WidemlError(f"ingesting from object stores is not supported yet ({url} is a URL); copy the source locally and ingest the copy.")


def locate(source) -> Location:
    """The :class:`Location` of ``source`` (an array-like, or a str or path-like that must exist)."""
    if not isinstance(source, (str, os.PathLike)):
        return Location(None, None, source)
    if is_url(source):  # never joined to the working folder
        source = local_path_of(source) or _refuse_url(source)
    file, dataset = split_hdf5_spec(str(source))
    path = Path(os.path.abspath(os.path.expanduser(file)))
    if not path.exists():
        raise WidemlError(f"source {str(path)!r} does not exist; check the path.")
    return Location(path, dataset)
