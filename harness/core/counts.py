"""Counts for people and for files: crash-state counts grow past any column and past what a float
holds (a crash point with a thousand pending pieces has about 10^301 legal states, one after a
1 MB memset about 10^40000), so nothing here ever turns a count into a float.

Owns: `big` (a count as a console line or table cell shows it: exact up to 10^12, then 1.49e+36,
computed on the integer), `exact` (its decimal text of any length: Python refuses str() of an int
past 4300 digits), `count` (a count read back: an int or its decimal text), `for_json` and
`json_int` (what a results file or record holds: `states_legal` as text past 2^53, where JSON
readers stop keeping integers exactly, as it always was; other counts as JSON integers up to 4000
digits, text past them), `per_second` (a count's rate, computed on the integers).
"""
from __future__ import annotations

import decimal

# `states_legal` past this many is written as decimal text in JSON (docs/bug-record.md): JSON
# readers keep integers exactly only that far.
EXACT_LIMIT = 2 ** 53
# Other counts stay JSON integers up to this many digits (Python reads back at most 4300 by
# default), and are decimal text past it.
JSON_DIGITS = 4000


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
    """N as `states_legal` is written: an int below EXACT_LIMIT, else its exact text."""
    n = count(n)
    return n if n < EXACT_LIMIT else exact(n)


def json_int(n) -> int | str:
    """N as any other count is written: an int (json writes any size, readers may round past
    2^53), or its exact text past JSON_DIGITS digits, which json cannot write."""
    n = count(n)
    return n if n < 10 ** JSON_DIGITS else exact(n)


def per_second(n, seconds: float) -> float | int | str:
    """How many of N came per second over SECONDS (0.0 for no time), as a results file holds a
    rate: to one decimal below EXACT_LIMIT, else the whole number (json_int). Computed on the
    integers: N may be far past what a float holds."""
    ms = int(seconds * 1000)
    if ms <= 0:
        return 0.0
    tenths = count(n) * 10_000 // ms
    return tenths / 10 if tenths < EXACT_LIMIT else json_int(tenths // 10)


__all__ = ["EXACT_LIMIT", "JSON_DIGITS", "big", "count", "exact", "for_json", "json_int", "per_second"]
