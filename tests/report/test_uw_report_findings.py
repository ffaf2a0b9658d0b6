"""The user-world findings on the run report: corrupt or unrelated inputs, large K, one dimension, and bad outputs.

Each test reproduces one finding of the user-world test (a corrupt cv JSON, an old JSON with another store,
inputs of different stores or models, a tampered model, 200 classes, one dimension, a non-HTML or empty output,
an unwritable or missing --report folder, matplotlib missing, --report naming the input store, --overwrite of
something that is not a report) and asserts the refusal (one sentence, exit 2, nothing written) or the page.
"""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest

from adversarial.harness import assert_no_debris
from report.test_report_cli import refused
from wideml.cli.main import main


def _cv_doc(run) -> dict:
    return json.loads(run.cv_json.read_text())


def _write(path, doc) -> None:
    path.write_text(json.dumps(doc))


def _report(tmp_path, *argv) -> str:
    out = tmp_path / "r.html"
    assert main(["report", *map(str, argv), "-o", str(out), "--overwrite", "--no-progress"]) == 0
    return out.read_text()


def _other_store(folder, y=None, n=12, p=20):
    from wideml import write_store

    rng = np.random.default_rng(0)
    path = folder / "other.zarr"
    write_store(path, rng.normal(size=(n, p)), np.arange(n) % 2 if y is None else y)
    return path


# 1-3: a corrupt cv JSON is refused in one sentence naming the field (never a traceback, never wrong numbers).
@pytest.mark.parametrize("edit, words", [
    (lambda d: d["results"]["lol"].__setitem__("errors", ["<script>x</script>"] * len(d["results"]["lol"]["dims"])), ("errors", "lol")),
    (lambda d: d["results"]["lol"].__setitem__("dims", ["a"]), ("dims", "lol")),
    (lambda d: d["results"]["lol"]["predictions"][0].__setitem__(0, [99] * len(d["true_codes"])), ("predictions", "classes")),
    (lambda d: d["results"]["lol"].__setitem__("best_dim", 77), ("best_dim", "dims")),
    (lambda d: d.__setitem__("true_codes", ["x"]), ("true_codes",)),
    (lambda d: d.__setitem__("chance_error", "half"), ("chance_error",)),
    (lambda d: d.__setitem__("n_folds", "three"), ("n_folds",)),
])
def test_corrupt_cv_json_is_refused(tmp_path, run, capsys, edit, words):
    doc = _cv_doc(run)
    edit(doc)
    _write(tmp_path / "bad.json", doc)
    refused(capsys, "report", "--cv", tmp_path / "bad.json", "-o", tmp_path / "r.html", words=(*words, "cross-validation"))
    assert not (tmp_path / "r.html").exists()


# 4: an old JSON (no true_codes) takes the store's labels only from the store it records.
def test_old_cv_json_uses_only_its_own_store(tmp_path, run):
    doc = _cv_doc(run)
    del doc["true_codes"]
    doc.pop("store_fingerprint", None)
    _write(tmp_path / "old.json", doc)
    same = _report(tmp_path, "--cv", tmp_path / "old.json", "--store", run.store)
    assert same.count('class="confusion') == 2
    permuted = _other_store(tmp_path, y=np.random.default_rng(3).permutation(run.y), n=len(run.y))
    html = _report(tmp_path, "--cv", tmp_path / "old.json", "--store", permuted)
    assert 'class="confusion' not in html and "not the store" in html


# 5: inputs from different stores or models get a warning box that cannot be missed.
def test_unrelated_inputs_are_flagged(tmp_path, run):
    other = _other_store(tmp_path)
    assert 'class="mismatch"' not in _report(tmp_path, "--store", run.store, "--cv", run.cv_json, "--model", run.model,
                                             "--maps", run.maps)
    html = _report(tmp_path, "--store", other, "--cv", run.cv_json, "--model", run.model)
    assert 'class="mismatch"' in html
    box = html.split('class="mismatch"', 1)[1].split("</div>", 1)[0]
    assert "cross-validation" in box and "model" in box
    maps = tmp_path / "maps"
    shutil.copytree(run.maps, maps)
    manifest = json.loads((maps / "maps.json").read_text())
    manifest["model_path"] = str(tmp_path / "another.model")
    _write(maps / "maps.json", manifest)
    html = _report(tmp_path, "--model", run.model, "--maps", maps)
    assert 'class="mismatch"' in html and "maps" in html.split('class="mismatch"', 1)[1].split("</div>", 1)[0]


# 6: a tampered or incomplete model is refused as load_model refuses it.
def test_tampered_model_is_refused(tmp_path, run, capsys):
    bad = tmp_path / "bad.model"
    shutil.copytree(run.model, bad)
    meta = json.loads((bad / "zarr.json").read_text())
    meta["attributes"]["wideml"]["estimator"] = "os.system"
    _write(bad / "zarr.json", meta)
    refused(capsys, "report", "--model", bad, "-o", tmp_path / "r.html", words=("os.system",))
    holed = tmp_path / "holed.model"
    shutil.copytree(run.model, holed)
    chunk = next(p for p in sorted(holed.rglob("c/*")) if p.is_file() or p.is_dir())
    shutil.rmtree(chunk) if chunk.is_dir() else chunk.unlink()
    refused(capsys, "report", "--model", holed, "-o", tmp_path / "r.html", words=("missing",))
    assert not (tmp_path / "r.html").exists()


# 7: many classes: a heatmap image, not a K x K table; every matrix scrolls in its own box; maps are capped.
def test_many_classes_and_many_maps_stay_readable(tmp_path):
    from wideml.report.cv_section import HEATMAP_CLASSES, cv_section
    from wideml.report.maps_section import MAX_MAPS, maps_section
    from wideml.report.render import render_html

    k = HEATMAP_CLASSES + 5
    truth = np.repeat(np.arange(k), 2)
    doc = {"cv": "3-fold CV", "n_folds": 3, "n_repeats": 1, "n_splits": 3, "classifier": "lda", "n_passes": 1,
           "chance_error": 0.9, "classes": [f"c{i}" for i in range(k)], "true_codes": truth.tolist(),
           "results": {"lol": {"dims": [1, 2], "errors": [0.5, 0.4], "stds": [0.1, 0.1], "best_dim": 2, "best_error": 0.4,
                               "kappa": [0.3, 0.4], "predictions": [[truth.tolist(), truth[::-1].tolist()]], "error": None}}}
    facts = cv_section(doc)
    assert facts["matrices"][0]["image"].startswith("data:image/png") and facts["matrices"][0]["cells"] is None
    folder = tmp_path / "maps"
    folder.mkdir()
    _write(folder / "maps.json", {"model": "m", "maps": [{"name": f"direction_{i}", "files": []} for i in range(MAX_MAPS + 3)]})
    maps = maps_section(folder)
    assert len(maps["maps"]) == MAX_MAPS and maps["left_out"] == 3
    html = render_html(title="t", store=None, cv=facts, model=None, maps=maps, warnings=[], warning_sources=0)
    assert "overflow: auto" in html and "<table class=\"confusion\"" not in html and "3 more maps" in html


# 8: one dimension: integer ticks around d, no talk of bands.
def test_one_dimension_figure(run):
    from wideml.report.cv_figure import cv_figure, report_from_json

    doc = {"n_folds": 4, "chance_error": 0.5, "results": {"lol": {"dims": [1], "errors": [0.1], "stds": [0.05],
                                                                   "best_dim": 1, "best_error": 0.1, "error": None}}}
    fig = cv_figure(report_from_json(doc))
    ticks = [t for t in fig.axes[0].get_xticks() if fig.axes[0].get_xlim()[0] <= t <= fig.axes[0].get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks) and 1 in ticks
    assert not any("band" in t.get_text().lower() for t in fig.texts)
    import matplotlib.pyplot as plt

    plt.close(fig)


# 9, 13: the output must be a file name ending in .html or .htm.
@pytest.mark.parametrize("name, words", [("out.png", (".html",)), ("out.json", (".html",)), ("", ("empty", ".html"))])
def test_output_must_be_html(tmp_path, run, capsys, monkeypatch, name, words):
    monkeypatch.chdir(tmp_path)
    refused(capsys, "report", "--store", run.store, "-o", name, words=words)
    refused(capsys, "cv", run.store, "--folds", 3, "-o", tmp_path / "c.json", "--report", name or "", words=words)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "out.png").exists()


# 10: the --report folder is checked before the run (here a file, not a folder).
@pytest.mark.parametrize("command", ["cv", "fit"])
def test_report_folder_checked_before_the_run(tmp_path, run, capsys, command):
    (tmp_path / "afile").write_text("x")
    head = ["cv", run.store, "--folds", 3, "-o"] if command == "cv" else ["fit", "lol", run.store, "-o"]
    out = tmp_path / ("c.json" if command == "cv" else "m.zarr")
    refused(capsys, *head, out, "--report", tmp_path / "afile" / "r.html", words=("afile",))
    assert not out.exists()
    assert_no_debris(tmp_path)


# 11: matplotlib missing: said before the run, naming wideml[report].
def test_missing_matplotlib_is_said_before_the_run(tmp_path, run, capsys, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    refused(capsys, "cv", run.store, "--folds", 3, "-o", tmp_path / "c.json", "--report", tmp_path / "r.html",
            words=("matplotlib", "wideml[report]"))
    refused(capsys, "report", "--cv", run.cv_json, "-o", tmp_path / "r.html", words=("matplotlib", "wideml[report]"))
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "r.html").exists()


# 12: --report naming the input store is "the input", never "pass --overwrite".
def test_report_on_the_input_store(tmp_path, run, capsys):
    line = refused(capsys, "cv", run.store, "--folds", 3, "-o", tmp_path / "c.json", "--report", run.store, words=("is the input",))
    assert "--overwrite" not in line.replace("--overwrite will not", "")


# note: --overwrite replaces only a previous wideml report, never a store (even one named .html).
def test_overwrite_replaces_only_a_report(tmp_path, run, capsys):
    from wideml import write_store

    store = tmp_path / "s.html"
    write_store(store, np.zeros((4, 3)), np.array([0, 1, 0, 1]))
    refused(capsys, "report", "--store", run.store, "-o", store, "--overwrite", words=("not a wideml report",))
    assert (store / "zarr.json").is_file()
    out = tmp_path / "r.html"
    assert main(["report", "--store", str(run.store), "-o", str(out)]) == 0
    assert '<meta name="generator" content="wideml report' in out.read_text()
    assert main(["report", "--store", str(run.store), "-o", str(out), "--overwrite"]) == 0
