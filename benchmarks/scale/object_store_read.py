"""Reading a feature store from an S3-compatible server (moto, on 127.0.0.1) against its local copy (issue 27).

A ~200 MB float32 store (default n = 200, p = 250 000, uncompressed, full-height
chunks of 8 192 features) is written locally and uploaded to a moto S3 server
started in a subprocess on 127.0.0.1. Measured, median of ``--repeats`` runs
taken round-robin (local first, warm page cache):

- one read pass over X (``X.sum()`` through the store's chunk reader, the threaded
  scheduler), as MB/s;
- ``wideml fit lol STORE -o MODEL`` (in-process CLI: open, fit, save), the model written locally;
- the same fit of the S3 store with the model written to S3 (``-o s3://bench/model``: written locally, uploaded
  under a temporary prefix, verified, copied into place, completion marker last; ``fit_lol_cli["s3fs->s3"]``).

Backends: s3fs (the chunk objects fetched through zarr's FsspecStore, ``remote-reader: fsspec``);
obstore (the same URL, the chunk objects fetched by obstore, ``remote-reader: obstore``) when
installed, else reported as not installed. moto keeps objects in Python memory and serves
them over HTTP from one process, so the S3 figures are a floor of what
wideml's remote reads cost, not of what a real object store delivers.

Usage: nice python benchmarks/scale/object_store_read.py [--workdir /tmp/wideml-s3-bench] [--n 200] [--p 250000] [--repeats 3]
Writes benchmarks/results/object_store_read.json.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/wideml-s3-bench")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--p", type=int, default=250_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret", AWS_DEFAULT_REGION="us-east-1")

    import dask.config
    import s3fs

    import wideml
    from wideml.cli.main import main as cli

    folder = Path(args.workdir)
    folder.mkdir(parents=True, exist_ok=True)
    local = folder / "store.zarr"
    if not (local / "X" / "zarr.json").exists() or wideml.open_store(local).X.shape != (args.n, args.p):
        rng = np.random.default_rng(0)
        X = rng.standard_normal((args.n, args.p), dtype=np.float32)
        wideml.write_store(local, X, np.arange(args.n) % 3, feature_chunk=8192, overwrite=True)
        del X
    nbytes = args.n * args.p * 4
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = start_moto(port)
    try:
        fs = s3fs.S3FileSystem(endpoint_url=endpoint)
        fs.mkdir("bench")
        t0 = time.perf_counter()
        fs.put(str(local), "bench/store.zarr", recursive=True)
        upload = time.perf_counter() - t0
        dask.config.set({"wideml.storage-options": {"endpoint_url": endpoint}})
        sources = {"local": str(local), "s3fs": "s3://bench/store.zarr"}
        backends = {"s3fs": "fsspec"}  # the config key remote-reader for each URL source
        try:
            import obstore  # noqa: F401

            sources["obstore"] = "s3://bench/store.zarr"
            backends["obstore"] = "obstore"
            obstore_note = "installed: the same URL with remote-reader: obstore (chunk objects fetched by obstore)"
        except ImportError:
            obstore_note = "not installed (pip install 'wideml[s3]'): not measured"
        reads = {k: [] for k in sources}
        fits = {k: [] for k in sources}
        fits["s3fs->s3"] = []

        def use(name):
            os.environ["DASK_WIDEML__REMOTE_READER"] = backends.get(name, "auto")  # also for the CLI, which reads the config afresh
            dask.config.set({"wideml.remote-reader": backends.get(name, "auto")})

        for name, src in sources.items():  # warm-up (page cache, connections, imports)
            use(name)
            wideml.open_store(src).X.sum().compute()
        for _ in range(args.repeats):
            for name, src in sources.items():
                use(name)
                store = wideml.open_store(src)
                assert name not in backends or f"through {backends[name]}" in store.codec, store.codec
                t0 = time.perf_counter()
                store.X.sum().compute()
                reads[name].append(time.perf_counter() - t0)
                if name in fits:
                    out = folder / f"{name}.model"
                    t0 = time.perf_counter()
                    code = cli(["fit", "lol", src, "-o", str(out), "--overwrite", "--no-progress"])
                    fits[name].append(time.perf_counter() - t0)
                    assert code == 0
                if name == "s3fs":
                    t0 = time.perf_counter()
                    code = cli(["fit", "lol", src, "-o", "s3://bench/s3fs.model", "--overwrite", "--no-progress"])
                    fits["s3fs->s3"].append(time.perf_counter() - t0)
                    assert code == 0
    finally:
        server.terminate()
        server.wait()
    result = {
        "store": {"n": args.n, "p": args.p, "dtype": "float32", "bytes": nbytes, "feature_chunk": 8192, "codec": "none"},
        "server": "moto (python -m moto.server) on 127.0.0.1, objects in memory",
        "upload_s": upload,
        "obstore": obstore_note,
        "read_pass": {k: {"median_s": statistics.median(v), "runs_s": v, "MB_per_s": nbytes / 1e6 / statistics.median(v)}
                      for k, v in reads.items()},
        "fit_lol_cli": {k: {"median_s": statistics.median(v), "runs_s": v} for k, v in fits.items()},
    }
    result["ratios_to_local"] = {k: {"read": result["read_pass"][k]["median_s"] / result["read_pass"]["local"]["median_s"],
                                     **({"fit": result["fit_lol_cli"][k]["median_s"] / result["fit_lol_cli"]["local"]["median_s"]}
                                        if k in fits else {})}
                                 for k in sources}
    result["ratios_to_local"]["s3fs->s3"] = {"fit": result["fit_lol_cli"]["s3fs->s3"]["median_s"]
                                                    / result["fit_lol_cli"]["local"]["median_s"]}
    path = save("object_store_read", result)
    print(path)
    for k in [*sources, "s3fs->s3"]:
        fit = result["fit_lol_cli"].get(k, {}).get("median_s")
        read = result["read_pass"].get(k, {}).get("MB_per_s")
        print(f"{k:8s} read {read if read is None else round(read, 1)} MB/s   fit {fit if fit is None else round(fit, 2)} s")


if __name__ == "__main__":
    main()
