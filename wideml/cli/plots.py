"""Figures written by the command line (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

from wideml.exceptions import WidemlError


def plot_cv(report, fh, title: str = "") -> None:
    """Error against embedding dimension, one line per method with a ±1 sd band over folds, chance dashed.

    Parameters
    ----------
    report : CVReport
        Its ``results`` (dims, mean errors, sds over folds), ``n_folds``, ``classifier`` and ``chance_error``.
    fh : binary file
        Where the PNG goes.
    title : str
        The figure title (``wideml cv`` gives the store name, n, p, folds and passes over X).
    """
    import matplotlib.pyplot as plt

    fig = cv_figure(report, title)
    try:
        fig.savefig(fh, format="png")
    finally:
        plt.close(fig)


def cv_figure(report, title: str = ""):
    """The figure :func:`plot_cv` writes (the caller closes it).

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
    for i, (name, r) in enumerate(report.results.items()):
        if getattr(r, "error", None) is not None:  # a failed method: its message is in the table and the report
            continue
        d, e, s = np.array(r.dims), np.array(r.errors), np.array(r.stds)
        z = 10 + len(report.results) - i  # the first method listed is drawn on top: equal curves stay visible
        (line,) = ax.plot(d, e, marker=markers[i % len(markers)], ms=3.5, zorder=z, clip_on=False,
                          label=f"{name.upper()} (best d={r.best_dim}, {r.best_error:.3f})")
        ax.fill_between(d, np.clip(e - s, 0, 1), np.clip(e + s, 0, 1), color=line.get_color(), alpha=0.15, zorder=z - 5)
        ax.plot([r.best_dim], [r.best_error], marker="*", ms=12, color=line.get_color(), zorder=z, clip_on=False)
    ax.axhline(report.chance_error, ls="--", color="grey", lw=1, label="chance")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("embedding dimension d")
    ax.set_ylabel(f"{report.classifier.upper()} misclassification rate")
    ax.set_ylim(bottom=0)
    ax.set_title(title or "cross-validated error against dimension", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)  # beside the axes: covers no line
    ax.grid(alpha=0.3)
    repeats = getattr(report, "n_repeats", 1)
    over = f"the {report.n_folds} folds" if repeats == 1 else f"the {report.n_splits} splits ({report.cv_name})"
    caption = (f"Shaded bands: \u00b11 sd of the error over {over};\n"
               "\u2605 marks each method's best d (lowest mean error).")
    fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize=7.5, color="0.3", wrap=True)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig
