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
