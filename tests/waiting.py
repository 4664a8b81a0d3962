"""Waiting for a running crashcheck to reach a state before a test acts on it (sends a signal,
replaces a file, fills a disk): poll for the state itself, up to a deadline, instead of sleeping a
fixed time that races with start-up on a loaded machine (too short: the act lands before the run
is there; long enough for the slowest machine: minutes lost on every other one).
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(cond: Callable[[], T], what: str, timeout: float = 120.0,
               proc: subprocess.Popen | None = None, every: float = 0.05) -> T:
    """Poll COND() until it returns something true, and return that. Fails the test, saying WHAT
    never happened, after TIMEOUT seconds, or as soon as PROC (the run being watched) has ended."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not after {timeout:g} s")
        time.sleep(every)


def checker_folders(work: Path) -> list[Path]:
    """The work folders of the checkers running with CRASHCHECK_WORKDIR=WORK (crashcheck-PID-*),
    made once a checker has its driver and is about to run histories."""
    return sorted(work.glob("crashcheck-*-*"))


def checker_pids(work: Path) -> list[int]:
    return [int(d.name.split("-")[1]) for d in checker_folders(work)]


def probe_texts(structure: str) -> set[str]:
    """The history texts of STRUCTURE's capacity probe (harness/check/capacity.py observe): its
    main history and one per pattern of colliding keys, each traced in a checker's folder before
    the run's first history and no history of the run's."""
    from crashcheck.harness.check.session import history_text
    from crashcheck.harness.target import structures
    from crashcheck.specs.capacity_probe import PATTERNS, probe_history
    s = structures.get(structure)
    model = s.model()
    return {history_text(model, probe_history(s.key_kind, s.value_size, s.map_ops, s.reserved_keys, pattern=p))
            for p in ("", *PATTERNS)}


def history_checked(work: Path, structure: str) -> Callable[[], bool]:
    """A condition: some checker under WORK, checking STRUCTURE, has checked a whole history. A
    checker writes each history it runs to its folder's `history` file (the repeat run of the
    first one writes the same text again), so once the text there changes from a history's, the
    history before has been checked. The capacity probe's histories, written there first, are
    none of the run's: skipped."""
    first: dict[Path, str] = {}
    probes = probe_texts(structure)

    def cond() -> bool:
        for folder in checker_folders(work):
            try:
                text = (folder / "history").read_text()
            except OSError:
                continue
            if not text.endswith("\n") or text in probes:   # (caught while it is being written)
                continue
            if first.setdefault(folder, text) != text:
                return True
        return False
    return cond


def journal_has(journal: Path, needle: str) -> Callable[[], bool]:
    """A condition: the run's journal (RESULTS.journal) has a line with NEEDLE in it."""
    def cond() -> bool:
        try:
            return needle in journal.read_text()
        except OSError:
            return False
    return cond
