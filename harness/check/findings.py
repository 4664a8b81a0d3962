"""What checking a history finds, and which findings are one bug.

Owns the Finding and HistoryOutcome records the checker modules fill in, the grouping rule
(`finding_group`: which findings are the same bug, whatever the history), the per-crash-point
coverage counts (explored vs legal states), and small conversions shared by the checker, records
and replay (a crash point in history terms, a runner answer as the oracle reads it). Never runs
anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crashcheck.crashsim.explore import StateOutcome
from crashcheck.crashsim.persistency import Piece
from crashcheck.crashsim.runner_client import CheckResult
from crashcheck.crashsim.simulate import CrashPoint
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.core.paths import HEADERS
from crashcheck.specs.model import Model
from crashcheck.specs.oracle import STOP_SIGNALS, HistoryPoint, Verdict, address_free

RECOVERY_CRASH_PREFIX = "crash during recovery, then recovery again: "


@dataclass
class Finding:
    """One failing crash state (or a failure of the crash-free run, with point None)."""
    cls: str
    detail: str
    group: tuple[str, str]               # (class, site key): findings alike are one bug
    expected: bool = False
    expected_reason: str = ""
    point: CrashPoint | None = None
    choice: tuple[int, ...] = ()
    verdict: Verdict | None = None
    result: CheckResult | None = None
    leaks: list[dict] = field(default_factory=list)
    occurrences: int = 1
    coverage: tuple[int, int] | None = None       # (legal, explored) at its crash point
    # A hang: the states of its crash point that hung its way (harness/check/hangs.py Hung), or None
    hung: Any = None
    # For a crash inside recovery: the original crash (its point index and choice) whose image
    # recovery was working on, and the trace of that recovery run (where `point` lives).
    recovery_of: tuple[int, tuple[int, ...]] | None = None
    recovery_trace: Trace | None = None
    history_point: HistoryPoint | None = None    # the original crash, in history terms
    op_index: int | None = None                  # crash-free run: the operation that died or hung
    # Other findings of the same crash state (an unexpected leak beside an invariant violation):
    # symptoms of this one, never bugs of their own (harness/triage/bugs.py).
    symptoms: list["Finding"] = field(default_factory=list)
    # After shrinking: its leak symptoms still shown with every store its state lost persisted
    # (harness/check/leak_apart.py), taken out of `symptoms`: findings of their own for the run.
    apart: list["Finding"] = field(default_factory=list)
    # After shrinking: the persisted pending pieces without which the state passes
    # (harness/check/state_shrink.py needed_pieces); with the lost ones, the stores that matter.
    needed: list[Piece] = field(default_factory=list)
    # After shrinking, when `needed` is empty inside an operation: the pieces the same failure
    # needs at the earliest crash point of the operation where it shows (state_shrink.py
    # earliest_needed): a store made durable before the crash that the failure hinges on.
    needed_early: list[Piece] = field(default_factory=list)
    # After shrinking, when it loses and needs nothing and no earlier point names a store either
    # (eADR: a CAS drained at once published a leaf before its key was written): the stores made
    # after its crash point that the failure lacks (state_shrink.py lacking_pieces), its cause.
    lacks: list[Piece] = field(default_factory=list)
    # For a crash inside recovery, after shrinking: the pieces the original crash lost (what
    # recovery was repairing when it crashed), in the history's trace.
    origin_lost: list[Piece] = field(default_factory=list)
    # A finding about stores without any crash state (code-pointer-in-pm): their trace events.
    stores: list[int] = field(default_factory=list)
    # After shrinking, for a state that loses and needs nothing and fails only after recovery: the
    # finding of the same operations run without any crash, when they fail the same way there
    # (harness/check/without_crash.py): the failure is that crash-free bug's.
    without_crash: "Finding | None" = None
    # A failure of a run without crash: the source lines of the stores its first failing operation
    # (the first to break a rule, else to answer wrong) made that no earlier one had (new_stores):
    # the code path where it went wrong, which harness/triage/bugs.py makes one bug.
    new_stores: tuple[str, ...] = ()
    # A failure of a run without crash: the rules it broke, without the operation its group
    # names (harness/check/crash_free.py op_rule): a rule broken after a crash joins the first
    # such run that broke it (harness/triage/bugs.py merge), runs of other operations stay apart.
    free_rules: tuple[str, ...] = ()
    # After shrinking, for a failure about ordering: the fix searched on the trace and proven
    # there (harness/check/fix_search.py FixResult); None when the finding is not about ordering.
    fix: Any = None
    # A failure a store that persisted in part causes (harness/check/torn_store.py Torn): the
    # finding is then a `torn-store`, one bug per store site; None otherwise.
    torn: Any = None
    # Its crash state went through shrink_state (harness/check/state_shrink.py): its lost stores
    # are minimal and name its cause (harness/triage/bugs.py lost_cause); an unshrunk state's
    # lost stores are whatever the state happened to lose, and name nothing.
    shrunk: bool = False
    # The fixes (fix_search.describe of their edits) of other bugs of the run proven to make this
    # finding's history pass (harness/run/fold_proofs.py): it may be folded into their bug.
    removed_by: list[str] = field(default_factory=list)
    # A leak the code left: its crash state lost no store and an object it leaked is one no
    # operation in flight allocated or freed (harness/check/judging.py): no lost store explains
    # it, so its group's example is preferably such a state (plainest).
    left_by_code: bool = False

    @property
    def lost(self) -> list[Piece]:
        return self.point.lost(self.choice) if self.point is not None else []

    @property
    def kept(self) -> list[Piece]:
        return self.point.kept(self.choice) if self.point is not None else []


@dataclass
class Coverage:
    """What exploring one history covered: crash points, and at each point the legal states and
    the ones explored. A point is exhaustive when every legal state was explored; a bounded
    strategy samples big points, lazy leaves a point partial when its search stops at the limit
    (crashcheck.crashsim.explore), and such a point never reads as "all states consistent"."""
    crash_points: int = 0
    states_legal: int = 0
    states_explored: int = 0
    points_sampled: int = 0          # crash points with fewer states explored than legal
    executions: int = 0              # checker runs (lazy: one per class of states, eager: per state)
    # crash point index -> [legal, explored] (points of a recovery run keyed ("r", tag, index))
    per_point: dict[Any, list[int]] = field(default_factory=dict)

    def count(self, out: StateOutcome, scope: Any = None) -> None:
        """Count OUT's state as explored, and its crash point (with its legal states) once."""
        key = out.point.index if scope is None else (scope, out.point.index)
        covers = getattr(out, "covers", 1)       # a lazy execution stands for a class of states
        self.states_explored += covers
        self.executions += getattr(out, "cached_from", None) is None
        entry = self.per_point.get(key)
        if entry is None:
            entry = self.per_point[key] = [out.point.legal, 0]
            self.crash_points += 1
            self.states_legal += out.point.legal
        entry[1] += covers

    def close(self) -> None:
        """Count the sampled points (call once exploring is over)."""
        self.points_sampled = sum(1 for legal, seen in self.per_point.values() if seen < legal)

    def of_point(self, key: Any) -> tuple[int, int] | None:
        """(legal, explored) at one crash point, if it was explored."""
        entry = self.per_point.get(key)
        return (entry[0], entry[1]) if entry else None


@dataclass
class HistoryOutcome:
    ops: list
    followup: list
    trace: Trace | None
    findings: list[Finding]
    model: Model | None = None
    coverage: Coverage = field(default_factory=Coverage)
    states_checked: int = 0
    elapsed: float = 0.0
    partial: bool = False        # the budget ran out (or a stop came) before every state was checked
    not_checked: bool = False    # threaded: the linearizability search ran out of budget (never a pass)
    pending_hint: str = ""       # a crash point's legal states exploded: where its pending lines are (pending.py)
    hung_short: int = 0          # checks judged hung under the shorter limit (harness/check/hangs.py)
    aimed_runs: int = 0          # threaded: crash-free runs under aimed schedules (harness/check/aims.py)
    schedule: str | None = None  # threaded: the schedule file the run took (its text)
    lines: list[str] = field(default_factory=list)  # threaded: the driver's result lines
    run_trace: Trace | None = None  # threaded: the run's trace, also when the scheduler ended it
    perf: Any = None             # `fuzz --perf`: its trace's useless persistence (harness/check/perf_tally.py)
    warnings: list[str] = field(default_factory=list)  # threaded: unconfirmed persistency races
    # threaded: the one-execution race analysis (harness/check/race_windows.py) and its writer
    # aims (harness/check/race_confirm.py): candidates, aimed runs, confirmed, not reached, seconds
    race_candidates: int = 0
    race_aims: int = 0
    race_confirmed: int = 0
    race_unreachable: int = 0
    race_s: float = 0.0
    race_records: list = field(default_factory=list)   # the warnings above as records (race_confirm.py)
    explained: int = 0           # failing crash states a bug the lane knows explains (harness/check/unmask.py)
    pruned: int = 0              # legal crash states a known bug explains, never executed (the same)

    # the coverage counts, under the names fuzz statistics use
    @property
    def crash_points(self) -> int:
        return self.coverage.crash_points

    @property
    def states_legal(self) -> int:
        return self.coverage.states_legal

    @property
    def states_explored(self) -> int:
        return self.coverage.states_explored

    @property
    def points_sampled(self) -> int:
        return self.coverage.points_sampled

    @property
    def executions(self) -> int:
        return self.coverage.executions




def site_key(trace: Trace, site_id: int, caller: bool = False) -> str:
    """file:line of a site; with CALLER, of the line it was inlined into (a fence inside a
    persist helper is best named by the line that called the helper). A site inside a helper in
    a header (a tree's store8 wrapper, persist.h) is always named by the line that called it:
    every store of the structure goes through the one line of such a helper."""
    site = trace.site(site_id)
    if site is None:
        return "?"
    if (caller or (site.file.endswith(HEADERS) and not site.own)) and site.inlined_line:
        return f"{site.inlined_file}:{site.inlined_line}"
    return f"{site.file}:{site.line}"


def new_stores(trace: Trace, op_index: int | None) -> tuple[str, ...]:
    """The source lines (file:line) of the stores operation OP_INDEX of TRACE made that nothing
    before it made (set-up and earlier operations), sorted: the code path that operation took
    first. A failure of a run without crash, like a crash state's lost stores, is one mistake per
    such path (a split that packs a prefix wrong fails on whichever insert splits first). () when
    the operation stored nothing new (a read) or OP_INDEX is None."""
    if op_index is None:
        return ()
    before: set[str] = set()
    mine: set[str] = set()
    cur = None
    for ev in trace.events:
        if ev.kind == "op_begin":
            cur = ev.addr
            if cur > op_index:
                break
        elif ev.kind in ("store", "ntstore"):
            key = site_key(trace, ev.site)
            if cur == op_index:
                mine.add(key)
            elif cur is None or cur < op_index:
                before.add(key)
    return tuple(sorted(mine - before))


# the first part of the group of a failure no lost store names, in a state that lost nothing
NOTHING_LOST = " (nothing lost)"


def finding_group(trace: Trace, f: "Finding") -> tuple[str, str]:
    """Findings with the same class and the same first lost store (or, with nothing lost, the
    same crash site) are one bug; broken invariants are one bug per broken rule (the first
    violation's text without its addresses and numbers), wherever the crash fell, because the
    structure's check names the rule better than the crash names its cause (a recovery that
    misses one case breaks the same rule after crashes all over the code). Crashes inside
    recovery are told apart by a prefix.

    A recovery whose process ended abnormally (a signal, an exit, a hang, a stop, killing the
    checker, exit(0) without a result, a process left running) is one bug per way it ended,
    wherever the crash fell: such a recovery usually fails the same way on every image that
    reaches the faulty code, and grouping by lost store would make one cause dozens of bugs. (Two
    different faults that die of the same signal are then one bug; its record shows the first.)
    So is a recovery that refuses the image and prints why (the oracle's verdict group: its last
    line without addresses and numbers).

    Of those groups that no lost store names (a rule, a way recovery crashed, a verdict's group;
    not a hang, nor a follow-up operation's death), a crash state that lost no store is a group apart (its first part `CLASS (nothing lost)`, its
    text the same): no lost store is its cause, so it is no example of a failure that loses
    stores, nor hidden behind one in its history (ART+CoW's header rewritten in place breaks the
    rule the swing published too early breaks, in a later operation of the same history);
    harness/triage/bugs.py joins them only by their cause."""
    pre = "in recovery: " if f.recovery_of is not None else ""
    if f.torn is not None:
        # a torn store is one mistake per store, whatever the recovered state shows
        return (f.cls, site_key(trace, trace.events[f.torn.store].site))
    cls = f.cls + NOTHING_LOST if f.point is not None and f.recovery_of is None and not f.lost else f.cls
    if f.verdict is not None and f.verdict.group:
        # (a follow-up operation that died or hung is that operation's bug whatever the state
        # lost: harness/run/merge.py _fold_followup_deaths folds it by this group)
        death = f.verdict.group.startswith("follow-up: ")
        return (f.cls if death else cls, pre + f.verdict.group)
    res = f.result
    if f.cls in ("recovery-crash", "recovery-hang") and res is not None and (
            res.status != "ok" or res.result is None or res.stray):
        # (a recovery that hangs is one bug however its image came about, and hangs are tallied
        # by this group before and after shrinking, harness/check/hangs.py: it stays one group)
        return (f.cls if f.cls == "recovery-hang" else cls, pre + "recovery: " + _recovery_end(res))
    violations = (f.result.result or {}).get("violations") if f.result is not None else None
    if f.cls == "invariant-violation" and violations:
        return (cls, pre + "rule: " + address_free(violations[0]))
    if f.recovery_of is not None and f.recovery_trace is not None:
        trace = f.recovery_trace
    lost = f.lost
    if lost:
        return (f.cls, pre + site_key(trace, store_site(trace, lost[0])))
    return (f.cls, pre + "crash@" + site_key(trace, crash_site(trace, f.point), caller=True))


def _recovery_end(res: CheckResult) -> str:
    """How a recovery's process ended, without numbers that vary (part of a group)."""
    if res.status == "signal":
        return f"signal {res.signal}"
    if res.status == "exit":
        return f"exit {res.exit}"
    if res.status == "timeout":
        return "stopped" if res.signal in STOP_SIGNALS else "timeout"
    if res.status == "ok":
        return "exit 0 early" if res.result is None else "stray process"
    return res.status          # oom, runner-died


def store_site(trace: Trace, piece: Piece) -> int:
    return trace.events[piece.seq].site


def oracle_point(cp: CrashPoint, nops: int) -> HistoryPoint:
    """Crash point in history terms: completed operations and the one in flight."""
    done = (cp.last_done + 1) if cp.last_done is not None else 0
    if cp.op is not None:
        done = min(done, cp.op)
    return HistoryPoint(min(done, nops), cp.op)


def plainest(f: Finding) -> int:
    """0 for a leak the code left (left_by_code), 1 for any other finding: the order in which a
    group's example is chosen before its size. A leak seen both beside a crash's lost stores and
    in a state that lost nothing (an old node never freed) is then shown by the latter, so that
    harness/triage/bugs.py keeps it a bug of its own instead of a symptom of the crash."""
    return 0 if f.left_by_code else 1


def add_finding(groups: dict[tuple[str, str], Finding], f: Finding) -> None:
    """Keep the first finding of each group; later ones only add to its occurrences (and a
    symptom of a kind it did not show yet). A leak that needs no lost store replaces a kept one
    whose state lost stores (plainest): the group's example is then a
    leak of the code's own, which no crash's lost store can be blamed for."""
    prev = groups.get(f.group)
    if prev is None:
        groups[f.group] = f
    elif plainest(f) < plainest(prev):
        f.occurrences += prev.occurrences
        have = {s.group for s in f.symptoms}
        f.symptoms.extend(s for s in prev.symptoms if s.group not in have)
        groups[f.group] = f
    else:
        prev.occurrences += f.occurrences
        have = {s.group for s in prev.symptoms}
        prev.symptoms.extend(s for s in f.symptoms if s.group not in have)


def result_dict(res: CheckResult) -> dict:
    """A runner answer in the form crashcheck.specs.oracle.judge_recovery reads."""
    return {"status": res.status, "signal": res.signal, "exit": res.exit, "result": res.result,
            "stderr": res.stderr, "stray": res.stray, "output": res.output}


def coverage_key(f: Finding):
    """The key of F's crash point in HistoryOutcome.coverage (recovery runs have their own scope)."""
    if f.point is None:
        return None
    if f.recovery_of is None:
        return f.point.index
    return (("recovery", f.recovery_of[0], tuple(f.recovery_of[1])), f.point.index)


def crash_site(trace: Trace, cp: CrashPoint) -> int:
    if cp.event < len(trace.events):
        return trace.events[cp.event].site
    return 0xFFFFFFFF


__all__ = ["Coverage", "Finding", "HistoryOutcome", "RECOVERY_CRASH_PREFIX", "add_finding", "address_free",
           "coverage_key", "crash_site", "finding_group", "new_stores", "oracle_point", "result_dict", "site_key",
           "store_site"]
