"""Bad input to the LOL family: one clear sentence each."""

import numpy as np
import pytest

from oracles import make_data
from wideml import LOL, PCA, open_store, write_store
from wideml.exceptions import WidemlError
from wideml.passes.blocks import NonFiniteError


def test_nan_names_first_bad_feature(tmp_path):
    X, y = make_data(n=40, p=200, K=2)
    X[3, 150] = np.nan
    X[5, 170] = np.inf
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=32)
    with pytest.raises(NonFiniteError, match="feature index 150"):
        LOL(3).fit(open_store(tmp_path / "s.zarr"))


def test_qoq_class_with_one_sample():
    X, y = make_data(n=40, p=100, K=2)
    y = y.copy()
    y[0] = 2  # a third class with a single sample
    with pytest.raises(WidemlError, match="class 2 has 1 sample, but QOQ estimates a covariance per class"):
        LOL(4, second_moment="quadratic").fit(X, y)


@pytest.mark.parametrize("est", [LOL(100), PCA(60)], ids=["lol", "pca"])
def test_too_many_components(est):
    X, y = make_data(n=40, p=100, K=2)
    with pytest.raises(WidemlError, match="larger than the data allow"):
        est.fit(X, y)


def test_transform_with_wrong_feature_count():
    X, y = make_data(n=40, p=100, K=2)
    est = LOL(3).fit(X, y)
    with pytest.raises(WidemlError, match="has 99 features, but LOL is expecting 100"):
        est.transform(X[:, :99])


def test_one_class_labels():
    X, _ = make_data(n=40, p=100, K=2)
    with pytest.raises(WidemlError, match="only 1 class"):
        LOL(3).fit(X, np.zeros(40))


@pytest.mark.parametrize("bad", [0, -2, 2.5, "five"])
def test_bad_n_components(bad):
    X, y = make_data(n=40, p=100, K=2)
    with pytest.raises(WidemlError, match="n_components"):
        LOL(bad).fit(X, y)
