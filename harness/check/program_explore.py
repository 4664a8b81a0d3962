"""Program mode's search over one trace: every crash point, the states a strategy picks there, each
judged by the program's own commands (harness/check/program_check.py), failing states shrunk to
their fewest lost stores, and the kept stores they need named.

Owns the loop and its counts (crash points, legal and explored states, points sampled), the image
cache (a state whose image equals one already judged gets that verdict without running anything),
and shrinking: a failing state first lets each pending unit persist whole while the failure stays
the same class, then keeps the longest prefix of each unit still losing stores; the result loses
as few stores as one unit at a time can show (a local minimum). A failing state whose lost stores
include every lost store of a finding already shrunk (same class) is counted as that finding's
occurrence without being shrunk again. Returns findings; never builds records (harness/triage).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from crashcheck.crashsim.image import decode_writes
from crashcheck.crashsim.lazy import EAGER_BELOW, LazyPlan
from crashcheck.crashsim.persistency import ModelOptions, Piece
from crashcheck.crashsim.simulate import CrashPoint, Simulator
from crashcheck.crashsim.states import StateCodec, explored_count, select
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import program_lazy
from crashcheck.harness.check.program_check import ImageChecker, Verdict
from crashcheck.harness.check.program_reads import Reads


@dataclass
class ProgramFinding:
    """One shrunk failing crash state (and how many failing states it stands for)."""
    point: CrashPoint
    choice: tuple[int, ...]
    verdict: Verdict
    lost: list[Piece]
    kept: list[Piece]
    coverage: tuple[int, int]           # (legal, explored) at its crash point
    occurrences: int = 1
    lost_seqs: frozenset[int] = field(default_factory=frozenset)
    needed: list[Piece] = field(default_factory=list)   # kept stores the failure needs (lose one: it passes)


@dataclass
class ExploreStats:
    crash_points: int = 0
    states_legal: int = 0
    states_explored: int = 0
    points_sampled: int = 0
    executions: int = 0               # states whose commands ran (not answered from the cache)
    lazy_points: int = 0              # crash points searched by the commands' reads (lazy)
    lazy_executions: int = 0          # the states those searches judged
    lazy_legal: int = 0               # the legal states of those points


def _full(cp: CrashPoint) -> list[int]:
    return [u.choices - 1 for u in cp.units]


def shrink(cp: CrashPoint, choice: tuple[int, ...], verdict: Verdict,
           judge: Callable[[tuple[int, ...]], Verdict]) -> tuple[tuple[int, ...], Verdict]:
    """CHOICE (failing with VERDICT) with as few lost stores as one unit at a time can keep failing
    the same way (see the module note)."""
    full = _full(cp)
    cur = list(choice)
    for j in range(len(cur)):
        if cur[j] == full[j]:
            continue
        trial = cur.copy()
        trial[j] = full[j]
        v = judge(tuple(trial))
        if verdict.same(v):
            cur, verdict = trial, v
    for j, unit in enumerate(cp.units):
        if cur[j] == full[j] or unit.orders is not None:
            continue          # (a memset's unordered subsets have no "longer prefix" order)
        for k in range(full[j] - 1, cur[j], -1):
            trial = cur.copy()
            trial[j] = k
            v = judge(tuple(trial))
            if verdict.same(v):
                cur, verdict = trial, v
                break
    return tuple(cur), verdict


# Pending units tried when looking for the kept stores a failure needs (each try runs the commands).
NEEDED_TRIES = 16


def needed(cp: CrashPoint, choice: tuple[int, ...], judge: Callable[[tuple[int, ...]], Verdict]) -> list[Piece]:
    """The kept stores of CHOICE that the failure needs: each unit's last kept store whose loss
    makes the state pass (a failure that loses nothing is caused by what did persist: a change
    published too early, a change its transaction never logged)."""
    out = []
    tries = 0
    for j, unit in enumerate(cp.units):
        if choice[j] == 0 or unit.orders is not None:
            continue
        if tries == NEEDED_TRIES:
            break
        tries += 1
        trial = list(choice)
        trial[j] -= 1
        if judge(tuple(trial)).ok:
            out.append(unit.pieces[choice[j] - 1])
    return out


def explore(trace: Trace, checker: ImageChecker, *, options: ModelOptions, strategy: str, limit: int,
            seed: int, on_point: Callable[[ExploreStats, int], None] | None = None
            ) -> tuple[list[ProgramFinding], ExploreStats]:
    """Judge the states STRATEGY picks at every crash point of TRACE; the shrunk findings and counts.
    ON_POINT(stats, findings so far) is called after each crash point. Lazy (the checker's
    reads logged: checker.log_reads) searches each point by what the commands read
    (harness/check/program_lazy.py); a point it cannot finish gets the bounded sample's states
    its classes did not cover."""
    sim = Simulator.from_trace(trace, options)
    stats = ExploreStats()
    findings: list[ProgramFinding] = []
    # image fingerprint -> verdict, and the commands' reads (lazy: None when not trusted)
    verdicts: dict[int, tuple[Verdict, list[Reads] | None]] = {}
    lazy = strategy == "lazy"
    plans: dict = {}                        # LazyPlan's cache of group contents across points
    offsets = checker.layout.offsets

    for cp in sim.crash_points():
        codec = StateCodec(cp, sim.image)
        stats.crash_points += 1
        stats.states_legal += cp.legal

        def run(choice: tuple[int, ...]) -> tuple[Verdict, list[Reads] | None]:
            fp, blob = codec.encode(choice)
            got = verdicts.get(fp)
            if got is None:
                stats.executions += 1
                v = checker.check(sim.image.base, decode_writes(blob))
                reads = checker.last_reads
                got = verdicts[fp] = v, (reads if reads is not None and all(r.ok for r in reads) else None)
            return got

        def judge(choice: tuple[int, ...]) -> Verdict:
            return run(choice)[0]

        plan = LazyPlan(cp, sim.image, plans) if lazy and cp.legal > EAGER_BELOW else None
        if plan is not None and plan.feasible:
            states: list[tuple[int, ...]] = []
            outcome = program_lazy.search(plan, offsets, limit, lambda c: (states.append(c), run(c)[1])[1])
            # a failing execution fails for every state of its class: they are its occurrences
            weight = {leaf.choice: leaf.covers for leaf in outcome.leaves}
            stats.lazy_points += 1
            stats.lazy_executions += outcome.executions
            stats.lazy_legal += cp.legal
            explored = outcome.covered
            if not outcome.complete(cp.legal):
                # partial: the bounded sample's states no class covers, one by one
                leaves = outcome.leaves
                extra = [tuple(c) for c in select(cp, "bounded", limit, seed)
                         if not any(leaf.contains(c) for leaf in leaves)]
                states += extra
                explored = min(cp.legal, explored + outcome.unknown + len(extra))
        else:
            weight = {}
            states = select(cp, "bounded" if lazy else strategy, limit, seed)
            explored = explored_count(cp, "bounded" if lazy else strategy, limit, seed)
        stats.states_explored += explored
        stats.points_sampled += explored < cp.legal

        for choice in states:
            v = judge(tuple(choice))
            if v.ok:
                continue
            lost = frozenset(p.seq for p in cp.lost(choice))
            known = next((f for f in findings if f.verdict.cls == v.cls and f.lost_seqs and f.lost_seqs <= lost), None)
            times = weight.get(tuple(choice), 1)
            if known is not None:
                known.occurrences += times
                continue
            small, sv = shrink(cp, tuple(choice), v, judge)
            lost_small = cp.lost(small)
            seqs = frozenset(p.seq for p in lost_small)
            same = next((f for f in findings if f.verdict.cls == sv.cls and f.lost_seqs == seqs
                         and (seqs or f.point.index == cp.index)), None)
            if same is not None:
                same.occurrences += times
                continue
            findings.append(ProgramFinding(cp, small, sv, list(lost_small), cp.kept(small),
                                           (cp.legal, explored), times, seqs, needed(cp, small, judge)))
        if on_point is not None:
            on_point(stats, len(findings))
    return findings, stats


def image_at(trace: Trace, options: ModelOptions, index: int, choice: tuple[int, ...], checker: ImageChecker
             ) -> tuple[CrashPoint, Verdict] | None:
    """Judge one crash state again (replay): crash point INDEX, state CHOICE. None when the trace
    has no such crash point or the choice does not fit it."""
    sim = Simulator.from_trace(trace, options)
    for cp in sim.crash_points(wanted=lambda i: i == index):
        if cp.index != index:
            continue
        if len(choice) != len(cp.units) or any(not 0 <= k < u.choices for k, u in zip(choice, cp.units)):
            return None
        _, blob = StateCodec(cp, sim.image).encode(choice)
        return cp, checker.check(sim.image.base, decode_writes(blob))
    return None


__all__ = ["ExploreStats", "ProgramFinding", "explore", "image_at", "shrink"]
