"""The plan of a fuzz run: its targets, cut into units, run on an executor, merged into Results.

Owns `run_plan` (every (structure, bug, settings, config) target of a plan: units for the
executor, progress summed per target, the merge of each target, harness/run/merge.py) and the
two shorthands `fuzz_targets` and `fuzz_target`. Whatever runs the units (this process, local
worker processes for --jobs N, Dask for --dask; harness/run/executors.py), a target's results are
merged the same way. Never searches (harness/run/search.py), never parses a command line and
never writes the results file (the CLI does, harness/cli/cmd_fuzz.py).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run import merge
from crashcheck.harness.run.batch import Share, build_id
from crashcheck.harness.run.config import Config
from crashcheck.harness.run.executors import InProcess, LocalProcesses
from crashcheck.harness.run.journal import Journal
from crashcheck.harness.run.results import Progress, Results, TargetResult

Plan = list[tuple[str, str | None, Settings, Config]]


def run_plan(plan: Plan, progress: Callable[[Progress], None] | None = None,
             bugdir: Path = Path("crashcheck-bugs"), journal: Journal | None = None,
             executor=None) -> Results:
    """Fuzz every (structure, bug, settings, config) target of PLAN on EXECUTOR (InProcess when
    None), each with its own budget of config.budget seconds. Each target is cut into the
    executor's number of shares of its lanes (harness/run/batch.py Share), every unit of every
    target is handed to it at once, and a target's units are merged as --jobs 1 would have kept
    their examples (harness/run/merge.py). On SIGINT/SIGTERM every unit is told to stop and what
    they found comes back, marked interrupted."""
    executor = executor or InProcess()
    units = []
    for t, (s, b, st, cfg) in enumerate(plan):
        shares = executor.shares(cfg)
        for w in range(shares):
            # Units beyond the first round start later: their budgets count from their start.
            start = cfg.start if len(units) < executor.slots else None
            units.append(Share(s, b, st, replace(cfg, jobs=shares, start=start), w, bugdir,
                               executor.journal(journal), executor.build(build_id, s, b), target=t))
    parts, _lost, interrupted, error = executor.run(units, _progress_sum(units, progress))
    targets: list[TargetResult] = []
    ran = {t for t in range(len(plan)) if any(u.target == t for u, _ in parts)} or {0}
    for t, (s, b, st, cfg) in enumerate(plan):
        if t not in ran and (interrupted or not error):
            # None of its units ran: a signal, or an internal error of the target before it
            # (in this process), ended the run first. Without an error of the executor's to
            # carry, it stays out of the results.
            continue
        out = merge.merge_target(s, b, t, [r for u, r in parts if u.target == t],
                                 sum(u.target == t for u in units), interrupted, error)
        merge.finish(out, st, bugdir)
        targets.append(out)
    if error and not any(r.error for r in targets):
        targets[0].error = error
    return Results(targets, plan[0][2])


def fuzz_targets(targets: list[tuple[str, str | None]], settings: Settings, config: Config,
                 progress: Callable[[Progress], None] | None = None,
                 bugdir: Path = Path("crashcheck-bugs"), journal: Journal | None = None,
                 executor=None) -> Results:
    """Fuzz every (structure, bug) target with SETTINGS and CONFIG, in this process (--jobs 1) or
    on EXECUTOR (local worker processes for config.jobs > 1 when none is given); see run_plan."""
    if executor is None and config.jobs > 1:
        executor = LocalProcesses(config.jobs)
    return run_plan([(s, b, settings, config) for s, b in targets], progress, bugdir, journal, executor)


def fuzz_target(structure: str, bug: str | None, settings: Settings, config: Config,
                progress: Callable[[Progress], None] | None = None,
                bugdir: Path = Path("crashcheck-bugs"), journal: Journal | None = None) -> TargetResult:
    """Fuzz one structure (or seeded-bug variant) in this process; what was found even when the
    budget, a signal or an internal error ends it early."""
    return run_plan([(structure, bug, settings, config)], progress, bugdir, journal).targets[0]


def _progress_sum(units: list[Share], progress: Callable[[Progress], None] | None):
    """A callback for the executor's per-unit progress reports that passes on, for the unit's
    target, the sum over its units' latest reports (Progress.total)."""
    if progress is None:
        return None
    latest: dict[int, Progress] = {}

    def on_progress(index: int, p: Progress) -> None:
        latest[index] = p
        target = units[index].target
        progress(Progress.total([q for i, q in latest.items() if units[i].target == target]))
    return on_progress


__all__ = ["Plan", "fuzz_target", "fuzz_targets", "run_plan"]
