"""Real signals sent to real ``wideml`` subprocesses: every command, early, in the middle and during its final write.

SIGINT/SIGTERM: exit 130/143, one line on stderr (no traceback), no output, no
``.partial-*``/``.old-*``/``wideml-fit-*`` leftover (an interrupted fit keeps its
released checkpoint folder for the rerun). SIGKILL: the next wideml command
removes the dead run's leftovers and says so; a rerun's result is correct. A
signal arriving after the run's end finds its output complete and correct.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adversarial.harness import run_cli
from faults.kill_helpers import (chunk_files, expected_status, label_seen, leftovers, non_progress_lines, partial_appears,
                                 partial_has_chunks, pass_started, progress_at_least, signal_and_wait, start_cli, wait_until)

N, P = 200, 1_000_000  # a float32 store of 800 MB: each pass over it takes a few seconds on 2 cores (cluster test)


def _command(kind: str, big, out: Path, wd: Path, shape: tuple[int, int] = (N, P)) -> tuple[list, str]:
    """The CLI arguments of ``kind`` and the output's name (``simulate`` makes a store of ``shape``)."""
    store, model = big
    commands = {
        "simulate": ["simulate", "trunk", "--n-samples", shape[0], "--n-features", shape[1], "-o", out.with_suffix(".zarr")],
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


def _one_removal_line(stderr: str, removed: Path) -> None:
    lines = [line for line in stderr.splitlines() if line.startswith("wideml: removed")]
    assert len(lines) == 1 and str(removed) in lines[0], stderr


def test_sigkill_during_fit_then_rerun_is_clean_and_correct(medium, tmp_path):
    from wideml.models.persistence import load_model
    from wideml.storage import open_store

    wd = tmp_path / "wd"
    wd.mkdir()
    args, name = _command("fit-gram", medium, tmp_path / "model", wd)
    log = tmp_path / "stderr.txt"
    proc = start_cli(*args, log=log)
    wait_until(pass_started(log), proc)
    assert signal_and_wait(proc, signal.SIGKILL) == expected_status(signal.SIGKILL)
    assert not (tmp_path / name).exists()
    rerun = run_cli(*args)
    assert rerun.returncode == 0, rerun.stderr
    assert leftovers(tmp_path, wd) == []
    store = open_store(medium[0])
    Z, Z_ref = load_model(tmp_path / name).transform(store), load_model(medium[1]).transform(store)
    np.testing.assert_allclose(Z, Z_ref, rtol=1e-4, atol=1e-4 * np.abs(Z_ref).max())


_API_FIT = """
import sys
from wideml import LOL
from wideml.storage import open_store
store = open_store(sys.argv[1])
LOL(n_components=2, solver="gram", workdir=sys.argv[2]).fit(store, store.y)
"""


def test_sigkill_of_an_api_fit_leaves_a_work_folder_the_next_fit_removes(medium, tmp_path, adv_stores):
    wd = tmp_path / "wd"
    wd.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _API_FIT, str(medium[0]), str(wd)], stderr=subprocess.DEVNULL)
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


# Every command is signalled at three points: early (its first chunks written / first pass started), the middle
# (half of the chunks written / the second pass / half of the one pass) and the final write or rename (the store's
# last chunk written; the model, report or predictions being written aside). Each (command, point) runs once, the
# three signals rotated over them. A signal that arrives after the run finished (the final write is short) must
# find the output complete and equal to an uninterrupted run's.

M_N, M_P, RECHUNK_CHUNK = 200, 300_000, 10_000


@pytest.fixture(scope="module")
def medium(tmp_path_factory):
    """(store, reference model) of 200 x 300000 float32 (240 MB), and a cache of reference outputs."""
    folder = tmp_path_factory.mktemp("faults_medium")
    store, model = folder / "m.zarr", folder / "ref-model"
    assert run_cli("simulate", "trunk", "--n-samples", M_N, "--n-features", M_P, "-o", store).returncode == 0
    proc = run_cli("fit", "lol", store, "-o", model, "--solver", "gram", "--n-components", 2)
    assert proc.returncode == 0, proc.stderr
    return store, model


def _chunks_of(kind: str, store: Path) -> int:
    from wideml.storage import open_store

    width = RECHUNK_CHUNK if kind == "rechunk" else open_store(store).stored_chunks[1]
    return -(-M_P // width)


def _trigger(kind: str, point: str, out_dir: Path, name: str, log: Path, store: Path):
    """The predicate that says the run reached ``point``."""
    if point == "early":
        return partial_has_chunks(out_dir, name) if kind in ("simulate", "rechunk", "ingest") else pass_started(log)
    if kind in ("simulate", "rechunk", "ingest"):
        total = _chunks_of(kind, store)
        return lambda: chunk_files(out_dir, name) >= (total // 2 if point == "middle" else total)
    if point == "final" and kind.startswith("fit"):
        return partial_appears(out_dir, name)  # the model's arrays being written aside
    if point == "final":  # the one pass is over: the algebra and the report / predictions being written
        done, aside = progress_at_least(log, 100, "[wideml]"), partial_appears(out_dir, name)
        return lambda: done() or aside()
    if kind.startswith("fit"):
        return label_seen(log, "pass 2/")
    return progress_at_least(log, 50, "[wideml]")


def _assert_complete_and_correct(kind: str, medium, out: Path, tmp_path: Path) -> None:
    """A run the signal reached too late: its output equals an uninterrupted run's."""
    from wideml.models.persistence import load_model
    from wideml.storage import open_store

    store = open_store(medium[0])
    if kind in ("simulate", "rechunk", "ingest"):
        got = open_store(out)
        for j in range(0, M_P, 50_000):
            np.testing.assert_array_equal(np.asarray(got.X[:, j:j + 50_000]), np.asarray(store.X[:, j:j + 50_000]))
    elif kind.startswith("fit"):
        Z, Z_ref = load_model(out).transform(store), load_model(medium[1]).transform(store)
        np.testing.assert_allclose(Z, Z_ref, rtol=1e-4, atol=1e-4 * np.abs(Z_ref).max())
    elif kind == "predict":
        expected = load_model(medium[1]).predict(store)
        rows = out.read_text().splitlines()[1:]
        np.testing.assert_array_equal([row.split(",")[1] for row in rows], expected.astype(str))
    else:
        ref = tmp_path / "ref.json"
        args, _ = _command("cv", medium, ref.with_suffix(""), tmp_path)
        assert run_cli(*args).returncode == 0
        import json

        got, want = json.loads(out.read_text()), json.loads(ref.read_text())
        assert got["results"] == want["results"]


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
_KINDS = ("simulate", "rechunk", "ingest", "fit-gram", "fit-randomized", "cv", "predict")
#: (command, point, signal): every command at every point; the signal rotates, so each command meets all three.
POINTS = [(kind, point, _SIGNALS[(i + j) % 3]) for i, kind in enumerate(_KINDS) for j, point in enumerate(("early", "middle", "final"))]


@pytest.mark.parametrize("kind, point, sig", POINTS, ids=[f"{k}-{p}-{s.name}" for k, p, s in POINTS])
def test_signal_at_each_point_of_each_command(medium, tmp_path, kind, point, sig):
    """Exit 130/143 with one line and no traceback (or -9); once the next command (``wideml clean``, run in-process) has
    run, nothing is left; the output is absent, or (signal after the run's end) complete and equal to an uninterrupted run's."""
    out_dir, wd = tmp_path / "out", tmp_path / "wd"
    out_dir.mkdir(), wd.mkdir()
    args, name = _command(kind, medium, out_dir / "result", wd, shape=(M_N, M_P))
    if kind == "rechunk":
        args[args.index("--feature-chunk") + 1] = RECHUNK_CHUNK
    log = tmp_path / "stderr.txt"
    proc = start_cli(*args, log=log)
    # a short final step (the middle of predict's one short pass too) may be over before the poll sees it
    wait_until(_trigger(kind, point, out_dir, name, log, medium[0]), proc, what=f"the {point} of {kind}",
               may_finish=point != "early")
    status, after = signal_and_wait(proc, sig, log=log)
    stderr = log.read_text(errors="replace")
    assert "Traceback" not in stderr, stderr
    assert status in (0, expected_status(sig)), stderr
    if status != 0 and sig != signal.SIGKILL:
        lines = non_progress_lines(after)
        assert len(lines) == 1 and lines[0].startswith(f"wideml: interrupted by {sig.name}"), lines
    if status == 0 or (out_dir / name).exists():  # the signal came after the output was in place
        assert point != "early", stderr
        _assert_complete_and_correct(kind, medium, out_dir / name, tmp_path)
    from wideml.runtime.ownership import verdict

    # an interrupted fit keeps its checkpoints for the rerun (it resumes from them), still carrying its owner record
    kept = [p for p in out_dir.iterdir() if p.name != name and p.name.endswith(".wideml-work")]
    assert all(verdict(p) in ("kept", "dead") for p in kept), kept
    _next_command("clean", out_dir, "--workdir", wd)  # clean removes them too, and every other leftover
    assert leftovers(out_dir, wd) == []
    assert [p for p in out_dir.iterdir() if p.name != name] == []


def _next_command(*args) -> None:
    """``wideml ARGS`` in this process (no interpreter start), leaving this process's dask config as it was."""
    import dask.config

    from wideml.cli.main import main

    with dask.config.set({"wideml.workdir": dask.config.get("wideml.workdir", None)}):
        assert main([*map(str, args), "--no-progress"]) == 0
