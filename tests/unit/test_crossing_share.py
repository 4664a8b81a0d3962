"""The crossing share of a time budget (harness/run/crossing.py): once its last quarter begins
while capacity points wait, the batch under way ends (search.py raises ShrinkSpent) so that they
run; a crossing batch's own draws are never cut; every point gets its first crossing history
before any gets its others (under x86-ADR, Heart's drawn batches shrank bugs past the budget's
end, and no crossing history ran)."""
import time
from types import SimpleNamespace as NS

from crashcheck.harness.run import crossing
from crashcheck.harness.run.config import Config
from crashcheck.harness.run.crossing import CROSS_EXAMPLES, CROSS_SHARE, CapacityCrossing


class FakeSearch(CapacityCrossing):
    def __init__(self, points, left_s, budget_s=60.0):
        soft = time.monotonic() + left_s
        self.budget = NS(soft=soft, search_over=lambda: time.monotonic() >= soft)
        self.config = Config(budget=budget_s)
        self.t0 = time.monotonic()
        self.capacity = points
        self.share = 0
        self.stats = NS(capacity={p.label: 0 for p in points}, capacity_why={}, capacity_histories=0,
                        capacity_s=0.0, histories=0)
        self.shrink_left = None
        self.target = None
        self.batches = []

    def _batch(self, strategy, batch_no, lane, n):
        # what is due while the batch draws its own histories, and while it shrinks one
        draws_due = self._crossing_due()
        self.shrink_left = 5
        shrink_due = self._crossing_due()
        self.shrink_left = None
        self.batches.append((batch_no, n, draws_due, shrink_due))


def points(k):
    return [NS(label=f"insert at {8 * (i + 1)} keys", why="", drawn=("insert", 8 * (i + 1), i, "")) for i in range(k)]


def test_the_share_is_due_only_in_the_last_quarter_with_points_waiting(monkeypatch):
    monkeypatch.setattr(crossing.strategies, "for_target", lambda *a, **k: None)
    early = FakeSearch(points(2), left_s=60.0 * CROSS_SHARE + 20)
    early._crossings()
    assert not early._crossing_due()
    late = FakeSearch(points(2), left_s=60.0 * CROSS_SHARE - 5)
    assert not late._crossing_due()                 # no point known yet
    late._crossings()
    assert late._crossing_due()                     # a drawn batch ends here
    late._cross_points(NS(model=None, aimer=NS(lane=0)), list(late.cross_left), last=False)
    assert not late._crossing_due()                 # every point had its crossing histories


def test_every_point_gets_one_crossing_history_before_any_gets_more(monkeypatch):
    monkeypatch.setattr(crossing.strategies, "for_target", lambda *a, **k: None)
    s = FakeSearch(points(4), left_s=60.0 * CROSS_SHARE - 5)
    s.stats.capacity["insert at 8 keys"] = 1             # a drawn history crossed the first point
    left = s._crossings()
    s._cross_points(NS(model=None, aimer=NS(lane=0)), left, last=False)
    # first pass: one history per point no draw crossed, its draws never cut, its shrinking cut
    # while other points wait
    assert [(b, n) for b, n, _, _ in s.batches[:3]] == [(-2, 1), (-3, 1), (-4, 1)]
    assert [d for _, _, d, _ in s.batches[:3]] == [False] * 3
    assert [sh for _, _, _, sh in s.batches[:3]] == [True, True, False]
    # then the rest, in batches of their own (the fake's histories cross nothing)
    assert [(b, n) for b, n, _, _ in s.batches[3:]] == [(-10_001, CROSS_EXAMPLES - 1)] + [
        (-10_001 - i, CROSS_EXAMPLES) for i in (1, 2, 3)]


def test_a_slow_run_begins_the_share_as_long_before_the_end_as_its_points_would_take():
    # 20 s left of 60: not the last quarter; but 4 histories in 30 s (7.5 s each) and 3 points
    # waiting would take 22.5 s, so the share has begun; at most half the budget, ever
    s = FakeSearch(points(3), left_s=20.0)
    s._crossings()
    assert not s._crossing_due()
    s.t0 = time.monotonic() - 30.0
    s.stats.histories = 4
    assert s._crossing_due()
    s.stats.histories = 1                            # 30 s a history: capped at 30 s before the end
    s.budget.soft = time.monotonic() + 31.0
    assert not s._crossing_due()


def test_points_the_draws_crossed_cut_no_batch():
    s = FakeSearch(points(2), left_s=60.0 * CROSS_SHARE - 5)
    s._crossings()
    s.stats.capacity = {p.label: 1 for p in s.capacity}
    assert not s._crossing_due()            # (their histories still come, after the batch)


def test_one_long_history_begins_the_share_as_long_before_the_end():
    # histories are quick on average, but one took 25 s: another like it may be under way when
    # the last quarter begins, so the share begins 25 s (and the points' mean time) before the end
    s = FakeSearch(points(1), left_s=20.0)
    s._crossings()
    s.stats.histories = 100
    assert not s._crossing_due()
    s.longest_s = 25.0
    s.last_call = time.monotonic()
    s._share_begun()
    assert s._share_begun() and s._crossing_due()
