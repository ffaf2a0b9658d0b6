"""Figures written by the command line (matplotlib, the ``plot`` extra).

The cross-validation figure itself lives in :mod:`wideml.report.cv_figure`, shared with ``wideml report``.
"""

from __future__ import annotations

from wideml.report.cv_figure import cv_figure

__all__ = ["cv_figure", "plot_cv"]


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
