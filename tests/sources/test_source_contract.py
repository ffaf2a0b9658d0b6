"""The reader interface's contract, for every registered reader (and the NIfTI folder the folder reader opens).

Each case builds a small source of one format with its truth (X, labels, ids,
feature_shape, spatial reference) and checks that

* the registry picks the expected reader class, and the opened source states
  that truth (shape, labels, ids, feature_shape, spatial) before reading any X;
* its one block method (feature blocks, row blocks or a row stream) hands out
  exactly X;
* ``wideml.ingest`` gives a store holding exactly that truth (zarr and HDF5).

A reader added to the registry without a case here fails
:func:`test_every_registered_reader_has_a_case`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import zarr
from conftest import store_name

import wideml
from wideml.sources.base import FEATURES, ROWS, STREAM, IngestOptions
from wideml.sources.bids import BidsSource
from wideml.sources.cifti import CiftiSource
from wideml.sources.delimited import CsvSource
from wideml.sources.folder import FolderSource
from wideml.sources.gifti import GiftiSource
from wideml.sources.hdf5 import Hdf5Source
from wideml.sources.nifti import NiftiFolderSource
from wideml.sources.npy import MemorySource, NpySource
from wideml.sources.plink import PlinkSource
from wideml.sources.registry import pick, registered
from wideml.sources.vcf_zarr import VcfZarrSource
from wideml.sources.zarr_array import ZarrSource
from wideml.storage import open_store

N, P = 11, 7


@dataclass
class Case:
    """A source of one format and what its store must hold."""

    source: Any
    reader: type
    X: np.ndarray
    y: np.ndarray | None
    options: dict = field(default_factory=dict)
    sample_ids: np.ndarray | None = None
    feature_ids: np.ndarray | None = None
    feature_shape: tuple | None = None
    mask: np.ndarray | None = None
    affine: np.ndarray | None = None


def _xy(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, P)).astype(np.float32), np.array(["a", "b"])[np.arange(N) % 2]


def memory_case(root: Path) -> Case:
    X, y = _xy()
    return Case(X, MemorySource, X, y, {"labels": y})


def npy_case(root: Path) -> Case:
    X, y = _xy(1)
    np.save(root / "x.npy", X)
    return Case(str(root / "x.npy"), NpySource, X, y, {"labels": y})


def hdf5_case(root: Path) -> Case:
    X, y = _xy(2)
    with h5py.File(root / "x.h5", "w") as f:
        f.create_dataset("data", data=X, chunks=(4, 3))
    ids = np.array([f"s{i}" for i in range(N)])
    (root / "labels.csv").write_text("id,label\n" + "".join(f"{i},{v}\n" for i, v in zip(ids, y)))
    return Case(f"{root / 'x.h5'}:/data", Hdf5Source, X, y, {"labels": str(root / "labels.csv")}, sample_ids=ids)


def zarr_case(root: Path) -> Case:
    X, y = _xy(3)
    arr = zarr.create_array(str(root / "x.zarr"), shape=X.shape, chunks=(5, 2), dtype=X.dtype)
    arr[...] = X
    return Case(str(root / "x.zarr"), ZarrSource, X, y, {"labels": y})


def csv_case(root: Path) -> Case:
    X, y = _xy(4)
    X = X.astype(np.float64)
    ids = np.array([f"r{i}" for i in range(N)])
    names = np.array([f"f{j}" for j in range(P)])
    lines = ["sample,group," + ",".join(names)]
    lines += [f"{i},{v}," + ",".join(repr(float(x)) for x in row) for i, v, row in zip(ids, y, X)]
    (root / "x.csv").write_text("\n".join(lines) + "\n")
    return Case(str(root / "x.csv"), CsvSource, X, y, {"label_column": "group", "id_column": "sample"},
                sample_ids=ids, feature_ids=names)


def folder_case(root: Path) -> Case:
    rng = np.random.default_rng(5)
    vols = rng.standard_normal((N, 3, 4)).astype(np.float32)
    folder = root / "samples"
    folder.mkdir()
    stems = [f"s{i:02d}" for i in range(N)]
    for s, v in zip(stems, vols):
        np.save(folder / f"{s}.npy", v)
    order = np.random.default_rng(6).permutation(N)  # a two-column labels file chooses the order
    y = np.array(["a", "b"])[order % 2]
    (root / "labels.csv").write_text("".join(f"{stems[i]}.npy,{v}\n" for i, v in zip(order, y)))
    return Case(folder, FolderSource, vols[order].reshape(N, -1), y, {"labels": root / "labels.csv"},
                sample_ids=np.array(stems)[order], feature_shape=(3, 4))


def nifti_case(root: Path) -> Case:
    nib = pytest.importorskip("nibabel")
    from nifti_scans import make_scans

    scans = make_scans(nib, root, n=N)
    X = np.stack([v[scans.mask] for v in scans.vols])
    return Case(scans.folder, NiftiFolderSource, X, scans.y,
                {"labels": scans.participants, "label_column": "group", "mask": scans.mask_file},
                sample_ids=np.array([f"{s}_T1w" for s in scans.subjects]), mask=scans.mask, affine=scans.affine)


def cifti_case(root: Path) -> Case:
    nib = pytest.importorskip("nibabel")
    from surface_scans import make_cifti_folder

    c = make_cifti_folder(nib, root, rows=(1, 3, 1, 2, 1, 1, 2))
    return Case(c.folder, CiftiSource, c.X.astype(np.float32), c.y, {"labels": c.y}, sample_ids=np.array(c.ids))


def gifti_case(root: Path) -> Case:
    nib = pytest.importorskip("nibabel")
    from surface_scans import make_gifti_pairs

    g = make_gifti_pairs(nib, root, rows=(1, 2, 1, 1, 3, 1, 2), n_left=5, n_right=4)
    return Case(g.folder, GiftiSource, g.X.astype(np.float32), g.y, {"labels": g.labels_file}, sample_ids=np.array(g.ids),
                feature_ids=np.array([f"L:{v}" for v in range(5)] + [f"R:{v}" for v in range(4)]))


def plink_case(root: Path) -> Case:
    bed_reader = pytest.importorskip("bed_reader", reason="bed-reader (wideml[genomics]) is not installed")
    X = np.random.default_rng(7).integers(0, 3, (N, P)).astype(np.int8)
    y = np.arange(N) % 2 + 1  # the .fam phenotype: 1 = control, 2 = case
    ids, sids = np.array([f"i{k}" for k in range(N)]), np.array([f"rs{j}" for j in range(P)])
    bed_reader.to_bed(root / "g.bed", X.astype(np.float32), properties={"iid": ids, "sid": sids, "pheno": y.astype(str)})
    return Case(str(root / "g.bed"), PlinkSource, X, y, sample_ids=ids, feature_ids=sids)


def vcf_zarr_case(root: Path) -> Case:
    calls = np.random.default_rng(8).integers(0, 2, (P, N, 2)).astype(np.int8)
    g = zarr.open_group(str(root / "g.vcz"), mode="w", zarr_format=2)
    ids, y = np.array([f"s{k}" for k in range(N)]), np.array(["a", "b"])[np.arange(N) % 2]
    arrays = {"call_genotype": calls, "sample_id": ids, "contig_id": np.array(["1"]), "variant_contig": np.zeros(P, np.int8),
              "variant_position": np.arange(P, dtype=np.int32) + 1, "variant_allele": np.array([["A", "T"]] * P),
              "variant_id": np.array([f"v{j}" for j in range(P)])}
    for name, values in arrays.items():
        chunks = (4, 5, 2) if values.ndim == 3 else values.shape
        g.create_array(name, shape=values.shape, chunks=chunks, dtype=str if values.dtype.kind == "U" else values.dtype,
                       config={"write_empty_chunks": True})[...] = values
    return Case(str(root / "g.vcz"), VcfZarrSource, calls.sum(axis=2).T.astype(np.int8), y, {"labels": y},
                sample_ids=ids, feature_ids=arrays["variant_id"])


def bids_case(root: Path) -> Case:
    nib = pytest.importorskip("nibabel")
    from test_bids_tree import GROUPS, SPACE, make_tree

    tree = make_tree(nib, root)
    for rest in ("desc-stat_bold", "desc-brain_mask"):  # 12 runs less one: N samples
        tree.path("03", "2", "func", f"task-rest_run-2_space-{SPACE}_{rest}.nii.gz").unlink()
    keys = [k for k in sorted(tree.func) if k != ("03", "2", "2")]
    X = np.stack([tree.func[k][tree.brain] for k in keys])
    return Case(tree.root, BidsSource, X, np.array([GROUPS[k[0]] for k in keys]),
                {"label_column": "group", "bids": {"derivatives": "fmriprep", "space": SPACE, "desc": "stat"}},
                sample_ids=np.array([f"sub-{a}_ses-{b}_run-{c}" for a, b, c in keys]), mask=tree.brain, affine=tree.affine)


CASES = {"memory": memory_case, "npy": npy_case, "hdf5": hdf5_case, "zarr": zarr_case, "csv": csv_case,
         "folder": folder_case, "nifti": nifti_case, "cifti": cifti_case, "gifti": gifti_case, "plink": plink_case, "vcf_zarr": vcf_zarr_case,
         "bids": bids_case}


def test_every_registered_reader_has_a_case(tmp_path):
    kinds = {cls.kind for cls in registered()}
    assert kinds <= set(CASES), f"registered readers without a contract case: {sorted(kinds - set(CASES))}"
    assert len(registered()) == 11  # memory, hdf5, zarr, bids, cifti, gifti, folder (-> nifti), npy, csv, plink, vcf_zarr


def _blocks(src, dtype) -> np.ndarray:
    """X as the source hands it out through its access's block method."""
    n, p = src.shape
    if src.access == FEATURES:
        reader = src.feature_reader()
        return np.hstack([np.asarray(reader[0:n, c : c + 3]).astype(dtype) for c in range(0, p, 3)])
    if src.access == ROWS:
        read = src.row_reader(dtype)
        return np.vstack([read(r, min(n, r + 4)) for r in range(0, n, 4)])
    assert src.access == STREAM
    blocks = list(src.row_stream(4, dtype))
    assert [len(b) for b in blocks] == [4] * (n // 4) + ([n % 4] if n % 4 else [])
    return np.vstack(blocks)


@pytest.mark.parametrize("name", sorted(CASES))
def test_opened_source_states_its_truth_and_hands_out_x(tmp_path, name):
    case = CASES[name](tmp_path)
    reader, location = pick(case.source)
    src = reader.open(location, IngestOptions(**case.options))
    assert type(src) is case.reader and src.kind == case.reader.kind
    assert src.shape == case.X.shape
    np.testing.assert_array_equal(src.labels, case.y)
    for got, want in ((src.sample_ids, case.sample_ids), (src.feature_ids, case.feature_ids)):
        if want is not None:
            np.testing.assert_array_equal(got, want)
    assert src.feature_shape == case.feature_shape
    assert (src.spatial is None) == (case.affine is None)
    if case.mask is not None:
        np.testing.assert_array_equal(src.spatial.mask, case.mask)
    np.testing.assert_array_equal(_blocks(src, case.X.dtype), case.X)


@pytest.mark.parametrize("name", sorted(CASES))
def test_ingest_stores_the_same_truth(tmp_path, fmt, name):
    case = CASES[name](tmp_path)
    out = tmp_path / store_name(fmt)
    assert wideml.ingest(case.source, out, feature_chunk=3, **case.options) == out
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), case.X)
    assert store.dtype == case.X.dtype
    np.testing.assert_array_equal(store.y, case.y)
    if case.sample_ids is not None:
        np.testing.assert_array_equal(store.sample_ids, case.sample_ids)
    if case.feature_ids is not None:
        np.testing.assert_array_equal(store.feature_ids, case.feature_ids)
    assert store.feature_shape == case.feature_shape
    assert store.stored_chunks == (N, 3)
    if case.affine is None:
        assert store.spatial is None
    else:
        np.testing.assert_array_equal(store.spatial.mask, case.mask)
        np.testing.assert_allclose(store.spatial.affine, case.affine, atol=1e-6)
