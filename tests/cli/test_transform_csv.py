"""`wideml transform -o z.csv` writes a header and the sample ids, as `predict`'s CSV does (issue 22)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from oracles import make_data
from wideml import LOL, load_model, open_store, save_model, write_store
from wideml.cli.main import main


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("transform_csv")
    X, y = make_data(n=30, p=120, K=2)
    ids = [f"sub-{i:02d}" for i in range(30)]
    ids[3] = "sub,03 \"quoted\""  # an id the CSV must quote
    write_store(folder / "s.zarr", X, y, feature_chunk=64, sample_ids=ids)
    write_store(folder / "plain.zarr", X, y, feature_chunk=64)  # no sample ids
    save_model(LOL(n_components=3).fit(open_store(folder / "s.zarr")), folder / "m.zarr")
    return folder, ids


def _run(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args] + ["--no-progress"])
    return code, capsys.readouterr().err


def _rows(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_transform_csv_has_header_and_sample_ids(fitted, tmp_path, capsys):
    folder, ids = fitted
    code, err = _run(capsys, "transform", folder / "m.zarr", folder / "s.zarr", "-o", tmp_path / "z.csv")
    assert code == 0, err
    rows = _rows(tmp_path / "z.csv")
    assert rows[0] == ["sample_id", "component_1", "component_2", "component_3"]
    assert [r[0] for r in rows[1:]] == ids
    expected = load_model(folder / "m.zarr").transform(open_store(folder / "s.zarr"))
    got = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    np.testing.assert_array_equal(got, expected)  # written to full precision


def test_transform_csv_without_store_ids_numbers_the_samples_like_predict(fitted, tmp_path, capsys):
    folder, _ = fitted
    code, err = _run(capsys, "transform", folder / "m.zarr", folder / "plain.zarr", "-o", tmp_path / "z.csv")
    assert code == 0, err
    rows = _rows(tmp_path / "z.csv")
    assert rows[0][0] == "sample_id" and len(rows) == 31
    assert [r[0] for r in rows[1:]] == [str(i) for i in range(30)]


def test_transform_npy_is_unchanged(fitted, tmp_path, capsys):
    folder, _ = fitted
    code, err = _run(capsys, "transform", folder / "m.zarr", folder / "s.zarr", "-o", tmp_path / "z.npy")
    assert code == 0, err
    assert np.load(tmp_path / "z.npy", allow_pickle=False).shape == (30, 3)
