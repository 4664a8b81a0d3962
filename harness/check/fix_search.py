"""The fix of an ordering bug, searched on the trace and proven there.

Owns, for a shrunk finding whose failing crash state loses stores, the search for the smallest
change of the code's persistence instructions that forbids the failure, and its proof: each
candidate is an edit of the source lines (add a flush of the lost store's line, a fence, both; add
them before the store that depends on it; move an existing fence above that store; make that store
the commit of a two-step update: persist what came before, publish, persist the publication),
applied to every execution of those lines in the traced history (crashsim/trace_edit.py). The
edited trace is simulated and every crash state of the history is checked again, with the same
runner, oracle and judge as fuzzing (the lazy strategy, so one execution per class of states). A
candidate under which every state passes is a fix proven for that history. Candidates are tried
in order: the fewest instructions, then an edit at the lost store's own code before one at the
store that depends on it (the fix names the cause), then the latest; within a budget of
candidates and seconds. An edit is named by source lines, so the same edit can be proven on the
next failing histories of the bug too (`prove`).

A finding that is not about ordering gets no fix search: no crash state (a crash-free run's
logic error), no lost store, a leak, a crash inside recovery, or a failure the same operations
show without any crash (harness/check/without_crash.py). Never builds records or reports.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from crashsim.explore import explore
from crashsim.runner_client import Stopped
from crashsim.trace import Event, Trace
from crashsim.trace_edit import TraceEdit, fence_event, flush_events
from harness.check.crash_oracle import SequentialOracle
from harness.check.findings import Finding, site_key
from harness.check.judging import HistoryJudge
from harness.check.session import Session
from harness.core.budget import OutOfTime

# candidates tried per finding, and seconds spent, before the search says it found none
MAX_CANDIDATES = 32
MAX_SECONDS = 60.0
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
    anchor    file:line the edit goes at (before or after it)
    other     a second line the edit names (persist-before, move-fence); for flush-after and
              persist-after, "call": ANCHOR is the line that called (inlined) the function
              holding the store, and the edit goes after that call returned; else ""
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
                "persist-after": 2, "persist-before": 2, "flush-object": 2, "commit": 4}[self.kind]

    def as_json(self) -> dict:
        file, _, line = self.anchor.rpartition(":")
        return {"kind": self.kind, "file": file, "line": int(line or 0), "where": self.where,
                "other": self.other}


@dataclass
class Candidate:
    edits: tuple[Edit, ...]
    rank: int            # 0: at the lost store's own code; 1: at the store that depends on it
    position: float      # the edit's event index in the failing history (later is preferred)

    @property
    def key(self) -> tuple:
        return (sum(e.instructions for e in self.edits), len(self.edits), self.rank, -self.position)


@dataclass
class FixResult:
    """What the search found for one finding: the proven edits (none: not found), the histories
    they were proven for and those they were not, how many candidates it tried and how long."""
    edits: tuple[Edit, ...] = ()
    statements: list[str] = field(default_factory=list)
    proven_for: list[list[str]] = field(default_factory=list)      # histories, op texts
    failed_for: list[list[str]] = field(default_factory=list)
    tried: int = 0
    rejected: list[str] = field(default_factory=list)                # candidates a state still failed
    seconds: float = 0.0
    complete: bool = True           # every legal state of each history was checked (no sampled point)
    reason: str = ""                # without edits: why none
    # the candidates after the one found, not tried: the next to try when the fix fails on
    # another history of the bug (harness/run/fix_checks.py)
    remaining: list[tuple[Edit, ...]] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.edits)


def about_ordering(f: Finding) -> bool:
    """F is a crash state that loses stores and fails for it (the module doc says which not)."""
    return (f.point is not None and f.recovery_of is None and f.cls != "leak" and not f.expected
            and bool(f.lost) and f.without_crash is None)


# -- building the edits on a trace ----------------------------------------------------------

def _keys(trace: Trace) -> list[str]:
    """file:line of every event (a store or flush inside a header helper: its caller's line)."""
    cache: dict[int, str] = {}
    out = []
    for ev in trace.events:
        k = cache.get(ev.site)
        if k is None:
            k = cache[ev.site] = site_key(trace, ev.site)
        out.append(k)
    return out


def _calls_at(trace: Trace, ev: Event) -> str | None:
    s = trace.site(ev.site)
    return f"{s.inlined_file}:{s.inlined_line}" if s is not None and s.inlined_line else None


def _is_pm_store(ev: Event) -> bool:
    return ev.kind in STORES and ev.region is not None


def _calls(trace: Trace) -> list[str | None]:
    """file:line of the call each event's code was inlined at (None: not inlined)."""
    return [_calls_at(trace, ev) for ev in trace.events]


def _after_calls(trace: Trace, e: Edit, out: TraceEdit) -> None:
    """E (flush-after or persist-after "call") at every execution of the call at its anchor: after
    the last event of each run of events inlined there, the lines its stores wrote flushed."""
    calls, ev = _calls(trace), trace.events
    i = 0
    while i < len(ev):
        if calls[i] != e.anchor:
            i += 1
            continue
        j = i
        while j + 1 < len(ev) and calls[j + 1] == e.anchor:
            j += 1
        flushes: dict[int, Event] = {}
        for x in ev[i:j + 1]:
            if _is_pm_store(x):
                for f in flush_events(trace, x, x.site):
                    flushes.setdefault(f.addr, f)
        if flushes:
            last = ev[j]
            out.insert_after(j, [flushes[a] for a in sorted(flushes)])
            if e.kind == "persist-after":
                out.insert_after(j, [fence_event(last.tid, last.site, last.seq)])
        i = j + 1


def _flush_objects(trace: Trace, keys: list[str], e: Edit, out: TraceEdit) -> None:
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
        elif _is_pm_store(x):
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
            out.insert_before(i, [Event(x.seq, x.tid, "flush", "clwb", line, ls, b"", x.site, 0, None)
                                  for line in lines])


def trace_edit(trace: Trace, edits: tuple[Edit, ...]) -> TraceEdit:
    """EDITS applied to every execution of their lines in TRACE."""
    keys = _keys(trace)
    ev = trace.events
    out = TraceEdit()
    for e in edits:
        if e.kind in ("flush-after", "persist-after") and e.other == "call":
            _after_calls(trace, e, out)
        elif e.kind in ("flush-after", "persist-after"):
            for i, x in enumerate(ev):
                if keys[i] == e.anchor and _is_pm_store(x):
                    out.insert_after(i, flush_events(trace, x, x.site))
                    if e.kind == "persist-after":
                        out.insert_after(i, [fence_event(x.tid, x.site, x.seq)])
        elif e.kind == "flush-object":
            _flush_objects(trace, keys, e, out)
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
                if not _is_pm_store(x):
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


# -- the candidates -------------------------------------------------------------------------

def candidates(trace: Trace, f: Finding) -> list[Candidate]:
    """The edits that could forbid F's failing state, in the order they are tried."""
    ev = trace.events
    keys = _keys(trace)
    crash = f.point.event
    ls = trace.line_size
    out: dict[tuple[Edit, ...], Candidate] = {}

    def add(edits: tuple[Edit, ...], rank: int, position: float) -> None:
        if edits not in out:
            out[edits] = Candidate(edits, rank, position)

    lost_sites: list[tuple[str, int]] = []
    for p in f.lost:
        k = keys[p.seq]
        if k != "?" and all(k != s for s, _ in lost_sites):
            lost_sites.append((k, p.seq))
    # the stores the failure needs persisted: the ones that depend on what was lost
    deps: list[tuple[str, int]] = []
    for p in list(f.needed) + list(f.needed_early):
        k = keys[p.seq]
        if k != "?" and all(k != s for s, _ in deps) and all(k != s for s, _ in lost_sites):
            deps.append((k, p.seq))
    for s_key, s in lost_sites:
        x = ev[s]
        line = x.addr - x.addr % ls
        flush_at = next((j for j in range(s + 1, min(crash + 1, len(ev)))
                         if ev[j].kind == "flush" and ev[j].tid == x.tid and ev[j].addr == line), None)
        fence_at = next((j for j in range(s + 1, min(crash + 1, len(ev)))
                         if ev[j].kind == "fence" and ev[j].tid == x.tid and ev[j].sub in FENCES), None)
        if flush_at is not None and keys[flush_at] != "?":
            add((Edit("fence-after", keys[flush_at]),), 0, flush_at)
        fenced = fence_at is not None or (f.point.kind == "fence" and crash < len(ev) and ev[crash].tid == x.tid)
        if fence_at is not None and keys[fence_at] != "?":
            # the fence that should have made it durable: flush the whole object before it
            add((Edit("flush-object", keys[fence_at], s_key),), 0, fence_at)
        if fenced:
            add((Edit("flush-after", s_key),), 0, s)
        add((Edit("persist-after", s_key),), 0, s)
        # the store is in a function inlined into its caller: the edit may go after the call
        # instead, in the function that decides to persist (a helper used elsewhere stays as it is)
        site = trace.site(x.site)
        call = f"{site.inlined_file}:{site.inlined_line}" if site is not None and site.inlined_line else None
        if call is not None and call != s_key:
            end = s
            while end + 1 < len(ev) and _calls_at(trace, ev[end + 1]) == call:
                end += 1
            # (after the call returns is later than after the store inside it)
            if fenced:
                add((Edit("flush-after", call, "call"),), 0, end + 0.5)
            add((Edit("persist-after", call, "call"),), 0, end + 0.5)
        for d_key, d in deps:
            if d < s:
                continue
            if flush_at is not None and flush_at < d:
                add((Edit("fence-before", d_key),), 1, d)
            add((Edit("persist-before", d_key, s_key),), 1, d)
            g = next((j for j in range(d + 1, len(ev)) if ev[j].kind == "fence" and ev[j].tid == ev[d].tid
                      and ev[j].sub in FENCES), None)
            if g is not None and keys[g] != "?" and keys[g] != d_key:
                add((Edit("move-fence", d_key, keys[g]),), 1, d)
            add((Edit("commit", d_key),), 1, d)
    if len(lost_sites) > 1:
        add(tuple(Edit("persist-after", k) for k, _ in lost_sites), 0, max(s for _, s in lost_sites))
    return sorted(out.values(), key=lambda c: c.key)


# -- proving --------------------------------------------------------------------------------

def passes(session: Session, trace: Trace, oracle: SequentialOracle, edits: tuple[Edit, ...]
           ) -> tuple[bool, bool, str]:
    """Whether every crash state of TRACE with EDITS passes ORACLE's judgement (leaks are bugs of
    their own and not counted): (passes, every legal state was checked, the first failure)."""
    edited = trace_edit(trace, edits).apply(trace)
    first_op = next((i for i, ev in enumerate(edited.events) if ev.kind == "op_begin"
                     and ev.addr == getattr(oracle.ops, "load", 0)), len(edited.events))
    runner = session.runner(trace)
    s = session.settings
    strategy = "lazy" if runner.lazy_supported else s.strategy
    judge = HistoryJudge(session, edited, oracle)
    per_point: dict[int, list[int]] = {}
    gen = explore(edited, options=s.options(), strategy=strategy, limit=s.limit, seed=s.seed, runner=runner,
                  followup=oracle.follow_text, first_state=session.free_state_id(), start_event=first_op,
                  stop=session.budget.expired, relocatable=session.structure.own_pool)
    try:
        for out in gen:
            session.next_state = out.id + 1
            entry = per_point.setdefault(out.point.index, [out.point.legal, 0])
            entry[1] += getattr(out, "covers", 1)
            bad = [x for x in judge.judge(out) if x.cls != "leak" and not x.expected]
            if bad or judge.unchecked:
                return False, False, bad[0].detail if bad else "a verdict could not be reached"
    finally:
        gen.close()
        if not runner.closed:
            runner.flush()      # answers of states queued before an early return, not wanted
    return True, all(seen >= legal for legal, seen in per_point.values()), ""


def search_fix(session: Session, trace: Trace, oracle: SequentialOracle, f: Finding,
               max_candidates: int = MAX_CANDIDATES, max_seconds: float = MAX_SECONDS) -> FixResult | None:
    """The first candidate (in candidates' order) under which every crash state of F's history
    passes, or a result saying none was found; None for a finding not about ordering."""
    if not about_ordering(f):
        return None
    t0 = time.monotonic()
    result = FixResult()
    history = [oracle.model.op_text(op) for op in oracle.ops]
    cands = candidates(trace, f)
    for n, c in enumerate(cands):
        if result.tried >= max_candidates or time.monotonic() - t0 > max_seconds:
            result.reason = (f"no candidate passed within the budget ({result.tried} of {len(cands)} "
                             f"tried, {max_candidates} candidates / {max_seconds:.0f} s)")
            break
        result.tried += 1
        try:
            ok, complete, why = passes(session, trace, oracle, c.edits)
        except (Stopped, OutOfTime):
            result.reason = f"the run's time ran out after {result.tried - 1} candidates"
            break
        if ok:
            result.edits, result.complete = c.edits, complete
            result.statements = [statement(trace, e) for e in c.edits]
            result.proven_for.append(history)
            result.remaining = [x.edits for x in cands[n + 1:]]
            break
        result.rejected.append(f"{describe(c.edits)}: {why}")
    else:
        if not result.found:
            result.reason = f"none of the {len(cands)} candidates forbids every failing state"
    result.seconds = time.monotonic() - t0
    return result


def prove(session: Session, trace: Trace, oracle: SequentialOracle, edits: tuple[Edit, ...]) -> bool | None:
    """Whether EDITS (found on another history) make every crash state of this one pass; None
    when the run's time ran out first."""
    try:
        return passes(session, trace, oracle, edits)[0]
    except (Stopped, OutOfTime):
        return None


# -- saying it ------------------------------------------------------------------------------

_CALL = re.compile(r"^\s*(?:[A-Za-z_][\w.>-]*)\s*\(\s*([^,()]+(?:\([^()]*\))?[^,()]*)\s*,")
_ASSIGN = re.compile(r"^\s*(?:[\w\s\*]+\s+)?([\w\[\]\.\->\*\s]+?)\s*(?:[-+*/|&^]?=)(?!=)")


def _source_line(key: str) -> str:
    file, _, line = key.rpartition(":")
    try:
        return Path(file).read_text(errors="replace").splitlines()[int(line) - 1]
    except (OSError, ValueError, IndexError):
        return ""


def address_of(text: str) -> str:
    """The address a source line stores to, guessed from its text: the first argument of a call
    statement (`store8(slot, ref)`), or `&` the left side of an assignment; ADDR when neither."""
    m = _CALL.match(text)
    if m:
        return m.group(1).strip()
    m = _ASSIGN.match(text)
    if m:
        lhs = m.group(1).strip().lstrip("*").strip()
        return f"&{lhs}" if lhs else "ADDR"
    return "ADDR"


def _object_size(trace: Trace | None, e: Edit) -> str:
    """The size of the object a flush-object edit flushes at its first execution in TRACE."""
    if trace is None:
        return "SIZE"
    edit = TraceEdit()
    _flush_objects(trace, _keys(trace), e, edit)
    for i in sorted(edit.before):
        lines = edit.before[i]
        return str(len(lines) * trace.line_size)
    return "SIZE"


def statement(trace: Trace | None, e: Edit) -> str:
    """The C statement(s) the edit adds, for people (x86 intrinsics; the structure's own persist
    helper does the same)."""
    addr = address_of(_source_line(e.anchor))
    if e.kind == "flush-after":
        return f"_mm_clwb({addr});"
    if e.kind == "fence-after" or e.kind == "fence-before":
        return "_mm_sfence();"
    if e.kind == "persist-after":
        return f"_mm_clwb({addr}); _mm_sfence();"
    if e.kind == "persist-before":
        return f"_mm_clwb({address_of(_source_line(e.other))}); _mm_sfence();"
    if e.kind == "flush-object":
        size = _object_size(trace, e)
        obj = address_of(_source_line(e.anchor))
        return (f"for (size_t o = 0; o < {size}; o += {trace.line_size if trace else 64}) "
                f"_mm_clwb((char *){obj} + o);  /* the whole object, not one line */")
    if e.kind == "move-fence":
        return f"{_source_line(e.other).strip() or '_mm_sfence();'}  /* moved from {e.other} */"
    return (f"/* persist what this store publishes */ _mm_sfence();  ...  "
            f"_mm_clwb({addr}); _mm_sfence();")


def describe(edits: tuple[Edit, ...]) -> str:
    """The edits in words: `add a flush after wort.c:81`."""
    words = {"flush-after": "add a flush of the stored line after", "fence-after": "add a fence after",
             "persist-after": "add a flush and a fence after", "flush-after call": "add a flush of the "
             "lines it stored after the call at", "persist-after call": "add a flush of the lines it stored "
             "and a fence after the call at", "fence-before": "add a fence before",
             "persist-before": "add a flush of {other} and a fence before",
             "move-fence": "move the fence of {other} before",
             "flush-object": "flush every line of the new object ({other} stores into it) before the fence at",
             "commit": "persist what is written before it, then it (a commit), at"}
    return "; ".join(f"{words[e.kind + (' call' if e.other == 'call' else '')].format(other=e.other)} {e.anchor}"
                     for e in edits)


__all__ = ["Candidate", "Edit", "FixResult", "about_ordering", "address_of", "candidates", "describe",
           "passes", "prove", "search_fix", "statement", "trace_edit"]
