"""The KPCA-trick paper's protocol (Chatpatanasiri et al., Sec. 5.2), issue 6.

Random splits (default 40), 200 training points (100 for Iris and Glass), test on
the rest, 1-NN under the learned metric. Per learner (NCA, LMNN, DNE): the
linear learner (the KPCA trick with the linear kernel, which equals the learner
on the centred input up to rotation), and the kernelised learner with the
scaled RBF chosen by 5-fold CV over the paper's 21 sigmas, by the alignment QP,
and the unweighted sum of the 21 RBFs (target neighbours from the input space
for LMNN/DNE with the sum kernel, as the paper did). Features are z-scored with
the training split's statistics (the paper does not say; the scaled RBF assumes
comparable feature scales).

Datasets that load offline: sklearn's Iris and WDBC; with the Debian packages
r-cran-mlbench / r-cran-kernlab unpacked (``apt-get download`` + ``dpkg -x`` is
enough, no R needed) and pyreadr importable (benchmark-only, AGPL; e.g.
``pip install --target DIR pyreadr pandas`` and PYTHONPATH=DIR): Breast Cancer
(Wisconsin original, 683 complete rows), Glass, Ionosphere, Pima, Satellite and
Musk (kernlab's is Musk version 1, 476 rows; the paper used Musk2, 6598 rows).
Balance and Yeast are not available offline.

W/D/L compares the kernelised mean with the linear mean rounded to two
decimals, as the paper's tables do.

Usage:
  python benchmarks/papers/kpca_paper_protocol.py --learner dne [--splits 40] [--datasets iris,glass] [--rdata DIR]
  python benchmarks/papers/kpca_paper_protocol.py --summarize
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"
R_LIBS = ["/usr/lib/R/site-library", "/usr/share/R/library", "/tmp/rdeb/x/usr/lib/R/site-library"]

#: Paper Tables 1-3: mean accuracy (linear, CV, aligned, unweighted).
PAPER = {
    "nca": {"Balance": (0.89, 0.92, 0.92, 0.91), "Breast Cancer": (0.95, 0.97, 0.96, 0.96), "Glass": (0.61, 0.69, 0.69, 0.68),
            "Ionosphere": (0.83, 0.94, 0.92, 0.90), "Iris": (0.96, 0.96, 0.95, 0.96), "Musk2": (0.87, 0.90, 0.88, 0.87),
            "Pima": (0.68, 0.71, 0.67, 0.69), "Satellite": (0.82, 0.84, 0.84, 0.82), "Yeast": (0.47, 0.50, 0.49, 0.47)},
    "lmnn": {"Balance": (0.84, 0.87, 0.88, 0.85), "Breast Cancer": (0.95, 0.97, 0.97, 0.97), "Glass": (0.63, 0.69, 0.69, 0.66),
             "Ionosphere": (0.88, 0.95, 0.94, 0.94), "Iris": (0.95, 0.96, 0.95, 0.97), "Musk2": (0.80, 0.93, 0.88, 0.86),
             "Pima": (0.68, 0.71, 0.72, 0.67), "Satellite": (0.81, 0.85, 0.84, 0.83), "Yeast": (0.47, 0.48, 0.54, 0.50)},
    "dne": {"Balance": (0.79, 0.90, 0.83, 0.85), "Breast Cancer": (0.96, 0.97, 0.96, 0.96), "Glass": (0.65, 0.70, 0.69, 0.65),
            "Ionosphere": (0.87, 0.95, 0.95, 0.93), "Iris": (0.95, 0.97, 0.96, 0.96), "Musk2": (0.89, 0.91, 0.89, 0.84),
            "Pima": (0.67, 0.69, 0.70, 0.70), "Satellite": (0.84, 0.85, 0.85, 0.81), "Yeast": (0.40, 0.48, 0.47, 0.52)},
}
PAPER_WDL = {"cv": (26, 1, 0), "alignment": (22, 3, 2), "sum": (18, 6, 3)}
METHODS = ("linear", "cv", "alignment", "sum")

#: dataset key -> (paper name it matches or None, n_train, note)
DATASETS = {
    "iris": ("Iris", 100, "same dataset"),
    "breast_cancer_original": ("Breast Cancer", 200, "Wisconsin original (mlbench BreastCancer, 683 complete rows); the paper's version is not stated"),
    "wdbc": ("Breast Cancer", 200, "Wisconsin Diagnostic (sklearn); may differ from the paper's Breast Cancer"),
    "glass": ("Glass", 100, "same dataset"),
    "ionosphere": ("Ionosphere", 200, "same dataset"),
    "pima": ("Pima", 200, "same dataset"),
    "satellite": ("Satellite", 200, "same dataset (Statlog Landsat, 6435 rows)"),
    "musk1": ("Musk2", 200, "Musk version 1 (kernlab, 476 rows), NOT the paper's Musk2: not comparable"),
}


def _rda(name: str, rel: str, rdata: str | None):
    import pyreadr

    for base in ([rdata] if rdata else []) + R_LIBS:
        path = Path(base) / rel
        if path.is_file():
            res = pyreadr.read_r(str(path))
            return res[list(res.keys())[0]]
    raise FileNotFoundError(f"{rel} not found under {R_LIBS}; unpack r-cran-mlbench / r-cran-kernlab")


def _numeric(df):
    cols = []
    for c in df.columns:
        col = df[c]
        if str(col.dtype) == "category":
            cats = col.cat.categories
            try:
                vals = np.asarray(cats.astype(float))[col.cat.codes.to_numpy()]
                vals = np.where(col.cat.codes.to_numpy() < 0, np.nan, vals)
            except (ValueError, TypeError):
                vals = col.cat.codes.to_numpy().astype(float)
            cols.append(vals)
        else:
            cols.append(np.asarray(col, dtype=float))
    return np.column_stack(cols)


def load(key: str, rdata: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    if key == "iris":
        return datasets.load_iris(return_X_y=True)
    if key == "wdbc":
        return datasets.load_breast_cancer(return_X_y=True)
    spec = {"breast_cancer_original": ("mlbench/data/BreastCancer.rda", "Class", ["Id"]),
            "glass": ("mlbench/data/Glass.rda", "Type", []),
            "ionosphere": ("mlbench/data/Ionosphere.rda", "Class", []),
            "pima": ("mlbench/data/PimaIndiansDiabetes.rda", "diabetes", []),
            "satellite": ("mlbench/data/Satellite.rda", "classes", []),
            "musk1": ("kernlab/data/musk.rda", "Class", [])}[key]
    df = _rda(key, spec[0], rdata)
    y = np.unique(np.asarray(df[spec[1]].astype(str)), return_inverse=True)[1]
    X = _numeric(df.drop(columns=[spec[1]] + spec[2]))
    ok = np.all(np.isfinite(X), axis=1)
    return X[ok], y[ok]


def split(n: int, n_train: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.random.default_rng(seed).permutation(n)
    return idx[:n_train], idx[n_train:]


def standardize(Xtr, Xte):
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return (Xtr - mu) / sd, (Xte - mu) / sd


def model_for(learner: str, method: str, args):
    from wideml.estimators.kernel.kpca_trick import KPCATrick

    params = {"nca": {"max_iter": args.nca_iter}, "lmnn": {"n_neighbors": 3, "max_iter": args.lmnn_iter},
              "dne": {"n_neighbors": 3}}[learner]
    common = dict(learner=learner, learner_params=params, n_components=args.r, cv=args.folds, random_state=0)
    if method == "linear":
        return KPCATrick(kernel="linear", **{**common, "n_components": None})
    if method == "sum":
        return KPCATrick(selection="sum", target_space="input" if learner in ("lmnn", "dne") else "kpca", **common)
    return KPCATrick(selection=method, **common)


def run(args) -> None:
    learner = args.learner
    keys = args.datasets.split(",") if args.datasets else list(DATASETS)
    out_path = RESULTS / f"kpca_paper_protocol_{learner}{'_' + args.tag if args.tag else ''}.json"
    result = json.loads(out_path.read_text()) if out_path.exists() and args.resume else {"learner": learner, "datasets": {}}
    result["settings"] = {"splits": args.splits, "folds": args.folds, "kpca_components": args.r, "nca_max_iter": args.nca_iter,
                          "lmnn_max_iter": args.lmnn_iter, "knn": 1, "standardize": "z-score on the training split"}
    for key in keys:
        try:
            X, y = load(key, args.rdata)
        except Exception as exc:  # noqa: BLE001 - report what does not load, go on
            result["datasets"][key] = {"error": f"{type(exc).__name__}: {exc}"}
            print(key, "does not load:", exc, flush=True)
            continue
        paper_name, n_train, note = DATASETS[key]
        rec = {"paper_name": paper_name, "note": note, "n": int(len(y)), "p": int(X.shape[1]), "classes": int(y.max() + 1),
               "n_train": n_train, "acc": {m: [] for m in METHODS}, "fit_s": {m: [] for m in METHODS}}
        paper = PAPER[learner].get(paper_name)
        if paper is not None:
            rec["paper"] = dict(zip(METHODS, paper))
        for s in range(args.splits):
            tr, te = split(len(y), n_train, 1000 + s)
            Xtr, Xte = standardize(X[tr], X[te])
            for m in METHODS:
                model = model_for(learner, m, args)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(Xtr, y[tr])
                rec["fit_s"][m].append(time.perf_counter() - t0)
                rec["acc"][m].append(float(model.score(Xte, y[te])))
            print(key, learner, s, {m: round(rec["acc"][m][-1], 3) for m in METHODS}, flush=True)
        rec["mean"] = {m: float(np.mean(v)) for m, v in rec["acc"].items()}
        rec["std"] = {m: float(np.std(v)) for m, v in rec["acc"].items()}
        rec["mean_fit_s"] = {m: float(np.mean(v)) for m, v in rec["fit_s"].items()}
        result["datasets"][key] = rec
        RESULTS.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(result, indent=1))


def wdl(lin: float, ker: float) -> str:
    a, b = round(lin, 2), round(ker, 2)
    return "W" if b > a else "L" if b < a else "D"


def load_learner(learner: str) -> dict | None:
    """One learner's results, merged over the files of parallel runs (kpca_paper_protocol_<learner>[_tag].json)."""
    paths = sorted(RESULTS.glob(f"kpca_paper_protocol_{learner}.json")) + sorted(RESULTS.glob(f"kpca_paper_protocol_{learner}_*.json"))
    if not paths:
        return None
    merged = json.loads(paths[0].read_text())
    for path in paths[1:]:
        extra = json.loads(path.read_text())
        for key, rec in extra["datasets"].items():
            if "mean" in rec or key not in merged["datasets"]:
                merged["datasets"][key] = rec
    order = list(DATASETS)
    merged["datasets"] = dict(sorted(merged["datasets"].items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99))
    return merged


def summarize() -> None:
    summary = {"ours": {}, "paper_wdl": {m: dict(zip("WDL", v)) for m, v in PAPER_WDL.items()}, "tables": {}}
    totals = {m: {"W": 0, "D": 0, "L": 0} for m in ("cv", "alignment", "sum")}
    distinct = {m: {"W": 0, "D": 0, "L": 0} for m in ("cv", "alignment", "sum")}  # WDBC left out: Breast Cancer once
    times = {}
    lines = []
    for learner in ("nca", "lmnn", "dne"):
        res = load_learner(learner)
        if res is None:
            continue
        per = {m: {"W": 0, "D": 0, "L": 0} for m in ("cv", "alignment", "sum")}
        lines.append(f"\n{learner.upper()}  (splits={res['settings']['splits']}, KPCA r={res['settings']['kpca_components']})")
        lines.append(f"{'dataset':24s} " + " ".join(f"{m:>17s}" for m in METHODS) + "   paper (lin/cv/al/sum)")
        for key, rec in res["datasets"].items():
            if "mean" not in rec:
                continue
            for m in ("cv", "alignment", "sum"):
                r = wdl(rec["mean"]["linear"], rec["mean"][m])
                per[m][r] += 1
                totals[m][r] += 1
                if key != "wdbc":
                    distinct[m][r] += 1
            cells = " ".join(f"{rec['mean'][m]:.2f}±{rec['std'][m]:.2f} {wdl(rec['mean']['linear'], rec['mean'][m]) if m != 'linear' else ' '}".rjust(17)
                             for m in METHODS)
            paper = rec.get("paper")
            ptxt = "/".join(f"{paper[m]:.2f}" for m in METHODS) if paper and "not comparable" not in rec["note"] else "-"
            lines.append(f"{key:24s} {cells}   {ptxt}")
        summary["ours"][learner] = per
        lines.append("W/D/L vs linear: " + ", ".join(f"{m} {v['W']}/{v['D']}/{v['L']}" for m, v in per.items()))
        fit_s = {m: float(np.mean([r["mean_fit_s"][m] for r in res["datasets"].values() if "mean_fit_s" in r])) for m in METHODS}
        times[learner] = fit_s
        lines.append("mean fit time per split (s, incl. the one Gram pass): " + ", ".join(f"{m} {v:.2f}" for m, v in fit_s.items()))
    summary["ours"]["total"] = totals
    summary["ours"]["total_without_wdbc"] = distinct
    summary["fit_seconds"] = times
    lines.append("\nTotal W/D/L (ours, every dataset x learner): " + ", ".join(f"{m} {v['W']}/{v['D']}/{v['L']}" for m, v in totals.items()))
    lines.append("Total W/D/L (ours, Breast Cancer once: WDBC left out): " + ", ".join(f"{m} {v['W']}/{v['D']}/{v['L']}" for m, v in distinct.items()))
    lines.append("Paper (27 = 9 datasets x 3 learners): cv 26/1/0, alignment 22/3/2, sum 18/6/3")
    text = "\n".join(lines)
    summary["table_text"] = text
    (RESULTS / "kpca_paper_protocol.json").write_text(json.dumps(summary, indent=1))
    print(text)
    plot()


def plot() -> None:
    """Ours (bars) against the paper's means (black ticks) per learner, dataset and method."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    learners = [lr for lr in ("nca", "lmnn", "dne") if load_learner(lr) is not None]
    if not learners:
        return
    fig, axes = plt.subplots(len(learners), 1, figsize=(10, 2.8 * len(learners)), squeeze=False)
    colors = {"linear": "0.6", "cv": "C0", "alignment": "C1", "sum": "C2"}
    for ax, learner in zip(axes[:, 0], learners):
        res = load_learner(learner)
        keys = [k for k, r in res["datasets"].items() if "mean" in r]
        w = 0.2
        for i, m in enumerate(METHODS):
            xs = np.arange(len(keys)) + (i - 1.5) * w
            ax.bar(xs, [res["datasets"][k]["mean"][m] for k in keys], w, yerr=[res["datasets"][k]["std"][m] for k in keys],
                   color=colors[m], label=m if learner == learners[0] else None)
            for x, k in zip(xs, keys):
                rec = res["datasets"][k]
                if rec.get("paper") and "not comparable" not in rec["note"]:
                    ax.plot([x - w / 2, x + w / 2], [rec["paper"][m]] * 2, color="k", lw=1.5)
        ax.set_xticks(np.arange(len(keys)), keys, fontsize=8)
        ax.set_ylim(0.4, 1.0)
        ax.set_ylabel(f"{learner.upper()} accuracy")
    axes[0, 0].legend(ncol=4, fontsize=8, loc="lower left")
    axes[0, 0].set_title("KPCA trick, paper protocol: ours (bars, 1-NN) vs paper (black ticks)")
    fig.tight_layout()
    fig.savefig(RESULTS / "kpca_paper_protocol.png", dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learner", choices=["nca", "lmnn", "dne"])
    ap.add_argument("--splits", type=int, default=40)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--r", type=int, default=None, help="KPCA components for the kernelised learners (None: all)")
    ap.add_argument("--nca-iter", type=int, default=50)
    ap.add_argument("--lmnn-iter", type=int, default=50)
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--rdata", default=None, help="an R site-library holding mlbench/ and kernlab/")
    ap.add_argument("--resume", action="store_true", help="keep datasets already in the result file")
    ap.add_argument("--summarize", action="store_true")
    ap.add_argument("--tag", default="", help="suffix of the result file, to run dataset groups in parallel processes")
    args = ap.parse_args()
    if args.summarize:
        summarize()
        return
    if not args.learner:
        ap.error("--learner is required unless --summarize")
    run(args)


if __name__ == "__main__":
    main()
