"""Chunked simulators of the LOL and encoder papers' settings.

Every setting is generated chunk by chunk with memory independent of p, and the
values for a seed do not depend on the chunking: randomness is keyed on
(seed, setting, global feature tile) — see :mod:`wideml.sims.rng`.

>>> from wideml.sims import simulate, simulate_to_store, SETTINGS
>>> X, y = simulate("trunk", n_samples=100, n_features=1000, seed=0)   # doctest: +SKIP
>>> simulate_to_store("trunk", "t.zarr", 200, 100_000, seed=0)         # doctest: +SKIP
"""

from wideml.sims.generate import sample_info, simulate, simulate_to_store
from wideml.sims.registry import SETTINGS, get_setting
from wideml.sims.setting import Setting

__all__ = ["SETTINGS", "Setting", "get_setting", "sample_info", "simulate", "simulate_to_store"]
