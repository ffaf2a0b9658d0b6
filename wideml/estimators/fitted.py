"""Persisting fitted state from declared attribute tables.

Each estimator declares, once, which fitted attributes a model keeps and
where: a tuple of :class:`Fitted` entries (its ``_fitted`` table), built with
:func:`state` (a JSON value of the model's state), :func:`array` (a small
array, read into memory at load) and :func:`p_array` (a p-sized array,
chunked like X: saved as it is and opened lazily as a dask array at load).
:class:`FittedState` turns the table into the ``_model_state`` /
``_from_model_state`` pair the model I/O calls (:mod:`wideml.models.store`);
what one attribute cannot express (a fitted scikit-learn LDA kept as three
keys, a training store reopened at load) goes in the ``_save_more`` /
``_load_more`` hooks. The model's schema (:mod:`wideml.models.schemas`)
checks every key's type and shape before a table is read; a test checks that
each table names only keys its schema declares.

Example
-------
>>> class Model(FittedState):
...     _fitted = (state("n_features_in_", load=int), array("classes_"), p_array("class_means_", optional=True))
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import dask.array as da
import numpy as np
from sklearn.utils.validation import check_is_fitted

from wideml.runner.pickling import portable_state


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: ``default=REQUIRED`` (the default): every model has the key.
REQUIRED = _Marker("REQUIRED")
#: ``default=UNSET``: a model without the key (saved before it existed) leaves the attribute unset.
UNSET = _Marker("UNSET")


def to_json(value: Any) -> Any:
    """A JSON-ready copy of ``value``: numpy scalars and arrays as Python numbers and lists, tuples as lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def read_small(stored: Any) -> np.ndarray:
    """A small stored array (zarr array or array-like) read into memory."""
    return np.asarray(stored[...])


def read_lazy(stored: Any):
    """A p-sized stored array opened as a dask array (zarr arrays without a read; in-memory ones wrapped)."""
    if isinstance(stored, da.Array):
        return stored
    if type(stored).__module__.startswith("zarr"):
        return da.from_zarr(stored)
    return da.from_array(np.asarray(stored))


def _identity(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Fitted:
    """One fitted attribute and where a model keeps it.

    Parameters
    ----------
    attr : str
        The estimator attribute, e.g. ``"n_components_"``.
    key : str
        Its key: a state key (``in_state``) or an array name.
    in_state : bool
        Kept in the model's JSON state (else as an array).
    save : callable
        Attribute value -> stored value.
    load : callable
        Stored value (JSON value, or the stored array) -> attribute value.
    optional : bool
        Saved only when the attribute is set and not None; a model without the
        key gets None.
    default : object
        :data:`REQUIRED` (every model has the key), or for keys older models
        may lack: the value then set (a callable is called with the estimator
        class), or :data:`UNSET` to leave the attribute unset. Ignored for
        ``optional`` entries.
    """

    attr: str
    key: str
    in_state: bool
    save: Callable[[Any], Any]
    load: Callable[[Any], Any]
    optional: bool = False
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        """Every model has this key (neither optional nor added after models were first saved)."""
        return not self.optional and self.default is REQUIRED


def _key(attr: str, key: str | None) -> str:
    return key if key is not None else attr.rstrip("_")


def state(attr: str, key: str | None = None, *, load: Callable = _identity, save: Callable = to_json, optional: bool = False,
          default: Any = REQUIRED) -> Fitted:
    """A fitted attribute kept as a JSON value of the model's state (``key`` defaults to ``attr`` without its ``_``)."""
    return Fitted(attr, _key(attr, key), True, save, load, optional, default)


def array(attr: str, key: str | None = None, *, load: Callable = read_small, save: Callable = _identity,
          optional: bool = False, default: Any = REQUIRED) -> Fitted:
    """A fitted small (n- or K-sized) array, read into memory at load."""
    return Fitted(attr, _key(attr, key), False, save, load, optional, default)


def p_array(attr: str, key: str | None = None, *, load: Callable = read_lazy, save: Callable = _identity,
            optional: bool = False) -> Fitted:
    """A fitted p-sized array, saved chunked along features and opened lazily (as a dask array) at load."""
    return Fitted(attr, _key(attr, key), False, save, load, optional)


def save_fitted(est: Any, table: tuple[Fitted, ...]) -> tuple[dict, dict]:
    """The model state and arrays of ``est`` as ``table`` declares them.

    Returns
    -------
    state : dict
        JSON values, keyed as declared.
    arrays : dict of str -> array-like
    """
    state_out: dict = {}
    arrays: dict = {}
    for entry in table:
        if not hasattr(est, entry.attr):
            if entry.required:
                raise AttributeError(f"{type(est).__name__} has no fitted attribute {entry.attr!r} to save")
            continue
        value = getattr(est, entry.attr)
        if value is None and entry.optional:
            continue
        (state_out if entry.in_state else arrays)[entry.key] = entry.save(value)
    return state_out, arrays


def load_fitted(est: Any, table: tuple[Fitted, ...], state_in: Mapping, arrays: Mapping) -> None:
    """Set the attributes ``table`` declares on ``est`` from a model's state and arrays."""
    for entry in table:
        source = state_in if entry.in_state else arrays
        if entry.key in source:
            setattr(est, entry.attr, entry.load(source[entry.key]))
        elif entry.optional:
            setattr(est, entry.attr, None)
        elif entry.required:
            raise KeyError(f"the model has no {entry.key!r}")
        elif entry.default is not UNSET:
            setattr(est, entry.attr, entry.default(type(est)) if callable(entry.default) else entry.default)


class FittedState:
    """The ``_model_state`` / ``_from_model_state`` pair of an estimator, from its ``_fitted`` table.

    Subclasses declare ``_fitted`` and may extend :meth:`_save_more` and
    :meth:`_load_more` for what one attribute per key cannot express.
    """

    #: The fitted attributes a model keeps (see the module docstring).
    _fitted: ClassVar[tuple[Fitted, ...]] = ()

    def _model_state(self) -> tuple[dict, dict]:
        """The JSON state and arrays of the fitted estimator (its ``_fitted`` table, then :meth:`_save_more`)."""
        check_is_fitted(self, [entry.attr for entry in self._fitted if entry.required])
        state_out, arrays = save_fitted(self, self._fitted)
        self._save_more(state_out, arrays)
        return state_out, arrays

    @classmethod
    def _from_model_state(cls, params: dict, state_in: dict, arrays: dict) -> Any:
        """The estimator rebuilt from a model's parameters, state and arrays (checked against its schema already)."""
        est = cls(**params)
        load_fitted(est, cls._fitted, state_in, arrays)
        est._load_more(state_in, arrays)
        return est

    def __getstate__(self) -> dict:
        """The pickled state: fitted arrays kept in a work folder travel as their values (up to 256 MiB).

        A work folder is removed with the process that fitted the estimator,
        so a pickle that pointed at it would read nothing in another process
        (:mod:`wideml.runner.pickling`); above the limit pickling raises
        a :class:`~wideml.runner.pickling.NotPicklableError` naming
        ``wideml.save_model``.
        """
        parent = getattr(super(), "__getstate__", None)
        state = parent() if parent is not None else self.__dict__.copy()
        return portable_state(state, type(self).__name__) if isinstance(state, dict) else state

    def __deepcopy__(self, memo: dict) -> Any:
        """A deep copy that shares the work folder (its arrays keep it alive) but does not own it (no ``_group``)."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        state = copy.deepcopy(self.__dict__, memo)
        if "_group" in state:
            state["_group"] = None
        new.__dict__.update(state)
        return new

    def _save_more(self, state_out: dict, arrays: dict) -> None:
        """Add what the table cannot express to ``state_out`` / ``arrays`` (nothing by default)."""

    def _load_more(self, state_in: dict, arrays: dict) -> None:
        """Restore what :meth:`_save_more` saved (nothing by default)."""


__all__ = ["REQUIRED", "UNSET", "Fitted", "FittedState", "array", "load_fitted", "p_array", "read_lazy", "read_small", "save_fitted", "state",
           "to_json"]
