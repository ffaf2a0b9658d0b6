"""Files of feature-space maps: NIfTI images (or .npy), top-feature TSVs and the ``maps.json`` manifest.

Used by :func:`wideml.maps.write_maps`, which writes them into a folder made
atomically (:func:`wideml.storage.atomic.atomic_output`). Nothing here knows
about estimators: a map is a name and a float vector of shape (n_features,),
handed over whole (:func:`write_values`, :func:`write_top_tsv`) or block by
block in feature order (:class:`NpyStream`, :class:`NiftiStream`), with the
same bytes either way.

A NIfTI file holds its volume in Fortran order of (i, j, k) while features
come in C order, so :class:`NiftiStream` writes in two phases, in memory
bounded by :data:`WINDOW_VOXELS` and :data:`SLAB_VOXELS` (not by p):

1. each window of whole grid rows (fixed i, j; every k) is filled from the
   features (0 outside the mask) and its k-ranges are written, with ``pwrite``,
   into a scratch file laid out by *slabs* of k (slab s holds ``volume[:, :, k0:k1]``
   in C order), inside the maps' write-aside folder;
2. the header (built like nibabel's, :func:`nifti_header_bytes`) and then
   each slab, transposed to Fortran order, are streamed into gzip exactly as
   ``nibabel.save`` does (same opener: level 1, mtime 0), so the ``.nii.gz``
   equals the one ``nibabel.save(spatial.to_image(values))`` writes byte for byte.
   The scratch file (4 bytes per voxel) is removed.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from wideml.exceptions import ConfigError, WidemlError
from wideml.storage.spatial import SpatialReference, require_nibabel


#: Name of the manifest written next to the maps.
MANIFEST = "maps.json"
#: Voxels per window of grid rows filled from the features (phase 1 of :class:`NiftiStream`).
WINDOW_VOXELS = 1 << 20
#: Voxels per slab of k transposed and compressed at once (phase 2 of :class:`NiftiStream`).
SLAB_VOXELS = 1 << 22
#: Columns a feature table of each kind adds to ``<name>_top.tsv`` (between ``feature_id`` and ``weight``).
TOP_COLUMNS = {"genome": ("chrom", "pos", "allele_1", "allele_2")}


def write_values(folder: Path, name: str, values: np.ndarray, spatial: SpatialReference | None) -> str:
    """Write one map: ``<name>.nii.gz`` in the original image space (``spatial``), else ``<name>.npy``; returns the file name.

    Parameters
    ----------
    folder : Path
    name : str
    values : ndarray of shape (n_features,)
    spatial : SpatialReference or None
        Masked voxels go back in place (0 outside the mask), with the stored affine and header fields.
    """
    if spatial is None:
        fname = f"{name}.npy"
        np.save(folder / fname, np.asarray(values, dtype=np.float64), allow_pickle=False)
        return fname
    nib = require_nibabel()
    fname = f"{name}.nii.gz"
    nib.save(spatial.to_image(values), str(folder / fname))
    return fname


def top_features(values: np.ndarray, top: int) -> np.ndarray:
    """Indices of the ``top`` largest ``|values|`` (ties: lower index first), shape (min(top, p),)."""
    order = np.argsort(-np.abs(np.asarray(values, dtype=np.float64)), kind="stable")
    return order[: max(0, int(top))]


def write_top_tsv(folder: Path, name: str, values: np.ndarray, feature_ids: np.ndarray, top: int) -> str:
    """Write ``<name>_top.tsv``: ``rank``, ``feature_id``, ``weight`` of the top-N features by |weight|; returns the file name."""
    index = top_features(values, top)
    return write_top_rows(folder, name, index, np.asarray(values, dtype=np.float64)[index], feature_ids)


def _cell(value) -> str:
    if isinstance(value, (np.integer, int)) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    return str(value.item() if hasattr(value, "item") else value).replace("\t", " ").replace("\n", " ")


def write_top_rows(folder: Path, name: str, index: np.ndarray, values: np.ndarray, feature_ids: np.ndarray | None,
                   columns: dict[str, np.ndarray] | None = None) -> str:
    """Write ``<name>_top.tsv`` from the top features already chosen; returns the file name.

    Parameters
    ----------
    folder : Path
    name : str
    index : ndarray of int, shape (t,)
        Feature indices, best first (:func:`top_features` or :class:`wideml.maps.blocks.TopN`).
    values : ndarray of shape (t,)
        Their values.
    feature_ids : ndarray of shape (n_features,) or None
        Gives the ``feature_id`` column (left out when None).
    columns : dict of str to ndarray of shape (n_features,), optional
        More columns, in order, between ``feature_id`` and ``weight`` (e.g. a
        genome's ``chrom``, ``pos``, ``allele_1``, ``allele_2``).
    """
    fname = f"{name}_top.tsv"
    columns = dict(columns or {})
    head = ["rank"] + (["feature_id"] if feature_ids is not None else []) + list(columns) + ["weight"]
    lines = ["\t".join(head)]
    for rank, (j, value) in enumerate(zip(np.asarray(index).tolist(), np.asarray(values, dtype=np.float64).tolist()), start=1):
        cells = [str(rank)]
        if feature_ids is not None:
            cells.append(_cell(feature_ids[j]))
        cells += [_cell(col[j]) for col in columns.values()]
        cells.append(repr(float(value)))
        lines.append("\t".join(cells))
    (folder / fname).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return fname


def top_columns(table) -> dict[str, np.ndarray]:
    """The columns of a feature table that top-feature tables carry (:data:`TOP_COLUMNS` of its kind; {} without one)."""
    if table is None:
        return {}
    return {c: table.columns[c] for c in TOP_COLUMNS.get(table.kind, ()) if c in table.columns}


class NpyStream:
    """``<name>.npy`` (float64, shape (n_features,)) written block by block: the bytes ``np.save`` writes.

    Parameters
    ----------
    folder : Path
    name : str
    n_features : int
    """

    def __init__(self, folder: Path, name: str, n_features: int):
        self.name = f"{name}.npy"
        self.n_features, self.written = int(n_features), 0
        self._file = open(folder / self.name, "xb")  # noqa: SIM115 - closed by finish (or with the folder on failure)
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float64)), "fortran_order": False, "shape": (self.n_features,)}
        np.lib.format.write_array_header_1_0(self._file, header)

    def add(self, values: np.ndarray) -> None:
        """Append the next block of values (feature order)."""
        block = np.ascontiguousarray(values, dtype=np.float64)
        self._file.write(memoryview(block).cast("B"))
        self.written += block.size

    def close(self) -> None:
        """Close the file after a failure (the write-aside folder goes with it)."""
        self._file.close()

    def finish(self) -> str:
        """Close the file; returns its name."""
        self._file.close()
        if self.written != self.n_features:
            raise WidemlError(f"{self.name} received {self.written} values for {self.n_features} features; this is a bug in wideml.")
        return self.name


def nifti_header_bytes(spatial: SpatialReference) -> bytes:
    """The bytes before the voxel data of the ``.nii`` that ``nibabel.save(spatial.to_image(values))`` writes (any values).

    Built the way :meth:`SpatialReference.to_image` and nibabel's
    ``to_file_map`` build it (float32 data, slope/intercept from nibabel's
    array writer), on a zero-strided volume, so nothing grid-sized is held;
    up to ``vox_offset`` (header, extension flag, padding).
    """
    nib = require_nibabel()
    from nibabel.arraywriters import get_slope_inter, make_array_writer

    data = np.broadcast_to(np.float32(0), spatial.grid_shape)
    img = nib.Nifti1Image(data, spatial.affine)
    hdr = img.header
    zooms = spatial.header.get("zooms")
    if zooms:
        full = list(zooms)[: data.ndim] + [1.0] * max(0, data.ndim - len(zooms))
        hdr.set_zooms(tuple(float(z) for z in full[: data.ndim]))
    if "xyzt_units" in spatial.header:
        hdr["xyzt_units"] = int(spatial.header["xyzt_units"])
    img.set_qform(spatial.affine, code=int(spatial.header.get("qform_code", 1)))
    img.set_sform(spatial.affine, code=int(spatial.header.get("sform_code", 1)))
    img.update_header()
    img.get_data_dtype(finalize=True)
    hdr = img.header
    writer = make_array_writer(np.zeros(1, dtype=np.float32), hdr.get_data_dtype(), hdr.has_data_slope, hdr.has_data_intercept)
    hdr.set_slope_inter(*get_slope_inter(writer))
    out = io.BytesIO()
    hdr.write_to(out)
    head = out.getvalue()
    offset = int(hdr.get_data_offset())
    return head + b"\0" * max(0, offset - len(head))


def _pread_into(fd: int, out: np.ndarray, offset: int) -> None:
    view, done = memoryview(out).cast("B"), 0
    while done < len(view):
        got = os.preadv(fd, [view[done:]], offset + done)
        if got <= 0:
            raise WidemlError("a scratch file of the maps ended early; this is a bug in wideml (or the disk is failing).")
        done += got


def _pwrite(fd: int, data: np.ndarray, offset: int) -> None:
    view, done = memoryview(np.ascontiguousarray(data)).cast("B"), 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], offset + done)


class NiftiStream:
    """``<name>.nii.gz`` in the image space of ``spatial``, written from blocks of features in bounded memory.

    Feed the values in feature order with :meth:`add`, then call :meth:`finish`.
    The bytes equal :func:`write_values`'s (see the module docstring for how).
    Memory: O(:data:`WINDOW_VOXELS` + :data:`SLAB_VOXELS` + one block), plus the
    reference's own grid-sized boolean mask; disk: a scratch file of 4 bytes
    per voxel beside the output, removed by :meth:`finish`.

    Attributes (after all values were added)
    ----------------------------------------
    peak_flat : int
        C-order grid index of the first largest |value| of the float32 volume
        (``np.argmax(np.abs(volume))``; voxel 0 when all are 0).
    peak_abs : float
        That |value|.
    nonzero_k : ndarray of bool, shape (grid_shape[-1],)
        Whether each k-plane has a non-zero voxel (``np.any(volume != 0, axis=(0, 1))``).
    """

    def __init__(self, folder: Path, name: str, spatial: SpatialReference):
        self.name, self.spatial = f"{name}.nii.gz", spatial
        self.path, self.scratch = folder / self.name, folder / f".{name}.nii.slabs"
        grid = spatial.grid_shape
        self.lead, self.nk = tuple(grid[:-1]), int(grid[-1])
        self.rows = int(np.prod(self.lead)) if self.lead else 1
        ks = max(1, min(self.nk, SLAB_VOXELS // max(1, self.rows)))
        self.slabs = [(k0, min(k0 + ks, self.nk)) for k0 in range(0, self.nk, ks)]
        self.window_rows = max(1, WINDOW_VOXELS // max(1, self.nk))
        self.mask = None if spatial.mask is None else spatial.mask.reshape(self.rows, self.nk)
        self.pending: list[np.ndarray] = []
        self.n_pending = self.row = self.k_done = 0
        self.peak_flat, self.peak_abs = 0, -1.0
        self.nonzero_k = np.zeros(self.nk, dtype=bool)
        self.fd = os.open(self.scratch, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.ftruncate(self.fd, self.rows * self.nk * 4)

    def add(self, values: np.ndarray) -> None:
        """The next block of values, in feature order (cast to float32 as the image holds them)."""
        block = np.asarray(values, dtype=np.float32)
        if block.size:
            self.pending.append(block)
            self.n_pending += block.size
        self._drain()

    def _take(self, need: int) -> np.ndarray:
        parts, got = [], 0
        while got < need:
            head = self.pending[0]
            take = min(head.size, need - got)
            parts.append(head[:take])
            if take == head.size:
                self.pending.pop(0)
            else:
                self.pending[0] = head[take:]
            got += take
        self.n_pending -= need
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def _windows(self):
        """The next window: rows ``r0:r1`` and k-range ``a:b`` (whole rows, or a part of one row when a row is longer than a window)."""
        r0 = self.row
        if self.nk <= WINDOW_VOXELS:
            return r0, min(self.rows, r0 + self.window_rows), 0, self.nk
        return r0, r0 + 1, self.k_done, min(self.nk, self.k_done + WINDOW_VOXELS)

    def _drain(self) -> None:
        while self.row < self.rows:
            r0, r1, a, b = self._windows()
            inside = None if self.mask is None else self.mask[r0:r1, a:b]
            need = (r1 - r0) * (b - a) if inside is None else int(np.count_nonzero(inside))
            if need > self.n_pending:
                return
            values = self._take(need)
            if inside is None:
                window = values.reshape(r1 - r0, b - a)
            else:
                window = np.zeros((r1 - r0, b - a), dtype=np.float32)
                window[inside] = values
            self._write_window(r0, a, window)
            if b < self.nk:
                self.k_done = b
            else:
                self.row, self.k_done = r1, 0

    def _write_window(self, r0: int, a: int, window: np.ndarray) -> None:
        mag = np.abs(window)
        j = int(np.argmax(mag))
        if float(mag.flat[j]) > self.peak_abs:
            jr, jk = divmod(j, window.shape[1])
            self.peak_flat, self.peak_abs = (r0 + jr) * self.nk + a + jk, float(mag.flat[j])
        b = a + window.shape[1]
        self.nonzero_k[a:b] |= np.any(window != 0, axis=0)
        for k0, k1 in self.slabs:
            lo, hi = max(a, k0), min(b, k1)
            if lo < hi:  # rows r0.. of slab (k0, k1), columns lo:hi
                _pwrite(self.fd, window[:, lo - a:hi - a], 4 * (self.rows * k0 + r0 * (k1 - k0) + (lo - k0)))

    def complete(self) -> None:
        """End the first phase: every voxel is in the scratch file, and the peak and ``nonzero_k`` are final.

        Raises
        ------
        WidemlError
            When the values received do not fill the mask exactly (a bug).
        """
        self._drain()
        if self.row != self.rows or self.n_pending:
            raise WidemlError(f"{self.name} received values that do not fill its mask; this is a bug in wideml.")
        self.peak_abs = max(self.peak_abs, 0.0)

    def finish(self, on_slab: Callable[[int, np.ndarray], None] | None = None) -> str:
        """Stream header and slabs into ``<name>.nii.gz``, remove the scratch file; returns the file name.

        Parameters
        ----------
        on_slab : callable, optional
            Called as ``on_slab(k0, slab)`` with each slab ``volume[..., k0:k1]``
            (float32, shape ``grid_shape[:-1] + (k1 - k0,)``, valid during the call):
            how PNG panels of large maps get their planes.
        """
        from nibabel.openers import Opener

        self.complete()
        try:
            with Opener(str(self.path), "wb") as gz:  # nibabel's own gzip settings (level 1, mtime 0, the file's name)
                gz.write(nifti_header_bytes(self.spatial))
                for k0, k1 in self.slabs:
                    self._emit_slab(gz, k0, k1, on_slab)
        finally:
            self.close()
            self.scratch.unlink()
        return self.name

    def _emit_slab(self, gz, k0: int, k1: int, on_slab) -> None:
        ks, offset = k1 - k0, 4 * self.rows * k0
        if self.rows * ks <= SLAB_VOXELS or len(self.lead) < 2:
            slab = np.empty((self.rows, ks), dtype=np.float32)
            _pread_into(self.fd, slab, offset)
            slab = slab.reshape(self.lead + (ks,))
            if on_slab is not None:
                on_slab(k0, slab)
            gz.write(np.ascontiguousarray(slab.transpose(tuple(range(slab.ndim))[::-1])))
            return
        # one k-plane larger than a slab (ks == 1): transpose it by groups of j, each read through its own mapping
        ni, nj = int(np.prod(self.lead[:-1])), self.lead[-1]
        plane = np.memmap(self.scratch, dtype=np.float32, mode="r", offset=offset, shape=(ni, nj))
        if on_slab is not None:
            on_slab(k0, plane.reshape(self.lead + (1,)))
        del plane
        group = max(1, SLAB_VOXELS // max(1, ni))
        for j0 in range(0, nj, group):
            plane = np.memmap(self.scratch, dtype=np.float32, mode="r", offset=offset, shape=(ni, nj))
            gz.write(np.ascontiguousarray(plane[:, j0:j0 + group].T))
            del plane

    def close(self) -> None:
        """Release the scratch file after a failure (the write-aside folder goes with it)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def nth_flat_index(spatial: SpatialReference, feature: int) -> int:
    """``spatial.flat_index()[feature]`` without building the p-long index (a walk over the mask by windows)."""
    if spatial.mask is None:
        return int(feature)
    flat, seen = spatial.mask.reshape(-1), 0
    for lo in range(0, flat.size, WINDOW_VOXELS):
        window = flat[lo:lo + WINDOW_VOXELS]
        count = int(np.count_nonzero(window))
        if seen + count > feature:
            return lo + int(np.flatnonzero(window)[feature - seen])
        seen += count
    raise WidemlError(f"feature {feature} lies outside the mask's {seen} voxels; this is a bug in wideml.")


def write_manifest(folder: Path, doc: dict) -> str:
    """Write the JSON manifest ``maps.json``; returns its name."""
    (folder / MANIFEST).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return MANIFEST


def reference_from(reference, n_features: int) -> SpatialReference:
    """A SpatialReference from what an API user holds: a SpatialReference, a nibabel mask image, or a fitted NiftiMasker.

    Parameters
    ----------
    reference : SpatialReference, nibabel image, or object with ``mask_img_`` (nilearn's NiftiMasker)
        A mask image's non-zero voxels are the features, in C order of (i, j, k)
        (NiftiMasker's order).
    n_features : int
        The model's number of features: the mask must count exactly these.

    Raises
    ------
    ConfigError
        If the reference is none of these or counts another number of features.
    """
    if isinstance(reference, SpatialReference):
        ref = reference
    else:
        img = getattr(reference, "mask_img_", reference)
        if not (hasattr(img, "affine") and hasattr(img, "get_fdata") and hasattr(img, "header")):
            raise ConfigError(f"reference= is a {type(reference).__name__}; give a SpatialReference, a nibabel mask image or a "
                              "fitted NiftiMasker.")
        data = np.asarray(img.get_fdata())
        if data.ndim == 4 and data.shape[3] == 1:
            data = data[..., 0]
        if data.ndim != 3:
            raise ConfigError(f"the reference mask image has shape {data.shape}; give a 3-D mask image.")
        ref = SpatialReference.from_image(img, mask=data != 0)
    if ref.n_features != n_features:
        raise ConfigError(f"the reference locates {ref.n_features} features but the model has {n_features}; "
                          "give the mask the model's training data were masked with.")
    return ref
