"""Owner files: a leftover is removed only when its owner process is known to be gone."""

from __future__ import annotations

import json

import pytest
import os
import subprocess
import sys

from wideml.runtime.ownership import OWNER_FILE, claim, owner_alive, read_owner, release, sweep


def _claimed_by_dead_process(folder) -> None:
    """``folder`` claimed by a real process that has exited since."""
    code = "import sys; from wideml.runtime.ownership import claim; claim(sys.argv[1])"
    subprocess.run([sys.executable, "-c", code, str(folder)], check=True)


def test_claim_records_this_process_and_release_removes_only_the_file(tmp_path):
    folder = tmp_path / ".out.zarr.partial-1234abcd"
    claim(folder)
    record = read_owner(folder)
    assert record["pid"] == os.getpid() and record["argv"] == sys.argv and record["start_time"] > 0
    assert owner_alive(folder) is True
    release(folder)
    assert folder.is_dir() and not (folder / OWNER_FILE).exists()
    assert owner_alive(folder) is None


def test_sweep_removes_dead_owners_only(tmp_path):
    dead, alive, unknown = tmp_path / ".a.partial-1", tmp_path / ".b.old-2", tmp_path / ".c.partial-3"
    other_host, reused_pid, unmatched = tmp_path / ".d.partial-4", tmp_path / ".e.partial-5", tmp_path / "keep.partial-6"
    _claimed_by_dead_process(dead)
    claim(alive)
    unknown.mkdir()
    (unknown / "zarr.json").write_text("{}")  # unowned with content, just written: kept (the grace)
    _claimed_by_dead_process(other_host)
    record = read_owner(other_host) | {"host": "another-node"}
    (other_host / OWNER_FILE).write_text(json.dumps(record))
    claim(reused_pid)  # our pid, but a start time that is not ours: the pid was reused, the owner is gone
    record = read_owner(reused_pid) | {"start_time": read_owner(reused_pid)["start_time"] - 1000}
    (reused_pid / OWNER_FILE).write_text(json.dumps(record))
    _claimed_by_dead_process(unmatched)
    assert owner_alive(dead) is False and owner_alive(reused_pid) is False
    assert owner_alive(other_host) is None and owner_alive(unknown) is None
    removed = sweep(tmp_path, [".*.partial-*", ".*.old-*"])
    assert sorted(removed) == sorted([dead, reused_pid])
    assert all(p.exists() for p in (alive, unknown, other_host, unmatched))
    assert sweep(tmp_path / "missing", ["*"]) == []


def _backdate(folder, seconds: float = 3600) -> None:
    import time

    os.utime(folder, (time.time() - seconds, time.time() - seconds))


def test_unowned_leftover_is_swept_only_once_untouched_for_the_grace(tmp_path):
    from wideml.runtime.ownership import abandoned

    fresh, old = tmp_path / ".a.partial-1", tmp_path / "m.wideml-work"
    for folder in (fresh, old):  # just written, unowned / a checkpoint folder released after an interrupt
        folder.mkdir()
        (folder / "pass-1").mkdir()
    _backdate(old)
    assert not abandoned(fresh) and abandoned(old)
    assert sweep(tmp_path, [".*.partial-*", "*.wideml-work"], keep=[]) == [old] and fresh.is_dir()
    _backdate(fresh)
    assert sweep(tmp_path, [".*.partial-*"], keep=[fresh]) == [] and fresh.is_dir()  # keep= wins


def test_a_folder_killed_before_or_during_its_claim_is_abandoned_at_once(tmp_path):
    from wideml.runtime.ownership import abandoned, remove_abandoned

    empty, half, live = tmp_path / ".a.partial-1", tmp_path / ".b.partial-2", tmp_path / ".c.partial-3"
    empty.mkdir(), half.mkdir(), live.mkdir()
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (half / f"{OWNER_FILE}.{int(proc.stdout)}.tmp").write_text("{")  # a dead process's half-written owner file
    (live / f"{OWNER_FILE}.{os.getpid()}.tmp").write_text("{")  # this process, claiming right now
    assert abandoned(empty) and abandoned(half) and not abandoned(live)
    assert remove_abandoned(empty) and remove_abandoned(half) and not remove_abandoned(live)
    claim(empty)  # a live run whose folder was removed between its mkdir and its claim: the claim makes it again
    assert owner_alive(empty) is True


def test_owner_of_another_boot_is_gone_and_of_another_pid_namespace_is_unknown(tmp_path):
    rebooted, container = tmp_path / ".a.partial-1", tmp_path / ".b.partial-2"
    for folder, key, value in ((rebooted, "boot_id", "another-boot"), (container, "pid_ns", "pid:[1]")):
        claim(folder)  # this very process, alive: only the recorded boot / namespace differs
        (folder / OWNER_FILE).write_text(json.dumps(read_owner(folder) | {key: value}))
    assert owner_alive(rebooted) is False  # every process of an earlier boot is gone
    assert owner_alive(container) is None  # its pid cannot be looked up from here: kept
    assert sweep(tmp_path, [".*.partial-*"]) == [rebooted] and container.is_dir()


def test_a_commands_start_sweeps_dead_checkpoint_folders_beside_its_output_but_fit_keeps_its_own(tmp_path, adv_stores):
    from adversarial.harness import run_cli

    train, _ = adv_stores
    dead_work, own_work, alive = tmp_path / "old.wideml-work", tmp_path / "m.wideml-work", tmp_path / ".x.partial-1"
    _claimed_by_dead_process(dead_work)
    _claimed_by_dead_process(own_work)
    claim(alive)  # this test process: alive
    proc = run_cli("fit", "lol", train, "-o", tmp_path / "m", "--workdir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("wideml: removed")]
    assert str(dead_work) in line and str(own_work) not in line and "removed 1 leftover" in line
    assert not dead_work.exists() and alive.is_dir() and (tmp_path / "m").is_dir()
    release(alive)


def test_clean_removes_abandoned_leftovers_lists_them_and_keeps_live_ones(tmp_path):
    from adversarial.harness import assert_refused, run_cli

    wd = tmp_path / "wd"
    dead, alive, work, released = tmp_path / ".s.zarr.partial-1", tmp_path / ".t.zarr.partial-2", wd / "wideml-fit-x", tmp_path / "m.wideml-work"
    _claimed_by_dead_process(dead)
    _claimed_by_dead_process(work)
    released.mkdir()
    _backdate(released)
    code = "import sys, time; from wideml.runtime.ownership import claim; claim(sys.argv[1]); print('ok', flush=True); time.sleep(60)"
    owner = subprocess.Popen([sys.executable, "-c", code, str(alive)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ok"
        dry = run_cli("clean", tmp_path, "--workdir", wd, "--dry-run")
        assert dry.returncode == 0 and "would remove 3 leftovers" in dry.stdout and dead.exists(), dry.stdout
        proc = run_cli("clean", tmp_path, "--workdir", wd)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert sorted(ln.split()[1] for ln in lines if ln.startswith("removed /")) == sorted(map(str, (dead, released, work)))
        assert any(ln.startswith(f"kept {alive}") for ln in lines) and lines[-1].startswith("removed 3 leftovers")
        assert not dead.exists() and not work.exists() and not released.exists() and alive.is_dir()
    finally:
        owner.kill()
        owner.wait()
    from wideml.runtime.ownership import abandoned

    assert abandoned(alive)  # its owner is gone now: the next clean would remove it
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
        assert sweep(wd, ["wideml-fit-*"]) == [first]  # the dead worker's folder goes, the live rerun's stays
        assert second.is_dir()
        future.cancel()
    finally:
        cluster.close()
