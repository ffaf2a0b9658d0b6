"""Ctrl-C (or SIGTERM) during the start-up of any `wideml` command: one line, 130 / 143, no traceback (issue 22).

Importing numpy, scipy, scikit-learn and dask takes the first one to three
seconds of every command. The console script's entry point
(``wideml.cli.entry:run``) imports only the standard library and installs its
signal handlers before anything heavy loads, so a signal at any moment prints
the one documented line and exits with 128 + the signal number.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import wideml.cli.main as cli_main

HEAVY = ("numpy", "scipy", "sklearn", "dask", "distributed", "zarr", "h5py", "yaml", "psutil")


def _console_script() -> str:
    exe = shutil.which("wideml", path=str(Path(sys.executable).parent))
    assert exe, "the wideml console script is not installed next to this interpreter (pip install -e .)"
    return exe


def _signal_after(command: list[str], delay: float, signum: int, cwd: Path) -> tuple[int, str]:
    """Start ``command``, send ``signum`` after ``delay`` seconds, return its status and stderr."""
    env = dict(os.environ, PYTHONWARNINGS="ignore::DeprecationWarning")
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    time.sleep(delay)
    assert proc.poll() is None, "the command ended before the signal: start-up was not interrupted"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def _long_command(folder: Path) -> list[str]:
    """A command whose start-up and run both outlast the signal (a large simulated store)."""
    return ["simulate", "trunk", "--n-samples", "1000", "--n-features", "200000", "-o", str(folder / "s.zarr"),
            "--no-progress"]


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.5])
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_console_script_interrupted_at_start_up(tmp_path, delay, signum, status):
    code, err = _signal_after([_console_script(), *_long_command(tmp_path)], delay, signum, tmp_path)
    assert code == status, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) <= 1, err
    assert lines and lines[0].startswith(f"wideml: interrupted by {signal.Signals(signum).name}; "), err
    assert not (tmp_path / "s.zarr").exists()


def test_entry_point_imports_nothing_heavy():
    code = ("import sys, wideml.cli.entry; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_console_script_points_at_the_entry_module():
    text = Path(_console_script()).read_text()
    assert "from wideml.cli.entry import run" in text, text


def test_module_main_interrupted_while_importing(tmp_path):
    """``python -m wideml.cli.main`` (used by the tests): a Ctrl-C while main() imports its command modules.

    The signal is sent once the module says its early handlers are in place (a mark file), not after a fixed
    delay: on a loaded machine the interpreter itself may still be starting after 0.8 s, before any wideml
    code can handle a signal.
    """
    mark = tmp_path / "started"
    env = dict(os.environ, PYTHONWARNINGS="ignore::DeprecationWarning", WIDEML_TEST_STARTED_MARK=str(mark))
    proc = subprocess.Popen([sys.executable, "-m", "wideml.cli.main", *_long_command(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    deadline = time.monotonic() + 120
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert mark.exists(), "the module never said its handlers were in place"
    assert proc.poll() is None, "the command ended before the signal: start-up was not interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    code = proc.returncode
    assert code == 130, err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_main_handles_keyboard_interrupt_in_lazy_imports(monkeypatch, capsys):
    def interrupted_import(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main.importlib, "import_module", interrupted_import)
    try:
        status = cli_main.main(["info", "nowhere.zarr"])
    except KeyboardInterrupt:
        pytest.fail("a KeyboardInterrupt while main() imported its command modules escaped main()")
    assert status == 130
    err = capsys.readouterr().err
    assert err.startswith("wideml: interrupted by SIGINT; "), err
    assert len(err.strip().splitlines()) == 1, err
