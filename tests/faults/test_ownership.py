"""Owner records: wideml removes a folder only when a wideml record proves it made it and its run is over."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from wideml.runtime.owned_names import aside_name, checkpoint_folder, is_owned_name, work_folder_name
from wideml.runtime.ownership import (OWNER_FILE, OWNER_MARKER, ForeignFolderError, _write_record, abandoned, claim,
                                      owner_alive, read_owner, release, sweep, verdict, wideml_record)


def _claimed_by_dead_process(folder, kind: str | None = None) -> None:
    """``folder`` claimed by a real wideml process that has exited since."""
    code = f"import sys; from wideml.runtime.ownership import claim; claim(sys.argv[1], {kind!r})"
    subprocess.run([sys.executable, "-c", code, str(folder)], check=True)


def _backdate(folder, seconds: float = 3600) -> None:
    import time

    os.utime(folder, (time.time() - seconds, time.time() - seconds))


def test_claim_records_marker_run_id_and_name_and_release_keeps_the_record(tmp_path):
    folder = tmp_path / aside_name("out.zarr", "partial")
    claim(folder, "partial")
    record = wideml_record(folder)
    assert record["wideml"] == OWNER_MARKER and len(record["run_id"]) == 32 and record["name"] == folder.name
    assert record["pid"] == os.getpid() and record["argv"] == sys.argv and record["start_time"] > 0
    assert owner_alive(folder) is True and verdict(folder) == "running"
    release(folder)
    assert folder.is_dir() and wideml_record(folder)["state"] == "kept"
    assert verdict(folder) == "running"  # its process still runs


def test_sweep_removes_dead_owners_only(tmp_path):
    names = {k: aside_name(k, "partial") for k in "abcdef"}
    dead, alive, unknown = (tmp_path / names[k] for k in "abc")
    other_host, reused_pid, unmatched = tmp_path / names["d"], tmp_path / names["e"], tmp_path / "keep.partial-6"
    _claimed_by_dead_process(dead)
    claim(alive)
    unknown.mkdir()
    (unknown / "zarr.json").write_text("{}")
    _claimed_by_dead_process(other_host)
    _write_record(other_host, read_owner(other_host) | {"host": "another-node"})
    claim(reused_pid)  # our pid, but a start time that is not ours: the pid was reused, the owner is gone
    record = read_owner(reused_pid)
    _write_record(reused_pid, record | {"start_time": record["start_time"] - 1000})
    _claimed_by_dead_process(unmatched)
    for folder in (dead, alive, unknown, other_host, reused_pid, unmatched):
        _backdate(folder)
    assert owner_alive(dead) is False and owner_alive(reused_pid) is False
    assert owner_alive(other_host) is None and owner_alive(unknown) is None
    assert sorted(sweep(tmp_path)) == sorted([dead, reused_pid])
    assert all(p.exists() for p in (alive, unknown, other_host, unmatched))
    assert sweep(tmp_path / "missing") == []


#: Folders a user may well have, named like every pattern wideml uses (or used to use).
USER_FOLDERS = (".config.old-backup", ".mozilla.partial-restore", "thesis.wideml-work", "wideml-fit-mine",
                ".s.zarr.partial-1234abcd", ".m.old-deadbeef", "wideml-fit-0123456789ab",
                ".data.zarr.wideml-partial-0123456789ab", ".data.zarr.wideml-old-0123456789ab",
                "wideml-cv-0123456789abcdef", "wideml-resume-0123456789abcdef")


def _user_folders(parent, records: str) -> list:
    """USER_FOLDERS under ``parent``, each with a file inside, backdated; ``records`` says what owner files they carry.

    ``none``: none; ``foreign``: another program's ``.wideml-owner.json`` (no marker) naming a dead pid;
    ``old``: a pre-marker wideml record; ``copied``: a real wideml record of a dead run written for another name.
    """
    dead_pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout)
    made = []
    for name in USER_FOLDERS:
        folder = parent / name
        folder.mkdir()
        (folder / "thesis-chapter.tex").write_text("irreplaceable")
        if records == "foreign":
            (folder / OWNER_FILE).write_text(json.dumps({"pid": dead_pid, "host": os.uname().nodename, "program": "other"}))
        elif records == "old":
            (folder / OWNER_FILE).write_text(json.dumps({"pid": dead_pid, "host": os.uname().nodename, "start_time": 1.0}))
        elif records == "copied":
            donor = parent / aside_name("donor", "partial")
            _claimed_by_dead_process(donor)
            os.replace(donor / OWNER_FILE, folder / OWNER_FILE)
            donor.rmdir()
        _backdate(folder)
        made.append(folder)
    return made


@pytest.mark.parametrize("records", ["none", "foreign", "old", "copied"])
def test_folders_without_a_wideml_record_of_their_own_are_never_swept(tmp_path, records):
    folders = _user_folders(tmp_path, records)
    assert sweep(tmp_path) == []
    assert all((f / "thesis-chapter.tex").read_text() == "irreplaceable" for f in folders)
    assert all(verdict(f) == "unrecorded" and not abandoned(f) for f in folders)


def test_names_only_narrow_the_search():
    assert not is_owned_name(".config.old-backup") and not is_owned_name("wideml-fit-mine")
    assert not is_owned_name(".mozilla.partial-restore") and not is_owned_name("wideml-cv-x")
    assert is_owned_name(aside_name("x.zarr", "partial")) and is_owned_name(aside_name("x", "old", "stage1"))
    assert is_owned_name(work_folder_name()) and is_owned_name("m.model.wideml-work")


def test_a_long_output_name_gives_legal_sibling_names(tmp_path):
    name = "n" * 246
    for sibling in (aside_name(name, "partial"), aside_name(name, "old", "stage1"), os.path.basename(checkpoint_folder(tmp_path / name))):
        assert len(os.fsencode(sibling)) <= 255 and is_owned_name(sibling)
    assert checkpoint_folder(tmp_path / name) == checkpoint_folder(tmp_path / name)  # a rerun finds it again
    assert checkpoint_folder(tmp_path / (name + "a")) != checkpoint_folder(tmp_path / (name + "b"))
    wide = "é" * 127  # 254 bytes in UTF-8
    assert len(os.fsencode(aside_name(wide, "partial"))) <= 255


def test_owner_of_another_boot_is_gone_and_of_another_pid_namespace_is_unknown(tmp_path):
    rebooted, container = tmp_path / aside_name("a", "partial"), tmp_path / aside_name("b", "partial")
    for folder, key, value in ((rebooted, "boot_id", "another-boot"), (container, "pid_ns", "pid:[1]")):
        claim(folder)  # this very process, alive: only the recorded boot / namespace differs
        _write_record(folder, read_owner(folder) | {key: value})
    assert owner_alive(rebooted) is False  # every process of an earlier boot is gone
    assert owner_alive(container) is None  # its pid cannot be looked up from here: kept
    assert sweep(tmp_path) == [rebooted] and container.is_dir()


def test_claim_refuses_a_foreign_or_busy_folder_and_adopts_a_finished_runs(tmp_path):
    user = tmp_path / "m.wideml-work"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    with pytest.raises(ForeignFolderError, match="not made by wideml"):
        claim(user, "checkpoint")
    assert (user / "notes.txt").read_text() == "mine" and read_owner(user) is None
    finished = tmp_path / "n.wideml-work"
    _claimed_by_dead_process(finished, "checkpoint")
    (finished / "pass-1").mkdir()
    claim(finished, "checkpoint")  # a run that is over: the rerun resumes from it
    assert owner_alive(finished) is True
    code = "import sys, time; from wideml.runtime.ownership import claim; claim(sys.argv[1], 'checkpoint'); print('ok', flush=True); time.sleep(60)"
    busy = tmp_path / "o.wideml-work"
    owner = subprocess.Popen([sys.executable, "-c", code, str(busy)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ok"
        (busy / "pass-1").mkdir()
        with pytest.raises(ForeignFolderError, match=f"another wideml run \\(pid {owner.pid}"):
            claim(busy, "checkpoint")
    finally:
        owner.kill()
        owner.wait()


def test_a_commands_start_sweeps_dead_leftovers_beside_its_output_but_no_checkpoint_folder(tmp_path, adv_stores):
    from adversarial.harness import run_cli

    train, _ = adv_stores
    dead = tmp_path / aside_name("old.model", "partial")
    dead_work, own_work, alive = tmp_path / "old.wideml-work", tmp_path / "m.wideml-work", tmp_path / aside_name("x", "partial")
    _claimed_by_dead_process(dead)
    _claimed_by_dead_process(dead_work, "checkpoint")
    _claimed_by_dead_process(own_work, "checkpoint")
    claim(alive)  # this test process: alive
    proc = run_cli("fit", "lol", train, "-o", tmp_path / "m", "--workdir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("wideml: removed")]
    assert str(dead) in line and "removed 1 leftover" in line
    assert not dead.exists() and dead_work.is_dir() and alive.is_dir() and (tmp_path / "m").is_dir()
    assert not own_work.exists()  # the fit adopted its own finished checkpoint folder and removed it on success
    release(alive)


def test_clean_removes_finished_runs_leftovers_lists_the_rest_and_removes_named_ones(tmp_path):
    from adversarial.harness import assert_refused, run_cli

    wd = tmp_path / "wd"
    dead, alive = tmp_path / aside_name("s.zarr", "partial"), tmp_path / aside_name("t.zarr", "partial")
    work, kept = wd / work_folder_name(), tmp_path / "m.wideml-work"
    _claimed_by_dead_process(dead)
    _claimed_by_dead_process(work, "work")
    _claimed_by_dead_process(kept, "checkpoint")
    code = "import sys; from wideml.runtime.ownership import claim, release; claim(sys.argv[1], 'checkpoint'); release(sys.argv[1])"
    subprocess.run([sys.executable, "-c", code, str(kept)], check=True)
    assert verdict(kept) == "kept"
    users = _user_folders(tmp_path, "none")
    code = "import sys, time; from wideml.runtime.ownership import claim; claim(sys.argv[1]); print('ok', flush=True); time.sleep(60)"
    owner = subprocess.Popen([sys.executable, "-c", code, str(alive)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ok"
        dry = run_cli("clean", tmp_path, "--workdir", wd, "--dry-run")
        assert dry.returncode == 0 and "would remove 3 leftovers" in dry.stdout and dead.exists(), dry.stdout
        proc = run_cli("clean", tmp_path, "--workdir", wd)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert sorted(ln.split()[1] for ln in lines if ln.startswith("removed /")) == sorted(map(str, (dead, kept, work)))
        assert any(ln.startswith(f"kept {alive}") for ln in lines) and lines[-1].startswith("removed 3 leftovers")
        assert not dead.exists() and not work.exists() and not kept.exists() and alive.is_dir()
        for folder in users:
            assert (folder / "thesis-chapter.tex").exists()
            if is_owned_name(folder.name):
                assert any(ln.startswith(f"kept {folder} (no wideml owner record") for ln in lines), proc.stdout
        assert_refused(run_cli("clean", "--remove", alive), "still owns")
    finally:
        owner.kill()
        owner.wait()
    assert abandoned(alive)  # its owner is gone now: the next clean removes it
    named = tmp_path / "thesis.wideml-work"
    proc = run_cli("clean", "--remove", named)
    assert proc.returncode == 0 and not named.exists(), proc.stdout + proc.stderr
    assert_refused(run_cli("clean", "--remove", tmp_path / ".config.old-backup"), "not a name wideml gives")
    assert (tmp_path / ".config.old-backup" / "thesis-chapter.tex").exists()
    assert_refused(run_cli("clean", tmp_path / "missing"), "missing", "not a folder")


_FIT_IN_A_TASK = """
import time
from wideml import LOL
from wideml.storage import open_store
store = open_store(STORE)
est = LOL(n_components=2, solver="gram", workdir=WD).fit(store, store.y)
time.sleep(30)  # hold the work folder (the estimator owns it) until the test has looked
"""


def test_a_dead_workers_work_folder_is_swept_the_rerun_on_a_live_worker_is_kept(tmp_path):
    """A fit submitted as a dask task: its worker is SIGKILLed; dask reruns the task on a live worker in a new folder."""
    import signal
    import time

    from faults.cluster_fixture import Cluster

    pytest.importorskip("distributed")
    from adversarial.harness import run_cli

    store, wd = tmp_path / "s.zarr", tmp_path / "wd"
    wd.mkdir()
    proc = run_cli("simulate", "trunk", "--n-samples", 60, "--n-features", 20000, "-o", store)
    assert proc.returncode == 0, proc.stderr
    cluster = Cluster(tmp_path / "cluster")
    try:
        future = cluster.client.submit(exec, _FIT_IN_A_TASK, {"STORE": str(store), "WD": str(wd)}, pure=False)
        deadline = time.monotonic() + 60
        while not list(wd.glob("wideml-fit-*/" + OWNER_FILE)) and time.monotonic() < deadline:
            time.sleep(0.02)
        (first,) = wd.glob("wideml-fit-*")
        record = read_owner(first)
        assert record["scheduler"] == cluster.address and record["worker"] in cluster.worker_pids()
        os.kill(record["pid"], signal.SIGKILL)
        while owner_alive(first) is not False and time.monotonic() < deadline:
            time.sleep(0.02)
        while not [p for p in wd.glob("wideml-fit-*") if p != first and owner_alive(p)] and time.monotonic() < deadline:
            time.sleep(0.05)
        (second,) = [p for p in wd.glob("wideml-fit-*") if p != first]
        assert read_owner(second)["pid"] != record["pid"] and owner_alive(second) is True
        assert sweep(wd) == [first]  # the dead worker's folder goes, the live rerun's stays
        assert second.is_dir()
        future.cancel()
    finally:
        cluster.close()


def test_a_hand_written_edited_linked_or_foreign_key_record_proves_nothing(tmp_path, monkeypatch):
    """Forged records (issue 22, user-world round): every field right, but not signed with this user's owner key."""
    names = [aside_name(f"f{i}", "partial") for i in range(5)] + ["thesis.wideml-work"]
    folders = [tmp_path / name for name in names]
    for folder in folders:
        _claimed_by_dead_process(folder)  # a real record of a dead wideml run: removable as it is
        (folder / "precious.txt").write_text("mine")
    hand, edited, linked, other_key, wrong_kind, checkpoint = folders
    (hand / OWNER_FILE).write_text(json.dumps({k: v for k, v in read_owner(hand).items() if k != "signature"}))
    (edited / OWNER_FILE).write_text(json.dumps(read_owner(edited) | {"argv": ["rm", "-rf", "/"]}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.replace(linked / OWNER_FILE, elsewhere / OWNER_FILE)
    (linked / OWNER_FILE).symlink_to(elsewhere / OWNER_FILE)
    code = "import sys; from wideml.runtime.ownership import claim; claim(sys.argv[1])"
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "another-user"))
    import shutil

    shutil.rmtree(other_key)
    subprocess.run([sys.executable, "-c", code, str(other_key)], check=True, env=env)  # signed with another user's key
    (other_key / "precious.txt").write_text("mine")
    _write_record(wrong_kind, read_owner(wrong_kind) | {"kind": "work"})  # signed, but a work record on a partial name
    for folder in (hand, edited, linked, other_key, wrong_kind):
        assert verdict(folder) == "unrecorded", folder
    assert verdict(checkpoint) == "dead"  # the control: an untouched record of a dead run
    assert sweep(tmp_path) == [checkpoint]
    assert all((f / "precious.txt").exists() for f in (hand, edited, linked, other_key, wrong_kind))


def test_claim_refuses_a_symlinked_folder(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.txt").write_text("mine")
    link = tmp_path / "m.model.wideml-work"
    link.symlink_to(victim)
    with pytest.raises(ForeignFolderError, match="symbolic link"):
        claim(link, "checkpoint")
    assert sorted(os.listdir(victim)) == ["data.txt"]
