"""`wideml fit lolreg` / `wideml predict` end to end: equal to LOLRegressor fitted in memory, exact model round trip, bad targets."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import wideml
from wideml import write_store
from wideml.cli.main import main

N, P = 60, 300


def _data(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, P)).astype(dtype)
    y = 2.0 * X[:, :3].astype(np.float64).sum(axis=1) + rng.standard_normal(N)
    return X, y


def _run(capsys, *args):
    code = main([str(a) for a in args] + ["--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def _predictions(path) -> tuple[list[str], np.ndarray]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["sample_id", "prediction"]
    return [r[0] for r in rows[1:]], np.array([float(r[1]) for r in rows[1:]])


@pytest.fixture(scope="module")
def store64(tmp_path_factory):
    X, y = _data()
    path = tmp_path_factory.mktemp("lolreg") / "train.zarr"
    write_store(path, X, y, feature_chunk=64)
    return path, X, y


@pytest.mark.parametrize("extra,kw", [([], {}), (["--no-robust", "--n-bins", "5"], {"robust_first": False, "n_bins": 5})])
def test_cli_fit_and_predict_equal_the_in_memory_fit(tmp_path, capsys, store64, extra, kw):
    store, X, y = store64
    model, preds = tmp_path / "m.zarr", tmp_path / "p.csv"
    code, out, err = _run(capsys, "fit", "lolreg", store, "--n-components", "4", "-o", model, *extra)
    assert code == 0, err
    assert "fitted lolreg on 60 samples x 300 features (d = 4" in out
    ref = wideml.LOLRegressor(4, **({"n_bins": 10} | kw)).fit(X, y)
    fitted = wideml.load_model(model)
    assert type(fitted).__name__ == "LOLRegressor" and fitted.n_bins == kw.get("n_bins", 10)
    np.testing.assert_allclose(fitted.coef_, ref.coef_, rtol=1e-9, atol=1e-12)
    assert np.isclose(fitted.intercept_, ref.intercept_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(fitted.bin_edges_, ref.bin_edges_)
    code, out, err = _run(capsys, "predict", model, store, "-o", preds)
    assert code == 0, err
    ids, values = _predictions(preds)
    assert ids == [str(i) for i in range(N)]
    np.testing.assert_allclose(values, ref.predict(X), rtol=1e-9, atol=1e-9)
    mse = float(np.mean((y - ref.predict(X)) ** 2))
    assert f"mean squared error {mse:.6g}" in err and "accuracy" not in err


def test_target_file_matched_by_sample_id_on_a_float32_store(tmp_path, capsys):
    X, y = _data(np.float32, seed=1)
    ids = np.array([f"s{i:02d}" for i in range(N)])
    store = tmp_path / "s.zarr"
    write_store(store, X, np.where(y > 0, "high", "low"), feature_chunk=50, sample_ids=ids)  # class labels: not the target
    order = np.random.default_rng(3).permutation(N)
    target = tmp_path / "target.tsv"
    target.write_text("sample_id\tage\n" + "".join(f"{ids[i]}\t{float(y[i])!r}\n" for i in order))
    model = tmp_path / "m.zarr"
    code, out, err = _run(capsys, "fit", "lolreg", store, "--target", target, "--n-components", "3", "-o", model)
    assert code == 0, err
    ref = wideml.LOLRegressor(3).fit(X, y)
    fitted = wideml.load_model(model)
    np.testing.assert_allclose(fitted.predict(X), ref.predict(X), rtol=1e-4, atol=1e-4)  # float32 products, other chunking
    code, out, err = _run(capsys, "predict", model, store)
    assert code == 0 and "not all numbers" in err
    assert out.splitlines()[0].startswith("s00\t")


def test_save_load_round_trip_is_exact(tmp_path, store64):
    store, X, _ = store64
    est = wideml.LOLRegressor(5, n_bins=8).fit(wideml.open_store(store))
    wideml.save_model(est, tmp_path / "m.zarr")
    back = wideml.load_model(tmp_path / "m.zarr")
    for name in ("coef_", "bin_edges_", "classes_", "offset_"):
        np.testing.assert_array_equal(np.asarray(getattr(back, name)), np.asarray(getattr(est, name)))
    assert back.intercept_ == est.intercept_ and back.n_bins_ == est.n_bins_ and back.get_params() == est.get_params()
    np.testing.assert_array_equal(np.asarray(back.components_), np.asarray(est.components_))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def _write_target(path, cells):
    path.write_text("target\n" + "".join(f"{c}\n" for c in cells))  # one column in store order: the store has no sample ids
    return path


@pytest.mark.parametrize(
    "make,args,message",
    [
        ("labels", [], "hold 'a' at sample 0, which is not a number"),
        ("target_na", ["--target", "{tmp}/t.csv"], "missing"),
        ("target_inf", ["--target", "{tmp}/t.csv"], "hold inf at sample 5"),
        ("target_short", ["--target", "{tmp}/t1.csv"], "has 59 values but the store has 60 samples"),
        ("target_text", ["--target", "{tmp}/t.csv"], "hold 'twelve' at sample 7, which is not a number"),
        ("none", ["--n-bins", "1"], "fewer than two percentile classes"),
        ("none", ["--classifier", "lda"], "--classifier applies to classification methods"),
        ("constant", ["--target", "{tmp}/t.csv"], "single value"),
    ],
)
def test_bad_target_is_one_sentence_and_exit_2(tmp_path, capsys, store64, make, args, message):
    store = store64[0]
    if make == "labels":
        store = tmp_path / "labels.zarr"
        write_store(store, store64[1], np.array(["a", "b"] * (N // 2)), feature_chunk=100)
    cells = [repr(float(v)) for v in store64[2]]
    if make == "target_na":
        cells[4] = "NA"
    elif make == "target_inf":
        cells[5] = "inf"
    elif make == "target_text":
        cells[7] = "twelve"
    elif make == "constant":
        cells = ["3.5"] * N
    _write_target(tmp_path / "t.csv", cells)
    (tmp_path / "t1.csv").write_text("".join(f"{c}\n" for c in cells[:-1]))
    args = [a.format(tmp=tmp_path) for a in args]
    code, out, err = _run(capsys, "fit", "lolreg", store, "-o", tmp_path / "m", *args)
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert len([line for line in err.strip().splitlines() if line.strip()]) == 1
    assert not (tmp_path / "m").exists() and not list(tmp_path.glob(".m.*"))


@pytest.mark.parametrize("flag", [["--n-bins", "5"], ["--target", "t.csv"]])
def test_regression_options_are_refused_for_classifiers(tmp_path, capsys, store64, flag):
    code, out, err = _run(capsys, "fit", "lol", store64[0], "-o", tmp_path / "m", *flag)
    assert code == 2 and "applies only to lolreg" in err and not (tmp_path / "m").exists()


def test_store_without_labels_names_target_option(tmp_path, capsys, store64):
    store = tmp_path / "u.zarr"
    write_store(store, store64[1], None, feature_chunk=100)
    code, out, err = _run(capsys, "fit", "lolreg", store, "-o", tmp_path / "m")
    assert code == 2 and "--target FILE" in err
