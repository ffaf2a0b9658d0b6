"""What crc32c checksums cost a read pass: the same store written with and without the zarr v3 ``crc32c`` codec.

A float32 store (default n = 2000, p = 250 000: 2 GB; feature chunks of about 32 MiB, uncompressed)
is written twice, once plain and once with a crc32c trailer on every chunk (``checksum=True``).
Measured in the same run, interleaved (plain, checksummed, plain, ...), medians of --repeats:

- a wideml read pass: every chunk of X read by the task that uses it into its reused buffer, as
  the passes of a fit read it (``feature_stripes(direct=True)`` + ``materialise``), with the
  checksum verified when the store has one; from the page cache (warm) and with the store
  evicted from the page cache before every run (cold: the disk's rate);
- an LFL fit (d = 50, one pass over X): the cheapest real fit;
- the raw floor: every chunk file read into a reused buffer, nothing verified.

The ratio checksummed / plain of each is printed and saved in benchmarks/results/checksum_cost.json.
The config default of ``wideml.checksum`` follows it: on when the checksum costs under 5% of a
read pass, else off.

Usage: python benchmarks/micro/checksum_cost.py [--size-gb 2] [--quick] [--repeats 3] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import chunk_files, evict_from_page_cache, raw_read, save


def make_store(path: Path, n: int, p: int, chunk: int, checksum: bool) -> float:
    import dask.array as da

    import wideml

    X = da.random.default_rng(0).standard_normal((n, p), chunks=(n, chunk), dtype=np.float32)
    y = np.random.default_rng(0).integers(0, 2, n)
    t0 = time.perf_counter()
    wideml.write_store(path, X, y, feature_chunk=chunk, compressor="none", checksum=checksum, overwrite=True)
    return time.perf_counter() - t0


def _first_value(ref) -> float:
    from wideml.passes.blocks import materialise

    block, _ = materialise(ref)
    return float(block[0, 0])


def wideml_read_pass(store) -> float:
    """Every chunk of X read (and, with crc32c, verified) inside its own task, as a fit's pass reads it."""
    import dask

    from wideml.passes.blocks import feature_stripes
    from wideml.runtime.config import thread_count

    refs, _ = feature_stripes(store.X, direct=True)
    tasks = [dask.delayed(_first_value, pure=False)(r) for r in refs]
    return sum(dask.compute(*tasks, scheduler="threads", num_workers=thread_count()))


def lfl_fit(store) -> None:
    import wideml

    wideml.LFL(50).fit(store)


def interleaved(fns: dict, repeats: int, evict: dict | None = None) -> dict:
    """Median wall time of each ``fns[name]()``, run in turn ``repeats`` times (evicting ``evict[name]`` first)."""
    runs: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if evict is not None:
                evict_from_page_cache(evict[name])
            t0 = time.perf_counter()
            fn()
            runs[name].append(time.perf_counter() - t0)
    return {name: {"median_s": statistics.median(t), "runs_s": t} for name, t in runs.items()}


def crc_throughput(nbytes: int) -> float:
    """GB/s of google-crc32c on one thread over a buffer of ``nbytes``."""
    import google_crc32c

    buf = np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8)
    google_crc32c.value(buf)
    t0 = time.perf_counter()
    for _ in range(5):
        google_crc32c.value(buf)
    return 5 * nbytes / (time.perf_counter() - t0) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-gb", type=float, default=2.0, help="size of X in GB (default 2)")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--chunk-mib", type=float, default=32.0, help="size of a full-height feature chunk (default 32 MiB)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a 0.1 GB store and 3 repeats, to check the script runs")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    if args.quick:
        args.size_gb, args.repeats = 0.1, 3

    import wideml

    n = args.n
    p = int(args.size_gb * 1e9 / (4 * n))
    chunk = max(1, int(args.chunk_mib * 2**20 / (4 * n)))
    work = Path(args.workdir or tempfile.mkdtemp(prefix="wideml-checksum-"))
    work.mkdir(parents=True, exist_ok=True)
    paths = {"plain": work / "plain.zarr", "crc32c": work / "crc32c.zarr"}
    res: dict = {"n": n, "p": p, "feature_chunk": chunk, "bytes": 4 * n * p, "repeats": args.repeats, "quick": args.quick}
    try:
        res["write_s"] = {name: make_store(path, n, p, chunk, name == "crc32c") for name, path in paths.items()}
        stores = {name: wideml.open_store(path) for name, path in paths.items()}
        assert stores["crc32c"].checksum == "crc32c" and stores["plain"].checksum is None
        res["bytes_on_disk"] = {name: sum(f.stat().st_size for f in chunk_files(path)) for name, path in paths.items()}
        res["crc32c_gb_per_s_one_thread"] = crc_throughput(4 * n * chunk)
        for name in paths:  # warm both into the page cache once
            wideml_read_pass(stores[name])
        res["warm_read_pass"] = interleaved({k: (lambda s=s: wideml_read_pass(s)) for k, s in stores.items()}, args.repeats)
        res["warm_raw_floor"] = interleaved({k: (lambda p=p: raw_read(p, 2)) for k, p in paths.items()}, args.repeats)
        res["warm_lfl_fit"] = interleaved({k: (lambda s=s: lfl_fit(s)) for k, s in stores.items()}, args.repeats)
        res["cold_read_pass"] = interleaved({k: (lambda s=s: wideml_read_pass(s)) for k, s in stores.items()},
                                            args.repeats, evict=paths)
        res["cold_lfl_fit"] = interleaved({k: (lambda s=s: lfl_fit(s)) for k, s in stores.items()}, args.repeats, evict=paths)
        res["ratios_checksummed_over_plain"] = {
            key: res[key]["crc32c"]["median_s"] / res[key]["plain"]["median_s"]
            for key in ("warm_read_pass", "warm_raw_floor", "warm_lfl_fit", "cold_read_pass", "cold_lfl_fit")
        }
        for key, ratio in res["ratios_checksummed_over_plain"].items():
            plain, crc = res[key]["plain"]["median_s"], res[key]["crc32c"]["median_s"]
            print(f"{key:16s} plain {plain:7.3f} s   crc32c {crc:7.3f} s   ratio {ratio:.3f}", flush=True)
        worst = max(res["ratios_checksummed_over_plain"][k] for k in ("warm_read_pass", "cold_read_pass"))
        res["default_checksum"] = bool(worst < 1.05)
        print(f"crc32c at {res['crc32c_gb_per_s_one_thread']:.1f} GB/s on one thread; checksums cost "
              f"{100 * (worst - 1):.1f}% of a read pass at worst -> default checksum: {str(res['default_checksum']).lower()}")
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print("saved", save("checksum_cost" + ("_quick" if args.quick else ""), res))


if __name__ == "__main__":
    main()
