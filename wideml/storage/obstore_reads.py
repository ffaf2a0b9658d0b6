"""Which client fetches the chunk objects of a remote store (obstore or fsspec), and obstore's fetches.

The raw chunk reader of an ``s3://`` store
(:class:`wideml.storage.remote_reader.RemoteZarrReader`) fetches each chunk
object with one GET. The config key ``remote-reader`` says through what:

- ``fsspec``: zarr's FsspecStore over s3fs (one event loop thread per process);
- ``obstore``: obstore's Rust client (its own thread pool; the dask thread waits
  for its GET without holding the GIL), refused in one sentence when obstore is
  not installed, the URL is not ``s3://``, or a storage option has no obstore
  equivalent;
- ``auto`` (the default): obstore when it is installed and applies, fsspec otherwise.

Everything else (metadata, listings, layouts zarr reads, writes) stays on fsspec.
The fsspec storage options are mapped to obstore's (:func:`obstore_settings`):
``endpoint_url`` (``http://`` allowed), ``anon``, ``client_kwargs.region_name``,
``config_kwargs.connect_timeout`` / ``read_timeout`` (for obstore the whole
request's time) and ``config_kwargs.retries.max_attempts`` (retries after the first request, as botocore counts them). Credentials come from
the environment only, read by obstore itself in each process. ``auto`` uses
obstore only where its answer is sure to match s3fs's: credentials in
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (or ``anon``), and a known
region or an endpoint; a profile, an instance role or a bucket whose region s3fs
would look up keeps fsspec. The choice is made in each process, so a worker
without obstore reads through fsspec under ``auto``.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

from wideml.exceptions import ConfigError, StoreError
from wideml.storage.urls import protocol_of

#: Values of the config key ``remote-reader``.
BACKENDS = ("auto", "obstore", "fsspec")

_opened: dict[tuple, Any] = {}
_lock = threading.Lock()


def obstore_settings(url: str, options: dict) -> dict:
    """obstore's ``S3Store`` keyword arguments for an ``s3://`` URL and its fsspec storage options.

    Raises
    ------
    ValueError
        Naming the first option obstore has no equivalent for.
    """
    rest = {k: v for k, v in options.items()}
    client = rest.pop("client_kwargs", None) or {}
    conf = rest.pop("config_kwargs", None) or {}
    out: dict = {"config": {}, "client_options": {}}
    endpoint = rest.pop("endpoint_url", None) or client.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        out["config"]["endpoint"] = str(endpoint)
        if str(endpoint).startswith("http://"):
            out["client_options"]["allow_http"] = True
    if rest.pop("anon", False):
        out["config"]["skip_signature"] = True
    region = client.get("region_name") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        out["config"]["region"] = str(region)
    retries = dict(conf.get("retries") or {})
    if "total_max_attempts" in retries:  # botocore's name once it has read the options: the first request included
        out["retry_config"] = {"max_retries": max(int(retries.pop("total_max_attempts")) - 1, 0)}
        retries.pop("max_attempts", None)
    elif "max_attempts" in retries:  # botocore: retries after the first request
        out["retry_config"] = {"max_retries": max(int(retries.pop("max_attempts")), 0)}
    retries.pop("mode", None)
    for name, key in (("connect_timeout", "connect_timeout"), ("read_timeout", "timeout")):
        if conf.get(name) is not None:
            out["client_options"][key] = f"{float(conf[name]):g}s"
    left = [f"client_kwargs.{k}" for k in client if k not in ("region_name", "endpoint_url")]
    left += [f"config_kwargs.{k}" for k in conf if k not in ("connect_timeout", "read_timeout", "retries")]
    left += [f"config_kwargs.retries.{k}" for k in retries] + sorted(rest)
    if left:
        raise ValueError(left[0])
    return out


def _auto_applies(url: str, settings: dict) -> bool:
    """Whether obstore's answer is sure to match s3fs's: credentials from the environment's keys (or anonymous), region known."""
    conf = settings["config"]
    keys = bool(os.environ.get("AWS_ACCESS_KEY_ID")) and bool(os.environ.get("AWS_SECRET_ACCESS_KEY"))
    return (keys or conf.get("skip_signature", False)) and ("region" in conf or "endpoint" in conf)


def _obstore_store(location, settings: dict):
    """obstore's S3Store for the location's bucket and prefix (opened once per process)."""
    key = location.key()
    with _lock:
        found = _opened.get(key)
    if found is not None:
        return found
    from obstore.store import S3Store

    rest = location.url.split("://", 1)[1]
    bucket, _, prefix = rest.partition("/")
    try:
        store = S3Store(bucket, prefix=prefix.strip("/") or None, **settings)
    except Exception as exc:  # noqa: BLE001 - obstore's configuration errors, in one sentence
        raise StoreError(f"cannot open {location.url} with obstore ({type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}); "
                         "check the storage options, or set remote-reader: fsspec.") from None
    with _lock:
        _opened.setdefault(key, store)
        return _opened[key]


def resolve_backend(location, choice: str) -> str:
    """``"obstore"`` or ``"fsspec"``: what fetches the chunk objects of ``location`` in this process under ``choice``.

    Raises
    ------
    ConfigError
        For ``choice="obstore"`` where obstore cannot read the store (one sentence naming the fix).
    """
    if choice not in BACKENDS:
        raise ConfigError(f"remote-reader must be one of {', '.join(BACKENDS)}, got {choice!r}.")
    if choice == "fsspec":
        return "fsspec"
    explicit = choice == "obstore"
    if location.store_object is not None or protocol_of(location.url) not in ("s3", "s3a"):
        if explicit:
            raise ConfigError(f"remote-reader obstore reads s3:// URLs only, not {location.url}; set remote-reader: auto or fsspec.")
        return "fsspec"
    try:
        import obstore  # noqa: F401
    except ImportError:
        if explicit:
            raise ConfigError("remote-reader is obstore but obstore is not installed; pip install 'wideml[s3]' "
                              "(or pip install obstore), or set remote-reader: auto.") from None
        return "fsspec"
    try:
        settings = obstore_settings(location.url, dict(location.options))
    except (ValueError, TypeError) as exc:
        if explicit:
            raise ConfigError(f"the storage option {exc} has no obstore equivalent; drop it, or set remote-reader: fsspec.") from None
        return "fsspec"
    return "obstore" if explicit or _auto_applies(location.url, settings) else "fsspec"


def obstore_fetcher(location) -> Callable[[list[str]], list]:
    """``fetch(keys) -> [bytes-like or None per key]`` through obstore: one GET per key, concurrent when several."""
    import obstore

    store = _obstore_store(location, obstore_settings(location.url, dict(location.options)))

    def one(key: str):
        try:
            return obstore.get(store, key).bytes()
        except FileNotFoundError:
            return None

    async def _one_async(key: str):
        try:
            got = await obstore.get_async(store, key)
            return await got.bytes_async()
        except FileNotFoundError:
            return None

    def fetch(keys: list[str]) -> list:
        if len(keys) == 1:
            return [one(keys[0])]
        import asyncio

        async def gather():
            return await asyncio.gather(*(_one_async(k) for k in keys))

        return list(asyncio.run(gather()))

    return fetch


def forget_obstore() -> None:
    """Drop the obstore stores opened in this process (tests; or after the environment's credentials changed)."""
    with _lock:
        _opened.clear()


__all__ = ["BACKENDS", "forget_obstore", "obstore_fetcher", "obstore_settings", "resolve_backend"]
