"""zarr sources: a zarr array directory (v3, or v2; a v2 group holding ``X`` means that array).

A folder is taken for zarr when it holds ``zarr.json``, ``.zarray`` or
``.zgroup``. A zarr group that is a feature store is pointed at ``wideml
rechunk``. Blocks are read whole chunks at a time by
:class:`wideml.storage.reader.ZarrReader`; chunk files missing from a v3 array
are refused naming one (one listing) unless ``missing_chunks_are_fill``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import zarr

from wideml.exceptions import WidemlError
from wideml.sources.arrays import ArraySource, check_matrix
from wideml.sources.base import IngestOptions
from wideml.sources.locations import Location
from wideml.storage import schema
from wideml.storage.integrity import check_layout_complete, chunk_layout
from wideml.storage.reader import ZarrReader

#: Files that make a folder a zarr node.
ZARR_MARKERS = ("zarr.json", ".zarray", ".zgroup")


class ZarrSource(ArraySource):
    """A zarr array directory."""

    kind = "zarr"

    @classmethod
    def open_array(cls, location: Location, options: IngestOptions) -> ZarrSource:
        return from_zarr_array(location.path, missing_fill=options.missing_chunks_are_fill)


def from_zarr_array(path: Path, missing_fill: bool = False) -> ZarrSource:
    """Open a zarr array directory (v3, or v2 — a v2 group holding ``X`` means that array).

    Unless ``missing_fill``, a v3 array with missing chunk files is refused
    naming one (one listing), and a chunk that goes missing later fails the copy.
    """
    if (path / "zarr.json").is_file():
        try:
            meta = json.loads((path / "zarr.json").read_text())
        except (OSError, ValueError):
            raise WidemlError(f"{str(path)!r} has unreadable zarr metadata; the array is corrupt — recreate it.") from None
        if meta.get("node_type") == "group":
            if (path / schema.X_NAME / "zarr.json").is_file():
                raise WidemlError(f"{str(path)!r} is a feature store already; use `wideml rechunk` to copy it with other chunks.")
            raise WidemlError(f"{str(path)!r} is a zarr group, not an array; pass the path of the array inside it.")
    elif (path / ".zgroup").is_file():
        if not (path / schema.X_NAME / ".zarray").is_file():
            raise WidemlError(f"{str(path)!r} is a zarr v2 group without an array 'X'; pass the path of the array inside it.")
        path = path / schema.X_NAME
    try:
        arr = zarr.open_array(str(path), mode="r")
        dtype = np.dtype(arr.dtype)
    except Exception:  # noqa: BLE001 - corrupt metadata and string/struct dtypes surface as several errors
        raise WidemlError(f"zarr array {str(path)!r} is unreadable or not numeric; X must be a readable array of real numbers.") from None
    shape = check_matrix(arr.shape, dtype, f"zarr array {str(path)!r}")
    chunks = tuple(int(c) for c in arr.chunks)
    meta_file = next((path / name for name in ("zarr.json", ".zarray") if (path / name).is_file()), None)
    if not missing_fill and meta_file is not None:
        layout = chunk_layout(path, json.loads(meta_file.read_text()))
        if layout is not None:
            check_layout_complete(layout, f"the zarr array at {path}")
    reader = ZarrReader(str(path.parent), path.name, shape, dtype, chunks, missing="fill" if missing_fill else "error")
    return ZarrSource(reader, shape, dtype, (chunks[0], chunks[1]), False, f"zarr:{path}")
