"""Checking one history end to end: trace it, crash it everywhere, recover, judge.

Owns the data flow of the design for a single history, as a thin facade over modules with one job
each:
  harness/check/session.py           the driver, the structure's model, the work folder, the runner
  harness/check/traced_run.py        traced, supervised driver runs (the history; recovery of an image)
  harness/check/crash_free.py        what the crash-free run already shows
  harness/check/crash_oracle.py      what a recovered state is judged against (one thread or several)
  harness/check/judging.py           verdicts and leaks of explored crash states (with their caches)
  harness/check/hangs.py             crash states that hung: a few full timeouts per history
  harness/check/recovery_crashes.py  crashes inside recovery
  harness/check/crash_states.py      going back to given crash states (shrinking, replay)
  harness/check/state_shrink.py      the fewest lost stores that still fail
  harness/check/leak_apart.py        leaks beside a failure still there with its lost stores persisted
  harness/check/schedule_shrink.py   the fewest forced switches that still show a concurrency bug
  harness/check/without_crash.py     whether a shrunk state's failure also happens without the crash
  harness/check/torn_store.py        whether a failing state's cause is a store that persisted in part
  harness/check/fix_search.py        an ordering finding's fix, searched on its trace and proven there
  harness/check/checker_fixes.py     fixes across bugs: other bugs' proven fixes applied (unmasking), proofs
  harness/check/checker_races.py     persistency races of a threaded run: confirmed pairs, candidates, writer aims
  harness/check/unmask.py            crash states a known bug explains, not executed (or not judged) while exploring
  harness/check/findings.py          findings, grouping, coverage
  harness/triage/bugs.py              symptoms of one crash state folded into one finding
Checker.check streams crash points and states through crashcheck.crashsim.explore into the runner and hands
every answer to the judge. Never decides what to fuzz (harness/run/search.py) and never formats reports
(harness/triage/records.py, harness/render/report.py).
"""
from __future__ import annotations

import os
import time
from dataclasses import replace

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.runner_client import CheckResult, Stopped
from crashcheck.crashsim.simulate import CrashPoint
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import aims, crash_states, persistency_race, race_confirm, torn_store
from crashcheck.harness.check import threads
from crashcheck.harness.core.budget import Budget, OutOfTime
from crashcheck.harness.check.ranking import fold_state
from crashcheck.harness.check.crash_oracle import SequentialOracle, oracle_for
from crashcheck.harness.check.code_pointers import code_pointer_findings
from crashcheck.harness.check.crash_free import crash_free_findings, first_failing_op
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.harness.check.hangs import HangTally, hang_limit, recheck
from crashcheck.harness.check.exhaustive import refuse_exhaustive
from crashcheck.harness.check.pending import pending_hint
from crashcheck.harness.check.findings import (Finding, HistoryOutcome, add_finding, coverage_key, finding_group,
                                               new_stores, oracle_point, result_dict)
from crashcheck.harness.check.judging import HistoryJudge
from crashcheck.harness.check.leak_apart import leaks_apart
from crashcheck.harness.check.recovery_crashes import crash_recoveries, worth_crashing
from crashcheck.harness.check.session import Session, history_text
from crashcheck.harness.check.schedule_shrink import shown, shrink_schedule, switches
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.check.state_shrink import shrink_state
from crashcheck.harness.check.without_crash import without_crash
from crashcheck.harness.check.fix_search import search_fix
from crashcheck.harness.check.checker_fixes import CheckerFixes
from crashcheck.harness.check.checker_races import CheckerRaces, first_op_event
from crashcheck.harness.check.unmask import Explainer, Known
from crashcheck.harness.check.perf_tally import PerfTally
from crashcheck.harness.target.structures import Structure
from crashcheck.harness.check.traced_run import RunFailure, schedule_taken, trace_history, trace_left, trace_recovery
from crashcheck.specs.model import prefix_states


class Checker(CheckerFixes, CheckerRaces):
    """Checks histories for one structure (or seeded-bug variant) with one runner process."""

    def __init__(self, structure: Structure, bug: str | None, settings: Settings,
                 workdir: str | os.PathLike | None = None, budget: Budget | None = None) -> None:
        self.session = Session(structure, bug, settings, workdir, budget)
        self.structure = structure
        self.bug = bug
        self.settings = settings
        self.budget = self.session.budget
        self.model = self.session.model
        self.workdir = self.session.workdir
        self.driver = self.session.driver
        self._hung: dict[tuple[str, ...], Finding] = {}    # operations up to one that hung
        self.aimer = aims.Aimer()       # aimed runs after clean threaded ones (harness/check/aims.py)
        self.aim_refused = ""           # why aimed runs are off (a driver built before they existed)
        self.confirmer = race_confirm.Confirmer()   # writer aims at race candidates (race_confirm.py)
        self.key_kind = structure.key_kind
        self.value_size = structure.value_size
        self.value_min = structure.value_min
        self.map_ops = structure.map_ops
        # the fixes proven so far in this run, by their words (fix_words.describe): applied in
        # simulation to later fix searches so that a bug already known masks no other (fix_finding)
        self.known_fixes: dict[str, tuple] = {}
        # the bugs the lane being searched knows (harness/check/unmask.py): the failing states they
        # explain are not judged again; None (the default) costs nothing
        self.unmask: Known | None = None

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "Checker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the parts, for fuzz, replay and tests ----------------------------------------------

    def trace(self, ops: list, deadline: float | None = None) -> tuple[Trace, list[str]]:
        return trace_history(self.session, ops, deadline)

    def trace_recovery(self, crashed: Trace, image: bytes, tag: str = "recovery") -> Trace:
        return trace_recovery(self.session, crashed, image, tag)

    def crash_free_findings(self, ops: list, lines: list[str], trace: Trace | None = None) -> list[Finding]:
        """What the crash-free run shows; with its TRACE, a code address it stored in PM first."""
        first = code_pointer_findings(trace)
        if threads.is_threaded(ops):
            return first + threads.judge(self.model, ops, lines)[0]
        return first + crash_free_findings(self.model, ops, lines)

    def followup(self, ops: list) -> list:
        return self.session.followup(ops)

    def sets(self, ops: list, lines: list[str] | None = None) -> list[list]:
        """The states the model may be in after each prefix of OPS; with the crash-free run's
        result LINES, only those that explain what the run returned (a nondeterministic model's
        branch is the one the structure took)."""
        if lines is None:
            return prefix_states(self.model, ops)
        return prefix_states(self.model, ops, [self.model.parse_output(x) for x in lines if not x.startswith("!")])

    def point_at(self, trace: Trace, cp_index: int) -> CrashPoint:
        return crash_states.point_at(self.session, trace, cp_index)

    def image_at(self, trace: Trace, cp_index: int, choice: tuple[int, ...]) -> tuple[CrashPoint, bytes]:
        return crash_states.image_at(self.session, trace, cp_index, choice)

    def recheck(self, trace: Trace, cp_index: int, choices: list[tuple[int, ...]], follow_text: str
                ) -> list[CheckResult]:
        """Check specific choice vectors at one crash point of TRACE (used by replay)."""
        return crash_states.state_checker(self.session, trace, cp_index, follow_text)(choices)

    # -- checking --------------------------------------------------------------------------

    def check(self, ops: list, progress=None, crashes: bool = True,
              deadline: float | None = None) -> HistoryOutcome:
        """Judge one history: its crash-free run, then (with CRASHES) its crash states.
        DEADLINE (time.monotonic()) bounds the crash-free run. A threaded history
        (harness/check/threads.py) runs under the scheduler and its outcome carries the schedule taken;
        its crash-free verdict is linearizability, its crash states' durable linearizability."""
        t0 = time.monotonic()
        self.budget.check()
        threaded = threads.is_threaded(ops)
        follow = self.followup(ops)
        texts = [self.model.op_text(op) for op in ops]
        hung = next((self._hung[tuple(texts[:k])] for k in range(1, len(ops) + 1)
                     if tuple(texts[:k]) in self._hung), None) if self._hung and not threaded else None
        if hung is not None:
            return HistoryOutcome(ops, follow, None, [replace(hung)], self.model, elapsed=time.monotonic() - t0)
        try:
            trace, lines = self.trace(ops, deadline)
        except RunFailure as exc:
            f = exc.finding
            if f.cls == "operation-hang" and f.op_index is not None and not threaded:
                # The driver is deterministic: any history with the same operations up to the one
                # that hung hangs there too. Shrinking tries dozens of such histories, each of which
                # would cost the whole timeout again.
                self._hung[tuple(texts[:f.op_index + 1])] = f
            out = HistoryOutcome(ops, follow, None, [f], self.model, elapsed=time.monotonic() - t0)
            if threaded:
                out.schedule = schedule_taken(self.session)
                # kept for the record's lanes only (what ran before the scheduler stopped the
                # run): outcome.trace stays None, a cut trace is never explored
                out.lines = exc.lines
                out.run_trace = trace_left(self.session)
            return out
        except DriverFailure as exc:
            f = Finding("operation-crash", str(exc), ("run-failure", str(exc)[:60]))
            return HistoryOutcome(ops, follow, None, [f], self.model, elapsed=time.monotonic() - t0)
        outcome = HistoryOutcome(ops, follow, trace, [], self.model)
        # The crash-free run must already agree with the model and keep the invariants.
        if threaded:
            outcome.schedule = schedule_taken(self.session)
            outcome.lines, outcome.run_trace = lines, trace      # for the record's lanes
            outcome.findings, checked = threads.judge(self.model, ops, lines)
            outcome.not_checked = not checked
            if not outcome.findings and checked and not self.aim_refused and aims.worth_aiming(ops, trace):
                # the run is clean: hold a thread where it met another on a word (aims.py)
                failed, outcome.aimed_runs, self.aim_refused = aims.first_failing(
                    lambda o: self.check(o, crashes=False, deadline=deadline), ops,
                    self.aimer.specs(ops, trace, first_op_event(ops, trace)), self.structure.name)
                if failed is not None:
                    failed.elapsed, failed.aimed_runs = time.monotonic() - t0, outcome.aimed_runs
                    return failed
            crashes = crashes and checked and self.structure.has_pm
        else:
            if self.settings.perf:
                outcome.perf = PerfTally.of(trace, [self.model.op_text(op).split(" ")[0] for op in ops])
            outcome.findings = self.crash_free_findings(ops, lines)
            if outcome.findings:
                at = new_stores(trace, first_failing_op(self.model, ops, lines))
                for f in outcome.findings:
                    f.new_stores = at
        # a code address in PM: every crash state would crash recovery, none saying why
        outcome.findings = code_pointer_findings(trace) + outcome.findings
        if not outcome.findings and crashes and threaded:
            # a load of another thread's store not yet durable, acted upon: confirmed by its crash
            # (harness/check/persistency_race.py) before the crash states are explored
            outcome.findings, outcome.warnings = self._persistency_races(outcome, lines)
            if not outcome.findings and not self.aim_refused:
                # candidates from this one run, each confirmed (or not) by a writer aim
                raced = self._race_candidates(outcome, deadline)
                if raced is not None:
                    raced.elapsed = time.monotonic() - t0
                    return raced
        if not outcome.findings and crashes:
            self._check_crash_states(outcome, lines, progress)
        if self.aim_refused and threaded:
            outcome.warnings.append(self.aim_refused)
        outcome.elapsed = time.monotonic() - t0
        return outcome

    def oracle(self, ops: list, trace: Trace, lines: list[str], follow: list,
               aimed: bool = True) -> SequentialOracle:
        """What crash states of OPS (traced as TRACE, crash-free output LINES) are judged against:
        with AIMED, each recovery runs the continuation aimed at its crash; without, FOLLOW
        (replay: the operations its record ran)."""
        ses = self.session
        aimed = aimed and ses.settings.continuation is not None
        return oracle_for(self.model, ops, trace, lines, self.sets, follow,
                          (lambda done, inflight: ses.continuation(ops, done, inflight)) if aimed else None)

    def _check_crash_states(self, outcome: HistoryOutcome, lines: list[str], progress=None) -> None:
        """Explore every crash point of OUTCOME's trace, judge each recovered state and crash a few
        recoveries again; the findings, one per group, go into OUTCOME."""
        ops, trace = outcome.ops, outcome.trace
        oracle = self.oracle(ops, trace, lines, outcome.followup)
        runner = self.session.runner(trace)
        checked_before = runner.stats.states
        judge = HistoryJudge(self.session, trace, oracle)
        by_group: dict[tuple[str, str], Finding] = {}
        # Post-crash images to crash again inside their recovery (worth_crashing), distinct
        # images only.
        candidates: list[tuple[int, tuple[int, ...]]] = []
        seen_images: set[int] = set()
        first_op = first_op_event(ops, trace)
        s = self.settings
        limit = hang_limit(s)
        hangs = HangTally()
        deferred = []          # ran out of the shorter limit in a way not seen yet: checked again

        explainer = Explainer(self.unmask, trace, s.options()) if self.unmask else None
        # the states a known bug explains by one store line or a proven fix: not executed
        keep = explainer.counted_keep(outcome) if explainer is not None else None
        biggest: list[CrashPoint] = []     # the crash point with the most legal states
        if s.strategy == "exhaustive":     # (before any state is checked; harness/check/exhaustive.py)
            refuse_exhaustive(trace, s.options(), f"a history of {len(ops)} operations", skip_before=first_op or 0)

        def take(out, found) -> None:
            outcome.coverage.count(out)
            if not biggest or out.point.legal > biggest[0].legal:
                biggest[:] = [out.point]
            if out.fp not in seen_images and worth_crashing(out, found):
                seen_images.add(out.fp)
                candidates.append((out.point.index, tuple(out.choice)))
            if found and explainer is not None and explainer.explains(out.point, out.choice):
                outcome.explained += 1      # a known bug again: what other states fail is another's
                return
            for f in found:
                add_finding(by_group, f)
        try:
            for out in explore(trace, options=s.options(), strategy=s.strategy, limit=s.limit, seed=s.seed,
                               runner=runner, followup=oracle.follow_text,
                               first_state=self.session.free_state_id(), progress=progress,
                               start_event=first_op, stop=self.budget.expired,
                               relocatable=self.session.structure.own_pool, hang_limit=limit, keep=keep):
                self.session.next_state = out.id + 1
                found = fold_state(judge.judge(out))
                if hangs.take(out, found):
                    take(out, found)
                else:
                    deferred.append(out)
            for out, found in recheck(self.session, trace, judge, hangs, deferred, limit):
                take(out, found)
            outcome.states_checked = runner.stats.states - checked_before
            if s.recovery_crashes and candidates:
                for f in crash_recoveries(self.session, trace, oracle, candidates, outcome):
                    add_finding(by_group, f)
        except (Stopped, OutOfTime):
            # What was judged before the stop stands; the rest of this history is unexplored.
            outcome.partial = True
            outcome.states_checked = max(0, runner.stats.states - checked_before)
        # a verdict search that ran out of budget (durable linearizability) is never a pass
        outcome.not_checked = outcome.not_checked or judge.unchecked > 0
        outcome.coverage.close()
        if biggest:
            texts = [self.model.op_text(op) for op in ops]
            shown = "; ".join(texts[:6]) + ("; ..." if len(texts) > 6 else "")
            outcome.pending_hint = pending_hint(trace, biggest[0], f"`{shown}`") or ""
        outcome.hung_short = hangs.short_checks
        if not outcome.partial:
            try:
                self._torn_stores(trace, oracle, by_group)
            except (Stopped, OutOfTime):
                outcome.partial = True      # the findings keep the class their states showed
        outcome.findings = list(by_group.values())
        for f in outcome.findings:
            f.coverage = outcome.coverage.of_point(coverage_key(f))
            if f.point is not None and f.recovery_of is None:
                f.hung = hangs.of(f.point.index, f.group)

    def _torn_stores(self, trace: Trace, oracle, by_group: dict) -> None:
        """Class as `torn-store` the first findings of BY_GROUP whose state a store persisted in
        part makes fail (harness/check/torn_store.py), regrouped by that store's site."""
        tried = 0
        for f in list(by_group.values()):
            if tried >= torn_store.MAX_FINDINGS or self.budget.expired():
                break
            if torn_store.may_tear(f):
                tried += 1
                torn_store.tear(self.session, trace, oracle, f)
        regrouped: dict = {}
        for f in by_group.values():
            add_finding(regrouped, f)
        by_group.clear()
        by_group.update(regrouped)

    # -- making a finding ready to report ----------------------------------------------------

    def finalize(self, outcome: HistoryOutcome, f: Finding, fix: bool = True) -> None:
        """Make F, found while fuzzing, ready to report: trace its history again (traces are
        deterministic, so its crash point has the same index), shrink its crash state, and
        recompute its group from the shrunk state; with FIX, search its fix (else fix_finding
        does, later). A concurrency bug found without a crash gets its schedule shrunk instead
        (harness/check/schedule_shrink.py)."""
        if f.point is None and threads.is_threaded(outcome.ops) and outcome.schedule:
            before = switches(outcome.schedule)
            shrunk = shrink_schedule(lambda ops: self.check(ops, crashes=False), outcome, f)
            if shrunk is not None:
                g = shown(f, shrunk)
                f.cls, f.group = g.cls, g.group
                outcome.ops, outcome.schedule = shrunk.ops, shrunk.schedule
                # the shrunk schedule's run is the record's: its trace too, which the record's
                # trace_digest fingerprints and a replay of that schedule compares with
                outcome.trace = shrunk.trace
                outcome.lines, outcome.run_trace = shrunk.lines, shrunk.run_trace
                f.detail = (f"{g.detail} (schedule shrunk from {before} forced switches to "
                            f"{switches(shrunk.schedule)})")
            return
        if f.point is None or f.cls == "leak":
            return
        if f.cls == persistency_race.CLASS:
            # its state is the one that loses the racing store, chosen, not shrunk; the trace is
            # the same again (same history, same schedule)
            trace, _ = self.trace(outcome.ops)
            outcome.trace = trace
            f.point = self.point_at(trace, f.point.index)
            return
        trace, lines = self.trace(outcome.ops)
        outcome.trace = trace
        oracle = self.oracle(outcome.ops, trace, lines, outcome.followup)
        if f.recovery_of is not None:
            cp_index, choice = f.recovery_of
            orig, image = self.image_at(trace, cp_index, choice)
            rtrace = self.trace_recovery(trace, image, "recovery-final")
            f.recovery_trace = rtrace
            f.point = self.point_at(rtrace, f.point.index)
            f.history_point = oracle.history_point(orig)
            f.origin_lost = orig.lost(choice)
            shrink_state(self.session, rtrace, oracle, f, orig)
            f.shrunk = True
            f.group = finding_group(trace, f)
            return
        f.point = self.point_at(trace, f.point.index)
        if len(f.point.units) != len(f.choice):
            raise DriverFailure(f"{self.structure.name}: the same history traced twice gave different "
                                "traces (the structure or its driver is not deterministic)")
        if f.torn is not None:
            # shrunk as what the recovered state showed; a torn store again (or not) once minimal
            f.cls, f.detail, f.torn = f.torn.cls, f.verdict.detail, None
        shrink_state(self.session, trace, oracle, f)
        f.shrunk = True
        if torn_store.may_tear(f) and not self.budget.expired() and torn_store.tear(self.session, trace, oracle, f):
            torn_store.add_recovery_reads(self.session, trace, f)
            return
        f.group = finding_group(trace, f)
        f.apart = leaks_apart(self.session, trace, oracle, f)
        if not threads.is_threaded(outcome.ops):
            f.without_crash = without_crash(self, outcome.ops, oracle, f)
            if fix and self.settings.fixes and not self.budget.expired():
                f.fix = search_fix(self.session, trace, oracle, f)


__all__ = ["Checker", "DriverFailure", "Finding", "HistoryOutcome", "RunFailure", "Settings", "coverage_key",
           "history_text", "oracle_point", "result_dict"]
