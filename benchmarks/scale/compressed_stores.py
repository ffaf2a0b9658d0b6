"""Fits on compressed feature stores: the decode-bound read pass, and how far each fit stays from it.

The same 2 GB of float32 data (n = 2000, p = 250 000) is written uncompressed, with zstd (level 3)
and with blosc-lz4 + bitshuffle (``wideml --compressor none|zstd|lz4``). The data look like masked
imaging data: 60% of the features are zero (outside a mask) and the rest are rounded to 1/64, so
they compress as real stores do. For each store, measured in the same run (medians of --repeats):

- one read pass: every chunk file read and decoded into a reused per-thread buffer (numcodecs for
  the compressed stores), on 1 and 2 threads; the fastest is the yardstick;
- the same read through zarr's own API;
- LFL (d = 50, one pass) and the default LOL (d = 50) fits, and their ratio to the read pass.

Usage: python benchmarks/scale/compressed_stores.py [--workdir DIR] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import chunk_files, median_time, save, zarr_read

CODECS = ("none", "zstd", "lz4")


def make_store(path: Path, compressor: str, n: int, p: int, chunk: int = 4096) -> None:
    import dask.array as da

    import wideml

    X = da.random.default_rng(0).standard_normal((n, p), chunks=(n, chunk), dtype=np.float32)
    mask = (np.random.default_rng(1).random(p) < 0.4).astype(np.float32)
    X = (da.round(X * 64) / 64) * da.from_array(mask, chunks=chunk)
    y = np.random.default_rng(0).integers(0, 2, n)
    wideml.write_store(path, X, y, feature_chunk=chunk, compressor=compressor, overwrite=True)


def decode_read(path: Path, threads: int) -> None:
    """Every chunk file of X read and decoded into a reused per-thread buffer (the floor of a read pass)."""
    import numcodecs

    meta = json.loads((path / "X" / "zarr.json").read_text())
    shape, dtype = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"]), np.dtype(meta["data_type"])
    codecs = meta["codecs"]
    decoder = None
    if len(codecs) > 1:
        decoder = {"zstd": numcodecs.Zstd, "blosc": numcodecs.Blosc, "gzip": numcodecs.GZip}[codecs[1]["name"]]()
    local = threading.local()

    def read(f: Path) -> None:
        buf = getattr(local, "buf", None)
        if buf is None:
            buf = local.buf = np.empty(shape, dtype)
        if decoder is None:
            with open(f, "rb", buffering=0) as fh:
                fh.readinto(memoryview(buf).cast("B"))
        else:
            decoder.decode(f.read_bytes(), out=buf)

    files = chunk_files(path)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(read, files))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--p", type=int, default=250_000)
    args = ap.parse_args()

    import wideml

    work = Path(args.workdir or tempfile.mkdtemp(prefix="wideml-compressed-"))
    work.mkdir(parents=True, exist_ok=True)
    res: dict = {"n": args.n, "p": args.p, "repeats": args.repeats, "stores": {}}
    try:
        for codec in CODECS:
            path = work / f"{codec}.zarr"
            t0 = time.perf_counter()
            make_store(path, codec, args.n, args.p)
            size = sum(f.stat().st_size for f in chunk_files(path))
            out = {"bytes_on_disk": size, "write_s": time.perf_counter() - t0}
            out["read_1thread"], _ = median_time(lambda: decode_read(path, 1), args.repeats)
            out["read_2threads"], _ = median_time(lambda: decode_read(path, 2), args.repeats)
            out["read_pass"] = min(out["read_1thread"], out["read_2threads"])
            out["zarr_read"], _ = median_time(lambda: zarr_read(path, None), args.repeats)
            store = wideml.open_store(path)
            out["lfl_fit"], out["lfl_fit_runs"] = median_time(lambda: wideml.LFL(50).fit(store), args.repeats)
            out["lol_fit"], out["lol_fit_runs"] = median_time(lambda: wideml.LOL(50).fit(store), args.repeats)
            out["ratios"] = {"lfl_over_read_pass": out["lfl_fit"] / out["read_pass"],
                             "lol_over_read_pass": out["lol_fit"] / out["read_pass"],
                             "zarr_read_over_read_pass": out["zarr_read"] / out["read_pass"]}
            res["stores"][codec] = out
            print(f"{codec:5s} {size / 1e9:.2f} GB on disk: read pass {out['read_pass']:.2f} s (zarr {out['zarr_read']:.2f} s), "
                  f"LFL {out['lfl_fit']:.2f} s ({out['ratios']['lfl_over_read_pass']:.2f}x), "
                  f"LOL {out['lol_fit']:.2f} s ({out['ratios']['lol_over_read_pass']:.2f}x)", flush=True)
            shutil.rmtree(path, ignore_errors=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print("saved", save("compressed_stores", res))


if __name__ == "__main__":
    main()
