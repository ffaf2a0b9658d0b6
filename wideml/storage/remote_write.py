"""Writing an output to an object store (``s3://``, ``gs://``, any fsspec protocol) with the trust rules of local outputs.

An object store has no rename, so :func:`remote_output` commits an output
``PARENT/NAME`` (a model or store prefix, a maps folder, one CSV or JSON
object) in steps, each one safe to be cut short:

1. the output is written on local disk first, in an owned write-aside folder
   (:mod:`wideml.runtime.ownership`; config ``workdir``, else the system
   temporary directory), exactly as a local output is;
2. it is uploaded under the temporary prefix ``PARENT/.NAME.wideml-partial-TOKEN/``,
   whose first object is this run's owner record (``.wideml-owner.json``,
   signed with the user's owner key), so a bucket without write permission is
   refused before any output object exists;
3. the upload is verified by listing: every object present with its size (and,
   on S3, its ETag equal to the local MD5 for a one-part upload);
4. the objects are copied into place, the group's own ``zarr.json`` last, and
   then the completion marker ``PARENT/.NAME.wideml-output.json`` (the output's
   name, and every object's size and sha256, signed) is written LAST;
5. the temporary prefix is removed, its owner record last.

A failure or interrupt (SIGINT/SIGTERM) removes the temporary prefix and
anything copied into place; a run killed outright leaves only the temporary
prefix, which the next run writing the same output removes once its owner is
gone (its verdict is taken like a local folder's). An existing output is
replaced only with ``overwrite`` and only when wideml can prove it made it: a
valid completion marker, or a ``zarr.json`` of a wideml store or model (the
rule of :mod:`wideml.storage.output_marks`). Replacing removes the old marker
and ``zarr.json`` first, so a reader never sees a mix of two outputs.
Readers: :func:`download_output` copies an output to local disk and checks it
against its completion marker (listing and sha256).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wideml.exceptions import StoreError
from wideml.runtime.config import config_value
from wideml.runtime.owned_names import OWNER_FILE, aside_name, is_aside_name
from wideml.runtime.owner_key import sign, verify
from wideml.runtime.ownership import RUN_ID, create_claimed, describe_owner, owner_record, verdict, wideml_record
from wideml.runtime.removal import register_scratch, remove_tree, unregister_scratch
from wideml.storage.remote_access import remote_error
from wideml.storage.schema import ATTRS_KEY, FEATURE_STORE_SCHEMA, MODEL_SCHEMA
from wideml.storage.urls import DEFAULT_OPTIONS, S3FS_TRIES, is_url, local_path_of, protocol_of, require_backend, storage_options

#: The completion marker's suffix: ``PARENT/.NAME`` + this, written last.
DONE_SUFFIX = ".wideml-output.json"
_DONE_MARKER = "wideml-remote-output/1"


def is_remote(path: Any) -> bool:
    """Whether ``path`` is a URL of an object store (not ``file://``): an output written by :func:`remote_output`."""
    return is_url(path) and local_path_of(str(path)) is None


@dataclass(frozen=True)
class RemoteTarget:
    """An output on an object store: its URL, the fsspec filesystem and the path in it."""

    url: str
    fs: Any
    path: str

    @property
    def parent(self) -> str:
        return posixpath.dirname(self.path)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def done_key(self) -> str:
        return posixpath.join(self.parent, "." + self.name + DONE_SUFFIX)

    def call(self, doing: str, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``; a failure of the object store becomes one sentence about writing ``url``."""
        try:
            return fn(*args, **kwargs)
        except StoreError:
            raise
        except FileNotFoundError as exc:
            if "bucket" in str(exc).lower():
                raise StoreError(f"cannot write {self.url}: its bucket does not exist ({str(exc).splitlines()[0][:120]}); "
                                 "create the bucket first or check the URL.") from None
            raise remote_error(exc, self.url, doing) from None
        except Exception as exc:  # noqa: BLE001 - fsspec's and the provider's many errors, in one sentence
            raise remote_error(exc, self.url, doing) from None


def remote_target(url: str, options: dict | None = None) -> RemoteTarget:
    """The :class:`RemoteTarget` of an output URL (backend checked, storage options merged; nothing is written).

    Raises
    ------
    StoreError
        A missing backend (naming the extra), a URL without a bucket and a name, or an unusable endpoint.
    """
    url = str(url).strip().rstrip("/")
    require_backend(url)
    import fsspec

    protocol = protocol_of(url)
    try:
        fs, path = fsspec.core.url_to_fs(url, **storage_options(options, protocol))
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise remote_error(exc, url, "write") from None
    if protocol in DEFAULT_OPTIONS and isinstance(getattr(fs, "retries", None), int):
        fs.retries = S3FS_TRIES
    path = path.rstrip("/")
    if "/" not in path or not posixpath.basename(path):
        raise StoreError(f"{url} names no object inside a bucket; give an output such as {protocol}://bucket/model.zarr.")
    return RemoteTarget(url, fs, path)


# ----------------------------------------------------------------------------- what exists, and whose it is
def _listing(target: RemoteTarget, path: str) -> dict[str, int]:
    """``{key relative to path: size}`` of the object ``path`` itself (key ``""``) and every object under ``path/``."""
    fs = target.fs
    with contextlib.suppress(Exception):
        fs.invalidate_cache()
    found = target.call("list", fs.find, path, detail=True)
    out = {}
    for key, info in found.items():
        key = key.rstrip("/")
        if info.get("type", "file") != "file":
            continue
        rel = "" if key == path else key[len(path) + 1:] if key.startswith(path + "/") else None
        if rel is not None:
            out[rel] = int(info.get("size") or 0)
    return out


def _read_json(target: RemoteTarget, key: str) -> Any:
    try:
        data = target.fs.cat_file(key)
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001
        raise remote_error(exc, target.url, "read") from None
    try:
        return json.loads(data)
    except ValueError:
        return None


def completion_record(target: RemoteTarget) -> dict | None:
    """The output's completion marker if it is a valid, signed wideml marker written for this very output, else None."""
    record = _read_json(target, target.done_key)
    if not isinstance(record, dict) or record.get("wideml") != _DONE_MARKER or record.get("name") != target.name:
        return None
    if not isinstance(record.get("files"), dict) or not verify(record):
        return None
    return record


def _wideml_group(target: RemoteTarget) -> bool:
    meta = _read_json(target, posixpath.join(target.path, "zarr.json"))
    info = ((meta or {}).get("attributes") or {}).get(ATTRS_KEY) if isinstance(meta, dict) else None
    return isinstance(info, dict) and info.get("schema") in (FEATURE_STORE_SCHEMA, MODEL_SCHEMA)


def made_by_wideml(target: RemoteTarget) -> bool:
    """Whether the existing output is provably wideml's: its completion marker, or a wideml store's or model's zarr.json."""
    return completion_record(target) is not None or _wideml_group(target)


def check_remote_output(url: str, overwrite: bool, options: dict | None = None) -> RemoteTarget:
    """Refuse, before anything is written, an output that exists and may not be replaced (the local rules).

    Raises
    ------
    StoreError
        The output exists and is not provably wideml's (whatever ``overwrite`` says), or exists and ``overwrite``
        is not set; or the object store cannot be reached or refuses access.
    """
    target = remote_target(url, options)
    if _listing(target, target.path) or _read_json(target, target.done_key) is not None:
        if not made_by_wideml(target):
            raise StoreError(f"output {target.url} exists and wideml cannot prove it wrote it (no wideml completion marker, "
                             "store or model), so --overwrite will not replace it: remove it yourself, or choose another output.")
        if not overwrite:
            raise StoreError(f"output {target.url} already exists; pass --overwrite (overwrite=True) to replace it or "
                             "choose another output.")
    return target


# ----------------------------------------------------------------------------- the temporary prefix
def _owner_verdict(target: RemoteTarget, prefix: str) -> tuple[str, dict | None]:
    """The ownership verdict of a temporary prefix, taken as for a local folder of that name holding its record."""
    try:
        data = target.fs.cat_file(posixpath.join(prefix, OWNER_FILE))
    except Exception:  # noqa: BLE001 - no record (or none readable): proves nothing
        return "unrecorded", None
    with tempfile.TemporaryDirectory(prefix="wideml-remote-record-") as scratch:
        folder = Path(scratch) / posixpath.basename(prefix)
        folder.mkdir()
        (folder / OWNER_FILE).write_bytes(data)
        return verdict(folder), wideml_record(folder)


def _other_prefixes(target: RemoteTarget) -> list[str]:
    """The temporary prefixes ``PARENT/.NAME.wideml-partial-*`` of this output."""
    start = "." + target.name + ".wideml-partial-"
    with contextlib.suppress(Exception):
        target.fs.invalidate_cache()
    try:
        names = target.fs.ls(target.parent, detail=False)
    except FileNotFoundError:
        return []
    except Exception as exc:  # noqa: BLE001
        raise remote_error(exc, target.url, "list the folder of") from None
    found = (posixpath.basename(n.rstrip("/")) for n in names)
    return [posixpath.join(target.parent, n) for n in found if n.startswith(start) and is_aside_name(n)]


def sweep_remote_leftovers(target: RemoteTarget) -> list[str]:
    """Remove this output's temporary prefixes left by dead runs; refuse if a live run is writing the output.

    Returns the URLs removed. Prefixes without a wideml record, or whose owner cannot be checked, stay.
    """
    removed = []
    for prefix in _other_prefixes(target):
        state, record = _owner_verdict(target, prefix)
        if state in ("running", "unknown") and record is not None and record.get("run_id") != RUN_ID:
            raise StoreError(f"output {target.url} is being written by another wideml run ({describe_owner(record)}); "
                             "wait for it to finish or choose another output.")
        if state == "dead":
            _remove_prefix(target, prefix)
            removed.append(f"{protocol_of(target.url)}://{prefix}")
    return removed


def _remove_prefix(target: RemoteTarget, prefix: str) -> None:
    """Remove a temporary prefix: every object, its owner record last."""
    record = posixpath.join(prefix, OWNER_FILE)
    with contextlib.suppress(FileNotFoundError):
        keys = [k for k in target.fs.find(prefix) if k.rstrip("/") != record]
        if keys:
            target.fs.rm(keys)
    with contextlib.suppress(FileNotFoundError):
        target.fs.rm_file(record)


def _files(local: Path) -> dict[str, Path]:
    """``{relative key: local file}`` of a staged output (``""`` for a single file)."""
    if local.is_file():
        return {"": local}
    return {p.relative_to(local).as_posix(): p for p in sorted(local.rglob("*")) if p.is_file()}


def _digests(path: Path) -> tuple[str, str]:
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
            md5.update(block)
    return sha.hexdigest(), md5.hexdigest()


def _join(base: str, rel: str) -> str:
    return posixpath.join(base, rel) if rel else base


def _commit_order(keys) -> list[str]:
    """Keys in the order they are copied into place: data, then arrays' ``zarr.json``, the group's own ``zarr.json`` last."""
    return sorted(keys, key=lambda k: (k == "zarr.json", posixpath.basename(k) == "zarr.json", k))


def upload(target: RemoteTarget, local: Path, overwrite: bool) -> None:
    """Put the staged output ``local`` in place at ``target`` (steps 2 to 5 of the module's docstring).

    Raises
    ------
    StoreError
        Refused access (no write permission, wrong credentials), an unreachable endpoint, an upload that does not
        verify, or an output that appeared or changed meanwhile; nothing of this run is left on the object store.
    """
    files = _files(local)
    manifest = {rel: (path.stat().st_size, *_digests(path)) for rel, path in files.items()}
    sweep_remote_leftovers(target)
    prefix = posixpath.join(target.parent, aside_name(target.name, "partial"))
    record = sign(owner_record(posixpath.basename(prefix), "partial"))
    placed: list[str] = []
    started = False
    try:
        target.call("write", target.fs.pipe_file, posixpath.join(prefix, OWNER_FILE), json.dumps(record).encode())
        started = True
        staged = posixpath.join(prefix, target.name)
        for rel, path in files.items():
            target.call("upload to", target.fs.put_file, str(path), _join(staged, rel))
        _verify(target, staged, manifest)
        check_remote_output(target.url, overwrite)  # it may have appeared, or changed hands, while this run uploaded
        if overwrite:
            _clear(target)
        for rel in _commit_order(manifest):
            dest = _join(target.path, rel)
            placed.append(dest)
            target.call("copy into place", target.fs.copy, _join(staged, rel), dest)
        done = sign({"wideml": _DONE_MARKER, "name": target.name, "url": target.url, "run_id": RUN_ID,
                     "files": {rel: {"size": size, "sha256": sha} for rel, (size, sha, _) in manifest.items()}})
        placed.append(target.done_key)
        target.call("mark complete", target.fs.pipe_file, target.done_key, json.dumps(done).encode())
        placed.clear()
    except BaseException:
        with contextlib.suppress(Exception):
            for key in reversed(placed):  # only what this run put in place; the marker, if it got there, first
                with contextlib.suppress(FileNotFoundError):
                    target.fs.rm_file(key)
        raise
    finally:
        if started:
            with contextlib.suppress(Exception):
                _remove_prefix(target, prefix)


def _verify(target: RemoteTarget, staged: str, manifest: dict) -> None:
    """Every staged object listed with its size (and on S3 an ETag equal to its MD5 for a one-part upload)."""
    found = _listing(target, staged)
    for rel, (size, _, md5) in manifest.items():
        if found.get(rel) != size:
            raise StoreError(f"the upload of {target.url} did not verify ({rel or target.name}: {found.get(rel)} bytes listed, "
                             f"{size} written); nothing was put in place: run the command again.")
    if protocol_of(target.url) in ("s3", "s3a"):
        for rel, (_, _, md5) in manifest.items():
            etag = str(target.call("check", target.fs.info, _join(staged, rel)).get("ETag", "")).strip('"')
            if etag and "-" not in etag and etag != md5:
                raise StoreError(f"the upload of {target.url} did not verify ({rel or target.name}: its checksum differs from "
                                 "what was written); nothing was put in place: run the command again.")


def _clear(target: RemoteTarget) -> None:
    """Remove an existing output proven wideml's: the marker and the group's ``zarr.json`` first, so no reader sees a mix."""
    fs = target.fs
    for key in (target.done_key, posixpath.join(target.path, "zarr.json")):
        with contextlib.suppress(FileNotFoundError):
            target.call("replace", fs.rm_file, key)
    keys = [_join(target.path, rel) for rel in _listing(target, target.path)]
    if keys:
        target.call("replace", fs.rm, keys)


# ----------------------------------------------------------------------------- the write and the read
def staging_parent() -> str:
    """The local folder outputs for an object store are written in first: config ``workdir`` (if local), else the temp folder."""
    configured = config_value("workdir")
    if configured and not is_remote(str(configured)):
        text = local_path_of(str(configured)) if is_url(str(configured)) else str(configured)
        if os.path.isdir(os.path.expanduser(text)):
            return os.path.realpath(os.path.expanduser(text))
    return os.path.realpath(tempfile.gettempdir())


@contextlib.contextmanager
def staged_folder(name: str) -> Iterator[Path]:
    """An owned local write-aside folder ``.NAME.wideml-partial-TOKEN`` in :func:`staging_parent`, removed afterwards."""
    parent = Path(staging_parent())
    folder = parent / aside_name(name, "partial")
    try:
        create_claimed(folder, "partial")
    except OSError as exc:
        raise StoreError(f"cannot write the local copy of an object-store output in {parent} ({exc.strerror or exc}); "
                         "set a writable work folder (--workdir, config workdir).") from None
    register_scratch(folder)
    try:
        yield folder
    finally:
        remove_tree(folder)
        unregister_scratch(folder)


@contextlib.contextmanager
def remote_output(url: str, overwrite: bool = False, options: dict | None = None) -> Iterator[Path]:
    """Yield a local path to write an output at; on success put it in place at ``url`` (see the module's docstring).

    Parameters
    ----------
    url : str
        The output's URL (``s3://bucket/prefix/model.zarr``, ``s3://bucket/preds.csv``).
    overwrite : bool, default False
        Replace an existing output that wideml can prove it made.
    options : dict, optional
        fsspec storage options over the config's ``storage-options`` (no credentials).

    Yields
    ------
    Path
        Where to write (a file or a folder, not yet existing, in an owned local folder).
    """
    target = check_remote_output(url, overwrite, options)
    with staged_folder(target.name) as folder:
        local = folder / target.name
        yield local
        if not os.path.lexists(local):
            raise StoreError(f"nothing was written for {target.url}; no output was put in place.")
        upload(target, local, overwrite)


def download_output(url: str, dest: str | os.PathLike, options: dict | None = None, what: str = "output") -> dict | None:
    """Copy the output at ``url`` to the new local path ``dest``, checked against its completion marker when it has one.

    With a marker, the listing must hold exactly the objects it names, with their sizes and sha256; without one
    (a copy made by other tools) every object under the prefix is copied as it is. Returns the marker or None.

    Raises
    ------
    StoreError
        Nothing at ``url``; a listing or a checksum that differs from the marker (a half-replaced or damaged
        output); or a failure of the object store.
    """
    target = remote_target(url, options)
    record = completion_record(target)
    listing = _listing(target, target.path)
    if not listing:
        raise StoreError(f"no {what} at {target.url} (nothing is stored under that name); check the URL.")
    if record is not None:
        expected = {rel: entry.get("size") for rel, entry in record["files"].items() if isinstance(entry, dict)}
        if expected != listing:
            extra = sorted(set(listing) - set(expected)) or sorted(set(expected) - set(listing)) or sorted(listing)
            raise StoreError(f"the {what} at {target.url} does not match its completion marker ({extra[0] or target.name} differs: "
                             "it was changed or only partly replaced); write it again.")
    dest = Path(dest)
    for rel in sorted(listing):
        path = dest / rel if rel else dest
        path.parent.mkdir(parents=True, exist_ok=True)
        target.call("read", target.fs.get_file, _join(target.path, rel), str(path))
        if record is not None and _digests(path)[0] != record["files"][rel].get("sha256"):
            raise StoreError(f"the {what} at {target.url} fails its checksum ({rel or target.name} differs from what wideml "
                             "wrote: changed or damaged); write it again.")
    return record


__all__ = ["DONE_SUFFIX", "RemoteTarget", "check_remote_output", "completion_record", "download_output", "is_remote",
           "made_by_wideml", "remote_output", "remote_target", "staged_folder", "staging_parent", "sweep_remote_leftovers",
           "upload"]
