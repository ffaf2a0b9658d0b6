"""Reading one zarr v3 chunk file straight from disk: its codec chain, its crc32c trailer, its decode.

:class:`wideml.storage.reader.ZarrReader` reads whole stored chunks this way
when the chain is ``bytes`` [+ one of zstd, gzip, blosc] [+ ``crc32c``];
anything else is read through zarr. The crc32c trailer is zarr's: the 4-byte
little-endian CRC32C (Castagnoli) of the bytes before it, computed by
``google-crc32c`` (a dependency of zarr itself, so none is added).
"""

from __future__ import annotations

import numcodecs
import numpy as np

#: zarr v3 compressor codec name -> numcodecs codec class that decodes its chunk files.
_DECODERS = {"zstd": "Zstd", "gzip": "GZip", "blosc": "Blosc"}


def chunk_decoder(codecs: list):
    """(byte order, numcodecs decoder or None, crc32c trailer?) for a chain ``bytes`` [+ one compressor] [+ crc32c], else None.

    Only chains whose chunk files are the chunk's raw bytes, or those bytes
    compressed once by zstd, gzip or blosc, optionally followed by the 4-byte
    crc32c checksum of the bytes before it, qualify; anything else (transpose,
    sharding, filters, several compressors) is left to zarr.
    """
    codecs = list(codecs or [])
    crc = bool(codecs) and codecs[-1].get("name") == "crc32c"
    if crc:
        codecs = codecs[:-1]
    if not codecs or codecs[0].get("name") != "bytes" or len(codecs) > 2:
        return None
    endian = codecs[0].get("configuration", {}).get("endian", "little")
    if len(codecs) == 1:
        return endian, None, crc
    cls = _DECODERS.get(codecs[1].get("name"))
    if cls is None:
        return None
    return endian, getattr(numcodecs, cls)(), crc


def crc32c_matches(payload, trailer: bytes) -> bool:
    """Whether ``trailer`` is the little-endian crc32c of ``payload`` (any contiguous buffer), as zarr's ``crc32c`` codec writes it."""
    import google_crc32c

    data = np.frombuffer(payload, dtype=np.uint8)
    return int(google_crc32c.value(data)).to_bytes(4, "little") == bytes(trailer)


class ChecksumMismatch(Exception):
    """A chunk file's crc32c trailer does not match its contents."""


def load_chunk_file(fname: str, shape, raw, alloc=None):
    """One stored chunk from its file, into ``alloc(shape, dtype)`` when given; None if the file does not fit.

    ``raw`` is a reader's ``(dtype, fill, decoder, crc)``. Raises
    FileNotFoundError for a missing file and :class:`ChecksumMismatch` when
    the crc32c trailer does not match (the checksum is of the bytes as stored,
    so it is verified before decoding).
    """
    dtype, _, decoder, crc = raw
    chunk = alloc(shape, dtype) if alloc is not None else np.empty(shape, dtype=dtype)
    if decoder is None:
        with open(fname, "rb", buffering=0) as f:
            if f.readinto(memoryview(chunk).cast("B")) != chunk.nbytes:
                return None
            tail = f.read(5) if crc else f.read(1)
        if crc:
            if len(tail) != 4:
                return None
            if not crc32c_matches(chunk.reshape(-1).view(np.uint8), tail):
                raise ChecksumMismatch(fname)
        elif tail:
            return None
        return chunk
    with open(fname, "rb") as f:
        data = f.read()
    if crc:
        if len(data) < 4:
            return None
        payload = memoryview(data)[:-4]
        if not crc32c_matches(payload, data[-4:]):
            raise ChecksumMismatch(fname)
        data = payload
    try:
        decoder.decode(data, out=chunk)
    except Exception:  # corrupt or of another size (each codec raises its own kind): zarr reads it and reports
        return None
    return chunk
