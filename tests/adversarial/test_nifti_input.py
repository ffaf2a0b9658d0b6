"""Adversarial NIfTI folders through ``wideml ingest``: the right store, or one sentence and exit 2.

Each bad input (another grid or affine in a volume or in the mask, an empty
mask, a 5-D file, a participants table without the column, subjects without a
label, participants without a file) ends in exit 2, one ``wideml: error:``
sentence naming the file and the fix, no traceback, and nothing written.
Most cases run the CLI in-process (fast); the end-to-end path and one refusal
run it as a user does, in a fresh interpreter.
"""

from __future__ import annotations

import csv
import subprocess

import numpy as np
import pytest

from adversarial.harness import assert_no_debris, assert_refused, run_cli
from nifti_scans import GRID, make_scans, rotated_affine, save
from wideml import LOL, EmbeddingClassifier, open_store, save_model
from wideml.cli.main import main

nib = pytest.importorskip("nibabel")


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """The CLI sets dask.config globally; keep every test independent."""


@pytest.fixture
def scans(tmp_path):
    return make_scans(nib, tmp_path / "in")


def cli(capsys, *args) -> subprocess.CompletedProcess:
    """``wideml ARGS`` in this process, as a CompletedProcess for the harness's judges."""
    code = main([str(a) for a in args] + ["--no-progress"])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def refused(capsys, scans, tmp_path, *words, extra=(), folder=None, labels=True):
    """Ingest with the brain mask and the participants table (unless changed) and judge the refusal."""
    out = tmp_path / "out.zarr"
    lab = ["--labels", scans.participants, "--label-column", "group"] if labels else ["--unlabelled"]
    proc = cli(capsys, "ingest", folder or scans.folder, "-o", out, *lab, *extra)
    msg = assert_refused(proc, *words)
    assert not out.exists()
    assert_no_debris(tmp_path)
    return msg


def test_end_to_end_cli_with_mask_and_participants(scans, tmp_path):
    """The interface the benchmarks use, in a fresh interpreter: store == volume[mask], labels by subject id."""
    out = tmp_path / "store.zarr"
    proc = run_cli("ingest", scans.folder, "--mask", scans.mask_file, "--labels", scans.participants, "--label-column", "group",
                   "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"mask of {int(scans.mask.sum())} voxels (of {int(np.prod(GRID))})" in proc.stdout
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), np.stack([v[scans.mask] for v in scans.vols]))
    np.testing.assert_array_equal(store.y, scans.y)
    np.testing.assert_allclose(store.spatial.affine, scans.affine, atol=1e-6)


def test_volume_with_another_affine_is_refused_in_a_fresh_process(scans, tmp_path):
    save(nib, scans.vols[7], rotated_affine(angle=0.1), scans.folder / "sub-07_T1w.nii.gz")
    out = tmp_path / "out.zarr"
    proc = run_cli("ingest", scans.folder, "--mask", "auto", "--labels", scans.participants, "--label-column", "group",
                   "-o", out, cwd=tmp_path)
    assert_refused(proc, "sub-07_T1w.nii.gz", "affine", "resample")
    assert not out.exists()
    assert_no_debris(tmp_path)


def test_mask_of_another_shape(scans, tmp_path, capsys):
    save(nib, np.ones((8, 9, 6), np.uint8), scans.affine, tmp_path / "small.nii.gz")
    refused(capsys, scans, tmp_path, "small.nii.gz", "grid (8, 9, 6)", "resample", extra=("--mask", tmp_path / "small.nii.gz"))


def test_mask_with_another_affine(scans, tmp_path, capsys):
    save(nib, scans.mask.astype(np.uint8), rotated_affine(offset=(0.0, 0.0, 0.0)), tmp_path / "moved.nii.gz")
    refused(capsys, scans, tmp_path, "moved.nii.gz", "affine", extra=("--mask", tmp_path / "moved.nii.gz"))


def test_empty_mask(scans, tmp_path, capsys):
    save(nib, np.zeros(GRID, np.uint8), scans.affine, tmp_path / "empty.nii.gz")
    refused(capsys, scans, tmp_path, "empty.nii.gz", "no non-zero voxel", extra=("--mask", tmp_path / "empty.nii.gz"))


def test_volume_of_another_grid(scans, tmp_path, capsys):
    save(nib, np.ones((8, 9, 8), np.float32), scans.affine, scans.folder / "sub-03_T1w.nii.gz")
    refused(capsys, scans, tmp_path, "sub-03_T1w.nii.gz", "grid (8, 9, 8)", "sub-00_T1w.nii.gz", extra=("--mask", "auto"))


def test_five_d_file(scans, tmp_path, capsys):
    save(nib, np.ones(GRID + (2, 2), np.float32), scans.affine, scans.folder / "sub-99_dwi.nii.gz")
    refused(capsys, scans, tmp_path, "sub-99_dwi.nii.gz", "5-D", labels=False)


def test_participants_without_the_named_column(scans, tmp_path, capsys):
    out = tmp_path / "out.zarr"
    proc = cli(capsys, "ingest", scans.folder, "-o", out, "--labels", scans.participants, "--label-column", "diagnosis")
    assert_refused(proc, "no column 'diagnosis'", "participant_id, age, group", "--label-column")
    assert not out.exists()


def test_subjects_without_a_label_and_ids_without_a_file(scans, tmp_path, capsys):
    lines = scans.participants.read_text().splitlines()
    kept = [lines[0]] + [ln for ln in lines[1:] if not ln.startswith(("sub-04\t", "sub-09\t"))] + ["sub-42\t50\tpatient"]
    scans.participants.write_text("\n".join(kept) + "\n")
    msg = refused(capsys, scans, tmp_path, "2 file(s) have no row", "sub-04_T1w.nii.gz", "sub-09_T1w.nii.gz",
                  "1 participant id(s) have no file", "sub-42", "--drop-unlabelled")
    assert "sub-05_T1w" not in msg


def test_na_labels_are_refused_naming_the_files(scans, tmp_path, capsys):
    text = scans.participants.read_text().replace("\tcontrol\n", "\tn/a\n", 2)
    scans.participants.write_text(text)
    refused(capsys, scans, tmp_path, "2 file(s) have a missing label", "n/a", "--drop-unlabelled")


def test_participant_listed_twice(scans, tmp_path, capsys):
    with scans.participants.open("a") as fh:
        fh.write("01\t33\tpatient\n")
    refused(capsys, scans, tmp_path, "'01' is listed twice")


def test_auto_mask_with_no_voxel_common_to_all_samples(scans, tmp_path, capsys):
    save(nib, np.where(scans.mask, 0.0, 1.0).astype(np.float32), scans.affine, scans.folder / "sub-00_T1w.nii.gz")
    refused(capsys, scans, tmp_path, "no voxel is non-zero in every one of the 12 samples", "--mask FILE",
            extra=("--mask", "auto"))


def test_mask_for_a_source_that_is_not_a_nifti_folder(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("a,b,label\n1,2,x\n3,4,y\n")
    proc = cli(capsys, "ingest", tmp_path / "d.csv", "-o", tmp_path / "o.zarr", "--label-column", "label", "--mask", "auto")
    assert_refused(proc, "--mask", "only applies to a folder of NIfTI")
    assert not (tmp_path / "o.zarr").exists()


def test_predict_refuses_data_from_another_affine_and_accepts_the_same_space(scans, tmp_path, capsys):
    """A model trained on a masked store predicts a store of the same space as the in-memory oracle, and refuses one
    whose affine differs (same mask, same p)."""
    common = ["--labels", scans.participants, "--label-column", "group", "--mask", scans.mask_file]
    assert cli(capsys, "ingest", scans.folder, "-o", tmp_path / "train.zarr", *common).returncode == 0
    assert cli(capsys, "ingest", scans.folder, "-o", tmp_path / "same.zarr", *common).returncode == 0
    moved = tmp_path / "moved"
    moved.mkdir()
    aff = rotated_affine(offset=(-10.0, 4.0, 12.0))
    for s, v in zip(scans.subjects, scans.vols):
        save(nib, v, aff, moved / f"{s}_T1w.nii.gz")
    save(nib, scans.mask.astype(np.uint8), aff, tmp_path / "moved_mask.nii.gz")
    assert cli(capsys, "ingest", moved, "-o", tmp_path / "moved.zarr", "--labels", scans.participants, "--label-column",
               "group", "--mask", tmp_path / "moved_mask.nii.gz").returncode == 0
    model = tmp_path / "model.zarr"
    save_model(EmbeddingClassifier(LOL(2)).fit(open_store(tmp_path / "train.zarr")), model)
    X = np.stack([v[scans.mask] for v in scans.vols])
    oracle = EmbeddingClassifier(LOL(2)).fit(X, scans.y).predict(X)
    proc = cli(capsys, "predict", model, tmp_path / "same.zarr", "-o", tmp_path / "same.csv")
    assert proc.returncode == 0, proc.stderr
    got = [row[1] for row in csv.reader((tmp_path / "same.csv").read_text().splitlines()[1:])]
    np.testing.assert_array_equal(got, oracle)
    assert_refused(cli(capsys, "predict", model, tmp_path / "moved.zarr", "-o", tmp_path / "moved.csv"), "spatial reference")
    assert not (tmp_path / "moved.csv").exists()


def test_relative_folder_mask_and_labels_on_a_real_cluster_give_volume_at_mask(scans, dask_cluster):
    """Ingest (mask file and --mask auto), fit and maps with relative paths, run from the scans' folder on a
    real scheduler whose workers sit in another directory: the store equals vol[mask], the maps read back."""
    where = scans.folder.parent
    common = ["--labels", "participants.tsv", "--label-column", "group", "--scheduler", dask_cluster["address"],
              "--memory-limit", "8KiB"]  # the two-stage path: the row blocks are read on the workers
    tiny = {"WIDEML_TEST_MEMORY_FLOOR": "1"}  # test hook: a budget far below the 64 MiB users may set
    proc = run_cli("ingest", "scans", "--mask", "brain_mask.nii.gz", "-o", "m.zarr", *common, cwd=where, env=tiny)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("ingest", "scans", "--mask", "auto", "-o", "a.zarr", *common, cwd=where, env=tiny)
    assert proc.returncode == 0, proc.stderr
    m, a = open_store(where / "m.zarr"), open_store(where / "a.zarr")
    np.testing.assert_array_equal(m.X.compute(), np.stack([v[scans.mask] for v in scans.vols]))
    np.testing.assert_array_equal(m.y, scans.y)
    auto = np.all(scans.vols != 0, axis=0)
    np.testing.assert_array_equal(a.spatial.mask, auto)
    np.testing.assert_array_equal(a.X.compute(), np.stack([v[auto] for v in scans.vols]))
    proc = run_cli("fit", "lol", "m.zarr", "--n-components", "2", "-o", "m.model", "--scheduler", dask_cluster["address"], cwd=where)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("maps", "m.model", "-o", "maps", "--png", "none", "--scheduler", dask_cluster["address"], cwd=where)
    assert proc.returncode == 0, proc.stderr
    diff = nib.load(where / "maps" / "mean_difference.nii.gz")
    np.testing.assert_allclose(diff.affine, scans.affine, atol=1e-5)
    truth = scans.vols[scans.y == "patient"].mean(0) - scans.vols[scans.y == "control"].mean(0)
    np.testing.assert_allclose(diff.get_fdata()[scans.mask], truth[scans.mask], atol=1e-4)
    assert (diff.get_fdata()[~scans.mask] == 0).all()
    assert_no_debris(where)
