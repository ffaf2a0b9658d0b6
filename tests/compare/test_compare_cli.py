"""`wideml compare`: three tiny stores end to end, outputs atomic and never over a user's file, bad input exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

import wideml
from wideml import compare
from wideml.cli import compare_command
from wideml.cli.main import main
from wideml.estimators import compare as compare_module


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare-cli")
    paths = []
    for i, shift in enumerate((0.5, 0.9, 1.4)):
        rng = np.random.default_rng(10 + i)
        X = rng.standard_normal((40, 200)).astype(np.float32)
        y = np.repeat(["a", "b"], 20)
        X[y == "b", :8] += shift
        paths.append(wideml.write_store(folder / f"d{i}.zarr", X, y, feature_chunk=64))
    return paths


def _run(capsys, *args):
    code = main([str(a) for a in args] + ["--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


ARGS = ("--methods", "lol,pca,rrlda,lfl,rp", "--folds", "4", "--repeats", "2", "--max-dim", "4")


def test_three_stores_end_to_end(tmp_path, capsys, stores, no_leftovers):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    out_json, out_png = tmp_path / "compare.json", tmp_path / "compare.png"
    code, out, err = _run(capsys, "compare", *stores, *ARGS, "-o", out_json, "--plot", out_png)
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    expected = compare(stores, "lol,pca,rrlda,lfl,rp", cv=4, repeats=2, max_dim=4)
    assert list(doc["stores"]) == ["d0", "d1", "d2"] and doc["ranked_stores"] == ["d0", "d1", "d2"]
    for name, s in expected.stores.items():
        for m, sc in s.scores.items():
            got = doc["stores"][name]["scores"][m]
            assert (got["dim"], got["error"], got["kappa"]) == (sc.dim, pytest.approx(sc.error), pytest.approx(sc.kappa))
    for t, got in zip(expected.tests, doc["wilcoxon"]["comparisons"]):
        assert (got["method"], got["measure"]) == (t.method, t.measure)
        assert got["p_one_sided"] == pytest.approx(t.p_one_sided) and got["p_two_sided"] == pytest.approx(t.p_two_sided)
    assert doc["mean_ranks"] == pytest.approx(expected.mean_ranks)
    assert out_png.read_bytes()[:4] == b"\x89PNG"
    assert "p one-sided (lol better)" in out and "mean rank" in out and f"report written to {out_json}" in out
    no_leftovers(out_json)
    no_leftovers(out_png)
    quick = ("--methods", "lol,pca", "--folds", "4", "--repeats", "1", "--max-dim", "2")
    code, _, err = _run(capsys, "compare", stores[0], *quick, "-o", out_json)  # exists: refused without --overwrite
    assert code == 2 and "--overwrite" in err and json.loads(out_json.read_text()) == doc
    code, _, err = _run(capsys, "compare", stores[0], *quick, "-o", out_json, "--overwrite")  # wideml wrote it: replaced
    assert code == 0, err
    assert list(json.loads(out_json.read_text())["stores"]) == ["d0"]


def test_a_store_refused_is_in_the_table_and_the_others_go_on(tmp_path, capsys, stores):
    rng = np.random.default_rng(3)
    small = wideml.write_store(tmp_path / "tiny.zarr", rng.standard_normal((20, 30)), np.r_[np.zeros(17), np.ones(3)])
    out_json = tmp_path / "c.json"
    code, out, err = _run(capsys, "compare", stores[0], small, "--methods", "lol,pca", "--folds", "4", "--repeats", "1",
                          "--max-dim", "2", "-o", out_json)
    assert code == 0, err
    assert "tiny" in out and "refused: 4-fold stratified CV needs 4 samples" in out
    assert "class 1.0 has 3" in json.loads(out_json.read_text())["stores"]["tiny"]["failure"]


@pytest.mark.parametrize("extra, match", [
    (["--methods", "lol"], "compare needs at least two"),
    (["--methods", "lol,svm"], "'svm' is not a method compare can score"),
    (["--methods", "pca,rp"], "--reference 'lol' is not among --methods"),
    (["--folds", "1"], "--folds 1 is too few"),
    (["--max-dim", "0"], "neither a whole number"),
])
def test_bad_options_exit_2_with_one_sentence_and_no_output(tmp_path, capsys, stores, assert_no_output, extra, match):
    out_json = tmp_path / "c.json"
    try:
        code, _, err = _run(capsys, "compare", *stores, "-o", out_json, *extra)
    except SystemExit as exc:  # argparse's own refusal (a bad --max-dim), one sentence too
        code, err = exc.code, capsys.readouterr().err
    assert code == 2 and match in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert_no_output(out_json)


def test_bad_stores_and_outputs_exit_2(tmp_path, capsys, stores, assert_no_output):
    out_json = tmp_path / "c.json"
    code, _, err = _run(capsys, "compare", stores[0], tmp_path / "missing.zarr", "-o", out_json)
    assert code == 2 and "no feature store" in err
    unlabelled = wideml.write_store(tmp_path / "nolabels.zarr", np.zeros((10, 5)))
    code, _, err = _run(capsys, "compare", stores[0], unlabelled, "-o", out_json)
    assert code == 2 and "holds no labels" in err
    code, _, err = _run(capsys, "compare", *stores, "-o", stores[1] / "c.json")
    assert code == 2 and "lies inside the input" in err
    code, _, err = _run(capsys, "compare", *stores, "-o", out_json, "--plot", out_json)
    assert code == 2 and "the same path" in err
    assert_no_output(out_json)
    mine = tmp_path / "mine.json"
    mine.write_text("keep")
    code, _, err = _run(capsys, "compare", *stores, "-o", mine, "--overwrite")
    assert code == 2 and mine.read_text() == "keep" and "cannot prove it wrote it" in err
    tiny = wideml.write_store(tmp_path / "tiny.zarr", np.random.default_rng(0).standard_normal((8, 5)), np.r_[np.zeros(6), np.ones(2)])
    code, out, err = _run(capsys, "compare", tiny, "-o", out_json)  # the only store cannot be scored: nothing written
    assert code == 2 and "no store could be scored" in err and out == ""
    assert_no_output(out_json)


def test_method_names_agree_with_the_library():
    assert compare_command.METHOD_NAMES == compare_module.METHOD_NAMES
