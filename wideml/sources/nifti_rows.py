"""Reading NIfTI folders: headers into a sample plan (3-D volumes and 4-D series), and a block reader of masked rows.

Every ``.nii``/``.nii.gz`` file of the folder is opened for its header only
(nibabel loads lazily), before any voxel is read:

* a 3-D file is one sample with id ``<stem>``; a 4-D file is one sample per
  volume along its fourth axis, ids ``<stem>:<t>`` (``t`` from 0); other
  dimensionalities are refused naming the file;
* every file must share the first file's voxel grid and affine (to 1e-4):
  a difference is one sentence naming the file and what differs.

Rows are then read by :class:`NiftiRows`, a picklable block reader (blocks
run in parallel on the active scheduler): consecutive volumes of one 4-D file
are read as one slab, and with a mask only the in-mask voxels are kept,
``row = volume[mask]`` (C order of the voxel indices, as
:class:`wideml.storage.spatial.SpatialReference` defines). NIfTI scaling
(slope/intercept) is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.sample_files import stem
from wideml.storage.casts import checked_cast
from wideml.storage.label_cells import check_unique_ids
from wideml.storage.spatial import SpatialReference, require_nibabel

#: Bytes of full-grid voxels one slab read may hold (several volumes of a 4-D file at once).
SLAB_BYTES = 64 * 2**20


@dataclass
class NiftiPlan:
    """The samples of a NIfTI folder, from the files' headers.

    Attributes
    ----------
    files : list of Path
        The files, in sample order.
    samples : list of (str, int)
        One ``(path, t)`` per sample; ``t = -1`` for a 3-D file.
    file_of_sample : ndarray of int, shape (n_samples,)
        Index into ``files`` of every sample.
    ids : ndarray of str, shape (n_samples,)
        ``<stem>`` or ``<stem>:<t>``.
    space : SpatialReference
        Grid, affine and header fields of the first file (no mask).
    dtype : numpy dtype
        A dtype holding every file's values (scaled files read as float32).
    """

    files: list[Path]
    samples: list[tuple[str, int]] = field(default_factory=list)
    file_of_sample: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, str))
    space: SpatialReference | None = None
    dtype: np.dtype = np.dtype(np.float32)

    @property
    def n_samples(self) -> int:
        return len(self.samples)


def _open(nib, path: Path):
    try:
        return nib.load(str(path))
    except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
        raise WidemlError(f"cannot read NIfTI file {str(path)!r} ({type(exc).__name__}); check the file.") from None


def _file_dtype(img) -> np.dtype:
    scaled = img.dataobj.slope != 1 or img.dataobj.inter != 0
    return np.dtype(np.float32) if scaled else np.dtype(img.get_data_dtype())


def scan_nifti(files: list[Path]) -> NiftiPlan:
    """Read every file's header: samples, ids, the common space, a common dtype (no voxel read).

    Parameters
    ----------
    files : list of Path
        NIfTI files in sample order.

    Returns
    -------
    NiftiPlan

    Raises
    ------
    WidemlError
        For an unreadable file, a file that is not 3-D or 4-D, or a file whose
        grid or affine differs from the first file's (naming it).
    """
    nib = require_nibabel()
    plan = NiftiPlan(list(files))
    dtypes, owners, ids = [], [], []
    for index, path in enumerate(plan.files):
        img = _open(nib, path)
        shape = tuple(int(s) for s in img.shape)
        if len(shape) not in (3, 4):
            raise WidemlError(
                f"NIfTI file {str(path)!r} is {len(shape)}-D (shape {shape}); wideml ingests 3-D volumes or 4-D series "
                "(one sample per volume) — split or reshape it first (e.g. with nibabel)."
            )
        space = SpatialReference.from_image(img)
        if plan.space is None:
            plan.space = space
        else:
            differs = plan.space.same_space(space)
            if differs is not None:
                raise WidemlError(
                    f"NIfTI file {str(path)!r} has {differs} than the first file {plan.files[0].name!r}; every volume must "
                    "share one grid and affine — resample it to the others (e.g. nilearn.image.resample_to_img) and ingest again."
                )
        dtypes.append(_file_dtype(img))
        if len(shape) == 3:
            plan.samples.append((str(path), -1))
            owners.append(index)
            ids.append(stem(path))
        else:
            for t in range(shape[3]):
                plan.samples.append((str(path), t))
                owners.append(index)
                ids.append(f"{stem(path)}:{t}")
        del img
    if not plan.samples:
        raise WidemlError("the NIfTI files hold no volumes (a 4-D file with 0 volumes); give at least one volume.")
    plan.file_of_sample = np.asarray(owners, dtype=np.int64)
    plan.ids = np.asarray(ids, dtype=str)
    check_unique_ids(plan.ids, "the NIfTI files", [plan.files[i].name for i in owners])
    for dt in dtypes:
        if dt.kind not in "biuf":
            raise WidemlError(f"the NIfTI files hold {dt} values, which are not real numbers; convert them to floats first.")
    plan.dtype = np.result_type(*dtypes)
    return plan


def keep_files(plan: NiftiPlan, keep: list[int]) -> NiftiPlan:
    """The plan restricted to the files ``keep`` (indices into ``plan.files``), in that order."""
    rows = np.concatenate([np.flatnonzero(plan.file_of_sample == i) for i in keep]) if keep else np.zeros(0, int)
    remap = {old: new for new, old in enumerate(keep)}
    return NiftiPlan([plan.files[i] for i in keep], [plan.samples[r] for r in rows],
                     np.asarray([remap[int(plan.file_of_sample[r])] for r in rows], dtype=np.int64),
                     plan.ids[rows], plan.space, plan.dtype)


def keep_samples(plan: NiftiPlan, keep) -> NiftiPlan:
    """The plan restricted to the samples where the boolean mask ``keep`` (one entry per sample) is true."""
    rows = np.flatnonzero(np.asarray(keep, dtype=bool))
    used = sorted({int(plan.file_of_sample[r]) for r in rows})
    remap = {old: new for new, old in enumerate(used)}
    return NiftiPlan([plan.files[i] for i in used], [plan.samples[r] for r in rows],
                     np.asarray([remap[int(plan.file_of_sample[r])] for r in rows], dtype=np.int64),
                     plan.ids[rows], plan.space, plan.dtype)


def slab_volumes(grid: tuple[int, ...], budget: int | None = None) -> int:
    """How many volumes of a 4-D file one read may hold (``budget`` bytes, as float64)."""
    return int(max(1, (budget or SLAB_BYTES) // max(1, int(np.prod(grid)) * 8)))


def iter_slabs(samples: list[tuple[str, int]], start: int, stop: int, slab: int):
    """Read samples ``start:stop`` as ``(first_row, path, data, scaling)`` with ``data`` of shape grid + (k,).

    ``scaling`` is None when ``data`` holds the volume's values, else the
    ``(slope, intercept)`` still to apply (with
    ``nibabel.volumeutils.apply_read_scaling``) to the voxels the caller keeps.

    Consecutive volumes of one 4-D file are read together (at most ``slab``
    at a time), so a compressed series is decompressed once per slab, not once
    per volume.
    """
    nib = require_nibabel()
    i = start
    while i < stop:
        path, t = samples[i]
        j = i + 1
        if t >= 0:
            while j < stop and j - i < slab and samples[j][0] == path and samples[j][1] == samples[j - 1][1] + 1:
                j += 1
        try:
            proxy = nib.load(path).dataobj
            scaling = None
            if t < 0 and hasattr(proxy, "get_unscaled"):
                # a 3-D file: keep the stored integers and scale only the voxels kept (nibabel's own
                # rule, apply_read_scaling), instead of a float64 copy of the whole grid
                data, scaling = np.asanyarray(proxy.get_unscaled())[..., None], (proxy.slope, proxy.inter)
            else:
                data = np.asanyarray(proxy)[..., None] if t < 0 else np.asanyarray(proxy[..., t : t + (j - i)])
        except WidemlError:
            raise
        except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
            raise WidemlError(f"cannot read NIfTI file {path!r} ({type(exc).__name__}: {exc}); check the file.") from None
        yield i, path, data, scaling
        del data
        i = j


class NiftiRows:
    """Read blocks of samples from NIfTI files, each volume flattened (or masked) to ``p`` features.

    Parameters
    ----------
    samples : list of (str, int)
        ``(path, t)`` per row (``t = -1``: a 3-D file).
    grid : tuple of int
        Every volume's grid (checked on read).
    mask : ndarray of bool of shape ``grid``, or None
        Keep only these voxels (``row = volume[mask]``); None keeps the grid in C order.
    dtype : dtype
        dtype of the blocks returned.
    allow_lossy_cast : bool, default False
        Cast even when values change (else refused naming the file and value).
    slab : int, optional
        Volumes of one 4-D file read at once (default from :data:`SLAB_BYTES`).

    Notes
    -----
    Memory per call: the block ``(r1 - r0, p)`` plus one slab of full-grid
    volumes. The mask is kept as packed bits (grid / 8 bytes) so the reader
    pickles small for a cluster.
    """

    def __init__(self, samples, grid, mask=None, dtype="float32", allow_lossy_cast: bool = False, slab: int | None = None):
        self.samples = [(str(p), int(t)) for p, t in samples]
        self.grid = tuple(int(s) for s in grid)
        self.dtype, self.allow_lossy_cast = np.dtype(dtype), bool(allow_lossy_cast)
        self._bits = None if mask is None else np.packbits(np.asarray(mask, dtype=bool).ravel())
        self.p = int(np.prod(self.grid)) if mask is None else int(np.count_nonzero(mask))
        self.slab = int(slab or slab_volumes(self.grid))
        self._mask = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_mask"] = None  # rebuilt from the packed bits where the reader runs
        return state

    def mask(self) -> np.ndarray | None:
        """The boolean mask of shape ``grid`` (unpacked once), or None."""
        if self._bits is not None and self._mask is None:
            n = int(np.prod(self.grid))
            self._mask = np.unpackbits(self._bits, count=n).astype(bool).reshape(self.grid)
        return self._mask

    def __call__(self, r0: int, r1: int) -> np.ndarray:
        """Rows ``r0:r1`` of X, shape ``(r1 - r0, p)``."""
        mask = self.mask()
        out = np.empty((r1 - r0, self.p), dtype=self.dtype)
        for i, path, data, scaling in iter_slabs(self.samples, r0, r1, self.slab):
            if tuple(data.shape[:3]) != self.grid:
                raise WidemlError(f"NIfTI file {path!r} has grid {tuple(data.shape[:3])} but the first file has {self.grid}; "
                                  "every volume must share one grid — resample it.")
            if data.dtype.kind not in "biuf":
                raise WidemlError(f"NIfTI file {path!r} holds {data.dtype} values, which are not real numbers; convert it to floats.")
            k = data.shape[3]
            rows = (data[mask] if mask is not None else data.reshape(-1, k)).T  # (k, p), C order of the voxels
            if scaling is not None:
                from nibabel.volumeutils import apply_read_scaling

                rows = apply_read_scaling(rows, *scaling)
            out[i - r0 : i - r0 + k] = checked_cast(rows, self.dtype, source=repr(path), allow_lossy=self.allow_lossy_cast, row0=i)
            del rows
        return out
