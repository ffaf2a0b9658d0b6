"""Where a kernel model's training X lives, so that new data can be crossed with it in one pass.

A fitted kernel model keeps its training data as one of:

- the training store's path, when it was fitted on a store (or a store's own X):
  the store is reopened to cross new data with it. The fit records the store's
  identity (:mod:`wideml.estimators.kernel.store_identity`: its id and a digest
  of its X files), and every use compares it, so a store replaced at that path
  or rewritten in place is refused instead of silently changing predictions
  (a model saved before identities were recorded is checked for shape and
  layout only, as then);
- the array itself, for in-memory (numpy) input (saving the model copies it from memory);
- otherwise (a dask, zarr or h5py array that is not a store's X) the copy of X
  the fit's one pass wrote into the model's work group chunk by chunk
  (:func:`wideml.estimators.kernel.products.kernel_products`): the model then
  no longer depends on the user's lazy input, and saving it copies files
  without computing the user's graph.
"""

from __future__ import annotations

import os

import dask.array as da

from wideml.estimators.kernel.store_identity import check_store_identity, store_identity
from wideml.exceptions import StoreError
from wideml.inputs.as_dask import as_dask_array
from wideml.inputs.door import fit_input, store_path
from wideml.storage.featurestore import open_store
from wideml.storage.layout import check_layout, layout_of
from wideml.runner.workdir import work_array

#: Name of the training X in a kernel model (its work group, and the saved model).
X_TRAIN = "X_train"


class TrainingData:
    """Where a kernel model's training X lives, to cross new data with it in one pass.

    Parameters
    ----------
    X : dask.array.Array or None
        The training data (lazy); None after loading a model that points at a store.
    path : str or None
        Absolute path of the training feature store, if X came from one.
    shape : tuple of int
    layout : FeatureLayout, optional
        The training features' layout (checked against new data, and against the
        training store when it is reopened).
    in_memory : bool, default False
        X views an in-memory array (kept as it is: no copy is written).
    identity : dict, optional
        The training store's identity when ``path`` is set
        (:func:`~wideml.estimators.kernel.store_identity.store_identity`,
        recorded at fit); None for a model saved before it was recorded.
    """

    def __init__(self, X: da.Array | None, path: str | None, shape: tuple[int, int], layout=None, in_memory: bool = False,
                 identity: dict | None = None):
        self._X = X
        self.path = path
        self.shape = (int(shape[0]), int(shape[1]))
        self.layout = layout
        self.in_memory = bool(in_memory)
        self.identity = identity

    @classmethod
    def from_fit_input(cls, data, path: str | None) -> "TrainingData":
        """The training data of a fit's :class:`~wideml.inputs.door.FitInput` (``path``: its store's, or None; its identity recorded)."""
        identity = store_identity(path) if path is not None else None
        return cls(data.X, path, data.shape, data.layout, in_memory=data.in_memory, identity=identity)

    @property
    def needs_copy(self) -> bool:
        """Whether the fit's pass must write a copy of X (lazy input that is not a store's X)."""
        return self.path is None and not self.in_memory

    def keep_copy(self, group: str) -> None:
        """Point at the copy of X the fit's pass wrote into the model group ``group`` (which it keeps alive)."""
        self._X = work_array(group, X_TRAIN)

    def array(self) -> da.Array:
        """The training X as a dask array (reopening the training store if needed).

        A store's X is checked first, at every use: the store must still be at
        its path and be the one fitted on (its recorded identity), then, when
        reopened, have the fitted shape and feature layout. No chunk is read.
        """
        if self.path is None and self._X is not None:
            return self._X
        if self.path is None or not os.path.exists(self.path):
            raise StoreError(
                f"this kernel model crosses new data with its training store {self.path!r}, which is no longer there; "
                "move the store back to that path, or refit the model."
            )
        check_store_identity(getattr(self, "identity", None), self.path)  # a model pickled before identities: None
        if self._X is not None:
            return self._X
        store = open_store(self.path)
        if tuple(store.X.shape) != self.shape:
            raise StoreError(
                f"the training store {self.path!r} now has shape {tuple(store.X.shape)}, not the {self.shape} the model was "
                "fitted on; restore the original store, or refit the model."
            )
        check_layout(self.layout, layout_of(store), data_name=f"the training store {self.path!r}", model_name="this kernel model")
        self._X = store.X
        return self._X

    def state(self) -> tuple[dict, dict]:
        """(state, arrays) of a model: the store's path, or the training X (in memory, or the fit's copy of it)."""
        if self.path is not None:
            identity = getattr(self, "identity", None)
            return {"path": self.path, "shape": list(self.shape), **({"identity": identity} if identity else {})}, {}
        return {"path": None, "shape": list(self.shape)}, {X_TRAIN: self._X}

    @classmethod
    def from_state(cls, state: dict, arrays: dict) -> "TrainingData":
        if state.get("path") is not None:
            return cls(None, state["path"], tuple(state["shape"]), identity=state.get("identity"))
        return cls(as_dask_array(arrays[X_TRAIN]), None, tuple(state["shape"]))


def training_input(X, y=None, *, supervised: bool = True):
    """Validate training input through :func:`~wideml.inputs.door.fit_input`; returns (TrainingData, FitInput).

    Parameters
    ----------
    X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional
        Labels of any kind (``supervised`` only; continuous targets are refused).
    supervised : bool, default True
        False: ``y`` is not read (``fit_input(X, None, require_labels=False)``).

    Returns
    -------
    training : TrainingData
    data : FitInput
        Its ``codes`` and ``classes`` are the labels' (one class for unsupervised input).

    Notes
    -----
    Reads no X. The training store's path is taken from the input as given
    (before any rechunking), so a model fitted on ``store.X`` can find its store again.
    """
    data = fit_input(X, y) if supervised else fit_input(X, None, require_labels=False)
    return TrainingData.from_fit_input(data, store_path(X)), data


__all__ = ["X_TRAIN", "TrainingData", "store_path", "training_input"]
