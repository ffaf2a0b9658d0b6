"""Feature stores read from a real S3-compatible server: the same answers as the local copy, one sentence for each failure.

Every CLI failure exits 2 with one ``wideml: error:`` sentence, no traceback,
and nothing written locally (no folder named ``s3:``).
"""

from __future__ import annotations

import csv
import json
import pickle
import socket

import cloudpickle
import numpy as np
import pytest

from remote.conftest import ACCESS_KEY, BUCKET, SECRET_KEY, forget_connections
from wideml.cli.main import main
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import ConfigError, StoreError
from wideml.storage import open_store


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(code, err, match):
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line.startswith("wideml: error:")]
    assert len(lines) == 1 and lines[0].endswith("."), err
    assert match in lines[0], err
    return lines[0]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Run in an empty folder, so that nothing named after a URL ('s3:') can be created unseen."""
    monkeypatch.chdir(tmp_path)
    yield
    assert not any(p.name.startswith(("s3:", "gs:")) for p in tmp_path.rglob("*")), list(tmp_path.rglob("*"))


# ----------------------------------------------------------------------------- same answers as the local store
@pytest.mark.parametrize("name", ["zstd", "raw"])
def test_open_and_fit_equal_local(name, s3_stores, local_stores, s3_options):
    remote, local = open_store(s3_stores[name]), open_store(local_stores[name][0])
    assert remote.path == s3_stores[name] and not remote.is_local
    np.testing.assert_array_equal(remote.X.compute(), local_stores[name][1])
    np.testing.assert_array_equal(remote.y, local.y)
    assert "object store" in remote.codec
    a, b = LOL(n_components=3).fit(remote), LOL(n_components=3).fit(local)
    np.testing.assert_array_equal(a.transform(remote), b.transform(local))  # bit-identical loadings and projections


def test_store_objects_and_file_urls(s3_stores, local_stores, s3_options):
    from zarr.storage import FsspecStore, LocalStore

    path, X, _ = local_stores["zstd"]
    store = FsspecStore.from_url(s3_stores["zstd"], storage_options=s3_options, read_only=True)
    for source in (store, LocalStore(str(path), read_only=True), f"file://{path}"):
        np.testing.assert_array_equal(open_store(source).X.compute(), X)
    assert open_store(f"file://{path}").is_local


def test_cli_info_fit_predict_cv_equal_local(capsys, tmp_path, s3_server, s3_stores, local_stores):
    endpoint, _ = s3_server
    url, local = s3_stores["zstd"], str(local_stores["zstd"][0])
    option = ["--storage-option", f"endpoint_url={endpoint}"]
    code, out, err = run(capsys, "info", url, "--json", *option)
    assert code == 0, err
    code, local_out, _ = run(capsys, "info", local, "--json")
    remote_info, local_info = json.loads(out), json.loads(local_out)
    assert remote_info.pop("path") == url
    for info in (remote_info, local_info):
        info.pop("path", None), info.pop("codec")
    assert remote_info == local_info
    for where, store in (("remote", url), ("local", local)):
        assert run(capsys, "fit", "lol", store, "-o", tmp_path / f"{where}.model", "--n-components", 2, *option)[0] == 0
        assert run(capsys, "predict", tmp_path / f"{where}.model", store, "-o", tmp_path / f"{where}.csv", *option)[0] == 0
        assert run(capsys, "cv", store, "--folds", 3, "--max-dim", 4, "-o", tmp_path / f"{where}.json", *option)[0] == 0
    assert (tmp_path / "remote.csv").read_text() == (tmp_path / "local.csv").read_text()
    remote_cv, local_cv = (json.loads((tmp_path / f"{w}.json").read_text()) for w in ("remote", "local"))
    assert remote_cv.pop("store") == url
    local_cv.pop("store")
    remote_cv.pop("run", None), local_cv.pop("run", None)  # the command line and its time
    assert "x_files" in local_cv.pop("store_fingerprint")  # a local store's identity (the report checks it); none for a URL yet
    remote_cv.pop("store_fingerprint", None)
    assert remote_cv == local_cv
    from wideml.models.persistence import load_model

    a, b = load_model(tmp_path / "remote.model"), load_model(tmp_path / "local.model")
    X = local_stores["zstd"][1]
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    with open(tmp_path / "remote.csv") as fh:
        assert len(list(csv.reader(fh))) == X.shape[0] + 1


# ----------------------------------------------------------------------------- secrets stay out of graphs
def test_graphs_and_models_hold_no_secret(s3_stores, s3_options, monkeypatch):
    import dask

    graphs = []
    real = dask.compute

    def recording(*collections, **kwargs):
        graphs.append(cloudpickle.dumps([dict(c.__dask_graph__()) for c in collections]))
        return real(*collections, **kwargs)

    monkeypatch.setattr(dask, "compute", recording)
    store = open_store(s3_stores["raw"])
    est = LOL(n_components=2).fit(store)
    assert graphs, "the fit computed no graph"
    graphs += [cloudpickle.dumps(dict(store.X.__dask_graph__())), pickle.dumps(est)]
    for blob in graphs:
        assert SECRET_KEY.encode() not in blob and ACCESS_KEY.encode() not in blob
    assert s3_options["endpoint_url"].encode() in graphs[-2]  # the options do travel (so workers reach the same endpoint)


def test_credentials_are_refused_as_storage_options(capsys, s3_stores, s3_options):
    with pytest.raises(ConfigError, match="AWS_SECRET_ACCESS_KEY"):
        open_store(s3_stores["raw"], storage_options={"secret": "x"})
    code, _, err = run(capsys, "info", s3_stores["raw"], "--storage-option", "key=abc")
    one_sentence(code, err, "set it in the environment")


# ----------------------------------------------------------------------------- one sentence per failure
def test_missing_chunk_object(capsys, s3_server, s3_stores, s3_options):
    _, fs = s3_server
    fs.copy(f"{BUCKET}/raw.zarr", f"{BUCKET}/holed.zarr", recursive=True)
    fs.rm(f"{BUCKET}/holed.zarr/X/c/0/1")
    with pytest.raises(StoreError, match=r"chunk \(0, 1\) \(rows 0:36, columns 100:200\) of X of the store at s3://"):
        open_store(f"s3://{BUCKET}/holed.zarr")
    code, _, err = run(capsys, "info", f"s3://{BUCKET}/holed.zarr")
    one_sentence(code, err, "is missing")


def test_chunk_deleted_after_open_is_an_error(s3_server, s3_stores, s3_options):
    _, fs = s3_server
    fs.copy(f"{BUCKET}/zstd.zarr", f"{BUCKET}/later.zarr", recursive=True)
    store = open_store(f"s3://{BUCKET}/later.zarr")
    fs.rm(f"{BUCKET}/later.zarr/X/c/0/2")
    with pytest.raises(StoreError, match=r"chunk \(0, 2\) .* is missing"):
        LOL(n_components=2).fit(store)


def test_wrong_credentials(capsys, s3_stores, s3_options):
    from moto.core.authorization import enable_iam_authentication

    forget_connections()
    try:
        with enable_iam_authentication():  # the server now knows no access key at all
            code, _, err = run(capsys, "info", s3_stores["raw"])
    finally:
        forget_connections()
    one_sentence(code, err, "refused access")


def test_unreachable_endpoint(capsys, s3_stores, restore_dask_config):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before use: nothing listens there
    forget_connections()
    code, _, err = run(capsys, "info", s3_stores["raw"], "--storage-option", f"endpoint_url=http://127.0.0.1:{port}",
                       "--storage-option", "config_kwargs.retries.max_attempts=1")
    one_sentence(code, err, "cannot reach the object store")


def test_missing_store_and_hdf5_url(capsys, s3_stores, s3_options):
    code, _, err = run(capsys, "info", f"s3://{BUCKET}/nothing.zarr")
    one_sentence(code, err, "no feature store at")
    code, _, err = run(capsys, "info", f"s3://{BUCKET}/x.h5")
    one_sentence(code, err, "HDF5 file on an object store")


def test_missing_backend_names_the_extra(capsys, monkeypatch, s3_stores):
    import fsspec

    def no_backend(protocol):
        raise ImportError("Install s3fs to access S3")

    monkeypatch.setattr(fsspec, "get_filesystem_class", no_backend)
    code, _, err = run(capsys, "info", s3_stores["raw"])
    one_sentence(code, err, "pip install 'wideml[s3]'")


def test_url_work_folders_are_refused_outside_fit(capsys, tmp_path, local_stores, s3_stores, s3_options):
    """Outputs on an object store are written (test_s3_writes.py) and fits keep checkpoints there (test_s3_workdir.py);
    other commands' work folders on an object store are refused in one sentence, before any output."""
    local = local_stores["raw"][0]
    code, _, err = run(capsys, "cv", local, "-o", tmp_path / "cv.json", "--workdir", f"s3://{BUCKET}/work")
    one_sentence(code, err, "only wideml fit keeps its checkpoints on an object store")
    assert not (tmp_path / "cv.json").exists()