"""``--overwrite`` never removes an entry wideml did not write inside an output folder (models, stores, maps folders).

The three cases of the object-store tester's findings, locally: a user's file added to a wideml
output; a copy of a wideml output (no output mark) plus a user's file; a copied ``zarr.json`` beside a
user's data folder. Each is refused in one sentence (exit 2 in the CLI) naming one foreign entry and
how many, and nothing is removed: neither the user's file nor the old output. An untouched output is
still replaced.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from adversarial.harness import assert_api_refused, assert_no_debris
from wideml import LOL, EmbeddingClassifier, load_model, open_store, save_model, write_maps, write_store
from wideml.exceptions import StoreError
from wideml.storage.output_contents import foreign_entries

CASES = ("added", "copied", "forged")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A store, a model and a maps folder, each written once by wideml (reused as templates)."""
    folder = tmp_path_factory.mktemp("made")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(24, 60)).astype("float32"), np.repeat([0, 1], 12)
    write_store(folder / "s.zarr", X, y, feature_chunk=20)
    model = EmbeddingClassifier(LOL(n_components=2, robust_first=False)).fit(open_store(folder / "s.zarr"))
    save_model(model, folder / "m.model")
    write_maps(folder / "m.model", folder / "maps", plot=None)
    return {"store": folder / "s.zarr", "model": folder / "m.model", "maps": folder / "maps", "X": X, "y": y}


def _plant(case: str, template, out):
    """Make the output ``out`` for a case; returns the user's file that must survive."""
    if case == "added":  # a wideml output (marked, in place) with a user's file added inside it
        _rewrite(template, out)
        user = out / "mynotes.txt"
    elif case == "copied":  # a copy (no output mark) plus a user's file
        shutil.copytree(template, out)
        user = out / "thesis_results.txt"
    else:  # a copied metadata file beside a user's data
        (out / "raw").mkdir(parents=True)
        meta = "maps.json" if (template / "maps.json").exists() else "zarr.json"
        shutil.copy(template / meta, out / meta)
        user = out / "raw" / "scan001.nii"
    user.write_text("user data")
    return user


def _rewrite(template, out):
    """Write ``out`` with wideml itself, like ``template`` (so it carries the output mark)."""
    if (template / "maps.json").exists():
        write_maps(template.parent / "m.model", out, plot=None)
    elif (template / "X").exists():
        store = open_store(template)
        write_store(out, np.asarray(store.X), np.asarray(store.y), feature_chunk=20)
    else:
        save_model(load_model(template), out)


def _snapshot(out) -> dict:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _cli(kind, made, out, tmp_path) -> list[str]:
    if kind == "model":
        return ["fit", "lol", str(made["store"]), "-o", str(out), "--n-components", "2", "--overwrite", "--no-progress"]
    if kind == "store":
        return ["simulate", "trunk", "--n-samples", "20", "--n-features", "40", "--feature-chunk", "20", "-o", str(out),
                "--overwrite", "--no-progress"]
    return ["maps", str(made["model"]), "-o", str(out), "--overwrite", "--png", "none", "--no-progress"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", ["model", "store", "maps"])
def test_cli_overwrite_refuses_foreign_entries(kind, case, made, tmp_path, capsys, restore_dask_config):
    from wideml.cli.main import main

    out = tmp_path / {"model": "m1.model", "store": "t.zarr", "maps": "mp"}[kind]
    user = _plant(case, made[kind], out)
    before = _snapshot(out)
    assert main(_cli(kind, made, out, tmp_path)) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("wideml: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert "--overwrite will not replace it" in errors[0], errors[0]
    if kind == "maps" and case != "added":  # a maps folder proves itself only by its output mark, which a copy lacks
        assert "cannot prove it wrote it" in errors[0], errors[0]
    else:
        assert f"'{str(user.relative_to(out)).split('/')[0]}'" in errors[0] and "did not write" in errors[0], errors[0]
    assert user.read_text() == "user data"
    assert _snapshot(out) == before  # the old output is intact too
    assert_no_debris(tmp_path)


@pytest.mark.parametrize("kind", ["model", "store", "maps"])
def test_cli_overwrite_of_an_untouched_output_still_works(kind, made, tmp_path, capsys, restore_dask_config):
    from wideml.cli.main import main

    out = tmp_path / "out"
    _rewrite(made[kind], out)
    assert foreign_entries(out) == []
    assert main(_cli(kind, made, out, tmp_path)) == 0, capsys.readouterr().err
    assert out.is_dir() and foreign_entries(out) == []
    assert_no_debris(tmp_path)


@pytest.mark.parametrize("case", CASES)
def test_api_save_model_refuses_foreign_entries(case, made, tmp_path):
    out = tmp_path / "m1.model"
    user = _plant(case, made["model"], out)
    before = _snapshot(out)
    with pytest.raises(StoreError) as excinfo:
        save_model(load_model(made["model"]), out, overwrite=True)
    assert_api_refused(excinfo, "did not write", str(user.relative_to(out)).split("/")[0])
    assert _snapshot(out) == before
    assert_no_debris(tmp_path)


@pytest.mark.parametrize("case", CASES)
def test_api_write_store_refuses_foreign_entries(case, made, tmp_path):
    out = tmp_path / "t.zarr"
    user = _plant(case, made["store"], out)
    before = _snapshot(out)
    with pytest.raises(StoreError) as excinfo:
        write_store(out, made["X"], made["y"], feature_chunk=20, overwrite=True)
    assert_api_refused(excinfo, "did not write", str(user.relative_to(out)).split("/")[0])
    assert _snapshot(out) == before
    assert_no_debris(tmp_path)


def test_api_overwrite_of_untouched_outputs_still_works(made, tmp_path):
    model, store = tmp_path / "m.model", tmp_path / "s.zarr"
    fitted = load_model(made["model"])  # the fixture's estimator may have lost its work folder by now
    save_model(fitted, model)
    save_model(fitted, model, overwrite=True)
    write_store(store, made["X"], made["y"], feature_chunk=20)
    write_store(store, made["X"][:, :40], made["y"], feature_chunk=20, overwrite=True)
    assert open_store(store).X.shape == (24, 40)
    assert load_model(model).predict(made["X"]).shape == (24,)


def test_chunk_outside_the_grid_and_links_are_foreign(made, tmp_path):
    """A chunk key beyond the array's chunk grid, a non-canonical index, a stray folder or a link is not wideml's."""
    out = tmp_path / "s.zarr"
    shutil.copytree(made["store"], out)
    assert foreign_entries(out) == []
    (out / "X" / "c" / "0" / "3").write_bytes(b"x")  # 60 features in chunks of 20: indices 0..2
    (out / "X" / "c" / "00").mkdir()
    (out / "y" / "link").symlink_to(made["store"] / "zarr.json")
    (out / "notes").mkdir()
    assert foreign_entries(out) == ["X/c/0/3", "X/c/00", "notes", "y/link"]
