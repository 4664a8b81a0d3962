"""Threaded map histories that meet (issue 36): the model's `contend` re-aims the operations dealt
to threads at a few hot keys present when the threads start (specs/map_histories.py), and the
harness's threaded histories use it for part of what they deal (harness/check/threads.py)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crashcheck.harness.check.threads import threaded_histories
from crashcheck.specs import ordered_map
from crashcheck.specs.map_histories import contend, histories
from crashcheck.specs.model import with_load
from crashcheck.specs.ordered_map import Op

K = [bytes([0, 0, 0, 0, 0, 0, 0, i]) for i in range(1, 9)]
V = (7).to_bytes(8, "little")


@settings(max_examples=20, derandomize=True, database=None, deadline=None)
@given(st.data())
def test_contend_re_aims_only_the_threads_part_at_present_keys(data):
    ops = with_load([Op("insert", K[0], V), Op("insert", K[1], V), Op("insert", K[2], V), Op("delete", K[2])]
                    + [Op(kind, K[3 + i % 5], V if kind in ("insert", "update") else b"")
                       for i, kind in enumerate(["lookup", "update", "delete", "insert", "lookup", "scan"] * 2)], 1)
    start = 4                      # the load phase and a set-up: K[0], K[1] present, K[2] deleted again
    out = contend(data.draw, ops, start)
    assert out.load == 1 and list(out[:start]) == list(ops[:start])
    assert [(o.kind, o.value, o.count) for o in out] == [(o.kind, o.value, o.count) for o in ops]
    moved = {o.key for o, was in zip(out[start:], ops[start:]) if o.key != was.key and o.kind != "insert"}
    assert moved <= {K[0], K[1]}   # only keys present when the threads start
    # an insert is aimed at a fresh neighbour of a hot key instead: absent when the threads start,
    # and in the hot keys' node (the same bytes but the last)
    fresh = {o.key for o, was in zip(out[start:], ops[start:]) if o.key != was.key and o.kind == "insert"}
    taken = {o.key for o in ops}
    assert not fresh & taken and all(k[:7] == K[0][:7] for k in fresh)


def test_contended_inserts_grow_the_hot_keys_node():
    """Inserts re-aimed at present keys only answer `exists`; contend aims them at keys next to
    the hot ones, so the node holding the hot keys grows while other threads write into it
    (Heart's grow-no-version: a copy that drops another thread's update)."""
    ops = with_load([Op("insert", k, V) for k in K] + [Op("insert", bytes([9] * 8), V)] * 12, 8)

    @settings(max_examples=30, derandomize=True, database=None, deadline=None)
    @given(st.data())
    def draw(data):
        out = contend(data.draw, ops, 8)
        assert all(o.key not in K for o in out[8:] if o.kind == "insert")
        aimed = [o.key for o in out[8:] if o.key != bytes([9] * 8)]
        assert all(k[:7] == K[0][:7] for k in aimed)
        seen.update(aimed)
    seen: set = set()
    draw()
    assert seen and len(seen) <= 6      # NEIGHBOURS (2) fresh keys next to each of up to 3 hot keys


@settings(max_examples=20, derandomize=True, database=None, deadline=None)
@given(st.data())
def test_without_a_present_key_the_hot_keys_are_the_threads_own(data):
    ops = with_load([Op("insert", K[i % 4], V) for i in range(8)], 0)
    out = contend(data.draw, ops, 0)
    assert {o.key for o in out if o.kind != "insert"} <= set(K[:4])


def test_threaded_histories_deal_contended_operations():
    """The harness calls the model's contend with the index where the threads' part starts, for
    part of the histories, and deals what it returns: a contend that aims everything at one
    sentinel key shows which."""
    base = histories(max_ops=10, map_ops=("insert", "update", "delete", "lookup", "scan"))
    hot = b"\xee" * 8
    calls, dealt = [], []

    def aim(draw, ops, start):
        calls.append((len(ops), start))
        return with_load(list(ops[:start]) + [Op(op.kind, hot, op.value, op.count) for op in ops[start:]],
                         ops.load)

    @settings(max_examples=40, derandomize=True, database=None, deadline=None)
    @given(threaded_histories(base, 3, "mixed", None, aim))
    def draw(ops):
        if any(op.key == hot for op in ops):
            assert all(op.key == hot for op in ops[ops.load:]) and all(op.key != hot for op in ops[:ops.load])
            dealt.append(ops)
    draw()
    assert calls and all(0 <= start <= n for n, start in calls)
    assert 5 <= len(dealt) < 40
