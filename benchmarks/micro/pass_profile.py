"""Where each pass's chunk tasks spend their time, and how fast their products run (issue 15).

For each fit on the 2 GB store (n = 2000, p = 250 000, float32, two classes):

- the default LOL (randomized solver, q = 1, robust class medians), LOL with class
  means, the exact Gram solver, LFL and the linear/Euclidean encoder;

the fit runs once under dask's synchronous scheduler with one BLAS thread (so every
phase is timed without contention) and once under the default threaded scheduler (``wideml.threads`` tasks at once),
both inside :func:`wideml.passes.timing.collect`. The breakdown gives seconds per
phase (read, class medians, centring, class sums, random test matrix, products,
writes, reductions; "outside the chunk tasks" is the fit's time not spent in a timed
phase: graph building, the small n x l / l x l algebra, the scheduler).

Every product signature the fit ran (shape, dtype, memory order) is then re-run in
isolation on random data of the same layout, single-threaded and as many threads at
once as the threaded scheduler runs tasks, median of 5: the products' share of that isolated BLAS rate is reported
(1.0 = the products inside the pass run exactly as fast as alone).

Usage: python benchmarks/micro/pass_profile.py [--store PATH] [--repeats 3] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save

FITS = {
    "lol_default": "wideml.LOL(50)",
    "lol_means_randomized": "wideml.LOL(50, robust_first=False, solver='randomized')",
    "lol_gram": "wideml.LOL(50, solver='gram')",
    "lol_gram_means": "wideml.LOL(50, solver='gram', robust_first=False)",
    "lfl": "wideml.LFL(50)",
    "encoder_linear_euclidean": "wideml.EncoderClassifier(kernels='linear,euclidean')",
}


def _concurrent_seconds(work, threads: int, repeats: int = 5) -> float:
    """Median wall seconds of ``threads`` copies of ``work()`` run at once, BLAS on one thread each."""
    from threadpoolctl import threadpool_limits

    times = []
    with threadpool_limits(1, user_api="blas"):
        for _ in range(repeats):
            ts = [threading.Thread(target=work) for _ in range(threads)]
            t0 = time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _isolated_rate(shape: tuple, threads: int) -> float:
    """GFLOP/s of one product of this signature run alone (threads = 1) or as ``threads`` concurrent copies."""
    m, k, n, dtype, a_order, b_order = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(dtype)
    a = np.asfortranarray(a) if a_order == "F" else a
    b = rng.standard_normal((k, n) if n > 1 else (k,)).astype(dtype)
    b = np.asfortranarray(b) if b_order == "F" else b
    flops = 2.0 * m * k * n
    reps = max(1, int(2e9 // max(flops, 1)))  # ~0.02 s of work per timing

    def work():
        for _ in range(reps):
            a @ b

    return threads * reps * flops / _concurrent_seconds(work, threads) / 1e9


def _isolated_gram_rate(m: int, k: int, dtype: str, threads: int) -> float:
    """GFLOP/s (m m k per product) of x @ x.T (numpy's SYRK) for an (m, k) chunk, alone or as ``threads`` copies."""
    x = np.random.default_rng(0).standard_normal((m, k)).astype(dtype)
    return threads * m * m * k / _concurrent_seconds(lambda: x @ x.T, threads) / 1e9


def _profile(ctor: str, store, scheduler: str):
    import dask
    from threadpoolctl import threadpool_limits

    import wideml  # noqa: F401  (used by ctor)
    from wideml.passes.timing import collect

    est = eval(ctor)
    if scheduler == "synchronous":
        with dask.config.set(scheduler="synchronous"), threadpool_limits(1, user_api="blas"), collect() as times:
            t0 = time.perf_counter()
            est.fit(store)
            wall = time.perf_counter() - t0
    else:
        with collect() as times:
            t0 = time.perf_counter()
            est.fit(store)
            wall = time.perf_counter() - t0
    return wall, times


def _product_efficiency(times, threads: int, cache: dict) -> dict:
    """Measured product seconds vs the seconds the same products take in isolation."""
    iso_seconds, seen_seconds, flops = 0.0, 0.0, 0.0
    per_shape = []
    for shape, (calls, seconds, work) in sorted(times.shapes.items(), key=lambda kv: -kv[1][1]):
        m, k, n, dtype = shape[:4]
        key = (shape, threads)
        if key not in cache:
            gram = work == calls * m * m * k and n == m
            cache[key] = _isolated_gram_rate(m, k, dtype, threads) if gram else _isolated_rate(shape, threads)
        rate = cache[key]
        iso = work / (rate * 1e9)  # wall seconds these flops take as `threads` concurrent copies
        seen = seconds / threads  # the tasks' product seconds, `threads` of them at once
        per_shape.append({"shape": list(shape), "calls": calls, "gflop": work / 1e9, "seconds": seconds,
                          "gflop_per_s_in_pass": work / seconds / 1e9 * threads if seconds else None,
                          "gflop_per_s_isolated": rate})
        iso_seconds += iso
        seen_seconds += seen
        flops += work
    return {"gflop": flops / 1e9, "isolated_seconds": iso_seconds, "in_pass_seconds": seen_seconds,
            "share_of_isolated_rate": iso_seconds / seen_seconds if seen_seconds else None, "shapes": per_shape}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default=None, help="an existing float32 store (default: make the 2 GB store in a temporary folder)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None, choices=sorted(FITS))
    ap.add_argument("--name", default="pass_profile")
    args = ap.parse_args()

    import wideml
    from wideml.runtime.config import thread_count

    if args.store:
        path = Path(args.store)
    else:
        from lol_2gb_store import make_store

        path = Path(tempfile.mkdtemp(prefix="wideml-bench-")) / "X2gb.zarr"
        make_store(path, 2000, 250_000)
    store = wideml.open_store(path)
    res: dict = {"store": str(path), "n": store.X.shape[0], "p": store.X.shape[1], "repeats": args.repeats,
                 "threads": thread_count(), "fits": {}}
    cache: dict = {}
    for name in args.only or FITS:
        ctor = FITS[name]
        _profile(ctor, store, "threads")  # warm the page cache and the imports
        entry: dict = {"estimator": ctor}
        for scheduler in ("synchronous", "threads"):
            runs = [_profile(ctor, store, scheduler) for _ in range(args.repeats)]
            walls = [w for w, _ in runs]
            wall, times = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
            threads = 1 if scheduler == "synchronous" else thread_count()
            outside = max(0.0, wall * threads - times.total()) if scheduler == "synchronous" else None
            rows = times.table()
            if outside is not None:
                rows.append({"phase": "outside the chunk tasks", "seconds": outside, "calls": 1,
                             "share": outside / (times.total() + outside)})
            entry[scheduler] = {"wall_s": wall, "wall_runs": walls, "phases": rows,
                                "products": _product_efficiency(times, threads, cache)}
            prod = entry[scheduler]["products"]
            print(f"\n{name} [{scheduler}] wall {wall:.2f} s (runs {', '.join(f'{w:.2f}' for w in walls)}); "
                  f"products {prod['gflop']:.0f} GFLOP at {100 * (prod['share_of_isolated_rate'] or 0):.0f}% of the isolated rate")
            for row in rows:
                rate = f"  {row['gflop_per_s']:.0f} GFLOP/s" if "gflop_per_s" in row else ""
                print(f"  {row['phase']:<26} {row['seconds']:7.2f} s  {100 * row['share']:5.1f}%  ({row['calls']} calls){rate}")
        res["fits"][name] = entry
    out = save(args.name, res)
    print(f"\nsaved {out}")


if __name__ == "__main__":
    main()
