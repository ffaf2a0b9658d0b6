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
4. the commit intent ``PARENT/.NAME.wideml-committing.json`` is written (signed:
   the run's owner record, the temporary prefix, every object that will be
   copied with its size and sha256, and the objects of the old output it
   replaces), and read back (a concurrent writer of the same output is refused);
5. the old output, if any, is removed (marker and ``zarr.json`` first), the
   objects are copied into place, the group's own ``zarr.json`` last, and then
   the completion marker ``PARENT/.NAME.wideml-output.json`` (the output's name,
   and every object's size, sha256 and MD5, signed) is written; the intent is
   removed;
6. the temporary prefix is removed, its owner record last.

Every upload and copy runs in a worker thread, so a SIGINT/SIGTERM waits for
the one in flight before the clean-up lists and removes what this run put on
the object store (the temporary prefix, the keys it knows it uploaded, the
objects copied into place, the intent): nothing survives an interrupt. A run
killed outright leaves the temporary prefix and perhaps an intent with objects
under the final name; the next run writing that output removes them once their
owner is gone (the verdict of :mod:`wideml.runtime.ownership`), provided every
object under the final name is one the intent lists with its size.

An existing output is replaced only with ``overwrite`` and only when its valid
completion marker lists every object under its name with that object's size
(and ETag, on S3): a single foreign object (a user's notes) refuses the
overwrite and nothing is removed, and a ``zarr.json`` without a marker proves
nothing. Replacing removes exactly the objects the marker lists.
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
from concurrent.futures import ThreadPoolExecutor
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
from wideml.storage.urls import DEFAULT_OPTIONS, S3FS_TRIES, is_url, local_path_of, protocol_of, require_backend, storage_options

#: The completion marker's suffix: ``PARENT/.NAME`` + this, written last.
DONE_SUFFIX = ".wideml-output.json"
_DONE_MARKER = "wideml-remote-output/1"
#: The commit intent's suffix: ``PARENT/.NAME`` + this, present only while objects are copied into place.
INTENT_SUFFIX = ".wideml-committing.json"
_INTENT_MARKER = "wideml-remote-commit/1"


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

    @property
    def intent_key(self) -> str:
        return posixpath.join(self.parent, "." + self.name + INTENT_SUFFIX)

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
    if any(part in (".", "..") for part in path.split("/")):
        raise StoreError(f"{url} has a '.' or '..' segment, which an object store keeps literally as part of the key; "
                         "give the output's URL without them.")
    return RemoteTarget(url, fs, path)


# ----------------------------------------------------------------------------- what exists, and whose it is
def _listing(target: RemoteTarget, path: str, etags: dict | None = None) -> dict[str, int]:
    """``{key relative to path: size}`` of the object ``path`` itself (key ``""``) and every object under ``path/``.

    ``etags``, if given, is filled with ``{key relative to path: ETag}`` where the listing has one.
    """
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
            if etags is not None and info.get("ETag"):
                etags[rel] = str(info["ETag"]).strip('"')
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


def _not_listed(target: RemoteTarget, record: dict, listing: dict[str, int], etags: dict[str, str]) -> list[str]:
    """The objects under the output that ``record`` (a completion marker) does not list with their size (and MD5 = ETag)."""
    files = record["files"]
    out = []
    for rel, size in listing.items():
        entry = files.get(rel)
        if not isinstance(entry, dict) or entry.get("size") != size:
            out.append(rel)
            continue
        md5, etag = entry.get("md5"), etags.get(rel, "")
        if isinstance(md5, str) and etag and "-" not in etag and etag != md5:
            out.append(rel)
    return sorted(out)


def made_by_wideml(target: RemoteTarget) -> bool:
    """Whether the existing output is provably wideml's: a valid completion marker listing every object under its name."""
    record = completion_record(target)
    if record is None:
        return False
    etags: dict[str, str] = {}
    return not _not_listed(target, record, _listing(target, target.path, etags), etags)


def _foreign_refusal(target: RemoteTarget, foreign: list[str]) -> StoreError:
    many = f"{len(foreign)} objects" if len(foreign) > 1 else "an object"
    return StoreError(f"output {target.url} holds {many} that its wideml completion marker does not list or that changed "
                      f"since wideml wrote it ({_join(target.path, foreign[0])}), so wideml will neither replace nor remove "
                      "it: move those objects elsewhere, or choose another output.")


def _writer_refusal(target: RemoteTarget, record: dict | None) -> StoreError:
    return StoreError(f"output {target.url} is being written by another wideml run ({describe_owner(record)}); "
                      "wait for it to finish, or choose another output.")


def check_remote_output(url: str, overwrite: bool, options: dict | None = None) -> RemoteTarget:
    """Refuse, before anything is written, an output that exists and may not be replaced (the local rules).

    First removes what a killed commit of this output provably left (:func:`recover_interrupted_commit`).

    Raises
    ------
    StoreError
        The output exists and is not provably wideml's (whatever ``overwrite`` says), or exists and ``overwrite``
        is not set; another live wideml run is committing it; or the object store cannot be reached or refuses access.
    """
    target = remote_target(url, options)
    recover_interrupted_commit(target)
    etags: dict[str, str] = {}
    listing = _listing(target, target.path, etags)
    if listing or _read_json(target, target.done_key) is not None:
        record = completion_record(target)
        if record is None:
            live = _live_writer(target)
            if live is not None:
                raise _writer_refusal(target, live)
            raise StoreError(f"output {target.url} exists and wideml cannot prove it wrote it (no valid wideml completion "
                             "marker for it), so --overwrite will not replace it: remove it yourself, or choose another output.")
        foreign = _not_listed(target, record, listing, etags)
        if foreign:
            raise _foreign_refusal(target, foreign)
        if not overwrite:
            raise StoreError(f"output {target.url} already exists; pass --overwrite (overwrite=True) to replace it or "
                             "choose another output.")
    return target


# ----------------------------------------------------------------------------- the commit intent
def _record_verdict(data: bytes, name: str) -> tuple[str, dict | None]:
    """The ownership verdict of owner-record bytes ``data``, taken as for a local folder ``name`` holding them."""
    with tempfile.TemporaryDirectory(prefix="wideml-remote-record-") as scratch:
        folder = Path(scratch) / name
        folder.mkdir()
        (folder / OWNER_FILE).write_bytes(data)
        return verdict(folder), wideml_record(folder)


def _valid_intent(target: RemoteTarget) -> dict | None:
    """The output's commit intent if it is a valid, signed wideml intent written for this very output, else None."""
    record = _read_json(target, target.intent_key)
    if not isinstance(record, dict) or record.get("wideml") != _INTENT_MARKER or record.get("name") != target.name:
        return None
    prefix, owner = record.get("prefix"), record.get("owner")
    if not isinstance(prefix, str) or posixpath.dirname(prefix) != target.parent or not isinstance(owner, dict):
        return None
    if not posixpath.basename(prefix).startswith("." + target.name + ".wideml-partial-"):
        return None
    for key in ("files", "old"):
        if not isinstance(record.get(key), dict) or not all(isinstance(v, dict) for v in record[key].values()):
            return None
    return record if verify(record) else None


def _intent_verdict(intent: dict) -> tuple[str, dict | None]:
    if intent.get("run_id") == RUN_ID:
        return "own", intent["owner"]
    return _record_verdict(json.dumps(intent["owner"]).encode(), posixpath.basename(intent["prefix"]))


def _live_writer(target: RemoteTarget) -> dict | None:
    """The owner record of another live (or unknown) wideml run writing this output (its intent or temporary prefix), if any."""
    intent = _valid_intent(target)
    if intent is not None:
        state, record = _intent_verdict(intent)
        if state in ("running", "unknown"):
            return record
    for prefix in _other_prefixes(target):
        state, record = _owner_verdict(target, prefix)
        if state in ("running", "unknown") and record is not None and record.get("run_id") != RUN_ID:
            return record
    return None


def recover_interrupted_commit(target: RemoteTarget) -> list[str]:
    """Remove what a killed commit of this output left, when its intent proves it: returns the keys removed.

    The intent must be valid and signed, its owner gone; without a completion marker, every object under the output's
    name must be one the intent lists (new or replaced) with that size, else nothing is removed (the existence rules
    then refuse). Its stale temporary prefix is removed too. A live owner refuses in one sentence.
    """
    intent = _valid_intent(target)
    if intent is None:
        return []
    state, owner = _intent_verdict(intent)
    if state in ("running", "unknown"):
        raise _writer_refusal(target, owner)
    if state not in ("dead", "own"):
        return []
    removed: list[str] = []
    if completion_record(target) is None:
        listing = _listing(target, target.path)
        known = {rel: {e.get("size") for e in (intent["files"].get(rel), intent["old"].get(rel)) if isinstance(e, dict)}
                 for rel in listing}
        if any(size not in known[rel] for rel, size in listing.items()):
            return []
        keys = sorted((_join(target.path, rel) for rel in listing), key=lambda k: (posixpath.basename(k) != "zarr.json", k))
        for key in keys:  # the group's zarr.json first, so no reader takes the rest for a store
            with contextlib.suppress(FileNotFoundError):
                target.call("clean up", target.fs.rm_file, key)
            removed.append(key)
    prefix = intent["prefix"]
    if _owner_verdict(target, prefix)[0] in ("dead", "unrecorded") or state == "own":
        _remove_prefix(target, prefix, known=[_join(posixpath.join(prefix, target.name), rel) for rel in intent["files"]])
    with contextlib.suppress(FileNotFoundError):
        target.call("clean up", target.fs.rm_file, target.intent_key)
    return removed


# ----------------------------------------------------------------------------- the temporary prefix
def _owner_verdict(target: RemoteTarget, prefix: str) -> tuple[str, dict | None]:
    """The ownership verdict of a temporary prefix, taken as for a local folder of that name holding its record."""
    try:
        data = target.fs.cat_file(posixpath.join(prefix, OWNER_FILE))
    except Exception:  # noqa: BLE001 - no record (or none readable): proves nothing
        return "unrecorded", None
    return _record_verdict(data, posixpath.basename(prefix))


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
            raise _writer_refusal(target, record)
        if state == "dead":
            _remove_prefix(target, prefix)
            removed.append(f"{protocol_of(target.url)}://{prefix}")
    return removed


def _remove_prefix(target: RemoteTarget, prefix: str, known: list[str] = ()) -> None:
    """Remove a temporary prefix: every object listed or ``known`` (the keys its run uploaded), its owner record last."""
    record = posixpath.join(prefix, OWNER_FILE)
    with contextlib.suppress(Exception):
        target.fs.invalidate_cache()
    with contextlib.suppress(FileNotFoundError):
        keys = {k.rstrip("/") for k in target.fs.find(prefix)} | {k for k in known if k.startswith(prefix + "/")}
        keys.discard(record)
        if keys:
            target.fs.rm(sorted(keys))
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
    """Put the staged output ``local`` in place at ``target`` (steps 2 to 6 of the module's docstring).

    Raises
    ------
    StoreError
        Refused access (no write permission, wrong credentials), an unreachable endpoint, an upload that does not
        verify, or an output that appeared, changed or is being committed by another run meanwhile; nothing of this
        run is left on the object store.
    """
    files = _files(local)
    manifest = {rel: (path.stat().st_size, *_digests(path)) for rel, path in files.items()}
    sweep_remote_leftovers(target)
    prefix = posixpath.join(target.parent, aside_name(target.name, "partial"))
    record = sign(owner_record(posixpath.basename(prefix), "partial"))
    staged = posixpath.join(prefix, target.name)
    uploaded: list[str] = []
    placed: list[str] = []
    intent_written = False
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wideml-upload")

    def waited(doing: str, fn, *args) -> Any:
        """``target.call(doing, fn, *args)`` in the worker thread: an interrupt of the main thread leaves it running,
        and the clean-up below waits for it (``pool.shutdown``) before listing what to remove."""
        return pool.submit(target.call, doing, fn, *args).result()

    try:
        uploaded.append(posixpath.join(prefix, OWNER_FILE))  # the owner record is the prefix's FIRST object
        waited("write", target.fs.pipe_file, uploaded[-1], json.dumps(record).encode())
        for rel, path in files.items():
            uploaded.append(_join(staged, rel))
            waited("upload to", target.fs.put_file, str(path), uploaded[-1])
        _verify(target, staged, manifest)
        check_remote_output(target.url, overwrite)  # it may have appeared, or changed hands, while this run uploaded
        old = completion_record(target)
        old_files = {} if old is None else {rel: {"size": size} for rel, size in _listing(target, target.path).items()}
        intent = sign({"wideml": _INTENT_MARKER, "name": target.name, "url": target.url, "run_id": RUN_ID,
                       "prefix": prefix, "owner": record, "old": old_files,
                       "files": {rel: {"size": size, "sha256": sha} for rel, (size, sha, _) in manifest.items()}})
        intent_written = True
        waited("write", target.fs.pipe_file, target.intent_key, json.dumps(intent).encode())
        back = _read_json(target, target.intent_key)
        if not isinstance(back, dict) or back.get("prefix") != prefix:  # another run's intent replaced this one's
            intent_written = False
            live = _live_writer(target)
            raise _writer_refusal(target, live) if live else StoreError(
                f"output {target.url} changed while this run committed it; nothing was put in place: run the command again.")
        if old is not None:
            _clear(target)
        for rel in _commit_order(manifest):
            placed.append(_join(target.path, rel))
            waited("copy into place", target.fs.copy, _join(staged, rel), placed[-1])
        done = sign({"wideml": _DONE_MARKER, "name": target.name, "url": target.url, "run_id": RUN_ID,
                     "files": {rel: {"size": size, "sha256": sha, "md5": md5} for rel, (size, sha, md5) in manifest.items()}})
        placed.append(target.done_key)
        waited("mark complete", target.fs.pipe_file, target.done_key, json.dumps(done).encode())
        placed.clear()
        waited("clean up", target.fs.rm_file, target.intent_key)
        intent_written = False
    except BaseException:
        pool.shutdown(wait=True)  # the upload or copy in flight ends before anything is listed or removed
        with contextlib.suppress(Exception):
            for key in reversed(placed):  # only what this run put in place; the marker, if it got there, first
                with contextlib.suppress(FileNotFoundError):
                    target.fs.rm_file(key)
            if intent_written:
                with contextlib.suppress(FileNotFoundError):
                    target.fs.rm_file(target.intent_key)
        raise
    finally:
        pool.shutdown(wait=True)
        if uploaded:
            with contextlib.suppress(Exception):
                _remove_prefix(target, prefix, known=uploaded)


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
    """Remove an existing output proven wideml's: exactly the objects its marker lists (checked again just before),
    the marker and the group's ``zarr.json`` first, so no reader sees a mix."""
    fs = target.fs
    record = completion_record(target)
    etags: dict[str, str] = {}
    listing = _listing(target, target.path, etags)
    if record is None:
        if listing:
            raise StoreError(f"output {target.url} changed while this run wrote it (its completion marker is gone); "
                             "nothing was replaced: run the command again.")
        return
    foreign = _not_listed(target, record, listing, etags)
    if foreign:
        raise _foreign_refusal(target, foreign)
    for key in (target.done_key, posixpath.join(target.path, "zarr.json")):
        with contextlib.suppress(FileNotFoundError):
            target.call("replace", fs.rm_file, key)
    keys = [_join(target.path, rel) for rel in listing if rel != "zarr.json"]
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
    if what == "model" and "zarr.json" not in listing:
        raise StoreError(f"{target.url} is not a wideml model (no zarr.json under that name); pass a model written by "
                         "`wideml fit` or save_model.")
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


__all__ = ["DONE_SUFFIX", "INTENT_SUFFIX", "RemoteTarget", "check_remote_output", "completion_record", "download_output", "is_remote",
           "made_by_wideml", "recover_interrupted_commit", "remote_output", "remote_target", "staged_folder", "staging_parent", "sweep_remote_leftovers",
           "upload"]
