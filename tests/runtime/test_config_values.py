"""Issue 22: memory budgets and ``DASK_WIDEML__*`` variables are refused in one sentence when they cannot be meant.

``--memory-limit 0`` / ``1B`` were accepted (and forced the randomized solver); ``1PB`` was not a size; a typo in a
``DASK_WIDEML__`` variable was ignored while the same typo in a config file was refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from adversarial.harness import assert_refused, run_cli
from wideml.exceptions import ConfigError
from wideml.runtime.config import MEMORY_LIMIT_FLOOR, check_environment, load_config_file, parse_bytes

GOOD = {"1PB": 10**15, "1pb": 10**15, "100TiB": 100 * 2**40, "100tib": 100 * 2**40, "64MiB": 64 * 2**20, "4GB": 4 * 10**9,
        "4gb": 4 * 10**9, "4G": 4 * 10**9, "1.5GiB": int(1.5 * 2**30), "2KiB": 2048, "2kb": 2000, "512B": 512, "512": 512}


@pytest.mark.parametrize("text, nbytes", GOOD.items(), ids=list(GOOD))
def test_sizes_with_every_unit_and_case(text, nbytes):
    assert parse_bytes(text, "chunk-size") == nbytes


@pytest.mark.parametrize("value", ["0", 0, "1B", "1", "512KiB", "63MiB", "0.05GB"])
def test_memory_budgets_below_the_floor_are_refused(value):
    with pytest.raises(ConfigError) as excinfo:
        parse_bytes(value, "--memory-limit")
    message = str(excinfo.value)
    assert "--memory-limit" in message and "\n" not in message and message.count(". ") == 0
    assert "64 MiB" in message or "positive" in message


@pytest.mark.parametrize("value", ["1PB", "100TiB", "64MiB", MEMORY_LIMIT_FLOOR])
def test_large_memory_budgets_are_accepted(value):
    assert parse_bytes(value, "--memory-limit") >= MEMORY_LIMIT_FLOOR


@pytest.mark.parametrize("value", ["0", 0, -3, "0B", "abc", "1iB", True])
def test_other_sizes_must_be_positive_sizes(value):
    with pytest.raises(ConfigError, match="size"):
        parse_bytes(value, "chunk-size")


@pytest.mark.parametrize("value", ["0", "1B"])
def test_cli_refuses_a_tiny_memory_limit(tmp_path, value):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(20, 50)))
    proc = run_cli("ingest", tmp_path / "x.npy", "-o", tmp_path / "s.zarr", "--unlabelled", "--memory-limit", value,
                   env={"WIDEML_TEST_MEMORY_FLOOR": ""})
    assert_refused(proc, "--memory-limit", value)
    assert not (tmp_path / "s.zarr").exists()


def test_config_file_memory_limit_below_the_floor_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("wideml:\n  memory-limit: 1B\n")
    with pytest.raises(ConfigError, match="memory-limit '1B'"):
        load_config_file(path)


def test_config_file_unknown_key_names_the_closest(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("wideml:\n  memroy-limit: 4GiB\n")
    with pytest.raises(ConfigError, match=r"unknown key 'memroy-limit' \(closest: 'memory-limit'\); valid keys are "):
        load_config_file(path)


def test_unknown_environment_key_is_refused_like_a_config_file_key():
    with pytest.raises(ConfigError) as excinfo:
        check_environment({"DASK_WIDEML__MEMROY_LIMIT": "4GiB", "PATH": "/bin"})
    message = str(excinfo.value)
    assert "DASK_WIDEML__MEMROY_LIMIT" in message and "closest: DASK_WIDEML__MEMORY_LIMIT" in message
    assert "valid keys are" in message and "memory-limit" in message and "\n" not in message
    check_environment({"DASK_WIDEML__MEMORY_LIMIT": "4GiB", "DASK_WIDEML__CHECK_FEATURE_LAYOUT": "false"})  # known keys pass


def test_environment_memory_limit_below_the_floor_is_refused():
    with pytest.raises(ConfigError, match="DASK_WIDEML__MEMORY_LIMIT '1B'"):
        check_environment({"DASK_WIDEML__MEMORY_LIMIT": "1B"})


def test_cli_refuses_an_unknown_environment_key(tmp_path):
    proc = run_cli("info", tmp_path / "nothing.zarr", env={"DASK_WIDEML__MEMROY_LIMIT": "4GiB"})
    assert_refused(proc, "DASK_WIDEML__MEMROY_LIMIT", "DASK_WIDEML__MEMORY_LIMIT")
