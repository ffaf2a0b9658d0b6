"""The cross-validation figure: error against embedding dimension, a ±1 sd band per method, chance dashed.

With a single dimension (every method scored at one d) the band is an error
bar and the x-axis has integer ticks around that d.

Drawn from a :class:`wideml.estimators.gram.cv.CVReport` (``wideml cv --plot``,
through :mod:`wideml.cli.plots`) or from the JSON ``wideml cv -o`` writes (the
report's cross-validation section, through :func:`report_from_json`); both read
the same attributes, so the PNG of ``--plot`` and the report's figure are the same.
"""

from __future__ import annotations

from types import SimpleNamespace

from wideml.exceptions import WidemlError


def report_from_json(doc: dict):
    """An object with the attributes :func:`cv_figure` reads, from the JSON of ``wideml cv -o`` (``CVReport.to_dict``).

    Parameters
    ----------
    doc : dict
        Its ``results`` (per method: dims, errors, stds, best_dim, best_error,
        error), ``chance_error``, ``classifier``, ``n_folds``, ``n_repeats``,
        ``n_splits`` and ``cv``; JSON nulls (NaN) become NaN.

    Returns
    -------
    types.SimpleNamespace
    """
    nan = float("nan")

    def numbers(values):
        return [nan if v is None else float(v) for v in values]

    results = {}
    for name, r in doc.get("results", {}).items():
        label = str(name).replace("$", r"\$")  # drawn as text, never as matplotlib's mathtext
        results[label] = SimpleNamespace(dims=[int(d) for d in r.get("dims", [])], errors=numbers(r.get("errors", [])),
                                        stds=numbers(r.get("stds", [])), best_dim=r.get("best_dim"),
                                        best_error=nan if r.get("best_error") is None else float(r["best_error"]),
                                        error=r.get("error"))
    chance = doc.get("chance_error")
    return SimpleNamespace(results=results, chance_error=nan if chance is None else float(chance),
                           classifier=str(doc.get("classifier", "lda")), n_folds=int(doc.get("n_folds", 0)),
                           n_repeats=int(doc.get("n_repeats", 1)), n_splits=int(doc.get("n_splits", 0)),
                           cv_name=str(doc.get("cv", "")))


def cv_figure(report, title: str = ""):
    """The figure :func:`wideml.cli.plots.plot_cv` writes and the report embeds (the caller closes it).

    The legend sits to the right of the axes (never over a curve or the chance
    line) and the caption is two lines under them; the layout keeps title,
    legend and caption inside the canvas, whose width grows with the legend.

    Returns
    -------
    matplotlib.figure.Figure
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise WidemlError("writing a plot needs matplotlib; install it with `pip install wideml[plot]`.") from None
    import numpy as np

    fig, ax = plt.subplots(figsize=(8.4, 4.6), dpi=120)
    markers = "osD^v<>ph"
    drawn = sorted({int(d) for r in report.results.values() if getattr(r, "error", None) is None for d in r.dims})
    single = len(drawn) == 1  # one dimension: error bars, not bands (a band of one point is not drawn)
    for i, (name, r) in enumerate(report.results.items()):
        if getattr(r, "error", None) is not None:  # a failed method: its message is in the table and the report
            continue
        d, e, s = np.array(r.dims), np.array(r.errors), np.array(r.stds)
        z = 10 + len(report.results) - i  # the first method listed is drawn on top: equal curves stay visible
        (line,) = ax.plot(d, e, marker=markers[i % len(markers)], ms=3.5, zorder=z, clip_on=False,
                          label=f"{name.upper()} (best d={r.best_dim}, {r.best_error:.3f})")
        if single:
            ax.errorbar(d, e, yerr=s, fmt="none", ecolor=line.get_color(), capsize=4, zorder=z)
        else:
            ax.fill_between(d, np.clip(e - s, 0, 1), np.clip(e + s, 0, 1), color=line.get_color(), alpha=0.15, zorder=z - 5)
        ax.plot([r.best_dim], [r.best_error], marker="*", ms=12, color=line.get_color(), zorder=z, clip_on=False)
    ax.axhline(report.chance_error, ls="--", color="grey", lw=1, label="chance")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if single:  # integer ticks around the one d, not matplotlib's fractional ones
        ax.set_xlim(drawn[0] - 1, drawn[0] + 1)
        ax.set_xticks([drawn[0] - 1, drawn[0], drawn[0] + 1])
    ax.set_xlabel("embedding dimension d")
    ax.set_ylabel(f"{report.classifier.upper()} misclassification rate")
    ax.set_ylim(bottom=0)
    ax.set_title(title or "cross-validated error against dimension", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)  # beside the axes: covers no line
    ax.grid(alpha=0.3)
    repeats = getattr(report, "n_repeats", 1)
    over = f"the {report.n_folds} folds" if repeats == 1 else f"the {report.n_splits} splits ({report.cv_name})"
    caption = (f"{'Error bars' if single else 'Shaded bands'}: \u00b11 sd of the error over {over};\n"
               "\u2605 marks each method's best d (lowest mean error).")
    fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize=7.5, color="0.3", wrap=True)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig
