"""The leak rule: every PM object allocated in the recovered image must be reachable.

Owns what counts as a leak and when it is known-by-design. The driver reports, after recovery,
the objects the image's allocator marks in use but the structure cannot reach (`unreachable`).
If the structure's own recovery reclaims such objects they are no longer allocated, so whatever
is still listed is a leak. The allocation site of a leaked object comes from the trace: the last
`alloc` event for its address before the crash.

Known-by-design leaks: a structure's expect.json may declare that objects allocated by given
functions can leak when power fails. That covers only the window of the operation in flight: an
object that operation allocates (and has not linked yet) or frees (after unlinking it). So a
leak is expected only if the crash happened during an operation, the object's allocating
function is declared, and the in-flight operation allocates or frees that very object. Anything
else (a leak at a crash between operations, or an object no operation in flight touches, such
as an old node a completed update forgot to free) is a bug.
"""
from __future__ import annotations

import bisect

from crashcheck.crashsim.trace import Trace


def unreachable(result: dict | None) -> list[tuple[int, int]]:
    """(pool offset, size) of each allocated-but-unreachable object in a driver's check JSON."""
    if not result:
        return []
    return [(int(off), int(size)) for off, size in result.get("unreachable", [])]


def _site_dict(trace: Trace, site_id: int) -> dict | None:
    site = trace.site(site_id)
    return site.as_dict() if site is not None else None


class LeakIndex:
    """One pass over a trace: every allocation per pool offset, and what each operation
    allocates or frees, so leaks at any crash point are attributed without rescanning."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.allocs: dict[int, list[tuple[int, int]]] = {}   # off -> [(event index, site)]
        self.spans: list[tuple[int, int, set[int]]] = []      # (op_begin index, op_end index, offsets)
        # each thread's operation in flight (one thread: at most one operation at a time); an
        # allocation or free belongs to the operation of the thread that made it
        current: dict[int, tuple[int, set[int]]] = {}
        for i, ev in enumerate(trace.events):
            kind = ev.kind
            if kind == "op_begin":
                current[ev.tid] = (i, set())
            elif kind == "op_end":
                begun = current.pop(ev.tid, None)
                if begun is not None:
                    self.spans.append((begun[0], i, begun[1]))
            elif kind in ("alloc", "free") and ev.region == 0:
                if kind == "alloc":
                    self.allocs.setdefault(ev.off, []).append((i, ev.site))
                if ev.tid in current:
                    current[ev.tid][1].add(ev.off)
        for begin, offs in current.values():
            self.spans.append((begin, len(trace.events), offs))
        self.spans.sort(key=lambda s: s[0])
        self._begins = [b for b, _, _ in self.spans]
        # operations of several threads overlap; then more than one may be in flight at a crash
        self._overlapping = any(self.spans[k][1] > self.spans[k + 1][0] for k in range(len(self.spans) - 1))

    def touched_in_flight(self, crash_event: int) -> set[int]:
        """Pool offsets the operations in flight at CRASH_EVENT allocate or free (their whole span,
        also after the crash: what they would have done had power not failed). Empty between ops
        (a crash at op_end(i) still counts as inside operation i: its marker is not yet logged)."""
        k = bisect.bisect_left(self._begins, crash_event) - 1
        if k < 0:
            return set()
        if self._overlapping:
            return set().union(*(offs for begin, end, offs in self.spans[:k + 1] if crash_event <= end))
        begin, end, offs = self.spans[k]
        return offs if crash_event <= end else set()

    def attribute(self, objects: list[tuple[int, int]], before_event: int) -> list[dict]:
        """Each leaked object with the site of its last allocation before BEFORE_EVENT, or, if
        the allocator had marked it in use but its alloc marker came after the crash, the next.
        (A free marker before the crash does not clear the site: the image may still mark the
        object in use, unlinked but not yet freed durably, and then this allocation leaked.)"""
        out = []
        for off, size in objects:
            sid = None
            entries = self.allocs.get(off, [])
            k = bisect.bisect_left(entries, (before_event, -1))
            if k > 0:
                sid = entries[k - 1][1]
            elif entries:
                sid = entries[0][1]
            out.append({"off": off, "size": size,
                        "site": _site_dict(self.trace, sid) if sid is not None else None})
        return out



def attribute(trace: Trace, objects: list[tuple[int, int]], before_event: int) -> list[dict]:
    """LeakIndex(trace).attribute(...), for one-off use."""
    return LeakIndex(trace).attribute(objects, before_event)


def touched_in_flight(trace: Trace, crash_event: int) -> set[int]:
    """LeakIndex(trace).touched_in_flight(...), for one-off use."""
    return LeakIndex(trace).touched_in_flight(crash_event)


def expected(known: list[dict], objects: list[dict], in_flight: set[int] | None = None) -> dict | None:
    """The expect.json entry covering every leaked object, or None (see the module note).
    IN_FLIGHT: offsets the operation in flight allocates or frees (touched_in_flight)."""
    leaks = [k for k in known if k.get("class") == "leak"]
    if not leaks or not objects:
        return None
    match = None
    for obj in objects:
        if in_flight is not None and obj["off"] not in in_flight:
            return None
        site = obj.get("site") or {}
        funcs = {site.get("func"), (site.get("inlined_at") or {}).get("func")}
        hit = next((k for k in leaks if k.get("alloc_func") in funcs), None)
        if hit is None:
            return None
        match = match or hit
    return match


def explained(known: list[dict], obj: dict, in_flight: set[int] | None = None) -> bool:
    """OBJ alone would be a leak by design (expected() of it alone is not None)."""
    return expected(known, [obj], in_flight) is not None


def unexplained_first(known: list[dict], objects: list[dict], in_flight: set[int] | None = None) -> list[dict]:
    """OBJECTS with the ones no expect.json entry explains first (stable otherwise): an
    unexpected leak is named and grouped by what makes it unexpected, not by an object the
    operation in flight left allocated by design beside it."""
    return sorted(objects, key=lambda o: explained(known, o, in_flight))


def describe(objects: list[dict]) -> str:
    first = objects[0]
    site = first.get("site")
    where = f" allocated at {site['file']}:{site['line']} in {site['func']}" if site else ""
    more = f" (and {len(objects) - 1} more)" if len(objects) > 1 else ""
    return f"{first['size']}-byte object at +{first['off']:#x}{where} is allocated but unreachable after recovery{more}"
