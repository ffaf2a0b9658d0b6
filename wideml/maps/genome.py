"""Maps of genotype models: a Manhattan-style panel of |weight| along the genome (feature tables of kind "genome").

A store ingested from PLINK or VCF Zarr keeps, per variant, ``chrom``,
``pos``, ``allele_1`` and ``allele_2`` (a
:class:`~wideml.storage.feature_table.FeatureTable` of kind ``"genome"``).
For such a model :func:`wideml.maps.write_maps` adds those columns to every
``<name>_top.tsv`` (:data:`wideml.maps.files.TOP_COLUMNS`) and calls
:func:`write_genome` (registered in :mod:`wideml.maps.spaces`), which draws
``<name>_manhattan.png``:

- chromosomes in natural order (:func:`chromosome_order`: 1..22, X, Y, XY,
  MT, then any others by name; a ``chr`` prefix is ignored, PLINK's codes
  23..26 are X, Y, XY, MT), alternating colours;
- x = cumulative position (each chromosome starts after the largest
  position of the previous ones); y = |weight|;
- bounded drawing: per chromosome every point at or above its
  ``1 - MANHATTAN_KEEP / n`` quantile of |weight| is kept, plus an evenly
  spaced :data:`MANHATTAN_BACKGROUND` of the others; the top
  :data:`MANHATTAN_TOP` variants of the whole map are always drawn, ringed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from wideml.maps.files import top_features
from wideml.storage.feature_table import FeatureTable

#: Points per chromosome kept whole (its largest |weight|s; ties at the cut are kept too).
MANHATTAN_KEEP = 5000
#: Points per chromosome drawn evenly spaced from the rest.
MANHATTAN_BACKGROUND = 2000
#: Variants of the whole map always drawn and ringed.
MANHATTAN_TOP = 10
_SEX = {"X": 0, "Y": 1, "XY": 2, "MT": 3, "M": 3}
_PLINK = {23: "X", 24: "Y", 25: "XY", 26: "MT"}


def chromosome_key(name) -> tuple:
    """Sort key of a chromosome name: autosomes by number, then X, Y, XY, MT, then others by name."""
    text = re.sub(r"^chr", "", str(name).strip(), flags=re.IGNORECASE)
    if text.isdigit():
        number = int(text)
        if number in _PLINK:
            return (1, _SEX[_PLINK[number]], "")
        return (0, number, "")
    if text.upper() in _SEX:
        return (1, _SEX[text.upper()], "")
    return (2, 0, text)


def chromosome_order(names) -> list[str]:
    """The distinct chromosome names, in natural order (:func:`chromosome_key`)."""
    return sorted({str(n) for n in names}, key=lambda n: (chromosome_key(n), n))


def manhattan_points(chrom: np.ndarray, pos: np.ndarray, values: np.ndarray) -> dict:
    """The points a Manhattan panel draws, chosen per chromosome in bounded number.

    Parameters
    ----------
    chrom : ndarray of shape (p,)
    pos : ndarray of int, shape (p,)
    values : ndarray of float, shape (p,)

    Returns
    -------
    dict
        ``index`` (variants drawn, int array), ``x`` (cumulative positions),
        ``y`` (|weight|), ``colour`` (0/1 alternating by chromosome),
        ``ticks`` and ``labels`` (chromosome centres and names), ``top``
        (the :data:`MANHATTAN_TOP` variants of the map, best first).
        At most (MANHATTAN_KEEP + MANHATTAN_BACKGROUND) points per chromosome
        plus ties at the cut.
    """
    chrom = np.asarray(chrom).astype(str)
    pos = np.asarray(pos, dtype=np.int64)
    mag = np.abs(np.asarray(values, dtype=np.float64))
    names, codes = np.unique(chrom, return_inverse=True)
    rank = {name: i for i, name in enumerate(chromosome_order(names))}
    ranks = np.array([rank[n] for n in names], dtype=np.int64)[codes.reshape(-1)]
    order = np.argsort(ranks, kind="stable")  # variants grouped by chromosome, in natural order
    groups = np.split(order, np.flatnonzero(np.diff(ranks[order])) + 1) if order.size else []
    index, xs, colours, ticks, labels = [], [], [], [], []
    offset = 0
    for c, full in enumerate(groups):
        group = full
        if full.size > MANHATTAN_KEEP + MANHATTAN_BACKGROUND:
            cut = np.partition(mag[full], full.size - MANHATTAN_KEEP)[full.size - MANHATTAN_KEEP]
            high = mag[full] >= cut
            rest = full[~high]
            group = np.sort(np.concatenate([full[high], rest[:: max(1, math.ceil(rest.size / MANHATTAN_BACKGROUND))]]))
        low, high_pos = min(0, int(pos[full].min())), int(pos[full].max())  # x = offset + pos, as qqman draws it
        index.append(group)
        xs.append(offset + (pos[group] - low).astype(np.float64))
        colours.append(np.full(group.size, c % 2))
        ticks.append(offset + (high_pos - low) / 2.0)
        labels.append(str(chrom[full[0]]))
        offset += high_pos - low + 1
    cat = (lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype=dtype))
    picked = cat(index, np.int64)
    return {"index": picked, "x": cat(xs, np.float64), "y": mag[picked], "colour": cat(colours, np.int64),
            "ticks": np.asarray(ticks, dtype=np.float64), "labels": labels, "top": top_features(values, MANHATTAN_TOP)}


def write_genome(folder: Path, name: str, values: np.ndarray, table: FeatureTable, plotter: str | None) -> list[str]:
    """The genome files of one map: ``<name>_manhattan.png`` (none when ``plotter`` is None).

    The top-variant table with chromosome, position and alleles is written
    with the other top tables (:data:`wideml.maps.files.TOP_COLUMNS`).

    Parameters
    ----------
    folder : Path
    name : str
    values : ndarray of shape (n_features,)
    table : FeatureTable
        Kind "genome", with columns ``chrom`` and ``pos``.
    plotter : str or None

    Returns
    -------
    list of str
    """
    if plotter is None:
        return []
    fname = f"{name}_manhattan.png"
    draw_manhattan(folder / fname, values, table, name)
    return [fname]


def draw_manhattan(path: Path, values: np.ndarray, table: FeatureTable, title: str) -> None:
    """Draw the Manhattan panel of one map (matplotlib; bounded points, see :func:`manhattan_points`)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    pts = manhattan_points(table.columns["chrom"], table.columns["pos"], values)
    x_of = dict(zip(pts["index"].tolist(), pts["x"].tolist()))
    fig = Figure(figsize=(12, 3.6), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    palette = np.array(["#2b5d8a", "#9bb7d4"])
    ax.scatter(pts["x"], pts["y"], s=3, c=palette[pts["colour"]], linewidths=0, rasterized=True)
    top = [j for j in pts["top"].tolist() if j in x_of]
    if top:
        ax.scatter([x_of[j] for j in top], np.abs(np.asarray(values, dtype=np.float64)[top]), s=28, facecolors="none",
                   edgecolors="#c0392b", linewidths=1.0, zorder=3)
    ax.set_xticks(pts["ticks"])
    ax.set_xticklabels(pts["labels"], fontsize=7)
    ax.set_xlim(-1, (pts["x"].max() + 1) if pts["x"].size else 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("chromosome (cumulative position)")
    ax.set_ylabel("|weight|")
    ax.set_title(f"{title}: |weight| along the genome (top {len(top)} ringed)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
