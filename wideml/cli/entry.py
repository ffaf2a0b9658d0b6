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

import signal
import sys

from wideml.cli.interrupts import install_early_handlers, say_and_exit


def run() -> None:
    """Run the ``wideml`` command line (``sys.argv``) and exit with its status.

    SIGINT and SIGTERM are handled before the command line's modules are
    imported: the one line and exit status 130 / 143, never a traceback.
    """
    install_early_handlers()
    try:
        from wideml.cli.main import main

        status = main()
    except KeyboardInterrupt as exc:  # a KeyboardInterrupt raised outside the handlers above (e.g. by a library)
        say_and_exit(int(getattr(exc, "signum", signal.SIGINT)))
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()
