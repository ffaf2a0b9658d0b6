"""What a ``wideml cv`` or ``wideml fit`` run records for its report: command line, configuration, versions, time, memory, warnings.

:class:`RunRecord` is a context manager around the run. It records every
warning the run shows (the warning is still shown, as before: the recorder
wraps :func:`warnings.showwarning` instead of swallowing warnings), the wall
time, and the peak resident memory of the process. :meth:`RunRecord.to_dict`
is JSON: ``wideml cv -o`` stores it under ``"run"``, ``wideml fit`` in the
model's provenance, and the report shows it.

Per-pass times and memory are not recorded (the fit runner keeps no per-pass
log); the time and peak memory are those of the whole run.
"""

from __future__ import annotations

import importlib.metadata
import platform
import resource
import shlex
import sys
import threading
import time
import warnings

from wideml._version import __version__

#: Distributions whose versions a run records (those not installed are left out).
LIBRARIES = ("numpy", "scipy", "dask", "distributed", "zarr", "numcodecs", "h5py", "scikit-learn", "nibabel", "nilearn",
             "matplotlib", "jinja2")

#: Configuration keys whose values are never recorded (a credential could sit there).
SECRET_WORDS = ("secret", "token", "password", "passwd", "credential", "key", "auth")

#: Recorded warnings kept at most (the rest are counted).
MAX_WARNINGS = 200


def library_versions() -> dict[str, str]:
    """``{"wideml": ..., "python": ..., "numpy": ...}`` for the installed distributions of :data:`LIBRARIES`."""
    versions = {"wideml": __version__, "python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def redacted(value, key: str = ""):
    """``value`` (JSON-like) with the values of keys that name a credential replaced by ``"<redacted>"``."""
    if any(word in key.lower() for word in SECRET_WORDS) and not isinstance(value, dict):
        return "<redacted>"
    if isinstance(value, dict):
        return {str(k): redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def wideml_config() -> dict:
    """The ``wideml`` section of dask.config as the run saw it (credentials redacted)."""
    import dask.config

    return redacted(dask.config.get("wideml", default={}) or {})


def peak_memory_bytes() -> int:
    """Peak resident memory of this process so far, in bytes (``getrusage``; kibibytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class RunRecord:
    """Record a run: ``with RunRecord(argv) as record: ...; record.to_dict()``.

    Parameters
    ----------
    argv : list of str, optional
        The command's arguments after ``wideml`` (default ``sys.argv[1:]``).

    Attributes
    ----------
    warnings : list of dict
        ``{"category": ..., "message": ...}`` of each warning shown during the run, in order.
    seconds : float
        Wall time of the run (so far, while it runs).
    """

    def __init__(self, argv: list[str] | None = None) -> None:
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.warnings: list[dict] = []
        self.n_warnings = 0
        self._start = time.perf_counter()
        self._end: float | None = None
        self._shown = None
        self._lock = threading.Lock()

    def __enter__(self) -> RunRecord:
        self._start = time.perf_counter()
        self._shown = warnings.showwarning
        shown = self._shown

        def record(message, category, filename, lineno, file=None, line=None):
            with self._lock:
                self.n_warnings += 1
                if len(self.warnings) < MAX_WARNINGS:
                    self.warnings.append({"category": getattr(category, "__name__", str(category)), "message": str(message)})
            shown(message, category, filename, lineno, file, line)

        warnings.showwarning = record
        return self

    def __exit__(self, *exc) -> None:
        self._end = time.perf_counter()
        if self._shown is not None:
            warnings.showwarning = self._shown
            self._shown = None

    @property
    def seconds(self) -> float:
        return (self._end if self._end is not None else time.perf_counter()) - self._start

    def to_dict(self) -> dict:
        """JSON: command line, configuration, versions, wall time, peak memory and warnings of the run.

        Returns
        -------
        dict
            Keys ``command`` (str), ``config`` (dict), ``versions`` (dict),
            ``seconds`` (float), ``peak_memory_bytes`` (int), ``warnings``
            (list of dict) and ``n_warnings`` (int, all of them, also those beyond :data:`MAX_WARNINGS`).
        """
        return {"command": shlex.join(["wideml", *self.argv]), "config": wideml_config(), "versions": library_versions(),
                "seconds": round(self.seconds, 3), "peak_memory_bytes": peak_memory_bytes(),
                "warnings": list(self.warnings), "n_warnings": self.n_warnings}
