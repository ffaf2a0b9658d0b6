"""Declarative schemas of what a model store holds, checked before any estimator is built.

A model is data: each estimator class declares, as a :class:`ModelSchema`, the
JSON state it writes (key -> type) and the arrays it writes (name -> dtype
kinds and a *symbolic* shape such as ``("n_features", "n_components")``).
:func:`check_model_contents` checks a model group against it generically:

- every state key is present (unless marked optional with a trailing ``?``)
  with the declared JSON type, and no unknown key is present;
- every array is present (unless optional), no unknown array is present, its
  dtype kind is one of the declared kinds, and every symbol of its shape takes
  one value across all arrays and the state (``dims`` binds state values to
  symbols, e.g. ``state["n_features_in"]`` to ``n_features``);
- small arrays are read (they are n- or K-sized) and checked finite, and
  integer index arrays (``codes_of``) checked within their range;
- p-sized arrays are not read: their chunk files are listed once and must all
  exist (:func:`wideml.storage.integrity.check_zarr_array_complete`).

State types are strings: ``"int"``, ``"float"`` (ints accepted), ``"str"``,
``"bool"``, ``"list"``, ``"list[int]"``, ``"list[float]"``, ``"list[str]"``,
``"dict"``, ``"json"`` (anything JSON), each optionally ``"|null"``; or a
nested dict of the same form for a JSON object.
"""

from __future__ import annotations

import json
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wideml.storage.integrity import describe_chunk, expected_chunk_keys, missing_chunk_keys
from wideml.storage.model_space import SPACE_ARRAYS


@dataclass(frozen=True)
class ArraySpec:
    """One array of a model store.

    Parameters
    ----------
    shape : tuple of str or int
        Symbolic dimensions (names shared across arrays and state) or fixed sizes.
    kinds : str
        Accepted numpy dtype kinds, e.g. ``"f"`` or ``"iu"``.
    p_sized : bool
        Chunked like X and possibly huge: never read at load, only its chunk files are checked.
    optional : bool
        The estimator writes it only in some configurations.
    codes_of : str or None
        Integer values that index a dimension: each must lie in ``[0, dims[codes_of])``.
    finite : bool
        Float values must be finite (checked for small arrays only).
    """

    shape: tuple
    kinds: str = "f"
    p_sized: bool = False
    optional: bool = False
    codes_of: str | None = None
    finite: bool = True


@dataclass(frozen=True)
class ModelSchema:
    """The state and arrays one estimator class writes (see the module docstring)."""

    state: Mapping[str, Any]
    arrays: Mapping[str, ArraySpec]
    #: state path -> dimension symbol, e.g. ``{"n_features_in": "n_features", "training.shape.0": "n_train"}``
    dims: Mapping[str, str] = field(default_factory=dict)


LABEL_KINDS = "biufUSTO"


class SchemaViolation(Exception):
    """What is wrong with a model's contents (a phrase; the caller names the model path)."""


# --------------------------------------------------------------------------- state


def _type_ok(value: Any, kind: str) -> bool:
    if kind.endswith("|null"):
        return value is None or _type_ok(value, kind[: -len("|null")])
    if kind == "json":
        return _is_json(value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "dict":
        return isinstance(value, dict) and _is_json(value)
    if kind == "list":
        return isinstance(value, list) and _is_json(value)
    if kind.startswith("list[") and kind.endswith("]"):
        return isinstance(value, list) and all(_type_ok(v, kind[5:-1]) for v in value)
    raise ValueError(f"unknown state type {kind!r}")  # a bug in a schema table, not in a model


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


def check_state(state: Any, spec: Mapping[str, Any], where: str = "state") -> None:
    """Check a JSON object against a state spec; raise :class:`SchemaViolation` naming the first problem."""
    if not isinstance(state, dict):
        raise SchemaViolation(f"its {where} is a {type(state).__name__}, not a JSON object")
    wanted = {k.rstrip("?"): (v, k.endswith("?")) for k, v in spec.items()}
    unknown = sorted(set(state) - set(wanted))
    if unknown:
        raise SchemaViolation(f"its {where} has the unknown entry {unknown[0]!r}")
    for key, (kind, optional) in wanted.items():
        if key not in state:
            if optional:
                continue
            raise SchemaViolation(f"its {where} lacks the entry {key!r}")
        value = state[key]
        if isinstance(kind, Mapping):
            check_state(value, kind, f"{where}.{key}")
        elif not _type_ok(value, kind):
            raise SchemaViolation(f"its {where}.{key} is {_short(value)}, not of type {kind}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def state_value(state: Mapping[str, Any], dotted: str) -> Any:
    """``state_value(st, "training.shape.1")``: a value inside nested state by a dotted path (ints index lists)."""
    value: Any = state
    for part in dotted.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


# --------------------------------------------------------------------------- arrays


def _bind(dims: dict[str, int], symbol, size: int, what: str) -> None:
    if isinstance(symbol, int):
        if size != symbol:
            raise SchemaViolation(f"{what} has length {size} where {symbol} is expected")
        return
    if symbol in dims and dims[symbol] != size:
        raise SchemaViolation(f"{what} has length {size} but {symbol} is {dims[symbol]} elsewhere in the model")
    dims[symbol] = size


def _check_small_values(name: str, spec: ArraySpec, values: np.ndarray, dims: Mapping[str, int]) -> None:
    if spec.finite and values.dtype.kind == "f" and values.size and not np.all(np.isfinite(values)):
        raise SchemaViolation(f"its array {name!r} holds NaN or infinite values")
    if spec.codes_of is not None and values.size:
        bound = dims.get(spec.codes_of)
        if bound is not None and (values.min() < 0 or values.max() >= bound):
            raise SchemaViolation(f"its array {name!r} holds indices outside 0..{bound - 1} ({spec.codes_of})")


def check_model_contents(schema: ModelSchema, state: Any, group, group_path: str | os.PathLike, *, fixed: Mapping[str, int] | None = None, all_chunks: bool = True) -> dict[str, int]:
    """Check a model group's state and arrays against ``schema``; returns the bound dimensions.

    Parameters
    ----------
    schema : ModelSchema
    state : JSON value
        The model's ``state`` attribute (checked to be an object first).
    group : zarr.Group
        The opened model group (arrays are inspected through their metadata).
    group_path : path-like
        Folder of the group, for the chunk-file listing of p-sized arrays.
    fixed : dict, optional
        Dimensions already known (e.g. ``n_features`` from the recorded feature layout).
    all_chunks : bool, default True
        Check the chunk files of every array (models saved with every chunk written, even
        all-zero ones); False checks only the p-sized arrays (models written before that).

    Returns
    -------
    dict of str to int

    Raises
    ------
    SchemaViolation
        Naming the first problem found. Reads only small arrays; p-sized ones are listed, not read.
    """
    check_state(state, schema.state)
    dims: dict[str, int] = {}
    for key, symbol in schema.dims.items():
        if key.split(".")[0] not in state:
            continue  # an optional key that is absent (check_state refused a missing required one)
        try:
            value = state_value(state, key)
        except (KeyError, IndexError, TypeError, ValueError):
            raise SchemaViolation(f"its state lacks {key}") from None
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise SchemaViolation(f"its state.{key} is {_short(value)}, not a positive integer")
        _bind(dims, symbol, int(value), f"state.{key}")
    for symbol, value in (fixed or {}).items():
        _bind(dims, symbol, int(value), symbol)
    present = set(group.array_keys()) - set(SPACE_ARRAYS)  # the mask and feature ids: checked by read_model_space
    unknown = sorted(present - set(schema.arrays))
    if unknown:
        raise SchemaViolation(f"it holds the unknown array {unknown[0]!r}")
    opened = {}
    for name, spec in schema.arrays.items():
        if name not in present:
            if spec.optional:
                continue
            raise SchemaViolation(f"its array {name!r} is missing")
        arr = group[name]
        opened[name] = arr
        if len(arr.shape) != len(spec.shape):
            raise SchemaViolation(f"its array {name!r} has {len(arr.shape)} dimension(s) (shape {tuple(arr.shape)}), not {len(spec.shape)}")
        if np.dtype(arr.dtype).kind not in spec.kinds:
            raise SchemaViolation(f"its array {name!r} has dtype {arr.dtype}, which is not of kind {'/'.join(spec.kinds)}")
        for i, (symbol, size) in enumerate(zip(spec.shape, arr.shape)):
            _bind(dims, symbol, int(size), f"its array {name!r} (axis {i})")
    for name, arr in opened.items():
        spec = schema.arrays[name]
        if spec.p_sized or all_chunks:
            missing = missing_chunk_keys(os.path.join(os.fspath(group_path), name), arr.shape, arr.chunks)
            if missing:
                more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
                raise SchemaViolation(f"{describe_chunk(missing[0], arr.shape, arr.chunks)}{more} of its array {name!r} is missing "
                                      "(a chunk file was deleted), so those values would read as zeros")
            if spec.p_sized:
                _check_raw_chunk_sizes(os.path.join(os.fspath(group_path), name), name, arr)
        if not spec.p_sized:
            try:
                values = np.asarray(arr[...])
            except Exception as exc:  # noqa: BLE001 - an unreadable chunk is a corrupt model
                raise SchemaViolation(f"its array {name!r} cannot be read ({type(exc).__name__})") from None
            _check_small_values(name, spec, values, dims)
    return dims



def _check_raw_chunk_sizes(array_dir: str, name: str, arr) -> None:
    """Every chunk file of an uncompressed array holds exactly one chunk's bytes (a stat per chunk, no read).

    p-sized arrays are read only when new data is projected; a truncated chunk
    file would fail there, deep inside a pass. Compressed arrays are left to
    the decoder, which reports a damaged chunk when it is read.
    """
    try:
        with open(os.path.join(array_dir, "zarr.json")) as f:
            codecs = json.load(f).get("codecs") or []
    except (OSError, ValueError):
        raise SchemaViolation(f"its array {name!r} has unreadable metadata") from None
    if [c.get("name") for c in codecs] != ["bytes"]:
        return
    expected = int(np.prod(arr.chunks)) * np.dtype(arr.dtype).itemsize
    for key in sorted(expected_chunk_keys(arr.shape, arr.chunks)):
        path = os.path.join(array_dir, "c", *map(str, key))
        try:
            size = os.stat(path).st_size
        except OSError:
            continue  # missing chunks are reported by the listing above
        if size != expected:
            raise SchemaViolation(f"{describe_chunk(key, arr.shape, arr.chunks)} of its array {name!r} has {size} bytes, not "
                                  f"{expected} (its file is truncated or damaged)")
