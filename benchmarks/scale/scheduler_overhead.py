"""What each scheduler costs on one box, and how its results compare (issue 27, docs/schedulers.md).

``wideml fit lol`` on a ~1 GB store (``wideml simulate trunk``, n = 500, p = 500 000 float32,
uncompressed) is timed end to end (the command as a user runs it: start-up, cluster start, both
passes, model written, cluster stopped) on

- ``threads`` (the default),
- ``local:2`` (a LocalCluster of 2 single-threaded worker processes, started by the command),
- ``tcp://`` (a running ``dask scheduler`` with ``dask worker --nworkers 2 --nthreads 1``, started
  once by this script and reused by every fit),
- ``slurm`` (2 batch jobs of 1 core on a private single-node SLURM, tests/hpc/slurm_node.py; needs
  root and scripts/setup_slurm.sh),

median of ``--repeats`` fits taken round-robin over the schedulers (warm: the store in the page
cache after one untimed threaded fit). The loadings of every fit are kept: runs of one kind are
compared bit for bit, and each kind with the threaded fit in units in the last place (ulp).

Usage: nice python benchmarks/scale/scheduler_overhead.py [--workdir /tmp/wideml-sched] [--n 500] [--p 500000] [--repeats 3]
Writes benchmarks/results/scheduler_overhead.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # benchmarks/_common.py
sys.path.insert(0, str(HERE.parents[2] / "tests" / "hpc"))  # slurm_node.py
from _common import save  # noqa: E402

PYTHON = sys.executable
WIDEML = [PYTHON, "-m", "wideml.cli.main"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_store(folder: Path, n: int, p: int) -> Path:
    store = folder / "trunk.zarr"
    if not store.exists():
        subprocess.run([*WIDEML, "simulate", "trunk", "--n-samples", str(n), "--n-features", str(p), "-o", str(store),
                        "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    return store


def start_tcp_cluster(folder: Path) -> tuple[str, list[subprocess.Popen]]:
    """A ``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1`` on 127.0.0.1, in ``folder``."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    bin_dir = Path(PYTHON).parent
    logs = open(folder / "dask.log", "w")
    scheduler = subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], cwd=folder, stdout=logs, stderr=logs)
    time.sleep(2)
    workers = subprocess.Popen([str(bin_dir / "dask"), "worker", address, "--nworkers", "2", "--nthreads", "1",
                                "--no-dashboard", "--local-directory", str(folder / "workers")],
                               cwd=folder, stdout=logs, stderr=logs)
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(2, timeout=60)
    return address, [workers, scheduler]


def fit(store: Path, out: Path, scheduler: str, config: Path | None, env: dict) -> float:
    cmd = [*WIDEML, *(["--config", str(config)] if config else []), "fit", "lol", str(store), "-o", str(out),
           "--overwrite", "--no-progress", "--scheduler", scheduler]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{scheduler}: {proc.stderr}")
    return elapsed


def loadings(model: Path) -> np.ndarray:
    from wideml import load_model

    est = load_model(model)
    return np.asarray(getattr(est, "embedding_", est).components_)


def max_ulp(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| in units in the last place of the loadings' own dtype, at the larger magnitude."""
    scale = np.spacing(np.maximum(np.abs(a), np.abs(b))).astype(np.float64)
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)) / scale))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/wideml-sched")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--p", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-slurm", action="store_true")
    args = parser.parse_args()
    folder = Path(args.workdir)
    folder.mkdir(parents=True, exist_ok=True)
    store = make_store(folder, args.n, args.p)
    size = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    env = dict(os.environ)
    kinds: dict[str, tuple[str, Path | None]] = {"threads": ("threads", None), "local:2": ("local:2", None)}
    procs: list[subprocess.Popen] = []
    node = None
    try:
        address, started = start_tcp_cluster(folder)
        procs += started
        kinds["tcp://"] = (address, None)
        if not args.no_slurm:
            import slurm_node

            node = slurm_node.start()
            env["SLURM_CONF"] = node.conf
            config = folder / "slurm.yaml"
            config.write_text("wideml:\n  cluster:\n    slurm:\n      jobs: 2\n      cores: 1\n      memory: 2GiB\n"
                              "      wait-timeout: 120\n")
            kinds["slurm"] = ("slurm", config)
        fit(store, folder / "warm.model", "threads", None, env)  # the store into the page cache
        times: dict[str, list[float]] = {k: [] for k in kinds}
        results: dict[str, list[np.ndarray]] = {k: [] for k in kinds}
        for rep in range(args.repeats):
            for kind, (spec, config) in kinds.items():
                out = folder / f"{kind.replace(':', '').replace('/', '')}-{rep}.model"
                times[kind].append(fit(store, out, spec, config, env))
                results[kind].append(loadings(out))
                shutil.rmtree(out, ignore_errors=True)
                print(f"{kind:8s} run {rep}: {times[kind][-1]:.2f} s", flush=True)
        reference = results["threads"][0]
        table = {}
        for kind in kinds:
            runs = results[kind]
            table[kind] = {
                "loadings_dtype": str(runs[0].dtype),
                "scheduler": kinds[kind][0] if kind != "tcp://" else "tcp://127.0.0.1:PORT (2 workers x 1 thread)",
                "median_s": statistics.median(times[kind]),
                "times_s": times[kind],
                "bit_identical_within_kind": all(np.array_equal(runs[0], r) for r in runs[1:]),
                "max_ulp_vs_threads": max(max_ulp(reference, r) for r in runs),
                "max_rel_diff_vs_threads": max(float(np.max(np.abs(r.astype(float) - reference)) / np.max(np.abs(reference)))
                                               for r in runs),
            }
            table[kind]["overhead_vs_threads_s"] = table[kind]["median_s"] - statistics.median(times["threads"])
        path = save("scheduler_overhead", {
            "store": {"n": args.n, "p": args.p, "dtype": "float32", "bytes": size, "setting": "trunk"},
            "command": "wideml fit lol STORE -o MODEL --scheduler S (end to end, warm)",
            "repeats": args.repeats,
            "results": table,
        })
        print(f"wrote {path}")
        for kind, row in table.items():
            print(f"{kind:8s} {row['median_s']:7.2f} s  +{row['overhead_vs_threads_s']:6.2f} s  identical={row['bit_identical_within_kind']}"
                  f"  max ulp vs threads={row['max_ulp_vs_threads']:.1f}")
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if node is not None:
            slurm_node.stop(node)


if __name__ == "__main__":
    main()
