"""A seed gives the same histories, in the same order, whether the run is bounded by --examples or
by --budget, until the run knows a bug (its first batch's learning, harness/run/unmasking.py: with
--examples each lane knows what its own batches found, with --budget the lanes share it, so the
budget run's next batches no longer meet that bug); and however long each check takes.
Checked by recording every history the checker is given (first checks, Hypothesis's shrinking tries
and re-checks alike) in a `crashcheck fuzz` run of each kind, run in-process through the CLI."""
import json
import time

import pytest

from crashcheck.harness.cli import main as cli

from crashcheck.harness.cli import cmd_fuzz

from crashcheck.harness.target import structures
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.check.session import history_text
from crashcheck.harness.run.search import Search
from crashcheck.harness.core.settings import Settings
from crashcheck.specs import registry
from crashcheck.specs.model import with_load


def _checked(monkeypatch, tmp_path, structure, bug, bound, spend_after=None, learnt=None):
    """Every history the checker is given in a run bounded by BOUND; with SPEND_AFTER, the run's
    budget is spent (its start moved back by a long time) once that many were given, so a
    budgeted run ends where the budget would have ended it, without waiting for the clock. LEARNT
    (a list) gets how many had been given when a batch's learning first knew a bug."""
    seen = []
    check = Checker.check
    learn = Search._learn

    def learning(self, lane):
        learn(self, lane)
        if learnt is not None and not learnt and any(self.lane_known.values()):
            learnt.append(len(seen))
    monkeypatch.setattr(Search, "_learn", learning)

    def spy(self, ops, *args, **kw):
        seen.append((getattr(ops, "load", 0), history_text(self.model, ops)))
        if spend_after is not None and len(seen) > spend_after:
            self.budget.start -= 10 ** 6
        return check(self, ops, *args, **kw)

    monkeypatch.setattr(Checker, "check", spy)
    # the budget counts from the process start: in-process, from now
    monkeypatch.setattr(cmd_fuzz, "PROCESS_START", time.monotonic())
    out = tmp_path / f"{bound[0].strip('-')}.json"
    args = ["fuzz", structure, "--seed", "11", "--limit", "4", "--recovery-crashes", "0", "--quiet",
            "--json", str(out), *bound] + (["--bug", bug] if bug else [])
    assert cli.main(args) in (0, 1)
    monkeypatch.undo()
    return seen


@pytest.mark.parametrize("structure,bug", [("wort", None), ("wort", "no-flush-link")])
def test_budget_and_examples_check_the_same_histories_in_order(trees_built, monkeypatch, tmp_path,
                                                                structure, bug):
    learnt: list[int] = []
    by_examples = _checked(monkeypatch, tmp_path, structure, bug, ["--examples", "16"], learnt=learnt)
    t0 = time.monotonic()
    by_budget = _checked(monkeypatch, tmp_path, structure, bug, ["--budget", "600"], spend_after=len(by_examples))
    assert time.monotonic() - t0 < 300, "the budget was not spent: the run went on"
    # (an --examples run crosses each capacity point after its last batch, issue 50; the budget
    # run, spent first, never reaches its last quarter, where it would: the drawn ones compare)
    crossing = json.loads((tmp_path / "examples.json").read_text())["per_structure"][0]["stats"]["capacity_histories"]
    n = len(by_examples) - crossing
    if bug:    # the seeded bug's batch shrank: Hypothesis's tries are in the sequence too
        assert len(by_examples) > 16
        assert learnt and learnt[0] > 8        # (the first batch, and its shrinking, at least)
        n = learnt[0]
    assert len(by_budget) > n and by_budget[:n] == by_examples[:n]


def test_a_slow_check_after_a_failure_changes_no_history(trees_built, monkeypatch, tmp_path):
    # Hypothesis's engine generates further examples after a batch's first failure only while less
    # than 10 s of wall clock have passed. Histories slow to check (lazy exploration: a second or
    # two each) crossed that mark or not with the machine's load, so two identical lazy runs with
    # --examples checked 42 and 43 histories. Here the clock jumps 11 s once, at the check after
    # the first failure: the run must check the very histories of a run whose clock did not.
    plain = _checked(monkeypatch, tmp_path, "wort", "no-flush-link", ["--examples", "8"])
    real = time.monotonic
    skew = [0.0]
    failed = [False]
    after = [0]        # checks made once a failure was seen: the ones the jump could change
    check = Checker.check

    def slow(self, ops, *args, **kw):
        if failed[0] and not skew[0]:
            skew[0] = 11.0
        after[0] += failed[0]
        out = check(self, ops, *args, **kw)
        failed[0] = failed[0] or any(not f.expected for f in out.findings)
        return out

    monkeypatch.setattr(time, "monotonic", lambda: real() + skew[0])
    monkeypatch.setattr(Checker, "check", slow)
    jumped = _checked(monkeypatch, tmp_path, "wort", "no-flush-link", ["--examples", "8"])
    assert skew[0], "no failure: the clock never jumped"
    assert after[0] >= 4, after[0]     # the batch went on generating well after its failure
    assert jumped == plain


def _summary(outcome):
    return (sorted((f.cls, f.group, f.occurrences) for f in outcome.findings), outcome.crash_points,
            outcome.states_explored, outcome.states_checked, outcome.executions, outcome.partial)


def test_a_lazy_check_does_not_depend_on_the_histories_before_it(trees_built):
    # The runner answers a repeated answer with dup_of an earlier state, of this history or an
    # earlier one, and the checker keeps its runner across histories: what a history finds, and
    # how many classes it executes, must still be what it finds in a checker of its own.
    m = registry.get("ordered_map")
    texts = [["insert 0 1"], ["insert 1 5", "insert 2 6", "lookup 1"], ["insert 0 1", "delete 0"],
             ["insert 3 7", "update 3 8", "scan 0 4"]]
    histories = [with_load([m.parse_op(x) for x in t], 0) for t in texts]
    wort = structures.get("wort")
    settings = Settings(strategy="lazy", limit=8, seed=3, recovery_crashes=1)
    alone = []
    for h in histories:
        with Checker(wort, "no-flush-link", settings) as checker:
            alone.append(_summary(checker.check(h)))
    assert any(findings for findings, *_ in alone) and all(ex > 0 for *_, ex, _ in alone)
    with Checker(wort, "no-flush-link", settings) as checker:
        for order in (list(range(len(histories))), list(reversed(range(len(histories))))):
            for i in order:
                assert _summary(checker.check(histories[i])) == alone[i], texts[i]


def test_a_batch_ends_when_its_shrink_budget_is_spent(trees_built, monkeypatch):
    """Once a batch has tried Config.shrink_calls histories while shrinking, Hypothesis is not
    asked for more (harness/run/found.py ShrinkSpent). With its clock held nothing else stops its
    shrinker: a threaded HART run spent 5 minutes there before (test_threads' crash-state test,
    309 s -> 35 s). A WORT bug with one batch of 8 examples and 2 shrink calls (counted from the
    first failure on): the property is called for at most the 8 generated histories, the 2 tries,
    a replay and the call that ends the batch (before: 839 calls, all but 3 answered at once)."""
    from crashcheck.harness.run import search
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.plan import fuzz_target
    calls = []
    real = search.history_text

    def counting(model, ops):
        calls.append(len(ops))
        return real(model, ops)
    monkeypatch.setattr(search, "history_text", counting)
    r = fuzz_target("wort", "no-flush-link", Settings(seed=3),
                    Config(examples=8, budget=None, max_ops=6, shrink_calls=2))
    assert any(not rec["expected"] for rec in r.records)
    assert 3 <= len(calls) <= 8 + 2 + 2, calls


def test_a_lazy_check_does_not_depend_on_how_fast_the_runner_answers(trees_built, monkeypatch):
    # Checks go to the runner in batches whose size changes as exchanges go; where a crash
    # point's lazy search stops (its execution cap) follows those sizes. When the sizes followed
    # the clock, the same --examples run counted 2,635 or 2,637 failing states with the load, and
    # differently under Dask. Here every exchange seems to take 2 s: the history's check must come
    # out as it does at full speed. (A capacity crossed: 30 keys loaded, then the checked part; with
    # the continuation after recovery, some of its points hit the cap. The load's lines are never
    # pending, its trace starting at its end: the checked part has 5 keys of it and the crossing.)
    import importlib
    explore = importlib.import_module("crashcheck.crashsim.explore")    # the package exports a function of that name
    m = registry.get("ordered_map")
    texts = [f"insert {1413 + i} {7 * i + 1}" for i in range(35)]
    texts += ["insert 1420 147", "insert 1444 394", "delete 1443", "insert 1443 56"]
    history = with_load([m.parse_op(x) for x in texts], 30)
    wort = structures.get("wort")
    settings = Settings(strategy="lazy", limit=8, seed=3, recovery_crashes=1)
    with Checker(wort, "no-flush-link", settings) as checker:
        quick = checker.check(history)
    assert quick.coverage.points_sampled > 0, "no point hit the cap: nothing to compare"
    real = time.monotonic
    slow = [0.0]

    def crawling():
        slow[0] += 2.0
        return real() + slow[0]
    monkeypatch.setattr(explore.time, "monotonic", crawling)
    with Checker(wort, "no-flush-link", settings) as checker:
        crawled = checker.check(history)
    monkeypatch.undo()
    assert _summary(crawled) == _summary(quick)
