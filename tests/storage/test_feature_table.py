"""Feature tables (variants' positions, grayordinates' structures) ride from a store to a model file and to maps, checked."""

import json

import numpy as np
import pytest
import zarr

from wideml import LOL, load_model, open_store, save_model, write_maps
from wideml.exceptions import StoreError
from wideml.maps import spaces
from wideml.storage.feature_table import FeatureTable
from wideml.storage.model_space import layout_feature_table
from wideml.storage.rechunk import rechunk
from wideml.storage.writer import create_store


def _table(p: int) -> FeatureTable:
    return FeatureTable("genome", {"chrom": np.array(["1", "2", "X"] * p)[:p], "pos": np.arange(p) * 10 + 1,
                                   "allele_1": np.array(["A", "C"] * p)[:p], "allele_2": np.array(["G", "T"] * p)[:p]},
                        {"reference": "synthetic"})


def _store(path, X, y, table, **kw):
    with create_store(path, n_samples=X.shape[0], n_features=X.shape[1], y=y, feature_table=table, feature_chunk=7, **kw) as w:
        w.write(X, 0)
    return open_store(path)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 15)
    X = rng.normal(size=(30, 40)).astype(np.float32)
    X[y == 1, :3] += 2
    return X, y


def _same(a: FeatureTable, b: FeatureTable) -> None:
    assert a.kind == b.kind and a.info == b.info and list(a.columns) == list(b.columns)
    for name in a.columns:
        np.testing.assert_array_equal(a.columns[name], b.columns[name])
        assert a.columns[name].dtype.kind == b.columns[name].dtype.kind


@pytest.mark.parametrize("suffix", ["s.zarr", "s.h5"])
def test_store_keeps_table_and_model_and_rechunk_keep_it(tmp_path, data, suffix):
    X, y = data
    table = _table(X.shape[1])
    store = _store(tmp_path / suffix, X, y, table)
    _same(store.feature_table, table)
    assert store.summary()["feature_table"]["columns"] == ["chrom", "pos", "allele_1", "allele_2"]
    model = LOL(n_components=2).fit(store)
    _same(layout_feature_table(model.feature_layout_), table)
    save_model(model, tmp_path / "m.zarr")
    loaded = load_model(tmp_path / "m.zarr")
    _same(layout_feature_table(loaded.feature_layout_), table)
    rechunk(store.path, tmp_path / "r.zarr", feature_chunk=11)
    _same(open_store(tmp_path / "r.zarr").feature_table, table)


def test_a_table_of_another_length_is_refused_before_writing(tmp_path, data):
    X, y = data
    with pytest.raises(Exception, match="feature table has 39 rows but X has 40 features"):
        create_store(tmp_path / "s.zarr", n_samples=30, n_features=40, y=y, feature_table=_table(39))
    assert not (tmp_path / "s.zarr").exists()


def test_edited_column_in_store_or_model_is_refused(tmp_path, data):
    X, y = data
    store = _store(tmp_path / "s.zarr", X, y, _table(X.shape[1]))
    model = LOL(n_components=2).fit(store)
    save_model(model, tmp_path / "m.zarr")
    for path in (tmp_path / "s.zarr", tmp_path / "m.zarr"):
        col = zarr.open_array(str(path / "feature_table" / "pos"), mode="r+")
        col[5] = 999
    with pytest.raises(StoreError, match="damaged feature table.*sha256"):
        open_store(tmp_path / "s.zarr").feature_table
    with pytest.raises(StoreError, match="cannot be loaded: .*feature table"):
        load_model(tmp_path / "m.zarr")


def test_store_record_of_another_count_is_refused_at_open(tmp_path, data):
    X, y = data
    _store(tmp_path / "s.zarr", X, y, _table(X.shape[1]))
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="r+")
    attrs = dict(group.attrs["wideml"])
    attrs["feature_table"] = {**attrs["feature_table"], "n_features": 41}
    group.attrs["wideml"] = attrs
    with pytest.raises(StoreError, match="feature table for 41 features but X has 40"):
        open_store(tmp_path / "s.zarr")


def test_maps_call_the_writer_of_the_table_kind(tmp_path, data, monkeypatch):
    X, y = data
    table = _table(X.shape[1])
    model = LOL(n_components=2).fit(_store(tmp_path / "s.zarr", X, y, table))
    seen = []

    def writer(folder, name, values, got, plotter):
        seen.append((name, values.shape, got.kind))
        (folder / f"{name}.genome.txt").write_text(str(values.size))
        return [f"{name}.genome.txt"]

    monkeypatch.setitem(spaces.SPACE_WRITERS, "genome", writer)
    written = write_maps(model, tmp_path / "maps", plot=None)
    assert seen and all(shape == (40,) and kind == "genome" for _, shape, kind in seen)
    assert (tmp_path / "maps" / f"{seen[0][0]}.genome.txt").read_text() == "40"
    doc = json.loads((tmp_path / "maps" / "maps.json").read_text())
    assert doc["feature_table"]["kind"] == "genome" and any(p.name.endswith(".genome.txt") for p in written)
    assert all(f"{name}.genome.txt" in entry["files"] for entry, (name, _, _) in zip(doc["maps"], seen))


def test_predict_refuses_a_store_whose_table_differs_but_not_one_whose_info_differs(tmp_path, data):
    """A flipped counted allele (same ids) is other features; another imputed-call count in info is not."""
    X, y = data
    table = _table(X.shape[1])
    model = LOL(n_components=2).fit(_store(tmp_path / "train.zarr", X, y, table))
    same_info_other = FeatureTable("genome", table.columns, {"reference": "synthetic", "n_imputed": 3})
    np.testing.assert_allclose(model.transform(_store(tmp_path / "other_info.zarr", X, y, same_info_other)), model.transform(X), rtol=1e-4, atol=1e-5)
    flipped = dict(table.columns)
    flipped["allele_1"], flipped["allele_2"] = table.columns["allele_2"], table.columns["allele_1"]
    with pytest.raises(Exception, match="feature table of .* differs from the one .* trained on"):
        model.transform(_store(tmp_path / "flipped.zarr", X, y, FeatureTable("genome", flipped, table.info)))
