"""Dask arrays of unknown chunk sizes (issue 22): one sentence naming ``.compute_chunk_sizes()``, for fit and predict.

``dX[:, mask]`` with a dask boolean mask (a feature filter) or ``dX[dX[:, 0] > 0]``
(a sample filter) leaves NaN chunk sizes. wideml used to fail with ``ValueError:
cannot convert float NaN to integer`` (features) or "X has nan samples"
(samples), and the kernel models' predict with dask's own multi-line error.
Finding the sizes means computing the mask, possibly a pass over X, so wideml
refuses with the fix instead of running an uncounted pass; the advised fix
then gives the in-memory answer.
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest

from adversarial.harness import assert_api_refused
from wideml.estimators.classifier import EmbeddingClassifier
from wideml.estimators.encoder.estimator import EncoderClassifier
from wideml.estimators.kernel.kernel_lol import KernelLOL
from wideml.estimators.kernel.kpca import KernelPCA
from wideml.estimators.kernel.kpca_trick import KPCATrick
from wideml.estimators.lfl import LFL
from wideml.estimators.gram.lol import LOL, PCA
from wideml.exceptions import WidemlError

N, P = 40, 300


def _data():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], N // 2)
    X = rng.normal(size=(N, P)) + np.outer(y, rng.normal(size=P))
    mask = rng.random(P) > 0.3
    return X, y, mask


def _unknown_features():
    X, y, mask = _data()
    Xd = da.from_array(X, chunks=(N, 50))[:, da.from_array(mask)]
    assert np.isnan(Xd.shape[1])
    return Xd, X[:, mask], y


def _unknown_samples():
    X, y, _ = _data()
    dX = da.from_array(X, chunks=(N, 50))
    Xd = dX[dX[:, 0] > -np.inf]  # every sample kept, but dask cannot know that
    assert np.isnan(Xd.shape[0])
    return Xd, X, y


ESTIMATORS = {
    "lol": LOL, "pca": PCA, "lfl": LFL, "encoder": EncoderClassifier, "kpca-nca": KPCATrick, "kernel-lol": lambda: KernelLOL(n_components=3),
    "kpca": KernelPCA, "lol+qda": lambda: EmbeddingClassifier(LOL(1), "qda"),
}


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("axis", ["features", "samples"])
def test_fit_refused(name, axis):
    Xd, _, y = _unknown_features() if axis == "features" else _unknown_samples()
    with pytest.raises(WidemlError) as excinfo:
        ESTIMATORS[name]().fit(Xd, y)
    assert_api_refused(excinfo, "compute_chunk_sizes()", f"along its {axis}", "unknown")


@pytest.mark.parametrize("name", ["lol", "lfl", "encoder", "kpca-nca", "kernel-lol", "kpca"])
@pytest.mark.parametrize("axis", ["features", "samples"])
def test_transform_and_predict_refused(name, axis):
    Xd, X, y = _unknown_features() if axis == "features" else _unknown_samples()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ESTIMATORS[name]().fit(X, y)
    for method in ("transform", "predict"):
        if not hasattr(est, method):
            continue
        with pytest.raises(WidemlError) as excinfo:
            getattr(est, method)(Xd)
        assert_api_refused(excinfo, "compute_chunk_sizes()", axis)


@pytest.mark.parametrize("name", ["lol", "lfl", "kpca-nca"])
def test_the_advised_fix_gives_the_in_memory_answer(name):
    Xd, X, y = _unknown_features()
    known = Xd.compute_chunk_sizes()
    a, b = ESTIMATORS[name]().fit(known, y), ESTIMATORS[name]().fit(X, y)
    np.testing.assert_allclose(a.transform(known), b.transform(X), rtol=1e-8, atol=1e-8)
