"""Declared attribute tables (estimators/_fitted.py): each names only keys its model schema declares, and round-trips."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from wideml.estimators.fitted import REQUIRED, UNSET, FittedState, array, load_fitted, p_array, save_fitted, state
from wideml.models.persistence import MODEL_SCHEMAS


def _tables():
    return [(cls, cls._fitted) for cls in MODEL_SCHEMAS if issubclass(cls, FittedState) and cls._fitted]


def test_some_estimators_declare_tables():
    names = {cls.__name__ for cls, _ in _tables()}
    assert {"LOL", "PCA", "RRLDA", "LFL"} <= names


@pytest.mark.parametrize("cls,table", _tables(), ids=lambda v: getattr(v, "__name__", ""))
def test_table_keys_are_declared_by_the_schema(cls, table):
    schema = MODEL_SCHEMAS[cls]
    state_keys = {k.rstrip("?"): k.endswith("?") for k in schema.state}
    keys = [e.key for e in table]
    assert len(keys) == len(set(keys)), "a key is declared twice"
    for entry in table:
        if entry.in_state:
            assert entry.key in state_keys, f"{cls.__name__}: state key {entry.key!r} is not in its schema"
            # a key every model has is required by the schema, and the other way round
            assert state_keys[entry.key] == (not entry.required), f"{cls.__name__}: {entry.key!r} optional in one place only"
        else:
            assert entry.key in schema.arrays, f"{cls.__name__}: array {entry.key!r} is not in its schema"
            spec = schema.arrays[entry.key]
            assert spec.optional == (not entry.required), f"{cls.__name__}: {entry.key!r} optional in one place only"
            assert spec.p_sized == (entry.load.__name__ != "read_small" and "n_features" in spec.shape), entry.key


class _Toy(FittedState, BaseEstimator):
    _fitted = (state("n_", load=int), state("tag_", default="old"), state("passes_", default=UNSET),
               array("codes_"), p_array("means_", optional=True))

    def __init__(self, a=1):
        self.a = a

    def fit(self, X=None, y=None):
        return self


def test_round_trip_and_defaults():
    est = _Toy()
    est.n_, est.tag_, est.passes_, est.codes_, est.means_ = np.int64(3), "new", 2, np.arange(4), None
    st, arrays = est._model_state()
    assert st == {"n": 3, "tag": "new", "passes": 2} and type(st["n"]) is int
    assert set(arrays) == {"codes"}  # an optional attribute that is None is not saved
    back = _Toy._from_model_state({"a": 2}, st, arrays)
    assert back.a == 2 and back.n_ == 3 and back.means_ is None and np.array_equal(back.codes_, np.arange(4))
    old = _Toy._from_model_state({}, {"n": 1}, {"codes": np.zeros(2)})  # a model saved before tag and passes existed
    assert old.tag_ == "old" and not hasattr(old, "passes_")
    with pytest.raises(KeyError):
        load_fitted(_Toy(), _Toy._fitted, {}, {"codes": np.zeros(2)})


def test_unfitted_is_refused():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        _Toy()._model_state()
    est = _Toy()
    est.n_ = 1  # partly fitted: still refused
    with pytest.raises(NotFittedError):
        est._model_state()
    with pytest.raises(AttributeError):
        save_fitted(est, _Toy._fitted)
    assert REQUIRED is not UNSET
