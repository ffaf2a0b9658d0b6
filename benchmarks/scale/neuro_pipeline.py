"""Neuroimaging pipeline benchmark: NIfTI folder -> masked ingest -> LOL CV -> fit -> maps, time and peak RSS per step.

Input: a folder written by ``benchmarks/scale/neuro_sim.py`` (scans/, participants.tsv,
brain_mask.nii.gz, truth_regions.nii.gz, truth.json). Each step is one ``wideml``
command run as a subprocess under ``/usr/bin/time -v``; its peak memory is the
"Maximum resident set size" of that process (the largest single process when the
step starts children). The goal of issue 14: every step under 1 GB whatever n.

Recovery of the truth: for every NIfTI map ``wideml maps`` writes, the fraction of its
top-1000 voxels by |value| that lie inside the true effect regions (chance: regions /
mask voxels, ~0.3 % in the MNI 1 mm mask). Class mean/median maps are left out: their
largest values are the baseline intensity, not the effect.

Usage::

    .venv/bin/python benchmarks/scale/neuro_pipeline.py /tmp/neuro400 --work /tmp/neuro400_run
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import machine, save  # noqa: E402

WIDEML = [sys.executable, "-m", "wideml.cli.main"]


def run_step(name: str, args: list[str], log: Path) -> dict:
    """Run one CLI step under /usr/bin/time -v; wall time, peak RSS (bytes) and exit status."""
    cmd = ["/usr/bin/time", "-v"] + WIDEML + args
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    peak = int(found.group(1)) * 1024 if found else None
    step = {"step": name, "command": "wideml " + " ".join(args), "seconds": round(wall, 2),
            "peak_rss_bytes": peak, "peak_rss_mib": round(peak / 2**20, 1) if peak else None, "exit": proc.returncode}
    print(f"{name:<8} {wall:8.1f} s  peak RSS {step['peak_rss_mib']} MiB  exit {proc.returncode}", flush=True)
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    return step


def top_fraction_in_regions(map_path: Path, regions: np.ndarray, mask: np.ndarray, top: int = 1000) -> float:
    """Fraction of the ``top`` in-mask voxels of largest |value| that are inside ``regions``."""
    import nibabel as nib

    data = np.asarray(nib.load(str(map_path)).dataobj, dtype=np.float64)
    if data.ndim > 3:
        data = data.reshape(data.shape[:3] + (-1,))[..., 0]
    values = np.abs(data[mask])
    order = np.argpartition(values, -top)[-top:]
    return float(regions[mask][order].mean())


def main(argv=None) -> dict:
    import nibabel as nib

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="folder written by neuro_sim.py")
    ap.add_argument("--work", required=True, help="folder for the store, model, maps and logs (replaced)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--max-dim", type=int, default=10)
    ap.add_argument("--n-components", type=int, default=2)
    ap.add_argument("--memory-limit", default="1GiB",
                    help="wideml's memory budget for every step (default 1GiB: the issue's goal is every step under 1 GB)")
    ap.add_argument("--name", default=None, help="result name (default neuro_pipeline_n<N>_<res>mm)")
    args = ap.parse_args(argv)

    data, work = Path(args.data), Path(args.work)
    truth = json.loads((data / "truth.json").read_text())
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    store, model, maps = work / "store.zarr", work / "model", work / "maps"
    budget = ["--memory-limit", args.memory_limit] if args.memory_limit else []
    steps = [
        run_step("ingest", ["ingest", *budget, str(data / "scans"), "--mask", str(data / "brain_mask.nii.gz"),
                            "--labels", str(data / "participants.tsv"), "--label-column", "group",
                            "-o", str(store), "--no-progress"], work / "ingest.log"),
        run_step("cv", ["cv", *budget, str(store), "--methods", "lol,pca", "--max-dim", str(args.max_dim), "--folds", str(args.folds),
                        "-o", str(work / "cv.json"), "--plot", str(work / "cv.png"), "--no-progress"], work / "cv.log"),
        run_step("fit", ["fit", "lol", *budget, str(store), "--n-components", str(args.n_components), "-o", str(model), "--no-progress"],
                 work / "fit.log"),
        run_step("maps", ["maps", *budget, str(model), "-o", str(maps), "--no-progress"], work / "maps.log"),
    ]
    result: dict = {"machine": machine(), "data": truth, "memory_limit": args.memory_limit, "steps": steps,
                    "max_peak_rss_mib": max((s["peak_rss_mib"] or 0) for s in steps),
                    "store_bytes": sum(f.stat().st_size for f in store.rglob("*") if f.is_file()) if store.exists() else None}
    if (work / "cv.json").exists():
        cv = json.loads((work / "cv.json").read_text())["results"]
        result["cv"] = {m: {"best_dim": r["best_dim"], "best_error": r["best_error"],
                            "error_at_d1": r["errors"][0], "errors": r["errors"]} for m, r in cv.items()}
    if maps.exists():
        mask = np.asarray(nib.load(str(data / "brain_mask.nii.gz")).dataobj) > 0
        regions = np.asarray(nib.load(str(data / "truth_regions.nii.gz")).dataobj) > 0
        result["chance_fraction"] = float(regions.sum() / mask.sum())
        result["top1000_in_regions"] = {p.name: round(top_fraction_in_regions(p, regions, mask), 4)
                                        for p in sorted(maps.glob("*.nii*")) if not p.name.startswith("class_")}
        result["maps_files"] = sorted(p.name for p in maps.iterdir())
    name = args.name or f"neuro_pipeline_n{truth['n']}_{truth['resolution_mm']}mm"
    path = save(name, result)
    print(json.dumps({k: result[k] for k in result if k not in ("machine", "data")}, indent=2))
    print(f"saved {path}")
    return result


if __name__ == "__main__":
    main()
