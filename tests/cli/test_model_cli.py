"""`wideml fit / predict / transform / cv` end to end on a small store, and their bad input."""

import json

import numpy as np
import pytest

from oracles import make_data
from wideml import write_store
from wideml.cli.main import main


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "train.zarr"
    X, y = make_data(n=60, p=300, K=3)
    write_store(path, X, y, feature_chunk=64)
    return path


def _run(capsys, *args):
    code = main([str(a) for a in args] + ["--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("method", ["lol", "qoq", "pca", "rrlda", "lfl", "encoder", "kpca-nca", "kernel-lol"])
def test_fit_then_predict(tmp_path, capsys, store, method):
    model = tmp_path / "m.zarr"
    extra = ["--n-components", "4"] if method in ("lol", "qoq", "pca", "rrlda", "lfl") else []
    code, out, err = _run(capsys, "fit", method, store, "-o", model, *extra)
    assert code == 0, err
    assert "pass" in out and "model written" in out
    preds = tmp_path / "p.csv"
    code, out, err = _run(capsys, "predict", model, store, "-o", preds)
    assert code == 0, err
    rows = preds.read_text().splitlines()
    assert rows[0].startswith('"sample_id","prediction"') and len(rows) == 61
    assert "accuracy against the store's labels" in err


def test_transform_writes_embedding(tmp_path, capsys, store):
    model = tmp_path / "m.zarr"
    assert _run(capsys, "fit", "lol", store, "-o", model, "--n-components", "5")[0] == 0
    code, out, err = _run(capsys, "transform", model, store, "-o", tmp_path / "z.npy")
    assert code == 0, err
    assert np.load(tmp_path / "z.npy").shape == (60, 5)


def test_cv_report_and_plot(tmp_path, capsys, store):
    code, out, err = _run(capsys, "cv", store, "--methods", "lol,pca,rrlda,encoder", "--max-dim", "6", "--folds", "3",
                          "-o", tmp_path / "cv.json", "--plot", tmp_path / "cv.png")
    assert code == 0, err
    report = json.loads((tmp_path / "cv.json").read_text())
    assert report["n_passes"] == 1 and set(report["results"]) == {"lol", "pca", "rrlda"}
    assert len(report["results"]["lol"]["errors"]) == 6
    assert "encoder" in report["fixed_dimension_methods"]
    assert (tmp_path / "cv.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "lol" in out and "chance" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (["fit", "bogus", "{store}", "-o", "{tmp}/m"], "unknown method 'bogus'"),
        (["fit", "encoder", "{store}", "-o", "{tmp}/m", "--kernels", "linear,cosmic"], "cosmic"),
        (["fit", "lol", "{store}", "-o", "{tmp}/m", "--n-components", "500"], "larger than the data allow"),
        (["cv", "{store}", "--folds", "50"], "smallest class has 20"),
        (["predict", "{store}", "{store}"], "is a feature store"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(tmp_path, capsys, store, args, message):
    args = [a.format(store=store, tmp=tmp_path) for a in args]
    code, out, err = _run(capsys, *args)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "m").exists() and not list(tmp_path.glob(".m.partial*"))


def test_predict_store_with_other_feature_count(tmp_path, capsys, store):
    model = tmp_path / "m.zarr"
    assert _run(capsys, "fit", "lol", store, "-o", model, "--n-components", "3")[0] == 0
    X, y = make_data(n=20, p=299, K=3)
    write_store(tmp_path / "other.zarr", X, y)
    code, out, err = _run(capsys, "predict", model, tmp_path / "other.zarr")
    assert code == 2 and "has 299 features" in err and "expecting 300" in err


def test_kpca_sigma_zero_is_refused(tmp_path, capsys, store):
    code, out, err = _run(capsys, "fit", "kpca-nca", store, "-o", tmp_path / "m", "--sigma", "0")
    assert code == 2 and "sigma" in err and "Traceback" not in err
    assert not (tmp_path / "m").exists()
