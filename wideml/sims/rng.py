"""Counter-based random streams keyed on (seed, setting, stream, tile index).

Every random number a simulator draws comes from a generator built here, so the
values of a simulated data set depend only on the seed and on *global* indices,
never on how the features are chunked:

- per-feature randomness (noise, rotation blocks, mixing matrices) is drawn in
  fixed **generation tiles** of :data:`TILE` consecutive features; tile ``t``
  covers features ``[t*TILE, min(p, (t+1)*TILE))`` and has its own
  ``numpy.random.Generator(Philox(SeedSequence([seed, code, stream, t, ...])))``.
  A chunk generates the tiles it overlaps and slices them.
- per-sample randomness shared across features (labels, which samples are
  outliers, heavy-tailed samples, shared factors) comes from sample-level
  generators keyed on the seed and the setting only.

A tile's numbers are drawn row-major as an ``(n_samples, tile_width)`` array, so
the first rows do not change when more samples are requested.
"""

from __future__ import annotations

import zlib

import numpy as np

from wideml.exceptions import WidemlError

#: Features per generation tile. Fixed: changing it changes every simulated value.
TILE = 1024

# Stream identifiers (the third word of every SeedSequence entropy list).
LABELS = 1  #: class labels
SAMPLES = 2  #: other per-sample draws (outlier flags, groups, shared factors)
NOISE = 3  #: the main per-entry noise of a tile
EXTRA_NOISE = 4  #: a second per-entry noise (e.g. the encoder's additive uniform noise)
ROTATION = 5  #: random rotations
TRANSFORM = 6  #: random mixing matrices (the encoder's Q)

_MAX_SEED = 2**63


def setting_code(name: str) -> int:
    """A stable 32-bit code for a setting (or family) name, used as key material."""
    return zlib.crc32(name.encode("utf-8"))


def check_seed(seed) -> int:
    """Validate a seed: a non-negative integer below 2**63."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise WidemlError(f"seed must be a non-negative integer, got {seed!r}; pass e.g. seed=0.")
    seed = int(seed)
    if not 0 <= seed < _MAX_SEED:
        raise WidemlError(f"seed {seed} is out of range; use an integer between 0 and 2**63 - 1.")
    return seed


def generator(seed: int, code: int, stream: int, *index: int) -> np.random.Generator:
    """A Philox generator for ``(seed, code, stream, *index)``.

    Parameters
    ----------
    seed : int
        The user's seed.
    code : int
        :func:`setting_code` of the setting family.
    stream : int
        One of the stream constants of this module.
    *index : int
        Global indices (tile index, or (row tile, column tile) of a mixing block).

    Returns
    -------
    numpy.random.Generator
    """
    entropy = [int(seed), int(code), int(stream), *(int(i) for i in index)]
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(entropy)))


def n_tiles(n_features: int) -> int:
    """Number of generation tiles covering ``n_features`` features."""
    return -(-int(n_features) // TILE)


def tile_bounds(t: int, n_features: int) -> tuple[int, int]:
    """Global feature range ``[start, stop)`` of tile ``t``."""
    start = t * TILE
    return start, min(int(n_features), start + TILE)


def tiles_overlapping(start: int, stop: int) -> range:
    """Indices of the tiles that overlap features ``[start, stop)``."""
    return range(start // TILE, -(-stop // TILE))


def labels_from_uniform(u: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Map uniforms ``u`` of shape (n,) to class labels 0..K-1 with probabilities ``priors``."""
    edges = np.cumsum(priors)[:-1]
    return np.searchsorted(edges, u, side="right").astype(np.int64)
