"""``wideml.report``: one self-contained, offline HTML report of a store, a cross-validation, a model and its maps.

Call it as ``wideml.report(store=None, cv=None, model=None, maps=None,
out="report.html", overwrite=False)`` (the package is callable, as is its
function :func:`report`), or on the command line as ``wideml report``,
``wideml cv --report PATH`` and ``wideml fit --report PATH``.

Parameters
----------
store : str or path-like, optional
    A feature store: shape, dtype, chunks, size, integrity, classes and, for
    images, the mask.
cv : str, path-like or dict, optional
    The JSON ``wideml cv -o`` wrote: error-against-d curves, the table with
    kappa, confusion matrices at the chosen d, the run and its warnings.
model : str or path-like, optional
    A saved model: parameters, solver and reason, passes, provenance.
maps : str or path-like, optional
    A folder ``wideml maps`` wrote: panels, Manhattan plots, top features.
out : str or path-like, default "report.html"
    The HTML file to write (atomically; an existing file is replaced only
    with ``overwrite`` and only if wideml wrote it).
overwrite : bool, default False

Returns
-------
pathlib.Path
    The report written.

Files: ``store_section.py``, ``cv_section.py``, ``model_section.py``,
``maps_section.py`` gather each section's facts (metadata only: no pass over
X); ``figures.py`` and ``cv_figure.py`` draw the figures as ``data:`` URIs;
``render.py`` fills ``templates/report.html.j2``; ``run_record.py`` records
what a command run did (warnings, time, memory, versions) for the report;
``cv_json.py`` checks a cross-validation JSON field by field; ``output.py``
checks the output before any work; ``consistency.py`` compares the stores and
models the inputs record, and the page opens with a warning box naming any
input that does not belong with the others.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

from wideml.exceptions import WidemlError
from wideml.report.consistency import identity_of, mismatches
from wideml.report.cv_section import cv_section
from wideml.report.maps_section import maps_section
from wideml.report.model_section import model_section
from wideml.report.output import check_report_output
from wideml.report.render import render_html
from wideml.report.store_section import human_bytes, store_section
from wideml.storage.atomic import atomic_output

__all__ = ["report"]


def _warnings(cv: dict | None, model: dict | None) -> tuple[list[dict], int]:
    found, sources = [], 0
    if cv is not None and cv.get("run") is not None:
        sources += 1
        found += [{"source": "cross-validation", **w} for w in cv["run"].get("warnings", []) if isinstance(w, dict)]
    if model is not None and model.get("command"):
        sources += 1
        found += [{"source": "fit", **w} for w in model["warnings"] if isinstance(w, dict)]
    return [{"source": w["source"], "category": str(w.get("category", "Warning")), "message": str(w.get("message", ""))}
            for w in found], sources


def report(store=None, cv=None, model=None, maps=None, out="report.html", *, overwrite: bool = False) -> Path:
    """Write one self-contained HTML report (no network at view time) of a store, a cross-validation, a model and maps.

    No pass over X: the store section reads metadata and labels only.

    Parameters
    ----------
    store : str or path-like, optional
        A feature store (path or URL).
    cv : str, path-like or dict, optional
        The JSON ``wideml cv -o`` wrote, or its content.
    model : str or path-like, optional
        A model folder written by ``wideml fit`` or :func:`wideml.save_model`.
    maps : str or path-like, optional
        A folder written by ``wideml maps``.
    out : str or path-like, default "report.html"
        The HTML file to write.
    overwrite : bool, default False
        Replace an existing ``out`` (only one wideml wrote).

    Returns
    -------
    pathlib.Path
        The absolute path of the report.

    Raises
    ------
    WidemlError
        One sentence: nothing to report, an unreadable or corrupt input, a
        model :func:`wideml.load_model` refuses, an output that is not a
        file name ending in .html, an existing output that is not a wideml
        report, a missing optional dependency (``pip install wideml[report]``).
    """
    if store is None and cv is None and model is None and maps is None:
        raise WidemlError("nothing to report; give a store, a cross-validation JSON, a model or a maps folder "
                          "(store=, cv=, model=, maps=; on the command line --store, --cv, --model, --maps).")
    path = check_report_output(out, overwrite, figures=cv is not None)  # before any work
    store_facts = store_section(store) if store is not None else None
    store_id = identity_of(store_facts["path"]) if store_facts else None
    cv_facts = cv_section(cv, store_facts["labels"] if store_facts else None, store=store_id) if cv is not None else None
    model_facts = model_section(model) if model is not None else None
    maps_facts = maps_section(maps) if maps is not None else None
    mismatch = mismatches(store_id, cv_facts["recorded_store"] if cv_facts else None,
                          model_facts["recorded_store"] if model_facts else None, maps_facts, model)
    warnings, sources = _warnings(cv_facts, model_facts)
    names = [os.path.basename(os.path.normpath(os.fspath(x))) for x in (store, model) if isinstance(x, (str, os.PathLike))]
    title = "wideml report" + (f": {', '.join(names)}" if names else "")
    memory = human_bytes(cv_facts["run"].get("peak_memory_bytes")) if cv_facts and cv_facts["run"] else "-"
    html = render_html(title=title, store=store_facts, cv=cv_facts, model=model_facts, maps=maps_facts,
                       warnings=warnings, warning_sources=sources, cv_memory=memory, mismatches=mismatch)
    with atomic_output(path, overwrite=overwrite, workers_write=False) as tmp:
        tmp.write_text(html, encoding="utf-8")
    return path


class _CallableModule(types.ModuleType):
    """``wideml.report`` is this package once any of its modules is imported, and a function before: both are called alike."""

    def __call__(self, *args, **kwargs) -> Path:
        return report(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
