"""The public API: every name of ``wideml.__all__`` is importable from the package, documented, and cheap to reach.

``import wideml`` loads nothing heavy (its names are imported on first use), so the
console script can handle Ctrl-C from its first moment; ``wideml.config`` is the
checked handle on the ``wideml`` namespace of dask.config, ``wideml.FeatureStore``
the type :func:`wideml.open_store` returns.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import dask.config
import numpy as np
import pytest

import wideml
from wideml.runtime.config import DEFAULTS

#: numpydoc sections; a public class or function documents at least one of them.
SECTIONS = ("Parameters", "Returns", "Yields", "Attributes", "Raises")

#: Exceptions and warnings: one-line docstrings are their documentation (their messages are the sentences).
ONE_LINE_OK = ("WidemlError", "StoreError", "ConfigError", "PerformanceWarning")


@pytest.mark.parametrize("name", sorted(set(wideml.__all__) - {"__version__"}))
def test_each_public_name_is_importable_and_documented(name):
    namespace: dict = {}
    exec(f"from wideml import {name}", namespace)  # the form users write
    obj = namespace[name]
    assert obj is getattr(wideml, name)
    doc = inspect.getdoc(obj)  # an instance (wideml.config) is documented by its class
    assert doc and doc.split("\n")[0].strip(), f"wideml.{name} has no docstring"
    if name not in ONE_LINE_OK:
        assert any(f"{section}\n---" in doc for section in SECTIONS), f"wideml.{name}'s docstring has no numpydoc section"


def test_every_lazy_name_is_listed_and_every_listed_name_resolves():
    assert set(wideml._LAZY) <= set(wideml.__all__)
    assert len(wideml.__all__) == len(set(wideml.__all__))
    assert set(wideml.__all__) <= set(dir(wideml))
    assert {"FeatureStore", "config", "WidemlError"} <= set(wideml.__all__)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        wideml.no_such_name  # noqa: B018


def test_import_wideml_loads_nothing_heavy():
    code = ("import sys, wideml; wideml.WidemlError; "
            "print(sorted(m for m in ('numpy', 'dask', 'zarr', 'sklearn', 'distributed', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_feature_store_is_what_open_store_returns(tmp_path):
    path = wideml.write_store(tmp_path / "s.zarr", np.arange(12, dtype=np.float64).reshape(3, 4), y=np.array([0, 1, 0]))
    store = wideml.open_store(path)
    assert isinstance(store, wideml.FeatureStore)
    assert (store.n_samples, store.n_features) == (3, 4)


# ----------------------------------------------------------------------------- wideml.config
def test_config_reads_the_wideml_namespace_of_dask_config():
    assert wideml.config.keys == tuple(sorted(DEFAULTS))
    with dask.config.set({"wideml.memory-limit": "3GiB"}):
        assert wideml.config.get("memory_limit") == "3GiB" == wideml.config.get("memory-limit")
        assert wideml.config.as_dict()["memory-limit"] == "3GiB"
    assert wideml.config.defaults["memory-limit"] == DEFAULTS["memory-limit"]


def test_config_set_changes_now_or_for_a_block_only():
    before = dask.config.get("wideml.threads")
    with wideml.config.set(threads=3, memory_limit="2GiB"):
        assert dask.config.get("wideml.threads") == 3
        assert dask.config.get("wideml.memory-limit") == "2GiB"
    assert dask.config.get("wideml.threads") == before
    change = wideml.config.set({"chunk-size": "16MiB"})
    try:
        assert dask.config.get("wideml.chunk-size") == "16MiB"  # stays after the call
    finally:
        change.__exit__(None, None, None)
    assert dask.config.get("wideml.chunk-size") == DEFAULTS["chunk-size"]


@pytest.mark.parametrize(("settings", "match"), [
    ({"memry_limit": "2GiB"}, "unknown key 'memry-limit' \\(closest: 'memory-limit'\\)"),
    ({"memory_limit": "0"}, "memory-limit '0' is not a positive size"),
    ({"threads": 0}, "threads must be a positive integer"),
    ({"scheduler": "tcp://nowhere"}, "has no port"),
])
def test_config_set_refuses_in_one_sentence_and_changes_nothing(settings, match):
    before = {key: dask.config.get(f"wideml.{key}") for key in DEFAULTS}
    with pytest.raises(wideml.ConfigError, match=match):
        wideml.config.set(chunk_size="1MiB", **settings)  # a good value first: it must not be applied either
    assert {key: dask.config.get(f"wideml.{key}") for key in DEFAULTS} == before


def test_config_get_refuses_an_unknown_key():
    with pytest.raises(wideml.ConfigError, match="unknown config key 'no-such-key'"):
        wideml.config.get("no_such_key")


def test_config_load_applies_a_checked_file(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("wideml:\n  tree-width: 6\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("wideml:\n  tree-width: 1\n")
    with dask.config.set({"wideml.tree-width": DEFAULTS["tree-width"]}):  # restores what load() sets globally
        assert wideml.config.load(good) == {"tree-width": 6}
        assert wideml.config.get("tree_width") == 6
        with pytest.raises(wideml.ConfigError, match="bad.yaml.*tree-width must be an integer of at least 2"):
            wideml.config.load(bad)
        assert wideml.config.get("tree_width") == 6


# ----------------------------------------------------------------------------- the command line is a user of the API
#: Private names the command line may touch: the standard library's documented ``os._exit``.
CLI_PRIVATE_OK = {"os._exit"}


def _private_uses(folder: Path) -> list[str]:
    """``from wideml.X import _name`` (X outside the command line) and ``thing._name`` in the command line's files."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wideml") \
                    and not (node.module or "").startswith("wideml.cli"):
                found += [f"{path.name}:{node.lineno} from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                text = f"{ast.unparse(node.value)}.{node.attr}"
                if text not in CLI_PRIVATE_OK:
                    found.append(f"{path.name}:{node.lineno} {text}")
    return found


def test_the_command_line_uses_no_private_names_of_other_packages(tmp_path):
    cli = Path(wideml.__file__).parent / "cli"
    assert _private_uses(cli) == []
    # the check can fail: both forms planted in a copy
    (tmp_path / "planted.py").write_text("from wideml.sources.ingest import _pick\nimport os\nos._exit\nest._component_bound(1, 2, 3)\n")
    assert _private_uses(tmp_path) == ["planted.py:1 from wideml.sources.ingest import _pick",
                                       "planted.py:4 est._component_bound"]
