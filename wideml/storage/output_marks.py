"""Which existing outputs wideml may replace: only those it can prove it wrote.

``--overwrite`` (``overwrite=True``) replaces an existing output only when it is
wideml's own (:func:`made_by_wideml`):

- a file or folder carrying wideml's output mark: an extended attribute
  ``user.wideml.output`` that every output written through
  :func:`wideml.storage.atomic.atomic_output` gets (:func:`mark`), holding the
  output's name signed with the user's owner key
  (:mod:`wideml.runtime.owner_key`), so a copy under another name, a
  hand-made mark or another user's file proves nothing;
- a feature store or model (zarr group or HDF5 file) whose metadata carry
  wideml's schema, whichever wideml version wrote it.

Anything else (a user's folder, ``.ssh``, a CSV wideml did not write, a
symbolic link, whatever it points to) is refused in one sentence. Where the
filesystem keeps no extended attributes, wideml's own report, table and image
files cannot be proven either, and must be removed by hand before rewriting.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py

from wideml.runtime.owner_key import sign, verify
from wideml.storage.schema import FEATURE_STORE_SCHEMA, MODEL_SCHEMA


#: The extended attribute that marks an output wideml wrote.
OUTPUT_XATTR = "user.wideml.output"
_MARKER = "wideml-output/1"


def mark(path: str | os.PathLike, name: str | None = None) -> bool:
    """Mark ``path`` (about to be renamed to ``name``, default its own name) as wideml's output; best effort.

    Returns whether the mark was written (False where the filesystem keeps no extended attributes).
    """
    path = Path(path)
    value = sign({"wideml": _MARKER, "name": name or path.name})
    if "signature" not in value:
        return False
    try:
        os.setxattr(path, OUTPUT_XATTR, json.dumps(value).encode(), follow_symlinks=False)
        return True
    except (OSError, AttributeError):
        return False


def _marked(path: Path) -> bool:
    try:
        value = json.loads(os.getxattr(path, OUTPUT_XATTR, follow_symlinks=False))
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(value, dict) and value.get("wideml") == _MARKER and value.get("name") == path.name and verify(value)


def _zarr_schema(path: Path) -> str | None:
    try:
        with open(path / "zarr.json", "rb") as fh:
            meta = json.loads(fh.read(1 << 22))
    except (OSError, ValueError):
        try:
            with open(path / ".zattrs", "rb") as fh:
                attrs = json.loads(fh.read(1 << 22))
        except (OSError, ValueError):
            return None
    else:
        attrs = meta.get("attributes", {}) if isinstance(meta, dict) else {}
    info = attrs.get("wideml") if isinstance(attrs, dict) else None
    return info.get("schema") if isinstance(info, dict) else None


def _hdf5_schema(path: Path) -> str | None:
    try:
        with h5py.File(path, "r") as fh:
            raw = fh.attrs.get("wideml")
    except Exception:  # noqa: BLE001 - not an HDF5 file, or unreadable: nothing proven
        return None
    try:
        info = json.loads(raw) if isinstance(raw, (str, bytes)) else None
    except ValueError:
        return None
    return info.get("schema") if isinstance(info, dict) else None


def made_by_wideml(path: str | os.PathLike) -> bool:
    """Whether the existing output ``path`` is provably wideml's (see the module's docstring); never for a link."""
    path = Path(path)
    if path.is_symlink() or not path.exists():
        return False
    if _marked(path):
        return True
    schema = _zarr_schema(path) if path.is_dir() else _hdf5_schema(path)
    return schema in (FEATURE_STORE_SCHEMA, MODEL_SCHEMA)


def why_not_replaced(path: str | os.PathLike) -> str:
    """One sentence: ``path`` exists and is not provably wideml's, so ``--overwrite`` will not replace it."""
    path = Path(path)
    if path.is_symlink():
        return (f"output {str(path)!r} is a symbolic link; wideml does not replace a link or what it points to: "
                "remove the link or choose another output.")
    return (f"output {str(path)!r} exists and wideml cannot prove it wrote it (it is no wideml store, model or marked "
            "output), so --overwrite will not replace it: remove or rename it yourself, or choose another output.")
