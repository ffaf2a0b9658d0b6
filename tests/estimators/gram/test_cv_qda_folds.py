"""``cross_validate_dims(..., classifier="qda")`` refuses, before its pass, a d that a training fold's smallest class
cannot carry (before issue 22: a LinAlgError traceback from the fold's QDA)."""

from __future__ import annotations

import numpy as np
import pytest

from wideml import LOL, cross_validate_dims
from wideml.exceptions import WidemlError


def _data(per_class: int = 10, p: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], per_class)
    X = rng.standard_normal((y.size, p)) + y[:, None]
    return X, y


def test_qda_beyond_the_smallest_training_class_is_one_sentence():
    X, y = _data()
    with pytest.raises(WidemlError) as excinfo:  # 3 folds: a class keeps 6 or 7 of its 10 samples in training
        cross_validate_dims({"lol": LOL(n_components=8)}, X, y, cv=3, classifier="qda")
    message = str(excinfo.value)
    assert "\n" not in message and "QDA" in message and "at most d = 5" in message and "--classifier lda" in message


def test_qda_within_the_bound_is_scored():
    X, y = _data()
    report = cross_validate_dims({"lol": LOL(n_components=5)}, X, y, cv=3, classifier="qda")
    errors = report.to_dict()["results"]["lol"]
    assert errors is not None and report.n_passes == 1
