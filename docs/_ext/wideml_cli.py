"""Sphinx directive ``wideml-cli``: the command-line reference, walked from ``wideml.cli.main.build_parser()``.

Every subcommand (and any sub-subcommand) becomes a section with its one-line summary, its
description, the usage line and one table per argument group (the option strings, what they take,
their help and default). Nothing is written by hand, so the page cannot drift from the parser; no
file is written either (the nodes are built in memory at build time).
"""

from __future__ import annotations

import argparse

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _help_text(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    """The action's help with argparse's ``%(default)s``-style fields filled in, as ``--help`` prints it."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    params = dict(vars(action), prog=parser.prog)
    for name in list(params):
        if params[name] is argparse.SUPPRESS:
            del params[name]
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(c) for c in params["choices"])
    try:
        return action.help % params
    except (KeyError, TypeError, ValueError):
        return action.help


def _invocation(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    """``-o OUT, --output OUT`` or the positional's metavar, as argparse's help prints it."""
    formatter = parser._get_formatter()
    return formatter._format_action_invocation(action)


def _default(action: argparse.Action) -> str:
    default = action.default
    if default is None or default is argparse.SUPPRESS or isinstance(action, (
            argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction,
            argparse._HelpAction, argparse._VersionAction, argparse._CountAction)):
        return ""
    if isinstance(default, (list, tuple)) and not default:
        return ""
    return str(default)


def _table(rows: list[tuple[str, str, str]]) -> nodes.table:
    table = nodes.table(classes=["wideml-cli-options"])
    group = nodes.tgroup(cols=3)
    table += group
    for width in (30, 55, 15):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for text in ("argument", "meaning", "default"):
        row += nodes.entry("", nodes.paragraph(text=text))
    head += row
    body = nodes.tbody()
    group += body
    for invocation, help_text, default in rows:
        row = nodes.row()
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(text=invocation)))
        row += nodes.entry("", nodes.paragraph(text=help_text))
        row += nodes.entry("", nodes.paragraph("", "", nodes.literal(text=default)) if default else nodes.paragraph())
        body += row
    return table


class WidemlCli(SphinxDirective):
    """``.. wideml-cli::``: the whole ``wideml`` command, one section per subcommand."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from wideml.cli.main import build_parser

        parser = build_parser()
        out: list[nodes.Node] = [nodes.paragraph(text=parser.description or "")]
        out += self._groups(parser)
        out += self._commands(parser, "wideml")
        return out

    def _groups(self, parser: argparse.ArgumentParser) -> list[nodes.Node]:
        out: list[nodes.Node] = [nodes.literal_block(text=parser.format_usage().strip())]
        for group in parser._action_groups:
            actions = [a for a in group._group_actions
                       if not isinstance(a, argparse._SubParsersAction) and a.help != argparse.SUPPRESS]
            if not actions:
                continue
            out.append(nodes.rubric(text=group.title or "arguments"))
            if group.description:
                out.append(nodes.paragraph(text=group.description))
            out.append(_table([(_invocation(a, parser), _help_text(a, parser), _default(a)) for a in actions]))
        return out

    def _commands(self, parser: argparse.ArgumentParser, prefix: str) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            summaries = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                title = f"{prefix} {name}"
                section = nodes.section(ids=[nodes.make_id(title)], names=[nodes.fully_normalize_name(title)])
                section += nodes.title(text=title)
                if summaries.get(name):
                    section += nodes.paragraph(text=summaries[name])
                if sub.description and sub.description != summaries.get(name):
                    section += nodes.paragraph(text=sub.description)
                section += self._groups(sub)
                if sub.epilog:
                    section += nodes.literal_block(text=sub.epilog)
                section += self._commands(sub, title)
                self.state.document.note_implicit_target(section, section)
                out.append(section)
        return out


def setup(app):
    app.add_directive("wideml-cli", WidemlCli)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
