"""A real S3-compatible server (moto's server mode) on 127.0.0.1, and feature stores uploaded to it.

The server runs in a thread of the test process for the whole session; the
credentials are fake and come from the environment only (as wideml expects),
so a test can look for them in pickled task graphs.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

pytest.importorskip("s3fs", reason="s3fs (the dev extra) reads s3:// stores")
pytest.importorskip("moto.server", reason="moto[server] (the dev extra) is the test's S3 server")

#: Fake credentials, given through the environment only.
ACCESS_KEY = "WIDEMLTESTACCESSKEY42"
SECRET_KEY = "wideml-test-secret-0123456789abcdef"
BUCKET = "wideml-test"


@pytest.fixture(scope="session")
def s3_server():
    """(endpoint URL, s3fs filesystem) of a moto S3 server on a free port of 127.0.0.1."""
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_DEFAULT_REGION="us-east-1")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=endpoint)
    fs.mkdir(BUCKET)
    try:
        yield endpoint, fs
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def local_stores(tmp_path_factory):
    """Two local stores: zstd + crc32c (read object by object) and uncompressed; (path, X, y) each."""
    from wideml.storage import write_store

    rng = np.random.default_rng(27)
    root = tmp_path_factory.mktemp("remote-stores")
    X = rng.standard_normal((36, 300)).astype(np.float32)
    y = np.repeat([0, 1, 2], 12)
    X[y == 1, :20] += 1.5
    X[y == 2, 20:40] -= 1.5
    stores = {}
    stores["zstd"] = write_store(root / "zstd.zarr", X, y, feature_chunk=64, compressor="zstd", checksum=True)
    stores["raw"] = write_store(root / "raw.zarr", X, y, feature_chunk=100)
    return {name: (path, X, y) for name, path in stores.items()}


@pytest.fixture(scope="session")
def s3_stores(s3_server, local_stores):
    """name -> s3:// URL of each local store, uploaded once."""
    _, fs = s3_server
    urls = {}
    for name, (path, _, _) in local_stores.items():
        fs.put(str(path), f"{BUCKET}/{name}.zarr", recursive=True)
        urls[name] = f"s3://{BUCKET}/{name}.zarr"
    return urls


@pytest.fixture
def s3_options(s3_server, restore_dask_config):
    """The server's endpoint as the config's storage options (as --storage-option endpoint_url=... does)."""
    import dask.config

    endpoint, _ = s3_server
    dask.config.set({"wideml.storage-options": {"endpoint_url": endpoint}})
    return {"endpoint_url": endpoint}


def forget_connections() -> None:
    """Drop cached filesystems (wideml's and s3fs's), so new credentials or endpoints are used."""
    import s3fs

    from wideml.storage import remote_access

    remote_access.forget_stores()
    s3fs.S3FileSystem.clear_instance_cache()
