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
"""
from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings as hsettings
from hypothesis.errors import Flaky, HypothesisException

from harness import structures
from harness.pipeline import Checker, Finding, HistoryOutcome, Settings
from harness.records import build_record
from harness.strategies import histories
from specs.oracle import CLASSES

CLASS_ORDER = {c: i for i, c in enumerate(CLASSES)}


class Found(Exception):
    """Raised inside the Hypothesis property for an unexpected finding; one subclass per class so
    Hypothesis shrinks each class separately."""


FOUND = {cls: type(f"Found_{cls.replace('-', '_')}", (Found,), {}) for cls in CLASSES}


@dataclass
class Config:
    examples: int | None = None      # histories to generate (deterministic), or
    budget: float | None = 20.0      # seconds (stops between batches)
    max_ops: int = 10
    keys: str = "mixed"
    mix: str = "mixed"
    batch: int = 8
    shrink_calls: int = 40           # histories Hypothesis may try while shrinking, per batch
    jobs: int = 1
    stop_on_class: str | None = None  # end after the batch that first finds this class (unexpected)


@dataclass
class Stats:
    histories: int = 0
    crash_points: int = 0
    states_legal: int = 0
    states_explored: int = 0
    states_checked: int = 0
    elapsed_s: float = 0.0

    def add(self, other: "Stats") -> None:
        for name in ("histories", "crash_points", "states_legal", "states_explored", "states_checked"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.elapsed_s = max(self.elapsed_s, other.elapsed_s)

    def as_json(self) -> dict:
        legal = self.states_legal if self.states_legal < 2 ** 53 else str(self.states_legal)
        return {"histories": self.histories, "crash_points": self.crash_points, "states_legal": legal,
                "states_explored": self.states_explored, "states_checked": self.states_checked,
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


def _size(outcome: HistoryOutcome) -> tuple[int, int]:
    return (len(outcome.ops), sum(len(op.text()) for op in outcome.ops))


def fuzz_target(structure: str, bug: str | None, settings: Settings, config: Config,
                worker: int = 0, progress: Callable[[dict], None] | None = None,
                bugdir: Path = Path("crashcheck-bugs")) -> TargetResult:
    """Fuzz one structure (or seeded-bug variant); worker W of config.jobs takes batches W, W+jobs, ..."""
    s = structures.get(structure)
    t0 = time.monotonic()
    stats = Stats()
    registry: dict[tuple[str, str], Entry] = {}
    deadline = t0 + config.budget if config.budget and not config.examples else None
    first_unexpected: list[float] = []
    with Checker(s, bug, settings) as checker:
        strategy = histories(keys=config.keys, mix=config.mix, max_ops=config.max_ops,
                             key_kind=checker.key_kind, value_size=checker.value_size,
                             value_min=checker.value_min)
        shrink_left: list[float] = []      # set when this batch found a failure to shrink
        shrinking: set[str] = set()
        # Shrinking a failure of the crash-free run needs only crash-free runs, which cost a
        # small part of a full check (no crash states): each counts a tenth of a shrink call.
        crash_free: list[bool] = [False]

        def prop(ops):
            if shrink_left:
                if shrink_left[0] <= 0:
                    return      # out of shrink budget: let Hypothesis finish
                shrink_left[0] -= 0.1 if crash_free[0] else 1
            elif deadline and time.monotonic() > deadline:
                return
            outcome = checker.check(ops, crashes=not (shrink_left and crash_free[0]))
            stats.histories += 1
            stats.crash_points += outcome.crash_points
            stats.states_legal += outcome.states_legal
            stats.states_explored += outcome.states_explored
            stats.states_checked += outcome.states_checked
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
                    crash_free[0] = worst.point is None and worst.recovery_of is None
                shrinking.add(worst.cls)
                raise FOUND.get(worst.cls, Found)(worst.detail)

        jobs = max(1, config.jobs)
        mine = (None if config.examples is None else
                config.examples // jobs + (1 if worker < config.examples % jobs else 0))
        batch_no = worker
        done_examples = 0
        while True:
            if mine is not None and done_examples >= mine:
                break
            if deadline and time.monotonic() > deadline:
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
            except BaseException as exc:      # noqa: BLE001 - sorted by _only_expected
                if not _only_expected(exc):
                    raise
            done_examples += n
            batch_no += jobs
            if config.stop_on_class and any(e.finding.cls == config.stop_on_class and not e.finding.expected
                                            for e in registry.values()):
                break
        # Shrink the crash state of every example that will be reported, then merge examples
        # that turn out to be the same bug once shrunk (same class, same first lost store).
        merged: dict[tuple[str, str], Entry] = {}
        for entry in sorted(registry.values(), key=lambda e: e.size):
            checker.finalize(entry.outcome, entry.finding)
            have = merged.get(entry.finding.group)
            if have is None:
                merged[entry.finding.group] = entry
            else:
                have.occurrences += entry.occurrences
                have.first_seen = min(have.first_seen, entry.first_seen)
        registry = merged
    stats.elapsed_s = time.monotonic() - t0
    result = TargetResult(structure, bug, stats,
                          first_unexpected_s=first_unexpected[0] if first_unexpected else None)
    for entry in registry.values():
        if not entry.finding.expected:
            cls = entry.finding.cls
            result.first_by_class[cls] = round(min(result.first_by_class.get(cls, entry.first_seen),
                                                   entry.first_seen), 2)
    counters: dict[str, int] = {}
    for (cls, _), entry in sorted(registry.items(), key=lambda kv: (kv[1].finding.expected, kv[0])):
        counters[cls] = counters.get(cls, 0) + 1
        ident = f"{structure}{'-' + bug if bug else ''}-{cls}-{counters[cls]}"
        entry.finding.occurrences = entry.occurrences
        rec = build_record(structure=structure, bug=bug, settings=settings, outcome=entry.outcome,
                           finding=entry.finding, ident=ident, bugdir=bugdir)
        rec["first_seen_s"] = round(entry.first_seen, 2)
        result.records.append(rec)
    return result


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


def _worker(args) -> TargetResult:
    structure, bug, settings, config, worker, bugdir = args
    return fuzz_target(structure, bug, settings, config, worker, None, bugdir)


def fuzz_targets(targets: list[tuple[str, str | None]], settings: Settings, config: Config,
                 progress: Callable[[dict], None] | None = None,
                 bugdir: Path = Path("crashcheck-bugs")) -> list[TargetResult]:
    """Fuzz every (structure, bug) target; with config.jobs > 1, targets and batches run in
    parallel processes, and a target's workers are merged (smallest example per bug wins)."""
    if config.jobs <= 1:
        return [fuzz_target(s, b, settings, config, 0, progress, bugdir) for s, b in targets]
    jobs = [(s, b, settings, config, w, bugdir) for s, b in targets for w in range(config.jobs)]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(min(config.jobs, os.cpu_count() or 1)) as pool:
        parts = pool.map(_worker, jobs)
    merged: list[TargetResult] = []
    for s, b in targets:
        mine = [p for p in parts if p.structure == s and p.bug == b]
        out = TargetResult(s, b, Stats())
        best: dict[tuple, dict] = {}
        for p in mine:
            out.stats.add(p.stats)
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
        counters: dict[str, int] = {}
        for rec in sorted(best.values(), key=lambda r: (r["expected"], r["class"], r["id"])):
            counters[rec["class"]] = counters.get(rec["class"], 0) + 1
            ident = f"{s}{'-' + b if b else ''}-{rec['class']}-{counters[rec['class']]}"
            rec["replay"] = rec["replay"].replace(rec["id"], ident)
            rec["id"] = ident
            out.records.append(rec)
        merged.append(out)
    return merged
