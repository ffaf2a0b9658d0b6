"""Real signals sent to real ``wideml`` subprocesses while their first pass over X runs.

SIGINT/SIGTERM: exit 130/143, one line on stderr (no traceback), no output, no
``.partial-*``/``.old-*``/``wideml-fit-*`` leftover. SIGKILL: the next wideml
command removes the dead run's leftovers and says so; its result is correct.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adversarial.harness import run_cli
from faults.kill_helpers import (expected_status, leftovers, non_progress_lines, partial_has_chunks, pass_started,
                                 signal_and_wait, start_cli, wait_until)

N, P = 200, 1_000_000  # a float32 store of 800 MB: each pass over it takes a few seconds on 2 cores


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """(store, reference model): a 200 x 1e6 trunk store and an uninterrupted Gram LOL fit of it."""
    folder = tmp_path_factory.mktemp("faults_big")
    store, model = folder / "big.zarr", folder / "ref-model"
    proc = run_cli("simulate", "trunk", "--n-samples", N, "--n-features", P, "-o", store)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("fit", "lol", store, "-o", model, "--solver", "gram", "--n-components", 2)
    assert proc.returncode == 0, proc.stderr
    return store, model


def _command(kind: str, big, out: Path, wd: Path) -> tuple[list, str]:
    """The CLI arguments of ``kind`` and the output's name."""
    store, model = big
    commands = {
        "simulate": ["simulate", "trunk", "--n-samples", N, "--n-features", P, "-o", out.with_suffix(".zarr")],
        "rechunk": ["rechunk", store, out.with_suffix(".zarr"), "--feature-chunk", 20000],
        "ingest": ["ingest", f"{store}/X", "-o", out.with_suffix(".zarr"), "--unlabelled"],
        "fit-gram": ["fit", "lol", store, "-o", out, "--solver", "gram", "--n-components", 2, "--workdir", wd],
        "fit-randomized": ["fit", "lol", store, "-o", out, "--solver", "randomized", "--n-components", 2, "--workdir", wd],
        "cv": ["cv", store, "--methods", "lol", "--folds", 3, "--max-dim", 2, "-o", out.with_suffix(".json"), "--workdir", wd],
        "predict": ["predict", model, store, "-o", out.with_suffix(".csv")],
    }
    args = commands[kind]
    name = Path(args[args.index("-o") + 1] if "-o" in args else args[2]).name
    return args, name


CASES = [("simulate", signal.SIGINT), ("simulate", signal.SIGTERM), ("rechunk", signal.SIGINT), ("ingest", signal.SIGTERM),
         ("fit-gram", signal.SIGINT), ("fit-randomized", signal.SIGTERM), ("cv", signal.SIGINT), ("predict", signal.SIGTERM)]


@pytest.mark.parametrize("kind, sig", CASES, ids=[f"{k}-{s.name}" for k, s in CASES])
def test_interrupt_cleans_up_and_exits_with_one_line(big, tmp_path, kind, sig):
    out_dir, wd = tmp_path / "out", tmp_path / "wd"
    out_dir.mkdir(), wd.mkdir()
    args, name = _command(kind, big, out_dir / "result", wd)
    log = tmp_path / "stderr.txt"
    proc = start_cli(*args, log=log)
    writes_store = kind in ("simulate", "rechunk", "ingest")
    wait_until(partial_has_chunks(out_dir, name) if writes_store else pass_started(log), proc)
    status, after = signal_and_wait(proc, sig, log=log)
    stderr = log.read_text(errors="replace")
    assert status == expected_status(sig), stderr
    assert "Traceback" not in stderr
    lines = non_progress_lines(after)  # what the interrupt printed
    assert len(lines) == 1 and lines[0].startswith(f"wideml: interrupted by {sig.name}"), lines
    assert not (out_dir / name).exists()
    assert leftovers(out_dir, wd) == []
    assert sorted(p.name for p in out_dir.iterdir() if not p.name.endswith(".wideml-work")) == []  # no file.partial either


def _one_removal_line(stderr: str, removed: Path) -> None:
    lines = [line for line in stderr.splitlines() if line.startswith("wideml: removed")]
    assert len(lines) == 1 and str(removed) in lines[0], stderr


def test_sigkill_during_simulate_is_swept_by_the_next_command(big, tmp_path):
    args, name = _command("simulate", big, tmp_path / "result", tmp_path)
    log = tmp_path / "stderr.txt"
    proc = start_cli(*args, log=log)
    wait_until(partial_has_chunks(tmp_path, name), proc)
    assert signal_and_wait(proc, signal.SIGKILL) == expected_status(signal.SIGKILL)
    (aside,) = leftovers(tmp_path)  # the kill left the partial output behind ...
    other = run_cli("simulate", "trunk", "--n-samples", 20, "--n-features", 500, "-o", tmp_path / "small.zarr")
    assert other.returncode == 0, other.stderr
    _one_removal_line(other.stderr, aside)  # ... the next run writing there removed it and said so
    assert leftovers(tmp_path) == [] and not (tmp_path / name).exists()


def test_sigkill_during_fit_then_rerun_is_clean_and_correct(big, tmp_path):
    from wideml.estimators.persistence import load_model
    from wideml.storage import open_store

    wd = tmp_path / "wd"
    wd.mkdir()
    args, name = _command("fit-gram", big, tmp_path / "model", wd)
    log = tmp_path / "stderr.txt"
    proc = start_cli(*args, log=log)
    wait_until(pass_started(log), proc)
    assert signal_and_wait(proc, signal.SIGKILL) == expected_status(signal.SIGKILL)
    assert not (tmp_path / name).exists()
    rerun = run_cli(*args)
    assert rerun.returncode == 0, rerun.stderr
    assert leftovers(tmp_path, wd) == []
    store = open_store(big[0])
    Z, Z_ref = load_model(tmp_path / name).transform(store), load_model(big[1]).transform(store)
    np.testing.assert_allclose(Z, Z_ref, rtol=1e-4, atol=1e-4 * np.abs(Z_ref).max())


_API_FIT = """
import sys
from wideml import LOL
from wideml.storage import open_store
store = open_store(sys.argv[1])
LOL(n_components=2, solver="gram", workdir=sys.argv[2]).fit(store, store.y)
"""


def test_sigkill_of_an_api_fit_leaves_a_work_folder_the_next_fit_removes(big, tmp_path, adv_stores):
    wd = tmp_path / "wd"
    wd.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _API_FIT, str(big[0]), str(wd)], stderr=subprocess.DEVNULL)
    wait_until(lambda: any(wd.glob("wideml-fit-*/fitted.zarr")), proc, what="the API fit's work folder")
    assert signal_and_wait(proc, signal.SIGKILL) == expected_status(signal.SIGKILL)
    (work,) = leftovers(wd)
    assert (work / ".wideml-owner.json").is_file()
    other = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m", "--workdir", wd)
    assert other.returncode == 0, other.stderr
    _one_removal_line(other.stderr, work)
    assert leftovers(wd) == []


def test_interrupt_on_a_dask_cluster_cancels_its_tasks_and_cleans_up(tmp_path, dask_cluster):
    """On a real scheduler + 2 workers: the queued copy tasks are cancelled, the running ones end before the clean-up."""
    import time

    out = tmp_path / "c.zarr"
    log = tmp_path / "stderr.txt"
    proc = start_cli("simulate", "trunk", "--n-samples", N, "--n-features", P, "-o", out,
                     "--scheduler", dask_cluster["address"], log=log, progress=False)
    wait_until(partial_has_chunks(tmp_path, out.name), proc)
    t0 = time.monotonic()
    status, after = signal_and_wait(proc, signal.SIGINT, log=log)
    stderr = log.read_text(errors="replace")
    lines = non_progress_lines(after)
    assert status == 130 and len(lines) == 1 and lines[0].startswith("wideml: interrupted by SIGINT"), stderr
    assert time.monotonic() - t0 < 20  # cancelled, not waited out
    time.sleep(1.0)  # a task still running on a worker would re-create chunk files by now
    assert leftovers(tmp_path) == [] and not out.exists()
