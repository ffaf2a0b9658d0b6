"""Estimator parameters checked against a constraint table before any pass over X.

Every public estimator declares ``_parameter_constraints``: parameter name ->
list of constraints, any one of which the value must satisfy (as scikit-learn
does, but with our own small validator). :meth:`CheckedParams.validate_parameters`
runs the table at the start of ``fit`` (before X is touched beyond its
metadata) and when a model is loaded, so an invalid value is one sentence::

    LOL parameter second_moment='cubic' is not valid; use one of 'linear', 'quadratic'.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import numpy as np

from wideml.exceptions import WidemlError


class Constraint:
    """One acceptable kind of value: ``accepts(value)`` and a phrase for the error (``describe()``)."""

    def accepts(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


class Options(Constraint):
    """One of a fixed set of values (strings, compared exactly)."""

    def __init__(self, *options: Any):
        self.options = options

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (str, type(None))) and value in self.options

    def describe(self) -> str:
        if len(self.options) == 1:
            return repr(self.options[0])
        return "one of " + ", ".join(map(repr, self.options))


def _bound(value) -> str:
    """A bound as text: integers in full (``9223372036854775807``, never ``9.22337e+18``), other numbers by ``:g``."""
    if isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer() and abs(value) < 2**53):
        return str(int(value))
    return format(value, "g") if value is not None else ""


class Interval(Constraint):
    """An integer (``integer=True``) or real number between ``low`` and ``high``; bools are never numbers here.

    ``closed`` is "both", "left", "right" or "neither" (None bounds are open ends).
    """

    def __init__(self, low: float | None = None, high: float | None = None, *, integer: bool = False, closed: str = "both"):
        self.low, self.high, self.integer, self.closed = low, high, integer, closed

    def accepts(self, value: Any) -> bool:
        kind = numbers.Integral if self.integer else numbers.Real
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, kind):
            return False
        if not math.isfinite(float(value)):
            return False
        if self.low is not None and (value < self.low or (value == self.low and self.closed in ("right", "neither"))):
            return False
        if self.high is not None and (value > self.high or (value == self.high and self.closed in ("left", "neither"))):
            return False
        return True

    def describe(self) -> str:
        what = "an integer" if self.integer else "a number"
        low, high = _bound(self.low), _bound(self.high)
        if self.low is not None and self.high is not None:
            left = "[" if self.closed in ("both", "left") else "("
            right = "]" if self.closed in ("both", "right") else ")"
            return f"{what} in {left}{low}, {high}{right}"
        if self.low is not None:
            return f"{what} {'>=' if self.closed in ('both', 'left') else '>'} {low}"
        if self.high is not None:
            return f"{what} {'<=' if self.closed in ('both', 'right') else '<'} {high}"
        return f"{what}"


class Boolean(Constraint):
    """True or False (numpy bools too); not 0/1, not "yes"."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (bool, np.bool_))

    def describe(self) -> str:
        return "True or False"


class NoneValue(Constraint):
    """None (the parameter's documented default meaning)."""

    def accepts(self, value: Any) -> bool:
        return value is None

    def describe(self) -> str:
        return "None"


class PathLike(Constraint):
    """A filesystem path (str or os.PathLike)."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (str, os.PathLike)) and str(value) != ""

    def describe(self) -> str:
        return "a directory path"


class Satisfies(Constraint):
    """A value ``check(value)`` accepts; ``description`` names what is accepted."""

    def __init__(self, check: Callable[[Any], bool], description: str):
        self.check, self.description = check, description

    def accepts(self, value: Any) -> bool:
        try:
            return bool(self.check(value))
        except WidemlError:
            raise  # the check's own sentence is more precise (e.g. "unknown kernel 'rbf'; valid kernels are ...")
        except Exception:  # noqa: BLE001 - a check that cannot even look at the value rejects it
            return False

    def describe(self) -> str:
        return self.description


NONE = NoneValue()
BOOLEAN = Boolean()
POSITIVE_INT = Interval(1, integer=True)
NON_NEGATIVE_INT = Interval(0, integer=True)
SEED = Interval(0, 2**63 - 1, integer=True)
PRECISION = Options("auto", "float64", "float32")


def positive_reals(value: Any) -> bool:
    """A non-empty sequence of finite positive numbers (e.g. a sigma grid)."""
    items = list(value) if isinstance(value, Iterable) and not isinstance(value, (str, bytes)) else None
    return bool(items) and all(Interval(0, closed="neither").accepts(v) for v in items)


def is_splitter(value: Any) -> bool:
    """A cross-validation splitter (has ``split``) or an iterable of (train, test) index pairs."""
    return hasattr(value, "split") or (isinstance(value, Iterable) and not isinstance(value, (str, bytes, dict)))


#: Folds: an integer of at least 2, or a splitter.
CV_FOLDS = [Interval(2, integer=True), Satisfies(is_splitter, "a splitter with split() or an iterable of (train, test) indices")]

#: What the kernel estimators (KernelPCA, KernelLOL, KPCATrick) share.
KERNEL_CONSTRAINTS: dict[str, list[Constraint]] = {
    "kernel": [Options("rbf", "poly", "linear")],
    "sigma": [Interval(0, closed="neither")],
    "degree": [Interval(1, integer=True)],
    "coef0": [Interval()],
    "gamma": [Interval(0, closed="neither"), NONE],
    "tol": [Interval(0, 1, closed="left")],
    "n_landmarks": [Interval(2, integer=True), NONE],
    "random_state": [SEED, NONE],
}


def check_parameters(owner: str, params: dict[str, Any], constraints: dict[str, list[Constraint]]) -> None:
    """Raise one sentence for the first parameter no constraint of its list accepts.

    Parameters
    ----------
    owner : str
        The estimator or function name the sentence starts with.
    params : dict
        Parameter name -> value (``get_params(deep=False)``).
    constraints : dict
        Parameter name -> list of :class:`Constraint`; names absent from it are not checked.
    """
    for name, allowed in constraints.items():
        if name not in params:
            continue
        value = params[name]
        if any(c.accepts(value) for c in allowed):
            continue
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise WidemlError(f"{owner} parameter {name}={shown} is not valid; use {_join(c.describe() for c in allowed)}.")


def _join(phrases: Iterable[str]) -> str:
    phrases = list(phrases)
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " or " + phrases[-1]


class CheckedParams:
    """Mixin of every public estimator: :meth:`validate_parameters` runs the class's constraint table.

    Subclasses set ``_parameter_constraints`` (one entry per ``__init__``
    parameter) and may override :meth:`_check_parameter_combinations` for
    rules joining several parameters. Called first thing in ``fit`` (before
    any pass over X) and by ``load_model``.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}

    def validate_parameters(self) -> None:
        """Check every parameter (each alone, then together) without reading any data.

        Raises
        ------
        WidemlError
            One sentence naming the first invalid parameter and what it accepts.
        """
        check_parameters(type(self).__name__, self.get_params(deep=False), self._parameter_constraints)
        self._check_parameter_combinations()

    def _validate_parameters(self) -> None:
        """:meth:`validate_parameters`, under the name the estimators' ``fit`` and ``load_model`` call."""
        self.validate_parameters()

    def _check_parameter_combinations(self) -> None:
        """Rules between parameters (each valid alone); none by default."""


__all__ = ["BOOLEAN", "Boolean", "CV_FOLDS", "CheckedParams", "Constraint", "Interval", "KERNEL_CONSTRAINTS", "NONE", "NON_NEGATIVE_INT", "Options", "PRECISION",
           "POSITIVE_INT", "PathLike", "SEED", "Satisfies", "check_parameters", "is_splitter", "positive_reals"]
