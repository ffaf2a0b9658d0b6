"""argparse value types shared by the subcommands."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A whole number >= 1 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give a whole number of at least 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is below 1; give a whole number of at least 1")
    return value


#: Most rounds of folds ``--repeats`` takes (``compare``, ``cv``): more would run for days.
MAX_REPEATS = 1000

#: Largest seed (numpy's and scikit-learn's seeds are below 2**32).
MAX_SEED = 2**32 - 1


def repeats(text: str) -> int:
    """--repeats: a whole number in [1, MAX_REPEATS] (argparse type)."""
    value = positive_int(text)
    if value > MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"{text!r} rounds of folds would run for days; give at most {MAX_REPEATS}")
    return value


def seed(text: str) -> int:
    """--seed: a whole number in [0, MAX_SEED] (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give a seed in 0..{MAX_SEED}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; give a seed in 0..{MAX_SEED}")
    return value
