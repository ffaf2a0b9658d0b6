"""Encoder-embedding algebra on small matrices (no access to X).

The multi-kernel encoder classifier (the encoder-embedding paper's Algorithm B)
embeds sample i as Z(i, k) = kernel(x_i, u_k), with u_k the mean of the
training samples of class k. Every kernel is a function of a few additive
statistics (sums over features) that a streaming pass accumulates chunk by
chunk; these modules finish them:

- :mod:`.kernels`: the kernel names, the stacked class-mean operators, the
  ``linear`` / ``euclidean`` / ``spearman`` embeddings from additive
  statistics (:class:`AnchorStats`) and the full-kernel form (Z = A W);
- :mod:`.leave_one_out`: the leave-one-out corrections of the training
  embedding used by the corrected selection score;
- :mod:`.selection`: the cross-entropy score and the kernel selection rule;
- :mod:`.lda`: scikit-learn's SVD-solver LDA on the small embedding, with a machine-precision
  rank rule (a pseudo-inverse LDA, as the paper's code), and its posteriors;
- :mod:`.ranks`: exact row ranks and the rank estimator used when a row does not fit in memory.
"""

from wideml.algebra.encoder.kernels import (
    ALIASES,
    KERNELS,
    AnchorStats,
    embed,
    euclidean_distance,
    full_kernel,
    pearson_from_sums,
    resolve_kernels,
    stacked_class_weights,
)
from wideml.algebra.encoder.lda import LDA_TOL, LdaFit, lda_proba, lda_svd, rank_tol, sklearn_tol
from wideml.algebra.encoder.leave_one_out import loo_counts, loo_distance, loo_embed, loo_full, loo_linear
from wideml.algebra.encoder.ranks import (
    RankTable,
    approx_ranks,
    rank_sums,
    rank_table,
    rank_tables,
    row_ranks,
    sketch_features,
)
from wideml.algebra.encoder.selection import PROBA_FLOOR, cross_entropy, select_kernel

__all__ = [
    "ALIASES", "KERNELS", "LDA_TOL", "PROBA_FLOOR", "AnchorStats", "LdaFit", "RankTable", "approx_ranks", "cross_entropy", "embed",
    "euclidean_distance", "full_kernel", "lda_proba", "lda_svd", "loo_counts", "loo_distance", "loo_embed", "loo_full", "loo_linear",
    "pearson_from_sums", "rank_sums", "rank_tol", "rank_table", "rank_tables", "resolve_kernels", "row_ranks", "select_kernel", "sketch_features", "sklearn_tol",
    "stacked_class_weights",
]
