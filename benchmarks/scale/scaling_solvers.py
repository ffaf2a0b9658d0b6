"""Issue 4 benchmarks: randomized LOL, LFL and solver="auto" against read passes, and memory flat in p.

Part A (2 GB store, n = 2000, p = 250 000, float32, uncompressed):
  LFL fit vs one read pass (target <= 1.2x); the whole randomized LOL fit (d = 50, q = 1;
  q + 2 passes, loadings assembled from the model group) vs (q + 2) read passes (target
  <= 1.2x), with class medians (the default) and class means. Each from the page cache and
  off disk (the store evicted before the LFL fit, and before every pass of the LOL fit).
Part B (grid n in {500, 2000, 8000} x d in {10, 100}, ~1 GB stores):
  exact Gram fit, randomized fit, and the solver auto picks; auto must never be
  more than 10% slower than the faster of the two.
Part D (validation of the cost model on sizes it was not calibrated on: n in {1000, 4000} x
  d in {25, 200}, ~1 GB stores): the same comparison as part B.
Part C (peak memory flat in p; the Gram solver's is in lol_2gb_store.py): LFL and randomized LOL fits in fresh processes
  at p = 250 000, 1 000 000 and 2 000 000 (n = 2000); within 20%.

Usage: python benchmarks/scale/scaling_solvers.py [--part A,B,C] [--repeats 3] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import cold_median_time, evict_from_page_cache, median_time, peak_rss_of, read_pass_yardsticks, save


def make_store(path: Path, n: int, p: int, seed: int = 0, chunk_bytes: int = 32 * 2**20) -> None:
    import dask.array as da

    import wideml

    width = max(1, chunk_bytes // (4 * n))
    X = da.random.default_rng(seed).standard_normal((n, p), chunks=(n, width), dtype=np.float32)
    y = np.random.default_rng(seed).integers(0, 2, n)
    wideml.write_store(path, X, y, feature_chunk=width, overwrite=True)


def _evict_before_every_pass(path):
    """Context manager: evict the store from the page cache before each of wideml's passes (as for a bigger-than-RAM store)."""
    import contextlib

    import wideml.estimators.gram.projector as projector

    @contextlib.contextmanager
    def ctx():
        orig = projector.compute

        def evicting(*args, **kwargs):
            evict_from_page_cache(path)
            return orig(*args, **kwargs)

        projector.compute = evicting
        try:
            yield
        finally:
            projector.compute = orig

    return ctx()


def part_a(work: Path, repeats: int) -> dict:
    import wideml

    path = work / "a.zarr"
    make_store(path, 2000, 250_000)
    os.sync()  # flush the new store before timing reads (writeback would compete with them)
    store = wideml.open_store(path)
    out = {"n": 2000, "p": 250_000, "store_bytes": store.nbytes}
    out["read"] = read_pass_yardsticks(path, store, repeats)
    rp, rpc = out["read"]["read_pass"], out["read"]["read_pass_cold"]
    out["lfl_fit"], out["lfl_fit_runs"] = median_time(lambda: wideml.LFL(50).fit(store), repeats)
    out["lfl_fit_cold"], out["lfl_fit_cold_runs"] = cold_median_time(lambda: wideml.LFL(50).fit(store), path, repeats)
    variants = {"means": dict(robust_first=False), "medians": dict()}  # medians: the default LOL
    for name, kw in variants.items():
        make = lambda: wideml.LOL(50, solver="randomized", n_power_iter=1, **kw)  # noqa: E731
        est = make().fit(store)
        out[f"randomized_lol_{name}_passes"] = est.n_fit_passes_
        out[f"randomized_lol_{name}_fit"], out[f"randomized_lol_{name}_fit_runs"] = median_time(lambda: make().fit(store), repeats)
        # off disk: evicted before every one of the q + 2 passes (a bigger-than-RAM store always is)
        with _evict_before_every_pass(path):
            out[f"randomized_lol_{name}_fit_cold"], out[f"randomized_lol_{name}_fit_cold_runs"] = median_time(
                lambda: make().fit(store), repeats)
    out["ratios"] = {
        "lfl_fit_over_read_pass": out["lfl_fit"] / rp,
        "lfl_fit_cold_over_cold_read_pass": out["lfl_fit_cold"] / rpc,
    }
    for name in variants:
        out["ratios"][f"randomized_{name}_fit_over_3_read_passes"] = out[f"randomized_lol_{name}_fit"] / (3 * rp)
        out["ratios"][f"randomized_{name}_fit_cold_over_3_cold_read_passes"] = out[f"randomized_lol_{name}_fit_cold"] / (3 * rpc)
    mb = store.nbytes / 2**20
    out["MB_per_s"] = {"lfl": mb / out["lfl_fit"], "lfl_off_disk": mb / out["lfl_fit_cold"],
                       "randomized_lol_per_pass": 3 * mb / out["randomized_lol_medians_fit"],
                       "randomized_lol_per_pass_off_disk": 3 * mb / out["randomized_lol_medians_fit_cold"],
                       "paper_lol": 180.0, "paper_lfl": 2800.0}
    r = out["ratios"]
    out["targets"] = {
        "LFL fit <= 1.2 x read pass (page cache)": r["lfl_fit_over_read_pass"] <= 1.2,
        "LFL fit <= 1.2 x read pass (off disk)": r["lfl_fit_cold_over_cold_read_pass"] <= 1.2,
    }
    for name in variants:
        out["targets"][f"randomized LOL ({name}, q=1) <= 1.2 x 3 read passes (page cache)"] = r[f"randomized_{name}_fit_over_3_read_passes"] <= 1.2
        out["targets"][f"randomized LOL ({name}, q=1) <= 1.2 x 3 read passes (off disk)"] = r[f"randomized_{name}_fit_cold_over_3_cold_read_passes"] <= 1.2
    shutil.rmtree(path, ignore_errors=True)
    return out


def part_b(work: Path, repeats: int, ns=(500, 2000, 8000), ds=(10, 100)) -> dict:
    import wideml

    rows = []
    for n in ns:
        p = int(2.5e8 // n)
        path = work / f"b{n}.zarr"
        make_store(path, n, p)
        store = wideml.open_store(path)
        for d in ds:
            row = {"n": n, "p": p, "d": d}
            row["gram"], _ = median_time(lambda: wideml.LOL(d, solver="gram", robust_first=False).fit(store), repeats)
            row["randomized"], _ = median_time(lambda: wideml.LOL(d, solver="randomized", robust_first=False).fit(store), repeats)
            est = wideml.LOL(d, robust_first=False).fit(store)
            row["auto_choice"], row["auto_reason"] = est.solver_, est.solver_reason_
            row["auto_time"] = row[est.solver_]
            row["auto_over_best"] = row["auto_time"] / min(row["gram"], row["randomized"])
            print(row)
            rows.append(row)
        shutil.rmtree(path, ignore_errors=True)
    return {"grid": rows, "worst_auto_over_best": max(r["auto_over_best"] for r in rows),
            "target auto never > 1.1 x best": all(r["auto_over_best"] <= 1.1 for r in rows)}


def part_c(work: Path) -> dict:
    src = str(Path(__file__).resolve().parents[2])
    res = {}
    for p in (250_000, 1_000_000, 2_000_000):
        path = work / f"c{p}.zarr"
        make_store(path, 2000, p)
        for name, ctor in (("lfl", "wideml.LFL(50)"), ("randomized_lol", "wideml.LOL(50, solver='randomized')")):
            code = f"import sys; sys.path.insert(0, {src!r})\nimport wideml\ns = wideml.open_store({str(path)!r})\n{ctor}.fit(s)\n"
            res.setdefault(name, {})[p] = peak_rss_of(code)
            print(name, p, res[name][p])
        shutil.rmtree(path, ignore_errors=True)
    for name, by_p in res.items():
        vals = [v["peak_rss_bytes"] for v in by_p.values()]
        res[name]["max_over_min"] = max(vals) / min(vals)
    res["target peak memory flat in p (within 20%)"] = all(r["max_over_min"] < 1.2 for r in res.values() if isinstance(r, dict))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="A,B,C", help="any of A, B, C, D (comma-separated)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="wideml-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    res = {"repeats": args.repeats}
    t0 = time.perf_counter()
    parts = args.part.upper().split(",")
    if "A" in parts:
        res["A_2gb_store"] = part_a(work, args.repeats)
        print("A:", res["A_2gb_store"]["ratios"], res["A_2gb_store"]["MB_per_s"])
    if "B" in parts:
        res["B_auto_grid"] = part_b(work, args.repeats)
        print("B: worst auto/best", res["B_auto_grid"]["worst_auto_over_best"])
    if "D" in parts:
        res["D_auto_validation_grid"] = part_b(work, args.repeats, ns=(1000, 4000), ds=(25, 200))
        print(res["D_auto_validation_grid"])
    if "C" in parts:
        res["C_memory_flat_in_p"] = part_c(work)
    res["wall_s"] = time.perf_counter() - t0
    name = "scaling_solvers" if len(parts) == 3 else "scaling_solvers_" + "".join(parts).lower()
    print("saved", save(name, res))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
