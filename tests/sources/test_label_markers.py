"""Missing-label markers (NA, N/A, n/a, NaN, nan, null, None, empty, blank) are missing wherever labels are read.

Every label source (participants table, CSV label column, labels file for a
CSV, a folder or an array, labels given in Python) refuses them in one short
sentence naming the first rows/ids and the fix, or, with ``drop_unlabelled``,
leaves those samples out; never does "NA" become a class.
"""

from __future__ import annotations

import numpy as np
import pytest

from nifti_scans import make_scans
from wideml.exceptions import WidemlError
from wideml.storage import check_labels, open_store
from wideml.sources.ingest import ingest
from wideml.storage.labels import normalise_labels

MARKERS = ["NA", "na", "N/A", "NaN", "nan", "null", "NULL", "None", "none", "  "]


def short(message: str) -> str:
    assert len(message) < 300, (len(message), message)
    assert "\n" not in message
    return message


@pytest.fixture
def table(tmp_path):
    """A CSV source: 8 rows, features f0..f2, a label column and an id column."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 3))
    y = np.array(["a", "b"] * 4)
    return X, y, tmp_path


def write_csv(path, X, labels, ids=None):
    head = "id," if ids is not None else ""
    lines = [head + "f0,f1,f2,label"]
    for i, (row, lab) in enumerate(zip(X, labels)):
        lines.append((f"{ids[i]}," if ids is not None else "") + ",".join(repr(float(v)) for v in row) + f",{lab}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("marker", MARKERS)
def test_csv_label_column_marker_is_refused_naming_the_line(table, marker):
    X, y, tmp = table
    labels = y.copy().astype(object)
    labels[2] = marker
    src = write_csv(tmp / "d.csv", X, labels)
    with pytest.raises(WidemlError, match="1 missing label.*line 4.*--drop-unlabelled") as err:
        ingest(src, tmp / "o.zarr", label_column="label")
    short(str(err.value))
    assert not (tmp / "o.zarr").exists()


def test_csv_label_column_drop_unlabelled_leaves_the_rows_out(table):
    X, y, tmp = table
    labels = y.copy().astype(object)
    labels[[1, 6]] = ["NA", "null"]
    ids = [f"s{i}" for i in range(8)]
    src = write_csv(tmp / "d.csv", X, labels, ids)
    ingest(src, tmp / "o.zarr", label_column="label", id_column="id", drop_unlabelled=True)
    store = open_store(tmp / "o.zarr")
    keep = [0, 2, 3, 4, 5, 7]
    np.testing.assert_allclose(store.X.compute(), X[keep])
    np.testing.assert_array_equal(store.y, y[keep])
    np.testing.assert_array_equal(store.sample_ids, np.array(ids)[keep])


def test_many_missing_labels_give_a_short_sentence_with_and_n_more(table):
    X, y, tmp = table
    X = np.tile(X, (20, 1))
    labels = np.array(["NA"] * len(X), dtype=object)
    labels[:2] = ["a", "b"]
    src = write_csv(tmp / "d.csv", X, labels)
    with pytest.raises(WidemlError, match="158 missing label.*and 153 more") as err:
        ingest(src, tmp / "o.zarr", label_column="label")
    short(str(err.value))


def test_labels_file_for_a_csv_source_refuses_and_drops(table):
    X, y, tmp = table
    src = write_csv(tmp / "d.csv", X, y)
    (tmp / "lab.csv").write_text("label\n" + "\n".join(["a", "b", "N/A", "a", "b", "None", "a", "b"]) + "\n")
    src.write_text("\n".join(line.rsplit(",", 1)[0] for line in src.read_text().splitlines()) + "\n")
    with pytest.raises(WidemlError, match="2 missing label.*line 4, line 7.*--drop-unlabelled") as err:
        ingest(src, tmp / "o.zarr", labels=tmp / "lab.csv")
    short(str(err.value))
    ingest(src, tmp / "o.zarr", labels=tmp / "lab.csv", drop_unlabelled=True)
    store = open_store(tmp / "o.zarr")
    keep = [0, 1, 3, 4, 6, 7]
    np.testing.assert_allclose(store.X.compute(), X[keep])
    np.testing.assert_array_equal(store.y, np.array(["a", "b", "a", "b", "a", "b"]))


@pytest.fixture
def npy_folder(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((6, 4)).astype(np.float32)
    folder = tmp_path / "f"
    folder.mkdir()
    for i, row in enumerate(X):
        np.save(folder / f"s{i}.npy", row)
    return folder, X


def test_two_column_labels_file_for_a_folder_refuses_naming_the_ids_and_drops(npy_folder, tmp_path):
    folder, X = npy_folder
    (tmp_path / "lab.csv").write_text("file,label\n" + "".join(f"s{i},{'NA' if i == 3 else 'ab'[i % 2]}\n" for i in range(6)))
    with pytest.raises(WidemlError, match="1 missing label.*s3.*--drop-unlabelled"):
        ingest(folder, tmp_path / "o.zarr", labels=tmp_path / "lab.csv")
    ingest(folder, tmp_path / "o.zarr", labels=tmp_path / "lab.csv", drop_unlabelled=True)
    store = open_store(tmp_path / "o.zarr")
    np.testing.assert_array_equal(store.sample_ids, ["s0", "s1", "s2", "s4", "s5"])
    np.testing.assert_array_equal(store.X.compute(), X[[0, 1, 2, 4, 5]])
    assert "NA" not in set(store.y.tolist())


def test_one_column_labels_file_for_a_folder_drops_those_files(npy_folder, tmp_path):
    folder, X = npy_folder
    (tmp_path / "lab.txt").write_text("a\nnull\nb\na\nb\nnan\n")
    with pytest.raises(WidemlError, match="2 missing label.*line 2, line 6"):
        ingest(folder, tmp_path / "o.zarr", labels=tmp_path / "lab.txt")
    ingest(folder, tmp_path / "o.zarr", labels=tmp_path / "lab.txt", drop_unlabelled=True)
    store = open_store(tmp_path / "o.zarr")
    np.testing.assert_array_equal(store.sample_ids, ["s0", "s2", "s3", "s4"])
    np.testing.assert_array_equal(store.y, ["a", "b", "a", "b"])


def test_array_source_refuses_na_labels_and_cannot_drop_rows(tmp_path):
    X = np.arange(24, dtype=np.float32).reshape(6, 4)
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "lab.csv").write_text("label\n1\n2\nNA\n1\n2\n1\n")
    with pytest.raises(WidemlError, match="1 missing label.*line 4"):
        ingest(tmp_path / "x.npy", tmp_path / "o.zarr", labels=tmp_path / "lab.csv")
    with pytest.raises(WidemlError, match="cannot leave rows out of an array source"):
        ingest(tmp_path / "x.npy", tmp_path / "o.zarr", labels=tmp_path / "lab.csv", drop_unlabelled=True)
    with pytest.raises(WidemlError, match="1 missing label.*sample 2"):
        ingest(X, tmp_path / "o.zarr", labels=["a", "b", "N/A", "a", "b", "a"])
    assert not (tmp_path / "o.zarr").exists()


def test_drop_unlabelled_without_labels_is_refused(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((4, 2)))
    with pytest.raises(WidemlError, match="no labels were given"):
        ingest(tmp_path / "x.npy", tmp_path / "o.zarr", drop_unlabelled=True)


@pytest.mark.parametrize("marker", MARKERS)
def test_python_labels_given_as_strings_refuse_markers(marker):
    y = np.array(["a", "b", marker, "a"], dtype=object)
    with pytest.raises(WidemlError, match="a missing value .* at sample 2;") as err:
        check_labels(y, 4)
    short(str(err.value))
    with pytest.raises(WidemlError, match="missing value"):
        normalise_labels(np.array(["a", "b", marker, "a"]))


def test_python_labels_with_many_markers_name_the_first_samples():
    y = np.array(["a", "b"] + ["NA"] * 20, dtype=object)
    with pytest.raises(WidemlError, match="20 missing values .*samples 2, 3, 4, 5, 6 and 15 more") as err:
        check_labels(y, 22)
    short(str(err.value))


def test_python_labels_that_merely_contain_na_are_classes():
    np.testing.assert_array_equal(normalise_labels(["NAC", "nan2", "a"]), ["NAC", "nan2", "a"])


nib = pytest.importorskip("nibabel")


@pytest.fixture
def scans(tmp_path):
    return make_scans(nib, tmp_path, n=6)


@pytest.mark.parametrize("marker", ["NA", "null", "None", "N/A", "NULL"])
def test_participants_markers_are_missing_labels(scans, tmp_path, marker):
    text = scans.participants.read_text().replace("sub-03\t23\tpatient", f"sub-03\t23\t{marker}")
    assert marker in text
    scans.participants.write_text(text)
    with pytest.raises(WidemlError, match="1 file\\(s\\) have a missing label.*sub-03_T1w.*--drop-unlabelled") as err:
        ingest(scans.folder, tmp_path / "o.zarr", labels=scans.participants, label_column="group")
    short(str(err.value))
    ingest(scans.folder, tmp_path / "o.zarr", labels=scans.participants, label_column="group", drop_unlabelled=True)
    store = open_store(tmp_path / "o.zarr")
    keep = [0, 1, 2, 4, 5]
    np.testing.assert_array_equal(store.y, scans.y[keep])
    np.testing.assert_array_equal(store.X.compute(), scans.vols[keep].reshape(5, -1))


def test_one_column_labels_for_a_nifti_folder_drop_those_volumes(scans, tmp_path):
    (tmp_path / "lab.csv").write_text("label\n" + "\n".join(["control", "patient", "NA", "patient", "control", "patient"]) + "\n")
    with pytest.raises(WidemlError, match="1 missing label.*line 4"):
        ingest(scans.folder, tmp_path / "o.zarr", labels=tmp_path / "lab.csv")
    ingest(scans.folder, tmp_path / "o.zarr", labels=tmp_path / "lab.csv", drop_unlabelled=True)
    store = open_store(tmp_path / "o.zarr")
    keep = [0, 1, 3, 4, 5]
    np.testing.assert_array_equal(store.sample_ids, [f"sub-{i:02d}_T1w" for i in keep])
    np.testing.assert_array_equal(store.X.compute(), scans.vols[keep].reshape(5, -1))
