"""The local threaded scheduler runs ``wideml.threads`` tasks at once (auto = cores + 1)."""

import os

import dask
import pytest

from wideml.exceptions import ConfigError
from wideml.runtime.compute import _local_kwargs
from wideml.runtime.config import thread_count


def test_auto_is_one_more_than_the_cores():
    assert thread_count() == (os.cpu_count() or 1) + 1
    assert _local_kwargs() == {"num_workers": thread_count()}


def test_config_and_dask_num_workers_win():
    with dask.config.set({"wideml.threads": 1}):
        assert _local_kwargs() == {"num_workers": 1}
    with dask.config.set({"wideml.threads": 1, "num_workers": 5}):
        assert thread_count() == 5


def test_other_schedulers_get_no_thread_count():
    with dask.config.set(scheduler="sync"):
        assert _local_kwargs() == {}


@pytest.mark.parametrize("value", ["many", 0])
def test_bad_thread_count(value):
    with dask.config.set({"wideml.threads": value}), pytest.raises(ConfigError, match="thread"):
        thread_count()
