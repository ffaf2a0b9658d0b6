"""Bad input to ingest: one WidemlError sentence naming the problem, and nothing written."""

from __future__ import annotations

import sys

import h5py
import numpy as np
import pytest

from wideml.exceptions import WidemlError
from wideml.sources.ingest import ingest


def assert_fails(source, out, match, assert_no_output, **kwargs):
    with pytest.raises(WidemlError, match=match) as info:
        ingest(source, out, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message.endswith((".", ")")), message
    assert_no_output(out)
    return message


def test_missing_source(tmp_path, assert_no_output):
    assert_fails(tmp_path / "nope.npy", tmp_path / "out.zarr", "does not exist", assert_no_output)


def test_unknown_file_kind(tmp_path, assert_no_output):
    (tmp_path / "data.bin").write_bytes(b"\x00" * 10)
    assert_fails(tmp_path / "data.bin", tmp_path / "out.zarr", "cannot tell what kind", assert_no_output)


@pytest.mark.parametrize("shape, match", [((7,), "1-D"), ((4, 3, 2), "3-D.*folder of per-sample volumes")])
def test_wrong_dimensions(tmp_path, assert_no_output, shape, match):
    np.save(tmp_path / "x.npy", np.zeros(shape))
    assert_fails(tmp_path / "x.npy", tmp_path / "out.zarr", match, assert_no_output)
    assert_fails(np.zeros(shape), tmp_path / "out.h5", match, assert_no_output)


def test_non_numeric_arrays(tmp_path, assert_no_output):
    np.save(tmp_path / "s.npy", np.array([["a", "b"], ["c", "d"]]))
    assert_fails(tmp_path / "s.npy", tmp_path / "out.zarr", "not numeric", assert_no_output)
    np.save(tmp_path / "o.npy", np.array([[1, None]], dtype=object), allow_pickle=True)
    assert_fails(tmp_path / "o.npy", tmp_path / "out.zarr", "not numeric", assert_no_output)


def test_non_numeric_csv_cell(tmp_path, assert_no_output):
    (tmp_path / "d.csv").write_text("1,2,3\n4,oops,6\n7,8,9\n")
    msg = assert_fails(tmp_path / "d.csv", tmp_path / "out.zarr", "non-numeric value 'oops' at line 2, column 2", assert_no_output)
    assert "--label-column" in msg


def test_empty_csv_cell(tmp_path, assert_no_output):
    (tmp_path / "d.csv").write_text("1,2,3\n4,,6\n")
    assert_fails(tmp_path / "d.csv", tmp_path / "out.zarr", "empty cell at line 2", assert_no_output)


def test_ragged_csv(tmp_path, assert_no_output):
    (tmp_path / "d.csv").write_text("1,2,3\n4,5\n")
    assert_fails(tmp_path / "d.csv", tmp_path / "out.zarr", "line 2 .* has 2 values", assert_no_output)


def test_csv_unknown_label_column(tmp_path, assert_no_output):
    (tmp_path / "d.csv").write_text("a,b,label\n1,2,x\n3,4,y\n")
    assert_fails(tmp_path / "d.csv", tmp_path / "out.zarr", "no column 'dx'", assert_no_output, label_column="dx")


def test_labels_length_mismatch(tmp_path, assert_no_output):
    X = np.zeros((5, 3))
    assert_fails(X, tmp_path / "out.zarr", "4 entries but X has 5 samples", assert_no_output, labels=[0, 1, 0, 1])
    (tmp_path / "labels.csv").write_text("0\n1\n0\n1\n0\n1\n")
    assert_fails(X, tmp_path / "out.zarr", "6 entries but X has 5 samples", assert_no_output, labels=tmp_path / "labels.csv")


def test_one_class(tmp_path, assert_no_output):
    msg = assert_fails(np.zeros((4, 3)), tmp_path / "out.zarr", "only one class", assert_no_output, labels=[1, 1, 1, 1])
    assert "--unlabelled" in msg


def test_existing_output_needs_overwrite(tmp_path):
    ingest(np.zeros((4, 3)), tmp_path / "out.zarr", labels=[0, 1, 0, 1])
    with pytest.raises(WidemlError, match="--overwrite"):
        ingest(np.ones((4, 3)), tmp_path / "out.zarr", labels=[0, 1, 0, 1])


def test_hdf5_needs_a_dataset_name(tmp_path, assert_no_output):
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["a"] = np.zeros((3, 2))
        f["b"] = np.zeros((3, 2))
    assert_fails(tmp_path / "f.h5", tmp_path / "out.zarr", "2 datasets .* --dataset", assert_no_output)
    assert_fails(tmp_path / "f.h5", tmp_path / "out.zarr", "no dataset 'c'", assert_no_output, dataset="c")


def test_options_for_another_source_kind(tmp_path, assert_no_output):
    assert_fails(np.zeros((4, 2)), tmp_path / "out.zarr", "only applies to a CSV", assert_no_output, label_column=0)


def test_folder_without_sample_files(tmp_path, assert_no_output):
    (tmp_path / "empty").mkdir()
    assert_fails(tmp_path / "empty", tmp_path / "out.zarr", "no .npy or .nii", assert_no_output)


def test_folder_with_mismatched_shapes(tmp_path, assert_no_output):
    folder = tmp_path / "s"
    folder.mkdir()
    np.save(folder / "a.npy", np.zeros((2, 3)))
    np.save(folder / "b.npy", np.zeros((3, 2)))
    assert_fails(folder, tmp_path / "out.zarr", "same shape", assert_no_output)


def test_folder_mixing_kinds(tmp_path, assert_no_output):
    folder = tmp_path / "s"
    folder.mkdir()
    np.save(folder / "a.npy", np.zeros(3))
    (folder / "b.nii").write_bytes(b"")
    assert_fails(folder, tmp_path / "out.zarr", "mixes", assert_no_output)


def test_labels_name_missing_files(tmp_path, assert_no_output):
    folder = tmp_path / "s"
    folder.mkdir()
    for name in ("a", "b"):
        np.save(folder / f"{name}.npy", np.zeros(3))
    (tmp_path / "labels.csv").write_text("a,0\nb,1\nc,1\n")
    assert_fails(folder, tmp_path / "out.zarr", "no file in the folder \\(c\\)", assert_no_output, labels=tmp_path / "labels.csv")


def test_nifti_without_nibabel(tmp_path, assert_no_output, monkeypatch):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "a.nii.gz").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "nibabel", None)  # import nibabel now raises ImportError
    assert_fails(folder, tmp_path / "out.zarr", r"install wideml\[neuro\]", assert_no_output)


def test_single_nifti_file(tmp_path, assert_no_output):
    (tmp_path / "a.nii.gz").write_bytes(b"")
    assert_fails(tmp_path / "a.nii.gz", tmp_path / "out.zarr", "one sample", assert_no_output)


def test_failure_mid_write_leaves_nothing(tmp_path, assert_no_output, monkeypatch):
    """A crash during the (two-stage) copy removes the output and the temporary store."""
    from wideml.storage import rechunk as rechunk_mod

    folder = tmp_path / "s"
    folder.mkdir()
    for i in range(12):
        np.save(folder / f"s{i:02d}.npy", np.full(40, i, dtype=np.float32))

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(rechunk_mod, "copy_region", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingest(folder, tmp_path / "out.zarr", memory_limit="2KiB")
    assert_no_output(tmp_path / "out.zarr")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]
