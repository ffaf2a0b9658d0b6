"""LFL and the linear / Euclidean encoder fits against one read pass of a 2 GB store (issue 15).

Measured in one run (medians of --repeats, every fit and read on the same store):

- a read pass of the store from the page cache ("warm") and off disk ("cold",
  the store's pages evicted before every run): ``_common.read_pass_yardsticks``;
- ``LFL(50).fit(store)``, ``EncoderClassifier(kernels="linear").fit(store)`` and
  ``EncoderClassifier(kernels="linear,euclidean").fit(store)``, warm and cold;
- the ratios fit / read pass (issue 15 targets: <= 3 warm, <= 1.5 cold);
- each fit's chunk task on one chunk of the store, single-threaded (BLAS
  limited to one thread, as dask runs it), beside reading that chunk alone:
  what a chunk costs beyond its read.

Each fit is one pass over X. LFL's chunk task sweeps the chunk from memory in
row tiles (class sums, then the products with the class means and the gathered
columns of the sparse projection: two sweeps, one with class medians); the
encoder's does the same (class means and row norms, then X U^T).

The store is only read (--store, or by default the 2 GB store of ``lol_2gb_store.py``,
made in a temporary folder: n = 2000, p = 250 000 float32, 2 classes, feature chunk 4096). Fits write their class means into temporary
work folders, removed afterwards.

Usage: python benchmarks/scale/lfl_encoder_2gb.py [--store PATH] [--repeats 3] [--skip-cold]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import cold_median_time, median_time, read_pass_yardsticks, save


def chunk_task_ms(store, repeats: int = 7) -> dict:
    """Median ms of each fit's chunk task on one chunk of the store, single-threaded (BLAS on one thread, as dask
    runs it): the task as the fit runs it (it reads its chunk into its own buffer, then sweeps it), beside the
    read alone; "<task>_beyond_read" is what the task adds to reading its chunk (page cache)."""
    from threadpoolctl import threadpool_limits

    from wideml.algebra.encoder import stacked_class_weights
    from wideml.passes.encoder import class_stats, products
    from wideml.passes.blocks import feature_stripes, materialise
    from wideml.passes.keyed_random import lfl_density
    from wideml.passes.lfl import _lfl_fit_chunk

    codes = np.unique(np.asarray(store.y), return_inverse=True)[1]
    K = int(codes.max()) + 1
    refs, offsets = feature_stripes(store.X, direct=True)
    ref, offset = refs[1], int(offsets[1])
    W, _ = stacked_class_weights(codes, K, [np.arange(len(codes))])
    op = products.stats_operator(W, np.float32)
    density, k = lfl_density(store.n_features), 50 - (K - 1)
    tasks = {
        "read_chunk": lambda: materialise(ref),
        "lfl_chunk": lambda: _lfl_fit_chunk(ref, offset, codes, K, False, 0, k, density, None),
        "lfl_robust_chunk": lambda: _lfl_fit_chunk(ref, offset, codes, K, True, 0, k, density, None),
        "encoder_linear_chunk": lambda: class_stats._stats_chunk(ref, offset, op, 0, None, None, False, "float32", False),
        "encoder_linear_euclidean_chunk": lambda: class_stats._stats_chunk(ref, offset, op, 0, None, None, False, "float32", True),
    }
    out = {}
    with threadpool_limits(1, "blas"):
        for name, task in tasks.items():
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                task()
                times.append(time.perf_counter() - t0)
            out[name] = 1e3 * statistics.median(times)
    base = out["read_chunk"]
    return {**{k: round(v, 2) for k, v in out.items()},
            **{f"{k}_beyond_read": round(v - base, 2) for k, v in out.items() if k != "read_chunk"}, "chunk_shape": list(ref_shape(ref))}


def ref_shape(ref) -> tuple[int, int]:
    return (ref.n_rows, ref.stop - ref.start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default=None, help="an existing float32 store (default: make the 2 GB store in a temporary folder)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-cold", action="store_true", help="leave out the off-disk (page cache dropped) timings")
    args = ap.parse_args()

    import wideml
    from wideml.estimators.encoder.estimator import EncoderClassifier

    if args.store is None:
        import tempfile
        from pathlib import Path

        from lol_2gb_store import make_store

        args.store = str(Path(tempfile.mkdtemp(prefix="wideml-bench-")) / "X2gb.zarr")
        make_store(Path(args.store), 2000, 250_000)
    store = wideml.open_store(args.store)
    print(f"store {args.store}: {store.n_samples} x {store.n_features} {store.dtype}, {store.nbytes / 1e9:.2f} GB, "
          f"{store.X.numblocks[1]} chunks", flush=True)
    reads = read_pass_yardsticks(args.store, store, args.repeats)
    warm_read, cold_read = reads["read_pass"], reads["read_pass_cold"]
    print(f"read pass: warm {warm_read:.3f} s, cold {cold_read:.3f} s", flush=True)

    fits = {
        "lfl_50": lambda: wideml.LFL(50).fit(store),
        "encoder_linear": lambda: EncoderClassifier(kernels="linear").fit(store),
        "encoder_linear_euclidean": lambda: EncoderClassifier(kernels="linear,euclidean").fit(store),
    }
    results = {}
    for name, fit in fits.items():
        fit()  # warm-up: imports, page cache
        warm, warm_runs = median_time(fit, args.repeats)
        row = {"warm_s": warm, "warm_runs": warm_runs, "warm_ratio": warm / warm_read}
        if not args.skip_cold:
            cold, cold_runs = cold_median_time(fit, args.store, args.repeats)
            row.update(cold_s=cold, cold_runs=cold_runs, cold_ratio=cold / cold_read)
        results[name] = row
        cold_text = f", cold {row['cold_s']:.3f} s = {row['cold_ratio']:.2f}x cold read (target <= 1.5)" if "cold_s" in row else ""
        print(f"{name}: warm {warm:.3f} s = {row['warm_ratio']:.2f}x warm read (target <= 3){cold_text}", flush=True)

    chunks = chunk_task_ms(store)
    print("chunk task, one thread (ms): " + ", ".join(f"{k} {v}" for k, v in chunks.items() if k != "chunk_shape"), flush=True)
    path = save("lfl_encoder_2gb", {"store": args.store, "n": store.n_samples, "p": store.n_features, "repeats": args.repeats,
                                    "read": reads, "fits": results, "chunk_task_ms_one_thread": chunks,
                                    "targets": {"warm_ratio_max": 3.0, "cold_ratio_max": 1.5}})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
