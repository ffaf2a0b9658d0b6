"""What the report says: each section against an oracle (the store's metadata, scikit-learn on the out-of-fold
predictions, the model's attributes), every user string escaped, and nothing that could reach the network."""

from __future__ import annotations

import base64
import io
import json
import re
import warnings

import markupsafe
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

import wideml
from report.evil import EVIL, LABELS
from wideml import open_store
from wideml.exceptions import WidemlError
from wideml.models.store import read_model_attrs


def _text(path) -> str:
    return path.read_text(encoding="utf-8")


def _confusion_cells(page: str, method: str) -> np.ndarray:
    table = re.search(rf'<table class="confusion" data-method="{method}">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r"<tr><th>[^<]*</th>((?:<td[^>]*>\d+</td>)+)</tr>", table)
    return np.array([[int(v) for v in re.findall(r">(\d+)</td>", row)] for row in rows])


def test_confusion_matrices_and_kappa_equal_scikit_learn_on_the_out_of_fold_predictions(run):
    doc = json.loads(_text(run.cv_json))
    truth = np.unique(run.y, return_inverse=True)[1]
    assert doc["true_codes"] == truth.tolist()
    page = _text(run.report)
    for name in ("lol", "pca"):
        r = doc["results"][name]
        at = r["dims"].index(r["best_dim"])
        rounds = np.array(r["predictions"])[:, at]
        assert rounds.shape == (2, len(run.y)) and (rounds >= 0).all()
        expected = sum(confusion_matrix(truth, pred, labels=[0, 1]) for pred in rounds)
        np.testing.assert_array_equal(_confusion_cells(page, name), expected)
        kappa = np.mean([cohen_kappa_score(truth, pred) for pred in rounds])
        assert r["kappa"][at] == pytest.approx(kappa)
        row = re.search(rf"<tr><td>{name}</td>(.*?)</tr>", page, re.S).group(1)
        assert f"{kappa:.4f}" in row and f"{r['best_error']:.4f}" in row and f">{r['best_dim']}<" in row


def test_store_section_says_what_wideml_info_says(run):
    info = open_store(run.store).summary()
    page = _text(run.report)
    store = page[page.index('<section id="store">'):page.index('<section id="cv">')]
    assert f"{info['n_samples']} samples \u00d7 {info['n_features']:,} features" in store
    assert f"{info['stored_chunks'][0]} \u00d7 {info['stored_chunks'][1]} ({info['n_chunks']} chunks)" in store
    assert "every chunk of X present" in store
    for label, count in info["class_counts"].items():
        assert f"<td>{markupsafe.escape(label)}</td><td class=\"num\">{count}</td>" in store
    disk = sum(p.stat().st_size for p in run.store.rglob("*") if p.is_file())
    assert f"{disk / 1024:.1f} KiB" in store
    assert 'data-figure="mask"' in store  # an image store: its mask is drawn


def test_model_section_shows_solver_passes_and_provenance(run):
    attrs, _ = read_model_attrs(run.model)
    state = attrs["state"]["embedding_state"]
    prov = attrs["provenance"]
    assert prov["run"]["command"].startswith("wideml fit lol ")
    assert prov["run"]["versions"]["wideml"] == wideml.__version__
    assert prov["store_fingerprint"]["store_id"] == json.loads((run.store / "zarr.json").read_text())["attributes"]["wideml"]["store_id"]
    page = _text(run.report)
    model = page[page.index('<section id="model">'):page.index('<section id="maps">')]
    assert f"<th>solver</th><td>{state['solver']}</td>" in model
    assert f"<th>passes over X</th><td>{state['n_fit_passes']}</td>" in model
    assert markupsafe.escape(state["solver_reason"]) in model
    assert prov["store_fingerprint"]["x_files"] in model
    assert "peak memory" in model and "fit time" in model
    assert len(prov["passes"]) == state["n_fit_passes"]  # the per-pass log: one row per pass, each with its time
    rows = model[model.index("<h3>Passes over X</h3>"):model.index("<h3>Provenance</h3>")]
    for entry in prov["passes"]:
        assert f"<td>{entry['pass']}</td><td>{markupsafe.escape(entry['what'])}</td><td>{entry['seconds']:.3f} s</td>" in rows


def test_every_user_string_is_escaped_and_nothing_points_off_the_page(run):
    for path in (run.report, run.cv_html, run.fit_html):
        page = _text(path)
        assert "<script" not in page.lower(), path
        assert "Content-Security-Policy" in page and "default-src 'none'" in page
        for value in re.findall(r'(?:src|href|action|poster|srcset)\s*=\s*"([^"]*)"', page):
            assert value.startswith("data:image/png;base64,") or value.startswith("#"), value[:80]
        assert "url(" not in page and "@import" not in page
    page = _text(run.report)
    assert markupsafe.escape(EVIL) in page and markupsafe.escape(LABELS[1]) in page


def test_cv_report_of_the_run_records_the_run_and_its_maps_are_embedded(run):
    doc = json.loads(_text(run.cv_json))
    assert doc["run"]["command"].startswith("wideml cv ") and "--report" in doc["run"]["command"]
    assert isinstance(doc["run"]["warnings"], list) and doc["run"]["peak_memory_bytes"] > 0
    page = _text(run.cv_html)
    assert 'data-figure="cv"' in page and '<section id="store">' in page and '<section id="model">' not in page
    manifest = json.loads((run.maps / "maps.json").read_text())
    report = _text(run.report)
    for entry in manifest["maps"]:
        png = next(f for f in entry["files"] if f.endswith(".png"))
        assert base64.b64encode((run.maps / png).read_bytes()).decode() in report
        assert f"<h3>{entry['name']}</h3>" in report
    assert "gene0000" in report  # the top-features table of a map


def test_warnings_of_the_run_are_listed_escaped(tmp_path, run):
    doc = json.loads(_text(run.cv_json))
    doc["run"]["warnings"] = [{"category": "PerformanceWarning", "message": "<img src=x onerror=alert(1)> slow"}]
    out = wideml.report(cv=doc, out=tmp_path / "w.html")
    page = out.read_text()
    section = page[page.index('<section id="warnings">'):]
    assert "&lt;img src=x onerror=alert(1)&gt; slow" in section and "<img src=x" not in page
    assert '<table class="confusion"' in page  # no store given: the JSON's true_codes are enough
    doc.pop("true_codes")
    page = wideml.report(cv=doc, out=tmp_path / "w2.html").read_text()
    assert "holds no true classes" in page and '<table class="confusion"' not in page


def test_run_record_keeps_showing_warnings_and_redacts_credentials(monkeypatch):
    from wideml.report.run_record import RunRecord, redacted

    shown = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *args, **kw: shown.append(str(message)))
    with RunRecord(["cv", "s.zarr"]) as record:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("<b>careful</b>", UserWarning)
    doc = record.to_dict()
    assert doc["warnings"] == [{"category": "UserWarning", "message": "<b>careful</b>"}]
    assert doc["command"] == "wideml cv s.zarr"
    assert shown == ["<b>careful</b>"]  # still shown, as before
    assert redacted({"storage-options": {"key": "AKIA", "secret": "x", "endpoint_url": "http://h"}}) == {
        "storage-options": {"key": "<redacted>", "secret": "<redacted>", "endpoint_url": "http://h"}}


def test_mask_is_drawn_with_nilearn_over_the_template_or_as_a_mosaic(monkeypatch):
    from PIL import Image

    import map_fixtures as mf
    from wideml.report import figures

    ref = mf.reference()
    drawn = {}
    for nilearn in (True, False):
        monkeypatch.setattr(figures, "_nilearn_ready", lambda nilearn=nilearn: nilearn)
        uri, caption = figures.mask_figure(ref)
        image = np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("L"), dtype=float)
        assert image.std() > 10, caption
        drawn[nilearn] = caption
    assert "MNI152" in drawn[True] and "axial slices" in drawn[False]
    far = mf.reference()
    far.affine[:3, 3] = [500.0, 500.0, 500.0]  # outside the template: no template under it
    monkeypatch.setattr(figures, "_nilearn_ready", lambda: True)
    assert "axial slices" in figures.mask_figure(far)[1]


def test_wideml_report_is_callable_as_the_function_and_as_the_package(tmp_path, run):
    import sys

    assert callable(wideml.report)
    package = sys.modules["wideml.report"]
    out = package(store=run.store, out=tmp_path / "s.html")
    assert out == (tmp_path / "s.html").resolve() and '<section id="store">' in out.read_text()
    with pytest.raises(WidemlError, match="nothing to report"):
        wideml.report(out=tmp_path / "none.html")
    assert not (tmp_path / "none.html").exists()
