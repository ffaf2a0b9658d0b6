"""The one fit runner (runner/fit_runner.py): its BLAS-thread rule, its in-process rule for small in-memory input, its labels."""

import dask
import dask.array as da
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from oracles import make_data
from wideml import LFL, LOL, KernelPCA
from wideml.inputs.door import fit_input
from wideml.passes.spec import Pass
from wideml.runner.fit_runner import SMALL_ALGEBRA_N, FitPasses, algebra_threads, one_blas_thread


def _blas_threads():
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_one_blas_thread_limits_every_blas_library():
    if not _blas_threads():
        pytest.skip("no BLAS library reported by threadpoolctl")
    with one_blas_thread():
        assert set(_blas_threads()) == {1}
    with algebra_threads(SMALL_ALGEBRA_N - 1):
        assert set(_blas_threads()) == {1}
    outside = _blas_threads()
    with algebra_threads(SMALL_ALGEBRA_N):  # large n x n algebra keeps the threads it had
        assert _blas_threads() == outside


def test_small_in_memory_input_runs_in_process_and_others_do_not():
    X, y = make_data(n=40, p=300, seed=1)
    small = fit_input(X, y)
    assert small.dask_X is None  # no dask view until a pass needs one
    assert FitPasses(LOL(), 2, data=small).in_process
    wide = fit_input(da.from_array(X, chunks=(40, 100)), y)
    assert not FitPasses(LOL(), 2, data=wide).in_process  # lazy input: the active scheduler
    assert not FitPasses(LOL(), 2).in_process


def test_in_process_passes_use_the_synchronous_scheduler(monkeypatch):
    seen = []
    import wideml.runner.resume as resume

    original = resume.run_pass

    def spy(*args, **kwargs):
        seen.append(dask.config.get("scheduler", None))
        return original(*args, **kwargs)

    monkeypatch.setattr(resume, "run_pass", spy)
    X, y = make_data(n=40, p=300, seed=2)
    LOL(n_components=2).fit(X, y)
    assert seen and set(seen) == {"sync"}
    seen.clear()
    LOL(n_components=2).fit(da.from_array(X, chunks=(40, 100)), y)
    assert seen and "sync" not in seen


@pytest.mark.parametrize("make", [lambda: LOL(n_components=3), lambda: LOL(n_components=3, solver="randomized"),
                                  lambda: LFL(n_components=3), lambda: KernelPCA(n_components=3)])
def test_in_process_and_threaded_fits_agree(make):
    X, y = make_data(n=60, p=500, seed=3)
    a = make().fit(X, y)
    b = make().fit(da.from_array(X, chunks=(60, 125)), y)  # four chunks, threaded scheduler
    np.testing.assert_allclose(a.transform(X), b.transform(X), rtol=1e-8, atol=1e-8)


def test_labels_number_the_passes():
    est = LOL()
    runner = FitPasses(est, 3)
    assert runner.label("Gram") == "LOL fit, pass 1/3: Gram"
    runner.run(Pass(lambda: dask.delayed(1)), "Gram")
    assert runner.label("emit") == "LOL fit, pass 2/3: emit"
    with pytest.raises(RuntimeError):
        runner.record()  # two of three passes have not run
    runner.run(Pass(local=lambda: 2), "local")
    runner.run(Pass(lambda: dask.delayed(3)), "last")
    with pytest.raises(RuntimeError):
        runner.run(Pass(lambda: dask.delayed(4)), "one too many")
    runner.record()
    assert est.n_fit_passes_ == 3
