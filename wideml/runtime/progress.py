"""Progress bars: whether to show them (config ``wideml.progress``), and the one for a dask.distributed cluster.

Every bar is drawn on stderr: stdout belongs to the command's output.
distributed's own console bar writes to stdout, which corrupts ``wideml predict > file``;
:func:`cluster_progress` follows the same tasks (every task of the futures' graphs, through the
scheduler) and draws the same bar on stderr. dask.distributed is imported only when that bar is drawn.
"""

from __future__ import annotations

import functools
import sys
from contextlib import suppress

from wideml.runtime.config import config_value


def progress_enabled() -> bool:
    """Whether passes show progress bars: config ``wideml.progress`` (``auto``: when stderr is a terminal).

    Returns
    -------
    bool
    """
    setting = config_value("progress")
    if isinstance(setting, str) and setting.lower() == "auto":
        return sys.stderr.isatty()
    return bool(setting) and str(setting).lower() not in ("false", "0", "no", "off")


@functools.cache
def stderr_progress_bar() -> type:
    """distributed's text progress bar class, drawing on ``sys.stderr`` (made on first use: distributed is heavy).

    Returns
    -------
    type
        A subclass of ``distributed.diagnostics.progressbar.TextProgressBar``;
        an instance blocks until the tracked tasks finish.
    """
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

    return StderrProgressBar


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
    stderr_progress_bar()(futures, scheduler=client.scheduler.address, complete=True)


__all__ = ["cluster_progress", "progress_enabled", "stderr_progress_bar"]
