"""Simulate p = 10^8 features into a feature store with memory that does not grow with p.

For each setting (default: trunk and the structured, tile-wise rotated-trunk), a
fresh Python process runs ``wideml.sims.simulate_to_store`` for n samples x 10^8
features (float32, n = 4: 1.6 GB) into a temporary directory and reports its peak
RSS (``VmHWM`` of the child, which must stay under 2 GiB), the wall time and the write
rate; the store is then checked (shape, labels, one chunk against the lazy
array) and deleted. A second, smaller run (p = 10^7) in the same way shows that
the peak RSS does not grow with p.

Usage: python benchmarks/scale/sims_p1e8_memory.py [--n 4] [--p 100000000] [--settings trunk rotated-trunk] [--workdir DIR]
Results: benchmarks/results/sims_p1e8_memory.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save

LIMIT_BYTES = 2 * 1024**3

CHILD = r"""
import json, resource, sys, time


def hwm():
    # VmHWM is this process image's RSS high-water mark; unlike ru_maxrss it is not inherited
    # from the parent across fork/exec, so the harness's own memory does not leak into it.
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


from wideml.sims import simulate_to_store

name, path, n, p = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rss0 = hwm()
t0 = time.perf_counter()
simulate_to_store(name, path, n, p, seed=0, dtype="float32")
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "peak_rss_bytes": hwm(), "peak_rss_after_imports_bytes": rss0}))
"""


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def check_store(path: Path, name: str, n: int, p: int) -> dict:
    import numpy as np

    from wideml.sims import simulate
    from wideml.storage import open_store

    store = open_store(path)
    X, y = simulate(name, n, p, seed=0, dtype="float32", chunks=store.stored_chunks[1])
    k = X.numblocks[1] // 2  # a middle chunk, compared bit for bit with the lazy array
    same = bool(np.array_equal(store.X.blocks[0, k].compute(), X.blocks[0, k].compute()))
    return {
        "shape": [store.n_samples, store.n_features],
        "stored_chunks": list(store.stored_chunks),
        "n_chunks": int(X.numblocks[1]),
        "class_counts": {str(c): v for c, v in store.class_counts().items()},
        "labels_match": bool(np.array_equal(store.y, y)),
        "middle_chunk_matches_lazy_array": same,
    }


def run_one(name: str, n: int, p: int, workdir: Path) -> dict:
    path = workdir / f"{name}-{p}.zarr"
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, name, str(path), str(n), str(p)],
                              capture_output=True, text=True, check=True)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        size = du(path)
        result.update({
            "setting": name, "n_samples": n, "n_features": p, "store_bytes": size,
            "write_MB_per_s": size / 1e6 / result["wall_s"],
            "peak_rss_MiB": result["peak_rss_bytes"] / 2**20,
            "under_2GiB": result["peak_rss_bytes"] < LIMIT_BYTES,
        })
        result.update(check_store(path, name, n, p))
    finally:
        shutil.rmtree(path, ignore_errors=True)
    print(f"{name:>14} n={n} p={p:.0e}: {result['wall_s']:.1f} s, {result['write_MB_per_s']:.0f} MB/s, "
          f"peak RSS {result['peak_rss_MiB']:.0f} MiB", flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--p", type=int, default=100_000_000)
    ap.add_argument("--small-p", type=int, default=10_000_000, help="the p of the comparison run (several chunks, like p)")
    ap.add_argument("--settings", nargs="+", default=["trunk", "rotated-trunk"])
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="wideml-sims-", dir=args.workdir))
    t0 = time.perf_counter()
    runs = []
    try:
        for name in args.settings:
            runs.append(run_one(name, args.n, args.small_p, workdir))
            runs.append(run_one(name, args.n, args.p, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "description": "simulate_to_store at p = 1e8 (and a 1e7 comparison) in a fresh process each; peak RSS must stay under 2 GiB",
        "limit_bytes": LIMIT_BYTES,
        "all_under_limit": all(r["under_2GiB"] for r in runs),
        "runs": runs,
        "total_wall_s": time.perf_counter() - t0,
    }
    print(f"saved {save('sims_p1e8_memory', result)}")


if __name__ == "__main__":
    main()
