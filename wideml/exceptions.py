"""Exceptions and warnings raised by wideml.

Every problem a user can fix (bad input, a missing store, a bad config) is a
:class:`WidemlError` whose message is one sentence naming the problem and the
fix. The command line prints that sentence and exits with status 2.
"""


class WidemlError(ValueError):
    """A problem with the user's input, stores, models or configuration."""


class StoreError(WidemlError):
    """A feature store or model store is missing, corrupt or of the wrong kind."""


class ConfigError(WidemlError):
    """A configuration file, key or value is unusable."""


class PerformanceWarning(UserWarning):
    """The requested work will run, but far slower than it could (e.g. a bad chunk layout)."""
