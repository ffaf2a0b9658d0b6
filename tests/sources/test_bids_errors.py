"""Bad BIDS inputs through ``wideml ingest``: one sentence on stderr, exit status 2, no traceback and no output left.

Each case spoils the tiny fMRIPrep-like tree of :mod:`test_bids_tree` in one
way (an ambiguous selection, an entity differing across subjects, a
participants row missing or extra, a brain mask missing, in another space or
from a failed registration, nothing matching, an unfetched git-annex link ...)
and states the words the sentence must hold. The same tree unspoilt ingests
with exit status 0, and ``wideml fit`` runs on the result.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from nifti_scans import rotated_affine, save
from test_bids_tree import GRID, OTHER, SPACE, make_tree
from wideml.cli.main import main
from wideml.storage import open_store  # also loads wideml's config defaults before restore_dask_config saves them

nib = pytest.importorskip("nibabel")
ANAT = ["--derivatives", "fmriprep", "--space", SPACE, "--desc", "preproc", "--suffix", "T1w", "--label-column", "group"]


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """The CLI sets dask.config globally; keep every test independent."""


@pytest.fixture
def tree(tmp_path):
    return make_tree(nib, tmp_path)


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args] + ["--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def anat(tree, sub, ses, rest):
    return tree.path(sub, ses, "anat", f"space-{SPACE}_{rest}.nii.gz")


def two_spaces(tree):
    return [a for a in ANAT if a not in ("--space", SPACE)]


def space_differs_across_subjects(tree):
    for sub in ("01", "02", "03"):
        for ses in ("1", "2"):
            space = SPACE if sub == "03" else OTHER
            tree.path(sub, ses, "anat", f"space-{space}_desc-preproc_T1w.nii.gz").unlink()
    return two_spaces(tree)


def row_missing(tree):
    table = tree.root / "participants.tsv"
    table.write_text("".join(line for line in table.read_text().splitlines(True) if not line.startswith("sub-02")))
    return ANAT


def participant_without_scan(tree):
    with open(tree.root / "participants.tsv", "a") as f:
        f.write("sub-04\t40\tpatient\n")
    return ANAT


def mask_missing(tree):
    anat(tree, "01", "2", "desc-brain_mask").unlink()
    return ANAT


def mask_in_another_space(tree):
    save(nib, tree.brain.astype(np.uint8), rotated_affine(offset=(0.0, 0.0, 0.0)), anat(tree, "02", "1", "desc-brain_mask"))
    return ANAT


def mask_of_a_failed_registration(tree):
    shifted = np.zeros(GRID, np.uint8)
    shifted[3:6, 4:7, 2:5] = 1
    save(nib, shifted, tree.affine, anat(tree, "02", "2", "desc-brain_mask"))
    return ANAT


def unfetched_annex_link(tree):
    scan = anat(tree, "03", "1", "desc-preproc_T1w")
    scan.unlink()
    os.symlink("../../../.git/annex/objects/XX/SHA256E-s1--abc.nii.gz", scan)
    return ANAT


def labels_missing(tree):
    table = tree.root / "participants.tsv"
    table.write_text(table.read_text().replace("\tpatient", "\tn/a"))
    return ANAT


CASES = {
    "two spaces, no --space": (two_spaces, ["2 files match sub-01_ses-1", OTHER, "choose with --space"]),
    "space differs across subjects": (space_differs_across_subjects, ["differ in space across samples", "MNI152NLin6Asym for sub-03_ses-1",
                                                                      "choose with --space"]),
    "participant without a row": (row_missing, ["1 selected subject(s) have no row", "sub-02", "--drop-unlabelled"]),
    "participant without a scan": (participant_without_scan, ["have no selected scan (sub-04)", "--subjects"]),
    "label missing": (labels_missing, ["missing label such as n/a (sub-02)", "--drop-unlabelled"]),
    "brain mask missing": (mask_missing, ["1 of the 6 selected scans has no desc-brain_mask", "sub-01_ses-2", "--mask"]),
    "brain mask in another space": (mask_in_another_space, ["brain mask", "sub-02_ses-1", "--mask FILE"]),
    "brain mask of a failed registration": (mask_of_a_failed_registration, ["of its voxels inside the brain of most other masks", "sub-02_ses-2", "--mask FILE"]),
    "nothing matches": (lambda t: ANAT[:3] + ["Foo"] + ANAT[4:], ["no NIfTI file", "space-Foo", f"present space: {SPACE}"]),
    "unknown subject": (lambda t: ANAT + ["--subjects", "01,09"], ["no folder for sub-09", "--subjects"]),
    "unknown session": (lambda t: ANAT + ["--session", "3"], ["session ses-3", "--session"]),
    "no derivatives chosen": (lambda t: ANAT[2:], ["no sub-* folders", "--derivatives"]),
    "unknown derivatives": (lambda t: ["--derivatives", "freesurfer"] + ANAT[2:], ["no derivatives/freesurfer", "fmriprep"]),
    "unfetched git-annex file": (unfetched_annex_link, ["not there", "sub-03_ses-1", "datalad get"]),
    "labels not a table": (lambda t: ANAT[:-2] + ["--labels", t.root / "participants.tsv"], ["--label-column"]),
    "bad filter": (lambda t: ANAT + ["--filter", "task"], ["ENTITY=VALUE"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_bids_input_is_one_sentence_exit_2_and_no_output(tree, tmp_path, capsys, assert_no_output, name):
    spoil, words = CASES[name]
    args = spoil(tree)
    out = tmp_path / "s.zarr"
    code, _, err = run(capsys, "ingest", tree.root, *args, "-o", out)
    assert code == 2, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    assert_no_output(out)


def test_the_unspoilt_tree_ingests_and_fits(tree, tmp_path, capsys):
    store = tmp_path / "s.zarr"
    code, out, err = run(capsys, "ingest", tree.root, *ANAT, "-o", store)
    assert code == 0, err
    assert "6 samples" in out
    assert list(open_store(store).sample_ids) == [f"sub-{s}_ses-{e}" for s in ("01", "02", "03") for e in ("1", "2")]
    code, out, err = run(capsys, "fit", "lol", store, "-o", tmp_path / "m.model", "--n-components", "2")
    assert code == 0, err
