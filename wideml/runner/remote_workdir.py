"""Checkpoints of a resumable fit kept on an object store (``--workdir s3://bucket/prefix``).

A resumable fit (:func:`wideml.runtime.checkpoint.resumable`) checkpoints into a
local folder as always. With a work folder on an object store, that folder is
also mirrored to the *work prefix* ``<workdir URL>/wideml-resume-KEY/``, so a
fit killed on one machine resumes on another that sees the bucket:

- ``.wideml-owner.json``: this run's owner record (signed with the user's
  owner key, :mod:`wideml.runtime.owner_key`), the first object written: a
  bucket refusing writes, wrong credentials or an unreachable endpoint stop
  the run there, in one sentence, before the first pass;
- ``blobs/SHA256-TAG``: the checkpoint files, each stored under its content's
  sha256 (a PUT is all-or-nothing, and a new version of a file is a new
  object, so the committed index below stays valid while the next is made),
  TAG signed with the owner key: a blob left by a run killed before its index
  named it is still provably wideml's, and is removed with the rest;
- ``index.json``: the committed state, written LAST at each sync: every file
  of the local folder (relative path, size, sha256, blob), signed. A sync
  either commits a consistent snapshot or nothing: the claims (lanes, pass
  results, fingerprint; files replaced atomically) are snapshotted first
  (hard links), then the p-sized arrays the passes wrote before those claims
  are copied and checked unchanged; if one was being written meanwhile, the
  sync commits nothing and the next one tries again.

On start, a fit that may resume downloads the committed state into the local
folder (unless the local folder already holds that state or a newer one of the
same run), each blob checked against its sha256, the index against its
signature and its prefix name: anything else under the prefix is foreign and
is never read, replaced or removed. When the fit succeeds (or is refused with
a :class:`~wideml.exceptions.WidemlError`), this run's objects are removed:
the blobs the index names, then the index, the owner record last.

Syncs run in the process that opened the mirror: under the threaded scheduler
at every lane checkpoint and pass result; on a dask.distributed cluster (whose
workers write the lane checkpoints into a shared folder), when each pass's
result is saved by the client. A failed upload is one warning on stderr; the
fit goes on and stays resumable from the last committed state.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from wideml.exceptions import StoreError, WidemlError
from wideml.runtime.checkpoint import Session
from wideml.runtime.owned_names import OWNER_FILE
from wideml.runtime.owner_key import sign, verify
from wideml.runtime.ownership import RUN_ID, owner_record
from wideml.storage.remote_write import RemoteTarget, is_remote, remote_target

#: Name prefix of a fit's work prefix under a remote work folder.
REMOTE_PREFIX = "wideml-resume-"
_INDEX = "index.json"
_BLOBS = "blobs"
_MARKER = "wideml-remote-checkpoints/1"
#: Local file (not mirrored: names starting with "." never are) recording the committed state the folder holds.
_SYNCED = ".wideml-remote-sync.json"
#: Files of the local folder that are claims (replaced atomically; they state what is done).
_CLAIMS = (".npz", ".json")


def work_prefix_url(workdir: str, key_text: str) -> str:
    """``<workdir>/wideml-resume-KEY``: KEY a digest of ``key_text`` (what names the fit: its output)."""
    key = hashlib.sha256(key_text.strip().rstrip("/").encode()).hexdigest()[:16]
    return f"{str(workdir).strip().rstrip('/')}/{REMOTE_PREFIX}{key}"


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _signature(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _local_files(folder: str) -> list[str]:
    """Relative paths of the mirrored files of a local checkpoint folder (no hidden names, no write-aside files)."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or ".tmp" in name:
                continue
            out.append(os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/"))
    return out


class _NoMirror:
    """What a mirror becomes in another process (a pickled task graph): syncs nothing, carries no settings."""

    def saved(self) -> None:
        return None


class RemoteMirror:
    """The work prefix of one resumable fit, mirroring the local checkpoint folder ``session.folder``.

    Parameters
    ----------
    url : str
        The work prefix (``s3://bucket/prefix/wideml-resume-KEY``).
    folder : str
        The local checkpoint folder (the session's).
    """

    def __init__(self, url: str, folder: str):
        self.url, self.folder = url.rstrip("/"), folder
        self.target: RemoteTarget = remote_target(self.url)
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._known: dict[str, tuple] = {}  # rel -> (stat signature, sha256, blob key) of what is uploaded
        self._committed: dict[str, dict] = {}  # the index this run last read or wrote: rel -> entry
        self._ours: set[str] = set()  # blob keys this run uploaded or found named by a signed index
        self._foreign: set[str] = set()
        self._warned = False

    def __reduce__(self):
        return (_NoMirror, ())

    # -- keys ---------------------------------------------------------------------------------
    def _key(self, rel: str) -> str:
        return posixpath.join(self.target.path, rel)

    def _call(self, doing: str, fn, *args, **kwargs):
        return self.target.call(doing, fn, *args, **kwargs)

    # -- start ----------------------------------------------------------------------------------
    def open(self) -> dict | None:
        """List the prefix, refuse foreign objects at wideml's own keys, write the owner record; the valid index or None.

        Raises
        ------
        StoreError
            Refused access, an unreachable endpoint, a missing bucket, or a foreign object named like the
            prefix's owner record or index (one sentence; nothing is written).
        """
        fs = self.target.fs
        with contextlib.suppress(Exception):
            fs.invalidate_cache()
        try:
            listed = self._call("list", fs.find, self.target.path)
        except FileNotFoundError:
            listed = []
        rels = {k.rstrip("/")[len(self.target.path) + 1:] for k in listed if k.rstrip("/").startswith(self.target.path + "/")}
        record = self._json(OWNER_FILE) if OWNER_FILE in rels else None
        if OWNER_FILE in rels and not (isinstance(record, dict) and verify(record) and record.get("kind") == "checkpoint"
                                       and record.get("name") == posixpath.basename(self.target.path)):
            raise StoreError(f"the work prefix {self.url} holds a {OWNER_FILE} that wideml cannot prove it wrote, so it will not "
                             "use or replace anything there: remove it yourself, or choose another --workdir.")
        index = self._json(_INDEX) if _INDEX in rels else None
        if _INDEX in rels and not self._valid_index(index):
            raise StoreError(f"the work prefix {self.url} holds an {_INDEX} that wideml cannot prove it wrote (unsigned, edited, "
                             "or signed with another owner key), so it will not use or replace it: remove it yourself, or "
                             "choose another --workdir.")
        self._call("write", fs.pipe_file, self._key(OWNER_FILE),
                   json.dumps(sign(owner_record(posixpath.basename(self.target.path), "checkpoint"))).encode())
        if index is not None:
            self._committed = dict(index["files"])
            self._ours |= {e["blob"] for e in self._committed.values()}
        self._ours |= self._proven_blobs()
        self._foreign = {r for r in rels if r not in (OWNER_FILE, _INDEX) and self._key(r) not in self._ours}
        return index

    def _json(self, rel: str) -> Any:
        try:
            data = self._call("read", self.target.fs.cat_file, self._key(rel))
        except FileNotFoundError:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return None

    def _valid_index(self, index: Any) -> bool:
        if not (isinstance(index, dict) and index.get("wideml") == _MARKER and verify(index)):
            return False
        if index.get("prefix") != posixpath.basename(self.target.path) or not isinstance(index.get("files"), dict):
            return False
        base = self._key(_BLOBS) + "/"
        return all(isinstance(e, dict) and str(e.get("blob", "")).startswith(base) for e in index["files"].values())

    def download(self, index: dict) -> bool:
        """Replace the local folder's checkpoints by the committed state ``index``; False (nothing kept) if a blob fails its check."""
        scratch = tempfile.mkdtemp(prefix=".wideml-remote-get-", dir=self.folder)
        try:
            for rel, entry in index["files"].items():
                dest = os.path.join(scratch, *rel.split("/"))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                try:
                    self._call("read", self.target.fs.get_file, entry["blob"], dest)
                except (FileNotFoundError, StoreError):
                    return False
                if os.path.getsize(dest) != entry.get("size") or _sha256(dest) != entry.get("sha256"):
                    return False
            for name in os.listdir(self.folder):  # the session's own files, never its owner record
                path = os.path.join(self.folder, name)
                if name.startswith(".wideml-owner") or name.startswith("owner") or path == scratch:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.remove(path)
            for name in os.listdir(scratch):
                os.replace(os.path.join(scratch, name), os.path.join(self.folder, name))
            for rel, entry in index["files"].items():
                self._known[rel] = (_signature(os.path.join(self.folder, *rel.split("/"))), entry["sha256"], entry["blob"])
            self._note_synced(index["generation"])
            return True
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def local_generation(self) -> str | None:
        try:
            with open(os.path.join(self.folder, _SYNCED), encoding="utf-8") as fh:
                return json.load(fh).get("generation")
        except (OSError, ValueError, AttributeError):
            return None

    def _note_synced(self, generation: str) -> None:
        tmp = os.path.join(self.folder, f"{_SYNCED}.tmp-{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"generation": generation, "url": self.url}, fh)
        os.replace(tmp, os.path.join(self.folder, _SYNCED))

    # -- sync -----------------------------------------------------------------------------------
    def saved(self) -> None:
        """After a checkpoint was saved locally: commit the local folder's state to the prefix (see the module's docstring)."""
        if os.getpid() != self.pid:
            return
        with self._lock:
            try:
                self._sync()
            except Exception as exc:  # noqa: BLE001 - the fit goes on; the prefix keeps its last committed state
                if not self._warned:
                    self._warned = True
                    print(f"wideml: warning: could not upload a checkpoint to {self.url} ({str(exc).splitlines()[0][:200]}); "
                          "the fit goes on, resumable from the object store only up to the last upload.", file=sys.stderr, flush=True)

    def _sync(self) -> None:
        snap = tempfile.mkdtemp(prefix=".wideml-remote-put-", dir=self.folder)
        try:
            claims = [r for r in _local_files(self.folder) if r.endswith(_CLAIMS) and not r.startswith("fitted.zarr/")]
            staged: dict[str, tuple[str, tuple]] = {}  # rel -> (snapshot path, stat signature)
            for i, rel in enumerate(claims):  # first: the claims as they are now (replaced atomically: a link is a snapshot)
                link = os.path.join(snap, f"claim-{i}")
                try:
                    os.link(os.path.join(self.folder, *rel.split("/")), link)
                except OSError:
                    continue  # replaced or removed this moment: it is in the next sync
                staged[rel] = (link, _signature(link))
            rels = _local_files(self.folder)  # listed after the claims' snapshot: every file written before them is here
            for i, rel in enumerate(r for r in rels if r not in claims):
                path = os.path.join(self.folder, *rel.split("/"))  # then what the passes wrote before those claims
                try:
                    before = _signature(path)
                    if self._known.get(rel, (None,))[0] == before:
                        staged[rel] = ("", before)  # unchanged since its upload
                        continue
                    copy = os.path.join(snap, f"data-{i}")
                    shutil.copyfile(path, copy)
                    if _signature(path) != before or os.path.getsize(copy) != before[0]:
                        return  # being written right now: commit nothing this time
                except FileNotFoundError:
                    continue
                staged[rel] = (copy, before)
            files: dict[str, dict] = {}
            for rel, (copy, sig) in staged.items():
                known = self._known.get(rel)
                if known is not None and known[0] == sig:
                    files[rel] = {"size": sig[0], "sha256": known[1], "blob": known[2]}
                    continue
                sha, size = _sha256(copy), os.path.getsize(copy)
                blob = self._key(f"{_BLOBS}/{self._blob_name(sha)}")
                if blob[len(self.target.path) + 1:] in self._foreign:
                    blob = f"{blob}.{RUN_ID}"
                if blob not in self._ours:
                    self._call("upload to", self.target.fs.put_file, copy, blob)
                    self._ours.add(blob)
                files[rel] = {"size": size, "sha256": sha, "blob": blob}
                self._known[rel] = (sig, sha, blob)
            generation = uuid.uuid4().hex
            index = sign({"wideml": _MARKER, "prefix": posixpath.basename(self.target.path), "run_id": RUN_ID,
                          "generation": generation, "files": files})
            self._call("write", self.target.fs.pipe_file, self._key(_INDEX), json.dumps(index).encode())
            self._note_synced(generation)
            stale = {e["blob"] for e in self._committed.values()} - {e["blob"] for e in files.values()}
            self._committed = files
            self._remove_blobs(stale)
        finally:
            shutil.rmtree(snap, ignore_errors=True)

    def _blob_name(self, sha: str) -> str:
        """``SHA256-TAG``, TAG signed with the owner key over the digest and the prefix: a name only this user makes."""
        tag = sign({"wideml-blob": sha, "prefix": posixpath.basename(self.target.path)}).get("signature")
        return f"{sha}-{tag[:32]}" if tag else sha

    def _proven_blobs(self) -> set[str]:
        """Blobs under the prefix whose names this user's owner key made (left by a run killed before its index named them)."""
        try:
            listed = self._call("list", self.target.fs.find, self._key(_BLOBS))
        except FileNotFoundError:
            return set()
        out = set()
        for key in listed:
            name = posixpath.basename(key.rstrip("/"))
            sha = name.split("-", 1)[0]
            if "-" in name and len(sha) == 64 and self._blob_name(sha) == name:
                out.add(self._key(f"{_BLOBS}/{name}"))
        return out

    def _remove_blobs(self, blobs) -> None:
        for blob in sorted(blobs):
            if blob in self._ours:
                with contextlib.suppress(FileNotFoundError):
                    self._call("remove", self.target.fs.rm_file, blob)
                self._ours.discard(blob)

    def remove(self) -> None:
        """Remove this run's objects from the prefix: its blobs, then the index, the owner record last; nothing foreign."""
        if os.getpid() != self.pid:
            return
        with self._lock:
            self._ours |= self._proven_blobs()
            self._remove_blobs(set(self._ours) | {e["blob"] for e in self._committed.values()})
            self._committed = {}
            for rel in (_INDEX, OWNER_FILE):
                with contextlib.suppress(FileNotFoundError):
                    self._call("remove", self.target.fs.rm_file, self._key(rel))


@contextlib.contextmanager
def remote_checkpoints(session: Session | None, url: str | None, resume: bool = True) -> Iterator[RemoteMirror | None]:
    """Mirror ``session``'s checkpoints to the work prefix ``url`` (an object-store URL) for the block's duration.

    Before the block, a committed state on the prefix is downloaded into the
    session's folder when the fit may resume (``resume``) and the folder does
    not already hold it (or a newer state of the same run); the session then
    compares fingerprints as for local checkpoints. After a success, or a
    :class:`~wideml.exceptions.WidemlError`, this run's objects are removed; after
    an interrupt or another failure they are kept for the rerun.

    Parameters
    ----------
    session : Session or None
        The resumable fit's session (None: checkpoints are off, nothing is mirrored).
    url : str or None
        The work prefix (:func:`work_prefix_url`); None or a local path: nothing is mirrored.
    resume : bool, default True
        False (``--no-resume``): nothing is downloaded.

    Yields
    ------
    RemoteMirror or None
    """
    if session is None or url is None or not is_remote(url):
        yield None
        return
    mirror = RemoteMirror(url, session.folder)
    index = mirror.open()
    if index is not None and resume and mirror.local_generation() != index.get("generation"):
        if not mirror.download(index):
            print(f"not resuming from the checkpoint at {url}: an object of it is missing or fails its checksum; "
                  "starting over.", file=sys.stderr, flush=True)
    session.mirror = mirror
    keep = False
    try:
        yield mirror
    except BaseException as exc:
        keep = not isinstance(exc, (WidemlError, BrokenPipeError))
        raise
    finally:
        session.mirror = None
        if not keep:
            with contextlib.suppress(Exception):
                mirror.remove()


__all__ = ["REMOTE_PREFIX", "RemoteMirror", "remote_checkpoints", "work_prefix_url"]
