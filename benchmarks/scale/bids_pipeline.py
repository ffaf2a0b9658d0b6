"""BIDS derivatives in wideml: the walker's indexing time, and ingest → cv → fit → maps on an fMRIPrep-like tree beside nilearn.

Two measurements, written to ``benchmarks/results/bids_pipeline.json``:

(a) **Indexing.** A synthetic fMRIPrep-like tree of 1 000 subjects x 2
    sessions with empty files (per session: anat T1w in two spaces with masks,
    dseg/probseg maps and JSON sidecars; func two tasks x two runs in two
    spaces with masks, boldrefs, sidecars and confounds TSVs): the time of
    wideml's walk (``sub-*``/``ses-*``/datatype folders, names parsed by hand),
    the selection, the samples and the mask matching, i.e. everything the
    BIDS source does before reading a NIfTI header. (pybids is not installed;
    its indexing of 100 fMRIPrep subjects is reported at about 45 minutes in
    bids-standard/pybids#970.)

(b) **Pipeline.** A synthetic fMRIPrep-like tree of ``--subjects`` (default
    200) subjects x 2 sessions on the 2 mm MNI grid (91 x 109 x 91, the
    MNI152 brain mask from nilearn's offline template resampled onto it),
    each session a ``space-MNI152NLin6Asym_desc-preproc_T1w.nii`` (float32,
    uncompressed) with its own ``desc-brain_mask`` (the template minus a random 2 %
    of its edge voxels); values: a subject effect shared by both sessions, session noise,
    and +``--effect`` SD in two spheres for the ``patient`` group. Each step
    runs as its own process under ``/usr/bin/time -v`` (wall time, peak RSS):
    ``wideml ingest --average sessions`` (one sample per subject, the brain
    masks intersected), ``wideml cv`` (LOL, 5 folds), ``wideml fit lol``,
    ``wideml maps``; beside it nilearn's ``Decoder`` (linear SVC, ANOVA
    screening 20 %, the same 5 stratified folds, the same intersected mask,
    the same per-subject means computed with ``nilearn.image.mean_img``).

Usage::

    .venv/bin/python benchmarks/scale/bids_pipeline.py [--subjects 200] [--work /tmp/bidsbench]
    .venv/bin/python benchmarks/scale/bids_pipeline.py make-tree -o ds --subjects 20 --grid small   # README walk-through
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save  # noqa: E402

SPACE = "MNI152NLin6Asym"
MNI2 = np.array([[-2.0, 0, 0, 90], [0, 2, 0, -126], [0, 0, 2, -72], [0, 0, 0, 1]])
GRID2 = (91, 109, 91)
FOLDS, SEED = 5, 0
WIDEML = str(Path(sys.executable).with_name("wideml"))


# ---------------------------------------------------------------- (a) indexing

def empty_tree(root: Path, n_subjects: int) -> int:
    """An fMRIPrep-like tree of empty files; returns the number of files."""
    root.mkdir(parents=True)
    (root / "dataset_description.json").write_text('{"Name": "x", "DatasetType": "derivative"}')
    count = 0
    for i in range(n_subjects):
        sub = f"sub-{i:04d}"
        (root / f"{sub}.html").touch()
        for ses in ("1", "2"):
            names = {"anat": [], "func": []}
            for space in ("MNI152NLin2009cAsym", SPACE):
                names["anat"] += [f"space-{space}_desc-preproc_T1w.nii.gz", f"space-{space}_desc-preproc_T1w.json",
                                  f"space-{space}_desc-brain_mask.nii.gz", f"space-{space}_dseg.nii.gz",
                                  *(f"space-{space}_label-{t}_probseg.nii.gz" for t in ("GM", "WM", "CSF"))]
                for task in ("rest", "nback"):
                    for run in ("1", "2"):
                        stem = f"task-{task}_run-{run}_space-{space}"
                        names["func"] += [f"{stem}_desc-preproc_bold.nii.gz", f"{stem}_desc-preproc_bold.json",
                                          f"{stem}_desc-brain_mask.nii.gz", f"{stem}_boldref.nii.gz"]
            names["func"] += [f"task-{t}_run-{r}_desc-confounds_timeseries.tsv" for t in ("rest", "nback") for r in ("1", "2")]
            for datatype, files in names.items():
                folder = root / sub / f"ses-{ses}" / datatype
                folder.mkdir(parents=True)
                for name in files:
                    (folder / f"{sub}_ses-{ses}_{name}").touch()
                count += len(files)
    return count


def indexing(work: Path, n_subjects: int = 1000) -> dict:
    from wideml.sources.bids import _walk, dataset_root
    from wideml.sources.bids_masks import scan_masks
    from wideml.sources.bids_query import as_query, plan_samples, select

    root = work / "index_tree"
    t0 = time.perf_counter()
    n_files = empty_tree(root, n_subjects)
    made = time.perf_counter() - t0
    times = {}
    for label, query in (("anat T1w", {"space": SPACE, "desc": "preproc", "suffix": "T1w"}),
                         ("func bold, task rest", {"space": SPACE, "desc": "preproc", "suffix": "bold", "filters": {"task": "rest"}})):
        q = as_query(query)
        t = [time.perf_counter()]
        ds = dataset_root(root, None)
        everything = _walk(ds, q)
        t.append(time.perf_counter())
        chosen = select(everything, q, "bench")
        ids, groups = plan_samples(chosen, None)
        t.append(time.perf_counter())
        scan_masks([g[0] for g in groups], everything)
        t.append(time.perf_counter())
        times[label] = {"samples": len(ids), "nifti_files_walked": len(everything), "seconds_walk": round(t[1] - t[0], 3),
                        "seconds_select_and_samples": round(t[2] - t[1], 3), "seconds_mask_matching": round(t[3] - t[2], 3),
                        "seconds_total": round(t[3] - t[0], 3)}
        print(label, times[label], flush=True)
    shutil.rmtree(root)
    return {"subjects": n_subjects, "sessions": 2, "files_in_tree": n_files, "seconds_to_create_tree": round(made, 1), "queries": times}


# ---------------------------------------------------------------- (b) pipeline

def template(grid: str):
    """Brain mask (bool) and affine: nilearn's MNI152 mask on the 2 mm 91x109x91 grid, or a small ellipsoid grid."""
    if grid == "small":
        shape, aff = (20, 24, 20), np.diag([4.0, 4.0, 4.0, 1.0])
        ijk = np.indices(shape).astype(float)
        c = (np.array(shape) - 1) / 2
        mask = (((ijk - c[:, None, None, None]) / (c[:, None, None, None] * 0.9)) ** 2).sum(0) <= 1
        return mask, aff
    from nilearn.datasets import load_mni152_brain_mask
    from nilearn.image import resample_img

    img = resample_img(load_mni152_brain_mask(resolution=2), target_affine=MNI2, target_shape=GRID2, interpolation="nearest",
                       force_resample=True, copy_header=True)
    return np.asarray(img.dataobj) > 0, MNI2


def spheres(mask: np.ndarray, aff: np.ndarray) -> np.ndarray:
    """Two spheres of radius 8 mm (two voxels on the small grid) inside the mask: the planted effect."""
    ijk = np.indices(mask.shape).reshape(3, -1).T
    inside = ijk[mask.ravel()]
    centre = inside.mean(0)
    radius = 8.0 / abs(aff[0, 0])
    out = np.zeros(mask.shape, bool)
    for shift in (-0.25, 0.25):
        c = centre + np.array([shift * mask.shape[0], 0, 0])
        out |= (((np.indices(mask.shape) - c[:, None, None, None]) ** 2).sum(0) <= radius**2)
    return out & mask


def make_tree(out: Path, n_subjects: int, grid: str = "mni2", effect: float = 0.5, seed: int = SEED) -> dict:
    """The fMRIPrep-like tree of (b) (or a small one for the README); returns its truth."""
    import nibabel as nib
    from scipy.ndimage import binary_erosion

    rng = np.random.default_rng(seed)
    mask, aff = template(grid)
    edge = np.argwhere(mask & ~binary_erosion(mask))
    region = spheres(mask, aff)
    deriv = out / "derivatives" / "fmriprep"
    deriv.mkdir(parents=True)
    (out / "dataset_description.json").write_text(json.dumps({"Name": "synthetic", "BIDSVersion": "1.8.0"}))
    (deriv / "dataset_description.json").write_text(json.dumps({"Name": "fMRIPrep-like", "DatasetType": "derivative"}))
    groups = np.array(["control", "patient"])[rng.permutation(np.arange(n_subjects) % 2)]
    (out / "participants.tsv").write_text("participant_id\tage\tgroup\n" + "".join(
        f"sub-{i:03d}\t{20 + i % 50}\t{g}\n" for i, g in enumerate(groups)))
    ext = ".nii.gz" if grid == "small" else ".nii"
    for i, g in enumerate(groups):
        subject = rng.standard_normal(mask.shape).astype(np.float32) * 0.7
        for ses in ("1", "2"):
            folder = deriv / f"sub-{i:03d}" / f"ses-{ses}" / "anat"
            folder.mkdir(parents=True)
            stem = folder / f"sub-{i:03d}_ses-{ses}_space-{SPACE}"
            vol = subject + rng.standard_normal(mask.shape).astype(np.float32) * 0.7 + 10.0
            if g == "patient":
                vol[region] += effect
            vol[~mask] = 0
            img = nib.Nifti1Image(vol, aff)
            img.header.set_xyzt_units("mm", "sec")
            nib.save(img, f"{stem}_desc-preproc_T1w{ext}")
            own = mask.copy()
            drop = edge[rng.random(len(edge)) < 0.02]
            own[tuple(drop.T)] = False
            nib.save(nib.Nifti1Image(own.astype(np.uint8), aff), f"{stem}_desc-brain_mask.nii.gz")
            (folder / f"sub-{i:03d}_ses-{ses}_space-{SPACE}_desc-preproc_T1w.json").write_text("{}")
            if grid == "small":  # a second space beside it, as fMRIPrep writes with two --output-spaces
                other = folder / f"sub-{i:03d}_ses-{ses}_space-MNI152NLin2009cAsym"
                nib.save(img, f"{other}_desc-preproc_T1w{ext}")
                nib.save(nib.Nifti1Image(own.astype(np.uint8), aff), f"{other}_desc-brain_mask.nii.gz")
    nib.save(nib.Nifti1Image(region.astype(np.uint8), aff), str(out / "truth_regions.nii.gz"))
    return {"subjects": n_subjects, "sessions": 2, "grid": list(mask.shape), "voxels_in_template_mask": int(mask.sum()),
            "effect_sd": effect, "effect_voxels": int(region.sum()), "extension": ext}


def timed(name: str, cmd: list[str]) -> dict:
    """Run ``cmd`` under /usr/bin/time -v: wall time, peak RSS, exit status."""
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    out = {"step": name, "seconds": round(wall, 1), "peak_rss_mib": round(int(found.group(1)) / 1024, 1) if found else None,
           "exit": proc.returncode}
    if proc.returncode != 0:
        out["stderr_tail"] = proc.stderr[-1500:]
    print(json.dumps(out), flush=True)
    if proc.returncode == 0 and proc.stdout.strip().startswith("{"):
        out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def nilearn_child(ds: Path, mask: Path) -> dict:
    """In a child: per-subject means of the two sessions (nilearn.image.mean_img), then Decoder with 5 folds."""
    from nilearn.decoding import Decoder
    from nilearn.image import mean_img
    from sklearn.model_selection import StratifiedKFold

    t0 = time.perf_counter()
    rows = dict(line.split("\t")[0::2] for line in (ds / "participants.tsv").read_text().splitlines()[1:])
    deriv = ds / "derivatives" / "fmriprep"
    subjects = sorted(rows)
    imgs = [mean_img(sorted(str(p) for p in (deriv / s).glob("ses-*/anat/*_desc-preproc_T1w.nii*")), copy_header=True)
            for s in subjects]
    y = np.array([rows[s] for s in subjects])
    t_mean = time.perf_counter() - t0
    dec = Decoder(estimator="svc", mask=str(mask), cv=StratifiedKFold(FOLDS, shuffle=True, random_state=SEED),
                  standardize="zscore_sample", scoring="accuracy", n_jobs=1)
    dec.fit(imgs, y)
    scores = np.asarray(next(iter(dec.cv_scores_.values())), dtype=float)
    return {"accuracy": float(scores.mean()), "accuracy_sd": float(scores.std()), "seconds_mean_img": round(t_mean, 1),
            "screening_percentile": dec.screening_percentile}


def top_in_truth(maps_dir: Path, truth: Path, top: int = 1000) -> float:
    import nibabel as nib

    values = np.abs(np.asarray(nib.load(str(maps_dir / "mean_difference.nii.gz")).dataobj))
    region = np.asarray(nib.load(str(truth)).dataobj) > 0
    idx = np.argsort(values.ravel())[::-1][:top]
    return float(region.ravel()[idx].mean())


def pipeline(work: Path, n_subjects: int, effect: float) -> dict:
    import nibabel as nib

    ds = work / "ds"
    t0 = time.perf_counter()
    truth = make_tree(ds, n_subjects, "mni2", effect)
    truth["seconds_to_generate"] = round(time.perf_counter() - t0, 1)
    print("tree", truth, flush=True)
    store, model, maps = work / "s.zarr", work / "m.model", work / "maps"
    common = ["--no-progress"]
    steps = [timed("wideml ingest --average sessions", [WIDEML, "ingest", str(ds), "--derivatives", "fmriprep", "--space", SPACE,
                                                        "--desc", "preproc", "--suffix", "T1w", "--average", "sessions",
                                                        "--label-column", "group", "-o", str(store), *common])]
    steps.append(timed("wideml cv lol", [WIDEML, "cv", str(store), "--methods", "lol", "--max-dim", "10", "--folds", str(FOLDS),
                                         "-o", str(work / "cv.json"), *common]))
    steps.append(timed("wideml fit lol", [WIDEML, "fit", "lol", str(store), "--n-components", "2", "-o", str(model), *common]))
    steps.append(timed("wideml maps", [WIDEML, "maps", str(model), "-o", str(maps), *common]))
    import wideml

    st = wideml.open_store(str(store))
    mask_file = work / "intersection_mask.nii.gz"
    nib.save(nib.Nifti1Image(st.spatial.mask.astype(np.uint8), st.spatial.affine), str(mask_file))
    steps.append(timed("nilearn mean_img + Decoder(svc)", [sys.executable, __file__, "nilearn-child", str(ds), str(mask_file)]))
    cv = json.loads((work / "cv.json").read_text())
    wideml_total = sum(s["seconds"] for s in steps[:4])
    return {"tree": truth, "store": {"shape": list(st.X.shape), "voxels_in_intersection": int(st.spatial.mask.sum())},
            "steps": steps, "wideml_cv_report": _cv_summary(cv),
            "mean_difference_top1000_in_truth": top_in_truth(maps, ds / "truth_regions.nii.gz"),
            "wideml_total_seconds": round(wideml_total, 1),
            "wideml_peak_rss_mib": max(s["peak_rss_mib"] or 0 for s in steps[:4])}


def _cv_summary(cv: dict) -> dict:
    """LOL's cross-validated accuracy at d = 1 and at the best d (chosen on the same folds, so slightly optimistic)."""
    r = cv["results"]["lol"]
    errors = np.asarray(r["errors"], dtype=float)
    return {"accuracy_d1": round(1 - float(errors[0]), 3), "accuracy_best_d": round(1 - float(errors.min()), 3),
            "best_d": int(r["dims"][int(errors.argmin())]), "n_passes": cv.get("n_passes")}


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "nilearn-child":
        print(json.dumps(nilearn_child(Path(argv[1]), Path(argv[2]))))
        return {}
    if argv and argv[0] == "make-tree":
        ap = argparse.ArgumentParser(prog="bids_pipeline.py make-tree")
        ap.add_argument("-o", "--output", required=True)
        ap.add_argument("--subjects", type=int, default=20)
        ap.add_argument("--grid", choices=("small", "mni2"), default="small")
        ap.add_argument("--effect", type=float, default=1.0)
        a = ap.parse_args(argv[1:])
        print(json.dumps(make_tree(Path(a.output), a.subjects, a.grid, a.effect)))
        return {}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=200)
    ap.add_argument("--index-subjects", type=int, default=1000)
    ap.add_argument("--effect", type=float, default=0.5)
    ap.add_argument("--work", default="/tmp/wideml_bids_bench")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    work = Path(args.work)
    if work.exists():
        sys.exit(f"{work} exists; give a --work folder that does not exist yet (it is removed at the end unless --keep).")
    work.mkdir(parents=True)
    try:
        result = {"indexing": indexing(work, args.index_subjects), "pipeline": pipeline(work, args.subjects, args.effect)}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"saved {save('bids_pipeline', result)}")
    return result


if __name__ == "__main__":
    main()
