"""`wideml maps` in bounded memory (issue 24, part 6): time and peak RSS against p, before and after.

For each p (default 10^6, 10^7, 10^8) an int8 store of n = 100 samples x p
features (two classes, 20 features shifted) is written in feature blocks,
`wideml fit lol` makes a LOL + LDA model (2 components, robust: 8 maps), and
`wideml maps` runs in a fresh process, whose peak RSS (its ru_maxrss, read
by /usr/bin/time) and wall time are recorded:

- "after": this working tree;
- "before": the same command on a copy of the package whose ``wideml/maps``
  is the one of git revision ``--before`` (default ``ff1dc6b``, the last one
  before block-wise maps), run from a temporary folder on PYTHONPATH;

both with ``--png none`` (the arrays and tables) and, for "after", with
``--png matplotlib`` (the bounded panels). The "after" and "before" outputs
are compared file by file (sha256 of every ``.npy``, ``.tsv`` and
``maps.json`` minus its ``model_path``): they must be identical. Stores,
models and maps are deleted after each p.

Usage: python benchmarks/scale/maps_memory.py [--sizes 1e6 1e7 1e8] [--workdir DIR] [--before REV] [--skip-before-above P]
Results: benchmarks/results/maps_memory.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save

ROOT = Path(__file__).resolve().parents[2]
WIDEML = [sys.executable, "-m", "wideml.cli.main"]
N = 100
CHUNK = 1 << 18
EFFECT = 20


def timed(cmd: list[str], env: dict | None = None) -> dict:
    """Run ``cmd`` under ``/usr/bin/time``; its wall seconds and peak RSS.

    The peak is the command's own ``ru_maxrss`` as GNU time reads it with wait4:
    time is a small process, so the command does not inherit this harness's
    high-water mark (a child's ru_maxrss starts from its parent's RSS at fork).
    """
    with tempfile.NamedTemporaryFile("w+", suffix=".time") as report, tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M %e", "-o", report.name, *[str(c) for c in cmd]], env=env,
                              stdout=out, stderr=err, cwd=tempfile.gettempdir())  # not the repository: `-m` puts cwd first
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        kib, _ = open(report.name).read().split()[-2:]
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{stderr[-3000:]}")
    return {"seconds": round(wall, 2), "peak_rss_mb": round(int(kib) / 1024, 1), "stdout_tail": stdout.strip().splitlines()[-1:]}


def write_store(path: Path, p: int, seed: int = 0) -> float:
    """An int8 store of N x p, two classes, the first EFFECT features shifted in class 1; returns seconds."""
    sys.path.insert(0, str(ROOT))
    from wideml.storage.writer import create_store

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], N // 2)
    with create_store(path, n_samples=N, n_features=p, y=y, dtype="int8", feature_chunk=CHUNK, compressor="none") as w:
        for lo in range(0, p, 4 * CHUNK):
            hi = min(p, lo + 4 * CHUNK)
            block = rng.integers(-3, 4, size=(N, hi - lo), dtype=np.int8)
            if lo == 0:
                block[y == 1, :EFFECT] += 2
            w.write(block, lo)
    return round(time.perf_counter() - t0, 1)


def old_package(rev: str, into: Path) -> Path:
    """A copy of the working tree's ``wideml`` package with ``wideml/maps`` as of ``rev``; returns the folder to put on PYTHONPATH."""
    dest = into / "wideml"
    shutil.copytree(ROOT / "wideml", dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(dest / "maps")
    (dest / "maps").mkdir()
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", rev, "wideml/maps/"], check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{name}"], check=True, capture_output=True).stdout
        (into / name).write_bytes(text)
    return into


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file but PNGs (maps.json without its model_path, which names the model folder)."""
    out = {}
    for f in sorted(folder.iterdir()):
        if f.suffix == ".png":
            continue
        if f.name == "maps.json":
            doc = json.loads(f.read_text())
            doc.pop("model_path", None)
            out[f.name] = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
            continue
        h = hashlib.sha256()
        with open(f, "rb") as fh:
            for piece in iter(lambda: fh.read(1 << 24), b""):
                h.update(piece)
        out[f.name] = h.hexdigest()
    return out


def one_size(p: int, work: Path, before_pkg: Path | None) -> dict:
    store, model = work / "s.zarr", work / "m.zarr"
    row: dict = {"p": p, "n": N, "dtype": "int8", "feature_chunk": CHUNK}
    row["write_store"] = timed([sys.executable, __file__, "--write-store", store, "--p", str(p)])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    row["fit"] = timed(WIDEML + ["fit", "lol", store, "-o", model, "--n-components", "2", "--no-progress", "--no-resume"], env)
    shutil.rmtree(store)
    row["maps_after_png_none"] = timed(WIDEML + ["maps", model, "-o", work / "after", "--png", "none", "--no-progress"], env)
    after = digests(work / "after")
    row["n_maps"] = sum(1 for name in after if name.endswith(".npy"))
    row["maps_output_gb"] = round(sum(f.stat().st_size for f in (work / "after").iterdir()) / 1e9, 2)
    if before_pkg is not None:
        old_env = {**os.environ, "PYTHONPATH": str(before_pkg)}
        row["maps_before_png_none"] = timed(WIDEML + ["maps", model, "-o", work / "before", "--png", "none", "--no-progress"], old_env)
        row["identical_outputs"] = digests(work / "before") == after
        shutil.rmtree(work / "before")
    shutil.rmtree(work / "after")
    row["maps_after_png_matplotlib"] = timed(WIDEML + ["maps", model, "-o", work / "after", "--png", "matplotlib", "--no-progress"], env)
    shutil.rmtree(work / "after")
    shutil.rmtree(model)
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7, 1e8])
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--before", default="ff1dc6b")
    ap.add_argument("--skip-before-above", type=float, default=float("inf"), help="run the old code only up to this p")
    ap.add_argument("--write-store", default=None, help=argparse.SUPPRESS)  # internal: write one store and exit
    ap.add_argument("--p", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_store:
        write_store(Path(args.write_store), args.p)
        return
    base = Path(tempfile.mkdtemp(prefix="maps-memory-", dir=args.workdir))
    try:
        before_pkg = old_package(args.before, base / "before_pkg")
        rows = []
        for p in (int(s) for s in args.sizes):
            work = base / f"p{p}"
            work.mkdir()
            rows.append(one_size(p, work, before_pkg if p <= args.skip_before_above else None))
            shutil.rmtree(work)
        save("maps_memory", {"description": __doc__.split("\n\n")[0], "before_revision": args.before,
                             "issue_before_p1e8": {"seconds": 49, "peak_rss_gb": 4.2, "note": "as reported in issue 24"},
                             "rows": rows})
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
