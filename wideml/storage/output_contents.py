"""What an existing output folder holds that wideml did not write, so ``--overwrite`` never removes it.

Proof that a folder is wideml's (:mod:`wideml.storage.output_marks`: the
output mark, or a store's or model's metadata) vouches for the folder, not for
everything later put inside it: a user's notes added to a model folder, a copied
``zarr.json`` beside a user's scans. Before an output folder is replaced, every
entry in it is checked against what wideml writes for that kind of output
(:func:`foreign_entries`):

- a zarr group (a feature store or model; zarr v3, or v2 as older stores were):
  its metadata files (``zarr.json``; ``.zgroup``, ``.zattrs``, ``.zmetadata``),
  child groups and arrays that are themselves such nodes, and, in an array, its
  metadata and only chunk files whose keys (by the array's chunk key encoding)
  lie inside the chunk grid its metadata describes;
- a maps folder (``wideml maps``): its manifest ``maps.json`` and the files the
  manifest lists;
- any other folder: nothing (an empty folder only);
- a file output (an HDF5 store, a report, a table) is one file: nothing inside.

Symbolic links are never wideml's. Anything else is foreign, and the output is
not replaced (:func:`why_foreign`).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from wideml.runtime.owned_names import OWNER_FILE
from wideml.runtime.ownership import wideml_record

#: The manifest of a maps folder (the name :mod:`wideml.maps.files` writes; storage may not import maps).
MAPS_MANIFEST = "maps.json"
_V2_META = (".zgroup", ".zattrs", ".zmetadata")
_MAX_META = 1 << 24


def _read_json(path: Path) -> dict | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            doc = json.loads(fh.read(_MAX_META))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_file(entry: os.DirEntry) -> bool:
    return entry.is_file(follow_symlinks=False)


def _is_dir(entry: os.DirEntry) -> bool:
    return entry.is_dir(follow_symlinks=False)


def _all_below(folder: Path, rel: str) -> list[str]:
    """Every entry under ``folder`` (relative to the output, prefixed by ``rel``), depth first."""
    out = []
    for entry in _entries(folder):
        name = f"{rel}{entry.name}"
        out.append(name)
        if _is_dir(entry):
            out += _all_below(Path(entry.path), name + "/")
    return out


def _chunk_grid(meta: dict) -> tuple[int, ...] | None:
    """Chunks along each axis of a zarr array from its metadata (v3 ``zarr.json`` or v2 ``.zarray``), or None."""
    shape = meta.get("shape")
    if meta.get("zarr_format") == 3:
        grid = meta.get("chunk_grid") or {}
        chunks = (grid.get("configuration") or {}).get("chunk_shape") if grid.get("name") == "regular" else None
    else:
        chunks = meta.get("chunks")
    ok = isinstance(shape, list) and isinstance(chunks, list) and len(shape) == len(chunks)
    if not ok or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in shape + chunks):
        return None
    if any(c == 0 for c, s in zip(chunks, shape) if s):
        return None
    return tuple(math.ceil(s / c) if s else 0 for s, c in zip(shape, chunks))


def _key_rule(meta: dict) -> tuple[str, str] | None:
    """(prefix, separator) of an array's chunk keys: ``("c", "/")`` for ``c/0/1``, ``("", ".")`` for v2's ``0.1``."""
    if meta.get("zarr_format") == 3:
        enc = meta.get("chunk_key_encoding") or {"name": "default"}
        sep = (enc.get("configuration") or {}).get("separator", "/" if enc.get("name") == "default" else ".")
        if enc.get("name") == "default":
            return ("c", sep) if sep in ("/", ".") else None
        return ("", sep) if enc.get("name") == "v2" and sep in ("/", ".") else None
    sep = meta.get("dimension_separator") or "."
    return ("", sep) if sep in ("/", ".") else None


def _indices_fit(parts: list[str], grid: tuple[int, ...]) -> bool:
    for part, n in zip(parts, grid):
        if not (part.isascii() and part.isdigit() and str(int(part)) == part and int(part) < n):
            return False
    return True


def _chunk_parts(rel: str, prefix: str, sep: str) -> list[str] | None:
    """The index strings of a chunk key ``rel`` (relative to the array folder), or None if it is none."""
    if prefix:
        if rel == prefix:
            return []
        if not rel.startswith(prefix + sep):
            return None
        rel = rel[len(prefix) + 1:]
    return rel.split(sep) if rel else None


def _foreign_in_array(folder: Path, meta: dict, rel: str, v3: bool) -> list[str]:
    grid, rule = _chunk_grid(meta), _key_rule(meta)
    names = _all_below(folder, "")
    if grid is None or rule is None:  # a chunk grid wideml does not write: nothing in it can be checked
        meta_names = {"zarr.json"} if v3 else {".zarray", ".zattrs"}
        return [rel + n for n in names if n not in meta_names]
    prefix, sep = rule
    foreign = []
    for name in names:
        path = folder / name
        if path.is_symlink():
            foreign.append(rel + name)
            continue
        if (v3 and name == "zarr.json") or (not v3 and name in (".zarray", ".zattrs")):
            continue
        is_dir = path.is_dir()
        if sep == "." and "/" in name:
            parts = None  # no folders in a flat chunk layout
        else:
            parts = _chunk_parts(name, prefix, sep)
        if is_dir:
            ok = sep == "/" and (name == prefix or (parts is not None and len(parts) < len(grid) and _indices_fit(parts, grid)))
        else:
            if not grid and not prefix:  # a 0-d array of the v2 layout has the one chunk "0"
                ok = name == "0"
            else:
                ok = parts is not None and len(parts) == len(grid) and _indices_fit(parts, grid)
        if not ok:
            foreign.append(rel + name)
    return foreign


def _foreign_in_zarr(folder: Path, rel: str = "") -> list[str]:
    """Entries of the zarr node ``folder`` that are no zarr metadata, child node or chunk inside its grid."""
    meta = _read_json(folder / "zarr.json")
    if meta is not None and meta.get("zarr_format") == 3:
        if meta.get("node_type") == "array":
            return _foreign_in_array(folder, meta, rel, v3=True)
        if meta.get("node_type") != "group":
            return [rel + n for n in _all_below(folder, "") if n != "zarr.json"]
        allowed_meta = {"zarr.json"}
    else:
        array = _read_json(folder / ".zarray")
        if array is not None:
            return _foreign_in_array(folder, array, rel, v3=False)
        if not os.path.isfile(folder / ".zgroup"):
            return [rel + n for n in _all_below(folder, "")]
        allowed_meta = set(_V2_META)
    foreign = []
    for entry in _entries(folder):
        name = rel + entry.name
        if _is_file(entry) and entry.name in allowed_meta:
            continue
        if _is_dir(entry) and _is_zarr_node(Path(entry.path)):
            foreign += _foreign_in_zarr(Path(entry.path), name + "/")
        else:
            foreign += [name] + (_all_below(Path(entry.path), name + "/") if _is_dir(entry) else [])
    return foreign


def _is_zarr_node(folder: Path) -> bool:
    return any(os.path.isfile(folder / n) and not os.path.islink(folder / n) for n in ("zarr.json", ".zarray", ".zgroup"))


def _foreign_in_maps(folder: Path) -> list[str]:
    """Entries of a maps folder that its manifest ``maps.json`` does not list."""
    doc = _read_json(folder / MAPS_MANIFEST) or {}
    listed = {MAPS_MANIFEST}
    maps = doc.get("maps")
    for entry in maps if isinstance(maps, list) else []:
        files = entry.get("files") if isinstance(entry, dict) else None
        for name in files if isinstance(files, list) else []:
            if isinstance(name, str) and name and not name.startswith("/") and ".." not in name.split("/"):
                listed.add(name)
    parents = {"/".join(n.split("/")[:i]) for n in listed for i in range(1, n.count("/") + 1)}
    foreign = []
    for name in _all_below(folder, ""):
        path = folder / name
        if path.is_symlink():
            foreign.append(name)
        elif path.is_dir():
            if name not in parents:
                foreign.append(name)
        elif name not in listed:
            foreign.append(name)
    return foreign


def foreign_entries(path: str | os.PathLike) -> list[str]:
    """The entries inside the existing output ``path`` that wideml did not write there, relative to ``path``.

    Parameters
    ----------
    path : path-like
        An existing output: a folder (zarr store or model, maps folder) or a file.

    Returns
    -------
    list of str
        Relative names (``"mynotes.txt"``, ``"raw"``, ``"raw/scan001.nii"``),
        in listing order; empty when everything is wideml's (always for a file).
        Reads only metadata and one listing of the folder tree; no chunk is opened.
    """
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        return []
    owner_ok = wideml_record(path) is not None
    if _is_zarr_node(path):
        found = _foreign_in_zarr(path)
    elif os.path.isfile(path / MAPS_MANIFEST) and not os.path.islink(path / MAPS_MANIFEST):
        found = _foreign_in_maps(path)
    else:
        found = _all_below(path, "")
    return [name for name in found if not (owner_ok and name == OWNER_FILE)]


def why_foreign(path: str | os.PathLike, foreign: list[str]) -> str:
    """One sentence: ``path`` holds ``foreign`` entries wideml did not write, so ``--overwrite`` will not replace it."""
    first = foreign[0]
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    return (f"output {str(path)!r} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} wideml did not write "
            f"({first!r}{more}), so --overwrite will not replace it: move {'it' if len(foreign) == 1 else 'them'} out "
            "of the folder, or choose another output.")
