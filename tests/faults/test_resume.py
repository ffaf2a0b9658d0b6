"""Resumable passes: a fit killed after more than half of its chunk reads resumes and equals an uninterrupted fit.

The CLI cases SIGKILL a real ``wideml fit`` subprocess from inside (the test-only hook
WIDEML_TEST_KILL_AFTER_READS=N kills the process right after its N-th chunk read) and
count the rerun's reads (WIDEML_TEST_REPORT_READS prints them on stderr). The API
cases interrupt an in-process fit with KeyboardInterrupt from a chunk read and count
reads with READ_COUNTER.
"""

from __future__ import annotations

import os
import re
import signal
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from adversarial.harness import run_cli
from faults.kill_helpers import resume_stores

N, P, WIDTH = 60, 2000, 100
CHUNKS = P // WIDTH
#: Passes over X of an uninterrupted fit (Gram: Gram + emit; randomized on a store: sketch, power steps until its subspace
#: converges, final: set from the reference fit's n_fit_passes_).
PASSES = {"gram": 2, "randomized": None}
FAST = {"DASK_WIDEML__CHECKPOINT_INTERVAL": "0.000001", "WIDEML_TEST_REPORT_READS": "1"}  # a checkpoint after every chunk


@pytest.fixture(scope="module")
def f64_store(tmp_path_factory):
    """A float64 3-class store (n=60, p=2000, 20 feature chunks) and a held-out test store."""
    return resume_stores(tmp_path_factory.mktemp("resume"), seed=11, n=N, p=P, width=WIDTH)


@pytest.fixture(scope="module")
def reference(f64_store, tmp_path_factory):
    """Uninterrupted CLI fits, one per solver (checkpoints off): solver -> model path."""
    train = f64_store[0]
    out = {}
    for solver in PASSES:
        path = tmp_path_factory.mktemp(f"ref-{solver}") / "model.zarr"
        proc = run_cli("fit", "lol", train, "-o", path, "--solver", solver, env={"DASK_WIDEML__CHECKPOINT_INTERVAL": "0"})
        assert proc.returncode == 0, proc.stderr
        out[solver] = path
        import wideml

        PASSES[solver] = wideml.load_model(path).embedding_.n_fit_passes_
    assert PASSES["gram"] == 2 and PASSES["randomized"] >= 3
    return out


def _reads(proc) -> int:
    match = re.search(r"wideml-test: chunk reads (\d+)", proc.stderr)
    assert match, proc.stderr
    return int(match.group(1))


def _fit(train, out, solver, *extra, env=None):
    return run_cli("fit", "lol", train, "-o", out, "--solver", solver, *extra, env=dict(FAST, **(env or {})))


def _kill(train, out, solver, *extra, after=None):
    """A fit SIGKILLed right after its chunk read number ``after`` (default: 70% of all its reads)."""
    after = after or int(0.7 * PASSES[solver] * CHUNKS)
    proc = _fit(train, out, solver, *extra, env={"WIDEML_TEST_KILL_AFTER_READS": str(after)})
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    assert not Path(out).exists()
    work = Path(f"{out}.wideml-work")
    assert work.is_dir()
    return work


def _assert_same_model(a_path, b_path, test_store):
    import wideml

    a, b = wideml.load_model(a_path), wideml.load_model(b_path)
    A = np.asarray(a.embedding_.components_, dtype=np.float64).T
    B = np.asarray(b.embedding_.components_, dtype=np.float64).T
    assert np.max(scipy.linalg.subspace_angles(A, B)) < 1e-6
    np.testing.assert_allclose(B, A, rtol=1e-9, atol=1e-12)
    store = wideml.open_store(test_store)
    np.testing.assert_array_equal(b.predict(store), a.predict(store))


@pytest.mark.parametrize("solver", ["gram", "randomized"])
def test_killed_fit_resumes_reading_at_most_half(solver, f64_store, reference, tmp_path):
    train, test, _, _ = f64_store
    out = tmp_path / "model.zarr"
    work = _kill(train, out, solver)
    for npz in work.rglob("*.npz"):  # checkpoints hold plain arrays: loadable without pickle
        with np.load(npz, allow_pickle=False) as members:
            for key in members.files:
                assert members[key].dtype != object
        with zipfile.ZipFile(npz) as zf:
            assert all(name.endswith(".npy") for name in zf.namelist())
    proc = _fit(train, out, solver)
    assert proc.returncode == 0, proc.stderr
    assert "from a checkpoint" in proc.stderr
    total = PASSES[solver] * CHUNKS
    assert _reads(proc) <= total // 2, proc.stderr
    assert not work.exists()
    _assert_same_model(reference[solver], out, test)


def test_changed_parameters_start_over_and_say_why(f64_store, tmp_path):
    train = f64_store[0]
    out = tmp_path / "model.zarr"
    _kill(train, out, "gram")
    proc = _fit(train, out, "gram", "--n-components", "4")
    assert proc.returncode == 0, proc.stderr
    assert "parameters changed" in proc.stderr and "starting over" in proc.stderr
    assert _reads(proc) == 2 * CHUNKS
    assert not Path(f"{out}.wideml-work").exists()


def test_touched_store_starts_over_and_says_why(f64_store, reference, fresh_copy, tmp_path):
    train = fresh_copy(f64_store[0])
    out = tmp_path / "model.zarr"
    _kill(train, out, "gram")
    chunk = next(p for p in sorted(Path(train).rglob("*")) if p.is_file() and "c" in p.parts[len(Path(train).parts):])
    os.utime(chunk, ns=(chunk.stat().st_atime_ns, chunk.stat().st_mtime_ns + 10**9))
    proc = _fit(train, out, "gram")
    assert proc.returncode == 0, proc.stderr
    assert "store changed" in proc.stderr
    assert _reads(proc) == 2 * CHUNKS
    _assert_same_model(reference["gram"], out, f64_store[1])


def test_no_resume_starts_over(f64_store, reference, tmp_path):
    train = f64_store[0]
    out = tmp_path / "model.zarr"
    _kill(train, out, "randomized")
    proc = _fit(train, out, "randomized", "--no-resume")
    assert proc.returncode == 0, proc.stderr
    assert "--no-resume" in proc.stderr and "from a checkpoint" not in proc.stderr
    assert _reads(proc) == PASSES["randomized"] * CHUNKS
    assert not Path(f"{out}.wideml-work").exists()
    _assert_same_model(reference["randomized"], out, f64_store[1])


def test_checkpoints_off_leave_no_work_directory(f64_store, tmp_path):
    train = f64_store[0]
    out = tmp_path / "model.zarr"
    proc = run_cli("fit", "lol", train, "-o", out, "--solver", "gram",
                   env={"DASK_WIDEML__CHECKPOINT_INTERVAL": "0", "WIDEML_TEST_KILL_AFTER_READS": "30"})
    assert proc.returncode == -signal.SIGKILL
    assert not Path(f"{out}.wideml-work").exists()


@pytest.mark.parametrize("width", [WIDTH, 300], ids=["even-chunks", "uneven-chunks"])
@pytest.mark.parametrize("solver", ["gram", "randomized"])
def test_api_fit_interrupted_resumes_in_process(solver, width, f64_store, tmp_path, monkeypatch):
    """API: KeyboardInterrupt after 60% of the chunk reads, then a resumed fit (READ_COUNTER) equal to an uninterrupted one."""
    import dask

    import wideml
    from wideml.passes import blocks
    from wideml.runtime.checkpoint import resumable
    from wideml.storage.reader import READ_COUNTER

    train, _, X, y = f64_store
    if width != WIDTH:  # a second chunking, whose last chunk is shorter
        train = wideml.write_store(tmp_path / "train.zarr", X, y, feature_chunk=width)
    store = wideml.open_store(train)
    plain = wideml.LOL(n_components=3, solver=solver, random_state=0).fit(store, store.y)
    total = plain.n_fit_passes_ * -(-P // width)
    count = [0]

    def interrupt():
        count[0] += 1
        if count[0] > int(0.6 * total):
            raise KeyboardInterrupt

    work = tmp_path / "work"
    with dask.config.set({"wideml.checkpoint-interval": 1e-6, "scheduler": "sync"}):
        monkeypatch.setattr(blocks, "_after_read", interrupt)
        with pytest.raises(KeyboardInterrupt):
            with resumable(str(work)):
                wideml.LOL(n_components=3, solver=solver, random_state=0).fit(store, store.y)
        assert work.is_dir()
        monkeypatch.undo()
        before = sum(READ_COUNTER.values())
        with resumable(str(work)):
            est = wideml.LOL(n_components=3, solver=solver, random_state=0).fit(store, store.y)
        reads = sum(READ_COUNTER.values()) - before
    assert reads <= total // 2
    assert not work.exists()
    A, B = np.asarray(plain.components_).T, np.asarray(est.components_).T
    assert np.max(scipy.linalg.subspace_angles(A, B)) < 1e-6
    np.testing.assert_allclose(est.transform(X), plain.transform(X), rtol=1e-9, atol=1e-9)
    if solver == "gram":  # oracle: the in-memory fit of the same data
        mem = wideml.LOL(n_components=3, solver="gram").fit(X, y)
        assert np.max(scipy.linalg.subspace_angles(np.asarray(mem.components_).T, B)) < 1e-6


def test_retried_chunk_is_never_added_twice(tmp_path):
    """Idempotent fold: a chunk task run twice (dask retrying a lost worker's task) adds its chunk once."""
    from wideml.passes.lane_checkpoints import _step
    from wideml.runtime.checkpoint import LaneState, PassCheckpoint

    ck = PassCheckpoint(str(tmp_path), 1e9, "pass 1/1", quiet=True)
    state = LaneState(0)
    add = lambda acc, part: acc + part  # noqa: E731
    for index in (0, 1, 1, 0, 2):
        state = _step(state, ck, index, add, lambda i: np.array([10.0**i]), index)
    assert state.acc.tolist() == [111.0]
    assert state.done == {0, 1, 2}


def test_refused_fit_leaves_no_work_directory(f64_store, tmp_path):
    """A fit refused with one sentence (exit 2) leaves neither a model nor a work directory."""
    from adversarial.harness import assert_refused

    out = tmp_path / "model.zarr"
    proc = _fit(f64_store[0], out, "gram", "--n-components", "5000")
    assert_refused(proc, "n_components")
    assert not out.exists() and not Path(f"{out}.wideml-work").exists()


def test_a_fit_stopped_after_its_last_pass_reruns_instead_of_reading_a_gone_group(f64_store, reference, tmp_path, monkeypatch,
                                                                                  restore_dask_config):
    """Stopped between moving its fitted arrays out of the checkpoint folder and saving the model (user-world round):
    the rerun found every pass 'already done' and read the removed arrays ('chunk ... is missing'); now it starts over."""
    import wideml.models.persistence as persistence
    from wideml.cli.main import main

    train, test = f64_store[:2]
    out = tmp_path / "m.zarr"
    real_save = persistence.save_model

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(persistence, "save_model", stopped)
    env = {"DASK_WIDEML__CHECKPOINT_INTERVAL": "0.000001"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["fit", "lol", str(train), "-o", str(out), "--solver", "gram", "--no-progress"]) == 130
    assert Path(f"{out}.wideml-work").is_dir() and not out.exists()
    monkeypatch.setattr(persistence, "save_model", real_save)
    assert main(["fit", "lol", str(train), "-o", str(out), "--solver", "gram", "--no-progress"]) == 0
    _assert_same_model(reference["gram"], out, test)
    assert not Path(f"{out}.wideml-work").exists()
