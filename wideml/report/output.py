"""The report's output file, checked before any work: an HTML file name, a writable folder, what the report needs installed.

:func:`check_report_output` is called by :func:`wideml.report.report` and, before
the run, by ``wideml cv --report`` and ``wideml fit --report``, so a bad report
path never costs a run. On top of the rules of every output
(:func:`wideml.storage.atomic.check_output`: never a user's file or a link;
``--overwrite`` only for what wideml provably wrote), ``--overwrite`` replaces
only a previous wideml *report*: a regular file whose head carries the
report's ``<meta name="generator" content="wideml ...">``, never a store, a
model, a JSON or a folder, even one wideml wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

from wideml.exceptions import ConfigError, StoreError
from wideml.report.figures import pyplot
from wideml.report.render import environment
from wideml.runtime.preflight import require_writable
from wideml.storage.atomic import check_output, refuse_url_output
from wideml.storage.urls import local_output

#: File name endings of a report.
SUFFIXES = (".html", ".htm")
#: What the head of every report wideml writes holds (templates/report.html.j2).
GENERATOR_MARK = b'<meta name="generator" content="wideml '


def is_wideml_report(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file (not a link) whose first 4 KiB carry the report's generator mark."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            return GENERATOR_MARK in fh.read(4096)
    except OSError:
        return False


def refuse_empty(out) -> None:
    """One sentence for an empty report path (never taken as the current folder)."""
    if out is None or not str(os.fspath(out)).strip():
        raise ConfigError("the report's output path is empty; give a file name ending in .html.")


def check_report_output(out, overwrite: bool, *, figures: bool = False) -> Path:
    """Refuse, in one sentence and before any work, a report output that could not or should not be written.

    Parameters
    ----------
    out : str or path-like
        The HTML file to write.
    overwrite : bool
        Whether an existing previous report may be replaced.
    figures : bool, default False
        Whether the report will draw figures (a cross-validation section): then matplotlib must be installed.

    Returns
    -------
    pathlib.Path
        The absolute path of the report.

    Raises
    ------
    ConfigError
        An empty name, or one not ending in .html or .htm.
    StoreError or WidemlError
        A URL, an existing file that is not a wideml report, an unwritable folder, a missing dependency.
    """
    refuse_empty(out)
    text = os.fspath(out)
    refuse_url_output(text)
    path = Path(os.path.abspath(local_output(text)))
    if path.suffix.lower() not in SUFFIXES:
        raise ConfigError(f"the report {text} is written as HTML, so its name must end in .html or .htm "
                          f"(not {path.suffix or 'no ending'!r}); give a file name ending in .html.")
    check_output(path, overwrite)
    if os.path.lexists(path) and not is_wideml_report(path):
        raise StoreError(f"output {str(path)!r} is not a wideml report (it is a folder or a file of another kind), so "
                         "--overwrite will not replace it with one: choose another output.")
    require_writable(path.parent, "the report's folder")
    environment()  # jinja2 missing: the sentence naming wideml[report]
    if figures:
        pyplot()
    return path
