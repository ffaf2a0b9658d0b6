"""The documentation site builds with warnings as errors, and its generated pages follow the code (issue 26).

``sphinx-build -W --keep-going -b html`` runs on a copy of ``docs/`` in a temporary folder (so the
gallery's generated pages never land in the repository), with the gallery's examples executed. The
build must finish with no warning at all; then the generated references are checked against the code
they are generated from: every subcommand of the parser, every config key, every public name, and a
figure from every gallery example. A planted broken link must fail the same build command.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

for _module in ("sphinx", "numpydoc", "sphinx_gallery", "myst_parser"):
    pytest.importorskip(_module, reason="the docs extra is not installed (pip install -e '.[docs]'; scripts/setup_env.sh does)")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _build(src: Path, out: Path, doctrees: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q", "-d", str(doctrees),
                           str(src), str(out)], capture_output=True, text=True, env=env, timeout=600, cwd=src.parent)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(source copy, html folder, doctrees, the build's result)."""
    base = tmp_path_factory.mktemp("docs_build")
    src = base / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "auto_examples", "sg_execution_times.rst",
                                                             "__pycache__"))
    # pages show figures of benchmarks/results/ by their path relative to docs/
    (base / "benchmarks").symlink_to(ROOT / "benchmarks", target_is_directory=True)
    out, doctrees = base / "html", base / "doctrees"
    return src, out, doctrees, _build(src, out, doctrees)


def test_docs_build_without_warnings(site):
    _, out, _, result = site
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-6000:]
    assert not re.search(r"WARNING|ERROR", text), text[-6000:]
    for page in ("index", "getting_started", "api", "cli", "benchmarks", "architecture", "schedulers",
                 "guide/configuration", "guide/stores", "auto_examples/index"):
        assert (out / f"{page}.html").is_file(), page


def _subcommands(parser: argparse.ArgumentParser, prefix: str = "wideml"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}"
                yield from _subcommands(sub, f"{prefix} {name}")


def test_cli_reference_lists_every_command_and_option(site):
    from wideml.cli.main import build_parser

    _, out, _, result = site
    assert result.returncode == 0
    page = (out / "cli.html").read_text()
    parser = build_parser()
    commands = list(_subcommands(parser))
    assert len(commands) >= 10
    for command in commands:
        assert f"<h2>{command}" in page or f"<h3>{command}" in page, command
    for option in ("--n-components", "--max-dim", "--overwrite", "--memory-limit", "--label-column"):
        assert option in page, option


def test_configuration_page_lists_every_key(site):
    import wideml
    from wideml.runtime.cluster_settings import CLUSTER_DEFAULTS, KINDS, settings_of

    _, out, _, result = site
    assert result.returncode == 0
    page = (out / "guide" / "configuration.html").read_text()
    for key in wideml.config.keys:
        if key != "cluster":
            assert f'<span class="pre">{key}</span>' in page, key
            assert f"DASK_WIDEML__{key.upper().replace('-', '_')}" in page, key
    for kind in KINDS:
        for name in settings_of(kind):
            assert f"cluster.&lt;kind&gt;.{name}" in page, name
    for key in CLUSTER_DEFAULTS:
        if key not in KINDS:
            assert f"cluster.{key}" in page, key


def test_api_reference_documents_every_public_name(site):
    import wideml

    _, out, _, result = site
    assert result.returncode == 0
    page = (out / "api.html").read_text()
    for name in wideml.__all__:
        if name != "__version__":
            assert f'id="wideml.{name}"' in page, name
    assert 'id="wideml.LOL.fit"' in page and "Examples" in page


def test_gallery_examples_ran_and_drew(site):
    _, out, _, result = site
    assert result.returncode == 0
    examples = sorted(p.stem for p in (DOCS / "examples").glob("plot_*.py"))
    assert len(examples) >= 3
    for stem in examples:
        page = (out / "auto_examples" / f"{stem}.html").read_text()
        figures = list((out / "_images").glob(f"sphx_glr_{stem}_0*.png"))
        assert figures, f"{stem} drew no figure"
        assert "Traceback" not in page, stem


def test_a_warning_fails_the_build(site):
    """-W makes a warning an error: a link to a missing page fails the same command."""
    src, out, doctrees, result = site
    assert result.returncode == 0
    index = src / "index.md"
    index.write_text(index.read_text() + "\nSee [a page that does not exist](no_such_page.md).\n")
    planted = _build(src, out, doctrees)
    assert planted.returncode != 0
    assert "no_such_page" in planted.stdout + planted.stderr
