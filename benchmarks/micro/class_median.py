"""Per-chunk cost of the exact class medians: sorted runs (float32 path) against the partition path.

One feature chunk as a pass task sees it (default n = 2000, p_j = 4096, float32: 32 MiB), with
K = 2 and K = 5 classes drawn at random, from normal, heavy-tailed (Cauchy) and heavily tied
(0/1/2, genotype-like) data. Both methods run single-threaded (``threadpool_limits(1)``, as under
the 2-task dask scheduler), interleaved (old, new, old, ...), medians of --repeats (the ratio of
the fastest runs is reported beside it: on a shared machine it is the less disturbed figure). Both
results are checked equal (``numpy.array_equal``) before timing. The ratio old / new of each case
is printed and saved in benchmarks/results/class_median.json.

Usage (from benchmarks/): python class_median.py [--n 2000] [--p 4096] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save
from wideml.passes.median_select import class_medians_float32, class_medians_partition


def chunk(kind: str, n: int, p: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "ties":  # genotype-like 0/1/2 codes: every window edge is a tie, confirmed by counting
        return rng.integers(0, 3, (n, p)).astype(np.float32)
    x = rng.standard_normal((n, p)) if kind == "normal" else rng.standard_cauchy((n, p))
    return x.astype(np.float32)


def time_pair(x: np.ndarray, codes: np.ndarray, k: int, repeats: int) -> dict:
    old, new = [], []
    for _ in range(repeats):
        for fn, times in ((class_medians_partition, old), (class_medians_float32, new)):
            t0 = time.perf_counter()
            fn(x, codes, k)
            times.append(time.perf_counter() - t0)
    o, s = statistics.median(old), statistics.median(new)
    return {"partition_s": o, "sorted_runs_s": s, "speedup": o / s, "speedup_of_fastest_runs": min(old) / min(new), "partition_runs_s": old, "sorted_runs_runs_s": new}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--p", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    load_before = os.getloadavg()  # machine() in save() records the load when the results are saved
    cases = []
    with threadpool_limits(1):
        for kind in ("normal", "cauchy", "ties"):
            x = chunk(kind, args.n, args.p, 0)
            for k in (2, 5):
                codes = np.random.default_rng(k).integers(0, k, args.n)
                same = np.array_equal(class_medians_partition(x, codes, k), class_medians_float32(x, codes, k), equal_nan=True)
                if not same:
                    raise SystemExit(f"results differ on {kind} data, K = {k}")
                r = time_pair(x, codes, k, args.repeats)
                ns = 1e9 / (args.n * args.p)
                print(f"{kind:7s} K={k}: partition {r['partition_s'] * 1e3:6.1f} ms ({r['partition_s'] * ns:4.1f} ns/elt), sorted runs {r['sorted_runs_s'] * 1e3:6.1f} ms ({r['sorted_runs_s'] * ns:4.1f} ns/elt): {r['speedup']:.2f}x (fastest runs: {r['speedup_of_fastest_runs']:.2f}x)")
                cases.append({"data": kind, "n_classes": k, "equal": same, **r})
    path = save("class_median", {"load_avg_before_timing": load_before, "n": args.n, "p_j": args.p, "dtype": "float32", "threads": 1, "repeats": args.repeats, "interleaved": True, "cases": cases})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
