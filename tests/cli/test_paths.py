"""Paths are made absolute at the CLI and API boundary (no graph carries a relative path)."""

from __future__ import annotations

import argparse
import os

import numpy as np
import pytest

from wideml.cli.main import absolute_paths, main
from wideml.runner.workdir import resolve_workdir
from wideml.exceptions import ConfigError


def test_absolute_paths_rewrites_path_arguments_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(store="t.zarr", output="out/m.model", plot="~/p.png", source="f.h5:/X", labels="memory://y",
                              model="", method="lol", n_components=3, scheduler="tcp://127.0.0.1:8786")
    absolute_paths(args)
    assert args.store == str(tmp_path / "t.zarr")
    assert args.output == str(tmp_path / "out" / "m.model")
    assert args.plot == os.path.expanduser("~/p.png")
    assert args.source == str(tmp_path / "f.h5:") + "/X"
    assert args.labels == "memory://y" and args.model == "" and args.method == "lol"
    assert args.scheduler == "tcp://127.0.0.1:8786"


def test_cli_fit_with_relative_paths_records_absolute_ones(tmp_path, monkeypatch, capsys):
    import wideml

    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 50)).astype(np.float32) + np.repeat(np.eye(3, 50) * 4, 10, axis=0).astype(np.float32)
    wideml.write_store(tmp_path / "t.zarr", X, np.repeat([0, 1, 2], 10), feature_chunk=16)
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "lol", "t.zarr", "-o", "m.model", "--no-progress"]) == 0
    assert str(tmp_path / "m.model") in capsys.readouterr().out
    monkeypatch.chdir(tmp_path.parent)
    model = wideml.load_model(tmp_path / "m.model")
    assert model.predict(wideml.open_store(tmp_path / "t.zarr")).tolist() == np.repeat([0, 1, 2], 10).tolist()


def test_resolve_workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_workdir("wd") == os.path.realpath(tmp_path / "wd")
    assert os.path.isabs(resolve_workdir(None))
    with pytest.raises(ConfigError, match="empty"):
        resolve_workdir("  ")


def test_relative_workdir_survives_a_change_of_directory(tmp_path, monkeypatch):
    """workdir="wd" then chdir: the lazily stored loadings still read the right files."""
    import wideml

    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 64)).astype(np.float32)
    y = np.repeat([0, 1], 20)
    X[y == 1, :8] += 3
    wideml.write_store(tmp_path / "t.zarr", X, y, feature_chunk=16)
    monkeypatch.chdir(tmp_path)
    lol = wideml.LOL(n_components=2, workdir="wd").fit(wideml.open_store("t.zarr"))
    assert lol._group.startswith(str(tmp_path / "wd"))
    monkeypatch.chdir(tmp_path.parent)
    A = np.asarray(lol.components_)
    ref = np.asarray(wideml.LOL(n_components=2).fit(X, y).components_)
    for a, b in zip(A, ref):
        assert min(np.abs(a - b).max(), np.abs(a + b).max()) < 1e-3
