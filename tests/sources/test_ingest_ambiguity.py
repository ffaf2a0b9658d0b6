"""Ambiguous ingest input is refused through ``wideml ingest``: exit 2, one short line, no traceback, nothing written.

A header naming the label or id column twice, two files for one sample, a
sample id given twice, an id column that cannot be told without
``--id-column``, a broken link among the scans, and a ';'-separated CSV read
with commas: each gets one sentence naming the problem and the fix.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from nifti_scans import make_scans
from wideml.cli.main import main
from wideml.exceptions import WidemlError
from wideml.storage import open_store
from wideml.sources.ingest import ingest

nib = pytest.importorskip("nibabel")


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """The CLI sets dask.config globally; keep every test independent."""


@pytest.fixture
def out_dir(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def refused(capsys, out_dir, *args, match=()):
    """Run ``wideml ingest ARGS -o out/store.zarr``; check exit 2, one short line, no traceback, nothing in ``out_dir``."""
    code = main(["ingest", *[str(a) for a in args], "-o", str(out_dir / "store.zarr")])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("wideml: error: "), err
    assert len(lines[0]) < 330, (len(lines[0]), lines[0])
    for text in match:
        assert text in lines[0], lines[0]
    assert list(out_dir.iterdir()) == []
    return lines[0]


@pytest.fixture
def scans(tmp_path):
    return make_scans(nib, tmp_path, n=6)


def test_participants_label_column_named_twice(scans, capsys, out_dir):
    lines = scans.participants.read_text().splitlines()
    scans.participants.write_text("\n".join([lines[0] + "\tgroup"] + [ln + "\tcontrol" for ln in lines[1:]]) + "\n")
    refused(capsys, out_dir, scans.folder, "--labels", scans.participants, "--label-column", "group",
            match=("2 columns named 'group'", "--label-column"))


def test_participants_id_column_named_twice(scans, capsys, out_dir):
    lines = scans.participants.read_text().splitlines()
    scans.participants.write_text("\n".join([lines[0] + "\tparticipant_id"] + [ln + "\tsub-99" for ln in lines[1:]]) + "\n")
    refused(capsys, out_dir, scans.folder, "--labels", scans.participants, "--label-column", "group",
            match=("2 columns named 'participant_id'", "--id-column"))
    refused(capsys, out_dir, scans.folder, "--labels", scans.participants, "--label-column", "group", "--id-column",
            "participant_id", match=("2 columns named 'participant_id'",))


def test_csv_label_and_id_columns_named_twice(tmp_path, capsys, out_dir):
    (tmp_path / "d.csv").write_text("id,a,label,b,label\ns1,1,x,2,y\ns2,3,y,4,x\ns3,5,x,6,y\n")
    refused(capsys, out_dir, tmp_path / "d.csv", "--label-column", "label", match=("2 columns named 'label'", "--label-column"))
    (tmp_path / "e.csv").write_text("id,a,label,id\ns1,1,x,t1\ns2,3,y,t2\ns3,5,x,t3\n")
    refused(capsys, out_dir, tmp_path / "e.csv", "--label-column", "label", "--id-column", "id",
            match=("2 columns named 'id'", "--id-column"))


def test_two_files_for_one_sample(scans, capsys, out_dir):
    img = nib.load(scans.folder / "sub-01_T1w.nii.gz")
    nib.save(img, scans.folder / "sub-01_T1w.nii")
    refused(capsys, out_dir, scans.folder, "--labels", scans.participants, "--label-column", "group",
            match=("sub-01_T1w.nii", "sub-01_T1w.nii.gz", "one file per sample"))


def test_two_npy_files_for_one_stem_are_not_two_samples(tmp_path, capsys, out_dir):
    folder = tmp_path / "f"
    folder.mkdir()
    for i in range(4):
        np.save(folder / f"s{i}.npy", np.arange(3.0) + i)
    with open(folder / "s1.NPY", "wb") as fh:  # np.save would append ".npy" to the name
        np.save(fh, np.arange(3.0))
    refused(capsys, out_dir, folder, "--unlabelled", match=("s1.NPY", "s1.npy"))


def test_duplicate_sample_ids_in_a_csv_id_column(tmp_path, capsys, out_dir):
    (tmp_path / "d.csv").write_text("id,a,label\ns1,1,x\ns2,3,y\ns1,5,x\ns4,6,y\n")
    refused(capsys, out_dir, tmp_path / "d.csv", "--label-column", "label", "--id-column", "id",
            match=("'s1'", "line 2, line 4"))


def test_duplicate_sample_ids_in_a_labels_file_and_in_python(tmp_path, capsys, out_dir):
    np.save(tmp_path / "x.npy", np.ones((4, 3)))
    (tmp_path / "lab.csv").write_text("id,label\na,x\nb,y\nc,x\nb,y\n")
    refused(capsys, out_dir, tmp_path / "x.npy", "--labels", tmp_path / "lab.csv", match=("'b'", "line 3, line 5"))
    with pytest.raises(WidemlError, match="sample id 'q'"):
        ingest(np.ones((3, 2)), out_dir / "p.zarr", sample_ids=["q", "r", "q"])
    assert list(out_dir.iterdir()) == []


def test_two_id_like_columns_both_naming_the_subjects_are_ambiguous(scans, capsys, out_dir):
    lines = scans.participants.read_text().splitlines()
    scans.participants.write_text("\n".join([lines[0] + "\tsubject"] + [ln + "\t" + ln.split("\t")[0] for ln in lines[1:]]) + "\n")
    refused(capsys, out_dir, scans.folder, "--labels", scans.participants, "--label-column", "group",
            match=("participant_id, subject", "--id-column"))


def test_the_one_id_like_column_whose_values_name_the_files_is_taken(scans, tmp_path):
    lines = scans.participants.read_text().splitlines()
    text = [lines[0] + "\tsubject"] + [ln + f"\tS{k}" for k, ln in enumerate(lines[1:])]
    scans.participants.write_text("\n".join(text) + "\n")
    ingest(scans.folder, tmp_path / "a.zarr", labels=scans.participants, label_column="group")
    np.testing.assert_array_equal(open_store(tmp_path / "a.zarr").y, scans.y)


def test_an_id_column_found_by_its_values_when_none_is_named_like_one(scans, tmp_path):
    rows = ["group\tage\tcode"] + [f"{y}\t{20 + i}\t{s}" for i, (s, y) in enumerate(zip(scans.subjects, scans.y))]
    (tmp_path / "t.tsv").write_text("\n".join(rows) + "\n")
    ingest(scans.folder, tmp_path / "b.zarr", labels=tmp_path / "t.tsv", label_column="group")
    np.testing.assert_array_equal(open_store(tmp_path / "b.zarr").y, scans.y)


def test_no_column_that_could_hold_the_ids(scans, tmp_path, capsys, out_dir):
    rows = ["age\tsite\tgroup"] + [f"{20 + i}\tA\t{y}" for i, y in enumerate(scans.y)]
    (tmp_path / "t.tsv").write_text("\n".join(rows) + "\n")
    refused(capsys, out_dir, scans.folder, "--labels", tmp_path / "t.tsv", "--label-column", "group",
            match=("age, site", "--id-column"))


def test_a_broken_link_is_named_with_its_target(scans, tmp_path, capsys, out_dir):
    target = tmp_path / "elsewhere" / "sub-02_T1w.nii.gz"
    (scans.folder / "sub-02_T1w.nii.gz").unlink()
    os.symlink(target, scans.folder / "sub-02_T1w.nii.gz")
    msg = refused(capsys, out_dir, scans.folder, "--labels", scans.participants, "--label-column", "group",
                  match=("sub-02_T1w.nii.gz", "broken link", str(target)))
    assert "no file" not in msg


def test_a_semicolon_separated_csv_gets_a_delimiter_hint(tmp_path, capsys, out_dir):
    names = [f"feature_with_a_long_name_{j:03d}" for j in range(50)] + ["label"]
    rows = [";".join(names)] + [";".join([str(float(j)) for j in range(50)] + ["ab"[i % 2]]) for i in range(6)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    refused(capsys, out_dir, tmp_path / "d.csv", "--label-column", "label", match=("looks ';'-separated", "--delimiter ';'"))
    assert main(["ingest", str(tmp_path / "d.csv"), "--label-column", "label", "--delimiter", ";", "-o",
                 str(tmp_path / "ok.zarr")]) == 0
    assert open_store(tmp_path / "ok.zarr").X.shape == (6, 50)


def test_a_semicolon_separated_participants_table_gets_a_hint(scans, capsys, out_dir):
    scans.participants.write_text(scans.participants.read_text().replace("\t", ";"))
    refused(capsys, out_dir, scans.folder, "--labels", scans.participants, "--label-column", "group",
            match=("looks ';'-separated", "tab-separated"))


def test_a_semicolon_separated_labels_file_gets_a_hint(tmp_path, capsys, out_dir):
    np.save(tmp_path / "x.npy", np.ones((4, 3)))
    (tmp_path / "lab.csv").write_text("id;label\na;x\nb;y\nc;x\nd;y\n")
    refused(capsys, out_dir, tmp_path / "x.npy", "--labels", tmp_path / "lab.csv", match=("looks ';'-separated",))
