"""Fast reads of CIFTI-2 headers and rows, for folders of many files on one brain-model axis.

nibabel's full parse of a CIFTI-2 header (``nibabel.load(f).header.get_axis(1)``)
turns every grayordinate's index text into Python objects: about 2 s per file
at fsLR 32k size (91 282 grayordinates). A folder of hundreds of files would
spend most of its ingest there, so each file is opened as the NIfTI-2 image it
is (``nibabel.Nifti2Image``: milliseconds) and:

* its CIFTI-2 XML extension (code 32, ``extension.content``) is parsed with the
  standard library's ``xml.etree`` only for the kinds of its two axes;
* its brain-model axis is identified by the canonical bytes of the XML
  element that describes it (:attr:`CiftiHeader.signature`). Files whose bytes
  equal the first file's have the first file's axis; only the first file, and
  a file whose bytes differ, are parsed by nibabel into a ``BrainModelAxis``
  (and compared with ``==``), so differences in formatting alone are not refused;
* rows are read through the NIfTI-2 image's array proxy (data shape
  ``(1, 1, 1, 1, rows, grayordinates)``, scaling applied by nibabel).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.surface_files import is_gzip, one_line, quiet_nibabel

#: NIfTI extension code of CIFTI-2 XML.
CIFTI_CODE = 32
_TYPES = {"CIFTI_INDEX_TYPE_BRAIN_MODELS": "BrainModel", "CIFTI_INDEX_TYPE_PARCELS": "Parcels",
          "CIFTI_INDEX_TYPE_SCALARS": "Scalar", "CIFTI_INDEX_TYPE_SERIES": "Series", "CIFTI_INDEX_TYPE_LABELS": "Label"}


@dataclass(frozen=True)
class CiftiHeader:
    """What the fast read of one CIFTI-2 file found.

    Attributes
    ----------
    kinds : (str, str)
        Kinds of the row and column axes (``"Scalar"``, ``"Series"``, ``"BrainModel"``, ``"Parcels"``, ``"Label"``).
    n_rows, n_columns : int
        Data matrix shape (maps or time points, grayordinates).
    dtype : numpy dtype
        Of the values as read (float32 for scaled integers).
    signature : bytes or None
        Canonical bytes of the column axis's XML element (None with a nibabel
        older than 5.3, whose extensions do not hand out their raw bytes: then
        every file's axis is parsed by nibabel).
    """

    kinds: tuple[str, str]
    n_rows: int
    n_columns: int
    dtype: np.dtype
    signature: bytes | None


def _what_it_is(nib, path: Path, exc: Exception) -> WidemlError:
    """The refusal for a file that does not open as NIfTI-2: gzip bytes, what nibabel makes of it, or why it cannot read it."""
    if is_gzip(path):
        return WidemlError(f"{str(path)!r} is gzip-compressed although named .nii; CIFTI-2 files are read uncompressed — "
                           f"decompress it (rename it to {path.name + '.gz'!r} and gunzip it) and ingest again.")
    try:
        with quiet_nibabel():
            img = nib.load(str(path))
    except Exception:  # noqa: BLE001 - nibabel raises many types for bad files
        return WidemlError(f"cannot read CIFTI file {str(path)!r} ({type(exc).__name__}: {one_line(exc)}); check the file.")
    return WidemlError(f"{str(path)!r} is named like a CIFTI-2 file but is a {type(img).__name__} without a CIFTI-2 header; "
                       "rename it (a NIfTI volume goes in a folder of volumes) or recreate it.")


def open_nifti2(nib, path: Path):
    """The file as a ``nibabel.Nifti2Image`` (header only; data stays on disk)."""
    try:
        with quiet_nibabel():
            return nib.Nifti2Image.from_filename(str(path))
    except Exception as exc:  # noqa: BLE001
        raise _what_it_is(nib, path, exc) from None


def read_header(nib, path: Path) -> CiftiHeader:
    """Kinds of the axes, shape, dtype and the brain-model signature of one file (no data read).

    Raises
    ------
    WidemlError
        For an unreadable file, a NIfTI file without CIFTI-2 XML, or XML that does not parse.
    """
    img = open_nifti2(nib, path)
    ext = [e for e in img.header.extensions if e.get_code() == CIFTI_CODE]
    raw = getattr(ext[0], "content", None) if ext else None
    if not ext:
        raise WidemlError(f"{str(path)!r} is named like a CIFTI-2 file but is a NIfTI-2 image without CIFTI-2 XML; "
                          "rename it or recreate it.")
    if not isinstance(raw, bytes):  # nibabel before 5.3: the caller parses every file's axes with nibabel
        return CiftiHeader(("?", "?"), *_shape_dtype(img, path), None)
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        raise WidemlError(f"cannot read CIFTI file {str(path)!r} (its CIFTI-2 XML does not parse: {one_line(exc)}); check the file.") from None
    kinds, columns = ["?", "?"], b""
    for imap in root.iter("MatrixIndicesMap"):
        kind = _TYPES.get(imap.get("IndicesMapToDataType", ""), imap.get("IndicesMapToDataType", "?"))
        dims = [d.strip() for d in imap.get("AppliesToMatrixDimension", "").split(",")]
        for d in dims:
            if d in ("0", "1"):
                kinds[int(d)] = kind
        if "1" in dims:
            columns = ET.tostring(imap)
    return CiftiHeader((kinds[0], kinds[1]), *_shape_dtype(img, path), columns)


def _shape_dtype(img, path: Path) -> tuple[int, int, np.dtype]:
    """Rows, columns and value dtype of a CIFTI-2 file's data matrix (float32 for scaled integers)."""
    shape = tuple(int(s) for s in img.shape)
    if len(shape) != 6 or shape[:4] != (1, 1, 1, 1):
        raise WidemlError(f"CIFTI file {str(path)!r} has data of shape {shape}, not a matrix; check the file.")
    proxy = img.dataobj
    scaled = getattr(proxy, "slope", 1) != 1 or getattr(proxy, "inter", 0) != 0
    return shape[4], shape[5], np.dtype(np.float32) if scaled else np.dtype(img.get_data_dtype())


def read_rows(nib, path: str, t0: int, t1: int) -> np.ndarray:
    """Rows ``t0:t1`` of a CIFTI-2 file's data matrix, shape ``(t1 - t0, n_columns)``, scaling applied."""
    proxy = open_nifti2(nib, Path(path)).dataobj
    return np.asanyarray(proxy[0, 0, 0, 0, t0:t1, :])
