"""Float32 class medians from sorted runs against numpy.median (bit for bit) and the partition path."""

import numpy as np
import pytest

from wideml.passes import chunkmath, median_select
from wideml.passes.chunkmath import class_medians
from wideml.passes.median_select import class_medians_float32, class_medians_partition


def numpy_medians(x, codes, n_classes, rows=None):
    """The oracle: numpy.median of each class's rows in float64, NaN for an empty class."""
    rows = np.arange(len(x)) if rows is None else rows
    out = np.full((n_classes, x.shape[1]), np.nan)
    for k in range(n_classes):
        members = rows[codes == k]
        if len(members):
            out[k] = np.median(x[members].astype(np.float64), axis=0)
    return out


@pytest.fixture
def missed(monkeypatch):
    """Rows sent to the partition fallback by runs_middle (counted through the module's global)."""
    seen = []
    real = median_select.partition_middle

    def counting(seg):
        seen.append(len(seg))
        return real(seg)

    monkeypatch.setattr(median_select, "partition_middle", counting)
    return seen


@pytest.mark.parametrize("dist", ["normal", "cauchy"])
@pytest.mark.parametrize("n, n_classes", [(1201, 2), (2050, 2), (1500, 5), (700, 3)])
def test_equal_numpy_median_on_random_data(dist, n, n_classes):
    rng = np.random.default_rng(n + n_classes)
    x = rng.normal(size=(n, 96)) if dist == "normal" else rng.standard_cauchy(size=(n, 96)) * 1e3
    x = x.astype(np.float32)
    codes = rng.integers(0, n_classes - (n_classes == 5), n)  # K = 5: class 4 is empty
    got = class_medians_float32(x, codes, n_classes)
    assert np.array_equal(got, numpy_medians(x, codes, n_classes), equal_nan=True)
    assert np.array_equal(got, class_medians_partition(x, codes, n_classes), equal_nan=True)


def test_typical_data_stays_on_the_fast_path(missed):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2000, 1024)).astype(np.float32)  # two classes of ~1000 rows: two runs each
    codes = rng.integers(0, 2, 2000)
    got = class_medians_float32(x, codes, 2)
    assert np.array_equal(got, numpy_medians(x, codes, 2))
    assert sum(missed) <= 0.01 * 2 * 1024  # 4-sigma windows: almost no feature needs the fallback


def test_runs_split_by_value_take_the_exact_fallback(missed):
    rng = np.random.default_rng(4)
    m = 801  # one class, two interleaved runs: even positions and odd positions
    x = rng.normal(size=(m, 40)).astype(np.float32)
    x[0::2] -= 100  # run 0 holds every small value, run 1 every large one: no window holds the middle
    x[:, :5] = rng.normal(size=(m, 5))  # a few ordinary columns stay on the fast path
    codes = np.zeros(m, dtype=int)
    got = class_medians_float32(x, codes, 1)
    assert sum(missed) == 35
    assert np.array_equal(got, numpy_medians(x, codes, 1))


def test_heavily_tied_columns_are_confirmed_by_counts_not_partitioned(missed):
    rng = np.random.default_rng(9)
    x = rng.integers(0, 3, size=(1500, 64)).astype(np.float32)  # genotype-like 0/1/2: every window edge is a tie
    x[:, 0] = 1.5  # a constant column
    codes = rng.integers(0, 2, 1500)
    got = class_medians_float32(x, codes, 2)
    assert np.array_equal(got, numpy_medians(x, codes, 2))
    assert sum(missed) == 0


def test_tied_middle_pair_of_two_values_is_confirmed_by_counts(missed):
    rng = np.random.default_rng(10)
    x = np.stack([rng.permutation(np.repeat(np.float32([0, 1]), 600)) for _ in range(16)], axis=1)  # middle pair (0, 1)
    got = class_medians_float32(x, np.zeros(1200, dtype=int), 1)
    assert np.array_equal(got, np.full((1, 16), 0.5))
    assert sum(missed) == 0


def test_has_rank_counts_ties_and_rejects_nan():
    rows = np.array([[1, 2, 2, 2, 3], [0, 0, 0, 0, 0], [np.nan, 1, 1, 1, 1]], dtype=np.float32)
    assert median_select.has_rank(rows, np.array([2, 0, 1], dtype=np.float32), 3).tolist() == [True, True, True]
    assert median_select.has_rank(rows, np.array([2, 0, np.nan], dtype=np.float32), 4).tolist() == [False, True, False]


def _adversarial(rng, kind, n, p):
    if kind == "ties":
        return rng.integers(-2, 3, size=(n, p)).astype(np.float32)
    if kind == "constant":
        return np.broadcast_to(rng.normal(size=p).astype(np.float32), (n, p)).copy()
    if kind == "signed_zeros":
        return np.where(rng.random((n, p)) < 0.5, np.float32(-0.0), np.float32(0.0)) * (rng.random((n, p)) < 0.9) + (rng.random((n, p)) < 0.02)
    if kind == "subnormal":
        return (rng.integers(-50, 50, size=(n, p)) * np.float32(1e-45)).astype(np.float32)
    if kind == "huge":
        return (np.sign(rng.normal(size=(n, p))) * np.float32(3.4e38) * rng.random((n, p)).astype(np.float32)).astype(np.float32)
    if kind == "sorted":
        return np.sort(rng.normal(size=(n, p)).astype(np.float32), axis=0)
    if kind == "reversed":
        return np.sort(rng.normal(size=(n, p)).astype(np.float32), axis=0)[::-1].copy()
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["ties", "constant", "signed_zeros", "subnormal", "huge", "sorted", "reversed"])
@pytest.mark.parametrize("n", [1100, 1101])  # even and odd class sizes (class 0: three runs)
def test_adversarial_columns_are_exact(kind, n):
    rng = np.random.default_rng(len(kind) + n)
    x = _adversarial(rng, kind, n, 48).astype(np.float32)
    codes = np.zeros(n, dtype=int)
    codes[:3] = 1  # a class of 3 rows
    codes[3] = 2  # a class of one row
    codes[4:6] = 3  # a class of two rows
    got = class_medians_float32(x, codes, 5)  # class 4 is empty
    assert np.array_equal(got, numpy_medians(x, codes, 5), equal_nan=True)


def test_row_subsets_and_small_classes():
    rng = np.random.default_rng(5)
    x = rng.standard_t(2, size=(3000, 72)).astype(np.float32)
    codes = rng.integers(0, 4, 3000)
    for rows in (np.arange(0, 3000, 2), rng.permutation(3000)[:1301], np.arange(7)):
        got = class_medians(x, codes[rows], 4, rows=rows)
        assert np.array_equal(got, numpy_medians(x, codes[rows], 4, rows=rows), equal_nan=True)


def test_many_runs_and_an_odd_feature_count():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2601, 259)).astype(np.float32)  # 6 runs in one class; 259 = 256 + 3 features (two blocks)
    codes = (rng.random(2601) < 0.02).astype(int)
    got = class_medians_float32(x, codes, 2)
    assert np.array_equal(got, numpy_medians(x, codes, 2))


def test_non_finite_data_does_not_crash_and_leaves_other_columns_exact():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1200, 30)).astype(np.float32)
    x[::3, 0] = np.nan
    x[5, 1] = np.inf
    x[:700, 2] = -np.inf
    x[:, 3] = np.nan
    codes = rng.integers(0, 2, 1200)
    got = class_medians_float32(x, codes, 2)
    assert got.shape == (2, 30)
    assert np.array_equal(got[:, 1:], numpy_medians(x, codes, 2)[:, 1:], equal_nan=True)


def test_chunkmath_sends_float32_here_and_other_dtypes_to_the_partition_path(monkeypatch):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(40, 16))
    codes = rng.integers(0, 2, 40)
    monkeypatch.setattr(chunkmath, "class_medians_float32", lambda *a, **k: pytest.fail("float64 took the float32 path"))
    assert np.array_equal(class_medians(x, codes, 2), numpy_medians(x, codes, 2))
    monkeypatch.setattr(chunkmath, "class_medians_float32", lambda *a, **k: "float32 path")
    assert class_medians(x.astype(np.float32), codes, 2) == "float32 path"
