"""harness/check/hangs.py on made-up answers: which checks out of the shorter limit count as hung, which
are checked again, and what a finding's count says. (tests/quality/test_hang_budget.py runs it all on a
structure that hangs.)"""
from types import SimpleNamespace

import crashcheck.harness.check.hangs as hangs
from crashcheck.crashsim.explore import StateOutcome
from crashcheck.crashsim.runner_client import CheckResult
from crashcheck.crashsim.simulate import CrashPoint
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.hangs import HangTally, Hung, hang_words, recheck

A = ("post-recovery-divergence", "follow-up: lookup: timeout")
B = ("recovery-hang", "recovery: timeout")
C = ("post-recovery-divergence", "follow-up: insert: timeout")


def point(index: int) -> CrashPoint:
    return CrashPoint(index, 10 * index, "fence", 0, (0,), None, (), 8)


def result(sid: int, limit_ms: int | None = None, status: str = "timeout", signal: int | None = 9) -> CheckResult:
    return CheckResult(status, signal, None, None, "", "", sid, limit_ms=limit_ms)


def outcome(cp: CrashPoint, sid: int, res: CheckResult, cached_from: int | None = None, covers: int = 1):
    # every state ran the follow-up "lookup 1": a recheck sends the state's own again
    return StateOutcome(cp, (sid,), sid, sid, cached_from, res, "lookup 1", covers)


def found(way) -> list[Finding]:
    return [Finding(way[0], "", way)]


def test_a_check_out_of_the_shorter_limit_counts_only_the_way_the_history_hung_with_the_full_one():
    tally, p, q = HangTally(), point(1), point(2)
    assert tally.take(outcome(p, 1, result(1)), found(A))
    assert tally.take(outcome(p, 2, result(2)), found(A))
    assert tally.take(outcome(p, 3, result(3, 50)), found(A))          # hung the same way
    assert not tally.take(outcome(p, 4, result(4, 50)), found(B))      # no full-limit hang of B yet
    assert tally.take(outcome(p, 5, result(5, status="ok", signal=None)), [])
    assert tally.take(outcome(p, 6, result(6, signal=19)), found(("recovery-hang", "recovery: stopped")))
    assert tally.of(1, A) == Hung(3, 2, 1, 50, 3, 1)
    assert tally.of(1, B) is None and tally.short_checks == 1
    # a state answered by an earlier check's result: as that check was judged, and it took no time
    short3 = result(3, 50)
    assert tally.take(outcome(q, 7, short3, cached_from=3, covers=4), found(A))
    assert not tally.take(outcome(q, 8, result(4, 50), cached_from=4), found(B))
    assert tally.of(2, A) == Hung(4, 0, 0, None, 7, 2)
    # the scope is the history: a check at another point out of the shorter limit hung the way
    # checks at point 1 hung with the full one (under lazy exploration a hanging point has one or
    # two executions, so a rule per point would give each of them the whole timeout)
    assert tally.take(outcome(q, 9, result(9, 50)), found(A))
    assert tally.of(2, A) == Hung(5, 0, 1, 50, 8, 2)
    # and a way no check of the history hung with the full limit is still checked again
    assert not tally.take(outcome(q, 10, result(10, 50)), found(C))


def test_checked_again_until_the_point_hung_its_way_with_the_full_limit(monkeypatch):
    """A deferred state goes back to its crash point with the limit counted anew; an answer out of
    the shorter limit again (another deferred state hung first) waits for the next round."""
    tally, p = HangTally(), point(3)
    tally.take(outcome(p, 1, result(1)), found(A))
    deferred = [outcome(p, 2, result(2, 50)), outcome(p, 3, result(3, 50))]
    assert not any(tally.take(o, found(B)) for o in deferred)
    rounds = []
    answers = iter([[result(10), result(11, 50)], [result(12)]])

    def checker(session, trace, index, follow_text, limit=None):
        assert (index, follow_text, limit) == (3, "lookup 1", (200, 1, 50))

        def check(choices):
            rounds.append(choices)
            return next(answers)
        return check
    monkeypatch.setattr(hangs.crash_states, "state_checker", checker)
    judge = SimpleNamespace(judge=lambda out: found(C if out.result.first == 11 else B))
    done = list(recheck(None, None, judge, tally, deferred, (200, 1, 50)))
    assert rounds == [[(2,), (3,)], [(3,)]]
    assert [o.id for o, _ in done] == [2, 3] and all(o.result.limit_ms is None for o, _ in done)
    assert tally.of(3, B) == Hung(2, 2, 0, None, 2, 1)


def test_a_recheck_that_hung_a_new_way_with_the_full_limit_settles_that_way_at_later_points(monkeypatch):
    """Deferred states of B at two points: the first point's recheck hangs B with the full limit,
    so the second point's short answers of B are taken as they are, not checked again."""
    tally, p, q = HangTally(), point(4), point(5)
    tally.take(outcome(p, 1, result(1)), found(A))
    deferred = [outcome(p, 2, result(2, 50)), outcome(q, 3, result(3, 50)), outcome(q, 4, result(4, 50))]
    assert not any(tally.take(o, found(B)) for o in deferred)
    checked = []

    def checker(session, trace, index, follow_text, limit=None):
        def check(choices):
            checked.append((index, choices))
            return [result(20)]
        return check
    monkeypatch.setattr(hangs.crash_states, "state_checker", checker)
    judge = SimpleNamespace(judge=lambda out: found(B))
    done = list(recheck(None, None, judge, tally, deferred, (200, 1, 50)))
    assert checked == [(4, [(2,)])]
    assert sorted(o.id for o, _ in done) == [2, 3, 4]
    assert tally.of(5, B) == Hung(2, 0, 2, 50, 3, 2)


def test_the_words_a_finding_ends_with():
    assert hang_words(None, 4, 2000) == ""
    assert hang_words(Hung(1, 1, 0, None, 1, 1), 2, 2000) == "; hung in 1 of 2 states of this crash point"
    assert hang_words(Hung(40, 2, 38, 250, 130, 5), 40, 2000) == (
        "; hung in 40 of 40 states of this crash point (38 of them given a shorter time limit of 250 ms "
        "once checks of this history had run out of the full 2000 ms this way, and hung the same way) and "
        "in 130 states of 5 crash "
        "points of this history")
