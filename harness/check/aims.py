"""Aimed schedules: where a threaded run's trace says two threads met on a PM word, a schedule
that holds one of them right there.

Owns, for a threaded trace whose loads were logged (a thread-safe tree's traced driver):
  - `conflicts`: each load of a PM word by one thread that another thread stores later in the same
    run (a word read and then changed under the reader's feet, had the reader been slower), as
    the reader's thread, the load's site and its ordinal among that thread's loads at that site.
  - `pick`: a few of them, spread over distinct (load site, store site) pairs, drawn from the
    history's own scheduler seed, each turned into the scheduler's `aim:SEED:THREAD:SITE:NTH:OPS`
    spec (docs/scheduler.md): the same threads, with the reader parked before that load until
    the others have ended OPS operations.

Why: a random walk or PCT preempts at random points, and stale parks after a random fraction of
accesses to words others wrote before; a window one scheduling point wide (a lookup stopped after
its last re-check, while another thread frees its leaf and a third reallocates and refills it:
Heart's free-no-epoch) is hit in about 1 of 60 such histories by any of them. The checked run
already shows the reader's load and the other thread's store of the same word; parking the
reader before that load and letting the store's operation and the next ones run is the
interleaving the store could break. `first_failing` runs the picked specs crash-free after a
clean threaded run (harness/check/pipeline.py); the first that fails is the history's outcome.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.findings import HistoryOutcome
from crashcheck.harness.check.threads import Threaded, make_threaded
from crashcheck.harness.core.errors import SetupError

WORD = 8
# aimed runs per clean threaded history: each costs one crash-free run (no crash states)
PER_HISTORY = 3
# the others' operations a parked reader waits for: the store's own, and one or two after it (a
# free, then the allocation that reuses the memory)
OPS = (1, 2, 3, 3)
# aimed runs at one (load site, store site) pair in one lane of a run's batches, at most
SATURATED = 12
# histories whose picks a checker keeps (a batch of a few hundred, its shrinking, its replays)
MEMO = 4096


@dataclass(frozen=True)
class Conflict:
    """Thread TID's NTH load at SITE (trace event LOAD_EVENT) read a word that thread STORE_TID
    stored afterwards (event STORE_EVENT, site STORE_SITE)."""
    tid: int
    site: int
    nth: int
    load_event: int
    store_tid: int
    store_site: int
    store_event: int


def conflicts(trace: Trace, start_event: int = 0) -> list[Conflict]:
    """The loads of TRACE from event START_EVENT (the threads' start) whose word another thread
    stores later, each with the first such store; in trace order."""
    events = trace.events
    nth: dict[tuple[int, int], int] = {}
    # word -> (thread, site) -> the latest such load not yet overwritten by another thread: one
    # entry per reader and site keeps a spinning reader's thousands of loads from piling up
    waiting: dict[int, dict[tuple[int, int], tuple[int, int]]] = {}
    found: list[Conflict] = []
    for i in range(start_event, len(events)):
        ev = events[i]
        if ev.kind == "load":
            key = (ev.tid, ev.site)
            nth[key] = nth.get(key, 0) + 1
            for w in _words(ev):
                waiting.setdefault(w, {})[key] = (i, nth[key])
        elif ev.kind in ("store", "ntstore"):
            for w in _words(ev):
                loads = waiting.get(w)
                if not loads:
                    continue
                for (tid, site), (li, n) in list(loads.items()):
                    if tid != ev.tid:
                        found.append(Conflict(tid, site, n, li, ev.tid, ev.site, i))
                        del loads[(tid, site)]
    found.sort(key=lambda c: c.load_event)
    # one load may conflict with several words of a store: one entry per load
    seen: set[int] = set()
    return [c for c in found if not (c.load_event in seen or seen.add(c.load_event))]


def _words(ev) -> range:
    return range(ev.addr // WORD, (ev.addr + max(ev.size, 1) - 1) // WORD + 1)


def pick(found: list[Conflict], seed: int, n: int = PER_HISTORY,
         aimed_before: dict[tuple, int] | None = None,
         pair_of: Callable[[Conflict], tuple] = lambda c: (c.site, c.store_site)) -> list[str]:
    """Up to N aim specs for FOUND, drawn by SEED: each from a different (load site, store site)
    pair, those aimed at least often before (AIMED_BEFORE: the lane's record, which this updates) first,
    at random among equals; then a random load of that pair and a number of operations. A
    history meets on a handful of pairs, most of them the same in every history (a slot's CAS
    read by a lookup); the bug's may be a rare one (Heart's free-no-epoch: a lookup's read of a
    leaf that an update then frees, in 1 of 127 drawn histories), so a pair new to the run
    goes first: the feedback of new conflicting pairs, kept by the search instead of Hypothesis
    (whose `target()` optimiser starts only after more valid examples than a batch has). A pair
    is PAIR_OF's (the Aimer's: the two sites' places, crashcheck.crashsim.trace.Site.place)."""
    rng = random.Random(seed)
    by_pair: dict[tuple, list[Conflict]] = {}
    for c in found:
        by_pair.setdefault(pair_of(c), []).append(c)
    pairs = sorted(by_pair)
    rng.shuffle(pairs)
    if aimed_before is not None:
        # a pair aimed at SATURATED times already has shown what holding that reader does: the
        # runs go to rarer pairs, and a run's aimed runs dwindle as its histories repeat pairs
        pairs = [p for p in pairs if aimed_before.get(p, 0) < SATURATED]
        pairs.sort(key=lambda p: aimed_before.get(p, 0))
    specs = []
    for pair in pairs[:n]:
        if aimed_before is not None:
            aimed_before[pair] = aimed_before.get(pair, 0) + 1
        c = rng.choice(by_pair[pair])
        specs.append(f"aim:{rng.randrange(2 ** 32)}:{c.tid}:{c.site}:{c.nth}:{rng.choice(OPS)}")
    return specs


def seed_of(sched: str) -> int:
    """The seed of a scheduler setting (`random:SEED`, `pct:SEED:...`, `stale:SEED:...`): the aims
    of a history are drawn from it, so the same history and setting aim the same way."""
    parts = sched.split(":")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def aimed(ops: Threaded, spec: str, prefix: str | None = None) -> Threaded:
    """OPS with its operations and threads, run under the aim SPEC (a writer aim's with PREFIX:
    the schedule file of OPS's clean run, replayed up to the aimed store)."""
    load = list(ops)[:ops.load]
    out = make_threaded(load, [ops.section(t) for t in range(1, ops.nthreads + 1)], spec)
    out.prefix = prefix
    return out


def worth_aiming(ops: Threaded, trace: Trace) -> bool:
    """Whether a clean run of OPS calls for aimed runs: a drawn schedule (not a replay, not
    already an aim) whose trace logged loads (a thread-safe tree's traced driver)."""
    return ops.schedule is None and not ops.sched.startswith("aim:") and trace.loads


class Aimer:
    """The aims of one checker's histories, per lane of batches (harness/run/config.py: what a
    batch does depends only on its lane's earlier batches, so --jobs changes nothing): which pairs
    the lane aimed at so far (`pick`'s feedback), the pairs its clean runs showed (the adaptive
    operation count's signal, harness/run/search.py), and each history's picks, kept, so that the
    same history checked again (a determinism probe, Hypothesis replaying an example) is aimed the
    same way. `lane` is set by the search before each batch."""

    def __init__(self) -> None:
        self.lane = 0
        self.aimed_before: dict[int, dict[tuple, int]] = {}
        self.seen: dict[int, set[tuple]] = {}
        self.picked: dict[tuple, list[str]] = {}

    def specs(self, ops: Threaded, trace: Trace, start_event: int) -> list[str]:
        """The aim specs of OPS, whose clean run left TRACE (its threads' part from START_EVENT)."""
        key = (self.lane, ops.sched, ops.load, ops.thread_of, tuple(repr(op) for op in ops))
        if key not in self.picked:
            if len(self.picked) >= MEMO:
                self.picked.clear()
            found = conflicts(trace, start_event)

            # pairs of places, not of sites: a site's inline chain (trace version 4) splits one
            # place into a site per path of calls to it, which would make every batch show
            # "new" pairs and keep the lanes' histories short (harness/run/lane_ops.py)
            def pair_of(c: Conflict) -> tuple:
                return trace.place(c.site), trace.place(c.store_site)
            self.seen.setdefault(self.lane, set()).update(pair_of(c) for c in found)
            self.picked[key] = pick(found, seed_of(ops.sched), PER_HISTORY, self.aimed_before.setdefault(self.lane, {}),
                                    pair_of)
        return self.picked[key]

    def pairs_seen(self, lane: int) -> int:
        """The distinct (load site, store site) pairs the clean runs of LANE's batches showed."""
        return len(self.seen.get(lane, ()))


def first_failing(check: Callable[[Threaded], HistoryOutcome], ops: Threaded, specs: list[str],
                  name: str) -> tuple[HistoryOutcome | None, int, str]:
    """Run OPS crash-free (CHECK) under each aim of SPECS: the outcome of the first that fails
    (None if all pass), the number of runs, and a warning when the driver of structure NAME does
    not know the aim strategy (built by a crashcheck before it: aimed runs are extra, so the run
    goes on without them; "" otherwise)."""
    runs = 0
    for spec in specs:
        runs += 1
        try:
            out = check(aimed(ops, spec))
        except SetupError as exc:
            if "CRASHCHECK_SCHED=aim:" not in str(exc):
                raise
            return None, runs, (f"aimed runs off: the driver of {name} was built by an older crashcheck whose "
                                f"scheduler has no aim strategy; rebuild it (crashcheck build {name} ...) to have them")
        if out.findings:
            return out, runs, ""
    return None, runs, ""
