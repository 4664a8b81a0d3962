"""Fix candidates as edits of source lines, and what each does to a trace.

Owns the Edit (one change of the code's persistence instructions, named by source lines) and
applying edits at every execution of their lines in a traced history (crashsim/trace_edit.py
makes the edited trace): the fix search (harness/check/fix_search.py) proves them there. Never
checks a state.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from crashcheck.crashsim.trace import Event, Trace
from crashcheck.crashsim.trace_edit import TraceEdit, fence_event, flush_events, line_flush
from crashcheck.harness.check.findings import site_key

STORES = ("store", "ntstore")
FENCES = ("sfence", "mfence")


@dataclass(frozen=True)
class Edit:
    """One change of the code, in source terms.

    kind      flush-after     a flush of the line(s) the store at ANCHOR wrote, after it
              fence-after     a fence after the flush at ANCHOR
              persist-after   a flush of the store's line(s) and a fence, after the store at ANCHOR
              fence-before    a fence before the store at ANCHOR
              persist-before  a flush of the line(s) the latest store at OTHER wrote, and a fence,
                              before the store at ANCHOR
              move-fence      the fence at OTHER moved to just before the store at ANCHOR
              commit          before the store at ANCHOR, a flush of every line its thread wrote
                              since its last fence and a fence; after it, its own line(s) and a fence
              flush-object    before the fence at ANCHOR, a flush of every line of the objects
                              its thread allocated and wrote since its previous fence (else of the
                              object the latest store at OTHER wrote into): a new node flushed in
                              part (one line of several) before the fence that should make it durable
              persist-object-before
                              before the store at ANCHOR (it publishes a new object: a pointer to it,
                              or a commit), a flush of every line of the published object(s) that is
                              not yet flushed since it was last written, and a fence: the new node
                              persisted whole before the swing that publishes it. The object is
                              found in the trace at each execution (`published`): the live
                              allocation the stored value points into (the value as an address, or
                              as an offset in the store's region), with every object allocated in
                              the same operation that it points to (its new children), transitively;
                              when the value points into no allocation, the objects the thread
                              allocated in the operation and wrote
    anchor    file:line the edit goes at (before or after it)
    other     a second line the edit names (persist-before, move-fence); for flush-after and
              persist-after, "call": ANCHOR is the line that called (inlined) the function
              holding the store, and the edit goes after that call returned; for
              persist-object-before, where the object was allocated (for the words only: the
              edit finds the object at each execution); else ""
    """
    kind: str
    anchor: str
    other: str = ""

    @property
    def where(self) -> str:
        return "after" if self.kind in ("flush-after", "fence-after", "persist-after") else "before"

    @property
    def instructions(self) -> int:
        """How many instructions the edit adds or moves (fewest first)."""
        return {"flush-after": 1, "fence-after": 1, "fence-before": 1, "move-fence": 1,
                "persist-after": 2, "persist-before": 2, "flush-object": 2, "persist-object-before": 3,
                "commit": 4}[self.kind]

    def as_json(self) -> dict:
        file, _, line = self.anchor.rpartition(":")
        return {"kind": self.kind, "file": file, "line": int(line or 0), "where": self.where,
                "other": self.other}


def trace_keys(trace: Trace) -> list[str]:
    """file:line of every event (a store or flush inside a header helper: its caller's line)."""
    cache: dict[int, str] = {}
    out = []
    for ev in trace.events:
        k = cache.get(ev.site)
        if k is None:
            k = cache[ev.site] = site_key(trace, ev.site)
        out.append(k)
    return out


def calls_at(trace: Trace, ev: Event) -> str | None:
    s = trace.site(ev.site)
    return f"{s.inlined_file}:{s.inlined_line}" if s is not None and s.inlined_line else None


def is_pm_store(ev: Event) -> bool:
    return ev.kind in STORES and ev.region is not None


def _calls(trace: Trace) -> list[str | None]:
    """file:line of the call each event's code was inlined at (None: not inlined)."""
    return [calls_at(trace, ev) for ev in trace.events]


def call_end(trace: Trace, calls: list[str | None], i: int, anchor: str) -> int:
    """The last event of the execution of the call at ANCHOR that event I begins: the events
    inlined at ANCHOR and those of helpers inlined into the called function (a persist helper,
    which the trace names by the called function's line), up to the first event of anything else
    (the caller's next line, another function, an operation boundary). A function the callee calls
    without inlining it ends the run there: the trace does not say who called it."""
    ev = trace.events
    first = trace.site(ev[i].site)
    callee = first.func if first is not None else None
    j = i
    while j + 1 < len(ev):
        nxt = ev[j + 1]
        if nxt.kind in ("op_begin", "op_end") or nxt.tid != ev[i].tid:
            break
        s = trace.site(nxt.site)
        if not (calls[j + 1] == anchor or (s is not None and callee and callee in (s.func, s.inlined_func))):
            break
        j += 1
    return j


def _after_calls(trace: Trace, e: Edit, out: TraceEdit) -> None:
    """E (flush-after or persist-after "call") at every execution of the call at its anchor: after
    its last event (call_end), the lines its stores wrote flushed (and a fence)."""
    calls, ev = _calls(trace), trace.events
    i = 0
    while i < len(ev):
        if calls[i] != e.anchor:
            i += 1
            continue
        j = call_end(trace, calls, i, e.anchor)
        flushes: dict[int, Event] = {}
        for x in ev[i:j + 1]:
            if is_pm_store(x):
                for f in flush_events(trace, x, x.site):
                    flushes.setdefault(f.addr, f)
        if flushes:
            last = ev[j]
            out.insert_after(j, [flushes[a] for a in sorted(flushes)])
            if e.kind == "persist-after":
                out.insert_after(j, [fence_event(last.tid, last.site, last.seq)])
        i = j + 1


def flush_objects(trace: Trace, keys: list[str], e: Edit, out: TraceEdit) -> None:
    """E (flush-object) at every execution of its fence: every line of each object its thread
    allocated and stored into since its previous fence flushed before it (a new node published
    after this fence must be durable whole), or without one, of the object the latest store at
    E.other wrote into."""
    ls = trace.line_size
    allocs: list[tuple[int, int]] = []            # (addr, size) of the allocations so far
    fresh: dict[int, list[tuple[int, int]]] = {}  # thread -> objects it allocated since its last fence
    written: dict[int, set[tuple[int, int]]] = {}  # thread -> of those, the ones it stored into
    latest: dict[int, Event] = {}
    for i, x in enumerate(trace.events):
        if x.kind == "alloc" and x.size:
            allocs.append((x.addr, x.size))
            fresh.setdefault(x.tid, []).append((x.addr, x.size))
        elif is_pm_store(x):
            if keys[i] == e.other:
                latest[x.tid] = x
            obj = next((o for o in fresh.get(x.tid, ()) if o[0] <= x.addr < o[0] + o[1]), None)
            if obj is not None:
                written.setdefault(x.tid, set()).add(obj)
        elif x.kind == "fence" and x.sub in FENCES:
            objs = sorted(written.pop(x.tid, set()))
            fresh.pop(x.tid, None)
            st = latest.pop(x.tid, None)
            if keys[i] != e.anchor:
                continue
            if not objs and st is not None:
                objs = [next(((a, n) for a, n in reversed(allocs) if a <= st.addr < a + n), (st.addr, st.size))]
            lines = sorted({line for a, n in objs for line in range(a - a % ls, a + n, ls)})
            out.insert_before(i, [line_flush(trace, line, x.tid, x.site, x.seq) for line in lines])


def _pointer(x: Event) -> int | None:
    """The value an 8-byte store wrote, as an address (None for another size)."""
    return int.from_bytes(x.data[:8], "little") if x.size == 8 and len(x.data) >= 8 else None


def published(trace: Trace, at: set[int]) -> dict[int, tuple[list[tuple[int, int, int]], list[int]]]:
    """For each store index in AT: the objects the store publishes, as (address, size, index of
    their alloc event), and their lines not flushed since they were last written (what a
    persist-object-before at that store flushes; Edit's doc says which objects). One pass."""
    ls = trace.line_size
    starts: list[int] = []                       # live allocations, sorted by address
    live: dict[int, tuple[int, int]] = {}        # address -> (size, alloc event index)
    in_op: dict[int, set[int]] = {}              # thread -> addresses it allocated in its operation
    written: dict[int, set[int]] = {}            # thread -> of those, the ones it stored into
    pointers: dict[int, set[int]] = {}           # object -> the 8-byte values stored into it
    dirty: set[int] = set()                      # lines written and not flushed since
    out: dict[int, tuple[list[tuple[int, int, int]], list[int]]] = {}

    def find(a: int | None) -> int | None:
        if a is None:
            return None
        k = bisect.bisect_right(starts, a) - 1
        return starts[k] if k >= 0 and a < starts[k] + live[starts[k]][0] else None

    for i, x in enumerate(trace.events):
        if x.kind == "op_begin":
            in_op[x.tid], written[x.tid] = set(), set()
        elif x.kind == "alloc" and x.size:
            if x.addr not in live:
                bisect.insort(starts, x.addr)
            live[x.addr] = (x.size, i)
            in_op.setdefault(x.tid, set()).add(x.addr)
            pointers.pop(x.addr, None)
        elif x.kind == "free" and x.addr in live:
            del live[x.addr]
            starts.remove(x.addr)
        elif x.kind == "flush":
            dirty.discard(x.addr - x.addr % ls)
        elif is_pm_store(x):
            if i in at:
                mine = in_op.get(x.tid, set()) & live.keys()
                v = _pointer(x)
                region = next((r.base for r in trace.regions if r.index == x.region), 0)
                root = find(v) if v is not None else None
                if root is None and v is not None and v < (1 << 48):
                    root = find(region + v)
                objs = [root] if root is not None else sorted(written.get(x.tid, set()) & mine)
                todo = list(objs)
                while todo:                      # its new children, and theirs
                    for p in pointers.get(todo.pop(), ()):
                        c = find(p)
                        c = find(region + p) if c is None else c
                        if c is not None and c in mine and c not in objs:
                            objs.append(c)
                            todo.append(c)
                lines = sorted({line for a in objs for line in range(a - a % ls, a + live[a][0], ls)} & dirty)
                out[i] = ([(a, live[a][0], live[a][1]) for a in objs], lines)
            first, last = x.addr - x.addr % ls, (x.end - 1) - (x.end - 1) % ls
            dirty.update(range(first, last + 1, ls))
            obj = find(x.addr)
            if obj is not None:
                if obj in in_op.get(x.tid, ()):
                    written.setdefault(x.tid, set()).add(obj)
                v = _pointer(x)
                if v is not None:
                    pointers.setdefault(obj, set()).add(v)
    return out


def persist_objects_before(trace: Trace, keys: list[str], e: Edit, out: TraceEdit) -> None:
    """E (persist-object-before) at every execution of its store: the published objects' lines
    not yet flushed, flushed before it, and a fence."""
    at = {i for i, x in enumerate(trace.events) if keys[i] == e.anchor and is_pm_store(x)}
    for i, (_, lines) in published(trace, at).items():
        x = trace.events[i]
        if lines:
            out.insert_before(i, [line_flush(trace, line, x.tid, x.site, x.seq) for line in lines]
                              + [fence_event(x.tid, x.site, x.seq)])


def trace_edit(trace: Trace, edits: tuple[Edit, ...]) -> TraceEdit:
    """EDITS applied to every execution of their lines in TRACE."""
    keys = trace_keys(trace)
    ev = trace.events
    out = TraceEdit()
    for e in edits:
        if e.kind in ("flush-after", "persist-after") and e.other == "call":
            _after_calls(trace, e, out)
        elif e.kind in ("flush-after", "persist-after"):
            for i, x in enumerate(ev):
                if keys[i] == e.anchor and is_pm_store(x):
                    out.insert_after(i, flush_events(trace, x, x.site))
                    if e.kind == "persist-after":
                        out.insert_after(i, [fence_event(x.tid, x.site, x.seq)])
        elif e.kind == "flush-object":
            flush_objects(trace, keys, e, out)
        elif e.kind == "persist-object-before":
            persist_objects_before(trace, keys, e, out)
        elif e.kind == "fence-after":
            for i, x in enumerate(ev):
                if keys[i] == e.anchor and x.kind == "flush":
                    out.insert_after(i, [fence_event(x.tid, x.site, x.seq)])
        elif e.kind in ("fence-before", "persist-before", "commit", "move-fence"):
            latest: dict[int, Event] = {}            # persist-before: thread -> its latest OTHER store
            dirty: dict[int, dict[int, Event]] = {}  # commit: thread -> line -> a store writing it
            for i, x in enumerate(ev):
                if e.kind == "commit" and x.kind == "fence":
                    dirty.pop(x.tid, None)
                if not is_pm_store(x):
                    continue
                here = keys[i] == e.anchor
                if e.kind == "persist-before" and keys[i] == e.other and not here:
                    latest[x.tid] = x
                if e.kind == "commit" and not here:
                    for f in flush_events(trace, x, x.site):
                        dirty.setdefault(x.tid, {})[f.addr] = x
                if not here:
                    continue
                if e.kind == "persist-before":
                    prev = latest.get(x.tid)
                    if prev is not None:
                        out.insert_before(i, flush_events(trace, prev, x.site))
                elif e.kind == "commit":
                    seen = set()
                    for line, st in sorted(dirty.pop(x.tid, {}).items()):
                        out.insert_before(i, [f for f in flush_events(trace, st, x.site)
                                              if f.addr == line and line not in seen])
                        seen.add(line)
                    out.insert_after(i, flush_events(trace, x, x.site) + [fence_event(x.tid, x.site, x.seq)])
                out.insert_before(i, [fence_event(x.tid, x.site, x.seq)])
            if e.kind == "move-fence":
                out.remove |= {i for i, x in enumerate(ev)
                               if keys[i] == e.other and x.kind == "fence" and x.sub in FENCES}
    return out


__all__ = ["Edit", "FENCES", "STORES", "call_end", "calls_at", "flush_objects", "is_pm_store", "persist_objects_before",
           "published", "trace_edit", "trace_keys"]
