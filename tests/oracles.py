"""In-memory numpy references for the streaming computations (explicit p-space algebra)."""

from __future__ import annotations

import numpy as np
import scipy.linalg


def reference_lol(X, y, d, *, robust=False, second_moment="linear"):
    """LOL / QOQ straight from the paper's definition on an in-memory X (n x p); returns A (p x d)."""
    X = np.asarray(X, dtype=np.float64)
    classes, codes = np.unique(y, return_inverse=True)
    K = len(classes)
    counts = np.bincount(codes, minlength=K)
    order = np.argsort(-counts, kind="stable")
    means = np.stack([X[codes == k].mean(0) for k in range(K)])
    cents = np.stack([np.median(X[codes == k], axis=0) for k in range(K)]) if robust else means
    deltas = [cents[order[0]] - cents[order[i]] for i in range(1, K)]
    deltas = [v / np.linalg.norm(v) for v in deltas][: min(d, K - 1)]
    nv = d - len(deltas)
    cols = list(deltas)
    if nv > 0:
        if second_moment == "linear":
            Xc = X - means[codes]
            _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
            cols += list(Vt[:nv])
        else:
            pool = []
            for k in range(K):
                Xk = X[codes == k] - means[k]
                _, s, Vt = np.linalg.svd(Xk, full_matrices=False)
                pool += [(s[j], v) for j, v in enumerate(Vt[: min(nv, len(s))])]
            pool.sort(key=lambda t: -t[0])
            cols += [v for _, v in pool[:nv]]
    return np.stack(cols, axis=1)


def reference_pca(X, d):
    X = np.asarray(X, dtype=np.float64)
    _, _, Vt = np.linalg.svd(X - X.mean(0), full_matrices=False)
    return Vt[:d].T


def reference_rrlda(X, y, d):
    X = np.asarray(X, dtype=np.float64)
    classes, codes = np.unique(y, return_inverse=True)
    means = np.stack([X[codes == k].mean(0) for k in range(len(classes))])
    _, _, Vt = np.linalg.svd(X - means[codes], full_matrices=False)
    return Vt[:d].T


def max_angle(A, B) -> float:
    """Largest principal angle (radians) between the column spans of A and B (sign-aware)."""
    return float(np.max(scipy.linalg.subspace_angles(np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64))))


def make_data(n=80, p=300, K=3, *, offset=0.0, signal=1.0, dtype=np.float64, seed=0):
    """Gaussian classes with mean shifts on a few features, optional large feature offsets."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(K), -(-n // K))[:n]
    rng.shuffle(y)
    scales = np.linspace(2.0, 0.5, p)
    X = rng.normal(size=(n, p)) * scales
    shift = np.zeros((K, p))
    shift[:, : 3 * K] = rng.normal(size=(K, 3 * K)) * 3
    X = X + shift[y]
    X = X * signal + offset * (1 + rng.random(p))
    return X.astype(dtype), y


def store_and_model(folder):
    """``folder/s.zarr`` (40 x 80, two classes, feature chunks of 40) and ``folder/m.zarr`` (LDA on LOL(2)); returns ``folder``."""
    from wideml import LOL, EmbeddingClassifier, open_store, save_model, write_store

    X, y = make_data(n=40, p=80, K=2)
    write_store(folder / "s.zarr", X, y, feature_chunk=40)
    save_model(EmbeddingClassifier(LOL(n_components=2)).fit(open_store(folder / "s.zarr")), folder / "m.zarr")
    return folder
