"""Bad PLINK filesets through ``wideml ingest``: one sentence, exit status 2, nothing left behind."""

from __future__ import annotations

import numpy as np
import pytest
from test_plink import leftovers, make_bed

import wideml
from wideml.cli.main import main
from wideml.exceptions import WidemlError
from wideml.storage import open_store

bed_reader = pytest.importorskip("bed_reader", reason="bed-reader (wideml[genomics]) is not installed")


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """The CLI sets dask.config globally; keep every test independent."""


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(code, err, match):
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("wideml: error: ") and lines[0].endswith("."), err
    assert match in lines[0], err


def _rewrite(path, edit):
    path.write_text(edit(path.read_text()))


def no_bim(bed):
    bed.with_suffix(".bim").unlink()


def no_fam(bed):
    bed.with_suffix(".fam").unlink()


def truncated(bed):
    with open(bed, "r+b") as f:
        f.truncate(bed.stat().st_size - 2)


def not_a_bed(bed):
    data = bytearray(bed.read_bytes())
    data[0] = 0x00
    bed.write_bytes(bytes(data))


def sample_major(bed):
    data = bytearray(bed.read_bytes())
    data[2] = 0x00
    bed.write_bytes(bytes(data))


def fam_of_other_data(bed):
    _rewrite(bed.with_suffix(".fam"), lambda t: t + "".join(f"x x{k} 0 0 0 1\n" for k in range(4)))


def short_fam_line(bed):
    _rewrite(bed.with_suffix(".fam"), lambda t: t.replace("ind3 0 0 0 2", "ind3 0 0 2", 1))


def duplicate_sample(bed):
    _rewrite(bed.with_suffix(".fam"), lambda t: t.replace("fam1 ind3", "fam1 ind2", 1))


def duplicate_variant(bed):
    _rewrite(bed.with_suffix(".bim"), lambda t: t.replace("rs105", "rs104", 1))


def bad_position(bed):
    _rewrite(bed.with_suffix(".bim"), lambda t: t.replace("\t1035\t", "\t10x5\t", 1))


BROKEN = {
    "no_bim": (no_bim, ".bim file"),
    "no_fam": (no_fam, ".fam file"),
    "truncated": (truncated, "the .bed is truncated"),
    "not_a_bed": (not_a_bed, "is not a PLINK 1 .bed file"),
    "sample_major": (sample_major, "sample-major"),
    "fam_of_other_data": (fam_of_other_data, "(17 samples)"),
    "short_fam_line": (short_fam_line, "has 5 fields on line 4 but needs 6"),
    "duplicate_sample": (duplicate_sample, "ind2"),
    "duplicate_variant": (duplicate_variant, "names two variants 'rs104' (variants 4 and 5"),
    "bad_position": (bad_position, "position '10x5' for variant 5"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_fileset_is_one_sentence_and_leaves_nothing(tmp_path, capsys, name):
    bed, _ = make_bed(tmp_path)
    breaker, match = BROKEN[name]
    breaker(bed)
    code, _, err = run(capsys, "ingest", bed, "-o", tmp_path / "g.zarr")
    one_sentence(code, err, match)
    assert leftovers(tmp_path) == []


def test_missing_call_names_its_variant_and_sample(tmp_path, capsys):
    bed, _ = make_bed(tmp_path, missing=[(6, 9)])
    code, _, err = run(capsys, "ingest", bed, "-o", tmp_path / "g.zarr", "--feature-chunk", "4")
    one_sentence(code, err, "missing genotype call (variant 'rs109', sample 'ind6'); ingest with --impute mean")
    assert leftovers(tmp_path) == []
    code, out, err = run(capsys, "ingest", bed, "-o", tmp_path / "g.zarr", "--impute", "mean")
    assert code == 0, err
    assert open_store(tmp_path / "g.zarr").feature_table.info["n_imputed"] == 1


def test_variant_without_any_call_cannot_be_imputed(tmp_path):
    bed, _ = make_bed(tmp_path, missing=[(i, 2) for i in range(13)])
    with pytest.raises(WidemlError, match="no called genotype for variant 'rs102'"):
        wideml.ingest(bed, tmp_path / "g.zarr", impute="mean")
    assert leftovers(tmp_path) == []


def test_cli_bed_needs_no_labels_flag_and_unlabelled_works(tmp_path, capsys):
    bed, _ = make_bed(tmp_path)
    code, out, err = run(capsys, "ingest", bed, "-o", tmp_path / "a.zarr")
    assert code == 0, err
    assert "genome table" in out
    np.testing.assert_array_equal(open_store(tmp_path / "a.zarr").y, np.where(np.arange(13) % 2, 2, 1))
    code, _, err = run(capsys, "ingest", bed, "-o", tmp_path / "b.zarr", "--unlabelled")
    assert code == 0, err
    assert open_store(tmp_path / "b.zarr").y is None


def test_impute_for_another_source_is_refused(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((4, 3), dtype=np.float32))
    code, _, err = run(capsys, "ingest", tmp_path / "x.npy", "-o", tmp_path / "g.zarr", "--unlabelled", "--impute", "mean")
    one_sentence(code, err, "--impute (impute) only applies to genotype sources")


def test_api_checks_impute_and_contradicting_labels(tmp_path):
    bed, _ = make_bed(tmp_path)
    with pytest.raises(WidemlError, match="impute='median' is not a missing-call policy"):
        wideml.ingest(bed, tmp_path / "g.zarr", impute="median")
    with pytest.raises(WidemlError, match="contradict"):
        wideml.ingest(bed, tmp_path / "g.zarr", labels=np.arange(13) % 2, unlabelled=True)
    assert leftovers(tmp_path) == []
