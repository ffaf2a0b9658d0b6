"""The ``wideml`` console script's entry point: SIGINT/SIGTERM handled from the first moment.

Importing the command line (numpy, scipy, scikit-learn, dask) takes one to
three seconds. A Ctrl-C in that time used to print a KeyboardInterrupt
traceback. :func:`run` installs its handlers before anything heavy is imported
(this module imports only the standard library and
:mod:`wideml.cli.interrupts`, and ``wideml/__init__.py`` imports its public
names lazily), so a signal at any moment of the start-up prints the one line
``wideml: interrupted by SIGINT; ...`` and exits with 130 (143 for SIGTERM).
Nothing has been written before the command runs, so there is nothing to clean
up; once the command runs, :func:`wideml.cli.main.main` installs its own
handlers, which remove the run's partial outputs.
"""

from __future__ import annotations

import os
import signal
import sys

from wideml.cli.interrupts import EXIT_STATUS, interrupted_line


def _say_and_exit(signum: int) -> None:
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
    _say_and_exit(signum)


def run() -> None:
    """Run the ``wideml`` command line (``sys.argv``) and exit with its status.

    SIGINT and SIGTERM are handled before the command line's modules are
    imported: the one line and exit status 130 / 143, never a traceback.
    """
    for sig in EXIT_STATUS:
        try:
            signal.signal(sig, _early_handler)
        except (ValueError, OSError):  # not the main thread, or the signal cannot be caught here
            pass
    try:
        from wideml.cli.main import main

        status = main()
    except KeyboardInterrupt as exc:  # a KeyboardInterrupt raised outside the handlers above (e.g. by a library)
        _say_and_exit(int(getattr(exc, "signum", signal.SIGINT)))
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()
