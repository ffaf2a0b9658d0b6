"""The report's cross-validation section, from the JSON ``wideml cv -o`` writes (``CVReport.to_dict`` and more).

Shows the error-against-d figure (:mod:`wideml.report.cv_figure`, the figure of
``wideml cv --plot``), a table with each method's chosen d, error, sd and
Cohen's kappa (and the fixed-dimension methods' error), and a confusion matrix
per method at its chosen d, summed over the rounds of the out-of-fold
predictions. The true classes come from the JSON's ``true_codes`` (written by
``wideml cv -o``) or, for a JSON without them, from the labels of the store
given with it; a store whose classes or sample count differ from the
cross-validated ones gives no matrix (a note says why) rather than a wrong one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping

import numpy as np

from wideml.exceptions import WidemlError
from wideml.report.cv_figure import cv_figure, report_from_json
from wideml.report.figures import figure_uri


def read_cv(cv) -> dict:
    """The cross-validation report: a mapping as given, or the JSON file at ``cv``; one sentence if it is not one.

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
    results = doc.get("results") if isinstance(doc, dict) else None
    fixed = doc.get("fixed_dimension_methods", {}) if isinstance(doc, dict) else None
    if not isinstance(results, dict) or not isinstance(fixed, dict) or not all(
            isinstance(r, dict) and isinstance(r.get("dims", []), list) for r in results.values()):
        raise WidemlError("the cross-validation report has no 'results' of methods; give the JSON that `wideml cv -o` wrote.")
    return doc


def _number(value) -> float:
    return float("nan") if value is None else float(value)


def _fmt(value, digits: int = 4) -> str:
    value = _number(value)
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def _table(doc: dict) -> list[dict]:
    """One row per method: name, best d, error, sd at best d, kappa at best d, solver, or why it failed."""
    rows = []
    for name, r in doc["results"].items():
        if r.get("error") is not None:
            rows.append({"method": name, "best_dim": "-", "error": "-", "sd": "-", "kappa": "-", "note": f"failed: {r['error']}"})
            continue
        dims = r.get("dims", [])
        at = dims.index(r["best_dim"]) if r.get("best_dim") in dims else None
        pick = (lambda key: r[key][at] if at is not None and len(r.get(key) or []) > at else None)
        rows.append({"method": name, "best_dim": str(r.get("best_dim")), "error": _fmt(r.get("best_error")),
                     "sd": _fmt(pick("stds")), "kappa": _fmt(pick("kappa")), "note": f"solver {r.get('solver', '-')}"})
    for name, r in doc.get("fixed_dimension_methods", {}).items():
        rows.append({"method": name, "best_dim": "fixed", "error": _fmt(r.get("error")), "sd": _fmt(r.get("std")),
                     "kappa": "-", "note": f"{r.get('n_splits', '?')} splits, refitted per split"
                     if "n_passes" not in r else f"{r['n_passes']} passes over X of its own"})
    chance = doc.get("chance_error")
    rows.append({"method": "chance", "best_dim": "", "error": _fmt(chance), "sd": "", "kappa": "0.0000",
                 "note": "always the largest class"})
    return rows


def _true_codes(doc: dict, labels) -> tuple[np.ndarray | None, str | None]:
    """The true class codes of the cross-validated samples, or None and why there are none."""
    classes = [str(c) for c in doc.get("classes", [])]
    if isinstance(doc.get("true_codes"), list):
        return np.asarray(doc["true_codes"], dtype=np.int64), None
    if labels is None:
        return None, ("no confusion matrix: this cross-validation report holds no true classes (written before "
                      "`wideml cv -o` recorded them); give its store too.")
    found, codes = np.unique(np.asarray(labels), return_inverse=True)
    if [str(c) for c in found] != classes:
        return None, "no confusion matrix: the store's classes are not the cross-validated ones; give the store the report was made on."
    return codes.astype(np.int64).ravel(), None


def _confusion(r: dict, truth: np.ndarray, n_classes: int) -> np.ndarray | None:
    """Counts (true class, predicted class) at the method's best d, summed over rounds; None without predictions."""
    predictions = r.get("predictions")
    if not predictions or r.get("best_dim") not in r.get("dims", []):
        return None
    at = r["dims"].index(r["best_dim"])
    counts = np.zeros((n_classes, n_classes), dtype=np.int64)
    for round_ in predictions:
        pred = np.asarray(round_[at], dtype=np.int64)
        if pred.shape != truth.shape:
            return None
        tested = (pred >= 0) & (pred < n_classes)
        np.add.at(counts, (truth[tested], pred[tested]), 1)
    return counts


def _matrices(doc: dict, labels) -> tuple[list[dict], str | None]:
    classes = [str(c) for c in doc.get("classes", [])]
    if not any(r.get("predictions") and r.get("error") is None for r in doc["results"].values()):
        return [], None  # only fixed-dimension methods (or none scored): no out-of-fold predictions to count
    truth, why = _true_codes(doc, labels)
    if truth is None:
        return [], why
    if truth.size and (truth.min() < 0 or truth.max() >= len(classes)):
        return [], "no confusion matrix: the report's true classes do not match its class list."
    out = []
    for name, r in doc["results"].items():
        if r.get("error") is not None:
            continue
        counts = _confusion(r, truth, len(classes))
        if counts is None:
            why = why or "no confusion matrix for a method whose predictions do not cover the store's samples."
            continue
        rows = counts.sum(axis=1, keepdims=True)
        share = np.divide(counts, rows, out=np.zeros(counts.shape), where=rows > 0)
        cells = [[{"count": int(counts[i, j]), "shade": round(float(share[i, j]), 3)} for j in range(len(classes))]
                 for i in range(len(classes))]
        out.append({"method": name, "best_dim": r["best_dim"], "classes": classes, "cells": cells,
                    "rounds": len(r["predictions"])})
    return out, why


def _passes(n) -> str:
    return "passes over X unknown" if not isinstance(n, int) else f"{n} pass{'' if n == 1 else 'es'} over X"


def cv_section(cv, labels=None) -> dict:
    """The facts and figure of the report's cross-validation section.

    Parameters
    ----------
    cv : str, path-like or mapping
        The JSON ``wideml cv -o`` wrote (or its content).
    labels : array-like of shape (n_samples,), optional
        The store's labels, for a report without ``true_codes``.

    Returns
    -------
    dict
        ``title``, ``figure`` (URI or None: no method has a curve), ``table``,
        ``matrices``, ``matrix_note``, ``run`` (what the run recorded, or None).
    """
    doc = read_cv(cv)
    curves = any(r.get("error") is None and r.get("dims") for r in doc["results"].values())
    title = (f"{os.path.basename(str(doc.get('store', ''))) or 'store'}: {doc.get('cv', '')}, "
             f"{str(doc.get('classifier', 'lda')).upper()} on the embedding, {_passes(doc.get('n_passes'))}")
    figure = figure_uri(cv_figure(report_from_json(doc), title.replace("$", r"\$"))) if curves else None
    matrices, note = _matrices(doc, labels)
    run = doc.get("run") if isinstance(doc.get("run"), dict) else None
    return {"title": title, "store": str(doc.get("store", "")), "figure": figure, "table": _table(doc),
            "matrices": matrices, "matrix_note": note, "run": run}
