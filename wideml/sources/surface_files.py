"""Shared steps of the CIFTI-2 and GIFTI sources: listing their files, labels, and the sample plan.

A CIFTI or GIFTI source is a folder (or one file) whose *units* each hold one
or more samples: a CIFTI file (one sample per map or time point), a GIFTI
file, or a pair of GIFTI hemispheres (``hemi-L``/``hemi-R``) read as one. The
steps, cheapest first, as for NIfTI folders (:mod:`wideml.sources.nifti`):

1. :func:`list_data_files`: the folder's data files of the source's kind
   (sorted by name); a broken link, two files of one stem, or other per-sample
   files beside them (``.npy``, NIfTI volumes, the other surface format) are
   refused naming them. Other files (sidecars, ``.surf.gii`` meshes) are ignored.
2. :func:`read_label_spec`: the labels file, read before anything else; a
   two-column file chooses the units and their order (:func:`order_units`):
   its first column names a unit (a file name, with or without its suffix, or
   the unit's stem) or one sample of it by the id wideml gives it
   (``<stem>:<t>``, ``t`` from 0; the stem may also be a file name).
3. The source reads every unit's header into a :class:`SurfacePlan` (samples,
   ids ``<stem>`` for a unit of one sample, else ``<stem>:<t>``).
4. :func:`plan_labels`: labels per unit or per named sample (two-column file),
   per subject (a participants table matched by ``sub-XX``) or per sample (one
   column, optionally dropping unlabelled samples).

nibabel reports problems it finds in headers on its own logger
(``nibabel.global``, printed to stderr: "sizeof_hdr should be 540; set
sizeof_hdr to 540") before our sentence; every read of the sources goes
through :func:`quiet_nibabel`, which holds that logger (and, in the main
thread, warnings) silent and restores it afterwards.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import IngestOptions
from wideml.sources.labels import load_labels, match_files, validate_labels
from wideml.sources.locations import Location
from wideml.sources.participants import match_subjects, read_table
from wideml.storage.label_cells import check_unique_ids, listed

#: CIFTI-2 files whose rows are samples and columns grayordinates.
CIFTI_DENSE = (".dscalar.nii", ".dtseries.nii")
#: CIFTI-2 files wideml recognises and refuses (connectivity, parcellated, label files).
CIFTI_OTHER = (".dconn.nii", ".pconn.nii", ".pscalar.nii", ".ptseries.nii", ".dlabel.nii", ".plabel.nii",
               ".pdconn.nii", ".dpconn.nii", ".pconnseries.nii", ".pconnscalar.nii", ".dfan.nii", ".fibertemp.nii")
#: Gzipped CIFTI-2 files: recognised (not read as NIfTI volumes) and refused with "decompress it".
CIFTI_GZ = tuple(s + ".gz" for s in CIFTI_DENSE + CIFTI_OTHER)
CIFTI_SUFFIXES = CIFTI_DENSE + CIFTI_OTHER + CIFTI_GZ
#: GIFTI files whose data arrays are samples (meshes ``.surf.gii`` and ``.label.gii`` are not).
GIFTI_SUFFIXES = (".func.gii", ".shape.gii")
#: Per-sample files of other readers: refused beside CIFTI/GIFTI files.
OTHER_SAMPLE_SUFFIXES = (".npy", ".nii", ".nii.gz")


def ends_with(name: str, suffixes: tuple[str, ...]) -> str | None:
    """The suffix of ``suffixes`` that ``name`` ends with (any case), else None."""
    low = name.lower()
    return next((s for s in suffixes if low.endswith(s)), None)


def strip_suffix(name: str, suffixes: tuple[str, ...]) -> str:
    """``name`` without its data suffix (``sub-01.dscalar.nii`` → ``sub-01``)."""
    found = ends_with(name, suffixes)
    return name[: -len(found)] if found else name


def one_line(exc: Exception) -> str:
    """An exception's message on one line (nibabel's messages may span several)."""
    return " ".join(str(exc).split())


_QUIET_LOCK = threading.Lock()
_QUIET = {"depth": 0, "was_disabled": False}


@contextmanager
def quiet_nibabel() -> Iterator[None]:
    """Silence nibabel's logger (``nibabel.global``) and, in the main thread, warnings, for one read.

    Readers in several threads may nest: the logger is silenced by the first
    to enter and restored (to its state before) by the last to leave. Warnings
    are filtered only in the main thread (``warnings.catch_warnings`` is not
    thread-safe); the readers of other threads raise our sentence anyway.
    """
    logger = logging.getLogger("nibabel.global")
    with _QUIET_LOCK:
        if _QUIET["depth"] == 0:
            _QUIET["was_disabled"], logger.disabled = logger.disabled, True
        _QUIET["depth"] += 1
    try:
        if threading.current_thread() is threading.main_thread():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        else:
            yield
    finally:
        with _QUIET_LOCK:
            _QUIET["depth"] -= 1
            if _QUIET["depth"] == 0:
                logger.disabled = _QUIET["was_disabled"]


def is_gzip(path: Path) -> bool:
    """Whether the file starts with gzip's magic bytes."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def holds_files(path: Path, suffixes: tuple[str, ...]) -> bool:
    """Whether ``path`` is a folder holding a file ending with one of ``suffixes``."""
    try:
        return any(ends_with(f.name, suffixes) for f in path.iterdir())
    except OSError:
        return False


def folder_with(suffixes: tuple[str, ...]) -> Callable[[Location], bool]:
    """The registry's recogniser of a folder holding a file ending with one of ``suffixes``."""
    def recognises(location: Location) -> bool:
        return location.path is not None and holds_files(location.path, suffixes)

    return recognises


def list_data_files(path: Path, suffixes: tuple[str, ...], what: str, foreign: tuple[str, ...]) -> list[Path]:
    """The data files of a folder (sorted by name), or ``[path]`` for one file.

    Parameters
    ----------
    path : Path
        A folder or one data file.
    suffixes : tuple of str
        Names of the data files (lower case).
    what : str
        How messages name the kind (``"CIFTI-2 files"``).
    foreign : tuple of str
        Suffixes of per-sample files of another kind, refused beside them.

    Raises
    ------
    WidemlError
        For a broken link, no data file, two files for one sample, or foreign sample files beside them.
    """
    if not path.is_dir():
        return [path]
    entries = sorted((f for f in path.iterdir() if not f.name.startswith(".")), key=lambda f: f.name)
    broken = [f for f in entries if ends_with(f.name, suffixes) and f.is_symlink() and not f.exists()]
    if broken:
        raise WidemlError(f"{broken[0].name!r} in folder {str(path)!r} is a broken link to {os.readlink(broken[0])!r}; "
                          "restore the target or remove the link.")
    files = [f for f in entries if f.is_file() and ends_with(f.name, suffixes)]
    others = [f.name for f in entries if f.is_file() and not ends_with(f.name, suffixes) and ends_with(f.name, foreign)]
    if others:
        raise WidemlError(f"folder {str(path)!r} mixes {what} with other per-sample files ({listed(others, 3)}); "
                          f"keep one kind of sample file in a folder.")
    if not files:
        raise WidemlError(f"folder {str(path)!r} holds no {what}; give a folder with one or more of them.")
    by_stem: dict[str, list[str]] = {}
    for f in files:
        by_stem.setdefault(strip_suffix(f.name, suffixes), []).append(f.name)
    twice = [names for names in by_stem.values() if len(names) > 1]
    if twice:
        raise WidemlError(f"folder {str(path)!r} holds {len(twice[0])} files for one sample id "
                          f"({listed(twice[0], 3)}); keep one file per sample id (rename or move the others).")
    return files


@dataclass(frozen=True)
class Unit:
    """One file, or a pair of hemisphere files read side by side, whose samples share a stem."""

    stem: str
    paths: tuple[Path, ...]

    @property
    def name(self) -> str:
        """The first file's name (what labels tables are matched by)."""
        return self.paths[0].name


@dataclass(frozen=True)
class LabelSpec:
    """Labels read before the files: ``ids`` (two-column file), ``y``, ``keep`` (dropped rows), ``table`` (participants)."""

    ids: np.ndarray | None
    y: np.ndarray | None
    keep: np.ndarray | None
    table: tuple | None


def check_label_options(kind: str, options: IngestOptions) -> None:
    """Refuse --label-column / --id-column without the labels table they name (``kind``: "CIFTI", "GIFTI")."""
    if options.labels is None and (options.label_column is not None or options.id_column is not None):
        raise WidemlError(f"for {kind} files, --label-column and --id-column name columns of the labels table; give it with --labels FILE.")
    if options.id_column is not None and options.label_column is None:
        raise WidemlError("--id-column needs --label-column (the labels table's label column); give both.")


def read_label_spec(options: IngestOptions) -> LabelSpec:
    """Read ``options.labels`` unless it is a participants table (``label_column`` given)."""
    if options.label_column is not None:
        return LabelSpec(None, None, None, (options.labels, options.label_column, options.id_column, options.delimiter))
    if options.labels is None:
        return LabelSpec(None, None, None, None)
    ids, y, keep = load_labels(options.labels, delimiter=options.delimiter, drop_unlabelled=options.drop_unlabelled)
    return LabelSpec(ids, y, keep if ids is None else None, None)


#: A pick of a two-column labels file: (unit index, sample ``t`` of the unit, or None for all its samples).
Pick = tuple[int, int | None]
_SAMPLE_KEY = re.compile(r"^(.+):([0-9]+)$")


def order_units(units: list[Unit], spec: LabelSpec, stem: Callable[[Path], str]) -> tuple[list[Unit], list[Pick] | None]:
    """The units a two-column labels file names, in the order first named (all units otherwise), and its picks.

    ``stem`` maps any file name of a unit to the unit's stem, so a labels file
    may name a unit by its stem or by any of its files, or one sample of it as
    ``<stem>:<t>`` (the sample ids wideml gives; ``<file name>:<t>`` too).

    Returns
    -------
    units : list of Unit
        The units to read, in the order the labels file first names them.
    picks : list of (int, int or None), or None
        Per label (row of the labels file): the index into ``units`` and the
        sample ``t`` it names (None: every sample of the unit). None without a
        two-column labels file.

    Raises
    ------
    WidemlError
        For an id that names no file or sample (as :func:`~wideml.sources.labels.match_files`).
    """
    if spec.ids is None:
        return units, None
    by_name = {u.paths[0].name: u for u in units} | {p.name: u for u in units for p in u.paths}
    by_stem = {u.stem: u for u in units}

    def unit_of(key: str) -> Unit | None:
        name = Path(key).name
        return by_name.get(name) or by_stem.get(name) or by_stem.get(stem(Path(name)))

    resolved, unknown = [], []
    for key in (str(k) for k in spec.ids):
        unit, t = unit_of(key), None
        if unit is None and (match := _SAMPLE_KEY.match(key)) is not None:
            unit, t = unit_of(match.group(1)), int(match.group(2))
        if unit is None:
            unknown.append(key)
        resolved.append((unit, t))
    if unknown:  # refused in match_files's words
        match_files([u.paths[0] for u in units], np.asarray(unknown, dtype=str), stem)
    chosen = list(dict.fromkeys(unit.stem for unit, _ in resolved))
    index = {s: i for i, s in enumerate(chosen)}
    return [by_stem[s] for s in chosen], [(index[unit.stem], t) for unit, t in resolved]


@dataclass
class SurfacePlan:
    """The samples of a CIFTI/GIFTI source, from the headers.

    Attributes
    ----------
    units : list of Unit
        In sample order.
    samples : list of (int, int)
        ``(unit index, t)`` per sample, ``t`` the map, time point or data array.
    unit_of_sample : ndarray of int, shape (n_samples,)
    ids : ndarray of str, shape (n_samples,)
        ``<stem>`` for a unit of one sample, else ``<stem>:<t>``.
    """

    units: list[Unit]
    samples: list[tuple[int, int]] = field(default_factory=list)
    unit_of_sample: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, str))

    @classmethod
    def from_counts(cls, units: list[Unit], counts: list[int], what: str) -> SurfacePlan:
        """The plan of ``units`` holding ``counts[u]`` samples each (refused when there are none)."""
        samples = [(u, t) for u, c in enumerate(counts) for t in range(c)]
        if not samples:
            raise WidemlError(f"{what} hold no samples (no maps, time points or data arrays); give at least one.")
        ids = [units[u].stem if counts[u] == 1 else f"{units[u].stem}:{t}" for u, t in samples]
        plan = cls(units, samples, np.asarray([u for u, _ in samples], dtype=np.int64), np.asarray(ids, dtype=str))
        check_unique_ids(plan.ids, what, [units[u].name for u, _ in samples])
        return plan

    def subset(self, rows) -> SurfacePlan:
        """The plan restricted to sample indices ``rows`` (in that order); units renumbered in first-use order."""
        rows = [int(r) for r in rows]
        used = list(dict.fromkeys(int(self.unit_of_sample[r]) for r in rows))
        remap = {old: new for new, old in enumerate(used)}
        samples = [(remap[self.samples[r][0]], self.samples[r][1]) for r in rows]
        return SurfacePlan([self.units[u] for u in used], samples,
                           np.asarray([u for u, _ in samples], dtype=np.int64), self.ids[rows])

    @property
    def n_samples(self) -> int:
        return len(self.samples)


def _picked_rows(plan: SurfacePlan, picks: list[Pick], ids: np.ndarray) -> tuple[list[int], list[int]]:
    """Rows of ``plan`` the labels file's ``picks`` name, in its order, and the label (row of the file) of each.

    Raises
    ------
    WidemlError
        For a sample past the end of its unit, or a sample labelled twice.
    """
    rows_of = [np.flatnonzero(plan.unit_of_sample == u).tolist() for u in range(len(plan.units))]
    rows, labels, by_row = [], [], {}
    for i, (u, t) in enumerate(picks):
        unit_rows = rows_of[u]
        if t is not None and t >= len(unit_rows):
            unit = plan.units[u]
            shown = f"{unit.stem}:0 to {unit.stem}:{len(unit_rows) - 1}" if len(unit_rows) > 1 else f"{unit.stem}"
            raise WidemlError(f"{str(ids[i])!r} in the labels file names time point or map {t} of {unit.name!r}, which holds "
                              f"{len(unit_rows)} ({shown}); fix the id (samples count from 0).")
        for r in unit_rows if t is None else [unit_rows[t]]:
            if r in by_row:
                raise WidemlError(f"sample {str(plan.ids[r])!r} is labelled twice in the labels file ({str(ids[by_row[r]])!r} and "
                                  f"{str(ids[i])!r}); give each sample one line.")
            by_row[r] = i
            rows.append(r)
            labels.append(i)
    return rows, labels


def plan_labels(plan: SurfacePlan, spec: LabelSpec, options: IngestOptions, where: str,
                picks: list[Pick] | None = None) -> tuple[SurfacePlan, np.ndarray | None]:
    """Give the samples their labels (and leave out those a labels rule drops).

    ``picks`` are :func:`order_units`'s for a two-column labels file: the
    samples come out in the labels file's order, a unit named whole giving all
    its samples the unit's label.

    Returns
    -------
    plan : SurfacePlan
    y : ndarray of shape (plan.n_samples,) or None
    """
    if spec.table is not None:
        labels_path, label_column, id_column, delimiter = spec.table
        names = [u.name for u in plan.units]
        ids, cells = read_table(labels_path, label_column, id_column, delimiter=delimiter, file_names=names)
        kept, unit_labels = match_subjects(names, ids, cells, str(labels_path), options.drop_unlabelled)
        rows = [r for k in kept for r in np.flatnonzero(plan.unit_of_sample == k)]
        y_rows = [unit_labels[i] for i, k in enumerate(kept) for _ in np.flatnonzero(plan.unit_of_sample == k)]
        plan, y = plan.subset(rows), np.asarray(y_rows)
    elif spec.y is not None and spec.ids is not None:
        picks = picks if picks is not None else [(u, None) for u in range(len(plan.units))]
        rows, labels = _picked_rows(plan, picks, spec.ids)
        plan, y = plan.subset(rows), np.asarray(spec.y)[labels]
    elif spec.y is not None:
        y = spec.y
        if spec.keep is not None:
            if len(spec.keep) != plan.n_samples:
                raise WidemlError(f"the labels have {len(spec.keep)} entries but {where} hold {plan.n_samples} samples; "
                                  "give exactly one label per sample.")
            plan = plan.subset(np.flatnonzero(spec.keep))
    else:
        return plan, None
    return plan, validate_labels(y, plan.n_samples)
