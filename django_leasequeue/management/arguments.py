"""Argument types shared by the management commands: each refuses a bad value with its reason."""

import argparse


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def non_negative_float(text: str) -> float:
    """A number of at least 0 (seconds, days)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of at least 0")
    return value


def positive_float(text: str) -> float:
    """A number above 0 (an interval in seconds)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not a number above 0")
    return value
