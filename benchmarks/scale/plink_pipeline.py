"""A genotype case/control pipeline end to end: PLINK fileset -> `wideml ingest` -> `wideml cv` -> `wideml fit` -> `wideml maps`.

A synthetic PLINK 1 fileset of 2 000 samples (1 000 controls, 1 000 cases)
x 1 000 000 variants on chromosomes 1..22 is written in blocks with
``bed_reader.to_bed`` (each block's variant-major bytes appended to one
``.bed``; ``.bim`` and ``.fam`` written beside it). Allele frequencies are
uniform on [0.05, 0.5]; 50 planted causal variants have their frequency raised
by ``--shift`` (default 0.12) in cases. Each step runs in a fresh process and
its wall time and peak RSS (its ru_maxrss, read by /usr/bin/time) are recorded:

1. ``wideml ingest x.bed -o s.zarr`` (labels: the .fam phenotype);
2. ``wideml cv s.zarr --methods lol`` (5 folds, dimensions up to 10);
3. ``wideml fit lol s.zarr --n-components D`` (D: the cv's best dimension);
4. ``wideml maps m.zarr --top 100 --png matplotlib``.

Reported: the fraction of planted variants among the top 100 of the
``mean_difference`` map (case minus control allele-1 count; |weight| ranks),
and for comparison of ``direction_1`` and ``discriminant_weights``.

Usage: python benchmarks/scale/plink_pipeline.py [--samples 2000] [--variants 1000000] [--causal 50] [--shift 0.12] [--workdir DIR] [--keep]
Results: benchmarks/results/plink_pipeline.json
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save
from maps_memory import ROOT, WIDEML, timed

BLOCK = 20_000  # variants per to_bed block


def write_plink(base: Path, n: int, p: int, causal: int, shift: float, seed: int = 0) -> dict:
    """Write ``base``.bed/.bim/.fam; returns the planted variant ids and seconds taken."""
    import bed_reader

    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    y = np.repeat([1, 2], [n // 2, n - n // 2])  # PLINK phenotype: 1 control, 2 case
    planted = np.sort(rng.choice(p, size=causal, replace=False))
    chrom = np.repeat(np.arange(1, 23), np.diff(np.linspace(0, p, 23).round().astype(int)))
    pos = np.zeros(p, dtype=np.int64)
    for c in range(1, 23):
        where = np.flatnonzero(chrom == c)
        pos[where] = np.cumsum(rng.integers(1, 2 * max(1, (250_000_000 // c) // max(1, where.size)), size=where.size))
    with open(f"{base}.fam", "w") as fam:
        for i in range(n):
            fam.write(f"F{i} I{i} 0 0 {1 + i % 2} {y[i]}\n")
    alleles = np.array(list("ACGT"))
    a1 = rng.integers(0, 4, size=p)
    a2 = (a1 + rng.integers(1, 4, size=p)) % 4
    with open(f"{base}.bim", "w") as bim:
        for j in range(p):
            bim.write(f"{chrom[j]}\trs{j}\t0\t{pos[j]}\t{alleles[a1[j]]}\t{alleles[a2[j]]}\n")
    tmp = Path(f"{base}.block.bed")
    with open(f"{base}.bed", "wb") as bed:
        bed.write(b"\x6c\x1b\x01")
        for lo in range(0, p, BLOCK):
            hi = min(p, lo + BLOCK)
            freq = rng.uniform(0.05, 0.5, size=hi - lo)
            freq_case = freq.copy()
            hit = planted[(planted >= lo) & (planted < hi)] - lo
            freq_case[hit] = np.minimum(0.95, freq_case[hit] + shift)
            block = np.empty((n, hi - lo), dtype=np.int8)
            block[y == 1] = rng.binomial(2, freq, size=((y == 1).sum(), hi - lo))
            block[y == 2] = rng.binomial(2, freq_case, size=((y == 2).sum(), hi - lo))
            bed_reader.to_bed(tmp, block, properties={"iid": [f"I{i}" for i in range(n)]},
                              fam_filepath=f"{base}.block.fam", bim_filepath=f"{base}.block.bim")
            with open(tmp, "rb") as part:
                part.seek(3)
                shutil.copyfileobj(part, bed, 1 << 24)
    for suffix in (".block.bed", ".block.fam", ".block.bim"):
        Path(f"{base}{suffix}").unlink(missing_ok=True)
    return {"planted": [f"rs{j}" for j in planted], "seconds": round(time.perf_counter() - t0, 1)}


def top_fraction(tsv: Path, planted: set[str], top: int = 100) -> float:
    with open(tsv, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))[:top]
    return sum(r["feature_id"] in planted for r in rows) / max(1, min(top, len(planted)))


def best_dimension(cv_json: Path) -> int:
    """The dimension with the lowest mean error of LOL in the cv report (2 when it cannot be read)."""
    doc = json.loads(cv_json.read_text())
    try:
        return int(doc["best"]["lol"]["n_components"])
    except (KeyError, TypeError, ValueError):
        pass
    for key in ("methods", "results"):
        entry = doc.get(key, {}).get("lol") if isinstance(doc.get(key), dict) else None
        if isinstance(entry, dict):
            for name in ("best_dim", "best_n_components", "best_d"):
                if name in entry:
                    return int(entry[name])
    return 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--variants", type=int, default=1_000_000)
    ap.add_argument("--causal", type=int, default=50)
    ap.add_argument("--shift", type=float, default=0.12)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="plink-pipeline-", dir=args.workdir))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        made = write_plink(work / "x", args.samples, args.variants, args.causal, args.shift)
        planted = set(made["planted"])
        steps = {"write_plink_seconds": made["seconds"]}
        steps["ingest"] = timed(WIDEML + ["ingest", work / "x.bed", "-o", work / "s.zarr", "--no-progress"], env)
        steps["cv"] = timed(WIDEML + ["cv", work / "s.zarr", "--methods", "lol", "--max-dim", "10", "--folds", "5",
                                      "-o", work / "cv.json", "--no-progress", "--no-resume"], env)
        d = best_dimension(work / "cv.json")
        steps["fit"] = timed(WIDEML + ["fit", "lol", work / "s.zarr", "-o", work / "m.zarr", "--n-components", str(d),
                                       "--no-progress", "--no-resume"], env)
        steps["maps"] = timed(WIDEML + ["maps", work / "m.zarr", "-o", work / "maps", "--top", "100", "--png", "matplotlib",
                                        "--no-progress"], env)
        recall = {name: top_fraction(work / "maps" / f"{name}_top.tsv", planted)
                  for name in ("mean_difference", "direction_1", "discriminant_weights")
                  if (work / "maps" / f"{name}_top.tsv").is_file()}
        result = {"samples": args.samples, "variants": args.variants, "causal": args.causal, "af_shift_in_cases": args.shift,
                  "n_components_from_cv": d, "cv_report": json.loads((work / "cv.json").read_text()), "steps": steps,
                  "planted_in_top100": recall, "headline_map": "mean_difference",
                  "store_gb": round(sum(f.stat().st_size for f in (work / "s.zarr").rglob("*") if f.is_file()) / 1e9, 2),
                  "maps_files": sorted(f.name for f in (work / "maps").iterdir())[:12]}
        print(json.dumps({k: v for k, v in result.items() if k != "cv_report"}, indent=1))
        save("plink_pipeline", result)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
