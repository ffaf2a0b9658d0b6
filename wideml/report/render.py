"""The report's HTML: the Jinja2 template ``templates/report.html.j2`` filled from the sections' facts.

Autoescaping is on for every value (``autoescape=True``), so a label, id, path
or message such as ``<script>`` is shown as text and never runs; undefined
names are errors (``StrictUndefined``). The page carries a Content Security
Policy that allows only ``data:`` images and inline styles: a viewer loads
nothing from anywhere, and runs no script, even if some value were not escaped.
"""

from __future__ import annotations

import datetime

from wideml._version import __version__
from wideml.exceptions import WidemlError

#: The template file, under ``wideml/report/templates/`` (package data).
TEMPLATE = "report.html.j2"


def environment():
    """The Jinja2 environment of the report's templates (one sentence if jinja2 is missing)."""
    try:
        import jinja2
    except ImportError:
        raise WidemlError("the report is written with Jinja2 templates; install it with `pip install wideml[report]`.") from None
    return jinja2.Environment(loader=jinja2.PackageLoader("wideml.report", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(*, title: str, store: dict | None, cv: dict | None, model: dict | None, maps: dict | None,
                warnings: list[dict], warning_sources: int, cv_memory: str = "-", mismatches: list[str] | None = None) -> str:
    """The report as one HTML document (str).

    Parameters
    ----------
    title : str
    store, cv, model, maps : dict or None
        The sections' facts (:mod:`wideml.report.store_section` and its siblings); None leaves a section out.
    warnings : list of dict
        ``source``, ``category``, ``message`` of each warning the recorded runs showed.
    warning_sources : int
        How many recorded runs the warnings come from (0: no warnings section).
    cv_memory : str
        The cross-validation run's peak memory, as text.
    mismatches : list of str, optional
        Sentences naming inputs that come from different stores or models (a warning box at the top).
    """
    contents = [(anchor, label) for anchor, label, part in (("store", "Store", store), ("cv", "Cross-validation", cv),
                                                            ("model", "Model", model), ("maps", "Maps", maps)) if part]
    if warning_sources:
        contents.append(("warnings", f"Warnings ({len(warnings)})"))
    created = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return environment().get_template(TEMPLATE).render(
        title=title, version=__version__, created=created, contents=contents, store=store, cv=cv, model=model, maps=maps,
        warnings=warnings, show_warnings=warning_sources > 0, warning_sources=warning_sources, cv_memory=cv_memory,
        mismatches=mismatches or [])
