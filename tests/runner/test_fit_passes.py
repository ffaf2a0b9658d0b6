"""Every estimator's ``n_fit_passes_`` equals the passes its fit made over the store, counted chunk by chunk."""

from __future__ import annotations

import numpy as np
import pytest

from wideml import (LFL, LOL, PCA, RRLDA, EmbeddingClassifier, EncoderClassifier, KernelLOL, KernelPCA, KPCATrick, load_model,
                    open_store, save_model, write_store)
from wideml.storage.reader import READ_COUNTER

N, P, CHUNK = 60, 3000, 500


ESTIMATORS = [
    pytest.param(lambda: LOL(4, solver="gram", robust_first=False), id="lol-gram"),
    pytest.param(lambda: LOL(4, solver="gram", robust_first=True), id="lol-gram-robust"),
    pytest.param(lambda: LOL(4, solver="randomized", robust_first=False), id="lol-randomized"),
    pytest.param(lambda: LOL(4, solver="randomized", robust_first=True, n_power_iter=2), id="lol-randomized-robust-q2"),
    pytest.param(lambda: LOL(4, solver="gram", second_moment="quadratic"), id="qoq"),
    pytest.param(lambda: PCA(4, solver="gram"), id="pca-gram"),
    pytest.param(lambda: PCA(4, solver="randomized"), id="pca-randomized"),
    pytest.param(lambda: RRLDA(4, solver="gram"), id="rrlda-gram"),
    pytest.param(lambda: RRLDA(4, solver="randomized"), id="rrlda-randomized"),
    pytest.param(lambda: LFL(4), id="lfl"),
    pytest.param(lambda: LFL(4, robust_first=True), id="lfl-robust"),
    pytest.param(lambda: EncoderClassifier(kernels="linear,euclidean"), id="encoder-linear-euclidean"),
    pytest.param(lambda: EncoderClassifier(kernels="spearman"), id="encoder-spearman"),
    pytest.param(lambda: EncoderClassifier(selection="cv_cross_entropy"), id="encoder-all-kernels-cv"),
    pytest.param(lambda: EncoderClassifier(kernels="linear", form="full"), id="encoder-full-form"),
    pytest.param(lambda: KPCATrick(learner="nca", learner_params={"max_iter": 5}), id="kpca-nca"),
    pytest.param(lambda: KPCATrick(learner="lmnn", learner_params={"max_iter": 5}), id="kpca-lmnn"),
    pytest.param(lambda: KPCATrick(learner="dne", selection="cv", cv=3, sigmas=[0.1, 1.0, 10.0]), id="kpca-dne-cv"),
    pytest.param(lambda: KernelPCA(n_components=4), id="kernel-pca"),
    pytest.param(lambda: KernelPCA(n_components=4, n_landmarks=20), id="kernel-pca-landmarks"),
    pytest.param(lambda: KernelLOL(n_components=4), id="kernel-lol"),
    pytest.param(lambda: EmbeddingClassifier(LOL(4, solver="randomized")), id="embedding-classifier"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(16)
    y = np.arange(N) % 3
    X = rng.standard_normal((N, P)) + 0.7 * y[:, None] * (np.arange(P) < 40)
    path = write_store(tmp_path_factory.mktemp("passes") / "s.zarr", X, y, feature_chunk=CHUNK)
    return open_store(path)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_n_fit_passes_counts_the_reads(store, make):
    est = make()
    key = str(store.path)
    before = READ_COUNTER[key]
    if isinstance(est, (KPCATrick, KernelLOL)):
        est.fit(store, store.y)  # their fit takes y separately, even from a store
    else:
        est.fit(store)
    reads = READ_COUNTER[key] - before
    chunks = store.X.numblocks[1]
    assert chunks == P // CHUNK
    assert reads % chunks == 0, f"{reads} chunk reads is not a whole number of passes over {chunks} chunks"
    assert est.n_fit_passes_ == reads // chunks, f"n_fit_passes_={est.n_fit_passes_}, reads={reads}, chunks={chunks}"


KERNEL_MODELS = [
    pytest.param(lambda: KernelPCA(n_components=4), id="kernel-pca"),
    pytest.param(lambda: KernelPCA(n_components=4, n_landmarks=20), id="kernel-pca-landmarks"),
    pytest.param(lambda: KPCATrick(learner="none", n_components=4), id="kpca-trick"),
    pytest.param(lambda: KernelLOL(n_components=2), id="kernel-lol"),
]


def _fit(est, store):
    return est.fit(store) if isinstance(est, KernelPCA) else est.fit(store, store.y)


@pytest.mark.parametrize("make", KERNEL_MODELS)
def test_kernel_models_keep_n_fit_passes_through_save_and_load(store, make, tmp_path):
    est = _fit(make(), store)
    save_model(est, tmp_path / "m.zarr")
    assert load_model(tmp_path / "m.zarr").n_fit_passes_ == est.n_fit_passes_ == 1


@pytest.mark.parametrize("make", KERNEL_MODELS)
def test_kernel_model_saved_before_n_fit_passes_was_recorded_still_loads(store, make, tmp_path):
    """A model without the state entry (saved before it existed) loads, with the one pass every kernel fit makes."""
    import json

    est = _fit(make(), store)
    save_model(est, tmp_path / "m.zarr")
    meta = tmp_path / "m.zarr" / "zarr.json"
    doc = json.loads(meta.read_text())
    del doc["attributes"]["wideml"]["state"]["n_fit_passes"]
    meta.write_text(json.dumps(doc))
    loaded = load_model(tmp_path / "m.zarr")
    assert loaded.n_fit_passes_ == 1
    np.testing.assert_allclose(loaded.embedding_, est.embedding_)


@pytest.mark.parametrize("make", [
    pytest.param(lambda: LOL(4, solver="gram"), id="lol-gram"),
    pytest.param(lambda: LOL(4, solver="randomized", n_power_iter=2), id="lol-randomized-q2"),
    pytest.param(lambda: LFL(4), id="lfl"),
    pytest.param(lambda: EmbeddingClassifier(LOL(4, solver="randomized")), id="embedding-classifier"),
])
def test_projector_and_lfl_models_keep_n_fit_passes(store, make, tmp_path):
    est = make().fit(store)
    save_model(est, tmp_path / "m.zarr")
    assert load_model(tmp_path / "m.zarr").n_fit_passes_ == est.n_fit_passes_
