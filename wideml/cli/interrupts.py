"""What a command stopped by SIGINT or SIGTERM says, and its exit status: shared by the console script and the command line.

Standard library only: :mod:`wideml.cli.entry` imports this before anything
heavy loads, and :mod:`wideml.cli.main` prints the same line once the command
runs. (:mod:`wideml.runtime.signals` keeps the same exit statuses for the
library's own handlers: the console script cannot import the runtime package,
which loads dask, before its handlers are installed.)
"""

from __future__ import annotations

import os
import signal

#: Exit status after each signal (128 + signal number, as shells report it).
EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}


def interrupted_line(signum: int) -> str:
    """The one line printed when ``signum`` stops the command.

    Parameters
    ----------
    signum : int
        The signal's number (``signal.SIGINT``, ``signal.SIGTERM``).

    Returns
    -------
    str
        ``wideml: interrupted by SIGINT; partial outputs and work folders of this run were removed.``
    """
    return (f"wideml: interrupted by {signal.Signals(signum).name}; "
            "partial outputs and work folders of this run were removed.")


def say_and_exit(signum: int) -> None:
    """Print :func:`interrupted_line` on file descriptor 2 and end the process at once (no interpreter shutdown)."""
    try:
        os.write(2, (interrupted_line(signum) + "\n").encode())
    except OSError:
        pass
    os._exit(EXIT_STATUS.get(signum, 128 + int(signum)))


def _early_handler(signum: int, frame: object) -> None:
    """SIGINT/SIGTERM before the command runs: nothing is written yet, so stop right away.

    Exiting from the handler (instead of raising KeyboardInterrupt) also
    stops an import that would swallow the exception in a bare ``except:``.
    """
    say_and_exit(signum)


def install_early_handlers() -> None:
    """Handle SIGINT and SIGTERM with :func:`say_and_exit` until the command installs its own handlers.

    Called first by the console script (:func:`wideml.cli.entry.run`) and by
    ``python -m wideml.cli.main``, before anything heavy is imported.
    """
    for sig in EXIT_STATUS:
        try:
            signal.signal(sig, _early_handler)
        except (ValueError, OSError):  # not the main thread, or the signal cannot be caught here
            pass


__all__ = ["EXIT_STATUS", "install_early_handlers", "interrupted_line", "say_and_exit"]
