"""A tiny fMRIPrep-like BIDS tree with its truth (used by the other BIDS tests), and tests of the walker and name parser.

The tree: ``sub-01``..``sub-03``, sessions 1 and 2, under ``derivatives/fmriprep``:

* ``anat``: ``space-MNI152NLin2009cAsym_desc-preproc_T1w`` (the data), its
  ``desc-brain_mask`` (one per subject and session, slightly different),
  distractors in ``space-MNI152NLin6Asym`` (with their own masks), a
  ``desc-aseg_dseg`` and ``.json`` sidecars;
* ``func``: ``task-rest_run-1/2_space-MNI152NLin2009cAsym_desc-stat_bold``
  3-D maps with one brain mask per run.

Things to ignore: dotfiles (a macOS ``._`` copy that is not NIfTI at all), a
``.git`` folder and a ``sourcedata`` folder both holding ``sub-01`` NIfTI
files with BIDS names, fMRIPrep's ``figures`` folder and report files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from nifti_scans import rotated_affine, save
from wideml.exceptions import WidemlError
from wideml.sources.bids_entities import parse_name, subject_folders, walk_subject

GRID = (6, 7, 5)
SPACE, OTHER = "MNI152NLin2009cAsym", "MNI152NLin6Asym"
SUBJECTS = ("01", "02", "03")
SESSIONS = ("1", "2")
GROUPS = {"01": "control", "02": "patient", "03": "control"}


@dataclass
class Tree:
    """A BIDS tree and the arrays it was written from."""

    root: Path  # the raw dataset (BIDS_DIR)
    deriv: Path  # derivatives/fmriprep
    affine: np.ndarray
    brain: np.ndarray  # the core every mask holds
    anat: dict = field(default_factory=dict)  # (sub, ses) -> volume
    anat_mask: dict = field(default_factory=dict)  # (sub, ses) -> bool mask
    func: dict = field(default_factory=dict)  # (sub, ses, run) -> volume
    func_mask: dict = field(default_factory=dict)

    def path(self, sub, ses, datatype, rest) -> Path:
        return self.deriv / f"sub-{sub}" / f"ses-{ses}" / datatype / f"sub-{sub}_ses-{ses}_{rest}"


def _volume(rng, mask) -> np.ndarray:
    return np.where(mask, rng.standard_normal(GRID) + 3.0, 0.0).astype(np.float32)


def make_tree(nib, tmp: Path, seed: int = 0) -> Tree:
    """Write the tree under ``tmp/ds`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    root, aff = tmp / "ds", rotated_affine()
    deriv = root / "derivatives" / "fmriprep"
    deriv.mkdir(parents=True)
    (root / "dataset_description.json").write_text(json.dumps({"Name": "tiny", "BIDSVersion": "1.8.0"}))
    (deriv / "dataset_description.json").write_text(json.dumps({"Name": "fMRIPrep", "DatasetType": "derivative"}))
    rows = [f"sub-{s}\t{30 + i}\t{GROUPS[s]}\n" for i, s in enumerate(SUBJECTS)]
    (root / "participants.tsv").write_text("participant_id\tage\tgroup\n" + "".join(rows[::-1]))
    brain = np.zeros(GRID, bool)
    brain[1:5, 1:6, 1:4] = True
    tree = Tree(root, deriv, aff, brain)
    for sub in SUBJECTS:
        for ses in SESSIONS:
            edge = brain.copy()
            edge[rng.integers(0, 6), rng.integers(0, 7), rng.integers(0, 5)] = True  # masks differ a little
            for datatype in ("anat", "func"):
                (tree.path(sub, ses, datatype, "x").parent).mkdir(parents=True)
            tree.anat[sub, ses], tree.anat_mask[sub, ses] = _volume(rng, edge), edge
            save(nib, tree.anat[sub, ses], aff, tree.path(sub, ses, "anat", f"space-{SPACE}_desc-preproc_T1w.nii.gz"))
            save(nib, edge.astype(np.uint8), aff, tree.path(sub, ses, "anat", f"space-{SPACE}_desc-brain_mask.nii.gz"))
            save(nib, _volume(rng, brain), aff, tree.path(sub, ses, "anat", f"space-{OTHER}_desc-preproc_T1w.nii.gz"))
            save(nib, brain.astype(np.uint8), aff, tree.path(sub, ses, "anat", f"space-{OTHER}_desc-brain_mask.nii.gz"))
            save(nib, brain.astype(np.int16) * 3, aff, tree.path(sub, ses, "anat", f"space-{SPACE}_desc-aseg_dseg.nii.gz"))
            tree.path(sub, ses, "anat", f"space-{SPACE}_desc-preproc_T1w.json").write_text("{}")
            for run in ("1", "2"):
                fm = brain.copy()
                fm[0, 0, int(run == "1")] = True
                tree.func[sub, ses, run], tree.func_mask[sub, ses, run] = _volume(rng, fm), fm
                stem = f"task-rest_run-{run}_space-{SPACE}"
                save(nib, tree.func[sub, ses, run], aff, tree.path(sub, ses, "func", f"{stem}_desc-stat_bold.nii.gz"))
                save(nib, fm.astype(np.uint8), aff, tree.path(sub, ses, "func", f"{stem}_desc-brain_mask.nii.gz"))
        (deriv / f"sub-{sub}" / "figures").mkdir()
        (deriv / f"sub-{sub}" / "figures" / f"sub-{sub}_desc-summary_T1w.svg").write_text("<svg/>")
        (deriv / f"sub-{sub}.html").write_text("<html/>")
    anat = tree.path("01", "1", "anat", "x").parent
    (anat / f"._sub-01_ses-1_space-{SPACE}_desc-preproc_T1w.nii.gz").write_bytes(b"\x00\x05\x16\x07 not nifti")
    for hidden in (deriv / ".git" / "sub-01" / "anat", deriv / "sourcedata" / "sub-01" / "anat", root / "sourcedata" / "sub-01" / "anat"):
        hidden.mkdir(parents=True)
        save(nib, _volume(rng, brain), aff, hidden / f"sub-01_space-{SPACE}_desc-preproc_T1w.nii.gz")
    return tree


nib = pytest.importorskip("nibabel")


@pytest.mark.parametrize("name, want", [
    ("sub-02_ses-1_space-MNI152NLin2009cAsym_desc-preproc_T1w.nii.gz",
     ({"sub": "02", "ses": "1", "space": "MNI152NLin2009cAsym", "desc": "preproc"}, "T1w", ".nii.gz")),
    ("sub-01_task-rest_run-10_bold.NII", ({"sub": "01", "task": "rest", "run": "10"}, "bold", ".nii")),
    ("sub-01_desc-brain_mask.nii.gz", ({"sub": "01", "desc": "brain"}, "mask", ".nii.gz")),
])
def test_names_parse_into_entities_suffix_and_extension(name, want):
    got = parse_name(name)
    assert (got.entities, got.suffix, got.extension) == want
    assert list(got.entities) == list(want[0])  # the name's order


@pytest.mark.parametrize("name", ["T1w.nii.gz", "sub-01.nii", "sub-01_ses-1_sub-02_T1w.nii", "sub-0_1_T1w.nii",
                                  "sub-01_desc-pre-proc_T1w.nii", "sub-01_T1w-x.nii", "._sub-01_T1w.nii.gz", "sub-01_T1w"])
def test_names_that_are_not_bids_do_not_parse(name):
    assert parse_name(name) is None


def test_the_walk_finds_subject_files_and_skips_hidden_and_foreign_folders(tmp_path):
    tree = make_tree(nib, tmp_path)
    folders = subject_folders(tree.deriv)
    assert list(folders) == list(SUBJECTS)
    files = walk_subject(tree.deriv, "01", folders["01"])
    rel = sorted(f.relative for f in files)
    assert len(rel) == 2 * (5 + 4)  # per session: 5 anat NIfTI, 2 runs x (map + mask)
    assert not any("._" in r or ".git" in r or "sourcedata" in r or "figures" in r for r in rel)
    assert {f.datatype for f in files} == {"anat", "func"}
    assert all(f.entities["ses"] in SESSIONS for f in files)
    only = walk_subject(tree.deriv, "01", folders["01"], frozenset({"2"}))
    assert {f.entities["ses"] for f in only} == {"2"} and len(only) == 9


def test_a_file_whose_name_contradicts_its_folder_is_refused(tmp_path):
    tree = make_tree(nib, tmp_path)
    bad = tree.path("01", "1", "anat", "x").parent / f"sub-02_ses-1_space-{SPACE}_desc-preproc_T1w.nii.gz"
    save(nib, np.zeros(GRID, np.float32), tree.affine, bad)
    with pytest.raises(WidemlError, match="lies in folder sub-01 but its name says sub-02"):
        walk_subject(tree.deriv, "01", tree.deriv / "sub-01")
