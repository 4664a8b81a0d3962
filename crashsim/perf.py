"""Useless persistence in a trace: flushes and fences that make nothing durable.

Owns finding, in one trace, the persistence instructions whose work was already done or had
nothing to do, per source site. Never a bug (the structure stays crash consistent), but each
costs a slow instruction on the hot path (Witcher counted 158 such performance bugs in public PM
code; pmemcheck reports some too). Three kinds:

  flush-clean-line    a flush of a line no cached store wrote since that line was last flushed
                      and fenced (or since the trace began): nothing to write back
  flush-repeated      a second flush of a line by the same thread before its fence, with no store
                      to the line in between: the first flush already wrote it back
  fence-idle          an sfence or mfence of a thread that issued no flush and no non-temporal
                      store since its previous fence: nothing to order for persistence (an mfence
                      may still be there for ordering between threads; it is listed all the same,
                      as its own `sub`)

Only stores and flushes of PM regions count. Fences that are locked instructions or seq_cst atomics are
not persistence fences here (the code wrote them for atomicity) and are never listed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterator

from .trace import Event, Trace

KINDS = ("flush-clean-line", "flush-repeated", "fence-idle")
FENCES = frozenset({"sfence", "mfence"})


@dataclass
class UselessSite:
    kind: str           # one of KINDS
    site: int           # the flush's or fence's site id in the trace
    sub: str            # clwb, clflushopt, clflush, sfence, mfence
    count: int

    def as_json(self, trace: Trace) -> dict:
        s = trace.site(self.site)
        return {"kind": self.kind, "sub": self.sub, "count": self.count,
                "where": s.describe() if s else "?",
                "file": s.file if s else "", "line": s.line if s else 0}


def _walk(trace: Trace) -> Iterator[tuple[Event, str | None]]:
    """Every PM flush and persistence fence of TRACE, with the kind of uselessness it shows
    (module doc), None for one that did work."""
    ls = trace.line_size
    dirty: set[int] = set()                    # lines a cached store wrote since their last flush
    flushed_by: dict[int, set[int]] = {}       # thread -> lines it flushed since its last fence, still clean
    busy: set[int] = set()                     # threads with a flush or NT store since their last fence
    for ev in trace.events:
        if ev.kind == "store" and ev.region is not None:
            first, last = ev.addr - ev.addr % ls, (ev.end - 1) - (ev.end - 1) % ls
            for line in range(first, last + 1, ls):
                dirty.add(line)
                for lines in flushed_by.values():
                    lines.discard(line)
        elif ev.kind == "ntstore" and ev.region is not None:
            busy.add(ev.tid)
        elif ev.kind == "flush" and ev.region is not None:
            line = ev.addr - ev.addr % ls
            mine = flushed_by.setdefault(ev.tid, set())
            busy.add(ev.tid)
            if line in dirty:
                dirty.discard(line)
                mine.add(line)
                yield ev, None
            else:
                yield ev, "flush-repeated" if line in mine else "flush-clean-line"
        elif ev.kind == "fence" and ev.sub in FENCES:
            yield ev, None if ev.tid in busy else "fence-idle"
            busy.discard(ev.tid)
            flushed_by.pop(ev.tid, None)


def useless_persistence(trace: Trace) -> tuple[list[UselessSite], dict[str, int]]:
    """The flushes and fences of TRACE that did nothing (module doc), counted per (kind, site,
    instruction), most frequent first; and the totals: flushes and fences of each kind, and the
    flushes and persistence fences in all."""
    counts: Counter[tuple[str, int, str]] = Counter()
    flushes = fences = 0
    for ev, kind in _walk(trace):
        if ev.kind == "flush":
            flushes += 1
        else:
            fences += 1
        if kind is not None:
            counts[(kind, ev.site, ev.sub)] += 1
    rows = [UselessSite(kind, site, sub, n) for (kind, site, sub), n in counts.items()]
    rows.sort(key=lambda r: (-r.count, KINDS.index(r.kind), r.site, r.sub))
    totals = {kind: sum(r.count for r in rows if r.kind == kind) for kind in KINDS}
    totals.update(flushes=flushes, fences=fences)
    return rows, totals


def useless_by_operation(trace: Trace) -> dict[int | None, Counter]:
    """Per operation of TRACE (its index; None outside every operation: set-up), how many
    flushes and fences it issued and how many of each kind did nothing."""
    out: dict[int | None, Counter] = {}
    current: dict[int, int | None] = {}        # thread -> its operation in flight
    pos = 0
    events = trace.events
    for ev, kind in _walk(trace):
        # the operation boundaries before this flush or fence (the walk yields them in order)
        while pos < len(events) and events[pos] is not ev:
            b = events[pos]
            if b.kind == "op_begin":
                current[b.tid] = b.addr
            elif b.kind == "op_end":
                current[b.tid] = None
            pos += 1
        pos += 1
        c = out.setdefault(current.get(ev.tid), Counter())
        c["flushes" if ev.kind == "flush" else "fences"] += 1
        if kind is not None:
            c[kind] += 1
    return out


__all__ = ["KINDS", "UselessSite", "useless_by_operation", "useless_persistence"]
