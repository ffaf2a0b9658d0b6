"""PLINK 1 filesets as an ingest source, against bed-reader's own in-memory read.

X in the store equals ``open_bed(...).read(dtype="int8")`` for every chunking
and both store formats; mean imputation equals numpy's per-variant mean of
the called genotypes; labels come from the .fam phenotype unless given; a LOL
fit on the store equals the in-memory fit on the same matrix.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import store_name

import wideml
from wideml.exceptions import WidemlError
from wideml.storage import open_store

bed_reader = pytest.importorskip("bed_reader", reason="bed-reader (wideml[genomics]) is not installed")

N, P = 13, 23


def make_bed(root, *, n=N, p=P, missing=(), pheno=None, iid=None, fid=None, sid=None, seed=0, name="g"):
    """A .bed/.bim/.fam fileset of random dosages (``missing``: (sample, variant) pairs); returns (path, dosages as float)."""
    rng = np.random.default_rng(seed)
    val = rng.integers(0, 3, (n, p)).astype(np.float32)
    for i, j in missing:
        val[i, j] = np.nan
    props = {"pheno": pheno if pheno is not None else [("1", "2")[k % 2] for k in range(n)],
             "iid": iid if iid is not None else [f"ind{k}" for k in range(n)],
             "fid": fid if fid is not None else [f"fam{k // 2}" for k in range(n)],
             "sid": sid if sid is not None else [f"rs{100 + j}" for j in range(p)],
             "chromosome": [str(1 + j // 10) for j in range(p)], "bp_position": [1000 + 7 * j for j in range(p)],
             "allele_1": ["A"] * p, "allele_2": ["G"] * p}
    path = root / f"{name}.bed"
    bed_reader.to_bed(path, val, properties=props)
    return path, val


def leftovers(root, *keep) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name not in keep and p.suffix not in (".bed", ".bim", ".fam", ".csv"))


@pytest.mark.parametrize("feature_chunk", [1, 4, 23])
def test_store_equals_bed_reader_read(tmp_path, fmt, feature_chunk):
    bed, _ = make_bed(tmp_path)
    out = wideml.ingest(bed, tmp_path / store_name(fmt), feature_chunk=feature_chunk, memory_limit="64MiB")
    store = open_store(out)
    ref = bed_reader.open_bed(bed)
    assert store.dtype == np.int8
    np.testing.assert_array_equal(store.X.compute(), ref.read(dtype="int8"))
    assert store.stored_chunks == (N, feature_chunk)
    np.testing.assert_array_equal(store.y, np.where(np.arange(N) % 2, 2, 1))
    np.testing.assert_array_equal(store.sample_ids, ref.iid)
    np.testing.assert_array_equal(store.feature_ids, ref.sid)
    table = store.feature_table
    assert table.kind == "genome"
    np.testing.assert_array_equal(table.columns["chrom"], ref.chromosome)
    np.testing.assert_array_equal(table.columns["pos"], ref.bp_position.astype(np.int64))
    np.testing.assert_array_equal(table.columns["allele_1"], ref.allele_1)
    np.testing.assert_array_equal(table.columns["allele_2"], ref.allele_2)
    assert table.info["counted_allele"] == "allele_1" and table.info["missing_calls"] == "refuse"
    assert table.info["n_imputed"] == 0


def test_counted_allele_is_allele_1(tmp_path):
    bed, val = make_bed(tmp_path)
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr"))
    np.testing.assert_array_equal(store.X.compute(), val.astype(np.int8))  # to_bed wrote counts of allele 1


@pytest.mark.parametrize("feature_chunk", [2, 23])
def test_mean_imputation_equals_numpy(tmp_path, fmt, feature_chunk):
    holes = [(0, 0), (3, 0), (5, 7), (12, 22)]
    bed, val = make_bed(tmp_path, missing=holes)
    store = open_store(wideml.ingest(bed, tmp_path / store_name(fmt), impute="mean", feature_chunk=feature_chunk))
    want = np.where(np.isnan(val), np.nanmean(val.astype(np.float64), axis=0), val).astype(np.float32)
    assert store.dtype == np.float32
    np.testing.assert_array_equal(store.X.compute(), want)
    assert store.feature_table.info["missing_calls"] == "mean"
    assert store.feature_table.info["n_imputed"] == len(holes)


def test_mean_imputation_uses_the_stored_samples_only(tmp_path):
    pheno = ["1", "2", "-9"] + [("1", "2")[k % 2] for k in range(N - 3)]
    bed, val = make_bed(tmp_path, missing=[(0, 4)], pheno=pheno)
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr", impute="mean", drop_unlabelled=True))
    kept = np.delete(val, 2, axis=0).astype(np.float64)
    want = np.where(np.isnan(kept), np.nanmean(kept, axis=0), kept).astype(np.float32)
    np.testing.assert_array_equal(store.X.compute(), want)
    assert list(store.sample_ids) == [f"ind{k}" for k in range(N) if k != 2]


def test_lol_on_the_store_equals_the_in_memory_fit(tmp_path):
    bed, _ = make_bed(tmp_path, n=30, p=40, pheno=[("1", "2", "2")[k % 3] for k in range(30)], seed=3)
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr", feature_chunk=7))
    X = bed_reader.open_bed(bed).read(dtype="int8")
    y = np.array([(1, 2, 2)[k % 3] for k in range(30)])
    on_store = wideml.LOL(n_components=3).fit(store)
    in_memory = wideml.LOL(n_components=3).fit(X, y)
    np.testing.assert_allclose(np.asarray(on_store.transform(store)), np.asarray(in_memory.transform(X)), rtol=1e-5, atol=1e-5)


def test_labels_file_overrides_the_fam_and_is_matched_by_id(tmp_path):
    bed, val = make_bed(tmp_path)
    order = np.random.default_rng(1).permutation(N)
    labels = {k: "ab"[k % 3 == 0] for k in range(N)}
    (tmp_path / "labels.csv").write_text("id,label\n" + "".join(f"ind{k},{labels[k]}\n" for k in order))
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr", labels=tmp_path / "labels.csv"))
    np.testing.assert_array_equal(store.y, [labels[k] for k in range(N)])  # the source's order, not the file's
    np.testing.assert_array_equal(store.X.compute(), val.astype(np.int8))


def test_labels_for_some_samples_need_drop_unlabelled(tmp_path):
    bed, val = make_bed(tmp_path)
    (tmp_path / "labels.csv").write_text("id,label\n" + "".join(f"ind{k},{k % 2}\n" for k in (9, 2, 4, 7)))
    with pytest.raises(WidemlError, match=r"9 sample\(s\) of .* have no label .*--drop-unlabelled"):
        wideml.ingest(bed, tmp_path / "g.zarr", labels=tmp_path / "labels.csv")
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr", labels=tmp_path / "labels.csv", drop_unlabelled=True))
    np.testing.assert_array_equal(store.sample_ids, ["ind2", "ind4", "ind7", "ind9"])
    np.testing.assert_array_equal(store.X.compute(), val[[2, 4, 7, 9]].astype(np.int8))
    np.testing.assert_array_equal(store.y, [0, 0, 1, 1])


def test_unknown_ids_in_the_labels_file_are_refused(tmp_path):
    bed, _ = make_bed(tmp_path)
    (tmp_path / "labels.csv").write_text("id,label\n" + "".join(f"ind{k},{k % 2}\n" for k in range(N)) + "stranger,1\n")
    with pytest.raises(WidemlError, match="not samples of .*stranger"):
        wideml.ingest(bed, tmp_path / "g.zarr", labels=tmp_path / "labels.csv")


def test_unlabelled_drops_the_fam_phenotype(tmp_path):
    bed, _ = make_bed(tmp_path)
    assert open_store(wideml.ingest(bed, tmp_path / "g.zarr", unlabelled=True)).y is None


def test_missing_phenotypes_are_refused_or_left_out(tmp_path):
    pheno = ["1", "-9", "2", "0"] + [("1", "2")[k % 2] for k in range(N - 4)]
    bed, val = make_bed(tmp_path, pheno=pheno)
    with pytest.raises(WidemlError, match=r"2 missing label\(s\).*ind1, ind3.*--drop-unlabelled"):
        wideml.ingest(bed, tmp_path / "g.zarr")
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr", drop_unlabelled=True))
    keep = [k for k in range(N) if k not in (1, 3)]
    np.testing.assert_array_equal(store.X.compute(), val[keep].astype(np.int8))
    np.testing.assert_array_equal(store.y, [int(pheno[k]) for k in keep])


def test_no_phenotype_at_all_asks_for_labels(tmp_path):
    bed, _ = make_bed(tmp_path, pheno=["-9"] * N)
    with pytest.raises(WidemlError, match="no sample a phenotype .*--labels FILE.*--unlabelled"):
        wideml.ingest(bed, tmp_path / "g.zarr")
    assert leftovers(tmp_path) == []


def test_quantitative_phenotype_is_refused_as_labels(tmp_path):
    bed, _ = make_bed(tmp_path, pheno=["0.37"] + ["1"] * (N - 1))
    with pytest.raises(WidemlError, match=r"not case/control \('0.37' on line 1.*--labels FILE"):
        wideml.ingest(bed, tmp_path / "g.zarr")
    assert open_store(wideml.ingest(bed, tmp_path / "g.zarr", unlabelled=True)).n_samples == N


def test_sample_ids_are_fid_iid_when_iids_repeat(tmp_path):
    bed, _ = make_bed(tmp_path, n=4, iid=["a", "b", "a", "c"], fid=["f1", "f1", "f2", "f2"], pheno=["1", "2", "1", "2"])
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr"))
    np.testing.assert_array_equal(store.sample_ids, ["f1_a", "f1_b", "f2_a", "f2_c"])
    assert store.feature_table.info["sample_ids"] == "FID_IID"


def test_missing_variant_ids_are_made_from_position_and_alleles(tmp_path):
    sid = [f"rs{j}" for j in range(P)]
    sid[4] = "."
    bed, _ = make_bed(tmp_path, sid=sid)
    store = open_store(wideml.ingest(bed, tmp_path / "g.zarr"))
    assert store.feature_ids[4] == "1:1028:G:A"  # chrom:pos:allele_2:allele_1 (REF:ALT)
    assert store.feature_ids[3] == "rs3"
