"""Passes are objects the runner runs: their saved state restores the same result, a resumable run takes a completed
pass from its checkpoint, the runner's count equals the store's chunk reads, and estimators never see a checkpoint."""

from __future__ import annotations

import pathlib
import re

import dask
import dask.array as da
import numpy as np
import pytest

import wideml
from wideml import open_store, write_store
from wideml.inputs.door import fit_input
from wideml.passes.crossgram import CrossGramPass
from wideml.passes.encoder import ClassStatsPass
from wideml.passes.gram import GramPass
from wideml.passes.lfl import LflPass
from wideml.passes.loadings import EmitPass
from wideml.passes.sketch import SketchPass
from wideml.passes.spec import Pass
from wideml.runner.fit_runner import FitPasses, run_new_data
from wideml.runtime.checkpoint import load_state, resumable, save_state
from wideml.storage.reader import READ_COUNTER

N, P, WIDTH, K = 30, 200, 50, 3


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(5)
    y = np.arange(N) % K
    X = rng.normal(size=(N, P)) + y[:, None] * (np.arange(P) < 20)
    path = write_store(tmp_path_factory.mktemp("passes") / "s.zarr", X, y, feature_chunk=WIDTH, dtype="float64")
    return X, y, path


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, z in zip(a, b):
            _same(x, z)
    elif hasattr(a, "__dataclass_fields__"):
        _same(vars(a), vars(b))
    elif a is None:
        assert b is None
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _passes(X, y):
    Xd = da.from_array(X, chunks=(N, WIDTH))
    Q = np.linalg.qr(np.random.default_rng(1).normal(size=(N, 4)))[0]
    W = np.eye(K)[y] / np.bincount(y)
    return [
        GramPass(Xd, y, K, median_subsets=[np.arange(N)]),
        CrossGramPass(Xd, np.arange(0, N, 3)),
        SketchPass(Xd, y, K, n_cols=4, seed=3, medians=True),
        SketchPass(Xd, y, K, n_cols=4, seed=3, Q=Q, final=True),
        EmitPass(Xd, np.random.default_rng(2).normal(size=(N, 2))),
        LflPass(Xd, y, K, n_random=2, seed=1, density=0.1, robust=False, out_group=None),
        ClassStatsPass(Xd, W, keep_means=True),
    ]


def test_every_pass_restores_its_saved_state_to_the_same_result(store, tmp_path):
    X, y, _ = store
    for i, step in enumerate(_passes(X, y)):
        (result,) = dask.compute(step.graph())
        save_state(str(tmp_path / f"{i}.npz"), step.save(result))
        _same(step.restore(load_state(str(tmp_path / f"{i}.npz"))), result)


def test_every_checkpointed_pass_has_a_kind_and_a_key_that_follows_its_inputs(store):
    X, y, _ = store
    steps = _passes(X, y)
    assert all(step.kind for step in steps)
    assert steps[2].kind == "sketch" and steps[3].kind == "power"
    Xd = da.from_array(X, chunks=(N, WIDTH))
    assert GramPass(Xd, y, K).key() == GramPass(Xd, y, K).key()
    assert GramPass(Xd, y, K).key() != GramPass(Xd, y, K, median_subsets=[np.arange(N)]).key()
    Q = np.eye(N, 4)
    assert SketchPass(Xd, y, K, n_cols=4, seed=3, Q=Q).key() != SketchPass(Xd, y, K, n_cols=4, seed=3, Q=2 * Q).key()
    assert Pass(lambda: None).kind is None  # a plain pass is never checkpointed


def test_runner_count_equals_the_store_chunk_reads(store):
    _, _, path = store
    data = fit_input(open_store(path), None)
    key = str(open_store(path).path)
    runner = FitPasses(None, 2, data=data, name="test run")
    before = READ_COUNTER[key]
    runner.run(GramPass(data.X, data.codes, data.n_classes), "Gram")
    runner.run(SketchPass(data.X, data.codes, data.n_classes, n_cols=3, seed=0), "sketch")
    chunks = len(data.X.chunks[1])
    assert runner.record() == 2
    assert READ_COUNTER[key] - before == runner.done * chunks


def test_a_resumable_run_takes_a_completed_pass_from_its_checkpoint(store, tmp_path, restore_dask_config):
    X, y, path = store
    data = fit_input(open_store(path), None)
    key = str(open_store(path).path)
    dask.config.set({"wideml.checkpoint-interval": 0.000001})
    results = []
    folder = tmp_path / "work"
    for attempt in range(2):
        with pytest.raises(KeyboardInterrupt), resumable(str(folder)):
            runner = FitPasses.for_run("test run", "test_run", {"a": 1}, data, 2)
            before = READ_COUNTER[key]
            results.append(runner.run(GramPass(data.X, data.codes, data.n_classes), "Gram"))
            reads = READ_COUNTER[key] - before
            assert runner.done == 1  # a pass restored from its checkpoint still counts: the run consists of it
            assert reads == (len(data.X.chunks[1]) if attempt == 0 else 0)
            raise KeyboardInterrupt  # the second pass never runs: the folder keeps the first one's result
    _same(results[0], results[1])
    np.testing.assert_allclose(results[1].raw_gram(), X @ X.T, rtol=1e-10, atol=1e-8)


def test_run_new_data_uses_the_in_memory_form_and_subtracts_the_offset():
    graph_runs = []
    step = Pass(lambda: graph_runs.append(1) or dask.delayed(np.ones(3)), local=lambda: np.full(3, 5.0))
    np.testing.assert_array_equal(run_new_data(step, "new data", offset=np.arange(3.0)), [5.0, 4.0, 3.0])
    assert graph_runs == []
    np.testing.assert_array_equal(run_new_data(Pass(lambda: dask.delayed(np.ones(2))), "new data", offset=1.0), [0.0, 0.0])


def test_estimators_never_see_a_checkpoint():
    """No estimator asks for a checkpoint, builds a pass from one, saves a step, or threads one into a pass."""
    root = pathlib.Path(wideml.__file__).parent / "estimators"
    pattern = re.compile(r"checkpoint\(|checkpoint=|run\(ck|lambda ck|saved_step|PassCheckpoint|gram_state|fields_state")
    found = [f"{path.relative_to(root)}:{n}" for path in root.rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
