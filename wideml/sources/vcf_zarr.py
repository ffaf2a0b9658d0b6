"""VCF Zarr stores (bio2zarr's layout, zarr v2 or v3), recognised by their ``call_genotype`` array.

The arrays read (those of the VCF Zarr specification):

* ``call_genotype`` (variants, samples, ploidy), signed integers: allele
  indices, -1 a missing allele, -2 the fill of a lower-ploidy call;
* ``sample_id`` (samples), ``variant_position`` (variants),
  ``variant_contig`` (variants: an index into ``contig_id``),
  ``variant_allele`` (variants, alleles: REF then ALTs, "" padding), and
  optionally ``variant_id`` (with ``variant_id_mask``; ``.`` means none).

X[s, v] is the number of non-reference alleles (index > 0, each ALT counting
1, summed over the ploidy) as int8. A call with a missing allele (-1), or
with only fill, is missing and follows the policy of
:mod:`wideml.sources.genotypes`; any other negative value, and an allele
index beyond the variant's alleles in ``variant_allele``, is refused naming
the variant and sample (both checked block by block while copying). The
feature table names ``allele_1`` the counted (ALT) alleles, comma-joined,
``.`` when there are none, and ``allele_2`` the REF. Feature ids are
``variant_id``, else ``chrom:pos:ref:alt``.

Labels come from ``labels`` only (VCF Zarr holds no phenotype): a two-column
labels file is matched to ``sample_id``. Every array read is checked for
missing chunk files first: zarr reads a missing chunk as the array's fill
value, which is right only when the writer left out chunks equal to it
(zarr-python 3 does by default), so a missing chunk is refused naming the
fix, ``missing_chunks_are_fill=True`` (``--missing-chunks-are-fill``); a
chunk that does not decode (a damaged file) is refused naming the array and
the chunk (:func:`read_checked`).
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import IngestOptions
from wideml.sources.genotypes import (
    GenotypeSource,
    Namer,
    check_impute,
    count_missing,
    fill_variant_ids,
    finish_block,
    genome_table,
    scan_block,
    select_samples,
    value_dtype,
)
from wideml.sources.locations import Location
from wideml.storage.integrity import check_layout_complete, chunk_layout, chunk_path, missing_chunk_keys
from wideml.storage.label_cells import check_unique_ids

GENOTYPES = "call_genotype"
#: Arrays a VCF Zarr store must hold besides ``call_genotype``.
REQUIRED = ("sample_id", "variant_position", "variant_contig", "contig_id", "variant_allele")


def _meta(path: Path) -> dict | None:
    for name in ("zarr.json", ".zarray"):
        if (path / name).is_file():
            try:
                return json.loads((path / name).read_text())
            except (OSError, ValueError):
                return {}
    return None


def is_vcf_zarr(location: Location) -> bool:
    """A folder holding a zarr array ``call_genotype`` (checked before plain zarr folders)."""
    return location.path is not None and location.path.is_dir() and _meta(location.path / GENOTYPES) is not None


def _array(root: Path, name: str, what: str, fill: bool = False):
    """The zarr array ``name`` of the store, with no chunk file missing unless ``fill`` (missing chunks are the fill value)."""
    import zarr

    meta = _meta(root / name)
    if meta is None:
        raise WidemlError(f"VCF Zarr store {what} has no array {name!r}; give a store written by bio2zarr (vcf2zarr).")
    layout = chunk_layout(root / name, meta) if meta and not fill else None
    if layout is not None:
        missing = missing_chunk_keys(layout)
        if missing:
            raise WidemlError(f"the array {name} of the VCF Zarr store {what} has {len(missing)} missing chunk file(s) (the first "
                              f"{missing[0]}), which zarr reads as the fill value {meta.get('fill_value')!r}; if the writer left out "
                              "chunks equal to it (zarr-python 3 does by default), ingest with --missing-chunks-are-fill "
                              "(missing_chunks_are_fill=True), else restore the store from a copy.")
        check_layout_complete(layout, f"the array {name} of the VCF Zarr store {what}")
    try:
        return zarr.open_array(str(root / name), mode="r")
    except Exception:  # noqa: BLE001 - corrupt metadata surfaces as several errors
        raise WidemlError(f"the array {name!r} of the VCF Zarr store {what} is unreadable; write the store again.") from None


def _values(root: Path, name: str, what: str, fill: bool = False) -> np.ndarray:
    """All values of the array ``name`` (a small, per-sample or per-variant array), read with :func:`read_checked`."""
    return read_checked(_array(root, name, what, fill), ..., root, name, what)


def read_checked(arr, index, root: str | os.PathLike, name: str, what: str) -> np.ndarray:
    """``arr[index]`` as numpy; a chunk that does not decode is refused naming the array and the chunk.

    Parameters
    ----------
    arr : zarr.Array
        The array ``name`` of the store at ``root``.
    index : Ellipsis or tuple of slices
    root : path-like
    name : str
    what : str
        How messages name the store.
    """
    try:
        return np.asarray(arr[index])
    except WidemlError:
        raise
    except Exception as exc:  # noqa: BLE001 - codecs raise RuntimeError, ValueError ... for damaged bytes
        raise _undecodable(arr, index, Path(root), name, what, exc) from None


def _undecodable(arr, index, root: Path, name: str, what: str, exc: Exception) -> WidemlError:
    """The sentence for a read of ``arr[index]`` that failed: the first chunk of the region that does not decode."""
    shape, chunks = tuple(int(s) for s in arr.shape), tuple(int(c) for c in arr.chunks)
    region = [slice(None)] * len(shape) if index is Ellipsis else list(index) + [slice(None)] * (len(shape) - len(index))
    spans = [range(*sl.indices(n)) for sl, n in zip(region, shape)]
    keys = itertools.product(*(range(r.start // c, -(-r.stop // c)) if len(r) else range(0) for r, c in zip(spans, chunks)))
    reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}"
    for key in keys:
        box = tuple(slice(k * c, min((k + 1) * c, n)) for k, c, n in zip(key, chunks, shape))
        try:
            arr[box]
        except Exception as bad:  # noqa: BLE001 - as above
            reason = f"{type(bad).__name__}: {str(bad).splitlines()[0] if str(bad) else 'no detail'}"
            meta = _meta(root / name) or {}
            layout = chunk_layout(root / name, meta) if meta else None
            file = ""
            if layout is not None:
                at = tuple(b.start // g for b, g in zip(box, layout.grid))
                file = f" (file {name}/{os.path.relpath(chunk_path(layout, at), root / name)})"
            return WidemlError(f"chunk {key}{file} of the array {name} of the VCF Zarr store {what} cannot be decoded "
                               f"({reason[:160].rstrip('.')}); the store is damaged — restore it from a copy or write it again.")
    return WidemlError(f"the array {name} of the VCF Zarr store {what} cannot be read ({reason[:160].rstrip('.')}); check the store, "
                       "or write it again.")


def _text(values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind == "T":  # numpy's StringDType (zarr v3 strings)
        arr = arr.astype(object)
    if arr.size == 0:
        return arr.astype(str) if arr.dtype.kind != "O" else np.zeros(arr.shape, dtype=str)
    if arr.dtype.kind in "SO":
        arr = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else ("" if v is None else str(v)), otypes=[str])(arr)
    return arr.astype(str)


def _alleles(alleles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(REF, comma-joined ALTs or '.') of a (variants, alleles) text array."""
    ref = alleles[:, 0]
    alts = [",".join(a for a in row[1:] if a) or "." for row in alleles]
    return ref, np.array(alts, dtype=str)


def dosage_of_calls(calls: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Dosages and missing calls of a ``call_genotype`` block.

    Parameters
    ----------
    calls : ndarray of signed int, shape (w, m, ploidy)
    what : str
        How messages name the store.

    Returns
    -------
    dosage : ndarray of int8, shape (m, w)
        Non-reference alleles per call.
    missing : ndarray of bool, shape (m, w)
        A -1 allele, or only -2 fill.
    """
    if calls.size and calls.min() < -2:
        raise WidemlError(f"call_genotype of the VCF Zarr store {what} holds {int(calls.min())}, which is neither an allele index "
                          "nor -1 (missing) or -2 (fill); write the store again with bio2zarr.")
    dosage = (calls > 0).sum(axis=2, dtype=np.int8).T
    missing = ((calls == -1).any(axis=2) | (calls < 0).all(axis=2)).T
    return dosage, missing


class VczNamer(Namer):
    """Names variants and samples from the store's arrays, read only for a message."""

    def __init__(self, root: str):
        self.root = root

    def _read(self, name: str, index):
        import zarr

        return read_checked(zarr.open_array(str(Path(self.root) / name), mode="r"), index, self.root, name, repr(self.root))

    def variant(self, j: int) -> str:
        if _meta(Path(self.root) / "variant_id") is not None:
            vid = str(_text([self._read("variant_id", j)])[0])
            if vid not in (".", ""):
                return vid
        chrom = str(_text([self._read("contig_id", int(self._read("variant_contig", j)))])[0])
        ref, alt = _alleles(_text(self._read("variant_allele", slice(j, j + 1))))
        return f"{chrom}:{int(self._read('variant_position', j))}:{ref[0]}:{alt[0]}"

    def sample(self, i: int) -> str:
        return str(_text([self._read("sample_id", i)])[0])


class VczReader:
    """Blocks ``[r0:r1, c0:c1]`` of stored samples × variants of ``call_genotype``, as dosages after the missing-call policy.

    Picklable: the array is opened lazily in the process that reads; ``rows`` are the stored samples' positions.
    """

    def __init__(self, root: str, n_file: int, n_variants: int, rows: np.ndarray | None, impute: str):
        self.root, self.n_file, self.n_variants = root, int(n_file), int(n_variants)
        self.rows, self.impute = rows, impute
        self.dtype = value_dtype(impute)
        self.n = self.n_file if rows is None else len(rows)
        self._arr = None

    def __getstate__(self):
        return {**self.__dict__, "_arr": None}

    def _calls(self, lo: int, hi: int, c0: int, c1: int) -> np.ndarray:
        if self._arr is None:
            import zarr

            self._arr = zarr.open_array(str(Path(self.root) / GENOTYPES), mode="r")
        if self.rows is None:
            calls = self._read((slice(c0, c1), slice(lo, hi), slice(None)))
            self._check_alleles(calls, c0, np.arange(lo, hi))
            return calls
        want = self.rows[lo:hi]
        if not len(want):
            return np.empty((c1 - c0, 0, self._arr.shape[2]), dtype=self._arr.dtype)
        span = self._read((slice(c0, c1), slice(int(want[0]), int(want[-1]) + 1), slice(None)))[:, want - want[0], :]
        self._check_alleles(span, c0, want)
        return span

    def _read(self, index) -> np.ndarray:
        return read_checked(self._arr, index, self.root, GENOTYPES, repr(self.root))

    def _check_alleles(self, calls: np.ndarray, c0: int, samples: np.ndarray) -> None:
        """Refuse an allele index beyond its variant's alleles (``variant_allele``: REF, ALTs, "" padding)."""
        import zarr

        if not calls.size or int(calls.max()) < 1:  # REF only
            return
        text = _text(read_checked(zarr.open_array(str(Path(self.root) / "variant_allele"), mode="r"),
                                  (slice(c0, c0 + calls.shape[0]), slice(None)), self.root, "variant_allele", repr(self.root)))
        named = text != ""
        count = np.where(named.any(axis=1), named.shape[1] - np.argmax(named[:, ::-1], axis=1), 0)
        bad = calls >= count[:, None, None]
        if bad.any():
            j, i, k = (int(v) for v in np.argwhere(bad)[0])
            namer = VczNamer(self.root)
            raise WidemlError(f"call_genotype of the VCF Zarr store {self.root!r} names allele index {int(calls[j, i, k])} for "
                              f"variant {namer.variant(c0 + j)!r} (sample {namer.sample(int(samples[i]))!r}), which has "
                              f"{int(count[j])} alleles in variant_allele; the store is inconsistent — write it again.")

    def __getitem__(self, key) -> np.ndarray:
        rs, cs = key
        r0, r1, _ = rs.indices(self.n)
        c0, c1, _ = cs.indices(self.n_variants)
        lo, hi = (0, self.n) if self.impute == "mean" else (r0, r1)  # a mean needs every stored sample
        dosage, missing = dosage_of_calls(self._calls(lo, hi, c0, c1), repr(self.root))
        rows = self.rows[lo:hi] if self.rows is not None else (np.arange(lo, hi) if lo else None)
        out = finish_block(dosage, missing, self.impute, c0, rows, VczNamer(self.root), repr(self.root))
        return out[r0 - lo:r1 - lo]

    def missing_count(self, c0: int, c1: int) -> int:
        """Missing calls of variants ``c0 .. c1`` among the stored samples."""
        return int(np.count_nonzero(dosage_of_calls(self._calls(0, self.n, c0, c1), repr(self.root))[1]))


class VcfZarrSource(GenotypeSource):
    """A VCF Zarr store (a folder holding ``call_genotype``)."""

    kind = "vcf_zarr"

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> VcfZarrSource:
        root = location.path
        what = repr(str(root))
        impute = check_impute(options.impute)
        fill = options.missing_chunks_are_fill
        calls = _array(root, GENOTYPES, what, fill)
        if calls.ndim != 3 or np.dtype(calls.dtype).kind != "i":
            raise WidemlError(f"call_genotype of the VCF Zarr store {what} has shape {calls.shape} and dtype {calls.dtype}; "
                              "it must be (variants, samples, ploidy) signed integers — write the store again with bio2zarr.")
        m, n, _ = (int(s) for s in calls.shape)
        if m < 1 or n < 1:
            raise WidemlError(f"the VCF Zarr store {what} holds {m} variants and {n} samples; give at least one of each.")
        arrays = {name: _values(root, name, what, fill) for name in REQUIRED}
        for name, length in (("sample_id", n), ("variant_position", m), ("variant_contig", m), ("variant_allele", m)):
            if np.shape(arrays[name])[0] != length:
                raise WidemlError(f"the array {name} of the VCF Zarr store {what} has {np.shape(arrays[name])[0]} entries but "
                                  f"call_genotype has {length}; the store is inconsistent — write it again.")
        ids = _text(arrays["sample_id"])
        check_unique_ids(ids, f"the sample_id array of the VCF Zarr store {what}")
        contigs = _text(arrays["contig_id"])
        index = np.asarray(arrays["variant_contig"]).astype(np.int64)
        if index.min() < 0 or index.max() >= len(contigs):
            raise WidemlError(f"variant_contig of the VCF Zarr store {what} points outside contig_id ({len(contigs)} contigs); "
                              "the store is inconsistent — write it again.")
        chrom, pos = contigs[index], np.asarray(arrays["variant_position"]).astype(np.int64)
        alleles = _text(arrays["variant_allele"])
        ref, alt = _alleles(alleles.reshape(m, -1))
        vids, absent = np.full(m, ".", dtype=object), np.ones(m, dtype=bool)
        if _meta(root / "variant_id") is not None:
            vids = _text(_values(root, "variant_id", what, fill))
            absent = np.isin(vids, (".", ""))
            if _meta(root / "variant_id_mask") is not None:
                absent |= np.asarray(_values(root, "variant_id_mask", what, fill), dtype=bool)
        feature_ids = fill_variant_ids(vids, chrom, pos, ref, alt, absent, f"the VCF Zarr store {what}")
        selection = select_samples(ids, options, what)
        reader = VczReader(str(root), n, m, selection.rows, impute)
        ploidy = int(calls.shape[2])
        imputed = count_missing(reader, m, scan_block(reader.n, 4 * ploidy)) if impute == "mean" else 0
        variant_chunk, sample_chunk = int(calls.chunks[0]), int(calls.chunks[1])
        chunks = (reader.n if impute == "mean" else min(sample_chunk, reader.n), variant_chunk)
        src = cls(reader, (reader.n, m), reader.dtype, chunks, False, f"vcf_zarr:{root}")
        src.set_samples(selection)
        src.feature_ids = feature_ids
        src.stored_dtype = reader.dtype
        src.feature_table = genome_table(chrom, pos, alt, ref, {
            "format": "vcf_zarr", "counted_allele": "allele_1", "ploidy": ploidy,
            "missing_calls": "refuse" if impute == "none" else "mean", "n_imputed": imputed})
        src.title = f"ingest {root.name}"
        return src
