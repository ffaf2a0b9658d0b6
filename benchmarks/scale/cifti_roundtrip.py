"""CIFTI-2 round trip at fsLR 32k size: dscalar folder -> ingest -> LOL fit -> maps -> read back; time and peak RSS per step.

The synthetic brain-model axis has the real HCP layout's counts: 29 696 left and
29 716 right cortex vertices (of 32 492 each) and 31 870 voxels on the 2 mm MNI
grid (91 x 109 x 91), 91 282 grayordinates in all. ``--n`` files
``sub-XXXX.dscalar.nii`` of one map each (float32) carry a class effect on 1 %
of the grayordinates. Each wideml step is one CLI command run under
``/usr/bin/time -v`` (peak RSS of that process); the read-back step (in this
process) loads every written ``.dscalar.nii`` with nibabel and checks that its
brain-model axis equals the input's and its values equal the exact ``.npy`` map
(as float32). nilearn bundles no fsLR mesh, so no surface PNG is drawn (the
maps' ``<name>.png`` shows values against the grayordinate index).

Usage::

    .venv/bin/python benchmarks/scale/cifti_roundtrip.py --work /tmp/cifti_rt [--n 200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save, self_peak_rss  # noqa: E402
from neuro_pipeline import run_step  # noqa: E402

LEFT, RIGHT, NVERT, VOXELS, GRID = 29696, 29716, 32492, 31870, (91, 109, 91)
MNI2 = np.array([[-2.0, 0, 0, 90], [0, 2.0, 0, -126], [0, 0, 2.0, -72], [0, 0, 0, 1]])


def fslr_axis(nib):
    """A BrainModelAxis of 91 282 grayordinates: two cortical surfaces, then 31 870 voxels in a central box."""
    rng = np.random.default_rng(0)
    bm = nib.cifti2.BrainModelAxis
    left = bm.from_surface(np.sort(rng.choice(NVERT, LEFT, replace=False)), NVERT, "CortexLeft")
    right = bm.from_surface(np.sort(rng.choice(NVERT, RIGHT, replace=False)), NVERT, "CortexRight")
    mask = np.zeros(GRID, bool)
    flat = np.flatnonzero(np.ones((30, 40, 30), bool))[:VOXELS]
    i, j, k = np.unravel_index(flat, (30, 40, 30))
    mask[i + 30, j + 35, k + 25] = True
    return left + right + bm.from_mask(mask, "brain_stem", MNI2)


def write_folder(nib, folder: Path, n: int, effect: float) -> tuple[object, Path]:
    axis = fslr_axis(nib)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    planted = rng.choice(len(axis), len(axis) // 100, replace=False)
    labels = []
    for s in range(n):
        y = s % 2
        data = rng.standard_normal((1, len(axis))).astype(np.float32)
        data[0, planted] += effect * y
        img = nib.Cifti2Image(data, header=(nib.cifti2.ScalarAxis([f"sub-{s:04d}"]), axis))
        img.nifti_header.set_intent("ConnDenseScalar")
        img.to_filename(str(folder / f"sub-{s:04d}.dscalar.nii"))
        labels.append(f"sub-{s:04d}.dscalar.nii,{'patient' if y else 'control'}")
    labels_file = folder.parent / "labels.csv"
    labels_file.write_text("file,label\n" + "\n".join(labels) + "\n")
    return axis, labels_file


def main(argv=None) -> dict:
    import nibabel as nib

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="folder for the files, store, model, maps and logs (replaced)")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--effect", type=float, default=0.5)
    ap.add_argument("--memory-limit", default="1GiB")
    args = ap.parse_args(argv)
    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    axis, labels = write_folder(nib, work / "cifti", args.n, args.effect)
    generate = round(time.perf_counter() - t0, 2)
    store, model, maps = work / "store.zarr", work / "model", work / "maps"
    budget = ["--memory-limit", args.memory_limit]
    steps = [
        run_step("ingest", ["ingest", *budget, str(work / "cifti"), "--labels", str(labels), "-o", str(store), "--no-progress"],
                 work / "ingest.log"),
        run_step("fit", ["fit", "lol", *budget, str(store), "--n-components", "2", "-o", str(model), "--no-progress"], work / "fit.log"),
        run_step("maps", ["maps", *budget, str(model), "-o", str(maps), "--no-progress"], work / "maps.log"),
    ]
    t0 = time.perf_counter()
    checked = {}
    for path in sorted(maps.glob("*.dscalar.nii")):
        img = nib.load(str(path))
        same_axis = img.header.get_axis(1) == axis
        exact = np.load(maps / path.name.replace(".dscalar.nii", ".npy")).astype(np.float32)
        checked[path.name] = {"same_axis": bool(same_axis), "values_equal": bool(np.array_equal(img.get_fdata()[0], exact))}
    readback = {"step": "read back", "seconds": round(time.perf_counter() - t0, 2),
                "peak_rss_mib": round(self_peak_rss() / 2**20, 1), "note": "in the benchmark process (includes writing the files)"}
    result = {"n_samples": args.n, "n_grayordinates": len(axis), "layout": {"cortex_left": LEFT, "cortex_right": RIGHT,
              "voxels": VOXELS, "nvertices": NVERT}, "memory_limit": args.memory_limit, "generate_seconds": generate,
              "input_bytes": sum(f.stat().st_size for f in (work / "cifti").iterdir()),
              "steps": steps + [readback], "maps_checked": checked,
              "all_round_trips_exact": bool(checked) and all(v["same_axis"] and v["values_equal"] for v in checked.values()),
              "maps_files": sorted(p.name for p in maps.iterdir()) if maps.exists() else None}
    path = save("cifti_roundtrip", result)
    print(json.dumps({k: result[k] for k in ("steps", "all_round_trips_exact")}, indent=2))
    print(path)
    return result


if __name__ == "__main__":
    main()
