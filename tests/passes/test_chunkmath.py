"""Per-chunk helpers against numpy: medians, centring, working dtype."""

import numpy as np
import pytest

from wideml.passes.chunkmath import centre, class_medians, work_dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
@pytest.mark.parametrize("n", [1, 2, 17, 40])  # odd and even class sizes, single-row classes
def test_class_medians_equal_numpy(dtype, n):
    rng = np.random.default_rng(n)
    x = (rng.normal(size=(n, 300)) * 100).astype(dtype)
    codes = rng.integers(0, 3, n)
    got = class_medians(x, codes, 4)  # class 3 never occurs
    for k in range(4):
        if (codes == k).any():
            np.testing.assert_allclose(got[k], np.median(x[codes == k].astype(np.float64), axis=0), rtol=1e-12)
        else:
            assert np.isnan(got[k]).all()


def test_class_medians_of_a_row_subset():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 64)).astype(np.float32)
    codes = rng.integers(0, 2, 50)
    rows = np.arange(0, 50, 3)
    got = class_medians(x, codes[rows], 2, rows=rows)
    ref = np.stack([np.median(x[rows][codes[rows] == k], axis=0) for k in range(2)])
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_centre_is_exact_in_float32_and_reports_nonfinite():
    rng = np.random.default_rng(1)
    x = (1e3 + rng.normal(size=(30, 20)) * 1e-2).astype(np.float32)
    xc, m, c, bad = centre(x, 0, work_dtype(x.dtype))
    assert bad is None and xc.dtype == np.float32
    np.testing.assert_allclose(m, x.astype(np.float64).mean(0), rtol=1e-12)
    np.testing.assert_array_equal(xc.astype(np.float64), x.astype(np.float64) - c)  # float32 subtraction of nearby values is exact
    x[4, 7] = np.inf
    assert centre(x, 100, np.float32)[3][:1] == (107,)


def test_work_dtype():
    assert work_dtype(np.float32) == np.float32 and work_dtype(np.uint8) == np.float32
    assert work_dtype(np.float64) == np.float64 and work_dtype(np.int32) == np.float64
    assert work_dtype(np.float32, "float64") == np.float64
    with pytest.raises(ValueError, match="precision"):
        work_dtype(np.float32, "half")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_means_from_class_sums_match_the_centred_mean(dtype):
    """centre(mean=False) skips the mean sweep; the class sums give the same feature means."""
    from wideml.passes.chunkmath import class_sums, means_from_class_sums

    rng = np.random.default_rng(3)
    X = (rng.standard_normal((301, 57)) * 0.01 + 1e3 * rng.standard_normal(57)).astype(dtype)
    codes = rng.integers(0, 4, 301)
    x_full, m_full, c_full, _ = centre(X.copy(), 0, np.dtype(dtype))
    x, m, c, bad = centre(X.copy(), 0, np.dtype(dtype), mean=False)
    assert bad is None
    np.testing.assert_array_equal(x, x_full)
    np.testing.assert_array_equal(c, c_full)
    if dtype == np.float32:
        assert m is None
    m_sums = means_from_class_sums(c, class_sums(x, codes, 4), X.shape[0])
    exact = X.astype(np.float64).mean(axis=0)
    # both are the float32-rounded centring vector plus a float32 mean of the centred (spread ~1e-2) data
    np.testing.assert_allclose(m_sums, exact, rtol=0, atol=1e-6 if dtype == np.float32 else 1e-10)
    np.testing.assert_allclose(m_sums, m_full, rtol=0, atol=1e-6 if dtype == np.float32 else 1e-10)
