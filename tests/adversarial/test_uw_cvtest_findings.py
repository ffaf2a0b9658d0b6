"""User-world findings on ``cv`` (rank, repeats, plots), RP, the two-sample test and LOLRegressor (notes: uw_cvtest).

Each non-OK finding of the tester is one test here; the numbers in the names follow the tester's list:

1. ``cv`` with rp/lfl on data with no within-class spread crashed in scikit-learn's LDA (IndexError).
2. ``cv --max-dim rank`` on rank-1 data crashed the same way.
3. ``max_dim="rank"`` did not cap LOL/PCA/RRLDA at the training folds' rank (Python), and the CLI's rank mode
   stopped below it.
4. ``cv --repeats R`` was silently ignored by the encoder (and the fixed-dimension methods refitted per fold).
5. The cv plot's caption was cut at both edges and its legend covered the chance line.
6. LOLRegressor on tied quantile edges said "y takes the single value 0.0" for a y that varies.
7. two_sample_test named a group ``np.int64(0)``.
8. ``wideml test`` on constant data said "lower n_components" at d = 1 (and class-constant data gave T² ~ 1e33).
9. argparse printed its usage block before the one-line error of a bad number.

Plus the tester's notes: ``fit rp --n-components`` above p, and ``fit rp --solver``, accepted without a word.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import wideml
from adversarial.harness import assert_api_refused
from wideml.cli.main import main


def _data(n=40, p=200, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, p))
    X[y == 1, :5] += 1.0
    return X, y


def _class_constant(n=40, p=200):
    """Every sample of a class is the same row: no within-class spread, rank 1 once centred."""
    y = np.repeat([0, 1], n // 2)
    return np.random.default_rng(0).normal(size=(2, p))[y], y


def _cli(capsys, *args):
    """Run the CLI in this process: (exit status, stdout, stderr); argparse's exit is caught as a status too."""
    try:
        code = main([str(a) for a in args] + ["--no-progress"])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _one_sentence(code, err, *words):
    assert code == 2, err
    assert "Traceback" not in err and "usage:" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("wideml: error: ")]
    assert len(errors) == 1 and len(lines) == 1, err
    assert errors[0].rstrip().endswith("."), err
    for word in words:
        assert word.lower() in errors[0].lower(), errors[0]
    return errors[0]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("uw-cvtest")
    X, y = _data()
    Xcc, ycc = _class_constant()
    return {
        "y40": wideml.write_store(root / "s_y40.zarr", X, y, feature_chunk=64),
        "const": wideml.write_store(root / "s_const.zarr", np.ones((40, 200)), y, feature_chunk=64),
        "cc": wideml.write_store(root / "s_cc.zarr", Xcc, ycc, feature_chunk=64),
    }


# ----------------------------------------------------------------------------- 1, 2: no within-class spread
@pytest.mark.parametrize("make", [lambda: wideml.RP(3), lambda: wideml.LFL(3)], ids=["rp", "lfl"])
def test_1_python_cv_on_data_without_within_class_spread_is_one_sentence(make):
    y = np.repeat([0, 1], 20)
    with pytest.raises(wideml.WidemlError) as excinfo:  # nothing varies: nothing can be scored
        wideml.cross_validate_dims({"m": make()}, np.ones((40, 200)), y, cv=4)
    assert_api_refused(excinfo, "all 40 samples are the same", "do not vary")
    X, y = _class_constant()  # the classes differ, nothing varies within them: no classifier can be fitted
    with pytest.raises(wideml.WidemlError) as excinfo:
        wideml.cross_validate_dims({"m": make(), "lol": wideml.LOL(1, solver="gram")}, X, y, cv=4)
    assert_api_refused(excinfo, "do not vary within any class", "give samples that differ")


def test_1_a_failing_method_is_reported_and_a_working_one_scored_in_the_same_run():
    noise = np.random.default_rng(0).normal(size=(20, 200))
    noise[:, 0] = 0.0
    y = np.repeat([0, 1], 20)
    X = np.vstack([noise, noise + 10.0 * (np.arange(200) == 0)])  # the class means differ only on feature 0, constant per class
    from sklearn.model_selection import PredefinedSplit

    cv = PredefinedSplit(np.r_[np.arange(20) % 4, np.arange(20) % 4])  # paired rows: equal noise means in every training fold
    report = wideml.cross_validate_dims({"lfl": wideml.LFL(1), "rrlda": wideml.RRLDA(1, solver="gram")}, X, y, cv=cv)
    why = report.results["lfl"].error  # its one embedding column is constant within each class
    assert "do not vary within" in why and "d = 1" in why and "IndexError" not in why and "\n" not in why
    assert report.results["lfl"].best_dim == 0 and np.isnan(report.results["lfl"].errors).all()
    assert report.results["rrlda"].error is None and np.isfinite(report.results["rrlda"].errors).all()
    assert "failed: " in report.table()


@pytest.mark.parametrize("methods", ["rp", "lol,lfl"])
@pytest.mark.parametrize("data", ["const", "cc"])
def test_1_cli_cv_on_constant_data_exits_2_with_one_sentence_and_leaves_no_checkpoint(tmp_path, capsys, stores, methods, data):
    work = tmp_path / "work"
    work.mkdir()
    code, _, err = _cli(capsys, "cv", stores[data], "--methods", methods, "--folds", "4", "--max-dim", "3",
                        "-o", tmp_path / "c.json", "--workdir", work)
    line = _one_sentence(code, err, "do not vary")
    assert "lower n_components" not in line
    assert not (tmp_path / "c.json").exists() and list(work.iterdir()) == []


def test_2_cli_cv_max_dim_rank_on_rank_one_data_exits_2_with_one_sentence(tmp_path, capsys, stores):
    code, _, err = _cli(capsys, "cv", stores["cc"], "--methods", "lol,pca", "--folds", "4", "--max-dim", "rank",
                        "-o", tmp_path / "cc.json")
    _one_sentence(code, err)
    assert not (tmp_path / "cc.json").exists()


# ----------------------------------------------------------------------------- 3: the rank cap
def _fold_ranks(X, y, cv, by_class=False):
    """numpy's matrix_rank (its default tolerance, sigma_max * max(m, n) * eps) of each training fold's centred data
    (centred within each class with ``by_class``: rrLDA's directions)."""
    def centred(Xt, yt):
        if not by_class:
            return Xt - Xt.mean(axis=0)
        return Xt - np.stack([Xt[yt == c].mean(axis=0) for c in np.unique(yt)])[np.searchsorted(np.unique(yt), yt)]

    return [int(np.linalg.matrix_rank(centred(X[tr], y[tr]))) for tr, _ in cv.split(X, y)]


def test_3_python_max_dim_rank_caps_every_method_at_the_folds_rank():
    from sklearn.model_selection import StratifiedKFold

    X, y = _data()
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    rank = min(_fold_ranks(X, y, cv))
    assert rank == 29  # training folds of 30 samples in 200 dimensions
    methods = {"lol": wideml.LOL(40, solver="gram"), "lol30": wideml.LOL(30, solver="gram"), "pca": wideml.PCA(40, solver="gram"),
               "rrlda": wideml.RRLDA(40, solver="gram"), "rp": wideml.RP(40), "lfl": wideml.LFL(40)}
    report = wideml.cross_validate_dims(methods, X, y, cv=cv, max_dim="rank")
    for name, r in report.results.items():
        assert r.error is None, (name, r.error)
        assert r.fold_ranks == _fold_ranks(X, y, cv, by_class=name == "rrlda")
        bound = rank if name != "rrlda" else 30 - 2  # rrLDA's class-centred folds: rank n_train - K
        assert r.dims == list(range(1, bound + 1)) and min(r.fold_ranks) == bound, name


def test_3_python_max_dim_rank_on_rank_deficient_data_equals_numpy_matrix_rank():
    from sklearn.model_selection import StratifiedKFold

    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 24)
    X = rng.normal(size=(48, 5)) @ rng.normal(size=(5, 150)) + 2.0  # rank 5 once centred
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    expected = _fold_ranks(X, y, cv)
    assert min(expected) == 5
    report = wideml.cross_validate_dims({"lol": wideml.LOL(30, solver="gram"), "pca": wideml.PCA(30, solver="gram"),
                                         "rp": wideml.RP(30)}, X, y, cv=cv, max_dim="rank")
    for name, r in report.results.items():
        assert r.error is None and r.fold_ranks == expected and r.dims == [1, 2, 3, 4, 5], (name, r.error)


def test_3_cli_max_dim_rank_goes_up_to_the_folds_rank(tmp_path, capsys, stores):
    code, _, err = _cli(capsys, "cv", stores["y40"], "--methods", "lol,pca,rrlda,lfl,rp", "--folds", "4", "--max-dim", "rank",
                        "-o", tmp_path / "r.json")
    assert code == 0, err
    out = json.loads((tmp_path / "r.json").read_text())
    for name, r in out["results"].items():
        bound = 28 if name == "rrlda" else 29  # rrLDA: the class-centred folds' rank
        assert r["error"] is None and min(r["fold_ranks"]) == bound, name
        assert max(r["dims"]) == bound, (name, max(r["dims"]))


# ----------------------------------------------------------------------------- 4: repeats and the encoder
def test_4_cli_cv_repeats_are_used_by_the_encoder_too(tmp_path, capsys, stores):
    code, out, err = _cli(capsys, "cv", stores["y40"], "--methods", "lol,encoder", "--repeats", "3", "--folds", "4",
                          "--max-dim", "3", "-o", tmp_path / "e.json")
    assert code == 0, err
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["n_splits"] == 12 and doc["cv"] == "4-fold CV repeated 3 times"
    enc = doc["fixed_dimension_methods"]["encoder"]
    assert len(enc["fold_errors"]) == 12 and enc["n_splits"] == 12 and enc["cv"] == "4-fold CV repeated 3 times"
    assert "encoder" in out and "12 splits" in out


def test_4_cli_cv_encoder_alone_with_repeats_runs_the_repeated_folds(tmp_path, capsys, stores):
    code, _, err = _cli(capsys, "cv", stores["y40"], "--methods", "encoder", "--repeats", "2", "--folds", "4",
                        "-o", tmp_path / "e.json")
    assert code == 0, err
    enc = json.loads((tmp_path / "e.json").read_text())["fixed_dimension_methods"]["encoder"]
    assert len(enc["fold_errors"]) == 8 and enc["cv"] == "4-fold CV repeated 2 times"


def test_4_refitted_methods_use_the_same_repeated_splits(stores):
    from sklearn.model_selection import RepeatedStratifiedKFold

    from wideml.estimators.gram.cv import cross_validate_refit

    store = wideml.open_store(stores["y40"])

    def make(n_train):
        return wideml.EmbeddingClassifier(wideml.LOL(2, solver="gram"), "lda")

    errors = cross_validate_refit("lol", make, store, 4, 0, n_repeats=2)
    X, y = store.X[:], store.y
    expected = []
    for tr, te in RepeatedStratifiedKFold(n_splits=4, n_repeats=2, random_state=0).split(X, y):
        expected.append(np.mean(make(len(tr)).fit(X[np.sort(tr)], y[np.sort(tr)]).predict(X[np.sort(te)]) != y[np.sort(te)]))
    np.testing.assert_array_equal(errors, expected)


# ----------------------------------------------------------------------------- 5: the plot
def test_5_cv_plot_caption_and_legend_stay_inside_the_canvas_and_off_the_axes():
    pytest.importorskip("matplotlib")
    import io

    from sklearn.model_selection import RepeatedStratifiedKFold

    from wideml.cli.plots import cv_figure

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], [14, 13, 13])
    X = rng.normal(size=(40, 200)) + 0.8 * y[:, None] * (np.arange(200) < 5)
    methods = {"lol": wideml.LOL(6, solver="gram"), "pca": wideml.PCA(6, solver="gram"), "rrlda": wideml.RRLDA(6, solver="gram"),
               "lfl": wideml.LFL(6), "rp": wideml.RP(6)}
    report = wideml.cross_validate_dims(methods, X, y, cv=RepeatedStratifiedKFold(n_splits=4, n_repeats=3, random_state=0))
    fig = cv_figure(report, title="s_y_three.zarr: n = 40, p = 200\n4-fold CV repeated 3 times, LDA on the embedding, 1 pass over X")
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        canvas = fig.bbox
        ax = fig.axes[0]
        inside = [t for t in fig.texts] + [ax.title, ax.get_legend()]
        for artist in inside:
            box = artist.get_window_extent(renderer)
            assert box.x0 >= canvas.x0 - 0.5 and box.x1 <= canvas.x1 + 0.5, (artist, box, canvas)
            assert box.y0 >= canvas.y0 - 0.5 and box.y1 <= canvas.y1 + 0.5, (artist, box, canvas)
        caption = " ".join(t.get_text() for t in fig.texts)
        assert caption.startswith("Shaded bands") and caption.rstrip().endswith("(lowest mean error).")
        legend = ax.get_legend().get_window_extent(renderer)
        assert not legend.overlaps(ax.get_window_extent(renderer)), "the legend is drawn over the axes (and the chance line)"
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        assert buf.getvalue()[:4] == b"\x89PNG"
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


# ----------------------------------------------------------------------------- 6: LOLRegressor's ties
@pytest.mark.parametrize("target, n_bins", [
    (np.r_[np.zeros(39), 1.0], 10),
    (np.r_[np.zeros(38), 1.0, 2.0], 10),
    (np.r_[np.zeros(36), 1.0, 1, 1, 1], 2),
    (np.r_[0.0, np.ones(39)], 10),
], ids=["39-zeros-one-1", "38-zeros-1-2", "36-zeros-4-ones-2-bins", "one-0-39-ones"])
def test_6_lol_regressor_keeps_values_above_a_tied_edge_in_their_own_bin(target, n_bins):
    from wideml.estimators.regression import quantile_bins

    X, _ = _data()
    codes, edges = quantile_bins(target, n_bins)
    np.testing.assert_array_equal(edges, np.quantile(target, np.linspace(0, 1, n_bins + 1)))
    for value in np.unique(target):
        assert len(set(codes[target == value])) == 1  # equal values share a bin
    assert len(np.unique(codes)) >= 2 and np.all(np.diff(codes[np.argsort(target, kind="stable")]) >= 0)
    model = wideml.LOLRegressor(1, n_bins=n_bins, solver="gram").fit(X, target)
    assert model.n_bins_ == len(np.unique(codes))
    assert np.isfinite(model.predict(X)).all()


def test_6_a_constant_target_is_still_refused_with_its_value():
    X, _ = _data()
    with pytest.raises(wideml.WidemlError) as excinfo:
        wideml.LOLRegressor(n_bins=10).fit(X, np.full(40, 3.5))
    assert_api_refused(excinfo, "single value 3.5", "varies")


# ----------------------------------------------------------------------------- 7: plain group labels
@pytest.mark.parametrize("rows", [[0, 20], [0] + list(range(20, 40))], ids=["one-each", "one-of-group-0"])
def test_7_two_sample_test_names_groups_as_plain_labels(rows):
    X, y = _data()
    with pytest.raises(wideml.WidemlError) as excinfo:
        wideml.two_sample_test(X[rows], y[rows], n_components=1)
    message = assert_api_refused(excinfo, "group 0;")
    assert "np." not in message and "int64" not in message


def test_7_string_labels_stay_quoted():
    X, _ = _data()
    y = np.array(["a"] + ["b"] * 39)
    with pytest.raises(wideml.WidemlError) as excinfo:
        wideml.two_sample_test(X, y, n_components=1)
    assert_api_refused(excinfo, "group 'a'")


# ----------------------------------------------------------------------------- 8: degenerate projected data
@pytest.mark.parametrize("projection", ["lol", "lfl", "rp", "pca"])
def test_8_cli_test_on_constant_data_names_the_missing_variance(capsys, stores, projection):
    code, _, err = _cli(capsys, "test", stores["const"], "--projection", projection, "--n-components", "1")
    line = _one_sentence(code, err, "do not vary")
    assert "lower n_components" not in line


@pytest.mark.parametrize("method", ["split", "permutation"])
def test_8_class_constant_data_are_refused_not_given_a_roundoff_t2(capsys, stores, method):
    code, out, err = _cli(capsys, "test", stores["cc"], "--n-components", "1", "--method", method, "--permutations", "19")
    _one_sentence(code, err, "within the groups")
    assert "Hotelling T²" not in out


def test_8_python_class_constant_data_are_refused_in_memory_and_from_a_store(stores):
    X, y = _class_constant()
    for source, labels in ((X, y), (wideml.open_store(stores["cc"]), None)):
        with pytest.raises(wideml.WidemlError) as excinfo:
            wideml.two_sample_test(source, labels, n_components=1)
        assert_api_refused(excinfo, "within the groups")


def test_8_a_rank_deficient_projection_names_the_dimension_to_use():
    from wideml.estimators.hotelling import hotelling_t2

    Z = np.random.default_rng(0).standard_normal((10, 2))
    with pytest.raises(wideml.WidemlError) as excinfo:
        hotelling_t2(np.hstack([Z, Z[:, :1]]), np.arange(10) % 2)
    assert_api_refused(excinfo, "linearly dependent", "n_components to 2")


# ----------------------------------------------------------------------------- 9: argparse errors are one sentence
@pytest.mark.parametrize("args", [
    ["cv", "{y40}", "--repeats", "0"], ["cv", "{y40}", "--repeats", "-1"], ["cv", "{y40}", "--repeats", "abc"],
    ["cv", "{y40}", "--repeats", "1.5"], ["cv", "{y40}", "--folds", "0"], ["cv", "{y40}", "--max-dim", "0"],
    ["cv", "{y40}", "--max-dim", "Rank"], ["cv", "{y40}", "--max-dim", "-3"],
    ["fit", "rp", "{y40}", "-o", "{tmp}/m.zarr", "--n-components", "0"], ["test", "{y40}", "--n-components", "0"],
    ["test", "{y40}", "--method", "permutation", "--permutations", "0"],
    ["test", "{y40}", "--method", "permutation", "--permutations", "-5"],
    ["cv", "{y40}", "--classifier", "knn"], ["fit", "lol", "{y40}"], ["cv", "{y40}", "--no-such-option"],
])
def test_9_argument_errors_are_one_sentence_without_the_usage_block(tmp_path, capsys, stores, args):
    args = [a.format(y40=stores["y40"], tmp=tmp_path) for a in args]
    code, _, err = _cli(capsys, *args)
    line = _one_sentence(code, err)
    # the fix: where the options are described (argparse checks unknown options at the top level: `wideml --help`)
    assert f"`wideml {args[0]} --help`" in line or ("unrecognized" in line and "`wideml --help`" in line), line
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- notes: RP's dimension and options
def test_rp_with_more_components_than_features_is_refused(tmp_path, capsys, stores):
    X, y = _data()
    with pytest.raises(wideml.WidemlError) as excinfo:
        wideml.RP(500).fit(X, y)
    assert_api_refused(excinfo, "n_components=500", "200 features")
    code, _, err = _cli(capsys, "fit", "rp", stores["y40"], "-o", tmp_path / "m.zarr", "--n-components", "500")
    _one_sentence(code, err, "200 features")
    assert not (tmp_path / "m.zarr").exists()
    assert wideml.RP(200).fit(X, y).embedding_.shape == (40, 200)  # d = p is accepted


@pytest.mark.parametrize("option", [["--solver", "randomized"], ["--solver", "gram"], ["--n-power-iter", "3"]])
@pytest.mark.parametrize("method", ["rp", "lfl"])
def test_solver_options_are_refused_for_methods_without_a_solver(tmp_path, capsys, stores, method, option):
    code, _, err = _cli(capsys, "fit", method, stores["y40"], "-o", tmp_path / "m.zarr", *option)
    _one_sentence(code, err, option[0], repr(method))
    assert not (tmp_path / "m.zarr").exists()
