"""Maps written block by block (issue 24, part 6) equal, byte for byte, what the whole-vector writers give.

Tiny blocks, windows and slabs are forced through the module constants, so every
seam is crossed: blocks that split grid rows, rows longer than a window, k-planes
larger than a slab. The oracles are the whole-vector computations: the maps'
formulas on the model's whole arrays (``lda_feature_weights``...), ``np.save``,
``nibabel.save(spatial.to_image(values))``, ``np.argsort(-|v|, kind="stable")``
and the panels drawn from the whole vector.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import map_fixtures as mf
from wideml import LOL, PCA, EmbeddingClassifier, load_model, open_store, save_model, write_maps
from wideml.maps import blocks, files, plot
from wideml.maps.blocks import RunningPeak, TopN
from wideml.maps.files import NiftiStream, NpyStream, nth_flat_index, top_features, write_top_tsv, write_values
from wideml.maps.model_maps import direction_signs, lda_feature_weights, model_maps
from wideml.storage.spatial import SpatialReference

nib = pytest.importorskip("nibabel")


def _whole_maps(model) -> dict[str, np.ndarray]:
    """Every map from the model's whole arrays, by the formulas written before blocks (one p-vector each)."""
    emb = model.embedding_ if isinstance(model, EmbeddingClassifier) else model
    codes = np.asarray(emb.train_codes_)
    out = {}
    A = np.asarray(emb.components_, dtype=np.float64)
    for j, sign in enumerate(direction_signs(emb.embedding_, codes, len(model.classes_))):
        out[f"direction_{j + 1}"] = sign * A[j]
    for kind, attr in (("mean", "class_means_"), ("median", "class_medians_")):
        arr = getattr(emb, attr, None)
        if arr is not None:
            arr = np.asarray(arr, dtype=np.float64)
            for k, label in enumerate(model.classes_):
                out[f"class_{kind}_{label}"] = arr[k]
    means = np.asarray(emb.class_means_, dtype=np.float64)
    if len(model.classes_) == 2:
        out["mean_difference"] = means[1] - means[0]
    else:
        w = np.bincount(codes, minlength=len(model.classes_)) / codes.size
        for k, label in enumerate(model.classes_):
            out[f"mean_difference_{label}"] = means[k] - w @ means
    if isinstance(model, EmbeddingClassifier):
        W, _ = lda_feature_weights(emb.components_.T, emb.offset_, model.classifier_.coef_, model.classifier_.intercept_)
        names = ["discriminant_weights"] if W.shape[1] == 1 else [f"discriminant_weights_{k}" for k in model.classes_]
        out.update({name: W[:, c] for c, name in enumerate(names)})
    return out


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """LDA-on-LOL on a masked store with ids (saved and loaded: dask arrays), and a 3-class PCA on a plain store."""
    folder = tmp_path_factory.mktemp("blocks")
    ref, X, y = mf.masked_store(folder / "s.zarr", counts=(30, 18))
    save_model(EmbeddingClassifier(LOL(n_components=3, robust_first=True)).fit(open_store(folder / "s.zarr")), folder / "m.zarr")
    mf.masked_store(folder / "t.zarr", counts=(10, 14, 20), ids=False)
    save_model(EmbeddingClassifier(PCA(n_components=2)).fit(open_store(folder / "t.zarr")), folder / "p.zarr")
    return ref, load_model(folder / "m.zarr"), load_model(folder / "p.zarr")


def _tiny(monkeypatch, block=7, window=5, slab=37):
    monkeypatch.setattr(blocks, "BLOCK_FEATURES", block)
    monkeypatch.setattr(blocks, "ALIGN_UP_TO", 0)  # blocks that split the model's chunks (of 32 features)
    monkeypatch.setattr(files, "WINDOW_VOXELS", window)
    monkeypatch.setattr(files, "SLAB_VOXELS", slab)


@pytest.mark.parametrize("sizes", [(7, 5, 37), (3, 3, 3), (64, 1 << 20, 1 << 22)], ids=["odd", "minimal", "one-block"])
def test_blockwise_files_equal_whole_vector_files(saved, tmp_path, monkeypatch, sizes):
    ref, model, _ = saved
    _tiny(monkeypatch, *sizes)
    write_maps(model, tmp_path / "maps", plot=None, top=9)
    whole = _whole_maps(model)
    man = json.loads((tmp_path / "maps" / "maps.json").read_text())
    assert sorted(whole) == sorted(e["name"] for e in man["maps"])
    oracle = tmp_path / "oracle"
    oracle.mkdir()
    ids = np.asarray(mf.feature_ids(ref.n_features))
    for entry in man["maps"]:
        name, values = entry["name"], whole[entry["name"]]
        write_values(oracle, name, values, ref)
        write_top_tsv(oracle, name, values, ids, 9)
        for suffix in (".nii.gz", "_top.tsv"):
            assert (tmp_path / "maps" / f"{name}{suffix}").read_bytes() == (oracle / f"{name}{suffix}").read_bytes(), name + suffix
        peak = int(np.argmax(np.abs(values)))
        voxel = np.unravel_index(int(ref.flat_index()[peak]), ref.grid_shape)
        assert (entry["peak_feature"], entry["max_abs"], entry["peak_voxel"]) == (peak, float(abs(values[peak])), [int(v) for v in voxel])
        assert entry["peak_feature_id"] == ids[peak]
    assert not list((tmp_path / "maps").glob(".*"))  # no scratch file left


def test_blockwise_npy_three_classes_equal_whole(saved, tmp_path, monkeypatch):
    _, _, model = saved
    _tiny(monkeypatch, block=5)
    write_maps(model, tmp_path / "maps", plot=None, reference=None)
    whole = _whole_maps(model)
    for name, values in whole.items():  # the store had a mask: nii.gz; compare the volume's float32 values
        got = np.asarray(nib.load(tmp_path / "maps" / f"{name}.nii.gz").dataobj)
        np.testing.assert_array_equal(got[mf.reference().mask], values.astype(np.float32))
    monkeypatch.setattr(blocks, "BLOCK_FEATURES", 1 << 18)
    assert set(whole) == {m.name for m in model_maps(model).maps}


def test_in_memory_model_npy_bytes_equal_np_save(tmp_path, monkeypatch):
    X, y = mf.data(mf.reference(), counts=(20, 15, 25))
    model = EmbeddingClassifier(LOL(n_components=4)).fit(X, y)
    _tiny(monkeypatch, block=11)
    write_maps(model, tmp_path / "maps", plot=None)
    emb, clf = model.embedding_, model.classifier_
    W, _ = lda_feature_weights(emb.components_.T, emb.offset_, clf.coef_, clf.intercept_)
    signs = direction_signs(emb.embedding_, emb.train_codes_, 3)
    expected = {f"discriminant_weights_{k}": W[:, k] for k in range(3)}
    expected.update({f"direction_{j + 1}": s * np.asarray(emb.components_[j], dtype=np.float64) for j, s in enumerate(signs)})
    for name, values in expected.items():
        np.save(tmp_path / "oracle.npy", values, allow_pickle=False)
        assert (tmp_path / "maps" / f"{name}.npy").read_bytes() == (tmp_path / "oracle.npy").read_bytes(), name


@pytest.mark.parametrize("grid,masked,window,slab", [
    ((5, 4, 9), True, 7, 40),      # windows split rows? no: whole rows of 9; several slabs
    ((5, 4, 9), False, 4, 19),     # rows longer than a window: partial rows
    ((3, 2, 50), True, 16, 5),     # one k-plane (6 voxels) larger than a slab: j-groups
    ((6, 1, 1), True, 2, 2),       # degenerate axes
])
def test_nifti_stream_bytes_equal_nibabel(tmp_path, monkeypatch, grid, masked, window, slab):
    monkeypatch.setattr(files, "WINDOW_VOXELS", window)
    monkeypatch.setattr(files, "SLAB_VOXELS", slab)
    rng = np.random.default_rng(sum(grid))
    mask = rng.random(grid) > 0.35 if masked else None
    affine = np.diag([1.5, 2.0, 3.0, 1.0])
    ref = SpatialReference(grid, affine, {"zooms": [1.5, 2.0, 3.0], "xyzt_units": 10, "qform_code": 2, "sform_code": 1}, mask)
    values = rng.standard_normal(ref.n_features)
    values[rng.random(values.size) < 0.2] = 0.0
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    stream = NiftiStream(tmp_path / "a", "m", ref)
    cuts = np.sort(rng.choice(np.arange(1, max(2, values.size)), size=min(4, max(1, values.size - 1)), replace=False))
    for part in np.split(values, cuts):
        stream.add(part)
    assert stream.finish() == "m.nii.gz"
    write_values(tmp_path / "b", "m", values, ref)
    assert (tmp_path / "a" / "m.nii.gz").read_bytes() == (tmp_path / "b" / "m.nii.gz").read_bytes()
    volume = ref.to_volume(values).astype(np.float32)
    assert stream.peak_flat == int(np.argmax(np.abs(volume)))
    np.testing.assert_array_equal(stream.nonzero_k, np.any(volume != 0, axis=(0, 1)))
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["m.nii.gz"]


def test_npy_stream_bytes_equal_np_save(tmp_path):
    values = np.random.default_rng(0).standard_normal(1001)
    stream = NpyStream(tmp_path, "v", values.size)
    for part in np.array_split(values, 13):
        stream.add(part)
    stream.finish()
    np.save(tmp_path / "w.npy", values)
    assert (tmp_path / "v.npy").read_bytes() == (tmp_path / "w.npy").read_bytes()


@pytest.mark.parametrize("top", [1, 5, 40, 500])
def test_running_top_and_peak_equal_whole_vector_with_ties(top):
    rng = np.random.default_rng(top)
    values = rng.integers(-4, 5, size=300).astype(np.float64)  # many ties, both signs, zeros
    expected = top_features(values, top)
    for size in (1, 7, 64, 300):
        keep, peak = TopN(top), RunningPeak()
        for lo in range(0, values.size, size):
            keep.add(lo, values[lo:lo + size])
            peak.add(lo, values[lo:lo + size])
        index, vals = keep.result()
        np.testing.assert_array_equal(index, expected)
        np.testing.assert_array_equal(vals, values[expected])
        assert peak.index == int(np.argmax(np.abs(values))) and peak.value == float(np.max(np.abs(values)))


def test_block_size_follows_chunks(monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK_FEATURES", 100)
    assert blocks.block_size(10**6, None) == 100
    assert blocks.block_size(10**6, 30) == 90  # whole chunks
    assert blocks.block_size(10**6, 250) == 250  # one chunk, when not much larger than a block
    assert blocks.block_size(10**6, 1000) == 100  # much larger chunks: bounded blocks
    assert blocks.block_size(40, 30) == 40 and blocks.block_size(5, None) == 5
    assert list(blocks.block_ranges(10, 4)) == [(0, 4), (4, 8), (8, 10)]


def test_nth_flat_index_equals_flat_index(monkeypatch):
    monkeypatch.setattr(files, "WINDOW_VOXELS", 4)
    ref = mf.reference()
    flat = ref.flat_index()
    assert [nth_flat_index(ref, j) for j in range(ref.n_features)] == flat.tolist()


def test_small_map_panels_fed_by_blocks_equal_whole_vector_panels(tmp_path):
    pytest.importorskip("matplotlib")
    ref = mf.reference()
    values = np.random.default_rng(6).standard_normal(ref.n_features)
    for spatial, panel in ((ref, plot.ImagePanel(ref, "matplotlib")), (None, plot.VectorPanel(ref.n_features))):
        assert panel.whole
        for lo in range(0, values.size, 7):
            panel.add(lo, values[lo:lo + 7])
        panel.draw(tmp_path / "blocks.png", "m: direction_1")
        plot.draw_panel(tmp_path / "whole.png", values, spatial, "m: direction_1", "matplotlib")
        assert (tmp_path / "blocks.png").read_bytes() == (tmp_path / "whole.png").read_bytes()


def test_large_vector_panel_is_an_envelope_of_the_values(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(plot, "PLOT_WHOLE_FEATURES", 10)
    monkeypatch.setattr(plot, "ENVELOPE_BINS", 9)
    values = np.random.default_rng(2).standard_normal(103)
    panel = plot.VectorPanel(values.size)
    for lo in range(0, values.size, 8):
        panel.add(lo, values[lo:lo + 8])
    edges = np.arange(0, values.size, panel.width)
    np.testing.assert_array_equal(panel.low, np.minimum.reduceat(values, edges))
    np.testing.assert_array_equal(panel.high, np.maximum.reduceat(values, edges))
    np.testing.assert_array_equal(panel.top.result()[0], top_features(values, 10))
    panel.draw(tmp_path / "v.png", "big")
    assert (tmp_path / "v.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("plotter", ["matplotlib", "nilearn"])
def test_large_image_panel_planes_equal_the_volume(tmp_path, monkeypatch, plotter):
    pytest.importorskip("matplotlib")
    if plotter == "nilearn":
        pytest.importorskip("nilearn.plotting")
    monkeypatch.setattr(plot, "PLOT_WHOLE_FEATURES", 10)
    monkeypatch.setattr(plot, "PLOT_SUBSAMPLE_VOXELS", 40)
    monkeypatch.setattr(files, "SLAB_VOXELS", 50)
    ref = mf.reference()
    values = np.random.default_rng(4).standard_normal(ref.n_features)
    panel = plot.ImagePanel(ref, plotter)
    assert not panel.whole
    stream = NiftiStream(tmp_path, "m", ref)
    stream.add(values)
    stream.complete()
    panel.prepare(stream.peak_flat, stream.peak_abs, stream.nonzero_k)
    stream.finish(on_slab=panel.on_slab)
    volume = ref.to_volume(values).astype(np.float32)
    i, j, k = plot.peak_voxel(volume)
    assert panel.peak == (i, j, k) and panel.axial == plot.axial_slices(volume).tolist()
    np.testing.assert_array_equal(panel.sagittal, volume[i])
    np.testing.assert_array_equal(panel.coronal, volume[:, j])
    for z in {k, *panel.axial}:
        np.testing.assert_array_equal(panel.planes[z], volume[:, :, z])
    if plotter == "nilearn":
        s = panel.step
        np.testing.assert_array_equal(panel.sub, volume[::s, ::s, ::s])
    panel.draw(tmp_path / "m.png", "big")
    assert (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG"


def test_non_finite_block_refused_and_nothing_left(saved, tmp_path, monkeypatch):
    _, model, _ = saved
    _tiny(monkeypatch)
    maps = model_maps(model)
    broken = maps.maps[1]
    original = broken.values

    def values(lo, hi):
        out = original(lo, hi).copy()
        if lo <= 30 < hi:
            out[30 - lo] = np.nan
        return out

    monkeypatch.setattr(broken, "values", values)
    import wideml.maps as maps_pkg

    monkeypatch.setattr(maps_pkg, "model_maps", lambda m: maps)
    with pytest.raises(Exception, match=f"map {broken.name} has non-finite values.*refit"):
        write_maps(model, tmp_path / "maps", plot=None)
    assert not (tmp_path / "maps").exists() and not list(tmp_path.iterdir())
