"""maps.json records the intercept b of every discriminant weight map, so `decision_function(X) = X @ w + b` can be
computed from the written files alone and equals the model's decision_function (issue 22)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adversarial.harness import run_cli
from oracles import make_data
from wideml import LOL, PCA, EmbeddingClassifier, load_model, open_store, save_model, write_maps, write_store


def _from_files(folder, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) read from the .npy maps and maps.json only."""
    man = json.loads((folder / "maps.json").read_text())
    entries = {m["name"]: m for m in man["maps"]}
    W = np.stack([np.load(folder / f"{name}.npy", allow_pickle=False) for name in names], axis=1)
    b = np.array([entries[name]["intercept"] for name in names], dtype=np.float64)
    return W, b


def test_two_classes_cli_maps_give_the_decision_function(tmp_path):
    X, y = make_data(n=50, p=90, K=2, offset=3.0, seed=2)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=32)
    proc = run_cli("fit", "lol", tmp_path / "s.zarr", "-o", tmp_path / "m.zarr", "--n-components", "3")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("maps", tmp_path / "m.zarr", "-o", tmp_path / "maps", "--png", "none")
    assert proc.returncode == 0, proc.stderr
    W, b = _from_files(tmp_path / "maps", ["discriminant_weights"])
    assert "discriminant_weights: discriminant_weights.npy (intercept b = " in proc.stdout
    model = load_model(tmp_path / "m.zarr")
    X_new = make_data(n=12, p=90, K=2, offset=3.0, seed=9)[0]
    for data in (X, X_new):
        expected = model.decision_function(data)
        np.testing.assert_allclose((data @ W + b)[:, 0], expected, rtol=1e-6, atol=1e-6)
    assert abs(b[0]) > 1e-3  # with offsets the intercept matters: dropping it would give another answer
    assert not np.allclose((X @ W)[:, 0], model.decision_function(X), atol=1e-3)


@pytest.mark.parametrize("embedding", [LOL(n_components=4), PCA(n_components=5)], ids=["lol", "pca"])
def test_three_classes_one_intercept_per_class(tmp_path, embedding):
    X, y = make_data(n=60, p=70, K=3, offset=2.0, seed=4)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=32)
    model = EmbeddingClassifier(embedding).fit(open_store(tmp_path / "s.zarr"))
    save_model(model, tmp_path / "m.zarr")
    write_maps(tmp_path / "m.zarr", tmp_path / "maps", plot=None)
    W, b = _from_files(tmp_path / "maps", [f"discriminant_weights_{k}" for k in range(3)])
    assert b.shape == (3,) and len(set(b.tolist())) == 3
    np.testing.assert_allclose(X @ W + b, model.decision_function(X), rtol=1e-6, atol=1e-6)


def test_only_discriminant_maps_carry_an_intercept(tmp_path):
    X, y = make_data(n=40, p=50, K=2, seed=1)
    write_maps(EmbeddingClassifier(LOL(n_components=2)).fit(X, y), tmp_path / "maps", plot=None)
    man = json.loads((tmp_path / "maps" / "maps.json").read_text())
    assert [m["name"] for m in man["maps"] if "intercept" in m] == ["discriminant_weights"]
    assert all(isinstance(m["intercept"], float) for m in man["maps"] if "intercept" in m)
