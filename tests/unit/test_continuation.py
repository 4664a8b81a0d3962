"""The continuation after recovery (specs/ordered_map.py continuation) and how the oracle judges
it: every key looked up and a scan, the rest of the history, the crashed key's neighbourhood, all
from the state the dump matched, which the verdict names."""
from crashcheck.specs.ordered_map import MODEL, continuation, nearest_keys, parse_op
from crashcheck.specs.oracle import HistoryPoint, judge_recovery


def k(n):
    return n.to_bytes(8, "big")


def v(n):
    return n.to_bytes(8, "little")


def dump(*pairs):
    return [[k(a).hex(), v(b).hex()] for a, b in pairs]


def answer(d, outputs):
    return {"status": "ok", "result": {"recovered": True, "recover_status": 0, "dump": d,
                                       "violations": [], "followup": outputs}}


HISTORY = [parse_op(x) for x in ["insert 1 10", "insert 9 90", "insert 5 50", "delete 9", "lookup 1",
                                 "insert 7 70", "update 5 51"]]


def texts(ops):
    return [MODEL.op_text(op) for op in ops]


def model_outputs(state, ops):
    """What the model answers to OPS from STATE (the one outcome of each step)."""
    out = []
    for op in ops:
        [(o, state)] = MODEL.step(state, op)
        out.append(o)
    return out


def test_keys_a_state_may_lack_looked_up_then_a_scan_then_the_rest_of_the_history():
    # 2 done (1 and 9 present in every acceptable state: the check looks them up in the dump),
    # insert 5 in flight, 7 not inserted yet: those two are looked up
    ops = continuation(HISTORY, 2, 2, neighbours=0)
    assert texts(ops[:2]) == ["lookup 5", "lookup 7"]
    assert ops[2].kind == "scan" and ops[2].key == k(0) and ops[2].count >= 64
    assert texts(ops[3:7]) == texts(HISTORY[3:])              # after the crashed op (index 2)
    # between operations (4 done, none in flight: 1 and 5 present, 9 deleted) the rest starts at
    # the next one
    between = continuation(HISTORY, 4, None, neighbours=0)
    assert texts(between[:2]) == ["lookup 9", "lookup 7"] and between[2].kind == "scan"
    assert texts(between[3:6]) == texts(HISTORY[4:])
    # an update in flight: its key's value differs between the acceptable states, so it is looked up
    assert texts(continuation(HISTORY, 6, 6, neighbours=0)[:2]) == ["lookup 9", "lookup 5"]


def test_crashed_key_inserted_updated_deleted_and_its_neighbours_crossed():
    ops = continuation(HISTORY, 2, 2, neighbours=6)
    tail = ops[3 + len(HISTORY) - 3:]
    assert [op.kind for op in tail[:7]] == ["insert", "lookup", "delete", "lookup", "insert", "update", "lookup"]
    assert {op.key for op in tail[:7]} == {k(5)}
    near = [op.key for op in tail[7:] if op.kind == "insert"]
    # nearest first, alternately above and below, none the history used
    assert near == [k(6), k(4), k(3), k(8), k(2), k(10)]   # 7, 9 and 1 are the history's
    deleted = [op.key for op in tail if op.kind == "delete" and op.key != k(5)]
    assert deleted == near[::-1]
    assert tail[-1].kind == "scan"
    # distinct values, none the history wrote
    written = [op.value for op in tail if op.kind in ("insert", "update")]
    assert len(set(written)) == len(written)
    assert not set(written) & {op.value for op in HISTORY}


def test_the_operations_a_structure_lacks_are_left_out_and_byte_keys_have_neighbours():
    ops = continuation(HISTORY, 2, 2, map_ops=("insert", "lookup", "delete"))
    assert {op.kind for op in ops} == {"insert", "lookup", "delete"}
    near = nearest_keys(b"ab", 3, "bytes")
    assert near == [b"ac", b"aa", b"ab\x00"]
    assert nearest_keys(k(0), 2) == [k(1), k(2)]            # none below 0


def test_a_lookup_that_finds_the_key_the_dump_lacks_is_a_divergence_naming_the_state():
    """Pattern 1: recovery's dump walks by a count persisted after the children, so it lacks the
    in-flight key while lookup finds it. Either outcome alone is acceptable; only the two views
    together are wrong."""
    follow = continuation(HISTORY, 2, 2)
    state = MODEL.dump_state(dump((1, 10), (9, 90)))        # insert 5 in flight, not applied
    outs = model_outputs(state, follow)
    assert texts(follow[:1]) == ["lookup 5"]
    outs[0] = "value 50"                                     # lookup 5 finds it anyway
    v_ = judge_recovery(HISTORY, HistoryPoint(2, 2), answer(dump((1, 10), (9, 90)), outs), follow)
    assert v_.cls == "post-recovery-divergence"
    assert "`lookup 5` returned `value 50`" in v_.detail
    assert "disagrees with the structure's own dump" in v_.detail
    assert v_.recovered == "the state before the operation in flight, `insert 5 50` (after the 2 completed)"
    assert v_.detail.startswith("after recovery to the state before the operation in flight")
    assert texts(v_.followup) == texts(follow)


def test_a_delete_of_the_crashed_key_that_leaves_a_copy_is_a_divergence():
    """Pattern 3: a transient copy of the in-flight key that delete does not clean."""
    follow = continuation(HISTORY, 2, 2)
    state = MODEL.dump_state(dump((1, 10), (5, 50), (9, 90)))    # insert 5 in flight, applied
    outs = model_outputs(state, follow)
    i = next(j for j, op in enumerate(follow) if op.kind == "delete" and op.key == k(5))
    assert outs[i + 1] == "notfound"
    outs[i + 1] = "value 50"                                 # the copy after the delete
    v_ = judge_recovery(HISTORY, HistoryPoint(2, 2), answer(dump((1, 10), (5, 50), (9, 90)), outs[:i + 2]),
                        follow)
    assert v_.cls == "post-recovery-divergence"
    assert f"follow-up operation {i + 1}" in v_.detail
    assert v_.recovered == "the state with the operation in flight, `insert 5 50`, applied"


def test_a_recovery_the_model_follows_passes_and_names_its_state():
    follow = continuation(HISTORY, 4, None)
    state = MODEL.dump_state(dump((1, 10), (5, 50)))
    v_ = judge_recovery(HISTORY, HistoryPoint(4, None), answer(dump((1, 10), (5, 50)),
                                                               model_outputs(state, follow)), follow)
    assert v_.ok and v_.recovered == "the state after the 4 completed operations"


def test_the_rest_of_a_long_history_is_cut_at_rest_max():
    ops = [parse_op(f"insert {i} {i}") for i in range(40)]
    follow = continuation(ops, 3, 3, neighbours=0, rest_max=5)   # 0-2 present: 37 lookups, a scan
    assert texts(follow[38:43]) == texts(ops[4:9]) and follow[43].kind == "insert" and follow[43].key == k(3)


def test_keys_only_a_load_phase_used_are_left_to_the_dump_check():
    # keys 1 and 9 loaded and never touched again: present and durable in every state checked,
    # looked up by the check's own pass over the dump; 5 (loaded, then updated) is looked up
    from crashcheck.specs.model import with_load
    ops = with_load([parse_op(x) for x in ["insert 1 10", "insert 9 90", "insert 5 50",
                                           "insert 7 70", "update 5 51"]], 3)
    assert texts(continuation(ops, 3, 3, neighbours=0)[:2]) == ["lookup 7", "scan 0 64"]   # 7 in flight
    assert texts(continuation(ops, 4, 4, neighbours=0)[:2]) == ["lookup 5", "scan 0 64"]   # 5's update
    # 5 is present before the crash whatever insert 7 does: left out for the same reason
