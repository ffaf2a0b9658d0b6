"""Store chunks read inside the pass tasks (ChunkRef) and centred in place; everything else left untouched."""

import dask.array as da
import numpy as np
import pytest

from wideml import LFL, LOL, open_store, write_store
from wideml.passes.blocks import ChunkRef, feature_stripes, materialise
from wideml.passes.chunkmath import centre, float32_centring_vector


def _data(n=80, p=600, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = (rng.normal(size=(n, p)) + 0.5 * np.eye(3)[y] @ rng.normal(size=(3, p)) + 100).astype(np.float32)
    return X, y


def test_store_stripes_are_chunk_refs_and_derived_arrays_are_not(tmp_path):
    X, y = _data()
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=128)
    store = open_store(tmp_path / "s.zarr")
    stripes, offsets = feature_stripes(store.X, direct=True)
    assert all(isinstance(s, ChunkRef) for s in stripes) and list(offsets) == [0, 128, 256, 384, 512]
    block, owned = materialise(stripes[-1])
    assert owned and block.shape == (80, 88)
    np.testing.assert_array_equal(block, X[:, 512:])
    for derived in (store.X[:, :300], store.X.rechunk((80, 64)), store.X.astype(np.float64)):
        assert not any(isinstance(s, ChunkRef) for s in feature_stripes(derived, direct=True)[0])
    assert not any(isinstance(s, ChunkRef) for s in feature_stripes(store.X)[0])  # only when asked


@pytest.mark.parametrize("make", [lambda: LOL(6, solver="randomized"), lambda: LOL(6, solver="gram"), lambda: LFL(6)])
def test_user_arrays_are_never_centred_in_place(make):
    X, y = _data()
    before = X.copy()
    make().fit(da.from_array(X, chunks=(80, 100)), y)
    make().fit(X, y)
    np.testing.assert_array_equal(X, before)


def test_store_fits_repeat_exactly(tmp_path):
    """In-place centring works on the task's own copy: a second fit sees the same data."""
    X, y = _data()
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=100)
    store = open_store(tmp_path / "s.zarr")
    a = LOL(6, solver="randomized").fit(store)
    b = LOL(6, solver="randomized").fit(store)
    np.testing.assert_array_equal(np.asarray(a.components_), np.asarray(b.components_))
    np.testing.assert_array_equal(np.asarray(store.X), X)


def test_inplace_centring_equals_the_copying_one():
    X, _ = _data()
    x1, m1, c1, _ = centre(X, 0, np.dtype(np.float32))
    own = X.copy()
    x2, m2, c2, _ = centre(own, 0, np.dtype(np.float32), inplace=True)
    assert x2 is own
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_array_equal(c1, float32_centring_vector(X))
    np.testing.assert_allclose(m1, X.astype(np.float64).mean(0), rtol=1e-7)


def test_centring_vector_does_not_depend_on_width_or_layout():
    X, _ = _data()
    whole = float32_centring_vector(X)
    for w in (1, 7, 64):
        parts = np.concatenate([float32_centring_vector(X[:, a : a + w]) for a in range(0, X.shape[1], w)])
        np.testing.assert_array_equal(parts, whole)
    np.testing.assert_array_equal(float32_centring_vector(np.asfortranarray(X)), whole)


def test_read_ahead_hints_are_harmless(tmp_path):
    """Each ChunkRef names the next chunks; hinting them (posix_fadvise WILLNEED) neither reads nor fails."""
    from wideml.storage.reader import READ_COUNTER

    X, y = _data()
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=128)
    store = open_store(tmp_path / "s.zarr")
    stripes, _ = feature_stripes(store.X, direct=True)
    assert [s.ahead for s in stripes[-3:]] == [((384, 512), (512, 600)), ((512, 600),), ()]
    reader = stripes[0].reader
    before = READ_COUNTER[str(store.path)]
    reader.hint(slice(0, 600))
    reader.hint(slice(10_000, 20_000))  # past the end: nothing to hint
    assert READ_COUNTER[str(store.path)] == before
    block, _ = materialise(stripes[1])
    np.testing.assert_array_equal(block, X[:, 128:256])


def test_the_direct_registry_does_not_keep_stores_alive(tmp_path):
    import gc

    from wideml.storage.reader import DIRECT_READERS

    X, y = _data()
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=128)
    store = open_store(tmp_path / "s.zarr")
    name = store.X.name
    assert name in DIRECT_READERS
    del store
    gc.collect()
    assert name not in DIRECT_READERS
