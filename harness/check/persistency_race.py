"""Persistency races in a threaded trace (HawkSet's pairs), each confirmed or not by a crash.

Owns, for a threaded trace whose loads were logged (a thread-safe tree's traced driver is built
with them; docs/scheduler.md "Concurrent checking"):
  - `find_pairs`: each load of a PM word whose latest store is another thread's and not yet
    durable at that load, followed, while that store is still pending, by an action of the loading
    thread that depends on what it read: a store of its own operation that becomes durable, or
    the return of its operation (its result goes to its caller). One pair per (store site, load
    site), the first in the trace.
  - `confirm`: at the earliest crash point after that action where the first store is still
    pending, the image that loses it (every other pending piece kept), recovered and judged by
    durable linearizability (the threaded oracle). A pair whose image fails is a finding of class
    `persistency-race` with that image, the history and the schedule; one whose image passes
    is a warning (the structure copes: a redo log, a reader that does not act on it), never a bug.
    A confirmed pair is named by the word whose loss fails: of the other threads' pending stores
    the reader's operation loaded before acting, the last loaded whose loss alone fails the check
    (a version or lock word met first names it only when no data word's loss fails alone).

"Depends" is approximated as HawkSet does: any later durable store of the loading operation, or
its return. Under eADR there is no such pair: a store another thread can read has left its
store buffer, and caches are persistent, so it is durable (crashsim's eADR rule keeps a thread's
stores pending until its own drain point, which a load by another thread does not end; pairs
found there would be the model's, not the program's).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, replace

from crashcheck.crashsim.persistency import ModelOptions, split_points
from crashcheck.crashsim.simulate import CrashPoint, Simulator
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.core import defaults
from crashcheck.harness.core.paths import display

CLASS = "persistency-race"
UNCONFIRMED = "unconfirmed persistency race"   # how the warning of a pair its crash did not confirm starts
# pairs confirmed per history at most (each is one recovery)
MAX_CONFIRM = 4
# other pending words a confirmed race's reader loaded, tried alone to name it by (each one recovery)
NAMING_TRIES = 3


@dataclass(frozen=True)
class Pair:
    """A persistency race: thread STORE_TID's store (trace event STORE_EVENT, site STORE_SITE) of
    the word at ADDR, read by thread LOAD_TID (event LOAD_EVENT, site LOAD_SITE) in its operation
    OP while not durable, then ACTION ("return" or "durable store", at event ACTION_EVENT) while
    still pending; POINT is the earliest crash point after the action where it is still pending."""
    store_event: int
    store_tid: int
    store_site: int
    load_event: int
    load_tid: int
    load_site: int
    addr: int
    op: int | None
    action: str
    action_event: int
    point: int

    def sites(self, trace: Trace) -> tuple[str, str]:
        return site_text(trace, self.store_site), site_text(trace, self.load_site)

    def describe(self, trace: Trace) -> str:
        store, load = self.sites(trace)
        then = ("its operation returned what it read" if self.action == "return"
                else f"made a store of its own durable ({site_text(trace, trace.events[self.action_event].site)})")
        return (f"thread {self.load_tid} loaded the word at 0x{self.addr:x} at {load} (trace event "
                f"{self.load_event}) that thread {self.store_tid} stored at {store} (event {self.store_event}) "
                f"and had not made durable, then {then} while that store was still pending")


def site_text(trace: Trace, site: int) -> str:
    """SITE as the access's own line, file:line; inside a function inlined into another (an
    `insert` inlined at -O2, HART's load8 / store8, persist.h) followed by the line it was
    inlined at, and each line that one was inlined at in turn, up to the function the code ended
    up in: `N.cpp:165 (inlined at N.cpp:300, at N.cpp:402)` (a trace before version 4 knows one
    of them). Two accesses of one inlined function called from two lines stay apart, and the
    store a user looks for is the line named first."""
    s = trace.site(site)
    if s is None:
        return "?"
    own = f"{display(s.file)}:{s.line}" if s.line else display(s.file) or "?"
    if s.inlined:
        return f"{own} (inlined at {', at '.join(_frame_place(f) for f in s.inlined)})"
    if s.inlined_line:
        return f"{own} (inlined at {display(s.inlined_file)}:{s.inlined_line})"
    return own


def _frame_place(frame: str) -> str:
    """An inline chain's frame, `file:line in function`, as `file:line` with the file shortened."""
    place = frame.rsplit(" in ", 1)[0]
    path, _, line = place.rpartition(":")
    return f"{display(path)}:{line}" if path else place


def find_pairs(trace: Trace, options: ModelOptions | None = None, start_event: int = 0,
               only: tuple[int, int] | None = None) -> list[Pair]:
    """The persistency races of TRACE (a threaded trace with loads logged) after event START_EVENT
    (the load phase before it is set-up), one per (store site, load site), in trace order; with
    ONLY, just that (store site, load site) pair's (a writer aim's run, race_confirm.py). A store
    still pending at the trace's end is never a race: it is a lost-durable-write whoever reads it
    (the crash states show it), not something another thread's load made worse."""
    options = options or ModelOptions()
    if options.model == "eadr" or not any(ev.kind == "load" for ev in trace.events):
        return []
    unit = options.atomic_unit
    events = trace.events
    sim = Simulator.from_trace(trace, options)
    # every crash point's event and its pending pieces, by (store event, part)
    points: list[tuple[int, int, frozenset]] = []
    for cp in sim.crash_points(skip_before=start_event):
        points.append((cp.index, cp.event, frozenset((p.seq, p.part) for u in cp.units for p in u.pieces)))
    at = [ev for _, ev, _ in points]
    never = points[-1][2] if points else frozenset()     # still pending when the trace ends
    latest: dict[int, tuple[int, int, int]] = {}     # word -> (store event, part, thread)
    current: dict[int, int] = {}                     # thread -> operation in flight
    begun: dict[int, int] = {}                       # operation -> op_begin event
    ended: dict[int, int] = {}                       # operation -> op_end event
    for i, ev in enumerate(events):
        if ev.kind == "op_end":
            ended.setdefault(ev.addr, i)
    pairs: list[Pair] = []
    seen: set[tuple[int, int]] = set()
    for i, ev in enumerate(events):
        kind = ev.kind
        if kind in ("store", "ntstore"):
            for part, (a, _) in enumerate(split_points(ev.addr, ev.size, unit)):
                latest[a // unit] = (i, part, ev.tid)
        elif kind == "op_begin":
            current[ev.tid] = ev.addr
            begun.setdefault(ev.addr, i)
        elif kind == "op_end":
            current.pop(ev.tid, None)
        elif kind == "load" and i >= start_event and ev.tid in current:
            k = bisect.bisect_left(at, i)
            if k == len(points):
                continue
            pending = points[k][2]
            for a, _ in split_points(ev.addr, ev.size, unit):
                st = latest.get(a // unit)
                if st is None or st[2] == ev.tid or (st[0], st[1]) not in pending or (st[0], st[1]) in never:
                    continue
                key = (events[st[0]].site, ev.site)
                if key in seen or (only is not None and key != only):
                    break
                pair = _action(trace, points, k, i, st, current[ev.tid], ended, a - a % unit, unit)
                if pair is not None:
                    seen.add(key)
                    pairs.append(pair)
                break
    return pairs


def _action(trace: Trace, points, k: int, load: int, st: tuple[int, int, int], op: int,
            ended: dict[int, int], addr: int, unit: int) -> Pair | None:
    """The pair of the load at event LOAD of store ST in operation OP, if the loading thread acts
    on it while ST is pending: the earliest crash point (from POINTS[K] on) where ST is still
    pending and either OP has returned or a store of OP after the load is durable."""
    events = trace.events
    tid = events[load].tid
    end = ended.get(op)
    stop = end if end is not None else len(events)
    own = [j for j in range(load + 1, stop) if events[j].kind in ("store", "ntstore") and events[j].tid == tid]
    unit_parts = {j: len(split_points(events[j].addr, events[j].size, unit)) for j in own}
    for index, event, pending in points[k:]:
        if (st[0], st[1]) not in pending:
            return None            # durable before the loading thread acted on it: harmless
        if end is not None and end < event:
            return _pair(trace, st, load, op, addr, "return", end, index)
        for j in own:
            if j < event and not any((j, p) in pending for p in range(unit_parts[j])):
                return _pair(trace, st, load, op, addr, "durable store", j, index)
    return None


def _pair(trace: Trace, st, load: int, op: int, addr: int, action: str, action_event: int, point: int) -> Pair:
    events = trace.events
    return Pair(st[0], st[2], events[st[0]].site, load, events[load].tid, events[load].site, addr, op,
                action, action_event, point)


def confirm(session, trace: Trace, oracle, pairs: list[Pair]) -> tuple[list, list[str]]:
    """Each of the first MAX_CONFIRM PAIRS confirmed by its crash (see the module note): the
    findings of those whose image fails ORACLE (a ThreadedOracle), and a warning line for each
    of the others."""
    from crashcheck.harness.check.crash_states import point_at, state_checker
    from crashcheck.harness.check.findings import Finding
    findings: list = []
    warnings: list[str] = []
    for pair in pairs[:MAX_CONFIRM]:
        cp = point_at(session, trace, pair.point)
        choice = losing_choice(cp, pair.store_event)
        if choice is None:
            continue
        check = state_checker(session, trace, cp.index, oracle.follow_text(cp))
        [res] = check([choice])
        v = oracle.verdict(cp, res)
        if v.checked and not v.ok:
            pair, choice, res, v = _failing_word(trace, cp, oracle, check, pair, choice, res, v,
                                                 session.settings.atomic_unit)
        store, load = pair.sites(trace)
        if v.checked and not v.ok:
            detail = (f"{pair.describe(trace)}; a crash at crash point {cp.index} that loses that store: "
                      f"{v.detail}")
            findings.append(Finding(CLASS, detail, (CLASS, f"{store} -> {load}"), point=cp, choice=choice,
                                    verdict=v, result=res))
        elif v.checked:
            warnings.append(f"{UNCONFIRMED}: store at {store} (thread {pair.store_tid}) read "
                            f"at {load} (thread {pair.load_tid}) before it was durable; the crash that "
                            f"loses it (crash point {cp.index}) recovers to a state durable "
                            "linearizability allows")
    return findings, warnings


def _failing_word(trace: Trace, cp: CrashPoint, oracle, check, pair: Pair, choice, res, v,
                  unit: int = defaults.ATOMIC_UNIT):
    """The word a confirmed race is named by: of the other threads' stores still pending at CP that
    the reader's operation loaded before it acted, the last loaded whose loss alone fails the
    check (at most NAMING_TRIES more recoveries), else PAIR's own: a reader that loads a version or
    lock word first and then the data is named by the data its result came from, not by the
    word it happened to meet first. PAIR, CHOICE, RES and V are the confirmed crash's; returns
    them, or the named word's. Words are UNIT bytes (the failure-atomic unit), as find_pairs's."""
    events = trace.events
    latest: dict[int, int] = {}         # word -> latest store event
    loaded: list[tuple[int, int]] = []  # (load event, store event) of the reader's operation
    inside = False
    for i in range(min(pair.action_event, len(events))):
        ev = events[i]
        if ev.kind in ("store", "ntstore"):
            for a, _ in split_points(ev.addr, ev.size, unit):
                latest[a // unit] = i
        elif ev.kind == "op_begin" and ev.tid == pair.load_tid:
            inside = ev.addr == pair.op
        elif ev.kind == "load" and inside and ev.tid == pair.load_tid:
            st = latest.get(ev.addr // unit)
            if st is not None and events[st].tid != pair.load_tid and st != pair.store_event:
                loaded.append((i, st))
    tried: set[int] = set()
    for li, st in reversed(loaded):
        if st in tried or len(tried) >= NAMING_TRIES:
            continue
        tried.add(st)
        other = losing_choice(cp, st)
        if other is None:
            continue
        [r] = check([other])
        w = oracle.verdict(cp, r)
        if w.checked and not w.ok:
            ev = events[st]
            named = replace(pair, store_event=st, store_tid=ev.tid, store_site=ev.site, load_event=li,
                            load_site=events[li].site, addr=events[li].addr)
            return named, other, r, w
    return pair, choice, res, v


def losing_choice(cp: CrashPoint, store_event: int) -> tuple[int, ...] | None:
    """The choice at CP that loses the pending pieces of the store at STORE_EVENT (and, as the
    unit's order demands, what its unit holds after them) and keeps every other pending piece;
    None if that store has nothing pending at CP."""
    choice = []
    hit = False
    for u in cp.units:
        first = next((n for n, p in enumerate(u.pieces) if p.seq == store_event), None)
        if first is None:
            choice.append(u.choices - 1)
            continue
        hit = True
        if u.orders is None:
            choice.append(first)
        else:
            # the largest legal choice keeping none of the store's pieces
            lose = {n for n, p in enumerate(u.pieces) if p.seq == store_event}
            best = max((c for c, kept in enumerate(u.orders) if not lose & set(kept)),
                       key=lambda c: len(u.orders[c]))
            choice.append(best)
    return tuple(choice) if hit else None


__all__ = ["CLASS", "MAX_CONFIRM", "UNCONFIRMED", "Pair", "confirm", "find_pairs", "losing_choice", "site_text"]
