"""The report's cross-validation section, from the JSON ``wideml cv -o`` writes (``CVReport.to_dict`` and more).

Shows the error-against-d figure (:mod:`wideml.report.cv_figure`, the figure of
``wideml cv --plot``), a table with each method's chosen d, error, sd and
Cohen's kappa (and the fixed-dimension methods' error), and a confusion matrix
per method at its chosen d, summed over the rounds of the out-of-fold
predictions. The true classes come from the JSON's ``true_codes`` (written by
``wideml cv -o``) or, for a JSON without them, from the labels of the store
given with it, and only when that store is the one the JSON records (same
path, or same store id); another store, or one whose classes or sample count
differ from the cross-validated ones, gives no matrix (a note says why) rather
than a wrong one. Above :data:`HEATMAP_CLASSES` classes a matrix is a heatmap
image (class codes on the axes) instead of a K x K table. The JSON is checked
field by field first (:mod:`wideml.report.cv_json`).
"""

from __future__ import annotations

import math
import os

import numpy as np

from wideml.report.consistency import recorded, same_store
from wideml.report.cv_figure import cv_figure, report_from_json
from wideml.report.cv_json import read_cv
from wideml.report.figures import figure_uri, pyplot

#: Above this many classes a confusion matrix is drawn as a heatmap image, not an HTML table.
HEATMAP_CLASSES = 30


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


def _true_codes(doc: dict, labels, same_store: bool | None) -> tuple[np.ndarray | None, str | None]:
    """The true class codes of the cross-validated samples, or None and why there are none.

    Without ``true_codes`` in the JSON, the store's labels are used only when the store given is
    the one the JSON records (``same_store``) and its classes are the cross-validated ones.
    """
    classes = [str(c) for c in doc.get("classes", [])]
    if isinstance(doc.get("true_codes"), list):
        return np.asarray(doc["true_codes"], dtype=np.int64), None
    if labels is None:
        return None, ("no confusion matrix: this cross-validation report holds no true classes (written before "
                      "`wideml cv -o` recorded them); give its store too.")
    if same_store is not True:
        return None, (f"no confusion matrix: this cross-validation report holds no true classes and the store given is "
                      f"not the store it records ({doc.get('store') or 'none recorded'}); give that store.")
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


def _heatmap(counts: np.ndarray, share: np.ndarray, title: str) -> str:
    """A K x K confusion matrix as a PNG ``data:`` URI (row shares as shade), for many classes."""
    plt = pyplot()
    k = counts.shape[0]
    size = min(9.0, 3.0 + k * 0.03)
    fig, ax = plt.subplots(figsize=(size + 1.2, size), dpi=100)
    image = ax.imshow(share, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    ax.set_xlabel("predicted class (code)")
    ax.set_ylabel("true class (code)")
    ax.set_title(title.replace("$", r"\$"), fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="share of the row")
    fig.tight_layout()
    return figure_uri(fig)


def _matrices(doc: dict, labels, same_store: bool | None = None) -> tuple[list[dict], str | None]:
    classes = [str(c) for c in doc.get("classes", [])]
    if not any(r.get("predictions") and r.get("error") is None for r in doc["results"].values()):
        return [], None  # only fixed-dimension methods (or none scored): no out-of-fold predictions to count
    truth, why = _true_codes(doc, labels, same_store)
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
        rounds = len(r["predictions"])
        if len(classes) > HEATMAP_CLASSES:  # a K x K table of many classes cannot be read: a heatmap, codes on the axes
            title = f"{name}, d = {r['best_dim']}" + (f" ({rounds} rounds summed)" if rounds > 1 else "")
            out.append({"method": name, "best_dim": r["best_dim"], "classes": classes, "cells": None, "rounds": rounds,
                        "image": _heatmap(counts, share, title),
                        "correct": int(np.trace(counts)), "total": int(counts.sum())})
            continue
        cells = [[{"count": int(counts[i, j]), "shade": round(float(share[i, j]), 3)} for j in range(len(classes))]
                 for i in range(len(classes))]
        out.append({"method": name, "best_dim": r["best_dim"], "classes": classes, "cells": cells, "rounds": rounds,
                    "image": None})
    return out, why


def _passes(n) -> str:
    return "passes over X unknown" if not isinstance(n, int) else f"{n} pass{'' if n == 1 else 'es'} over X"


def cv_section(cv, labels=None, *, store: dict | None = None) -> dict:
    """The facts and figure of the report's cross-validation section.

    Parameters
    ----------
    cv : str, path-like or mapping
        The JSON ``wideml cv -o`` wrote (or its content).
    labels : array-like of shape (n_samples,), optional
        The store's labels, for a report without ``true_codes``.
    store : dict, optional
        That store's identity (:func:`wideml.report.consistency.identity_of`); its labels
        are used only if it is the store the report records.

    Returns
    -------
    dict
        ``title``, ``figure`` (URI or None: no method has a curve), ``table``,
        ``matrices``, ``matrix_note``, ``run`` (what the run recorded, or None),
        ``single_dim`` and ``recorded_store`` (the store identity the JSON records, or None).
    """
    doc = read_cv(cv)
    curves = any(r.get("error") is None and r.get("dims") for r in doc["results"].values())
    title = (f"{os.path.basename(str(doc.get('store', ''))) or 'store'}: {doc.get('cv', '')}, "
             f"{str(doc.get('classifier', 'lda')).upper()} on the embedding, {_passes(doc.get('n_passes'))}")
    if curves:
        pyplot()  # matplotlib missing: the sentence naming wideml[report]
    figure = figure_uri(cv_figure(report_from_json(doc), title.replace("$", r"\$"))) if curves else None
    recorded_store = recorded(doc.get("store"), doc.get("store_fingerprint"))
    matrices, note = _matrices(doc, labels, same_store(store, recorded_store))
    run = doc.get("run") if isinstance(doc.get("run"), dict) else None
    dims = {d for r in doc["results"].values() if r.get("error") is None for d in r.get("dims", [])}
    return {"title": title, "store": str(doc.get("store", "")), "figure": figure, "single_dim": len(dims) == 1, "table": _table(doc),
            "matrices": matrices, "matrix_note": note, "run": run,
            "recorded_store": recorded_store}
