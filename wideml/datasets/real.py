"""Loaders for the encoder paper's real data sets from local MATLAB files (never downloaded).

Both files are MATLAB v5 ``.mat`` files (``scipy.io.loadmat``): ``Cora.mat`` (``X``, ``Label``) and
``faceYaleB_32x32.mat`` (``fea``, ``gnd``). Each loader takes the file path and returns
``(X, y)`` as numpy arrays: X float64 (n_samples, n_features), y int64 labels.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.io

from wideml.exceptions import WidemlError


def _load_mat(path: str | os.PathLike, x_key: str, y_key: str, what: str, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise WidemlError(f"no {what} file at {path!r}; pass the path of the local .mat file (wideml never downloads data).")
    try:
        mat = scipy.io.loadmat(path)
    except (ValueError, OSError, NotImplementedError) as exc:
        raise WidemlError(f"{path!r} is not a readable MATLAB v5 file ({type(exc).__name__}); pass the {what} .mat file.") from None
    if x_key not in mat or y_key not in mat:
        raise WidemlError(f"{path!r} has no {x_key!r}/{y_key!r} variables, so it is not the {what} file; check the path.")
    X = mat[x_key]
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    X = X.astype(np.float64)
    y = np.asarray(mat[y_key]).ravel().astype(np.int64)
    if X.shape != shape or y.shape != (shape[0],):
        raise WidemlError(f"{path!r} holds X of shape {X.shape}, not the {what} data set's {shape}; check the file.")
    return X, y


def load_cora(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Cora word-presence features and topic labels.

    Parameters
    ----------
    path : path-like
        ``Cora.mat`` (variables ``X`` uint8 2708 x 1433 and ``Label`` 1..7).

    Returns
    -------
    X : ndarray of float64, shape (2708, 1433)
        Binary word-presence vectors (the citation graph is not used).
    y : ndarray of int64, shape (2708,)
        Labels 1..7.
    """
    return _load_mat(path, "X", "Label", "Cora", (2708, 1433))


def load_yale_b(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Extended Yale B faces, 32 x 32 pixels, 38 subjects.

    Parameters
    ----------
    path : path-like
        ``faceYaleB_32x32.mat`` (variables ``fea`` uint8 2414 x 1024 and ``gnd`` 1..38).

    Returns
    -------
    X : ndarray of float64, shape (2414, 1024)
        Raw pixel intensities 0..255 (a sample's image is ``X[i].reshape(32, 32).T``).
    y : ndarray of int64, shape (2414,)
        Subject labels 1..38.
    """
    return _load_mat(path, "fea", "gnd", "Extended Yale B", (2414, 1024))


__all__ = ["load_cora", "load_yale_b"]
