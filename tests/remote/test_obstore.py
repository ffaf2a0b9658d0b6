"""obstore as the chunk-object client of s3:// stores (``remote-reader``): the same bytes, arrays and fits as s3fs and the local copy.

Oracles: the chunk files of the local copy (bytes), zarr's in-memory read of
the local copy (arrays, across block shapes that cover one, several and edge
chunks), and a LOL fit on the local copy (bit-identical).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from remote.conftest import BUCKET
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import ConfigError, StoreError
from wideml.storage import open_store
from wideml.storage.integrity import chunk_path
from wideml.storage.obstore_reads import obstore_settings, resolve_backend
from wideml.storage.remote_access import get_bytes
from wideml.storage.remote_reader import RemoteZarrReader
from wideml.storage.remote_store import remote_location

pytest.importorskip("obstore", reason="obstore (the s3 extra) is the fast chunk-object client")


def reader_with(store, backend: str) -> RemoteZarrReader:
    """The store's X reader, fetching through ``backend``."""
    r = store.reader
    return RemoteZarrReader(r.location, r.name, r.shape, r.dtype, r.chunks, x_meta(r.location), missing=r.missing, backend=backend)


def x_meta(location) -> dict:
    """X's zarr.json on the object store."""
    return json.loads(get_bytes(location, "X/zarr.json"))


@pytest.mark.parametrize("name", ["zstd", "raw"])
def test_chunk_bytes_and_blocks_equal_s3fs_and_the_local_copy(name, s3_stores, local_stores, s3_options):
    import zarr

    path, X, _ = local_stores[name]
    store = open_store(s3_stores[name])
    ob, fs = reader_with(store, "obstore"), reader_with(store, "fsspec")
    assert resolve_backend(ob.location, "auto") == "obstore"  # credentials in the environment, endpoint given
    assert "through obstore" in ob.describe_codec() and "through fsspec" in fs.describe_codec()
    keys = [(0, j) for j in range(-(-X.shape[1] // ob.chunks[1]))]
    names = [chunk_path(ob._layout, k) for k in keys]
    got_ob, got_fs = ob._fetcher()(names), fs._fetcher()(names)
    for key, a, b in zip(names, got_ob, got_fs):
        local = (path / key).read_bytes()
        assert bytes(a) == bytes(b) == local, key
    oracle = zarr.open_array(str(path / "X"), mode="r")[:]
    np.testing.assert_array_equal(oracle, X)
    cc = ob.chunks[1]
    blocks = [(slice(0, 36), slice(0, cc)), (slice(0, 36), slice(cc, 3 * cc)), (slice(0, 36), slice(0, 300)),
              (slice(0, 36), slice((299 // cc) * cc, 300)), (slice(0, 36), slice(cc, 300))]
    for rows, cols in blocks:
        want = oracle[rows, cols]
        for reader in (ob, fs):
            np.testing.assert_array_equal(reader[rows, cols], want)
            buf = {}
            got = reader.read_into(rows, cols, lambda shape, dtype: buf.setdefault("a", np.empty(shape, dtype)))
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["zstd", "raw"])
def test_fits_through_obstore_are_bit_identical(name, s3_stores, local_stores, s3_options, restore_dask_config):
    import dask.config

    local = open_store(local_stores[name][0])
    want = LOL(n_components=3).fit(local).transform(local)
    for backend in ("obstore", "fsspec"):
        dask.config.set({"wideml.remote-reader": backend})
        remote = open_store(s3_stores[name])
        assert remote.reader.backend == backend and f"through {backend}" in remote.codec
        np.testing.assert_array_equal(remote.X.compute(), local_stores[name][1])
        np.testing.assert_array_equal(LOL(n_components=3).fit(remote).transform(remote), want)


def test_missing_chunk_object_through_obstore_names_the_chunk(s3_server, s3_stores, s3_options):
    _, fs = s3_server
    fs.cp(f"{BUCKET}/raw.zarr", f"{BUCKET}/obstore-missing.zarr", recursive=True)
    reader = reader_with(open_store(f"s3://{BUCKET}/obstore-missing.zarr"), "obstore")  # opened while complete
    fs.rm(f"{BUCKET}/obstore-missing.zarr/X/c/0/1")
    with pytest.raises(StoreError, match=r"is missing \(its chunk file was deleted") as err:
        reader[0:36, 0:300]
    assert "\n" not in str(err.value)


def test_unreachable_endpoint_through_obstore_is_one_sentence(s3_stores, s3_options):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    good = open_store(s3_stores["raw"]).reader
    location = remote_location(s3_stores["raw"], {"endpoint_url": f"http://127.0.0.1:{port}",
                                                   "config_kwargs": {"retries": {"max_attempts": 1}}})
    meta = x_meta(good.location)
    reader = RemoteZarrReader(location, "X", good.shape, good.dtype, good.chunks, meta, backend="obstore")
    with pytest.raises(StoreError, match="cannot reach the object store") as err:
        reader[0:36, 0:100]
    assert "\n" not in str(err.value)


def test_options_map_to_obstore_and_the_choice_is_one_sentence(monkeypatch, s3_options):
    options = remote_location(f"s3://{BUCKET}/s.zarr", {"anon": True, "client_kwargs": {"region_name": "eu-west-1"}}).options
    settings = obstore_settings(f"s3://{BUCKET}/s.zarr", options)
    assert settings["config"] == {"endpoint": s3_options["endpoint_url"], "skip_signature": True, "region": "eu-west-1"}
    assert settings["client_options"] == {"allow_http": True, "connect_timeout": "10s", "timeout": "60s"}
    assert settings["retry_config"] == {"max_retries": 3}  # botocore's max_attempts: retries after the first request
    odd = remote_location(f"s3://{BUCKET}/s.zarr", {"use_ssl": False})
    assert resolve_backend(odd, "auto") == "fsspec"
    with pytest.raises(ConfigError, match="use_ssl has no obstore equivalent"):
        resolve_backend(odd, "obstore")
    with pytest.raises(ConfigError, match="s3:// URLs only"):
        resolve_backend(remote_location("memory://x/s.zarr"), "obstore")
    plain = remote_location(f"s3://{BUCKET}/s.zarr")
    assert resolve_backend(plain, "fsspec") == "fsspec"
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")  # a profile or an instance role: s3fs's chain, not obstore's
    assert resolve_backend(plain, "auto") == "fsspec"
    assert resolve_backend(plain, "obstore") == "obstore"
    monkeypatch.setitem(os.environ, "AWS_ACCESS_KEY_ID", "x")
    with pytest.raises(ConfigError, match="remote-reader must be one of"):
        resolve_backend(plain, "boto")
