"""Why a crash point has so many legal states: the allocation site that holds most pending lines.

Owns the hint a run prints when one crash point's legal-state count explodes. Every line stored
and never flushed multiplies the count by its stores + 1; when objects nobody flushes (a
std::vector of the adapter's sent to the pool, a cache written without persists) fill many lines,
the count reaches numbers like 10^124 and a history takes minutes, with nothing saying why. The
hint names the allocation site whose objects hold most of the pending lines at that point, and
says what they are: zeroes an allocator stored and nothing flushed (an allocator's zeroing must be
durable when it hands the object out, as PMDK's pmemobj_zalloc and trees/common/pm_alloc.c make
it), or data the code never flushes. Lines flushed and only waiting for their fence are the code
doing its job (an allocator zeroing a large object, then fencing once) and are never counted.
Sites are named relative to the checkout or the folder crashcheck runs in, as in the summary.
Never runs anything; reads the trace and one crash point.
"""
from __future__ import annotations

import bisect
from collections import Counter

from crashcheck.crashsim.simulate import CrashPoint, Unit
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.core.counts import big
from crashcheck.harness.core.paths import display

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


def unflushed_units(trace: Trace, point: CrashPoint) -> list[Unit]:
    """The line units of POINT with a store after the line's last flush: stored and never flushed
    (a line flushed since its last store is only waiting for its thread's fence)."""
    flushed: dict[int, int] = {}        # line address -> event index of its last flush
    for i, ev in enumerate(trace.events[:point.event]):
        if ev.kind == "flush" and ev.addr is not None:
            flushed[ev.addr - ev.addr % trace.line_size] = i
    return [u for u in point.units if u.kind == "line" and u.line is not None
            and max(p.seq for p in u.pieces) > flushed.get(u.line, -1)]


def site_text(trace: Trace, site_id: int) -> str:
    """A site as the summary names it: its file relative to the checkout or the folder
    crashcheck runs in (harness/core/paths.display), its line and function."""
    s = trace.site(site_id)
    if s is None:
        return "an unknown site"
    text = f"{display(s.file) or '?'}:{s.line} in {s.func or '?'}"
    if s.inlined_func or s.inlined_line:
        text += f" (inlined into {s.inlined_func or '?'} at {display(s.inlined_file)}:{s.inlined_line})"
    return text


def pending_sites(trace: Trace, point: CrashPoint, units: list[Unit] | None = None) -> tuple[int, Counter, Counter]:
    """How many lines are stored and never flushed at POINT (UNITS, if known: unflushed_units),
    and per allocation site (its text; "no allocation" for lines outside every allocated object)
    how many of them lie in its objects, and how many of those hold only zero bytes stored (an
    allocator's zeroing)."""
    objects = _live_objects(trace, point.event)
    starts = [o[0] for o in objects]
    by_site: Counter = Counter()
    zeroed: Counter = Counter()
    units = unflushed_units(trace, point) if units is None else units
    for unit in units:
        line = unit.line
        # objects never overlap: the last one starting before the line's end is the one that
        # can reach into it (several small ones in one line: the line counts for the last)
        i = bisect.bisect_right(starts, line + trace.line_size - 1) - 1
        if i >= 0 and objects[i][0] + objects[i][1] > line:
            where = site_text(trace, objects[i][2])
        else:
            where = "no allocation"
        by_site[where] += 1
        if not any(any(p.data) for p in unit.pieces):
            zeroed[where] += 1
    return len(units), by_site, zeroed


def _legal(units: list[Unit]) -> int:
    n = 1
    for u in units:
        n *= u.choices
    return n


def pending_hint(trace: Trace, point: CrashPoint, history: str = "") -> str | None:
    """One line saying where POINT's pending lines are, if its legal states explode; else None."""
    if point.legal < EXPLODES:
        return None
    units = unflushed_units(trace, point)
    if _legal(units) < EXPLODES:
        return None             # what explodes was flushed and waits for its fence: nothing to say
    total, by_site, zeroed = pending_sites(trace, point, units)
    if not total:
        return None
    where, count = next(((w, c) for w, c in by_site.most_common() if w != "no allocation"), (None, 0))
    legal = big(point.legal).replace("e+", "e")      # (past any float: computed on the int)
    head = (f"{legal} legal crash states at one crash point (trace event #{point.event}"
            f"{' of ' + history if history else ''}): {total} cache lines stored and never flushed")
    if where is None:
        return head + ", none of them in an object the pool allocator gave out"
    head += f"; {count} of them in objects allocated at {where}"
    if zeroed[where] == count:
        return (head + ", holding only zeroes that were stored and never flushed: an allocator's zeroing "
                "(make it durable before the object is handed out, a flush of its lines and one fence, as "
                "PMDK's pmemobj_zalloc does, or hand out memory already zero in the image)")
    return (head + ": data the code stores there and never flushes, so a crash may lose it and every crash "
            "point after it multiplies its states (flush it and fence before what depends on it is made "
            "durable; an object no recovery needs, a cache or an adapter's std::vector sent to the pool, "
            "belongs in DRAM)")


__all__ = ["EXPLODES", "pending_hint", "pending_sites", "site_text", "unflushed_units"]
