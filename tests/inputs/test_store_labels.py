"""Every estimator takes its labels from a store when y is omitted, through the one door (wideml.inputs.door).

``fit(store)`` must equal ``fit(store, y=store.y)``; a store without labels is
one clear WidemlError sentence for every estimator that needs labels (and a
plain fit for the unsupervised ones, PCA and KernelPCA).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import wideml.estimators as estimators
from wideml.exceptions import WidemlError
from wideml.storage import open_store

CLASSES = sorted((getattr(estimators, name) for name in estimators.__all__
                  if inspect.isclass(getattr(estimators, name)) and hasattr(getattr(estimators, name), "fit")),
                 key=lambda cls: cls.__name__)


def _make(cls):
    params = cls().get_params(deep=False)
    kwargs = {k: v for k, v in {"n_components": 2, "random_state": 0}.items() if k in params}
    return cls(**kwargs)


def _output(model, X):
    if hasattr(model, "predict_proba"):
        return np.asarray(model.predict_proba(X))
    return np.asarray(model.transform(X))


def _needs_labels(cls) -> bool:
    return bool(cls().__sklearn_tags__().target_tags.required)


def test_every_estimator_class_is_listed():
    names = {cls.__name__ for cls in CLASSES}
    assert {"LOL", "PCA", "RRLDA", "LFL", "KPCATrick", "KernelLOL", "KernelPCA", "EncoderClassifier",
            "EmbeddingClassifier"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_fit_on_a_store_takes_its_labels(cls, make_store):
    path, X, y = make_store(n=36, p=29, feature_chunk=8)
    store = open_store(path)
    assert np.array_equal(store.y, y)
    omitted = _make(cls).fit(store)
    given = _make(cls).fit(store, y=store.y)
    assert np.array_equal(omitted.classes_ if hasattr(omitted, "classes_") else [0], given.classes_ if hasattr(given, "classes_") else [0])
    np.testing.assert_allclose(_output(omitted, X), _output(given, X), rtol=1e-6, atol=1e-8)
    in_memory = _make(cls).fit(X, y)  # the labels taken are the store's: the same fit as on the arrays
    np.testing.assert_allclose(_output(omitted, X), _output(in_memory, X), rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_fit_on_a_store_without_labels(cls, make_store):
    path, X, _ = make_store(n=36, p=29, feature_chunk=8, labelled=False)
    store = open_store(path)
    assert store.y is None
    if not _needs_labels(cls):
        model = _make(cls).fit(store)
        assert _output(model, X).shape[0] == X.shape[0]
        return
    with pytest.raises(WidemlError) as excinfo:
        _make(cls).fit(store)
    message = str(excinfo.value)
    assert "y" in message and "store" in message and message.count(". ") == 0 and message.endswith("."), message
