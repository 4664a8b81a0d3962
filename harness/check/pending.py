"""Why a crash point has so many legal states: the allocation site that holds most pending lines.

Owns the hint a run prints when one crash point's legal-state count explodes. Every line stored
and never flushed multiplies the count by its stores + 1; when objects nobody flushes (a
std::vector of the adapter's sent to the pool, a cache written without persists) fill many lines,
the count reaches numbers like 10^124 and a history takes minutes, with nothing saying why. The
hint names the allocation site whose objects hold most of the pending lines at that point.
Never runs anything; reads the trace and one crash point.
"""
from __future__ import annotations

import bisect
from collections import Counter

from crashcheck.crashsim.simulate import CrashPoint
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.core.counts import big

# A crash point with at least this many legal states gets a hint (about 2^50: far past what any
# search covers state by state, and past what a structure that persists its own objects reaches).
EXPLODES = 10 ** 15


def _live_objects(trace: Trace, before: int) -> list[tuple[int, int, int]]:
    """(address, size, site) of every object allocated and not freed before event BEFORE, by address."""
    live: dict[int, tuple[int, int]] = {}
    for ev in trace.events[:before]:
        if ev.kind == "alloc":
            live[ev.addr] = (ev.size, ev.site)      # (the reader puts the object's size in size)
        elif ev.kind == "free":
            live.pop(ev.addr, None)
    return sorted((addr, size, site) for addr, (size, site) in live.items())


def pending_sites(trace: Trace, point: CrashPoint) -> tuple[int, Counter]:
    """How many lines are pending at POINT, and per allocation site (its text; "no allocation"
    for lines outside every allocated object) how many of them lie in its objects."""
    objects = _live_objects(trace, point.event)
    starts = [o[0] for o in objects]
    by_site: Counter = Counter()
    lines = [u.line for u in point.units if u.kind == "line" and u.line is not None]
    for line in lines:
        # objects never overlap: the last one starting before the line's end is the one that
        # can reach into it (several small ones in one line: the line counts for the last)
        i = bisect.bisect_right(starts, line + trace.line_size - 1) - 1
        if i >= 0 and objects[i][0] + objects[i][1] > line:
            site = trace.site(objects[i][2])
            by_site[site.describe() if site is not None else "an unknown site"] += 1
        else:
            by_site["no allocation"] += 1
    return len(lines), by_site


def pending_hint(trace: Trace, point: CrashPoint, history: str = "") -> str | None:
    """One line saying where POINT's pending lines are, if its legal states explode; else None."""
    if point.legal < EXPLODES:
        return None
    total, by_site = pending_sites(trace, point)
    if not total:
        return None
    where, count = next(((w, c) for w, c in by_site.most_common() if w != "no allocation"), (None, 0))
    legal = big(point.legal).replace("e+", "e")      # (past any float: computed on the int)
    head = (f"{legal} legal crash states at one crash point (trace event #{point.event}"
            f"{' of ' + history if history else ''}): {total} cache lines stored and never flushed")
    if where is None:
        return head + ", none of them in an object the pool allocator gave out"
    return (head + f"; {count} of them in objects allocated at {where}. Objects nothing flushes "
            "belong in DRAM (allocate them outside the structure's code, or flush them)")


__all__ = ["EXPLODES", "pending_hint", "pending_sites"]
