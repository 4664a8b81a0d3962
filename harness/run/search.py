"""The search of one share of one target: Hypothesis generates histories, the checker crashes each
everywhere, and every failure is kept in its smallest form.

Owns `Search`: its batches (harness/run/config.py batches: whole lanes), the property Hypothesis
calls for each history, the registry of what was found (one Entry per group, the lowest rank
kept), the lane's memory of what it has seen, the determinism probes, the histories that cross
capacity points (harness/run/crossing.py) and, after the batches, shrinking the crash state of
every example kept and its fix (harness/run/after_batches.py). It returns a TargetResult of unmerged entries;
it never merges shares or groups (harness/run/merge.py) and never builds the bugs' final records.

Design notes
- A batch that finds an unexpected failure raises a class-specific exception (harness/run/found.py),
  which makes Hypothesis shrink the history while keeping the class; every history it tries goes
  through the checker. Hypothesis's engine runs with its clock held (harness/run/strategies.py,
  held_engine_clock): otherwise how long histories take to check would decide how many it
  generates after a batch's first failure.
- What a batch shrinks depends only on its own lane's earlier batches (a bug the lane has already
  seen in a smaller form is not shrunk again), so the same bugs come out with any --jobs. Each
  share keeps, per group, the example of the lowest rank (size, batch, call) and shrinks its crash
  state; the merge keeps the lowest rank over shares, which is the example --jobs 1 keeps.
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
  warnings of the target (results and summary), and the batch's findings are kept. A group of
  failures (its final replay may catch our OutOfTime too) is sorted leaf by leaf (found.py).
- Shrinking has a budget of its own (a number of tries, not seconds, so a run with --examples
  stays deterministic), so one stubborn bug cannot eat the run.
- Time (harness/core/budget.py): with --budget, the search (generation and Hypothesis's shrinking)
  ends at the budget's soft deadline, and shrinking the crash states of the bugs found at its
  hard one; a history being checked at that moment keeps what it found so far. SIGINT/SIGTERM
  and internal errors end the search the same way: the bugs found so far are returned (and were
  already in the journal, harness/run/journal.py, the moment they were found).
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
import traceback
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings as hsettings

from crashcheck.harness.check import capacity, determinism
from crashcheck.harness.check.persistency_race import UNCONFIRMED
from crashcheck.harness.check.findings import Finding, HistoryOutcome, plainest
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.check.session import history_text
from crashcheck.harness.core.budget import Budget, OutOfTime, signal_name, swallowed_signal
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run import strategies
from crashcheck.harness.run.config import Config, batches
from crashcheck.harness.run.after_batches import CUT, NOT_TRIED, SHRUNK, AfterBatches
from crashcheck.harness.run.crossing import CapacityCrossing
from crashcheck.harness.run.fix_checks import keep_other
from crashcheck.harness.run.determinism_probes import Decision as _Decision, DeterminismProbes
from crashcheck.harness.run.found import (CLASS_ORDER, FOUND, Abort, Found, Internal, ShrinkSpent, batch_end,
                                          not_a_failure, raise_found)
from crashcheck.harness.run.journal import Journal
from crashcheck.harness.run.lane_ops import LaneOps
from crashcheck.harness.run.unmasking import Unmasking
from crashcheck.harness.run.results import Entry, Progress, Stats, TargetResult
from crashcheck.harness.target import structures
from crashcheck.harness.triage.records import build_record

PENDING = "pending lines: "      # the warning of a crash point whose legal states exploded
MAX_RACE_WARNINGS = 10

# A crash-free check costs a small part of a full one (no crash states): while a batch shrinks a
# failure of the crash-free run, each try counts this much of a shrink call.
CRASH_FREE_TRY = 0.1


PROBE_S = 5.0        # seconds the capacity probe's traced run may take at most
def _size(outcome: HistoryOutcome) -> tuple[int, int]:
    text = outcome.model.op_text if outcome.model is not None else str
    return (len(outcome.ops), sum(len(text(op)) for op in outcome.ops))


class Search(CapacityCrossing, AfterBatches, DeterminismProbes, Unmasking):
    """Share SHARE of config.jobs of fuzzing one target (structure, seeded bug): `run()` runs its
    batches, then shrinks the crash state of every example it keeps, and returns what it found
    even when the budget, a signal or an internal error ends it early."""

    def __init__(self, structure: str, bug: str | None, settings: Settings, config: Config, share: int,
                 budget: Budget, bugdir: Path, journal: Journal | None = None,
                 progress: Callable[[Progress], None] | None = None) -> None:
        self.target = structures.get(structure)
        if self.target.own_pool and settings.strategy == "lazy":
            # libpmemobj's reads of its own pool are not instrumented, so lazy would judge one
            # state for a class of states the library tells apart and name records by states that
            # never failed (they did not replay). `fuzz` makes bounded its default here and refuses
            # --strategy lazy; this holds for every other caller too (fuzz_target, bench/detection,
            # the pytest plugin), whose Settings default to lazy.
            settings = dataclasses.replace(settings, strategy="bounded")
        self.structure, self.bug, self.settings, self.config = structure, bug, settings, config
        self.share, self.budget, self.bugdir, self.journal, self.progress = share, budget, bugdir, journal, progress
        self.stored = not self.target.own_pool   # the bytes of a libpmemobj pool differ by its UUID (determinism.py)
        self.t0 = time.monotonic()
        self.stats = Stats(threads=config.threads)
        self.registry: dict[tuple[str, str], Entry] = {}
        self.lane_best: dict[int, dict[tuple[str, str], tuple[int, int]]] = {}   # lane -> group -> smallest size
        self.journaled: set[tuple[str, str]] = set()
        self.first_unexpected_s: float | None = None
        self.warnings: list[str] = []
        self.race_warnings: list[dict] = []
        self.interrupted: str | None = None
        self.error: str | None = None
        self.checker: Checker | None = None
        self.capacity: list[capacity.CapacityPoint] = []   # observed by the probe run
        # The batch under way:
        self.batch_no = 0                  # its number, and
        self.call = 0                      # the property's calls so far: (batch, call) ranks examples
        self.seen: dict[tuple[str, str], tuple[int, int]] = {}   # its lane's smallest size per group
        self.shrink_left: float | None = None   # shrink calls left, once it found a failure to shrink
        self.shrinking: set[str] = set()   # the classes it shrinks
        # Shrinking a failure of the crash-free run needs only crash-free runs (CRASH_FREE_TRY).
        self.crash_free = False
        self.decided: dict[str, _Decision] = {}   # history -> its first check and decision
        # Digests of the histories (with their schedules) checked clean, crash states and all, in
        # any batch of this share: drawn again, each is answered from that check. Hypothesis starts
        # every batch with its simplest example, the same history in every batch (a structure's
        # capacity history when the probe saw points: Heart's, a 287-operation load and a delete,
        # took 4 s of crash states, so threaded runs spent most of their time on it, 14 times over).
        # A clean answer is what checking it again would give, so no batch shrinks anything else.
        self.clean: set[bytes] = set()
        self.probed = False                # it has run one history's crash-free run twice
        # batch -> (the classes it shrank, how its shrinking ended: SHRUNK / CUT)
        self.batch_shrink: dict[int, tuple[frozenset, str]] = {}
        self._unmask_init()                # what each lane knows (harness/run/unmasking.py)

    def run(self) -> TargetResult:
        with Checker(self.target, self.bug, self.settings, budget=self.budget) as checker:
            self.checker = checker
            crossing: list = []          # capacity points still to cross (_crossings)
            try:
                lanes = LaneOps(self.config, self._strategies(checker))
                crossing[:] = self._crossings()
                for batch_no, lane, n in batches(self.share, self.config):
                    if self.budget.search_over():
                        break
                    checker.aimer.lane = lane
                    seen = checker.aimer.pairs_seen(lane)
                    self._batch(lanes.strategy(lane), batch_no, lane, n)
                    self._learn(lane)
                    self.stats.max_ops = max(self.stats.max_ops, lanes.adapt(lane, seen, checker.aimer.pairs_seen(lane)))
                    stop = self.config.stop_on_class
                    if stop and any(e.finding.cls == stop and not e.finding.expected for e in self.registry.values()):
                        break
                    checker.unmask = self.lane_known.get(self._scope(-1)) or None   # (--budget: the share's)
                    self._cross_points(checker, crossing, last=False)
                else:
                    checker.unmask = self.lane_known.get(self._scope(-1)) or None
                    self._cross_points(checker, crossing, last=True)     # (--examples: after the last batch)
            except OutOfTime:
                pass
            except Abort as exc:
                raise exc.error from None
            except Internal as exc:
                self.error = exc.text
            except KeyboardInterrupt as exc:
                self.interrupted = signal_name(exc)
            except (Exception, BaseExceptionGroup):   # noqa: BLE001 - an internal error: keep what was found
                self.error = traceback.format_exc()
            self.interrupted = self.interrupted or swallowed_signal()
            for _i, p in crossing:
                self.stats.capacity_why.setdefault(p.label, "the run ended before its crossing histories")
            self.decided.clear()
            checker.unmask = None
            try:
                self._shrink_states()
            except KeyboardInterrupt as exc:
                self.interrupted = self.interrupted or signal_name(exc)
            except OutOfTime:
                pass
            except (Exception, BaseExceptionGroup):   # noqa: BLE001 - the bugs found stay reported as first seen
                self.error = self.error or traceback.format_exc()
        self.stats.elapsed_s = time.monotonic() - self.t0
        return TargetResult(self.structure, self.bug, self.stats, first_unexpected_s=self.first_unexpected_s,
                            interrupted=self.interrupted, error=self.error, entries=list(self.registry.values()),
                            warnings=self.warnings, race_warnings=self.race_warnings)

    def _strategies(self, checker: Checker) -> Callable[[Config], object]:
        """The histories to draw, as a function of the run's config (a lane's grows its
        histories: harness/run/lane_ops.py). Where the structure's path changes as it grows and shrinks is
        observed first (harness/check/capacity.py), unless it declares its capacities, so that
        histories cross those points inside checked operations (threaded ones too: a node that
        grows or empties while other threads write into it). The probe's traced run counts
        against the budget: a budget that ends during it ends the run like any other check. It
        gets at most PROBE_S, and a tenth of a time budget: it takes 0.3 s for the built-in trees,
        and a structure whose insert hangs would spend the whole run's timeout there (7 s of a
        10 s budget) before a single history was checked."""
        budget = self.config.budget
        probe_s = PROBE_S if not budget else min(PROBE_S, max(1.0, budget / 10))
        self.capacity = capacity.observe(checker, time.monotonic() + probe_s)
        for p in self.capacity:
            self.stats.capacity.setdefault(p.label, 0)
            if p.why:
                self.stats.capacity_why[p.label] = p.why
        # (points no history can cross cheaply are listed, never drawn; declared ones are drawn
        # the way threshold_histories.crossing draws them)
        points = tuple(p.drawn for p in self.capacity if not p.why and not p.declared)
        if self.config.history is not None:
            # `crashcheck check --history`: exactly the user's history (its crossings counted too)
            return lambda config: strategies.given_history(config.history)
        return lambda config: strategies.for_target(self.target, config, checker.model, points)

    # -- one batch --------------------------------------------------------------------------

    def _batch(self, strategy, batch_no: int, lane: int, n: int) -> None:
        """Hypothesis's N examples of batch BATCH_NO (of LANE), seeded by the run's seed and the
        batch number, with the shrinking its failures earn."""
        self.shrink_left = None
        self.shrinking.clear()
        self.crash_free = False
        self.decided.clear()
        self.probed = False
        self.batch_no, self.call = batch_no, 0
        self.seen = self.lane_best.setdefault(lane, {})
        self._batch_starts(lane)

        def prop(ops) -> None:
            self._property(ops)
        test = hsettings(max_examples=n, database=None, deadline=None, derandomize=False,
                         phases=[Phase.generate, Phase.shrink], report_multiple_bugs=True,
                         suppress_health_check=list(HealthCheck), print_blob=False)(
            hseed(self.settings.seed * 100_003 + batch_no)(given(strategy)(prop)))
        how = SHRUNK
        try:
            with strategies.held_engine_clock():
                test()
        except (OutOfTime, KeyboardInterrupt, Abort, Internal):
            how = CUT
            raise
        except ShrinkSpent:
            how = CUT if self.config.shrink_calls > 0 else NOT_TRIED
        except BaseException as exc:      # noqa: BLE001 - sorted by batch_end (groups, Flaky, ...)
            how = CUT
            end = batch_end(exc)          # (raises a signal, an Abort or an internal error again)
            self.warnings += [w for w in (f"batch {batch_no}: {w}" for w in end.warnings) if w not in self.warnings]
            if end.out_of_time:
                raise OutOfTime() from None   # the budget ran out inside the batch: the search ends
            how = (CUT if self.config.shrink_calls > 0 else NOT_TRIED) if end.shrink_spent else SHRUNK
        finally:
            if self.shrinking:
                self.batch_shrink[batch_no] = (frozenset(self.shrinking), how)

    def _property(self, ops) -> None:
        """Hypothesis's property: check OPS, keep what it shows, and fail (raise a Found) for a new
        unexpected bug or a smaller example of one, so that Hypothesis shrinks it."""
        checker = self.checker
        # (a threaded history is the same history only under the same schedule)
        key = f"{getattr(ops, 'load', 0)}\n{getattr(ops, 'sched', '')}\n{history_text(checker.model, ops)}"
        first = self.decided.get(key)
        if first is not None:
            # The same history again in this batch (Hypothesis replays a failure at its end):
            # it must behave the same; and the answer is the first one, so Hypothesis never
            # sees a failure vanish because our bookkeeping moved on.
            self._again(ops, first)
            if first.raised is not None:
                raise_found(first.raised, first.detail)
            return
        digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
        if digest in self.clean:
            self.stats.histories += 1
            self.stats.repeated += 1
            return
        if self._crossing_due():
            raise ShrinkSpent()       # capacity points wait for their crossing histories (crossing.py)
        if self.shrink_left is not None:
            if self.shrink_left <= 0:
                raise ShrinkSpent()
            # (a threaded history is only ever checked crash-free: each try costs a full run)
            self.shrink_left -= CRASH_FREE_TRY if self.crash_free and self.config.threads == 1 else 1
        if self.budget.search_over():
            raise OutOfTime()
        self.call += 1
        crashes = not (self.shrink_left is not None and self.crash_free)
        try:
            outcome = checker.check(ops, crashes=crashes)
            self.stats.count(outcome)
            if outcome.states_checked:
                for p in capacity.crossed(self.capacity, ops, outcome.trace, getattr(ops, "load", 0)):
                    self.stats.capacity[p.label] += 1
            # (not a history with a load phase: its trace starts after the load, so a load that
            # ran differently would not show; the lane's ordinary histories are traced whole)
            if (not self.probed and crashes and len(ops) >= 2 and outcome.trace is not None
                    and not outcome.partial and not getattr(ops, "load", 0)):
                self.probed = True
                # (the history as checked: an aimed run's outcome carries its aimed schedule)
                self._probe(outcome.ops, outcome)
        except UsageError as exc:
            raise Abort(exc) from None
        except Exception:      # noqa: BLE001 - ours, not the structure's: never shrunk by Hypothesis
            raise not_a_failure(checker) from None
        unexpected = []
        for f in outcome.findings:
            # Only a new bug, or a smaller example of a known one, is worth starting to
            # shrink (known to this lane: what other lanes found must not change what this
            # one tries, or --jobs would change the results); once this batch shrinks a class,
            # every failure of that class counts (Hypothesis's shrinker also moves sideways,
            # to examples no smaller by our measure).
            improves = self._note(outcome, f)
            if not f.expected and (improves or f.cls in self.shrinking):
                unexpected.append(f)
        if self.progress:
            self.progress(Progress.of(self.structure, self.bug, self.stats,
                                      sum(1 for e in self.registry.values() if not e.finding.expected),
                                      time.monotonic() - self.t0))
        for rec in outcome.race_records:
            # a race candidate no writer aim confirmed, as a record (harness/check/race_confirm.py)
            if len(self.race_warnings) < MAX_RACE_WARNINGS and all(r["group"] != rec["group"] for r in self.race_warnings):
                self.race_warnings.append(rec)
        for w in outcome.warnings:
            # an unconfirmed persistency race (harness/check/persistency_race.py): once each
            if w not in self.warnings and sum(x.startswith(UNCONFIRMED) for x in self.warnings) < MAX_RACE_WARNINGS:
                self.warnings.append(w)
        if outcome.pending_hint and not any(w.startswith(PENDING) for w in self.warnings):
            # once per target: why a history's crash states explode (harness/check/pending.py)
            self.warnings.append(PENDING + outcome.pending_hint)
        if (crashes and not outcome.findings and not outcome.partial and not outcome.not_checked
                and outcome.trace is not None and not outcome.explained and not outcome.pruned):
            self.clean.add(digest)
        decision = _Decision(crashes, outcome.trace, determinism.findings_key(outcome.findings),
                             {f.group for f in outcome.findings}, outcome.partial)
        self.decided[key] = decision
        if unexpected:
            if self.shrink_left is None:
                self.shrink_left = self.config.shrink_calls
            same = [f for f in unexpected if f.cls in self.shrinking]
            worst = same[0] if same else min(unexpected, key=lambda f: CLASS_ORDER.get(f.cls, 99))
            if not self.shrinking:
                # (a hang is the exception: each try may cost the whole timeout)
                self.crash_free = (worst.point is None and worst.recovery_of is None
                                   and worst.cls != "operation-hang")
            self.shrinking.add(worst.cls)
            decision.raised, decision.detail = FOUND.get(worst.cls, Found), worst.detail
            raise_found(decision.raised, decision.detail)

    # -- what was found ---------------------------------------------------------------------

    def _note(self, outcome: HistoryOutcome, f: Finding) -> bool:
        """Keep F (of OUTCOME) in the registry and the journal; True if it is new to this
        lane or smaller than this lane's example of its group."""
        size = _size(outcome)
        rank = (size, self.batch_no, self.call)
        entry = self.registry.get(f.group)
        if entry is None:
            self.registry[f.group] = Entry(f.group, size, outcome, f, f.occurrences, time.monotonic() - self.t0,
                                           rank, (self.batch_no, self.call))
        else:
            entry.occurrences += f.occurrences
            # (a leak the code left beats one beside lost stores: findings.plainest)
            better = (plainest(f), rank) < (plainest(entry.finding), entry.rank)
            keep_other(entry, outcome, f, better)
            if better:
                entry.size, entry.outcome, entry.finding, entry.rank = size, outcome, f, rank
        if f.group not in self.journaled and self.journal is not None:
            self.journaled.add(f.group)
            self._journal_bug(outcome, f)
        self._met(outcome, f, size)
        improves = f.group not in self.seen or size < self.seen[f.group]
        if improves:
            self.seen[f.group] = size
        if not f.expected and self.first_unexpected_s is None:
            self.first_unexpected_s = time.monotonic() - self.t0
        return improves

    def _journal_bug(self, outcome: HistoryOutcome, f: Finding) -> None:
        """Write a bug to the journal as first seen (unshrunk): kept even if the run dies next."""
        structure, bug = self.structure, self.bug
        ident = f"{structure}{'-' + bug if bug else ''}-{f.cls}-found{self.share}.{len(self.journaled)}"
        seen_s = time.monotonic() - self.t0
        try:
            rec = build_record(structure=structure, bug=bug, settings=self.settings, outcome=outcome,
                               finding=f, ident=ident, bugdir=self.bugdir, first_seen_s=seen_s)
        except Exception:      # noqa: BLE001 - the journal must never take the run down
            return
        try:
            self.journal.bug(rec)
        except OSError:
            pass
