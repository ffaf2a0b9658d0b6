"""Simulated subjects in the MNI152 brain mask as NIfTI files, for the neuroimaging pipeline benchmark.

Writes into OUT::

    scans/sub-0001_sim.nii.gz ...   one 3-D volume per subject (int16 with scl_slope, gzip)
    participants.tsv                participant_id, group (control/patient, alternating)
    brain_mask.nii.gz               the MNI152 brain mask (nilearn, offline) at --resolution mm
    truth_regions.nii.gz            the voxels carrying the class effect
    truth.json                      parameters, region centres, voxel counts, timings and sizes

Each subject is smooth unit-variance noise (Gaussian filter, sd --sigma-mm) around a
baseline of 100 inside the mask, plus --effect (in noise sds) in the regions for the
patients (``wideml.sims.brain``). Subjects are generated one at a time (memory: a few
grid-sized arrays).

Usage::

    .venv/bin/python benchmarks/scale/neuro_sim.py --n 400 --resolution 1 -o /tmp/neuro400
    .venv/bin/python benchmarks/scale/neuro_sim.py --n 60 --resolution 2 -o /tmp/neuro_quick
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def mni_mask(resolution: int):
    """The MNI152 brain mask (bool array) and its affine, from nilearn's offline template."""
    from nilearn.datasets import load_mni152_brain_mask

    img = load_mni152_brain_mask(resolution=resolution)
    return np.asarray(img.dataobj) > 0, np.asarray(img.affine, dtype=np.float64)


def save_volume(nib, data: np.ndarray, affine: np.ndarray, path: Path, dtype) -> None:
    img = nib.Nifti1Image(data, affine)
    img.header.set_xyzt_units("mm", "sec")
    img.set_qform(affine, code=4)  # MNI space
    img.set_sform(affine, code=4)
    img.set_data_dtype(dtype)
    nib.save(img, str(path))


def main(argv=None) -> dict:
    import nibabel as nib

    from wideml.sims.brain import DEFAULT_CENTRES_MM, BrainSimulation, spheres

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400, help="number of subjects (default 400)")
    ap.add_argument("--resolution", type=int, choices=(1, 2), default=1, help="MNI mask resolution in mm (default 1)")
    ap.add_argument("--effect", type=float, default=0.5, help="group difference in the regions, in noise sds")
    ap.add_argument("--sigma-mm", type=float, default=4.0, help="sd of the Gaussian smoothing of the noise (mm)")
    ap.add_argument("--radius-mm", type=float, default=8.0, help="radius of each effect sphere (mm)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=("int16", "float32"), default="int16", help="on-disk dtype (int16 uses scl_slope)")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)

    out = Path(args.output)
    scans = out / "scans"
    scans.mkdir(parents=True, exist_ok=False)
    mask, affine = mni_mask(args.resolution)
    regions = spheres(mask, affine, DEFAULT_CENTRES_MM, args.radius_mm)
    sim = BrainSimulation(mask, affine, regions, effect=args.effect, sigma_mm=args.sigma_mm, seed=args.seed)
    save_volume(nib, mask.astype(np.uint8), affine, out / "brain_mask.nii.gz", np.uint8)
    save_volume(nib, regions.astype(np.uint8), affine, out / "truth_regions.nii.gz", np.uint8)
    groups = sim.group(args.n)
    names = np.array(["control", "patient"])
    rows = []
    t0 = time.perf_counter()
    for s in range(args.n):
        pid = f"sub-{s + 1:04d}"
        save_volume(nib, sim.subject(s, int(groups[s])), affine, scans / f"{pid}_sim.nii.gz", np.dtype(args.dtype))
        rows.append(f"{pid}\t{names[groups[s]]}\n")
        if (s + 1) % 25 == 0:
            print(f"  {s + 1}/{args.n} subjects, {time.perf_counter() - t0:.0f} s", flush=True)
    elapsed = time.perf_counter() - t0
    (out / "participants.tsv").write_text("participant_id\tgroup\n" + "".join(rows))
    size = sum(f.stat().st_size for f in scans.iterdir())
    truth = {
        "n": args.n, "resolution_mm": args.resolution, "grid": list(mask.shape), "mask_voxels": int(mask.sum()),
        "region_voxels": int(regions.sum()), "centres_mm": [list(c) for c in DEFAULT_CENTRES_MM],
        "radius_mm": args.radius_mm, "effect_sd": args.effect, "sigma_mm": args.sigma_mm, "seed": args.seed,
        "dtype": args.dtype, "seconds": round(elapsed, 1), "seconds_per_subject": round(elapsed / args.n, 3),
        "bytes_on_disk": size, "bytes_per_subject": size // args.n,
        "bytes_float32_uncompressed_per_subject": int(np.prod(mask.shape)) * 4,
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=2))
    print(json.dumps(truth, indent=2))
    return truth


if __name__ == "__main__":
    main()
