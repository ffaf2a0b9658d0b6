"""The workers' view check (wideml.runtime.cluster_check) and scheduler address validation, without a cluster.

A fake client stands in for dask.distributed: its ``run`` calls the probe in this process (the
workers see what we see) or returns what a worker with another view would answer. The real
thing, with scheduler and worker processes, is in tests/adversarial/test_paths_cluster.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from wideml.exceptions import ConfigError, StoreError
from wideml.runtime import cluster_check as cc
from wideml.runtime.scheduler import check_address


class FakeClient:
    """Two workers; ``views`` maps a worker address to a function replacing the probe's answer."""

    def __init__(self, views=None):
        self.id = f"fake-{id(self)}"
        self.views = views or {}
        self.calls = 0

    def scheduler_info(self, n_workers=5):
        return {"workers": {"tcp://10.0.0.1:1": {"name": "left"}, "tcp://10.0.0.2:2": {"name": "right"}}}

    def run(self, fn, *args, workers=None, on_error="raise"):
        self.calls += 1
        out = {}
        for w in workers:
            answer = fn(*args)
            out[w] = self.views[w](answer) if w in self.views else answer
        return out


@pytest.fixture(autouse=True)
def _fresh_cache():
    cc.forget()
    yield
    cc.forget()


@pytest.fixture
def store(tmp_path):
    from wideml import write_store

    X = np.random.default_rng(0).standard_normal((12, 40)).astype(np.float32)
    return write_store(tmp_path / "s.zarr", X, np.arange(12) % 2, feature_chunk=16)


def test_fingerprint_follows_metadata(tmp_path, store):
    first = cc.fingerprint(str(store), "X")
    assert first and first == cc.fingerprint(str(store), "X")
    meta = store / "X" / "zarr.json"
    meta.write_text(meta.read_text().replace('"float32"', '"float32" '))
    assert cc.fingerprint(str(store), "X") != first
    assert cc.fingerprint(str(tmp_path / "nothing.zarr")) is None
    f = tmp_path / "a.h5"
    f.write_bytes(b"1234")
    assert cc.fingerprint(str(f)).startswith("file:4:")


def test_graph_paths_finds_the_store_of_a_pass_and_of_plain_reads(store):
    import wideml
    from wideml.passes.gram import gram_pass

    s = wideml.open_store(store)
    assert cc.graph_paths([gram_pass(s.X)]) == [(str(store), "X")]  # chunk references read inside the pass tasks
    assert cc.graph_paths([s.X.sum()]) == [(str(store), "X")]  # the dask array's own reader
    assert cc.graph_paths([s.X[:, :3].sum() * 0 + np.ones(3)]) == [(str(store), "X")]


def test_graph_paths_refuses_an_in_memory_zarr_array():
    import dask.array as da
    import zarr

    arr = zarr.create_array(zarr.storage.MemoryStore(), shape=(4, 6), chunks=(4, 3), dtype="f4")
    with pytest.raises(StoreError, match="in-memory zarr array cannot be read by cluster workers"):
        cc.graph_paths([da.from_array(arr, chunks=(4, 3)).sum()])


def test_check_stores_passes_when_workers_see_the_same_and_asks_once(store):
    client = FakeClient()
    cc.check_stores(client, [(str(store), "X")])
    cc.check_stores(client, [(str(store), "X")])
    assert client.calls == 1


@pytest.mark.parametrize("answer, words", [(None, ("cannot see", "no such path")), ("dir:other", ("different store",))])
def test_check_stores_names_the_worker_that_sees_otherwise(store, answer, words):
    client = FakeClient({"tcp://10.0.0.2:2": lambda a: {**a, "stores": [answer]}})
    with pytest.raises(StoreError) as excinfo:
        cc.check_stores(client, [(str(store), "X")])
    message = str(excinfo.value)
    assert "dask worker right (tcp://10.0.0.2:2)" in message and "left" not in message
    assert str(store) in message and "shared by all workers" in message and "\n" not in message
    for word in words:
        assert word in message


def test_check_stores_refuses_a_relative_path():
    with pytest.raises(StoreError, match="relative path"):
        cc.check_stores(FakeClient(), [("s.zarr", "X")])


@pytest.mark.parametrize("state, words", [("missing", "cannot see"), ("other", "different folder"),
                                          ("unwritable:Read-only file system", "cannot write into")])
def test_check_directories_names_the_worker_and_leaves_no_marker(tmp_path, state, words):
    client = FakeClient({"tcp://10.0.0.1:1": lambda a: {**a, "folders": [state]}})
    with pytest.raises(StoreError) as excinfo:
        cc.check_directories(client, [(str(tmp_path), "the output folder")])
    message = str(excinfo.value)
    assert words in message and "dask worker left" in message and "the output folder" in message
    assert list(tmp_path.iterdir()) == []


def test_check_directories_ok_asks_once_and_leaves_nothing(tmp_path):
    client = FakeClient()
    for _ in range(2):
        cc.check_directories(client, [(str(tmp_path), "the work directory")])
    assert client.calls == 1
    assert list(tmp_path.iterdir()) == []


def test_probe_reports_a_folder_it_cannot_write(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "marker").write_bytes(b"")
    os.chmod(folder, 0o500)
    try:
        state = cc._probe([], [(str(folder), "marker")])["folders"][0]
    finally:
        os.chmod(folder, 0o700)
    assert state in ("ok", "unwritable:Permission denied")  # root writes anyway: then the check passes, as a write would
    assert cc._probe([], [(str(tmp_path / "none"), "marker")])["folders"] == ["missing"]
    assert cc._probe([], [(str(tmp_path), "marker-not-there")])["folders"] == ["other"]


def test_require_directory_is_a_no_op_on_local_schedulers(tmp_path):
    cc.require_directory(tmp_path / "does-not-matter", "the output folder")


@pytest.mark.parametrize("spec, words", [
    ("tcp://127.0.0.1", "has no port"), ("tcp://host:abc", "not of the form"), ("tcp://", "not of the form"),
    ("tcp://:8786", "not of the form"), ("tcp://127.0.0.1:70000", "outside 1-65535"),
])
def test_bad_scheduler_addresses_are_one_sentence(spec, words):
    with pytest.raises(ConfigError) as excinfo:
        check_address(spec)
    assert words in str(excinfo.value) and "\n" not in str(excinfo.value)


@pytest.mark.parametrize("spec", ["tcp://127.0.0.1:8786", "tcp://node-1.cluster:9000", "tls://[::1]:8786", "inproc://x/1/2"])
def test_good_scheduler_addresses_pass(spec):
    check_address(spec)
