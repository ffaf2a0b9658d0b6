"""Every door at the store's speed: fits on a 2 GB float32 store against the same data as other inputs (issue 23).

The same data (default n = 500, p = 1 000 000 float32, 2 GB) is written once as
a wideml feature store (``write_store``, uncompressed) and once each as

- a plain zarr v3 array (``zarr.open_array``, uncompressed, the store's chunks),
- an h5py dataset (chunked like the store, uncompressed),
- ``da.from_zarr`` of the plain zarr array,

all in the folder given on the command line. LOL (default solver, and
``solver="gram"``) and LFL are fitted on each, warm (the data in the page
cache: one untimed fit first), median of ``--repeats`` fits taken round-robin
over the doors (so load drifting on a shared machine hits every door alike), in one run; each
door's time is reported as a ratio to the store's. Target: every ratio <= 1.15.

Usage: nice python benchmarks/scale/any_input.py [--workdir /tmp/wideml-any-input] [--n 500] [--p 1000000] [--repeats 3]
Writes benchmarks/results/any_input.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import machine, save  # noqa: E402


def make_data(folder: Path, n: int, p: int, seed: int = 0) -> dict:
    """Write the store and the other inputs (skipped when already there with the right shape)."""
    import dask.array as da
    import h5py
    import zarr

    import wideml

    store = folder / "store.zarr"
    plain = folder / "plain.zarr"
    h5 = folder / "data.h5"
    t0 = time.perf_counter()
    if not (store / "X" / "zarr.json").exists() or wideml.open_store(store).X.shape != (n, p):
        rng = da.random.default_rng(seed)
        X = rng.standard_normal((n, p), chunks=(n, 8192), dtype=np.float32)
        y = np.random.default_rng(seed).integers(0, 3, n)
        wideml.write_store(store, X, y, overwrite=True)
    st = wideml.open_store(store)
    chunk = st.X.chunks[1][0]
    if not (plain / "zarr.json").exists() or zarr.open_array(plain, mode="r").shape != (n, p):
        z = zarr.create_array(plain, shape=(n, p), chunks=(n, chunk), dtype="float32", compressors=None, overwrite=True)
        for start in range(0, p, chunk):
            z[:, start : start + chunk] = np.asarray(st.X[:, start : start + chunk])
    if not h5.exists():
        with h5py.File(h5, "w") as f:
            d = f.create_dataset("X", shape=(n, p), dtype="float32", chunks=(n, chunk))
            for start in range(0, p, chunk):
                d[:, start : start + chunk] = np.asarray(st.X[:, start : start + chunk])
    return {"store": str(store), "plain_zarr": str(plain), "h5py": str(h5), "feature_chunk": int(chunk),
            "seconds_to_write": round(time.perf_counter() - t0, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/wideml-any-input")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--p", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import dask.array as da
    import h5py
    import zarr

    import wideml

    folder = Path(args.workdir)
    folder.mkdir(parents=True, exist_ok=True)
    made = make_data(folder, args.n, args.p)
    store = wideml.open_store(made["store"])
    y = store.y
    h5file = h5py.File(made["h5py"], "r")
    doors = {
        "store": lambda: store,
        "plain_zarr": lambda: zarr.open_array(made["plain_zarr"], mode="r"),
        "h5py": lambda: h5file["X"],
        "da_from_zarr": lambda: da.from_zarr(made["plain_zarr"]),
    }
    estimators = {
        "LOL": lambda: wideml.LOL(n_components=10),
        "LOL_gram": lambda: wideml.LOL(n_components=10, solver="gram"),
        "LFL": lambda: wideml.LFL(),
    }
    results: dict = {"data": dict(made, n=args.n, p=args.p, dtype="float32", gigabytes=args.n * args.p * 4 / 1e9),
                     "repeats": args.repeats, "machine": machine(), "fits": {}}
    for est_name, make in estimators.items():
        fits = {}
        for door, source in doors.items():
            def fit(make=make, source=source, door=door):
                X = source()
                return make().fit(X) if door == "store" else make().fit(X, y)

            fits[door] = fit
            model = fit()  # warm: the data in the page cache, imports done
            if door == "store":
                reference = model
            elif hasattr(model, "components_"):
                assert np.allclose(model.components_, reference.components_, rtol=1e-4, atol=1e-5), (est_name, door)
        times: dict = {door: [] for door in doors}
        for _ in range(args.repeats):  # round-robin over the doors: load drifting on a shared machine hits every door alike
            for door, fit in fits.items():
                t0 = time.perf_counter()
                fit()
                times[door].append(time.perf_counter() - t0)
        row = {door: {"median_s": round(statistics.median(t), 3), "times_s": [round(x, 3) for x in t]} for door, t in times.items()}
        for door in doors:
            row[door]["ratio_to_store"] = round(row[door]["median_s"] / row["store"]["median_s"], 3)
            print(f"{est_name:9s} {door:13s} {row[door]['median_s']:8.2f} s  x{row[door]['ratio_to_store']:.3f}", flush=True)
        results["fits"][est_name] = row
    h5file.close()
    worst = max(r["ratio_to_store"] for row in results["fits"].values() for r in row.values())
    results["worst_ratio"] = worst
    results["target"] = 1.15
    print("\nratio to the store (median of warm fits)")
    print(f"{'':9s} " + " ".join(f"{d:>13s}" for d in doors))
    for est_name, row in results["fits"].items():
        print(f"{est_name:9s} " + " ".join(f"{row[d]['ratio_to_store']:13.3f}" for d in doors))
    print(f"saved {save('any_input', results)}")


if __name__ == "__main__":
    main()
