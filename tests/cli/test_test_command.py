"""`wideml test`: Hotelling's T² after a projection on a labelled store; exit 0 with a result, 2 with one sentence."""

import json

import numpy as np
import pytest

from wideml import open_store, two_sample_test, write_store
from wideml.cli import test_command
from wideml.cli.main import main
from wideml.estimators import two_sample


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 90))
    y = np.repeat(["ctrl", "case"], 20)
    X[y == "case", :5] += 1.0
    return write_store(tmp_path_factory.mktemp("test-cli") / "s.zarr", X, y, feature_chunk=32)


def _run(capsys, *args):
    code = main([str(a) for a in args] + ["--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("method, extra", [("split", []), ("permutation", ["--permutations", "49"])])
def test_prints_the_statistic_and_p_value_and_writes_json(tmp_path, capsys, store, method, extra):
    out_path = tmp_path / "r.json"
    code, out, err = _run(capsys, "test", store, "--projection", "lol", "--n-components", "2", "--method", method, *extra,
                          "--seed", "3", "-o", out_path)
    assert code == 0, err
    doc = json.loads(out_path.read_text())
    expected = two_sample_test(open_store(store), n_components=2, method=method, n_permutations=49, random_state=3)
    assert doc["statistic"] == pytest.approx(expected.statistic) and doc["p_value"] == pytest.approx(expected.p_value)
    assert doc["method"] == method and doc["n_components"] == 2 and doc["n_passes"] == 1
    assert "Hotelling T² =" in out and f"p-value = {expected.p_value:.6g}" in out


def test_three_groups_exit_2_with_one_sentence_and_no_output(tmp_path, capsys, assert_no_output):
    path = write_store(tmp_path / "k3.zarr", np.random.default_rng(1).standard_normal((30, 20)), np.arange(30) % 3)
    out_path = tmp_path / "r.json"
    code, out, err = _run(capsys, "test", path, "-o", out_path)
    assert code == 2
    assert err.startswith("wideml: error: ") and "exactly two classes" in err and "Traceback" not in err
    assert_no_output(out_path)


def test_an_existing_output_is_not_replaced(tmp_path, capsys, store):
    out_path = tmp_path / "mine.json"
    out_path.write_text("keep")
    code, _, err = _run(capsys, "test", store, "-o", out_path)
    assert code == 2 and out_path.read_text() == "keep", err


def test_choices_agree_with_the_library():
    assert test_command.PROJECTIONS == two_sample.PROJECTIONS
    assert test_command.METHODS == two_sample.METHODS
