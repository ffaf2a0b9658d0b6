"""Start the wideml CLI as a real subprocess, wait until its first pass runs, and signal it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

_BAR = re.compile(r"\d+% Completed \| ")


def start_cli(*args, log: Path, progress: bool = True, env: dict | None = None) -> subprocess.Popen:
    """``wideml ARGS`` in a fresh interpreter; stderr goes to ``log`` (a file, so it can be polled)."""
    cmd = [sys.executable, "-m", "wideml.cli.main", *map(str, args), "--progress" if progress else "--no-progress"]
    full_env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning", **(env or {})}
    with open(log, "wb") as err:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=full_env)


def wait_until(predicate, proc: subprocess.Popen, timeout: float = 60.0, what: str = "the first pass",
               may_finish: bool = False) -> bool:
    """Poll ``predicate()`` every 20 ms; fail if the process ends first (unless ``may_finish``: then return False)
    or ``timeout`` passes. Returns True once the predicate holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc.poll() is not None:
            if may_finish and proc.returncode == 0:
                return False
            raise AssertionError(f"wideml ended (status {proc.returncode}) before {what} started")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"{what} did not start within {timeout} s")


def pass_started(log: Path):
    """A predicate: stderr shows a pass's label and its progress bar has started."""
    return lambda: "% Completed" in log.read_text(errors="replace")


def partial_has_chunks(folder: Path, name: str):
    """A predicate: the hidden ``.NAME.partial-*`` folder beside the output holds some chunk files of X."""
    def check() -> bool:
        for aside in folder.glob(f".{name}.wideml-partial-*"):
            chunks = aside / name / "X" / "c"
            if chunks.is_dir() and any(chunks.iterdir()):
                return True
        return False
    return check


def signal_and_wait(proc: subprocess.Popen, sig: int, timeout: float = 120.0, log: Path | None = None) -> int | tuple[int, str]:
    """Send ``sig`` and wait; with ``log``, also return what the process wrote on stderr after the signal."""
    before = log.stat().st_size if log is not None else 0
    proc.send_signal(sig)
    proc.communicate(timeout=timeout)
    if log is None:
        return proc.returncode
    return proc.returncode, log.read_bytes()[before:].decode(errors="replace")


def non_progress_lines(stderr: str) -> list[str]:
    """stderr without pass labels and progress-bar frames: what a user reads as messages."""
    out = []
    for line in stderr.splitlines():
        if line.startswith("[wideml] "):
            continue
        out += [seg for seg in line.split("\r") if seg.strip() and not _BAR.search(seg)]
    return out


def leftovers(*folders: Path) -> list[Path]:
    """Hidden ``.partial-*``/``.old-*`` outputs and ``wideml-fit-*`` work folders directly in ``folders``."""
    found = []
    for folder in folders:
        if folder.is_dir():
            found += [p for p in folder.iterdir()
                      if ".wideml-partial-" in p.name or ".wideml-old-" in p.name or p.name.startswith("wideml-fit-")]
    return sorted(found)


def expected_status(sig: int) -> int:
    return {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}[sig]


_PERCENT = re.compile(r"(\d+)% Completed")


def progress_at_least(log: Path, percent: int, label: str = ""):
    """A predicate: the progress bar (of the pass whose label contains ``label``) shows at least ``percent``%."""
    def check() -> bool:
        text = log.read_text(errors="replace")
        if label:
            at = text.rfind(label)
            if at < 0:
                return False
            text = text[at:]
        found = _PERCENT.findall(text)
        return bool(found) and int(found[-1]) >= percent
    return check


def label_seen(log: Path, label: str):
    """A predicate: a pass labelled ``label`` has started."""
    return lambda: label in log.read_text(errors="replace")


def chunk_files(folder: Path, name: str) -> int:
    """How many chunk files of X the hidden ``.NAME.partial-*`` folders beside ``folder/NAME`` hold."""
    count = 0
    for aside in folder.glob(f".{name}.wideml-partial-*"):
        chunks = aside / name / "X" / "c"
        if chunks.is_dir():
            count += sum(1 for p in chunks.rglob("*") if p.is_file())
    return count


def partial_appears(folder: Path, name: str):
    """A predicate: the output's hidden ``.NAME.partial-*`` folder exists (its final write has begun)."""
    return lambda: any(folder.glob(f".{name}.wideml-partial-*"))


def resume_stores(folder: Path, seed: int, n: int = 60, p: int = 2000, width: int = 100):
    """A float64 3-class training store (n x p, feature chunks of ``width``) and a 30-sample test store.

    Returns ``(train_path, test_path, X, y)``; the resume tests fit on it, kill, rerun and compare.
    """
    import numpy as np

    from wideml import write_store

    rng = np.random.default_rng(seed)
    means = rng.standard_normal((3, p)) * 0.5
    y = np.repeat([0, 1, 2], n // 3)
    X = means[y] + rng.standard_normal((n, p))
    yt = np.repeat([0, 1, 2], 10)
    Xt = means[yt] + rng.standard_normal((30, p))
    write_store(folder / "train.zarr", X, y, feature_chunk=width)
    write_store(folder / "test.zarr", Xt, yt, feature_chunk=width)
    return folder / "train.zarr", folder / "test.zarr", X, y
