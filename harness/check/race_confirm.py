"""Persistency-race candidates (harness/check/race_windows.py) confirmed, or not, by a writer aim
and a crash.

Owns, for the candidates of one clean threaded run:
  - `Confirmer.plan`: which to aim at (a few per history, those of a (store site, load site) pair
    aimed at least often in the lane first, none of a pair already confirmed or aimed at
    SATURATED times), each as the scheduler's writer aim
    `aim:SEED:WRITER:STORE_SITE:NTH:OPS:READER:LOAD_SITE` (docs/scheduler.md): the writer parked
    right after its NTH store at that site, before its flush, until the reader has loaded those
    bytes at the load site and ended its operation (OPS: the others' operations that wake it
    anyway);
  - `judge`: in the aimed run's trace, the pair as harness/check/persistency_race.py finds it (the
    reader loaded the pending store and acted: returned, or made a store of its own durable),
    confirmed by the crash at the earliest point where the store is still pending that loses it,
    judged by durable linearizability. Confirmed: a `persistency-race` finding. Otherwise a
    `Verdict` saying why not (the writer's store was not reached, the reader did not load it
    while pending, it loaded it and did not act before it was durable, or the crash that loses it
    recovers to an allowed state), which becomes a warning record, never a bug: no bug without a
    crash image.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import persistency_race
from crashcheck.harness.check.race_windows import Candidate

# writer aims per clean threaded history: each is one traced run (and at most one recovery), a
# small part of a history's crash states
PER_HISTORY = 3
# the others' operations that wake a parked writer whose reader never came
OPS = 4
MAX_OPS = 16
# writer aims at one (store site, load site) pair in one lane, at most: a pair none of them
# confirmed is then given up, with a warning saying why the last one did not
SATURATED = 4


@dataclass
class Verdict:
    """What a writer aim showed for CANDIDATE: FINDINGS (a confirmed race) or WHY not."""
    candidate: Candidate
    spec: str
    findings: list
    why: str = ""
    # how many of the pair's SATURATED aims this one used up: one whose run showed the pair
    # harmless (its crash recovers to an allowed state: another history's may not) or the
    # reader making the store durable before it acted (it helps) two, one whose schedule
    # missed the writer's store or the reader's load one (the next aim's schedule may not)
    cost: int = 1


def spec_of(c: Candidate, seed: int) -> str:
    """The writer aim of C (docs/scheduler.md): the writer waits for the others' OPS operations,
    or as many as ended between its store and the load in the run C came from, and one more (a
    load after the window may be several operations later), at most MAX_OPS."""
    ops = min(MAX_OPS, max(OPS, c.ops_between + 1))
    return f"aim:{seed}:{c.store_tid}:{c.store_site}:{c.store_nth}:{ops}:{c.load_tid}:{c.load_site}"


def with_prefix(c: Candidate, nth_aim: int) -> bool:
    """Whether the NTH_AIM-th aim at C's pair replays the clean run C came from up to the writer's
    store (CRASHCHECK_SCHED_PREFIX) before parking it: the store is then made in the very state
    of that run (lfhash's directory entry is published only by the first insert into a segment,
    which an aim with priorities of its own often gave to another thread or another operation).
    Only when C's store came before its load there (a prefix through an earlier load would carry
    the reader past it), and every other aim of the pair (1st, 3rd): the others keep the aim's
    own priorities, which reach windows that run's interleaving did not lead to."""
    return c.store_event < c.load_event and nth_aim % 2 == 1


class Confirmer:
    """The writer aims of one checker's histories: how often each pair was aimed at, which were
    confirmed, and the run's counts (candidates, confirmed, unreachable, the analysis's seconds)."""

    def __init__(self) -> None:
        self.aimed: dict[int, dict[tuple[int, int], int]] = {}    # lane -> pair -> aims so far
        self.lane = 0
        self.confirmed: set[tuple[int, int]] = set()
        self.picked: dict[tuple, list[tuple[Candidate, str, bool]]] = {}

    def plan(self, key: tuple, lane: int, found: list[Candidate], seed: int) -> list[tuple[Candidate, str, bool]]:
        """Up to PER_HISTORY (candidate, aim spec) of FOUND, drawn by SEED, for the history KEY
        (kept: the same history checked again, by a determinism probe or Hypothesis, is aimed the
        same way) in LANE (harness/check/aims.py's Aimer: --jobs changes nothing). A pair the
        clean run itself showed is aimed at too: one function's two CASes share a site when it is
        inlined, and the clean run's crash may have judged the harmless one."""
        if key in self.picked:
            return self.picked[key]
        if len(self.picked) >= 4096:
            self.picked.clear()
        self.lane = lane
        aimed = self.aimed.setdefault(lane, {})
        rng = random.Random(seed)
        fresh = [c for c in found if c.key not in self.confirmed and aimed.get(c.key, 0) < SATURATED]
        rng.shuffle(fresh)
        # pairs aimed at least often first; among them those whose load fell inside the window
        # in this very run (the reader does reach the store there)
        fresh.sort(key=lambda c: (aimed.get(c.key, 0), not c.in_window))
        out = []
        for c in fresh[:PER_HISTORY]:
            aimed[c.key] = aimed.get(c.key, 0) + 1
            out.append((c, spec_of(c, rng.randrange(2 ** 32)), with_prefix(c, aimed[c.key])))
        self.picked[key] = out
        return out


    def settle(self, v: Verdict) -> None:
        """Count V's aim against its pair as its cost says (one was counted when planned)."""
        aimed = self.aimed.setdefault(self.lane, {})
        aimed[v.candidate.key] = aimed.get(v.candidate.key, 0) + v.cost - 1

    def given_up(self, c: Candidate) -> bool:
        """Whether C's pair, not confirmed by this aim, has had its last (SATURATED aims in the lane)."""
        return c.key not in self.confirmed and self.aimed.get(self.lane, {}).get(c.key, 0) >= SATURATED


def judge(session, trace: Trace, oracle, options: ModelOptions, start_event: int, c: Candidate,
          spec: str) -> Verdict:
    """The verdict of C's writer aim SPEC, whose clean run left TRACE (ORACLE judges its crashes)."""
    pairs = persistency_race.find_pairs(trace, options, start_event, only=c.key)
    if pairs:
        findings, warnings = persistency_race.confirm(session, trace, oracle, pairs[:1])
        if findings:
            return Verdict(c, spec, findings)
        why = ("the crash that loses the store recovers to a state durable linearizability allows"
               if warnings else "no crash point holds the store pending after the reader acted")
        return Verdict(c, spec, [], why, 2 if warnings else 1)
    why, read = _why_not_read(trace, c, start_event)
    return Verdict(c, spec, [], why, 2 if read else 1)


def warning(trace: Trace, v: Verdict) -> str:
    """The warning line of a candidate V did not confirm: both sites (own lines, inline chain),
    both threads, and why not. It starts as persistency_race's unconfirmed pairs do, so the
    search keeps a bounded number of them (harness/run/search.py)."""
    c = v.candidate
    store = persistency_race.site_text(trace, c.store_site)
    load = persistency_race.site_text(trace, c.load_site)
    return (f"{persistency_race.UNCONFIRMED}: store at {store} (thread {c.store_tid}) and load at {load} "
            f"(thread {c.load_tid}), unordered in one run; with the writer held after its store: {v.why}")


def warning_record(trace: Trace, v: Verdict, ops, model, schedule: str | None) -> dict:
    """The warning of V as a record a user can inspect like a bug's (docs/bug-record.md
    "race_warnings"): both sites (their own lines, the line inlined at, the helper chain), both
    threads, why it was not confirmed, and the history with its threads and the aimed run's
    schedule, which `CRASHCHECK_SCHED=replay:FILE` runs again."""
    c = v.candidate

    def site(sid: int, tid: int) -> dict:
        s = trace.site(sid)
        return {**(s.as_dict() if s is not None else {}), "where": persistency_race.site_text(trace, sid),
                "thread": tid}

    store, load = site(c.store_site, c.store_tid), site(c.load_site, c.load_tid)
    return {"class": persistency_race.CLASS, "confirmed": False,
            "group": f"{store['where']} -> {load['where']}", "store": store, "load": load, "why": v.why,
            "history": [model.op_text(op) for op in ops], "thread_of": list(getattr(ops, "thread_of", ())),
            "load_ops": getattr(ops, "load", 0), "sched": v.spec, "schedule": schedule,
            # the pair as the trace names it, for `crashcheck replay RESULTS --warning N`
            "candidate": {"store_tid": c.store_tid, "store_site": c.store_site, "store_nth": c.store_nth,
                          "load_tid": c.load_tid, "load_site": c.load_site}}


def candidate_of(rec: dict) -> Candidate:
    """The candidate a warning record (warning_record) names, as judge takes it (its events and
    address are the aimed run's own, found again there)."""
    c = rec["candidate"]
    return Candidate(0, int(c["store_tid"]), int(c["store_site"]), int(c["store_nth"]), 0,
                     int(c["load_tid"]), int(c["load_site"]), 0, 0, False)


def _why_not_read(trace: Trace, c: Candidate, start_event: int) -> tuple[str, bool]:
    """Why the aimed run shows no pair for C: its writer's store never ran, the reader never
    loaded it while pending, or loaded it and did not act on it before it was durable; and
    whether the reader loaded it (the last case)."""
    events = trace.events
    nth = 0
    store = None
    for i in range(start_event, len(events)):
        ev = events[i]
        if ev.kind in ("store", "ntstore") and ev.tid == c.store_tid and ev.site == c.store_site:
            nth += 1
            if nth == c.store_nth:
                store = i
                break
    if store is None:
        return (f"the aimed run never reached the writer's store (thread {c.store_tid}'s store number "
                f"{c.store_nth} at that site): the schedule took another path"), False
    st = events[store]
    read = any(ev.kind == "load" and ev.tid == c.load_tid and ev.site == c.load_site
               and ev.addr < st.addr + st.size and st.addr < ev.addr + max(ev.size, 1)
               for ev in events[store + 1:])
    if not read:
        return ("with the writer held after its store, the reader never loaded those bytes at that "
                "site (another path, or it waits for something the writer does after its flush)"), False
    return ("the reader loaded the pending store but did not act on it (return, or a durable store "
            "of its own) before the store was durable"), True


__all__ = ["Confirmer", "candidate_of", "with_prefix", "OPS", "PER_HISTORY", "SATURATED", "Verdict", "judge", "spec_of", "warning", "warning_record"]
