"""A crash point whose states hang after recovery costs a few full check timeouts, not one per
state, and the finding says how many states hung (harness/check/hangs.py).

Uses tests/fixtures/seqlock_tree, built with `crashcheck build`: with its seeded bug odd-version,
recovery leaves the odd version a crash inside an insert left in its slot, and every reader that
reaches the slot afterwards waits forever. Between the version's persist and the record's, the
record's six pieces are pending in any order: every state of those crash points hangs in the
follow-up operations. Nothing here is timed: which limit a check had is in its answer
(`limit_ms`), and the states that hang are those that hang when every state gets the whole limit.
"""
import json
from collections import Counter
from pathlib import Path

import pytest

import crashcheck.harness.check.pipeline
from cli_run import run_cli
from crashcheck.harness.target import structures
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.core.settings import Settings
from crashcheck.specs import registry
from crashcheck.specs.model import with_load
from crashcheck.specs.oracle import STOP_SIGNALS
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "seqlock_tree"
MAP = registry.get("ordered_map")
# the first insert is a load phase; the second is crash-checked
HISTORY = with_load([MAP.parse_op(x) for x in ("insert 1 10", "insert 2 20")], 1)
AFTER = 2            # checks of a point that may take the whole timeout
TIMEOUT_MS = 200     # per check: small, so that the run that gives every state all of it is quick
LIMIT = 12           # bounded: states per crash point
EXPLORE = crashcheck.harness.check.pipeline.explore
TALLY = crashcheck.harness.check.pipeline.HangTally


@pytest.fixture(scope="module")
def seqlock(instrument_built):
    build_once("seqlock", "--adapter", FIXTURE / "seqlock.c")
    return structures.get("seqlock")


def _run(seqlock, monkeypatch, hang_after: int, strategy: str = "bounded"):
    """Check HISTORY; (its outcome, every explored outcome as (point, hung, limit_ms, checked),
    the history's HangTally)."""
    seen, tallies = [], []

    def spy(*args, **kw):
        for out in EXPLORE(*args, **kw):
            res = out.result
            hung = res.status == "timeout" and res.signal not in STOP_SIGNALS
            seen.append((out.point.index, hung, res.limit_ms, out.cached_from is None))
            yield out
    def tally():
        tallies.append(TALLY())
        return tallies[-1]
    monkeypatch.setattr(crashcheck.harness.check.pipeline, "explore", spy)
    monkeypatch.setattr(crashcheck.harness.check.pipeline, "HangTally", tally)
    settings = Settings(strategy=strategy, limit=LIMIT, seed=1, recovery_crashes=0, timeout_ms=TIMEOUT_MS,
                        hang_after=hang_after)
    with Checker(seqlock, "odd-version", settings) as checker:
        outcome = checker.check(HISTORY)
    assert len(tallies) == 1
    return outcome, seen, tallies[0]


def test_a_hanging_history_costs_two_full_timeouts_and_its_finding_counts_the_states(seqlock, monkeypatch):
    outcome, seen, _ = _run(seqlock, monkeypatch, AFTER)
    assert not outcome.partial
    # over the whole history (all its crash points), the first two checks that hang get the whole
    # timeout, the others the shorter limit (whether sent in one batch or not)
    hung = [limit for p, hung, limit, checked in seen if hung and checked]
    assert len(hung) > AFTER and hung[:AFTER] == [None] * AFTER, hung
    assert all(limit is not None for limit in hung[AFTER:]), hung
    short = Counter(p for p, hung, limit, checked in seen if hung and limit is not None and checked)
    # the point where every state hangs (its first state's image was checked at the point before)
    assert max(short.values()) >= LIMIT - 1 - AFTER, short

    # The same history with every state given the whole timeout: the same states hang.
    plain, every, _ = _run(seqlock, monkeypatch, 0)
    assert all(limit is None for _, _, limit, _ in every)
    assert [(p, hung) for p, hung, _, _ in seen] == [(p, hung) for p, hung, _, _ in every]
    hung_at = Counter(p for p, hung, _, _ in every if hung)

    # one finding per way of hanging, at the same crash point, counting the same states: those of
    # its point that hung its way when every state had the whole timeout
    hangs = {f.group: f for f in outcome.findings if f.hung is not None}
    truth = {f.group: f for f in plain.findings if f.hung is not None}
    assert ("post-recovery-divergence", "follow-up: lookup: timeout") in hangs
    assert hangs.keys() == truth.keys()
    for group, f in hangs.items():
        t = truth[group]
        assert f.point.index == t.point.index and f.hung.states == t.hung.states, group
        assert t.hung.full == t.hung.states and t.hung.short == 0
        assert f.hung.full <= AFTER and f.hung.full + f.hung.short <= f.hung.states <= hung_at[f.point.index]
        assert (f.hung.history_states, f.hung.history_points) == (t.hung.history_states, t.hung.history_points)
    # over the history, the findings count every state that hung
    assert sum(f.hung.history_states for f in hangs.values()) == sum(hung_at.values())
    # at the points answered with the shorter limit, every sampled state hung
    assert all(hung_at[p] == outcome.coverage.per_point[p][1] for p in short)


def test_under_lazy_exploration_a_history_costs_two_full_timeouts_per_way_of_hanging(seqlock, monkeypatch):
    """The default strategy: a hanging crash point has one or two executions (a class of states
    hangs as one), so only a budget over the whole history saves anything. Every check that ran
    out of the whole timeout, in exploration or checked again, is in the tally: at most AFTER per
    way of hanging. The findings are those of the run that gives every state the whole timeout."""
    outcome, seen, tally = _run(seqlock, monkeypatch, AFTER, "lazy")
    assert not outcome.partial
    hangs = {f.group: f for f in outcome.findings if f.hung is not None}
    assert ("post-recovery-divergence", "follow-up: lookup: timeout") in hangs
    full = {}
    for ways in tally._points.values():
        for way, h in ways.items():
            full[way] = full.get(way, 0) + h.full
    assert sum(full.values()) > 0 and all(n <= AFTER for n in full.values()), full
    explored_full = [p for p, hung, limit, checked in seen if hung and limit is None and checked]
    assert len(explored_full) <= AFTER, explored_full
    # the rest were answered under the shorter limit and counted (stats hung_short)
    assert outcome.hung_short == tally.short_checks > 0

    plain, every, _ = _run(seqlock, monkeypatch, 0, "lazy")
    truth = {f.group: f for f in plain.findings if f.hung is not None}
    assert hangs.keys() == truth.keys()
    for group, f in hangs.items():
        t = truth[group]
        assert f.point.index == t.point.index, group
        assert (f.hung.states, f.hung.history_states, f.hung.history_points) == \
            (t.hung.states, t.hung.history_states, t.hung.history_points), group
    assert outcome.coverage.per_point == plain.coverage.per_point


@pytest.mark.slow            # about 40 s: the fuzz loop shrinks the history, each try hanging again
def test_the_record_says_how_many_states_hung_and_the_run_goes_on(seqlock, tmp_path):
    out = tmp_path / "out.json"
    res = run_cli("fuzz", "seqlock", "--bug", "odd-version", "--examples", "3", "--max-ops", "4",
                  "--strategy", "bounded", "--limit", str(LIMIT), "--recovery-crashes", "0", "--seed", "1",
                  "--json", out, "--quiet", env_extra={"CRASHCHECK_TIMEOUT_MS": str(TIMEOUT_MS)}, timeout=600)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stdout + res.stderr
    data = json.loads(out.read_text())
    assert data["stats"]["histories"] >= 3          # it kept exploring after the hangs
    bugs = [b for b in data["bugs"] if b["hung"] is not None]
    assert bugs, [(b["class"], b["detail"]) for b in data["bugs"]]
    for b in bugs:
        h = b["hung"]
        assert 1 <= h["states"] <= h["explored"] == b["coverage"]["explored"]
        assert f"hung in {h['states']} of {h['explored']} state" in b["detail"]
        assert h["full"] <= AFTER
    res = run_cli("replay", tmp_path / "out.bugs" / f"{bugs[0]['id']}.json",
                  env_extra={"CRASHCHECK_TIMEOUT_MS": str(TIMEOUT_MS)}, timeout=300)
    assert "Traceback" not in res.stderr and res.returncode == 1, res.stdout + res.stderr
