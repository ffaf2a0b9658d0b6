"""normalise_labels: every label kind becomes int64, bool, float64 or <U; missing and mixed labels are refused."""

import numpy as np
import pytest

from wideml.exceptions import WidemlError
from wideml.storage.labels import classes_from_model, normalise_labels


@pytest.mark.parametrize("values, dtype_kind, first", [
    ([3, 1, 2], "i", 3),
    (np.array([3, 1], dtype=np.uint16), "i", 3),
    (np.array([True, False]), "b", True),
    (np.array(["a", "b"]), "U", "a"),
    (np.array([b"a", b"b"]), "U", "a"),
    (np.array(["a", "b"], dtype=object), "U", "a"),
    (np.array(["a", "b"], dtype=np.dtypes.StringDType()), "U", "a"),
    (np.array([1, 2], dtype=object), "i", 1),
    (np.array([True, False], dtype=object), "b", True),
    (np.array([1.0, 2.5]), "f", 1.0),
])
def test_kinds(values, dtype_kind, first):
    out = normalise_labels(values)
    assert out.dtype.kind == dtype_kind
    assert out[0].item() == first


def test_pandas_categorical():
    pd = pytest.importorskip("pandas")
    out = normalise_labels(pd.Series(pd.Categorical(["x", "y", "x"])))
    assert out.dtype.kind == "U" and out.tolist() == ["x", "y", "x"]
    out = normalise_labels(pd.Categorical([10, 20]))
    assert out.dtype == np.int64
    with pytest.raises(WidemlError, match="missing value"):
        normalise_labels(pd.Categorical(["x", None]))


@pytest.mark.parametrize("values, words", [
    (np.array(["a", None], dtype=object), "missing value (None) at sample 1"),
    (np.array([1, "a"], dtype=object), "mix text and non-text"),
    (np.array([1 + 2j]), "dtype complex128"),
    (np.array([2**64 - 1], dtype=np.uint64), "int64 range"),
])
def test_refused(values, words):
    with pytest.raises(WidemlError) as excinfo:
        normalise_labels(values, "y")
    assert words in str(excinfo.value)


def test_classes_from_model_turns_string_dtype_back_to_unicode():
    out = classes_from_model(np.array(["a", "bb"], dtype=np.dtypes.StringDType()))
    assert out.dtype == np.dtype("<U2")
    assert classes_from_model(np.array([1, 2])).dtype.kind == "i"
