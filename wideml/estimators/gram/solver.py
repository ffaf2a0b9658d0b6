"""``solver="auto"``: choose the exact Gram solver or the randomized one from a cost model.

Cost model of a whole fit, in seconds. The constants below were fitted by
``benchmarks/micro/calibrate_solver.py`` (non-negative least squares on relative error) to the
grid of ``benchmarks/scale/scaling_solvers.py --part B`` (n in {500, 2000, 8000}, d in {10, 100},
1 GB float32 stores, float32 chunk products, 2 cores; ``results/scaling_solvers_b_calibration.json``,
refitted after the randomized solver lost its emit pass)
and checked on a second run of that grid plus sizes it was not fitted on (``--part D``):

- exact Gram: 2 passes (Gram + emit), each ``GRAM_PASS_S_PER_GB`` per GB of X, plus the
  Gram product ``n^2 p / GRAM_RATE``, the n x n algebra (centring, eigensolve)
  ``EIGH_COEF * n^3 / GRAM_RATE`` and the emit product ``n d p / EMIT_RATE``;
- randomized: n_power_iter + 2 passes (sketch, power steps, final; the loadings are then
  assembled from the model group without reading X, unless n is so small that the p x l
  matrix this needs would outweigh a quarter of X: then one more, emit, pass), each
  ``SKETCH_PASS_S_PER_GB`` per GB,
  plus their thin products ``2 n l p / SKETCH_RATE`` with l = d + n_oversamples, and the
  generation of the keyed Gaussian test matrix ``p l / RANDOM_RATE``.

Memory: the Gram solver keeps a few n x n float64 matrices alive per lane of its pass (:func:`gram_bytes`); if they
do not fit half the memory budget (config ``memory-limit``) the randomized solver is used
whatever the time estimate says. When they fit, the exact solver is kept unless the estimate puts it at
:data:`CLEARLY_COSTLIER` (2x) the randomized solver's time or more: a near tie ("0.55 s vs 0.53 s") is
within the model's error, and the randomized solver's subspace is only as good as its convergence; nor when
it saves less than :data:`MIN_SAVING_S` seconds.
"""

from __future__ import annotations

from wideml.passes.gram import LANE_MATRICES, gram_lanes
from wideml.runtime.config import memory_limit_bytes

#: Seconds per GB of X for one pass of the Gram solver (read, centring, statistics).
GRAM_PASS_S_PER_GB = 0.455
#: Seconds per GB of X for one pass of the randomized solver.
SKETCH_PASS_S_PER_GB = 0.287
#: Rate of the chunk Gram products, in units of n^2 p per second.
GRAM_RATE = 2.92e11
#: Rate of the emit pass's product X^T B, in units of n d p per second.
EMIT_RATE = 3.72e10
#: Rate of the sketch passes' thin products, in units of 2 n l p per second.
SKETCH_RATE = 8.45e10
#: Rate of generating the keyed Gaussian test matrix, in entries (p l) per second.
RANDOM_RATE = 2.44e7
#: Cost of the n x n algebra in units of n^3 / GRAM_RATE.
EIGH_COEF = 23.7
#: n x n float64 matrices alive whatever the Gram pass's lane count (the lanes' sum and the eigensolve
#: workspace); each lane adds :data:`wideml.passes.gram.LANE_MATRICES`.
GRAM_COPIES_FIXED = 2


def gram_bytes(n: int, lanes: int) -> int:
    """Peak bytes of the n x n matrices of a Gram fit run in ``lanes`` lanes."""
    return (LANE_MATRICES * max(1, lanes) + GRAM_COPIES_FIXED) * 8 * n * n


def folds_loadings(n_samples: int, n_components: int, n_oversamples: int, itemsize: int) -> bool:
    """Whether the randomized solver assembles its loadings from Z = X_c^T Q (p x l, float64) instead of an emit pass.

    Writing and reading Z back costs 2 x 8 l bytes per feature; an emit pass
    reads n x itemsize bytes per feature and multiplies them. Z is used when it
    is at most a quarter of X (8 l <= n itemsize / 4): for n = 2000 float32
    samples and l = 60 it is 6% of X; for n = 16 it would be twice X.
    """
    width = min(n_samples, n_components + n_oversamples)
    return 8 * width <= n_samples * itemsize / 4


def estimate_seconds(n: int, p: int, d: int, n_power_iter: int = 1, n_oversamples: int = 10, itemsize: int = 4) -> dict[str, float]:
    """Estimated fit time of both solvers (emit pass included)."""
    gb = n * p * itemsize / 1e9
    gram = 2 * GRAM_PASS_S_PER_GB * gb + n * n * p / GRAM_RATE + EIGH_COEF * n**3 / GRAM_RATE + n * d * p / EMIT_RATE
    width = min(n, d + n_oversamples)
    sketch_passes = n_power_iter + 2
    emit = 0 if folds_loadings(n, d, n_oversamples, itemsize) else 1  # an emit pass when Z would outweigh a quarter of X
    randomized = ((sketch_passes + emit) * SKETCH_PASS_S_PER_GB * gb + sketch_passes * 2 * n * width * p / SKETCH_RATE
                  + emit * n * d * p / EMIT_RATE
                  + p * width / RANDOM_RATE)
    return {"gram": gram, "randomized": randomized}


#: ``auto`` takes the randomized solver over a Gram that fits only when the Gram is estimated at least this many times costlier:
#: the cost model's errors are of this order on small fits, and the exact solution is worth a near tie.
CLEARLY_COSTLIER = 2.0

#: ... and only when that saves at least this many seconds: on small fits both estimates round to nothing
#: ("0.00 s vs 0.00 s") and the exact solution costs no real time.
MIN_SAVING_S = 10.0


def _size(nbytes: float) -> str:
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.1f} GiB"
    return f"{nbytes / 2**20:.0f} MiB" if nbytes >= 2**20 else f"{max(1, round(nbytes / 2**10))} KiB"


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
    lanes: int | None = None,
) -> tuple[str, str]:
    """Pick "gram" or "randomized"; returns (solver, one-line reason naming the rule that decided).

    The exact Gram solver is used whenever its n x n matrices (with
    workspace, :func:`gram_bytes`) fit half of ``memory_budget`` and it is not
    clearly costlier: the randomized solver is taken only when the Gram does
    not fit, or when the cost model (:func:`estimate_seconds`, with the
    randomized solver at its fewest passes, ``n_power_iter``) puts the Gram at
    :data:`CLEARLY_COSTLIER` times the randomized solver's time or more, and
    at least :data:`MIN_SAVING_S` seconds more.
    ``lanes`` is the number of Gram-pass accumulators (default: as many as
    :func:`wideml.passes.gram.gram_lanes` runs under ``memory_budget``), so
    the Gram is avoided when even one lane would not fit.
    """
    if not supports_randomized:
        return "gram", "only the Gram solver supports this method"
    if d + n_oversamples >= n:
        return "gram", f"d + oversampling ({d + n_oversamples}) reaches n = {n}: a sketch would be as large as the Gram"
    if memory_budget is None:
        memory_budget = memory_limit_bytes()
    if lanes is None:  # as many as the Gram pass would run under this budget

        lanes = gram_lanes(n, memory_budget)
    need = gram_bytes(n, lanes)
    if need > memory_budget / 2:
        return "randomized", (f"the n x n Gram ({_size(need)} with workspace) does not fit half the memory budget "
                              f"({_size(memory_budget / 2)})")
    est = estimate_seconds(n, p, d, n_power_iter, n_oversamples, itemsize)
    times = f"estimated {est['gram']:.2f} s (gram) vs {est['randomized']:.2f} s (randomized)"
    if est["gram"] >= CLEARLY_COSTLIER * est["randomized"] and est["gram"] - est["randomized"] >= MIN_SAVING_S:
        return "randomized", f"the Gram fits the memory budget but is clearly costlier: {times}"
    return "gram", f"the n x n Gram ({_size(need)} with workspace) fits the memory budget and is not clearly costlier: {times}"
