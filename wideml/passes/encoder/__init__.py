"""Streaming graphs of the encoder classifier ("X-to-U" kernels to the class means), by what each streams.

- :mod:`~wideml.passes.encoder.class_stats` — **one pass**: class means,
  X U^T and squared norms for one or several training sets at once (the full
  data and every CV fold), plus an optional fixed sample of features per row.
- :mod:`~wideml.passes.encoder.ranks` — Spearman sums from estimated ranks
  (one pass) or exact ranks (one pass per block of rows), and the exact rank
  Gram of the full-kernel form.
- :mod:`~wideml.passes.encoder.anchors` — new data against stored class means
  and their ranks (one pass).
- :mod:`~wideml.passes.encoder.products` — the chunk products they share.

The passes run on the shared engine (:mod:`wideml.passes.blocks`: stripe
walker; :mod:`wideml.passes.reduce`: the one accumulator, tree or lane
reductions, resumable lanes; :mod:`wideml.passes.outputs`:
p-sized outputs). The feature sample and the uncentred cross-Gram are generic
passes, :mod:`wideml.passes.sampling` and :mod:`wideml.passes.crossgram`.
Every ``*_pass`` / ``*_block`` function returns lazy dask objects; the
``*_local`` functions apply the same chunk tasks to an array already in memory.
"""

from wideml.passes.encoder.anchors import anchor_local, anchor_pass
from wideml.passes.encoder.class_stats import CLASS_MEANS, ClassStats, ClassStatsPass, class_stats_local, class_stats_pass
from wideml.passes.encoder.products import anchor_sample
from wideml.passes.encoder.ranks import (
    CLASS_MEAN_RANKS, LOO_BATCH, LooSpec, RankSketchPass, rank_gram_block, spearman_exact_block, spearman_exact_local, spearman_sketch_local,
    spearman_sketch_pass,
)

__all__ = [
    "CLASS_MEANS", "CLASS_MEAN_RANKS", "LOO_BATCH", "ClassStats", "ClassStatsPass", "LooSpec", "RankSketchPass", "anchor_local", "anchor_pass", "anchor_sample",
    "class_stats_local", "class_stats_pass", "rank_gram_block",
    "spearman_exact_block", "spearman_exact_local", "spearman_sketch_local", "spearman_sketch_pass",
]
