"""Reading and checking the cross-validation JSON ``wideml cv -o`` writes, before the report shows any number of it.

A hand-edited or corrupt JSON is refused in one sentence naming the field
(never a traceback, never a silently wrong table or confusion matrix): every
``dims`` a list of integers, ``errors``/``stds``/``kappa`` lists of numbers (or
null) as long as ``dims``, ``best_dim`` one of ``dims``, out-of-fold
``predictions`` (rounds x dims x samples) of class codes below the number of
``classes`` (-1: a sample not tested in that round), ``true_codes`` codes of
``classes``, and numbers where the run records numbers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from wideml.exceptions import WidemlError

_FIX = "give the JSON that `wideml cv -o` wrote (or rerun `wideml cv`)."


def _refuse(where: str, problem: str) -> WidemlError:
    return WidemlError(f"the cross-validation report's {where} {problem}; it is corrupt or hand-edited: {_FIX}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v, *, null: bool = True) -> bool:
    return (null and v is None) or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _numbers(r: dict, key: str, where: str, n: int, *, required: bool) -> None:
    if key not in r and not required:
        return
    values = r.get(key)
    if not isinstance(values, list) or not all(_is_number(v) for v in values):
        raise _refuse(f"{where}.{key}", "is not a list of numbers")
    if len(values) != n:
        raise _refuse(f"{where}.{key}", f"has {len(values)} values for {n} dims")


def _codes(values, n_classes: int, *, untested: bool) -> bool:
    low = -1 if untested else 0
    return isinstance(values, list) and all(_is_int(v) and low <= v < n_classes for v in values)


def _check_result(name: str, r: dict, n_classes: int, n_samples: int | None) -> None:
    where = f"results[{name!r}]"
    dims = r.get("dims", [])
    if not isinstance(dims, list) or not all(_is_int(d) and d > 0 for d in dims):
        raise _refuse(f"{where}.dims", "is not a list of positive integers")
    if r.get("error") is not None:
        return  # a failed method: only its message is shown
    _numbers(r, "errors", where, len(dims), required=True)
    _numbers(r, "stds", where, len(dims), required=False)
    if r.get("kappa"):
        _numbers(r, "kappa", where, len(dims), required=True)
    if not _is_number(r.get("best_error")):
        raise _refuse(f"{where}.best_error", "is not a number")
    if dims and r.get("best_dim") not in dims:
        raise _refuse(f"{where}.best_dim", f"({r.get('best_dim')!r}) is not one of its dims {dims[:8]}")
    predictions = r.get("predictions")
    if predictions in (None, []):
        return
    if not isinstance(predictions, list) or not all(isinstance(p, list) and len(p) == len(dims) for p in predictions):
        raise _refuse(f"{where}.predictions", "is not a list of rounds with one prediction list per dim")
    for round_ in predictions:
        for pred in round_:
            if not _codes(pred, n_classes, untested=True):
                raise _refuse(f"{where}.predictions", f"hold codes outside the {n_classes} classes")
            if n_samples is not None and len(pred) != n_samples:
                raise _refuse(f"{where}.predictions", f"cover {len(pred)} samples where true_codes has {n_samples}")


def check_cv_doc(doc) -> dict:
    """Refuse, in one sentence naming the field, a cross-validation report whose fields are not what ``wideml cv -o`` writes.

    Parameters
    ----------
    doc : object
        The parsed JSON.

    Returns
    -------
    dict
        ``doc``, checked.
    """
    results = doc.get("results") if isinstance(doc, dict) else None
    fixed = doc.get("fixed_dimension_methods", {}) if isinstance(doc, dict) else None
    if not isinstance(results, dict) or not isinstance(fixed, dict) or not all(isinstance(r, dict) for r in results.values()):
        raise WidemlError(f"the cross-validation report has no 'results' of methods; {_FIX}")
    classes = doc.get("classes", [])
    if not isinstance(classes, list):
        raise _refuse("classes", "is not a list")
    for key in ("n_folds", "n_repeats", "n_splits", "n_passes"):
        if key in doc and doc[key] is not None and not _is_int(doc[key]):
            raise _refuse(key, "is not an integer")
    if not _is_number(doc.get("chance_error")):
        raise _refuse("chance_error", "is not a number")
    truth = doc.get("true_codes")
    if truth is not None and not _codes(truth, len(classes), untested=False):
        raise _refuse("true_codes", f"is not a list of codes of its {len(classes)} classes")
    for name, r in results.items():
        _check_result(name, r, len(classes), len(truth) if isinstance(truth, list) else None)
    for name, r in fixed.items():
        if not isinstance(r, dict) or not _is_number(r.get("error")) or not _is_number(r.get("std")):
            raise _refuse(f"fixed_dimension_methods[{name!r}]", "has no numeric error and std")
    return doc


def read_cv(cv) -> dict:
    """The cross-validation report: a mapping as given, or the JSON file at ``cv``, checked; one sentence if it is not one.

    Parameters
    ----------
    cv : str, path-like or mapping

    Returns
    -------
    dict
    """
    if isinstance(cv, Mapping):
        doc = dict(cv)
    else:
        try:
            with open(os.fspath(cv), encoding="utf-8") as fh:
                doc = json.load(fh)
        except FileNotFoundError:
            raise WidemlError(f"no cross-validation report at {os.fspath(cv)!r}; give the JSON that `wideml cv -o` wrote.") from None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise WidemlError(f"cannot read the cross-validation report {os.fspath(cv)!r} ({type(exc).__name__}); "
                              "give the JSON that `wideml cv -o` wrote.") from None
    return check_cv_doc(doc)
