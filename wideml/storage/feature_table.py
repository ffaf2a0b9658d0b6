"""Feature tables: what each feature is, for spaces that are not voxel grids (genomes, surfaces).

A store ingested from PLINK or VCF Zarr keeps each variant's chromosome,
position and alleles; one ingested from CIFTI-2 or GIFTI keeps each
grayordinate's brain structure and vertex (or voxel) index. These are
p-long columns plus a small JSON description, a :class:`FeatureTable` whose
``kind`` says which maps writer puts p-sized results back into that space
(``wideml.maps.spaces``). NIfTI volumes keep their
:class:`~wideml.storage.spatial.SpatialReference` instead.

On disk (feature stores and model files alike):

- the wideml attrs hold ``"feature_table"``: ``{"kind", "info", "n_features",
  "columns": {name: dtype}, "sha256", "columns_sha256"}`` (:meth:`FeatureTable.to_attrs`);
- the group ``feature_table`` holds one 1-D array per column, of length
  ``n_features`` (strings as variable-length text).

:func:`read_feature_table` checks the columns against the record (names,
dtypes, lengths and the sha256 of their contents), so a model or store whose
table was edited or truncated is refused in one sentence.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wideml.exceptions import StoreError

#: Key of the table's record in the wideml attrs, and name of the group holding its columns.
TABLE_ATTR = "feature_table"
TABLE_GROUP = "feature_table"
#: Values per chunk of each column.
COLUMN_CHUNK = 1 << 20
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KINDS = "biuf"  # bool, int, unsigned, float; plus unicode text ("U")


def _column(name: str, values: Any, n: int | None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind in "SO":
        arr = np.asarray([v.decode() if isinstance(v, bytes) else str(v) for v in arr.ravel()], dtype=str).reshape(arr.shape)
    if arr.ndim != 1:
        raise ValueError(f"feature-table column {name!r} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind not in _KINDS + "U":
        raise ValueError(f"feature-table column {name!r} has dtype {arr.dtype}; give bool, integers, floats or text")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"feature-table column {name!r} has {arr.shape[0]} values, expected {n}")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        arr = arr.astype(np.float64)
    return arr


def _dtype_name(arr: np.ndarray) -> str:
    return "str" if arr.dtype.kind == "U" else str(arr.dtype)


@dataclass(frozen=True, eq=False)
class FeatureTable:
    """Per-feature columns and a small description of a non-grid feature space.

    Attributes
    ----------
    kind : str
        ``"genome"``, ``"cifti"``, ``"gifti"`` ...: the maps writer that puts
        p-sized results back into this space.
    columns : dict of str to ndarray of shape (n_features,)
        bool, int64, float64 or text; names are identifiers (``chrom``, ``pos``).
    info : dict
        Small, JSON-serialisable, kind-specific (e.g. a CIFTI brain-model
        axis's structures with their vertex counts, volume shape and affine).
    """

    kind: str
    columns: dict[str, np.ndarray]
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.kind, str) or not _NAME.match(self.kind):
            raise ValueError(f"feature-table kind {self.kind!r} must be an identifier")
        if not self.columns:
            raise ValueError("a feature table needs at least one column")
        cols, n = {}, None
        for name, values in self.columns.items():
            if not isinstance(name, str) or not _NAME.match(name):
                raise ValueError(f"feature-table column name {name!r} must be an identifier")
            cols[name] = _column(name, values, n)
            n = cols[name].shape[0]
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "info", _jsonable(dict(self.info)))

    @property
    def n_features(self) -> int:
        return int(next(iter(self.columns.values())).shape[0])

    def sha256(self) -> str:
        """Digest of the kind, info, and every column's name, dtype and values (equal tables, equal digests)."""
        import json

        digest = hashlib.sha256(json.dumps([self.kind, self.info], sort_keys=True).encode())
        for name in sorted(self.columns):
            arr = self.columns[name]
            digest.update(f"|{name}:{_dtype_name(arr)}:{arr.shape[0]}|".encode())
            if arr.dtype.kind == "U":
                for start in range(0, arr.shape[0], COLUMN_CHUNK):
                    digest.update("\x00".join(arr[start:start + COLUMN_CHUNK].tolist()).encode("utf-8", "surrogatepass"))
                    digest.update(b"\x01")
            else:
                digest.update(np.ascontiguousarray(arr).tobytes())
        return digest.hexdigest()

    def columns_sha256(self) -> str:
        """Digest of the kind and the columns only (not ``info``): what says which features these are.

        Two stores of the same variants (same ids, positions and counted
        alleles) have equal digests even when their ``info`` differs (e.g. the
        number of imputed calls); a flipped allele or another genome build
        changes it. Feature layouts compare it (:mod:`wideml.storage.layout`).
        """
        digest = hashlib.sha256(self.kind.encode())
        digest.update(FeatureTable(self.kind, self.columns).sha256().encode())
        return digest.hexdigest()

    def to_attrs(self) -> dict:
        """The JSON record kept in the wideml attrs (the columns go to arrays)."""
        return {"kind": self.kind, "info": self.info, "n_features": self.n_features,
                "columns": {name: _dtype_name(arr) for name, arr in self.columns.items()}, "sha256": self.sha256(),
                "columns_sha256": self.columns_sha256()}

    def describe(self) -> dict:
        """A short description for ``wideml info``: kind, feature count, column names, info keys."""
        return {"kind": self.kind, "n_features": self.n_features, "columns": list(self.columns),
                **{k: v for k, v in self.info.items() if isinstance(v, (str, int, float, bool))}}


def _jsonable(value):
    import json

    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise ValueError("feature-table info must be JSON-serialisable (plain dicts, lists, numbers, text)") from None
    return value


def write_feature_table(handle, table: FeatureTable) -> dict:
    """Write ``table``'s columns into an open zarr group or h5py file; return the attrs entry to record.

    The caller puts the returned dict under :data:`TABLE_ATTR` in its wideml attrs.
    """
    if hasattr(handle, "create_dataset") and not hasattr(handle, "create_array"):  # h5py
        import h5py

        group = handle.create_group(TABLE_GROUP)
        for name, arr in table.columns.items():
            data = arr.astype(h5py.string_dtype()) if arr.dtype.kind == "U" else arr
            group.create_dataset(name, data=data, chunks=(max(1, min(COLUMN_CHUNK, arr.shape[0])),), compression="gzip")
    else:
        group = handle.create_group(TABLE_GROUP)
        for name, arr in table.columns.items():
            z = group.create_array(name, shape=arr.shape, dtype=str if arr.dtype.kind == "U" else arr.dtype,
                                   chunks=(max(1, min(COLUMN_CHUNK, arr.shape[0])),), config={"write_empty_chunks": True})
            for start in range(0, arr.shape[0], COLUMN_CHUNK):
                z[start:start + COLUMN_CHUNK] = arr[start:start + COLUMN_CHUNK]
    return table.to_attrs()


def read_feature_table(handle, attrs: dict, n_features: int | None, where: str) -> FeatureTable | None:
    """The feature table of an open zarr group / h5py file with wideml ``attrs``, checked; None when it has none.

    Parameters
    ----------
    handle : zarr.Group or h5py.File
    attrs : dict
        Its wideml attrs.
    n_features : int or None
        The store's or model's number of features, when known.
    where : str
        How messages name the store or model ("the store at '/data/g.zarr'").

    Raises
    ------
    StoreError
        One sentence: a record without its columns, columns of other names,
        dtypes or lengths, or contents whose sha256 differs from the record.
    """
    doc = attrs.get(TABLE_ATTR)
    if doc is None:
        return None
    bad = f"{where} has a damaged feature table"
    if not isinstance(doc, dict) or not isinstance(doc.get("columns"), dict) or not isinstance(doc.get("kind"), str):
        raise StoreError(f"{bad} (its record is malformed); recreate it.")
    if n_features is not None and doc.get("n_features") != n_features:
        raise StoreError(f"{bad}: it describes {doc.get('n_features')!r} features but X has {n_features}; recreate it.")
    try:
        group = handle[TABLE_GROUP]
    except KeyError:
        raise StoreError(f"{bad}: it records one but has no '{TABLE_GROUP}' group; recreate it.") from None
    columns = {}
    for name, dtype in doc["columns"].items():
        try:
            raw = np.asarray(group[name][...])
        except KeyError:
            raise StoreError(f"{bad}: its column {name!r} is missing; recreate it.") from None
        except Exception as exc:  # noqa: BLE001 - corrupt chunks surface as many types
            raise StoreError(f"{bad}: its column {name!r} cannot be read ({type(exc).__name__}); recreate it.") from None
        if dtype == "str":
            raw = np.asarray([v.decode() if isinstance(v, bytes) else str(v) for v in raw.ravel()], dtype=str)
        columns[name] = raw
    extra = sorted(set(group.keys()) - set(columns))
    if extra:
        raise StoreError(f"{bad}: it holds the unrecorded column {extra[0]!r}; recreate it.")
    try:
        table = FeatureTable(doc["kind"], columns, doc.get("info") or {})
    except ValueError as exc:
        raise StoreError(f"{bad} ({exc}); recreate it.") from None
    record = table.to_attrs()
    if (table.n_features != doc.get("n_features") or record["columns"] != doc["columns"] or record["sha256"] != doc.get("sha256")
            or record["columns_sha256"] != doc.get("columns_sha256")):
        raise StoreError(f"{bad}: its columns differ from what it recorded (sha256 mismatch); recreate it.")
    return table


def check_table_record(attrs: dict, n_features: int, where: str) -> None:
    """From metadata only: a recorded feature table counts ``n_features``.

    Raises
    ------
    StoreError
        Naming ``where`` when the record and X disagree.
    """
    doc = attrs.get(TABLE_ATTR)
    if doc is None:
        return
    counted = doc.get("n_features") if isinstance(doc, dict) else None
    if counted != n_features:
        raise StoreError(f"{where} has a feature table for {counted!r} features but X has {n_features}; "
                         "it is inconsistent — recreate it with `wideml ingest`.")
