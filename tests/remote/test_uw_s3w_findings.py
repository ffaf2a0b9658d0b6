"""The S3-write user-world findings (moto on 127.0.0.1): ``--overwrite`` removes only what a valid completion marker
lists, an interrupted copy-into-place leaves a signed commit intent a rerun cleans up, an interrupt waits for the upload
in flight, and the refusals name the right thing (wideml.storage.remote_write).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from remote.conftest import BUCKET
from wideml.estimators.gram.lol import LOL
from wideml.exceptions import StoreError
from wideml.models.persistence import load_model, save_model
from wideml.storage import remote_write
from wideml.storage.remote_write import DONE_SUFFIX, INTENT_SUFFIX, RemoteTarget


def keys(fs, prefix: str) -> set[str]:
    fs.invalidate_cache()
    return set(fs.find(prefix)) if fs.exists(prefix) else set()


@pytest.fixture
def fitted(local_stores):
    path, X, y = local_stores["raw"]
    return LOL(n_components=3).fit(X, y)


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


# ----------------------------------------------------------------------------- DATA-LOSS 1-3: --overwrite
def test_overwrite_refuses_a_model_holding_a_user_object_and_removes_nothing(fitted, s3_server, s3_options):
    _, fs = s3_server
    url = f"s3://{BUCKET}/ow1/m.model"
    save_model(fitted, url)
    fs.pipe_file(f"{BUCKET}/ow1/m.model/mynotes.txt", b"user added")
    before = keys(fs, f"{BUCKET}/ow1")
    with pytest.raises(StoreError, match=r"an object that its wideml completion marker does not list.*mynotes\.txt"):
        save_model(fitted, url, overwrite=True)
    assert keys(fs, f"{BUCKET}/ow1") == before
    fs.rm_file(f"{BUCKET}/ow1/m.model/mynotes.txt")
    save_model(fitted, url, overwrite=True)  # without the foreign object, the marker proves it: replaced
    assert load_model(url).n_components == 3


def test_overwrite_refuses_a_copied_model_and_a_forged_zarr_json(fitted, s3_server, s3_options):
    _, fs = s3_server
    save_model(fitted, f"s3://{BUCKET}/ow2/m.model")
    for key in keys(fs, f"{BUCKET}/ow2/m.model"):
        fs.copy(key, key.replace("/m.model/", "/copied.model/"))
    fs.pipe_file(f"{BUCKET}/ow2/copied.model/thesis_results.txt", b"thesis")
    fs.pipe_file(f"{BUCKET}/ow2/forged.model/zarr.json", fs.cat_file(f"{BUCKET}/ow2/m.model/zarr.json"))
    fs.pipe_file(f"{BUCKET}/ow2/forged.model/raw/scan001.nii", b"user scan")
    before = keys(fs, f"{BUCKET}/ow2")
    for name in ("copied", "forged"):
        with pytest.raises(StoreError, match="cannot prove it wrote it"):
            save_model(fitted, f"s3://{BUCKET}/ow2/{name}.model", overwrite=True)
    assert keys(fs, f"{BUCKET}/ow2") == before


def test_overwrite_refuses_an_object_of_the_same_name_with_other_content(fitted, s3_server, s3_options):
    """Same size, other bytes: the ETag differs from the MD5 the marker records."""
    _, fs = s3_server
    url = f"s3://{BUCKET}/ow3/m.model"
    save_model(fitted, url)
    key = f"{BUCKET}/ow3/m.model/zarr.json"
    data = fs.cat_file(key)
    fs.pipe_file(key, data.replace(b"{", b" ", 1)[:-1] + b"}" if data.endswith(b"}") else b" " + data[:-1])
    assert len(fs.cat_file(key)) == len(data)
    with pytest.raises(StoreError, match="changed since wideml wrote it"):
        save_model(fitted, url, overwrite=True)
    assert fs.exists(key) and fs.exists(f"{BUCKET}/ow3/.m.model{DONE_SUFFIX}")


# ----------------------------------------------------------------------------- DATA-LOSS 4-5: interrupted commits
def interrupt_copy_after(monkeypatch, k: int, exc: BaseException) -> list:
    real, calls = RemoteTarget.call, []

    def failing(self, doing, fn, *args, **kwargs):
        if doing == "copy into place":
            calls.append(args)
            if len(calls) > k:
                raise exc
        return real(self, doing, fn, *args, **kwargs)

    monkeypatch.setattr(RemoteTarget, "call", failing)
    return calls


def no_cleanup(monkeypatch, url, options) -> None:
    """Make the clean-up of an interrupted write remove nothing, as a kill -9 would (wideml's cached filesystem)."""
    wfs = remote_write.remote_target(url, options).fs
    monkeypatch.setattr(remote_write, "_remove_prefix", lambda *a, **k: None)
    monkeypatch.setattr(wfs, "rm_file", lambda *a, **k: None)
    monkeypatch.setattr(wfs, "rm", lambda *a, **k: None)


def test_killed_copy_into_place_is_cleaned_by_the_rerun(fitted, s3_server, s3_options, monkeypatch):
    """A kill -9 after 3 copies: the intent, the copied objects and the temporary prefix stay; the intent proves them
    wideml's once its owner is gone, so the rerun removes them and writes (a user object in the parent stays)."""
    _, fs = s3_server
    url = f"s3://{BUCKET}/kill/m.model"
    fs.pipe_file(f"{BUCKET}/kill/user.txt", b"mine")
    no_cleanup(monkeypatch, url, s3_options)  # a kill -9: no clean-up at all
    interrupt_copy_after(monkeypatch, 3, SystemExit(137))
    with pytest.raises(SystemExit):
        save_model(fitted, url)
    monkeypatch.undo()
    left = keys(fs, f"{BUCKET}/kill")
    intent_key = f"{BUCKET}/kill/.m.model{INTENT_SUFFIX}"
    assert intent_key in left and len([k for k in left if k.startswith(f"{BUCKET}/kill/m.model/")]) == 3
    intent = json.loads(fs.cat_file(intent_key))
    from wideml.runtime.owner_key import sign

    intent = dict(intent, run_id="another-run", owner=sign(dict(intent["owner"], pid=dead_pid(), start_time=1.0)))
    fs.pipe_file(intent_key, json.dumps(sign(intent)).encode())
    prefix = intent["prefix"]
    fs.pipe_file(f"{prefix}/.wideml-owner.json", json.dumps(intent["owner"]).encode())
    save_model(fitted, url)  # no --overwrite needed: the half-copied objects were never an output
    assert load_model(url).n_components == 3
    left = keys(fs, f"{BUCKET}/kill")
    assert not [k for k in left if ".wideml-partial-" in k or k.endswith(INTENT_SUFFIX)], left
    assert f"{BUCKET}/kill/user.txt" in left


def test_killed_copy_with_a_foreign_object_is_not_cleaned(fitted, s3_server, s3_options, monkeypatch):
    _, fs = s3_server
    url = f"s3://{BUCKET}/kill2/m.model"
    no_cleanup(monkeypatch, url, s3_options)
    interrupt_copy_after(monkeypatch, 2, SystemExit(137))
    with pytest.raises(SystemExit):
        save_model(fitted, url)
    monkeypatch.undo()
    intent_key = f"{BUCKET}/kill2/.m.model{INTENT_SUFFIX}"
    from wideml.runtime.owner_key import sign

    intent = json.loads(fs.cat_file(intent_key))
    intent = dict(intent, run_id="another-run", owner=sign(dict(intent["owner"], pid=dead_pid(), start_time=1.0)))
    fs.pipe_file(intent_key, json.dumps(sign(intent)).encode())
    fs.pipe_file(f"{BUCKET}/kill2/m.model/notes.txt", b"user")
    with pytest.raises(StoreError, match="cannot prove it wrote it"):
        save_model(fitted, url, overwrite=True)
    assert fs.cat_file(f"{BUCKET}/kill2/m.model/notes.txt") == b"user"


@pytest.mark.parametrize("where", ["upload to", "copy into place"])
def test_interrupt_waits_for_the_call_in_flight_and_leaves_nothing(where, fitted, s3_server, s3_options, monkeypatch):
    """SIGINT/SIGTERM (KeyboardInterrupt in the main thread) while an upload or copy is in flight: the clean-up waits
    for it, so the object it was writing does not appear after the clean-up listed (the finding's orphan)."""
    _, fs = s3_server
    real, seen = RemoteTarget.call, []
    started, may_finish = threading.Event(), threading.Event()

    def slow(self, doing, fn, *args, **kwargs):
        if doing == where and threading.current_thread() is not threading.main_thread():
            seen.append(args)
            if len(seen) == 2:
                started.set()
                may_finish.wait(10)
        return real(self, doing, fn, *args, **kwargs)

    monkeypatch.setattr(RemoteTarget, "call", slow)
    interrupted = threading.main_thread()
    import _thread

    def interrupter():
        started.wait(10)
        _thread.interrupt_main()  # KeyboardInterrupt while the main thread waits on the in-flight call
        time.sleep(0.3)  # the main thread is now in its clean-up, which must wait for the call below
        may_finish.set()

    helper = threading.Thread(target=interrupter)
    helper.start()
    with pytest.raises(KeyboardInterrupt):
        save_model(fitted, f"s3://{BUCKET}/sig-{where[:4]}/m.model")
    helper.join()
    assert interrupted is threading.main_thread() and started.is_set()
    assert keys(fs, f"{BUCKET}/sig-{where[:4]}") == set()


def test_live_committing_run_is_named_not_blamed(fitted, s3_server, s3_options):
    """BAD-MESSAGE 3: objects under the name with the intent of a live run: 'another wideml run', never 'remove it'."""
    _, fs = s3_server
    from wideml.runtime.owner_key import sign
    from wideml.runtime.ownership import owner_record

    name = ".m.model.wideml-partial-00112233aabb"
    owner = sign(dict(owner_record(name, "partial"), run_id="f" * 32))
    intent = sign({"wideml": "wideml-remote-commit/1", "name": "m.model", "url": "x", "run_id": "f" * 32,
                   "prefix": f"{BUCKET}/race/{name}", "owner": owner, "old": {}, "files": {"zarr.json": {"size": 2}}})
    fs.pipe_file(f"{BUCKET}/race/.m.model{INTENT_SUFFIX}", json.dumps(intent).encode())
    fs.pipe_file(f"{BUCKET}/race/m.model/zarr.json", b"{}")
    with pytest.raises(StoreError, match=r"being written by another wideml run \(pid \d+ on ") as info:
        save_model(fitted, f"s3://{BUCKET}/race/m.model", overwrite=True)
    assert "remove it yourself" not in str(info.value)
    assert fs.exists(f"{BUCKET}/race/m.model/zarr.json")


# ----------------------------------------------------------------------------- messages and URLs
def test_model_url_without_zarr_json_is_named(s3_server, s3_options):
    _, fs = s3_server
    fs.pipe_file(f"{BUCKET}/msg/user.model/notes.txt", b"n")
    fs.pipe_file(f"{BUCKET}/msg/user.csv", b"a,b\n")
    for url in (f"s3://{BUCKET}/msg/user.model", f"s3://{BUCKET}/msg/user.csv"):
        with pytest.raises(StoreError) as info:
            load_model(url)
        assert str(info.value).startswith(f"{url} is not a wideml model"), info.value


@pytest.mark.parametrize("url", [f"s3://{BUCKET}/../esc.model", f"s3://{BUCKET}/./dot.model", f"s3://{BUCKET}/a/../b.model"])
def test_dot_segments_are_refused(url, fitted, s3_server, s3_options):
    with pytest.raises(StoreError, match=r"has a '\.' or '\.\.' segment"):
        save_model(fitted, url)
