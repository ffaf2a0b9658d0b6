"""
LOL against PCA on a Trunk simulation
=====================================

The LOL paper's Trunk setting: two Gaussian classes whose means differ by a little in every
feature, with the variance largest where the difference is smallest. PCA follows the variance and
misses the difference; LOL puts the class mean difference first. Here n = 200 samples and
p = 2 000 features, far more features than samples.
"""

import matplotlib.pyplot as plt
import numpy as np

import wideml
from wideml.sims import simulate

# %%
# Simulate 200 training and 200 test samples (in memory: ``simulate`` returns a lazy dask array).
X, y = simulate("trunk", n_samples=400, n_features=2000, seed=0, b=3)
X = np.asarray(X)
X_train, y_train, X_test, y_test = X[:200], y[:200], X[200:], y[200:]

# %%
# Fit LOL and PCA with two components each and draw the training samples in each embedding.
fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
for ax, est in zip(axes, (wideml.LOL(n_components=2), wideml.PCA(n_components=2))):
    Z = est.fit(X_train, y_train).transform(X_train)
    for label, colour in ((0, "tab:blue"), (1, "tab:orange")):
        ax.scatter(Z[y_train == label, 0], Z[y_train == label, 1], s=8, c=colour, label=f"class {label}")
    ax.set_title(type(est).__name__)
    ax.set_xlabel("component 1")
    ax.set_ylabel("component 2")
axes[0].legend()
fig.tight_layout()

# %%
# Classify held-out samples with LDA on each embedding, for a few dimensions d.
for d in (1, 2, 5, 10):
    errors = {}
    for name, est in (("LOL", wideml.LOL(d)), ("PCA", wideml.PCA(d))):
        clf = wideml.EmbeddingClassifier(est, classifier="lda").fit(X_train, y_train)
        errors[name] = float(np.mean(clf.predict(X_test) != y_test))
    print(f"d = {d:2d}: test error LOL {errors['LOL']:.3f}, PCA {errors['PCA']:.3f}")
