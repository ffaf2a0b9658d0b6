"""LOL fit on a 2 GB uncompressed float32 zarr store (n = 2000, p = 250 000, d = 50), issues 3 and 15.

Measured in one run, medians of --repeats:
- one read pass of the store (the fastest of: raw chunk-file reads, zarr's reads, our dask reads);
- in-memory float32 Gram of the same data: numpy's X X^T and scipy's ssyrk (one triangle), and
  numpy's float64 X X^T;
- wideml LOL fit: the default (solver and precision "auto": float32 chunk products on this
  float32 store, class medians), the exact Gram solver (float32 products, and float64), class
  means, and the randomized solver, counting passes; the default also with the store evicted
  from the page cache (off disk);
- dask.array.linalg.svd_compressed(k=50, n_power_iter=2) on the same store;
- scikit-learn PCA(50, svd_solver="randomized") on the same data in RAM;
- peak memory of a LOL fit in a fresh process at p = 250 000 and p = 1 000 000 (VmHWM, the
  whole process's maximum RSS), and at p = 250 000 also as ``/usr/bin/time -v`` reports it for
  the ``wideml fit`` command;
- held-out accuracy on Trunk stores of the same size (train n, test n / 2): LDA test error
  and the largest principal angle to the exact path, for LOL and for svd_compressed.

Where each pass's time goes (and the products' share of the isolated BLAS rate) is measured
by ``benchmarks/micro/pass_profile.py``.

Usage: python benchmarks/scale/lol_2gb_store.py [--workdir DIR] [--repeats 3] [--skip-1m] [--skip-accuracy]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import cold_median_time, median_time, peak_rss_of, read_pass_yardsticks, save


def make_store(path: Path, n: int, p: int, seed: int = 0) -> None:
    import dask.array as da

    import wideml

    rng = da.random.default_rng(seed)
    X = rng.standard_normal((n, p), chunks=(n, 4096), dtype=np.float32)
    y = np.random.default_rng(seed).integers(0, 2, n)
    wideml.write_store(path, X, y, feature_chunk=4096, overwrite=True)


def time_v_max_rss(argv: list[str], cwd: str) -> dict | None:
    """Maximum RSS of ``python argv`` as ``/usr/bin/time -v`` reports it (the whole process), or None without it."""
    import subprocess
    import sys

    if not Path("/usr/bin/time").exists():
        return None
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", sys.executable, *argv], capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t0
    for line in proc.stderr.splitlines():
        if "Maximum resident set size" in line:
            return {"max_rss_bytes": int(line.split()[-1]) * 1024, "wall_s": wall, "exit": proc.returncode}
    return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "no report", "exit": proc.returncode}


def held_out_accuracy(work: Path, n: int, p: int, d: int, repeats: int) -> dict:
    """LOL (default and exact) and dask's svd_compressed on a Trunk training store, scored on a Trunk test store.

    Trunk: two classes whose means differ by 1/sqrt(j) on feature j, variances
    decaying with j. Each method's d directions (LOL's, or svd_compressed's top-d
    right singular vectors) project both stores; LDA is fitted on the training
    projections and scored on the test ones. Subspaces are compared to their
    exact counterparts (LOL's exact float64 Gram solver; the exact top-d right
    singular vectors of the uncentred X from its in-memory Gram) by the largest
    principal angle.
    """
    import dask
    import dask.array as da
    from scipy.linalg import subspace_angles
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as LDA

    import wideml

    train, test = work / "trunk_train.zarr", work / "trunk_test.zarr"
    from wideml.sims import simulate_to_store

    simulate_to_store("trunk", train, n, p, seed=11, overwrite=True)
    simulate_to_store("trunk", test, n // 2, p, seed=12, overwrite=True)
    tr, te = wideml.open_store(train), wideml.open_store(test)
    Xte = np.asarray(te.X.compute())
    out: dict = {"setting": "trunk", "n_train": n, "n_test": n // 2, "p": p, "d": d}
    exact = wideml.LOL(d, solver="gram", precision="float64").fit(tr)
    for name, kw in {"lol_default": {}, "lol_exact_float64": dict(solver="gram", precision="float64")}.items():
        t0 = time.perf_counter()
        est = exact if name == "lol_exact_float64" else wideml.LOL(d, **kw).fit(tr)
        fit_s = time.perf_counter() - t0
        lda = LDA().fit(est.transform(tr), tr.y)
        out[name] = {"fit_s": fit_s if name != "lol_exact_float64" else None, "solver": est.solver_,
                     "test_error": float(np.mean(lda.predict(est.transform(Xte)) != te.y)),
                     "max_angle_to_exact_deg": float(np.degrees(subspace_angles(np.asarray(est.components_).T,
                                                                                 np.asarray(exact.components_).T).max()))}
    Xtr = np.asarray(tr.X.compute())
    w, U = np.linalg.eigh((Xtr.astype(np.float64) @ Xtr.T.astype(np.float64)))
    top = np.argsort(w)[::-1][:d]
    V_exact = (Xtr.T.astype(np.float64) @ U[:, top]) / np.sqrt(w[top])
    Xd = da.from_zarr(str(train / "X"))
    t0 = time.perf_counter()
    _, _, v = da.linalg.svd_compressed(Xd, k=d, n_power_iter=2, seed=0)
    V = np.asarray(dask.compute(v)[0]).T
    fit_s = time.perf_counter() - t0
    lda = LDA().fit(Xtr @ V, tr.y)
    out["dask_svd_compressed_q2"] = {"fit_s": fit_s, "test_error": float(np.mean(lda.predict(Xte @ V) != te.y)),
                                     "max_angle_to_exact_deg": float(np.degrees(subspace_angles(V, V_exact).max()))}
    out["note"] = ("Each method is scored against its own exact path: LOL's loadings against the float64 Gram solver's, "
                   "svd_compressed's right singular vectors against the exact ones of the same (uncentred) matrix.")
    shutil.rmtree(train, ignore_errors=True)
    shutil.rmtree(test, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--p", type=int, default=250_000)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--skip-1m", action="store_true", help="skip the p = 1 000 000 memory run")
    ap.add_argument("--reuse", action="store_true", help="reuse an existing store in --workdir")
    ap.add_argument("--name", default="lol_2gb_store", help="results file name (benchmarks/results/NAME.json)")
    ap.add_argument("--skip-accuracy", action="store_true", help="skip the held-out accuracy comparison on Trunk stores")
    args = ap.parse_args()

    import dask
    import dask.array as da
    from sklearn.decomposition import PCA as SKPCA

    import wideml
    from wideml.storage.reader import READ_COUNTER

    work = Path(args.workdir or tempfile.mkdtemp(prefix="wideml-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / "X2gb.zarr"
    n, p, d = args.n, args.p, args.d
    t0 = time.perf_counter()
    if not (args.reuse and path.exists()):
        make_store(path, n, p)
    print(f"made {path} ({n} x {p} float32) in {time.perf_counter() - t0:.1f} s")
    store = wideml.open_store(path)
    res: dict = {"n": n, "p": p, "d": d, "store_bytes": store.nbytes, "repeats": args.repeats}

    res["read"] = read_pass_yardsticks(path, store, args.repeats)
    print("read pass yardsticks (s):", {k: round(v, 3) for k, v in res["read"].items()})

    X = np.asarray(store.X.compute())
    res["numpy_xxt_float32"], _ = median_time(lambda: X @ X.T, args.repeats)
    from scipy.linalg.blas import ssyrk

    res["scipy_ssyrk_float32"], _ = median_time(lambda: ssyrk(1.0, X.T, trans=1), args.repeats)  # one triangle of X X^T
    res["fastest_in_memory_gram_float32"] = min(res["numpy_xxt_float32"], res["scipy_ssyrk_float32"])
    print(f"in-memory float32 Gram: numpy X X^T {res['numpy_xxt_float32']:.2f} s, scipy ssyrk {res['scipy_ssyrk_float32']:.2f} s")
    X64 = X.astype(np.float64)
    res["numpy_xxt_float64"], _ = median_time(lambda: X64 @ X64.T, args.repeats)
    del X64
    print(f"numpy X X^T: float32 {res['numpy_xxt_float32']:.2f} s, float64 {res['numpy_xxt_float64']:.2f} s")

    variants = {
        "default": dict(),  # what a user gets: solver="auto", precision="auto", robust_first=True
        "gram": dict(solver="gram"),  # the exact Gram solver as a user gets it (float32 products, class medians)
        "gram_float64": dict(solver="gram", precision="float64"),  # exact to float64 round-off
        "gram_means": dict(solver="gram", robust_first=False),  # class means instead of medians
        "randomized": dict(solver="randomized"),  # q = 1: 3 passes, loadings assembled from the model group
    }
    for name, kw in variants.items():
        key = str(store.path)
        before = READ_COUNTER[key]
        fitted = []
        t, runs = median_time(lambda: fitted.append(wideml.LOL(d, **kw).fit(store)), args.repeats)
        res[f"lol_fit_{name}"] = t
        res[f"lol_fit_{name}_runs"] = runs
        res[f"lol_fit_{name}_passes"] = (READ_COUNTER[key] - before) / (args.repeats * store.X.numblocks[1])
        res[f"lol_fit_{name}_solver"] = fitted[-1].solver_
        res[f"lol_fit_{name}_precision"] = fitted[-1].precision_
        print(f"LOL fit ({name}: {kw}): {t:.2f} s, {res[f'lol_fit_{name}_passes']:.0f} passes, solver {fitted[-1].solver_}, "
              f"precision {fitted[-1].precision_}")
    res["lol_fit_default_cold"], res["lol_fit_default_cold_runs"] = cold_median_time(lambda: wideml.LOL(d).fit(store), path, args.repeats)
    print(f"LOL fit (default), store evicted from the page cache first: {res['lol_fit_default_cold']:.2f} s")

    def svd_compressed():
        Xd = da.from_zarr(str(path / "X"))
        u, s, v = da.linalg.svd_compressed(Xd, k=d, n_power_iter=2, seed=0)
        dask.compute(u, s, v)

    res["dask_svd_compressed"], _ = median_time(svd_compressed, args.repeats)
    print(f"dask svd_compressed: {res['dask_svd_compressed']:.2f} s")
    res["sklearn_randomized_pca"], _ = median_time(lambda: SKPCA(d, svd_solver="randomized", random_state=0).fit(X), args.repeats)
    print(f"sklearn randomized PCA (in RAM): {res['sklearn_randomized_pca']:.2f} s")
    del X

    code = (
        "import sys; sys.path.insert(0, {src!r})\n"
        "import wideml\n"
        "s = wideml.open_store({path!r})\n"
        "wideml.LOL({d}, solver={solver!r}).fit(s)\n"
    )
    src = str(Path(__file__).resolve().parents[2])
    for solver in ("gram", "auto"):
        res[f"peak_rss_p250k_{solver}"] = peak_rss_of(code.format(src=src, path=str(path), d=d, solver=solver))
        res[f"time_v_cli_p250k_{solver}"] = time_v_max_rss(["-m", "wideml.cli.main", "fit", "lol", str(path), "-o", str(work / f"m_{solver}"),
                                                            "--n-components", str(d), "--solver", solver, "--no-progress", "--overwrite"], src)
        print(f"peak RSS, solver {solver}: {res[f'peak_rss_p250k_{solver}']['peak_rss_bytes'] / 2**30:.2f} GiB (VmHWM of an API fit), "
              f"{(res[f'time_v_cli_p250k_{solver}'] or {}).get('max_rss_bytes', float('nan')) / 2**30:.2f} GiB (/usr/bin/time -v, CLI fit)")
    if not args.skip_1m:
        path1m = work / "X8gb.zarr"
        make_store(path1m, n, 1_000_000)
        for solver in ("gram", "auto"):
            res[f"peak_rss_p1m_{solver}"] = peak_rss_of(code.format(src=src, path=str(path1m), d=d, solver=solver))
            res[f"peak_rss_ratio_1m_over_250k_{solver}"] = (res[f"peak_rss_p1m_{solver}"]["peak_rss_bytes"]
                                                            / res[f"peak_rss_p250k_{solver}"]["peak_rss_bytes"])
        shutil.rmtree(path1m, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)

    if not args.skip_accuracy:
        res["accuracy"] = held_out_accuracy(work, n, p, d, args.repeats)
        print("held-out accuracy:", json.dumps(res["accuracy"], indent=1))

    rp = res["read"]["read_pass"]
    yard = max(rp, res["numpy_xxt_float32"])
    res["ratios"] = {
        "lol_fit_default_over_max_read_numpy": res["lol_fit_default"] / yard,
        "lol_fit_gram_float64_over_max_read_numpy": res["lol_fit_gram_float64"] / yard,
        "lol_fit_gram_means_over_max_read_numpy": res["lol_fit_gram_means"] / yard,
        "lol_fit_randomized_over_max_read_numpy": res["lol_fit_randomized"] / yard,
        "svd_compressed_over_lol_fit_default": res["dask_svd_compressed"] / res["lol_fit_default"],
        "sklearn_pca_over_lol_fit_default": res["sklearn_randomized_pca"] / res["lol_fit_default"],
        "lol_fit_default_over_read_pass": res["lol_fit_default"] / rp,
        "lol_fit_default_cold_over_cold_read_pass": res["lol_fit_default_cold"] / res["read"]["read_pass_cold"],
    }
    gram_yard = res["fastest_in_memory_gram_float32"]
    res["ratios"] |= {
        "lol_fit_gram_over_fastest_in_memory_gram": res["lol_fit_gram"] / gram_yard,
        "lol_fit_gram_means_over_fastest_in_memory_gram": res["lol_fit_gram_means"] / gram_yard,
    }
    res["targets_issue15"] = {
        "default LOL >= 3x faster than svd_compressed (q = 2)": res["ratios"]["svd_compressed_over_lol_fit_default"] >= 3,
        "exact Gram solver <= 1.3 x the fastest in-memory float32 Gram": res["ratios"]["lol_fit_gram_over_fastest_in_memory_gram"] <= 1.3,
        "exact Gram solver, class means, <= 1.3 x the fastest in-memory float32 Gram": res["ratios"]["lol_fit_gram_means_over_fastest_in_memory_gram"] <= 1.3,
    }
    res["targets"] = {
        "lol_fit (default) <= 1.3 x max(read pass, numpy XX^T)": res["ratios"]["lol_fit_default_over_max_read_numpy"] <= 1.3,
        "lol_fit (exact float64 products) <= 1.3 x max(read pass, numpy XX^T)": res["ratios"]["lol_fit_gram_float64_over_max_read_numpy"] <= 1.3,
        ">= 2x faster than svd_compressed": res["ratios"]["svd_compressed_over_lol_fit_default"] >= 2,
        "faster than sklearn randomized PCA": res["ratios"]["sklearn_pca_over_lol_fit_default"] > 1,
    }
    for solver in ("gram", "auto"):
        if f"peak_rss_ratio_1m_over_250k_{solver}" in res:
            res["targets"][f"peak memory p=1M vs 250k within 20% (solver {solver})"] = abs(res[f"peak_rss_ratio_1m_over_250k_{solver}"] - 1) < 0.2
    out = save(args.name, res)
    print("ratios:", {k: round(v, 2) for k, v in res["ratios"].items()})
    print("targets:", res["targets"])
    print(f"saved {out}")


if __name__ == "__main__":
    main()
