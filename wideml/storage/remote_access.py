"""Access to a zarr v3 store on an object store: the picklable opener, byte reads, listings, and their errors.

:class:`RemoteLocation` is what a graph carries to find a remote store: a URL
and its storage options (never credentials: see :mod:`wideml.storage.urls`),
or a zarr Store object the user opened (FsspecStore, ObjectStore, any
``zarr.abc.store.Store``; it is pickled as it is, so credentials given to it
travel with it). Each process opens the store once (:meth:`RemoteLocation.store`).

Every failure of the object store becomes one :class:`StoreError` sentence
(:func:`remote_error`): credentials refused, endpoint unreachable, bucket or
object missing.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import Any

from wideml.exceptions import StoreError
from wideml.storage.obstore_reads import forget_obstore
from wideml.storage.urls import DEFAULT_OPTIONS, S3FS_TRIES, protocol_of

_stores: dict[tuple, Any] = {}
_lock = threading.Lock()

_DENIED = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "Forbidden", "403", "ExpiredToken",
           "InvalidToken", "Unauthorized", "401", "NoCredentials", "Unable to locate credentials")
_TIMEOUT = ("ReadTimeout", "Read timeout", "ConnectTimeout", "Connect timeout", "timed out", "TimeoutError")
_UNREACHABLE = ("Could not connect", "Cannot connect", "Connection refused", "EndpointConnectionError", "Name or service not known",
                "Temporary failure in name resolution", "timed out", "ConnectTimeout", "ClientConnectorError")


@dataclass(frozen=True, eq=False)
class RemoteLocation:
    """Where a remote store is: a URL with storage options, or a zarr Store object.

    Attributes
    ----------
    url : str
        The URL (``s3://bucket/s.zarr``), or for a Store object its description (``str(store)``).
    options : dict
        fsspec storage options (URL only; no credentials).
    store_object : zarr.abc.store.Store or None
        The Store the user gave, else None.
    """

    url: str
    options: dict = field(default_factory=dict)
    store_object: Any = None

    def key(self) -> tuple:
        return (self.url, repr(sorted(self.options.items())), id(self.store_object) if self.store_object is not None else None)

    def store(self):
        """The zarr Store (opened once per process for a URL; read-only)."""
        if self.store_object is not None:
            return self.store_object
        key = self.key()
        with _lock:
            found = _stores.get(key)
        if found is not None:
            return found
        from zarr.storage import FsspecStore

        try:
            opened = FsspecStore.from_url(self.url, storage_options=copy.deepcopy(dict(self.options)) or None, read_only=True)  # botocore edits them
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - fsspec's and the provider's many errors, in one sentence
            raise remote_error(exc, self.url, "open") from None
        fs = getattr(opened, "fs", None)
        if protocol_of(self.url) in DEFAULT_OPTIONS and isinstance(getattr(fs, "retries", None), int):
            fs.retries = S3FS_TRIES  # botocore retries (S3_DEFAULTS); s3fs's own retries would multiply them
        with _lock:
            _stores.setdefault(key, opened)
            return _stores[key]

    def __getstate__(self):
        return {"url": self.url, "options": self.options, "store_object": self.store_object}

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)


def forget_stores() -> None:
    """Drop the stores opened in this process (tests; or after the credentials in the environment changed)."""
    with _lock:
        _stores.clear()
    forget_obstore()


def remote_error(exc: BaseException, url: str, doing: str) -> StoreError:
    """One sentence for a failure of the object store while ``doing`` something with ``url``."""
    text = f"{type(exc).__name__}: {exc}"
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, PermissionError) or any(word in text for word in _DENIED):
        return StoreError(f"the object store refused access to {url} ({first}); check the credentials in the environment "
                          "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE for s3://) and the bucket's permissions.")
    if isinstance(exc, TimeoutError) or any(word in text for word in _TIMEOUT):
        return StoreError(f"cannot reach the object store holding {url}: it did not answer in time ({first}); check the endpoint "
                          "(storage option endpoint_url, or AWS_ENDPOINT_URL) and the network, or allow more time with the "
                          "storage options config_kwargs.read_timeout / config_kwargs.connect_timeout (seconds; default 60 / 10).")
    if isinstance(exc, ConnectionError) or any(word in text for word in _UNREACHABLE):
        return StoreError(f"cannot reach the object store holding {url} ({first}); check the endpoint (storage option "
                          "endpoint_url, or AWS_ENDPOINT_URL) and the network.")
    if isinstance(exc, FileNotFoundError) or "NoSuchBucket" in text:
        return StoreError(f"no feature store at {url} (the bucket or the object does not exist); check the URL.")
    return StoreError(f"cannot {doing} {url} on the object store ({type(exc).__name__}: {first}); check the URL, "
                      "the storage options and the credentials.")


def run(coro_fn, url: str, doing: str):
    """Run ``coro_fn()`` (an awaitable of the store) on zarr's event loop, object-store failures as one sentence."""
    from zarr.core.sync import sync

    try:
        return sync(coro_fn())
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise remote_error(exc, url, doing) from None


def get_bytes(location: RemoteLocation, key: str, suffix: int | None = None) -> bytes | None:
    """The bytes of ``key`` in the store (its last ``suffix`` bytes if given), or None when there is no such object."""
    from zarr.abc.store import SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype

    store = location.store()
    request = SuffixByteRequest(suffix) if suffix is not None else None

    async def get():
        buf = await store.get(key, prototype=default_buffer_prototype(), byte_range=request)
        return None if buf is None else buf.to_bytes()

    return run(get, location.url, f"read {key} of")


def get_many(location: RemoteLocation, keys: list[str]) -> list[bytes | None]:
    """The bytes of each of ``keys`` (None for a missing object), fetched concurrently on zarr's event loop."""
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    store = location.store()

    async def one(key):
        buf = await store.get(key, prototype=default_buffer_prototype())
        return None if buf is None else buf.to_bytes()

    async def gather():
        return await asyncio.gather(*(one(k) for k in keys))

    return run(gather, location.url, f"read {keys[0] if len(keys) == 1 else f'{len(keys)} chunks'} of")


def list_keys(location: RemoteLocation, prefix: str) -> set[str]:
    """Every key under ``prefix`` (one listing; an object store lists a prefix, not folder by folder)."""
    store = location.store()

    async def listing():
        return {key async for key in store.list_prefix(prefix)}

    return run(listing, location.url, f"list {prefix} of")


def exists(location: RemoteLocation, key: str) -> bool:
    """Whether the object ``key`` exists."""
    store = location.store()
    return bool(run(lambda: store.exists(key), location.url, f"look for {key} in"))


__all__ = ["RemoteLocation", "exists", "forget_stores", "get_bytes", "get_many", "list_keys", "remote_error", "run"]
