"""The one writer of the passes' p-sized outputs (feature and class means, medians, ranks, loadings), chunk by chunk.

A pass task that computes a block of a p-sized output (a feature chunk's
class means, say) writes it into the model group as it runs, so nothing
p-sized is ever held whole. Writes aligned with the output array's chunks go
straight to its chunk files (:func:`wideml.storage.rawchunks.write_aligned`);
anything else goes through zarr.
"""

from __future__ import annotations

import numpy as np
import zarr

from wideml.storage.rawchunks import write_aligned


def write_output(group_path: str | None, name: str, values: np.ndarray, offset: int, axis: int | None = None) -> None:
    """Write one feature chunk's block of a p-sized output array at feature ``offset``.

    Parameters
    ----------
    group_path : str or None
        Folder of the zarr group holding the output array; None writes nothing.
    name : str
        The array's name in the group: shape (p,) or (K, p) chunked along
        features, or (p, d) (loadings: ``axis=0``).
    values : ndarray of shape (p_j,), (K, p_j) or (p_j, d)
        The block; an empty block writes nothing.
    offset : int
        Global index of the block's first feature.
    axis : int, optional
        The features' axis of the array (default: the last).
    """
    if group_path is None or values.size == 0:
        return
    axis = values.ndim - 1 if axis is None else axis
    if write_aligned(f"{group_path}/{name}", values, offset, axis=axis):
        return
    arr = zarr.open_array(f"{group_path}/{name}", mode="r+")
    index = [slice(None)] * values.ndim
    index[axis] = slice(offset, offset + values.shape[axis])
    arr[tuple(index)] = values


__all__ = ["write_output"]
