"""A text progress bar for the loops of ingest that run in this process (CSV streaming).

It looks like dask's ProgressBar and obeys the same ``wideml.progress`` setting
as :func:`wideml.runtime.compute` (:func:`wideml.runtime.progress.progress_enabled`).
"""

from __future__ import annotations

import sys
import time

from wideml.runtime.progress import progress_enabled


class Progress:
    """Context manager showing ``[####    ] | 40% Completed | 1.2s`` on stderr.

    Parameters
    ----------
    label : str
        Printed once in front of the bar.
    total : int
        Units of work (rows, files).
    """

    def __init__(self, label: str, total: int, width: int = 40, dt: float = 0.5):
        self.label, self.total, self.width, self.dt = label, max(1, int(total)), width, dt
        self.done = 0
        self.show = progress_enabled()
        self._start = self._last = 0.0

    def __enter__(self) -> Progress:
        self._start = self._last = time.monotonic()
        if self.show:
            print(f"[wideml] {self.label}", file=sys.stderr)
        return self

    def update(self, k: int = 1) -> None:
        self.done += int(k)
        now = time.monotonic()
        if self.show and now - self._last >= self.dt:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(1.0, self.done / self.total)
        bar = "#" * int(frac * self.width)
        sys.stderr.write(f"\r[{bar:<{self.width}}] | {frac * 100:3.0f}% Completed | {now - self._start:.1f}s")
        sys.stderr.flush()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.show:
            if exc is None:
                self.done = self.total
            self._draw(time.monotonic())
            sys.stderr.write("\n")
        return False
