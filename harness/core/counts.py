"""Counts for people and for files: crash-state counts grow past any column and past what a float
holds (a crash point with a thousand pending pieces has about 10^301 legal states, one after a
1 MB memset about 10^40000), so nothing here ever turns a count into a float.

Owns: `big` (a count as a console line or table cell shows it: exact up to 10^12, then 1.49e+36,
computed on the integer), `exact` (its decimal text of any length: Python refuses str() of an int
past 4300 digits), `count` (a count read back: an int or its decimal text), `for_json` (what a
results file or record holds: the int below 2^53, its decimal text above, since JSON readers keep
integers exactly only that far), `per_second` (a count's rate, computed on the integers).
"""
from __future__ import annotations

import decimal

# Counts past this many are written as decimal text in JSON (docs/bug-record.md).
EXACT_LIMIT = 2 ** 53


def count(n) -> int:
    """N (an int, or its decimal text of any length) as an int."""
    if isinstance(n, str):
        # (int(text) refuses more than 4300 digits; Decimal reads any number of them exactly)
        return int(decimal.Decimal(n.strip()))
    return int(n)


def exact(n) -> str:
    """N's exact decimal text, however many digits it has."""
    return format(decimal.Decimal(count(n)), "f")


def big(n) -> str:
    """N (an int, or its decimal text) for a table cell or a console line."""
    n = count(n)
    return f"{n:,}" if -10 ** 12 < n < 10 ** 12 else format(decimal.Decimal(n), ".2e")


def for_json(n) -> int | str:
    """N as a results file or a record holds it: an int below EXACT_LIMIT, else its exact text."""
    n = count(n)
    return n if n < EXACT_LIMIT else exact(n)


def per_second(n, seconds: float) -> float | str:
    """How many of N came per second over SECONDS (0.0 for no time), as a results file holds a
    rate: to one decimal below EXACT_LIMIT, else the whole number's exact text. Computed on the
    integers: N may be far past what a float holds."""
    ms = int(seconds * 1000)
    if ms <= 0:
        return 0.0
    tenths = count(n) * 10_000 // ms
    return tenths / 10 if tenths < EXACT_LIMIT else exact(tenths // 10)


__all__ = ["EXACT_LIMIT", "big", "count", "exact", "for_json", "per_second"]
