"""Round trips of every ingest source into zarr and HDF5 stores: values, labels, ids and feature_shape identical."""

from __future__ import annotations

import gzip

import h5py
import numpy as np
import pytest
import zarr

from conftest import store_name
from wideml.storage import open_store
from wideml.sources import rows as ingest_rows
from wideml.sources.ingest import ingest, output_dtype

#: A budget small enough that the small test data takes the two-stage (temporary store) path.
TIGHT = "8KiB"


def check(out, X, y=None, *, sample_ids=None, feature_ids=None, feature_shape=None, full_height=True):
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), X)
    if y is None:
        assert store.y is None
    else:
        np.testing.assert_array_equal(store.y, y)
    if sample_ids is not None:
        np.testing.assert_array_equal(store.sample_ids, sample_ids)
    if feature_ids is not None:
        np.testing.assert_array_equal(store.feature_ids, feature_ids)
    assert store.feature_shape == (tuple(feature_shape) if feature_shape is not None else None)
    if full_height:
        assert store.stored_chunks[0] == store.n_samples
    return store


@pytest.fixture
def two_stage_spy(monkeypatch):
    """Records whether the row pipeline went through a temporary sample-chunked store."""
    calls = []
    real = ingest_rows.temp_sibling

    def spy(out, tag):
        calls.append(tag)
        return real(out, tag)

    monkeypatch.setattr(ingest_rows, "temp_sibling", spy)
    return calls


def test_numpy_array(tmp_path, fmt, small_xy, no_leftovers):
    X, y = small_xy
    out = tmp_path / store_name(fmt)
    assert ingest(X, out, labels=y, feature_chunk=10) == out
    store = check(out, X, y)
    assert store.stored_chunks == (24, 10)
    assert store.attrs["source"] == "ndarray"
    no_leftovers(out)


def test_npy_memmap_small_budget(tmp_path, fmt, small_xy):
    X, y = small_xy
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / store_name(fmt)
    ingest(str(tmp_path / "x.npy"), out, labels=y, memory_limit=TIGHT)
    store = check(out, X, y)
    assert store.stored_chunks[1] < X.shape[1]  # the budget forced several feature chunks


def test_npy_integers_upcast(tmp_path, fmt, rng):
    X = rng.integers(-5, 5, size=(10, 6)).astype(np.int16)
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / store_name(fmt)
    ingest(tmp_path / "x.npy", out, labels=np.arange(10) % 2)
    store = check(out, X.astype(np.float32), np.arange(10) % 2)
    assert store.dtype == np.float32


def test_output_dtype_rules():
    assert output_dtype(np.float64) == np.float64
    assert output_dtype(np.float16) == np.float32
    assert output_dtype(np.uint8) == np.float32
    assert output_dtype(np.int64) == np.float64
    assert output_dtype(np.float64, "float32") == np.float32


@pytest.mark.parametrize("how", ["spec", "option", "only-dataset"])
def test_hdf5_dataset(tmp_path, fmt, small_xy, how):
    X, y = small_xy
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        # chunked along samples, compressed: the copy must still come out in full-height chunks
        f.create_dataset("grp/data", data=X, chunks=(5, 37), compression="gzip")
        if how != "only-dataset":
            f.create_dataset("other", data=np.zeros(3))
    out = tmp_path / store_name(fmt)
    if how == "spec":
        ingest(f"{src}:/grp/data", out, labels=y, memory_limit=TIGHT)
    elif how == "option":
        ingest(src, out, labels=y, dataset="grp/data")
    else:
        ingest(src, out, labels=y)
    check(out, X, y)


def test_zarr_array_source(tmp_path, fmt, small_xy):
    X, y = small_xy
    arr = zarr.create_array(str(tmp_path / "arr.zarr"), shape=X.shape, chunks=(8, 16), dtype="float32")
    arr[:] = X
    out = tmp_path / store_name(fmt)
    ingest(tmp_path / "arr.zarr", out, labels=y)
    check(out, X, y)


def test_zarr_v2_group_with_labels_array(tmp_path, fmt, small_xy):
    """The conversion open_store suggests for zarr v2 stores: X from the group, labels from its y array."""
    X, y = small_xy
    group = zarr.open_group(str(tmp_path / "old.zarr"), mode="w", zarr_format=2)
    group.create_array("X", shape=X.shape, chunks=(6, 10), dtype="float32")[:] = X
    group.create_array("y", shape=y.shape, dtype="int64")[:] = y
    out = tmp_path / store_name(fmt)
    ingest(tmp_path / "old.zarr", out, labels=tmp_path / "old.zarr" / "y")
    check(out, X, y)


def _write_csv(path, X, *, header=None, labels=None, ids=None, delimiter=","):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        if header is not None:
            f.write(delimiter.join(header) + "\n")
        for i, row in enumerate(X):
            cells = ([str(ids[i])] if ids is not None else []) + [repr(float(v)) for v in row]
            if labels is not None:
                cells.insert(1 if ids is not None else 0, str(labels[i]))
            f.write(delimiter.join(cells) + "\n")
            if i == 3:
                f.write("\n")  # blank lines are skipped


@pytest.mark.parametrize("memory", [None, TIGHT], ids=["in-memory", "two-stage"])
def test_csv_with_header_label_and_id_columns(tmp_path, fmt, rng, memory, two_stage_spy):
    X = rng.standard_normal((24, 37))
    y = np.array(["case", "control"] * 12)
    ids = np.array([f"s{i:02d}" for i in range(24)])
    names = [f"g{j}" for j in range(37)]
    _write_csv(tmp_path / "d.csv", X, header=["sample", "dx"] + names, labels=y, ids=ids)
    out = tmp_path / store_name(fmt)
    ingest(tmp_path / "d.csv", out, label_column="dx", id_column="sample", memory_limit=memory)
    store = check(out, X, y, sample_ids=ids, feature_ids=names)
    assert store.dtype == np.float64  # CSV text is parsed losslessly by default
    assert bool(two_stage_spy) == (memory is not None)


@pytest.mark.parametrize("memory", [None, TIGHT], ids=["in-memory", "two-stage"])
def test_tsv_gz_no_header_labels_file(tmp_path, fmt, rng, memory):
    X = rng.standard_normal((24, 37)).astype(np.float32)
    y = np.arange(24) % 2
    _write_csv(tmp_path / "d.tsv.gz", X, delimiter="\t")
    (tmp_path / "labels.csv").write_text("label\n" + "\n".join(map(str, y)) + "\n")
    out = tmp_path / store_name(fmt)
    ingest(tmp_path / "d.tsv.gz", out, labels=tmp_path / "labels.csv", dtype="float32", memory_limit=memory)
    store = check(out, X, y)
    assert store.y.dtype.kind == "i"
    assert store.feature_ids is None


def test_csv_label_column_by_index_unlabelled_header_detection(tmp_path, fmt, rng):
    X = rng.standard_normal((6, 4))
    _write_csv(tmp_path / "d.csv", X, labels=[0, 1, 0, 1, 0, 1])
    out = tmp_path / store_name(fmt)
    ingest(tmp_path / "d.csv", out, label_column=0)
    check(out, X, [0, 1, 0, 1, 0, 1])
    ingest(tmp_path / "d.csv", out, header=False, overwrite=True)  # the label column is then a feature
    check(out, np.column_stack([[0, 1, 0, 1, 0, 1], X]))


@pytest.mark.parametrize("memory", [None, TIGHT], ids=["in-memory", "two-stage"])
def test_folder_of_npy_with_labels_file(tmp_path, fmt, rng, memory, two_stage_spy):
    vols = rng.standard_normal((24, 4, 3, 3)).astype(np.float32)
    folder = tmp_path / "samples"
    folder.mkdir()
    for i, v in enumerate(vols):
        np.save(folder / f"sub-{i:02d}.npy", v)
    (folder / "README.txt").write_text("ignored")
    order = rng.permutation(24)
    y = np.where(order % 3 == 0, "a", "b")
    # file names with or without extension both match
    lines = [f"{'sub-%02d' % i}{'.npy' if k % 2 else ''},{lab}" for k, (i, lab) in enumerate(zip(order, y))]
    (tmp_path / "labels.csv").write_text("file,group\n" + "\n".join(lines) + "\n")
    out = tmp_path / store_name(fmt)
    ingest(folder, out, labels=tmp_path / "labels.csv", memory_limit=memory)
    check(out, vols[order].reshape(24, -1), y, sample_ids=[f"sub-{i:02d}" for i in order], feature_shape=(4, 3, 3))
    assert bool(two_stage_spy) == (memory is not None)


def test_folder_unlabelled_sorted_by_name(tmp_path, fmt, rng):
    rows = rng.standard_normal((5, 8))
    folder = tmp_path / "samples"
    folder.mkdir()
    for i, r in enumerate(rows):
        np.save(folder / f"s{i}.npy", r)
    out = tmp_path / store_name(fmt)
    ingest(folder, out)
    check(out, rows, None, sample_ids=[f"s{i}" for i in range(5)], feature_shape=None)


@pytest.mark.parametrize("memory", [None, TIGHT], ids=["in-memory", "two-stage"])
def test_folder_of_nifti_volumes(tmp_path, fmt, rng, memory):
    nib = pytest.importorskip("nibabel")
    vols = rng.standard_normal((12, 5, 4, 3)).astype(np.float32)
    folder = tmp_path / "nii"
    folder.mkdir()
    for i, v in enumerate(vols):
        suffix = ".nii.gz" if i % 2 else ".nii"
        nib.save(nib.Nifti1Image(v, np.eye(4)), folder / f"sub-{i:02d}{suffix}")
    y = np.arange(12) % 2
    (tmp_path / "labels.tsv").write_text("participant_id\tdiagnosis\n" + "".join(f"sub-{i:02d}\t{y[i]}\n" for i in range(12)))
    out = tmp_path / store_name(fmt)
    ingest(folder, out, labels=tmp_path / "labels.tsv", memory_limit=memory)
    store = check(out, vols.reshape(12, -1), y, feature_shape=(5, 4, 3))
    # a p-length row reshapes back into the volume
    np.testing.assert_array_equal(store.X[3].compute().reshape(store.feature_shape), vols[3])


def test_labels_from_npy_and_hdf5(tmp_path, small_xy):
    X, y = small_xy
    np.save(tmp_path / "y.npy", y)
    ingest(X, tmp_path / "a.zarr", labels=tmp_path / "y.npy")
    check(tmp_path / "a.zarr", X, y)
    with h5py.File(tmp_path / "lab.h5", "w") as f:
        f["y"] = np.array([b"u", b"v", b"w"])[y]
    ingest(X, tmp_path / "b.zarr", labels=f"{tmp_path / 'lab.h5'}:/y")
    check(tmp_path / "b.zarr", X, np.array(["u", "v", "w"])[y])


def test_two_column_labels_give_sample_ids_for_arrays(tmp_path, small_xy):
    X, y = small_xy
    (tmp_path / "labels.csv").write_text("".join(f"id{i},{y[i]}\n" for i in range(len(y))))
    ingest(X, tmp_path / "a.zarr", labels=tmp_path / "labels.csv")
    check(tmp_path / "a.zarr", X, y, sample_ids=[f"id{i}" for i in range(len(y))])


def test_overwrite_replaces_output(tmp_path, fmt, small_xy, no_leftovers):
    X, y = small_xy
    out = tmp_path / store_name(fmt)
    ingest(X, out, labels=y)
    ingest(X[:, :5] * 2, out, labels=y, overwrite=True)
    check(out, X[:, :5] * 2, y)
    no_leftovers(out)
