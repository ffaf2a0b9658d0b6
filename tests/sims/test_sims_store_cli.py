"""simulate_to_store and the ``wideml simulate`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wideml.cli.main import main
from wideml.exceptions import WidemlError
from wideml.sims import SETTINGS, sample_info, simulate, simulate_to_store
from wideml.sims.rng import TILE
from wideml.storage import open_store


@pytest.mark.parametrize("suffix", [".zarr", ".h5"])
def test_store_equals_lazy_array(tmp_path, suffix):
    path = simulate_to_store("robust", tmp_path / f"s{suffix}", 30, 2500, seed=9, feature_chunk=600, dtype="float64", b=3.0)
    store = open_store(path)
    assert store.X.shape == (30, 2500) and store.stored_chunks == (30, 600) and store.dtype == np.float64
    X, y = simulate("robust", 30, 2500, seed=9, b=3.0)
    np.testing.assert_array_equal(store.X.compute(), X.compute())
    np.testing.assert_array_equal(store.y, y)
    source = json.loads(store.attrs["source"])
    assert source["simulator"] == "robust" and source["seed"] == 9 and source["params"]["b"] == 3.0


def test_default_chunks_are_whole_tiles(tmp_path):
    import dask

    with dask.config.set({"wideml.chunk-size": "100KiB"}):  # 3657 float32 features of 7 samples
        path = simulate_to_store("trunk", tmp_path / "t.zarr", 7, 5 * TILE + 3)
        small = simulate_to_store("trunk", tmp_path / "s.zarr", 7, 3000)
        huge_n = simulate_to_store("trunk", tmp_path / "h.zarr", 100, 3000)  # 256 features per 100 KiB
    assert open_store(path).dtype == np.float32
    assert open_store(path).stored_chunks == (7, 3 * TILE)
    assert open_store(small).stored_chunks == (7, 3000)
    assert open_store(huge_n).stored_chunks == (100, TILE)


def test_distributed_path_writes_the_same_values(tmp_path, monkeypatch):
    """With a cluster the workers generate and the client writes, in batches; same bytes."""
    import wideml.sims.generate as generate

    monkeypatch.setattr(generate, "active_client", lambda: object())
    path = simulate_to_store("cross", tmp_path / "c.zarr", 9, 1000, seed=1, feature_chunk=300)
    monkeypatch.undo()
    np.testing.assert_array_equal(open_store(path).X.compute(), simulate("cross", 9, 1000, seed=1)[0].compute().astype(np.float32))


def test_processes_scheduler_writes_on_threads(tmp_path):
    """The writer cannot be pickled, so under a processes scheduler the write graph runs on threads."""
    from wideml.runtime import use_scheduler

    with use_scheduler("processes"):
        path = simulate_to_store("xor", tmp_path / "x.zarr", 6, 2100, seed=4, feature_chunk=1024)
    np.testing.assert_array_equal(open_store(path).X.compute(), simulate("xor", 6, 2100, seed=4, dtype="float32")[0].compute())


def test_refuses_to_overwrite_and_single_class(tmp_path):
    simulate_to_store("trunk", tmp_path / "t.zarr", 10, 50)
    with pytest.raises(WidemlError, match="already exists"):
        simulate_to_store("trunk", tmp_path / "t.zarr", 10, 50)
    simulate_to_store("trunk", tmp_path / "t.zarr", 10, 60, overwrite=True)
    assert open_store(tmp_path / "t.zarr").n_features == 60
    with pytest.raises(WidemlError, match="one class"):
        simulate_to_store("trunk", tmp_path / "one.zarr", 1, 50)
    assert not (tmp_path / "one.zarr").exists()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"name": "nope"}, "unknown simulation setting 'nope'; choose one of cigars, trunk"),
        ({"bogus": 1}, "has no parameter 'bogus'"),
        ({"b": "x"}, "is not a number"),
        ({"priors": (0.2, 0.2)}, "sum to 1"),
        ({"priors": (0.5, 0.3, 0.2)}, "3 entries for 2 classes"),
        ({"seed": -1}, "seed"),
        ({"n_features": 0}, "at least 1 features"),
        ({"dtype": "int32"}, "float32 or float64"),
        ({"chunks": (3, 3)}, "add up"),
    ],
)
def test_bad_input_is_one_sentence(kwargs, match):
    args = {"name": "trunk", "n_samples": 5, "n_features": 10, **kwargs}
    with pytest.raises(WidemlError, match=match):
        simulate(**args)


def test_setting_specific_checks():
    with pytest.raises(WidemlError, match="rho"):
        simulate("toeplitz", 5, 10, rho=1.0)
    with pytest.raises(WidemlError, match="signal coordinates"):
        simulate("enc-normal", 5, 3)
    with pytest.raises(WidemlError, match="s0"):
        simulate("fat-tails", 5, 4)
    with pytest.raises(WidemlError, match="too few"):
        simulate("hump", 5, 2, n_classes=4)


def test_registry_entries_describe_themselves():
    assert len(SETTINGS) == 18
    for name, setting in SETTINGS.items():
        assert setting.name == name and setting.description and setting.reference and setting.default_n_features > 0
        assert isinstance(dict(setting.defaults), dict)
    assert SETTINGS["enc-normal"].default_n_features == 5000
    info = sample_info("robust", 50, seed=0)
    assert set(info) == {"y", "component", "outlier"} and info["y"].shape == (50,)


def test_cli_must_show_command(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "trunk", "--n-samples", "200", "--n-features", "3000", "-o", "t.zarr"]) == 0
    assert main(["info", "t.zarr"]) == 0
    out = capsys.readouterr().out
    assert "200 samples x 3000 features" in out and "float32" in out and "chunks" in out
    y = simulate("trunk", 200, 3000, seed=0)[1]
    counts = np.bincount(y)
    assert f"0: {counts[0]}, 1: {counts[1]}" in out


def test_cli_options_and_params(tmp_path):
    out = tmp_path / "h.h5"
    rc = main(["simulate", "hump", "--n-samples", "40", "--n-features", "64", "-o", str(out), "--seed", "3",
               "--dtype", "float64", "--feature-chunk", "16", "-P", "n_classes=3", "-P", "priors=0.2,0.3,0.5"])
    assert rc == 0
    store = open_store(out)
    assert store.stored_chunks == (40, 16) and store.dtype == np.float64
    X, y = simulate("hump", 40, 64, seed=3, n_classes=3, priors=(0.2, 0.3, 0.5))
    np.testing.assert_array_equal(store.X.compute(), X.compute())


@pytest.mark.parametrize("argv", [["simulate", "--list"], ["simulate", "list"]])
def test_cli_list(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    for name in SETTINGS:
        assert name in out
    assert len(out.strip().splitlines()) == len(SETTINGS)


@pytest.mark.parametrize(
    "argv,match",
    [
        (["simulate", "trunkk", "--n-samples", "5", "-o", "x.zarr"], "unknown simulation setting 'trunkk'; choose one of cigars"),
        (["simulate", "trunk", "-o", "x.zarr"], "--n-samples"),
        (["simulate", "trunk", "--n-samples", "5"], "-o OUT"),
        (["simulate", "trunk", "--n-samples", "5", "-o", "x.zarr", "-P", "b"], "KEY=VALUE"),
        (["simulate"], "no setting given"),
    ],
)
def test_cli_errors_exit_2_without_traceback(argv, match, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err
    assert not (tmp_path / "x.zarr").exists()
