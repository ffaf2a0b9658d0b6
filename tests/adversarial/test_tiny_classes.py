"""Tiny classes (issue 22): refused from the labels, before any pass over X, in one sentence; what is possible still fits.

The rules (wideml/estimators/class_sizes.py): LDA (the classifier after LOL, PCA,
rrLDA, LFL, kernel LOL, and the encoder's own) needs some class with 2 samples;
QDA on a d-dimensional embedding needs d + 1 samples in every class and d <= p;
the NCA/LMNN/DNE learners need some class with 2 samples. Embeddings that do not
need a within-class covariance (PCA, LOL's centroid differences, LFL) fit on one
sample per class. Every refusal names the class, its count and the fix, exits 2
with no traceback, reads no chunk of X and leaves the output folder as it was.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from adversarial.harness import assert_api_refused, assert_refused, run_cli
from wideml import open_store, write_store
from wideml.estimators.classifier import EmbeddingClassifier
from wideml.estimators.encoder.estimator import EncoderClassifier
from wideml.estimators.kernel.kernel_lol import KernelLOL
from wideml.estimators.kernel.kpca import KernelPCA
from wideml.estimators.kernel.kpca_trick import KPCATrick
from wideml.estimators.lfl import LFL
from wideml.estimators.gram.lol import LOL, PCA
from wideml.exceptions import WidemlError
from wideml.storage.reader import READ_COUNTER

P = 120


def _write(folder, name, sizes, p=P, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.array(["a", "b", "c", "d"][: len(sizes)]), sizes)
    codes = np.unique(y, return_inverse=True)[1]
    X = (rng.normal(size=(len(y), p)) + 2.0 * np.eye(len(sizes))[codes] @ rng.normal(size=(len(sizes), p))).astype(np.float32)
    path = folder / f"{name}.zarr"
    write_store(path, X, y, feature_chunk=min(p, 40))
    return path


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_classes")
    return {
        "singletons": _write(folder, "singletons", [1, 1, 1]),  # one sample per class
        "one_small": _write(folder, "one_small", [6, 6, 1]),  # class 'c' has one sample
        "pair": _write(folder, "pair", [6, 6, 2]),  # class 'c' has two
        "p1": _write(folder, "p1", [10, 10], p=1),  # one feature
    }


def _reads() -> int:
    return sum(READ_COUNTER.values())


# --------------------------------------------------------------------------- API: refused before any pass

REFUSED = [
    ("singletons", lambda: EmbeddingClassifier(LOL()), ("single sample", "class 'a' has 1 sample", "lda", "at least 2 samples")),
    ("singletons", lambda: EmbeddingClassifier(PCA()), ("single sample", "class 'a'", "lda", "at least 2 samples")),
    ("singletons", lambda: EmbeddingClassifier(LFL()), ("single sample", "class 'a'", "lda", "at least 2 samples")),
    ("singletons", lambda: EmbeddingClassifier(LOL(second_moment="quadratic"), "qda"), ("class 'a' has 1 sample", "qda", "classifier='lda'")),
    ("singletons", lambda: EncoderClassifier(), ("single sample", "class 'a'", "encoder's lda", "at least 2 samples")),
    ("singletons", lambda: KPCATrick(), ("single sample", "class 'a'", "nca", "at least 2 samples")),
    ("singletons", lambda: KPCATrick(learner="lmnn"), ("single sample", "lmnn", "at least 2 samples")),
    ("singletons", lambda: KernelLOL(n_components=2), ("single sample", "class 'a'", "lda")),
    ("one_small", lambda: EmbeddingClassifier(LOL(), "qda"), ("class 'c' has 1 sample", "3 x 3", "at least 4 samples", "classifier='lda'")),
    ("one_small", lambda: EmbeddingClassifier(LOL(1), "qda"), ("class 'c' has 1 sample", "at least 2 samples", "classifier='lda'")),
    ("one_small", lambda: KernelLOL(n_components=2, classifier="qda"), ("class 'c' has 1 sample", "at least 3 samples")),
    ("pair", lambda: EmbeddingClassifier(LOL(), "qda"), ("class 'c' has 2 samples", "at least 4", "lower n_components to 1")),
    ("p1", lambda: EmbeddingClassifier(LOL(2, second_moment="quadratic"), "qda"), ("singular", "1 feature", "n_components to 1", "lda")),
    ("pair", lambda: KernelLOL(n_components=20), ("n_components=20", "14 samples", "at most n_samples - 1 = 13")),
]


@pytest.mark.parametrize("store_name, make, words", REFUSED, ids=[f"{s}-{i}" for i, (s, _, _) in enumerate(REFUSED)])
def test_api_refuses_before_any_pass(stores, store_name, make, words):
    store = open_store(stores[store_name])
    before = _reads()
    with pytest.raises(WidemlError) as excinfo:
        make().fit(store, store.y)
    assert_api_refused(excinfo, *words)
    assert _reads() == before, "a chunk of X was read before the refusal"


def test_in_memory_input_refused_the_same_way():
    X = np.random.default_rng(1).normal(size=(3, 30))
    with pytest.raises(WidemlError) as excinfo:
        EmbeddingClassifier(PCA()).fit(X, ["x", "y", "z"])
    assert_api_refused(excinfo, "single sample", "class 'x'")


# --------------------------------------------------------------------------- API: what is possible still fits


@pytest.mark.parametrize("make", [lambda: PCA(2), lambda: LOL(2), lambda: LFL(2), lambda: KernelPCA(),
                                  lambda: KPCATrick(learner="none")], ids=["pca", "lol-centroids", "lfl", "kpca", "kpca-none"])
def test_embeddings_fit_one_sample_per_class(stores, make):
    store = open_store(stores["singletons"])
    est = make().fit(store, store.y)
    Z = est.transform(store)
    assert Z.shape[0] == 3 and np.isfinite(Z).all()


def test_lda_with_one_singleton_class_fits(stores):
    store = open_store(stores["one_small"])
    clf = EmbeddingClassifier(LOL()).fit(store)
    assert set(clf.predict(store)) <= {"a", "b", "c"}


def test_qda_at_the_boundary_fits(stores):
    """Two samples in the smallest class: QDA on a 1-dimensional embedding (d + 1 = 2) fits, and predicts."""
    store = open_store(stores["pair"])
    clf = EmbeddingClassifier(LOL(1), "qda").fit(store)
    assert clf.predict(store).shape == (14,)


def test_qda_on_one_feature_with_one_dimension_fits(stores):
    clf = EmbeddingClassifier(LOL(1, second_moment="quadratic"), "qda").fit(open_store(stores["p1"]))
    assert clf.embedding_.n_components_ == 1


# --------------------------------------------------------------------------- data-dependent singular covariances


def _repeated(n_per_class=3, p=20):
    """Every class's samples are copies of one sample: no within-class spread at all."""
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], n_per_class)
    X = np.repeat(rng.normal(size=(2, p)), n_per_class, axis=0)
    return X, y


@pytest.mark.parametrize("classifier, words", [("qda", ("covariance of class 0 is singular", "3 samples", "lda")),
                                                ("lda", ("do not vary within any class", "repeated"))])
def test_repeated_samples_refused_after_the_fit(classifier, words):
    X, y = _repeated()
    with pytest.raises(WidemlError) as excinfo:
        EmbeddingClassifier(LOL(1), classifier).fit(X, y)
    assert_api_refused(excinfo, *words)


# --------------------------------------------------------------------------- CLI: exit 2, one sentence, nothing left behind

CLI = [
    ("singletons", ["lol"], ("single sample", "class 'a' has 1 sample")),
    ("singletons", ["pca"], ("single sample", "class 'a'")),
    ("singletons", ["lfl"], ("single sample", "class 'a'")),
    ("singletons", ["encoder"], ("single sample", "encoder")),
    ("singletons", ["kpca-nca"], ("single sample", "nca")),
    ("singletons", ["kernel-lol"], ("single sample", "lda")),
    ("singletons", ["qoq"], ("class 'a' has 1 sample", "qda")),
    ("one_small", ["lol", "--classifier", "qda"], ("class 'c' has 1 sample", "qda", "--classifier lda")),
    ("p1", ["qoq", "--n-components", "2"], ("singular", "1 feature", "n_components to 1")),
]


@pytest.mark.parametrize("store_name, args, words", CLI, ids=[f"{s}-{'-'.join(a)}" for s, a, _ in CLI])
def test_cli_refuses_and_leaves_nothing(stores, tmp_path, store_name, args, words):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("the user's file\n")
    before = sorted(os.listdir(out))
    proc = run_cli("fit", args[0], stores[store_name], "-o", out / "model", *args[1:], cwd=out)
    assert_refused(proc, *words)
    assert sorted(os.listdir(out)) == before  # no model, no model.wideml-work, no partial output


def test_cli_fits_what_is_possible(stores, tmp_path):
    proc = run_cli("fit", "qoq", stores["p1"], "-o", tmp_path / "model", "--n-components", 1)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["model"]
    proc = run_cli("fit", "qoq", stores["p1"], "-o", tmp_path / "default")  # the default d is capped at p = 1
    assert proc.returncode == 0 and "d = 1" in proc.stdout, proc.stdout + proc.stderr


def test_qoq_through_the_api_names_the_small_class_by_its_label_before_any_pass():
    import numpy as np

    from wideml import LOL
    from wideml.exceptions import WidemlError

    rng = np.random.default_rng(0)
    y = np.array(["ctrl"] * 10 + ["case"] * 10 + ["rare"])
    X = rng.standard_normal((y.size, 30))
    with pytest.raises(WidemlError, match="class 'rare' has 1 sample, but QOQ estimates a covariance per class"):
        LOL(n_components=2, second_moment="quadratic").fit(X, y)
