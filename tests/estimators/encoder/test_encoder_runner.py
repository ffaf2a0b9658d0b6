"""The encoder's fits run through the one fit runner (estimators/_passes.py), and make no hidden passes.

- every fit pass is numbered "pass i/total" in its label, and ``n_fit_passes_`` equals the chunk reads of the store;
- a full-form linear encoder keeps the class means its Gram pass computed: ``save_model`` reads no training
  data, and ``transform`` reads only the new data (tests/runner/test_fit_passes.py counts reads the same way).
"""

from __future__ import annotations

import numpy as np
import pytest

import wideml.runtime
from wideml import EncoderClassifier, cross_validate_encoder, load_model, open_store, save_model, write_store
from wideml.storage.reader import READ_COUNTER

N, P, K, WIDTH = 45, 120, 3, 25
CHUNKS = P // WIDTH + (P % WIDTH > 0)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(7)
    y = np.arange(N) % K
    X = rng.standard_normal((N, P)) + 0.8 * y[:, None] * (np.arange(P) < 15)
    Xnew = rng.standard_normal((12, P)) + 0.8 * (np.arange(12) % K)[:, None] * (np.arange(P) < 15)
    d = tmp_path_factory.mktemp("runner")
    train = write_store(d / "train.zarr", X, y, feature_chunk=WIDTH, dtype="float64")
    new = write_store(d / "new.zarr", Xnew, np.arange(12) % K, feature_chunk=WIDTH, dtype="float64")
    return X, y, Xnew, train, new


def _reads(path) -> int:
    return READ_COUNTER[str(open_store(path).path)]


@pytest.fixture
def labels(monkeypatch):
    """The labels of the passes computed (every graph goes through wideml.runtime.compute)."""
    seen: list[str] = []
    real = wideml.runtime.compute

    def recording(*collections, label="pass"):
        seen.append(label)
        return real(*collections, label=label)

    monkeypatch.setattr(wideml.runtime, "compute", recording)
    return seen


def _oracle_linear(X, y, Xnew):
    """Full-form linear encoder from its definition: A W with A = X_new X^T, an LDA on the training embedding."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    W = np.eye(K)[y] / np.bincount(y)
    lda = LinearDiscriminantAnalysis().fit(X @ X.T @ W, y)
    return Xnew @ X.T @ W, lda.predict(Xnew @ X.T @ W)


def test_full_linear_model_saves_and_transforms_without_reading_the_training_data(data, tmp_path):
    X, y, Xnew, train, new = data
    est = EncoderClassifier(kernels="linear", form="full").fit(open_store(train))
    assert est.n_fit_passes_ == 1 and est._train_X is None
    before = _reads(train)
    save_model(est, tmp_path / "m.zarr")
    assert _reads(train) == before, "save_model read the training data"
    before_train, before_new = _reads(train), _reads(new)
    Z = est.transform(open_store(new))
    pred = est.predict(open_store(new))
    assert _reads(train) == before_train, "transform read the training data"
    assert _reads(new) - before_new == 2 * CHUNKS  # one pass each for transform and predict
    back = load_model(tmp_path / "m.zarr")
    before_train = _reads(train)
    np.testing.assert_array_equal(back.predict(open_store(new)), pred)
    np.testing.assert_allclose(back.transform(Xnew), Z, rtol=1e-12, atol=1e-12)
    assert _reads(train) == before_train, "the loaded model read the training data"
    Z_ref, pred_ref = _oracle_linear(X, y, Xnew)
    np.testing.assert_allclose(Z, Z_ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(pred, pred_ref)


def test_full_linear_model_of_in_memory_data_keeps_its_class_means(data, tmp_path, labels):
    X, y, Xnew, _, _ = data
    est = EncoderClassifier(kernels="linear", form="full").fit(X, y)
    assert labels == [] and isinstance(est.class_means_, np.ndarray)  # the pass ran directly on X (no graph)
    assert est.n_fit_passes_ == 1 and est._train_X is None
    np.testing.assert_allclose(est.class_means_, np.stack([X[y == k].mean(0) for k in range(K)]), rtol=1e-12, atol=1e-12)
    save_model(est, tmp_path / "m.zarr")
    assert labels == []  # saving computed nothing
    back = load_model(tmp_path / "m.zarr")
    Z_ref, pred_ref = _oracle_linear(X, y, Xnew)
    np.testing.assert_array_equal(back.predict(Xnew), pred_ref)
    np.testing.assert_array_equal(est.predict(Xnew), pred_ref)
    np.testing.assert_allclose(back.transform(Xnew), Z_ref, rtol=1e-9, atol=1e-9)


def test_full_form_with_a_kernel_other_than_linear_selected_still_reads_its_training_data(data):
    X, y, Xnew, train, new = data
    est = EncoderClassifier(kernels="euclidean", form="full").fit(open_store(train))
    assert est.class_means_ is None and est._train_X is not None
    before = _reads(train)
    est.transform(open_store(new))
    assert _reads(train) - before == CHUNKS  # the cross-Gram pass (documented)


@pytest.mark.parametrize("kernels,spearman,block,total", [
    ("linear,euclidean", "auto", None, 1),
    ("linear,spearman", "approx", None, 2),
    ("spearman", "exact", None, 2),
    ("linear,spearman", "exact", 10, 6),  # exact ranks in 5 row blocks: one pass each
])
def test_fit_passes_are_numbered_and_counted(data, labels, monkeypatch, kernels, spearman, block, total):
    _, _, _, train, _ = data
    if block is not None:
        from wideml.estimators.encoder import fit as _encoder_fit

        monkeypatch.setattr(_encoder_fit, "_exact_block_rows", lambda n, p, anchors: block)
    before = _reads(train)
    est = EncoderClassifier(kernels=kernels, spearman=spearman).fit(open_store(train))
    assert est.n_fit_passes_ == total
    assert _reads(train) - before == total * CHUNKS
    assert labels == [f"EncoderClassifier fit, pass {i}/{total}: " + labels[i - 1].split(": ", 1)[1] for i in range(1, total + 1)]


def test_in_memory_fit_runs_its_passes_without_a_graph(data, labels, monkeypatch):
    X, y, _, _, _ = data
    from wideml.estimators.encoder import fit as _encoder_fit

    monkeypatch.setattr(_encoder_fit, "_exact_block_rows", lambda n, p, anchors: 20)
    est = EncoderClassifier(kernels="linear,spearman", spearman="exact").fit(X, y)
    assert est.n_fit_passes_ == 1 + 3 and labels == []


def test_cross_validation_passes_are_numbered_and_counted(data, labels):
    _, _, _, train, _ = data
    before = _reads(train)
    out = cross_validate_encoder(open_store(train), cv=3, kernels="linear,spearman", spearman="approx")
    assert out["n_passes"] == 2 and _reads(train) - before == 2 * CHUNKS
    assert [lab.split(":")[0] for lab in labels] == ["encoder cross-validation, pass 1/2", "encoder cross-validation, pass 2/2"]


def test_fast_model_keeps_only_the_selected_kernels_arrays(data, tmp_path):
    """The rank arrays are saved only when spearman is selected; in-memory class means are saved chunked like X."""
    import zarr

    X, y, _, _, _ = data
    est = EncoderClassifier(kernels="linear,spearman", baseline="linear", switch_threshold=0.99).fit(X, y)
    assert est.kernel_ == "linear" and est.class_mean_ranks_ is not None
    save_model(est, tmp_path / "m.zarr")
    group = zarr.open_group(str(tmp_path / "m.zarr"), mode="r")
    assert "class_mean_ranks" not in group and "rank_sums" not in group
    assert group["class_means"].chunks == (K, est.feature_chunk_)


@pytest.mark.parametrize("width", [7, 25, P])  # ragged last chunk, several chunks, one chunk
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_full_linear_class_means_match_the_oracle_across_chunkings(tmp_path, width, dtype):
    """The class means a full-form linear fit keeps (from its one Gram pass) equal W^T X, whatever the chunking."""
    rng = np.random.default_rng(11)
    y = np.arange(N) % K
    X = (rng.standard_normal((N, P)) + 3.0).astype(dtype)
    store = open_store(write_store(tmp_path / "s.zarr", X, y, feature_chunk=width, dtype=dtype))
    W = np.eye(K)[y] / np.bincount(y)
    oracle = W.T @ X.astype(np.float64)
    for source in (store, X):
        est = EncoderClassifier(kernels="linear", form="full", workdir=str(tmp_path)).fit(source, None if source is store else y)
        np.testing.assert_allclose(np.asarray(est.class_means_), oracle, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
        assert est.n_fit_passes_ == 1
