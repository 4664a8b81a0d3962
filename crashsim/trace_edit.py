"""Edited traces: the same run with persistence instructions added, moved or taken out.

Owns making, from a trace, the trace the same run would have left had its code flushed or fenced
somewhere else: flushes and fences inserted before or after given events, and events removed.
The fix search (harness/check/fix_search.py) simulates such a trace to prove that an edit of the
code forbids every failing crash state. Nothing here knows sources or sites: the caller names the
events. The edited trace shares the original's header, sites and region images, so the runner
that checked the original checks it too; an edited event list is never written to disk.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

from .trace import Event, Trace


def flush_events(trace: Trace, like: Event, site: int, sub: str = "clwb") -> list[Event]:
    """Flushes of every cache line store LIKE wrote, issued by its thread at SITE, as the runtime
    logs them (the line's start, the line size)."""
    ls = trace.line_size
    first, last = like.addr - like.addr % ls, (like.end - 1) - (like.end - 1) % ls
    out = []
    for line in range(first, last + 1, ls):
        off = None if like.off is None else like.off - (like.addr - line)
        out.append(Event(like.seq, like.tid, "flush", sub, line, ls, b"", site, like.region, off))
    return out


def line_flush(trace: Trace, line: int, tid: int, site: int, seq: int = 0, sub: str = "clwb") -> Event:
    """A flush of the cache line at LINE by thread TID at SITE, with the region holding it."""
    region = next((r for r in trace.regions if r.base <= line < r.base + r.size), None)
    return Event(seq, tid, "flush", sub, line, trace.line_size, b"", site,
                 None if region is None else region.index, None if region is None else line - region.base)


def fence_event(tid: int, site: int, seq: int = 0, sub: str = "sfence") -> Event:
    """A persistence fence of thread TID at SITE."""
    return Event(seq, tid, "fence", sub, 0, 0, b"", site)


@dataclass
class TraceEdit:
    """What to change in one trace: events to insert before or after event indexes, and event
    indexes to leave out (a moved fence is one left out and one inserted)."""
    before: dict[int, list[Event]] = field(default_factory=dict)
    after: dict[int, list[Event]] = field(default_factory=dict)
    remove: set[int] = field(default_factory=set)

    def insert_before(self, index: int, events: Iterable[Event]) -> None:
        self.before.setdefault(index, []).extend(events)

    def insert_after(self, index: int, events: Iterable[Event]) -> None:
        self.after.setdefault(index, []).extend(events)

    @property
    def empty(self) -> bool:
        return not (self.before or self.after or self.remove)

    def apply(self, trace: Trace) -> Trace:
        """TRACE with this edit: a new Trace over a new event list (TRACE is unchanged). Event
        indexes past the first edit shift, so crash point numbers and pieces' `seq` of the edited
        trace are its own."""
        out: list[Event] = []
        for i, ev in enumerate(trace.events):
            out.extend(self.before.get(i, ()))
            if i not in self.remove:
                out.append(ev)
            out.extend(self.after.get(i, ()))
        return replace(trace, events=out)


__all__ = ["TraceEdit", "fence_event", "flush_events", "line_flush"]
