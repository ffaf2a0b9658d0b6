"""NCA/LMNN/DNE algebra: gradients, the kernel-trick oracles (KNCA, KDNE) and the linear-kernel equivalence."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from wideml.algebra.kernels import gram_sq_distances
from wideml.algebra.kpca import fit_kpca
from wideml.algebra.metric import dne_graph, fit_dne, fit_lmnn, lmnn_loss_grad, nca_loss_grad, pairwise_sq_dist, target_neighbors
from wideml.algebra.metric.knca import kdne, knca_gradient_descent, knca_loss_grad
from wideml.algebra.metric.nca import nca_coefficients, nca_probabilities
from wideml.exceptions import WidemlError


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    idx = np.random.default_rng(0).choice(150, 45, replace=False)
    return StandardScaler().fit_transform(X[idx]), y[idx]


def _fd(f, A, eps=1e-6):
    out = np.zeros_like(A)
    for i in np.ndindex(A.shape):
        Ap, Am = A.copy(), A.copy()
        Ap[i] += eps
        Am[i] -= eps
        out[i] = (f(Ap) - f(Am)) / (2 * eps)
    return out


def test_nca_and_lmnn_gradients(iris):
    X, y = iris
    A = np.random.default_rng(1).normal(size=(2, 4))
    _, g = nca_loss_grad(A, X, y)
    np.testing.assert_allclose(g, _fd(lambda a: nca_loss_grad(a, X, y)[0], A), rtol=1e-5, atol=1e-7)
    T = target_neighbors(pairwise_sq_dist(X), y, 3)
    L = np.random.default_rng(2).normal(size=(3, 4))
    _, g = lmnn_loss_grad(L, X, T, y, c=0.7)
    np.testing.assert_allclose(g, _fd(lambda a: lmnn_loss_grad(a, X, T, y, c=0.7)[0], L), rtol=1e-5, atol=1e-6)


def test_knca_kernel_trick_equals_kpca_trick(iris):
    """Gradient descent on U (V = -2 U K L_C) and on A' over KPCA coordinates follow the same path."""
    X, y = iris
    K = np.exp(-gram_sq_distances(X @ X.T) / 8.0)
    fit = fit_kpca(K)
    F = fit.train_coordinates()
    Ap = np.random.default_rng(3).normal(size=(2, F.shape[1])) * 0.3
    H = np.eye(len(y)) - 1 / len(y)
    U = Ap @ (fit.vectors / np.sqrt(fit.eigenvalues)).T @ H  # A' Psi^T = U Phi^T
    f_u, _ = knca_loss_grad(U, K, y)
    f_a, _ = nca_loss_grad(Ap, F, y)
    assert f_u == pytest.approx(f_a, rel=1e-10)
    step = 0.05
    U_end = knca_gradient_descent(U, K, y, step, 15)
    A_end = Ap.copy()
    for _ in range(15):
        A_end = A_end - step * nca_loss_grad(A_end, F, y)[1]
    np.testing.assert_allclose(pairwise_sq_dist(K @ U_end.T), pairwise_sq_dist(F @ A_end.T), rtol=1e-8, atol=1e-10)
    assert knca_loss_grad(U_end, K, y)[0] < f_u  # it descended


def test_kdne_equals_kpca_dne(iris):
    X, y = iris
    K = np.exp(-gram_sq_distances(X @ X.T) / 8.0)
    fit = fit_kpca(K)
    F = fit.train_coordinates()
    W = dne_graph(gram_sq_distances(K), y, 3)
    A, vals = fit_dne(F, y, W=W, n_components=3)
    Kc = fit.vectors @ np.diag(fit.eigenvalues) @ fit.vectors.T
    U, gvals = kdne(Kc, W, 3, eps=1e-12)
    np.testing.assert_allclose(gvals, vals[:3], rtol=1e-6)
    np.testing.assert_allclose(pairwise_sq_dist(Kc @ U.T), pairwise_sq_dist(F @ A.T), rtol=1e-5, atol=1e-8)


def test_dne_graph_and_dimension(iris):
    X, y = iris
    W = dne_graph(pairwise_sq_dist(X), y, 2)
    assert np.array_equal(W, W.T) and set(np.unique(W)) <= {-1.0, 0.0, 1.0}
    assert np.all(W[y[:, None] == y[None, :]] >= 0) and np.all(W[y[:, None] != y[None, :]] <= 0)
    A, vals = fit_dne(X, y, n_neighbors=2)
    assert A.shape[0] == max(1, np.sum(vals < -1e-9))
    np.testing.assert_allclose(A @ A.T, np.eye(A.shape[0]), atol=1e-12)


def test_linear_kernel_reproduces_linear_learners(iris):
    """KPCA coordinates of the linear kernel are a rotation of the centred data, so learners agree in distances."""
    X, y = iris
    Xc = X - X.mean(0)
    F = fit_kpca(X @ X.T).train_coordinates()
    assert F.shape[1] == 4
    A1, _ = fit_dne(Xc, y, n_neighbors=3, n_components=2)
    A2, _ = fit_dne(F, y, n_neighbors=3, n_components=2)
    np.testing.assert_allclose(pairwise_sq_dist(Xc @ A1.T), pairwise_sq_dist(F @ A2.T), rtol=1e-8, atol=1e-9)
    L1, _ = fit_lmnn(Xc, y, max_iter=30)
    L2, _ = fit_lmnn(F, y, max_iter=30)
    np.testing.assert_allclose(pairwise_sq_dist(Xc @ L1.T), pairwise_sq_dist(F @ L2.T), rtol=1e-5, atol=1e-6)
    P1 = nca_probabilities(Xc)
    P2 = nca_probabilities(F)
    assert nca_coefficients(P1, y)[0] == pytest.approx(nca_coefficients(P2, y)[0], rel=1e-10)


def test_lmnn_learns_and_bad_input(iris):
    X, y = iris
    L, info = fit_lmnn(X, y, n_neighbors=3, max_iter=40)
    T = target_neighbors(pairwise_sq_dist(X), y, 3)
    assert info["loss"] < lmnn_loss_grad(np.eye(4), X, T, y)[0]
    T20 = target_neighbors(pairwise_sq_dist(X), y, 20)  # more than a class holds: padded with -1
    counts = np.bincount(y)
    assert np.array_equal((T20 >= 0).sum(1), np.minimum(20, counts[y] - 1))
    assert np.all(y[T20[T20 >= 0]] == np.repeat(y, 20)[T20.ravel() >= 0])
    yy = y.copy()
    yy[0] = 7  # a singleton class: no target neighbours for it, the rest still learn
    fit_lmnn(X, np.unique(yy, return_inverse=True)[1], max_iter=5)
    fit_dne(X, np.unique(yy, return_inverse=True)[1])
    with pytest.raises(WidemlError, match="n_neighbors must be at least 1"):
        target_neighbors(pairwise_sq_dist(X), y, 0)
    with pytest.raises(WidemlError, match="push weight"):
        fit_lmnn(X, y, c=-1)
    with pytest.raises(WidemlError, match="n_components"):
        fit_lmnn(X, y, n_components=9)
