"""Averaged samples of a BIDS tree (``--average runs|sessions``): the mean of several 3-D scans, masked.

Each sample is the voxel-wise mean, in float64, of its scans' masked values
(NIfTI scaling applied), then cast to the stored dtype: ``row = mean_i(volume_i[mask])``.
Files are read one at a time, so a call holds the block plus one volume.
"""

from __future__ import annotations

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.nifti_rows import iter_slabs
from wideml.storage.casts import checked_cast


class AverageRows:
    """Read blocks of averaged samples: row ``r`` is the mean of the volumes of ``groups[r]``.

    Parameters
    ----------
    groups : list of list of str
        The 3-D NIfTI files of each sample.
    grid : tuple of int
        Every volume's grid.
    mask : ndarray of bool of shape ``grid``, or None
    dtype : dtype
        dtype of the blocks returned.
    allow_lossy_cast : bool, default False
    """

    def __init__(self, groups, grid, mask=None, dtype="float32", allow_lossy_cast: bool = False):
        self.groups = [[str(p) for p in g] for g in groups]
        self.grid = tuple(int(s) for s in grid)
        self.dtype, self.allow_lossy_cast = np.dtype(dtype), bool(allow_lossy_cast)
        self._bits = None if mask is None else np.packbits(np.asarray(mask, dtype=bool).ravel())
        self.p = int(np.prod(self.grid)) if mask is None else int(np.count_nonzero(mask))

    def _mask(self) -> np.ndarray | None:
        if self._bits is None:
            return None
        return np.unpackbits(self._bits, count=int(np.prod(self.grid))).astype(bool).reshape(self.grid)

    def __call__(self, r0: int, r1: int) -> np.ndarray:
        """Rows ``r0:r1``, shape ``(r1 - r0, p)``."""
        mask = self._mask()
        out = np.empty((r1 - r0, self.p), dtype=self.dtype)
        for r in range(r0, r1):
            acc = np.zeros(self.p, dtype=np.float64)
            for _, path, data, scaling in iter_slabs([(p, -1) for p in self.groups[r]], 0, len(self.groups[r]), 1):
                if tuple(data.shape[:3]) != self.grid:
                    raise WidemlError(f"NIfTI file {path!r} has grid {tuple(data.shape[:3])} but the first file has {self.grid}; resample it.")
                values = data[..., 0][mask] if mask is not None else data[..., 0].reshape(-1)
                if scaling is not None:
                    from nibabel.volumeutils import apply_read_scaling

                    values = apply_read_scaling(values, *scaling)
                acc += values
            acc /= len(self.groups[r])
            out[r - r0] = checked_cast(acc[None, :], self.dtype, source=repr(self.groups[r][0]), allow_lossy=self.allow_lossy_cast, row0=r)[0]
        return out
