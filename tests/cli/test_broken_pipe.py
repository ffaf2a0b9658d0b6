"""A reader that goes away (`wideml info s.zarr | head -3`) stops the command quietly: status 141, no traceback (issue 22).

Each command runs in a fresh interpreter whose stdout is a pipe whose read end
is already closed, so its first write to stdout fails the way `head` closing
early makes it fail, every time. Python's docs on SIGPIPE recommend pointing the
closed stream at devnull and exiting: no traceback and no "Exception ignored"
line at interpreter exit; the status is 128 + SIGPIPE, what a Unix tool killed
by SIGPIPE reports.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from oracles import store_and_model
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("broken_pipe")
    store_and_model(folder)
    return folder


def _run_with_closed_stdout(*args, cwd) -> subprocess.CompletedProcess:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes anything
    env = dict(os.environ, PYTHONWARNINGS="ignore::DeprecationWarning")
    try:
        return subprocess.run([sys.executable, "-m", "wideml.cli.main", *map(str, args)], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, timeout=300)
    finally:
        os.close(write_end)


COMMANDS = {
    "info": lambda f: ["info", f / "s.zarr"],
    "info --json": lambda f: ["info", "--json", f / "s.zarr"],
    "simulate --list": lambda f: ["simulate", "--list"],
    "predict to stdout": lambda f: ["predict", f / "m.zarr", f / "s.zarr", "--no-progress"],
    "clean --dry-run": lambda f: ["clean", "--dry-run", f, "--no-progress"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_closed_stdout_exits_quietly(files, name):
    proc = _run_with_closed_stdout(*COMMANDS[name](files), cwd=files)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == EXIT_OUTPUT_CLOSED, proc.stderr


def test_open_stdout_is_untouched(files):
    """The same commands with a reader exit 0 and print their output."""
    env = dict(os.environ, PYTHONWARNINGS="ignore::DeprecationWarning")
    proc = subprocess.run([sys.executable, "-m", "wideml.cli.main", "info", files / "s.zarr"], capture_output=True,
                          text=True, cwd=files, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "40 samples x 80 features" in proc.stdout


def test_cv_into_a_closed_pipe_keeps_no_checkpoint(files, tmp_path):
    """`wideml cv ... | head -1` (user-world round): the work was done, so no wideml-cv-* checkpoint folder may stay."""
    workdir = tmp_path / "wd"
    workdir.mkdir()
    proc = _run_with_closed_stdout("cv", files / "s.zarr", "--methods", "lol", "--folds", 2, "--max-dim", 2,
                                   "--workdir", workdir, "--no-progress", cwd=tmp_path)
    assert proc.returncode == EXIT_OUTPUT_CLOSED and "Traceback" not in proc.stderr, proc.stderr
    assert list(workdir.iterdir()) == []


def test_a_long_command_line_is_cut_with_an_ellipsis():
    from wideml.runtime.ownership import describe_owner

    phrase = describe_owner({"pid": 1, "host": "h", "start_time": 0.0, "argv": ["wideml", "fit", "x" * 300, "-o", "dupS.zarr"]})
    assert phrase.endswith("…") and len(phrase) < 260
