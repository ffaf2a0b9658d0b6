"""Maps of models on genotype stores (feature table of kind "genome"): top tables with variant columns, Manhattan panels."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wideml import LOL, EmbeddingClassifier, load_model, open_store, save_model, write_maps
from wideml.maps import genome, plot
from wideml.maps.files import top_features
from wideml.maps.genome import chromosome_order, manhattan_points
from wideml.storage.feature_table import FeatureTable
from wideml.storage.writer import create_store

CHROMS = np.array(["chr2", "1", "X", "10", "MT", "Y", "22", "scaffold_7", "3", "chrX"])


def _table(p: int, seed: int = 0) -> FeatureTable:
    rng = np.random.default_rng(seed)
    chrom = np.sort(rng.choice(["1", "2", "10", "X"], size=p))
    pos = np.concatenate([np.sort(rng.choice(np.arange(1, 10**6), size=(chrom == c).sum(), replace=False)) for c in np.unique(chrom)])
    return FeatureTable("genome", {"chrom": chrom, "pos": pos, "allele_1": rng.choice(list("ACGT"), size=p),
                                   "allele_2": rng.choice(list("ACGT"), size=p)}, {"reference": "synthetic"})


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("genome")
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 20)
    X = rng.integers(0, 3, size=(40, 120)).astype(np.float32)
    X[y == 1, 5:9] += 1.5
    table = _table(120)
    ids = [f"rs{j}" for j in range(120)]
    with create_store(folder / "g.zarr", n_samples=40, n_features=120, y=y, feature_table=table, feature_ids=ids,
                      feature_chunk=32) as w:
        w.write(X, 0)
    save_model(EmbeddingClassifier(LOL(n_components=2)).fit(open_store(folder / "g.zarr")), folder / "m.zarr")
    return load_model(folder / "m.zarr"), table, np.asarray(ids)


def test_top_tsv_has_variant_columns_and_manhattan_png(fitted, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    model, table, ids = fitted
    monkeypatch.setattr(plot.VectorPanel, "draw", lambda self, path, title: path.write_bytes(b"stub"))  # not under test here
    files = write_maps(model, tmp_path / "maps", plot="matplotlib", top=6)
    man = json.loads((tmp_path / "maps" / "maps.json").read_text())
    assert man["feature_table"]["kind"] == "genome"
    for entry in man["maps"]:
        name = entry["name"]
        assert f"{name}_manhattan.png" in entry["files"]
        assert (tmp_path / "maps" / f"{name}_manhattan.png").read_bytes()[:4] == b"\x89PNG"
        values = np.load(tmp_path / "maps" / f"{name}.npy")
        rows = [line.split("\t") for line in (tmp_path / "maps" / f"{name}_top.tsv").read_text().splitlines()]
        assert rows[0] == ["rank", "feature_id", "chrom", "pos", "allele_1", "allele_2", "weight"]
        order = top_features(values, 6)
        assert [r[1] for r in rows[1:]] == list(ids[order])
        assert [r[2] for r in rows[1:]] == list(table.columns["chrom"][order])
        assert [int(r[3]) for r in rows[1:]] == table.columns["pos"][order].tolist()
        assert [(r[4], r[5]) for r in rows[1:]] == list(zip(table.columns["allele_1"][order], table.columns["allele_2"][order]))
        assert [float(r[6]) for r in rows[1:]] == values[order].tolist()
    assert any(f.name.endswith("_manhattan.png") for f in files)


def test_no_png_without_plotter(fitted, tmp_path):
    model, _, _ = fitted
    write_maps(model, tmp_path / "maps", plot=None)
    assert not list((tmp_path / "maps").glob("*.png")) and list((tmp_path / "maps").glob("*_top.tsv"))


def test_chromosomes_in_natural_order():
    assert chromosome_order(CHROMS) == ["1", "chr2", "3", "10", "22", "X", "chrX", "Y", "MT", "scaffold_7"]
    assert chromosome_order(["23", "26", "2", "24"]) == ["2", "23", "24", "26"]  # PLINK codes: X, MT after autosomes


def test_manhattan_points_bounded_keep_every_high_point_and_the_top(monkeypatch):
    monkeypatch.setattr(genome, "MANHATTAN_KEEP", 30)
    monkeypatch.setattr(genome, "MANHATTAN_BACKGROUND", 20)
    rng = np.random.default_rng(3)
    p = 2000
    chrom = rng.choice(["2", "1", "X", "10"], size=p)  # unsorted variants
    pos = rng.integers(1, 10**7, size=p)
    values = rng.standard_normal(p)
    pts = manhattan_points(chrom, pos, values)
    assert pts["labels"] == ["1", "2", "10", "X"]
    drawn = set(pts["index"].tolist())
    for c in np.unique(chrom):
        members = np.flatnonzero(chrom == c)
        mine = [j for j in pts["index"].tolist() if chrom[j] == c]
        assert len(mine) <= 30 + 20 + 1
        cut = np.sort(np.abs(values[members]))[-30]
        assert set(members[np.abs(values[members]) >= cut].tolist()) <= drawn  # every point above the quantile
    assert set(top_features(values, genome.MANHATTAN_TOP).tolist()) <= drawn
    # x: cumulative, chromosomes in order and not overlapping
    spans = [(pts["x"][[chrom[j] == c for j in pts["index"]]].min(), pts["x"][[chrom[j] == c for j in pts["index"]]].max())
             for c in pts["labels"]]
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    j = int(pts["index"][0])
    assert pts["y"][0] == abs(values[j])
    np.testing.assert_array_equal(np.unique(pts["colour"]), [0, 1])
