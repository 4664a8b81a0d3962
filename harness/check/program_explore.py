"""Program mode's search over one trace: every crash point, the states a strategy picks there, each
judged by the program's own commands (harness/check/program_check.py), failing states shrunk to
their fewest lost stores, and the kept stores they need named.

Owns the loop and its counts (crash points, legal and explored states, points sampled), the image
cache (a state whose image equals one already judged gets that verdict without running anything),
and when to shrink (harness/check/program_shrink.py: a failing state with as few lost stores as
one unit at a time can show, a local minimum). A failing state whose lost stores
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
from crashcheck.harness.check.engines import STRATEGY, Sections, engine_states, repeated_by_next
from crashcheck.harness.check.program_check import ImageChecker, Verdict
from crashcheck.harness.check.program_reads import Reads
from crashcheck.harness.check.program_shrink import needed, shrink
from crashcheck.harness.check.reads_cache import DROPPED, ReadsCache
from crashcheck.harness.core import defaults
from crashcheck.harness.core.budget import Budget, OutOfTime


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
    unshrunk: bool = False              # --budget ran out while shrinking it: (partly) as found


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
    points_unchecked: int = 0         # crash points inside NoReorderNoCheck sections (engines)
    points_repeated: int = 0          # crash points the next one repeats with more markers (engines)
    points_left_by_budget: int = 0    # crash points --budget left no time for (not in crash_points)
    points_cut_by_budget: int = 0     # crash points the budget ended in the middle (partial, sampled)
    unshrunk: int = 0                 # findings the budget left (partly) unshrunk
    points_left_by_stop: int = 0      # crash points after the first failing state (stop_on_failure)


def point_strategy(sections: Sections | None, cp: CrashPoint, strategy: str, lazy_ok: bool) -> str:
    """How CP is checked: the run's STRATEGY, or the engine in force there (engines.STRATEGY);
    lazy becomes bounded when the commands' reads cannot be followed (not LAZY_OK)."""
    engine = sections.engine_for(cp.event, not cp.units) if sections is not None else None
    how = STRATEGY[engine] if engine is not None else strategy
    return "bounded" if how == "lazy" and not lazy_ok else how


@dataclass
class Pick:
    """The states a crash point's strategy chose, and what they cover."""
    states: list[tuple[int, ...]]
    weight: dict[tuple[int, ...], int]     # lazy: a state's class size (its occurrences if it fails)
    explored: int
    lazy_executions: int | None = None     # lazy points: the states its search judged
    cut: bool = False                      # --budget ended it: STATES are those judged before


# (image fingerprint, the commands' extra environment) -> verdict, and the commands' reads (lazy:
# None when not trusted); one image under other markers may be judged otherwise
Verdicts = dict[tuple[int, str], tuple[Verdict, "list[Reads] | None"]]


def _pick(cp: CrashPoint, how: str, image, run, plans: dict, offsets, limit: int, seed: int) -> Pick:
    """The states HOW checks at CP; lazy judges them on the way (RUN: choice -> (verdict, reads))."""
    lazy = how == "lazy"
    plan = LazyPlan(cp, image, plans) if lazy and cp.legal > EAGER_BELOW else None
    if plan is not None and plan.feasible:
        states: list[tuple[int, ...]] = []

        def judged(c: tuple[int, ...]):
            got = run(c, True)[1]     # (OutOfTime: not judged, not among the states)
            states.append(c)
            return got
        outcome = program_lazy.search(plan, offsets, limit, judged)
        # a failing execution fails for every state of its class: they are its occurrences
        weight = {leaf.choice: leaf.covers for leaf in outcome.leaves}
        explored = outcome.covered
        if outcome.cut:
            return Pick(states, weight, min(cp.legal, explored + outcome.unknown), outcome.executions, cut=True)
        if not outcome.complete(cp.legal):
            # partial: the bounded sample's states no class covers, one by one
            leaves = outcome.leaves
            extra = [tuple(c) for c in select(cp, "bounded", limit, seed)
                     if not any(leaf.contains(c) for leaf in leaves)]
            states += extra
            explored = min(cp.legal, explored + outcome.unknown + len(extra))
        return Pick(states, weight, explored, outcome.executions)
    if how in ("in-order", "prefixes", "suffixes"):
        states = engine_states(cp, how)
        return Pick(states, {}, len(states))
    how = "bounded" if lazy else how
    return Pick([tuple(c) for c in select(cp, how, limit, seed)], {}, explored_count(cp, how, limit, seed))


@dataclass
class Prejudged:
    """Worker processes' share of a run (--jobs): each point's pick, and the verdicts they ran."""
    picks: dict[int, Pick] = field(default_factory=dict)
    verdicts: Verdicts = field(default_factory=dict)
    executions: int = 0


def explore(trace: Trace, checker: ImageChecker, **kw) -> tuple[list[ProgramFinding], ExploreStats]:
    """Judge the states a strategy picks at every crash point: _walk() below, its findings and counts."""
    findings, stats, _ = _walk(trace, checker, **kw)
    return findings, stats


def _walk(trace: Trace, checker: ImageChecker, *, options: ModelOptions, strategy: str, limit: int,
          seed: int, on_point: Callable[[ExploreStats, int], None] | None = None,
          sections: Sections | None = None, share: tuple[int, int] | None = None,
          prejudged: Prejudged | None = None, budget: Budget | None = None, stop_on_failure: bool = False
          ) -> tuple[list[ProgramFinding], ExploreStats, Prejudged]:
    """Judge the states STRATEGY picks at every crash point of TRACE; the shrunk findings and counts.
    ON_POINT(stats, findings so far) is called after each crash point. Lazy (the checker's
    reads logged: checker.log_reads) searches each point by what the commands read
    (harness/check/program_lazy.py); a point it cannot finish gets the bounded sample's states
    its classes did not cover. SECTIONS (the run's pmreorder markers) give the commands
    PMREORDER_MARKERS and, when engines were configured, choose each point's states instead of
    STRATEGY (a NoReorderNoCheck point is not checked, nor counted among the crash points).

    --jobs: a worker passes SHARE (k, n): it picks and judges the states of the k-th of n runs
    of consecutive points, and neither shrinks nor counts (prejudge() returns what it ran); the
    parent passes PREJUDGED, the workers' picks and verdicts, and walks every point as one process
    would, running only what they did not (shrinking): the findings are those of one process.

    --budget (BUDGET): no state is judged past its soft deadline (the command in flight is killed
    there, ImageChecker.deadline) and no shrinking past its hard one; the point in flight is
    partial (`points_cut_by_budget`, among the sampled), the points after it are left
    (`points_left_by_budget`, not among `crash_points`), a failing state found is kept, shrunk as
    far as time allowed (`unshrunk`). A worker stops at the soft deadline too; the parent walks
    the points its workers picked and leaves the others.

    STOP_ON_FAILURE (--stop-on-failure, the run's verdict alone): the first failing state is
    shrunk and becomes the one finding; the states after it at its point and the points after it
    are not judged (`points_left_by_stop`: those that would have been checked)."""
    sim = Simulator.from_trace(trace, options)
    stats = ExploreStats()
    findings: list[ProgramFinding] = []
    verdicts: Verdicts = dict(prejudged.verdicts) if prejudged else {}
    # a failing image (and its markers) -> its finding: those bytes failing at a later point (a
    # settled point after a second fence) are that finding again, not a cause of their own
    failed: dict[tuple[int, str], ProgramFinding] = {}
    plans: dict = {}                        # LazyPlan's cache of group contents across points
    cache = ReadsCache(defaults.from_env("reads_cache_mb") << 20)   # the verdicts' reads, bounded
    offsets = checker.layout.offsets
    picks: dict[int, Pick] = {}
    stats.executions = prejudged.executions if prejudged else 0
    # a worker's share is a run of consecutive points (neighbours repeat each other's images)
    total = sim.count_crash_points() if share is not None else 0
    over = [False]                          # --budget: no new state is judged any more
    stopped = False                         # stop_on_failure: a finding was made

    def search_over() -> bool:
        if not over[0] and budget is not None and budget.search_over():
            over[0] = True
        return over[0]

    def wanted(i: int) -> bool:             # a point left by the budget needs no pending units
        return not over[0] or (prejudged is not None and i in prejudged.picks)

    engines = sections is not None and sections.configured

    def unchecked_at(event: int) -> bool:
        # a point in a NoReorderNoCheck section, whether or not anything is pending there, needs
        # no pending units: building them cost most of the walk over a long unchecked part (the
        # 2,100-operation transaction before #5461's commit: 4,700 points, 4,200 lines pending)
        return all(STRATEGY.get(sections.engine_for(event, settled)) == "unchecked" for settled in (False, True))

    for cp in sim.crash_points(wanted=wanted if budget is not None else None,
                               unwanted_at=unchecked_at if engines else None):
        how = point_strategy(sections, cp, strategy, checker.log_reads)
        if how == "unchecked":
            stats.points_unchecked += 1
            continue
        if engines and repeated_by_next(trace.events, cp, sections):
            stats.points_repeated += 1
            continue
        if stopped:
            stats.points_left_by_stop += 1
            continue
        if share is not None and cp.index * share[1] // total != share[0]:
            continue
        if prejudged is not None and cp.index not in prejudged.picks or prejudged is None and search_over():
            stats.points_left_by_budget += 1     # (a worker's point it had no time for)
            continue
        checker.env = sections.env(cp.event) if sections is not None else {}
        env_key = repr(sorted(checker.env.items()))
        codec = StateCodec(cp, sim.image)

        def run(choice: tuple[int, ...], need_reads: bool = False) -> tuple[Verdict, list[Reads] | None]:
            fp, blob = codec.encode(choice)
            key = (fp, env_key)
            got = verdicts.get(key)
            if got is None or need_reads and got[1] is DROPPED:     # (dropped: judged again for them)
                v = checker.check(sim.image.base, decode_writes(blob), cp.fp)
                stats.executions += 1
                reads = checker.last_reads
                trusted = reads if reads is not None and all(r.ok for r in reads) else None
                got = verdicts[key] = v, (cache.keep(key, trusted, verdicts) if checker.log_reads else trusted)
            elif need_reads:
                cache.touch(key)
            return got

        def judge(choice: tuple[int, ...]) -> Verdict:
            return run(choice)[0]

        if budget is not None:
            checker.deadline = budget.soft
        pick = prejudged.picks[cp.index] if prejudged else _pick(cp, how, sim.image, run, plans, offsets, limit, seed)
        if share is not None:
            for n, choice in enumerate(pick.states):
                try:
                    judge(tuple(choice))
                except OutOfTime:
                    over[0] = True
                    pick = _cut(cp, pick, pick.states[:n])
                    break
            picks[cp.index] = pick
            if pick.cut:
                over[0] = True       # (the points after it come as left: no units)
            continue
        states, weight = pick.states, pick.weight
        cut = pick.cut

        for n, choice in enumerate(states):
            if budget is not None:
                checker.deadline = budget.soft
            try:
                v = judge(tuple(choice))
            except OutOfTime:
                pick, cut = _cut(cp, pick, states[:n]), True
                break
            if v.ok:
                continue
            image_key = (codec.encode(tuple(choice))[0], env_key)
            lost = frozenset(p.seq for p in cp.lost(choice))
            known = failed.get(image_key)
            if known is None or known.verdict.cls != v.cls:
                known = next((f for f in findings if f.verdict.cls == v.cls and f.lost_seqs and f.lost_seqs <= lost), None)
            times = weight.get(tuple(choice), 1)
            if known is not None:
                known.occurrences += times
                failed[image_key] = known
                continue
            if budget is not None:
                checker.deadline = budget.hard      # shrinking has the reserve up to the hard deadline
            small, sv, unshrunk = shrink(cp, tuple(choice), v, judge)
            lost_small = cp.lost(small)
            seqs = frozenset(p.seq for p in lost_small)
            same = next((f for f in findings if f.verdict.cls == sv.cls and f.lost_seqs == seqs
                         and (seqs or f.point.index == cp.index)), None)
            if same is not None:
                same.occurrences += times
                failed[image_key] = same
                continue
            need = needed(cp, small, judge) if not unshrunk else []
            stats.unshrunk += unshrunk
            findings.append(ProgramFinding(cp, small, sv, list(lost_small), cp.kept(small),
                                           (cp.legal, pick.explored), times, seqs, need, unshrunk))
            failed[image_key] = failed[codec.encode(small)[0], env_key] = findings[-1]
            if stop_on_failure and share is None:
                stopped = True
                if n + 1 < len(states):      # the point's states judged up to here: partial
                    pick = _cut(cp, pick, states[:n + 1])
                break
        if cut:
            over[0] = True
            if not pick.states:          # the budget ended it before any state was judged: left
                stats.points_left_by_budget += 1
                continue
            stats.points_cut_by_budget += 1
        stats.crash_points += 1
        stats.states_legal += cp.legal
        if pick.lazy_executions is not None:
            stats.lazy_points += 1
            stats.lazy_executions += pick.lazy_executions
            stats.lazy_legal += cp.legal
        stats.states_explored += pick.explored
        stats.points_sampled += pick.explored < cp.legal
        if on_point is not None:
            on_point(stats, len(findings))
    checker.deadline = None
    return findings, stats, Prejudged(picks, verdicts, stats.executions)


def _cut(cp: CrashPoint, pick: Pick, judged: list) -> Pick:
    """PICK of CP cut by the budget after the states JUDGED: what they cover."""
    if pick.cut and len(judged) == len(pick.states):
        return pick
    weight = pick.weight
    explored = min(cp.legal, sum(weight.get(tuple(c), 1) for c in judged))
    return Pick(list(judged), weight, explored, pick.lazy_executions, cut=True)


def prejudge(trace: Trace, checker: ImageChecker, share: tuple[int, int], **kw) -> Prejudged:
    """A worker's share of explore() (--jobs): its points' picks and the verdicts it ran."""
    return _walk(trace, checker, share=share, **kw)[2]


def merge(parts: list[Prejudged]) -> Prejudged:
    out = Prejudged()
    for part in parts:
        out.picks.update(part.picks)
        out.verdicts.update(part.verdicts)
        out.executions += part.executions
    return out


def image_at(trace: Trace, options: ModelOptions, index: int, choice: tuple[int, ...], checker: ImageChecker,
             sections: Sections | None = None) -> tuple[CrashPoint, Verdict] | None:
    """Judge one crash state again (replay): crash point INDEX, state CHOICE, the commands told
    the markers SECTIONS had emitted by then. None when the trace has no such crash point or the
    choice does not fit it."""
    sim = Simulator.from_trace(trace, options)
    for cp in sim.crash_points(wanted=lambda i: i == index):
        if cp.index != index:
            continue
        if len(choice) != len(cp.units) or any(not 0 <= k < u.choices for k, u in zip(choice, cp.units)):
            return None
        _, blob = StateCodec(cp, sim.image).encode(choice)
        checker.env = sections.env(cp.event) if sections is not None else {}
        return cp, checker.check(sim.image.base, decode_writes(blob))
    return None


__all__ = ["ExploreStats", "Pick", "Prejudged", "ProgramFinding", "explore", "image_at", "merge", "prejudge", "shrink"]
