"""What a command stopped by SIGINT or SIGTERM says, and its exit status: shared by the console script and the command line.

Standard library only: :mod:`wideml.cli.entry` imports this before anything
heavy loads, and :mod:`wideml.cli.main` prints the same line once the command
runs. (:mod:`wideml.runtime.signals` keeps the same exit statuses for the
library's own handlers: the console script cannot import the runtime package,
which loads dask, before its handlers are installed.)
"""

from __future__ import annotations

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


__all__ = ["EXIT_STATUS", "interrupted_line"]
