"""Adversarial: missing, truncated and corrupt chunks of X are errors naming the chunk, never zeros.

Each case ends in one outcome: a refusal (exit 2 / StoreError, one sentence naming the chunk, nothing
written), or the oracle's answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr
from scipy.linalg import subspace_angles

import wideml
from wideml.exceptions import StoreError

from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, run_cli


def _store(tmp_path, X, y, name="s.zarr", **kwargs) -> Path:
    return wideml.write_store(tmp_path / name, X, y, feature_chunk=128, **kwargs)


def _set_attrs(store: Path, **changes) -> None:
    meta_path = store / "zarr.json"
    meta = json.loads(meta_path.read_text())
    attrs = meta["attributes"]["wideml"]
    for key, value in changes.items():
        if value is None:
            attrs.pop(key, None)
        else:
            attrs[key] = value
    meta_path.write_text(json.dumps(meta))


def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


# --------------------------------------------------------------------------- the CLI on a deleted chunk


def test_info_refuses_a_store_with_a_deleted_chunk(adv_stores, fresh_copy):
    store = fresh_copy(adv_stores[0])
    (store / "X" / "c" / "0" / "2").unlink()
    proc = run_cli("info", store)
    assert_refused(proc, "chunk (0, 2)", "columns 256:384", str(store), "missing")


def test_fit_refuses_a_store_with_a_deleted_chunk_and_writes_nothing(adv_stores, fresh_copy, tmp_path):
    store = fresh_copy(adv_stores[0])
    (store / "X" / "c" / "0" / "4").unlink()
    proc = run_cli("fit", "lol", store, "-o", tmp_path / "m.model", "--n-components", "3")
    assert_refused(proc, "chunk (0, 4)", str(store))
    assert not (tmp_path / "m.model").exists()
    assert_no_debris(tmp_path)


def test_predict_refuses_a_test_store_with_a_deleted_chunk(adv_stores, fresh_copy, tmp_path):
    model = tmp_path / "m.model"
    clf = wideml.EmbeddingClassifier(wideml.LOL(n_components=3), classifier="lda").fit(wideml.open_store(adv_stores[0]))
    wideml.save_model(clf, model)
    test = fresh_copy(adv_stores[1])
    (test / "X" / "c" / "0" / "1").unlink()
    proc = run_cli("predict", model, test, "-o", tmp_path / "pred.csv")
    assert_refused(proc, "chunk (0, 1)", str(test))
    assert not (tmp_path / "pred.csv").exists()
    assert_no_debris(tmp_path)


def test_zstd_store_with_a_deleted_chunk_is_refused_by_fit(adv_data, tmp_path):
    X, y, _, _ = adv_data
    store = _store(tmp_path, X, y, compressor="zstd")
    (store / "X" / "c" / "0" / "3").unlink()
    proc = run_cli("fit", "lfl", store, "-o", tmp_path / "m.model", "--n-components", "3")
    assert_refused(proc, "chunk (0, 3)", str(store))
    assert not (tmp_path / "m.model").exists()
    assert_no_debris(tmp_path)


# --------------------------------------------------------------------------- other layouts


def _foreign_store(tmp_path, X, y, **array_kwargs) -> Path:
    """A feature store written by plain zarr (no wideml attributes) with the given array layout."""
    path = tmp_path / "foreign.zarr"
    group = zarr.create_group(str(path), zarr_format=3)
    a = group.create_array("X", shape=X.shape, dtype=X.dtype, fill_value=0, **array_kwargs)
    a[:] = X
    group.create_array("y", shape=y.shape, dtype=y.dtype, chunks=y.shape)[:] = y
    return path


def test_dot_separated_store_with_a_deleted_chunk_is_refused(adv_data, tmp_path):
    X, y, _, _ = adv_data
    store = _foreign_store(tmp_path, X, y, chunks=(90, 100), chunk_key_encoding={"name": "default", "separator": "."})
    np.testing.assert_array_equal(wideml.open_store(store).X.compute(), X)  # intact: read exactly
    (store / "X" / "c.0.5").unlink()
    with pytest.raises(StoreError) as excinfo:
        wideml.open_store(store)
    assert_api_refused(excinfo, "chunk (0, 5)", "columns 500:600", str(store))


def test_sharded_store_with_a_deleted_shard_is_refused(adv_data, tmp_path):
    X, y, _, _ = adv_data
    store = _foreign_store(tmp_path, X, y, chunks=(90, 100), shards=(90, 200))
    np.testing.assert_array_equal(wideml.open_store(store).X.compute(), X)
    (store / "X" / "c" / "0" / "1").unlink()
    with pytest.raises(StoreError) as excinfo:
        wideml.open_store(store)
    assert_api_refused(excinfo, "shard (0, 1)", "columns 200:400", str(store))


def test_sharded_store_with_an_inner_chunk_absent_from_its_shard_is_refused(adv_data, tmp_path):
    X, y, _, _ = adv_data
    X = X.copy()
    X[:, 300:400] = 0  # zarr does not store an all-fill inner chunk: the shard's index marks it empty
    store = _foreign_store(tmp_path, X, y, chunks=(90, 100), shards=(90, 200))
    with pytest.raises(StoreError) as excinfo:
        wideml.open_store(store)
    assert_api_refused(excinfo, "chunk (0, 3)", "inside shard (0, 1)")


def test_hdf5_store_with_an_unwritten_chunk_is_refused_by_info(adv_data, tmp_path):
    import h5py

    X, y, _, _ = adv_data
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("X", shape=X.shape, dtype=X.dtype, chunks=(90, 100))
        d[:, :300] = X[:, :300]
        d[:, 400:] = X[:, 400:]  # chunk (0, 3) never written: h5py would read it as zeros
        f.create_dataset("y", data=y)
    proc = run_cli("info", path)
    assert_refused(proc, "chunk (0, 3)", "columns 300:400", str(path))


# --------------------------------------------------------------------------- after open, truncated, corrupt


@pytest.mark.parametrize("compressor", ["none", "zstd"])
def test_chunk_deleted_after_open_fails_the_fit(adv_data, tmp_path, compressor):
    X, y, _, _ = adv_data
    store = wideml.open_store(_store(tmp_path, X, y, compressor=compressor))
    (store.path / "X" / "c" / "0" / "2").unlink()
    with pytest.raises(StoreError) as excinfo:
        wideml.LOL(n_components=3).fit(store)
    assert_api_refused(excinfo, "chunk (0, 2)", str(store.path), "missing")


def test_chunk_deleted_after_open_fails_the_zarr_read_path(adv_data, tmp_path):
    from zarr.codecs import GzipCodec, ZstdCodec

    X, y, _, _ = adv_data
    store_path = _foreign_store(tmp_path, X, y, chunks=(90, 100), compressors=[ZstdCodec(), GzipCodec()])
    store = wideml.open_store(store_path)
    assert "read through zarr" in store.codec
    (store_path / "X" / "c" / "0" / "1").unlink()
    with pytest.raises(StoreError) as excinfo:
        store.X.compute()
    assert_api_refused(excinfo, "chunk (0, 1)", str(store_path))


def test_truncated_chunk_file_fails_the_fit(adv_data, tmp_path):
    X, y, _, _ = adv_data
    store = _store(tmp_path, X, y)
    chunk = store / "X" / "c" / "0" / "1"
    chunk.write_bytes(chunk.read_bytes()[:1000])
    with pytest.raises(StoreError) as excinfo:
        wideml.LOL(n_components=3).fit(wideml.open_store(store))
    assert_api_refused(excinfo, "X[0:90, 128:256]", "damaged")


def test_flipped_byte_in_a_checksummed_uncompressed_chunk_is_refused(adv_data, tmp_path):
    X, y, _, _ = adv_data
    store = _store(tmp_path, X, y, checksum=True, compressor="none")
    _flip_byte(store / "X" / "c" / "0" / "2", 12345)  # still a valid float: only the checksum can tell
    with pytest.raises(StoreError) as excinfo:
        wideml.LOL(n_components=3).fit(wideml.open_store(store))
    assert_api_refused(excinfo, "chunk (0, 2)", "crc32c", str(store))


def test_flipped_byte_in_a_checksummed_zstd_chunk_is_refused_by_the_cli(adv_data, tmp_path):
    X, y, _, _ = adv_data
    store = _store(tmp_path, X, y, checksum=True, compressor="zstd")
    chunk = store / "X" / "c" / "0" / "1"
    _flip_byte(chunk, len(chunk.read_bytes()) // 2)
    proc = run_cli("fit", "lol", store, "-o", tmp_path / "m.model", "--n-components", "3")
    assert_refused(proc, "chunk (0, 1)", "crc32c")
    assert not (tmp_path / "m.model").exists()
    assert_no_debris(tmp_path)


def test_checksummed_store_fits_identically_to_an_unchecksummed_one(adv_data, tmp_path):
    X, y, Xt, _ = adv_data
    plain = wideml.open_store(_store(tmp_path, X, y, name="plain.zarr", checksum=False))
    checked = wideml.open_store(_store(tmp_path, X, y, name="checked.zarr", checksum=True))
    assert checked.checksum == "crc32c" and plain.checksum is None
    a = wideml.EmbeddingClassifier(wideml.LOL(n_components=4), classifier="lda").fit(plain)
    b = wideml.EmbeddingClassifier(wideml.LOL(n_components=4), classifier="lda").fit(checked)
    np.testing.assert_array_equal(a.transform(Xt), b.transform(Xt))
    np.testing.assert_array_equal(a.predict(Xt), b.predict(Xt))


# --------------------------------------------------------------------------- what the store says about itself


def test_explicit_fill_attribute_reads_zeros_and_fits_like_the_oracle(adv_data, tmp_path):
    from sklearn.decomposition import PCA as SkPCA

    X, y, _, _ = adv_data
    store = _store(tmp_path, X, y, missing_chunks_are_fill=True)
    (store / "X" / "c" / "0" / "1").unlink()
    X0 = X.copy()
    X0[:, 128:256] = 0
    opened = wideml.open_store(store)
    assert opened.missing_chunks == "fill"
    np.testing.assert_array_equal(opened.X.compute(), X0)
    pca = wideml.PCA(n_components=2, precision="float64", solver="gram").fit(opened)
    oracle = SkPCA(n_components=2).fit(X0.astype(np.float64))
    angle = np.max(subspace_angles(np.asarray(pca.components_).T, oracle.components_.T))
    assert angle < 1e-5, angle
    proc = run_cli("info", store)
    assert proc.returncode == 0, proc.stderr
    assert "missing chunks of X read as the fill value" in proc.stdout


def test_store_never_marked_complete_is_refused(adv_stores, fresh_copy):
    store = fresh_copy(adv_stores[0])
    _set_attrs(store, complete=False)  # what an interrupted writer leaves
    proc = run_cli("info", store)
    assert_refused(proc, "not marked complete", str(store))


def test_store_without_the_completeness_mark_is_refused(adv_stores, fresh_copy):
    store = fresh_copy(adv_stores[0])
    _set_attrs(store, complete=None)
    with pytest.raises(StoreError) as excinfo:
        wideml.open_store(store)
    assert_api_refused(excinfo, "not marked complete", "write the store again")


def test_unknown_missing_chunks_attribute_is_refused(adv_stores, fresh_copy):
    store = fresh_copy(adv_stores[0])
    _set_attrs(store, missing_chunks="zeros")
    with pytest.raises(StoreError) as excinfo:
        wideml.open_store(store)
    assert_api_refused(excinfo, "missing_chunks", "'fill'")


def test_all_zero_chunks_are_written_and_read_back(adv_data, tmp_path):
    X, y, _, _ = adv_data
    X = X.copy()
    X[:, 128:256] = 0  # zarr would skip this chunk by default; wideml writes it so the store is complete
    store = _store(tmp_path, X, y, compressor="zstd")
    assert (store / "X" / "c" / "0" / "1").is_file()
    np.testing.assert_array_equal(wideml.open_store(store).X.compute(), X)


# --------------------------------------------------------------------------- ingest and rechunk of incomplete sources


def test_ingest_of_a_zarr_array_with_a_missing_chunk_is_refused_unless_told(adv_data, tmp_path):
    X, y, _, _ = adv_data
    src = tmp_path / "src.zarr"
    zarr.create_array(str(src), shape=X.shape, chunks=(90, 100), dtype=X.dtype, fill_value=0)[:] = X
    (src / "c" / "0" / "2").unlink()
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "out.zarr"
    proc = run_cli("ingest", src, "-o", out, "--labels", tmp_path / "y.npy")
    assert_refused(proc, "chunk (0, 2)", str(src))
    assert not out.exists()
    assert_no_debris(tmp_path)
    wideml.ingest(src, out, labels=y, missing_chunks_are_fill=True)
    X0 = X.copy()
    X0[:, 200:300] = 0
    opened = wideml.open_store(out)
    assert opened.missing_chunks == "fill"
    np.testing.assert_array_equal(opened.X.compute(), X0)


def test_rechunk_of_a_store_with_a_missing_chunk_is_refused(adv_stores, fresh_copy, tmp_path):
    from wideml.storage.rechunk import rechunk

    store = fresh_copy(adv_stores[0])
    (store / "X" / "c" / "0" / "0").unlink()
    with pytest.raises(StoreError) as excinfo:
        rechunk(store, tmp_path / "r.zarr", feature_chunk=64)
    assert_api_refused(excinfo, "chunk (0, 0)")
    assert not (tmp_path / "r.zarr").exists()


# --------------------------------------------------------------------------- labels and ids are never filled


def test_deleted_label_chunk_is_refused_not_read_as_class_zero(adv_stores, fresh_copy, tmp_path):
    """zarr reads a missing chunk of y as 0: every sample would silently become class 0."""
    store = fresh_copy(adv_stores[0])
    (store / "y" / "c" / "0").unlink()
    assert_refused(run_cli("info", store), "chunk (0,)", "y of the store", "missing")
    proc = run_cli("fit", "lol", store, "-o", tmp_path / "m.model", "--n-components", "3")
    assert_refused(proc, "y of the store", "missing")
    assert not (tmp_path / "m.model").exists()
    assert_no_debris(tmp_path)


def test_deleted_label_chunk_is_refused_even_when_x_may_be_filled(adv_data, tmp_path):
    X, y, _, _ = adv_data
    store = _store(tmp_path, X, y, missing_chunks_are_fill=True)
    (store / "y" / "c" / "0").unlink()
    with pytest.raises(StoreError) as excinfo:
        wideml.open_store(store)
    assert_api_refused(excinfo, "y of the store", "missing")


def test_deleted_feature_ids_chunk_is_refused(adv_data, tmp_path):
    X, y, _, _ = adv_data
    ids = np.array([f"g{j}" for j in range(X.shape[1])])
    store = _store(tmp_path, X, y, feature_ids=ids)
    for chunk in (store / "feature_ids" / "c").iterdir():
        chunk.unlink()
    with pytest.raises(StoreError) as excinfo:
        wideml.open_store(store)
    assert_api_refused(excinfo, "feature_ids of the store", "missing")


@pytest.mark.parametrize("shape", ["abc", [10, "x", 60], [0, 600], [10, 61], [True, 600]])
def test_malformed_or_inconsistent_feature_shape_is_refused(adv_stores, fresh_copy, shape):
    """A feature_shape that does not describe X would map results into the wrong voxels."""
    store = fresh_copy(adv_stores[0])
    _set_attrs(store, feature_shape=shape)
    assert_refused(run_cli("info", store), "feature_shape", str(store))


def test_consistent_feature_shape_is_kept(adv_stores, fresh_copy):
    store = fresh_copy(adv_stores[0])
    _set_attrs(store, feature_shape=[10, 6, 10])
    assert wideml.open_store(store).feature_shape == (10, 6, 10)
