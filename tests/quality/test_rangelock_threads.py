"""The range lock (trees/rangelock) under the deterministic scheduler, through the pytest gate.

Owns: the seeded bugs the scheduler finds with their class (`crashcheck.run(..., threads=3)`, the
same path as `crashcheck fuzz rangelock --threads 3 --bug NAME`), and the correct lock passing a
short threaded run. Each run stops at the batch that finds the class (stop_on_class), so a test
takes seconds; most of it is Hypothesis shrinking the failure.

The histories are the range_lock model's own thread sections (specs/range_lock.py
`thread_histories`): each thread runs several lock/release rounds over a small universe of
ranges. Every seeded bug is found by the default mixed scheduler (random, PCT and stale drawn per
history).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli
from treeutil import seeded_bugs

ROOT = Path(__file__).resolve().parents[2]
BUGS = {b["name"]: b for b in seeded_bugs(ROOT / "trees" / "rangelock" / "bugs.json")}

# bug -> (seed, examples) at which the default `--sched mixed` finds it (stop_on_class stops the
# run at the batch that does: histories in brackets, measured on this 2-core machine)
FOUND = {
    "overlap-one-side": (1, 100),      # (45)
    "paper-find": (2, 100),            # (53)
    "cas-as-store": (1, 100),          # (49)
    "release-no-retry": (1, 100),      # (52)
    "unlink-before-mark": (1, 100),    # (60)
    # the stale strategy's windows (docs/scheduler.md "stale"), both needing a node of level 0:
    # - succ-before-mark: thread A in find reads curr C's successor S at level 0; B links X right
    #   after C, then C is released (marked) and A, before C's release snips it, reads the mark
    #   and snips pred -> S: X vanishes from level 0 (its holder's release fails, or the final
    #   `!dump` lacks it). A parked on C's next until it was written twice.
    "succ-before-mark": (1, 300),      # (183)
    # - mark-bottom-first: A's trylock of V links level 0 and stops before level 1; R's release of
    #   V marks level 0 and stops; T's trylock of Z (just above V) snips V at level 0 and links Z;
    #   A links V at level 1; T's release of Z descends through V at level 1 and lands on V's
    #   frozen successor: "fail". Three threads each stopped at one point.
    "mark-bottom-first": (2, 200),     # (96)
    # a release of a range nobody holds dies of SIGSEGV (tests/quality/test_thread_crash.py names it)
    "release-unheld-null": (1, 40),
}

# `--sched stale` alone: bug -> (seed, examples)
FOUND_STALE = {"mark-bottom-first": (2, 120), "succ-before-mark": (1, 300)}


def test_every_bug_is_accounted_for():
    assert set(FOUND) == set(BUGS)
    # the concurrent ones say so in the catalog, so `crashcheck fuzz --bug` runs them threaded
    for name, bug in BUGS.items():
        assert (bug.get("threads", 1) > 1) == (bug["class"] != "wrong-value"), name


@pytest.mark.parametrize("bug", sorted(FOUND))
def test_bug_found_with_its_class_by_the_scheduler(trees_built, crashcheck, bug):
    seed, examples = FOUND[bug]
    cls = BUGS[bug]["class"]
    result = crashcheck.run("rangelock", bug=bug, threads=3, seed=seed, examples=examples, stop_on_class=cls)
    assert cls in result.classes, (f"rangelock --bug {bug}: expected {cls}, got {sorted(result.classes) or 'none'} "
                                   f"(report: {result.report})")


def test_correct_range_lock_passes_three_threads(trees_built, crashcheck):
    result = crashcheck.run("rangelock", threads=3, seed=1, examples=60)
    assert result.classes == set(), result.report
    assert result.results["stats"]["histories"] == 60


@pytest.mark.parametrize("bug", sorted(FOUND_STALE))
def test_bug_found_with_its_class_by_stale(trees_built, tmp_path, bug):
    seed, examples = FOUND_STALE[bug]
    out = tmp_path / "r.json"
    r = run_cli("fuzz", "rangelock", "--bug", bug, "--threads", "3", "--sched", "stale", "--seed", seed,
                "--examples", examples, "--stop-on", BUGS[bug]["class"], "--bugdir", tmp_path / "bugs",
                "--json", out, "--quiet", timeout=120)
    classes = {b["class"] for b in json.loads(out.read_text())["bugs"]} if out.exists() else set()
    assert BUGS[bug]["class"] in classes, r.stdout + r.stderr
