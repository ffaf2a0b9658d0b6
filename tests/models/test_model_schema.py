"""The generic model-schema checks and the feature layout (storage side: no estimators involved)."""

import numpy as np
import pytest
import zarr

from wideml.exceptions import WidemlError
from wideml.storage.layout import FeatureLayout, check_layout, id_fingerprints, ignore_feature_layout, layout_of
from wideml.models.schema_checks import ArraySpec, ModelSchema, SchemaViolation, check_model_contents, check_state

SCHEMA = ModelSchema(
    state={"n_features_in": "int", "kinds": "list[str]", "note?": "str|null", "nested": {"shape": "list[int]"}},
    arrays={"classes": ArraySpec(("n_classes",), "iu"), "codes": ArraySpec(("n_train",), "iu", codes_of="n_classes"),
            "load": ArraySpec(("n_features", 2), p_sized=True), "extra": ArraySpec(("n_classes",), optional=True)},
    dims={"n_features_in": "n_features", "nested.shape.0": "n_train", "nested.shape.1": "n_features"},
)
STATE = {"n_features_in": 10, "kinds": ["a"], "nested": {"shape": [6, 10]}}


def _group(tmp_path, **override):
    arrays = {"classes": np.arange(3), "codes": np.array([0, 1, 2, 0, 1, 2]), "load": np.ones((10, 2))} | override
    g = zarr.create_group(str(tmp_path / "m.zarr"))
    for name, a in arrays.items():
        chunks = (4, 2) if name == "load" and a.ndim == 2 else a.shape
        g.create_array(name, shape=a.shape, dtype=a.dtype, chunks=chunks)[...] = a
    return g


def test_a_complete_model_passes_and_binds_dimensions(tmp_path):
    dims = check_model_contents(SCHEMA, STATE, _group(tmp_path), tmp_path / "m.zarr")
    assert dims == {"n_features": 10, "n_train": 6, "n_classes": 3}


@pytest.mark.parametrize("state, words", [
    ([1], "not a JSON object"), ({**STATE, "evil": 1}, "unknown entry 'evil'"), ({k: v for k, v in STATE.items() if k != "kinds"}, "lacks"),
    ({**STATE, "n_features_in": "10"}, "not of type int"), ({**STATE, "n_features_in": True}, "not of type int"),
    ({**STATE, "kinds": ["a", 3]}, "list[str]"), ({**STATE, "nested": {"shape": [6]}}, "lacks nested.shape.1"),
    ({**STATE, "n_features_in": 0}, "positive integer"),
])
def test_bad_state_is_named(tmp_path, state, words):
    with pytest.raises(SchemaViolation, match=None) as excinfo:
        check_model_contents(SCHEMA, state, _group(tmp_path), tmp_path / "m.zarr")
    assert words in str(excinfo.value)


@pytest.mark.parametrize("override, words", [
    ({"codes": np.array([0, 1, 5, 0, 1, 2])}, "outside 0..2"), ({"load": np.ones((9, 2))}, "n_features is 10"),
    ({"classes": np.arange(3.0)}, "dtype float64"), ({"extra": np.array([1.0, np.inf, 0.0])}, "NaN or infinite"),
    ({"other": np.zeros(2)}, "unknown array 'other'"), ({"load": np.ones(10)}, "1 dimension"),
])
def test_bad_arrays_are_named(tmp_path, override, words):
    with pytest.raises(SchemaViolation) as excinfo:
        check_model_contents(SCHEMA, STATE, _group(tmp_path, **override), tmp_path / "m.zarr")
    assert words in str(excinfo.value)


def test_missing_chunk_file_of_a_p_sized_array_is_named(tmp_path):
    g = _group(tmp_path)
    (tmp_path / "m.zarr" / "load" / "c" / "1" / "0").unlink()
    with pytest.raises(SchemaViolation, match=r"chunk \(1, 0\).*'load' is missing"):
        check_model_contents(SCHEMA, STATE, g, tmp_path / "m.zarr")


def test_check_state_nested_types():
    check_state({"a": None, "b": {"c": [1.5, 2]}}, {"a": "int|null", "b": {"c": "list[float]"}})
    with pytest.raises(SchemaViolation, match="its state.b is"):
        check_state({"a": 1, "b": []}, {"a": "int|null", "b": {"c": "list[float]"}})


def test_id_fingerprints_tell_order_from_content():
    a, a_set = id_fingerprints(["x", "y", "z"])
    b, b_set = id_fingerprints(np.array(["z", "y", "x"]))
    c, c_set = id_fingerprints([b"x", b"y", b"w"])
    assert a != b and a_set == b_set and c_set != a_set


def test_layout_json_round_trip_and_checks():
    lay = FeatureLayout(6, (2, 3), {"affine": [[1, 0], [0, 1]]}, "s" * 64, "i" * 64, "j" * 64)
    assert FeatureLayout.from_json(lay.to_json()) == lay
    with pytest.raises(ValueError, match="n_features"):
        FeatureLayout.from_json({"n_features": -1})
    with pytest.raises(WidemlError, match=r"feature_shape \(3, 2\) of the data differs from the model's \(2, 3\)"):
        check_layout(lay, FeatureLayout(6, (3, 2)))
    with ignore_feature_layout():
        check_layout(lay, FeatureLayout(6, (3, 2)))
    check_layout(lay, FeatureLayout(6))  # nothing known in common but the count


def test_layout_of_inputs():
    pd = pytest.importorskip("pandas")
    assert layout_of(np.zeros((2, 5))) == FeatureLayout(5)
    assert layout_of(pd.DataFrame(np.zeros((2, 2)), columns=["a", "b"])).ids_sha256 == id_fingerprints(["a", "b"])[0]
    assert layout_of(pd.DataFrame(np.zeros((2, 2)))).ids_sha256 is None  # integer column labels are not ids
    assert layout_of(np.zeros(3)) is None
