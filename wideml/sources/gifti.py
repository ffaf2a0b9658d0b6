"""GIFTI surface data (``.func.gii``, ``.shape.gii``) as an ingest source: vertices as features.

A folder of GIFTI files (or one file) is read with nibabel (``nibabel.gifti``).
Decisions, each checked before any sample is written:

* **Samples.** Every data array of a file is one sample (a ``.func.gii``
  series of T arrays gives T samples, a ``.shape.gii`` usually one), its
  values in vertex order: ``X[s] == img.darrays[t].data``. Ids are ``<stem>``
  for a file of one array, else ``<stem>:<t>``. Arrays must be 1-D (or
  ``(n_vertices, 1)``) and of one length; mesh (pointset, triangle) and label
  arrays are refused. ``.surf.gii`` and ``.label.gii`` files in the folder
  are ignored.
* **Hemispheres.** A file's name gives its hemisphere by the BIDS entity
  ``hemi-L`` / ``hemi-R``, FreeSurfer's ``lh`` / ``rh`` or HCP's ``L`` / ``R``
  as a part of the name between dots or underscores
  (``sub-01.lh.thickness.func.gii``, ``lh.sub-01_thick.func.gii``,
  ``100307.L.thickness.32k_fs_LR.func.gii``; :func:`hemi_of`). Files are
  paired by the rest of their name (``sub-01_hemi-L_thick.shape.gii`` with
  ``sub-01_hemi-R_thick.shape.gii``, sample stem ``sub-01_thick``;
  ``sub-01.lh.thickness`` with ``sub-01.rh.thickness``, stem
  ``sub-01.thickness``): each pair is read as **left vertices then right
  vertices**, and both files of a pair must hold the same number of arrays.
  A folder of only left (or only right) files is one hemisphere. Refused as
  ambiguous, never read as one sample per hemisphere: a file without its
  other hemisphere when both occur, two files of one hemisphere of a stem,
  files with and without a hemisphere in their names in one folder, a name
  naming both hemispheres, ``hemi-`` values other than ``L``/``R``, untagged
  files whose ``AnatomicalStructurePrimary`` metadata name different
  hemispheres (name them ``hemi-L``/``hemi-R`` to pair them), and a file whose
  metadata contradict its name.
* **Space.** Every file of one hemisphere has the same vertex count; the
  store's :class:`~wideml.storage.feature_table.FeatureTable` has kind
  ``"gifti"``, columns ``vertex`` (index on its hemisphere's surface) and
  ``hemisphere`` (``"L"``, ``"R"``, or ``""`` when unknown), and info
  ``hemispheres``: per hemisphere, in feature order, ``hemisphere``,
  ``structure`` and ``n_vertices``. Feature ids are ``L:12`` (``v:12`` when
  the hemisphere is unknown). ``wideml maps`` writes maps back as
  ``.func.gii`` per hemisphere (:mod:`wideml.maps.surface`).

Labels as for NIfTI folders (:mod:`wideml.sources.surface_files`); a
two-column labels file names a pair by its stem or either file. GIFTI files
have no lazy reading (the XML is parsed whole), so each file is read once for
its header and once for the rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import ROWS, IngestOptions, Source
from wideml.sources.locations import Location
from wideml.sources.surface_files import (
    CIFTI_SUFFIXES,
    GIFTI_SUFFIXES,
    OTHER_SAMPLE_SUFFIXES,
    SurfacePlan,
    Unit,
    check_label_options,
    list_data_files,
    one_line,
    order_units,
    plan_labels,
    quiet_nibabel,
    read_label_spec,
    strip_suffix,
)
from wideml.storage.casts import checked_cast
from wideml.storage.feature_table import FeatureTable
from wideml.storage.label_cells import listed
from wideml.storage.spatial import require_nibabel

#: Hemisphere parts of a file name, by convention: BIDS ``hemi-X``, FreeSurfer ``lh``/``rh``, HCP ``L``/``R``.
_HEMI_PARTS = (re.compile(r"(^|_)hemi-([^_.]*)(?=[_.])"),
               re.compile(r"(^|[._])([lr]h)(?=[._])", re.IGNORECASE),
               re.compile(r"(^|[._])([LR])(?=[._])"))
_NAMED = {"L": "left", "R": "right"}
#: How messages name the conventions.
NAMINGS = "hemi-L/hemi-R (or lh./rh., .L./.R.)"
#: GIFTI's AnatomicalStructurePrimary values of the cortical hemispheres.
STRUCTURES = {"L": "CortexLeft", "R": "CortexRight"}
_REFUSED_INTENTS = {"NIFTI_INTENT_POINTSET": "a mesh's vertex coordinates", "NIFTI_INTENT_TRIANGLE": "a mesh's triangles",
                    "NIFTI_INTENT_LABEL": "labels"}


def _hemi_parts(name: str) -> list[tuple[re.Match, str]]:
    """Every hemisphere part of ``name`` (any convention) with the hemisphere it gives (a BIDS value as written)."""
    bids, freesurfer, hcp = _HEMI_PARTS
    return ([(m, m.group(2)) for m in bids.finditer(name)] + [(m, m.group(2)[0].upper()) for m in freesurfer.finditer(name)]
            + [(m, m.group(2)) for m in hcp.finditer(name)])


def hemi_of(name: str) -> str | None:
    """The hemisphere a file name gives (``"L"``, ``"R"``, or a ``hemi-`` value other than L/R as written), None without.

    Raises
    ------
    WidemlError
        For a name that gives both hemispheres (``sub-01.lh.thick.R.func.gii``).
    """
    values = {side for _, side in _hemi_parts(name)}
    odd = sorted(v for v in values if v not in ("L", "R"))
    if odd:
        return odd[0]
    if len(values) > 1:
        raise WidemlError(f"GIFTI file {name!r} names both hemispheres; rename it so its name gives one, as {NAMINGS}.")
    return values.pop() if values else None


def pair_stem(path: Path) -> str:
    """Sample stem of a GIFTI file: the name without its hemisphere parts (any convention) and its data suffix."""
    name = path.name
    for m, _ in sorted(_hemi_parts(name), key=lambda part: part[0].start(), reverse=True):
        name = name[: m.start()] + name[m.end():]
    return strip_suffix(name, GIFTI_SUFFIXES).strip("_.")


def _hemi_of_structure(structure: str | None) -> str | None:
    low = (structure or "").lower()
    return "L" if "left" in low else "R" if "right" in low else None


@dataclass(frozen=True)
class GiftiHeader:
    """What a scan of one GIFTI file found: arrays, vertices per array, dtype, AnatomicalStructurePrimary."""

    n_arrays: int
    n_vertices: int
    dtype: np.dtype
    structure: str | None


def _load(nib, path: str):
    try:
        with quiet_nibabel():
            img = nib.load(path)
    except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
        raise WidemlError(f"cannot read GIFTI file {path!r} ({type(exc).__name__}: {one_line(exc)}); check the file.") from None
    if not isinstance(img, nib.gifti.GiftiImage):
        raise WidemlError(f"{path!r} is named like a GIFTI file but is a {type(img).__name__}; rename or recreate it.")
    return img


def scan_gifti(nib, path: Path) -> GiftiHeader:
    """Read one GIFTI file and check its data arrays (one length, 1-D, real numbers, no mesh or labels)."""
    img = _load(nib, str(path))
    lengths, dtypes = set(), []
    for t, arr in enumerate(img.darrays):
        intent = nib.nifti1.intent_codes.niistring[arr.intent]
        if intent in _REFUSED_INTENTS:
            raise WidemlError(f"GIFTI file {str(path)!r} holds {_REFUSED_INTENTS[intent]} ({intent}) in data array {t}, not "
                              "per-vertex values; ingest .func.gii/.shape.gii files of per-vertex data only.")
        data = np.asarray(arr.data)
        if data.ndim == 2 and data.shape[1] == 1:
            data = data[:, 0]
        if data.ndim != 1:
            raise WidemlError(f"GIFTI file {str(path)!r} has a data array of shape {data.shape}; wideml reads one 1-D array "
                              "per sample — save one data array per map or time point.")
        if data.dtype.kind not in "biuf":
            raise WidemlError(f"GIFTI file {str(path)!r} holds {data.dtype} values, which are not real numbers; convert them to floats.")
        lengths.add(int(data.shape[0]))
        dtypes.append(data.dtype)
    if len(lengths) > 1:
        raise WidemlError(f"GIFTI file {str(path)!r} has data arrays of {len(lengths)} lengths ({sorted(lengths)}); "
                          "every array of a file must hold one value per vertex of one surface.")
    structure = img.meta.get("AnatomicalStructurePrimary") if img.meta is not None else None
    return GiftiHeader(len(img.darrays), lengths.pop() if lengths else 0,
                       np.result_type(*dtypes) if dtypes else np.dtype(np.float32), structure)


def gifti_units(files: list[Path], where: Path) -> list[Unit]:
    """Units of the GIFTI files: single files, or left/right pairs by their names' hemispheres (left first).

    Raises
    ------
    WidemlError
        For ``hemi-`` values other than L/R, a name giving both hemispheres,
        files with and without a hemisphere mixed, two files of one hemisphere
        of a stem, or a file without its other hemisphere.
    """
    hemis = {f: hemi_of(f.name) for f in files}
    odd = [f.name for f, h in hemis.items() if h is not None and h not in ("L", "R")]
    if odd:
        raise WidemlError(f"GIFTI file {odd[0]!r} names its hemisphere {hemi_of(odd[0])!r}; name hemispheres hemi-L or hemi-R "
                          "(BIDS) so they can be paired.")
    tagged = [f for f, h in hemis.items() if h is not None]
    if tagged and len(tagged) != len(files):
        untagged = [f.name for f, h in hemis.items() if h is None]
        raise WidemlError(f"the GIFTI files of {str(where)!r} mix names with and without a hemisphere ({listed(untagged, 3)} "
                          f"without); name every file's hemisphere ({NAMINGS}), or keep one hemisphere's files in the folder.")
    pairs: dict[str, dict[str, Path]] = {}
    for f in tagged:
        pair = pairs.setdefault(pair_stem(f), {})
        if hemis[f] in pair:
            raise WidemlError(f"GIFTI files {pair[hemis[f]].name!r} and {f.name!r} are both the {_NAMED[hemis[f]]} hemisphere of "
                              f"sample {pair_stem(f)!r}; keep one of them in the folder (or rename it).")
        pair[hemis[f]] = f
    if len({hemis[f] for f in tagged}) < 2:
        return [Unit(pair_stem(f), (f,)) for f in files]
    units = []
    for stem, pair in pairs.items():
        if set(pair) != {"L", "R"}:
            (h, f), = pair.items()
            other = "R" if h == "L" else "L"
            raise WidemlError(f"GIFTI file {f.name!r} has no {_NAMED[other]}-hemisphere file beside it (hemi-{other}; both "
                              "hemispheres occur in the folder, so files are read as left-right pairs); add its other "
                              "hemisphere or move it out.")
        units.append(Unit(stem, (pair["L"], pair["R"])))
    return units


class GiftiSource(Source):
    """GIFTI surface data: one sample per data array; a ``hemi-L``/``hemi-R`` pair read as left then right vertices.

    Passes over the files: one full read each for the headers; one for the rows.
    """

    kind = "gifti"
    access = ROWS
    accepts = frozenset({"label_column", "id_column"})

    def __init__(self, where: Path, plan: SurfacePlan, table: FeatureTable, dtype, y: np.ndarray | None):
        self.plan, self.feature_table = plan, table
        self.shape, self.dtype, self.labels, self.sample_ids = (plan.n_samples, table.n_features), np.dtype(dtype), y, plan.ids
        hemi, vertex = table.columns["hemisphere"], table.columns["vertex"]
        self.feature_ids = np.char.add(np.char.add(np.where(hemi == "", "v", hemi), ":"), vertex.astype(str))
        self.description, self.what, self.title = f"gifti:{where}", f"the GIFTI files of {str(where)!r}", f"ingest {where.name}"

    @classmethod
    def check_options(cls, options: IngestOptions) -> None:
        check_label_options("GIFTI", options)

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> GiftiSource:
        """Labels first, then every file (headers and arrays checked); hemispheres paired."""
        nib = require_nibabel()
        where = location.path
        spec = read_label_spec(options)
        files = list_data_files(where, GIFTI_SUFFIXES, "GIFTI data files (.func.gii, .shape.gii)", CIFTI_SUFFIXES + OTHER_SAMPLE_SUFFIXES)
        units, picks = order_units(gifti_units(files, where), spec, pair_stem)
        sides: list[dict] = []  # per position in a unit: hemisphere, structure, n_vertices, first file
        counts, dtypes = [], []
        for unit in units:
            heads = [scan_gifti(nib, f) for f in unit.paths]
            if len({h.n_arrays for h in heads}) > 1:
                raise WidemlError(f"GIFTI files {unit.paths[0].name!r} and {unit.paths[1].name!r} hold {heads[0].n_arrays} and "
                                  f"{heads[1].n_arrays} data arrays; both hemispheres of a sample need the same number.")
            for pos, (f, head) in enumerate(zip(unit.paths, heads)):
                side = _side(f, head, len(unit.paths) == 2)
                if pos == len(sides):
                    sides.append(side)
                elif side["hemisphere"] != sides[pos]["hemisphere"]:
                    raise WidemlError(f"GIFTI file {f.name!r} is on hemisphere {side['hemisphere'] or '?'} (its metadata say "
                                      f"{head.structure!r}) but {sides[pos]['file']!r} on {sides[pos]['hemisphere'] or '?'}; name the "
                                      "files hemi-L/hemi-R to ingest both hemispheres as pairs, or keep one hemisphere.")
                elif head.n_vertices != sides[pos]["n_vertices"]:
                    raise _vertex_mismatch(f, head, sides[pos])
                dtypes.append(head.dtype)
            counts.append(heads[0].n_arrays)
        plan = SurfacePlan.from_counts(units, counts, "the GIFTI files")
        plan, y = plan_labels(plan, spec, options, "the GIFTI files", picks)
        return cls(where, plan, gifti_table(sides), np.result_type(*dtypes), y)

    def row_reader(self, dtype, allow_lossy_cast: bool = False) -> Callable[[int, int], np.ndarray]:
        samples = [(tuple(str(p) for p in self.plan.units[u].paths), t) for u, t in self.plan.samples]
        return GiftiRows(samples, self.shape[1], dtype, allow_lossy_cast)


def _vertex_mismatch(path: Path, head: GiftiHeader, side: dict) -> WidemlError:
    """The refusal for a file whose vertex count differs from its hemisphere's first file."""
    said = f"GIFTI file {path.name!r} has {head.n_vertices} vertices but {side['file']!r} has {side['n_vertices']}"
    if side["hemisphere"]:
        return WidemlError(f"{said}; every file of the {_NAMED[side['hemisphere']]} hemisphere must be on one surface — "
                           "resample it.")
    return WidemlError(f"{said}, and their names give no hemisphere; if they are a subject's two hemispheres, name them "
                       f"{NAMINGS} so they are read as one sample, else resample every file to one surface.")


def _side(path: Path, head: GiftiHeader, paired: bool) -> dict:
    """Hemisphere, structure and vertex count of one file (its ``hemi-`` entity checked against its metadata)."""
    tag, meta = hemi_of(path.name), _hemi_of_structure(head.structure)
    if tag is not None and meta is not None and tag != meta:
        raise WidemlError(f"GIFTI file {path.name!r} is named as the {_NAMED[tag]} hemisphere but its metadata say "
                          f"{head.structure!r}; fix the name or the file's AnatomicalStructurePrimary.")
    hemisphere = tag or meta
    structure = head.structure or (STRUCTURES[hemisphere] if hemisphere else None)
    return {"hemisphere": hemisphere, "structure": structure, "n_vertices": head.n_vertices, "file": path.name}


def gifti_table(sides: list[dict]) -> FeatureTable:
    """The :class:`FeatureTable` (kind ``"gifti"``) of one hemisphere, or of a left-right pair in that order."""
    vertex = np.concatenate([np.arange(s["n_vertices"], dtype=np.int64) for s in sides])
    hemi = np.concatenate([np.full(s["n_vertices"], s["hemisphere"] or "", dtype="U1") for s in sides])
    info = {"hemispheres": [{k: s[k] for k in ("hemisphere", "structure", "n_vertices")} for s in sides]}
    return FeatureTable("gifti", {"vertex": vertex, "hemisphere": hemi.astype(str)}, info)


class GiftiRows:
    """Read blocks of samples from GIFTI files: data array ``t`` of each file of a unit, side by side.

    Parameters
    ----------
    samples : list of (tuple of str, int)
        ``(paths, t)`` per row: one file, or a left and a right file.
    p : int
        Vertices per row (checked on read).
    dtype : dtype
    allow_lossy_cast : bool, default False

    Notes
    -----
    A GIFTI file is parsed whole; consecutive rows of one unit reuse the parse.
    Memory per call: the block plus one unit's files.
    """

    def __init__(self, samples, p: int, dtype="float32", allow_lossy_cast: bool = False):
        self.samples = [(tuple(str(x) for x in paths), int(t)) for paths, t in samples]
        self.p, self.dtype, self.allow_lossy_cast = int(p), np.dtype(dtype), bool(allow_lossy_cast)

    def __call__(self, r0: int, r1: int) -> np.ndarray:
        """Rows ``r0:r1`` of X, shape ``(r1 - r0, p)``."""
        nib = require_nibabel()
        out = np.empty((r1 - r0, self.p), dtype=self.dtype)
        cached, images = None, []
        for i in range(r0, r1):
            paths, t = self.samples[i]
            if paths != cached:
                cached, images = paths, [_load(nib, p) for p in paths]
            parts = []
            for path, img in zip(paths, images):
                if t >= len(img.darrays):
                    raise WidemlError(f"GIFTI file {path!r} has {len(img.darrays)} data arrays, no longer {t + 1}; it changed during ingest.")
                parts.append(np.asarray(img.darrays[t].data).reshape(-1))
            row = np.concatenate(parts) if len(parts) > 1 else parts[0]
            if row.shape[0] != self.p:
                raise WidemlError(f"GIFTI file {paths[0]!r} gives {row.shape[0]} values but the first sample has {self.p}; "
                                  "every sample needs one value per vertex of one surface.")
            out[i - r0] = checked_cast(row[None, :], self.dtype, source=repr(paths[0]), allow_lossy=self.allow_lossy_cast, row0=i)[0]
        return out
