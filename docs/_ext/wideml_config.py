"""Sphinx directive ``wideml-config``: every configuration key, generated from the code's defaults.

The keys, their defaults and their one-line meanings come from ``wideml/wideml.yaml`` (the file
:mod:`wideml.runtime.config` loads as the defaults; the meaning is each line's comment), and the
batch-scheduler settings under ``cluster`` from :mod:`wideml.runtime.cluster_settings`. The
directive checks that the keys it lists are exactly ``wideml.config.keys``: a key added to the code
without a line here, or a key without a comment, fails the build (an error, so ``-W`` stops).
"""

from __future__ import annotations

import importlib.resources
import re

import yaml
from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

_LINE = re.compile(r"^  ([a-z][a-z0-9-]*):\s*(.*?)\s*(?:#\s*(.*))?$")


def yaml_keys() -> list[tuple[str, str, str]]:
    """``(key, default as written, comment)`` for every top-level key of the ``wideml:`` mapping of wideml.yaml."""
    text = (importlib.resources.files("wideml") / "wideml.yaml").read_text()
    rows = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            rows.append((match.group(1), match.group(2), (match.group(3) or "").strip()))
    return rows


def _row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        row += nodes.entry("", cell)
    return row


def _table(header: tuple[str, ...], rows: list[list[nodes.Node]], widths: tuple[int, ...]) -> nodes.table:
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += _row([nodes.paragraph(text=h) for h in header])
    group += head
    body = nodes.tbody()
    for row in rows:
        body += _row(row)
    group += body
    return table


def _code(text: str) -> nodes.paragraph:
    return nodes.paragraph("", "", nodes.literal(text=text)) if text else nodes.paragraph()


class WidemlConfig(SphinxDirective):
    """``.. wideml-config::``: a table of every ``wideml.*`` key, then one of every ``wideml.cluster.<kind>.*`` setting."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from wideml.runtime.cluster_settings import CLUSTER_DEFAULTS, KINDS, settings_of
        from wideml.runtime.settings import config

        rows = yaml_keys()
        listed = {key for key, _, _ in rows} | {"cluster"}
        if listed != set(config.keys):
            raise ExtensionError(f"wideml.yaml lists {sorted(listed)} but wideml.config.keys is {sorted(config.keys)}")
        missing = [key for key, _, comment in rows if not comment]
        if missing:
            raise ExtensionError(f"wideml.yaml has no comment saying what {', '.join(missing)} means")
        out: list[nodes.Node] = [_table(
            ("key", "default", "meaning", "environment variable"),
            [[_code(key), _code(default), nodes.paragraph(text=comment),
              _code("DASK_WIDEML__" + key.upper().replace("-", "_"))] for key, default, comment in rows],
            (18, 14, 50, 28))]
        settings = sorted({name for kind in KINDS for name in settings_of(kind)})
        cluster_rows = []
        for name in settings:
            kinds = [kind for kind in KINDS if name in settings_of(kind)]
            defaults = {yaml.safe_dump(CLUSTER_DEFAULTS[k].get(name), default_flow_style=True).strip().removesuffix("...").strip()
                        for k in kinds}
            cluster_rows.append([_code(f"cluster.<kind>.{name}"), _code(" / ".join(sorted(defaults))),
                                 nodes.paragraph(text=", ".join(kinds))])
        out.append(nodes.paragraph(text=(
            "Batch-scheduler settings (--scheduler slurm|pbs|sge), one mapping per kind under the key cluster "
            "(e.g. cluster.slurm.cores); null leaves the value to dask-jobqueue's own configuration:")))
        out.append(_table(("key", "default", "kinds"), cluster_rows, (40, 20, 40)))
        top = sorted(key for key in CLUSTER_DEFAULTS if key not in KINDS)  # settings beside the kinds, e.g. wait-timeout
        out.append(nodes.paragraph(text="Beside the kinds, under the key cluster itself (any scheduler with workers to wait for):"))
        out.append(_table(("key", "default"), [[_code(f"cluster.{key}"), _code(str(CLUSTER_DEFAULTS[key]))] for key in top], (40, 60)))
        return out


def setup(app):
    app.add_directive("wideml-config", WidemlConfig)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
