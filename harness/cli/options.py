"""Argument types for the subcommands' numeric options, in one place.

Each is an argparse `type=`: it turns the text into a number or raises ArgumentTypeError, which
argparse reports as a usage error (exit 2) naming the option. Numbers may be written in any base
Python reads (`0x40`); nan, inf, negatives and zero are refused wherever they mean nothing.
"""
from __future__ import annotations

import argparse


def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive(text: str) -> int:
    """A count that must be at least 1 (--limit, --ops, --top, sizes; a size's power of two is the
    persistency model's to check)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def seed(text: str) -> int:
    """A seed: any whole number from 0 to 2^64 - 1."""
    value = _int(text)
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2^64-1, not {value}")
    return value

