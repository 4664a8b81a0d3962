"""Writer aims at persistency-race candidates (harness/check/race_confirm.py): the aim spec, which
candidates a history aims at (a few, rarer pairs first, none of a pair confirmed or given up, the
same picks for the same history), why an aimed run did not confirm one, and the warning record."""
from __future__ import annotations

from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check import race_confirm
from crashcheck.harness.check.race_confirm import Confirmer, Verdict, spec_of
from crashcheck.harness.check.race_windows import Candidate
from crashcheck.harness.check.threads import make_threaded
from crashcheck.specs import ordered_map

X = 0x100


def cand(store_site=3, load_site=4, nth=2) -> Candidate:
    return Candidate(10, 1, store_site, nth, 20, 2, load_site, X, 30, True)


def test_the_spec_parks_the_writer_after_its_nth_store_until_the_reader_loaded():
    assert spec_of(cand(), 99) == f"aim:99:1:3:2:{race_confirm.OPS}:2:4"


def test_the_plan_takes_a_few_rarer_pairs_first_and_gives_up_on_a_pair():
    c = Confirmer()
    found = [cand(s, s + 1) for s in (3, 5, 7)]
    first = c.plan(("h", 1), 0, found, 1)
    assert len(first) == race_confirm.PER_HISTORY and len({x.key for x, _, _ in first}) == race_confirm.PER_HISTORY
    assert c.plan(("h", 1), 0, found, 1) == first                 # the same history: the same picks
    second = c.plan(("h", 2), 0, found, 1)
    assert (5, 6) in {x.key for x, _, _ in first} | {x.key for x, _, _ in second}   # the one left out comes
    c.confirmed.add((3, 4))
    for n in range(4, 40):
        for x, _, _ in c.plan(("h", n), 0, found, n):
            assert x.key != (3, 4)
    assert all(c.given_up(x) for x in found[1:]) and not c.given_up(found[0])
    assert c.plan(("h", 99), 0, found, 1) == []                    # every pair had its aims
    assert c.plan(("h", 100), 1, found, 1)                         # another lane starts afresh


def test_every_other_aim_at_a_pair_replays_the_clean_run_up_to_the_store():
    conf = Confirmer()
    after = Candidate(10, 1, 5, 1, 20, 2, 6, X, 30, False)       # the store came before the load
    before = Candidate(20, 1, 7, 1, 10, 2, 8, X, 30, False)      # the load came first
    picks = [conf.plan(("h", n), 0, [after, before], n) for n in (1, 2, 3)]
    assert [p for x, _, p in sum(picks, []) if x is after] == [True, False, True]
    assert not any(p for x, _, p in sum(picks, []) if x is before)


def _trace(tmp_path, build):
    w = TraceWriter(pool_size=1 << 12, loads=True)
    s = {"put": w.site("kv.c", 33, "publish", inlined_file="kv.c", inlined_line=54, inlined_func="insert"),
         "get": w.site("kv.c", 25, "find")}
    build(w, s)
    return read_trace(w.write(tmp_path / "t.trace")), s


def test_why_an_aimed_run_did_not_confirm_it(tmp_path):
    def never_read(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.persist(X, 8, tid=1)
    trace, s = _trace(tmp_path, never_read)
    c = Candidate(0, 1, s["put"], 1, 0, 2, s["get"], X, 0, False)
    assert race_confirm._why_not_read(trace, c, 0)[1] is False and "never loaded" in race_confirm._why_not_read(trace, c, 0)[0]
    assert "never reached" in race_confirm._why_not_read(trace, Candidate(0, 1, s["put"], 2, 0, 2, s["get"], X, 0, False), 0)[0]

    def read_no_act(w, s):
        w.store(X, b"\x07" * 8, tid=1, site=s["put"])
        w.load(X, 8, tid=2, site=s["get"])
        w.persist(X, 8, tid=1)
    trace, s = _trace(tmp_path, read_no_act)
    assert race_confirm._why_not_read(trace, c, 0)[1] is True
    assert "did not act" in race_confirm._why_not_read(trace, c, 0)[0]


def test_an_aim_that_showed_the_pair_harmless_uses_up_two_of_its_aims():
    c = Candidate(0, 1, 5, 1, 0, 2, 6, X, 0, False)
    conf = race_confirm.Confirmer()
    for n in (1, 2):
        assert conf.plan(("h", n), 0, [c], n) == [(c, conf.plan(("h", n), 0, [c], n)[0][1], False)]
        conf.settle(Verdict(c, "", [], "helped", 2))
    assert conf.given_up(c) and conf.plan(("h", 3), 0, [c], 3) == []
    other = race_confirm.Confirmer()
    for n in (1, 2):
        other.plan(("h", n), 0, [c], n)
        other.settle(Verdict(c, "", [], "another path", 1))
    assert not other.given_up(c) and other.plan(("h", 3), 0, [c], 3)


def test_a_warning_is_a_record_with_both_sites_history_and_schedule(tmp_path):
    trace, s = _trace(tmp_path, lambda w, s: w.store(X, b"\x07" * 8, tid=1, site=s["put"]))
    op = ordered_map.parse_op
    ops = make_threaded([op("insert 1 1")], [[op("insert 2 2")], [op("lookup 2")]], "aim:1:1:0:1:4:2:1")
    c = Candidate(0, 1, s["put"], 1, 0, 2, s["get"], X, 0, False)
    rec = race_confirm.warning_record(trace, Verdict(c, "aim:1:1:0:1:4:2:1", [], "the reason"), ops,
                                      ordered_map.MODEL, "# crashcheck-schedule 1\n")
    assert rec["group"] == "kv.c:33 (inlined at kv.c:54) -> kv.c:25" and rec["why"] == "the reason"
    assert rec["store"]["thread"] == 1 and rec["store"]["inlined_at"]["line"] == 54 and rec["load"]["line"] == 25
    assert rec["history"] == ["insert 1 1", "insert 2 2", "lookup 2"] and rec["thread_of"] == [0, 1, 2]
    assert rec["sched"].startswith("aim:") and rec["schedule"].startswith("# crashcheck-schedule")
    assert "unconfirmed persistency race: store at kv.c:33 (inlined at kv.c:54) (thread 1)" in \
        race_confirm.warning(trace, Verdict(c, "", [], "the reason"))


def test_the_writer_waits_for_the_operations_between_its_store_and_the_load():
    far = Candidate(0, 1, 5, 2, 0, 2, 6, X, 0, False, 9)
    assert race_confirm.spec_of(far, 7) == "aim:7:1:5:2:10:2:6"
    near = Candidate(0, 1, 5, 2, 0, 2, 6, X, 0, False, 1)
    assert race_confirm.spec_of(near, 7) == f"aim:7:1:5:2:{race_confirm.OPS}:2:6"
    very_far = Candidate(0, 1, 5, 2, 0, 2, 6, X, 0, False, 500)
    assert race_confirm.spec_of(very_far, 7) == f"aim:7:1:5:2:{race_confirm.MAX_OPS}:2:6"
