"""The unit of work of a fuzz campaign: one share of one target's batches, runnable anywhere.

Owns `Share` (everything a unit needs, picklable: no open files, no process handles),
`fuzz_batch(unit)` (runs it in whatever process it lands in: this one, a local worker process or a
Dask worker on another machine: the one place a Search runs and a unit's end is journaled) and the
build id both sides compare. What a unit returns is its TargetResult: stats, warnings and the
examples it kept, each with its crash state already shrunk; the trace files, pools and images it
made stay in the worker's work folder ($CRASHCHECK_WORKDIR, harness/core/workdir.py) and are
removed there. Merging the results of many units is harness/run/merge.py's, whoever ran them.
Never merges and never chooses where a unit runs (harness/run/executors.py).

Why a share of lanes and not one batch: what a batch shrinks depends on its lane's earlier
batches (harness/run/config.py), so a lane is the smallest piece that runs alone and still
finds what --jobs 1 finds. A unit lost with its worker is run again from its start; with
--examples it then finds exactly what it would have.

Time: a unit's budget counts from the campaign's start, not from when a worker picked it up
(config.start is a monotonic time of the client's clock, meaningless on another machine, so
the unit carries how far into the budget it was sent and the wall-clock time it was sent at).
"""
from __future__ import annotations

import hashlib
import os
import signal
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable

from crashcheck.harness.core.errors import SetupError
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run.config import Config, budget_for
from crashcheck.harness.run.journal import Journal
from crashcheck.harness.run.results import Progress, TargetResult
from crashcheck.harness.run.search import Search
from crashcheck.harness.target import structures

# The Python sources whose behaviour a result depends on (with the drivers and the runner).
SOURCE_PACKAGES = ("crashsim", "harness", "specs")


@dataclass(frozen=True)
class Share:
    structure: str
    bug: str | None
    settings: Settings
    config: Config                  # with jobs = the target's number of shares
    share: int                      # which share of the target's lanes (0 .. config.jobs - 1)
    bugdir: Path
    journal: Journal | None         # None: no journal (on Dask, one that sends its lines to the client)
    build: str = ""                 # the client's build id of this target ("" skips the check)
    into_budget_s: float | None = None   # seconds of the budget spent when the unit was sent
    sent_wall: float = 0.0          # time.time() when it was sent
    target: int = 0                 # which target of the plan (harness/run/plan.py run_plan)


def _digest(paths: list[Path], root: Path, h) -> None:
    for p in sorted(paths):
        h.update(str(p.relative_to(root)).encode() + b"\0")
        h.update(p.read_bytes())


@lru_cache(maxsize=64)
def _build_id(structure: str, bug: str | None, driver: str, stamp: tuple) -> str:
    h = hashlib.sha256()
    root = structures.ROOT
    _digest([p for pkg in SOURCE_PACKAGES for p in (root / pkg).rglob("*.py")], root, h)
    runner = structures.BUILD / "crashsim"
    _digest([p for p in runner.rglob("*") if p.is_file()], structures.BUILD, h)
    h.update(Path(driver).read_bytes())
    s = structures.get(structure)
    for name in ("bugs.json", "expect.json", "meta.json"):
        for folder in (s.folder, s.build):
            if (folder / name).is_file():
                h.update(name.encode() + (folder / name).read_bytes())
    return h.hexdigest()[:16]


def build_id(structure: str, bug: str | None) -> str:
    """A short hash of what decides a target's results on this machine: the Python sources, the
    checker runner, the target's driver and its catalog. Cached while the files are unchanged."""
    driver = structures.get(structure).driver(bug)
    runner = structures.BUILD / "crashsim"
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size)
                  for p in [driver, *runner.rglob("*")] if p.is_file())
    return _build_id(structure, bug, str(driver), stamp)


class BuildMismatch(SetupError):
    """A worker's build differs from the client's: its results would not be the client's."""


def check_build(unit: Share) -> None:
    if not unit.build:
        return
    mine = build_id(unit.structure, unit.bug)
    if mine != unit.build:
        host = os.uname().nodename
        raise BuildMismatch(f"worker {host} (pid {os.getpid()}) has another build of "
                            f"{unit.structure}{' bug ' + unit.bug if unit.bug else ''} (build id {mine}, "
                            f"client {unit.build}); install and build the same crashcheck there "
                            "(scripts/setup) and start the worker again")


def stamp(unit: Share) -> Share:
    """UNIT as sent now: its budget started at unit.config.start (time.monotonic() here), or, if
    that is None, starts when the unit does."""
    start = unit.config.start
    into = None if start is None else time.monotonic() - start
    return replace(unit, into_budget_s=into, sent_wall=time.time())


def fuzz_batch(unit: Share, stop_event=None, progress: Callable[[Progress], None] | None = None,
               parent_pid: int | None = None) -> TargetResult:
    """Run UNIT in this process and return its TargetResult, unmerged and unfinished. STOP_EVENT
    (anything with is_set/set) ends it early, keeping what it found."""
    check_build(unit)
    config = unit.config
    if unit.into_budget_s is not None:
        # where the budget started, on this machine's monotonic clock
        config = replace(config, start=time.monotonic() - unit.into_budget_s - max(0.0, time.time() - unit.sent_wall))
    else:
        config = replace(config, start=None)
    budget = budget_for(config, stop_event=stop_event, parent_pid=parent_pid)
    out = Search(unit.structure, unit.bug, unit.settings, config, unit.share, budget, unit.bugdir,
                 unit.journal, progress).run()
    if unit.journal is not None:
        unit.journal.target_done(unit.structure, unit.bug, out.stats.as_json())
    return out


def ignore_sigint() -> None:
    """A worker leaves SIGINT to the client, which stops every unit through the stop event."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:          # not the main thread (a Dask worker's task thread)
        pass


__all__ = ["BuildMismatch", "Share", "build_id", "check_build", "fuzz_batch", "stamp"]
