"""
A feature store on disk, a fit, and its maps
============================================

The way wideml is meant to be used on data bigger than memory: write the data once into a chunked
zarr v3 feature store, fit from the store (the passes stream feature chunks; nothing p-sized is
held in memory), save the model (a zarr group, no pickle) and write its p-sized maps.
"""

import json
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import wideml

folder = Path(tempfile.mkdtemp(prefix="wideml-gallery-"))

# %%
# 120 samples, 5 000 features, of which the first 50 carry a class difference. The store holds
# X in chunks of 1 000 features (each chunk holds every sample), y, and the feature ids.
rng = np.random.default_rng(0)
y = np.repeat(["control", "patient"], 60)
X = rng.normal(size=(120, 5000)).astype(np.float32)
X[y == "patient", :50] += 0.8
wideml.write_store(folder / "data.zarr", X, y, feature_chunk=1000,
                   feature_ids=[f"f{j}" for j in range(5000)])
store = wideml.open_store(folder / "data.zarr")     # metadata only: no pass over X
print(store.n_samples, "samples x", store.n_features, "features; classes:", store.class_counts())

# %%
# Fit LOL + LDA from the store (labels come from the store), save and reload the model.
clf = wideml.EmbeddingClassifier(wideml.LOL(n_components=2), classifier="lda").fit(store)
print("passes over X:", clf.embedding_.n_fit_passes_)
wideml.save_model(clf, folder / "lol.model.zarr")
model = wideml.load_model(folder / "lol.model.zarr")
print("training error:", float(np.mean(model.predict(store) != y)))

# %%
# Write every map of the model: loadings, class means, the mean difference and the LDA weights, as
# ``.npy`` files with a top-feature table (the store had feature ids). The strongest features of
# the mean-difference map are the 50 planted ones.
files = wideml.write_maps(model, folder / "maps", top=10, plot=None)
print(sorted(f.name for f in files))
manifest = json.loads((folder / "maps" / "maps.json").read_text())
mean_difference = np.load(folder / "maps" / "mean_difference.npy")
top = np.argsort(-np.abs(mean_difference))[:50]
print("planted features among the top 50:", int(np.sum(top < 50)))

fig, ax = plt.subplots(figsize=(7, 2.5))
ax.plot(mean_difference, lw=0.5)
ax.axvspan(0, 50, color="tab:orange", alpha=0.3, label="planted features")
ax.set_xlabel("feature")
ax.set_ylabel("mean difference")
ax.legend()
fig.tight_layout()

# %%
# The folder was made by this example only; remove it.
shutil.rmtree(folder)
