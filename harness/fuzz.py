"""The fuzz loop: Hypothesis generates histories, the pipeline crashes each everywhere, and every
failure is kept in its smallest form.

Owns: budgets, seeds, parallel jobs, the registry of bugs, and turning it into results.

Design notes
- Hypothesis runs in batches of a few examples, each batch seeded by (run seed, batch number), so a
  run with --examples is fully deterministic and a run with --budget stops between batches. A batch
  that finds an unexpected failure raises a class-specific exception, which makes Hypothesis
  shrink the history while keeping the class; every history it tries goes through the pipeline.
- The registry sees every finding of every history checked (generated or tried while shrinking)
  and keeps, per bug (class + first lost-store site, specs/oracle.py's grouping), the smallest
  history that shows it. So bugs Hypothesis did not shrink on purpose still come out small, and
  Hypothesis's own end-of-run report (or a flaky replay) is never needed.
- Shrinking has a budget of its own (a number of tries, not seconds, so a run with --examples
  stays deterministic), so one stubborn bug cannot eat the run.
- Time (harness/budget.py): with --budget, the search (generation and Hypothesis's shrinking)
  ends at the budget's soft deadline, and shrinking the crash states of the bugs found at its
  hard one; a history being checked at that moment keeps what it found so far. SIGINT/SIGTERM
  and internal errors end the loop the same way: the bugs found so far are returned (and were
  already in the journal, harness/journal.py, the moment they were found).
- Parallel jobs are worker processes of our own (not multiprocessing.Pool): they ignore SIGINT
  and stop when the parent sets the shared stop event, so Ctrl-C ends every worker cleanly and
  their partial results still come back.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait as wait_ready
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings as hsettings
from hypothesis.errors import Flaky, HypothesisException

from crashsim.runner import Stopped
from harness import defaults, structures
from harness.budget import Budget, OutOfTime, RunInterrupted
from harness.errors import DriverFailure, UsageError
from harness.findings import Finding, HistoryOutcome
from harness.journal import Journal
from harness.pipeline import Checker
from harness.records import build_record
from harness.settings import Settings
from harness.strategies import histories
from harness.threads import threaded_histories
from specs.oracle import CLASSES, CONCURRENT_CLASSES

CLASS_ORDER = {c: i for i, c in enumerate(CLASSES + CONCURRENT_CLASSES)}


class Found(Exception):
    """Raised inside the Hypothesis property for an unexpected finding; one subclass per class so
    Hypothesis shrinks each class separately."""


FOUND = {cls: type(f"Found_{cls.replace('-', '_')}", (Found,), {}) for cls in CLASSES + CONCURRENT_CLASSES}


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
    threads: int = 1                 # threads per history (> 1: harness/threads.py, crash-free only)
    sched: str = "random"            # the scheduler's strategy for threaded histories (random, pct)


@dataclass
class Stats:
    histories: int = 0
    partial_histories: int = 0       # histories whose exploration the budget (or a stop) cut short
    crash_points: int = 0
    states_legal: int = 0
    states_explored: int = 0
    states_checked: int = 0
    points_sampled: int = 0          # crash points explored only in part (bounded strategy)
    not_checked: int = 0             # threaded histories whose linearizability search ran out of budget
    threads: int = 1                 # threads per history
    elapsed_s: float = 0.0

    def add(self, other: "Stats") -> None:
        for name in ("histories", "partial_histories", "crash_points", "states_legal", "states_explored",
                     "states_checked", "points_sampled", "not_checked"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.elapsed_s = max(self.elapsed_s, other.elapsed_s)
        self.threads = max(self.threads, other.threads)

    def as_json(self) -> dict:
        legal = self.states_legal if self.states_legal < 2 ** 53 else str(self.states_legal)
        return {"histories": self.histories, "partial_histories": self.partial_histories,
                "crash_points": self.crash_points, "states_legal": legal,
                "states_explored": self.states_explored, "states_checked": self.states_checked,
                "points_sampled": self.points_sampled,
                "not_checked": self.not_checked, "threads": self.threads,
                "elapsed_s": round(self.elapsed_s, 2),
                "states_per_s": round(self.states_explored / self.elapsed_s, 1) if self.elapsed_s else 0.0}


@dataclass
class Entry:
    """The smallest example seen of one bug."""
    size: tuple[int, int]
    outcome: HistoryOutcome
    finding: Finding
    occurrences: int = 0
    first_seen: float = 0.0          # seconds into the run


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


def _size(outcome: HistoryOutcome) -> tuple[int, int]:
    text = outcome.model.op_text if outcome.model is not None else str
    return (len(outcome.ops), sum(len(text(op)) for op in outcome.ops))


def fuzz_target(structure: str, bug: str | None, settings: Settings, config: Config,
                worker: int = 0, progress: Callable[[dict], None] | None = None,
                bugdir: Path = Path("crashcheck-bugs"), budget: Budget | None = None,
                journal: Journal | None = None) -> TargetResult:
    """Fuzz one structure (or seeded-bug variant); worker W of config.jobs takes batches W, W+jobs, ...
    Returns what was found even when the budget, a signal or an internal error ends it early."""
    s = structures.get(structure)
    budget = budget or _budget_for(config)
    t0 = time.monotonic()
    stats = Stats()
    registry: dict[tuple[str, str], Entry] = {}
    first_unexpected: list[float] = []
    interrupted: str | None = None
    error: str | None = None
    unshrunk = 0
    with Checker(s, bug, settings, budget=budget) as checker:
        strategy = histories(checker.model, keys=config.keys, mix=config.mix, max_ops=config.max_ops,
                             key_kind=checker.key_kind, value_size=checker.value_size,
                             value_min=checker.value_min)
        if config.threads > 1:
            strategy = threaded_histories(strategy, config.threads, config.sched)
        stats.threads = config.threads
        shrink_left: list[float] = []      # set when this batch found a failure to shrink
        shrinking: set[str] = set()
        # Shrinking a failure of the crash-free run needs only crash-free runs, which cost a
        # small part of a full check (no crash states): each counts a tenth of a shrink call.
        crash_free: list[bool] = [False]
        journaled: set[tuple[str, str]] = set()

        def prop(ops):
            if shrink_left:
                if shrink_left[0] <= 0:
                    return      # out of shrink budget: let Hypothesis finish
                # (a threaded history is only ever checked crash-free: each try costs a full run)
                shrink_left[0] -= 0.1 if crash_free[0] and config.threads == 1 else 1
            if budget.search_over():
                raise OutOfTime()
            try:
                outcome = checker.check(ops, crashes=not (shrink_left and crash_free[0]))
            except UsageError as exc:
                raise _Abort(exc) from None
            stats.histories += 1
            stats.partial_histories += outcome.partial
            stats.not_checked += outcome.not_checked
            stats.crash_points += outcome.crash_points
            stats.states_legal += outcome.states_legal
            stats.states_explored += outcome.states_explored
            stats.states_checked += outcome.states_checked
            stats.points_sampled += outcome.points_sampled
            unexpected = []
            for f in outcome.findings:
                entry = registry.get(f.group)
                size = _size(outcome)
                improves = entry is None or size < entry.size
                if entry is None:
                    registry[f.group] = Entry(size, outcome, f, f.occurrences, time.monotonic() - t0)
                else:
                    entry.occurrences += f.occurrences
                    if improves:
                        entry.size, entry.outcome, entry.finding = size, outcome, f
                if f.group not in journaled and journal is not None:
                    journaled.add(f.group)
                    _journal_bug(journal, structure, bug, settings, outcome, f, bugdir, len(journaled),
                                 worker, time.monotonic() - t0)
                # Only a new bug, or a smaller example of a known one, is worth starting to
                # shrink; once this batch shrinks a class, every failure of that class counts
                # (Hypothesis's shrinker also moves sideways, to examples no smaller by our measure).
                if not f.expected and (improves or f.cls in shrinking):
                    unexpected.append(f)
                    if not first_unexpected:
                        first_unexpected.append(time.monotonic() - t0)
            if progress:
                progress({"structure": structure, "bug": bug, "histories": stats.histories,
                          "states": stats.states_explored, "bugs": sum(1 for e in registry.values() if not e.finding.expected),
                          "elapsed": time.monotonic() - t0})
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
                raise FOUND.get(worst.cls, Found)(worst.detail)

        jobs = max(1, config.jobs)
        mine = (None if config.examples is None else
                config.examples // jobs + (1 if worker < config.examples % jobs else 0))
        batch_no = worker
        done_examples = 0
        try:
            while True:
                if mine is not None and done_examples >= mine:
                    break
                if budget.search_over():
                    break
                n = config.batch if mine is None else min(config.batch, mine - done_examples)
                shrink_left.clear()
                shrinking.clear()
                crash_free[0] = False
                test = hsettings(max_examples=n, database=None, deadline=None, derandomize=False,
                                 phases=[Phase.generate, Phase.shrink], report_multiple_bugs=True,
                                 suppress_health_check=list(HealthCheck), print_blob=False)(
                    hseed(settings.seed * 100_003 + batch_no)(given(strategy)(prop)))
                try:
                    test()
                except (OutOfTime, KeyboardInterrupt, _Abort):
                    raise
                except BaseException as exc:      # noqa: BLE001 - sorted by _only_expected
                    if not _only_expected(exc):
                        raise
                done_examples += n
                batch_no += jobs
                if config.stop_on_class and any(e.finding.cls == config.stop_on_class and not e.finding.expected
                                                for e in registry.values()):
                    break
        except OutOfTime:
            pass
        except _Abort as exc:
            raise exc.error from None
        except KeyboardInterrupt as exc:
            interrupted = _signal_name(exc)
        except Exception:      # noqa: BLE001 - an internal error: keep what was found
            error = traceback.format_exc()
        # Shrink the crash state of every example that will be reported, then merge examples
        # that turn out to be the same bug once shrunk (same class, same first lost store).
        # With no time left (or after a signal or an error) bugs are reported as first seen.
        merged: dict[tuple[str, str], Entry] = {}
        for entry in sorted(registry.values(), key=lambda e: e.size):
            if interrupted or error or budget.expired():
                unshrunk += entry.finding.point is not None and entry.finding.cls != "leak"
            else:
                try:
                    checker.finalize(entry.outcome, entry.finding)
                except (Stopped, OutOfTime, DriverFailure):
                    unshrunk += 1
                except KeyboardInterrupt as exc:
                    interrupted = _signal_name(exc)
                    unshrunk += 1
            have = merged.get(entry.finding.group)
            if have is None:
                merged[entry.finding.group] = entry
            else:
                have.occurrences += entry.occurrences
                have.first_seen = min(have.first_seen, entry.first_seen)
        registry = merged
    stats.elapsed_s = time.monotonic() - t0
    result = TargetResult(structure, bug, stats,
                          first_unexpected_s=first_unexpected[0] if first_unexpected else None,
                          interrupted=interrupted, error=error, unshrunk=unshrunk)
    for entry in registry.values():
        if not entry.finding.expected:
            cls = entry.finding.cls
            result.first_by_class[cls] = round(min(result.first_by_class.get(cls, entry.first_seen),
                                                   entry.first_seen), 2)
    counters: dict[str, int] = {}
    for _, entry in sorted(registry.items(), key=lambda kv: (kv[1].finding.expected, kv[0])):
        cls = entry.finding.cls
        counters[cls] = counters.get(cls, 0) + 1
        ident = f"{structure}{'-' + bug if bug else ''}-{cls}-{counters[cls]}"
        entry.finding.occurrences = entry.occurrences
        rec = build_record(structure=structure, bug=bug, settings=settings, outcome=entry.outcome,
                           finding=entry.finding, ident=ident, bugdir=bugdir)
        rec["first_seen_s"] = round(entry.first_seen, 2)
        result.records.append(rec)
    if journal is not None:
        journal.target_done(structure, bug, stats.as_json())
    return result


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


def _signal_name(exc: BaseException) -> str:
    return signal.Signals(exc.signum).name if isinstance(exc, RunInterrupted) else "SIGINT"


def _only_expected(exc: BaseException) -> bool:
    """True if EXC is (a group of) our Found exceptions or Hypothesis's flaky-replay complaints."""
    if isinstance(exc, (Found, Flaky)):
        return True
    group = getattr(exc, "exceptions", None)
    if group:
        return all(_only_expected(e) for e in group)
    if isinstance(exc, HypothesisException) and "Flaky" in type(exc).__name__:
        return True
    return False


def _worker_main(conn, args, stop_event, parent: int) -> None:
    """A worker process: fuzz one (target, worker) job and send its TargetResult (or the error
    that ended it) to the parent. SIGINT is the parent's business (it sets the stop event);
    SIGTERM sent to the worker alone also ends it cleanly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    structure, bug, settings, config, worker, bugdir, journal = args
    budget = _budget_for(config, stop_event=stop_event, parent_pid=parent)
    signal.signal(signal.SIGTERM, lambda *_: budget.stop())
    try:
        out = fuzz_target(structure, bug, settings, config, worker, None, bugdir, budget, journal)
    except UsageError as exc:
        out = exc
    except BaseException:      # noqa: BLE001 - reported to the parent
        out = RuntimeError(f"worker {worker} of {structure}: {traceback.format_exc()}")
    try:
        conn.send(out)
    finally:
        conn.close()


def fuzz_targets(targets: list[tuple[str, str | None]], settings: Settings, config: Config,
                 progress: Callable[[dict], None] | None = None,
                 bugdir: Path = Path("crashcheck-bugs"), journal: Journal | None = None) -> list[TargetResult]:
    """Fuzz every (structure, bug) target, each with its own budget of config.budget seconds;
    with config.jobs > 1, targets and batches run in worker processes, and a target's workers
    are merged (smallest example per bug wins). On SIGINT/SIGTERM every worker is told to stop
    and what they found comes back, marked interrupted."""
    if config.jobs <= 1:
        out = []
        for i, (s, b) in enumerate(targets):
            cfg = config if i == 0 else replace(config, start=None)
            r = fuzz_target(s, b, settings, cfg, 0, progress, bugdir, None, journal)
            out.append(r)
            if r.interrupted or r.error:
                break        # the run ends; targets not started stay out of the results
        return out
    # Jobs beyond the first round of processes start later: their budgets count from their start.
    procs = min(config.jobs, os.cpu_count() or 1)
    jobs = [(s, b, settings, config if i < procs else replace(config, start=None), w, bugdir, journal)
            for i, (s, b, w) in enumerate((s, b, w) for s, b in targets for w in range(config.jobs))]
    parts, lost, interrupted = _run_workers(jobs, procs)
    merged: list[TargetResult] = []
    for s, b in targets:
        mine = [p for p in parts if p.structure == s and p.bug == b]
        if not mine and interrupted:
            continue
        out = TargetResult(s, b, Stats())
        best: dict[tuple, dict] = {}
        for p in mine:
            out.stats.add(p.stats)
            out.unshrunk += p.unshrunk
            out.interrupted = out.interrupted or p.interrupted
            out.error = out.error or p.error
            if p.first_unexpected_s is not None:
                out.first_unexpected_s = min(out.first_unexpected_s or p.first_unexpected_s, p.first_unexpected_s)
            for cls, t in p.first_by_class.items():
                out.first_by_class[cls] = min(out.first_by_class.get(cls, t), t)
            for rec in p.records:
                key = (rec["class"], tuple(rec["sites"]) or rec["crash"].get("event"))
                have = best.get(key)
                if have is None or len(rec["history"]) < len(have["history"]):
                    if have is not None:
                        rec["occurrences"] += have["occurrences"]
                    best[key] = rec
                else:
                    have["occurrences"] += rec["occurrences"]
        if interrupted:
            out.interrupted = out.interrupted or interrupted
        if any(j[0] == s and j[1] == b for j in lost):
            out.interrupted = out.interrupted or "worker lost"
        counters: dict[str, int] = {}
        for rec in sorted(best.values(), key=lambda r: (r["expected"], r["class"], r["id"])):
            counters[rec["class"]] = counters.get(rec["class"], 0) + 1
            ident = f"{s}{'-' + b if b else ''}-{rec['class']}-{counters[rec['class']]}"
            rec["replay"] = rec["replay"].replace(rec["id"], ident)
            rec["id"] = ident
            out.records.append(rec)
        merged.append(out)
    return merged


def _run_workers(jobs: list[tuple], procs: int) -> tuple[list[TargetResult], list[tuple], str | None]:
    """Run JOBS in at most PROCS worker processes at a time. Returns the results, the jobs whose
    worker died without answering, and the signal that interrupted the run (None if none)."""
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    pending = list(jobs)
    running: dict = {}       # connection -> (process, job)
    results: list[TargetResult] = []
    lost: list[tuple] = []
    interrupted: str | None = None
    failure: BaseException | None = None
    parent = os.getpid()
    give_up = None           # after a stop: when to stop waiting for workers
    while pending or running:
        try:
            while pending and len(running) < procs and interrupted is None and failure is None:
                job = pending.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker_main, args=(send, job, stop, parent), daemon=True)
                proc.start()
                send.close()
                running[recv] = (proc, job)
            if not running:
                break
            ready = wait_ready(list(running), timeout=0.5)
            for conn in ready:
                proc, job = running.pop(conn)
                try:
                    got = conn.recv()
                except (EOFError, OSError):
                    got = None
                conn.close()
                proc.join(5)
                if got is None:
                    lost.append(job)
                elif isinstance(got, BaseException):
                    failure = failure or got
                    stop.set()
                else:
                    results.append(got)
            if give_up is not None and time.monotonic() > give_up:
                for conn, (proc, job) in list(running.items()):
                    proc.kill()
                    proc.join(5)
                    lost.append(job)
                    running.pop(conn)
        except KeyboardInterrupt as exc:
            interrupted = interrupted or _signal_name(exc)
            stop.set()
            pending.clear()
            give_up = time.monotonic() + 20       # workers stop within about a second
    if failure is not None:
        raise failure
    return results, lost, interrupted


