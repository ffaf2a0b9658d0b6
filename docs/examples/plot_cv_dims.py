"""
Cross-validating the dimension from one pass
============================================

:func:`wideml.cross_validate_dims` scores every fold, every dimension d and every method from one
pass over X: each fold is a sub-block of the n × n Gram and each d a prefix of the largest
embedding. Here LOL, PCA and LFL on a small Trunk simulation, with 5-fold cross-validation.
"""

import matplotlib.pyplot as plt
import numpy as np

import wideml
from wideml.sims import simulate

X, y = simulate("trunk", n_samples=150, n_features=3000, seed=1, b=3)
X = np.asarray(X)

report = wideml.cross_validate_dims(
    {"lol": wideml.LOL(15), "pca": wideml.PCA(15), "lfl": wideml.LFL(15)}, X, y, cv=5, classifier="lda")
print(report.table())
print("passes over X:", report.n_passes)

# %%
# Error against d, with a band of one standard deviation over the folds; a star marks each best d.
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, result in report.results.items():
    dims, errors, stds = np.array(result.dims), np.array(result.errors), np.array(result.stds)
    (line,) = ax.plot(dims, errors, label=name)
    ax.fill_between(dims, errors - stds, errors + stds, alpha=0.2, color=line.get_color())
    ax.plot(result.best_dim, result.best_error, "*", ms=12, color=line.get_color())
ax.axhline(report.chance_error, ls="--", c="grey", label="chance")
ax.set_xlabel("embedding dimension d")
ax.set_ylabel("5-fold CV error (LDA)")
ax.legend()
fig.tight_layout()

# %%
# The same model, refitted on all samples at LOL's chosen d:
best = report.best_estimator("lol", wideml.LOL(15)).fit(X, y)
print(best)
