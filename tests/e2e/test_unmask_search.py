"""Unmasking while exploring (harness/run/unmasking.py, harness/check/unmask.py) on WORT's five
seeded bugs at once: after its first batch, a lane knows the bugs that batch found (shrunk, each
its minimal lost stores and, when proven, its fix: the link's flush at wort.c:81 is proven there
although the same histories also fail with the split's header at wort.c:193, which has no fix,
because that bug's states are left out of the search), and its next batch's crash states that
those bugs explain are never executed (stats.states_pruned: each loses the link's one-line store or
one its fix makes durable) or, failing, not judged again: every failure that batch keeps is another
bug's, and the link's failures are not met again (without unmasking the second batch finds them in
its histories once more, and both counts are 0)."""
from crashcheck.harness.check.findings import site_key, store_site
from crashcheck.harness.core.budget import Budget
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run import search as search_mod
from crashcheck.harness.run.config import LANES, Config


def test_a_lane_judges_its_later_histories_with_the_bugs_it_knows(tmp_path, instrument_built, monkeypatch):
    monkeypatch.setattr(search_mod.capacity, "observe", lambda *a, **k: [])     # no crossing histories
    monkeypatch.setattr(search_mod.Search, "_shrink_states", lambda self: None)  # (the exploration only)
    taught = []                   # what the lane knew after each of its batches
    learn = search_mod.Search._learn

    def _learn(self, lane):
        learn(self, lane)
        taught.append((list(self.lane_known[lane].lost), {g: e.occurrences for g, e in self.registry.items()}))
    monkeypatch.setattr(search_mod.Search, "_learn", _learn)
    # share 0 of LANES jobs runs lane 0 alone: batches 0 and LANES, two histories each
    config = Config(examples=4 * LANES, budget=None, batch=2, jobs=LANES, shrink_calls=4, max_ops=4)
    s = search_mod.Search("wort", "many", Settings(seed=1, recovery_crashes=0), config, 0, Budget(None),
                          bugdir=tmp_path)
    res = s.run()
    known = s.lane_known[0]
    assert len(taught) == 2
    link = str(search_mod.structures.ROOT / "trees/wort/wort.c") + ":81"
    assert frozenset({link}) in known.lost, known
    assert any(e.anchor == link for e in known.edits), known.fixes
    assert res.stats.states_pruned > 0, res.stats
    # what the second batch found first is no known bug again
    later = [e for e in res.entries if e.found_at[0] == LANES and e.finding.point is not None]
    for e in later:
        lost = {site_key(e.outcome.trace, store_site(e.outcome.trace, p)) for p in e.finding.lost}
        assert not any(cause <= lost for cause in taught[0][0]), (e.finding.group, lost)
    assert later, "the second batch found nothing new"
    # and the link's failures, which nearly every history shows, were not counted again there
    group = ("lost-durable-write", link)
    assert taught[0][1][group] == taught[1][1][group] > 0
