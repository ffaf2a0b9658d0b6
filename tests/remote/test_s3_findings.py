"""The findings of the user-world test of S3 stores (notes uw_s3), one test each: same bits, URL work folders,
``wideml clean`` of a URL, storage options in ``rechunk``, damaged chunk objects, zarr's warnings, ``file://`` outputs,
endpoints that never answer.

Every CLI failure is one ``wideml: error:`` sentence (exit 2), nothing else on stderr, and nothing is written into a
local folder named after the URL (``s3:``).
"""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from remote.conftest import BUCKET, forget_connections
from wideml.cli.main import main
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import ConfigError, StoreError
from wideml.storage import open_store, write_store


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(code, err, match):
    """Exit 2 and exactly one line on stderr: ``wideml: error: ...`` ending with a full stop, containing ``match``."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wideml: error:") and lines[0].endswith("."), err
    assert match in lines[0], err
    return lines[0]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch, restore_dask_config):
    """An empty working folder, and the config (workdir, storage options) set by each CLI run undone after the test."""
    monkeypatch.chdir(tmp_path)
    yield


@pytest.fixture(scope="module")
def offset_store(tmp_path_factory, s3_server):
    """A store of 15 feature chunks with large feature offsets (its sums' rounding depends on how chunks are grouped),
    local and on S3."""
    _, fs = s3_server
    rng = np.random.default_rng(5)
    X = rng.standard_normal((36, 900)).astype(np.float32) + (3 * rng.standard_normal(900)).astype(np.float32)
    y = np.arange(36) % 3
    X[y == 1, :20] += 1.5
    path = write_store(tmp_path_factory.mktemp("offsets") / "off.zarr", X, y, feature_chunk=64)
    fs.put(str(path), f"{BUCKET}/off.zarr", recursive=True)
    return path, f"s3://{BUCKET}/off.zarr"


# ----------------------------------------------------------------------------- 1. the same bits as the local copy
@pytest.mark.parametrize("solver", ["gram", "randomized"])
def test_cli_fit_on_s3_gives_the_bits_of_the_local_copy(solver, capsys, tmp_path, s3_server, offset_store):
    """The CLI fit of the S3 store (checkpointed, like the local one: the store's objects are fingerprinted) gives the
    bits of the CLI fit of the local copy, and the API fits (not checkpointed) agree bit for bit too."""
    from wideml.models.persistence import load_model

    endpoint, _ = s3_server
    local, url = offset_store
    for where, store in (("local", local), ("s3", url)):
        code, _, err = run(capsys, "fit", "lol", store, "-o", tmp_path / f"{where}.model", "--n-components", 2, "--solver", solver,
                           "--storage-option", f"endpoint_url={endpoint}")
        assert code == 0, err
    cli, s3 = (load_model(tmp_path / f"{w}.model").embedding_ for w in ("local", "s3"))
    api_local = LOL(n_components=2, solver=solver).fit(open_store(local))
    api_s3 = LOL(n_components=2, solver=solver).fit(open_store(url, storage_options={"endpoint_url": endpoint}))
    for name in ("offset_", "components_", "class_means_"):
        np.testing.assert_array_equal(np.asarray(getattr(cli, name)), np.asarray(getattr(s3, name)), err_msg=name)
        np.testing.assert_array_equal(np.asarray(getattr(api_local, name)), np.asarray(getattr(api_s3, name)), err_msg=name)
    np.testing.assert_allclose(np.asarray(api_local.offset_), np.asarray(s3.offset_), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- 2. and 7. work folders given as URLs
def test_api_workdir_url_is_refused_and_nothing_is_made(tmp_path, s3_stores, s3_options):
    (tmp_path / "s3:" / BUCKET).mkdir(parents=True)  # the user's own folder named like the URL
    store = open_store(s3_stores["raw"])
    with pytest.raises(ConfigError, match="object stores is not supported yet"):
        LOL(n_components=2, workdir=f"s3://{BUCKET}/wd").fit(store)
    assert list((tmp_path / "s3:" / BUCKET).iterdir()) == []
    (tmp_path / "s3:" / BUCKET).rmdir()
    (tmp_path / "s3:").rmdir()
    with pytest.raises(ConfigError, match="object stores is not supported yet"):
        LOL(n_components=2, workdir=f"s3://{BUCKET}/wd").fit(store)
    assert not (tmp_path / "s3:").exists()


def test_file_urls_are_local_paths_for_outputs_and_work_folders(capsys, tmp_path, local_stores):
    from wideml.models.persistence import load_model, save_model
    from wideml.runner.workdir import resolve_workdir

    store = local_stores["raw"][0]
    (tmp_path / "wd").mkdir()
    code, _, err = run(capsys, "fit", "lol", store, "-o", f"file://{tmp_path}/out.model", "--n-components", 2,
                       "--workdir", f"file://{tmp_path}/wd")
    assert code == 0, err
    assert (tmp_path / "out.model").is_dir() and not (tmp_path / "file:").exists()
    est = load_model(tmp_path / "out.model")
    save_model(est, f"file://{tmp_path}/again.model")
    assert (tmp_path / "again.model").is_dir()
    assert resolve_workdir(f"file://{tmp_path}/wd") == str(tmp_path / "wd")
    fitted = LOL(n_components=2, workdir=f"file://{tmp_path}/wd").fit(open_store(store))
    assert str(tmp_path / "wd") in fitted._group
    code, _, err = run(capsys, "rechunk", f"file://{store}", "-o", f"file://{tmp_path}/copy.zarr")
    assert code == 0, err
    assert (tmp_path / "copy.zarr").is_dir() and not (tmp_path / "file:").exists()


# ----------------------------------------------------------------------------- 3. wideml clean of a URL
def test_clean_refuses_urls(capsys, tmp_path):
    leftover = tmp_path / "s3:" / BUCKET / ".big.zarr.wideml-partial-a89b4b8466e9"
    leftover.mkdir(parents=True)
    for args in ([f"s3://{BUCKET}"], ["--remove", f"s3://{BUCKET}/.big.zarr.wideml-partial-a89b4b8466e9"],
                 ["--workdir", f"s3://{BUCKET}"]):
        code, _, err = run(capsys, "clean", *args)
        one_sentence(code, err, "URL")
    assert leftover.is_dir()
    code, out, err = run(capsys, "clean", f"file://{tmp_path}")
    assert code == 0, err
    assert str(tmp_path) in out or "0 leftovers" in out


# ----------------------------------------------------------------------------- 4. storage options reach every read
def test_rechunk_reads_with_the_storage_options(capsys, tmp_path, s3_server, s3_stores, local_stores):
    endpoint, _ = s3_server
    code, _, err = run(capsys, "rechunk", s3_stores["zstd"], "-o", tmp_path / "r.zarr", "--feature-chunk", 100,
                       "--storage-option", f"endpoint_url={endpoint}")
    assert code == 0, err
    out = open_store(tmp_path / "r.zarr")
    np.testing.assert_array_equal(out.X.compute(), local_stores["zstd"][1])
    np.testing.assert_array_equal(out.y, local_stores["zstd"][2])
    assert out.stored_chunks == (36, 100)


# ----------------------------------------------------------------------------- 5. and 9. damaged chunk objects
def _damage(fs, name: str, key: str, how: str) -> str:
    fs.copy(f"{BUCKET}/{name}.zarr", f"{BUCKET}/{how}-{name}.zarr", recursive=True)
    path = f"{BUCKET}/{how}-{name}.zarr/{key}"
    data = bytearray(fs.cat_file(path))
    if how == "truncated":
        data = data[: len(data) // 3]
    else:
        middle = len(data) // 2
        data[middle : middle + 20] = bytes(20)
    fs.pipe_file(path, bytes(data))
    return f"s3://{BUCKET}/{how}-{name}.zarr"


@pytest.mark.parametrize("name", ["raw", "zstd"])
def test_truncated_chunk_object_names_the_chunk(name, capsys, tmp_path, s3_server, s3_stores, s3_options):
    _, fs = s3_server
    url = _damage(fs, name, "X/c/0/1", "truncated")
    code, _, err = run(capsys, "fit", "lol", url, "-o", tmp_path / "t.model", "--n-components", 2)
    line = one_sentence(code, err, "chunk (0, 1)")
    assert "damaged" in line and "credentials" not in line
    assert not (tmp_path / "t.model").exists()


def _zstd_store_with_huge_values(root):
    """A zstd store whose chunk 4, with 20 bytes zeroed, still decodes (zstd has no content checksum) to huge values."""
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((120, 1000)) * np.linspace(1, 40, 1000)).astype(np.float32)
    y = np.repeat([0, 1], 60)
    X[y == 1, :30] += 2
    path = write_store(root / "zs.zarr", X, y, feature_chunk=200, compressor="zstd")
    chunk = path / "X" / "c" / "0" / "4"
    data = bytearray(chunk.read_bytes())
    for middle in range(len(data) // 2, len(data) - 40, 7):
        trial = bytearray(data)
        trial[middle : middle + 20] = bytes(20)
        from numcodecs import Zstd

        try:
            decoded = np.frombuffer(Zstd().decode(bytes(trial)), dtype="<f4")
        except Exception:  # noqa: BLE001 - zstd saw this damage: try another place
            continue
        if decoded.size == 120 * 200 and np.isfinite(decoded).all() and np.abs(decoded).max() > 1e30:
            chunk.write_bytes(bytes(trial))
            return path
    pytest.fail("found no undetected zstd damage to test with")


def test_undetected_zstd_damage_is_one_sentence(capsys, tmp_path, s3_server, s3_options):
    _, fs = s3_server
    local = _zstd_store_with_huge_values(tmp_path)
    fs.put(str(local), f"{BUCKET}/zsbad.zarr", recursive=True)
    for where, store in (("local", local), ("s3", f"s3://{BUCKET}/zsbad.zarr")):
        code, _, err = run(capsys, "fit", "lol", store, "-o", tmp_path / f"{where}.model", "--n-components", 1)
        line = one_sentence(code, err, "features 800:1000")  # chunk (0, 4): 200 features per chunk
        assert "--checksum" in line and "overflow float32" in line
        assert not (tmp_path / f"{where}.model").exists()


# ----------------------------------------------------------------------------- 6. zarr's warnings
def test_missing_array_metadata_is_one_line(capsys, tmp_path, s3_server, s3_stores, local_stores, s3_options):
    import shutil

    _, fs = s3_server
    fs.copy(f"{BUCKET}/raw.zarr", f"{BUCKET}/noxmeta.zarr", recursive=True)
    fs.rm(f"{BUCKET}/noxmeta.zarr/X/zarr.json")
    local = tmp_path / "noxmeta.zarr"
    shutil.copytree(local_stores["raw"][0], local)
    (local / "X" / "zarr.json").unlink()
    for store in (f"s3://{BUCKET}/noxmeta.zarr", local):
        code, _, err = run(capsys, "info", store)
        one_sentence(code, err, "X")


# ----------------------------------------------------------------------------- 8. an endpoint that never answers
@pytest.fixture
def silent_endpoint():
    """http://127.0.0.1:PORT of a socket that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(50)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_silent_endpoint_is_one_sentence_within_the_timeouts(capsys, silent_endpoint, s3_stores, restore_dask_config):
    import dask.config

    forget_connections()
    dask.config.set({"wideml.storage-options": {"config_kwargs": {"read_timeout": 0.5, "connect_timeout": 0.5}}})
    start = time.monotonic()
    code, _, err = run(capsys, "info", s3_stores["raw"], "--storage-option", f"endpoint_url={silent_endpoint}")
    took = time.monotonic() - start
    forget_connections()
    line = one_sentence(code, err, "cannot reach the object store")
    assert "read_timeout" in line
    assert took < 15, took  # 0.5 s per attempt, 3 attempts, a few requests: far below botocore's 60 s x 5


def test_s3_timeouts_and_retries_have_defaults_the_options_override(s3_stores, s3_options):
    import dask.config

    from wideml.storage.remote_store import remote_location

    options = remote_location(f"s3://{BUCKET}/s.zarr").options
    assert options["config_kwargs"] == {"connect_timeout": 10, "read_timeout": 60, "retries": {"max_attempts": 3, "mode": "standard"}}
    assert open_store(s3_stores["raw"]).remote.store().fs.retries == 1  # s3fs's own retries would multiply botocore's
    assert "config_kwargs" not in remote_location(f"file:///{BUCKET}/s.zarr").options  # only s3:// gets botocore's settings
    dask.config.set({"wideml.storage-options": {"config_kwargs": {"read_timeout": 5}}})
    options = remote_location(f"s3://{BUCKET}/s.zarr", {"config_kwargs": {"retries": {"max_attempts": 1}}}).options
    assert options["config_kwargs"] == {"connect_timeout": 10, "read_timeout": 5, "retries": {"max_attempts": 1, "mode": "standard"}}
