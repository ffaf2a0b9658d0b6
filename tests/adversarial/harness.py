"""Helpers of the adversarial suite: run the real CLI, judge its outcome, start a real cluster.

Every adversarial case ends in exactly one of two outcomes:

* the correct answer, checked against an in-memory oracle; or
* a clean refusal: exit status 2, one sentence on stderr starting ``wideml: error:``,
  no traceback, and nothing half-written beside the outputs.

``assert_refused`` checks the second; the cases check the first themselves.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd: str | os.PathLike | None = None, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``wideml ARGS --no-progress`` in a fresh interpreter (the way a user runs it) and capture its output."""
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "wideml.cli.main", *map(str, args)]
    if "--no-progress" not in cmd and args and str(args[0]) not in ("info",):
        cmd.append("--no-progress")
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env)


def error_lines(stderr: str) -> list[str]:
    """The ``wideml: error:`` lines of stderr."""
    return [line for line in stderr.splitlines() if line.startswith("wideml: error:")]


def assert_refused(proc: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, exactly one error sentence (containing every word in ``words``, case-insensitive), no traceback."""
    assert proc.returncode == 2, f"expected exit 2, got {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = error_lines(proc.stderr)
    assert len(errors) == 1, f"expected one error sentence, got: {proc.stderr!r}"
    message = errors[0].lower()
    for word in words:
        assert word.lower() in message, f"{word!r} not in the error: {errors[0]}"
    return errors[0]


def assert_api_refused(excinfo, *words: str) -> str:
    """A WidemlError from the API: one sentence (one line) containing every word."""
    from wideml.exceptions import WidemlError

    assert isinstance(excinfo.value, WidemlError), repr(excinfo.value)
    message = str(excinfo.value)
    assert "\n" not in message.strip(), message
    for word in words:
        assert word.lower() in message.lower(), f"{word!r} not in the error: {message}"
    return message


def debris(folder: str | os.PathLike) -> list[Path]:
    """Hidden partial/old outputs and wideml temporary folders left anywhere under ``folder``."""
    folder = Path(folder)
    marks = (".partial-", ".old-", ".wideml-partial-", ".wideml-old-")
    return sorted(p for p in folder.rglob("*") if any(mark in p.name for mark in marks))


def assert_no_debris(folder: str | os.PathLike) -> None:
    left = debris(folder)
    assert left == [], f"half-written outputs left behind: {left}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_free_port = free_port


def wait_for_cluster(address: str, n_workers: int, log: Path, what: str = "the test cluster", timeout: float = 90) -> None:
    """Wait until the scheduler at ``address`` has ``n_workers`` workers; on timeout, raise with the tail of ``log``."""
    from distributed import Client

    deadline = time.time() + timeout
    while True:
        try:
            with Client(address, timeout="5s") as client:
                client.wait_for_workers(n_workers, timeout=60)
            return
        except Exception:
            if time.time() > deadline:
                raise RuntimeError(f"{what} did not start: " + Path(log).read_text()[-2000:]) from None
            time.sleep(1)


def stop_processes(procs: list, timeout: float = 5) -> None:
    """Terminate subprocesses (last started first), killing those that do not stop within ``timeout`` seconds."""
    for proc in reversed(procs):
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
