"""CIFTI-2 dense files to feature stores: X equals nibabel's read, the brain-model axis kept, bad files refused.

Oracles: ``nibabel.load(f).get_fdata()`` rows stacked in sample order, the
``BrainModelAxis`` the files were written with, and LOL fitted in memory on
the same matrix.
"""

from __future__ import annotations

import numpy as np
import pytest

from surface_scans import brain_axis, make_cifti_folder, save_cifti
from wideml.cli.main import main
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import WidemlError
from wideml.maps.surface import brain_model_axis
from wideml.sources import cifti as cifti_module
from wideml.sources.ingest import ingest
from wideml.storage import open_store

nib = pytest.importorskip("nibabel")


@pytest.fixture
def scalars(tmp_path):
    return make_cifti_folder(nib, tmp_path)


@pytest.mark.parametrize("series", [False, True], ids=["dscalar", "dtseries"])
@pytest.mark.parametrize("feature_chunk,memory", [(7, None), (16, "8KiB"), (1000, None)])
def test_store_equals_nibabel_read_across_chunkings(tmp_path, monkeypatch, quiet_performance, series, feature_chunk, memory):
    monkeypatch.setattr(cifti_module, "SLAB_BYTES", 2 * 600 * 8)  # slabs of 2 rows cross file ends
    c = make_cifti_folder(nib, tmp_path, series=series)
    out = tmp_path / "c.zarr"
    ingest(c.folder, out, labels=c.labels_file, feature_chunk=feature_chunk, memory_limit=memory)
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), c.X)
    assert store.stored_chunks == (len(c.X), min(feature_chunk, c.X.shape[1]))
    np.testing.assert_array_equal(store.y, c.y)
    np.testing.assert_array_equal(store.sample_ids, c.ids)
    table = store.feature_table
    assert table.kind == "cifti" and table.n_features == len(c.axis)
    assert brain_model_axis(table) == c.axis  # the axis round-trips through the store
    np.testing.assert_array_equal(table.columns["vertex"], c.axis.vertex)
    np.testing.assert_array_equal(np.stack([table.columns[k] for k in "ijk"], 1), c.axis.voxel)
    assert [s["name"] for s in table.info["structures"]] == ["CIFTI_STRUCTURE_CORTEX_LEFT", "CIFTI_STRUCTURE_CORTEX_RIGHT",
                                                              "CIFTI_STRUCTURE_THALAMUS_LEFT", "CIFTI_STRUCTURE_CEREBELLUM_RIGHT"]
    assert table.info["structures"][0]["n_vertices"] == 320 and table.info["volume_shape"] == [6, 5, 4]
    assert store.feature_ids[0] == "CORTEX_LEFT:0" and store.feature_ids[-1].startswith("CEREBELLUM_RIGHT:")


def test_lol_on_the_store_equals_lol_in_memory(scalars, tmp_path):
    out = tmp_path / "c.zarr"
    ingest(scalars.folder, out, labels=scalars.labels_file, feature_chunk=50)
    on_store = LOL(n_components=3).fit(open_store(out))
    in_memory = LOL(n_components=3).fit(scalars.X.astype(np.float32), scalars.y)
    np.testing.assert_allclose(on_store.transform(scalars.X.astype(np.float32)), in_memory.transform(scalars.X.astype(np.float32)),
                               rtol=1e-4, atol=1e-4)


def test_labels_by_file_and_participants_table(scalars, tmp_path):
    two = tmp_path / "by_file.csv"  # a two-column file names files (or stems) and chooses their order
    two.write_text("file,label\nsub-03.dscalar.nii,x\nsub-01,y\nsub-00.dscalar.nii,y\n")
    ingest(scalars.folder, tmp_path / "a.zarr", labels=two)
    store = open_store(tmp_path / "a.zarr")
    assert list(store.sample_ids) == ["sub-03:0", "sub-03:1", "sub-01:0", "sub-01:1", "sub-01:2", "sub-00"]
    assert list(store.y) == ["x", "x", "y", "y", "y", "y"]
    parts = tmp_path / "participants.tsv"
    parts.write_text("participant_id\tgroup\n" + "".join(f"sub-{f:02d}\t{'pc'[f % 2]}\n" for f in range(8)))
    ingest(scalars.folder, tmp_path / "b.zarr", labels=parts, label_column="group")
    store = open_store(tmp_path / "b.zarr")
    np.testing.assert_array_equal(store.X.compute(), scalars.X)
    np.testing.assert_array_equal(store.y, np.array(["p", "c"])[scalars.y])


def test_one_cifti_file_is_a_source(scalars, tmp_path):
    ingest(scalars.files[1], tmp_path / "one.zarr", labels=np.array([0, 1, 1]))
    np.testing.assert_array_equal(open_store(tmp_path / "one.zarr").X.compute(), nib.load(str(scalars.files[1])).get_fdata())


def test_axis_xml_that_differs_only_in_bytes_is_compared_parsed(scalars, tmp_path, monkeypatch):
    """A file whose axis XML bytes differ from the first file's is parsed by nibabel and accepted when the axes are equal."""
    from wideml.sources import cifti_header

    real = cifti_header.read_header

    def reformatted(nib_, path):
        head = real(nib_, path)
        return head if path.name == "sub-00.dscalar.nii" else cifti_header.CiftiHeader(
            head.kinds, head.n_rows, head.n_columns, head.dtype, head.signature + b" ")

    real_axes, parsed = cifti_module.cifti_axes, []
    monkeypatch.setattr(cifti_module, "read_header", reformatted)
    monkeypatch.setattr(cifti_module, "cifti_axes", lambda nib_, path: parsed.append(path.name) or real_axes(nib_, path))
    ingest(scalars.folder, tmp_path / "c.zarr", labels=scalars.labels_file)
    np.testing.assert_array_equal(open_store(tmp_path / "c.zarr").X.compute(), scalars.X)
    assert parsed == [f.name for f in scalars.files]  # the first file, then every file whose bytes differ


def _refused(tmp_path, capsys, source, match, *extra):
    out = tmp_path / "bad.zarr"
    with pytest.raises(WidemlError, match=match):
        ingest(source, out, labels=None)
    code = main(["ingest", str(source), "-o", str(out), "--no-progress", *map(str, extra)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() and [p for p in tmp_path.iterdir() if p.name.startswith(".bad.zarr")] == []
    return err


def test_another_brain_model_axis_names_the_first_file_that_differs(scalars, tmp_path, capsys):
    other = brain_axis(nib, shift=1)
    save_cifti(nib, np.zeros((1, len(other)), np.float32), other, scalars.folder / "sub-05.dscalar.nii")
    save_cifti(nib, np.zeros((1, 10), np.float32), brain_axis(nib, n_left=5, n_right=5)[:10], scalars.folder / "sub-07.dscalar.nii")
    err = _refused(tmp_path, capsys, scalars.folder, r"'.*sub-05\.dscalar\.nii' has other vertices or voxels than the first file",
                   "--unlabelled")
    assert "sub-07" not in err


@pytest.mark.parametrize("what", ["dconn", "pconn", "pscalar-named-dscalar", "dlabel"])
def test_connectivity_parcellated_and_label_files_are_refused(scalars, tmp_path, capsys, what):
    axis = brain_axis(nib)
    parcels = nib.cifti2.ParcelsAxis.from_brain_models([("A", axis[:300]), ("B", axis[300:])])
    if what == "dconn":
        nib.Cifti2Image(np.zeros((len(axis), len(axis)), np.float32), header=(axis, axis)).to_filename(str(scalars.folder / "c.dconn.nii"))
        match = r"dconn file"
    elif what == "pconn":
        nib.Cifti2Image(np.zeros((2, 2), np.float32), header=(parcels, parcels)).to_filename(str(scalars.folder / "c.pconn.nii"))
        match = r"pconn file"
    elif what == "dlabel":
        labels = nib.cifti2.LabelAxis(["l"], {0: ("???", (0, 0, 0, 0)), 1: ("A", (1, 0, 0, 1))})
        nib.Cifti2Image(np.zeros((1, len(axis)), np.float32), header=(labels, axis)).to_filename(str(scalars.folder / "c.dlabel.nii"))
        match = r"dlabel file"
    else:
        nib.Cifti2Image(np.zeros((1, 2), np.float32), header=(nib.cifti2.ScalarAxis(["s"]), parcels)).to_filename(
            str(scalars.folder / "sub-09.dscalar.nii"))
        match = r"is a parcellated file \(its axes are Scalar x Parcels\); wideml ingests dense"
    _refused(tmp_path, capsys, scalars.folder, match, "--unlabelled")


def test_corrupt_and_truncated_files_are_one_sentence_and_leave_nothing(scalars, tmp_path, capsys):
    (scalars.folder / "sub-10.dscalar.nii").write_bytes(b"not a nifti file at all" * 20)
    _refused(tmp_path, capsys, scalars.folder, r"cannot read CIFTI file '.*sub-10\.dscalar\.nii'", "--unlabelled")
    (scalars.folder / "sub-10.dscalar.nii").unlink()
    raw = scalars.files[3].read_bytes()
    scalars.files[3].write_bytes(raw[: len(raw) - 1000])  # header intact, data cut short: found while reading rows
    _refused(tmp_path, capsys, scalars.folder, r"cannot read CIFTI file '.*sub-03\.dscalar\.nii'", "--unlabelled")


def test_plain_nifti_named_dscalar_and_mixed_folders_are_refused(scalars, tmp_path, capsys):
    np.save(scalars.folder / "extra.npy", np.zeros(3))
    _refused(tmp_path, capsys, scalars.folder, r"mixes CIFTI-2 files with other per-sample files \(extra\.npy\)", "--unlabelled")
    (scalars.folder / "extra.npy").unlink()
    nib.save(nib.Nifti1Image(np.zeros((2, 2, 2), np.float32), np.eye(4)), str(scalars.folder / "sub-11.dscalar.nii"))
    _refused(tmp_path, capsys, scalars.folder, r"named like a CIFTI-2 file but is a Nifti1Image", "--unlabelled")


def test_a_folder_without_labels_needs_labels_or_unlabelled(scalars, tmp_path, capsys):
    out = tmp_path / "nolabels.zarr"
    code = main(["ingest", str(scalars.folder), "-o", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "no labels given" in err and not out.exists()
    assert main(["ingest", str(scalars.folder), "-o", str(out), "--no-progress", "--labels", str(scalars.labels_file)]) == 0
    np.testing.assert_array_equal(open_store(out).X.compute(), scalars.X)
