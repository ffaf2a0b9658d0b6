"""Progress displays for a dask.distributed cluster, drawn on stderr (stdout belongs to the command's output).

distributed's own console bar writes to stdout, which corrupts ``wideml predict > file``;
this one follows the same tasks (every task of the futures' graphs, through the
scheduler) and draws the same bar on stderr.
"""

from __future__ import annotations

import sys
from contextlib import suppress

from distributed.diagnostics.progress import format_time
from distributed.diagnostics.progressbar import TextProgressBar


class StderrProgressBar(TextProgressBar):
    """distributed's text progress bar, drawn on ``sys.stderr``; blocks until the tracked tasks finish."""

    def _draw_bar(self, remaining, all, **kwargs):  # noqa: A002 - distributed's signature
        frac = (1 - remaining / all) if all else 1.0
        bar = "#" * int(self.width * frac)
        msg = f"\r[{bar:<{self.width}}] | {int(100 * frac)}% Completed | {format_time(self.elapsed)}"
        with suppress(ValueError):  # stderr closed
            sys.stderr.write(msg)
            sys.stderr.flush()

    def _draw_stop(self, **kwargs):
        with suppress(ValueError):
            sys.stderr.write("\n")
            sys.stderr.flush()


def cluster_progress(client, futures: list, label: str) -> None:
    """Print ``[wideml] LABEL`` and a progress bar of ``futures`` (and every task they depend on) on stderr.

    Parameters
    ----------
    client : distributed.Client
        The client the futures belong to (its scheduler is asked for progress).
    futures : list of distributed.Future
        The pass's outputs.
    label : str
        Name of the pass.
    """
    print(f"[wideml] {label}", file=sys.stderr)
    StderrProgressBar(futures, scheduler=client.scheduler.address, complete=True)
