"""`wideml report` and `--report` refuse bad inputs and outputs in one sentence (exit 2), before any work, and leave nothing behind."""

from __future__ import annotations

import json
import shutil

import pytest

from adversarial.harness import assert_no_debris
from wideml.cli.main import main


def refused(capsys, *argv, words=()) -> str:
    status = main([*map(str, argv), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2, err
    errors = [line for line in err.splitlines() if line.startswith("wideml: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    for word in words:
        assert word.lower() in errors[0].lower(), errors[0]
    return errors[0]


def test_report_command_refusals(tmp_path, run, capsys):
    refused(capsys, "report", "-o", tmp_path / "r.html", words=("nothing to report",))
    refused(capsys, "report", "--cv", tmp_path / "missing.json", "-o", tmp_path / "r.html", words=("no cross-validation report",))
    (tmp_path / "bad.json").write_text("{not json")
    refused(capsys, "report", "--cv", tmp_path / "bad.json", "-o", tmp_path / "r.html", words=("cannot read",))
    refused(capsys, "report", "--model", run.store, "-o", tmp_path / "r.html", words=("feature store",))
    user = tmp_path / "mine.html"
    user.write_text("my notes")
    for flag in ((), ("--overwrite",)):  # a user's file is never replaced, with or without --overwrite
        refused(capsys, "report", "--store", run.store, "-o", user, *flag, words=("mine.html",))
    assert user.read_text() == "my notes"
    cv = tmp_path / "cv.json"
    shutil.copy(run.cv_json, cv)
    refused(capsys, "report", "--cv", cv, "-o", cv, "--overwrite", words=("the input",))
    assert json.loads(cv.read_text())["results"]
    refused(capsys, "report", "--store", run.store, "-o", run.store / "r.html", words=("inside the input",))
    assert not (tmp_path / "r.html").exists()
    assert_no_debris(tmp_path)


def test_a_report_wideml_wrote_is_replaced_only_with_overwrite(tmp_path, run, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--model", str(run.model), "-o", str(out)]) == 0
    first = out.read_text()
    refused(capsys, "report", "--model", run.model, "-o", out, words=("already exists", "--overwrite"))
    assert main(["report", "--store", str(run.store), "-o", str(out), "--overwrite"]) == 0
    assert out.read_text() != first and '<section id="store">' in out.read_text()
    assert_no_debris(tmp_path)


def test_maps_manifest_cannot_send_the_report_outside_its_folder(tmp_path, run, capsys):
    maps = tmp_path / "maps"
    shutil.copytree(run.maps, maps)
    doc = json.loads((maps / "maps.json").read_text())
    doc["maps"][0]["files"] = ["../../secret.png"]
    (maps / "maps.json").write_text(json.dumps(doc))
    refused(capsys, "report", "--maps", maps, "-o", tmp_path / "r.html", words=("not a file of that folder",))
    (maps / "direction_1.png").write_bytes(b"<svg onload=alert(1)>")
    doc["maps"][0]["files"] = ["direction_1.png"]
    (maps / "maps.json").write_text(json.dumps(doc))
    refused(capsys, "report", "--maps", maps, "-o", tmp_path / "r.html", words=("not a png",))
    assert not (tmp_path / "r.html").exists()
    assert_no_debris(tmp_path)


@pytest.mark.parametrize("command", ["cv", "fit"])
def test_report_option_is_checked_before_the_run(tmp_path, run, capsys, command):
    head = ["cv", run.store, "--folds", 3, "-o"] if command == "cv" else ["fit", "lol", run.store, "-o"]
    out = tmp_path / ("cv.json" if command == "cv" else "m.zarr")
    refused(capsys, *head, out, "--report", out, words=("same path",))
    user = tmp_path / "mine.html"
    user.write_text("x")
    refused(capsys, *head, out, "--report", user, "--overwrite", words=("mine.html",))
    refused(capsys, *head, out, "--report", "s3://bucket/r.html", words=("url",))
    assert not out.exists() and user.read_text() == "x"
    assert_no_debris(tmp_path)
