"""
A two-sample test after a projection
====================================

:func:`wideml.two_sample_test` asks whether two groups differ, in p ≫ n dimensions, with
Hotelling's T² after a low-dimensional projection. The projection is learned on one half of the
samples and tested on the other (``method="split"``), so the test keeps its level: under no
difference its p-values are uniform. For LOL, PCA and rrLDA it costs one pass over X.
"""

import matplotlib.pyplot as plt
import numpy as np

import wideml

rng = np.random.default_rng(0)
n, p = 80, 1000
y = np.repeat([0, 1], n // 2)


def sample(shift: float) -> np.ndarray:
    X = rng.normal(size=(n, p))
    X[y == 1, :30] += shift
    return X


# %%
# One data set with a difference in 30 of the 1 000 features, one without.
for shift in (1.0, 0.0):
    res = wideml.two_sample_test(sample(shift), y, projection="lol", n_components=2)
    print(f"shift {shift}: T² = {res.statistic:.2f}, p = {res.p_value:.3g}")

# %%
# The p-values of 25 data sets under each hypothesis: uniform when there is no difference,
# near 0 when there is one.
p_values = {shift: [wideml.two_sample_test(sample(shift), y, projection="lol", n_components=2).p_value
                    for _ in range(25)] for shift in (0.0, 0.5)}
fig, ax = plt.subplots(figsize=(6, 3))
ax.hist([p_values[0.0], p_values[0.5]], bins=10, range=(0, 1), label=["no difference", "shift 0.5"])
ax.set_xlabel("p-value")
ax.set_ylabel("data sets")
ax.legend()
fig.tight_layout()
