"""The Fig. 5-style plot of a comparison across data sets (matplotlib, the ``plot`` extra).

Two panels, one point per data set and method: left, error(method) -
error(reference); right, kappa(reference) - kappa(method). Above zero the
reference (LOL) is better. Each method's column is labelled with the exact
Wilcoxon p-values (one-sided, alternative: the reference is better; and
two-sided); a black bar marks the mean difference. Written atomically.
"""

from __future__ import annotations

import os

from wideml.exceptions import WidemlError
from wideml.storage.atomic import atomic_output


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise WidemlError("writing a plot needs matplotlib; install it with `pip install wideml[plot]`.") from None
    return plt


def compare_figure(result, title: str = ""):
    """The figure :func:`write_png` writes (the caller closes it).

    Parameters
    ----------
    result : CompareResult
    title : str
        Default: the number of data sets, the CV and the classifier.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    plt = _pyplot()
    ref = result.reference
    others = [m for m in result.methods if m != ref]
    stores = [name for name, s in result.stores.items() if s.failure is None]
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.8), dpi=120, sharex=False)
    markers = "osD^v<>phP*Xd"
    cmap = plt.get_cmap("tab20" if len(stores) > 10 else "tab10")
    rng = np.random.default_rng(0)
    for ax, measure in zip(axes, ("error", "kappa")):
        for j, m in enumerate(others):
            diffs = []
            for i, name in enumerate(stores):
                sc = result.stores[name].scores
                a, b = sc.get(ref), sc.get(m)
                if a is None or b is None or a.failure or b.failure:
                    continue
                v = b.error - a.error if measure == "error" else a.kappa - b.kappa
                if not np.isfinite(v):
                    continue
                diffs.append(v)
                ax.scatter(j + rng.uniform(-0.18, 0.18), v, marker=markers[i % len(markers)], s=34, color=cmap(i % cmap.N),
                           edgecolor="black", linewidth=0.4, zorder=3, label=name if (measure == "error" and j == 0) else None)
            if diffs:
                ax.plot([j - 0.3, j + 0.3], [np.mean(diffs)] * 2, color="black", lw=2, zorder=4)
        ax.axhline(0.0, color="grey", lw=1, ls="--", zorder=1)
        labels = []
        for m in others:
            t = result.test(m, measure)
            labels.append(f"{m.upper()}\np\u2081 = {t.p_one_sided:.3g}\np\u2082 = {t.p_two_sided:.3g}\n"
                          f"{ref} better {t.wins}/{len(t.stores)}")
        ax.set_xticks(range(len(others)), labels, fontsize=8)
        ax.set_xlim(-0.6, len(others) - 0.4)
        what = f"error(method) \u2212 error({ref.upper()})" if measure == "error" else f"\u03ba({ref.upper()}) \u2212 \u03ba(method)"
        ax.set_ylabel(what + f"\n(> 0: {ref.upper()} better)", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    handles, names = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, fontsize=7.5, loc="center left", bbox_to_anchor=(0.855, 0.55), title="data set",
                   title_fontsize=8, frameon=False)
    n = len(result.ranked_stores)
    ranks = ", ".join(f"{m} {r:.2f}" for m, r in sorted(result.mean_ranks.items(), key=lambda kv: kv[1])) if n else "none"
    fig.suptitle(title or f"{len(stores)} data sets, {result.cv_name}, {result.classifier.upper()} on the embedding "
                 f"(d chosen by CV)", fontsize=10)
    caption = (f"Each point: one data set. Bar: mean difference. p\u2081: exact one-sided Wilcoxon signed-rank p-value "
               f"(alternative: {ref.upper()} better); p\u2082: two-sided; zeros {result.zero_method}.\n"
               f"Mean rank of the error over the {n} data sets where every method was scored (1 = best): {ranks}.")
    fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize=7.5, color="0.3")
    fig.tight_layout(rect=(0, 0.08, 0.85, 0.95))
    return fig


def write_png(result, path: str | os.PathLike, overwrite: bool = False, title: str = "") -> None:
    """Write :func:`compare_figure` as a PNG, atomically (aside, then renamed into place).

    Parameters
    ----------
    result : CompareResult
    path : path-like
    overwrite : bool, default False
        Replace an existing PNG wideml wrote (never a user's file).
    title : str
    """
    plt = _pyplot()
    fig = compare_figure(result, title)
    try:
        with atomic_output(path, overwrite=overwrite, workers_write=False) as tmp, open(tmp, "wb") as fh:
            fig.savefig(fh, format="png")
    finally:
        plt.close(fig)
