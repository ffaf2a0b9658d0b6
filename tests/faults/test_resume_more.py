"""Resumable passes beyond the Gram projector: LFL fits, ``wideml cv`` and API fits under ``wideml.resume``.

As in test_resume.py, the CLI cases SIGKILL a real subprocess from inside (the test-only hook
WIDEML_TEST_KILL_AFTER_READS=N kills it right after its N-th chunk read) once more than half
of its chunks are read, and count the rerun's reads (WIDEML_TEST_REPORT_READS). The rerun
must read at most half of the chunks and give what an uninterrupted run gives.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from adversarial.harness import run_cli
from faults.kill_helpers import resume_stores

N, P, WIDTH = 60, 2000, 100
CHUNKS = P // WIDTH
FAST = {"DASK_WIDEML__CHECKPOINT_INTERVAL": "0.000001", "WIDEML_TEST_REPORT_READS": "1"}  # a checkpoint after every chunk
OFF = {"DASK_WIDEML__CHECKPOINT_INTERVAL": "0"}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A float64 3-class store (n=60, p=2000, 20 feature chunks) and a held-out test store."""
    return resume_stores(tmp_path_factory.mktemp("resume-more"), seed=5, n=N, p=P, width=WIDTH)


def _reads(proc) -> int:
    match = re.search(r"wideml-test: chunk reads (\d+)", proc.stderr)
    assert match, proc.stderr
    return int(match.group(1))


def _store_reads(proc, store) -> int:
    """Chunk reads of ``store`` alone (a saved model's own arrays are read too when it is written)."""
    match = re.search(rf"wideml-test: reads of {re.escape(str(Path(store).resolve()))}: (\d+)", proc.stderr)
    return int(match.group(1)) if match else 0


def _killed(proc) -> None:
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)


def _components(path) -> np.ndarray:
    import wideml

    model = wideml.load_model(path)
    emb = getattr(model, "embedding_", model)
    return np.asarray(emb.components_, dtype=np.float64).T


def _assert_same_model(a_path, b_path, test_store) -> None:
    import wideml

    A, B = _components(a_path), _components(b_path)
    assert np.max(scipy.linalg.subspace_angles(A, B)) < 1e-6
    np.testing.assert_allclose(B, A, rtol=1e-9, atol=1e-12)
    store = wideml.open_store(test_store)
    a, b = wideml.load_model(a_path), wideml.load_model(b_path)
    np.testing.assert_array_equal(b.predict(store), a.predict(store))


# -- 1. wideml fit --method lfl ------------------------------------------------------------------
def _fit_lfl(train, out, *extra, env=None):
    return run_cli("fit", "lfl", train, "-o", out, "--n-components", "6", *extra, env=dict(FAST, **(env or {})))


@pytest.fixture(scope="module")
def lfl_reference(stores, tmp_path_factory):
    path = tmp_path_factory.mktemp("ref-lfl") / "model.zarr"
    proc = run_cli("fit", "lfl", stores[0], "-o", path, "--n-components", "6", env=OFF)
    assert proc.returncode == 0, proc.stderr
    return path


def test_killed_lfl_fit_resumes_reading_at_most_half(stores, lfl_reference, tmp_path):
    """LFL's one pass, SIGKILLed after 70% of its chunk reads: the rerun reads <= half and equals the uninterrupted fit."""
    train, test = stores[0], stores[1]
    out = tmp_path / "model.zarr"
    _killed(_fit_lfl(train, out, env={"WIDEML_TEST_KILL_AFTER_READS": str(int(0.7 * CHUNKS))}))
    assert not out.exists() and Path(f"{out}.wideml-work").is_dir()
    proc = _fit_lfl(train, out)
    assert proc.returncode == 0, proc.stderr
    assert "from a checkpoint" in proc.stderr
    assert _reads(proc) <= CHUNKS // 2, proc.stderr
    assert not Path(f"{out}.wideml-work").exists()
    _assert_same_model(lfl_reference, out, test)


def test_lfl_changed_parameter_starts_over_and_says_why(stores, lfl_reference, tmp_path):
    """A changed --seed after a killed LFL fit: 'parameters changed ... starting over', every chunk read again."""
    train = stores[0]
    out = tmp_path / "model.zarr"
    _killed(_fit_lfl(train, out, env={"WIDEML_TEST_KILL_AFTER_READS": str(int(0.7 * CHUNKS))}))
    proc = _fit_lfl(train, out, "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "parameters changed" in proc.stderr and "starting over" in proc.stderr
    assert _reads(proc) == CHUNKS
    assert not Path(f"{out}.wideml-work").exists()


# -- 2. wideml cv ----------------------------------------------------------------------------------
def _cv(train, work, *extra, env=None, methods="lol,pca"):
    return run_cli("cv", train, "--methods", methods, "--folds", "5", "--max-dim", "4", "--workdir", work, *extra,
                   env=dict(FAST, **(env or {})))


def _cv_folders(work: Path) -> list:
    return sorted(work.glob("wideml-cv-*"))


def test_killed_cv_resumes_its_gram_pass(stores, tmp_path):
    """`wideml cv` (one Gram pass for every fold), SIGKILLed after 70% of its reads: rerun reads <= half, same table."""
    train = stores[0]
    work = tmp_path / "work"
    plain = run_cli("cv", train, "--methods", "lol,pca", "--folds", "5", "--max-dim", "4", "--workdir", work, env=OFF)
    assert plain.returncode == 0, plain.stderr
    _killed(_cv(train, work, env={"WIDEML_TEST_KILL_AFTER_READS": str(int(0.7 * CHUNKS))}))
    assert len(_cv_folders(work)) == 1
    proc = _cv(train, work)
    assert proc.returncode == 0, proc.stderr
    assert "from a checkpoint" in proc.stderr
    assert _reads(proc) <= CHUNKS // 2, proc.stderr
    assert proc.stdout == plain.stdout
    assert _cv_folders(work) == []


def test_cv_changed_methods_start_over_and_say_why(stores, tmp_path):
    """A killed `wideml cv --methods lol,pca` rerun as `--methods lol,rrlda`: 'parameters changed ... starting over'."""
    train = stores[0]
    work = tmp_path / "work"
    _killed(_cv(train, work, env={"WIDEML_TEST_KILL_AFTER_READS": str(int(0.7 * CHUNKS))}))
    proc = _cv(train, work, methods="lol,rrlda")
    assert proc.returncode == 0, proc.stderr
    assert "parameters changed" in proc.stderr and "starting over" in proc.stderr
    assert _reads(proc) == CHUNKS


def test_killed_cv_sweep_resumes_its_single_pass(stores, tmp_path):
    """`wideml cv --methods lol,lfl,rp` (every fold and d of all three from one pass) SIGKILLed after 70% of its
    reads: the rerun reads <= half of the chunks and prints the uninterrupted run's errors."""
    train = stores[0]
    work = tmp_path / "work"
    args = ("cv", train, "--methods", "lol,lfl,rp", "--folds", "3", "--workdir", work)
    plain = run_cli(*args, env=OFF)
    assert plain.returncode == 0, plain.stderr
    _killed(run_cli(*args, env=dict(FAST, WIDEML_TEST_KILL_AFTER_READS=str(int(0.7 * CHUNKS)))))
    rerun = run_cli(*args, env=FAST)
    assert rerun.returncode == 0, rerun.stderr
    assert "from a checkpoint" in rerun.stderr
    assert _store_reads(rerun, train) <= CHUNKS // 2, rerun.stderr
    assert rerun.stdout == plain.stdout
    assert _cv_folders(work) == []


# -- 3. kernel models (full Gram pass, landmark cross-Gram pass) and the encoder ----------------------
def test_killed_kernel_lol_fit_resumes_its_gram_pass(stores, tmp_path):
    """`wideml fit kernel-lol` (one Gram pass), SIGKILLed after 70% of its reads: rerun reads <= half; same embedding and predictions."""
    import wideml

    train, test = stores[0], stores[1]
    ref = tmp_path / "ref.zarr"
    assert run_cli("fit", "kernel-lol", train, "-o", ref, "--n-components", "2", "--sigma", "0.05", env=OFF).returncode == 0
    out = tmp_path / "model.zarr"
    args = ("fit", "kernel-lol", train, "-o", out, "--n-components", "2", "--sigma", "0.05")
    _killed(run_cli(*args, env=dict(FAST, WIDEML_TEST_KILL_AFTER_READS=str(int(0.7 * CHUNKS)))))
    proc = run_cli(*args, env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "from a checkpoint" in proc.stderr
    assert _reads(proc) <= CHUNKS // 2, proc.stderr
    assert not Path(f"{out}.wideml-work").exists()
    a, b = wideml.load_model(ref), wideml.load_model(out)
    np.testing.assert_allclose(b.embedding_, a.embedding_, rtol=1e-8, atol=1e-10)
    store = wideml.open_store(test)
    np.testing.assert_array_equal(b.predict(store), a.predict(store))


def test_killed_encoder_fit_resumes_its_class_statistics_pass(stores, tmp_path):
    """`wideml fit encoder` (linear,euclidean: one class-statistics pass) SIGKILLed after 70% of its reads:
    the rerun reads <= half, its class means and kernel scores equal the uninterrupted fit's, so do its predictions."""
    import wideml

    train, test = stores[0], stores[1]
    args = ("fit", "encoder", train, "--kernels", "linear,euclidean")
    ref = tmp_path / "ref.zarr"
    assert run_cli(*args, "-o", ref, env=OFF).returncode == 0
    out = tmp_path / "model.zarr"
    _killed(run_cli(*args, "-o", out, env=dict(FAST, WIDEML_TEST_KILL_AFTER_READS=str(int(0.7 * CHUNKS)))))
    assert Path(f"{out}.wideml-work").is_dir() and not out.exists()
    proc = run_cli(*args, "-o", out, env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "from a checkpoint" in proc.stderr
    assert 0 < _store_reads(proc, train) <= CHUNKS // 2, proc.stderr
    assert not Path(f"{out}.wideml-work").exists()
    a, b = wideml.load_model(ref), wideml.load_model(out)
    np.testing.assert_allclose(np.asarray(b.class_means_), np.asarray(a.class_means_), rtol=1e-12, atol=1e-12)
    assert b.kernel_ == a.kernel_
    np.testing.assert_allclose(b.embedding_, a.embedding_, rtol=1e-9, atol=1e-9)
    store = wideml.open_store(test)
    np.testing.assert_array_equal(b.predict(store), a.predict(store))


# -- 4. API fits under the config key wideml.resume ---------------------------------------------------
#: A fit in a fresh interpreter under ``wideml.resume`` (argv: store, work folder, output .npy, estimator
#: expression, result expression); prints its chunk reads of the store like the CLI's test hook.
API_FIT = """
import os, sys
import dask, numpy as np, wideml
from wideml.storage.reader import READ_COUNTER
store = wideml.open_store(sys.argv[1])
with dask.config.set({"wideml.resume": True, "wideml.workdir": sys.argv[2]}):
    est = eval(sys.argv[4]).fit(store)
print(f"wideml-test: chunk reads {sum(READ_COUNTER.values())}", file=sys.stderr)
np.save(sys.argv[3], np.asarray(eval(sys.argv[5]), dtype=np.float64))
"""


def _api_fit(train, work, out, estimator: str, result: str, env=None):
    import os
    import subprocess
    import sys

    full_env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning", **FAST, **(env or {})}
    return subprocess.run([sys.executable, "-c", API_FIT, str(train), str(work), str(out), estimator, result],
                          capture_output=True, text=True, timeout=300, env=full_env)


def _auto_folders(work: Path) -> list:
    return sorted(work.glob("wideml-resume-*"))


@pytest.mark.parametrize("estimator, result, passes, angles", [
    ("wideml.LOL(n_components=3, solver='gram')", "est.components_", 2, True),
    ("wideml.EncoderClassifier(kernels=('linear', 'spearman'), spearman='approx', sketch_size=256)", "est.predict_proba(store)", 2, False),
    ("wideml.KernelPCA(n_components=4, sigma=0.05, n_landmarks=30)", "est.embedding_", 1, False),
], ids=["lol-gram", "encoder-estimated-ranks", "kpca-landmark-cross-gram"])
def test_api_fit_under_wideml_resume_resumes_after_sigkill(estimator, result, passes, angles, stores, tmp_path):
    """API fit under dask.config wideml.resume=True, SIGKILLed after 70% of its reads, then run again: the rerun says it
    resumes, reads <= half of the chunks and equals an uninterrupted fit; its automatic work folder is gone afterwards."""
    import wideml  # noqa: F401  (the expressions name it)

    train = stores[0]
    work = tmp_path / "work"
    out = tmp_path / "out.npy"
    store = wideml.open_store(train)
    est = eval(estimator).fit(store)  # the uninterrupted fit, in this process (checkpoints off: no wideml.resume)
    A = np.asarray(eval(result), dtype=np.float64)
    _killed(_api_fit(train, work, out, estimator, result, env={"WIDEML_TEST_KILL_AFTER_READS": str(int(0.7 * passes * CHUNKS))}))
    assert len(_auto_folders(work)) == 1
    proc = _api_fit(train, work, out, estimator, result)
    assert proc.returncode == 0, proc.stderr
    assert "from a checkpoint" in proc.stderr
    assert _reads(proc) <= passes * CHUNKS // 2, proc.stderr
    assert _auto_folders(work) == []
    B = np.load(out)
    if angles:  # components (d x p): the same subspace, and the same vectors
        assert np.max(scipy.linalg.subspace_angles(A.T, B.T)) < 1e-6
    np.testing.assert_allclose(B, A, rtol=1e-8, atol=1e-10)


def test_api_fit_without_wideml_resume_keeps_nothing(stores, tmp_path):
    """Default (wideml.resume false): a killed API fit leaves no checkpoint folder behind."""
    train = stores[0]
    work = tmp_path / "work"
    est, res = "wideml.LOL(n_components=3, solver='gram')", "est.components_"
    env = {"DASK_WIDEML__RESUME": "false"}
    code = API_FIT.replace('"wideml.resume": True, ', "")
    import os
    import subprocess
    import sys

    full_env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning", **FAST, **env}
    args = [sys.executable, "-c", code, str(train), str(work), str(tmp_path / "o.npy"), est, res]
    _killed(subprocess.run(args, capture_output=True, text=True, timeout=300, env=dict(full_env, WIDEML_TEST_KILL_AFTER_READS="28")))
    assert _auto_folders(work) == [] and not any(work.glob("*/pass-*"))


def test_encoder_cross_validation_interrupted_resumes_in_process(stores, tmp_path, monkeypatch):
    """cross_validate_encoder (every fold from one class-statistics pass) in a resumable block, interrupted after 70% of
    its reads: the rerun reads <= half of the chunks and reports the uninterrupted run's fold errors and kernel scores."""
    import dask

    import wideml
    from wideml.passes import blocks
    from wideml.runtime.checkpoint import resumable
    from wideml.storage.reader import READ_COUNTER

    store = wideml.open_store(stores[0])
    kw = dict(cv=3, kernels=("linear", "euclidean"))
    plain = wideml.cross_validate_encoder(store, **kw)
    count = [0]

    def interrupt():
        count[0] += 1
        if count[0] > int(0.7 * CHUNKS):
            raise KeyboardInterrupt

    work = tmp_path / "work"
    with dask.config.set({"wideml.checkpoint-interval": 1e-6}):
        monkeypatch.setattr(blocks, "_after_read", interrupt)
        with pytest.raises(KeyboardInterrupt):
            with resumable(str(work)):
                wideml.cross_validate_encoder(store, **kw)
        monkeypatch.undo()
        assert work.is_dir()
        before = sum(READ_COUNTER.values())
        with resumable(str(work)):
            again = wideml.cross_validate_encoder(store, **kw)
        reads = sum(READ_COUNTER.values()) - before
    assert 0 < reads <= CHUNKS // 2
    assert not work.exists()
    assert again["fold_errors"] == plain["fold_errors"] and again["selected_kernels"] == plain["selected_kernels"]
    for a, b in zip(again["kernel_scores"], plain["kernel_scores"]):
        assert a.keys() == b.keys()
        assert all(a[k] == b[k] if None in (a[k], b[k]) else np.isclose(a[k], b[k], rtol=1e-9) for k in a)
