"""Scheduler addresses (``tcp://HOST:PORT``, ``tls://HOST:PORT``, ``inproc://...``): checked before any connection.

A leaf of the runtime: both the config checks (:mod:`wideml.runtime.config`)
and the connection (:mod:`wideml.runtime.remote`) refuse a malformed address
with the same sentence.
"""

from __future__ import annotations

import re

from wideml.exceptions import ConfigError


_ADDRESS = re.compile(r"^(tcp|tls)://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d+)/?$")


def check_address(spec: str) -> None:
    """Refuse a scheduler address that is not ``tcp://HOST:PORT`` (or tls://, inproc://) with one sentence.

    Parameters
    ----------
    spec : str
        The address as the user wrote it.

    Raises
    ------
    ConfigError
        If the host or the port is missing or malformed.
    """
    if spec.startswith("inproc://"):
        return
    match = _ADDRESS.match(spec)
    if match is None:
        scheme, _, rest = spec.partition("://")
        hint = f"{scheme}://HOST:PORT, e.g. {scheme}://127.0.0.1:8786 ('dask scheduler' listens on port 8786 by default)"
        if rest and ":" not in rest.strip("[]"):
            raise ConfigError(f"scheduler address {spec!r} has no port; write it as {hint}.")
        raise ConfigError(f"scheduler address {spec!r} is not of the form {hint}.")
    if not 0 < int(match.group(3)) < 65536:
        raise ConfigError(f"scheduler address {spec!r} has port {match.group(3)}, outside 1-65535; check the address.")


__all__ = ["check_address"]
