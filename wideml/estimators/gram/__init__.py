"""The Gram-based projections (LOL, QOQ, PCA, rrLDA) and their cross-validation."""
