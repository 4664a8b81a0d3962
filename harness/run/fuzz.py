"""The fuzz loop: Hypothesis generates histories, the pipeline crashes each everywhere, and every
failure is kept in its smallest form.

Owns: budgets, seeds, parallel jobs, the registry of bugs, and turning it into results.

Design notes
- Hypothesis runs in batches of a few examples, each batch seeded by (run seed, batch number), so a
  run with --examples is fully deterministic and a run with --budget stops between batches. Its
  engine runs with its clock held (harness/run/strategies.py, held_engine_clock): otherwise how long
  histories take to check would decide how many it generates after a batch's first failure. A batch
  that finds an unexpected failure raises a class-specific exception, which makes Hypothesis
  shrink the history while keeping the class; every history it tries goes through the pipeline.
- The same bugs, grouped the same way, with any --jobs (up to LANES): batch b belongs to lane
  b % LANES, and what a batch shrinks depends only on its own lane's earlier batches (a bug the lane
  has already seen in a smaller form is not shrunk again). A worker runs whole lanes, in batch
  order, so a run with --examples checks the same histories with --jobs 1 and --jobs N. Each
  worker keeps, per group, the example of the lowest rank (size, batch, call) and shrinks its crash
  state; the parent keeps the lowest rank over workers, which is the example --jobs 1 keeps and
  shrinks the same way, and only then merges groups that turned out alike (_finish), and groups
  that are one root cause (harness/triage/bugs.py: the stores that matter, symptoms) into one bug.
- The registry sees every finding of every history checked (generated or tried while shrinking)
  and keeps, per bug (class + first lost-store site, specs/oracle.py's grouping), the smallest
  history that shows it. So bugs Hypothesis did not shrink on purpose still come out small, and
  Hypothesis's own end-of-run report (or a flaky replay) is never needed.
- Nondeterminism is a finding, never swallowed (harness/check/determinism.py). Once per batch one
  history's crash-free run is run a second time; a history Hypothesis runs again in the same batch
  (its final replay of a failure) is checked again; shrinking a bug's crash state traces its
  history again. A different trace, result or finding is a `nondeterminism` finding naming the
  history, and what either run found is kept. The property answers a history run again as it did
  the first time, so Hypothesis's own Flaky errors are left for real surprises: they become
  warnings of the target (results and summary), and the batch's findings are kept.
- Shrinking has a budget of its own (a number of tries, not seconds, so a run with --examples
  stays deterministic), so one stubborn bug cannot eat the run.
- Time (harness/core/budget.py): with --budget, the search (generation and Hypothesis's shrinking)
  ends at the budget's soft deadline, and shrinking the crash states of the bugs found at its
  hard one; a history being checked at that moment keeps what it found so far. SIGINT/SIGTERM
  and internal errors end the loop the same way: the bugs found so far are returned (and were
  already in the journal, harness/run/journal.py, the moment they were found).
- Parallel runs cut each target into units (harness/run/batch.py: shares of its lanes) that an
  executor runs (harness/run/executors.py: local worker processes, or Dask); run_plan merges their
  results here, the same way whoever ran them.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings as hsettings
from hypothesis.errors import Flaky

from crashsim.runner_client import Stopped
from crashsim.trace import Trace
from harness.triage import bugs
from harness.core import defaults
from harness.check import determinism
from harness.target import structures
from harness.core.budget import Budget, OutOfTime, signal_name, swallowed_signal
from harness.core.errors import DriverFailure, UsageError
from harness.check.findings import Finding, HistoryOutcome
from harness.run.journal import Journal
from harness.check.pipeline import Checker
from harness.check.session import history_text
from harness.core.paths import relative_record
from harness.triage.records import build_record
from harness.core.settings import Settings
from harness.run.strategies import held_engine_clock, histories
from harness.check.threads import threaded_histories
from harness.check.traced_run import RunFailure
from specs.oracle import CLASSES, CONCURRENT_CLASSES

CLASS_ORDER = {c: i for i, c in enumerate(CLASSES + CONCURRENT_CLASSES)}
# Independent lanes of batches (see the design notes): --jobs up to this many finds the same bugs as
# --jobs 1. More lanes cost more shrinking early on (each lane shrinks the bugs it finds once).
LANES = 8


class Found(Exception):
    """Raised inside the Hypothesis property for an unexpected finding; one subclass per class so
    Hypothesis shrinks each class separately."""


FOUND = {cls: type(f"Found_{cls.replace('-', '_')}", (Found,), {}) for cls in CLASSES + CONCURRENT_CLASSES}


class _ShrinkSpent(BaseException):
    """Ends a batch once its shrink budget (Config.shrink_calls) is spent. Every finding is in the
    registry already, so nothing Hypothesis would still do is needed; and with its clock held
    (held_engine_clock) nothing else would stop its shrinker, which on a long history (a bulk load
    past a capacity threshold, several threads) spends minutes drawing candidates it never checks."""


class _Abort(BaseException):
    """Carries a UsageError/SetupError out of Hypothesis, which would otherwise take it for a
    failure of the property and spend time shrinking it."""

    def __init__(self, error: UsageError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class Config:
    examples: int | None = None      # histories to generate (deterministic), or
    budget: float | None = defaults.BUDGET_S     # seconds (stops between batches)
    max_ops: int = defaults.MAX_OPS
    keys: str = defaults.KEYS
    mix: str = defaults.MIX
    batch: int = 8
    shrink_calls: int = 40           # histories Hypothesis may try while shrinking, per batch
    jobs: int = defaults.JOBS
    stop_on_class: str | None = None  # end after the batch that first finds this class (unexpected)
    start: float | None = None       # time.monotonic() the first target's budget counts from
    threads: int = 1                 # threads per history (> 1: harness/check/threads.py, crash-free only)
    sched: str = "mixed"             # the scheduler's strategy for threaded histories (mixed, random, pct, stale)


@dataclass
class Stats:
    histories: int = 0
    partial_histories: int = 0       # histories whose exploration the budget (or a stop) cut short
    crash_points: int = 0
    states_legal: int = 0
    states_explored: int = 0
    states_checked: int = 0
    points_sampled: int = 0          # crash points explored only in part (bounded sample, lazy cut)
    executions: int = 0              # checker executions (lazy: one per class of states)
    not_checked: int = 0             # threaded histories whose linearizability search ran out of budget
    hung_short: int = 0              # checks judged hung under a history's shorter limit (harness/check/hangs.py)
    threads: int = 1                 # threads per history
    elapsed_s: float = 0.0

    def add(self, other: "Stats") -> None:
        for name in ("histories", "partial_histories", "crash_points", "states_legal", "states_explored",
                     "states_checked", "points_sampled", "not_checked", "executions", "hung_short"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.elapsed_s = max(self.elapsed_s, other.elapsed_s)
        self.threads = max(self.threads, other.threads)

    def as_json(self) -> dict:
        legal = self.states_legal if self.states_legal < 2 ** 53 else str(self.states_legal)
        return {"histories": self.histories, "partial_histories": self.partial_histories,
                "crash_points": self.crash_points, "states_legal": legal,
                "states_explored": self.states_explored, "states_checked": self.states_checked,
                "points_sampled": self.points_sampled,
                "points_complete": self.crash_points - self.points_sampled,
                "executions": self.executions, "hung_short": self.hung_short,
                "not_checked": self.not_checked, "threads": self.threads,
                "elapsed_s": round(self.elapsed_s, 2),
                "states_per_s": round(self.states_explored / self.elapsed_s, 1) if self.elapsed_s else 0.0}


@dataclass
class Entry:
    """The smallest example seen of one bug (one group as found, before its crash state is shrunk)."""
    key: tuple[str, str]             # the group the finding was found under
    size: tuple[int, int]
    outcome: HistoryOutcome
    finding: Finding
    occurrences: int = 0
    first_seen: float = 0.0          # seconds into the run
    rank: tuple = ()                 # (size, batch, call): the lowest is the example kept
    found_at: tuple[int, int] = (0, 0)   # (batch, call) of the group's first example
    unshrunk: bool = False           # reported as first seen: its crash state was not shrunk


@dataclass
class TargetResult:
    structure: str
    bug: str | None
    stats: Stats
    records: list[dict] = field(default_factory=list)
    first_unexpected_s: float | None = None
    first_by_class: dict[str, float] = field(default_factory=dict)   # unexpected findings only
    interrupted: str | None = None   # "SIGINT"/"SIGTERM"/"worker lost": the run ended early
    error: str | None = None         # an internal error ended this target (its traceback)
    unshrunk: int = 0                # bugs reported as first seen: no time left to shrink them
    entries: list[Entry] = field(default_factory=list)   # one per group as found (internal)
    warnings: list[str] = field(default_factory=list)   # what the user must know besides the bugs
    target: int = 0                  # which target of run_plan's plan it is


@dataclass
class _Decision:
    """The first check of a history in a batch, and what the property answered Hypothesis."""
    crashes: bool
    trace: Trace | None
    findings: frozenset               # determinism.findings_key of its findings
    groups: set                       # the groups of all its findings
    partial: bool
    raised: type | None = None        # the Found class raised, if any
    detail: str = ""
    rechecked: bool = False           # checked a second time already (once is enough)


def _size(outcome: HistoryOutcome) -> tuple[int, int]:
    text = outcome.model.op_text if outcome.model is not None else str
    return (len(outcome.ops), sum(len(text(op)) for op in outcome.ops))


def _my_batches(worker: int, config: Config):
    """The batch numbers worker WORKER of config.jobs runs, in order: whole lanes (see the design
    notes); with --examples, batch b holds examples b*batch.. of the run, whatever --jobs is."""
    jobs = max(1, config.jobs)
    lanes = max(LANES, jobs)
    total = None if config.examples is None else -(-config.examples // config.batch)
    b = 0
    while total is None or b < total:
        if (b % lanes) % jobs == worker:
            n = config.batch if total is None else min(config.batch, config.examples - b * config.batch)
            yield b, b % lanes, n
        b += 1


def fuzz_target(structure: str, bug: str | None, settings: Settings, config: Config,
                worker: int = 0, progress: Callable[[dict], None] | None = None,
                bugdir: Path = Path("crashcheck-bugs"), budget: Budget | None = None,
                journal: Journal | None = None) -> TargetResult:
    """Fuzz one structure (or seeded-bug variant); worker W of config.jobs runs its lanes' batches.
    Returns what was found even when the budget, a signal or an internal error ends it early."""
    result = _search(structure, bug, settings, config, worker, progress, bugdir, budget, journal)
    _finish(result, settings, bugdir)
    if journal is not None:
        journal.target_done(structure, bug, result.stats.as_json())
    return result


def _search(structure: str, bug: str | None, settings: Settings, config: Config, worker: int,
            progress: Callable[[dict], None] | None, bugdir: Path, budget: Budget | None,
            journal: Journal | None) -> TargetResult:
    """Worker WORKER's share of fuzzing one target: its batches, then the crash state of every
    example it keeps shrunk. The entries come back unmerged (one per group as found)."""
    s = structures.get(structure)
    budget = budget or _budget_for(config)
    t0 = time.monotonic()
    stats = Stats()
    registry: dict[tuple[str, str], Entry] = {}
    lane_best: dict[int, dict[tuple[str, str], tuple[int, int]]] = {}   # lane -> group -> smallest size
    first_unexpected: list[float] = []
    warnings: list[str] = []
    interrupted: str | None = None
    error: str | None = None
    stored = not s.own_pool       # the bytes of a libpmemobj pool differ by its UUID (determinism.py)
    with Checker(s, bug, settings, budget=budget) as checker:
        strategy = histories(checker.model, keys=config.keys, mix=config.mix, max_ops=config.max_ops,
                             key_kind=checker.key_kind, value_size=checker.value_size,
                             value_min=checker.value_min, map_ops=checker.map_ops,
                             thresholds=s.thresholds)
        if config.threads > 1:
            # a model whose threads follow a protocol (the range lock) draws its own sections
            own = checker.model.thread_histories
            sections = own(config.threads, max_ops=config.max_ops) if own else None
            strategy = threaded_histories(strategy, config.threads, config.sched, sections)
        stats.threads = config.threads
        shrink_left: list[float] = []      # set when this batch found a failure to shrink
        shrinking: set[str] = set()
        # Shrinking a failure of the crash-free run needs only crash-free runs, which cost a
        # small part of a full check (no crash states): each counts a tenth of a shrink call.
        crash_free: list[bool] = [False]
        journaled: set[tuple[str, str]] = set()
        at = [0, 0]                        # (batch, call) of the history being checked
        seen: dict[tuple[str, str], tuple[int, int]] = {}   # this lane's smallest size per group
        decided: dict[str, _Decision] = {}  # this batch: history -> its first check and decision
        probed = [False]                   # this batch has run one history's crash-free run twice

        def count(outcome: HistoryOutcome) -> None:
            stats.histories += 1
            stats.partial_histories += outcome.partial
            stats.not_checked += outcome.not_checked
            stats.crash_points += outcome.crash_points
            stats.states_legal += outcome.states_legal
            stats.states_explored += outcome.states_explored
            stats.states_checked += outcome.states_checked
            stats.points_sampled += outcome.points_sampled
            stats.executions += outcome.executions
            stats.hung_short += outcome.hung_short

        def note(outcome: HistoryOutcome, f: Finding) -> bool:
            """Keep F (of OUTCOME) in the registry and the journal; True if it is new to this
            lane or smaller than this lane's example of its group."""
            size = _size(outcome)
            rank = (size, at[0], at[1])
            entry = registry.get(f.group)
            if entry is None:
                registry[f.group] = Entry(f.group, size, outcome, f, f.occurrences, time.monotonic() - t0,
                                          rank, (at[0], at[1]))
            else:
                entry.occurrences += f.occurrences
                if rank < entry.rank:
                    entry.size, entry.outcome, entry.finding, entry.rank = size, outcome, f, rank
            if f.group not in journaled and journal is not None:
                journaled.add(f.group)
                _journal_bug(journal, structure, bug, settings, outcome, f, bugdir, len(journaled),
                             worker, time.monotonic() - t0)
            improves = f.group not in seen or size < seen[f.group]
            if improves:
                seen[f.group] = size
            if not f.expected and not first_unexpected:
                first_unexpected.append(time.monotonic() - t0)
            return improves

        def nondeterministic(ops, outcome: HistoryOutcome, trace, diff: tuple[str, str]) -> None:
            group, how = diff
            f = Finding(determinism.CLASS, determinism.describe(how), (determinism.CLASS, group))
            note(HistoryOutcome(ops, outcome.followup, trace, [f], checker.model), f)

        def probe(ops, outcome: HistoryOutcome) -> None:
            """Run OPS's crash-free run a second time: the same trace and results, or a finding."""
            try:
                again, lines = checker.trace(ops)
            except RunFailure as exc:
                if exc.finding.cls != "operation-hang":       # (a hang may be the load's doing)
                    nondeterministic(ops, outcome, outcome.trace, (
                        "run: " + exc.finding.group[1], "the first run of it finished; in the second, "
                        + exc.finding.detail.removeprefix("without any crash, ")))
                return
            except DriverFailure as exc:
                nondeterministic(ops, outcome, outcome.trace, ("run", f"the first run of it finished, the "
                                                               f"second failed: {str(exc)[:300]}"))
                return
            diff = determinism.trace_difference(outcome.trace, again, stored)
            if diff is None:
                first = determinism.findings_key(f for f in outcome.findings if f.point is None)
                diff = determinism.findings_difference(
                    first, determinism.findings_key(checker.crash_free_findings(ops, lines)))
            if diff is not None:
                nondeterministic(ops, outcome, outcome.trace, diff)

        def again(ops, first: _Decision) -> None:
            """Check OPS a second time (once per batch) and compare with its first check."""
            if first.rechecked:
                return
            first.rechecked = True
            if budget.search_over():
                raise OutOfTime()
            at[1] += 1
            try:
                outcome = checker.check(ops, crashes=first.crashes)
            except UsageError as exc:
                raise _Abort(exc) from None
            count(outcome)
            for f in outcome.findings:
                if f.group not in first.groups:
                    note(outcome, f)          # kept, though the first check did not find it
            diff = None
            if first.trace is not None and outcome.trace is not None:
                diff = determinism.trace_difference(first.trace, outcome.trace, stored)
            if diff is None and not (first.partial or outcome.partial):
                diff = determinism.findings_difference(first.findings, determinism.findings_key(outcome.findings))
            if diff is not None:
                nondeterministic(ops, outcome, first.trace or outcome.trace, diff)

        def prop(ops):
            # (a threaded history is the same history only under the same schedule)
            key = f"{getattr(ops, 'load', 0)}\n{getattr(ops, 'sched', '')}\n{history_text(checker.model, ops)}"
            first = decided.get(key)
            if first is not None:
                # The same history again in this batch (Hypothesis replays a failure at its end):
                # it must behave the same; and the answer is the first one, so Hypothesis never
                # sees a failure vanish because our bookkeeping moved on.
                again(ops, first)
                if first.raised is not None:
                    _raise(first)
                return
            if shrink_left:
                if shrink_left[0] <= 0:
                    raise _ShrinkSpent()
                # (a threaded history is only ever checked crash-free: each try costs a full run)
                shrink_left[0] -= 0.1 if crash_free[0] and config.threads == 1 else 1
            if budget.search_over():
                raise OutOfTime()
            at[1] += 1
            crashes = not (shrink_left and crash_free[0])
            try:
                outcome = checker.check(ops, crashes=crashes)
                count(outcome)
                if (not probed[0] and crashes and len(ops) >= 2 and outcome.trace is not None
                        and not outcome.partial):
                    probed[0] = True
                    probe(ops, outcome)
            except UsageError as exc:
                raise _Abort(exc) from None
            unexpected = []
            for f in outcome.findings:
                # Only a new bug, or a smaller example of a known one, is worth starting to
                # shrink (known to this lane: what other lanes found must not change what this
                # one tries, or --jobs would change the results); once this batch shrinks a class,
                # every failure of that class counts (Hypothesis's shrinker also moves sideways,
                # to examples no smaller by our measure).
                improves = note(outcome, f)
                if not f.expected and (improves or f.cls in shrinking):
                    unexpected.append(f)
            if progress:
                progress({"structure": structure, "bug": bug, "histories": stats.histories,
                          "states": stats.states_explored, "executions": stats.executions,
                          "points": stats.crash_points, "complete": stats.crash_points - stats.points_sampled, "bugs": sum(1 for e in registry.values() if not e.finding.expected),
                          "elapsed": time.monotonic() - t0})
            decision = _Decision(crashes, outcome.trace, determinism.findings_key(outcome.findings),
                                 {f.group for f in outcome.findings}, outcome.partial)
            decided[key] = decision
            if unexpected:
                if not shrink_left:
                    shrink_left.append(config.shrink_calls)
                same = [f for f in unexpected if f.cls in shrinking]
                worst = same[0] if same else min(unexpected, key=lambda f: CLASS_ORDER.get(f.cls, 99))
                if not shrinking:
                    # (a hang is the exception: each try may cost the whole timeout)
                    crash_free[0] = (worst.point is None and worst.recovery_of is None
                                     and worst.cls != "operation-hang")
                shrinking.add(worst.cls)
                decision.raised, decision.detail = FOUND.get(worst.cls, Found), worst.detail
                _raise(decision)

        try:
            for batch_no, lane, n in _my_batches(worker, config):
                if budget.search_over():
                    break
                shrink_left.clear()
                shrinking.clear()
                crash_free[0] = False
                decided.clear()
                probed[0] = False
                at[:] = [batch_no, 0]
                seen = lane_best.setdefault(lane, {})
                test = hsettings(max_examples=n, database=None, deadline=None, derandomize=False,
                                 phases=[Phase.generate, Phase.shrink], report_multiple_bugs=True,
                                 suppress_health_check=list(HealthCheck), print_blob=False)(
                    hseed(settings.seed * 100_003 + batch_no)(given(strategy)(prop)))
                try:
                    with held_engine_clock():
                        test()
                except (OutOfTime, KeyboardInterrupt, _Abort):
                    raise
                except _ShrinkSpent:
                    pass
                except BaseException as exc:      # noqa: BLE001 - sorted by _batch_end
                    warning = _batch_end(exc)
                    if warning:
                        warnings.append(f"batch {batch_no}: {warning}")
                if config.stop_on_class and any(e.finding.cls == config.stop_on_class and not e.finding.expected
                                                for e in registry.values()):
                    break
        except OutOfTime:
            pass
        except _Abort as exc:
            raise exc.error from None
        except KeyboardInterrupt as exc:
            interrupted = signal_name(exc)
        except Exception:      # noqa: BLE001 - an internal error: keep what was found
            error = traceback.format_exc()
        interrupted = interrupted or swallowed_signal()
        decided.clear()
        # Shrink the crash state of every example kept (_finish merges those that turn out to
        # be the same bug once shrunk). With no time left (or after a signal or an error) bugs
        # are reported as first seen. Shrinking traces each history again: a trace that differs
        # from the first is a nondeterminism finding, and the bug stays as first seen.
        for entry in sorted(registry.values(), key=lambda e: e.rank):
            if interrupted or error or budget.expired():
                entry.unshrunk = entry.finding.point is not None and entry.finding.cls != "leak"
                continue
            before, kept = entry.outcome.trace, replace(entry.finding)
            failed = None
            try:
                checker.finalize(entry.outcome, entry.finding)
            except (Stopped, OutOfTime, DriverFailure, ValueError) as exc:
                failed = exc
            except KeyboardInterrupt as exc:
                interrupted = signal_name(exc)
                failed = exc
            diff = (determinism.trace_difference(before, entry.outcome.trace, stored)
                    if before is not None and entry.outcome.trace is not before else None)
            if diff is not None:
                at[:] = list(entry.found_at)
                nondeterministic(entry.outcome.ops, entry.outcome, before, diff)
            if failed is not None:
                if isinstance(failed, ValueError) and diff is None:
                    raise failed          # not the structure's doing: an internal error
                entry.unshrunk = True
                if diff is not None:      # report it as found, in the trace it was found in
                    entry.outcome.trace, entry.finding = before, kept
    stats.elapsed_s = time.monotonic() - t0
    return TargetResult(structure, bug, stats,
                        first_unexpected_s=first_unexpected[0] if first_unexpected else None,
                        interrupted=interrupted, error=error, entries=list(registry.values()),
                        warnings=warnings)


def _finish(result: TargetResult, settings: Settings, bugdir: Path) -> None:
    """Turn RESULT's entries (of one worker, or merged over workers by _merge_entries) into its
    records: entries whose shrunk findings are in one group are one bug (the first by size, then
    by when its group was found, is shown), numbered per class in group order."""
    merged: dict[tuple[str, str], Entry] = {}
    for entry in sorted(result.entries, key=lambda e: (e.size, e.found_at)):
        have = merged.get(entry.finding.group)
        if have is None:
            merged[entry.finding.group] = replace(entry)
        else:
            have.occurrences += entry.occurrences
            have.first_seen = min(have.first_seen, entry.first_seen)
    _fold_followup_deaths(merged)
    # One root cause, one bug (harness/triage/bugs.py): groups whose findings share the stores that
    # matter, or show each other as symptoms, are one bug shown by its most telling finding.
    items = sorted(merged.items(), key=lambda kv: (kv[1].finding.expected, kv[0]))
    found = bugs.merge(items, lambda kv: kv[1].finding, lambda kv: kv[1].outcome.trace, lambda kv: kv[1].size[0])
    result.unshrunk = sum(any(e.unshrunk for _, e in members) for members in found)
    result.first_by_class = {}
    for entry in merged.values():
        if not entry.finding.expected:
            cls = entry.finding.cls
            result.first_by_class[cls] = round(min(result.first_by_class.get(cls, entry.first_seen),
                                                   entry.first_seen), 2)
    counters: dict[str, int] = {}
    structure, bug = result.structure, result.bug
    result.records = []
    for members in sorted(found, key=lambda m: (m[0][1].finding.expected, m[0][0])):
        entry = members[0][1]
        cls = entry.finding.cls
        counters[cls] = counters.get(cls, 0) + 1
        ident = f"{structure}{'-' + bug if bug else ''}-{cls}-{counters[cls]}"
        for _, e in members:
            e.finding.occurrences = e.occurrences
        entry.finding.occurrences = sum(e.occurrences for _, e in members)
        rec = build_record(structure=structure, bug=bug, settings=settings, outcome=entry.outcome,
                           finding=entry.finding, ident=ident, bugdir=bugdir)
        view = (lambda kv: kv[1].finding, lambda kv: kv[1].outcome.trace)
        rec["cause"] = relative_record({"c": list(bugs.cause(entry.outcome.trace, entry.finding))})["c"]
        rec["symptoms"] = relative_record({"s": bugs.symptoms(members, *view)})["s"]
        rec["orders"] = relative_record({"o": bugs.orders(members, *view)})["o"]
        rec["first_seen_s"] = round(min(e.first_seen for _, e in members), 2)
        result.records.append(rec)


def _fold_followup_deaths(merged: dict[tuple[str, str], Entry]) -> None:
    """A follow-up operation that died or hung after recovery (post-recovery-divergence, group
    `follow-up: <kind>: <how>`) the way the same kind of operation also died without any crash
    (operation-crash/-hang, group `<kind>: <how>`) is that operation's bug, shown by the simpler
    history: it is folded into it, and the operation's detail says it happened after recovery too."""
    plain = {g[1]: e for g, e in merged.items() if g[0] in ("operation-crash", "operation-hang")}
    for group, entry in list(merged.items()):
        key = group[1].removeprefix("in recovery: ")
        if group[0] != "post-recovery-divergence" or not key.startswith("follow-up: "):
            continue
        op = plain.get(key.removeprefix("follow-up: "))
        if op is None:
            continue
        del merged[group]
        if "after recovery too" not in op.finding.detail:
            op.finding.detail += (f"; after recovery too, in the follow-up workload "
                                  f"({entry.occurrences} crash state{'s' if entry.occurrences != 1 else ''})")


def _merge_entries(parts: list[TargetResult]) -> list[Entry]:
    """The entries of one target's workers as --jobs 1 would have kept them: per group as found,
    the example of the lowest rank, with every worker's occurrences."""
    best: dict[tuple[str, str], Entry] = {}
    for part in parts:
        for e in part.entries:
            have = best.get(e.key)
            if have is None:
                best[e.key] = e
                continue
            keep = e if e.rank < have.rank else have
            best[e.key] = replace(keep, occurrences=have.occurrences + e.occurrences,
                                  first_seen=min(have.first_seen, e.first_seen),
                                  found_at=min(have.found_at, e.found_at))
    return list(best.values())


def _budget_for(config: Config, **kw) -> Budget:
    """The budget of one target: config.budget seconds from config.start (the process start,
    for the first target) or from now."""
    start = config.start if config.start is not None else time.monotonic()
    return Budget(None if config.examples else config.budget, start=start, **kw)


def _journal_bug(journal: Journal, structure: str, bug: str | None, settings: Settings,
                 outcome: HistoryOutcome, f: Finding, bugdir: Path, n: int, worker: int,
                 seen_s: float) -> None:
    """Write a bug to the journal as first seen (unshrunk): kept even if the run dies next."""
    ident = f"{structure}{'-' + bug if bug else ''}-{f.cls}-found{worker}.{n}"
    try:
        rec = build_record(structure=structure, bug=bug, settings=settings, outcome=outcome,
                           finding=f, ident=ident, bugdir=bugdir)
    except Exception:      # noqa: BLE001 - the journal must never take the run down
        return
    rec["first_seen_s"] = round(seen_s, 2)
    try:
        journal.append({"bug": rec})
    except OSError:
        pass


def _raise(decision: _Decision) -> None:
    """Raise DECISION's Found exception, from this one line whether it is a history's first check
    or a replay (Hypothesis tells failures apart by exception type and the line raising it)."""
    raise decision.raised(decision.detail)


def _batch_end(exc: BaseException) -> str | None:
    """Sort out what ended a batch: None for (a group of) our Found exceptions; a warning for one
    of Hypothesis's Flaky errors (Flaky, FlakyFailure, FlakyStrategyDefinition, ...), which the
    property's answering every history as it did the first time leaves for real surprises (the
    structure's own nondeterminism is a finding, made by the property); anything else, including
    a Flaky around another exception, is raised again (an internal error). Either way what was
    found stays in the registry."""
    if not _ours(exc):
        raise exc
    flaky = _flaky_in(exc)
    if flaky is None:
        return None
    first = (str(flaky).strip().splitlines() or [""])[0]
    return (f"Hypothesis found a history that did not behave the same when run again "
            f"({type(flaky).__name__}: {first[:200]}); what was found is kept")


def _ours(exc: BaseException) -> bool:
    group = getattr(exc, "exceptions", None)
    if group:
        return all(_ours(e) for e in group)
    return isinstance(exc, (Found, Flaky))


def _flaky_in(exc: BaseException) -> BaseException | None:
    if isinstance(exc, Flaky):
        return exc
    return next((f for f in map(_flaky_in, getattr(exc, "exceptions", None) or ()) if f is not None), None)


def fuzz_targets(targets: list[tuple[str, str | None]], settings: Settings, config: Config,
                 progress: Callable[[dict], None] | None = None,
                 bugdir: Path = Path("crashcheck-bugs"), journal: Journal | None = None,
                 executor=None) -> list[TargetResult]:
    """Fuzz every (structure, bug) target, each with its own budget of config.budget seconds,
    in this process (--jobs 1) or on EXECUTOR (harness/run/executors.py: local worker processes for
    --jobs N, Dask for --dask); see run_plan."""
    if executor is None and config.jobs > 1:
        from harness.run.executors import LocalProcesses
        executor = LocalProcesses(config.jobs)
    return run_plan([(s, b, settings, config) for s, b in targets], progress, bugdir, journal, executor)


def run_plan(plan: list[tuple[str, str | None, Settings, Config]], progress=None,
             bugdir: Path = Path("crashcheck-bugs"), journal: Journal | None = None,
             executor=None) -> list[TargetResult]:
    """Fuzz every (structure, bug, settings, config) target of PLAN. Without an executor, one
    after the other in this process. With one, each target is cut into the executor's number of
    shares of its lanes (harness/run/batch.py Unit), every unit of every target is handed to it at
    once, and a target's units are merged as --jobs 1 would have kept their examples
    (_merge_entries, _finish): the one merge, whatever ran them. On SIGINT/SIGTERM every unit is
    told to stop and what they found comes back, marked interrupted."""
    if executor is None:
        out = []
        for i, (s, b, st, cfg) in enumerate(plan):
            cfg = cfg if i == 0 else replace(cfg, start=None)
            r = fuzz_target(s, b, st, cfg, 0, progress, bugdir, None, journal)
            r.target = i
            out.append(r)
            if r.interrupted or r.error:
                break        # the run ends; targets not started stay out of the results
        return out
    from harness.run.batch import Unit, build_id
    units = []
    for t, (s, b, st, cfg) in enumerate(plan):
        shares = executor.shares(cfg)
        for w in range(shares):
            # Units beyond the first round start later: their budgets count from their start.
            start = cfg.start if len(units) < executor.slots else None
            units.append(Unit(s, b, st, replace(cfg, jobs=shares, start=start), w, bugdir,
                              executor.journal(journal), executor.build(build_id, s, b), target=t))
    parts, _lost, interrupted, error = executor.run(units, _progress_sum(units, progress))
    merged: list[TargetResult] = []
    ran = {t for t in range(len(plan)) if any(u.target == t for u, _ in parts)} or {0}
    for t, (s, b, st, cfg) in enumerate(plan):
        mine = [r for u, r in parts if u.target == t]
        if t not in ran and interrupted:
            continue         # (as in one process: targets not started stay out of the results)
        out = TargetResult(s, b, Stats(), target=t)
        for p in mine:
            out.stats.add(p.stats)
            out.interrupted = out.interrupted or p.interrupted
            out.error = out.error or p.error
            out.warnings += p.warnings
            if p.first_unexpected_s is not None:
                out.first_unexpected_s = min(out.first_unexpected_s or p.first_unexpected_s, p.first_unexpected_s)
        if interrupted:
            out.interrupted = out.interrupted or interrupted
        if len(mine) < sum(u.target == t for u in units):
            # some of its units gave nothing: an error (a unit failed, its worker died for good,
            # silence), or, after a stop, the units cancelled when they did not come back in time
            if error:
                out.error = out.error or error
            else:
                out.interrupted = out.interrupted or "worker lost"
        out.warnings.sort(key=lambda w: int(w.split()[1].rstrip(":")) if w.startswith("batch ") else -1)
        out.entries = _merge_entries(mine)
        _finish(out, st, bugdir)
        if journal is not None and executor.journal(journal) is None:
            journal.target_done(s, b, out.stats.as_json())
        merged.append(out)
    if error and not any(r.error for r in merged):
        merged[0].error = error
    return merged


def _progress_sum(units: list, progress: Callable[[dict], None] | None):
    """A callback for the executor's per-unit progress reports that passes on, for the unit's
    target, the sum over its units' latest reports (bugs: the most any unit has, a lower bound)."""
    if progress is None:
        return None
    latest: dict[int, dict] = {}

    def on_progress(index: int, p: dict) -> None:
        latest[index] = p
        target = units[index].target
        mine = [q for i, q in latest.items() if units[i].target == target]
        total = dict(p)
        for k in ("histories", "states", "executions", "points", "complete"):
            total[k] = sum(q[k] for q in mine)
        total["bugs"] = max(q["bugs"] for q in mine)
        total["elapsed"] = max(q["elapsed"] for q in mine)
        progress(total)
    return on_progress
