"""Store locations given as URLs (``s3://``, ``gs://``, ``file://``, any fsspec protocol): parsing, backends, storage options.

A URL is never joined to the working folder: :func:`is_url` tells a URL from
a path before anything makes a path absolute, ``file://`` URLs become the
local path they name (:func:`local_path_of`), and every other URL is read
through fsspec (:mod:`wideml.storage.remote_store`).

Storage options (fsspec's keyword arguments of the filesystem, e.g.
``endpoint_url``, ``anon``, ``client_kwargs.region_name``) come from the
config key ``storage-options`` (a mapping; ``wideml --storage-option
KEY=VALUE``, a ``--config`` file, or the environment variable
``DASK_WIDEML__STORAGE_OPTIONS='{"endpoint_url": "http://..."}'``), overridden
by options given in Python. An ``s3://`` URL gets botocore's timeouts and
retries by default (:data:`S3_DEFAULTS`: connect 10 s, read 60 s, 3 attempts
per request), so an endpoint that accepts connections but never answers is one
sentence after about 3 minutes, not 7 or more; each can be set as a storage
option (``config_kwargs.read_timeout=5``, ``config_kwargs.retries.max_attempts=5``).
Credentials are never storage options: they come
from the environment or the provider's own chain (``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, instance roles;
``GOOGLE_APPLICATION_CREDENTIALS``), which each process (and each dask worker)
reads for itself, so no secret is ever part of a task graph.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from wideml.exceptions import ConfigError, StoreError
from wideml.runtime.config import config_value

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")

#: protocol -> the wideml extra that installs its fsspec backend.
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs"}

#: Storage-option names that carry a secret: refused, so that credentials never travel inside task graphs.
SECRET_OPTIONS = frozenset({
    "key", "secret", "token", "password", "session_token", "access_key", "secret_key", "aws_access_key_id",
    "aws_secret_access_key", "aws_session_token", "account_key", "sas_token", "client_secret", "connection_string",
    "credentials",
})


#: Storage options an s3:// URL gets unless given: botocore's timeouts (seconds) and attempts per request (the first
#: one included; its "standard" retries cover timeouts, throttling and 5xx answers).
S3_DEFAULTS = {"config_kwargs": {"connect_timeout": 10, "read_timeout": 60, "retries": {"max_attempts": 3, "mode": "standard"}}}

#: Tries per call that s3fs makes on top of botocore's attempts (s3fs's own default, 5, would multiply them:
#: 5 x 3 x 60 s for an endpoint that never answers); set on the filesystem wideml opens (it is not a storage option).
S3FS_TRIES = 1

#: protocol -> the storage options it gets by default (:data:`S3_DEFAULTS`).
DEFAULT_OPTIONS = {"s3": S3_DEFAULTS, "s3a": S3_DEFAULTS}


def is_url(value: Any) -> bool:
    """Whether ``value`` is a string of the form ``scheme://...`` (a scheme of two letters or more: not a drive letter)."""
    return isinstance(value, str) and _SCHEME.match(value.strip()) is not None


def protocol_of(url: str) -> str:
    """The lower-case scheme of ``url`` (``"s3"`` for ``s3://bucket/key``)."""
    match = _SCHEME.match(url.strip())
    if match is None:
        raise StoreError(f"{url!r} is not a URL (scheme://...); give a path or a URL such as s3://bucket/store.zarr.")
    return match.group(1).lower()


def local_path_of(url: str) -> str | None:
    """The local path a ``file://`` (or ``local://``) URL names, else None."""
    if protocol_of(url) not in ("file", "local"):
        return None
    parts = urlsplit(url.strip())
    if parts.netloc not in ("", "localhost"):
        raise StoreError(f"{url!r} names a file on host {parts.netloc!r}; a file:// URL must name a local path "
                         "(file:///absolute/path).")
    return unquote(parts.path) or "/"


def local_output(path: Any) -> Any:
    """An output or work folder as a local path: a ``file://`` URL becomes the path it names, other URLs are refused.

    Anything that is not a URL is returned as it is (so a local folder named ``s3:`` stays a relative path,
    but ``s3://...`` is never joined to the working folder).

    Raises
    ------
    StoreError
        For a URL of an object store (writing there is not supported yet) or a ``file://`` URL naming another host.
    """
    if not is_url(path):
        return path
    local = local_path_of(path)
    if local is None:
        raise StoreError(f"writing to object stores is not supported yet ({path} is a URL); write locally and copy.")
    return local


def require_backend(url: str) -> None:
    """Refuse, in one sentence, a URL whose fsspec backend is not installed or whose protocol fsspec does not know.

    Raises
    ------
    StoreError
        Naming the extra to install (``pip install 'wideml[s3]'``), or the unknown protocol.
    """
    protocol = protocol_of(url)
    import fsspec

    try:
        fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        extra = EXTRAS.get(protocol)
        fix = f"pip install 'wideml[{extra}]'" if extra else f"install the fsspec backend for {protocol}:// ({exc})"
        raise StoreError(f"reading {url} needs the {protocol}:// backend, which is not installed; {fix}.") from None
    except ValueError:
        raise StoreError(f"{url!r} uses the protocol {protocol}://, which fsspec does not know; check the URL "
                         "(s3://, gs://, file://, ... or a local path).") from None


def _scalar(text: str) -> Any:
    """A --storage-option value: true/false, an integer, a number, else the text itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_storage_option(text: str) -> tuple[str, Any]:
    """``"KEY=VALUE"`` -> ``(KEY, value)``; a dotted key (``client_kwargs.region_name``) names a nested option.

    Raises
    ------
    ConfigError
        If there is no ``=`` or no key.
    """
    key, eq, value = str(text).partition("=")
    if not eq or not key.strip():
        raise ConfigError(f"--storage-option {text!r} is not KEY=VALUE; write e.g. --storage-option endpoint_url=http://127.0.0.1:9000.")
    return key.strip(), _scalar(value)


def nest(pairs: list[tuple[str, Any]]) -> dict:
    """Options from ``(dotted key, value)`` pairs, later pairs winning: ``a.b=1`` -> ``{"a": {"b": 1}}``."""
    out: dict = {}
    for key, value in pairs:
        *parents, last = key.split(".")
        node = out
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"storage option {key!r} nests inside {part!r}, which already has a value; give one of them.")
            node = child
        node[last] = value
    return out


def check_storage_options(value: Any, where: str = "storage-options") -> None:
    """Refuse options that are not a mapping of names, or that carry a credential (one sentence naming the fix).

    Raises
    ------
    ConfigError
    """
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a mapping of fsspec storage options (e.g. {{endpoint_url: 'http://...'}}), got {value!r}.")
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where} has the option name {key!r}, which is not a name; write names such as endpoint_url.")
        if key.lower() in SECRET_OPTIONS:
            raise ConfigError(
                f"{where} gives the credential {key!r}, which would travel inside every task graph; set it in the environment "
                "instead (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or AWS_PROFILE for s3://, "
                "GOOGLE_APPLICATION_CREDENTIALS for gs://) and drop it from the storage options.")
        if isinstance(item, Mapping):
            check_storage_options(item, f"{where}.{key}")


def _merged(base: Mapping, over: Mapping) -> dict:
    """``base`` updated by ``over``, nested mappings merged key by key (``over`` wins)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value
    return out


def storage_options(given: Mapping | None = None, protocol: str | None = None) -> dict:
    """The storage options for a URL: the protocol's defaults, updated by the config's ``storage-options``, then by ``given``.

    Parameters
    ----------
    given : mapping, optional
        Options passed in Python (``open_store(url, storage_options=...)``).
    protocol : str, optional
        The URL's protocol; ``s3`` gets :data:`S3_DEFAULTS` under the options given.

    Returns
    -------
    dict
        Nested options merged key by key (``config_kwargs.read_timeout=5`` keeps the default connect timeout).
    """
    configured = config_value("storage-options") or {}
    check_storage_options(configured, "the config's storage-options")
    check_storage_options(given, "storage_options")
    return _merged(_merged(copy.deepcopy(DEFAULT_OPTIONS.get(protocol or "", {})), configured), given or {})


__all__ = ["DEFAULT_OPTIONS", "EXTRAS", "S3FS_TRIES", "S3_DEFAULTS", "SECRET_OPTIONS", "check_storage_options", "is_url", "local_output",
           "local_path_of", "nest", "parse_storage_option", "protocol_of", "require_backend", "storage_options"]
