"""The store commands (ingest, rechunk, info) on good and bad input.

Bad input exits with status 2 and one ``wideml: error: ...`` sentence on
stderr, no traceback, and no output (or partial sibling) left behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import zarr

from wideml.cli.main import main
from wideml.exceptions import PerformanceWarning
from wideml.storage import open_store, write_store


@pytest.fixture(autouse=True)
def _independent_config(restore_dask_config):
    """--config/--memory-limit set dask.config globally; keep every test independent."""


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code, err, match=None):
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("wideml: error: "), err
    assert lines[0].endswith("."), err
    if match:
        assert match in lines[0], err


@pytest.fixture
def npy(tmp_path, rng):
    X = rng.standard_normal((12, 9)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "labels.csv").write_text("label\n" + "\n".join(str(i % 3) for i in range(12)) + "\n")
    return tmp_path / "x.npy", tmp_path / "labels.csv", X


# ----------------------------------------------------------------------------- success


@pytest.mark.parametrize("suffix", [".zarr", ".h5"])
def test_ingest_then_info(tmp_path, capsys, npy, suffix):
    x, labels, X = npy
    out = tmp_path / f"out{suffix}"
    code, stdout, err = run(capsys, "ingest", x, "-o", out, "--labels", labels, "--feature-chunk", 4)
    assert code == 0, err
    assert "12 samples x 9 features" in stdout and "12 x 4" in stdout
    np.testing.assert_array_equal(open_store(out).X.compute(), X)
    code, stdout, _ = run(capsys, "info", out, "--json")
    assert code == 0 and '"n_features": 9' in stdout


def test_ingest_csv_with_label_column(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("g1,g2,dx\n1,2,a\n3,4,b\n5,6,a\n")
    code, stdout, err = run(capsys, "ingest", tmp_path / "d.csv", "-o", tmp_path / "o.zarr", "--label-column", "dx", "--dtype", "float32")
    assert code == 0, err
    store = open_store(tmp_path / "o.zarr")
    np.testing.assert_array_equal(store.X.compute(), [[1, 2], [3, 4], [5, 6]])
    assert list(store.y) == ["a", "b", "a"] and store.dtype == np.float32


def test_ingest_unlabelled(tmp_path, capsys, npy):
    x, _, _ = npy
    code, stdout, err = run(capsys, "ingest", x, "-o", tmp_path / "o.zarr", "--unlabelled")
    assert code == 0, err
    assert "unlabelled" in stdout
    assert open_store(tmp_path / "o.zarr").y is None


def test_overwrite_replaces_existing_output(tmp_path, capsys, npy, no_leftovers):
    x, labels, X = npy
    out = tmp_path / "o.zarr"
    assert run(capsys, "ingest", x, "-o", out, "--labels", labels)[0] == 0
    code, _, err = run(capsys, "ingest", x, "-o", out, "--labels", labels)
    assert_usage_error(code, err, "already exists; pass --overwrite")
    np.save(x, X * 2)
    assert run(capsys, "ingest", x, "-o", out, "--labels", labels, "--overwrite")[0] == 0
    np.testing.assert_array_equal(open_store(out).X.compute(), X * 2)
    no_leftovers(out)


@pytest.mark.parametrize("style", ["positional", "option"])
def test_rechunk_sample_chunked_store(tmp_path, capsys, rng, style, no_leftovers):
    X = rng.standard_normal((20, 30)).astype(np.float32)
    write_store(tmp_path / "rows.zarr", X, np.arange(20) % 2, sample_chunk=4)
    with pytest.warns(PerformanceWarning, match="wideml rechunk"):  # the warning says how to fix the layout
        assert run(capsys, "info", tmp_path / "rows.zarr")[0] == 0
    out = tmp_path / "full.h5"
    args = [out] if style == "positional" else ["-o", out]
    with warnings.catch_warnings(record=True) as caught:
        code, stdout, err = run(capsys, "rechunk", tmp_path / "rows.zarr", *args, "--feature-chunk", 8)
    assert code == 0, err
    assert not [w for w in caught if issubclass(w.category, PerformanceWarning)]
    store = open_store(out)
    assert store.stored_chunks == (20, 8)
    np.testing.assert_array_equal(store.X.compute(), X)
    no_leftovers(out)


# ----------------------------------------------------------------------------- bad input


def test_ingest_missing_source(tmp_path, capsys, assert_no_output):
    code, _, err = run(capsys, "ingest", tmp_path / "nope.npy", "-o", tmp_path / "o.zarr", "--unlabelled")
    assert_usage_error(code, err, "does not exist")
    assert_no_output(tmp_path / "o.zarr")


def test_ingest_without_labels_option(tmp_path, capsys, npy, assert_no_output):
    x, _, _ = npy
    code, _, err = run(capsys, "ingest", x, "-o", tmp_path / "o.zarr")
    assert_usage_error(code, err, "--unlabelled")
    assert_no_output(tmp_path / "o.zarr")


@pytest.mark.parametrize("command", ["info", "rechunk"])
def test_missing_store(tmp_path, capsys, command, assert_no_output):
    extra = [tmp_path / "o.zarr"] if command == "rechunk" else []
    code, _, err = run(capsys, command, tmp_path / "nope.zarr", *extra)
    assert_usage_error(code, err, "no feature store")
    assert_no_output(tmp_path / "o.zarr")


def _not_a_store(tmp_path, kind):
    if kind == "empty-dir":
        (tmp_path / "thing").mkdir()
    elif kind == "random-file":
        (tmp_path / "thing").write_bytes(os.urandom(256))
    elif kind == "group-without-X":
        zarr.create_group(store=str(tmp_path / "thing"), zarr_format=3).create_array("y", shape=(3,), dtype="int64")
    else:  # garbage zarr.json
        (tmp_path / "thing").mkdir()
        (tmp_path / "thing" / "zarr.json").write_text("\x00{garbage")
    return tmp_path / "thing"


@pytest.mark.parametrize("kind", ["empty-dir", "random-file", "group-without-X", "corrupt-zarr-json"])
@pytest.mark.parametrize("command", ["info", "rechunk"])
def test_not_a_store(tmp_path, capsys, kind, command, assert_no_output):
    path = _not_a_store(tmp_path, kind)
    extra = [tmp_path / "o.zarr"] if command == "rechunk" else []
    code, _, err = run(capsys, command, path, *extra)
    assert_usage_error(code, err, "corrupt" if kind == "corrupt-zarr-json" else "not a feature store")
    assert_no_output(tmp_path / "o.zarr")


def test_labels_length_mismatch(tmp_path, capsys, npy, assert_no_output):
    x, _, _ = npy
    (tmp_path / "short.csv").write_text("0\n1\n0\n")
    code, _, err = run(capsys, "ingest", x, "-o", tmp_path / "o.h5", "--labels", tmp_path / "short.csv")
    assert_usage_error(code, err, "3 entries but X has 12 samples")
    assert_no_output(tmp_path / "o.h5")


def test_non_numeric_x(tmp_path, capsys, assert_no_output):
    (tmp_path / "d.csv").write_text("1,2\nthree,4\n5,6\n")
    code, _, err = run(capsys, "ingest", tmp_path / "d.csv", "-o", tmp_path / "o.zarr", "--unlabelled", "--no-header")
    assert_usage_error(code, err, "non-numeric value 'three'")
    assert_no_output(tmp_path / "o.zarr")
    np.save(tmp_path / "s.npy", np.array([["a", "b"]]))
    code, _, err = run(capsys, "ingest", tmp_path / "s.npy", "-o", tmp_path / "o.zarr", "--unlabelled")
    assert_usage_error(code, err, "not numeric")
    assert_no_output(tmp_path / "o.zarr")


@pytest.mark.parametrize("shape, hint", [((10,), "reshape"), ((3, 4, 5), "flatten each sample")])
def test_wrong_dimensional_x(tmp_path, capsys, shape, hint, assert_no_output):
    np.save(tmp_path / "x.npy", np.zeros(shape))
    code, _, err = run(capsys, "ingest", tmp_path / "x.npy", "-o", tmp_path / "o.zarr", "--unlabelled")
    assert_usage_error(code, err, hint)
    assert_no_output(tmp_path / "o.zarr")


def test_labels_with_one_class(tmp_path, capsys, npy, assert_no_output):
    x, _, _ = npy
    (tmp_path / "one.csv").write_text("1\n" * 12)
    code, _, err = run(capsys, "ingest", x, "-o", tmp_path / "o.zarr", "--labels", tmp_path / "one.csv")
    assert_usage_error(code, err, "only one class")
    assert_no_output(tmp_path / "o.zarr")


def test_rechunk_existing_output(tmp_path, capsys, make_store):
    src, _, _ = make_store(name="a")
    other, X, _ = make_store(name="b")
    code, _, err = run(capsys, "rechunk", src, other)
    assert_usage_error(code, err, "already exists")
    np.testing.assert_array_equal(open_store(other).X.compute(), X)  # untouched


@pytest.mark.parametrize(
    "content, match",
    [(None, "cannot read config file"), ("wideml: [unclosed\n", "not valid YAML"), ("wideml:\n  memroy-limit: 1GiB\n", "unknown key 'memroy-limit'"),
     ("wideml:\n  threads: many\n", "threads must be a positive integer or auto")],
    ids=["missing", "syntax-error", "unknown-key", "bad-threads"],
)
def test_bad_config_file(tmp_path, capsys, npy, content, match, assert_no_output):
    x, labels, _ = npy
    config = tmp_path / "nonexistent.yaml"
    if content is not None:
        config.write_text(content)
    code, _, err = run(capsys, "ingest", x, "-o", tmp_path / "o.zarr", "--labels", labels, "--config", config)
    assert_usage_error(code, err, match)
    assert_no_output(tmp_path / "o.zarr")
    code, _, err = run(capsys, "info", x.parent / "nothing", "--config", config)
    assert_usage_error(code, err, match)


def test_unreachable_scheduler_fails_fast(tmp_path, capsys, make_store, assert_no_output):
    src, _, _ = make_store()
    start = time.monotonic()
    code, _, err = run(capsys, "rechunk", src, tmp_path / "o.zarr", "--scheduler", "tcp://127.0.0.1:1")
    assert time.monotonic() - start < 20
    assert_usage_error(code, err, "cannot reach a dask scheduler")
    assert_no_output(tmp_path / "o.zarr")


def test_console_script_prints_no_traceback(tmp_path, npy):
    """The real process: exit status 2 and a one-line error on stderr."""
    x, _, _ = npy
    (tmp_path / "one.csv").write_text("1\n" * 12)
    proc = subprocess.run(
        [sys.executable, "-m", "wideml.cli.main", "ingest", str(x), "-o", str(tmp_path / "o.zarr"), "--labels", str(tmp_path / "one.csv")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("wideml: error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o.zarr").exists()
