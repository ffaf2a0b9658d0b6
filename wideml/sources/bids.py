"""BIDS datasets and their derivatives (fMRIPrep-like trees) as an ingest source.

``wideml ingest BIDS_DIR --bids [--derivatives fmriprep] --space MNI152NLin2009cAsym --desc preproc
--suffix T1w --label-column group -o s.zarr`` (``wideml.ingest(BIDS_DIR, out, bids={...})``).
A folder holding ``dataset_description.json`` is recognised as BIDS by the
registry; ``--bids`` (any BIDS flag, or ``bids=`` in Python) forces it.

The steps, cheapest first:

1. the dataset root: ``BIDS_DIR`` or ``BIDS_DIR/derivatives/<name>``; its
   ``sub-*`` folders are walked (:mod:`wideml.sources.bids_entities`, names
   parsed by hand against the BIDS specification; pybids is not used, since
   it indexes the whole tree into a database first: 45 minutes for 100
   fMRIPrep subjects, bids-standard/pybids#970);
2. the selection and the samples (:mod:`wideml.sources.bids_query`): one
   sample per subject, session and run, ids ``sub-02_ses-1_run-1``;
   ambiguous or inconsistent selections are refused;
3. labels: the label column of ``participants.tsv`` (``--labels`` names
   another table), looked up in the derivatives dataset, then in
   ``BIDS_DIR``, then in the raw dataset above ``derivatives/``, the first
   found used (two that disagree on a selected subject's label are refused:
   ``--labels FILE`` chooses); matched by
   subject (a subject's label goes to all its sessions, runs and volumes).
   A selected subject without a row, or a participant without a selected
   scan (unless ``--subjects`` names the subjects), is refused;
   ``--drop-unlabelled`` leaves out subjects whose label is missing or who have no row;
4. headers: one grid and affine for all (:func:`wideml.sources.nifti_rows.scan_nifti`);
5. the mask: the intersection of the scans' ``desc-brain_mask`` files
   (:mod:`wideml.sources.bids_masks`), or ``--mask FILE|auto``;
6. the rows ``volume[mask]`` (or averages, :mod:`wideml.sources.bids_rows`)
   through the ordinary writer loop, with the spatial reference recorded.

Passes over the files: one header read each, one read of each mask, one full read for the rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import ROWS, IngestOptions, Source
from wideml.sources.bids_entities import BidsFile, subject_folders, walk_subject
from wideml.sources.bids_masks import intersect_masks, scan_masks
from wideml.sources.bids_query import BidsQuery, as_query, few, plan_samples, select
from wideml.sources.bids_rows import AverageRows
from wideml.sources.labels import coerce_labels, validate_labels
from wideml.sources.locations import Location, locate
from wideml.sources.masking import AUTO, auto_mask, load_mask_file
from wideml.sources.nifti_rows import NiftiRows, scan_nifti
from wideml.sources.participants import read_table, subject_key
from wideml.storage.label_cells import clip, is_missing, listed
from wideml.storage.spatial import SpatialReference

DESCRIPTION = "dataset_description.json"
PARTICIPANTS = "participants.tsv"


def bids_location(source) -> Location:
    """The :class:`Location` of a BIDS folder given with ``--bids`` (it must be a folder)."""
    location = locate(source)
    if location.path is None or not location.path.is_dir():
        raise WidemlError(f"--bids (bids=) reads a BIDS dataset folder, and {str(location.path or 'the source')!r} is not a folder; "
                          "give the dataset's root folder.")
    return location


def is_bids_folder(location: Location) -> bool:
    """The registry's recogniser: a folder holding ``dataset_description.json``, or only ``sub-*`` folders.

    The second case is a BIDS tree that lost its description file: a folder
    of ``sub-*`` folders with no per-sample file at its top, which the folder
    source could not read anyway.
    """
    path = location.path
    if path is None or not path.is_dir():
        return False
    if (path / DESCRIPTION).is_file():
        return True
    try:
        entries = [e for e in os.scandir(path) if not e.name.startswith(".")]
    except OSError:
        return False
    top_files = any(e.name.lower().endswith((".nii", ".nii.gz", ".npy")) for e in entries)
    return not top_files and any(e.name.startswith("sub-") and e.is_dir() for e in entries)


def dataset_root(path: Path, derivatives: str | None) -> Path:
    """``path`` or ``path/derivatives/<derivatives>``, which must hold ``sub-*`` folders."""
    found = sorted(e.name for e in (path / "derivatives").iterdir() if e.is_dir() and not e.name.startswith(".")) \
        if (path / "derivatives").is_dir() else []
    root = path
    if derivatives is not None:
        root = path / "derivatives" / derivatives
        if not root.is_dir():
            have = f"its derivatives are {listed(found)}" if found else "it has no derivatives folder"
            raise WidemlError(f"BIDS dataset {str(path)!r} has no derivatives/{derivatives} ({have}); give one of them with --derivatives.")
    if not subject_folders(root):
        hint = (f"; its derivatives are {listed(found)}: pick one with --derivatives NAME" if found and derivatives is None
                else "; give the dataset's root folder")
        raise WidemlError(f"BIDS dataset {str(root)!r} has no sub-* folders{hint}.")
    return root


def participants_tables(path: Path, root: Path) -> list[Path]:
    """The ``participants.tsv`` files of the derivatives dataset, of ``path`` and of the raw dataset above ``derivatives/``
    (in that order, each file once)."""
    places = [root, path]
    if root.parent.name == "derivatives":
        places.append(root.parent.parent)
    found = {}
    for place in places:
        if (place / PARTICIPANTS).is_file():
            found.setdefault(os.path.realpath(place / PARTICIPANTS), place / PARTICIPANTS)
    return list(found.values())


def participants_table(path: Path, root: Path) -> Path | None:
    """``participants.tsv`` of the derivatives dataset, else of ``path``, else of the raw dataset above ``derivatives/``."""
    tables = participants_tables(path, root)
    return tables[0] if tables else None


def _cells(table: Path, options: IngestOptions, subjects: list[str]) -> dict[str, str] | None:
    """``{subject: label cell}`` of a second participants table, or None when it cannot be read with these columns."""
    try:
        ids, cells = read_table(table, options.label_column, options.id_column, delimiter=options.delimiter,
                                file_names=[f"sub-{s}" for s in subjects])
    except WidemlError:
        return None
    return {subject_key(i): c for i, c in zip(ids, cells)}


def check_tables_agree(subjects: list[str], tables: list[Path], options: IngestOptions) -> None:
    """Refuse when two of the dataset's participants tables give a selected subject different labels (one sentence).

    A derivatives dataset may carry its own ``participants.tsv`` beside the raw
    dataset's; when they disagree neither is silently right, so the user
    names the one to use with ``--labels FILE``. Tables agreeing on the label
    column (other columns may differ) are fine: the first one is used.
    """
    if len(tables) < 2:
        return
    first = _cells(tables[0], options, subjects) or {}
    for other in tables[1:]:
        cells = _cells(other, options, subjects) or {}
        for s in subjects:
            if s in first and s in cells and first[s] != cells[s]:
                raise WidemlError(f"participants tables {str(tables[0])!r} and {str(other)!r} disagree on {options.label_column} for "
                                  f"sub-{s} ({clip(first[s])!r} and {clip(cells[s])!r}); give the table to use with --labels FILE.")


def subject_labels(subjects: list[str], table: Path, options: IngestOptions, named: bool) -> dict[str, object]:
    """``{subject: label}`` from the participants table (labels missing or rows absent left out with ``drop_unlabelled``).

    ``named``: the user named the subjects (``--subjects``), so table rows of other participants are not refused.
    """
    ids, cells = read_table(table, options.label_column, options.id_column, delimiter=options.delimiter,
                            file_names=[f"sub-{s}" for s in subjects])
    rows: dict[str, str] = {}
    written: dict[str, str] = {}  # the ids as the table writes them, for messages
    for raw, cell in zip(ids, cells):
        key = subject_key(raw)
        if key in rows:
            raise WidemlError(f"participant {clip(raw)!r} is listed twice in {str(table)!r}; give each participant one row.")
        rows[key] = cell
        written[key] = str(raw) if str(raw).lower().startswith("sub-") else f"sub-{key}"
    wanted = set(subjects)
    no_row = [f"sub-{s}" for s in subjects if s not in rows]
    no_label = [f"sub-{s}" for s in subjects if s in rows and is_missing(rows[s])]
    no_scan = [] if named else [written[k] for k, c in rows.items() if k not in wanted and not (options.drop_unlabelled and is_missing(c))]
    parts = []
    if no_row and not options.drop_unlabelled:
        parts.append(f"{len(no_row)} selected subject(s) have no row in it ({listed(no_row, 3)})")
    if no_label and not options.drop_unlabelled:
        parts.append(f"{len(no_label)} selected subject(s) have a missing label such as n/a ({listed(no_label, 3)})")
    if no_scan:
        parts.append(f"{len(no_scan)} participant(s) have no selected scan ({listed(no_scan, 3)})")
    if parts:
        fix = "name the subjects to ingest with --subjects, " if no_scan else ""
        fix += "or pass --drop-unlabelled to leave unlabelled subjects out" if (no_row or no_label) else "or check those subjects' files"
        raise WidemlError(f"participants table {str(table)!r}: {'; '.join(parts)}; {fix}.")
    kept = [s for s in subjects if s in rows and not is_missing(rows[s])]
    if not kept:
        raise WidemlError(f"no selected subject has a label in {str(table)!r}; check the label column and the subject ids.")
    return dict(zip(kept, coerce_labels([rows[s] for s in kept])))


def _walk(root: Path, query: BidsQuery) -> list[BidsFile]:
    """Every NIfTI file of the chosen subjects and sessions (unknown labels refused)."""
    folders = subject_folders(root)
    if query.subjects is not None:
        unknown = [f"sub-{s}" for s in query.subjects if s not in folders]
        if unknown:
            raise WidemlError(f"BIDS dataset {str(root)!r} has no folder for {listed(unknown, 3)} (it has {listed(['sub-' + s for s in folders], 3)}); "
                              "fix --subjects.")
        folders = {s: folders[s] for s in query.subjects}
    sessions = None if query.sessions is None else frozenset(query.sessions)
    files = [f for label, folder in folders.items() for f in walk_subject(root, label, folder, sessions)]
    if sessions is not None:  # by the ses entity: a subject-level file without ses- is in no session
        files = [f for f in files if f.entities.get("ses") in sessions]
        seen = {f.entities.get("ses") for f in files}
        missing = [f"ses-{s}" for s in query.sessions if s not in seen]
        if missing:
            raise WidemlError(f"no chosen subject of BIDS dataset {str(root)!r} has session {listed(missing, 3)}; fix --session.")
    if not files:
        raise WidemlError(f"BIDS dataset {str(root)!r} holds no NIfTI file with a BIDS name in its sub-* folders; check the folder.")
    return files


class BidsSource(Source):
    """A BIDS dataset (raw or derivatives): one sample per selected scan (or per volume, or per average)."""

    kind = "bids"
    access = ROWS
    accepts = frozenset({"label_column", "id_column", "mask", "bids"})

    def __init__(self, root: Path, plan, ids: np.ndarray, groups: list[list[str]] | None, voxels, y):
        space = plan.space
        self.plan, self.voxels, self.groups = plan, voxels, groups
        self.spatial = SpatialReference(space.grid_shape, space.affine, space.header, voxels)
        n = plan.n_samples if groups is None else len(groups)
        dtype = np.dtype(plan.dtype)
        if groups is not None:
            dtype = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
        self.shape, self.dtype = (n, self.spatial.n_features), dtype
        self.labels, self.sample_ids = y, ids
        self.feature_shape = space.grid_shape if voxels is None else None
        self.description, self.what, self.title = f"bids:{root}", f"the scans of {str(root)!r}", f"ingest {root.name}"

    @classmethod
    def check_options(cls, options: IngestOptions) -> None:
        if options.labels is not None and not isinstance(options.labels, (str, os.PathLike)):
            raise WidemlError("for a BIDS dataset, labels come from a participants table: give --labels FILE with --label-column, "
                              "or only --label-column to read the dataset's participants.tsv.")
        if options.labels is not None and options.label_column is None:
            raise WidemlError("for a BIDS dataset, --labels names a participants table; name its label column with --label-column.")
        if options.id_column is not None and options.label_column is None:
            raise WidemlError("--id-column needs --label-column (the participants table's label column); give both.")

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> BidsSource:
        """Walk, select, label, read headers and masks (no voxel of a scan read but for ``mask="auto"``)."""
        query = as_query(options.bids) or BidsQuery()
        path = location.path
        root = dataset_root(path, query.derivatives)
        everything = _walk(root, query)
        chosen = select(everything, query, f"BIDS dataset {str(root)!r}")
        ids, groups = plan_samples(chosen, query.average)
        y = None
        if options.label_column is not None:
            tables = [Path(options.labels)] if options.labels is not None else participants_tables(path, root)
            if not tables:
                raise WidemlError(f"BIDS dataset {str(path)!r} has no {PARTICIPANTS}; give the participants table with --labels FILE.")
            table = tables[0]
            subjects = list(dict.fromkeys(g[0].entities["sub"] for g in groups))
            check_tables_agree(subjects, tables, options)
            labels = subject_labels(subjects, table, options, query.subjects is not None)
            keep = [i for i, g in enumerate(groups) if g[0].entities["sub"] in labels]
            ids, groups = [ids[i] for i in keep], [groups[i] for i in keep]
            y = [labels[g[0].entities["sub"]] for g in groups]
        files = [f for g in groups for f in g]
        broken = [f.relative for f in files if not f.path.is_file()]
        if broken:
            raise WidemlError(f"{len(broken)} selected scan(s) are links to files that are not there ({few(broken)}; "
                              "git-annex files not fetched?); fetch them (datalad get) or leave those subjects out with --subjects.")
        plan = scan_nifti([f.path for f in files])
        group_of_file = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
        if query.average is not None:
            four_d = [files[plan.file_of_sample[i]].relative for i, (_, t) in enumerate(plan.samples) if t >= 0][:1]
            if four_d or plan.n_samples != len(files):
                raise WidemlError(f"--average {query.average} averages 3-D scans, and {four_d[0] if four_d else 'a selected file'!r} "
                                  "is a 4-D series; select 3-D scans (e.g. statistical maps) or drop --average.")
            sample_ids = np.asarray(ids, dtype=str)
            y = None if y is None else np.asarray(y)
        else:
            owner = group_of_file[plan.file_of_sample]
            sample_ids = np.asarray([ids[o] if t < 0 else f"{ids[o]}:{t}" for o, (_, t) in zip(owner, plan.samples)], dtype=str)
            y = None if y is None else np.asarray(y)[owner]
        if y is not None:
            y = validate_labels(y, len(sample_ids))
        voxels = _mask(options.mask, plan, files, everything)
        return cls(root, plan, sample_ids, None if query.average is None else [[str(f.path) for f in g] for g in groups], voxels, y)

    def row_reader(self, dtype, allow_lossy_cast: bool = False) -> Callable[[int, int], np.ndarray]:
        grid = self.plan.space.grid_shape
        if self.groups is not None:
            return AverageRows(self.groups, grid, self.voxels, dtype, allow_lossy_cast)
        return NiftiRows(self.plan.samples, grid, self.voxels, dtype, allow_lossy_cast)


def _mask(mask, plan, scans: list[BidsFile], everything: list[BidsFile]) -> np.ndarray:
    """``--mask FILE|auto``, else the intersection of the scans' brain masks."""
    if mask is None:
        return intersect_masks(scan_masks(scans, everything), plan.space)
    if isinstance(mask, str) and mask.lower() == AUTO:
        return auto_mask(plan)
    if isinstance(mask, (str, os.PathLike)):
        return load_mask_file(mask, plan.space)
    raise WidemlError(f"mask must be a NIfTI file path or 'auto', not {type(mask).__name__}; pass --mask FILE or --mask auto.")
