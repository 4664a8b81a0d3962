"""Persistency-race candidates from one threaded execution: every PM store's persist window and
the loads of its bytes by other threads that nothing orders outside it.

Owns `candidates(trace, options, start_event)`: for each store of the threads' part of TRACE (a
threaded trace whose loads were logged), its persist window, from the store to the fence that
makes it durable (x86-ADR: a flush of its line, then a fence of the flushing thread; a
non-temporal store: its thread's next fence); then each load of its bytes by another thread
that could read the store while it is still pending, in this interleaving or in another one:
  - not after the window by happens-before: no chain of synchronisation from the persisting
    fence's thread to the load (thread spawn and join, an atomic store or read-modify-write of a
    PM word read by the other thread; the load's own word excepted: a load that read a later
    value of the word, such as the CAS that cleans a published word after its flush, could have
    read the store in another interleaving);
  - not before the store by happens-before (the same relation, the other way);
  - no common lock: the loading thread holds no lock that the storing thread held from the store
    through the persisting fence (two read holds of one rwlock do not exclude each other).
Locks are a lockset, never happens-before: ordering two critical sections as this schedule
happened to order them would hide a window another schedule opens. The runtime marks lock
acquisitions and releases, spawns and joins (`cc-sync` marks, docs/scheduler.md) in threaded
traces with loads. A store never made durable before the trace ends is no race: it is a
`lost-durable-write` whatever the threads do, and the crash states show it.

A load is paired with the store it read, up to EARLIER-1 other threads' stores of the word before
that one (back to its own thread's latest store), and each other thread's next store after it.
One candidate per (store site, load place: the load's site without its inline chain, so of a
line reached through several inlined calls the first load, as one site was before trace version
4: a `seen()` that reads a word and then, clean, reads it again inside `help()` is one reader
that decides on the first load), preferring a load that fell inside the window in this very
run; each carries what an aim needs to reproduce it (the writer's NTH store at its site,
harness/check/race_confirm.py). `Stats` is the analysis's own cost and counts, for the results.

The published tools (HawkSet, Vardalith) analyse one execution in this spirit; this is our own
reading of a crashcheck trace, at 8-byte words and with crashcheck's own marks.
"""
from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.trace import Trace

WORD = 8
ATOMIC_ORIGINS = frozenset({"atomic", "rmw", "cmpxchg"})
SYNC = "cc-sync "
# stores of a word before a load of it that the load is paired with, at most (the latest first)
EARLIER = 4


@dataclass(frozen=True)
class Candidate:
    """Thread STORE_TID's NTH store at STORE_SITE (event STORE_EVENT) of the word at ADDR, durable
    at PERSIST_EVENT, and thread LOAD_TID's load of it at LOAD_SITE (event LOAD_EVENT), unordered
    against that window; IN_WINDOW: the load fell inside it in this run."""
    store_event: int
    store_tid: int
    store_site: int
    store_nth: int
    load_event: int
    load_tid: int
    load_site: int
    addr: int
    persist_event: int
    in_window: bool
    # operations the threads ended between the store and the load in this run (a load after the
    # window may come several operations later: the writer aim waits for at least that many)
    ops_between: int = 0

    @property
    def key(self) -> tuple[int, int]:
        return self.store_site, self.load_site


@dataclass
class Stats:
    """What one analysis saw and cost (seconds as a float; counts are ints)."""
    stores: int = 0
    loads: int = 0
    never_durable: int = 0        # stores still pending at the trace's end: lost-durable-write's
    pairs: int = 0                # (durable store, load) pairs of different threads looked at
    dropped_hb: int = 0
    dropped_lock: int = 0
    candidates: int = 0
    seconds: float = 0.0

    def add(self, other: "Stats") -> None:
        for f in ("stores", "loads", "never_durable", "pairs", "dropped_hb", "dropped_lock", "candidates"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.seconds += other.seconds


@dataclass
class _Store:
    event: int
    tid: int
    site: int
    nth: int
    clock: dict                   # the storing thread's vector clock at the store
    locks: dict                   # lock -> (acquisition, mode) held at the store
    persist: int | None = None
    persist_tid: int = -1
    persist_epoch: int = 0
    window_locks: frozenset = field(default_factory=frozenset)   # (lock, mode) held through the window


def _join(a: dict, b: dict) -> None:
    for k, v in b.items():
        if a.get(k, 0) < v:
            a[k] = v


def candidates(trace: Trace, options: ModelOptions | None = None, start_event: int = 0
               ) -> tuple[list[Candidate], Stats]:
    """The candidates of TRACE from event START_EVENT (the threads' part; see the module note)
    and the analysis's stats."""
    t0 = time.perf_counter()
    options = options or ModelOptions()
    stats = Stats()
    if options.model == "eadr" or not any(ev.kind == "load" for ev in trace.events):
        # eADR: a store another thread can read has left its store buffer, so it is durable
        stats.seconds = time.perf_counter() - t0
        return [], stats
    line = trace.line_size or 64
    events = trace.events
    vc: dict[int, dict[int, int]] = {}            # thread -> vector clock
    spawned: dict[int, dict[int, int]] = {}       # thread -> its creator's clock at the spawn
    word_rel: dict[int, dict[int, int]] = {}      # PM word -> clocks released into it by atomics
    held: dict[int, dict[int, tuple[int, str]]] = {}   # thread -> lock -> (acquisition event, mode)
    pending: dict[int, list[_Store]] = {}         # line -> stores not flushed yet
    flushed: dict[int, list[_Store]] = {}         # thread -> stores its flushes wait on a fence for
    nth: dict[tuple[int, int], int] = {}
    stores_of: dict[int, list[_Store]] = {}       # word -> the threads' stores, in trace order
    all_stores: list[_Store] = []
    loads: list[tuple[int, int, int, dict, dict]] = []   # (event, tid, word, clock, locks)

    def clock(tid: int) -> dict[int, int]:
        c = vc.get(tid)
        if c is None:
            c = vc[tid] = {tid: 1}
            if tid in spawned:
                _join(c, spawned.pop(tid))
        return c

    def release(tid: int) -> None:
        clock(tid)[tid] += 1

    for i, ev in enumerate(events):
        kind, tid = ev.kind, ev.tid
        c = clock(tid)
        if kind == "mark":
            if not ev.data.startswith(b"cc-sync "):
                continue
            parts = ev.data.decode("ascii", "replace").split()
            if len(parts) != 3 or not parts[2].isdigit():
                continue
            what, n = parts[1], int(parts[2])
            if what == "spawn":
                spawned[n] = dict(c)
                release(tid)
            elif what == "join" and n in vc:
                _join(c, vc[n])
            elif what in ("acq", "racq"):
                held.setdefault(tid, {})[n] = (i, "r" if what == "racq" else "w")
            elif what == "rel":
                held.get(tid, {}).pop(n, None)
            continue
        if kind in ("store", "ntstore"):
            if ev.sub in ATOMIC_ORIGINS:
                for w in _words(ev.addr, ev.size):
                    _join(word_rel.setdefault(w, {}), c)
            if i >= start_event:
                key = (tid, ev.site)
                nth[key] = nth.get(key, 0) + 1
                st = _Store(i, tid, ev.site, nth[key], dict(c), dict(held.get(tid, {})))
                all_stores.append(st)
                for w in _words(ev.addr, ev.size):
                    stores_of.setdefault(w, []).append(st)
                if kind == "ntstore":
                    flushed.setdefault(tid, []).append(st)
                else:
                    for ln in range(ev.addr // line, (ev.addr + max(ev.size, 1) - 1) // line + 1):
                        pending.setdefault(ln, []).append(st)
            if ev.sub in ATOMIC_ORIGINS:
                release(tid)
        elif kind == "flush":
            waiting = pending.pop(ev.addr // line, None)
            if waiting:
                flushed.setdefault(tid, []).extend(waiting)
        elif kind == "fence":
            done = flushed.pop(tid, None)
            if done:
                mine = held.get(tid, {})
                for st in done:
                    if st.persist is None:
                        st.persist, st.persist_tid, st.persist_epoch = i, tid, c[tid]
                        # locks the writer held from the store through this fence
                        now = held.get(st.tid, {}) if st.tid != tid else mine
                        st.window_locks = frozenset((k, m) for k, (acq, m) in st.locks.items()
                                                    if now.get(k, (None,))[0] == acq)
        elif kind == "load" and i >= start_event:
            stats.loads += 1
            # the load's clock before it acquires from its own word: reading a later value of
            # that word orders nothing against an earlier store of it, which another
            # interleaving lets this load read instead (a CAS that publishes a dirty word, then
            # its flush, then the CAS that cleans it: a reader after the clean CAS could have
            # read the dirty one)
            before = dict(c)
            for w in _words(ev.addr, ev.size):
                if w in word_rel:            # a load of a word an atomic published: an acquire
                    _join(c, word_rel[w])
            loads.append((i, tid, ev.addr // WORD, before, {k: m for k, (_, m) in held.get(tid, {}).items()}))

    at_of = {w: [s.event for s in row] for w, row in stores_of.items()}
    op_ends = [i for i, ev in enumerate(events) if ev.kind == "op_end"]
    best: dict[tuple, Candidate] = {}
    for li, ltid, w, lclock, llocks in loads:
        row = stores_of.get(w)
        if not row:
            continue
        k = bisect.bisect_left(at_of[w], li)
        # the store this load read in this run (the latest before it) and the few other
        # threads' stores before that one (back to the loading thread's own latest store, which
        # hides earlier ones from it), and each other thread's next store after it: another
        # interleaving could have let it read any of them
        pick: list[_Store] = []
        for s in reversed(row[max(0, k - 64):k]):
            if s.tid == ltid or len(pick) == EARLIER:
                break
            pick.append(s)
        later: set[int] = set()
        for s in row[k:]:
            if s.tid != ltid and s.tid not in later:
                later.add(s.tid)
                pick.append(s)
        for s in pick:
            if s.persist is None:
                continue             # never durable: a lost-durable-write, not a race
            stats.pairs += 1
            if s.event < li:
                ordered = s.persist < li and lclock.get(s.persist_tid, 0) >= s.persist_epoch
                if s.persist_tid == ltid and s.persist < li:
                    ordered = True
            else:
                ordered = s.clock.get(ltid, 0) >= lclock.get(ltid, 0)
            if ordered:
                stats.dropped_hb += 1
                continue
            if any(lk in llocks and not (m == "r" and llocks[lk] == "r") for lk, m in s.window_locks):
                stats.dropped_lock += 1
                continue
            between = bisect.bisect_left(op_ends, li) - bisect.bisect_left(op_ends, s.event) if s.event < li else 0
            cand = Candidate(s.event, s.tid, s.site, s.nth, li, ltid, events[li].site, w * WORD,
                             s.persist, s.event < li < s.persist, between)
            at = (s.site, trace.place(cand.load_site))
            old = best.get(at)
            if old is None or (cand.in_window and not old.in_window):
                best[at] = cand
    stats.stores = len(all_stores)
    stats.never_durable = sum(1 for s in all_stores if s.persist is None)
    out = sorted(best.values(), key=lambda c: (not c.in_window, c.load_event))
    stats.candidates = len(out)
    stats.seconds = time.perf_counter() - t0
    return out, stats


def _words(addr: int, size: int) -> range:
    return range(addr // WORD, (addr + max(size, 1) - 1) // WORD + 1)


__all__ = ["Candidate", "Stats", "candidates"]
