"""``solver="auto"``: choose the exact Gram solver or the randomized one from a cost model.

Cost model (seconds, on the machine class this was calibrated on; constants below):

- exact Gram: one pass whose compute is the float64 product X_c X_c^T,
  ``n^2 p / GRAM_FLOPS``, overlapped with reading (``max(read, compute)``),
  plus the n x n eigensolve ``EIGH_COEF * n^3 / GRAM_FLOPS``;
- randomized: ``n_power_iter + 2`` passes, each ``max(read, 2 n l p / GEMM_FLOPS)``
  with l = d + n_oversamples (the sketch products X_c Omega and X_c (X_c^T Q));
- every pass also pays ``PASS_OVERHEAD``.

Both then pay the same emit pass, which is left out. Memory: the Gram solver
keeps a few n x n float64 matrices alive (``GRAM_COPIES``); if they do not fit
half the memory budget (config ``memory-limit``) the randomized solver is used
whatever the time estimate says.
"""

from __future__ import annotations

#: Effective float64 GEMM/SYRK rate of one Gram product over both cores (FLOP/s, multiply-adds counted once).
GRAM_FLOPS = 4.0e10
#: Effective rate of the thin products of the sketch passes (memory-bound, lower than GRAM_FLOPS).
GEMM_FLOPS = 1.5e10
#: Bytes per second of one read pass from the page cache.
READ_BPS = 1.5e9
#: Cost of the n x n eigensolve in units of n^3 / GRAM_FLOPS.
EIGH_COEF = 3.0
#: Fixed cost of one pass (graph construction, scheduling, small algebra), seconds.
PASS_OVERHEAD = 0.1
#: n x n float64 matrices alive at once in the Gram pass (accumulators, tree partials, eigensolve workspace).
GRAM_COPIES = 6


def estimate_seconds(n: int, p: int, d: int, n_power_iter: int = 1, n_oversamples: int = 10, itemsize: int = 4) -> dict[str, float]:
    """Estimated fit time (without the common emit pass) of both solvers."""
    read = n * p * itemsize / READ_BPS
    gram = PASS_OVERHEAD + max(read, n * n * p / GRAM_FLOPS) + EIGH_COEF * n**3 / GRAM_FLOPS
    width = min(n, d + n_oversamples)
    randomized = (n_power_iter + 2) * (PASS_OVERHEAD + max(read, 2 * n * width * p / GEMM_FLOPS))
    return {"gram": gram, "randomized": randomized}


def choose_solver(
    n: int,
    p: int,
    d: int,
    n_power_iter: int = 1,
    n_oversamples: int = 10,
    *,
    itemsize: int = 4,
    memory_budget: int | None = None,
    supports_randomized: bool = True,
) -> tuple[str, str]:
    """Pick "gram" or "randomized"; returns (solver, one-line reason)."""
    if not supports_randomized:
        return "gram", "only the Gram solver supports this method"
    if memory_budget is None:
        from wideml.runtime.config import memory_limit_bytes

        memory_budget = memory_limit_bytes()
    gram_bytes = GRAM_COPIES * 8 * n * n
    if gram_bytes > memory_budget / 2:
        return "randomized", f"an n x n Gram ({gram_bytes / 2**30:.1f} GiB with workspace) does not fit half the memory budget"
    est = estimate_seconds(n, p, d, n_power_iter, n_oversamples, itemsize)
    solver = min(est, key=est.get)
    return solver, f"estimated {est['gram']:.2f} s (gram) vs {est['randomized']:.2f} s (randomized)"
