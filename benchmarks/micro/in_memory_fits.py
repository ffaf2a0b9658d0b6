"""The fit runner's in-memory fast path: small in-memory fits run their pass graphs in the calling thread.

An in-memory X that is one feature chunk has its pass graphs run on dask's
synchronous scheduler (``FitPasses.in_process``); anything larger keeps the
thread pool. For each size and estimator this times, in the same run and
interleaved, a fit as the runner runs it and the same fit with the rule
switched off (thread pool always), medians of --repeats, and prints the ratio.
It also times the same flops in numpy (X Xᵀ) as the floor of a Gram fit.

Results: benchmarks/results/in_memory_fits.json.

Usage: python benchmarks/micro/in_memory_fits.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import numpy as np

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save

SIZES = [(100, 1_000), (300, 20_000), (1_000, 100_000)]


def _estimators():
    from wideml import LFL, LOL, EncoderClassifier, KernelPCA

    return {
        "LOL (gram)": lambda: LOL(n_components=5, solver="gram"),
        "LOL (randomized)": lambda: LOL(n_components=5, solver="randomized"),
        "LFL": lambda: LFL(n_components=5),
        "KernelPCA": lambda: KernelPCA(n_components=3),
        "EncoderClassifier (local, for reference)": lambda: EncoderClassifier(kernels="linear"),
    }


def _time(make, X, y, repeats: int, pool: bool) -> float:
    from wideml.runner import fit_runner as _passes

    rule = _passes.FitPasses._scheduler
    times = []
    for _ in range(repeats):
        if pool:
            _passes.FitPasses._scheduler = lambda self: contextlib.nullcontext()
        try:
            t0 = time.perf_counter()
            make().fit(X, y)
            times.append(time.perf_counter() - t0)
        finally:
            _passes.FitPasses._scheduler = rule
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    from wideml.inputs.door import fit_input
    from wideml.runner.fit_runner import FitPasses

    rng = np.random.default_rng(0)
    rows = []
    for n, p in SIZES:
        X = rng.standard_normal((n, p)).astype(np.float32)
        y = rng.integers(0, 2, n)
        in_process = FitPasses(None, 1, data=fit_input(X, y)).in_process
        t0 = time.perf_counter()
        for _ in range(args.repeats):
            X @ X.T
        gram_floor = (time.perf_counter() - t0) / args.repeats
        for name, make in _estimators().items():
            make().fit(X, y)  # warm-up (imports, thread pools)
            runner, pool = [], []
            for _ in range(2):  # interleaved halves: the machine is shared and noisy
                runner.append(_time(make, X, y, args.repeats, pool=False))
                pool.append(_time(make, X, y, args.repeats, pool=True))
            row = {"n": n, "p": p, "estimator": name, "one_chunk": in_process, "runner_s": min(runner), "thread_pool_s": min(pool),
                   "pool_over_runner": min(pool) / min(runner), "numpy_gram_s": gram_floor}
            rows.append(row)
            print(f"{n:>5} x {p:<7} {name:<42} runner {row['runner_s'] * 1e3:8.1f} ms  thread pool {row['thread_pool_s'] * 1e3:8.1f} ms"
                  f"  ({row['pool_over_runner']:.2f}x)  one chunk: {in_process}  numpy X X^T {gram_floor * 1e3:.1f} ms")
    path = save("in_memory_fits", {"repeats": args.repeats, "rows": rows})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
