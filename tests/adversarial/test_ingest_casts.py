"""Adversarial: ingest and write_store never change values silently when casting to the stored dtype.

Each case ends in one outcome: a refusal naming the source, the dtype and the first offending value and
its position (nothing written), or a store whose values equal the oracle (numpy's cast) exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import wideml
from wideml.exceptions import WidemlError
from wideml.sources.ingest import ingest

from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, run_cli


@pytest.fixture
def real_data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 200)) * 3.0
    y = np.arange(30) % 3
    return X, y


def _values(path) -> np.ndarray:
    return wideml.open_store(path).X.compute()


def test_float_to_int8_is_refused_by_the_cli_and_nothing_is_written(real_data, tmp_path):
    X, y = real_data
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "out.zarr"
    proc = run_cli("ingest", tmp_path / "X.npy", "-o", out, "--labels", tmp_path / "y.npy", "--dtype", "int8")
    message = assert_refused(proc, str(tmp_path / "X.npy"), "int8", "sample 0, feature 0", "--allow-lossy-cast")
    assert repr(X[0, 0]) in message or str(X[0, 0])[:6] in message
    assert not out.exists()
    assert_no_debris(tmp_path)


def test_float_to_int8_is_refused_by_the_api_naming_the_first_offending_value(tmp_path):
    X = np.round(np.random.default_rng(0).standard_normal((20, 300)) * 10)  # integral ...
    X[7, 211] = 2.5  # ... except one value
    with pytest.raises(WidemlError) as excinfo:
        ingest(X, tmp_path / "out.zarr", labels=np.arange(20) % 2, dtype="int8", feature_chunk=64)
    assert_api_refused(excinfo, "2.5", "sample 7, feature 211", "int8")
    assert not (tmp_path / "out.zarr").exists()
    assert_no_debris(tmp_path)


def test_float_to_int8_with_the_explicit_flag_is_written_as_asked(real_data, tmp_path):
    X, y = real_data
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "out.zarr"
    proc = run_cli("ingest", tmp_path / "X.npy", "-o", out, "--labels", tmp_path / "y.npy", "--dtype", "int8",
                   "--allow-lossy-cast")
    assert proc.returncode == 0, proc.stderr
    stored = _values(out)
    assert stored.dtype == np.int8
    np.testing.assert_array_equal(stored, X.astype(np.int8))


def test_integer_valued_floats_to_int16_in_range_are_exact(tmp_path):
    X = np.round(np.random.default_rng(1).uniform(-32768, 32767, size=(25, 150)))
    X[0, 0], X[1, 1] = -32768.0, 32767.0
    ingest(X, tmp_path / "out.zarr", labels=np.arange(25) % 2, dtype="int16", feature_chunk=64)
    stored = _values(tmp_path / "out.zarr")
    assert stored.dtype == np.int16
    np.testing.assert_array_equal(stored.astype(np.float64), X)


def test_int32_values_out_of_int8_range_are_refused_from_hdf5(tmp_path):
    import h5py

    X = np.random.default_rng(2).integers(-100, 100, size=(20, 120)).astype(np.int32)
    X[11, 77] = 300
    with h5py.File(tmp_path / "X.h5", "w") as f:
        f.create_dataset("data", data=X, chunks=(20, 40))
    with pytest.raises(WidemlError) as excinfo:
        ingest(str(tmp_path / "X.h5"), tmp_path / "out.zarr", labels=np.arange(20) % 2, dtype="int8")
    assert_api_refused(excinfo, "300", "sample 11, feature 77", "int8", "X.h5")
    assert not (tmp_path / "out.zarr").exists()
    assert_no_debris(tmp_path)


def test_float64_to_float16_is_refused_by_write_store(real_data, tmp_path):
    X, y = real_data
    with pytest.raises(WidemlError) as excinfo:
        wideml.write_store(tmp_path / "s.zarr", X, y, dtype="float16")
    assert_api_refused(excinfo, "float64", "float16", "--allow-lossy-cast")
    assert not (tmp_path / "s.zarr").exists()


def test_huge_float64_values_that_overflow_float32_are_refused_from_csv(tmp_path):
    X = np.random.default_rng(4).standard_normal((12, 30))
    X[5, 9] = 1e39  # finite in float64, inf in float32
    lines = ["label," + ",".join(f"f{j}" for j in range(30))]
    lines += [f"{i % 2}," + ",".join(repr(float(v)) for v in row) for i, row in enumerate(X)]
    (tmp_path / "X.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.zarr"
    proc = run_cli("ingest", tmp_path / "X.csv", "-o", out, "--label-column", "label", "--dtype", "float32")
    assert_refused(proc, "1e+39", "sample 5, feature 9", "inf", "float32", "X.csv")
    assert not out.exists()
    assert_no_debris(tmp_path)


def test_float64_to_float32_of_normal_data_is_accepted_and_exact(real_data, tmp_path):
    X, y = real_data
    np.save(tmp_path / "X.npy", X)
    ingest(str(tmp_path / "X.npy"), tmp_path / "out.zarr", labels=y, dtype="float32", feature_chunk=64)
    stored = _values(tmp_path / "out.zarr")
    assert stored.dtype == np.float32
    np.testing.assert_array_equal(stored, X.astype(np.float32))


def test_float64_underflow_to_zero_in_float32_is_refused(real_data, tmp_path):
    X, y = real_data
    X = X.copy()
    X[2, 150] = 1e-50
    with pytest.raises(WidemlError) as excinfo:
        wideml.write_store(tmp_path / "s.zarr", X, y, dtype="float32", feature_chunk=64)
    assert_api_refused(excinfo, "1e-50", "sample 2, feature 150", "float32")
    assert not (tmp_path / "s.zarr").exists()


def test_large_int64_to_float32_that_would_round_is_refused(tmp_path):
    X = np.arange(20 * 50, dtype=np.int64).reshape(20, 50)
    X[4, 3] = 2**24 + 1  # float32 holds 2**24 and 2**24 + 2, not this
    with pytest.raises(WidemlError) as excinfo:
        ingest(X, tmp_path / "out.zarr", labels=np.arange(20) % 2, dtype="float32")
    assert_api_refused(excinfo, str(2**24 + 1), "sample 4, feature 3", "exactly")
    ingest(X, tmp_path / "out64.zarr", labels=np.arange(20) % 2, dtype="float64")  # float64 holds it
    np.testing.assert_array_equal(_values(tmp_path / "out64.zarr"), X.astype(np.float64))


def test_folder_of_npy_files_to_int8_is_refused_naming_the_file(tmp_path):
    folder = tmp_path / "samples"
    folder.mkdir()
    rng = np.random.default_rng(5)
    for i in range(6):
        values = np.round(rng.standard_normal((4, 5)) * 10)
        if i == 3:
            values[1, 2] = 0.25
        np.save(folder / f"s{i}.npy", values)
    (tmp_path / "labels.csv").write_text("id,label\n" + "".join(f"s{i},{i % 2}\n" for i in range(6)))
    with pytest.raises(WidemlError) as excinfo:
        ingest(str(folder), tmp_path / "out.zarr", labels=str(tmp_path / "labels.csv"), dtype="int8")
    assert_api_refused(excinfo, "s3.npy", "0.25", "sample 3, feature 7", "int8")
    assert not (tmp_path / "out.zarr").exists()
    assert_no_debris(tmp_path)


def test_store_writer_refuses_a_lossy_block(tmp_path):
    writer = wideml.create_store(tmp_path / "s.zarr", n_samples=4, n_features=6, dtype="int8", feature_chunk=3)
    with pytest.raises(WidemlError) as excinfo:
        with writer:
            writer.write(np.full((4, 3), 1000.0), 3)
    assert_api_refused(excinfo, "1000.0", "sample 0, feature 3", "int8")
    assert not (tmp_path / "s.zarr").exists()
    assert_no_debris(tmp_path)
