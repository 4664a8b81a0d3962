"""The crash oracle over a toy model defined here: nothing in specs/oracle.py may assume a map.

The toy is a counter: `add N` -> `ok`, `get` -> `value N`, and `flip` (nondeterministic: adds 0 or
1, returns `ok`). Its dump is {"counter": N}.
"""
import pytest

from crashcheck.specs import registry, range_lock
from crashcheck.specs.model import Model
from crashcheck.specs.oracle import HistoryPoint, acceptable, judge_recovery


def _step(n, op):
    if op[0] == "add":
        return [("ok", n + op[1])]
    if op[0] == "get":
        return [(f"value {n}", n)]
    if op[0] == "flip":
        return [("ok", n), ("ok", n + 1)]
    raise ValueError(op)


def _parse(line):
    parts = line.split()
    return (parts[0], int(parts[1])) if parts[0] == "add" else (parts[0],)


COUNTER = Model(name="counter", init=lambda: 0, step=_step, parse_op=_parse,
                op_text=lambda op: " ".join(map(str, op)), describe=lambda n: f"counter={n}",
                dump_state=lambda d: d["counter"])

OPS = [_parse(x) for x in ["add 2", "add 3", "get", "add 10"]]


def res(n=None, followup=(), violations=(), status="ok", **kw):
    body = None if n is None else {"recovered": True, "dump": {"counter": n}, "violations": list(violations),
                                   "followup": list(followup)}
    return {"status": status, "result": body, **kw}


def judge(point, result, followup=None, **kw):
    return judge_recovery(OPS, point, result, followup, model=COUNTER, **kw)


@pytest.mark.parametrize("point, n, ok", [
    (HistoryPoint(1, 1), 2, True), (HistoryPoint(1, 1), 5, True),      # add 3 in flight: either
    (HistoryPoint(1, 1), 0, False),                                  # completed add 2 lost
    (HistoryPoint(3, None), 5, True), (HistoryPoint(3, None), 15, False),
    (HistoryPoint(3, 3), 15, True), (HistoryPoint(4, None), 15, True),
])
def test_accept_and_reject(point, n, ok):
    v = judge(point, res(n))
    assert v.ok == ok
    assert v.actual == n
    if ok:
        assert v.matched == n and v.cls is None
    else:
        assert v.cls == "wrong-value" and "counter=" in v.detail   # a model without classes
    assert acceptable(OPS, HistoryPoint(1, 1), model=COUNTER) == [2, 5]


def test_followup_divergence():
    follow = [_parse("get"), _parse("add 1"), _parse("get")]
    assert judge(HistoryPoint(2, None), res(5, ["value 5", "ok", "value 6"]), follow).ok
    bad = judge(HistoryPoint(2, None), res(5, ["value 5", "ok", "value 7"]), follow)
    assert bad.cls == "post-recovery-divergence"
    assert "`get` returned `value 7`, the model `value 6`" in bad.detail
    short = judge(HistoryPoint(2, None), res(5, ["value 5"]), follow)
    assert short.cls == "post-recovery-divergence" and "1 of 3" in short.detail


def test_invariant_violation_and_recovery_failures():
    v = judge(HistoryPoint(2, None), res(5, violations=["counter parity", "x"]))
    assert (v.cls, v.actual) == ("invariant-violation", 5) and "+1 more" in v.detail
    assert judge(HistoryPoint(2, None), res(status="signal", signal=11, stderr="boom")).cls == "recovery-crash"
    assert judge(HistoryPoint(2, None), res(status="exit", exit=3)).cls == "recovery-crash"
    assert judge(HistoryPoint(2, None), res(status="timeout")).cls == "recovery-hang"
    failed = {"status": "ok", "result": {"recovered": False, "recover_status": 4}}
    assert judge(HistoryPoint(2, None), failed).cls == "recovery-crash"


def test_nondeterministic_model_and_recorded_outputs():
    ops = [_parse("flip"), _parse("get"), _parse("add 1")]
    point = HistoryPoint(1, 1)
    # without the recorded outputs, a flip may have left 0 or 1
    assert acceptable(ops, point, model=COUNTER) == [0, 1]
    assert judge_recovery(ops, point, res(1), model=COUNTER).ok
    # the crash-free run said `value 0`: only 0 is acceptable
    outputs = ["ok", "value 0", "ok"]
    assert acceptable(ops, point, model=COUNTER, outputs=outputs) == [0]
    assert judge_recovery(ops, point, res(1), model=COUNTER, outputs=outputs).cls == "wrong-value"
    # a follow-up from a nondeterministic state: either branch of flip is fine
    follow = [_parse("flip"), _parse("get")]
    assert judge_recovery(ops, point, res(0, ["ok", "value 1"]), follow, model=COUNTER).ok
    assert judge_recovery(ops, point, res(0, ["ok", "value 0"]), follow, model=COUNTER).ok
    bad = judge_recovery(ops, point, res(0, ["ok", "value 2"]), follow, model=COUNTER)
    assert bad.cls == "post-recovery-divergence" and "`value 0` or `value 1`" in bad.detail


def test_impossible_outputs_leave_nothing_acceptable():
    ops = [_parse("add 1"), _parse("get")]
    v = judge_recovery(ops, HistoryPoint(2, None), res(1), model=COUNTER, outputs=["ok", "value 7"])
    assert not v.ok and v.expected == [] and "impossible" in v.detail


def test_range_lock_through_the_oracle():
    m = registry.get("range_lock")
    ops = [m.parse_op(x) for x in ["trylock 0 9", "trylock 5 20", "release 0 9"]]
    dump = {"status": "ok", "result": {"recovered": True, "dump": [[0, 9]], "violations": []}}
    assert judge_recovery(ops, HistoryPoint(2, 2), dump, model=m).ok
    v = judge_recovery(ops, HistoryPoint(3, None), dump, model=m)
    assert v.cls == "wrong-value" and "held {[0, 9]}" in v.detail
    follow = range_lock.followup(ops)
    outs = ["ok"] * 6
    empty = {"status": "ok", "result": {"recovered": True, "dump": [], "violations": [], "followup": outs}}
    assert judge_recovery(ops, HistoryPoint(3, None), empty, follow, model=m).ok


# -- several threads: durable linearizability through the oracle -----------------------------------

def test_judge_durable_on_the_counter():
    from crashcheck.specs.history import History
    from crashcheck.specs.oracle import judge_durable
    h = History.build([(0, _parse("add 2"), 0, 3, "ok"), (1, _parse("add 3"), 1, None, None),
                       (0, _parse("get"), 4, 5, "value 2")])
    ok = judge_durable(h, res(2), model=COUNTER)
    assert ok.ok and ok.checked and ok.witness == (0, 2)
    assert judge_durable(h, res(5), model=COUNTER).ok            # the in-flight add took effect
    wrong = judge_durable(h, res(3), model=COUNTER)
    assert (wrong.cls, wrong.checked) == ("wrong-value", True) and "counter=3" in wrong.detail
    bad = History.build([(0, _parse("add 2"), 0, 1, "ok"), (1, _parse("get"), 2, 3, "value 0")])
    v = judge_durable(bad, res(2), model=COUNTER)
    assert v.cls == "linearizability-violation" and "#1" in v.detail
    many = History.build([(t, _parse(f"add {t + 1}"), 0, 10, "ok") for t in range(10)]
                         + [(10, _parse("get"), 0, 10, "value 999")])
    unknown = judge_durable(many, res(0), model=COUNTER, max_steps=20)
    assert (unknown.ok, unknown.cls, unknown.checked) == (False, None, False)
    follow = [_parse("get")]
    assert judge_durable(h, res(2, ["value 2"]), follow, model=COUNTER).ok
    assert judge_durable(h, res(2, ["value 9"]), follow, model=COUNTER).cls == "post-recovery-divergence"
    assert judge_durable(h, res(status="timeout"), model=COUNTER).cls == "recovery-hang"


def test_judge_durable_uses_the_map_classes():
    from crashcheck.specs.history import History
    from crashcheck.specs.oracle import judge_durable
    from crashcheck.specs.ordered_map import MODEL as MAP
    h = History.build([(0, MAP.parse_op("insert 1 10"), 0, 2, "ok"), (1, MAP.parse_op("insert 2 20"), 1, 3, "ok"),
                       (0, MAP.parse_op("delete 1"), 4, 5, "ok")])
    dump = lambda *kv: {"status": "ok", "result": {"recovered": True, "violations": [],  # noqa: E731
                                                   "dump": [[a.to_bytes(8, "big").hex(), b.to_bytes(8, "little").hex()]
                                                            for a, b in kv]}}
    assert judge_durable(h, dump((2, 20))).ok
    assert judge_durable(h, dump()).cls == "lost-durable-write"
    assert judge_durable(h, dump((1, 10), (2, 20))).cls == "resurrected-delete"


def test_judge_durable_classifies_with_the_in_flight_operations_the_linearization_applied():
    """A completed operation's output may depend on an in-flight one the linearization applied
    (`insert 1` in flight, then `insert 1` -> exists): the mismatch is classed along that whole
    linearization, not along the completed operations alone (whose outputs are then impossible)."""
    from crashcheck.specs.history import History
    from crashcheck.specs.oracle import judge_durable
    from crashcheck.specs.ordered_map import MODEL as MAP
    h = History.build([(1, MAP.parse_op("insert 1 10"), 0, None, None),
                       (2, MAP.parse_op("insert 1 11"), 1, 2, "exists")])
    empty = {"status": "ok", "result": {"recovered": True, "violations": [], "dump": []}}
    v = judge_durable(h, empty)
    assert (v.ok, v.checked, v.cls) == (False, True, "lost-durable-write") and "key 1 " in v.detail
