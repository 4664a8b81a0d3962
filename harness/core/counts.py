"""Counts for people: crash-state counts grow past any column (and past what a float holds: a
crash point with a thousand pending pieces has about 10^301 legal states), so they are shown
exact up to 10^12 and then as 1.49e+36, computed on the integer itself. results.json keeps the
exact figure."""
from __future__ import annotations

import decimal


def big(n) -> str:
    """N (an int, or its decimal string) for a table cell or a console line."""
    n = int(n)
    return f"{n:,}" if n < 10 ** 12 else format(decimal.Decimal(n), ".2e")
