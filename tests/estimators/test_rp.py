"""RP (Gaussian random projection): nested, chunking-invariant keyed columns; one pass; model files; `wideml fit rp`, `wideml cv`.
Also LFL's nested columns and the loading of LFL models saved before them."""

import json

import numpy as np
import pytest
import zarr

from wideml import LFL, RP, WidemlError, load_model, open_store, save_model, write_store
from wideml.cli.main import main
from wideml.passes.keyed_random import gaussian_columns, sparse_sign_columns, sparse_sign_rows
from wideml.storage.reader import READ_COUNTER


def _data(n=40, p=700, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return rng.normal(size=(n, p)) + 0.5 * y[:, None] * (np.arange(p) < 10) + 4, y


@pytest.mark.parametrize("cuts", [(0, 700, 2500), (0, 1, 1024, 1025, 2500)])
def test_keyed_columns_are_nested_and_chunking_invariant(cuts):
    whole_g, whole_s = gaussian_columns(7, 0, 2500, 12), sparse_sign_columns(7, 0, 2500, 12, 0.05).toarray()
    parts_g = np.vstack([gaussian_columns(7, a, b, 12) for a, b in zip(cuts, cuts[1:])])
    parts_s = np.vstack([sparse_sign_columns(7, a, b, 12, 0.05).toarray() for a, b in zip(cuts, cuts[1:])])
    np.testing.assert_array_equal(whole_g, parts_g)
    np.testing.assert_array_equal(whole_s, parts_s)
    np.testing.assert_array_equal(whole_g[:, :5], gaussian_columns(7, 0, 2500, 5))  # nested in the column count
    np.testing.assert_array_equal(whole_s[:, :5], sparse_sign_columns(7, 0, 2500, 5, 0.05).toarray())
    assert abs(whole_g.std() - 1) < 0.05 and abs((whole_s != 0).mean() - 0.05) < 0.01 and abs((whole_s**2).mean() - 1) < 0.2


def test_rp_embeds_x_times_a_nested_and_equal_across_chunkings(tmp_path):
    X, y = _data()
    rp = RP(6, random_state=3).fit(X, y)
    A = gaussian_columns(3, 0, X.shape[1], 6)
    np.testing.assert_allclose(rp.embedding_, (X - X.mean(axis=0)) @ A, atol=1e-9)
    np.testing.assert_allclose(rp.components_, A.T)
    np.testing.assert_allclose(RP(2, random_state=3).fit(X, y).embedding_, rp.embedding_[:, :2], atol=1e-10)
    for chunk in (50, 700):
        store = open_store(write_store(tmp_path / f"s{chunk}.zarr", X, y, feature_chunk=chunk))
        before = READ_COUNTER[str(store.path)]
        fitted = RP(6, random_state=3).fit(store)
        assert READ_COUNTER[str(store.path)] - before == -(-700 // chunk) and fitted.n_fit_passes_ == 1  # one pass
        np.testing.assert_allclose(fitted.embedding_, rp.embedding_, atol=1e-9)
        np.testing.assert_allclose(fitted.transform(store), rp.transform(X), atol=1e-9)


def test_rp_model_round_trip_and_fit_cli(tmp_path, capsys):
    X, y = _data()
    rp = RP(4, random_state=1).fit(X, y)
    loaded = load_model(save_model(rp, tmp_path / "rp.model"))
    np.testing.assert_allclose(loaded.transform(X), rp.transform(X))
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=128)
    assert main(["fit", "rp", str(tmp_path / "s.zarr"), "-o", str(tmp_path / "m"), "--n-components", "3", "--no-progress"]) == 0
    model = load_model(tmp_path / "m")
    assert type(model.embedding_).__name__ == "RP" and model.predict(X).shape == (len(y),)


def test_lfl_columns_are_nested_and_old_lfl_models_keep_their_projection(tmp_path):
    X, y = _data()
    big, small = LFL(8, random_state=2).fit(X, y), LFL(4, random_state=2).fit(X, y)
    np.testing.assert_allclose(big.embedding_[:, :4], small.embedding_, atol=1e-10)
    path = save_model(big, tmp_path / "lfl.model")
    assert load_model(path).random_columns_ == "columns"
    attrs = zarr.open_group(str(path), mode="r+").attrs
    meta = attrs.asdict()["wideml"]
    del meta["state"]["random_columns"]  # a model saved before the nested columns
    attrs["wideml"] = meta
    old = load_model(path)
    assert old.random_columns_ == "tiles"
    R = sparse_sign_rows(2, 0, X.shape[1], 8 - 1, old.density_).toarray()  # the projection such a model was fitted with
    expected = np.hstack([(X - X.mean(0)) @ np.asarray(old.centroids_).T @ old._Dm, (X - X.mean(0)) @ R])
    got = old.transform(X)  # (its saved offset is the nested R's here: compare up to the constant row)
    np.testing.assert_allclose(got - got.mean(0), expected, atol=1e-8)
    meta["state"]["random_columns"] = "future"
    attrs["wideml"] = meta
    with pytest.raises(WidemlError, match="cannot regenerate"):
        load_model(path)


def test_cli_cv_scores_lfl_and_rp_in_one_pass_with_kappa_repeats_and_rank(tmp_path, capsys):
    X, y = _data(n=36, p=300)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=100)
    args = ["cv", str(tmp_path / "s.zarr"), "--methods", "lol,lfl,rp", "--folds", "3", "--repeats", "2", "--max-dim", "rank",
            "-o", str(tmp_path / "cv.json"), "--no-progress"]
    assert main(args) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "kappa" in printed and "3-fold CV repeated 2 times" in printed and "1 pass over X" in printed
    out = json.loads((tmp_path / "cv.json").read_text())
    assert out["n_passes"] == 1 and out["cv"] == "3-fold CV repeated 2 times" and set(out["results"]) == {"lol", "lfl", "rp"}
    assert "fixed_dimension_methods" not in out
    for r in out["results"].values():
        assert r["error"] is None and len(r["kappa"]) == len(r["dims"]) and np.shape(r["predictions"]) == (2, len(r["dims"]), 36)
        assert max(r["dims"]) <= min(r["fold_ranks"])
    with pytest.raises(SystemExit):  # argparse: neither an integer nor 'rank'
        main(["cv", str(tmp_path / "s.zarr"), "--max-dim", "ranks", "--no-progress"])
