"""Writing to a real S3-compatible server (moto on 127.0.0.1): models, tables, maps and stores, with the trust rules of
local outputs (wideml.storage.remote_write), and a fit killed mid-pass on S3 that resumes.

Every output is compared with the same command's local output; every failure is one ``wideml: error:`` sentence (exit
2) that leaves nothing on the object store (no output, no temporary prefix, no marker) and nothing local.
"""

from __future__ import annotations

import json
import signal

import numpy as np
import pytest

from remote.conftest import BUCKET, forget_connections
from wideml.cli.main import main
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import StoreError
from wideml.models.persistence import load_model, save_model
from wideml.storage import open_store
from wideml.storage.remote_write import DONE_SUFFIX


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(code, err, match):
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.startswith("wideml: error:")]
    assert "Traceback" not in err and len(lines) == 1 and lines[0].endswith("."), err
    assert match in lines[0], err
    return lines[0]


def keys(fs, prefix: str = BUCKET) -> set[str]:
    fs.invalidate_cache()
    return {k for k in fs.find(prefix)}


def no_leftovers(fs, folder: str) -> None:
    """Nothing in ``folder`` of the bucket: no output object, no marker, no temporary prefix."""
    found = keys(fs, f"{BUCKET}/{folder}/") if fs.exists(f"{BUCKET}/{folder}") else set()
    assert not found, found


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch, restore_dask_config):
    """An empty working folder that must stay free of folders named after the URL ('s3:')."""
    monkeypatch.chdir(tmp_path)
    yield
    assert not any(p.name.startswith(("s3:", "gs:")) for p in tmp_path.rglob("*")), list(tmp_path.rglob("*"))


@pytest.fixture
def fitted(local_stores):
    """A fitted LOL (per test: an in-process CLI run removes this process's work folders when it ends)."""
    return LOL(n_components=2).fit(open_store(local_stores["raw"][0]))


# ----------------------------------------------------------------------------- the same outputs as a local run
def test_save_and_load_model_round_trip(fitted, local_stores, s3_server, s3_options, tmp_path):
    _, fs = s3_server
    url = f"s3://{BUCKET}/api/lol.model"
    assert save_model(fitted, url) == url
    assert f"{BUCKET}/api/.lol.model{DONE_SUFFIX}" in keys(fs)
    assert not [k for k in keys(fs) if "wideml-partial" in k]
    back = load_model(url)
    X = local_stores["raw"][1]
    np.testing.assert_array_equal(back.transform(X), fitted.transform(X))
    assert back.model_path_ == url
    with pytest.raises(StoreError, match="already exists"):
        save_model(fitted, url)
    save_model(fitted, url, overwrite=True)  # provably wideml's: replaced
    np.testing.assert_array_equal(load_model(url).transform(X), fitted.transform(X))


def test_cli_outputs_on_s3_equal_local_outputs(capsys, tmp_path, s3_server, s3_options, local_stores):
    endpoint, fs = s3_server
    store = local_stores["zstd"][0]
    so = ["--storage-option", f"endpoint_url={endpoint}"]
    for where, base in (("local", str(tmp_path)), ("s3", f"s3://{BUCKET}/cli")):
        for args in (["fit", "lol", store, "-o", f"{base}/m.model", "--n-components", 2],
                     ["predict", f"{base}/m.model", store, "-o", f"{base}/p.csv"],
                     ["cv", store, "--folds", 3, "--max-dim", 3, "-o", f"{base}/cv.json"],
                     ["maps", f"{base}/m.model", "-o", f"{base}/maps", "--png", "none"],
                     ["rechunk", store, "-o", f"{base}/r.zarr", "--feature-chunk", 100],
                     ["simulate", "trunk", "--n-samples", 20, "--n-features", 50, "-o", f"{base}/sim.zarr"]):
            code, _, err = run(capsys, *args, *so)
            assert code == 0, (where, args, err)
    s3 = f"{BUCKET}/cli"
    assert fs.cat_file(f"{s3}/p.csv") == (tmp_path / "p.csv").read_bytes()
    remote_cv, local_cv = json.loads(fs.cat_file(f"{s3}/cv.json")), json.loads((tmp_path / "cv.json").read_text())
    for doc in (remote_cv, local_cv):
        doc.pop("run", None)
    assert remote_cv == local_cv
    names = sorted(p.name for p in (tmp_path / "maps").iterdir())
    assert sorted(k.rsplit("/", 1)[1] for k in keys(fs, f"{s3}/maps/")) == names
    for name in names:
        if name.endswith(".npy"):
            assert fs.cat_file(f"{s3}/maps/{name}") == (tmp_path / "maps" / name).read_bytes(), name
    for name in ("r.zarr", "sim.zarr"):
        remote, local = open_store(f"s3://{s3}/{name}"), open_store(tmp_path / name)
        np.testing.assert_array_equal(remote.X.compute(), local.X.compute())
        np.testing.assert_array_equal(remote.y, local.y)
        assert remote.stored_chunks == local.stored_chunks
    a, b = load_model(f"s3://{s3}/m.model"), load_model(tmp_path / "m.model")
    X = local_stores["zstd"][1]
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    assert not [k for k in keys(fs) if "wideml-partial" in k]


def test_two_stage_rechunk_stages_locally(tmp_path, s3_server, s3_options, local_stores):
    from wideml.storage.rechunk import temp_sibling
    from wideml.storage.remote_write import staging_parent

    stage = temp_sibling(f"s3://{BUCKET}/x/r.zarr", "stage1")
    assert str(stage).startswith(staging_parent()) and ".r.zarr.wideml-partial-" in stage.name


# ----------------------------------------------------------------------------- what may be replaced
def test_foreign_objects_are_never_replaced(capsys, fitted, s3_server, s3_options, local_stores):
    _, fs = s3_server
    fs.pipe_file(f"{BUCKET}/user/m.model/notes.txt", b"mine")
    fs.pipe_file(f"{BUCKET}/user/p.csv", b"mine")
    store = local_stores["raw"][0]
    for args in (["fit", "lol", store, "-o", f"s3://{BUCKET}/user/m.model", "--overwrite"],
                 ["predict", load_path(fitted, fs), store, "-o", f"s3://{BUCKET}/user/p.csv", "--overwrite"]):
        code, _, err = run(capsys, *args)
        one_sentence(code, err, "cannot prove it wrote it")
    with pytest.raises(StoreError, match="cannot prove it wrote it"):
        save_model(fitted, f"s3://{BUCKET}/user/m.model", overwrite=True)
    assert fs.cat_file(f"{BUCKET}/user/m.model/notes.txt") == b"mine" and fs.cat_file(f"{BUCKET}/user/p.csv") == b"mine"
    assert keys(fs, f"{BUCKET}/user") == {f"{BUCKET}/user/p.csv", f"{BUCKET}/user/m.model/notes.txt"}
    # a forged or copied marker proves nothing either
    fs.pipe_file(f"{BUCKET}/user/.p.csv{DONE_SUFFIX}", json.dumps({"wideml": "wideml-remote-output/1", "name": "p.csv",
                                                                  "files": {"": {"size": 4}}}).encode())
    with pytest.raises(StoreError, match="cannot prove it wrote it"):
        save_model(fitted, f"s3://{BUCKET}/user/p.csv", overwrite=True)


def test_output_on_its_own_input_is_refused(capsys, s3_server, s3_options, s3_stores):
    _, fs = s3_server
    url = s3_stores["raw"]
    before = keys(fs, url.split("://")[1])
    for args in (["fit", "lol", url, "-o", url, "--overwrite"], ["fit", "lol", url, "-o", f"{url}/X/m.model"],
                 ["rechunk", url, "-o", url, "--overwrite"]):
        code, _, err = run(capsys, *args)
        one_sentence(code, err, "would change or destroy that input")
    assert keys(fs, url.split("://")[1]) == before


def load_path(fitted, fs) -> str:
    url = f"s3://{BUCKET}/user-src/m.model"
    if not fs.exists(f"{BUCKET}/user-src/m.model"):
        save_model(fitted, url)
    return url


def test_changed_or_half_replaced_model_is_refused(fitted, s3_server, s3_options):
    _, fs = s3_server
    url = f"s3://{BUCKET}/damaged/m.model"
    save_model(fitted, url)
    chunk = next(k for k in sorted(keys(fs, f"{BUCKET}/damaged/m.model/loadings/")) if "/c/" in k)
    data = bytearray(fs.cat_file(chunk))
    data[0] ^= 1
    fs.pipe_file(chunk, bytes(data))
    with pytest.raises(StoreError, match="fails its checksum"):
        load_model(url)
    fs.rm_file(chunk)
    with pytest.raises(StoreError, match="does not match its completion marker"):
        load_model(url)
    with pytest.raises(StoreError, match="no model at"):
        load_model(f"s3://{BUCKET}/damaged/none.model")


# ----------------------------------------------------------------------------- failures leave nothing
@pytest.mark.parametrize("failure", [OSError("connection reset by peer"), KeyboardInterrupt()])
def test_failure_while_putting_in_place_leaves_nothing(failure, fitted, s3_server, s3_options, monkeypatch):
    """A failure (or SIGINT) after some objects were copied into place: those, the marker and the temporary prefix go."""
    from wideml.storage.remote_write import RemoteTarget

    _, fs = s3_server
    real, calls = RemoteTarget.call, []

    def failing(self, doing, fn, *args, **kwargs):
        if doing == "copy into place":
            calls.append(args)
            if len(calls) == 4:
                def broken(*_):
                    raise failure
                return real(self, doing, broken)  # as the object store's failure reaches wideml
        return real(self, doing, fn, *args, **kwargs)

    monkeypatch.setattr(RemoteTarget, "call", failing)
    with pytest.raises((StoreError, KeyboardInterrupt)):
        save_model(fitted, f"s3://{BUCKET}/fail/m.model")
    assert len(calls) == 4
    no_leftovers(fs, "fail")


def test_killed_upload_leftover_is_removed_by_the_next_write(fitted, s3_server, s3_options, tmp_path):
    """A temporary prefix whose owner is gone (a run killed outright) is removed by the next run writing that output;
    one without a wideml owner record stays."""
    import subprocess
    import sys

    _, fs = s3_server
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    from wideml.runtime.owner_key import sign
    from wideml.runtime.ownership import owner_record

    name = ".m.model.wideml-partial-0123456789ab"
    record = dict(owner_record(name, "partial"), pid=int(dead.stdout), start_time=1.0)
    fs.pipe_file(f"{BUCKET}/left/{name}/.wideml-owner.json", json.dumps(sign(record)).encode())
    fs.pipe_file(f"{BUCKET}/left/{name}/m.model/zarr.json", b"{}")
    foreign = ".m.model.wideml-partial-ba9876543210"
    fs.pipe_file(f"{BUCKET}/left/{foreign}/m.model/zarr.json", b"{}")
    save_model(fitted, f"s3://{BUCKET}/left/m.model")
    left = keys(fs, f"{BUCKET}/left")
    assert not [k for k in left if name in k]
    assert f"{BUCKET}/left/{foreign}/m.model/zarr.json" in left


def test_wrong_credentials_and_unreachable_endpoint_write_nothing(capsys, s3_server, s3_options, local_stores):
    import socket

    from moto.core.authorization import enable_iam_authentication

    _, fs = s3_server
    store = local_stores["raw"][0]
    forget_connections()
    try:
        with enable_iam_authentication():  # the server now knows no access key: every request is refused
            code, _, err = run(capsys, "fit", "lol", store, "-o", f"s3://{BUCKET}/denied/m.model")
    finally:
        forget_connections()
    one_sentence(code, err, "refused access")
    code, _, err = run(capsys, "fit", "lol", store, "-o", "s3://no-such-bucket-27/m.model")
    one_sentence(code, err, "bucket does not exist")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, err = run(capsys, "fit", "lol", store, "-o", f"s3://{BUCKET}/gone/m.model", "--storage-option",
                       f"endpoint_url=http://127.0.0.1:{port}", "--storage-option", "config_kwargs.retries.max_attempts=1")
    forget_connections()
    one_sentence(code, err, "cannot reach the object store")
    assert not [k for k in keys(fs) if "/denied/" in k or "/gone/" in k]


def test_bucket_without_write_permission(fitted, s3_server, s3_options):
    """A bucket whose policy denies writes: one sentence, and nothing of the output (the owner record is the first write)."""
    _, fs = s3_server
    fs.mkdir("wideml-readonly")
    fs.pipe_file("wideml-readonly/keep.txt", b"x")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
                                                      "Resource": "arn:aws:s3:::wideml-readonly/*"}]}
    import boto3

    client = boto3.client("s3", endpoint_url=s3_options["endpoint_url"])
    client.put_bucket_policy(Bucket="wideml-readonly", Policy=json.dumps(policy))
    from moto.core.authorization import enable_iam_authentication

    forget_connections()
    try:
        with enable_iam_authentication():
            with pytest.raises(StoreError, match="refused access"):
                save_model(fitted, "s3://wideml-readonly/m.model")
    finally:
        forget_connections()
    assert keys(fs, "wideml-readonly") == {"wideml-readonly/keep.txt"}


# ----------------------------------------------------------------------------- a fit killed mid-pass resumes
def test_fit_of_an_s3_store_killed_mid_pass_resumes_to_the_same_model(capsys, tmp_path, s3_server, s3_options, offset_url):
    """``wideml fit s3://... -o s3://...`` SIGKILLed (a real subprocess) after 12 of its 30 chunk reads; the rerun resumes
    from the checkpoints (in the work folder; nothing was put on the bucket) and writes the model an uninterrupted fit
    writes, bit for bit."""
    import dask.config

    from adversarial.harness import run_cli

    endpoint, fs = s3_server
    so = ["--storage-option", f"endpoint_url={endpoint}", "--workdir", tmp_path]
    out = f"s3://{BUCKET}/resume/m.model"
    env = {"DASK_WIDEML__CHECKPOINT_INTERVAL": "0.000001", "WIDEML_TEST_KILL_AFTER_READS": "12"}
    killed = run_cli("fit", "lol", offset_url, "-o", out, *so, env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not fs.exists(f"{BUCKET}/resume")
    assert list(tmp_path.glob("wideml-resume-*")), list(tmp_path.iterdir())
    dask.config.set({"wideml.checkpoint-interval": 0.000001})  # as the killed run: a checkpoint after every chunk
    code, _, err = run(capsys, "fit", "lol", offset_url, "-o", out, *so)
    assert code == 0, err
    assert "from a checkpoint" in err
    code, _, err = run(capsys, "fit", "lol", offset_url, "-o", f"s3://{BUCKET}/resume/whole.model", *so)
    assert code == 0 and "from a checkpoint" not in err, err
    a, b = load_model(out).embedding_, load_model(f"s3://{BUCKET}/resume/whole.model").embedding_
    for name in ("components_", "offset_", "class_means_"):
        np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)), err_msg=name)
    assert not list(tmp_path.glob("wideml-resume-*"))


@pytest.fixture(scope="module")
def offset_url(tmp_path_factory, s3_server):
    from wideml.storage import write_store

    _, fs = s3_server
    rng = np.random.default_rng(8)
    X = rng.standard_normal((30, 900)).astype(np.float32) + 2
    y = np.arange(30) % 3
    path = write_store(tmp_path_factory.mktemp("resume") / "r.zarr", X, y, feature_chunk=60)
    fs.put(str(path), f"{BUCKET}/resume-src/r.zarr", recursive=True)
    return f"s3://{BUCKET}/resume-src/r.zarr"
