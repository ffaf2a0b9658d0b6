"""Adversarial: an array read from a fitted estimator's work folder outlives the estimator.

``np.asarray(LOL(3).fit(store).components_)`` used to return zeros: the estimator was
collected, its work folder removed, and zarr read the missing chunks as the fill value.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import wideml


def _fitted_array(kind: str, store):
    if kind == "lol-gram":
        return wideml.LOL(3, solver="gram").fit(store).components_
    if kind == "lol-randomized":
        return wideml.LOL(3, solver="randomized").fit(store).components_
    if kind == "class-means":
        return wideml.LOL(3, solver="gram").fit(store).class_means_
    if kind == "lfl":
        return wideml.LFL(3).fit(store).centroids_
    return wideml.EncoderClassifier(kernels=("linear",)).fit(store).class_means_


@pytest.mark.parametrize("kind", ["lol-gram", "lol-randomized", "class-means", "lfl", "encoder"])
def test_array_of_a_dropped_estimator_keeps_its_values(adv_stores, kind):
    store = wideml.open_store(adv_stores[0])
    kept = np.asarray(_fitted_array(kind, store))  # the estimator is alive while this is read
    arr = _fitted_array(kind, store)  # the estimator is dropped at once
    gc.collect()
    values = np.asarray(arr)
    assert np.abs(values).max() > 0, "the work folder was removed under a live array (read as zeros)"
    np.testing.assert_allclose(values, kept, rtol=1e-6, atol=1e-9)


def test_work_folder_goes_when_the_last_array_goes(adv_stores, tmp_path):
    store = wideml.open_store(adv_stores[0])
    arr = wideml.LOL(3, solver="gram", workdir=tmp_path).fit(store).components_
    gc.collect()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("wideml-fit-")], "folder removed too early"
    del arr
    gc.collect()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("wideml-fit-")], "work folder left behind"
