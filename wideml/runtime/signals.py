"""SIGINT and SIGTERM: stop, clean up, exit 130 / 143 with one line.

:func:`interrupts_raise` installs handlers that raise :class:`Interrupted` in
the main thread (a :class:`KeyboardInterrupt`, so every ``except BaseException``
clean-up on the way out runs). The first signal also silences the libraries'
logging, so an interrupted dask or distributed computation prints no traceback
wall; further signals during the clean-up are ignored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

#: Exit status of a run stopped by each signal (128 + signal number, as shells report it).
EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when SIGINT or SIGTERM arrives; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS.get(self.signum, 128 + int(self.signum))


class _State:
    received: int | None = None
    real_stderr: int | None = None  # a copy of file descriptor 2 made before it was silenced


def _silence() -> None:
    """Send library logging and the stderr file descriptor to /dev/null; keep a copy of the real stderr."""
    for name in ("distributed", "asyncio", "tornado", "dask", "zarr", "bokeh"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    threading.excepthook = lambda args: None
    try:
        sys.stderr.flush()
        _State.real_stderr = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        _State.real_stderr = None


def _handler(signum, frame) -> None:
    if _State.received is not None:
        return  # already cleaning up: let it finish
    _State.received = signum
    _silence()
    raise Interrupted(signum)


def signal_received() -> int | None:
    """The signal that interrupted this run, if one did."""
    return _State.received


def stderr_is_terminal() -> bool:
    """Whether the real stderr (before any silencing) is a terminal."""
    fd = _State.real_stderr if _State.real_stderr is not None else 2
    try:
        return os.isatty(fd)
    except OSError:
        return False


def say(line: str, after_progress: bool = False) -> None:
    """Print ``line`` on the real stderr (even after :func:`_silence` redirected file descriptor 2).

    ``after_progress``: a progress bar may have left the cursor mid-line, so start on a new line.
    """
    line = ("\n" if after_progress else "") + line
    data = (line.rstrip("\n") + "\n").encode("utf-8", "replace")
    if _State.real_stderr is not None:
        os.write(_State.real_stderr, data)
    else:
        sys.stderr.write(line.rstrip("\n") + "\n")
        sys.stderr.flush()


@contextlib.contextmanager
def interrupts_raise(then_ignore: bool = False) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` (main thread only; elsewhere a no-op).

    Parameters
    ----------
    then_ignore : bool, default False
        For a process that exits once the block ends (the CLI): after a block
        that ended normally (its outputs are complete or refused), SIGINT and
        SIGTERM are ignored instead of the previous handlers coming back, so a
        late signal cannot turn the exit into a kill by the default handler.
        (``SIG_IGN`` is kept through interpreter shutdown, where Python puts
        its own handlers back to the default.) Without it the previous
        handlers come back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in EXIT_STATUS}
    _State.received = None
    for sig in EXIT_STATUS:
        signal.signal(sig, _handler)
    finished = False
    try:
        yield
        finished = True
    finally:
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_IGN if finished and then_ignore else (old if old is not None else signal.SIG_DFL))
