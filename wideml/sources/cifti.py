"""CIFTI-2 dense files (``.dscalar.nii``, ``.dtseries.nii``) as an ingest source: grayordinates as features.

A folder of CIFTI-2 files (or one file) is read with nibabel's CIFTI-2 API
(``nibabel.cifti2``): every file's row axis is a ``ScalarAxis`` (each map one
sample) or a ``SeriesAxis`` (each time point one sample), and its column axis
a ``BrainModelAxis`` (surface vertices and voxels, the grayordinates). X holds
``dataobj[t]`` per sample, columns in the file's brain-model axis order, so
``X[s] == img.get_fdata()[t]``.

Rules, checked from the headers before any value is read:

* every file shares the first file's brain-model axis (structures, their
  vertices and voxels in order, vertex counts, volume shape and affine, as
  ``BrainModelAxis.__eq__`` compares them); the first file that differs is
  named in one sentence. Only the first file's axis is parsed by nibabel;
  the others are identified by the bytes of their axis's XML and parsed only
  when those differ (:mod:`wideml.sources.cifti_header`: about 2 s saved per
  file at fsLR 32k size);
* connectivity (``dconn``, ``pconn``), parcellated (``pscalar``,
  ``ptseries``, any ``ParcelsAxis``) and label (``dlabel``) files are refused:
  their rows are not samples of grayordinates;
* gzipped files (``.dscalar.nii.gz``, or gzip bytes under a ``.nii`` name) are
  refused with "decompress it": nibabel's CIFTI-2 reader (like Connectome
  Workbench) opens only uncompressed ``.nii`` files, and read as a plain NIfTI
  the file would look like a 6-D volume;
* sample ids are ``<stem>`` for a file of one map and ``<stem>:<t>`` (``t``
  from 0) otherwise, ``<stem>`` the name without ``.dscalar.nii``/``.dtseries.nii``;
* labels as for NIfTI folders (:mod:`wideml.sources.surface_files`): one per
  sample, per file or per sample id (a two-column file naming the files, or
  samples as ``<stem>:<t>``), or a participants table matched by ``sub-XX``
  (``label_column``).

The brain-model axis is kept as the store's
:class:`~wideml.storage.feature_table.FeatureTable` of kind ``"cifti"``
(:func:`cifti_table`): columns ``structure`` (CIFTI structure name),
``vertex`` (-1 for voxels), ``i``, ``j``, ``k`` (-1 for vertices); info
``structures`` (name, ``surface``/``volume``, count, and ``n_vertices`` of a
surface), ``volume_shape`` and ``affine`` (None without voxels). Feature ids
name each grayordinate (``CORTEX_LEFT:12``, ``THALAMUS_LEFT:10,4,7``).
``wideml maps`` writes maps back as ``.dscalar.nii`` in the same space
(:mod:`wideml.maps.surface`). Needs nibabel (``pip install 'wideml[neuro]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import ROWS, IngestOptions, Source
from wideml.sources.cifti_header import read_header, read_rows
from wideml.sources.locations import Location
from wideml.sources.surface_files import (
    CIFTI_DENSE,
    CIFTI_SUFFIXES,
    GIFTI_SUFFIXES,
    OTHER_SAMPLE_SUFFIXES,
    SurfacePlan,
    Unit,
    check_label_options,
    ends_with,
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
from wideml.storage.spatial import require_nibabel

#: Bytes of float64 rows one read of a CIFTI file may hold (several maps or time points at once).
SLAB_BYTES = 64 * 2**20
_PREFIX = "CIFTI_STRUCTURE_"
_FIX = ("wideml ingests dense scalar maps (.dscalar.nii) or dense time series (.dtseries.nii), whose rows are samples "
        "and columns grayordinates; leave it out of the folder")


def cifti_stem(path: Path) -> str:
    """File name without its CIFTI suffix (``sub-01.dscalar.nii`` → ``sub-01``)."""
    return strip_suffix(path.name, CIFTI_SUFFIXES)


def _kind_of(axis) -> str:
    return type(axis).__name__.removesuffix("Axis")


def cifti_axes(nib, path: Path):
    """``(image, row_axis, brain_model_axis)`` of a dense CIFTI-2 file, from its header (no data read).

    Raises
    ------
    WidemlError
        For an unreadable file, a file that is not CIFTI-2, or one that is not dense scalar/series.
    """
    try:
        with quiet_nibabel():
            img = nib.load(str(path))
    except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
        raise WidemlError(f"cannot read CIFTI file {str(path)!r} ({type(exc).__name__}: {one_line(exc)}); check the file.") from None
    if not isinstance(img, nib.Cifti2Image):
        raise WidemlError(f"{str(path)!r} is named like a CIFTI-2 file but is a {type(img).__name__} without a CIFTI-2 header; "
                          "rename it (a NIfTI volume goes in a folder of volumes) or recreate it.")
    try:
        rows, cols = img.header.get_axis(0), img.header.get_axis(1)
    except Exception as exc:  # noqa: BLE001
        raise WidemlError(f"cannot read the CIFTI-2 axes of {str(path)!r} ({type(exc).__name__}: {one_line(exc)}); check the file.") from None
    kinds = (_kind_of(rows), _kind_of(cols))
    if kinds[0] not in ("Scalar", "Series") or kinds[1] != "BrainModel":
        raise WidemlError(f"CIFTI file {str(path)!r} is {describe_kinds(kinds)}; {_FIX}.")
    return img, rows, cols


def describe_kinds(kinds: tuple[str, str]) -> str:
    """What a CIFTI-2 file of axis kinds ``(rows, columns)`` is, for the refusal."""
    if kinds == ("BrainModel", "BrainModel"):
        return "a dense connectivity file (dconn)"
    if "Parcels" in kinds:
        return "a parcellated file (its axes are " + " x ".join(kinds) + ")"
    if "Label" in kinds:
        return "a label file (dlabel)"
    return f"a CIFTI-2 file with axes {kinds[0]} x {kinds[1]}"


def axis_difference(a, b) -> str:
    """What differs between two brain-model axes (for the refusal)."""
    if len(a) != len(b):
        return f"{len(b)} grayordinates instead of {len(a)}"
    if not np.array_equal(a.name, b.name):
        return "other structures or another structure order"
    if a.nvertices != b.nvertices:
        return "other surface vertex counts"
    if not (np.array_equal(a.vertex, b.vertex) and np.array_equal(a.voxel, b.voxel)):
        return "other vertices or voxels"
    return "another volume shape or affine"


def cifti_table(axis) -> FeatureTable:
    """The :class:`FeatureTable` (kind ``"cifti"``) of a brain-model axis (columns in axis order)."""
    voxel = np.asarray(axis.voxel, dtype=np.int64)
    structures = []
    for name, slc, part in axis.iter_structures():
        entry = {"name": str(name), "type": "surface" if part.surface_mask.all() else "volume",
                 "count": int(len(part))}
        if entry["type"] == "surface":
            entry["n_vertices"] = int(axis.nvertices[name])
        structures.append(entry)
    has_volume = bool(axis.volume_mask.any())
    info = {"structures": structures,
            "volume_shape": [int(s) for s in axis.volume_shape] if has_volume else None,
            "affine": np.asarray(axis.affine, dtype=float).tolist() if has_volume else None}
    return FeatureTable("cifti", {"structure": np.asarray(axis.name, dtype=str), "vertex": np.asarray(axis.vertex, dtype=np.int64),
                                  "i": voxel[:, 0], "j": voxel[:, 1], "k": voxel[:, 2]}, info)


def grayordinate_ids(axis) -> np.ndarray:
    """One id per grayordinate: ``CORTEX_LEFT:12`` for a vertex, ``THALAMUS_LEFT:10,4,7`` for a voxel."""
    names = [str(n).removeprefix(_PREFIX) for n in axis.name]
    return np.asarray([f"{n}:{v}" if v >= 0 else f"{n}:{x},{y},{z}"
                       for n, v, (x, y, z) in zip(names, axis.vertex.tolist(), axis.voxel.tolist())], dtype=str)


class CiftiSource(Source):
    """CIFTI-2 dense scalar / series files: one sample per map or time point, grayordinates as features.

    Passes over the files: one header read each; one full read for the rows.
    """

    kind = "cifti"
    access = ROWS
    accepts = frozenset({"label_column", "id_column"})

    def __init__(self, where: Path, plan: SurfacePlan, axis, dtype, y: np.ndarray | None):
        self.plan = plan
        self.shape, self.dtype, self.labels, self.sample_ids = (plan.n_samples, len(axis)), np.dtype(dtype), y, plan.ids
        self.feature_table, self.feature_ids = cifti_table(axis), grayordinate_ids(axis)
        self.description, self.what, self.title = f"cifti:{where}", f"the CIFTI files of {str(where)!r}", f"ingest {where.name}"

    @classmethod
    def check_options(cls, options: IngestOptions) -> None:
        check_label_options("CIFTI", options)

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> CiftiSource:
        """Labels first, then every file's header (axes, dtype); no value is read."""
        nib = require_nibabel()
        where = location.path
        spec = read_label_spec(options)
        files = list_data_files(where, CIFTI_SUFFIXES, "CIFTI-2 files", GIFTI_SUFFIXES + OTHER_SAMPLE_SUFFIXES)
        for f in files:
            if f.name.lower().endswith(".gz"):
                raise WidemlError(f"CIFTI file {str(f)!r} is gzip-compressed; CIFTI-2 files are read uncompressed (nibabel's "
                                  f"CIFTI-2 reader opens only .nii files) — decompress it (gunzip {f.name!r}) and ingest again.")
            if not ends_with(f.name, CIFTI_DENSE):
                raise WidemlError(f"CIFTI file {str(f)!r} is a {ends_with(f.name, CIFTI_SUFFIXES)[1:-4]} file; {_FIX}.")
        units, picks = order_units([Unit(cifti_stem(f), (f,)) for f in files], spec, cifti_stem)
        first, signature, counts, dtypes = None, None, [], []
        for n, unit in enumerate(units):
            path = unit.paths[0]
            head = read_header(nib, path)
            if head.signature is not None and (head.kinds[0] not in ("Scalar", "Series") or head.kinds[1] != "BrainModel"):
                raise WidemlError(f"CIFTI file {str(path)!r} is {describe_kinds(head.kinds)}; {_FIX}.")
            if n == 0:
                first, signature = cifti_axes(nib, path)[2], head.signature
            elif head.signature is None or head.signature != signature:  # bytes differ: compare the parsed axes
                axis = cifti_axes(nib, path)[2]
                if axis != first:
                    raise WidemlError(f"CIFTI file {str(path)!r} has {axis_difference(first, axis)} than the first file "
                                      f"{units[0].name!r}; every file must share one brain-model axis — resample it to the others "
                                      "(e.g. wb_command -cifti-resample) and ingest again.")
            if head.n_columns != len(first):
                raise WidemlError(f"CIFTI file {str(path)!r} holds {head.n_columns} columns of data for {len(first)} grayordinates; "
                                  "the file is damaged — recreate it.")
            counts.append(head.n_rows)
            dtypes.append(head.dtype)
        for dt in dtypes:
            if dt.kind not in "biuf":
                raise WidemlError(f"the CIFTI files hold {dt} values, which are not real numbers; convert them to floats first.")
        plan = SurfacePlan.from_counts(units, counts, "the CIFTI files")
        plan, y = plan_labels(plan, spec, options, "the CIFTI files", picks)
        return cls(where, plan, first, np.result_type(*dtypes), y)

    def row_reader(self, dtype, allow_lossy_cast: bool = False) -> Callable[[int, int], np.ndarray]:
        paths = [str(self.plan.units[u].paths[0]) for u, _ in self.plan.samples]
        return CiftiRows([(p, t) for p, (_, t) in zip(paths, self.plan.samples)], self.shape[1], dtype, allow_lossy_cast)


class CiftiRows:
    """Read blocks of samples from CIFTI-2 files: row ``t`` of each file's data matrix.

    Parameters
    ----------
    samples : list of (str, int)
        ``(path, t)`` per row of X.
    p : int
        Grayordinates per row (checked on read).
    dtype : dtype
        dtype of the blocks returned.
    allow_lossy_cast : bool, default False
        Cast even when values change (else refused naming the file and value).
    slab : int, optional
        Rows of one file read at once (default from :data:`SLAB_BYTES`).

    Notes
    -----
    Memory per call: the block ``(r1 - r0, p)`` plus one slab of rows.
    Consecutive rows of one file are read in one slice of nibabel's array proxy.
    """

    def __init__(self, samples, p: int, dtype="float32", allow_lossy_cast: bool = False, slab: int | None = None):
        self.samples = [(str(path), int(t)) for path, t in samples]
        self.p, self.dtype, self.allow_lossy_cast = int(p), np.dtype(dtype), bool(allow_lossy_cast)
        self.slab = int(slab or max(1, SLAB_BYTES // max(1, self.p * 8)))

    def __call__(self, r0: int, r1: int) -> np.ndarray:
        """Rows ``r0:r1`` of X, shape ``(r1 - r0, p)``."""
        nib = require_nibabel()
        out = np.empty((r1 - r0, self.p), dtype=self.dtype)
        i = r0
        while i < r1:
            path, t = self.samples[i]
            j = i + 1
            while j < r1 and j - i < self.slab and self.samples[j] == (path, t + (j - i)):
                j += 1
            try:
                rows = read_rows(nib, path, t, t + (j - i))
                if rows.shape != (j - i, self.p):
                    raise WidemlError(f"CIFTI file {path!r} gives rows of shape {rows.shape[1:]} but the first file has {self.p} "
                                      "grayordinates; every file must share one brain-model axis.")
            except WidemlError:
                raise
            except Exception as exc:  # noqa: BLE001 - nibabel raises many types for truncated files
                raise WidemlError(f"cannot read CIFTI file {path!r} ({type(exc).__name__}: {one_line(exc)}); check the file.") from None
            out[i - r0 : j - r0] = checked_cast(rows, self.dtype, source=repr(path), allow_lossy=self.allow_lossy_cast, row0=i)
            del rows
            i = j
        return out
