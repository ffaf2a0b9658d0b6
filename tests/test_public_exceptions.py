"""`wideml.WidemlError` (documented in the README) and its subclasses are importable from the package (issue 22)."""

from __future__ import annotations

import pytest

import wideml
from wideml import exceptions


@pytest.mark.parametrize("name", ["WidemlError", "StoreError", "ConfigError", "PerformanceWarning"])
def test_exported_from_the_package(name):
    assert getattr(wideml, name) is getattr(exceptions, name)
    assert name in wideml.__all__


def test_a_refusal_is_caught_as_wideml_error(tmp_path):
    """What the README promises: every user-fixable problem is a wideml.WidemlError."""
    with pytest.raises(wideml.WidemlError, match="no feature store|does not exist|not found|no store"):
        wideml.open_store(tmp_path / "missing.zarr")
    assert issubclass(wideml.StoreError, wideml.WidemlError) and issubclass(wideml.ConfigError, wideml.WidemlError)
