"""wideml in a user's working folder: it never removes or writes into what it cannot prove it made.

Each case was reproduced on the code before issue 22's fix: the start-up sweep and `wideml clean` removed
user folders named like wideml's leftovers, an output could replace its own input, and a long output
name failed with ENAMETOOLONG from the sibling names.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from adversarial.harness import assert_refused, debris, run_cli

#: What a real home folder holds: dotfiles, backups, and names close to wideml's own.
HOME_FOLDERS = (".config", ".config.old-backup", ".mozilla.partial-restore", ".cache", "backup.old-2024",
                "thesis.wideml-work", "wideml-fit-mine", "wideml-fit-0123456789ab", ".s.zarr.partial-1234abcd",
                ".m.model.wideml-partial-0123456789ab", ".m.model.wideml-old-0123456789ab", "m.model.wideml-work.bak")


def _home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    for name in HOME_FOLDERS:
        (home / name).mkdir()
        (home / name / "data.txt").write_text(name)
        past = os.path.getmtime(home / name) - 3600
        os.utime(home / name, (past, past))
    (home / ".bashrc").write_text("export X=1\n")
    return home


def _intact(home) -> None:
    for name in HOME_FOLDERS:
        assert (home / name / "data.txt").read_text() == name, f"{name} was touched"
    assert (home / ".bashrc").exists()


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("world_store")
    proc = run_cli("simulate", "trunk", "--n-samples", 60, "--n-features", 300, "--feature-chunk", 100, "-o", folder / "s.zarr")
    assert proc.returncode == 0, proc.stderr
    return folder / "s.zarr"


def test_fit_simulate_and_clean_in_a_home_folder_touch_no_user_folder(tmp_path, small_store):
    home = _home(tmp_path)
    proc = run_cli("fit", "lol", small_store, "-o", "m.model", "--workdir", home, cwd=home)
    assert proc.returncode == 0 and "removed" not in proc.stderr, proc.stderr
    proc = run_cli("simulate", "trunk", "--n-samples", 20, "--n-features", 50, "-o", "t.zarr", cwd=home)
    assert proc.returncode == 0 and "removed" not in proc.stderr, proc.stderr
    proc = run_cli("clean", ".", "--workdir", home, cwd=home)
    assert proc.returncode == 0 and "removed 0 leftovers" in proc.stdout, proc.stdout
    assert "kept" in proc.stdout and "no wideml owner record" in proc.stdout
    _intact(home)
    assert (home / "m.model").is_dir() and (home / "t.zarr").is_dir()


def test_a_user_folder_with_the_checkpoint_name_is_refused_not_adopted(tmp_path, small_store):
    home = _home(tmp_path)
    (home / "thesis").mkdir()
    (home / "thesis" / "x").write_text("chapter")
    before = sorted(p.name for p in home.iterdir())
    assert_refused(run_cli("fit", "lol", small_store, "-o", "thesis", "--overwrite", cwd=home), "cannot prove it wrote it")
    model = home / "thesis.model"  # a checkpoint folder named like the user's folder, beside a new output
    (home / "thesis.model.wideml-work").mkdir()
    (home / "thesis.model.wideml-work" / "x").write_text("chapter")
    before = sorted(p.name for p in home.iterdir())
    message = assert_refused(run_cli("fit", "lol", small_store, "-o", model, cwd=home), "not made by wideml")
    assert "thesis.model.wideml-work" in message and (home / "thesis.model.wideml-work" / "x").read_text() == "chapter"
    _intact(home)
    assert (home / "thesis" / "x").read_text() == "chapter" and sorted(p.name for p in home.iterdir()) == before


def test_an_output_that_is_holds_or_lies_inside_an_input_is_refused(tmp_path, small_store, fresh_copy):
    store = fresh_copy(small_store)
    before = sorted(p.name for p in store.rglob("*"))
    assert_refused(run_cli("fit", "lol", store, "-o", store, "--overwrite"), "is the input")
    assert_refused(run_cli("fit", "lol", store, "-o", store / "m.model"), "lies inside the input")
    assert sorted(p.name for p in store.rglob("*")) == before
    model = tmp_path / "m.model"
    assert run_cli("fit", "lol", store, "-o", model).returncode == 0
    inside = sorted(p.name for p in model.rglob("*"))
    assert_refused(run_cli("maps", model, "-o", model / "maps"), "lies inside the input")
    assert_refused(run_cli("transform", model, store, "-o", model / "emb.npy"), "lies inside the input")
    assert_refused(run_cli("predict", model, store, "-o", model, "--overwrite"), "is the input")
    assert_refused(run_cli("rechunk", store, "-o", tmp_path, "--overwrite"), "holds the input")
    assert sorted(p.name for p in model.rglob("*")) == inside
    link = tmp_path / "link.zarr"
    link.symlink_to(store)
    assert_refused(run_cli("fit", "lol", link, "-o", store, "--overwrite"), "is the input")


def test_a_long_output_name_fits_and_leaves_nothing(tmp_path, small_store):
    name = "m" * 240 + ".model"  # 246 characters: legal, but too long for `.NAME.partial-XXXXXXXX` and `NAME.wideml-work`
    proc = run_cli("fit", "lol", small_store, "-o", tmp_path / name, "--workdir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    proc = run_cli("fit", "lol", small_store, "-o", tmp_path / name, "--overwrite", "--workdir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_second_fit_into_an_output_another_run_holds_is_told_which_run(tmp_path, small_store):
    from wideml.runtime.owned_names import checkpoint_folder

    out = tmp_path / "m.model"
    code = ("import sys, time; from wideml.runtime.ownership import claim; claim(sys.argv[1], 'checkpoint'); "
            "open(sys.argv[1] + '/pass-1', 'w').close(); print('ok', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, checkpoint_folder(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        message = assert_refused(run_cli("fit", "lol", small_store, "-o", out, "--workdir", tmp_path), "another wideml run")
        assert f"pid {holder.pid}" in message and not out.exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_second_writer_of_the_same_output_is_refused_and_an_output_that_appears_is_never_replaced(tmp_path):
    from wideml.exceptions import StoreError
    from wideml.storage.atomic import atomic_output

    out = tmp_path / "o.npy"
    code = ("import sys, time; from wideml.storage.atomic import atomic_output\n"
            "with atomic_output(sys.argv[1], workers_write=False) as tmp:\n"
            "    print('ok', flush=True); time.sleep(60)\n")
    writer = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ok"
        with pytest.raises(StoreError, match=f"being written by another wideml run \\(pid {writer.pid}"):
            with atomic_output(out, workers_write=False):
                pass
    finally:
        writer.kill()
        writer.wait()
    with pytest.raises(StoreError, match="appeared while this run was writing"):
        with atomic_output(out, workers_write=False) as tmp:
            np.save(tmp, np.zeros(3))
            out.write_text("the user's")
    from wideml.runtime.ownership import sweep

    (killed,) = [p for p in tmp_path.iterdir() if p.name != "o.npy"]  # the SIGKILLed writer's partial folder
    assert sweep(tmp_path) == [killed]  # its run is over: the next run beside it removes it
    assert out.read_text() == "the user's" and sorted(p.name for p in tmp_path.iterdir()) == ["o.npy"]


def _precious(folder):
    folder.mkdir()
    (folder / "id_ed25519").write_text("KEY")
    return folder


def test_overwrite_replaces_only_what_wideml_wrote(tmp_path, small_store):
    """--overwrite on a user's folder or file, or on a link to one, is refused (user-world round: they were replaced)."""
    home = tmp_path
    ssh, thesis = _precious(home / ".ssh"), _precious(home / "thesis.old")
    (home / ".bashrc").write_text("export X=1\n")
    victim = _precious(home / "victim")
    (home / "sl.model").symlink_to(victim)
    cases = [("simulate", "trunk", "--n-samples", 20, "--n-features", 50, "-o", thesis, "--overwrite"),
             ("fit", "lol", small_store, "-o", ssh, "--overwrite"),
             ("fit", "lol", small_store, "-o", home / "sl.model", "--overwrite"),
             ("rechunk", small_store, "-o", thesis, "--overwrite", "--feature-chunk", 50)]
    for args in cases:
        extra = ("--workdir", home) if args[0] == "fit" else ()
        assert_refused(run_cli(*args, *extra), "symbolic link" if any(str(a).endswith("sl.model") for a in args) else "--overwrite will not replace")
    model = home / "m.model"
    assert run_cli("fit", "lol", small_store, "-o", model, "--workdir", home).returncode == 0
    assert_refused(run_cli("predict", model, small_store, "-o", home / ".bashrc", "--overwrite"), "cannot prove it wrote it")
    assert_refused(run_cli("maps", model, "-o", ssh, "--overwrite"), "cannot prove it wrote it")
    assert (ssh / "id_ed25519").read_text() == "KEY" and (thesis / "id_ed25519").read_text() == "KEY"
    assert (victim / "id_ed25519").read_text() == "KEY" and (home / ".bashrc").read_text() == "export X=1\n"
    # what wideml wrote itself is replaced as before: a model, a store, a predictions CSV, a maps folder
    for args in (("fit", "lol", small_store, "-o", model, "--overwrite"),
                 ("predict", model, small_store, "-o", home / "p.csv"), ("predict", model, small_store, "-o", home / "p.csv", "--overwrite"),
                 ("maps", model, "-o", home / "maps"), ("maps", model, "-o", home / "maps", "--overwrite"),
                 ("simulate", "trunk", "--n-samples", 20, "--n-features", 50, "-o", home / "t.zarr"),
                 ("simulate", "trunk", "--n-samples", 20, "--n-features", 50, "-o", home / "t.zarr", "--overwrite")):
        proc = run_cli(*args, "--workdir", home) if args[0] == "fit" else run_cli(*args)
        assert proc.returncode == 0, (args, proc.stderr)


def test_two_outputs_on_one_path_and_a_work_folder_inside_an_output_or_input_are_refused(tmp_path, small_store):
    same = tmp_path / "same.out"
    assert_refused(run_cli("cv", small_store, "--methods", "lol", "--folds", 2, "--max-dim", 2, "-o", same, "--plot", same),
                   "same path")
    assert not same.exists()
    for workdir in (tmp_path / "w.model", tmp_path / "w.model" / "work"):
        assert_refused(run_cli("fit", "lol", small_store, "-o", tmp_path / "w.model", "--workdir", workdir), "work folder")
    assert_refused(run_cli("fit", "lol", small_store, "-o", tmp_path / "x.model", "--workdir", small_store / "X"), "inside the input")
    message = assert_refused(run_cli("fit", "lol", small_store, "-o", tmp_path / "y.model", "--workdir", tmp_path / "no" / "such"),
                             "does not exist")
    assert "nor does its parent" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_output_name_longer_than_the_filesystem_allows_is_one_sentence(tmp_path, small_store):
    for args in (("simulate", "trunk", "--n-samples", 20, "--n-features", 50, "-o", tmp_path / ("c" * 256)),
                 ("fit", "lol", small_store, "-o", tmp_path / ("d" * 300 + ".model"))):
        assert_refused(run_cli(*args), "bytes long")
    assert list(tmp_path.iterdir()) == []
