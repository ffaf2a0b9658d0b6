"""Ask dask.distributed workers whether they can read the object-store stores (``s3://``, ``gs://``) a pass reads.

A worker without the backend (s3fs, gcsfs) or without the credentials would
fail every task of the pass with a traceback from deep inside fsspec. So
before a pass runs on a distributed scheduler, every worker is asked
(``client.run``) to import the backend and read the store's metadata; a
failure is one :class:`StoreError` sentence naming the worker and what it
misses. Answers are cached per (client, URL, worker).

The graph is walked for *remote carriers*: objects with a
``__wideml_remote__()`` method returning ``(url, probe)``, the probe a
picklable callable that returns None when the worker can read the store,
else a few words saying what failed (the chunk reader of a remote store,
:class:`wideml.storage.remote_reader.RemoteZarrReader`). This module imports
no other wideml layer.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable
from typing import Any

from dask.base import collections_to_expr

from wideml.exceptions import StoreError

_checked: set[tuple] = set()
_lock = threading.Lock()
_LEAVES = (str, bytes, int, float, complex, bool, type(None))


def _children(node: Any):
    if isinstance(node, dict):
        return list(node.values())
    if isinstance(node, (list, tuple, set, frozenset)):
        return list(node)
    if isinstance(node, functools.partial):
        return [*node.args, *node.keywords.values()]
    out = [getattr(node, attr) for attr in ("func", "value") if hasattr(node, attr)]
    args = getattr(node, "args", ())
    out += list(args) if isinstance(args, (tuple, list)) else []
    kwargs = getattr(node, "kwargs", {})
    out += list(kwargs.values()) if isinstance(kwargs, dict) else []
    return out


def remote_probes(collections: Iterable[Any]) -> dict[str, Any]:
    """URL -> probe of every remote store the tasks of ``collections`` read."""
    graph = collections_to_expr(list(collections), optimize_graph=False).__dask_graph__()
    found: dict[str, Any] = {}
    seen: set[int] = set()
    stack = list(dict(graph).values())
    while stack:
        node = stack.pop()
        if isinstance(node, _LEAVES) or type(node).__module__ == "numpy" or id(node) in seen:
            continue
        seen.add(id(node))
        hook = getattr(type(node), "__wideml_remote__", None)
        if hook is not None:
            url, probe = hook(node)
            found.setdefault(url, probe)
            continue
        if type(node).__module__.startswith("dask.") or isinstance(node, (dict, list, tuple, set, frozenset, functools.partial)):
            stack.extend(_children(node))
    return found


def _run_probes(probes: list) -> list:
    """On a worker: each probe's answer (None: the store can be read)."""
    answers = []
    for probe in probes:
        try:
            answers.append(probe())
        except Exception as exc:  # noqa: BLE001 - reported by the client, naming this worker
            answers.append(f"{type(exc).__name__}: {exc}")
    return answers


def _workers(client) -> dict[str, str]:
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:
        info = client.scheduler_info()
    return {addr: str(w.get("name", addr)) for addr, w in info.get("workers", {}).items()}


def check_remote_stores(client, collections: Iterable[Any]) -> None:
    """Refuse (StoreError) unless every worker of ``client`` can read each remote store the graph reads.

    Parameters
    ----------
    client : distributed.Client
    collections : iterable of dask collections

    Raises
    ------
    StoreError
        One sentence naming the worker, the store and what it misses.
    """
    probes = remote_probes(collections)
    if not probes:
        return
    names = _workers(client)
    todo = {url: probe for url, probe in probes.items() if any((client.id, url, w) not in _checked for w in names)}
    if not todo:
        return
    urls = list(todo)
    try:
        answers = client.run(_run_probes, [todo[u] for u in urls], workers=list(names), on_error="return")
    except Exception as exc:  # noqa: BLE001
        raise StoreError(f"cannot ask the dask workers whether they can read {urls[0]} ({type(exc).__name__}); check that "
                         "every worker runs the same wideml as this client.") from None
    for worker, name in sorted(names.items()):
        answer = answers.get(worker)
        who = f"dask worker {name} ({worker})" if name != worker else f"dask worker {worker}"
        if not isinstance(answer, list):
            raise StoreError(f"{who} could not check the store {urls[0]} ({type(answer).__name__}: {answer}); check that "
                             "every worker runs the same wideml as this client.")
        for url, problem in zip(urls, answer):
            if problem is not None:
                raise StoreError(f"{who} cannot read the store {url}: {problem}; install the backend on every worker "
                                 "(pip install 'wideml[s3]' or 'wideml[gcs]') and give the workers the same credentials "
                                 "(environment) and storage options.")
    with _lock:
        _checked.update((client.id, url, w) for url in urls for w in names)


def forget() -> None:
    """Drop the cache of answers (tests)."""
    with _lock:
        _checked.clear()


__all__ = ["check_remote_stores", "forget", "remote_probes"]
