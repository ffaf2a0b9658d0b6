"""nilearn's Decoder against wideml LOL+LDA cross-validation on the same masked scans and the same folds.

The tool a neuroimaging user would pick instead of wideml is ``nilearn.decoding.Decoder``
(ANOVA screening of the voxels, ``screening_percentile=20`` by default, then a linear
SVC or l2 logistic regression whose C is chosen by an inner CV). Both sides get the same
NIfTI files (a folder written by ``neuro_sim.py``), the same brain mask and the same
5 stratified shuffled folds. Each method runs as its own subprocess under
``/usr/bin/time -v`` (wall time and peak RSS of the whole run, loading included):

- ``decoder-svc``, ``decoder-logistic_l2``: ``Decoder(mask=..., cv=folds).fit(files, y)``;
  accuracy = mean over folds of ``cv_scores_``.
- ``wideml-store``: ``wideml.ingest(folder, mask=...)`` into a zarr store, then
  ``cross_validate_dims({"lol": LOL(n_components=d_max)}, store, cv=folds)`` (one pass).
- ``wideml-memory``: ``wideml.images_to_array(files, mask)`` then the same CV on the array.

wideml's accuracy is given at d = 1 (no selection) and at the best d (chosen on the same
folds, so slightly optimistic; the Decoder's C is chosen by nested CV).

Usage::

    .venv/bin/python benchmarks/scale/nilearn_decoder.py /tmp/neuro400_2mm [--n-max 400]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save  # noqa: E402

FOLDS, SEED, D_MAX = 5, 0, 10


def load(data: Path, n_max: int | None):
    files = sorted(str(p) for p in (data / "scans").glob("sub-*.nii*"))
    groups = dict(line.split("\t") for line in (data / "participants.tsv").read_text().splitlines()[1:])
    y = np.array([groups[Path(f).name.split("_")[0]].strip() for f in files])
    if n_max:
        files, y = files[:n_max], y[:n_max]
    return files, y


def folds():
    from sklearn.model_selection import StratifiedKFold

    return StratifiedKFold(FOLDS, shuffle=True, random_state=SEED)


def run_method(method: str, data: Path, n_max: int | None) -> dict:
    """One method in this process (called in a child); returns accuracy and the time of the fit/CV."""
    files, y = load(data, n_max)
    mask = str(data / "brain_mask.nii.gz")
    t0 = time.perf_counter()
    if method.startswith("decoder-"):
        from nilearn.decoding import Decoder

        dec = Decoder(estimator=method.split("-", 1)[1], mask=mask, cv=folds(), standardize="zscore_sample",
                      scoring="accuracy", n_jobs=1)
        dec.fit(files, y)
        scores = np.asarray(next(iter(dec.cv_scores_.values())), dtype=float)
        return {"accuracy": float(scores.mean()), "accuracy_sd": float(scores.std()), "fold_accuracy": scores.tolist(),
                "seconds_inside": time.perf_counter() - t0, "screening_percentile": dec.screening_percentile}
    import wideml

    if method == "wideml-store":
        with tempfile.TemporaryDirectory(dir=str(data.parent)) as tmp:
            scans = Path(tmp) / "scans"
            scans.mkdir()
            for f in files:
                (scans / Path(f).name).symlink_to(f)
            wideml.ingest(str(scans), str(Path(tmp) / "s.zarr"), labels=str(data / "participants.tsv"),
                          label_column="group", mask=mask)
            t_ingest = time.perf_counter() - t0
            store = wideml.open_store(str(Path(tmp) / "s.zarr"))
            report = wideml.cross_validate_dims({"lol": wideml.LOL(n_components=D_MAX)}, store, cv=folds())
    else:
        X, _ = wideml.images_to_array(files, mask=mask)
        t_ingest = time.perf_counter() - t0
        report = wideml.cross_validate_dims({"lol": wideml.LOL(n_components=D_MAX)}, X, y, cv=folds())
    r = report.results["lol"]
    return {"accuracy_d1": 1 - float(r.errors[0]), "accuracy_best_d": 1 - float(r.best_error), "best_d": int(r.best_dim),
            "accuracy_sd_d1": float(r.stds[0]), "seconds_inside": time.perf_counter() - t0,
            "seconds_load_or_ingest": t_ingest, "n_passes": report.n_passes}


def measured(method: str, data: Path, n_max: int | None) -> dict:
    """Run ``method`` in a child under /usr/bin/time -v: its result, wall time and peak RSS."""
    cmd = ["/usr/bin/time", "-v", sys.executable, __file__, str(data), "--child", method] + (["--n-max", str(n_max)] if n_max else [])
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    out = {"method": method, "seconds": round(wall, 1), "peak_rss_mib": round(int(found.group(1)) / 1024, 1) if found else None,
           "exit": proc.returncode}
    if proc.returncode == 0:
        out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    else:
        out["stderr_tail"] = proc.stderr[-1500:]
    print(json.dumps(out), flush=True)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="folder written by neuro_sim.py")
    ap.add_argument("--n-max", type=int, default=None, help="use the first N subjects only")
    ap.add_argument("--methods", default="wideml-store,wideml-memory,decoder-svc,decoder-logistic_l2")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--name", default=None)
    args = ap.parse_args(argv)
    data = Path(args.data).resolve()
    if args.child:
        print(json.dumps(run_method(args.child, data, args.n_max), default=float))
        return {}
    truth = json.loads((data / "truth.json").read_text())
    files, _ = load(data, args.n_max)
    runs = [measured(m.strip(), data, args.n_max) for m in args.methods.split(",") if m.strip()]
    by = {r["method"]: r for r in runs}
    ratios = {}
    for dec in ("decoder-svc", "decoder-logistic_l2"):
        for ours in ("wideml-store", "wideml-memory"):
            if by.get(dec, {}).get("exit") == 0 and by.get(ours, {}).get("exit") == 0:
                ratios[f"{dec}/{ours} time"] = round(by[dec]["seconds"] / by[ours]["seconds"], 2)
    result = {"data": truth, "n_used": len(files), "folds": FOLDS, "seed": SEED, "d_max": D_MAX, "runs": runs,
              "time_ratios_same_run": ratios}
    name = args.name or f"nilearn_decoder_n{len(files)}_{truth['resolution_mm']}mm"
    print(json.dumps({"n_used": len(files), "ratios": ratios}, indent=2))
    print(f"saved {save(name, result)}")
    return result


if __name__ == "__main__":
    main()
