"""Issue 22: help texts that said what the command no longer does, and the randomized solver's convergence options.

``wideml rechunk --help`` said OUT may be IN (an output may not be its input); ``wideml fit --help`` said
``--n-power-iter`` is the number of power iterations (the solver now iterates until its subspace converges:
``n_power_iter`` is the fewest steps, ``max_power_iter`` the cap, ``tol`` the tolerance), and ``fit`` had no way to
set the cap or the tolerance.
"""

from __future__ import annotations

import inspect
import re

import pytest

from adversarial.harness import assert_refused, run_cli
from oracles import store_and_model
from wideml.cli.main import build_parser
from wideml.cli.model_commands import _build
from wideml.estimators.gram.lol import LOL, PCA, RRLDA
from wideml.exceptions import WidemlError


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    return capsys.readouterr().out


def _option_help(text: str, option: str) -> str:
    """The help of ``option`` in the help ``text`` (its line and the continuation lines), on single spaces."""
    lines = text.split("options:", 1)[1].splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(rf"\s+(-\w, )?{re.escape(option)}\b", line)]
    assert starts, f"{option} not in the options of the help"
    block = [lines[starts[0]]]
    for line in lines[starts[0] + 1:]:
        if not line.strip() or line.strip().startswith("-") or not line.startswith(" " * 8):
            break
        block.append(line)
    return " ".join(" ".join(block).split())


def test_rechunk_help_does_not_say_out_may_be_in(capsys):
    text = _option_help(_help(capsys, "rechunk"), "--overwrite")
    assert "OUT may be IN" not in text
    assert "IN" in text and "never its own input" in text


def test_fit_help_describes_the_converging_solver(capsys):
    text = _help(capsys, "fit")
    n_power = _option_help(text, "--n-power-iter")
    assert "fewest" in n_power and "--tol" in n_power and "--max-power-iter" in n_power
    assert "power iterations of the randomized solver (default 1)" not in text
    defaults = inspect.signature(LOL).parameters
    assert f"(default {defaults['max_power_iter'].default})" in _option_help(text, "--max-power-iter")
    tol = re.search(r"\(default ([0-9.e+-]+)\)", _option_help(text, "--tol"))
    assert tol and float(tol.group(1)) == defaults["tol"].default


@pytest.mark.parametrize(("method", "kind"), [("lol", LOL), ("qoq", LOL), ("pca", PCA), ("rrlda", RRLDA)])
def test_fit_passes_the_solver_limits_to_the_estimator(method, kind):
    args = build_parser().parse_args(["fit", method, "s.zarr", "-o", "m.zarr", "--n-power-iter", "2",
                                      "--max-power-iter", "7", "--tol", "1e-3"])
    est = _build(method, args, 40)
    emb = getattr(est, "embedding", est)
    assert isinstance(emb, kind)
    assert (emb.n_power_iter, emb.max_power_iter, emb.tol) == (2, 7, 1e-3)


def test_fit_keeps_the_estimator_defaults_when_not_given():
    est = _build("lol", build_parser().parse_args(["fit", "lol", "s.zarr", "-o", "m.zarr"]), 40)
    defaults = inspect.signature(LOL).parameters
    assert (est.embedding.max_power_iter, est.embedding.tol) == (defaults["max_power_iter"].default, defaults["tol"].default)


@pytest.mark.parametrize("option", [("--max-power-iter", "5"), ("--tol", "0.01")])
def test_solver_limits_refused_for_methods_without_a_randomized_solver(option):
    args = build_parser().parse_args(["fit", "lfl", "s.zarr", "-o", "m.zarr", *option])
    with pytest.raises(WidemlError, match=f"{option[0]} applies only to the randomized solver"):
        _build("lfl", args, 40)


@pytest.mark.parametrize("option", [("--tol", "0"), ("--tol", "-1"), ("--tol", "abc"), ("--max-power-iter", "0")])
def test_bad_solver_limits_are_usage_errors(capsys, option):
    with pytest.raises(SystemExit) as excinfo:
        build_parser().parse_args(["fit", "lol", "s.zarr", "-o", "m.zarr", *option])
    assert excinfo.value.code == 2
    assert option[0] in capsys.readouterr().err


def test_cli_fit_refuses_a_cap_below_the_fewest_steps(tmp_path):
    store_and_model(tmp_path)
    proc = run_cli("fit", "lol", tmp_path / "s.zarr", "-o", tmp_path / "new.zarr", "--solver", "randomized",
                   "--n-power-iter", "3", "--max-power-iter", "2")
    assert_refused(proc, "max_power_iter=2", "n_power_iter=3")
    assert not (tmp_path / "new.zarr").exists()
