"""Pre-flight checks and environment failures: one sentence, exit 2, nothing written.

Tests run as root, where chmod does not stop writes: read-only and tiny
filesystems are real tmpfs mounts made in a private mount namespace
(``unshare -m``) around the CLI subprocess; without that the tests are skipped.
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import subprocess
import sys

import dask.config
import pytest

from adversarial.harness import assert_refused, run_cli
from faults.kill_helpers import leftovers


def _unshare_ok() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


needs_mounts = pytest.mark.skipif(not _unshare_ok(), reason="needs `unshare -m` and tmpfs mounts (root)")


def run_in_mount(folder, options: str, *args, fill: bool = False) -> subprocess.CompletedProcess:
    """``wideml ARGS --no-progress`` with a fresh tmpfs (mount ``options``) on ``folder``, in a private mount namespace.

    ``fill``: first fill the tmpfs to the last byte with a file ``fill``. After the command, the namespace
    lists what is left in the mount on stdout's last line.
    """
    cli = " ".join(shlex.quote(str(a)) for a in [sys.executable, "-m", "wideml.cli.main", *args, "--no-progress"])
    where = shlex.quote(str(folder))
    filler = f"cat /dev/zero > {where}/fill 2>/dev/null; " if fill else ""
    script = (f"mount -t tmpfs -o {options} tmpfs {where} || exit 99; {filler}"
              f"{cli}; status=$?; echo; ls -A {where} | tr '\\n' ' '; exit $status")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"})
    assert proc.returncode != 99, proc.stderr
    return proc


def _left_in_mount(proc) -> list[str]:
    return proc.stdout.rstrip("\n").splitlines()[-1].split() if proc.stdout.strip() else []


@pytest.fixture(scope="module")
def wide_store(tmp_path_factory):
    """A 50 x 40000 float32 store: its model's p-sized arrays need about 2 MB."""
    path = tmp_path_factory.mktemp("wide") / "wide.zarr"
    proc = run_cli("simulate", "trunk", "--n-samples", 50, "--n-features", 40000, "-o", path)
    assert proc.returncode == 0, proc.stderr
    return path


@needs_mounts
def test_read_only_output_folder_is_refused_before_any_pass(tmp_path, adv_stores):
    ro = tmp_path / "ro"
    ro.mkdir()
    proc = run_in_mount(ro, "size=1m,ro", "fit", "lol", adv_stores[0], "-o", ro / "model")
    assert_refused(proc, "cannot write", str(ro), "read-only")
    assert "[wideml]" not in proc.stderr  # no pass started
    proc = run_in_mount(ro, "size=1m,ro", "simulate", "trunk", "--n-samples", 20, "--n-features", 100, "-o", ro / "s.zarr")
    assert_refused(proc, "cannot write", str(ro))


@needs_mounts
def test_store_too_big_for_the_disk_is_refused_before_writing(tmp_path):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    proc = run_in_mount(tiny, "size=1m", "simulate", "trunk", "--n-samples", 200, "--n-features", 20000, "-o", tiny / "s.zarr")
    assert_refused(proc, "not enough free space", str(tiny), "needed", "free")
    assert _left_in_mount(proc) == []


@needs_mounts
def test_disk_filling_up_during_a_write_is_one_sentence_and_leaves_nothing(tmp_path):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    # a compressed store's size is not known beforehand, so it passes the pre-flight and fills the disk while writing
    proc = run_in_mount(tiny, "size=1m", "simulate", "trunk", "--n-samples", 200, "--n-features", 20000,
                        "-o", tiny / "s.zarr", "--config", _config(tmp_path, "compressor: zstd"))
    assert_refused(proc, "filled up", str(tiny))
    assert _left_in_mount(proc) == []


@needs_mounts
def test_full_work_folder_is_refused_before_the_fit(tmp_path, wide_store):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    proc = run_in_mount(tiny, "size=1m", "fit", "lol", wide_store, "-o", out / "model", "--solver", "gram", "--workdir", tiny)
    assert_refused(proc, "not enough free space", "work folder", str(tiny))
    assert "[wideml]" not in proc.stderr
    assert _left_in_mount(proc) == [] and list(out.iterdir()) == []


def _config(folder, body: str | bytes):
    path = folder / "cfg.yaml"
    path.write_bytes(body if isinstance(body, bytes) else f"wideml:\n  {body}\n".encode())
    return path


def test_non_utf8_config_is_one_sentence(tmp_path, adv_stores):
    cfg = _config(tmp_path, b"wideml:\n  threads: 2  # caf\xe9 latin-1\n")
    proc = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m", "--config", cfg)
    assert_refused(proc, "not utf-8", "cfg.yaml", "line 2")
    assert not (tmp_path / "m").exists()
    proc = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m", "--config", _config(tmp_path, b"wideml: [unclosed\n"))
    assert_refused(proc, "not valid yaml")


def test_workdir_that_is_a_file_is_refused(tmp_path, adv_stores):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    proc = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m", "--workdir", not_a_folder)
    assert_refused(proc, str(not_a_folder), "--workdir")
    assert not (tmp_path / "m").exists() and leftovers(tmp_path) == []


def test_workdir_flag_and_config_key_are_honoured(tmp_path, adv_stores):
    from wideml import LOL
    from wideml.runtime.ownership import owner_alive
    from wideml.storage import open_store

    wd = tmp_path / "wd"
    wd.mkdir()
    dead = wd / "wideml-fit-0000deadbeef"  # a work folder of a killed run, in the folder --workdir names
    code = "import sys; from wideml.runtime.ownership import claim; claim(sys.argv[1], 'work')"
    subprocess.run([sys.executable, "-c", code, str(dead)], check=True)
    proc = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m", "--workdir", wd)
    assert proc.returncode == 0, proc.stderr
    assert "removed 1 leftover" in proc.stderr and str(dead) in proc.stderr and not dead.exists()
    proc = run_cli("cv", adv_stores[0], "--folds", 3, "--workdir", tmp_path / "m" / "zarr.json")  # cv takes --workdir too
    assert_refused(proc, "zarr.json", "--workdir")
    store = open_store(adv_stores[0])
    with dask.config.set({"wideml.workdir": str(wd)}):
        est = LOL(n_components=2, solver="gram").fit(store, store.y)
        (work,) = wd.glob("wideml-fit-*")
        assert owner_alive(work) is True
    del est
    import gc

    gc.collect()
    assert list(wd.glob("wideml-fit-*")) == []


def test_short_write_and_enospc_count_as_a_full_disk():
    from wideml.runtime.preflight import is_disk_full

    assert is_disk_full(OSError("81920 requested and 55296 written"))
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_disk_full(outer)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))


@pytest.fixture(scope="module")
def sample_chunked(tmp_path_factory, wide_store):
    """(store chunked 5 rows x 5000 features, a .npy of 50 x 40000 float32): sources whose copies are 8 MB."""
    folder = tmp_path_factory.mktemp("sources")
    rows = folder / "rows.zarr"
    proc = run_cli("rechunk", wide_store, rows, "--sample-chunk", 5, "--feature-chunk", 5000)
    assert proc.returncode == 0, proc.stderr
    import numpy as np

    from wideml.storage import open_store

    np.save(folder / "x.npy", np.asarray(open_store(wide_store).X))
    return rows, folder / "x.npy"


@needs_mounts
def test_rechunk_needing_an_intermediate_copy_is_refused_when_both_do_not_fit(tmp_path, sample_chunked, monkeypatch):
    """8 MB of output + 8 MB of intermediate copy on a 12 MB disk: each alone fits, together they do not."""
    monkeypatch.setenv("WIDEML_TEST_MEMORY_FLOOR", "1")  # test hook: a 4 MiB budget, below the 64 MiB users may set
    disk = tmp_path / "disk"
    disk.mkdir()
    proc = run_in_mount(disk, "size=12m", "rechunk", sample_chunked[0], disk / "r.zarr", "--memory-limit", "4MiB")
    assert_refused(proc, "not enough free space", str(disk), "intermediate", "r.zarr")
    assert "[wideml]" not in proc.stderr and _left_in_mount(proc) == []
    proc = run_in_mount(disk, "size=12m", "rechunk", sample_chunked[0], disk / "r.zarr")  # one stage: it fits
    assert proc.returncode == 0, proc.stderr
    assert _left_in_mount(proc) == ["r.zarr"]


@needs_mounts
def test_ingest_bigger_than_the_disk_is_refused_before_reading(tmp_path, sample_chunked):
    disk = tmp_path / "disk"
    disk.mkdir()
    proc = run_in_mount(disk, "size=4m", "ingest", sample_chunked[1], "-o", disk / "i.zarr", "--unlabelled")
    assert_refused(proc, "not enough free space", str(disk), "i.zarr", "needed")
    assert "[wideml]" not in proc.stderr and _left_in_mount(proc) == []


@needs_mounts
@pytest.mark.parametrize("command", ["predict", "cv"])
def test_predict_and_cv_outputs_on_a_full_disk_are_refused_before_the_pass(tmp_path, adv_stores, command):
    from wideml import LOL, EmbeddingClassifier, open_store, save_model

    disk = tmp_path / "disk"
    disk.mkdir()
    train, test = adv_stores
    if command == "predict":
        model = tmp_path / "m"
        save_model(EmbeddingClassifier(LOL(2)).fit(open_store(train)), model)
        args = ("predict", model, test, "-o", disk / "p.csv")
    else:
        args = ("cv", train, "--folds", 3, "--max-dim", 2, "-o", disk / "cv.json", "--workdir", tmp_path)
    proc = run_in_mount(disk, "size=64k", *args, fill=True)
    assert_refused(proc, "not enough free space", str(disk), "p.csv" if command == "predict" else "cv.json")
    assert "[wideml]" not in proc.stderr and _left_in_mount(proc) == ["fill"]


def test_scheduler_line_is_printed_when_chosen_and_is_never_an_error_line(tmp_path, adv_stores):
    """``--scheduler`` given: one ``wideml: scheduler`` line on stderr even with --no-progress; a default
    threaded run stays quiet; a refused run still has exactly one error sentence."""
    from adversarial.harness import error_lines

    train, _ = adv_stores
    chosen = run_cli("fit", "lol", train, "-o", tmp_path / "a", "--scheduler", "sync", "--no-progress")
    assert chosen.returncode == 0, chosen.stderr
    assert [ln for ln in chosen.stderr.splitlines() if ln.startswith("wideml: scheduler")] == ["wideml: scheduler sync (1 thread)"]
    default = run_cli("fit", "lol", train, "-o", tmp_path / "b", "--no-progress")
    assert default.returncode == 0 and "wideml: scheduler" not in default.stderr, default.stderr
    refused = run_cli("fit", "lol", train, "-o", tmp_path / "a", "--scheduler", "threads", "--no-progress")  # exists
    assert_refused(refused, "already exists")
    assert "wideml: scheduler threads" in refused.stderr and len(error_lines(refused.stderr)) == 1
