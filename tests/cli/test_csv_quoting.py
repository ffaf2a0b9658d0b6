"""predict's and transform's CSVs quote text sample ids and labels, so ``NA``, ``007`` and `` lead`` read back as given (issue 22).

Numbers stay bare, so a reader that types unquoted fields as numbers
(``csv.QUOTE_NONNUMERIC``, in the csv module and in pandas) gets the ids and
labels as text and the probabilities and components as floats. pandas' reader
with no options reads ``NA`` as NaN and all-digit ids as numbers whatever the
quoting, so the tests read with ``quoting=csv.QUOTE_NONNUMERIC,
keep_default_na=False`` (pandas) and with ``csv.reader``.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from oracles import make_data
from wideml import LOL, EmbeddingClassifier, open_store, save_model, write_store
from wideml.cli.main import main

IDS = ["NA", "007", " lead", "trail ", "a,b", 'say "hi"', "1e3", "0.5"]


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """The CLI sets dask.config globally; keep every test independent."""


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("csv_quoting")
    X, codes = make_data(n=24, p=60, K=2)
    y = np.array(["007", "010"])[codes]
    ids = IDS + [f"s{i}" for i in range(len(IDS), 24)]
    write_store(folder / "s.zarr", X, y, feature_chunk=32, sample_ids=ids)
    save_model(EmbeddingClassifier(LOL(n_components=2)).fit(open_store(folder / "s.zarr")), folder / "m.zarr")
    return folder, ids, y


def _run(tmp_path, folder, command) -> str:
    out = tmp_path / f"{command}.csv"
    code = main([command, str(folder / "m.zarr"), str(folder / "s.zarr"), "-o", str(out), "--no-progress"])
    assert code == 0
    return out


@pytest.mark.parametrize("command", ["predict", "transform"])
def test_text_ids_are_quoted_and_numbers_bare(fitted, tmp_path, command):
    folder, _, _ = fitted
    lines = _run(tmp_path, folder, command).read_text(encoding="utf-8").splitlines()
    assert lines[1].startswith('"NA",') and lines[2].startswith('"007",') and lines[3].startswith('" lead",')
    assert lines[5].startswith('"a,b",') and lines[6].startswith('"say ""hi""",')
    last = lines[1].split(",")[-1]
    assert not last.startswith('"') and np.isfinite(float(last))


@pytest.mark.parametrize("command", ["predict", "transform"])
def test_csv_reader_with_quote_nonnumeric_gets_ids_as_text_and_values_as_floats(fitted, tmp_path, command):
    folder, ids, _ = fitted
    with open(_run(tmp_path, folder, command), newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh, quoting=csv.QUOTE_NONNUMERIC))
    assert [r[0] for r in rows[1:]] == ids
    assert all(isinstance(v, float) for r in rows[1:] for v in r[-2:])
    if command == "predict":  # text labels come back as text, zero padding kept
        assert {r[1] for r in rows[1:]} <= {"007", "010"} and len({r[1] for r in rows[1:]}) == 2


def test_pandas_reads_ids_and_labels_back_as_given(fitted, tmp_path):
    pd = pytest.importorskip("pandas")
    folder, ids, y = fitted
    # pandas types a column of quoted digits as numbers even under QUOTE_NONNUMERIC: the all-digit labels need dtype=str
    frame = pd.read_csv(_run(tmp_path, folder, "predict"), quoting=csv.QUOTE_NONNUMERIC, keep_default_na=False,
                        dtype={"prediction": str})
    assert frame["sample_id"].tolist() == ids
    assert set(frame["prediction"].tolist()) <= {"007", "010"}
    assert list(frame.columns) == ["sample_id", "prediction", "p_007", "p_010"]
    assert frame["p_007"].dtype == np.float64
    np.testing.assert_allclose(frame["p_007"] + frame["p_010"], 1.0, atol=1e-5)

