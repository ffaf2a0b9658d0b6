"""The Examples sections of the main public API's docstrings run, and give what they show (issue 26).

Each public name below must have an Examples section with at least one example; it runs with
:mod:`doctest` in a fresh temporary working folder (examples that write a store or a model write it
there), with ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``. The API reference (docs/api.rst) shows the
same docstrings, so what the site shows is what runs here.
"""

from __future__ import annotations

import doctest

import pytest

import wideml

#: The public names whose docstrings must carry runnable examples.
DOCUMENTED = ("LOL", "PCA", "RRLDA", "LFL", "RP", "EmbeddingClassifier", "LOLRegressor", "cross_validate_dims",
              "two_sample_test", "open_store", "create_store", "write_store", "save_model", "load_model", "ingest")


def _examples(name: str) -> doctest.DocTest:
    obj = getattr(wideml, name)
    tests = doctest.DocTestFinder(recurse=False, exclude_empty=True).find(obj, f"wideml.{name}", globs={})
    assert tests and tests[0].examples, f"wideml.{name}'s docstring has no runnable Examples"
    assert "Examples\n" in obj.__doc__ and "--------" in obj.__doc__.split("Examples\n", 1)[1][:40], (
        f"wideml.{name}'s examples are not in a numpydoc Examples section")
    return tests[0]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    test = _examples(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    runner.run(test, out=out.append)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3, f"wideml.{name}: only {result.attempted} examples"
    assert result.failed == 0, "".join(out)


def test_a_wrong_example_fails(tmp_path, monkeypatch):
    """The runner above really compares outputs: an example whose shown result is wrong fails."""
    monkeypatch.chdir(tmp_path)
    test = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "planted", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=lambda _: None)
    assert runner.summarize(verbose=False).failed == 1
