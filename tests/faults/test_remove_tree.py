"""Removing an owned folder: the owner file goes last, and a signal arriving half way cannot leave an ownerless folder.

A run interrupted while it removed its partial output or work folder used to
leave the folder without its owner file (the file went first): no later run
could tell whose it was, so ``wideml clean`` kept it for ever.
"""

import os
import shutil

import pytest

from wideml.runtime import ownership, removal
from wideml.runtime.ownership import OWNER_FILE, claim
from wideml.runtime.removal import remove_tree


def _owned_folder(tmp_path):
    folder = tmp_path / ".out.wideml-partial-0123456789ab"
    claim(folder, "partial")
    (folder / "X" / "c" / "0").mkdir(parents=True)
    for i in range(5):
        (folder / "X" / "c" / "0" / str(i)).write_bytes(b"x")
    (folder / "zarr.json").write_text("{}")
    return folder


def test_the_owner_file_goes_last(tmp_path, monkeypatch):
    folder = _owned_folder(tmp_path)
    order = []
    real_unlink, real_rmtree = os.unlink, shutil.rmtree
    monkeypatch.setattr(os, "unlink", lambda p, *a, **k: (order.append(os.path.basename(p)), real_unlink(p, *a, **k))[1])
    monkeypatch.setattr(shutil, "rmtree", lambda p, *a, **k: (order.append(os.path.basename(p)), real_rmtree(p, *a, **k))[1])
    remove_tree(folder)
    assert not folder.exists()
    assert set(order) >= {"zarr.json", "X", OWNER_FILE}
    assert order[-1] == OWNER_FILE  # after everything else


@pytest.mark.parametrize("signal_exc", [KeyboardInterrupt, SystemExit])
def test_a_signal_half_way_still_removes_everything(tmp_path, monkeypatch, signal_exc):
    folder = _owned_folder(tmp_path)
    real_rmtree = shutil.rmtree
    calls = []

    def interrupted(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 1:
            real_rmtree(os.path.join(path, "c", "0"), *args, **kwargs)  # part of the folder is gone when the signal arrives
            raise signal_exc()
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", interrupted)
    with pytest.raises(signal_exc):
        remove_tree(folder)
    assert not folder.exists()  # finished, then the signal went on stopping the run


def test_a_removal_cut_short_keeps_the_owner_record(tmp_path, monkeypatch):
    """SIGKILL half way (simulated: the process dies when it comes to the owner file): the folder still names its owner."""
    folder = _owned_folder(tmp_path)

    class Killed(BaseException):
        pass

    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        if os.path.basename(path) == OWNER_FILE:
            raise Killed()
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(Killed):
        removal._remove_tree_once(folder)
    assert sorted(os.listdir(folder)) == [OWNER_FILE] and ownership.read_owner(folder) is not None
