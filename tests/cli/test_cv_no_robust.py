"""`wideml cv --no-robust`: LOL's class means instead of medians (0/1/2 dosages, whose class medians mostly tie)."""

import json

import numpy as np

from adversarial.harness import run_cli
from wideml import LOL, cross_validate_dims, open_store
from wideml.storage.writer import write_store


def test_cv_no_robust_scores_lol_with_class_means(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat([1, 2], 50)
    G = rng.binomial(2, 0.3, (100, 400)).astype(np.int8)
    G[y == 2, :25] = rng.binomial(2, 0.7, (50, 25))
    write_store(tmp_path / "g.zarr", G, y, feature_chunk=64)
    reports = {}
    for flag in ([], ["--no-robust"]):
        out = tmp_path / f"cv{len(flag)}.json"
        proc = run_cli("cv", tmp_path / "g.zarr", "--methods", "lol", "--max-dim", "3", "--folds", "5", *flag, "-o", out, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        reports[bool(flag)] = json.loads(out.read_text())["results"]["lol"]["errors"]
    store = open_store(tmp_path / "g.zarr")
    for robust in (True, False):
        expected = cross_validate_dims({"lol": LOL(3, robust_first=robust)}, store, cv=5, random_state=0).results["lol"].errors
        np.testing.assert_allclose(reports[not robust], expected, atol=1e-12)
    assert min(reports[True]) < min(reports[False])  # means separate what tied medians blur
