"""Kernels from the Gram, the sigma grid, and kernel selection algebra (alignment QP, folds)."""

import numpy as np
import pytest
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

from wideml.algebra.kernel_selection import alignment, alignment_weights, ideal_kernel_inner, stratified_folds
from wideml.algebra.kernels import (PAPER_SIGMAS, CombinedKernel, Kernel, cross_sq_distances, gram_sq_distances,
                                    kernel_from_dict, rbf_family)
from wideml.algebra.kpca import fit_kpca
from wideml.exceptions import WidemlError


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 7)) + 50.0  # a large offset: distances must still be exact
    Z = rng.normal(size=(5, 7)) + 50.0
    return X, Z


def test_paper_grid():
    assert len(PAPER_SIGMAS) == 21 and PAPER_SIGMAS[0] == 0.01 and PAPER_SIGMAS[-1] == 1000


def test_kernels_from_products_match_sklearn(data):
    X, Z = data
    Xc = X - X.mean(axis=0)
    D2 = gram_sq_distances(Xc @ Xc.T)
    p = X.shape[1]
    K = Kernel("rbf", sigma=0.7).from_products(X @ X.T, D2, p)
    np.testing.assert_allclose(K, rbf_kernel(X, gamma=1 / (2 * p * 0.7**2)), rtol=1e-10)
    Kp = Kernel("poly", degree=3, coef0=2.0).from_products(X @ X.T, D2, p)
    np.testing.assert_allclose(Kp, polynomial_kernel(X, degree=3, gamma=1 / p, coef0=2.0), rtol=1e-10)
    np.testing.assert_allclose(Kernel("linear").from_products(X @ X.T, D2, p), X @ X.T)
    m = X.mean(axis=0)
    Dx = cross_sq_distances((Z - m) @ (X - m).T, ((Z - m) ** 2).sum(1), ((X - m) ** 2).sum(1))
    np.testing.assert_allclose(Kernel("rbf", sigma=2.0).from_products(None, Dx, p), rbf_kernel(Z, X, gamma=1 / (8 * p)), rtol=1e-10)


@pytest.mark.parametrize("sigma", [0, -1.0, float("nan"), float("inf"), "wide"])
def test_bad_sigma(sigma):
    with pytest.raises(WidemlError, match="sigma"):
        Kernel("rbf", sigma=sigma)
    with pytest.raises(WidemlError, match="sigma"):
        rbf_family([1.0, sigma])


def test_bad_kernel_and_degree():
    with pytest.raises(WidemlError, match="kernel 'gauss'"):
        Kernel("gauss")
    with pytest.raises(WidemlError, match="degree"):
        Kernel("poly", degree=0)
    with pytest.raises(WidemlError, match="empty"):
        rbf_family([])


def test_combined_kernel_roundtrip_and_sum_is_concatenation(data):
    X, _ = data
    D2 = gram_sq_distances((X - X.mean(0)) @ (X - X.mean(0)).T)
    bases = rbf_family([0.5, 1.0, 2.5])
    ck = CombinedKernel(tuple(bases), (1.0, 1.0, 1.0))
    K = ck.from_products(None, D2, 7)
    np.testing.assert_allclose(K, sum(b.from_products(None, D2, 7) for b in bases))
    assert kernel_from_dict(ck.to_dict()) == ck
    # Sum kernel = concatenated feature blocks: its feature-space distances are the sum of the blocks' distances.
    F = fit_kpca(K).train_coordinates()
    blocks = np.hstack([fit_kpca(b.from_products(None, D2, 7)).train_coordinates() for b in bases])
    np.testing.assert_allclose(gram_sq_distances(F @ F.T), gram_sq_distances(blocks @ blocks.T), atol=1e-9)
    with pytest.raises(WidemlError, match="non-negative"):
        CombinedKernel(tuple(bases), (1.0, -1.0, 1.0))


def _ideal(codes):
    p = codes.max() + 1
    return np.where(codes[:, None] == codes[None, :], 1.0, -1.0 / (p - 1))


def test_ideal_kernel_inner_and_psd():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 3, 25)
    A = rng.normal(size=(25, 4))
    K = A @ A.T
    Y = _ideal(codes)
    assert ideal_kernel_inner(K, codes, 3) == pytest.approx(np.sum(K * Y))
    assert np.linalg.eigvalsh(Y).min() > -1e-10  # the simplex label code is PSD
    assert alignment(Y, codes, 3) == pytest.approx(1.0)


def test_alignment_qp(data):
    X, _ = data
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 2, X.shape[0])
    D2 = gram_sq_distances((X - X.mean(0)) @ (X - X.mean(0)).T)
    kernels = [b.from_products(None, D2, 7) for b in rbf_family(PAPER_SIGMAS)]
    gamma, norms = alignment_weights(kernels, codes, 2)
    normed = [K / s for K, s in zip(kernels, norms)]
    b = np.array([ideal_kernel_inner(K, codes, 2) for K in normed])
    assert np.all(gamma >= 0) and b @ gamma == pytest.approx(1.0)
    best_single = max(alignment(K, codes, 2) for K in kernels)
    combined = sum(g * K for g, K in zip(gamma, normed))
    assert alignment(combined, codes, 2) >= best_single - 1e-9
    # When the ideal kernel itself is a candidate, the QP puts all weight on it.
    gamma2, _ = alignment_weights(kernels[:3] + [_ideal(codes) + 0.0], codes, 2)
    assert np.argmax(gamma2) == 3 and gamma2[:3].sum() < 1e-6 * gamma2[3]


def test_stratified_folds():
    codes = np.repeat([0, 1, 2], [10, 7, 5])
    folds = stratified_folds(codes, 5, seed=0)
    tests = np.concatenate([te for _, te in folds])
    assert sorted(tests) == list(range(22))
    for tr, te in folds:
        assert set(tr).isdisjoint(te) and len(np.unique(codes[tr])) == 3
    with pytest.raises(WidemlError, match="folds"):
        stratified_folds(codes, 1)
