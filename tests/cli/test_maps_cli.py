"""`wideml maps MODEL -o DIR` end to end: files written, the manifest, refusals (exit 2, one sentence)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import map_fixtures as mf
from adversarial.harness import assert_no_debris, assert_refused, run_cli
from wideml import LOL, EmbeddingClassifier, open_store, save_model

nib = pytest.importorskip("nibabel")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("maps_cli")
    mf.masked_store(folder / "s.zarr")
    save_model(EmbeddingClassifier(LOL(n_components=2, robust_first=False)).fit(open_store(folder / "s.zarr")), folder / "m.zarr")
    return folder / "m.zarr"


def test_maps_command_writes_images_tables_and_manifest(model_path, tmp_path):
    proc = run_cli("maps", model_path, "-o", tmp_path / "maps", "--top", "4", "--png", "matplotlib")
    assert proc.returncode == 0, proc.stderr
    assert "sign convention: positive = higher in the second class" in proc.stdout
    man = json.loads((tmp_path / "maps" / "maps.json").read_text())
    names = [m["name"] for m in man["maps"]]
    assert names == ["direction_1", "direction_2", "class_mean_0", "class_mean_1", "mean_difference", "discriminant_weights"]
    for name in names:
        for suffix in (".nii.gz", "_top.tsv", ".png"):
            assert (tmp_path / "maps" / f"{name}{suffix}").is_file()
    assert len((tmp_path / "maps" / "direction_1_top.tsv").read_text().splitlines()) == 5
    img = nib.load(tmp_path / "maps" / "mean_difference.nii.gz")
    assert img.shape == mf.GRID and np.allclose(img.affine, mf.reference().affine)
    assert_no_debris(tmp_path)


def test_existing_output_refused_without_overwrite(model_path, tmp_path):
    out = tmp_path / "maps"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    refused = run_cli("maps", model_path, "-o", out, "--png", "none")  # not wideml's: the real fix, not "pass --overwrite"
    assert_refused(refused, "cannot prove it wrote it", "remove or rename it")
    assert "pass --overwrite" not in refused.stderr
    assert (out / "keep.txt").read_text() == "mine"
    # a folder wideml did not write is never replaced, --overwrite or not (issue 22)
    assert_refused(run_cli("maps", model_path, "-o", out, "--png", "none", "--overwrite"), "cannot prove it wrote it")
    assert (out / "keep.txt").read_text() == "mine"
    ours = tmp_path / "maps2"
    assert run_cli("maps", model_path, "-o", ours, "--png", "none").returncode == 0
    proc = run_cli("maps", model_path, "-o", ours, "--png", "none", "--overwrite")  # wideml's own maps: replaced
    assert proc.returncode == 0, proc.stderr
    assert (ours / "maps.json").is_file()
    assert_no_debris(tmp_path)


def test_missing_model_refused(tmp_path):
    assert_refused(run_cli("maps", tmp_path / "nope.zarr", "-o", tmp_path / "maps"), "no model")
    assert not (tmp_path / "maps").exists()
