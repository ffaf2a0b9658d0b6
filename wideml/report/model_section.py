"""The report's model section, from a saved model's attributes (no array of the model is read).

Shows the estimator and its parameters (a nested embedding's too), the
solver and the reason ``solver="auto"`` chose it, the passes over X, and the
provenance ``wideml fit`` records: the training store, its fingerprint
(``store_id`` and the digest of its X files), the wideml and library versions,
the command line, the configuration, the run's time and peak memory, and
the warnings it showed. Models saved from Python carry only what their
caller put in ``provenance``.

The model is first checked as :func:`wideml.load_model` checks it (schema,
registered classes, every chunk present): a tampered or incomplete model,
which ``predict`` would refuse, is refused here too, in the same sentence.
"""

from __future__ import annotations

import json
import os

from wideml.models.persistence import load_model
from wideml.models.store import read_model_attrs
from wideml.report.consistency import recorded
from wideml.report.store_section import human_bytes

#: State keys shown in the model's summary, with their labels.
STATE_KEYS = (("n_components", "embedding dimension d"), ("solver", "solver"), ("solver_reason", "why this solver"),
              ("n_fit_passes", "passes over X"), ("precision", "precision of the products"), ("kernel", "kernel"))


def _short(name) -> str:
    return str(name).rsplit(".", 1)[-1]


def _value(value) -> str:
    """A parameter value as text (JSON for lists and mappings)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "None" if value is None else str(value)


def _parameters(params: dict, prefix: str = "") -> list[tuple[str, str]]:
    rows = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, dict) and "__estimator__" in value:
            rows.append((prefix + key, _short(value["__estimator__"])))
            rows += _parameters(value.get("params") or {}, prefix=f"{prefix}{key}.")
        else:
            rows.append((prefix + key, _value(value)))
    return rows


def _find(state, key: str):
    """The first value of ``key`` in ``state`` or the mappings nested in it (an EmbeddingClassifier keeps its embedding's state nested)."""
    if isinstance(state, dict):
        if key in state and not isinstance(state[key], dict):
            return state[key]
        for name, value in state.items():
            if str(name).endswith("params"):  # parameters (solver="auto"), not the fitted state (solver "gram")
                continue
            found = _find(value, key)
            if found is not None:
                return found
    return None


def model_section(path) -> dict:
    """The facts the report shows about a saved model.

    Parameters
    ----------
    path : str or path-like
        A model folder written by ``wideml fit`` or :func:`wideml.save_model`.

    Returns
    -------
    dict
        ``path``, ``estimator``, ``summary`` and ``parameters`` ((label,
        value) pairs), ``provenance`` ((label, value) pairs), ``versions``
        (name, version), ``command``, ``config`` (JSON text), ``warnings``,
        ``recorded_store`` (the training store's identity, or None).
    """
    load_model(path)  # the load-time checks: a model wideml will not load is not described as a valid one
    attrs, _ = read_model_attrs(path)
    state = attrs.get("state") if isinstance(attrs.get("state"), dict) else {}
    estimator = _short(attrs.get("estimator", "?"))
    embedding = state.get("embedding_class")
    summary = [("estimator", estimator + (f" on {_short(embedding)}" if embedding else "")),
               ("written by", str(attrs.get("package", "?")))]
    for key, label in STATE_KEYS:
        value = _find(state, key)
        if value is not None:
            summary.append((label, _value(value)))
    provenance = attrs.get("provenance") if isinstance(attrs.get("provenance"), dict) else {}
    run = provenance.get("run") if isinstance(provenance.get("run"), dict) else {}
    prov = [(str(k), _value(v)) for k, v in provenance.items() if k not in ("run", "passes")]
    passes = _passes(provenance.get("passes"))
    if run:
        prov.append(("fit time", f"{float(run.get('seconds', 0.0)):.2f} s (the whole command: the fit, all its passes" +
                     (", and writing the model)" if passes else "; per-pass times are not recorded)")))
        prov.append(("peak memory", f"{human_bytes(run.get('peak_memory_bytes'))} resident (the whole process)"))
    versions = run.get("versions") if isinstance(run.get("versions"), dict) else {}
    return {"path": os.fspath(path), "estimator": estimator, "summary": summary,
            "parameters": _parameters(attrs.get("params") if isinstance(attrs.get("params"), dict) else {}),
            "provenance": prov, "passes": passes, "versions": sorted((str(k), str(v)) for k, v in versions.items()),
            "command": run.get("command"), "config": json.dumps(run["config"], indent=2, sort_keys=True) if run.get("config") else None,
            "warnings": run.get("warnings") if isinstance(run.get("warnings"), list) else [],
            "recorded_store": recorded(provenance.get("store"), provenance.get("store_fingerprint"))}


def _passes(log) -> list[dict]:
    """The model's per-pass log (provenance ``passes``) as rows: pass, what, time and sampled peak memory as text."""
    if not isinstance(log, list):
        return []
    rows = []
    for entry in log:
        if not isinstance(entry, dict):
            continue
        try:
            seconds = f"{float(entry.get('seconds', 0.0)):.3f} s"
        except (TypeError, ValueError):
            seconds = "-"
        peak = entry.get("peak_rss_bytes")
        peak = float(peak) if isinstance(peak, (int, float)) and not isinstance(peak, bool) and peak >= 0 else None
        rows.append({"pass": str(entry.get("pass", "?")), "what": str(entry.get("what", "")), "seconds": seconds,
                     "peak": human_bytes(peak)})
    return rows
