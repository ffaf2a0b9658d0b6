"""The report's maps section, from a folder ``wideml maps`` wrote (its ``maps.json`` manifest and files).

Per map: its meaning and peak, the PNG panels of the folder embedded as they
are (ortho slices through the peak for image maps, values against the feature
index otherwise, and a genome's Manhattan plot, ``<name>_manhattan.png``), and
the first rows of its top-features table (``<name>_top.tsv``). Only plain file
names the manifest lists, inside the folder, are read: a manifest naming
``../x`` or an absolute path is refused. Only the first :data:`MAX_MAPS` maps
are shown (a model with hundreds of directions would give a report of tens of
megabytes); the page says how many are left out.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from wideml.exceptions import WidemlError
from wideml.report.figures import MAX_EMBEDDED_BYTES, png_uri

#: The manifest ``wideml maps`` writes (:data:`wideml.maps.files.MANIFEST`; a file-format name, repeated here
#: because the report sits beside the maps package, not above it).
MANIFEST = "maps.json"
#: Rows of each top-features table shown.
TOP_ROWS = 15
#: Maps shown (the first ones of the manifest: the leading directions); the rest are counted, not embedded.
MAX_MAPS = 12


def _member(folder: Path, name) -> Path:
    """``folder/name`` for a plain file name the manifest lists; one sentence for anything else."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise WidemlError(f"the maps manifest in {str(folder)!r} names {name!r}, which is not a file of that folder; "
                          "give a folder written by `wideml maps`.")
    return folder / name


def _png(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise WidemlError(f"{str(path)!r}, listed in the maps manifest, is not a file; rewrite the maps with `wideml maps`.")
    if path.stat().st_size > MAX_EMBEDDED_BYTES:
        raise WidemlError(f"{str(path)!r} is larger than {MAX_EMBEDDED_BYTES >> 20} MiB, too large to embed in the report; "
                          "rewrite the maps with `wideml maps`.")
    return png_uri(path.read_bytes())


def _top_table(path: Path) -> dict | None:
    if not path.is_file() or path.is_symlink():
        return None
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))[: TOP_ROWS + 1]
    return {"header": rows[0], "rows": rows[1:]} if rows else None


def _peak(entry: dict) -> str:
    parts = [f"largest |value| {float(entry['max_abs']):.4g}"] if isinstance(entry.get("max_abs"), (int, float)) else []
    if entry.get("peak_feature_id") is not None:
        parts.append(f"at feature {entry['peak_feature_id']}")
    elif entry.get("peak_feature") is not None:
        parts.append(f"at feature index {entry['peak_feature']}")
    if isinstance(entry.get("peak_world"), list):
        parts.append("world (" + ", ".join(f"{float(v):.1f}" for v in entry["peak_world"]) + ") mm")
    if entry.get("intercept") is not None:
        parts.append(f"intercept b = {entry['intercept']}")
    return "; ".join(parts)


def maps_section(folder) -> dict:
    """The maps of a folder written by ``wideml maps``, ready for the template.

    Parameters
    ----------
    folder : str or path-like

    Returns
    -------
    dict
        ``path``, ``model``, ``sign_convention``, ``notes`` and ``maps`` (each:
        ``name``, ``meaning``, ``peak``, ``images`` (URI, caption), ``top``; the first
        :data:`MAX_MAPS`), ``left_out`` (maps not shown) and ``model_path`` (the model drawn from).
    """
    folder = Path(os.path.abspath(os.fspath(folder)))
    try:
        doc = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WidemlError(f"{str(folder)!r} holds no {MANIFEST}; give a folder written by `wideml maps`.") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise WidemlError(f"cannot read {str(folder / MANIFEST)!r} ({type(exc).__name__}); give a folder written by `wideml maps`.") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("maps"), list):
        raise WidemlError(f"{str(folder / MANIFEST)!r} lists no maps; give a folder written by `wideml maps`.")
    maps = []
    for entry in doc["maps"][:MAX_MAPS]:
        if not isinstance(entry, dict) or not isinstance(entry.get("files", []), list):
            raise WidemlError(f"{str(folder / MANIFEST)!r} has a malformed map entry; rewrite the maps with `wideml maps`.")
        name = str(entry.get("name", "?"))
        images, top = [], None
        for file in entry.get("files", []):
            path = _member(folder, file)
            if file.endswith(".png"):
                kind = "Manhattan plot" if file.endswith("_manhattan.png") else "panel"
                images.append({"uri": _png(path), "caption": f"{file} ({kind})"})
            elif file.endswith("_top.tsv"):
                top = _top_table(path)
        maps.append({"name": name, "meaning": str(entry.get("meaning", "")), "peak": _peak(entry), "images": images,
                     "top": top, "files": [str(f) for f in entry.get("files", [])]})
    notes = [str(n) for n in doc.get("notes", []) if isinstance(doc.get("notes"), list)]
    model_path = doc.get("model_path") if isinstance(doc.get("model_path"), str) else None
    return {"path": str(folder), "model": str(doc.get("model", "")), "sign_convention": str(doc.get("sign_convention", "")),
            "notes": notes, "maps": maps, "left_out": max(0, len(doc["maps"]) - MAX_MAPS), "model_path": model_path}
