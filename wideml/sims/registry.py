"""Name → setting registry of every simulator."""

from __future__ import annotations

from types import MappingProxyType

from wideml.exceptions import WidemlError
from wideml.sims.encoder_settings import encoder_settings
from wideml.sims.lol_settings import lol_settings
from wideml.sims.rotations import RotatedTrunk
from wideml.sims.setting import Setting
from wideml.sims.spectral_decay import DenseDecay, DiagonalDecay
from wideml.sims.toeplitz import Toeplitz


def _build() -> dict[str, Setting]:
    lol = {s.name: s for s in lol_settings()}
    ordered = [lol["cigars"], lol["trunk"], RotatedTrunk(), lol["trunk3"], lol["robust"], lol["cross"], lol["hump"],
               Toeplitz(), DiagonalDecay(), DenseDecay(), lol["xor"], lol["fat-tails"], *encoder_settings()]
    return {s.name: s for s in ordered}


#: Every setting by name; each has ``description``, ``defaults``, ``default_n_features`` and ``reference``.
SETTINGS: MappingProxyType[str, Setting] = MappingProxyType(_build())


def get_setting(name: str) -> Setting:
    """Look up a setting by name.

    Raises
    ------
    WidemlError
        If ``name`` is not a registered setting (the message lists the valid names).
    """
    try:
        return SETTINGS[name]
    except (KeyError, TypeError):
        raise WidemlError(f"unknown simulation setting {name!r}; choose one of {', '.join(SETTINGS)}.") from None
