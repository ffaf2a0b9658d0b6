"""One small image store, cross-validated, fitted and mapped through the CLI once for the report tests (module scope).

Its class labels are an attacker's: ``<script>...</script>`` and a label with ``&``, quotes and ``$``
(matplotlib's mathtext marker), so every test of the report also tests that user strings are escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import map_fixtures as mf
from report.evil import LABELS
from wideml.cli.main import main



@dataclass
class Run:
    folder: Path
    store: Path
    cv_json: Path
    cv_html: Path
    model: Path
    fit_html: Path
    maps: Path
    report: Path
    y: np.ndarray


def cli(*args) -> int:
    return main([*map(str, args), "--no-progress"])


@pytest.fixture(scope="session")
def run(tmp_path_factory) -> Run:
    from wideml import write_store

    folder = tmp_path_factory.mktemp("report")
    ref = mf.reference()
    X, codes = mf.data(ref, (24, 24))
    y = np.array([LABELS[c] for c in codes], dtype=object)
    store = folder / "scans.zarr"
    write_store(store, X, y, spatial=ref, feature_ids=mf.feature_ids(ref.n_features), feature_chunk=32)
    r = Run(folder, store, folder / "cv.json", folder / "cv.html", folder / "m.zarr", folder / "fit.html", folder / "maps",
            folder / "all.html", y)
    assert cli("cv", store, "--methods", "lol,pca", "--max-dim", 4, "--folds", 3, "--repeats", 2, "-o", r.cv_json,
               "--report", r.cv_html) == 0
    assert cli("fit", "lol", store, "-o", r.model, "--report", r.fit_html) == 0
    assert cli("maps", r.model, "-o", r.maps, "--png", "matplotlib") == 0
    assert cli("report", "--store", store, "--cv", r.cv_json, "--model", r.model, "--maps", r.maps, "-o", r.report) == 0
    return r
