"""VCF Zarr stores (bio2zarr's layout, zarr v2 and v3) as an ingest source, against numpy on ``call_genotype``.

The dosage oracle is computed here in numpy: the number of alleles with index
> 0 per call, a call with a -1 allele (or only -2 fill) missing.
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from conftest import store_name

import wideml
from wideml.exceptions import WidemlError
from wideml.sources.registry import pick
from wideml.sources.vcf_zarr import VcfZarrSource
from wideml.storage import open_store

N, M = 9, 17


def make_vcz(root, *, zarr_format=3, chunks=(5, 4), missing=(), seed=0, n=N, m=M, name="g.vcz"):
    """A tiny bio2zarr-like store; returns (path, call_genotype, sample ids). ``chunks`` = (variants, samples)."""
    rng = np.random.default_rng(seed)
    calls = rng.integers(0, 3, (m, n, 2)).astype(np.int8)  # allele indices 0..2 (multi-allelic)
    calls[::2] = np.minimum(calls[::2], 1)  # even variants are biallelic (their variant_allele row ends in "" padding)
    calls[3, 1] = [1, -2]  # a haploid call in a diploid array
    calls[3, 2] = [0, -2]
    for j, i in missing:
        calls[j, i, 1] = -1
    path = root / name
    g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)

    def put(key, values, chunk=None, **kw):
        values = np.asarray(values)
        a = g.create_array(key, shape=values.shape, dtype=str if values.dtype.kind == "U" else values.dtype,
                           chunks=chunk or values.shape, config={"write_empty_chunks": True}, **kw)
        a[...] = values

    put("call_genotype", calls, (chunks[0], chunks[1], 2), fill_value=-1)
    ids = np.array([f"S{k:02d}" for k in range(n)])
    put("sample_id", ids, (chunks[1],))
    put("contig_id", np.array(["chr1", "chr2", "chrX"]))
    put("variant_contig", (np.arange(m) * 3 // m).astype(np.int8), (chunks[0],))
    put("variant_position", (100 + 10 * np.arange(m)).astype(np.int32), (chunks[0],))
    put("variant_allele", np.array([["A", "C", "T" if j % 2 else ""] for j in range(m)]), (chunks[0], 3))
    vid = np.array([f"rs{j}" if j % 5 else "." for j in range(m)])
    put("variant_id", vid, (chunks[0],))
    put("variant_id_mask", vid == ".", (chunks[0],))
    return path, calls, ids


def numpy_dosage(calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dosage = (calls > 0).sum(axis=2).T.astype(np.float64)
    missing = ((calls == -1).any(axis=2) | (calls < 0).all(axis=2)).T
    return dosage, missing


@pytest.mark.parametrize("zarr_format,chunks,feature_chunk", [(2, (5, 4), 3), (3, (17, 9), 17), (3, (2, 2), 1), (2, (3, 9), 5)])
def test_store_equals_numpy_dosage(tmp_path, fmt, zarr_format, chunks, feature_chunk):
    path, calls, ids = make_vcz(tmp_path, zarr_format=zarr_format, chunks=chunks)
    assert pick(str(path))[0] is VcfZarrSource  # recognised before the plain zarr entry
    y = np.array(["case", "control"])[np.arange(N) % 2]
    out = wideml.ingest(path, tmp_path / store_name(fmt), labels=y, feature_chunk=feature_chunk, memory_limit="64MiB")
    store = open_store(out)
    dosage, missing = numpy_dosage(calls)
    assert not missing.any()
    assert store.dtype == np.int8
    np.testing.assert_array_equal(store.X.compute(), dosage.astype(np.int8))
    np.testing.assert_array_equal(store.sample_ids, ids)
    np.testing.assert_array_equal(store.y, y)
    assert store.feature_ids[0] == "chr1:100:A:C" and store.feature_ids[1] == "rs1" and store.feature_ids[5] == "chr1:150:A:C,T"
    table = store.feature_table
    assert table.kind == "genome" and table.info["counted_allele"] == "allele_1" and table.info["ploidy"] == 2
    np.testing.assert_array_equal(table.columns["chrom"], np.array(["chr1", "chr2", "chrX"])[np.arange(M) * 3 // M])
    np.testing.assert_array_equal(table.columns["pos"], 100 + 10 * np.arange(M))
    assert table.columns["allele_1"][0] == "C" and table.columns["allele_1"][1] == "C,T"
    assert set(table.columns["allele_2"]) == {"A"}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_mean_imputation_equals_numpy(tmp_path, zarr_format):
    holes = [(0, 0), (0, 4), (6, 8), (16, 3)]
    path, calls, _ = make_vcz(tmp_path, zarr_format=zarr_format, missing=holes)
    store = open_store(wideml.ingest(path, tmp_path / "g.zarr", unlabelled=True, impute="mean", feature_chunk=2))
    dosage, missing = numpy_dosage(calls)
    masked = np.where(missing, np.nan, dosage)
    want = np.where(missing, np.nanmean(masked, axis=0), dosage).astype(np.float32)
    assert store.dtype == np.float32
    np.testing.assert_array_equal(store.X.compute(), want)
    assert store.feature_table.info["n_imputed"] == len(holes)


def test_missing_call_is_refused_naming_variant_and_sample(tmp_path):
    path, _, _ = make_vcz(tmp_path, missing=[(5, 7)])
    with pytest.raises(WidemlError, match=r"missing genotype call \(variant 'chr1:150:A:C,T', sample 'S07'\); ingest with --impute mean"):
        wideml.ingest(path, tmp_path / "g.zarr", unlabelled=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.vcz"]


def test_labels_are_matched_to_sample_id(tmp_path):
    path, calls, ids = make_vcz(tmp_path)
    (tmp_path / "labels.csv").write_text("sample_id,label\n" + "".join(f"S{k:02d},{k % 3 == 0}\n" for k in (8, 0, 3, 5, 6, 2)))
    with pytest.raises(WidemlError, match="have no label"):
        wideml.ingest(path, tmp_path / "g.zarr", labels=tmp_path / "labels.csv")
    store = open_store(wideml.ingest(path, tmp_path / "g.zarr", labels=tmp_path / "labels.csv", drop_unlabelled=True))
    keep = [0, 2, 3, 5, 6, 8]
    np.testing.assert_array_equal(store.sample_ids, ids[keep])
    np.testing.assert_array_equal(store.X.compute(), numpy_dosage(calls)[0][keep].astype(np.int8))
    np.testing.assert_array_equal(store.y, [str(k % 3 == 0) for k in keep])


def test_lol_on_the_store_equals_the_in_memory_fit(tmp_path):
    path, calls, _ = make_vcz(tmp_path, n=24, m=30, seed=4)
    y = np.arange(24) % 3
    store = open_store(wideml.ingest(path, tmp_path / "g.zarr", labels=y, feature_chunk=7))
    X = numpy_dosage(calls)[0].astype(np.int8)
    on_store, in_memory = wideml.LOL(n_components=3).fit(store), wideml.LOL(n_components=3).fit(X, y)
    np.testing.assert_allclose(np.asarray(on_store.transform(store)), np.asarray(in_memory.transform(X)), rtol=1e-5, atol=1e-5)


def test_missing_chunk_and_missing_array_are_refused(tmp_path):
    path, calls, _ = make_vcz(tmp_path, zarr_format=2)
    (path / "call_genotype" / "1.0.0").unlink()
    with pytest.raises(WidemlError, match=r"array call_genotype .* 1 missing chunk file\(s\) \(the first \(1, 0, 0\)\), which zarr "
                                          r"reads as the fill value -1; .*--missing-chunks-are-fill"):
        wideml.ingest(path, tmp_path / "g.zarr", unlabelled=True)
    store = open_store(wideml.ingest(path, tmp_path / "g.zarr", unlabelled=True, missing_chunks_are_fill=True, impute="mean"))
    calls[5:10, 0:4] = -1  # what zarr reads for the missing chunk: missing calls, then imputed
    dosage, missing = numpy_dosage(calls)
    want = np.where(missing, np.nanmean(np.where(missing, np.nan, dosage), axis=0), dosage).astype(np.float32)
    np.testing.assert_array_equal(store.X.compute(), want)
    import shutil

    shutil.rmtree(tmp_path / "g.zarr")
    path, _, _ = make_vcz(tmp_path, name="h.vcz")
    import shutil

    shutil.rmtree(path / "variant_position")
    with pytest.raises(WidemlError, match="has no array 'variant_position'; give a store written by bio2zarr"):
        wideml.ingest(path, tmp_path / "g.zarr", unlabelled=True)
    assert not (tmp_path / "g.zarr").exists()


def test_bad_allele_values_are_refused(tmp_path):
    path, _, _ = make_vcz(tmp_path)
    arr = zarr.open_array(str(path / "call_genotype"), mode="r+")
    arr[2, 2, 0] = -5
    with pytest.raises(WidemlError, match="holds -5, which is neither an allele index"):
        wideml.ingest(path, tmp_path / "g.zarr", unlabelled=True)
