"""The user-world findings on genotype ingest (PLINK 1 ``.bed``, VCF Zarr), one test (or more) per finding.

1. whitespace-separated labels files (PLINK's ``FID IID pheno``, ``IID label``) are parsed for genotype
   sources, refused in one sentence for other sources;
2. ``predict`` on a PLINK store whose counted allele is flipped for one variant is refused;
3. a VCF Zarr call naming an allele its variant does not have is refused;
4. a corrupt chunk of a VCF Zarr array is one sentence naming the array and the chunk;
5. a missing source, a bare PLINK prefix, or a .bim/.fam is named before "no labels given";
6. a labels table of more than two columns (``FID,IID,pheno``) for a genotype source: read, or its columns
   named with --label-column/--id-column;
7. a .bed with an invalid mode byte is called invalid, not sample-major.

Oracles: bed-reader's in-memory read (ids, phenotypes) and numpy on ``call_genotype``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_plink import leftovers, make_bed
from test_plink_errors import one_sentence, run
from test_vcf_zarr import make_vcz

import wideml
from wideml.exceptions import WidemlError
from wideml.storage import open_store

bed_reader = pytest.importorskip("bed_reader", reason="bed-reader (wideml[genomics]) is not installed")

N = 13  # make_bed's samples: ind0..ind12, families fam0..fam6, phenotypes 1, 2, 1, 2 ...


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """The CLI sets dask.config globally; keep every test independent."""


def _labels(n=N):
    """Labels that differ from the .fam phenotype and are not in sample order: 'a' for every third sample."""
    return np.array(["a" if k % 3 == 0 else "b" for k in range(n)])


# 1. whitespace-separated labels files ------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["iid_label", "fid_iid_pheno", "header_tabs", "plink2_header"])
def test_whitespace_labels_are_matched_by_id_for_a_bed(tmp_path, capsys, layout):
    bed, _ = make_bed(tmp_path)
    ref = bed_reader.open_bed(bed)
    want = _labels()
    order = np.arange(N)[::-1]  # reversed: matching by position would give every sample another's label
    if layout == "iid_label":
        text = "".join(f"{ref.iid[k]} {want[k]}\n" for k in order)
    elif layout == "fid_iid_pheno":
        text = "".join(f"{ref.fid[k]}  {ref.iid[k]} {want[k]}\n" for k in order)
    elif layout == "header_tabs":
        text = "FID\tIID\tpheno\n" + "".join(f"{ref.fid[k]}\t{ref.iid[k]}\t{want[k]}\n" for k in order)
    else:
        text = "#IID pheno\n" + "".join(f"{ref.iid[k]} {want[k]}\n" for k in order)
    (tmp_path / "lab.pheno").write_text(text)
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "lab.pheno", "-o", tmp_path / "a.zarr")
    assert code == 0, err
    store = open_store(tmp_path / "a.zarr")
    np.testing.assert_array_equal(store.sample_ids, ref.iid)
    np.testing.assert_array_equal(store.y, want)
    api = open_store(wideml.ingest(bed, tmp_path / "b.zarr", labels=str(tmp_path / "lab.pheno")))
    np.testing.assert_array_equal(api.y, want)


def test_pheno_file_with_wrong_family_is_refused(tmp_path):
    bed, _ = make_bed(tmp_path)
    ref = bed_reader.open_bed(bed)
    lines = [f"{ref.fid[k]} {ref.iid[k]} {1 + k % 2}" for k in range(N)]
    lines[4] = f"famX {ref.iid[4]} 1"
    (tmp_path / "lab.pheno").write_text("\n".join(lines) + "\n")
    with pytest.raises(WidemlError, match="famX ind4"):
        wideml.ingest(bed, tmp_path / "g.zarr", labels=str(tmp_path / "lab.pheno"))
    assert leftovers(tmp_path, "lab.pheno") == []


def test_pheno_minus_9_is_missing(tmp_path, capsys):
    bed, _ = make_bed(tmp_path)
    ref = bed_reader.open_bed(bed)
    lines = [f"{ref.fid[k]} {ref.iid[k]} {'-9' if k == 5 else 1 + k % 2}" for k in range(N)]
    (tmp_path / "lab.pheno").write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "lab.pheno", "-o", tmp_path / "g.zarr")
    one_sentence(code, err, "ind5")
    assert leftovers(tmp_path, "lab.pheno") == []
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "lab.pheno", "--drop-unlabelled", "-o", tmp_path / "g.zarr")
    assert code == 0, err
    store = open_store(tmp_path / "g.zarr")
    keep = np.arange(N) != 5
    np.testing.assert_array_equal(store.sample_ids, ref.iid[keep])
    np.testing.assert_array_equal(store.y, (1 + np.arange(N) % 2)[keep])
    np.testing.assert_array_equal(store.X.compute(), ref.read(dtype="int8")[keep])


def test_whitespace_labels_are_matched_by_id_for_a_vcf_zarr(tmp_path, capsys):
    path, calls, ids = make_vcz(tmp_path)
    want = _labels(len(ids))
    (tmp_path / "lab.txt").write_text("".join(f"{ids[k]} {want[k]}\n" for k in range(len(ids))[::-1]))
    code, _, err = run(capsys, "ingest", path, "--labels", tmp_path / "lab.txt", "-o", tmp_path / "v.zarr")
    assert code == 0, err
    store = open_store(tmp_path / "v.zarr")
    np.testing.assert_array_equal(store.sample_ids, ids)
    np.testing.assert_array_equal(store.y, want)


def test_whitespace_id_label_file_is_refused_for_other_sources(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    (tmp_path / "lab.txt").write_text("s3 b\ns2 a\ns1 b\ns0 a\n")
    code, _, err = run(capsys, "ingest", tmp_path / "x.npy", "--labels", tmp_path / "lab.txt", "-o", tmp_path / "x.zarr")
    one_sentence(code, err, "--delimiter")
    assert "whitespace" in err
    assert not (tmp_path / "x.zarr").exists()


def test_one_column_labels_with_spaces_still_work_for_other_sources(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    (tmp_path / "lab.txt").write_text("healthy control\nmajor depression\nhealthy control\nmajor depression\n")
    code, _, err = run(capsys, "ingest", tmp_path / "x.npy", "--labels", tmp_path / "lab.txt", "-o", tmp_path / "x.zarr")
    assert code == 0, err
    np.testing.assert_array_equal(open_store(tmp_path / "x.zarr").y, ["healthy control", "major depression"] * 2)


# 2. predict with a flipped counted allele ----------------------------------------------------------------------


def test_predict_refuses_a_flipped_counted_allele(tmp_path, capsys):
    bed, _ = make_bed(tmp_path, name="small")
    ref = bed_reader.open_bed(bed)
    G = ref.read(dtype="float32")
    G[:, 0] = 2 - G[:, 0]
    a1, a2 = ref.allele_1.copy(), ref.allele_2.copy()
    a1[0], a2[0] = a2[0], a1[0]
    bed_reader.to_bed(tmp_path / "flip.bed", G, properties={
        "fid": ref.fid, "iid": ref.iid, "pheno": ref.pheno, "sid": ref.sid, "chromosome": ref.chromosome,
        "bp_position": ref.bp_position, "allele_1": a1, "allele_2": a2})
    for name in ("small", "flip"):
        code, _, err = run(capsys, "ingest", tmp_path / f"{name}.bed", "-o", tmp_path / f"{name}.zarr")
        assert code == 0, err
    np.testing.assert_array_equal(open_store(tmp_path / "flip.zarr").feature_ids, open_store(tmp_path / "small.zarr").feature_ids)
    code, _, err = run(capsys, "fit", "lol", tmp_path / "small.zarr", "--n-components", "2", "-o", tmp_path / "m.model")
    assert code == 0, err
    code, _, err = run(capsys, "predict", tmp_path / "m.model", tmp_path / "small.zarr", "-o", tmp_path / "same.csv")
    assert code == 0, err
    code, _, err = run(capsys, "predict", tmp_path / "m.model", tmp_path / "flip.zarr", "-o", tmp_path / "flip.csv")
    one_sentence(code, err, "feature table")
    assert not (tmp_path / "flip.csv").exists()


# 3. VCF Zarr allele index beyond the variant's alleles --------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_allele_index_beyond_the_variants_alleles_is_refused(tmp_path, capsys, zarr_format):
    path, calls, ids = make_vcz(tmp_path, zarr_format=zarr_format)
    import zarr

    g = zarr.open_array(str(path / "call_genotype"), mode="r+")
    g[6, 4, 0] = 5  # variant 6 has alleles A, C (an even variant: "" padding)
    code, _, err = run(capsys, "ingest", path, "--unlabelled", "-o", tmp_path / "v.zarr", "--feature-chunk", "4")
    one_sentence(code, err, "allele index 5")
    assert "rs6" in err and "'S04'" in err and "2 alleles" in err
    assert leftovers(tmp_path) == ["g.vcz"]


# 4. corrupt chunks of a VCF Zarr store ---------------------------------------------------------------------------


def _corrupt(path):
    data = path.read_bytes()
    path.write_bytes(data[:10])


@pytest.mark.parametrize("zarr_format,array,chunk", [
    (3, "call_genotype", "c/1/0/0"), (2, "call_genotype", "1.0.0"), (3, "sample_id", "c/1"), (2, "sample_id", "1"),
    (3, "variant_allele", "c/2/0")])
def test_corrupt_chunk_is_one_sentence_naming_array_and_chunk(tmp_path, capsys, zarr_format, array, chunk):
    path, _, ids = make_vcz(tmp_path, zarr_format=zarr_format, chunks=(5, 4))
    _corrupt(path / array / chunk)
    (tmp_path / "lab.csv").write_text("".join(f"{s},{k % 2}\n" for k, s in enumerate(ids)))
    code, _, err = run(capsys, "ingest", path, "--labels", tmp_path / "lab.csv", "-o", tmp_path / "v.zarr")
    one_sentence(code, err, f"array {array}")
    assert chunk in err or str(tuple(int(c) for c in chunk.replace("c/", "").replace("/", ".").split("."))) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.vcz", "lab.csv"]


# 5. the real cause before "no labels given" ----------------------------------------------------------------------


def test_missing_or_misnamed_source_is_named_first(tmp_path, capsys):
    bed, _ = make_bed(tmp_path, name="small")
    code, _, err = run(capsys, "ingest", tmp_path / "nothere.bed", "-o", tmp_path / "a.zarr")
    one_sentence(code, err, "does not exist")
    code, _, err = run(capsys, "ingest", tmp_path / "small", "-o", tmp_path / "a.zarr")
    one_sentence(code, err, "small.bed")
    for suffix in (".bim", ".fam"):
        code, _, err = run(capsys, "ingest", tmp_path / f"small{suffix}", "-o", tmp_path / "a.zarr")
        one_sentence(code, err, "give the .bed")
        assert "small.bed" in err
        with pytest.raises(WidemlError, match="give the .bed"):
            wideml.ingest(tmp_path / f"small{suffix}", tmp_path / "a.zarr")
    assert leftovers(tmp_path) == []


# 6. labels tables of more than two columns -------------------------------------------------------------------------


def test_three_column_csv_is_read_as_fid_iid_pheno(tmp_path, capsys):
    bed, _ = make_bed(tmp_path)
    ref = bed_reader.open_bed(bed)
    want = _labels()
    (tmp_path / "l3.csv").write_text("FID,IID,pheno\n" + "".join(f"{ref.fid[k]},{ref.iid[k]},{want[k]}\n" for k in range(N)[::-1]))
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "l3.csv", "-o", tmp_path / "a.zarr")
    assert code == 0, err
    np.testing.assert_array_equal(open_store(tmp_path / "a.zarr").y, want)
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "l3.csv", "--label-column", "pheno", "--id-column", "IID",
                       "-o", tmp_path / "b.zarr")
    assert code == 0, err
    np.testing.assert_array_equal(open_store(tmp_path / "b.zarr").y, want)


def test_wide_table_advice_is_true(tmp_path, capsys):
    bed, _ = make_bed(tmp_path)
    ref = bed_reader.open_bed(bed)
    want = _labels()
    (tmp_path / "cov.csv").write_text("IID,age,sex,dx\n" + "".join(f"{ref.iid[k]},{40 + k},{k % 2},{want[k]}\n" for k in range(N)))
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "cov.csv", "-o", tmp_path / "a.zarr")
    one_sentence(code, err, "--label-column")
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "cov.csv", "--label-column", "dx", "-o", tmp_path / "a.zarr")
    assert code == 0, err
    np.testing.assert_array_equal(open_store(tmp_path / "a.zarr").y, want)
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "cov.csv", "--label-column", "3", "--id-column", "0",
                       "-o", tmp_path / "b.zarr")
    assert code == 0, err
    np.testing.assert_array_equal(open_store(tmp_path / "b.zarr").y, want)
    code, _, err = run(capsys, "ingest", bed, "--label-column", "dx", "-o", tmp_path / "c.zarr")
    one_sentence(code, err, "--labels")
    code, _, err = run(capsys, "ingest", bed, "--labels", tmp_path / "cov.csv", "--label-column", "nope", "-o", tmp_path / "c.zarr")
    one_sentence(code, err, "'nope'")
    assert leftovers(tmp_path, "a.zarr", "b.zarr") == []


# 7. invalid mode byte ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode,match", [(2, "not a valid PLINK 1 .bed (mode byte 2; expected 1)"), (0, "sample-major")])
def test_mode_byte_message(tmp_path, capsys, mode, match):
    bed, _ = make_bed(tmp_path)
    data = bytearray(bed.read_bytes())
    data[2] = mode
    bed.write_bytes(bytes(data))
    code, _, err = run(capsys, "ingest", bed, "-o", tmp_path / "g.zarr")
    one_sentence(code, err, match)
    if mode == 2:
        assert "sample-major" not in err
    assert leftovers(tmp_path) == []
