"""Capacity points crossed without being declared (issue 33, pattern 4; harness/check/capacity.py):
a probe's trace read into the points where the structure's path changes as it grows and shrinks,
which checked histories crossed, and the histories drawn to cross them (specs/threshold_histories.py
`observed`)."""
import json
from types import SimpleNamespace as NS

from hypothesis import given, settings

from crashcheck.crashsim.trace import NO_SITE
from crashcheck.harness.check.capacity import KIND_WARMUP, crossed, op_marks, points
from crashcheck.specs.capacity_probe import PROBE_KEYS, WARMUP, probe_history, probe_keys
from crashcheck.specs.map_histories import histories

LEAF, SPLIT, NODE, SHRINK = 10, 11, 12, 13      # store sites of a made-up structure


def ev(kind, addr=0, site=NO_SITE, size=8):
    return NS(kind=kind, addr=addr, site=site, size=size)


def probe_trace(cap: int, shrink_at: int | None = None):
    """A trace of the probe's history on a structure whose 'node' holds CAP keys: every insert
    stores at LEAF and allocates 64 bytes; the insert of key CAP + 1 also stores at SPLIT and
    allocates 256 bytes; the delete that leaves SHRINK_AT keys stores at SHRINK."""
    ops = probe_history()
    events, present = [], 0
    for i, op in enumerate(ops):
        events.append(ev("op_begin", i))
        events.append(ev("store", site=LEAF))
        if op.kind == "insert":
            events.append(ev("alloc", site=NODE, size=64))
            if present == cap:
                events += [ev("store", site=SPLIT), ev("alloc", site=NODE, size=256)]
            present += 1
        else:
            present -= 1
            if present == shrink_at:
                events.append(ev("store", site=SHRINK))
        events.append(ev("op_end", i))
    return ops, NS(events=events, site=lambda i: None)


def test_a_split_and_a_shrink_are_points_with_the_keys_held_before():
    ops, trace = probe_trace(30, shrink_at=12)
    pts = points(ops, op_marks(trace), trace)
    assert [(p.on, p.keys) for p in pts] == [("insert", 30), ("delete", 13)]
    grow = pts[0]
    # (after the probe's warm-up: WARMUP keys inserted and deleted on a small structure)
    assert ops[grow.index].kind == "insert" and grow.index == 2 * WARMUP + 30
    # the new store site and the allocation of a new size class (256 bytes) mark it
    assert grow.marks == {("store", SPLIT), ("alloc", NODE, (256).bit_length())}


def test_the_warm_up_and_the_steady_path_give_no_point():
    ops, trace = probe_trace(KIND_WARMUP - 2)    # a capacity plain histories cross anyway
    assert points(ops, op_marks(trace), trace) == []
    ops, trace = probe_trace(PROBE_KEYS + 5)     # never reached
    assert points(ops, op_marks(trace), trace) == []


def test_crossed_only_inside_the_checked_part():
    ops, trace = probe_trace(30)
    [p] = points(ops, op_marks(trace), trace)
    # a history whose split ran in operation 3: crossed when the load is 3 operations, not 4
    hist = NS(events=[ev("op_begin", 3), ev("store", site=SPLIT), ev("op_end", 3),
                      ev("op_begin", 4), ev("store", site=LEAF), ev("op_end", 4)])
    inserts = probe_history()[:5]
    assert crossed([p], inserts, hist, load=3) == [p]
    assert crossed([p], inserts, hist, load=4) == []
    # the same path run by an operation of another kind crosses no insert point
    deletes = [NS(kind="delete")] * 5
    assert crossed([p], deletes, hist, load=3) == []


def test_probe_keys_skip_reserved_ones_and_byte_keys_share_a_prefix():
    keys = probe_keys(5, reserved=[(2).to_bytes(8, "big")])
    assert [int.from_bytes(k, "big") for k in keys] == [1, 3, 4, 5, 6]
    byte_keys = probe_keys(300, "bytes")
    assert len(set(byte_keys)) == 300 and len({k[:4] for k in byte_keys}) == 1


@settings(max_examples=25, database=None, deadline=None)
@given(histories(capacity=(("insert", 60, 60), ("delete", 30, 190)), max_ops=10))
def test_histories_cross_an_observed_point_in_their_checked_part(ops):
    load = getattr(ops, "load", 0)
    probe = probe_history()
    if load and ops[:load] == probe[:load]:
        # a crossing history: the probe's history up to just before the point, the point's
        # operation checked, the checked part within max_ops
        assert load in range(58, 61) or load in range(188, 191)
        point = 60 if load < 100 else 190
        assert ops[load:point + 1] == probe[load:point + 1]
        assert len(ops) - load <= 10


def test_some_histories_are_drawn_to_cross_it():
    from hypothesis import find
    ops = find(histories(capacity=(("insert", 60, 60),), max_ops=10),
               lambda ops: getattr(ops, "load", 0) >= 58, settings=settings(database=None, max_examples=400))
    assert ops[:ops.load] == probe_history()[:ops.load]


def test_the_points_crossed_reach_the_summary_the_results_and_the_report(tmp_path):
    import io
    from rich.console import Console
    from crashcheck.harness.cli.fuzz_summary import print_summary
    from crashcheck.harness.core.settings import Settings
    from crashcheck.harness.render.report import render
    from crashcheck.harness.run.results import Results, Stats, TargetResult

    grow, shrink = "insert at 60 keys (smallbt.c:60 in new_leaf)", "delete at 41 keys (smallbt.c:50 in publish)"
    a = Stats(histories=2, capacity={grow: 1, shrink: 0})
    a.add(Stats(histories=3, capacity={grow: 2, shrink: 0}))      # another share of the same target
    assert a.capacity == {grow: 3, shrink: 0}
    res = Results([TargetResult("smallbt", None, a)], Settings()).as_json("crashcheck fuzz smallbt")
    assert res["per_structure"][0]["stats"]["capacity"] == {grow: 3, shrink: 0}
    assert "capacity" not in res["stats"]        # labels are per structure
    out = io.StringIO()
    print_summary(Console(file=out, width=400), res)
    assert (f"capacity: {grow} crossed in 3 checked histories; {shrink} not crossed") in out.getvalue()
    html = render(res)
    assert "Capacity points of smallbt" in html and "crossed in 3 checked histories" in html
    # and `crashcheck report` reads the results file back with them
    from crashcheck.harness.triage.record_formats import check_results
    back = check_results(json.loads(json.dumps(res)), str(tmp_path / "r.json"))
    assert back["per_structure"][0]["stats"]["capacity"] == {grow: 3, shrink: 0}


def test_a_structure_leaving_lines_pending_has_its_points_crossed_under_adr_too(trees_built):
    # Heart issues no flushes: under x86-ADR every line a load wrote used to stay pending at every
    # crash point after it (one history loaded to 125 keys ran for 20 minutes), so its points were
    # listed as not crossed. The load is no longer traced (the trace starts at its end), so the
    # points are the same under both models, each to cross, and a crossing history's trace holds
    # no load line pending.
    from crashcheck.harness.check import capacity
    from crashcheck.harness.check.pipeline import Checker
    from crashcheck.harness.core.settings import Settings
    from crashcheck.harness.run import strategies
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.target import structures
    from hypothesis import HealthCheck, given, seed, settings
    heart = structures.get("heart")
    seen = {}
    for model in ("eadr", "adr"):
        with Checker(heart, None, Settings(seed=1, model=model)) as checker:
            pts = capacity.observe(checker)
            seen[model] = [(p.on, p.keys, p.why) for p in pts]
            if model == "adr":
                [p8] = [p for p in pts if p.keys == 8]
                drawn = []

                @seed(1)
                @settings(max_examples=1, database=None, deadline=None, suppress_health_check=list(HealthCheck))
                @given(strategies.for_target(heart, Config(max_ops=1), checker.model, cross=p8.drawn))
                def one(ops):
                    drawn.append(ops)
                one()
                ops = drawn[0]
                trace, _ = checker.trace(ops)
                start = next(i for i, ev in enumerate(trace.events) if ev.kind == "op_begin")
                # every store pending at the end is one of the checked part's, none the load's
                end = checker.point_at(trace, -1)
                assert end.units and all(p.seq > start for u in end.units for p in u.pieces)
                assert capacity.crossed([p8], ops, trace, ops.load) and start < 50
    assert seen["adr"] == seen["eadr"] and all(why == "" for _, _, why in seen["adr"]), seen


def test_every_point_is_crossed_in_every_run_declared_ones_too(trees_built, tmp_path):
    # WOART declares its NODE48's 48 children (expect.json): listed as a point of its own and
    # crossed by the histories every run draws to cross each point, with a single drawn history
    from crashcheck.harness.core.settings import Settings
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.plan import fuzz_target
    from crashcheck.harness.run.crossing import CROSS_FIXED
    r = fuzz_target("woart", None, Settings(seed=2), Config(examples=1, budget=None), bugdir=tmp_path)
    [(label, n)] = r.stats.capacity.items()
    assert label.startswith("insert at 48 keys (declared") and n >= 1, r.stats.capacity
    assert r.stats.capacity_histories == CROSS_FIXED and r.stats.capacity_s > 0
    assert r.stats.histories == 1 + CROSS_FIXED and not r.stats.capacity_why


def test_a_delete_that_runs_a_new_path_on_the_full_structure_is_a_point():
    # (issue 50) the warm-up learns the ordinary delete on a small structure, so a path the first
    # delete of the full structure runs (entries moved back from a level that had been full) is
    # a point, where learning from the first deletes of the full structure hid it
    ops = probe_history()
    events, present = [], 0
    for i, op in enumerate(ops):
        events += [ev("op_begin", i), ev("store", site=LEAF)]
        if op.kind == "delete" and present > 100:
            events.append(ev("store", site=SHRINK))
        present += 1 if op.kind == "insert" else -1
        events.append(ev("op_end", i))
    pts = points(ops, op_marks(NS(events=events)))
    assert [(p.on, p.keys) for p in pts] == [("delete", PROBE_KEYS)]


def test_a_pattern_of_colliding_keys_reaches_a_point_the_main_history_did_not():
    from crashcheck.specs.capacity_probe import PATTERN_KEYS, PATTERNS, pattern_keys
    keys = [int.from_bytes(k, "big") for k in pattern_keys()]
    assert len(keys) == PATTERN_KEYS and len({k % 256 for k in keys}) == 1
    ops = probe_history(pattern=PATTERNS[0])
    assert [op.kind for op in ops] == ["insert"] * PATTERN_KEYS + ["delete"] * PATTERN_KEYS
    assert probe_history(pattern=PATTERNS[1])[PATTERN_KEYS].key == ops[PATTERN_KEYS - 1].key   # newest first
    # the main history learnt the ordinary insert and delete (no warm-up in a pattern): the
    # pattern's first delete, which moves an entry back up, is a point labelled with the pattern
    learnt = {"insert": {("store", LEAF)}, "delete": {("store", LEAF)}}
    marks = {i: {("store", LEAF)} for i in range(len(ops))}
    marks[PATTERN_KEYS].add(("store", SPLIT))
    [p] = points(ops, marks, None, learnt, PATTERNS[0])
    assert (p.on, p.keys, p.index) == ("delete", PATTERN_KEYS, PATTERN_KEYS)
    assert p.label == f"delete at {PATTERN_KEYS} keys ({PATTERNS[0]})" and p.drawn[-1] == PATTERNS[0]
