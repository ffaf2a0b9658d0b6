"""Saving and loading fitted models: a model file is data, never code (docs/architecture.md, "Trust").

Threat model: a model directory may have been edited by someone else. Loading
it must never import, call or construct anything the file names except
wideml's own registered model classes. So:

- the estimator class (top level, inside an ``EmbeddingClassifier``'s state,
  and in every nested ``{"__estimator__": ..., "params": ...}`` parameter) is
  looked up in :data:`MODEL_CLASSES` / the per-parameter tables below, by the
  exact qualified name wideml writes; anything else is refused;
- parameters must be parameters of that class (nested estimators only where the
  class takes one), state and arrays must match the class's schema table
  (:mod:`wideml.models.schemas`), p-sized arrays must have every
  chunk file — all before any estimator is built;
- after it is built, the estimator's own parameter checks run
  (``_validate_parameters``), so an edited parameter value is refused too.

Every refusal is one :class:`~wideml.exceptions.StoreError` sentence naming the
model path and what is wrong.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sklearn.neighbors import NeighborhoodComponentsAnalysis

from wideml.models import schemas
from wideml.estimators.classifier import EmbeddingClassifier
from wideml.estimators.encoder.estimator import EncoderClassifier
from wideml.estimators.kernel.kernel_lol import KernelLOL
from wideml.estimators.kernel.kpca import KernelPCA
from wideml.estimators.kernel.kpca_trick import DNE, LMNN, KPCATrick
from wideml.estimators.lfl import LFL
from wideml.estimators.rp import RP
from wideml.estimators.gram.lol import LOL, PCA, RRLDA
from wideml.estimators.regression import LOLRegressor
from wideml.exceptions import StoreError, WidemlError
from wideml.storage.layout import FeatureLayout, layout_from_attrs
from wideml.models.store import qualified_name, read_model_attrs, write_model
from wideml.models.schema_checks import ModelSchema, SchemaViolation, check_model_contents, check_state
from wideml.storage.model_space import SpaceViolation, read_model_space, read_model_table, with_space
from wideml.runner.workdir import make_work_folder, own_folder, resolve_workdir
from wideml.runtime.removal import register_scratch, remove_tree, unregister_scratch
from wideml.storage.remote_write import download_output, is_remote
from wideml.storage.urls import is_url, local_output, local_path_of

#: The model classes a model store may name at its top level, by the qualified name wideml writes.
MODEL_CLASSES: dict[str, type] = {qualified_name(c): c for c in (LOL, PCA, RRLDA, LFL, RP, EmbeddingClassifier, EncoderClassifier,
                                                                KernelPCA, KPCATrick, KernelLOL, LOLRegressor)}

#: Schema table of each model class (EmbeddingClassifier: its embedding's, see EMBEDDINGS).
MODEL_SCHEMAS: dict[type, ModelSchema] = {
    LOL: schemas.GRAM_PROJECTOR, PCA: schemas.GRAM_PROJECTOR, RRLDA: schemas.GRAM_PROJECTOR, LFL: schemas.LFL, RP: schemas.RP,
    EncoderClassifier: schemas.ENCODER, KernelPCA: schemas.KERNEL_PCA, KPCATrick: schemas.KPCA_TRICK, KernelLOL: schemas.KERNEL_EMBEDDING,
    LOLRegressor: schemas.LOL_REGRESSOR,
}

#: Embeddings an EmbeddingClassifier may hold (its ``embedding`` parameter and ``embedding_class`` state).
EMBEDDINGS: dict[str, type] = {qualified_name(c): c for c in (LOL, PCA, RRLDA, LFL, RP)}

#: Parameters that may hold an estimator, per class, and the classes allowed there.
NESTED_PARAMS: dict[type, dict[str, dict[str, type]]] = {
    EmbeddingClassifier: {"embedding": EMBEDDINGS},
    KPCATrick: {"learner": {qualified_name(c): c for c in (LMNN, DNE, NeighborhoodComponentsAnalysis)}},
}

_ESTIMATOR_KEY = "__estimator__"


# --------------------------------------------------------------------------- save


def save_model(estimator, path: str | os.PathLike, *, overwrite: bool = False, provenance: dict | None = None) -> Path:
    """Save a fitted wideml estimator as a zarr v3 group (atomic; no pickle).

    Parameters
    ----------
    estimator : fitted wideml estimator
        One of :data:`MODEL_CLASSES`.
    path : path-like or str
        Output directory (``.zarr`` suggested); made absolute. Or a URL (``s3://bucket/m.model``): the model is
        written locally, uploaded under a temporary prefix and put in place with its completion marker last
        (:mod:`wideml.storage.remote_write`).
    overwrite : bool, default False
    provenance : dict, optional
        Extra JSON metadata (e.g. the training store's path).

    Returns
    -------
    Path or str
        The model's path (its URL, for an object store).

    Notes
    -----
    Reads no X; p-sized fitted arrays (loadings, class means) are copied chunk
    by chunk from the estimator's work folder. The feature layout recorded at
    fit (``feature_layout_``) is saved with the model, and with it the
    training store's spatial reference (attrs entry and ``mask`` array) and
    feature ids (``feature_ids`` array) when it had them
    (:mod:`wideml.storage.model_space`).

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> clf = wideml.EmbeddingClassifier(wideml.LOL(2), classifier="lda").fit(X, y)
    >>> path = wideml.save_model(clf, "example.model.zarr")    # a zarr group with JSON attributes: no pickle
    >>> model = wideml.load_model(path)
    >>> type(model).__name__
    'EmbeddingClassifier'
    >>> bool((model.predict(X) == clf.predict(X)).all())
    True
    """
    if not is_remote(path):
        path = local_output(path)  # a file:// URL is the local path it names
    name = qualified_name(type(estimator))
    if MODEL_CLASSES.get(name) is not type(estimator) or not hasattr(estimator, "_model_state"):
        raise StoreError(f"{type(estimator).__name__} cannot be saved as a wideml model; save one of "
                         f"{', '.join(c.__name__ for c in MODEL_CLASSES.values())}.")
    params = estimator.get_params(deep=False)
    for key, value in params.items():
        if hasattr(value, "get_params") and qualified_name(type(value)) not in NESTED_PARAMS.get(type(estimator), {}).get(key, {}):
            raise StoreError(f"parameter {key}={type(value).__name__}(...) of {type(estimator).__name__} cannot be saved in a model "
                             "(wideml reloads only its registered classes); use a wideml embedding or learner there.")
    state, arrays = estimator._model_state()
    layout = estimator_layout(estimator)
    return write_model(path, estimator=name, params=params, state=state, arrays=arrays, overwrite=overwrite,
                       provenance=_with_pass_log(provenance or getattr(estimator, "provenance_", None) or {}, estimator),
                       feature_layout=layout.to_json() if layout is not None else None, space=layout)


def _with_pass_log(provenance: dict, est) -> dict:
    """``provenance`` plus, under ``"passes"``, the fit's per-pass log (``pass_log_``: what, seconds, sampled peak RSS) when it has one."""
    log = getattr(est, "pass_log_", None)
    if log is None and hasattr(est, "embedding_") and hasattr(est.embedding_, "get_params"):
        log = getattr(est.embedding_, "pass_log_", None)
    if not log or "passes" in provenance:
        return provenance
    return {**provenance, "passes": [dict(entry) for entry in log]}


def estimator_layout(est) -> FeatureLayout | None:
    """The feature layout a fitted estimator recorded at fit (None if it has none)."""
    layout = getattr(est, "feature_layout_", None)
    if layout is None and hasattr(est, "training_"):
        layout = getattr(est.training_, "layout", None)
    if layout is None and hasattr(est, "embedding_") and hasattr(est.embedding_, "get_params"):
        layout = estimator_layout(est.embedding_)
    return layout


def attach_layout(est, layout: FeatureLayout | None) -> None:
    """Give a loaded estimator (and the embedding or training data it predicts through) the recorded layout."""
    est.feature_layout_ = layout
    if hasattr(est, "training_"):
        est.training_.layout = layout
    inner = getattr(est, "embedding_", None)
    if inner is not None and hasattr(inner, "get_params"):
        attach_layout(inner, layout)


# --------------------------------------------------------------------------- load


def registered_class(name: Any, allowed: dict[str, type], where: str) -> type:
    """The class registered under ``name`` in ``allowed``; SchemaViolation otherwise (nothing is imported)."""
    if not isinstance(name, str) or name not in allowed:
        kinds = ", ".join(c.__name__ for c in allowed.values())
        raise SchemaViolation(f"its {where} names {name!r}, which is not one of the classes a wideml model may hold there ({kinds})")
    return allowed[name]


def decode_params(cls: type, doc: Any, where: str) -> dict:
    """Check a class's saved parameters and rebuild nested registered estimators; SchemaViolation on anything else."""
    if not isinstance(doc, dict):
        raise SchemaViolation(f"its {where} is a {type(doc).__name__}, not a JSON object")
    known = set(cls().get_params(deep=False))
    unknown = sorted(set(doc) - known)
    if unknown:
        raise SchemaViolation(f"its {where} has {unknown[0]!r}, which is not a parameter of {cls.__name__}")
    nested = NESTED_PARAMS.get(cls, {})
    out = {}
    for key, value in doc.items():
        if isinstance(value, dict) and _ESTIMATOR_KEY in value:
            if key not in nested:
                raise SchemaViolation(f"its {where}.{key} names an estimator, but {cls.__name__}'s {key} takes none")
            if set(value) != {_ESTIMATOR_KEY, "params"}:
                raise SchemaViolation(f"its {where}.{key} is an estimator entry with other keys than '__estimator__' and 'params'")
            inner = registered_class(value[_ESTIMATOR_KEY], nested[key], f"{where}.{key}")
            out[key] = inner(**decode_params(inner, value["params"], f"{where}.{key}.params"))
        elif _names_estimator(value):
            raise SchemaViolation(f"its {where}.{key} hides an estimator entry inside a value")
        else:
            out[key] = value
    return out


def _rebuild(cls: type, params: dict, state: dict, arrays: dict):
    """The estimator of a checked model; an EmbeddingClassifier's embedding is rebuilt first (registered classes only)."""
    if cls is EmbeddingClassifier:
        # checked by load_model already; looked up in the registry again here, never imported
        emb_cls = registered_class(state["embedding_class"], EMBEDDINGS, "state.embedding_class")
        emb = emb_cls._from_model_state(decode_params(emb_cls, state["embedding_params"], "state.embedding_params"),
                                        state["embedding_state"], arrays)
        return EmbeddingClassifier._from_embedding(params, emb)
    return cls._from_model_state(params, state, arrays)


def _names_estimator(value: Any) -> bool:
    if isinstance(value, dict):
        return _ESTIMATOR_KEY in value or any(_names_estimator(v) for v in value.values())
    if isinstance(value, list):
        return any(_names_estimator(v) for v in value)
    return False


def _refusal(path: Path, problem: str) -> StoreError:
    return StoreError(f"the model at {str(path)!r} cannot be loaded: {problem}; the model was edited or is corrupt — "
                      "refit it (wideml loads only the classes, parameters and arrays it writes).")


def _fetch_model(url: str) -> tuple[str, str]:
    """Copy the model at ``url`` into a fresh work folder (checked against its completion marker); (folder, local model path)."""
    folder = make_work_folder(resolve_workdir(None))
    register_scratch(folder)
    local = os.path.join(folder, "model.zarr")
    try:
        download_output(url, local, what="model")
    except BaseException:
        remove_tree(folder)
        unregister_scratch(folder)
        raise
    return folder, local


def load_model(path: str | os.PathLike):
    """Load a model saved by :func:`save_model`; p-sized arrays stay on disk (read lazily).

    Loading never imports or calls anything the model names: classes come from
    :data:`MODEL_CLASSES`, and every attribute and array is checked against the
    class's schema before the estimator is built. Reads only small arrays
    (and, when recorded, the grid-sized ``mask`` and the ``feature_ids``: both
    checked against the model's records, :func:`~wideml.storage.model_space.read_model_space`).

    Raises
    ------
    StoreError
        If the path is missing, is not a model, was written by a newer schema,
        or holds anything a wideml model does not (one sentence naming it);
        For a URL (``s3://...``): nothing there, or a model that does not match its completion marker.

    Notes
    -----
    A model on an object store is copied into a fresh work folder (``workdir``) first, checked object by object
    against the sha256 sums its completion marker holds; the folder lives as long as the estimator.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> clf = wideml.EmbeddingClassifier(wideml.LOL(2), classifier="lda").fit(X, y)
    >>> path = wideml.save_model(clf, "loaded.model.zarr")    # a zarr group with JSON attributes: no pickle
    >>> model = wideml.load_model(path)
    >>> type(model).__name__
    'EmbeddingClassifier'
    >>> bool((model.predict(X) == clf.predict(X)).all())
    True
    """
    if is_remote(path):
        folder, local = _fetch_model(str(path))
        try:
            est = load_model(local)
        except BaseException:
            remove_tree(folder)
            unregister_scratch(folder)
            raise
        own_folder(est, folder, local)
        est.model_path_ = str(path).strip().rstrip("/")
        return est
    if is_url(path):
        path = local_path_of(path)
    path = Path(path).expanduser().resolve()
    attrs, group = read_model_attrs(path)
    all_chunks = attrs.get("chunks_complete") is True
    try:
        cls = registered_class(attrs.get("estimator"), MODEL_CLASSES, "estimator")
        params = decode_params(cls, attrs.get("params", {}), "params")
        layout = layout_from_attrs(attrs.get("feature_layout"), str(path))
        fixed = {"n_features": layout.n_features} if layout is not None else None
        state = attrs.get("state", {})
        checked = [cls(**params), *[v for v in params.values() if hasattr(v, "get_params")]]
        if cls is EmbeddingClassifier:
            check_state(state, schemas.EMBEDDING_CLASSIFIER_STATE)
            inner = registered_class(state["embedding_class"], EMBEDDINGS, "state.embedding_class")
            checked.append(inner(**decode_params(inner, state["embedding_params"], "state.embedding_params")))
            check_model_contents(MODEL_SCHEMAS[inner], state["embedding_state"], group, path, fixed=fixed, all_chunks=all_chunks)
        else:
            check_model_contents(MODEL_SCHEMAS[cls], state, group, path, fixed=fixed, all_chunks=all_chunks)
        spatial, feature_ids = read_model_space(group, attrs, layout.n_features if layout is not None else None, layout)
        table = read_model_table(group, attrs, layout.n_features if layout is not None else None)
    except (SchemaViolation, SpaceViolation) as exc:
        raise _refusal(path, str(exc)) from None
    layout = with_space(layout, spatial, feature_ids, table)
    for part in checked:  # parameter values, before anything is rebuilt from them
        _validate(part, path)
    arrays = {name: group[name] for name in group.array_keys()}
    try:
        est = _rebuild(cls, params, state, arrays)
    except WidemlError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the schema cannot express is still a refusal, never a traceback
        raise _refusal(path, f"rebuilding {cls.__name__} failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    attach_layout(est, layout)
    provenance = attrs.get("provenance", {})
    est.provenance_ = provenance if isinstance(provenance, dict) else {}
    est.model_path_ = str(path)
    return est


def _validate(est, path: Path) -> None:
    check = getattr(est, "_validate_parameters", None)
    if check is None:
        return
    try:
        check()
    except WidemlError as exc:
        raise _refusal(path, f"its parameters are not valid ({str(exc).rstrip('.')})") from None
    except Exception as exc:  # noqa: BLE001 - a value the validator cannot even compare
        raise _refusal(path, f"its parameters of {type(est).__name__} are not valid ({type(exc).__name__})") from None


__all__ = ["EMBEDDINGS", "MODEL_CLASSES", "MODEL_SCHEMAS", "NESTED_PARAMS", "attach_layout", "decode_params", "estimator_layout",
           "load_model", "registered_class", "save_model"]
