"""Input handling and execution for :class:`~wideml.estimators.encoder.EncoderClassifier`.

In-memory (numpy) input is validated cheaply and kept as a plain array: the
chunk functions of :mod:`wideml.passes.encoder` then run on it directly, with
no dask graph (:func:`_run`). Everything else becomes a feature-chunked dask
array and each pass is one graph.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
from threadpoolctl import ThreadpoolController

from wideml.estimators._input import FitInput, fit_input
from wideml.exceptions import WidemlError
from wideml.runtime import compute

_CONTROLLER = None


def _one_blas_thread():
    """n x K problems: one BLAS thread is fastest (threads only contend on a shared machine)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def _run(Xmem, local, graph, label: str):
    """Apply the in-memory kernel when X is already in RAM (no graph), else compute the pass's graph."""
    if Xmem is not None:
        with _one_blas_thread():
            return local()
    (out,) = compute(graph(), label=label)
    return out


def _memory_input(X, n_features: int | None):
    """A validated in-memory array for numpy-like input (None for dask, zarr, h5py and stores)."""
    from wideml.estimators._input import _numpy_input
    from wideml.storage.featurestore import FeatureStore

    if isinstance(X, (FeatureStore, da.Array)) or type(X).__module__.startswith(("zarr", "h5py")):
        return None
    min_samples = 1 if n_features is not None else 2
    if (type(X) is np.ndarray and X.ndim == 2 and X.dtype in (np.float64, np.float32) and X.shape[0] >= min_samples
            and X.shape[1] >= 1):
        Xm = X  # what check_array returns for such an array (no copy), without its overhead
    else:
        Xm = _numpy_input(X, min_samples=min_samples)
    if n_features is not None and Xm.shape[1] != n_features:
        raise WidemlError(f"X has {Xm.shape[1]} features, but EncoderClassifier is expecting {n_features} features as input; "
                          "give data with the training features in the same order.")
    return Xm


def _fit_data(X, y) -> FitInput:
    """Validated training input; numpy-like X stays a plain array (``X`` is None: no dask view is built)."""
    Xm = _memory_input(X, None)
    if Xm is None:
        return fit_input(X, y)
    from wideml.storage.layout import layout_of

    return _MemoryFitInput(None, *_memory_labels(y, Xm.shape[0]), True, Xm, {"input": "numpy"}, layout_of(X))


def _memory_labels(y, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, classes, codes) of in-memory training data, validated exactly as :func:`~wideml.estimators._input.fit_input` does."""
    from wideml.storage.writer import check_labels

    if y is None:
        raise WidemlError("requires y to be passed, but the target y is None; pass labels (or a store that holds y) to fit.")
    from wideml.estimators._input import _one_column, _refuse_continuous

    y = check_labels(_one_column(y), n, what="y")
    _refuse_continuous(y)
    classes, codes = np.unique(y, return_inverse=True)
    return y, classes, codes.astype(np.int64)


class _MemoryFitInput(FitInput):
    """FitInput of an in-memory array (shape from ``numpy_X``)."""

    @property
    def n_samples(self) -> int:
        return int(self.numpy_X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.numpy_X.shape[1])


def _dask_view(data: FitInput) -> da.Array:
    """The training data as a feature-chunked dask array (made on demand for in-memory input)."""
    if data.X is not None:
        return data.X
    from wideml.passes.blocks import as_dask_array

    return as_dask_array(data.numpy_X)


def _feature_chunk(data: FitInput) -> int:
    if data.X is not None:
        return int(data.X.chunks[1][0])
    from wideml.storage.writer import default_feature_chunk

    return default_feature_chunk(*data.numpy_X.shape, data.numpy_X.dtype.itemsize)


def _group_array(group: str, name: str, arrays: dict) -> da.Array:
    """A fitted p-sized array of the model group as a dask array, read by wideml's raw chunk reader.

    (``da.from_zarr`` opens the array through zarr and fsspec, about 10 ms a fit; the array was
    created by :func:`~wideml.estimators._workdir.new_model_group` with the shape and chunks given.)
    """
    import uuid

    from wideml.estimators._workdir import keep_folder_alive
    from wideml.storage.reader import ZarrReader

    shape, chunks = arrays[name]
    reader = ZarrReader(group, name, shape, np.float64, chunks, missing="fill")  # zarr skips all-zero chunks of model arrays
    arr = da.from_array(reader, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0)),
                        name=f"wideml-encoder-{name}-{uuid.uuid4().hex}")
    return keep_folder_alive(arr, group)


def _lazy(Xd, Xmem):
    """The dask view of new data (wrapping an in-memory array only when a graph needs it)."""
    return Xd if Xd is not None else da.from_array(Xmem)


__all__: list[str] = []
