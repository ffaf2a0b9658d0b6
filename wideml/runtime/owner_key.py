"""The user's owner key: signs wideml's owner records, so a record written by anything else proves nothing.

A wideml owner record (:mod:`wideml.runtime.ownership`) lets wideml remove a
leftover folder. Anyone who can write into a folder could write such a record
by hand; a signature with a key only this user can read (HMAC-SHA256, the key
made on first use, mode 0600, in ``$XDG_STATE_HOME/wideml/owner.key``, by
default ``~/.local/state/wideml/owner.key``; config-free on purpose) makes a
forged or edited record count as none. Processes that share the home folder
(dask workers on this host or a shared filesystem) share the key; a worker
with another home signs with another key, and its folders are then kept,
never removed, by a client that cannot check them.

Without a usable key (no writable home) nothing is signed, and nothing is
removed automatically: wideml then keeps every leftover, and says so through
``wideml clean``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets


def key_path() -> str:
    """Where the owner key lives."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "wideml", "owner.key")


@functools.lru_cache(maxsize=4)
def _key_at(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            key = fh.read()
        return key if len(key) >= 32 else None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:  # first use: make the key, never replacing one another process made meanwhile
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    except FileExistsError:
        pass
    except OSError:
        return None
    _key_at.cache_clear()
    try:
        with open(path, "rb") as fh:
            key = fh.read()
    except OSError:
        return None
    return key if len(key) >= 32 else None


def owner_key() -> bytes | None:
    """This user's owner key (made on first use), or None if none can be read or made."""
    return _key_at(key_path())


def _message(record: dict) -> bytes:
    body = {k: v for k, v in record.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()


def sign(record: dict) -> dict:
    """``record`` with its ``signature`` (none without a key)."""
    key = owner_key()
    body = {k: v for k, v in record.items() if k != "signature"}
    if key is None:
        return body
    return dict(body, signature=hmac.new(key, _message(body), hashlib.sha256).hexdigest())


def verify(record: dict) -> bool:
    """Whether ``record`` carries this user's signature over exactly its content."""
    key, signature = owner_key(), record.get("signature")
    if key is None or not isinstance(signature, str):
        return False
    return hmac.compare_digest(signature, hmac.new(key, _message(record), hashlib.sha256).hexdigest())
