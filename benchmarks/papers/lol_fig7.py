"""Reproduce the LOL paper's Figure 7 (A, B: testing power against eigenvalue decay; C: regression error against d).

Protocol, from the paper's Methods and the authors' MATLAB code for the figure (neurodata/LOL-paper:
``run_power_sims.m``, ``run_hotelling_sims.m``, ``Hotelling.m``, ``set_parameters.m``, ``run_regression_sims.m``,
``sample_regress.m``, ``Plot_regression_power.m``), which gives what the Methods leave out:

A/B  Two Gaussian groups, n = 100 samples (group sizes random, priors 1/2), p = 200 features; μ_0 = 0, μ_1 a
     random unit vector; Σ with eigenvalues ∝ linspace(0.01, 1, p)^b, ‖Σ‖_F = 50, diagonal (A,
     ``decay-diagonal``) or with Haar eigenvectors (B, ``decay-dense``); b the decay rate, on the authors' grid
     5, 15, 20, 25, 30, 35, 40, 50, 100, 250, 1000 (the authors': 1, 5, 10, 15, 20, 25, 50, 100,
     250, 500; panel A's axis runs to 50, B's to 1000; at n = 100, p = 200 every method is at the level below
     b = 15 and at power 1 from b = 50, so the grid is dense in between). Project with LOL (class means), PCA, RP, LFL, then
     Hotelling's T²; power = share of p < 0.05. Every test goes through ``wideml.two_sample_test``:
     * ``split`` (wideml's default, the main curves): the projection is learned on a stratified half, T² and the
       exact F-test on the other half; d = 25 (half of the tested half; the authors used d = n/2 = 50 with all n
       samples tested, which a split cannot give: the tested half has 50 samples);
     * ``permutation`` (the authors' protocol: d = 50, the projection re-learned under each of 100 relabellings):
       on a subset of decay rates with fewer repetitions (time; the authors ran 500 repetitions per rate). The
       saved JSON was made in two runs: 20, 30, 40, 50, 250 with the rest, then 1, 5, 10, 15 with
       ``--add-perm-decays 1,5,10,15`` (using all 100 samples, power saturates earlier than the split's).
C    x ~ N(0, Σ), Σ_ij = 0.99^|i-j| (Toeplitz), p = 1000; y = βᵀx + 4 ε with 100 non-zero Uniform(0, 1)
     coefficients at random features (``wideml.sims.sparse_regression``); n_train = 100, n_test = 500, 50
     repetitions; d on the authors' grid round(logspace(0, log10(90), 30)). LOLRegressor (10 percentile bins,
     class means as in the authors' code; the default medians shown too), PLS (scikit-learn PLSRegression with d
     components; the authors drew PLS with 1 component as a flat line), Lasso (scikit-learn lasso_path, 30
     penalties as the authors' MATLAB ``lasso(..., 'NumLambda', 30)``, drawn against its mean number of non-zero
     coefficients). Error = mean squared error on the test samples (the authors summed over their 500 test
     samples: their axis is ours plus log10(500) = 2.7).

Type-I error: the decay-diagonal data (b = 5) with the group labels randomly permuted (so the null holds
exactly), every projection, both test methods, at α = 0.05 and 0.01, with exact binomial 95% intervals.

Repetitions are scaled down for time (about 25 minutes on a shared 2-core machine): 50 per decay rate for the split
test and 10 for the permutation test, against the authors' 500.

Usage: python benchmarks/papers/lol_fig7.py [--trials 50] [--perm-trials 10] [--null-trials 500]
       [--null-perm-trials 200] [--reg-trials 50] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import RESULTS, save  # noqa: E402

ALPHA = 0.05
METHODS = {"LOL": "lol", "PCA": "pca", "RP": "rp", "LFL": "lfl"}
COLORS = {"LOL": "tab:green", "PCA": "tab:purple", "RP": "tab:orange", "LFL": "tab:olive", "LOL (medians)": "tab:green",
          "PLS": "black", "Lasso": "tab:cyan"}
DECAYS = [5, 15, 20, 25, 30, 35, 40, 50, 100, 250, 1000]
PERM_DECAYS = [1, 5, 10, 15, 20, 30, 40, 50, 250]
SETTINGS = {"A": "decay-diagonal", "B": "decay-dense"}
N, P = 100, 200
D_SPLIT, D_PERM, N_PERM = 25, 50, 100


def _data(setting: str, b: float, seed: int):
    from wideml.sims import simulate

    X, y = simulate(setting, N, P, seed=seed, b=float(b))
    return np.asarray(X.compute()), y


def _seed(panel: str, bi: int, trial: int) -> int:
    return (0 if panel == "A" else 10**6) + 10**4 * bi + trial


def _test(X, y, proj: str, d: int, method: str, seed: int, n_permutations: int | None) -> tuple[float, int]:
    """(p-value, d used) of ``wideml.two_sample_test``; where wideml refuses d (the projected data are numerically of
    lower rank: at fast decay most eigenvalues are below float64 resolution), d is halved, as its message asks."""
    import wideml
    from wideml.exceptions import WidemlError

    kw = {"n_permutations": n_permutations} if method == "permutation" else {}
    while d >= 1:
        try:
            return wideml.two_sample_test(X, y, projection=proj, n_components=d, method=method, random_state=seed, **kw).p_value, d
        except WidemlError:
            d //= 2
    return float("nan"), 0


def power_curves(method: str, decays, trials: int, d: int, n_permutations: int | None) -> dict:
    """Power (share of p < ALPHA) of every projection at every decay rate, for both settings."""
    out = {}
    for panel, setting in SETTINGS.items():
        t0 = time.perf_counter()
        pvals = {m: np.empty((len(decays), trials)) for m in METHODS}
        used = {m: np.empty((len(decays), trials)) for m in METHODS}
        for bi, b in enumerate(decays):
            for t in range(trials):
                X, y = _data(setting, b, _seed(panel, bi, t))
                for name, proj in METHODS.items():
                    pvals[name][bi, t], used[name][bi, t] = _test(X, y, proj, d, method, t, n_permutations)
        power = {m: (v < ALPHA).mean(axis=1) for m, v in pvals.items()}
        out[panel] = {
            "setting": setting, "decays": list(decays), "trials": trials, "d": d, "method": method,
            "n_permutations": n_permutations,
            "power": {m: v.tolist() for m, v in power.items()},
            "se": {m: np.sqrt(v * (1 - v) / trials).tolist() for m, v in power.items()},
            "mean_p": {m: np.nanmean(v, axis=1).tolist() for m, v in pvals.items()},
            "mean_d_used": {m: v.mean(axis=1).tolist() for m, v in used.items()},
            "share_d_lowered": {m: (v < d).mean(axis=1).tolist() for m, v in used.items()},
            "wall_s": time.perf_counter() - t0,
        }
        print(f"  {panel} {setting} {method}: " + "; ".join(f"{m} {np.round(v, 2).tolist()}" for m, v in power.items())
              + f" ({out[panel]['wall_s']:.0f} s)", flush=True)
    return out


def type_one_error(method: str, trials: int, d: int, n_permutations: int | None) -> dict:
    """Rejection rates under permuted labels (the null holds exactly), per projection."""
    from scipy.stats import binomtest

    t0 = time.perf_counter()
    pvals = {m: np.empty(trials) for m in METHODS}
    for t in range(trials):
        X, y = _data("decay-diagonal", 5.0, 5 * 10**6 + t)
        y = np.random.default_rng(t).permutation(y)
        for name, proj in METHODS.items():
            pvals[name][t], used = _test(X, y, proj, d, method, t, n_permutations)
            assert used == d, (name, used)  # b = 5 is of full rank: d is never lowered
    out = {"method": method, "d": d, "trials": trials, "n_permutations": n_permutations, "setting": "decay-diagonal, b = 5",
           "rates": {}}
    for name, p in pvals.items():
        row = {}
        for alpha in (0.05, 0.01):
            k = int(np.sum(p <= alpha))
            ci = binomtest(k, trials, alpha).proportion_ci(0.95, method="exact")
            row[str(alpha)] = {"rejections": k, "rate": k / trials, "ci95": [ci.low, ci.high],
                               "within_level": bool(ci.low <= alpha)}  # the rate is not significantly above alpha
        row["ks_uniform_p"] = float(_ks_uniform(p)) if method == "split" else None
        out["rates"][name] = row
    out["wall_s"] = time.perf_counter() - t0
    print(f"  type-I {method}: " + "; ".join(f"{m} {r['0.05']['rate']:.3f}" for m, r in out["rates"].items())
          + f" ({out['wall_s']:.0f} s)", flush=True)
    return out


def _ks_uniform(p: np.ndarray) -> float:
    from scipy.stats import kstest

    return kstest(p, "uniform").pvalue


def regression(trials: int, n_train: int = 100, n_test: int = 500, p: int = 1000) -> dict:
    """Test MSE of LOLRegressor, PLS and Lasso against d on the sparse Toeplitz regression."""
    from sklearn.cross_decomposition import PLSRegression
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import lasso_path

    import wideml
    from wideml.sims.sparse_regression import sparse_toeplitz_regression

    ks = sorted({int(round(v)) for v in np.logspace(0, np.log10(n_train - 10), 30)})
    d_max = max(ks)
    n_alphas = 30
    mse = {"LOL": np.empty((trials, len(ks))), "LOL (medians)": np.empty((trials, len(ks))), "PLS": np.empty((trials, len(ks)))}
    lasso_mse, lasso_df = np.empty((trials, n_alphas)), np.empty((trials, n_alphas))
    chance, oracle, pls1 = np.empty(trials), np.empty(trials), np.empty(trials)
    nested_checked = []
    t0 = time.perf_counter()
    for t in range(trials):
        X, y, beta = sparse_toeplitz_regression(n_train + n_test, p, seed=t)
        X = np.asarray(X.compute())
        Xtr, Xte, ytr, yte = X[:n_train], X[n_train:], y[:n_train], y[n_train:]
        chance[t] = np.mean((yte - ytr.mean()) ** 2)
        oracle[t] = np.mean((yte - Xte @ beta) ** 2)  # the noise variance, 16, up to sampling
        for name, robust in (("LOL", False), ("LOL (medians)", True)):
            model = wideml.LOLRegressor(d_max, n_bins=10, robust_first=robust, solver="gram").fit(Xtr, ytr)
            Ztr, Zte = np.asarray(model.embedding_), np.asarray(model.transform(Xte))
            for j, d in enumerate(ks):  # LOL is nested in d: the d-dimensional fit is the first d columns
                design = np.hstack([np.ones((n_train, 1)), Ztr[:, :d]])
                sol = np.linalg.lstsq(design, ytr, rcond=None)[0]
                mse[name][t, j] = np.mean((yte - (Zte[:, :d] @ sol[1:] + sol[0])) ** 2)
            if t == 0:  # the prefix equals LOLRegressor fitted at that d
                for d in (1, 10, ks[len(ks) // 2]):
                    direct = wideml.LOLRegressor(d, n_bins=10, robust_first=robust, solver="gram").fit(Xtr, ytr).predict(Xte)
                    j = ks.index(d) if d in ks else None
                    if j is not None:
                        err = float(np.mean((yte - direct) ** 2))
                        nested_checked.append({"method": name, "d": d, "direct_mse": err, "prefix_mse": float(mse[name][t, j])})
                        assert np.isclose(err, mse[name][t, j], rtol=1e-6), (name, d, err, mse[name][t, j])
        xm, ym = Xtr.mean(axis=0), ytr.mean()
        pls = PLSRegression(n_components=d_max, scale=False).fit(Xtr, ytr)
        for j, d in enumerate(ks):  # PLS is nested in d too (deflation): its d-component fit is the first d components
            coef = pls.x_rotations_[:, :d] @ pls.y_loadings_[:, :d].T
            mse["PLS"][t, j] = np.mean((yte - ((Xte - xm) @ coef).ravel() - ym) ** 2)
            if t == 0 and d in (1, 10):
                direct = PLSRegression(n_components=d, scale=False).fit(Xtr, ytr).predict(Xte).ravel()
                err = float(np.mean((yte - direct) ** 2))
                nested_checked.append({"method": "PLS", "d": d, "direct_mse": err, "prefix_mse": float(mse["PLS"][t, j])})
                assert np.isclose(err, mse["PLS"][t, j], rtol=1e-6), ("PLS", d, err, mse["PLS"][t, j])
        pls1[t] = mse["PLS"][t, 0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, coefs, _ = lasso_path(Xtr - xm, ytr - ym, alphas=n_alphas, eps=1e-4, max_iter=5000)
        pred = (Xte - xm) @ coefs + ym  # (n_test, n_alphas)
        lasso_mse[t] = np.mean((yte[:, None] - pred) ** 2, axis=0)
        lasso_df[t] = np.count_nonzero(coefs, axis=0)
        if t % 10 == 9:
            print(f"  regression trial {t + 1}/{trials} ({time.perf_counter() - t0:.0f} s)", flush=True)
    mean = {m: v.mean(axis=0) for m, v in mse.items()}
    out = {
        "setting": "x ~ N(0, 0.99^|i-j|), p = 1000, y = beta'x + 4 eps, 100 non-zero Uniform(0,1) coefficients at random",
        "n_train": n_train, "n_test": n_test, "p": p, "trials": trials, "dims": ks,
        "mse": {m: v.tolist() for m, v in mean.items()},
        "log10_mse": {m: np.log10(v).tolist() for m, v in mean.items()},
        "se_mse": {m: (v.std(axis=0, ddof=1) / np.sqrt(trials)).tolist() for m, v in mse.items()},
        "lasso": {"mean_df": lasso_df.mean(axis=0).tolist(), "mse": lasso_mse.mean(axis=0).tolist(),
                  "log10_mse": np.log10(lasso_mse.mean(axis=0)).tolist(), "n_alphas": n_alphas},
        "chance_mse": float(chance.mean()), "noise_mse": float(oracle.mean()), "pls_1_component_mse": float(pls1.mean()),
        "nested_check": nested_checked,
        "wall_s": time.perf_counter() - t0,
    }
    return out


def _lasso_at(res: dict, d: float) -> float:
    """Lasso's mean test MSE at d non-zero coefficients (linear interpolation along the path's mean df)."""
    df, mse = np.array(res["lasso"]["mean_df"]), np.array(res["lasso"]["mse"])
    order = np.argsort(df)
    return float(np.interp(d, df[order], mse[order]))


def checks(res: dict) -> dict:
    """The paper's claims, measured."""
    out = {}
    for key in ("split", "permutation"):
        for panel, r in res["testing"][key].items():
            lol = np.array(r["power"]["LOL"])
            others = {m: np.array(v) for m, v in r["power"].items() if m != "LOL"}
            se = {m: np.array(v) for m, v in r["se"].items()}
            best = [all(lol[i] >= v[i] for v in others.values()) for i in range(len(lol))]
            beaten = {m: [r["decays"][i] for i in range(len(lol)) if v[i] - lol[i] > 2 * np.hypot(se["LOL"][i], se[m][i])]
                      for m, v in others.items()}
            out[f"{key} {panel} ({r['setting']}): decay rates where LOL has the highest power (ties count)"] = (
                f"{sum(best)} of {len(best)}: {[r['decays'][i] for i in range(len(best)) if best[i]]}")
            out[f"{key} {panel}: decay rates where a method beats LOL by more than 2 SE"] = {m: v for m, v in beaten.items() if v}
    reg = res["regression"]
    lol, pls = np.array(reg["mse"]["LOL"]), np.array(reg["mse"]["PLS"])
    dims = reg["dims"]
    lasso = np.array([_lasso_at(reg, d) for d in dims])
    df_max = max(reg["lasso"]["mean_df"])
    in_range = [i for i, d in enumerate(dims) if d <= df_max]
    out["regression: d where LOL's MSE < PLS's (same d)"] = f"{int(np.sum(lol < pls))} of {len(dims)}: {[d for d, a, b in zip(dims, lol, pls) if a < b]}"
    out["regression: d where LOL's MSE < Lasso's at as many non-zero coefficients"] = (
        f"{int(sum(lol[i] < lasso[i] for i in in_range))} of {len(in_range)} (d up to Lasso's largest mean df {df_max:.0f})")
    out["regression: best MSE (LOL, LOL medians, PLS, Lasso, chance, noise)"] = [
        round(float(min(reg["mse"]["LOL"])), 2), round(float(min(reg["mse"]["LOL (medians)"])), 2), round(float(min(pls)), 2),
        round(float(min(reg["lasso"]["mse"])), 2), round(reg["chance_mse"], 2), round(reg["noise_mse"], 2)]
    out["regression: PLS with 1 component (the authors' flat line) MSE vs LOL's best"] = [
        round(reg["pls_1_component_mse"], 2), round(float(min(lol)), 2)]
    for key, r in res["type_one_error"].items():
        out[f"type-I {key} at 0.05: rate (95% CI) per projection"] = {
            m: f"{v['0.05']['rate']:.3f} [{v['0.05']['ci95'][0]:.3f}, {v['0.05']['ci95'][1]:.3f}]" for m, v in r["rates"].items()}
    return out


def plot(res: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), dpi=110)
    titles = {"A": "(A) Diagonal", "B": "(B) Dense"}
    for ax, panel in zip(axes[:2], ("A", "B")):
        r = res["testing"]["split"][panel]
        for m, v in r["power"].items():
            v, se = np.array(v), np.array(r["se"][m])
            ax.plot(r["decays"], v, marker="o", ms=3, color=COLORS[m], label=f"{m} + Hotelling (split, d={r['d']})")
            ax.fill_between(r["decays"], v - se, v + se, color=COLORS[m], alpha=0.15)
        rp = res["testing"].get("permutation", {}).get(panel)
        if rp:
            for m, v in rp["power"].items():
                ax.plot(rp["decays"], v, ls="--", marker="s", ms=3, color=COLORS[m], alpha=0.8,
                        label=f"{m} (permutation, d={rp['d']}, {rp['trials']} reps)")
        ax.axhline(ALPHA, c="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("eigenvalue decay rate b")
        ax.set_ylabel("power at level 0.05")
        ax.set_title(f"{titles[panel]}: p = {P}, n = {N}, {r['trials']} reps")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="best")
    ax = axes[2]
    reg = res["regression"]
    for m in ("LOL", "LOL (medians)", "PLS"):
        ax.plot(reg["dims"], reg["log10_mse"][m], marker="o", ms=3, color=COLORS[m], ls="--" if "medians" in m else "-",
                label=f"{'LOLRegressor' if m == 'LOL' else m}" + (" (means)" if m == "LOL" else ""))
    ax.plot(reg["lasso"]["mean_df"], reg["lasso"]["log10_mse"], marker="o", ms=3, color=COLORS["Lasso"],
            label="Lasso (x = mean non-zero coefs)")
    ax.axhline(np.log10(reg["chance_mse"]), c="grey", ls=":", lw=1, label="predict the mean")
    ax.axhline(np.log10(reg["noise_mse"]), c="grey", ls="-.", lw=1, label="noise (true β)")
    ax.set_xlim(0, max(reg["dims"]) + 2)
    ax.set_xlabel("number of embedded dimensions d")
    ax.set_ylabel("log10 test MSE")
    ax.set_title(f"(C) Sparse Toeplitz: p = {reg['p']}, n = {reg['n_train']}, {reg['trials']} reps")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle("LOL paper Fig. 7 reproduced with wideml (two_sample_test, LOLRegressor)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


PAPER_CLAIMS = {
    "A/B": "LOL composed with Hotelling's test has higher power than RP (Lopes et al. 2011), PCA and LFL for essentially "
           "all decay rates, diagonal and dense covariance; neither PCA instead of RP nor the mean difference alone "
           "(LFL) gives LOL's power.",
    "C": "LOL composed with linear regression has lower log10 MSE than Lasso and much lower than PLS for essentially all "
         "numbers of embedded dimensions.",
}


def add_permutation_decays(decays, trials: int) -> None:
    """Run the permutation protocol at more decay rates and merge them into lol_fig7.json (checks and plot redone)."""
    import json

    path = RESULTS / "lol_fig7.json"
    res = json.loads(path.read_text())
    t0 = time.perf_counter()
    new = power_curves("permutation", decays, trials, D_PERM, N_PERM)
    for panel, r in new.items():
        old = res["testing"]["permutation"][panel]
        assert old["trials"] == trials, "merge only runs of the same number of repetitions"
        merged = sorted(set(old["decays"]) | set(r["decays"]))
        for key in ("power", "se", "mean_p", "mean_d_used", "share_d_lowered"):
            for m in old[key]:
                values = dict(zip(old["decays"], old[key][m])) | dict(zip(r["decays"], r[key][m]))
                old[key][m] = [values[b] for b in merged]
        old["decays"] = merged
        old["wall_s"] += r["wall_s"]
    res["checks"] = checks(res)
    plot(res, RESULTS / "lol_fig7.png")
    res["wall_s"] += time.perf_counter() - t0
    res = {k: v for k, v in res.items() if k not in ("benchmark", "when", "machine")}
    print("saved", save("lol_fig7", res))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50, help="repetitions per decay rate, split test (authors: 500)")
    ap.add_argument("--perm-trials", type=int, default=10, help="repetitions per decay rate, permutation test")
    ap.add_argument("--null-trials", type=int, default=500, help="type-I simulations, split test")
    ap.add_argument("--null-perm-trials", type=int, default=200, help="type-I simulations, permutation test")
    ap.add_argument("--reg-trials", type=int, default=50, help="regression repetitions (authors: 50)")
    ap.add_argument("--quick", action="store_true", help="a smoke run (few repetitions); writes lol_fig7_quick.*")
    ap.add_argument("--add-perm-decays", type=lambda t: [float(v) for v in t.split(",")], metavar="B1,B2,...",
                    help="only run the permutation test at these decay rates and merge them into the saved lol_fig7.json")
    args = ap.parse_args()
    if args.add_perm_decays:
        return add_permutation_decays(args.add_perm_decays, args.perm_trials)
    if args.quick:
        args.trials, args.perm_trials, args.null_trials, args.null_perm_trials, args.reg_trials = 4, 2, 10, 4, 2
    name = "lol_fig7_quick" if args.quick else "lol_fig7"
    t0 = time.perf_counter()
    res = {"paper_claims": PAPER_CLAIMS, "alpha": ALPHA, "testing": {}, "type_one_error": {}}
    print("testing, split", flush=True)
    res["testing"]["split"] = power_curves("split", DECAYS, args.trials, D_SPLIT, None)
    print("testing, permutation", flush=True)
    res["testing"]["permutation"] = power_curves("permutation", PERM_DECAYS, args.perm_trials, D_PERM, N_PERM)
    print("type-I error", flush=True)
    res["type_one_error"]["split"] = type_one_error("split", args.null_trials, D_SPLIT, None)
    res["type_one_error"]["permutation"] = type_one_error("permutation", args.null_perm_trials, D_PERM, 99)
    print("regression", flush=True)
    res["regression"] = regression(args.reg_trials)
    res["checks"] = checks(res)
    for k, v in res["checks"].items():
        print(f"  {k}: {v}")
    RESULTS.mkdir(exist_ok=True)
    plot(res, RESULTS / f"{name}.png")
    res["wall_s"] = time.perf_counter() - t0
    print("saved", save(name, res), "and", RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
