"""Heart's lock-free concurrency checked by crashcheck: threaded histories under the
deterministic scheduler, through the gate plugin.

Owns: each seeded bug of trees/heart/bugs.json that needs threads ("threads": 3) found with its
catalog class by `crashcheck fuzz heart --model eadr --threads 3 --bug NAME`, and correct Heart
passing a short threaded run (no finding, no leak). Heart's native stress test (real parallel
threads, no scheduler) is in test_heart_functional.py.

Seeds, mixes and example counts are ones that find each bug (measured on the shared 2-core
machine); `stop_on_class` ends a run with the batch of the first finding of the class, and a run
that never finds it fails the test.
"""
from __future__ import annotations


import pytest

from treeutil import ROOT, seeded_bugs

CATALOG = seeded_bugs(ROOT / "trees" / "heart" / "bugs.json")
MT_BUGS = [b for b in CATALOG if b.get("threads", 1) > 1]
# how each bug is fuzzed: the plain-store commits show on any history; a lost write under a
# transformation needs a node to grow while another thread writes into it (at default settings
# since issue 36's second part: histories cross the capacity probe's growth points, and the final
# state is judged); a reader of a freed leaf needs a lookup, an update of its key and a reallocation in
# three threads, and the lookup held right before it reads the leaf: at default settings since the
# aimed runs (harness/check/aims.py) and the meetings of specs/map_histories.py (seed 1, since a
# history may hold several meetings: within 60 examples; seed 3 misses it there)
RUNS = {
    "commit-plain-store": dict(seed=1, examples=40),
    "split-plain-store": dict(seed=1, examples=40),
    "grow-no-version": dict(seed=3, examples=40),
    "free-no-epoch": dict(seed=1, examples=60),
}


def test_every_threaded_bug_has_a_test_budget():
    assert sorted(b["name"] for b in MT_BUGS) == sorted(RUNS)
    assert all(b["threads"] == 3 for b in MT_BUGS)


# (grow-no-version took about 5 minutes, Hypothesis shrinking a 30-operation history until its own
# time limit, and was marked slow; a batch now ends when its shrink budget is spent: 18 s)
@pytest.mark.parametrize("bug", MT_BUGS, ids=lambda b: b["name"])
def test_heart_concurrency_bug_found_with_its_class(trees_built, crashcheck, bug):
    result = crashcheck.run("heart", bug=bug["name"], model="eadr", threads=3, limit=8,
                            stop_on_class=bug["class"], **RUNS[bug["name"]])
    assert bug["class"] in result.classes, sorted(result.classes)
    rec = next(b for b in result.unexpected if b["class"] == bug["class"])
    assert rec["threads"] == 3 and rec["schedule"].startswith("# crashcheck-schedule 1")


def test_correct_heart_passes_with_three_threads(trees_built, crashcheck):
    result = crashcheck.run("heart", model="eadr", threads=3, seed=1, examples=40, limit=8)
    assert result.unexpected == [] and result.classes == set()
    st = result.results["per_structure"][0]["stats"]
    # the 40 drawn histories, then one crossing history per capacity point after the last batch
    # (issue 50: harness/run/crossing.py CROSS_FIXED with --examples)
    assert st["capacity_histories"] == len(st["capacity"]) >= 1
    assert st["threads"] == 3 and st["histories"] == 40 + st["capacity_histories"] and st["states_checked"] > 0


def test_single_thread_bug_keeps_its_class_with_three_threads(trees_built, crashcheck):
    # split-prefix-length breaks lookups with no concurrency at all: with three threads the wrong
    # result first shows as a linearizability violation, and the schedule shrinks until no two
    # operations overlap, where it reads as the catalog's wrong value (harness/check/threads.py
    # sequential_wrong_value); 11 s at seed 1
    bug = next(b for b in CATALOG if b["name"] == "split-prefix-length")
    result = crashcheck.run("heart", bug=bug["name"], model="eadr", threads=3, seed=1, examples=48, limit=8,
                            stop_on_class=bug["class"])
    rec = next(b for b in result.unexpected if b["class"] == "wrong-value")
    assert rec["threads"] == 3 and "with no two operations overlapping" in rec["detail"], rec["detail"]


def test_threaded_runs_log_loads_from_the_threads_start_only(trees_built):
    """CRASHCHECK_TRACE_LOADS=threads (harness/check/threads.py sched_env): the load phase before the
    threads start logs no load (a replay of the capacity probe's 287 operations used to log half
    a million, seconds per read trace), the threads' operations and the final dump do."""
    from crashcheck.harness.check.pipeline import Checker
    from crashcheck.harness.check.threads import make_threaded
    from crashcheck.harness.core.settings import Settings
    from crashcheck.harness.target import structures
    from crashcheck.specs.ordered_map import Op
    k, v = (lambda i: i.to_bytes(8, "big")), (lambda i: i.to_bytes(8, "little"))
    load = [Op("insert", k(i), v(i)) for i in range(1, 21)]
    ops = make_threaded(load, [[Op("lookup", k(3))], [Op("update", k(4), v(44))]], "random:1")
    with Checker(structures.get("heart"), None, Settings(model="eadr", seed=1)) as checker:
        trace, lines = checker.trace(ops)
    first = next(i for i, ev in enumerate(trace.events) if ev.kind == "op_begin" and ev.addr == len(load))
    assert not any(ev.kind == "load" for ev in trace.events[:first])
    assert any(ev.kind == "load" for ev in trace.events[first:])
    assert any(x.startswith("!dump ") for x in lines)     # the final state, judged with the results


def test_an_aimed_run_holds_the_reader_of_a_freed_leaf(trees_built):
    """A clean run is followed by aimed runs (harness/check/aims.py): the lookup held before its
    load of the leaf until the update that frees it and the insert that reuses it end. Every
    finding here comes from an aimed run (an aim runs only after a clean drawn run), its schedule
    replays it, and correct Heart passes the same runs. A clean drawn run is aimed at each
    (load place, store place) pair it shows that the checker has aimed at fewer than
    aims.SATURATED times, up to aims.PER_HISTORY pairs: the runs' memory is the checker's, so
    later histories of this one shape, showing only saturated pairs, are not aimed at all."""
    from crashcheck.harness.check import aims
    from crashcheck.harness.check.pipeline import Checker, first_op_event
    from crashcheck.harness.check.schedule_shrink import with_schedule
    from crashcheck.harness.check.threads import make_threaded
    from crashcheck.harness.core.settings import Settings
    from crashcheck.harness.target import structures
    from crashcheck.specs.ordered_map import Op
    k, v = (lambda i: i.to_bytes(8, "big")), (lambda i: i.to_bytes(8, "little"))
    load = [Op("insert", k(i), v(i)) for i in range(1, 6)]
    secs = [[Op("lookup", k(3))], [Op("update", k(3), v(33))], [Op("insert", k(9), v(99))]]
    runs = [make_threaded(load, secs, f"random:{seed}") for seed in range(40)]
    with Checker(structures.get("heart"), "free-no-epoch", Settings(model="eadr", seed=1)) as checker:
        found = None
        for ops in runs:
            # the pairs the drawn run shows (its trace again: the same run), and those not yet saturated
            trace, _ = checker.trace(ops)
            # pairs as the Aimer counts them: of places (a site without its inline chain)
            pairs = {(trace.place(c.site), trace.place(c.store_site))
                     for c in aims.conflicts(trace, first_op_event(ops, trace))}
            before = dict(checker.aimer.aimed_before.get(checker.aimer.lane, {}))
            assert pairs, "the threads met on no word"
            aimable = min(aims.PER_HISTORY, sum(before.get(p, 0) < aims.SATURATED for p in pairs))
            out = checker.check(ops, crashes=False)
            if out.findings:     # the first aimed run that fails ends the history's aims
                assert 0 < out.aimed_runs <= aimable
            else:
                assert out.aimed_runs == aimable
            if out.findings:
                found = out
                break
        assert found is not None, "no aimed run of 40 histories showed the freed leaf"
        assert found.findings[0].cls == "linearizability-violation"
        assert found.ops.sched.startswith("aim:") and "# load-points 1" in found.schedule
        again = checker.check(with_schedule(found.ops, found.schedule), crashes=False)
        assert [f.cls for f in again.findings] == ["linearizability-violation"] and again.aimed_runs == 0
    with Checker(structures.get("heart"), None, Settings(model="eadr", seed=1)) as checker:
        outs = [checker.check(ops, crashes=False) for ops in runs[:10]]
        assert all(o.findings == [] for o in outs) and sum(o.aimed_runs for o in outs) >= 10
