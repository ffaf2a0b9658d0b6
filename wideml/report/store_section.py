"""The report's store section: what ``wideml info`` says about a feature store, its size on disk, and its mask.

Reads only metadata and labels (no chunk of X): :func:`wideml.storage.open_store`
checks, with one listing, that every chunk of X is present, and the section
says so with the checksum verified on every read, as ``wideml info`` does.
"""

from __future__ import annotations

import os
from pathlib import Path

from wideml.report.figures import mask_figure
from wideml.storage import open_store


def human_bytes(n: float | None) -> str:
    """``1.5 MiB``-style size (``-`` for None)."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def size_on_disk(path: str) -> int | None:
    """Bytes of every file of the store (a folder's files, or the HDF5 file); None for a URL or what cannot be listed."""
    if "://" in path:
        return None
    try:
        if os.path.isfile(path):
            return os.stat(path).st_size
        total = 0
        for root, _, files in os.walk(path):
            for name in files:
                total += os.lstat(os.path.join(root, name)).st_size
        return total
    except OSError:
        return None


def integrity_line(info: dict) -> str:
    """The integrity line of ``wideml info``: chunks present (or read as fill), and the checksum verified on read."""
    present = ("missing chunks of X read as the fill value (the store says so: missing_chunks = 'fill')"
               if info.get("missing_chunks") == "fill" else "every chunk of X present (checked when the store was opened)")
    check = f"; {info['checksum']} checksums verified on every read" if info.get("checksum") else "; no checksums"
    return present + check


def store_section(location) -> dict:
    """The facts the report shows about a store.

    Parameters
    ----------
    location : str or path-like
        A feature store (zarr v3 folder, HDF5 file, or URL).

    Returns
    -------
    dict
        ``path``, ``rows`` (label, value) pairs, ``classes`` (label, count,
        percent), ``n_samples``, and ``mask`` (URI and caption) for an image store.
    """
    store = open_store(str(location) if isinstance(location, Path) else location)
    info = store.summary()
    disk = size_on_disk(info["path"])
    rows = [
        ("path", f"{info['path']} ({info['format']})"),
        ("shape", f"{info['n_samples']} samples \u00d7 {info['n_features']:,} features"),
        ("dtype", info["dtype"]),
        ("chunks", f"{info['stored_chunks'][0]} \u00d7 {info['stored_chunks'][1]} ({info['n_chunks']} chunks)"),
        ("size of X", human_bytes(info["size_bytes"]) + " uncompressed"),
        ("size on disk", human_bytes(disk) if disk is not None else "not measured (a store given by URL)"),
        ("codec", str(info.get("codec"))),
        ("integrity", integrity_line(info)),
    ]
    if info.get("feature_shape"):
        rows.append(("feature shape", " \u00d7 ".join(str(s) for s in info["feature_shape"])))
    if info.get("feature_table"):
        table = info["feature_table"]
        rows.append(("feature table", f"{table['kind']}: {', '.join(table['columns'])} for {table['n_features']:,} features"))
    if info.get("source"):
        rows.append(("source", str(info["source"])))
    counts = info.get("class_counts") or {}
    total = sum(counts.values()) or 1
    classes = [(label, count, 100.0 * count / total) for label, count in counts.items()]
    section = {"path": info["path"], "rows": rows, "classes": classes, "n_samples": info["n_samples"],
               "labels": store.y, "mask": None}
    if store.spatial is not None:
        sp = info["spatial"]
        grid = " \u00d7 ".join(str(g) for g in sp["grid"])
        voxels = sp["mask_voxels"] if sp.get("mask_voxels") is not None else sp["grid_voxels"]
        sizes = " \u00d7 ".join(f"{float(z):g}" for z in sp.get("voxel_size") or [])
        unit = f" {sp['unit']}" if sp.get("unit") else ""
        rows.append(("spatial reference", f"grid {grid}, voxel size {sizes or '-'}{unit}, {voxels:,} voxels in the mask"))
        uri, caption = mask_figure(store.spatial)
        section["mask"] = {"uri": uri, "caption": caption}
    return section
