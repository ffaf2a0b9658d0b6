"""BIDS file names and folders, parsed by hand against the BIDS specification (no pybids).

A BIDS data file lives at ``sub-<label>/[ses-<label>/]<datatype>/<name>`` under
a dataset root (raw data, or a derivatives dataset such as
``derivatives/fmriprep``), and its name is key-value *entities* joined by
``_``, then the *suffix*, then the *extension* (from the first dot)::

    sub-02_ses-1_task-rest_run-1_space-MNI152NLin2009cAsym_desc-preproc_bold.nii.gz
    \\___ entities: sub, ses, task, run, space, desc ___/ \\suffix/ \\extension/

Keys and labels are alphanumeric (``[A-Za-z0-9]+``), as the specification
requires; a name that does not parse is not a BIDS file and is left alone.
pybids is not used: it indexes every file of the tree into a database first
(about 45 minutes for 100 fMRIPrep subjects, bids-standard/pybids#970), where
the walk here lists only ``sub-*`` folders, their ``ses-*`` folders and their
datatype folders, and parses each NIfTI name once (72 000 NIfTI files of
1 000 fMRIPrep-like subjects in 3 to 8 s, ``benchmarks/scale/bids_pipeline.py``).

What the walk skips: everything at the root but ``sub-*`` folders (so
``sourcedata/``, ``derivatives/``, ``code/``, ``.git`` and dotfiles), every
name starting with a dot at any depth (``._sub-01_T1w.nii.gz`` of macOS,
``.datalad``), files that are not ``.nii``/``.nii.gz``, and names that do not
parse. A NIfTI file whose ``sub``/``ses`` entities contradict its folders is
refused naming it: the tree is then not what its names say.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from wideml.exceptions import WidemlError

#: The file extensions of data files wideml reads from a BIDS tree.
NIFTI_EXTENSIONS = (".nii.gz", ".nii")

_PAIR = re.compile(r"^([A-Za-z0-9]+)-([A-Za-z0-9]+)$")
_WORD = re.compile(r"^[A-Za-z0-9]+$")
_FOLDER = re.compile(r"^(sub|ses)-([A-Za-z0-9]+)$")

#: Entities whose values are indices (non-negative integers): sorted as numbers.
INDEX_ENTITIES = frozenset({"run", "echo", "flip", "inv", "split", "chunk"})


@dataclass(frozen=True)
class BidsName:
    """A parsed BIDS file name.

    Attributes
    ----------
    entities : dict of str to str
        Key-value pairs in the order of the name (``{"sub": "02", "ses": "1", ...}``).
    suffix : str
        ``T1w``, ``bold``, ``mask`` ...
    extension : str
        ``.nii.gz``, ``.nii``, ``.json`` ... (from the first dot, lower case).
    """

    entities: dict
    suffix: str
    extension: str


def parse_name(name: str) -> BidsName | None:
    """The entities, suffix and extension of a BIDS file name, or None when it is not one.

    ``sub-01_ses-2_desc-brain_mask.nii.gz`` gives
    ``({"sub": "01", "ses": "2", "desc": "brain"}, "mask", ".nii.gz")``. A name
    without a suffix, with a key given twice, or with characters other than
    letters and digits in a key, label or suffix is not a BIDS name.
    """
    if name.startswith(".") or "." not in name:
        return None
    stem, dot, rest = name.partition(".")
    parts = stem.split("_")
    if len(parts) < 2 or not _WORD.match(parts[-1]):
        return None
    entities: dict[str, str] = {}
    for part in parts[:-1]:
        match = _PAIR.match(part)
        if match is None or match.group(1) in entities:
            return None
        entities[match.group(1)] = match.group(2)
    return BidsName(entities, parts[-1], (dot + rest).lower())


@dataclass(frozen=True)
class BidsFile:
    """One NIfTI file of a BIDS tree.

    Attributes
    ----------
    path : Path
        Absolute path.
    relative : str
        Path from the dataset root (how messages name it).
    entities : dict of str to str
        From the name; ``sub`` (and ``ses`` inside a session folder) always present.
    suffix, extension : str
    datatype : str
        The folder the file lies in (``anat``, ``func``, ``dwi`` ...; ``""`` directly in a subject or session folder).
    """

    path: Path
    relative: str
    entities: dict
    suffix: str
    extension: str
    datatype: str

    def get(self, key: str) -> str | None:
        """An entity's value, or ``suffix``/``datatype``/``extension`` by those names; None when absent."""
        if key in ("suffix", "datatype", "extension"):
            return getattr(self, key)
        return self.entities.get(key)


def _dirs(folder: Path) -> list[os.DirEntry]:
    """Sub-folders of ``folder`` not starting with a dot (links to folders followed), sorted by name."""
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if not e.name.startswith(".") and e.is_dir()), key=lambda e: e.name)
    except OSError as exc:
        raise WidemlError(f"cannot list folder {str(folder)!r} ({type(exc).__name__}); check its permissions.") from None


def _nifti_files(folder: Path, root: Path, datatype: str, folder_entities: dict) -> list[BidsFile]:
    """The BIDS NIfTI files directly in ``folder`` (dotfiles and names that do not parse skipped)."""
    found = []
    try:
        with os.scandir(folder) as it:
            entries = [e for e in it if not e.name.startswith(".") and e.name.lower().endswith(NIFTI_EXTENSIONS)]
    except OSError as exc:
        raise WidemlError(f"cannot list folder {str(folder)!r} ({type(exc).__name__}); check its permissions.") from None
    where = os.path.relpath(folder, root)
    for entry in entries:
        parsed = parse_name(entry.name)
        if parsed is None or entry.is_dir():
            continue
        relative = os.path.join(where, entry.name)
        for key, value in folder_entities.items():
            if parsed.entities.get(key) != value:
                raise WidemlError(f"BIDS file {relative!r} lies in folder {key}-{value} but its name says "
                                  f"{key}-{parsed.entities.get(key, '(none)')}; rename or move it so name and folder agree.")
        found.append(BidsFile(Path(entry.path), relative, parsed.entities, parsed.suffix, parsed.extension, datatype))
    return found


def subject_folders(root: Path) -> dict[str, Path]:
    """``{label: folder}`` of the ``sub-<label>`` folders at the dataset root, sorted by label."""
    out = {}
    for entry in _dirs(root):
        match = _FOLDER.match(entry.name)
        if match and match.group(1) == "sub":
            out[match.group(2)] = Path(entry.path)
    return out


def walk_subject(root: Path, label: str, folder: Path, sessions: frozenset | None = None) -> list[BidsFile]:
    """Every BIDS NIfTI file of one subject: ``sub-X/<datatype>/`` and ``sub-X/ses-Y/<datatype>/`` (and files directly in them).

    Parameters
    ----------
    root : Path
        Dataset root (for relative names).
    label : str
        Subject label (without ``sub-``).
    folder : Path
        The subject's folder.
    sessions : frozenset of str, optional
        Only these session folders (labels without ``ses-``); subject-level files are kept.

    Returns
    -------
    list of BidsFile
    """
    files = _nifti_files(folder, root, "", {"sub": label})
    for entry in _dirs(folder):
        match = _FOLDER.match(entry.name)
        if match and match.group(1) == "ses":
            if sessions is not None and match.group(2) not in sessions:
                continue
            where = {"sub": label, "ses": match.group(2)}
            files += _nifti_files(Path(entry.path), root, "", where)
            for sub in _dirs(Path(entry.path)):
                files += _nifti_files(Path(sub.path), root, sub.name, where)
        elif match is None:
            files += _nifti_files(Path(entry.path), root, entry.name, {"sub": label})
    return files


def index_value(value: str | None):
    """A sort key for an entity value: numbers by value, before labels by text (None first)."""
    if value is None:
        return (0, 0, "")
    return (1, int(value), value) if value.isdigit() else (2, 0, value)
