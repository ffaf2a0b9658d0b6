"""KPCA trick on a 2 GB uncompressed float32 zarr store (n = 2000, p = 250 000), issue 6.

Measured in one run (this machine is a shared 2-core box: timings are noisy):
- one read pass of the store (the fastest of raw chunk-file reads, zarr reads, our dask reads);
- the one Gram pass (``gram_pass``), counting store reads;
- the in-memory kernel algebra that follows it, with no further pass: the 21
  scaled-RBF kernels of the paper's sigma grid, the alignment QP over them,
  the unweighted sum, and one KPCA eigen-solve (top r);
- the learners separately, on r KPCA coordinates (DNE, NCA, LMNN), plus
  cross-validation over the 21 sigmas with DNE (in-memory, fold sub-blocks).
The in-memory algebra runs with single-threaded BLAS, as the estimators run it.

Usage: python benchmarks/scale/kpca_2gb_store.py [--workdir DIR] [--n 2000] [--p 250000] [--r 100]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import read_pass_yardsticks, save


def make_store(path: Path, n: int, p: int, seed: int = 0) -> None:
    """Two classes, xor-like in 2 informative directions spread over all features, plus noise."""
    import dask.array as da

    import wideml

    rs = np.random.default_rng(seed)
    corners = rs.integers(0, 2, size=(n, 2))
    y = corners[:, 0] ^ corners[:, 1]
    signal = (corners * 2 - 1).astype(np.float32)  # n x 2
    rng = da.random.default_rng(seed)
    noise = rng.standard_normal((n, p), chunks=(n, 4096), dtype=np.float32)
    loadings = rng.standard_normal((2, p), chunks=(2, 4096), dtype=np.float32) * np.float32(0.6)
    X = noise + da.from_array(signal, chunks=(n, 2)) @ loadings
    wideml.write_store(path, X, y, feature_chunk=4096, overwrite=True)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--p", type=int, default=250_000)
    ap.add_argument("--r", type=int, default=100, help="KPCA components fed to the learners")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--reuse", action="store_true", help="reuse a store already in --workdir")
    args = ap.parse_args()

    from wideml.algebra.kernel_selection import alignment_weights, stratified_folds
    from wideml.algebra.kernels import PAPER_SIGMAS, CombinedKernel, gram_sq_distances, rbf_family
    from wideml.algebra.kpca import fit_kpca
    from wideml.estimators.kernel.basis import fit_basis
    from wideml.runner.fit_runner import one_blas_thread
    from wideml.estimators.kernel.products import Products
    from wideml.estimators.kernel.kpca_trick import DNE, LMNN, KPCATrick
    from wideml.passes.gram import gram_pass
    from wideml.runtime import compute
    from wideml.storage import open_store
    from wideml.storage.reader import READ_COUNTER
    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    work = Path(args.workdir or tempfile.mkdtemp(prefix="wideml-kpca2gb-"))
    work.mkdir(parents=True, exist_ok=True)
    store_path = work / "x2gb.zarr"
    result = {"n": args.n, "p": args.p, "r": args.r}
    try:
        if not (args.reuse and store_path.exists()):
            t, _ = timed(lambda: make_store(store_path, args.n, args.p))
            result["write_store_s"] = t
        store = open_store(store_path)
        result["store_bytes"] = store.nbytes
        result["read"] = read_pass_yardsticks(store_path, store, repeats=args.repeats)
        READ_COUNTER.clear()
        t, (stats,) = timed(lambda: compute(gram_pass(store.X), label="Gram pass"))
        result["gram_pass_s"] = t
        result["gram_pass_chunk_reads"] = READ_COUNTER[str(store_path)]
        result["n_chunks"] = int(store.X.numblocks[1])
        result["gram_pass_over_read_pass"] = t / result["read"]["read_pass"]
        save("kpca_2gb_store", result)

        codes = np.asarray(store.y)
        blas = one_blas_thread()  # as the estimators do: single-threaded LAPACK for the in-memory algebra
        blas.__enter__()
        algebra = {}
        t0 = time.perf_counter()
        D2 = gram_sq_distances(stats.G)
        inner = stats.raw_gram()
        algebra["distances_s"] = time.perf_counter() - t0
        products = Products(inner, D2, args.p)
        bases = rbf_family(PAPER_SIGMAS)
        t, kernels = timed(lambda: [products.kernel(b) for b in bases])
        algebra["21_rbf_kernels_s"] = t
        t, (weights, norms) = timed(lambda: alignment_weights(kernels, codes, 2))
        algebra["alignment_qp_s"] = t
        algebra["alignment_weights"] = {str(s): float(w) for s, w in zip(PAPER_SIGMAS, weights) if w > 0}
        t, _ = timed(lambda: sum(kernels))
        algebra["unweighted_sum_s"] = t
        del kernels
        t, (basis, F) = timed(lambda: fit_basis(bases[8], products, args.r, 1e-10))
        algebra["kpca_top_r_eigh_s"] = t
        algebra["total_selection_algebra_s"] = sum(v for k, v in algebra.items() if k.endswith("_s"))
        result["algebra_no_pass"] = algebra
        result["passes_for_21_sigmas_alignment_sum"] = 1
        save("kpca_2gb_store", result)

        learners = {}
        t, _ = timed(lambda: DNE().fit(F, codes))
        learners["dne_s"] = t
        t, _ = timed(lambda: NeighborhoodComponentsAnalysis(max_iter=20, random_state=0).fit(F, codes))
        learners["nca_20_iter_s"] = t
        t, _ = timed(lambda: LMNN(max_iter=20).fit(F, codes))
        learners["lmnn_20_iter_s"] = t
        result["learners_in_memory"] = learners
        save("kpca_2gb_store", result)
        # CV over the 21 sigmas with DNE: fold sub-blocks of the one Gram (no pass).
        trick = KPCATrick(learner="dne", selection="cv", cv=3, n_components=args.r)
        folds = stratified_folds(codes, 3, 0)
        t0 = time.perf_counter()
        scores = [np.mean([trick._fold_score(b, products, codes, tr, te, None) for tr, te in folds]) for b in bases]
        learners["cv_21_sigmas_dne_3fold_s"] = time.perf_counter() - t0
        learners["cv_scores"] = {str(s): float(v) for s, v in zip(PAPER_SIGMAS, scores)}
        result["learners_in_memory"] = learners
        path = save("kpca_2gb_store", result)
        print(path)
        import json

        print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1, default=float))
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
