"""``wideml fit --workdir s3://...``: checkpoints on the object store (wideml.runner.remote_workdir), against a real
S3-compatible server (moto on 127.0.0.1).

A fit SIGKILLed (from outside, once a committed checkpoint is on the bucket) resumes from the bucket in a process with
another local temporary folder (as on another machine), reads fewer chunks, and writes the model an uninterrupted fit
writes, bit for bit; objects under the work prefix that wideml did not write are never read, replaced or removed; a
workdir that cannot be reached or written is one sentence (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from remote.conftest import BUCKET, forget_connections
from wideml.cli.main import main
from wideml.models.persistence import load_model
from wideml.runner.remote_workdir import work_prefix_url

FAST = {"DASK_WIDEML__CHECKPOINT_INTERVAL": "0.000001", "PYTHONWARNINGS": "ignore"}
CHUNKS = 20


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


def keys(fs, prefix: str) -> set[str]:
    fs.invalidate_cache()
    return set(fs.find(prefix)) if fs.exists(prefix) else set()


def _cli(args, tmpdir, **popen):
    env = dict(os.environ, TMPDIR=str(tmpdir), **FAST)
    cmd = [sys.executable, "-m", "wideml.cli.main", *map(str, args), "--no-progress"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _finish(proc):
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.fixture(scope="module")
def slow_url(tmp_path_factory, s3_server):
    """A store of 20 chunks on the bucket (with a checkpoint after every chunk, each synced, the fit takes seconds)."""
    from wideml.storage import write_store

    _, fs = s3_server
    rng = np.random.default_rng(27)
    X = rng.standard_normal((30, 60 * CHUNKS)).astype(np.float32) + 3
    y = np.arange(30) % 3
    path = write_store(tmp_path_factory.mktemp("workdir") / "w.zarr", X, y, feature_chunk=60)
    fs.put(str(path), f"{BUCKET}/workdir-src/w.zarr", recursive=True)
    return f"s3://{BUCKET}/workdir-src/w.zarr"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch, restore_dask_config):
    monkeypatch.chdir(tmp_path)
    yield
    assert not any(p.name.startswith("s3:") for p in tmp_path.rglob("*")), list(tmp_path.rglob("*"))


def test_fit_killed_on_one_machine_resumes_from_the_bucket_on_another(capsys, tmp_path, s3_server, s3_options, slow_url,
                                                                     monkeypatch):
    import dask.config
    import tempfile

    from wideml.storage.reader import READ_COUNTER

    endpoint, fs = s3_server
    workdir = f"s3://{BUCKET}/work"
    out = tmp_path / "m.model"
    prefix = work_prefix_url(workdir, str(out))[len("s3://"):]
    so = ["--storage-option", f"endpoint_url={endpoint}"]
    machine_a, machine_b, machine_c = (tmp_path / name for name in ("a", "b", "c"))
    for folder in (machine_a, machine_b, machine_c):
        folder.mkdir()

    proc = _cli(["fit", "lol", slow_url, "-o", out, "--workdir", workdir, *so], machine_a)
    lanes = []
    deadline = time.monotonic() + 120
    while not lanes and proc.poll() is None and time.monotonic() < deadline:  # a committed lane checkpoint on the bucket
        try:
            index = json.loads(fs.cat_file(f"{prefix}/index.json"))
            lanes = [rel for rel in index["files"] if re.fullmatch(r"pass-\d+/lane-\d+\.npz", rel)]
        except FileNotFoundError:
            pass
        if not lanes:
            time.sleep(0.01)  # polling interval, not a wait for the fit
            fs.invalidate_cache()
    proc.send_signal(signal.SIGKILL)
    code, _, err = _finish(proc)
    assert lanes and code == -signal.SIGKILL, err
    assert not out.exists()
    local = tmp_path / "m.model.wideml-work"  # machine a's local checkpoints: moved out of reach, as on another machine
    assert local.is_dir()
    local.rename(machine_a / "kept")
    fs.pipe_file(f"{prefix}/notes.txt", b"a colleague's object")  # foreign objects in the work prefix
    fs.pipe_file(f"{prefix}/blobs/0000", b"not wideml's")

    dask.config.set({"wideml.checkpoint-interval": 0.000001})  # as the killed run
    monkeypatch.setattr(tempfile, "tempdir", str(machine_b))
    before = sum(READ_COUNTER.values())
    code, _, err = run(capsys, "fit", "lol", slow_url, "-o", out, "--workdir", workdir)
    assert code == 0, err
    assert "from a checkpoint" in err, err
    resumed = sum(READ_COUNTER.values()) - before
    assert keys(fs, prefix) == {f"{prefix}/notes.txt", f"{prefix}/blobs/0000"}  # ours removed, the foreign ones kept
    assert not local.exists() and not list(machine_b.glob("wideml-*"))

    monkeypatch.setattr(tempfile, "tempdir", str(machine_c))
    before = sum(READ_COUNTER.values())
    code, _, err = run(capsys, "fit", "lol", slow_url, "-o", tmp_path / "whole.model")
    assert code == 0 and "from a checkpoint" not in err, err
    assert 0 < resumed < sum(READ_COUNTER.values()) - before == 2 * CHUNKS
    a, b = load_model(out).embedding_, load_model(tmp_path / "whole.model").embedding_
    for name in ("components_", "offset_", "class_means_"):
        np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)), err_msg=name)


def test_forged_index_is_neither_used_nor_replaced(capsys, tmp_path, s3_server, s3_options, local_stores):
    _, fs = s3_server
    workdir = f"s3://{BUCKET}/forged"
    out = tmp_path / "m.model"
    prefix = work_prefix_url(workdir, str(out))[len("s3://"):]
    forged = json.dumps({"wideml": "wideml-remote-checkpoints/1", "prefix": prefix.rsplit("/", 1)[1], "files": {}}).encode()
    fs.pipe_file(f"{prefix}/index.json", forged)
    code, _, err = run(capsys, "fit", "lol", local_stores["raw"][0], "-o", out, "--workdir", workdir)
    one_sentence(code, err, "cannot prove it wrote")
    assert keys(fs, prefix) == {f"{prefix}/index.json"} and fs.cat_file(f"{prefix}/index.json") == forged
    assert not out.exists()


def test_local_output_with_a_bucket_workdir_leaves_nothing_after_success(capsys, tmp_path, s3_server, s3_options, local_stores):
    _, fs = s3_server
    workdir = f"s3://{BUCKET}/plain"
    import dask.config

    dask.config.set({"wideml.checkpoint-interval": 0.000001})
    code, _, err = run(capsys, "fit", "lol", local_stores["zstd"][0], "-o", tmp_path / "m.model", "--workdir", workdir)
    assert code == 0, err
    assert (tmp_path / "m.model").is_dir()
    assert keys(fs, f"{BUCKET}/plain") == set()


def test_unusable_bucket_workdir_is_one_sentence(capsys, tmp_path, s3_server, s3_options, local_stores):
    import socket

    from moto.core.authorization import enable_iam_authentication

    store = local_stores["raw"][0]
    forget_connections()
    try:
        with enable_iam_authentication():  # the server knows no access key: every request is refused
            code, _, err = run(capsys, "fit", "lol", store, "-o", tmp_path / "a.model", "--workdir", f"s3://{BUCKET}/denied")
    finally:
        forget_connections()
    one_sentence(code, err, "refused access")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, err = run(capsys, "fit", "lol", store, "-o", tmp_path / "b.model", "--workdir", f"s3://{BUCKET}/gone",
                       "--storage-option", f"endpoint_url=http://127.0.0.1:{port}",
                       "--storage-option", "config_kwargs.retries.max_attempts=1")
    forget_connections()
    one_sentence(code, err, "cannot reach the object store")
    code, _, err = run(capsys, "cv", store, "--workdir", f"s3://{BUCKET}/cv")
    one_sentence(code, err, "only wideml fit keeps its checkpoints on an object store")
    assert not any(p.name.endswith((".model", ".wideml-work")) for p in tmp_path.iterdir()), list(tmp_path.iterdir())
