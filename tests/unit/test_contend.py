"""Threaded map histories that meet (issue 36): the model's `contend` re-aims the operations dealt
to threads at a few hot keys present when the threads start (specs/map_histories.py), and the
harness's threaded histories use it for part of what they deal (harness/check/threads.py)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crashcheck.harness.check.threads import threaded_histories
from crashcheck.specs import ordered_map
from crashcheck.specs.map_histories import contend, histories, meet
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
    # kinds and values kept, but for up to seven operations turned into meetings (below)
    kept = [i for i in range(start, len(ops)) if (out[i].kind, out[i].value, out[i].count)
            == (ops[i].kind, ops[i].value, ops[i].count)]
    assert len(kept) >= len(ops) - start - 7
    moved = {out[i].key for i in kept if out[i].key != ops[i].key and out[i].kind != "insert"}
    taken = {o.key for o in ops}
    # only keys present when the threads start, but for a meeting's lookup of a fresh neighbour
    assert {k for k in moved if k in taken} <= {K[0], K[1]}
    assert all(k[:7] == K[0][:7] for k in moved)
    # an insert is aimed at a fresh neighbour of a hot key instead: absent when the threads start,
    # and in the hot keys' node (the same bytes but the last)
    fresh = {out[i].key for i in kept if out[i].key != ops[i].key and out[i].kind == "insert"}
    assert not fresh & taken and all(k[:7] == K[0][:7] for k in fresh)


def _meetings(ops, start, examples=60):
    """The operations other than scans that contend put into OPS's threads' part (all scans,
    which re-aiming keeps scans), one tuple of (kind, key) per draw."""
    seen = []

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None)
    @given(st.data())
    def draw(data):
        out = contend(data.draw, ops, start)
        met = [o for o in out[start:] if o.kind != "scan"]
        assert all(o.value == (V if o.kind in ("insert", "update") else b"") for o in met)
        seen.append(tuple((o.kind, o.key) for o in met))
    draw()
    return seen


def _shapes(met, key, taken):
    """The meetings MET (a draw's operations in order) is made of, as a set of names, each
    meeting's operations in its order and interleaved with the others' (the last one placed may
    be cut short to two operations by the room left); None if it is no such mix."""
    def fresh(k):
        return k not in taken

    patterns = {
        "reclaim": [lambda o: o == ("lookup", key), lambda o: o[0] in ("delete", "update") and o[1] == key,
                    lambda o: o[0] == "insert" and fresh(o[1])],
        "insert-seen": [lambda o: o[0] == "insert" and fresh(o[1]), lambda o: o[0] in ("lookup", "insert")],
        "delete-seen": [lambda o: o == ("delete", key), lambda o: o[0] in ("lookup", "insert") and o[1] == key],
    }

    def walk(i, started):          # started: name -> (operations matched, first key)
        if i == len(met):
            short = [n for n, (k, _) in started.items() if k < len(patterns[n])]
            return set(started) if len(short) <= 1 and all(started[n][0] >= 2 for n in short) else None
        o = met[i]
        for name, pat in patterns.items():
            k, first = started.get(name, (0, None))
            if k < len(pat) and pat[k](o) and (name != "insert-seen" or k == 0 or o[1] == first):
                got = walk(i + 1, {**started, name: (k + 1, first if k else o[1])})
                if got is not None:
                    return got
        return None
    return walk(0, {})


def test_contend_makes_readers_and_writers_meet_on_one_key():
    """In three draws of four one or more of three meetings are put in (each of two or three
    operations, interleaved): a lookup of a hot key, a delete (or update) of it, then an
    allocation (Heart's free-no-epoch: a reader holding a leaf that is freed and reused); an
    insert of a fresh key, then a lookup or insert of it (seen before durable: a persistency
    race); a delete of a hot key, then a lookup or insert of it (lfhash's clear-no-help). In that
    order, with kinds the history has (no update here)."""
    ops = with_load([Op("insert", K[0], V), Op("delete", K[4]), Op("lookup", K[4])]
                    + [Op("scan", K[5], b"", 2)] * 6, 3)
    taken = {o.key for o in ops}
    mixes = []
    for met in _meetings(ops, 3, 150):
        got = _shapes(met, K[0], taken)
        assert got is not None, met
        mixes.append(frozenset(got))
    assert {m for m in mixes if len(m) <= 1} == {frozenset(), frozenset({"reclaim"}), frozenset({"insert-seen"}),
                                                 frozenset({"delete-seen"})}
    # several at once: a delete's reader is met in far more draws than one meeting of three gave
    assert any(len(m) == 3 for m in mixes) and any(len(m) == 2 for m in mixes)
    assert sum("delete-seen" in m for m in mixes) > len(mixes) / 4


def test_a_meeting_uses_only_kinds_the_history_has():
    # no lookup, no delete: only an insert of a fresh key and a second insert of it
    ops = with_load([Op("insert", K[0], V), Op("update", K[0], V)] + [Op("scan", K[5], b"", 2)] * 4, 2)
    assert {tuple(k for k, _ in met) for met in _meetings(ops, 2, 30)} == {(), ("insert", "insert")}
    with_lookup = with_load(list(ops[:2]) + [Op("lookup", K[0])] + list(ops[2:]), 3)
    taken = {o.key for o in with_lookup}
    kinds = set()
    for met in _meetings(with_lookup, 3):
        got = _shapes(met, K[0], taken)
        assert got is not None and "delete-seen" not in got, met
        assert all(k != "delete" for k, _ in met)
        kinds |= got
    assert kinds == {"reclaim", "insert-seen"}


def test_a_meeting_uses_the_structures_kinds_when_given():
    """With KINDS (the adapter's operations, harness/run/strategies.py passes them) a history
    drawn without a lookup or a delete still meets a reader: lfhash's clear-no-help needs a lookup
    of a key another thread deletes, and a third of its drawn histories had no lookup at all."""
    ops = with_load([Op("insert", K[0], V)] + [Op("insert", K[5], V)] * 6, 1)
    taken = {o.key for o in ops}

    fresh = [bytes([0] * 8), K[1]]

    @settings(max_examples=60, derandomize=True, database=None, deadline=None)
    @given(st.data())
    def draw(data):
        out = list(ops)
        meet(data.draw, out, 1, K[0], fresh, ("insert", "delete", "lookup"))
        got = _shapes([(o.kind, o.key) for o in out[1:] if o != ops[1]], K[0], taken)
        assert got is not None
        met.update(got)
    met: set = set()
    draw()
    assert met == {"reclaim", "insert-seen", "delete-seen"}
    # without them, only what the history has: inserts
    assert {k for m in _meetings(ops, 1, 30) for k, _ in m} <= {"insert"}


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
