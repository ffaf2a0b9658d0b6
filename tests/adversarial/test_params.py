"""Invalid parameters are refused before any pass over X; PCA needs no labels; `wideml cv` checks its methods up front.

Every refusal case counts the store reads (``READ_COUNTER``) around the call:
X must not have been read at all when the sentence comes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.decomposition import PCA as SkPCA
from sklearn.model_selection import StratifiedKFold

from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, run_cli

import wideml
from wideml import (LFL, LOL, PCA, RRLDA, EmbeddingClassifier, EncoderClassifier, KernelLOL, KernelPCA, KPCATrick,
                    cross_validate_dims, cross_validate_encoder)
from wideml.exceptions import WidemlError
from wideml.storage.reader import READ_COUNTER


def _reads() -> int:
    return sum(READ_COUNTER.values())


BAD = [
    (lambda: LOL(second_moment="cubic"), ("LOL parameter second_moment='cubic' is not valid; use one of 'linear', 'quadratic'.",)),
    (lambda: LOL(robust_first="yes"), ("robust_first='yes'", "True or False")),
    (lambda: LOL(-3), ("n_components=-3", "integer >= 1")),
    (lambda: LOL(2, second_moment="quadratic", solver="randomized"), ("second_moment='quadratic'", "solver='gram'")),
    (lambda: PCA(solver="magic"), ("PCA parameter solver='magic'", "'gram'")),
    (lambda: RRLDA(precision="float16"), ("precision='float16'", "'float32'")),
    (lambda: RRLDA(n_power_iter=-1), ("n_power_iter=-1",)),
    (lambda: LFL(density=2.0), ("LFL parameter density=2.0", "(0, 1]")),
    (lambda: LFL(random_state="seven"), ("random_state='seven'",)),
    (lambda: EncoderClassifier(kernels="linear,rbf"), ("unknown kernel 'rbf'",)),
    (lambda: EncoderClassifier(switch_threshold=1.5), ("switch_threshold=1.5", "[0, 1)")),
    (lambda: EncoderClassifier(selection="accuracy"), ("selection='accuracy'", "'cross_entropy'")),
    (lambda: KPCATrick(sigma=0), ("KPCATrick parameter sigma=0", "> 0")),
    (lambda: KPCATrick(learner="svm"), ("learner='svm'", "'nca'")),
    (lambda: KPCATrick(sigmas=[1.0, -2.0], selection="sum"), ("sigmas=",)),
    (lambda: KPCATrick(target_space="input", n_landmarks=10), ("target_space='input'", "n_landmarks")),
    (lambda: KernelPCA(kernel="sigmoid"), ("KernelPCA parameter kernel='sigmoid'", "'rbf'")),
    (lambda: KernelLOL(first_moment="median"), ("first_moment='median'", "'mean'")),
    (lambda: KernelLOL(degree=0, kernel="poly"), ("degree=0",)),
    (lambda: EmbeddingClassifier(classifier="svm"), ("classifier='svm'", "'lda'")),
    (lambda: EmbeddingClassifier(LOL(second_moment="cubic")), ("second_moment='cubic'",)),
    (lambda: EmbeddingClassifier(embedding="lol"), ("embedding='lol'", "LOL, PCA, RRLDA, LFL or RP instance")),
]


@pytest.mark.parametrize("make, words", BAD, ids=[f"{i}" for i in range(len(BAD))])
def test_bad_parameter_refused_before_any_pass(make, words, adv_stores):
    """Each invalid value: one sentence naming it and what to use, and X of the store never read."""
    store = wideml.open_store(adv_stores[0])
    before = _reads()
    with pytest.raises(WidemlError) as excinfo:
        make().fit(store.X, store.y)
    assert_api_refused(excinfo, *words)
    assert _reads() == before, "X was read before the parameter was refused"


@pytest.mark.parametrize("call, words", [
    (lambda s: cross_validate_dims(LOL(3), s, classifier="svm"), ("cross_validate_dims parameter classifier='svm'",)),
    (lambda s: cross_validate_dims(LOL(3), s, dims=[0, 2]), ("dims=[0, 2]", "positive integers")),
    (lambda s: cross_validate_dims(LOL(3), s, dims=[50]), ("dims=[50]", "d_max = 3")),
    (lambda s: cross_validate_dims(LOL(200), s, cv=3), ("200 dimensions", "at most")),
    (lambda s: cross_validate_dims({"pca": SkPCA(3)}, s), ("not one cross-validated from one pass", "refitting per fold")),
    (lambda s: cross_validate_dims(LOL(3), s, cv=1), ("cv=1", "integer >= 2")),
    (lambda s: cross_validate_encoder(s, cv=1), ("cross_validate_encoder parameter cv=1",)),
    (lambda s: cross_validate_encoder(s, kernels="linear", sketch_size=3), ("sketch_size=3",)),
], ids=["classifier", "dims-zero", "dims-beyond", "dmax-too-large", "not-gram", "cv-1", "enc-cv-1", "enc-sketch"])
def test_bad_cv_argument_refused_before_any_pass(call, words, adv_stores):
    store = wideml.open_store(adv_stores[0])
    before = _reads()
    with pytest.raises(WidemlError) as excinfo:
        call(store)
    assert_api_refused(excinfo, *words)
    assert _reads() == before


def test_every_estimator_has_a_complete_constraint_table():
    """One constraint per __init__ parameter, for every public estimator (an unchecked parameter is a silent default)."""
    for cls in (LOL, PCA, RRLDA, LFL, EmbeddingClassifier, EncoderClassifier, KPCATrick, KernelPCA, KernelLOL):
        est = cls()
        assert set(cls._parameter_constraints) == set(est.get_params(deep=False)), cls.__name__
        est._validate_parameters()  # the defaults are valid


def test_edited_parameter_in_model_file_refused_on_load(tmp_path, adv_data):
    """A model whose saved parameters were edited to an invalid value is refused when loaded, not used."""
    X, y, _, _ = adv_data
    wideml.save_model(LOL(3).fit(X, y), tmp_path / "m.zarr")
    meta_path = tmp_path / "m.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["attributes"]["wideml"]["params"]["second_moment"] = "cubic"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(WidemlError) as excinfo:
        wideml.load_model(tmp_path / "m.zarr")
    assert_api_refused(excinfo, "second_moment='cubic'")


def test_cli_bad_parameter_refused_before_writing(tmp_path, adv_stores):
    """`wideml fit kpca-nca --sigma 0`: one sentence, exit 2, no model and nothing half-written."""
    proc = run_cli("fit", "kpca-nca", adv_stores[0], "-o", tmp_path / "m.zarr", "--sigma", "0", cwd=tmp_path)
    assert_refused(proc, "sigma=0", "> 0")
    assert not (tmp_path / "m.zarr").exists()
    assert_no_debris(tmp_path)


def test_cli_negative_power_iterations_refused(tmp_path, adv_stores):
    proc = run_cli("fit", "lol", adv_stores[0], "-o", tmp_path / "m.zarr", "--n-power-iter", "-1", cwd=tmp_path)
    assert_refused(proc, "n_power_iter=-1")
    assert not (tmp_path / "m.zarr").exists()


@pytest.mark.parametrize("methods", ["nonsense", "lol,nonsense", ","])
def test_cli_cv_unknown_method_refused_before_any_pass(methods, tmp_path, adv_stores):
    """`wideml cv --methods nonsense` (also after a valid one): refused before the Gram pass, no report written."""
    proc = run_cli("cv", adv_stores[0], "--methods", methods, "--folds", "3", "-o", tmp_path / "cv.json", cwd=tmp_path)
    assert_refused(proc, "method")
    assert "best d" not in proc.stdout  # no method's cross-validation ran
    assert not (tmp_path / "cv.json").exists()


def test_cli_cv_too_many_folds_refused_before_any_pass(tmp_path, adv_stores):
    proc = run_cli("cv", adv_stores[0], "--methods", "lol,lfl", "--folds", "31", cwd=tmp_path)
    assert_refused(proc, "--folds 31", "smallest class has 30")
    assert "best d" not in proc.stdout


def test_cli_cv_lfl_matches_per_fold_oracle(tmp_path, adv_stores, adv_data):
    """`wideml cv --methods lfl` works; its fold errors equal LFL + LDA refitted per fold in memory."""
    X, y, _, _ = adv_data
    proc = run_cli("cv", adv_stores[0], "--methods", "lol,lfl", "--folds", "3", "--seed", "4", "-o", tmp_path / "cv.json",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "cv.json").read_text())
    lfl = report["results"]["lfl"]  # LFL joins the sweep over d: fold errors per d, here at d = 3
    d = 3
    got = [row[lfl["dims"].index(d)] for row in lfl["fold_errors"]]
    expected = []
    for train, test in StratifiedKFold(3, shuffle=True, random_state=4).split(np.zeros((len(y), 1)), y):
        train, test = np.sort(train), np.sort(test)
        model = EmbeddingClassifier(LFL(n_components=d, random_state=4)).fit(X[train], y[train])
        expected.append(float(np.mean(model.predict(X[test]) != y[test])))
    assert got == pytest.approx(expected, abs=1e-12)
    assert max(got) < 0.2  # well-separated classes: LFL works, not at chance
    assert "lol" in report["results"]


def _principal_angles(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Principal angles (radians) between the row spaces of A and B."""
    qa, _ = np.linalg.qr(A.T)
    qb, _ = np.linalg.qr(B.T)
    return np.arccos(np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), -1, 1))


def test_pca_without_labels_equals_sklearn(tmp_path, adv_data):
    """PCA().fit(X) with no y: sklearn's principal subspace and scores (up to sign), before and after save/load."""
    X, _, Xt, _ = adv_data
    X64, Xt64 = X.astype(np.float64), Xt.astype(np.float64)
    ours = PCA(4, precision="float64").fit(X64)
    ref = SkPCA(4, svd_solver="full").fit(X64)
    assert np.max(_principal_angles(np.asarray(ours.components_), ref.components_)) < 1e-6
    wideml.save_model(ours, tmp_path / "pca.zarr")
    loaded = wideml.load_model(tmp_path / "pca.zarr")
    Z, Zref = loaded.transform(Xt64), ref.transform(Xt64)
    signs = np.sign(np.sum(Z * Zref, axis=0))
    np.testing.assert_allclose(Z * signs, Zref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(PCA(4, precision="float64").fit_transform(X64) * signs, ref.transform(X64), rtol=1e-6, atol=1e-6)


def test_pca_on_unlabelled_store(tmp_path, adv_data):
    """An unlabelled store (a prediction-only store) fits PCA; the default keeps min(n - 1, p, 10) components."""
    X, _, _, _ = adv_data
    wideml.write_store(tmp_path / "u.zarr", X.astype(np.float64), None, feature_chunk=100)
    store = wideml.open_store(tmp_path / "u.zarr")
    ours = PCA(precision="float64").fit(store)
    ref = SkPCA(10, svd_solver="full").fit(X.astype(np.float64))
    assert ours.n_components_ == 10
    assert np.max(_principal_angles(np.asarray(ours.components_), ref.components_)) < 1e-6


@pytest.mark.parametrize("make", [lambda: LOL(2), lambda: RRLDA(2), lambda: LFL(2), lambda: EmbeddingClassifier(PCA(2))],
                         ids=["lol", "rrlda", "lfl", "clf-pca"])
def test_supervised_methods_still_require_labels(make, adv_data):
    X, _, _, _ = adv_data
    with pytest.raises(WidemlError) as excinfo:
        make().fit(X)
    assert_api_refused(excinfo, "requires y to be passed")
