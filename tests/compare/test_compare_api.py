"""wideml.compare: per store the numbers cross_validate_dims gives, ranks, exact Wilcoxon tests, refusals reported."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st

import wideml
from wideml import LOL, PCA, RP, compare, cross_validate_dims, open_store
from wideml.estimators.compare import METHOD_NAMES, build_method
from wideml.estimators.gram.cv import repeated_folds
from wideml.estimators.wilcoxon import signed_rank_test
from wideml.exceptions import WidemlError

METHODS = ("lol", "pca", "rp")
CV, REPEATS, MAX_DIM = 4, 2, 4


def _data(seed: int, shift: float, n: int = 40, p: int = 200):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.arange(n) % 2
    X[y == 1, :6] += shift
    return X, y


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    out = {}
    for i, shift in enumerate((0.6, 1.0, 1.5)):
        X, y = _data(i, shift)
        out[f"s{i}"] = wideml.write_store(folder / f"s{i}.zarr", X, y, feature_chunk=[48, 64, 200][i])
    return out


@pytest.fixture(scope="module")
def result(stores):
    return compare(list(stores.values()), METHODS, cv=CV, repeats=REPEATS, max_dim=MAX_DIM)


def test_each_store_holds_what_cross_validate_dims_gives(stores, result):
    assert list(result.stores) == ["s0", "s1", "s2"]  # named after their files
    for name, path in stores.items():
        ests = {m: build_method(m, MAX_DIM) for m in METHODS}
        report = cross_validate_dims(ests, open_store(path), cv=repeated_folds(CV, REPEATS, 0), random_state=0)
        s = result.stores[name]
        assert s.failure is None and s.n_passes == 1 and s.cv_name == "4-fold CV repeated 2 times"
        for m in METHODS:
            r, sc = report.results[m], s.scores[m]
            j = r.dims.index(r.best_dim)
            assert (sc.dim, sc.error, sc.error_sd, sc.kappa) == (r.best_dim, r.best_error, r.stds[j], r.kappa[j])
            assert sc.error == pytest.approx(np.min(r.errors)) and sc.d_max == MAX_DIM


def test_the_in_memory_comparison_equals_the_one_on_stores(stores, result):
    pairs = {name: _data(i, shift) for i, (name, shift) in enumerate(zip(stores, (0.6, 1.0, 1.5)))}
    mem = compare(pairs, METHODS, cv=CV, repeats=REPEATS, max_dim=MAX_DIM)
    for name in stores:
        for m in METHODS:
            a, b = mem.stores[name].scores[m], result.stores[name].scores[m]
            assert a.dim == b.dim and a.error == pytest.approx(b.error, abs=1e-12) and a.kappa == pytest.approx(b.kappa, abs=1e-12)


def test_ranks_are_average_ranks_of_the_errors(result):
    assert result.ranked_stores == ["s0", "s1", "s2"]
    for s in result.stores.values():
        expected = st.rankdata([s.scores[m].error for m in METHODS], method="average")
        assert [s.ranks[m] for m in METHODS] == list(expected)
    for m in METHODS:
        assert result.mean_ranks[m] == pytest.approx(np.mean([result.stores[s].ranks[m] for s in result.stores]))
    assert sum(result.mean_ranks.values()) == pytest.approx(6.0)  # 1 + 2 + 3 on every store


def test_wilcoxon_of_lol_against_each_method_on_errors_and_kappa(result):
    assert [(t.method, t.measure) for t in result.tests] == [("pca", "error"), ("pca", "kappa"), ("rp", "error"), ("rp", "kappa")]
    for t in result.tests:
        ref = [result.stores[s].scores["lol"] for s in t.stores]
        other = [result.stores[s].scores[t.method] for s in t.stores]
        d = np.array([o.error - r.error for r, o in zip(ref, other)] if t.measure == "error"
                     else [r.kappa - o.kappa for r, o in zip(ref, other)])
        expected = signed_rank_test(d)
        assert t.p_one_sided == expected.p_greater and t.p_two_sided == expected.p_two_sided  # alternative: LOL better
        assert t.mean_difference == pytest.approx(d.mean()) and t.wins == int(np.sum(d > 1e-12))
        assert t.wins + t.ties + t.losses == len(t.stores) == 3
        nonzero = d[np.abs(d) > 1e-12]
        if len(np.unique(np.abs(nonzero))) == len(nonzero) == len(d):  # scipy's exact test applies: it must agree
            assert t.p_one_sided == pytest.approx(st.wilcoxon(d, alternative="greater", method="exact").pvalue)


def test_json_and_table(tmp_path, result):
    path = tmp_path / "c.json"
    result.to_json(path)
    doc = json.loads(path.read_text())
    assert doc["cv"] == "4-fold CV repeated 2 times" and doc["reference"] == "lol"
    assert doc["wilcoxon"]["zero_method"] == "wilcox" and "exact" in doc["wilcoxon"]["test"]
    assert doc["wilcoxon"]["one_sided_alternative"].startswith("lol better")
    comp = doc["wilcoxon"]["comparisons"][0]
    assert {"p_one_sided", "p_two_sided", "rank_biserial", "mean_difference"} <= set(comp)
    assert doc["stores"]["s1"]["scores"]["pca"]["dim"] == result.stores["s1"].scores["pca"].dim
    with pytest.raises(WidemlError, match="already exists"):
        result.to_json(path)
    result.to_json(path, overwrite=True)  # wideml wrote it: replaced
    text = result.table()
    assert "p one-sided (lol better)" in text and "p two-sided" in text and "mean rank" in text and "zeros dropped" in text


def test_plot_is_written(tmp_path, result):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    path = tmp_path / "c.png"
    result.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_store_that_cannot_be_scored_is_reported_and_the_others_go_on(stores, tmp_path):
    X, _ = _data(9, 1.0)
    y = np.r_[np.zeros(37, int), np.ones(3, int)]  # 3 samples in class 1: fewer than 4 folds
    small = wideml.write_store(tmp_path / "small.zarr", X, y)
    unlabelled = wideml.write_store(tmp_path / "nolabels.zarr", X)
    res = compare([stores["s1"], small, unlabelled, tmp_path / "missing.zarr"], ("lol", "pca"), cv=CV, repeats=1, max_dim=3)
    assert res.stores["s1"].failure is None and res.ranked_stores == ["s1"]
    assert "class 1 has 3" in res.stores["small"].failure and "adapt_folds" in res.stores["small"].failure
    assert "no labels" in res.stores["nolabels"].failure
    assert "no feature store" in res.stores["missing"].failure
    assert res.test("pca").stores == ["s1"]
    adapted = compare({"small": small}, ("lol", "pca"), cv=CV, repeats=1, max_dim=3, adapt_folds=True)
    s = adapted.stores["small"]
    assert s.failure is None and s.n_folds == 3 and "lowered from 4 to 3" in s.note


def test_a_method_failing_on_one_store_leaves_it_out_of_ranks_and_of_its_pairs(stores, tmp_path):
    X, _ = _data(5, 1.0)
    y = np.r_[np.zeros(36, int), np.ones(4, int)]  # 2 samples of class 1 per training fold: QDA allows d <= 1
    small = wideml.write_store(tmp_path / "small.zarr", X, y)
    res = compare([stores["s0"], stores["s1"], small], {"lol": LOL(1), "pca": PCA(2), "rp": RP(1)}, cv=2, repeats=1,
                  classifier="qda")
    failed = res.stores["small"].scores["pca"]
    assert "QDA" in failed.failure and np.isnan(failed.error) and failed.dim == 0
    assert res.stores["small"].scores["lol"].failure is None and res.stores["small"].ranks == {}
    assert res.ranked_stores == ["s0", "s1"]
    assert res.test("pca").stores == ["s0", "s1"] and res.test("rp").stores == ["s0", "s1", "small"]
    assert "failed: " in res.table()


@pytest.mark.parametrize("kwargs, match", [
    (dict(methods=("lol",)), "at least two methods"),
    (dict(methods=("lol", "svm")), "unknown method 'svm'"),
    (dict(methods=("pca", "rp")), "reference method 'lol' is not among"),
    (dict(cv=1), "compare parameter cv=1"),
    (dict(repeats=0), "compare parameter repeats=0"),
    (dict(max_dim="full"), "compare parameter max_dim"),
    (dict(zero_method="zsplit"), "compare parameter zero_method"),
    (dict(methods={"lol": LOL(2), "x": object()}), "compare scores LOL"),
])
def test_bad_arguments_are_one_sentence_before_any_pass(stores, kwargs, match):
    with pytest.raises(WidemlError, match=match):
        compare([stores["s0"]], **kwargs)
    with pytest.raises(WidemlError, match="no stores"):
        compare([])


def test_method_names_and_the_public_name():
    assert set(METHOD_NAMES) == {"lol", "qoq", "pca", "rrlda", "lfl", "rp"}
    assert wideml.compare is compare


def test_robust_lol_on_sparse_binary_features_fails_with_a_hint_and_class_means_work():
    rng = np.random.default_rng(4)
    y = np.arange(40) % 2
    X = (rng.random((40, 200)) < 0.1 + 0.15 * y[:, None] * (np.arange(200) < 10)).astype(np.float64)  # class medians all 0
    robust = compare({"words": (X, y)}, ("lol", "pca"), cv=CV, repeats=1, max_dim=2)
    why = robust.stores["words"].scores["lol"].failure
    assert why is not None and "class medians" in why and "robust=False" in why
    means = compare({"words": (X, y)}, ("lol", "pca"), cv=CV, repeats=1, max_dim=2, robust=False)
    assert means.stores["words"].scores["lol"].failure is None and means.ranked_stores == ["words"]
