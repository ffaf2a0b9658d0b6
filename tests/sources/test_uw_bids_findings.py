"""The user-world findings on BIDS ingest (notes uw_bids), each a test that failed before its fix.

* ``--session X`` takes only files whose ``ses`` entity is X (not a session-less
  anat template of the same subject), and a selection mixing files with and
  without ``ses-`` is refused in one sentence naming an example and the fix;
* two ``participants.tsv`` (derivatives and raw) that disagree on a selected
  subject's label are refused naming the subject, both values and ``--labels``;
* a missing brain mask is counted the right way round;
* a participants table that is not UTF-8 says so (and how to convert it);
* an existing output that is not wideml's is not met with "pass --overwrite";
* smaller: ``--filter foo`` shows no Python tuple, an upper-case id is shown as
  written, and an ambiguity in an entity some files lack advises ``--filter res=``.

Oracle for accepted ingests: nibabel's read of the selected files, masked by
the AND of their brain masks computed here.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from test_bids_tree import GROUPS, SPACE, make_tree
from wideml.cli.main import main
from wideml.storage import open_store

nib = pytest.importorskip("nibabel")
SEL = ["--derivatives", "fmriprep", "--space", SPACE, "--desc", "preproc", "--suffix", "T1w"]
ANAT = SEL + ["--label-column", "group"]


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


def refused(code, err, *words):
    assert code == 2, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"


def anat(tree, sub, ses, what="desc-preproc_T1w"):
    return tree.path(sub, ses, "anat", f"space-{SPACE}_{what}.nii.gz")


def add_sessionless_template(tree, sub="02"):
    """fMRIPrep's layout for a multi-session subject: its anat template in ``sub-X/anat`` without ``ses-``."""
    folder = tree.deriv / f"sub-{sub}" / "anat"
    folder.mkdir()
    for what in ("desc-preproc_T1w", "desc-brain_mask"):
        shutil.copy(anat(tree, sub, "1", what), folder / f"sub-{sub}_space-{SPACE}_{what}.nii.gz")


def masked(paths, masks):
    mask = np.ones(grid_of(paths[0]), bool)
    for m in masks:
        mask &= np.asarray(nib.load(str(m)).dataobj) != 0
    return mask, np.stack([np.asarray(nib.load(str(p)).get_fdata())[mask] for p in paths])


def grid_of(path):
    return nib.load(str(path)).shape[:3]


# 1. sessions ---------------------------------------------------------------------------------------------------------

def test_session_takes_only_files_of_that_session_not_the_sessionless_template(tree, tmp_path, capsys):
    add_sessionless_template(tree)
    store = tmp_path / "s.zarr"
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "--session", "1", "-o", store)
    assert code == 0, err
    s = open_store(store)
    assert list(s.sample_ids) == ["sub-01_ses-1", "sub-02_ses-1", "sub-03_ses-1"]
    paths = [anat(tree, sub, "1") for sub in ("01", "02", "03")]
    mask, want = masked(paths, [anat(tree, sub, "1", "desc-brain_mask") for sub in ("01", "02", "03")])
    np.testing.assert_allclose(s.X.compute(), want, rtol=0, atol=1e-6)
    assert int(mask.sum()) == s.X.shape[1]
    assert list(s.y) == [GROUPS[sub] for sub in ("01", "02", "03")]


@pytest.mark.parametrize("extra", [[], ["--average", "sessions"], ["--average", "runs"]], ids=["plain", "avg-sessions", "avg-runs"])
def test_files_with_and_without_a_session_are_not_mixed_silently(tree, tmp_path, capsys, assert_no_output, extra):
    add_sessionless_template(tree)
    out = tmp_path / "s.zarr"
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, *extra, "-o", out)
    refused(code, err, "sub-02", "without a session", "--session", "--filter ses=")
    assert_no_output(out)


def test_average_sessions_with_named_sessions_averages_only_those(tree, tmp_path, capsys):
    add_sessionless_template(tree)
    store = tmp_path / "s.zarr"
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "--session", "1,2", "--average", "sessions", "-o", store)
    assert code == 0, err
    s = open_store(store)
    assert list(s.sample_ids) == ["sub-01", "sub-02", "sub-03"]
    paths = [anat(tree, sub, ses) for sub in ("01", "02", "03") for ses in ("1", "2")]
    mask, rows = masked(paths, [anat(tree, sub, ses, "desc-brain_mask") for sub in ("01", "02", "03") for ses in ("1", "2")])
    np.testing.assert_allclose(s.X.compute(), rows.reshape(3, 2, -1).mean(axis=1), rtol=0, atol=1e-6)


def test_the_sessionless_files_are_chosen_with_an_empty_ses_filter(tree, tmp_path, capsys):
    add_sessionless_template(tree)
    store = tmp_path / "s.zarr"
    code, _, err = run(capsys, "ingest", tree.root, *SEL, "--filter", "ses=", "--unlabelled", "-o", store)
    assert code == 0, err
    s = open_store(store)
    assert list(s.sample_ids) == ["sub-02"]
    np.testing.assert_allclose(s.X.compute()[0], masked([anat(tree, "02", "1")], [anat(tree, "02", "1", "desc-brain_mask")])[1][0],
                               rtol=0, atol=1e-6)


# 2. two participants tables ------------------------------------------------------------------------------------------

def test_disagreeing_participants_tables_are_refused_naming_subject_values_and_fix(tree, tmp_path, capsys, assert_no_output):
    raw = (tree.root / "participants.tsv").read_text()
    (tree.deriv / "participants.tsv").write_text(raw.replace("control", "X").replace("patient", "control").replace("X", "patient"))
    out = tmp_path / "s.zarr"
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "-o", out)
    refused(code, err, "sub-01", "'control'", "'patient'", str(tree.deriv / "participants.tsv"), str(tree.root / "participants.tsv"),
            "--labels")
    assert_no_output(out)
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "--labels", tree.root / "participants.tsv", "-o", out)
    assert code == 0, err
    assert list(open_store(out).y) == [GROUPS[sub] for sub in ("01", "01", "02", "02", "03", "03")]


def test_agreeing_participants_tables_are_fine(tree, tmp_path, capsys):
    raw = (tree.root / "participants.tsv").read_text()
    (tree.deriv / "participants.tsv").write_text(raw.replace("\t3", "\t4"))  # the ages differ; the label column agrees
    store = tmp_path / "s.zarr"
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "-o", store)
    assert code == 0, err
    assert list(open_store(store).y) == [GROUPS[sub] for sub in ("01", "01", "02", "02", "03", "03")]


# 3. missing brain mask -----------------------------------------------------------------------------------------------

def test_a_missing_brain_mask_is_counted_the_right_way_round(tree, tmp_path, capsys):
    anat(tree, "02", "2", "desc-brain_mask").unlink()
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "-o", tmp_path / "s.zarr")
    refused(code, err, "1 of the 6 selected scans has no desc-brain_mask file beside it", "sub-02_ses-2", "--mask")


# 4. encoding ---------------------------------------------------------------------------------------------------------

def test_a_latin1_participants_table_is_said_to_be_not_utf8(tree, tmp_path, capsys):
    table = tmp_path / "latin1.tsv"
    table.write_bytes("participant_id\tgroup\nsub-01\tcontr\u00f4le\nsub-02\tpatient\nsub-03\tcontr\u00f4le\n".encode("latin-1"))
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "--labels", table, "-o", tmp_path / "s.zarr")
    refused(code, err, "not UTF-8", "line 2", "0xf4", "re-save it as UTF-8")
    assert "header row" not in err


# 5. an existing user folder ------------------------------------------------------------------------------------------

def test_an_existing_user_folder_is_not_met_with_pass_overwrite(tree, tmp_path, capsys):
    mine = tmp_path / "demo-output"
    mine.mkdir()
    (mine / "results.txt").write_text("mine")
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "-o", mine)
    refused(code, err, "cannot prove it wrote it", "remove or rename it")
    assert "pass --overwrite" not in err
    assert (mine / "results.txt").read_text() == "mine"


# smaller notes -------------------------------------------------------------------------------------------------------

def test_a_filter_without_value_is_shown_as_given(tree, tmp_path, capsys):
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "--filter", "foo", "-o", tmp_path / "s.zarr")
    refused(code, err, "'foo'", "ENTITY=VALUE")
    assert "None" not in err and "('foo'" not in err


def test_an_upper_case_id_is_shown_as_written(tree, tmp_path, capsys):
    with open(tree.root / "participants.tsv", "a") as f:
        f.write("SUB-04\t40\tpatient\n")
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "-o", tmp_path / "s.zarr")
    refused(code, err, "SUB-04")
    assert "sub-SUB-04" not in err


def test_an_entity_some_files_lack_is_chosen_with_an_empty_filter(tree, tmp_path, capsys):
    for sub in ("01", "02", "03"):
        for ses in ("1", "2"):
            shutil.copy(anat(tree, sub, ses), tree.path(sub, ses, "anat", f"space-{SPACE}_res-2_desc-preproc_T1w.nii.gz"))
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "-o", tmp_path / "s.zarr")
    refused(code, err, "differing in res", "--filter res= for the files without res")
    code, _, err = run(capsys, "ingest", tree.root, *ANAT, "--filter", "res=", "-o", tmp_path / "s.zarr")
    assert code == 0, err
