"""Owner files: a leftover is removed only when its owner process is known to be gone."""

from __future__ import annotations

import json
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
