"""Chunk listings of every supported key encoding, crc32c chains, the checksum config and the completeness mark."""

from __future__ import annotations

import json

import dask
import numpy as np
import pytest
import zarr

import wideml
from wideml.exceptions import ConfigError, StoreError
from wideml.storage.chunkfiles import chunk_decoder
from wideml.storage.integrity import check_layout_complete, chunk_layout, missing_chunk_keys


@pytest.mark.parametrize("encoding", [{"name": "default", "separator": "/"}, {"name": "default", "separator": "."},
                                      {"name": "v2", "separator": "."}, {"name": "v2", "separator": "/"}])
def test_listing_finds_exactly_the_missing_chunk_for_every_key_encoding(tmp_path, encoding):
    path = tmp_path / "a.zarr"
    arr = zarr.create_array(str(path), shape=(5, 40), chunks=(5, 8), dtype="f4", chunk_key_encoding=encoding)
    arr[:] = np.arange(200, dtype="f4").reshape(5, 40) + 1
    layout = chunk_layout(path, json.loads((path / "zarr.json").read_text()))
    assert missing_chunk_keys(layout) == []
    victim = [f for f in path.rglob("*") if f.is_file() and f.name != "zarr.json"]
    assert len(victim) == 5
    target = sorted(victim)[3]
    target.unlink()
    missing = missing_chunk_keys(layout)
    assert len(missing) == 1
    with pytest.raises(StoreError, match=r"chunk \(0, \d\) \(rows 0:5, columns \d+:\d+\) of A is missing"):
        check_layout_complete(layout, "A")


def test_chunk_decoder_accepts_a_crc32c_trailer_and_nothing_else_new():
    b = {"name": "bytes", "configuration": {"endian": "little"}}
    assert chunk_decoder([b]) == ("little", None, False)
    assert chunk_decoder([b, {"name": "crc32c"}]) == ("little", None, True)
    endian, decoder, crc = chunk_decoder([b, {"name": "zstd", "configuration": {"level": 3}}, {"name": "crc32c"}])
    assert decoder is not None and crc
    assert chunk_decoder([b, {"name": "crc32c"}, {"name": "zstd"}]) is None
    assert chunk_decoder([{"name": "transpose"}, b]) is None


def test_checksum_config_sets_the_default_of_create_store(tmp_path):
    X = np.random.default_rng(0).standard_normal((6, 20)).astype(np.float32)
    with dask.config.set({"wideml.checksum": "true"}):
        wideml.write_store(tmp_path / "on.zarr", X, np.arange(6) % 2)
    with dask.config.set({"wideml.checksum": False}):
        wideml.write_store(tmp_path / "off.zarr", X, np.arange(6) % 2)
    assert wideml.open_store(tmp_path / "on.zarr").checksum == "crc32c"
    assert wideml.open_store(tmp_path / "off.zarr").checksum is None
    with dask.config.set({"wideml.checksum": "maybe"}), pytest.raises(ConfigError, match="checksum 'maybe' is not true or false"):
        wideml.write_store(tmp_path / "bad.zarr", X, np.arange(6) % 2)


def test_written_stores_are_marked_complete_and_the_mark_comes_last(tmp_path):
    X = np.random.default_rng(0).standard_normal((6, 20)).astype(np.float32)
    writer = wideml.create_store(tmp_path / "s.zarr", n_samples=6, n_features=20, y=np.arange(6) % 2, feature_chunk=8)
    partial = writer.x_target().rsplit("/", 1)[0]
    assert json.loads(open(f"{partial}/zarr.json").read())["attributes"]["wideml"]["complete"] is False
    with writer:
        writer.write(X, 0)
    attrs = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())["attributes"]["wideml"]
    assert attrs["complete"] is True and attrs["version"] == 3
    np.testing.assert_array_equal(wideml.open_store(tmp_path / "s.zarr").X.compute(), X)


def test_hdf5_store_with_checksums_round_trips_and_reports_them(tmp_path):
    X = np.random.default_rng(0).standard_normal((6, 20)).astype(np.float32)
    wideml.write_store(tmp_path / "s.h5", X, np.arange(6) % 2, feature_chunk=8, checksum=True)
    store = wideml.open_store(tmp_path / "s.h5")
    assert store.checksum == "fletcher32"
    np.testing.assert_array_equal(store.X.compute(), X)


def test_cli_ingest_and_rechunk_take_checksum_flags(tmp_path):
    from wideml.cli.main import main

    X = np.random.default_rng(0).standard_normal((6, 20))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", np.arange(6) % 2)
    assert main(["ingest", str(tmp_path / "X.npy"), "-o", str(tmp_path / "a.zarr"), "--labels", str(tmp_path / "y.npy"),
                 "--checksum", "--no-progress"]) == 0
    assert wideml.open_store(tmp_path / "a.zarr").checksum == "crc32c"
    assert main(["rechunk", str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr"), "--no-checksum", "--feature-chunk", "7",
                 "--no-progress"]) == 0
    b = wideml.open_store(tmp_path / "b.zarr")
    assert b.checksum is None and b.stored_chunks == (6, 7)
    np.testing.assert_array_equal(b.X.compute(), X)


def test_ingest_of_a_zarr_v2_array_with_a_missing_chunk_is_refused(tmp_path):
    from wideml.sources.ingest import ingest

    X = np.arange(6 * 20, dtype="f8").reshape(6, 20) + 1
    src = tmp_path / "v2.zarr"
    zarr.create_array(str(src), shape=X.shape, chunks=(6, 5), dtype="f8", zarr_format=2)[:] = X
    (src / "0.1").unlink()
    with pytest.raises(StoreError, match=r"chunk \(0, 1\) \(rows 0:6, columns 5:10\) of the zarr array at .* is missing"):
        ingest(str(src), tmp_path / "out.zarr", labels=np.arange(6) % 2)
    assert not (tmp_path / "out.zarr").exists()
