"""A cheap fingerprint of files on disk: names, sizes and modification times, never their contents."""

from __future__ import annotations

import hashlib
import os


def files_digest(top: str) -> str:
    """sha256 hex digest of (name relative to ``top``, size, mtime in ns) of every file under ``top``.

    For a file ``top``, of its size and mtime only. Files that vanish while
    listed are skipped. Reading the files changes nothing here; rewriting,
    touching, adding or removing one does.
    """
    h = hashlib.sha256()
    if os.path.isdir(top):
        for root, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                h.update(f"{os.path.relpath(full, top)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    else:
        st = os.stat(top)
        h.update(f"{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()


__all__ = ["files_digest"]
