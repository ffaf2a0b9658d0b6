"""Cost of resumable passes on the 2 GB store (n = 2000, p = 250 000 float32), issue 13.

Measured in one process, medians of --repeats:
- LOL fit (default solver, d = 50) with checkpoints off vs on at the default interval
  (``wideml.checkpoint-interval``, 60 s), run like the CLI runs it (inside
  ``wideml.runtime.checkpoint.resumable``); goal: overhead <= 5% of the fit;
- time saved by resuming: a fit interrupted (KeyboardInterrupt from a chunk read) after 50%,
  80% and 95% of its chunk reads, then resumed; reported are the resumed fit's time and
  reads against a full fit's. For the interrupted runs the interval is --resume-interval
  (default 1 s; 0.01 s with --quick) so that a checkpoint exists near the interrupt.

Usage: python benchmarks/scale/checkpoint_overhead.py [--workdir DIR] [--repeats 3] [--quick] [--reuse]
(--quick: n = 500, p = 40 000, about 80 MB.)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save
from lol_2gb_store import make_store


def _fit(store, d, work=None, interval=None):
    import dask

    import wideml
    from wideml.runtime.checkpoint import resumable

    t0 = time.perf_counter()
    est = wideml.LOL(n_components=d)
    if work is None:
        with dask.config.set({"wideml.checkpoint-interval": 0}):
            est.fit(store, store.y)
    else:
        settings = {} if interval is None else {"wideml.checkpoint-interval": interval}
        with dask.config.set(settings), resumable(str(work)):
            est.fit(store, store.y)
    return time.perf_counter() - t0, est


def _interrupted_then_resumed(store, d, work, after, interval):
    """(seconds of the resumed fit, its chunk reads) after a fit interrupted at chunk read ``after``."""
    import dask

    import wideml
    from wideml.passes import blocks
    from wideml.runtime.checkpoint import resumable
    from wideml.storage.reader import READ_COUNTER

    original, count = blocks._after_read, [0]

    def interrupt():
        count[0] += 1
        if count[0] == after:
            raise KeyboardInterrupt

    blocks._after_read = interrupt
    try:
        with dask.config.set({"wideml.checkpoint-interval": interval}), resumable(str(work)):
            wideml.LOL(n_components=d).fit(store, store.y)
        raise RuntimeError("the fit was not interrupted")
    except KeyboardInterrupt:
        pass
    finally:
        blocks._after_read = original
    before = sum(READ_COUNTER.values())
    seconds, _ = _fit(store, d, work, interval)
    return seconds, sum(READ_COUNTER.values()) - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="n = 500, p = 40 000 (80 MB) instead of the 2 GB store")
    ap.add_argument("--reuse", action="store_true", help="reuse an existing store in --workdir")
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--resume-interval", type=float, default=None, help="seconds (default 1; 0.01 with --quick)")
    args = ap.parse_args()

    import wideml
    from wideml.storage.reader import READ_COUNTER

    n, p = (500, 40_000) if args.quick else (2000, 250_000)
    if args.resume_interval is None:
        args.resume_interval = 0.01 if args.quick else 1.0
    work = Path(args.workdir or tempfile.mkdtemp(prefix="wideml-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / ("Xquick.zarr" if args.quick else "X2gb.zarr")
    if not (args.reuse and path.exists()):
        make_store(path, n, p)
    store = wideml.open_store(path)
    res: dict = {"n": n, "p": p, "d": args.d, "store_bytes": store.nbytes, "repeats": args.repeats, "quick": args.quick}
    _fit(store, args.d)  # warm the page cache and the imports

    before = sum(READ_COUNTER.values())
    t_ref, est = _fit(store, args.d)
    reads = sum(READ_COUNTER.values()) - before
    res["solver"], res["passes"], res["chunk_reads_per_fit"] = est.solver_, est.n_fit_passes_, reads
    off, on = [], []
    for _ in range(args.repeats):  # interleaved, so drift in the machine's load hits both alike
        off.append(_fit(store, args.d)[0])
        on.append(_fit(store, args.d, work / "ckpt")[0])
    res["fit_checkpoints_off_s"], res["fit_checkpoints_on_s"] = statistics.median(off), statistics.median(on)
    res["runs_off_s"], res["runs_on_s"] = off, on
    res["overhead_fraction"] = res["fit_checkpoints_on_s"] / res["fit_checkpoints_off_s"] - 1
    print(f"fit ({est.solver_}, {reads} chunk reads): checkpoints off {res['fit_checkpoints_off_s']:.2f} s, "
          f"on {res['fit_checkpoints_on_s']:.2f} s ({100 * res['overhead_fraction']:+.1f}%)")

    res["resume_interval_s"] = args.resume_interval
    res["resume"] = {}
    for frac in (0.5, 0.8, 0.95):
        seconds, resumed_reads = _interrupted_then_resumed(store, args.d, work / "ckpt", max(1, int(frac * reads)), args.resume_interval)
        res["resume"][f"{int(frac * 100)}%"] = {
            "resumed_fit_s": seconds, "resumed_reads": resumed_reads,
            "saved_s": res["fit_checkpoints_off_s"] - seconds, "saved_fraction": 1 - seconds / res["fit_checkpoints_off_s"],
        }
        print(f"interrupted at {int(frac * 100)}% of the reads: resumed in {seconds:.2f} s with {resumed_reads} reads "
              f"(saved {res['fit_checkpoints_off_s'] - seconds:.2f} s)")
    out = save("checkpoint_overhead" + ("_quick" if args.quick else ""), res)
    print(f"wrote {out}")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
