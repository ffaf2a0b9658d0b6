"""Adding a data format is one reader class and one registry line: toy formats ingested through ``wideml.ingest`` and the CLI.

* ``.toy``: a text format (``n p`` on the first line, then ``label v1 ... vp``
  per sample), a row stream (``STREAM``) with its own labels;
* ``.f32``: raw little-endian float32 with a ``.shape`` sidecar, an array
  format written as an :class:`ArraySource` with only ``open_array``.

Neither touches the writer loop, ``wideml.ingest`` or the CLI; the existing
guarantees (atomic output, labels checks, options a format does not take)
hold for them as for the built-in formats.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import wideml
from wideml.cli.main import main
from wideml.exceptions import WidemlError
from wideml.sources import registry
from wideml.sources.arrays import ArraySource, check_matrix
from wideml.sources.base import STREAM, IngestOptions, Source
from wideml.sources.labels import validate_labels
from wideml.sources.locations import Location
from wideml.storage import open_store
from wideml.storage.casts import CastCheck


class ToySource(Source):
    """``.toy`` text: ``n p``, then one ``label v1 ... vp`` line per sample."""

    kind = "toy"
    access = STREAM

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> ToySource:
        src = cls()
        lines = location.path.read_text().splitlines()
        n, p = (int(v) for v in lines[0].split())
        src.path, src.shape, src.dtype = location.path, (n, p), np.dtype(np.float64)
        src.labels = validate_labels(np.array([line.split()[0] for line in lines[1:]]), n)
        src.sample_ids = np.array([f"toy{i}" for i in range(n)])
        src.description, src.what, src.title = f"toy:{location.path}", repr(str(location.path)), "ingest toy"
        return src

    def row_stream(self, rows, dtype, allow_lossy_cast=False):
        cast = CastCheck(dtype, self.what, allow_lossy_cast)
        values = [[float(v) for v in line.split()[1:]] for line in self.path.read_text().splitlines()[1:]]
        for r0 in range(0, len(values), rows):
            yield cast(np.array(values[r0 : r0 + rows]), r0, 0)


class RawFloat32Source(ArraySource):
    """``x.f32``: raw float32 values, shape in ``x.f32.shape`` (``n p``), read through a memory map."""

    kind = "f32"

    @classmethod
    def open_array(cls, location: Location, options: IngestOptions) -> RawFloat32Source:
        shape = check_matrix([int(v) for v in Path(f"{location.path}.shape").read_text().split()], np.float32, "the raw file")
        mm = np.memmap(location.path, dtype="<f4", mode="r", shape=shape)
        return cls(mm, shape, np.float32, (1, 1), True, f"f32:{location.path}")


@pytest.fixture
def toy_formats(monkeypatch):
    """The two formats registered the way a new file would be: one registry line each."""
    monkeypatch.setattr(registry, "REGISTRY", [
        *registry.REGISTRY,
        registry.Entry(registry.suffix(".toy"), ToySource),
        registry.Entry(registry.suffix(".f32"), RawFloat32Source),
    ])


def _toy(path: Path, X: np.ndarray, y) -> Path:
    path.write_text(f"{X.shape[0]} {X.shape[1]}\n" + "".join(f"{lab} " + " ".join(repr(float(v)) for v in row) + "\n"
                                                             for lab, row in zip(y, X)))
    return path


def test_unregistered_format_is_refused_as_before(tmp_path, assert_no_output):
    _toy(tmp_path / "x.toy", np.ones((4, 2)), "abab")
    with pytest.raises(WidemlError, match=r"cannot tell what kind of data .* holds; give a \.npy, \.h5/\.hdf5 or \.csv/\.tsv file"):
        wideml.ingest(tmp_path / "x.toy", tmp_path / "out.zarr")
    assert_no_output(tmp_path / "out.zarr")


def test_a_stream_format_ingests_with_its_labels(tmp_path, fmt, toy_formats, rng, no_leftovers):
    X, y = rng.standard_normal((9, 5)), np.array(list("ababababa"))
    out = tmp_path / f"toy.{'h5' if fmt == 'hdf5' else 'zarr'}"
    assert wideml.ingest(_toy(tmp_path / "x.toy", X, y), out, feature_chunk=2, memory_limit="2KiB") == out
    store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), X)
    np.testing.assert_array_equal(store.y, y)
    np.testing.assert_array_equal(store.sample_ids, [f"toy{i}" for i in range(9)])
    assert store.stored_chunks == (9, 2) and store.attrs["source"] == f"toy:{tmp_path / 'x.toy'}"
    no_leftovers(out)


def test_an_array_format_needs_only_open_array(tmp_path, toy_formats, rng):
    X, y = rng.standard_normal((6, 8)).astype(np.float32), np.array([0, 1] * 3)
    X.astype("<f4").tofile(tmp_path / "x.f32")
    (tmp_path / "x.f32.shape").write_text("6 8")
    wideml.ingest(tmp_path / "x.f32", tmp_path / "out.zarr", labels=y, feature_chunk=3)
    store = open_store(tmp_path / "out.zarr")
    np.testing.assert_array_equal(store.X.compute(), X)
    np.testing.assert_array_equal(store.y, y)
    assert store.dtype == np.float32 and store.stored_chunks == (6, 3)


def test_the_cli_ingests_a_registered_format(tmp_path, toy_formats, rng, capsys):
    X, y = rng.standard_normal((6, 3)).astype(np.float32), np.array(list("aabbab"))
    X.astype("<f4").tofile(tmp_path / "x.f32")
    (tmp_path / "x.f32.shape").write_text("6 3")
    (tmp_path / "y.csv").write_text("label\n" + "".join(f"{v}\n" for v in y))
    assert main(["ingest", str(tmp_path / "x.f32"), "--labels", str(tmp_path / "y.csv"), "-o", str(tmp_path / "cli.zarr")]) == 0
    store = open_store(tmp_path / "cli.zarr")
    np.testing.assert_array_equal(store.X.compute(), X)
    np.testing.assert_array_equal(store.y, y)
    assert "6 samples x 3 features" in capsys.readouterr().out  # the store summary, as for every format


def test_shared_guarantees_hold_for_a_new_format(tmp_path, toy_formats, assert_no_output):
    path = _toy(tmp_path / "x.toy", np.ones((4, 2)), "aaaa")
    with pytest.raises(WidemlError, match="only one class"):
        wideml.ingest(path, tmp_path / "one.zarr")
    assert_no_output(tmp_path / "one.zarr")
    _toy(path, np.array([[1.5, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]), "abab")
    with pytest.raises(WidemlError, match="--mask .* only applies to a folder of NIfTI volumes"):
        wideml.ingest(path, tmp_path / "m.zarr", mask="auto")
    with pytest.raises(WidemlError, match="1.5"):  # a lossy cast is refused naming the value
        wideml.ingest(path, tmp_path / "int.zarr", dtype="int16")
    assert_no_output(tmp_path / "int.zarr")
    (tmp_path / "taken.zarr").mkdir()
    with pytest.raises(WidemlError):
        wideml.ingest(path, tmp_path / "taken.zarr")
    assert (tmp_path / "taken.zarr").is_dir() and not any((tmp_path / "taken.zarr").iterdir())
