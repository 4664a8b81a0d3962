"""What a fuzz run of one target is asked to do, and how its batches are dealt out.

Owns `Config` (examples or budget, the history options, batch size, shrink budget, jobs, threads),
`LANES` and `batches` (which batches a share of a target runs), and `budget_for` (a target's
Budget). Every other module of the run room reads these; this one imports nothing of the room,
so the arrows point one way. Never runs, merges or reports anything.

Why lanes: Hypothesis runs in batches of a few examples, each batch seeded by (run seed, batch
number), so a run with --examples is fully deterministic and a run with --budget stops between
batches. Batch b belongs to lane b % LANES, and what a batch shrinks depends only on its own
lane's earlier batches (a bug the lane has already seen in a smaller form is not shrunk again;
harness/run/search.py). A share runs whole lanes, in batch order, so a run with --examples checks
the same histories, and finds the same bugs, with any --jobs up to LANES.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Iterator

from crashcheck.harness.core import defaults
from crashcheck.harness.core.budget import Budget

# Independent lanes of batches: --jobs up to this many finds the same bugs as --jobs 1. More lanes
# cost more shrinking early on (each lane shrinks the bugs it finds once).
LANES = 8


@dataclass
class Config:
    examples: int | None = None      # histories to generate (deterministic), or
    budget: float | None = defaults.BUDGET_S     # seconds (stops between batches)
    max_ops: int = defaults.MAX_OPS
    keys: str = defaults.KEYS
    mix: str = defaults.MIX
    batch: int = 8
    shrink_calls: int = defaults.SHRINK   # histories Hypothesis may try while shrinking, per batch
    jobs: int = defaults.JOBS
    stop_on_class: str | None = None  # end after the batch that first finds this class (unexpected)
    start: float | None = None       # time.monotonic() the first target's budget counts from
    threads: int = 1                 # threads per history (> 1: harness/check/threads.py, crash-free only)
    sched: str = "mixed"             # the scheduler's strategy for threaded histories (mixed, random, pct, stale)
    # threaded: a lane's longest history grows when its batches stop showing new meetings of the
    # threads (harness/run/search.py `_adapt_ops`); off when the user gave --max-ops
    adaptive_ops: bool = True
    # `crashcheck check --history`: the one history to check (a Workload), instead of drawn ones
    history: list | None = None


def batches(share: int, config: Config) -> Iterator[tuple[int, int, int]]:
    """(batch number, lane, examples) of the batches share SHARE of config.jobs runs, in order:
    whole lanes; with --examples, batch b holds examples b*batch.. of the run, whatever --jobs is."""
    jobs = max(1, config.jobs)
    lanes = max(LANES, jobs)
    total = None if config.examples is None else -(-config.examples // config.batch)
    b = 0
    while total is None or b < total:
        if (b % lanes) % jobs == share:
            n = config.batch if total is None else min(config.batch, config.examples - b * config.batch)
            yield b, b % lanes, n
        b += 1


def one_history(config: Config, ops) -> Config:
    """CONFIG made to check exactly the history OPS (a Workload; `crashcheck check --history`, the
    pytest plugin's check_history): one example, no time budget, room for its checked operations."""
    return replace(config, history=ops, examples=1, budget=None, jobs=1,
                   max_ops=max(config.max_ops, len(ops) - getattr(ops, "load", 0)))


def budget_for(config: Config, **kw) -> Budget:
    """The budget of one target: config.budget seconds from config.start (the process start,
    for the first target) or from now; KW as Budget takes them (stop_event, parent_pid)."""
    start = config.start if config.start is not None else time.monotonic()
    return Budget(None if config.examples else config.budget, start=start, **kw)


__all__ = ["LANES", "Config", "batches", "budget_for", "one_history"]
