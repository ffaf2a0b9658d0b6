"""User-world findings on compare / test / cv (notes uw_eval, 2-10): each a refusal in one sentence or a fixed message."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import wideml
from wideml import compare
from wideml.cli.main import main
from wideml.exceptions import WidemlError

QUICK = ("--methods", "lol,pca", "--folds", "4", "--repeats", "1", "--max-dim", "2")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uw-eval")
    paths = []
    for i, shift in enumerate((0.6, 1.2)):
        rng = np.random.default_rng(20 + i)
        X = rng.standard_normal((32, 60))
        y = np.repeat([0, 1], 16)
        X[y == 1, :5] += shift
        paths.append(str(wideml.write_store(folder / f"s{i}.zarr", X, y, feature_chunk=32)))
    return paths


def _run(capsys, *args):
    try:
        code = main([str(a) for a in args] + ["--no-progress"])
    except SystemExit as exc:  # argparse's refusals
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _one_sentence(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if not line.startswith("wideml: scheduler")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# 2. a store given twice is refused, in Python and in the CLI
def test_python_compare_refuses_a_repeated_store(stores):
    same = [stores[0], stores[0].rstrip("/") + "/", os.path.relpath(stores[0])]
    for twice in ([stores[0], same[1]], [stores[0], same[2]], [wideml.open_store(stores[0]), stores[0]]):
        with pytest.raises(WidemlError, match="is given twice"):
            compare(twice + [stores[1]], "lol,pca", cv=4, repeats=1, max_dim=2)


def test_cli_compare_refuses_a_repeated_store(capsys, stores, tmp_path):
    out = tmp_path / "c.json"
    code, _, err = _run(capsys, "compare", stores[0], stores[0] + "/", stores[1], *QUICK, "-o", out)
    assert code == 2 and "given twice" in _one_sentence(err)
    assert not out.exists()


# 3. stores sharing a file name are told apart by their shortest unique path suffix
def test_same_file_name_in_two_folders_gets_path_suffix_names(stores, tmp_path, capsys):
    a, b = tmp_path / "x" / "a.zarr", tmp_path / "y" / "a.zarr"
    shutil.copytree(stores[0], a)
    shutil.copytree(stores[1], b)
    r = compare([str(a), str(b)], "lol,pca", cv=4, repeats=1, max_dim=2)
    assert list(r.stores) == ["x/a.zarr", "y/a.zarr"]
    table = r.table()
    assert "x/a.zarr" in table and "y/a.zarr" in table
    code, out, err = _run(capsys, "compare", a, b, *QUICK)
    assert code == 0, err
    assert "x/a.zarr" in out and "y/a.zarr" in out


def test_long_names_are_cut_on_the_left_in_the_table(stores):
    r = compare({"a_very_long_data_set_name_number_one": stores[0], "a_very_long_data_set_name_number_two": stores[1]},
                "lol,pca", cv=4, repeats=1, max_dim=2)
    table = r.table()
    assert "number_one" in table and "number_two" in table


# 4. an empty output path is refused, never read as "no output"
@pytest.mark.parametrize("command", [
    ("compare", "S0", "S1", *QUICK, "-o", ""),
    ("compare", "S0", "S1", *QUICK, "--plot", ""),
    ("test", "S0", "-o", ""),
    ("cv", "S0", "--methods", "lol,pca", "--folds", "4", "--max-dim", "2", "-o", ""),
    ("cv", "S0", "--methods", "lol,pca", "--folds", "4", "--max-dim", "2", "--plot", " "),
])
def test_empty_output_path_is_refused(capsys, stores, command):
    args = [stores[0] if a == "S0" else stores[1] if a == "S1" else a for a in command]
    code, out, err = _run(capsys, *args)
    assert code == 2 and "is empty" in _one_sentence(err)
    assert out == ""


# 5. CompareResult.to_json / .plot refuse a path inside (or on) an input store, like the CLI
def test_python_outputs_inside_a_store_are_refused(stores, tmp_path):
    r = compare(stores, "lol,pca", cv=4, repeats=1, max_dim=2)
    before = sorted(os.listdir(stores[0]))
    for path in (os.path.join(stores[0], "x.json"), stores[0], os.path.dirname(stores[0])):
        with pytest.raises(WidemlError, match="lies inside the input|is the input|holds the input"):
            r.to_json(path)
    with pytest.raises(WidemlError, match="lies inside the input"):
        r.plot(os.path.join(stores[1], "x.png"))
    assert sorted(os.listdir(stores[0])) == before
    r.to_json(tmp_path / "ok.json")  # outside every store: written
    assert json.loads((tmp_path / "ok.json").read_text())["stores"]


# 6. absurd repeats are refused up front
def test_huge_repeats_refused(stores, capsys, tmp_path):
    with pytest.raises(WidemlError, match="repeats"):
        compare(stores, "lol,pca", cv=4, repeats=10**9, max_dim=2)
    with pytest.raises(WidemlError, match="splits"):
        compare(stores, "lol,pca", cv=20, repeats=1000, max_dim=2)
    for command in (("compare", *stores, "--methods", "lol,pca", "--folds", "4", "--repeats", "1000000000"),
                    ("cv", stores[0], "--methods", "lol,pca", "--folds", "4", "--repeats", "1000000000")):
        code, _, err = _run(capsys, *command, "-o", tmp_path / "h.json")
        assert code == 2 and "--repeats" in err and "at most 1000" in err, err
    code, _, err = _run(capsys, "compare", *stores, "--methods", "lol,pca", "--folds", "20", "--repeats", "1000",
                        "-o", tmp_path / "h.json")
    assert code == 2 and "more than 10000" in _one_sentence(err)
    assert not (tmp_path / "h.json").exists()


# 8. class labels appear as plain values, never numpy reprs
def test_single_class_message_shows_plain_label(stores):
    X = np.random.default_rng(0).standard_normal((40, 30))
    r = compare({"a": (X, np.zeros(40, dtype=np.int64)), "b": stores[0]}, "lol,pca", cv=4, repeats=1, max_dim=2)
    failure = r.stores["a"].failure
    assert "single class (0)" in failure and "np." not in failure
    y = np.repeat(np.array([3, 7], dtype=np.int64), [38, 2])
    r = compare({"a": (X, y)}, "lol,pca", cv=4, repeats=1, max_dim=2)
    assert "class 7 has 2" in r.stores["a"].failure


# 9. one NaN label gets the NaN sentence, as several do
@pytest.mark.parametrize("n_nan", [1, 8])
def test_nan_labels_get_the_nan_sentence(stores, n_nan):
    X = np.random.default_rng(0).standard_normal((40, 30))
    y = np.repeat([0.0, 1.0], 20)
    y[:n_nan] = np.nan
    r = compare({"a": (X, y), "b": stores[0]}, "lol,pca", cv=4, repeats=1, max_dim=2)
    failure = r.stores["a"].failure
    assert "must not contain NaN" in failure and "class nan" not in failure


# 10. --seed out of range names --seed and its bound as an integer
def test_seed_out_of_range_names_the_option(capsys, stores):
    code, _, err = _run(capsys, "compare", *stores, *QUICK, "--seed", "-1")
    assert code == 2 and "--seed" in err and str(2**32 - 1) in err and "e+" not in err and "random_state" not in err
    with pytest.raises(WidemlError, match=str(2**32 - 1)) as info:
        compare(stores, "lol,pca", cv=4, repeats=1, max_dim=2, random_state=-1)
    assert "e+" not in str(info.value)
