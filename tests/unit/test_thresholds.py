"""Capacity thresholds: a structure declares the capacities its histories must cross (expect.json
"thresholds"), and the strategies cross them in the crash-checked part of a history.

HART declares its 56-slot EPallocator chunks, WOART its NODE48's 48 children. Its histories, drawn as a fuzz run of HART draws
them, hold more than 56 keys in some examples, with the 57th key inserted, or the oldest chunk's
last keys deleted, by a checked operation; plain histories never exceed 48 keys. HART's seeded bug
chain-head-first (a second chunk linked before it is durable) is found by tests/quality/test_gate.py like
every seeded bug; the last test here shows that without the thresholds it is not."""
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from crashcheck.harness.run import strategies

from crashcheck.harness.target import structures
from crashcheck.specs.map_histories import histories

HART = dict(key_kind="bytes", value_size=16, value_min=1, max_ops=10)
# the first example found is enough (shrinking a 60-key history is slow and proves nothing more)
FIND = settings(max_examples=400, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))


def _live(ops) -> int:
    live = set()
    for op in ops:
        if op.kind == "insert":
            live.add(op.key)
        elif op.kind == "delete":
            live.discard(op.key)
    return len(live)


def test_hart_declares_its_chunk_capacity():
    assert structures.get("hart").thresholds == (56,)
    assert structures.get("wort").thresholds == ()


def test_woart_declares_its_node48_capacity():
    """A NODE48 grows into a NODE256 at its 49th child: WOART's histories cross that copy and
    swing (and its seeded recovery bugs then show as one bug each: tests/quality/test_gate.py)."""
    assert structures.get("woart").thresholds == (48,)


def _hart_histories():
    return strategies.histories("ordered_map", **HART, thresholds=structures.get("hart").thresholds)


def test_hart_histories_cross_56_keys_in_a_checked_operation():
    grow = find(_hart_histories(), lambda ops: _live(ops[:ops.load]) <= 56 < _live(ops), settings=FIND)
    assert len(grow) - grow.load <= HART["max_ops"]
    assert any(op.kind == "insert" for op in grow[grow.load:])
    # recycle: more than 56 keys loaded, the oldest chunk's keys deleted down to its last few,
    # and those deleted by checked operations
    recycle = find(_hart_histories(), lambda ops: ops.load > 57 and any(
        op.kind == "delete" for op in ops[:ops.load]) and ops[ops.load].kind == "delete", settings=FIND)
    inserted = [op.key for op in recycle[:recycle.load] if op.kind == "insert"]
    assert len(inserted) > 56
    first_chunk = set(inserted[:56])
    deleted_in_load = {op.key for op in recycle[:recycle.load] if op.kind == "delete"}
    deleted_checked = {op.key for op in recycle[recycle.load:] if op.kind == "delete"}
    assert deleted_in_load < first_chunk
    assert first_chunk - deleted_in_load <= deleted_checked


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(histories(**HART))
def test_plain_histories_stay_at_48_keys(ops):
    assert _live(ops) <= 48


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(histories(**HART, thresholds=(56,)))
def test_crossing_histories_keep_the_checked_part_short(ops):
    assert len(ops) - ops.load <= HART["max_ops"]
    assert _live(ops) <= 56 + 3 + HART["max_ops"]


@pytest.mark.slow     # ~20 s: why the thresholds exist; that they are crossed is the tests above,
                      # and chain-head-first found with them is tests/quality/test_gate.py
def test_chain_bug_needs_the_threshold(trees_built, monkeypatch):
    """Without HART's declared threshold, 48 histories do not find chain-head-first."""
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.plan import fuzz_target
    from crashcheck.harness.core.settings import Settings
    real = structures.get

    def no_thresholds(name):
        s = real(name)
        s.thresholds = ()
        return s
    monkeypatch.setattr(structures, "get", no_thresholds)
    r = fuzz_target("hart", "chain-head-first", Settings(seed=1), Config(examples=48, budget=None))
    assert not [rec["class"] for rec in r.records if not rec["expected"]]
