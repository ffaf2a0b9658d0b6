"""The worker check of remote stores (wideml.runtime.remote_check) and the parsing of storage options."""

from __future__ import annotations

import pytest

from wideml.exceptions import ConfigError, StoreError
from wideml.runtime import remote_check
from wideml.storage import open_store
from wideml.storage.urls import is_url, local_path_of, nest, parse_storage_option


class FakeClient:
    """Two workers; ``answers`` says what each one's probes return."""

    id = "fake-client"

    def __init__(self, answers):
        self.answers, self.calls = answers, 0

    def scheduler_info(self, n_workers=-1):
        return {"workers": {"tcp://10.0.0.1:1": {"name": "w1"}, "tcp://10.0.0.2:1": {"name": "w2"}}}

    def run(self, fn, probes, workers, on_error):
        self.calls += 1
        return {w: self.answers.get(w) or fn(probes) for w in workers}


@pytest.fixture(autouse=True)
def _fresh():
    remote_check.forget()
    yield
    remote_check.forget()


def test_workers_that_read_the_store_pass_once(s3_stores, s3_options):
    store = open_store(s3_stores["raw"])
    client = FakeClient({})
    remote_check.check_remote_stores(client, [store.X.sum()])  # the probes really run (here), reading zarr.json
    remote_check.check_remote_stores(client, [store.X.sum()])
    assert client.calls == 1  # asked once per (client, store, worker)
    assert list(remote_check.remote_probes([store.X])) == [s3_stores["raw"]]


def test_a_worker_without_the_backend_is_named(s3_stores, s3_options):
    store = open_store(s3_stores["raw"])
    client = FakeClient({"tcp://10.0.0.2:1": ["cannot import the s3:// backend (No module named 's3fs')"]})
    with pytest.raises(StoreError, match=r"dask worker w2 \(tcp://10.0.0.2:1\) cannot read the store s3://.*No module named 's3fs'.*wideml\[s3\]"):
        remote_check.check_remote_stores(client, [store.X.sum()])


def test_local_graphs_ask_nothing(tmp_path):
    import dask.array as da

    client = FakeClient({})
    remote_check.check_remote_stores(client, [da.ones((3, 3)).sum()])
    assert client.calls == 0


def test_urls_and_storage_options():
    assert is_url("s3://b/k") and is_url("file:///x") and not is_url("C://x") and not is_url("/a/s3://b") and not is_url(3)
    assert local_path_of("file:///data/s%20t.zarr") == "/data/s t.zarr" and local_path_of("s3://b/k") is None
    pairs = [parse_storage_option(t) for t in ("endpoint_url=http://h:9", "anon=true", "client_kwargs.region_name=eu", "n=3")]
    assert nest(pairs) == {"endpoint_url": "http://h:9", "anon": True, "client_kwargs": {"region_name": "eu"}, "n": 3}
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_storage_option("endpoint_url")
    with pytest.raises(ConfigError, match="already has a value"):
        nest([("a", 1), ("a.b", 2)])


def test_storage_options_in_the_config(restore_dask_config):
    import wideml

    with pytest.raises(ConfigError, match="mapping"):
        wideml.config.set(storage_options="endpoint_url=x")
    wideml.config.set(storage_options={"endpoint_url": "http://127.0.0.1:1"})
    assert wideml.config.get("storage-options") == {"endpoint_url": "http://127.0.0.1:1"}
